/*
 * descriptors.h - the descriptor table's references to connections and
 * epoll instances, and readiness's view of phase changes, wired up once at
 * start (descriptors.c).
 */
#ifndef SMCR_DESCRIPTORS_H
#define SMCR_DESCRIPTORS_H

void smcr_descriptors_init(void);

#endif
