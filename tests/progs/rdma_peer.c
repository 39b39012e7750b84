/*
 * rdma_peer - the RDMA transport (smc_rdma.c) under the ring (smc_tx.c,
 * smc_rx.c), between processes on one host with a verbs device.
 *
 *   rdma_peer [ADDR [PINGPONGS [STREAM_MIB]]]
 *   rdma_peer --stale-key [ADDR]
 *
 * Environment: RDMA_PEER_FIGURE_CLASS (RMB size class of the figures,
 * default 4: 256 KiB, as smc_sock_view.c's connections), RDMA_PEER_SEND_SLOTS
 * (send-queue depth of links), SMCR_LOG=debug (every post, completion and
 * rdma_cm event).
 *
 * ADDR is a local IPv4 address that an RDMA device serves (rxe or siw on a
 * veth, not lo: rdma_cm does not resolve loopback); default: the first
 * non-loopback IPv4 address.  Exits 77 (skipped) if there is no RDMA
 * device for it, 1 if a check failed.
 *
 * The parent is the client of every connection; a forked server process
 * answers them, and a second forked process ("victim") one more.  Each
 * connection is a TCP connection to ADDR over which the two ends exchange
 * real CLC Proposal, Accept and Confirm messages (smc_clc.c) carrying the
 * transport's descriptors, then talk through the ring.  Checks:
 *   stream     64 MiB of a position-dependent pattern through 16 KiB RMBs
 *              (4096 ring wraps), checked byte by byte and by checksum;
 *              the first connection is a first contact
 *   multi      4 connections at once, each in its own thread, 8 MiB each:
 *              all on the link the first one made (same QP, no first
 *              contact, one link in the table)
 *   naming     an Accept names that link by the server's QP and instance,
 *              neither alone, and a first contact never names it again
 *   halfclose  shutdown: the server reads all, then end of file, then
 *              answers; the client reads the answer, then end of file
 *   abort      the client aborts: the server's recv fails with ECONNRESET
 *   counters   the link counters of the statistics (stats.h) moved: links,
 *              send and receive completions, registered bytes, buffers
 *   fork       the client forks with a connection open: in the child that
 *              connection fails (ECONNRESET) without touching the parent's
 *              link; the child, with SMCR_RDMA_LINK_IDLE_MS=2000, makes a
 *              new connection on a new link of its own, which goes idle
 *              and is torn down (no link left), then another new one; the
 *              server frees both of the child's links as unused, none
 *              failed; the parent's connection still works after
 *   kill       the victim is SIGKILLed: the client's blocked recv ends
 *              within 5 s, sends fail, its link counts as failed, and its
 *              link and buffers are freed
 *   free       at the end nothing is bound or in use; when the server
 *              exits its link goes too
 * With --stale-key, only this attack (issue 15: one tenant writing into
 * another's stream), by a forked client ("attacker") with the server:
 *   stale-key  the attacker learns an RMB's address and rkey from its
 *              Accept, closes that connection and keeps its link; the
 *              parent's connection (another process, another link) then
 *              gets the same pooled buffer, and its first 4 KiB land there,
 *              not yet read; the attacker WRITEs over them with the old
 *              key: its link must fail (remote access error), and the
 *              server must then read the parent's bytes untouched, and go
 *              on answering it
 * Figures: ping-pong round trip (14 bytes) and streaming with 64 KiB sends
 * over the ring, and the same over the TCP connection, for comparison.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "smc_clc.h"
#include "smc_conn.h"
#include "smc_rdma.h"
#include "smc_rdma_link.h"
#include "smc_rx.h"
#include "smc_tx.h"
#include "stats.h"

#define SKIP 77
#define MIB (1024 * 1024)
#define MULTI 4
#define MSG 14
#define CHUNK (64 * 1024)

static int failures;
static unsigned int figure_class = 4;	/* RMB of the figures: 256 KiB, as libsmcr's connections */
static const char *role = "client";

static void __attribute__((format(printf, 2, 3))) check(bool ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s: %s", role, ok ? "ok: " : "FAILED: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	failures += !ok;
}

static void die(const char *what, int err)
{
	printf("%s: FAILED: %s: %s\n", role, what, strerror(err));
	fflush(stdout);
	exit(1);
}

/* ---- the pattern: byte i of stream seed ---- */

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static void pattern(uint64_t seed, uint64_t pos, uint8_t *buf, size_t len)
{
	for (size_t i = 0; i < len; i++, pos++)
		buf[i] = (uint8_t)(mix((pos >> 3) ^ (seed << 48)) >> ((pos & 7) * 8));
}

static uint64_t fnv(uint64_t h, const uint8_t *buf, size_t len)
{
	for (size_t i = 0; i < len; i++)
		h = (h ^ buf[i]) * 0x100000001b3ull;
	return h;
}

/* ---- the ring, with errors as values ---- */

static ssize_t ring_send(struct smc_conn *c, const void *buf, size_t len)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return smc_tx_send(c, &iov, 1, 0, false);
}

static ssize_t ring_recv(struct smc_conn *c, void *buf, size_t len, int flags)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return smc_rx_recv(c, &iov, 1, flags, false);
}

static void xsend(struct smc_conn *c, const void *buf, size_t len)
{
	ssize_t n = ring_send(c, buf, len);

	if (n != (ssize_t)len)
		die("ring send", n < 0 ? (int)-n : EIO);
}

static void xrecv(struct smc_conn *c, void *buf, size_t len)
{
	ssize_t n = ring_recv(c, buf, len, MSG_WAITALL);

	if (n != (ssize_t)len)
		die("ring recv", n < 0 ? (int)-n : EIO);
}

/* ---- the CLC exchange over the TCP connection ---- */

static void tcp_full(int fd, void *buf, size_t len, bool out)
{
	for (size_t done = 0; done < len;) {
		ssize_t n = out ? send(fd, (char *)buf + done, len - done, MSG_NOSIGNAL)
				: recv(fd, (char *)buf + done, len - done, 0);

		if (n <= 0)
			die(out ? "tcp send" : "tcp recv", n ? errno : EPIPE);
		done += (size_t)n;
	}
}

static void clc_send(int fd, const uint8_t *msg, int len)
{
	if (len < 0)
		die("encoding a CLC message", EINVAL);
	tcp_full(fd, (void *)msg, (size_t)len, true);
}

static void clc_recv(int fd, struct smc_clc_msg *m, enum smc_clc_type want)
{
	uint8_t buf[SMC_CLC_MAX_LEN];
	size_t total;

	tcp_full(fd, buf, SMC_CLC_HDR_LEN, false);
	if (smc_clc_frame_length(buf, &total))
		die("CLC header", EPROTO);
	tcp_full(fd, buf + SMC_CLC_HDR_LEN, total - SMC_CLC_HDR_LEN, false);
	if (smc_clc_decode(buf, total, m) || m->hdr.type != want)
		die("CLC message", EPROTO);
}

static uint32_t next_token = 1;

/* A connection with its state beside it: freeing the first frees both. */
struct conn_and_state {
	struct smc_conn conn;
	struct smc_conn_state state;
};

static struct smc_conn *conn_new(int fd, unsigned int size_class)
{
	struct conn_and_state *cs = malloc(sizeof(*cs));
	struct smc_conn *c = cs ? &cs->conn : NULL;
	int rc;

	if (!c)
		die("conn", ENOMEM);
	smc_conn_init(c, &smc_rdma_ops, &cs->state, true);
	c->sock = fd;
	c->st->token = next_token++;
	c->st->rcv_timeout_ms = c->st->snd_timeout_ms = 30000;
	rc = c->ops->create_rmb(c, size_class, -1, SMCR_NO_WAKE_CHANNEL);
	if (rc)
		die("create_rmb", -rc);
	return c;
}

/* Client: Proposal, Accept, Confirm.  Returns the Accept's description. */
static struct smc_conn *clc_client(int fd, unsigned int size_class,
				   struct smc_clc_accept_confirm *acc)
{
	struct smc_conn *c = conn_new(fd, size_class);
	struct smc_clc_proposal prop = { .smc_type = SMC_TYPE_R, .prefix_len = 24 };
	struct smc_clc_accept_confirm conf;
	struct smc_clc_msg m;
	uint8_t buf[SMC_CLC_MAX_LEN];
	int rc = smc_rdma_local_block(fd, &prop.lcl);

	if (rc)
		die("smc_rdma_local_block", -rc);
	clc_send(fd, buf, smc_clc_encode_proposal(buf, sizeof(buf), &prop));
	clc_recv(fd, &m, SMC_CLC_ACCEPT);
	*acc = m.accept_confirm;
	c->st->peer_token = acc->r.rmbe_alert_token;
	rc = c->ops->attach_peer(c, acc, -1, -1);
	if (rc)
		die("attach_peer (client)", -rc);
	rc = smc_rdma_local_desc(c, &conf);
	if (rc)
		die("smc_rdma_local_desc (client)", -rc);
	conf.first_contact = acc->first_contact;
	clc_send(fd, buf, smc_clc_encode_confirm(buf, sizeof(buf), &conf));
	return c;
}

static struct smc_conn *clc_server(int fd, unsigned int size_class)
{
	struct smc_conn *c = conn_new(fd, size_class);
	struct smc_clc_accept_confirm acc;
	struct smc_clc_msg m;
	uint8_t buf[SMC_CLC_MAX_LEN];
	bool first;
	int rc;

	clc_recv(fd, &m, SMC_CLC_PROPOSAL);
	rc = smc_rdma_link_to_peer(c, &m.proposal.lcl, &first);
	if (rc)
		die("smc_rdma_link_to_peer", -rc);
	rc = smc_rdma_local_desc(c, &acc);
	if (rc)
		die("smc_rdma_local_desc (server)", -rc);
	acc.first_contact = first;
	clc_send(fd, buf, smc_clc_encode_accept(buf, sizeof(buf), &acc));
	clc_recv(fd, &m, SMC_CLC_CONFIRM);
	c->st->peer_token = m.accept_confirm.r.rmbe_alert_token;
	rc = c->ops->attach_peer(c, &m.accept_confirm, -1, -1);
	if (rc)
		die("attach_peer (server)", -rc);
	return c;
}

static void conn_free(struct smc_conn *c)
{
	close(c->sock);
	smc_conn_destroy(c);
	free(c);
}

/* ---- streams ---- */

struct stream {
	struct smc_conn *c;
	uint64_t seed, bytes;
	bool ok;
};

/* Sends the pattern in sends of varying size, then its checksum. */
static void *stream_send(void *arg)
{
	struct stream *s = arg;
	static __thread uint8_t buf[200 * 1024];
	uint64_t sum = 0xcbf29ce484222325ull;

	for (uint64_t pos = 0, i = 0; pos < s->bytes; i++) {
		size_t n = 1 + mix(i ^ s->seed) % sizeof(buf);

		if (n > s->bytes - pos)
			n = (size_t)(s->bytes - pos);
		pattern(s->seed, pos, buf, n);
		sum = fnv(sum, buf, n);
		xsend(s->c, buf, n);
		pos += n;
	}
	xsend(s->c, &sum, sizeof(sum));
	s->ok = true;
	return NULL;
}

/* Reads and checks the pattern in reads of varying size, then the checksum. */
static void *stream_recv(void *arg)
{
	struct stream *s = arg;
	static __thread uint8_t buf[150 * 1024], want[150 * 1024];
	uint64_t sum = 0xcbf29ce484222325ull, their;

	s->ok = true;
	for (uint64_t pos = 0, i = 0; pos < s->bytes && s->ok; i++) {
		size_t n = 1 + mix(i * 7 ^ s->seed) % sizeof(buf);
		ssize_t got;

		if (n > s->bytes - pos)
			n = (size_t)(s->bytes - pos);
		got = ring_recv(s->c, buf, n, 0);
		if (got <= 0)
			die("stream recv", got ? (int)-got : EPIPE);
		pattern(s->seed, pos, want, (size_t)got);
		if (memcmp(buf, want, (size_t)got)) {
			check(false, "stream %llu: wrong bytes at %llu", (unsigned long long)s->seed,
			      (unsigned long long)pos);
			s->ok = false;
		}
		sum = fnv(sum, buf, (size_t)got);
		pos += (uint64_t)got;
	}
	xrecv(s->c, &their, sizeof(their));
	s->ok = s->ok && their == sum;
	return NULL;
}

/* ---- the scenarios, server side ---- */

enum scenario { STREAM = 'S', MULTI_CONN = 'M', HALFCLOSE = 'H', ABORT = 'A', PINGPONG = 'P',
		TCP_PINGPONG = 'T', HOLD = 'K', ECHO = 'E', FIGURES = 'F', STALE_VICTIM = 'V',
		QUIT = 'Q' };

#define STALE_BYTES 4096		/* the stale-key victim's first message */
#define STALE_SEED 7

/* This process's RDMA counters (stats.h) and the gauges they give. */
struct figures {
	struct smcr_stats_rdma c;
	unsigned int links, endpoints, bufs_in_use;
};

static struct figures figures_of(const struct smcr_stats_rdma *c)
{
	return (struct figures){
		.c = *c,
		.links = (unsigned int)(c->links - c->links_ended),
		.endpoints = (unsigned int)(c->conns_bound - c->conns_unbound),
		.bufs_in_use = (unsigned int)(c->buffers_out - c->buffers_back),
	};
}

static struct figures stats(void)
{
	struct smcr_stats_counts s;

	smcr_stats_snapshot(&s);
	return figures_of(&s.rdma);
}

/* ECHO, in a thread of the server's: echoes byte by byte until end of file. */
static void *echo(void *arg)
{
	struct smc_conn *c = arg;
	char b;

	while (ring_recv(c, &b, 1, 0) == 1)
		xsend(c, &b, 1);
	smc_tx_close(c);
	conn_free(c);
	return NULL;
}

static int tcp_accept(int lfd)
{
	int one = 1, fd = accept(lfd, NULL, NULL);
	struct timeval tv = { .tv_sec = 30 };

	if (fd < 0)
		die("accept", errno);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

static void pingpong_echo(struct smc_conn *c, int fd, long rounds)
{
	char buf[MSG];

	for (long i = 0; i < rounds; i++) {
		if (c)
			xrecv(c, buf, MSG);
		else
			tcp_full(fd, buf, MSG, false);
		if (c)
			xsend(c, buf, MSG);
		else
			tcp_full(fd, buf, MSG, true);
	}
}

static void stream_sink(struct smc_conn *c, int fd, uint64_t bytes)
{
	static uint8_t buf[CHUNK];

	for (uint64_t got = 0; got < bytes;) {
		ssize_t n = c ? ring_recv(c, buf, sizeof(buf), 0) : recv(fd, buf, sizeof(buf), 0);

		if (n <= 0)
			die("sink", n < 0 ? (c ? (int)-n : errno) : EPIPE);
		got += (uint64_t)n;
	}
	if (c)
		xsend(c, "k", 1);
	else
		tcp_full(fd, "k", 1, true);
}

static void serve_multi(int lfd)
{
	struct stream s[MULTI];
	pthread_t t[MULTI];

	for (int i = 0; i < MULTI; i++) {
		int fd = tcp_accept(lfd);
		char what;

		tcp_full(fd, &what, 1, false);
		s[i] = (struct stream){ .c = clc_server(fd, 1), .seed = 100 + i, .bytes = 8ull * MIB };
	}
	for (int i = 0; i < MULTI; i++)
		pthread_create(&t[i], NULL, stream_recv, &s[i]);
	for (int i = 0; i < MULTI; i++) {
		pthread_join(t[i], NULL);
		check(s[i].ok, "multi: connection %d: 8 MiB checked", i);
		smc_tx_close(s[i].c);
	}
	for (int i = 0; i < MULTI; i++) {
		char b;

		(void)ring_recv(s[i].c, &b, 1, 0);	/* the client's close */
		conn_free(s[i].c);
	}
}

/*
 * The stale-key victim's server side.  Nothing of the connection is read
 * (a read takes the bytes the CDCs announced) until the client says, on a
 * TCP connection of its own, that its first STALE_BYTES are in our RMB
 * and the attacker has written: then they must be the client's.
 */
static void serve_stale_victim(struct smc_conn *c, int lfd)
{
	static uint8_t got[STALE_BYTES], want[STALE_BYTES];
	int go = tcp_accept(lfd);
	bool same;
	char b;

	tcp_full(go, &b, 1, false);
	close(go);
	xrecv(c, got, sizeof(got));
	pattern(STALE_SEED, 0, want, sizeof(want));
	same = !memcmp(got, want, sizeof(want));
	check(same, "stale-key: the victim's %d bytes, read after the attack, are its own",
	      STALE_BYTES);
	xsend(c, same ? "y" : "n", 1);
	(void)ring_recv(c, &b, 1, 0);	/* the client's close */
	smc_tx_close(c);
	conn_free(c);
}

static void server(int lfd, long rounds, uint64_t stream_bytes)
{
	pthread_t echoer;
	bool echoing = false;

	for (;;) {
		int fd = tcp_accept(lfd);
		char what;
		struct smc_conn *c;
		char buf[4096];
		ssize_t n;
		uint64_t got = 0;

		tcp_full(fd, &what, 1, false);
		switch (what) {
		case STREAM: {
			struct stream s = { .c = clc_server(fd, 0), .seed = 1, .bytes = 64ull * MIB };

			stream_recv(&s);
			check(s.ok, "stream: 64 MiB through 16 KiB RMBs, bytes and checksum right");
			n = ring_recv(s.c, buf, 1, 0);
			check(n == 0, "stream: end of file after the client's close (%zd)", n);
			smc_tx_close(s.c);
			conn_free(s.c);
			break;
		}
		case MULTI_CONN:
			close(fd);
			serve_multi(lfd);
			break;
		case HALFCLOSE:
			c = clc_server(fd, 1);
			while ((n = ring_recv(c, buf, sizeof(buf), 0)) > 0)
				got += (uint64_t)n;
			check(n == 0 && got == MIB, "halfclose: 1 MiB then end of file (%zd, %llu)", n,
			      (unsigned long long)got);
			xsend(c, "bye", 3);
			smc_tx_close(c);
			conn_free(c);
			break;
		case ABORT:
			c = clc_server(fd, 1);
			while ((n = ring_recv(c, buf, sizeof(buf), 0)) > 0)
				;
			check(n == -ECONNRESET, "abort: recv fails with ECONNRESET (%s)",
			      n ? strerror((int)-n) : "end of file");
			n = ring_send(c, "x", 1);
			check(n == -ECONNRESET, "abort: send fails with ECONNRESET (%s)",
			      n < 0 ? strerror((int)-n) : "sent");
			conn_free(c);
			break;
		case PINGPONG:
			c = clc_server(fd, figure_class);
			pingpong_echo(c, -1, rounds);
			stream_sink(c, -1, stream_bytes);
			smc_tx_close(c);
			conn_free(c);
			break;
		case TCP_PINGPONG:
			pingpong_echo(NULL, fd, rounds);
			stream_sink(NULL, fd, stream_bytes);
			close(fd);
			break;
		case HOLD:
			c = clc_server(fd, 1);
			xrecv(c, buf, 1);
			xsend(c, "h", 1);
			for (;;)
				pause();
		case ECHO:	/* while it lasts, other connections come */
			echoing = !pthread_create(&echoer, NULL, echo, clc_server(fd, 1));
			break;
		case STALE_VICTIM:
			serve_stale_victim(clc_server(fd, 1), lfd);
			break;
		case FIGURES: {
			struct smcr_stats_counts now;

			smcr_stats_snapshot(&now);
			tcp_full(fd, &now.rdma, sizeof(now.rdma), true);
			close(fd);
			break;
		}
		default:
			if (echoing)
				pthread_join(echoer, NULL);
			close(fd);
			exit(failures ? 1 : 0);
		}
	}
}

/* ---- client side ---- */

static struct sockaddr_in srv_addr;

static int tcp_connect(char what)
{
	int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);
	struct timeval tv = { .tv_sec = 30 };

	if (fd < 0 || connect(fd, (struct sockaddr *)&srv_addr, sizeof(srv_addr)))
		die("connect", errno);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	tcp_full(fd, &what, 1, true);
	return fd;
}

/* The server's figures. */
static struct figures server_figures(void)
{
	int fd = tcp_connect(FIGURES);
	struct smcr_stats_rdma c;

	tcp_full(fd, &c, sizeof(c), false);
	close(fd);
	return figures_of(&c);
}

/* Returns the server's QP number, which later connections must share. */
static uint32_t run_stream(void)
{
	struct smc_clc_accept_confirm acc;
	struct stream s = { .c = clc_client(tcp_connect(STREAM), 0, &acc), .seed = 1,
			    .bytes = 64ull * MIB };
	uint64_t t0 = smc_clock_ns();
	char b;
	ssize_t n;

	check(acc.first_contact, "stream: the first connection is a first contact");
	stream_send(&s);
	check(s.ok, "stream: 64 MiB sent in %.1f s",
	      (double)(smc_clock_ns() - t0) / 1e9);
	smc_tx_close(s.c);
	n = ring_recv(s.c, &b, 1, 0);
	check(n == 0, "stream: end of file after the server's close (%zd)", n);
	conn_free(s.c);
	return acc.r.qpn;
}

/*
 * The link the Accept acc (no first contact) named: found by its QP and
 * the server's instance, by neither alone, and not by a first contact,
 * since one named it already (a QP number the device gave again, siw's
 * lowest free, must not lead a new peer's connection to a dead link).
 */
static void check_link_naming(const struct smc_clc_accept_confirm *acc)
{
	struct smc_rdma_link_name name = { .peer_qpn = acc->r.qpn,
					   .peer_instance = smc_rdma_instance_of(&acc->r.lcl) };
	struct smc_rdma_link *link;
	int rc = smc_rdma_link_find((struct sockaddr *)&srv_addr, &name, 0, &link);

	check(rc == 0, "naming: the Accept's QP and instance name the link (%d)", rc);
	if (rc == 0)
		smc_rdma_link_put(link);
	name.first_contact = true;
	rc = smc_rdma_link_find((struct sockaddr *)&srv_addr, &name, 0, &link);
	check(rc == -ENOLINK, "naming: a first contact does not name it again (%d)", rc);
	name.first_contact = false;
	name.peer_instance++;
	rc = smc_rdma_link_find((struct sockaddr *)&srv_addr, &name, 0, &link);
	check(rc == -ENOLINK, "naming: its QP with another instance does not name it (%d)", rc);
	name.peer_instance--;
	name.peer_qpn ^= 1;
	rc = smc_rdma_link_find((struct sockaddr *)&srv_addr, &name, 0, &link);
	check(rc == -ENOLINK, "naming: its instance with another QP does not name it (%d)", rc);
}

static void run_multi(uint32_t first_qpn)
{
	struct smc_clc_accept_confirm acc;
	struct stream s[MULTI];
	pthread_t t[MULTI];
	int fd = tcp_connect(MULTI_CONN);
	bool same = true, fresh = false;

	close(fd);
	for (int i = 0; i < MULTI; i++) {
		s[i] = (struct stream){ .seed = 100 + i, .bytes = 8ull * MIB };
		s[i].c = clc_client(tcp_connect(0), 1, &acc);
		same &= acc.r.qpn == first_qpn;
		fresh |= acc.first_contact;
	}
	check(same && !fresh, "multi: %d connections reuse the link (same server QP, no first contact)",
	      MULTI);
	check(stats().links == 1, "multi: one link in the table (%u)", stats().links);
	check_link_naming(&acc);
	for (int i = 0; i < MULTI; i++)
		pthread_create(&t[i], NULL, stream_send, &s[i]);
	for (int i = 0; i < MULTI; i++) {
		pthread_join(t[i], NULL);
		check(s[i].ok, "multi: connection %d: 8 MiB sent", i);
	}
	for (int i = 0; i < MULTI; i++) {
		char b;
		ssize_t n = ring_recv(s[i].c, &b, 1, 0);

		check(n == 0, "multi: connection %d: end of file after the server's close", i);
		smc_tx_close(s[i].c);
		conn_free(s[i].c);
	}
}

/* A connection: 1 MiB, shutdown, the answer; on a new link (first contact) or not. */
static void run_halfclose(bool fresh)
{
	struct smc_clc_accept_confirm acc;
	struct smc_conn *c = clc_client(tcp_connect(HALFCLOSE), 1, &acc);
	static uint8_t buf[MIB];
	char answer[8] = "";
	ssize_t n;

	check(acc.first_contact == fresh, "halfclose: %s", fresh ? "a new link (first contact)"
							: "the link is reused (no first contact)");
	xsend(c, buf, sizeof(buf));
	check(smc_tx_shutdown(c) == 0, "halfclose: shutdown");
	n = ring_send(c, "x", 1);
	check(n == -EPIPE, "halfclose: send after shutdown fails with EPIPE (%zd)", n);
	n = ring_recv(c, answer, sizeof(answer), MSG_WAITALL);
	check(n == 3 && !memcmp(answer, "bye", 3),
	      "halfclose: the answer after our shutdown, then end of file (%zd)", n);
	conn_free(c);
}

static void run_abort(void)
{
	struct smc_clc_accept_confirm acc;
	struct smc_conn *c = clc_client(tcp_connect(ABORT), 1, &acc);
	static uint8_t buf[64 * 1024];

	xsend(c, buf, sizeof(buf));
	smc_conn_abort(c);
	check(ring_send(c, "x", 1) == -ECONNRESET, "abort: our own send fails with ECONNRESET");
	usleep(300000);		/* the server sees the abort before the TCP close */
	conn_free(c);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void run_figures(bool ring, long rounds, uint64_t bytes)
{
	struct smc_clc_accept_confirm acc;
	int fd = tcp_connect(ring ? PINGPONG : TCP_PINGPONG);
	struct smc_conn *c = ring ? clc_client(fd, figure_class, &acc) : NULL;
	uint64_t *rtt = calloc((size_t)rounds, sizeof(*rtt)), t0;
	static uint8_t buf[CHUNK];
	const char *name = ring ? "smcr-rdma" : "tcp";

	for (long i = 0; i < rounds; i++) {
		t0 = smc_clock_ns();
		if (c) {
			xsend(c, buf, MSG);
			xrecv(c, buf, MSG);
		} else {
			tcp_full(fd, buf, MSG, true);
			tcp_full(fd, buf, MSG, false);
		}
		rtt[i] = smc_clock_ns() - t0;
	}
	qsort(rtt, (size_t)rounds, sizeof(*rtt), cmp_u64);
	printf("figure: %-9s ping-pong %d B: p50 %8.2f us  p99 %8.2f us  (%ld round trips)\n", name,
	       MSG, rtt[rounds / 2] / 1e3, rtt[rounds * 99 / 100] / 1e3, rounds);
	t0 = smc_clock_ns();
	for (uint64_t sent = 0; sent < bytes; sent += CHUNK) {
		if (c)
			xsend(c, buf, CHUNK);
		else
			tcp_full(fd, buf, CHUNK, true);
	}
	if (c)
		xrecv(c, buf, 1);
	else
		tcp_full(fd, buf, 1, false);
	printf("figure: %-9s stream 64 KiB sends: %8.1f MB/s  (%llu MiB, RMB %u KiB)\n", name,
	       (double)bytes / ((double)(smc_clock_ns() - t0) / 1e9) / 1e6,
	       (unsigned long long)(bytes / MIB), smc_rmb_size(figure_class) / 1024);
	fflush(stdout);
	free(rtt);
	if (c) {
		smc_tx_close(c);
		(void)ring_recv(c, buf, 1, 0);
		conn_free(c);
	} else {
		close(fd);
	}
}

/* The victim holds one connection; killed, its peer must notice at once. */
static void run_kill(pid_t victim, const struct sockaddr_in *victim_addr)
{
	struct smc_clc_accept_confirm acc;
	struct figures before = stats();
	struct sockaddr_in keep = srv_addr;
	struct smc_conn *c;
	char b = 'k';
	uint64_t t0;
	ssize_t n;

	srv_addr = *victim_addr;
	c = clc_client(tcp_connect(HOLD), 1, &acc);
	srv_addr = keep;
	check(acc.first_contact && stats().links == before.links + 1,
	      "kill: another process, another link (%u links)", stats().links);
	xsend(c, &b, 1);
	xrecv(c, &b, 1);
	kill(victim, SIGKILL);
	t0 = smc_clock_ns();
	n = ring_recv(c, &b, 1, 0);
	check((n == -ECONNRESET || n == 0) && smc_clock_ns() - t0 < 5000000000ull,
	      "kill: our blocked recv ends in %.0f ms (%s)", (double)(smc_clock_ns() - t0) / 1e6,
	      n == 0 ? "end of file" : strerror((int)-n));
	/* as over TCP: after the end of file, the first send goes (lost), the next fails */
	n = ring_send(c, "x", 1);
	if (n == 1)
		n = ring_send(c, "x", 1);
	check(n == -ECONNRESET || n == -EPIPE, "kill: then send fails (%s)",
	      n < 0 ? strerror((int)-n) : "sent");
	conn_free(c);
	waitpid(victim, NULL, 0);
	for (int i = 0; i < 50 && stats().links > before.links; i++)
		usleep(100000);
	check(stats().links == before.links && stats().bufs_in_use == before.bufs_in_use,
	      "kill: the dead link and its buffers are freed (%u links, %u buffers in use)",
	      stats().links, stats().bufs_in_use);
	check(stats().c.links_failed == before.c.links_failed + 1 &&
	      stats().c.links_idle == before.c.links_idle,
	      "kill: counted as a failed link, not an idle one (%llu failed)",
	      (unsigned long long)stats().c.links_failed);
}

static void run_counters(void)
{
	struct figures f;

	/* the aborted connection's RMB waits a while for late WRITEs (smc_rdma_link_retire) */
	for (int i = 0; i < 100 && stats().bufs_in_use; i++)
		usleep(100000);
	f = stats();

	check(f.c.links == 1 && f.links == 1 && f.c.links_failed == 0,
	      "counters: 1 link made, up, none failed (%llu, %u, %llu)",
	      (unsigned long long)f.c.links, f.links, (unsigned long long)f.c.links_failed);
	check(f.c.wc_send > 0 && f.c.wc_recv > 0,
	      "counters: completions taken, %llu send, %llu receive",
	      (unsigned long long)f.c.wc_send, (unsigned long long)f.c.wc_recv);
	check(f.c.bytes_registered > 0 && f.c.buffers_out > 0 && f.bufs_in_use == 0 &&
	      f.c.conns_bound == f.c.conns_unbound && f.c.conns_bound >= 1 + MULTI + 2,
	      "counters: %llu KiB registered, %llu buffers handed out and back, %llu connections "
	      "bound and unbound", (unsigned long long)f.c.bytes_registered / 1024,
	      (unsigned long long)f.c.buffers_out, (unsigned long long)f.c.conns_bound);
}

/* Waits up to ms for this process to have no link; how long it took, or -1. */
static long links_gone(long ms)
{
	uint64_t t0 = smc_clock_ns();

	for (long waited = 0; waited < ms; waited += 50) {
		if (stats().links == 0)
			return (long)((smc_clock_ns() - t0) / 1000000u);
		usleep(50000);
	}
	return -1;
}

/* The forked child of run_fork: its checks' failures. */
static int fork_child(struct smc_conn *inherited)
{
	ssize_t n;
	long took;

	role = "child";
	failures = 0;
	smcr_stats_reset();	/* as libsmcr's own fork handler (init.c) */
	n = ring_send(inherited, "x", 1);
	check(n == -ECONNRESET || n == -EPIPE,
	      "fork: the parent's connection fails in the child (%s)",
	      n < 0 ? strerror((int)-n) : "sent");
	conn_free(inherited);	/* the link and buffers are the parent's: only forgotten */
	setenv("SMCR_RDMA_LINK_IDLE_MS", "2000", 1);	/* read when the transport starts anew */
	run_halfclose(true);
	check(stats().links == 1 && stats().endpoints == 0,
	      "fork: the child's own link, unused now (%u links)", stats().links);
	took = links_gone(20000);
	check(took >= 0 && stats().c.links_idle == 1 && stats().c.links_failed == 0,
	      "fork: the idle link is torn down after %ld ms (%u links, %llu idle, %llu failed)",
	      took, stats().links, (unsigned long long)stats().c.links_idle,
	      (unsigned long long)stats().c.links_failed);
	run_halfclose(true);
	check(stats().c.links == 2, "fork: the next connection made a new link (%llu made)",
	      (unsigned long long)stats().c.links);
	/* idle before the exit: the server must have closed its side by then */
	took = links_gone(20000);
	check(took >= 0 && stats().c.links_idle == 2, "fork: that one too, after %ld ms", took);
	return failures;
}

static void run_fork(void)
{
	struct smc_clc_accept_confirm acc;
	struct smc_conn *c = clc_client(tcp_connect(ECHO), 1, &acc);
	struct figures srv0, srv = { 0 };
	char b = 'a';
	pid_t child;
	int status;

	xsend(c, &b, 1);
	xrecv(c, &b, 1);
	srv0 = server_figures();
	child = fork();
	if (child == 0)
		_exit(fork_child(c) ? 1 : 0);
	check(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "fork: the child's checks passed");
	b = 'b';
	check(ring_send(c, &b, 1) == 1 && ring_recv(c, &b, 1, MSG_WAITALL) == 1 && b == 'b',
	      "fork: the parent's connection works after the child's exit");
	for (int i = 0; i < 100; i++) {
		srv = server_figures();
		if (srv.links == srv0.links)
			break;
		usleep(100000);
	}
	check(srv.links == srv0.links && srv.c.links_failed == srv0.c.links_failed &&
	      srv.c.links_idle == srv0.c.links_idle + 2,
	      "fork: the server freed the child's 2 links as unused, none failed (%u links, "
	      "%llu idle, %llu failed)", srv.links,
	      (unsigned long long)(srv.c.links_idle - srv0.c.links_idle),
	      (unsigned long long)(srv.c.links_failed - srv0.c.links_failed));
	smc_tx_close(c);
	check(ring_recv(c, &b, 1, 0) == 0, "fork: then end of file after the server's close");
	conn_free(c);
}

/* What the stale-key attacker learnt from its Accept. */
struct stale_key {
	uint64_t addr;
	uint32_t rkey;
};

#define NO_TOKEN 0xffffffffu		/* no connection's: the server drops its CDCs */

/*
 * Posts on link the WRITE w (if not NULL), then a CDC the server drops,
 * and waits for the CDC's delivery: an RC QP delivers it after every
 * earlier WRITE of the link landed (iWARP: after it left).  0, or -errno.
 */
static int write_and_deliver(struct smc_rdma_link *link, const struct smc_rdma_write *w)
{
	uint8_t cdc[SMC_CDC_MSG_LEN];

	smc_cdc_encode(&(struct smc_cdc){ .seqno = 1, .token = NO_TOKEN }, cdc);
	return smc_rdma_post(link, w, w ? 1 : 0, cdc, SMC_RDMA_DELIVERED);
}

/*
 * Our link to the server that the Accept acc named, with a reference: the
 * connection it made joined it already (no longer a first contact).
 */
static struct smc_rdma_link *link_of(const struct smc_clc_accept_confirm *acc)
{
	struct smc_rdma_link_name name = { .peer_qpn = acc->r.qpn,
					   .peer_instance = smc_rdma_instance_of(&acc->r.lcl) };
	struct smc_rdma_link *link;
	int rc = smc_rdma_link_find((struct sockaddr *)&srv_addr, &name, 5000, &link);

	if (rc)
		die("smc_rdma_link_find", -rc);
	return link;
}

/*
 * The stale-key attacker, a forked client talking to the parent on ctl: a
 * connection of its own, closed, its link kept; at the parent's word it
 * WRITEs with the key it learnt, and says whether its link failed ('f')
 * or the WRITE went through ('w').
 */
static int stale_attacker(int ctl)
{
	struct smc_clc_accept_confirm acc;
	struct smc_conn *c = clc_client(tcp_connect(ECHO), 1, &acc);	/* its buffer goes back */
	uint64_t failed0 = stats().c.links_failed;
	struct smc_rdma_link *link = link_of(&acc);		/* stays after the connection */
	struct stale_key key = { .addr = acc.r.rmb_dma_addr, .rkey = acc.r.rmb_rkey };
	uint8_t junk[32];
	struct smc_rdma_write w = { .src = junk, .len = sizeof(junk), .remote_addr = key.addr,
				    .rkey = key.rkey };	/* inline: no lkey */
	char b = 'a';
	int rc;

	role = "attacker";
	xsend(c, &b, 1);
	xrecv(c, &b, 1);
	smc_tx_close(c);
	(void)ring_recv(c, &b, 1, 0);	/* the server's close: it gave the buffer back */
	conn_free(c);
	tcp_full(ctl, &key, sizeof(key), true);
	tcp_full(ctl, &b, 1, false);
	memset(junk, 0xee, sizeof(junk));
	rc = write_and_deliver(link, &w);
	/* on iWARP the CDC completes once sent: the error ends the QP later */
	for (int i = 0; !rc && i < 100 && stats().c.links_failed == failed0; i++) {
		smc_rdma_link_drain(link);
		usleep(50000);
	}
	b = rc || stats().c.links_failed != failed0 ? 'f' : 'w';
	tcp_full(ctl, &b, 1, true);
	smc_rdma_link_put(link);
	return 0;
}

/* The stale-key attack (the header comment); this process is the victim's client. */
static void run_stale_key(void)
{
	struct smc_clc_accept_confirm acc;
	static uint8_t msg[STALE_BYTES];
	struct smc_rdma_link *link;
	struct stale_key key;
	struct smc_conn *c;
	int ctl[2], status;
	pid_t attacker;
	char b;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, ctl))
		die("socketpair", errno);
	attacker = fork();
	if (attacker == 0) {
		close(ctl[0]);
		_exit(stale_attacker(ctl[1]));
	}
	close(ctl[1]);
	tcp_full(ctl[0], &key, sizeof(key), false);
	for (int i = 0; i < 100 && server_figures().bufs_in_use; i++)
		usleep(50000);
	c = clc_client(tcp_connect(STALE_VICTIM), 1, &acc);
	check(acc.r.rmb_dma_addr == key.addr,
	      "stale-key: our connection got the buffer the attacker had (rkey %#x, was %#x)",
	      acc.r.rmb_rkey, key.rkey);
	pattern(STALE_SEED, 0, msg, sizeof(msg));
	xsend(c, msg, sizeof(msg));
	link = link_of(&acc);
	check(write_and_deliver(link, NULL) == 0, "stale-key: our bytes are in the server's RMB");
	smc_rdma_link_put(link);
	usleep(100000);			/* iWARP: delivered is sent (write_and_deliver) */
	tcp_full(ctl[0], "a", 1, true);
	tcp_full(ctl[0], &b, 1, false);
	check(b == 'f', "stale-key: the attacker's WRITE with the old key %s",
	      b == 'f' ? "failed its link" : "went through");
	close(tcp_connect(STALE_VICTIM));	/* the server reads now */
	xrecv(c, &b, 1);
	check(b == 'y', "stale-key: the server read our bytes untouched, and answers");
	smc_tx_close(c);
	(void)ring_recv(c, &b, 1, 0);
	conn_free(c);
	close(ctl[0]);
	check(waitpid(attacker, &status, 0) == attacker && WIFEXITED(status) &&
	      WEXITSTATUS(status) == 0, "stale-key: the attacker ran to its end");
}

/* ---- main ---- */

static bool first_ipv4(struct in_addr *out)
{
	struct ifaddrs *all, *a;
	bool found = false;

	if (getifaddrs(&all))
		return false;
	for (a = all; a && !found; a = a->ifa_next)
		if (a->ifa_addr && a->ifa_addr->sa_family == AF_INET &&
		    ntohl(((struct sockaddr_in *)a->ifa_addr)->sin_addr.s_addr) >> 24 != 127) {
			*out = ((struct sockaddr_in *)a->ifa_addr)->sin_addr;
			found = true;
		}
	freeifaddrs(all);
	return found;
}

static int tcp_listen(struct sockaddr_in *addr)
{
	socklen_t len = sizeof(*addr);
	int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);

	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (fd < 0 || bind(fd, (struct sockaddr *)addr, sizeof(*addr)) || listen(fd, 16) ||
	    getsockname(fd, (struct sockaddr *)addr, &len))
		die("listen", errno);
	return fd;
}

/* Stops the server and checks its exit status. */
static void quit_server(pid_t srv)
{
	int status;

	close(tcp_connect(QUIT));
	waitpid(srv, &status, 0);
	check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the server's checks passed");
}

/* In a child, so that the parent forks its peers before it touches a device. */
static bool have_device(int lfd)
{
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		struct smc_clc_local lcl;
		int rc = smc_rdma_local_block(lfd, &lcl);

		if (rc)
			printf("skip: no RDMA device for %s: %s\n", inet_ntoa(srv_addr.sin_addr),
			       strerror(-rc));
		_exit(rc ? SKIP : 0);
	}
	return waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int main(int argc, char **argv)
{
	bool stale_only = argc > 1 && !strcmp(argv[1], "--stale-key");
	long rounds = !stale_only && argc > 2 ? atol(argv[2]) : 5000;
	uint64_t bytes = (!stale_only && argc > 3 ? strtoull(argv[3], NULL, 0) : 64) * MIB;
	struct sockaddr_in victim_addr;
	int lfd, vfd;
	pid_t srv, victim;

	if (stale_only) {
		argc--;
		argv++;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	smcr_log_init();	/* SMCR_LOG=debug shows every post and completion */
	/* the transport's fork steps, which libsmcr.so runs from shim/fork.c */
	pthread_atfork(smc_rdma_fork_prepare, smc_rdma_fork_parent, smc_rdma_fork_child);
	if (getenv("RDMA_PEER_SEND_SLOTS"))	/* a link's send-queue depth */
		smc_rdma_set_slots((unsigned int)atoi(getenv("RDMA_PEER_SEND_SLOTS")), 0);
	if (getenv("RDMA_PEER_FIGURE_CLASS"))	/* the figures' RMB size class, 0-5 */
		figure_class = (unsigned int)atoi(getenv("RDMA_PEER_FIGURE_CLASS")) % 6;
	srv_addr.sin_family = AF_INET;
	if (argc > 1 ? inet_pton(AF_INET, argv[1], &srv_addr.sin_addr) != 1
		     : !first_ipv4(&srv_addr.sin_addr)) {
		printf("skip: no address to test on\n");
		return SKIP;
	}
	victim_addr = srv_addr;
	lfd = tcp_listen(&srv_addr);
	vfd = tcp_listen(&victim_addr);
	if (!have_device(lfd))
		return SKIP;
	srv = fork();
	if (srv == 0) {
		alarm(600);
		role = "server";
		close(vfd);
		server(lfd, rounds, bytes);
	}
	if (stale_only) {
		close(lfd);
		close(vfd);
		alarm(600);
		run_stale_key();
		quit_server(srv);
		printf("%s\n", failures ? "FAILED" : "PASSED");
		return failures ? 1 : 0;
	}
	victim = fork();
	if (victim == 0) {
		role = "victim";
		close(lfd);
		server(vfd, rounds, bytes);
	}
	close(lfd);
	close(vfd);
	alarm(600);

	run_multi(run_stream());
	run_halfclose(false);
	run_abort();
	run_counters();
	run_fork();
	run_figures(true, rounds, bytes);
	run_figures(false, rounds, bytes);
	run_kill(victim, &victim_addr);

	check(stats().endpoints == 0 && stats().bufs_in_use == 0,
	      "free: nothing bound, no buffer in use (%u, %u)", stats().endpoints,
	      stats().bufs_in_use);
	quit_server(srv);
	for (int i = 0; i < 50 && stats().links; i++)
		usleep(100000);
	check(stats().links == 0, "free: the server's exit took its link (%u links)", stats().links);
	printf("stats: links made %llu, failed %llu, idle %llu; completions %llu send, %llu receive; "
	       "CDC slots exhausted %llu, unknown tokens %llu, registered %llu KiB\n",
	       (unsigned long long)stats().c.links, (unsigned long long)stats().c.links_failed,
	       (unsigned long long)stats().c.links_idle, (unsigned long long)stats().c.wc_send,
	       (unsigned long long)stats().c.wc_recv,
	       (unsigned long long)stats().c.cdc_slots_exhausted,
	       (unsigned long long)stats().c.cdc_unknown_token,
	       (unsigned long long)stats().c.bytes_registered / 1024);
	printf("%s\n", failures ? "FAILED" : "PASSED");
	return failures ? 1 : 0;
}
