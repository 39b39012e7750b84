/*
 * std_streams.c - the standard streams of a process that starts with an SMC
 * connection as its standard input, output or error (std_streams.h).
 *
 * A program exec'd with a connection as its standard descriptors (by inetd,
 * git daemon, a dispatcher's helper) often moves its bytes with stdio:
 * getline, fread, printf, fwrite.  glibc's streams call the library's own
 * read and write from inside it, which no preload can interpose, so their
 * bytes would cross the TCP socket under the SMC connection: the peer,
 * which reads our bytes from its buffer, never sees them and waits for
 * ever, and bytes it sends never come out of ours; when it gives up and
 * closes with our bytes unread in its socket, its kernel resets the
 * connection.  So the constructor replaces each standard stream whose
 * descriptor is an SMC connection by a stream of that descriptor whose
 * reads, writes and close are our interposed calls (fopencookie), buffered
 * as the old stream was (full, as the C library buffers a socket, unless
 * the program chose otherwise with setvbuf; none for stderr).  The new
 * stream answers fileno() with the descriptor, as the old one did.
 *
 * The same holds for the streams a program makes later: fdopen() of a
 * connection gives such a stream (it is interposed here), and a standard
 * descriptor replaced by a connection (dup2(sock, 1) in a forked child,
 * then printf) gets its standard stream replaced too, after the old one
 * was flushed to where its bytes were meant to go.  The old stream is
 * left, not closed: closing it would close the descriptor.  A standard
 * stream of ours serves whatever its descriptor is, so it is made once.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <unistd.h>

#include "fdtable.h"
#include "real.h"
#include "std_streams.h"

static int fd_of(void *cookie)
{
	return (int)(intptr_t)cookie;
}

/* read(), write() and close() here are libsmcr's own (preload_*.c). */
static ssize_t stream_read(void *cookie, char *buf, size_t size)
{
	return read(fd_of(cookie), buf, size);
}

/*
 * stdio takes a short write of a cookie stream for an error and drops the
 * rest, where a file stream's write goes on until all is written: so must
 * this one.  Bytes written before an error count, as a file stream's do.
 */
static ssize_t stream_write(void *cookie, const char *buf, size_t size)
{
	size_t done = 0;

	while (done < size) {
		ssize_t n = write(fd_of(cookie), buf + done, size - done);

		if (n <= 0)
			return done ? (ssize_t)done : -1;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

/* A socket cannot seek (ESPIPE), as stdio finds when it syncs an input stream at exit. */
static int stream_seek(void *cookie, off64_t *offset, int whence)
{
	off64_t at = lseek64(fd_of(cookie), *offset, whence);

	if (at < 0)
		return -1;
	*offset = at;
	return 0;
}

static int stream_close(void *cookie)
{
	return close(fd_of(cookie));
}

/* A stream on descriptor fd whose calls libsmcr serves; NULL and errno if none. */
/* glibc's flag of an unbuffered stream (libio's _IO_UNBUFFERED; stdio_ext.h has no test). */
#define GLIBC_UNBUFFERED 0x0002

/* How old is buffered: _IONBF, _IOLBF or _IOFBF (a stream not yet used is full). */
static int buffering_of(FILE *old)
{
	if (old->_flags & GLIBC_UNBUFFERED)
		return _IONBF;
	return __flbf(old) ? _IOLBF : _IOFBF;
}

/* A stream of fd served by our calls, buffered as buffering says. */
static FILE *open_stream(int fd, const char *mode, int buffering)
{
	static const cookie_io_functions_t io = {
		.read = stream_read, .write = stream_write, .seek = stream_seek,
		.close = stream_close,
	};
	FILE *f = fopencookie((void *)(intptr_t)fd, mode, io);

	if (f) {
		f->_fileno = fd;        /* fileno(); glibc's cookie streams go by the functions */
		if (buffering != _IOFBF)
			setvbuf(f, NULL, buffering, 0);
	}
	return f;
}

/* The standard stream of descriptor fd (0, 1 or 2), and the mode it has. */
static FILE **std_stream(int fd, const char **mode)
{
	*mode = fd == STDIN_FILENO ? "r" : "w";
	return fd == STDIN_FILENO ? &stdin : fd == STDOUT_FILENO ? &stdout : &stderr;
}

/*
 * The standard stream of fd becomes one whose calls libsmcr serves, unless
 * it is one already: its calls go to whatever fd is now, so a program that
 * puts connection after connection on 1 gets no new stream for each.
 */
static void replace(int fd)
{
	static FILE *ours[STDERR_FILENO + 1];
	int saved_errno = errno;
	const char *mode;
	FILE **stream = std_stream(fd, &mode), *f;

	if (*stream == ours[fd])
		return;
	f = open_stream(fd, mode, buffering_of(*stream));
	if (f)
		*stream = ours[fd] = f;
	errno = saved_errno;
}

void smcr_std_streams_adopt(void)
{
	for (int fd = STDIN_FILENO; fd <= STDERR_FILENO; fd++)
		if (smcr_fd_sock(fd))
			replace(fd);
}

void smcr_std_stream_before_dup(int oldfd, int newfd)
{
	const char *mode;
	int saved_errno = errno;

	if ((newfd == STDOUT_FILENO || newfd == STDERR_FILENO) && newfd != oldfd &&
	    smcr_fd_sock(oldfd))
		fflush(*std_stream(newfd, &mode));
	errno = saved_errno;
}

void smcr_std_stream_after_dup(int newfd)
{
	if (newfd >= STDIN_FILENO && newfd <= STDERR_FILENO && smcr_fd_sock(newfd))
		replace(newfd);
}

FILE *fdopen(int fd, const char *mode)
{
	return smcr_fd_sock(fd) ? open_stream(fd, mode, _IOFBF) : REAL(fdopen)(fd, mode);
}
