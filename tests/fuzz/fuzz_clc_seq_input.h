/*
 * fuzz_clc_seq_input.h - the input format of fuzz_clc_seq.c, shared with
 * the seed writer (write_seeds.c): a header that sets up one end of a CLC
 * exchange, then steps, each an op byte (modulo FUZZ_CLC_OP_COUNT) and
 * FUZZ_CLC_ARG bytes of argument.
 */
#ifndef SMCR_FUZZ_CLC_SEQ_INPUT_H
#define SMCR_FUZZ_CLC_SEQ_INPUT_H

#include <stdint.h>

struct fuzz_clc_seq_header {
	uint8_t role;           /* bit 0: server, else client */
	uint8_t offers;         /* enum smc_type (& 3) our fake transport offers */
	uint8_t fails;          /* FUZZ_CLC_FAIL_*: which of its steps fail */
	uint8_t other_host;     /* bit 0: the peer's GIDs carry another host tag */
};

#define FUZZ_CLC_FAIL_OFFERS    0x01u
#define FUZZ_CLC_FAIL_PREPARE   0x02u
#define FUZZ_CLC_FAIL_REACH     0x04u
#define FUZZ_CLC_FAIL_ATTACH    0x08u
#define FUZZ_CLC_FAIL_DESCRIBE  0x10u

enum fuzz_clc_op {
	/*
	 * A message the peer sends: type (1-4), smc_type, flags (1: first
	 * contact), cut (nonzero: only cut % its length bytes of it), flip
	 * (bytes 4-5: xor byte 5 into the byte at 4 % its length, if byte 5),
	 * token or diagnosis (bytes 6-9)
	 */
	FUZZ_CLC_MSG,
	FUZZ_CLC_RAW,           /* n (% 16), then n raw bytes */
	FUZZ_CLC_EOF,           /* the peer shuts down writing */
	FUZZ_CLC_RESET,         /* the peer closes with our messages unread: ECONNRESET */
	FUZZ_CLC_EXPIRE,        /* the CLC wait passes */
	FUZZ_CLC_WANT_SEND,     /* the application wants to write (smc_setup_want_send);
				   bit 0 of the first byte: the Proposal's wait then passes */
	FUZZ_CLC_OP_COUNT
};

#define FUZZ_CLC_ARG 17

#endif
