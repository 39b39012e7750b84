/*
 * smc_clc.h - the CLC messages (RFC 7609 section 3.7): encoding and decoding.
 *
 * Pure functions, no I/O.  The handshake reads a message in two steps: the
 * 8-byte header, from which smc_clc_frame_length() says how many bytes the
 * whole message has (bounded by SMC_CLC_MAX_LEN), then the rest; it hands the
 * whole message to smc_clc_decode().
 *
 * Layouts are those of RFC 7609 and Linux net/smc version 1, byte for byte:
 * SMC-R for the RDMA transport, SMC-D v1 for the same-host shared-memory
 * transport.  docs/PROTOCOL.md gives every offset and what we put in the
 * SMC-D fields.  Structures here are in host order; the codec does the byte
 * order.
 *
 * Decoding is strict and never reads outside buf[0..len).  It returns
 * SMCR_REASON_NONE (0) for a well-formed message, else:
 *   SMCR_REASON_SYNCERR     the bytes are not a CLC message we can read:
 *                           unknown eyecatcher, header and trailer
 *                           eyecatchers differ, type not 1..4, length field
 *                           not the buffer's length or not the length the
 *                           type and its contents imply, version 0, a v1
 *                           Proposal offering nothing, iparea_offset outside
 *                           the message or not where the SMC-D area ends,
 *                           more than 8 IPv6 prefixes, an Accept/Confirm
 *                           neither SMC-R nor SMC-D or framed by the other
 *                           kind's eyecatcher;
 *   SMCR_REASON_VERSMISMAT  an Accept or Confirm of a version other than 1
 *                           (we only ever propose version 1).
 * A Proposal or Decline of a later version decodes (its version-1 part; what
 * a later version appends is skipped) with hdr.version telling: deciding to
 * answer VERSMISMAT - for a Proposal offering only a later version, smc_type
 * SMC_TYPE_N - is the handshake's business.  Reserved bits and bytes are
 * ignored.
 *
 * Encoders write version 1 and fill reserved fields with zeros.  They return
 * the message's length, or -1 if it does not fit in cap bytes (nothing is
 * written then) or a field does not fit its wire field (a 24-bit QP number
 * above 0xffffff, ...) or the message would not decode (more than 8 IPv6
 * prefixes, an Accept of SMC type B, ...).
 */
#ifndef SMCR_SMC_CLC_H
#define SMCR_SMC_CLC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "reason.h"

/* Waiting for the peer's next CLC message, and the short waits (Linux's). */
#define SMC_CLC_WAIT_MS         6000
#define SMC_CLC_WAIT_SHORT_MS   1000
/*
 * How long a server that wants to write waits for a Proposal not yet come
 * before it declines (NOPROPOSAL) and writes on TCP.  A client's library
 * sends its Proposal within its connect(), right after the handshake
 * (what it needs was made ready before the handshake), so on time it
 * is here before the server's application can have accepted and
 * written; what the bound covers is that client's scheduling, its
 * smcrd round trip (OFFER) and loopback or LAN delivery on a loaded host:
 * milliseconds, tens at worst, against a 1 s bound.  Missing it costs a
 * legitimate client SMC on that connection, not a byte; a silent peer
 * costs a server that greets first 1 s, never a buffer.
 */
#define SMC_CLC_PROPOSAL_WAIT_MS 1000

#define SMC_CLC_V1              1
#define SMC_CLC_HDR_LEN         8
#define SMC_CLC_TRAILER_LEN     4
#define SMC_CLC_MAX_V6_PREFIX   8
#define SMC_CLC_DECLINE_LEN     28
#define SMCR_CLC_ACCEPT_CONFIRM_LEN 68
#define SMCD_CLC_ACCEPT_CONFIRM_LEN 48
/* Our longest message: a v1 Proposal offering both, with 8 IPv6 prefixes. */
#define SMC_CLC_PROPOSAL_MAX_LEN 228
/*
 * The longest message we read.  A Linux v2 Proposal with every extension is
 * about 650 bytes; reading it whole lets us answer it with a Decline instead
 * of losing the stream.
 */
#define SMC_CLC_MAX_LEN         1024

enum smc_clc_type {
	SMC_CLC_PROPOSAL = 1,
	SMC_CLC_ACCEPT = 2,
	SMC_CLC_CONFIRM = 3,
	SMC_CLC_DECLINE = 4,
};

/* What a message offers or uses, the header's 2-bit "path" (typev1). */
enum smc_type {
	SMC_TYPE_R = 0,         /* SMC-R: the RDMA transport */
	SMC_TYPE_D = 1,         /* SMC-D: our same-host shared-memory transport */
	SMC_TYPE_N = 2,         /* neither (a later version's Proposal) */
	SMC_TYPE_B = 3,         /* both */
};

/* The SMC-R local information block (RFC 7609 "peer ID, GID, MAC"). */
struct smc_clc_local {
	uint8_t peer_id[8];     /* system id: 2-byte instance, 6-byte MAC */
	uint8_t gid[16];        /* RoCE GID of the RDMA port */
	uint8_t mac[6];         /* MAC of the RDMA port */
};

struct smc_clc_ipv6_prefix {
	uint8_t prefix[16];
	uint8_t prefix_len;
};

struct smc_clc_proposal {
	enum smc_type smc_type;         /* R, D or B (N only decoded, version > 1) */
	struct smc_clc_local lcl;       /* the SMC-R offer; zeros when R is not offered */
	uint64_t ism_gid;               /* the SMC-D offer (type D or B) */
	uint32_t outgoing_subnet;       /* IPv4 subnet of the connection, host order */
	uint8_t prefix_len;             /* its prefix length */
	uint8_t ipv6_prefix_count;      /* IPv6 connections: prefixes of the interface */
	struct smc_clc_ipv6_prefix ipv6_prefix[SMC_CLC_MAX_V6_PREFIX];
};

/* The SMC-R v1 transport description (the sender's QP and RMB). */
struct smcr_clc_accept_confirm {
	struct smc_clc_local lcl;
	uint32_t qpn;                   /* 24 bits */
	uint32_t rmb_rkey;
	uint8_t rmbe_idx;
	uint32_t rmbe_alert_token;      /* the connection's token, echoed in every CDC */
	uint8_t rmbe_size;              /* 4 bits, compressed: 1 << (n + 14) bytes */
	uint8_t qp_mtu;                 /* 4 bits, IB MTU enum */
	uint64_t rmb_dma_addr;
	uint32_t psn;                   /* 24 bits, initial packet sequence number */
};

/* The SMC-D v1 transport description (the sender's receive buffer). */
struct smcd_clc_accept_confirm {
	uint64_t gid;                   /* the sender's GID (docs/PROTOCOL.md) */
	uint64_t token;                 /* the sender's receive buffer (docs/PROTOCOL.md) */
	uint8_t dmbe_idx;
	uint8_t dmbe_size;              /* 4 bits, compressed like rmbe_size */
	uint32_t link_id;
};

/* Accept (server to client) and Confirm (client to server). */
struct smc_clc_accept_confirm {
	enum smc_type smc_type;         /* R: .r holds the description; D: .d */
	bool first_contact;             /* the first connection of a link group */
	union {
		struct smcr_clc_accept_confirm r;
		struct smcd_clc_accept_confirm d;
	};
};

struct smc_clc_decline {
	uint8_t peer_id[8];
	uint32_t peer_diagnosis;        /* RFC 7609 code: smcr_reason_code(), _from_code() */
	bool out_of_sync;               /* the sender dropped the link group (SYNCERR) */
	uint8_t os_type;                /* 4 bits; 0 in version 1 */
};

struct smc_clc_hdr {
	uint8_t type;                   /* enum smc_clc_type */
	uint8_t version;                /* 4 bits, as received */
};

struct smc_clc_msg {
	struct smc_clc_hdr hdr;
	union {                         /* by hdr.type */
		struct smc_clc_proposal proposal;
		struct smc_clc_accept_confirm accept_confirm;   /* Accept or Confirm */
		struct smc_clc_decline decline;
	};
};

/*
 * The whole length of the message whose header is hdr, into *total, once the
 * header's eyecatcher and type are known and the length is at least the
 * type's minimum and at most SMC_CLC_MAX_LEN.  Returns 0 or SYNCERR.
 */
enum smcr_reason smc_clc_frame_length(const uint8_t hdr[SMC_CLC_HDR_LEN], size_t *total);

/* One whole message, buf[0..len), into *out (zeroed first). */
enum smcr_reason smc_clc_decode(const uint8_t *buf, size_t len, struct smc_clc_msg *out);

int smc_clc_encode_proposal(uint8_t *buf, size_t cap, const struct smc_clc_proposal *prop);
int smc_clc_encode_accept(uint8_t *buf, size_t cap, const struct smc_clc_accept_confirm *acc);
int smc_clc_encode_confirm(uint8_t *buf, size_t cap, const struct smc_clc_accept_confirm *conf);
int smc_clc_encode_decline(uint8_t *buf, size_t cap, const struct smc_clc_decline *decl);

#endif
