/*
 * ring_pingpong - the ring (smc_tx/smc_rx over the shared-memory transport)
 * against TCP loopback, between two processes, in one run.
 *
 *   ring_pingpong [ROUND_TRIPS [STREAM_MIB [RMB_CLASS]]]
 *
 * Ping-pong: 14-byte messages, one round trip at a time; prints p50 and p99
 * of the round-trip time.  Streaming: STREAM_MIB MiB in 64 KiB sends, timed
 * until the receiver's one-byte acknowledgement; prints GB/s.  The RMBs are
 * 16 KiB << RMB_CLASS (default 2: 64 KiB, Linux's default).  A benchmark,
 * not a test.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shm_broker_client.h"
#include "sys.h"
#include "smc_rx.h"
#include "smc_shm.h"
#include "smc_tx.h"

#define MSG 14
#define CHUNK (64 * 1024)
#define WARMUP 2000

/* One end of a connection: the ring, or a TCP socket. */
struct end {
	struct smc_conn *conn;	/* NULL: TCP */
	struct smc_conn_state *state;
	int fd;
};

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void xsend(struct end *e, const void *buf, size_t len)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	ssize_t n = e->conn ? smc_tx_send(e->conn, &iov, 1, 0, false) : send(e->fd, buf, len, 0);

	if (n != (ssize_t)len)
		die("send");
}

/* Receives exactly len bytes, or up to len if !all; returns the count. */
static size_t xrecv(struct end *e, void *buf, size_t len, bool all)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	int flags = all ? MSG_WAITALL : 0;
	ssize_t n = e->conn ? smc_rx_recv(e->conn, &iov, 1, flags, false) : recv(e->fd, buf, len, flags);

	if (n <= 0 || (all && (size_t)n != len))
		die("recv");
	return (size_t)n;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void pingpong_server(struct end *e, long rounds)
{
	char buf[MSG];

	for (long i = 0; i < rounds + WARMUP; i++) {
		xrecv(e, buf, MSG, true);
		xsend(e, buf, MSG);
	}
}

static void pingpong_client(struct end *e, long rounds, const char *name)
{
	uint64_t *rtt = malloc(sizeof(*rtt) * (size_t)rounds);
	char buf[MSG] = "ping-pong-msg";

	if (!rtt)
		die("malloc");
	for (long i = 0; i < rounds + WARMUP; i++) {
		uint64_t t0 = smc_clock_ns();

		xsend(e, buf, MSG);
		xrecv(e, buf, MSG, true);
		if (i >= WARMUP)
			rtt[i - WARMUP] = smc_clock_ns() - t0;
	}
	qsort(rtt, (size_t)rounds, sizeof(*rtt), cmp_u64);
	printf("%-5s ping-pong %d B: p50 %8.2f us  p99 %8.2f us  (%ld round trips)\n", name, MSG,
	       rtt[rounds / 2] / 1e3, rtt[rounds * 99 / 100] / 1e3, rounds);
	free(rtt);
}

static void stream_server(struct end *e, uint64_t bytes)
{
	static char buf[CHUNK];

	for (uint64_t got = 0; got < bytes;)
		got += xrecv(e, buf, sizeof(buf), false);
	xsend(e, "k", 1);
}

static void stream_client(struct end *e, uint64_t bytes, const char *name)
{
	static char buf[CHUNK];
	uint64_t t0 = smc_clock_ns();
	double s;

	memset(buf, 'x', sizeof(buf));
	for (uint64_t sent = 0; sent < bytes; sent += CHUNK)
		xsend(e, buf, CHUNK);
	xrecv(e, buf, 1, true);
	s = (smc_clock_ns() - t0) / 1e9;
	printf("%-5s stream %d KiB sends: %6.2f GB/s  (%llu MiB in %.2f s)\n", name, CHUNK / 1024,
	       bytes / s / 1e9, (unsigned long long)(bytes >> 20), s);
}

/* One end's buffer and wake-up channel. */
struct end_fds {
	int memfd;
	struct smcr_wake_channel wake;
};

/* The ring's two ends, set up in each process as after a CLC exchange. */
static void ring_end(struct end *e, int sync, const struct end_fds *own, const struct end_fds *peer,
		     unsigned int size_class, uint32_t token, uint32_t peer_token)
{
	struct smc_clc_accept_confirm desc = {
		.smc_type = SMC_TYPE_D,
		.d = { .dmbe_size = (uint8_t)size_class },
	};
	char c = 0;

	e->conn = malloc(sizeof(*e->conn));
	e->state = malloc(sizeof(*e->state));
	if (!e->conn || !e->state)
		die("malloc");
	smc_conn_init(e->conn, &smc_shm_ops, e->state, true);
	if (e->conn->ops->create_rmb(e->conn, size_class, own->memfd,
				     (struct smcr_wake_channel){ .rx = dup(own->wake.rx),
								 .tx = dup(own->wake.tx) }))
		die("create_rmb");
	if (write(sync, &c, 1) != 1 || read(sync, &c, 1) != 1)
		die("sync");
	if (e->conn->ops->attach_peer(e->conn, &desc, peer->memfd, dup(peer->wake.tx)))
		die("attach_peer");
	e->conn->st->token = token;
	e->conn->st->peer_token = peer_token;
}

static void tcp_pair(int fd[2])
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int one = 1, l = socket(AF_INET, SOCK_STREAM, 0);

	if (l < 0 || bind(l, (void *)&a, sizeof(a)) || listen(l, 1) ||
	    getsockname(l, (void *)&a, &len))
		die("listen");
	fd[0] = socket(AF_INET, SOCK_STREAM, 0);
	if (fd[0] < 0 || connect(fd[0], (void *)&a, sizeof(a)))
		die("connect");
	fd[1] = accept(l, NULL, NULL);
	if (fd[1] < 0)
		die("accept");
	setsockopt(fd[0], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd[1], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	close(l);
}

/* Runs the client here and the server in a child, over the ring or TCP. */
static void run(bool ring, unsigned int size_class, long rounds, uint64_t bytes)
{
	const char *name = ring ? "ring" : "tcp";
	struct end e = { .fd = -1 };
	struct end_fds end0 = { -1, SMCR_NO_WAKE_CHANNEL }, end1 = end0;
	int sync[2], tcp[2] = { -1, -1 };
	pid_t pid;

	if (ring) {
		end0.memfd = smcr_sys_memfd_sealed(smc_shm_region_size(size_class));
		end1.memfd = smcr_sys_memfd_sealed(smc_shm_region_size(size_class));
		if (end0.memfd < 0 || end1.memfd < 0 || smcr_sys_wake_channel(&end0.wake) ||
		    smcr_sys_wake_channel(&end1.wake))
			die("smcr_sys_memfd_sealed");
	} else {
		tcp_pair(tcp);
	}
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sync))
		die("socketpair");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		if (ring)
			ring_end(&e, sync[1], &end1, &end0, size_class, 2, 1);
		else
			e.fd = tcp[1];
		pingpong_server(&e, rounds);
		stream_server(&e, bytes);
		_exit(0);
	}
	if (ring)
		ring_end(&e, sync[0], &end0, &end1, size_class, 1, 2);
	else
		e.fd = tcp[0];
	pingpong_client(&e, rounds, name);
	stream_client(&e, bytes, name);
	waitpid(pid, NULL, 0);
	if (ring) {
		smc_conn_destroy(e.conn);
		free(e.conn);
		free(e.state);
		for (struct end_fds *f = &end0; f; f = f == &end0 ? &end1 : NULL) {
			close(f->memfd);
			close(f->wake.rx);
			close(f->wake.tx);
		}
	} else {
		close(tcp[0]);
		close(tcp[1]);
	}
	close(sync[0]);
	close(sync[1]);
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 100000;
	uint64_t bytes = (argc > 2 ? strtoull(argv[2], NULL, 0) : 4096) << 20;
	unsigned int size_class = argc > 3 ? (unsigned int)atoi(argv[3]) : 2;

	if (rounds < 1 || size_class > SMC_RMB_MAX_CLASS_D) {
		fprintf(stderr, "usage: %s [ROUND_TRIPS [STREAM_MIB [RMB_CLASS 0-6]]]\n", argv[0]);
		return 2;
	}
	printf("RMB %u KiB\n", smc_rmb_size(size_class) / 1024);
	run(true, size_class, rounds, bytes);
	run(false, size_class, rounds, bytes);
	return 0;
}
