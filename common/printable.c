/*
 * printable.c - another process's text made harmless to print (printable.h).
 *
 * Any local user names its processes as it likes (prctl PR_SET_NAME), and
 * smcrd and smcrctl show those names to root: on a terminal an escape
 * sequence there could clear the screen, set the title, or worse.  Only
 * printable ASCII passes as it is.  Valid UTF-8 is escaped too: it may
 * encode a C1 control (U+009B is CSI to some terminals) or a bidirectional
 * override that reorders what the administrator reads, and telling those
 * apart is not worth it for 15-byte names.  The backslash is escaped so
 * that a name cannot pass for the escape of another.
 */
#include <stdio.h>
#include <string.h>

#include "printable.h"

/* One byte's printed form into buf (5 bytes); its length. */
static size_t escape_byte(unsigned char b, char buf[5])
{
	if (b == '\\')
		return (size_t)snprintf(buf, 5, "\\\\");
	if (b >= 0x20 && b < 0x7f)
		return (size_t)snprintf(buf, 5, "%c", b);
	return (size_t)snprintf(buf, 5, "\\x%02x", b);
}

char *smcr_printable(const char *in, size_t len, char *out, size_t size)
{
	size_t used = 0;
	char buf[5];

	if (!size)
		return out;
	for (size_t i = 0; i < len && in[i]; i++) {
		size_t n = escape_byte((unsigned char)in[i], buf);
		if (used + n >= size)
			break;
		memcpy(out + used, buf, n);
		used += n;
	}
	out[used] = '\0';
	return out;
}
