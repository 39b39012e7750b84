/*
 * spin.c - what the spin policy of spin.h learns about the machine (the
 * CPUs online at start, and how many of them the process may run on), and
 * the spin itself.
 */
#include <errno.h>
#include <sched.h>
#include <unistd.h>

#include "smc_transport.h"
#include "spin.h"

_Atomic int smcr_spin_cpus = 1;
static int online = 1;

static void allow(int cpus)
{
	atomic_store_explicit(&smcr_spin_cpus, cpus < online ? cpus : online, memory_order_relaxed);
}

void smcr_spin_learn_cpus(void)
{
	int saved_errno = errno;
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t set;

	online = n > 0 ? (int)n : 1;
	allow(sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : online);
	errno = saved_errno;
}

void smcr_spin_learn_affinity(size_t size, const cpu_set_t *set)
{
	int cpus = CPU_COUNT_S(size, set);

	allow(cpus > 0 ? cpus : 1);
}

bool smcr_spin_for(struct smcr_spin *s, struct smcr_spin_how how, bool (*came)(void *arg),
		   void *arg)
{
	uint64_t start = smc_clock_ns(), budget = smcr_spin_budget(s, how), now;

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
