/*
 * poll.c - poll and select over SMC connections (readiness.h).
 *
 * poll and select keep nothing between calls: each call looks at the SMC
 * connections among its descriptors, and sleeps on their wake and TCP
 * descriptors in their place.  As in epoll.c, the arm comes after the
 * look, with the events() number taken before it, so news in between
 * fails the arm and no wakeup is lost.  A wake descriptor another sleeper
 * of this process holds too is left readable for it (wake_entry), and
 * then looked at every millisecond rather than slept on.  A connection
 * still connecting or in its CLC exchange is driven on when its TCP
 * socket has news; an epoll instance with members of ours is ready when
 * its own epoll_wait would report something, which epoll.c tells (its
 * opening comment, nested instances).  select is poll over the
 * descriptors in its sets.
 *
 * A server in its CLC exchange asked for POLLOUT waits for the client's
 * Proposal until a deadline (smcr_sock_want_send, started by the asking),
 * at which the exchange declines and the connection is writable on TCP.
 * No news marks that moment, so no sleep here outlasts it: each look
 * starts or reads the deadline of every such descriptor before it sleeps,
 * and sleeps no longer than the nearest (drive_due); the look after it
 * drives the exchange to its Decline.  A deadline, once set, only comes
 * nearer as time passes and is never moved, so one read before the sleep
 * bounds it: no wakeup is lost.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "fdtable.h"
#include "readiness.h"
#include "readiness_priv.h"
#include "real.h"
#include "sys.h"
#include "smc_sock.h"
#include "smc_transport.h"
#include "spin.h"

/*
 * W_RESET: a connection whose CLC exchange reset it, ready for every call
 * at once; it may have no transport left to sleep on.  Also one that left
 * SMC while its reads are still ours (smcr_sock_left_reads_ours): its TCP
 * socket is slept on, since the peer's reply comes there, and
 * smcr_sock_poll tells what is readable once the reply is taken (bytes of
 * the peer's in our RMB, at once).
 */
enum watch { W_PLAIN, W_DRIVE, W_SMC, W_RESET, W_NESTED };

static enum watch watch_of(int fd)
{
	enum regime r = smcr_regime_of(fd);

	if (r == REG_SMC)
		return W_SMC;
	if (r == REG_RESET)
		return W_RESET;
	if (r == REG_NESTED)
		return smcr_epoll_has_members(fd) ? W_NESTED : W_PLAIN;
	/* a TCP socket that is not connecting is the kernel's to tell */
	if (r == REG_WATCH && smcr_fd_get(fd) != SMCR_FD_TCP)
		return W_DRIVE;
	return W_PLAIN;
}

static bool any_ours(const struct pollfd *fds, nfds_t nfds)
{
	for (nfds_t i = 0; i < nfds; i++)
		if (fds[i].fd >= 0 &&
		    (smcr_fd_serving(fds[i].fd) || smcr_epoll_has_members(fds[i].fd) ||
		     smcr_fd_state_is_connecting(smcr_fd_get(fds[i].fd))))
			return true;
	return false;
}

/*
 * The servers among fds in their CLC exchange that ask for POLLOUT: each
 * whose Proposal is overdue is driven to its Decline now; returns the
 * milliseconds until the next is due (-1: none), for the sleep to end by.
 */
static int drive_due(const struct pollfd *fds, nfds_t nfds, const uint8_t *kinds)
{
	int nearest = -1;

	for (nfds_t i = 0; i < nfds; i++) {
		struct smcr_sock *sk;
		int left;

		if (kinds[i] != W_DRIVE || !(fds[i].events & POLLOUT) ||
		    !(sk = smcr_fd_sock(fds[i].fd)) || (left = smcr_sock_want_send(sk)) < 0)
			continue;
		if (left == 0)
			smcr_drive(fds[i].fd);
		else if (nearest < 0 || left < nearest)
			nearest = left;
	}
	return nearest;
}

/*
 * A poll that sleeps counts among the sleepers on each SMC connection's
 * wake descriptor (fdtable.h) until it wakes.  One that finds another
 * sleeper there left the descriptor readable for it (smcr_sock_arm), so
 * it waits for the descriptor's hang-up only, and looks again every
 * SHARED_LOOK_MS: the price of one connection waited for by two parties.
 */
#define SHARED_LOOK_MS 1

static struct pollfd wake_entry(int wake, bool sleeping, int *timeout_ms)
{
	if (!sleeping || smcr_fd_sleepers_add(wake, 1) == 0)
		return (struct pollfd){ .fd = wake, .events = POLLIN };
	if (*timeout_ms < 0 || *timeout_ms > SHARED_LOOK_MS)
		*timeout_ms = SHARED_LOOK_MS;
	return (struct pollfd){ .fd = wake };
}

/* After the sleep: the wake descriptors among k (laid out by kinds) lose their sleeper. */
static void wake_entries_done(const struct pollfd *k, const uint8_t *kinds, nfds_t nfds)
{
	for (nfds_t i = 0, nk = 0; i < nfds; i++, nk++)
		if (kinds[i] == W_SMC)
			smcr_fd_sleepers_add(k[nk++].fd, -1);
}

/*
 * One look: the kernel's part (waiting up to timeout_ms) in k, our SMC
 * connections by themselves.  Returns the number of ready entries, or -1;
 * *moved when a connection changed how it is watched.
 */
static int poll_once(struct pollfd *fds, nfds_t nfds, struct pollfd *k, uint8_t *kinds,
		     int timeout_ms, const sigset_t *sigmask, bool *moved)
{
	nfds_t nk = 0;
	int ready = 0, rc, due;
	bool sleeping = timeout_ms != 0;
	struct timespec ts, *tsp = NULL;

	for (nfds_t i = 0; i < nfds; i++)
		kinds[i] = fds[i].fd < 0 ? W_PLAIN : watch_of(fds[i].fd);
	due = drive_due(fds, nfds, kinds);
	if (due >= 0 && (timeout_ms < 0 || due < timeout_ms))
		timeout_ms = due;
	for (nfds_t i = 0; i < nfds; i++) {
		int fd = fds[i].fd;

		kinds[i] = fd < 0 ? W_PLAIN : watch_of(fd);
		switch (kinds[i]) {
		case W_SMC:
			k[nk++] = wake_entry(smcr_sock_wake_fd(smcr_fd_sock(fd)), sleeping,
					     &timeout_ms);
			/* its end, or LEAVE (conn/smc_leave.h) */
			k[nk++] = (struct pollfd){ .fd = fd, .events = POLLIN | POLLRDHUP };
			break;
		case W_RESET:
			k[nk++] = (struct pollfd){ .fd = fd, .events = fds[i].events };
			break;
		case W_NESTED:
			/* readable in the kernel when an armed connection of it has news */
			k[nk++] = (struct pollfd){ .fd = fd, .events = POLLIN };
			break;
		case W_DRIVE:
			/*
			 * connecting: done when writable; in the CLC exchange: a
			 * message came, or, declined, TCP is writable
			 */
			k[nk++] = (struct pollfd){
				.fd = fd,
				.events = smcr_fd_get(fd) == SMCR_FD_TCP_CONNECTING ? POLLOUT :
					  POLLIN | (smcr_fd_sock(fd) &&
						    smcr_sock_writes_tcp(smcr_fd_sock(fd)) ?
						    fds[i].events & POLLOUT : 0),
			};
			break;
		default:
			k[nk++] = fds[i];
		}
	}
	if (timeout_ms >= 0) {
		ts = (struct timespec){ timeout_ms / 1000, timeout_ms % 1000 * 1000000L };
		tsp = &ts;
	}
	rc = smcr_sys_ppoll(k, nk, tsp, sigmask);
	if (sleeping)
		wake_entries_done(k, kinds, nfds);
	if (rc < 0)
		return -1;
	nk = 0;
	for (nfds_t i = 0; i < nfds; i++) {
		int fd = fds[i].fd;

		fds[i].revents = 0;
		switch (kinds[i]) {
		case W_SMC:
			if (k[nk + 1].revents & (POLLIN | POLLRDHUP | POLLHUP | POLLERR))
				smcr_sock_tcp_news(smcr_fd_sock(fd));
			nk++;
			/* fall through */
		case W_RESET:
			nk++;
			fds[i].revents = (short)(smcr_sock_poll(smcr_fd_sock(fd)) &
						 ((unsigned short)fds[i].events | POLLERR | POLLHUP));
			/* one that left SMC mid-stream (its peer's LEAVE) is the kernel's to watch */
			*moved |= kinds[i] == W_SMC && watch_of(fd) != W_SMC;
			break;
		case W_NESTED:
			nk++;
			fds[i].revents = smcr_epoll_nested_ready(fd) ?
						 fds[i].events & (POLLIN | POLLRDNORM) : 0;
			break;
		case W_DRIVE:
			if (k[nk].revents) {
				smcr_drive(fd);
				*moved |= watch_of(fd) != W_DRIVE;
				/* a connect() that failed stays connecting: the kernel's word */
				if (smcr_fd_get(fd) == SMCR_FD_TCP_CONNECTING)
					fds[i].revents = k[nk].revents &
							 (fds[i].events | POLLERR | POLLHUP);
			}
			/* a connected client in its CLC exchange: writable until a send blocks */
			if (watch_of(fd) == W_DRIVE && smcr_fd_sock(fd))
				fds[i].revents |= (short)(smcr_sock_poll(smcr_fd_sock(fd)) &
							  (unsigned short)fds[i].events);
			nk++;
			break;
		default:
			fds[i].revents = k[nk++].revents;
		}
		ready += fds[i].revents != 0;
	}
	return ready;
}

struct poll_watch {
	struct pollfd *fds;
	nfds_t nfds;
	const uint32_t *since;
};

/* Whether an SMC connection among w's fds moved past its since (a spin's turn). */
static bool poll_moved(void *arg)
{
	const struct poll_watch *w = arg;

	for (nfds_t i = 0; i < w->nfds; i++) {
		if (w->fds[i].fd < 0 || watch_of(w->fds[i].fd) != W_SMC)
			continue;
		smcr_sock_collect(smcr_fd_sock(w->fds[i].fd));
		if (smcr_sock_events(smcr_fd_sock(w->fds[i].fd)) != w->since[i])
			return true;
	}
	return false;
}

/* Spins, then arms, the SMC connections among fds: false if one moved meanwhile. */
static bool poll_prepare_sleep(struct pollfd *fds, nfds_t nfds, uint32_t *since)
{
	static __thread struct smcr_spin spinning;
	struct smcr_spin_how how = { 0 };
	struct poll_watch w = { .fds = fds, .nfds = nfds, .since = since };

	for (nfds_t i = 0; i < nfds; i++) {
		if (fds[i].fd >= 0 && watch_of(fds[i].fd) == W_SMC) {
			since[i] = smcr_sock_events(smcr_fd_sock(fds[i].fd));
			smcr_spin_join(&how, smcr_sock_spin_how(smcr_fd_sock(fds[i].fd)));
		}
	}
	if (smcr_spin_for(&spinning, how, poll_moved, &w))
		return false;
	for (nfds_t i = 0; i < nfds; i++) {
		/* smcr_epoll_nested_ready() arms an instance's connections */
		if (fds[i].fd >= 0 && watch_of(fds[i].fd) == W_NESTED &&
		    (fds[i].events & (POLLIN | POLLRDNORM)) && smcr_epoll_nested_ready(fds[i].fd))
			return false;
		if (fds[i].fd < 0 || watch_of(fds[i].fd) != W_SMC)
			continue;
		struct smcr_sock *sk = smcr_fd_sock(fds[i].fd);
		/* taken before looking, as wait() wants it */
		uint32_t now = smcr_sock_events(sk);

		if ((smcr_sock_poll(sk) & ((unsigned short)fds[i].events | POLLERR | POLLHUP)) ||
		    !smcr_sock_arm(sk, now, true, 0))
			return false;
	}
	return true;
}

int smcr_poll(struct pollfd *fds, nfds_t nfds, int timeout_ms, const sigset_t *sigmask)
{
	struct pollfd small_k[32], *k = small_k;
	uint32_t small_since[16], *since = small_since;
	uint8_t small_kinds[16], *kinds = small_kinds;
	uint64_t deadline = smc_deadline_after(timeout_ms);
	int rc;

	if (!any_ours(fds, nfds)) {
		struct timespec ts = { timeout_ms / 1000, timeout_ms % 1000 * 1000000L };
		return REAL(ppoll)(fds, nfds, timeout_ms < 0 ? NULL : &ts, sigmask);
	}
	if (nfds > 16) {
		k = malloc(2 * nfds * sizeof(*k));
		since = malloc(nfds * sizeof(*since));
		kinds = malloc(nfds);
		if (!k || !since || !kinds) {
			rc = -1;
			errno = ENOMEM;
			goto out;
		}
	}
	for (;;) {
		bool moved = false;

		rc = poll_once(fds, nfds, k, kinds, 0, sigmask, &moved);
		if (rc != 0)
			break;
		if (moved)
			continue;
		if (smcr_wait_remaining(timeout_ms, deadline) == 0)
			break;
		if (!poll_prepare_sleep(fds, nfds, since))
			continue;
		rc = poll_once(fds, nfds, k, kinds, smcr_wait_remaining(timeout_ms, deadline),
			       sigmask, &moved);
		if (rc != 0 || (timeout_ms > 0 && smcr_wait_remaining(timeout_ms, deadline) == 0))
			break;
	}
out:
	if (k != small_k) {
		free(k);
		free(since);
		free(kinds);
	}
	return rc;
}

int smcr_select(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
		int timeout_ms, const sigset_t *sigmask)
{
	struct pollfd *fds;
	nfds_t n = 0;
	int rc, count = 0;

	if (nfds < 0 || nfds > FD_SETSIZE) {
		errno = EINVAL;
		return -1;
	}
	fds = calloc((size_t)nfds + 1, sizeof(*fds));
	if (!fds) {
		errno = ENOMEM;
		return -1;
	}
	for (int fd = 0; fd < nfds; fd++) {
		short ev = (short)((readfds && FD_ISSET(fd, readfds) ? POLLIN : 0) |
				   (writefds && FD_ISSET(fd, writefds) ? POLLOUT : 0) |
				   (exceptfds && FD_ISSET(fd, exceptfds) ? POLLPRI : 0));
		if (ev)
			fds[n++] = (struct pollfd){ .fd = fd, .events = ev };
	}
	rc = smcr_poll(fds, n, timeout_ms, sigmask);
	if (rc >= 0) {
		for (nfds_t i = 0; i < n; i++) {
			if (fds[i].revents & POLLNVAL) {
				free(fds);
				errno = EBADF;
				return -1;
			}
		}
		for (nfds_t i = 0; i < n; i++) {
			int fd = fds[i].fd;
			short r = fds[i].revents;
			/* as the kernel's select: an error or hang-up reads as readable */
			bool in = (r & (POLLIN | POLLHUP | POLLERR)) && (fds[i].events & POLLIN);
			bool out = (r & (POLLOUT | POLLERR)) && (fds[i].events & POLLOUT);
			bool pri = (r & POLLPRI) && (fds[i].events & POLLPRI);

			if (readfds && FD_ISSET(fd, readfds) && !in)
				FD_CLR(fd, readfds);
			if (writefds && FD_ISSET(fd, writefds) && !out)
				FD_CLR(fd, writefds);
			if (exceptfds && FD_ISSET(fd, exceptfds) && !pri)
				FD_CLR(fd, exceptfds);
			count += in + out + pri;
		}
		rc = count;
	}
	free(fds);
	return rc;
}

bool smcr_select_has_ours(int nfds, const fd_set *r, const fd_set *w, const fd_set *e)
{
	for (int fd = 0; fd < nfds && fd < FD_SETSIZE; fd++) {
		if (!((r && FD_ISSET(fd, r)) || (w && FD_ISSET(fd, w)) || (e && FD_ISSET(fd, e))))
			continue;
		if (smcr_fd_serving(fd) || smcr_epoll_has_members(fd) ||
		    smcr_fd_state_is_connecting(smcr_fd_get(fd)))
			return true;
	}
	return false;
}
