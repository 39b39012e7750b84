/*
 * preload_clone.c - the interposed syscall(): a process made by the raw
 * clone or clone3 system call, as sandboxing servers fork into new
 * namespaces (vsftpd's isolate), gets libsmcr's fork steps (shim/fork.c),
 * which glibc runs only for fork().  Without them the child would share
 * its parent's smcrd registration and hold the parent's connections
 * without being counted, so that the parent's close would end them under
 * it.  A clone that shares the address space (a thread, vfork) is no new
 * process to us.  The seccomp system call tells preload_confine.c first
 * (confine.h), and execve and execveat are made around the hand-over of
 * preload_exec.c (exec.h).  Every other number passes straight through.
 *
 * The raw call also leaves the child the C library's idea of its parent's
 * thread: the thread id it caches, which it writes as the owner of each
 * mutex it takes, and no robust list registered with the kernel (fork()
 * sets both).  The kernel frees a dead thread's robust mutexes only through
 * its list, and only those whose owner id is its own, so a child that died
 * holding a robust mutex shared between processes (the application's)
 * left every other holder waiting on it for ever.  The child is told both
 * before anything else runs in it.  The id's place is the one the C
 * library describes to debuggers (_thread_db_pthread_tid: size in bits,
 * count, offset in its thread structure), trusted only if the parent's own
 * id is found there.
 */
#include <dlfcn.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "confine.h"
#include "exec.h"
#include "filter.h"
#include "fork.h"
#include "real.h"

/* What fork() would have told the child about its thread (NULL: unknown). */
struct thread_identity {
	pid_t *cached_tid;      /* the C library's copy of this thread's id */
	void *robust_head;      /* this thread's robust list, as registered */
	size_t robust_len;
};

struct raw_clone {
	long number;
	long args[6];
	struct thread_identity identity;
};

static bool permitted(long nr)
{
	static const uint64_t no_args[6];

	return smcr_filter_permits(nr, no_args);
}

/* In the parent: where the calling thread's identity lives. */
static void identity_find(struct thread_identity *id)
{
	const uint32_t *tid_field = dlsym(RTLD_DEFAULT, "_thread_db_pthread_tid");
	const uint32_t *thread_size = dlsym(RTLD_DEFAULT, "_thread_db_sizeof_pthread");

	*id = (struct thread_identity){ 0 };
	if (!permitted(SYS_gettid) || !permitted(SYS_get_robust_list) ||
	    !permitted(SYS_set_robust_list))
		return;
	if (tid_field && thread_size && tid_field[0] == 8 * sizeof(pid_t) && tid_field[1] == 1 &&
	    tid_field[2] + sizeof(pid_t) <= *thread_size) {
		pid_t *cached = (pid_t *)((char *)pthread_self() + tid_field[2]);

		if (*cached == gettid())
			id->cached_tid = cached;
	}
	if (REAL(syscall)(SYS_get_robust_list, 0L, &id->robust_head, &id->robust_len) != 0)
		id->robust_head = NULL;
}

/* In the child: its own identity, as fork() would have set it. */
static void identity_set(const struct thread_identity *id)
{
	if (id->cached_tid)
		*id->cached_tid = gettid();
	if (id->robust_head)
		(void)REAL(syscall)(SYS_set_robust_list, id->robust_head, id->robust_len);
}

static long call_raw(void *arg)
{
	const struct raw_clone *c = arg;

	return REAL(syscall)(c->number, c->args[0], c->args[1], c->args[2], c->args[3],
			     c->args[4], c->args[5]);
}

static long fork_raw(void *arg)
{
	const struct raw_clone *c = arg;
	long rc = call_raw(arg);

	if (rc == 0)
		identity_set(&c->identity);
	return rc;
}

/* Whether the call makes a process with its own memory: a fork. */
static bool forks(const struct raw_clone *c)
{
	unsigned long long flags;

	if (c->number == SYS_clone)
		flags = (unsigned long)c->args[0];
	else if (c->number == SYS_clone3 && c->args[0])
		flags = ((const struct clone_args *)c->args[0])->flags;
	else
		return false;
	return !(flags & (CLONE_VM | CLONE_THREAD));
}

long syscall(long number, ...)
{
	struct raw_clone c = { .number = number };
	va_list ap;

	va_start(ap, number);
	for (int i = 0; i < 6; i++)
		c.args[i] = va_arg(ap, long);
	va_end(ap);
	if (number == SYS_seccomp && (c.args[0] == SECCOMP_SET_MODE_FILTER ||
				      c.args[0] == SECCOMP_SET_MODE_STRICT))
		smcr_before_seccomp(c.args[0] == SECCOMP_SET_MODE_FILTER ? SECCOMP_MODE_FILTER :
					     SECCOMP_MODE_STRICT, (const void *)c.args[2]);
	if (number == SYS_execve || number == SYS_execveat)
		return smcr_exec_by(call_raw, &c);
	if (!forks(&c))
		return call_raw(&c);
	identity_find(&c.identity);
	return smcr_fork_by(fork_raw, &c);
}
