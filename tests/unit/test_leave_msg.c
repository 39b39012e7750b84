/* Unit tests of the LEAVE message codec (libsmcr/wire/smc_leave_msg.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "golden_leave.h"
#include "smc_leave_msg.h"

static const struct smc_leave sample = {
	.version = SMC_LEAVE_VERSION,
	.flags = SMC_LEAVE_ANSWER,
	.reason = 0x03000400u,
	.cons = { .wrap = 0x0102, .count = 0x03040506u },
	.prod = { .wrap = 0xfffe, .count = 0x0003fff0u },
};

static void encode_golden_bytes(void **state)
{
	uint8_t out[SMC_LEAVE_MSG_LEN];

	(void)state;
	memset(out, 0x5a, sizeof(out));
	smc_leave_encode(&sample, out);
	assert_memory_equal(out, leave_sample_wire, sizeof(out));
}

static void decode_round_trip(void **state)
{
	struct smc_leave got;

	(void)state;
	memset(&got, 0x5a, sizeof(got));
	assert_int_equal(smc_leave_decode(leave_sample_wire, sizeof(leave_sample_wire), &got), 0);
	assert_int_equal(got.version, SMC_LEAVE_VERSION);
	assert_int_equal(got.flags, SMC_LEAVE_ANSWER);
	assert_int_equal(got.reason, sample.reason);
	assert_true(smc_cursor_equal(got.cons, sample.cons));
	assert_true(smc_cursor_equal(got.prod, sample.prod));
}

/* Version 1's flags field is reserved, and so are the cursors' upper halves. */
static void decode_ignores_reserved(void **state)
{
	uint8_t wire[SMC_LEAVE_MSG_LEN], again[SMC_LEAVE_MSG_LEN];
	struct smc_leave got;

	(void)state;
	memcpy(wire, leave_sample_wire, sizeof(wire));
	wire[4] = 1;
	wire[6] = wire[7] = wire[12] = wire[13] = wire[20] = wire[21] = 0xee;
	assert_int_equal(smc_leave_decode(wire, sizeof(wire), &got), 0);
	assert_int_equal(got.version, 1);
	assert_int_equal(got.flags, 0);
	smc_leave_encode(&got, again);
	assert_int_equal(again[6] | again[7], 0);
	assert_true(smc_cursor_equal(got.cons, sample.cons));
	assert_true(smc_cursor_equal(got.prod, sample.prod));
}

/* Any other magic, version or length, or size, or an unknown flag, is not LEAVE. */
static void decode_rejects(void **state)
{
	static const unsigned int framing[] = { 0, 1, 2, 3, 4, 5 };
	uint8_t wire[SMC_LEAVE_MSG_LEN + 1];
	struct smc_leave got;

	(void)state;
	memcpy(wire, leave_sample_wire, SMC_LEAVE_MSG_LEN);
	wire[SMC_LEAVE_MSG_LEN] = 0;
	assert_int_equal(smc_leave_decode(wire, SMC_LEAVE_MSG_LEN - 1, &got), -EMSGSIZE);
	assert_int_equal(smc_leave_decode(wire, SMC_LEAVE_MSG_LEN + 1, &got), -EMSGSIZE);
	for (size_t i = 0; i < sizeof(framing) / sizeof(framing[0]); i++) {
		memcpy(wire, leave_sample_wire, SMC_LEAVE_MSG_LEN);
		wire[framing[i]] ^= 0x01;
		assert_int_equal(smc_leave_decode(wire, SMC_LEAVE_MSG_LEN, &got), -EPROTO);
	}
	memcpy(wire, leave_sample_wire, SMC_LEAVE_MSG_LEN);
	wire[6] = 0x80;         /* a flag version 2 does not know */
	assert_int_equal(smc_leave_decode(wire, SMC_LEAVE_MSG_LEN, &got), -EPROTO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(encode_golden_bytes),
		cmocka_unit_test(decode_round_trip),
		cmocka_unit_test(decode_ignores_reserved),
		cmocka_unit_test(decode_rejects),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
