/*
 * smc_conn.h - a connection's CDC exchange, shared by the send path
 * (smc_tx.h) and the receive path (smc_rx.h): CDCs sent and fetched, the
 * wait for the peer, close flags, aborts, and the end of the TCP connection
 * underneath.
 *
 * Functions return a count or a negative errno.  Except where marked
 * "under the connection lock", they take the connection's lock themselves.
 */
#ifndef SMCR_SMC_CONN_H
#define SMCR_SMC_CONN_H

#include <stdbool.h>
#include <stdint.h>

#include "smc_transport.h"

/*
 * The connection is over (an error, a lost peer, close with unread data):
 * tells the peer, and every call on conn, including one now waiting, fails
 * with ECONNRESET.
 */
void smc_conn_abort(struct smc_conn *conn);
void smc_conn_abort_locked(struct smc_conn *conn);	/* under the connection lock */

/*
 * Under the connection lock: a CDC with the connection's state as it is: producer
 * cursor (all that is written), consumer cursor, flags.
 */
int smc_conn_cdc_send(struct smc_conn *conn);

/* Under the connection lock: sends our consumer cursor if smc_cdc_cons_update_due(). */
int smc_conn_consumer_update(struct smc_conn *conn, bool force);

/*
 * Under the connection lock: our last urgent byte has not been read yet
 * (the peer's consumer cursor is short of the mark).  No data is written
 * after the mark until it has.
 */
bool smc_conn_urg_outstanding(struct smc_conn *conn);

/*
 * Adds close flags (SMC_CDC_PEER_*), announces them with whatever is
 * corked, and wakes our waiters.
 */
int smc_conn_close_state(struct smc_conn *conn, uint8_t flags);

/*
 * Under the connection lock: fetches and applies the CDCs the peer sent since the
 * last fetch, then sends a consumer update if one is due.  Returns
 * -conn->err once the connection has failed: the peer aborted, or broke
 * the protocol (a bad token or cursor; we then abort it).  Never blocks.
 */
int smc_conn_cdc_fetch(struct smc_conn *conn);

/*
 * Under the connection lock, which it releases while it waits: waits for the peer
 * (ops->wait) until events() moves from since; while a LEAVE is partly in
 * or the transport is cut, on the TCP stream alone.  Returns 0 (also
 * spuriously), -EAGAIN once deadline has passed, or -EINTR.
 */
int smc_conn_cdc_wait(struct smc_conn *conn, uint32_t since, uint64_t deadline);

/*
 * Under the connection lock: the TCP connection under conn has news (the
 * transport's wait said -ENOTCONN, or poll saw it).  Bytes on it mean the
 * peer left for TCP (smc_leave.h: the peer's state says so from here).
 * Else it ended: unless the peer's CDCs said it closed, the peer is gone:
 * a reset fails the connection (ECONNRESET), a plain end of stream reads
 * as the peer's close.
 */
void smc_conn_peer_lost(struct smc_conn *conn);

#endif
