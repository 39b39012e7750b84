/*
 * stats.c - this process's counters.
 */
#include <stdio.h>

#include "stats.h"

struct smcr_stats smcr_stats;

void smcr_stats_reset(void)
{
	atomic_store(&smcr_stats.tcp_listeners, 0);
	atomic_store(&smcr_stats.tcp_clients, 0);
	atomic_store(&smcr_stats.tcp_servers, 0);
	atomic_store(&smcr_stats.tcp_bytes_in, 0);
	atomic_store(&smcr_stats.tcp_bytes_out, 0);
}

size_t smcr_stats_format(char *buf, size_t size)
{
	int n = snprintf(buf, size,
			 "tcp: %llu listener, %llu client, %llu server connections; "
			 "%llu bytes in, %llu out",
			 (unsigned long long)atomic_load(&smcr_stats.tcp_listeners),
			 (unsigned long long)atomic_load(&smcr_stats.tcp_clients),
			 (unsigned long long)atomic_load(&smcr_stats.tcp_servers),
			 (unsigned long long)atomic_load(&smcr_stats.tcp_bytes_in),
			 (unsigned long long)atomic_load(&smcr_stats.tcp_bytes_out));
	return n < 0 ? 0 : (size_t)n < size ? (size_t)n : size - 1;
}
