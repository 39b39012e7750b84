/*
 * smc_rdma_link.c - RDMA devices, buffer pools, listeners, links and the
 * poller thread (smc_rdma_link.h).
 *
 * Establishing a link (PROTOCOL.md, section 9 has the whole exchange):
 * the side that needs one and has none (the CLC server, before its Accept)
 * resolves the peer's address and instance port through librdmacm, on an
 * event channel of its own, and connects; both sides put a hello in the
 * private data of connect and accept: magic, their instance, their QP
 * number (iWARP carries no QP number of its own).  Once established the id
 * moves to the poller's event channel, where the peer's listener ids live
 * too.  The other side's poller accepts.  A link that is up stays in the
 * table, idle or not, until it fails.
 *
 * Why a thread (and not the completion channel as each connection's
 * wake_fd): one CQ serves every connection of a link, so its channel says
 * "something for someone"; each connection's waiters need their own
 * wake-up, and someone must keep reposting receive buffers, accept links
 * and notice rdma_cm disconnects and fatal async events even while the
 * application sleeps in its own epoll_wait.  The thread sleeps in epoll
 * on the rdma_cm channel, each device's async fd and completion channel,
 * and an eventfd for links to free.  It costs one thread hop on a wake-up
 * that sleeps; a waiter that spins polls the CQ itself (smc_rdma_link_poll)
 * and takes no hop.  Only the thread frees links, so a completion event
 * never names a freed one.
 *
 * Send-queue slots: of the WRs posted, every signal_every-th is signalled;
 * its completion frees every slot up to it.  A post that finds no slot
 * polls the CQ itself (counted: cdc_slots_exhausted).
 *
 * Locks, in order: a link's cq_lock, then its lock or R.lock (never both).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "log.h"
#include "real.h"
#include "smc_ibv.h"
#include "smc_rdma_link.h"
#include "smc_transport.h"

#define HELLO_MAGIC	0x534d4352u	/* "SMCR" */
#define RECV_BUF_LEN	64		/* a CDC is 44 bytes */
#define LISTEN_BACKLOG	128

/* In rdma_connect's and rdma_accept's private data, big-endian. */
struct hello {
	uint32_t magic;
	uint32_t qpn;
	uint16_t instance;
	uint16_t reserved;
} __attribute__((packed));

/* What an rdma_cm id's context or an epoll entry points to starts with its kind. */
enum kind { K_LISTENER, K_LINK, K_CM, K_CTL, K_ASYNC, K_CQ };

struct poll_src {
	enum kind kind;
	struct rdma_dev *dev;
};

struct rdma_dev {
	struct ibv_context *verbs;
	struct ibv_pd *pd;
	struct ibv_comp_channel *chan;
	struct poll_src async_src, cq_src;
	struct smc_rdma_buf *pool[2][SMC_RMB_MAX_CLASS_R + 1];	/* [remote writable] */
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
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct sockaddr_storage peer;		/* its address (port 0) */
	uint16_t peer_instance;
	struct smc_rdma_link_info info;
	_Atomic int state;			/* enum link_state; set under R.lock */
	unsigned int refs;			/* under R.lock: the table's, each endpoint's */
	pthread_mutex_t lock;			/* eps, the send queue */
	struct smc_rdma_endpoint *eps;
	uint64_t posted;
	_Atomic uint64_t completed;		/* posted count of the last signalled WR done */
	unsigned int send_slots, signal_every, recv_slots;
	pthread_mutex_t cq_lock;		/* one poller of the CQ at a time */
	uint8_t *recv_buf;
	struct ibv_mr *recv_mr;
	struct smc_rdma_link *next;		/* in R.links, then R.reap */
};

static struct {
	pthread_mutex_t lock;			/* all below but the atomics */
	pthread_cond_t changed;			/* a link came up or died */
	struct rdma_event_channel *cm;		/* the poller's */
	int epfd, ctl_fd;
	struct rdma_dev *devs;
	struct listener *listeners;
	struct smc_rdma_link *links;		/* connecting or up */
	struct smc_rdma_link *reap;		/* dead and unreferenced */
	unsigned int send_slots, recv_slots;
	struct smc_rdma_stats stats;
	_Atomic uint64_t slots_exhausted, unknown_token;
} R = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.changed = PTHREAD_COND_INITIALIZER,
	.send_slots = 256,
	.recv_slots = 256,
};

static struct poll_src cm_src = { .kind = K_CM }, ctl_src = { .kind = K_CTL };
static pthread_once_t start_once = PTHREAD_ONCE_INIT;
static int start_err;

void smc_rdma_set_slots(unsigned int send_slots, unsigned int recv_slots)
{
	pthread_mutex_lock(&R.lock);
	if (send_slots)
		R.send_slots = send_slots;
	if (recv_slots)
		R.recv_slots = recv_slots;
	pthread_mutex_unlock(&R.lock);
}

/* ---- addresses ---- */

static socklen_t addr_len(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

/* sa with port (host order) into *out. */
static void addr_with_port(const struct sockaddr *sa, uint16_t port, struct sockaddr_storage *out)
{
	memset(out, 0, sizeof(*out));
	memcpy(out, sa, addr_len(sa));
	if (sa->sa_family == AF_INET6)
		((struct sockaddr_in6 *)out)->sin6_port = htons(port);
	else
		((struct sockaddr_in *)out)->sin_port = htons(port);
}

static bool same_ip(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			       &((const struct sockaddr_in6 *)b)->sin6_addr, 16);
	return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
	       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
}

/* The MAC of the interface holding the local address sa (zeros if none). */
static void mac_of(const struct sockaddr *sa, uint8_t mac[6])
{
	struct ifaddrs *all, *a, *p;

	memset(mac, 0, 6);
	if (getifaddrs(&all))
		return;
	for (a = all; a; a = a->ifa_next) {
		if (!a->ifa_addr || !same_ip(a->ifa_addr, sa))
			continue;
		for (p = all; p; p = p->ifa_next) {
			const struct sockaddr_ll *ll = (const void *)p->ifa_addr;

			if (ll && ll->sll_family == AF_PACKET && !strcmp(p->ifa_name, a->ifa_name) &&
			    ll->sll_halen == 6)
				memcpy(mac, ll->sll_addr, 6);
		}
		break;
	}
	freeifaddrs(all);
}

/* ---- devices and buffers ---- */

static int nonblocking(int fd)
{
	int fl = REAL(fcntl)(fd, F_GETFL);

	return fl < 0 ? -errno : REAL(fcntl)(fd, F_SETFL, fl | O_NONBLOCK) ? -errno : 0;
}

static int watch(int fd, struct poll_src *src)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = src };

	return REAL(epoll_ctl)(R.epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

/* Under R.lock: our state for the device behind verbs, made on first use. */
static struct rdma_dev *dev_get(struct ibv_context *verbs)
{
	struct rdma_dev *dev;

	for (dev = R.devs; dev; dev = dev->next)
		if (dev->verbs == verbs)
			return dev;
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return NULL;
	dev->verbs = verbs;
	dev->async_src = (struct poll_src){ .kind = K_ASYNC, .dev = dev };
	dev->cq_src = (struct poll_src){ .kind = K_CQ, .dev = dev };
	dev->pd = IBV(ibv_alloc_pd)(verbs);
	dev->chan = dev->pd ? IBV(ibv_create_comp_channel)(verbs) : NULL;
	if (!dev->chan || nonblocking(dev->chan->fd) || nonblocking(verbs->async_fd) ||
	    watch(verbs->async_fd, &dev->async_src) || watch(dev->chan->fd, &dev->cq_src)) {
		/* what was made stays: devices live as long as the process */
		smcr_log(SMCR_LOG_ERROR, "rdma: cannot set up device %s", verbs->device->name);
		return NULL;
	}
	dev->next = R.devs;
	R.devs = dev;
	return dev;
}

/*
 * RMBs are remote-writable; staging buffers (our side of RDMA WRITEs) are
 * not, and come from a pool of their own so that no rkey ever sent lets a
 * peer write into what we send.
 */
static struct smc_rdma_buf *buf_get(struct rdma_dev *dev, unsigned int size_class, bool remote)
{
	struct smc_rdma_buf *buf;
	int access = IBV_ACCESS_LOCAL_WRITE | (remote ? IBV_ACCESS_REMOTE_WRITE : 0);
	struct ibv_mr *mr;
	void *mem;

	pthread_mutex_lock(&R.lock);
	buf = dev->pool[remote][size_class];
	if (buf) {
		dev->pool[remote][size_class] = buf->next;
		R.stats.bufs_in_use++;
	}
	pthread_mutex_unlock(&R.lock);
	if (buf)
		return buf;
	buf = calloc(1, sizeof(*buf));
	mem = mmap(NULL, smc_rmb_size(size_class), PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	mr = buf && mem != MAP_FAILED ? IBV(ibv_reg_mr)(dev->pd, mem, smc_rmb_size(size_class), access)
				      : NULL;
	if (!mr) {
		if (mem != MAP_FAILED)
			munmap(mem, smc_rmb_size(size_class));
		free(buf);
		return NULL;
	}
	*buf = (struct smc_rdma_buf){ .mem = mem, .size = smc_rmb_size(size_class),
				      .lkey = mr->lkey, .rkey = remote ? mr->rkey : 0, .dev = dev,
				      .remote = remote, .size_class = (uint8_t)size_class };
	pthread_mutex_lock(&R.lock);
	R.stats.bufs_in_use++;
	R.stats.bytes_registered += buf->size;
	pthread_mutex_unlock(&R.lock);
	return buf;
}

struct smc_rdma_buf *smc_rdma_rmb_get(struct rdma_dev *dev, unsigned int size_class)
{
	return buf_get(dev, size_class, true);
}

struct smc_rdma_buf *smc_rdma_staging_get(struct rdma_dev *dev, unsigned int size_class)
{
	return buf_get(dev, size_class, false);
}

void smc_rdma_buf_put(struct smc_rdma_buf *buf)
{
	struct rdma_dev *dev = buf->dev;

	pthread_mutex_lock(&R.lock);
	buf->next = dev->pool[buf->remote][buf->size_class];
	dev->pool[buf->remote][buf->size_class] = buf;
	R.stats.bufs_in_use--;
	pthread_mutex_unlock(&R.lock);
}

/* ---- links ---- */

/* Frees what link_new made, and the rdma_cm id if destroy_id. */
static void link_free(struct smc_rdma_link *link, bool destroy_id)
{
	if (link->qp)
		IBV(rdma_destroy_qp)(link->id);
	if (link->cq)
		IBV(ibv_destroy_cq)(link->cq);
	if (link->recv_mr)
		IBV(ibv_dereg_mr)(link->recv_mr);
	free(link->recv_buf);
	if (destroy_id)
		IBV(rdma_destroy_id)(link->id);
	pthread_mutex_destroy(&link->lock);
	pthread_mutex_destroy(&link->cq_lock);
	free(link);
}

static int post_recv(struct smc_rdma_link *link, unsigned int slot)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(link->recv_buf + (size_t)slot * RECV_BUF_LEN),
		.length = RECV_BUF_LEN,
		.lkey = link->recv_mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sge, .num_sge = 1 }, *bad;

	return -ibv_post_recv(link->qp, &wr, &bad);
}

/* A link on id (address and route resolved, or a connect request): CQ, QP, receives. */
static int link_new(struct rdma_cm_id *id, struct smc_rdma_link **out)
{
	struct smc_rdma_link *link = calloc(1, sizeof(*link));
	struct ibv_qp_init_attr attr = { .qp_type = IBV_QPT_RC };
	int rc = -ENOMEM;

	if (!link)
		return -ENOMEM;
	link->kind = K_LINK;
	link->id = id;
	pthread_mutex_init(&link->lock, NULL);
	pthread_mutex_init(&link->cq_lock, NULL);
	pthread_mutex_lock(&R.lock);
	link->dev = dev_get(id->verbs);
	link->send_slots = R.send_slots;
	link->recv_slots = R.recv_slots;
	pthread_mutex_unlock(&R.lock);
	link->signal_every = link->send_slots / 4 ? link->send_slots / 4 : 1;
	if (!link->dev)
		goto fail;
	link->cq = IBV(ibv_create_cq)(id->verbs, (int)(link->send_slots + link->recv_slots), link,
				      link->dev->chan, 0);
	if (!link->cq)
		goto fail_errno;
	attr.qp_context = link;
	attr.send_cq = attr.recv_cq = link->cq;
	attr.cap.max_send_wr = link->send_slots;
	attr.cap.max_recv_wr = link->recv_slots;
	attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
	attr.cap.max_inline_data = RECV_BUF_LEN;
	if (IBV(rdma_create_qp)(id, link->dev->pd, &attr))
		goto fail_errno;
	link->qp = id->qp;
	link->info.qpn = link->qp->qp_num;
	link->info.dev = link->dev;
	/* CDCs always go inline: no registered send buffer, no completion to wait for */
	link->info.inline_max = attr.cap.max_inline_data;
	rc = -EOPNOTSUPP;
	if (link->info.inline_max < SMC_CDC_MSG_LEN)
		goto fail;
	rc = -ENOMEM;
	link->recv_buf = calloc(link->recv_slots, RECV_BUF_LEN);
	if (!link->recv_buf)
		goto fail;
	link->recv_mr = IBV(ibv_reg_mr)(link->dev->pd, link->recv_buf,
					(size_t)link->recv_slots * RECV_BUF_LEN, IBV_ACCESS_LOCAL_WRITE);
	if (!link->recv_mr)
		goto fail_errno;
	for (unsigned int i = 0; i < link->recv_slots; i++)
		if ((rc = post_recv(link, i)) != 0)
			goto fail;
	id->context = link;
	*out = link;
	return 0;
fail_errno:
	rc = errno ? -errno : -ENOMEM;
fail:
	link_free(link, false);		/* the caller destroys the id */
	return rc;
}

/* Under R.lock: the link was established (passive side: by the poller). */
static void link_up(struct smc_rdma_link *link)
{
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr init;

	/* the first PSN, as RFC 7609's Accept/Confirm carry it: nothing was sent yet */
	link->info.mtu = IBV_MTU_1024;
	if (IBV(ibv_query_qp)(link->qp, &attr, IBV_QP_SQ_PSN | IBV_QP_PATH_MTU, &init) == 0) {
		link->info.psn = attr.sq_psn & 0xffffff;
		if (attr.path_mtu)
			link->info.mtu = (uint8_t)attr.path_mtu;
	}
	ibv_req_notify_cq(link->cq, 1);
	atomic_store(&link->state, LINK_UP);
	R.stats.links_up++;
	pthread_cond_broadcast(&R.changed);
}

static void link_reap_later(struct smc_rdma_link *link)
{
	uint64_t one = 1;

	link->next = R.reap;
	R.reap = link;
	if (REAL(write)(R.ctl_fd, &one, sizeof(one)) < 0)
		smcr_log(SMCR_LOG_WARN, "rdma: cannot wake the poller to free a link");
}

void smc_rdma_link_put(struct smc_rdma_link *link)
{
	pthread_mutex_lock(&R.lock);
	if (--link->refs == 0)
		link_reap_later(link);
	pthread_mutex_unlock(&R.lock);
}

/* The link is unusable: every endpoint is told, the table forgets it, the QP goes down. */
static void link_fail(struct smc_rdma_link *link, const char *why)
{
	struct smc_rdma_link **pp;

	pthread_mutex_lock(&R.lock);
	if (atomic_load(&link->state) == LINK_DEAD) {
		pthread_mutex_unlock(&R.lock);
		return;
	}
	atomic_store(&link->state, LINK_DEAD);
	for (pp = &R.links; *pp; pp = &(*pp)->next)
		if (*pp == link) {
			*pp = link->next;
			break;
		}
	R.stats.links_failed++;
	pthread_cond_broadcast(&R.changed);
	pthread_mutex_unlock(&R.lock);
	smcr_log(SMCR_LOG_INFO, "rdma: link qp %u down: %s", link->info.qpn, why);
	pthread_mutex_lock(&link->lock);
	for (struct smc_rdma_endpoint *ep = link->eps; ep; ep = ep->next)
		smc_rdma_link_down(ep);
	pthread_mutex_unlock(&link->lock);
	IBV(rdma_disconnect)(link->id);
	smc_rdma_link_put(link);	/* the table's */
}

bool smc_rdma_link_dead(const struct smc_rdma_link *link)
{
	return atomic_load(&link->state) == LINK_DEAD;
}

void smc_rdma_link_info(const struct smc_rdma_link *link, struct smc_rdma_link_info *info)
{
	*info = link->info;
}

int smc_rdma_link_bind(struct smc_rdma_link *link, struct smc_rdma_endpoint *ep)
{
	int rc = 0;

	pthread_mutex_lock(&link->lock);
	for (struct smc_rdma_endpoint *e = link->eps; e; e = e->next)
		if (e->token == ep->token)
			rc = -EEXIST;
	if (!rc) {
		ep->next = link->eps;
		link->eps = ep;
	}
	pthread_mutex_unlock(&link->lock);
	if (!rc) {
		pthread_mutex_lock(&R.lock);
		R.stats.endpoints++;
		pthread_mutex_unlock(&R.lock);
	}
	return rc;
}

void smc_rdma_link_unbind(struct smc_rdma_link *link, struct smc_rdma_endpoint *ep)
{
	pthread_mutex_lock(&link->lock);
	for (struct smc_rdma_endpoint **pp = &link->eps; *pp; pp = &(*pp)->next)
		if (*pp == ep) {
			*pp = ep->next;
			break;
		}
	pthread_mutex_unlock(&link->lock);
	pthread_mutex_lock(&R.lock);
	R.stats.endpoints--;
	pthread_mutex_unlock(&R.lock);
}

/* ---- the data path ---- */

/* A received CDC, to the endpoint whose token it carries. */
static void deliver(struct smc_rdma_link *link, const uint8_t *msg, uint32_t len)
{
	struct smc_cdc cdc;
	struct smc_rdma_endpoint *ep;

	if (smc_cdc_decode(msg, len, &cdc)) {
		link_fail(link, "malformed CDC");
		return;
	}
	pthread_mutex_lock(&link->lock);
	for (ep = link->eps; ep && ep->token != cdc.token; ep = ep->next)
		;
	if (ep)
		smc_rdma_deliver(ep, msg);
	else
		atomic_fetch_add(&R.unknown_token, 1);
	pthread_mutex_unlock(&link->lock);
}

/* Under cq_lock: takes every completion there is. */
static void link_poll_locked(struct smc_rdma_link *link)
{
	struct ibv_wc wc[16];
	int n;

	while ((n = ibv_poll_cq(link->cq, 16, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				link_fail(link, IBV(ibv_wc_status_str)(wc[i].status));
				continue;
			}
			if (wc[i].opcode == IBV_WC_RECV) {
				uint32_t slot = (uint32_t)wc[i].wr_id;

				deliver(link, link->recv_buf + (size_t)slot * RECV_BUF_LEN,
					wc[i].byte_len);
				if (!smc_rdma_link_dead(link) && post_recv(link, slot))
					link_fail(link, "cannot repost a receive");
			} else {
				atomic_store(&link->completed, wc[i].wr_id);
			}
		}
	}
	if (n < 0)
		link_fail(link, "polling the CQ failed");
}

void smc_rdma_link_poll(struct smc_rdma_link *link)
{
	if (pthread_mutex_trylock(&link->cq_lock) == 0) {
		link_poll_locked(link);
		pthread_mutex_unlock(&link->cq_lock);
	}
}

static int post(struct smc_rdma_link *link, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	bool waited = false;
	int rc;

	pthread_mutex_lock(&link->lock);
	while (!smc_rdma_link_dead(link) &&
	       link->posted - atomic_load(&link->completed) >= link->send_slots) {
		pthread_mutex_unlock(&link->lock);
		if (!waited)
			atomic_fetch_add(&R.slots_exhausted, 1);
		waited = true;
		smc_rdma_link_poll(link);
		sched_yield();
		pthread_mutex_lock(&link->lock);
	}
	if (smc_rdma_link_dead(link)) {
		pthread_mutex_unlock(&link->lock);
		return -ECONNRESET;
	}
	if (++link->posted % link->signal_every == 0) {
		wr->send_flags |= IBV_SEND_SIGNALED;
		wr->wr_id = link->posted;
	}
	rc = ibv_post_send(link->qp, wr, &bad);
	if (rc)
		link->posted--;
	pthread_mutex_unlock(&link->lock);
	if (rc) {
		link_fail(link, "ibv_post_send failed");
		return -ECONNRESET;
	}
	return 0;
}

int smc_rdma_post_write(struct smc_rdma_link *link, const void *src, uint32_t len, uint32_t lkey,
			uint64_t remote_addr, uint32_t rkey)
{
	struct ibv_sge sge = { .addr = (uintptr_t)src, .length = len, .lkey = lkey };
	struct ibv_send_wr wr = {
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.send_flags = len <= link->info.inline_max ? IBV_SEND_INLINE : 0,
		.wr.rdma = { .remote_addr = remote_addr, .rkey = rkey },
	};

	return post(link, &wr);
}

int smc_rdma_post_cdc(struct smc_rdma_link *link, const uint8_t msg[SMC_CDC_MSG_LEN],
		      bool solicited)
{
	struct ibv_sge sge = { .addr = (uintptr_t)msg, .length = SMC_CDC_MSG_LEN };
	struct ibv_send_wr wr = {
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_INLINE | (solicited ? IBV_SEND_SOLICITED : 0),
	};

	return post(link, &wr);
}

/* ---- the poller ---- */

/* A connect request on one of our listeners: a peer process links to us. */
static int accept_link(struct rdma_cm_event *e)
{
	const struct hello *h = e->param.conn.private_data;
	struct hello reply;
	struct rdma_conn_param param = { .rnr_retry_count = 7, .private_data = &reply,
					  .private_data_len = sizeof(reply) };
	struct smc_rdma_link *link;
	struct listener *l = e->listen_id->context;
	int rc;

	if (!h || e->param.conn.private_data_len < sizeof(*h) || ntohl(h->magic) != HELLO_MAGIC)
		return -EPROTO;
	rc = link_new(e->id, &link);
	if (rc)
		return rc;
	addr_with_port(rdma_get_peer_addr(e->id), 0, &link->peer);
	link->peer_instance = ntohs(h->instance);
	link->info.peer_qpn = ntohl(h->qpn);
	reply = (struct hello){ .magic = htonl(HELLO_MAGIC), .qpn = htonl(link->info.qpn),
				.instance = htons(l->local.instance) };
	if (IBV(rdma_accept)(e->id, &param)) {
		rc = -errno;
		e->id->context = NULL;
		link_free(link, false);
		return rc;
	}
	pthread_mutex_lock(&R.lock);
	R.stats.links++;
	link->refs = 1;
	link->next = R.links;
	R.links = link;
	pthread_mutex_unlock(&R.lock);
	return 0;
}

/* Every link on dev fails (the device is gone or broken). */
static void fail_dev_links(struct rdma_dev *dev, const char *why)
{
	struct smc_rdma_link *link;

	do {
		pthread_mutex_lock(&R.lock);
		for (link = R.links; link && link->dev != dev; link = link->next)
			;
		pthread_mutex_unlock(&R.lock);
		if (link)
			link_fail(link, why);
	} while (link);
}

static void on_cm_events(void)
{
	struct rdma_cm_event *e;

	while (IBV(rdma_get_cm_event)(R.cm, &e) == 0) {
		enum kind *ctx = e->id->context;
		struct rdma_cm_id *refused = NULL;

		switch (e->event) {
		case RDMA_CM_EVENT_CONNECT_REQUEST:
			if (accept_link(e)) {
				IBV(rdma_reject)(e->id, NULL, 0);
				refused = e->id;
			}
			break;
		case RDMA_CM_EVENT_ESTABLISHED:
			if (ctx && *ctx == K_LINK) {
				pthread_mutex_lock(&R.lock);
				if (atomic_load(&((struct smc_rdma_link *)ctx)->state) == LINK_CONNECTING)
					link_up((struct smc_rdma_link *)ctx);
				pthread_mutex_unlock(&R.lock);
			}
			break;
		case RDMA_CM_EVENT_DEVICE_REMOVAL: {
			struct rdma_dev *gone = NULL;

			pthread_mutex_lock(&R.lock);
			for (struct rdma_dev *d = R.devs; d; d = d->next)
				if (d->verbs == e->id->verbs)
					gone = d;
			pthread_mutex_unlock(&R.lock);
			if (gone)
				fail_dev_links(gone, "device removed");
			break;
		}
		default:	/* disconnected, rejected, unreachable, errors */
			if (ctx && *ctx == K_LINK)
				link_fail((struct smc_rdma_link *)ctx, IBV(rdma_event_str)(e->event));
			break;
		}
		IBV(rdma_ack_cm_event)(e);
		if (refused)
			IBV(rdma_destroy_id)(refused);
	}
}

static void on_async_events(struct rdma_dev *dev)
{
	struct ibv_async_event e;

	while (IBV(ibv_get_async_event)(dev->verbs, &e) == 0) {
		switch (e.event_type) {
		case IBV_EVENT_QP_FATAL:
		case IBV_EVENT_QP_REQ_ERR:
		case IBV_EVENT_QP_ACCESS_ERR:
			link_fail(e.element.qp->qp_context, "QP error");
			break;
		case IBV_EVENT_CQ_ERR:
			link_fail(e.element.cq->cq_context, "CQ error");
			break;
		case IBV_EVENT_DEVICE_FATAL:
			fail_dev_links(dev, "device fatal error");
			break;
		default:
			break;
		}
		IBV(ibv_ack_async_event)(&e);
	}
}

static void on_cq_events(struct rdma_dev *dev)
{
	struct ibv_cq *cq;
	void *ctx;

	while (IBV(ibv_get_cq_event)(dev->chan, &cq, &ctx) == 0) {
		struct smc_rdma_link *link = ctx;

		IBV(ibv_ack_cq_events)(cq, 1);
		/* armed again before the poll: a completion after it raises a new event */
		ibv_req_notify_cq(cq, 1);
		pthread_mutex_lock(&link->cq_lock);
		link_poll_locked(link);
		pthread_mutex_unlock(&link->cq_lock);
	}
}

static void on_reap(void)
{
	struct smc_rdma_link *list, *next;
	uint64_t count;

	if (REAL(read)(R.ctl_fd, &count, sizeof(count)) < 0 && errno != EAGAIN)
		smcr_log(SMCR_LOG_WARN, "rdma: reading the poller's eventfd failed");
	pthread_mutex_lock(&R.lock);
	list = R.reap;
	R.reap = NULL;
	pthread_mutex_unlock(&R.lock);
	for (; list; list = next) {
		next = list->next;
		link_free(list, true);
		pthread_mutex_lock(&R.lock);
		R.stats.links--;
		pthread_mutex_unlock(&R.lock);
	}
}

static void *poller(void *unused)
{
	struct epoll_event ev[16];

	(void)unused;
	for (;;) {
		int n = REAL(epoll_wait)(R.epfd, ev, 16, -1);

		for (int i = 0; i < n; i++) {
			struct poll_src *src = ev[i].data.ptr;

			switch (src->kind) {
			case K_CM:
				on_cm_events();
				break;
			case K_ASYNC:
				on_async_events(src->dev);
				break;
			case K_CQ:
				on_cq_events(src->dev);
				break;
			default:
				on_reap();
				break;
			}
		}
	}
	return NULL;
}

static void start(void)
{
	const char *why;
	sigset_t all, old;
	pthread_t thread;

	start_err = smc_ibv_load(&why);
	if (start_err) {
		smcr_log(SMCR_LOG_INFO, "rdma: %s", why);
		return;
	}
	R.cm = IBV(rdma_create_event_channel)();
	R.epfd = epoll_create1(EPOLL_CLOEXEC);
	R.ctl_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (!R.cm || R.epfd < 0 || R.ctl_fd < 0 || nonblocking(R.cm->fd) || watch(R.cm->fd, &cm_src) ||
	    watch(R.ctl_fd, &ctl_src)) {
		smcr_log(SMCR_LOG_INFO, "rdma: no rdma_cm (%s): no RDMA device", strerror(errno));
		start_err = -ENODEV;
		return;
	}
	/* the application's signals are not for this thread */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	start_err = -pthread_create(&thread, NULL, poller, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!start_err)
		pthread_detach(thread);
}

/* ---- listeners and link lookup ---- */

int smc_rdma_listen(const struct sockaddr *local, struct smc_rdma_local *out)
{
	struct sockaddr_storage any;
	struct listener *l;
	int rc = 0;

	pthread_once(&start_once, start);
	if (start_err)
		return start_err;
	pthread_mutex_lock(&R.lock);
	for (l = R.listeners; l && !same_ip((struct sockaddr *)&l->addr, local); l = l->next)
		;
	if (l)
		goto found;
	l = calloc(1, sizeof(*l));
	if (!l) {
		rc = -ENOMEM;
		goto out;
	}
	l->kind = K_LISTENER;
	addr_with_port(local, 0, &l->addr);
	any = l->addr;
	if (IBV(rdma_create_id)(R.cm, &l->id, l, RDMA_PS_TCP)) {
		rc = -errno;
		free(l);
		goto out;
	}
	/* an address no RDMA device serves: ENODEV, EADDRNOTAVAIL or no verbs */
	if (IBV(rdma_bind_addr)(l->id, (struct sockaddr *)&any) || !l->id->verbs ||
	    !(l->local.dev = dev_get(l->id->verbs)) || IBV(rdma_listen)(l->id, LISTEN_BACKLOG)) {
		IBV(rdma_destroy_id)(l->id);
		free(l);
		rc = -ENODEV;
		goto out;
	}
	l->local.instance = ntohs(IBV(rdma_get_src_port)(l->id));
	l->local.lcl.peer_id[0] = (uint8_t)(l->local.instance >> 8);
	l->local.lcl.peer_id[1] = (uint8_t)l->local.instance;
	mac_of(local, l->local.lcl.mac);
	memcpy(l->local.lcl.peer_id + 2, l->local.lcl.mac, 6);
	memcpy(l->local.lcl.gid, &l->id->route.addr.addr.ibaddr.sgid, 16);
	l->next = R.listeners;
	R.listeners = l;
found:
	*out = l->local;
out:
	pthread_mutex_unlock(&R.lock);
	return rc;
}

/* The next rdma_cm event on ch, which must be want, within timeout_ms; copies its hello. */
static int expect_event(struct rdma_event_channel *ch, enum rdma_cm_event_type want,
			int timeout_ms, struct hello *h)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *e;
	int rc;

	rc = REAL(poll)(&p, 1, timeout_ms);
	if (rc <= 0)
		return rc ? -errno : -ETIMEDOUT;
	if (IBV(rdma_get_cm_event)(ch, &e))
		return -errno;
	rc = e->event == want ? 0 : e->status ? -abs(e->status) : -ECONNREFUSED;
	if (!rc && h) {
		if (e->param.conn.private_data_len >= sizeof(*h) && e->param.conn.private_data)
			memcpy(h, e->param.conn.private_data, sizeof(*h));
		if (ntohl(h->magic) != HELLO_MAGIC)
			rc = -EPROTO;
	}
	if (rc)
		smcr_log(SMCR_LOG_INFO, "rdma: connecting a link: %s instead of %s",
			 IBV(rdma_event_str)(e->event), IBV(rdma_event_str)(want));
	IBV(rdma_ack_cm_event)(e);
	return rc;
}

/* Connects a new link from local to the process listening at peer:instance. */
static int link_connect(const struct sockaddr *local, const struct sockaddr *peer,
			uint16_t instance, int timeout_ms, struct smc_rdma_link **out)
{
	struct smc_rdma_local me;
	struct sockaddr_storage src, dst;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id = NULL;
	struct smc_rdma_link *link = NULL;
	struct hello hello, peer_hello = { 0 };
	struct rdma_conn_param param = { .retry_count = 7, .rnr_retry_count = 7,
					  .private_data = &hello, .private_data_len = sizeof(hello) };
	int rc = smc_rdma_listen(local, &me);

	if (rc)
		return rc;
	addr_with_port(local, 0, &src);
	addr_with_port(peer, instance, &dst);
	ch = IBV(rdma_create_event_channel)();
	if (!ch)
		return -ENODEV;
	if (IBV(rdma_create_id)(ch, &id, NULL, RDMA_PS_TCP)) {
		rc = -errno;
		id = NULL;
		goto out;
	}
	if ((rc = IBV(rdma_resolve_addr)(id, (struct sockaddr *)&src, (struct sockaddr *)&dst,
					 timeout_ms) ? -errno : 0) ||
	    (rc = expect_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED, timeout_ms, NULL)) ||
	    (rc = IBV(rdma_resolve_route)(id, timeout_ms) ? -errno : 0) ||
	    (rc = expect_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, timeout_ms, NULL)) ||
	    (rc = link_new(id, &link)))
		goto out;
	hello = (struct hello){ .magic = htonl(HELLO_MAGIC), .qpn = htonl(link->info.qpn),
				.instance = htons(me.instance) };
	if ((rc = IBV(rdma_connect)(id, &param) ? -errno : 0) ||
	    (rc = expect_event(ch, RDMA_CM_EVENT_ESTABLISHED, timeout_ms, &peer_hello)) ||
	    (rc = IBV(rdma_migrate_id)(id, R.cm) ? -errno : 0))
		goto out;
	link->peer_instance = instance;
	link->info.peer_qpn = ntohl(peer_hello.qpn);
	addr_with_port(peer, 0, &link->peer);
	pthread_mutex_lock(&R.lock);
	link_up(link);
	link->refs = 2;		/* the table's and the caller's */
	link->next = R.links;
	R.links = link;
	R.stats.links++;
	pthread_mutex_unlock(&R.lock);
	*out = link;
	link = NULL;
	id = NULL;
out:
	if (link)
		link_free(link, true);
	else if (id)
		IBV(rdma_destroy_id)(id);
	IBV(rdma_destroy_event_channel)(ch);
	return rc;
}

int smc_rdma_link_get(const struct sockaddr *local, const struct sockaddr *peer,
		      const struct smc_clc_local *peer_lcl, int timeout_ms,
		      struct smc_rdma_link **out, bool *fresh)
{
	uint16_t instance = (uint16_t)(peer_lcl->peer_id[0] << 8 | peer_lcl->peer_id[1]);
	struct smc_rdma_link *link;

	pthread_mutex_lock(&R.lock);
	for (link = R.links; link; link = link->next)
		if (atomic_load(&link->state) == LINK_UP && link->peer_instance == instance &&
		    same_ip((struct sockaddr *)&link->peer, peer))
			break;
	if (link)
		link->refs++;
	pthread_mutex_unlock(&R.lock);
	*fresh = !link;
	if (link) {
		*out = link;
		return 0;
	}
	return link_connect(local, peer, instance, timeout_ms, out);
}

int smc_rdma_link_find(const struct sockaddr *peer, uint32_t peer_qpn, int timeout_ms,
		       struct smc_rdma_link **out)
{
	struct timespec deadline;
	struct smc_rdma_link *link;
	int rc = -ENOLINK;

	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += timeout_ms / 1000;
	deadline.tv_nsec += timeout_ms % 1000 * 1000000L;
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&R.lock);
	for (;;) {
		for (link = R.links; link; link = link->next)
			if (link->info.peer_qpn == peer_qpn && same_ip((struct sockaddr *)&link->peer, peer))
				break;
		if (!link)
			break;
		if (atomic_load(&link->state) == LINK_UP) {
			link->refs++;
			*out = link;
			rc = 0;
			break;
		}
		/* the peer saw it established first: our poller is just behind */
		if (pthread_cond_timedwait(&R.changed, &R.lock, &deadline) == ETIMEDOUT) {
			rc = -ETIMEDOUT;
			break;
		}
	}
	pthread_mutex_unlock(&R.lock);
	return rc;
}

void smc_rdma_get_stats(struct smc_rdma_stats *out)
{
	pthread_mutex_lock(&R.lock);
	*out = R.stats;
	pthread_mutex_unlock(&R.lock);
	out->cdc_slots_exhausted = atomic_load(&R.slots_exhausted);
	out->cdc_unknown_token = atomic_load(&R.unknown_token);
}
