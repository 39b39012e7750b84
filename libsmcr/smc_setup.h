/*
 * smc_setup.h - turning a TCP connection whose handshake negotiated SMC into
 * an SMC connection: the CLC exchange (RFC 7609 3.7) on that TCP stream.
 *
 *   client: Proposal ->            <- Accept      Confirm ->     (SMC)
 *   server:            <- Proposal    Accept ->   <- Confirm     (SMC)
 *   either side, instead of its next message: Decline ->         (TCP)
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
 * The transport being set up is reached through struct smc_setup_transport.
 */
#ifndef SMCR_SMC_SETUP_H
#define SMCR_SMC_SETUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "reason.h"
#include "smc_clc.h"

struct smc_setup_transport {
	/* Prepares our receive buffer and fills our Accept/Confirm description. */
	enum smcr_reason (*prepare)(void *ctx, struct smc_clc_accept_confirm *ours);
	/* Attaches the peer's receive buffer from its Accept/Confirm. */
	enum smcr_reason (*attach)(void *ctx, const struct smc_clc_accept_confirm *peer);
	/* Undoes prepare (and attach) when the connection stays on TCP. */
	void (*abandon)(void *ctx);
	void *ctx;
};

enum smc_setup_state {
	SMC_SETUP_CLIENT_START,         /* Proposal not yet sent */
	SMC_SETUP_CLIENT_WAIT_ACCEPT,
	SMC_SETUP_SERVER_WAIT_PROPOSAL,
	SMC_SETUP_SERVER_WAIT_CONFIRM,
	SMC_SETUP_DONE,
	SMC_SETUP_FALLBACK,
	SMC_SETUP_RESET,
};

struct smc_setup {
	enum smc_setup_state state;
	enum smcr_reason reason;        /* FALLBACK, RESET: why */
	uint32_t peer_diagnosis;        /* a peer's Decline: its code */
	int sock;
	uint64_t gid;                   /* ours: host tag in bits 63-32 */
	int64_t deadline_ms;            /* CLOCK_MONOTONIC, of the wait in progress */
	bool prepared;                  /* our buffer exists: abandon it if we stay on TCP */
	struct smc_setup_transport transport;
	size_t have, need;              /* bytes of the message being received */
	uint8_t buf[SMC_CLC_MAX_LEN];
};

void smc_setup_client(struct smc_setup *s, int sock, uint64_t gid,
		      const struct smc_setup_transport *transport);
void smc_setup_server(struct smc_setup *s, int sock, uint64_t gid,
		      const struct smc_setup_transport *transport);

/*
 * Advances as far as it can, waiting at most wait_ms (0: not at all) for the
 * peer; returns the state reached.  Call again while it is not final.
 */
enum smc_setup_state smc_setup_progress(struct smc_setup *s, int wait_ms);

static inline bool smc_setup_final(const struct smc_setup *s)
{
	return s->state >= SMC_SETUP_DONE;
}

#endif
