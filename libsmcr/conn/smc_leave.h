/*
 * smc_leave.h - an SMC connection that goes on over TCP from the middle of
 * its stream (docs/ARCHITECTURE.md, "Leaving for TCP mid-stream").
 *
 * The end that leaves stops using its RMB and the peer's, writes LEAVE
 * (wire/smc_leave_msg.h) on the TCP stream with its consumer and producer
 * cursors, and flags its CDC; from then on its bytes are the kernel's.
 * The end that stays answers by writing on the stream an ANSWER and then,
 * from where it still has them, the bytes it had sent that the leaver had
 * not read; its reader then empties its RMB, up to the leaver's producer
 * cursor, and goes on with the stream.  Two ends that left at once each
 * read their own RMB out instead (smc_leave_reply).  The calls are made
 * under the connection lock; a data call of either end that finds it has
 * left fails with -EXDEV, and its caller goes on with the kernel's socket.
 */
#ifndef SMCR_CONN_SMC_LEAVE_H
#define SMCR_CONN_SMC_LEAVE_H

#include <stdbool.h>
#include <stdint.h>

#include "smc_transport.h"

/*
 * Under the connection lock: this end leaves, for reason (smcr_reason_code).
 * whole: this process's view has the transport, and announces it in a CDC
 * too, and asks for the peer's reply (smc_leave_reply: version 2); a view
 * without it (conn->priv gone or never attached) can leave only if every
 * byte written was announced, and asks for none (version 1): it could not
 * read its RMB were the reply a crossing LEAVE, and such a view (an image
 * that only writes, as an inetd's cat) may never read, and a reply left
 * unread makes the kernel's close a reset.  0; or a negative errno, the
 * connection failed if whole (the peer could not be told), untouched if
 * not (-ENOTRECOVERABLE: bytes written but not announced).
 */
int smc_leave_send(struct smc_conn *conn, uint32_t reason, bool whole);

/*
 * Under the connection lock, after a CDC fetch: if the peer left and its
 * LEAVE is not answered yet, answers it, once all of LEAVE has come
 * (smc_leave_pending until then).  0, or a negative errno with the
 * connection failed: a LEAVE that does not match the CDCs, or that could
 * not be answered in time.
 */
int smc_leave_answer(struct smc_conn *conn);

/*
 * Under the connection lock, before this end, which left, reads the
 * stream: the peer's reply to our LEAVE comes first, and is taken here.
 * An ANSWER: the peer writes us again what we had not read.  The peer's
 * own LEAVE: both left at once, and what we had not read is in our RMB
 * (smc_leave_rmb_unread), which needs this view to be whole; the
 * CDCs that announce it are awaited only if we may_wait.  The stream's
 * end, first (or its reset: a close that leaves bytes unread resets, and
 * ours were LEAVE): the peer closed before it read our LEAVE, and what it
 * had sent, if its CDCs said it closed, is in our RMB too; then the
 * stream reads as ended.  flags is MSG_DONTWAIT or 0, as the caller's
 * read.  0 once the reply is taken, or the stream ended; -EAGAIN while a
 * part of it came; another negative errno from the read; or -ECONNRESET,
 * the connection failed: the reply did not fit.
 */
int smc_leave_reply(struct smc_conn *conn, int flags, bool whole, bool may_wait);

/* smc_conn_cdc_fetch(), then smc_leave_answer(). */
int smc_leave_fetch(struct smc_conn *conn);

/*
 * smc_leave_fetch(), and if the peer left, waits until its LEAVE came and
 * is answered: for an end about to lose the calls that answering takes
 * (a seccomp filter).  Its leaver wrote LEAVE whole before the flagged
 * CDC, so the wait is short; it ends after LEAVE_WAIT_MS all the same
 * (-EAGAIN).  0, or a negative errno.
 */
int smc_leave_fetch_answered(struct smc_conn *conn);

/*
 * Under the connection lock: the peer left, and not all of its LEAVE has
 * come yet: sends wait, and waits watch the stream (smc_conn_cdc_wait).
 */
static inline bool smc_leave_pending(const struct smc_conn *conn)
{
	return (conn->st->peer_state & SMC_CDC_PEER_LEAVING) && !conn->st->leave_taken &&
	       !(conn->st->local_state & SMC_CDC_PEER_LEAVING);
}

/* Under the connection lock: the data calls of this end belong to the kernel's socket now. */
static inline bool smc_leave_tx_gone(const struct smc_conn *conn)
{
	return (conn->st->local_state & SMC_CDC_PEER_LEAVING) ||
	       ((conn->st->peer_state & SMC_CDC_PEER_LEAVING) && conn->st->leave_taken);
}

/* ... and its reads too, once nothing of the peer's is left in its RMB (readable bytes). */
static inline bool smc_leave_rx_gone(const struct smc_conn *conn, uint32_t readable)
{
	return ((conn->st->local_state & SMC_CDC_PEER_LEAVING) &&
		(!conn->st->rmb_first || readable == 0)) ||
	       ((conn->st->peer_state & SMC_CDC_PEER_LEAVING) && conn->st->leave_taken &&
		readable == 0);
}

/*
 * We left, and bytes of the peer's that it will not send again are still
 * in our RMB (rmb_first): they come before the stream.  Read without the
 * lock, as a hint: the read path looks again under it.
 */
static inline bool smc_leave_rmb_unread(const struct smc_conn *conn)
{
	return __atomic_load_n(&conn->st->rmb_first, __ATOMIC_RELAXED) &&
	       !smc_cursor_equal(conn->st->rx_cons, conn->st->rx_prod);
}

/* We left, and the peer's reply is not taken yet.  A hint, without the lock. */
static inline bool smc_leave_reply_due(const struct smc_conn *conn)
{
	return (__atomic_load_n(&conn->st->local_state, __ATOMIC_RELAXED) &
		SMC_CDC_PEER_LEAVING) &&
	       !__atomic_load_n(&conn->st->reply_taken, __ATOMIC_ACQUIRE);
}

/*
 * This end left, and its reads still go through libsmcr: the peer's reply
 * is not taken yet, or our RMB not read out (smc_leave_rmb_unread).
 * Read without the lock, as a hint: flags once set stay set.
 */
static inline bool smc_leave_reads_ours(const struct smc_conn *conn)
{
	return smc_leave_reply_due(conn) || smc_leave_rmb_unread(conn);
}

#endif
