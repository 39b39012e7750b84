/*
 * pidfd.c - smcrd's clients pinned by pidfds (pidfd.h).  Nothing here needs
 * a capability: SO_PEERPIDFD, pidfd_open of any process, poll, and the
 * world-readable /proc/PID/comm and stat (unless /proc hides them: hidepid).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pidfd.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77         /* Linux 6.5; the same on every architecture */
#endif

bool smcrd_pidfd_alive(int pidfd)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };

	return pidfd >= 0 && poll(&p, 1, 0) == 0;
}

int smcrd_pidfd_of_peer(int sock, pid_t pid)
{
	int pidfd = -1;
	socklen_t len = sizeof(pidfd);

	if (getsockopt(sock, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) == 0) {
		/* the connecting process itself, even reaped (Linux 6.16): not if it exited */
		if (smcrd_pidfd_alive(pidfd))
			return pidfd;
		close(pidfd);
		return -1;
	}
	return errno == ENOPROTOOPT ? smcrd_pidfd_open_alive(pid) : -1;
}

int smcrd_pidfd_open_alive(pid_t pid)
{
	int pidfd = pid > 0 ? (int)syscall(SYS_pidfd_open, pid, 0) : -1;

	if (pidfd >= 0 && !smcrd_pidfd_alive(pidfd)) {
		close(pidfd);   /* exited, not yet reaped */
		pidfd = -1;
	}
	return pidfd;           /* close-on-exec, as every pidfd */
}

/* Reads /proc/PID/NAME into buf (NUL-terminated): its length, or -1 if not pidfd's process's. */
static ssize_t read_proc(pid_t pid, int pidfd, const char *name, char *buf, size_t size)
{
	char path[64];
	ssize_t n = -1;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, size - 1);
		close(fd);
	}
	/* still alive after the read: pid was not reused in between, this was its process */
	if (n < 0 || !smcrd_pidfd_alive(pidfd))
		return -1;
	buf[n] = '\0';
	return n;
}

void smcrd_pidfd_comm(pid_t pid, int pidfd, char *comm, size_t size)
{
	if (read_proc(pid, pidfd, "comm", comm, size) <= 0)
		snprintf(comm, size, "?");
	comm[strcspn(comm, "\n")] = '\0';
}

pid_t smcrd_pidfd_parent(pid_t pid, int pidfd)
{
	char buf[512], *end;
	pid_t ppid = 0;

	if (read_proc(pid, pidfd, "stat", buf, sizeof(buf)) <= 0)
		return 0;
	/* "pid (comm) state ppid ...": comm may hold anything, so from its last ')' */
	end = strrchr(buf, ')');
	if (!end || sscanf(end + 1, " %*c %d", &ppid) != 1)
		ppid = 0;
	return ppid;
}
