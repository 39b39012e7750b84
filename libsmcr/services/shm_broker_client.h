/*
 * shm_broker_client.h - libsmcr's side of smcrd's shared-memory buffer
 * broker (smcrd/shm_broker.c): one end of a TCP connection on this host puts
 * up its receive buffer, and only the other end of that connection can map
 * it.  With the buffer goes the tx end of the owner's wake-up channel
 * (base/sys.h), so that the peer can wake the owner when it sleeps.
 *
 *   owner: fd = smcr_sys_memfd_sealed(n); mmap it; smcr_sys_wake_channel(&ch);
 *          state = smcr_sys_memfd_sealed(s); mmap it;
 *          smcr_shm_offer(sock, fd, n, ch, state, &token); close(fd); keep ch;
 *          send token to the peer (CLC); ...; drain ch.rx to take wake-ups;
 *          smcr_shm_withdraw(token, sock) BEFORE the TCP socket is closed
 *   peer:  smcr_shm_attach(sock, token, &fd, &tx); mmap fd; close(fd);
 *          smcr_sys_wake_send(tx) to wake the owner; close(tx) at the end
 *   a process the owner's socket reached (SCM_RIGHTS, exec):
 *          smcr_shm_resume(sock, &token, fds, &n): the state, buffer and
 *          channel again, and the peer's buffer and tx if it offered
 *
 * Withdrawing before closing matters: the peer is recognised by the
 * connection's addresses, which must not be reusable while the offer is
 * open.  An offer's memory is granted against max_memory until it is
 * withdrawn or the owner exits (whatever way: smcrd sees its control socket
 * close).  Every function may be called from any thread; none changes errno.
 */
#ifndef SMCR_SHM_BROKER_CLIENT_H
#define SMCR_SHM_BROKER_CLIENT_H

#include <stdint.h>

#include "sys.h"

/*
 * Offers memfd (exactly bytes, a whole number of pages, from smcr_sys_memfd_sealed)
 * and the wake-up channel wake (its tx) to the other end of TCP socket
 * sock, and leaves the connection's state (a memfd of a few pages, from
 * smcr_sys_memfd_sealed) for smcr_shm_resume; the offer's name in *token, and in
 * *transports (if not NULL) the transports smcr.conf allows now
 * (SMCR_CONTROL_SHM, _RDMA).  0, -ENOMEM (max_memory reached),
 * -ENOTCONN (no smcrd), -EMFILE (smcrd holds too many unattached buffers),
 * -EINVAL (sock, memfd or channel unacceptable; logged).
 */
int smcr_shm_offer(int sock, int memfd, uint64_t bytes, struct smcr_wake_channel wake,
		   int state, uint64_t *token, uint32_t *transports);

/*
 * The memfd and the wake-up channel's tx that the other end of TCP socket
 * sock offered as token (0: whatever it offered), in *memfd (its size is
 * fstat's) and *tx, both close-on-exec.  tx's file flags are shared with
 * the owner, who may have made it blocking (smcr_sys_wake_send does not
 * mind).  0, -EACCES (no such offer for this connection, or already
 * attached), -ENOTCONN (no smcrd), -EMFILE; on failure both are -1.
 */
int smcr_shm_attach(int sock, uint64_t token, int *memfd, int *tx);

/*
 * What was offered on sock itself (by this process or another that held
 * it), into fds[]: the state, the memfd and the channel (rx, tx), and the
 * other end's memfd and tx if it offered; all close-on-exec.  *nfds:
 * SMCR_SHM_RESUMED_OWN or _BOTH; *token: the offer.  0, -ENOENT (nothing
 * offered on sock: its connection is not on shared memory), -ENOTCONN (no
 * smcrd).
 */
enum { SMCR_SHM_RESUMED_OWN = 4, SMCR_SHM_RESUMED_BOTH = 6 };
int smcr_shm_resume(int sock, uint64_t *token, int fds[SMCR_SHM_RESUMED_BOTH], int *nfds);

/*
 * Ends the offer token and returns its memory; sock (or -1) proves the
 * right of a process that holds the offering socket but did not offer.
 */
void smcr_shm_withdraw(uint64_t token, int sock);

#endif
