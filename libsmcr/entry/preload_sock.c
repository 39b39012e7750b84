/*
 * preload_sock.c - interposed socket lifecycle calls: creation, connection,
 * duplication, control and close.
 *
 * Each call is the C library's own, made first; around it libsmcr keeps the
 * descriptor table (fdtable.h) true, so that the data and readiness calls can
 * tell a TCP connection from everything else in O(1).  Results and errno are
 * exactly the C library's.  Sockets libsmcr did not see being created
 * (inherited over exec, received with SCM_RIGHTS) are classified with
 * getsockopt() the first time they listen, connect or accept.  Each new
 * connection's handshake outcome is recorded (handshake.h).  Calls that close
 * or replace a descriptor first tell control.c, whose own descriptors the
 * application may be reclaiming.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <fcntl.h>
#include <linux/close_range.h>

#include "control.h"
#include "fdtable.h"
#include "filter.h"
#include "handshake.h"
#include "log.h"
#include "real.h"
#include "smc_sock.h"
#include "std_streams.h"
#include "stats.h"
#include "sys.h"

static bool tcp_socket_args(int domain, int type, int protocol)
{
	return (domain == AF_INET || domain == AF_INET6) &&
	       (type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC)) == SOCK_STREAM &&
	       (protocol == 0 || protocol == IPPROTO_TCP);
}

/* What fd is, asking the kernel if the table does not know yet. */
static enum smcr_fd_state classify(int fd)
{
	static const int asked[] = { SO_DOMAIN, SO_TYPE, SO_PROTOCOL };
	enum smcr_fd_state state = smcr_fd_get(fd);
	int saved_errno = errno, domain, type, protocol;
	socklen_t len = sizeof(int);

	if (state != SMCR_FD_UNKNOWN)
		return state;
	if (!smcr_filter_permits_sockopts(fd, asked, 3))
		return SMCR_FD_OTHER;   /* a sandbox forbids asking: never ours to serve */
	if (REAL(getsockopt)(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) == 0 &&
	    REAL(getsockopt)(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 &&
	    REAL(getsockopt)(fd, SOL_SOCKET, SO_PROTOCOL, &protocol, &len) == 0)
		state = tcp_socket_args(domain, type, protocol) ? SMCR_FD_TCP : SMCR_FD_OTHER;
	else if (errno == ENOTSOCK)
		state = SMCR_FD_OTHER;
	errno = saved_errno;
	if (state != SMCR_FD_UNKNOWN)
		smcr_fd_set(fd, state);
	return state;
}

int socket(int domain, int type, int protocol)
{
	int fd = REAL(socket)(domain, type, protocol);

	if (fd >= 0)
		smcr_fd_set(fd, tcp_socket_args(domain, type, protocol) ? SMCR_FD_TCP
									: SMCR_FD_OTHER);
	return fd;
}

int bind(int fd, const struct sockaddr *addr, socklen_t len)
{
	return REAL(bind)(fd, addr, len);
}

int listen(int fd, int backlog)
{
	bool tcp = smcr_fd_state_is_tcp(classify(fd));

	if (tcp && smcr_fd_get(fd) != SMCR_FD_TCP_LISTENER)
		smcr_handshake_offer(fd);
	int rc = REAL(listen)(fd, backlog);

	if (rc == 0 && tcp && smcr_fd_get(fd) != SMCR_FD_TCP_LISTENER) {
		smcr_fd_set(fd, SMCR_FD_TCP_LISTENER);
		smcr_stat_add(tcp_listeners, 1);
		smcr_log(SMCR_LOG_DEBUG, "fd %d: TCP listener", fd);
	}
	return rc;
}

/* After accept() on lfd returned fd. */
static void accepted(int lfd, int fd, const struct sockaddr *addr, const socklen_t *len)
{
	if (!smcr_fd_state_is_tcp(classify(lfd))) {
		smcr_fd_set(fd, SMCR_FD_OTHER);
		return;
	}
	smcr_stat_add(tcp_servers, 1);
	smcr_fd_set_rcvbuf(fd, smcr_fd_rcvbuf(lfd));
	if (smcr_debugging()) {
		struct sockaddr_storage peer;
		socklen_t peer_len = sizeof(peer);
		char name[64];
		if (!addr) {
			int saved_errno = errno;
			if (REAL(getpeername)(fd, (struct sockaddr *)&peer, &peer_len) != 0)
				peer_len = 0;
			errno = saved_errno;
			addr = (struct sockaddr *)&peer;
			len = &peer_len;
		}
		smcr_log(SMCR_LOG_DEBUG, "fd %d: TCP connection from %s accepted on fd %d", fd,
			 smcr_sockaddr_str(addr, *len, name, sizeof(name)), lfd);
	}
	smcr_handshake_record(fd, false);
}

int accept(int lfd, struct sockaddr *addr, socklen_t *len)
{
	int fd = REAL(accept)(lfd, addr, len);

	if (fd >= 0)
		accepted(lfd, fd, addr, len);
	return fd;
}

int accept4(int lfd, struct sockaddr *addr, socklen_t *len, int flags)
{
	int fd = REAL(accept4)(lfd, addr, len, flags);

	if (fd >= 0)
		accepted(lfd, fd, addr, len);
	return fd;
}

int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	enum smcr_fd_state state = classify(fd);

	if (state == SMCR_FD_TCP && addr && addr->sa_family != AF_UNSPEC) {
		smcr_handshake_offer(fd);
		if (!smcr_sys_borrowed_memory())   /* a vfork child starts no thread */
			smcr_sock_before_connect(fd, addr, len);
	}
	int rc = REAL(connect)(fd, addr, len);

	/* EINTR: a blocking connect() goes on in the background, as a non-blocking one. */
	if (rc != 0 && errno != EINPROGRESS && errno != EINTR)
		return rc;
	if (!smcr_fd_state_is_tcp(state))
		return rc;
	if (addr && addr->sa_family == AF_UNSPEC) {        /* disconnect */
		smcr_fd_set(fd, SMCR_FD_TCP);
		return rc;
	}
	if (smcr_fd_state_is_connecting(state) || state == SMCR_FD_TCP_CLIENT)
		return rc;                                 /* asked again: already counted */
	smcr_stat_add(tcp_clients, 1);
	if (smcr_debugging()) {
		char name[64];
		smcr_log(SMCR_LOG_DEBUG, "fd %d: TCP connect to %s%s", fd,
			 smcr_sockaddr_str(addr, len, name, sizeof(name)),
			 rc ? " in progress" : "");
	}
	if (rc == 0) {
		smcr_handshake_record_connected(fd);
	} else {
		smcr_fd_set(fd, SMCR_FD_TCP_CONNECTING);   /* settled at its next call */
	}
	return rc;
}

int shutdown(int fd, int how)
{
	struct smcr_sock *sk = smcr_fd_serving(fd);

	/* never waits for the CLC exchange: a shutdown during it is applied when it ends */
	if (sk && smcr_sock_takes(sk, fd, true, false))
		return smcr_sock_shutdown(sk, fd, how);
	return REAL(shutdown)(fd, how);
}

/*
 * libsmcr's own descriptors are not the application's to close: to it they
 * are not open (EBADF), and they stay open for us (base/sys.h).
 */
int close(int fd)
{
	/* Asked first: a vfork child is told apart by a system call (getpid). */
	if (smcr_fd_holds_nothing(fd))
		return REAL(close)(fd);
	if (smcr_sys_borrowed_memory())        /* a vfork child: its table, not ours */
		return REAL(close)(fd);
	if (smcr_fd_get(fd) == SMCR_FD_OWN) {
		errno = EBADF;
		return -1;
	}
	/* Forget first: the number is free for other threads once the kernel has it. */
	smcr_fd_forget(fd);
	return REAL(close)(fd);
}

int close_range(unsigned int first, unsigned int last, int flags)
{
	if ((flags & CLOSE_RANGE_CLOEXEC) || smcr_sys_borrowed_memory())
		return REAL(close_range)(first, last, flags);
	/* Before: once closed, the numbers are free for other threads' new sockets. */
	if (first <= last)
		smcr_fd_forget_range(first, last);
	return smcr_sys_close_range(first, last, flags);
}

void closefrom(int lowfd)
{
	if (smcr_sys_borrowed_memory()) {
		REAL(closefrom)(lowfd);
		return;
	}
	if (lowfd >= 0)
		smcr_fd_forget_range((unsigned int)lowfd, ~0u);
	smcr_sys_closefrom(lowfd);
}

int dup(int oldfd)
{
	int fd = REAL(dup)(oldfd);

	if (fd >= 0 && !smcr_sys_borrowed_memory())
		smcr_fd_copy(oldfd, fd);
	return fd;
}

/*
 * Before a dup onto newfd: a descriptor of ours there moves out of the way
 * (base/sys.h), or is given up if nobody keeps it (smcrd's socket and
 * maps); false if it could not move and the dup must fail.
 */
static bool before_dup(int oldfd, int newfd)
{
	if (oldfd != newfd && smcr_fd_get(newfd) == SMCR_FD_OWN) {
		if (!smcr_sys_fd_before_dup(newfd))
			return false;
		smcr_control_fd_closing(newfd);
	}
	smcr_std_stream_before_dup(oldfd, newfd);
	return true;
}

/* newfd now names a copy of oldfd; if it is a standard descriptor, its stream follows. */
static void duplicated(int oldfd, int newfd)
{
	smcr_fd_copy(oldfd, newfd);
	smcr_std_stream_after_dup(newfd);
}

int dup2(int oldfd, int newfd)
{
	int fd;

	if (smcr_sys_borrowed_memory())
		return REAL(dup2)(oldfd, newfd);
	if (!before_dup(oldfd, newfd))
		return -1;
	fd = REAL(dup2)(oldfd, newfd);
	if (fd >= 0 && oldfd != newfd)
		duplicated(oldfd, fd);
	return fd;
}

int dup3(int oldfd, int newfd, int flags)
{
	int fd;

	if (smcr_sys_borrowed_memory())
		return REAL(dup3)(oldfd, newfd, flags);
	if (!before_dup(oldfd, newfd))
		return -1;
	fd = REAL(dup3)(oldfd, newfd, flags);
	if (fd >= 0)
		duplicated(oldfd, fd);
	return fd;
}

/*
 * fcntl's third argument is an int, a long or a pointer depending on cmd;
 * like the C library, take it as a pointer-sized value and pass it on.
 */
static int fcntl_with(smcr_real_fcntl_t real, int fd, int cmd, void *arg)
{
	int rc = real(fd, cmd, arg);

	if (rc >= 0 && (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) && !smcr_sys_borrowed_memory())
		smcr_fd_copy(fd, rc);
	if (rc == 0 && cmd == F_SETFL && smcr_fd_sock(fd))
		smcr_sock_set_nonblock(smcr_fd_sock(fd), (long)arg & O_NONBLOCK);
	return rc;
}

int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	return fcntl_with(REAL(fcntl), fd, cmd, arg);
}

int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	return fcntl_with(REAL(fcntl64), fd, cmd, arg);
}

int ioctl(int fd, unsigned long request, ...)
{
	va_list ap;
	va_start(ap, request);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	struct smcr_sock *sk = smcr_fd_serving(fd);
	int rc;

	if (sk && arg && smcr_sock_takes(sk, fd, true, false) && smcr_sock_ioctl(sk, request, arg, &rc))
		return rc;
	rc = REAL(ioctl)(fd, request, arg);
	if (rc == 0 && sk && request == FIONBIO && arg)
		smcr_sock_set_nonblock(sk, *(int *)arg);
	return rc;
}

int getsockopt(int fd, int level, int name, void *value, socklen_t *len)
{
	struct smcr_sock *sk = smcr_fd_serving(fd);
	int rc;

	if (sk && smcr_sock_getsockopt(sk, level, name, value, len, &rc))
		return rc;
	return REAL(getsockopt)(fd, level, name, value, len);
}

int setsockopt(int fd, int level, int name, const void *value, socklen_t len)
{
	int rc = REAL(setsockopt)(fd, level, name, value, len);
	struct smcr_sock *sk = smcr_fd_sock(fd);

	if (rc == 0 && sk && smcr_fd_serving(fd))
		smcr_sock_setsockopt(sk, level, name, value, len);
	/* before connect or listen: the RMB of its connections follows it */
	if (rc == 0 && level == SOL_SOCKET && name == SO_RCVBUF && len >= (socklen_t)sizeof(int) &&
	    !sk && smcr_fd_state_is_tcp(classify(fd)))
		smcr_fd_set_rcvbuf(fd, *(const int *)value > 0 ? (uint32_t)*(const int *)value : 0);
	return rc;
}

int getsockname(int fd, struct sockaddr *addr, socklen_t *len)
{
	return REAL(getsockname)(fd, addr, len);
}

int getpeername(int fd, struct sockaddr *addr, socklen_t *len)
{
	return REAL(getpeername)(fd, addr, len);
}
