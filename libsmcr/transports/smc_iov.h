/*
 * smc_iov.h - walking an application's iovec array piece by piece.
 *
 * The send path copies from one into the peer's RMB, the receive path from
 * its RMB into one; both move a given number of bytes at a time and resume
 * where they stopped.  This file owns that bookkeeping.
 */
#ifndef SMCR_SMC_IOV_H
#define SMCR_SMC_IOV_H

#include <limits.h>
#include <stddef.h>
#include <sys/uio.h>

struct smc_iov_iter {
	const struct iovec *iov;	/* the current element */
	const struct iovec *end;
	size_t off;			/* bytes of it already walked */
};

static inline struct smc_iov_iter smc_iov_iter(const struct iovec *iov, int iovcnt)
{
	return (struct smc_iov_iter){ .iov = iov, .end = iov + (iovcnt > 0 ? iovcnt : 0) };
}

/* Bytes in the array, capped at SSIZE_MAX as a socket call's count is. */
static inline size_t smc_iov_total(const struct iovec *iov, int iovcnt)
{
	size_t total = 0;

	for (int i = 0; i < iovcnt; i++) {
		if (iov[i].iov_len > SSIZE_MAX - total)
			return SSIZE_MAX;
		total += iov[i].iov_len;
	}
	return total;
}

/*
 * The next contiguous piece, at most max bytes (max > 0), into *base; the
 * iterator moves past it.  Returns its length; 0 and NULL at the end.
 */
static inline size_t smc_iov_next(struct smc_iov_iter *it, size_t max, char **base)
{
	size_t len;

	while (it->iov < it->end && it->off == it->iov->iov_len) {
		it->iov++;
		it->off = 0;
	}
	if (it->iov == it->end) {
		*base = NULL;
		return 0;
	}
	len = it->iov->iov_len - it->off;
	if (len > max)
		len = max;
	*base = (char *)it->iov->iov_base + it->off;
	it->off += len;
	return len;
}

#endif
