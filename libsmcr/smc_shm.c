/*
 * smc_shm.c - the shared-memory transport (smc_shm.h): payload and CDC
 * messages between two processes through each other's memfd.
 *
 * Each side's memfd holds a control area and, on the next page, its RMB:
 *
 *   line 0  header: magic, RMB size        written once by the owner
 *   line 1  CDC mailbox                    written by the peer
 *   line 2  waiting (the futex word)       armed by the owner, cleared by a waker
 *   page 1  the RMB ring                   written by the peer, read by the owner
 *
 * The lines are apart so that the peer's mailbox stores and the owner's
 * arming do not share a cache line (nor the adjacent-line prefetch pair).
 * Writing to the peer is storing into its memfd; the peer's RMB and control
 * area are mapped read-write, ours likewise by the peer.  Nothing read from
 * shared memory is trusted beyond what the receive path validates.
 *
 * The mailbox holds one CDC, the latest: a seqlock (seq odd while the peer
 * writes, +2 per message) around the 44 encoded bytes.  A newer CDC
 * replaces one not yet fetched, and that loses nothing, because a CDC says
 * what the state is, not what changed:
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
 * Waking (readiness.md, mechanism 3: spin, then futex).  A waiter takes a
 * snapshot of events() (mailbox seq plus local wake count), spins up to
 * SPIN_NS for it to move, then sleeps:
 *
 *   waiter: waiting = 1; fence(seq_cst); if events moved: return;
 *           FUTEX_WAIT(waiting, 1)
 *   waker:  store mailbox (or the local wake count); fence(seq_cst);
 *           if waiting && xchg(waiting, 0): FUTEX_WAKE(waiting, all)
 *
 * Why no wakeup is lost:
 *  - The two fences make it the store-buffer pattern: the waiter sees the
 *    new events, or the waker sees waiting == 1, or both.
 *  - The window between the waiter's check and its sleep is closed by the
 *    futex: FUTEX_WAIT sleeps only if the word is still 1, checked under the
 *    futex lock, and the waker clears it before FUTEX_WAKE.
 *  - The snapshot is taken before the caller looks at the state (under its
 *    lock), so a CDC another thread fetched meanwhile still counts.
 *  - Only a waker clears the word.  If a waiter cleared it after finding
 *    news, a second thread already asleep on it would lose its wakeup; a
 *    word left at 1 costs one spare FUTEX_WAKE.
 *  - FUTEX_WAKE wakes all: two threads (a reader and a writer) may sleep on
 *    one word.
 *  - The word starts armed (1): a future waiter outside the library (an
 *    epoll loop woken through an eventfd) may wait before any call of ours.
 *    That costs one FUTEX_WAKE on the peer's first CDC.
 * The futex is not private: the word is in a MAP_SHARED mapping of two
 * processes, each at its own address.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "real.h"
#include "smc_shm.h"

#define SHM_MAGIC	0x534d435253484d31ull	/* "SMCRSHM1" */
#define SHM_LINE	128			/* a cache line pair */
#define SHM_CTL_SIZE	4096u			/* the ring starts on the next page */
#define MBOX_WORDS	((SMC_CDC_MSG_LEN + 7) / 8)

/*
 * 20 us: longer than one cross-CPU futex wakeup on the measured machine
 * (~23 us), so a peer that answers at once is never missed; shorter spins
 * made both sides fall asleep in turn (readiness.md, N=5 us).
 */
#define SPIN_NS		20000

/*
 * A spin that ends empty-handed SPIN_GIVE_UP times in a row means the peer
 * does not answer within it - idle, or sharing our CPU, where every spin
 * only delays it (readiness.md: 46 us against 4.6 us for going straight to
 * sleep).  Then the next SPIN_PAUSE waits sleep at once before spinning is
 * tried again.
 */
#define SPIN_GIVE_UP	4
#define SPIN_PAUSE	64

struct shm_mbox {
	_Atomic uint32_t seq;
	_Atomic uint64_t msg[MBOX_WORDS];	/* the encoded CDC, zero-padded */
};

struct shm_ctl {
	alignas(SHM_LINE) struct {
		uint64_t magic;
		uint32_t rmb_size;
	} hdr;
	alignas(SHM_LINE) struct shm_mbox mbox;
	alignas(SHM_LINE) _Atomic uint32_t waiting;
};

_Static_assert(sizeof(struct shm_ctl) <= SHM_CTL_SIZE, "control area outgrew its page");

struct shm {
	struct shm_ctl *ctl;		/* ours: our mailbox, our futex word, then our RMB */
	size_t len;
	struct shm_ctl *peer_ctl;	/* the peer's */
	uint8_t *peer_rmb;
	size_t peer_len;
	uint32_t fetched;		/* mailbox seq of the last CDC fetched */
	_Atomic uint32_t wakes;		/* wake() calls, part of events() */
	uint64_t spin_ns;		/* 0 on one CPU: spinning would only delay the peer */
	_Atomic uint32_t spin_misses;	/* spins in a row that ended empty-handed */
	_Atomic uint32_t spin_pause;	/* waits left that go straight to sleep */
};

uint64_t smc_shm_region_size(unsigned int size_class)
{
	return SHM_CTL_SIZE + (uint64_t)smc_rmb_size(size_class);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield");
#endif
}

static long futex(_Atomic uint32_t *word, int op, uint32_t val, const struct timespec *timeout)
{
	return syscall(SYS_futex, word, op, val, timeout, NULL, 0);
}

static void wake_word(_Atomic uint32_t *waiting)
{
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(waiting, memory_order_relaxed) &&
	    atomic_exchange_explicit(waiting, 0, memory_order_acq_rel))
		futex(waiting, FUTEX_WAKE, INT_MAX, NULL);
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

static int shm_create_rmb(struct smc_conn *conn, unsigned int size_class, int memfd)
{
	uint64_t len = smc_shm_region_size(size_class);
	struct shm *shm;

	if (size_class > SMC_RMB_MAX_CLASS_D)
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
	shm->spin_ns = sysconf(_SC_NPROCESSORS_ONLN) > 1 ? SPIN_NS : 0;
	memset(shm->ctl, 0, sizeof(*shm->ctl));
	shm->ctl->hdr.magic = SHM_MAGIC;
	shm->ctl->hdr.rmb_size = smc_rmb_size(size_class);
	atomic_store_explicit(&shm->ctl->waiting, 1, memory_order_release);
	conn->priv = shm;
	conn->rmb = (uint8_t *)shm->ctl + SHM_CTL_SIZE;
	conn->rmb_size = smc_rmb_size(size_class);
	return 0;
}

static int shm_attach_peer(struct smc_conn *conn, const struct smc_clc_accept_confirm *peer,
			   int peer_fd)
{
	struct shm *shm = conn->priv;
	unsigned int size_class = peer->d.dmbe_size;
	uint64_t len = smc_shm_region_size(size_class);
	struct shm_ctl *ctl;
	int seals;

	if (peer->smc_type != SMC_TYPE_D || size_class > SMC_RMB_MAX_CLASS_D)
		return -EPROTO;
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
	conn->peer_rmb_size = smc_rmb_size(size_class);
	return 0;
}

static int shm_write(struct smc_conn *conn, uint32_t off, const void *src, uint32_t len)
{
	struct shm *shm = conn->priv;

	if (off > conn->peer_rmb_size || len > conn->peer_rmb_size - off)
		return -EINVAL;
	memcpy(shm->peer_rmb + off, src, len);
	return 0;
}

static int shm_send_cdc(struct smc_conn *conn, const uint8_t msg[SMC_CDC_MSG_LEN])
{
	struct shm *shm = conn->priv;
	struct shm_mbox *mbox = &shm->peer_ctl->mbox;
	uint64_t words[MBOX_WORDS] = { 0 };
	uint32_t seq = atomic_load_explicit(&mbox->seq, memory_order_relaxed);

	memcpy(words, msg, SMC_CDC_MSG_LEN);
	/* a peer that scribbled an odd seq gets an even one back */
	seq &= ~1u;
	atomic_store_explicit(&mbox->seq, seq + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	for (unsigned int i = 0; i < MBOX_WORDS; i++)
		atomic_store_explicit(&mbox->msg[i], words[i], memory_order_relaxed);
	atomic_store_explicit(&mbox->seq, seq + 2, memory_order_release);
	wake_word(&shm->peer_ctl->waiting);
	return 0;
}

static int shm_recv_cdc(struct smc_conn *conn, uint8_t msg[SMC_CDC_MSG_LEN])
{
	struct shm *shm = conn->priv;
	struct shm_mbox *mbox = &shm->ctl->mbox;
	uint64_t words[MBOX_WORDS];
	uint32_t seq;

	do {
		seq = atomic_load_explicit(&mbox->seq, memory_order_acquire);
		/* an odd seq: the peer is mid-write; its last store moves events() */
		if (seq == shm->fetched || (seq & 1))
			return 0;
		for (unsigned int i = 0; i < MBOX_WORDS; i++)
			words[i] = atomic_load_explicit(&mbox->msg[i], memory_order_relaxed);
		atomic_thread_fence(memory_order_acquire);
	} while (atomic_load_explicit(&mbox->seq, memory_order_relaxed) != seq);
	shm->fetched = seq;
	memcpy(msg, words, SMC_CDC_MSG_LEN);
	return 1;
}

static uint32_t shm_events(struct smc_conn *conn)
{
	struct shm *shm = conn->priv;

	return atomic_load_explicit(&shm->ctl->mbox.seq, memory_order_acquire) +
	       atomic_load_explicit(&shm->wakes, memory_order_acquire);
}

/* Spins (while spinning pays, see SPIN_GIVE_UP) until events move past since. */
static bool spin(struct smc_conn *conn, struct shm *shm, uint32_t since)
{
	uint32_t pause = atomic_load_explicit(&shm->spin_pause, memory_order_relaxed);

	if (!shm->spin_ns)
		return false;
	if (pause) {
		atomic_store_explicit(&shm->spin_pause, pause - 1, memory_order_relaxed);
		return false;
	}
	for (uint64_t end = smc_clock_ns() + shm->spin_ns; shm_events(conn) == since;) {
		if (smc_clock_ns() >= end) {
			if (atomic_fetch_add_explicit(&shm->spin_misses, 1, memory_order_relaxed) + 1 >=
			    SPIN_GIVE_UP) {
				atomic_store_explicit(&shm->spin_misses, 0, memory_order_relaxed);
				atomic_store_explicit(&shm->spin_pause, SPIN_PAUSE, memory_order_relaxed);
			}
			return false;
		}
		cpu_relax();
	}
	atomic_store_explicit(&shm->spin_misses, 0, memory_order_relaxed);
	return true;
}

static int shm_wait(struct smc_conn *conn, uint32_t since, int timeout_ms)
{
	struct shm *shm = conn->priv;
	struct timespec ts = { .tv_sec = timeout_ms / 1000, .tv_nsec = timeout_ms % 1000 * 1000000L };

	if (spin(conn, shm, since) || shm_events(conn) != since)
		return 0;
	if (timeout_ms == 0)
		return -ETIMEDOUT;
	atomic_store_explicit(&shm->ctl->waiting, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
	if (shm_events(conn) != since)
		return 0;
	if (futex(&shm->ctl->waiting, FUTEX_WAIT, 1, timeout_ms < 0 ? NULL : &ts) == 0 ||
	    errno == EAGAIN)
		return 0;
	return -errno;
}

static void shm_wake(struct smc_conn *conn)
{
	struct shm *shm = conn->priv;

	atomic_fetch_add_explicit(&shm->wakes, 1, memory_order_relaxed);
	wake_word(&shm->ctl->waiting);
}

static void shm_release(struct smc_conn *conn)
{
	struct shm *shm = conn->priv;

	if (shm->peer_ctl)
		munmap(shm->peer_ctl, shm->peer_len);
	munmap(shm->ctl, shm->len);
	free(shm);
	conn->priv = NULL;
	conn->rmb = NULL;
}

const struct smc_transport_ops smc_shm_ops = {
	.name = "shm",
	.create_rmb = shm_create_rmb,
	.attach_peer = shm_attach_peer,
	.write = shm_write,
	.send_cdc = shm_send_cdc,
	.recv_cdc = shm_recv_cdc,
	.events = shm_events,
	.wait = shm_wait,
	.wake = shm_wake,
	.release = shm_release,
};
