/*
 * Unit tests of the connection records: their names and text
 * (common/conn_record.c), the process's table (conn_table.c: claim, dup,
 * close, traffic into the counters, a full table) and the sums that
 * include open connections (stats_sum.c).  The counters are the private
 * ones: no smcrd here.
 */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "conn_table.h"
#include "descriptors.h"
#include "smc_cdc.h"
#include "stats.h"

static int fresh(void **state)
{
	(void)state;
	smcr_fd_forget_range(0, SMCR_FD_MAX - 1);
	smcr_stats_reset();
	return 0;
}

static void state_names(void **state)
{
	(void)state;
	const unsigned int peer = SMCR_CONN_CLOSE_PEER_SHIFT;

	assert_string_equal(smcr_conn_state_name(SMCR_CONN_TCP, 0), "OPEN");
	assert_string_equal(smcr_conn_state_name(SMCR_CONN_CLC, 0), "CLC");
	assert_string_equal(smcr_conn_state_name(SMCR_CONN_RESET, 0), "RESET");
	assert_string_equal(smcr_conn_state_name(SMCR_CONN_SMC, 0), "ACTIVE");
	assert_string_equal(smcr_conn_state_name(SMCR_CONN_SMC, SMC_CDC_PEER_DONE_WRITING << peer),
			    "PEERCLOSED");
	assert_string_equal(smcr_conn_state_name(SMCR_CONN_SMC, SMC_CDC_PEER_DONE_WRITING),
			    "APPCLOSED");
	assert_string_equal(smcr_conn_state_name(SMCR_CONN_SMC, SMC_CDC_PEER_CONN_CLOSED |
					(SMC_CDC_PEER_DONE_WRITING << peer)), "CLOSED");
	assert_string_equal(smcr_conn_state_name(SMCR_CONN_SMC, SMC_CDC_PEER_CONN_ABORT << peer),
			    "ABORTED");
	assert_string_equal(smcr_conn_state_name(SMCR_CONN_SMC, SMCR_CONN_CLOSE_ERROR), "ABORTED");
	assert_string_equal(smcr_conn_state_name(99, 0), "?");
	assert_string_equal(smcr_conn_mode_name(SMCR_CONN_SMC, SMCR_TRANSPORT_SHM), "shm");
	assert_string_equal(smcr_conn_mode_name(SMCR_CONN_SMC, SMCR_TRANSPORT_RDMA), "SMC-R");
	assert_string_equal(smcr_conn_mode_name(SMCR_CONN_RESET, 0), "TCP");
	assert_string_equal(smcr_transport_name(SMCR_TRANSPORTS), "?");
}

static void text(void **state)
{
	(void)state;
	char buf[64];
	struct smcr_conn_endpoint v4 = { .family = AF_INET, .port = 6379 };
	struct smcr_conn_endpoint v6 = { .family = AF_INET6, .port = 443 }, none = { 0 };

	assert_string_equal(smcr_conn_cursor_str(smcr_conn_cursor_pack(4, 0), buf, sizeof(buf)),
			    "0004:00000000");
	assert_string_equal(smcr_conn_cursor_str(smcr_conn_cursor_pack(0xffff, 0x3ffff), buf,
						 sizeof(buf)), "ffff:0003ffff");
	inet_pton(AF_INET, "10.1.2.3", v4.addr);
	inet_pton(AF_INET6, "fd00::1", v6.addr);
	assert_string_equal(smcr_conn_endpoint_str(&v4, buf, sizeof(buf)), "10.1.2.3:6379");
	assert_string_equal(smcr_conn_endpoint_str(&v6, buf, sizeof(buf)), "[fd00::1]:443");
	assert_string_equal(smcr_conn_endpoint_str(&none, buf, sizeof(buf)), "?");
	assert_int_equal(smcr_rmb_class_bytes(4), 262144);
	assert_int_equal(smcr_rmb_class_bytes(SMCR_RMB_CLASSES), 0);
}

static uint32_t open_conn(int fd, enum smcr_conn_mode mode)
{
	smcr_fd_set(fd, SMCR_FD_TCP_CLIENT);
	uint32_t id = smcr_conn_table_open(fd, true, mode, SMCR_REASON_PEERNOSMC);
	smcr_fd_set_record(fd, id);
	return id;
}

static void open_dup_close(void **state)
{
	(void)state;
	struct smcr_stats *live = smcr_stats_now();
	struct smcr_conn_view v;
	struct smcr_stats_counts c;

	open_conn(10, SMCR_CONN_TCP);
	open_conn(11, SMCR_CONN_TCP);
	assert_int_equal(live->conns.in_use, 2);
	smcr_fd_copy(10, 20);                   /* dup: one connection, two descriptors */
	assert_int_equal(live->conns.in_use, 2);
	smcr_conn_table_tcp(10, false, 100);
	smcr_conn_table_tcp(20, false, 50);
	smcr_conn_table_tcp(11, true, 7);
	assert_true(smcr_conn_record_read(&live->conns.slot[0], &v));
	assert_int_equal(v.mode, SMCR_CONN_TCP);
	assert_int_equal(v.reason, SMCR_REASON_PEERNOSMC);
	assert_int_equal(v.bytes_out, 150);
	assert_int_equal(v.sends, 2);
	assert_int_equal(v.fd, 10);
	smcr_stats_snapshot(&c);                /* open connections count */
	assert_int_equal(c.tcp_bytes_out, 150);
	assert_int_equal(c.tcp_bytes_in, 7);
	smcr_fd_forget(10);
	assert_int_equal(live->conns.in_use, 2);        /* the dup holds it */
	smcr_fd_forget(20);
	assert_int_equal(live->conns.in_use, 1);
	assert_false(smcr_conn_record_read(&live->conns.slot[0], &v));
	assert_int_equal(atomic_load(&live->word[SMCR_STAT_WORD(tcp_bytes_out)]), 150);
	assert_int_equal(atomic_load(&live->word[SMCR_STAT_WORD(tcp_sends)]), 2);
	smcr_stats_snapshot(&c);                /* closed: counted once, from the counters */
	assert_int_equal(c.tcp_bytes_out, 150);
	assert_int_equal(c.tcp_bytes_in, 7);
	assert_int_equal(live->conns.peak, 2);
	assert_int_equal(open_conn(12, SMCR_CONN_TCP), 1);      /* the lowest free slot */
	smcr_fd_forget(11);
	smcr_fd_forget(12);
	assert_int_equal(live->conns.in_use, 0);
}

static void full_table(void **state)
{
	(void)state;
	struct smcr_stats *live = smcr_stats_now();

	for (int fd = 0; fd < SMCR_CONN_SLOTS; fd++)
		assert_int_equal(open_conn(fd, SMCR_CONN_TCP), fd + 1);
	assert_int_equal(open_conn(SMCR_CONN_SLOTS, SMCR_CONN_TCP), 0);
	assert_int_equal(atomic_load(&live->word[SMCR_STAT_WORD(untracked)]), 1);
	smcr_conn_table_tcp(SMCR_CONN_SLOTS, true, 9);  /* no record: straight into the counters */
	assert_int_equal(atomic_load(&live->word[SMCR_STAT_WORD(tcp_bytes_in)]), 9);
	smcr_fd_forget_range(0, SMCR_CONN_SLOTS);
	assert_int_equal(live->conns.in_use, 0);
	assert_int_equal(live->conns.high, SMCR_CONN_SLOTS);
}

static void counts_arithmetic(void **state)
{
	(void)state;
	struct smcr_stats_counts a = { .tcp_clients = 5, .transport[1].rmbs[6] = 2 };
	struct smcr_stats_counts b = { .tcp_clients = 7, .fallbacks[3] = 1, .rdma.wc_recv = 4 };

	smcr_stats_add_counts(&a, &b);
	assert_int_equal(a.tcp_clients, 12);
	assert_int_equal(a.fallbacks[3], 1);
	assert_int_equal(a.transport[1].rmbs[6], 2);
	assert_int_equal(a.rdma.wc_recv, 4);
	smcr_stats_sub_counts(&b, &a);          /* never below zero */
	assert_int_equal(b.tcp_clients, 0);
	assert_int_equal(b.fallbacks[3], 0);
	assert_int_equal(b.rdma.wc_recv, 0);
	/* the RDMA counters are words like the others, after the fallbacks */
	assert_int_equal(SMCR_STAT_WORD(fallbacks[0]) + SMCR_REASON_COUNT, SMCR_STAT_WORD(rdma));
	assert_int_equal(SMCR_STAT_WORD(rdma) + sizeof(struct smcr_stats_rdma) / sizeof(uint64_t),
			 SMCR_STATS_WORDS);
}

/* What the RDMA transport adds (smcr_stat_add) is in the snapshot and the exit line's sums. */
static void rdma_counters(void **state)
{
	(void)state;
	struct smcr_stats_counts c;

	smcr_stat_add(rdma.links, 2);
	smcr_stat_add(rdma.links_ended, 1);
	smcr_stat_add(rdma.wc_send, 5);
	smcr_stat_add(rdma.bytes_registered, 65536);
	smcr_stats_snapshot(&c);
	assert_int_equal(c.rdma.links - c.rdma.links_ended, 1);
	assert_int_equal(c.rdma.wc_send, 5);
	assert_int_equal(c.rdma.bytes_registered, 65536);
	smcr_stats_reset();                     /* a forked child counts from zero */
	smcr_stats_snapshot(&c);
	assert_int_equal(c.rdma.links, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(state_names),
		cmocka_unit_test(text),
		cmocka_unit_test_setup(open_dup_close, fresh),
		cmocka_unit_test_setup(full_table, fresh),
		cmocka_unit_test(counts_arithmetic),
		cmocka_unit_test_setup(rdma_counters, fresh),
	};
	smcr_descriptors_init();        /* the descriptor table holds records, as in libsmcr.so */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
