/*
 * preload_spawn.c - posix_spawn and posix_spawnp: a new process that
 * starts with a new image, made by the C library without its fork
 * handlers and with its own execve, which no preload sees.  So before the
 * call every connection is offered (the new image finds it at smcrd), and
 * the new image is handed a hold in flight per descriptor of a connection
 * it will start with, as an exec hands them (smcr_sock_spawn_prepare);
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
 */
#include <spawn.h>

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

/* A spawn made by spawn(), around the hand-over of the connections its image starts with. */
static int spawn_handing_over(const posix_spawn_file_actions_t *actions,
			      int (*spawn)(const void *call), const void *call)
{
	struct smcr_exec_handover handed;
	int fds[SPAWN_HANDED_MAX], rc;

	/* a vfork child: neither smcrd's socket nor the descriptor table is its own */
	if (smcr_sys_borrowed_memory())
		return spawn(call);
	smcr_sock_spawn_prepare(&handed, fds, handed_fds(actions, fds));
	rc = spawn(call);
	smcr_sock_spawn_done(&handed, rc == 0);
	return rc;
}

struct spawn_call {
	pid_t *pid;
	const char *file;
	const posix_spawn_file_actions_t *actions;
	const posix_spawnattr_t *attr;
	char *const *argv, *const *envp;
};

static int spawn_path(const void *arg)
{
	const struct spawn_call *c = arg;

	return REAL(posix_spawn)(c->pid, c->file, c->actions, c->attr, c->argv, c->envp);
}

static int spawn_search(const void *arg)
{
	const struct spawn_call *c = arg;

	return REAL(posix_spawnp)(c->pid, c->file, c->actions, c->attr, c->argv, c->envp);
}

int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *actions,
		const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	const struct spawn_call c = { pid, path, actions, attr, argv, envp };

	return spawn_handing_over(actions, spawn_path, &c);
}

int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *actions,
		 const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	const struct spawn_call c = { pid, file, actions, attr, argv, envp };

	return spawn_handing_over(actions, spawn_search, &c);
}
