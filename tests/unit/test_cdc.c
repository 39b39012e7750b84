/* Unit tests of the CDC message codec and the flow-control rules (libsmcr/wire/smc_cdc.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "golden_cdc.h"
#include "smc_cdc.h"

static const struct smc_cdc sample = {
	.seqno = 0x1234,
	.token = 0xa1b2c3d4u,
	.prod = { .wrap = 0x0102, .count = 0x03040506u },
	.cons = { .wrap = 0xf1f2, .count = 0x0000fff3u },
	.prod_flags = SMC_CDC_WRITE_BLOCKED | SMC_CDC_CONS_UPDATE_REQ,
	.conn_state_flags = SMC_CDC_PEER_DONE_WRITING | SMC_CDC_PEER_CONN_ABORT,
};

static void assert_cdc_equal(const struct smc_cdc *a, const struct smc_cdc *b)
{
	assert_int_equal(a->seqno, b->seqno);
	assert_int_equal(a->token, b->token);
	assert_true(smc_cursor_equal(a->prod, b->prod));
	assert_true(smc_cursor_equal(a->cons, b->cons));
	assert_int_equal(a->prod_flags, b->prod_flags);
	assert_int_equal(a->conn_state_flags, b->conn_state_flags);
}

static void encode_golden_bytes(void **state)
{
	uint8_t out[SMC_CDC_MSG_LEN];

	(void)state;
	memset(out, 0x5a, sizeof(out));
	smc_cdc_encode(&sample, out);
	assert_memory_equal(out, sample_wire, SMC_CDC_MSG_LEN);
}

static void encode_each_flag_at_its_bit(void **state)
{
	static const struct {
		uint8_t flag, byte;
		unsigned int offset;
	} flags[] = {
		{ SMC_CDC_WRITE_BLOCKED, 0x80, 24 },
		{ SMC_CDC_URG_DATA_PENDING, 0x40, 24 },
		{ SMC_CDC_URG_DATA_PRESENT, 0x20, 24 },
		{ SMC_CDC_CONS_UPDATE_REQ, 0x10, 24 },
		{ SMC_CDC_FAILOVER_VALIDATION, 0x08, 24 },
		{ SMC_CDC_PEER_DONE_WRITING, 0x80, 25 },
		{ SMC_CDC_PEER_CONN_CLOSED, 0x40, 25 },
		{ SMC_CDC_PEER_CONN_ABORT, 0x20, 25 },
		{ SMC_CDC_PEER_LEAVING, 0x10, 25 },
	};
	uint8_t out[SMC_CDC_MSG_LEN];

	(void)state;
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		struct smc_cdc cdc = { 0 };

		if (flags[i].offset == 24)
			cdc.prod_flags = flags[i].flag;
		else
			cdc.conn_state_flags = flags[i].flag;
		smc_cdc_encode(&cdc, out);
		assert_int_equal(out[flags[i].offset], flags[i].byte);
		assert_int_equal(out[24] | out[25], flags[i].byte);
	}
}

static void encode_zeroes_reserved(void **state)
{
	struct smc_cdc cdc = sample;
	uint8_t out[SMC_CDC_MSG_LEN];

	(void)state;
	cdc.prod_flags = 0xff;
	cdc.conn_state_flags = 0xff;
	memset(out, 0xff, sizeof(out));
	smc_cdc_encode(&cdc, out);
	assert_int_equal(out[24], 0xf8);
	assert_int_equal(out[25], 0xf0);
	for (unsigned int i = 26; i < SMC_CDC_MSG_LEN; i++)
		assert_int_equal(out[i], 0);
}

static void decode_golden_and_round_trip(void **state)
{
	static const struct smc_cdc others[] = {
		{ 0 },
		{ .seqno = 0xffff, .token = 0xffffffffu, .prod = { 0xffff, 0xffffffffu },
		  .cons = { 0xffff, 0xffffffffu }, .prod_flags = SMC_CDC_PROD_FLAGS,
		  .conn_state_flags = SMC_CDC_CONN_STATE_FLAGS },
		{ .seqno = 1, .token = 7, .prod = { 65535, 65535 }, .cons = { 0, 1 },
		  .prod_flags = SMC_CDC_URG_DATA_PENDING | SMC_CDC_URG_DATA_PRESENT,
		  .conn_state_flags = SMC_CDC_PEER_CONN_CLOSED },
	};
	struct smc_cdc cdc;
	uint8_t wire[SMC_CDC_MSG_LEN];

	(void)state;
	assert_int_equal(smc_cdc_decode(sample_wire, sizeof(sample_wire), &cdc), 0);
	assert_cdc_equal(&cdc, &sample);
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		smc_cdc_encode(&others[i], wire);
		memset(&cdc, 0x5a, sizeof(cdc));
		assert_int_equal(smc_cdc_decode(wire, sizeof(wire), &cdc), 0);
		assert_cdc_equal(&cdc, &others[i]);
	}
}

static void decode_ignores_reserved(void **state)
{
	uint8_t wire[SMC_CDC_MSG_LEN];
	struct smc_cdc cdc;

	(void)state;
	memcpy(wire, sample_wire, sizeof(wire));
	wire[8] = wire[9] = wire[16] = wire[17] = 0xee;	/* cursors' reserved halves */
	wire[24] |= 0x07;
	wire[25] |= 0x0f;
	memset(wire + 26, 0xee, SMC_CDC_MSG_LEN - 26);
	assert_int_equal(smc_cdc_decode(wire, sizeof(wire), &cdc), 0);
	assert_cdc_equal(&cdc, &sample);
}

static void decode_rejects(void **state)
{
	uint8_t wire[SMC_CDC_MSG_LEN + 4] = { 0 };
	struct smc_cdc cdc = sample;

	(void)state;
	memcpy(wire, sample_wire, SMC_CDC_MSG_LEN);
	/* size of what arrived */
	assert_int_equal(smc_cdc_decode(wire, 0, &cdc), -EMSGSIZE);
	assert_int_equal(smc_cdc_decode(wire, SMC_CDC_MSG_LEN - 1, &cdc), -EMSGSIZE);
	assert_int_equal(smc_cdc_decode(wire, SMC_CDC_MSG_LEN + 1, &cdc), -EMSGSIZE);
	assert_int_equal(smc_cdc_decode(wire, sizeof(wire), &cdc), -EMSGSIZE);
	/* type: an LLC message, or garbage */
	wire[0] = 0x01;
	assert_int_equal(smc_cdc_decode(wire, SMC_CDC_MSG_LEN, &cdc), -EPROTO);
	wire[0] = 0xff;
	assert_int_equal(smc_cdc_decode(wire, SMC_CDC_MSG_LEN, &cdc), -EPROTO);
	wire[0] = SMC_CDC_MSG_TYPE;
	/* length byte */
	wire[1] = 43;
	assert_int_equal(smc_cdc_decode(wire, SMC_CDC_MSG_LEN, &cdc), -EBADMSG);
	wire[1] = 48;
	assert_int_equal(smc_cdc_decode(wire, SMC_CDC_MSG_LEN, &cdc), -EBADMSG);
	wire[1] = 0;
	assert_int_equal(smc_cdc_decode(wire, SMC_CDC_MSG_LEN, &cdc), -EBADMSG);
	/* a rejected message leaves out alone */
	assert_cdc_equal(&cdc, &sample);
}

static void cursors_checked_against_their_rings(void **state)
{
	struct smc_cdc cdc = { .prod = { 3, 65535 }, .cons = { 9, 16383 } };

	(void)state;
	/* prod lies in our 64 KiB RMB, cons in the peer's 16 KiB one */
	assert_true(smc_cdc_valid_for(&cdc, 65536, 16384));
	assert_false(smc_cdc_valid_for(&cdc, 65535, 16384));
	assert_false(smc_cdc_valid_for(&cdc, 65536, 16383));
	assert_false(smc_cdc_valid_for(&cdc, 16384, 65536));
	cdc.prod.count = 0;
	cdc.cons.count = 0;
	assert_true(smc_cdc_valid_for(&cdc, 1, 1));
	cdc.prod.count = 0xffffffffu;
	assert_false(smc_cdc_valid_for(&cdc, 0xffffffffu, 1));
}

static void seqno_wraparound(void **state)
{
	(void)state;
	assert_true(smc_cdc_seq_newer(0, 1));
	assert_true(smc_cdc_seq_newer(100, 101));
	assert_false(smc_cdc_seq_newer(100, 100));	/* a repeat */
	assert_false(smc_cdc_seq_newer(100, 99));
	assert_true(smc_cdc_seq_newer(65535, 0));
	assert_true(smc_cdc_seq_newer(65530, 3));
	assert_false(smc_cdc_seq_newer(0, 65535));
	assert_false(smc_cdc_seq_newer(3, 65530));
	/* half the space ahead is the edge */
	assert_true(smc_cdc_seq_newer(0, 32767));
	assert_false(smc_cdc_seq_newer(0, 32768));
	assert_true(smc_cdc_seq_newer(40000, 40000 + 32767 - 65536));
	assert_false(smc_cdc_seq_newer(40000, 40000 + 32768 - 65536));
}

static void sender_rules(void **state)
{
	(void)state;
	assert_int_equal(smc_cdc_to_send(0, 100), 0);
	assert_int_equal(smc_cdc_to_send(99, 100), 99);
	assert_int_equal(smc_cdc_to_send(100, 100), 100);
	assert_int_equal(smc_cdc_to_send(101, 100), 100);
	assert_int_equal(smc_cdc_to_send(101, 0), 0);

	assert_false(smc_cdc_write_blocked(0, 100));
	assert_false(smc_cdc_write_blocked(0, 0));
	assert_false(smc_cdc_write_blocked(99, 100));
	/* just fits: the ring is then full */
	assert_true(smc_cdc_write_blocked(100, 100));
	assert_true(smc_cdc_write_blocked(101, 100));
	assert_true(smc_cdc_write_blocked(1, 0));
}

static void cons_update_limits(void **state)
{
	(void)state;
	/* 10% of the ring, at least the floor, at most half the ring */
	assert_int_equal(smc_cdc_cons_update_limit(16384), SMC_CDC_CONS_UPDATE_FLOOR);
	assert_int_equal(smc_cdc_cons_update_limit(20480), 2048);
	assert_int_equal(smc_cdc_cons_update_limit(20490), 2049);
	assert_int_equal(smc_cdc_cons_update_limit(65536), 6553);
	assert_int_equal(smc_cdc_cons_update_limit(524288), 52428);
	assert_int_equal(smc_cdc_cons_update_limit(1048576), 104857);
	assert_int_equal(smc_cdc_cons_update_limit(4096), 2048);
	assert_int_equal(smc_cdc_cons_update_limit(4094), 2047);
	assert_int_equal(smc_cdc_cons_update_limit(1000), 500);
	assert_int_equal(smc_cdc_cons_update_limit(1), 0);
}

/*
 * The receiver's view after the peer wrote `produced` bytes and our reader
 * took `read` of them, since the update that announced `confirmed`.
 */
static struct smc_cdc_rx_view rx_view(uint32_t size, struct smc_cursor confirmed, uint32_t read,
				      uint32_t produced, uint8_t peer_flags)
{
	return (struct smc_cdc_rx_view){
		.rmb_size = size,
		.confirmed = confirmed,
		.cons = smc_cursor_add(confirmed, size, read),
		.peer_prod = smc_cursor_add(confirmed, size, produced),
		.peer_prod_flags = peer_flags,
	};
}

static bool due(uint32_t size, uint32_t read, uint32_t produced, uint8_t peer_flags)
{
	/* near the end of the ring and of the wrap space, so both roll over */
	struct smc_cursor confirmed = { .wrap = 65535, .count = size - 100 };
	struct smc_cdc_rx_view rx = rx_view(size, confirmed, read, produced, peer_flags);

	return smc_cdc_cons_update_due(&rx, false);
}

static void cons_update_truth_table(void **state)
{
	const uint32_t size = 65536, limit = 6553, half = 32768;
	struct smc_cdc_rx_view rx;

	(void)state;
	/* nothing read, nothing asked */
	assert_false(due(size, 0, 0, 0));
	assert_false(due(size, 0, size, 0));
	/* asked, or forced: always, even with nothing new */
	assert_true(due(size, 0, 0, SMC_CDC_CONS_UPDATE_REQ));
	rx = rx_view(size, (struct smc_cursor){ 0, 0 }, 0, 0, 0);
	assert_true(smc_cdc_cons_update_due(&rx, true));
	assert_false(smc_cdc_cons_update_due(&rx, false));

	/* at the limit: not yet, whatever the sender's state */
	assert_false(due(size, limit, size, 0));
	assert_false(due(size, limit, size, SMC_CDC_WRITE_BLOCKED));
	/* above it: when the sender sees at most half the ring free ... */
	assert_true(due(size, limit + 1, size, 0));
	assert_true(due(size, limit + 1, size - half, 0));
	assert_false(due(size, limit + 1, size - half - 1, 0));
	/* ... or says it is blocked */
	assert_true(due(size, limit + 1, size - half - 1, SMC_CDC_WRITE_BLOCKED));
	assert_true(due(size, limit + 1, limit + 1, SMC_CDC_WRITE_BLOCKED));
	/* everything read from a full ring */
	assert_true(due(size, size, size, 0));

	/* the smallest RMB: the floor, not 10% */
	assert_false(due(16384, 2048, 16384, 0));
	assert_true(due(16384, 2049, 16384, 0));
	/* a ring under 4 KiB: half the ring */
	assert_false(due(1000, 500, 1000, SMC_CDC_WRITE_BLOCKED));
	assert_true(due(1000, 501, 1000, SMC_CDC_WRITE_BLOCKED));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(encode_golden_bytes),
		cmocka_unit_test(encode_each_flag_at_its_bit),
		cmocka_unit_test(encode_zeroes_reserved),
		cmocka_unit_test(decode_golden_and_round_trip),
		cmocka_unit_test(decode_ignores_reserved),
		cmocka_unit_test(decode_rejects),
		cmocka_unit_test(cursors_checked_against_their_rings),
		cmocka_unit_test(seqno_wraparound),
		cmocka_unit_test(sender_rules),
		cmocka_unit_test(cons_update_limits),
		cmocka_unit_test(cons_update_truth_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
