/*
 * smc_tx.c - the send path (smc_tx.h).
 *
 * Payload is copied from the application's buffers straight into the
 * peer's RMB through the transport, at most two pieces per pass (the ring's
 * end splits a write), then one CDC announces it.  There is no send buffer:
 * a send returns once its bytes are in the peer's ring, so close has
 * nothing left to flush but a corked announcement.
 *
 * Cursors (in the peer's RMB): tx_prep, written; tx_sent, announced;
 * tx_fin, released by the peer's reader (its consumer cursor).  The room
 * left is the ring less what lies between tx_fin and tx_prep.
 */
#include <errno.h>
#include <stdint.h>
#include <sys/socket.h>

#include "conn_table.h"
#include "smc_iov.h"
#include "smc_conn.h"
#include "smc_leave.h"
#include "smc_tx.h"

#define CLOSE_STATE_FLAGS (SMC_CDC_PEER_DONE_WRITING | SMC_CDC_PEER_CONN_CLOSED | \
			   SMC_CDC_PEER_CONN_ABORT)

/* What a send fails with now, or 0 (-EXDEV: the kernel's socket takes it). */
static int tx_error(const struct smc_conn *conn)
{
	int err = smc_conn_error(conn);

	if (err)
		return -err;
	if (smc_leave_tx_gone(conn))
		return -EXDEV;
	if ((conn->st->local_state & CLOSE_STATE_FLAGS) ||
	    ((conn->st->peer_state & SMC_CDC_PEER_CONN_CLOSED) && conn->st->tx_after_close))
		return -EPIPE;
	return 0;
}

/*
 * As TCP: the first send after the peer closed goes (TCP sends it, and the
 * peer's reset answers it: its bytes are lost), the next ones fail with
 * EPIPE.  True if a send of len bytes is that first one, or the one that
 * was under way when the peer closed.  The connection hangs up then
 * (POLLHUP) with nothing from the peer: a local change, told as one
 * (wake, which a poller that sleeps, or an epoll member gone quiet, hears).
 */
static bool tx_first_after_close(struct smc_conn *conn, size_t len)
{
	if (!len || conn->st->tx_after_close || !(conn->st->peer_state & SMC_CDC_PEER_CONN_CLOSED))
		return false;
	conn->st->tx_after_close = true;
	conn->ops->wake(conn);
	return true;
}

/* Bytes we may write into the peer's RMB now: none while the stream decides. */
static uint32_t tx_room(struct smc_conn *conn)
{
	if (conn->cut || smc_leave_pending(conn) || smc_conn_urg_outstanding(conn))
		return 0;
	return smc_ring_writable(conn->peer_rmb_size, conn->st->tx_fin, conn->st->tx_prep);
}

/* Copies the next n bytes of it (n <= tx_room) into the peer's RMB at tx_prep. */
static int tx_write(struct smc_conn *conn, struct smc_iov_iter *it, uint32_t n)
{
	struct smc_ring_chunk chunk[2];
	unsigned int chunks = smc_ring_split(conn->peer_rmb_size, conn->st->tx_prep.count, n, chunk);

	for (unsigned int i = 0; i < chunks; i++) {
		uint32_t off = chunk[i].off, left = chunk[i].len;

		while (left > 0) {
			char *src;
			uint32_t len = (uint32_t)smc_iov_next(it, left, &src);
			int rc = conn->ops->write(conn, off, src, len);

			if (rc == -EINVAL) {    /* cursors another holder rewrote */
				smc_conn_abort_locked(conn);
				return -ECONNRESET;
			}
			conn->cut |= rc == -ENOTCONN;
			if (rc)
				return rc;
			off += len;
			left -= len;
		}
	}
	conn->st->tx_prep = smc_cursor_add(conn->st->tx_prep, conn->peer_rmb_size, n);
	return 0;
}

/*
 * The transport cannot reach the peer from this process any more (an RDMA
 * link down: the peer's image may have exec'd): its next holder leaves
 * over the stream, where our bytes then go, or the stream ends.  Or the
 * peer left, and the rest of its LEAVE has not come.  Until then a send
 * waits, as one whose socket buffer is full.
 */
static int tx_await_stream(struct smc_conn *conn, uint32_t since, uint64_t deadline,
			   bool nonblock)
{
	return nonblock ? -EAGAIN : smc_conn_cdc_wait(conn, since, deadline);
}

ssize_t smc_tx_send(struct smc_conn *conn, const struct iovec *iov, int iovcnt, int flags,
		    bool nonblock)
{
	struct smc_iov_iter it = smc_iov_iter(iov, iovcnt);
	size_t total = smc_iov_total(iov, iovcnt), sent = 0;
	uint64_t deadline = smc_deadline_after(conn->st->snd_timeout_ms);
	int rc;

	nonblock |= !!(flags & MSG_DONTWAIT);
	smc_conn_lock(conn);
	for (;;) {
		uint32_t since = conn->ops->events(conn);
		uint32_t room, pending, n;
		bool was_blocked = conn->st->write_blocked;

		rc = smc_leave_fetch(conn);
		if (!rc)
			rc = tx_error(conn);
		if (!rc && tx_first_after_close(conn, total))
			sent = total;   /* lost, as TCP's; in the middle of a call, the rest too */
		if (rc == -EPIPE)
			conn->st->tx_epipe_told = true;
		if (rc || sent == total)
			break;
		if (conn->cut || smc_leave_pending(conn)) {     /* the rest waits for the stream */
			if (sent || (rc = tx_await_stream(conn, since, deadline, nonblock)))
				break;
			it = smc_iov_iter(iov, iovcnt);         /* nothing of it went */
			continue;
		}
		room = tx_room(conn);
		pending = total - sent > UINT32_MAX ? UINT32_MAX : (uint32_t)(total - sent);
		n = smc_cdc_to_send(pending, room);
		conn->st->write_blocked = smc_cdc_write_blocked(pending, room);
		conn->traffic.peer_rmb_full += conn->st->write_blocked && !was_blocked;
		if (n) {
			rc = tx_write(conn, &it, n);
			if (rc == -ENOTCONN)
				continue;       /* cut: looked at above */
			if (rc)
				break;
			sent += n;
		}
		if (sent == total)
			break;
		/* more to come: the reader must see this part, and that we wait */
		if (n || conn->st->write_blocked != was_blocked) {
			rc = smc_conn_cdc_send(conn);
			if (rc == -ENOTCONN)
				continue;       /* cut: looked at above */
			if (rc)
				break;
		}
		if (nonblock) {
			rc = -EAGAIN;
			break;
		}
		rc = smc_conn_cdc_wait(conn, since, deadline);
		if (rc)
			break;
	}
	if (sent && (flags & MSG_OOB)) {
		conn->st->tx_urg_mark = conn->st->tx_prep;
		conn->st->tx_urg_outstanding = true;
	}
	/* the last piece; MSG_MORE holds it back unless the reader must see it now */
	if (!conn->cut && !smc_cursor_equal(conn->st->tx_sent, conn->st->tx_prep) &&
	    (!(flags & MSG_MORE) || (flags & MSG_OOB) || conn->st->write_blocked)) {
		int cdc_rc = smc_conn_cdc_send(conn);

		if (!rc)
			rc = cdc_rc;
	}
	smcr_conn_table_moved(conn, 0, sent);
	smc_conn_unlock(conn);
	return sent ? (ssize_t)sent : rc;
}

bool smc_tx_writable_locked(struct smc_conn *conn)
{
	/* a send that would fail at once does not block either, nor the first after the close */
	return smc_leave_fetch(conn) || tx_error(conn) || tx_room(conn) > 0 ||
	       (conn->st->peer_state & SMC_CDC_PEER_CONN_CLOSED);
}

bool smc_tx_writable(struct smc_conn *conn)
{
	bool writable;

	smc_conn_lock(conn);
	writable = smc_tx_writable_locked(conn);
	smc_conn_unlock(conn);
	return writable;
}

uint32_t smc_tx_room_locked(struct smc_conn *conn)
{
	return tx_error(conn) ? 0 : tx_room(conn);
}

int smc_tx_shutdown(struct smc_conn *conn)
{
	return smc_conn_close_state(conn, SMC_CDC_PEER_DONE_WRITING);
}

int smc_tx_close(struct smc_conn *conn)
{
	return smc_conn_close_state(conn, SMC_CDC_PEER_DONE_WRITING | SMC_CDC_PEER_CONN_CLOSED);
}
