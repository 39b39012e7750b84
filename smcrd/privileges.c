/*
 * privileges.c - smcrd gives up root's capabilities once it is set up
 * (privileges.h).
 *
 * Setting up takes much: CAP_BPF and CAP_NET_ADMIN to load the sock_ops
 * program and attach it to a cgroup, CAP_SYS_ADMIN for what the verifier
 * allows only with CAP_PERFMON, to read the names of the programs already
 * there (one smcrd per host) and to open the result map read-only by its
 * id (negotiation.c), CAP_SYS_RESOURCE where libbpf raises RLIMIT_MEMLOCK
 * (kernels before 5.11), CAP_SETPCAP to drop what follows.  What smcrd does afterwards, and what that needs:
 *
 * - a reload (SIGHUP, RELOAD) reads smcr.conf as uid 0, by the file's mode
 *   (no CAP_DAC_*: it is root's), and makes the new policy version
 *   (negotiation.c): BPF_MAP_CREATE, which kernel.unprivileged_bpf_disabled
 *   (set by default on Debian and most distributions) leaves to
 *   bpf_capable(), CAP_BPF or CAP_SYS_ADMIN; before Linux 6.5 every bpf()
 *   command, the update and freeze that follow too.  That is the one
 *   capability kept: CAP_BPF, or CAP_SYS_ADMIN where smcrd holds no
 *   CAP_BPF (kernels before 5.8, or a bounding set without it).
 * - a registering process gets copies (dup) of map descriptors opened at
 *   start: no bpf() call.
 * - the control socket (accept, SO_PEERCRED, SO_PEERPIDFD or pidfd_open
 *   of the pid it gives, poll of that pidfd, SCM_RIGHTS both ways), the
 *   sockets clients show (SO_COOKIE, SO_NETNS_COOKIE, names), their memfds
 *   (F_GET_SEALS, fstat, mmap): nothing.
 * - the broker's sock_diag query by cookie: nothing; the kernel tells any
 *   asker a socket's inode.
 * - /proc/PID/comm and /proc/PID/stat of clients: world-readable.  A /proc
 *   mounted with hidepid= hides other users' processes from an smcrd
 *   without CAP_SYS_PTRACE: their names then show as "?", and a forked
 *   child's offers pass on only when it resumes them (control.c).
 * - address changes (rtnetlink notifications through libnl): nothing.
 * - the closer's helpers (closer.c): clone3 with CLONE_FILES, CLONE_PARENT
 *   and CLONE_PIDFD, pidfd_send_signal of SIGKILL, waitid: smcrd's own
 *   children, of its own credentials: nothing.
 * - RLIMIT_NOFILE is raised to the hard limit before, which needs nothing
 *   anyway.
 * - at exit the program is detached by closing the bpf_link's last
 *   descriptor (the link is not pinned), not by BPF_PROG_DETACH: nothing.
 *   The socket and pid file are unlinked from the run directory, which is
 *   uid 0's (pidfile.c refuses any other): nothing.
 *
 * smcrd stays uid 0, without capabilities but the one above.  Another
 * uid would not do everything: it could not remove the socket and pid
 * file at exit from the run directory, which must be root's because
 * every process sends its connections to the socket there; it could not
 * reread a smcr.conf that only root may read (mode 0600, or in a directory
 * only root may enter, as the tests keep theirs); and a host where smcr is
 * built from source has no account for it, while a shared one (nobody)
 * would let every other service of that uid signal smcrd.  What uid 0
 * keeps without capabilities - writing root's files by their mode, among
 * them /etc and the sysctls in /proc/sys, and signalling root's processes
 * - is taken away by the shipped unit (conf/smcrd.service: read-only file
 * system but /run/smcr, read-only kernel tunables), not here;
 * docs/SECURITY.md says so.
 *
 * no_new_privs: smcrd never executes a program, and a uid 0 process that
 * did would get back every capability left in its bounding set; with it,
 * an execve() grants nothing.  PR_SET_KEEPCAPS stays off: it matters only
 * across a change of uid, which smcrd does not make.  The inheritable and
 * ambient sets are emptied, so no child gets anything through them.
 */
#include <errno.h>
#include <linux/capability.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "privileges.h"
#include "smcrd_log.h"

/* The three per-thread sets of capget(2), 64 bits each. */
struct capsets {
	uint64_t effective, permitted, inheritable;
};

static uint64_t bit(int cap)
{
	return 1ull << cap;
}

static int get_caps(struct capsets *c)
{
	struct __user_cap_header_struct head = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = { 0 };

	if (syscall(SYS_capget, &head, data))
		return -1;
	c->effective = data[0].effective | (uint64_t)data[1].effective << 32;
	c->permitted = data[0].permitted | (uint64_t)data[1].permitted << 32;
	c->inheritable = data[0].inheritable | (uint64_t)data[1].inheritable << 32;
	return 0;
}

static int set_caps(const struct capsets *c)
{
	struct __user_cap_header_struct head = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {
		{ (uint32_t)c->effective, (uint32_t)c->permitted, (uint32_t)c->inheritable },
		{ (uint32_t)(c->effective >> 32), (uint32_t)(c->permitted >> 32),
		  (uint32_t)(c->inheritable >> 32) },
	};

	return (int)syscall(SYS_capset, &head, data);
}

/* The capability that makes bpf_capable() true for a reload (see the top). */
static int bpf_capability(const struct capsets *have)
{
	return have->permitted & bit(CAP_BPF) ? CAP_BPF : CAP_SYS_ADMIN;
}

static const char *cap_name(int cap)
{
	return cap == CAP_BPF ? "CAP_BPF" : "CAP_SYS_ADMIN";
}

/*
 * Drops from the bounding set every capability not in keep, up to the
 * last one the kernel knows (PR_CAPBSET_READ then fails with EINVAL).
 */
static int limit_bounding(uint64_t keep)
{
	for (int cap = 0; cap < 64; cap++) {
		int in = prctl(PR_CAPBSET_READ, cap, 0, 0, 0);

		if (in < 0)
			return errno == EINVAL ? 0 : -1;
		if (in && !(keep & bit(cap)) && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0))
			return -1;
	}
	return 0;
}

static int failed(char *why, size_t size, const char *what)
{
	snprintf(why, size, "%s: %s", what, strerror(errno));
	return -1;
}

int smcrd_privileges_drop(char *why, size_t size)
{
	struct capsets have;

	if (get_caps(&have))
		return failed(why, size, "capget");
	const int kept = bpf_capability(&have);
	/* Not held: the kernel let smcrd load its program without it, and a reload too. */
	const uint64_t keep = have.permitted & bit(kept);

	/* First, while CAP_SETPCAP is still effective: dropping from the bounding set needs it. */
	if (limit_bounding(keep))
		return failed(why, size, "dropping capabilities from the bounding set");
	/* EINVAL: a kernel before 4.3, which has no ambient set. */
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) && errno != EINVAL)
		return failed(why, size, "clearing the ambient capabilities");
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return failed(why, size, "setting no_new_privs");
	if (set_caps(&(struct capsets){ .effective = keep, .permitted = keep }))
		return failed(why, size, "capset");
	smcrd_log(LOG_DEBUG, "capabilities kept (effective, permitted, bounding): %s; "
		  "no_new_privs set", keep ? cap_name(kept) : "none");
	return 0;
}
