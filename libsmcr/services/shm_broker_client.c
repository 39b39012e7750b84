/*
 * shm_broker_client.c - offering, attaching and withdrawing shared-memory
 * buffers through smcrd (see shm_broker_client.h), over the control socket
 * that control.c keeps.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "control.h"
#include "control_proto.h"
#include "log.h"
#include "real.h"
#include "shm_broker_client.h"

int smcr_shm_offer(int sock, int memfd, uint64_t bytes, struct smcr_wake_channel wake,
		   int state, uint64_t *token, uint32_t *transports)
{
	struct smcr_control_msg m = { .type = SMCR_CONTROL_OFFER, .bytes = bytes };
	const int out[5] = { sock, memfd, wake.rx, wake.tx, state };
	int rc = smcr_control_request(&m, out, 5, NULL, 0);

	if (rc)
		return rc;
	if (m.result) {
		smcr_log(m.result == -EINVAL ? SMCR_LOG_WARN : SMCR_LOG_DEBUG,
			 "smcrd refused our buffer for fd %d: %s", sock,
			 m.text[0] ? m.text : strerror(-m.result));
		return m.result;
	}
	*token = m.token;
	if (transports)
		*transports = m.transports;
	return 0;
}

/*
 * Asks m with the TCP socket sock, for a reply with up to max descriptors
 * into in[] (-1 where none came), at least least of them.  0 and *n of
 * them, or a negative errno and none (EPROTO: a yes without its
 * descriptors).
 */
static int ask_with_socket(struct smcr_control_msg *m, int sock, int *in, int least, int max,
			   int *n)
{
	int rc = smcr_control_request(m, &sock, 1, in, (size_t)max);

	*n = 0;
	while (rc == 0 && *n < max && in[*n] >= 0)
		(*n)++;
	if (rc == 0)
		rc = m->result ? m->result : *n < least ? -EPROTO : 0;
	if (rc) {
		for (int i = 0; i < max; i++)
			if (in[i] >= 0)
				REAL(close)(in[i]);
		*n = 0;
	}
	return rc;
}

int smcr_shm_attach(int sock, uint64_t token, int *memfd, int *tx)
{
	struct smcr_control_msg m = { .type = SMCR_CONTROL_ATTACH, .token = token };
	int in[2] = { -1, -1 }, n;
	int rc = ask_with_socket(&m, sock, in, 2, 2, &n);

	*memfd = rc ? -1 : in[0];
	*tx = rc ? -1 : in[1];
	return rc;
}

int smcr_shm_resume(int sock, uint64_t *token, int fds[SMCR_SHM_RESUMED_BOTH], int *nfds)
{
	struct smcr_control_msg m = { .type = SMCR_CONTROL_RESUME };
	int rc;

	for (int i = 0; i < SMCR_SHM_RESUMED_BOTH; i++)
		fds[i] = -1;
	rc = ask_with_socket(&m, sock, fds, SMCR_SHM_RESUMED_OWN, SMCR_SHM_RESUMED_BOTH, nfds);
	*token = m.token;
	return rc;
}

void smcr_shm_withdraw(uint64_t token, int sock)
{
	struct smcr_control_msg m = { .type = SMCR_CONTROL_WITHDRAW, .token = token };

	smcr_control_notify(&m, &sock, sock >= 0);
}
