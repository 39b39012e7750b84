/*
 * fuzz_cdc.c - libFuzzer target for the CDC codec (libsmcr/wire/smc_cdc.c),
 * the LEAVE codec (smc_leave_msg.c) and the cursor arithmetic
 * (smc_cursor.h).
 *
 * Every input is offered to smc_cdc_decode() and smc_leave_decode(); a
 * message either accepts must encode back to the same bytes with the
 * reserved ones cleared.  The first
 * 25 bytes also give two cursors, a ring size, byte counts and flags, on
 * which the cursor functions must agree with each other and the
 * flow-control rules must keep their promises.
 */
#include <stdlib.h>
#include <string.h>

#include "smc_cdc.h"
#include "smc_leave_msg.h"

#define CHECK(cond)				\
	do {					\
		if (!(cond))			\
			abort();		\
	} while (0)

static void check_codec(const uint8_t *data, size_t size)
{
	struct smc_cdc cdc, again;
	uint8_t wire[SMC_CDC_MSG_LEN], expect[SMC_CDC_MSG_LEN];

	if (smc_cdc_decode(data, size, &cdc) != 0)
		return;
	smc_cdc_encode(&cdc, wire);
	memcpy(expect, data, SMC_CDC_MSG_LEN);
	memset(expect + 8, 0, 2);	/* producer cursor's reserved half */
	memset(expect + 16, 0, 2);	/* consumer cursor's */
	expect[24] &= SMC_CDC_PROD_FLAGS;
	expect[25] &= SMC_CDC_CONN_STATE_FLAGS;
	memset(expect + 26, 0, SMC_CDC_MSG_LEN - 26);
	CHECK(memcmp(wire, expect, SMC_CDC_MSG_LEN) == 0);
	CHECK(smc_cdc_decode(wire, sizeof(wire), &again) == 0);
	smc_cdc_encode(&again, expect);
	CHECK(memcmp(wire, expect, SMC_CDC_MSG_LEN) == 0);
	CHECK(smc_cdc_seq_newer(cdc.seqno, (uint16_t)(cdc.seqno + 1)));
	CHECK(!smc_cdc_seq_newer(cdc.seqno, cdc.seqno));
	CHECK(!(smc_cdc_seq_newer(cdc.seqno, (uint16_t)cdc.token) &&
		smc_cdc_seq_newer((uint16_t)cdc.token, cdc.seqno)));
}

static void check_leave(const uint8_t *data, size_t size)
{
	struct smc_leave leave;
	uint8_t wire[SMC_LEAVE_MSG_LEN], expect[SMC_LEAVE_MSG_LEN];

	if (smc_leave_decode(data, size, &leave) != 0)
		return;
	smc_leave_encode(&leave, wire);
	memcpy(expect, data, SMC_LEAVE_MSG_LEN);
	if (leave.version == 1)
		memset(expect + 6, 0, 2);	/* reserved in version 1 */
	memset(expect + 12, 0, 2);	/* consumer cursor's reserved half */
	memset(expect + 20, 0, 2);	/* producer cursor's */
	CHECK(memcmp(wire, expect, SMC_LEAVE_MSG_LEN) == 0);
}

static struct smc_cursor cursor_in_ring(const uint8_t *p, uint32_t size)
{
	uint64_t packed;
	struct smc_cursor c;

	memcpy(&packed, p, sizeof(packed));
	c = smc_cursor_unpack(packed);
	CHECK(smc_cursor_pack(c) == (packed & 0xffffffffffffull));
	c.count %= size;
	return c;
}

/* a and b in a ring of size bytes: where b is within a ring of a. */
static void check_distance(uint32_t size, struct smc_cursor a, struct smc_cursor b)
{
	struct smc_ring_chunk chunk[2];
	uint32_t d = smc_cursor_diff(size, a, b), moved = 0;
	unsigned int n = smc_ring_split(size, a.count, d, chunk);

	CHECK(d <= size);
	CHECK(smc_cursor_equal(smc_cursor_add(a, size, d), b));
	CHECK(smc_cursor_newer(a, b) == (d > 0));
	CHECK(smc_ring_readable(size, a, b) + smc_ring_writable(size, a, b) == size);
	CHECK(n <= 2 && (n == 0) == (d == 0));
	for (unsigned int i = 0; i < n; i++) {
		CHECK(chunk[i].len > 0 && chunk[i].off < size && chunk[i].len <= size - chunk[i].off);
		CHECK(chunk[i].off == (i == 0 ? a.count : 0));
		moved += chunk[i].len;
	}
	CHECK(moved == d);
}

static void check_update_rules(uint32_t size, struct smc_cursor confirmed, uint32_t read,
			       uint32_t produced, uint8_t flags)
{
	struct smc_cdc_rx_view rx = {
		.rmb_size = size,
		.confirmed = confirmed,
		.cons = smc_cursor_add(confirmed, size, read),
		.peer_prod = smc_cursor_add(confirmed, size, produced),
		.peer_prod_flags = flags,
	};
	uint32_t limit = smc_cdc_cons_update_limit(size);
	bool due = smc_cdc_cons_update_due(&rx, false);

	CHECK(limit <= size / 2);
	CHECK(smc_cdc_cons_update_due(&rx, true));
	if (flags & SMC_CDC_CONS_UPDATE_REQ)
		CHECK(due);
	if (read <= limit)
		CHECK(due == !!(flags & SMC_CDC_CONS_UPDATE_REQ));
	/* a sender that filled the ring hears once the reader drained it */
	if (read == size && produced == size)
		CHECK(due);
	CHECK(smc_cdc_to_send(produced, size - read) <= produced);
	CHECK(smc_cdc_write_blocked(produced, size - read) ==
	      (produced > 0 && smc_cdc_to_send(produced, size - read) == size - read));
}

static void check_cursor_math(const uint8_t *data)
{
	uint32_t raw_size, size, produced, read;
	struct smc_cursor a, b, limit;
	enum smc_cursor_update verdict;

	memcpy(&raw_size, data + 16, sizeof(raw_size));
	size = raw_size % (1u << 21) + 1;
	a = cursor_in_ring(data, size);
	b = cursor_in_ring(data + 8, size);
	limit = smc_cursor_add(a, size, raw_size % (size + 1));

	CHECK(smc_cursor_valid(size, a) && smc_cursor_valid(size, b));
	CHECK(smc_cursor_within_ring(a, b) == (smc_cursor_equal(a, b) || smc_cursor_newer(a, b)));
	CHECK(!(smc_cursor_newer(a, b) && smc_cursor_newer(b, a)));
	if (smc_cursor_within_ring(a, b))
		check_distance(size, a, b);
	if (smc_cursor_within_ring(b, a))
		check_distance(size, b, a);

	verdict = smc_cursor_check_update(a, b, limit);
	if (verdict == SMC_CURSOR_ADVANCE)
		CHECK(smc_cursor_newer(a, b) && smc_cursor_within_ring(b, limit));
	else if (verdict == SMC_CURSOR_STALE)
		CHECK(smc_cursor_within_ring(b, a));
	else
		CHECK(!smc_cursor_within_ring(b, a) &&
		      !(smc_cursor_newer(a, b) && smc_cursor_within_ring(b, limit)));

	produced = (data[20] | (uint32_t)data[21] << 8) % (size + 1);
	read = (data[22] | (uint32_t)data[23] << 8) % (produced + 1);
	check_update_rules(size, a, read, produced, data[24]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_codec(data, size);
	check_leave(data, size);
	if (size >= 25)
		check_cursor_math(data);
	return 0;
}
