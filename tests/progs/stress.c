/*
 * stress - data integrity of many TCP connections at once (stress.sh runs it
 * plainly and under libsmcr.so): an echo server, and a client that sends
 * pseudo-random streams in random pieces through every send and receive call
 * and checks each byte that comes back.
 *
 *   stress server PORT --conns N [--io=MODEL] [--v6 | --addr A] [--timeout S]
 *       on 127.0.0.1 (::1 with --v6, A with --addr: an IPv4 or IPv6
 *       address, for a client on another host): each connection is read until EOF and
 *       everything written back, then closed.  Exits after N connections:
 *       "stress server: N connections (R reset), B bytes echoed", B counting
 *       the connections that ended with an EOF, R those the client reset.
 *   stress client PORT --conns N --parallel P --max-bytes M --seed S
 *                 [--io=MODEL] [--v6 | --addr A] [--timeout S]
 *       N connections, to the server's address,, P at a time: each sends 0..M bytes, half-closes, reads
 *       the echo until EOF and checks its length and every byte.  One in 8
 *       closes early instead: a prefix, then close() without reading the
 *       echo, a reset for the server.  Prints "stress client: N connections
 *       (E early closes), B bytes verified"; exits 1 at the first difference,
 *       saying where.
 *
 * MODEL: blocking (server: a thread per connection; client: a thread per
 * direction), poll, select, epoll (level-triggered) or epollet
 * (edge-triggered, each registration EPOLLONESHOT and re-armed with
 * EPOLL_CTL_MOD after its event; read and write until EAGAIN).  A blocking
 * recv(MSG_WAITALL) must return all it asked for, unless the stream ends
 * first.  Either side fails instead of hanging after
 * --timeout seconds (120).
 *
 * A connection's stream is a function of its seed and the offset (splitmix64
 * of the index of each 8-byte word), so the receiver regenerates the piece it
 * just got to compare it: no stream is kept in memory, however long.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define MAX_PIECE (256 * 1024)  /* largest piece per call: beyond typical ring sizes */
#define MAX_IOV 1024            /* IOV_MAX */
#define ECHO_BUF (128 * 1024)   /* the server's buffer per connection */
#define GOLDEN 0x9e3779b97f4a7c15ULL

enum io { IO_BLOCKING, IO_POLL, IO_SELECT, IO_EPOLL, IO_EPOLLET, IO_MODELS };
static const char *const io_names[IO_MODELS] = { "blocking", "poll", "select", "epoll", "epollet" };

static struct {
	const char *role;       /* "server" or "client" */
	uint16_t port;
	enum io io;
	unsigned int conns, parallel, timeout;
	uint64_t max_bytes, seed;
	bool v6;
	const char *addr;       /* --addr, or NULL: loopback */
} opt = { .parallel = 1, .timeout = 120 };

static const char usage[] =
	"usage: stress server PORT --conns N [--io=MODEL] [--v6 | --addr A] [--timeout S]\n"
	"       stress client PORT --conns N --parallel P --max-bytes M --seed S\n"
	"                          [--io=MODEL] [--v6 | --addr A] [--timeout S]\n"
	"MODEL: blocking (default), poll, select, epoll, epollet\n";

static pthread_mutex_t die_lock = PTHREAD_MUTEX_INITIALIZER;

/* Reports a failure and ends the process at once, whatever other threads do. */
__attribute__((format(printf, 1, 2), noreturn))
static void die(const char *fmt, ...)
{
	int err = errno;
	va_list ap;

	pthread_mutex_lock(&die_lock);  /* one message, if several threads fail */
	fprintf(stderr, "stress %s: ", opt.role);
	errno = err;                    /* for %m */
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	_exit(1);
}

static char timeout_msg[80];

static void on_alarm(int sig)
{
	(void)sig;
	(void)!write(STDERR_FILENO, timeout_msg, strlen(timeout_msg));
	_exit(1);
}

/* splitmix64: the stream's words and every random choice. */
static uint64_t mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

struct rng {
	uint64_t s;
};

static uint64_t next(struct rng *r)
{
	return mix(r->s += GOLDEN);
}

static uint64_t below(struct rng *r, uint64_t n)
{
	return next(r) % n;
}

/* A piece size, at most left: 1 .. MAX_PIECE, log-uniform, so that a few
 * bytes are as common as a ring's worth. */
static size_t piece(struct rng *r, uint64_t left)
{
	uint64_t n = 1 + below(r, (uint64_t)1 << below(r, 19));

	return n < left ? n : left;
}

/* Bytes off .. off+n-1 of the stream of seed: byte i is byte i % 8 of word i / 8. */
static void stream_fill(uint64_t seed, uint64_t off, uint8_t *out, size_t n)
{
	while (n > 0) {
		uint64_t w = mix(seed + (off / 8 + 1) * GOLDEN);
		size_t skip = off % 8, take = 8 - skip < n ? 8 - skip : n;

		for (size_t i = 0; i < take; i++)
			out[i] = (uint8_t)(w >> (8 * (skip + i)));
		out += take;
		off += take;
		n -= take;
	}
}

/* Cuts len bytes at buf into cnt consecutive pieces of random sizes, some empty. */
static void split(struct rng *r, uint8_t *buf, size_t len, struct iovec *iov, int cnt)
{
	for (int i = 0; i < cnt; i++) {
		size_t n = i == cnt - 1 ? len : below(r, 2 * len / (size_t)(cnt - i) + 1);

		if (n > len)
			n = len;
		iov[i] = (struct iovec){ .iov_base = buf, .iov_len = n };
		buf += n;
		len -= n;
	}
}

/* The server's address: --addr (checked by parse()), else ::1 or 127.0.0.1. */
static socklen_t address(struct sockaddr_storage *ss)
{
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
	struct sockaddr_in *a = (struct sockaddr_in *)ss;

	memset(ss, 0, sizeof(*ss));
	if (opt.addr ? inet_pton(AF_INET6, opt.addr, &a6->sin6_addr) == 1 : opt.v6) {
		if (!opt.addr)
			a6->sin6_addr = in6addr_loopback;
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons(opt.port);
		return sizeof(*a6);
	}
	a->sin_family = AF_INET;
	a->sin_port = htons(opt.port);
	if (!opt.addr)
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	else
		inet_pton(AF_INET, opt.addr, &a->sin_addr);
	return sizeof(*a);
}

/* --- client --- */

/* What a connection does, all from the run's seed and its index. */
struct plan {
	unsigned int idx;
	uint64_t data;          /* the stream's seed */
	uint64_t len;           /* bytes to send (early: at most) */
	bool early;             /* close without reading the echo */
	bool linger;            /* early: reset by SO_LINGER 0, not by unread data */
	struct rng tx, rx;      /* the sender's and the receiver's choices */
};

struct conn {
	struct plan p;
	int fd;
	uint64_t sent, checked;
	uint32_t interest;      /* epoll: events registered */
	uint8_t *sbuf, *rbuf, *pbuf, *expect;   /* MAX_PIECE each, the worker's */
};

static atomic_uint next_conn, early_closes;
static atomic_ullong verified;

static struct plan plan_of(unsigned int idx)
{
	struct rng r = { opt.seed ^ mix(idx + 1) };
	struct plan p = { .idx = idx, .data = next(&r) };
	uint64_t kind = below(&r, 16);

	p.tx.s = next(&r);
	p.rx.s = next(&r);
	p.early = opt.max_bytes > 0 && below(&r, 8) == 0;
	p.linger = below(&r, 2);
	if (p.early)
		p.len = 1 + below(&r, opt.max_bytes);
	else if (kind == 0)     /* the edge cases get their share */
		p.len = 0;
	else if (kind == 1)
		p.len = below(&r, (opt.max_bytes < 64 ? opt.max_bytes : 64) + 1);
	else
		p.len = below(&r, opt.max_bytes + 1);
	return p;
}

enum { TX_WRITE, TX_SEND, TX_WRITEV, TX_SENDMSG, TX_SEND_MORE, TX_CALLS };

/* One send call of a random kind and size, from offset c->sent: its result. */
static ssize_t send_piece(struct conn *c)
{
	struct iovec iov[MAX_IOV];
	struct msghdr m = { .msg_iov = iov };
	size_t len = piece(&c->p.tx, c->p.len - c->sent);
	int call = (int)below(&c->p.tx, TX_CALLS);
	ssize_t n;

	/* An early close's last piece: nothing (no shutdown) would uncork it. */
	if (call == TX_SEND_MORE && c->p.early && len == c->p.len - c->sent)
		call = TX_SEND;
	stream_fill(c->p.data, c->sent, c->sbuf, len);
	switch (call) {
	case TX_WRITE:
		n = write(c->fd, c->sbuf, len);
		break;
	case TX_SEND:
		n = send(c->fd, c->sbuf, len, 0);
		break;
	case TX_WRITEV:
		m.msg_iovlen = 1 + below(&c->p.tx, 64);
		split(&c->p.tx, c->sbuf, len, iov, (int)m.msg_iovlen);
		n = writev(c->fd, iov, (int)m.msg_iovlen);
		break;
	case TX_SENDMSG:
		m.msg_iovlen = 1 + below(&c->p.tx, MAX_IOV);
		split(&c->p.tx, c->sbuf, len, iov, (int)m.msg_iovlen);
		n = sendmsg(c->fd, &m, 0);
		break;
	default:                /* the last piece may go corked: shutdown() flushes it */
		n = send(c->fd, c->sbuf, len, MSG_MORE);
		break;
	}
	if (n > 0)
		c->sent += (uint64_t)n;
	return n;
}

/* n bytes received at offset c->checked (by call via) against the stream. */
static void check(struct conn *c, const uint8_t *got, size_t n, const char *via)
{
	if (n > c->p.len - c->checked)
		die("connection %u: %llu bytes echoed, %llu sent (%s)", c->p.idx,
		    (unsigned long long)(c->checked + n), (unsigned long long)c->p.len, via);
	stream_fill(c->p.data, c->checked, c->expect, n);
	if (memcmp(got, c->expect, n) != 0) {
		size_t i = 0;

		while (got[i] == c->expect[i])
			i++;
		die("connection %u: byte %llu of %llu: expected 0x%02x, got 0x%02x "
		    "(%s of %zu bytes at offset %llu)", c->p.idx,
		    (unsigned long long)(c->checked + i), (unsigned long long)c->p.len,
		    c->expect[i], got[i], via, n, (unsigned long long)c->checked);
	}
	c->checked += n;
}

/* The n bytes just peeked at, read for real into c->rbuf: they must be the same. */
static void take_peeked(struct conn *c, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(c->fd, c->rbuf + got, n - got);

		if (r <= 0)
			die("connection %u: offset %llu: reading %zu peeked bytes: %s", c->p.idx,
			    (unsigned long long)(c->checked + got), n, r == 0 ? "EOF" : strerror(errno));
		got += (size_t)r;
	}
	for (size_t i = 0; i < n; i++)
		if (c->rbuf[i] != c->pbuf[i])
			die("connection %u: byte %llu: MSG_PEEK saw 0x%02x, the read after it 0x%02x",
			    c->p.idx, (unsigned long long)(c->checked + i), c->pbuf[i], c->rbuf[i]);
}

enum { RX_READ, RX_RECV, RX_READV, RX_RECVMSG, RX_WAITALL, RX_PEEK, RX_CALLS };
static const char *const rx_names[RX_CALLS] = {
	"read", "recv", "readv", "recvmsg", "recv(MSG_WAITALL)", "recv(MSG_PEEK) and read",
};

/* One receive call of a random kind and size, its bytes checked: its result
 * (0 at EOF). */
static ssize_t recv_piece(struct conn *c)
{
	struct iovec iov[MAX_IOV];
	struct msghdr m = { .msg_iov = iov };
	size_t len = piece(&c->p.rx, MAX_PIECE);
	int call = (int)below(&c->p.rx, RX_CALLS);
	ssize_t n;

	switch (call) {
	case RX_READ:
		n = read(c->fd, c->rbuf, len);
		break;
	case RX_RECV:
		n = recv(c->fd, c->rbuf, len, 0);
		break;
	case RX_READV:
		m.msg_iovlen = 1 + below(&c->p.rx, MAX_IOV);
		split(&c->p.rx, c->rbuf, len, iov, (int)m.msg_iovlen);
		n = readv(c->fd, iov, (int)m.msg_iovlen);
		break;
	case RX_RECVMSG:
		m.msg_iovlen = 1 + below(&c->p.rx, MAX_IOV);
		split(&c->p.rx, c->rbuf, len, iov, (int)m.msg_iovlen);
		n = recvmsg(c->fd, &m, 0);
		break;
	case RX_WAITALL:
		n = recv(c->fd, c->rbuf, len, MSG_WAITALL);
		/* Blocking, it waits for all of len, unless the stream ends
		 * first (nonblocking, it returns what there is). */
		if (opt.io == IO_BLOCKING && n >= 0 && (size_t)n < len && c->checked + (uint64_t)n < c->p.len)
			die("connection %u: recv(MSG_WAITALL) of %zu bytes at offset %llu returned %zd, "
			    "with %llu more to come", c->p.idx, len, (unsigned long long)c->checked, n,
			    (unsigned long long)(c->p.len - c->checked - (uint64_t)n));
		break;
	default:
		n = recv(c->fd, c->pbuf, len, MSG_PEEK);
		if (n > 0)
			take_peeked(c, (size_t)n);
		break;
	}
	if (n > 0)
		check(c, c->rbuf, (size_t)n, rx_names[call]);
	return n;
}

static int connect_to(bool nonblocking)
{
	struct sockaddr_storage ss;
	socklen_t len = address(&ss);
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | (nonblocking ? SOCK_NONBLOCK : 0), 0);

	if (fd < 0)
		die("socket: %m");
	if (connect(fd, (struct sockaddr *)&ss, len) < 0 && !(nonblocking && errno == EINPROGRESS))
		die("connect: %m");
	return fd;
}

static bool epolled(void)
{
	return opt.io == IO_EPOLL || opt.io == IO_EPOLLET;
}

/* poll(pfd, n, -1), through select() with --io=select (POLLIN and POLLOUT
 * only, which is all that is asked for here). */
static void wait_fds(struct pollfd *pfd, nfds_t n)
{
	fd_set in, out;
	int max = -1;

	if (opt.io != IO_SELECT) {
		if (poll(pfd, n, -1) < 0)
			die("poll: %m");
		return;
	}
	FD_ZERO(&in);
	FD_ZERO(&out);
	for (nfds_t i = 0; i < n; i++) {
		if (pfd[i].fd >= FD_SETSIZE)
			die("select: descriptor %d, FD_SETSIZE %d", pfd[i].fd, FD_SETSIZE);
		if (pfd[i].events & POLLIN)
			FD_SET(pfd[i].fd, &in);
		if (pfd[i].events & POLLOUT)
			FD_SET(pfd[i].fd, &out);
		if (pfd[i].fd > max)
			max = pfd[i].fd;
	}
	if (select(max + 1, &in, &out, NULL, NULL) < 0)
		die("select: %m");
	for (nfds_t i = 0; i < n; i++)
		pfd[i].revents = (short)((FD_ISSET(pfd[i].fd, &in) ? POLLIN : 0) |
					 (FD_ISSET(pfd[i].fd, &out) ? POLLOUT : 0));
}

static void wait_for(int fd, short events)
{
	struct pollfd p = { .fd = fd, .events = events };

	wait_fds(&p, 1);
}

static void *send_all(void *arg)
{
	struct conn *c = arg;

	while (c->sent < c->p.len)
		if (send_piece(c) < 0)
			die("connection %u: send at offset %llu: %m", c->p.idx,
			    (unsigned long long)c->sent);
	if (shutdown(c->fd, SHUT_WR) < 0)
		die("connection %u: shutdown: %m", c->p.idx);
	return NULL;
}

/* Blocking: this thread receives while another sends. */
static void run_blocking(struct conn *c)
{
	pthread_t sender;
	ssize_t n;
	int err;

	c->fd = connect_to(false);
	err = pthread_create(&sender, NULL, send_all, c);
	if (err)
		die("pthread_create: %s", strerror(err));
	while ((n = recv_piece(c)) != 0)
		if (n < 0)
			die("connection %u: receive at offset %llu: %m", c->p.idx,
			    (unsigned long long)c->checked);
	pthread_join(sender, NULL);
}

/* Until c->fd is readable, or writable if out, in the I/O model's way. */
static void wait_ready(int epfd, struct conn *c, bool out)
{
	struct epoll_event ev;
	uint32_t want = EPOLLIN | (out ? EPOLLOUT : 0);

	if (!epolled()) {
		wait_for(c->fd, (short)(POLLIN | (out ? POLLOUT : 0)));
		return;
	}
	if (opt.io == IO_EPOLLET)
		want |= EPOLLET | EPOLLONESHOT;
	/* Edge-triggered: the last event disarmed the registration. */
	if (want != c->interest || opt.io == IO_EPOLLET) {
		ev = (struct epoll_event){ .events = want, .data.fd = c->fd };
		if (epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev) < 0)
			die("epoll_ctl(MOD): %m");
		c->interest = want;
	}
	if (epoll_wait(epfd, &ev, 1, -1) < 0)
		die("epoll_wait: %m");
}

/* poll, select, epoll, epollet: one nonblocking socket, sending and receiving each
 * until EAGAIN at every wake-up. */
static void run_evented(int epfd, struct conn *c)
{
	bool connected = false, sending = true;

	c->fd = connect_to(true);
	if (epolled()) {
		c->interest = EPOLLIN | EPOLLOUT | (opt.io == IO_EPOLLET ? EPOLLET | EPOLLONESHOT : 0);
		struct epoll_event ev = { .events = c->interest, .data.fd = c->fd };

		if (epoll_ctl(epfd, EPOLL_CTL_ADD, c->fd, &ev) < 0)
			die("epoll_ctl(ADD): %m");
	}
	for (;;) {
		wait_ready(epfd, c, !connected || sending);
		if (!connected) {       /* writable: the connect finished */
			int err = 0;
			socklen_t len = sizeof(err);

			if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err)
				die("connection %u: connect: %s", c->p.idx, strerror(err ? err : errno));
			connected = true;
		}
		while (sending) {
			if (c->sent == c->p.len) {
				if (shutdown(c->fd, SHUT_WR) < 0)
					die("connection %u: shutdown: %m", c->p.idx);
				sending = false;
			} else if (send_piece(c) < 0) {
				if (errno != EAGAIN)
					die("connection %u: send at offset %llu: %m", c->p.idx,
					    (unsigned long long)c->sent);
				break;
			}
		}
		for (;;) {
			ssize_t n = recv_piece(c);

			if (n == 0)
				goto eof;
			if (n < 0) {
				if (errno != EAGAIN)
					die("connection %u: receive at offset %llu: %m", c->p.idx,
					    (unsigned long long)c->checked);
				break;
			}
		}
	}
eof:
	if (sending)
		die("connection %u: EOF at offset %llu while still sending", c->p.idx,
		    (unsigned long long)c->checked);
	if (epolled() && epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL) < 0)
		die("epoll_ctl(DEL): %m");
}

/* A prefix, then close() once the echo has begun to come back: with unread
 * data (or SO_LINGER 0) that resets the connection, so the server sees a
 * reset rather than an EOF, whatever the timing. */
static void run_early(struct conn *c)
{
	c->fd = connect_to(false);
	if (fcntl(c->fd, F_SETFL, O_NONBLOCK) < 0)
		die("fcntl: %m");
	/* As much as goes without waiting (the echo is not read), at least a byte. */
	while (c->sent < c->p.len) {
		if (send_piece(c) >= 0)
			continue;
		if (errno != EAGAIN)
			die("connection %u: send at offset %llu: %m", c->p.idx,
			    (unsigned long long)c->sent);
		if (c->sent > 0)
			break;
		wait_for(c->fd, POLLOUT);
	}
	wait_for(c->fd, POLLIN);
	if (c->p.linger) {
		struct linger l = { .l_onoff = 1, .l_linger = 0 };

		if (setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l)) < 0)
			die("setsockopt(SO_LINGER): %m");
	}
}

static void *client_worker(void *arg)
{
	uint8_t *bufs = malloc(4 * MAX_PIECE);
	int epfd = -1;
	unsigned int idx;

	(void)arg;
	if (!bufs)
		die("out of memory");
	if (epolled()) {
		epfd = epoll_create1(EPOLL_CLOEXEC);
		if (epfd < 0)
			die("epoll_create1: %m");
	}
	while ((idx = atomic_fetch_add(&next_conn, 1)) < opt.conns) {
		struct conn c = { .p = plan_of(idx), .sbuf = bufs, .rbuf = bufs + MAX_PIECE,
				  .pbuf = bufs + 2 * MAX_PIECE, .expect = bufs + 3 * MAX_PIECE };

		if (c.p.early)
			run_early(&c);
		else if (opt.io == IO_BLOCKING)
			run_blocking(&c);
		else
			run_evented(epfd, &c);
		if (close(c.fd) < 0)
			die("connection %u: close: %m", idx);
		if (c.p.early) {
			atomic_fetch_add(&early_closes, 1);
		} else {
			if (c.checked != c.p.len)
				die("connection %u: EOF after %llu bytes, %llu sent", idx,
				    (unsigned long long)c.checked, (unsigned long long)c.p.len);
			atomic_fetch_add(&verified, c.checked);
		}
	}
	if (epfd >= 0)
		close(epfd);
	free(bufs);
	return NULL;
}

static void client(void)
{
	unsigned int n = opt.parallel < opt.conns ? opt.parallel : opt.conns;
	pthread_t *threads = calloc(n, sizeof(*threads));

	if (!threads)
		die("out of memory");
	for (unsigned int i = 0; i < n; i++) {
		int err = pthread_create(&threads[i], NULL, client_worker, NULL);

		if (err)
			die("pthread_create: %s", strerror(err));
	}
	for (unsigned int i = 0; i < n; i++)
		pthread_join(threads[i], NULL);
	free(threads);
	printf("stress client: %u connections (%u early closes), %llu bytes verified\n", opt.conns,
	       atomic_load(&early_closes), (unsigned long long)atomic_load(&verified));
}

/* --- server --- */

struct echo {
	int fd;
	uint32_t interest;      /* epoll: events registered */
	bool eof;
	size_t head, tail;      /* buf[head..tail) is still to write back */
	uint64_t echoed;
	uint8_t buf[ECHO_BUF];
};

enum step { STEP_MORE, STEP_DONE, STEP_RESET };

static pthread_mutex_t server_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t server_done = PTHREAD_COND_INITIALIZER;
static unsigned int finished, resets;
static uint64_t echoed;

/* A client that closed without reading its echo resets the connection:
 * expected (the early closes), not a failure. */
static bool is_reset(int err)
{
	return err == ECONNRESET || err == EPIPE;
}

static void finish(struct echo *e, enum step st)
{
	if (close(e->fd) < 0)
		die("close: %m");
	pthread_mutex_lock(&server_lock);
	if (st == STEP_DONE)
		echoed += e->echoed;
	else
		resets++;
	finished++;
	pthread_cond_signal(&server_done);
	pthread_mutex_unlock(&server_lock);
	free(e);
}

static struct echo *echo_new(int fd)
{
	struct echo *e = calloc(1, sizeof(*e));

	if (!e)
		die("out of memory");
	e->fd = fd;
	return e;
}

/* Nonblocking: reads and writes back until EAGAIN (or a full buffer). */
static enum step echo_step(struct echo *e)
{
	bool progress = true;

	while (progress) {
		ssize_t n;

		progress = false;
		if (!e->eof && e->tail < ECHO_BUF) {
			n = read(e->fd, e->buf + e->tail, ECHO_BUF - e->tail);
			if (n > 0) {
				e->tail += (size_t)n;
				progress = true;
			} else if (n == 0) {
				e->eof = true;
			} else if (is_reset(errno)) {
				return STEP_RESET;
			} else if (errno != EAGAIN) {
				die("read: %m");
			}
		}
		if (e->head < e->tail) {
			n = write(e->fd, e->buf + e->head, e->tail - e->head);
			if (n > 0) {
				e->head += (size_t)n;
				e->echoed += (uint64_t)n;
				if (e->head == e->tail)
					e->head = e->tail = 0;
				progress = true;
			} else if (is_reset(errno)) {
				return STEP_RESET;
			} else if (errno != EAGAIN) {
				die("write: %m");
			}
		}
	}
	return e->eof && e->head == e->tail ? STEP_DONE : STEP_MORE;
}

static bool wants_in(const struct echo *e)
{
	return !e->eof && e->tail < ECHO_BUF;
}

static bool wants_out(const struct echo *e)
{
	return e->head < e->tail;
}

static enum step echo_blocking(struct echo *e)
{
	ssize_t n;

	while ((n = read(e->fd, e->buf, ECHO_BUF)) != 0) {
		if (n < 0) {
			if (is_reset(errno))
				return STEP_RESET;
			die("read: %m");
		}
		for (ssize_t off = 0, w; off < n; off += w) {
			w = write(e->fd, e->buf + off, (size_t)(n - off));
			if (w < 0) {
				if (is_reset(errno))
					return STEP_RESET;
				die("write: %m");
			}
			e->echoed += (uint64_t)w;
		}
	}
	return STEP_DONE;
}

static void *serve_one(void *arg)
{
	struct echo *e = arg;

	finish(e, echo_blocking(e));
	return NULL;
}

static void serve_blocking(int lfd)
{
	pthread_attr_t attr;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	for (unsigned int i = 0; i < opt.conns; i++) {
		pthread_t t;
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC), err;

		if (fd < 0)
			die("accept: %m");
		err = pthread_create(&t, &attr, serve_one, echo_new(fd));
		if (err)
			die("pthread_create: %s", strerror(err));
	}
	pthread_attr_destroy(&attr);
	pthread_mutex_lock(&server_lock);
	while (finished < opt.conns)
		pthread_cond_wait(&server_done, &server_lock);
	pthread_mutex_unlock(&server_lock);
}

/* Accepts what is waiting (up to --conns in all) into out: how many. */
static unsigned int accept_waiting(int lfd, unsigned int *accepted, struct echo **out)
{
	unsigned int n = 0;

	while (*accepted < opt.conns) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EAGAIN)
				break;
			die("accept: %m");
		}
		out[n++] = echo_new(fd);
		++*accepted;
	}
	return n;
}

/* poll or select */
static void serve_poll(int lfd)
{
	struct echo **conns = calloc(opt.conns, sizeof(*conns));
	struct pollfd *pfd = calloc(opt.conns + 1, sizeof(*pfd));
	unsigned int accepted = 0, active = 0;

	if (!conns || !pfd)
		die("out of memory");
	while (finished < opt.conns) {
		bool listening = accepted < opt.conns;
		unsigned int n = 0;

		if (listening)
			pfd[n++] = (struct pollfd){ .fd = lfd, .events = POLLIN };
		for (unsigned int i = 0; i < active; i++)
			pfd[n++] = (struct pollfd){
				.fd = conns[i]->fd,
				.events = (short)((wants_in(conns[i]) ? POLLIN : 0) |
						  (wants_out(conns[i]) ? POLLOUT : 0)),
			};
		wait_fds(pfd, n);
		/* Downwards, so that the last connection, moved into a finished
		 * one's place, has been seen already. */
		for (unsigned int i = active; i-- > 0;) {
			enum step st;

			if (!pfd[listening + i].revents)
				continue;
			st = echo_step(conns[i]);
			if (st != STEP_MORE) {
				finish(conns[i], st);
				conns[i] = conns[--active];
			}
		}
		if (listening && pfd[0].revents)
			active += accept_waiting(lfd, &accepted, conns + active);
	}
	free(pfd);
	free(conns);
}

static void serve_epoll(int lfd)
{
	struct echo **fresh = calloc(opt.conns, sizeof(*fresh));
	uint32_t et = opt.io == IO_EPOLLET ? EPOLLET | EPOLLONESHOT : 0;
	struct epoll_event ev = { .events = EPOLLIN | et, .data.ptr = NULL };   /* NULL: the listener */
	int epfd = epoll_create1(EPOLL_CLOEXEC);
	unsigned int accepted = 0;

	if (!fresh)
		die("out of memory");
	if (epfd < 0 || epoll_ctl(epfd, EPOLL_CTL_ADD, lfd, &ev) < 0)
		die("epoll: %m");
	while (finished < opt.conns) {
		struct epoll_event evs[64];
		int n = epoll_wait(epfd, evs, 64, -1);

		if (n < 0)
			die("epoll_wait: %m");
		for (int i = 0; i < n; i++) {
			struct echo *e = evs[i].data.ptr;
			enum step st;
			uint32_t want;

			if (!e) {
				unsigned int got = accept_waiting(lfd, &accepted, fresh);

				for (unsigned int j = 0; j < got; j++) {
					fresh[j]->interest = EPOLLIN | et;
					ev = (struct epoll_event){ .events = fresh[j]->interest, .data.ptr = fresh[j] };
					if (epoll_ctl(epfd, EPOLL_CTL_ADD, fresh[j]->fd, &ev) < 0)
						die("epoll_ctl(ADD): %m");
				}
				ev = (struct epoll_event){ .events = EPOLLIN | et, .data.ptr = NULL };
				if (accepted == opt.conns) {
					if (epoll_ctl(epfd, EPOLL_CTL_DEL, lfd, NULL) < 0)
						die("epoll_ctl(DEL): %m");
				} else if (et && epoll_ctl(epfd, EPOLL_CTL_MOD, lfd, &ev) < 0) {
					die("epoll_ctl(MOD): %m");
				}
				continue;
			}
			st = echo_step(e);
			if (st != STEP_MORE) {
				finish(e, st);  /* close() takes it out of the set */
				continue;
			}
			want = (wants_in(e) ? EPOLLIN : 0) | (wants_out(e) ? EPOLLOUT : 0) | et;
			/* Edge-triggered: the event disarmed it; MOD re-arms (and
			 * reports at once what is ready already). */
			if (want != e->interest || et) {
				ev = (struct epoll_event){ .events = want, .data.ptr = e };
				if (epoll_ctl(epfd, EPOLL_CTL_MOD, e->fd, &ev) < 0)
					die("epoll_ctl(MOD): %m");
				e->interest = want;
			}
		}
	}
	close(epfd);
	free(fresh);
}

static void server(void)
{
	struct sockaddr_storage ss;
	socklen_t len = address(&ss);
	int one = 1;
	int lfd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC |
			 (opt.io == IO_BLOCKING ? 0 : SOCK_NONBLOCK), 0);

	if (lfd < 0)
		die("socket: %m");
	if (setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(lfd, (struct sockaddr *)&ss, len) < 0 || listen(lfd, 256) < 0)
		die("listen on port %u: %m", opt.port);
	if (opt.io == IO_BLOCKING)
		serve_blocking(lfd);
	else if (!epolled())
		serve_poll(lfd);
	else
		serve_epoll(lfd);
	close(lfd);
	printf("stress server: %u connections (%u reset), %llu bytes echoed\n", finished, resets,
	       (unsigned long long)echoed);
}

/* --- command line --- */

__attribute__((noreturn))
static void bad_usage(const char *why, const char *what)
{
	fprintf(stderr, "stress: %s %s\n%s", why, what, usage);
	exit(2);
}

static uint64_t number(const char *name, const char *s, uint64_t min, uint64_t max)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || *s == '-' || v < min || v > max)
		bad_usage(name, s);
	return v;
}

/* Whether argv[*i] is --NAME VALUE or --NAME=VALUE; *val is VALUE. */
static bool option(int argc, char **argv, int *i, const char *name, const char **val)
{
	const char *a = argv[*i] + 2;
	size_t n = strlen(name);

	if (strncmp(argv[*i], "--", 2) != 0 || strncmp(a, name, n) != 0)
		return false;
	if (a[n] == '=') {
		*val = a + n + 1;
		return true;
	}
	if (a[n] != '\0')
		return false;
	if (*i + 1 >= argc)
		bad_usage("no value for", argv[*i]);
	*val = argv[++*i];
	return true;
}

static void parse(int argc, char **argv)
{
	const char *v;
	bool seeded = false, sized = false;

	if (argc < 3 || (strcmp(argv[1], "server") != 0 && strcmp(argv[1], "client") != 0)) {
		fputs(usage, stderr);
		exit(2);
	}
	opt.role = argv[1];
	opt.port = (uint16_t)number("port", argv[2], 1, 65535);
	for (int i = 3; i < argc; i++) {
		if (strcmp(argv[i], "--v6") == 0) {
			opt.v6 = true;
		} else if (option(argc, argv, &i, "addr", &v)) {
			opt.addr = v;
		} else if (option(argc, argv, &i, "io", &v)) {
			for (opt.io = 0; opt.io < IO_MODELS && strcmp(v, io_names[opt.io]) != 0; opt.io++)
				;
			if (opt.io == IO_MODELS)
				bad_usage("unknown I/O model", v);
		} else if (option(argc, argv, &i, "conns", &v)) {
			opt.conns = (unsigned int)number("--conns", v, 1, 1000000);
		} else if (option(argc, argv, &i, "parallel", &v)) {
			opt.parallel = (unsigned int)number("--parallel", v, 1, 1024);
		} else if (option(argc, argv, &i, "max-bytes", &v)) {
			opt.max_bytes = number("--max-bytes", v, 0, 1ULL << 40);
			sized = true;
		} else if (option(argc, argv, &i, "seed", &v)) {
			opt.seed = number("--seed", v, 0, UINT64_MAX);
			seeded = true;
		} else if (option(argc, argv, &i, "timeout", &v)) {
			opt.timeout = (unsigned int)number("--timeout", v, 0, 86400);
		} else {
			bad_usage("unknown option", argv[i]);
		}
	}
	if (!opt.conns)
		bad_usage("missing", "--conns");
	if (opt.v6 && opt.addr)
		bad_usage("--v6 and --addr:", "choose one");
	if (opt.addr) {
		struct in6_addr any;

		if (inet_pton(AF_INET, opt.addr, &any) != 1 && inet_pton(AF_INET6, opt.addr, &any) != 1)
			bad_usage("not an IPv4 or IPv6 address:", opt.addr);
	}
	if (strcmp(opt.role, "client") == 0 && (!seeded || !sized))
		bad_usage("missing", seeded ? "--max-bytes" : "--seed");
}

int main(int argc, char **argv)
{
	parse(argc, argv);
	/* Resets are handled as errors (EPIPE), not as a signal. */
	signal(SIGPIPE, SIG_IGN);
	snprintf(timeout_msg, sizeof(timeout_msg), "stress %s: timed out after %u s\n", opt.role,
		 opt.timeout);
	signal(SIGALRM, on_alarm);
	alarm(opt.timeout);
	if (strcmp(opt.role, "server") == 0)
		server();
	else
		client();
	return 0;
}
