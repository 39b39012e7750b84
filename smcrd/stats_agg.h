/*
 * stats_agg.h - the host's statistics, summed by smcrd from every registered
 * process's counters (common/stats_region.h): the regions of live processes,
 * mapped read-only, plus the final counts of those that have exited, less a
 * baseline taken at the last reset (entstat -r: later readers see zero).
 *
 * A region is another process's memory: it may change under us or hold any
 * value.  It is checked once (a memfd of exactly the expected size, sealed
 * against shrinking and growing, so reading it cannot fault; and fully
 * allocated, so that its pages are charged to its process, not to smcrd
 * when it reads them) and its values are only ever added up or shown; the
 * few used as bounds or indexes (its connection table's) are capped first
 * (stats_sum.c, conns.c).  A process may still punch holes into it later:
 * smcrd keeps its memfd and looks again (smcrd_stats_whole) before reading
 * all of it.
 */
#ifndef SMCRD_STATS_AGG_H
#define SMCRD_STATS_AGG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "stats_region.h"

struct smcr_control_stats;

struct smcrd_stats_agg {
	struct smcr_stats_counts exited;        /* final counts of processes gone */
	uint64_t nexited;                       /* registered processes gone */
	struct smcr_stats_counts baseline;      /* the aggregate at the last reset */
	uint64_t baseline_nexited;
	uint64_t peak_connections;
	time_t since;                           /* start or last reset */
};

void smcrd_stats_init(struct smcrd_stats_agg *a);

/*
 * Maps a registering process's statistics memfd read-only; NULL (and why in
 * why) if it is not a sealed, fully allocated memfd holding our layout.
 */
const struct smcr_stats *smcrd_stats_map(int memfd, char *why, size_t size);

/* Whether a region's memfd still has every page allocated (no hole punched since). */
bool smcrd_stats_whole(int memfd);

/* Unmaps a region without reading it: its process punched holes in it. */
void smcrd_stats_forget(const struct smcr_stats *region);

/*
 * A registered process is gone: its counts (region may be NULL) join the
 * exited, its RDMA links counted as ended.
 */
void smcrd_stats_exited(struct smcrd_stats_agg *a, const struct smcr_stats *region);

/* RDMA links up now, from the live regions' sum: a gauge, which no reset touches. */
uint64_t smcrd_stats_rdma_links(const struct smcr_stats_counts *live);

/* The connections region's process has open now (its table's count, capped). */
uint32_t smcrd_stats_connections(const struct smcr_stats *region);

/* Connections open on the host now: keeps the peak. */
void smcrd_stats_sample(struct smcrd_stats_agg *a, uint64_t connections);

/*
 * Fills out's counters from live (the live regions' sum) and connections
 * (open now), less the baseline; its gauges from live alone.
 */
void smcrd_stats_report(const struct smcrd_stats_agg *a, const struct smcr_stats_counts *live,
			uint64_t connections, struct smcr_control_stats *out);

/* Later reports count from here: the baseline becomes the aggregate now. */
void smcrd_stats_reset(struct smcrd_stats_agg *a, const struct smcr_stats_counts *live,
		       uint64_t connections);

#endif
