/*
 * daemon.c - the services the running daemon offers its parts: the limits
 * and transports the configuration sets, the negotiation maps a registering
 * process gets, the daemon's part of a status reply, and reloading
 * smcr.conf.  It calls only downward (configuration, negotiation,
 * interfaces, log); control.c and the loop call it, never the reverse, so
 * no file of smcrd calls back into one that calls it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "control_proto.h"
#include "daemon.h"
#include "interfaces.h"
#include "negotiation.h"
#include "quota.h"
#include "smcrd_log.h"

void smcrd_announce(const char *what, const struct smcrd *d)
{
	smcrd_log(LOG_NOTICE,
		  "%s %s (enabled=%d, %zu addresses, %zu port ranges, max_memory=%u MB)", what,
		  d->conf_path, d->cfg.enabled, d->cfg.ip_addrs.n, d->cfg.ports.n,
		  d->cfg.max_memory_mb);
}

void smcrd_limits(const struct smcrd *d, struct smcrd_limits *l)
{
	const uint64_t memory = (uint64_t)d->cfg.max_memory_mb << 20;

	*l = (struct smcrd_limits){
		.memory = memory,
		.memory_per_user = memory * d->cfg.max_memory_per_user_pct / 100,
		.memory_per_process = memory * d->cfg.max_memory_per_process_pct / 100,
		.processes_per_user = d->cfg.max_processes_per_user,
	};
}

uint32_t smcrd_transports(const struct smcrd *d)
{
	return (d->cfg.shm ? SMCR_CONTROL_SHM : 0) | (d->cfg.rdma ? SMCR_CONTROL_RDMA : 0);
}

int smcrd_negotiation_maps(struct smcrd *d, int fds[2])
{
	fds[0] = smcr_negotiation_result_map_ro(d->negotiation);
	fds[1] = smcr_negotiation_owned_map(d->negotiation);
	if (fds[0] >= 0 && fds[1] >= 0)
		return 0;
	if (fds[0] >= 0)
		close(fds[0]);
	if (fds[1] >= 0)
		close(fds[1]);
	return -1;
}

void smcrd_describe(const struct smcrd *d, struct smcr_control_status *st)
{
	st->daemon_pid = (int32_t)getpid();
	st->enabled = d->cfg.enabled;
	st->prog_id = smcr_negotiation_prog_id(d->negotiation);
	snprintf(st->cgroup, sizeof(st->cgroup), "%s", smcr_negotiation_cgroup(d->negotiation));
	snprintf(st->conf_path, sizeof(st->conf_path), "%s", d->conf_path);
	smcrd_interfaces_describe(d->interfaces, &d->cfg, st->addrs, sizeof(st->addrs));
}

int smcrd_reload(struct smcrd *d, char *why, size_t size)
{
	struct smcr_config fresh;
	struct smcr_config_error err;

	if (smcr_config_load(d->conf_path, &fresh, &err)) {
		smcrd_log(LOG_WARNING, "reload refused: %s; keeping the running configuration",
			  err.message);
		snprintf(why, size, "%s", err.message);
		return -1;
	}
	if (smcr_negotiation_apply(d->negotiation, &fresh)) {
		snprintf(why, size, "installing the new policy: %s", strerror(errno));
		smcrd_log(LOG_WARNING, "reload refused: %s; keeping the running configuration", why);
		return -1;
	}
	d->cfg = fresh;
	smcrd_log_set_level(d->cfg.log_level);
	smcrd_announce("reloaded", d);
	smcrd_interfaces_check(d->interfaces, &d->cfg, true);
	return 0;
}
