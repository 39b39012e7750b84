/*
 * sys.c - the descriptors libsmcr makes for itself (sys.h): sealed memfds,
 * eventfds, the rule that moves them out of the application's way, and
 * the application's range closes, which leave them open.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "fdtable.h"
#include "real.h"
#include "sys.h"

static int mark_own(int fd)
{
	smcr_fd_set(fd, SMCR_FD_OWN);
	return fd;
}

int smcr_sys_fd_aside(int fd)
{
	int saved_errno = errno;
	struct rlimit rl;

	if (fd < 0)
		return fd;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur < 64) {
		errno = saved_errno;
		return mark_own(fd);
	}
	rlim_t half = rl.rlim_cur / 2;
	int floor = (int)(rl.rlim_cur > 2048 ? half : (half < 512 ? half : 512));
	int high = REAL(fcntl)(fd, F_DUPFD_CLOEXEC, floor);

	if (high >= 0) {
		REAL(close)(fd);
		fd = high;
	}
	errno = saved_errno;
	return mark_own(fd);
}

void smcr_sys_close(int fd)
{
	int saved_errno = errno;

	if (fd < 0)
		return;
	smcr_fd_claim(fd, SMCR_FD_OWN, SMCR_FD_UNKNOWN);
	REAL(close)(fd);
	errno = saved_errno;
}

/*
 * close_range over [first, last] in pieces around our own descriptors;
 * from the last piece on, tail(from) (NULL: close_range up to last).
 */
static int close_around_own(unsigned int first, unsigned int last, int flags,
			    void (*tail)(int from))
{
	int own, rc = 0;

	while ((own = smcr_fd_next_in(first, last, SMCR_FD_OWN)) >= 0) {
		if ((unsigned int)own > first && REAL(close_range)(first, (unsigned int)own - 1, flags))
			rc = -1;
		if ((unsigned int)own == last)
			return rc;
		first = (unsigned int)own + 1;
	}
	if (tail) {
		tail((int)first);
		return rc;
	}
	return REAL(close_range)(first, last, flags) ? -1 : rc;
}

int smcr_sys_close_range(unsigned int first, unsigned int last, int flags)
{
	if (first > last)
		return REAL(close_range)(first, last, flags);   /* the kernel's EINVAL */
	return close_around_own(first, last, flags, NULL);
}

static void closefrom_tail(int from)
{
	REAL(closefrom)(from);
}

void smcr_sys_closefrom(int lowfd)
{
	int saved_errno = errno;

	if (lowfd >= 0)
		close_around_own((unsigned int)lowfd, ~0u, 0, closefrom_tail);
	errno = saved_errno;
}

int smcr_sys_memfd_sealed(uint64_t bytes)
{
	int saved_errno = errno;
	int fd = memfd_create("smcr-rmb", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd >= 0 && (ftruncate(fd, (off_t)bytes) ||
			REAL(fcntl)(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL))) {
		REAL(close)(fd);
		fd = -1;
	}
	if (fd < 0)
		fd = -errno;
	errno = saved_errno;
	return fd;
}

int smcr_sys_eventfd(void)
{
	int saved_errno = errno;
	int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);

	if (fd < 0)
		fd = -errno;
	errno = saved_errno;
	return fd;
}
