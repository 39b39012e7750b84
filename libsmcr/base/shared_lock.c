/*
 * shared_lock.c - the lock of shared_lock.h: the futex mutex of Drepper's
 * "Futexes Are Tricky" (0 free, 1 held, 2 held with waiters), whose waits
 * are bounded.
 *
 * No wakeup is lost: a waiter sets the word to 2 before it sleeps, and
 * FUTEX_WAIT sleeps only while the word is still 2; a giver that finds
 * anything but 1 in the word it swapped for 0 wakes a waiter.  A waiter
 * that a hostile process never wakes (or that misses a wake-up the word's
 * rewriting stole) wakes at its deadline anyway: each sleep is bounded.
 */
#include <linux/futex.h>
#include <time.h>

#include "shared_lock.h"
#include "sys.h"

/* One sleep while the word is 2, of at most ms. */
static void sleep_while_held(struct smcr_shared_lock *lock, uint64_t ms)
{
	struct timespec ts = { .tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000L };

	smcr_sys_futex(&lock->word, FUTEX_WAIT, 2, &ts);
}

bool smcr_shared_lock_take(struct smcr_shared_lock *lock, unsigned int wait_ms)
{
	uint64_t deadline, now;

	if (smcr_shared_lock_try(lock))
		return true;
	deadline = smc_clock_ms() + wait_ms;
	/* 2 from now on: whoever gives it back next must wake someone */
	while (atomic_exchange_explicit(&lock->word, 2, memory_order_acquire) != 0) {
		now = smc_clock_ms();
		if (now >= deadline)
			return false;	/* the word is 2: ours, by force */
		sleep_while_held(lock, deadline - now);
	}
	return true;
}

void smcr_shared_lock_give(struct smcr_shared_lock *lock)
{
	if (atomic_exchange_explicit(&lock->word, 0, memory_order_release) != 1)
		smcr_sys_futex(&lock->word, FUTEX_WAKE, 1, NULL);
}
