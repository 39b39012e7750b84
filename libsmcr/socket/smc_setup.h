/*
 * smc_setup.h - turning a TCP connection whose handshake negotiated SMC into
 * an SMC connection: the CLC exchange (RFC 7609 3.7) on that TCP stream.
 *
 *   client: Proposal ->            <- Accept      Confirm ->     (SMC)
 *   server:            <- Proposal    Accept ->   <- Confirm     (SMC)
 *   either side, instead of its next message: Decline ->         (TCP)
 *
 * A server whose application wants to write while the Proposal has not
 * come (smc_setup_want_send) waits for it SMC_CLC_PROPOSAL_WAIT_MS at
 * most, then declines (NOPROPOSAL), and its writes go on TCP at once.  A
 * client's library sends its Proposal as it connects, so it is then late
 * or never comes: the server discards it, strictly validated, from the
 * head of the client's stream before any byte reaches the application
 * (SERVER_DISCARD), and the client, which gets the Decline where it waits
 * for an Accept, stays on TCP too.
 *
 * The server chooses the transport: shared memory (SMC-D) when both ends
 * are on one host and offer it, else RDMA (SMC-R) when both offer it.  It
 * gets all it needs to use the client's buffer before its Accept (reach),
 * since after it only a reset can undo the exchange.
 *
 * A state machine, so that it can advance without blocking (a non-blocking
 * socket, a call that must not wait) or wait up to a bound: each step reads
 * exactly the bytes of one CLC message, never the application's data behind
 * it.  It ends in one of three states:
 *   DONE      both ends use SMC;
 *   FALLBACK  both ends stay on TCP, the stream untouched from here on
 *             (reason: ours, or PEERDECL with the peer's diagnosis);
 *   RESET     the stream cannot be trusted (a malformed message, the peer
 *             silent past the CLC timeout, a failure after the client
 *             committed): the caller aborts the TCP connection.
 * The transport being set up is reached through struct smc_setup_transport,
 * which each call is given: struct smc_setup lives in a page that other
 * processes map, so it holds data only, never a pointer to code.
 */
#ifndef SMCR_SMC_SETUP_H
#define SMCR_SMC_SETUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "reason.h"
#include "smc_clc.h"

/*
 * The transports behind the exchange.  Which one a connection uses is
 * chosen by the exchange: SMC-D (shared memory) when the two ends are on
 * one host and both offer it, else SMC-R (RDMA) when both offer it.
 */
struct smc_setup_transport {
	/*
	 * What we can offer on this connection: SMC_TYPE_D, R or B (with our
	 * SMC-R local block in *lcl when R is in it), or SMC_TYPE_N and the
	 * reason we can offer nothing.
	 */
	enum smcr_reason (*offers)(void *ctx, enum smc_type *type, struct smc_clc_local *lcl);
	/*
	 * Prepares our receive buffer on transport type (R or D); the server
	 * passes the SMC-R local block of the client's Proposal (links).
	 */
	enum smcr_reason (*prepare)(void *ctx, enum smc_type type, const struct smc_clc_local *peer);
	/*
	 * Server, after prepare and before its Accept: takes from outside
	 * this process (smcrd) all that attaching the client's buffer at its
	 * Confirm will need.  Once the Accept is sent the client may commit,
	 * and then a failure can only reset the connection; before, it
	 * declines.  So a process that cannot get it later (it lowered
	 * RLIMIT_NOFILE, chrooted, left the network namespace) stays on TCP.
	 */
	enum smcr_reason (*reach)(void *ctx);
	/* Attaches the peer's receive buffer from its Accept/Confirm. */
	enum smcr_reason (*attach)(void *ctx, const struct smc_clc_accept_confirm *peer);
	/* Our Accept (after prepare) or Confirm (after attach) description. */
	enum smcr_reason (*describe)(void *ctx, struct smc_clc_accept_confirm *ours);
	/* Undoes prepare (and attach) when the connection stays on TCP. */
	void (*abandon)(void *ctx);
	void *ctx;
};

enum smc_setup_state {
	SMC_SETUP_CLIENT_START,         /* Proposal not yet sent */
	SMC_SETUP_CLIENT_WAIT_ACCEPT,
	SMC_SETUP_SERVER_WAIT_PROPOSAL,
	SMC_SETUP_SERVER_WAIT_CONFIRM,
	SMC_SETUP_SERVER_DISCARD,       /* declined, NOPROPOSAL: writes go on TCP; the late
					   Proposal (or Decline) is read and dropped */
	SMC_SETUP_DONE,
	SMC_SETUP_FALLBACK,
	SMC_SETUP_RESET,
};

struct smc_setup {
	enum smc_setup_state state;
	enum smcr_reason reason;        /* FALLBACK, RESET: why */
	uint32_t peer_diagnosis;        /* a peer's Decline: its code */
	uint64_t gid;                   /* ours: host tag in bits 63-32 */
	int64_t deadline_ms;            /* CLOCK_MONOTONIC: when the message begun, or ours, is due */
	int64_t proposal_due_ms;        /* server: the Proposal's deadline, set when its
					   application first wants to write; 0: not yet */
	uint8_t prepared;               /* our buffer exists: abandon it if we stay on TCP */
	enum smc_type offered;          /* client: what its Proposal offered */
	enum smc_type chosen;           /* R or D, once prepared */
	size_t have, need;              /* bytes of the message being received */
	uint8_t buf[SMC_CLC_MAX_LEN];
};

void smc_setup_client(struct smc_setup *s, uint64_t gid);
void smc_setup_server(struct smc_setup *s, uint64_t gid);

/*
 * Advances as far as the messages that came allow, on this process's TCP
 * socket sock over transport, without waiting for the peer; returns the
 * state reached.  Call again while it is not final (when sock is readable,
 * or to see whether a message that began stalled past the CLC wait), from
 * this or another process (each with its own socket and transport).
 */
enum smc_setup_state smc_setup_progress(struct smc_setup *s, int sock,
					const struct smc_setup_transport *transport);

static inline bool smc_setup_final(const struct smc_setup *s)
{
	return s->state >= SMC_SETUP_DONE;
}

/*
 * Server: its application wants to write.  A Proposal that has not come is
 * then due within SMC_CLC_PROPOSAL_WAIT_MS of the first such call; the
 * first smc_setup_progress at or past that declines (NOPROPOSAL) into
 * SMC_SETUP_SERVER_DISCARD.  Returns the milliseconds left until then (0:
 * the next step declines), or -1 when the exchange waits for no deadline
 * of this kind (a client, the Proposal came, the exchange is past it).
 */
int smc_setup_want_send(struct smc_setup *s);

/*
 * Server: the application lets go of the connection (its last close)
 * before the exchange answered a Proposal.  Declines (NOPROPOSAL) into
 * SMC_SETUP_SERVER_DISCARD, as when the Proposal comes too late, so that
 * the next smc_setup_progress reads it off if it came: the kernel resets
 * a connection closed with bytes unread, and the client, whose library
 * sent its Proposal at connect(), would read a reset where TCP gives the
 * end.  Answering instead would build a link to close it.  Whether it
 * declined (false: nothing to let go of, or the Decline could not be sent,
 * SMC_SETUP_RESET).
 */
bool smc_setup_let_go(struct smc_setup *s, int sock, const struct smc_setup_transport *transport);

/* Whether the application's writes go on TCP: declined, or ended on TCP. */
static inline bool smc_setup_writes_tcp(const struct smc_setup *s)
{
	return s->state == SMC_SETUP_SERVER_DISCARD || s->state == SMC_SETUP_FALLBACK;
}

#endif
