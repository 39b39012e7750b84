/* Unit tests of smcrd's per-uid rations (smcrd/ration.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "ration.h"

static void an_allowance_then_refusals_then_a_new_window(void **state)
{
	struct smcrd_rations rs = SMCRD_RATIONS(3, 1);
	unsigned int ended;
	struct smcrd_ration *r;

	(void)state;
	for (int i = 0; i < 3; i++) {
		r = smcrd_ration_of(&rs, 1000, 50, &ended);
		assert_true(smcrd_ration_take(&rs, r));
		assert_int_equal(ended, 0);
	}
	for (int i = 0; i < 5; i++)
		assert_false(smcrd_ration_take(&rs, smcrd_ration_of(&rs, 1000, 50, &ended)));
	r = smcrd_ration_of(&rs, 1000, 51, &ended);     /* the next second */
	assert_int_equal(ended, 5);
	assert_true(smcrd_ration_take(&rs, r));
}

static void each_uid_has_its_own(void **state)
{
	struct smcrd_rations rs = SMCRD_RATIONS(1, 60);
	unsigned int ended;

	(void)state;
	assert_true(smcrd_ration_take(&rs, smcrd_ration_of(&rs, 1, 0, &ended)));
	assert_false(smcrd_ration_take(&rs, smcrd_ration_of(&rs, 1, 10, &ended)));
	assert_true(smcrd_ration_take(&rs, smcrd_ration_of(&rs, 2, 10, &ended)));
	assert_false(smcrd_ration_take(&rs, smcrd_ration_of(&rs, 1, 59, &ended)));
	assert_true(smcrd_ration_take(&rs, smcrd_ration_of(&rs, 1, 60, &ended)));
}

static void a_new_uid_takes_the_oldest_window_s_place(void **state)
{
	struct smcrd_rations rs = SMCRD_RATIONS(1, 1000);
	unsigned int ended;

	(void)state;
	for (uid_t uid = 0; uid < SMCRD_RATION_UIDS; uid++)   /* uid 0's window began first */
		assert_true(smcrd_ration_take(&rs, smcrd_ration_of(&rs, uid, uid, &ended)));
	assert_true(smcrd_ration_take(&rs, smcrd_ration_of(&rs, 500, 100, &ended)));
	/* uid 1 kept its place and its spent allowance; uid 0 lost its place */
	assert_false(smcrd_ration_take(&rs, smcrd_ration_of(&rs, 1, 100, &ended)));
	assert_false(smcrd_ration_take(&rs, smcrd_ration_of(&rs, 500, 100, &ended)));
	/* had it kept it, its allowance would be spent */
	assert_true(smcrd_ration_take(&rs, smcrd_ration_of(&rs, 0, 100, &ended)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(an_allowance_then_refusals_then_a_new_window),
		cmocka_unit_test(each_uid_has_its_own),
		cmocka_unit_test(a_new_uid_takes_the_oldest_window_s_place),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
