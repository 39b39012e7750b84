/*
 * smcrd.c - the smcr daemon's main: options, start-up (pid file,
 * configuration, negotiation program, detaching, control socket), then the
 * event loop (loop.c) and the teardown.  It only calls downward.
 *
 *   smcrd [-f] [-c FILE] [-C CGROUP]
 *
 * One smcrd per host (see pidfile.h).  It loads and validates smcr.conf, keeps
 * it while it runs and reloads it on SIGHUP: a valid new file replaces the
 * running configuration as a whole, an invalid one is refused with its reason
 * and the running configuration stays.  SIGTERM and SIGINT end it cleanly.
 * Its sock_ops program (negotiation.h) runs from start to exit, whatever the
 * exit; a reload gives it the new policy.
 *
 * Once set up, it keeps of root's capabilities only the one a reload
 * needs (privileges.c).
 *
 * The loop (loop.c) polls a signalfd and the control socket (control.c),
 * where processes register, take and return buffer memory, and smcrctl asks
 * for status and reloads; the daemon's services are daemon.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "closer.h"
#include "daemon.h"
#include "interfaces.h"
#include "loop.h"
#include "negotiation.h"
#include "privileges.h"
#include "smcrd_log.h"

static const char usage[] =
	"usage: smcrd [-f] [-c FILE] [-C CGROUP]\n"
	"The smcr daemon: negotiates SMC in TCP handshakes (a BPF sock_ops program),\n"
	"registers the processes using smcr and grants their buffer memory against\n"
	"max_memory.  SIGHUP reloads the configuration.  Needs root; keeps only\n"
	"CAP_BPF once set up.\n"
	"\n"
	"  -c FILE    configuration file (default: $SMCR_CONF, else " SMCR_CONF_DEFAULT ")\n"
	"  -C, --cgroup DIR  attach the negotiation program to this cgroup v2 directory\n"
	"             (default: the cgroup v2 root, so every process)\n"
	"  -f         stay in the foreground and log to stderr (else detach, log to syslog)\n"
	"  -h, --help this text\n"
	"\n"
	"Environment: SMCR_RUNDIR overrides the directory of smcrd.pid and smcrd.sock\n"
	"(" SMCR_RUNDIR_DEFAULT ").  See smcrd(8).\n";

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

/*
 * Each client, each buffer waiting for its peer (shm_broker.c) and each
 * descriptor waiting to be closed (closer.c) holds one.
 */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* Everything up to the loop; nonzero: the exit status. */
static int start(struct smcrd *d, const char *conf, const char *cgroup, bool foreground)
{
	struct smcr_config_error err;
	char why[512];
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
	if (rc == 1) {
		smcrd_log(LOG_ERR, "refusing to start: smcrd already running (pid %d)", (int)holder);
		return 1;
	}
	if (rc == 2) {
		smcrd_log(LOG_ERR, "refusing to start: %s is not a directory of uid %d that only it "
			  "may write", smcr_rundir(), (int)geteuid());
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
	/* Before detaching, so that a failure still reaches the terminal. */
	d->negotiation = smcr_negotiation_start(&d->cfg, cgroup, why, sizeof(why));
	if (!d->negotiation) {
		smcrd_log(LOG_ERR, "cannot negotiate SMC without the sock_ops program: %s", why);
		return 1;
	}
	smcrd_log(LOG_NOTICE, "attached sock_ops program (id %u) to %s",
		  smcr_negotiation_prog_id(d->negotiation), smcr_negotiation_cgroup(d->negotiation));
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
	raise_fd_limit();               /* first: the closer and the offers take shares of it */
	if (smcrd_closer_start()) {
		smcrd_log(LOG_ERR, "closer: %s", strerror(errno));
		return 1;
	}
	d->signal_fd = signalfd(-1, &signals, SFD_NONBLOCK | SFD_CLOEXEC);
	if (d->signal_fd < 0) {
		smcrd_log(LOG_ERR, "signalfd: %s", strerror(errno));
		return 1;
	}
	if (smcrd_control_open(&d->control)) {
		smcrd_log(LOG_ERR, "control socket %s: %s", d->control.path, strerror(errno));
		return 1;
	}
	d->interfaces = smcrd_interfaces_open(why, sizeof(why));
	if (!d->interfaces) {
		smcrd_log(LOG_ERR, "%s", why);
		return 1;
	}
	/* Set up: from here on only what a reload needs (privileges.c). */
	if (smcrd_privileges_drop(why, sizeof(why))) {
		smcrd_log(LOG_ERR, "cannot give up root's capabilities: %s", why);
		return 1;
	}
	smcrd_announce("loaded", d);
	smcrd_interfaces_check(d->interfaces, &d->cfg, true);
	if (ready_fd >= 0) {
		(void)!write(ready_fd, "", 1);
		close(ready_fd);
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option long_options[] = {
		{ "cgroup", required_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct smcrd d = { .pidfile.fd = -1, .signal_fd = -1,
			   .control.listen_fd = -1, .control.spare_fd = -1 };
	const char *conf = smcr_config_default_path();
	const char *cgroup = NULL;
	bool foreground = false;
	int opt;

	while ((opt = getopt_long(argc, argv, "c:C:fh", long_options, NULL)) != -1) {
		switch (opt) {
		case 'c':
			conf = optarg;
			break;
		case 'C':
			cgroup = optarg;
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
	int status = start(&d, conf, cgroup, foreground);
	if (!status)
		status = smcrd_run(&d);
	smcrd_control_close(&d.control);
	smcr_negotiation_stop(d.negotiation);
	smcrd_interfaces_close(d.interfaces);
	free(d.poll);
	smcr_pidfile_release(&d.pidfile);
	return status;
}
