/*
 * fuzz_cdc_seq_input.h - the input format of fuzz_cdc_seq.c, shared with
 * the seed writer (write_seeds.c): a header that sets up one connection,
 * then steps, each an op byte and that op's fixed-size argument.
 */
#ifndef SMCR_FUZZ_CDC_SEQ_INPUT_H
#define SMCR_FUZZ_CDC_SEQ_INPUT_H

#include <stdint.h>

#include "smc_cdc.h"

/*
 * A ring size byte: below FUZZ_RING_RMB, 1 + its value (tiny rings wrap
 * often, and cost little to check); else 16 KiB or 32 KiB, RMB sizes.
 * Cursors start at wrap:count (count taken modulo the ring).
 */
#define FUZZ_RING_RMB 0xe0

struct fuzz_cdc_seq_header {
	uint8_t rmb_size, peer_rmb_size;
	uint8_t rx_wrap[2], rx_count[2];        /* little-endian */
	uint8_t tx_wrap[2], tx_count[2];
	uint8_t oob_inline;
};

enum fuzz_cdc_seq_op {
	FUZZ_OP_CDC,            /* struct fuzz_cdc_seq_cdc: a CDC the peer makes from its view */
	FUZZ_OP_RAW_CDC,        /* SMC_CDC_MSG_LEN bytes, delivered as they are */
	FUZZ_OP_RECV,           /* struct fuzz_cdc_seq_io */
	FUZZ_OP_SEND,           /* struct fuzz_cdc_seq_io */
	FUZZ_OP_POLL,           /* no argument: readable, writable, urgent */
	FUZZ_OP_SHUTDOWN,       /* no argument */
	FUZZ_OP_COUNT
};

/* FUZZ_OP_CDC's control bits */
#define FUZZ_CDC_BAD_TOKEN      0x01u
#define FUZZ_CDC_BAD_COUNT      0x02u   /* the producer cursor's count is past the ring */
#define FUZZ_CDC_QUEUED         0x04u   /* not fetched now: several may queue up */

/*
 * The peer's producer cursor moved prod_delta bytes from the last one it
 * sent (negative: back), its consumer cursor cons_delta from the last one
 * we applied.  Little-endian.
 */
struct fuzz_cdc_seq_cdc {
	uint8_t control;
	uint8_t prod_delta[4], cons_delta[4];
	uint8_t prod_flags, conn_state_flags;
};

/* fuzz_cdc_seq_io.flags: MSG_PEEK, _TRUNC and _WAITALL for RECV, _MORE for SEND, _OOB both */
#define FUZZ_IO_PEEK    0x01u
#define FUZZ_IO_TRUNC   0x02u
#define FUZZ_IO_OOB     0x04u
#define FUZZ_IO_WAITALL 0x08u
#define FUZZ_IO_MORE    0x10u

/* RECV and SEND: len bytes (modulo two rings), non-blocking. */
struct fuzz_cdc_seq_io {
	uint8_t len[2];
	uint8_t flags;
};

#endif
