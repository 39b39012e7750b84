/*
 * Unit tests of common/printable.c: what a hostile process name becomes
 * before smcrd logs it or smcrctl prints it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "printable.h"

static void plain_ascii_kept(void **state)
{
	char out[SMCR_PRINTABLE_SIZE(16)];

	(void)state;
	assert_string_equal(smcr_printable("redis-server", 16, out, sizeof(out)), "redis-server");
	assert_string_equal(smcr_printable("a b~\"'", 16, out, sizeof(out)), "a b~\"'");
}

static void controls_and_high_bytes_escaped(void **state)
{
	const char name[] = "\x1b[2J\x07\x7f\x9b\xff\xc3\xa9\\\n\t";
	char out[SMCR_PRINTABLE_SIZE(sizeof(name))];

	(void)state;
	assert_string_equal(smcr_printable(name, sizeof(name), out, sizeof(out)),
			    "\\x1b[2J\\x07\\x7f\\x9b\\xff\\xc3\\xa9\\\\\\x0a\\x09");
}

/* A comm of 16 bytes need not end in NUL: len bounds it. */
static void bounded_by_len_and_nul(void **state)
{
	char out[SMCR_PRINTABLE_SIZE(16)];

	(void)state;
	assert_string_equal(smcr_printable("abcdefghijklmnopq", 16, out, sizeof(out)),
			    "abcdefghijklmnop");
	assert_string_equal(smcr_printable("ab\0\x1b", 4, out, sizeof(out)), "ab");
}

/* Too little room: whole escapes only, never half of one. */
static void cut_between_escapes(void **state)
{
	char out[7];

	(void)state;
	assert_string_equal(smcr_printable("a\x1b\x1b", 3, out, sizeof(out)), "a\\x1b");
	assert_string_equal(smcr_printable("ab", 2, out, 1), "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(plain_ascii_kept),
		cmocka_unit_test(controls_and_high_bytes_escaped),
		cmocka_unit_test(bounded_by_len_and_nul),
		cmocka_unit_test(cut_between_escapes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
