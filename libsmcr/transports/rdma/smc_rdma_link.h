/*
 * smc_rdma_link.h - RDMA devices, listeners, links and their thread: what
 * the RDMA transport (smc_rdma.c) runs its connections on.
 *
 * A link is one RC queue pair between two processes, connected through
 * librdmacm (so RoCE, InfiniBand and iWARP alike), that carries the RDMA
 * WRITEs and CDC SENDs of every connection between them; CDCs are handed
 * to the connection whose token they carry.  Each process listens on an
 * rdma_cm id bound to the local address of its connections, on a port the
 * kernel picks: that port is the process's "instance" (docs/PROTOCOL.md,
 * section 9), and a link is found again by the peer's address and
 * instance.  One thread per process (the poller) accepts links, takes
 * their completions and notices their failures.
 *
 * A link without connections is torn down by the poller after
 * SMCR_RDMA_LINK_IDLE_MS (environment, read once; default 30000, 0: never):
 * it disconnects, and the peer, which has no connection on it either,
 * frees its side too (a peer that has one counts a failure).  The next
 * connection makes a new link.  What links do is counted in the process's
 * statistics (stats.h, struct smcr_stats_rdma).
 *
 * After fork() the child forgets every link, device and listener it
 * inherited without a single verb on them (they are the parent's; the
 * child's endpoints on them are down), and starts afresh on first use.
 *
 * Implemented by smc_rdma_dev.c (devices, buffer pools, the poller),
 * smc_rdma_cm.c (listeners, finding and establishing links) and
 * smc_rdma_link.c (a link's queue pair and data path).
 */
#ifndef SMCR_SMC_RDMA_LINK_H
#define SMCR_SMC_RDMA_LINK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "smc_cdc.h"
#include "smc_clc.h"

struct ibv_mr;
struct smc_rdma_link;
struct rdma_dev;

struct smc_rdma_endpoint;

/*
 * What a link tells a connection bound to it: the connection's owner
 * (smc_rdma.c) gives these with the endpoint, and the link calls them under
 * its lock, from any thread.
 */
struct smc_rdma_endpoint_ops {
	void (*deliver)(struct smc_rdma_endpoint *ep, const uint8_t msg[SMC_CDC_MSG_LEN]);
	void (*down)(struct smc_rdma_endpoint *ep);
	/* a forked child's only thread, on every endpoint it inherited: down, nobody to wake */
	void (*forgotten)(struct smc_rdma_endpoint *ep);
};

/* A connection as a link knows it: found by token, told of CDCs and failure. */
struct smc_rdma_endpoint {
	uint32_t token;				/* ours, in every CDC the peer sends us */
	const struct smc_rdma_endpoint_ops *ops;
	struct smc_rdma_endpoint *next;		/* on the link, under its lock */
};

/*
 * A buffer: an RMB (the peer writes it) or a staging buffer (we write from
 * it), registered in the PD of the link its connection is bound to.
 */
struct smc_rdma_buf {
	uint8_t *mem;
	uint32_t size;
	uint32_t lkey, rkey;			/* 0 while not registered */
	struct ibv_mr *mr;			/* NULL while not registered (in the pool) */
	struct rdma_dev *dev;
	bool remote;				/* an RMB: the peer may write it */
	uint8_t size_class;
	/* retired (smc_rdma_link_retire): on which link, for which token, until when (ms) */
	const struct smc_rdma_link *retired_on;
	uint32_t token;
	uint64_t until;
	struct smc_rdma_buf *next;		/* in a free pool, or smc_rdma.retired */
};

/* What a process says about itself for one local address (CLC local block). */
struct smc_rdma_local {
	struct rdma_dev *dev;
	struct smc_clc_local lcl;		/* peer_id: instance (listener port), MAC */
	uint16_t instance;
};

/*
 * Send and receive queue depths of links set up from now on (0: keep).
 * Defaults 256 and 256: Linux raised its CDC slots from 16 to 256 because
 * a burst of small sends exhausted them.
 */
void smc_rdma_set_slots(unsigned int send_slots, unsigned int recv_slots);

/*
 * Loads the libraries, starts the thread, and listens on local (a local
 * address of a TCP connection): -ENODEV when there are no RDMA libraries or
 * no RDMA device for that address.
 */
int smc_rdma_listen(const struct sockaddr *local, struct smc_rdma_local *out);

/*
 * A client's TCP socket sock is about to connect to peer: the first time
 * in this process, listens (smc_rdma_listen) on the address it will
 * connect from, unless peer is a loopback address or, if remote, that
 * address is peer's own (struct smc_transport_setup, prepare_client).
 */
void smc_rdma_prepare_client(int sock, const struct sockaddr *peer, socklen_t len, bool remote);

/*
 * Buffers of 16 KiB << size_class for dev, from its pools (memory reused
 * after put), not registered yet: an RMB, which the peer may write, or a
 * staging buffer, which it may not.  NULL: out of memory.
 */
struct smc_rdma_buf *smc_rdma_rmb_get(struct rdma_dev *dev, unsigned int size_class);
struct smc_rdma_buf *smc_rdma_staging_get(struct rdma_dev *dev, unsigned int size_class);

/*
 * Registers buf in the PD of link (on buf's device), which alone may then
 * reach it, by the keys it now has: 0 or -errno.
 */
int smc_rdma_buf_register(struct smc_rdma_buf *buf, struct smc_rdma_link *link);

/*
 * Deregisters buf, if it is registered: its keys die.  false if the device
 * refused (logged): the buffer must never be used again.
 */
bool smc_rdma_buf_unregister(struct smc_rdma_buf *buf);

/* Deregisters buf and gives it back to its pool (leaked if it cannot be deregistered). */
void smc_rdma_buf_put(struct smc_rdma_buf *buf);

/* The CDC flags after which a peer WRITEs no more into the connection's RMB. */
#define SMC_RDMA_PEER_STOPPED \
	(SMC_CDC_PEER_DONE_WRITING | SMC_CDC_PEER_CONN_CLOSED | SMC_CDC_PEER_CONN_ABORT)

/*
 * The RMB buf of a connection (token: ours) that is released while the
 * peer may still WRITE into it (no CDC of its said SMC_RDMA_PEER_STOPPED:
 * WRITEs it posted before it saw our close may be on their way): it stays
 * registered, and unused, until the peer's CDC for that token says it
 * stopped, the link is freed, or SMC_CLC_WAIT_MS pass (a peer that was
 * aborted says nothing more); then it goes back to its pool.  Deregistered
 * at once, a late WRITE of a well-behaved peer would fail its link, and
 * every connection on it.
 */
void smc_rdma_link_retire(struct smc_rdma_link *link, uint32_t token, struct smc_rdma_buf *buf);

/*
 * The link to the process at peer (its instance in peer_lcl->peer_id),
 * from local: one that is up, or a new one connected now (*fresh), which
 * blocks up to timeout_ms.  The caller holds a reference.
 */
int smc_rdma_link_get(const struct sockaddr *local, const struct sockaddr *peer,
		      const struct smc_clc_local *peer_lcl, int timeout_ms,
		      struct smc_rdma_link **link, bool *fresh);

/* The instance (listener port) of the process that sent lcl, from its peer_id. */
static inline uint16_t smc_rdma_instance_of(const struct smc_clc_local *lcl)
{
	return (uint16_t)(lcl->peer_id[0] << 8 | lcl->peer_id[1]);
}

/* How a server's Accept names the link it connected to us. */
struct smc_rdma_link_name {
	uint32_t peer_qpn;		/* its QP */
	uint16_t peer_instance;		/* its process (smc_clc_local.peer_id) */
	bool first_contact;		/* it made the link for this connection */
};

/*
 * The link from the process at peer that name names, waiting up to
 * timeout_ms for it to come up.  A QP number alone does not name one: a
 * device may give a new QP the number of one just destroyed (siw gives the
 * lowest free), and the link of a peer that has gone may still be up here,
 * our events being behind.  So the peer's instance must match too, and a
 * first contact names a link no first contact named before.
 */
int smc_rdma_link_find(const struct sockaddr *peer, const struct smc_rdma_link_name *name,
		       int timeout_ms, struct smc_rdma_link **link);

void smc_rdma_link_put(struct smc_rdma_link *link);

/* Adds or removes a connection: -EEXIST if its token is taken on the link. */
int smc_rdma_link_bind(struct smc_rdma_link *link, struct smc_rdma_endpoint *ep);
void smc_rdma_link_unbind(struct smc_rdma_link *link, struct smc_rdma_endpoint *ep);

/* What our Accept/Confirm says of the link: our QP, its first PSN, the path MTU. */
struct smc_rdma_link_info {
	uint32_t qpn, peer_qpn, psn, inline_max;
	uint8_t mtu;				/* enum ibv_mtu */
	struct rdma_dev *dev;
};
void smc_rdma_link_info(const struct smc_rdma_link *link, struct smc_rdma_link_info *info);


/* An RDMA WRITE of len bytes from a registered buffer (lkey) into the peer's remote_addr/rkey. */
struct smc_rdma_write {
	const void *src;
	uint32_t len, lkey;
	uint64_t remote_addr;
	uint32_t rkey;
};

#define SMC_RDMA_POST_MAX 4			/* WRITEs in one post */

/* How smc_rdma_post sends its CDC. */
enum {
	SMC_RDMA_SOLICITED = 1,		/* the peer's thread is woken for it */
	SMC_RDMA_DELIVERED = 2,		/* returns once it completed (or after
					   SMC_CLC_WAIT_MS): the peer's QP has it, but on iWARP
					   only our end of the TCP connection may, until the
					   process is ending, when every CDC is delivered and
					   proven so (smc_rdma_process_ending) */
};

/*
 * Posts n WRITEs (n <= SMC_RDMA_POST_MAX), then, if cdc is not NULL, the
 * CDC cdc as a SEND, as one chain: the SEND arrives after the WRITEs.  A
 * WRITE of at most inline_max bytes goes inline.  Waits for send-queue
 * slots if too few are free.  0, -ETIMEDOUT (DELIVERED: no completion in
 * time), or -ECONNRESET once the link has failed.
 */
int smc_rdma_post(struct smc_rdma_link *link, const struct smc_rdma_write *writes, unsigned int n,
		  const uint8_t *cdc, unsigned int how);

/*
 * The process is ending (exit, _exit): waits, bounded, until every WR that
 * its links took has left, since its QPs go with it (smc_transport.h,
 * process_ending).
 */
void smc_rdma_process_ending(void);

/* Takes the link's completions now, unless another thread is at it (CDCs are delivered). */
void smc_rdma_link_poll(struct smc_rdma_link *link);

/* The same, waiting for a poll in progress to end: every completion so far is taken. */
void smc_rdma_link_drain(struct smc_rdma_link *link);

/*
 * Before a thread sleeps: the next completion of any kind, not only a
 * solicited one, raises an event (an unsolicited CDC that arrives after
 * the sleeper's last poll may be what it waits for); then takes the
 * completions that came before, waiting for a poll in progress to end.
 */
void smc_rdma_link_arm_any(struct smc_rdma_link *link);

/*
 * The descriptor that is readable while a completion event of the link's
 * device is pending (its completion channel, shared by the device's links):
 * a thread that armed the CQ (smc_rdma_link_arm_any) and polled it may
 * sleep on it.  The poller takes the events.
 */
int smc_rdma_link_event_fd(const struct smc_rdma_link *link);

#endif
