/*
 * preload_exec.c - the exec functions.  An exec replaces the image, not the
 * process: the connections whose descriptors stay open are the new image's,
 * which adopts them as it starts (shim/handshake.c).  Before the call this
 * image hands each of them its hold (smcr_sock_exec_prepare: counted in
 * flight, as SCM_RIGHTS counts a message's; a vfork child hands holds of
 * its own, its parent keeping its), and takes them back if the call
 * returns, which it does only when it failed.  Without the hand-over
 * the new image's holds came on top of the old one's, which nobody gave
 * back: a connection the new image closed stayed open at smcrd, buffers
 * and all, as long as the process lived.
 *
 * The C library's path search (execvp, execvpe, execlp) and its list forms
 * call its own execve, which no preload sees, so each public form is
 * watched; each is made as the same execve or execvpe with the arguments
 * the C library would pass.  The raw system call is watched in
 * preload_clone.c, posix_spawn in preload_spawn.c, vfork in
 * preload_vfork.c.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <unistd.h>

#include "exec.h"
#include "real.h"
#include "smc_sock.h"

/* One exec, as the C library's own execve, execvpe, execveat or fexecve. */
struct exec_call {
	enum { EXEC_PATH, EXEC_SEARCH, EXEC_AT, EXEC_FD } how;
	int dirfd, flags;               /* EXEC_AT (dirfd alone: EXEC_FD) */
	const char *file;
	char *const *argv, *const *envp;
};

static long make_exec(void *arg)
{
	const struct exec_call *c = arg;

	switch (c->how) {
	case EXEC_SEARCH:
		return REAL(execvpe)(c->file, c->argv, c->envp);
	case EXEC_AT:
		return REAL(execveat)(c->dirfd, c->file, c->argv, c->envp, c->flags);
	case EXEC_FD:
		return REAL(fexecve)(c->dirfd, c->argv, c->envp);
	default:
		return REAL(execve)(c->file, c->argv, c->envp);
	}
}

long smcr_exec_by(long (*exec)(void *arg), void *arg)
{
	struct smcr_exec_handover handed;
	long rc;
	int saved_errno;

	smcr_sock_exec_prepare(&handed);
	rc = exec(arg);
	saved_errno = errno;
	smcr_sock_exec_failed(&handed); /* it returned: this image goes on */
	errno = saved_errno;
	return rc;
}

static int exec_watched(const struct exec_call *c)
{
	return (int)smcr_exec_by(make_exec, (void *)c);
}

/* How many arguments a list form has, arg0 included, up to the NULL. */
static size_t list_length(const char *arg0, va_list rest)
{
	size_t n = 0;

	for (const char *arg = arg0; arg; arg = va_arg(rest, const char *))
		n++;
	return n;
}

/*
 * A list form (execl, execlp, execle): c with its argv made from arg0 and
 * the arguments in *rest up to the NULL, and with the environment that
 * follows them if env_follows (execle).
 */
static int exec_list(struct exec_call *c, const char *arg0, va_list *rest, bool env_follows)
{
	va_list counted;
	size_t n = 0;

	va_copy(counted, *rest);
	char *argv[list_length(arg0, counted) + 1];
	va_end(counted);
	for (const char *arg = arg0; arg; arg = va_arg(*rest, const char *))
		argv[n++] = (char *)arg;
	argv[n] = NULL;
	c->argv = argv;
	if (env_follows)
		c->envp = va_arg(*rest, char *const *);
	return exec_watched(c);
}

int execve(const char *path, char *const argv[], char *const envp[])
{
	return exec_watched(&(struct exec_call){ .how = EXEC_PATH, .file = path, .argv = argv, .envp = envp });
}

int execv(const char *path, char *const argv[])
{
	return exec_watched(&(struct exec_call){ .how = EXEC_PATH, .file = path, .argv = argv, .envp = environ });
}

int execvpe(const char *file, char *const argv[], char *const envp[])
{
	return exec_watched(&(struct exec_call){ .how = EXEC_SEARCH, .file = file, .argv = argv, .envp = envp });
}

int execvp(const char *file, char *const argv[])
{
	return exec_watched(&(struct exec_call){ .how = EXEC_SEARCH, .file = file, .argv = argv, .envp = environ });
}

int execl(const char *path, const char *arg0, ...)
{
	va_list rest;
	int rc;

	va_start(rest, arg0);
	rc = exec_list(&(struct exec_call){ .how = EXEC_PATH, .file = path, .envp = environ },
		       arg0, &rest, false);
	va_end(rest);
	return rc;
}

int execlp(const char *file, const char *arg0, ...)
{
	va_list rest;
	int rc;

	va_start(rest, arg0);
	rc = exec_list(&(struct exec_call){ .how = EXEC_SEARCH, .file = file, .envp = environ },
		       arg0, &rest, false);
	va_end(rest);
	return rc;
}

int execle(const char *path, const char *arg0, ...)
{
	va_list rest;
	int rc;

	va_start(rest, arg0);
	rc = exec_list(&(struct exec_call){ .how = EXEC_PATH, .file = path }, arg0, &rest, true);
	va_end(rest);
	return rc;
}

int fexecve(int fd, char *const argv[], char *const envp[])
{
	return exec_watched(&(struct exec_call){ .how = EXEC_FD, .dirfd = fd, .argv = argv, .envp = envp });
}

int execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags)
{
	return exec_watched(&(struct exec_call){ .how = EXEC_AT, .dirfd = dirfd, .flags = flags,
						 .file = path, .argv = argv, .envp = envp });
}
