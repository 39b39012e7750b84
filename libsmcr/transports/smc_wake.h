/*
 * smc_wake.h - the waking primitives both transports (smc_shm.c,
 * smc_rdma.c) build their wait() and wake() from: a "wake me" word that a
 * waker claims before it pays for a wake-up, a descriptor signalled for
 * poll and epoll (shared memory: a wake-up channel, base/sys.h; RDMA: an
 * eventfd of the process's own), a futex, and the TCP socket under the connection, which a
 * sleeper asks every SMC_LIVENESS_MS whether the peer is still there.
 */
#ifndef SMCR_SMC_WAKE_H
#define SMCR_SMC_WAKE_H

#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "real.h"
#include "smc_transport.h"
#include "spin.h"
#include "sys.h"

/* A sleep's slice: a dead peer is noticed within it. */
#define SMC_LIVENESS_MS 1000

/* Whether we are the one to wake the sleeper that set word (only one waker pays). */
static inline bool smc_wake_claim(_Atomic uint32_t *word)
{
	return atomic_load_explicit(word, memory_order_relaxed) &&
	       atomic_exchange_explicit(word, 0, memory_order_acq_rel);
}

/* Makes the eventfd fd readable; a full counter (never in practice) is as readable as any. */
static inline void smc_wake_signal_fd(int fd)
{
	uint64_t one = 1;
	int saved_errno = errno;

	if (REAL(write)(fd, &one, sizeof(one)) < 0)
		errno = saved_errno;
}

/* The first slice of a wait of timeout_ms (< 0: for ever), into *ts; its length. */
static inline int smc_wait_slice(int timeout_ms, struct timespec *ts)
{
	int slice = timeout_ms < 0 || timeout_ms > SMC_LIVENESS_MS ? SMC_LIVENESS_MS : timeout_ms;

	*ts = (struct timespec){ .tv_sec = slice / 1000, .tv_nsec = slice % 1000 * 1000000L };
	return slice;
}

struct smc_spin_watch {
	struct smc_conn *conn;
	uint32_t since;
};

/* Whether the watched connection's events() moved, once its transport collected. */
static inline bool smc_spin_moved(void *arg)
{
	struct smc_spin_watch *w = arg;

	if (w->conn->ops->collect)
		w->conn->ops->collect(w->conn);
	return w->conn->ops->events(w->conn) != w->since;
}

/*
 * Spins as conn's transport allows (spin.h, whose record is s) until
 * conn's events() moves past since; the transport's collect, if any, runs
 * at every turn.  True if it moved.
 */
static inline bool smc_spin(struct smc_conn *conn, struct smcr_spin *s, uint32_t since)
{
	struct smc_spin_watch w = { .conn = conn, .since = since };

	return smcr_spin_for(s, conn->ops->spin_how(conn), smc_spin_moved, &w);
}

/*
 * The TCP connection under conn has news: it ended (its peer is gone, or
 * going), or the peer wrote on it, which on SMC only LEAVE does
 * (conn/smc_leave.h).
 */
static inline bool smc_tcp_news(const struct smc_conn *conn)
{
	struct pollfd p = { .fd = conn->sock, .events = POLLIN | POLLRDHUP };
	int saved_errno = errno;
	bool news = conn->sock >= 0 && smcr_sys_poll(&p, 1, 0) == 1 &&
		    (p.revents & (POLLIN | POLLRDHUP | POLLHUP | POLLERR));

	errno = saved_errno;
	return news;
}

#endif
