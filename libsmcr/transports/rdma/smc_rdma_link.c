/*
 * smc_rdma_link.c - a link's queue pair: set up, posted to, polled, failed
 * and freed (smc_rdma_link.h).
 *
 * Each link has a protection domain of its own, which holds its QP, its
 * receive buffers and the buffers of the connections bound to it
 * (smc_rdma_dev.c registers them there): its peer can reach no memory
 * registered for another link, whatever keys it learnt or guesses.  The
 * PD goes when the link is freed, after every connection has given its
 * buffers back (each holds a reference until then), and with them the RMBs
 * retired on it (smc_rdma_link_retire).
 *
 * Send-queue slots: of the WRs posted, every signal_every-th is signalled;
 * its completion frees every slot up to it.  A post that finds no slot
 * polls the CQ itself (counted: cdc_slots_exhausted).
 *
 * A link ends by failing (smc_rdma_link_fail: its endpoints are told) or,
 * with no endpoint and no one about to bind one (refs 1: the table's),
 * idle: the poller takes it out of the table under smc_rdma.lock, where
 * smc_rdma_link_get and smc_rdma_link_find take their references, so a
 * new connection either got it before (and it is not idle) or finds
 * another.  The peer's side of an idle link sees a disconnect with no
 * endpoint of its own either and ends it the same way; with one, it fails.
 *
 * Every entry point a connection calls first checks that the link is this
 * process's (smc_rdma_foreign): in a forked child, the parent's are left
 * alone, locks included.
 *
 * Locks, in order: a link's cq_lock, then its lock or smc_rdma.lock (never
 * both).  The poller thread only ever tries cq_lock (smc_rdma_link_poll),
 * so that a thread that may not wait in futex can take it too
 * (smc_rdma_link_drain).
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "filter.h"
#include "log.h"
#include "real.h"
#include "smc_rdma_priv.h"
#include "spin.h"
#include "sys.h"

#define RECV_BUF_LEN	64		/* a CDC is 44 bytes */

/*
 * Takes off smc_rdma.retired, and puts back in their pools, the RMBs that
 * link retired (those of token, if not NULL) or, with link NULL, those
 * whose time is up at now; *next (if not NULL) becomes the earliest time
 * of those left, if earlier.
 */
static void put_retired(const struct smc_rdma_link *link, const uint32_t *token, uint64_t now,
			uint64_t *next)
{
	struct smc_rdma_buf **pp, *buf, *done = NULL;

	pthread_mutex_lock(&smc_rdma.lock);
	for (pp = &smc_rdma.retired; (buf = *pp) != NULL;) {
		if (link ? buf->retired_on == link && (!token || buf->token == *token)
			 : buf->until <= now) {
			*pp = buf->next;
			buf->next = done;
			done = buf;
			continue;
		}
		if (next && buf->until < *next)
			*next = buf->until;
		pp = &buf->next;
	}
	pthread_mutex_unlock(&smc_rdma.lock);
	for (; done; done = buf) {
		buf = done->next;
		smc_rdma_buf_put(done);
	}
}

/* Frees what link_new made, and the rdma_cm id if destroy_id; retired RMBs go back to the pool. */
void smc_rdma_link_free(struct smc_rdma_link *link, bool destroy_id)
{
	if (link->qp)
		IBV(rdma_destroy_qp)(link->id);
	put_retired(link, NULL, 0, NULL);	/* no WRITE comes any more */
	if (link->cq)
		IBV(ibv_destroy_cq)(link->cq);
	if (link->recv_mr)
		IBV(ibv_dereg_mr)(link->recv_mr);
	if (link->pd)
		IBV(ibv_dealloc_pd)(link->pd);
	free(link->recv_buf);
	if (destroy_id)
		IBV(rdma_destroy_id)(link->id);
	pthread_mutex_destroy(&link->lock);
	pthread_mutex_destroy(&link->cq_lock);
	free(link);
}

/* The link failed or was torn down: every endpoint has been told. */
static bool link_dead(const struct smc_rdma_link *link)
{
	return atomic_load(&link->state) == LINK_DEAD;
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
int smc_rdma_link_new(struct rdma_cm_id *id, struct smc_rdma_link **out)
{
	struct smc_rdma_link *link = calloc(1, sizeof(*link));
	struct ibv_qp_init_attr attr = { .qp_type = IBV_QPT_RC };
	const char *why = "device";
	int rc = -ENOMEM;

	if (!link)
		return -ENOMEM;
	link->kind = K_LINK;
	link->id = id;
	link->gen = atomic_load(&smc_rdma.gen);
	pthread_mutex_init(&link->lock, NULL);
	pthread_mutex_init(&link->cq_lock, NULL);
	pthread_mutex_lock(&smc_rdma.lock);
	link->dev = smc_rdma_dev_get(id->verbs);
	link->send_slots = smc_rdma.send_slots;
	link->recv_slots = smc_rdma.recv_slots;
	pthread_mutex_unlock(&smc_rdma.lock);
	link->signal_every = link->send_slots / 4 ? link->send_slots / 4 : 1;
	if (!link->dev)
		goto fail;
	/* our own context, not librdmacm's (smc_rdma_priv.h): rdma_create_qp wants the PD's */
	id->verbs = link->dev->verbs;
	why = "protection domain";
	link->pd = IBV(ibv_alloc_pd)(link->dev->verbs);
	if (!link->pd)
		goto fail_errno;
	why = "completion queue";
	link->cq = IBV(ibv_create_cq)(link->dev->verbs, (int)(link->send_slots + link->recv_slots), link,
				      link->dev->chan, 0);
	if (!link->cq)
		goto fail_errno;
	attr.qp_context = link;
	attr.send_cq = attr.recv_cq = link->cq;
	attr.cap.max_send_wr = link->send_slots;
	attr.cap.max_recv_wr = link->recv_slots;
	attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
	attr.cap.max_inline_data = RECV_BUF_LEN;
	why = "queue pair";
	if (IBV(rdma_create_qp)(id, link->pd, &attr))
		goto fail_errno;
	link->qp = id->qp;
	link->info.qpn = link->qp->qp_num;
	link->info.dev = link->dev;
	/* CDCs always go inline: no registered send buffer, no completion to wait for */
	link->info.inline_max = attr.cap.max_inline_data;
	why = "inline data";
	rc = -EOPNOTSUPP;
	if (link->info.inline_max < SMC_CDC_MSG_LEN)
		goto fail;
	why = "receive buffers";
	rc = -ENOMEM;
	link->recv_buf = calloc(link->recv_slots, RECV_BUF_LEN);
	if (!link->recv_buf)
		goto fail;
	link->recv_mr = IBV(ibv_reg_mr)(link->pd, link->recv_buf,
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
	smcr_log(SMCR_LOG_INFO, "rdma: no link: %s: %s", why, strerror(-rc));
	smc_rdma_link_free(link, false);		/* the caller destroys the id */
	return rc;
}

/* Under smc_rdma.lock: the link was established (passive side: by the poller). */
void smc_rdma_link_up(struct smc_rdma_link *link)
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
	ibv_req_notify_cq(link->cq, !link->dev->iwarp);
	atomic_store(&link->state, LINK_UP);
	link->idle_since = smc_clock_ms();
	pthread_cond_broadcast(&smc_rdma.changed);
}

/* Wakes the poller: a link to free, or one idle from now on. */
static void wake_poller(void)
{
	uint64_t one = 1;

	if (REAL(write)(smcr_sys_kept(&smc_rdma.ctl_fd), &one, sizeof(one)) < 0)
		smcr_log(SMCR_LOG_WARN, "rdma: cannot wake the poller");
}

void smc_rdma_link_reap_later(struct smc_rdma_link *link)
{
	link->next = smc_rdma.reap;
	smc_rdma.reap = link;
	wake_poller();
}

void smc_rdma_link_put(struct smc_rdma_link *link)
{
	if (smc_rdma_foreign(link->gen))
		return;
	pthread_mutex_lock(&smc_rdma.lock);
	if (--link->refs == 0) {
		smc_rdma_link_reap_later(link);
	} else if (link->refs == 1 && atomic_load(&link->state) == LINK_UP && smc_rdma.idle_ms) {
		link->idle_since = smc_clock_ms();
		wake_poller();		/* it may sleep with no time limit */
	}
	pthread_mutex_unlock(&smc_rdma.lock);
}

/* Under smc_rdma.lock: the link goes (LINK_DEAD) and the table forgets it. */
static void unlist(struct smc_rdma_link *link)
{
	atomic_store(&link->state, LINK_DEAD);
	for (struct smc_rdma_link **pp = &smc_rdma.links; *pp; pp = &(*pp)->next)
		if (*pp == link) {
			*pp = link->next;
			break;
		}
	pthread_cond_broadcast(&smc_rdma.changed);
}

/* Unlisted, and unused: the QP goes down, the table's reference with it. */
static void end_idle(struct smc_rdma_link *link, const char *why)
{
	smcr_stat_add(rdma.links_idle, 1);
	smcr_log(SMCR_LOG_INFO, "rdma: link qp %u ended: %s", link->info.qpn, why);
	IBV(rdma_disconnect)(link->id);
	smc_rdma_link_put(link);
}

/* The link is unusable: every endpoint is told, the table forgets it, the QP goes down. */
void smc_rdma_link_fail(struct smc_rdma_link *link, const char *why)
{
	pthread_mutex_lock(&smc_rdma.lock);
	if (atomic_load(&link->state) == LINK_DEAD) {
		pthread_mutex_unlock(&smc_rdma.lock);
		return;
	}
	unlist(link);
	pthread_mutex_unlock(&smc_rdma.lock);
	smcr_stat_add(rdma.links_failed, 1);
	smcr_log(SMCR_LOG_INFO, "rdma: link qp %u down: %s", link->info.qpn, why);
	pthread_mutex_lock(&link->lock);
	for (struct smc_rdma_endpoint *ep = link->eps; ep; ep = ep->next)
		ep->ops->down(ep);
	pthread_mutex_unlock(&link->lock);
	IBV(rdma_disconnect)(link->id);
	smc_rdma_link_put(link);	/* the table's */
}

void smc_rdma_link_disconnected(struct smc_rdma_link *link)
{
	bool idle;

	pthread_mutex_lock(&smc_rdma.lock);
	idle = atomic_load(&link->state) == LINK_UP && link->refs == 1;
	if (idle)
		unlist(link);
	pthread_mutex_unlock(&smc_rdma.lock);
	if (idle)
		end_idle(link, "the peer ended it, idle");
	else
		smc_rdma_link_fail(link, "disconnected");
}

/* Ends the links idle for idle_ms: ms until the next one is due, or -1. */
static int end_idle_links(void)
{
	struct smc_rdma_link *link;
	uint64_t now, next;

	if (!smc_rdma.idle_ms)
		return -1;
	do {
		now = smc_clock_ms();
		next = UINT64_MAX;
		pthread_mutex_lock(&smc_rdma.lock);
		for (link = smc_rdma.links; link; link = link->next) {
			if (atomic_load(&link->state) != LINK_UP || link->refs != 1)
				continue;
			if (now - link->idle_since >= smc_rdma.idle_ms)
				break;
			if (link->idle_since + smc_rdma.idle_ms - now < next)
				next = link->idle_since + smc_rdma.idle_ms - now;
		}
		if (link)
			unlist(link);
		pthread_mutex_unlock(&smc_rdma.lock);
		if (link)
			end_idle(link, "idle");
	} while (link);
	return next == UINT64_MAX ? -1 : (int)next;
}

int smc_rdma_on_idle(void)
{
	uint64_t now = smc_clock_ms(), next = UINT64_MAX;
	int idle, retired;

	put_retired(NULL, NULL, now, &next);
	retired = next == UINT64_MAX ? -1 : (int)(next - now);
	idle = end_idle_links();
	return idle < 0 || (retired >= 0 && retired < idle) ? retired : idle;
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
	if (!rc)
		smcr_stat_add(rdma.conns_bound, 1);
	return rc;
}

void smc_rdma_link_unbind(struct smc_rdma_link *link, struct smc_rdma_endpoint *ep)
{
	if (smc_rdma_foreign(link->gen))
		return;
	pthread_mutex_lock(&link->lock);
	for (struct smc_rdma_endpoint **pp = &link->eps; *pp; pp = &(*pp)->next)
		if (*pp == ep) {
			*pp = ep->next;
			break;
		}
	pthread_mutex_unlock(&link->lock);
	smcr_stat_add(rdma.conns_unbound, 1);
}

void smc_rdma_link_retire(struct smc_rdma_link *link, uint32_t token, struct smc_rdma_buf *buf)
{
	buf->retired_on = link;
	buf->token = token;
	buf->until = smc_clock_ms() + SMC_CLC_WAIT_MS;
	pthread_mutex_lock(&smc_rdma.lock);
	buf->next = smc_rdma.retired;
	smc_rdma.retired = buf;
	pthread_mutex_unlock(&smc_rdma.lock);
	wake_poller();		/* it may sleep with no time limit */
}

/* A received CDC, to the endpoint whose token it carries (or the retired RMB it frees). */
static void deliver(struct smc_rdma_link *link, const uint8_t *msg, uint32_t len)
{
	struct smc_cdc cdc;
	struct smc_rdma_endpoint *ep;

	if (smc_cdc_decode(msg, len, &cdc)) {
		smc_rdma_link_fail(link, "malformed CDC");
		return;
	}
	pthread_mutex_lock(&link->lock);
	for (ep = link->eps; ep && ep->token != cdc.token; ep = ep->next)
		;
	if (ep)
		ep->ops->deliver(ep, msg);
	else
		smcr_stat_add(rdma.cdc_unknown_token, 1);
	pthread_mutex_unlock(&link->lock);
	if (!ep && (cdc.conn_state_flags & SMC_RDMA_PEER_STOPPED))
		put_retired(link, &cdc.token, 0, NULL);		/* smc_rdma.lock: not under link->lock */
}

/*
 * Under cq_lock: takes every completion that was there when it began, and
 * no more than the CQ holds.  Receives are reposted as they complete, so a
 * remote peer sending without pause would otherwise keep us here (with
 * cq_lock, and a waiter's connection lock) for ever.  The CQ never holds
 * more than its depth, send_slots + recv_slots, and gives completions in
 * order: taking that many takes all that were there at the start, so a
 * poll after arming (smc_rdma_link_arm_any) still sees every completion
 * the arm may not signal.
 */
static void link_poll_locked(struct smc_rdma_link *link)
{
	struct ibv_wc wc[16];
	uint64_t sends = 0, recvs = 0, left = (uint64_t)link->send_slots + link->recv_slots;
	int n = 0;

	while (left > 0 && (n = ibv_poll_cq(link->cq, left < 16 ? (int)left : 16, wc)) > 0) {
		left -= (uint64_t)n;
		for (int i = 0; i < n; i++) {
			smcr_log(SMCR_LOG_DEBUG, "rdma: qp %u: completion opcode %d status %d len %u",
				 link->info.qpn, wc[i].opcode, wc[i].status, wc[i].byte_len);
			if (wc[i].status == IBV_WC_WR_FLUSH_ERR) {
				/* the QP went to error: a disconnect (siw flushes before the event) */
				smc_rdma_link_disconnected(link);
				continue;
			}
			if (wc[i].status != IBV_WC_SUCCESS) {
				smc_rdma_link_fail(link, IBV(ibv_wc_status_str)(wc[i].status));
				continue;
			}
			if (wc[i].opcode == IBV_WC_RECV) {
				uint32_t slot = (uint32_t)wc[i].wr_id;

				recvs++;
				deliver(link, link->recv_buf + (size_t)slot * RECV_BUF_LEN,
					wc[i].byte_len);
				if (!link_dead(link) && post_recv(link, slot))
					smc_rdma_link_fail(link, "cannot repost a receive");
			} else {
				sends++;
				atomic_store(&link->completed, wc[i].wr_id);
			}
		}
	}
	if (n < 0)
		smc_rdma_link_fail(link, "polling the CQ failed");
	if (sends)
		smcr_stat_add(rdma.wc_send, sends);
	if (recvs)
		smcr_stat_add(rdma.wc_recv, recvs);
}

void smc_rdma_link_poll(struct smc_rdma_link *link)
{
	if (!smc_rdma_foreign(link->gen) && pthread_mutex_trylock(&link->cq_lock) == 0) {
		link_poll_locked(link);
		pthread_mutex_unlock(&link->cq_lock);
	}
}

/*
 * Tries of cq_lock, each after a pause, before a thread that may not wait
 * for it gives up: tens of milliseconds, time for a holder that was
 * preempted to run again.  Counted, not timed, and without a sleep
 * (hence not smcr_sys_trylock_for): a clock read or a nanosleep may be a
 * system call the filter forbids too.
 */
#define CQ_LOCK_TRIES (1u << 20)

/*
 * Takes cq_lock, waiting for a poll in progress to end.  A thread whose
 * seccomp filter forbids futex (a process that left SMC as it sandboxed
 * itself still reads its mailbox: smc_leave.h) must not sleep on it, so
 * it tries instead; and its unlock wakes nobody, since the poller only
 * ever tries cq_lock.  False if the holder kept it past CQ_LOCK_TRIES: it
 * delivers what it polls.
 */
static bool cq_lock_wait(struct smc_rdma_link *link)
{
	if (smcr_filter_permits_lock_waits()) {
		pthread_mutex_lock(&link->cq_lock);
		return true;
	}
	for (unsigned int tries = 0; tries < CQ_LOCK_TRIES; tries++) {
		if (pthread_mutex_trylock(&link->cq_lock) == 0)
			return true;
		smcr_cpu_relax();
	}
	return false;
}

void smc_rdma_link_drain(struct smc_rdma_link *link)
{
	if (smc_rdma_foreign(link->gen) || !cq_lock_wait(link))
		return;
	link_poll_locked(link);
	pthread_mutex_unlock(&link->cq_lock);
}

void smc_rdma_link_arm_any(struct smc_rdma_link *link)
{
	if (smc_rdma_foreign(link->gen))
		return;
	ibv_req_notify_cq(link->cq, 0);
	/* a completion that came before the arm must be seen by this poll */
	smc_rdma_link_drain(link);
}

int smc_rdma_link_event_fd(const struct smc_rdma_link *link)
{
	return link->dev->chan->fd;
}

/*
 * Posts the chain of n WRs at wr (one ibv_post_send: one doorbell, a
 * system call on rxe and siw).  A WR is signalled if it asks
 * (IBV_SEND_SIGNALED) or if it is the signal_every-th.
 */
static int post(struct smc_rdma_link *link, struct ibv_send_wr *wr, unsigned int n,
		uint64_t *last)
{
	struct ibv_send_wr *bad;
	bool waited = false;
	int rc;

	if (smc_rdma_foreign(link->gen))
		return -ECONNRESET;
	pthread_mutex_lock(&link->lock);
	while (!link_dead(link) &&
	       link->posted - atomic_load(&link->completed) + n > link->send_slots) {
		pthread_mutex_unlock(&link->lock);
		if (!waited)
			smcr_stat_add(rdma.cdc_slots_exhausted, 1);
		waited = true;
		smc_rdma_link_poll(link);
		sched_yield();
		pthread_mutex_lock(&link->lock);
	}
	if (link_dead(link)) {
		pthread_mutex_unlock(&link->lock);
		return -ECONNRESET;
	}
	for (struct ibv_send_wr *w = wr; w; w = w->next) {
		if (++link->posted % link->signal_every == 0)
			w->send_flags |= IBV_SEND_SIGNALED;
		if (w->send_flags & IBV_SEND_SIGNALED)
			w->wr_id = link->posted;
	}
	rc = ibv_post_send(link->qp, wr, &bad);
	smcr_log(SMCR_LOG_DEBUG, "rdma: qp %u: post %u WRs, the last opcode %d: %d", link->info.qpn,
		 n, wr[n - 1].opcode, rc);
	*last = link->posted;
	if (rc)
		link->posted -= n;
	pthread_mutex_unlock(&link->lock);
	if (rc) {
		smc_rdma_link_fail(link, "ibv_post_send failed");
		return -ECONNRESET;
	}
	return 0;
}

/*
 * Until the WR posted as number seq has completed or end (smc_clock_ns)
 * passes: 0, -ETIMEDOUT or -ECONNRESET.  What waits is a connection's last
 * CDC, or a process's last WR, which must leave before the process can
 * exit and take its QP, and every WRITE before it, with it (on a loaded
 * host a soft device can take over a second to send the RMB's worth ahead
 * of it).
 */
static int wait_completed(struct smc_rdma_link *link, uint64_t seq, uint64_t end)
{
	/* a few yields, then pauses: a device that lags must not lose its CPU to us */
	for (unsigned int round = 0; atomic_load(&link->completed) < seq; round++) {
		if (link_dead(link))
			return -ECONNRESET;
		if (smc_clock_ns() > end)
			return -ETIMEDOUT;
		smc_rdma_link_poll(link);
		if (round < 64)
			sched_yield();
		else
			usleep(1000);
	}
	return 0;
}

/*
 * Whether a completion on link is no proof that the peer has the WR: on
 * iWARP it says only that our end of the TCP connection took it (siw).
 * Where the peer answers RDMA READs (HELLO_READS), a zero-length READ
 * after it is: its response comes once the peer placed all before it.
 * An RC WRITE or SEND elsewhere completes once the peer acknowledged it.
 */
static bool proves_by_read(const struct smc_rdma_link *link)
{
	return link->dev->iwarp && link->reads;
}

/*
 * A signalled WR whose completion says that all before it arrived: a
 * zero-length RDMA READ where proves_by_read, else a zero-length WRITE.
 * Neither checks a key or address (InfiniBand's C9-88; iWARP likewise),
 * and the peer's application never sees them.
 */
static struct ibv_send_wr proof_wr(const struct smc_rdma_link *link)
{
	return (struct ibv_send_wr){ .opcode = proves_by_read(link) ? IBV_WR_RDMA_READ :
								       IBV_WR_RDMA_WRITE,
				     .send_flags = IBV_SEND_SIGNALED };
}

int smc_rdma_post(struct smc_rdma_link *link, const struct smc_rdma_write *writes, unsigned int n,
		  const uint8_t *cdc, unsigned int how)
{
	struct ibv_sge sge[SMC_RDMA_POST_MAX + 1];
	struct ibv_send_wr wr[SMC_RDMA_POST_MAX + 2];
	unsigned int i;
	uint64_t last;
	int rc;

	if (n > SMC_RDMA_POST_MAX || (!n && !cdc))
		return -EINVAL;
	bool ending = cdc && atomic_load_explicit(&smc_rdma.ending, memory_order_relaxed);

	if (ending)
		how |= SMC_RDMA_DELIVERED;	/* smc_rdma_process_ending */
	memset(wr, 0, sizeof(wr));
	for (i = 0; i < n; i++) {
		const struct smc_rdma_write *w = &writes[i];

		sge[i] = (struct ibv_sge){ .addr = (uintptr_t)w->src, .length = w->len,
					   .lkey = w->lkey };
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = w->len ? 1 : 0;
		wr[i].opcode = IBV_WR_RDMA_WRITE;
		wr[i].wr.rdma.remote_addr = w->remote_addr;
		wr[i].wr.rdma.rkey = w->rkey;
		if (w->len <= link->info.inline_max)
			wr[i].send_flags = IBV_SEND_INLINE;
		else if (link->dev->iwarp && w->len >= 4096)
			wr[i].send_flags = IBV_SEND_SIGNALED;   /* smc_rdma_priv.h: siw */
	}
	if (cdc) {
		sge[i] = (struct ibv_sge){ .addr = (uintptr_t)cdc, .length = SMC_CDC_MSG_LEN };
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].opcode = IBV_WR_SEND;
		wr[i].send_flags = IBV_SEND_INLINE |
				   (how & SMC_RDMA_SOLICITED ? IBV_SEND_SOLICITED : 0) |
				   (how & SMC_RDMA_DELIVERED ? IBV_SEND_SIGNALED : 0);
		i++;
	}
	/* the process is about to take its QPs with it: the peer must have it */
	if (ending && proves_by_read(link))
		wr[i++] = proof_wr(link);
	for (unsigned int j = 0; j + 1 < i; j++)
		wr[j].next = &wr[j + 1];
	rc = post(link, wr, i, &last);
	if (rc || !(how & SMC_RDMA_DELIVERED))
		return rc;
	rc = wait_completed(link, last, smc_deadline_after(SMC_CLC_WAIT_MS));
	if (rc == -ETIMEDOUT)
		smcr_log(SMCR_LOG_WARN, "rdma: qp %u: a last CDC not sent in %d ms", link->info.qpn,
			 SMC_CLC_WAIT_MS);
	return rc;
}

/*
 * The process is ending.  Its QPs go with it, and with them every WR not
 * yet sent, though send() returned for its bytes.  So each link of ours
 * whose WRs are not all known to have arrived gets one more (proof_wr),
 * whose completion says that all before it did: one with WRs not yet
 * complete, and on iWARP one with any (its completions prove nothing: the
 * peer's end of siw's TCP connection may never get what ours took, once
 * the QP is gone).  We wait for those, up to SMC_CLC_WAIT_MS in all.
 * From then on every CDC is delivered before its post returns, proven the
 * same way: exit() still sends after us (stdio flushes its buffers after
 * the atexit handlers).  Locks are only tried, each for
 * ENDING_LOCK_MS: the caller may be a signal handler that interrupted
 * their holder.  The link references taken are not given back.
 */
#define ENDING_LOCK_MS 100

/* Our links that are up, each referenced, listed through ending_next. */
static struct smc_rdma_link *links_ending(void)
{
	struct smc_rdma_link *list = NULL;

	if (!smcr_sys_trylock_for(&smc_rdma.lock, ENDING_LOCK_MS))
		return NULL;
	for (struct smc_rdma_link *link = smc_rdma.links; link; link = link->next)
		if (!smc_rdma_foreign(link->gen) && atomic_load(&link->state) == LINK_UP) {
			link->refs++;
			link->ending_next = list;
			list = link;
		}
	pthread_mutex_unlock(&smc_rdma.lock);
	return list;
}

/*
 * Posts the last WR after link's others (a slot free by end): its number,
 * or 0; *unsent: some of the others had not completed.
 */
static uint64_t post_last(struct smc_rdma_link *link, uint64_t end, bool *unsent)
{
	struct ibv_send_wr wr = proof_wr(link);
	struct ibv_send_wr *bad;
	uint64_t outstanding, seq = 0;

	for (;;) {
		if (!smcr_sys_trylock_for(&link->lock, ENDING_LOCK_MS))
			return 0;
		outstanding = link->posted - atomic_load(&link->completed);
		if (link_dead(link) || !outstanding || outstanding < link->send_slots ||
		    smc_clock_ns() > end)
			break;
		pthread_mutex_unlock(&link->lock);
		smc_rdma_link_poll(link);
		usleep(1000);
	}
	*unsent = outstanding;
	if (!link_dead(link) && (outstanding || proves_by_read(link)) &&
	    outstanding < link->send_slots) {
		wr.wr_id = ++link->posted;
		if (ibv_post_send(link->qp, &wr, &bad) == 0)
			seq = link->posted;
		else
			link->posted--;
	}
	pthread_mutex_unlock(&link->lock);
	return seq;
}

/*
 * Whether a seccomp filter lets us make the calls it takes: a soft
 * device's doorbell (write or ioctl), and the pauses of the waits.  A
 * process that forbade them left RDMA before it installed the filter.
 */
static bool ending_calls_permitted(void)
{
	static const long calls[] = { SYS_write, SYS_ioctl, SYS_sched_yield, SYS_clock_nanosleep };
	const uint64_t any[6] = { 0 };

	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
		if (!smcr_filter_permits(calls[i], any))
			return false;
	return true;
}

void smc_rdma_process_ending(void)
{
	uint64_t start = smc_clock_ns(), end = smc_deadline_after(SMC_CLC_WAIT_MS);
	unsigned int links = 0, unsent = 0, proven = 0;
	struct smc_rdma_link *list;

	if (!ending_calls_permitted())
		return;
	atomic_store(&smc_rdma.ending, true);
	list = links_ending();
	for (struct smc_rdma_link *link = list; link; link = link->ending_next) {
		bool some_unsent = false;

		link->ending_seq = post_last(link, end, &some_unsent);
		links++;
		unsent += some_unsent;
		proven += link->ending_seq && proves_by_read(link);
	}
	for (struct smc_rdma_link *link = list; link; link = link->ending_next)
		if (link->ending_seq && wait_completed(link, link->ending_seq, end) == -ETIMEDOUT)
			smcr_log(SMCR_LOG_WARN, "rdma: qp %u: not all sent in %d ms, at the exit",
				 link->info.qpn, SMC_CLC_WAIT_MS);
	if (links)
		smcr_log(SMCR_LOG_DEBUG, "rdma: ending: %u links, %u with WRs unsent, "
			 "%u proven by a READ, %llu us", links, unsent, proven,
			 (unsigned long long)(smc_clock_ns() - start) / 1000);
}

void smc_rdma_dev_fail_links(struct rdma_dev *dev, const char *why)
{
	struct smc_rdma_link *link;

	do {
		pthread_mutex_lock(&smc_rdma.lock);
		for (link = smc_rdma.links; link && link->dev != dev; link = link->next)
			;
		pthread_mutex_unlock(&smc_rdma.lock);
		if (link)
			smc_rdma_link_fail(link, why);
	} while (link);
}

void smc_rdma_on_async_events(struct rdma_dev *dev)
{
	struct ibv_async_event e;

	while (IBV(ibv_get_async_event)(dev->verbs, &e) == 0) {
		switch (e.event_type) {
		case IBV_EVENT_QP_FATAL:
		case IBV_EVENT_QP_REQ_ERR:
		case IBV_EVENT_QP_ACCESS_ERR:
			smc_rdma_link_fail(e.element.qp->qp_context, "QP error");
			break;
		case IBV_EVENT_CQ_ERR:
			smc_rdma_link_fail(e.element.cq->cq_context, "CQ error");
			break;
		case IBV_EVENT_DEVICE_FATAL:
			smc_rdma_dev_fail_links(dev, "device fatal error");
			break;
		default:
			break;
		}
		IBV(ibv_ack_async_event)(&e);
	}
}

/*
 * A CQ event: the CQ is polled, but armed again only later
 * (smc_rdma_on_rearm).  A thread that waits for a completion polls the CQ
 * itself while it spins and arms it before it sleeps, so the poller's own
 * arming only serves links nobody waits on (receives to repost, failures
 * to notice); armed again at once, a solicited CDC would wake the poller
 * at every message a spinning peer sends, taking a CPU from the spinners.
 */
void smc_rdma_on_cq_events(struct rdma_dev *dev)
{
	struct ibv_cq *cq;
	void *ctx;

	while (IBV(ibv_get_cq_event)(dev->chan, &cq, &ctx) == 0) {
		struct smc_rdma_link *link = ctx;

		IBV(ibv_ack_cq_events)(cq, 1);
		link->rearm_due = true;
		if (!smc_rdma.rearm_at)
			smc_rdma.rearm_at = smc_deadline_after(SMC_RDMA_REARM_MS);
		/* a thread that holds cq_lock polls until the CQ is empty (and arms before it sleeps) */
		smc_rdma_link_poll(link);
	}
}

/* The poller, SMC_RDMA_REARM_MS after its last event: arms the CQs it took events from, then polls them. */
void smc_rdma_on_rearm(void)
{
	struct smc_rdma_link *due[32];
	unsigned int n = 0;

	pthread_mutex_lock(&smc_rdma.lock);
	smc_rdma.rearm_at = 0;
	for (struct smc_rdma_link *link = smc_rdma.links; link; link = link->next) {
		if (!link->rearm_due)
			continue;
		if (n == sizeof(due) / sizeof(due[0])) {
			smc_rdma.rearm_at = smc_clock_ns();	/* the rest at the next turn */
			break;
		}
		link->rearm_due = false;
		ibv_req_notify_cq(link->cq, !link->dev->iwarp);
		due[n++] = link;
	}
	pthread_mutex_unlock(&smc_rdma.lock);
	/* a completion before the arm raised no event; only this thread frees links */
	for (unsigned int i = 0; i < n; i++)
		smc_rdma_link_poll(due[i]);
}

void smc_rdma_on_reap(struct rdma_dev *unused)
{
	struct smc_rdma_link *list, *next;
	uint64_t count;

	(void)unused;
	if (REAL(read)(smcr_sys_kept(&smc_rdma.ctl_fd), &count, sizeof(count)) < 0 && errno != EAGAIN)
		smcr_log(SMCR_LOG_WARN, "rdma: reading the poller's eventfd failed");
	pthread_mutex_lock(&smc_rdma.lock);
	list = smc_rdma.reap;
	smc_rdma.reap = NULL;
	pthread_mutex_unlock(&smc_rdma.lock);
	for (; list; list = next) {
		next = list->next;
		smc_rdma_link_free(list, true);
		smcr_stat_add(rdma.links_ended, 1);
	}
}

