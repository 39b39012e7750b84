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
 * reads, writes and close are our interposed calls (fopencookie), with the
 * buffering the C library gives a socket (full; none for stderr).  The new
 * stream answers fileno() with the descriptor, as the old one did.
 *
 * Only the standard streams of a starting image: they are the ones a
 * program uses without opening them.  A stream the program opens later on
 * a connection (fdopen) or one whose descriptor it later replaces by a
 * connection (dup2 onto 1) is not covered yet.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "fdtable.h"
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

/* *stream, on descriptor fd, becomes one whose calls libsmcr serves. */
static void replace(FILE **stream, int fd, const char *mode)
{
	static const cookie_io_functions_t io = {
		.read = stream_read, .write = stream_write, .seek = stream_seek,
		.close = stream_close,
	};
	int saved_errno = errno;
	FILE *f = fopencookie((void *)(intptr_t)fd, mode, io);

	if (f) {
		f->_fileno = fd;        /* fileno(); glibc's cookie streams go by the functions */
		if (fd == STDERR_FILENO)
			setvbuf(f, NULL, _IONBF, 0);
		*stream = f;
	}
	errno = saved_errno;
}

void smcr_std_streams_adopt(void)
{
	if (smcr_fd_sock(STDIN_FILENO))
		replace(&stdin, STDIN_FILENO, "r");
	if (smcr_fd_sock(STDOUT_FILENO))
		replace(&stdout, STDOUT_FILENO, "w");
	if (smcr_fd_sock(STDERR_FILENO))
		replace(&stderr, STDERR_FILENO, "w");
}
