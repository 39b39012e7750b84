/*
 * Unit tests of the ring data path: smc_tx.c and smc_rx.c over the
 * shared-memory transport (smc_shm.c), between two processes.
 *
 * Each test forks.  Parent and child each create their RMB in their own
 * sealed memfd, then map the other's, as two processes on one host do
 * after the CLC exchange.  The parent checks with cmocka; the child checks
 * with CHECK(), which exits non-zero, and the parent asserts its exit
 * status.  A socketpair carries the test's own stepping and results.
 */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "smc_conn.h"
#include "smc_leave.h"
#include "smc_rx.h"
#include "smc_shm.h"
#include "smc_tx.h"
#include "sys.h"

#define CHECK(cond)                                                               \
	do {                                                                      \
		if (!(cond)) {                                                    \
			fprintf(stderr, "child: %s:%d: CHECK(%s) failed\n", __FILE__, \
				__LINE__, #cond);                                 \
			_exit(1);                                                 \
		}                                                                 \
	} while (0)

/* ---- two processes, one connection ---- */

struct pair_opts {
	unsigned int size_class[2];	/* the parent's RMB, the child's */
	uint16_t start_wrap;		/* every cursor starts at start_wrap:0 */
};

typedef void role_fn(struct smc_conn *conn, int sock);

static pid_t child_pid;
static struct pair_opts pair_now;	/* of the pair running, for both ends */

/* A sealed memfd, as smcrd's broker hands out (smcr_sys_memfd_sealed). */
static int test_memfd(unsigned int size_class)
{
	int fd = memfd_create("smcr-test-rmb", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0 || ftruncate(fd, (off_t)smc_shm_region_size(size_class)) != 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
		return -1;
	return fd;
}

/* One end's buffer and wake-up channel, as libsmcr sets them up for an offer. */
struct ring_end {
	int memfd;
	struct smcr_wake_channel wake;
};

static struct ring_end ring_end_new(unsigned int size_class)
{
	struct ring_end e = { .memfd = test_memfd(size_class) };

	assert_true(e.memfd >= 0);
	assert_int_equal(smcr_sys_wake_channel(&e.wake), 0);
	return e;
}

static void ring_end_close(struct ring_end *e)
{
	close(e->memfd);
	close(e->wake.rx);
	close(e->wake.tx);
}

/* Copies of ch for a transport to keep. */
static struct smcr_wake_channel channel_dup(struct smcr_wake_channel ch)
{
	return (struct smcr_wake_channel){ .rx = dup(ch.rx), .tx = dup(ch.tx) };
}

static void put(int sock, uint64_t v)
{
	if (write(sock, &v, sizeof(v)) != sizeof(v))
		abort();
}

static uint64_t get(int sock)
{
	uint64_t v;

	if (read(sock, &v, sizeof(v)) != sizeof(v))
		abort();
	return v;
}

/* One side: our RMB, wait for the peer's to exist, attach it.  0 or an errno. */
static int side_setup(struct smc_conn *conn, struct smc_conn_state *st, int sock,
		      const struct ring_end *own, const struct ring_end *peer, unsigned int own_class, unsigned int peer_class, uint32_t token,
		      uint32_t peer_token, uint16_t start_wrap)
{
	struct smc_clc_accept_confirm desc = {
		.smc_type = SMC_TYPE_D,
		.d = { .dmbe_size = (uint8_t)peer_class },
	};
	struct smc_cursor start = { .wrap = start_wrap };
	int rc;

	smc_conn_init(conn, &smc_shm_ops, st, true);
	rc = conn->ops->create_rmb(conn, own_class, own->memfd, channel_dup(own->wake));
	if (rc)
		return rc;
	put(sock, 0);
	get(sock);
	rc = conn->ops->attach_peer(conn, &desc, peer->memfd, dup(peer->wake.tx));
	if (rc)
		return rc;
	conn->st->token = token;
	conn->st->peer_token = peer_token;
	conn->st->tx_prep = conn->st->tx_sent = conn->st->tx_fin = start;
	conn->st->rx_prod = conn->st->rx_cons = conn->st->rx_confirmed = start;
	return 0;
}

/* Runs parent and child on the two ends of one connection. */
static void pair_run(const struct pair_opts *o, role_fn *parent, role_fn *child)
{
	struct ring_end end0 = ring_end_new(o->size_class[0]), end1 = ring_end_new(o->size_class[1]);
	int sock[2], status;
	struct smc_conn *conn = malloc(sizeof(*conn));
	struct smc_conn_state *st = malloc(sizeof(*st));

	assert_non_null(conn);
	assert_non_null(st);

	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sock), 0);
	pair_now = *o;
	child_pid = fork();
	assert_true(child_pid >= 0);
	if (child_pid == 0) {
		alarm(60);
		close(sock[0]);
		CHECK(side_setup(conn, st, sock[1], &end1, &end0, o->size_class[1], o->size_class[0],
				 0xc0ffee02, 0xc0ffee01, o->start_wrap) == 0);
		child(conn, sock[1]);
		_exit(0);
	}
	close(sock[1]);
	alarm(100);	/* a dead child would leave us waiting on the ring */
	assert_int_equal(side_setup(conn, st, sock[0], &end0, &end1, o->size_class[0],
				    o->size_class[1], 0xc0ffee01, 0xc0ffee02, o->start_wrap), 0);
	ring_end_close(&end0);
	ring_end_close(&end1);
	parent(conn, sock[0]);
	assert_int_equal(waitpid(child_pid, &status, 0), child_pid);
	alarm(0);
	child_pid = 0;
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	smc_conn_destroy(conn);
	free(conn);
	free(st);
	close(sock[0]);
}

static int reap_child(void **state)
{
	(void)state;
	if (child_pid > 0) {
		kill(child_pid, SIGKILL);
		waitpid(child_pid, NULL, 0);
		child_pid = 0;
	}
	return 0;
}

static const struct pair_opts small_rings = { .size_class = { 0, 0 } };

static ssize_t send_buf(struct smc_conn *conn, const void *buf, size_t len, int flags,
			bool nonblock)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return smc_tx_send(conn, &iov, 1, flags, nonblock);
}

static ssize_t recv_buf(struct smc_conn *conn, void *buf, size_t len, int flags)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return smc_rx_recv(conn, &iov, 1, flags, false);
}

static double elapsed_ms(uint64_t since_ns)
{
	return (double)(smc_clock_ns() - since_ns) / 1e6;
}

/* ---- a reproducible byte stream, and random sizes ---- */

struct rng {
	uint64_t s;
};

static uint64_t rng_next(struct rng *r)
{
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * 0x2545f4914f6cdd1dull;
}

/* Bytes of stream seed, the same however they are asked for. */
struct stream {
	struct rng rng;
	uint64_t word;
	unsigned int left;	/* bytes of word not yet used */
};

static void stream_fill(struct stream *s, uint8_t *buf, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (s->left == 0) {
			s->word = rng_next(&s->rng);
			s->left = 8;
		}
		buf[i] = (uint8_t)(s->word >> (8 * --s->left));
	}
}

static uint64_t fnv1a(uint64_t h, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

/* buf[0..n) as 1 to 3 iovecs cut at random places. */
static int random_iov(struct rng *r, uint8_t *buf, size_t n, struct iovec iov[3])
{
	size_t a = n ? rng_next(r) % (n + 1) : 0, b = n ? rng_next(r) % (n + 1) : 0;
	int cnt = 1 + (int)(rng_next(r) % 3);

	if (a > b) {
		size_t t = a;

		a = b;
		b = t;
	}
	if (cnt == 1)
		a = b = n;
	else if (cnt == 2)
		b = n;
	iov[0] = (struct iovec){ buf, a };
	iov[1] = (struct iovec){ buf + a, b - a };
	iov[2] = (struct iovec){ buf + b, n - b };
	return cnt;
}

#define MAX_IO (256 * 1024)

/* Sends total bytes of stream seed in random pieces; the checksum, or 0 on a failure. */
static uint64_t stream_send(struct smc_conn *conn, uint64_t total, uint64_t seed)
{
	struct stream s = { .rng = { seed } };
	struct rng sizes = { seed ^ 0x5555 };
	uint8_t *buf = malloc(MAX_IO);
	uint64_t sum = 0xcbf29ce484222325ull;

	for (uint64_t sent = 0; buf && sent < total;) {
		size_t n = 1 + rng_next(&sizes) % MAX_IO;
		struct iovec iov[3];
		int cnt;

		if (n > total - sent)
			n = total - sent;
		stream_fill(&s, buf, n);
		sum = fnv1a(sum, buf, n);
		cnt = random_iov(&sizes, buf, n, iov);
		if (smc_tx_send(conn, iov, cnt, 0, false) != (ssize_t)n) {
			sum = 0;
			break;
		}
		sent += n;
	}
	free(buf);
	return sum;
}

/*
 * Receives stream seed in random pieces until end of file, checking each
 * byte; the checksum of total bytes, or 0 if a byte or the length differs.
 */
static uint64_t stream_recv(struct smc_conn *conn, uint64_t total, uint64_t seed)
{
	struct stream s = { .rng = { seed } };
	struct rng sizes = { seed ^ 0xaaaa };
	uint8_t *buf = malloc(MAX_IO), *want = malloc(MAX_IO);
	uint64_t sum = 0xcbf29ce484222325ull, got = 0;
	ssize_t r;

	if (!buf || !want)
		return 0;
	for (;;) {
		size_t n = 1 + rng_next(&sizes) % MAX_IO;
		struct iovec iov[3];
		int cnt = random_iov(&sizes, buf, n, iov);
		bool nonblock = rng_next(&sizes) % 4 == 0;

		r = smc_rx_recv(conn, iov, cnt, 0, nonblock);
		if (r == -EAGAIN && nonblock)
			continue;
		if (r <= 0)
			break;
		stream_fill(&s, want, (size_t)r);
		if (memcmp(buf, want, (size_t)r) != 0) {
			fprintf(stderr, "stream differs within bytes %llu..%llu\n",
				(unsigned long long)got, (unsigned long long)(got + r));
			break;
		}
		sum = fnv1a(sum, buf, (size_t)r);
		got += (uint64_t)r;
	}
	free(buf);
	free(want);
	return r == 0 && got == total ? sum : 0;
}

/* ---- streaming ---- */

#define STREAM_BYTES (64ull << 20)

static void stream_parent_sends(struct smc_conn *conn, int sock)
{
	uint64_t sum = stream_send(conn, STREAM_BYTES, 42);

	assert_int_not_equal(sum, 0);
	assert_int_equal(smc_tx_shutdown(conn), 0);
	assert_int_equal(get(sock), sum);
}

/* The child's end: every byte right, then end of file, the cursors a whole number of laps on. */
static void stream_child_receives(struct smc_conn *conn, int sock)
{
	uint64_t sum = stream_recv(conn, STREAM_BYTES, 42);
	struct smc_cursor end = {
		.wrap = (uint16_t)(pair_now.start_wrap + STREAM_BYTES / conn->st->rmb_size),
		.count = STREAM_BYTES % conn->st->rmb_size,
	};

	CHECK(sum != 0);
	CHECK(smc_cursor_equal(conn->st->rx_cons, end));
	CHECK(smc_cursor_equal(conn->st->rx_prod, end));
	put(sock, sum);
}

/* 64 MiB through the smallest ring (4096 laps) and through the largest. */
static void stream_64mib_small_ring(void **state)
{
	(void)state;
	pair_run(&small_rings, stream_parent_sends, stream_child_receives);
}

static void stream_64mib_large_ring(void **state)
{
	const struct pair_opts o = { .size_class = { 6, 6 } };

	(void)state;
	pair_run(&o, stream_parent_sends, stream_child_receives);
}

/* The wrap counter rolls over from 65535 to 0 mid-stream. */
static void stream_across_wrap_rollover(void **state)
{
	const struct pair_opts o = { .size_class = { 0, 0 }, .start_wrap = 65530 };

	(void)state;
	pair_run(&o, stream_parent_sends, stream_child_receives);
}

/* Both directions at once, a sending and a receiving thread in each process. */
#define DUPLEX_BYTES (16ull << 20)

struct duplex {
	struct smc_conn *conn;
	uint64_t seed, sum;
};

static void *duplex_sender(void *arg)
{
	struct duplex *d = arg;

	d->sum = stream_send(d->conn, DUPLEX_BYTES, d->seed);
	if (d->sum && smc_tx_shutdown(d->conn) != 0)
		d->sum = 0;
	return NULL;
}

static bool duplex(struct smc_conn *conn, int sock, uint64_t send_seed, uint64_t recv_seed)
{
	struct duplex d = { .conn = conn, .seed = send_seed };
	pthread_t t;
	uint64_t got, sum_in;

	if (pthread_create(&t, NULL, duplex_sender, &d) != 0)
		return false;
	got = stream_recv(conn, DUPLEX_BYTES, recv_seed);
	pthread_join(t, NULL);
	put(sock, d.sum);
	sum_in = get(sock);
	return d.sum != 0 && got != 0 && got == sum_in;
}

static void duplex_parent(struct smc_conn *conn, int sock)
{
	assert_true(duplex(conn, sock, 1, 2));
}

static void duplex_child(struct smc_conn *conn, int sock)
{
	CHECK(duplex(conn, sock, 2, 1));
}

static void duplex_two_threads_each(void **state)
{
	const struct pair_opts o = { .size_class = { 0, 1 } };

	(void)state;
	pair_run(&o, duplex_parent, duplex_child);
}

/* ---- flow control ---- */

#define RING 16384

static void full_parent(struct smc_conn *conn, int sock)
{
	static uint8_t buf[RING + 1000];
	uint64_t t0;

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 7);
	/* exactly the ring fits; the rest waits */
	assert_int_equal(send_buf(conn, buf, sizeof(buf), 0, true), RING);
	assert_true(conn->st->write_blocked);
	assert_false(smc_tx_writable(conn));
	assert_int_equal(send_buf(conn, buf + RING, 1000, 0, true), -EAGAIN);
	put(sock, 1);
	/* the child drains the ring 50 ms later: its consumer update unblocks us */
	t0 = smc_clock_ns();
	assert_int_equal(send_buf(conn, buf + RING, 1000, 0, false), 1000);
	assert_true(elapsed_ms(t0) >= 40);
	assert_false(conn->st->write_blocked);
	assert_true(smc_tx_writable(conn));
	/* blocked again, in one call, for more than a ring */
	assert_int_equal(send_buf(conn, buf, sizeof(buf), 0, false), (ssize_t)sizeof(buf));
	assert_int_equal(smc_tx_close(conn), 0);
	get(sock);
}

static void full_child(struct smc_conn *conn, int sock)
{
	static uint8_t buf[2 * (RING + 1000)];
	size_t got = 0;
	ssize_t r;

	get(sock);
	CHECK(smc_rx_readable(conn) == RING);
	CHECK(conn->st->peer_prod_flags & SMC_CDC_WRITE_BLOCKED);
	CHECK(smc_cursor_diff(conn->st->rmb_size, conn->st->rx_cons, conn->st->rx_prod) == RING);
	usleep(50000);
	while ((r = recv_buf(conn, buf + got, sizeof(buf) - got, 0)) > 0)
		got += (size_t)r;
	CHECK(r == 0 && got == sizeof(buf));
	for (size_t i = 0; i < sizeof(buf); i++)
		CHECK(buf[i] == (uint8_t)(i % (RING + 1000) * 7));
	put(sock, 1);
}

static void exact_full_ring_and_write_blocked(void **state)
{
	(void)state;
	pair_run(&small_rings, full_parent, full_child);
}

/* MSG_MORE writes but does not announce. */
static void cork_parent(struct smc_conn *conn, int sock)
{
	static uint8_t big[RING];

	assert_int_equal(send_buf(conn, "abc", 3, MSG_MORE, false), 3);
	put(sock, 1);
	get(sock);
	assert_int_equal(send_buf(conn, "def", 3, 0, false), 3);
	put(sock, 2);
	get(sock);
	/*
	 * Filling the ring with MSG_MORE announces it: nothing more could be.
	 * (The child has read 6 bytes, too few to report yet.)
	 */
	assert_int_equal(send_buf(conn, big, RING - 6, MSG_MORE, true), RING - 6);
	assert_true(conn->st->write_blocked);
	put(sock, 3);
	get(sock);
}

static void cork_child(struct smc_conn *conn, int sock)
{
	char buf[8];

	get(sock);
	CHECK(smc_rx_readable(conn) == 0);
	put(sock, 1);
	get(sock);
	CHECK(smc_rx_readable(conn) == 6);
	CHECK(recv_buf(conn, buf, sizeof(buf), 0) == 6 && memcmp(buf, "abcdef", 6) == 0);
	put(sock, 2);
	get(sock);
	CHECK(smc_rx_readable(conn) == RING - 6);
	put(sock, 3);
}

static void msg_more_defers_the_cdc(void **state)
{
	(void)state;
	pair_run(&small_rings, cork_parent, cork_child);
}

/* ---- receive flags ---- */

static void flags_parent(struct smc_conn *conn, int sock)
{
	get(sock);
	assert_int_equal(send_buf(conn, "hello world", 11, 0, false), 11);
	get(sock);
	for (int i = 0; i < 10; i++) {
		char piece[100];

		memset(piece, 'a' + i, sizeof(piece));
		assert_int_equal(send_buf(conn, piece, sizeof(piece), 0, false), 100);
		usleep(3000);
	}
	assert_int_equal(smc_tx_close(conn), 0);
	get(sock);
}

static void flags_child(struct smc_conn *conn, int sock)
{
	char buf[1000];
	struct iovec discard = { .iov_base = NULL, .iov_len = 1 };
	uint64_t t0 = smc_clock_ns();

	CHECK(recv_buf(conn, buf, sizeof(buf), MSG_DONTWAIT) == -EAGAIN);
	conn->st->rcv_timeout_ms = 50;
	CHECK(recv_buf(conn, buf, sizeof(buf), 0) == -EAGAIN);
	CHECK(elapsed_ms(t0) >= 45);
	conn->st->rcv_timeout_ms = 0;
	put(sock, 1);
	CHECK(recv_buf(conn, buf, 5, MSG_PEEK) == 5 && memcmp(buf, "hello", 5) == 0);
	CHECK(smc_rx_readable(conn) == 11);
	CHECK(recv_buf(conn, buf, 5, MSG_PEEK) == 5 && memcmp(buf, "hello", 5) == 0);
	CHECK(recv_buf(conn, buf, 5, 0) == 5 && memcmp(buf, "hello", 5) == 0);
	CHECK(smc_rx_recv(conn, &discard, 1, MSG_TRUNC, false) == 1);	/* the space */
	CHECK(recv_buf(conn, buf, sizeof(buf), 0) == 5 && memcmp(buf, "world", 5) == 0);
	CHECK(recv_buf(conn, buf, sizeof(buf), MSG_DONTWAIT) == -EAGAIN);
	put(sock, 2);
	/* ten pieces of 100 bytes, 3 ms apart: one call */
	memset(buf, 0, sizeof(buf));
	CHECK(recv_buf(conn, buf, sizeof(buf), MSG_WAITALL) == 1000);
	for (int i = 0; i < 1000; i++)
		CHECK(buf[i] == 'a' + i / 100);
	CHECK(recv_buf(conn, buf, sizeof(buf), MSG_WAITALL) == 0);
	put(sock, 3);
}

static void peek_trunc_waitall_dontwait_timeout(void **state)
{
	(void)state;
	pair_run(&small_rings, flags_parent, flags_child);
}

/*
 * A peer may rewrite bytes of our ring that it announced and we have not
 * consumed (it maps the ring, or writes it by RDMA): whatever it does, the
 * bytes a peek returned are the ones the reads after it return, as over
 * TCP.  The parent plays such a peer, rewriting the child's ring with raw
 * writes between the child's calls.
 */
static void rewrite_ring(struct smc_conn *conn, int sock, char with)
{
	char junk[11];

	memset(junk, with, sizeof(junk));
	get(sock);
	assert_int_equal(conn->ops->write(conn, 0, junk, sizeof(junk)), 0);
	put(sock, 1);
}

static void peek_rewrite_parent(struct smc_conn *conn, int sock)
{
	assert_int_equal(send_buf(conn, "hello world", 11, 0, false), 11);
	rewrite_ring(conn, sock, 'X');
	rewrite_ring(conn, sock, 'Y');
	get(sock);
}

static void peek_rewrite_child(struct smc_conn *conn, int sock)
{
	char a[4] = { 0 }, b[16] = { 0 };
	struct iovec iov[2] = { { a, 1 }, { a + 1, 2 } };

	CHECK(recv_buf(conn, b, 5, MSG_PEEK | MSG_WAITALL) == 5 && memcmp(b, "hello", 5) == 0);
	put(sock, 1);
	get(sock);
	/* a longer peek: the bytes peeked before, then the ring's as they are now */
	CHECK(recv_buf(conn, b, 11, MSG_PEEK) == 11 && memcmp(b, "helloXXXXXX", 11) == 0);
	put(sock, 1);
	get(sock);
	/* partial reads, a readv, a peek between them: still what the peeks saw */
	CHECK(smc_rx_recv(conn, iov, 2, 0, false) == 3 && memcmp(a, "hel", 3) == 0);
	CHECK(recv_buf(conn, b, 8, MSG_PEEK | MSG_WAITALL) == 8 && memcmp(b, "loXXXXXX", 8) == 0);
	CHECK(recv_buf(conn, b, 8, MSG_WAITALL) == 8 && memcmp(b, "loXXXXXX", 8) == 0);
	CHECK(conn->peek == NULL && conn->st->peek_owner == 0);	/* read: the copy is gone */
	put(sock, 1);
}

static void peek_then_read_despite_rewrites(void **state)
{
	(void)state;
	pair_run(&small_rings, peek_rewrite_parent, peek_rewrite_child);
}

/*
 * The copy is one view's.  Another holder of the socket (here a second
 * view in the same process, as after SCM_RIGHTS) that reads after the peek
 * takes the ring's bytes and ends the copy's claim: the peeking view then
 * reads on from the new rx_cons, never from its stale copy.
 */
static void holders_parent(struct smc_conn *conn, int sock)
{
	assert_int_equal(send_buf(conn, "hello world", 11, 0, false), 11);
	get(sock);
}

static void holders_child(struct smc_conn *conn, int sock)
{
	struct smc_conn other = *conn;
	char b[16];

	other.peek = NULL;
	CHECK(recv_buf(conn, b, 5, MSG_PEEK | MSG_WAITALL) == 5 && memcmp(b, "hello", 5) == 0);
	CHECK(conn->peek != NULL && conn->st->peek_owner != 0);
	CHECK(recv_buf(&other, b, 3, MSG_WAITALL) == 3 && memcmp(b, "hel", 3) == 0);
	CHECK(conn->st->peek_owner == 0);
	CHECK(recv_buf(conn, b, 8, MSG_WAITALL) == 8 && memcmp(b, "lo world", 8) == 0);
	CHECK(conn->peek == NULL);
	put(sock, 1);
}

static void peek_copy_yields_to_another_holder(void **state)
{
	(void)state;
	pair_run(&small_rings, holders_parent, holders_child);
}

/* ---- close ---- */

static void half_close_parent(struct smc_conn *conn, int sock)
{
	char buf[64];

	assert_int_equal(send_buf(conn, "request", 7, 0, false), 7);
	assert_int_equal(smc_tx_shutdown(conn), 0);
	assert_int_equal(send_buf(conn, "late", 4, 0, false), -EPIPE);
	/* the other direction still works */
	assert_int_equal(recv_buf(conn, buf, 8, MSG_WAITALL), 8);
	assert_memory_equal(buf, "response", 8);
	assert_int_equal(smc_tx_close(conn), 0);
	put(sock, 1);
	/* the child closes too: end of file */
	assert_int_equal(recv_buf(conn, buf, sizeof(buf), 0), 0);
	assert_int_equal(conn->st->peer_state, SMC_CDC_PEER_DONE_WRITING | SMC_CDC_PEER_CONN_CLOSED);
}

static void half_close_child(struct smc_conn *conn, int sock)
{
	char buf[64];

	CHECK(recv_buf(conn, buf, sizeof(buf), MSG_WAITALL) == 7);
	CHECK(memcmp(buf, "request", 7) == 0);
	CHECK(recv_buf(conn, buf, sizeof(buf), 0) == 0);
	CHECK(recv_buf(conn, buf, sizeof(buf), MSG_DONTWAIT) == 0);
	CHECK(conn->st->peer_state == SMC_CDC_PEER_DONE_WRITING);
	CHECK(send_buf(conn, "response", 8, 0, false) == 8);
	get(sock);
	/* the parent has closed: as TCP, the first send goes (and is lost), the next is EPIPE */
	CHECK(send_buf(conn, "x", 1, 0, false) == 1);
	CHECK(send_buf(conn, "x", 1, 0, false) == -EPIPE);
	CHECK(smc_tx_close(conn) == 0);
}

static void half_close_then_close(void **state)
{
	(void)state;
	pair_run(&small_rings, half_close_parent, half_close_child);
}

static void abort_parent(struct smc_conn *conn, int sock)
{
	char buf[8];

	assert_int_equal(send_buf(conn, "unread", 6, 0, false), 6);
	smc_conn_abort(conn);
	assert_int_equal(recv_buf(conn, buf, sizeof(buf), 0), -ECONNRESET);
	assert_int_equal(send_buf(conn, "x", 1, 0, false), -ECONNRESET);
	put(sock, 1);
	get(sock);
}

static void abort_child(struct smc_conn *conn, int sock)
{
	char buf[8];

	get(sock);
	CHECK(recv_buf(conn, buf, sizeof(buf), 0) == -ECONNRESET);
	CHECK(send_buf(conn, "x", 1, 0, false) == -ECONNRESET);
	CHECK(smc_tx_writable(conn));
	CHECK(conn->st->peer_state & SMC_CDC_PEER_CONN_ABORT);
	put(sock, 1);
}

static void abort_is_connreset(void **state)
{
	(void)state;
	pair_run(&small_rings, abort_parent, abort_child);
}

/*
 * Any process holding the socket maps the connection's state page: one
 * that rewrites its sizes and cursors breaks the connection, and crashes
 * nobody (bounds come from each process's own view, not from the page).
 */
static void rewrite_parent(struct smc_conn *conn, int sock)
{
	static char big[65536];

	conn->st->peer_rmb_size = 1u << 30;
	conn->st->tx_prep = (struct smc_cursor){ .wrap = 3, .count = 1u << 29 };
	assert_int_equal(send_buf(conn, big, sizeof(big), 0, false), -ECONNRESET);
	put(sock, 1);
	get(sock);
}

static void rewrite_child(struct smc_conn *conn, int sock)
{
	char buf[64];

	get(sock);
	conn->st->rmb_size = 1u << 30;
	conn->st->rx_prod = (struct smc_cursor){ .wrap = 7, .count = 1u << 29 };
	CHECK(recv_buf(conn, buf, sizeof(buf), MSG_DONTWAIT) == -ECONNRESET);
	put(sock, 1);
}

static void rewritten_state_is_a_reset_not_a_crash(void **state)
{
	(void)state;
	pair_run(&small_rings, rewrite_parent, rewrite_child);
}

/*
 * The error every call fails with is in the page too: one that another
 * holder rewrote to what is no errno fails the calls with ECONNRESET,
 * never makes them return it as a count of bytes (a send of 1 byte that
 * said 65536 went, a recv into 64 bytes that said 1 MiB came).
 */
static void forged_error_parent(struct smc_conn *conn, int sock)
{
	conn->st->err = -65536;
	assert_int_equal(send_buf(conn, "x", 1, 0, false), -ECONNRESET);
	put(sock, 1);
	get(sock);
}

static void forged_error_child(struct smc_conn *conn, int sock)
{
	char buf[64];

	get(sock);
	conn->st->err = -(1 << 20);
	CHECK(recv_buf(conn, buf, sizeof(buf), MSG_DONTWAIT) == -ECONNRESET);
	conn->st->err = INT_MIN;
	CHECK(recv_buf(conn, buf, sizeof(buf), MSG_DONTWAIT) == -ECONNRESET);
	put(sock, 1);
}

static void a_forged_error_is_a_reset_not_a_count(void **state)
{
	(void)state;
	pair_run(&small_rings, forged_error_parent, forged_error_child);
}

/* A reader blocked in one thread; abort from another wakes it. */
static void *blocked_reader(void *arg)
{
	char buf[8];

	return (void *)(intptr_t)recv_buf(arg, buf, sizeof(buf), 0);
}

static void wake_parent(struct smc_conn *conn, int sock)
{
	pthread_t t;
	void *rc;

	assert_int_equal(pthread_create(&t, NULL, blocked_reader, conn), 0);
	usleep(50000);
	smc_conn_abort(conn);
	assert_int_equal(pthread_join(t, &rc), 0);
	assert_int_equal((intptr_t)rc, -ECONNRESET);
	put(sock, 1);
}

static void wake_child(struct smc_conn *conn, int sock)
{
	char buf[8];

	get(sock);
	CHECK(recv_buf(conn, buf, sizeof(buf), 0) == -ECONNRESET);
}

static void local_abort_wakes_a_blocked_reader(void **state)
{
	(void)state;
	pair_run(&small_rings, wake_parent, wake_child);
}

/* ---- urgent data ---- */

static void urgent_parent(struct smc_conn *conn, int sock)
{
	uint64_t t0;

	assert_int_equal(send_buf(conn, "abc!", 4, MSG_OOB, false), 4);
	/* nothing after the mark until the child has read up to it */
	assert_int_equal(send_buf(conn, "def", 3, 0, true), -EAGAIN);
	assert_false(smc_tx_writable(conn));
	put(sock, 1);
	t0 = smc_clock_ns();
	assert_int_equal(send_buf(conn, "def", 3, 0, false), 3);
	assert_true(elapsed_ms(t0) >= 20);
	/* inline this time */
	get(sock);
	assert_int_equal(send_buf(conn, "gh", 2, MSG_OOB, false), 2);
	assert_int_equal(smc_tx_close(conn), 0);
	get(sock);
}

static void urgent_child(struct smc_conn *conn, int sock)
{
	char buf[16];

	get(sock);
	CHECK(smc_rx_urgent(conn));
	CHECK(conn->st->peer_prod_flags & SMC_CDC_URG_DATA_PRESENT);
	CHECK(conn->st->peer_prod_flags & SMC_CDC_URG_DATA_PENDING);
	CHECK(smc_rx_readable(conn) == 3);	/* "abc": the urgent byte is not in the stream */
	CHECK(recv_buf(conn, buf, 0, MSG_OOB | MSG_PEEK) == 0);	/* no room, no byte */
	CHECK(recv_buf(conn, buf, 1, MSG_OOB | MSG_PEEK) == 1 && buf[0] == '!');
	CHECK(recv_buf(conn, buf, 1, MSG_OOB) == 1 && buf[0] == '!');
	CHECK(recv_buf(conn, buf, 1, MSG_OOB) == -EINVAL);
	CHECK(!smc_rx_urgent(conn));
	usleep(25000);
	/* a read stops at the mark ... */
	CHECK(recv_buf(conn, buf, sizeof(buf), 0) == 3 && memcmp(buf, "abc", 3) == 0);
	/* ... the next steps over the urgent byte, which releases the sender */
	CHECK(recv_buf(conn, buf, 3, MSG_WAITALL) == 3 && memcmp(buf, "def", 3) == 0);
	conn->st->oob_inline = true;
	put(sock, 2);
	CHECK(recv_buf(conn, buf, 2, MSG_WAITALL) == 2 && memcmp(buf, "gh", 2) == 0);
	CHECK(recv_buf(conn, buf, 1, MSG_OOB) == -EINVAL);
	put(sock, 3);
}

static void urgent_data(void **state)
{
	(void)state;
	pair_run(&small_rings, urgent_parent, urgent_child);
}

/* ---- an idle reader sleeps ---- */

static double cpu_ms(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec * 1e3 + ru.ru_utime.tv_usec / 1e3 + ru.ru_stime.tv_sec * 1e3 +
	       ru.ru_stime.tv_usec / 1e3;
}

static void idle_parent(struct smc_conn *conn, int sock)
{
	uint64_t cpu_us;

	get(sock);
	usleep(200000);
	assert_int_equal(send_buf(conn, "x", 1, 0, false), 1);
	cpu_us = get(sock);
	print_message("idle reader: %.3f ms CPU while waiting 200 ms\n", cpu_us / 1e3);
	assert_true(cpu_us < 10000);
}

static void idle_child(struct smc_conn *conn, int sock)
{
	char c;
	double cpu;
	uint64_t t0;

	put(sock, 0);
	t0 = smc_clock_ns();
	cpu = cpu_ms();
	CHECK(recv_buf(conn, &c, 1, 0) == 1 && c == 'x');
	cpu = cpu_ms() - cpu;
	CHECK(elapsed_ms(t0) >= 190);
	put(sock, (uint64_t)(cpu * 1e3));
}

static void idle_reader_uses_no_cpu(void **state)
{
	(void)state;
	pair_run(&small_rings, idle_parent, idle_child);
}

/* ---- a CDC that breaks the protocol ---- */

static int bad_kind;

static void bad_cdc_parent(struct smc_conn *conn, int sock)
{
	uint8_t msg[SMC_CDC_MSG_LEN];
	struct smc_cdc cdc = { .seqno = 1, .token = conn->st->peer_token };
	char buf[8];

	assert_int_equal(send_buf(conn, "ok", 2, 0, false), 2);
	get(sock);
	cdc.prod = conn->st->tx_prep;
	switch (bad_kind) {
	case 0:		/* producer cursor beyond the ring */
		cdc.prod.count = conn->st->peer_rmb_size + 5;
		break;
	case 1:		/* more than a ring ahead of what the reader released */
		cdc.prod.wrap += 2;
		break;
	case 2:		/* consumer cursor beyond what the peer sent */
		cdc.cons.count = 100;
		break;
	case 3:		/* not the connection's token */
		cdc.token ^= 1;
		break;
	}
	smc_cdc_encode(&cdc, msg);
	if (bad_kind == 4)	/* not a CDC at all */
		msg[0] = 0x01;
	assert_int_equal(conn->ops->send_cdc(conn, msg), 0);
	/* the child aborts the connection */
	assert_int_equal(recv_buf(conn, buf, sizeof(buf), 0), -ECONNRESET);
	put(sock, 1);
}

static void bad_cdc_child(struct smc_conn *conn, int sock)
{
	char buf[8];

	CHECK(recv_buf(conn, buf, 2, MSG_WAITALL) == 2);
	put(sock, 1);
	CHECK(recv_buf(conn, buf, sizeof(buf), 0) == -ECONNRESET);
	CHECK(conn->st->err == ECONNRESET);
	CHECK(conn->st->local_state & SMC_CDC_PEER_CONN_ABORT);
	CHECK(smc_rx_readable(conn) == 0);
	get(sock);
}

static void bad_cdc_is_an_abort_not_a_crash(void **state)
{
	(void)state;
	for (bad_kind = 0; bad_kind <= 4; bad_kind++)
		pair_run(&small_rings, bad_cdc_parent, bad_cdc_child);
}

/* ---- the transport's own checks ---- */

static void attach_refuses_what_it_cannot_trust(void **state)
{
	struct smc_clc_accept_confirm peer = { .smc_type = SMC_TYPE_D, .d = { .dmbe_size = 0 } };
	int own = test_memfd(0), unsealed = memfd_create("x", MFD_CLOEXEC), blank = test_memfd(0);
	struct smcr_wake_channel ch;
	struct smc_conn conn;
	struct smc_conn_state st;

	(void)state;
	assert_int_equal(smcr_sys_wake_channel(&ch), 0);
	assert_true(own >= 0 && unsealed >= 0 && blank >= 0);
	assert_int_equal(ftruncate(unsealed, (off_t)smc_shm_region_size(0)), 0);
	smc_conn_init(&conn, &smc_shm_ops, &st, true);
	assert_int_equal(conn.ops->create_rmb(&conn, 7, own, ch), -EINVAL);
	assert_int_equal(conn.ops->create_rmb(&conn, 1, own, ch), -EINVAL);	/* memfd too small */
	assert_int_equal(conn.ops->create_rmb(&conn, 0, own, SMCR_NO_WAKE_CHANNEL), -EINVAL);
	assert_int_equal(conn.ops->create_rmb(&conn, 0, own, ch), 0);
	assert_int_equal(conn.st->rmb_size, 16384);
	/* a memfd the peer could shrink under our stores */
	assert_int_equal(conn.ops->attach_peer(&conn, &peer, unsealed, ch.tx), -EPERM);
	/* no RMB set up in it */
	assert_int_equal(conn.ops->attach_peer(&conn, &peer, blank, ch.tx), -EPROTO);
	/* its size is not the one announced */
	peer.d.dmbe_size = 1;
	assert_int_equal(conn.ops->attach_peer(&conn, &peer, own, ch.tx), -EINVAL);
	peer.smc_type = SMC_TYPE_R;
	assert_int_equal(conn.ops->attach_peer(&conn, &peer, own, ch.tx), -EPROTO);
	smc_conn_destroy(&conn);
	close(own);
	close(unsealed);
	close(blank);
}

/*
 * ---- leaving for TCP (smc_leave.c) ----
 * Each end sends LEAVE_UNREAD bytes the other does not read, then the
 * parent leaves, or both leave before either looked (at once: neither
 * can answer the other).  Each then sends LEAVE_AFTER bytes more, which
 * the leave sends over the stream (a socketpair here), and reads all the
 * other's, in order: LEAVE_UNREAD from its RMB or sent again, then the
 * rest from the stream.
 */
#define LEAVE_UNREAD 5000
#define LEAVE_AFTER 3000

static int leave_stream[2];	/* the connection's TCP stream: the parent's end, the child's */
static bool leave_at_once;
static bool leave_whole = true;	/* the parent's view has the transport */

static uint8_t leave_byte(bool parents, uint32_t i)
{
	return (uint8_t)(i * 7 + (parents ? 1 : 101));
}

/* A send as the socket layer makes it: the stream's once the leave says -EXDEV. */
static void leave_put(struct smc_conn *conn, bool parents, uint32_t from, uint32_t n)
{
	uint8_t buf[LEAVE_UNREAD];
	ssize_t done;

	for (uint32_t i = 0; i < n; i++)
		buf[i] = leave_byte(parents, from + i);
	done = send_buf(conn, buf, n, 0, false);
	if (done == -EXDEV)
		done = write(conn->sock, buf, n);
	CHECK(done == (ssize_t)n);
}

/* A read as the socket layer makes it, for all n: the stream's after -EXDEV. */
static void leave_take(struct smc_conn *conn, bool parents, uint32_t n)
{
	uint8_t buf[LEAVE_UNREAD + LEAVE_AFTER];
	uint32_t got = 0;

	while (got < n) {
		ssize_t k = recv_buf(conn, buf + got, n - got, 0);

		if (k == -EXDEV)
			k = read(conn->sock, buf + got, n - got);
		CHECK(k > 0);
		got += (uint32_t)k;
	}
	for (uint32_t i = 0; i < n; i++)
		CHECK(buf[i] == leave_byte(parents, i));
}

static void leave_role(struct smc_conn *conn, int sock, bool parent)
{
	bool leaves = parent || leave_at_once;

	conn->sock = leave_stream[parent ? 0 : 1];
	leave_put(conn, parent, 0, LEAVE_UNREAD);
	put(sock, 1);
	get(sock);
	if (leaves) {
		smc_conn_lock(conn);
		CHECK(smc_leave_send(conn, 0x03000400, leave_whole) == 0);
		/* a view without the transport asks for no reply */
		CHECK(smc_leave_reply_due(conn) == leave_whole);
		smc_conn_unlock(conn);
	}
	put(sock, 2);           /* both LEAVEs are out before either end looks */
	get(sock);
	if (leaves) {
		smc_conn_lock(conn);
		CHECK(smc_leave_reply(conn, 0, true, true) == 0);
		CHECK(conn->st->reply_taken && !!conn->st->rmb_first == leave_at_once);
		smc_conn_unlock(conn);
	}
	leave_put(conn, parent, LEAVE_UNREAD, LEAVE_AFTER);
	leave_take(conn, !parent, LEAVE_UNREAD + LEAVE_AFTER);
	CHECK(conn->st->leave_taken == !!leave_at_once || !leaves);
}

static void leave_parent(struct smc_conn *conn, int sock)
{
	leave_role(conn, sock, true);
}

static void leave_child(struct smc_conn *conn, int sock)
{
	leave_role(conn, sock, false);
}

/*
 * The child reads the parent's bytes, then closes as the parent leaves,
 * before it read LEAVE: the stream ends where the parent looks for the
 * reply, and the child's bytes are in the parent's RMB.
 */
static void close_parent(struct smc_conn *conn, int sock)
{
	uint8_t end;

	conn->sock = leave_stream[0];
	close(leave_stream[1]);         /* the child's end: its close ends the stream */
	leave_stream[1] = -1;
	leave_put(conn, true, 0, LEAVE_UNREAD);
	get(sock);
	smc_conn_lock(conn);
	assert_int_equal(smc_leave_send(conn, 0x03000400, true), 0);
	smc_conn_unlock(conn);
	put(sock, 1);
	get(sock);              /* the child closed */
	smc_conn_lock(conn);
	assert_int_equal(smc_leave_reply(conn, 0, true, true), 0);
	assert_true(conn->st->reply_taken && conn->st->rmb_first);
	smc_conn_unlock(conn);
	leave_take(conn, false, LEAVE_UNREAD);
	assert_int_equal(recv_buf(conn, &end, 1, 0), -EXDEV);
	assert_int_equal(read(conn->sock, &end, 1), 0);
}

static void close_child(struct smc_conn *conn, int sock)
{
	conn->sock = leave_stream[1];
	leave_put(conn, false, 0, LEAVE_UNREAD);
	leave_take(conn, true, LEAVE_UNREAD);
	put(sock, 0);
	get(sock);              /* the parent's LEAVE is out, unread here */
	CHECK(smc_conn_close_state(conn, SMC_CDC_PEER_DONE_WRITING | SMC_CDC_PEER_CONN_CLOSED) == 0);
	close(leave_stream[1]);
	close(leave_stream[0]);
	put(sock, 2);
}

/* parent and child over small rings, with a fresh TCP stream (an end closed already is -1). */
static void leave_pair_run(role_fn *parent, role_fn *child)
{
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, leave_stream), 0);
	pair_run(&small_rings, parent, child);
	for (int i = 0; i < 2; i++)
		if (leave_stream[i] >= 0)
			close(leave_stream[i]);
}

static void leave_run(bool at_once)
{
	leave_at_once = at_once;
	leave_pair_run(leave_parent, leave_child);
}

/* The parent leaves; the child answers and writes again what the parent had not read. */
static void leave_answered(void **state)
{
	(void)state;
	leave_run(false);
}

/* The same from a view without the transport: no ANSWER, the bytes sent again alone. */
static void leave_unanswered(void **state)
{
	(void)state;
	leave_whole = false;
	leave_run(false);
	leave_whole = true;
}

/* The peer closes before it read our LEAVE: our RMB, then the stream's end. */
static void leave_then_peer_closes(void **state)
{
	(void)state;
	leave_pair_run(close_parent, close_child);
}

/* Both leave at once: each reads its own RMB out, then the stream. */
static void leave_both_at_once(void **state)
{
	(void)state;
	leave_run(true);
}

static void size_classes(void **state)
{
	(void)state;
	assert_int_equal(smc_rmb_size(0), 16384);
	assert_int_equal(smc_rmb_size(SMC_RMB_MAX_CLASS_D), 1 << 20);
	assert_int_equal(smc_rmb_size_class(1, SMC_RMB_MAX_CLASS_D), 0);
	assert_int_equal(smc_rmb_size_class(16384, SMC_RMB_MAX_CLASS_D), 0);
	assert_int_equal(smc_rmb_size_class(16385, SMC_RMB_MAX_CLASS_D), 1);
	assert_int_equal(smc_rmb_size_class(65536, SMC_RMB_MAX_CLASS_D), 2);
	assert_int_equal(smc_rmb_size_class(1 << 30, SMC_RMB_MAX_CLASS_D), 6);
	assert_int_equal(smc_rmb_size_class(1 << 30, SMC_RMB_MAX_CLASS_R), 5);
}

#define PAIR_TEST(f) cmocka_unit_test_teardown(f, reap_child)

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(size_classes),
		cmocka_unit_test(attach_refuses_what_it_cannot_trust),
		PAIR_TEST(leave_answered),
		PAIR_TEST(leave_unanswered),
		PAIR_TEST(leave_both_at_once),
		PAIR_TEST(leave_then_peer_closes),
		PAIR_TEST(stream_64mib_small_ring),
		PAIR_TEST(stream_64mib_large_ring),
		PAIR_TEST(stream_across_wrap_rollover),
		PAIR_TEST(duplex_two_threads_each),
		PAIR_TEST(exact_full_ring_and_write_blocked),
		PAIR_TEST(msg_more_defers_the_cdc),
		PAIR_TEST(peek_trunc_waitall_dontwait_timeout),
		PAIR_TEST(peek_then_read_despite_rewrites),
		PAIR_TEST(peek_copy_yields_to_another_holder),
		PAIR_TEST(half_close_then_close),
		PAIR_TEST(abort_is_connreset),
		PAIR_TEST(local_abort_wakes_a_blocked_reader),
		PAIR_TEST(urgent_data),
		PAIR_TEST(idle_reader_uses_no_cpu),
		PAIR_TEST(bad_cdc_is_an_abort_not_a_crash),
		PAIR_TEST(rewritten_state_is_a_reset_not_a_crash),
		PAIR_TEST(a_forged_error_is_a_reset_not_a_count),
	};

	/* a child's CHECK must not leave its parent blocked on a dead socket */
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
