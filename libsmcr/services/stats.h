/*
 * stats.h - what this process's libsmcr has seen: its counters, and the
 * shared region that carries them (and its connection table, conn_table.h)
 * to smcrd.
 *
 * Counters are relaxed atomic adds through one pointer: no lock and no
 * system call per update.  Until the process registers with smcrd they live
 * in a private struct (a process that never registers pays nothing); at
 * registration they move to a memfd-backed MAP_SHARED region that smcrd maps
 * read-only and sums into the host's statistics (smcrd/stats_agg.h), also
 * after the process has exited.  The same struct is that region's layout.
 *
 * The counters are one array of 64-bit words laid out as struct
 * smcr_stats_counts, so that summing, snapshots, resets and deltas are one
 * loop over words, whatever counters are added later.  A live connection's
 * bytes, calls and buffer-full events are in its record (conn_table.h)
 * until it closes, and join these counters then.
 */
#ifndef SMCR_STATS_H
#define SMCR_STATS_H

#include <stdatomic.h>
#include <stddef.h>

#include "stats_region.h"

/* Where updates go now: the private struct, or this process's shared region. */
extern _Atomic(struct smcr_stats *) smcr_stats_live;

static inline struct smcr_stats *smcr_stats_now(void)
{
	return atomic_load_explicit(&smcr_stats_live, memory_order_acquire);
}

#define smcr_stat_add(field, n)                                                     \
	atomic_fetch_add_explicit(&smcr_stats_now()->word[SMCR_STAT_WORD(field)],   \
				  (uint64_t)(n), memory_order_relaxed)

/*
 * A new shared region for a registration: *fd is its memfd (sealed against
 * shrinking and growing, every page allocated, so charged to this process;
 * to send to smcrd and then close), the return value its mapping; NULL if
 * none could be made (the counters stay private).
 */
struct smcr_stats *smcr_stats_region_new(int *fd);

/*
 * Before region goes to smcrd with REGISTER: if this process registered
 * before (smcrd restarted, or cut us off), its connections are listed there
 * already, so that smcrd charges the buffers of those on SMC to it again
 * (smcrd/survivors.h); smcr_stats_region_use copies them again, as they are
 * by then.  A first registration, a fork's child's included, lists none.
 */
void smcr_stats_region_prepare(struct smcr_stats *region);

/*
 * smcrd accepted region: count there from now on (moves private counts and
 * the connection table in).
 */
void smcr_stats_region_use(struct smcr_stats *region);

/* smcrd did not take region (never used): unmap it. */
void smcr_stats_region_discard(struct smcr_stats *region);

/* About to fork: the connections the child inherits are copied for it. */
void smcr_stats_before_fork(void);

/*
 * Forked child: count from zero, privately, until the child registers
 * itself; the connections it inherited stay in its table (and are then
 * made the child's: smcr_conn_table_forked).
 */
void smcr_stats_reset(void);

/* Everything this process has counted, across its registrations. */
void smcr_stats_snapshot(struct smcr_stats_counts *out);

/*
 * One line: "tcp: 1 listener, 2 client, 3 server connections; 10 bytes in,
 * 20 out; smc: 1 client, 1 server negotiated; fallback: PEERNOSMC 3".
 */
size_t smcr_stats_format(char *buf, size_t size);

#endif
