/*
 * smcrctl_common.h - what smcrctl's commands share, below all of them: exit
 * statuses, the one way to ask smcrd something, and command names made safe
 * for JSON (smcrctl_common.c).  It calls no command.
 */
#ifndef SMCRCTL_COMMON_H
#define SMCRCTL_COMMON_H

#include <stddef.h>
#include <stdint.h>

/*
 * EXIT_SHOW_USAGE is no exit status: a command returns it when its
 * arguments are wrong, and smcrctl.c, which holds the usage texts, prints
 * the command's and exits EXIT_USAGE.
 */
enum { EXIT_SHOW_USAGE = -1, EXIT_INVALID = 1, EXIT_USAGE = 2, EXIT_NO_DAEMON = 3 };

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

#endif
