/*
 * smcrctl_config.c - smcrctl's configuration commands: `show` lists the
 * attributes of smcr.conf, `set KEY=VALUE...` (and `enable`, `disable`)
 * checks every value and then the whole resulting file before it touches
 * anything; only then is the file replaced (atomically, comments and other
 * lines kept) and the running smcrd told to reload it (over its control
 * socket, which answers whether it did).
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h"
#include "control_proto.h"
#include "pidfile.h"
#include "smcrctl.h"
#include "smcrctl_common.h"

#define SHOW_VALUE_WIDTH_MAX 32 /* longer values overflow their own row only */

int smcrctl_show(const struct smcrctl_args *a)
{
	const char *path = a->conf;
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

/* "key=value" -> its key, NUL-terminated in key; NULL if there is no '='. */
static const char *split_assignment(const char *arg, char *key, size_t size)
{
	const char *eq = strchr(arg, '=');

	if (!eq)
		return NULL;
	snprintf(key, size, "%.*s", (int)(eq - arg), arg);
	return eq + 1;
}

/* Sets each of assignments[0..n-1] (KEY=VALUE) in path, all or nothing, then has smcrd reload. */
static int set(const char *path, char **assignments, int n)
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

int smcrctl_set(const struct smcrctl_args *a)
{
	return set(a->conf, a->argv, a->argc);
}

int smcrctl_enable(const struct smcrctl_args *a)
{
	static char enable[] = "enabled=1";

	return set(a->conf, (char *[]){ enable }, 1);
}

int smcrctl_disable(const struct smcrctl_args *a)
{
	static char disable[] = "enabled=0";

	return set(a->conf, (char *[]){ disable }, 1);
}
