/*
 * smcrctl_common.c - the helpers every smcrctl command may call: asking
 * smcrd over its control socket, saying it does not answer (or refused
 * this process), walking its
 * connection list, a connection's mode column, and command names made safe
 * to print, as text and in JSON.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "control_proto.h"
#include "reason.h"
#include "smcrctl_common.h"

/* Why smcrd turned this process or its request away, as it said; empty if it did not. */
static char refusal[sizeof(((struct smcr_control_msg *)0)->text) + 1];

/*
 * A reply that is smcrd's refusal, shorter than the answer asked for: of
 * the whole process (a user at max_processes_per_user gets it unasked at
 * connect, in place of any answer), or of the request (a user asking for
 * statistics too often): its text, kept for smcrctl_no_daemon.
 */
static void note_refusal(const void *reply, ssize_t got)
{
	const struct smcr_control_msg *m = reply;

	if (got >= (ssize_t)sizeof(*m) && m->result < 0)
		snprintf(refusal, sizeof(refusal), "%.*s", (int)sizeof(m->text),
			 m->text[0] ? m->text : strerror(-m->result));
}

int smcrctl_ask(uint16_t type, uint64_t token, void *reply, size_t size)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct smcr_control_msg m = { .version = SMCR_CONTROL_VERSION, .type = type,
				      .token = token };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	ssize_t got = -1;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", smcr_rundir(), SMCR_CONTROL_SOCKET);
	/* a refusal comes whatever was asked: it may be shorter than the reply */
	if (fd >= 0 && size >= sizeof(m) && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    (send(fd, &m, sizeof(m), MSG_NOSIGNAL) == sizeof(m) || errno == EPIPE) &&
	    poll(&(struct pollfd){ .fd = fd, .events = POLLIN }, 1, 5000) == 1)
		got = recv(fd, reply, size, 0);
	if (fd >= 0)
		close(fd);
	note_refusal(reply, got);
	return got == (ssize_t)size && ((struct smcr_control_msg *)reply)->type == type ? 0 : -1;
}

int smcrctl_each_conn(void (*fn)(const struct smcr_control_conn *conn, void *arg), void *arg)
{
	static struct smcr_control_conns page;  /* 64 connections: too big for the stack */
	uint64_t where = 0;

	do {
		if (smcrctl_ask(SMCR_CONTROL_CONNS, where, &page, sizeof(page)))
			return -1;
		for (uint32_t i = 0; i < page.n && i < SMCR_CONTROL_CONNS_PAGE; i++)
			fn(&page.conn[i], arg);
		where = page.head.token;
	} while (where);
	return 0;
}

char *smcrctl_conn_mode(const struct smcr_conn_view *c, char buf[SMCRCTL_MODE_SIZE])
{
	const char *mode = smcr_conn_mode_name(c->mode, c->transport);

	if (c->mode != SMCR_CONN_TCP && c->mode != SMCR_CONN_RESET)
		snprintf(buf, SMCRCTL_MODE_SIZE, "%s", mode);
	else if (c->peer_reason)
		snprintf(buf, SMCRCTL_MODE_SIZE, "%s 0x%08x/0x%08x %s", mode,
			 smcr_reason_code(c->reason), c->peer_reason, smcr_reason_name(c->reason));
	else
		snprintf(buf, SMCRCTL_MODE_SIZE, "%s 0x%08x %s", mode, smcr_reason_code(c->reason),
			 smcr_reason_name(c->reason));
	return buf;
}

const char *smcrctl_refusal(void)
{
	return refusal[0] ? refusal : NULL;
}

int smcrctl_no_daemon(void)
{
	if (smcrctl_refusal())
		fprintf(stderr, "smcrctl: smcrd refused: %s\n", smcrctl_refusal());
	else
		fprintf(stderr, "smcrctl: smcrd not running (no answer on %s/%s)\n", smcr_rundir(),
			SMCR_CONTROL_SOCKET);
	return EXIT_NO_DAEMON;
}

char *smcrctl_name(const char comm[SMCR_COMM_LEN], char buf[SMCRCTL_NAME_SIZE])
{
	return smcr_printable(comm, SMCR_COMM_LEN, buf, SMCRCTL_NAME_SIZE);
}

char *smcrctl_json_comm(const char comm[SMCR_COMM_LEN], char buf[SMCRCTL_JSON_COMM_SIZE])
{
	char shown[SMCRCTL_NAME_SIZE];
	size_t k = 0;

	for (const char *s = smcrctl_name(comm, shown); *s; s++) {
		if (*s == '\\' || *s == '"')
			buf[k++] = '\\';
		buf[k++] = *s;
	}
	buf[k] = '\0';
	return buf;
}
