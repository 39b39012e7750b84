/*
 * readiness_common.c - what epoll.c and poll.c share (readiness_priv.h):
 * how a descriptor must be waited for, moving a connect() or CLC exchange
 * on, and the deadline of a wait; and, for the interposed calls, a
 * timespec timeout in milliseconds (readiness.h).
 */
#include "fdtable.h"
#include "handshake.h"
#include "readiness.h"
#include "readiness_priv.h"
#include "smc_sock.h"
#include "smc_transport.h"

enum regime smcr_regime_of(int fd)
{
	struct smcr_sock *sk = smcr_fd_serving(fd);

	if (sk) {
		switch (smcr_sock_phase(sk)) {
		case SMCR_SOCK_SMC:
			return REG_SMC;
		case SMCR_SOCK_RESET:
			return REG_RESET;
		case SMCR_SOCK_TCP:     /* ours until our leave is over (smcr_sock_left_reads_ours) */
			return smcr_sock_left_reads_ours(sk) ? REG_RESET : REG_PLAIN;
		default:
			return REG_WATCH;
		}
	}
	if (smcr_fd_epoll(fd))
		return REG_NESTED;
	switch (smcr_fd_get(fd)) {
	case SMCR_FD_TCP:               /* may connect later */
	case SMCR_FD_TCP_CONNECTING:
	case SMCR_FD_TCP_SETTLING:
		return REG_WATCH;
	default:
		return REG_PLAIN;
	}
}

void smcr_drive(int fd)
{
	struct smcr_sock *sk;

	if (smcr_fd_state_is_connecting(smcr_fd_get(fd)))
		smcr_handshake_settle(fd);
	sk = smcr_fd_serving(fd);
	if (sk)
		smcr_sock_settle(sk, fd, false);
}

int smcr_wait_remaining(int timeout_ms, uint64_t deadline)
{
	return timeout_ms <= 0 ? timeout_ms : smc_ms_until(deadline);
}

int smcr_timespec_ms(const struct timespec *ts)
{
	if (!ts)
		return -1;
	if (ts->tv_sec > 2000000)
		return 2000000000;
	return (int)(ts->tv_sec * 1000 + (ts->tv_nsec + 999999) / 1000000);
}
