/*
 * fork.h - libsmcr's fork() handling (fork.c), installed once at start.
 */
#ifndef SMCR_FORK_H
#define SMCR_FORK_H

void smcr_fork_init(void);

/*
 * Makes a process by fork_call(arg), which returns as fork() does, with
 * the steps fork() gets from pthread_atfork around it: for the callers of
 * the raw clone system call, which glibc's fork handlers never see.
 */
long smcr_fork_by(long (*fork_call)(void *arg), void *arg);

#endif
