/*
 * sys.c - the descriptors libsmcr makes for itself (sys.h): sealed memfds,
 * eventfds, the rule that moves them out of the application's way, the
 * application's range closes, which leave them open, its dups onto them,
 * which move them, the one poll() libsmcr waits on them with, and its
 * futex calls.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fdtable.h"
#include "filter.h"
#include "real.h"
#include "sys.h"

static int mark_own(int fd)
{
	if (smcr_fd_set(fd, SMCR_FD_OWN))
		smcr_fd_set_keeper(fd, NULL);   /* kept only once a holder says where */
	return fd;
}

/* A copy of fd, close-on-exec, at or above half the soft RLIMIT_NOFILE; -1 if none. */
static int copy_aside(int fd)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur < 64)
		return -1;
	rlim_t half = rl.rlim_cur / 2;
	int floor = (int)(rl.rlim_cur > 2048 ? half : (half < 512 ? half : 512));

	return REAL(fcntl)(fd, F_DUPFD_CLOEXEC, floor);
}

/*
 * A copy of fd, close-on-exec, just above the soft RLIMIT_NOFILE, where the
 * application can neither dup2 nor get a number: the limit is raised for
 * the copy (with prlimit: setrlimit is interposed) and put back.
 * -1 if the hard limit leaves no room.
 */
static int copy_beyond_limit(int fd)
{
	struct rlimit rl, raised;
	int high;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_max <= rl.rlim_cur ||
	    rl.rlim_cur > INT_MAX - 64)
		return -1;
	raised = rl;
	raised.rlim_cur = rl.rlim_max - rl.rlim_cur > 64 ? rl.rlim_cur + 64 : rl.rlim_max;
	if (prlimit(0, RLIMIT_NOFILE, &raised, NULL) != 0)
		return -1;
	high = REAL(fcntl)(fd, F_DUPFD_CLOEXEC, (int)rl.rlim_cur);
	prlimit(0, RLIMIT_NOFILE, &rl, NULL);
	return high;
}

int smcr_sys_fd_aside(int fd)
{
	int saved_errno = errno;
	int high;

	if (fd < 0)
		return fd;
	high = copy_aside(fd);
	if (high >= 0) {
		REAL(close)(fd);
		fd = high;
	}
	errno = saved_errno;
	return mark_own(fd);
}

/* Held while a kept descriptor moves or closes: the holder's int stays valid meanwhile. */
static pthread_mutex_t keepers_lock = PTHREAD_MUTEX_INITIALIZER;

void smcr_sys_fd_keep(int *where)
{
	pthread_mutex_lock(&keepers_lock);
	int fd = __atomic_load_n(where, __ATOMIC_RELAXED);

	if (fd >= 0 && smcr_fd_get(fd) == SMCR_FD_OWN)
		smcr_fd_set_keeper(fd, where);
	pthread_mutex_unlock(&keepers_lock);
}

void smcr_sys_close_kept(int *where)
{
	pthread_mutex_lock(&keepers_lock);
	int fd = __atomic_load_n(where, __ATOMIC_RELAXED);

	if (fd >= 0 && smcr_fd_keeper(fd) == where)
		smcr_fd_set_keeper(fd, NULL);
	smcr_sys_close(fd);
	__atomic_store_n(where, -1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&keepers_lock);
}

static void moved_nowhere(int from, int to)
{
	(void)from;
	(void)to;
}

static void (*_Atomic on_moved)(int from, int to) = moved_nowhere;

void smcr_sys_on_fd_moved(void (*moved)(int from, int to))
{
	atomic_store_explicit(&on_moved, moved ? moved : moved_nowhere, memory_order_release);
}

bool smcr_sys_fd_before_dup(int newfd)
{
	int saved_errno = errno, *where, moved = -1;
	bool ok = true;

	if (smcr_fd_get(newfd) != SMCR_FD_OWN)
		return true;
	pthread_mutex_lock(&keepers_lock);
	where = smcr_fd_keeper(newfd);
	if (where && __atomic_load_n(where, __ATOMIC_RELAXED) == newfd) {
		moved = copy_aside(newfd);
		if (moved < 0)
			moved = copy_beyond_limit(newfd);       /* the application took all below */
		if (moved < 0 || !smcr_fd_set(moved, SMCR_FD_OWN) ||
		    !smcr_fd_set_keeper(moved, where)) {
			if (moved >= 0)
				REAL(close)(moved);
			saved_errno = EMFILE;
			ok = false;
		} else {
			__atomic_store_n(where, moved, __ATOMIC_RELEASE);
		}
	}
	if (ok) {
		smcr_fd_set_keeper(newfd, NULL);
		smcr_fd_claim(newfd, SMCR_FD_OWN, SMCR_FD_UNKNOWN);
	}
	pthread_mutex_unlock(&keepers_lock);
	/* unlocked: the layers above close kept descriptors under their own locks */
	if (ok && moved >= 0)
		atomic_load_explicit(&on_moved, memory_order_acquire)(newfd, moved);
	errno = saved_errno;
	return ok;
}

void smcr_sys_fork_prepare(void)
{
	pthread_mutex_lock(&keepers_lock);
}

void smcr_sys_fork_done(void)
{
	pthread_mutex_unlock(&keepers_lock);
}

static _Atomic pid_t memory_owner;

void smcr_sys_own_memory(void)
{
	atomic_store(&memory_owner, getpid());
}

bool smcr_sys_borrowed_memory(void)
{
	return getpid() != atomic_load(&memory_owner);
}

bool smcr_sys_survives_exec(int fd)
{
	const uint64_t args[6] = { (uint64_t)fd, F_GETFD };
	int flags;

	if (!smcr_filter_permits(SYS_fcntl, args))
		return false;
	flags = REAL(fcntl)(fd, F_GETFD);
	return flags >= 0 && !(flags & FD_CLOEXEC);
}

void smcr_sys_close(int fd)
{
	int saved_errno = errno;

	if (fd < 0)
		return;
	smcr_fd_claim(fd, SMCR_FD_OWN, SMCR_FD_UNKNOWN);
	smcr_fd_set_keeper(fd, NULL);
	REAL(close)(fd);
	errno = saved_errno;
}

/*
 * close_range over [first, last] in pieces around our own descriptors;
 * from the last piece on, tail(from) (NULL: close_range up to last).
 */
static int close_around_own(unsigned int first, unsigned int last, int flags,
			    void (*tail)(int from))
{
	int own, rc = 0;

	while ((own = smcr_fd_next_in(first, last, SMCR_FD_OWN)) >= 0) {
		if ((unsigned int)own > first && REAL(close_range)(first, (unsigned int)own - 1, flags))
			rc = -1;
		if ((unsigned int)own == last)
			return rc;
		first = (unsigned int)own + 1;
	}
	if (tail) {
		tail((int)first);
		return rc;
	}
	return REAL(close_range)(first, last, flags) ? -1 : rc;
}

int smcr_sys_close_range(unsigned int first, unsigned int last, int flags)
{
	if (first > last)
		return REAL(close_range)(first, last, flags);   /* the kernel's EINVAL */
	return close_around_own(first, last, flags, NULL);
}

static void closefrom_tail(int from)
{
	REAL(closefrom)(from);
}

void smcr_sys_closefrom(int lowfd)
{
	int saved_errno = errno;

	if (lowfd >= 0)
		close_around_own((unsigned int)lowfd, ~0u, 0, closefrom_tail);
	errno = saved_errno;
}

int smcr_sys_memfd_sealed(uint64_t bytes)
{
	int saved_errno = errno;
	int fd = memfd_create("smcr-rmb", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd >= 0 && (ftruncate(fd, (off_t)bytes) ||
			REAL(fcntl)(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL))) {
		REAL(close)(fd);
		fd = -1;
	}
	if (fd < 0)
		fd = -errno;
	errno = saved_errno;
	return fd;
}

long smcr_sys_futex(_Atomic uint32_t *word, int op, uint32_t val, const struct timespec *timeout)
{
	return REAL(syscall)(SYS_futex, word, op, val, timeout, NULL, 0);
}

int smcr_sys_eventfd(void)
{
	int saved_errno = errno;
	int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);

	if (fd < 0)
		fd = -errno;
	errno = saved_errno;
	return fd;
}

int smcr_sys_wake_channel(struct smcr_wake_channel *ch)
{
	int saved_errno = errno, fds[2];
	int rc = socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) ? -errno : 0;

	/* one way: nothing the owner does on rx can reach whoever holds tx */
	if (!rc)
		REAL(shutdown)(fds[0], SHUT_WR);
	*ch = rc ? SMCR_NO_WAKE_CHANNEL : (struct smcr_wake_channel){ .rx = fds[0], .tx = fds[1] };
	errno = saved_errno;
	return rc;
}

/*
 * Whether the process's seccomp filter (filter.h) lets the channel's calls
 * ask not to block: a sandbox that allows only read and write gets them,
 * and then a peer that made the channel blocking and filled it can stall
 * its wake-ups (the sandbox took the safer calls away, not we).
 */
static bool socket_calls_allowed(long nr, int flags)
{
	return smcr_filter_permits(nr, (const uint64_t[6]){ 0, 0, 0, (uint64_t)flags });
}

/* Whether the filter lets recvmsg or sendmsg (nr) without flags be made on fd. */
static bool msg_call_allowed(long nr, int fd)
{
	return smcr_filter_permits(nr, (const uint64_t[6]){ (uint64_t)fd });
}

ssize_t smcr_sys_stream_recv(int fd, const struct iovec *iov, int iovcnt, int flags)
{
	struct msghdr mh = { .msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)iovcnt };

	if (!flags && !msg_call_allowed(SYS_recvmsg, fd))
		return iovcnt == 1 ? REAL(read)(fd, iov->iov_base, iov->iov_len)
				   : REAL(readv)(fd, iov, iovcnt);
	return REAL(recvmsg)(fd, &mh, flags);
}

ssize_t smcr_sys_stream_send(int fd, const struct iovec *iov, int iovcnt, int flags)
{
	struct msghdr mh = { .msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)iovcnt };

	if (!flags && !msg_call_allowed(SYS_sendmsg, fd))
		return iovcnt == 1 ? REAL(write)(fd, iov->iov_base, iov->iov_len)
				   : REAL(writev)(fd, iov, iovcnt);
	return REAL(sendmsg)(fd, &mh, flags);
}

void smcr_sys_wake_send(int tx)
{
	static const char byte = 1;
	const int flags = MSG_DONTWAIT | MSG_NOSIGNAL;
	int saved_errno = errno;

	if (socket_calls_allowed(SYS_sendto, flags))
		REAL(send)(tx, &byte, 1, flags);
	else
		REAL(write)(tx, &byte, 1);
	errno = saved_errno;
}

/* One read of rx into buf, as socket_calls_allowed lets it be made. */
static ssize_t wake_read(int rx, char *buf, size_t size)
{
	if (socket_calls_allowed(SYS_recvfrom, MSG_DONTWAIT))
		return REAL(recv)(rx, buf, size, MSG_DONTWAIT);
	return REAL(read)(rx, buf, size);
}

/* What one drain reads at most: a peer's flood takes more than one. */
#define WAKE_DRAIN_BYTES 4096

bool smcr_sys_wake_drain(int rx)
{
	char buf[256];
	int saved_errno = errno;
	ssize_t n = 0;

	for (size_t got = 0; got < WAKE_DRAIN_BYTES; got += (size_t)n) {
		n = wake_read(rx, buf, sizeof(buf));
		if (n < (ssize_t)sizeof(buf))
			break;
	}
	errno = saved_errno;
	return n != 0;
}

bool smcr_sys_wake_thin(int rx, int tx)
{
	const int peek = MSG_DONTWAIT | MSG_PEEK;
	char buf[256];
	int saved_errno = errno;
	ssize_t n;

	if (!socket_calls_allowed(SYS_recvfrom, peek)) {
		bool open = smcr_sys_wake_drain(rx);

		if (open)
			smcr_sys_wake_send(tx);
		return open;
	}
	n = REAL(recv)(rx, buf, sizeof(buf), peek);
	if (n > 1)
		REAL(recv)(rx, buf, (size_t)n - 1, MSG_DONTWAIT);
	errno = saved_errno;
	return n != 0;
}

#define WORD_BITS (8 * sizeof(unsigned long))

/* select()'s three sets, each words long: as many descriptors as the waits name. */
struct wide_sets {
	size_t words;
	unsigned long *in, *out, *pri;
};

static void set_bit(unsigned long *set, int fd)
{
	set[fd / WORD_BITS] |= 1UL << (fd % WORD_BITS);
}

static bool bit_set(const unsigned long *set, int fd)
{
	return set[fd / WORD_BITS] & (1UL << (fd % WORD_BITS));
}

/* A readable socket's end, as poll() tells it: read (RDHUP), or failed (ERR). */
static short peek_end(int fd)
{
	char byte;
	ssize_t n = REAL(recv)(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);

	if (n == 0)
		return POLLRDHUP;
	return n < 0 && errno != EAGAIN && errno != ENOTSOCK ? POLLERR : 0;
}

/* What select() found for p, as poll() would say it. */
static short select_revents(const struct wide_sets *got, const struct pollfd *p)
{
	short revents = 0;

	if (p->fd < 0)
		return 0;
	if (bit_set(got->in, p->fd)) {
		revents |= (short)(p->events & POLLIN);
		if (p->events & POLLRDHUP)
			revents |= peek_end(p->fd);
	}
	if (bit_set(got->out, p->fd))
		revents |= (short)(p->events & POLLOUT);
	if (bit_set(got->pri, p->fd))
		revents |= (short)(p->events & POLLPRI);
	return revents;
}

/* ppoll() by pselect(), for a process whose RLIMIT_NOFILE is below nfds. */
static int poll_by_select(struct pollfd *fds, nfds_t nfds, const struct timespec *timeout,
			  const sigset_t *sigmask)
{
	struct wide_sets sets;
	unsigned long *room;
	int top = -1, rc, ready = 0;

	for (nfds_t i = 0; i < nfds; i++)
		top = fds[i].fd > top ? fds[i].fd : top;
	sets.words = (size_t)top / WORD_BITS + 1;
	room = calloc(3 * sets.words, sizeof(*room));
	if (!room)
		return -1;
	sets.in = room;
	sets.out = room + sets.words;
	sets.pri = room + 2 * sets.words;
	for (nfds_t i = 0; i < nfds; i++) {
		if (fds[i].fd < 0)
			continue;
		if (fds[i].events & (POLLIN | POLLRDHUP))
			set_bit(sets.in, fds[i].fd);
		if (fds[i].events & POLLOUT)
			set_bit(sets.out, fds[i].fd);
		if (fds[i].events & POLLPRI)
			set_bit(sets.pri, fds[i].fd);
	}
	rc = REAL(pselect)(top + 1, (fd_set *)sets.in, (fd_set *)sets.out, (fd_set *)sets.pri,
			   timeout, sigmask);
	int saved_errno = errno;        /* pselect's, for a failure; the peeks' are not */

	for (nfds_t i = 0; i < nfds; i++) {
		fds[i].revents = rc > 0 ? select_revents(&sets, &fds[i]) : 0;
		ready += fds[i].revents != 0;
	}
	free(room);
	errno = saved_errno;
	return rc < 0 ? rc : ready;
}

/*
 * Not getrlimit() to tell the limit's EINVAL from another: a sandbox's
 * filter may forbid it, and a select() wait is right for any of them (a
 * bad timeout or mask fails there too).
 */
int smcr_sys_ppoll(struct pollfd *fds, nfds_t nfds, const struct timespec *timeout,
		   const sigset_t *sigmask)
{
	int saved_errno = errno, rc = REAL(ppoll)(fds, nfds, timeout, sigmask);

	if (rc < 0 && errno == EINVAL && nfds > 0) {
		errno = saved_errno;
		return poll_by_select(fds, nfds, timeout, sigmask);
	}
	return rc;
}

int smcr_sys_poll(struct pollfd *fds, nfds_t nfds, int timeout_ms)
{
	struct timespec ts = { timeout_ms / 1000, timeout_ms % 1000 * 1000000L };

	return smcr_sys_ppoll(fds, nfds, timeout_ms < 0 ? NULL : &ts, NULL);
}

int smcr_sys_wait_fd(int fd, short events, uint64_t deadline)
{
	struct pollfd p = { .fd = fd, .events = events };
	int saved_errno = errno, ms = smc_ms_until(deadline), rc = 0;

	if (ms == 0)
		rc = -ETIMEDOUT;
	else if (smcr_sys_poll(&p, 1, ms) < 0 && errno != EINTR)
		rc = -errno;
	errno = saved_errno;
	return rc;
}

int smcr_sys_poll_until(struct pollfd *fds, nfds_t nfds, uint64_t deadline)
{
	int n;

	while ((n = smcr_sys_poll(fds, nfds, smc_ms_until(deadline))) < 0 && errno == EINTR)
		;
	return n;
}

bool smcr_sys_trylock_for(pthread_mutex_t *m, int ms)
{
	uint64_t end = smc_deadline_after(ms);

	while (pthread_mutex_trylock(m)) {
		if (smc_clock_ns() > end)
			return false;
		usleep(1000);
	}
	return true;
}

void smcr_sys_reset(int fd)
{
	struct sockaddr unspec = { .sa_family = AF_UNSPEC };
	int saved_errno = errno;

	REAL(connect)(fd, &unspec, sizeof(unspec));
	errno = saved_errno;
}

int smcr_sys_send_all(int fd, const void *buf, size_t len, uint64_t deadline)
{
	const uint8_t *rest = buf;
	int saved_errno = errno, rc = 0;

	while (len > 0 && rc == 0) {
		ssize_t n = REAL(send)(fd, rest, len, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n > 0) {
			rest += n;
			len -= (size_t)n;
		} else if (n < 0 && errno != EAGAIN && errno != EINTR) {
			rc = -errno;
		} else {
			rc = smcr_sys_wait_fd(fd, POLLOUT, deadline);
		}
	}
	errno = saved_errno;
	return rc;
}

bool smcr_sys_restarts(int timeout_ms)
{
	if (timeout_ms > 0)
		return false;
	for (int sig = 1; sig < NSIG; sig++) {
		struct sigaction sa;

		/* a fault comes from the thread's own instruction, never into a wait */
		if (sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL ||
		    sig == SIGTRAP || sig == SIGSYS)
			continue;
		if (sigaction(sig, NULL, &sa) != 0 || sa.sa_handler == SIG_DFL ||
		    sa.sa_handler == SIG_IGN)
			continue;
		if (!(sa.sa_flags & SA_RESTART))
			return false;
	}
	return true;
}
