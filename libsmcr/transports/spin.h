/*
 * spin.h - when a waiter spins before it sleeps, and for how long: one
 * policy for every wait of the library (the transport's own waits and the
 * application's poll, select and epoll calls).  docs/ARCHITECTURE.md,
 * "Waiting and waking", gives the figures behind it.
 *
 * Why spin at all.  Waking a sleeper on another CPU costs more than the
 * whole TCP stack on the machines measured (~23 us on a 2-vCPU guest), so
 * a waiter whose answer is moments away spins first, and the spin is worth
 * at most what the sleep it avoids costs: SMCR_SPIN_NS, 20 us, which is
 * also the shortest spin (a 5 us spin made both sides fall asleep in
 * turn).  A transport whose answer comes later but surely (RDMA on a soft
 * device: a few hundred us) allows longer spins (struct smcr_spin_how).
 *
 * How long.  Each record (a connection's waits, an epoll instance's, a
 * thread's poll calls) keeps what its recent spins took: the time to the
 * answer, averaged, and for a spin that ended empty-handed its whole
 * length.  The next spin may last twice that, within [SMCR_SPIN_NS,
 * how.ns]: answers that come in a few us keep spins short, and each miss
 * doubles the next spin up to the transport's bound, as an adaptive mutex
 * does.  Before anything is known, the bound.
 *
 * When not at all - the peer cannot answer while we spin:
 *  - the process may run on one CPU only (taskset, a cpuset, its own
 *    sched_setaffinity): its peer, on this host, could only answer after;
 *  - the peer last ran on the CPU we run on (shared memory: each side
 *    publishes its CPU, smcr_spin_cpu_tag): it would have to take ours;
 *  - SMCR_SPIN_GIVE_UP spins in a row ended empty-handed: the peer does
 *    not answer within a spin (idle, or starved).  Then the next
 *    SMCR_SPIN_PAUSE waits sleep at once before spinning is tried again.
 * Each check is a load or two: the CPU comes from the kernel's rseq area
 * (sched_getcpu, no system call), and the CPUs a process may use are
 * learnt at start and at the application's sched_setaffinity
 * (entry/preload_confine.c).  Asking at a wait would read /sys or call
 * sched_getaffinity(), which a sandboxed process may not do (a seccomp
 * filter kills it for the second).  Affinity belongs to a thread; the last
 * one set stands for the process.
 *
 * A busy host is no reason not to spin: with a CPU hog on every CPU
 * (compare.sh's busy-host mode), where spinning beat TCP on every row, a
 * version that stopped spinning while more tasks were runnable than CPUs
 * (plus one) made redis-benchmark -c 1 ten times slower and sockperf's
 * 1 KiB p99 go from 1.4 us to 925 us, TCP's being 13 us.  The spin takes
 * its time from the hog, not from the peer, which runs on another CPU
 * (else the check above stops it).
 */
#ifndef SMCR_SPIN_H
#define SMCR_SPIN_H

#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "filter.h"

#define SMCR_SPIN_NS		20000u		/* the shortest spin, and the usual longest */
#define SMCR_SPIN_GIVE_UP	4
#define SMCR_SPIN_PAUSE		64

/* A record of how a waiter's spins went. */
struct smcr_spin {
	_Atomic uint32_t misses;	/* spins in a row that ended empty-handed */
	_Atomic uint32_t pause;		/* waits left that go straight to sleep */
	_Atomic uint32_t took_ns;	/* what recent spins took (see the top); 0: none yet */
};

/* How a transport's waiters may spin. */
struct smcr_spin_how {
	uint32_t ns;			/* at most this long (0: not at all) */
};

#define SMCR_SPIN_DEFAULT ((struct smcr_spin_how){ .ns = SMCR_SPIN_NS })

/* Widens how to cover other's waiters too. */
static inline void smcr_spin_join(struct smcr_spin_how *how, struct smcr_spin_how other)
{
	if (other.ns > how->ns)
		how->ns = other.ns;
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

/*
 * The CPU the caller runs on, as a side publishes it for its peer: CPU + 1,
 * 0 unknown.  On x86 sched_getcpu() is never a system call (rseq, else the
 * vDSO); elsewhere it may be, which a sandbox may forbid.
 */
static inline uint32_t smcr_spin_cpu_tag(void)
{
#if !defined(__x86_64__) && !defined(__i386__)
	if (smcr_filter_any())
		return 0;
#endif
	int cpu = sched_getcpu();

	return cpu < 0 ? 0 : (uint32_t)cpu + 1;
}

/* how, unless the peer, which published tag, last ran where we run: then no spin. */
static inline struct smcr_spin_how smcr_spin_unless_here(struct smcr_spin_how how, uint32_t tag)
{
	return tag && tag == smcr_spin_cpu_tag() ? (struct smcr_spin_how){ 0 } : how;
}

/* How long the next wait may spin (0: not at all); see the top. */
static inline uint64_t smcr_spin_budget(struct smcr_spin *s, struct smcr_spin_how how)
{
	uint32_t pause = atomic_load_explicit(&s->pause, memory_order_relaxed);
	uint64_t took = atomic_load_explicit(&s->took_ns, memory_order_relaxed);
	uint64_t budget = took ? 2 * took : how.ns;

	if (!how.ns || atomic_load_explicit(&smcr_spin_cpus, memory_order_relaxed) < 2)
		return 0;
	if (pause) {
		atomic_store_explicit(&s->pause, pause - 1, memory_order_relaxed);
		return 0;
	}
	if (budget < SMCR_SPIN_NS)
		budget = SMCR_SPIN_NS;
	return budget < how.ns ? budget : how.ns;
}

/*
 * How a spin of budget ns went: hit, what it waited for came, after
 * took_ns.
 */
static inline void smcr_spin_done(struct smcr_spin *s, uint64_t budget, bool hit, uint64_t took_ns)
{
	uint32_t was = atomic_load_explicit(&s->took_ns, memory_order_relaxed);

	if (hit) {
		atomic_store_explicit(&s->misses, 0, memory_order_relaxed);
		/* an average over the last few: a quarter of the new one */
		took_ns = was ? (3 * (uint64_t)was + took_ns) / 4 : took_ns;
		atomic_store_explicit(&s->took_ns, took_ns ? (uint32_t)took_ns : 1,
				      memory_order_relaxed);
		return;
	}
	if (budget > was)
		atomic_store_explicit(&s->took_ns, (uint32_t)budget, memory_order_relaxed);
	if (atomic_fetch_add_explicit(&s->misses, 1, memory_order_relaxed) + 1 >= SMCR_SPIN_GIVE_UP) {
		atomic_store_explicit(&s->misses, 0, memory_order_relaxed);
		atomic_store_explicit(&s->pause, SMCR_SPIN_PAUSE, memory_order_relaxed);
	}
}

/*
 * Spins while the policy allows until came(arg) says what we wait for
 * came (called at every turn; it may fetch, as a transport's collect):
 * true if it came.  s learns how the spin went.
 */
bool smcr_spin_for(struct smcr_spin *s, struct smcr_spin_how how, bool (*came)(void *arg),
		   void *arg);

#endif
