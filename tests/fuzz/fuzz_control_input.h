/*
 * fuzz_control_input.h - the input format of fuzz_control.c, shared with
 * the seed writer (write_seeds.c): an input is a sequence of fixed-size
 * requests, each saying how to build one control message and which kind of
 * descriptor goes into each of its SCM_RIGHTS slots.
 */
#ifndef SMCR_FUZZ_CONTROL_INPUT_H
#define SMCR_FUZZ_CONTROL_INPUT_H

#include <stdint.h>

/* What arrives in a descriptor slot.  A slot byte is kind | pages << 4. */
enum fuzz_fd_kind {
	FUZZ_FD_MEMFD_SEALED,   /* sealed against shrink, grow and seal: as OFFER wants */
	FUZZ_FD_MEMFD_UNSEALED,
	FUZZ_FD_MEMFD_WRITE_SEALED,     /* also against writes: what OFFER forbids */
	FUZZ_FD_MEMFD_READ_ONLY,        /* sealed as OFFER wants, opened O_RDONLY */
	FUZZ_FD_STATS,          /* a statistics region as libsmcr makes it (pages != 0: bad layout) */
	FUZZ_FD_TCP_A,          /* one end of a connected loopback TCP connection */
	FUZZ_FD_TCP_B,          /* its other end */
	FUZZ_FD_TCP_LISTENER,
	FUZZ_FD_TCP_UNCONNECTED,
	FUZZ_FD_UNIX,
	FUZZ_FD_EVENTFD,
	FUZZ_FD_PIPE,
	FUZZ_FD_DEV_NULL,
	FUZZ_FD_MEMFD_NO_SEALING,       /* a tmpfs file that takes no seals */
	FUZZ_FD_KINDS
};

#define FUZZ_CONTROL_MAX_REQUESTS 16    /* an input's requests; those after are ignored */
#define FUZZ_CONTROL_SLOTS 7    /* more than a request carries: too many is a case too */

/* shape bits */
#define FUZZ_SHAPE_SLOTS        0x07u   /* how many slots are sent */
#define FUZZ_SHAPE_BAD_LENGTH   0x08u   /* the message is len_delta bytes off */
#define FUZZ_SHAPE_BAD_VERSION  0x10u
#define FUZZ_SHAPE_STRANGER     0x20u   /* WITHDRAW comes from another process than the owner */
#define FUZZ_SHAPE_ODD_BYTES    0x40u   /* .bytes is one more than whole pages */

struct fuzz_control_request {
	uint8_t shape;
	int8_t len_delta;
	uint8_t type;           /* enum smcr_control_type, or anything */
	uint8_t offer;          /* .token: of the offer-th OFFER accepted so far, else this byte */
	uint8_t bytes_pages;    /* .bytes in pages */
	uint8_t slot[FUZZ_CONTROL_SLOTS];
};

#endif
