/*
 * smc_sock_view.c - an application's SMC connection across processes
 * (smc_sock.h): its shared state page and each process's view of it, the
 * buffers it sets up through smcrd's broker, its CLC exchange, and its life
 * cycle (adopted, shared by fork, closed by the last holder).  The socket
 * calls over it are in smc_sock.c.
 *
 * One connection, many processes.  A socket outlives the process that
 * opened it: fork() copies it, SCM_RIGHTS passes it, exec keeps it.  So
 * what the connection is - its phase, its CLC exchange, its cursors (struct
 * sock_shared) - lives in one page of a memfd, which smcrd keeps with the
 * connection's buffer (the broker's "state").  Every process holding the
 * socket has its own view (struct smcr_sock): that page mapped, the
 * transport's mappings and descriptors, and its own descriptor count.
 *  - fork(): the child inherits the views, and the page is counted as held
 *    once more (before the fork, so that a parent closing at once does not
 *    end the connection under its child).
 *  - SCM_RIGHTS and exec: a process that receives the socket, or starts
 *    with it, asks smcrd for the state and buffers offered on it
 *    (smcr_sock_adopt) and carries on where the other left off.  A message
 *    carrying the socket holds it too while in flight (smcr_sock_passing),
 *    so that a sender closing at once does not end it; its receiver takes
 *    that hold over.
 *  - A process whose view lacks the peer's buffer (another one finished the
 *    CLC exchange) gets it from smcrd the same way when it next uses it.
 * The last process to close the connection sends the CDC close (or abort)
 * and withdraws the buffer.  A process that ends without closing keeps its
 * count: the connection then ends without a CDC close, and the peer reads
 * the end of the TCP connection as such (smc_conn_peer_lost).
 *
 * The buffer, with the state, is offered to smcrd so that whatever process
 * holds the socket from then on can find its connection: a socket smcrd
 * knows nothing of is plain TCP.  A client offers as its handshake
 * negotiated SMC, before its Proposal.  A server offers only when the
 * exchange needs it, at the client's Proposal, or before the socket can
 * reach another process that would look for it there (fork, whose child
 * may exec; SCM_RIGHTS): a client that negotiates SMC and then says
 * nothing holds none of the server's memory.  Until then the state's memfd
 * waits in the view (state_fd).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <netinet/in.h>
#include <unistd.h>

#include "conn_table.h"
#include "control.h"
#include "control_proto.h"
#include "fdtable.h"
#include "filter.h"
#include "log.h"
#include "real.h"
#include "shm_broker_client.h"
#include "smc_conn.h"
#include "smc_leave.h"
#include "smc_rx.h"
#include "smc_shm.h"
#include "smc_sock_priv.h"
#include "smc_tx.h"
#include "smc_wake.h"
#include "sys.h"

/*
 * Our receive buffer: as large as the application asked (SO_RCVBUF, set
 * before connect or listen, as the kernel's SMC takes it), else
 * smcr.conf's rmb_size; rounded up to a size class, 16 KiB to 1 MiB.
 * Without a word from smcrd (none yet): 256 KiB.
 */
#define RMB_CLASS_UNSAID 4

static unsigned int rmb_class_for(int fd)
{
	uint32_t asked = smcr_fd_rcvbuf(fd), bytes = asked ? asked : smcr_control_rmb_bytes();

	return bytes ? smc_rmb_size_class(bytes, SMC_RMB_MAX_CLASS_D) : RMB_CLASS_UNSAID;
}

/* The size class of the RMB this process's view has (0 bytes: none). */
static unsigned int rmb_class(const struct smcr_sock *sk)
{
	return smc_rmb_size_class(sk->conn.rmb_size, SMC_RMB_MAX_CLASS_D);
}

/*
 * A transport may register a staging buffer beside the RMB (RDMA: the side
 * its WRITEs go from), as large as our RMB until the peer's is known, then
 * as large as the peer's: granted by smcrd against max_memory for as long
 * as this process holds the connection's view, as the offer's grant stands
 * for the RMB, and always for as much as the buffer is.  Another size:
 * more is asked for, or the rest given back.  0 or a negative errno (the
 * grant unchanged).
 */
static int grant_staging(struct smcr_sock *sk, uint64_t bytes)
{
	int rc = 0;

	if (bytes > sk->staging_granted)
		rc = smcr_control_grant(bytes - sk->staging_granted);
	else if (bytes < sk->staging_granted)
		smcr_control_release(sk->staging_granted - bytes);
	if (!rc)
		sk->staging_granted = bytes;
	return rc;
}

static pthread_mutex_t all_lock = PTHREAD_MUTEX_INITIALIZER;

/* Told when a connection's CLC exchange ends (smcr_sock_on_phase_change). */
static void phase_unwatched(int fd)
{
	(void)fd;
}

static void (*_Atomic phase_changed)(int fd) = phase_unwatched;

void smcr_sock_on_phase_change(void (*changed)(int fd))
{
	phase_changed = changed;
}
static struct smcr_sock *all;

/* A sandbox's filter forbids calls of the fast path: no SMC from now on (smcr_sock_confine). */
static bool confined;

/* ---- identity: which host and namespace we are on (docs/PROTOCOL.md) ---- */

static uint32_t fnv1a(uint32_t h, const void *data, size_t len)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

/*
 * The host tag: the boot and the network namespace, from /proc, read once.
 * Two ends agree on it exactly when they can share memory through smcrd.
 */
static uint32_t host_tag(void)
{
	static _Atomic uint32_t known;
	uint32_t tag = atomic_load_explicit(&known, memory_order_relaxed);

	if (!tag) {
		char boot_id[64] = "";
		struct stat ns = { 0 };
		FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");

		if (f) {
			if (!fgets(boot_id, sizeof(boot_id), f))
				boot_id[0] = 0;
			fclose(f);
		}
		stat("/proc/self/ns/net", &ns);
		tag = fnv1a(2166136261u, boot_id, strlen(boot_id));
		tag = fnv1a(tag, &ns.st_ino, sizeof(ns.st_ino)) | 1;
		atomic_store_explicit(&known, tag, memory_order_relaxed);
	}
	return tag;
}

void smcr_sock_learn_host(void)
{
	host_tag();
}

/* Our GID: the host tag in bits 63-32, the process in bits 31-0. */
static uint64_t local_gid(void)
{
	return (uint64_t)host_tag() << 32 | (uint32_t)getpid();
}

/* ---- the buffer and the state, offered to smcrd ---- */

static enum smcr_reason reason_of(int rc)
{
	return rc == -ENOMEM ? SMCR_REASON_MEM : rc == -ENOTCONN || rc == -EMFILE ?
	       SMCR_REASON_NOSMCDEV : SMCR_REASON_INTERR;
}

/* A new wake-up channel, both ends aside (sys.h); 0 or a negative errno. */
static int wake_channel(struct smcr_wake_channel *ch)
{
	int rc = smcr_sys_wake_channel(ch);

	if (!rc) {
		ch->rx = smcr_sys_fd_aside(ch->rx);
		ch->tx = smcr_sys_fd_aside(ch->tx);
	}
	return rc;
}

static void close_channel(struct smcr_wake_channel ch)
{
	smcr_sys_close(ch.rx);
	smcr_sys_close(ch.tx);
}

/* Our buffer for fd's connection, with the state memfd, on offer; the reason if not. */
static enum smcr_reason offer(struct smcr_sock *sk, int fd, int state_fd)
{
	unsigned int size_class = rmb_class_for(fd);
	uint64_t bytes = smc_shm_region_size(size_class);
	struct smcr_wake_channel ch = SMCR_NO_WAKE_CHANNEL;
	int memfd = smcr_sys_memfd_sealed(bytes), rc = memfd < 0 ? memfd : wake_channel(&ch);

	if (rc)
		goto fail;
	rc = sk->conn.ops->create_rmb(&sk->conn, size_class, memfd, ch);
	if (rc)
		goto fail;
	/* the transport's now, kept where it keeps them */
	rc = smcr_shm_offer(fd, memfd, bytes, sk->conn.ops->wake_channel(&sk->conn), state_fd,
			    &sk->sh->token, &sk->sh->transports);
	REAL(close)(memfd);
	if (rc) {
		sk->conn.ops->release(&sk->conn);
		/* EMFILE: smcrd's descriptors for offers are all taken (shm_broker.c) */
		return rc == -ENOMEM ? SMCR_REASON_MEM : rc == -EMFILE ? SMCR_REASON_SMCRDFULL :
		       SMCR_REASON_NOSMCDEV;
	}
	sk->sh->offered = true;
	sk->conn.st->token = (uint32_t)sk->sh->token;
	return SMCR_REASON_NONE;
fail:
	if (memfd >= 0)
		REAL(close)(memfd);
	close_channel(ch);
	smcr_log(SMCR_LOG_WARN, "fd %d: no buffer for SMC: %s", fd, strerror(-rc));
	return reason_of(rc);
}

/* Whether t can say what a Proposal needs of it for fd's connection (lcl): a device serves it. */
static bool describable(const struct smc_transport_ops *t, int fd, struct smc_clc_local *lcl)
{
	return !t->setup.local_block || t->setup.local_block(fd, lcl) == 0;
}

/*
 * Whether some transport may serve fd's connection, as far as smcrd's
 * recent word on smcr.conf goes.  If none it allows is describable (shm
 * off, no RDMA device for the address), an offer, with its buffer and
 * smcrd's round trips, would be for nothing: a host where every
 * connection falls back would pay it for each.  An older word decides
 * nothing, since only an offer's reply brings a reload's news.  In the
 * registry's order: shm, which needs no device, answers before RDMA
 * looks for one.
 */
static bool may_be_served(int fd)
{
	struct smc_clc_local lcl;
	uint32_t allowed;

	if (!smcr_control_transports_recent(&allowed))
		return true;
	for (unsigned int t = 0; t < SMCR_TRANSPORTS; t++)
		if ((allowed & smc_transport(t)->setup.allowed_by) &&
		    describable(smc_transport(t), fd, &lcl))
			return true;
	return false;
}

/* What a connection that no transport may serve declines with, with no offer made. */
static enum smcr_reason no_offer(int fd)
{
	smcr_log(SMCR_LOG_DEBUG, "fd %d: no transport smcr.conf allows serves it: no offer", fd);
	return SMCR_REASON_NOSMCDEV;
}

/*
 * Under the connection lock (or before anyone else can hold it): whether
 * our buffer is on offer, offering it now if no process tried yet; the
 * reason it is not is then in offer_failed.  Only while the connection is
 * this process's alone (here_only) may the devices it sees decide that no
 * transport serves it: another process it reaches may see others, and
 * finds the exchange only through the offer.
 */
static bool on_offer(struct smcr_sock *sk, bool here_only)
{
	struct sock_shared *sh = sk->sh;
	int state_fd = smcr_sys_kept(&sk->state_fd);
	int fd = sk->conn.sock;

	if (!sh->offer_tried && state_fd >= 0 && fd >= 0) {
		sh->offer_tried = true;
		sh->offer_failed = !here_only || may_be_served(fd) ? offer(sk, fd, state_fd) :
				   no_offer(fd);
	}
	if (sh->offer_tried && state_fd >= 0)
		smcr_sys_close_kept(&sk->state_fd);     /* smcrd has it, or nobody will */
	return sh->offered;
}

/* The lowest descriptor that names sk, or -1. */
static int fd_naming(const struct smcr_sock *sk)
{
	for (int fd = smcr_fd_next_sock(0); fd >= 0; fd = smcr_fd_next_sock((unsigned int)fd + 1))
		if (smcr_fd_sock(fd) == sk)
			return fd;
	return -1;
}

static void settle_now(struct smcr_sock *sk);

/*
 * A connection whose exchange is still open is about to be reachable from
 * another process (SCM_RIGHTS, exec, spawn; fork, whose child may exec):
 * its state goes to smcrd with the buffer now, so that the other process
 * can carry it on (smcr_sock_adopt).  If it cannot (smcrd's budget or
 * descriptors are full), the other process finds nothing there and takes
 * the socket for plain TCP, the exchange open: it would read the peer's
 * CLC as data, and the peer its data as CLC.  So, unless the other
 * process inherits this view (fork: the child settles before it hands the
 * socket on), the exchange ends here first, declining, its wait for the
 * peer bounded as before a sandbox (settle_now).
 */
static void offer_before_handover(struct smcr_sock *sk, bool view_inherited)
{
	if (phase_of(sk) > SMCR_SOCK_SETUP)
		return;
	if (!sk->sh->offer_tried) {
		smc_conn_lock(&sk->conn);
		if (sk->conn.sock < 0)  /* its number was closed, a dup lives on: the offer shows one */
			sk->conn.sock = fd_naming(sk);
		if (phase_of(sk) <= SMCR_SOCK_SETUP && !sk->sh->setup.reason)
			on_offer(sk, false);
		smc_conn_unlock(&sk->conn);
	}
	if (!view_inherited && !sk->sh->offered)
		settle_now(sk);
}

/*
 * The peer's buffer into our view, as its Accept or Confirm describes it:
 * with its memfd and its wake-up channel's tx for shared memory, -1 and -1
 * for a transport that needs none.
 */
static int attach_peer(struct smcr_sock *sk, const struct smc_clc_accept_confirm *peer,
		       int memfd, int tx)
{
	int rc;

	tx = smcr_sys_fd_aside(tx);
	rc = sk->conn.ops->attach_peer(&sk->conn, peer, memfd, tx);
	if (memfd >= 0)
		smcr_sys_close(memfd);
	if (rc)
		smcr_sys_close(tx);
	sk->attached = rc == 0;
	return rc;
}

/*
 * The client's buffer that the server got before its Accept (setup_reach),
 * into *fd and *wake_tx, which are the caller's from now on; false if none.
 */
static bool take_reached(struct smcr_sock *sk, int *fd, int *wake_tx)
{
	if (sk->reached_fd < 0)
		return false;
	*fd = sk->reached_fd;
	*wake_tx = sk->reached_wake_tx;
	sk->reached_fd = sk->reached_wake_tx = -1;
	return true;
}

/* ---- the CLC exchange's transport (smc_setup.h) ---- */

/*
 * Whether fd's peer is this host, by its address (loopback, or one of ours
 * as the connection's own): then shared memory serves, and RDMA is not even
 * looked for.
 */
static bool peer_is_local(int fd)
{
	struct sockaddr_storage a, b;
	socklen_t la = sizeof(a), lb = sizeof(b);

	if (REAL(getsockname)(fd, (struct sockaddr *)&a, &la) ||
	    REAL(getpeername)(fd, (struct sockaddr *)&b, &lb) || a.ss_family != b.ss_family)
		return false;
	if (a.ss_family == AF_INET)
		return ((struct sockaddr_in *)&a)->sin_addr.s_addr ==
		       ((struct sockaddr_in *)&b)->sin_addr.s_addr;
	return !memcmp(&((struct sockaddr_in6 *)&a)->sin6_addr,
		       &((struct sockaddr_in6 *)&b)->sin6_addr, sizeof(struct in6_addr));
}

/* What went wrong with a transport in the CLC exchange, as a reason. */
static enum smcr_reason transport_reason(int rc)
{
	return rc == -ENOMEM ? SMCR_REASON_MEM : rc == -ETIMEDOUT ? SMCR_REASON_TIMEOUT_CL :
	       rc == -EPROTO ? SMCR_REASON_SYNCERR : SMCR_REASON_NOSMCDEV;
}

/* The transport a CLC message names by its type (SMC_TYPE_D or _R), or NULL. */
static const struct smc_transport_ops *transport_of_type(enum smc_type type)
{
	for (unsigned int t = 0; t < SMCR_TRANSPORTS; t++)
		if (smc_transport(t)->setup.clc_type == type)
			return smc_transport(t);
	return NULL;
}

/*
 * Whether t may be offered on sk's connection: smcr.conf allows it, it is
 * not for remote peers only while a transport for this host was offered
 * and the peer is here, and it is describable.
 */
static bool offerable(struct smcr_sock *sk, const struct smc_transport_ops *t,
		      bool local_offered, struct smc_clc_local *lcl)
{
	int fd = sk->conn.sock;

	if (!(sk->sh->transports & t->setup.allowed_by) ||
	    (t->setup.remote_only && local_offered && peer_is_local(fd)))
		return false;
	return describable(t, fd, lcl);
}

/* Whether allowed (SMCR_CONTROL_*) holds a transport for peers on this host. */
static bool allows_here(uint32_t allowed)
{
	for (unsigned int t = 0; t < SMCR_TRANSPORTS; t++)
		if (!smc_transport(t)->setup.remote_only &&
		    (allowed & smc_transport(t)->setup.allowed_by))
			return true;
	return false;
}

void smcr_sock_before_connect(int fd, const struct sockaddr *peer, socklen_t len)
{
	uint32_t allowed = smcr_control_transports();
	bool here_allowed = allows_here(allowed);
	const struct smc_transport_setup *setup;

	if (__atomic_load_n(&confined, __ATOMIC_ACQUIRE))
		return;
	for (unsigned int t = 0; t < SMCR_TRANSPORTS; t++) {
		setup = &smc_transport(t)->setup;
		if (setup->prepare_client && (allowed & setup->allowed_by))
			setup->prepare_client(fd, peer, len, setup->remote_only && here_allowed);
	}
}

/*
 * Every transport that smcr.conf allows and that can serve the connection,
 * this host's first.  Any needs the state on offer.
 */
static enum smcr_reason setup_offers(void *ctx, enum smc_type *type, struct smc_clc_local *lcl)
{
	struct smcr_sock *sk = ctx;
	bool offers[SMC_TYPE_B] = { false }, local_offered = false;

	*type = SMC_TYPE_N;
	if (__atomic_load_n(&confined, __ATOMIC_ACQUIRE))
		return SMCR_REASON_CONFINED;
	if (!on_offer(sk, true))
		return sk->sh->offer_failed ? sk->sh->offer_failed : SMCR_REASON_NOSMCDEV;
	for (int remote_only = 0; remote_only < 2; remote_only++)
		for (unsigned int t = 0; t < SMCR_TRANSPORTS; t++) {
			const struct smc_transport_ops *ops = smc_transport(t);

			if (ops->setup.remote_only != remote_only ||
			    !offerable(sk, ops, local_offered, lcl))
				continue;
			offers[ops->setup.clc_type] = true;
			local_offered = local_offered || !remote_only;
		}
	if (!offers[SMC_TYPE_D] && !offers[SMC_TYPE_R])
		return SMCR_REASON_NOSMCDEV;
	*type = offers[SMC_TYPE_D] && offers[SMC_TYPE_R] ? SMC_TYPE_B :
		offers[SMC_TYPE_D] ? SMC_TYPE_D : SMC_TYPE_R;
	return SMCR_REASON_NONE;
}

static bool view_offered(struct smcr_sock *sk);

/*
 * The connection goes on over t.  The buffer set up at the offer is a
 * shared-memory one; for another transport it is let go (the offer stays:
 * smcrd keeps the connection's state with it, and its grant stands for the
 * new buffer), one is made there, with its staging buffer granted if it
 * needs one, and the server joins the client's process (SMC-R: a link).
 */
static enum smcr_reason move_to(struct smcr_sock *sk, const struct smc_transport_ops *t,
				const struct smc_clc_local *peer)
{
	unsigned int size_class = rmb_class(sk);
	int rc;

	if (sk->conn.ops == t)
		return SMCR_REASON_NONE;
	sk->conn.ops->release(&sk->conn);
	sk->conn.ops = t;
	sk->sh->transport = t->id;
	/* the same size, as far as the transport goes (SMC-R: 512 KiB) */
	if (size_class > SMC_RMB_MAX_CLASS_R)
		size_class = SMC_RMB_MAX_CLASS_R;
	rc = t->create_rmb(&sk->conn, size_class, -1, SMCR_NO_WAKE_CHANNEL);
	if (!rc && t->setup.staging && (rc = grant_staging(sk, sk->conn.rmb_size)) != 0)
		t->release(&sk->conn);	/* nothing granted to give back */
	if (!rc && peer && t->setup.join_peer)
		rc = t->setup.join_peer(&sk->conn, peer, &sk->first_contact);
	if (!rc)
		return SMCR_REASON_NONE;
	smcr_log(SMCR_LOG_WARN, "fd %d: no %s for the connection: %s", sk->conn.sock,
		 t->name, strerror(-rc));
	return transport_reason(rc);
}

static enum smcr_reason setup_prepare(void *ctx, enum smc_type type, const struct smc_clc_local *peer)
{
	struct smcr_sock *sk = ctx;
	const struct smc_transport_ops *t = transport_of_type(type);

	if (!sk->sh->offered)
		return sk->sh->offer_failed;
	if (!sk->conn.priv && !view_offered(sk))
		return SMCR_REASON_NOSMCDEV;
	return t ? move_to(sk, t, peer) : SMCR_REASON_NOSMCDEV;
}

static enum smcr_reason setup_describe(void *ctx, struct smc_clc_accept_confirm *ours)
{
	struct smcr_sock *sk = ctx;

	if (sk->conn.ops->setup.describe(&sk->conn, sk->sh->token, rmb_class(sk), ours))
		return SMCR_REASON_INTERR;
	ours->first_contact = sk->first_contact;
	return SMCR_REASON_NONE;
}

/* The peer's buffer, on our transport, as its Accept or Confirm describes it. */
static enum smcr_reason setup_attach(void *ctx, const struct smc_clc_accept_confirm *peer)
{
	struct smcr_sock *sk = ctx;
	const struct smc_transport_ops *t = sk->conn.ops;
	int fd = -1, wake_tx = -1, rc = 0;

	if (peer->smc_type != t->setup.clc_type)
		return SMCR_REASON_SYNCERR;
	/*
	 * A fork's child carrying on its parent's exchange, whose buffer and
	 * link it cannot use (lost_by_fork): a client declines; a server,
	 * whose client went over to SMC with this Confirm, concludes, and its
	 * view, lost, leaves for TCP at first use (smcr_sock_phase).
	 */
	if (sk->lost)
		return sk->sh->active ? SMCR_REASON_NOSMCDEV : SMCR_REASON_NONE;
	if (!take_reached(sk, &fd, &wake_tx) && t->setup.peer_fds)
		rc = t->setup.peer_fds(sk->conn.sock, peer, &fd, &wake_tx);
	if (!rc)
		rc = attach_peer(sk, peer, fd, wake_tx);
	if (!rc && t->setup.staging)    /* it follows the peer's RMB now (smc_rdma.c) */
		rc = grant_staging(sk, sk->conn.peer_rmb_size);
	if (rc) {
		smcr_log(SMCR_LOG_WARN, "fd %d: cannot use the peer's %s buffer: %s",
			 sk->conn.sock, t->name, strerror(-rc));
		return transport_reason(rc);
	}
	sk->conn.st->peer_token = t->setup.peer_token(peer);
	return SMCR_REASON_NONE;
}

/* Lets go of the client's buffer got before our Accept, if still held. */
static void drop_reached(struct smcr_sock *sk)
{
	smcr_sys_close(sk->reached_fd);
	smcr_sys_close(sk->reached_wake_tx);
	sk->reached_fd = sk->reached_wake_tx = -1;
}

static enum smcr_reason setup_reach(void *ctx)
{
	struct smcr_sock *sk = ctx;
	const struct smc_transport_ops *t = sk->conn.ops;
	int fd = -1, wake_tx = -1, rc;

	if (!t->setup.peer_fds)
		return SMCR_REASON_NONE;
	drop_reached(sk);
	rc = t->setup.peer_fds(sk->conn.sock, NULL, &fd, &wake_tx);
	if (rc) {
		smcr_log(SMCR_LOG_DEBUG, "fd %d: cannot reach the client's %s buffer: %s",
			 sk->conn.sock, t->name, strerror(-rc));
		/*
		 * A process that can no longer receive a descriptor (RLIMIT_NOFILE,
		 * the reply's descriptors cut off) has confined itself; otherwise
		 * the Confirm's token is asked for, as before there was a reach.
		 */
		return rc == -EPROTO || rc == -EMFILE ? SMCR_REASON_CONFINED : SMCR_REASON_NONE;
	}
	sk->reached_fd = smcr_sys_fd_aside(fd);
	sk->reached_wake_tx = smcr_sys_fd_aside(wake_tx);
	return SMCR_REASON_NONE;
}

/* Lets go of this process's view of the transport, and of what it was granted. */
static void release_view(struct smcr_sock *sk)
{
	sk->conn.ops->release(&sk->conn);
	grant_staging(sk, 0);
}

/* Gives our buffer back to smcrd's broker. */
static void withdraw_offer(struct smcr_sock *sk, int fd)
{
	if (sk->sh->offered) {
		smcr_shm_withdraw(sk->sh->token, fd);
		sk->sh->offered = false;
	}
}

/* ... and lets go of this process's view of it: the connection stays on TCP, or is over. */
static void withdraw(struct smcr_sock *sk, int fd)
{
	withdraw_offer(sk, fd);
	if (sk->conn.priv)
		release_view(sk);
}

static void setup_abandon(void *ctx)
{
	struct smcr_sock *sk = ctx;

	drop_reached(sk);
	withdraw(sk, sk->conn.sock);
}

/* ---- views ---- */

/* A view of the state in state_fd (fresh: a new connection's, to be made). */
static struct smcr_sock *view_new(int state_fd, bool fresh)
{
	struct smcr_sock *sk = calloc(1, sizeof(*sk));
	void *sh = sk ? mmap(NULL, STATE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, state_fd, 0)
		      : MAP_FAILED;

	if (sh == MAP_FAILED) {
		free(sk);
		return NULL;
	}
	sk->sh = sh;
	sk->reached_fd = sk->reached_wake_tx = sk->state_fd = -1;
	/* a new connection's buffer is offered on shared memory; the page is another's to write */
	const struct smc_transport_ops *t = smc_transport(fresh ? SMCR_TRANSPORT_SHM :
							  sk->sh->transport);

	if (!t) {
		munmap(sh, STATE_BYTES);
		free(sk);
		return NULL;
	}
	smc_conn_init(&sk->conn, t, &sk->sh->conn, fresh);
	atomic_init(&sk->refs, 1);
	pthread_mutex_lock(&all_lock);
	sk->next = all;
	if (all)
		all->prev = sk;
	all = sk;
	pthread_mutex_unlock(&all_lock);
	return sk;
}

static void view_free(struct smcr_sock *sk)
{
	drop_reached(sk);
	smcr_sys_close_kept(&sk->state_fd);
	/*
	 * What this process mapped and was granted goes back, whoever else
	 * holds the connection (a dispatcher that outlived its helpers kept
	 * each one's staging grant until it exited).
	 */
	grant_staging(sk, 0);
	smc_conn_destroy(&sk->conn);
	pthread_mutex_lock(&all_lock);
	if (sk->prev)
		sk->prev->next = sk->next;
	else
		all = sk->next;
	if (sk->next)
		sk->next->prev = sk->prev;
	pthread_mutex_unlock(&all_lock);
	munmap(sk->sh, STATE_BYTES);
	free(sk);
}

/*
 * Under the connection lock: the transport of sk as another process left
 * it, from what smcrd keeps for fd (fds: RESUME's answer, n of them).
 * Our own buffer always; the peer's once the exchange has attached it.
 */
/* The peer's shared-memory buffer as the exchange described it, to attach again. */
static struct smc_clc_accept_confirm peer_described(const struct smcr_sock *sk)
{
	return (struct smc_clc_accept_confirm){
		.smc_type = SMC_TYPE_D,
		.d = { .dmbe_size = (uint8_t)smc_rmb_size_class(sk->conn.st->peer_rmb_size,
								SMC_RMB_MAX_CLASS_D) },
	};
}

/* Copies of a resumed channel for our view, aside; 0 or a negative errno and none. */
static int channel_copy(const int *fds, struct smcr_wake_channel *ch)
{
	*ch = (struct smcr_wake_channel){ .rx = smcr_sys_fd_aside(REAL(fcntl)(fds[0], F_DUPFD_CLOEXEC, 0)),
					  .tx = smcr_sys_fd_aside(REAL(fcntl)(fds[1], F_DUPFD_CLOEXEC, 0)) };
	if (ch->rx >= 0 && ch->tx >= 0)
		return 0;
	close_channel(*ch);
	*ch = SMCR_NO_WAKE_CHANNEL;
	return -EMFILE;
}

/* fds as smcr_shm_resume gives them: state, memfd, channel, the peer's memfd and tx. */
static int view_transport(struct smcr_sock *sk, int fd, const int *fds, int n)
{
	struct smc_clc_accept_confirm peer = peer_described(sk);
	struct smcr_wake_channel ch;
	int rc = channel_copy(fds + 2, &ch);

	if (sk->conn.priv)
		release_view(sk);
	sk->attached = false;
	if (!rc)
		rc = sk->conn.ops->map_rmb(&sk->conn, fds[1], ch);
	if (rc)
		close_channel(ch);
	if (!rc && phase_of(sk) == SMCR_SOCK_SMC)
		rc = n == SMCR_SHM_RESUMED_BOTH ?
		     attach_peer(sk, &peer, REAL(fcntl)(fds[4], F_DUPFD_CLOEXEC, 0),
				 REAL(fcntl)(fds[5], F_DUPFD_CLOEXEC, 0)) : -ENOENT;
	sk->conn.sock = fd;
	return rc;
}

/* RESUME for fd: 0 and fds[0..*n), or a negative errno. */
static int resume(int fd, uint64_t *token, int fds[SMCR_SHM_RESUMED_BOTH], int *n)
{
	int rc = smcr_shm_resume(fd, token, fds, n);

	if (rc && rc != -ENOENT)
		smcr_log(SMCR_LOG_WARN, "fd %d: smcrd cannot say where the connection is: %s", fd,
			 strerror(-rc));
	return rc;
}

static void close_all(int *fds, int n)
{
	for (int i = 0; i < n; i++)
		REAL(close)(fds[i]);
}

/*
 * The peer's buffer from the descriptors this process holds since before
 * the Accept (it was forked from the server then, and another process
 * finished the exchange): no smcrd needed, nor any new descriptor, so a
 * process that has since confined itself joins too.  0 or a negative errno.
 */
static int attach_reached(struct smcr_sock *sk)
{
	struct smc_clc_accept_confirm peer = peer_described(sk);
	int fd, wake_tx;

	if (!take_reached(sk, &fd, &wake_tx))
		return -ENOENT;
	return attach_peer(sk, &peer, fd, wake_tx);
}

/* The connection's buffers as smcrd keeps them for fd, into sk's view; 0 or a negative errno. */
static int view_resumed(struct smcr_sock *sk, int fd)
{
	uint64_t token;
	int fds[SMCR_SHM_RESUMED_BOTH], n = 0;
	int rc = resume(fd, &token, fds, &n);

	if (!rc)
		rc = view_transport(sk, fd, fds, n);
	close_all(fds, n);
	return rc;
}

/*
 * Under the connection lock, in the exchange: our buffer, which another
 * process holding the socket offered (a fork's child, whose exec offered
 * what it held: a connection another thread of ours had just accepted),
 * into this process's view, from smcrd.  Without it our Accept would
 * describe a buffer we do not have.  False if it cannot be had.
 */
static bool view_offered(struct smcr_sock *sk)
{
	int rc = view_resumed(sk, sk->conn.sock);

	if (rc)
		smcr_log(SMCR_LOG_WARN, "fd %d: cannot take up the buffer another process "
			 "offered: %s", sk->conn.sock, strerror(-rc));
	return rc == 0;
}

/*
 * This view on the transport the connection took, which another process
 * may have chosen (it answered on RDMA while this one held the
 * shared-memory buffer set up for the offer, and the client's it had
 * reached): what it held is let go, since the peer never writes there.
 * False if the state names no transport of ours.
 */
static bool follow_transport(struct smcr_sock *sk)
{
	const struct smc_transport_ops *t = smc_transport(sk->sh->transport);

	if (!t)
		return false;
	if (sk->conn.ops == t)
		return true;
	if (sk->conn.priv)
		release_view(sk);
	drop_reached(sk);
	sk->conn.ops = t;
	return true;
}

/*
 * Under the connection lock, on SMC: whether this process has the whole
 * transport; if not, it gets it from smcrd.  False if it cannot: the
 * connection is lost to this process.
 */
static bool view_complete(struct smcr_sock *sk, int fd)
{
	if (sk->attached || sk->lost)
		return sk->attached;
	if (!follow_transport(sk))
		sk->lost = true;
	else if (sk->conn.priv && attach_reached(sk) == 0)
		return true;
	else
		sk->lost = view_resumed(sk, fd) != 0;
	if (sk->lost)
		smcr_log(SMCR_LOG_WARN, "fd %d: this process cannot reach the connection's "
			 "buffers", fd);
	return !sk->lost;
}

/* ---- life cycle ---- */

/* The inode of socket fd (0: unknown), by which a vfork child's exec finds it. */
static ino_t socket_inode(int fd)
{
	const uint64_t args[6] = { (uint64_t)fd };
	struct stat st;

	return smcr_filter_permits(SYS_newfstatat, args) && fstat(fd, &st) == 0 ? st.st_ino : 0;
}

void smcr_sock_negotiated(int fd, bool active)
{
	int state_fd = smcr_sys_memfd_sealed(STATE_BYTES), fl = REAL(fcntl)(fd, F_GETFL);
	struct smcr_sock *sk = state_fd >= 0 ? view_new(state_fd, true) : NULL;

	if (!sk) {
		if (state_fd >= 0)
			REAL(close)(state_fd);
		smcr_log(SMCR_LOG_WARN, "fd %d: out of memory: the connection stays on TCP", fd);
		return;
	}
	atomic_init(&sk->sh->holders, 1);
	atomic_init(&sk->sh->phase, SMCR_SOCK_IDLE);
	atomic_init(&sk->sh->nonblock, fl >= 0 && (fl & O_NONBLOCK));
	sk->sh->active = active;
	sk->conn.sock = fd;
	sk->ino = socket_inode(fd);
	sk->conn.record = smcr_fd_record(fd);
	sk->state_fd = smcr_sys_fd_aside(state_fd);
	smcr_sys_fd_keep(&sk->state_fd);
	if (active)
		on_offer(sk, true);
	if (!smcr_fd_set_sock(fd, sk))
		smcr_sock_put(sk, fd);
}

/* Takes up to n of the holds in flight (messages, an exec); how many it took. */
static unsigned int take_in_flight(struct smcr_sock *sk, unsigned int n)
{
	unsigned int flying = atomic_load(&sk->sh->in_flight), taken;

	do
		taken = flying < n ? flying : n;
	while (taken && !atomic_compare_exchange_weak(&sk->sh->in_flight, &flying, flying - taken));
	return taken;
}

/* Under all_lock: this process's view of the socket whose inode is ino (0: none), or NULL. */
static struct smcr_sock *view_of_inode(ino_t ino)
{
	for (struct smcr_sock *sk = all; ino && sk; sk = sk->next)
		if (sk->ino == ino)
			return sk;
	return NULL;
}

/*
 * fd names a connection this process has a view of already (a new image
 * that starts with it on 0 and 1, as inetd's do): true, and fd shares that
 * view, as a dup would.  Two views of one connection in one process kept
 * two RDMA transports, and bytes written through one were announced by a
 * CDC of the other without their WRITE: the peer read zeros.
 */
static bool adopted_already(int fd)
{
	ino_t ino = socket_inode(fd);
	struct smcr_sock *same;

	pthread_mutex_lock(&all_lock);
	same = view_of_inode(ino);
	if (same)
		smcr_sock_get(same);
	pthread_mutex_unlock(&all_lock);
	if (!same)
		return false;
	/* a message's or an exec's hold for this descriptor is the view's already */
	if (take_in_flight(same, 1))
		atomic_fetch_sub(&same->sh->holders, 1);
	if (!smcr_fd_set_sock(fd, same))
		smcr_sock_put(same, fd);
	return true;
}

void smcr_sock_adopt(int fd, bool active)
{
	struct smcr_sock *sk = NULL;
	uint64_t token;
	int fds[SMCR_SHM_RESUMED_BOTH], n;

	if (adopted_already(fd) || resume(fd, &token, fds, &n))
		return;         /* shared, or not on shared memory: plain TCP */
	sk = view_new(fds[0], false);
	if (sk) {
		/* a message's or an exec's hold becomes ours; with none (a spawn), one more */
		if (!take_in_flight(sk, 1))
			atomic_fetch_add(&sk->sh->holders, 1);
		sk->conn.sock = fd;
		sk->ino = socket_inode(fd);
		sk->conn.record = smcr_fd_record(fd);
		smc_conn_lock(&sk->conn);
		if (phase_of(sk) <= SMCR_SOCK_SMC && view_transport(sk, fd, fds, n))
			sk->lost = true;
		if (phase_of(sk) == SMCR_SOCK_SMC && !sk->lost)
			smcr_conn_table_smc_taken(&sk->conn, rmb_class(sk));
		smc_conn_unlock(&sk->conn);
		smcr_log(SMCR_LOG_DEBUG, "fd %d: carrying on with its %s connection (%s)", fd,
			 active ? "client" : "server", sk->lost ? "lost" : "whole");
		if (!smcr_fd_set_sock(fd, sk))
			smcr_sock_put(sk, fd);
	}
	close_all(fds, n);
}

struct smcr_sock *smcr_sock_get(struct smcr_sock *sk)
{
	atomic_fetch_add_explicit(&sk->refs, 1, memory_order_relaxed);
	return sk;
}

static void let_go(struct smcr_sock *sk, int fd);

/* This process's last descriptor of sk, fd, is closing; the last process's ends it. */
static void sock_close(struct smcr_sock *sk, int fd)
{
	struct smc_conn *conn = &sk->conn;

	if (atomic_fetch_sub(&sk->sh->holders, 1) != 1)
		return;
	let_go(sk, fd);
	smc_conn_lock(conn);
	if (phase_of(sk) == SMCR_SOCK_SMC && view_complete(sk, fd)) {
		smc_conn_unlock(conn);
		if (sk->sh->linger_abort || smc_rx_readable(conn) > 0)
			smc_conn_abort(conn);     /* as TCP: unread data resets */
		else
			smc_tx_close(conn);
		smcr_conn_table_smc_closed(conn);
		smc_conn_lock(conn);
	}
	withdraw(sk, fd);
	smc_conn_unlock(conn);
}

void smcr_sock_put(struct smcr_sock *sk, int fd)
{
	int saved_errno = errno;

	if (sk->conn.sock == fd)
		sk->conn.sock = -1;     /* a dup lives on: no liveness through this number */
	if (atomic_fetch_sub_explicit(&sk->refs, 1, memory_order_acq_rel) != 1) {
		errno = saved_errno;
		return;
	}
	sk->conn.sock = fd;             /* still open: the close of the last one is ours */
	sock_close(sk, fd);
	view_free(sk);
	errno = saved_errno;
}

void smcr_sock_passing(struct smcr_sock *sk, int count)
{
	if (count > 0)
		offer_before_handover(sk, false);
	atomic_fetch_add(&sk->sh->holders, (unsigned int)count);
	atomic_fetch_add(&sk->sh->in_flight, (unsigned int)count);
}

/* One more descriptor of sk goes to the new image. */
static void hand_over(struct smcr_exec_handover *h, struct smcr_sock *sk)
{
	unsigned int i = 0;

	while (i < h->n && h->to[i].sk != sk)
		i++;
	if (i == h->n) {
		if (h->n == SMCR_EXEC_HANDOVER_MAX)
			return;
		h->to[h->n++].sk = sk;
		h->to[i].holds = 0;
	}
	h->to[i].holds++;
}

/* This process's connection whose TCP socket fd is (by inode), or NULL. */
static struct smcr_sock *sock_by_inode(int fd)
{
	struct stat st;

	if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode))
		return NULL;
	return view_of_inode(st.st_ino);
}

/*
 * A vfork child's descriptors, from /proc/self/fd with getdents64 into a
 * buffer on the stack: it runs in its parent's memory, where allocating
 * is not safe.  Nothing if /proc cannot be read.
 */
static void hand_over_borrowed(struct smcr_exec_handover *h)
{
	char buf[4096];
	int dir = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	long len;

	while (dir >= 0 && (len = syscall(SYS_getdents64, dir, buf, sizeof(buf))) > 0)
		for (long at = 0; at < len;) {
			const struct dirent64 *d = (const void *)(buf + at);
			int fd = atoi(d->d_name);
			struct smcr_sock *sk;

			at += d->d_reclen;
			if (d->d_name[0] != '.' && fd != dir && (sk = sock_by_inode(fd)) &&
			    smcr_sys_survives_exec(fd))
				hand_over(h, sk);
		}
	if (dir >= 0)
		REAL(close)(dir);
}

/* A number for one walk over the connections, which marks those it takes. */
static unsigned long walk_round(void)
{
	static _Atomic unsigned long rounds;

	return atomic_fetch_add(&rounds, 1) + 1;
}

/* A walk: act on every connection it wants, each once (walk_outside_lock). */
struct walk {
	enum walk_kind kind;
	unsigned long round;
	bool (*wanted)(const struct smcr_sock *sk, unsigned long round);
	void (*act)(struct smcr_sock *sk, const struct walk *w);
	enum smcr_reason reason;        /* a leave's */
	bool incomplete_only;           /* a leave's: only views that cannot be completed */
	bool views_inherited;           /* an offer's: the other process inherits our views (fork) */
	bool lock_tried;                /* all_lock only tried: the caller may interrupt its holder */
};

/* Takes all_lock, or (w->lock_tried) gives up after 100 ms of tries: false. */
static bool lock_all(const struct walk *w)
{
	if (w->lock_tried)
		return smcr_sys_trylock_for(&all_lock, 100);
	pthread_mutex_lock(&all_lock);
	return true;
}

/*
 * Acts on every connection w wants.  The acts run outside all_lock: they
 * may ask smcrd (an offer; a leave's RESUME or WITHDRAW; an exchange's
 * offer), which takes the control socket's lock, which fork takes before
 * all_lock.  A reference keeps each connection while it is acted on; in
 * batches of 16, each connection once (marked with the walk's round).
 */
static void walk_outside_lock(const struct walk *w)
{
	struct smcr_sock *batch[16];
	unsigned int n;

	do {
		n = 0;
		if (!lock_all(w))
			return;
		for (struct smcr_sock *sk = all; sk && n < 16; sk = sk->next)
			if (sk->walked[w->kind] != w->round && w->wanted(sk, w->round)) {
				sk->walked[w->kind] = w->round;
				batch[n++] = smcr_sock_get(sk);
			}
		pthread_mutex_unlock(&all_lock);
		for (unsigned int i = 0; i < n; i++) {
			w->act(batch[i], w);
			smcr_sock_put(batch[i], -1);
		}
	} while (n == 16);
}

static void offer_taken(struct smcr_sock *sk, const struct walk *w)
{
	offer_before_handover(sk, w->views_inherited);
}

/*
 * Offers every connection in its exchange for which wanted(sk, round)
 * holds, for another process that inherits this one's views or not.
 */
static void offer_wanted(unsigned long round, bool (*wanted)(const struct smcr_sock *sk,
							     unsigned long round),
			 bool views_inherited)
{
	walk_outside_lock(&(struct walk){ .kind = WALK_OFFER, .round = round, .wanted = wanted,
					  .act = offer_taken, .views_inherited = views_inherited });
}

static bool in_exchange(const struct smcr_sock *sk, unsigned long round)
{
	(void)round;
	return phase_of(sk) <= SMCR_SOCK_SETUP;
}

static bool handed_this_round(const struct smcr_sock *sk, unsigned long round)
{
	return sk->handed_call == round && phase_of(sk) <= SMCR_SOCK_SETUP;
}

void smcr_sock_offer_all(bool views_inherited)
{
	offer_wanted(walk_round(), in_exchange, views_inherited);
}

/*
 * Offers only the connections of this process's descriptors that a new
 * image starts with: the n of fds, or (fds NULL) those not close-on-exec.
 * Connections the new image never gets stay unoffered: a server's
 * buffer is committed at its offer.
 */
static void offer_handed(const int *fds, unsigned int n)
{
	unsigned long round = walk_round();
	struct smcr_sock *sk;

	pthread_mutex_lock(&all_lock);
	if (fds) {
		for (unsigned int i = 0; i < n; i++)
			if ((sk = smcr_fd_sock(fds[i])))
				sk->handed_call = round;
	} else {
		for (int fd = smcr_fd_next_sock(0); fd >= 0; fd = smcr_fd_next_sock((unsigned int)fd + 1))
			if (smcr_sys_survives_exec(fd) && (sk = smcr_fd_sock(fd)))
				sk->handed_call = round;
	}
	pthread_mutex_unlock(&all_lock);
	offer_wanted(round, handed_this_round, false);
}

/* Under all_lock: the holds in h are in flight, this image's own among them if h->own. */
static void count_handed(const struct smcr_exec_handover *h)
{
	for (unsigned int i = 0; i < h->n; i++) {
		struct smcr_sock *sk = h->to[i].sk;

		atomic_fetch_add(&sk->sh->holders, h->to[i].holds - h->own);
		atomic_fetch_add(&sk->sh->in_flight, h->to[i].holds);
	}
}

void smcr_sock_exec_prepare(struct smcr_exec_handover *h)
{
	h->own = !smcr_sys_borrowed_memory();
	h->n = 0;
	/* not from a vfork child: its requests would go on our socket to smcrd */
	if (h->own)
		offer_handed(NULL, 0);
	pthread_mutex_lock(&all_lock);
	if (!h->own)
		hand_over_borrowed(h);
	for (int fd = h->own ? smcr_fd_next_sock(0) : -1; fd >= 0;
	     fd = smcr_fd_next_sock((unsigned int)fd + 1))
		if (smcr_sys_survives_exec(fd))
			hand_over(h, smcr_fd_sock(fd));
	count_handed(h);
	pthread_mutex_unlock(&all_lock);
}

void smcr_sock_exec_failed(const struct smcr_exec_handover *h)
{
	pthread_mutex_lock(&all_lock);
	for (unsigned int i = 0; i < h->n; i++) {
		struct smcr_sock *sk = h->to[i].sk;

		take_in_flight(sk, h->to[i].holds);
		atomic_fetch_sub(&sk->sh->holders, h->to[i].holds - h->own);
	}
	pthread_mutex_unlock(&all_lock);
}

void smcr_sock_spawn_prepare(struct smcr_exec_handover *h, const int *parent_fds,
			     unsigned int n)
{
	h->own = false;
	h->n = 0;
	offer_handed(parent_fds, n);
	pthread_mutex_lock(&all_lock);
	for (unsigned int i = 0; i < n; i++)
		if (smcr_fd_sock(parent_fds[i]))
			hand_over(h, smcr_fd_sock(parent_fds[i]));
	for (unsigned int i = 0; i < h->n; i++)
		smcr_sock_get(h->to[i].sk);     /* another thread may close it meanwhile */
	count_handed(h);
	pthread_mutex_unlock(&all_lock);
}

void smcr_sock_spawn_done(const struct smcr_exec_handover *h, bool spawned)
{
	if (!spawned)
		smcr_sock_exec_failed(h);
	for (unsigned int i = 0; i < h->n; i++)
		smcr_sock_put(h->to[i].sk, -1);
}

/* fork(), before: every connection is about to be held by one process more. */
void smcr_sock_fork_prepare(void)
{
	pthread_mutex_lock(&all_lock);
	for (struct smcr_sock *sk = all; sk; sk = sk->next)
		atomic_fetch_add(&sk->sh->holders, 1);
}

/* fork(), after, in the parent. */
void smcr_sock_fork_done(void)
{
	pthread_mutex_unlock(&all_lock);
}

/*
 * fork(), after, in the child.  Its views count the child's own traffic
 * from here (the parent's records keep what was: counted once).  A QP and
 * its memory regions are the parent's (smc_rdma.c): the child's views of
 * connections on RDMA let go of them untouched, and the child cannot use
 * those connections (lost: ECONNRESET).  Connections not yet set up are
 * the child's to set up.
 */
void smcr_sock_fork_child(void)
{
	for (struct smcr_sock *sk = all; sk; sk = sk->next) {
		sk->conn.traffic = (struct smc_traffic){ 0 };
		sk->staging_granted = 0;        /* the parent's grant, not ours to give back */
		if (!sk->conn.ops->setup.lost_by_fork || !sk->conn.priv)
			continue;
		sk->conn.priv = NULL;
		sk->conn.rmb = NULL;
		sk->conn.rmb_size = sk->conn.peer_rmb_size = 0;
		sk->attached = false;
		sk->lost = true;
	}
	pthread_mutex_unlock(&all_lock);
}

/* ---- leaving for TCP mid-stream (conn/smc_leave.h) ---- */

/*
 * This end left SMC and the peer's reply to its LEAVE is due
 * (conn/smc_leave.h): takes it if all of it came, without waiting, if the
 * process may (a seccomp filter may forbid a recvmsg that does not wait).
 * Called as the process writes, polls, closes its last descriptor of the
 * connection, or ends: a reply left unread when the kernel closes the
 * socket would make that close a reset, and one left in the socket would
 * read as data to poll.
 */
void smcr_sock_reply_drain(struct smcr_sock *sk)
{
	struct smc_conn *conn = &sk->conn;
	int fd = conn->sock;

	if (!smc_leave_reply_due(conn) ||
	    !smcr_filter_permits(SYS_recvmsg, (const uint64_t[6]){ (uint64_t)fd, 0,
								  MSG_DONTWAIT }))
		return;
	smc_conn_lock(conn);
	smc_leave_reply(conn, MSG_DONTWAIT, sk->attached, !smcr_filter_any());
	smc_conn_unlock(conn);
}

/*
 * Under the connection lock: the connection goes on over the kernel's
 * socket from here, in every process holding it (the phase is shared).
 * The buffers go back to smcrd; each view keeps its mappings until its
 * process lets go of the socket, since a call of another thread may be
 * under way in them.
 */
static void went_to_tcp(struct smcr_sock *sk, enum smcr_reason reason, uint32_t peer_reason)
{
	int fd = sk->conn.sock;

	smcr_conn_table_smc_left(&sk->conn, reason, peer_reason);
	smcr_log(SMCR_LOG_DEBUG, "fd %d: the connection goes on over TCP from here: %s "
		 "(0x%08x, peer 0x%08x)", fd, smcr_reason_name(reason), smcr_reason_code(reason),
		 peer_reason);
	withdraw_offer(sk, fd);
	atomic_store_explicit(&sk->sh->phase, SMCR_SOCK_TCP, memory_order_release);
}

/*
 * Under the connection lock: this process can no longer keep the
 * connection on SMC (reason), so it leaves, unless the peer has closed
 * (what is left to read is in our RMB) or left first (answered here,
 * while we still may: ours is the RMB to read out).  A view that cannot
 * reach the transport knows only what the state says.
 */
static void leave(struct smcr_sock *sk, int fd, enum smcr_reason reason)
{
	struct smc_conn *conn = &sk->conn;
	bool whole = view_complete(sk, fd);

	if (phase_of(sk) != SMCR_SOCK_SMC || (whole && smc_leave_fetch_answered(conn)) ||
	    (conn->st->peer_state & (SMC_CDC_PEER_CONN_CLOSED | SMC_CDC_PEER_LEAVING)))
		return;
	smc_leave_send(conn, smcr_reason_code(reason), whole);
	if (conn->st->local_state & SMC_CDC_PEER_LEAVING)      /* even if its CDC failed */
		went_to_tcp(sk, reason, 0);
}

/* The peer left: once our RMB is read, the kernel's socket carries the rest. */
static enum smcr_sock_phase peer_left(struct smcr_sock *sk)
{
	struct smc_conn *conn = &sk->conn;
	enum smcr_sock_phase phase;

	smc_conn_lock(conn);
	if (phase_of(sk) == SMCR_SOCK_SMC && smc_leave_fetch(conn) == 0 && conn->st->leave_taken &&
	    smc_ring_readable(conn->rmb_size, conn->st->rx_cons, conn->st->rx_prod) == 0)
		went_to_tcp(sk, SMCR_REASON_PEERLEFT, conn->st->leave_reason);
	phase = phase_of(sk);
	smc_conn_unlock(conn);
	return phase;
}

enum smcr_sock_phase smcr_sock_phase(struct smcr_sock *sk)
{
	enum smcr_sock_phase phase = phase_of(sk);

	/*
	 * A view that cannot reach the buffers (an RDMA connection forked or
	 * passed once used; smcrd out of reach) goes on over TCP if it can
	 * leave, and is reset in this process if it cannot.
	 */
	if (__builtin_expect(phase == SMCR_SOCK_SMC && !sk->attached, 0)) {
		smc_conn_lock(&sk->conn);
		if (!view_complete(sk, sk->conn.sock)) {
			leave(sk, sk->conn.sock, SMCR_REASON_NOSMCDEV);
			phase = phase_of(sk) == SMCR_SOCK_TCP ? SMCR_SOCK_TCP : SMCR_SOCK_RESET;
		}
		smc_conn_unlock(&sk->conn);
	}
	/* a hint read without the lock: peer_left() looks again under it */
	if (__builtin_expect(phase == SMCR_SOCK_SMC &&
			     (__atomic_load_n(&sk->conn.st->peer_state, __ATOMIC_RELAXED) &
			      SMC_CDC_PEER_LEAVING), 0))
		phase = peer_left(sk);
	return phase;
}

/* ---- the CLC exchange ---- */

int smcr_sock_shut_smc(struct smcr_sock *sk, int how)
{
	if (how != SHUT_WR) {   /* a reader waiting now sees it too */
		smc_conn_lock(&sk->conn);
		sk->conn.st->rd_shut = true;
		smc_conn_unlock(&sk->conn);
		sk->conn.ops->wake(&sk->conn);
	}
	return how != SHUT_RD ? smc_tx_shutdown(&sk->conn) : 0;
}

/* SHUT_RD, SHUT_WR and SHUT_RDWR as bits (1, 2, 3), so that two calls add up. */
void smcr_sock_shut_later(struct smcr_sock *sk, int how)
{
	atomic_fetch_or(&sk->sh->shut_pending, how + 1);
}

/* What shutdown() asked during the exchange, now that it ended in phase. */
static void shut_as_asked(struct smcr_sock *sk, int fd, enum smcr_sock_phase phase)
{
	int bits = atomic_exchange(&sk->sh->shut_pending, 0);

	if (!bits)
		return;
	if (phase == SMCR_SOCK_SMC)
		smcr_sock_shut_smc(sk, bits - 1);
	else if (phase == SMCR_SOCK_TCP)
		REAL(shutdown)(fd, bits - 1);
}

/*
 * fd stays on TCP for reason (one of the table's: it indexes the counters):
 * said once, per descriptor, in the counters and the record.
 */
static void fell_back(struct smcr_sock *sk, int fd, enum smcr_reason reason)
{
	smcr_fd_set_reason(fd, reason);
	smcr_stat_add(fallbacks[reason], 1);
	smcr_conn_table_fell_back(sk->conn.record, SMCR_CONN_TCP, reason,
				  sk->sh->setup.peer_diagnosis);
	smcr_log(SMCR_LOG_DEBUG, "fd %d: CLC: staying on TCP: %s (0x%08x, peer 0x%08x)", fd,
		 smcr_reason_name(reason), smcr_reason_code(reason), sk->sh->setup.peer_diagnosis);
}

/* Under the connection lock: the exchange of fd ended in state. */
static void conclude(struct smcr_sock *sk, int fd, enum smc_setup_state state)
{
	enum smcr_reason reason = smcr_reason_known(sk->sh->setup.reason);

	if (state == SMC_SETUP_DONE) {
		sk->conn.sock = fd;
		smcr_conn_table_smc_opened(&sk->conn, sk->sh->active, rmb_class(sk));
		smcr_log(SMCR_LOG_DEBUG, "fd %d: SMC connection on %s", fd, sk->conn.ops->name);
		atomic_store_explicit(&sk->sh->phase, SMCR_SOCK_SMC, memory_order_release);
		return;
	}
	/*
	 * Our buffer goes back now, not at close: offered before the exchange,
	 * it outlived one the peer declined before we prepared anything (a
	 * server whose client had no buffer held its own for as long as the
	 * TCP connection lasted).
	 */
	withdraw(sk, fd);
	smcr_fd_set_reason(fd, reason);
	if (state == SMC_SETUP_FALLBACK) {
		if (!atomic_load(&sk->sh->writes_tcp))  /* else told when it declined */
			fell_back(sk, fd, reason);
		atomic_store_explicit(&sk->sh->phase, SMCR_SOCK_TCP, memory_order_release);
		return;
	}
	/* the stream holds half an exchange: no byte of it may reach the application */
	smcr_stat_add(handshake_errors, 1);
	smcr_conn_table_fell_back(sk->conn.record, SMCR_CONN_RESET, reason, 0);
	/* a peer that reset its end mid-exchange is the application's business, as over TCP */
	smcr_log(reason == SMCR_REASON_PEERCLOSED ? SMCR_LOG_DEBUG : SMCR_LOG_WARN,
		 "fd %d: CLC failed: %s (0x%08x): connection reset", fd,
		 smcr_reason_name(reason), smcr_reason_code(reason));
	smcr_sys_reset(fd);
	atomic_store_explicit(&sk->sh->phase, SMCR_SOCK_RESET, memory_order_release);
}

/*
 * Under the connection lock: a server declined for want of a Proposal
 * (smc_setup.h), so the connection is on TCP for the application's writes
 * from now on, and counted so; its buffer, if a handover had it offered
 * already, goes back now.  The reads wait for the late Proposal.
 */
static void note_declined(struct smcr_sock *sk, int fd)
{
	if (atomic_load(&sk->sh->writes_tcp))
		return;
	withdraw(sk, fd);
	fell_back(sk, fd, smcr_reason_known(sk->sh->setup.reason));
	atomic_store(&sk->sh->writes_tcp, true);
}

/* What a call wants of the exchange it drives. */
enum exchange_call {
	CALL_LOOKS,             /* only to go on: reads, polls */
	CALL_SENDS,             /* to write (smc_setup_want_send) */
	CALL_LETS_GO,           /* the last close or end: a server answers nothing (smc_setup_let_go) */
};

/*
 * One step of sk's CLC exchange on fd, under the connection's lock and
 * without waiting: begun if it was not, taken as far as the messages that
 * came allow, concluded if it ended, for a call that wants what call says.
 * Returns the phase; *due_ms: the milliseconds until a step must decline
 * for want of a Proposal (-1: no such time); *moved: whether the exchange
 * moved.
 */
static enum smcr_sock_phase exchange_step(struct smcr_sock *sk, int fd, enum exchange_call call,
					  int *due_ms, bool *moved)
{
	const struct smc_setup_transport transport = {
		.offers = setup_offers, .prepare = setup_prepare, .reach = setup_reach,
		.attach = setup_attach, .describe = setup_describe, .abandon = setup_abandon,
		.ctx = sk,
	};
	struct smc_setup *setup = &sk->sh->setup;
	enum smcr_sock_phase phase;

	smc_conn_lock(&sk->conn);
	phase = phase_of(sk);
	enum smc_setup_state was = setup->state;
	enum smcr_sock_phase phase_was = phase;

	if (phase == SMCR_SOCK_IDLE) {
		if (sk->sh->active)
			smc_setup_client(setup, local_gid());
		else
			smc_setup_server(setup, local_gid());
		phase = SMCR_SOCK_SETUP;
		atomic_store_explicit(&sk->sh->phase, phase, memory_order_release);
	}
	*due_ms = -1;
	if (phase == SMCR_SOCK_SETUP) {
		if (call == CALL_SENDS)
			smc_setup_want_send(setup);
		else if (call == CALL_LETS_GO && smc_setup_let_go(setup, fd, &transport))
			atomic_store(&sk->sh->writes_tcp, true);        /* carried nothing: no fallback */
		/* the exchange may have begun in another process: ours is fd */
		smc_setup_progress(setup, fd, &transport);
		if (smc_setup_final(setup))
			conclude(sk, fd, setup->state);
		else if (smc_setup_writes_tcp(setup))
			note_declined(sk, fd);
		else if (setup->proposal_due_ms)
			*due_ms = smc_setup_want_send(setup);
		phase = phase_of(sk);
	}
	*moved = phase != phase_was || setup->state != was;
	smc_conn_unlock(&sk->conn);
	return phase;
}

/*
 * Threads of one process in one exchange (settle): each looks at it (a
 * step), then waits for the peer's next message.  Were each to poll the
 * socket, one could take the message another waits for, and the exchange
 * would then move on with no sign on the socket for the other, which
 * would sleep out its round.  So one of them polls the socket (polling),
 * and the others sleep on exchange_turn, which moves when a step moves the
 * exchange and when a thread leaves it.  Each reads the turn before its
 * step: a move after that read fails the futex's compare or wakes it, and
 * a move before it, that step has seen.  Threads of other processes
 * holding the socket (a fork) poll it too, and see such a move at their
 * next round at worst.
 */
static void next_turn(struct smcr_sock *sk, unsigned int self)
{
	atomic_fetch_add(&sk->exchange_turn, 1);
	/* self: the caller counts among the settlers; a lone one wakes nobody */
	if (atomic_load(&sk->settling) > self)
		smcr_sys_futex(&sk->exchange_turn, FUTEX_WAKE_PRIVATE, INT_MAX, NULL);
}

/* Sleeps ms at most, polling fd for POLLIN if no other thread does, else on the turn. */
static int await_turn(struct smcr_sock *sk, int fd, uint32_t turn, int64_t ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000 };
	bool idle = false;
	int rc;

	if (!atomic_compare_exchange_strong(&sk->polling, &idle, true))
		return smcr_sys_futex(&sk->exchange_turn, FUTEX_WAIT_PRIVATE, turn, &ts) < 0 &&
		       errno == EINTR ? -1 : 0;
	rc = smcr_sys_poll(&p, 1, (int)ms);
	atomic_store(&sk->polling, false);
	return rc;
}

/*
 * Waits until the peer's next CLC message may have come on fd, or another
 * thread moved the exchange since turn, with the connection unlocked, so
 * that other threads and processes go on with it meanwhile: a round of at
 * most SMC_CLC_WAIT_SHORT_MS, and no longer than due_ms (-1: no bound),
 * after which the step checks a message that began and stalled, or
 * declines for want of a Proposal.  *waited_ms counts the wait against
 * the socket's timeout_ms (0: none).  Returns 0 to go on, or why the wait
 * must end before the exchange: EAGAIN, that timeout passed; EINTR, a
 * signal came whose handler does not restart the call.
 */
static int await_message(struct smcr_sock *sk, int fd, uint32_t turn, int timeout_ms,
			 int64_t *waited_ms, int due_ms)
{
	int64_t round = SMC_CLC_WAIT_SHORT_MS;
	uint64_t start = smc_clock_ns();
	int saved_errno = errno, rc;

	if (timeout_ms > 0 && timeout_ms - *waited_ms < round)
		round = timeout_ms - *waited_ms;
	if (round <= 0)
		return EAGAIN;
	if (due_ms >= 0 && due_ms < round)
		round = due_ms;
	rc = await_turn(sk, fd, turn, round);
	*waited_ms += (int64_t)((smc_clock_ns() - start) / 1000000);
	rc = rc < 0 && errno == EINTR && !smcr_sys_restarts(timeout_ms) ? EINTR : 0;
	errno = saved_errno;
	return rc;              /* a poll that failed otherwise: the step sees why */
}

/*
 * What bounds a blocking call's wait for the exchange: the shorter of the
 * socket's timeouts (0: neither is set).  The exchange stands in the way of
 * both directions, and a program that set either expects its calls back.
 */
static int exchange_timeout_ms(const struct smcr_sock *sk)
{
	int rcv = sk->conn.st->rcv_timeout_ms, snd = sk->conn.st->snd_timeout_ms;

	if (rcv <= 0 || snd <= 0)
		return rcv > 0 ? rcv : snd > 0 ? snd : 0;
	return rcv < snd ? rcv : snd;
}

/*
 * smcr_sock_settle, its waits bounded by cap_ms too (0: no cap), for a
 * call that wants what call says: one that writes ends its wait once its
 * bytes go on TCP.
 */
static enum smcr_sock_phase settle(struct smcr_sock *sk, int fd, bool may_wait, int cap_ms,
				   enum exchange_call call)
{
	enum smcr_sock_phase phase;
	int64_t waited_ms = 0;
	int stop = 0, due_ms, timeout_ms;
	bool wait;

	/* the descriptor it was known by may be closed (put): this one serves */
	if (__builtin_expect(sk->conn.sock < 0, 0))
		sk->conn.sock = fd;
	phase = smcr_sock_phase(sk);
	if (phase >= SMCR_SOCK_SMC)
		return phase;   /* every call of a settled connection: nothing more to touch */
	timeout_ms = exchange_timeout_ms(sk);
	if (cap_ms > 0 && (timeout_ms <= 0 || cap_ms < timeout_ms))
		timeout_ms = cap_ms;
	/* capped (a sandbox about to close the door): a non-blocking socket waits too */
	wait = may_wait && (cap_ms > 0 || !atomic_load(&sk->sh->nonblock));
	atomic_fetch_add(&sk->settling, 1);
	for (;;) {
		uint32_t turn = atomic_load(&sk->exchange_turn);
		bool moved;

		phase = exchange_step(sk, fd, call, &due_ms, &moved);
		if (moved)
			next_turn(sk, 1);
		if (phase != SMCR_SOCK_SETUP || !wait || stop ||
		    (call == CALL_SENDS && smcr_sock_writes_tcp(sk)))
			break;
		stop = await_message(sk, fd, turn, timeout_ms, &waited_ms, due_ms);
	}
	atomic_fetch_sub(&sk->settling, 1);
	next_turn(sk, 0);       /* another thread may have slept while this one polled */
	if (stop)
		errno = stop;
	if (phase != SMCR_SOCK_SETUP) {
		shut_as_asked(sk, fd, phase);
		phase_changed(fd);
	}
	return phase;
}

enum smcr_sock_phase smcr_sock_settle(struct smcr_sock *sk, int fd, bool may_wait)
{
	return settle(sk, fd, may_wait, 0, CALL_LOOKS);
}

bool smcr_sock_writes_tcp(struct smcr_sock *sk)
{
	return atomic_load_explicit(&sk->sh->writes_tcp, memory_order_acquire);
}

int smcr_sock_want_send(struct smcr_sock *sk)
{
	int left;

	if (sk->sh->active || phase_of(sk) != SMCR_SOCK_SETUP || smcr_sock_writes_tcp(sk))
		return -1;
	smc_conn_lock(&sk->conn);
	left = phase_of(sk) == SMCR_SOCK_SETUP ? smc_setup_want_send(&sk->sh->setup) : -1;
	smc_conn_unlock(&sk->conn);
	return left;
}

/* The descriptor to act on sk by: the number it was known by may be closed, a dup not. */
static int fd_of(const struct smcr_sock *sk)
{
	return sk->conn.sock >= 0 ? sk->conn.sock : fd_naming(sk);
}

/*
 * sk's exchange, if still open, ended now, waiting up to SMC_CLC_WAIT_MS
 * for the peer: a sandbox, or another process, is about to take over.
 */
static void settle_now(struct smcr_sock *sk)
{
	int fd = fd_of(sk);

	if (phase_of(sk) <= SMCR_SOCK_SETUP && fd >= 0)
		settle(sk, fd, true, SMC_CLC_WAIT_MS, CALL_LOOKS);
}

static void settle_capped(struct smcr_sock *sk, const struct walk *w)
{
	(void)w;
	settle_now(sk);
}

/*
 * Whether fd's connection may go over a transport that a forked child
 * cannot use (RDMA), as smcr.conf stands: one that is allowed and, if it
 * is for remote peers only, not set aside for a peer on this host.
 */
static bool may_go_unforkable(int fd)
{
	uint32_t allowed = smcr_control_transports();
	bool here_allowed = allows_here(allowed);
	const struct smc_transport_setup *setup;

	for (unsigned int t = 0; t < SMCR_TRANSPORTS; t++) {
		setup = &smc_transport(t)->setup;
		if (setup->lost_by_fork && (allowed & setup->allowed_by) &&
		    !(setup->remote_only && here_allowed && peer_is_local(fd)))
			return true;
	}
	return false;
}

static bool same_addr(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return !memcmp(a, b, sizeof(struct sockaddr_in));
	return a->ss_family == AF_INET6 && !memcmp(a, b, sizeof(struct sockaddr_in6));
}

/*
 * The client end of server socket fd, if it is a connection of this
 * process still in its exchange (one thread may drive both ends): its
 * phase, else SMCR_SOCK_TCP.
 */
static enum smcr_sock_phase client_here(int fd)
{
	enum smcr_sock_phase found = SMCR_SOCK_TCP;
	struct sockaddr_storage peer, local;
	socklen_t len = sizeof(peer);

	if (!peer_is_local(fd) || REAL(getpeername)(fd, (struct sockaddr *)&peer, &len))
		return found;
	pthread_mutex_lock(&all_lock);
	for (struct smcr_sock *sk = all; sk && found == SMCR_SOCK_TCP; sk = sk->next) {
		int client = sk->sh->active && phase_of(sk) <= SMCR_SOCK_SETUP ? fd_of(sk) : -1;

		len = sizeof(local);
		if (client >= 0 && !REAL(getsockname)(client, (struct sockaddr *)&local, &len) &&
		    same_addr(&local, &peer))
			found = phase_of(sk);
	}
	pthread_mutex_unlock(&all_lock);
	return found;
}

void smcr_sock_accepted(struct smcr_sock *sk, int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	enum smcr_sock_phase client = SMCR_SOCK_TCP;

	if (may_go_unforkable(fd)) {
		client = client_here(fd);
		/* the first call answers, in whichever process it comes: a fork server's child */
		if (client == SMCR_SOCK_TCP)
			return;
	}
	/* the Proposal our own client sent is on its way: in a moment, unless lost */
	if (client == SMCR_SOCK_SETUP)
		smcr_sys_poll_until(&p, 1, smc_deadline_after(SMC_CLC_WAIT_MS));
	settle(sk, fd, false, 0, CALL_LOOKS);
}

/*
 * A server's exchange whose Proposal may lie unread: declined for want of
 * it (NOPROPOSAL) with the late Proposal not yet read off, or never
 * answered (accept() leaves that to the first call where RDMA may carry
 * the connection, and there may be none).  If it is still there when the
 * TCP socket closes, the kernel resets the connection (unread data) and
 * drops what the application wrote that the peer has not yet taken: a
 * reset TCP would not give.  So the last holder's close or end lets go of
 * the exchange: one never answered declines, and the Proposal is read off
 * if it came.  It is not waited for: a close or an exit must not wait on
 * a peer that may be silent.  One that comes after the close still
 * resets, as bytes do that reach a closed TCP socket, by then mostly after
 * the answer was taken.
 */
static bool owes_letting_go(const struct smcr_sock *sk)
{
	return !sk->sh->active && phase_of(sk) <= SMCR_SOCK_SETUP;
}

static void let_go(struct smcr_sock *sk, int fd)
{
	if (fd >= 0 && owes_letting_go(sk))
		settle(sk, fd, false, 0, CALL_LETS_GO);
	smcr_sock_reply_drain(sk);
}

/*
 * At the process's end: declined ones, and the never answered whose last
 * holder it is; and those whose reply to our leaving is due.
 */
static bool ending_lets_go(const struct smcr_sock *sk, unsigned long round)
{
	(void)round;
	return (owes_letting_go(sk) &&
		(atomic_load_explicit(&sk->sh->writes_tcp, memory_order_acquire) ||
		 atomic_load(&sk->sh->holders) == 1)) ||
	       smc_leave_reply_due(&sk->conn);
}

static bool ending_reply_due(const struct smcr_sock *sk, unsigned long round)
{
	(void)round;
	return smc_leave_reply_due(&sk->conn);
}

static void let_go_walked(struct smcr_sock *sk, const struct walk *w)
{
	(void)w;
	let_go(sk, fd_of(sk));
}

void smcr_sock_process_ending(void)
{
	int saved_errno = errno;

	/* a confined process's exchanges ended before the filter: only replies are due */
	walk_outside_lock(&(struct walk){ .kind = WALK_ENDING, .round = walk_round(),
					  .wanted = __atomic_load_n(&confined, __ATOMIC_ACQUIRE)
							    ? ending_reply_due : ending_lets_go,
					  .act = let_go_walked, .lock_tried = true });
	errno = saved_errno;
}

void smcr_sock_confine(void)
{
	int saved_errno = errno;

	__atomic_store_n(&confined, true, __ATOMIC_RELEASE);
	walk_outside_lock(&(struct walk){ .kind = WALK_SANDBOX, .round = walk_round(),
					  .wanted = in_exchange, .act = settle_capped });
	errno = saved_errno;
}

static bool on_smc(const struct smcr_sock *sk, unsigned long round)
{
	(void)round;
	return phase_of(sk) == SMCR_SOCK_SMC;
}

static void leave_walked(struct smcr_sock *sk, const struct walk *w)
{
	int fd = fd_of(sk);

	if (fd < 0)
		return;
	smc_conn_lock(&sk->conn);
	if (!w->incomplete_only || !view_complete(sk, fd))
		leave(sk, fd, w->reason);
	smc_conn_unlock(&sk->conn);
}

void smcr_sock_leave_all(enum smcr_reason reason)
{
	int saved_errno = errno;

	walk_outside_lock(&(struct walk){ .kind = WALK_SANDBOX, .round = walk_round(),
					  .wanted = on_smc, .act = leave_walked, .reason = reason });
	errno = saved_errno;
}

void smcr_sock_leave_incomplete(void)
{
	int saved_errno = errno;

	walk_outside_lock(&(struct walk){ .kind = WALK_SANDBOX, .round = walk_round(),
					  .wanted = on_smc, .act = leave_walked,
					  .reason = SMCR_REASON_NOSMCDEV, .incomplete_only = true });
	errno = saved_errno;
}

/*
 * On TCP, and nothing of ours left to read (our leave is over, or there
 * was none): every call on fd is the kernel's from now on, without a look
 * here.  Under the lock, which the leave's flags change under; only if it
 * is free, since a wait for it is a futex call, which the seccomp filter
 * of a process that left may forbid: a busy lock leaves it to a later call.
 */
static void serve_no_more(struct smcr_sock *sk, int fd)
{
	bool over;

	if (!smcr_shared_lock_try(&sk->conn.st->lock))
		return;
	over = !smc_leave_reads_ours(&sk->conn);
	smc_conn_unlock(&sk->conn);
	if (over)
		smcr_fd_set_plain(fd, sk);
}

bool smcr_sock_takes(struct smcr_sock *sk, int fd, bool dontwait, bool sending)
{
	enum smcr_sock_phase phase = settle(sk, fd, !dontwait, 0, sending ? CALL_SENDS : CALL_LOOKS);

	if (phase == SMCR_SOCK_TCP) {   /* ours to read while our leave is not over */
		if (sending)
			smcr_sock_reply_drain(sk);
		if (!sending && smc_leave_reads_ours(&sk->conn))
			return true;
		serve_no_more(sk, fd);
		return false;
	}
	return !(sending && phase == SMCR_SOCK_SETUP && smcr_sock_writes_tcp(sk));
}
