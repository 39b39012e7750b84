/*
 * preload_confine.c - the calls by which a process confines itself, watched
 * so that libsmcr keeps within what the process may still do.
 *
 * A lower RLIMIT_FSIZE (sandboxes set 0) would turn a log line into
 * SIGXFSZ, which kills the process: the log is told (base/log.c).
 *
 * A seccomp filter kills, traps or fails the calls it does not allow, and
 * libsmcr makes calls of its own inside the application's.  Its program is
 * kept (base/filter.h), so that libsmcr asks it before each call of its
 * own that a sandbox may forbid (smcrd's maps, what a socket is).  And if
 * it forbids any call of the fast path (the CLC exchange's recv and send,
 * a wait, a futex, smcrd's maps and socket, shared memory), the process
 * is confined to TCP for what it has not yet set up, while it still may do
 * everything: exchanges under way end now (in a Decline, CONFINED) and its
 * listeners are no longer marked for SMC (shim/handshake.h).  Connections
 * already on SMC carry on, unless it forbids how they wait (poll, futex):
 * then they go on over TCP from where they are (conn/smc_leave.h); so do
 * those whose buffers this process could only take up from smcrd (an RDMA
 * connection forked with: sshd's pre-auth child).
 *
 * An affinity to one CPU makes every spin of a wait a loss (spin.h): the
 * application's sched_setaffinity is told to it.
 *
 * The calls themselves are the application's, made and answered as
 * without libsmcr.
 *
 * The sanitizer runtimes call setrlimit() while they start, before their
 * shadow memory exists and before libsmcr's constructor: so these functions
 * are not instrumented, make the call with the C library's prlimit64()
 * (what its setrlimit() does on a 64-bit system) instead of resolving
 * REAL(), and touch nothing else unless the limit is RLIMIT_FSIZE.
 * prlimit() itself is not watched.
 */
#include <linux/bpf.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "confine.h"
#include "filter.h"
#include "handshake.h"
#include "log.h"
#include "real.h"
#include "smc_sock.h"
#include "spin.h"

#define UNINSTRUMENTED __attribute__((no_sanitize("address", "thread", "undefined")))

_Static_assert(sizeof(struct rlimit) == sizeof(struct rlimit64) &&
	       sizeof(rlim_t) == sizeof(rlim64_t), "a 64-bit system: one layout of limits");

UNINSTRUMENTED int setrlimit(__rlimit_resource_t resource, const struct rlimit *limit)
{
	int rc = prlimit64(0, resource, (const struct rlimit64 *)limit, NULL);

	if (rc == 0 && resource == RLIMIT_FSIZE)
		smcr_log_file_limit(limit->rlim_cur);
	return rc;
}

UNINSTRUMENTED int setrlimit64(__rlimit_resource_t resource, const struct rlimit64 *limit)
{
	int rc = prlimit64(0, resource, limit, NULL);

	if (rc == 0 && resource == RLIMIT_FSIZE)
		smcr_log_file_limit(limit->rlim_cur);
	return rc;
}

/* A call of libsmcr's that a sandbox may forbid, with the arguments that matter. */
struct call {
	long nr;
	uint64_t args[6];
};

/* The calls a connection on SMC waits and wakes with (the wake-up channel falls back on write). */
static const struct call data_path_calls[] = {
	{ SYS_ppoll, { 0 } },
	{ SYS_futex, { 0 } },
};

/* The calls that take a new connection onto SMC, besides. */
static const struct call setup_calls[] = {
	{ SYS_bpf, { BPF_MAP_LOOKUP_ELEM } },
	{ SYS_recvfrom, { 0, 0, 0, MSG_DONTWAIT } },
	{ SYS_sendto, { 0, 0, 0, MSG_DONTWAIT | MSG_NOSIGNAL } },
	{ SYS_sendmsg, { 0, 0, MSG_NOSIGNAL } },
	{ SYS_recvmsg, { 0, 0, MSG_CMSG_CLOEXEC | MSG_DONTWAIT } },
	{ SYS_mmap, { 0, 0, PROT_READ | PROT_WRITE, MAP_SHARED } },
	{ SYS_memfd_create, { 0, MFD_CLOEXEC | MFD_ALLOW_SEALING } },
};

#define ALL_ALLOWED(prog, calls) all_allowed(prog, calls, sizeof(calls) / sizeof(calls[0]))

/* Whether prog (NULL: strict mode, no program) would allow all n calls. */
static bool all_allowed(const struct sock_fprog *prog, const struct call *calls, size_t n)
{
	if (!prog || !prog->filter)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!smcr_filter_permits_with(prog, calls[i].nr, calls[i].args))
			return false;
	return true;
}

void smcr_before_seccomp(unsigned long mode, const void *prog)
{
	/* SECCOMP_MODE_STRICT allows read, write and exit only: no program to ask */
	const struct sock_fprog *filter = mode == SECCOMP_MODE_FILTER ? prog : NULL;
	bool data_path;

	if (mode != SECCOMP_MODE_FILTER && mode != SECCOMP_MODE_STRICT)
		return;
	data_path = ALL_ALLOWED(filter, data_path_calls);
	if (!data_path || !ALL_ALLOWED(filter, setup_calls)) {
		smcr_log(SMCR_LOG_DEBUG, "a seccomp filter forbids calls of the fast path: TCP from now on");
		smcr_sock_confine();
		smcr_handshake_withdraw_listeners();
	}
	if (!data_path)         /* connections on SMC could no longer wait: they go on over TCP */
		smcr_sock_leave_all(SMCR_REASON_CONFINED);
	else if (!ALL_ALLOWED(filter, setup_calls))     /* nor could a view be completed */
		smcr_sock_leave_incomplete();
	smcr_filter_installed(filter);
}

int prctl(int option, ...)
{
	unsigned long arg[4];
	va_list ap;

	va_start(ap, option);
	for (int i = 0; i < 4; i++)
		arg[i] = va_arg(ap, unsigned long);
	va_end(ap);
	if (option == PR_SET_SECCOMP)
		smcr_before_seccomp(arg[0], (const void *)arg[1]);
	return REAL(prctl)(option, arg[0], arg[1], arg[2], arg[3]);
}

int sched_setaffinity(pid_t pid, size_t size, const cpu_set_t *set)
{
	int rc = REAL(sched_setaffinity)(pid, size, set);

	if (rc == 0 && set && (pid == 0 || pid == getpid()))
		smcr_spin_learn_affinity(size, set);
	return rc;
}
