/*
 * readiness.c - poll, select and epoll over SMC connections (readiness.h).
 *
 * epoll.  For each epoll instance we keep the registrations of the
 * descriptors whose readiness is ours to tell ("members": connections on
 * SMC, in their CLC exchange, connecting, or TCP sockets not yet
 * connected), with the events and data the application gave.  The kernel
 * holds, instead of the application's registration, ours, tagged with the
 * descriptor, in one of these regimes:
 *   WATCH  the TCP socket, edge-triggered IN|OUT|RDHUP: a connect()
 *          completes or a CLC message arrives; we act, the app sees nothing
 *   SMC    the TCP socket, edge-triggered RDHUP (its end means the peer is
 *          gone), and the connection's wake descriptor, edge-triggered IN
 *   RESET  the TCP socket, edge-triggered: the CLC exchange failed
 *   NESTED another instance of ours (an epoll descriptor), edge-triggered
 *          IN: it got news in the kernel
 * and a member whose connection stays on TCP is handed back: the kernel
 * gets the application's registration and we forget it (PLAIN).  Every
 * epoll_wait asks the kernel first without waiting (so descriptors that
 * are not ours are never starved), turns our tagged events into actions,
 * reports each SMC member that is ready (level-triggered, with the
 * application's data; EPOLLONESHOT is kept here: reported once until
 * re-armed with EPOLL_CTL_MOD), and only when nothing is ready spins a
 * while, arms every SMC member and sleeps in the kernel.  An edge-triggered
 * (EPOLLET) member is looked at again only when its connection's events()
 * number moved since it was last looked at (a CDC came, or a local change):
 * like the kernel's wake-up callback, an edge may repeat what is already
 * known, but an application that leaves data unread sleeps until more
 * comes instead of being told again and again.  EPOLLEXCLUSIVE goes on the
 * wake descriptor, so that one write of it wakes one of the waiters.
 *
 * Each instance has its own lock, held while it is looked at and never
 * while sleeping.  The list of instances has another, taken first.
 *
 * poll and select keep nothing between calls: each call looks at the SMC
 * connections among its descriptors, and sleeps on their wake and TCP
 * descriptors in their place.
 *
 * Nested instances.  An instance of ours inside another epoll, or in poll
 * or select, is ready when its own epoll_wait would report something; the
 * kernel cannot tell, on two counts: it counts our registrations (a wake
 * descriptor left readable makes the inner instance readable with nothing
 * to report), and nobody armed the inner instance's connections, so the
 * peer does not write their wake descriptors and new data wakes nobody.
 * So the outer wait asks nested_ready(): the inner instance's SMC
 * members are looked at as its epoll_wait would (nothing is consumed), and
 * when none is ready each is armed, which reads its wake descriptor empty,
 * before the kernel is asked about the inner descriptor: then only the
 * application's registrations can make it readable, and from then on news
 * on an armed connection writes its wake descriptor, which the inner
 * instance holds, which wakes whoever sleeps on it, outer epoll, poll or
 * select.  The arm comes after the look, with the events() number taken
 * before it (as everywhere here), so news in between fails the arm and is
 * looked at again: no wakeup is lost.  Every instance is ours from
 * epoll_create on, so that one put in another while still empty is
 * known as such when connections of ours join it later.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fdtable.h"
#include "handshake.h"
#include "readiness.h"
#include "real.h"
#include "smc_sock.h"
#include "smc_transport.h"
#include "spin.h"

/* Our registrations' data: "SMC" in the top bytes, the kind, the descriptor. */
#define TAG_MAGIC	0x534d430000000000ull
#define TAG_MASK	0xffffff0000000000ull
#define TAG_SOCK	0u
#define TAG_WAKE	1u

static uint64_t tag(int fd, unsigned int kind)
{
	return TAG_MAGIC | (uint64_t)kind << 32 | (uint32_t)fd;
}

enum regime { REG_NONE, REG_PLAIN, REG_WATCH, REG_SMC, REG_RESET, REG_NESTED };

struct member {
	int fd;
	uint32_t events;        /* the application's */
	epoll_data_t data;      /* the application's */
	enum regime regime;     /* what the kernel holds for it */
	int wake_fd;            /* registered in the SMC regime, or -1 */
	bool disabled;          /* EPOLLONESHOT: reported, not re-armed yet */
	bool dormant;           /* EPOLL_CTL_DEL'd: ours stay in the kernel for the next ADD,
				   disabled meanwhile */
	bool edge_seen;         /* EPOLLET: edge holds the events() last looked at */
	uint32_t edge;
	bool signalled;         /* the wake descriptor (NESTED: the instance) was seen readable */
	uint32_t round;         /* the last epoll_wait that reported it */
	uint32_t since;         /* events() taken before a spin */
};

struct smcr_epoll {
	_Atomic unsigned int refs;
	pthread_mutex_t lock;
	int fd;                 /* a descriptor naming the instance: the last used */
	struct member **members;
	int count, cap;
	uint32_t round;
	int scan_from;          /* where the next scan starts: fairness */
	struct smcr_spin spin;
	struct smcr_epoll *prev, *next;
};

static pthread_mutex_t instances_lock = PTHREAD_MUTEX_INITIALIZER;
static struct smcr_epoll *instances;

/* ---- what a descriptor needs ---- */

static enum regime regime_of(int fd)
{
	struct smcr_sock *sk = smcr_fd_sock(fd);

	if (sk) {
		switch (smcr_sock_phase(sk)) {
		case SMCR_SOCK_SMC:
			return REG_SMC;
		case SMCR_SOCK_RESET:
			return REG_RESET;
		case SMCR_SOCK_TCP:
			return REG_PLAIN;
		default:
			return REG_WATCH;
		}
	}
	if (smcr_fd_epoll(fd))
		return REG_NESTED;
	switch (smcr_fd_get(fd)) {
	case SMCR_FD_TCP:               /* may connect later */
	case SMCR_FD_TCP_CONNECTING:
		return REG_WATCH;
	default:
		return REG_PLAIN;
	}
}

/* A connect() or CLC exchange in progress on fd moves on, if it can. */
static void drive(int fd)
{
	struct smcr_sock *sk;

	if (smcr_fd_get(fd) == SMCR_FD_TCP_CONNECTING)
		smcr_handshake_settle(fd);
	sk = smcr_fd_sock(fd);
	if (sk)
		smcr_sock_settle(sk, fd, false);
}

static uint32_t poll_to_epoll(unsigned int mask)
{
	/* the POLL and EPOLL bits are the same numbers */
	return mask & (EPOLLIN | EPOLLOUT | EPOLLPRI | EPOLLERR | EPOLLHUP | EPOLLRDHUP |
		       EPOLLRDNORM | EPOLLWRNORM);
}

/* ---- epoll instances ---- */

struct smcr_epoll *smcr_epoll_get(struct smcr_epoll *ep)
{
	atomic_fetch_add_explicit(&ep->refs, 1, memory_order_relaxed);
	return ep;
}

void smcr_epoll_put(struct smcr_epoll *ep)
{
	if (atomic_fetch_sub_explicit(&ep->refs, 1, memory_order_acq_rel) != 1)
		return;
	pthread_mutex_lock(&instances_lock);
	if (ep->prev)
		ep->prev->next = ep->next;
	else
		__atomic_store_n(&instances, ep->next, __ATOMIC_RELEASE);
	if (ep->next)
		ep->next->prev = ep->prev;
	pthread_mutex_unlock(&instances_lock);
	/* the kernel's instance is gone with its last descriptor, and our registrations */
	for (int i = 0; i < ep->count; i++)
		free(ep->members[i]);
	free(ep->members);
	pthread_mutex_destroy(&ep->lock);
	free(ep);
}

static struct smcr_epoll *epoll_of(int epfd)
{
	struct smcr_epoll *ep = smcr_fd_epoll(epfd);

	if (ep)
		return ep;
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return NULL;
	atomic_init(&ep->refs, 1);
	pthread_mutex_init(&ep->lock, NULL);
	ep->fd = epfd;
	if (!smcr_fd_set_epoll(epfd, ep)) {
		pthread_mutex_destroy(&ep->lock);
		free(ep);
		return NULL;
	}
	pthread_mutex_lock(&instances_lock);
	ep->next = instances;
	if (instances)
		instances->prev = ep;
	__atomic_store_n(&instances, ep, __ATOMIC_RELEASE);     /* read unlocked: forget */
	pthread_mutex_unlock(&instances_lock);
	return ep;
}

int smcr_epoll_created(int epfd)
{
	int saved_errno = errno;

	/* without the memory, it stays the kernel's until it has a member of ours */
	if (epfd >= 0)
		epoll_of(epfd);
	errno = saved_errno;
	return epfd;
}

static struct member *find(struct smcr_epoll *ep, int fd)
{
	for (int i = 0; i < ep->count; i++)
		if (ep->members[i]->fd == fd)
			return ep->members[i];
	return NULL;
}

static void drop(struct smcr_epoll *ep, struct member *m)
{
	for (int i = 0; i < ep->count; i++) {
		if (ep->members[i] == m) {
			ep->members[i] = ep->members[--ep->count];
			break;
		}
	}
	free(m);
}

/* Gives the kernel the registration of regime to for m; false if it refused. */
static bool apply(struct smcr_epoll *ep, struct member *m, enum regime to)
{
	struct epoll_event ev = { .data.u64 = tag(m->fd, TAG_SOCK) };
	int op = m->regime == REG_NONE ? EPOLL_CTL_ADD : EPOLL_CTL_MOD;

	switch (to) {
	case REG_PLAIN:
		/* EPOLLEXCLUSIVE is for EPOLL_CTL_ADD only */
		ev.events = m->disabled ? 0 : m->events & ~EPOLLEXCLUSIVE;
		ev.data = m->data;
		break;
	case REG_WATCH:
	case REG_RESET:
		ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
		break;
	case REG_NESTED:
		ev.events = EPOLLIN | EPOLLET;
		break;
	default:
		ev.events = EPOLLRDHUP | EPOLLET;
		break;
	}
	if (REAL(epoll_ctl)(ep->fd, op, m->fd, &ev) != 0)
		return false;
	if (to == REG_SMC && m->wake_fd < 0) {
		int wake = smcr_sock_wake_fd(smcr_fd_sock(m->fd));
		/*
		 * Edge-triggered: the eventfd stays readable until the next arm
		 * reads it, and level-triggered the kernel would hand it back at
		 * every epoll_wait meanwhile, for nothing (each write is an edge).
		 */
		struct epoll_event wev = { .events = EPOLLIN | EPOLLET |
						     (m->events & EPOLLEXCLUSIVE),
					   .data.u64 = tag(m->fd, TAG_WAKE) };

		if (REAL(epoll_ctl)(ep->fd, EPOLL_CTL_ADD, wake, &wev) == 0)
			m->wake_fd = wake;
	} else if (to != REG_SMC && m->wake_fd >= 0) {
		REAL(epoll_ctl)(ep->fd, EPOLL_CTL_DEL, m->wake_fd, NULL);
		m->wake_fd = -1;
	}
	m->regime = to;
	m->edge_seen = false;
	return true;
}

/* Brings the kernel's registration of m up to date; false if m is gone (PLAIN). */
/* Takes ours out of the kernel and forgets m; the kernel's word on the socket's. */
static int unregister(struct smcr_epoll *ep, struct member *m)
{
	int rc;

	/* the wake descriptor's registration would outlive the socket's */
	if (m->wake_fd >= 0)
		REAL(epoll_ctl)(ep->fd, EPOLL_CTL_DEL, m->wake_fd, NULL);
	rc = REAL(epoll_ctl)(ep->fd, EPOLL_CTL_DEL, m->fd, NULL);
	drop(ep, m);
	return rc;
}

static bool sync_member(struct smcr_epoll *ep, struct member *m)
{
	enum regime to = regime_of(m->fd);
	int saved_errno = errno;

	if (m->dormant && to != m->regime) {
		unregister(ep, m);      /* the application has no registration to hand back */
		errno = saved_errno;
		return false;
	}
	if (to != m->regime)
		apply(ep, m, to);
	errno = saved_errno;
	if (to != REG_PLAIN)
		return true;
	drop(ep, m);
	return false;
}

/*
 * Only for a waiter asleep in epoll_wait meanwhile: every epoll_wait syncs
 * its members itself before it looks.  So nothing here waits for a lock (the
 * caller may hold an instance's: collect() drives connections): a busy
 * instance is being looked at, and will sync.
 */
void smcr_readiness_changed(int fd)
{
	if (pthread_mutex_trylock(&instances_lock) != 0)
		return;
	for (struct smcr_epoll *ep = instances; ep; ep = ep->next) {
		if (pthread_mutex_trylock(&ep->lock) != 0)
			continue;
		struct member *m = find(ep, fd);
		if (m)
			sync_member(ep, m);
		pthread_mutex_unlock(&ep->lock);
	}
	pthread_mutex_unlock(&instances_lock);
}

void smcr_readiness_forget(int fd)
{
	int saved_errno = errno;

	if (!__atomic_load_n(&instances, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&instances_lock);
	for (struct smcr_epoll *ep = instances; ep; ep = ep->next) {
		pthread_mutex_lock(&ep->lock);
		struct member *m = find(ep, fd);
		if (m)
			unregister(ep, m);
		pthread_mutex_unlock(&ep->lock);
	}
	pthread_mutex_unlock(&instances_lock);
	errno = saved_errno;
}

int smcr_epoll_ctl(int epfd, int op, int fd, struct epoll_event *event)
{
	struct smcr_epoll *ep = smcr_fd_epoll(epfd);
	struct member *m;
	int rc = 0;

	if (!ep && (op != EPOLL_CTL_ADD || regime_of(fd) == REG_PLAIN))
		return REAL(epoll_ctl)(epfd, op, fd, event);
	if (!ep && !(ep = epoll_of(epfd)))
		return REAL(epoll_ctl)(epfd, op, fd, event);
	pthread_mutex_lock(&ep->lock);
	ep->fd = epfd;
	m = find(ep, fd);
	if (!m && !(op == EPOLL_CTL_ADD && regime_of(fd) != REG_PLAIN)) {
		pthread_mutex_unlock(&ep->lock);
		return REAL(epoll_ctl)(epfd, op, fd, event);
	}
	if (m && m->dormant && op != EPOLL_CTL_ADD) {
		errno = ENOENT;         /* as the kernel: the application deleted it */
		op = -1;
	}
	switch (op) {
	case -1:
		rc = -1;
		break;
	case EPOLL_CTL_ADD:
		if (m && !m->dormant) {
			errno = EEXIST;
			rc = -1;
			break;
		}
		if (!event) {
			errno = EFAULT;
			rc = -1;
			break;
		}
		if (m) {                /* back from a DEL: ours are still in place */
			*m = (struct member){ .fd = fd, .events = event->events, .data = event->data,
					      .regime = m->regime, .wake_fd = m->wake_fd,
					      .signalled = m->signalled };
			break;
		}
		m = calloc(1, sizeof(*m));
		if (!m || (ep->count == ep->cap &&
			   !(ep->members = reallocarray(ep->members, ep->cap = ep->cap * 2 + 8,
							sizeof(*ep->members))))) {
			free(m);
			errno = ENOMEM;
			rc = -1;
			break;
		}
		*m = (struct member){ .fd = fd, .events = event->events, .data = event->data,
				      .regime = REG_NONE, .wake_fd = -1 };
		ep->members[ep->count++] = m;
		if (!apply(ep, m, regime_of(fd))) {
			int err = errno;
			drop(ep, m);
			errno = err;
			rc = -1;
		} else if (m->regime == REG_PLAIN) {
			drop(ep, m);
		}
		break;
	case EPOLL_CTL_MOD:
		if (!event) {
			errno = EFAULT;
			rc = -1;
			break;
		}
		/* as the kernel: an exclusive registration is never modified, nor made */
		if ((event->events | m->events) & EPOLLEXCLUSIVE) {
			errno = EINVAL;
			rc = -1;
			break;
		}
		m->events = event->events;
		m->data = event->data;
		m->disabled = false;
		m->edge_seen = false;   /* as the kernel: tells what is ready now */
		break;
	case EPOLL_CTL_DEL:
		/*
		 * Event loops delete and add again all the time (redis's ae, at
		 * every request): an SMC member keeps ours in the kernel, asleep.
		 */
		if (m->regime == REG_SMC) {
			m->dormant = true;
			m->disabled = true;     /* looked at by nobody, as EPOLLONESHOT's */
			m->events = 0;
			break;
		}
		rc = unregister(ep, m);
		break;
	default:
		errno = EINVAL;
		rc = -1;
	}
	pthread_mutex_unlock(&ep->lock);
	return rc;
}

/* ---- epoll_wait ---- */

/* m, ready now, into the output: false if there is no room or nothing to say. */
static bool report(struct smcr_epoll *ep, struct member *m, uint32_t ready,
		   struct epoll_event *out, int *n, int max)
{
	uint32_t ev = ready & (m->events | EPOLLERR | EPOLLHUP);

	if (!ev || m->disabled || m->round == ep->round || *n >= max)
		return false;
	out[(*n)++] = (struct epoll_event){ .events = ev, .data = m->data };
	m->round = ep->round;
	if (m->events & EPOLLONESHOT)
		m->disabled = true;
	return true;
}

/* Whether an edge-triggered m has news: its events() moved since last looked at. */
static bool edge_moved(const struct member *m, uint32_t now)
{
	return !(m->events & EPOLLET) || !m->edge_seen || now != m->edge;
}

/* Reports the SMC member m if it is ready (and, edge-triggered, has news). */
static void look_at(struct smcr_epoll *ep, struct member *m, struct epoll_event *out, int *n,
		    int max)
{
	struct smcr_sock *sk = smcr_fd_sock(m->fd);
	/* taken before looking (smc_transport.h); a reset one has no transport, one edge */
	uint32_t now = m->regime == REG_SMC ? smcr_sock_events(sk) : 0;
	uint32_t ready;

	if (m->disabled || !edge_moved(m, now))
		return;
	ready = poll_to_epoll(smcr_sock_poll(sk));
	/* an edge that says nothing new is spent; one not told for want of room is not */
	if (report(ep, m, ready, out, n, max) || !(ready & (m->events | EPOLLERR | EPOLLHUP))) {
		m->edge = now;
		m->edge_seen = true;
	}
}

/* ---- nested instances (see the top) ---- */

static bool nested_ready(int fd);

/* Whether look_at would report the SMC or RESET member m now, events() at now. */
static bool member_ready(const struct member *m, uint32_t now)
{
	struct smcr_sock *sk = smcr_fd_sock(m->fd);

	if (m->disabled || !sk || !edge_moved(m, now))
		return false;
	return poll_to_epoll(smcr_sock_poll(sk)) & (m->events | EPOLLERR | EPOLLHUP);
}

/*
 * Under the lock of m's instance: false if its epoll_wait would report m
 * now; else true, m's connection armed (its wake descriptor read empty),
 * so that its next news makes the instance readable in the kernel.
 */
static bool quiet_member(struct member *m)
{
	struct smcr_sock *sk = smcr_fd_sock(m->fd);

	switch (m->regime) {
	case REG_SMC:
		for (;;) {
			uint32_t since = smcr_sock_events(sk);

			if (member_ready(m, since))
				return false;
			if (smcr_sock_arm(sk, since, true)) {
				m->signalled = false;
				return true;
			}
		}
	case REG_RESET:
		return !member_ready(m, 0);
	case REG_NESTED:
		return m->disabled || !nested_ready(m->fd);
	default:
		return true;    /* the kernel's to tell */
	}
}

/* Whether epoll_wait on fd, an instance of ours, would report something now. */
static bool nested_ready(int fd)
{
	struct smcr_epoll *ep = smcr_fd_epoll(fd);
	struct pollfd p = { .fd = fd, .events = POLLIN };
	bool ready = false;

	if (ep) {
		smcr_epoll_get(ep);
		pthread_mutex_lock(&ep->lock);
		for (int i = 0; i < ep->count && !ready; i++)
			ready = !quiet_member(ep->members[i]);
	}
	/* ours are quiet now: only the application's can make it readable */
	if (!ready)
		ready = REAL(poll)(&p, 1, 0) == 1;
	if (ep) {
		pthread_mutex_unlock(&ep->lock);
		smcr_epoll_put(ep);
	}
	return ready;
}

/*
 * Whether fd is an instance with members of ours, for poll and select: one
 * without any (most: every instance is ours from epoll_create on) is the
 * kernel's to tell.
 */
static bool instance_has_members(int fd)
{
	struct smcr_epoll *ep = smcr_fd_epoll(fd);

	return ep && __atomic_load_n(&ep->count, __ATOMIC_RELAXED) > 0;
}

/* Reports the NESTED member m if its instance is ready; edge-triggered, on news only. */
static void look_at_nested(struct smcr_epoll *ep, struct member *m, struct epoll_event *out,
			   int *n, int max)
{
	uint32_t ready;

	if (m->disabled || ((m->events & EPOLLET) && m->edge_seen && !m->signalled))
		return;
	ready = nested_ready(m->fd) ? EPOLLIN : 0;
	if (report(ep, m, ready, out, n, max) || !(ready & m->events)) {
		m->edge_seen = true;
		m->signalled = false;
	}
}

/*
 * Under ep->lock: out[0..k) holds what the kernel reported.  Passes the
 * application's events on, acts on ours, then adds every SMC member that is
 * ready.  Returns the number of events in out; *moved is set when a
 * connection changed regime (the kernel may have news for it at once).
 */
static int collect(struct smcr_epoll *ep, struct epoll_event *out, int k, int max, bool *moved)
{
	int n = 0;

	ep->round++;
	for (int i = 0; i < k; i++) {
		struct epoll_event ev = out[i];
		struct member *m;

		if ((ev.data.u64 & TAG_MASK) != TAG_MAGIC) {
			out[n++] = ev;
			continue;
		}
		m = find(ep, (int)(uint32_t)ev.data.u64);
		if (!m)
			continue;       /* a registration of a descriptor since closed */
		if ((ev.data.u64 >> 32 & 0xff) == TAG_WAKE) {
			m->signalled = true;
			continue;
		}
		switch (m->regime) {
		case REG_WATCH:
			drive(m->fd);
			/* not connected, or a connect() that failed: the kernel's word */
			if (smcr_fd_get(m->fd) == SMCR_FD_TCP ||
			    smcr_fd_get(m->fd) == SMCR_FD_TCP_CONNECTING)
				report(ep, m, ev.events, out, &n, max);
			break;
		case REG_SMC:
			smcr_sock_tcp_ended(smcr_fd_sock(m->fd));
			break;
		case REG_NESTED:
			m->signalled = true;
			break;
		default:
			break;
		}
	}
	for (int i = 0; i < ep->count; i++) {
		enum regime was = ep->members[i]->regime;

		if (!sync_member(ep, ep->members[i])) {
			*moved = true;
			i--;            /* dropped: the last member took its place */
		} else if (ep->members[i]->regime != was) {
			*moved = true;
		}
	}
	for (int i = 0; i < ep->count; i++) {
		struct member *m = ep->members[(ep->scan_from + i) % ep->count];

		if (m->regime == REG_SMC || m->regime == REG_RESET)
			look_at(ep, m, out, &n, max);
		else if (m->regime == REG_NESTED)
			look_at_nested(ep, m, out, &n, max);
	}
	if (ep->count)
		ep->scan_from = (ep->scan_from + 1) % ep->count;
	return n;
}

/* Under ep->lock: spins while spinning pays; true if an SMC member had news. */
static bool spin(struct smcr_epoll *ep)
{
	struct smcr_spin_how how = { 0 };
	uint64_t budget, end;

	for (int i = 0; i < ep->count; i++) {
		struct member *m = ep->members[i];
		if (m->regime == REG_SMC && !m->disabled) {
			m->since = smcr_sock_events(smcr_fd_sock(m->fd));
			smcr_spin_join(&how, smcr_sock_spin_how(smcr_fd_sock(m->fd)));
		}
	}
	budget = smcr_spin_budget(&ep->spin, how);
	if (!budget)
		return false;
	end = smc_clock_ns() + budget;
	do {
		for (int i = 0; i < ep->count; i++) {
			struct member *m = ep->members[i];
			if (m->regime != REG_SMC || m->disabled)
				continue;
			smcr_sock_collect(smcr_fd_sock(m->fd));
			if (smcr_sock_events(smcr_fd_sock(m->fd)) != m->since) {
				smcr_spin_done(&ep->spin, how, true);
				return true;
			}
		}
		smcr_cpu_relax();
	} while (smc_clock_ns() < end);
	smcr_spin_done(&ep->spin, how, false);
	return false;
}

/* Under ep->lock: arms every SMC member; false if one is ready after all. */
static bool arm(struct smcr_epoll *ep)
{
	for (int i = 0; i < ep->count; i++) {
		struct member *m = ep->members[i];
		struct smcr_sock *sk = smcr_fd_sock(m->fd);

		if (m->regime == REG_NESTED && !m->dormant) {
			/* arms the inner instance's connections, whatever the answer */
			bool ready = nested_ready(m->fd);

			if (ready && !m->disabled && !(m->events & EPOLLET))
				return false;
			continue;
		}
		if (m->regime != REG_SMC || !sk || m->dormant)
			continue;
		uint32_t since = smcr_sock_events(sk);
		if (!m->disabled && (m->events & EPOLLET) && edge_moved(m, since))
			return false;   /* not looked at since it moved */
		if (!m->disabled && !(m->events & EPOLLET) &&
		    (poll_to_epoll(smcr_sock_poll(sk)) & (m->events | EPOLLERR | EPOLLHUP)))
			return false;
		if (!smcr_sock_arm(sk, since, m->signalled))
			return false;
		m->signalled = false;
	}
	return true;
}

static int64_t deadline_of(int timeout_ms)
{
	return timeout_ms > 0 ? (int64_t)smc_clock_ns() + (int64_t)timeout_ms * 1000000 : 0;
}

/*
 * What is left of a wait until deadline (0: none was set, wait as asked),
 * rounded up: like the kernel's, a wait never ends before its time.
 */
static int remaining(int timeout_ms, int64_t deadline)
{
	int64_t left;

	if (timeout_ms <= 0)
		return timeout_ms;
	left = deadline - (int64_t)smc_clock_ns();
	return left > 0 ? (int)((left + 999999) / 1000000) : 0;
}

int smcr_epoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout_ms,
		    const sigset_t *sigmask)
{
	struct smcr_epoll *ep = smcr_fd_epoll(epfd);
	int64_t deadline = deadline_of(timeout_ms);
	bool spun = false;

	if (!ep || maxevents <= 0 || !__atomic_load_n(&ep->count, __ATOMIC_RELAXED))
		return REAL(epoll_pwait)(epfd, events, maxevents, timeout_ms, sigmask);
	for (;;) {
		bool moved = false, asleep = false;
		int k = REAL(epoll_pwait)(epfd, events, maxevents, 0, sigmask), n;

		if (k < 0)
			return k;
		pthread_mutex_lock(&ep->lock);
		ep->fd = epfd;
		n = collect(ep, events, k, maxevents, &moved);
		if (n > 0 || moved) {
			pthread_mutex_unlock(&ep->lock);
			if (n > 0)
				return n;
			continue;
		}
		if (remaining(timeout_ms, deadline) == 0) {
			pthread_mutex_unlock(&ep->lock);
			return 0;
		}
		if (!spun) {
			spun = true;
			if (spin(ep)) {
				pthread_mutex_unlock(&ep->lock);
				continue;
			}
		}
		if (arm(ep)) {
			pthread_mutex_unlock(&ep->lock);
			k = REAL(epoll_pwait)(epfd, events, maxevents,
					      remaining(timeout_ms, deadline), sigmask);
			if (k < 0)
				return k;
			pthread_mutex_lock(&ep->lock);
			n = collect(ep, events, k, maxevents, &moved);
			asleep = true;
		}
		pthread_mutex_unlock(&ep->lock);
		if (n > 0)
			return n;
		if (asleep && remaining(timeout_ms, deadline) == 0 && timeout_ms > 0)
			return 0;
	}
}

/* ---- poll and select ---- */

enum watch { W_PLAIN, W_DRIVE, W_SMC, W_NESTED };

static enum watch watch_of(int fd)
{
	enum regime r = regime_of(fd);

	if (r == REG_SMC || r == REG_RESET)
		return W_SMC;
	if (r == REG_NESTED)
		return instance_has_members(fd) ? W_NESTED : W_PLAIN;
	/* a TCP socket that is not connecting is the kernel's to tell */
	if (r == REG_WATCH && smcr_fd_get(fd) != SMCR_FD_TCP)
		return W_DRIVE;
	return W_PLAIN;
}

static bool any_ours(const struct pollfd *fds, nfds_t nfds)
{
	for (nfds_t i = 0; i < nfds; i++)
		if (fds[i].fd >= 0 && (smcr_fd_sock(fds[i].fd) || instance_has_members(fds[i].fd) ||
				       smcr_fd_get(fds[i].fd) == SMCR_FD_TCP_CONNECTING))
			return true;
	return false;
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
	int ready = 0, rc;
	struct timespec ts, *tsp = NULL;

	for (nfds_t i = 0; i < nfds; i++) {
		int fd = fds[i].fd;

		kinds[i] = fd < 0 ? W_PLAIN : watch_of(fd);
		switch (kinds[i]) {
		case W_SMC:
			k[nk++] = (struct pollfd){ .fd = smcr_sock_wake_fd(smcr_fd_sock(fd)),
						   .events = POLLIN };
			k[nk++] = (struct pollfd){ .fd = fd, .events = POLLRDHUP };
			break;
		case W_NESTED:
			/* readable in the kernel when an armed connection of it has news */
			k[nk++] = (struct pollfd){ .fd = fd, .events = POLLIN };
			break;
		case W_DRIVE:
			/* connecting: done when writable; in the CLC exchange: a message came */
			k[nk++] = (struct pollfd){
				.fd = fd,
				.events = smcr_fd_get(fd) == SMCR_FD_TCP_CONNECTING ? POLLOUT : POLLIN,
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
	rc = REAL(ppoll)(k, nk, tsp, sigmask);
	if (rc < 0)
		return -1;
	nk = 0;
	for (nfds_t i = 0; i < nfds; i++) {
		int fd = fds[i].fd;
		struct smcr_sock *sk;

		fds[i].revents = 0;
		switch (kinds[i]) {
		case W_SMC:
			sk = smcr_fd_sock(fd);
			if (k[nk + 1].revents & (POLLRDHUP | POLLHUP | POLLERR))
				smcr_sock_tcp_ended(sk);
			nk += 2;
			fds[i].revents = (short)(smcr_sock_poll(sk) &
						 ((unsigned short)fds[i].events | POLLERR | POLLHUP));
			break;
		case W_NESTED:
			nk++;
			fds[i].revents = nested_ready(fd) ? fds[i].events & (POLLIN | POLLRDNORM) : 0;
			break;
		case W_DRIVE:
			if (k[nk].revents) {
				drive(fd);
				*moved |= watch_of(fd) != W_DRIVE;
				/* a connect() that failed stays connecting: the kernel's word */
				if (smcr_fd_get(fd) == SMCR_FD_TCP_CONNECTING)
					fds[i].revents = k[nk].revents &
							 (fds[i].events | POLLERR | POLLHUP);
			}
			nk++;
			break;
		default:
			fds[i].revents = k[nk++].revents;
		}
		ready += fds[i].revents != 0;
	}
	return ready;
}

/* Spins, then arms, the SMC connections among fds: false if one moved meanwhile. */
static bool poll_prepare_sleep(struct pollfd *fds, nfds_t nfds, uint32_t *since)
{
	static __thread struct smcr_spin spinning;
	struct smcr_spin_how how = { 0 };
	uint64_t budget, end;

	for (nfds_t i = 0; i < nfds; i++) {
		if (fds[i].fd >= 0 && watch_of(fds[i].fd) == W_SMC) {
			since[i] = smcr_sock_events(smcr_fd_sock(fds[i].fd));
			smcr_spin_join(&how, smcr_sock_spin_how(smcr_fd_sock(fds[i].fd)));
		}
	}
	budget = smcr_spin_budget(&spinning, how);
	if (budget) {
		end = smc_clock_ns() + budget;
		do {
			for (nfds_t i = 0; i < nfds; i++) {
				if (fds[i].fd < 0 || watch_of(fds[i].fd) != W_SMC)
					continue;
				smcr_sock_collect(smcr_fd_sock(fds[i].fd));
				if (smcr_sock_events(smcr_fd_sock(fds[i].fd)) != since[i]) {
					smcr_spin_done(&spinning, how, true);
					return false;
				}
			}
			smcr_cpu_relax();
		} while (smc_clock_ns() < end);
		smcr_spin_done(&spinning, how, false);
	}
	for (nfds_t i = 0; i < nfds; i++) {
		/* nested_ready() arms an instance's connections */
		if (fds[i].fd >= 0 && watch_of(fds[i].fd) == W_NESTED &&
		    (fds[i].events & (POLLIN | POLLRDNORM)) && nested_ready(fds[i].fd))
			return false;
		if (fds[i].fd < 0 || watch_of(fds[i].fd) != W_SMC)
			continue;
		struct smcr_sock *sk = smcr_fd_sock(fds[i].fd);
		/* taken before looking, as wait() wants it */
		uint32_t now = smcr_sock_events(sk);

		if ((smcr_sock_poll(sk) & ((unsigned short)fds[i].events | POLLERR | POLLHUP)) ||
		    !smcr_sock_arm(sk, now, true))
			return false;
	}
	return true;
}

int smcr_poll(struct pollfd *fds, nfds_t nfds, int timeout_ms, const sigset_t *sigmask)
{
	struct pollfd small_k[32], *k = small_k;
	uint32_t small_since[16], *since = small_since;
	uint8_t small_kinds[16], *kinds = small_kinds;
	int64_t deadline = deadline_of(timeout_ms);
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
		if (remaining(timeout_ms, deadline) == 0)
			break;
		if (!poll_prepare_sleep(fds, nfds, since))
			continue;
		rc = poll_once(fds, nfds, k, kinds, remaining(timeout_ms, deadline), sigmask, &moved);
		if (rc != 0 || (timeout_ms > 0 && remaining(timeout_ms, deadline) == 0))
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
		if (smcr_fd_sock(fd) || instance_has_members(fd) ||
		    smcr_fd_get(fd) == SMCR_FD_TCP_CONNECTING)
			return true;
	}
	return false;
}

int smcr_timespec_ms(const struct timespec *ts)
{
	if (!ts)
		return -1;
	if (ts->tv_sec > 2000000)
		return 2000000000;
	return (int)(ts->tv_sec * 1000 + (ts->tv_nsec + 999999) / 1000000);
}
