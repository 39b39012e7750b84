/*
 * quota.h - what one user and one process may take of smcrd: buffer memory
 * (max_memory_per_user, max_memory_per_process, shares of max_memory) and
 * control connections (max_processes_per_user), so that no local user can
 * take all of max_memory, or smcrd's descriptors and time, from the others.
 *
 * Root is exempt: it may change smcr.conf anyway, so a quota would stop
 * none of its processes from taking everything, only break its services.
 * A user's figures are summed over smcrd's clients at each question (no
 * second count to drift from theirs): a few hundred clients at most per
 * user, and a grant comes with a connection, not with each byte.
 */
#ifndef SMCRD_QUOTA_H
#define SMCRD_QUOTA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "control.h"

/* The running configuration's limits, in bytes and clients. */
struct smcrd_limits {
	uint64_t memory;                /* max_memory: the whole host */
	uint64_t memory_per_user;       /* of it, the most one uid but root's may hold */
	uint64_t memory_per_process;    /* the most one client of those may hold */
	uint32_t processes_per_user;    /* clients of one uid but root's */
};

/*
 * Whether c may hold bytes more under its user's and its own quota (clients
 * of smcrd: n); if not, why in why (size bytes, 0: not said).
 */
bool smcrd_quota_allows(const struct smcrd_client *clients, size_t n,
			const struct smcrd_client *c, uint64_t bytes, const struct smcrd_limits *l,
			char *why, size_t size);

/*
 * The most c may hold more under its user's and its own quota (UINT64_MAX
 * for root's).
 */
uint64_t smcrd_quota_room(const struct smcrd_client *clients, size_t n,
			  const struct smcrd_client *c, const struct smcrd_limits *l);

/* Whether smcrd may serve one more client of uid; if not, why in why. */
bool smcrd_quota_admits(const struct smcrd_client *clients, size_t n, uid_t uid,
			const struct smcrd_limits *l, char *why, size_t size);

#endif
