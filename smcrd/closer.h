/*
 * closer.h - closing, off smcrd's loop, the descriptors a client chose.
 *
 * close() blocks when it drops the last reference to a TCP socket with
 * SO_LINGER set and data unsent, or to a file on a FUSE mount whose owner
 * never answers.  Any local process can hand smcrd such a descriptor - in a
 * request, or queued unread on its control connection - so smcrd never
 * closes those on its loop: one thread does, in order.
 */
#ifndef SMCRD_CLOSER_H
#define SMCRD_CLOSER_H

/* Starts the thread; call with smcrd's signals already blocked (it inherits them). */
int smcrd_closer_start(void);

/* Closes fd soon, on the closer thread.  Returns 0 (close()'s signature). */
int smcrd_close_later(int fd);

#endif
