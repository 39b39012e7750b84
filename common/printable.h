/*
 * printable.h - text that another process chose (a process's command name),
 * made safe to print on a terminal or write to a log (printable.c).
 */
#ifndef SMCR_PRINTABLE_H
#define SMCR_PRINTABLE_H

#include <stddef.h>

/* Room for the escaped form of n bytes: each may take 4 ("\xHH"), and the NUL. */
#define SMCR_PRINTABLE_SIZE(n) (4 * (n) + 1)

/*
 * in[0..len-1], up to its first NUL, into out (size bytes, NUL-terminated):
 * printable ASCII as it is but for the backslash, which becomes "\\", and
 * every other byte "\xHH" (two lowercase hex digits).  Cut short, if out is
 * too small, only between two whole characters or escapes.  Returns out.
 */
char *smcr_printable(const char *in, size_t len, char *out, size_t size);

#endif
