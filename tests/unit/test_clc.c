/*
 * Unit tests of the CLC codec (libsmcr/wire/smc_clc.c): every field of every
 * layout against bytes written out by hand from RFC 7609 / Linux v1, round
 * trips, and every rule of the decoder and the encoders.  Messages are
 * decoded from heap copies of their exact length, so that ASan sees any
 * read past the end.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "golden_clc.h"
#include "reason.h"
#include "smc_clc.h"

static const struct smc_clc_local local_block = {
	.peer_id = { 1, 2, 3, 4, 5, 6, 7, 8 },
	.gid = { 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17,
		 0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f },
	.mac = { 0x20, 0x21, 0x22, 0x23, 0x24, 0x25 },
};

/* Decodes a heap copy of exactly len bytes. */
static enum smcr_reason decode(const uint8_t *bytes, size_t len, struct smc_clc_msg *msg)
{
	uint8_t *copy = malloc(len ? len : 1);
	enum smcr_reason rc;

	assert_non_null(copy);
	memcpy(copy, bytes, len);
	rc = smc_clc_decode(copy, len, msg);
	free(copy);
	return rc;
}

/* Encodes msg back, with the encoder its type calls for. */
static int encode(uint8_t *buf, size_t cap, const struct smc_clc_msg *msg)
{
	switch (msg->hdr.type) {
	case SMC_CLC_PROPOSAL:
		return smc_clc_encode_proposal(buf, cap, &msg->proposal);
	case SMC_CLC_ACCEPT:
		return smc_clc_encode_accept(buf, cap, &msg->accept_confirm);
	case SMC_CLC_CONFIRM:
		return smc_clc_encode_confirm(buf, cap, &msg->accept_confirm);
	default:
		return smc_clc_encode_decline(buf, cap, &msg->decline);
	}
}

/* Bytes re-framed to length k: body kept as far as it goes, zero-padded, trailer moved. */
static size_t reframe(const uint8_t *g, size_t n, size_t k, uint8_t *out)
{
	size_t body = (k < n ? k : n) - SMC_CLC_TRAILER_LEN;

	memset(out, 0, k);
	memcpy(out, g, body);
	out[5] = (uint8_t)(k >> 8);
	out[6] = (uint8_t)k;
	memcpy(out + k - SMC_CLC_TRAILER_LEN, g, SMC_CLC_TRAILER_LEN);
	return k;
}

/*
 * A Proposal from parts: base's first 40 bytes (header, local block),
 * iparea_offset bytes of fill, the IP area, the trailer.
 */
static size_t make_proposal(uint8_t *buf, const uint8_t *base, size_t iparea_offset, uint8_t fill,
			    const uint8_t *ip_area, size_t ip_area_len)
{
	size_t n = 40 + iparea_offset + ip_area_len + SMC_CLC_TRAILER_LEN;

	memcpy(buf, base, 40);
	buf[5] = (uint8_t)(n >> 8);
	buf[6] = (uint8_t)n;
	buf[38] = (uint8_t)(iparea_offset >> 8);
	buf[39] = (uint8_t)iparea_offset;
	memset(buf + 40, fill, iparea_offset);
	memcpy(buf + 40 + iparea_offset, ip_area, ip_area_len);
	memcpy(buf + n - SMC_CLC_TRAILER_LEN, base, SMC_CLC_TRAILER_LEN);
	return n;
}

static void assert_decodes_to(const uint8_t *bytes, size_t len, const uint8_t *canonical,
			      size_t canonical_len)
{
	uint8_t out[SMC_CLC_MAX_LEN];
	struct smc_clc_msg msg;

	assert_int_equal(decode(bytes, len, &msg), SMCR_REASON_NONE);
	assert_int_equal(encode(out, sizeof(out), &msg), canonical_len);
	assert_memory_equal(out, canonical, canonical_len);
}

static void assert_rejected(const uint8_t *bytes, size_t len, enum smcr_reason reason)
{
	struct smc_clc_msg msg;

	assert_int_equal(decode(bytes, len, &msg), reason);
}

/* ---- golden bytes: encoders ---- */

static void encode_proposals(void **state)
{
	struct smc_clc_proposal r = {
		.smc_type = SMC_TYPE_R, .lcl = local_block,
		.outgoing_subnet = 0xc0a80100, .prefix_len = 24,
	};
	struct smc_clc_proposal b = {
		.smc_type = SMC_TYPE_B, .lcl = local_block, .ism_gid = 0x0123456789abcdefull,
		.ipv6_prefix_count = 2,
		.ipv6_prefix = {
			{ { 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1 }, 64 },
			{ { 0xfd, 0x00, 0xab, 0xcd, 0xef, 0x01 }, 48 },
		},
	};
	struct smc_clc_proposal d = {
		.smc_type = SMC_TYPE_D, .ism_gid = 0x0123456789abcdefull,
		.outgoing_subnet = 0x7f000000, .prefix_len = 8,
	};
	uint8_t buf[SMC_CLC_MAX_LEN];

	(void)state;
	assert_int_equal(smc_clc_encode_proposal(buf, sizeof(buf), &r), sizeof(proposal_r));
	assert_memory_equal(buf, proposal_r, sizeof(proposal_r));
	assert_int_equal(smc_clc_encode_proposal(buf, sizeof(buf), &b), sizeof(proposal_b));
	assert_memory_equal(buf, proposal_b, sizeof(proposal_b));
	assert_int_equal(smc_clc_encode_proposal(buf, sizeof(buf), &d), sizeof(proposal_d));
	assert_memory_equal(buf, proposal_d, sizeof(proposal_d));
}

static void encode_accept_confirm_decline(void **state)
{
	struct smc_clc_accept_confirm acc = {
		.smc_type = SMC_TYPE_R, .first_contact = true,
		.r = {
			.lcl = local_block, .qpn = 0x0a0b0c, .rmb_rkey = 0x11223344,
			.rmbe_idx = 1, .rmbe_alert_token = 0x55667788, .rmbe_size = 2,
			.qp_mtu = 3, .rmb_dma_addr = 0x00007f0012345000ull, .psn = 0xabcdef,
		},
	};
	struct smc_clc_accept_confirm conf = {
		.smc_type = SMC_TYPE_D,
		.d = {
			.gid = 0x0123456789abcdefull, .token = 0xfedcba9876543210ull,
			.dmbe_idx = 0, .dmbe_size = 2, .link_id = 0x01020304,
		},
	};
	struct smc_clc_decline decl = {
		.peer_id = { 1, 2, 3, 4, 5, 6, 7, 8 },
		.peer_diagnosis = smcr_reason_code(SMCR_REASON_SYNCERR),
		.out_of_sync = true,
	};
	uint8_t buf[SMC_CLC_MAX_LEN];

	(void)state;
	assert_int_equal(smc_clc_encode_accept(buf, sizeof(buf), &acc),
			 SMCR_CLC_ACCEPT_CONFIRM_LEN);
	assert_memory_equal(buf, accept_r, sizeof(accept_r));
	assert_int_equal(smc_clc_encode_confirm(buf, sizeof(buf), &conf),
			 SMCD_CLC_ACCEPT_CONFIRM_LEN);
	assert_memory_equal(buf, confirm_d, sizeof(confirm_d));
	assert_int_equal(smc_clc_encode_decline(buf, sizeof(buf), &decl), SMC_CLC_DECLINE_LEN);
	assert_memory_equal(buf, decline_syncerr, sizeof(decline_syncerr));
}

/* ---- golden bytes: decoder, field by field ---- */

static void decode_proposals(void **state)
{
	struct smc_clc_msg m;

	(void)state;
	assert_int_equal(decode(proposal_r, sizeof(proposal_r), &m), SMCR_REASON_NONE);
	assert_int_equal(m.hdr.type, SMC_CLC_PROPOSAL);
	assert_int_equal(m.hdr.version, SMC_CLC_V1);
	assert_int_equal(m.proposal.smc_type, SMC_TYPE_R);
	assert_memory_equal(&m.proposal.lcl, &local_block, sizeof(local_block));
	assert_int_equal(m.proposal.outgoing_subnet, 0xc0a80100);
	assert_int_equal(m.proposal.prefix_len, 24);
	assert_int_equal(m.proposal.ipv6_prefix_count, 0);
	assert_int_equal(m.proposal.ism_gid, 0);

	assert_int_equal(decode(proposal_b, sizeof(proposal_b), &m), SMCR_REASON_NONE);
	assert_int_equal(m.proposal.smc_type, SMC_TYPE_B);
	assert_int_equal(m.proposal.ism_gid, 0x0123456789abcdefull);
	assert_int_equal(m.proposal.ipv6_prefix_count, 2);
	assert_memory_equal(m.proposal.ipv6_prefix[0].prefix, proposal_b + 88, 16);
	assert_int_equal(m.proposal.ipv6_prefix[0].prefix_len, 64);
	assert_memory_equal(m.proposal.ipv6_prefix[1].prefix, proposal_b + 105, 16);
	assert_int_equal(m.proposal.ipv6_prefix[1].prefix_len, 48);

	assert_int_equal(decode(proposal_d, sizeof(proposal_d), &m), SMCR_REASON_NONE);
	assert_int_equal(m.proposal.smc_type, SMC_TYPE_D);
	assert_int_equal(m.proposal.ism_gid, 0x0123456789abcdefull);
	assert_int_equal(m.proposal.outgoing_subnet, 0x7f000000);
	assert_int_equal(m.proposal.prefix_len, 8);
}

static void decode_accept_confirm_decline(void **state)
{
	struct smc_clc_msg m;

	(void)state;
	assert_int_equal(decode(accept_r, sizeof(accept_r), &m), SMCR_REASON_NONE);
	assert_int_equal(m.hdr.type, SMC_CLC_ACCEPT);
	assert_int_equal(m.accept_confirm.smc_type, SMC_TYPE_R);
	assert_true(m.accept_confirm.first_contact);
	assert_memory_equal(&m.accept_confirm.r.lcl, &local_block, sizeof(local_block));
	assert_int_equal(m.accept_confirm.r.qpn, 0x0a0b0c);
	assert_int_equal(m.accept_confirm.r.rmb_rkey, 0x11223344);
	assert_int_equal(m.accept_confirm.r.rmbe_idx, 1);
	assert_int_equal(m.accept_confirm.r.rmbe_alert_token, 0x55667788);
	assert_int_equal(m.accept_confirm.r.rmbe_size, 2);
	assert_int_equal(m.accept_confirm.r.qp_mtu, 3);
	assert_int_equal(m.accept_confirm.r.rmb_dma_addr, 0x00007f0012345000ull);
	assert_int_equal(m.accept_confirm.r.psn, 0xabcdef);

	assert_int_equal(decode(confirm_d, sizeof(confirm_d), &m), SMCR_REASON_NONE);
	assert_int_equal(m.hdr.type, SMC_CLC_CONFIRM);
	assert_int_equal(m.accept_confirm.smc_type, SMC_TYPE_D);
	assert_false(m.accept_confirm.first_contact);
	assert_int_equal(m.accept_confirm.d.gid, 0x0123456789abcdefull);
	assert_int_equal(m.accept_confirm.d.token, 0xfedcba9876543210ull);
	assert_int_equal(m.accept_confirm.d.dmbe_idx, 0);
	assert_int_equal(m.accept_confirm.d.dmbe_size, 2);
	assert_int_equal(m.accept_confirm.d.link_id, 0x01020304);

	assert_int_equal(decode(decline_syncerr, sizeof(decline_syncerr), &m), SMCR_REASON_NONE);
	assert_int_equal(m.hdr.type, SMC_CLC_DECLINE);
	assert_memory_equal(m.decline.peer_id, decline_syncerr + 8, 8);
	assert_int_equal(smcr_reason_from_code(m.decline.peer_diagnosis), SMCR_REASON_SYNCERR);
	assert_true(m.decline.out_of_sync);
	assert_int_equal(m.decline.os_type, 0);
}

static void round_trips(void **state)
{
	(void)state;
	for (size_t i = 0; i < NGOLDENS; i++)
		assert_decodes_to(goldens[i].bytes, goldens[i].len, goldens[i].bytes,
				  goldens[i].len);
}

static void every_reason_crosses_in_a_decline(void **state)
{
	uint8_t buf[SMC_CLC_DECLINE_LEN];
	struct smc_clc_msg m;

	(void)state;
	for (unsigned int r = 1; r < SMCR_REASON_COUNT; r++) {
		struct smc_clc_decline decl = {
			.peer_diagnosis = smcr_reason_code(r), .os_type = 2,
		};

		assert_int_equal(smc_clc_encode_decline(buf, sizeof(buf), &decl), sizeof(buf));
		assert_int_equal(buf[20], 0x20);
		assert_int_equal(decode(buf, sizeof(buf), &m), SMCR_REASON_NONE);
		assert_int_equal(smcr_reason_from_code(m.decline.peer_diagnosis), r);
		assert_false(m.decline.out_of_sync);
		assert_int_equal(m.decline.os_type, 2);
	}
}

/* ---- framing ---- */

static void frame_length(void **state)
{
	uint8_t hdr[SMC_CLC_HDR_LEN];
	size_t total;

	(void)state;
	for (size_t i = 0; i < NGOLDENS; i++) {
		total = 0;
		assert_int_equal(smc_clc_frame_length(goldens[i].bytes, &total), SMCR_REASON_NONE);
		assert_int_equal(total, goldens[i].len);
	}

	memcpy(hdr, proposal_r, sizeof(hdr));
	hdr[5] = SMC_CLC_MAX_LEN >> 8;
	hdr[6] = SMC_CLC_MAX_LEN & 0xff;
	assert_int_equal(smc_clc_frame_length(hdr, &total), SMCR_REASON_NONE);
	assert_int_equal(total, SMC_CLC_MAX_LEN);
	hdr[6]++;                                       /* one past the longest we read */
	assert_int_equal(smc_clc_frame_length(hdr, &total), SMCR_REASON_SYNCERR);
	hdr[5] = hdr[6] = 0xff;
	assert_int_equal(smc_clc_frame_length(hdr, &total), SMCR_REASON_SYNCERR);

	/* below each type's minimum */
	static const struct { uint8_t type, min; } mins[] = {
		{ SMC_CLC_PROPOSAL, 44 }, { SMC_CLC_ACCEPT, 48 },
		{ SMC_CLC_CONFIRM, 48 }, { SMC_CLC_DECLINE, 28 },
	};
	for (size_t i = 0; i < sizeof(mins) / sizeof(mins[0]); i++) {
		hdr[4] = mins[i].type;
		hdr[5] = 0;
		hdr[6] = mins[i].min;
		assert_int_equal(smc_clc_frame_length(hdr, &total), SMCR_REASON_NONE);
		for (unsigned int len = 0; len < mins[i].min; len++) {
			hdr[6] = (uint8_t)len;
			assert_int_equal(smc_clc_frame_length(hdr, &total), SMCR_REASON_SYNCERR);
		}
	}

	memcpy(hdr, decline_syncerr, sizeof(hdr));
	hdr[6] = 100;                                   /* long enough for every type */
	for (unsigned int type = 0; type < 256; type++) {
		hdr[4] = (uint8_t)type;
		assert_int_equal(smc_clc_frame_length(hdr, &total),
				 type >= 1 && type <= 4 ? SMCR_REASON_NONE : SMCR_REASON_SYNCERR);
	}
	memcpy(hdr, decline_syncerr, sizeof(hdr));
	for (unsigned int i = 0; i < 4; i++) {
		hdr[i] ^= 0x01;
		assert_int_equal(smc_clc_frame_length(hdr, &total), SMCR_REASON_SYNCERR);
		hdr[i] ^= 0x01;
	}
}

static void truncated_at_every_length(void **state)
{
	(void)state;
	for (size_t i = 0; i < NGOLDENS; i++)
		for (size_t k = 0; k < goldens[i].len; k++)
			assert_rejected(goldens[i].bytes, k, SMCR_REASON_SYNCERR);
}

/* Well framed (length field = buffer, trailer in place) but not the type's length. */
static void reframed_to_every_other_length(void **state)
{
	uint8_t buf[SMC_CLC_MAX_LEN];

	(void)state;
	for (size_t i = 0; i < NGOLDENS; i++) {
		size_t n = goldens[i].len;

		for (size_t k = SMC_CLC_HDR_LEN + SMC_CLC_TRAILER_LEN; k <= n + 64; k++)
			if (k != n)
				assert_rejected(buf, reframe(goldens[i].bytes, n, k, buf),
						SMCR_REASON_SYNCERR);
	}
}

static void oversized_and_length_field_mismatch(void **state)
{
	uint8_t buf[SMC_CLC_MAX_LEN + 1];

	(void)state;
	for (size_t i = 0; i < NGOLDENS; i++) {
		size_t n = goldens[i].len;

		/* more bytes than the header says */
		memcpy(buf, goldens[i].bytes, n);
		memcpy(buf + n, goldens[i].bytes, SMC_CLC_TRAILER_LEN);
		assert_rejected(buf, n + SMC_CLC_TRAILER_LEN, SMCR_REASON_SYNCERR);
		/* length field one off either way */
		memcpy(buf, goldens[i].bytes, n);
		buf[6]++;
		assert_rejected(buf, n, SMCR_REASON_SYNCERR);
		buf[6] -= 2;
		assert_rejected(buf, n, SMCR_REASON_SYNCERR);
	}
	/* longer than anything we read, even when framed */
	memset(buf, 0, sizeof(buf));
	assert_rejected(buf, reframe(proposal_r, sizeof(proposal_r), SMC_CLC_MAX_LEN + 1, buf),
			SMCR_REASON_SYNCERR);
}

static void eyecatchers(void **state)
{
	uint8_t buf[SMC_CLC_MAX_LEN];
	static const uint8_t smcr[4] = { SMCR_EC }, smcd[4] = { SMCD_EC };

	(void)state;
	for (size_t i = 0; i < NGOLDENS; i++) {
		size_t n = goldens[i].len;

		for (size_t at = 0; at < 4; at++) {
			/* header's wrong */
			memcpy(buf, goldens[i].bytes, n);
			buf[at] ^= 0x40;
			assert_rejected(buf, n, SMCR_REASON_SYNCERR);
			/* trailer's wrong */
			memcpy(buf, goldens[i].bytes, n);
			buf[n - 4 + at] ^= 0x40;
			assert_rejected(buf, n, SMCR_REASON_SYNCERR);
		}
		/* both known, but different */
		memcpy(buf, goldens[i].bytes, n);
		memcpy(buf + n - 4, buf[3] == 0xd9 ? smcd : smcr, 4);
		assert_rejected(buf, n, SMCR_REASON_SYNCERR);
	}

	/* Proposals and Declines may come framed "SMCD" (header and trailer) */
	memcpy(buf, decline_syncerr, sizeof(decline_syncerr));
	memcpy(buf, smcd, 4);
	memcpy(buf + sizeof(decline_syncerr) - 4, smcd, 4);
	assert_decodes_to(buf, sizeof(decline_syncerr), decline_syncerr, sizeof(decline_syncerr));
	memcpy(buf, proposal_b, sizeof(proposal_b));
	memcpy(buf, smcd, 4);
	memcpy(buf + sizeof(proposal_b) - 4, smcd, 4);
	assert_decodes_to(buf, sizeof(proposal_b), proposal_b, sizeof(proposal_b));

	/* an Accept/Confirm's eyecatcher is its transport's */
	memcpy(buf, accept_r, sizeof(accept_r));
	memcpy(buf, smcd, 4);
	memcpy(buf + sizeof(accept_r) - 4, smcd, 4);
	assert_rejected(buf, sizeof(accept_r), SMCR_REASON_SYNCERR);
	memcpy(buf, confirm_d, sizeof(confirm_d));
	memcpy(buf, smcr, 4);
	memcpy(buf + sizeof(confirm_d) - 4, smcr, 4);
	assert_rejected(buf, sizeof(confirm_d), SMCR_REASON_SYNCERR);
}

static void types(void **state)
{
	uint8_t buf[SMC_CLC_MAX_LEN];

	(void)state;
	memcpy(buf, decline_syncerr, sizeof(decline_syncerr));
	for (unsigned int type = 0; type < 256; type++) {
		if (type == SMC_CLC_DECLINE)
			continue;
		buf[4] = (uint8_t)type;
		assert_rejected(buf, sizeof(decline_syncerr), SMCR_REASON_SYNCERR);
	}
	/* a Confirm's bytes as an Accept and back: the type is all that differs */
	memcpy(buf, confirm_d, sizeof(confirm_d));
	buf[4] = SMC_CLC_ACCEPT;
	struct smc_clc_msg m;
	assert_int_equal(decode(buf, sizeof(confirm_d), &m), SMCR_REASON_NONE);
	assert_int_equal(m.hdr.type, SMC_CLC_ACCEPT);
}

static void versions(void **state)
{
	uint8_t buf[SMC_CLC_MAX_LEN];
	struct smc_clc_msg m;

	(void)state;
	for (size_t i = 0; i < NGOLDENS; i++) {
		memcpy(buf, goldens[i].bytes, goldens[i].len);
		buf[7] &= 0x0f;                         /* version 0 */
		assert_rejected(buf, goldens[i].len, SMCR_REASON_SYNCERR);
	}
	for (unsigned int v = 2; v < 16; v++) {
		memcpy(buf, accept_r, sizeof(accept_r));
		buf[7] = (uint8_t)(v << 4 | (buf[7] & 0x0f));
		assert_rejected(buf, sizeof(accept_r), SMCR_REASON_VERSMISMAT);
		memcpy(buf, confirm_d, sizeof(confirm_d));
		buf[7] = (uint8_t)(v << 4 | (buf[7] & 0x0f));
		assert_rejected(buf, sizeof(confirm_d), SMCR_REASON_VERSMISMAT);
	}

	/* a v2 Proposal offering only v2: framed, version and type N exposed */
	assert_int_equal(make_proposal(buf, proposal_r, 0, 0, proposal_r, 0), 44);
	buf[7] = 0x20 | SMC_TYPE_N;
	assert_int_equal(decode(buf, 44, &m), SMCR_REASON_NONE);
	assert_int_equal(m.hdr.version, 2);
	assert_int_equal(m.proposal.smc_type, SMC_TYPE_N);
	/* ... which in v1 is no offer at all */
	buf[7] = 0x10 | SMC_TYPE_N;
	assert_rejected(buf, 44, SMCR_REASON_SYNCERR);

	/* a v2 Proposal that also offers v1: its v1 part, extensions skipped */
	reframe(proposal_b, sizeof(proposal_b), sizeof(proposal_b) + 100, buf);
	memset(buf + sizeof(proposal_b) - 4, 0xee, 100);   /* v2 extensions */
	buf[7] = 0x23;
	assert_decodes_to(buf, sizeof(proposal_b) + 100, proposal_b, sizeof(proposal_b));
	assert_int_equal(decode(buf, sizeof(proposal_b) + 100, &m), SMCR_REASON_NONE);
	assert_int_equal(m.hdr.version, 2);
	/* ... but never shorter than its v1 part */
	reframe(proposal_b, sizeof(proposal_b), sizeof(proposal_b) - 1, buf);
	buf[7] = 0x23;
	assert_rejected(buf, sizeof(proposal_b) - 1, SMCR_REASON_SYNCERR);

	/* a v2 Decline (44 bytes: four more diagnosis codes) */
	reframe(decline_syncerr, sizeof(decline_syncerr), 44, buf);
	buf[7] = 0x28;
	assert_decodes_to(buf, 44, decline_syncerr, sizeof(decline_syncerr));
	assert_int_equal(decode(buf, 44, &m), SMCR_REASON_NONE);
	assert_int_equal(m.hdr.version, 2);
	assert_int_equal(m.decline.peer_diagnosis, 0x04000000);
}

static void proposal_ip_area(void **state)
{
	uint8_t buf[SMC_CLC_MAX_LEN];
	struct smc_clc_msg m;
	size_t n;

	(void)state;
	/* iparea_offset past the end, or past the SMC-D area */
	memcpy(buf, proposal_r, sizeof(proposal_r));
	for (unsigned int off = 1; off <= 0xffff; off += off < 64 ? 1 : 251) {
		buf[38] = (uint8_t)(off >> 8);
		buf[39] = (uint8_t)off;
		assert_rejected(buf, sizeof(proposal_r), SMCR_REASON_SYNCERR);
	}
	n = make_proposal(buf, proposal_r, 41, 0, proposal_r + 40, 8);
	assert_rejected(buf, n, SMCR_REASON_SYNCERR);

	/* SMC-R only: bytes before the IP area, up to the SMC-D area's size, are skipped */
	for (unsigned int off = 1; off <= 40; off++) {
		n = make_proposal(buf, proposal_r, off, 0x5a, proposal_r + 40, 8);
		assert_decodes_to(buf, n, proposal_r, sizeof(proposal_r));
		assert_int_equal(decode(buf, n, &m), SMCR_REASON_NONE);
		assert_int_equal(m.proposal.ism_gid, 0);
	}

	/* SMC-D offered: the IP area must follow the 40-byte SMC-D area exactly */
	for (unsigned int off = 0; off <= 41; off++) {
		n = make_proposal(buf, proposal_d, off, 0x01, proposal_d + 80, 8);
		if (off == 40) {
			memcpy(buf + 40, proposal_d + 40, 40);
			assert_decodes_to(buf, n, proposal_d, sizeof(proposal_d));
		} else {
			assert_rejected(buf, n, SMCR_REASON_SYNCERR);
		}
	}
}

static void proposal_ipv6_prefix_count(void **state)
{
	uint8_t buf[SMC_CLC_MAX_LEN];
	struct smc_clc_msg m;

	(void)state;
	for (unsigned int count = 0; count <= 255; count++) {
		size_t n = 52 + count * 17;

		if (n > SMC_CLC_MAX_LEN)
			n = 52;
		reframe(proposal_r, sizeof(proposal_r), n, buf);
		buf[47] = (uint8_t)count;
		memset(buf + 48, 0x77, n - 52);
		if (count <= SMC_CLC_MAX_V6_PREFIX) {
			assert_int_equal(decode(buf, n, &m), SMCR_REASON_NONE);
			assert_int_equal(m.proposal.ipv6_prefix_count, count);
			for (unsigned int i = 0; i < count; i++)
				assert_int_equal(m.proposal.ipv6_prefix[i].prefix_len, 0x77);
		} else {
			assert_rejected(buf, n, SMCR_REASON_SYNCERR);
		}
	}
}

static void accept_confirm_types(void **state)
{
	uint8_t buf[SMC_CLC_MAX_LEN];

	(void)state;
	memcpy(buf, accept_r, sizeof(accept_r));
	for (unsigned int t = SMC_TYPE_D; t <= SMC_TYPE_B; t++) {
		buf[7] = (uint8_t)((buf[7] & ~3u) | t);
		assert_rejected(buf, sizeof(accept_r), SMCR_REASON_SYNCERR);
	}
	memcpy(buf, confirm_d, sizeof(confirm_d));
	for (unsigned int t = 0; t <= SMC_TYPE_B; t++) {
		if (t == SMC_TYPE_D)
			continue;
		buf[7] = (uint8_t)((buf[7] & ~3u) | t);
		assert_rejected(buf, sizeof(confirm_d), SMCR_REASON_SYNCERR);
	}
	/* SMC-R in the SMC-D length, and the other way round */
	assert_rejected(buf, reframe(accept_r, sizeof(accept_r), 48, buf), SMCR_REASON_SYNCERR);
	assert_rejected(buf, reframe(confirm_d, sizeof(confirm_d), 68, buf), SMCR_REASON_SYNCERR);
}

static void reserved_bits_and_bytes_ignored(void **state)
{
	/* reserved bytes of each golden, and the header's reserved bit (0x04) */
	static const struct {
		const uint8_t *g;
		size_t n;
		uint8_t at[48];
		size_t count;
	} cases[] = {
		{ proposal_r, sizeof(proposal_r), { 45, 46 }, 2 },
		{ accept_r, sizeof(accept_r), { 51, 60 }, 2 },
		{ confirm_d, sizeof(confirm_d),
		  { 26, 27, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43 }, 14 },
		{ decline_syncerr, sizeof(decline_syncerr), { 21, 22, 23 }, 3 },
	};
	uint8_t buf[SMC_CLC_MAX_LEN];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memcpy(buf, cases[i].g, cases[i].n);
		buf[7] |= 0x04;
		for (size_t j = 0; j < cases[i].count; j++)
			buf[cases[i].at[j]] = 0xff;
		assert_decodes_to(buf, cases[i].n, cases[i].g, cases[i].n);
	}
	/* the SMC-D area after the GID; the low nibbles of dmbe_size and os_type */
	memcpy(buf, proposal_b, sizeof(proposal_b));
	memset(buf + 48, 0xff, 32);
	assert_decodes_to(buf, sizeof(proposal_b), proposal_b, sizeof(proposal_b));
	memcpy(buf, confirm_d, sizeof(confirm_d));
	buf[25] |= 0x0f;
	assert_decodes_to(buf, sizeof(confirm_d), confirm_d, sizeof(confirm_d));
	memcpy(buf, decline_syncerr, sizeof(decline_syncerr));
	buf[20] |= 0x0f;
	assert_decodes_to(buf, sizeof(decline_syncerr), decline_syncerr, sizeof(decline_syncerr));
	/* the flag bit means nothing in a Proposal */
	memcpy(buf, proposal_r, sizeof(proposal_r));
	buf[7] |= 0x08;
	assert_decodes_to(buf, sizeof(proposal_r), proposal_r, sizeof(proposal_r));
}

/* ---- encoders: small buffers and values that do not fit ---- */

static void encoders_never_write_past_cap(void **state)
{
	uint8_t buf[SMC_CLC_MAX_LEN];
	struct smc_clc_msg m;

	(void)state;
	for (size_t i = 0; i < NGOLDENS; i++) {
		assert_int_equal(decode(goldens[i].bytes, goldens[i].len, &m), SMCR_REASON_NONE);
		for (size_t cap = 0; cap < goldens[i].len; cap++) {
			memset(buf, 0xa5, sizeof(buf));
			assert_int_equal(encode(buf, cap, &m), -1);
			for (size_t j = 0; j < sizeof(buf); j++)
				assert_int_equal(buf[j], 0xa5);
		}
		assert_int_equal(encode(buf, goldens[i].len, &m), goldens[i].len);
	}
}

static void encoders_refuse_what_does_not_fit(void **state)
{
	uint8_t buf[SMC_CLC_MAX_LEN];
	struct smc_clc_msg m;

	(void)state;
	assert_int_equal(decode(proposal_b, sizeof(proposal_b), &m), SMCR_REASON_NONE);
	m.proposal.ipv6_prefix_count = SMC_CLC_MAX_V6_PREFIX;
	assert_int_equal(encode(buf, sizeof(buf), &m), SMC_CLC_PROPOSAL_MAX_LEN);
	m.proposal.ipv6_prefix_count = SMC_CLC_MAX_V6_PREFIX + 1;
	assert_int_equal(encode(buf, sizeof(buf), &m), -1);
	m.proposal.ipv6_prefix_count = 0;
	m.proposal.smc_type = SMC_TYPE_N;
	assert_int_equal(encode(buf, sizeof(buf), &m), -1);
	m.proposal.smc_type = (enum smc_type)7;
	assert_int_equal(encode(buf, sizeof(buf), &m), -1);

#define REFUSED(golden, field, value)                                               \
	do {                                                                        \
		assert_int_equal(decode(golden, sizeof(golden), &m), SMCR_REASON_NONE); \
		field = value;                                                      \
		assert_int_equal(encode(buf, sizeof(buf), &m), -1);                 \
	} while (0)
	REFUSED(accept_r, m.accept_confirm.r.qpn, 0x1000000);
	REFUSED(accept_r, m.accept_confirm.r.psn, 0x1000000);
	REFUSED(accept_r, m.accept_confirm.r.rmbe_size, 16);
	REFUSED(accept_r, m.accept_confirm.r.qp_mtu, 16);
	REFUSED(accept_r, m.accept_confirm.smc_type, SMC_TYPE_B);
	REFUSED(accept_r, m.accept_confirm.smc_type, SMC_TYPE_N);
	REFUSED(confirm_d, m.accept_confirm.d.dmbe_size, 16);
	REFUSED(decline_syncerr, m.decline.os_type, 16);
#undef REFUSED
}

static void constants(void **state)
{
	(void)state;
	assert_int_equal(SMC_CLC_WAIT_MS, 6000);
	assert_int_equal(SMC_CLC_WAIT_SHORT_MS, 1000);
	assert_int_equal(sizeof(proposal_r), 52);
	assert_int_equal(sizeof(proposal_d), 92);
	assert_int_equal(sizeof(accept_r), SMCR_CLC_ACCEPT_CONFIRM_LEN);
	assert_int_equal(sizeof(confirm_d), SMCD_CLC_ACCEPT_CONFIRM_LEN);
	assert_int_equal(sizeof(decline_syncerr), SMC_CLC_DECLINE_LEN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(constants),
		cmocka_unit_test(encode_proposals),
		cmocka_unit_test(encode_accept_confirm_decline),
		cmocka_unit_test(decode_proposals),
		cmocka_unit_test(decode_accept_confirm_decline),
		cmocka_unit_test(round_trips),
		cmocka_unit_test(every_reason_crosses_in_a_decline),
		cmocka_unit_test(frame_length),
		cmocka_unit_test(truncated_at_every_length),
		cmocka_unit_test(reframed_to_every_other_length),
		cmocka_unit_test(oversized_and_length_field_mismatch),
		cmocka_unit_test(eyecatchers),
		cmocka_unit_test(types),
		cmocka_unit_test(versions),
		cmocka_unit_test(proposal_ip_area),
		cmocka_unit_test(proposal_ipv6_prefix_count),
		cmocka_unit_test(accept_confirm_types),
		cmocka_unit_test(reserved_bits_and_bytes_ignored),
		cmocka_unit_test(encoders_never_write_past_cap),
		cmocka_unit_test(encoders_refuse_what_does_not_fit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
