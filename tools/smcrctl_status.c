/*
 * smcrctl_status.c - `smcrctl status`: what the running smcrd says of
 * itself: its configuration, the program attached, memory in use of
 * max_memory, shared-memory buffers and the registered processes (of the
 * caller's uid only, unless root: smcrd chooses).
 */
#include <stdio.h>
#include <unistd.h>

#include "control_proto.h"
#include "smcrctl.h"
#include "smcrctl_common.h"

int smcrctl_status(const struct smcrctl_args *a)
{
	(void)a;                        /* it asks smcrd, whatever the file */
	static struct smcr_control_status st;
	const double mib = 1024.0 * 1024.0;

	if (smcrctl_ask(SMCR_CONTROL_STATUS, 0, &st, sizeof(st))) {
		if (smcrctl_refusal())
			printf("smcrd:       running, refused: %s\n", smcrctl_refusal());
		else
			printf("smcrd:       not running (no answer on %s/%s)\n", smcr_rundir(),
			       SMCR_CONTROL_SOCKET);
		return EXIT_NO_DAEMON;
	}
	printf("smcrd:       running (pid %d), configuration %s\n", st.daemon_pid, st.conf_path);
	printf("enabled:     %u\n", st.enabled);
	printf("addresses:   %s\n", st.addrs[0] ? st.addrs : "none (ip_addr_list is empty)");
	if (st.prog_id)
		printf("negotiation: sock_ops program %u attached to %s\n", st.prog_id, st.cgroup);
	else
		printf("negotiation: no program attached\n");
	printf("memory:      %.1f MiB in use of max_memory %.0f MiB\n", st.head.bytes / mib,
	       st.head.limit / mib);
	printf("buffers:     %u offered, %u attached\n", st.offered, st.attached);
	if (geteuid() == 0)
		printf("processes:   %u registered\n", st.nprocs);
	else    /* smcrd lists a user's own only (SO_PEERCRED: the effective uid) */
		printf("processes:   %u registered by uid %u (only root sees every user's)\n",
		       st.nprocs, (unsigned)geteuid());
	if (st.nprocs)
		printf("  %8s %6s %12s  %s\n", "PID", "UID", "MEMORY", "COMMAND");
	for (uint32_t i = 0; i < st.nprocs && i < SMCR_CONTROL_STATUS_PROCS; i++) {
		char name[SMCRCTL_NAME_SIZE];
		printf("  %8d %6u %12llu  %s\n", st.procs[i].pid, st.procs[i].uid,
		       (unsigned long long)st.procs[i].granted, smcrctl_name(st.procs[i].comm, name));
	}
	return 0;
}
