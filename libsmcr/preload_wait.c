/*
 * preload_wait.c - interposed readiness calls: poll, select and epoll, with
 * their glibc fortified forms.
 *
 * While every connection is a plain kernel TCP socket the kernel knows all
 * readiness, so each call is the C library's own.  These are the entry points
 * where connections whose bytes travel outside the socket will be made ready.
 */
#include <poll.h>
#include <sys/epoll.h>
#include <sys/select.h>

#include "real.h"

int poll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	return REAL(poll)(fds, nfds, timeout);
}

int __poll_chk(struct pollfd *fds, nfds_t nfds, int timeout, size_t fdslen)
{
	return REAL(__poll_chk)(fds, nfds, timeout, fdslen);
}

int ppoll(struct pollfd *fds, nfds_t nfds, const struct timespec *timeout,
	  const sigset_t *sigmask)
{
	return REAL(ppoll)(fds, nfds, timeout, sigmask);
}

int __ppoll_chk(struct pollfd *fds, nfds_t nfds, const struct timespec *timeout,
		const sigset_t *sigmask, size_t fdslen)
{
	return REAL(__ppoll_chk)(fds, nfds, timeout, sigmask, fdslen);
}

int select(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
	   struct timeval *timeout)
{
	return REAL(select)(nfds, readfds, writefds, exceptfds, timeout);
}

int pselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
	    const struct timespec *timeout, const sigset_t *sigmask)
{
	return REAL(pselect)(nfds, readfds, writefds, exceptfds, timeout, sigmask);
}

int epoll_create(int size)
{
	return REAL(epoll_create)(size);
}

int epoll_create1(int flags)
{
	return REAL(epoll_create1)(flags);
}

int epoll_ctl(int epfd, int op, int fd, struct epoll_event *event)
{
	return REAL(epoll_ctl)(epfd, op, fd, event);
}

int epoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout)
{
	return REAL(epoll_wait)(epfd, events, maxevents, timeout);
}

int epoll_pwait(int epfd, struct epoll_event *events, int maxevents, int timeout,
		const sigset_t *sigmask)
{
	return REAL(epoll_pwait)(epfd, events, maxevents, timeout, sigmask);
}

int epoll_pwait2(int epfd, struct epoll_event *events, int maxevents,
		 const struct timespec *timeout, const sigset_t *sigmask)
{
	return REAL(epoll_pwait2)(epfd, events, maxevents, timeout, sigmask);
}
