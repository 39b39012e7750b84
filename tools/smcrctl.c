/*
 * smcrctl - administer smcr: to smcr.conf what AIX's lsattr/chdev are to smcr0.
 *
 *   smcrctl [-c FILE] show | set KEY=VALUE... | enable | disable | status |
 *                     stats [-d] [-r] [--json] [-i S [-n N]] | conns [...] |
 *                     check HOST [PORT] | help
 *
 * "set" checks every KEY=VALUE and then the whole resulting file before it
 * touches anything; only then is the file replaced (atomically, comments and
 * other lines kept) and the running smcrd told to reload it (over its control
 * socket, which answers whether it did).  "status" asks smcrd what it runs,
 * "stats" what every process using smcr has counted (entstat's view,
 * smcrctl_stats.c), "conns" its connections (smcss, smcrctl_conns.c);
 * "check" tries a connection (smc_chk, smcrctl_check.c).
 * Exit status: 0 done, 1 invalid value or configuration (file unchanged) or
 * not applied (or reset refused) or check fell back, 2 usage, 3 (status,
 * stats, conns, check) smcrd not running.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "control_proto.h"
#include "pidfile.h"
#include "smcrctl.h"

#define SHOW_VALUE_WIDTH_MAX 32 /* longer values overflow their own row only */

const char smcrctl_usage[] =
	"usage: smcrctl [-c FILE] COMMAND\n"
	"Show and change the smcr configuration (the attributes of AIX's smcr0, extended).\n"
	"\n"
	"  show                  every attribute with its value and meaning\n"
	"  set KEY=VALUE...      change attributes: all are validated first, then the\n"
	"                        file is rewritten atomically and smcrd reloads it\n"
	"  enable, disable       set enabled=1 or enabled=0\n"
	"  status                smcrd: running?, program attached, memory in use of\n"
	"                        max_memory, shared-memory buffers, registered processes\n"
	"  stats [-d] [-r] [--json] [-i SECONDS [-n COUNT]]\n"
	"                        the host's statistics from every process using smcr,\n"
	"                        exited ones included; -d: per transport (with the\n"
	"                        RDMA links) and process;\n"
	"                        -r: then reset them to zero (root); --json: as JSON;\n"
	"                        -i: again every SECONDS, the changes since the last\n"
	"                        (-n: COUNT samples in all)\n"
	"  conns [--pid PID] [--port PORT] [--mode smc|shm|rdma|tcp] [--json]\n"
	"                        one line per open connection (like smcss -W): mode, or\n"
	"                        why TCP; state, buffers, cursors, bytes\n"
	"  check HOST [PORT]     an echo exchange to HOST under the preload: says whether\n"
	"                        it used shm, SMC-R or TCP (and why, and what to change);\n"
	"                        without PORT, against its own server on a free port of\n"
	"                        port_range_list; check --serve PORT: that server\n"
	"  help                  this text\n"
	"\n"
	"  -c FILE    configuration file (default: $SMCR_CONF, else " SMCR_CONF_DEFAULT ")\n"
	"  -h, --help this text\n"
	"\n"
	"Exit status: 0 done, 1 invalid value or configuration (file unchanged) or not\n"
	"applied (or reset refused) or check fell back, 2 usage, 3 (status, stats,\n"
	"conns, check) smcrd not running.\n";

static int cmd_show(const char *path)
{
	struct smcr_config cfg;
	struct smcr_config_error err;
	char value[SMCR_CONFIG_NKEYS][SMCR_CONFIG_LINE_MAX + 1];
	int width = (int)strlen("value");

	if (smcr_config_load(path, &cfg, &err)) {
		fprintf(stderr, "smcrctl: %s\n", err.message);
		return EXIT_INVALID;
	}
	for (int i = 0; i < SMCR_CONFIG_NKEYS; i++) {
		if (smcr_config_format_value(&cfg, smcr_config_keys[i].name, value[i],
					     sizeof(value[i])))
			snprintf(value[i], sizeof(value[i]), "?");
		int len = (int)strlen(value[i]);
		if (len > width && len <= SHOW_VALUE_WIDTH_MAX)
			width = len;
	}
	printf("%-16s %-*s %s\n", "attribute", width, "value", "description");
	for (int i = 0; i < SMCR_CONFIG_NKEYS; i++)
		printf("%-16s %-*s %s\n", smcr_config_keys[i].name, width, value[i],
		       smcr_config_keys[i].description);
	return 0;
}

static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

int smcrctl_ask(uint16_t type, uint64_t token, void *reply, size_t size)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct smcr_control_msg m = { .version = SMCR_CONTROL_VERSION, .type = type,
				      .token = token };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	int rc = -1;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", smcr_rundir(), SMCR_CONTROL_SOCKET);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    send(fd, &m, sizeof(m), MSG_NOSIGNAL) == sizeof(m) &&
	    poll(&(struct pollfd){ .fd = fd, .events = POLLIN }, 1, 5000) == 1 &&
	    recv(fd, reply, size, 0) == (ssize_t)size &&
	    ((struct smcr_control_msg *)reply)->type == type)
		rc = 0;
	if (fd >= 0)
		close(fd);
	return rc;
}

char *smcrctl_json_comm(const char comm[16], char buf[17])
{
	size_t k = 0;

	for (; k < 16 && comm[k]; k++)
		buf[k] = strchr("._-", comm[k]) || (comm[k] >= '0' && comm[k] <= '9') ||
			 ((comm[k] | 32) >= 'a' && (comm[k] | 32) <= 'z') ? comm[k] : '?';
	buf[k] = '\0';
	return buf;
}

int smcrctl_no_daemon(void)
{
	fprintf(stderr, "smcrctl: smcrd not running (no answer on %s/%s)\n", smcr_rundir(),
		SMCR_CONTROL_SOCKET);
	return EXIT_NO_DAEMON;
}

/* Asks a running smcrd to reload path, and says what came of it. */
static int notify_daemon(const char *path)
{
	char served[PATH_MAX];
	struct smcr_control_msg m;
	pid_t pid = smcr_pidfile_running(served, sizeof(served));

	if (pid < 0) {
		printf("saved; cannot tell whether smcrd runs: %s\n", strerror(errno));
		return EXIT_FAILURE;
	}
	if (pid == 0) {
		printf("saved; smcrd not running\n");
		return 0;
	}
	if (served[0] && !same_file(served, path)) {
		printf("saved; smcrd (pid %d) serves %s, not this file\n", (int)pid, served);
		return 0;
	}
	if (smcrctl_ask(SMCR_CONTROL_RELOAD, 0, &m, sizeof(m))) {
		printf("saved; smcrd (pid %d) did not answer\n", (int)pid);
		return EXIT_FAILURE;
	}
	if (m.result) {
		printf("saved; not applied: %s\n", m.text[0] ? m.text : strerror(-m.result));
		return EXIT_FAILURE;
	}
	printf("applied\n");
	return 0;
}

static int cmd_status(void)
{
	static struct smcr_control_status st;
	const double mib = 1024.0 * 1024.0;

	if (smcrctl_ask(SMCR_CONTROL_STATUS, 0, &st, sizeof(st))) {
		printf("smcrd:       not running (no answer on %s/%s)\n", smcr_rundir(),
		       SMCR_CONTROL_SOCKET);
		return EXIT_NO_DAEMON;
	}
	printf("smcrd:       running (pid %d), configuration %s\n", st.daemon_pid, st.conf_path);
	printf("enabled:     %u\n", st.enabled);
	printf("addresses:   %s\n", st.addrs[0] ? st.addrs : "none (ip_addr_list is empty)");
	if (st.prog_id)
		printf("negotiation: sock_ops program %u attached to %s\n", st.prog_id, st.cgroup);
	else
		printf("negotiation: no program attached\n");
	printf("memory:      %.1f MiB in use of max_memory %.0f MiB\n", st.head.bytes / mib,
	       st.head.limit / mib);
	printf("buffers:     %u offered, %u attached\n", st.offered, st.attached);
	printf("processes:   %u registered\n", st.nprocs);
	if (st.nprocs)
		printf("  %8s %6s %12s  %s\n", "PID", "UID", "MEMORY", "COMMAND");
	for (uint32_t i = 0; i < st.nprocs && i < SMCR_CONTROL_STATUS_PROCS; i++)
		printf("  %8d %6u %12llu  %.16s\n", st.procs[i].pid, st.procs[i].uid,
		       (unsigned long long)st.procs[i].granted, st.procs[i].comm);
	return 0;
}

/* "key=value" -> its key, NUL-terminated in key; NULL if there is no '='. */
static const char *split_assignment(const char *arg, char *key, size_t size)
{
	const char *eq = strchr(arg, '=');

	if (!eq)
		return NULL;
	snprintf(key, size, "%.*s", (int)(eq - arg), arg);
	return eq + 1;
}

static int cmd_set(const char *path, char **assignments, int n)
{
	struct smcr_config scratch, result;
	struct smcr_config_error err;
	char key[64];
	char *text;
	int bad = 0;

	smcr_config_init(&scratch);
	for (int i = 0; i < n; i++) {
		const char *value = split_assignment(assignments[i], key, sizeof(key));
		if (!value) {
			fprintf(stderr, "smcrctl: '%s': expected KEY=VALUE\n", assignments[i]);
			return EXIT_USAGE;
		}
		if (smcr_config_set(&scratch, key, value, &err)) {
			fprintf(stderr, "smcrctl: %s\n", err.message);
			bad = 1;
		}
	}
	if (bad) {
		fprintf(stderr, "smcrctl: nothing changed\n");
		return EXIT_INVALID;
	}
	if (smcr_config_read_file(path, &text, &err)) {
		fprintf(stderr, "smcrctl: %s\n", err.message);
		return EXIT_INVALID;
	}
	for (int i = 0; i < n && text; i++) {
		const char *value = split_assignment(assignments[i], key, sizeof(key));
		char *edited = smcr_config_edit(text, key, value);
		free(text);
		text = edited;
	}
	if (!text) {
		fprintf(stderr, "smcrctl: %s\n", strerror(ENOMEM));
		return EXIT_FAILURE;
	}
	/* Values valid one by one can still leave a file that is not (a duplicate line). */
	int status = EXIT_INVALID;
	if (smcr_config_parse(text, path, &result, &err))
		fprintf(stderr, "smcrctl: nothing changed, the file would be invalid: %s\n",
			err.message);
	else if (smcr_config_write_atomic(path, text, &err))
		fprintf(stderr, "smcrctl: nothing changed: %s\n", err.message);
	else
		status = notify_daemon(path);
	free(text);
	return status;
}

int main(int argc, char **argv)
{
	static const struct option long_options[] = {
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	static char enable[] = "enabled=1", disable[] = "enabled=0";
	const char *path = smcr_config_default_path();
	int opt;

	while ((opt = getopt_long(argc, argv, "+c:h", long_options, NULL)) != -1) {
		switch (opt) {
		case 'c':
			path = optarg;
			break;
		case 'h':
			fputs(smcrctl_usage, stdout);
			return 0;
		default:
			fputs(smcrctl_usage, stderr);
			return EXIT_USAGE;
		}
	}
	const char *cmd = optind < argc ? argv[optind] : "";
	char **args = argv + optind + 1;
	int nargs = argc - optind - 1;

	if (strcmp(cmd, "help") == 0 && nargs == 0) {
		fputs(smcrctl_usage, stdout);
		return 0;
	}
	if (strcmp(cmd, "show") == 0 && nargs == 0)
		return cmd_show(path);
	if (strcmp(cmd, "set") == 0 && nargs > 0)
		return cmd_set(path, args, nargs);
	if (strcmp(cmd, "status") == 0 && nargs == 0)
		return cmd_status();
	if (strcmp(cmd, "stats") == 0)
		return smcrctl_stats(args, nargs);
	if (strcmp(cmd, "conns") == 0)
		return smcrctl_conns(args, nargs);
	if (strcmp(cmd, "check") == 0)
		return smcrctl_check(path, args, nargs);
	if (strcmp(cmd, "enable") == 0 && nargs == 0)
		return cmd_set(path, (char *[]){ enable }, 1);
	if (strcmp(cmd, "disable") == 0 && nargs == 0)
		return cmd_set(path, (char *[]){ disable }, 1);
	fputs(smcrctl_usage, stderr);
	return EXIT_USAGE;
}
