/*
 * preload_clone.c - the interposed syscall(): a process made by the raw
 * clone or clone3 system call, as sandboxing servers fork into new
 * namespaces (vsftpd's isolate), gets libsmcr's fork steps (shim/fork.c),
 * which glibc runs only for fork().  Without them the child would share
 * its parent's smcrd registration and hold the parent's connections
 * without being counted, so that the parent's close would end them under
 * it.  A clone that shares the address space (a thread, vfork) is no new
 * process to us.  The seccomp system call tells preload_confine.c first
 * (confine.h).  Every other number passes straight through.
 */
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <sys/syscall.h>

#include "confine.h"
#include "fork.h"
#include "real.h"

struct raw_clone {
	long number;
	long args[6];
};

static long call_raw(void *arg)
{
	const struct raw_clone *c = arg;

	return REAL(syscall)(c->number, c->args[0], c->args[1], c->args[2], c->args[3],
			     c->args[4], c->args[5]);
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
	return forks(&c) ? smcr_fork_by(call_raw, &c) : call_raw(&c);
}
