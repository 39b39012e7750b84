/*
 * smc_setup.c - the CLC exchange (smc_setup.h).
 *
 * Every read and write is the C library's own on the application's TCP
 * socket, with MSG_DONTWAIT.  Waiting for the peer's next message is the
 * caller's (smcr_sock_settle); only the wait to write one of ours is done
 * here, with poll(), bounded by the CLC timeout.  Errno is the caller's
 * business: it is saved and restored around every step.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "log.h"
#include "real.h"
#include "smc_setup.h"
#include "sys.h"

/*
 * One call's view of the exchange: the state, which lives in a page other
 * processes map and so holds data only, and this process's transport.
 */
struct smc_setup_run {
	struct smc_setup *s;
	const struct smc_setup_transport *t;
	int sock;                       /* ours, never a number read from the page */
};

static void start(struct smc_setup *s, enum smc_setup_state state, uint64_t gid)
{
	*s = (struct smc_setup){ .state = state, .gid = gid, .need = SMC_CLC_HDR_LEN,
				 .deadline_ms = (int64_t)smc_clock_ms() + SMC_CLC_WAIT_MS };
}

void smc_setup_client(struct smc_setup *s, uint64_t gid)
{
	start(s, SMC_SETUP_CLIENT_START, gid);
}

void smc_setup_server(struct smc_setup *s, uint64_t gid)
{
	start(s, SMC_SETUP_SERVER_WAIT_PROPOSAL, gid);
}

/* Ends the exchange; a buffer prepared for a connection not on SMC is given up. */
static enum smc_setup_state finish(const struct smc_setup_run *run, enum smc_setup_state state,
				   enum smcr_reason reason)
{
	struct smc_setup *s = run->s;

	if (state != SMC_SETUP_DONE && s->prepared) {
		run->t->abandon(run->t->ctx);
		s->prepared = false;
	}
	s->state = state;
	s->reason = reason;
	return state;
}

/* Writes a whole message within the CLC wait; false if it could not. */
static bool send_msg(const struct smc_setup_run *run, const uint8_t *msg, int len)
{
	return len > 0 && smcr_sys_send_all(run->sock, msg, (size_t)len,
					    smc_deadline_after(SMC_CLC_WAIT_MS)) == 0;
}

/* Sends a Decline with reason; false if it could not. */
static bool send_decline(const struct smc_setup_run *run, enum smcr_reason reason)
{
	struct smc_clc_decline d = { .peer_diagnosis = smcr_reason_code(reason) };
	uint8_t msg[SMC_CLC_DECLINE_LEN];
	int len = smc_clc_encode_decline(msg, sizeof(msg), &d);

	return send_msg(run, msg, len);
}

/* Declines with reason and leaves the connection on TCP. */
static enum smc_setup_state decline(const struct smc_setup_run *run, enum smcr_reason reason)
{
	if (!send_decline(run, reason))
		return finish(run, SMC_SETUP_RESET, reason);      /* the peer waits for a message */
	return finish(run, SMC_SETUP_FALLBACK, reason);
}

/*
 * Server: the Proposal did not come by the time its application had to
 * write.  Declines, and takes the Proposal still to come off the stream
 * (SERVER_DISCARD): the client's library sends one as it connects.
 */
static void decline_late(const struct smc_setup_run *run)
{
	struct smc_setup *s = run->s;

	if (!send_decline(run, SMCR_REASON_NOPROPOSAL)) {
		finish(run, SMC_SETUP_RESET, SMCR_REASON_NOPROPOSAL);
		return;
	}
	s->state = SMC_SETUP_SERVER_DISCARD;
	s->reason = SMCR_REASON_NOPROPOSAL;
}

int smc_setup_want_send(struct smc_setup *s)
{
	int64_t now = (int64_t)smc_clock_ms();

	if (s->state != SMC_SETUP_SERVER_WAIT_PROPOSAL)
		return -1;
	if (!s->proposal_due_ms)
		s->proposal_due_ms = now + SMC_CLC_PROPOSAL_WAIT_MS;
	return s->proposal_due_ms > now ? (int)(s->proposal_due_ms - now) : 0;
}

bool smc_setup_let_go(struct smc_setup *s, int sock, const struct smc_setup_transport *transport)
{
	const struct smc_setup_run run = { .s = s, .t = transport, .sock = sock };

	if (s->state != SMC_SETUP_SERVER_WAIT_PROPOSAL)
		return false;
	decline_late(&run);
	return smc_setup_writes_tcp(s);
}

/* The peer declined: we stay on TCP too. */
static enum smc_setup_state declined(const struct smc_setup_run *run, const struct smc_clc_decline *d)
{
	struct smc_setup *s = run->s;

	s->peer_diagnosis = d->peer_diagnosis;
	smcr_log(SMCR_LOG_DEBUG, "peer declined SMC: 0x%08x", d->peer_diagnosis);
	return finish(run, SMC_SETUP_FALLBACK, SMCR_REASON_PEERDECL);
}

/*
 * Reads the next message without blocking, header first so that not one
 * byte past it is taken from the stream.  1: whole message in s->buf;
 * 0: not yet; -1: the stream failed or the page holds what no exchange
 * leaves there (reason in *why); -2: the peer closed its end (PEERCLOSED).
 */
static int receive(const struct smc_setup_run *run, enum smcr_reason *why)
{
	struct smc_setup *s = run->s;

	if (s->need > sizeof(s->buf) || s->have > s->need) {
		*why = SMCR_REASON_SYNCERR;     /* another holder of the page wrote it */
		return -1;
	}
	while (s->have < s->need) {
		ssize_t n = REAL(recv)(run->sock, s->buf + s->have, s->need - s->have, MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return 0;
		if (n == 0 || (n < 0 && errno == ECONNRESET)) {
			*why = SMCR_REASON_PEERCLOSED;  /* its application closed or aborted */
			return n == 0 ? -2 : -1;
		}
		if (n < 0) {
			*why = SMCR_REASON_SYNCERR;
			return -1;
		}
		if (!s->have)           /* begun: the rest must come within the CLC wait */
			s->deadline_ms = (int64_t)smc_clock_ms() + SMC_CLC_WAIT_MS;
		s->have += (size_t)n;
		if (s->have == SMC_CLC_HDR_LEN && s->need == SMC_CLC_HDR_LEN &&
		    (*why = smc_clc_frame_length(s->buf, &s->need)) != SMCR_REASON_NONE)
			return -1;
	}
	return 1;
}

/*
 * The next message, if it came; 1, 0 (not yet) or -1 (state final).  A
 * message not yet begun has no deadline, as TCP has none for data: the
 * peer's application may call, and so carry its side of the exchange,
 * whenever it likes.  One that began must end within the CLC wait.
 */
static int next_msg(const struct smc_setup_run *run, struct smc_clc_msg *msg)
{
	struct smc_setup *s = run->s;
	enum smcr_reason why = SMCR_REASON_NONE;
	int got = receive(run, &why);

	if (!got) {
		if (!s->have || s->deadline_ms > (int64_t)smc_clock_ms())
			return 0;
		finish(run, SMC_SETUP_RESET, SMCR_REASON_TIMEOUT_CL);
		return -1;
	}
	if (got > 0 && (why = smc_clc_decode(s->buf, s->have, msg)) == SMCR_REASON_NONE) {
		s->have = 0;
		s->need = SMC_CLC_HDR_LEN;
		s->deadline_ms = (int64_t)smc_clock_ms() + SMC_CLC_WAIT_MS;
		return 1;
	}
	/*
	 * A stream the peer closed holds nothing more, so no byte of the
	 * exchange can reach the application: it reads the end, as over TCP.
	 */
	if (got == -2 && s->state == SMC_SETUP_SERVER_DISCARD)
		why = s->reason;        /* the stream ended before a late Proposal: as declined */
	finish(run, got == -2 ? SMC_SETUP_FALLBACK : SMC_SETUP_RESET, why);
	return -1;
}

static bool same_host(uint64_t a, uint64_t b)
{
	return (a >> 32) == (b >> 32);
}

static bool has(enum smc_type offer, enum smc_type type)
{
	return offer == type || offer == SMC_TYPE_B;
}

static enum smc_setup_state client_start(const struct smc_setup_run *run)
{
	struct smc_setup *s = run->s;
	struct smc_clc_proposal prop = { .ism_gid = s->gid };
	uint8_t msg[SMC_CLC_PROPOSAL_MAX_LEN];
	enum smcr_reason why = run->t->offers(run->t->ctx, &prop.smc_type, &prop.lcl);

	if (why != SMCR_REASON_NONE)
		return decline(run, why);
	if (!has(prop.smc_type, SMC_TYPE_D))
		prop.ism_gid = 0;
	int len = smc_clc_encode_proposal(msg, sizeof(msg), &prop);

	if (!send_msg(run, msg, len))
		return finish(run, SMC_SETUP_RESET, SMCR_REASON_INTERR);
	s->offered = prop.smc_type;
	s->state = SMC_SETUP_CLIENT_WAIT_ACCEPT;
	return s->state;
}

/* Our buffer on transport type; a reason if not. */
static enum smcr_reason prepare(const struct smc_setup_run *run, enum smc_type type,
				const struct smc_clc_local *peer_lcl)
{
	struct smc_setup *s = run->s;
	enum smcr_reason why = run->t->prepare(run->t->ctx, type, peer_lcl);

	s->chosen = type;
	s->prepared = true;     /* even half done: abandon undoes what was */
	return why;
}

static enum smcr_reason describe(const struct smc_setup_run *run, struct smc_clc_accept_confirm *ours)
{
	struct smc_setup *s = run->s;
	enum smcr_reason why = run->t->describe(run->t->ctx, ours);

	ours->smc_type = s->chosen;
	if (s->chosen == SMC_TYPE_D)
		ours->d.gid = s->gid;
	return why;
}

static enum smc_setup_state client_accepted(const struct smc_setup_run *run,
					    const struct smc_clc_accept_confirm *acc)
{
	struct smc_setup *s = run->s;
	struct smc_clc_accept_confirm conf;
	uint8_t msg[SMCR_CLC_ACCEPT_CONFIRM_LEN];
	enum smcr_reason why;

	if (!has(s->offered, acc->smc_type) ||
	    (acc->smc_type == SMC_TYPE_D && !same_host(acc->d.gid, s->gid)))
		return decline(run, SMCR_REASON_MODEUNSUPP);
	if ((why = prepare(run, acc->smc_type, NULL)) != SMCR_REASON_NONE ||
	    (why = run->t->attach(run->t->ctx, acc)) != SMCR_REASON_NONE ||
	    (why = describe(run, &conf)) != SMCR_REASON_NONE)
		return decline(run, why);
	conf.first_contact = acc->first_contact;        /* echoed, as RFC 7609 has it */
	int len = smc_clc_encode_confirm(msg, sizeof(msg), &conf);
	if (!send_msg(run, msg, len))
		return finish(run, SMC_SETUP_RESET, SMCR_REASON_INTERR);
	return finish(run, SMC_SETUP_DONE, SMCR_REASON_NONE);
}

/* The server's choice for prop: D on one host, else R; SMC_TYPE_N and why if neither. */
static enum smc_type choose(const struct smc_setup_run *run, const struct smc_clc_proposal *prop,
			    enum smcr_reason *why)
{
	struct smc_setup *s = run->s;
	struct smc_clc_local lcl;
	enum smc_type ours;

	if (prop->smc_type == SMC_TYPE_N) {
		*why = SMCR_REASON_VERSMISMAT;
		return SMC_TYPE_N;
	}
	*why = run->t->offers(run->t->ctx, &ours, &lcl);
	if (*why != SMCR_REASON_NONE)
		return SMC_TYPE_N;
	if (has(prop->smc_type, SMC_TYPE_D) && has(ours, SMC_TYPE_D) &&
	    same_host(prop->ism_gid, s->gid))
		return SMC_TYPE_D;
	if (has(prop->smc_type, SMC_TYPE_R) && has(ours, SMC_TYPE_R))
		return SMC_TYPE_R;
	*why = SMCR_REASON_NOSMCDEV;            /* another host, and no RDMA between us */
	return SMC_TYPE_N;
}

static enum smc_setup_state server_proposed(const struct smc_setup_run *run, const struct smc_clc_msg *m)
{
	struct smc_setup *s = run->s;
	const struct smc_clc_proposal *prop = &m->proposal;
	struct smc_clc_accept_confirm acc;
	uint8_t msg[SMCR_CLC_ACCEPT_CONFIRM_LEN];
	enum smcr_reason why;
	enum smc_type type = choose(run, prop, &why);

	if (type == SMC_TYPE_N ||
	    (why = prepare(run, type, &prop->lcl)) != SMCR_REASON_NONE ||
	    (why = run->t->reach(run->t->ctx)) != SMCR_REASON_NONE ||
	    (why = describe(run, &acc)) != SMCR_REASON_NONE)
		return decline(run, why);
	int len = smc_clc_encode_accept(msg, sizeof(msg), &acc);
	if (!send_msg(run, msg, len))
		return finish(run, SMC_SETUP_RESET, SMCR_REASON_INTERR);
	s->state = SMC_SETUP_SERVER_WAIT_CONFIRM;
	return s->state;
}

/* The client is committed once it sent Confirm: a failure now can only reset. */
static enum smc_setup_state server_confirmed(const struct smc_setup_run *run,
					     const struct smc_clc_accept_confirm *conf)
{
	struct smc_setup *s = run->s;
	enum smcr_reason why = SMCR_REASON_MODEUNSUPP;

	if (conf->smc_type == s->chosen &&
	    (conf->smc_type != SMC_TYPE_D || same_host(conf->d.gid, s->gid)) &&
	    (why = run->t->attach(run->t->ctx, conf)) == SMCR_REASON_NONE)
		return finish(run, SMC_SETUP_DONE, SMCR_REASON_NONE);
	return finish(run, SMC_SETUP_RESET, why);
}

/*
 * The late message a server that declined (NOPROPOSAL) takes off the
 * stream: the client's first, a Proposal or (a client with nothing to
 * offer) a Decline, decoded whole and strictly.  Then the stream is the
 * client's application's: on TCP.  Anything else is no CLC speaker's.
 */
static void discarded(const struct smc_setup_run *run, const struct smc_clc_msg *m)
{
	if (m->hdr.type == SMC_CLC_PROPOSAL || m->hdr.type == SMC_CLC_DECLINE)
		finish(run, SMC_SETUP_FALLBACK, run->s->reason);
	else
		finish(run, SMC_SETUP_RESET, SMCR_REASON_SYNCERR);
}

/* The message the current state waits for; SMC_CLC_DECLINE is always welcome. */
static uint8_t expected(enum smc_setup_state state)
{
	switch (state) {
	case SMC_SETUP_CLIENT_WAIT_ACCEPT:
		return SMC_CLC_ACCEPT;
	case SMC_SETUP_SERVER_WAIT_PROPOSAL:
		return SMC_CLC_PROPOSAL;
	default:
		return SMC_CLC_CONFIRM;
	}
}

enum smc_setup_state smc_setup_progress(struct smc_setup *s, int sock,
					const struct smc_setup_transport *transport)
{
	const struct smc_setup_run this_call = { .s = s, .t = transport, .sock = sock },
				   *run = &this_call;
	int saved_errno = errno;
	struct smc_clc_msg m;

	if (s->state == SMC_SETUP_CLIENT_START)
		client_start(run);
	while (!smc_setup_final(s)) {
		int got = next_msg(run, &m);
		if (got <= 0)
			break;
		if (s->state == SMC_SETUP_SERVER_DISCARD)
			discarded(run, &m);
		else if (m.hdr.type == SMC_CLC_DECLINE)
			declined(run, &m.decline);
		else if (m.hdr.type != expected(s->state))
			finish(run, SMC_SETUP_RESET, SMCR_REASON_SYNCERR);
		else if (s->state == SMC_SETUP_CLIENT_WAIT_ACCEPT)
			client_accepted(run, &m.accept_confirm);
		else if (s->state == SMC_SETUP_SERVER_WAIT_PROPOSAL)
			server_proposed(run, &m);
		else
			server_confirmed(run, &m.accept_confirm);
	}
	/* the Proposal not come, whole, when the application had to write */
	if (s->state == SMC_SETUP_SERVER_WAIT_PROPOSAL && s->proposal_due_ms &&
	    s->proposal_due_ms <= (int64_t)smc_clock_ms())
		decline_late(run);
	errno = saved_errno;
	return s->state;
}
