/*
 * daemon.h - the daemon's state, and the services its parts (control.c,
 * the loop, start-up) ask of it: memory limit, transports, negotiation maps,
 * status, reload (daemon.c).
 */
#ifndef SMCRD_DAEMON_H
#define SMCRD_DAEMON_H

#include <limits.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "control.h"
#include "pidfile.h"

struct smcr_control_status;
struct smcrd_interfaces;
struct smcrd_limits;
struct smcr_negotiation;

struct smcrd {
	char conf_path[PATH_MAX];       /* absolute: smcrd leaves its start directory */
	struct smcr_config cfg;
	struct smcr_pidfile pidfile;
	struct smcrd_control control;
	struct smcr_negotiation *negotiation;   /* the sock_ops program and its policy */
	struct smcrd_interfaces *interfaces;
	int signal_fd;
	struct pollfd *poll;            /* see fill_poll() in loop.c */
	size_t poll_capacity;
};

/* Logs what ("loaded", "reloaded") with the configuration's main figures. */
void smcrd_announce(const char *what, const struct smcrd *d);

/* max_memory and the quotas (quota.h), in bytes and clients. */
void smcrd_limits(const struct smcrd *d, struct smcrd_limits *l);
/* SMCR_CONTROL_SHM | SMCR_CONTROL_RDMA, as the configuration allows. */
uint32_t smcrd_transports(const struct smcrd *d);

/*
 * New descriptors for a registering process: fds[0] the handshake result map
 * (read-only), fds[1] the ownership map (writable).  0, or -1 with none made.
 */
int smcrd_negotiation_maps(struct smcrd *d, int fds[2]);

/* Re-reads the configuration; nonzero (and why) if it was refused. */
int smcrd_reload(struct smcrd *d, char *why, size_t size);

/* Fills the daemon's part of a status reply. */
void smcrd_describe(const struct smcrd *d, struct smcr_control_status *st);

#endif
