/*
 * ration.c - per-uid allowances in windows (ration.h).
 */
#include "ration.h"

struct smcrd_ration *smcrd_ration_of(struct smcrd_rations *rs, uid_t uid, uint64_t now_s,
				     unsigned int *ended_refused)
{
	struct smcrd_ration *r = &rs->slot[0];

	*ended_refused = 0;
	for (size_t i = 0; i < SMCRD_RATION_UIDS; i++) {
		if (rs->slot[i].used && rs->slot[i].uid == uid) {
			r = &rs->slot[i];
			if (now_s - r->window < rs->window_s)
				return r;
			*ended_refused = r->refused;
			*r = (struct smcrd_ration){ .uid = uid, .used = true, .window = now_s };
			return r;
		}
		if (!rs->slot[i].used || (r->used && rs->slot[i].window < r->window))
			r = &rs->slot[i];
	}
	*r = (struct smcrd_ration){ .uid = uid, .used = true, .window = now_s };
	return r;
}

bool smcrd_ration_take(const struct smcrd_rations *rs, struct smcrd_ration *r)
{
	if (r->taken < rs->allowance) {
		r->taken++;
		return true;
	}
	r->refused++;
	return false;
}
