/*
 * smc_rdma.h - the RDMA transport: payload by RDMA WRITE into the peer's
 * RMB, CDC messages by SEND, on a link (one RC queue pair) that all the
 * connections between two processes share (smc_rdma_link.h).
 *
 * The libraries are loaded on first use; without them, or without an RDMA
 * device for the connection's local address, every entry point fails with
 * -ENODEV, which the handshake answers with a Decline NOSMCDEV.
 *
 * Setting a connection up (docs/PROTOCOL.md, section 9).  conn->sock and
 * conn->st->token are set before the first call:
 *
 *   client                                  server
 *   smc_rdma_local_block -> Proposal
 *                                           Proposal -> create_rmb,
 *                                             smc_rdma_link_to_peer,
 *                                             smc_rdma_local_desc -> Accept
 *   Accept -> create_rmb, attach_peer,
 *     smc_rdma_local_desc -> Confirm
 *                                           Confirm -> attach_peer
 *
 * create_rmb takes memfd = -1 and wake_fd = -1: the RMB comes from the
 * transport's pool of registered buffers (its size is still the one smcrd
 * granted), and the wake-up descriptor is an eventfd of its own, fed by
 * the transport's thread; attach_peer likewise takes -1, -1.  Any other
 * descriptor is refused (-EINVAL) and not kept.
 */
#ifndef SMCR_SMC_RDMA_H
#define SMCR_SMC_RDMA_H

#include <stdbool.h>

#include "smc_clc.h"
#include "smc_transport.h"

extern const struct smc_transport_ops smc_rdma_ops;

/*
 * The SMC-R local block of our Proposal (and Accept, Confirm) for the TCP
 * connection sock: GID and MAC of the RDMA device serving its local
 * address, and a peer ID whose 2-byte instance is our rdma_cm listener's
 * port on that address.  Starts listening on first use.  0 or -ENODEV.
 */
int smc_rdma_local_block(int sock, struct smc_clc_local *lcl);

/*
 * Server, after create_rmb and before its Accept: finds the link to the
 * client process the Proposal's local block names (by the connection's
 * peer address and the block's instance), or connects one now, blocking
 * up to SMC_CLC_WAIT_MS (*first_contact: a new link; the Accept's first
 * contact flag).  From here on the connection takes CDCs.
 */
int smc_rdma_link_to_peer(struct smc_conn *conn, const struct smc_clc_local *peer,
			  bool *first_contact);

/*
 * Our Accept (server, after smc_rdma_link_to_peer) or Confirm (client,
 * after attach_peer): the local block, our QP on the link, our RMB (rkey,
 * address, size), our token, the path MTU and the QP's first PSN.  The
 * first contact flag is the caller's: the server's from
 * smc_rdma_link_to_peer, the client's echoes the Accept.
 */
int smc_rdma_local_desc(struct smc_conn *conn, struct smc_clc_accept_confirm *desc);

/*
 * fork(): take every lock of the transport's before, release them after;
 * the child forgets the parent's links and devices (shim/fork.c runs
 * these, whether or not RDMA was ever started).
 */
void smc_rdma_fork_prepare(void);
void smc_rdma_fork_parent(void);
void smc_rdma_fork_child(void);

#endif
