/*
 * preload_io.c - interposed data calls: the read/recv and write/send
 * families, their glibc fortified forms, sendfile and splice.
 *
 * Every call is the C library's; bytes that cross a TCP socket are counted.
 * This is the hot path of every application under the preload: one table
 * look-up and one relaxed add, never a lock or an extra system call - except
 * once per connection, at the first call after a non-blocking connect(),
 * where the handshake's outcome is read (handshake.h).
 */
#include <fcntl.h>
#include <sys/sendfile.h>
#include <unistd.h>

#include "fdtable.h"
#include "handshake.h"
#include "real.h"
#include "stats.h"

/* Whether fd is a TCP socket, settling a non-blocking connect() first. */
static inline bool tcp(int fd)
{
	enum smcr_fd_state state = smcr_fd_get(fd);

	if (__builtin_expect(state == SMCR_FD_TCP_CONNECTING, 0))
		state = smcr_handshake_settle(fd);
	return smcr_fd_state_is_tcp(state);
}

static inline void count_in(bool is_tcp, ssize_t n)
{
	if (n > 0 && is_tcp)
		smcr_stat_add(tcp_bytes_in, n);
}

static inline void count_out(bool is_tcp, ssize_t n)
{
	if (n > 0 && is_tcp)
		smcr_stat_add(tcp_bytes_out, n);
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
	ssize_t n = REAL(read)(fd, buf, len);
	count_in(is_tcp, n);
	return n;
}

ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen)
{
	bool is_tcp = tcp(fd);
	ssize_t n = REAL(__read_chk)(fd, buf, len, buflen);
	count_in(is_tcp, n);
	return n;
}

ssize_t readv(int fd, const struct iovec *iov, int iovcnt)
{
	bool is_tcp = tcp(fd);
	ssize_t n = REAL(readv)(fd, iov, iovcnt);
	count_in(is_tcp, n);
	return n;
}

ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	bool is_tcp = tcp(fd);
	ssize_t n = REAL(recv)(fd, buf, len, flags);
	count_in(is_tcp, n);
	return n;
}

ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags)
{
	bool is_tcp = tcp(fd);
	ssize_t n = REAL(__recv_chk)(fd, buf, len, buflen, flags);
	count_in(is_tcp, n);
	return n;
}

ssize_t recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *addr,
		 socklen_t *addrlen)
{
	bool is_tcp = tcp(fd);
	ssize_t n = REAL(recvfrom)(fd, buf, len, flags, addr, addrlen);
	count_in(is_tcp, n);
	return n;
}

ssize_t __recvfrom_chk(int fd, void *buf, size_t len, size_t buflen, int flags,
		       struct sockaddr *addr, socklen_t *addrlen)
{
	bool is_tcp = tcp(fd);
	ssize_t n = REAL(__recvfrom_chk)(fd, buf, len, buflen, flags, addr, addrlen);
	count_in(is_tcp, n);
	return n;
}

ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	bool is_tcp = tcp(fd);
	ssize_t n = REAL(recvmsg)(fd, msg, flags);
	count_in(is_tcp, n);
	return n;
}

int recvmmsg(int fd, struct mmsghdr *msgs, unsigned int vlen, int flags,
	     struct timespec *timeout)
{
	bool is_tcp = tcp(fd);
	int n = REAL(recvmmsg)(fd, msgs, vlen, flags, timeout);
	if (n > 0)
		count_in(is_tcp, (ssize_t)mmsg_bytes(msgs, n));
	return n;
}

/* sending */

ssize_t write(int fd, const void *buf, size_t len)
{
	bool is_tcp = tcp(fd);
	ssize_t n = REAL(write)(fd, buf, len);
	count_out(is_tcp, n);
	return n;
}

ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
	bool is_tcp = tcp(fd);
	ssize_t n = REAL(writev)(fd, iov, iovcnt);
	count_out(is_tcp, n);
	return n;
}

ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	bool is_tcp = tcp(fd);
	ssize_t n = REAL(send)(fd, buf, len, flags);
	count_out(is_tcp, n);
	return n;
}

ssize_t sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *addr,
	       socklen_t addrlen)
{
	bool is_tcp = tcp(fd);
	ssize_t n = REAL(sendto)(fd, buf, len, flags, addr, addrlen);
	count_out(is_tcp, n);
	return n;
}

ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	bool is_tcp = tcp(fd);
	ssize_t n = REAL(sendmsg)(fd, msg, flags);
	count_out(is_tcp, n);
	return n;
}

int sendmmsg(int fd, struct mmsghdr *msgs, unsigned int vlen, int flags)
{
	bool is_tcp = tcp(fd);
	int n = REAL(sendmmsg)(fd, msgs, vlen, flags);
	if (n > 0)
		count_out(is_tcp, (ssize_t)mmsg_bytes(msgs, n));
	return n;
}

ssize_t sendfile(int out_fd, int in_fd, off_t *offset, size_t count)
{
	bool is_tcp = tcp(out_fd);
	ssize_t n = REAL(sendfile)(out_fd, in_fd, offset, count);
	count_out(is_tcp, n);
	return n;
}

ssize_t sendfile64(int out_fd, int in_fd, off64_t *offset, size_t count)
{
	bool is_tcp = tcp(out_fd);
	ssize_t n = REAL(sendfile64)(out_fd, in_fd, offset, count);
	count_out(is_tcp, n);
	return n;
}

ssize_t splice(int fd_in, loff_t *off_in, int fd_out, loff_t *off_out, size_t len,
	       unsigned int flags)
{
	bool in_tcp = tcp(fd_in), out_tcp = tcp(fd_out);
	ssize_t n = REAL(splice)(fd_in, off_in, fd_out, off_out, len, flags);
	count_in(in_tcp, n);
	count_out(out_tcp, n);
	return n;
}
