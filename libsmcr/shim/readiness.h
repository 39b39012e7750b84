/*
 * readiness.h - poll, select and epoll for connections whose bytes travel
 * outside their TCP socket (smc_sock.h).
 *
 * The kernel cannot see an SMC connection's readiness: the bytes are in
 * shared memory, and the TCP socket under it stays idle.  So these calls
 * are answered here: the library looks at each SMC connection itself,
 * spins briefly when the answer may be moments away (spin.h), and sleeps in
 * the kernel on the connection's wake descriptor, which the peer writes
 * when it finds us armed (smc_transport.h).  Connections still in their
 * CLC exchange are driven forward by these calls, and the application sees
 * nothing of them until the exchange has ended.  Descriptors that are not
 * ours pass through to the kernel untouched, in the same call.
 *
 * epoll.c answers epoll, poll.c poll and select; readiness_common.c holds
 * what both use (readiness_priv.h).
 */
#ifndef SMCR_READINESS_H
#define SMCR_READINESS_H

#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/select.h>

struct smcr_epoll;

/* References held by the descriptor table (fdtable.c). */
struct smcr_epoll *smcr_epoll_get(struct smcr_epoll *ep);
void smcr_epoll_put(struct smcr_epoll *ep);

/* fd's connection changed how it must be waited for (smc_sock_view.c). */
void smcr_readiness_changed(int fd);

/* fd is being closed: it leaves every epoll set it is in (fdtable.c). */
void smcr_readiness_forget(int fd);

/* One of libsmcr's descriptors moved from number from to to (base/sys.h): epoll follows. */
void smcr_readiness_fd_moved(int from, int to);

/* In a forked child: epoll looks at every member anew (fork.c). */
void smcr_readiness_forked(void);

/*
 * epfd (or -1) came from epoll_create: known from the start, so that an
 * instance put in another before it has members of ours is seen as one
 * of ours (epoll.c, nested instances).  Returns epfd.
 */
int smcr_epoll_created(int epfd);

/* timeout_ms < 0: for ever.  sigmask: as ppoll, pselect, epoll_pwait (NULL: none). */
int smcr_epoll_ctl(int epfd, int op, int fd, struct epoll_event *event);
int smcr_epoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout_ms,
		    const sigset_t *sigmask);
int smcr_poll(struct pollfd *fds, nfds_t nfds, int timeout_ms, const sigset_t *sigmask);
int smcr_select(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
		int timeout_ms, const sigset_t *sigmask);

/* Whether select's sets hold a descriptor whose readiness is ours to tell. */
bool smcr_select_has_ours(int nfds, const fd_set *r, const fd_set *w, const fd_set *e);

/* A timeout in milliseconds, rounded up; -1 for none. */
int smcr_timespec_ms(const struct timespec *ts);

#endif
