/*
 * stats_agg.c - the host's statistics (see stats_agg.h).
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "control_proto.h"
#include "stats_agg.h"

void smcrd_stats_init(struct smcrd_stats_agg *a)
{
	*a = (struct smcrd_stats_agg){ .since = time(NULL) };
}

bool smcrd_stats_whole(int memfd)
{
	struct stat st;

	return fstat(memfd, &st) == 0 &&
	       (uint64_t)st.st_blocks * 512 >= smcr_stats_region_size();
}

/* Whether memfd can be a region: sealed, of exactly our size, allocated; else why not. */
static bool fit(int memfd, char *why, size_t size)
{
	const size_t bytes = smcr_stats_region_size();
	const int fixed = F_SEAL_SHRINK | F_SEAL_GROW;
	struct stat st;
	/*
	 * F_GET_SEALS first: it works on memfds only and asks no file system.
	 * Without F_SEAL_SHRINK the process could truncate the file under our
	 * mapping, and our next read would be a SIGBUS.
	 */
	int seals = fcntl(memfd, F_GET_SEALS);

	if (seals < 0 || fstat(memfd, &st) || !S_ISREG(st.st_mode) || (seals & fixed) != fixed) {
		snprintf(why, size, "the statistics are not a memfd sealed against shrinking and "
			 "growing");
		return false;
	}
	if ((uint64_t)st.st_size != bytes) {
		snprintf(why, size, "the statistics memfd holds %lld bytes, not %zu",
			 (long long)st.st_size, bytes);
		return false;
	}
	/* A hole would be filled by our reads, in our memory: its owner pays for its pages. */
	if (!smcrd_stats_whole(memfd)) {
		snprintf(why, size, "the statistics memfd is not fully allocated (fallocate it)");
		return false;
	}
	return true;
}

const struct smcr_stats *smcrd_stats_map(int memfd, char *why, size_t size)
{
	const size_t bytes = smcr_stats_region_size();

	if (!fit(memfd, why, size))
		return NULL;
	const struct smcr_stats *s = mmap(NULL, bytes, PROT_READ, MAP_SHARED, memfd, 0);
	if (s == MAP_FAILED) {
		snprintf(why, size, "cannot map the statistics memfd");
		return NULL;
	}
	/* Checked once: the process may rewrite it later, and nothing here relies on it. */
	if (s->layout != SMCR_STATS_LAYOUT || s->size != sizeof(*s)) {
		snprintf(why, size, "statistics layout %u of %u bytes, not %u of %zu (another "
			 "libsmcr version?)", s->layout, s->size, SMCR_STATS_LAYOUT, sizeof(*s));
		munmap((void *)s, bytes);
		return NULL;
	}
	return s;
}

void smcrd_stats_forget(const struct smcr_stats *region)
{
	munmap((void *)region, smcr_stats_region_size());
}

void smcrd_stats_exited(struct smcrd_stats_agg *a, const struct smcr_stats *region)
{
	struct smcr_stats_counts last = { 0 };

	a->nexited++;
	if (!region)
		return;
	smcr_stats_accumulate(&last, region);
	smcrd_stats_forget(region);
	/* its links went with it (the peers saw them fail): links - links_ended stays "up now" */
	if (last.rdma.links > last.rdma.links_ended)
		last.rdma.links_ended = last.rdma.links;
	smcr_stats_add_counts(&a->exited, &last);
}

uint64_t smcrd_stats_rdma_links(const struct smcr_stats_counts *live)
{
	return live->rdma.links > live->rdma.links_ended ? live->rdma.links - live->rdma.links_ended
							   : 0;
}

uint32_t smcrd_stats_connections(const struct smcr_stats *region)
{
	uint32_t open = atomic_load_explicit(&region->conns.in_use, memory_order_relaxed);

	return open < SMCR_CONN_SLOTS ? open : SMCR_CONN_SLOTS;
}

void smcrd_stats_sample(struct smcrd_stats_agg *a, uint64_t connections)
{
	if (connections > a->peak_connections)
		a->peak_connections = connections;
}

/* *sum = live + exited, all counters. */
static void aggregate(const struct smcrd_stats_agg *a, const struct smcr_stats_counts *live,
		      struct smcr_stats_counts *sum)
{
	*sum = *live;
	smcr_stats_add_counts(sum, &a->exited);
}

void smcrd_stats_report(const struct smcrd_stats_agg *a, const struct smcr_stats_counts *live,
			uint64_t connections, struct smcr_control_stats *out)
{
	struct smcr_stats_counts *c = &out->counts;

	aggregate(a, live, c);
	smcr_stats_sub_counts(c, &a->baseline);
	out->since = (int64_t)a->since;
	out->connections = connections;
	out->rdma_links = smcrd_stats_rdma_links(live);
	out->peak_connections = a->peak_connections > connections ? a->peak_connections
								   : connections;
	out->exited = a->nexited > a->baseline_nexited ? a->nexited - a->baseline_nexited : 0;
}

void smcrd_stats_reset(struct smcrd_stats_agg *a, const struct smcr_stats_counts *live,
		       uint64_t connections)
{
	aggregate(a, live, &a->baseline);
	a->baseline_nexited = a->nexited;
	a->peak_connections = connections;
	a->since = time(NULL);
}
