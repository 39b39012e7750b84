/*
 * smc_conn.c - a connection's CDC exchange (smc_conn.h), which both the
 * send path (smc_tx.c) and the receive path (smc_rx.c) use: a CDC sent
 * (with our cursors and close flags), the peer's CDCs fetched, checked and
 * applied, the wait for the peer's next one, an abort, and the end of the
 * TCP connection underneath.
 *
 * A CDC from the peer is checked, then applied: its producer cursor says
 * how far our RMB holds data (rx_prod), its consumer cursor how far the
 * peer has read what we sent (tx_fin), its flags what the peer wants and
 * whether it is closing.  Nothing runs in the background: CDCs are fetched
 * when the application calls into the connection (send, recv, poll), which
 * is enough because each one carries the whole state (smc_shm.c).
 *
 * The transport delivers CDCs in order and each once, so the sequence
 * number is not checked: with a mailbox that keeps only the latest CDC,
 * more than half the seqno space may pass between two fetches, and the
 * distance rule of smc_cdc_seq_newer() would then reject a newer one.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include "log.h"
#include "real.h"
#include "smc_conn.h"
#include "smc_leave.h"
#include "smc_wake.h"

bool smc_conn_urg_outstanding(struct smc_conn *conn)
{
	if (conn->st->tx_urg_outstanding && smc_cursor_equal(conn->st->tx_fin, conn->st->tx_urg_mark))
		conn->st->tx_urg_outstanding = false;
	return conn->st->tx_urg_outstanding;
}

int smc_conn_cdc_send(struct smc_conn *conn)
{
	uint8_t msg[SMC_CDC_MSG_LEN];
	struct smc_cdc cdc = {
		.seqno = ++conn->st->tx_seqno,
		.token = conn->st->peer_token,
		.prod = conn->st->tx_prep,
		.cons = conn->st->rx_cons,
		.conn_state_flags = conn->st->local_state,
	};
	int rc;

	if (conn->cut)
		return -ENOTCONN;
	if (conn->st->write_blocked)
		cdc.prod_flags |= SMC_CDC_WRITE_BLOCKED;
	if (smc_conn_urg_outstanding(conn))
		cdc.prod_flags |= SMC_CDC_URG_DATA_PENDING | SMC_CDC_URG_DATA_PRESENT;
	smc_cdc_encode(&cdc, msg);
	rc = conn->ops->send_cdc(conn, msg);
	conn->cut |= rc == -ENOTCONN;
	if (rc == 0) {
		conn->st->tx_sent = conn->st->tx_prep;
		conn->st->rx_confirmed = conn->st->rx_cons;
	}
	return rc;
}

int smc_conn_consumer_update(struct smc_conn *conn, bool force)
{
	struct smc_cdc_rx_view view = {
		.rmb_size = conn->rmb_size,
		.cons = conn->st->rx_cons,
		.confirmed = conn->st->rx_confirmed,
		.peer_prod = conn->st->rx_prod,
		.peer_prod_flags = conn->st->peer_prod_flags,
	};

	/* left, by either end: the peer reads the stream, not our cursors */
	if (smc_leave_tx_gone(conn) || !smc_cdc_cons_update_due(&view, force))
		return 0;
	/* answered: the peer asks again in its next CDC if it still wants to */
	conn->st->peer_prod_flags &= ~SMC_CDC_CONS_UPDATE_REQ;
	return smc_conn_cdc_send(conn);
}

int smc_conn_close_state(struct smc_conn *conn, uint8_t flags)
{
	int rc;

	smc_conn_lock(conn);
	rc = -smc_conn_error(conn);
	if (!rc && (conn->st->local_state & flags) != flags) {
		conn->st->local_state |= flags;
		rc = smc_conn_cdc_send(conn);
		if (rc == -ENOTCONN)
			rc = 0;         /* the flags go with the stream (smc_leave.h) */
	}
	smc_conn_unlock(conn);
	conn->ops->wake(conn);
	return rc;
}

void smc_conn_abort_locked(struct smc_conn *conn)
{
	if (!(conn->st->local_state & SMC_CDC_PEER_CONN_ABORT)) {
		conn->st->local_state |= SMC_CDC_PEER_CONN_ABORT;
		/* best effort: a peer that cannot be told is gone already */
		smc_conn_cdc_send(conn);
	}
	conn->st->err = ECONNRESET;
	conn->ops->wake(conn);
}

void smc_conn_abort(struct smc_conn *conn)
{
	smc_conn_lock(conn);
	smc_conn_abort_locked(conn);
	smc_conn_unlock(conn);
}

/*
 * A CDC whose producer flags mark an urgent byte: the one before its
 * producer cursor.  The sender repeats the mark until we have read up to
 * it, so a mark we know, or one we have passed, is not new.
 */
static void urg_mark(struct smc_conn *conn, struct smc_cursor mark)
{
	uint32_t at = mark.count ? mark.count - 1 : conn->rmb_size - 1;

	if (at >= conn->rmb_size)
		return;         /* cdc_apply checked the mark against our size: unset, none is ours */
	if (conn->st->rx_urg_state != SMC_URG_NONE && smc_cursor_equal(mark, conn->st->rx_urg_mark))
		return;
	if (!smc_cursor_newer(conn->st->rx_cons, mark))
		return;
	conn->st->rx_urg_mark = mark;
	conn->st->rx_urg_state = SMC_URG_VALID;
	conn->st->rx_urg_unpassed = true;
	conn->st->rx_urg_stepped = false;
	conn->st->rx_urg_byte = conn->rmb[at];
}

/* Applies a decoded CDC; false if it breaks the protocol. */
static bool cdc_apply(struct smc_conn *conn, const struct smc_cdc *cdc)
{
	/* the peer may fill the ring up to the consumer cursor we told it */
	struct smc_cursor prod_limit = smc_cursor_add(conn->st->rx_confirmed, conn->rmb_size,
						      conn->rmb_size);
	enum smc_cursor_update prod, cons;

	if (cdc->token != conn->st->token ||
	    !smc_cdc_valid_for(cdc, conn->rmb_size, conn->peer_rmb_size))
		return false;
	prod = smc_cursor_check_update(conn->st->rx_prod, cdc->prod, prod_limit);
	cons = smc_cursor_check_update(conn->st->tx_fin, cdc->cons, conn->st->tx_sent);
	if (prod == SMC_CURSOR_BAD || cons == SMC_CURSOR_BAD)
		return false;
	if (prod == SMC_CURSOR_ADVANCE) {
		conn->st->rx_prod = cdc->prod;
		conn->traffic.rmb_full += smc_ring_readable(conn->rmb_size, conn->st->rx_cons,
							    conn->st->rx_prod) == conn->rmb_size;
	}
	if (cons == SMC_CURSOR_ADVANCE)
		conn->st->tx_fin = cdc->cons;
	conn->st->peer_prod_flags = cdc->prod_flags;
	if (cdc->prod_flags & SMC_CDC_URG_DATA_PRESENT)
		urg_mark(conn, cdc->prod);
	if (cdc->conn_state_flags & ~conn->st->peer_state)
		smcr_log(SMCR_LOG_DEBUG, "fd %d: the peer's CDC %u says %#x (at %u:%u, we read %u:%u)",
			 conn->sock, cdc->seqno, cdc->conn_state_flags, cdc->prod.wrap, cdc->prod.count,
			 conn->st->rx_cons.wrap, conn->st->rx_cons.count);
	smc_conn_peer_says(conn, cdc->conn_state_flags);
	if (conn->st->peer_state & SMC_CDC_PEER_CONN_ABORT)
		conn->st->err = ECONNRESET;
	return true;
}

/*
 * Whether the peer wrote on the TCP stream, which on SMC only LEAVE does
 * (smc_leave.h): it left, whether or not its CDC could say so.
 */
static bool tcp_has_data(const struct smc_conn *conn)
{
	char byte;
	int saved_errno = errno;
	bool data = conn->sock >= 0 && REAL(recv)(conn->sock, &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 1;

	errno = saved_errno;
	return data;
}

/* Rounds of waiting for a CDC that may lag behind the TCP end (ops->await_peer). */
#define AWAIT_PEER_ROUNDS 16

/*
 * Under the connection lock, the peer's CDCs taken: the TCP stream has news,
 * and tells what became of the peer (smc_conn_peer_lost).
 */
static void stream_decides(struct smc_conn *conn)
{
	int err = 0;
	socklen_t len = sizeof(err);

	if ((conn->st->local_state | conn->st->peer_state) & SMC_CDC_PEER_LEAVING)
		return;         /* the stream is the kernel's to end (smc_leave.h) */
	if (tcp_has_data(conn)) {
		smc_conn_peer_says(conn, SMC_CDC_PEER_LEAVING);  /* answered at the next fetch */
		conn->ops->wake(conn);
		return;
	}
	/* a peer whose CDCs keep coming, none saying it closed, gets a bounded number of rounds */
	for (unsigned int round = 0; round < AWAIT_PEER_ROUNDS && !conn->st->err &&
	     !(conn->st->peer_state & SMC_CDC_PEER_CONN_CLOSED) && conn->ops->await_peer &&
	     conn->ops->await_peer(conn); round++)
		smc_conn_cdc_fetch(conn);
	if (conn->st->err || (conn->st->peer_state & SMC_CDC_PEER_CONN_CLOSED))
		return;
	/*
	 * The peer's TCP end closed without its CDC saying so: the process
	 * died (or left the connection to one that exited).  A reset is a
	 * reset; a plain FIN reads as the peer's close, after whatever it
	 * wrote into our RMB.
	 */
	if (conn->sock >= 0 && REAL(getsockopt)(conn->sock, SOL_SOCKET, SO_ERROR, &err, &len) == 0 &&
	    err) {
		smcr_log(SMCR_LOG_DEBUG, "fd %d: the TCP connection failed (%s) without a CDC close",
			 conn->sock, strerror(err));
		conn->st->err = err == EPIPE ? ECONNRESET : err;
		conn->ops->wake(conn);
		return;
	}
	smcr_log(SMCR_LOG_DEBUG, "fd %d: the TCP connection ended without a CDC close: end of file",
		 conn->sock);
	smc_conn_peer_says(conn, SMC_CDC_PEER_DONE_WRITING | SMC_CDC_PEER_CONN_CLOSED);
	conn->ops->wake(conn);
}

void smc_conn_peer_lost(struct smc_conn *conn)
{
	smc_conn_cdc_fetch(conn);
	stream_decides(conn);
}

/*
 * CDCs applied in one fetch.  A transport keeps only the latest unread
 * CDC, so one or two come at a time; a peer that sends without pause must
 * not keep us here, holding the connection lock, for ever.  What is left
 * moved events(), so a caller about to wait comes back for it at once.
 */
#define CDC_FETCH_MAX 16

int smc_conn_cdc_fetch(struct smc_conn *conn)
{
	uint8_t msg[SMC_CDC_MSG_LEN];
	bool applied = false;
	int rc, err;

	for (unsigned int n = 0; n < CDC_FETCH_MAX && !conn->st->err &&
				 (rc = conn->ops->recv_cdc(conn, msg)) != 0; n++) {
		struct smc_cdc cdc;

		if (rc == -ENOTCONN) {  /* the transport is gone here: the stream decides */
			conn->cut = true;
			if (smc_tcp_news(conn))
				stream_decides(conn);
			break;
		}
		if (rc < 0 || smc_cdc_decode(msg, sizeof(msg), &cdc) || !cdc_apply(conn, &cdc)) {
			smc_conn_abort_locked(conn);
			break;
		}
		applied = true;
	}
	err = smc_conn_error(conn);
	if (err)
		return -err;
	/* the peer may have asked for our cursor, or said it is blocked */
	return applied ? smc_conn_consumer_update(conn, false) : 0;
}

/*
 * Only the TCP stream can bring news: the peer left and the rest of its
 * LEAVE is still coming (smc_leave.c raised the socket's SO_RCVLOWAT, so
 * the wait wakes once all of it is there, or the stream ends), or the
 * transport is cut (the peer's next holder leaves over the stream, or it
 * ends).  A wait on the stream alone, in slices; the next fetch decides.
 */
static int await_stream(struct smc_conn *conn, uint64_t deadline)
{
	uint64_t slice = smc_deadline_after(SMC_LIVENESS_MS);
	int rc;

	smc_conn_unlock(conn);
	rc = smcr_sys_wait_fd(conn->sock, POLLIN | POLLRDHUP,
			      deadline && deadline < slice ? deadline : slice);
	smc_conn_lock(conn);
	return rc == -ETIMEDOUT ? 0 : rc;
}

int smc_conn_cdc_wait(struct smc_conn *conn, uint32_t since, uint64_t deadline)
{
	int timeout_ms = -1, rc;

	if (deadline && (timeout_ms = smc_ms_until(deadline)) == 0)
		return -EAGAIN;
	if (smc_leave_pending(conn) || conn->cut)
		return await_stream(conn, deadline);
	smc_conn_unlock(conn);
	rc = conn->ops->wait(conn, since, timeout_ms);
	smc_conn_lock(conn);
	if (rc == -ENOTCONN) {
		smc_conn_peer_lost(conn);
		rc = 0;
	}
	return rc == -ETIMEDOUT ? 0 : rc;
}
