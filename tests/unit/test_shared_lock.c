/*
 * Unit tests of the lock in memory other processes can write
 * (libsmcr/base/shared_lock.h): it excludes across processes, a holder's
 * give wakes a waiter, and neither a holder that never gives it back nor
 * any value written into its word keeps a waiter past its bound.
 */
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "shared_lock.h"

/* What two processes share: the lock, and what it guards. */
struct shared {
	struct smcr_shared_lock lock;
	uint64_t counter;
	_Atomic int child_holds;
};

static struct shared *shared_new(void)
{
	struct shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	assert_true(sh != MAP_FAILED);
	smcr_shared_lock_init(&sh->lock);
	sh->counter = 0;
	sh->child_holds = 0;
	return sh;
}

static void reap(pid_t pid)
{
	int status;

	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* Increments the counter n times under the lock, each a read then a write. */
static void increment(struct shared *sh, int n)
{
	for (int i = 0; i < n; i++) {
		if (!smcr_shared_lock_take(&sh->lock, 60000))
			_exit(3);
		uint64_t seen = *(volatile uint64_t *)&sh->counter;

		if (i % 64 == 0)
			sched_yield();	/* let the other in while we hold it */
		*(volatile uint64_t *)&sh->counter = seen + 1;
		smcr_shared_lock_give(&sh->lock);
	}
}

/* A try never waits and never takes a held lock by force: the word stays its holder's. */
static void a_try_takes_only_a_free_lock(void **state)
{
	struct smcr_shared_lock lock;
	static const uint32_t held[] = { 1, 2, 77 };

	(void)state;
	smcr_shared_lock_init(&lock);
	assert_true(smcr_shared_lock_try(&lock));
	assert_int_equal(atomic_load(&lock.word), 1);
	for (unsigned int i = 0; i < sizeof(held) / sizeof(held[0]); i++) {
		atomic_store(&lock.word, held[i]);
		assert_false(smcr_shared_lock_try(&lock));
		assert_int_equal(atomic_load(&lock.word), held[i]);
	}
	atomic_store(&lock.word, 1);
	smcr_shared_lock_give(&lock);
	assert_true(smcr_shared_lock_try(&lock));
}

static void two_processes_never_hold_it_at_once(void **state)
{
	struct shared *sh = shared_new();
	const int n = 20000;
	pid_t pid;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		increment(sh, n);
		_exit(0);
	}
	increment(sh, n);
	reap(pid);
	assert_int_equal(sh->counter, 2 * n);
	assert_int_equal(sh->lock.word, 0);
	munmap(sh, sizeof(*sh));
}

/* A child that takes the lock, then gives it back after hold_us (< 0: never); once it holds it. */
static pid_t child_holding(struct shared *sh, long hold_us)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		smcr_shared_lock_take(&sh->lock, 0);
		sh->child_holds = 1;
		if (hold_us < 0)
			pause();	/* stopped, stuck or hostile: the same to a waiter */
		usleep((useconds_t)hold_us);
		smcr_shared_lock_give(&sh->lock);
		_exit(0);
	}
	while (!sh->child_holds)
		sched_yield();
	return pid;
}

static void a_give_wakes_the_waiter_before_its_bound(void **state)
{
	struct shared *sh = shared_new();
	pid_t pid = child_holding(sh, 50000);

	(void)state;
	/* an hour's bound: taken by force, it would have taken an hour */
	assert_true(smcr_shared_lock_take(&sh->lock, 3600000));
	smcr_shared_lock_give(&sh->lock);
	reap(pid);
	munmap(sh, sizeof(*sh));
}

static void a_holder_that_never_gives_it_back_is_overtaken(void **state)
{
	struct shared *sh = shared_new();
	pid_t pid = child_holding(sh, -1);

	(void)state;
	assert_false(smcr_shared_lock_take(&sh->lock, 100));
	/* ours now: a second waiter waits for us, as for any holder */
	assert_false(smcr_shared_lock_take(&sh->lock, 0));
	smcr_shared_lock_give(&sh->lock);
	assert_true(smcr_shared_lock_take(&sh->lock, 0));
	smcr_shared_lock_give(&sh->lock);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	munmap(sh, sizeof(*sh));
}

static void any_value_in_the_word_is_held_and_bounded(void **state)
{
	static const uint32_t forged[] = { 1, 2, 3, 0x7f7f7f7f, 0x80000000u | 4242, UINT32_MAX };
	struct smcr_shared_lock lock;

	(void)state;
	for (size_t i = 0; i < sizeof(forged) / sizeof(forged[0]); i++) {
		lock.word = forged[i];
		assert_false(smcr_shared_lock_take(&lock, 20));
		smcr_shared_lock_give(&lock);
		assert_int_equal(lock.word, 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_try_takes_only_a_free_lock),
		cmocka_unit_test(two_processes_never_hold_it_at_once),
		cmocka_unit_test(a_give_wakes_the_waiter_before_its_bound),
		cmocka_unit_test(a_holder_that_never_gives_it_back_is_overtaken),
		cmocka_unit_test(any_value_in_the_word_is_held_and_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
