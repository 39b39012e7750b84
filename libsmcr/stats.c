/*
 * stats.c - this process's counters.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "stats.h"

struct smcr_stats smcr_stats;

void smcr_stats_reset(void)
{
	/* Only the forked child's single thread is running: a plain clear is enough. */
	memset(&smcr_stats, 0, sizeof(smcr_stats));
}

/* Appends to buf at *used, keeping it NUL-terminated and never overflowing. */
static void append(char *buf, size_t size, size_t *used, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void append(char *buf, size_t size, size_t *used, const char *fmt, ...)
{
	va_list ap;

	if (*used >= size - 1)
		return;
	va_start(ap, fmt);
	int n = vsnprintf(buf + *used, size - *used, fmt, ap);
	va_end(ap);
	if (n > 0)
		*used = *used + (size_t)n < size ? *used + (size_t)n : size - 1;
}

size_t smcr_stats_format(char *buf, size_t size)
{
	size_t used = 0;
	const char *sep = "; fallback:";

	if (!size)
		return 0;
	buf[0] = '\0';
	append(buf, size, &used,
	       "tcp: %llu listener, %llu client, %llu server connections; "
	       "%llu bytes in, %llu out; smc: %llu client, %llu server negotiated",
	       (unsigned long long)atomic_load(&smcr_stats.tcp_listeners),
	       (unsigned long long)atomic_load(&smcr_stats.tcp_clients),
	       (unsigned long long)atomic_load(&smcr_stats.tcp_servers),
	       (unsigned long long)atomic_load(&smcr_stats.tcp_bytes_in),
	       (unsigned long long)atomic_load(&smcr_stats.tcp_bytes_out),
	       (unsigned long long)atomic_load(&smcr_stats.smc_clients),
	       (unsigned long long)atomic_load(&smcr_stats.smc_servers));
	for (unsigned int r = 1; r < SMCR_REASON_COUNT; r++) {
		uint64_t n = atomic_load(&smcr_stats.fallbacks[r]);
		if (!n)
			continue;
		append(buf, size, &used, "%s %s %llu", sep, smcr_reason_name((enum smcr_reason)r),
		       (unsigned long long)n);
		sep = ",";
	}
	return used;
}
