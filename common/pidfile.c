/*
 * pidfile.c - the pid file of smcrd, locked with flock() while smcrd lives.
 *
 * flock() belongs to the open file description, so the lock survives the
 * forks of daemonizing and vanishes with the last descriptor, even on SIGKILL.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pidfile.h"

static int pidfile_path(char *buf, size_t size, const char **rundir)
{
	*rundir = smcr_rundir();
	if (snprintf(buf, size, "%s/smcrd.pid", *rundir) >= (int)size) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

/* "pid\nconf\n" -> pid (0 if absent) and conf ("" if absent). */
static pid_t read_pidfile(int fd, char *conf, size_t size)
{
	char buf[PATH_MAX + 32];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	long pid = 0;
	char *line2;

	if (conf && size)
		conf[0] = '\0';
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	pid = strtol(buf, &line2, 10);
	if (pid <= 0 || *line2 != '\n')
		return 0;
	if (conf && size)
		snprintf(conf, size, "%.*s", (int)strcspn(line2 + 1, "\n"), line2 + 1);
	return (pid_t)pid;
}

/* Whether rundir is a directory (not a link) of our user that no one else may write. */
static bool rundir_safe(const char *rundir)
{
	struct stat st;

	return lstat(rundir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
	       !(st.st_mode & (S_IWGRP | S_IWOTH));
}

int smcr_pidfile_acquire(struct smcr_pidfile *pf, pid_t *holder)
{
	const char *rundir;
	struct stat opened, named;

	pf->fd = -1;
	if (pidfile_path(pf->path, sizeof(pf->path), &rundir))
		return -1;
	if (mkdir(rundir, 0755) && errno != EEXIST)
		return -1;
	if (!rundir_safe(rundir))
		return 2;
	for (;;) {
		pf->fd = open(pf->path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
		if (pf->fd < 0)
			return -1;
		if (flock(pf->fd, LOCK_EX | LOCK_NB)) {
			int saved_errno = errno;
			*holder = read_pidfile(pf->fd, NULL, 0);
			close(pf->fd);
			pf->fd = -1;
			errno = saved_errno;
			return errno == EWOULDBLOCK ? 1 : -1;
		}
		/* An exiting smcrd may have unlinked the file we opened: lock the new one. */
		if (fstat(pf->fd, &opened) == 0 && stat(pf->path, &named) == 0 &&
		    opened.st_dev == named.st_dev && opened.st_ino == named.st_ino)
			return 0;
		close(pf->fd);
	}
}

int smcr_pidfile_write(struct smcr_pidfile *pf, pid_t pid, const char *conf_path)
{
	char buf[PATH_MAX + 32];
	int len = snprintf(buf, sizeof(buf), "%d\n%s\n", (int)pid, conf_path);

	if (len < 0 || (size_t)len >= sizeof(buf)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if (ftruncate(pf->fd, 0) || pwrite(pf->fd, buf, (size_t)len, 0) != len)
		return -1;
	return 0;
}

void smcr_pidfile_release(struct smcr_pidfile *pf)
{
	if (pf->fd < 0)
		return;
	unlink(pf->path);
	close(pf->fd);
	pf->fd = -1;
}

pid_t smcr_pidfile_running(char *conf, size_t size)
{
	char path[PATH_MAX];
	const char *rundir;
	pid_t pid = 0;

	if (pidfile_path(path, sizeof(path), &rundir))
		return -1;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	if (flock(fd, LOCK_SH | LOCK_NB) == 0)
		flock(fd, LOCK_UN);             /* nobody holds it: stale */
	else if (errno == EWOULDBLOCK)
		pid = read_pidfile(fd, conf, size);
	else
		pid = -1;
	int saved_errno = errno;
	close(fd);
	errno = saved_errno;
	return pid;
}
