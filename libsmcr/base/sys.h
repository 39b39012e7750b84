/*
 * sys.h - the descriptors libsmcr makes for itself, in one place, with one
 * contract: each function returns a descriptor or a negative errno, never
 * changes errno (it runs inside the application's calls), and makes its
 * descriptors close-on-exec.
 *
 * libsmcr's own descriptors (smcrd's socket and maps, a connection's
 * eventfd) live in the process beside the application's.  They are moved
 * out of the application's way by one rule, smcr_sys_fd_aside: programs
 * that dup2() onto a number they expect free, or pick the lowest free
 * number, keep getting what they would get without libsmcr.
 */
#ifndef SMCR_SYS_H
#define SMCR_SYS_H

#include <stdint.h>

/*
 * Moves fd (ours) to the lowest free number at or above half the soft
 * RLIMIT_NOFILE (at most 512 below a limit of 2048), close-on-exec; returns
 * the new number, or fd unchanged if it cannot move (a limit below 64, no
 * free number there) or is no descriptor (negative: an error passes through).
 */
int smcr_sys_fd_aside(int fd);

/* A new memfd of bytes, close-on-exec, sealed so that its size can never change. */
int smcr_sys_memfd_sealed(uint64_t bytes);

/* A new eventfd, non-blocking and close-on-exec. */
int smcr_sys_eventfd(void);

#endif
