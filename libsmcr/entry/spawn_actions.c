/*
 * spawn_actions.c - a posix_spawn's file actions followed, to learn which
 * descriptors of this process its new image starts with (spawn_actions.h).
 * The actions live in the C library's private record of them, read here
 * and nowhere else, and checked before it is trusted: a record not as
 * expected is not followed (the caller then hands nothing over).
 */
#include <limits.h>
#include <sys/types.h>

#include "spawn_actions.h"

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

/* Which descriptor of this process the new image's fd is a copy of (-1: none). */
static int source_of(const struct smcr_spawn_fds *t, int fd)
{
	for (unsigned int i = t->n; i-- > 0;)
		if (t->set[i].fd == fd)
			return t->set[i].from;
	return fd < t->closed_from ? fd : -1;
}

static void set_fd(struct smcr_spawn_fds *t, int fd, int from)
{
	t->set[t->n].fd = fd;
	t->set[t->n++].from = from;
}

static void close_from(struct smcr_spawn_fds *t, int from)
{
	for (unsigned int i = 0; i < t->n; i++)
		if (t->set[i].fd >= from)
			t->set[i].from = -1;
	if (from < t->closed_from)
		t->closed_from = from;
}

/* Follows one action; false if it is not one we know. */
static bool follow(struct smcr_spawn_fds *t, const struct glibc_spawn_action *a)
{
	switch (a->tag) {
	case DO_CLOSE:
		set_fd(t, a->action.close_action.fd, -1);
		return true;
	case DO_DUP2:
		set_fd(t, a->action.dup2_action.newfd, source_of(t, a->action.dup2_action.fd));
		return true;
	case DO_OPEN:
		set_fd(t, a->action.open_action.fd, -1);
		return true;
	case DO_CLOSEFROM:
		close_from(t, a->action.closefrom_action.from);
		return true;
	default:
		return a->tag < DO_KNOWN;       /* chdir, fchdir, tcsetpgrp */
	}
}

bool smcr_spawn_follow(struct smcr_spawn_fds *t, const posix_spawn_file_actions_t *actions)
{
	const struct glibc_spawn_action *a;

	*t = (struct smcr_spawn_fds){ .closed_from = INT_MAX };
	if (!actions)
		return true;
	if (actions->__used < 0 || actions->__used > actions->__allocated ||
	    actions->__used > SMCR_SPAWN_ACTIONS_MAX || (actions->__used && !actions->__actions))
		return false;
	a = (const void *)actions->__actions;
	for (int i = 0; i < actions->__used; i++)
		if (!follow(t, &a[i]))
			return false;
	return true;
}

/* Whether no action after set[i] set its descriptor again (the last one stands). */
static bool stands(const struct smcr_spawn_fds *t, unsigned int i)
{
	for (unsigned int later = i + 1; later < t->n; later++)
		if (t->set[later].fd == t->set[i].fd)
			return false;
	return true;
}

/* Whether fd is one the actions left as it is in this process. */
static bool untouched(const struct smcr_spawn_fds *t, int fd)
{
	for (unsigned int i = 0; i < t->n; i++)
		if (t->set[i].fd == fd)
			return false;
	return fd < t->closed_from;
}

unsigned int smcr_spawn_copies(const struct smcr_spawn_fds *t, int fd, bool survives)
{
	unsigned int n = survives && untouched(t, fd);

	for (unsigned int i = 0; i < t->n; i++)
		if (t->set[i].from == fd && stands(t, i))
			n++;
	return n;
}
