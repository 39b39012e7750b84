/*
 * Unit tests of the CLC exchange (libsmcr/socket/smc_setup.c) over real TCP
 * loopback connections, client and server in two threads, with a fake
 * transport whose offers, prepare and attach can be made to fail.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "smc_setup.h"

#define HOST_GID(low) (0x12345678ull << 32 | (low))

struct fake {
	uint64_t token;                 /* ours, put in Accept/Confirm */
	enum smc_type offers;           /* 0 (SMC_TYPE_R) is taken for "D", the usual */
	bool offers_set;                /* offers as given, R included */
	enum smcr_reason offers_fail, prepare_fails, reach_fails, attach_fails;
	int prepared, reached, attached, abandoned;
	enum smc_type prepared_type;
	uint8_t peer_lcl_id;            /* server: peer_id[7] of the Proposal's local block */
	uint64_t peer_token;
	bool peer_first_contact;
};

/* Our SMC-R local block: its last peer_id byte names the side. */
static void fake_lcl(const struct fake *f, struct smc_clc_local *lcl)
{
	memset(lcl, 0, sizeof(*lcl));
	lcl->peer_id[7] = (uint8_t)f->token;
	lcl->gid[15] = 1;
}

static enum smcr_reason fake_offers(void *ctx, enum smc_type *type, struct smc_clc_local *lcl)
{
	struct fake *f = ctx;
	*type = f->offers_set ? f->offers : SMC_TYPE_D;
	if (f->offers_fail)
		return f->offers_fail;
	if (*type == SMC_TYPE_R || *type == SMC_TYPE_B)
		fake_lcl(f, lcl);
	return SMCR_REASON_NONE;
}

static enum smcr_reason fake_prepare(void *ctx, enum smc_type type, const struct smc_clc_local *peer)
{
	struct fake *f = ctx;
	if (f->prepare_fails)
		return f->prepare_fails;
	f->prepared++;
	f->prepared_type = type;
	if (peer)
		f->peer_lcl_id = peer->peer_id[7];
	return SMCR_REASON_NONE;
}

static enum smcr_reason fake_describe(void *ctx, struct smc_clc_accept_confirm *ours)
{
	struct fake *f = ctx;
	memset(ours, 0, sizeof(*ours));
	if (f->prepared_type == SMC_TYPE_D) {
		ours->d.token = f->token;
		ours->d.dmbe_size = 2;
		return SMCR_REASON_NONE;
	}
	fake_lcl(f, &ours->r.lcl);
	ours->r.qpn = 0x100 + (uint32_t)f->token;
	ours->r.rmbe_alert_token = (uint32_t)f->token;
	ours->r.rmbe_size = 4;
	ours->first_contact = true;
	return SMCR_REASON_NONE;
}

static enum smcr_reason fake_attach(void *ctx, const struct smc_clc_accept_confirm *peer)
{
	struct fake *f = ctx;
	if (f->attach_fails)
		return f->attach_fails;
	f->attached++;
	f->peer_token = peer->smc_type == SMC_TYPE_D ? peer->d.token : peer->r.rmbe_alert_token;
	f->peer_first_contact = peer->first_contact;
	return SMCR_REASON_NONE;
}

static void fake_abandon(void *ctx)
{
	((struct fake *)ctx)->abandoned++;
}

static enum smcr_reason fake_reach(void *ctx)
{
	struct fake *f = ctx;
	if (f->reach_fails)
		return f->reach_fails;
	f->reached++;
	return SMCR_REASON_NONE;
}

#define FAKE_TRANSPORT(f)                                                              \
	{ .offers = fake_offers, .prepare = fake_prepare, .reach = fake_reach,          \
	  .attach = fake_attach, .describe = fake_describe, .abandon = fake_abandon,    \
	  .ctx = (f) }

struct side {
	bool client;
	int sock;
	uint64_t gid;
	struct fake fake;
	struct smc_setup setup;
	const char *send_after;         /* application data written once final */
	char received[64];              /* application data read once final */
};

static void *run_side(void *arg)
{
	struct side *sd = arg;
	struct smc_setup_transport t = FAKE_TRANSPORT(&sd->fake);

	if (sd->client)
		smc_setup_client(&sd->setup, sd->gid);
	else
		smc_setup_server(&sd->setup, sd->gid);
	for (;;) {
		smc_setup_progress(&sd->setup, sd->sock, &t);
		if (smc_setup_final(&sd->setup))
			break;
		poll(&(struct pollfd){ .fd = sd->sock, .events = POLLIN }, 1, 50);
	}
	if (sd->send_after)
		send(sd->sock, sd->send_after, strlen(sd->send_after), MSG_NOSIGNAL);
	return NULL;
}

static void tcp_pair(int *client, int *server)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	int l = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(bind(l, (void *)&a, sizeof(a)), 0);
	assert_int_equal(listen(l, 1), 0);
	assert_int_equal(getsockname(l, (void *)&a, &len), 0);
	*client = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(connect(*client, (void *)&a, sizeof(a)), 0);
	*server = accept(l, NULL, NULL);
	assert_true(*server >= 0);
	close(l);
}

/* Runs both ends to completion; then each reads what the other wrote after it. */
static void exchange(struct side *c, struct side *s)
{
	pthread_t tc, ts;
	tcp_pair(&c->sock, &s->sock);
	c->client = true;
	pthread_create(&tc, NULL, run_side, c);
	pthread_create(&ts, NULL, run_side, s);
	pthread_join(tc, NULL);
	pthread_join(ts, NULL);
	struct timeval tv = { 1, 0 };
	setsockopt(c->sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(s->sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (s->send_after)
		(void)!recv(c->sock, c->received, sizeof(c->received) - 1, 0);
	if (c->send_after)
		(void)!recv(s->sock, s->received, sizeof(s->received) - 1, 0);
	close(c->sock);
	close(s->sock);
}

/* by declined with reason (wire code code); peer fell back on its Decline. */
static void assert_declined(const struct side *by, const struct side *peer, enum smcr_reason reason,
			    uint32_t code)
{
	assert_int_equal(by->setup.state, SMC_SETUP_FALLBACK);
	assert_int_equal(by->setup.reason, reason);
	assert_int_equal(peer->setup.state, SMC_SETUP_FALLBACK);
	assert_int_equal(peer->setup.reason, SMCR_REASON_PEERDECL);
	assert_int_equal(peer->setup.peer_diagnosis, code);
}

static void both_smc(void **state)
{
	(void)state;
	struct side c = { .gid = HOST_GID(1), .fake.token = 0xc1, .send_after = "ping" };
	struct side s = { .gid = HOST_GID(2), .fake.token = 0x51, .send_after = "pong" };
	exchange(&c, &s);
	assert_int_equal(c.setup.state, SMC_SETUP_DONE);
	assert_int_equal(s.setup.state, SMC_SETUP_DONE);
	assert_int_equal(c.fake.peer_token, 0x51);
	assert_int_equal(s.fake.peer_token, 0xc1);
	assert_int_equal(c.fake.reached * 10 + s.fake.reached, 1);     /* the server, only */
	assert_int_equal(c.fake.abandoned + s.fake.abandoned, 0);
	/* Not one byte of the stream after the exchange was taken by it. */
	assert_string_equal(s.received, "ping");
	assert_string_equal(c.received, "pong");
}

static void server_out_of_memory_declines(void **state)
{
	(void)state;
	struct side c = { .gid = HOST_GID(1), .fake.token = 1, .send_after = "data after" };
	struct side s = { .gid = HOST_GID(2), .fake.prepare_fails = SMCR_REASON_MEM,
			  .send_after = "reply" };
	exchange(&c, &s);
	assert_declined(&s, &c, SMCR_REASON_MEM, 0x01010000u);
	assert_string_equal(s.received, "data after");      /* TCP goes on, untouched */
	assert_string_equal(c.received, "reply");
}

static void client_attach_failure_declines(void **state)
{
	(void)state;
	struct side c = { .gid = HOST_GID(1), .fake.attach_fails = SMCR_REASON_NOSMCDEV,
			  .send_after = "x" };
	struct side s = { .gid = HOST_GID(2), .fake.token = 9, .send_after = "y" };
	exchange(&c, &s);
	assert_declined(&c, &s, SMCR_REASON_NOSMCDEV, 0x03030000u);
	assert_int_equal(c.fake.abandoned, 1);              /* its buffer, prepared */
	assert_int_equal(s.fake.abandoned, 1);
	assert_string_equal(s.received, "x");
	assert_string_equal(c.received, "y");
}

static void other_host_declined(void **state)
{
	(void)state;
	struct side c = { .gid = 0x99999999ull << 32 | 1 };
	struct side s = { .gid = HOST_GID(2) };
	exchange(&c, &s);
	assert_int_equal(s.setup.state, SMC_SETUP_FALLBACK);
	assert_int_equal(s.setup.reason, SMCR_REASON_NOSMCDEV);
	assert_int_equal(s.fake.prepared, 0);
	assert_int_equal(c.setup.reason, SMCR_REASON_PEERDECL);
}

static void server_commits_only_after_confirm(void **state)
{
	(void)state;
	/* The server cannot attach the client's buffer after Confirm: it must reset. */
	struct side c = { .gid = HOST_GID(1) };
	struct side s = { .gid = HOST_GID(2), .fake.attach_fails = SMCR_REASON_INTERR };
	exchange(&c, &s);
	assert_int_equal(c.setup.state, SMC_SETUP_DONE);
	assert_int_equal(s.setup.state, SMC_SETUP_RESET);
	assert_int_equal(s.fake.abandoned, 1);
}

/*
 * A server that cannot reach the client's buffer (smcrd out of its reach,
 * no descriptor it may receive) finds out before its Accept, so both ends
 * stay on TCP with the stream whole, never a reset.
 */
static void server_unreachable_declines_before_accept(void **state)
{
	(void)state;
	struct side c = { .gid = HOST_GID(1), .fake.token = 3, .send_after = "request" };
	struct side s = { .gid = HOST_GID(2), .fake.reach_fails = SMCR_REASON_NOSMCDEV,
			  .send_after = "reply" };
	exchange(&c, &s);
	assert_declined(&s, &c, SMCR_REASON_NOSMCDEV, 0x03030000u);
	assert_int_equal(s.fake.abandoned, 1);              /* its buffer, prepared */
	assert_int_equal(c.fake.prepared + c.fake.attached, 0);
	assert_string_equal(s.received, "request");
	assert_string_equal(c.received, "reply");
}

/* Two hosts that both offer RDMA: SMC-R, the server linking to the client's local block. */
static void other_host_rdma(void **state)
{
	(void)state;
	struct side c = { .gid = 0x99999999ull << 32 | 1, .fake = { .token = 0xc1,
			  .offers = SMC_TYPE_B, .offers_set = true }, .send_after = "ping" };
	struct side s = { .gid = HOST_GID(2), .fake = { .token = 0x51, .offers = SMC_TYPE_B,
			  .offers_set = true }, .send_after = "pong" };
	exchange(&c, &s);
	assert_int_equal(c.setup.state, SMC_SETUP_DONE);
	assert_int_equal(s.setup.state, SMC_SETUP_DONE);
	assert_int_equal(c.fake.prepared_type, SMC_TYPE_R);
	assert_int_equal(s.fake.prepared_type, SMC_TYPE_R);
	assert_int_equal(s.fake.peer_lcl_id, 0xc1);         /* the Proposal's local block */
	assert_int_equal(c.fake.peer_token, 0x51);
	assert_int_equal(s.fake.peer_token, 0xc1);
	assert_true(c.fake.peer_first_contact);
	assert_true(s.fake.peer_first_contact);             /* the client echoes it */
	assert_string_equal(s.received, "ping");
	assert_string_equal(c.received, "pong");
}

/* One host, both offer both: shared memory; with shm off on the server, RDMA. */
static void same_host_prefers_shm(void **state)
{
	(void)state;
	for (int shm_off = 0; shm_off < 2; shm_off++) {
		struct side c = { .gid = HOST_GID(1), .fake = { .token = 1, .offers = SMC_TYPE_B,
				  .offers_set = true } };
		struct side s = { .gid = HOST_GID(2), .fake = { .token = 2, .offers_set = true,
				  .offers = shm_off ? SMC_TYPE_R : SMC_TYPE_B } };
		exchange(&c, &s);
		assert_int_equal(c.setup.state, SMC_SETUP_DONE);
		assert_int_equal(s.setup.state, SMC_SETUP_DONE);
		assert_int_equal(s.fake.prepared_type, shm_off ? SMC_TYPE_R : SMC_TYPE_D);
		assert_int_equal(c.fake.prepared_type, s.fake.prepared_type);
	}
}

/* Another host, and the server has no RDMA: NOSMCDEV, nothing prepared. */
static void other_host_without_rdma_declined(void **state)
{
	(void)state;
	struct side c = { .gid = 0x99999999ull << 32 | 1, .fake = { .offers = SMC_TYPE_B,
			  .offers_set = true } };
	struct side s = { .gid = HOST_GID(2) };
	exchange(&c, &s);
	assert_int_equal(s.setup.state, SMC_SETUP_FALLBACK);
	assert_int_equal(s.setup.reason, SMCR_REASON_NOSMCDEV);
	assert_int_equal(s.fake.prepared + c.fake.prepared, 0);
	assert_int_equal(c.setup.reason, SMCR_REASON_PEERDECL);
}

/* A client that can offer nothing declines at once, with its reason. */
static void client_without_transport_declines(void **state)
{
	(void)state;
	struct side c = { .gid = HOST_GID(1), .fake.offers_fail = SMCR_REASON_MEM,
			  .send_after = "a" };
	struct side s = { .gid = HOST_GID(2), .send_after = "b" };
	exchange(&c, &s);
	assert_declined(&c, &s, SMCR_REASON_MEM, 0x01010000u);
	assert_string_equal(s.received, "a");
	assert_string_equal(c.received, "b");
}

/*
 * A "client" that sends raw bytes, and then closes its end if told to: the
 * server must not take them for CLC.
 */
static struct smc_setup raw_server(const void *bytes, size_t len, bool then_close)
{
	int c, s;
	struct side sd = { .gid = HOST_GID(2) };
	pthread_t t;
	tcp_pair(&c, &s);
	sd.sock = s;
	pthread_create(&t, NULL, run_side, &sd);
	if (len)
		assert_int_equal(send(c, bytes, len, 0), (ssize_t)len);
	if (then_close)
		shutdown(c, SHUT_WR);
	pthread_join(t, NULL);
	close(c);
	close(s);
	return sd.setup;
}

static void garbage_resets(void **state)
{
	(void)state;
	static const char http[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
	struct smc_setup st = raw_server(http, sizeof(http) - 1, false);
	assert_int_equal(st.state, SMC_SETUP_RESET);
	assert_int_equal(st.reason, SMCR_REASON_SYNCERR);
}

static void split_message_is_reassembled(void **state)
{
	(void)state;
	int c, s;
	uint8_t msg[SMC_CLC_PROPOSAL_MAX_LEN], reply[SMC_CLC_MAX_LEN];
	struct smc_clc_proposal p = { .smc_type = SMC_TYPE_D, .ism_gid = HOST_GID(7) };
	int len = smc_clc_encode_proposal(msg, sizeof(msg), &p);
	struct side sd = { .gid = HOST_GID(2), .fake.token = 0x77 };
	pthread_t t;

	tcp_pair(&c, &s);
	sd.sock = s;
	pthread_create(&t, NULL, run_side, &sd);
	/* The Proposal in two segments, the first shorter than a header. */
	assert_int_equal(send(c, msg, 5, 0), 5);
	usleep(100000);
	assert_int_equal(send(c, msg + 5, (size_t)len - 5, 0), len - 5);
	ssize_t n = recv(c, reply, sizeof(reply), 0);
	struct smc_clc_msg m;
	assert_int_equal(smc_clc_decode(reply, (size_t)n, &m), SMCR_REASON_NONE);
	assert_int_equal(m.hdr.type, SMC_CLC_ACCEPT);
	assert_int_equal(m.accept_confirm.d.token, 0x77);
	close(c);                       /* no Confirm: the stream ends mid-exchange */
	pthread_join(t, NULL);
	assert_int_equal(sd.setup.state, SMC_SETUP_FALLBACK);
	assert_int_equal(sd.setup.reason, SMCR_REASON_PEERCLOSED);
	assert_int_equal(sd.fake.abandoned, 1);
	close(s);
}

/* A client gone before its Proposal (an application exiting): no reset. */
static void peer_closed_stays_on_tcp(void **state)
{
	(void)state;
	struct smc_setup st = raw_server("", 0, true);
	assert_int_equal(st.state, SMC_SETUP_FALLBACK);
	assert_int_equal(st.reason, SMCR_REASON_PEERCLOSED);
}

/* A server's exchange on a fresh TCP pair, driven step by step by the test. */
struct lone_server {
	struct fake fake;
	struct smc_setup_transport t;
	struct smc_setup setup;
	int c, s;                       /* the client's end (raw bytes), the server's */
};

static void lone_server_start(struct lone_server *ls)
{
	ls->fake = (struct fake){ .token = 2 };
	ls->t = (struct smc_setup_transport)FAKE_TRANSPORT(&ls->fake);
	tcp_pair(&ls->c, &ls->s);
	smc_setup_server(&ls->setup, HOST_GID(2));
}

static enum smc_setup_state lone_server_step(struct lone_server *ls)
{
	return smc_setup_progress(&ls->setup, ls->s, &ls->t);
}

static void lone_server_end(struct lone_server *ls)
{
	close(ls->c);
	close(ls->s);
}

/*
 * A peer that has not begun its next message is waited for as TCP waits
 * for data, past the CLC wait: its application calls when it likes.  So
 * is a client's Proposal while the server's application only reads.
 */
static void silent_peer_is_waited_for(void **state)
{
	struct lone_server ls;

	(void)state;
	lone_server_start(&ls);
	ls.setup.deadline_ms = 0;       /* the CLC wait long past */
	assert_int_equal(lone_server_step(&ls), SMC_SETUP_SERVER_WAIT_PROPOSAL);
	lone_server_end(&ls);
}

/* One that began a message must end it within the CLC wait, or the stream is half an exchange. */
static void stalled_message_times_out(void **state)
{
	struct lone_server ls;

	(void)state;
	lone_server_start(&ls);
	assert_int_equal(send(ls.c, "\xe2\xd4\xc3\xd9", 4, 0), 4);  /* the eyecatcher, no more */
	assert_int_equal(lone_server_step(&ls), SMC_SETUP_SERVER_WAIT_PROPOSAL);
	assert_int_equal(ls.setup.have, 4);
	ls.setup.deadline_ms = 0;       /* the CLC wait passes */
	assert_int_equal(lone_server_step(&ls), SMC_SETUP_RESET);
	assert_int_equal(ls.setup.reason, SMCR_REASON_TIMEOUT_CL);
	lone_server_end(&ls);
}

/* The server's application wants to write, and the Proposal's deadline passes. */
static void lone_server_wants_to_write(struct lone_server *ls)
{
	assert_int_equal(smc_setup_want_send(&ls->setup), SMC_CLC_PROPOSAL_WAIT_MS);
	ls->setup.proposal_due_ms = 1;  /* long past */
	assert_int_equal(smc_setup_want_send(&ls->setup), 0);
}

/* Steps the declined server until the late message is off the stream, or the end. */
static void lone_server_until_discarded(struct lone_server *ls)
{
	while (lone_server_step(ls) == SMC_SETUP_SERVER_DISCARD)
		poll(&(struct pollfd){ .fd = ls->s, .events = POLLIN }, 1, 50);
}

/* What the client's end reads next: a Decline, whose code it returns. */
static uint32_t decline_read(int sock)
{
	uint8_t reply[SMC_CLC_DECLINE_LEN];
	struct smc_clc_msg m;

	assert_int_equal(recv(sock, reply, sizeof(reply), MSG_WAITALL), sizeof(reply));
	assert_int_equal(smc_clc_decode(reply, sizeof(reply), &m), SMCR_REASON_NONE);
	assert_int_equal(m.hdr.type, SMC_CLC_DECLINE);
	return m.decline.peer_diagnosis;
}

/* Reads exactly the bytes of what from sock. */
static void expect_stream(int sock, const char *what)
{
	char got[64] = "";

	assert_int_equal(recv(sock, got, strlen(what), MSG_WAITALL), (ssize_t)strlen(what));
	assert_string_equal(got, what);
}

/*
 * Only a server that wants to write bounds its wait for the Proposal: it
 * declines (NOPROPOSAL) when the deadline passes and writes on TCP, then
 * takes the late Proposal off the client's stream, exactly, before the
 * application reads.  A client has no such deadline.
 */
static void server_that_writes_declines_late_proposal(void **state)
{
	struct lone_server ls;
	struct smc_setup client;
	uint8_t msg[SMC_CLC_PROPOSAL_MAX_LEN + 8];          /* and the bytes behind it */
	struct smc_clc_proposal p = { .smc_type = SMC_TYPE_D, .ism_gid = HOST_GID(7) };
	int len = smc_clc_encode_proposal(msg, sizeof(msg), &p);

	(void)state;
	smc_setup_client(&client, HOST_GID(1));
	assert_int_equal(smc_setup_want_send(&client), -1);
	lone_server_start(&ls);
	assert_int_equal(lone_server_step(&ls), SMC_SETUP_SERVER_WAIT_PROPOSAL);
	assert_int_equal(ls.setup.proposal_due_ms, 0);  /* no write wanted: no deadline */
	lone_server_wants_to_write(&ls);
	assert_int_equal(lone_server_step(&ls), SMC_SETUP_SERVER_DISCARD);
	assert_int_equal(ls.setup.reason, SMCR_REASON_NOPROPOSAL);
	assert_true(smc_setup_writes_tcp(&ls.setup));
	assert_int_equal(smc_setup_want_send(&ls.setup), -1);
	assert_int_equal(decline_read(ls.c), 0x03000500u);
	/* the Proposal comes late, the client's bytes behind it, in one segment */
	memcpy(msg + len, "EHLO\r\n", 6);
	assert_int_equal(send(ls.c, msg, (size_t)len + 6, 0), len + 6);
	assert_int_equal(lone_server_step(&ls), SMC_SETUP_FALLBACK);
	assert_int_equal(ls.setup.reason, SMCR_REASON_NOPROPOSAL);
	assert_int_equal(ls.fake.prepared + ls.fake.reached + ls.fake.abandoned, 0);
	expect_stream(ls.s, "EHLO\r\n");
	lone_server_end(&ls);
}

/* A Proposal begun by the deadline is declined too, and discarded once whole. */
static void late_proposal_discarded_across_segments(void **state)
{
	struct lone_server ls;
	uint8_t msg[SMC_CLC_PROPOSAL_MAX_LEN];
	struct smc_clc_proposal p = { .smc_type = SMC_TYPE_D, .ism_gid = HOST_GID(7) };
	int len = smc_clc_encode_proposal(msg, sizeof(msg), &p);

	(void)state;
	lone_server_start(&ls);
	assert_int_equal(send(ls.c, msg, 5, 0), 5);
	assert_int_equal(lone_server_step(&ls), SMC_SETUP_SERVER_WAIT_PROPOSAL);
	lone_server_wants_to_write(&ls);
	assert_int_equal(lone_server_step(&ls), SMC_SETUP_SERVER_DISCARD);
	assert_int_equal(decline_read(ls.c), 0x03000500u);
	assert_int_equal(send(ls.c, msg + 5, (size_t)len - 5, 0), len - 5);
	assert_int_equal(send(ls.c, "data", 4, 0), 4);
	lone_server_until_discarded(&ls);
	assert_int_equal(ls.setup.state, SMC_SETUP_FALLBACK);
	expect_stream(ls.s, "data");
	lone_server_end(&ls);
}

/*
 * After the Decline, what is no CLC message of a client's first (a
 * Proposal, or the Decline of a client with nothing to offer) is a broken
 * or hostile peer's: that connection resets, as malformed CLC does.  A
 * client's Decline is taken off like a Proposal; a stream that ends stays
 * declined.
 */
static void after_late_decline_only_a_first_message_passes(void **state)
{
	static const char smtp[] = "HELO attacker.example\r\n";
	uint8_t confirm[SMCR_CLC_ACCEPT_CONFIRM_LEN], decline[SMC_CLC_DECLINE_LEN];
	struct smc_clc_accept_confirm c = { .smc_type = SMC_TYPE_D, .d.token = 1 };
	struct smc_clc_decline d = { .peer_diagnosis = 0x03030000u };
	int clen = smc_clc_encode_confirm(confirm, sizeof(confirm), &c);
	int dlen = smc_clc_encode_decline(decline, sizeof(decline), &d);
	const struct { const void *bytes; size_t len; enum smc_setup_state state; } late[] = {
		{ smtp, sizeof(smtp) - 1, SMC_SETUP_RESET },
		{ confirm, (size_t)clen, SMC_SETUP_RESET },
		{ decline, (size_t)dlen, SMC_SETUP_FALLBACK },
		{ "", 0, SMC_SETUP_FALLBACK },          /* the client closes */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(late) / sizeof(late[0]); i++) {
		struct lone_server ls;

		lone_server_start(&ls);
		lone_server_wants_to_write(&ls);
		assert_int_equal(lone_server_step(&ls), SMC_SETUP_SERVER_DISCARD);
		if (late[i].len)
			assert_int_equal(send(ls.c, late[i].bytes, late[i].len, 0), (ssize_t)late[i].len);
		else
			shutdown(ls.c, SHUT_WR);
		lone_server_until_discarded(&ls);
		assert_int_equal(ls.setup.state, late[i].state);
		assert_int_equal(ls.setup.reason, late[i].state == SMC_SETUP_RESET ?
				 SMCR_REASON_SYNCERR : SMCR_REASON_NOPROPOSAL);
		lone_server_end(&ls);
	}
}

/*
 * A legitimate client whose Proposal comes after the server declined gets
 * the Decline where it waits for the Accept and stays on TCP: the banner
 * the server writes after its Decline, and the client's bytes after its
 * Proposal, each arrive once and whole.
 */
static void client_reads_banner_after_late_decline(void **state)
{
	struct lone_server ls;
	struct fake fc = { .token = 1 };
	struct smc_setup_transport tc = FAKE_TRANSPORT(&fc);
	struct smc_setup client;

	(void)state;
	lone_server_start(&ls);
	lone_server_wants_to_write(&ls);
	assert_int_equal(lone_server_step(&ls), SMC_SETUP_SERVER_DISCARD);
	assert_int_equal(send(ls.s, "220 ready\r\n", 11, 0), 11);    /* on TCP at once */
	smc_setup_client(&client, HOST_GID(1));
	while (smc_setup_progress(&client, ls.c, &tc) == SMC_SETUP_CLIENT_WAIT_ACCEPT)
		poll(&(struct pollfd){ .fd = ls.c, .events = POLLIN }, 1, 50);
	assert_int_equal(client.state, SMC_SETUP_FALLBACK);
	assert_int_equal(client.reason, SMCR_REASON_PEERDECL);
	assert_int_equal(client.peer_diagnosis, 0x03000500u);
	assert_int_equal(send(ls.c, "EHLO\r\n", 6, 0), 6);
	expect_stream(ls.c, "220 ready\r\n");
	lone_server_until_discarded(&ls);
	assert_int_equal(ls.setup.state, SMC_SETUP_FALLBACK);
	expect_stream(ls.s, "EHLO\r\n");
	lone_server_end(&ls);
}

static void later_version_only_declined(void **state)
{
	(void)state;
	int c, s;
	uint8_t msg[SMC_CLC_PROPOSAL_MAX_LEN], reply[64];
	struct smc_clc_proposal p = { .smc_type = SMC_TYPE_D, .ism_gid = HOST_GID(7) };
	int len = smc_clc_encode_proposal(msg, sizeof(msg), &p);
	msg[7] = (uint8_t)(2 << 4 | (SMC_TYPE_N & 3));  /* version 2, offering only v2 */
	struct side sd = { .gid = HOST_GID(2) };
	pthread_t t;
	tcp_pair(&c, &s);
	sd.sock = s;
	pthread_create(&t, NULL, run_side, &sd);
	assert_int_equal(send(c, msg, (size_t)len, 0), len);
	pthread_join(t, NULL);
	assert_int_equal(sd.setup.state, SMC_SETUP_FALLBACK);
	assert_int_equal(sd.setup.reason, SMCR_REASON_VERSMISMAT);
	ssize_t n = recv(c, reply, sizeof(reply), 0);
	struct smc_clc_msg m;
	assert_int_equal(smc_clc_decode(reply, (size_t)n, &m), SMCR_REASON_NONE);
	assert_int_equal(m.hdr.type, SMC_CLC_DECLINE);
	assert_int_equal(m.decline.peer_diagnosis, 0x030c0000u);
	close(c);
	close(s);
}

static void progress_without_waiting(void **state)
{
	(void)state;
	int c, s;
	struct fake fc = { .token = 1 }, fs = { .token = 2 };
	struct smc_setup_transport tc = FAKE_TRANSPORT(&fc);
	struct smc_setup_transport ts = FAKE_TRANSPORT(&fs);
	struct smc_setup client, server;
	tcp_pair(&c, &s);
	smc_setup_server(&server, HOST_GID(2));
	assert_int_equal(smc_setup_progress(&server, s, &ts), SMC_SETUP_SERVER_WAIT_PROPOSAL);
	smc_setup_client(&client, HOST_GID(1));
	assert_int_equal(smc_setup_progress(&client, c, &tc), SMC_SETUP_CLIENT_WAIT_ACCEPT);
	for (int i = 0; i < 1000 && !(smc_setup_final(&client) && smc_setup_final(&server)); i++) {
		smc_setup_progress(&server, s, &ts);
		smc_setup_progress(&client, c, &tc);
		usleep(1000);
	}
	assert_int_equal(client.state, SMC_SETUP_DONE);
	assert_int_equal(server.state, SMC_SETUP_DONE);
	close(c);
	close(s);
}

/*
 * The exchange's state lives in a page every holder of the connection maps:
 * one that rewrote where the next message goes gets the exchange reset,
 * never a receive past the buffer.
 */
static void rewritten_receive_bounds_reset(void **state)
{
	struct lone_server ls;
	const size_t bad[][2] = {       /* have, need */
		{ 0, sizeof(ls.setup.buf) + 1 },
		{ sizeof(ls.setup.buf) + 4096, SMC_CLC_HDR_LEN },
		{ SMC_CLC_HDR_LEN + 1, SMC_CLC_HDR_LEN },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		lone_server_start(&ls);
		assert_int_equal(send(ls.c, "SMCR", 4, 0), 4);  /* something to receive */
		ls.setup.have = bad[i][0];
		ls.setup.need = bad[i][1];
		assert_int_equal(lone_server_step(&ls), SMC_SETUP_RESET);
		assert_int_equal(ls.setup.reason, SMCR_REASON_SYNCERR);
		lone_server_end(&ls);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(both_smc),
		cmocka_unit_test(server_out_of_memory_declines),
		cmocka_unit_test(client_attach_failure_declines),
		cmocka_unit_test(other_host_rdma),
		cmocka_unit_test(same_host_prefers_shm),
		cmocka_unit_test(other_host_without_rdma_declined),
		cmocka_unit_test(client_without_transport_declines),
		cmocka_unit_test(other_host_declined),
		cmocka_unit_test(server_commits_only_after_confirm),
		cmocka_unit_test(server_unreachable_declines_before_accept),
		cmocka_unit_test(garbage_resets),
		cmocka_unit_test(split_message_is_reassembled),
		cmocka_unit_test(peer_closed_stays_on_tcp),
		cmocka_unit_test(silent_peer_is_waited_for),
		cmocka_unit_test(stalled_message_times_out),
		cmocka_unit_test(server_that_writes_declines_late_proposal),
		cmocka_unit_test(late_proposal_discarded_across_segments),
		cmocka_unit_test(after_late_decline_only_a_first_message_passes),
		cmocka_unit_test(client_reads_banner_after_late_decline),
		cmocka_unit_test(later_version_only_declined),
		cmocka_unit_test(progress_without_waiting),
		cmocka_unit_test(rewritten_receive_bounds_reset),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
