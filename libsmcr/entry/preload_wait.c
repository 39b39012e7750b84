/*
 * preload_wait.c - interposed readiness calls: poll, select and epoll, with
 * their glibc fortified forms.
 *
 * Calls that involve no connection on SMC (or on its way there) are the C
 * library's own; the others are answered by epoll.c and poll.c
 * (readiness.h), which know where those connections' bytes are.
 */
#include <poll.h>
#include <sys/epoll.h>
#include <sys/select.h>

#include <errno.h>

#include "fdtable.h"
#include "readiness.h"
#include "real.h"
#include "smc_transport.h"

void __chk_fail(void) __attribute__((noreturn));

int poll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	return smcr_poll(fds, nfds, timeout, NULL);
}

int __poll_chk(struct pollfd *fds, nfds_t nfds, int timeout, size_t fdslen)
{
	if (fdslen / sizeof(*fds) < nfds)
		__chk_fail();
	return smcr_poll(fds, nfds, timeout, NULL);
}

int ppoll(struct pollfd *fds, nfds_t nfds, const struct timespec *timeout,
	  const sigset_t *sigmask)
{
	return smcr_poll(fds, nfds, smcr_timespec_ms(timeout), sigmask);
}

int __ppoll_chk(struct pollfd *fds, nfds_t nfds, const struct timespec *timeout,
		const sigset_t *sigmask, size_t fdslen)
{
	if (fdslen / sizeof(*fds) < nfds)
		__chk_fail();
	return smcr_poll(fds, nfds, smcr_timespec_ms(timeout), sigmask);
}

int select(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
	   struct timeval *timeout)
{
	if (!smcr_select_has_ours(nfds, readfds, writefds, exceptfds))
		return REAL(select)(nfds, readfds, writefds, exceptfds, timeout);
	if (timeout && (timeout->tv_sec < 0 || timeout->tv_usec < 0)) {
		errno = EINVAL;
		return -1;
	}
	struct timespec ts, *tsp = NULL;
	uint64_t start = smc_clock_ns();
	if (timeout) {
		ts = (struct timespec){ timeout->tv_sec, timeout->tv_usec * 1000 };
		tsp = &ts;
	}
	int rc = smcr_select(nfds, readfds, writefds, exceptfds, smcr_timespec_ms(tsp), NULL);
	if (timeout) {          /* as Linux: the timeout keeps what was not slept */
		uint64_t total = (uint64_t)timeout->tv_sec * 1000000u + (uint64_t)timeout->tv_usec;
		uint64_t spent = (smc_clock_ns() - start) / 1000u;
		uint64_t left = spent < total ? total - spent : 0;
		*timeout = (struct timeval){ (time_t)(left / 1000000u), (suseconds_t)(left % 1000000u) };
	}
	return rc;
}

int pselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
	    const struct timespec *timeout, const sigset_t *sigmask)
{
	if (!smcr_select_has_ours(nfds, readfds, writefds, exceptfds))
		return REAL(pselect)(nfds, readfds, writefds, exceptfds, timeout, sigmask);
	return smcr_select(nfds, readfds, writefds, exceptfds, smcr_timespec_ms(timeout),
			   sigmask);
}

int epoll_create(int size)
{
	return smcr_epoll_created(REAL(epoll_create)(size));
}

int epoll_create1(int flags)
{
	return smcr_epoll_created(REAL(epoll_create1)(flags));
}

int epoll_ctl(int epfd, int op, int fd, struct epoll_event *event)
{
	return smcr_epoll_ctl(epfd, op, fd, event);
}

int epoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout)
{
	return smcr_epoll_wait(epfd, events, maxevents, timeout, NULL);
}

int epoll_pwait(int epfd, struct epoll_event *events, int maxevents, int timeout,
		const sigset_t *sigmask)
{
	return smcr_epoll_wait(epfd, events, maxevents, timeout, sigmask);
}

int epoll_pwait2(int epfd, struct epoll_event *events, int maxevents,
		 const struct timespec *timeout, const sigset_t *sigmask)
{
	if (!smcr_fd_epoll(epfd))
		return REAL(epoll_pwait2)(epfd, events, maxevents, timeout, sigmask);
	return smcr_epoll_wait(epfd, events, maxevents, smcr_timespec_ms(timeout), sigmask);
}
