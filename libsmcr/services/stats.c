/*
 * stats.c - this process's counters and connection table: where they live
 * (private struct or shared region, see stats.h), moving between the two,
 * and the exit line.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "filter.h"
#include "real.h"
#include "stats.h"
#include "sys.h"

/*
 * Before the first registration: the live counters.  After it: what earlier
 * regions held when they were replaced (smcrd has seen those already), plus
 * any update that raced a switch; the exit line adds it to the live region.
 */
static struct smcr_stats local;

_Atomic(struct smcr_stats *) smcr_stats_live = &local;

struct smcr_stats *smcr_stats_region_new(int *fd)
{
	static const uint64_t fallocate_args[6] = { 0, 0 };
	const size_t size = smcr_stats_region_size();

	*fd = smcr_sys_memfd_sealed(size);
	if (*fd < 0)
		return NULL;
	/* smcrd takes no region with holes: its reads would fill them, in its memory. */
	if (!smcr_filter_permits(SYS_fallocate, fallocate_args) || fallocate(*fd, 0, 0, (off_t)size)) {
		REAL(close)(*fd);
		*fd = -1;
		return NULL;
	}
	struct smcr_stats *region = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	if (region == MAP_FAILED) {
		REAL(close)(*fd);
		*fd = -1;
		return NULL;
	}
	region->layout = SMCR_STATS_LAYOUT;
	region->size = sizeof(*region);
	return region;
}

/* Moves (emptying from) or copies the counts of from into to. */
static void carry(struct smcr_stats *to, struct smcr_stats *from, bool move)
{
	for (size_t i = 0; i < SMCR_STATS_WORDS; i++)
		atomic_fetch_add_explicit(&to->word[i],
					  move ? atomic_exchange(&from->word[i], 0)
					       : atomic_load(&from->word[i]),
					  memory_order_relaxed);
}

/*
 * The open connections' records go where the counting goes.  Updates that
 * race the copy (other threads' traffic, at a registration after the
 * first) may be lost: registering again is rare, and the next call
 * publishes an SMC connection's figures whole again.
 */
static void move_conns(struct smcr_conn_table *to, const struct smcr_conn_table *from)
{
	uint32_t high = atomic_load(&from->high);

	/* only the slots ever used: the rest of the table stays untouched, unallocated */
	memcpy(to->slot, from->slot, high * sizeof(from->slot[0]));
	atomic_store(&to->high, high);
	atomic_store(&to->in_use, atomic_load(&from->in_use));
	atomic_store(&to->peak, atomic_load(&from->peak));
}

void smcr_stats_region_prepare(struct smcr_stats *region)
{
	const struct smcr_stats *live = atomic_load(&smcr_stats_live);

	if (live != &local)
		move_conns(&region->conns, &live->conns);
}

void smcr_stats_region_use(struct smcr_stats *region)
{
	struct smcr_stats *old = atomic_exchange_explicit(&smcr_stats_live, region,
							  memory_order_acq_rel);

	move_conns(&region->conns, &old->conns);
	if (old == &local) {
		carry(region, &local, true);    /* counted before registering: smcrd's too */
		return;
	}
	/*
	 * Registering again (smcrd restarted, or we were cut off): smcrd has seen
	 * the old region already, the exit line still needs it.  It stays mapped:
	 * another thread may be adding to it right now.
	 */
	carry(&local, old, false);
}

void smcr_stats_region_discard(struct smcr_stats *region)
{
	munmap(region, smcr_stats_region_size());
}

void smcr_stats_before_fork(void)
{
	struct smcr_stats *live = atomic_load(&smcr_stats_live);

	/*
	 * The child's copy of the records, taken now: after fork() the parent
	 * may free them in the shared region (closing its descriptors) before
	 * the child could look.
	 */
	if (live != &local)
		move_conns(&local.conns, &live->conns);
}

void smcr_stats_reset(void)
{
	/* Only the forked child's single thread is running: plain stores, and unmapping
	   the parent's region (which the child must not write to) is safe. */
	struct smcr_stats *old = atomic_load(&smcr_stats_live);

	atomic_store(&smcr_stats_live, &local);
	if (old != &local)
		munmap(old, smcr_stats_region_size());
	memset(local.word, 0, sizeof(local.word));
}

void smcr_stats_snapshot(struct smcr_stats_counts *out)
{
	const struct smcr_stats *live = atomic_load(&smcr_stats_live);

	memset(out, 0, sizeof(*out));
	if (live == &local) {
		smcr_stats_accumulate(out, &local);
		return;
	}
	/* local's records moved to the region with the registration: only its counts */
	for (size_t i = 0; i < SMCR_STATS_WORDS; i++)
		smcr_stats_words(out)[i] = atomic_load_explicit(&local.word[i],
								memory_order_relaxed);
	smcr_stats_accumulate(out, live);
}

/* Appends to buf at *used, keeping it NUL-terminated and never overflowing. */
static void append(char *buf, size_t size, size_t *used, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void append(char *buf, size_t size, size_t *used, const char *fmt, ...)
{
	va_list ap;

	if (*used >= size - 1)
		return;
	va_start(ap, fmt);
	int n = vsnprintf(buf + *used, size - *used, fmt, ap);
	va_end(ap);
	if (n > 0)
		*used = *used + (size_t)n < size ? *used + (size_t)n : size - 1;
}

size_t smcr_stats_format(char *buf, size_t size)
{
	struct smcr_stats_counts s;
	const struct smcr_stats_transport *shm = &s.transport[SMCR_TRANSPORT_SHM];
	const struct smcr_stats_transport *rdma = &s.transport[SMCR_TRANSPORT_RDMA];
	size_t used = 0;
	const char *sep = "; fallback:";

	if (!size)
		return 0;
	smcr_stats_snapshot(&s);
	buf[0] = '\0';
	append(buf, size, &used,
	       "tcp: %llu listener, %llu client, %llu server connections; "
	       "%llu bytes in, %llu out; smc: %llu client, %llu server negotiated; "
	       "shm: %llu client, %llu server, %llu B in, %llu B out",
	       (unsigned long long)s.tcp_listeners, (unsigned long long)s.tcp_clients,
	       (unsigned long long)s.tcp_servers, (unsigned long long)s.tcp_bytes_in,
	       (unsigned long long)s.tcp_bytes_out, (unsigned long long)s.smc_clients,
	       (unsigned long long)s.smc_servers, (unsigned long long)shm->clients,
	       (unsigned long long)shm->servers, (unsigned long long)shm->bytes_in,
	       (unsigned long long)shm->bytes_out);
	if (rdma->clients + rdma->servers)
		append(buf, size, &used, "; rdma: %llu client, %llu server, %llu B in, %llu B out",
		       (unsigned long long)rdma->clients, (unsigned long long)rdma->servers,
		       (unsigned long long)rdma->bytes_in, (unsigned long long)rdma->bytes_out);
	if (s.handshake_errors)
		append(buf, size, &used, "; handshake errors: %llu",
		       (unsigned long long)s.handshake_errors);
	for (unsigned int r = 1; r < SMCR_REASON_COUNT; r++) {
		if (!s.fallbacks[r])
			continue;
		append(buf, size, &used, "%s %s %llu", sep, smcr_reason_name((enum smcr_reason)r),
		       (unsigned long long)s.fallbacks[r]);
		sep = ",";
	}
	return used;
}
