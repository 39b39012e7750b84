/*
 * preload_spawn.c - posix_spawn and posix_spawnp: a new process that
 * starts with a new image, made by the C library without its fork
 * handlers and with its own execve, which no preload sees.  So before the
 * call each connection the new image will start with is offered (it finds
 * it at smcrd), and the new image is handed a hold in flight per such
 * descriptor, as an exec hands them (smcr_sock_spawn_prepare);
 * they are taken back if the spawn fails.  Without the holds a parent
 * that closed its copy as soon as posix_spawn returned ended the
 * connection before the new image adopted it.
 *
 * Which descriptors the new image starts with follows from this process's
 * (those not close-on-exec) and the spawn's file actions (close, dup2,
 * open, closefrom, in order: spawn_actions.c, which reads them from the C
 * library's private record).  Where that record is not as expected,
 * nothing is handed over: the new image then adds holds of its own as it
 * adopts, as before, which is safe but for a parent that closes at once.
 * A spawn's attributes do not change descriptors.
 *
 * system() and popen() spawn `sh -c` with the C library's own posix_spawn,
 * which no preload sees either, so they are handed over the same way:
 * system()'s shell starts with every descriptor that is not
 * close-on-exec (a spawn without file actions), popen()'s too but for 1
 * ("r") or 0 ("w"), its pipe (a spawn that closes it).  Before, a server
 * that ran a command on a connection whose client's Proposal it had not
 * read left the new image nothing at smcrd: it took the connection for
 * plain TCP, and the Proposal reached the command as data.
 */
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>

#include "fdtable.h"
#include "real.h"
#include "smc_sock.h"
#include "spawn_actions.h"
#include "sys.h"

/* At most this many descriptors are handed to the new image (fewer is safe). */
#define SPAWN_HANDED_MAX 256

/*
 * This process's descriptors of connections, once per descriptor of the
 * new image that is a copy of it, into fds (at most SPAWN_HANDED_MAX);
 * how many.  None if the file actions cannot be followed.
 */
static unsigned int handed_fds(const posix_spawn_file_actions_t *actions, int *fds)
{
	struct smcr_spawn_fds t;
	unsigned int n = 0;

	if (!smcr_spawn_follow(&t, actions))
		return 0;
	for (int fd = smcr_fd_next_sock(0); fd >= 0; fd = smcr_fd_next_sock((unsigned int)fd + 1))
		for (unsigned int copies = smcr_spawn_copies(&t, fd, smcr_sys_survives_exec(fd));
		     copies && n < SPAWN_HANDED_MAX; copies--)
			fds[n++] = fd;
	return n;
}

/*
 * The spawn spawn(call) makes, around the hand-over of the connections its
 * image starts with; spawn says whether it made a new process, and leaves
 * its result in call.
 */
static void spawn_handing_over(const posix_spawn_file_actions_t *actions,
			       bool (*spawn)(void *call), void *call)
{
	struct smcr_exec_handover handed;
	int fds[SPAWN_HANDED_MAX];

	/* a vfork child: neither smcrd's socket nor the descriptor table is its own */
	if (smcr_sys_borrowed_memory()) {
		spawn(call);
		return;
	}
	smcr_sock_spawn_prepare(&handed, fds, handed_fds(actions, fds));
	smcr_sock_spawn_done(&handed, spawn(call));
}

struct spawn_call {
	pid_t *pid;
	const char *file;
	const posix_spawn_file_actions_t *actions;
	const posix_spawnattr_t *attr;
	char *const *argv, *const *envp;
	int rc;
};

static bool spawn_path(void *arg)
{
	struct spawn_call *c = arg;

	c->rc = REAL(posix_spawn)(c->pid, c->file, c->actions, c->attr, c->argv, c->envp);
	return c->rc == 0;
}

static bool spawn_search(void *arg)
{
	struct spawn_call *c = arg;

	c->rc = REAL(posix_spawnp)(c->pid, c->file, c->actions, c->attr, c->argv, c->envp);
	return c->rc == 0;
}

int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *actions,
		const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	struct spawn_call c = { pid, path, actions, attr, argv, envp, 0 };

	spawn_handing_over(actions, spawn_path, &c);
	return c.rc;
}

int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *actions,
		 const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	struct spawn_call c = { pid, file, actions, attr, argv, envp, 0 };

	spawn_handing_over(actions, spawn_search, &c);
	return c.rc;
}

struct shell_call {
	const char *command, *type;
	int status;		/* system's */
	FILE *stream;		/* popen's */
};

/* system() returns -1 when it could not make the shell's process, else its status. */
static bool run_system(void *arg)
{
	struct shell_call *c = arg;

	c->status = REAL(system)(c->command);
	return c->status != -1;
}

static bool run_popen(void *arg)
{
	struct shell_call *c = arg;

	c->stream = REAL(popen)(c->command, c->type);
	return c->stream != NULL;
}

int system(const char *command)
{
	struct shell_call c = { .command = command };

	spawn_handing_over(NULL, run_system, &c);
	return c.status;
}

/* The shell's 1 ("r") or 0 ("w") is the pipe: a connection there is not handed to it. */
FILE *popen(const char *command, const char *type)
{
	struct shell_call c = { .command = command, .type = type };
	posix_spawn_file_actions_t pipe_end;

	if (!type || (type[0] != 'r' && type[0] != 'w') ||
	    posix_spawn_file_actions_init(&pipe_end) != 0)
		return REAL(popen)(command, type);	/* fails as the C library says */
	if (posix_spawn_file_actions_addclose(&pipe_end, type[0] == 'r' ? 1 : 0) == 0)
		spawn_handing_over(&pipe_end, run_popen, &c);
	else
		run_popen(&c);
	posix_spawn_file_actions_destroy(&pipe_end);
	return c.stream;
}
