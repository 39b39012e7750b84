/*
 * Unit tests of the connections a process kept through an smcrd restart
 * (smcrd/survivors.c): which records count and for how much, and how the
 * charge only goes down as they close, are reused or are rewritten.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "survivors.h"
#include "conn_record.h"

#define KiB 1024u

static struct smcr_stats *region(void)
{
	struct smcr_stats *s = calloc(1, sizeof(*s));

	assert_non_null(s);
	return s;
}

static void put(struct smcr_stats *s, uint32_t slot, uint32_t mode, uint32_t transport,
		uint32_t rmb_class, int32_t fd)
{
	struct smcr_conn_record *r = &s->conns.slot[slot];

	atomic_store(&r->peer_rmb_size, 64 * KiB);
	atomic_store(&r->mode, mode);
	atomic_store(&r->transport, transport);
	atomic_store(&r->rmb_class, rmb_class);
	atomic_store(&r->fd, fd);
	if (slot + 1 > atomic_load(&s->conns.high))
		atomic_store(&s->conns.high, slot + 1);
}

/*
 * shm: the memfd (a page and the RMB); RDMA: the RMB, a page, and the
 * staging buffer, as large as the peer's RMB (64 KiB here), at most 1 MiB.
 */
static void what_counts(void **state)
{
	struct smcr_stats *s = region();
	struct smcrd_survivors sv = { 0 };

	(void)state;
	put(s, 0, SMCR_CONN_SMC, SMCR_TRANSPORT_SHM, 4, 5);            /* 256 KiB */
	put(s, 1, SMCR_CONN_TCP, SMCR_TRANSPORT_SHM, 4, 6);            /* not on SMC */
	put(s, 2, SMCR_CONN_CLC, SMCR_TRANSPORT_SHM, 4, 7);            /* not yet */
	put(s, 3, SMCR_CONN_SMC, SMCR_TRANSPORT_RDMA, 0, 8);           /* 16 KiB */
	put(s, 4, SMCR_CONN_SMC, SMCR_TRANSPORT_SHM, 99, 9);           /* no such class */
	put(s, 5, SMCR_CONN_SMC, 7, 4, 10);                            /* no such transport */
	put(s, 6, SMCR_CONN_SMC, SMCR_TRANSPORT_RDMA, 0, 11);
	atomic_store(&s->conns.slot[6].peer_rmb_size, UINT32_MAX);     /* claims 4 GiB */
	assert_int_equal(smcrd_survivors_take(&sv, s), 4 * KiB + 256 * KiB +
			 4 * KiB + 16 * KiB + 64 * KiB + 4 * KiB + 16 * KiB + 1024 * KiB);
	assert_int_equal(sv.n, 3);
	smcrd_survivors_free(&sv);
	free(s);
}

/* Closed, reused for another connection, rewritten: each one's bytes go, never come back. */
static void only_down(void **state)
{
	struct smcr_stats *s = region();
	struct smcrd_survivors sv = { 0 };
	const uint64_t one = 4 * KiB + 64 * KiB;

	(void)state;
	for (uint32_t i = 0; i < 4; i++)
		put(s, i, SMCR_CONN_SMC, SMCR_TRANSPORT_SHM, 2, (int32_t)(10 + i));
	assert_int_equal(smcrd_survivors_take(&sv, s), 4 * one);
	assert_int_equal(smcrd_survivors_held(&sv, s), 4 * one);
	put(s, 0, SMCR_CONN_FREE, 0, 0, 0);                             /* closed */
	put(s, 1, SMCR_CONN_SMC, SMCR_TRANSPORT_SHM, 2, 99);            /* another connection */
	put(s, 2, SMCR_CONN_SMC, SMCR_TRANSPORT_SHM, 6, 12);            /* claims more */
	assert_int_equal(smcrd_survivors_held(&sv, s), one);
	put(s, 0, SMCR_CONN_SMC, SMCR_TRANSPORT_SHM, 2, 10);            /* the same again */
	assert_int_equal(smcrd_survivors_held(&sv, s), one);
	put(s, 3, SMCR_CONN_TCP, SMCR_TRANSPORT_SHM, 2, 13);
	assert_int_equal(smcrd_survivors_held(&sv, s), 0);
	assert_null(sv.v);
	free(s);
}

/* A table that says it used more slots than it has is read up to its end only. */
static void bounded(void **state)
{
	struct smcr_stats *s = region();
	struct smcrd_survivors sv = { 0 };

	(void)state;
	put(s, SMCR_CONN_SLOTS - 1, SMCR_CONN_SMC, SMCR_TRANSPORT_SHM, 6, 3);
	atomic_store(&s->conns.high, UINT32_MAX);
	assert_int_equal(smcrd_survivors_take(&sv, s), 4 * KiB + 1024 * KiB);
	assert_int_equal(sv.n, 1);
	smcrd_survivors_free(&sv);
	free(s);
	s = region();                                                   /* a first registration */
	assert_int_equal(smcrd_survivors_take(&sv, s), 0);
	smcrd_survivors_free(&sv);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(what_counts),
		cmocka_unit_test(only_down),
		cmocka_unit_test(bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
