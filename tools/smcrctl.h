/*
 * smcrctl.h - what smcrctl's commands share: exit statuses, the usage text
 * and the one way to ask smcrd something.  Each command lives in a file of
 * its own: smcrctl.c (configuration, status), smcrctl_stats.c,
 * smcrctl_conns.c, smcrctl_check.c.
 */
#ifndef SMCRCTL_H
#define SMCRCTL_H

#include <stddef.h>
#include <stdint.h>

enum { EXIT_INVALID = 1, EXIT_USAGE = 2, EXIT_NO_DAEMON = 3 };

extern const char smcrctl_usage[];

/*
 * One request (type, token) to smcrd over its control socket, reply into
 * reply (size bytes, starting with a struct smcr_control_msg).  -1 if
 * smcrd cannot be reached or does not answer properly.
 */
int smcrctl_ask(uint16_t type, uint64_t token, void *reply, size_t size);

/* "smcrctl: smcrd not running (...)" on stderr; returns EXIT_NO_DAEMON. */
int smcrctl_no_daemon(void);

/*
 * A process's command name (16 bytes, NUL-padded: the kernel's, any bytes)
 * safe in a JSON string: only [A-Za-z0-9._-] kept, others '?'; into buf
 * (17 bytes), returned.
 */
char *smcrctl_json_comm(const char comm[16], char buf[17]);

int smcrctl_stats(char **args, int nargs);
int smcrctl_conns(char **args, int nargs);
int smcrctl_check(const char *conf_path, char **args, int nargs);

#endif
