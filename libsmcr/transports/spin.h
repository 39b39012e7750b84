/*
 * spin.h - when a waiter spins before it sleeps, and for how long: one
 * policy for every wait of the library (the transport's own waits and the
 * application's poll, select and epoll calls).
 *
 * Waking a sleeper on another CPU costs more than the whole TCP stack on
 * the machines measured (docs/ARCHITECTURE.md, "Waiting and waking": ~23 us
 * on a 2-vCPU guest), so a waiter whose answer is moments away spins
 * first.  20 us is longer than one such wakeup, so a peer that answers at
 * once is never missed; a 5 us spin made both sides fall asleep in turn.
 *
 * A spin that ends empty-handed SMCR_SPIN_GIVE_UP times in a row means the
 * peer does not answer within it - idle, or sharing our CPU, where every
 * spin only delays it (same section: 46 us against 4.6 us for going
 * straight to sleep).  Then the next SMCR_SPIN_PAUSE waits sleep at once
 * before spinning is tried again, unless the waiter is steady: its peer
 * never needs our CPU to answer (RDMA, smc_rdma.c).  A process that may
 * run on one CPU only (taskset, a cpuset, its own sched_setaffinity)
 * never spins: its peer, on this host, could only answer after the spin.
 *
 * How long a spin lasts and whether it is steady is the transport's word
 * (struct smcr_spin_how); a wait on several connections (poll, epoll)
 * spins as the most patient of them would.
 *
 * The number of CPUs the process may use is learnt at start
 * (smcr_spin_learn_cpus) and when the application changes its affinity
 * (entry/preload_confine.c): asking at a wait would read /sys or call
 * sched_getaffinity(), which a sandboxed process may not do (a seccomp
 * filter kills it for the second).  Affinity belongs to a thread; the
 * last one set stands for the process.
 */
#ifndef SMCR_SPIN_H
#define SMCR_SPIN_H

#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SMCR_SPIN_NS		20000
#define SMCR_SPIN_GIVE_UP	4
#define SMCR_SPIN_PAUSE		64

/* A record of how a waiter's spins went. */
struct smcr_spin {
	_Atomic uint32_t misses;	/* spins in a row that ended empty-handed */
	_Atomic uint32_t pause;		/* waits left that go straight to sleep */
};

/* How a transport's waiters spin. */
struct smcr_spin_how {
	uint64_t ns;			/* for how long */
	bool steady;			/* never pause */
};

#define SMCR_SPIN_DEFAULT ((struct smcr_spin_how){ .ns = SMCR_SPIN_NS, .steady = false })

/* Widens how to cover other's waiters too. */
static inline void smcr_spin_join(struct smcr_spin_how *how, struct smcr_spin_how other)
{
	if (other.ns > how->ns)
		how->ns = other.ns;
	how->steady |= other.steady;
}

static inline void smcr_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield");
#endif
}

/* The CPUs the process may run on, as learnt (1 until then: no spin). */
extern _Atomic int smcr_spin_cpus;

/* Learns them at start, before the process can sandbox itself: online and allowed. */
void smcr_spin_learn_cpus(void);

/* The application's sched_setaffinity(set of size bytes) succeeded for this process. */
void smcr_spin_learn_affinity(size_t size, const cpu_set_t *set);

/* How long the next wait may spin: 0 or how.ns (0: nothing to spin for). */
static inline uint64_t smcr_spin_budget(struct smcr_spin *s, struct smcr_spin_how how)
{
	uint32_t pause = atomic_load_explicit(&s->pause, memory_order_relaxed);

	if (!how.ns || atomic_load_explicit(&smcr_spin_cpus, memory_order_relaxed) < 2)
		return 0;
	if (pause && !how.steady) {
		atomic_store_explicit(&s->pause, pause - 1, memory_order_relaxed);
		return 0;
	}
	return how.ns;
}

/* How the spin went: hit, what it waited for came. */
static inline void smcr_spin_done(struct smcr_spin *s, struct smcr_spin_how how, bool hit)
{
	if (hit) {
		atomic_store_explicit(&s->misses, 0, memory_order_relaxed);
	} else if (!how.steady &&
		   atomic_fetch_add_explicit(&s->misses, 1, memory_order_relaxed) + 1 >=
		   SMCR_SPIN_GIVE_UP) {
		atomic_store_explicit(&s->misses, 0, memory_order_relaxed);
		atomic_store_explicit(&s->pause, SMCR_SPIN_PAUSE, memory_order_relaxed);
	}
}

#endif
