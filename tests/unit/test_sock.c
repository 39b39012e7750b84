/*
 * Unit tests of the socket calls on an SMC connection
 * (libsmcr/socket/smc_sock.c): recv and send with their flags, shutdown,
 * close and abort as the peer sees them, FIONREAD, SIOCOUTQ, SIOCATMARK,
 * the socket options the connection answers itself, poll's bits in each
 * state, and the waits and wake-ups behind blocking calls and epoll.
 *
 * Two ends of one connection, A and B, live in this process, joined by a
 * fake transport (struct smc_transport_ops) made of plain memory:
 *  - each end's RMB is a malloc'd ring; write() copies into the peer's;
 *  - send_cdc() puts the 44 bytes in the peer's one-slot mailbox (the
 *    latest CDC wins, as in smc_shm.c: a CDC says the whole state) and
 *    bumps the peer's event count; recv_cdc() takes it once;
 *  - events() is that count, which wake() bumps too; wait() sleeps on a
 *    condition variable until it moves or the timeout passes;
 *  - wake_fd() is an eventfd written when the count moves while armed;
 *    arm() reads it empty (when signalled) and arms it again.
 * Each end is a struct smcr_sock built by hand as smc_sock_view.c would
 * leave it after the CLC exchange (smc_sock_priv.h): its shared page
 * mmap'd, its connection on the fake ops, phase SMC, attached, so no call
 * needs smcrd.  Closing an end is the real close (smcr_sock_put).
 *
 * No test sleeps to synchronise: a thread blocked in a call is known to be
 * asleep because the fake's wait() counts its sleepers, and a blocked call
 * is joined with a generous guard only against hanging for ever.
 */
#include <errno.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "smc_conn.h"
#include "smc_sock_priv.h"

/* Unequal sizes, so that an end that used the other's size breaks a test. */
#define A_RMB 32768u
#define B_RMB 16384u

/* How long a joined thread may stay blocked before the test calls it hung. */
#define HANG_GUARD_S 30

/* ---- the fake transport ---- */

struct fake_end {
	uint8_t *ring;			/* this end's RMB */
	pthread_mutex_t lock;		/* the mailbox, the event count's waiters */
	pthread_cond_t changed;		/* the count moved, or a sleeper came */
	uint8_t mbox[SMC_CDC_MSG_LEN];
	uint32_t mbox_seq;		/* CDCs delivered; the mailbox holds the last */
	_Atomic uint32_t events;
	unsigned int sleepers;		/* threads inside wait() */
	_Atomic bool armed;
	int efd;
	bool joined_in_arm;		/* a sleeper joins efd during the next arm */
	struct fake_end *peer;
};

static struct fake_end *end_of(struct smc_conn *conn)
{
	return conn->priv;
}

/* Under end->lock: the count moves, and whoever waits for it hears. */
static void bump_locked(struct fake_end *end)
{
	uint64_t one = 1;

	atomic_fetch_add(&end->events, 1);
	pthread_cond_broadcast(&end->changed);
	if (atomic_exchange(&end->armed, false) && write(end->efd, &one, sizeof(one)) < 0)
		fail_msg("eventfd write: %s", strerror(errno));
}

static int fake_write(struct smc_conn *conn, uint32_t off, const void *src, uint32_t len)
{
	if (off > conn->peer_rmb_size || len > conn->peer_rmb_size - off)
		return -EINVAL;
	memcpy(end_of(conn)->peer->ring + off, src, len);
	return 0;
}

static int fake_send_cdc(struct smc_conn *conn, const uint8_t msg[SMC_CDC_MSG_LEN])
{
	struct fake_end *peer = end_of(conn)->peer;

	pthread_mutex_lock(&peer->lock);
	memcpy(peer->mbox, msg, SMC_CDC_MSG_LEN);
	peer->mbox_seq++;
	bump_locked(peer);
	pthread_mutex_unlock(&peer->lock);
	return 0;
}

static int fake_recv_cdc(struct smc_conn *conn, uint8_t msg[SMC_CDC_MSG_LEN])
{
	struct fake_end *end = end_of(conn);
	int got;

	pthread_mutex_lock(&end->lock);
	got = end->mbox_seq != conn->st->cdc_fetched;
	if (got) {
		memcpy(msg, end->mbox, SMC_CDC_MSG_LEN);
		conn->st->cdc_fetched = end->mbox_seq;
	}
	pthread_mutex_unlock(&end->lock);
	return got;
}

static uint32_t fake_events(struct smc_conn *conn)
{
	return atomic_load(&end_of(conn)->events);
}

/* No spinning: a waiter goes straight to sleep, where the tests can see it. */
static struct smcr_spin_how fake_spin_how(struct smc_conn *conn)
{
	(void)conn;
	return (struct smcr_spin_how){ 0 };
}

/* ms from now on CLOCK_MONOTONIC, the clock of the ends' condition variables. */
static struct timespec deadline_in(int ms)
{
	uint64_t ns = smc_clock_ns() + (uint64_t)ms * 1000000u;

	return (struct timespec){ .tv_sec = (time_t)(ns / 1000000000u),
				  .tv_nsec = (long)(ns % 1000000000u) };
}

static int fake_wait(struct smc_conn *conn, uint32_t since, int timeout_ms)
{
	struct fake_end *end = end_of(conn);
	struct timespec until = deadline_in(timeout_ms < 0 ? 0 : timeout_ms);
	int rc = 0;

	pthread_mutex_lock(&end->lock);
	end->sleepers++;
	pthread_cond_broadcast(&end->changed);
	while (atomic_load(&end->events) == since && rc == 0)
		rc = timeout_ms < 0 ? pthread_cond_wait(&end->changed, &end->lock)
				    : pthread_cond_timedwait(&end->changed, &end->lock, &until);
	end->sleepers--;
	rc = atomic_load(&end->events) != since ? 0 : -ETIMEDOUT;
	pthread_mutex_unlock(&end->lock);
	return rc;
}

static struct smcr_wake_channel fake_wake_channel(struct smc_conn *conn)
{
	return (struct smcr_wake_channel){ .rx = end_of(conn)->efd, .tx = -1 };
}

static bool fake_arm(struct smc_conn *conn, uint32_t since, bool signalled, bool alone)
{
	struct fake_end *end = end_of(conn);
	uint64_t count;

	if (signalled && alone && read(end->efd, &count, sizeof(count)) < 0 && errno != EAGAIN)
		fail_msg("eventfd read: %s", strerror(errno));
	if (end->joined_in_arm)
		smcr_fd_sleepers_add(end->efd, 1);
	atomic_store(&end->armed, true);
	return atomic_load(&end->events) == since;
}

static void fake_wake(struct smc_conn *conn)
{
	struct fake_end *end = end_of(conn);

	pthread_mutex_lock(&end->lock);
	bump_locked(end);
	pthread_mutex_unlock(&end->lock);
}

/* The ends belong to the test's pair, which outlives both views. */
static void fake_release(struct smc_conn *conn)
{
	conn->priv = NULL;
	conn->rmb = NULL;
}

/*
 * Setting up an RMB (create_rmb, map_rmb, attach_peer) is the CLC
 * exchange's and smcrd's business, which these tests do by hand: an
 * attached connection on SMC never calls them, and a call would crash.
 */
static const struct smc_transport_ops fake_ops = {
	.name = "fake",
	.id = SMCR_TRANSPORT_SHM,
	.write = fake_write,
	.send_cdc = fake_send_cdc,
	.recv_cdc = fake_recv_cdc,
	.events = fake_events,
	.spin_how = fake_spin_how,
	.wait = fake_wait,
	.wake_channel = fake_wake_channel,
	.arm = fake_arm,
	.wake = fake_wake,
	.release = fake_release,
};

/* ---- a connected pair ---- */

struct pair {
	struct fake_end end[2];
	struct smcr_sock *sk[2];	/* A, B; NULL once closed */
};

static const uint32_t rmb_size[2] = { A_RMB, B_RMB };
static const uint32_t token[2] = { 0x1111, 0x2222 };

static void end_init(struct fake_end *end, struct fake_end *peer, uint32_t size)
{
	pthread_condattr_t attr;

	end->ring = malloc(size);
	assert_non_null(end->ring);
	pthread_mutex_init(&end->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&end->changed, &attr);
	pthread_condattr_destroy(&attr);
	atomic_init(&end->events, 0);
	atomic_init(&end->armed, true);
	end->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	assert_true(end->efd >= 0);
	end->peer = peer;
}

static void end_fini(struct fake_end *end)
{
	free(end->ring);
	pthread_mutex_destroy(&end->lock);
	pthread_cond_destroy(&end->changed);
	close(end->efd);
}

/* End i as smc_sock_view.c leaves it once the CLC exchange attached the peer. */
static struct smcr_sock *sock_new(struct pair *p, int i)
{
	struct smcr_sock *sk = calloc(1, sizeof(*sk));
	struct smc_conn_state *st;

	assert_non_null(sk);
	/* view_free, behind smcr_sock_put, munmaps the page and frees the view */
	sk->sh = mmap(NULL, STATE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(sk->sh != MAP_FAILED);
	smc_conn_init(&sk->conn, &fake_ops, &sk->sh->conn, true);
	st = sk->conn.st;
	st->token = token[i];
	st->peer_token = token[!i];
	/* as a transport sets them up: the view's own sizes, and the page's */
	sk->conn.rmb_size = st->rmb_size = rmb_size[i];
	sk->conn.peer_rmb_size = st->peer_rmb_size = rmb_size[!i];
	sk->conn.priv = &p->end[i];
	sk->conn.rmb = p->end[i].ring;
	atomic_init(&sk->refs, 1);
	atomic_init(&sk->sh->holders, 1);
	atomic_init(&sk->sh->phase, SMCR_SOCK_SMC);
	atomic_init(&sk->sh->nonblock, false);
	sk->sh->active = i == 0;
	atomic_init(&sk->attached, true);
	return sk;
}

static int pair_setup(void **state)
{
	struct pair *p = calloc(1, sizeof(*p));

	assert_non_null(p);
	for (int i = 0; i < 2; i++)
		end_init(&p->end[i], &p->end[!i], rmb_size[i]);
	for (int i = 0; i < 2; i++)
		p->sk[i] = sock_new(p, i);
	*state = p;
	return 0;
}

/* The last descriptor of end i closes: the real close, CDCs and all. */
static void close_end(struct pair *p, int i)
{
	smcr_sock_put(p->sk[i], -1);
	p->sk[i] = NULL;
}

static int pair_teardown(void **state)
{
	struct pair *p = *state;

	for (int i = 0; i < 2; i++)
		if (p->sk[i])
			close_end(p, i);
	for (int i = 0; i < 2; i++)
		end_fini(&p->end[i]);
	free(p);
	return 0;
}

/* ---- calls, as an application makes them ---- */

static ssize_t send_buf(struct smcr_sock *sk, const void *buf, size_t len, int flags)
{
	return smcr_sock_send(sk, &(struct iovec){ (void *)buf, len }, 1, flags | MSG_NOSIGNAL);
}

static ssize_t send_str(struct smcr_sock *sk, const char *s, int flags)
{
	return send_buf(sk, s, strlen(s), flags);
}

static ssize_t recv_buf(struct smcr_sock *sk, void *buf, size_t len, int flags)
{
	return smcr_sock_recv(sk, &(struct iovec){ buf, len }, 1, flags);
}

/* recv with flags returns exactly want. */
static void expect_recv(struct smcr_sock *sk, const char *want, int flags)
{
	char buf[256] = "";
	size_t len = strlen(want);

	assert_int_equal(recv_buf(sk, buf, sizeof(buf), flags), len);
	assert_memory_equal(buf, want, len);
}

static void expect_eof(struct smcr_sock *sk)
{
	char c;

	assert_int_equal(recv_buf(sk, &c, 1, 0), 0);
}

static void expect_fail(ssize_t rc, int err)
{
	assert_int_equal(rc, -1);
	assert_int_equal(errno, err);
}

static int ioctl_int(struct smcr_sock *sk, unsigned long request)
{
	int value = -1, rc = -1;

	assert_true(smcr_sock_ioctl(sk, request, &value, &rc));
	assert_int_equal(rc, 0);
	return value;
}

static void set_int(struct smcr_sock *sk, int level, int name, int value)
{
	smcr_sock_setsockopt(sk, level, name, &value, sizeof(value));
}

static void set_timeout(struct smcr_sock *sk, int name, int ms)
{
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = ms % 1000 * 1000 };

	smcr_sock_setsockopt(sk, SOL_SOCKET, name, &tv, sizeof(tv));
}

/* SO_ERROR as the application reads it: 0 when the connection leaves it to the kernel's idle socket. */
static int so_error(struct smcr_sock *sk)
{
	int value = 0, rc = -1;
	socklen_t len = sizeof(value);

	if (!smcr_sock_getsockopt(sk, SOL_SOCKET, SO_ERROR, &value, &len, &rc))
		return 0;
	assert_int_equal(rc, 0);
	assert_int_equal(len, sizeof(int));
	return value;
}

static void fill(uint8_t *buf, size_t len, unsigned int seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(i * 7 + seed);
}

/* Sends len patterned bytes from a to b and reads them back exactly. */
static void stream(struct smcr_sock *a, struct smcr_sock *b, size_t len, unsigned int seed)
{
	uint8_t *out = malloc(len), *in = malloc(len);

	assert_non_null(out);
	assert_non_null(in);
	fill(out, len, seed);
	assert_int_equal(send_buf(a, out, len, 0), len);
	assert_int_equal(ioctl_int(b, FIONREAD), len);
	assert_int_equal(recv_buf(b, in, len, 0), len);
	assert_memory_equal(in, out, len);
	free(out);
	free(in);
}

/* Fills the peer's RMB of b_size bytes from a, without blocking. */
static void fill_peer_rmb(struct smcr_sock *a, uint32_t b_size)
{
	uint8_t *buf = calloc(1, b_size + 100);

	assert_non_null(buf);
	assert_int_equal(send_buf(a, buf, b_size + 100, MSG_DONTWAIT), b_size);
	expect_fail(send_buf(a, buf, 1, MSG_DONTWAIT), EAGAIN);
	free(buf);
}

/* ---- a call in another thread ---- */

struct call {
	pthread_t thread;
	struct smcr_sock *sk;
	bool send;
	void *buf;
	size_t len;
	int flags;
	ssize_t rc;
	int err;
	bool done;			/* under the end's lock */
	char in[16];			/* a small recv's buffer */
};

static void *call_run(void *arg)
{
	struct call *c = arg;
	struct fake_end *end = end_of(&c->sk->conn);

	c->rc = c->send ? send_buf(c->sk, c->buf, c->len, c->flags)
			: recv_buf(c->sk, c->buf, c->len, c->flags);
	c->err = errno;
	/* a call that never blocked must not leave await_blocked waiting */
	pthread_mutex_lock(&end->lock);
	c->done = true;
	pthread_cond_broadcast(&end->changed);
	pthread_mutex_unlock(&end->lock);
	return NULL;
}

static void call_start(struct call *c)
{
	assert_int_equal(pthread_create(&c->thread, NULL, call_run, c), 0);
}

/*
 * Until the call sleeps in the transport's wait, blocked, or has returned
 * (wrongly, as the test's assertions on its result then say).
 */
static void await_blocked(struct call *c)
{
	struct fake_end *end = end_of(&c->sk->conn);

	pthread_mutex_lock(&end->lock);
	while (end->sleepers == 0 && !c->done)
		pthread_cond_wait(&end->changed, &end->lock);
	pthread_mutex_unlock(&end->lock);
}

/* Joins the call; one still blocked after the guard is aborted free, and fails the test. */
static void call_finish(struct call *c)
{
	struct fake_end *end = end_of(&c->sk->conn);
	struct timespec until = deadline_in(HANG_GUARD_S * 1000);
	bool done;
	int rc = 0;

	pthread_mutex_lock(&end->lock);
	while (!c->done && rc == 0)
		rc = pthread_cond_timedwait(&end->changed, &end->lock, &until);
	done = c->done;
	pthread_mutex_unlock(&end->lock);
	if (!done)
		smc_conn_abort(&c->sk->conn);
	pthread_join(c->thread, NULL);
	if (!done)
		fail_msg("the call was still blocked after %d s", HANG_GUARD_S);
}

/* The call c, in another thread, blocks until event(p) ends it. */
static void blocked_until(struct pair *p, struct call *c, void (*event)(struct pair *p))
{
	call_start(c);
	await_blocked(c);
	event(p);
	call_finish(c);
}

/* B's recv into c->in blocks until event(p). */
static void recv_blocked_until(struct pair *p, struct call *c, void (*event)(struct pair *p))
{
	*c = (struct call){ .sk = p->sk[1], .len = sizeof(c->in) };
	c->buf = c->in;
	blocked_until(p, c, event);
}

/* A's send of more patterned bytes than B's ring holds blocks until event(p). */
#define BIG_SEND (B_RMB + 100)
#define BIG_SEED 5

static void send_blocked_until(struct pair *p, struct call *c, void (*event)(struct pair *p))
{
	uint8_t *out = malloc(BIG_SEND);

	assert_non_null(out);
	fill(out, BIG_SEND, BIG_SEED);
	*c = (struct call){ .sk = p->sk[0], .send = true, .buf = out, .len = BIG_SEND };
	blocked_until(p, c, event);
	free(out);
	c->buf = NULL;
}

/* B reads n bytes of the big send, the ones from offset at. */
static void expect_big_send(struct smcr_sock *b, size_t at, size_t n)
{
	uint8_t *want = malloc(BIG_SEND), *got = malloc(n);

	assert_non_null(want);
	assert_non_null(got);
	fill(want, BIG_SEND, BIG_SEED);
	assert_int_equal(recv_buf(b, got, n, 0), n);
	assert_memory_equal(got, want + at, n);
	free(want);
	free(got);
}

static bool fd_readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

/* ---- what ends a blocked call ---- */

static void a_sends_ping(struct pair *p)
{
	assert_int_equal(send_str(p->sk[0], "ping", 0), 4);
}

static void a_shuts_wr(struct pair *p)
{
	assert_int_equal(smcr_sock_shutdown(p->sk[0], -1, SHUT_WR), 0);
}

static void b_aborts(struct pair *p)
{
	smc_conn_abort(&p->sk[1]->conn);
}

static void b_shuts_rd(struct pair *p)
{
	assert_int_equal(smcr_sock_shutdown(p->sk[1], -1, SHUT_RD), 0);
}

static void a_sends_the_rest(struct pair *p)
{
	assert_int_equal(send_str(p->sk[0], "45", 0), 2);
	assert_int_equal(send_str(p->sk[0], "6789", 0), 4);
}

static void b_drains_its_ring(struct pair *p)
{
	expect_big_send(p->sk[1], 0, B_RMB);
}

#define RD (POLLIN | POLLRDNORM)
#define WR (POLLOUT | POLLWRNORM)

/* ---- data ---- */

static void bytes_cross_both_ways_exactly(void **state)
{
	struct pair *p = *state;

	stream(p->sk[0], p->sk[1], 5, 1);
	stream(p->sk[1], p->sk[0], 3000, 2);
	/* the third round crosses the end of B's ring: two pieces each way */
	stream(p->sk[0], p->sk[1], 10000, 3);
	stream(p->sk[0], p->sk[1], 10000, 4);
}

static void iovecs_gather_and_scatter_in_order(void **state)
{
	struct pair *p = *state;
	char x[3], y[4], z[10];
	struct iovec out[] = { { "abc", 3 }, { "", 0 }, { "defg", 4 } };
	struct iovec in[] = { { x, sizeof(x) }, { y, sizeof(y) }, { z, sizeof(z) } };

	assert_int_equal(smcr_sock_send(p->sk[0], out, 3, MSG_NOSIGNAL), 7);
	assert_int_equal(smcr_sock_recv(p->sk[1], in, 3, 0), 7);
	assert_memory_equal(x, "abc", 3);
	assert_memory_equal(y, "defg", 4);
}

static void peek_leaves_the_bytes_and_trunc_drops_them(void **state)
{
	struct pair *p = *state;
	char c;

	assert_int_equal(send_str(p->sk[0], "abcdefgh", 0), 8);
	assert_int_equal(recv_buf(p->sk[1], &c, 1, MSG_PEEK), 1);
	assert_int_equal(c, 'a');
	expect_recv(p->sk[1], "abcdefgh", MSG_PEEK);
	assert_int_equal(ioctl_int(p->sk[1], FIONREAD), 8);
	assert_int_equal(recv_buf(p->sk[1], NULL, 6, MSG_PEEK | MSG_TRUNC), 6);
	assert_int_equal(recv_buf(p->sk[1], NULL, 2, MSG_TRUNC), 2);
	expect_recv(p->sk[1], "cdefgh", 0);
	assert_int_equal(ioctl_int(p->sk[1], FIONREAD), 0);
}

static void waitall_returns_the_whole_request(void **state)
{
	struct pair *p = *state;
	char buf[10];
	struct call c = { .sk = p->sk[1], .buf = buf, .len = sizeof(buf), .flags = MSG_WAITALL };

	/* a plain recv would return these 4 at once */
	assert_int_equal(send_str(p->sk[0], "0123", 0), 4);
	blocked_until(p, &c, a_sends_the_rest);
	assert_int_equal(c.rc, 10);
	assert_memory_equal(buf, "0123456789", 10);
}

static void waitall_is_short_at_end_of_file(void **state)
{
	struct pair *p = *state;
	char buf[10];

	assert_int_equal(send_str(p->sk[0], "0123", 0), 4);
	assert_int_equal(smcr_sock_shutdown(p->sk[0], -1, SHUT_WR), 0);
	assert_int_equal(recv_buf(p->sk[1], buf, sizeof(buf), MSG_WAITALL), 4);
	assert_memory_equal(buf, "0123", 4);
	expect_eof(p->sk[1]);
}

static void empty_nonblocking_recv_fails_with_eagain(void **state)
{
	struct pair *p = *state;
	char c;

	expect_fail(recv_buf(p->sk[1], &c, 1, MSG_DONTWAIT), EAGAIN);
	expect_fail(recv_buf(p->sk[1], &c, 1, MSG_DONTWAIT | MSG_WAITALL), EAGAIN);
	smcr_sock_set_nonblock(p->sk[1], true);
	expect_fail(recv_buf(p->sk[1], &c, 1, 0), EAGAIN);
	assert_int_equal(send_str(p->sk[0], "x", 0), 1);
	expect_recv(p->sk[1], "x", 0);
	expect_fail(recv_buf(p->sk[1], &c, 1, 0), EAGAIN);
}

static void full_peer_rmb_makes_a_nonblocking_send_short_then_eagain(void **state)
{
	struct pair *p = *state;
	uint8_t *buf = malloc(B_RMB);

	assert_non_null(buf);
	fill_peer_rmb(p->sk[0], B_RMB);
	smcr_sock_set_nonblock(p->sk[0], true);
	expect_fail(send_str(p->sk[0], "y", 0), EAGAIN);
	assert_int_equal(smcr_sock_poll(p->sk[0]), 0);
	assert_int_equal(ioctl_int(p->sk[1], FIONREAD), B_RMB);
	/* draining the ring tells A (its consumer cursor) */
	assert_int_equal(recv_buf(p->sk[1], buf, B_RMB, 0), B_RMB);
	assert_int_equal(smcr_sock_poll(p->sk[0]), WR);
	assert_int_equal(send_str(p->sk[0], "y", 0), 1);
	free(buf);
}

/* ---- shutdown, close, abort ---- */

static void shut_wr_peer_reads_the_rest_then_eof_and_can_reply(void **state)
{
	struct pair *p = *state;

	assert_int_equal(send_str(p->sk[0], "bye", 0), 3);
	assert_int_equal(smcr_sock_shutdown(p->sk[0], -1, SHUT_WR), 0);
	expect_recv(p->sk[1], "bye", 0);
	expect_eof(p->sk[1]);
	expect_eof(p->sk[1]);
	assert_int_equal(send_str(p->sk[1], "ok", 0), 2);
	expect_recv(p->sk[0], "ok", 0);
	expect_fail(send_str(p->sk[0], "more", 0), EPIPE);
	/* an EPIPE of our own shutdown is not a pending error */
	assert_int_equal(so_error(p->sk[0]), 0);
	assert_int_equal(smcr_sock_shutdown(p->sk[0], -1, SHUT_WR), 0);
}

static void shut_rd_reads_what_is_there_then_eof_and_still_sends(void **state)
{
	struct pair *p = *state;

	assert_int_equal(send_str(p->sk[0], "left", 0), 4);
	assert_int_equal(smcr_sock_shutdown(p->sk[1], -1, SHUT_RD), 0);
	expect_recv(p->sk[1], "left", 0);
	/* blocking, yet it does not wait */
	expect_eof(p->sk[1]);
	assert_int_equal(send_str(p->sk[1], "back", 0), 4);
	expect_recv(p->sk[0], "back", 0);
}

static void shutdown_refuses_an_unknown_how(void **state)
{
	struct pair *p = *state;

	expect_fail(smcr_sock_shutdown(p->sk[0], -1, 7), EINVAL);
}

static void close_reads_as_eof_then_one_send_goes_then_epipe(void **state)
{
	struct pair *p = *state;

	assert_int_equal(send_str(p->sk[0], "last", 0), 4);
	close_end(p, 0);
	expect_recv(p->sk[1], "last", 0);
	expect_eof(p->sk[1]);
	/* as TCP: the first send after the peer's close goes, and its reset answers */
	assert_int_equal(send_str(p->sk[1], "lost", 0), 4);
	expect_fail(send_str(p->sk[1], "x", 0), EPIPE);
	expect_fail(send_str(p->sk[1], "x", 0), EPIPE);
	assert_int_equal(so_error(p->sk[1]), 0);
}

/*
 * What this process does that adds readiness, with nothing from the peer,
 * moves events() (wake()), as an epoll member gone quiet needs
 * (shim/epoll.c): SO_OOBINLINE, which may make the urgent byte readable,
 * and the first send after the peer's close, which hangs up.
 */
static void local_readiness_changes_move_events(void **state)
{
	struct pair *p = *state;
	uint32_t since = smcr_sock_events(p->sk[1]);

	set_int(p->sk[1], SOL_SOCKET, SO_OOBINLINE, 1);
	assert_int_not_equal(smcr_sock_events(p->sk[1]), since);
	close_end(p, 0);
	expect_eof(p->sk[1]);
	since = smcr_sock_events(p->sk[1]);
	assert_int_equal(smcr_sock_poll(p->sk[1]) & POLLHUP, 0);
	assert_int_equal(send_str(p->sk[1], "lost", 0), 4);
	assert_int_equal(smcr_sock_poll(p->sk[1]) & POLLHUP, POLLHUP);
	assert_int_not_equal(smcr_sock_events(p->sk[1]), since);
}

static void epipe_after_close_is_reported_once_by_so_error(void **state)
{
	struct pair *p = *state;

	close_end(p, 0);
	assert_int_equal(send_str(p->sk[1], "lost", 0), 4);
	assert_int_equal(so_error(p->sk[1]), EPIPE);
	assert_int_equal(so_error(p->sk[1]), 0);
	expect_fail(send_str(p->sk[1], "x", 0), EPIPE);
}

static volatile sig_atomic_t sigpipes;

static void count_sigpipe(int sig)
{
	(void)sig;
	sigpipes++;
}

static void epipe_raises_sigpipe_unless_msg_nosignal(void **state)
{
	struct pair *p = *state;
	struct sigaction sa = { .sa_handler = count_sigpipe }, old;

	close_end(p, 0);
	assert_int_equal(send_str(p->sk[1], "lost", 0), 4);
	assert_int_equal(sigaction(SIGPIPE, &sa, &old), 0);
	sigpipes = 0;
	expect_fail(send_str(p->sk[1], "x", 0), EPIPE);
	assert_int_equal(sigpipes, 0);
	expect_fail(smcr_sock_send(p->sk[1], &(struct iovec){ "x", 1 }, 1, 0), EPIPE);
	assert_int_equal(sigpipes, 1);
	sigaction(SIGPIPE, &old, NULL);
}

/* B's calls after A reset the connection. */
static void expect_reset(struct smcr_sock *b)
{
	char c;

	expect_fail(recv_buf(b, &c, 1, 0), ECONNRESET);
	expect_fail(send_str(b, "x", 0), ECONNRESET);
	assert_int_equal(so_error(b), ECONNRESET);
	assert_int_equal(smcr_sock_poll(b) & (POLLIN | POLLOUT | POLLERR | POLLHUP),
			 POLLIN | POLLOUT | POLLERR | POLLHUP);
}

static void close_with_unread_data_resets_the_peer(void **state)
{
	struct pair *p = *state;

	assert_int_equal(send_str(p->sk[0], "sent before", 0), 11);
	assert_int_equal(send_str(p->sk[1], "unread", 0), 6);
	close_end(p, 0);
	/* as TCP's reset: what B had not read yet is gone too */
	expect_reset(p->sk[1]);
}

static void close_with_zero_linger_resets_the_peer(void **state)
{
	struct pair *p = *state;
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };

	smcr_sock_setsockopt(p->sk[0], SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close_end(p, 0);
	expect_reset(p->sk[1]);
}

static void local_abort_resets_both_ends(void **state)
{
	struct pair *p = *state;
	char c;

	smc_conn_abort(&p->sk[0]->conn);
	expect_fail(recv_buf(p->sk[0], &c, 1, 0), ECONNRESET);
	expect_reset(p->sk[1]);
}

static void tcp_end_without_cdc_close_reads_as_eof(void **state)
{
	struct pair *p = *state;

	/* the peer's process died: its TCP end closed, no CDC said so */
	assert_int_equal(send_str(p->sk[0], "dying", 0), 5);
	smcr_sock_tcp_news(p->sk[1]);
	assert_int_equal(smcr_sock_poll(p->sk[1]), RD | POLLRDHUP | WR);
	expect_recv(p->sk[1], "dying", 0);
	expect_eof(p->sk[1]);
}

/* ---- ioctl and options ---- */

static void fionread_and_siocoutq_count_what_waits(void **state)
{
	struct pair *p = *state;
	char buf[64] = "";

	assert_int_equal(send_buf(p->sk[0], buf, 40, 0), 40);
	assert_int_equal(ioctl_int(p->sk[1], FIONREAD), 40);
	assert_int_equal(ioctl_int(p->sk[0], SIOCOUTQ), 0);
	/* MSG_MORE writes the bytes but holds back their announcement */
	assert_int_equal(send_buf(p->sk[0], buf, 7, MSG_MORE), 7);
	assert_int_equal(ioctl_int(p->sk[0], SIOCOUTQ), 7);
	assert_int_equal(ioctl_int(p->sk[1], FIONREAD), 40);
	assert_int_equal(send_buf(p->sk[0], buf, 3, 0), 3);
	assert_int_equal(ioctl_int(p->sk[0], SIOCOUTQ), 0);
	assert_int_equal(ioctl_int(p->sk[1], FIONREAD), 50);
	assert_int_equal(recv_buf(p->sk[1], buf, 30, 0), 30);
	assert_int_equal(ioctl_int(p->sk[1], FIONREAD), 20);
}

static void tcp_cork_holds_bytes_until_uncorked(void **state)
{
	struct pair *p = *state;

	set_int(p->sk[0], IPPROTO_TCP, TCP_CORK, 1);
	assert_int_equal(send_str(p->sk[0], "abc", 0), 3);
	assert_int_equal(send_str(p->sk[0], "de", 0), 2);
	assert_int_equal(ioctl_int(p->sk[0], SIOCOUTQ), 5);
	assert_int_equal(ioctl_int(p->sk[1], FIONREAD), 0);
	set_int(p->sk[0], IPPROTO_TCP, TCP_CORK, 0);
	assert_int_equal(ioctl_int(p->sk[0], SIOCOUTQ), 0);
	expect_recv(p->sk[1], "abcde", 0);
}

static void shut_wr_announces_corked_bytes(void **state)
{
	struct pair *p = *state;

	set_int(p->sk[0], IPPROTO_TCP, TCP_CORK, 1);
	assert_int_equal(send_str(p->sk[0], "tail", 0), 4);
	assert_int_equal(smcr_sock_shutdown(p->sk[0], -1, SHUT_WR), 0);
	expect_recv(p->sk[1], "tail", 0);
	expect_eof(p->sk[1]);
}

static void other_ioctls_and_options_are_the_kernels(void **state)
{
	struct pair *p = *state;
	int value = 0, rc = 0;
	socklen_t len = sizeof(value);

	assert_false(smcr_sock_ioctl(p->sk[0], FIONBIO, &value, &rc));
	assert_false(smcr_sock_getsockopt(p->sk[0], SOL_SOCKET, SO_RCVBUF, &value, &len, &rc));
	/* no error of the connection: the idle TCP socket answers SO_ERROR */
	assert_false(smcr_sock_getsockopt(p->sk[0], SOL_SOCKET, SO_ERROR, &value, &len, &rc));
}

static void urgent_byte_is_out_of_band_with_its_mark(void **state)
{
	struct pair *p = *state;
	char c = 0;

	assert_int_equal(send_str(p->sk[0], "ab", 0), 2);
	assert_int_equal(send_str(p->sk[0], "c", MSG_OOB), 1);
	assert_int_equal(smcr_sock_poll(p->sk[1]), RD | WR | POLLPRI);
	assert_int_equal(ioctl_int(p->sk[1], FIONREAD), 2);
	assert_int_equal(ioctl_int(p->sk[1], SIOCATMARK), 0);
	/* nothing more goes until B has read up to the mark */
	expect_fail(send_str(p->sk[0], "d", MSG_DONTWAIT), EAGAIN);
	assert_int_equal(smcr_sock_poll(p->sk[0]), 0);
	/* a read stops at the mark */
	expect_recv(p->sk[1], "ab", 0);
	assert_int_equal(ioctl_int(p->sk[1], SIOCATMARK), 1);
	assert_int_equal(recv_buf(p->sk[1], &c, 1, MSG_OOB | MSG_PEEK), 1);
	assert_int_equal(c, 'c');
	assert_int_equal(recv_buf(p->sk[1], &c, 1, MSG_OOB), 1);
	assert_int_equal(c, 'c');
	assert_int_equal(smcr_sock_poll(p->sk[1]), WR);
	assert_int_equal(ioctl_int(p->sk[1], SIOCATMARK), 1);
	expect_fail(recv_buf(p->sk[1], &c, 1, MSG_OOB), EINVAL);
	/* B's reading the urgent byte released A */
	assert_int_equal(smcr_sock_poll(p->sk[0]), WR);
	assert_int_equal(send_str(p->sk[0], "d", 0), 1);
	expect_recv(p->sk[1], "d", 0);
	assert_int_equal(ioctl_int(p->sk[1], SIOCATMARK), 0);
}

static void oobinline_keeps_the_urgent_byte_in_the_stream(void **state)
{
	struct pair *p = *state;
	char c;

	set_int(p->sk[1], SOL_SOCKET, SO_OOBINLINE, 1);
	assert_int_equal(send_str(p->sk[0], "xy", MSG_OOB), 2);
	/* as TCP: urgent data is told (POLLPRI) inline too, until it is read */
	assert_int_equal(smcr_sock_poll(p->sk[1]), RD | WR | POLLPRI);
	assert_int_equal(ioctl_int(p->sk[1], FIONREAD), 2);
	expect_fail(recv_buf(p->sk[1], &c, 1, MSG_OOB), EINVAL);
	expect_recv(p->sk[1], "xy", 0);
	assert_int_equal(smcr_sock_poll(p->sk[1]), WR);
}

static void recv_oob_without_urgent_data_is_einval(void **state)
{
	struct pair *p = *state;
	char c;

	expect_fail(recv_buf(p->sk[1], &c, 1, MSG_OOB), EINVAL);
}

static void rcvtimeo_ends_a_blocked_recv_with_eagain(void **state)
{
	struct pair *p = *state;
	char c;

	set_timeout(p->sk[1], SO_RCVTIMEO, 20);
	expect_fail(recv_buf(p->sk[1], &c, 1, 0), EAGAIN);
	/* the timeout is B's alone */
	assert_int_equal(p->sk[0]->conn.st->rcv_timeout_ms, 0);
}

static void sndtimeo_ends_a_blocked_send_short_or_with_eagain(void **state)
{
	struct pair *p = *state;
	uint8_t *buf = calloc(1, B_RMB + 100);

	assert_non_null(buf);
	set_timeout(p->sk[0], SO_SNDTIMEO, 20);
	/* what fitted, as TCP's count after a timeout */
	assert_int_equal(send_buf(p->sk[0], buf, B_RMB + 100, 0), B_RMB);
	expect_fail(send_buf(p->sk[0], buf, 1, 0), EAGAIN);
	free(buf);
}

/* ---- readiness ---- */

static void poll_bits_follow_the_half_closes(void **state)
{
	struct pair *p = *state;

	assert_int_equal(smcr_sock_poll(p->sk[0]), WR);
	assert_int_equal(send_str(p->sk[1], "hi", 0), 2);
	assert_int_equal(smcr_sock_poll(p->sk[0]), RD | WR);
	assert_int_equal(smcr_sock_shutdown(p->sk[1], -1, SHUT_WR), 0);
	assert_int_equal(smcr_sock_poll(p->sk[0]), RD | POLLRDHUP | WR);
	assert_int_equal(smcr_sock_poll(p->sk[1]), WR);
	/* both directions ended: hang-up */
	assert_int_equal(smcr_sock_shutdown(p->sk[0], -1, SHUT_WR), 0);
	assert_int_equal(smcr_sock_poll(p->sk[0]), RD | POLLRDHUP | WR | POLLHUP);
	assert_int_equal(smcr_sock_poll(p->sk[1]), RD | POLLRDHUP | WR | POLLHUP);
}

static void poll_bits_after_shut_rd(void **state)
{
	struct pair *p = *state;

	assert_int_equal(smcr_sock_shutdown(p->sk[1], -1, SHUT_RD), 0);
	assert_int_equal(smcr_sock_poll(p->sk[1]), RD | POLLRDHUP | WR);
	assert_int_equal(smcr_sock_poll(p->sk[0]), WR);
}

static void poll_bits_after_the_peer_closed(void **state)
{
	struct pair *p = *state;

	close_end(p, 0);
	assert_int_equal(smcr_sock_poll(p->sk[1]), RD | POLLRDHUP | WR);
	assert_int_equal(send_str(p->sk[1], "lost", 0), 4);
	/* TCP's reset: hang-up, and an error until told */
	assert_int_equal(smcr_sock_poll(p->sk[1]), RD | POLLRDHUP | WR | POLLHUP | POLLERR);
	assert_int_equal(so_error(p->sk[1]), EPIPE);
	assert_int_equal(smcr_sock_poll(p->sk[1]), RD | POLLRDHUP | WR | POLLHUP);
}

static void calls_before_smc_fail_as_tcp_would(void **state)
{
	struct pair *p = *state;
	int value, rc;
	char c;

	atomic_store(&p->sk[1]->sh->phase, SMCR_SOCK_SETUP);
	expect_fail(recv_buf(p->sk[1], &c, 1, 0), EAGAIN);
	expect_fail(send_str(p->sk[1], "x", 0), EAGAIN);
	assert_int_equal(smcr_sock_poll(p->sk[1]), 0);
	assert_false(smcr_sock_ioctl(p->sk[1], FIONREAD, &value, &rc));
	atomic_store(&p->sk[1]->sh->phase, SMCR_SOCK_RESET);
	expect_fail(recv_buf(p->sk[1], &c, 1, 0), ECONNRESET);
	expect_fail(send_str(p->sk[1], "x", 0), ECONNRESET);
	assert_int_equal(smcr_sock_poll(p->sk[1]), POLLIN | POLLOUT | POLLERR | POLLHUP);
}

static void wake_fd_signals_events_once_armed(void **state)
{
	struct pair *p = *state;
	struct smcr_sock *b = p->sk[1];
	int fd = smcr_sock_wake_fd(b);
	uint32_t since = smcr_sock_events(b);

	assert_true(smcr_sock_arm(b, since, false, 0));
	assert_false(fd_readable(fd));
	assert_int_equal(send_str(p->sk[0], "z", 0), 1);
	assert_true(fd_readable(fd));
	assert_int_not_equal(smcr_sock_events(b), since);
	/* consumed and armed again, but the count moved: look before sleeping */
	assert_false(smcr_sock_arm(b, since, true, 0));
	assert_false(fd_readable(fd));
	since = smcr_sock_events(b);
	assert_true(smcr_sock_arm(b, since, false, 0));
	/* a local change (SHUT_RD) wakes a poller too */
	assert_int_equal(smcr_sock_shutdown(b, -1, SHUT_RD), 0);
	assert_true(fd_readable(fd));
	assert_int_not_equal(smcr_sock_events(b), since);
}

/*
 * With another sleeper on the wake descriptor, an arm leaves it readable
 * for that one; a sleeper that comes while an arm reads it empty gets it
 * written again.
 */
static void wake_fd_kept_for_other_sleepers(void **state)
{
	struct pair *p = *state;
	struct smcr_sock *b = p->sk[1];
	struct fake_end *end = end_of(&b->conn);
	int fd = smcr_sock_wake_fd(b);
	uint32_t since;

	assert_int_equal(smcr_fd_sleepers_add(fd, 1), 0);
	assert_int_equal(send_str(p->sk[0], "z", 0), 1);
	since = smcr_sock_events(b);
	assert_true(smcr_sock_arm(b, since, true, 0));
	assert_true(fd_readable(fd));           /* the other sleeper's, still */
	assert_true(smcr_sock_arm(b, since, true, 1));
	assert_false(fd_readable(fd));          /* the one sleeper is the caller */
	assert_int_equal(smcr_fd_sleepers_add(fd, -1), 1);
	assert_int_equal(send_str(p->sk[0], "z", 0), 1);
	since = smcr_sock_events(b);
	end->joined_in_arm = true;
	assert_false(smcr_sock_arm(b, since, true, 0));
	end->joined_in_arm = false;
	assert_true(fd_readable(fd));
	assert_int_not_equal(smcr_sock_events(b), since);
	assert_int_equal(smcr_fd_sleepers_add(fd, -1), 1);
	assert_int_equal(smcr_fd_sleepers_add(fd, -1), 0);      /* never below 0 */
	assert_int_equal(smcr_fd_sleepers(fd), 0);
}

/* ---- wake-ups of blocked calls ---- */

static void blocked_recv_wakes_when_the_peer_sends(void **state)
{
	struct call c;

	recv_blocked_until(*state, &c, a_sends_ping);
	assert_int_equal(c.rc, 4);
	assert_memory_equal(c.in, "ping", 4);
}

static void blocked_recv_wakes_at_the_peers_shut_wr(void **state)
{
	struct call c;

	recv_blocked_until(*state, &c, a_shuts_wr);
	assert_int_equal(c.rc, 0);
}

static void blocked_recv_wakes_at_a_local_abort(void **state)
{
	struct call c;

	recv_blocked_until(*state, &c, b_aborts);
	assert_int_equal(c.rc, -1);
	assert_int_equal(c.err, ECONNRESET);
}

/*
 * As TCP (shutdown's state change wakes every reader, which then sees end
 * of file): the usual way to stop a thread that sits in recv.
 */
static void blocked_recv_wakes_at_a_local_shut_rd(void **state)
{
	struct call c;

	recv_blocked_until(*state, &c, b_shuts_rd);
	assert_int_equal(c.rc, 0);
}

static void blocked_send_ends_short_at_a_local_shut_wr(void **state)
{
	struct pair *p = *state;
	struct call c;

	send_blocked_until(p, &c, a_shuts_wr);
	/* what went before the shutdown, as TCP's count */
	assert_int_equal(c.rc, B_RMB);
	expect_fail(send_str(p->sk[0], "x", 0), EPIPE);
}

static void blocked_send_wakes_when_the_peer_drains(void **state)
{
	struct pair *p = *state;
	struct call c;

	send_blocked_until(p, &c, b_drains_its_ring);
	assert_int_equal(c.rc, BIG_SEND);
	expect_big_send(p->sk[1], B_RMB, BIG_SEND - B_RMB);
	assert_int_equal(ioctl_int(p->sk[1], FIONREAD), 0);
}

#define PAIR_TEST(f) cmocka_unit_test_setup_teardown(f, pair_setup, pair_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		PAIR_TEST(bytes_cross_both_ways_exactly),
		PAIR_TEST(iovecs_gather_and_scatter_in_order),
		PAIR_TEST(peek_leaves_the_bytes_and_trunc_drops_them),
		PAIR_TEST(waitall_returns_the_whole_request),
		PAIR_TEST(waitall_is_short_at_end_of_file),
		PAIR_TEST(empty_nonblocking_recv_fails_with_eagain),
		PAIR_TEST(full_peer_rmb_makes_a_nonblocking_send_short_then_eagain),
		PAIR_TEST(shut_wr_peer_reads_the_rest_then_eof_and_can_reply),
		PAIR_TEST(shut_rd_reads_what_is_there_then_eof_and_still_sends),
		PAIR_TEST(shutdown_refuses_an_unknown_how),
		PAIR_TEST(close_reads_as_eof_then_one_send_goes_then_epipe),
		PAIR_TEST(local_readiness_changes_move_events),
		PAIR_TEST(epipe_after_close_is_reported_once_by_so_error),
		PAIR_TEST(epipe_raises_sigpipe_unless_msg_nosignal),
		PAIR_TEST(close_with_unread_data_resets_the_peer),
		PAIR_TEST(close_with_zero_linger_resets_the_peer),
		PAIR_TEST(local_abort_resets_both_ends),
		PAIR_TEST(tcp_end_without_cdc_close_reads_as_eof),
		PAIR_TEST(fionread_and_siocoutq_count_what_waits),
		PAIR_TEST(tcp_cork_holds_bytes_until_uncorked),
		PAIR_TEST(shut_wr_announces_corked_bytes),
		PAIR_TEST(other_ioctls_and_options_are_the_kernels),
		PAIR_TEST(urgent_byte_is_out_of_band_with_its_mark),
		PAIR_TEST(oobinline_keeps_the_urgent_byte_in_the_stream),
		PAIR_TEST(recv_oob_without_urgent_data_is_einval),
		PAIR_TEST(rcvtimeo_ends_a_blocked_recv_with_eagain),
		PAIR_TEST(sndtimeo_ends_a_blocked_send_short_or_with_eagain),
		PAIR_TEST(poll_bits_follow_the_half_closes),
		PAIR_TEST(poll_bits_after_shut_rd),
		PAIR_TEST(poll_bits_after_the_peer_closed),
		PAIR_TEST(calls_before_smc_fail_as_tcp_would),
		PAIR_TEST(wake_fd_signals_events_once_armed),
		PAIR_TEST(wake_fd_kept_for_other_sleepers),
		PAIR_TEST(blocked_recv_wakes_when_the_peer_sends),
		PAIR_TEST(blocked_recv_wakes_at_the_peers_shut_wr),
		PAIR_TEST(blocked_recv_wakes_at_a_local_abort),
		PAIR_TEST(blocked_recv_wakes_at_a_local_shut_rd),
		PAIR_TEST(blocked_send_ends_short_at_a_local_shut_wr),
		PAIR_TEST(blocked_send_wakes_when_the_peer_drains),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
