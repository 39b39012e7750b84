/*
 * pidfile.h - one smcrd per host, and how smcrctl finds it.
 *
 * RUNDIR/smcrd.pid (RUNDIR: $SMCR_RUNDIR, else /run/smcr) holds smcrd's pid on
 * its first line and the configuration file it serves on the second.  smcrd
 * holds an flock() on it for its whole life: a second smcrd cannot take it,
 * and a file that nobody holds locked (left by a killed smcrd) names no
 * running daemon, whatever pid it contains.
 */
#ifndef SMCR_PIDFILE_H
#define SMCR_PIDFILE_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

#include "control_proto.h"           /* smcr_rundir() */


struct smcr_pidfile {
	int fd;
	char path[PATH_MAX];
};

/*
 * Creates RUNDIR if missing and locks the pid file.  0: it is ours;
 * 1: another smcrd holds it (its pid in *holder, 0 if not yet written);
 * 2: RUNDIR is unsafe: not a directory of our own user that nobody else may
 * write (every process sends its connections to the socket there, so a
 * directory another user controls could hold theirs);
 * -1: error (errno; pf->path names the file).
 */
int smcr_pidfile_acquire(struct smcr_pidfile *pf, pid_t *holder);

/* Records our pid and the absolute path of the configuration we serve. */
int smcr_pidfile_write(struct smcr_pidfile *pf, pid_t pid, const char *conf_path);

/* Removes the file, then drops the lock. */
void smcr_pidfile_release(struct smcr_pidfile *pf);

/*
 * The running smcrd: its pid (> 0), and its configuration file in conf;
 * 0 if none runs; -1 on error (errno).
 */
pid_t smcr_pidfile_running(char *conf, size_t size);

#endif
