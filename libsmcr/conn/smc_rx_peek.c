/*
 * smc_rx_peek.c - the bytes a peek copied out of our RMB (smc_rx_peek.h).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "smc_rx_peek.h"

/* The smallest copy: a peek at a header should not cost a reallocation per byte. */
#define PEEK_MIN_CAP 256u

/* A name no other copy of any process has: the pid, and a number of this process. */
static uint64_t new_owner(void)
{
	static _Atomic uint32_t copies;

	return (uint64_t)(uint32_t)getpid() << 32 | atomic_fetch_add(&copies, 1);
}

static void drop(struct smc_conn *conn)
{
	free(conn->peek);
	conn->peek = NULL;
}

void smc_peek_check(struct smc_conn *conn)
{
	struct smc_peek *p = conn->peek;

	/* a forked child inherits its parent's copy and name: not its own */
	if (p && (p->owner != conn->st->peek_owner || (uint32_t)(p->owner >> 32) != (uint32_t)getpid()))
		drop(conn);
}

size_t smc_peek_held(const struct smc_conn *conn, uint32_t d, size_t n, const uint8_t **at)
{
	const struct smc_peek *p = conn->peek;

	if (!p || d >= p->len)
		return 0;
	*at = p->bytes + p->off + d;
	return n < p->len - d ? n : p->len - d;
}

/* A copy with room for need bytes, holding what conn's held; NULL if there is no memory. */
static struct smc_peek *grown(struct smc_conn *conn, uint32_t need)
{
	struct smc_peek *old = conn->peek, *p;
	uint32_t cap = old && old->cap > PEEK_MIN_CAP / 2 ? 2 * old->cap : PEEK_MIN_CAP;

	if (cap < need)
		cap = need;
	if (cap > conn->rmb_size)
		cap = conn->rmb_size;
	p = malloc(sizeof(*p) + cap);
	if (!p)
		return NULL;
	*p = (struct smc_peek){ .owner = old ? old->owner : new_owner(), .cap = cap };
	if (old) {
		memcpy(p->bytes, old->bytes + old->off, old->len);
		p->len = old->len;
		free(old);
	}
	conn->peek = p;
	conn->st->peek_owner = p->owner;
	return p;
}

const uint8_t *smc_peek_keep(struct smc_conn *conn, uint32_t d, const uint8_t *src, uint32_t n,
			     int *err)
{
	struct smc_peek *p = conn->peek;
	uint32_t len = p ? p->len : 0;
	uint8_t *to;

	/* past a gap, or more than a ring (cursors another holder rewrote): from the ring */
	if (d != len || n > conn->rmb_size - len)
		return NULL;
	if (!p || p->cap - p->off - len < n) {
		p = grown(conn, len + n);
		if (!p) {
			*err = -ENOMEM;
			return NULL;
		}
	}
	to = p->bytes + p->off + len;
	memcpy(to, src, n);
	p->len += n;
	return to;
}

void smc_peek_consumed(struct smc_conn *conn, uint32_t n)
{
	struct smc_peek *p;

	smc_peek_check(conn);
	p = conn->peek;
	if (p && n < p->len) {
		p->off += n;
		p->len -= n;
		return;
	}
	/* read up, or read by a holder that did not peek: the bytes from rx_cons are nobody's copy */
	drop(conn);
	conn->st->peek_owner = 0;
}
