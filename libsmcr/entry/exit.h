/*
 * exit.h - the end of a process with connections open (preload_exit.c).
 */
#ifndef SMCR_EXIT_H
#define SMCR_EXIT_H

/* At start-up: exit() will let the transports finish what send() queued. */
void smcr_exit_watch(void);

#endif
