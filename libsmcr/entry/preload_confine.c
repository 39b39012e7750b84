/*
 * preload_confine.c - the calls by which a process confines itself, watched
 * so that libsmcr keeps within what the process may still do.
 *
 * A lower RLIMIT_FSIZE (sandboxes set 0) would turn a log line into
 * SIGXFSZ, which kills the process: the log is told (base/log.c).  The call
 * itself is the application's, made and answered as without libsmcr.
 *
 * The sanitizer runtimes call setrlimit() while they start, before their
 * shadow memory exists and before libsmcr's constructor: so these functions
 * are not instrumented, make the call with the C library's prlimit64()
 * (what its setrlimit() does on a 64-bit system) instead of resolving
 * REAL(), and touch nothing else unless the limit is RLIMIT_FSIZE.
 * prlimit() itself is not watched.
 */
#include <sys/resource.h>

#include "log.h"
#include "real.h"

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
