/*
 * sys.h - the descriptors libsmcr makes for itself, in one place, with one
 * contract: each function returns a descriptor or a negative errno, never
 * changes errno (it runs inside the application's calls), and makes its
 * descriptors close-on-exec.
 *
 * libsmcr's own descriptors (smcrd's socket and maps, a connection's
 * wake-up channel) live in the process beside the application's.  They are moved
 * out of the application's way by one rule, smcr_sys_fd_aside: programs
 * that dup2() onto a number they expect free, or pick the lowest free
 * number, keep getting what they would get without libsmcr.  And they are
 * marked as ours in the descriptor table (SMCR_FD_OWN), so that a daemon
 * that closes every descriptor it does not know (closefrom, close_range,
 * a loop of close) leaves them open: libsmcr never finds one closed under
 * it, nor uses a number the application got anew.  Only smcr_sys_close
 * lets go of one.
 */
#ifndef SMCR_SYS_H
#define SMCR_SYS_H

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>
#include <time.h>

/*
 * Moves fd (ours) to the lowest free number at or above half the soft
 * RLIMIT_NOFILE (at most 512 below a limit of 2048), close-on-exec, and
 * marks it ours; returns the new number, or fd unchanged (and marked) if it
 * cannot move (a limit below 64, no free number there), or unchanged if it
 * is no descriptor (negative: an error passes through).
 */
int smcr_sys_fd_aside(int fd);

/* Closes fd (ours, or not yet marked), which is no longer ours. */
void smcr_sys_close(int fd);

/*
 * Kept descriptors.  An application may dup2() onto a number that is ours
 * (it cannot see it: to it the number is free).  So a holder that keeps
 * one of ours for long tells where it keeps the number: before the
 * application's dup2 or dup3 onto it, the descriptor moves to another
 * number and the holder's int follows (stored atomically), and libsmcr
 * never again reads, writes or closes the number the application took.  A
 * call that read the number just before the move may still use it once.
 *
 * smcr_sys_fd_keep: *where holds one of ours (from smcr_sys_fd_aside, or
 * -1: nothing to keep), kept there from now on (a later call elsewhere
 * takes it over).  smcr_sys_close_kept: closes *where's descriptor and
 * sets it to -1; a kept descriptor is closed only so, never by its number,
 * which may have moved.
 */
void smcr_sys_fd_keep(int *where);
void smcr_sys_close_kept(int *where);

/* The number of the descriptor kept at *where, now. */
static inline int smcr_sys_kept(const int *where)
{
	return __atomic_load_n(where, __ATOMIC_ACQUIRE);
}

/*
 * moved(from, to) runs after a kept descriptor moved from number from to
 * number to, while from still names it (before the application's dup):
 * the place for a layer above to move what it registered under from
 * (epoll).  Registered once at start; NULL: nobody.
 */
void smcr_sys_on_fd_moved(void (*moved)(int from, int to));

/*
 * Before the application's dup2 or dup3 onto newfd: if newfd is a kept
 * descriptor of ours, moves it away (above); true if the dup may go on,
 * false (errno EMFILE) if ours could not move, and the dup must fail.  One
 * of ours that nobody keeps is given up to the application.
 */
bool smcr_sys_fd_before_dup(int newfd);

/* Around fork: the kept descriptors' lock, so that a child finds it free. */
void smcr_sys_fork_prepare(void);
void smcr_sys_fork_done(void);

/*
 * The calling process owns this memory from now on: at start, and in a
 * fork's child.  A vfork child runs in its parent's memory until it execs
 * or exits, with a copy of its descriptor table: it must not change what
 * libsmcr knows of the parent's descriptors (Python's subprocess dup2s and
 * closes there before its exec).
 */
void smcr_sys_own_memory(void);

/* Whether the caller runs in memory another process owns (a vfork child). */
bool smcr_sys_borrowed_memory(void);

/*
 * Whether descriptor fd stays open across an exec (not close-on-exec),
 * asked only where the process's seccomp filter allows it: false if not.
 */
bool smcr_sys_survives_exec(int fd);

/*
 * The application's close_range and closefrom: every descriptor in the
 * range but libsmcr's own.  As the C library's (close_range: 0 or -1 and
 * errno; closefrom: nothing).
 */
int smcr_sys_close_range(unsigned int first, unsigned int last, int flags);
void smcr_sys_closefrom(int lowfd);

/* A new memfd of bytes, close-on-exec, sealed so that its size can never change. */
int smcr_sys_memfd_sealed(uint64_t bytes);

/*
 * The futex system call on word (FUTEX_WAIT, FUTEX_WAKE and their _PRIVATE
 * forms), past the application's interposed syscall(): as syscall()
 * returns, errno set on failure.
 */
long smcr_sys_futex(_Atomic uint32_t *word, int op, uint32_t val, const struct timespec *timeout);

/* A new eventfd, non-blocking and close-on-exec: for wake-ups within this process. */
int smcr_sys_eventfd(void);

/*
 * Wake-up channels, for wake-ups that another process sends: rx becomes
 * readable when anyone writes tx.  Its owner keeps rx and
 * hands tx to the peer; another process's descriptors share their file
 * flags with ours, so a peer may make them blocking, and these calls never
 * depend on those flags: a channel is a connected pair of unix stream
 * sockets (an eventfd or a pipe could be made to block the writer, and a
 * pipe to raise SIGPIPE in it; a datagram socket could be disconnected by
 * the peer under the owner's own wake-ups).
 *
 * smcr_sys_wake_channel: a new channel, close-on-exec, into *ch; 0 or a
 * negative errno.  smcr_sys_wake_send: makes tx's rx readable; it never
 * blocks nor raises SIGPIPE, and a full channel is as readable as any.
 * smcr_sys_wake_drain: reads rx empty, or a bounded part of what a peer
 * flooding it sent (it stays readable: a spurious wake-up); false if a
 * writer shut the channel, which will never again be empty: whoever holds
 * tx broke it on purpose.  smcr_sys_wake_thin: the same, but leaves rx
 * readable (one byte), for when another sleeper may hold it: the kernel
 * tells an epoll instance of an edge, or wakes a poll, only if it finds
 * the descriptor readable when that sleeper runs, so a drain in between
 * would lose the other's wake-up.  Where the sandbox allows no MSG_PEEK,
 * it drains and writes tx (the owner's own end) again, and the other
 * sleeper may lose that wake-up after all.  In a process whose seccomp
 * filter forbids the socket calls (a sandbox that allows read and write
 * only), these fall back to write and read, and a hostile peer can then
 * block them.
 */
struct smcr_wake_channel {
	int rx, tx;
};

/*
 * recvmsg and sendmsg of iov on fd, a connected stream socket, for the
 * application's calls that libsmcr hands to the kernel's socket: without
 * flags, where the process's seccomp filter forbids those calls (a
 * sandbox that allows read and write only), read and write (readv and
 * writev for more than one buffer), which are the same there.  As the calls: the count, or -1 and errno.
 */
ssize_t smcr_sys_stream_recv(int fd, const struct iovec *iov, int iovcnt, int flags);
ssize_t smcr_sys_stream_send(int fd, const struct iovec *iov, int iovcnt, int flags);

/* No channel: for a transport whose wake-ups are its own. */
#define SMCR_NO_WAKE_CHANNEL ((struct smcr_wake_channel){ .rx = -1, .tx = -1 })

int smcr_sys_wake_channel(struct smcr_wake_channel *ch);
void smcr_sys_wake_send(int tx);
bool smcr_sys_wake_drain(int rx);
bool smcr_sys_wake_thin(int rx, int tx);

/*
 * ppoll() for the waits libsmcr makes, its own and those it makes for the
 * application, which must work in whatever process the application made of
 * itself: one that lowered RLIMIT_NOFILE below the number of descriptors
 * waited on (sandboxes set it to 0 or 1) gets EINVAL from ppoll(), so then
 * the wait is made with pselect(), which that limit does not bound.  As
 * ppoll(): the count of ready entries, 0 at the timeout, or -1 and errno
 * (EINTR included).  events: POLLIN, POLLOUT, POLLPRI and POLLRDHUP; a
 * select() wait tells POLLRDHUP by a peek that reads the end.
 */
int smcr_sys_ppoll(struct pollfd *fds, nfds_t nfds, const struct timespec *timeout,
		   const sigset_t *sigmask);

/* smcr_sys_ppoll() with a timeout in milliseconds (-1: none) and no mask. */
int smcr_sys_poll(struct pollfd *fds, nfds_t nfds, int timeout_ms);

/* Nanoseconds on CLOCK_MONOTONIC, on which every deadline, timeout and spin is measured. */
static inline uint64_t smc_clock_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Milliseconds on the same clock. */
static inline uint64_t smc_clock_ms(void)
{
	return smc_clock_ns() / 1000000u;
}

/* The deadline of a wait of ms from now (0: none, for ms <= 0). */
static inline uint64_t smc_deadline_after(int ms)
{
	return ms > 0 ? smc_clock_ns() + (uint64_t)ms * 1000000u : 0;
}

/*
 * Milliseconds from now until deadline (smc_clock_ns), rounded up, since a
 * wait that ends early only costs another turn: 0 once it passed.
 */
static inline int smc_ms_until(uint64_t deadline)
{
	uint64_t now = smc_clock_ns(), ms = deadline > now ? (deadline - now + 999999) / 1000000 : 0;

	return ms < INT32_MAX ? (int)ms : INT32_MAX;
}

/*
 * Waits until socket fd reports one of events or deadline (smc_clock_ns)
 * passes: 0 (a signal too: the caller looks again), -ETIMEDOUT, or a
 * negative errno.  errno unchanged.
 */
int smcr_sys_wait_fd(int fd, short events, uint64_t deadline);

/*
 * smcr_sys_poll() until deadline (smc_clock_ns; 0: just look), polling
 * again after a signal: the count of ready entries, 0 once the deadline
 * passed, or -1 and errno (never EINTR).
 */
int smcr_sys_poll_until(struct pollfd *fds, nfds_t nfds, uint64_t deadline);

/*
 * Takes m if it comes free within ms, trying every millisecond; false if
 * not.  For a caller that may have interrupted m's holder (a signal
 * handler's _exit): a plain lock would wait for ever.
 */
bool smcr_sys_trylock_for(pthread_mutex_t *m, int ms);

/*
 * Writes all len bytes of buf on socket fd by deadline (smc_clock_ns),
 * never blocking in send and never raising SIGPIPE: 0, or a negative
 * errno (-ETIMEDOUT: not all went by then).  errno unchanged.
 */
int smcr_sys_send_all(int fd, const void *buf, size_t len, uint64_t deadline);

/*
 * Resets the TCP connection of socket fd: the peer reads ECONNRESET, and
 * nothing more of the stream reaches this end (connect with AF_UNSPEC).
 * errno unchanged.
 */
void smcr_sys_reset(int fd);

/*
 * Whether the kernel would restart a socket call that a signal handler
 * interrupted: without a timeout on the socket, when the handler asked for
 * SA_RESTART.  Which signal came is not known here, so it restarts only if
 * every signal with a handler asks for it (an EINTR in doubt is what a
 * program that installs such a handler expects to handle).
 */
bool smcr_sys_restarts(int timeout_ms);

#endif
