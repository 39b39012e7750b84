/*
 * fdtable.h - what libsmcr knows about each file descriptor of the process.
 *
 * Every interposed call asks "is this fd one of ours?", so the answer must be
 * O(1), lock-free and safe from any thread (and from a signal handler): a
 * two-level array indexed by the descriptor number, whose second-level chunks
 * are mmap()ed on first use and never freed.  Descriptors beyond
 * SMCR_FD_MAX are simply not tracked (their calls pass straight through).
 */
#ifndef SMCR_FDTABLE_H
#define SMCR_FDTABLE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

enum smcr_fd_state {
	SMCR_FD_UNKNOWN = 0,    /* never seen, or closed: classified on demand */
	SMCR_FD_OTHER,          /* not a TCP socket: every call passes through */
	SMCR_FD_TCP,            /* a TCP socket, neither connecting nor listening */
	SMCR_FD_TCP_LISTENER,   /* listen() succeeded */
	SMCR_FD_TCP_CONNECTING, /* non-blocking connect() in progress */
	SMCR_FD_TCP_CLIENT,     /* connected by connect() */
	SMCR_FD_TCP_SERVER,     /* returned by accept() */
};

static inline bool smcr_fd_state_is_tcp(enum smcr_fd_state state)
{
	return state >= SMCR_FD_TCP;
}

#define SMCR_FD_CHUNK_BITS 12
#define SMCR_FD_CHUNK_SLOTS (1u << SMCR_FD_CHUNK_BITS)
#define SMCR_FD_CHUNKS 256u
#define SMCR_FD_MAX (SMCR_FD_CHUNKS * SMCR_FD_CHUNK_SLOTS)   /* the kernel's default nr_open */

struct smcr_fd_slot {
	_Atomic uint32_t state;         /* enum smcr_fd_state */
	_Atomic uint32_t reason;        /* enum smcr_reason: why not SMC (connections) */
};

extern _Atomic(struct smcr_fd_slot *) smcr_fd_chunks[SMCR_FD_CHUNKS];

static inline enum smcr_fd_state smcr_fd_get(int fd)
{
	if ((unsigned int)fd >= SMCR_FD_MAX)
		return SMCR_FD_UNKNOWN;
	struct smcr_fd_slot *chunk = atomic_load_explicit(
		&smcr_fd_chunks[(unsigned int)fd >> SMCR_FD_CHUNK_BITS], memory_order_acquire);
	if (!chunk)
		return SMCR_FD_UNKNOWN;
	return atomic_load_explicit(&chunk[fd & (SMCR_FD_CHUNK_SLOTS - 1)].state,
				    memory_order_relaxed);
}

static inline bool smcr_fd_is_tcp(int fd)
{
	return smcr_fd_state_is_tcp(smcr_fd_get(fd));
}

/* Records the state of fd; false if it cannot be tracked (out of range or memory). */
bool smcr_fd_set(int fd, enum smcr_fd_state state);

/* Moves fd from state from to state to; false if it was not in state from. */
bool smcr_fd_claim(int fd, enum smcr_fd_state from, enum smcr_fd_state to);

/* The fallback reason recorded for a connection (0: none, or SMC). */
uint32_t smcr_fd_reason(int fd);
void smcr_fd_set_reason(int fd, uint32_t reason);

/* The descriptor number was closed: forget what it was.  Never allocates. */
void smcr_fd_forget(int fd);

/* Same for every descriptor in [first, last]. */
void smcr_fd_forget_range(unsigned int first, unsigned int last);

/* newfd is now a duplicate of oldfd (dup, dup2, dup3, F_DUPFD): same state and reason. */
void smcr_fd_copy(int oldfd, int newfd);

#endif
