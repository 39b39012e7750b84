/*
 * smc_sock.h - an application's TCP connection whose handshake negotiated
 * SMC: the CLC exchange that decides (smc_setup.h), then the socket calls
 * over the SMC connection (smc_tx.h, smc_rx.h) on the shared-memory
 * transport.
 *
 * The CLC exchange goes as far as it can without waiting when the connection
 * is made (the client's Proposal leaves, a server answers one already
 * there), and on at every later call, which waits only where the call would
 * (a blocking read or write).  connect() never waits for the server: it may
 * be this very thread, about to accept().  A server that accepts, forks and
 * leaves the connection to its child needs no more of it than that.  The
 * connection's state is shared by every process holding the socket
 * (smc_sock_view.c): after fork(), over SCM_RIGHTS or across exec, whichever
 * process uses it next carries on.
 *
 * The descriptor table (fdtable.h) holds one reference per descriptor
 * naming the connection (dup() adds one); the last one closes the SMC
 * connection, before the TCP socket under it closes.  Functions that
 * return ssize_t or int follow the C library: -1 and errno on failure.
 */
#ifndef SMCR_SMC_SOCK_H
#define SMCR_SMC_SOCK_H

#include <stdbool.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "fdtable.h"
#include "reason.h"
#include "spin.h"

enum smcr_sock_phase {
	SMCR_SOCK_IDLE,         /* negotiated, CLC not started */
	SMCR_SOCK_SETUP,        /* CLC in progress */
	SMCR_SOCK_SMC,          /* bytes go over the SMC connection */
	SMCR_SOCK_TCP,          /* CLC ended in a Decline: plain TCP from here on */
	SMCR_SOCK_RESET,        /* CLC failed half-way: the TCP connection was reset */
};

/* The handshake of fd (active: a client) negotiated SMC. */
void smcr_sock_negotiated(int fd, bool active);

/*
 * fd, a connected TCP socket whose handshake negotiated SMC, came to this
 * process from another (SCM_RIGHTS, exec): carry on with its connection
 * where that process left it, if smcrd knows it (else it is plain TCP).
 */
void smcr_sock_adopt(int fd, bool active);

/* References held by the descriptor table (fdtable.c). */
struct smcr_sock *smcr_sock_get(struct smcr_sock *sk);
void smcr_sock_put(struct smcr_sock *sk, int fd);

/*
 * changed(fd) is called, outside any connection lock, whenever fd's CLC
 * exchange ends: the readiness layer registers it at start-up, to change
 * how fd is waited for.
 */
void smcr_sock_on_phase_change(void (*changed)(int fd));

/*
 * Reads the host tag of our CLC messages now, at start: a worker that
 * chroots later has no /proc, and its connections live in the network
 * namespace it started in, even if it moves to another.
 */
void smcr_sock_learn_host(void);

/*
 * A client's TCP socket fd is about to connect to peer: each transport
 * smcr.conf allows makes ready what our Proposal will need, so that it
 * follows the handshake at once (smc_transport.h, prepare_client).
 */
void smcr_sock_before_connect(int fd, const struct sockaddr *peer, socklen_t len);

/* Its phase, as this process can use it (RESET if it cannot reach the buffers). */
enum smcr_sock_phase smcr_sock_phase(struct smcr_sock *sk);

/*
 * The process is ending (exit, _exit) with connections open: a late
 * Proposal that a server declined for, and the reply to our leaving, are
 * read off the stream if they came, so that the kernel's close does not
 * reset the connection.  Never waits
 * on a peer; the lock over the process's connections is only tried (the
 * caller may be a signal handler that interrupted its holder).
 */
void smcr_sock_process_ending(void);

/*
 * The process is about to install a seccomp filter that forbids calls of
 * the fast path (entry/preload_confine.c): from now on it offers no SMC (a
 * Proposal gets a Decline, CONFINED), and each exchange it has under way is
 * taken to its end now, while every call is still allowed, waiting at most
 * the CLC wait for the peer's message.
 */
void smcr_sock_confine(void);

/*
 * The process is about to lose calls that connections on SMC wait and
 * wake with (reason: why): each of them goes on over TCP from where it is,
 * its peer told on the TCP stream (conn/smc_leave.h), while every call is
 * still allowed.
 */
void smcr_sock_leave_all(enum smcr_reason reason);

/*
 * The process is about to lose the calls that take up a connection's
 * buffers from smcrd: each connection on SMC whose view this process
 * cannot complete now (an RDMA connection it forked with, whose queue
 * pair is its parent's) goes on over TCP (NOSMCDEV) while every call is
 * still allowed; later it could not even send LEAVE (sshd's pre-auth
 * child, whose filter kills on sendto).
 */
void smcr_sock_leave_incomplete(void);

/*
 * What an exec hands to the image it makes: the connections with a
 * descriptor that stays open across it, and how many such descriptors
 * each has (the new image adopts each, smcr_sock_adopt, taking one hold in
 * flight).  Connections beyond the first SMCR_EXEC_HANDOVER_MAX are not
 * handed over: their new image adds holds of its own, as before.
 */
#define SMCR_EXEC_HANDOVER_MAX 64
struct smcr_exec_handover {
	bool own;                       /* this image's memory: its own holds go too */
	unsigned int n;
	struct {
		struct smcr_sock *sk;
		unsigned int holds;
	} to[SMCR_EXEC_HANDOVER_MAX];
};

/*
 * An exec is about to replace this image: each descriptor of a connection
 * that stays open across it counts as a hold in flight, as a message
 * carrying it would, and this image's own hold becomes one of them (the
 * buffers of those connections are offered first; the others' are not:
 * they close with the image).  Without that the new image added its
 * holds to the old one's, which nobody gave back: a connection the new
 * image closed was not ended, and its buffers stayed held until the
 * process exited.  A vfork child (python's subprocess) execs in its
 * parent's memory with its own descriptors, which it has dup2'd and
 * closed: those are found in /proc/self/fd, by inode, and the parent
 * keeps its hold.  smcr_sock_exec_failed takes back what h says.
 */
void smcr_sock_exec_prepare(struct smcr_exec_handover *h);
void smcr_sock_exec_failed(const struct smcr_exec_handover *h);

/*
 * posix_spawn is about to start a new image in a new process whose
 * descriptors include those of this process that parent_fds lists, one
 * entry per descriptor of the new image (numbers that are not connections
 * are passed over).  Each such connection's buffer is offered first (no
 * other's: a server's buffer is made and charged at its offer), and each
 * such descriptor counts as a hold in flight for the new image to take
 * up (smcr_sock_adopt), on top of this process's holds: before, the new
 * image added its holds only when it adopted the connection, so a parent
 * that closed its copy as soon as posix_spawn returned ended the
 * connection under it.  Fewer entries than the new image has descriptors
 * is safe (an adoption that finds no hold in flight adds one), more would
 * keep the connection open after its last close.  smcr_sock_spawn_done
 * takes the holds back if the spawn failed.
 */
void smcr_sock_spawn_prepare(struct smcr_exec_handover *h, const int *parent_fds,
			     unsigned int n);
void smcr_sock_spawn_done(const struct smcr_exec_handover *h, bool spawned);

/*
 * A server's accept() gave fd, whose handshake negotiated SMC: its
 * exchange goes as far as it can without waiting for the peer, answering
 * a Proposal already there.  Where RDMA may carry the connection, whose
 * link a forked child cannot use, accept() answers nothing: the first
 * call on the connection does, in whichever process makes it (a fork
 * server's child builds its own link instead of leaving for TCP).  But
 * if the client end is a connection of this very process in its exchange
 * (one thread may drive both ends), accept() goes on as first said, and
 * if that end has sent its Proposal, waits for it, up to the CLC wait:
 * were it a moment late, the thread's next call on the server would
 * answer it and then wait for a Confirm that only its next call on the
 * client sends.
 */
void smcr_sock_accepted(struct smcr_sock *sk, int fd);

/*
 * Drives the CLC exchange of fd as far as it goes without waiting, or
 * (may_wait, and fd blocking) to its end, however long the peer takes to
 * begin its next message, as a TCP call waits for data.  Returns the phase
 * reached; a wait that ended first (still SMCR_SOCK_SETUP) leaves errno
 * EAGAIN (the socket's SO_RCVTIMEO or SO_SNDTIMEO, the shorter) or EINTR
 * (a signal whose handler does not restart calls).
 */
enum smcr_sock_phase smcr_sock_settle(struct smcr_sock *sk, int fd, bool may_wait);

/*
 * Whether a data call on fd is ours: false when its bytes go over TCP
 * (a read of an end that left is ours until its leave is over).
 * Settles first (waiting only if fd is blocking and !dontwait).  A call
 * that writes (sending) on a server whose client's Proposal has not come
 * waits for it SMC_CLC_PROPOSAL_WAIT_MS at most, from the first such call
 * or smcr_sock_want_send; then the exchange declines and the call's bytes
 * go on TCP, while a read still waits for the late Proposal, to discard it.
 * Once the connection is on TCP for good, fd's calls stop coming here
 * (smcr_fd_serving).
 */
bool smcr_sock_takes(struct smcr_sock *sk, int fd, bool dontwait, bool sending);

/*
 * Readiness asks whether a server in its exchange may write (POLLOUT):
 * starts the Proposal's deadline as a write would.  Returns the
 * milliseconds until the exchange must be driven (smcr_sock_settle) to
 * decline, 0 if now, -1 if there is no such deadline.
 */
int smcr_sock_want_send(struct smcr_sock *sk);

/* Whether the application's writes go on TCP (a server that declined, or ended on TCP). */
bool smcr_sock_writes_tcp(struct smcr_sock *sk);

/* The socket calls on a descriptor smcr_sock_takes() took. */
ssize_t smcr_sock_recv(struct smcr_sock *sk, const struct iovec *iov, int iovcnt, int flags);
ssize_t smcr_sock_send(struct smcr_sock *sk, const struct iovec *iov, int iovcnt, int flags);
ssize_t smcr_sock_sendfile(struct smcr_sock *sk, int in_fd, off_t *offset, size_t count);
ssize_t smcr_sock_splice_in(struct smcr_sock *sk, int pipe_fd, size_t len, unsigned int flags);
ssize_t smcr_sock_splice_out(struct smcr_sock *sk, int pipe_fd, size_t len, unsigned int flags);
int smcr_sock_shutdown(struct smcr_sock *sk, int fd, int how);

/* O_NONBLOCK of the descriptor changed (fcntl F_SETFL, ioctl FIONBIO). */
void smcr_sock_set_nonblock(struct smcr_sock *sk, bool nonblock);

/*
 * An ioctl, getsockopt or setsockopt that the SMC connection answers
 * itself: true and *rc set, or false when the call is the kernel's.
 */
bool smcr_sock_ioctl(struct smcr_sock *sk, unsigned long request, void *arg, int *rc);
bool smcr_sock_getsockopt(struct smcr_sock *sk, int level, int name, void *value,
			  socklen_t *len, int *rc);
/* After the kernel accepted a setsockopt: what the SMC connection takes from it. */
void smcr_sock_setsockopt(struct smcr_sock *sk, int level, int name, const void *value,
			  socklen_t len);

/*
 * Readiness for poll and epoll (POLLIN, POLLOUT, POLLPRI, POLLRDHUP,
 * POLLHUP, POLLERR) of an SMC connection, and what to sleep on: its wake
 * descriptor, armed, and its TCP socket (POLLRDHUP: the peer is gone).
 * smcr_sock_events() is the number to take before looking (see
 * smc_transport.h), smcr_sock_collect() what a spin calls to make it move,
 * smcr_sock_spin_how() how long to spin (spin.h); smcr_sock_arm() false
 * means look again.  A party that sleeps on the wake descriptor counts
 * itself among its sleepers (smcr_fd_sleepers) for as long as it may:
 * own is 1 if the caller is counted already, 0 if not yet.  The caller
 * alone reads it empty; with others, it is left readable for them.  The
 * caller must then sleep without it (poll: it would wake at once) or
 * edge-triggered (epoll).
 */
unsigned int smcr_sock_poll(struct smcr_sock *sk);
/*
 * This end left SMC and its reads still go through libsmcr
 * (conn/smc_leave.h): the peer's reply is to come on the stream, or
 * (both ends left at once) bytes of the peer's still wait in our RMB.
 * Its readiness is smcr_sock_poll's until then: the reply is no data, and
 * what waits in the RMB is readable whatever the kernel says.  Not for the
 * reply in a process whose seccomp filter forbids asking the kernel
 * (ppoll): the kernel tells of the reply as of data there, and a read
 * takes it.
 */
bool smcr_sock_left_reads_ours(struct smcr_sock *sk);
uint32_t smcr_sock_events(struct smcr_sock *sk);
void smcr_sock_collect(struct smcr_sock *sk);
struct smcr_spin_how smcr_sock_spin_how(struct smcr_sock *sk);
bool smcr_sock_arm(struct smcr_sock *sk, uint32_t since, bool signalled, uint32_t own);
int smcr_sock_wake_fd(struct smcr_sock *sk);
/* The TCP connection has news (poll or epoll saw it): settle the SMC connection. */
void smcr_sock_tcp_news(struct smcr_sock *sk);

/* A message carries sk to another process (count 1), or did not after all (-1). */
void smcr_sock_passing(struct smcr_sock *sk, int count);

/*
 * Every connection of the process is about to be reachable from another
 * (fork, vfork): a server's buffer not yet offered goes to smcrd now, so
 * that the other process can carry the exchange on (smcr_sock_adopt).  An
 * exchange that cannot be offered ends first, declining (waiting up to
 * SMC_CLC_WAIT_MS for the peer), unless the other process inherits this
 * one's views (fork's child: views_inherited).  Asks smcrd: call it while
 * no other lock of libsmcr is held.
 */
void smcr_sock_offer_all(bool views_inherited);

/* fork() handlers: before, and after in the parent and in the child (see smc_sock_view.c). */
void smcr_sock_fork_prepare(void);
void smcr_sock_fork_done(void);
void smcr_sock_fork_child(void);

#endif
