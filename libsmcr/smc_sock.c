/*
 * smc_sock.c - an application's SMC connection (smc_sock.h): its CLC
 * exchange, the shared-memory buffers it sets up through smcrd's broker,
 * and the socket calls over it.
 *
 * fork().  A connection in use when the process forks lives on in two
 * processes, each with its own copy of the cursors, and only one of them
 * may go on using it (the usual pattern: one serves, the other closes).
 * Neither can know when the other is done, so from then on closing it does
 * not send the CDC close: the peer learns of the end from the TCP
 * connection, which ends when the last process closes it (smc_rx_peer_lost:
 * a plain end of stream reads as the peer's close).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/sockios.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include "conn_table.h"
#include "log.h"
#include "readiness.h"
#include "real.h"
#include "shm_broker_client.h"
#include "smc_rx.h"
#include "smc_setup.h"
#include "smc_shm.h"
#include "smc_sock.h"
#include "smc_tx.h"
#include "stats.h"

/*
 * Our receive buffer: 256 KiB, large enough for a stream to move in big
 * steps with few wake-ups, small enough for thousands of connections
 * within a usual max_memory.
 */
#define RMB_SIZE_CLASS 4

/* sendfile and splice move bytes through a bounce buffer this large. */
#define BOUNCE_SIZE 65536

struct smcr_sock {
	_Atomic unsigned int refs;
	_Atomic int phase;              /* enum smcr_sock_phase */
	bool active;                    /* a client */
	_Atomic bool nonblock;          /* O_NONBLOCK, as the application set it */
	_Atomic bool forked;            /* may live on in another process: see above */
	bool linger_abort;              /* SO_LINGER with a zero timeout: close resets */
	bool corked;                    /* TCP_CORK: sends wait for more, as MSG_MORE */
	bool rd_shut;                   /* shutdown(SHUT_RD): reads never wait */
	bool offered;                   /* our buffer is on offer as token */
	uint64_t token;
	struct smc_setup setup;
	struct smc_conn conn;
	struct smcr_sock *prev, *next;  /* every connection of the process */
};

static pthread_mutex_t all_lock = PTHREAD_MUTEX_INITIALIZER;
static struct smcr_sock *all;

/* ---- identity: which host and namespace we are on (PROTOCOL.md) ---- */

static uint32_t fnv1a(uint32_t h, const void *data, size_t len)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

/*
 * Our GID: a host tag in bits 63-32 (the boot and the network namespace:
 * two ends agree on it exactly when they can share memory through smcrd),
 * the process in bits 31-0.
 */
static uint64_t local_gid(void)
{
	static _Atomic uint32_t host_tag;
	uint32_t tag = atomic_load_explicit(&host_tag, memory_order_relaxed);

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
		atomic_store_explicit(&host_tag, tag, memory_order_relaxed);
	}
	return (uint64_t)tag << 32 | (uint32_t)getpid();
}

/* ---- the transport set up during the CLC exchange (smc_setup.h) ---- */

static enum smcr_reason setup_prepare(void *ctx, struct smc_clc_accept_confirm *ours)
{
	struct smcr_sock *sk = ctx;
	uint64_t bytes = smc_shm_region_size(RMB_SIZE_CLASS);
	int memfd = smcr_shm_memfd(bytes), efd = smcr_shm_eventfd(), rc;

	if (efd >= 0)
		efd = smcr_fd_move_aside(efd);
	if (memfd < 0 || efd < 0) {
		rc = memfd < 0 ? memfd : efd;
		goto fail;
	}
	rc = sk->conn.ops->create_rmb(&sk->conn, RMB_SIZE_CLASS, memfd, efd);
	if (rc)
		goto fail;
	efd = -1;       /* the transport's now */
	rc = smcr_shm_offer(sk->setup.sock, memfd, bytes, sk->conn.ops->wake_fd(&sk->conn),
			    &sk->token);
	REAL(close)(memfd);
	if (rc) {
		sk->conn.ops->release(&sk->conn);
		return rc == -ENOMEM ? SMCR_REASON_MEM : SMCR_REASON_NOSMCDEV;
	}
	sk->offered = true;
	sk->conn.token = (uint32_t)sk->token;
	ours->d.token = sk->token;
	ours->d.dmbe_size = RMB_SIZE_CLASS;
	return SMCR_REASON_NONE;
fail:
	if (memfd >= 0)
		REAL(close)(memfd);
	if (efd >= 0)
		REAL(close)(efd);
	smcr_log(SMCR_LOG_WARN, "fd %d: no buffer for SMC: %s", sk->setup.sock, strerror(-rc));
	return rc == -ENOMEM ? SMCR_REASON_MEM : SMCR_REASON_INTERR;
}

static enum smcr_reason setup_attach(void *ctx, const struct smc_clc_accept_confirm *peer)
{
	struct smcr_sock *sk = ctx;
	int memfd, efd, rc = smcr_shm_attach(sk->setup.sock, peer->d.token, &memfd, &efd);

	if (rc) {
		smcr_log(SMCR_LOG_WARN, "fd %d: cannot map the peer's buffer: %s", sk->setup.sock,
			 strerror(-rc));
		return SMCR_REASON_NOSMCDEV;
	}
	efd = smcr_fd_move_aside(efd);
	rc = sk->conn.ops->attach_peer(&sk->conn, peer, memfd, efd);
	REAL(close)(memfd);
	if (rc) {
		REAL(close)(efd);
		smcr_log(SMCR_LOG_WARN, "fd %d: the peer's buffer is unusable: %s",
			 sk->setup.sock, strerror(-rc));
		return SMCR_REASON_NOSMCDEV;
	}
	sk->conn.peer_token = (uint32_t)peer->d.token;
	return SMCR_REASON_NONE;
}

/* Gives our buffer back: the connection stays on TCP, or is over. */
static void setup_abandon(void *ctx)
{
	struct smcr_sock *sk = ctx;

	if (sk->offered) {
		smcr_shm_withdraw(sk->token);
		sk->offered = false;
	}
	if (sk->conn.priv)
		sk->conn.ops->release(&sk->conn);
}

/* ---- life cycle ---- */

void smcr_sock_negotiated(int fd, bool active)
{
	struct smcr_sock *sk = calloc(1, sizeof(*sk));
	int fl = REAL(fcntl)(fd, F_GETFL);

	if (!sk || smc_conn_init(&sk->conn, &smc_shm_ops)) {
		free(sk);
		smcr_log(SMCR_LOG_WARN, "fd %d: out of memory: the connection stays on TCP", fd);
		return;
	}
	atomic_init(&sk->refs, 1);
	atomic_init(&sk->phase, SMCR_SOCK_IDLE);
	atomic_init(&sk->nonblock, fl >= 0 && (fl & O_NONBLOCK));
	sk->active = active;
	sk->conn.record = smcr_fd_record(fd);
	pthread_mutex_lock(&all_lock);
	sk->next = all;
	if (all)
		all->prev = sk;
	all = sk;
	pthread_mutex_unlock(&all_lock);
	if (!smcr_fd_set_sock(fd, sk))
		smcr_sock_put(sk, fd);
}

struct smcr_sock *smcr_sock_get(struct smcr_sock *sk)
{
	atomic_fetch_add_explicit(&sk->refs, 1, memory_order_relaxed);
	return sk;
}

/* The last descriptor is closing: end the SMC connection first. */
static void sock_close(struct smcr_sock *sk)
{
	struct smc_conn *conn = &sk->conn;
	bool forked = atomic_load(&sk->forked);

	switch (smcr_sock_phase(sk)) {
	case SMCR_SOCK_SMC:
		if (!forked && (sk->linger_abort || smc_rx_readable(conn) > 0))
			smc_tx_abort(conn);     /* as TCP: unread data resets */
		else if (!forked)
			smc_tx_close(conn);
		smcr_conn_table_smc_closed(conn);
		break;
	case SMCR_SOCK_SETUP:
		/* forked: a child may finish the exchange with our offer */
		if (sk->setup.prepared && !forked)
			sk->setup.transport.abandon(sk->setup.transport.ctx);
		break;
	default:
		break;
	}
	if (sk->offered && !forked)
		smcr_shm_withdraw(sk->token);
	smc_conn_destroy(conn);
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
	sock_close(sk);
	pthread_mutex_lock(&all_lock);
	if (sk->prev)
		sk->prev->next = sk->next;
	else
		all = sk->next;
	if (sk->next)
		sk->next->prev = sk->prev;
	pthread_mutex_unlock(&all_lock);
	free(sk);
	errno = saved_errno;
}

void smcr_sock_forked(void)
{
	/* both processes: called from fork's child and parent handlers */
	pthread_mutex_lock(&all_lock);
	for (struct smcr_sock *sk = all; sk; sk = sk->next)
		atomic_store(&sk->forked, true);
	pthread_mutex_unlock(&all_lock);
}

enum smcr_sock_phase smcr_sock_phase(const struct smcr_sock *sk)
{
	return atomic_load_explicit(&sk->phase, memory_order_acquire);
}

/* ---- the CLC exchange ---- */

/* Under conn->lock: the exchange of fd ended in state. */
static void conclude(struct smcr_sock *sk, int fd, enum smc_setup_state state)
{
	enum smcr_reason reason = sk->setup.reason;

	if (state == SMC_SETUP_DONE) {
		sk->conn.sock = fd;
		smcr_conn_table_smc_opened(&sk->conn, sk->active, RMB_SIZE_CLASS);
		smcr_log(SMCR_LOG_DEBUG, "fd %d: SMC connection on %s", fd, sk->conn.ops->name);
		atomic_store_explicit(&sk->phase, SMCR_SOCK_SMC, memory_order_release);
		return;
	}
	smcr_fd_set_reason(fd, reason);
	if (state == SMC_SETUP_FALLBACK) {
		smcr_stat_add(fallbacks[reason], 1);
		smcr_conn_table_fell_back(sk->conn.record, SMCR_CONN_TCP, reason,
					  sk->setup.peer_diagnosis);
		smcr_log(SMCR_LOG_DEBUG, "fd %d: CLC: staying on TCP: %s (0x%08x, peer 0x%08x)", fd,
			 smcr_reason_name(reason), smcr_reason_code(reason),
			 sk->setup.peer_diagnosis);
		atomic_store_explicit(&sk->phase, SMCR_SOCK_TCP, memory_order_release);
		return;
	}
	/* the stream holds half an exchange: no byte of it may reach the application */
	struct sockaddr unspec = { .sa_family = AF_UNSPEC };
	int saved_errno = errno;

	smcr_stat_add(handshake_errors, 1);
	smcr_conn_table_fell_back(sk->conn.record, SMCR_CONN_RESET, reason, 0);
	smcr_log(SMCR_LOG_WARN, "fd %d: CLC failed: %s (0x%08x): connection reset", fd,
		 smcr_reason_name(reason), smcr_reason_code(reason));
	REAL(connect)(fd, &unspec, sizeof(unspec));     /* sends the peer a reset */
	errno = saved_errno;
	atomic_store_explicit(&sk->phase, SMCR_SOCK_RESET, memory_order_release);
}

enum smcr_sock_phase smcr_sock_settle(struct smcr_sock *sk, int fd, bool may_wait)
{
	enum smcr_sock_phase phase = smcr_sock_phase(sk);
	const struct smc_setup_transport transport = {
		setup_prepare, setup_attach, setup_abandon, sk,
	};

	if (phase >= SMCR_SOCK_SMC)
		return phase;
	pthread_mutex_lock(&sk->conn.lock);
	phase = smcr_sock_phase(sk);
	if (phase == SMCR_SOCK_IDLE) {
		if (sk->active)
			smc_setup_client(&sk->setup, fd, local_gid(), &transport);
		else
			smc_setup_server(&sk->setup, fd, local_gid(), &transport);
		phase = SMCR_SOCK_SETUP;
		atomic_store_explicit(&sk->phase, phase, memory_order_release);
	}
	if (phase == SMCR_SOCK_SETUP) {
		bool wait = may_wait && !atomic_load(&sk->nonblock);

		sk->setup.sock = fd;
		smc_setup_progress(&sk->setup, wait ? SMC_CLC_WAIT_MS : 0);
		if (smc_setup_final(&sk->setup))
			conclude(sk, fd, sk->setup.state);
		phase = smcr_sock_phase(sk);
	}
	pthread_mutex_unlock(&sk->conn.lock);
	if (phase != SMCR_SOCK_SETUP)
		smcr_readiness_changed(fd);
	return phase;
}

bool smcr_sock_takes(struct smcr_sock *sk, int fd, bool dontwait)
{
	return smcr_sock_settle(sk, fd, !dontwait) != SMCR_SOCK_TCP;
}

/* ---- data ---- */

/* Calls on a connection that is not (yet) on SMC: how they fail. */
static ssize_t not_ready(struct smcr_sock *sk)
{
	errno = smcr_sock_phase(sk) == SMCR_SOCK_RESET ? ECONNRESET : EAGAIN;
	return -1;
}

/* A data call with iovcnt buffers may go ahead on sk; if not, errno says why. */
static bool usable(struct smcr_sock *sk, int iovcnt)
{
	if (smcr_sock_phase(sk) != SMCR_SOCK_SMC)
		return not_ready(sk) == 0;
	if (iovcnt < 0 || iovcnt > IOV_MAX) {
		errno = EINVAL;
		return false;
	}
	return true;
}

static ssize_t result(ssize_t n)
{
	if (n >= 0)
		return n;
	errno = (int)-n;
	return -1;
}

ssize_t smcr_sock_recv(struct smcr_sock *sk, const struct iovec *iov, int iovcnt, int flags)
{
	const int known = MSG_PEEK | MSG_WAITALL | MSG_TRUNC | MSG_OOB | MSG_DONTWAIT;
	bool nonblock = atomic_load_explicit(&sk->nonblock, memory_order_relaxed) || sk->rd_shut;
	ssize_t n;

	if (!usable(sk, iovcnt))
		return -1;
	n = smc_rx_recv(&sk->conn, iov, iovcnt, flags & known, nonblock);
	if (n == -EAGAIN && sk->rd_shut)
		n = 0;  /* after SHUT_RD, an empty buffer reads as end of file */
	return result(n);
}

ssize_t smcr_sock_send(struct smcr_sock *sk, const struct iovec *iov, int iovcnt, int flags)
{
	bool nonblock = atomic_load_explicit(&sk->nonblock, memory_order_relaxed);
	int smc_flags = flags & (MSG_OOB | MSG_MORE | MSG_DONTWAIT);
	ssize_t n;

	if (!usable(sk, iovcnt))
		return -1;
	if (sk->corked)
		smc_flags |= MSG_MORE;
	n = smc_tx_send(&sk->conn, iov, iovcnt, smc_flags, nonblock);
	if (n == -EPIPE && !(flags & MSG_NOSIGNAL))
		raise(SIGPIPE);
	return result(n);
}

ssize_t smcr_sock_sendfile(struct smcr_sock *sk, int in_fd, off_t *offset, size_t count)
{
	off_t pos = offset ? *offset : lseek(in_fd, 0, SEEK_CUR);
	size_t done = 0;
	char *buf;

	if (pos < 0) {
		if (errno == ESPIPE)
			errno = EINVAL;         /* as sendfile from what it cannot read at an offset */
		return -1;
	}
	buf = malloc(BOUNCE_SIZE);
	if (!buf) {
		errno = ENOMEM;
		return -1;
	}
	while (done < count) {
		size_t want = count - done < BOUNCE_SIZE ? count - done : BOUNCE_SIZE;
		ssize_t n = pread(in_fd, buf, want, pos), m;

		if (n <= 0) {
			if (n < 0 && done == 0)
				goto fail;
			break;
		}
		m = smcr_sock_send(sk, &(struct iovec){ buf, (size_t)n }, 1, 0);
		if (m < 0) {
			if (done == 0)
				goto fail;
			break;
		}
		pos += m;
		done += (size_t)m;
		if (m < n)
			break;
	}
	free(buf);
	if (offset)
		*offset = pos;
	else
		lseek(in_fd, pos, SEEK_SET);
	return (ssize_t)done;
fail:
	free(buf);
	return -1;
}

/* splice from a pipe into the connection: no more than fits, so nothing is lost. */
ssize_t smcr_sock_splice_in(struct smcr_sock *sk, int pipe_fd, size_t len, unsigned int flags)
{
	size_t want = len < BOUNCE_SIZE ? len : BOUNCE_SIZE;
	bool nonblock = atomic_load(&sk->nonblock) || (flags & SPLICE_F_NONBLOCK);
	char buf[4096], *big = want > sizeof(buf) ? malloc(want) : buf;
	ssize_t n, m;

	if (!big) {
		errno = ENOMEM;
		return -1;
	}
	if (smcr_sock_phase(sk) != SMCR_SOCK_SMC) {
		n = not_ready(sk);
		goto out;
	}
	if (nonblock) {
		pthread_mutex_lock(&sk->conn.lock);
		uint32_t room = smc_tx_room_locked(&sk->conn);
		pthread_mutex_unlock(&sk->conn.lock);
		if (room == 0 && !smc_tx_writable(&sk->conn)) {
			errno = EAGAIN;
			n = -1;
			goto out;
		}
		if (room && room < want)
			want = room;
	}
	n = REAL(read)(pipe_fd, big, want);
	if (n <= 0)
		goto out;
	m = smcr_sock_send(sk, &(struct iovec){ big, (size_t)n }, 1,
			   (flags & SPLICE_F_MORE) ? MSG_MORE : 0);
	if (m != n && m >= 0)
		smcr_log(SMCR_LOG_WARN, "splice: %zd of %zd bytes from a pipe not sent", n - m, n);
	n = m;
out:
	if (big != buf)
		free(big);
	return n;
}

/* splice from the connection into a pipe: peek, write, then take what the pipe took. */
ssize_t smcr_sock_splice_out(struct smcr_sock *sk, int pipe_fd, size_t len, unsigned int flags)
{
	size_t want = len < BOUNCE_SIZE ? len : BOUNCE_SIZE;
	char *buf = malloc(want ? want : 1);
	ssize_t n, w;
	int peek = MSG_PEEK | ((flags & SPLICE_F_NONBLOCK) ? MSG_DONTWAIT : 0);

	if (!buf) {
		errno = ENOMEM;
		return -1;
	}
	n = smcr_sock_recv(sk, &(struct iovec){ buf, want }, 1, peek);
	if (n > 0) {
		w = REAL(write)(pipe_fd, buf, (size_t)n);
		n = w > 0 ? smcr_sock_recv(sk, &(struct iovec){ NULL, (size_t)w }, 1,
					   MSG_TRUNC | MSG_DONTWAIT) : w;
	}
	free(buf);
	return n;
}

int smcr_sock_shutdown(struct smcr_sock *sk, int fd, int how)
{
	int rc = 0;

	if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR) {
		errno = EINVAL;
		return -1;
	}
	if (smcr_sock_phase(sk) != SMCR_SOCK_SMC)
		return REAL(shutdown)(fd, how);
	/* the TCP connection stays whole: its end is how the peer learns we are gone */
	if (how != SHUT_WR) {
		sk->rd_shut = true;
		sk->conn.ops->wake(&sk->conn);
	}
	if (how != SHUT_RD)
		rc = smc_tx_shutdown(&sk->conn);
	return rc && rc != -EPIPE ? (int)result(rc) : 0;
}

void smcr_sock_set_nonblock(struct smcr_sock *sk, bool nonblock)
{
	atomic_store(&sk->nonblock, nonblock);
}

/* ---- control ---- */

bool smcr_sock_ioctl(struct smcr_sock *sk, unsigned long request, void *arg, int *rc)
{
	if (smcr_sock_phase(sk) != SMCR_SOCK_SMC)
		return false;
	switch (request) {
	case FIONREAD:          /* SIOCINQ */
		*(int *)arg = (int)smc_rx_readable(&sk->conn);
		*rc = 0;
		return true;
	case SIOCOUTQ: {        /* written, not yet read by the peer */
		pthread_mutex_lock(&sk->conn.lock);
		*(int *)arg = (int)smc_ring_readable(sk->conn.peer_rmb_size, sk->conn.tx_fin,
						     sk->conn.tx_prep);
		pthread_mutex_unlock(&sk->conn.lock);
		*rc = 0;
		return true;
	}
	case SIOCATMARK:
		pthread_mutex_lock(&sk->conn.lock);
		/* the next byte is the urgent one (rx_urg_mark is just after it) */
		*(int *)arg = sk->conn.rx_urg_unpassed &&
			      smc_cursor_diff(sk->conn.rmb_size, sk->conn.rx_cons,
					      sk->conn.rx_urg_mark) == 1;
		pthread_mutex_unlock(&sk->conn.lock);
		*rc = 0;
		return true;
	default:
		return false;
	}
}

bool smcr_sock_getsockopt(struct smcr_sock *sk, int level, int name, void *value,
			  socklen_t *len, int *rc)
{
	int err;

	/* the connection's own error, not the idle TCP socket's */
	if (level != SOL_SOCKET || name != SO_ERROR || smcr_sock_phase(sk) != SMCR_SOCK_SMC ||
	    !value || !len || *len < (socklen_t)sizeof(int))
		return false;
	pthread_mutex_lock(&sk->conn.lock);
	err = sk->conn.err;
	pthread_mutex_unlock(&sk->conn.lock);
	if (!err)
		return false;
	*(int *)value = err;
	*len = sizeof(int);
	*rc = 0;
	return true;
}

static int timeout_ms(const void *value, socklen_t len)
{
	const struct timeval *tv = value;

	if (len < (socklen_t)sizeof(*tv))
		return 0;
	return (int)(tv->tv_sec * 1000 + (tv->tv_usec + 999) / 1000);
}

void smcr_sock_setsockopt(struct smcr_sock *sk, int level, int name, const void *value,
			  socklen_t len)
{
	int on = value && len >= (socklen_t)sizeof(int) ? *(const int *)value : 0;

	pthread_mutex_lock(&sk->conn.lock);
	if (level == SOL_SOCKET && name == SO_RCVTIMEO)
		sk->conn.rcv_timeout_ms = timeout_ms(value, len);
	else if (level == SOL_SOCKET && name == SO_SNDTIMEO)
		sk->conn.snd_timeout_ms = timeout_ms(value, len);
	else if (level == SOL_SOCKET && name == SO_OOBINLINE)
		sk->conn.oob_inline = on;
	else if (level == SOL_SOCKET && name == SO_LINGER && len >= (socklen_t)sizeof(struct linger))
		sk->linger_abort = ((const struct linger *)value)->l_onoff &&
				   !((const struct linger *)value)->l_linger;
	pthread_mutex_unlock(&sk->conn.lock);
	if (level == IPPROTO_TCP && name == TCP_CORK) {
		sk->corked = on;
		if (!on && smcr_sock_phase(sk) == SMCR_SOCK_SMC) {
			/* uncorking sends what waits */
			pthread_mutex_lock(&sk->conn.lock);
			if (!smc_cursor_equal(sk->conn.tx_sent, sk->conn.tx_prep))
				smc_tx_cdc_send(&sk->conn);
			pthread_mutex_unlock(&sk->conn.lock);
		}
	}
}

/* ---- readiness ---- */

unsigned int smcr_sock_poll(struct smcr_sock *sk)
{
	struct smc_conn *conn = &sk->conn;
	unsigned int mask = 0;

	switch (smcr_sock_phase(sk)) {
	case SMCR_SOCK_RESET:
		return POLLIN | POLLOUT | POLLERR | POLLHUP;
	case SMCR_SOCK_SMC:
		break;
	default:
		return 0;
	}
	pthread_mutex_lock(&conn->lock);
	if (smc_rx_readable_locked(conn) > 0 || sk->rd_shut)
		mask |= POLLIN | POLLRDNORM;
	if (conn->peer_state & (SMC_CDC_PEER_DONE_WRITING | SMC_CDC_PEER_CONN_CLOSED))
		mask |= POLLIN | POLLRDNORM | POLLRDHUP;
	if (smc_tx_writable_locked(conn))
		mask |= POLLOUT | POLLWRNORM;
	if (!conn->oob_inline && conn->rx_urg_state == SMC_URG_VALID)
		mask |= POLLPRI;
	if (conn->err)
		mask |= POLLERR | POLLHUP | POLLIN | POLLOUT;
	else if ((mask & POLLRDHUP) && (conn->local_state & SMC_CDC_PEER_DONE_WRITING))
		mask |= POLLHUP;
	pthread_mutex_unlock(&conn->lock);
	return mask;
}

uint32_t smcr_sock_events(struct smcr_sock *sk)
{
	return sk->conn.ops->events(&sk->conn);
}

bool smcr_sock_arm(struct smcr_sock *sk, uint32_t since, bool signalled)
{
	return sk->conn.ops->arm(&sk->conn, since, signalled);
}

int smcr_sock_wake_fd(struct smcr_sock *sk)
{
	return sk->conn.ops->wake_fd(&sk->conn);
}

void smcr_sock_tcp_ended(struct smcr_sock *sk)
{
	if (smcr_sock_phase(sk) != SMCR_SOCK_SMC)
		return;
	pthread_mutex_lock(&sk->conn.lock);
	smc_rx_peer_lost(&sk->conn);
	pthread_mutex_unlock(&sk->conn.lock);
}
