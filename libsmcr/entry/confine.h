/*
 * confine.h - what libsmcr does before a process installs a seccomp filter
 * (preload_confine.c), whichever way it installs it: prctl(PR_SET_SECCOMP)
 * or the seccomp system call (preload_clone.c's syscall()).
 */
#ifndef SMCR_CONFINE_H
#define SMCR_CONFINE_H

/*
 * The process is about to enter seccomp mode (SECCOMP_MODE_STRICT or
 * SECCOMP_MODE_FILTER, whose program is prog, a struct sock_fprog).
 */
void smcr_before_seccomp(unsigned long mode, const void *prog);

#endif
