/*
 * closer.h - closing, off smcrd's loop and outside smcrd, the descriptors
 * a client chose.
 *
 * close() blocks when it drops the last reference to a TCP socket with
 * SO_LINGER set and data unsent, and a FUSE file's flush waits at every
 * close() of it for the file system's owner to answer.  Any local process
 * can hand smcrd such a descriptor - in a request, or queued unread on its
 * control connection - so smcrd never closes those itself: a disposable
 * helper process does (closer.c), and smcrd only ever closes what the
 * helper left in their place.
 */
#ifndef SMCRD_CLOSER_H
#define SMCRD_CLOSER_H

#include <stdbool.h>
#include <stddef.h>

/*
 * How many descriptors may wait to be closed before smcrd stops reading
 * requests: a quarter of its open-file limit, at most this many.
 */
#define SMCRD_CLOSER_ROOM 4096

/*
 * Starts closing through helpers (until then descriptors are closed at
 * once), with room for a quarter of the open-file limit as it is now.
 */
int smcrd_closer_start(void);

/* Closes fd soon, in a helper.  Returns 0 (close()'s signature). */
int smcrd_close_later(int fd);

/*
 * Whether a message of n more descriptors may be read: they fit in the
 * room, or none waits (so that a low open-file limit slows smcrd down
 * rather than stopping it).
 */
bool smcrd_closer_has_room(size_t n);

/* What smcrd's loop polls for (POLLIN: the helper ended; -1: nothing) ... */
int smcrd_closer_fd(void);

/* ... and how long it may sleep for the closer (ms, -1: for ever). */
int smcrd_closer_timeout(void);

/* Once a round: settles the helper that ended, kills one past its time, starts the next. */
void smcrd_closer_serve(void);

#endif
