/*
 * smc_cdc.h - the CDC message (RFC 7609 Connection Data Control) and the
 * flow-control rules that decide what it says and when one is due.
 *
 * After the payload has landed in the peer's RMB, a 44-byte CDC message tells
 * the peer how far our producer cursor (what we wrote into its ring) and our
 * consumer cursor (what we read from ours) have moved, with flags for flow
 * control, urgent data and close.  This file owns its wire format, the
 * checks on a received one, and the sender's and receiver's flow-control
 * rules as pure functions; sending and receiving belong to smc_tx.c and
 * smc_rx.c.
 */
#ifndef SMCR_SMC_CDC_H
#define SMCR_SMC_CDC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "smc_cursor.h"

#define SMC_CDC_MSG_TYPE	0xFE
#define SMC_CDC_MSG_LEN		44

/* Producer flags (byte 24). */
#define SMC_CDC_WRITE_BLOCKED		0x80	/* sender waits for space in our RMB */
#define SMC_CDC_URG_DATA_PENDING	0x40
#define SMC_CDC_URG_DATA_PRESENT	0x20
#define SMC_CDC_CONS_UPDATE_REQ		0x10	/* sender asks for our consumer cursor */
#define SMC_CDC_FAILOVER_VALIDATION	0x08
#define SMC_CDC_PROD_FLAGS							\
	(SMC_CDC_WRITE_BLOCKED | SMC_CDC_URG_DATA_PENDING | SMC_CDC_URG_DATA_PRESENT | \
	 SMC_CDC_CONS_UPDATE_REQ | SMC_CDC_FAILOVER_VALIDATION)

/* Connection state flags (byte 25). */
#define SMC_CDC_PEER_DONE_WRITING	0x80	/* shutdown(SHUT_WR) */
#define SMC_CDC_PEER_CONN_CLOSED	0x40
#define SMC_CDC_PEER_CONN_ABORT		0x20
/*
 * Ours, in a bit RFC 7609 reserves, sent only between ends that are both
 * libsmcr: the sender left for TCP, and LEAVE waits on the TCP stream
 * (smc_leave_msg.h).
 */
#define SMC_CDC_PEER_LEAVING		0x10
#define SMC_CDC_CONN_STATE_FLAGS						\
	(SMC_CDC_PEER_DONE_WRITING | SMC_CDC_PEER_CONN_CLOSED | SMC_CDC_PEER_CONN_ABORT | \
	 SMC_CDC_PEER_LEAVING)

/*
 * A CDC message in host order.  type and length are constants of the wire
 * format, so they have no field; flag bits outside the ones defined above
 * are reserved: sent as zero, ignored on receipt.
 */
struct smc_cdc {
	uint16_t seqno;		/* per connection, +1 per message, the first is 1 */
	uint32_t token;		/* the receiver's rmbe_alert_token */
	struct smc_cursor prod;	/* sender's producer cursor, in the receiver's RMB */
	struct smc_cursor cons;	/* sender's consumer cursor, in the sender's RMB */
	uint8_t prod_flags;	/* SMC_CDC_WRITE_BLOCKED ... */
	uint8_t conn_state_flags; /* SMC_CDC_PEER_DONE_WRITING ... */
};

void smc_cdc_encode(const struct smc_cdc *cdc, uint8_t out[SMC_CDC_MSG_LEN]);

/*
 * Decodes the len bytes received at buf.  Returns 0, -EMSGSIZE if len is not
 * SMC_CDC_MSG_LEN, -EPROTO if the type byte is not SMC_CDC_MSG_TYPE, or
 * -EBADMSG if the length byte is not SMC_CDC_MSG_LEN.
 */
int smc_cdc_decode(const uint8_t *buf, size_t len, struct smc_cdc *out);

/*
 * The cursors of a received CDC lie in their rings: its producer cursor in
 * our RMB (rmb_size bytes), its consumer cursor in the peer's (peer_rmb_size).
 */
bool smc_cdc_valid_for(const struct smc_cdc *cdc, uint32_t rmb_size, uint32_t peer_rmb_size);

/*
 * seq is newer than last, the sequence number of the last CDC applied,
 * counting modulo 2^16: seq is 1..32767 ahead.  An older or repeated one is
 * ignored.
 */
bool smc_cdc_seq_newer(uint16_t last, uint16_t seq);

/* Sender: bytes to write now, pending bytes against the peer's free space. */
uint32_t smc_cdc_to_send(uint32_t pending, uint32_t peer_free);

/* Sender: the CDC announcing this write carries SMC_CDC_WRITE_BLOCKED. */
bool smc_cdc_write_blocked(uint32_t pending, uint32_t peer_free);

/* Receiver: bytes read beyond which a consumer-cursor update may be sent. */
#define SMC_CDC_CONS_UPDATE_FLOOR 2048
uint32_t smc_cdc_cons_update_limit(uint32_t rmb_size);

/*
 * What the receiver knows when it decides whether to send its consumer
 * cursor.  confirmed <= cons <= peer_prod <= confirmed + one ring.
 */
struct smc_cdc_rx_view {
	uint32_t rmb_size;
	struct smc_cursor cons;		/* how far our reader has emptied the RMB */
	struct smc_cursor confirmed;	/* the consumer cursor last sent to the peer */
	struct smc_cursor peer_prod;	/* the peer's producer cursor, last applied */
	uint8_t peer_prod_flags;	/* producer flags of the peer's last CDC */
};

/* Receiver: a CDC with our consumer cursor is due (force: the caller insists). */
bool smc_cdc_cons_update_due(const struct smc_cdc_rx_view *rx, bool force);

#endif
