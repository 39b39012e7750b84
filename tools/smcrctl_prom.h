/*
 * smcrctl_prom.h - the Prometheus text exposition format (0.0.4) as
 * `smcrctl stats --prometheus` writes it: a family's # HELP and # TYPE
 * lines and its samples, with the escaping the format asks for
 * (smcrctl_prom.c).  What the families and samples are is smcrctl_stats.c's
 * table; this only writes them.
 */
#ifndef SMCRCTL_PROM_H
#define SMCRCTL_PROM_H

#include <stdint.h>
#include <stdio.h>

/* "# HELP name help" (help's backslashes and newlines escaped), "# TYPE name type". */
void smcrctl_prom_head(FILE *out, const char *name, const char *type, const char *help);

/*
 * "name{label="value",...} value": labels holds a label's name then its value,
 * for each, then NULL (no braces without labels); the values' backslashes,
 * double quotes and newlines escaped.
 */
void smcrctl_prom_sample(FILE *out, const char *name, const char *const labels[], uint64_t value);

#endif
