/*
 * smc_leave.c - leaving for TCP mid-stream, answering a peer that left,
 * and taking the peer's reply to our leaving (smc_leave.h).
 *
 * Why no byte is lost or doubled.  Each direction's stream is cut at one
 * cursor, and each side reads every byte once, in order:
 *  - The leaver's cut of what it reads is its consumer cursor, which LEAVE
 *    and its flagged CDC state, taken under the lock in the same hold in
 *    which its reads stop (a reader of another thread or process finds the
 *    flag before it takes another byte).  The peer writes on the stream
 *    every byte it had sent from there on, from where it keeps them (the
 *    leaver's RMB as it maps it, or its staging buffer), before any byte
 *    it sends after: they all come after LEAVE's answer point, which the
 *    peer reaches under its lock, where its own sends stop too.
 *  - The peer's cut of what it reads is the leaver's producer cursor:
 *    every byte the leaver wrote into the peer's RMB is announced, by the
 *    flagged CDC or (a leaver without its transport) by its old holders'
 *    CDCs, which the peer awaits if they lag behind the stream, and the
 *    peer reads them there; the leaver's next bytes follow LEAVE on the
 *    stream, and the peer reads the stream only once its RMB is empty up
 *    to that cursor.
 * The leaver reads the peer's reply before any byte on the stream: the
 * ANSWER, which the peer writes before the bytes it sends again, or, if
 * both ends left before either looked, the peer's own LEAVE.  Then each
 * end's cut of what it reads is the other's producer cursor, as the
 * peer's is above: its RMB up to there, then the stream, where the other's
 * bytes after its LEAVE are; neither sends anything again, and each sent
 * everything after its own cut on the stream.
 * A LEAVE whose cursors the peer's own state contradicts fails the
 * connection (as a reset), since one of the cuts would be wrong.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "log.h"
#include "real.h"
#include "smc_conn.h"
#include "smc_leave.h"
#include "smc_leave_msg.h"
#include "sys.h"

/* How long the stream may keep a leave or its answer: as a CLC exchange's wait. */
#define LEAVE_WAIT_MS SMC_CLC_WAIT_MS

/* Rounds of waiting for the CDCs that announce a LEAVE's producer cursor. */
#define LAGGING_CDC_ROUNDS 16

/* Bytes of the peer's RMB read back per write on the stream. */
#define RESEND_CHUNK 16384

/*
 * The socket's SO_RCVLOWAT while a part of LEAVE has come: poll and the
 * waits see the stream readable only once the whole of it is there, so
 * that a peer that sends a part and stops makes nobody spin (smc_tcp_news
 * polls for POLLIN).  The application's own value comes back once LEAVE
 * is read.
 */
static void lowat_raise(struct smc_conn *conn)
{
	int lowat = 1, want = SMC_LEAVE_MSG_LEN;
	socklen_t len = sizeof(lowat);

	if (conn->st->leave_lowat ||
	    REAL(getsockopt)(conn->sock, SOL_SOCKET, SO_RCVLOWAT, &lowat, &len) ||
	    REAL(setsockopt)(conn->sock, SOL_SOCKET, SO_RCVLOWAT, &want, sizeof(want)))
		return;
	conn->st->leave_lowat = lowat > 0 ? lowat : 1;
}

static void lowat_restore(struct smc_conn *conn)
{
	int lowat = conn->st->leave_lowat;

	if (lowat > 0)
		REAL(setsockopt)(conn->sock, SOL_SOCKET, SO_RCVLOWAT, &lowat, sizeof(lowat));
	conn->st->leave_lowat = 0;
}

/*
 * LEAVE from the stream, once all of it is there: 0; -EAGAIN while only a
 * part is (a peer that stops there holds nobody's lock: it is a TCP peer
 * that stopped sending); -ECONNRESET if the stream ended inside it.
 * Never waits.
 */
static int leave_read(struct smc_conn *conn, uint8_t msg[SMC_LEAVE_MSG_LEN])
{
	struct pollfd p = { .fd = conn->sock, .events = POLLRDHUP };
	ssize_t n = REAL(recv)(conn->sock, msg, SMC_LEAVE_MSG_LEN, MSG_PEEK | MSG_DONTWAIT);

	if (n == SMC_LEAVE_MSG_LEN) {
		lowat_restore(conn);
		n = REAL(recv)(conn->sock, msg, SMC_LEAVE_MSG_LEN, MSG_DONTWAIT);
		return n == SMC_LEAVE_MSG_LEN ? 0 : n < 0 ? -errno : -EIO;
	}
	if (n < 0 && errno != EAGAIN && errno != EINTR)
		return -errno;
	if (n == 0 || (smcr_sys_poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR))))
		return -ECONNRESET;     /* the stream ended inside LEAVE */
	lowat_raise(conn);
	return -EAGAIN;
}

/*
 * The reply is over: after rmb_first, which it publishes to the readers
 * without the lock (smc_leave_reads_ours), who must not see the one
 * without the other.
 */
static void reply_over(struct smc_conn *conn)
{
	__atomic_store_n(&conn->st->reply_taken, true, __ATOMIC_RELEASE);
}

int smc_leave_send(struct smc_conn *conn, uint32_t reason, bool whole)
{
	/* an answer only to a view that can read its RMB, were the reply a crossing LEAVE */
	struct smc_leave leave = { .version = whole ? SMC_LEAVE_VERSION : 1, .reason = reason,
				   .cons = conn->st->rx_cons, .prod = conn->st->tx_prep };
	uint8_t msg[SMC_LEAVE_MSG_LEN];
	int rc = -smc_conn_error(conn);

	if (rc || (conn->st->local_state & SMC_CDC_PEER_LEAVING))
		return rc;
	/* without the transport, bytes written but not announced are out of reach */
	if (!whole && !smc_cursor_equal(conn->st->tx_sent, conn->st->tx_prep))
		return -ENOTRECOVERABLE;
	smc_leave_encode(&leave, msg);
	rc = smcr_sys_send_all(conn->sock, msg, sizeof(msg), smc_deadline_after(LEAVE_WAIT_MS));
	/* writing ended on SMC: the peer reads the stream's end after LEAVE */
	if (!rc && (conn->st->local_state & SMC_CDC_PEER_DONE_WRITING) &&
	    REAL(shutdown)(conn->sock, SHUT_WR))
		rc = -errno;
	if (rc) {
		if (whole)
			smc_conn_abort_locked(conn);
		return rc;
	}
	conn->st->local_state |= SMC_CDC_PEER_LEAVING;
	if (!whole) {                   /* the peer finds LEAVE on the stream alone */
		reply_over(conn);       /* and answers nothing */
		return 0;
	}
	rc = smc_conn_cdc_send(conn);   /* announces tx_prep, LEAVE's producer cursor */
	conn->ops->wake(conn);          /* our own waiters go to the kernel's socket */
	return rc;
}

/* What a wait for lagging CDCs looks for: it came, may still come, or never will. */
enum lag { LAG_CAME, LAG_MAYBE, LAG_NEVER };

/*
 * Fetches the peer's CDCs until came(conn, arg) says what we look for
 * came: true; false if it never will, or no more CDCs come (a holder's
 * last ones may lag behind the stream: await_peer, only if we may_wait).
 */
static bool fetch_until(struct smc_conn *conn, enum lag (*came)(const struct smc_conn *,
								  const void *),
			const void *arg, bool may_wait)
{
	for (unsigned int round = 0; round < LAGGING_CDC_ROUNDS; round++) {
		enum lag now;

		if (smc_conn_cdc_fetch(conn))
			return false;
		now = came(conn, arg);
		if (now == LAG_CAME)
			return true;
		if (now == LAG_NEVER || !may_wait || !conn->ops->await_peer ||
		    !conn->ops->await_peer(conn))
			break;
	}
	return false;
}

/* A producer cursor our RMB should reach, and the furthest it may. */
struct prod_awaited {
	struct smc_cursor prod, limit;
};

static enum lag prod_came(const struct smc_conn *conn, const void *arg)
{
	const struct prod_awaited *w = arg;

	if (smc_cursor_equal(w->prod, conn->st->rx_prod))
		return LAG_CAME;
	return smc_cursor_check_update(conn->st->rx_prod, w->prod, w->limit) == SMC_CURSOR_BAD
		       ? LAG_NEVER : LAG_MAYBE;
}

/*
 * LEAVE's cursors against ours: its consumer cursor between what it last
 * announced and what we wrote; its producer cursor what our RMB holds,
 * once the CDCs that announce it came (fetch_until).  0 or -EPROTO.
 */
static int leave_matches(struct smc_conn *conn, const struct smc_leave *leave, bool may_wait)
{
	struct prod_awaited w = {
		.prod = leave->prod,
		.limit = smc_cursor_add(conn->st->rx_confirmed, conn->rmb_size, conn->rmb_size),
	};

	if (smc_cursor_check_update(conn->st->tx_fin, leave->cons, conn->st->tx_prep) ==
	    SMC_CURSOR_BAD)
		return -EPROTO;
	return fetch_until(conn, prod_came, &w, may_wait) ? 0 : -EPROTO;
}

/* Writes on the stream what we sent from the leaver's consumer cursor on. */
static int resend(struct smc_conn *conn, struct smc_cursor from, uint64_t deadline)
{
	uint32_t n = smc_cursor_diff(conn->peer_rmb_size, from, conn->st->tx_prep);
	struct smc_ring_chunk chunk[2];
	unsigned int chunks = smc_ring_split(conn->peer_rmb_size, from.count, n, chunk);
	uint8_t buf[RESEND_CHUNK];

	for (unsigned int i = 0; i < chunks; i++) {
		for (uint32_t done = 0; done < chunk[i].len;) {
			uint32_t len = chunk[i].len - done < RESEND_CHUNK ? chunk[i].len - done
									   : RESEND_CHUNK;
			int rc = conn->ops->read_back(conn, chunk[i].off + done, buf, len);

			if (!rc)
				rc = smcr_sys_send_all(conn->sock, buf, len, deadline);
			if (rc)
				return rc;
			done += len;
		}
	}
	return 0;
}

/*
 * The answer a version-2 leaver reads before the bytes we write it next:
 * its producer cursor echoed, where we read our RMB up to, and ours,
 * where the bytes we send it again end.
 */
static int send_answer(struct smc_conn *conn, const struct smc_leave *leave, uint64_t deadline)
{
	struct smc_leave answer = { .version = SMC_LEAVE_VERSION, .flags = SMC_LEAVE_ANSWER,
				    .cons = leave->prod, .prod = conn->st->tx_prep };
	uint8_t msg[SMC_LEAVE_MSG_LEN];

	smc_leave_encode(&answer, msg);
	return smcr_sys_send_all(conn->sock, msg, sizeof(msg), deadline);
}

/* Reads LEAVE from the stream and writes what it asks for (-EAGAIN: not all of it came yet). */
static int answer(struct smc_conn *conn)
{
	uint64_t deadline = smc_deadline_after(LEAVE_WAIT_MS);
	uint8_t msg[SMC_LEAVE_MSG_LEN];
	struct smc_leave leave;
	int rc = leave_read(conn, msg);

	if (rc == -EAGAIN)
		return rc;
	conn->st->leave_taken = true;   /* once: a failure fails the connection */
	if (!rc)
		rc = smc_leave_decode(msg, sizeof(msg), &leave);
	if (!rc)
		conn->st->leave_reason = leave.reason;
	if (!rc)
		rc = leave_matches(conn, &leave, true);
	if (!rc && leave.version >= 2)
		rc = send_answer(conn, &leave, deadline);
	if (!rc)
		rc = resend(conn, leave.cons, deadline);
	if (!rc && (conn->st->local_state & SMC_CDC_PEER_DONE_WRITING) &&
	    REAL(shutdown)(conn->sock, SHUT_WR))
		rc = -errno;
	if (!rc)
		smcr_log(SMCR_LOG_DEBUG, "fd %d: the peer left for TCP (reason 0x%08x): %u bytes "
			 "of ours it had not read sent again on the stream, %u of its still to read "
			 "here", conn->sock, leave.reason,
			 smc_cursor_diff(conn->peer_rmb_size, leave.cons, conn->st->tx_prep),
			 smc_ring_readable(conn->rmb_size, conn->st->rx_cons, conn->st->rx_prod));
	return rc;
}

int smc_leave_answer(struct smc_conn *conn)
{
	int rc;

	/* an end that left itself reads what follows on the stream as data */
	if (!(conn->st->peer_state & SMC_CDC_PEER_LEAVING) || conn->st->leave_taken ||
	    (conn->st->local_state & SMC_CDC_PEER_LEAVING))
		return 0;
	rc = answer(conn);
	if (!rc || rc == -EAGAIN)
		return 0;
	smcr_log(SMCR_LOG_WARN, "fd %d: cannot carry the connection on TCP after the peer left: "
		 "%s: connection reset", conn->sock, strerror(-rc));
	conn->st->err = ECONNRESET;
	smcr_sys_reset(conn->sock);     /* the leaver reads the stream */
	conn->ops->wake(conn);
	return -ECONNRESET;
}

int smc_leave_fetch(struct smc_conn *conn)
{
	int rc = smc_conn_cdc_fetch(conn);

	return rc ? rc : smc_leave_answer(conn);
}

int smc_leave_fetch_answered(struct smc_conn *conn)
{
	uint64_t deadline = smc_deadline_after(LEAVE_WAIT_MS);
	int rc;

	while (!(rc = smc_leave_fetch(conn)) && smc_leave_pending(conn)) {
		rc = smc_conn_cdc_wait(conn, conn->ops->events(conn), deadline);
		if (rc)
			break;
	}
	return rc;
}

/*
 * The reply is whole in st->reply: an ANSWER ends the leave; the peer's
 * own LEAVE means both ends left at once, and each reads its own RMB out,
 * up to the other's producer cursor, before the stream (the follower's
 * part, for reading only: neither sends anything again).
 */
static int reply_apply(struct smc_conn *conn, bool whole, bool may_wait)
{
	struct smc_leave reply;
	int rc = smc_leave_decode(conn->st->reply, sizeof(conn->st->reply), &reply);

	if (rc)
		return rc;
	if (reply.flags & SMC_LEAVE_ANSWER)
		return smc_cursor_equal(reply.cons, conn->st->tx_prep) ? 0 : -EPROTO;
	if (!whole)             /* our RMB is out of this view's reach */
		return -ENOTRECOVERABLE;
	rc = leave_matches(conn, &reply, may_wait);
	if (rc)
		return rc;
	conn->st->leave_reason = reply.reason;
	conn->st->leave_taken = true;
	conn->st->rmb_first = true;
	smc_conn_peer_says(conn, SMC_CDC_PEER_LEAVING);
	smcr_log(SMCR_LOG_DEBUG, "fd %d: both ends left for TCP at once (the peer's reason "
		 "0x%08x): %u bytes of its still to read here", conn->sock, reply.reason,
		 smc_ring_readable(conn->rmb_size, conn->st->rx_cons, conn->st->rx_prod));
	return 0;
}

static enum lag close_came(const struct smc_conn *conn, const void *arg)
{
	(void)arg;
	return conn->st->peer_state & (SMC_CDC_PEER_DONE_WRITING | SMC_CDC_PEER_CONN_CLOSED)
		       ? LAG_CAME : LAG_MAYBE;
}

/*
 * The stream ended before the reply: a peer that closed before it read our
 * LEAVE, whose bytes are in our RMB once its closing CDC came.
 */
static bool peer_closed(struct smc_conn *conn, bool may_wait)
{
	if (fetch_until(conn, close_came, NULL, may_wait))
		return true;
	smcr_log(SMCR_LOG_DEBUG, "fd %d: the stream ended before the peer's reply to our "
		 "leaving, and its CDCs did not say it closed", conn->sock);
	return false;
}

int smc_leave_reply(struct smc_conn *conn, int flags, bool whole, bool may_wait)
{
	uint8_t got = conn->st->reply_got;
	struct iovec iov;
	ssize_t n;
	int rc;

	if (!(conn->st->local_state & SMC_CDC_PEER_LEAVING) || conn->st->reply_taken)
		return 0;
	if (got >= sizeof(conn->st->reply))    /* the state's value, another holder's to write */
		return -EPROTO;
	iov = (struct iovec){ conn->st->reply + got, sizeof(conn->st->reply) - got };
	n = smcr_sys_stream_recv(conn->sock, &iov, 1, flags);
	if (n < 0 && (errno != ECONNRESET || got))
		return -errno;
	/* ended, or reset by a close that left our LEAVE unread: its last read is an end */
	if (n <= 0 && got == 0) {
		if (whole && peer_closed(conn, may_wait))
			conn->st->rmb_first = true;
		reply_over(conn);
		return 0;
	}
	if (n == 0)
		return -ECONNRESET;
	conn->st->reply_got = (uint8_t)(got + n);
	if (conn->st->reply_got < sizeof(conn->st->reply))
		return -EAGAIN;
	rc = reply_apply(conn, whole, may_wait);
	reply_over(conn);       /* once: a failure fails the connection */
	if (rc) {
		smcr_log(SMCR_LOG_WARN, "fd %d: the peer's reply to our leaving for TCP does not "
			 "fit: %s: connection reset", conn->sock, strerror(-rc));
		conn->st->err = ECONNRESET;
		smcr_sys_reset(conn->sock);
		return -ECONNRESET;
	}
	return 0;
}
