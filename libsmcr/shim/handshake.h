/*
 * handshake.h - what the TCP handshake decided about SMC, per connection.
 *
 * Before connect() or listen(), libsmcr marks the socket in smcrd's
 * ownership map: only sockets of processes that can speak CLC may offer SMC.
 * smcrd's BPF program then watches the SYN and SYN-ACK (handshake_flags.h)
 * and records, per socket, whether both carried the RFC 7609 option.  libsmcr
 * asks once per connection - right after accept(), after a blocking
 * connect(), or at the first call on a socket whose non-blocking connect()
 * has since completed - with one map look-up keyed by the descriptor, and
 * records the outcome: SMC negotiated, or the fallback reason.
 */
#ifndef SMCR_HANDSHAKE_H
#define SMCR_HANDSHAKE_H

#include <stdbool.h>
#include <stdint.h>

#include "fdtable.h"
#include "reason.h"

/* The outcome for a set of handshake flags (or no entry: has_entry false). */
enum smcr_reason smcr_handshake_reason(bool has_entry, uint32_t flags);

/* Marks fd (about to connect or listen) as one that may offer SMC. */
void smcr_handshake_offer(int fd);

/*
 * Before a sandbox's filter forbids smcrd's maps (entry/preload_confine.c):
 * this process's listeners are no longer marked, so that no connection
 * accepted from now on negotiates SMC, which the process could not see.
 */
void smcr_handshake_withdraw_listeners(void);

/*
 * Looks up, records and counts the outcome of fd's handshake; fd's state
 * (client or server) is set last, once its connection is there to take
 * the calls.
 */
void smcr_handshake_record(int fd, bool active);

/*
 * A connect() on fd completed: records its outcome (smcr_handshake_record),
 * fd settling meanwhile.  Another thread's call on fd sees SETTLING and
 * waits (smcr_handshake_settle), so that no byte of the application goes
 * on TCP ahead of the Proposal, or on TCP at all if SMC was negotiated.
 */
void smcr_handshake_record_connected(int fd);

/*
 * fd's non-blocking connect() was in progress: if it has completed, record
 * its outcome; if another thread records it, wait for that (not in a
 * signal handler of that thread: it goes on as over TCP).  Returns fd's
 * state afterwards.
 */
enum smcr_fd_state smcr_handshake_settle(int fd);

/*
 * In a fork's child: a descriptor whose outcome another thread of the
 * parent was recording has nobody to finish it here, and would make the
 * child's calls on it wait for ever; it is taken for a TCP client.
 */
void smcr_handshake_fork_child(void);

/*
 * fd came from another process (SCM_RIGHTS): if it is a connected TCP
 * socket, track it, and if its handshake negotiated SMC, carry on with its
 * connection (smcr_sock_adopt).
 */
void smcr_handshake_adopt(int fd);

/* The same for every descriptor the process started with (exec). */
void smcr_handshake_adopt_inherited(void);

#endif
