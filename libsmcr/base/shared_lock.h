/*
 * shared_lock.h - a lock in memory that other processes can write: a
 * connection's state page, which every process holding the socket maps
 * read-write, one of them perhaps hostile (another uid it was handed to).
 *
 * Why not a pthread mutex there: the C library reads a mutex's kind from
 * the mutex itself, and a robust one is linked into the locking thread's
 * robust list through pointers stored in it.  A process that rewrites
 * those pointers while we hold the lock makes our unlock write where it
 * chose, in our memory (the unlink of a doubly linked list); one that just
 * takes the lock and never gives it back hangs every other holder for
 * ever.  This lock is one futex word and nothing else: no pointer, no
 * kind, no owner to believe.  Any value but 0 reads as held.
 *
 * What it gives up is the robust mutex's EOWNERDEAD: a holder that dies
 * holding it, or stops (SIGSTOP, a debugger), or never gives it back on
 * purpose, is the same to a waiter, who after its bound takes the lock by
 * force and is told so.  The bound is the caller's, longer than anything
 * an honest holder does under the lock.
 */
#ifndef SMCR_SHARED_LOCK_H
#define SMCR_SHARED_LOCK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct smcr_shared_lock {
	_Atomic uint32_t word;		/* 0: free; 1: held; 2 (or anything else): held, maybe waited for */
};

/* A free lock. */
static inline void smcr_shared_lock_init(struct smcr_shared_lock *lock)
{
	atomic_store_explicit(&lock->word, 0, memory_order_relaxed);
}

/* Takes the lock if it is free: true; false, at once, if it is held. */
static inline bool smcr_shared_lock_try(struct smcr_shared_lock *lock)
{
	uint32_t free_word = 0;

	return atomic_compare_exchange_strong_explicit(&lock->word, &free_word, 1,
						       memory_order_acquire, memory_order_relaxed);
}

/*
 * Takes the lock, waiting at most wait_ms for its holder: true; past that,
 * takes it anyway: false (a holder that is gone, stuck or hostile may
 * still think it holds it).  Never blocks longer, whatever the word holds.
 */
bool smcr_shared_lock_take(struct smcr_shared_lock *lock, unsigned int wait_ms);

/* Gives it back, waking one waiter if any may wait. */
void smcr_shared_lock_give(struct smcr_shared_lock *lock);

#endif
