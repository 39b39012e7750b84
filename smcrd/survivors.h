/*
 * survivors.h - the connections a process kept through an smcrd restart (or
 * while smcrd had cut it off), and the buffer memory they hold, charged to
 * it again when it registers anew.
 *
 * Registering again, libsmcr lists its connections in the statistics region
 * it sends with REGISTER (stats.c); registering for the first time, or as a
 * fork's child, the list there is empty.  Those on SMC then are its
 * survivors: their buffers were charged to it by the smcrd it registered
 * with before, and are charged by this one (control.c) until each
 * connection's record is freed or reused.  A process says all this of
 * itself: it may claim more (charged to itself, within its quotas) or
 * less; it cannot touch another's figures.
 */
#ifndef SMCRD_SURVIVORS_H
#define SMCRD_SURVIVORS_H

#include <stddef.h>
#include <stdint.h>

#include "stats_region.h"

/* 8 bytes: a user's processes may list 4096 each, kept in smcrd's memory. */
struct smcrd_survivor {
	uint16_t slot;                  /* its record in the process's connection table */
	uint8_t transport, rmb_class;   /* as the record said at REGISTER ... */
	int32_t fd;                     /* ... a record that says otherwise is another */
};

struct smcrd_survivors {
	struct smcrd_survivor *v;
	size_t n;
};

/*
 * Lists the connections on SMC in region s into *sv (emptied first); returns
 * the bytes their buffers hold (0 if the list could not be made).
 */
uint64_t smcrd_survivors_take(struct smcrd_survivors *sv, const struct smcr_stats *s);

/*
 * Forgets the survivors whose record no longer shows the same connection
 * on SMC (closed, or the slot reused); returns the bytes the rest hold.
 */
uint64_t smcrd_survivors_held(struct smcrd_survivors *sv, const struct smcr_stats *s);

void smcrd_survivors_free(struct smcrd_survivors *sv);

#endif
