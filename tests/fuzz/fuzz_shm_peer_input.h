/*
 * fuzz_shm_peer_input.h - the input format of fuzz_shm_peer.c, shared with
 * the seed writer (write_seeds.c): steps, each an op byte (modulo
 * FUZZ_SHM_OP_COUNT) and FUZZ_SHM_ARG bytes of argument.
 */
#ifndef SMCR_FUZZ_SHM_PEER_INPUT_H
#define SMCR_FUZZ_SHM_PEER_INPUT_H

enum fuzz_shm_op {
	FUZZ_SHM_PEER_SEND,     /* len[2] (modulo a ring + 1), byte (bit 0: MSG_OOB) */
	FUZZ_SHM_SCRIBBLE,      /* at[2] (bit 7 of at[0]: within the first 256 bytes), n, 16 bytes */
	FUZZ_SHM_RECV,          /* len[2], flags (1 PEEK, 2 TRUNC, 4 WAITALL, 8 OOB), cut */
	FUZZ_SHM_SEND,          /* len[2], byte (bit 0: MSG_MORE) */
	FUZZ_SHM_PEER_RECV,     /* len[2], flags (2: MSG_TRUNC) */
	FUZZ_SHM_POLL,
	FUZZ_SHM_PEER_END,      /* bit 0 of the first byte: abort, else shutdown */
	FUZZ_SHM_OP_COUNT
};

#define FUZZ_SHM_ARG 19         /* little-endian numbers */

#endif
