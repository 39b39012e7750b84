/*
 * smc_shm.c - the shared-memory transport (smc_shm.h): payload and CDC
 * messages between two processes through each other's memfd.
 *
 * Each side's memfd holds a control area and, on the next page, its RMB:
 *
 *   line 0  header: magic, RMB size        written once by the owner
 *   line 1  CDC mailbox                    written by the peer
 *   line 2  waiting, armed: "wake me"      set by the owner, cleared by a waker
 *           cpu: where the owner last ran   written by the owner (spin.h)
 *   page 1  the RMB ring                   written by the peer, read by the owner
 *
 * The lines are apart so that the peer's mailbox stores and the owner's
 * arming do not share a cache line (nor the adjacent-line prefetch pair).
 * Writing to the peer is storing into its memfd; the peer's RMB and control
 * area are mapped read-write, ours likewise by the peer.  Nothing read from
 * shared memory is trusted beyond what the receive path validates.
 *
 * The mailbox holds one CDC, the latest (smc_mbox.h, a seqlock).  A newer
 * CDC replaces one not yet fetched, and that loses nothing, because a CDC
 * says what the state is, not what changed:
 *  - cursors are positions, and the newer ones include the older moves;
 *  - connection state flags, once sent, are in every later CDC;
 *  - write_blocked and cons_curs_upd_req say what the sender wants now: a
 *    sender still blocked, or still asking, says so again in the newer CDC,
 *    and one that no longer is no longer needs the answer;
 *  - urg_data_present marks the byte before the CDC's producer cursor; the
 *    send path writes no data after that byte until the peer's consumer
 *    cursor reaches it (smc_tx.c), so every CDC up to then carries the same
 *    producer cursor and flags, and the newest still shows the mark.
 * The seqlock's single writer is the peer's send path, under its
 * connection lock.  Its final store (release) comes after the payload's
 * stores, and the reader's first load (acquire) comes before it reads the
 * ring: the data is there before the CDC that announces it.
 *
 * Waking (docs/ARCHITECTURE.md, "Waiting and waking": spin, then sleep).
 * A waiter takes a snapshot of events() (mailbox seq plus local wake
 * count), spins a while (spin.h) for it to move, then sleeps in one of two
 * ways, each with its word in our control area that tells the peer to wake
 * it:
 *  - inside the library (a blocking send or recv): on the futex word
 *    `waiting`; FUTEX_WAKE wakes every such sleeper at once (a reader and a
 *    writer may both sleep).  The sleep is cut in slices of a second, after
 *    each of which the TCP socket is asked whether the peer is gone.
 *  - in the application's poll or epoll_wait (epoll.c, poll.c): on the rx
 *    end of our wake-up channel (base/sys.h), whose word is `armed`.  It
 *    is read empty only when arming again, by whoever sleeps next: that
 *    thread looks at the connection before sleeping, so no event is lost
 *    with the bytes it takes.
 *
 *   waiter: word = 1; fence(seq_cst); if events moved: return; sleep
 *   waker:  store mailbox; fence(seq_cst);
 *           if word && xchg(word, 0): FUTEX_WAKE / send a byte on tx
 *
 * Why no wakeup is lost:
 *  - The two fences make it the store-buffer pattern: the waiter sees the
 *    new events, or the waker sees the word set, or both.
 *  - The window between the waiter's check and its sleep is closed by the
 *    futex (FUTEX_WAIT sleeps only if the word is still 1, and the waker
 *    clears it before FUTEX_WAKE) and by the channel's bytes, which stay
 *    until read.
 *  - The snapshot is taken before the caller looks at the state (under its
 *    lock), so a CDC another thread fetched meanwhile still counts.
 *  - Only a waker clears a word: a futex word left at 1 costs one spare
 *    FUTEX_WAKE, a channel left readable one early return.
 *  - `armed` starts at 1: an epoll loop with the channel in its set may
 *    wait before any call of ours.
 *  - A send never blocks and never fails to leave rx readable: a full
 *    channel is readable.  The peer holds tx, and can do nothing to it that
 *    makes our sends block (they ask not to) or rx unreadable (it cannot
 *    read rx); shutting tx down leaves rx readable for good, and we then
 *    shut the TCP connection down: every holder, and its waits, see the
 *    connection end.
 * The futex is not private: the word is in a MAP_SHARED mapping of two
 * processes, each at its own address.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "conn_record.h"
#include "log.h"
#include "real.h"
#include "shm_broker_client.h"
#include "smc_mbox.h"
#include "smc_shm.h"
#include "smc_wake.h"
#include "spin.h"
#include "sys.h"

#define SHM_MAGIC	0x534d435253484d31ull	/* "SMCRSHM1" */
#define SHM_LINE	128			/* a cache line pair */
#define SHM_CTL_SIZE	SMCR_SHM_CTL_BYTES	/* the ring starts on the next page */

struct shm_ctl {
	alignas(SHM_LINE) struct {
		uint64_t magic;
		uint32_t rmb_size;
	} hdr;
	alignas(SHM_LINE) struct smc_mbox mbox;
	alignas(SHM_LINE) _Atomic uint32_t waiting;	/* 1: FUTEX_WAKE it */
	_Atomic uint32_t armed;				/* 1: send on our channel */
	_Atomic uint32_t cpu;				/* smcr_spin_cpu_tag() as we last
							   sent or waited */
};

_Static_assert(sizeof(struct shm_ctl) <= SHM_CTL_SIZE, "control area outgrew its page");

struct shm {
	struct shm_ctl *ctl;		/* ours: our mailbox, our waiting word, then our RMB */
	size_t len;
	struct shm_ctl *peer_ctl;	/* the peer's */
	uint8_t *peer_rmb;
	size_t peer_len;
	int wake_rx, wake_tx;		/* our wake-up channel: the peer sends on tx too */
	int peer_wake_tx;		/* the peer's */
	_Atomic uint32_t wakes;		/* wake() calls, part of events() */
	_Atomic uint32_t wakes_seen;	/* wakes when wake_rx was last read */
	struct smcr_spin spin;		/* how its waits went (spin.h) */
};

uint64_t smc_shm_region_size(unsigned int size_class)
{
	return SHM_CTL_SIZE + (uint64_t)smc_rmb_size(size_class);
}

/* After a store the side owning ctl must see: wakes its sleepers (tx: its channel). */
static void wake_side(struct shm_ctl *ctl, int tx)
{
	atomic_thread_fence(memory_order_seq_cst);
	if (smc_wake_claim(&ctl->waiting))
		smcr_sys_futex(&ctl->waiting, FUTEX_WAKE, INT_MAX, NULL);
	if (smc_wake_claim(&ctl->armed))
		smcr_sys_wake_send(tx);
}

/*
 * Tells the peer where we run (as we send, and as we wait), for its waits'
 * spin: a store only when we moved, so that the line stays shared.
 */
static void publish_cpu(struct shm *shm)
{
	uint32_t tag = smcr_spin_cpu_tag();

	if (atomic_load_explicit(&shm->ctl->cpu, memory_order_relaxed) != tag)
		atomic_store_explicit(&shm->ctl->cpu, tag, memory_order_relaxed);
}

/* Maps size bytes of fd, which must hold them. */
static void *map_region(int fd, uint64_t size)
{
	struct stat st;
	void *p;

	if (fstat(fd, &st) != 0)
		return NULL;
	if ((uint64_t)st.st_size < size) {
		errno = EINVAL;
		return NULL;
	}
	/* populated now: no page faults on the data path */
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* Our region in memfd into a new priv of conn; 0 or a negative errno. */
static int map_own(struct smc_conn *conn, int memfd, uint64_t len, struct smcr_wake_channel wake)
{
	struct shm *shm;

	if (wake.rx < 0 || wake.tx < 0)
		return -EINVAL;
	shm = calloc(1, sizeof(*shm));
	if (!shm)
		return -ENOMEM;
	shm->ctl = map_region(memfd, len);
	if (!shm->ctl) {
		int err = errno;

		free(shm);
		return -err;
	}
	shm->len = len;
	shm->wake_rx = wake.rx;
	shm->wake_tx = wake.tx;
	shm->peer_wake_tx = -1;
	conn->priv = shm;
	conn->rmb = (uint8_t *)shm->ctl + SHM_CTL_SIZE;
	return 0;
}

/* From now on shm's channel is kept (sys.h): closed by release only. */
static void keep_channel(struct shm *shm)
{
	smcr_sys_fd_keep(&shm->wake_rx);
	smcr_sys_fd_keep(&shm->wake_tx);
}

static int shm_create_rmb(struct smc_conn *conn, unsigned int size_class, int memfd,
			  struct smcr_wake_channel wake)
{
	int rc;

	if (size_class > SMC_RMB_MAX_CLASS_D)
		return -EINVAL;
	rc = map_own(conn, memfd, smc_shm_region_size(size_class), wake);
	if (rc)
		return rc;
	struct shm *shm = conn->priv;

	memset(shm->ctl, 0, sizeof(*shm->ctl));
	shm->ctl->hdr.magic = SHM_MAGIC;
	shm->ctl->hdr.rmb_size = smc_rmb_size(size_class);
	atomic_store_explicit(&shm->ctl->armed, 1, memory_order_release);
	conn->rmb_size = conn->st->rmb_size = smc_rmb_size(size_class);
	keep_channel(shm);
	return 0;
}

static int shm_map_rmb(struct smc_conn *conn, int memfd, struct smcr_wake_channel wake)
{
	unsigned int size_class = smc_rmb_size_class(conn->st->rmb_size, SMC_RMB_MAX_CLASS_D);
	int rc;

	if (smc_rmb_size(size_class) != conn->st->rmb_size)
		return -EPROTO;
	rc = map_own(conn, memfd, smc_shm_region_size(size_class), wake);
	if (rc)
		return rc;
	struct shm *shm = conn->priv;

	if (shm->ctl->hdr.magic != SHM_MAGIC || shm->ctl->hdr.rmb_size != conn->st->rmb_size) {
		munmap(shm->ctl, shm->len);
		free(shm);
		conn->priv = NULL;
		conn->rmb = NULL;
		return -EPROTO;
	}
	conn->rmb_size = smc_rmb_size(size_class);      /* the memfd holds that much */
	keep_channel(shm);
	return 0;
}

static int shm_attach_peer(struct smc_conn *conn, const struct smc_clc_accept_confirm *peer,
			   int peer_fd, int peer_wake_tx)
{
	struct shm *shm = conn->priv;
	unsigned int size_class = peer->d.dmbe_size;
	uint64_t len = smc_shm_region_size(size_class);
	struct shm_ctl *ctl;
	int seals;

	if (peer->smc_type != SMC_TYPE_D || size_class > SMC_RMB_MAX_CLASS_D)
		return -EPROTO;
	if (peer_wake_tx < 0)
		return -EINVAL;
	seals = REAL(fcntl)(peer_fd, F_GET_SEALS);
	if (seals < 0)
		return -errno;
	if (!(seals & F_SEAL_SHRINK))
		return -EPERM;
	ctl = map_region(peer_fd, len);
	if (!ctl)
		return -errno;
	if (ctl->hdr.magic != SHM_MAGIC || ctl->hdr.rmb_size != smc_rmb_size(size_class)) {
		munmap(ctl, len);
		return -EPROTO;
	}
	shm->peer_ctl = ctl;
	shm->peer_rmb = (uint8_t *)ctl + SHM_CTL_SIZE;
	shm->peer_len = len;
	shm->peer_wake_tx = peer_wake_tx;
	smcr_sys_fd_keep(&shm->peer_wake_tx);
	conn->peer_rmb_size = conn->st->peer_rmb_size = smc_rmb_size(size_class);
	return 0;
}

static int shm_write(struct smc_conn *conn, uint32_t off, const void *src, uint32_t len)
{
	struct shm *shm = conn->priv;

	if (!smc_conn_peer_range(conn, off, len))
		return -EINVAL;
	memcpy(shm->peer_rmb + off, src, len);
	return 0;
}

/* What we wrote is still in the peer's RMB: it has not read it. */
static int shm_read_back(struct smc_conn *conn, uint32_t off, void *dst, uint32_t len)
{
	struct shm *shm = conn->priv;

	if (!smc_conn_peer_range(conn, off, len))
		return -EINVAL;
	memcpy(dst, shm->peer_rmb + off, len);
	return 0;
}

static int shm_send_cdc(struct smc_conn *conn, const uint8_t msg[SMC_CDC_MSG_LEN])
{
	struct shm *shm = conn->priv;

	smc_mbox_write(&shm->peer_ctl->mbox, msg);
	publish_cpu(shm);
	wake_side(shm->peer_ctl, smcr_sys_kept(&shm->peer_wake_tx));
	return 0;
}

static int shm_recv_cdc(struct smc_conn *conn, uint8_t msg[SMC_CDC_MSG_LEN])
{
	struct shm *shm = conn->priv;

	return smc_mbox_read(&shm->ctl->mbox, &conn->st->cdc_fetched, msg);
}

static uint32_t shm_events(struct smc_conn *conn)
{
	struct shm *shm = conn->priv;

	return smc_mbox_seq(&shm->ctl->mbox) +
	       atomic_load_explicit(&shm->wakes, memory_order_acquire);
}

/*
 * Reads our channel empty (alone: no other sleeper of this process holds
 * it; else down to one byte), if the peer or a local wake may have
 * written it.  A channel shut by its writer stays readable for good:
 * whoever holds tx (the peer) broke the connection, and we end its TCP
 * connection, which every holder sees (the peer gone).
 */
static void consume_wakeup(struct smc_conn *conn, struct shm *shm, bool signalled, bool alone)
{
	int rx = smcr_sys_kept(&shm->wake_rx);
	uint32_t wakes = atomic_load_explicit(&shm->wakes, memory_order_acquire);

	if (!signalled && atomic_load_explicit(&shm->ctl->armed, memory_order_relaxed) &&
	    wakes == atomic_load_explicit(&shm->wakes_seen, memory_order_relaxed))
		return;
	atomic_store_explicit(&shm->wakes_seen, wakes, memory_order_relaxed);
	if (!(alone ? smcr_sys_wake_drain(rx) : smcr_sys_wake_thin(rx, smcr_sys_kept(&shm->wake_tx))) &&
	    conn->sock >= 0) {
		int saved_errno = errno;

		smcr_log(SMCR_LOG_WARN, "fd %d: the peer shut our wake-up channel: the "
			 "connection ends", conn->sock);
		REAL(shutdown)(conn->sock, SHUT_RDWR);
		errno = saved_errno;
	}
}

static bool shm_arm(struct smc_conn *conn, uint32_t since, bool signalled, bool alone)
{
	struct shm *shm = conn->priv;

	consume_wakeup(conn, shm, signalled, alone);
	atomic_store_explicit(&shm->ctl->armed, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
	return shm_events(conn) == since;
}

static struct smcr_wake_channel shm_wake_channel(struct smc_conn *conn)
{
	struct shm *shm = conn->priv;

	return (struct smcr_wake_channel){ .rx = smcr_sys_kept(&shm->wake_rx),
					   .tx = smcr_sys_kept(&shm->wake_tx) };
}

/*
 * The peer's answer needs a CPU of this host: no spin if it last ran on
 * ours (a hostile peer's word changes only whether we spin).
 */
static struct smcr_spin_how shm_spin_how(struct smc_conn *conn)
{
	struct shm *shm = conn->priv;

	publish_cpu(shm);
	return smcr_spin_unless_here(SMCR_SPIN_DEFAULT, shm->peer_ctl ?
				     atomic_load_explicit(&shm->peer_ctl->cpu,
							  memory_order_relaxed) : 0);
}

static int shm_wait(struct smc_conn *conn, uint32_t since, int timeout_ms)
{
	struct shm *shm = conn->priv;
	struct timespec ts;
	int slice = smc_wait_slice(timeout_ms, &ts);

	if (smc_spin(conn, &shm->spin, since) || shm_events(conn) != since)
		return 0;
	if (timeout_ms == 0)
		return -ETIMEDOUT;
	atomic_store_explicit(&shm->ctl->waiting, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
	if (shm_events(conn) != since)
		return 0;
	if (smc_tcp_news(conn))
		return -ENOTCONN;
	if (smcr_sys_futex(&shm->ctl->waiting, FUTEX_WAIT, 1, &ts) == 0 || errno == EAGAIN)
		return 0;
	if (errno != ETIMEDOUT)
		return -errno;
	if (smc_tcp_news(conn))
		return -ENOTCONN;
	/* a slice of a longer wait ends as a spurious wake: the caller recounts */
	return slice == timeout_ms ? -ETIMEDOUT : 0;
}

static void shm_wake(struct smc_conn *conn)
{
	struct shm *shm = conn->priv;

	atomic_fetch_add_explicit(&shm->wakes, 1, memory_order_release);
	atomic_thread_fence(memory_order_seq_cst);
	if (smc_wake_claim(&shm->ctl->waiting))
		smcr_sys_futex(&shm->ctl->waiting, FUTEX_WAKE, INT_MAX, NULL);
	smcr_sys_wake_send(smcr_sys_kept(&shm->wake_tx)); /* for poll and epoll, armed or not */
}

static void shm_release(struct smc_conn *conn)
{
	struct shm *shm = conn->priv;

	if (shm->peer_ctl)
		munmap(shm->peer_ctl, shm->peer_len);
	smcr_sys_close_kept(&shm->peer_wake_tx);
	smcr_sys_close_kept(&shm->wake_tx);
	smcr_sys_close_kept(&shm->wake_rx);
	munmap(shm->ctl, shm->len);
	free(shm);
	conn->priv = NULL;
	conn->rmb = NULL;
	conn->rmb_size = conn->peer_rmb_size = 0;
}

/* ---- the CLC exchange (struct smc_transport_setup) ---- */

static int shm_describe(struct smc_conn *conn, uint64_t token, unsigned int size_class,
			struct smc_clc_accept_confirm *ours)
{
	(void)conn;
	memset(ours, 0, sizeof(*ours));
	ours->d.token = token;
	ours->d.dmbe_size = (uint8_t)size_class;
	return 0;
}

/* The peer's memfd and channel's tx, which smcrd's broker hands only to the other end of sock. */
static int shm_peer_fds(int sock, const struct smc_clc_accept_confirm *peer, int *fd,
			int *wake_tx)
{
	return smcr_shm_attach(sock, peer ? peer->d.token : 0, fd, wake_tx);
}

static uint32_t shm_peer_token(const struct smc_clc_accept_confirm *peer)
{
	return (uint32_t)peer->d.token;
}

const struct smc_transport_ops smc_shm_ops = {
	.name = "shm",
	.id = SMCR_TRANSPORT_SHM,
	.setup = {
		.clc_type = SMC_TYPE_D,
		.allowed_by = SMCR_CONTROL_SHM,
		.describe = shm_describe,
		.peer_fds = shm_peer_fds,
		.peer_token = shm_peer_token,
	},
	.create_rmb = shm_create_rmb,
	.map_rmb = shm_map_rmb,
	.attach_peer = shm_attach_peer,
	.write = shm_write,
	.read_back = shm_read_back,
	.send_cdc = shm_send_cdc,
	.recv_cdc = shm_recv_cdc,
	.events = shm_events,
	.spin_how = shm_spin_how,
	.wait = shm_wait,
	.wake_channel = shm_wake_channel,
	.arm = shm_arm,
	.wake = shm_wake,
	.release = shm_release,
};
