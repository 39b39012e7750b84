/*
 * smc_leave_msg.c - LEAVE's wire format (smc_leave_msg.h).
 *
 * Wire layout, all fields big-endian:
 *   0 magic 0xE2 'L' 'V' 'E' | 4 version 1 or 2 | 5 length 28
 *   6 flags:16 (version 1: reserved)
 *   8 reason:32 | 12 consumer cursor (reserved:16 wrap:16 count:32)
 *   20 producer cursor
 */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "smc_leave_msg.h"

static const uint8_t magic[4] = { 0xE2, 'L', 'V', 'E' };

enum {
	OFF_MAGIC = 0,
	OFF_VERSION = 4,
	OFF_LEN = 5,
	OFF_FLAGS = 6,
	OFF_REASON = 8,
	OFF_CONS = 12,
	OFF_PROD = 20,
};

static void put_be64(uint8_t *p, uint64_t v)
{
	v = htobe64(v);
	memcpy(p, &v, sizeof(v));
}

static uint64_t get_be64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return be64toh(v);
}

void smc_leave_encode(const struct smc_leave *leave, uint8_t out[SMC_LEAVE_MSG_LEN])
{
	uint32_t reason = htobe32(leave->reason);
	uint16_t flags = htobe16(leave->version == 1 ? 0 : leave->flags);

	memcpy(out + OFF_MAGIC, magic, sizeof(magic));
	out[OFF_VERSION] = leave->version;
	out[OFF_LEN] = SMC_LEAVE_MSG_LEN;
	memcpy(out + OFF_FLAGS, &flags, sizeof(flags));
	memcpy(out + OFF_REASON, &reason, sizeof(reason));
	put_be64(out + OFF_CONS, smc_cursor_pack(leave->cons));
	put_be64(out + OFF_PROD, smc_cursor_pack(leave->prod));
}

int smc_leave_decode(const uint8_t *buf, size_t len, struct smc_leave *out)
{
	uint32_t reason;
	uint16_t flags;

	if (len != SMC_LEAVE_MSG_LEN)
		return -EMSGSIZE;
	if (memcmp(buf + OFF_MAGIC, magic, sizeof(magic)) ||
	    (buf[OFF_VERSION] != 1 && buf[OFF_VERSION] != SMC_LEAVE_VERSION) ||
	    buf[OFF_LEN] != SMC_LEAVE_MSG_LEN)
		return -EPROTO;
	memcpy(&flags, buf + OFF_FLAGS, sizeof(flags));
	flags = buf[OFF_VERSION] == 1 ? 0 : be16toh(flags);
	if (flags & ~SMC_LEAVE_ANSWER)
		return -EPROTO;
	memcpy(&reason, buf + OFF_REASON, sizeof(reason));
	*out = (struct smc_leave){
		.version = buf[OFF_VERSION],
		.flags = flags,
		.reason = be32toh(reason),
		.cons = smc_cursor_unpack(get_be64(buf + OFF_CONS)),
		.prod = smc_cursor_unpack(get_be64(buf + OFF_PROD)),
	};
	return 0;
}
