/*
 * handshake.c - reading and recording the handshake's outcome (handshake.h).
 */
#include <dirent.h>
#include <errno.h>
#include <linux/bpf.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include "conn_table.h"
#include "control.h"
#include "filter.h"
#include "handshake.h"
#include "handshake_flags.h"
#include "log.h"
#include "real.h"
#include "smc_sock.h"
#include "stats.h"

enum smcr_reason smcr_handshake_reason(bool has_entry, uint32_t flags)
{
	if (!has_entry)
		return SMCR_REASON_POLICY;      /* the program did not consider this socket */
	if (flags & SMCR_HS_NEGOTIATED)
		return SMCR_REASON_NONE;
	if (flags & SMCR_HS_NO_SPACE)
		return SMCR_REASON_OPTUNSUPP;
	return SMCR_REASON_PEERNOSMC;
}

void smcr_handshake_offer(int fd)
{
	uint32_t mark = 1;
	int rc = smcr_control_map_call(SMCR_MAP_OWNED, BPF_MAP_UPDATE_ELEM, fd, &mark);

	/* ENOTCONN: no smcrd; EPERM: a sandbox's filter forbids the map (base/filter.h) */
	if (rc && rc != -ENOTCONN && rc != -EPERM)
		smcr_log(SMCR_LOG_WARN, "fd %d: cannot mark it for SMC: %s", fd, strerror(-rc));
}

void smcr_handshake_withdraw_listeners(void)
{
	for (int fd = smcr_fd_next_in(0, ~0u, SMCR_FD_TCP_LISTENER); fd >= 0;
	     fd = smcr_fd_next_in((unsigned int)fd + 1, ~0u, SMCR_FD_TCP_LISTENER))
		smcr_control_map_call(SMCR_MAP_OWNED, BPF_MAP_DELETE_ELEM, fd, NULL);
}

/* Why a connection is on TCP when its map entry could not be read (rc). */
static enum smcr_reason unread_reason(int rc)
{
	return rc == -EPERM ? SMCR_REASON_CONFINED : SMCR_REASON_NODAEMON;
}

void smcr_handshake_record(int fd, bool active)
{
	int saved_errno = errno;
	uint32_t flags = 0;
	int rc = smcr_control_map_call(SMCR_MAP_RESULT, BPF_MAP_LOOKUP_ELEM, fd, &flags);
	enum smcr_reason reason = unread_reason(rc);

	/* No entry: outside the policy, or the program went with its smcrd. */
	if (rc == 0 || (rc == -ENOENT && smcr_control_alive()))
		reason = smcr_handshake_reason(rc == 0, flags);

	errno = saved_errno;
	smcr_fd_set_reason(fd, reason);
	smcr_fd_set_record(fd, smcr_conn_table_open(fd, active, reason == SMCR_REASON_NONE ?
							  SMCR_CONN_CLC : SMCR_CONN_TCP, reason));
	if (reason == SMCR_REASON_NONE) {
		if (active)
			smcr_stat_add(smc_clients, 1);
		else
			smcr_stat_add(smc_servers, 1);
		smcr_log(SMCR_LOG_DEBUG, "fd %d: SMC negotiated in the TCP handshake (flags 0x%x)",
			 fd, flags);
		smcr_sock_negotiated(fd, active);
		/*
		 * The client's Proposal leaves now, without waiting for the
		 * other end, which may be this very thread, about to accept().
		 * A server answers one that is there, as smcr_sock_accepted
		 * says.
		 */
		if (smcr_fd_sock(fd) && active)
			smcr_sock_settle(smcr_fd_sock(fd), fd, false);
		else if (smcr_fd_sock(fd))
			smcr_sock_accepted(smcr_fd_sock(fd), fd);
		errno = saved_errno;
	} else {
		smcr_stat_add(fallbacks[reason], 1);
		smcr_log(SMCR_LOG_DEBUG, "fd %d: fallback to TCP: %s (0x%08x, flags 0x%x)", fd,
			 smcr_reason_name(reason), smcr_reason_code(reason), flags);
	}
	smcr_fd_set(fd, active ? SMCR_FD_TCP_CLIENT : SMCR_FD_TCP_SERVER);
}

/* The descriptor whose connect() this thread records now (-1: none). */
static __thread int settling = -1;

void smcr_handshake_record_connected(int fd)
{
	int outer = settling;

	smcr_fd_set(fd, SMCR_FD_TCP_SETTLING);
	settling = fd;
	smcr_handshake_record(fd, true);
	settling = outer;
}

enum smcr_fd_state smcr_handshake_settle(int fd)
{
	struct sockaddr_storage peer;
	socklen_t len = sizeof(peer);
	int saved_errno = errno;
	bool connected = REAL(getpeername)(fd, (struct sockaddr *)&peer, &len) == 0;

	errno = saved_errno;
	if (!connected)
		return SMCR_FD_TCP_CONNECTING;  /* still in progress, or failed */
	/* Threads racing here: the one that moves the state records the outcome. */
	if (smcr_fd_claim(fd, SMCR_FD_TCP_CONNECTING, SMCR_FD_TCP_SETTLING))
		smcr_handshake_record_connected(fd);
	/* the others wait: a map lookup and the Proposal's send, at most smcrd's reply time */
	while (smcr_fd_get(fd) == SMCR_FD_TCP_SETTLING && settling != fd)
		sched_yield();
	return smcr_fd_get(fd);
}

void smcr_handshake_fork_child(void)
{
	for (int fd = smcr_fd_next_in(0, ~0u, SMCR_FD_TCP_SETTLING); fd >= 0;
	     fd = smcr_fd_next_in((unsigned int)fd + 1, ~0u, SMCR_FD_TCP_SETTLING))
		smcr_fd_set(fd, SMCR_FD_TCP_CLIENT);
}

/* Whether fd is a connected TCP socket (not a listener), asked of the kernel. */
static bool connected_tcp(int fd)
{
	static const int asked[] = { SO_DOMAIN, SO_PROTOCOL, SO_ACCEPTCONN };
	struct sockaddr_storage peer;
	socklen_t len = sizeof(int), plen = sizeof(peer);
	int domain = 0, protocol = 0, listening = 1;
	const uint64_t peer_args[6] = { (uint64_t)fd };

	return smcr_filter_permits_sockopts(fd, asked, 3) &&
	       smcr_filter_permits(SYS_getpeername, peer_args) &&
	       REAL(getsockopt)(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) == 0 &&
	       (domain == AF_INET || domain == AF_INET6) &&
	       REAL(getsockopt)(fd, SOL_SOCKET, SO_PROTOCOL, &protocol, &len) == 0 &&
	       protocol == IPPROTO_TCP &&
	       REAL(getsockopt)(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) == 0 &&
	       !listening && REAL(getpeername)(fd, (struct sockaddr *)&peer, &plen) == 0;
}

void smcr_handshake_adopt(int fd)
{
	int saved_errno = errno;
	uint32_t flags = 0;

	if (smcr_fd_sock(fd) || !connected_tcp(fd)) {
		errno = saved_errno;
		return;
	}
	int rc = smcr_control_map_call(SMCR_MAP_RESULT, BPF_MAP_LOOKUP_ELEM, fd, &flags);
	enum smcr_reason reason = rc ? unread_reason(rc) : smcr_handshake_reason(true, flags);
	bool active = flags & SMCR_HS_ACTIVE;

	smcr_fd_set(fd, active ? SMCR_FD_TCP_CLIENT : SMCR_FD_TCP_SERVER);
	smcr_fd_set_reason(fd, reason);
	smcr_fd_set_record(fd, smcr_conn_table_open(fd, active, reason == SMCR_REASON_NONE ?
							  SMCR_CONN_CLC : SMCR_CONN_TCP, reason));
	if (reason == SMCR_REASON_NONE)
		smcr_sock_adopt(fd, active);
	errno = saved_errno;
}

void smcr_handshake_adopt_inherited(void)
{
	int saved_errno = errno;
	DIR *dir = opendir("/proc/self/fd");
	struct dirent *d;

	while (dir && (d = readdir(dir))) {
		int fd = atoi(d->d_name);

		if (d->d_name[0] != '.' && fd != dirfd(dir))
			smcr_handshake_adopt(fd);
	}
	if (dir)
		closedir(dir);
	errno = saved_errno;
}
