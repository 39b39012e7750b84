/*
 * real.c - resolution of the C library functions that libsmcr interposes.
 *
 * Lazy and lock-free: two threads resolving the same name store the same
 * pointer.  A name the C library does not have means libsmcr was built for a
 * newer C library than the one running; there is no correct way to go on.
 */
#include <dlfcn.h>
#include <stdlib.h>

#include "log.h"
#include "real.h"

struct smcr_real smcr_real;

void *smcr_real_resolve(void **slot, const char *name)
{
	void *fn = dlsym(RTLD_NEXT, name);

	if (!fn) {
		smcr_log(SMCR_LOG_ERROR, "the C library has no %s(); remove libsmcr.so from LD_PRELOAD",
			 name);
		abort();
	}
	__atomic_store_n(slot, fn, __ATOMIC_RELAXED);
	return fn;
}
