/*
 * smc_cdc.c - the CDC message's wire format and the flow-control rules
 * (smc_cdc.h).
 *
 * Wire layout, all fields big-endian:
 *   0 type 0xFE | 1 length 44 | 2 seqno:16 | 4 token:32
 *   8 producer cursor (reserved:16 wrap:16 count:32) | 16 consumer cursor
 *   24 producer flags | 25 connection state flags | 26..43 reserved
 */
#include <errno.h>
#include <string.h>

#include "smc_cdc.h"

enum {
	OFF_TYPE = 0,
	OFF_LEN = 1,
	OFF_SEQNO = 2,
	OFF_TOKEN = 4,
	OFF_PROD = 8,
	OFF_CONS = 16,
	OFF_PROD_FLAGS = 24,
	OFF_CONN_STATE_FLAGS = 25,
	OFF_RESERVED = 26,
};

static void put_be(uint8_t *p, uint64_t v, unsigned int bytes)
{
	for (unsigned int i = bytes; i-- > 0; v >>= 8)
		p[i] = (uint8_t)v;
}

static uint64_t get_be(const uint8_t *p, unsigned int bytes)
{
	uint64_t v = 0;

	for (unsigned int i = 0; i < bytes; i++)
		v = v << 8 | p[i];
	return v;
}

void smc_cdc_encode(const struct smc_cdc *cdc, uint8_t out[SMC_CDC_MSG_LEN])
{
	out[OFF_TYPE] = SMC_CDC_MSG_TYPE;
	out[OFF_LEN] = SMC_CDC_MSG_LEN;
	put_be(out + OFF_SEQNO, cdc->seqno, 2);
	put_be(out + OFF_TOKEN, cdc->token, 4);
	put_be(out + OFF_PROD, smc_cursor_pack(cdc->prod), 8);
	put_be(out + OFF_CONS, smc_cursor_pack(cdc->cons), 8);
	out[OFF_PROD_FLAGS] = cdc->prod_flags & SMC_CDC_PROD_FLAGS;
	out[OFF_CONN_STATE_FLAGS] = cdc->conn_state_flags & SMC_CDC_CONN_STATE_FLAGS;
	memset(out + OFF_RESERVED, 0, SMC_CDC_MSG_LEN - OFF_RESERVED);
}

int smc_cdc_decode(const uint8_t *buf, size_t len, struct smc_cdc *out)
{
	if (len != SMC_CDC_MSG_LEN)
		return -EMSGSIZE;
	if (buf[OFF_TYPE] != SMC_CDC_MSG_TYPE)
		return -EPROTO;
	if (buf[OFF_LEN] != SMC_CDC_MSG_LEN)
		return -EBADMSG;
	*out = (struct smc_cdc){
		.seqno = (uint16_t)get_be(buf + OFF_SEQNO, 2),
		.token = (uint32_t)get_be(buf + OFF_TOKEN, 4),
		.prod = smc_cursor_unpack(get_be(buf + OFF_PROD, 8)),
		.cons = smc_cursor_unpack(get_be(buf + OFF_CONS, 8)),
		.prod_flags = buf[OFF_PROD_FLAGS] & SMC_CDC_PROD_FLAGS,
		.conn_state_flags = buf[OFF_CONN_STATE_FLAGS] & SMC_CDC_CONN_STATE_FLAGS,
	};
	return 0;
}

bool smc_cdc_valid_for(const struct smc_cdc *cdc, uint32_t rmb_size, uint32_t peer_rmb_size)
{
	return smc_cursor_valid(rmb_size, cdc->prod) && smc_cursor_valid(peer_rmb_size, cdc->cons);
}

bool smc_cdc_seq_newer(uint16_t last, uint16_t seq)
{
	uint16_t ahead = (uint16_t)(seq - last);

	return ahead != 0 && ahead < 0x8000;
}

uint32_t smc_cdc_to_send(uint32_t pending, uint32_t peer_free)
{
	return pending < peer_free ? pending : peer_free;
}

/*
 * Set also when the data just fits: the ring is then full, and with no free
 * space there is no next write whose CDC could carry the flag.  The flag is
 * what lets the receiver announce its consumer cursor before half the ring
 * has drained (smc_cdc_cons_update_due).
 */
bool smc_cdc_write_blocked(uint32_t pending, uint32_t peer_free)
{
	return pending > 0 && pending >= peer_free;
}

/*
 * RFC 7609 asks for updates of at least 10% of the receive buffer, so that
 * the sender is not woken for every few bytes read (the silly-window effect
 * Linux fixed by making its limit max(size / 10, SOCK_MIN_SNDBUF / 2), 2304
 * bytes).  The floor, 2 KiB, matters only below 20 KiB, that is for the
 * smallest RMB (16 KiB): 8 updates per ring instead of 10.  The cap at half
 * the ring keeps the limit reachable: without it, in a ring under 4 KiB
 * (smaller than any RMB, but a transport may use one), a sender that filled
 * the ring would never hear that it drained.
 */
uint32_t smc_cdc_cons_update_limit(uint32_t rmb_size)
{
	uint32_t limit = rmb_size / 10;

	if (limit < SMC_CDC_CONS_UPDATE_FLOOR)
		limit = SMC_CDC_CONS_UPDATE_FLOOR;
	if (limit > rmb_size / 2)
		limit = rmb_size / 2;
	return limit;
}

/*
 * Due when the peer asked, or the caller forces it, or when enough has been
 * read since the last update and the sender needs the space: what it sees
 * free (the ring less what it has written beyond our last announced consumer
 * cursor) is at most half the ring, or it said it is blocked.
 */
bool smc_cdc_cons_update_due(const struct smc_cdc_rx_view *rx, bool force)
{
	uint32_t to_confirm, sender_free;

	if (force || (rx->peer_prod_flags & SMC_CDC_CONS_UPDATE_REQ))
		return true;
	to_confirm = smc_cursor_diff(rx->rmb_size, rx->confirmed, rx->cons);
	if (to_confirm <= smc_cdc_cons_update_limit(rx->rmb_size))
		return false;
	sender_free = smc_ring_writable(rx->rmb_size, rx->confirmed, rx->peer_prod);
	return sender_free <= rx->rmb_size / 2 || (rx->peer_prod_flags & SMC_CDC_WRITE_BLOCKED);
}
