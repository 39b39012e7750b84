/*
 * control_request.h - one request as smcrd takes it from a client's control
 * connection: its bytes and its descriptors (SCM_RIGHTS) in one recvmsg(),
 * and whether they have the form of a request (protocol:
 * common/control_proto.h).  What a well-formed request asks, and whether
 * its descriptors are of the kinds it needs, is control.c's (it checks them
 * where it uses them: shm_broker.c, stats_agg.c).  Nothing here needs a
 * running daemon: the fuzz target tests/fuzz/fuzz_control.c calls it too.
 */
#ifndef SMCRD_CONTROL_REQUEST_H
#define SMCRD_CONTROL_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "control_proto.h"

/* As many descriptors as one message can carry (the kernel's SCM_MAX_FD). */
#define SMCRD_REQUEST_MAX_FDS 253

/*
 * Receives one request from the control connection fd, without waiting,
 * and the descriptors that came with it into in[0 .. *nin-1]
 * (SMCR_CONTROL_MAX_FDS at most), for the caller to close.  *cut: some more
 * came than a request carries (those are closed here, by the closer:
 * closer.h).  Returns recvmsg()'s count - one more if the message was longer
 * than a request - or -1 with errno set.
 */
ssize_t smcrd_request_recv(int fd, struct smcr_control_msg *m, int *in, size_t *nin, bool *cut);

/*
 * Whether what smcrd_request_recv() returned is a request: n bytes, all of
 * a struct smcr_control_msg, of our version, with exactly the descriptors
 * its type carries.  Also well-formed, with *short_of_fds set: fewer came
 * because smcrd was out of descriptors (the request is refused, not held
 * against the client).
 */
bool smcrd_request_well_formed(const struct smcr_control_msg *m, ssize_t n, size_t nin, bool cut,
			       bool *short_of_fds);

#endif
