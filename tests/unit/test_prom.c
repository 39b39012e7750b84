/*
 * Unit tests of tools/smcrctl_prom.c: the lines of the Prometheus text
 * exposition format that smcrctl stats --prometheus writes, and their
 * escaping (a label value or help text must not end its string or line).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "smcrctl_prom.h"

static char *text;
static size_t len;

static FILE *open_text(void)
{
	FILE *out = open_memstream(&text, &len);

	assert_non_null(out);
	return out;
}

/* Closes out and checks what was written to it. */
static void written(FILE *out, const char *want)
{
	assert_int_equal(fclose(out), 0);
	assert_string_equal(text, want);
	free(text);
}

static void sample_without_labels(void **state)
{
	FILE *out = open_text();

	(void)state;
	smcrctl_prom_sample(out, "smcr_processes", (const char *[]){ NULL }, 0);
	written(out, "smcr_processes 0\n");
}

static void sample_with_labels(void **state)
{
	FILE *out = open_text();

	(void)state;
	smcrctl_prom_sample(out, "smcr_connections_total",
			    (const char *[]){ "transport", "shm", "role", "server", NULL },
			    18446744073709551615ull);
	written(out, "smcr_connections_total{transport=\"shm\",role=\"server\"} "
		     "18446744073709551615\n");
}

/* Backslash, double quote and newline escaped in a label value; nothing else. */
static void label_value_escaped(void **state)
{
	FILE *out = open_text();

	(void)state;
	smcrctl_prom_sample(out, "m", (const char *[]){ "l", "a\\b\"c\nd'\t", NULL }, 1);
	written(out, "m{l=\"a\\\\b\\\"c\\nd'\t\"} 1\n");
}

/* In a help text, backslash and newline; a double quote stays. */
static void help_escaped(void **state)
{
	FILE *out = open_text();

	(void)state;
	smcrctl_prom_head(out, "smcr_x_total", "counter", "a \"b\" c\\d\ne");
	written(out, "# HELP smcr_x_total a \"b\" c\\\\d\\ne\n# TYPE smcr_x_total counter\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sample_without_labels),
		cmocka_unit_test(sample_with_labels),
		cmocka_unit_test(label_value_escaped),
		cmocka_unit_test(help_escaped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
