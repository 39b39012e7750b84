/*
 * spin.c - what the spin policy of spin.h learns about the machine (the
 * CPUs online at start, how many of them the process may run on, how many
 * tasks are runnable), and the spin itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "filter.h"
#include "smc_transport.h"
#include "spin.h"
#include "sys.h"

_Atomic int smcr_spin_cpus = 1;
_Atomic int smcr_spin_runnable;
_Atomic int smcr_spin_online = 1;

static int loadavg = -1;                /* /proc/loadavg, kept (sys.h); -1: none */
static _Atomic uint64_t next_count_ns;  /* when the runnable tasks are counted again */

static void allow(int cpus)
{
	int online = atomic_load_explicit(&smcr_spin_online, memory_order_relaxed);

	atomic_store_explicit(&smcr_spin_cpus, cpus < online ? cpus : online, memory_order_relaxed);
}

void smcr_spin_learn_cpus(void)
{
	int saved_errno = errno;
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	int online = n > 0 ? (int)n : 1;
	cpu_set_t set;

	atomic_store_explicit(&smcr_spin_online, online, memory_order_relaxed);
	allow(sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : online);
	errno = saved_errno;
}

void smcr_spin_watch_runnable(void)
{
	int saved_errno = errno;

	if (smcr_sys_kept(&loadavg) < 0) {
		loadavg = smcr_sys_fd_aside(open("/proc/loadavg", O_RDONLY | O_CLOEXEC));
		smcr_sys_fd_keep(&loadavg);
	}
	errno = saved_errno;
}

void smcr_spin_learn_affinity(size_t size, const cpu_set_t *set)
{
	int cpus = CPU_COUNT_S(size, set);

	allow(cpus > 0 ? cpus : 1);
}

void smcr_spin_learn_runnable(int runnable)
{
	atomic_store_explicit(&smcr_spin_runnable, runnable, memory_order_relaxed);
}

int smcr_spin_parse_runnable(const char *text)
{
	const char *p = text;
	char *end;
	long n;

	for (int field = 0; field < 3; field++) {
		p = strchr(p, ' ');
		if (!p)
			return -1;
		p++;
	}
	n = strtol(p, &end, 10);
	return end != p && *end == '/' && n >= 0 && n < 1 << 20 ? (int)n : -1;
}

/* Counts the runnable tasks if the last count is older than SMCR_SPIN_SAMPLE_NS. */
static void count_runnable(uint64_t now)
{
	uint64_t due = atomic_load_explicit(&next_count_ns, memory_order_relaxed);
	int fd = smcr_sys_kept(&loadavg), saved_errno = errno, n;
	char text[128];
	ssize_t len;

	/* one waiter counts; the others go on with the last count */
	if (fd < 0 || now < due ||
	    !atomic_compare_exchange_strong(&next_count_ns, &due, now + SMCR_SPIN_SAMPLE_NS))
		return;
	if (smcr_filter_any() && !smcr_filter_permits(SYS_pread64, (const uint64_t[6]){ 0 }))
		return;
	len = pread(fd, text, sizeof(text) - 1, 0);
	errno = saved_errno;
	if (len <= 0)
		return;
	text[len] = '\0';
	n = smcr_spin_parse_runnable(text);
	if (n >= 0)
		smcr_spin_learn_runnable(n);
}

bool smcr_spin_for(struct smcr_spin *s, struct smcr_spin_how how, bool (*came)(void *arg),
		   void *arg)
{
	uint64_t start = smc_clock_ns(), budget, now;

	count_runnable(start);
	budget = smcr_spin_budget(s, how);
	if (!budget)
		return false;
	do {
		if (came(arg)) {
			smcr_spin_done(s, budget, true, smc_clock_ns() - start);
			return true;
		}
		smcr_cpu_relax();
		now = smc_clock_ns();
	} while (now - start < budget);
	smcr_spin_done(s, budget, false, budget);
	return false;
}
