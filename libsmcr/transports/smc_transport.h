/*
 * smc_transport.h - the transport interface, and the connection state the
 * send and receive paths keep above it.
 *
 * A transport moves two things to the peer: payload, written straight into
 * the peer's RMB (the ring it reads), and 44-byte CDC messages announcing
 * how far the cursors moved.  RDMA does this with RDMA WRITEs and a SEND on
 * one RC QP; shared memory (smc_shm.c) with stores into the peer's memfd and
 * a mailbox.  smc_tx.c and smc_rx.c are written once, against the ops
 * table below, and know nothing of either.
 *
 * This file owns the ops table, struct smc_conn and the RMB size classes.
 */
#ifndef SMCR_SMC_TRANSPORT_H
#define SMCR_SMC_TRANSPORT_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "control_proto.h"
#include "smc_cdc.h"
#include "smc_clc.h"
#include "shared_lock.h"
#include "smc_cursor.h"
#include "smc_leave_msg.h"
#include "spin.h"
#include "stats.h"
#include "sys.h"

/*
 * RMB sizes: 1 << (class + 14) bytes, the 4-bit compressed size of the CLC
 * Accept/Confirm (rmbe_size, dmbe_size).  RFC 7609 caps SMC-R at class 5
 * (512 KiB); SMC-D, and so our shared memory, allows class 6 (1 MiB).
 */
#define SMC_RMB_MIN_SIZE	16384u
#define SMC_RMB_MAX_CLASS_R	5
#define SMC_RMB_MAX_CLASS_D	6

static inline uint32_t smc_rmb_size(unsigned int size_class)
{
	return SMC_RMB_MIN_SIZE << size_class;
}

/* The smallest class holding bytes, capped at max_class. */
static inline unsigned int smc_rmb_size_class(uint64_t bytes, unsigned int max_class)
{
	unsigned int c = 0;

	while (c < max_class && smc_rmb_size(c) < bytes)
		c++;
	return c;
}

struct smc_conn;
struct smc_peek;

/*
 * How a transport is offered and set up in the CLC exchange
 * (socket/smc_sock_view.c).  Every connection starts with a buffer of the
 * shared-memory transport, offered through smcrd's broker, which keeps the
 * connection's state with it; a connection that the exchange puts on
 * another transport moves its buffer there (prepare: release, then
 * create_rmb with memfd = -1 and SMCR_NO_WAKE_CHANNEL).
 */
struct smc_transport_setup {
	enum smc_type clc_type;		/* SMC_TYPE_D or SMC_TYPE_R: how a Proposal offers it */
	uint32_t allowed_by;		/* SMCR_CONTROL_SHM or _RDMA: smcrd allows it (smcr.conf) */
	bool remote_only;		/* not looked for when the peer is on this host */
	bool lost_by_fork;		/* a forked child cannot use the parent's connections on it */
	bool staging;			/* a view holds a staging buffer as large as the RMB,
					   granted by smcrd beside the offer's grant */
	/*
	 * What our Proposal says for it on the TCP connection sock (SMC-R:
	 * the local block lcl): 0, or -ENODEV if it cannot serve sock.  NULL:
	 * nothing to say, it can.
	 */
	int (*local_block)(int sock, struct smc_clc_local *lcl);
	/*
	 * A client's sock is about to connect to peer (if remote: and peer is
	 * on another host, as remote_only asks while a transport for this
	 * host is allowed): make ready now, before the handshake, what
	 * local_block will need, so that the Proposal follows the handshake
	 * at once (a server declines one later than
	 * SMC_CLC_PROPOSAL_WAIT_MS).  Best effort, and cheap once done.
	 * NULL: nothing to make ready.
	 */
	void (*prepare_client)(int sock, const struct sockaddr *peer, socklen_t len, bool remote);
	/*
	 * Server, after create_rmb: joins the client the Proposal's local
	 * block describes (SMC-R: a link to its process; first_contact if it
	 * made the link).  NULL: nothing to join.
	 */
	int (*join_peer)(struct smc_conn *conn, const struct smc_clc_local *peer,
			 bool *first_contact);
	/* Our Accept or Confirm: token is our offer's, size_class our RMB's. */
	int (*describe)(struct smc_conn *conn, uint64_t token, unsigned int size_class,
			struct smc_clc_accept_confirm *ours);
	/*
	 * The descriptors attach_peer takes for the peer's Accept or Confirm,
	 * from smcrd's broker on the TCP connection sock: its buffer and the
	 * tx end of its wake-up channel; peer NULL: those the other end
	 * offered, whatever its token (the server, before its Accept).  NULL:
	 * -1, -1.
	 */
	int (*peer_fds)(int sock, const struct smc_clc_accept_confirm *peer, int *fd,
			int *wake_tx);
	/* The token the peer put in its Accept or Confirm, for our CDCs. */
	uint32_t (*peer_token)(const struct smc_clc_accept_confirm *peer);
};

/*
 * The send and receive paths call write, send_cdc and recv_cdc with
 * the connection lock held; events, wait and wake need no lock (a waiter sleeps
 * without it, wake comes from another thread).  Errors are negative errno
 * values.
 */
struct smc_transport_ops {
	const char *name;
	enum smcr_transport_id id;	/* its statistics */
	struct smc_transport_setup setup;

	/*
	 * fork(): takes the transport's locks before, releases them after,
	 * and makes the child forget what it cannot use (shim/fork.c, in the
	 * order the registry lists the transports).  NULL: nothing to do.
	 */
	void (*fork_prepare)(void);
	void (*fork_parent)(void);
	void (*fork_child)(void);

	/*
	 * The process is ending (exit, _exit: entry/preload_exit.c) with
	 * connections maybe still open: what send() took but the transport
	 * only queued must leave now, before the process's objects go, as the
	 * kernel's TCP sends it after the process has gone.  Bounded; never in
	 * a vfork child.  NULL: send() leaves nothing queued.
	 */
	void (*process_ending)(void);

	/*
	 * Sets up our RMB of smc_rmb_size(size_class) bytes in the memory of
	 * memfd (granted by smcrd; the transport says how many bytes it needs)
	 * and fills in conn->rmb, conn->rmb_size (and st's), and conn->priv.  The memfd is
	 * not kept: the caller closes it when it likes.  wake (shared
	 * memory: our wake-up channel, sys.h; SMCR_NO_WAKE_CHANNEL for a transport
	 * with its own) is kept from success on, and closed by release.
	 */
	int (*create_rmb)(struct smc_conn *conn, unsigned int size_class, int memfd,
			  struct smcr_wake_channel wake);

	/*
	 * The same RMB as create_rmb set it up, maybe in another process (the
	 * connection changed hands: smc_sock_view.c): mapped again, checked, not
	 * touched.  Fills in conn->rmb and conn->priv; wake as create_rmb.
	 */
	int (*map_rmb)(struct smc_conn *conn, int memfd, struct smcr_wake_channel wake);

	/*
	 * Attaches the peer's RMB as its Accept or Confirm described it
	 * (peer_fd: for shared memory, the memfd behind the peer's token,
	 * from smcrd's broker, and peer_wake_tx the tx end of its wake-up
	 * channel; -1 for a transport that needs none) and fills in
	 * conn->peer_rmb_size (and st's).  After create_rmb.  peer_wake_tx is
	 * kept from success on, as create_rmb's wake.
	 */
	int (*attach_peer)(struct smc_conn *conn, const struct smc_clc_accept_confirm *peer,
			   int peer_fd, int peer_wake_tx);

	/*
	 * Copies len bytes from src into the peer's RMB at offset off, one
	 * contiguous piece of it (off + len <= conn->peer_rmb_size, checked: -EINVAL).  src may be
	 * reused on return; the bytes reach the peer before any CDC sent
	 * after this call.
	 */
	int (*write)(struct smc_conn *conn, uint32_t off, const void *src, uint32_t len);

	/*
	 * Copies into dst the len bytes we wrote at offset off of the peer's
	 * RMB (off + len <= conn->peer_rmb_size, checked: -EINVAL), from
	 * where this process can still read them: the peer left for TCP and
	 * gets again what it had not read (conn/smc_leave.h).
	 */
	int (*read_back)(struct smc_conn *conn, uint32_t off, void *dst, uint32_t len);

	/*
	 * Delivers a CDC (smc_cdc_encode) to the peer, after the data it
	 * announces.  write and send_cdc fail with -ENOTCONN when they cannot
	 * reach the peer from this process any more (recv_cdc's -ENOTCONN).
	 */
	int (*send_cdc)(struct smc_conn *conn, const uint8_t msg[SMC_CDC_MSG_LEN]);

	/*
	 * Fetches a CDC the peer sent after the last one fetched, in the
	 * order sent, each once (a transport may skip to the latest, see
	 * smc_shm.c): 1 and msg filled in, or 0 if there is none; -ENOTCONN
	 * if none can come any more in this process (an RDMA link down): the
	 * connection is cut, and the TCP stream decides, as after wait's
	 * -ENOTCONN, since the peer may go on over it (conn/smc_leave.h).
	 * Never blocks.
	 */
	int (*recv_cdc)(struct smc_conn *conn, uint8_t msg[SMC_CDC_MSG_LEN]);

	/*
	 * A number that changes whenever a CDC arrives or wake() is called,
	 * read without the lock.  A caller about to wait reads it before it
	 * fetches and looks at the state, then passes it to wait(): whatever
	 * happened in between makes wait() return at once.  It is also the
	 * cheap "anything new?" test of a poller.
	 */
	uint32_t (*events)(struct smc_conn *conn);

	/*
	 * Takes what has arrived for conn, without waiting and without the
	 * lock, so that events() moves: for a waiter that spins (RDMA: the
	 * CQ, which nothing else polls while the poller thread sleeps).
	 * NULL: events() moves by itself (shared memory).
	 */
	void (*collect)(struct smc_conn *conn);

	/*
	 * How a wait on conn may spin before it sleeps (spin.h): wait's spin,
	 * and poll's.  Called as a wait begins.
	 */
	struct smcr_spin_how (*spin_how)(struct smc_conn *conn);

	/*
	 * Waits, with the connection lock released, until events() moves from since:
	 * spins briefly, then sleeps.  timeout_ms < 0 waits for ever.  Returns
	 * 0 (also spuriously: the caller looks again), -ETIMEDOUT, -EINTR, or
	 * -ENOTCONN when the TCP connection under conn (conn->sock) has news
	 * (smc_tcp_news): it ended or failed, and the peer is gone unless its
	 * CDCs said it closed; or the peer left for TCP (conn/smc_leave.h).
	 * Never called once the connection is cut (the caller waits on the
	 * stream itself).
	 */
	int (*wait)(struct smc_conn *conn, uint32_t since, int timeout_ms);

	/*
	 * For a caller that sleeps elsewhere (poll, epoll): rx, the
	 * descriptor that becomes readable when events() moves, once armed;
	 * and tx, the end of that channel that the peer is given (shared
	 * memory), or -1 (a transport whose wake-ups are its own).
	 */
	struct smcr_wake_channel (*wake_channel)(struct smc_conn *conn);

	/*
	 * Arms the channel's rx, first consuming what made it readable (signalled: the
	 * caller saw it readable): false if events() already moved from
	 * since, and the caller must not sleep.  alone: the caller is the
	 * only sleeper on rx in this process, and rx is read empty; else rx
	 * is left readable, for the others (smcr_sys_wake_thin).  Without
	 * the lock, like wait.
	 */
	bool (*arm)(struct smc_conn *conn, uint32_t since, bool signalled, bool alone);

	/* Ends every wait() on conn in this process (a local state change). */
	void (*wake)(struct smc_conn *conn);

	/*
	 * The TCP connection under conn ended, and the CDCs fetched so far do
	 * not say the peer closed: waits, for a bounded time, for one more CDC
	 * on a transport whose CDCs may lag behind the TCP end (RDMA: on
	 * iWARP a SEND completes at the sender before the peer has it).  True
	 * if one came (the caller fetches it and asks again while the peer has
	 * not closed), false if none will.  NULL: nothing can lag.
	 */
	bool (*await_peer)(struct smc_conn *conn);

	/* Undoes create_rmb and attach_peer; conn->priv is gone after it. */
	void (*release)(struct smc_conn *conn);
};

/*
 * The registry (registry.c): the ops of each transport of
 * SMCR_TRANSPORT_LIST (conn_record.h), by id; NULL for an id out of range.
 */
const struct smc_transport_ops *smc_transport(unsigned int id);

/* Each transport's process_ending, in the registry's order. */
void smc_transports_process_ending(void);

/* The urgent byte the peer marked (MSG_OOB), on the receive side. */
enum smc_urg_state {
	SMC_URG_NONE,		/* none received */
	SMC_URG_VALID,		/* received, not yet read with MSG_OOB */
	SMC_URG_READ,		/* read with MSG_OOB */
};

/* What a connection moved, counted by the send and receive paths under its lock. */
struct smc_traffic {
	uint64_t bytes_in, bytes_out;
	uint64_t recvs, sends;		/* calls that moved data */
	uint64_t rmb_full;		/* our RMB filled up */
	uint64_t peer_rmb_full;		/* a send found the peer's RMB full (write_blocked) */
};

/*
 * A yes or no in state that other processes map, and so may rewrite: any
 * nonzero byte is yes.  Never a bool there, since loading a bool that
 * holds another value is undefined behaviour.
 */
typedef uint8_t smc_flag;

/*
 * One connection, in two parts.  Its state (struct smc_conn_state) is what
 * every process using the connection shares: it lives in shared memory
 * (smc_sock_view.c), so that after fork(), or with the socket passed to another
 * process, whichever process calls next carries on where the last left
 * off.  Its lock is therefore one that processes share, and one that no
 * holder can keep for ever (base/shared_lock.h): a process that dies,
 * stops or stays holding it longer than SMC_CONN_LOCK_WAIT_MS may have
 * left a change half made, and the connection fails (ECONNRESET) in the
 * process that waited, instead of going on from a state nobody can trust.
 * The send and receive paths (smc_tx.c, smc_rx.c) own the fields after
 * the timeouts, under the lock; whoever sets the connection up fills in
 * tokens and timeouts and calls ops->create_rmb and ops->attach_peer.
 */
struct smc_conn_state {
	struct smcr_shared_lock lock;	/* one thread of one process at a time */
	uint32_t token;			/* ours: the peer puts it in every CDC it sends */
	uint32_t peer_token;		/* the peer's: we put it in ours */
	uint32_t rmb_size;		/* our RMB, the ring the peer writes and we read */
	uint32_t peer_rmb_size;
	int rcv_timeout_ms;		/* SO_RCVTIMEO, SO_SNDTIMEO; 0: none */
	int snd_timeout_ms;
	smc_flag oob_inline;		/* SO_OOBINLINE: the urgent byte stays in the stream */
	smc_flag rd_shut;		/* shutdown(SHUT_RD): an empty ring reads as end of file */

	/* Send side: cursors in the peer's RMB. */
	struct smc_cursor tx_prep;	/* written into the peer's RMB */
	struct smc_cursor tx_sent;	/* announced in a CDC (behind prep while corked) */
	struct smc_cursor tx_fin;	/* the peer's consumer cursor: what it has released */
	uint16_t tx_seqno;		/* of the last CDC sent */
	smc_flag write_blocked;		/* data waits for room in the peer's RMB */
	smc_flag tx_after_close;	/* the one send TCP lets through after the peer closed went */
	smc_flag tx_epipe_told;		/* and the error TCP's reset then left was reported */
	smc_flag tx_urg_outstanding;	/* tx_urg_mark sent, the peer has not read up to it */
	struct smc_cursor tx_urg_mark;	/* just after our last urgent byte */

	/* Receive side: cursors in our RMB. */
	struct smc_cursor rx_prod;	/* the peer's producer cursor, last applied */
	struct smc_cursor rx_cons;	/* how far we have read */
	struct smc_cursor rx_confirmed;	/* our consumer cursor as last sent to the peer */
	uint8_t peer_prod_flags;	/* producer flags of the peer's last CDC */
	enum smc_urg_state rx_urg_state;
	smc_flag rx_urg_unpassed;	/* rx_cons has not yet reached rx_urg_mark */
	smc_flag rx_urg_stepped;	/* rx_cons stepped over it when it was read (MSG_OOB) */
	struct smc_cursor rx_urg_mark;	/* just after the peer's last urgent byte */
	uint8_t rx_urg_byte;
	uint32_t cdc_fetched;		/* the transport's: which CDC it fetched last */
	uint64_t peek_owner;		/* the process's copy that holds the bytes from rx_cons
					   a peek returned (conn/smc_rx_peek.h); 0: none */

	/* Close: SMC_CDC_PEER_DONE_WRITING, _CONN_CLOSED, _CONN_ABORT; and _LEAVING. */
	uint8_t local_state;		/* what we told the peer; set bits stay set */
	uint8_t peer_state;		/* what the peer told us */
	smc_flag leave_taken;		/* the peer's LEAVE was read and answered (conn/smc_leave.h) */
	uint32_t leave_reason;		/* the reason code it gave */
	int leave_lowat;		/* the socket's SO_RCVLOWAT before a part of LEAVE
					   raised it (smc_leave.c); 0: not raised */
	smc_flag reply_taken;		/* after our LEAVE, the peer's reply was read */
	smc_flag rmb_first;		/* our RMB is read out before the stream: the reply
					   was the peer's own LEAVE (both left at once), or
					   the peer closed before it read ours */
	uint8_t reply_got;		/* bytes of the reply read so far */
	uint8_t reply[SMC_LEAVE_MSG_LEN];
	int err;			/* 0, or the errno every call fails with from now on */
};

/* A process's view of a connection: the state, and the transport as this process holds it. */
struct smc_conn {
	struct smc_conn_state *st;
	const struct smc_transport_ops *ops;
	void *priv;			/* the transport's, for this process */
	_Atomic int sock;		/* the TCP connection: its end is the peer's end
					   (any thread may change which descriptor) */
	uint8_t *rmb;			/* our RMB, as mapped here */
	/*
	 * The rings' sizes as this process's transport set them up (0: not
	 * yet): every bound of the data path comes from here, never from st,
	 * which any process holding the socket can rewrite.
	 */
	uint32_t rmb_size, peer_rmb_size;
	struct smc_peek *peek;		/* what a peek copied out of our RMB (conn/smc_rx_peek.h):
					   one allocation, or NULL */
	_Atomic bool lock_forced;	/* st's lock was taken by force: reset here (smc_conn_lock) */
	bool cut;			/* the transport said -ENOTCONN: it cannot reach the peer
					   from this process any more, and the TCP stream
					   decides (smc_conn_peer_lost) */
	/* Statistics: published to this process's record of it (conn_table.h), under lock. */
	uint32_t record;		/* the record's id; 0: none */
	struct smc_traffic traffic;	/* what this process moved */
};

/* A view of st, which is new (zeroed here, its lock made) when fresh. */
static inline void smc_conn_init(struct smc_conn *conn, const struct smc_transport_ops *ops,
				 struct smc_conn_state *st, bool fresh)
{
	*conn = (struct smc_conn){ .st = st, .ops = ops, .sock = -1 };
	if (!fresh)
		return;
	memset(st, 0, sizeof(*st));
	smcr_shared_lock_init(&st->lock);
}

/*
 * Under the connection lock: adds flags (SMC_CDC_PEER_*) to what the peer
 * told us.  Atomic, since smcr_sock_phase reads them without the lock as a
 * hint that the peer left.
 */
static inline void smc_conn_peer_says(struct smc_conn *conn, uint8_t flags)
{
	__atomic_fetch_or(&conn->st->peer_state, flags, __ATOMIC_RELAXED);
}

/* [off, off + len) lies in the peer's RMB as this process set it up (write, read_back). */
static inline bool smc_conn_peer_range(const struct smc_conn *conn, uint32_t off, uint32_t len)
{
	return off <= conn->peer_rmb_size && len <= conn->peer_rmb_size - off;
}

/* Ends this process's view (the state stays for other processes). */
static inline void smc_conn_destroy(struct smc_conn *conn)
{
	if (conn->priv)
		conn->ops->release(conn);
	free(conn->peek);
	conn->peek = NULL;
}

/*
 * Longer than anything a process does under a connection's lock (an RDMA
 * link's connect is bounded by SMC_CLC_WAIT_MS): a holder that keeps it
 * longer is gone, stopped or hostile.
 */
#define SMC_CONN_LOCK_WAIT_MS (2 * SMC_CLC_WAIT_MS)

static inline void smc_conn_lock(struct smc_conn *conn)
{
	bool forced = atomic_load(&conn->lock_forced);

	if (smcr_shared_lock_take(&conn->st->lock, forced ? 0 : SMC_CONN_LOCK_WAIT_MS) && !forced)
		return;
	/* taken by force, now or before: over for this process, whatever the page says */
	atomic_store(&conn->lock_forced, true);
	if (!conn->st->err)
		conn->st->err = ECONNRESET;
}

/*
 * The errno every call on the connection fails with from now on, or 0:
 * st->err, read once, as another process holding the socket may have
 * written it.  A call returns its negation, so anything but an errno (a
 * negative number would read as a count of bytes) is ECONNRESET.
 */
static inline int smc_conn_error(const struct smc_conn *conn)
{
	int err = __atomic_load_n(&conn->st->err, __ATOMIC_RELAXED);

	return err > 0 && err < 4096 ? err : err ? ECONNRESET : 0;
}

static inline void smc_conn_unlock(struct smc_conn *conn)
{
	smcr_shared_lock_give(&conn->st->lock);
}

#endif
