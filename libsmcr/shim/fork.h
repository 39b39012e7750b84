/*
 * fork.h - libsmcr's fork() handling (fork.c), installed once at start.
 */
#ifndef SMCR_FORK_H
#define SMCR_FORK_H

void smcr_fork_init(void);

#endif
