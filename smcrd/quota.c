/*
 * quota.c - the per-user and per-process limits of smcrd's clients
 * (quota.h).
 */
#include <stdio.h>

#include "quota.h"

/* Whether held + bytes stays within cap, whatever bytes a client asked for. */
static bool within(uint64_t held, uint64_t bytes, uint64_t cap)
{
	return held <= cap && bytes <= cap - held;
}

static uint64_t memory_of_user(const struct smcrd_client *clients, size_t n, uid_t uid)
{
	uint64_t held = 0;

	for (size_t i = 0; i < n; i++)
		if (clients[i].uid == uid)
			held += clients[i].granted;
	return held;
}

bool smcrd_quota_allows(const struct smcrd_client *clients, size_t n,
			const struct smcrd_client *c, uint64_t bytes, const struct smcrd_limits *l,
			char *why, size_t size)
{
	if (c->uid == 0)
		return true;
	if (!within(c->granted, bytes, l->memory_per_process)) {
		snprintf(why, size, "max_memory_per_process reached: this process holds %llu of "
			 "%llu bytes", (unsigned long long)c->granted,
			 (unsigned long long)l->memory_per_process);
		return false;
	}
	uint64_t held = memory_of_user(clients, n, c->uid);
	if (!within(held, bytes, l->memory_per_user)) {
		snprintf(why, size, "max_memory_per_user reached: uid %u holds %llu of %llu bytes",
			 (unsigned int)c->uid, (unsigned long long)held,
			 (unsigned long long)l->memory_per_user);
		return false;
	}
	return true;
}

static uint64_t left(uint64_t held, uint64_t cap)
{
	return held < cap ? cap - held : 0;
}

uint64_t smcrd_quota_room(const struct smcrd_client *clients, size_t n,
			  const struct smcrd_client *c, const struct smcrd_limits *l)
{
	uint64_t own, user;

	if (c->uid == 0)
		return UINT64_MAX;
	own = left(c->granted, l->memory_per_process);
	user = left(memory_of_user(clients, n, c->uid), l->memory_per_user);
	return own < user ? own : user;
}

bool smcrd_quota_admits(const struct smcrd_client *clients, size_t n, uid_t uid,
			const struct smcrd_limits *l, char *why, size_t size)
{
	size_t of_user = 0;

	if (uid == 0)
		return true;
	for (size_t i = 0; i < n; i++)
		of_user += clients[i].uid == uid;
	if (of_user < l->processes_per_user)
		return true;
	snprintf(why, size, "max_processes_per_user reached: smcrd serves %zu processes of "
		 "uid %u already", of_user, (unsigned int)uid);
	return false;
}
