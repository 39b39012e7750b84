/*
 * ration.h - what smcrd does for each uid's clients, rationed: at most an
 * allowance in each window of some seconds.  The lines clients make smcrd
 * log (smcrd_log.c) and the requests that read every process's regions
 * (STATUS, STATS, CONNS: control.c) are rationed so, for any uid but root,
 * since a uid's processes can reconnect and ask as often as they like.
 *
 * A table holds SMCRD_RATION_UIDS uids at once; a new one takes the place
 * of the uid whose window began longest ago (which then starts afresh: a
 * uid gains nothing by it but the others' forgetting, and there are only
 * as many uids as root made).
 */
#ifndef SMCRD_RATION_H
#define SMCRD_RATION_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define SMCRD_RATION_UIDS 64

struct smcrd_ration {
	uid_t uid;
	bool used;
	uint64_t window;                /* the second (CLOCK_MONOTONIC) it began */
	unsigned int taken, refused;    /* in this window */
};

struct smcrd_rations {
	unsigned int allowance;         /* per window */
	unsigned int window_s;
	struct smcrd_ration slot[SMCRD_RATION_UIDS];
};

#define SMCRD_RATIONS(per_window, seconds) \
	((struct smcrd_rations){ .allowance = (per_window), .window_s = (seconds) })

/*
 * uid's ration at now_s (seconds, CLOCK_MONOTONIC), a new window begun if
 * its last one is over; *ended_refused: what that last window refused (0
 * if none ended now).
 */
struct smcrd_ration *smcrd_ration_of(struct smcrd_rations *rs, uid_t uid, uint64_t now_s,
				     unsigned int *ended_refused);

/* One more of r's allowance: true; or, with none left, a refusal counted: false. */
bool smcrd_ration_take(const struct smcrd_rations *rs, struct smcrd_ration *r);

#endif
