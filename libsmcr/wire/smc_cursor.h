/*
 * smc_cursor.h - ring cursors and ring arithmetic (RFC 7609 wrap:count).
 *
 * Payload moves through the receiver's RMB element, used as a ring of `size`
 * bytes.  A position in it is a cursor: count is the byte offset in the ring
 * (0..size-1), wrap counts the times the ring has wrapped, modulo 2^16.  The
 * producer cursor says how far the writer has filled the ring, the consumer
 * cursor how far the reader has emptied it; the bytes between them are the
 * readable data, so the producer is never more than one ring ahead of the
 * consumer.
 *
 * This file owns the arithmetic on cursors and ring offsets, shared by the
 * send path, the receive path and both transports.  A cursor that comes
 * from the peer is checked with smc_cursor_valid() and
 * smc_cursor_check_update() before it is applied; the other functions
 * assume what those two check.
 */
#ifndef SMCR_SMC_CURSOR_H
#define SMCR_SMC_CURSOR_H

#include <stdbool.h>
#include <stdint.h>

struct smc_cursor {
	uint16_t wrap;
	uint32_t count;
};

/* c is a position in a ring of size bytes. */
static inline bool smc_cursor_valid(uint32_t size, struct smc_cursor c)
{
	return c.count < size;
}

static inline bool smc_cursor_equal(struct smc_cursor a, struct smc_cursor b)
{
	return a.wrap == b.wrap && a.count == b.count;
}

/*
 * to is 0..size bytes ahead of from: at most one ring.  Within that distance
 * to's wrap is from's or the next one (65535 is followed by 0), and the
 * counts decide; any other wrap is a cursor at least a ring away.
 */
static inline bool smc_cursor_within_ring(struct smc_cursor from, struct smc_cursor to)
{
	uint16_t wraps = (uint16_t)(to.wrap - from.wrap);

	if (wraps == 0)
		return to.count >= from.count;
	if (wraps == 1)
		return to.count <= from.count;
	return false;
}

/*
 * new moves forward from old, by 1..size bytes.  An equal cursor moves
 * nothing; one that is behind old, or ahead by more than a ring, is not
 * newer.
 */
static inline bool smc_cursor_newer(struct smc_cursor old, struct smc_cursor new)
{
	return smc_cursor_within_ring(old, new) && !smc_cursor_equal(old, new);
}

enum smc_cursor_update {
	SMC_CURSOR_STALE,	/* equal to or up to a ring behind the last: ignore */
	SMC_CURSOR_ADVANCE,	/* moves forward without passing the limit: apply */
	SMC_CURSOR_BAD,		/* anything else: the peer broke the protocol */
};

/*
 * What to do with a cursor the peer sends: a cursor is applied only if it
 * moves forward from the last one applied, and never past limit.  For the
 * peer's producer cursor the limit is the consumer cursor last announced to
 * it plus one ring (it may not overwrite what we have not released); for its
 * consumer cursor, our producer cursor (it cannot have read what we have not
 * written).
 */
static inline enum smc_cursor_update smc_cursor_check_update(struct smc_cursor last,
							     struct smc_cursor update,
							     struct smc_cursor limit)
{
	if (smc_cursor_within_ring(update, last))
		return SMC_CURSOR_STALE;
	if (smc_cursor_within_ring(last, update) && smc_cursor_within_ring(update, limit))
		return SMC_CURSOR_ADVANCE;
	return SMC_CURSOR_BAD;
}

/* c moved n bytes forward in a ring of size bytes (n <= size). */
static inline struct smc_cursor smc_cursor_add(struct smc_cursor c, uint32_t size, uint32_t n)
{
	uint32_t to_end = size - c.count;

	if (n < to_end) {
		c.count += n;
	} else {
		c.count = n - to_end;
		c.wrap++;
	}
	return c;
}

/*
 * Bytes from old to new in a ring of size bytes, new being 0..size bytes
 * ahead (smc_cursor_within_ring).  Different wraps then mean new is on the
 * next lap, whether or not wrap rolled over from 65535 to 0.
 */
static inline uint32_t smc_cursor_diff(uint32_t size, struct smc_cursor old,
				       struct smc_cursor new)
{
	if (old.wrap == new.wrap)
		return new.count - old.count;
	return (size - old.count) + new.count;
}

/*
 * The packed form is one 64-bit word, so a cursor shared between threads or
 * processes is published with one atomic store and read with one atomic
 * load: count in bits 0..31, wrap in bits 32..47, bits 48..63 zero.  Read
 * as a big-endian number it is also the 8-byte cursor of a CDC message
 * (reserved, wrap, count), which is how smc_cdc.c puts it on the wire;
 * unpacking ignores bits 48..63, the wire's reserved field.
 */
static inline uint64_t smc_cursor_pack(struct smc_cursor c)
{
	return (uint64_t)c.wrap << 32 | c.count;
}

static inline struct smc_cursor smc_cursor_unpack(uint64_t packed)
{
	return (struct smc_cursor){ .wrap = (uint16_t)(packed >> 32), .count = (uint32_t)packed };
}

/* Bytes in the ring between the consumer and the producer. */
static inline uint32_t smc_ring_readable(uint32_t size, struct smc_cursor cons,
					 struct smc_cursor prod)
{
	return smc_cursor_diff(size, cons, prod);
}

/* Bytes the producer may write before it reaches the consumer. */
static inline uint32_t smc_ring_writable(uint32_t size, struct smc_cursor cons,
					 struct smc_cursor prod)
{
	return size - smc_ring_readable(size, cons, prod);
}

/* A contiguous piece of a ring: len bytes at offset off. */
struct smc_ring_chunk {
	uint32_t off;
	uint32_t len;
};

/*
 * Splits a transfer of n bytes (n <= size) starting at offset pos (< size)
 * into the pieces that are contiguous in the ring: none for n = 0, one if
 * it ends at or before the ring's end, else the part up to the end and the
 * rest from offset 0.  Returns the number of chunks filled in.
 */
static inline unsigned int smc_ring_split(uint32_t size, uint32_t pos, uint32_t n,
					  struct smc_ring_chunk chunk[2])
{
	uint32_t to_end = size - pos;

	if (n == 0)
		return 0;
	if (n <= to_end) {
		chunk[0] = (struct smc_ring_chunk){ .off = pos, .len = n };
		return 1;
	}
	chunk[0] = (struct smc_ring_chunk){ .off = pos, .len = to_end };
	chunk[1] = (struct smc_ring_chunk){ .off = 0, .len = n - to_end };
	return 2;
}

#endif
