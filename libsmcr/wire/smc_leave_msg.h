/*
 * smc_leave_msg.h - LEAVE, the message by which one end of an SMC connection
 * tells the other, on the TCP stream, that it goes on over TCP from here
 * (docs/ARCHITECTURE.md, "Leaving for TCP mid-stream").
 *
 * Nothing else travels on the TCP stream while the connection is on SMC,
 * so LEAVE needs no framing beyond its own: a magic number, a version and
 * its length, then the leaver's reason and its two cursors.  This file
 * owns its wire format, as pure functions; sending and taking it belong to
 * conn/smc_leave.c.
 */
#ifndef SMCR_SMC_LEAVE_MSG_H
#define SMCR_SMC_LEAVE_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "smc_cursor.h"

#define SMC_LEAVE_MSG_LEN 28

/*
 * Version 2 is version 1 whose sender reads the peer's answer before any
 * byte that follows on the stream: an ANSWER, or the peer's own LEAVE
 * when both ends left at once.  Version 1's sender expects none.
 */
#define SMC_LEAVE_VERSION 2

/* flags: this is the answer to the peer's LEAVE (version 2 only) */
#define SMC_LEAVE_ANSWER 0x0001

struct smc_leave {
	uint8_t version;		/* 1 or 2 */
	uint16_t flags;			/* SMC_LEAVE_ANSWER, or 0 */
	uint32_t reason;		/* why the leaver could not go on (smcr_reason_code) */
	struct smc_cursor cons;		/* how far the leaver read the peer's stream, in its RMB */
	struct smc_cursor prod;		/* how far it wrote into the peer's RMB, as its last CDC said */
};

void smc_leave_encode(const struct smc_leave *leave, uint8_t out[SMC_LEAVE_MSG_LEN]);

/*
 * Decodes the len bytes at buf.  0, -EMSGSIZE if len is not
 * SMC_LEAVE_MSG_LEN, or -EPROTO if the magic number, version or length
 * byte is not LEAVE's, or version 2's flags hold a bit not known.
 * Version 1's flags field is reserved: decoded as 0.  The cursors are
 * only read: the caller checks them against its rings.
 */
int smc_leave_decode(const uint8_t *buf, size_t len, struct smc_leave *out);

#endif
