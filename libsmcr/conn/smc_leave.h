/*
 * smc_leave.h - an SMC connection that goes on over TCP from the middle of
 * its stream (docs/ARCHITECTURE.md, "Leaving for TCP mid-stream").
 *
 * The end that leaves stops using its RMB and the peer's, writes LEAVE
 * (wire/smc_leave_msg.h) on the TCP stream with its consumer and producer
 * cursors, and flags its CDC; from then on its bytes are the kernel's.
 * The end that stays answers by writing on the stream, from where it still
 * has them, the bytes it had sent that the leaver had not read; its reader
 * then empties its RMB, up to the leaver's producer cursor, and goes on
 * with the stream.  Both calls are made under the connection lock; a data
 * call of either end that finds it has left fails with -EXDEV, and its
 * caller goes on with the kernel's socket.
 */
#ifndef SMCR_CONN_SMC_LEAVE_H
#define SMCR_CONN_SMC_LEAVE_H

#include <stdbool.h>
#include <stdint.h>

#include "smc_transport.h"

/*
 * Under the connection lock: this end leaves, for reason (smcr_reason_code).
 * whole: this process's view has the transport, and announces it in a CDC
 * too; a view without it (conn->priv gone or never attached) can leave
 * only if every byte written was announced.  0; or a negative errno, the
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

/* smc_conn_cdc_fetch(), then smc_leave_answer(). */
int smc_leave_fetch(struct smc_conn *conn);

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
	return (conn->st->local_state & SMC_CDC_PEER_LEAVING) ||
	       ((conn->st->peer_state & SMC_CDC_PEER_LEAVING) && conn->st->leave_taken &&
		readable == 0);
}

#endif
