/*
 * golden_clc.h - CLC messages written out by hand from RFC 7609 / Linux v1:
 * the golden bytes of the unit tests (test_clc.c), and the seeds of the
 * fuzz target fuzz_clc (tests/fuzz/write_seeds.c).  One copy, for both.
 */
#ifndef SMCR_GOLDEN_CLC_H
#define SMCR_GOLDEN_CLC_H

#include <stddef.h>
#include <stdint.h>

#define LOCAL_BLOCK                                                                 \
	0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,                 /* peer_id */ \
	0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17,                 /* gid */     \
	0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f,                               \
	0x20, 0x21, 0x22, 0x23, 0x24, 0x25                              /* mac */
#define SMCR_EC 0xe2, 0xd4, 0xc3, 0xd9
#define SMCD_EC 0xe2, 0xd4, 0xc3, 0xc4
#define ZEROS8 0, 0, 0, 0, 0, 0, 0, 0
#define ZEROS32 ZEROS8, ZEROS8, ZEROS8, ZEROS8

/* SMC-R only, IPv4 192.168.1.0/24: the shortest v1 Proposal. */
static const uint8_t proposal_r[] = {
	SMCR_EC, 0x01, 0x00, 52, 0x10,  /* type 1, length, version 1 | R */
	LOCAL_BLOCK,
	0x00, 0x00,                     /* iparea_offset: IP area follows */
	0xc0, 0xa8, 0x01, 0x00, 24,     /* subnet, prefix length */
	0x00, 0x00, 0,                  /* reserved, no IPv6 prefix */
	SMCR_EC,
};

/* Both, IPv6 with two prefixes. */
static const uint8_t proposal_b[] = {
	SMCR_EC, 0x01, 0x00, 126, 0x13, /* version 1 | B */
	LOCAL_BLOCK,
	0x00, 40,                       /* iparea_offset: past the SMC-D area */
	0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, /* ISM GID */
	ZEROS32,
	0, 0, 0, 0, 0, 0x00, 0x00, 2,   /* no IPv4 subnet; two IPv6 prefixes */
	0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1, ZEROS8, 64,
	0xfd, 0x00, 0xab, 0xcd, 0xef, 0x01, 0, 0, ZEROS8, 48,
	SMCR_EC,
};

/* SMC-D only: the local block is zeros, as Linux sends it. */
static const uint8_t proposal_d[] = {
	SMCR_EC, 0x01, 0x00, 92, 0x11,
	ZEROS8, ZEROS8, ZEROS8, 0, 0, 0, 0, 0, 0,
	0x00, 40,
	0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
	ZEROS32,
	0x7f, 0x00, 0x00, 0x00, 8, 0x00, 0x00, 0,
	SMCR_EC,
};

static const uint8_t accept_r[] = {
	SMCR_EC, 0x02, 0x00, 68, 0x18,  /* version 1 | first contact | R */
	LOCAL_BLOCK,
	0x0a, 0x0b, 0x0c,               /* qpn */
	0x11, 0x22, 0x33, 0x44,         /* rmb_rkey */
	0x01,                           /* rmbe_idx */
	0x55, 0x66, 0x77, 0x88,         /* rmbe_alert_token */
	0x23,                           /* rmbe_size 2, qp_mtu 3 */
	0x00,
	0x00, 0x00, 0x7f, 0x00, 0x12, 0x34, 0x50, 0x00, /* rmb_dma_addr */
	0x00,
	0xab, 0xcd, 0xef,               /* psn */
	SMCR_EC,
};

static const uint8_t confirm_d[] = {
	SMCD_EC, 0x03, 0x00, 48, 0x11,  /* version 1 | D */
	0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, /* gid */
	0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10, /* token */
	0x00,                           /* dmbe_idx */
	0x20,                           /* dmbe_size 2 */
	0x00, 0x00,
	0x01, 0x02, 0x03, 0x04,         /* link_id */
	0, 0, 0, 0, ZEROS8,
	SMCD_EC,
};

static const uint8_t decline_syncerr[] = {
	SMCR_EC, 0x04, 0x00, 28, 0x18,  /* version 1 | out of sync */
	0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
	0x04, 0x00, 0x00, 0x00,         /* SYNCERR */
	0x00, 0x00, 0x00, 0x00,
	SMCR_EC,
};

static const struct {
	const char *name;
	const uint8_t *bytes;
	size_t len;
} goldens[] = {
#define GOLDEN(a) { #a, a, sizeof(a) }
	GOLDEN(proposal_r), GOLDEN(proposal_b), GOLDEN(proposal_d),
	GOLDEN(accept_r), GOLDEN(confirm_d), GOLDEN(decline_syncerr),
#undef GOLDEN
};
#define NGOLDENS (sizeof(goldens) / sizeof(goldens[0]))

#endif
