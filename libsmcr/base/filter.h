/*
 * filter.h - what the seccomp filters a process installed allow.
 *
 * Sandboxed servers (vsftpd, OpenSSH, browsers' helpers) install a seccomp
 * filter: a classic BPF program the kernel runs on every system call, which
 * kills the process, traps or fails the call unless it allows it.  libsmcr
 * makes calls of its own inside the application's (the CLC exchange's
 * recv, a wait's ppoll, smcrd's bpf map), so it must know which of them the
 * process may still make.  The program is copied when the process installs
 * it (entry/preload_confine.c) and run here, on the call libsmcr is about to
 * make, exactly as the kernel would run it (filters stack: every one must
 * allow).  The interpreter is pure and bounded: at most BPF_MAXINSNS
 * instructions, jumps only forward, loads only inside struct seccomp_data;
 * anything else denies.
 */
#ifndef SMCR_FILTER_H
#define SMCR_FILTER_H

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdbool.h>
#include <stdint.h>

/* The action (SECCOMP_RET_*, with its data) prog returns on d; SECCOMP_RET_KILL_PROCESS if malformed. */
uint32_t smcr_filter_run(const struct sock_filter *prog, unsigned int len,
			 const struct seccomp_data *d);

/* Whether action lets the call run (ALLOW, LOG: the kernel runs it). */
bool smcr_filter_action_allows(uint32_t action);

/*
 * The process installs prog (not yet applied: the caller installs it next);
 * false if it cannot be kept (memory, too long), and then every call counts
 * as denied from now on.
 */
bool smcr_filter_installed(const struct sock_fprog *prog);

/*
 * At start: whether the process already runs under a seccomp filter set
 * before this image (systemd's SystemCallFilter=, a container runtime's
 * profile, a program that filtered itself and then exec'd), whose program
 * libsmcr never saw.  Such a filter is assumed to forbid bpf(2), as
 * systemd's @system-service does (bpf is in @privileged) and kills the
 * caller: new connections then stay on TCP (CONFINED), where smcrd's maps
 * would have killed the process at its first listen, connect or accept.
 * Every other call of libsmcr's is in @system-service.  An administrator
 * whose filter allows bpf says so with SMCR_SECCOMP_ALLOWS_BPF=1.
 */
void smcr_filter_learn_inherited(void);

/* Whether some filter was installed (this process or an ancestor since start). */
bool smcr_filter_any(void);

/* Whether every filter installed allows system call nr with args (unused: 0). */
bool smcr_filter_permits(long nr, const uint64_t args[6]);

/*
 * Whether a thread may wait for a pthread lock another thread holds, and
 * wake one that waits for its own: the futex calls (private FUTEX_WAIT and
 * FUTEX_WAKE) that the C library makes only when a lock is contended.
 */
bool smcr_filter_permits_lock_waits(void);

/* Whether getsockopt(fd, SOL_SOCKET, opt) is allowed for each of the n opts. */
bool smcr_filter_permits_sockopts(int fd, const int *opts, int n);

/* The same, were candidate (not yet installed) installed too. */
bool smcr_filter_permits_with(const struct sock_fprog *candidate, long nr,
			      const uint64_t args[6]);

#endif
