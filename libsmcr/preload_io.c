/*
 * preload_io.c - interposed data calls: the read/recv and write/send
 * families, their glibc fortified forms, sendfile and splice.
 *
 * Every call is the C library's; bytes that cross a TCP socket are counted.
 * This is the hot path of every application under the preload: one table
 * look-up and one relaxed add, never a lock or an extra system call.
 */
#include <fcntl.h>
#include <sys/sendfile.h>
#include <unistd.h>

#include "fdtable.h"
#include "real.h"
#include "stats.h"

static inline void count_in(int fd, ssize_t n)
{
	if (n > 0 && smcr_fd_is_tcp(fd))
		smcr_stat_add(tcp_bytes_in, n);
}

static inline void count_out(int fd, ssize_t n)
{
	if (n > 0 && smcr_fd_is_tcp(fd))
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
	ssize_t n = REAL(read)(fd, buf, len);
	count_in(fd, n);
	return n;
}

ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen)
{
	ssize_t n = REAL(__read_chk)(fd, buf, len, buflen);
	count_in(fd, n);
	return n;
}

ssize_t readv(int fd, const struct iovec *iov, int iovcnt)
{
	ssize_t n = REAL(readv)(fd, iov, iovcnt);
	count_in(fd, n);
	return n;
}

ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	ssize_t n = REAL(recv)(fd, buf, len, flags);
	count_in(fd, n);
	return n;
}

ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags)
{
	ssize_t n = REAL(__recv_chk)(fd, buf, len, buflen, flags);
	count_in(fd, n);
	return n;
}

ssize_t recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *addr,
		 socklen_t *addrlen)
{
	ssize_t n = REAL(recvfrom)(fd, buf, len, flags, addr, addrlen);
	count_in(fd, n);
	return n;
}

ssize_t __recvfrom_chk(int fd, void *buf, size_t len, size_t buflen, int flags,
		       struct sockaddr *addr, socklen_t *addrlen)
{
	ssize_t n = REAL(__recvfrom_chk)(fd, buf, len, buflen, flags, addr, addrlen);
	count_in(fd, n);
	return n;
}

ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	ssize_t n = REAL(recvmsg)(fd, msg, flags);
	count_in(fd, n);
	return n;
}

int recvmmsg(int fd, struct mmsghdr *msgs, unsigned int vlen, int flags,
	     struct timespec *timeout)
{
	int n = REAL(recvmmsg)(fd, msgs, vlen, flags, timeout);
	if (n > 0)
		count_in(fd, (ssize_t)mmsg_bytes(msgs, n));
	return n;
}

/* sending */

ssize_t write(int fd, const void *buf, size_t len)
{
	ssize_t n = REAL(write)(fd, buf, len);
	count_out(fd, n);
	return n;
}

ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
	ssize_t n = REAL(writev)(fd, iov, iovcnt);
	count_out(fd, n);
	return n;
}

ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	ssize_t n = REAL(send)(fd, buf, len, flags);
	count_out(fd, n);
	return n;
}

ssize_t sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *addr,
	       socklen_t addrlen)
{
	ssize_t n = REAL(sendto)(fd, buf, len, flags, addr, addrlen);
	count_out(fd, n);
	return n;
}

ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	ssize_t n = REAL(sendmsg)(fd, msg, flags);
	count_out(fd, n);
	return n;
}

int sendmmsg(int fd, struct mmsghdr *msgs, unsigned int vlen, int flags)
{
	int n = REAL(sendmmsg)(fd, msgs, vlen, flags);
	if (n > 0)
		count_out(fd, (ssize_t)mmsg_bytes(msgs, n));
	return n;
}

ssize_t sendfile(int out_fd, int in_fd, off_t *offset, size_t count)
{
	ssize_t n = REAL(sendfile)(out_fd, in_fd, offset, count);
	count_out(out_fd, n);
	return n;
}

ssize_t sendfile64(int out_fd, int in_fd, off64_t *offset, size_t count)
{
	ssize_t n = REAL(sendfile64)(out_fd, in_fd, offset, count);
	count_out(out_fd, n);
	return n;
}

ssize_t splice(int fd_in, loff_t *off_in, int fd_out, loff_t *off_out, size_t len,
	       unsigned int flags)
{
	ssize_t n = REAL(splice)(fd_in, off_in, fd_out, off_out, len, flags);
	count_in(fd_in, n);
	count_out(fd_out, n);
	return n;
}
