/*
 * real.h - the C library's own socket functions, found behind the preload.
 *
 * libsmcr defines socket(), read(), epoll_wait(), ... so that the application
 * calls us first.  To do the real work we call the next definition in the
 * lookup order (normally glibc's), resolved once with dlsym(RTLD_NEXT) on first
 * use.  One list below declares every function we interpose; it generates the
 * pointer table and the function-pointer types used by REAL().
 */
#ifndef SMCR_REAL_H
#define SMCR_REAL_H

#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>

#define SMCR_REAL_FUNCS(X)                                                          \
	/* socket lifecycle */                                                      \
	X(int, socket, (int, int, int))                                             \
	X(int, bind, (int, const struct sockaddr *, socklen_t))                    \
	X(int, listen, (int, int))                                                  \
	X(int, accept, (int, struct sockaddr *, socklen_t *))                       \
	X(int, accept4, (int, struct sockaddr *, socklen_t *, int))                 \
	X(int, connect, (int, const struct sockaddr *, socklen_t))                 \
	X(int, shutdown, (int, int))                                                \
	X(int, close, (int))                                                        \
	X(int, close_range, (unsigned int, unsigned int, int))                      \
	X(void, closefrom, (int))                                                   \
	X(int, dup, (int))                                                          \
	X(int, dup2, (int, int))                                                    \
	X(int, dup3, (int, int, int))                                               \
	X(int, fcntl, (int, int, ...))                                              \
	X(int, fcntl64, (int, int, ...))                                            \
	X(int, ioctl, (int, unsigned long, ...))                                    \
	X(int, getsockopt, (int, int, int, void *, socklen_t *))                    \
	X(int, setsockopt, (int, int, int, const void *, socklen_t))                \
	X(int, getsockname, (int, struct sockaddr *, socklen_t *))                  \
	X(int, getpeername, (int, struct sockaddr *, socklen_t *))                  \
	/* receiving */                                                             \
	X(ssize_t, read, (int, void *, size_t))                                     \
	X(ssize_t, readv, (int, const struct iovec *, int))                         \
	X(ssize_t, recv, (int, void *, size_t, int))                                \
	X(ssize_t, recvfrom, (int, void *, size_t, int, struct sockaddr *,          \
			      socklen_t *))                                         \
	X(ssize_t, recvmsg, (int, struct msghdr *, int))                            \
	X(int, recvmmsg, (int, struct mmsghdr *, unsigned int, int,                 \
			  struct timespec *))                                       \
	X(ssize_t, __read_chk, (int, void *, size_t, size_t))                       \
	X(ssize_t, __recv_chk, (int, void *, size_t, size_t, int))                  \
	X(ssize_t, __recvfrom_chk, (int, void *, size_t, size_t, int,               \
				    struct sockaddr *, socklen_t *))                \
	/* sending */                                                               \
	X(ssize_t, write, (int, const void *, size_t))                              \
	X(ssize_t, writev, (int, const struct iovec *, int))                        \
	X(ssize_t, send, (int, const void *, size_t, int))                          \
	X(ssize_t, sendto, (int, const void *, size_t, int,                         \
			    const struct sockaddr *, socklen_t))                    \
	X(ssize_t, sendmsg, (int, const struct msghdr *, int))                      \
	X(int, sendmmsg, (int, struct mmsghdr *, unsigned int, int))                \
	X(ssize_t, sendfile, (int, int, off_t *, size_t))                           \
	X(ssize_t, sendfile64, (int, int, off64_t *, size_t))                       \
	X(ssize_t, splice, (int, loff_t *, int, loff_t *, size_t, unsigned int))    \
	/* waiting for readiness */                                                 \
	X(int, poll, (struct pollfd *, nfds_t, int))                                \
	X(int, ppoll, (struct pollfd *, nfds_t, const struct timespec *,            \
		       const sigset_t *))                                           \
	X(int, __poll_chk, (struct pollfd *, nfds_t, int, size_t))                  \
	X(int, __ppoll_chk, (struct pollfd *, nfds_t, const struct timespec *,      \
			     const sigset_t *, size_t))                             \
	X(int, select, (int, fd_set *, fd_set *, fd_set *, struct timeval *))       \
	X(int, pselect, (int, fd_set *, fd_set *, fd_set *,                         \
			 const struct timespec *, const sigset_t *))                \
	X(int, epoll_create, (int))                                                 \
	X(int, epoll_create1, (int))                                                \
	X(int, epoll_ctl, (int, int, int, struct epoll_event *))                    \
	X(int, epoll_wait, (int, struct epoll_event *, int, int))                   \
	X(int, epoll_pwait, (int, struct epoll_event *, int, int,                   \
			     const sigset_t *))                                     \
	X(int, epoll_pwait2, (int, struct epoll_event *, int,                       \
			      const struct timespec *, const sigset_t *))              \
	/* a new process by the raw clone system call (no fork handlers run) */     \
	X(long, syscall, (long, ...))                                               \
	/* a stdio stream on a descriptor (entry/std_streams.c) */                  \
	X(FILE *, fdopen, (int, const char *))                                      \
	/* the limits a process confines itself with (made with the C library's   \
	   prlimit64, never through REAL: entry/preload_confine.c) */               \
	X(int, setrlimit, (__rlimit_resource_t, const struct rlimit *))             \
	X(int, setrlimit64, (__rlimit_resource_t, const struct rlimit64 *))         \
	/* a seccomp filter, which libsmcr's own calls must keep within */          \
	X(int, prctl, (int, ...))                                                   \
	/* the CPUs the process may run on, which decide whether a wait spins */   \
	X(int, sched_setaffinity, (pid_t, size_t, const cpu_set_t *))              \
	/* an exec, which hands this image's holds to the next (preload_exec.c;   \
	   each form is made as execve, execvpe, execveat or fexecve) */           \
	X(int, execve, (const char *, char *const *, char *const *))                \
	X(int, execv, (const char *, char *const *))                                \
	X(int, execvpe, (const char *, char *const *, char *const *))               \
	X(int, execvp, (const char *, char *const *))                               \
	X(int, execl, (const char *, const char *, ...))                            \
	X(int, execlp, (const char *, const char *, ...))                           \
	X(int, execle, (const char *, const char *, ...))                           \
	X(int, fexecve, (int, char *const *, char *const *))                        \
	X(int, execveat, (int, const char *, char *const *, char *const *, int))       \
	/* a process in this one's memory until it execs (entry/vfork_x86_64.S:   \
	   a stub, not C, which offers first) */                                    \
	X(pid_t, vfork, (void))                                                     \
	X(pid_t, __vfork, (void))                                                   \
	/* a new process that starts with a new image (preload_spawn.c) */         \
	X(int, posix_spawn, (pid_t *, const char *, const posix_spawn_file_actions_t *, \
			     const posix_spawnattr_t *, char *const *, char *const *))   \
	X(int, posix_spawnp, (pid_t *, const char *, const posix_spawn_file_actions_t *, \
			      const posix_spawnattr_t *, char *const *, char *const *)) \
	X(int, system, (const char *))                                              \
	X(FILE *, popen, (const char *, const char *))                              \
	/* the end of a process, whose transports finish first (preload_exit.c) */  \
	X(void, _exit, (int))                                                       \
	X(void, _Exit, (int))

#define SMCR_REAL_TYPEDEF(ret, name, params) typedef ret(*smcr_real_##name##_t) params;
SMCR_REAL_FUNCS(SMCR_REAL_TYPEDEF)
#undef SMCR_REAL_TYPEDEF

#define SMCR_REAL_SLOT(ret, name, params) void *name;
struct smcr_real {
	SMCR_REAL_FUNCS(SMCR_REAL_SLOT)
};
#undef SMCR_REAL_SLOT

extern struct smcr_real smcr_real;

/* Slow path of REAL(): resolve one function and remember it. */
void *smcr_real_resolve(void **slot, const char *name);

static inline void *smcr_real_get(void **slot, const char *name)
{
	void *fn = __atomic_load_n(slot, __ATOMIC_RELAXED);
	return __builtin_expect(fn != NULL, 1) ? fn : smcr_real_resolve(slot, name);
}

/* REAL(read)(fd, buf, n): call the C library's read(). */
#define REAL(name) ((smcr_real_##name##_t)smcr_real_get(&smcr_real.name, #name))

#endif
