/*
 * fuzz_clc_seq.c - libFuzzer target for the CLC exchange as a state
 * machine (libsmcr/socket/smc_setup.c), in either role, against a peer
 * that sends what the input says in whatever order: messages of every
 * type at every phase, repeated, cut short, with a byte flipped, raw
 * bytes, Declines anywhere, the end of its stream or a reset at any point,
 * the CLC wait passing, and a server's application that wants to write
 * before the Proposal came, so that it declines and discards the late one
 * (fuzz_clc_seq_input.h).
 *
 * Our end runs over one end of a unix stream socket pair, as over its TCP
 * socket (the same calls, with MSG_DONTWAIT), and a fake transport whose
 * steps fail as the header says; the other end is the peer's, written by
 * the input.  The machine is advanced after every step.  Checked:
 *  - it never crashes or reads outside its buffer (ASan), and its receive
 *    bounds stay in it (have <= need <= the buffer);
 *  - it moves only forward along its role's path (client: start, waiting
 *    for the Accept; server: waiting for the Proposal, then the Confirm or,
 *    declined for want of a Proposal, discarding it), and a final state
 *    stays; DONE has no reason, FALLBACK and RESET one; a server discards
 *    only after NOPROPOSAL, with nothing prepared;
 *  - a buffer it prepared is abandoned unless it ends in DONE; DONE comes
 *    only after attach, and for the server after reach;
 *  - ending in DONE or FALLBACK (the stream carries on as the
 *    application's), it has taken exactly whole messages from the stream,
 *    as their headers' lengths cut it: one for a client's DONE, two for a
 *    server's; every byte after them, and application data written after
 *    the end, is still there for the application.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz_clc_seq_input.h"
#include "smc_setup.h"

#define CHECK(cond)				\
	do {					\
		if (!(cond))			\
			abort();		\
	} while (0)

#define MAX_STEPS 48
#define OUR_GID (0x11111111ull << 32 | 1)
#define SAME_HOST_GID (0x11111111ull << 32 | 2)
#define OTHER_HOST_GID (0x22222222ull << 32 | 2)
#define APP_DATA "application data after the exchange"

struct fake {
	uint8_t offers, fails;
	int prepared, reached, attached, abandoned;
};

static enum smcr_reason fail_if(const struct fake *f, uint8_t bit)
{
	return f->fails & bit ? SMCR_REASON_INTERR : SMCR_REASON_NONE;
}

static enum smcr_reason fake_offers(void *ctx, enum smc_type *type, struct smc_clc_local *lcl)
{
	struct fake *f = ctx;

	*type = (enum smc_type)(f->offers & 3);
	memset(lcl, 0, sizeof(*lcl));
	lcl->gid[15] = 1;
	if (f->fails & FUZZ_CLC_FAIL_OFFERS) {
		*type = SMC_TYPE_N;
		return SMCR_REASON_MEM;
	}
	return *type == SMC_TYPE_N ? SMCR_REASON_NOSMCDEV : SMCR_REASON_NONE;
}

static enum smcr_reason fake_prepare(void *ctx, enum smc_type type, const struct smc_clc_local *peer)
{
	struct fake *f = ctx;

	(void)type;
	(void)peer;
	f->prepared++;
	return fail_if(f, FUZZ_CLC_FAIL_PREPARE);
}

static enum smcr_reason fake_reach(void *ctx)
{
	struct fake *f = ctx;

	f->reached++;
	return fail_if(f, FUZZ_CLC_FAIL_REACH);
}

static enum smcr_reason fake_attach(void *ctx, const struct smc_clc_accept_confirm *peer)
{
	struct fake *f = ctx;

	(void)peer;
	if (f->fails & FUZZ_CLC_FAIL_ATTACH)
		return SMCR_REASON_NOSMCDEV;
	f->attached++;
	return SMCR_REASON_NONE;
}

static enum smcr_reason fake_describe(void *ctx, struct smc_clc_accept_confirm *ours)
{
	struct fake *f = ctx;

	memset(ours, 0, sizeof(*ours));
	ours->d.token = 0x77;
	ours->r.rmbe_size = 1;
	return fail_if(f, FUZZ_CLC_FAIL_DESCRIBE);
}

static void fake_abandon(void *ctx)
{
	((struct fake *)ctx)->abandoned++;
}

/* The stream the peer wrote, as written. */
static uint8_t stream[MAX_STEPS * SMC_CLC_PROPOSAL_MAX_LEN + sizeof(APP_DATA)];
static size_t streamed;

static struct {
	int ours, peers;        /* the socket pair's ends */
	bool shut, closed;      /* the peer's: EOF sent, closed */
	uint64_t peer_gid;
} wire;

static void peer_write(const uint8_t *bytes, size_t n)
{
	if (wire.shut || wire.closed || !n)
		return;
	CHECK(send(wire.peers, bytes, n, MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)n);
	memcpy(stream + streamed, bytes, n);
	streamed += n;
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* A message from the input's fields, encoded by the codec; its length (0: none). */
static int encode(const uint8_t *arg, uint8_t *msg, size_t cap)
{
	enum smc_type type = (enum smc_type)(arg[1] & 3);
	uint32_t word = be32(arg + 6);
	struct smc_clc_proposal prop = { .smc_type = type, .ism_gid = wire.peer_gid,
					 .outgoing_subnet = 0x7f000000, .prefix_len = 8 };
	struct smc_clc_accept_confirm ac = { .smc_type = type == SMC_TYPE_R ? SMC_TYPE_R : SMC_TYPE_D,
					     .first_contact = arg[2] & 1 };
	struct smc_clc_decline d = { .peer_diagnosis = word };

	if (ac.smc_type == SMC_TYPE_D) {
		ac.d.gid = wire.peer_gid;
		ac.d.token = word;
		ac.d.dmbe_size = (uint8_t)(arg[2] >> 4);
	} else {
		ac.r.rmbe_alert_token = word;
		ac.r.rmbe_size = (uint8_t)(arg[2] >> 4);
		ac.r.qpn = word & 0xffffff;
		ac.r.lcl.gid[15] = 2;
	}
	prop.lcl.gid[15] = 2;
	switch (arg[0] % 4 + 1) {
	case SMC_CLC_PROPOSAL:
		return smc_clc_encode_proposal(msg, cap, &prop);
	case SMC_CLC_ACCEPT:
		return smc_clc_encode_accept(msg, cap, &ac);
	case SMC_CLC_CONFIRM:
		return smc_clc_encode_confirm(msg, cap, &ac);
	default:
		return smc_clc_encode_decline(msg, cap, &d);
	}
}

static void step_msg(const uint8_t *arg)
{
	uint8_t msg[SMC_CLC_MAX_LEN];
	int len = encode(arg, msg, sizeof(msg));

	if (len <= 0)
		return;
	if (arg[5])
		msg[arg[4] % len] ^= arg[5];
	if (arg[3])
		len = arg[3] % len;
	peer_write(msg, (size_t)len);
}

static void step(struct smc_setup *s, enum fuzz_clc_op op, const uint8_t *arg)
{
	switch (op) {
	case FUZZ_CLC_MSG:
		step_msg(arg);
		break;
	case FUZZ_CLC_RAW:
		peer_write(arg + 1, arg[0] % 16);
		break;
	case FUZZ_CLC_EOF:
		if (!wire.closed && !wire.shut)
			shutdown(wire.peers, SHUT_WR);
		wire.shut = true;
		break;
	case FUZZ_CLC_RESET:
		if (!wire.closed)
			close(wire.peers);
		wire.closed = true;
		break;
	case FUZZ_CLC_EXPIRE:
		s->deadline_ms = 0;
		break;
	default:
		smc_setup_want_send(s);
		if (s->proposal_due_ms && (arg[0] & 1))
			s->proposal_due_ms = 1;         /* long past */
		break;
	}
}

/* Where a state lies on its role's path: later states have higher ranks, finals the highest. */
static int rank(enum smc_setup_state state)
{
	switch (state) {
	case SMC_SETUP_CLIENT_START:
	case SMC_SETUP_SERVER_WAIT_PROPOSAL:
		return 0;
	case SMC_SETUP_CLIENT_WAIT_ACCEPT:
	case SMC_SETUP_SERVER_WAIT_CONFIRM:
	case SMC_SETUP_SERVER_DISCARD:
		return 1;
	default:
		return 2;
	}
}

static bool role_has(bool server, enum smc_setup_state state)
{
	if (state >= SMC_SETUP_DONE)
		return state <= SMC_SETUP_RESET;
	return server ? state == SMC_SETUP_SERVER_WAIT_PROPOSAL ||
			state == SMC_SETUP_SERVER_WAIT_CONFIRM || state == SMC_SETUP_SERVER_DISCARD :
			state == SMC_SETUP_CLIENT_START || state == SMC_SETUP_CLIENT_WAIT_ACCEPT;
}

static void check_move(const struct smc_setup *before, const struct smc_setup *s, bool server,
		       const struct fake *f)
{
	CHECK(role_has(server, s->state));
	CHECK(rank(s->state) >= rank(before->state));
	if (smc_setup_final(before))
		CHECK(s->state == before->state && s->reason == before->reason);
	CHECK(s->have <= s->need && s->need <= sizeof(s->buf));
	if (rank(before->state) == 1 && rank(s->state) == 1)
		CHECK(s->state == before->state);       /* no way from Confirm to discard, or back */
	if (s->state == SMC_SETUP_SERVER_DISCARD)
		CHECK(s->reason == SMCR_REASON_NOPROPOSAL && f->prepared == 0);
	if (!smc_setup_final(s))
		return;
	CHECK((s->state == SMC_SETUP_DONE) == (s->reason == SMCR_REASON_NONE));
	if (s->state == SMC_SETUP_DONE) {
		CHECK(f->attached == 1 && f->prepared == 1 && f->abandoned == 0);
		CHECK(!server || f->reached == 1);
	} else {
		CHECK(f->abandoned == f->prepared);
	}
}

/* Bytes of whole messages at the stream's start, as their headers cut it: is taken one? How many? */
static bool whole_messages(size_t taken, int *count)
{
	size_t at = 0;

	for (*count = 0; at < taken && streamed - at >= SMC_CLC_HDR_LEN; ++*count) {
		size_t len = (size_t)stream[at + 5] << 8 | stream[at + 6];

		if (len < SMC_CLC_HDR_LEN)
			return false;
		at += len;
	}
	return at == taken;
}

/* Everything after what the exchange took is the application's, in order, then APP_DATA. */
static void check_stream_left(const struct smc_setup *s, bool server)
{
	static uint8_t left[sizeof(stream)];
	size_t got = 0, taken;
	int count;
	ssize_t n;

	if (wire.shut || wire.closed)
		return;         /* the application reads the end; nothing more can come */
	peer_write((const uint8_t *)APP_DATA, sizeof(APP_DATA) - 1);
	while ((n = recv(wire.ours, left + got, sizeof(left) - got, MSG_DONTWAIT)) > 0)
		got += (size_t)n;
	CHECK(got <= streamed);
	taken = streamed - got;
	CHECK(memcmp(left, stream + taken, got) == 0);
	CHECK(whole_messages(taken, &count));
	if (s->state == SMC_SETUP_DONE)
		CHECK(count == (server ? 2 : 1));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_clc_seq_header h;
	struct fake f = { 0 };
	struct smc_setup_transport t = { .offers = fake_offers, .prepare = fake_prepare,
					 .reach = fake_reach, .attach = fake_attach,
					 .describe = fake_describe, .abandon = fake_abandon,
					 .ctx = &f };
	static struct smc_setup s;
	int sv[2];
	bool server;

	if (size < sizeof(h))
		return 0;
	memcpy(&h, data, sizeof(h));
	data += sizeof(h);
	size -= sizeof(h);
	server = h.role & 1;
	f.offers = h.offers;
	f.fails = h.fails;
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	wire.ours = sv[0];
	wire.peers = sv[1];
	wire.shut = wire.closed = false;
	wire.peer_gid = h.other_host & 1 ? OTHER_HOST_GID : SAME_HOST_GID;
	streamed = 0;
	if (server)
		smc_setup_server(&s, OUR_GID);
	else
		smc_setup_client(&s, OUR_GID);
	for (size_t n = 0; n <= MAX_STEPS; n++) {
		struct smc_setup before = s;

		smc_setup_progress(&s, wire.ours, &t);
		check_move(&before, &s, server, &f);
		if (n == MAX_STEPS || size < 1 + FUZZ_CLC_ARG)
			break;
		step(&s, (enum fuzz_clc_op)(data[0] % FUZZ_CLC_OP_COUNT), data + 1);
		data += 1 + FUZZ_CLC_ARG;
		size -= 1 + FUZZ_CLC_ARG;
	}
	if (s.state == SMC_SETUP_DONE || s.state == SMC_SETUP_FALLBACK)
		check_stream_left(&s, server);
	close(wire.ours);
	if (!wire.closed)
		close(wire.peers);
	return 0;
}
