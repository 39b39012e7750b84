/* Unit tests of the ring cursor arithmetic (libsmcr/wire/smc_cursor.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "smc_cursor.h"

#define SIZE 1000u

static struct smc_cursor curs(uint16_t wrap, uint32_t count)
{
	return (struct smc_cursor){ .wrap = wrap, .count = count };
}

static void assert_cursor(struct smc_cursor c, uint16_t wrap, uint32_t count)
{
	assert_int_equal(c.wrap, wrap);
	assert_int_equal(c.count, count);
}

static void add_wraps_at_ring_end(void **state)
{
	(void)state;
	assert_cursor(smc_cursor_add(curs(3, 10), SIZE, 0), 3, 10);
	assert_cursor(smc_cursor_add(curs(3, 10), SIZE, 989), 3, 999);
	/* landing exactly on the end is offset 0 of the next lap */
	assert_cursor(smc_cursor_add(curs(3, 10), SIZE, 990), 4, 0);
	assert_cursor(smc_cursor_add(curs(3, 10), SIZE, 991), 4, 1);
	/* a whole ring: same offset, next lap */
	assert_cursor(smc_cursor_add(curs(3, 10), SIZE, SIZE), 4, 10);
	assert_cursor(smc_cursor_add(curs(3, 999), SIZE, 1), 4, 0);
	/* u16 wrap rolls over */
	assert_cursor(smc_cursor_add(curs(65535, 999), SIZE, 1), 0, 0);
	assert_cursor(smc_cursor_add(curs(65535, 500), SIZE, 700), 0, 200);
	/* the largest RMB-sized ring: no overflow near the top of u32 */
	assert_cursor(smc_cursor_add(curs(0, 0xfffffff0u), 0xffffffffu, 0xffffffffu), 1,
		      0xfffffff0u);
}

static void diff_across_wraps(void **state)
{
	(void)state;
	assert_int_equal(smc_cursor_diff(SIZE, curs(7, 100), curs(7, 100)), 0);
	assert_int_equal(smc_cursor_diff(SIZE, curs(7, 100), curs(7, 999)), 899);
	assert_int_equal(smc_cursor_diff(SIZE, curs(7, 900), curs(8, 0)), 100);
	assert_int_equal(smc_cursor_diff(SIZE, curs(7, 900), curs(8, 50)), 150);
	/* exactly one ring ahead */
	assert_int_equal(smc_cursor_diff(SIZE, curs(7, 400), curs(8, 400)), SIZE);
	/* across the u16 rollover */
	assert_int_equal(smc_cursor_diff(SIZE, curs(65535, 990), curs(0, 5)), 15);
	assert_int_equal(smc_cursor_diff(SIZE, curs(65535, 0), curs(0, 0)), SIZE);
	/* diff inverts add */
	for (uint32_t n = 0; n <= SIZE; n += 37)
		assert_int_equal(smc_cursor_diff(SIZE, curs(65535, 977),
						 smc_cursor_add(curs(65535, 977), SIZE, n)), n);
}

static void within_ring_and_newer(void **state)
{
	struct smc_cursor old = curs(9, 300);

	(void)state;
	/* equal: within a ring, moves nothing */
	assert_true(smc_cursor_within_ring(old, old));
	assert_false(smc_cursor_newer(old, old));
	/* forward on the same lap and on the next */
	assert_true(smc_cursor_newer(old, curs(9, 301)));
	assert_true(smc_cursor_newer(old, curs(9, SIZE - 1)));
	assert_true(smc_cursor_newer(old, curs(10, 0)));
	assert_true(smc_cursor_newer(old, curs(10, 299)));
	/* exactly one ring ahead (a full ring) is the farthest allowed */
	assert_true(smc_cursor_newer(old, curs(10, 300)));
	assert_false(smc_cursor_newer(old, curs(10, 301)));
	assert_false(smc_cursor_newer(old, curs(11, 0)));
	assert_false(smc_cursor_newer(old, curs(11, 300)));
	/* older */
	assert_false(smc_cursor_newer(old, curs(9, 299)));
	assert_false(smc_cursor_newer(old, curs(8, 999)));
	assert_false(smc_cursor_newer(old, curs(8, 300)));
	assert_false(smc_cursor_newer(old, curs(0, 300)));
	/* half the wrap space away either way is not newer */
	assert_false(smc_cursor_newer(old, curs(9 + 32768, 300)));
	/* the u16 rollover: 65535 is followed by 0 */
	assert_true(smc_cursor_newer(curs(65535, 900), curs(0, 10)));
	assert_true(smc_cursor_newer(curs(65535, 900), curs(0, 900)));
	assert_false(smc_cursor_newer(curs(65535, 900), curs(0, 901)));
	assert_false(smc_cursor_newer(curs(65535, 900), curs(1, 0)));
	assert_false(smc_cursor_newer(curs(0, 10), curs(65535, 900)));
	assert_true(smc_cursor_within_ring(curs(0, 10), curs(0, 10)));
	assert_false(smc_cursor_within_ring(curs(0, 10), curs(65535, 999)));
}

static void peer_update_verdicts(void **state)
{
	struct smc_cursor last = curs(65535, 900);
	/* e.g. the consumer cursor we last announced, (65535, 850), plus a ring */
	struct smc_cursor limit = curs(0, 850);

	(void)state;
	assert_int_equal(smc_cursor_check_update(last, last, limit), SMC_CURSOR_STALE);
	assert_int_equal(smc_cursor_check_update(last, curs(65535, 899), limit), SMC_CURSOR_STALE);
	/* exactly one ring behind is still just old */
	assert_int_equal(smc_cursor_check_update(last, curs(65534, 900), limit), SMC_CURSOR_STALE);
	assert_int_equal(smc_cursor_check_update(last, curs(65535, 901), limit), SMC_CURSOR_ADVANCE);
	assert_int_equal(smc_cursor_check_update(last, curs(0, 10), limit), SMC_CURSOR_ADVANCE);
	/* up to the limit itself, not one byte past it */
	assert_int_equal(smc_cursor_check_update(last, limit, limit), SMC_CURSOR_ADVANCE);
	assert_int_equal(smc_cursor_check_update(last, curs(0, 851), limit), SMC_CURSOR_BAD);
	/* more than a ring ahead of the last, even if the limit allowed it */
	assert_int_equal(smc_cursor_check_update(curs(5, 0), curs(6, 1), curs(7, 0)),
			 SMC_CURSOR_BAD);
	/* more than a ring behind */
	assert_int_equal(smc_cursor_check_update(last, curs(65534, 899), limit), SMC_CURSOR_BAD);
	assert_int_equal(smc_cursor_check_update(last, curs(100, 0), limit), SMC_CURSOR_BAD);
}

static void pack_is_the_wire_layout(void **state)
{
	struct smc_cursor c = curs(0xabcd, 0x12345678u);

	(void)state;
	assert_true(smc_cursor_pack(c) == 0x0000abcd12345678ull);
	assert_true(smc_cursor_equal(smc_cursor_unpack(smc_cursor_pack(c)), c));
	assert_true(smc_cursor_pack(curs(65535, 0xffffffffu)) == 0x0000ffffffffffffull);
	/* the wire's reserved bits are ignored */
	assert_cursor(smc_cursor_unpack(0xffff000100000002ull), 1, 2);
	assert_true(smc_cursor_equal(curs(1, 2), curs(1, 2)));
	assert_false(smc_cursor_equal(curs(1, 2), curs(2, 2)));
	assert_false(smc_cursor_equal(curs(1, 2), curs(1, 3)));
}

static void valid_only_inside_the_ring(void **state)
{
	(void)state;
	assert_true(smc_cursor_valid(SIZE, curs(0, 0)));
	assert_true(smc_cursor_valid(SIZE, curs(65535, SIZE - 1)));
	assert_false(smc_cursor_valid(SIZE, curs(0, SIZE)));
	assert_false(smc_cursor_valid(SIZE, curs(0, 0xffffffffu)));
	assert_false(smc_cursor_valid(0, curs(0, 0)));
}

static void readable_and_writable(void **state)
{
	(void)state;
	/* empty */
	assert_int_equal(smc_ring_readable(SIZE, curs(4, 250), curs(4, 250)), 0);
	assert_int_equal(smc_ring_writable(SIZE, curs(4, 250), curs(4, 250)), SIZE);
	/* exactly full: producer one ring ahead */
	assert_int_equal(smc_ring_readable(SIZE, curs(4, 250), curs(5, 250)), SIZE);
	assert_int_equal(smc_ring_writable(SIZE, curs(4, 250), curs(5, 250)), 0);
	assert_int_equal(smc_ring_readable(SIZE, curs(65535, 0), curs(0, 0)), SIZE);
	assert_int_equal(smc_ring_writable(SIZE, curs(65535, 0), curs(0, 0)), 0);
	/* data across the ring end and the u16 rollover */
	assert_int_equal(smc_ring_readable(SIZE, curs(65535, 900), curs(0, 100)), 200);
	assert_int_equal(smc_ring_writable(SIZE, curs(65535, 900), curs(0, 100)), 800);
	assert_int_equal(smc_ring_readable(SIZE, curs(4, 100), curs(4, 101)), 1);
	assert_int_equal(smc_ring_writable(SIZE, curs(4, 100), curs(4, 101)), SIZE - 1);
}

static void split_at_ring_end(void **state)
{
	struct smc_ring_chunk chunk[2] = { { 77, 77 }, { 77, 77 } };

	(void)state;
	assert_int_equal(smc_ring_split(SIZE, 400, 0, chunk), 0);
	assert_int_equal(chunk[0].off, 77); /* nothing touched */

	assert_int_equal(smc_ring_split(SIZE, 400, 100, chunk), 1);
	assert_int_equal(chunk[0].off, 400);
	assert_int_equal(chunk[0].len, 100);
	/* ends exactly at the ring's end: still one */
	assert_int_equal(smc_ring_split(SIZE, 400, 600, chunk), 1);
	assert_int_equal(chunk[0].off, 400);
	assert_int_equal(chunk[0].len, 600);
	/* one byte more wraps */
	assert_int_equal(smc_ring_split(SIZE, 400, 601, chunk), 2);
	assert_int_equal(chunk[0].off, 400);
	assert_int_equal(chunk[0].len, 600);
	assert_int_equal(chunk[1].off, 0);
	assert_int_equal(chunk[1].len, 1);
	/* a whole ring from offset 0 is one chunk, from elsewhere two */
	assert_int_equal(smc_ring_split(SIZE, 0, SIZE, chunk), 1);
	assert_int_equal(chunk[0].off, 0);
	assert_int_equal(chunk[0].len, SIZE);
	assert_int_equal(smc_ring_split(SIZE, SIZE - 1, SIZE, chunk), 2);
	assert_int_equal(chunk[0].off, SIZE - 1);
	assert_int_equal(chunk[0].len, 1);
	assert_int_equal(chunk[1].off, 0);
	assert_int_equal(chunk[1].len, SIZE - 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(add_wraps_at_ring_end),
		cmocka_unit_test(diff_across_wraps),
		cmocka_unit_test(within_ring_and_newer),
		cmocka_unit_test(peer_update_verdicts),
		cmocka_unit_test(pack_is_the_wire_layout),
		cmocka_unit_test(valid_only_inside_the_ring),
		cmocka_unit_test(readable_and_writable),
		cmocka_unit_test(split_at_ring_end),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
