/*
 * smcrctl_common.h - what smcrctl's commands share, below all of them: exit
 * statuses, the one way to ask smcrd something, the walk over its
 * connection list, a connection's mode column, and command names made safe
 * to print, as text and in JSON (smcrctl_common.c).  It calls no command.
 */
#ifndef SMCRCTL_COMMON_H
#define SMCRCTL_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "control_proto.h"
#include "printable.h"

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

/*
 * Calls fn(conn, arg) for each open connection smcrd lists (SMCR_CONTROL_CONNS,
 * page after page): every process's to root, the caller's own to anyone else
 * (smcrd chooses, by the asker's uid).  -1 if smcrd does not answer.
 */
int smcrctl_each_conn(void (*fn)(const struct smcr_control_conn *conn, void *arg), void *arg);

/* Room for smcrctl_conn_mode's text. */
#define SMCRCTL_MODE_SIZE 64

/* The mode column: "shm", "SMC-R", "CLC", or "TCP 0x03010000 PEERNOSMC" (and the peer's code). */
char *smcrctl_conn_mode(const struct smcr_conn_view *c, char buf[SMCRCTL_MODE_SIZE]);

/*
 * What smcrd's refusal said (its user is at max_processes_per_user, or
 * asks for statistics too often), if smcrctl_ask got one instead of an
 * answer; NULL if it did not.
 */
const char *smcrctl_refusal(void);

/*
 * "smcrctl: smcrd not running (...)", or "smcrd refused: ..."
 * (smcrctl_refusal), on stderr; returns EXIT_NO_DAEMON.
 */
int smcrctl_no_daemon(void);

/*
 * Room for a command name (SMCR_COMM_LEN bytes) made printable, and for that
 * in a JSON string, where each "\xHH" takes a fifth byte.
 */
#define SMCRCTL_NAME_SIZE SMCR_PRINTABLE_SIZE(SMCR_COMM_LEN)
#define SMCRCTL_JSON_COMM_SIZE (5 * SMCR_COMM_LEN + 1)

/*
 * A command name to print: another user chose it, so control bytes, bytes
 * beyond ASCII and backslashes are escaped as "\xHH" and "\\"
 * (common/printable.h); into buf, returned.
 */
char *smcrctl_name(const char comm[SMCR_COMM_LEN], char buf[SMCRCTL_NAME_SIZE]);

/* The same, inside a JSON string: its backslashes and quotes escaped again. */
char *smcrctl_json_comm(const char comm[SMCR_COMM_LEN], char buf[SMCRCTL_JSON_COMM_SIZE]);

#endif
