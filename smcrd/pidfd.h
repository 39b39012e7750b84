/*
 * pidfd.h - which process a client of smcrd is, for good: the process that
 * connected to the control socket, pinned by a pidfd when smcrd accepts
 * it, so that neither a pid reused after it exited nor another process
 * holding its connection is taken for it.
 *
 * SO_PEERCRED's pid is a number, read again in /proc at each look (the
 * process's name, its parent): once the process exits, that number may
 * name any later process.  A pidfd stays with the process: what /proc says
 * of the number is the pinned process's only if the pidfd says it is still
 * alive after the read.  A connection whose process has exited is held by
 * another one (passed with SCM_RIGHTS, inherited): smcrd serves it no
 * more (control.c).
 */
#ifndef SMCRD_PIDFD_H
#define SMCRD_PIDFD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/*
 * A pidfd of the process that connected sock, whose pid SO_PEERCRED said
 * is pid: SO_PEERPIDFD where the kernel has it (6.5), else pidfd_open(pid)
 * with that process checked alive (a reuse of pid between the connect and
 * the accept cannot be told there).  -1 if that process has exited (or no
 * pidfd could be made).
 */
int smcrd_pidfd_of_peer(int sock, pid_t pid);

/*
 * The fallback: a pidfd of process pid if it is alive (whatever process pid
 * names now); -1 if none is.
 */
int smcrd_pidfd_open_alive(pid_t pid);

/* Whether the process of pidfd is alive (a pidfd polls readable once it exits). */
bool smcrd_pidfd_alive(int pidfd);

/* /proc/PID/comm of pid, pinned by pidfd, into comm ("?" if gone or unreadable). */
void smcrd_pidfd_comm(pid_t pid, int pidfd, char *comm, size_t size);

/* The parent of pid, pinned by pidfd, as /proc/PID/stat says (0: unknown or gone). */
pid_t smcrd_pidfd_parent(pid_t pid, int pidfd);

#endif
