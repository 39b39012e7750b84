/*
 * stats_cost - what a statistics update costs on the data path, per call
 * (a benchmark, not a test): the relaxed atomic add every call paid before
 * connection records existed, a plain TCP call's update of its record (two
 * relaxed adds), and an SMC call's count and publish of its record (plain
 * stores under the connection's lock, taken here as the call would hold it
 * anyway).  Prints nanoseconds per update, in this process's private
 * counters (no smcrd needed).
 *
 *   bench_stats_cost [CALLS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "conn_table.h"
#include "smc_shm.h"
#include "smc_transport.h"

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

/* Keeps the compiler from merging the loop's updates. */
#define BARRIER() __asm__ volatile("" ::: "memory")

int main(int argc, char **argv)
{
	const long calls = argc > 1 ? atol(argv[1]) : 50000000;
	const int tcp_fd = 5;
	struct smc_conn conn;
	struct smc_conn_state state;
	double t0;

	if (calls <= 0)
		return 2;
	smc_conn_init(&conn, &smc_shm_ops, &state, true);
	smcr_fd_set(tcp_fd, SMCR_FD_TCP_CLIENT);
	smcr_fd_set_record(tcp_fd, smcr_conn_table_open(tcp_fd, true, SMCR_CONN_TCP,
							 SMCR_REASON_PEERNOSMC));
	conn.record = smcr_conn_table_open(-1, true, SMCR_CONN_CLC, SMCR_REASON_NONE);

	t0 = now_ns();
	for (long i = 0; i < calls; i++) {
		smcr_stat_add(tcp_bytes_in, (i & 7) + 1);
		BARRIER();
	}
	printf("one relaxed atomic add (before records): %6.2f ns\n", (now_ns() - t0) / calls);
	t0 = now_ns();
	for (long i = 0; i < calls; i++) {
		smcr_conn_table_tcp(tcp_fd, true, (size_t)(i & 7) + 1);
		BARRIER();
	}
	printf("TCP call, its record (2 relaxed adds):   %6.2f ns\n", (now_ns() - t0) / calls);
	t0 = now_ns();
	for (long i = 0; i < calls; i++) {
		smcr_conn_table_moved(&conn, (size_t)(i & 7) + 1, 0);
		BARRIER();
	}
	printf("SMC call, count and publish its record:  %6.2f ns\n", (now_ns() - t0) / calls);
	smc_conn_destroy(&conn);
	return 0;
}
