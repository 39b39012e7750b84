/*
 * smcrctl_prom.c - writes the Prometheus text exposition format (0.0.4) for
 * `smcrctl stats --prometheus`: family headers and samples, escaped as the
 * format says, so that no label value or help text can end a line or a
 * string early.  Apart from smcrctl_stats.c so that its unit test can reach
 * the escaping (tests/unit/test_prom.c).
 */
#include <stdbool.h>

#include "smcrctl_prom.h"

/* s with backslashes and newlines escaped, and double quotes too if quotes (label values). */
static void escaped(FILE *out, const char *s, bool quotes)
{
	for (; *s; s++) {
		if (*s == '\n')
			fputs("\\n", out);
		else if (*s == '\\' || (quotes && *s == '"'))
			fprintf(out, "\\%c", *s);
		else
			fputc(*s, out);
	}
}

void smcrctl_prom_head(FILE *out, const char *name, const char *type, const char *help)
{
	fprintf(out, "# HELP %s ", name);
	escaped(out, help, false);
	fprintf(out, "\n# TYPE %s %s\n", name, type);
}

void smcrctl_prom_sample(FILE *out, const char *name, const char *const labels[], uint64_t value)
{
	fputs(name, out);
	for (unsigned int i = 0; labels[i]; i += 2) {
		fprintf(out, "%s%s=\"", i ? "," : "{", labels[i]);
		escaped(out, labels[i + 1], true);
		fputc('"', out);
	}
	fprintf(out, "%s %llu\n", labels[0] ? "}" : "", (unsigned long long)value);
}
