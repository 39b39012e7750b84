/*
 * stats.h - what this process's libsmcr has seen, counted on the data path.
 *
 * Counters are relaxed atomic adds through one pointer: no lock and no
 * system call per update.  Until the process registers with smcrd they live
 * in a private struct (a process that never registers pays nothing); at
 * registration they move to a memfd-backed MAP_SHARED region that smcrd maps
 * read-only and sums into the host's statistics (smcrd/stats_agg.h), also
 * after the process has exited.  The same struct is that region's layout.
 */
#ifndef SMCR_STATS_H
#define SMCR_STATS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include "reason.h"

/* Bumped whenever struct smcr_stats changes: smcrd refuses other layouts. */
#define SMCR_STATS_LAYOUT 2

/* The scalar counters, each only ever growing; fallbacks[] follows them. */
#define SMCR_STATS_COUNTERS(X)                                                      \
	X(tcp_listeners)    /* listen() on a TCP socket */                          \
	X(tcp_clients)      /* connect() started on a TCP socket */                 \
	X(tcp_servers)      /* accept() returned a TCP socket */                    \
	X(tcp_closed)       /* close() of a TCP connection's descriptor (a dup too) */ \
	X(tcp_bytes_in)     /* received through TCP sockets */                      \
	X(tcp_bytes_out)    /* sent through TCP sockets */                          \
	X(smc_clients)      /* connect()s whose handshake negotiated SMC */         \
	X(smc_servers)      /* accept()s whose handshake negotiated SMC */           \
	X(shm_clients)      /* client connections that went on over shared memory */ \
	X(shm_servers)      /* server connections that went on over shared memory */ \
	X(shm_closed)       /* shared-memory connections closed */                  \
	X(shm_bytes_in)     /* received over shared memory */                       \
	X(shm_bytes_out)    /* sent over shared memory */                           \
	X(handshake_errors) /* CLC exchanges that failed half-way: connection reset */

#define SMCR_STATS_ATOMIC(name) _Atomic uint64_t name;
#define SMCR_STATS_PLAIN(name) uint64_t name;

struct smcr_stats {
	uint32_t layout;                /* SMCR_STATS_LAYOUT (shared regions) */
	uint32_t size;                  /* sizeof(struct smcr_stats) (shared regions) */
	SMCR_STATS_COUNTERS(SMCR_STATS_ATOMIC)
	_Atomic uint64_t fallbacks[SMCR_REASON_COUNT];  /* connections kept on TCP, by reason */
};

/* The same counters as plain numbers: sums, snapshots, the wire. */
struct smcr_stats_counts {
	SMCR_STATS_COUNTERS(SMCR_STATS_PLAIN)
	uint64_t fallbacks[SMCR_REASON_COUNT];
};

/* Where updates go now: the private struct, or this process's shared region. */
extern _Atomic(struct smcr_stats *) smcr_stats_live;

#define smcr_stat_add(field, n)                                                     \
	atomic_fetch_add_explicit(                                                  \
		&atomic_load_explicit(&smcr_stats_live, memory_order_acquire)->field, \
		(uint64_t)(n), memory_order_relaxed)

/* Adds what s holds now to *sum (s may be another process's region, read-only). */
static inline void smcr_stats_accumulate(struct smcr_stats_counts *sum,
					 const struct smcr_stats *s)
{
#define SMCR_STATS_SUM(name)                                                        \
	sum->name += atomic_load_explicit(&s->name, memory_order_relaxed);
	SMCR_STATS_COUNTERS(SMCR_STATS_SUM)
#undef SMCR_STATS_SUM
	for (unsigned int r = 0; r < SMCR_REASON_COUNT; r++)
		sum->fallbacks[r] += atomic_load_explicit(&s->fallbacks[r], memory_order_relaxed);
}

/* The size of a shared region, as made and as mapped: whole pages. */
static inline size_t smcr_stats_region_size(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return (sizeof(struct smcr_stats) + page - 1) / page * page;
}

/*
 * A new shared region for a registration: *fd is its memfd (sealed against
 * shrinking and growing, to send to smcrd and then close), the return value
 * its mapping; NULL if none could be made (the counters stay private).
 */
struct smcr_stats *smcr_stats_region_new(int *fd);

/* smcrd accepted region: count there from now on (moves private counts in). */
void smcr_stats_region_use(struct smcr_stats *region);

/* smcrd did not take region (never used): unmap it. */
void smcr_stats_region_discard(struct smcr_stats *region);

/* Forked child: count from zero, privately, until the child registers itself. */
void smcr_stats_reset(void);

/* Everything this process has counted, across its registrations. */
void smcr_stats_snapshot(struct smcr_stats_counts *out);

/*
 * One line: "tcp: 1 listener, 2 client, 3 server connections; 10 bytes in,
 * 20 out; smc: 1 client, 1 server negotiated; fallback: PEERNOSMC 3".
 */
size_t smcr_stats_format(char *buf, size_t size);

#endif
