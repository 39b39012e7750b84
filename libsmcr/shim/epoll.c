/*
 * epoll.c - epoll over SMC connections (readiness.h): epoll instances,
 * their members and the regimes the kernel holds them in, epoll_wait, and
 * nested instances (an instance of ours inside another, or in poll or
 * select).
 *
 * epoll.  For each epoll instance we keep the registrations of the
 * descriptors whose readiness is ours to tell ("members": connections on
 * SMC, in their CLC exchange, connecting, or TCP sockets not yet
 * connected), with the events and data the application gave.  The kernel
 * holds, instead of the application's registration, ours, tagged with the
 * descriptor, in one of these regimes:
 *   WATCH  the TCP socket, edge-triggered IN|OUT|RDHUP: a connect()
 *          completes or a CLC message arrives; we act, the app sees nothing
 *   SMC    the TCP socket, edge-triggered IN|RDHUP (its end means the peer
 *          is gone; bytes on it, that it left for TCP: conn/smc_leave.h),
 *          and the connection's wake descriptor, edge-triggered IN
 *   RESET  the TCP socket, edge-triggered: the CLC exchange failed, or
 *          this end left SMC and its reads are still ours: the peer's
 *          reply to its LEAVE is to come on the socket, or both ends left
 *          at once and our RMB is not read out yet
 *          (smcr_sock_left_reads_ours)
 *   NESTED another instance of ours (an epoll descriptor), edge-triggered
 *          IN: it got news in the kernel
 * and a member whose connection stays on TCP is handed back: the kernel
 * gets the application's registration and we forget it (PLAIN).  The
 * kernel's events carry either the application's data or our tags, so an
 * application registration whose data looks like a tag ("SMC" in its top
 * bytes: it is opaque, and may hold anything) stays a member in PLAIN: the
 * kernel holds the application's events under a tag of ours, and we give
 * its events back with the application's data.  For such a member the
 * kernel alone knows whether the registration still exists (the
 * descriptor may have been closed since), so it answers every epoll_ctl on
 * it.  Every
 * epoll_wait asks the kernel first without waiting (so descriptors that
 * are not ours are never starved), turns our tagged events into actions,
 * reports each SMC member that is ready (level-triggered, with the
 * application's data; EPOLLONESHOT is kept here: reported once until
 * re-armed with EPOLL_CTL_MOD), and only when nothing is ready spins a
 * while, arms every (hot, below) SMC member and sleeps in the kernel.  An edge-triggered
 * (EPOLLET) member is looked at again only when its connection's events()
 * number moved since it was last looked at (a CDC came, or a local change;
 * in RESET, the kernel's edge on its socket): like the kernel's wake-up
 * callback, an edge may repeat what is already known, but an application
 * that leaves data unread sleeps until more comes instead of being told
 * again and again.  EPOLLEXCLUSIVE goes on the wake descriptor, so that
 * one write of it wakes one of the waiters.
 *
 * Each instance has its own lock, held while it is looked at and never
 * while sleeping.  The list of instances has another, taken first.
 *
 * A member counts among its wake descriptor's sleepers (fdtable.h) from
 * its arm until it is looked at again: an arm reads the descriptor empty
 * only for its one sleeper, and leaves it readable while another instance
 * or a poll sleeps on it too, since each finds out about an edge only if
 * the descriptor is still readable when it runs (smc_sock.h).
 *
 * Large sets.  Looking at every member at every epoll_wait costs the
 * call in proportion to the members, idle or not (a server's thousands
 * of connections).  So the members are hot or quiet: collect, spin and
 * arm go over the hot ones only, the first ep->hot of ep->members, and
 * the kernel's events find theirs by descriptor (by_fd).  In a set of
 * more than SMALL_SET members, an SMC member looked at QUIET_AFTER times
 * in a row with nothing to report goes quiet: armed (smcr_sock_arm) with
 * the events() number taken before its last look, so news since then
 * fails the arm and it stays hot; a disabled one (EPOLLONESHOT told, or
 * deleted) is not armed, and only EPOLL_CTL_MOD or ADD bring it back.  A
 * quiet member is where a member of a sleeping epoll_wait is: armed after
 * a look that found nothing to report.  Whatever would wake that sleeper
 * makes it hot again, and nothing else can give it anything to report:
 *   - the peer's news (a CDC: data, room, its close) writes the armed
 *     wake descriptor: its event (TAG_WAKE);
 *   - the peer gone, or leaving for TCP (LEAVE on the stream): the TCP
 *     socket's event (TAG_SOCK);
 *   - a change of this process's own (shutdown, an abort, leaving for
 *     TCP, the first send after the peer closed, SO_OOBINLINE): the
 *     transport's wake(), which writes the wake descriptor armed or not;
 *     what this process's reads and writes otherwise change only takes
 *     readiness away (data read, the peer's RMB filled), and a quiet
 *     member has none to lose (one exception: a connection lock taken
 *     by force from a stuck holder fails the connection unannounced, and
 *     the call that took it returns the error);
 *   - the application's epoll_ctl (ADD after DEL, MOD, which re-arms
 *     EPOLLONESHOT), a phase change the socket layer tells
 *     (smcr_readiness_changed), and a fork (a child's RDMA connections
 *     are lost to it: every member is looked at anew).
 * A quiet member's regime can change only through one of these, and
 * every member made hot is synced before it is looked at.  Only the SMC
 * regime goes quiet: the others' readiness comes without the wake
 * descriptor (a Proposal's deadline in drive_due, a RESET, a nested
 * instance, a connect).  Arming costs the peer a wake-up at its next
 * news, so a member goes quiet only after QUIET_AFTER idle looks, not at
 * its first pause: arming every member that paused doubled the wake-ups
 * per request of a busy server (nginx, a thousand connections).  A set of
 * at most SMALL_SET members has no quiet member (one that shrinks to that
 * size makes them all hot), so there every member is looked at at every
 * call and armed only before a sleep, as before large sets were.
 *
 * A deadline without news.  A server member in its CLC exchange (WATCH)
 * whose application asks EPOLLOUT waits for the client's Proposal until a
 * deadline (smcr_sock_want_send, started by the asking), at which the
 * exchange declines and the connection is writable on TCP.  Nothing
 * happens on any descriptor at that moment, so every look (collect)
 * starts or reads each such member's deadline, drives the ones overdue to
 * their Decline (then they report EPOLLOUT, and, edge-triggered, are
 * looked at anew), and keeps the nearest in due_ms, which bounds the sleep
 * that follows it under the same lock.  A deadline, once set, is never
 * moved, and only comes nearer: read before the sleep, it bounds it, so no
 * wakeup is lost.  A kernel event on a WATCH member (its TCP socket,
 * EPOLLOUT included, once declined) also makes an edge-triggered member
 * looked at anew.
 *
 * Nested instances.  An instance of ours inside another epoll, or in poll
 * or select, is ready when its own epoll_wait would report something; the
 * kernel cannot tell, on two counts: it counts our registrations (a wake
 * descriptor left readable makes the inner instance readable with nothing
 * to report), and nobody armed the inner instance's connections, so the
 * peer does not write their wake descriptors and new data wakes nobody.
 * So the outer wait (epoll_wait here, poll and select in poll.c) asks
 * smcr_epoll_nested_ready(): the inner instance's SMC members are looked
 * at as its epoll_wait would (nothing is consumed), and when none is ready
 * each is armed, which reads its wake descriptor empty, before the kernel
 * is asked about the inner descriptor: then only the application's
 * registrations can make it readable (or a wake descriptor that another
 * sleeper holds too, which the arm leaves readable: a spurious wake-up,
 * until the inner instance's next epoll_wait takes the edge), and from
 * then on news on an armed
 * connection writes its wake descriptor, which the inner instance holds,
 * which wakes whoever sleeps on it, outer epoll, poll or select.  The arm
 * comes after the look, with the events() number taken before it (as
 * everywhere here and in poll.c), so news in between fails the arm and is
 * looked at again: no wakeup is lost.  The inner instance's quiet members
 * are armed already, and their news is the kernel's to tell: only its hot
 * ones are looked at.  Every instance is ours from
 * epoll_create on, so that one put in another while still empty is
 * known as such when connections of ours join it later.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include "fdtable.h"
#include "readiness.h"
#include "readiness_priv.h"
#include "real.h"
#include "smc_sock.h"
#include "smc_transport.h"
#include "spin.h"

/* Our registrations' data: "SMC" in the top bytes, the kind, the descriptor. */
#define TAG_MAGIC	0x534d430000000000ull
#define TAG_MASK	0xffffff0000000000ull
#define TAG_SOCK	0u
#define TAG_WAKE	1u
#define TAG_APP		2u      /* the application's registration, its data held here */

static uint64_t tag(int fd, unsigned int kind)
{
	return TAG_MAGIC | (uint64_t)kind << 32 | (uint32_t)fd;
}

/* Whether the application's data would be taken for one of our tags. */
static bool looks_ours(epoll_data_t data)
{
	return (data.u64 & TAG_MASK) == TAG_MAGIC;
}

/* Whether an epoll_ctl is ours to carry out: it adds a member. */
static bool adds_member(int op, int fd, const struct epoll_event *event)
{
	return op == EPOLL_CTL_ADD &&
	       (smcr_regime_of(fd) != REG_PLAIN || (event && looks_ours(event->data)));
}

/*
 * A set of more members than this keeps those with nothing to say quiet
 * (see the top); in one of at most this many every member is looked at
 * every time.
 */
#define SMALL_SET	64
/* Looks in a row with nothing to report after which a member may go quiet. */
#define QUIET_AFTER	256

struct member {
	int fd;
	uint32_t events;        /* the application's */
	epoll_data_t data;      /* the application's */
	enum regime regime;     /* what the kernel holds for it */
	int wake_fd;            /* registered in the SMC regime, or -1 */
	bool counted;           /* among wake_fd's sleepers: armed, not looked at since */
	bool disabled;          /* EPOLLONESHOT: reported, not re-armed yet */
	bool dormant;           /* EPOLL_CTL_DEL'd: ours stay in the kernel for the next ADD,
				   disabled meanwhile */
	bool edge_seen;         /* EPOLLET: edge holds the events() last looked at */
	uint32_t edge;
	bool signalled;         /* the wake descriptor (NESTED: the instance) was seen readable */
	uint32_t round;         /* the last epoll_wait that reported it */
	uint32_t since;         /* events() taken before a spin */
	int at;                 /* where it is in members: hot below hot, quiet from it */
	uint32_t looked;        /* events() taken before its last look */
	uint32_t idle;          /* looks in a row, in a large set, with nothing to report */
};

/*
 * Whether m counts among its wake descriptor's sleepers (fdtable.h): from
 * before an arm (for a sleep, or going quiet) until it is looked at
 * again, or leaves the kernel's set.  Meanwhile only the kernel's edge
 * brings its news; before and after, a look does, and nobody can take it
 * away.  Only m's own count is ever taken off.
 */
static void count_sleeper(struct member *m, bool counts)
{
	counts = counts && m->wake_fd >= 0;
	if (counts != m->counted)
		smcr_fd_sleepers_add(m->wake_fd, counts ? 1 : -1);
	m->counted = counts;
}

struct smcr_epoll {
	_Atomic unsigned int refs;
	pthread_mutex_t lock;
	int fd;                 /* a descriptor naming the instance: the last used */
	struct member **members; /* the hot ones first, [0, hot); then the quiet ones */
	int count, cap, hot;
	struct member **by_fd;  /* members by descriptor, for the kernel's events */
	int by_fd_cap;
	unsigned int forks;     /* the forks it has seen (forks below) */
	uint32_t round;
	int scan_from;          /* where the next scan starts: fairness */
	int due_ms;             /* the last collect: ms until a member's Proposal is due
				   (-1: none), which the sleep must not outlast */
	struct smcr_spin spin;
	struct smcr_epoll *prev, *next;
};

static pthread_mutex_t instances_lock = PTHREAD_MUTEX_INITIALIZER;
static struct smcr_epoll *instances;

/*
 * Forks this process came out of: a child looks at every member anew
 * (its RDMA connections, say, are lost to it: smc_transport.h).  Written
 * by the child's one thread, before any other runs.
 */
static unsigned int forks;

void smcr_readiness_forked(void)
{
	forks++;
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
	for (int i = 0; i < ep->count; i++) {
		count_sleeper(ep->members[i], false);
		free(ep->members[i]);
	}
	free(ep->members);
	free(ep->by_fd);
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
	ep->due_ms = -1;
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
	return fd >= 0 && fd < ep->by_fd_cap ? ep->by_fd[fd] : NULL;
}

static void place(struct smcr_epoll *ep, int i, struct member *m)
{
	ep->members[i] = m;
	m->at = i;
}

static void swap_places(struct smcr_epoll *ep, int i, int j)
{
	struct member *m = ep->members[i];

	place(ep, i, ep->members[j]);
	place(ep, j, m);
}

/* m is looked at from the next collect on, whatever it was (see the top). */
static void heat(struct smcr_epoll *ep, struct member *m)
{
	m->idle = 0;
	if (m->at >= ep->hot)
		swap_places(ep, m->at, ep->hot++);
}

static void heat_all(struct smcr_epoll *ep)
{
	while (ep->hot < ep->count)
		heat(ep, ep->members[ep->hot]);
}

/* Takes m, calloc'd, in; hot.  False if there is no memory for it. */
static bool add(struct smcr_epoll *ep, struct member *m)
{
	if (m->fd >= ep->by_fd_cap) {
		int cap = m->fd * 2 + 64;
		struct member **by_fd = reallocarray(ep->by_fd, (size_t)cap, sizeof(*by_fd));

		if (!by_fd)
			return false;
		for (int i = ep->by_fd_cap; i < cap; i++)
			by_fd[i] = NULL;
		ep->by_fd = by_fd;
		ep->by_fd_cap = cap;
	}
	if (ep->count == ep->cap) {
		struct member **members = reallocarray(ep->members, (size_t)ep->cap * 2 + 8,
						       sizeof(*members));

		if (!members)
			return false;
		ep->members = members;
		ep->cap = ep->cap * 2 + 8;
	}
	ep->by_fd[m->fd] = m;
	place(ep, ep->count++, m);
	heat(ep, m);
	return true;
}

/* m's wake descriptor leaves the kernel's set. */
static void release_wake(struct smcr_epoll *ep, struct member *m)
{
	count_sleeper(m, false);
	REAL(epoll_ctl)(ep->fd, EPOLL_CTL_DEL, m->wake_fd, NULL);
	m->wake_fd = -1;
}

static void drop(struct smcr_epoll *ep, struct member *m)
{
	if (m->at < ep->hot)            /* the last hot one takes its place */
		swap_places(ep, m->at, --ep->hot);
	place(ep, m->at, ep->members[--ep->count]);
	ep->by_fd[m->fd] = NULL;
	free(m);
	/* a small set has no quiet member (see the top) */
	if (ep->count <= SMALL_SET)
		heat_all(ep);
}

/*
 * The kernel's registration of m's wake descriptor.  Edge-triggered: it
 * stays readable until the next arm reads it, or for good while another
 * sleeper holds it too (smcr_sock_arm), and level-triggered the kernel
 * would hand it back at every epoll_wait meanwhile, for nothing (each
 * write is an edge).
 */
static struct epoll_event wake_event(const struct member *m)
{
	return (struct epoll_event){ .events = EPOLLIN | EPOLLET | (m->events & EPOLLEXCLUSIVE),
				     .data.u64 = tag(m->fd, TAG_WAKE) };
}

/* Gives the kernel the registration of regime to for m; false if it refused. */
static bool apply(struct smcr_epoll *ep, struct member *m, enum regime to)
{
	struct epoll_event ev = { .data.u64 = tag(m->fd, TAG_SOCK) };
	int op = m->regime == REG_NONE ? EPOLL_CTL_ADD : EPOLL_CTL_MOD;

	switch (to) {
	case REG_PLAIN:
		ev.events = m->disabled ? 0 : m->events;
		if (op == EPOLL_CTL_MOD)
			ev.events &= ~EPOLLEXCLUSIVE;   /* for EPOLL_CTL_ADD only */
		ev.data = m->data;
		if (looks_ours(m->data))
			ev.data.u64 = tag(m->fd, TAG_APP);
		break;
	case REG_WATCH:
	case REG_RESET:
		ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
		break;
	case REG_NESTED:
		ev.events = EPOLLIN | EPOLLET;
		break;
	default:                /* SMC: the stream's end, or LEAVE (conn/smc_leave.h) */
		ev.events = EPOLLIN | EPOLLRDHUP | EPOLLET;
		break;
	}
	if (REAL(epoll_ctl)(ep->fd, op, m->fd, &ev) != 0)
		return false;
	if (to == REG_SMC && m->wake_fd < 0) {
		int wake = smcr_sock_wake_fd(smcr_fd_sock(m->fd));
		struct epoll_event wev = wake_event(m);

		if (REAL(epoll_ctl)(ep->fd, EPOLL_CTL_ADD, wake, &wev) == 0)
			m->wake_fd = wake;
	} else if (to != REG_SMC && m->wake_fd >= 0) {
		release_wake(ep, m);
	}
	m->regime = to;
	m->edge_seen = false;
	return true;
}

/* Takes ours out of the kernel and forgets m; the kernel's word on the socket's. */
static int unregister(struct smcr_epoll *ep, struct member *m)
{
	int rc;

	/* the wake descriptor's registration would outlive the socket's */
	if (m->wake_fd >= 0)
		release_wake(ep, m);
	rc = REAL(epoll_ctl)(ep->fd, EPOLL_CTL_DEL, m->fd, NULL);
	drop(ep, m);
	return rc;
}

/* Brings the kernel's registration of m up to date; false if m is gone (PLAIN). */
static bool sync_member(struct smcr_epoll *ep, struct member *m)
{
	enum regime to;
	int saved_errno = errno;

	if (m->regime == REG_PLAIN)
		return true;    /* the application's, under our tag: the kernel's to tell */
	to = smcr_regime_of(m->fd);
	if (m->dormant && to != m->regime) {
		unregister(ep, m);      /* the application has no registration to hand back */
		errno = saved_errno;
		return false;
	}
	if (to != m->regime)
		apply(ep, m, to);
	errno = saved_errno;
	if (to != REG_PLAIN || looks_ours(m->data))
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
		if (m) {
			heat(ep, m);
			sync_member(ep, m);
		}
		pthread_mutex_unlock(&ep->lock);
	}
	pthread_mutex_unlock(&instances_lock);
}

/* Runs each(ep, fd, arg) on every instance, under its lock; errno is kept. */
static void every_instance(void (*each)(struct smcr_epoll *ep, int fd, int arg), int fd, int arg)
{
	int saved_errno = errno;

	if (!__atomic_load_n(&instances, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&instances_lock);
	for (struct smcr_epoll *ep = instances; ep; ep = ep->next) {
		pthread_mutex_lock(&ep->lock);
		each(ep, fd, arg);
		pthread_mutex_unlock(&ep->lock);
	}
	pthread_mutex_unlock(&instances_lock);
	errno = saved_errno;
}

static void forget_in(struct smcr_epoll *ep, int fd, int unused)
{
	struct member *m = find(ep, fd);

	(void)unused;
	if (m)
		unregister(ep, m);
}

void smcr_readiness_forget(int fd)
{
	every_instance(forget_in, fd, 0);
}

/*
 * Under ep->lock: epoll_ctl on m, an application registration the kernel
 * holds under our tag (see the top).  The kernel answers; m follows.
 */
static int plain_member_ctl(struct smcr_epoll *ep, struct member *m, int op,
			    const struct epoll_event *event)
{
	struct member was = *m;
	int err;

	switch (op) {
	case EPOLL_CTL_ADD:
		errno = EEXIST;
		return -1;
	case EPOLL_CTL_MOD:
		if (!event) {
			errno = EFAULT;
			return -1;
		}
		m->events = event->events;
		m->data = event->data;
		m->disabled = false;
		if (apply(ep, m, REG_PLAIN)) {
			if (!looks_ours(m->data))
				drop(ep, m);    /* the kernel holds the application's data now */
			return 0;
		}
		err = errno;
		*m = was;
		if (err == ENOENT)
			drop(ep, m);    /* closed since: nothing is registered */
		errno = err;
		return -1;
	case EPOLL_CTL_DEL:
		return unregister(ep, m);
	default:
		errno = EINVAL;
		return -1;
	}
}

/*
 * Under ep->lock: an EPOLL_CTL_ADD of fd, found as the plain member m: m
 * may outlive a close of fd, so the kernel says whether it is there still.
 * Returns true if m was stale and is gone.
 */
static bool stale_plain_member(struct smcr_epoll *ep, struct member *m)
{
	struct epoll_event same = { .events = 0 };

	if (m->regime != REG_PLAIN)
		return false;
	same.data.u64 = tag(m->fd, TAG_APP);
	/* a MOD to what it holds would re-arm it: ask with an ADD taken back */
	if (REAL(epoll_ctl)(ep->fd, EPOLL_CTL_ADD, m->fd, &same) == 0)
		REAL(epoll_ctl)(ep->fd, EPOLL_CTL_DEL, m->fd, NULL);
	else if (errno == EEXIST)
		return false;
	drop(ep, m);
	return true;
}

/*
 * A wake descriptor moved out of the application's way (base/sys.h), from
 * still naming it: the kernel can only drop a registration under the
 * number it was made with, so each instance holding it moves it now.
 */
static void move_wake_in(struct smcr_epoll *ep, int from, int to)
{
	for (int i = 0; i < ep->count; i++) {
		struct member *m = ep->members[i];
		struct epoll_event wev = wake_event(m);
		bool counted = m->counted;

		if (m->wake_fd != from)
			continue;
		release_wake(ep, m);
		m->wake_fd = REAL(epoll_ctl)(ep->fd, EPOLL_CTL_ADD, to, &wev) == 0 ? to : -1;
		count_sleeper(m, counted);
	}
}

void smcr_readiness_fd_moved(int from, int to)
{
	every_instance(move_wake_in, from, to);
}

int smcr_epoll_ctl(int epfd, int op, int fd, struct epoll_event *event)
{
	struct smcr_epoll *ep = smcr_fd_epoll(epfd);
	struct member *m;
	int rc = 0;

	/* no member to find: the lock is not needed to know fd is none */
	if ((!ep || !__atomic_load_n(&ep->count, __ATOMIC_RELAXED)) && !adds_member(op, fd, event))
		return REAL(epoll_ctl)(epfd, op, fd, event);
	if (!ep && !(ep = epoll_of(epfd)))
		return REAL(epoll_ctl)(epfd, op, fd, event);
	pthread_mutex_lock(&ep->lock);
	ep->fd = epfd;
	m = find(ep, fd);
	if (m && op == EPOLL_CTL_ADD && stale_plain_member(ep, m))
		m = NULL;
	if (m && m->regime == REG_PLAIN) {
		rc = plain_member_ctl(ep, m, op, event);
		pthread_mutex_unlock(&ep->lock);
		return rc;
	}
	if (!m && !adds_member(op, fd, event)) {
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
					      .signalled = m->signalled, .at = m->at };
			heat(ep, m);
			break;
		}
		m = calloc(1, sizeof(*m));
		if (m)
			*m = (struct member){ .fd = fd, .events = event->events, .data = event->data,
					      .regime = REG_NONE, .wake_fd = -1 };
		if (!m || !add(ep, m)) {
			free(m);
			errno = ENOMEM;
			rc = -1;
			break;
		}
		if (!apply(ep, m, smcr_regime_of(fd))) {
			int err = errno;
			drop(ep, m);
			errno = err;
			rc = -1;
		} else if (m->regime == REG_PLAIN && !looks_ours(m->data)) {
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
		heat(ep, m);
		break;
	case EPOLL_CTL_DEL:
		/*
		 * Event loops delete and add again all the time (redis's ae, at
		 * every request): an SMC member keeps ours in the kernel, asleep.
		 */
		if (m->regime == REG_SMC) {
			m->dormant = true;
			count_sleeper(m, false);
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

/*
 * Reports the SMC member m if it is ready (and, edge-triggered, has news);
 * true if it had something to report, told now or not for want of room.
 */
static bool look_at(struct smcr_epoll *ep, struct member *m, struct epoll_event *out, int *n,
		    int max)
{
	struct smcr_sock *sk = smcr_fd_sock(m->fd);
	/* taken before looking (smc_transport.h); a reset one has no transport, one edge */
	uint32_t now = m->regime == REG_SMC ? smcr_sock_events(sk) : 0;
	uint32_t ready;

	m->looked = now;
	if (m->disabled || !edge_moved(m, now))
		return false;
	ready = poll_to_epoll(smcr_sock_poll(sk)) & (m->events | EPOLLERR | EPOLLHUP);
	/* an edge that says nothing new is spent; one not told for want of room is not */
	if (report(ep, m, ready, out, n, max) || !ready) {
		m->edge = now;
		m->edge_seen = true;
	}
	return ready;
}

/* ---- nested instances (see the top) ---- */

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
			count_sleeper(m, true);
			if (smcr_sock_arm(sk, since, true, 1)) {
				m->signalled = false;
				return true;
			}
		}
	case REG_RESET:
		return !member_ready(m, 0);
	case REG_NESTED:
		return m->disabled || !smcr_epoll_nested_ready(m->fd);
	default:
		return true;    /* the kernel's to tell */
	}
}

bool smcr_epoll_nested_ready(int fd)
{
	struct smcr_epoll *ep = smcr_fd_epoll(fd);
	struct pollfd p = { .fd = fd, .events = POLLIN };
	bool ready = false;

	if (ep) {
		smcr_epoll_get(ep);
		pthread_mutex_lock(&ep->lock);
		/* a quiet one is armed: its news makes the instance readable */
		for (int i = 0; i < ep->hot && !ready; i++)
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

bool smcr_epoll_has_members(int fd)
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
	ready = smcr_epoll_nested_ready(m->fd) ? EPOLLIN : 0;
	if (report(ep, m, ready, out, n, max) || !(ready & m->events)) {
		m->edge_seen = true;
		m->signalled = false;
	}
}

/*
 * Under ep->lock: a WATCH member m that asks EPOLLOUT of a server in its
 * exchange: driven to its Decline if its Proposal is overdue, its deadline
 * kept in ep->due_ms if nearer (see the top).
 */
static void drive_due(struct smcr_epoll *ep, struct member *m)
{
	struct smcr_sock *sk = smcr_fd_sock(m->fd);
	int left;

	if (!sk || m->disabled || !(m->events & EPOLLOUT) || (left = smcr_sock_want_send(sk)) < 0)
		return;
	if (left == 0) {
		smcr_drive(m->fd);
		m->edge_seen = false;
	} else if (ep->due_ms < 0 || left < ep->due_ms) {
		ep->due_ms = left;
	}
}

/*
 * Under ep->lock, in a large set: m, looked at with nothing to report
 * QUIET_AFTER times in a row, goes quiet, armed with the events() taken
 * before its last look (see the top); news since then keeps it hot.
 */
static void quieten(struct smcr_epoll *ep, struct member *m)
{
	struct smcr_sock *sk = smcr_fd_sock(m->fd);

	if (m->regime != REG_SMC || m->wake_fd < 0 || !sk || smcr_regime_of(m->fd) != REG_SMC)
		return;         /* another regime's readiness comes without its wake descriptor */
	/* a disabled one is looked at again after EPOLL_CTL_MOD or ADD only: no arm */
	if (!m->disabled) {
		count_sleeper(m, true);
		if (!smcr_sock_arm(sk, m->looked, m->signalled, 1)) {
			m->idle = 0;
			return;
		}
		m->signalled = false;
	}
	swap_places(ep, m->at, --ep->hot);
}

/*
 * Under ep->lock: out[0..k) holds what the kernel reported.  Passes the
 * application's events on, acts on ours, then adds every hot member that
 * is ready; in a large set, the members idle long enough go quiet.
 * Returns the number of events in out; *moved is set when a connection
 * changed regime (the kernel may have news for it at once).
 */
static int collect(struct smcr_epoll *ep, struct epoll_event *out, int k, int max, bool *moved)
{
	bool large = ep->count > SMALL_SET, idle = false;
	int n = 0;

	ep->round++;
	if (ep->forks != forks) {
		ep->forks = forks;
		heat_all(ep);
	}
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
		heat(ep, m);
		if ((ev.data.u64 >> 32 & 0xff) == TAG_WAKE) {
			m->signalled = true;
			continue;
		}
		if ((ev.data.u64 >> 32 & 0xff) == TAG_APP) {
			if (m->regime == REG_PLAIN)
				out[n++] = (struct epoll_event){ .events = ev.events, .data = m->data };
			continue;
		}
		switch (m->regime) {
		case REG_WATCH:
			smcr_drive(m->fd);
			m->edge_seen = false;   /* the kernel's edge: news to look at */
			/* not connected, or a connect() that failed: the kernel's word */
			if (smcr_fd_get(m->fd) == SMCR_FD_TCP ||
			    smcr_fd_get(m->fd) == SMCR_FD_TCP_CONNECTING)
				report(ep, m, ev.events, out, &n, max);
			break;
		case REG_SMC:
			smcr_sock_tcp_news(smcr_fd_sock(m->fd));
			break;
		case REG_NESTED:
			m->signalled = true;
			break;
		case REG_RESET:
			m->edge_seen = false;   /* the reply to our LEAVE came, say: a look */
			break;
		default:
			break;
		}
	}
	for (int i = 0; i < ep->hot; i++) {
		enum regime was = ep->members[i]->regime;

		if (!sync_member(ep, ep->members[i])) {
			*moved = true;
			i--;            /* dropped: the last hot member took its place */
		} else if (ep->members[i]->regime != was) {
			*moved = true;
		}
	}
	ep->due_ms = -1;
	for (int i = 0; i < ep->hot; i++) {
		struct member *m = ep->members[(ep->scan_from + i) % ep->hot];
		bool said = false;

		count_sleeper(m, false);        /* looked at from now on */
		if (m->regime == REG_WATCH)
			drive_due(ep, m);
		/*
		 * one in its CLC exchange: a client is writable until a send
		 * blocks, a server once it declined
		 */
		if (m->regime == REG_SMC || m->regime == REG_RESET ||
		    (m->regime == REG_WATCH && smcr_fd_sock(m->fd))) {
			said = look_at(ep, m, out, &n, max);
			/* one that left SMC mid-stream (its peer's LEAVE) is the kernel's to watch */
			*moved |= m->regime == REG_SMC && smcr_regime_of(m->fd) != REG_SMC;
		} else if (m->regime == REG_NESTED)
			look_at_nested(ep, m, out, &n, max);
		if (large && m->regime == REG_SMC) {
			m->idle = said ? 0 : m->idle + 1;
			idle |= m->idle >= QUIET_AFTER;
		}
	}
	if (ep->hot)
		ep->scan_from = (ep->scan_from + 1) % ep->hot;
	/* backwards: one that goes quiet swaps places with a hot one already seen */
	for (int i = ep->hot - 1; idle && i >= 0 && ep->count > SMALL_SET; i--)
		if (ep->members[i]->idle >= QUIET_AFTER)
			quieten(ep, ep->members[i]);
	return n;
}

/* Whether a hot SMC member of ep (under its lock) moved past its since (a spin's turn). */
static bool members_moved(void *arg)
{
	struct smcr_epoll *ep = arg;

	for (int i = 0; i < ep->hot; i++) {
		struct member *m = ep->members[i];

		if (m->regime != REG_SMC || m->disabled)
			continue;
		smcr_sock_collect(smcr_fd_sock(m->fd));
		if (smcr_sock_events(smcr_fd_sock(m->fd)) != m->since)
			return true;
	}
	return false;
}

/* Under ep->lock: spins while spinning pays; true if a hot SMC member had news. */
static bool spin(struct smcr_epoll *ep)
{
	struct smcr_spin_how how = { 0 };

	for (int i = 0; i < ep->hot; i++) {
		struct member *m = ep->members[i];
		if (m->regime == REG_SMC && !m->disabled) {
			m->since = smcr_sock_events(smcr_fd_sock(m->fd));
			smcr_spin_join(&how, smcr_sock_spin_how(smcr_fd_sock(m->fd)));
		}
	}
	return smcr_spin_for(&ep->spin, how, members_moved, ep);
}

/* Under ep->lock: arms every hot SMC member (the quiet are); false if one is ready after all. */
static bool arm(struct smcr_epoll *ep)
{
	for (int i = 0; i < ep->hot; i++) {
		struct member *m = ep->members[i];
		struct smcr_sock *sk = smcr_fd_sock(m->fd);

		if (m->regime == REG_NESTED && !m->dormant) {
			/* arms the inner instance's connections, whatever the answer */
			bool ready = smcr_epoll_nested_ready(m->fd);

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
		count_sleeper(m, true);
		if (!smcr_sock_arm(sk, since, m->signalled, 1))
			return false;
		m->signalled = false;
	}
	return true;
}

int smcr_epoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout_ms,
		    const sigset_t *sigmask)
{
	struct smcr_epoll *ep = smcr_fd_epoll(epfd);
	uint64_t deadline = smc_deadline_after(timeout_ms);
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
		if (smcr_wait_remaining(timeout_ms, deadline) == 0) {
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
			int sleep_ms = smcr_wait_remaining(timeout_ms, deadline);

			if (ep->due_ms >= 0 && (sleep_ms < 0 || ep->due_ms < sleep_ms))
				sleep_ms = ep->due_ms;
			pthread_mutex_unlock(&ep->lock);
			k = REAL(epoll_pwait)(epfd, events, maxevents, sleep_ms, sigmask);
			if (k < 0)
				return k;
			pthread_mutex_lock(&ep->lock);
			n = collect(ep, events, k, maxevents, &moved);
			asleep = true;
		}
		pthread_mutex_unlock(&ep->lock);
		if (n > 0)
			return n;
		if (asleep && smcr_wait_remaining(timeout_ms, deadline) == 0 && timeout_ms > 0)
			return 0;
	}
}
