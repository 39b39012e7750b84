/*
 * control_proto.h - the messages between smcrd and its clients (libsmcr in
 * every application, and smcrctl), over RUNDIR/smcrd.sock.
 *
 * A SOCK_SEQPACKET unix socket: one message per request, one per reply,
 * boundaries kept.  Any local process may connect; smcrd reads who it is with
 * SO_PEERCRED.  A process stays registered, and keeps its memory grants, for
 * as long as its connection is open: when the process dies the kernel closes
 * it and smcrd takes everything back.  Only root may ask for a reload.
 * A user's processes are held to its quotas (smcr.conf's
 * max_memory_per_user, max_memory_per_process, max_processes_per_user).
 *
 * Shared-memory buffers (OFFER, ATTACH, WITHDRAW): the two ends of a TCP
 * connection on one host exchange a receive buffer through smcrd.  The owner
 * offers a sealed memfd and the two ends of its wake-up channel (a pair of
 * unix stream sockets: rx, tx) together with its TCP socket; smcrd hands
 * the memfd and tx only to a process that shows it the other end of that
 * very connection (smcrd/shm_broker.c says why that suffices), and all of
 * an end's (with its connection state) back to a process that shows that
 * end's socket itself (RESUME: the socket changed hands).  tx is how that
 * peer wakes the owner when it sleeps: it sends a byte on it.  The token
 * names the offer and is no secret: the socket proves who may attach.
 */
#ifndef SMCR_CONTROL_PROTO_H
#define SMCR_CONTROL_PROTO_H

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "stats_region.h"

#define SMCR_RUNDIR_DEFAULT "/run/smcr"
#define SMCR_CONTROL_SOCKET "smcrd.sock"
#define SMCR_CONTROL_VERSION 8

/*
 * Where smcrd keeps its pid file and control socket: $SMCR_RUNDIR, else
 * /run/smcr.  Not taken from the environment of a set-user-ID or
 * capability-raised program (secure_getenv): its invoker must not choose
 * where it sends its connections.
 */
static inline const char *smcr_rundir(void)
{
	const char *env = secure_getenv("SMCR_RUNDIR");
	return env && *env ? env : SMCR_RUNDIR_DEFAULT;
}

enum smcr_control_type {
	SMCR_CONTROL_REGISTER = 1,      /* carries 0 or 1 fd: the process's statistics, a
					   memfd of smcr_stats_region_size() bytes holding
					   a struct smcr_stats (stats_region.h), sealed against
					   SHRINK and GROW, every page allocated; the
					   connections its table lists then are those the
					   process kept from an earlier registration (an smcrd
					   restarted), whose buffers it is charged for
					   (smcrd/survivors.h); reply carries
					   2 fds (SCM_RIGHTS): the handshake result map
					   (read-only), the ownership map.  A user with
					   max_processes_per_user processes served already
					   gets this reply unasked at connect, -EUSERS, and
					   smcrd hangs up */
	SMCR_CONTROL_GRANT,             /* reserve .bytes of buffer memory: -ENOMEM beyond
					   max_memory or the user's or process's quota */
	SMCR_CONTROL_RELEASE,           /* give .bytes back; no reply */
	SMCR_CONTROL_STATUS,            /* reply: struct smcr_control_status */
	SMCR_CONTROL_RELOAD,            /* root only: re-read the configuration file */
	SMCR_CONTROL_OFFER,             /* carries 5 fds: the TCP socket, a memfd of exactly
					   .bytes (whole pages) sealed against SHRINK, GROW
					   and SEAL, the owner's wake-up channel (rx, tx), the
					   connection's state (a memfd of a few pages, sealed
					   alike); .bytes are granted; reply: .token */
	SMCR_CONTROL_ATTACH,            /* carries 1 fd: the TCP socket; reply carries 2 fds:
					   the memfd and the channel's tx offered as .token (0:
					   whichever was) by the other end of that
					   connection, and .token; -EACCES for anything
					   else */
	SMCR_CONTROL_WITHDRAW,          /* carries 0 or 1 fd: the offering TCP socket (a
					   process other than the owner must show it); the
					   offer .token is over, its grant returned; no reply */
	SMCR_CONTROL_STATS,             /* reply: struct smcr_control_stats */
	SMCR_CONTROL_STATS_RESET,       /* root only: later STATS replies count from now */
	SMCR_CONTROL_RESUME,            /* carries 1 fd: a TCP socket; reply: .token of what
					   was offered on it, and 4 fds: its state, memfd and
					   channel (rx, tx), then 2 more if the other end
					   offered: that end's memfd and tx; -ENOENT if
					   nothing was */
	SMCR_CONTROL_CONNS,             /* .token: where to go on (0: from the start); reply:
					   struct smcr_control_conns, of the processes the
					   asker may see (as STATUS's) */
};

/* smcr_control_msg.transports */
#define SMCR_CONTROL_SHM        1u
#define SMCR_CONTROL_RDMA       2u

/* A request, and the head of every reply (same type as its request). */
struct smcr_control_msg {
	uint16_t version;               /* SMCR_CONTROL_VERSION */
	uint16_t type;                  /* enum smcr_control_type */
	int32_t result;                 /* replies: 0 or a negative errno */
	uint64_t bytes;                 /* GRANT/RELEASE amount; replies: memory in use */
	uint64_t limit;                 /* replies: max_memory in bytes */
	uint64_t token;                 /* OFFER reply, ATTACH, WITHDRAW: names an offer */
	uint32_t transports;            /* replies: SMCR_CONTROL_SHM | SMCR_CONTROL_RDMA, the
					   transports smcr.conf allows (keys shm, rdma) */
	uint32_t rmb_kib;               /* replies: smcr.conf's rmb_size, KiB: the receive
					   buffer of a connection whose application did not
					   ask for one (SO_RCVBUF) */
	char text[240];                 /* replies: why a request was refused */
};

/* A process's command name: the kernel's (TASK_COMM_LEN), any bytes, NUL-padded. */
#define SMCR_COMM_LEN 16

struct smcr_control_proc {
	int32_t pid;
	uint32_t uid;
	uint64_t granted;               /* bytes of buffer memory it holds */
	char comm[SMCR_COMM_LEN];
	uint32_t open;                  /* its connections open now */
	uint32_t peak;                  /* the most it had open at once */
	uint64_t bytes_in, bytes_out;   /* every transport, since it started */
	uint64_t smc;                   /* connections that went on over SMC */
	uint64_t fallbacks;             /* connections kept on TCP */
};

#define SMCR_CONTROL_STATUS_PROCS 256

struct smcr_control_status {
	struct smcr_control_msg head;
	int32_t daemon_pid;
	uint32_t prog_id;               /* the sock_ops program; 0: not attached */
	uint32_t nprocs;                /* registered processes the asker may see: all for root,
					   else its own uid's (procs[] holds the first ones) */
	uint32_t enabled;
	uint32_t offered;               /* shared-memory buffers offered, not withdrawn */
	uint32_t attached;              /* of which the peer has attached */
	char conf_path[PATH_MAX];
	char cgroup[PATH_MAX];          /* where the program is attached */
	char addrs[1024];               /* ip_addr_list entries and their interfaces */
	struct smcr_control_proc procs[SMCR_CONTROL_STATUS_PROCS];
};

/*
 * The host's statistics: every registered process's counters, live or
 * exited, less what they were at the last STATS_RESET.  head.bytes: memory
 * in use, head.limit: max_memory.
 */
struct smcr_control_stats {
	struct smcr_control_msg head;
	int64_t since;                  /* smcrd start or last reset, Unix seconds */
	uint64_t peak_memory;           /* most buffer memory in use at once */
	uint64_t connections;           /* TCP connections open in registered processes */
	uint64_t peak_connections;      /* most of those seen at once (sampled) */
	uint64_t processes;             /* registered now */
	uint64_t exited;                /* registered processes gone */
	uint64_t rdma_links;            /* RDMA links up in registered processes now */
	struct smcr_stats_counts counts;
};

/* One connection of a registered process (conn_record.h). */
struct smcr_control_conn {
	int32_t pid;
	char comm[SMCR_COMM_LEN];
	struct smcr_conn_view c;
};

#define SMCR_CONTROL_CONNS_PAGE 64

/*
 * Connections of registered processes, one page: n entries, and in
 * head.token where the next page starts (0: this was the last).
 */
struct smcr_control_conns {
	struct smcr_control_msg head;
	uint32_t n;
	uint32_t pad;
	struct smcr_control_conn conn[SMCR_CONTROL_CONNS_PAGE];
};

/* The most descriptors a request or a reply carries (RESUME's reply). */
#define SMCR_CONTROL_MAX_FDS 6

/* Room for the SCM_RIGHTS of a message, aligned as cmsg wants. */
union smcr_control_cmsg {
	char buf[CMSG_SPACE(SMCR_CONTROL_MAX_FDS * sizeof(int))];
	struct cmsghdr align;
};

/*
 * Attaches fds[0..n-1] to mh, in room: room_size bytes aligned as a struct
 * cmsghdr, at least CMSG_SPACE(n * sizeof(int)) of them.
 */
static inline void smcr_control_put_fds(struct msghdr *mh, void *room, size_t room_size,
					const int *fds, size_t n)
{
	if (!n)
		return;
	memset(room, 0, room_size);
	mh->msg_control = room;
	mh->msg_controllen = CMSG_SPACE(n * sizeof(int));
	struct cmsghdr *cm = CMSG_FIRSTHDR(mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(n * sizeof(int));
	memcpy(CMSG_DATA(cm), fds, n * sizeof(int));
}

/* Attaches fds[0..n-1] (n <= SMCR_CONTROL_MAX_FDS) to mh, in room. */
static inline void smcr_control_attach_fds(struct msghdr *mh, union smcr_control_cmsg *room,
					   const int *fds, size_t n)
{
	smcr_control_put_fds(mh, room->buf, sizeof(room->buf), fds, n);
}

/*
 * The descriptors a received mh carried, into fds[0..max-1]; those beyond
 * max are closed with close_fd (the caller's own close).  Returns how many
 * it carried (more than max: the extra ones are closed).
 */
static inline size_t smcr_control_take_fds(struct msghdr *mh, int *fds, size_t max,
					   int (*close_fd)(int))
{
	size_t got = 0;

	for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (got < max)
				fds[got] = fd;
			else
				close_fd(fd);
			got++;
		}
	}
	return got;
}

#endif
