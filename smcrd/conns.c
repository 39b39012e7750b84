/*
 * conns.c - the CONNS pages (conns.h): a process sees its own user's
 * connections, root every user's.
 *
 * A position is a client's id (ids only grow) and a slot of its table:
 * id << 16 | slot.  A record is another process's memory: the number of
 * slots to read comes from it too, and is capped.
 */
#include <string.h>

#include "conns.h"

#define SLOT_BITS 16
_Static_assert(SMCR_CONN_SLOTS < 1u << SLOT_BITS, "a slot number fits a position");

/* The registered client viewer may see with the smallest id at least id; NULL: none. */
static const struct smcrd_client *next_client(const struct smcrd_client *clients, size_t n,
					      uid_t viewer, uint64_t id)
{
	const struct smcrd_client *best = NULL;

	for (size_t i = 0; i < n; i++)
		if (clients[i].stats && clients[i].id >= id && (!best || clients[i].id < best->id) &&
		    smcrd_client_visible(&clients[i], viewer))
			best = &clients[i];
	return best;
}

void smcrd_conns_page(const struct smcrd_client *clients, size_t nclients, uid_t viewer,
		      uint64_t where, struct smcr_control_conns *out)
{
	uint64_t id = where >> SLOT_BITS;
	uint32_t slot = (uint32_t)(where & ((1u << SLOT_BITS) - 1));
	const struct smcrd_client *c;

	out->n = 0;
	out->head.token = 0;
	for (; (c = next_client(clients, nclients, viewer, id)) != NULL; id = c->id + 1, slot = 0) {
		uint32_t high = atomic_load_explicit(&c->stats->conns.high, memory_order_relaxed);

		if (c->id != id)
			slot = 0;
		if (high > SMCR_CONN_SLOTS)
			high = SMCR_CONN_SLOTS;
		for (; slot < high; slot++) {
			struct smcr_control_conn *e = &out->conn[out->n];

			if (out->n == SMCR_CONTROL_CONNS_PAGE) {
				out->head.token = c->id << SLOT_BITS | slot;
				return;
			}
			if (!smcr_conn_record_read(&c->stats->conns.slot[slot], &e->c))
				continue;
			e->pid = c->pid;
			memcpy(e->comm, c->comm, sizeof(e->comm));
			out->n++;
		}
	}
}
