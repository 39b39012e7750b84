/*
 * smc_rdma_dev.c - the RDMA transport's devices, registered buffer pools
 * and poller thread (smc_rdma_link.h, smc_rdma_priv.h).
 *
 * Why a thread (and not the completion channel as each connection's
 * wake_fd): one CQ serves every connection of a link, so its channel says
 * "something for someone"; each connection's waiters need their own
 * wake-up, and someone must keep reposting receive buffers, accept links
 * and notice rdma_cm disconnects and fatal async events even while the
 * application sleeps in its own epoll_wait.  The thread sleeps in epoll
 * on the rdma_cm channel, each device's async fd and completion channel,
 * and an eventfd for links to free.  A waiter of smc_rdma.c takes no hop
 * through it: it polls the CQ itself while it spins and, asleep, is woken
 * by the completion channel itself (the thread, woken too, takes the
 * event); a poll or epoll on a connection's wake_fd is woken by the thread.
 * Only the thread takes events and frees links, so an event never names a
 * freed one.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>

#include "log.h"
#include "real.h"
#include "smc_rdma_priv.h"

struct smc_rdma_state smc_rdma = {
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
	pthread_mutex_lock(&smc_rdma.lock);
	if (send_slots)
		smc_rdma.send_slots = send_slots;
	if (recv_slots)
		smc_rdma.recv_slots = recv_slots;
	pthread_mutex_unlock(&smc_rdma.lock);
}

static int nonblocking(int fd)
{
	int fl = REAL(fcntl)(fd, F_GETFL);

	return fl < 0 ? -errno : REAL(fcntl)(fd, F_SETFL, fl | O_NONBLOCK) ? -errno : 0;
}

static int watch(int fd, struct poll_src *src)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = src };

	return REAL(epoll_ctl)(smc_rdma.epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

/* Under smc_rdma.lock: our state for the device behind verbs, made on first use. */
struct rdma_dev *smc_rdma_dev_get(struct ibv_context *verbs)
{
	struct rdma_dev *dev;

	for (dev = smc_rdma.devs; dev; dev = dev->next)
		if (dev->verbs == verbs)
			return dev;
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return NULL;
	dev->verbs = verbs;
	dev->iwarp = verbs->device->transport_type == IBV_TRANSPORT_IWARP;
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
	dev->next = smc_rdma.devs;
	smc_rdma.devs = dev;
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

	pthread_mutex_lock(&smc_rdma.lock);
	buf = dev->pool[remote][size_class];
	if (buf) {
		dev->pool[remote][size_class] = buf->next;
		smc_rdma.stats.bufs_in_use++;
	}
	pthread_mutex_unlock(&smc_rdma.lock);
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
				      .lkey = mr->lkey, .rkey = remote ? mr->rkey : 0, .mr = mr,
				      .dev = dev, .remote = remote, .size_class = (uint8_t)size_class };
	pthread_mutex_lock(&smc_rdma.lock);
	smc_rdma.stats.bufs_in_use++;
	smc_rdma.stats.bytes_registered += buf->size;
	pthread_mutex_unlock(&smc_rdma.lock);
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

	pthread_mutex_lock(&smc_rdma.lock);
	buf->next = dev->pool[buf->remote][buf->size_class];
	dev->pool[buf->remote][buf->size_class] = buf;
	smc_rdma.stats.bufs_in_use--;
	pthread_mutex_unlock(&smc_rdma.lock);
}

static void *poller(void *unused)
{
	struct epoll_event ev[16];

	(void)unused;
	for (;;) {
		uint64_t now = smc_clock_ns();
		int timeout = !smc_rdma.rearm_at ? -1 : smc_rdma.rearm_at <= now ? 0 :
			      (int)((smc_rdma.rearm_at - now + 999999) / 1000000);
		int n = REAL(epoll_wait)(smc_rdma.epfd, ev, 16, timeout);

		for (int i = 0; i < n; i++) {
			struct poll_src *src = ev[i].data.ptr;

			switch (src->kind) {
			case K_CM:
				smc_rdma_on_cm_events();
				break;
			case K_ASYNC:
				smc_rdma_on_async_events(src->dev);
				break;
			case K_CQ:
				smc_rdma_on_cq_events(src->dev);
				break;
			default:
				smc_rdma_on_reap();
				break;
			}
		}
		if (smc_rdma.rearm_at && smc_clock_ns() >= smc_rdma.rearm_at)
			smc_rdma_on_rearm();
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
	smc_rdma.cm = IBV(rdma_create_event_channel)();
	smc_rdma.epfd = REAL(epoll_create1)(EPOLL_CLOEXEC);
	smc_rdma.ctl_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (!smc_rdma.cm || smc_rdma.epfd < 0 || smc_rdma.ctl_fd < 0 ||
	    nonblocking(smc_rdma.cm->fd) || watch(smc_rdma.cm->fd, &cm_src) ||
	    watch(smc_rdma.ctl_fd, &ctl_src)) {
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

int smc_rdma_start(void)
{
	pthread_once(&start_once, start);
	return start_err;
}

void smc_rdma_get_stats(struct smc_rdma_stats *out)
{
	pthread_mutex_lock(&smc_rdma.lock);
	*out = smc_rdma.stats;
	pthread_mutex_unlock(&smc_rdma.lock);
	out->cdc_slots_exhausted = atomic_load(&smc_rdma.slots_exhausted);
	out->cdc_unknown_token = atomic_load(&smc_rdma.unknown_token);
}

