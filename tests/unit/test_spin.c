/* Unit tests of the spin-then-sleep policy (libsmcr/transports/spin.h). */
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "spin.h"

/* RDMA's bound: 300 us */
static const struct smcr_spin_how patient = { .ns = 300000 };

/* spin.h never spins on one CPU: nothing to check there. */
static int need_two_cpus(void **state)
{
	(void)state;
	smcr_spin_learn_cpus();
	if (smcr_spin_cpus < 2)
		skip();
	return 0;
}

/* Waits that miss n times in a row, each allowed to spin; the last budget. */
static uint64_t miss(struct smcr_spin *s, struct smcr_spin_how how, int n)
{
	uint64_t budget = 0;

	for (int i = 0; i < n; i++) {
		budget = smcr_spin_budget(s, how);
		assert_true(budget > 0);
		smcr_spin_done(s, budget, false, budget);
	}
	return budget;
}

/* A wait that got its answer after took_ns. */
static void hit(struct smcr_spin *s, struct smcr_spin_how how, uint64_t took_ns)
{
	uint64_t budget = smcr_spin_budget(s, how);

	assert_true(budget >= took_ns);
	smcr_spin_done(s, budget, true, took_ns);
}

static void misses_in_a_row_pause_spinning(void **state)
{
	struct smcr_spin s = { 0 };

	(void)state;
	miss(&s, SMCR_SPIN_DEFAULT, SMCR_SPIN_GIVE_UP);
	for (int i = 0; i < SMCR_SPIN_PAUSE; i++)
		assert_int_equal(smcr_spin_budget(&s, SMCR_SPIN_DEFAULT), 0);
	assert_int_equal(smcr_spin_budget(&s, SMCR_SPIN_DEFAULT), SMCR_SPIN_NS);
}

static void a_hit_starts_the_count_again(void **state)
{
	struct smcr_spin s = { 0 };

	(void)state;
	miss(&s, SMCR_SPIN_DEFAULT, SMCR_SPIN_GIVE_UP - 1);
	hit(&s, SMCR_SPIN_DEFAULT, 1000);
	miss(&s, SMCR_SPIN_DEFAULT, SMCR_SPIN_GIVE_UP - 1);
	assert_int_equal(smcr_spin_budget(&s, SMCR_SPIN_DEFAULT), SMCR_SPIN_NS);
}

/* Answers in 2 us: the spin shrinks from the bound to the shortest. */
static void quick_answers_shorten_the_spin(void **state)
{
	struct smcr_spin s = { 0 };

	(void)state;
	assert_int_equal(smcr_spin_budget(&s, patient), patient.ns);
	for (int i = 0; i < 40; i++)
		hit(&s, patient, 2000);
	assert_int_equal(smcr_spin_budget(&s, patient), SMCR_SPIN_NS);
}

/* Answers in 100 us: the spin settles at twice that, not the bound. */
static void the_spin_follows_what_answers_take(void **state)
{
	struct smcr_spin s = { 0 };
	uint64_t budget;

	(void)state;
	for (int i = 0; i < 40; i++)
		hit(&s, patient, 100000);
	budget = smcr_spin_budget(&s, patient);
	assert_in_range(budget, 190000, 210000);
}

/* Each miss doubles the next spin, up to the transport's bound. */
static void misses_lengthen_the_spin_to_the_bound(void **state)
{
	struct smcr_spin s = { 0 };

	(void)state;
	for (int i = 0; i < 40; i++)
		hit(&s, patient, 2000);
	assert_int_equal(miss(&s, patient, 1), SMCR_SPIN_NS);
	assert_int_equal(miss(&s, patient, 1), 2 * SMCR_SPIN_NS);
	assert_int_equal(miss(&s, patient, 1), 4 * SMCR_SPIN_NS);
	hit(&s, patient, 150000);       /* within 160 us: averaged to 97.5 us */
	assert_int_equal(miss(&s, patient, 1), 195000);
	assert_int_equal(miss(&s, patient, 1), patient.ns);
}

static void a_wait_with_nothing_to_spin_for_keeps_the_pause(void **state)
{
	struct smcr_spin s = { 0 };

	(void)state;
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
	smcr_spin_join(&how, patient);
	smcr_spin_join(&how, SMCR_SPIN_DEFAULT);
	assert_int_equal(how.ns, patient.ns);
}

/* A peer that last ran on our CPU gets no spin; one elsewhere, or unknown, does. */
static void a_peer_on_our_cpu_gets_no_spin(void **state)
{
	cpu_set_t set, was;
	uint32_t here;

	(void)state;
	assert_int_equal(sched_getaffinity(0, sizeof(was), &was), 0);
	CPU_ZERO(&set);
	CPU_SET(1, &set);
	assert_int_equal(sched_setaffinity(0, sizeof(set), &set), 0);
	here = smcr_spin_cpu_tag();
	assert_int_equal(here, 2);
	assert_int_equal(smcr_spin_unless_here(SMCR_SPIN_DEFAULT, here).ns, 0);
	assert_int_equal(smcr_spin_unless_here(SMCR_SPIN_DEFAULT, 1).ns, SMCR_SPIN_NS);
	assert_int_equal(smcr_spin_unless_here(SMCR_SPIN_DEFAULT, 0).ns, SMCR_SPIN_NS);
	assert_int_equal(sched_setaffinity(0, sizeof(was), &was), 0);
}

static int turns;

/* came() on the third turn */
static bool third_turn(void *arg)
{
	(void)arg;
	return ++turns == 3;
}

static bool never(void *arg)
{
	(void)arg;
	turns++;
	return false;
}

static void a_spin_ends_when_its_answer_comes_or_its_budget_is_spent(void **state)
{
	/* a bound no preemption outlasts: a busy host may hold us off CPU past 20 us */
	const struct smcr_spin_how unhurried = { .ns = UINT32_MAX };
	struct smcr_spin s = { 0 };

	(void)state;
	turns = 0;
	assert_true(smcr_spin_for(&s, unhurried, third_turn, NULL));
	assert_int_equal(turns, 3);
	assert_true(s.took_ns > 0 && s.took_ns < unhurried.ns);
	for (int i = 0; i < SMCR_SPIN_GIVE_UP; i++)
		assert_false(smcr_spin_for(&s, SMCR_SPIN_DEFAULT, never, NULL));
	turns = 0;
	assert_false(smcr_spin_for(&s, SMCR_SPIN_DEFAULT, never, NULL));
	assert_int_equal(turns, 0);     /* paused: straight to sleep */
}

/* One CPU allowed, even RDMA's waiters never spin; two again, they do. */
static void an_affinity_of_one_cpu_never_spins(void **state)
{
	struct smcr_spin s = { 0 };
	cpu_set_t set;

	(void)state;
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
		cmocka_unit_test_setup(misses_in_a_row_pause_spinning, need_two_cpus),
		cmocka_unit_test_setup(a_hit_starts_the_count_again, need_two_cpus),
		cmocka_unit_test_setup(quick_answers_shorten_the_spin, need_two_cpus),
		cmocka_unit_test_setup(the_spin_follows_what_answers_take, need_two_cpus),
		cmocka_unit_test_setup(misses_lengthen_the_spin_to_the_bound, need_two_cpus),
		cmocka_unit_test_setup(a_wait_with_nothing_to_spin_for_keeps_the_pause,
				       need_two_cpus),
		cmocka_unit_test(a_set_spins_as_its_most_patient_member),
		cmocka_unit_test_setup(a_peer_on_our_cpu_gets_no_spin, need_two_cpus),
		cmocka_unit_test_setup(a_spin_ends_when_its_answer_comes_or_its_budget_is_spent,
				       need_two_cpus),
		/* last: it leaves the test process on one CPU */
		cmocka_unit_test_setup(an_affinity_of_one_cpu_never_spins, need_two_cpus),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
