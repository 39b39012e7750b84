/*
 * control.c - libsmcr's side of the control socket (see control.h).
 *
 * One mutex guards our three descriptors; it is taken once per new TCP
 * connection, never on the data path.  Every system call here is the C
 * library's own (REAL), so none of it is seen by our interposition, and
 * errno is the application's again when we return.
 */
#include <errno.h>
#include <linux/bpf.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "control.h"
#include "filter.h"
#include "control_proto.h"
#include "log.h"
#include "real.h"
#include "stats.h"
#include "sys.h"

#define REPLY_TIMEOUT_MS 2000           /* smcrd answers at once, unless its host is overloaded
					   (seen past 500 ms in a TCG guest); a stuck one must not
					   stall us for longer */
#define RETRY_INTERVAL_S 1              /* between attempts to reach a missing smcrd */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * connect(), accept(), read() and write() are async-signal-safe, and reach
 * the lock on a new connection: a signal handler that makes one while its
 * thread holds the lock would wait for itself.  It is told "no smcrd"
 * instead, and that connection stays on TCP.
 */
static __thread bool holding;

static bool lock_here(void)
{
	if (holding)
		return false;
	pthread_mutex_lock(&lock);
	holding = true;
	return true;
}

static void unlock_here(void)
{
	holding = false;
	pthread_mutex_unlock(&lock);
}
static _Atomic int ctl_fd = -1, result_fd = -1, owned_fd = -1;
/* smcr.conf's rmb_size (KiB), from smcrd's latest reply; 0: none yet */
static _Atomic uint32_t rmb_kib;
/* the transports smcr.conf allows (SMCR_CONTROL_SHM, _RDMA), from that reply too */
static _Atomic uint32_t transports_allowed;
/* when that reply came (CLOCK_MONOTONIC_COARSE seconds; 0: none yet) */
static _Atomic time_t transports_said_at;
static time_t next_attempt;             /* CLOCK_MONOTONIC_COARSE seconds */

static time_t now_coarse(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return ts.tv_sec;
}

static void close_ours(_Atomic int *fd)
{
	smcr_sys_close(*fd);
	*fd = -1;
}

static void disconnect_locked(void)
{
	close_ours(&ctl_fd);
	close_ours(&result_fd);
	close_ours(&owned_fd);
}

static int close_fd(int fd)
{
	return REAL(close)(fd);
}

/* Sends m with out[0..nout-1] attached (nout <= SMCR_CONTROL_MAX_FDS); flags: MSG_*. */
static bool send_locked(const struct smcr_control_msg *m, const int *out, size_t nout, int flags)
{
	union smcr_control_cmsg room;
	struct iovec iov = { (void *)m, sizeof(*m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	/* a sandbox that forbids it (base/filter.h): smcrd learns at our exit */
	if (!smcr_filter_permits(SYS_sendmsg, (const uint64_t[6]){ (uint64_t)ctl_fd, 0,
								  MSG_NOSIGNAL | (uint64_t)flags })) {
		errno = EPERM;
		return false;
	}
	smcr_control_attach_fds(&mh, &room, out, nout);
	return REAL(sendmsg)(ctl_fd, &mh, MSG_NOSIGNAL | flags) == sizeof(*m);
}

/* Waits for smcrd's reply at most REPLY_TIMEOUT_MS, signals or not. */
static bool reply_ready(struct pollfd *p)
{
	return smcr_sys_poll_until(p, 1, smc_deadline_after(REPLY_TIMEOUT_MS)) == 1;
}

/*
 * Sends a request with out[0..nout-1] attached and waits (bounded) for its
 * reply; in[0..nin-1] receive the descriptors attached to that (-1 where
 * none came).
 */
static int exchange_locked(struct smcr_control_msg *m, const int *out, size_t nout, int *in,
			   size_t nin)
{
	union smcr_control_cmsg room;
	struct iovec iov = { m, sizeof(*m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = room.buf, .msg_controllen = sizeof(room.buf) };
	struct pollfd p = { .fd = ctl_fd, .events = POLLIN };

	for (size_t i = 0; i < nin; i++)
		in[i] = -1;
	m->version = SMCR_CONTROL_VERSION;
	/*
	 * smcrd may hang up after saying why (a user over its quota): our send
	 * then fails (EPIPE), or, had it arrived first, our first receive
	 * (ECONNRESET) and the reply is next.
	 */
	if (!smcr_filter_permits(SYS_ppoll, (const uint64_t[6]){ 0 }) ||
	    !smcr_filter_permits(SYS_recvmsg, (const uint64_t[6]){ (uint64_t)ctl_fd, 0,
								  MSG_CMSG_CLOEXEC | MSG_DONTWAIT })) {
		errno = EPERM;  /* the reply could not be read */
		return -1;
	}
	if ((!send_locked(m, out, nout, MSG_DONTWAIT) && errno != EPIPE) || !reply_ready(&p))
		return -1;
	ssize_t n = REAL(recvmsg)(ctl_fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (n < 0 && errno == ECONNRESET)
		n = REAL(recvmsg)(ctl_fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (n != sizeof(*m))
		return -1;
	smcr_control_take_fds(&mh, in, nin, close_fd);    /* extra ones are not ours to keep */
	if (m->rmb_kib)
		atomic_store_explicit(&rmb_kib, m->rmb_kib, memory_order_relaxed);
	atomic_store_explicit(&transports_allowed, m->transports, memory_order_relaxed);
	atomic_store_explicit(&transports_said_at, now_coarse(), memory_order_relaxed);
	return 0;
}

uint32_t smcr_control_rmb_bytes(void)
{
	return atomic_load_explicit(&rmb_kib, memory_order_relaxed) * 1024u;
}

uint32_t smcr_control_transports(void)
{
	return atomic_load_explicit(&transports_allowed, memory_order_relaxed);
}

bool smcr_control_transports_recent(uint32_t *allowed)
{
	time_t said = atomic_load_explicit(&transports_said_at, memory_order_relaxed);

	*allowed = smcr_control_transports();
	return said && now_coarse() - said < TRANSPORTS_FRESH_S;
}

/*
 * Whether the process listening at path, just connected to, is root's: only
 * root's smcrd may be sent this process's statistics and, later, its
 * connections.  Another user's socket at that path (a run directory it
 * could write, an SMCR_RUNDIR it chose) gets nothing.
 */
static bool daemon_is_root(const char *path)
{
	struct ucred cred = { .uid = (uid_t)-1 };
	socklen_t len = sizeof(cred);

	if (REAL(getsockopt)(ctl_fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.uid == 0)
		return true;
	smcr_log(SMCR_LOG_WARN, "the daemon at %s is not root's (uid %d): not used", path,
		 (int)cred.uid);
	return false;
}

/* Whether the process's seccomp filters (base/filter.h) let it register: its socket, its region. */
static bool registration_permitted(void)
{
	static const struct {
		long nr;
		uint64_t args[6];
	} calls[] = {
		{ SYS_socket, { AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK } },
		{ SYS_connect, { 0 } },
		{ SYS_sendmsg, { 0, 0, MSG_NOSIGNAL } },
		{ SYS_recvmsg, { 0, 0, MSG_CMSG_CLOEXEC | MSG_DONTWAIT } },
		{ SYS_memfd_create, { 0, MFD_CLOEXEC | MFD_ALLOW_SEALING } },
	};

	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
		if (!smcr_filter_permits(calls[i].nr, calls[i].args))
			return false;
	return true;
}

static void register_locked(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct smcr_control_msg m = { .type = SMCR_CONTROL_REGISTER };
	int maps[2] = { -1, -1 };

	if (now_coarse() < next_attempt || !registration_permitted())
		return;
	next_attempt = now_coarse() + RETRY_INTERVAL_S;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", smcr_rundir(), SMCR_CONTROL_SOCKET);
	/* Non-blocking: a stuck smcrd (full backlog or buffer) must not stall the application. */
	ctl_fd = REAL(socket)(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (ctl_fd < 0)
		return;
	if (REAL(connect)(ctl_fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		smcr_log(SMCR_LOG_DEBUG, "smcrd not reachable at %s: %s", sa.sun_path,
			 strerror(errno));
		disconnect_locked();
		return;
	}
	if (!daemon_is_root(sa.sun_path)) {
		disconnect_locked();
		return;
	}
	/* Without a region (no memfd) we register all the same: the counts stay ours. */
	int stats_fd;
	struct smcr_stats *stats = smcr_stats_region_new(&stats_fd);

	if (stats)
		smcr_stats_region_prepare(stats);
	int rc = exchange_locked(&m, &stats_fd, stats ? 1 : 0, maps, 2);

	if (stats)
		REAL(close)(stats_fd);          /* smcrd has its own; the mapping stays */
	if (rc != 0 || m.result != 0 || maps[0] < 0 || maps[1] < 0) {
		smcr_log(SMCR_LOG_WARN, "smcrd did not register us (%s)",
			 m.result ? (m.text[0] ? m.text : strerror(-m.result)) : "incomplete reply");
		for (int i = 0; i < 2; i++)
			if (maps[i] >= 0)
				REAL(close)(maps[i]);
		if (stats)
			smcr_stats_region_discard(stats);
		disconnect_locked();
		return;
	}
	if (stats)
		smcr_stats_region_use(stats);
	ctl_fd = smcr_sys_fd_aside(ctl_fd);
	result_fd = smcr_sys_fd_aside(maps[0]);
	owned_fd = smcr_sys_fd_aside(maps[1]);
	smcr_log(SMCR_LOG_DEBUG, "registered with smcrd (control fd %d, map fds %d %d)",
		 (int)ctl_fd, (int)result_fd, (int)owned_fd);
}

/* smcrd never writes unasked: a readable control socket means it has gone. */
static bool daemon_gone_locked(void)
{
	struct pollfd p = { .fd = ctl_fd, .events = POLLIN };
	return smcr_sys_poll(&p, 1, 0) != 0;
}

int smcr_control_map_call(enum smcr_control_map map, int cmd, int fd, uint32_t *value)
{
	const uint64_t bpf_args[6] = { (uint64_t)cmd };
	int saved_errno = errno, rc = -ENOTCONN;
	union bpf_attr attr;

	if (!lock_here())
		return rc;
	if (ctl_fd < 0)         /* even if bpf is forbidden: smcrd counts what this process does */
		register_locked();
	int map_fd = map == SMCR_MAP_RESULT ? result_fd : owned_fd;
	if (!smcr_filter_permits(SYS_bpf, bpf_args)) {
		rc = -EPERM;    /* a sandbox forbids it (base/filter.h) */
	} else if (map_fd >= 0) {
		memset(&attr, 0, sizeof(attr));
		attr.map_fd = (uint32_t)map_fd;
		attr.key = (uint64_t)(uintptr_t)&fd;
		attr.value = (uint64_t)(uintptr_t)value;
		rc = REAL(syscall)(SYS_bpf, cmd, &attr, sizeof(attr)) == 0 ? 0 : -errno;
	}
	unlock_here();
	errno = saved_errno;
	return rc;
}

bool smcr_control_alive(void)
{
	int saved_errno = errno;
	bool alive;

	if (!lock_here())
		return false;
	if (ctl_fd >= 0 && daemon_gone_locked()) {
		smcr_log(SMCR_LOG_DEBUG, "smcrd went away; new connections stay on TCP");
		disconnect_locked();
		next_attempt = 0;
	}
	alive = ctl_fd >= 0;
	unlock_here();
	errno = saved_errno;
	return alive;
}

int smcr_control_request(struct smcr_control_msg *m, const int *out, size_t nout, int *in,
			 size_t nin)
{
	int saved_errno = errno, rc = -ENOTCONN;

	if (!lock_here())
		return rc;
	if (ctl_fd < 0)
		register_locked();
	if (ctl_fd >= 0) {
		if (exchange_locked(m, out, nout, in, nin) == 0)
			rc = 0;
		else
			disconnect_locked();
	}
	unlock_here();
	errno = saved_errno;
	return rc;
}

void smcr_control_notify(struct smcr_control_msg *m, const int *out, size_t nout)
{
	int saved_errno = errno;

	m->version = SMCR_CONTROL_VERSION;
	if (!lock_here())
		return;
	if (ctl_fd >= 0)
		send_locked(m, out, nout, MSG_DONTWAIT);
	unlock_here();
	errno = saved_errno;
}

int smcr_control_grant(uint64_t bytes)
{
	struct smcr_control_msg m = { .type = SMCR_CONTROL_GRANT, .bytes = bytes };
	int rc = smcr_control_request(&m, NULL, 0, NULL, 0);

	return rc ? rc : m.result;
}

void smcr_control_release(uint64_t bytes)
{
	struct smcr_control_msg m = { .type = SMCR_CONTROL_RELEASE, .bytes = bytes };

	smcr_control_notify(&m, NULL, 0);
}

void smcr_control_fd_closing(int fd)
{
	if (fd < 0 || (fd != ctl_fd && fd != result_fd && fd != owned_fd))
		return;
	/* The application took a number we held: it wins, we re-register later. */
	int saved_errno = errno;
	if (!lock_here())
		return;                 /* a handler replacing our descriptor mid-request: rare */
	_Atomic int *ours[] = { &ctl_fd, &result_fd, &owned_fd };
	for (size_t i = 0; i < sizeof(ours) / sizeof(ours[0]); i++)
		if (*ours[i] == fd)
			*ours[i] = -1;          /* the number is the application's now */
	disconnect_locked();
	next_attempt = 0;
	unlock_here();
	errno = saved_errno;
}

void smcr_control_fork_prepare(void)
{
	pthread_mutex_lock(&lock);
}

void smcr_control_fork_parent(void)
{
	pthread_mutex_unlock(&lock);
}

/*
 * A child is a process of its own: it registers (and is accounted) by itself.
 * A child that only serves a connection its parent accepted (socat fork,
 * inetd style) never needs smcrd, yet its counters must reach smcrd's
 * statistics: if the parent was registered, the child registers right here,
 * before it can have entered a sandbox (seccomp) that would forbid it - never
 * later on the data path.  posix_spawn (and vfork) run no fork handlers, so
 * spawning a program costs nothing.  The parent's stats region is already
 * gone here (shim/fork.c resets the statistics first).
 */
void smcr_control_fork_child(void)
{
	bool parent_registered = ctl_fd >= 0;

	disconnect_locked();
	next_attempt = 0;
	if (parent_registered)
		register_locked();
	pthread_mutex_unlock(&lock);
}
