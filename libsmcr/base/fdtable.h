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
#include <stddef.h>
#include <stdint.h>

enum smcr_fd_state {
	SMCR_FD_UNKNOWN = 0,    /* never seen, or closed: classified on demand */
	SMCR_FD_OTHER,          /* not a TCP socket: every call passes through */
	SMCR_FD_OWN,            /* libsmcr's own (sys.h): the application's close,
				   close_range and closefrom leave it open */
	SMCR_FD_TCP,            /* a TCP socket, neither connecting nor listening */
	SMCR_FD_TCP_LISTENER,   /* listen() succeeded */
	SMCR_FD_TCP_CONNECTING, /* non-blocking connect() in progress */
	SMCR_FD_TCP_SETTLING,   /* connected: one thread records the outcome, the
				   others wait for it (shim/handshake.h) */
	SMCR_FD_TCP_CLIENT,     /* connected by connect() */
	SMCR_FD_TCP_SERVER,     /* returned by accept() */
};

struct smcr_sock;
struct smcr_epoll;

/*
 * The table holds references to objects of higher layers (a connection
 * record, an SMC connection, an epoll instance) without knowing them: their
 * owners register at start-up how a reference is taken and dropped, and
 * what must happen before a TCP socket or an epoll instance is forgotten.
 * Until then (unit tests of the table alone) references are only stored.
 */
struct smcr_fd_refs {
	void (*record_hold)(uint32_t id);
	void (*record_drop)(uint32_t id);
	struct smcr_sock *(*sock_get)(struct smcr_sock *sk);
	void (*sock_put)(struct smcr_sock *sk, int fd);
	struct smcr_epoll *(*epoll_get)(struct smcr_epoll *ep);
	void (*epoll_put)(struct smcr_epoll *ep);
	void (*before_forget)(int fd);  /* epoll sets let go of fd */
};

/* refs stays in use for the life of the process. */
void smcr_fd_refs_register(const struct smcr_fd_refs *refs);

static inline bool smcr_fd_state_is_tcp(enum smcr_fd_state state)
{
	return state >= SMCR_FD_TCP;
}

/* Whether a connect() on a socket in state is in progress, or its outcome not yet recorded. */
static inline bool smcr_fd_state_is_connecting(enum smcr_fd_state state)
{
	return state == SMCR_FD_TCP_CONNECTING || state == SMCR_FD_TCP_SETTLING;
}

#define SMCR_FD_CHUNK_BITS 12
#define SMCR_FD_CHUNK_SLOTS (1u << SMCR_FD_CHUNK_BITS)
#define SMCR_FD_CHUNKS 256u
#define SMCR_FD_MAX (SMCR_FD_CHUNKS * SMCR_FD_CHUNK_SLOTS)   /* the kernel's default nr_open */

struct smcr_fd_slot {
	_Atomic uint32_t state;         /* enum smcr_fd_state */
	_Atomic uint32_t reason;        /* enum smcr_reason: why not SMC (connections) */
	_Atomic uint32_t conn;          /* the connection's record (conn_table.h); 0: none */
	_Atomic(struct smcr_sock *) sock;       /* a connection that negotiated SMC (smc_sock.h) */
	_Atomic(struct smcr_sock *) plain;      /* sock, once on TCP for good: smcr_fd_serving */
	_Atomic(struct smcr_epoll *) epoll;     /* an epoll instance (readiness.h) */
	_Atomic(int *) keeper;          /* SMCR_FD_OWN: where its holder keeps the number (sys.h) */
	_Atomic uint32_t rcvbuf;        /* TCP: the SO_RCVBUF the application set (0: none) */
	_Atomic uint32_t sleepers;      /* kept by the number, closes or not: smcr_fd_sleepers */
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

static inline struct smcr_fd_slot *smcr_fd_slot_peek(int fd)
{
	if ((unsigned int)fd >= SMCR_FD_MAX)
		return NULL;
	struct smcr_fd_slot *chunk = atomic_load_explicit(
		&smcr_fd_chunks[(unsigned int)fd >> SMCR_FD_CHUNK_BITS], memory_order_acquire);
	return chunk ? &chunk[fd & (SMCR_FD_CHUNK_SLOTS - 1)] : NULL;
}

/*
 * Whether libsmcr knows nothing of fd (a file, a pipe, a socket never
 * looked at): closing it has nothing here to forget.
 */
static inline bool smcr_fd_holds_nothing(int fd)
{
	struct smcr_fd_slot *slot = smcr_fd_slot_peek(fd);

	return !slot ||
	       (atomic_load_explicit(&slot->state, memory_order_relaxed) == SMCR_FD_UNKNOWN &&
		!atomic_load_explicit(&slot->conn, memory_order_relaxed) &&
		!atomic_load_explicit(&slot->sock, memory_order_relaxed) &&
		!atomic_load_explicit(&slot->epoll, memory_order_relaxed) &&
		!atomic_load_explicit(&slot->rcvbuf, memory_order_relaxed));
}

/* The SMC connection behind fd (NULL: none); the table holds a reference. */
static inline struct smcr_sock *smcr_fd_sock(int fd)
{
	struct smcr_fd_slot *slot = smcr_fd_slot_peek(fd);

	return slot ? atomic_load_explicit(&slot->sock, memory_order_acquire) : NULL;
}

/*
 * The SMC connection that serves the calls on fd: smcr_fd_sock's, unless
 * it went on over TCP for good (smcr_fd_set_plain), when every call is the
 * kernel's.  NULL: none.
 */
static inline struct smcr_sock *smcr_fd_serving(int fd)
{
	struct smcr_fd_slot *slot = smcr_fd_slot_peek(fd);
	struct smcr_sock *sk;

	if (!slot)
		return NULL;
	sk = atomic_load_explicit(&slot->sock, memory_order_acquire);
	return sk == atomic_load_explicit(&slot->plain, memory_order_relaxed) ? NULL : sk;
}

/*
 * The connection sk of fd serves no call from now on: it stays fd's (its
 * close, its hand-over) until fd is closed or given another.
 */
void smcr_fd_set_plain(int fd, struct smcr_sock *sk);

/* The epoll instance fd is, as epoll.c tracks it (NULL: none). */
static inline struct smcr_epoll *smcr_fd_epoll(int fd)
{
	struct smcr_fd_slot *slot = smcr_fd_slot_peek(fd);

	return slot ? atomic_load_explicit(&slot->epoll, memory_order_acquire) : NULL;
}

/* The connection record of fd (conn_table.h); 0: none. */
static inline uint32_t smcr_fd_record(int fd)
{
	struct smcr_fd_slot *slot = smcr_fd_slot_peek(fd);

	return slot ? atomic_load_explicit(&slot->conn, memory_order_relaxed) : 0;
}

/* Gives fd the connection record id (the table takes over a reference). */
bool smcr_fd_set_record(int fd, uint32_t id);

/* Gives fd the connection sk (the table takes over a reference). */
bool smcr_fd_set_sock(int fd, struct smcr_sock *sk);
bool smcr_fd_set_epoll(int fd, struct smcr_epoll *ep);

/* Records the state of fd; false if it cannot be tracked (out of range or memory). */
bool smcr_fd_set(int fd, enum smcr_fd_state state);

/* Moves fd from state from to state to; false if it was not in state from. */
bool smcr_fd_claim(int fd, enum smcr_fd_state from, enum smcr_fd_state to);

/* Records where the holder of fd keeps its number (NULL: nowhere); false if untracked. */
bool smcr_fd_set_keeper(int fd, int *where);

/* Where the holder of fd keeps its number; NULL if nowhere known. */
static inline int *smcr_fd_keeper(int fd)
{
	struct smcr_fd_slot *slot = smcr_fd_slot_peek(fd);

	return slot ? atomic_load_explicit(&slot->keeper, memory_order_relaxed) : NULL;
}

/* Records the fallback reason of a connection (0: none, or SMC). */
void smcr_fd_set_reason(int fd, uint32_t reason);

/*
 * The receive buffer the application asked for on fd (SO_RCVBUF, in bytes,
 * as it passed it; 0: it did not ask), which a connection's RMB follows.
 * An accepted socket takes its listener's, as the kernel's does.
 */
static inline uint32_t smcr_fd_rcvbuf(int fd)
{
	struct smcr_fd_slot *slot = smcr_fd_slot_peek(fd);

	return slot ? atomic_load_explicit(&slot->rcvbuf, memory_order_relaxed) : 0;
}

/* Records SO_RCVBUF bytes asked on fd; false if it cannot be tracked. */
bool smcr_fd_set_rcvbuf(int fd, uint32_t bytes);

/*
 * The parties of this process that may sleep on fd, a wake descriptor of
 * libsmcr's (shim/readiness.h): epoll members armed on it and not looked
 * at since, and poll calls asleep on it.  Each party adds 1 (delta) for
 * as long as it depends on the kernel's word, and takes it off (-1) under
 * the same number, even if that was closed and reused meanwhile: the
 * count stays whole, and a reused number inherits a party for a while,
 * which only costs its new owner a wake-up for nothing.
 * smcr_fd_sleepers_add returns the count before it (0 when fd cannot be
 * tracked), and never takes it below 0.
 */
uint32_t smcr_fd_sleepers_add(int fd, int delta);

static inline uint32_t smcr_fd_sleepers(int fd)
{
	struct smcr_fd_slot *slot = smcr_fd_slot_peek(fd);

	return slot ? atomic_load_explicit(&slot->sleepers, memory_order_seq_cst) : 0;
}

/*
 * The descriptor number was closed: forget what it was, and drop its
 * reference to a connection record, SMC connection or epoll instance
 * (smcr_conn_table_drop, smcr_sock_put, smcr_epoll_put: the connection is
 * closed if it was the last).  Never allocates.  One of libsmcr's own
 * (SMCR_FD_OWN) stays: only smcr_sys_close lets go of it.
 */
void smcr_fd_forget(int fd);

/* Same for every descriptor in [first, last]. */
void smcr_fd_forget_range(unsigned int first, unsigned int last);

/* The lowest descriptor in [first, last] that is in state, or -1. */
int smcr_fd_next_in(unsigned int first, unsigned int last, enum smcr_fd_state state);

/* The lowest descriptor from first on that names a connection (smcr_fd_sock), or -1. */
int smcr_fd_next_sock(unsigned int first);

/* newfd is now a duplicate of oldfd (dup, dup2, dup3, F_DUPFD): same state, reason, record, objects. */
void smcr_fd_copy(int oldfd, int newfd);

#endif
