/*
 * Unit tests of readiness (libsmcr/shim/epoll.c, poll.c,
 * readiness_common.c), called through readiness.h as the interposers of
 * libsmcr/entry/preload_wait.c call it: epoll's level-triggered,
 * EPOLLET, EPOLLONESHOT, DEL, MOD, EPOLLEXCLUSIVE and close; a sleeper
 * woken by news from another thread, and timeouts; poll's and select's
 * bits beside a pipe; an epoll instance nested in another, or in poll; a
 * server's wait for POLLOUT ending at its Proposal's deadline; a large
 * set, whose idle members go quiet and come back for every change that
 * can concern them.
 *
 * The socket layer is faked at link time: this file defines every
 * smcr_sock_* function the shim objects need (nm -u), and
 * smcr_handshake_settle, so that neither libsmcr_layer_socket.a nor the
 * shim's handshake.o, which needs it, is linked (tests/unit/CMakeLists.txt).
 * A fake connection is a struct smcr_sock with a phase, the POLL bits
 * smcr_sock_poll() returns, an events() number and an eventfd as its wake
 * descriptor: news() changes the bits, moves events() and, when the
 * connection is armed, writes the eventfd, as a peer's CDC does
 * (smc_transport.h); local() is a change of this process's own, as the
 * transport's wake() tells it, which writes the eventfd armed or not;
 * arm() reads the eventfd empty, arms, and fails if events() moved since
 * the caller looked.  Each smcr_sock_poll() is counted, to see which
 * members a wait looked at.  It sits in the descriptor table
 * on one end of a real loopback TCP connection, so that the kernel's epoll
 * takes the descriptor, and the table holds it through the references
 * libsmcr registers itself (smcr_descriptors_init).
 *
 * Waiting is made deterministic without sleeps: the fake never spins
 * (spin_how 0 ns), so a wait that finds nothing arms and sleeps at once;
 * the thread that brings news first waits until the waiter sleeps in the
 * kernel (/proc/self/task/TID: state S in ppoll or epoll_pwait), so the
 * news can only reach it through the wake descriptor.  Timeouts are
 * failure guards only.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "descriptors.h"
#include "fdtable.h"
#include "handshake.h"
#include "readiness.h"
#include "smc_sock.h"

/* Only against hanging: a wait that lasts this long has failed. */
#define GUARD_MS 10000
#define SHORT_MS 50

/* ---- the fake socket layer ---- */

struct smcr_sock {
	_Atomic int phase;              /* enum smcr_sock_phase */
	_Atomic unsigned int mask;      /* what smcr_sock_poll() says on SMC */
	_Atomic bool left_reads_ours;    /* on TCP, reads still ours: our LEAVE's reply
					    to come, or our RMB not read out */
	_Atomic unsigned int setup_mask; /* and before: POLLOUT for a client none of whose
					    sends found the CLC exchange unfinished */
	_Atomic uint32_t events;
	_Atomic bool armed;             /* as the real one, armed from the start */
	_Atomic int refs;               /* the descriptor table's */
	_Atomic int tcp_ended;          /* smcr_sock_tcp_news() calls */
	_Atomic int polls;              /* smcr_sock_poll() calls: looks */
	int wake_fd;
	bool server;                    /* in the exchange: its Proposal is due once a
					   write is wanted (smcr_sock_want_send) */
	_Atomic int64_t due_ns;         /* then: when (0: not yet asked) */
	_Atomic bool declined;          /* settled past it: writes go on TCP */
};

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void (*phase_changed)(int fd);

struct smcr_sock *smcr_sock_get(struct smcr_sock *sk)
{
	atomic_fetch_add(&sk->refs, 1);
	return sk;
}

void smcr_sock_put(struct smcr_sock *sk, int fd)
{
	(void)fd;
	atomic_fetch_sub(&sk->refs, 1);
}

void smcr_sock_on_phase_change(void (*changed)(int fd))
{
	phase_changed = changed;
}

enum smcr_sock_phase smcr_sock_phase(struct smcr_sock *sk)
{
	return atomic_load(&sk->phase);
}

/* As the real one: a server driven past its Proposal's deadline declines, writable on TCP. */
enum smcr_sock_phase smcr_sock_settle(struct smcr_sock *sk, int fd, bool may_wait)
{
	int64_t due = atomic_load(&sk->due_ns);

	(void)fd;
	(void)may_wait;
	if (sk->server && due && now_ns() >= due && !atomic_exchange(&sk->declined, true))
		atomic_store(&sk->setup_mask, POLLOUT);
	return atomic_load(&sk->phase);
}

/* The Proposal's deadline, SHORT_MS from the first ask, as smc_setup_want_send's. */
int smcr_sock_want_send(struct smcr_sock *sk)
{
	int64_t due = 0, left;

	if (!sk->server || atomic_load(&sk->declined))
		return -1;
	atomic_compare_exchange_strong(&sk->due_ns, &due, now_ns() + SHORT_MS * 1000000ll);
	left = atomic_load(&sk->due_ns) - now_ns();
	return left > 0 ? (int)((left + 999999) / 1000000) : 0;
}

bool smcr_sock_writes_tcp(struct smcr_sock *sk)
{
	return atomic_load(&sk->declined);
}

enum smcr_fd_state smcr_handshake_settle(int fd)
{
	return smcr_fd_get(fd);
}

unsigned int smcr_sock_poll(struct smcr_sock *sk)
{
	atomic_fetch_add(&sk->polls, 1);
	return atomic_load(&sk->phase) < SMCR_SOCK_SMC ? atomic_load(&sk->setup_mask)
						       : atomic_load(&sk->mask);
}

bool smcr_sock_left_reads_ours(struct smcr_sock *sk)
{
	return atomic_load(&sk->left_reads_ours);
}

uint32_t smcr_sock_events(struct smcr_sock *sk)
{
	return atomic_load(&sk->events);
}

void smcr_sock_collect(struct smcr_sock *sk)
{
	(void)sk;       /* events() moves by itself, as over shared memory */
}

struct smcr_spin_how smcr_sock_spin_how(struct smcr_sock *sk)
{
	(void)sk;
	return (struct smcr_spin_how){ .ns = 0 };       /* sleep at once: see the top */
}

bool smcr_sock_arm(struct smcr_sock *sk, uint32_t since, bool signalled, uint32_t own)
{
	uint64_t count;
	int saved_errno = errno;

	/* runs on waiter threads too: no cmocka assertion here */
	(void)signalled;        /* the fake reads the eventfd empty every time it may */
	if (smcr_fd_sleepers(sk->wake_fd) <= own &&
	    read(sk->wake_fd, &count, sizeof(count)) < 0 && errno != EAGAIN)
		abort();
	errno = saved_errno;
	atomic_store(&sk->armed, true);
	return atomic_load(&sk->events) == since;
}

int smcr_sock_wake_fd(struct smcr_sock *sk)
{
	return sk->wake_fd;
}

/* What a peer's CDC does: the state changes, events() moves, an armed waiter is woken. */
static void news(struct smcr_sock *sk, unsigned int mask)
{
	atomic_store(&sk->mask, mask);
	atomic_fetch_add(&sk->events, 1);
	if (atomic_exchange(&sk->armed, false) && eventfd_write(sk->wake_fd, 1) != 0)
		abort();
}

/* What the transport's wake() does for a change of this process's own (shutdown, say). */
static void local(struct smcr_sock *sk, unsigned int mask)
{
	atomic_store(&sk->mask, mask);
	atomic_fetch_add(&sk->events, 1);
	if (eventfd_write(sk->wake_fd, 1) != 0)
		abort();
}

void smcr_sock_tcp_news(struct smcr_sock *sk)
{
	atomic_fetch_add(&sk->tcp_ended, 1);
	news(sk, POLLIN | POLLRDHUP | POLLHUP);         /* the peer is gone: reading ended */
}

/* ---- descriptors ---- */

/* A fake connection on fd, one end of a loopback TCP connection whose other end is peer. */
struct conn {
	int fd, peer;
	struct smcr_sock *sk;
};

static void tcp_pair(int *client, int *server)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(lfd, 1), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&a, &len), 0);
	*client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(connect(*client, (struct sockaddr *)&a, sizeof(a)), 0);
	*server = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	assert_true(*server >= 0);
	close(lfd);
}

static struct conn conn_open(enum smcr_sock_phase phase, unsigned int mask)
{
	struct conn c;

	c.sk = calloc(1, sizeof(*c.sk));
	assert_non_null(c.sk);
	atomic_init(&c.sk->phase, phase);
	atomic_init(&c.sk->mask, mask);
	atomic_init(&c.sk->armed, true);
	atomic_init(&c.sk->refs, 1);    /* handed to the table */
	c.sk->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	assert_true(c.sk->wake_fd >= 0);
	tcp_pair(&c.fd, &c.peer);
	assert_true(smcr_fd_set(c.fd, SMCR_FD_TCP_CLIENT));
	assert_true(smcr_fd_set_sock(c.fd, c.sk));
	return c;
}

/* As close() under the preload: the table forgets fd (and drops its reference) first. */
static void conn_close(struct conn *c)
{
	smcr_fd_forget(c->fd);
	assert_int_equal(atomic_load(&c->sk->refs), 0);
	close(c->fd);
	close(c->peer);
	close(c->sk->wake_fd);
	free(c->sk);
}

/* An epoll instance, as epoll_create1() under the preload makes it. */
static int ep_new(void)
{
	int ep = smcr_epoll_created(epoll_create1(EPOLL_CLOEXEC));

	assert_true(ep >= 0);
	return ep;
}

static void ep_close(int ep)
{
	smcr_fd_forget(ep);
	close(ep);
}

static int ep_ctl(int ep, int op, int fd, uint32_t events, uint64_t data)
{
	struct epoll_event ev = { .events = events, .data.u64 = data };

	return smcr_epoll_ctl(ep, op, fd, &ev);
}

/* epoll_wait() on ep, whose one event must be data's: its events, or 0 when none came. */
static uint32_t ep_one(int ep, uint64_t data, int timeout_ms)
{
	struct epoll_event out[4];
	int n = smcr_epoll_wait(ep, out, 4, timeout_ms, NULL);

	assert_true(n == 0 || n == 1);
	if (!n)
		return 0;
	assert_int_equal(out[0].data.u64, data);
	return out[0].events;
}

/* The events of data's entry among n in out; 0 when it is not there. */
static uint32_t events_of(const struct epoll_event *out, int n, uint64_t data)
{
	for (int i = 0; i < n; i++)
		if (out[i].data.u64 == data)
			return out[i].events;
	return 0;
}

static void pipe_pair(int p[2])
{
	assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- epoll ---- */

#define DATA_A 0x1122334455667788ull
#define DATA_B 0x8877665544332211ull

/* An epoll instance holding one fake connection, added with events and DATA_A. */
struct single {
	struct conn c;
	int ep;
};

static struct single single_open(enum smcr_sock_phase phase, unsigned int mask, uint32_t events)
{
	struct single one = { .c = conn_open(phase, mask), .ep = ep_new() };

	assert_int_equal(ep_ctl(one.ep, EPOLL_CTL_ADD, one.c.fd, events, DATA_A), 0);
	return one;
}

static void single_close(struct single *one)
{
	ep_close(one->ep);
	conn_close(&one->c);
}

static void epoll_level_triggered(void **state)
{
	struct conn c = conn_open(SMCR_SOCK_SMC, POLLIN | POLLOUT);
	struct epoll_event out[4];
	int ep = ep_new(), p[2];

	(void)state;
	pipe_pair(p);
	assert_int_equal(write(p[1], "x", 1), 1);
	assert_int_equal(ep_ctl(ep, EPOLL_CTL_ADD, c.fd, EPOLLIN, DATA_A), 0);
	assert_int_equal(ep_ctl(ep, EPOLL_CTL_ADD, p[0], EPOLLIN, DATA_B), 0);
	/* told at every call while ready, beside the kernel's own descriptor */
	for (int i = 0; i < 3; i++) {
		assert_int_equal(smcr_epoll_wait(ep, out, 4, 0, NULL), 2);
		assert_int_equal(events_of(out, 2, DATA_A), EPOLLIN);
		assert_int_equal(events_of(out, 2, DATA_B), EPOLLIN);
	}
	news(c.sk, POLLOUT);    /* no longer readable: only the pipe */
	assert_int_equal(smcr_epoll_wait(ep, out, 4, 0, NULL), 1);
	assert_int_equal(events_of(out, 1, DATA_B), EPOLLIN);
	ep_close(ep);
	close(p[0]);
	close(p[1]);
	conn_close(&c);
}

static void epoll_edge_triggered(void **state)
{
	struct single one = single_open(SMCR_SOCK_SMC, POLLIN, EPOLLIN | EPOLLET);

	(void)state;
	assert_int_equal(ep_one(one.ep, DATA_A, 0), EPOLLIN);
	/* still readable, but nothing new */
	assert_int_equal(ep_one(one.ep, DATA_A, 0), 0);
	assert_int_equal(ep_one(one.ep, DATA_A, 0), 0);
	news(one.c.sk, POLLIN);
	assert_int_equal(ep_one(one.ep, DATA_A, 0), EPOLLIN);
	assert_int_equal(ep_one(one.ep, DATA_A, 0), 0);
	single_close(&one);
}

static void epoll_oneshot(void **state)
{
	struct single one = single_open(SMCR_SOCK_SMC, POLLIN, EPOLLIN | EPOLLONESHOT);

	(void)state;
	assert_int_equal(ep_one(one.ep, DATA_A, 0), EPOLLIN);
	assert_int_equal(ep_one(one.ep, DATA_A, 0), 0);
	news(one.c.sk, POLLIN);     /* news does not re-arm it */
	assert_int_equal(ep_one(one.ep, DATA_A, 0), 0);
	assert_int_equal(ep_ctl(one.ep, EPOLL_CTL_MOD, one.c.fd, EPOLLIN | EPOLLONESHOT, DATA_B), 0);
	assert_int_equal(ep_one(one.ep, DATA_B, 0), EPOLLIN);
	assert_int_equal(ep_one(one.ep, DATA_B, 0), 0);
	single_close(&one);
}

static void epoll_mod_changes_events(void **state)
{
	struct single one = single_open(SMCR_SOCK_SMC, POLLIN, EPOLLOUT);

	(void)state;
	assert_int_equal(ep_one(one.ep, DATA_A, 0), 0);
	assert_int_equal(ep_ctl(one.ep, EPOLL_CTL_MOD, one.c.fd, EPOLLIN | EPOLLOUT, DATA_B), 0);
	assert_int_equal(ep_one(one.ep, DATA_B, 0), EPOLLIN);
	news(one.c.sk, POLLIN | POLLOUT);
	assert_int_equal(ep_one(one.ep, DATA_B, 0), EPOLLIN | EPOLLOUT);
	assert_int_equal(ep_ctl(one.ep, EPOLL_CTL_MOD, one.c.fd, EPOLLOUT, DATA_A), 0);
	assert_int_equal(ep_one(one.ep, DATA_A, 0), EPOLLOUT);
	single_close(&one);
}

static void epoll_del_then_add(void **state)
{
	struct single one = single_open(SMCR_SOCK_SMC, POLLIN, EPOLLIN);

	(void)state;
	assert_int_equal(ep_one(one.ep, DATA_A, 0), EPOLLIN);
	assert_int_equal(smcr_epoll_ctl(one.ep, EPOLL_CTL_DEL, one.c.fd, NULL), 0);
	assert_int_equal(ep_one(one.ep, DATA_A, 0), 0);
	/* a hang-up is told whatever the events asked, but not to a deleted member */
	news(one.c.sk, POLLIN | POLLHUP);
	assert_int_equal(ep_one(one.ep, DATA_A, 0), 0);
	/* gone for the application, as in the kernel */
	errno = 0;
	assert_int_equal(ep_ctl(one.ep, EPOLL_CTL_MOD, one.c.fd, EPOLLIN, DATA_A), -1);
	assert_int_equal(errno, ENOENT);
	errno = 0;
	assert_int_equal(smcr_epoll_ctl(one.ep, EPOLL_CTL_DEL, one.c.fd, NULL), -1);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(ep_ctl(one.ep, EPOLL_CTL_ADD, one.c.fd, EPOLLIN, DATA_B), 0);
	assert_int_equal(ep_one(one.ep, DATA_B, 0), EPOLLIN | EPOLLHUP);
	single_close(&one);
}

/*
 * The application's data is opaque: a plain descriptor whose data looks
 * like epoll.c's tag for an SMC member is still the application's.
 */
static void epoll_app_data_that_looks_like_ours(void **state)
{
	struct single one = single_open(SMCR_SOCK_SMC, 0, EPOLLIN);
	uint64_t like_ours = 0x534d430000000000ull | (uint32_t)one.c.fd;
	uint64_t like_wake = 0x534d430100000000ull | (uint32_t)one.c.fd;
	int p[2];

	(void)state;
	pipe_pair(p);
	assert_int_equal(write(p[1], "x", 1), 1);
	assert_int_equal(ep_ctl(one.ep, EPOLL_CTL_ADD, p[0], EPOLLIN | EPOLLONESHOT, like_ours), 0);
	errno = 0;
	assert_int_equal(ep_ctl(one.ep, EPOLL_CTL_ADD, p[0], EPOLLIN, like_ours), -1);
	assert_int_equal(errno, EEXIST);
	assert_int_equal(ep_one(one.ep, like_ours, 0), EPOLLIN);
	assert_int_equal(atomic_load(&one.c.sk->tcp_ended), 0);
	/* the kernel keeps its EPOLLONESHOT; a MOD re-arms it, with other data */
	assert_int_equal(ep_one(one.ep, like_ours, 0), 0);
	assert_int_equal(ep_ctl(one.ep, EPOLL_CTL_MOD, p[0], EPOLLIN, like_wake), 0);
	assert_int_equal(ep_one(one.ep, like_wake, 0), EPOLLIN);
	assert_int_equal(atomic_load(&one.c.sk->tcp_ended), 0);
	/* data that no longer looks like ours goes to the kernel as it is */
	assert_int_equal(ep_ctl(one.ep, EPOLL_CTL_MOD, p[0], EPOLLIN, DATA_B), 0);
	assert_int_equal(ep_one(one.ep, DATA_B, 0), EPOLLIN);
	assert_int_equal(ep_ctl(one.ep, EPOLL_CTL_MOD, p[0], EPOLLIN, like_ours), 0);
	assert_int_equal(smcr_epoll_ctl(one.ep, EPOLL_CTL_DEL, p[0], NULL), 0);
	assert_int_equal(ep_one(one.ep, DATA_A, 0), 0);
	errno = 0;
	assert_int_equal(smcr_epoll_ctl(one.ep, EPOLL_CTL_DEL, p[0], NULL), -1);
	assert_int_equal(errno, ENOENT);
	close(p[0]);
	close(p[1]);
	single_close(&one);
}

/* A registration like_ours whose descriptor was closed is gone, as the kernel's. */
static void epoll_app_data_like_ours_closed(void **state)
{
	struct single one = single_open(SMCR_SOCK_SMC, 0, EPOLLIN);
	uint64_t like_ours = 0x534d430000000000ull | (uint32_t)one.c.fd;
	int p[2], q[2];

	(void)state;
	pipe_pair(p);
	assert_int_equal(ep_ctl(one.ep, EPOLL_CTL_ADD, p[0], EPOLLIN, like_ours), 0);
	close(p[0]);
	close(p[1]);
	errno = 0;
	assert_int_equal(ep_ctl(one.ep, EPOLL_CTL_MOD, p[0], EPOLLIN, like_ours), -1);
	assert_int_equal(errno, EBADF);
	pipe_pair(q);
	assert_int_equal(q[0], p[0]);   /* the number is used again */
	assert_int_equal(write(q[1], "y", 1), 1);
	assert_int_equal(ep_ctl(one.ep, EPOLL_CTL_ADD, q[0], EPOLLIN, like_ours), 0);
	assert_int_equal(ep_one(one.ep, like_ours, 0), EPOLLIN);
	close(q[0]);
	close(q[1]);
	assert_int_equal(ep_one(one.ep, like_ours, 0), 0);
	pipe_pair(q);
	assert_int_equal(ep_ctl(one.ep, EPOLL_CTL_ADD, q[0], EPOLLIN, DATA_B), 0);
	assert_int_equal(write(q[1], "z", 1), 1);
	assert_int_equal(ep_one(one.ep, DATA_B, 0), EPOLLIN);
	close(q[0]);
	close(q[1]);
	single_close(&one);
}

/* Whether the kernel's instance ep holds a registration of fd (ours or the application's). */
static bool kernel_holds(int ep, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN };

	if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == 0) {
		assert_int_equal(epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL), 0);
		return false;
	}
	assert_int_equal(errno, EEXIST);
	return true;
}

/* close() of a member, after add_then_del (a DEL'd member keeps ours in the kernel). */
static void forget_member(bool add_then_del)
{
	struct conn c = conn_open(SMCR_SOCK_SMC, POLLIN);
	int ep = ep_new(), fd = c.fd, wake = c.sk->wake_fd;

	assert_int_equal(ep_ctl(ep, EPOLL_CTL_ADD, fd, EPOLLIN, DATA_A), 0);
	if (add_then_del)
		assert_int_equal(smcr_epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL), 0);
	assert_true(kernel_holds(ep, fd));
	assert_true(kernel_holds(ep, wake));
	smcr_fd_forget(fd);
	assert_int_equal(atomic_load(&c.sk->refs), 0);
	assert_false(kernel_holds(ep, fd));
	assert_false(kernel_holds(ep, wake));
	assert_int_equal(ep_one(ep, DATA_A, 0), 0);
	ep_close(ep);
	conn_close(&c);
}

static void epoll_close_forgets(void **state)
{
	(void)state;
	forget_member(false);
}

static void epoll_close_after_del_forgets(void **state)
{
	(void)state;
	forget_member(true);
}

static void epoll_exclusive_never_modified(void **state)
{
	struct single one = single_open(SMCR_SOCK_SMC, POLLIN, EPOLLIN | EPOLLEXCLUSIVE);
	struct conn d = conn_open(SMCR_SOCK_SMC, POLLIN);

	(void)state;
	errno = 0;
	assert_int_equal(ep_ctl(one.ep, EPOLL_CTL_MOD, one.c.fd, EPOLLIN, DATA_B), -1);
	assert_int_equal(errno, EINVAL);
	/* nor made exclusive by MOD */
	assert_int_equal(ep_ctl(one.ep, EPOLL_CTL_ADD, d.fd, EPOLLIN, DATA_B), 0);
	errno = 0;
	assert_int_equal(ep_ctl(one.ep, EPOLL_CTL_MOD, d.fd, EPOLLIN | EPOLLEXCLUSIVE, DATA_B), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(smcr_epoll_ctl(one.ep, EPOLL_CTL_DEL, d.fd, NULL), 0);
	/* the registration is as it was */
	assert_int_equal(ep_one(one.ep, DATA_A, 0), EPOLLIN);
		conn_close(&d);
	single_close(&one);
}

/* A connection whose CLC exchange is under way is not the application's to see yet. */
static void epoll_member_waits_for_smc(void **state)
{
	struct single one = single_open(SMCR_SOCK_SETUP, POLLIN, EPOLLIN);

	(void)state;
	assert_int_equal(ep_one(one.ep, DATA_A, 0), 0);
	assert_false(kernel_holds(one.ep, one.c.sk->wake_fd));
	/* the socket layer's news of the end of the exchange puts the wake descriptor in */
	atomic_store(&one.c.sk->phase, SMCR_SOCK_SMC);
	phase_changed(one.c.fd);
	assert_true(kernel_holds(one.ep, one.c.sk->wake_fd));
	assert_int_equal(ep_one(one.ep, DATA_A, 0), EPOLLIN);
	single_close(&one);
}

/* An exchange that ended on TCP: the kernel gets the application's registration. */
static void epoll_member_handed_back_on_tcp(void **state)
{
	struct single one = single_open(SMCR_SOCK_SETUP, 0, EPOLLIN);

	(void)state;
	atomic_store(&one.c.sk->phase, SMCR_SOCK_TCP);
	assert_int_equal(ep_one(one.ep, DATA_A, 0), 0);
	assert_int_equal(write(one.c.peer, "x", 1), 1);
	assert_int_equal(ep_one(one.ep, DATA_A, GUARD_MS), EPOLLIN);
	single_close(&one);
}

/* The end of the TCP connection under an SMC member reaches its connection. */
static void epoll_tcp_end_reaches_connection(void **state)
{
	struct single one = single_open(SMCR_SOCK_SMC, 0, EPOLLIN);

	(void)state;
	assert_int_equal(ep_one(one.ep, DATA_A, 0), 0);
	assert_int_equal(atomic_load(&one.c.sk->tcp_ended), 0);
	assert_int_equal(shutdown(one.c.peer, SHUT_WR), 0);
	/* the kernel's RDHUP, edge-triggered: told to the connection once */
	assert_int_equal(ep_one(one.ep, DATA_A, GUARD_MS), EPOLLIN | EPOLLHUP);
	assert_int_equal(atomic_load(&one.c.sk->tcp_ended), 1);
	assert_int_equal(ep_one(one.ep, DATA_A, 0), EPOLLIN | EPOLLHUP);
	assert_int_equal(atomic_load(&one.c.sk->tcp_ended), 1);
	single_close(&one);
}

/* ---- sleeping and waking ---- */

struct waiter {
	pthread_t thread;
	_Atomic pid_t tid;
	int fd;                 /* epoll instance or descriptor to poll */
	int rc;
	uint32_t got;           /* the events or revents told */
	int64_t ms;             /* how long the wait took */
	struct epoll_event ev;
	struct pollfd p;
};

static void *epoll_waiter(void *arg)
{
	struct waiter *w = arg;
	int64_t start = now_ms();

	atomic_store(&w->tid, gettid());
	w->rc = smcr_epoll_wait(w->fd, &w->ev, 1, GUARD_MS, NULL);
	w->got = w->ev.events;
	w->ms = now_ms() - start;
	return NULL;
}

static void *poll_waiter(void *arg)
{
	struct waiter *w = arg;
	int64_t start = now_ms();

	atomic_store(&w->tid, gettid());
	w->p = (struct pollfd){ .fd = w->fd, .events = POLLIN };
	w->rc = smcr_poll(&w->p, 1, GUARD_MS, NULL);
	w->got = (uint16_t)w->p.revents;
	w->ms = now_ms() - start;
	return NULL;
}

/* The first line of the file name of thread tid in /proc, in buf; false if none. */
static bool proc_line(pid_t tid, const char *name, char *buf, int size)
{
	char path[64];
	FILE *f;
	bool ok;

	snprintf(path, sizeof(path), "/proc/self/task/%d/%s", (int)tid, name);
	f = fopen(path, "r");
	if (!f)
		return false;
	ok = fgets(buf, size, f) != NULL;
	fclose(f);
	return ok;
}

/*
 * Whether thread tid sleeps in ppoll or epoll_pwait: only a wait that found
 * nothing and armed does (the looks before it do not wait), so news from
 * now on must wake it.
 */
static bool asleep_in_wait(pid_t tid)
{
	char sys[256], stat[512], *end;
	long nr;

	if (!proc_line(tid, "syscall", sys, sizeof(sys)) ||
	    !proc_line(tid, "stat", stat, sizeof(stat)))
		return false;
	nr = strtol(sys, NULL, 10);     /* "running" reads as 0 */
	end = strrchr(stat, ')');       /* "tid (comm) state ..." */
	return end && end[1] == ' ' && end[2] == 'S' && (nr == SYS_ppoll || nr == SYS_epoll_pwait);
}

static bool wait_asleep(struct waiter *w)
{
	int64_t end = now_ms() + GUARD_MS;
	pid_t tid;

	while (!(tid = atomic_load(&w->tid)) || !asleep_in_wait(tid)) {
		if (now_ms() > end)
			return false;
		sched_yield();
	}
	return true;
}

/*
 * Starts body on w->fd, lets it fall asleep, and brings sk news of
 * readability.  Earlier news, already told, leaves sk disarmed with its
 * wake descriptor written, as after any CDC: only a wait that arms sleeps
 * and is woken.  It must end woken, not by its guard: a look after the
 * timeout would find the news too.
 */
static uint32_t wake_waiter(struct waiter *w, void *(*body)(void *), struct smcr_sock *sk)
{
	news(sk, atomic_load(&sk->mask));
	assert_int_equal(pthread_create(&w->thread, NULL, body, w), 0);
	assert_true(wait_asleep(w));
	news(sk, POLLIN);
	assert_int_equal(pthread_join(w->thread, NULL), 0);
	assert_true(w->ms < GUARD_MS);
	assert_int_equal(w->rc, 1);
	return w->got;
}

static void epoll_wait_woken(void **state)
{
	struct conn c = conn_open(SMCR_SOCK_SMC, POLLOUT);
	struct waiter w = { .fd = ep_new() };

	(void)state;
	assert_int_equal(ep_ctl(w.fd, EPOLL_CTL_ADD, c.fd, EPOLLIN, DATA_A), 0);
	assert_int_equal(wake_waiter(&w, epoll_waiter, c.sk), EPOLLIN);
	assert_int_equal(w.ev.data.u64, DATA_A);
	ep_close(w.fd);
	conn_close(&c);
}

static void poll_woken(void **state)
{
	struct conn c = conn_open(SMCR_SOCK_SMC, POLLOUT);
	struct waiter w = { .fd = c.fd };

	(void)state;
	assert_int_equal(wake_waiter(&w, poll_waiter, c.sk), POLLIN);
	conn_close(&c);
}

/*
 * The reply to our LEAVE is still to come: what is readable is ours to say
 * (smcr_sock_left_reads_ours), and the reply comes on the TCP socket.
 * Starts body on w->fd, lets it fall asleep, then lets the reply come
 * with bytes of the peer's in our RMB behind it (both ends left at once).
 * The sleeper must wake at the reply and see them.
 */
static uint32_t leave_reply_wakes(struct waiter *w, void *(*body)(void *), struct conn *c)
{
	static const char reply[28];

	atomic_store(&c->sk->phase, SMCR_SOCK_TCP);
	atomic_store(&c->sk->left_reads_ours, true);
	atomic_store(&c->sk->mask, 0);
	phase_changed(c->fd);
	assert_int_equal(pthread_create(&w->thread, NULL, body, w), 0);
	assert_true(wait_asleep(w));
	atomic_store(&c->sk->mask, POLLIN);
	assert_int_equal(write(c->peer, reply, sizeof(reply)), (ssize_t)sizeof(reply));
	assert_int_equal(pthread_join(w->thread, NULL), 0);
	assert_true(w->ms < GUARD_MS);
	assert_int_equal(w->rc, 1);
	return w->got;
}

/*
 * A member that left SMC stays ours until its leave is over: told readable
 * (level-triggered) while our RMB holds bytes of the peer's, which the
 * kernel knows nothing of; then handed back.
 */
static void epoll_member_ours_until_leave_over(void **state)
{
	struct conn c = conn_open(SMCR_SOCK_SMC, 0);
	struct waiter w = { .fd = ep_new() };
	char buf[64];
	int polls;

	(void)state;
	assert_int_equal(ep_ctl(w.fd, EPOLL_CTL_ADD, c.fd, EPOLLIN, DATA_A), 0);
	assert_int_equal(leave_reply_wakes(&w, epoll_waiter, &c), EPOLLIN);
	assert_int_equal(w.ev.data.u64, DATA_A);
	assert_int_equal(read(c.fd, buf, sizeof(buf)), 28);     /* the reply, taken */
	assert_int_equal(ep_one(w.fd, DATA_A, 0), EPOLLIN);      /* the RMB still holds some */
	assert_int_equal(ep_one(w.fd, DATA_A, 0), EPOLLIN);
	atomic_store(&c.sk->left_reads_ours, false);            /* read out */
	atomic_store(&c.sk->mask, 0);
	assert_int_equal(ep_one(w.fd, DATA_A, 0), 0);
	polls = atomic_load(&c.sk->polls);
	assert_int_equal(write(c.peer, "x", 1), 1);             /* the kernel's word now */
	assert_int_equal(ep_one(w.fd, DATA_A, GUARD_MS), EPOLLIN);
	assert_int_equal(atomic_load(&c.sk->polls), polls);
	ep_close(w.fd);
	conn_close(&c);
}

/* Edge-triggered too: the reply's edge on the TCP socket is news to look at. */
static void epoll_edge_member_woken_by_leave_reply(void **state)
{
	struct conn c = conn_open(SMCR_SOCK_SMC, 0);
	struct waiter w = { .fd = ep_new() };

	(void)state;
	assert_int_equal(ep_ctl(w.fd, EPOLL_CTL_ADD, c.fd, EPOLLIN | EPOLLET, DATA_A), 0);
	assert_int_equal(ep_one(w.fd, DATA_A, 0), 0);
	assert_int_equal(leave_reply_wakes(&w, epoll_waiter, &c), EPOLLIN);
	ep_close(w.fd);
	conn_close(&c);
}

static void poll_woken_by_leave_reply(void **state)
{
	struct conn c = conn_open(SMCR_SOCK_SMC, 0);
	struct waiter w = { .fd = c.fd };

	(void)state;
	assert_int_equal(leave_reply_wakes(&w, poll_waiter, &c), POLLIN);
	conn_close(&c);
}

static void timeouts_return_zero(void **state)
{
	struct conn c = conn_open(SMCR_SOCK_SMC, POLLOUT);
	struct pollfd p = { .fd = c.fd, .events = POLLIN };
	int ep = ep_new();
	int64_t start;

	(void)state;
	assert_int_equal(ep_ctl(ep, EPOLL_CTL_ADD, c.fd, EPOLLIN, DATA_A), 0);
	/* like the kernel's, a wait never ends before its time */
	start = now_ms();
	assert_int_equal(ep_one(ep, DATA_A, SHORT_MS), 0);
	assert_true(now_ms() - start >= SHORT_MS);
	start = now_ms();
	assert_int_equal(smcr_poll(&p, 1, SHORT_MS, NULL), 0);
	assert_true(now_ms() - start >= SHORT_MS);
	assert_int_equal(p.revents, 0);
	ep_close(ep);
	conn_close(&c);
}

/* ---- poll and select ---- */

static void poll_bits_beside_a_pipe(void **state)
{
	struct conn c = conn_open(SMCR_SOCK_SMC, POLLOUT | POLLWRNORM);
	int p[2];

	(void)state;
	pipe_pair(p);
	struct pollfd fds[3] = {
		{ .fd = c.fd, .events = POLLIN | POLLPRI | POLLRDHUP },
		{ .fd = p[0], .events = POLLIN },
		{ .fd = p[1], .events = POLLOUT },
	};
	assert_int_equal(smcr_poll(fds, 3, 0, NULL), 1);
	assert_int_equal(fds[0].revents, 0);
	assert_int_equal(fds[1].revents, 0);
	assert_int_equal(fds[2].revents, POLLOUT);
	/* what was not asked for is not told, but a hang-up always is */
	news(c.sk, POLLIN | POLLOUT | POLLPRI | POLLRDHUP | POLLHUP);
	assert_int_equal(write(p[1], "x", 1), 1);
	assert_int_equal(smcr_poll(fds, 3, 0, NULL), 3);
	assert_int_equal(fds[0].revents, POLLIN | POLLPRI | POLLRDHUP | POLLHUP);
	assert_int_equal(fds[1].revents, POLLIN);
	assert_int_equal(fds[2].revents, POLLOUT);
	fds[0].events = POLLOUT;
	assert_int_equal(smcr_poll(fds, 1, 0, NULL), 1);
	assert_int_equal(fds[0].revents, POLLOUT | POLLHUP);
	close(p[0]);
	close(p[1]);
	conn_close(&c);
}

struct sets {
	fd_set r, w, e;
};

/* select over fd (read, write and except) and the pipe p (read end, write end). */
static int select_with_pipe(struct sets *s, int fd, const int p[2])
{
	FD_ZERO(&s->r);
	FD_ZERO(&s->w);
	FD_ZERO(&s->e);
	FD_SET(fd, &s->r);
	FD_SET(fd, &s->w);
	FD_SET(fd, &s->e);
	FD_SET(p[0], &s->r);
	FD_SET(p[1], &s->w);
	assert_true(smcr_select_has_ours(FD_SETSIZE, &s->r, &s->w, &s->e));
	return smcr_select(FD_SETSIZE, &s->r, &s->w, &s->e, 0, NULL);
}

static void select_bits_beside_a_pipe(void **state)
{
	struct conn c = conn_open(SMCR_SOCK_SMC, POLLIN | POLLPRI);
	struct sets s;
	int p[2];

	(void)state;
	pipe_pair(p);
	FD_ZERO(&s.r);
	FD_SET(p[0], &s.r);
	assert_false(smcr_select_has_ours(FD_SETSIZE, &s.r, NULL, NULL));
	/* urgent data is an exception; the pipe is writable, not readable */
	assert_int_equal(select_with_pipe(&s, c.fd, p), 3);
	assert_true(FD_ISSET(c.fd, &s.r));
	assert_false(FD_ISSET(c.fd, &s.w));
	assert_true(FD_ISSET(c.fd, &s.e));
	assert_false(FD_ISSET(p[0], &s.r));
	assert_true(FD_ISSET(p[1], &s.w));
	/* as the kernel's select: a hang-up reads as readable */
	news(c.sk, POLLHUP);
	assert_int_equal(write(p[1], "x", 1), 1);
	assert_int_equal(select_with_pipe(&s, c.fd, p), 3);
	assert_true(FD_ISSET(c.fd, &s.r));
	assert_false(FD_ISSET(c.fd, &s.w));
	assert_false(FD_ISSET(c.fd, &s.e));
	assert_true(FD_ISSET(p[0], &s.r));
	assert_true(FD_ISSET(p[1], &s.w));
	close(p[0]);
	close(p[1]);
	conn_close(&c);
}

/* ---- nested instances ---- */

/* inner holds c's connection (for reading); outer holds inner. */
struct nest {
	struct conn c;
	int inner, outer;
};

static struct nest nest_open(void)
{
	struct nest n = { .c = conn_open(SMCR_SOCK_SMC, 0), .inner = ep_new(), .outer = ep_new() };

	assert_int_equal(ep_ctl(n.inner, EPOLL_CTL_ADD, n.c.fd, EPOLLIN, DATA_A), 0);
	assert_int_equal(ep_ctl(n.outer, EPOLL_CTL_ADD, n.inner, EPOLLIN, DATA_B), 0);
	return n;
}

static void nest_close(struct nest *n)
{
	ep_close(n->outer);
	ep_close(n->inner);
	conn_close(&n->c);
}

static void nested_ready_only_with_something_to_report(void **state)
{
	struct nest n = nest_open();
	struct pollfd kernel = { .fd = n.inner, .events = POLLIN };
	struct pollfd p = kernel;

	(void)state;
	/* news that makes nothing readable: the kernel sees the inner instance readable */
	news(n.c.sk, POLLOUT);
	assert_int_equal(poll(&kernel, 1, 0), 1);
	assert_int_equal(ep_one(n.outer, DATA_B, 0), 0);
	assert_int_equal(smcr_poll(&p, 1, 0, NULL), 0);
	assert_int_equal(ep_one(n.inner, DATA_A, 0), 0);
	news(n.c.sk, POLLIN | POLLOUT);
	assert_int_equal(ep_one(n.outer, DATA_B, 0), EPOLLIN);
	assert_int_equal(smcr_poll(&p, 1, 0, NULL), 1);
	assert_int_equal(p.revents, POLLIN);
	assert_int_equal(ep_one(n.inner, DATA_A, 0), EPOLLIN);
	nest_close(&n);
}

/*
 * A client whose connect() completed is writable during its CLC exchange
 * as its TCP socket is, in poll and in epoll, while the socket layer says
 * so: a program that waits for that before it asks the server to accept
 * must not wait for the accept.  Nothing else is told before the exchange.
 */
static void client_in_exchange_is_writable(void **state)
{
	struct single one = single_open(SMCR_SOCK_SETUP, POLLIN, EPOLLIN | EPOLLOUT);
	struct pollfd p = { .fd = one.c.fd, .events = POLLIN | POLLOUT };

	(void)state;
	atomic_store(&one.c.sk->setup_mask, POLLOUT | POLLWRNORM);
	assert_int_equal(ep_one(one.ep, DATA_A, 0), EPOLLOUT);
	assert_int_equal(smcr_poll(&p, 1, 0, NULL), 1);
	assert_int_equal(p.revents, POLLOUT);
	/* a send found it unfinished: now it waits for the exchange */
	atomic_store(&one.c.sk->setup_mask, 0);
	assert_int_equal(ep_one(one.ep, DATA_A, 0), 0);
	assert_int_equal(smcr_poll(&p, 1, 0, NULL), 0);
	single_close(&one);
}

/*
 * A server in its exchange whose application asks POLLOUT: nothing happens
 * on any descriptor when its Proposal's deadline passes, yet the wait ends
 * there, declined and writable on TCP: in epoll, level- and
 * edge-triggered (looked at, and found not ready, before), and in poll.
 */
static void server_writable_at_proposal_deadline(void **state)
{
	struct conn c;
	struct pollfd p = { .events = POLLOUT };

	(void)state;
	for (int edge = 0; edge < 2; edge++) {
		struct single one = single_open(SMCR_SOCK_SETUP, 0, EPOLLOUT | (edge ? EPOLLET : 0));

		one.c.sk->server = true;
		assert_int_equal(ep_one(one.ep, DATA_A, 0), 0);
		assert_int_equal(ep_one(one.ep, DATA_A, GUARD_MS), EPOLLOUT);
		single_close(&one);
	}
	c = conn_open(SMCR_SOCK_SETUP, 0);
	c.sk->server = true;
	p.fd = c.fd;
	assert_int_equal(smcr_poll(&p, 1, GUARD_MS, NULL), 1);
	assert_int_equal(p.revents, POLLOUT);
	conn_close(&c);
}

static void nested_wakes_outer_epoll(void **state)
{
	struct nest n = nest_open();
	struct waiter w = { .fd = n.outer };

	(void)state;
	assert_int_equal(wake_waiter(&w, epoll_waiter, n.c.sk), EPOLLIN);
	assert_int_equal(w.ev.data.u64, DATA_B);
	nest_close(&n);
}

static void nested_wakes_poll(void **state)
{
	struct nest n = nest_open();
	struct waiter w = { .fd = n.inner };

	(void)state;
	assert_int_equal(wake_waiter(&w, poll_waiter, n.c.sk), POLLIN);
	nest_close(&n);
}

/* ---- large sets (epoll.c's opening comment) ---- */

#define LARGE 100               /* members: more than epoll.c's SMALL_SET, 64 */
#define QUIET_LOOKS 300         /* epoll_waits: more than its QUIET_AFTER, 256 */

/* Fake connections on SMC in one instance, EPOLLIN, their index as data. */
struct large {
	int ep, count;
	struct conn c[LARGE];
};

static void large_grow(struct large *l, int n, uint32_t events)
{
	for (; l->count < n; l->count++) {
		l->c[l->count] = conn_open(SMCR_SOCK_SMC, 0);
		assert_int_equal(ep_ctl(l->ep, EPOLL_CTL_ADD, l->c[l->count].fd, events,
					(uint64_t)l->count), 0);
	}
}

/* Closes the members from the last down to the first n. */
static void large_shrink(struct large *l, int n)
{
	while (l->count > n)
		conn_close(&l->c[--l->count]);
}

static void large_open(struct large *l, int n)
{
	l->ep = ep_new();
	l->count = 0;
	large_grow(l, n, EPOLLIN);
}

static void large_close(struct large *l)
{
	large_shrink(l, 0);
	ep_close(l->ep);
}

/* epoll_wait(0) on l: how many events; out holds them. */
static int large_wait(struct large *l, struct epoll_event *out)
{
	return smcr_epoll_wait(l->ep, out, LARGE, 0, NULL);
}

/* QUIET_LOOKS waits, each telling ready members, no more: the others go quiet. */
static void idle_looks(struct large *l, int ready)
{
	struct epoll_event out[LARGE];

	for (int i = 0; i < QUIET_LOOKS; i++)
		assert_int_equal(large_wait(l, out), ready);
}

/* Whether a wait looks at member i (its smcr_sock_poll): false if it is quiet. */
static bool looked_at(struct large *l, int i)
{
	struct epoll_event out[LARGE];
	int before = atomic_load(&l->c[i].sk->polls);

	large_wait(l, out);
	return atomic_load(&l->c[i].sk->polls) != before;
}

/*
 * A set that grows past SMALL_SET while a member has news keeps telling
 * it, and its idle members go quiet; news on quiet members is told; once
 * it shrinks to SMALL_SET or fewer, every member is looked at every time
 * again.
 */
static void epoll_large_set_grows_and_shrinks(void **state)
{
	struct epoll_event out[LARGE];
	struct large l;

	(void)state;
	large_open(&l, 10);
	news(l.c[0].sk, POLLIN);
	assert_int_equal(large_wait(&l, out), 1);
	large_grow(&l, LARGE, EPOLLIN);
	idle_looks(&l, 1);
	assert_true(looked_at(&l, 0));
	assert_false(looked_at(&l, 30));
	assert_false(looked_at(&l, 70));
	news(l.c[20].sk, POLLIN);
	news(l.c[70].sk, POLLIN | POLLRDHUP);
	assert_int_equal(large_wait(&l, out), 3);
	assert_int_equal(events_of(out, 3, 0), EPOLLIN);
	assert_int_equal(events_of(out, 3, 20), EPOLLIN);
	assert_int_equal(events_of(out, 3, 70), EPOLLIN);
	large_shrink(&l, 40);
	assert_true(looked_at(&l, 30));
	assert_int_equal(large_wait(&l, out), 2);
	assert_int_equal(events_of(out, 2, 0), EPOLLIN);
	assert_int_equal(events_of(out, 2, 20), EPOLLIN);
	large_close(&l);
}

/* News on a quiet member is told: at the next wait, and to a waiter asleep. */
static void epoll_quiet_member_told_news(void **state)
{
	struct epoll_event out[LARGE];
	struct large l;
	struct waiter w = { .fd = 0 };

	(void)state;
	large_open(&l, LARGE);
	/* earlier news, nothing to tell, leaves each disarmed, as after any CDC */
	for (int i = 0; i < LARGE; i++)
		news(l.c[i].sk, 0);
	idle_looks(&l, 0);
	assert_false(looked_at(&l, 5));
	news(l.c[5].sk, POLLIN);
	assert_int_equal(large_wait(&l, out), 1);
	assert_int_equal(out[0].data.u64, 5);
	news(l.c[5].sk, 0);
	assert_false(looked_at(&l, 6));
	w.fd = l.ep;
	assert_int_equal(pthread_create(&w.thread, NULL, epoll_waiter, &w), 0);
	assert_true(wait_asleep(&w));
	news(l.c[6].sk, POLLIN);
	assert_int_equal(pthread_join(w.thread, NULL), 0);
	assert_true(w.ms < GUARD_MS);
	assert_int_equal(w.rc, 1);
	assert_int_equal(w.ev.data.u64, 6);
	large_close(&l);
}

/*
 * A member whose readiness this process changes: reading its data leaves
 * it nothing to tell, and it goes quiet; a change of its own that adds
 * readiness (shutdown) is told, as is the peer's end on TCP.
 */
static void epoll_quiet_member_local_change(void **state)
{
	struct epoll_event out[LARGE];
	struct pollfd p = { .events = POLLRDHUP };
	struct large l;

	(void)state;
	large_open(&l, LARGE);
	news(l.c[3].sk, POLLIN);
	assert_int_equal(large_wait(&l, out), 1);
	atomic_store(&l.c[3].sk->mask, 0);      /* read: no news, and none needed */
	idle_looks(&l, 0);
	assert_false(looked_at(&l, 3));
	local(l.c[3].sk, POLLIN | POLLRDHUP);
	assert_int_equal(large_wait(&l, out), 1);
	assert_int_equal(out[0].data.u64, 3);
	assert_int_equal(out[0].events, EPOLLIN);
	/* the peer's end: its TCP socket's event, told in the wait that takes it */
	assert_false(looked_at(&l, 9));
	assert_int_equal(shutdown(l.c[9].peer, SHUT_WR), 0);
	p.fd = l.c[9].fd;
	assert_int_equal(poll(&p, 1, GUARD_MS), 1);
	assert_int_equal(large_wait(&l, out), 2);
	assert_int_equal(events_of(out, 2, 9), EPOLLIN | EPOLLHUP);
	assert_int_equal(atomic_load(&l.c[9].sk->tcp_ended), 1);
	large_close(&l);
}

/* A quiet member is looked at anew after EPOLL_CTL_MOD (EPOLLONESHOT re-armed), and in a child. */
static void epoll_quiet_member_looked_at_anew(void **state)
{
	struct epoll_event out[LARGE];
	struct large l;

	(void)state;
	large_open(&l, 0);
	large_grow(&l, LARGE, EPOLLIN | EPOLLONESHOT);
	news(l.c[4].sk, POLLIN);
	assert_int_equal(large_wait(&l, out), 1);
	news(l.c[4].sk, POLLIN);                /* not told: not re-armed */
	idle_looks(&l, 0);
	assert_false(looked_at(&l, 4));
	assert_int_equal(ep_ctl(l.ep, EPOLL_CTL_MOD, l.c[4].fd, EPOLLIN, 4), 0);
	assert_int_equal(large_wait(&l, out), 1);
	assert_int_equal(out[0].data.u64, 4);
	assert_false(looked_at(&l, 8));
	smcr_readiness_forked();
	assert_true(looked_at(&l, 8));
	large_close(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(epoll_level_triggered),
		cmocka_unit_test(epoll_edge_triggered),
		cmocka_unit_test(epoll_oneshot),
		cmocka_unit_test(epoll_mod_changes_events),
		cmocka_unit_test(epoll_del_then_add),
		cmocka_unit_test(epoll_close_forgets),
		cmocka_unit_test(epoll_close_after_del_forgets),
		cmocka_unit_test(epoll_exclusive_never_modified),
		cmocka_unit_test(epoll_member_waits_for_smc),
		cmocka_unit_test(epoll_member_handed_back_on_tcp),
		cmocka_unit_test(epoll_tcp_end_reaches_connection),
		cmocka_unit_test(epoll_app_data_that_looks_like_ours),
		cmocka_unit_test(epoll_app_data_like_ours_closed),
		cmocka_unit_test(epoll_wait_woken),
		cmocka_unit_test(poll_woken),
		cmocka_unit_test(epoll_member_ours_until_leave_over),
		cmocka_unit_test(epoll_edge_member_woken_by_leave_reply),
		cmocka_unit_test(poll_woken_by_leave_reply),
		cmocka_unit_test(timeouts_return_zero),
		cmocka_unit_test(poll_bits_beside_a_pipe),
		cmocka_unit_test(select_bits_beside_a_pipe),
		cmocka_unit_test(nested_ready_only_with_something_to_report),
		cmocka_unit_test(nested_wakes_outer_epoll),
		cmocka_unit_test(client_in_exchange_is_writable),
		cmocka_unit_test(server_writable_at_proposal_deadline),
		cmocka_unit_test(nested_wakes_poll),
		cmocka_unit_test(epoll_large_set_grows_and_shrinks),
		cmocka_unit_test(epoll_quiet_member_told_news),
		cmocka_unit_test(epoll_quiet_member_local_change),
		cmocka_unit_test(epoll_quiet_member_looked_at_anew),
	};

	smcr_descriptors_init();        /* the table holds fakes as libsmcr's own */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
