/*
 * smc_rdma.c - the RDMA transport's connections (smc_rdma.h): the ops
 * table over a link of smc_rdma_link.c.
 *
 * Writing: the bytes are copied into the staging buffer, a registered
 * mirror of the peer's RMB, at the same offset, and written from there
 * (inline when small) by a WRITE posted together with the CDC that
 * announces them: one post, a WRITE or two (the ring wraps) and the SEND.
 * src may be reused on return, and the staging bytes are safe until the
 * RDMA WRITE has read them: the send path writes at an offset again only
 * after the peer's consumer cursor has passed it, which the peer can only
 * report after the WRITE landed.  The SEND goes on the same RC QP, which
 * delivers it after the WRITEs.
 *
 * Receiving: the link's thread (or a spinning waiter) hands each CDC to
 * its connection's mailbox (smc_mbox.h), which keeps the latest one, as
 * smc_shm.c's does and for the same reasons (a CDC states the whole
 * state), and which a reader copies without waiting for the writer.
 *
 * Waking, as smc_shm.c: spin (polling the CQ ourselves), then sleep
 * (`waiting`: on the device's completion channel and our sleep_fd, see
 * rdma_wait) or, for poll and epoll, on our eventfd (`armed`); the
 * deliverer stores, fences, and claims each word it finds set.  The same
 * store-buffer argument makes it lose no wake-up.
 *
 * Solicited events: a CDC wakes the peer's thread (IBV_SEND_SOLICITED;
 * the thread arms its CQ for solicited completions only, except on iWARP:
 * smc_rdma_priv.h says why) unless all it says is our consumer cursor,
 * the peer did not say it is blocked and at most half our RMB was in
 * flight - no waiter of the peer's waits for that.
 * An unsolicited CDC is taken by the next poll of the CQ: the peer's next
 * call, spin or solicited CDC - or the poller, woken by any completion once
 * a thread of the peer's has gone to sleep (it may have become blocked
 * just after we sent the update, and need it after all).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "real.h"
#include "smc_mbox.h"
#include "smc_rdma.h"
#include "smc_rdma_link.h"
#include "smc_wake.h"
#include "spin.h"
#include "sys.h"

/*
 * The longest spin of a wait (SMCR_RDMA_SPIN_US overrides).  Longer than
 * spin.h's 20 us: on a soft device (rxe in a TCG guest) a 14-byte round
 * trip took 520-720 us at p50 when the waiter spun 20 or 100 us and then
 * slept, 70-300 us with 300 us.  spin.h's record shortens it to what the
 * answers take: on hardware they come in a few us, and a spin of 20 us is
 * enough.  And spin.h pauses after spins that missed, as for shared
 * memory: a peer that does not answer within 300 us is idle, and spinning
 * for it at every wait would cost up to 300 us of CPU per message.
 */
#define RDMA_SPIN_NS	300000

struct rdma_conn {
	struct smc_rdma_endpoint ep;		/* first: the link hands us back by it */
	struct smc_rdma_link *link;		/* NULL until bound */
	struct smc_rdma_link_info info;
	struct smc_rdma_local local;
	struct smc_rdma_buf *rmb, *staging;
	unsigned int size_class;
	uint64_t peer_addr;
	uint32_t peer_rkey;
	struct smc_cdc last_sent;		/* what the peer knows: solicit or not */
	bool sent_any;
	struct smc_rdma_write pending[SMC_RDMA_POST_MAX];	/* to go with the next CDC */
	unsigned int npending;

	struct smc_mbox mbox;			/* the latest CDC delivered */
	uint32_t fetched;			/* the mailbox's seq of the last one fetched */
	_Atomic bool down;			/* the link failed */
	bool forgotten;				/* a fork's child: the link is its parent's */
	_Atomic uint32_t wakes, wakes_seen;	/* as smc_shm.c */
	_Atomic uint32_t waiting, armed;
	int wake_fd, sleep_fd;
	struct smcr_spin spin;
};

static struct rdma_conn *priv(const struct smc_conn *conn)
{
	return conn->priv;
}

/* ---- waking ---- */

static void wake_waiters(struct rdma_conn *rc)
{
	atomic_thread_fence(memory_order_seq_cst);
	if (smc_wake_claim(&rc->waiting))
		smc_wake_signal_fd(smcr_sys_kept(&rc->sleep_fd));
	if (smc_wake_claim(&rc->armed))
		smc_wake_signal_fd(smcr_sys_kept(&rc->wake_fd));
}

static void deliver(struct smc_rdma_endpoint *ep, const uint8_t msg[SMC_CDC_MSG_LEN])
{
	struct rdma_conn *rc = (struct rdma_conn *)ep;

	smc_mbox_write(&rc->mbox, msg);	/* under the link's cq_lock: one writer */
	wake_waiters(rc);
}

static void link_down(struct smc_rdma_endpoint *ep)
{
	struct rdma_conn *rc = (struct rdma_conn *)ep;

	atomic_store(&rc->down, true);
	atomic_fetch_add_explicit(&rc->wakes, 1, memory_order_release);
	wake_waiters(rc);
}

static void link_forgotten(struct smc_rdma_endpoint *ep)
{
	struct rdma_conn *rc = (struct rdma_conn *)ep;

	rc->forgotten = true;
	atomic_store(&rc->down, true);
	atomic_fetch_add_explicit(&rc->wakes, 1, memory_order_release);
	/*
	 * The wake-up eventfds are the parent's, whose waiters a write would
	 * wake: the child lets go of them.  Kept, a child could make them
	 * blocking (file status flags are shared) and fill their counters, and
	 * every wake-up of the parent's would then block for ever.
	 */
	smcr_sys_close_kept(&rc->wake_fd);
	smcr_sys_close_kept(&rc->sleep_fd);
}

static const struct smc_rdma_endpoint_ops endpoint_ops = {
	.deliver = deliver,
	.down = link_down,
	.forgotten = link_forgotten,
};

/* ---- setup ---- */

static int sock_addr(int sock, bool peer, struct sockaddr_storage *ss)
{
	socklen_t len = sizeof(*ss);

	if ((peer ? REAL(getpeername) : REAL(getsockname))(sock, (struct sockaddr *)ss, &len))
		return -errno;
	return 0;
}

int smc_rdma_local_block(int sock, struct smc_clc_local *lcl)
{
	struct sockaddr_storage local;
	struct smc_rdma_local me;
	int rc = sock_addr(sock, false, &local);

	if (!rc)
		rc = smc_rdma_listen((struct sockaddr *)&local, &me);
	if (!rc)
		*lcl = me.lcl;
	return rc;
}

static int rdma_create_rmb(struct smc_conn *conn, unsigned int size_class, int memfd,
			   struct smcr_wake_channel wake)
{
	struct sockaddr_storage local;
	struct rdma_conn *rc;
	int err;

	if (memfd != -1 || wake.rx != -1 || wake.tx != -1 || size_class > SMC_RMB_MAX_CLASS_R || conn->sock < 0)
		return -EINVAL;
	err = sock_addr(conn->sock, false, &local);
	if (err)
		return err;
	rc = calloc(1, sizeof(*rc));
	if (!rc)
		return -ENOMEM;
	rc->wake_fd = rc->sleep_fd = -1;
	err = smc_rdma_listen((struct sockaddr *)&local, &rc->local);
	if (err)
		goto fail;
	err = -ENOMEM;
	rc->rmb = smc_rdma_rmb_get(rc->local.dev, size_class);
	/*
	 * The staging buffer mirrors the peer's RMB, most likely the size of
	 * ours: taken now, so that a server short of memory declines instead
	 * of failing after the client's Confirm (a reset).
	 */
	rc->staging = smc_rdma_staging_get(rc->local.dev, size_class);
	rc->wake_fd = smcr_sys_fd_aside(smcr_sys_eventfd());
	rc->sleep_fd = smcr_sys_fd_aside(smcr_sys_eventfd());
	smcr_sys_fd_keep(&rc->wake_fd);
	smcr_sys_fd_keep(&rc->sleep_fd);
	if (!rc->rmb || !rc->staging || rc->wake_fd < 0 || rc->sleep_fd < 0)
		goto fail;
	rc->size_class = size_class;
	/* an epoll loop with wake_fd in its set may sleep before any call of ours */
	atomic_store(&rc->armed, 1);
	conn->priv = rc;
	conn->rmb = rc->rmb->mem;
	conn->rmb_size = conn->st->rmb_size = rc->rmb->size;
	return 0;
fail:
	if (rc->rmb)
		smc_rdma_buf_put(rc->rmb);
	if (rc->staging)
		smc_rdma_buf_put(rc->staging);
	smcr_sys_close_kept(&rc->wake_fd);
	smcr_sys_close_kept(&rc->sleep_fd);
	free(rc);
	return err;
}

/*
 * The connection joins link: its buffers are registered in the link's PD
 * (smc_rdma_dev.c: no other link's peer can reach them), and it takes CDCs.
 * On failure the buffers are unregistered again, before the link may go.
 */
static int bind_link(struct smc_conn *conn, struct smc_rdma_link *link)
{
	struct rdma_conn *rc = priv(conn);
	int err;

	rc->ep.token = conn->st->token;
	rc->ep.ops = &endpoint_ops;
	if ((err = smc_rdma_buf_register(rc->rmb, link)) ||
	    (err = smc_rdma_buf_register(rc->staging, link)) ||
	    (err = smc_rdma_link_bind(link, &rc->ep))) {
		smc_rdma_buf_unregister(rc->rmb);
		smc_rdma_buf_unregister(rc->staging);
		smc_rdma_link_put(link);
		return err;
	}
	rc->link = link;
	smc_rdma_link_info(link, &rc->info);
	return 0;
}

int smc_rdma_link_to_peer(struct smc_conn *conn, const struct smc_clc_local *peer,
			  bool *first_contact)
{
	struct sockaddr_storage local, remote;
	struct smc_rdma_link *link;
	int err;

	if (!conn->priv || priv(conn)->link)
		return -EINVAL;
	if ((err = sock_addr(conn->sock, false, &local)) ||
	    (err = sock_addr(conn->sock, true, &remote)) ||
	    (err = smc_rdma_link_get((struct sockaddr *)&local, (struct sockaddr *)&remote, peer,
				     SMC_CLC_WAIT_MS, &link, first_contact)))
		return err;
	return bind_link(conn, link);
}

int smc_rdma_local_desc(struct smc_conn *conn, struct smc_clc_accept_confirm *desc)
{
	struct rdma_conn *rc = priv(conn);

	if (!rc || !rc->link)
		return -EINVAL;
	memset(desc, 0, sizeof(*desc));
	desc->smc_type = SMC_TYPE_R;
	desc->r = (struct smcr_clc_accept_confirm){
		.lcl = rc->local.lcl,
		.qpn = rc->info.qpn,
		.rmb_rkey = rc->rmb->rkey,
		.rmbe_idx = 1,		/* one RMB element per RMB, as Linux */
		.rmbe_alert_token = conn->st->token,
		.rmbe_size = (uint8_t)rc->size_class,
		.qp_mtu = rc->info.mtu,
		.rmb_dma_addr = (uintptr_t)rc->rmb->mem,
		.psn = rc->info.psn,
	};
	return 0;
}

static int rdma_attach_peer(struct smc_conn *conn, const struct smc_clc_accept_confirm *peer,
			    int peer_fd, int peer_wake_tx)
{
	struct rdma_conn *rc = priv(conn);
	struct sockaddr_storage remote;
	struct smc_rdma_link *link;
	int err;

	if (peer_fd != -1 || peer_wake_tx != -1)
		return -EINVAL;
	if (peer->smc_type != SMC_TYPE_R || peer->r.rmbe_size > SMC_RMB_MAX_CLASS_R)
		return -EPROTO;
	if (!rc->link) {
		struct smc_rdma_link_name name = { .peer_qpn = peer->r.qpn,
						   .peer_instance = smc_rdma_instance_of(&peer->r.lcl),
						   .first_contact = peer->first_contact };

		/*
		 * The client: the server connected the link before its Accept
		 * named it, and waits for our Confirm as long as for any CLC
		 * message; our side of the link may lag that long on a loaded
		 * host (our rdma_cm events are behind), so we wait as long.
		 */
		if ((err = sock_addr(conn->sock, true, &remote)) ||
		    (err = smc_rdma_link_find((struct sockaddr *)&remote, &name, SMC_CLC_WAIT_MS,
					      &link)) ||
		    (err = bind_link(conn, link)))
			return err;
	} else if (rc->info.peer_qpn != peer->r.qpn) {
		return -EPROTO;		/* the Confirm names another link than ours */
	}
	if (rc->staging->size != smc_rmb_size(peer->r.rmbe_size)) {
		struct smc_rdma_buf *staging = smc_rdma_staging_get(rc->local.dev, peer->r.rmbe_size);

		if (!staging)
			return -ENOMEM;
		err = smc_rdma_buf_register(staging, rc->link);
		if (err) {
			smc_rdma_buf_put(staging);
			return err;
		}
		smc_rdma_buf_put(rc->staging);
		rc->staging = staging;
	}
	rc->peer_addr = peer->r.rmb_dma_addr;
	rc->peer_rkey = peer->r.rmb_rkey;
	conn->peer_rmb_size = conn->st->peer_rmb_size = smc_rmb_size(peer->r.rmbe_size);
	return 0;
}

/* ---- the data path ---- */

/*
 * The link is down: the stream decides (-ENOTCONN, smc_transport.h), since
 * the peer may go on over it.  A fork's child never had the link: its view
 * is lost, and the socket layer leaves for TCP before any call gets here.
 */
static int gone(const struct rdma_conn *rc)
{
	return rc->forgotten ? -ECONNRESET : -ENOTCONN;
}

/* Posts the pending WRITEs, and cdc after them if not NULL (how: smc_rdma_post's). */
static int flush(struct rdma_conn *rc, const uint8_t *cdc, unsigned int how)
{
	int err = smc_rdma_post(rc->link, rc->pending, rc->npending, cdc, how);

	rc->npending = 0;
	return err;
}

/*
 * The bytes go to the staging buffer now, and from there in a WRITE posted
 * with the next CDC (one post for both: a doorbell less per message).
 */
static int rdma_write(struct smc_conn *conn, uint32_t off, const void *src, uint32_t len)
{
	struct rdma_conn *rc = priv(conn);
	uint8_t *staged;
	int err;

	if (!smc_conn_peer_range(conn, off, len))
		return -EINVAL;
	if (atomic_load(&rc->down))
		return gone(rc);
	if (len == 0)
		return 0;
	if (rc->npending == SMC_RDMA_POST_MAX && (err = flush(rc, NULL, 0)))
		return err;
	staged = rc->staging->mem + off;
	memcpy(staged, src, len);
	rc->pending[rc->npending++] = (struct smc_rdma_write){
		.src = staged, .len = len, .lkey = rc->staging->lkey,
		.remote_addr = rc->peer_addr + off, .rkey = rc->peer_rkey,
	};
	return 0;
}

/* The staging buffer mirrors the peer's RMB: a byte there is overwritten only once read. */
static int rdma_read_back(struct smc_conn *conn, uint32_t off, void *dst, uint32_t len)
{
	struct rdma_conn *rc = priv(conn);

	if (!smc_conn_peer_range(conn, off, len))
		return -EINVAL;
	memcpy(dst, rc->staging->mem + off, len);
	return 0;
}

/* Whether the CDC cdc may matter to a waiter of the peer's (the header comment). */
static bool cdc_wakes_peer(const struct smc_conn *conn, const struct rdma_conn *rc,
			   const struct smc_cdc *cdc)
{
	const struct smc_cdc *last = &rc->last_sent;

	if (!rc->sent_any || !smc_cursor_equal(cdc->prod, last->prod) ||
	    cdc->prod_flags != last->prod_flags || cdc->conn_state_flags != last->conn_state_flags)
		return true;
	if (conn->st->peer_prod_flags & (SMC_CDC_WRITE_BLOCKED | SMC_CDC_CONS_UPDATE_REQ))
		return true;
	/* the peer's view of its room, before this update */
	return smc_ring_readable(conn->rmb_size, conn->st->rx_confirmed, conn->st->rx_prod) >
	       conn->rmb_size / 2;
}

static int rdma_send_cdc(struct smc_conn *conn, const uint8_t msg[SMC_CDC_MSG_LEN])
{
	struct rdma_conn *rc = priv(conn);
	struct smc_cdc cdc;
	int err;

	if (atomic_load(&rc->down))
		return gone(rc);
	if (smc_cdc_decode(msg, SMC_CDC_MSG_LEN, &cdc))
		return -EINVAL;
	/*
	 * The last CDC (close, abort) is delivered before we return: it leaves
	 * before the socket closes, and before the process may exit and take
	 * its QP with it (the peer's await_peer covers what TCP overtakes).
	 */
	err = flush(rc, msg, (cdc_wakes_peer(conn, rc, &cdc) ? SMC_RDMA_SOLICITED : 0) |
			     (cdc.conn_state_flags & (SMC_CDC_PEER_CONN_CLOSED | SMC_CDC_PEER_CONN_ABORT) ?
			      SMC_RDMA_DELIVERED : 0));
	if (!err) {
		rc->last_sent = cdc;
		rc->sent_any = true;
	}
	return err;
}

static uint32_t rdma_events(struct smc_conn *conn)
{
	struct rdma_conn *rc = priv(conn);

	return smc_mbox_seq(&rc->mbox) + atomic_load_explicit(&rc->wakes, memory_order_acquire);
}

/* About to sleep: whatever arrives from now on raises a CQ event (smc_rdma_link_arm_any). */
static void poll_link_before_sleep(struct rdma_conn *rc)
{
	if (rc->link)
		smc_rdma_link_arm_any(rc->link);
}

static int rdma_recv_cdc(struct smc_conn *conn, uint8_t msg[SMC_CDC_MSG_LEN])
{
	struct rdma_conn *rc = priv(conn);

	/*
	 * An unsolicited CDC waits in the CQ for whoever polls it; the poll
	 * waits for one in progress, so that what came is seen (a caller that
	 * saw the TCP end must see the close CDC that came before it).
	 */
	if (smc_mbox_seq(&rc->mbox) == rc->fetched && rc->link)
		smc_rdma_link_drain(rc->link);
	if (smc_mbox_read(&rc->mbox, &rc->fetched, msg))
		return 1;
	if (!atomic_load(&rc->down))
		return 0;
	/* A fork's child that never had the link gets what the peer said, and no more. */
	if (rc->forgotten)
		return conn->st->peer_state & (SMC_CDC_PEER_DONE_WRITING | SMC_CDC_PEER_CONN_CLOSED) ?
		       0 : -ECONNRESET;
	/*
	 * The peer may have handed the connection to an image without our
	 * link (an exec) that goes on over TCP, even after it said it was done
	 * writing: the stream decides.
	 */
	return -ENOTCONN;
}

/* A spin's turn: completions are fetched here, not by the poller thread. */
static void rdma_collect(struct smc_conn *conn)
{
	struct rdma_conn *rc = priv(conn);

	if (rc->link)
		smc_rdma_link_poll(rc->link);
}

/* How long a wait spins before it sleeps: SMCR_RDMA_SPIN_US, or RDMA_SPIN_NS. */
static uint64_t spin_ns = RDMA_SPIN_NS;
static pthread_once_t spin_once = PTHREAD_ONCE_INIT;

static void read_spin_env(void)
{
	const char *env = getenv("SMCR_RDMA_SPIN_US");
	char *end;
	unsigned long us = env ? strtoul(env, &end, 10) : 0;

	if (env && *env && !*end && us <= 1000000)
		spin_ns = us * 1000ull;
}

/* The peer is on another host, as a rule: where it runs is not known here. */
static struct smcr_spin_how rdma_spin_how(struct smc_conn *conn)
{
	(void)conn;
	pthread_once(&spin_once, read_spin_env);
	return (struct smcr_spin_how){ .ns = (uint32_t)spin_ns };
}

/*
 * Sleeps until the device's completion channel or sleep_fd is readable, or
 * ms pass: 1 woken by the channel, 0 by sleep_fd (drained), -ETIMEDOUT.
 */
static int sleep_once(struct rdma_conn *rc, int ms)
{
	struct pollfd p[2] = {
		{ .fd = smcr_sys_kept(&rc->sleep_fd), .events = POLLIN },
		{ .fd = rc->link ? smc_rdma_link_event_fd(rc->link) : -1, .events = POLLIN },
	};
	uint64_t count;
	int n = smcr_sys_poll(p, 2, ms);

	if (n < 0)
		return -errno;
	if (n == 0)
		return -ETIMEDOUT;
	if (!p[0].revents)
		return 1;
	if (REAL(read)(smcr_sys_kept(&rc->sleep_fd), &count, sizeof(count)) < 0 && errno != EAGAIN)
		return -errno;
	return 0;
}

/*
 * Spins, polling the CQ; then sleeps on the device's completion channel
 * itself (and on sleep_fd, for wake-ups that are no completion: a CDC the
 * poller or another thread took, our own wake(), the link's failure), so
 * that a completion wakes this thread at once, not the poller first.  The
 * poller, woken too, takes the channel's event; a wake-up for another
 * link's completion, or before the poller took it, is slept off again.
 * The TCP end (-ENOTCONN) is judged by smc_conn_peer_lost, which first
 * takes, and awaits, the CDCs that TCP may have overtaken (await_peer).
 */
static int rdma_wait(struct smc_conn *conn, uint32_t since, int timeout_ms)
{
	struct rdma_conn *rc = priv(conn);
	struct timespec ts;
	int slice = smc_wait_slice(timeout_ms, &ts), woke = 0;
	uint64_t end;

	if (smc_spin(conn, &rc->spin, since) || rdma_events(conn) != since)
		return 0;
	if (timeout_ms == 0)
		return -ETIMEDOUT;
	if (smc_tcp_news(conn))
		return -ENOTCONN;
	if (atomic_load(&rc->down))     /* the fetch before the next wait finds it cut */
		return rc->forgotten ? -ECONNRESET : 0;
	end = smc_deadline_after(slice);
	for (;;) {
		atomic_store_explicit(&rc->waiting, 1, memory_order_relaxed);
		atomic_thread_fence(memory_order_seq_cst);
		poll_link_before_sleep(rc);
		if (rdma_events(conn) != since)
			return 0;
		if (smc_ms_until(end) == 0)
			break;
		if (woke == 1)
			sched_yield();	/* the channel stays readable until the poller takes the event */
		woke = sleep_once(rc, smc_ms_until(end));
		if (woke == -ETIMEDOUT)
			break;
		if (woke < 0)
			return woke;
	}
	if (smc_tcp_news(conn))
		return -ENOTCONN;
	return slice == timeout_ms ? -ETIMEDOUT : 0;
}

static struct smcr_wake_channel rdma_wake_channel(struct smc_conn *conn)
{
	return (struct smcr_wake_channel){ .rx = smcr_sys_kept(&priv(conn)->wake_fd), .tx = -1 };
}

/*
 * The eventfd is read empty only by its one sleeper (alone); with others
 * it stays readable for them (smc_transport.h), and its counter cannot
 * fill: it counts up to 2^64 - 2.
 */
static bool rdma_arm(struct smc_conn *conn, uint32_t since, bool signalled, bool alone)
{
	struct rdma_conn *rc = priv(conn);
	uint32_t wakes = atomic_load_explicit(&rc->wakes, memory_order_acquire);
	uint64_t count;
	int saved_errno = errno;

	if (alone && (signalled || !atomic_load_explicit(&rc->armed, memory_order_relaxed) ||
		      wakes != atomic_load_explicit(&rc->wakes_seen, memory_order_relaxed))) {
		atomic_store_explicit(&rc->wakes_seen, wakes, memory_order_relaxed);
		if (REAL(read)(smcr_sys_kept(&rc->wake_fd), &count, sizeof(count)) < 0)
			errno = saved_errno;
	}
	atomic_store_explicit(&rc->armed, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
	poll_link_before_sleep(rc);
	return rdma_events(conn) == since;
}

static void rdma_wake(struct smc_conn *conn)
{
	struct rdma_conn *rc = priv(conn);

	atomic_fetch_add_explicit(&rc->wakes, 1, memory_order_release);
	atomic_thread_fence(memory_order_seq_cst);
	if (smc_wake_claim(&rc->waiting))
		smc_wake_signal_fd(smcr_sys_kept(&rc->sleep_fd));
	smc_wake_signal_fd(smcr_sys_kept(&rc->wake_fd));	/* for poll and epoll, armed or not */
}

/*
 * Whether the peer may still WRITE into our RMB: the link is up, and the
 * latest CDC it sent (in the mailbox, fetched or not: CDC flags are the
 * whole state) did not say it stopped.
 */
static bool peer_may_write(struct rdma_conn *rc)
{
	uint8_t msg[SMC_CDC_MSG_LEN];
	struct smc_cdc cdc = { 0 };
	uint32_t none = 0;

	if (!rc->link || atomic_load(&rc->down))
		return false;
	if (smc_mbox_read(&rc->mbox, &none, msg))
		smc_cdc_decode(msg, SMC_CDC_MSG_LEN, &cdc);	/* the link decoded it */
	return !(cdc.conn_state_flags & SMC_RDMA_PEER_STOPPED);
}

static void rdma_release(struct smc_conn *conn)
{
	struct rdma_conn *rc = priv(conn);

	/* deregistered, or retired to the link, before the link (and its PD) may go */
	if (rc->link)
		smc_rdma_link_unbind(rc->link, &rc->ep);
	smc_rdma_buf_put(rc->staging);
	if (peer_may_write(rc))
		smc_rdma_link_retire(rc->link, rc->ep.token, rc->rmb);
	else
		smc_rdma_buf_put(rc->rmb);
	if (rc->link)
		smc_rdma_link_put(rc->link);
	smcr_sys_close_kept(&rc->wake_fd);
	smcr_sys_close_kept(&rc->sleep_fd);
	free(rc);
	conn->priv = NULL;
	conn->rmb = NULL;
	conn->rmb_size = conn->peer_rmb_size = 0;
}

/*
 * Up to SMC_CLC_WAIT_SHORT_MS for a CDC not yet fetched, unless the link is
 * down: a peer that closed sent its close CDC before its TCP end, but on
 * iWARP its SEND completed as soon as siw handed it to its own TCP stream,
 * which the socket's FIN may overtake.  A peer that died took its QP with
 * it: the link goes down, and the wait ends.
 */
static bool rdma_await_peer(struct smc_conn *conn)
{
	struct rdma_conn *rc = priv(conn);
	uint64_t end = smc_deadline_after(SMC_CLC_WAIT_SHORT_MS);

	while (rc->link && !atomic_load(&rc->down)) {
		smc_rdma_link_drain(rc->link);
		if (smc_mbox_seq(&rc->mbox) != rc->fetched)
			return true;
		if (smc_clock_ns() >= end)
			break;
		usleep(1000);
	}
	return false;
}

/*
 * A QP and the memory regions registered on it belong to the process that
 * made them: another process holding the socket cannot take the connection
 * over (smc_sock_view.c then treats it as lost there).
 */
static int rdma_map_rmb(struct smc_conn *conn, int memfd, struct smcr_wake_channel wake)
{
	(void)conn;
	(void)memfd;
	(void)wake;
	return -EOPNOTSUPP;
}

/* ---- the CLC exchange (struct smc_transport_setup) ---- */

static int rdma_describe(struct smc_conn *conn, uint64_t token, unsigned int size_class,
			 struct smc_clc_accept_confirm *ours)
{
	(void)token;            /* the link and the RMB's key say it all */
	(void)size_class;
	return smc_rdma_local_desc(conn, ours);
}

static uint32_t rdma_peer_token(const struct smc_clc_accept_confirm *peer)
{
	return peer->r.rmbe_alert_token;
}

const struct smc_transport_ops smc_rdma_ops = {
	.name = "rdma",
	.id = SMCR_TRANSPORT_RDMA,
	.setup = {
		.clc_type = SMC_TYPE_R,
		.allowed_by = SMCR_CONTROL_RDMA,
		.remote_only = true,
		.lost_by_fork = true,
		.staging = true,
		.local_block = smc_rdma_local_block,
		.prepare_client = smc_rdma_prepare_client,
		.join_peer = smc_rdma_link_to_peer,
		.describe = rdma_describe,
		.peer_token = rdma_peer_token,
	},
	.fork_prepare = smc_rdma_fork_prepare,
	.fork_parent = smc_rdma_fork_parent,
	.fork_child = smc_rdma_fork_child,
	.process_ending = smc_rdma_process_ending,
	.create_rmb = rdma_create_rmb,
	.map_rmb = rdma_map_rmb,
	.attach_peer = rdma_attach_peer,
	.write = rdma_write,
	.read_back = rdma_read_back,
	.send_cdc = rdma_send_cdc,
	.recv_cdc = rdma_recv_cdc,
	.events = rdma_events,
	.collect = rdma_collect,
	.spin_how = rdma_spin_how,
	.wait = rdma_wait,
	.wake_channel = rdma_wake_channel,
	.arm = rdma_arm,
	.wake = rdma_wake,
	.await_peer = rdma_await_peer,
	.release = rdma_release,
};
