/*
 * loop.h - smcrd's event loop (loop.c), run once start-up is done.
 */
#ifndef SMCRD_LOOP_H
#define SMCRD_LOOP_H

struct smcrd;

/* Serves signals, address changes and the control socket until told to stop: the exit status. */
int smcrd_run(struct smcrd *d);

#endif
