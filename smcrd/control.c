/*
 * control.c - smcrd's side of the control socket.
 *
 * Each connected process is a client: who it is comes from SO_PEERCRED (not
 * from anything it says), what it holds is counted here.  When its
 * connection ends - normal exit, crash or SIGKILL alike, since the kernel
 * closes the socket - every grant it held is returned to the pool.
 * A client that sends a malformed request is disconnected; one that does not
 * read its replies is too (replies are never allowed to block smcrd).  A
 * user has at most max_processes_per_user clients, and its processes' grants
 * stay within its quotas (quota.h); what its clients make smcrd log is
 * rationed (smcrd_log_client).
 *
 * Requests may carry descriptors (SCM_RIGHTS): exactly as many as their type
 * takes, all closed once the request is served, whatever became of it, by
 * the closer (closer.h); a client that sends any other number is malformed.
 * While the closer has no room for one more message's descriptors, no
 * request is read.  That is what keeps smcrd's descriptor count flat
 * however its clients behave.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "control.h"
#include "closer.h"
#include "conns.h"
#include "control_proto.h"
#include "control_request.h"
#include "daemon.h"
#include "pidfd.h"
#include "quota.h"
#include "ration.h"
#include "smcrd_log.h"

#define PEAK_SAMPLE_MS 1000     /* how often the open connections are counted, while any are */
#define RECHECK_MS 50           /* how often, and ... */
#define RECHECK_ROUNDS 10       /* ... how many times the broker's suspects are looked at */

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int smcrd_control_open(struct smcrd_control *ctl)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	*ctl = (struct smcrd_control){ .listen_fd = -1, .spare_fd = -1 };
	smcrd_shm_broker_init(&ctl->shm);
	smcrd_stats_init(&ctl->stats);
	if (snprintf(ctl->path, sizeof(ctl->path), "%s/%s", smcr_rundir(),
		     SMCR_CONTROL_SOCKET) >= (int)sizeof(sa.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(sa.sun_path, ctl->path, strlen(ctl->path) + 1);
	ctl->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (ctl->listen_fd < 0)
		return -1;
	unlink(ctl->path);              /* left by a killed smcrd: we hold the pid lock */
	/* every user may connect: the socket is made 0666, not changed by name after */
	mode_t umask_was = umask(0111);
	int bound = bind(ctl->listen_fd, (struct sockaddr *)&sa, sizeof(sa));

	umask(umask_was);
	if (bound || listen(ctl->listen_fd, 128)) {
		int saved_errno = errno;
		close(ctl->listen_fd);
		ctl->listen_fd = -1;
		errno = saved_errno;
		return -1;
	}
	ctl->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	return 0;
}

/* The one place where buffer memory returns to the pool. */
static void give_back(struct smcrd_control *ctl, struct smcrd_client *c, uint64_t bytes)
{
	bytes = bytes < c->granted ? bytes : c->granted;
	c->granted -= bytes;
	ctl->used -= bytes;
}

/*
 * c's survivors that closed since last looked at: their bytes go back (the
 * connections' own WITHDRAW and RELEASE name grants of the smcrd before).
 */
static void settle_survivors(struct smcrd_control *ctl, struct smcrd_client *c)
{
	uint64_t held;

	if (!c->carried)
		return;
	held = c->stats ? smcrd_survivors_held(&c->survivors, c->stats) : 0;
	if (!c->stats)
		smcrd_survivors_free(&c->survivors);
	if (held >= c->carried)
		return;
	give_back(ctl, c, c->carried - held);
	c->carried = held;
}

static void settle_all_survivors(struct smcrd_control *ctl)
{
	for (size_t i = 0; i < ctl->nclients; i++)
		settle_survivors(ctl, &ctl->clients[i]);
}

/*
 * What RELEASE may give back of c's grants: not what its offers hold
 * (WITHDRAW returns that), nor its survivors (they return as they close).
 */
static uint64_t releasable(const struct smcrd_client *c)
{
	uint64_t kept = c->offered + c->carried;

	return c->granted > kept ? c->granted - kept : 0;
}

static struct smcrd_client *client_by_id(struct smcrd_control *ctl, uint64_t id)
{
	for (size_t i = 0; i < ctl->nclients; i++)
		if (ctl->clients[i].id == id)
			return &ctl->clients[i];
	return NULL;
}

struct charge_move {
	struct smcrd_control *ctl;
	struct smcrd_client *from;
};

/* An offer of a client that went passes to another process holding its socket. */
static void offer_moved(void *ctx, uint64_t to, uint64_t bytes)
{
	struct charge_move *move = ctx;
	struct smcrd_client *c = client_by_id(move->ctl, to);

	if (!c)
		return;
	move->from->offered -= bytes;
	move->from->granted -= bytes;
	c->offered += bytes;
	c->granted += bytes;
}

/* An offer ended: its bytes go back from the process that owns it (if one does). */
static void offer_ended(void *ctx, uint64_t owner, uint64_t bytes)
{
	struct smcrd_control *ctl = ctx;
	struct smcrd_client *o = owner ? client_by_id(ctl, owner) : NULL;

	if (o) {
		o->offered -= bytes;
		give_back(ctl, o, bytes);
	}
}

/* c's statistics region is not read again, nor counted when c leaves. */
static void forget_region(struct smcrd_client *c)
{
	smcrd_stats_forget(c->stats);
	c->stats = NULL;
	smcrd_close_later(c->stats_fd);
	c->stats_fd = -1;
}

/*
 * Forgets c's statistics region if c punched holes in it since it
 * registered: reading it all would fill them, in smcrd's memory.
 */
static void check_region(struct smcrd_client *c)
{
	if (!c->stats || smcrd_stats_whole(c->stats_fd))
		return;
	smcrd_log_client(c->uid, LOG_WARNING, "process %d (%s) punched holes in its statistics: "
			 "no longer counted", (int)c->pid, c->comm);
	forget_region(c);
}

/* Before the figures are shown: regions with holes forgotten, survivors that closed settled. */
static void check_regions(struct smcrd_control *ctl)
{
	for (size_t i = 0; i < ctl->nclients; i++)
		check_region(&ctl->clients[i]);
	settle_all_survivors(ctl);
}

static void drop_client(struct smcrd_control *ctl, size_t i)
{
	struct smcrd_client *c = &ctl->clients[i];

	if (c->registered) {
		smcrd_log(LOG_INFO, "process %d (%s) left; %llu bytes of buffer memory returned",
			  (int)c->pid, c->comm, (unsigned long long)c->granted);
		check_region(c);
		smcrd_stats_exited(&ctl->stats, c->stats);
	}
	if (c->stats)
		smcrd_close_later(c->stats_fd);
	/* it may have been the last holder: its socket is gone now, or very soon */
	smcrd_shm_sweep(&ctl->shm, c->id, offer_ended, ctl);
	ctl->recheck_rounds = RECHECK_ROUNDS;   /* ends at once if it left no suspect */
	ctl->recheck_at_ms = now_ms() + RECHECK_MS;
	smcrd_shm_drop_owner(&ctl->shm, c->id, offer_moved,
			     &(struct charge_move){ .ctl = ctl, .from = c });
	give_back(ctl, c, c->granted);
	smcrd_survivors_free(&c->survivors);
	close(c->pidfd);                /* ours, not a client's: no close to wait on */
	smcrd_close_later(c->fd);       /* descriptors may be queued unread on it */
	ctl->clients[i] = ctl->clients[--ctl->nclients];
}

void smcrd_control_close(struct smcrd_control *ctl)
{
	while (ctl->nclients)
		drop_client(ctl, ctl->nclients - 1);
	free(ctl->clients);
	smcrd_shm_broker_close(&ctl->shm);
	if (ctl->listen_fd >= 0) {
		close(ctl->listen_fd);
		unlink(ctl->path);
	}
	if (ctl->spare_fd >= 0)
		close(ctl->spare_fd);
	*ctl = (struct smcrd_control){ .listen_fd = -1, .spare_fd = -1 };
}

size_t smcrd_control_npoll(const struct smcrd_control *ctl)
{
	return 1 + ctl->nclients;
}

void smcrd_control_pollfds(const struct smcrd_control *ctl, struct pollfd *pfd)
{
	/*
	 * A request may bring as many descriptors as a message carries: with no
	 * room for them in the closer's queue, requests wait in the kernel
	 * (counted against their senders) until the closer catches up.
	 */
	short requests = smcrd_closer_has_room(SMCRD_REQUEST_MAX_FDS) ? POLLIN : 0;

	/* Out of descriptors: the listener would stay readable, and poll() never sleep. */
	pfd[0] = (struct pollfd){ .fd = ctl->listen_fd, .events = ctl->spare_fd >= 0 ? POLLIN : 0 };
	for (size_t i = 0; i < ctl->nclients; i++)
		pfd[1 + i] = (struct pollfd){ .fd = ctl->clients[i].fd, .events = requests };
}

/*
 * Out of descriptors, a pending connection stays readable and poll() would
 * wake us forever: take it with the spare descriptor and let it go, so the
 * client sees smcrd refuse (and falls back to TCP) instead of smcrd spinning.
 * The spare comes back once a descriptor is free again; until then
 * the listener is not polled (smcrd_control_pollfds, smcrd_control_timeout).
 */
static bool refuse_one(struct smcrd_control *ctl)
{
	close(ctl->spare_fd);
	int fd = accept4(ctl->listen_fd, NULL, NULL, SOCK_CLOEXEC);
	if (fd >= 0) {
		smcrd_close_later(fd);
		smcrd_log(LOG_WARNING, "out of descriptors: a process could not register");
	}
	ctl->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	return fd >= 0 && ctl->spare_fd >= 0;   /* accept() fails for want of a descriptor
						   before it looks */
}

/* The live processes' counters summed into *live, and their open connections. */
static uint64_t sum_live(const struct smcrd_control *ctl, struct smcr_stats_counts *live)
{
	uint64_t connections = 0;

	if (live)
		memset(live, 0, sizeof(*live));
	for (size_t i = 0; i < ctl->nclients; i++) {
		const struct smcr_stats *s = ctl->clients[i].stats;
		if (!s)
			continue;
		if (live)
			smcr_stats_accumulate(live, s);
		connections += smcrd_stats_connections(s);
	}
	return connections;
}

int smcrd_control_timeout(const struct smcrd_control *ctl)
{
	if (ctl->spare_fd < 0)
		return 100;             /* ms: then try to take the spare back */
	if (ctl->recheck_rounds) {
		uint64_t now = now_ms();
		return ctl->recheck_at_ms > now ? (int)(ctl->recheck_at_ms - now) : 0;
	}
	/* connections open: look at their number now and then, for the peak */
	return sum_live(ctl, NULL) ? PEAK_SAMPLE_MS : -1;
}

/* When due, looks again at the offers whose holder left while their socket stood. */
static void recheck_suspects(struct smcrd_control *ctl)
{
	if (!ctl->recheck_rounds || now_ms() < ctl->recheck_at_ms)
		return;
	if (!smcrd_shm_sweep_suspects(&ctl->shm, offer_ended, ctl) || --ctl->recheck_rounds == 0) {
		smcrd_shm_clear_suspects(&ctl->shm);    /* held on elsewhere: a refused grant looks */
		ctl->recheck_rounds = 0;
		return;
	}
	ctl->recheck_at_ms = now_ms() + RECHECK_MS;
}

/*
 * Whether a client of cred's user may be served; if not, tells it why and
 * lets it go: its REGISTER, sent or not yet, gets this as its reply
 * (libsmcr reads it even once its send fails for the hang-up).
 */
static bool admitted(const struct smcrd_control *ctl, int fd, const struct ucred *cred,
		     int pidfd, const struct smcrd_limits *l)
{
	struct smcr_control_msg m = { .version = SMCR_CONTROL_VERSION,
				      .type = SMCR_CONTROL_REGISTER, .result = -EUSERS };
	char comm[SMCR_COMM_LEN];

	if (smcrd_quota_admits(ctl->clients, ctl->nclients, cred->uid, l, m.text, sizeof(m.text)))
		return true;
	(void)!send(fd, &m, sizeof(m), MSG_DONTWAIT | MSG_NOSIGNAL);
	smcrd_close_later(fd);
	smcrd_pidfd_comm(cred->pid, pidfd, comm, sizeof(comm));
	close(pidfd);
	smcrd_log_client(cred->uid, LOG_WARNING, "process %d (%s) refused: %s", (int)cred->pid,
			 comm, m.text);
	return false;
}

static void accept_clients(struct smcrd_control *ctl, const struct smcrd_limits *l)
{
	for (;;) {
		int fd = accept4(ctl->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0 && (errno == EMFILE || errno == ENFILE) && ctl->spare_fd >= 0 &&
		    refuse_one(ctl))
			continue;
		if (fd < 0)
			return;                 /* EAGAIN, or a client gone before we took it */
		struct ucred cred;
		socklen_t len = sizeof(cred);
		int pidfd = -1;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len)) {
			smcrd_close_later(fd);
			continue;
		}
		if ((pidfd = smcrd_pidfd_of_peer(fd, cred.pid)) < 0) {
			smcrd_log_client(cred.uid, LOG_NOTICE, "process %d has exited: its control "
					 "connection refused", (int)cred.pid);
			smcrd_close_later(fd);
			continue;
		}
		if (!admitted(ctl, fd, &cred, pidfd, l))
			continue;
		if (ctl->nclients == ctl->capacity) {
			size_t cap = ctl->capacity ? ctl->capacity * 2 : 16;
			void *grown = realloc(ctl->clients, cap * sizeof(*ctl->clients));
			if (!grown) {
				close(pidfd);
				smcrd_close_later(fd);
				continue;
			}
			ctl->clients = grown;
			ctl->capacity = cap;
		}
		struct smcrd_client *c = &ctl->clients[ctl->nclients++];
		*c = (struct smcrd_client){ .fd = fd, .id = ++ctl->next_id, .pid = cred.pid,
					    .pidfd = pidfd, .uid = cred.uid, .stats_fd = -1 };
		smcrd_pidfd_comm(c->pid, c->pidfd, c->comm, sizeof(c->comm));
	}
}

/* Sends a reply with nfds descriptors attached; false if the client must go. */
static bool reply(const struct smcrd_client *c, const void *msg, size_t len, const int *fds,
		  size_t nfds)
{
	union smcr_control_cmsg room;
	struct iovec iov = { (void *)msg, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	smcr_control_attach_fds(&mh, &room, fds, nfds);
	return sendmsg(c->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)len;
}

/* Whether c may hold bytes more, under max_memory and the quotas; else why (size 0: not said). */
static bool fits(const struct smcrd_control *ctl, const struct smcrd_client *c, uint64_t bytes,
		 const struct smcrd_limits *l, char *why, size_t size)
{
	if (bytes > l->memory - ctl->used || ctl->used > l->memory) {
		snprintf(why, size, "max_memory reached: %llu of %llu bytes in use",
			 (unsigned long long)ctl->used, (unsigned long long)l->memory);
		return false;
	}
	return smcrd_quota_allows(ctl->clients, ctl->nclients, c, bytes, l, why, size);
}

/*
 * Charges bytes to c, if max_memory and the quotas allow, once the offers
 * whose last holder left without withdrawing them have ended; else says
 * why in m (-ENOMEM, whichever limit it is).
 */
static bool grant(struct smcrd_control *ctl, struct smcrd_client *c, uint64_t bytes,
		  const struct smcrd_limits *l, struct smcr_control_msg *m)
{
	if (!fits(ctl, c, bytes, l, NULL, 0))
		settle_all_survivors(ctl);
	if (!fits(ctl, c, bytes, l, NULL, 0) && smcrd_shm_sweep(&ctl->shm, 0, offer_ended, ctl))
		smcrd_log(LOG_INFO, "offers of closed sockets ended: %llu bytes in use",
			  (unsigned long long)ctl->used);
	if (!fits(ctl, c, bytes, l, m->text, sizeof(m->text))) {
		m->result = -ENOMEM;
		return false;
	}
	ctl->used += bytes;
	c->granted += bytes;
	if (ctl->used > ctl->peak_used)
		ctl->peak_used = ctl->used;
	return true;
}

/* m's answer: no descriptor left to take or send (libsmcr says SMCRDFULL). */
static void say_short_of_descriptors(struct smcr_control_msg *m)
{
	m->result = -EMFILE;
	snprintf(m->text, sizeof(m->text), "smcrd is short of descriptors");
}

/*
 * in: the TCP socket, the memfd, the channel, the state.  Checks, charges
 * and records the offer, which keeps in[1..4].
 */
static void offer(struct smcrd_control *ctl, struct smcrd_client *c, struct smcr_control_msg *m,
		  int *in, const struct smcrd_limits *l)
{
	struct smcrd_shm_offer o;

	m->result = smcrd_shm_check(&o, in, m->bytes, m->text, sizeof(m->text));
	if (m->result || !grant(ctl, c, o.bytes, l, m))
		return;
	m->result = smcrd_shm_add(&ctl->shm, &o, in, c->id, &m->token);
	if (!m->result)
		c->offered += o.bytes;
	if (m->result) {
		give_back(ctl, c, o.bytes);
		snprintf(m->text, sizeof(m->text), "%s", m->result == -EMFILE ?
			 "too many buffers are offered" : strerror(-m->result));
		return;
	}
	smcrd_log(LOG_DEBUG, "process %d (%s) offers %llu bytes as buffer %016llx", (int)c->pid,
		  c->comm, (unsigned long long)o.bytes, (unsigned long long)m->token);
}

/*
 * in: the TCP socket.  fds: the buffer and the owner's channel's tx to send, if
 * the socket proves the peer.
 */
static void attach(struct smcrd_control *ctl, const struct smcrd_client *c,
		   struct smcr_control_msg *m, int sock, int fds[2])
{
	m->result = smcrd_shm_attach(&ctl->shm, &m->token, sock, fds);
	if (m->result == -EMFILE) {
		say_short_of_descriptors(m);
	} else if (m->result) {
		/* The reason stays here: the asker may be probing (see shm_broker.c). */
		snprintf(m->text, sizeof(m->text), "no such buffer for this connection");
		smcrd_log(LOG_INFO, "process %d (%s) refused buffer %016llx", (int)c->pid,
			  c->comm, (unsigned long long)m->token);
	}
}

/* in: a TCP socket.  fds: what was offered on it and on its other end, if anything. */
static void resume(struct smcrd_control *ctl, struct smcrd_client *c,
		   struct smcr_control_msg *m, int sock, int *fds, size_t *nfds)
{
	uint64_t adopted = 0;

	m->result = smcrd_shm_resume(&ctl->shm, sock, c->id, &m->token, &adopted, fds, nfds);
	if (m->result)
		return;
	/* an offer whose owner went while others held its socket: charged here now */
	c->offered += adopted;
	c->granted += adopted;
	ctl->used += adopted;
	smcrd_log(LOG_DEBUG, "process %d (%s) resumes buffer %016llx", (int)c->pid, c->comm,
		  (unsigned long long)m->token);
}

/* Ends an offer, its bytes returned to the process that owns it. */
static void withdraw(struct smcrd_control *ctl, struct smcrd_client *c, uint64_t token, int sock)
{
	uint64_t owner = 0, bytes = smcrd_shm_withdraw(&ctl->shm, token, c->id, sock, &owner);

	if (bytes)
		offer_ended(ctl, owner, bytes);
}

/* What a process's region says of it, for the status's process list. */
static void describe_traffic(const struct smcr_stats *s, struct smcr_control_proc *p)
{
	struct smcr_stats_counts c = { 0 };

	smcr_stats_accumulate(&c, s);
	p->open = smcrd_stats_connections(s);
	p->peak = atomic_load_explicit(&s->conns.peak, memory_order_relaxed);
	p->bytes_in = c.tcp_bytes_in;
	p->bytes_out = c.tcp_bytes_out;
	for (unsigned int t = 0; t < SMCR_TRANSPORTS; t++) {
		p->bytes_in += c.transport[t].bytes_in;
		p->bytes_out += c.transport[t].bytes_out;
		p->smc += c.transport[t].clients + c.transport[t].servers;
	}
	for (unsigned int r = 1; r < SMCR_REASON_COUNT; r++)
		p->fallbacks += c.fallbacks[r];
}

/* The registered processes that viewer may see (smcrd_client_visible). */
static void describe_procs(const struct smcrd_control *ctl, uid_t viewer,
			   struct smcr_control_status *st)
{
	for (size_t i = 0; i < ctl->nclients; i++) {
		const struct smcrd_client *c = &ctl->clients[i];
		if (!c->registered || !smcrd_client_visible(c, viewer))
			continue;
		if (st->nprocs < SMCR_CONTROL_STATUS_PROCS) {
			struct smcr_control_proc *p = &st->procs[st->nprocs];
			*p = (struct smcr_control_proc){
				.pid = c->pid, .uid = c->uid, .granted = c->granted,
			};
			memcpy(p->comm, c->comm, sizeof(c->comm));
			if (c->stats)
				describe_traffic(c->stats, p);
		}
		st->nprocs++;
	}
	st->offered = (uint32_t)ctl->shm.n;
	st->attached = (uint32_t)ctl->shm.attached;
}


static void describe_stats(const struct smcrd_control *ctl, struct smcr_control_stats *st)
{
	struct smcr_stats_counts live;
	uint64_t connections = sum_live(ctl, &live);

	smcrd_stats_report(&ctl->stats, &live, connections, st);
	st->peak_memory = ctl->peak_used;
	for (size_t i = 0; i < ctl->nclients; i++)
		st->processes += ctl->clients[i].registered;
}

/*
 * A forked child registers: it holds whatever sockets its parent held, so
 * the offers its parent holds may pass to it (shm_broker.c).
 */
static void share_with_parent(struct smcrd_control *ctl, const struct smcrd_client *c)
{
	pid_t ppid = smcrd_pidfd_parent(c->pid, c->pidfd);

	/* the parent's pid names it only while it lives: a client gone is not it */
	for (size_t i = 0; ppid > 0 && i < ctl->nclients; i++)
		if (ctl->clients[i].pid == ppid && ctl->clients[i].registered &&
		    smcrd_pidfd_alive(ctl->clients[i].pidfd))
			smcrd_shm_share(&ctl->shm, ctl->clients[i].id, c->id);
}

/*
 * The buffers of the connections that c's region lists at REGISTER (it
 * registers again: survivors.h) are charged to it and to the host: all of
 * them for root's processes, whose memory is real and whose word is
 * trusted; for others no more than a GRANT could take now (max_memory,
 * their quotas), so that what a process says of itself costs nobody else.
 */
static void carry_survivors(struct smcrd_control *ctl, struct smcrd_client *c,
			    const struct smcrd_limits *l)
{
	uint64_t held = smcrd_survivors_take(&c->survivors, c->stats), room;

	if (!held) {
		smcrd_survivors_free(&c->survivors);
		return;
	}
	room = smcrd_quota_room(ctl->clients, ctl->nclients, c, l);
	if (c->uid != 0 && room > (ctl->used < l->memory ? l->memory - ctl->used : 0))
		room = ctl->used < l->memory ? l->memory - ctl->used : 0;
	c->carried = held < room ? held : room;
	c->granted += c->carried;
	ctl->used += c->carried;
	if (ctl->used > ctl->peak_used)
		ctl->peak_used = ctl->used;
	smcrd_log(LOG_NOTICE, "process %d (%s) registers again with %zu connections on SMC: "
		  "%llu of their %llu bytes of buffer memory charged", (int)c->pid, c->comm,
		  c->survivors.n, (unsigned long long)c->carried, (unsigned long long)held);
}

/* REGISTER with in[0..nin-1]: the process's statistics region, if it sent one. */
static void register_client(struct smcrd_control *ctl, struct smcrd_client *c, struct smcrd *d,
			    struct smcr_control_msg *m, int *in, size_t nin, int *fds,
			    size_t *nfds, const struct smcrd_limits *l)
{
	c->registered = true;
	if (nin && !c->stats) {         /* registered twice on one connection: keep the first */
		c->stats = smcrd_stats_map(in[0], m->text, sizeof(m->text));
		if (c->stats) {         /* a memfd, whose close never waits: kept to look for holes */
			c->stats_fd = in[0];
			in[0] = -1;
		}
		if (!c->stats) {
			m->result = -EINVAL;
			smcrd_log_client(c->uid, LOG_WARNING, "process %d (%s): %s", (int)c->pid,
					 c->comm, m->text);
			return;
		}
		carry_survivors(ctl, c, l);
	}
	if (smcrd_negotiation_maps(d, fds) == 0)
		*nfds = 2;
	else
		m->result = -ENOENT;
}

static void reset_stats(struct smcrd_control *ctl, const struct smcrd_client *c,
			struct smcr_control_msg *m)
{
	struct smcr_stats_counts live;

	if (c->uid != 0) {
		m->result = -EPERM;
		snprintf(m->text, sizeof(m->text), "only root may reset the statistics");
		return;
	}
	smcrd_stats_reset(&ctl->stats, &live, sum_live(ctl, &live));
	ctl->peak_used = ctl->used;
	smcrd_log(LOG_INFO, "statistics reset by process %d (%s)", (int)c->pid, c->comm);
}

/* The kernel could not give us all of a request's descriptors: we are out of them. */
static bool all_arrived(struct smcr_control_msg *m, bool short_of_fds)
{
	if (short_of_fds)
		say_short_of_descriptors(m);
	return !short_of_fds;
}

/*
 * What every reply says of the host: memory in use, max_memory, the
 * transports allowed, the receive buffer size.
 */
static void host_figures(const struct smcrd_control *ctl, const struct smcrd *d,
			 struct smcr_control_msg *head, uint64_t limit)
{
	head->bytes = ctl->used;
	head->limit = limit;
	head->transports = smcrd_transports(d);
	head->rmb_kib = d->cfg.rmb_size_kib;
}

/*
 * STATUS, STATS and CONNS read every registered process's region, some
 * 7 ms of smcrd's time each for a user's 256 processes claiming full
 * tables: rationed per uid but root's, at most 32 a second.
 */
#define READS_PER_SECOND 32

/* Whether c may have request m served now; if not, m says why. */
static bool read_allowed(const struct smcrd_client *c, struct smcr_control_msg *m)
{
	static struct smcrd_rations rations = SMCRD_RATIONS(READS_PER_SECOND, 1);
	unsigned int refused;
	struct smcrd_ration *r;

	if ((m->type != SMCR_CONTROL_STATUS && m->type != SMCR_CONTROL_STATS &&
	     m->type != SMCR_CONTROL_CONNS) || c->uid == 0)
		return true;
	r = smcrd_ration_of(&rations, c->uid, now_ms() / 1000, &refused);
	if (smcrd_ration_take(&rations, r))
		return true;
	m->result = -EAGAIN;
	snprintf(m->text, sizeof(m->text), "uid %u asks for statistics more than %d times a "
		 "second: try again", (unsigned int)c->uid, READS_PER_SECOND);
	if (r->refused == 1)
		smcrd_log_client(c->uid, LOG_NOTICE, "process %d (%s): %s", (int)c->pid, c->comm,
				 m->text);
	return false;
}

/*
 * Answers one well-formed request; in[]: the descriptors it carried, closed
 * by the caller but for those the request keeps (set to -1); short_of_fds:
 * not all of them, we are out of descriptors.  False if the client must be
 * dropped.
 */
static bool answer(struct smcrd_control *ctl, struct smcrd_client *c, struct smcrd *d,
		   struct smcr_control_msg *m, int *in, size_t nin, bool short_of_fds)
{
	static struct smcr_control_status st;   /* 30 KiB: not on the stack */
	static struct smcr_control_conns conns;
	struct smcr_control_stats stats;
	struct smcrd_limits l;
	int fds[SMCR_CONTROL_MAX_FDS];
	size_t nfds = 0;
	bool ok;

	smcrd_limits(d, &l);
	m->result = 0;
	m->text[0] = '\0';
	if (!read_allowed(c, m)) {
		host_figures(ctl, d, m, l.memory);
		return reply(c, m, sizeof(*m), NULL, 0);
	}
	switch (m->type) {
	case SMCR_CONTROL_REGISTER:
		/* Short of descriptors, the region was lost: the process counts alone. */
		if (!c->registered)
			share_with_parent(ctl, c);
		register_client(ctl, c, d, m, in, nin, fds, &nfds, &l);
		break;
	case SMCR_CONTROL_GRANT:
		c->registered = true;
		grant(ctl, c, m->bytes, &l, m);
		break;
	case SMCR_CONTROL_RELEASE:
		give_back(ctl, c, m->bytes < releasable(c) ? m->bytes : releasable(c));
		return true;                    /* no reply */
	case SMCR_CONTROL_OFFER:
		c->registered = true;
		if (all_arrived(m, short_of_fds))
			offer(ctl, c, m, in, &l);
		break;
	case SMCR_CONTROL_ATTACH:
		c->registered = true;
		if (all_arrived(m, short_of_fds))
			attach(ctl, c, m, in[0], fds);
		nfds = m->result == 0 ? 2 : 0;
		break;
	case SMCR_CONTROL_RESUME:
		c->registered = true;
		if (all_arrived(m, short_of_fds))
			resume(ctl, c, m, in[0], fds, &nfds);
		break;
	case SMCR_CONTROL_WITHDRAW:
		withdraw(ctl, c, m->token, nin ? in[0] : -1);
		return true;                    /* no reply */
	case SMCR_CONTROL_STATUS:
		check_regions(ctl);
		memset(&st, 0, sizeof(st));
		smcrd_describe(d, &st);
		describe_procs(ctl, c->uid, &st);
		st.head = *m;
		host_figures(ctl, d, &st.head, l.memory);
		return reply(c, &st, sizeof(st), NULL, 0);
	case SMCR_CONTROL_STATS:
		check_regions(ctl);
		memset(&stats, 0, sizeof(stats));
		describe_stats(ctl, &stats);
		stats.head = *m;
		host_figures(ctl, d, &stats.head, l.memory);
		return reply(c, &stats, sizeof(stats), NULL, 0);
	case SMCR_CONTROL_CONNS:
		check_regions(ctl);
		conns.head = *m;
		smcrd_conns_page(ctl->clients, ctl->nclients, c->uid, m->token, &conns);
		host_figures(ctl, d, &conns.head, l.memory);
		return reply(c, &conns, sizeof(conns), NULL, 0);
	case SMCR_CONTROL_STATS_RESET:
		reset_stats(ctl, c, m);
		break;
	case SMCR_CONTROL_RELOAD:
		if (c->uid != 0) {
			m->result = -EPERM;
			snprintf(m->text, sizeof(m->text), "only root may change the configuration");
		} else if (smcrd_reload(d, m->text, sizeof(m->text))) {
			m->result = -EINVAL;
		}
		break;
	default:
		smcrd_log_client(c->uid, LOG_WARNING, "process %d (%s): unknown request type %u",
				 (int)c->pid, c->comm, m->type);
		return false;
	}
	host_figures(ctl, d, m, l.memory);
	ok = reply(c, m, sizeof(*m), fds, nfds);
	for (size_t i = 0; i < nfds; i++)
		close(fds[i]);
	return ok;
}

/* Handles one request; false if the client must be dropped. */
static bool serve_request(struct smcrd_control *ctl, struct smcrd_client *c, struct smcrd *d)
{
	struct smcr_control_msg m;
	int in[SMCR_CONTROL_MAX_FDS];
	size_t nin;
	bool cut, short_of_fds, ok;
	ssize_t n = smcrd_request_recv(c->fd, &m, in, &nin, &cut);

	if (n < 0)
		return errno == EAGAIN || errno == EINTR;
	if (n > 0 && !smcrd_pidfd_alive(c->pidfd)) {
		/* held by another process now: it is not c, whose pid may be reused */
		smcrd_log_client(c->uid, LOG_NOTICE, "process %d (%s) has exited: a request "
				 "on its control connection refused", (int)c->pid, c->comm);
		ok = false;
	} else if (!smcrd_request_well_formed(&m, n, nin, cut, &short_of_fds)) {
		if (n > 0)
			smcrd_log_client(c->uid, LOG_WARNING, "process %d (%s): malformed request "
					 "(%zd bytes, %zu descriptors)", (int)c->pid, c->comm, n, nin);
		ok = false;             /* n == 0: the process closed its end */
	} else {
		ok = answer(ctl, c, d, &m, in, nin, short_of_fds);
	}
	for (size_t i = 0; i < nin; i++)
		smcrd_close_later(in[i]);
	return ok;
}

void smcrd_control_serve(struct smcrd_control *ctl, const struct pollfd *pfd, struct smcrd *d)
{
	const size_t polled = ctl->nclients;

	if (ctl->spare_fd < 0)
		ctl->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	/* Clients first, from the back: dropping one moves the last into its place. */
	for (size_t i = polled; i-- > 0;) {
		short ev = pfd[1 + i].revents;
		if (!ev || ((ev & POLLIN) && !smcrd_closer_has_room(SMCRD_REQUEST_MAX_FDS)))
			continue;       /* no room: its request waits (smcrd_control_pollfds) */
		if (!(ev & POLLIN) || !serve_request(ctl, &ctl->clients[i], d))
			drop_client(ctl, i);
	}
	if (pfd[0].revents & POLLIN) {
		struct smcrd_limits l;

		smcrd_limits(d, &l);
		accept_clients(ctl, &l);
	}
	recheck_suspects(ctl);
	/* At every request: grants come with connections, so peaks are seen near enough. */
	smcrd_stats_sample(&ctl->stats, sum_live(ctl, NULL));
}
