/*
 * Unit tests of smcrd's sums of the statistics (smcrd/stats_agg.c): the
 * RDMA link gauge of live processes, the links of an exited process
 * counted as ended, a reset that leaves the gauge alone, sums that a
 * region's writer cannot wrap round, and the regions smcrd takes: sealed,
 * fully allocated (and found out once holes are punched in them).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "control_proto.h"
#include "stats_agg.h"

/* A process's region as smcrd holds it (mapped: smcrd_stats_exited unmaps it). */
static struct smcr_stats *region(uint64_t links, uint64_t ended, uint64_t failed)
{
	struct smcr_stats *r = mmap(NULL, smcr_stats_region_size(), PROT_READ | PROT_WRITE,
				    MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	assert_true(r != MAP_FAILED);
	r->word[SMCR_STAT_WORD(rdma.links)] = links;
	r->word[SMCR_STAT_WORD(rdma.links_ended)] = ended;
	r->word[SMCR_STAT_WORD(rdma.links_failed)] = failed;
	return r;
}

static void live_sum(struct smcr_stats_counts *sum, const struct smcr_stats *r)
{
	memset(sum, 0, sizeof(*sum));
	smcr_stats_accumulate(sum, r);
}

static void rdma_links(void **state)
{
	(void)state;
	struct smcrd_stats_agg a;
	struct smcr_stats_counts live;
	struct smcr_control_stats out;
	struct smcr_stats *alive = region(5, 2, 1), *gone = region(4, 1, 1);

	smcrd_stats_init(&a);
	live_sum(&live, alive);
	memset(&out, 0, sizeof(out));
	smcrd_stats_report(&a, &live, 0, &out);
	assert_int_equal(out.rdma_links, 3);
	assert_int_equal(out.counts.rdma.links, 5);

	/* a process exits with 3 links up: they end with it */
	smcrd_stats_exited(&a, gone);
	assert_int_equal(a.exited.rdma.links, 4);
	assert_int_equal(a.exited.rdma.links_ended, 4);
	assert_int_equal(a.exited.rdma.links_failed, 1);
	smcrd_stats_report(&a, &live, 0, &out);
	assert_int_equal(out.rdma_links, 3);
	assert_int_equal(out.counts.rdma.links, 9);
	assert_int_equal(out.counts.rdma.links - out.counts.rdma.links_ended, 3);

	/* a reset zeroes the counters, not the gauge */
	smcrd_stats_reset(&a, &live, 0);
	smcrd_stats_report(&a, &live, 0, &out);
	assert_int_equal(out.counts.rdma.links, 0);
	assert_int_equal(out.rdma_links, 3);
	munmap(alive, smcr_stats_region_size());
}

/* Another process's region holds any value: more ended than made is no gauge below zero. */
static void rdma_links_nonsense(void **state)
{
	(void)state;
	struct smcr_stats_counts live = { .rdma = { .links = 1, .links_ended = 7 } };

	assert_int_equal(smcrd_stats_rdma_links(&live), 0);
}

/* A region that claims nearly everything cannot wrap the host's sums round to hide the rest. */
static void rewritten_region_cannot_wrap_sums(void **state)
{
	(void)state;
	struct smcr_stats *honest = region(1, 0, 0), *hostile = region(0, 0, 0);
	struct smcr_stats_counts sum;

	honest->word[SMCR_STAT_WORD(smc_clients)] = 10;
	for (size_t i = 0; i < SMCR_STATS_WORDS; i++)
		hostile->word[i] = UINT64_MAX - 5;
	live_sum(&sum, honest);
	smcr_stats_accumulate(&sum, hostile);
	assert_true(sum.smc_clients == UINT64_MAX);
	munmap(honest, smcr_stats_region_size());
	munmap(hostile, smcr_stats_region_size());
}

/* A region's memfd as libsmcr makes it, allocated or not, with the seals given. */
static int region_memfd(bool allocated, int seals)
{
	const size_t size = smcr_stats_region_size();
	struct smcr_stats head = { .layout = SMCR_STATS_LAYOUT, .size = sizeof(struct smcr_stats) };
	int fd = memfd_create("test-stats", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	assert_int_equal(allocated ? fallocate(fd, 0, 0, (off_t)size) : 0, 0);
	assert_int_equal(pwrite(fd, &head, offsetof(struct smcr_stats, word), 0),
			 (ssize_t)offsetof(struct smcr_stats, word));
	assert_int_equal(fcntl(fd, F_ADD_SEALS, seals), 0);
	return fd;
}

static void region_admission(void **state)
{
	const int fixed = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
	const size_t size = smcr_stats_region_size();
	char why[240];
	int fd;

	(void)state;
	fd = region_memfd(false, fixed);
	assert_null(smcrd_stats_map(fd, why, sizeof(why)));
	assert_string_equal(why, "the statistics memfd is not fully allocated (fallocate it)");
	close(fd);
	fd = region_memfd(true, F_SEAL_SHRINK);
	assert_null(smcrd_stats_map(fd, why, sizeof(why)));
	assert_string_equal(why, "the statistics are not a memfd sealed against shrinking and "
				 "growing");
	close(fd);

	fd = region_memfd(true, fixed);
	const struct smcr_stats *s = smcrd_stats_map(fd, why, sizeof(why));
	assert_non_null(s);
	assert_true(smcrd_stats_whole(fd));
	assert_int_equal(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 4096,
				   (off_t)size - 4096), 0);
	assert_false(smcrd_stats_whole(fd));
	smcrd_stats_forget(s);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(rdma_links),
		cmocka_unit_test(rdma_links_nonsense),
		cmocka_unit_test(rewritten_region_cannot_wrap_sums),
		cmocka_unit_test(region_admission),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
