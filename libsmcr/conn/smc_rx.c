/*
 * smc_rx.c - the receive path (smc_rx.h).
 *
 * The peer's CDCs are fetched and applied by smc_conn.c; reading copies from rx_cons towards rx_prod, and moves rx_cons unless
 * peeking (a peek keeps what it copied, so that the read after it returns
 * the same bytes: smc_rx_peek.h); the consumer cursor goes back to the peer by the RFC 7609 rule
 * (smc_cdc_cons_update_due), in a CDC of its own or in any CDC we send.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include "conn_table.h"
#include "log.h"
#include "real.h"
#include "smc_iov.h"
#include "smc_conn.h"
#include "smc_leave.h"
#include "smc_rx.h"
#include "smc_rx_peek.h"

#define PEER_DONE (SMC_CDC_PEER_DONE_WRITING | SMC_CDC_PEER_CONN_CLOSED)

/* A read position: rx_cons, or beyond it while peeking. */
struct rx_pos {
	struct smc_cursor at;
	bool urg_unpassed;	/* at has not reached urg_mark */
};

static void iov_put(struct smc_iov_iter *it, const uint8_t *src, size_t n)
{
	while (n > 0) {
		char *dst;
		size_t len = smc_iov_next(it, n, &dst);

		memcpy(dst, src, len);
		src += len;
		n -= len;
	}
}

/*
 * Copies n stream bytes, at distance d past rx_cons and at src in the ring
 * (one piece of it), into it: those a peek copied before from that copy,
 * the rest from the ring, through the copy when peeking (smc_rx_peek.h).
 * 0, or -ENOMEM.
 */
static int rx_copy(struct smc_conn *conn, struct smc_iov_iter *it, uint32_t d,
		   const uint8_t *src, uint32_t n, int flags)
{
	if (conn->peek) {
		const uint8_t *held;
		size_t k = smc_peek_held(conn, d, n, &held);

		iov_put(it, held, k);
		d += (uint32_t)k;
		src += k;
		n -= (uint32_t)k;
	}
	if (n && (flags & MSG_PEEK)) {
		int err = 0;
		const uint8_t *kept = smc_peek_keep(conn, d, src, n, &err);

		if (err)
			return err;
		if (kept)
			src = kept;
	}
	iov_put(it, src, n);
	return 0;
}

/*
 * Takes up to max readable bytes at pos into it (nowhere with MSG_TRUNC)
 * and moves pos past them.  Without SO_OOBINLINE the urgent byte is
 * stepped over, but only when nothing was copied before it (copied):
 * otherwise *at_mark is set and the read ends there, as TCP's does.
 * *err: -ENOMEM if a peek could not keep what it copied.
 */
static size_t rx_take(struct smc_conn *conn, struct rx_pos *pos, struct smc_iov_iter *it,
		      size_t max, int flags, bool copied, bool *at_mark, int *err)
{
	uint32_t size = conn->rmb_size;
	uint32_t avail = smc_ring_readable(size, pos->at, conn->st->rx_prod);
	struct smc_ring_chunk chunk[2];
	unsigned int chunks;
	uint32_t d;

	if (pos->urg_unpassed && !conn->st->oob_inline) {
		uint32_t before = smc_cursor_diff(size, pos->at, conn->st->rx_urg_mark) - 1;

		if (before == 0) {
			if (copied) {
				*at_mark = true;
				return 0;
			}
			/* a peek keeps the byte stepped over too: its copy stays one piece */
			if ((flags & MSG_PEEK) && pos->at.count < size)
				smc_peek_keep(conn, smc_cursor_diff(size, conn->st->rx_cons, pos->at),
					      conn->rmb + pos->at.count, 1, err);
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
	d = smc_cursor_diff(size, conn->st->rx_cons, pos->at);
	for (unsigned int i = 0; i < chunks && !(flags & MSG_TRUNC) && !*err; i++) {
		uint32_t off = chunk[i].off, left = chunk[i].len;

		/* cursors another holder of the socket rewrote: a broken connection */
		if (off >= size || left > size - off) {
			smc_conn_abort_locked(conn);
			return 0;
		}
		*err = rx_copy(conn, it, d, conn->rmb + off, left, flags);
		d += left;
	}
	if (*err)
		return 0;
	pos->at = smc_cursor_add(pos->at, size, avail);
	if (pos->urg_unpassed && conn->st->oob_inline && !smc_cursor_newer(pos->at, conn->st->rx_urg_mark))
		pos->urg_unpassed = false;
	return avail;
}

/*
 * Consumes up to pos; reaching the urgent mark forces the update the sender
 * waits for.  Past the mark there is no urgent data any more, inline or
 * stepped over, as TCP forgets its urgent pointer once the reader passed it.
 */
/* rx_cons moves to at: what a peek kept before it is read. */
static void rx_move_cons(struct smc_conn *conn, struct smc_cursor at)
{
	if (conn->peek || conn->st->peek_owner)
		smc_peek_consumed(conn, smc_cursor_diff(conn->rmb_size, conn->st->rx_cons, at));
	conn->st->rx_cons = at;
}

static int rx_consume(struct smc_conn *conn, const struct rx_pos *pos)
{
	bool passed_mark = conn->st->rx_urg_unpassed && !pos->urg_unpassed;

	rx_move_cons(conn, pos->at);
	conn->st->rx_urg_unpassed = pos->urg_unpassed;
	if (passed_mark && conn->st->rx_urg_state == SMC_URG_VALID)
		conn->st->rx_urg_state = SMC_URG_READ;
	return smc_conn_consumer_update(conn, passed_mark);
}

/* The next byte in the ring is the urgent one (urg_mark is just after it). */
static bool rx_urgent_next(const struct smc_conn *conn)
{
	return conn->st->rx_urg_unpassed &&
	       smc_cursor_diff(conn->rmb_size, conn->st->rx_cons, conn->st->rx_urg_mark) == 1;
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
	rx_move_cons(conn, conn->st->rx_urg_mark);
	conn->st->rx_urg_unpassed = false;
	conn->st->rx_urg_stepped = true;
	return smc_conn_consumer_update(conn, true);
}

static ssize_t rx_recv_urgent(struct smc_conn *conn, const struct iovec *iov, int iovcnt,
			      int flags)
{
	struct smc_iov_iter it = smc_iov_iter(iov, iovcnt);
	ssize_t rc;

	smc_conn_lock(conn);
	rc = smc_conn_cdc_fetch(conn);
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
	uint64_t deadline = smc_deadline_after(conn->st->rcv_timeout_ms);
	bool at_mark = false;
	struct rx_pos pos;
	int rc = 0;

	if (flags & MSG_OOB)
		return rx_recv_urgent(conn, iov, iovcnt, flags);
	nonblock |= !!(flags & MSG_DONTWAIT);
	smc_conn_lock(conn);
	if (conn->peek)
		smc_peek_check(conn);
	pos = (struct rx_pos){ .at = conn->st->rx_cons, .urg_unpassed = conn->st->rx_urg_unpassed };
	while (copied < len) {
		uint32_t since = conn->ops->events(conn);
		struct smc_cursor before = pos.at;
		size_t n;

		rc = smc_leave_fetch(conn);
		if (!rc && smc_leave_rx_gone(conn, smc_ring_readable(conn->rmb_size, pos.at,
								     conn->st->rx_prod)))
			rc = -EXDEV;    /* the rest is the kernel's socket's */
		if (rc)
			break;
		n = rx_take(conn, &pos, &it, len - copied, flags, copied > 0, &at_mark, &rc);
		if (rc)
			break;
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
		if (((conn->st->peer_state & PEER_DONE) || conn->st->rd_shut) &&
		    smc_ring_readable(conn->rmb_size, pos.at, conn->st->rx_prod) == 0)
			break;		/* end of file, or of reading (SHUT_RD) */
		if (nonblock) {
			rc = -EAGAIN;
			break;
		}
		rc = smc_conn_cdc_wait(conn, since, deadline);
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

	if (smc_leave_fetch(conn) == 0 && !(conn->st->local_state & SMC_CDC_PEER_LEAVING)) {
		n = smc_ring_readable(conn->rmb_size, conn->st->rx_cons, conn->st->rx_prod);
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
	urgent = smc_conn_cdc_fetch(conn) == 0 && !conn->st->oob_inline &&
		 conn->st->rx_urg_state == SMC_URG_VALID;
	smc_conn_unlock(conn);
	return urgent;
}
