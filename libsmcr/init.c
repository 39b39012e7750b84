/*
 * init.c - libsmcr's start and end inside the application's process.
 *
 * Start: read the logging settings and arrange for forked children to count
 * their own traffic and register with smcrd on their own.  End: at
 * SMCR_LOG=info, one line saying what was seen, if the process used TCP.
 * Nothing here may print at the default level or change the process.
 */
#include <errno.h>
#include <pthread.h>

#include "control.h"
#include "log.h"
#include "stats.h"

__attribute__((constructor)) static void smcr_init(void)
{
	smcr_log_init();
	/* Child handlers run in the order registered: counters are private again
	   before control.c's handler registers the child. */
	pthread_atfork(NULL, NULL, smcr_stats_reset);
	smcr_control_init();
	smcr_log(SMCR_LOG_DEBUG, "loaded into %s", program_invocation_short_name);
}

__attribute__((destructor)) static void smcr_fini(void)
{
	struct smcr_stats_counts s;
	char summary[256];

	if (smcr_log_level < SMCR_LOG_INFO)
		return;
	smcr_stats_snapshot(&s);
	if (!(s.tcp_listeners | s.tcp_clients | s.tcp_servers | s.tcp_bytes_in | s.tcp_bytes_out))
		return;                 /* nothing to say about a process without TCP */
	smcr_stats_format(summary, sizeof(summary));
	smcr_log(SMCR_LOG_INFO, "%s: %s (every byte still went over TCP)",
		 program_invocation_short_name, summary);
}
