/*
 * smcrctl - administer smcr: to smcr.conf what AIX's lsattr/chdev are to smcr0.
 *
 *   smcrctl [-c FILE] show | set KEY=VALUE... | enable | disable | help
 *
 * "set" checks every KEY=VALUE and then the whole resulting file before it
 * touches anything; only then is the file replaced (atomically, comments and
 * other lines kept) and the running smcrd told to reload it.
 * Exit status: 0 done, 1 invalid value or configuration (file unchanged),
 * 2 usage.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h"
#include "pidfile.h"

enum { EXIT_INVALID = 1, EXIT_USAGE = 2 };

#define SHOW_VALUE_WIDTH_MAX 32 /* longer values overflow their own row only */

static const char usage[] =
	"usage: smcrctl [-c FILE] COMMAND\n"
	"Show and change the smcr configuration (the attributes of AIX's smcr0, extended).\n"
	"\n"
	"  show                  every attribute with its value and meaning\n"
	"  set KEY=VALUE...      change attributes: all are validated first, then the\n"
	"                        file is rewritten atomically and smcrd reloads it\n"
	"  enable, disable       set enabled=1 or enabled=0\n"
	"  help                  this text\n"
	"\n"
	"  -c FILE    configuration file (default: $SMCR_CONF, else " SMCR_CONF_DEFAULT ")\n"
	"  -h, --help this text\n"
	"\n"
	"Exit status: 0 done, 1 invalid value or configuration (file unchanged), 2 usage.\n";

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

/* Asks a running smcrd to reload path, and says whether it was asked. */
static int notify_daemon(const char *path)
{
	char served[PATH_MAX];
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
	if (kill(pid, SIGHUP)) {
		printf("saved; cannot signal smcrd (pid %d): %s\n", (int)pid, strerror(errno));
		return EXIT_FAILURE;
	}
	printf("applied\n");
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
			fputs(usage, stdout);
			return 0;
		default:
			fputs(usage, stderr);
			return EXIT_USAGE;
		}
	}
	const char *cmd = optind < argc ? argv[optind] : "";
	char **args = argv + optind + 1;
	int nargs = argc - optind - 1;

	if (strcmp(cmd, "help") == 0 && nargs == 0) {
		fputs(usage, stdout);
		return 0;
	}
	if (strcmp(cmd, "show") == 0 && nargs == 0)
		return cmd_show(path);
	if (strcmp(cmd, "set") == 0 && nargs > 0)
		return cmd_set(path, args, nargs);
	if (strcmp(cmd, "enable") == 0 && nargs == 0)
		return cmd_set(path, (char *[]){ enable }, 1);
	if (strcmp(cmd, "disable") == 0 && nargs == 0)
		return cmd_set(path, (char *[]){ disable }, 1);
	fputs(usage, stderr);
	return EXIT_USAGE;
}
