/*
 * init.c - libsmcr's start and end inside the application's process.
 *
 * Start: give libsmcr's lines a descriptor of their own, read the logging
 * settings, learn whether a seccomp filter libsmcr never saw already runs
 * (base/filter.h), wire the layers' start-up callbacks (shim/descriptors.c),
 * learn the host tag while /proc is there, install the fork handling
 * (shim/fork.c), carry on with the SMC connections the process inherited
 * across exec, and put the standard streams among them on libsmcr's calls
 * (std_streams.c).  End: at
 * SMCR_LOG=info, one line saying what was seen, if the process used TCP.
 * Nothing here may print at the default level or change the process.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "descriptors.h"
#include "exit.h"
#include "filter.h"
#include "fork.h"
#include "handshake.h"
#include "log.h"
#include "real.h"
#include "smc_sock.h"
#include "spin.h"
#include "stats.h"
#include "std_streams.h"
#include "sys.h"

/*
 * A copy of the stderr this image started with, or -1: a network socket
 * there is a connection (an inetd-style server's), where a line of ours
 * would be bytes in the application's stream, and a closed one is nowhere.
 */
static int log_descriptor(void)
{
	int saved_errno = errno, domain = 0;
	socklen_t len = sizeof(domain);
	int fd = -1;

	if (REAL(getsockopt)(STDERR_FILENO, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0 ||
	    (domain != AF_INET && domain != AF_INET6))
		fd = smcr_sys_fd_aside(REAL(fcntl)(STDERR_FILENO, F_DUPFD_CLOEXEC, 0));
	errno = saved_errno;
	return fd;
}

__attribute__((constructor)) static void smcr_init(void)
{
	smcr_sys_own_memory();
	smcr_log_use_fd(log_descriptor());
	smcr_log_init();
	smcr_filter_learn_inherited();
	smcr_descriptors_init();
	smcr_sock_learn_host();
	smcr_spin_learn_cpus();
	smcr_fork_init();
	smcr_exit_watch();
	smcr_log(SMCR_LOG_DEBUG, "loaded into %s", program_invocation_short_name);
	smcr_handshake_adopt_inherited();
	smcr_std_streams_adopt();
}

__attribute__((destructor)) static void smcr_fini(void)
{
	struct smcr_stats_counts s;
	char summary[256];

	if (smcr_log_level < SMCR_LOG_INFO)
		return;
	uint64_t seen;

	smcr_stats_snapshot(&s);
	seen = s.tcp_listeners | s.tcp_clients | s.tcp_servers | s.tcp_bytes_in | s.tcp_bytes_out;
	for (unsigned int t = 0; t < SMCR_TRANSPORTS; t++)     /* a forked child's inherited SMC traffic */
		seen |= s.transport[t].bytes_in | s.transport[t].bytes_out;
	if (!seen)
		return;                 /* nothing to say about a process without TCP */
	smcr_stats_format(summary, sizeof(summary));
	smcr_log(SMCR_LOG_INFO, "%s: %s", program_invocation_short_name, summary);
}
