/* Unit tests of the handshake outcome (libsmcr/shim/handshake.c) and the reason table (reason.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "handshake.h"
#include "handshake_flags.h"
#include "reason.h"

static void outcome_of_flags(void **state)
{
	(void)state;
	assert_int_equal(smcr_handshake_reason(false, 0), SMCR_REASON_POLICY);
	assert_int_equal(smcr_handshake_reason(true, SMCR_HS_ACTIVE | SMCR_HS_OPT_SENT |
						   SMCR_HS_PEER_OPT | SMCR_HS_NEGOTIATED),
			 SMCR_REASON_NONE);
	assert_int_equal(smcr_handshake_reason(true, SMCR_HS_PASSIVE | SMCR_HS_PEER_OPT |
						   SMCR_HS_OPT_SENT | SMCR_HS_NEGOTIATED),
			 SMCR_REASON_NONE);
	/* option sent, no echo */
	assert_int_equal(smcr_handshake_reason(true, SMCR_HS_ACTIVE | SMCR_HS_OPT_SENT),
			 SMCR_REASON_PEERNOSMC);
	/* server whose client sent no option */
	assert_int_equal(smcr_handshake_reason(true, SMCR_HS_PASSIVE), SMCR_REASON_PEERNOSMC);
	assert_int_equal(smcr_handshake_reason(true, SMCR_HS_ACTIVE | SMCR_HS_NO_SPACE),
			 SMCR_REASON_OPTUNSUPP);
}

static void rfc7609_codes(void **state)
{
	(void)state;
	assert_int_equal(smcr_reason_code(SMCR_REASON_MEM), 0x01010000u);
	assert_int_equal(smcr_reason_code(SMCR_REASON_PEERNOSMC), 0x03010000u);
	assert_int_equal(smcr_reason_code(SMCR_REASON_NOSMCDEV), 0x03030000u);
	assert_int_equal(smcr_reason_code(SMCR_REASON_OPTUNSUPP), 0x03060000u);
	assert_int_equal(smcr_reason_code(SMCR_REASON_DIFFPREFIX), 0x03070000u);
	assert_int_equal(smcr_reason_code(SMCR_REASON_VERSMISMAT), 0x030c0000u);
	assert_int_equal(smcr_reason_code(SMCR_REASON_SYNCERR), 0x04000000u);
	assert_int_equal(smcr_reason_code(SMCR_REASON_PEERDECL), 0x05000000u);
	assert_int_equal(smcr_reason_code(SMCR_REASON_INTERR), 0x09990000u);
	assert_string_equal(smcr_reason_name(SMCR_REASON_PEERNOSMC), "PEERNOSMC");
	assert_non_null(strstr(smcr_reason_text(SMCR_REASON_NODAEMON), "smcrd"));
}

static void codes_round_trip_and_are_unique(void **state)
{
	(void)state;
	for (unsigned int r = 1; r < SMCR_REASON_COUNT; r++) {
		assert_int_equal(smcr_reason_from_code(smcr_reason_code(r)), r);
		for (unsigned int q = r + 1; q < SMCR_REASON_COUNT; q++)
			assert_int_not_equal(smcr_reason_code(r), smcr_reason_code(q));
	}
	assert_int_equal(smcr_reason_from_code(0x12345678u), SMCR_REASON_NONE);
	assert_string_equal(smcr_reason_name((enum smcr_reason)9999), "INTERR");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(outcome_of_flags),
		cmocka_unit_test(rfc7609_codes),
		cmocka_unit_test(codes_round_trip_and_are_unique),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
