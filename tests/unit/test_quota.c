/*
 * Unit tests of smcrd's per-user and per-process limits (smcrd/quota.c):
 * a process's and a user's share of max_memory, counted over every client
 * of that uid and no other; requests that would overflow the sum; root
 * exempt from both; the room left under them; the processes a user may
 * have.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "quota.h"

static const struct smcrd_limits limits = {
	.memory = 1000, .memory_per_user = 500, .memory_per_process = 300,
	.processes_per_user = 2,
};

static void memory(void **state)
{
	struct smcrd_client c[] = {
		{ .uid = 1000, .granted = 300 }, { .uid = 1000, .granted = 100 },
		{ .uid = 1001, .granted = 300 }, { .uid = 0, .granted = 0 },
	};
	char why[240];

	(void)state;
	/* the first holds its process's share */
	assert_false(smcrd_quota_allows(c, 4, &c[0], 1, &limits, why, sizeof(why)));
	assert_string_equal(why, "max_memory_per_process reached: this process holds 300 of "
				 "300 bytes");
	/* the second may have 100 more: the user's 500, not the other user's bytes */
	assert_true(smcrd_quota_allows(c, 4, &c[1], 100, &limits, why, sizeof(why)));
	assert_false(smcrd_quota_allows(c, 4, &c[1], 101, &limits, why, sizeof(why)));
	assert_string_equal(why, "max_memory_per_user reached: uid 1000 holds 400 of 500 bytes");
	assert_false(smcrd_quota_allows(c, 4, &c[1], UINT64_MAX, &limits, NULL, 0));
	/* root: only max_memory, which the caller checks */
	assert_true(smcrd_quota_allows(c, 4, &c[3], 900, &limits, NULL, 0));
}

static void room(void **state)
{
	struct smcrd_client c[] = {
		{ .uid = 1000, .granted = 300 }, { .uid = 1000, .granted = 100 },
		{ .uid = 1001, .granted = 350 }, { .uid = 0, .granted = 5000 },
	};

	(void)state;
	assert_int_equal(smcrd_quota_room(c, 4, &c[0], &limits), 0);      /* its own share */
	assert_int_equal(smcrd_quota_room(c, 4, &c[1], &limits), 100);    /* its user's */
	assert_int_equal(smcrd_quota_room(c, 4, &c[2], &limits), 0);      /* held beyond it */
	assert_int_equal(smcrd_quota_room(c, 4, &c[3], &limits), UINT64_MAX);
}

static void processes(void **state)
{
	const struct smcrd_client c[] = { { .uid = 1000 }, { .uid = 1000 }, { .uid = 0 },
					  { .uid = 0 }, { .uid = 0 } };
	char why[240];

	(void)state;
	assert_false(smcrd_quota_admits(c, 5, 1000, &limits, why, sizeof(why)));
	assert_string_equal(why, "max_processes_per_user reached: smcrd serves 2 processes of "
				 "uid 1000 already");
	assert_true(smcrd_quota_admits(c, 5, 1001, &limits, why, sizeof(why)));
	assert_true(smcrd_quota_admits(c, 5, 0, &limits, why, sizeof(why)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(memory),
		cmocka_unit_test(room),
		cmocka_unit_test(processes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
