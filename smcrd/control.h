/*
 * control.h - smcrd's control socket: the registry of processes using smcr,
 * their buffer-memory grants against max_memory and their user's and their
 * own quotas (quota.h), the shared-memory buffers
 * they offer each other (shm_broker.h), their statistics (stats_agg.h),
 * status, statistics and reload requests
 * (protocol: common/control_proto.h).
 */
#ifndef SMCRD_CONTROL_H
#define SMCRD_CONTROL_H

#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "control_proto.h"
#include "shm_broker.h"
#include "stats_agg.h"
#include "survivors.h"

struct smcrd;

struct smcrd_client {
	int fd;
	uint64_t id;                    /* names it in the broker: pids and slots are reused */
	pid_t pid;                      /* of the process that connected (SO_PEERCRED) ... */
	int pidfd;                      /* ... pinned at accept (pidfd.h) */
	uid_t uid;
	uint64_t granted;               /* bytes of buffer memory it holds, offers included */
	uint64_t offered;               /* of which its offers hold (released only by WITHDRAW) */
	uint64_t carried;               /* of which its survivors hold: its connections from
					   before it registered again (survivors.h), returned
					   as they close, not by RELEASE */
	struct smcrd_survivors survivors;
	bool registered;                /* a process using smcr, not a passing smcrctl */
	const struct smcr_stats *stats; /* its counters, mapped read-only; NULL: none */
	int stats_fd;                   /* their memfd, to look for holes (stats_agg.h); or -1 */
	char comm[SMCR_COMM_LEN];
};

/*
 * Whether a process of uid viewer may see c's pid, name, connections and
 * figures (STATUS, CONNS): root sees every user's, others their own.  The
 * rest would show any user more than ss(8) shows of another's sockets
 * (cursors, bytes, buffers), and the processes that hidepid hides.
 */
static inline bool smcrd_client_visible(const struct smcrd_client *c, uid_t viewer)
{
	return viewer == 0 || c->uid == viewer;
}

struct smcrd_control {
	int listen_fd;
	int spare_fd;                   /* held for when descriptors run out (refuse_one) */
	char path[PATH_MAX];
	struct smcrd_client *clients;
	size_t nclients, capacity;
	uint64_t used;                  /* sum of all grants */
	uint64_t peak_used;             /* most of it at once, since start or reset */
	uint64_t next_id;
	struct smcrd_shm_broker shm;
	unsigned int recheck_rounds;    /* looks left at the broker's suspects (0: none due) */
	uint64_t recheck_at_ms;         /* CLOCK_MONOTONIC: the next */
	struct smcrd_stats_agg stats;
};

/* Binds RUNDIR/smcrd.sock (mode 0666: any local process may register). */
int smcrd_control_open(struct smcrd_control *ctl);

/* Closes every connection and removes the socket file. */
void smcrd_control_close(struct smcrd_control *ctl);

/* How many pollfd entries smcrd_control_pollfds fills. */
size_t smcrd_control_npoll(const struct smcrd_control *ctl);

/* Fills pfd[0 .. smcrd_control_npoll()-1]: the listener, then each client. */
void smcrd_control_pollfds(const struct smcrd_control *ctl, struct pollfd *pfd);

/* How long smcrd's poll() may sleep for the control socket's sake (-1: no limit). */
int smcrd_control_timeout(const struct smcrd_control *ctl);

/* Serves what poll() reported on the entries smcrd_control_pollfds filled. */
void smcrd_control_serve(struct smcrd_control *ctl, const struct pollfd *pfd, struct smcrd *d);

#endif
