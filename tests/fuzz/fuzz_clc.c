/*
 * fuzz_clc.c - libFuzzer target for the CLC codec (libsmcr/wire/smc_clc.c).
 *
 * Each input is used twice:
 *  - as the bytes of a received message: smc_clc_decode() must not crash or
 *    read past the input (libFuzzer hands us an exact-size heap copy, ASan
 *    watches it); whatever decodes must have been announced by its header
 *    (smc_clc_frame_length()), must re-encode - unless it is a later
 *    version's Proposal offering only that version - and the re-encoded
 *    message must decode and re-encode to the same bytes;
 *  - as the fields of a message to send, encoded into a heap buffer of a
 *    capacity the input also picks: the encoder must not write past it, and
 *    anything it produces must decode to the same message.  The input then
 *    flips a byte of that message and cuts it short, and the decoder gets
 *    the result: random bytes rarely make a well-framed Accept, this way
 *    every rule of every layout is exercised from the first run.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "smc_clc.h"

#define check(cond) do { if (!(cond)) abort(); } while (0)

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

/* encode(decode(buf)) is a fixed point: the canonical form of a message. */
static void check_canonical(const uint8_t *buf, size_t len)
{
	uint8_t again[SMC_CLC_MAX_LEN];
	struct smc_clc_msg msg;

	check(smc_clc_decode(buf, len, &msg) == SMCR_REASON_NONE);
	check(encode(again, sizeof(again), &msg) == (int)len);
	check(memcmp(again, buf, len) == 0);
}

static void fuzz_decoder(const uint8_t *data, size_t size)
{
	uint8_t out[SMC_CLC_MAX_LEN];
	struct smc_clc_msg msg;
	size_t total;
	int n;

	if (smc_clc_decode(data, size, &msg) != SMCR_REASON_NONE)
		return;
	check(smc_clc_frame_length(data, &total) == SMCR_REASON_NONE && total == size);
	check(msg.hdr.type >= SMC_CLC_PROPOSAL && msg.hdr.type <= SMC_CLC_DECLINE);
	check(msg.hdr.version >= SMC_CLC_V1);
	n = encode(out, sizeof(out), &msg);
	if (n < 0) {
		check(msg.hdr.type == SMC_CLC_PROPOSAL && msg.proposal.smc_type == SMC_TYPE_N &&
		      msg.hdr.version > SMC_CLC_V1);
		return;
	}
	check_canonical(out, (size_t)n);
}

/* The input's bytes, one field at a time; zeros once it runs out. */
struct source {
	const uint8_t *p;
	size_t left;
};

static void take(struct source *s, void *dst, size_t n)
{
	size_t k = n < s->left ? n : s->left;

	memcpy(dst, s->p, k);
	memset((uint8_t *)dst + k, 0, n - k);
	s->p += k;
	s->left -= k;
}

static uint64_t take_int(struct source *s, size_t n)
{
	uint8_t b[8];
	uint64_t v = 0;

	take(s, b, n);
	for (size_t i = 0; i < n; i++)
		v = v << 8 | b[i];
	return v;
}

static void take_local(struct source *s, struct smc_clc_local *lcl)
{
	take(s, lcl->peer_id, sizeof(lcl->peer_id));
	take(s, lcl->gid, sizeof(lcl->gid));
	take(s, lcl->mac, sizeof(lcl->mac));
}

static void take_message(struct source *s, struct smc_clc_msg *msg)
{
	memset(msg, 0, sizeof(*msg));
	msg->hdr.type = (uint8_t)(SMC_CLC_PROPOSAL + take_int(s, 1) % 4);
	switch (msg->hdr.type) {
	case SMC_CLC_PROPOSAL: {
		struct smc_clc_proposal *p = &msg->proposal;

		p->smc_type = (enum smc_type)(take_int(s, 1) % 5);     /* 4: out of range */
		take_local(s, &p->lcl);
		p->ism_gid = take_int(s, 8);
		p->outgoing_subnet = (uint32_t)take_int(s, 4);
		p->prefix_len = (uint8_t)take_int(s, 1);
		p->ipv6_prefix_count = (uint8_t)take_int(s, 1);
		for (size_t i = 0; i < SMC_CLC_MAX_V6_PREFIX; i++) {
			take(s, p->ipv6_prefix[i].prefix, sizeof(p->ipv6_prefix[i].prefix));
			p->ipv6_prefix[i].prefix_len = (uint8_t)take_int(s, 1);
		}
		break;
	}
	case SMC_CLC_ACCEPT:
	case SMC_CLC_CONFIRM: {
		struct smc_clc_accept_confirm *ac = &msg->accept_confirm;

		ac->smc_type = (enum smc_type)(take_int(s, 1) % 5);
		ac->first_contact = take_int(s, 1) & 1;
		if (ac->smc_type == SMC_TYPE_D) {
			ac->d.gid = take_int(s, 8);
			ac->d.token = take_int(s, 8);
			ac->d.dmbe_idx = (uint8_t)take_int(s, 1);
			ac->d.dmbe_size = (uint8_t)take_int(s, 1);
			ac->d.link_id = (uint32_t)take_int(s, 4);
		} else {
			take_local(s, &ac->r.lcl);
			ac->r.qpn = (uint32_t)take_int(s, 4);
			ac->r.rmb_rkey = (uint32_t)take_int(s, 4);
			ac->r.rmbe_idx = (uint8_t)take_int(s, 1);
			ac->r.rmbe_alert_token = (uint32_t)take_int(s, 4);
			ac->r.rmbe_size = (uint8_t)take_int(s, 1);
			ac->r.qp_mtu = (uint8_t)take_int(s, 1);
			ac->r.rmb_dma_addr = take_int(s, 8);
			ac->r.psn = (uint32_t)take_int(s, 4);
		}
		break;
	}
	default: {
		struct smc_clc_decline *d = &msg->decline;

		take(s, d->peer_id, sizeof(d->peer_id));
		d->peer_diagnosis = (uint32_t)take_int(s, 4);
		d->out_of_sync = take_int(s, 1) & 1;
		d->os_type = (uint8_t)take_int(s, 1);
		break;
	}
	}
}

/* A message the encoder made, with one byte flipped, cut to len bytes. */
static void fuzz_damaged(struct source *s, const uint8_t *msg, size_t n)
{
	size_t at = (size_t)take_int(s, 2) % n;
	uint8_t flip = (uint8_t)take_int(s, 1);
	size_t len = n - (size_t)take_int(s, 1) % (n + 1);
	uint8_t *copy = malloc(n);

	check(copy);
	memcpy(copy, msg, n);
	copy[at] ^= flip;
	fuzz_decoder(copy, len);
	free(copy);
}

static void fuzz_encoders(const uint8_t *data, size_t size)
{
	struct source s = { data, size };
	struct smc_clc_msg msg;
	size_t cap = (size_t)take_int(&s, 2) % (SMC_CLC_MAX_LEN + 1);
	uint8_t *buf = malloc(cap ? cap : 1);
	int n;

	check(buf);
	take_message(&s, &msg);
	n = encode(buf, cap, &msg);
	check(n == -1 || (n >= SMC_CLC_HDR_LEN && (size_t)n <= cap));
	if (n > 0) {
		check_canonical(buf, (size_t)n);
		fuzz_damaged(&s, buf, (size_t)n);
	}
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_decoder(data, size);
	fuzz_encoders(data, size);
	return 0;
}
