/*
 * smc_tx.h - the send path: the application's bytes into the peer's RMB,
 * and the CDC messages that announce them, our consumer cursor and the
 * close flags.
 *
 * Functions return a count or a negative errno.  Except where marked
 * "under the connection lock", they take the connection's lock themselves.
 */
#ifndef SMCR_SMC_TX_H
#define SMCR_SMC_TX_H

#include <stdbool.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "smc_transport.h"

/*
 * send/sendmsg: copies the iovec's bytes into the peer's RMB as room
 * allows, announcing each piece with a CDC.  Blocks until all are sent
 * (SO_SNDTIMEO: conn->snd_timeout_ms) unless nonblock or MSG_DONTWAIT; then
 * returns what fitted, or -EAGAIN.  A count short of the request after an
 * interruption or timeout, as TCP.  Flags:
 *  - MSG_OOB: the last byte sent is urgent (the peer's recv(MSG_OOB)).
 *    Further data waits until the peer has read up to that byte.
 *  - MSG_MORE: the bytes are written but announced only by the next CDC
 *    (the next send without MSG_MORE, shutdown, close, a consumer update,
 *    or a full ring); there is no cork timer.
 * Errors: -EPIPE after our shutdown or close, or the peer's close (the
 * caller raises SIGPIPE unless MSG_NOSIGNAL); -ECONNRESET after an abort;
 * -EINTR when a signal interrupted the wait (the caller restarts for
 * SA_RESTART).
 */
ssize_t smc_tx_send(struct smc_conn *conn, const struct iovec *iov, int iovcnt, int flags,
		    bool nonblock);

/* A send would not block: there is room, or it would fail at once (POLLOUT). */
bool smc_tx_writable(struct smc_conn *conn);
bool smc_tx_writable_locked(struct smc_conn *conn);	/* under the connection lock */

/* Under the connection lock: bytes a send could write now without waiting. */
uint32_t smc_tx_room_locked(struct smc_conn *conn);

/* shutdown(SHUT_WR): the peer reads what was sent, then end of file. */
int smc_tx_shutdown(struct smc_conn *conn);

/* close(): as shutdown, and the peer's sends fail with EPIPE. */
int smc_tx_close(struct smc_conn *conn);

#endif
