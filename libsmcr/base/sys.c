/*
 * sys.c - the descriptors libsmcr makes for itself (sys.h): sealed memfds,
 * eventfds, and the rule that moves them out of the application's way.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "real.h"
#include "sys.h"

int smcr_sys_fd_aside(int fd)
{
	int saved_errno = errno;
	struct rlimit rl;

	if (fd < 0 || getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur < 64) {
		errno = saved_errno;
		return fd;
	}
	rlim_t half = rl.rlim_cur / 2;
	int floor = (int)(rl.rlim_cur > 2048 ? half : (half < 512 ? half : 512));
	int high = REAL(fcntl)(fd, F_DUPFD_CLOEXEC, floor);

	if (high >= 0)
		REAL(close)(fd);
	errno = saved_errno;
	return high >= 0 ? high : fd;
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
