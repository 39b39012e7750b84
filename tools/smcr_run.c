/*
 * smcr_run - run a program with libsmcr.so preloaded.
 *
 *   smcr_run [-l LEVEL] PROGRAM [ARG...]
 *
 * Puts libsmcr.so first in LD_PRELOAD (keeping what was there), optionally
 * sets SMCR_LOG, and executes PROGRAM in place: same pid, same fds, same
 * environment otherwise.  libsmcr.so is looked for next to this executable
 * (the installed layout, which the build tree copies); SMCR_LIBRARY names
 * another one.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

static const char usage[] =
	"usage: smcr_run [-l LEVEL] PROGRAM [ARG...]\n"
	"Run PROGRAM with libsmcr.so preloaded, so that its TCP connections use SMC\n"
	"where smcrd's configuration allows it and plain TCP otherwise.\n"
	"\n"
	"  -l LEVEL   libsmcr log level: error (default), warn, info or debug\n"
	"  -h, --help this text\n"
	"\n"
	"Environment: SMCR_LIBRARY overrides the path of libsmcr.so.\n";

/* libsmcr.so next to this executable: BINDIR/<relative libdir>/libsmcr.so. */
static int find_library(char *path, size_t size)
{
	static const char *const relative[] = { SMCR_BIN_TO_LIBDIR, "../lib" };
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0)
		return -1;
	exe[n] = '\0';
	char *slash = strrchr(exe, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	for (size_t i = 0; i < sizeof(relative) / sizeof(relative[0]); i++) {
		int len = snprintf(path, size, "%s/%s/libsmcr.so", exe, relative[i]);
		if (len > 0 && (size_t)len < size && access(path, R_OK) == 0)
			return 0;
	}
	return -1;
}

int main(int argc, char **argv)
{
	const char *level = NULL;
	int i = 1;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			fputs(usage, stdout);
			return 0;
		} else if (strcmp(argv[i], "-l") == 0 && i + 1 < argc) {
			level = argv[++i];
		} else if (strcmp(argv[i], "--") == 0) {
			i++;
			break;
		} else {
			fprintf(stderr, "smcr_run: unknown option %s\n%s", argv[i], usage);
			return 2;
		}
	}
	if (i >= argc) {
		fputs(usage, stderr);
		return 2;
	}
	if (level) {
		if (smcr_log_parse_level(level) < 0) {
			fprintf(stderr, "smcr_run: -l %s: expected error, warn, info or debug\n",
				level);
			return 2;
		}
		setenv("SMCR_LOG", level, 1);
	}

	char lib[PATH_MAX];
	const char *override = getenv("SMCR_LIBRARY");
	if (override && *override) {
		snprintf(lib, sizeof(lib), "%s", override);
	} else if (find_library(lib, sizeof(lib)) != 0) {
		fprintf(stderr, "smcr_run: cannot find libsmcr.so next to this program; "
				"set SMCR_LIBRARY\n");
		return 127;
	}
	if (access(lib, R_OK) != 0) {
		fprintf(stderr, "smcr_run: %s: %s\n", lib, strerror(errno));
		return 127;
	}

	const char *old = getenv("LD_PRELOAD");
	char *preload;
	if (asprintf(&preload, "%s%s%s", lib, old && *old ? ":" : "", old ? old : "") < 0) {
		perror("smcr_run");
		return 127;
	}
	setenv("LD_PRELOAD", preload, 1);
	free(preload);

	execvp(argv[i], &argv[i]);
	fprintf(stderr, "smcr_run: %s: %s\n", argv[i], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
