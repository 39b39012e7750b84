/*
 * smc_rx.h - the receive path: the peer's CDC messages applied to the
 * connection, and the bytes they announce read out of our RMB.
 *
 * Functions return a count or a negative errno.  Except where marked
 * "under the connection lock", they take the connection's lock themselves.
 */
#ifndef SMCR_SMC_RX_H
#define SMCR_SMC_RX_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "smc_transport.h"

/*
 * recv/recvmsg: copies readable bytes into the iovec.  Blocks until at
 * least one byte is there (SO_RCVTIMEO: conn->rcv_timeout_ms) unless
 * nonblock or MSG_DONTWAIT (-EAGAIN then).  Returns 0 at end of file: the
 * peer shut down writing or closed, and everything it sent has been read.
 * Flags, as TCP:
 *  - MSG_PEEK: copies without consuming;
 *  - MSG_WAITALL: waits for the whole request (short at end of file, on an
 *    error, a signal or a timeout);
 *  - MSG_TRUNC: consumes without copying (the iovec may be NULL);
 *  - MSG_OOB: the urgent byte (-EINVAL if there is none, or SO_OOBINLINE).
 *    Without SO_OOBINLINE the urgent byte is not in the stream, and a read
 *    stops before it once it has copied something.
 * Errors: -ECONNRESET after an abort (either side) or a protocol error by
 * the peer; -EINTR when a signal interrupted the wait.
 */
ssize_t smc_rx_recv(struct smc_conn *conn, const struct iovec *iov, int iovcnt, int flags,
		    bool nonblock);

/* Bytes a recv would return now (FIONREAD, POLLIN).  Fetches the latest CDC. */
size_t smc_rx_readable(struct smc_conn *conn);
size_t smc_rx_readable_locked(struct smc_conn *conn);	/* under the connection lock */

/* An urgent byte waits for recv(MSG_OOB) (POLLPRI).  Fetches the latest CDC. */
bool smc_rx_urgent(struct smc_conn *conn);

/*
 * Under the connection lock: the reader is at the urgent mark (SIOCATMARK):
 * the next byte is the urgent one, or was, read with MSG_OOB and stepped
 * over - as TCP's, until more is read.
 */
bool smc_rx_at_mark_locked(const struct smc_conn *conn);

#endif
