/*
 * golden_cdc.h - a CDC message written out by hand from RFC 7609: the
 * golden bytes of the unit tests (test_cdc.c; its struct sample says what
 * they hold), and a seed of the fuzz targets fuzz_cdc and fuzz_cdc_seq
 * (tests/fuzz/write_seeds.c).  One copy, for both.
 */
#ifndef SMCR_GOLDEN_CDC_H
#define SMCR_GOLDEN_CDC_H

#include <stdint.h>

#include "smc_cdc.h"

/* test_cdc.c's sample, byte for byte as RFC 7609 lays it out */
static const uint8_t sample_wire[SMC_CDC_MSG_LEN] = {
	0xfe, 44,				/* type, length */
	0x12, 0x34,				/* seqno */
	0xa1, 0xb2, 0xc3, 0xd4,			/* token */
	0x00, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, /* prod: reserved, wrap, count */
	0x00, 0x00, 0xf1, 0xf2, 0x00, 0x00, 0xff, 0xf3, /* cons */
	0x90,					/* write_blocked | cons_curs_upd_req */
	0xa0,					/* peer_done_writing | peer_conn_abort */
	/* 26..43 reserved, zero */
};

#endif
