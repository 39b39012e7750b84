/*
 * smc_rx.c - the receive path (smc_rx.h).
 *
 * A CDC from the peer is checked, then applied: its producer cursor says
 * how far our RMB holds data (rx_prod), its consumer cursor how far the
 * peer has read what we sent (tx_fin), its flags what the peer wants and
 * whether it is closing.  Nothing runs in the background: CDCs are fetched
 * when the application calls into the connection (send, recv, poll), which
 * is enough because each one carries the whole state (smc_shm.c).
 *
 * Reading copies from rx_cons towards rx_prod, and moves rx_cons unless
 * peeking; the consumer cursor goes back to the peer by the RFC 7609 rule
 * (smc_cdc_cons_update_due), in a CDC of its own or in any CDC we send.
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

#include "conn_table.h"
#include "log.h"
#include "real.h"
#include "smc_iov.h"
#include "smc_rx.h"
#include "smc_tx.h"

#define PEER_DONE (SMC_CDC_PEER_DONE_WRITING | SMC_CDC_PEER_CONN_CLOSED)

/*
 * A CDC whose producer flags mark an urgent byte: the one before its
 * producer cursor.  The sender repeats the mark until we have read up to
 * it, so a mark we know, or one we have passed, is not new.
 */
static void rx_urg_mark(struct smc_conn *conn, struct smc_cursor mark)
{
	uint32_t at = mark.count ? mark.count - 1 : conn->st->rmb_size - 1;

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
static bool rx_cdc_apply(struct smc_conn *conn, const struct smc_cdc *cdc)
{
	/* the peer may fill the ring up to the consumer cursor we told it */
	struct smc_cursor prod_limit = smc_cursor_add(conn->st->rx_confirmed, conn->st->rmb_size,
						      conn->st->rmb_size);
	enum smc_cursor_update prod, cons;

	if (cdc->token != conn->st->token ||
	    !smc_cdc_valid_for(cdc, conn->st->rmb_size, conn->st->peer_rmb_size))
		return false;
	prod = smc_cursor_check_update(conn->st->rx_prod, cdc->prod, prod_limit);
	cons = smc_cursor_check_update(conn->st->tx_fin, cdc->cons, conn->st->tx_sent);
	if (prod == SMC_CURSOR_BAD || cons == SMC_CURSOR_BAD)
		return false;
	if (prod == SMC_CURSOR_ADVANCE) {
		conn->st->rx_prod = cdc->prod;
		conn->traffic.rmb_full += smc_ring_readable(conn->st->rmb_size, conn->st->rx_cons,
							    conn->st->rx_prod) == conn->st->rmb_size;
	}
	if (cons == SMC_CURSOR_ADVANCE)
		conn->st->tx_fin = cdc->cons;
	conn->st->peer_prod_flags = cdc->prod_flags;
	if (cdc->prod_flags & SMC_CDC_URG_DATA_PRESENT)
		rx_urg_mark(conn, cdc->prod);
	if (cdc->conn_state_flags & ~conn->st->peer_state)
		smcr_log(SMCR_LOG_DEBUG, "fd %d: the peer's CDC %u says %#x (at %u:%u, we read %u:%u)",
			 conn->sock, cdc->seqno, cdc->conn_state_flags, cdc->prod.wrap, cdc->prod.count,
			 conn->st->rx_cons.wrap, conn->st->rx_cons.count);
	conn->st->peer_state |= cdc->conn_state_flags;
	if (conn->st->peer_state & SMC_CDC_PEER_CONN_ABORT)
		conn->st->err = ECONNRESET;
	return true;
}

int smc_rx_cdc_fetch(struct smc_conn *conn)
{
	uint8_t msg[SMC_CDC_MSG_LEN];
	bool applied = false;
	int rc;

	while (!conn->st->err && (rc = conn->ops->recv_cdc(conn, msg)) != 0) {
		struct smc_cdc cdc;

		if (rc < 0 || smc_cdc_decode(msg, sizeof(msg), &cdc) || !rx_cdc_apply(conn, &cdc)) {
			smc_tx_abort_locked(conn);
			break;
		}
		applied = true;
	}
	if (conn->st->err)
		return -conn->st->err;
	/* the peer may have asked for our cursor, or said it is blocked */
	return applied ? smc_tx_consumer_update(conn, false) : 0;
}

uint64_t smc_rx_deadline(int timeout_ms)
{
	return timeout_ms > 0 ? smc_clock_ns() + (uint64_t)timeout_ms * 1000000u : 0;
}

int smc_rx_cdc_wait(struct smc_conn *conn, uint32_t since, uint64_t deadline)
{
	int timeout_ms = -1, rc;

	if (deadline) {
		uint64_t now = smc_clock_ns();

		if (now >= deadline)
			return -EAGAIN;
		/* rounded up: a wait that ends early only costs another turn */
		timeout_ms = (int)((deadline - now + 999999) / 1000000);
	}
	smc_conn_unlock(conn);
	rc = conn->ops->wait(conn, since, timeout_ms);
	smc_conn_lock(conn);
	if (rc == -ENOTCONN) {
		smc_rx_peer_lost(conn);
		rc = 0;
	}
	return rc == -ETIMEDOUT ? 0 : rc;
}

void smc_rx_peer_lost(struct smc_conn *conn)
{
	int err = 0;
	socklen_t len = sizeof(err);

	smc_rx_cdc_fetch(conn);
	while (!conn->st->err && !(conn->st->peer_state & SMC_CDC_PEER_CONN_CLOSED) &&
	       conn->ops->await_peer && conn->ops->await_peer(conn))
		smc_rx_cdc_fetch(conn);
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
	conn->st->peer_state |= SMC_CDC_PEER_DONE_WRITING | SMC_CDC_PEER_CONN_CLOSED;
	conn->ops->wake(conn);
}

/* A read position: rx_cons, or beyond it while peeking. */
struct rx_pos {
	struct smc_cursor at;
	bool urg_unpassed;	/* at has not reached rx_urg_mark */
};

/*
 * Takes up to max readable bytes at pos into it (nowhere with MSG_TRUNC)
 * and moves pos past them.  Without SO_OOBINLINE the urgent byte is
 * stepped over, but only when nothing was copied before it (copied):
 * otherwise *at_mark is set and the read ends there, as TCP's does.
 */
static size_t rx_take(struct smc_conn *conn, struct rx_pos *pos, struct smc_iov_iter *it,
		      size_t max, int flags, bool copied, bool *at_mark)
{
	uint32_t size = conn->st->rmb_size;
	uint32_t avail = smc_ring_readable(size, pos->at, conn->st->rx_prod);
	struct smc_ring_chunk chunk[2];
	unsigned int chunks;

	if (pos->urg_unpassed && !conn->st->oob_inline) {
		uint32_t before = smc_cursor_diff(size, pos->at, conn->st->rx_urg_mark) - 1;

		if (before == 0) {
			if (copied) {
				*at_mark = true;
				return 0;
			}
			pos->at = smc_cursor_add(pos->at, size, 1);
			pos->urg_unpassed = false;
			avail--;
		} else if (avail > before) {
			avail = before;
		}
	}
	if (avail > max)
		avail = (uint32_t)max;
	chunks = smc_ring_split(size, pos->at.count, avail, chunk);
	for (unsigned int i = 0; i < chunks && !(flags & MSG_TRUNC); i++) {
		uint32_t off = chunk[i].off, left = chunk[i].len;

		while (left > 0) {
			char *dst;
			size_t len = smc_iov_next(it, left, &dst);

			memcpy(dst, conn->rmb + off, len);
			off += (uint32_t)len;
			left -= (uint32_t)len;
		}
	}
	pos->at = smc_cursor_add(pos->at, size, avail);
	if (pos->urg_unpassed && conn->st->oob_inline && !smc_cursor_newer(pos->at, conn->st->rx_urg_mark))
		pos->urg_unpassed = false;
	return avail;
}

/* Consumes up to pos; reaching the urgent mark forces the update the sender waits for. */
static int rx_consume(struct smc_conn *conn, const struct rx_pos *pos)
{
	bool passed_mark = conn->st->rx_urg_unpassed && !pos->urg_unpassed;

	conn->st->rx_cons = pos->at;
	conn->st->rx_urg_unpassed = pos->urg_unpassed;
	return smc_tx_consumer_update(conn, passed_mark);
}

/* The next byte in the ring is the urgent one (rx_urg_mark is just after it). */
static bool rx_urgent_next(const struct smc_conn *conn)
{
	return conn->st->rx_urg_unpassed &&
	       smc_cursor_diff(conn->st->rmb_size, conn->st->rx_cons, conn->st->rx_urg_mark) == 1;
}

/*
 * The urgent byte was read and is the next in the ring: step over it and
 * tell the peer at once.  Its sender writes nothing after an urgent byte
 * until our consumer cursor is past it (smc_tx.c), where TCP's would not
 * wait at all: without this, it waited for our next ordinary read.
 */
static int rx_step_over_urgent(struct smc_conn *conn)
{
	if (!rx_urgent_next(conn))
		return 0;
	conn->st->rx_cons = conn->st->rx_urg_mark;
	conn->st->rx_urg_unpassed = false;
	conn->st->rx_urg_stepped = true;
	return smc_tx_consumer_update(conn, true);
}

static ssize_t rx_recv_urgent(struct smc_conn *conn, const struct iovec *iov, int iovcnt,
			      int flags)
{
	struct smc_iov_iter it = smc_iov_iter(iov, iovcnt);
	ssize_t rc;

	smc_conn_lock(conn);
	rc = smc_rx_cdc_fetch(conn);
	if (rc == 0) {
		if (conn->st->oob_inline || conn->st->rx_urg_state != SMC_URG_VALID) {
			rc = -EINVAL;
		} else {
			char *dst;

			if (!(flags & MSG_TRUNC) && smc_iov_next(&it, 1, &dst))
				*dst = (char)conn->st->rx_urg_byte;
			/* no room: 0, not more than asked for; TCP too takes the byte all the same */
			rc = smc_iov_total(iov, iovcnt) > 0;
			if (!(flags & MSG_PEEK)) {
				conn->st->rx_urg_state = SMC_URG_READ;
				rc = rx_step_over_urgent(conn) ?: rc;
			}
		}
	}
	smc_conn_unlock(conn);
	return rc;
}

ssize_t smc_rx_recv(struct smc_conn *conn, const struct iovec *iov, int iovcnt, int flags,
		    bool nonblock)
{
	struct smc_iov_iter it = smc_iov_iter(iov, iovcnt);
	size_t len = smc_iov_total(iov, iovcnt), copied = 0;
	size_t target = (flags & MSG_WAITALL) ? len : 1;
	uint64_t deadline = smc_rx_deadline(conn->st->rcv_timeout_ms);
	bool at_mark = false;
	struct rx_pos pos;
	int rc = 0;

	if (flags & MSG_OOB)
		return rx_recv_urgent(conn, iov, iovcnt, flags);
	nonblock |= !!(flags & MSG_DONTWAIT);
	smc_conn_lock(conn);
	pos = (struct rx_pos){ .at = conn->st->rx_cons, .urg_unpassed = conn->st->rx_urg_unpassed };
	while (copied < len) {
		uint32_t since = conn->ops->events(conn);
		struct smc_cursor before = pos.at;
		size_t n;

		rc = smc_rx_cdc_fetch(conn);
		if (rc)
			break;
		n = rx_take(conn, &pos, &it, len - copied, flags, copied > 0, &at_mark);
		copied += n;
		if (!(flags & MSG_PEEK) && !smc_cursor_equal(before, pos.at)) {
			rc = rx_consume(conn, &pos);
			if (rc)
				break;
		}
		if (copied >= target || at_mark)
			break;
		if (n)
			continue;	/* more may have come meanwhile */
		if ((conn->st->peer_state & PEER_DONE) &&
		    smc_ring_readable(conn->st->rmb_size, pos.at, conn->st->rx_prod) == 0)
			break;		/* end of file */
		if (nonblock) {
			rc = -EAGAIN;
			break;
		}
		rc = smc_rx_cdc_wait(conn, since, deadline);
		if (rc)
			break;
	}
	smcr_conn_table_moved(conn, (flags & MSG_PEEK) ? 0 : copied, 0);
	smc_conn_unlock(conn);
	return copied ? (ssize_t)copied : rc;
}

size_t smc_rx_readable_locked(struct smc_conn *conn)
{
	size_t n = 0;

	if (smc_rx_cdc_fetch(conn) == 0) {
		n = smc_ring_readable(conn->st->rmb_size, conn->st->rx_cons, conn->st->rx_prod);
		/* the urgent byte is not in the stream */
		if (conn->st->rx_urg_unpassed && !conn->st->oob_inline)
			n--;
	}
	return n;
}

size_t smc_rx_readable(struct smc_conn *conn)
{
	size_t n;

	smc_conn_lock(conn);
	n = smc_rx_readable_locked(conn);
	smc_conn_unlock(conn);
	return n;
}

bool smc_rx_at_mark_locked(const struct smc_conn *conn)
{
	return rx_urgent_next(conn) ||
	       (conn->st->rx_urg_stepped && smc_cursor_equal(conn->st->rx_cons, conn->st->rx_urg_mark));
}

bool smc_rx_urgent(struct smc_conn *conn)
{
	bool urgent;

	smc_conn_lock(conn);
	urgent = smc_rx_cdc_fetch(conn) == 0 && !conn->st->oob_inline &&
		 conn->st->rx_urg_state == SMC_URG_VALID;
	smc_conn_unlock(conn);
	return urgent;
}
