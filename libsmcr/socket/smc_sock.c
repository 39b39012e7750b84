/*
 * smc_sock.c - the socket calls on an application's SMC connection
 * (smc_sock.h): data (recv, send, sendfile, splice), shutdown, ioctl,
 * socket options and readiness, over the connection that smc_sock_view.c
 * sets up and keeps across processes.  A call that finds the connection
 * not (yet) on SMC fails as TCP would in its state (EAGAIN while the CLC
 * exchange runs, ECONNRESET once it failed); the callers in the shim layer
 * drive the exchange before.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/sockios.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include "conn_table.h"
#include "filter.h"
#include "log.h"
#include "real.h"
#include "smc_conn.h"
#include "smc_leave.h"
#include "smc_rx.h"
#include "smc_sock_priv.h"
#include "smc_tx.h"
#include "sys.h"

/* sendfile and splice move bytes through a bounce buffer this large. */
#define BOUNCE_SIZE 65536

/* ---- data ---- */

/* Whether a call with flags may block on sk. */
static bool blocking(struct smcr_sock *sk, int flags)
{
	return !(flags & MSG_DONTWAIT) && !atomic_load_explicit(&sk->sh->nonblock,
							       memory_order_relaxed);
}

/*
 * Whether a data call with iovcnt buffers and flags may go ahead on sk; if
 * not, errno says why.  On a connection not (yet) on SMC, a call that may
 * block got here only when its wait for the CLC exchange ended first, and
 * smcr_sock_settle left the errno that says why (EAGAIN: the socket's
 * timeout; EINTR: a signal).  One that went over to TCP since the caller
 * looked (here, if this process's view cannot reach the transport and
 * leaves: smcr_sock_phase) is the kernel's from now on: EXDEV, and the
 * caller takes the kernel's path.  Before, a blocking send got EAGAIN.
 */
static bool usable(struct smcr_sock *sk, int iovcnt, int flags)
{
	enum smcr_sock_phase phase = smcr_sock_phase(sk);

	if (phase != SMCR_SOCK_SMC) {
		if (phase == SMCR_SOCK_RESET)
			errno = ECONNRESET;
		else if (phase == SMCR_SOCK_TCP)
			errno = EXDEV;
		else if (!blocking(sk, flags) || errno != EINTR)
			errno = EAGAIN;
		return false;
	}
	if (iovcnt < 0 || iovcnt > IOV_MAX) {
		errno = EINVAL;
		return false;
	}
	return true;
}

/*
 * The same for a sending call; one that finds a client's CLC exchange
 * unfinished makes its poll() wait for the exchange (smcr_sock_poll).
 */
static bool usable_to_send(struct smcr_sock *sk, int iovcnt, int flags)
{
	if (smcr_sock_phase(sk) < SMCR_SOCK_SMC)
		sk->sh->setup_send_tried = true;
	return usable(sk, iovcnt, flags);
}

static ssize_t result(ssize_t n)
{
	if (n >= 0)
		return n;
	errno = (int)-n;
	return -1;
}

/* The flags a read on SMC knows; the others are the kernel's alone. */
#define SMC_RECV_FLAGS (MSG_PEEK | MSG_WAITALL | MSG_TRUNC | MSG_OOB | MSG_DONTWAIT)

/* Waits, without the lock, until the stream has bytes (timeout_ms 0: none). */
static int await_stream(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	for (;;) {
		int n = smcr_sys_poll(&p, 1, timeout_ms > 0 ? timeout_ms : -1);

		if (n > 0)
			return 0;
		if (n == 0)
			return -EAGAIN;
		if (errno != EINTR || !smcr_sys_restarts(timeout_ms))
			return -errno;
	}
}

/*
 * This end left: the peer's reply to its LEAVE comes first on the stream
 * (smc_leave_reply).  A call that may block waits for it without the
 * lock; a process under a seccomp filter, which may forbid poll (the
 * usual leaver), reads it as the call would, holding the lock, and may
 * not wait for lagging CDCs either.
 */
static int take_reply(struct smcr_sock *sk, int flags)
{
	struct smc_conn *conn = &sk->conn;
	bool confined = smcr_filter_any(), wait_apart = blocking(sk, flags) && !confined;

	for (;;) {
		int rc;

		smc_conn_lock(conn);
		rc = smc_leave_reply(conn, wait_apart ? MSG_DONTWAIT : flags & MSG_DONTWAIT,
				     sk->attached, !confined);
		smc_conn_unlock(conn);
		if (rc != -EAGAIN || !wait_apart)
			return rc;
		rc = await_stream(conn->sock, conn->st->rcv_timeout_ms);
		if (rc)
			return rc;
	}
}

/*
 * The connection left SMC mid-stream (conn/smc_leave.h: -EXDEV), all our
 * RMB read: the kernel's socket carries this call and the next ones; if
 * we left, after the peer's reply, and if both ends left at once, after
 * what is left in our RMB.
 */
static ssize_t kernel_recv(struct smcr_sock *sk, const struct iovec *iov, int iovcnt, int flags)
{
	bool nonblock = atomic_load_explicit(&sk->sh->nonblock, memory_order_relaxed);
	ssize_t n;
	int rc;

	smcr_sock_phase(sk);    /* the peer's leaving ends here, in its phase */
	rc = take_reply(sk, flags);
	if (rc)
		return result(rc);
	if (smc_leave_rmb_unread(&sk->conn)) {
		n = smc_rx_recv(&sk->conn, iov, iovcnt, flags & SMC_RECV_FLAGS, nonblock);
		if (n != -EXDEV)
			return result(n);
	}
	n = smcr_sys_stream_recv(sk->conn.sock, iov, iovcnt, flags);
	if (n > 0 && !(flags & MSG_PEEK))
		smcr_conn_table_tcp_unrecorded(true, (size_t)n);
	return n;
}

static ssize_t kernel_send(struct smcr_sock *sk, const struct iovec *iov, int iovcnt, int flags)
{
	ssize_t n = smcr_sys_stream_send(sk->conn.sock, iov, iovcnt, flags);

	if (n > 0)
		smcr_conn_table_tcp_unrecorded(false, (size_t)n);
	return n;
}

static ssize_t kernel_splice_in(struct smcr_sock *sk, int pipe_fd, size_t len, unsigned int flags)
{
	ssize_t n = REAL(splice)(pipe_fd, NULL, sk->conn.sock, NULL, len, flags);

	if (n > 0)
		smcr_conn_table_tcp_unrecorded(false, (size_t)n);
	return n;
}

ssize_t smcr_sock_recv(struct smcr_sock *sk, const struct iovec *iov, int iovcnt, int flags)
{
	bool nonblock = atomic_load_explicit(&sk->sh->nonblock, memory_order_relaxed);
	ssize_t n;

	if (!usable(sk, iovcnt, flags))
		return errno == EXDEV ? kernel_recv(sk, iov, iovcnt, flags) : -1;
	do
		n = smc_rx_recv(&sk->conn, iov, iovcnt, flags & SMC_RECV_FLAGS, nonblock);
	while (n == -EINTR && smcr_sys_restarts(sk->conn.st->rcv_timeout_ms));
	return n == -EXDEV ? kernel_recv(sk, iov, iovcnt, flags) : result(n);
}

ssize_t smcr_sock_send(struct smcr_sock *sk, const struct iovec *iov, int iovcnt, int flags)
{
	bool nonblock = atomic_load_explicit(&sk->sh->nonblock, memory_order_relaxed);
	int smc_flags = flags & (MSG_OOB | MSG_MORE | MSG_DONTWAIT);
	ssize_t n;

	if (!usable_to_send(sk, iovcnt, flags))
		return errno == EXDEV ? kernel_send(sk, iov, iovcnt, flags) : -1;
	if (sk->sh->corked)
		smc_flags |= MSG_MORE;
	do
		n = smc_tx_send(&sk->conn, iov, iovcnt, smc_flags, nonblock);
	while (n == -EINTR && smcr_sys_restarts(sk->conn.st->snd_timeout_ms));
	if (n == -EXDEV)
		return kernel_send(sk, iov, iovcnt, flags);
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
	bool nonblock = atomic_load(&sk->sh->nonblock) || (flags & SPLICE_F_NONBLOCK);
	char buf[4096], *big = want > sizeof(buf) ? malloc(want) : buf;
	ssize_t n, m;

	if (!big) {
		errno = ENOMEM;
		return -1;
	}
	if (!usable_to_send(sk, 1, flags & SPLICE_F_NONBLOCK ? MSG_DONTWAIT : 0)) {
		n = errno == EXDEV ? kernel_splice_in(sk, pipe_fd, len, flags) : -1;
		goto out;
	}
	if (nonblock) {
		smc_conn_lock(&sk->conn);
		uint32_t room = smc_tx_room_locked(&sk->conn);
		smc_conn_unlock(&sk->conn);
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
	int rc;

	if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR) {
		errno = EINVAL;
		return -1;
	}
	switch (smcr_sock_phase(sk)) {
	case SMCR_SOCK_IDLE:
	case SMCR_SOCK_SETUP:
		/*
		 * A server that declined writes on TCP: our side of the exchange
		 * is over, and a FIN after the Decline cuts nothing.
		 */
		if (smcr_sock_writes_tcp(sk) && how != SHUT_RD) {
			if (REAL(shutdown)(fd, SHUT_WR))
				return -1;
			if (how == SHUT_WR)
				return 0;
			how = SHUT_RD;
		}
		/*
		 * As over TCP it takes effect now, but a FIN in the middle of
		 * the exchange would cut it: it is applied when it ends.
		 */
		smcr_sock_shut_later(sk, how);
		return 0;
	case SMCR_SOCK_SMC:
		rc = smcr_sock_shut_smc(sk, how);
		return rc && rc != -EPIPE ? (int)result(rc) : 0;
	default:
		return REAL(shutdown)(fd, how);
	}
}

void smcr_sock_set_nonblock(struct smcr_sock *sk, bool nonblock)
{
	atomic_store(&sk->sh->nonblock, nonblock);
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
	case SIOCOUTQ: {
		/*
		 * Written, not yet announced (corked): as TCP's bytes not yet
		 * acknowledged, since announced bytes are in the peer's buffer
		 * (the peer's reading them is not TCP's business).
		 */
		smc_conn_lock(&sk->conn);
		*(int *)arg = (int)smc_ring_readable(sk->conn.peer_rmb_size, sk->conn.st->tx_sent,
						     sk->conn.st->tx_prep);
		smc_conn_unlock(&sk->conn);
		*rc = 0;
		return true;
	}
	case SIOCATMARK:
		smc_conn_lock(&sk->conn);
		*(int *)arg = smc_rx_at_mark_locked(&sk->conn);
		smc_conn_unlock(&sk->conn);
		*rc = 0;
		return true;
	default:
		return false;
	}
}

/*
 * As TCP: the peer's reset that answers the first send after its close
 * leaves an error (POLLERR) until a send fails with it or SO_ERROR
 * reports it (smc_tx.c sends that first one).
 */
static bool epipe_untold(const struct smc_conn_state *st)
{
	return st->tx_after_close && !st->tx_epipe_told;
}

bool smcr_sock_getsockopt(struct smcr_sock *sk, int level, int name, void *value,
			  socklen_t *len, int *rc)
{
	int err;

	/* the connection's own error, not the idle TCP socket's */
	if (level != SOL_SOCKET || name != SO_ERROR || smcr_sock_phase(sk) != SMCR_SOCK_SMC ||
	    !value || !len || *len < (socklen_t)sizeof(int))
		return false;
	smc_conn_lock(&sk->conn);
	err = smc_conn_error(&sk->conn);
	if (!err && epipe_untold(sk->conn.st)) {
		err = EPIPE;            /* reported once, as TCP's */
		sk->conn.st->tx_epipe_told = true;
	}
	smc_conn_unlock(&sk->conn);
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

	smc_conn_lock(&sk->conn);
	if (level == SOL_SOCKET && name == SO_RCVTIMEO)
		sk->conn.st->rcv_timeout_ms = timeout_ms(value, len);
	else if (level == SOL_SOCKET && name == SO_SNDTIMEO)
		sk->conn.st->snd_timeout_ms = timeout_ms(value, len);
	else if (level == SOL_SOCKET && name == SO_OOBINLINE)
		sk->conn.st->oob_inline = on;
	else if (level == SOL_SOCKET && name == SO_LINGER && len >= (socklen_t)sizeof(struct linger))
		sk->sh->linger_abort = ((const struct linger *)value)->l_onoff &&
				   !((const struct linger *)value)->l_linger;
	smc_conn_unlock(&sk->conn);
	/* the urgent byte counts as readable now, or no longer: epoll looks again */
	if (level == SOL_SOCKET && name == SO_OOBINLINE && smcr_sock_phase(sk) == SMCR_SOCK_SMC)
		sk->conn.ops->wake(&sk->conn);
	if (level == IPPROTO_TCP && name == TCP_CORK) {
		sk->sh->corked = on;
		if (!on && smcr_sock_phase(sk) == SMCR_SOCK_SMC) {
			/* uncorking sends what waits */
			smc_conn_lock(&sk->conn);
			if (!smc_cursor_equal(sk->conn.st->tx_sent, sk->conn.st->tx_prep))
				smc_conn_cdc_send(&sk->conn);
			smc_conn_unlock(&sk->conn);
		}
	}
}

/* ---- readiness ---- */

/* Whether this process may ask the kernel how a socket is: a seccomp filter may forbid it. */
static bool may_ask_kernel(void)
{
	static const uint64_t no_args[6];

	return smcr_filter_permits(SYS_ppoll, no_args);
}

/*
 * What of events (and errors) the TCP socket fd reports now, asked of the
 * kernel; nothing where that is forbidden.
 */
static unsigned int tcp_events(int fd, short events)
{
	struct pollfd p = { .fd = fd, .events = events };
	int saved_errno = errno;
	unsigned int mask = may_ask_kernel() && smcr_sys_poll(&p, 1, 0) == 1 ?
				    (unsigned int)p.revents : 0;

	errno = saved_errno;
	return mask & ((unsigned short)events | POLLERR | POLLHUP);
}

static unsigned int tcp_writable(int fd)
{
	return tcp_events(fd, POLLOUT | POLLWRNORM);
}

/* sk's readiness on SMC, under its lock. */
static unsigned int smc_events(struct smcr_sock *sk)
{
	struct smc_conn *conn = &sk->conn;
	unsigned int mask = 0;

	if (smc_rx_readable_locked(conn) > 0)   /* fetches the peer's news first */
		mask |= POLLIN | POLLRDNORM;
	/* as TCP: reading ended, by our SHUT_RD or the peer's end of writing */
	if (conn->st->rd_shut ||
	    (conn->st->peer_state & (SMC_CDC_PEER_DONE_WRITING | SMC_CDC_PEER_CONN_CLOSED)))
		mask |= POLLIN | POLLRDNORM | POLLRDHUP;
	if (smc_leave_tx_gone(conn))    /* sends go to the kernel's socket (smc_leave.h) */
		mask |= tcp_writable(conn->sock);
	else if (smc_tx_writable_locked(conn))
		mask |= POLLOUT | POLLWRNORM;
	if (conn->st->rx_urg_state == SMC_URG_VALID)   /* as TCP: inline or not, until it is read */
		mask |= POLLPRI;
	if (conn->st->tx_after_close)   /* TCP's reset closed it */
		mask |= POLLHUP | (epipe_untold(conn->st) ? POLLERR : 0);
	if (conn->st->err)
		mask |= POLLERR | POLLHUP | POLLIN | POLLOUT;
	else if ((mask & POLLRDHUP) && (conn->st->local_state & SMC_CDC_PEER_DONE_WRITING))
		mask |= POLLHUP;
	return mask;
}

/* Everything poll() may ask of a TCP socket. */
#define TCP_POLL_EVENTS (POLLIN | POLLRDNORM | POLLOUT | POLLWRNORM | POLLPRI | POLLRDHUP)

unsigned int smcr_sock_poll(struct smcr_sock *sk)
{
	struct smc_conn *conn = &sk->conn;
	unsigned int mask;

	switch (smcr_sock_phase(sk)) {
	case SMCR_SOCK_RESET:
		return POLLIN | POLLOUT | POLLERR | POLLHUP;
	case SMCR_SOCK_SMC:
		break;
	case SMCR_SOCK_TCP:     /* left SMC mid-stream (conn/smc_leave.h) */
		smcr_sock_reply_drain(sk);      /* not data, nor to be read as such */
		return tcp_events(conn->sock, TCP_POLL_EVENTS) |
		       (smc_leave_rmb_unread(conn) ? POLLIN | POLLRDNORM : 0);
	default:
		/* a server that declined for want of a Proposal writes on TCP */
		if (smcr_sock_writes_tcp(sk))
			return tcp_writable(sk->conn.sock);
		/*
		 * A client in its CLC exchange is writable, as its connected TCP
		 * socket is, until a send finds it is not: a program that waits
		 * for its connect() to complete before it tells the server to
		 * accept (a passive FTP transfer) must not wait for that accept.
		 */
		return sk->sh->active && !sk->sh->setup_send_tried ? POLLOUT | POLLWRNORM : 0;
	}
	smc_conn_lock(conn);
	mask = smc_events(sk);
	smc_conn_unlock(conn);
	/* the peer left and our RMB is read: the kernel's word from here */
	if (!(mask & POLLIN) && smcr_sock_phase(sk) == SMCR_SOCK_TCP)
		return tcp_events(conn->sock, TCP_POLL_EVENTS);
	return mask;
}

bool smcr_sock_left_reads_ours(struct smcr_sock *sk)
{
	return smc_leave_rmb_unread(&sk->conn) ||
	       (smc_leave_reply_due(&sk->conn) && may_ask_kernel());
}

uint32_t smcr_sock_events(struct smcr_sock *sk)
{
	return sk->conn.ops->events(&sk->conn);
}

void smcr_sock_collect(struct smcr_sock *sk)
{
	if (sk->conn.ops->collect)
		sk->conn.ops->collect(&sk->conn);
}

struct smcr_spin_how smcr_sock_spin_how(struct smcr_sock *sk)
{
	return sk->conn.ops->spin_how(&sk->conn);
}

/*
 * A sleeper that joins while we read the channel empty may have lost the
 * wake-up it was owed to our read: the count is read again after it (the
 * arm's fence orders them), and a wake() then writes the channel anew.
 */
bool smcr_sock_arm(struct smcr_sock *sk, uint32_t since, bool signalled, uint32_t own)
{
	struct smc_conn *conn = &sk->conn;
	int wake_fd = smcr_sock_wake_fd(sk);
	bool alone = smcr_fd_sleepers(wake_fd) <= own, armed;

	armed = conn->ops->arm(conn, since, signalled, alone);
	if (alone && smcr_fd_sleepers(wake_fd) > own) {
		conn->ops->wake(conn);
		return false;
	}
	return armed;
}

int smcr_sock_wake_fd(struct smcr_sock *sk)
{
	return sk->conn.ops->wake_channel(&sk->conn).rx;
}

void smcr_sock_tcp_news(struct smcr_sock *sk)
{
	if (smcr_sock_phase(sk) != SMCR_SOCK_SMC)
		return;
	smc_conn_lock(&sk->conn);
	smc_conn_peer_lost(&sk->conn);
	smc_conn_unlock(&sk->conn);
}
