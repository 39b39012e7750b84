/*
 * shm_broker_client.h - libsmcr's side of smcrd's shared-memory buffer
 * broker (smcrd/shm_broker.c): one end of a TCP connection on this host puts
 * up its receive buffer, and only the other end of that connection can map
 * it.
 *
 *   owner: fd = smcr_shm_memfd(n); mmap it; smcr_shm_offer(sock, fd, n, &token);
 *          close(fd); send token to the peer (CLC); ...;
 *          smcr_shm_withdraw(token) BEFORE the TCP socket is closed
 *   peer:  smcr_shm_attach(sock, token, &fd); mmap it; close(fd)
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

/*
 * A new memfd of bytes, close-on-exec, sealed so that its size can never
 * change (what smcr_shm_offer requires); the descriptor, or a negative errno.
 */
int smcr_shm_memfd(uint64_t bytes);

/*
 * Offers memfd (exactly bytes, a whole number of pages, from smcr_shm_memfd)
 * to the other end of TCP socket sock; the offer's name in *token.  0,
 * -ENOMEM (max_memory reached), -ENOTCONN (no smcrd), -EMFILE (smcrd holds
 * too many unattached buffers), -EINVAL (sock or memfd unacceptable; logged).
 */
int smcr_shm_offer(int sock, int memfd, uint64_t bytes, uint64_t *token);

/*
 * The memfd that the other end of TCP socket sock offered as token, in *memfd
 * (close-on-exec; its size is fstat's).  0, -EACCES (no such offer for this
 * connection, or already attached), -ENOTCONN (no smcrd), -EMFILE.
 */
int smcr_shm_attach(int sock, uint64_t token, int *memfd);

/* Ends our offer token and returns its memory. */
void smcr_shm_withdraw(uint64_t token);

#endif
