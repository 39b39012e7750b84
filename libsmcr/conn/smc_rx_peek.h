/*
 * smc_rx_peek.h - the bytes a MSG_PEEK copied out of our RMB, kept so that
 * the reads after it return the same ones.
 *
 * Our RMB is memory the peer writes: a same-host peer maps it, a remote one
 * reaches it by RDMA WRITE.  A hostile peer may rewrite bytes we have not
 * consumed, so taking them twice from the ring - a peek, then the read -
 * could give two answers, which TCP never does.  So a peek copies each byte
 * out of the ring once, into a copy of this process's (struct smc_peek),
 * and gives the application the copy; every later peek or read of those
 * positions takes them from the copy, and only what lies beyond it from the
 * ring.  A read with no peek before it takes each byte once, straight from
 * the ring, as always: it pays one pointer test.
 *
 * The copy is this process's (other holders of the socket do not map it),
 * so the state names the copy that holds the bytes from rx_cons
 * (st->peek_owner: pid and a number).  A process that did not peek them -
 * another holder, a forked child - takes the ring's bytes, which the peer
 * may have rewritten since; when it consumes, the name is cleared, and the
 * owner drops its copy at its next call.  A copy holds at most a ring, and
 * is freed once read.
 *
 * All under the connection lock.
 */
#ifndef SMCR_SMC_RX_PEEK_H
#define SMCR_SMC_RX_PEEK_H

#include <stddef.h>
#include <stdint.h>

#include "smc_transport.h"

struct smc_peek {
	uint64_t owner;			/* st->peek_owner while it holds the bytes from rx_cons */
	uint32_t off, len, cap;		/* bytes[off, off + len): the stream from rx_cons */
	uint8_t bytes[];
};

/* Drops conn's copy unless it still holds the bytes from rx_cons, for this process. */
void smc_peek_check(struct smc_conn *conn);

/*
 * Of n stream bytes at distance d past rx_cons, how many the copy holds
 * from the first on (0 if none), and where (*at).
 */
size_t smc_peek_held(const struct smc_conn *conn, uint32_t d, size_t n, const uint8_t **at);

/*
 * A peek: copies n bytes of the ring at src, which lie at distance d past
 * rx_cons, onto the end of the copy, and returns where they now are; NULL
 * if the copy does not end at d (they are taken from the ring), or, with
 * *err = -ENOMEM, if it cannot grow.
 */
const uint8_t *smc_peek_keep(struct smc_conn *conn, uint32_t d, const uint8_t *src, uint32_t n,
			     int *err);

/* rx_cons moved n bytes forward: the copy loses them, and goes once empty. */
void smc_peek_consumed(struct smc_conn *conn, uint32_t n);

#endif
