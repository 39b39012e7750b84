/*
 * smc_rdma_priv.h - inside the RDMA transport: the objects that
 * smc_rdma_dev.c (devices, buffers, the poller thread), smc_rdma_cm.c
 * (listeners, finding and establishing links) and smc_rdma_link.c (a
 * link's queue pair and data path) share.  Nothing outside these three
 * files includes it.
 */
#ifndef SMCR_SMC_RDMA_PRIV_H
#define SMCR_SMC_RDMA_PRIV_H

#include <pthread.h>
#include <stdatomic.h>

#include "smc_ibv.h"
#include "smc_rdma_link.h"
#include "smc_transport.h"
#include "stats.h"

/* What an rdma_cm id's context points to starts with its kind. */
enum kind { K_LISTENER, K_LINK };

/* What the poller's descriptors are: the handler that runs when one is readable. */
enum poll_kind { P_CM, P_REAP, P_ASYNC, P_CQ, P_KINDS };

/* An epoll entry of the poller: its kind, and its device (NULL: the transport's own). */
struct poll_src {
	enum poll_kind kind;
	struct rdma_dev *dev;
};

/*
 * The poller's work, which lies in the files above the devices (links and
 * the connection manager): smc_rdma_cm.c hands these to smc_rdma_start, as
 * the kernel's handler tables are filled by the layers that own the work.
 */
struct smc_rdma_poller_ops {
	void (*ready[P_KINDS])(struct rdma_dev *dev);	/* a descriptor of this kind is readable */
	int (*idle)(void);		/* ms until the next idle link's time, or -1 */
	void (*rearm)(void);		/* CQs whose rearm time has come */
	void (*reap_later)(struct smc_rdma_link *link);	/* under smc_rdma.lock: no one holds it */
};

/*
 * A device, on a verbs context of our own: librdmacm's (cm_verbs, which
 * its ids point to until a link takes one over) is opened once per process
 * and kept, so a forked child would inherit it, and the kernel refuses
 * write() commands (rxe's doorbell among them) on a uverbs file opened
 * under other credentials - a forked child's are new (ib_safe_file_access).
 */
struct rdma_dev {
	struct ibv_context *cm_verbs;		/* librdmacm's: which device */
	struct ibv_context *verbs;		/* ours: every object on the device */
	struct ibv_comp_channel *chan;
	struct poll_src async_src, cq_src;
	/* [remote writable]: unregistered memory, registered per connection (smc_rdma_dev.c) */
	struct smc_rdma_buf *pool[2][SMC_RMB_MAX_CLASS_R + 1];
	/*
	 * An iWARP device, where two things are done differently because of
	 * siw (Linux 6.1), measured in rdma_peer:
	 *  - the poller's CQs wake it for every completion, not only solicited
	 *    ones: siw never raises a solicited event for a receive
	 *    (siw_rqe_complete asks siw_cq_notify_now with SIW_WQE_SIGNALLED);
	 *  - a WRITE of a page or more is signalled: siw sends an unsignalled
	 *    one straight from our pages (its zero-copy path), and a stream of
	 *    64 KiB WRITEs stalled that way.
	 */
	bool iwarp;
	unsigned int gen;			/* smc_rdma.gen when made */
	struct rdma_dev *next;
};

struct listener {
	enum kind kind;
	struct sockaddr_storage addr;
	struct rdma_cm_id *id;
	struct smc_rdma_local local;
	struct listener *next;
};

enum link_state { LINK_CONNECTING, LINK_UP, LINK_DEAD };

struct smc_rdma_link {
	enum kind kind;
	struct rdma_dev *dev;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;			/* the link's own: its QP, receives, connections' buffers */
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct sockaddr_storage peer;		/* its address (port 0) */
	uint16_t peer_instance;
	bool named_first;			/* under smc_rdma.lock: a first contact's Accept named it */
	struct smc_rdma_link_info info;
	_Atomic int state;			/* enum link_state; set under smc_rdma.lock */
	unsigned int refs;			/* under smc_rdma.lock: the table's, each endpoint's */
	uint64_t idle_since;			/* under smc_rdma.lock: ms, when refs fell to 1 */
	unsigned int gen;			/* smc_rdma.gen when made */
	pthread_mutex_t lock;			/* eps, the send queue */
	struct smc_rdma_endpoint *eps;
	uint64_t posted;
	_Atomic uint64_t completed;		/* posted count of the last signalled WR done */
	unsigned int send_slots, signal_every, recv_slots;
	pthread_mutex_t cq_lock;		/* one poller of the CQ at a time */
	bool rearm_due;				/* the poller's: took an event, not armed since */
	uint8_t *recv_buf;
	struct ibv_mr *recv_mr;
	struct smc_rdma_link *next;		/* in smc_rdma.links, then smc_rdma.reap */
	struct smc_rdma_link *ending_next;	/* smc_rdma_process_ending's list */
	uint64_t ending_seq;			/* its WR to wait for there (0: none) */
	bool reads;				/* the peer answers our RDMA READs (HELLO_READS) */
};
/* A link to the process (peer, instance) that a thread of ours is connecting. */
struct rdma_connecting {
	struct sockaddr_storage peer;
	uint16_t instance;
	struct rdma_connecting *next;
};

/* The transport's state in this process. */
struct smc_rdma_state {
	pthread_mutex_t lock;			/* all below but the atomics */
	pthread_cond_t changed;			/* a link came up or died */
	struct rdma_event_channel *cm;		/* the poller's */
	int epfd, ctl_fd;
	struct rdma_dev *devs;
	struct listener *listeners;
	struct smc_rdma_link *links;		/* connecting or up */
	struct smc_rdma_link *reap;		/* dead and unreferenced */
	struct rdma_connecting *connecting;	/* links being connected by a thread of ours */
	struct smc_rdma_buf *retired;		/* RMBs a peer may still write (smc_rdma_link_retire) */
	unsigned int send_slots, recv_slots;
	uint64_t rearm_at;			/* the poller's: when to arm the rearm_due links (0: none) */
	unsigned int idle_ms;			/* idle links go after this; 0: never */
	atomic_bool client_prepared;		/* smc_rdma_prepare_client has begun */
	atomic_bool client_ready;		/* ... and ended */
	atomic_bool ending;			/* smc_rdma_process_ending has run */
	/*
	 * +1 in a forked child: links and devices of an older generation are
	 * the parent's (smc_rdma_dev.c, "fork"), and no verb ever touches them.
	 */
	_Atomic unsigned int gen;
};

extern struct smc_rdma_state smc_rdma;

/* How long after taking a CQ's event the poller arms it again (smc_rdma_on_cq_events). */
#define SMC_RDMA_REARM_MS 10

/* Made by the parent before a fork: the child only forgets it (see gen). */
static inline bool smc_rdma_foreign(unsigned int gen)
{
	return gen != atomic_load_explicit(&smc_rdma.gen, memory_order_relaxed);
}

/* smc_rdma_dev.c */
/* Loads, starts the poller once (with ops; later calls keep the first): 0 or -ENODEV. */
int smc_rdma_start(const struct smc_rdma_poller_ops *ops);
/* Under smc_rdma.lock: by librdmacm's context (an id's verbs) or ours. */
struct rdma_dev *smc_rdma_dev_get(struct ibv_context *verbs);

/* smc_rdma_link.c */
int smc_rdma_link_new(struct rdma_cm_id *id, struct smc_rdma_link **out);
void smc_rdma_link_free(struct smc_rdma_link *link, bool destroy_id);
void smc_rdma_link_up(struct smc_rdma_link *link);		/* under smc_rdma.lock */
void smc_rdma_link_reap_later(struct smc_rdma_link *link);	/* under smc_rdma.lock */
void smc_rdma_link_fail(struct smc_rdma_link *link, const char *why);
/* Disconnected, or its QP flushed: ends unused (refs 1: the table's only), else fails. */
void smc_rdma_link_disconnected(struct smc_rdma_link *link);
void smc_rdma_dev_fail_links(struct rdma_dev *dev, const char *why);
/* The poller's (struct smc_rdma_poller_ops). */
int smc_rdma_on_idle(void);
void smc_rdma_on_async_events(struct rdma_dev *dev);
void smc_rdma_on_cq_events(struct rdma_dev *dev);
void smc_rdma_on_rearm(void);
void smc_rdma_on_reap(struct rdma_dev *unused);

#endif
