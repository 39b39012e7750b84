/*
 * preload_io.c - interposed data calls: the read/recv and write/send
 * families, their glibc fortified forms, sendfile and splice.
 *
 * A call on a connection that went on SMC is served by smc_sock.c; every
 * other call is the C library's, and the bytes that cross a TCP socket are
 * counted.  This is the hot path of every application under the preload:
 * one table look-up and two relaxed adds (bytes and calls, into the
 * connection's record: conn_table.h), never a lock or an extra system
 * call - except once per connection, at the first call after a non-blocking
 * connect(), where the handshake's outcome is read (handshake.h), and the
 * calls that carry a connection's CLC exchange (smc_sock.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conn_table.h"
#include "fdtable.h"
#include "handshake.h"
#include "real.h"
#include "smc_sock.h"
#include "stats.h"

void __chk_fail(void) __attribute__((noreturn));

/* Whether fd is a TCP socket, settling a non-blocking connect() first. */
static inline bool tcp(int fd)
{
	enum smcr_fd_state state = smcr_fd_get(fd);

	if (__builtin_expect(smcr_fd_state_is_connecting(state), 0))
		state = smcr_handshake_settle(fd);
	return smcr_fd_state_is_tcp(state);
}

/*
 * The SMC connection that serves a call on fd, or NULL when the call is the
 * kernel's (dontwait: the call must not wait for a CLC exchange; sending:
 * it writes, and a server may decline the exchange for it).
 */
static inline struct smcr_sock *smc_call(int fd, bool dontwait, bool sending)
{
	struct smcr_sock *sk = smcr_fd_serving(fd);

	if (__builtin_expect(sk == NULL, 1))
		return NULL;
	return smcr_sock_takes(sk, fd, dontwait, sending) ? sk : NULL;
}

static inline struct smcr_sock *smc(int fd, bool dontwait)
{
	return smc_call(fd, dontwait, false);
}

static inline struct smcr_sock *smc_out(int fd, bool dontwait)
{
	return smc_call(fd, dontwait, true);
}

/* The one iovec of a single-buffer call. */
#define ONE(buf, len) (&(struct iovec){ .iov_base = (void *)(buf), .iov_len = (len) })

/* Calls fn(fd, count) for each descriptor msg carries (SCM_RIGHTS). */
static void each_passed(const struct msghdr *msg, void (*fn)(int fd, int count), int count)
{
	if (!msg->msg_control || msg->msg_controllen < sizeof(struct cmsghdr))
		return;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR((struct msghdr *)msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			fn(fd, count);
		}
	}
}

/* A descriptor came in a message: a socket of ours carries on here. */
static void adopt(int fd, int count)
{
	(void)count;
	smcr_handshake_adopt(fd);
}

/* A descriptor goes (count 1) or did not go after all (-1) in a message. */
static void pass(int fd, int count)
{
	struct smcr_sock *sk = smcr_fd_sock(fd);

	if (sk)
		smcr_sock_passing(sk, count);
}

/* recvmsg's outputs that a TCP stream leaves empty; MSG_OOB when it read the urgent byte. */
static void tcp_msg_outputs(struct msghdr *msg, int flags)
{
	msg->msg_namelen = 0;
	msg->msg_controllen = 0;
	msg->msg_flags = flags & MSG_OOB;
}

static inline void count_in(int fd, bool is_tcp, ssize_t n)
{
	if (n > 0 && is_tcp)
		smcr_conn_table_tcp(fd, true, (size_t)n);
}

static inline void count_out(int fd, bool is_tcp, ssize_t n)
{
	if (n > 0 && is_tcp)
		smcr_conn_table_tcp(fd, false, (size_t)n);
}

static size_t mmsg_bytes(const struct mmsghdr *msgs, int n)
{
	size_t bytes = 0;

	for (int i = 0; i < n; i++)
		bytes += msgs[i].msg_len;
	return bytes;
}

/* receiving */

ssize_t read(int fd, void *buf, size_t len)
{
	bool is_tcp = tcp(fd);
	struct smcr_sock *sk = is_tcp ? smc(fd, false) : NULL;

	if (sk)
		return smcr_sock_recv(sk, ONE(buf, len), 1, 0);
	ssize_t n = REAL(read)(fd, buf, len);
	count_in(fd, is_tcp, n);
	return n;
}

ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen)
{
	bool is_tcp = tcp(fd);
	struct smcr_sock *sk = is_tcp ? smc(fd, false) : NULL;

	if (sk) {
		if (len > buflen)
			__chk_fail();
		return smcr_sock_recv(sk, ONE(buf, len), 1, 0);
	}
	ssize_t n = REAL(__read_chk)(fd, buf, len, buflen);
	count_in(fd, is_tcp, n);
	return n;
}

ssize_t readv(int fd, const struct iovec *iov, int iovcnt)
{
	bool is_tcp = tcp(fd);
	struct smcr_sock *sk = is_tcp ? smc(fd, false) : NULL;

	if (sk)
		return smcr_sock_recv(sk, iov, iovcnt, 0);
	ssize_t n = REAL(readv)(fd, iov, iovcnt);
	count_in(fd, is_tcp, n);
	return n;
}

ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	bool is_tcp = tcp(fd);
	struct smcr_sock *sk = is_tcp ? smc(fd, flags & MSG_DONTWAIT) : NULL;

	if (sk)
		return smcr_sock_recv(sk, ONE(buf, len), 1, flags);
	ssize_t n = REAL(recv)(fd, buf, len, flags);
	count_in(fd, is_tcp, n);
	return n;
}

ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags)
{
	bool is_tcp = tcp(fd);
	struct smcr_sock *sk = is_tcp ? smc(fd, flags & MSG_DONTWAIT) : NULL;

	if (sk) {
		if (len > buflen)
			__chk_fail();
		return smcr_sock_recv(sk, ONE(buf, len), 1, flags);
	}
	ssize_t n = REAL(__recv_chk)(fd, buf, len, buflen, flags);
	count_in(fd, is_tcp, n);
	return n;
}

ssize_t recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *addr,
		 socklen_t *addrlen)
{
	bool is_tcp = tcp(fd);
	struct smcr_sock *sk = is_tcp ? smc(fd, flags & MSG_DONTWAIT) : NULL;

	if (sk) {
		if (addr && addrlen)
			*addrlen = 0;   /* a stream has no sender address */
		return smcr_sock_recv(sk, ONE(buf, len), 1, flags);
	}
	ssize_t n = REAL(recvfrom)(fd, buf, len, flags, addr, addrlen);
	count_in(fd, is_tcp, n);
	return n;
}

ssize_t __recvfrom_chk(int fd, void *buf, size_t len, size_t buflen, int flags,
		       struct sockaddr *addr, socklen_t *addrlen)
{
	bool is_tcp = tcp(fd);
	struct smcr_sock *sk = is_tcp ? smc(fd, flags & MSG_DONTWAIT) : NULL;

	if (sk) {
		if (len > buflen)
			__chk_fail();
		if (addr && addrlen)
			*addrlen = 0;
		return smcr_sock_recv(sk, ONE(buf, len), 1, flags);
	}
	ssize_t n = REAL(__recvfrom_chk)(fd, buf, len, buflen, flags, addr, addrlen);
	count_in(fd, is_tcp, n);
	return n;
}

ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	bool is_tcp = tcp(fd);
	struct smcr_sock *sk = is_tcp ? smc(fd, flags & MSG_DONTWAIT) : NULL;

	if (sk) {
		ssize_t n = smcr_sock_recv(sk, msg->msg_iov, (int)msg->msg_iovlen, flags);

		if (n >= 0)
			tcp_msg_outputs(msg, flags);
		return n;
	}
	ssize_t n = REAL(recvmsg)(fd, msg, flags);
	count_in(fd, is_tcp, n);
	if (n >= 0 && !is_tcp)
		each_passed(msg, adopt, 0);
	return n;
}

int recvmmsg(int fd, struct mmsghdr *msgs, unsigned int vlen, int flags,
	     struct timespec *timeout)
{
	bool is_tcp = tcp(fd);
	struct smcr_sock *sk = is_tcp && vlen ? smc(fd, flags & MSG_DONTWAIT) : NULL;

	if (sk) {
		/* a stream: what one recvmsg reads, as one message */
		ssize_t n = smcr_sock_recv(sk, msgs[0].msg_hdr.msg_iov,
					   (int)msgs[0].msg_hdr.msg_iovlen,
					   flags & ~MSG_WAITFORONE);
		if (n < 0)
			return -1;
		tcp_msg_outputs(&msgs[0].msg_hdr, flags);
		msgs[0].msg_len = (unsigned int)n;
		return 1;
	}
	int n = REAL(recvmmsg)(fd, msgs, vlen, flags, timeout);
	if (n > 0)
		count_in(fd, is_tcp, (ssize_t)mmsg_bytes(msgs, n));
	for (int i = 0; !is_tcp && i < n; i++)
		each_passed(&msgs[i].msg_hdr, adopt, 0);
	return n;
}

/* sending */

ssize_t write(int fd, const void *buf, size_t len)
{
	bool is_tcp = tcp(fd);
	struct smcr_sock *sk = is_tcp ? smc_out(fd, false) : NULL;

	if (sk)
		return smcr_sock_send(sk, ONE(buf, len), 1, 0);
	ssize_t n = REAL(write)(fd, buf, len);
	count_out(fd, is_tcp, n);
	return n;
}

ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
	bool is_tcp = tcp(fd);
	struct smcr_sock *sk = is_tcp ? smc_out(fd, false) : NULL;

	if (sk)
		return smcr_sock_send(sk, iov, iovcnt, 0);
	ssize_t n = REAL(writev)(fd, iov, iovcnt);
	count_out(fd, is_tcp, n);
	return n;
}

ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	bool is_tcp = tcp(fd);
	struct smcr_sock *sk = is_tcp ? smc_out(fd, flags & MSG_DONTWAIT) : NULL;

	if (sk)
		return smcr_sock_send(sk, ONE(buf, len), 1, flags);
	ssize_t n = REAL(send)(fd, buf, len, flags);
	count_out(fd, is_tcp, n);
	return n;
}

ssize_t sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *addr,
	       socklen_t addrlen)
{
	bool is_tcp = tcp(fd);
	struct smcr_sock *sk = is_tcp ? smc_out(fd, flags & MSG_DONTWAIT) : NULL;

	if (sk)         /* a connected stream ignores the address, as TCP does */
		return smcr_sock_send(sk, ONE(buf, len), 1, flags);
	ssize_t n = REAL(sendto)(fd, buf, len, flags, addr, addrlen);
	count_out(fd, is_tcp, n);
	return n;
}

ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	bool is_tcp = tcp(fd);
	struct smcr_sock *sk = is_tcp ? smc_out(fd, flags & MSG_DONTWAIT) : NULL;

	if (sk)
		return smcr_sock_send(sk, msg->msg_iov, (int)msg->msg_iovlen, flags);
	/* counted before it goes: the receiver may take it over at once */
	each_passed(msg, pass, 1);
	ssize_t n = REAL(sendmsg)(fd, msg, flags);
	if (n < 0)
		each_passed(msg, pass, -1);
	count_out(fd, is_tcp, n);
	return n;
}

int sendmmsg(int fd, struct mmsghdr *msgs, unsigned int vlen, int flags)
{
	bool is_tcp = tcp(fd);
	struct smcr_sock *sk = is_tcp && vlen ? smc_out(fd, flags & MSG_DONTWAIT) : NULL;

	if (sk) {
		unsigned int i;

		for (i = 0; i < vlen; i++) {
			ssize_t n = smcr_sock_send(sk, msgs[i].msg_hdr.msg_iov,
						   (int)msgs[i].msg_hdr.msg_iovlen, flags);
			if (n < 0) {
				if (i == 0)
					return -1;
				break;
			}
			msgs[i].msg_len = (unsigned int)n;
		}
		return (int)i;
	}
	for (unsigned int i = 0; i < vlen; i++)
		each_passed(&msgs[i].msg_hdr, pass, 1);
	int n = REAL(sendmmsg)(fd, msgs, vlen, flags);
	for (unsigned int i = n > 0 ? (unsigned int)n : 0; i < vlen; i++)
		each_passed(&msgs[i].msg_hdr, pass, -1);
	if (n > 0)
		count_out(fd, is_tcp, (ssize_t)mmsg_bytes(msgs, n));
	return n;
}

ssize_t sendfile(int out_fd, int in_fd, off_t *offset, size_t count)
{
	bool is_tcp = tcp(out_fd);
	struct smcr_sock *sk = is_tcp ? smc_out(out_fd, false) : NULL;

	if (sk)
		return smcr_sock_sendfile(sk, in_fd, offset, count);
	ssize_t n = REAL(sendfile)(out_fd, in_fd, offset, count);
	count_out(out_fd, is_tcp, n);
	return n;
}

ssize_t sendfile64(int out_fd, int in_fd, off64_t *offset, size_t count)
{
	bool is_tcp = tcp(out_fd);
	struct smcr_sock *sk = is_tcp ? smc_out(out_fd, false) : NULL;

	if (sk)
		return smcr_sock_sendfile(sk, in_fd, offset, count);
	ssize_t n = REAL(sendfile64)(out_fd, in_fd, offset, count);
	count_out(out_fd, is_tcp, n);
	return n;
}

ssize_t splice(int fd_in, loff_t *off_in, int fd_out, loff_t *off_out, size_t len,
	       unsigned int flags)
{
	bool in_tcp = tcp(fd_in), out_tcp = tcp(fd_out);
	bool dontwait = flags & SPLICE_F_NONBLOCK;
	struct smcr_sock *sk_in = in_tcp ? smc(fd_in, dontwait) : NULL;
	struct smcr_sock *sk_out = out_tcp ? smc_out(fd_out, dontwait) : NULL;

	if (sk_in && sk_out) {          /* one end of a splice is a pipe */
		errno = EINVAL;
		return -1;
	}
	if (sk_in)
		return smcr_sock_splice_out(sk_in, fd_out, len, flags);
	if (sk_out)
		return smcr_sock_splice_in(sk_out, fd_in, len, flags);
	ssize_t n = REAL(splice)(fd_in, off_in, fd_out, off_out, len, flags);
	count_in(fd_in, in_tcp, n);
	count_out(fd_out, out_tcp, n);
	return n;
}
