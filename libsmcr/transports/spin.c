/*
 * spin.c - what the spin policy of spin.h learns about the machine at start.
 */
#include <unistd.h>

#include "spin.h"

_Atomic int smcr_spin_cpus = 1;

void smcr_spin_learn_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	atomic_store_explicit(&smcr_spin_cpus, n > 0 ? (int)n : 1, memory_order_relaxed);
}
