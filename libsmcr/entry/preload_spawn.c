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
 * open, closefrom, in order), which live in the C library's private record
 * (below).  Where that record is not as expected, nothing is handed over:
 * the new image then adds holds of its own as it adopts, as before, which
 * is safe but for a parent that closes at once.  A spawn's attributes do
 * not change descriptors.
 */
#include <limits.h>
#include <spawn.h>
#include <stdbool.h>
#include <sys/types.h>

#include "fdtable.h"
#include "real.h"
#include "smc_sock.h"
#include "sys.h"

/*
 * One file action as glibc records it (posix/spawn_int.h, struct
 * __spawn_action: the layout of glibc 2.2 to 2.39, later tags added at
 * the end), which posix_spawn_file_actions_t's public __actions points to.
 */
struct glibc_spawn_action {
	enum {
		DO_CLOSE, DO_DUP2, DO_OPEN, DO_CHDIR, DO_FCHDIR, DO_CLOSEFROM, DO_TCSETPGRP,
		DO_KNOWN                /* tags from here on are not known to us */
	} tag;
	union {
		struct { int fd; } close_action;
		struct { int fd, newfd; } dup2_action;
		struct { int fd; char *path; int oflag; mode_t mode; } open_action;
		struct { char *path; } chdir_action;
		struct { int fd; } fchdir_action;
		struct { int from; } closefrom_action;
		struct { int fd; } setpgrp_action;
	} action;
};

/* At most this many file actions are followed; a spawn with more hands nothing over. */
#define SPAWN_ACTIONS_MAX 64
/* At most this many connection descriptors are handed to the new image (fewer is safe). */
#define SPAWN_HANDED_MAX 256

/*
 * The new image's descriptors as the file actions leave them: those the
 * actions set (from: the descriptor of this process it is a copy of, -1
 * for a file the action opened or a closed number), and every other one
 * is this process's own below closed_from.
 */
struct spawn_fds {
	unsigned int n;
	struct { int fd, from; } set[SPAWN_ACTIONS_MAX];
	int closed_from;
};

/* Which descriptor of this process the new image's fd is a copy of (-1: none). */
static int source_of(const struct spawn_fds *t, int fd)
{
	for (unsigned int i = t->n; i-- > 0;)
		if (t->set[i].fd == fd)
			return t->set[i].from;
	return fd < t->closed_from ? fd : -1;
}

static void set_fd(struct spawn_fds *t, int fd, int from)
{
	t->set[t->n].fd = fd;
	t->set[t->n++].from = from;
}

/* Follows one action; false if it is not one we know. */
static bool follow(struct spawn_fds *t, const struct glibc_spawn_action *a)
{
	switch (a->tag) {
	case DO_CLOSE:
		set_fd(t, a->action.close_action.fd, -1);
		return true;
	case DO_DUP2:           /* the copy, even onto itself, is not close-on-exec */
		set_fd(t, a->action.dup2_action.newfd, source_of(t, a->action.dup2_action.fd));
		return true;
	case DO_OPEN:
		set_fd(t, a->action.open_action.fd, -1);
		return true;
	case DO_CLOSEFROM:
		for (unsigned int i = 0; i < t->n; i++)
			if (t->set[i].fd >= a->action.closefrom_action.from)
				t->set[i].from = -1;
		if (a->action.closefrom_action.from < t->closed_from)
			t->closed_from = a->action.closefrom_action.from;
		return true;
	default:
		return a->tag < DO_KNOWN;       /* chdir, fchdir, tcsetpgrp */
	}
}

/* The file actions followed into *t; false if they cannot be. */
static bool follow_all(struct spawn_fds *t, const posix_spawn_file_actions_t *actions)
{
	const struct glibc_spawn_action *a;

	*t = (struct spawn_fds){ .closed_from = INT_MAX };
	if (!actions)
		return true;
	if (actions->__used < 0 || actions->__used > actions->__allocated ||
	    actions->__used > SPAWN_ACTIONS_MAX || (actions->__used && !actions->__actions))
		return false;
	a = (const void *)actions->__actions;
	for (int i = 0; i < actions->__used; i++)
		if (!follow(t, &a[i]))
			return false;
	return true;
}

/* Whether no action after set[i] set its descriptor again (the last one stands). */
static bool stands(const struct spawn_fds *t, unsigned int i)
{
	for (unsigned int later = i + 1; later < t->n; later++)
		if (t->set[later].fd == t->set[i].fd)
			return false;
	return true;
}

/* Whether fd is one the actions left as it is in this process. */
static bool untouched(const struct spawn_fds *t, int fd)
{
	for (unsigned int i = 0; i < t->n; i++)
		if (t->set[i].fd == fd)
			return false;
	return fd < t->closed_from;
}

/*
 * This process's descriptors of connections that the new image will hold,
 * one per descriptor of the new image, into fds (at most
 * SPAWN_HANDED_MAX); how many.
 */
static unsigned int handed_fds(const posix_spawn_file_actions_t *actions, int *fds)
{
	struct spawn_fds t;
	unsigned int n = 0;

	if (!follow_all(&t, actions))
		return 0;
	for (unsigned int i = 0; i < t.n && n < SPAWN_HANDED_MAX; i++)
		if (t.set[i].from >= 0 && stands(&t, i) && smcr_fd_sock(t.set[i].from))
			fds[n++] = t.set[i].from;
	for (int fd = smcr_fd_next_sock(0); fd >= 0 && n < SPAWN_HANDED_MAX;
	     fd = smcr_fd_next_sock((unsigned int)fd + 1))
		if (untouched(&t, fd) && smcr_sys_survives_exec(fd))
			fds[n++] = fd;
	return n;
}

/* A spawn made by spawn(), around the hand-over of the connections its image starts with. */
static int spawn_handing_over(const posix_spawn_file_actions_t *actions,
			      int (*spawn)(const void *call), const void *call)
{
	struct smcr_exec_handover handed;
	int fds[SPAWN_HANDED_MAX], rc;

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
