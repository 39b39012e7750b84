/*
 * control_request.c - receiving one request on a control connection and
 * judging its form (control_request.h).
 */
#include <sys/socket.h>

#include "closer.h"
#include "control_request.h"
#include "shm_broker.h"

/*
 * Whether a request came with the descriptors its type takes: exactly those,
 * or fewer because we had no room for the rest (*short_of_fds: refused, not
 * held against the client).  cut: the kernel left some out.
 */
static bool fds_fit(uint16_t type, size_t nin, bool cut, bool *short_of_fds)
{
	size_t want = type == SMCR_CONTROL_OFFER ? SMCRD_SHM_OFFER_FDS :
		      type == SMCR_CONTROL_ATTACH || type == SMCR_CONTROL_RESUME ||
		      type == SMCR_CONTROL_REGISTER || type == SMCR_CONTROL_WITHDRAW ? 1 : 0;
	/* a process's statistics region, a withdrawing socket: optional */
	size_t least = type == SMCR_CONTROL_REGISTER || type == SMCR_CONTROL_WITHDRAW ? 0 : want;

	*short_of_fds = cut && nin < want;
	return *short_of_fds || (!cut && nin >= least && nin <= want);
}

/*
 * The room takes all a message can carry: else the kernel would close the
 * rest inside recvmsg(), where a close that blocks (closer.h) would stall
 * smcrd.
 */
ssize_t smcrd_request_recv(int fd, struct smcr_control_msg *m, int *in, size_t *nin, bool *cut)
{
	union {
		char buf[CMSG_SPACE(SMCRD_REQUEST_MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} room;
	struct iovec iov = { m, sizeof(*m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = room.buf, .msg_controllen = sizeof(room.buf) };
	ssize_t n = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

	*nin = 0;
	*cut = false;
	if (n < 0)
		return n;
	size_t carried = smcr_control_take_fds(&mh, in, SMCR_CONTROL_MAX_FDS, smcrd_close_later);
	*nin = carried < SMCR_CONTROL_MAX_FDS ? carried : SMCR_CONTROL_MAX_FDS;
	*cut = (mh.msg_flags & MSG_CTRUNC) || carried > SMCR_CONTROL_MAX_FDS;
	/* Longer than a request: malformed, not a request cut to size. */
	return mh.msg_flags & MSG_TRUNC ? n + 1 : n;
}

bool smcrd_request_well_formed(const struct smcr_control_msg *m, ssize_t n, size_t nin, bool cut,
			       bool *short_of_fds)
{
	*short_of_fds = false;
	return n == (ssize_t)sizeof(*m) && m->version == SMCR_CONTROL_VERSION &&
	       fds_fit(m->type, nin, cut, short_of_fds);
}
