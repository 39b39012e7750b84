/*
 * survivors.c - the connections a process kept through an smcrd restart
 * (survivors.h): read from its statistics region, which it may rewrite at
 * any time, so every value is bounded here, and what it says later only
 * ever lowers the charge (control.c keeps the lower of the two).
 */
#include <stdlib.h>

#include "conn_record.h"
#include "survivors.h"

_Static_assert(SMCR_CONN_SLOTS <= 1u << 16, "a slot's number fits a survivor's");

/* The slots [0, high) that readers look at, bounded by the table. */
static uint32_t slots_used(const struct smcr_stats *s)
{
	uint32_t high = atomic_load_explicit(&s->conns.high, memory_order_relaxed);

	return high < SMCR_CONN_SLOTS ? high : SMCR_CONN_SLOTS;
}

/* The bytes record i of s holds as a survivor, into *v; 0 if it is none. */
static uint64_t survivor_bytes(const struct smcr_stats *s, uint32_t i, struct smcr_conn_view *v)
{
	return smcr_conn_record_read(&s->conns.slot[i], v) ? smcr_conn_buffer_bytes(v) : 0;
}

uint64_t smcrd_survivors_take(struct smcrd_survivors *sv, const struct smcr_stats *s)
{
	uint32_t high = slots_used(s), n = 0;
	struct smcr_conn_view v;
	uint64_t total = 0;

	smcrd_survivors_free(sv);
	for (uint32_t i = 0; i < high; i++)
		n += survivor_bytes(s, i, &v) != 0;
	sv->v = n ? calloc(n, sizeof(*sv->v)) : NULL;
	if (!sv->v)
		return 0;
	/* the process may change its table meanwhile: no more than n are taken */
	for (uint32_t i = 0; i < high && sv->n < n; i++) {
		uint64_t bytes = survivor_bytes(s, i, &v);
		if (!bytes)
			continue;       /* a transport and class that exist: they fit a byte */
		sv->v[sv->n++] = (struct smcrd_survivor){ .slot = (uint16_t)i, .fd = v.fd,
			.transport = (uint8_t)v.transport, .rmb_class = (uint8_t)v.rmb_class };
		total += bytes;         /* at most 4096 of 2 MiB and a page: no overflow */
	}
	return total;
}

/* What survivor o holds now: 0 if its record no longer shows that connection on SMC. */
static uint64_t still_held(const struct smcrd_survivor *o, const struct smcr_stats *s)
{
	struct smcr_conn_view v;
	uint64_t bytes = survivor_bytes(s, o->slot, &v);

	return bytes && v.fd == o->fd && v.transport == o->transport &&
	       v.rmb_class == o->rmb_class ? bytes : 0;
}

uint64_t smcrd_survivors_held(struct smcrd_survivors *sv, const struct smcr_stats *s)
{
	uint64_t total = 0;
	size_t kept = 0;

	for (size_t i = 0; i < sv->n; i++) {
		uint64_t bytes = still_held(&sv->v[i], s);
		if (!bytes)
			continue;
		total += bytes;
		sv->v[kept++] = sv->v[i];
	}
	sv->n = kept;
	if (!kept)
		smcrd_survivors_free(sv);
	return total;
}

void smcrd_survivors_free(struct smcrd_survivors *sv)
{
	free(sv->v);
	*sv = (struct smcrd_survivors){ 0 };
}
