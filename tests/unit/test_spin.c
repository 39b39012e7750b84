/* Unit tests of the spin-then-sleep policy (libsmcr/transports/spin.h). */
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "spin.h"

static const struct smcr_spin_how patient = { .ns = 300000, .steady = true };

/* spin.h never spins on one CPU: nothing to check there. */
static void need_two_cpus(void)
{
	smcr_spin_learn_cpus();
	if (smcr_spin_cpus < 2)
		skip();
}

/* Waits that miss n times in a row, each allowed to spin. */
static void miss(struct smcr_spin *s, struct smcr_spin_how how, int n)
{
	for (int i = 0; i < n; i++) {
		assert_int_equal(smcr_spin_budget(s, how), how.ns);
		smcr_spin_done(s, how, false);
	}
}

static void misses_in_a_row_pause_spinning(void **state)
{
	struct smcr_spin s = { 0 };

	(void)state;
	need_two_cpus();
	miss(&s, SMCR_SPIN_DEFAULT, SMCR_SPIN_GIVE_UP);
	for (int i = 0; i < SMCR_SPIN_PAUSE; i++)
		assert_int_equal(smcr_spin_budget(&s, SMCR_SPIN_DEFAULT), 0);
	assert_int_equal(smcr_spin_budget(&s, SMCR_SPIN_DEFAULT), SMCR_SPIN_NS);
}

static void a_hit_starts_the_count_again(void **state)
{
	struct smcr_spin s = { 0 };

	(void)state;
	need_two_cpus();
	miss(&s, SMCR_SPIN_DEFAULT, SMCR_SPIN_GIVE_UP - 1);
	smcr_spin_done(&s, SMCR_SPIN_DEFAULT, true);
	miss(&s, SMCR_SPIN_DEFAULT, SMCR_SPIN_GIVE_UP - 1);
	assert_int_equal(smcr_spin_budget(&s, SMCR_SPIN_DEFAULT), SMCR_SPIN_NS);
}

static void a_steady_waiter_never_pauses(void **state)
{
	struct smcr_spin s = { 0 };

	(void)state;
	need_two_cpus();
	miss(&s, patient, 10 * SMCR_SPIN_GIVE_UP);
	/* a pause earned with other connections in the set does not hold it back */
	miss(&s, SMCR_SPIN_DEFAULT, SMCR_SPIN_GIVE_UP);
	assert_int_equal(smcr_spin_budget(&s, SMCR_SPIN_DEFAULT), 0);
	assert_int_equal(smcr_spin_budget(&s, patient), patient.ns);
}

static void a_wait_with_nothing_to_spin_for_keeps_the_pause(void **state)
{
	struct smcr_spin s = { 0 };

	(void)state;
	need_two_cpus();
	miss(&s, SMCR_SPIN_DEFAULT, SMCR_SPIN_GIVE_UP);
	assert_int_equal(smcr_spin_budget(&s, (struct smcr_spin_how){ 0 }), 0);
	for (int i = 0; i < SMCR_SPIN_PAUSE; i++)
		assert_int_equal(smcr_spin_budget(&s, SMCR_SPIN_DEFAULT), 0);
	assert_int_equal(smcr_spin_budget(&s, SMCR_SPIN_DEFAULT), SMCR_SPIN_NS);
}

static void a_set_spins_as_its_most_patient_member(void **state)
{
	struct smcr_spin_how how = { 0 };

	(void)state;
	smcr_spin_join(&how, SMCR_SPIN_DEFAULT);
	assert_int_equal(how.ns, SMCR_SPIN_NS);
	assert_false(how.steady);
	smcr_spin_join(&how, patient);
	smcr_spin_join(&how, SMCR_SPIN_DEFAULT);
	assert_int_equal(how.ns, patient.ns);
	assert_true(how.steady);
}

/* One CPU allowed, even a steady waiter never spins; two again, it does. */
static void an_affinity_of_one_cpu_never_spins(void **state)
{
	struct smcr_spin s = { 0 };
	cpu_set_t set;

	(void)state;
	need_two_cpus();
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	smcr_spin_learn_affinity(sizeof(set), &set);
	assert_int_equal(smcr_spin_budget(&s, patient), 0);
	CPU_SET(1, &set);
	smcr_spin_learn_affinity(sizeof(set), &set);
	assert_int_equal(smcr_spin_budget(&s, patient), patient.ns);
	/* started under taskset -c 0: learnt at start */
	CPU_CLR(1, &set);
	assert_int_equal(sched_setaffinity(0, sizeof(set), &set), 0);
	smcr_spin_learn_cpus();
	assert_int_equal(smcr_spin_budget(&s, patient), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(misses_in_a_row_pause_spinning),
		cmocka_unit_test(a_hit_starts_the_count_again),
		cmocka_unit_test(a_steady_waiter_never_pauses),
		cmocka_unit_test(a_wait_with_nothing_to_spin_for_keeps_the_pause),
		cmocka_unit_test(a_set_spins_as_its_most_patient_member),
		/* last: it leaves the test process on one CPU */
		cmocka_unit_test(an_affinity_of_one_cpu_never_spins),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
