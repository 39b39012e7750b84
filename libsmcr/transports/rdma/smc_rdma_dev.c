/*
 * smc_rdma_dev.c - the RDMA transport's devices, buffer pools and poller
 * thread (smc_rdma_link.h, smc_rdma_priv.h).
 *
 * Buffers and keys: a peer process may write, through its link's QP, any
 * memory registered for remote write in that QP's protection domain whose
 * rkey it knows or guesses (rxe's rkeys are a table index and 8 random
 * bits).  So every link has a PD of its own (smc_rdma_link.c), and a
 * connection's RMB and staging buffer are registered in its link's PD when
 * it binds to the link, and deregistered when it lets them go, before they
 * go back to the pool: an rkey sent in one Accept or Confirm dies with its
 * connection, and never reaches a buffer that another link's peer, or a
 * later connection, writes.  (An RMB the peer may still be writing when
 * its connection goes is retired first, still registered and unused:
 * smc_rdma_link_retire.)  The pools keep the memory (mapped and
 * populated once), not its registration: a registration per connection
 * (ibv_reg_mr and ibv_dereg_mr of at most a few hundred pages, tens of
 * microseconds on rxe) is small beside the CLC exchange's round trips, and
 * simpler than pools per link, which would strand memory on every link and
 * need the link before create_rmb knows it.  A buffer whose deregistration
 * fails is never used again: its key may still work.
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
 * freed one.  Its epoll_wait times out when a CQ is due to be armed again
 * or the next idle link is due.  What it does for each kind of descriptor
 * is given by the layers above when they start it (struct
 * smc_rdma_poller_ops): this file knows devices, not links.
 *
 * fork(): the child has the parent's links, devices and listeners in its
 * memory and their descriptors in its table, but no poller, and the
 * queue pairs, CQs and memory regions are the parent's: a verb on them
 * from the child (destroying one included) would act on the parent's
 * through the descriptors both share.  So the child's handler only
 * forgets: it marks every inherited endpoint down, closes the child's
 * copies of the transport's own descriptors (epoll, eventfd, rdma_cm
 * channel, our verbs contexts and completion channels: the files stay
 * open in the parent, and its objects go when it exits), leaks the memory,
 * and lets the first use start everything anew, on verbs contexts of its
 * own (smc_rdma_priv.h says why not librdmacm's).  The handlers are
 * registered when the transport starts, after libsmcr's own (init.c): in
 * the child those run first, and must not call into the transport (before
 * this one, the parent's links still look like the child's).  Before the
 * fork the handler takes the transport's locks, and every link's, so that
 * the child's copies are not held by a thread it lacks.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "log.h"
#include "real.h"
#include "smc_rdma_priv.h"
#include "sys.h"

struct smc_rdma_state smc_rdma = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.changed = PTHREAD_COND_INITIALIZER,
	.send_slots = 256,
	.recv_slots = 256,
};

#define IDLE_MS_DEFAULT	30000

static struct poll_src cm_src = { .kind = P_CM }, ctl_src = { .kind = P_REAP };
static const struct smc_rdma_poller_ops *poller_ops;	/* set once, before the poller runs */
static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;	/* the three below */
static bool started;
static int start_err;
/* The links whose locks a fork holds: between its handlers, under start_lock. */
static struct smc_rdma_link **held;
static size_t nheld;

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

	return REAL(epoll_ctl)(smcr_sys_kept(&smc_rdma.epfd), EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

/*
 * A descriptor the verbs libraries keep in *where (an ibv_context's, a
 * channel's: public fields they read at each use), made one of ours
 * (base/sys.h): moved out of the application's way, kept there, so that an
 * application's closefrom or close_range leaves it open and a dup2 onto
 * its number moves it.
 */
static void own_library_fd(int *where)
{
	*where = smcr_sys_fd_aside(*where);
	smcr_sys_fd_keep(where);
}

/* Under smc_rdma.lock: our state for the device behind verbs, made on first use. */
struct rdma_dev *smc_rdma_dev_get(struct ibv_context *verbs)
{
	struct rdma_dev *dev;

	for (dev = smc_rdma.devs; dev; dev = dev->next)
		if (dev->cm_verbs == verbs || dev->verbs == verbs)
			return dev;
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return NULL;
	dev->cm_verbs = verbs;
	dev->gen = atomic_load(&smc_rdma.gen);
	dev->iwarp = verbs->device->transport_type == IBV_TRANSPORT_IWARP;
	dev->async_src = (struct poll_src){ .kind = P_ASYNC, .dev = dev };
	dev->cq_src = (struct poll_src){ .kind = P_CQ, .dev = dev };
	dev->verbs = IBV(ibv_open_device)(verbs->device);
	dev->chan = dev->verbs ? IBV(ibv_create_comp_channel)(dev->verbs) : NULL;
	if (dev->chan) {
		own_library_fd(&dev->chan->fd);
		own_library_fd(&dev->verbs->async_fd);
		own_library_fd(&dev->verbs->cmd_fd);
		own_library_fd(&verbs->async_fd);       /* librdmacm's context of the device */
		own_library_fd(&verbs->cmd_fd);
	}
	if (!dev->chan || nonblocking(dev->chan->fd) || nonblocking(dev->verbs->async_fd) ||
	    watch(dev->verbs->async_fd, &dev->async_src) || watch(dev->chan->fd, &dev->cq_src)) {
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
 * peer write into what we send.  What a pool holds is memory, not yet
 * registered (the header comment).
 */
static struct smc_rdma_buf *buf_get(struct rdma_dev *dev, unsigned int size_class, bool remote)
{
	struct smc_rdma_buf *buf;
	void *mem;

	pthread_mutex_lock(&smc_rdma.lock);
	buf = dev->pool[remote][size_class];
	if (buf)
		dev->pool[remote][size_class] = buf->next;
	pthread_mutex_unlock(&smc_rdma.lock);
	if (buf) {
		smcr_stat_add(rdma.buffers_out, 1);
		return buf;
	}
	buf = calloc(1, sizeof(*buf));
	mem = mmap(NULL, smc_rmb_size(size_class), PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (!buf || mem == MAP_FAILED) {
		if (mem != MAP_FAILED)
			munmap(mem, smc_rmb_size(size_class));
		free(buf);
		return NULL;
	}
	*buf = (struct smc_rdma_buf){ .mem = mem, .size = smc_rmb_size(size_class), .dev = dev,
				      .remote = remote, .size_class = (uint8_t)size_class };
	smcr_stat_add(rdma.buffers_out, 1);
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

int smc_rdma_buf_register(struct smc_rdma_buf *buf, struct smc_rdma_link *link)
{
	int access = IBV_ACCESS_LOCAL_WRITE | (buf->remote ? IBV_ACCESS_REMOTE_WRITE : 0);

	if (buf->mr || link->dev != buf->dev)
		return -EINVAL;
	buf->mr = IBV(ibv_reg_mr)(link->pd, buf->mem, buf->size, access);
	if (!buf->mr)
		return errno ? -errno : -ENOMEM;
	buf->lkey = buf->mr->lkey;
	buf->rkey = buf->remote ? buf->mr->rkey : 0;
	smcr_stat_add(rdma.bytes_registered, buf->size);
	return 0;
}

bool smc_rdma_buf_unregister(struct smc_rdma_buf *buf)
{
	int err = buf->mr ? IBV(ibv_dereg_mr)(buf->mr) : 0;

	if (err) {
		smcr_log(SMCR_LOG_ERROR, "rdma: cannot deregister a buffer (%s): never used again",
			 strerror(err));
		return false;
	}
	buf->mr = NULL;
	buf->lkey = buf->rkey = 0;
	return true;
}

void smc_rdma_buf_put(struct smc_rdma_buf *buf)
{
	struct rdma_dev *dev = buf->dev;

	if (smc_rdma_foreign(dev->gen))
		return;			/* registered in the parent's PD: leaked */
	if (!smc_rdma_buf_unregister(buf))
		return;			/* its key may still write it: leaked */
	pthread_mutex_lock(&smc_rdma.lock);
	buf->next = dev->pool[buf->remote][buf->size_class];
	dev->pool[buf->remote][buf->size_class] = buf;
	pthread_mutex_unlock(&smc_rdma.lock);
	smcr_stat_add(rdma.buffers_back, 1);
}

static void *poller(void *unused)
{
	struct epoll_event ev[16];

	(void)unused;
	for (;;) {
		int rearm = smc_rdma.rearm_at ? smc_ms_until(smc_rdma.rearm_at) : -1;
		int idle = poller_ops->idle();
		int n = REAL(epoll_wait)(smcr_sys_kept(&smc_rdma.epfd), ev, 16,
					 rearm < 0 ? idle : idle < 0 || rearm < idle ? rearm : idle);

		for (int i = 0; i < n; i++) {
			struct poll_src *src = ev[i].data.ptr;

			poller_ops->ready[src->kind](src->dev);
		}
		if (smc_rdma.rearm_at && smc_clock_ns() >= smc_rdma.rearm_at)
			poller_ops->rearm();
	}
	return NULL;
}

/* SMCR_RDMA_LINK_IDLE_MS, or the default. */
static unsigned int idle_ms(void)
{
	const char *env = getenv("SMCR_RDMA_LINK_IDLE_MS");
	char *end;
	unsigned long v;

	if (!env || !*env)
		return IDLE_MS_DEFAULT;
	errno = 0;
	v = strtoul(env, &end, 10);
	if (*end || errno || v > INT_MAX) {
		smcr_log(SMCR_LOG_WARN, "rdma: SMCR_RDMA_LINK_IDLE_MS=%s is no number of ms: %u",
			 env, IDLE_MS_DEFAULT);
		return IDLE_MS_DEFAULT;
	}
	return (unsigned int)v;
}

/* Takes every lock of the transport's, so that the child's copies are free. */
void smc_rdma_fork_prepare(void)
{
	struct smc_rdma_link *link;
	size_t n = 0;

	pthread_mutex_lock(&start_lock);
	pthread_mutex_lock(&smc_rdma.lock);
	for (link = smc_rdma.links; link; link = link->next)
		n++;
	held = n ? calloc(n, sizeof(*held)) : NULL;
	nheld = 0;
	for (link = smc_rdma.links; held && link; link = link->next) {
		link->refs++;		/* stays while its locks are taken unlocked */
		held[nheld++] = link;
	}
	pthread_mutex_unlock(&smc_rdma.lock);
	/* in the order of smc_rdma_link.c: CQ locks, link locks, then smc_rdma.lock */
	for (size_t i = 0; i < nheld; i++)
		pthread_mutex_lock(&held[i]->cq_lock);
	for (size_t i = 0; i < nheld; i++)
		pthread_mutex_lock(&held[i]->lock);
	pthread_mutex_lock(&smc_rdma.lock);
}

void smc_rdma_fork_parent(void)
{
	for (size_t i = 0; i < nheld; i++) {
		pthread_mutex_unlock(&held[i]->lock);
		pthread_mutex_unlock(&held[i]->cq_lock);
		if (--held[i]->refs == 0)
			poller_ops->reap_later(held[i]);
	}
	pthread_mutex_unlock(&smc_rdma.lock);
	free(held);
	held = NULL;
	pthread_mutex_unlock(&start_lock);
}

/* In the child: the parent's link, and the child's views of its connections, are down. */
static void forget(struct smc_rdma_link *link)
{
	atomic_store(&link->state, LINK_DEAD);
	for (struct smc_rdma_endpoint *ep = link->eps; ep; ep = ep->next)
		ep->ops->forgotten(ep);
}

/* The child's only thread: forgets the parent's RDMA state (the header comment). */
void smc_rdma_fork_child(void)
{
	atomic_fetch_add(&smc_rdma.gen, 1);
	for (struct smc_rdma_link *link = smc_rdma.links; link; link = link->next)
		forget(link);
	for (size_t i = 0; i < nheld; i++) {
		/* one that failed since before_fork listed it may not have told its endpoints */
		forget(held[i]);
		pthread_mutex_unlock(&held[i]->lock);
		pthread_mutex_unlock(&held[i]->cq_lock);
	}
	free(held);
	held = NULL;
	if (started && !start_err) {
		smcr_sys_close_kept(&smc_rdma.epfd);
		smcr_sys_close_kept(&smc_rdma.ctl_fd);
		smcr_sys_close_kept(&smc_rdma.cm->fd);
		for (struct rdma_dev *dev = smc_rdma.devs; dev; dev = dev->next) {
			smcr_sys_close_kept(&dev->chan->fd);
			smcr_sys_close_kept(&dev->verbs->async_fd);
			smcr_sys_close_kept(&dev->verbs->cmd_fd);
		}
	}
	smc_rdma.cm = NULL;
	smc_rdma.epfd = smc_rdma.ctl_fd = -1;
	smc_rdma.devs = NULL;
	smc_rdma.listeners = NULL;
	smc_rdma.links = smc_rdma.reap = NULL;
	smc_rdma.connecting = NULL;     /* its threads are the parent's */
	smc_rdma.retired = NULL;	/* registered in the parent's PDs: leaked */
	started = false;
	start_err = 0;
	atomic_store(&smc_rdma.client_prepared, false);	/* the child starts anew */
	atomic_store(&smc_rdma.client_ready, false);
	pthread_mutex_unlock(&smc_rdma.lock);
	pthread_mutex_unlock(&start_lock);
}

/*
 * Registered memory is locked memory: siw counts it against
 * RLIMIT_MEMLOCK even for root, and Debian's 8 MiB soft limit is a dozen
 * connections.  The soft limit goes up to the hard one (what rsockets and
 * libvma ask their users to do by hand).
 */
static void raise_memlock(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_MEMLOCK, &rl);
	}
}

/* Under start_lock. */
static int start(void)
{
	const char *why;
	sigset_t all, old;
	pthread_t thread;
	int rc = smc_ibv_load(&why);

	if (rc) {
		smcr_log(SMCR_LOG_INFO, "rdma: %s", why);
		return rc;
	}
	raise_memlock();
	smc_rdma.idle_ms = idle_ms();
	smc_rdma.cm = IBV(rdma_create_event_channel)();
	smc_rdma.epfd = smcr_sys_fd_aside(REAL(epoll_create1)(EPOLL_CLOEXEC));
	smc_rdma.ctl_fd = smcr_sys_fd_aside(smcr_sys_eventfd());
	smcr_sys_fd_keep(&smc_rdma.epfd);
	smcr_sys_fd_keep(&smc_rdma.ctl_fd);
	if (smc_rdma.cm)
		own_library_fd(&smc_rdma.cm->fd);
	if (!smc_rdma.cm || smc_rdma.epfd < 0 || smc_rdma.ctl_fd < 0 ||
	    nonblocking(smc_rdma.cm->fd) || watch(smc_rdma.cm->fd, &cm_src) ||
	    watch(smc_rdma.ctl_fd, &ctl_src)) {
		smcr_log(SMCR_LOG_INFO, "rdma: no rdma_cm (%s): no RDMA device", strerror(errno));
		return -ENODEV;
	}
	/* the application's signals are not for this thread */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = -pthread_create(&thread, NULL, poller, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!rc)
		pthread_detach(thread);
	return rc;
}

int smc_rdma_start(const struct smc_rdma_poller_ops *ops)
{
	int rc;

	pthread_mutex_lock(&start_lock);
	if (!started) {
		poller_ops = ops;
		start_err = start();
		started = true;
	}
	rc = start_err;
	pthread_mutex_unlock(&start_lock);
	return rc;
}
