/*
 * control.h - libsmcr's link to smcrd (protocol: control_proto.h).
 *
 * Registration happens on first need (the first TCP connection that asks
 * for its handshake result), not at start, so that a process that never
 * uses TCP pays nothing and a missing daemon costs one failed connect() per
 * second at most.  Our descriptors are moved high, out of the numbers the
 * application is about to get, and let go of if the application closes or
 * replaces them.
 */
#ifndef SMCR_CONTROL_H
#define SMCR_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct smcr_control_msg;

/* smcrd's negotiation maps, as handed to registered processes. */
enum smcr_control_map {
	SMCR_MAP_RESULT,                /* handshake outcome per socket (read-only) */
	SMCR_MAP_OWNED,                 /* where we mark our sockets (writable) */
};

/*
 * One bpf() command (BPF_MAP_LOOKUP_ELEM, BPF_MAP_UPDATE_ELEM) on one of the
 * maps, keyed by our socket fd, registering first if needed.  Done under
 * the lock, so the map descriptor cannot change hands meanwhile.  0, -errno
 * of the call, or -ENOTCONN while smcrd is not running.
 */
int smcr_control_map_call(enum smcr_control_map map, int cmd, int fd, uint32_t *value);

/*
 * Whether the smcrd we registered with still runs (one poll()); if it has
 * gone, we let go of it and register again later.  Asked only when a
 * handshake left no trace, so that a working connection pays nothing.
 */
bool smcr_control_alive(void);

/* Reserves bytes of buffer memory: 0, -ENOMEM (max_memory reached) or -ENOTCONN. */
int smcr_control_grant(uint64_t bytes);

/*
 * smcr.conf's rmb_size in bytes, as smcrd's latest reply said it (a
 * reload reaches a process at its next request); 0 before any reply.
 */
uint32_t smcr_control_rmb_bytes(void);

/*
 * The transports smcr.conf allows (SMCR_CONTROL_SHM, _RDMA), as smcrd's
 * latest reply said them; 0 before any reply.
 */
uint32_t smcr_control_transports(void);

/*
 * Whether smcrd's latest reply is recent enough to decide by, without a
 * request (a reload reaches a process only through a reply): came less
 * than TRANSPORTS_FRESH_S ago; *allowed: what it said.
 */
#define TRANSPORTS_FRESH_S 1
bool smcr_control_transports_recent(uint32_t *allowed);

/* Returns bytes to smcrd's pool. */
void smcr_control_release(uint64_t bytes);

/*
 * One request to smcrd, registering first if needed, with out[0..nout-1]
 * attached (at most SMCR_CONTROL_MAX_FDS); in[0..nin-1] receive the
 * descriptors of the reply (-1 where none came; at most SMCR_CONTROL_MAX_FDS
 * are kept).  0 with smcrd's answer in *m, or -ENOTCONN if smcrd cannot be
 * reached.
 */
int smcr_control_request(struct smcr_control_msg *m, const int *out, size_t nout, int *in,
			 size_t nin);

/*
 * A request without reply (RELEASE, WITHDRAW), with out[0..nout-1]
 * attached; dropped if we are not registered.
 */
void smcr_control_notify(struct smcr_control_msg *m, const int *out, size_t nout);

/*
 * The application replaced fd (dup2, dup3 onto it): if it was ours, it is
 * gone; we register again later.  (Its close, close_range and closefrom
 * leave ours open: base/sys.h.)
 */
void smcr_control_fd_closing(int fd);

/*
 * fork(): the control socket's lock is held across it; a child drops the
 * parent's registration and, if the parent was registered, registers itself
 * at once (shim/fork.c runs these).
 */
void smcr_control_fork_prepare(void);
void smcr_control_fork_parent(void);
void smcr_control_fork_child(void);

#endif
