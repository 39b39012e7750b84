/*
 * golden_leave.h - a LEAVE message (an answer, version 2) as docs/PROTOCOL.md
 * section 10 lays it out (test_leave_msg.c's sample), for the unit test and the fuzz seeds.
 */
#ifndef SMCR_GOLDEN_LEAVE_H
#define SMCR_GOLDEN_LEAVE_H

#include <stdint.h>

static const uint8_t leave_sample_wire[28] = {
	0xe2, 'L', 'V', 'E', 2, 28, 0, 1,
	0x03, 0x00, 0x04, 0x00,
	0, 0, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06,
	0, 0, 0xff, 0xfe, 0x00, 0x03, 0xff, 0xf0,
};

#endif
