/*
 * smcrd.c - the smcr daemon: options, start-up, and the event loop.
 *
 *   smcrd [-f] [-c FILE]
 *
 * One smcrd per host (see pidfile.h).  It loads and validates smcr.conf, keeps
 * it while it runs and reloads it on SIGHUP: a valid new file replaces the
 * running configuration as a whole, an invalid one is refused with its reason
 * and the running configuration stays.  SIGTERM and SIGINT end it cleanly.
 *
 * The loop polls a table of descriptors, today only a signalfd; the control
 * socket and the BPF program's maps join it as further entries.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "config.h"
#include "pidfile.h"
#include "smcrd_log.h"

static const char usage[] =
	"usage: smcrd [-f] [-c FILE]\n"
	"The smcr daemon: holds the host's SMC configuration (reloaded on SIGHUP).\n"
	"\n"
	"  -c FILE    configuration file (default: $SMCR_CONF, else " SMCR_CONF_DEFAULT ")\n"
	"  -f         stay in the foreground and log to stderr (else detach, log to syslog)\n"
	"  -h, --help this text\n"
	"\n"
	"Environment: SMCR_RUNDIR overrides the directory of smcrd.pid (" SMCR_RUNDIR_DEFAULT ").\n";

enum { POLL_SIGNALS, POLL_COUNT };

struct smcrd {
	char conf_path[PATH_MAX];       /* absolute: smcrd leaves its start directory */
	struct smcr_config cfg;
	struct smcr_pidfile pidfile;
	struct pollfd poll[POLL_COUNT];
};

static void announce(const char *what, const struct smcrd *d)
{
	smcrd_log(LOG_NOTICE,
		  "%s %s (enabled=%d, %zu addresses, %zu port ranges, max_memory=%u MB)", what,
		  d->conf_path, d->cfg.enabled, d->cfg.ip_addrs.n, d->cfg.ports.n,
		  d->cfg.max_memory_mb);
}

static void reload(struct smcrd *d)
{
	struct smcr_config fresh;
	struct smcr_config_error err;

	if (smcr_config_load(d->conf_path, &fresh, &err)) {
		smcrd_log(LOG_WARNING, "reload refused: %s; keeping the running configuration",
			  err.message);
		return;
	}
	d->cfg = fresh;
	smcrd_log_set_level(d->cfg.log_level);
	announce("reloaded", d);
}

/* Handles the pending signals; false once smcrd should stop. */
static bool on_signals(struct smcrd *d)
{
	struct signalfd_siginfo si;

	while (read(d->poll[POLL_SIGNALS].fd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGHUP) {
			reload(d);
		} else {
			smcrd_log(LOG_NOTICE, "exiting on SIG%s", sigabbrev_np((int)si.ssi_signo));
			return false;
		}
	}
	return true;
}

static int run(struct smcrd *d)
{
	for (;;) {
		if (poll(d->poll, POLL_COUNT, -1) < 0) {
			if (errno == EINTR)
				continue;
			smcrd_log(LOG_ERR, "poll: %s", strerror(errno));
			return 1;
		}
		if (d->poll[POLL_SIGNALS].revents && !on_signals(d))
			return 0;
	}
}

/*
 * Detaches (fork, setsid, fork).  The starting process exits only when the
 * daemon writes to *ready_fd (status 0) or dies first (status 1), so whoever
 * started smcrd knows it is up and the pid file names it.
 */
static int daemonize(int *ready_fd)
{
	int pipefd[2];
	char ok;

	if (pipe2(pipefd, O_CLOEXEC))
		return -1;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid > 0) {
		close(pipefd[1]);
		ssize_t n;
		while ((n = read(pipefd[0], &ok, 1)) < 0 && errno == EINTR)
			;
		_exit(n == 1 ? 0 : 1);
	}
	close(pipefd[0]);
	if (setsid() < 0 || (pid = fork()) < 0)
		_exit(1);
	if (pid > 0)
		_exit(0);
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (chdir("/") || null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 ||
	    dup2(null, 2) < 0)
		_exit(1);
	close(null);
	*ready_fd = pipefd[1];
	return 0;
}

static int absolute_path(const char *path, char *buf, size_t size)
{
	char cwd[PATH_MAX];

	if (path[0] == '/')
		return snprintf(buf, size, "%s", path) < (int)size ? 0 : -1;
	if (!getcwd(cwd, sizeof(cwd)))
		return -1;
	return snprintf(buf, size, "%s/%s", cwd, path) < (int)size ? 0 : -1;
}

/* Everything up to the loop; nonzero: the exit status. */
static int start(struct smcrd *d, const char *conf, bool foreground)
{
	struct smcr_config_error err;
	sigset_t signals;
	pid_t holder;
	int ready_fd = -1;

	/* Blocked before anything else, so a reload request is never lost: signalfd reads it. */
	sigemptyset(&signals);
	sigaddset(&signals, SIGHUP);
	sigaddset(&signals, SIGTERM);
	sigaddset(&signals, SIGINT);
	sigprocmask(SIG_BLOCK, &signals, NULL);

	if (absolute_path(conf, d->conf_path, sizeof(d->conf_path))) {
		smcrd_log(LOG_ERR, "%s: %s", conf, strerror(ENAMETOOLONG));
		return 1;
	}
	int rc = smcr_pidfile_acquire(&d->pidfile, &holder);
	if (rc > 0) {
		smcrd_log(LOG_ERR, "refusing to start: smcrd already running (pid %d)", (int)holder);
		return 1;
	}
	if (rc < 0 || smcr_pidfile_write(&d->pidfile, getpid(), d->conf_path)) {
		smcrd_log(LOG_ERR, "%s: %s", d->pidfile.path, strerror(errno));
		return 1;
	}
	if (smcr_config_load(d->conf_path, &d->cfg, &err)) {
		smcrd_log(LOG_ERR, "%s", err.message);
		return 1;
	}
	smcrd_log_set_level(d->cfg.log_level);
	if (!foreground) {
		if (daemonize(&ready_fd)) {
			smcrd_log(LOG_ERR, "cannot detach: %s", strerror(errno));
			return 1;
		}
		smcrd_log_to_syslog();
		if (smcr_pidfile_write(&d->pidfile, getpid(), d->conf_path)) {
			smcrd_log(LOG_ERR, "%s: %s", d->pidfile.path, strerror(errno));
			return 1;
		}
	}
	d->poll[POLL_SIGNALS].fd = signalfd(-1, &signals, SFD_NONBLOCK | SFD_CLOEXEC);
	d->poll[POLL_SIGNALS].events = POLLIN;
	if (d->poll[POLL_SIGNALS].fd < 0) {
		smcrd_log(LOG_ERR, "signalfd: %s", strerror(errno));
		return 1;
	}
	announce("loaded", d);
	if (ready_fd >= 0) {
		(void)!write(ready_fd, "", 1);
		close(ready_fd);
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option long_options[] = {
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct smcrd d = { .pidfile.fd = -1 };
	const char *conf = smcr_config_default_path();
	bool foreground = false;
	int opt;

	while ((opt = getopt_long(argc, argv, "c:fh", long_options, NULL)) != -1) {
		switch (opt) {
		case 'c':
			conf = optarg;
			break;
		case 'f':
			foreground = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fputs(usage, stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fputs(usage, stderr);
		return 2;
	}
	int status = start(&d, conf, foreground);
	if (!status)
		status = run(&d);
	smcr_pidfile_release(&d.pidfile);
	return status;
}
