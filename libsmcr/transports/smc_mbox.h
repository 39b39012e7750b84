/*
 * smc_mbox.h - a connection's CDC mailbox: the latest CDC its one writer
 * delivered, which readers copy without a lock (a seqlock: seq odd while
 * the writer writes, +2 per CDC).
 *
 * Both transports keep one.  Shared memory's is in the control page the
 * peer writes (smc_shm.c); RDMA's is the process's own, written by
 * whichever of its threads polls the link's CQ (smc_rdma.c).  Keeping only
 * the latest CDC loses nothing, since a CDC states the whole state
 * (smc_shm.c says why, field by field).
 *
 * Why no lock: a reader never waits for the writer.  So a hostile writer
 * (a peer that maps the page) can make reads fail but never hold one, and
 * a reader never sleeps in futex, which the seccomp filter of a process
 * that left SMC may forbid while it still reads its mailbox (smc_leave.h).
 */
#ifndef SMCR_SMC_MBOX_H
#define SMCR_SMC_MBOX_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "smc_cdc.h"

#define SMC_MBOX_WORDS ((SMC_CDC_MSG_LEN + 7) / 8)

struct smc_mbox {
	_Atomic uint32_t seq;
	_Atomic uint64_t msg[SMC_MBOX_WORDS];	/* the encoded CDC, zero-padded */
};

/*
 * Reads that a write tore (or found mid-write) before a read gives up: a
 * writer that rewrites seq without end must not hold us (and the
 * connection lock with us).  Giving up says "nothing new yet": each torn
 * read saw seq move past the caller's events() snapshot, so a caller about
 * to wait does not sleep; it releases the lock and fetches again.
 */
#define SMC_MBOX_READ_TRIES 64

/* The writer's store of msg: one writer at a time, as the owner of the mailbox rules. */
static inline void smc_mbox_write(struct smc_mbox *mbox, const uint8_t msg[SMC_CDC_MSG_LEN])
{
	uint64_t words[SMC_MBOX_WORDS] = { 0 };
	/* a writer that scribbled an odd seq gets an even one back */
	uint32_t seq = atomic_load_explicit(&mbox->seq, memory_order_relaxed) & ~1u;

	memcpy(words, msg, SMC_CDC_MSG_LEN);
	atomic_store_explicit(&mbox->seq, seq + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	for (unsigned int i = 0; i < SMC_MBOX_WORDS; i++)
		atomic_store_explicit(&mbox->msg[i], words[i], memory_order_relaxed);
	atomic_store_explicit(&mbox->seq, seq + 2, memory_order_release);
}

/* What moves once per CDC (twice: as it starts and as it ends): a waiter's snapshot. */
static inline uint32_t smc_mbox_seq(struct smc_mbox *mbox)
{
	return atomic_load_explicit(&mbox->seq, memory_order_acquire);
}

/*
 * Copies the latest CDC into msg if it is not the one *seen (0: none yet)
 * and a read of it was whole: true, and *seen is its seq.  Never waits.
 */
static inline bool smc_mbox_read(struct smc_mbox *mbox, uint32_t *seen,
				 uint8_t msg[SMC_CDC_MSG_LEN])
{
	uint64_t words[SMC_MBOX_WORDS];

	for (unsigned int tries = 0; tries < SMC_MBOX_READ_TRIES; tries++) {
		uint32_t seq = smc_mbox_seq(mbox);

		if (seq == *seen)
			return false;
		if (seq & 1)
			continue;
		for (unsigned int i = 0; i < SMC_MBOX_WORDS; i++)
			words[i] = atomic_load_explicit(&mbox->msg[i], memory_order_relaxed);
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&mbox->seq, memory_order_relaxed) == seq) {
			*seen = seq;
			memcpy(msg, words, SMC_CDC_MSG_LEN);
			return true;
		}
	}
	return false;
}

#endif
