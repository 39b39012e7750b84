/*
 * reason.h - why a connection is not (or no longer) on SMC, as data.
 *
 * RFC 7609 Decline codes where RFC 7609 (and Linux net/smc) define them, and
 * a few of our own for causes that only a user-space implementation has
 * (no daemon, a connection outside smcr.conf's lists), placed in the CNFERR
 * family so that a reader of the code knows what kind of cause it is.
 * Counters and logs use the index; the wire and the views show the code and
 * name.
 */
#ifndef SMCR_REASON_H
#define SMCR_REASON_H

#include <stdint.h>

#define SMCR_REASONS(X)                                                             \
	X(MEM, 0x01010000u, "out of memory, or max_memory reached")                 \
	X(TIMEOUT_CL, 0x02010000u, "timeout waiting for link confirmation")         \
	X(CNFERR, 0x03000000u, "configuration error")                               \
	X(NODAEMON, 0x03000100u, "smcrd is not running")                            \
	X(POLICY, 0x03000200u, "address or port not allowed by smcr.conf, or SMC disabled") \
	X(PEERCLOSED, 0x03000300u, "peer closed the connection during the CLC exchange") \
	X(CONFINED, 0x03000400u, "the process cannot take smcrd's buffers (limits, sandbox)") \
	X(NOPROPOSAL, 0x03000500u, "no CLC Proposal from the client before the server wrote") \
	X(SMCRDFULL, 0x03000600u, "smcrd holds as many buffers as its open-file limit allows") \
	X(PEERLEFT, 0x03000700u, "the peer could not keep SMC: the rest went over TCP") \
	X(PEERNOSMC, 0x03010000u, "peer did not signal SMC in the TCP handshake")   \
	X(IPSEC, 0x03020000u, "IPsec in use")                                       \
	X(NOSMCDEV, 0x03030000u, "no usable SMC device or transport")               \
	X(MODEUNSUPP, 0x03040000u, "no common mode")                                \
	X(RMBE_EC, 0x03050000u, "peer has eyecatcher in RMBE")                      \
	X(OPTUNSUPP, 0x03060000u, "unsupported option (no room for the SMC TCP option)") \
	X(DIFFPREFIX, 0x03070000u, "IP prefix or subnet mismatch")                  \
	X(VERSMISMAT, 0x030c0000u, "version mismatch")                              \
	X(SYNCERR, 0x04000000u, "synchronization error")                            \
	X(PEERDECL, 0x05000000u, "peer declined")                                   \
	X(INTERR, 0x09990000u, "internal error")

enum smcr_reason {
	SMCR_REASON_NONE = 0,           /* not a fallback */
#define SMCR_REASON_ENUM(name, code, text) SMCR_REASON_##name,
	SMCR_REASONS(SMCR_REASON_ENUM)
#undef SMCR_REASON_ENUM
	SMCR_REASON_COUNT
};

/*
 * reason itself if it is one of the table's, else SMCR_REASON_INTERR: for a
 * reason read from memory another process can write (a connection's state
 * page), before it names a counter, a record or a log line.
 */
enum smcr_reason smcr_reason_known(enum smcr_reason reason);

uint32_t smcr_reason_code(enum smcr_reason reason);
const char *smcr_reason_name(enum smcr_reason reason);
const char *smcr_reason_text(enum smcr_reason reason);

/* The reason with this wire code; SMCR_REASON_NONE if there is none. */
enum smcr_reason smcr_reason_from_code(uint32_t code);

#endif
