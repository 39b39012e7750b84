/*
 * spawn_actions.h - which descriptors of this process a posix_spawn's new
 * image starts with, by the spawn's file actions (spawn_actions.c): pure,
 * over the C library's record of them, for preload_spawn.c.
 */
#ifndef SMCR_SPAWN_ACTIONS_H
#define SMCR_SPAWN_ACTIONS_H

#include <spawn.h>
#include <stdbool.h>

/* At most this many file actions are followed; a spawn with more is not. */
#define SMCR_SPAWN_ACTIONS_MAX 64

/*
 * The new image's descriptors as the file actions leave them: those the
 * actions set (from: the descriptor of this process it is a copy of, -1
 * for a file an action opened or a number it closed), and every other one
 * is this process's own, if below closed_from and not close-on-exec.
 */
struct smcr_spawn_fds {
	unsigned int n;
	struct { int fd, from; } set[SMCR_SPAWN_ACTIONS_MAX];
	int closed_from;
};

/*
 * Follows the file actions (NULL: none) into *t, in order: close, dup2
 * (its copy, even onto itself, is not close-on-exec), open, closefrom,
 * and the ones that change no descriptor.  False if they cannot be
 * followed: more than SMCR_SPAWN_ACTIONS_MAX, an action not known, a
 * record not as expected.
 */
bool smcr_spawn_follow(struct smcr_spawn_fds *t, const posix_spawn_file_actions_t *actions);

/*
 * How many descriptors of the new image are copies of this process's fd,
 * which survives an exec itself (is not close-on-exec) or not.
 */
unsigned int smcr_spawn_copies(const struct smcr_spawn_fds *t, int fd, bool survives);

#endif
