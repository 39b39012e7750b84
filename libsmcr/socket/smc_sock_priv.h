/*
 * smc_sock_priv.h - inside the socket layer: a connection's shared state
 * page and a process's view of it, as smc_sock_view.c makes them and
 * smc_sock.c uses them.  Nothing outside libsmcr/socket includes it.
 */
#ifndef SMCR_SMC_SOCK_PRIV_H
#define SMCR_SMC_SOCK_PRIV_H

#include <stdatomic.h>
#include <stdbool.h>
#include <sys/types.h>
#include <stdint.h>

#include "conn_record.h"
#include "reason.h"
#include "smc_setup.h"
#include "smc_sock.h"
#include "smc_transport.h"

/* What every process holding the connection shares: a page of a memfd (see the top). */
struct sock_shared {
	struct smc_conn_state conn;
	struct smc_setup setup;
	_Atomic unsigned int holders;   /* processes with a view of it, and messages */
	_Atomic unsigned int in_flight; /* of which messages carrying it (SCM_RIGHTS) */
	_Atomic int phase;              /* enum smcr_sock_phase */
	_Atomic smc_flag nonblock;      /* O_NONBLOCK, as the application set it */
	smc_flag active;                /* a client */
	smc_flag linger_abort;          /* SO_LINGER with a zero timeout: close resets */
	smc_flag corked;                /* TCP_CORK: sends wait for more, as MSG_MORE */
	smc_flag setup_send_tried;      /* a client's send found the CLC exchange unfinished */
	_Atomic int shut_pending;       /* SHUT_* + 1 asked during the CLC exchange; 0: none */
	smc_flag offered;               /* our buffer is on offer as token */
	smc_flag offer_tried;           /* by one of the processes: offered, or offer_failed */
	enum smcr_reason offer_failed;  /* why it is not */
	_Atomic smc_flag writes_tcp;    /* the application's writes go on TCP (the exchange
					   declined or ended on TCP) */
	uint32_t transports;            /* SMCR_CONTROL_SHM, _RDMA: what smcr.conf allowed then */
	enum smcr_transport_id transport;       /* which one the connection uses */
	uint64_t token;
};

#define STATE_BYTES 4096u
_Static_assert(sizeof(struct sock_shared) <= STATE_BYTES, "the state outgrew its page");

/* The walks over every connection of the process (smc_sock_view.c), each marking its own. */
enum walk_kind {
	WALK_OFFER,             /* offers before a hand-over */
	WALK_SANDBOX,           /* a sandbox: exchanges settled, connections leaving */
	WALK_ENDING,            /* the process ends: late Proposals read off */
	WALK_KINDS
};

/* This process's view of a connection. */
struct smcr_sock {
	_Atomic unsigned int refs;      /* descriptors of this process naming it */
	struct sock_shared *sh;
	_Atomic bool attached;          /* conn has the peer's buffer (read unlocked) */
	/* threads of the process in its CLC exchange (smc_sock_view.c's settle) */
	_Atomic unsigned int settling;
	_Atomic uint32_t exchange_turn; /* moves as the exchange does: their futex */
	_Atomic bool polling;           /* one of them polls the socket for the next message */
	bool lost;                      /* the view cannot be had: the connection is gone here */
	bool first_contact;             /* RDMA server: the connection made its link */
	int reached_fd, reached_wake_tx; /* server: the client's buffer, got before our
					    Accept (setup_reach); -1: none */
	int state_fd;                   /* the state's memfd, until the buffer is offered
					   with it (offered()); -1: none */
	struct smc_conn conn;
	ino_t ino;                      /* the TCP socket's inode (0: unknown) */
	unsigned long walked[WALK_KINDS]; /* the round of each kind of walk that last took it */
	unsigned long handed_call;      /* the last round that found it handed to a new image */
	uint64_t staging_granted;       /* what smcrd granted for the view's staging buffer
					   (smc_sock_view.c): as large as that is */
	struct smcr_sock *prev, *next;  /* every connection of the process */
};

/* The phase as the state says it (smcr_sock_phase: as this process can use it). */
static inline enum smcr_sock_phase phase_of(const struct smcr_sock *sk)
{
	return atomic_load_explicit(&sk->sh->phase, memory_order_acquire);
}

/*
 * This end left SMC and the peer's reply to its LEAVE is due: takes what
 * came of it, without waiting (smc_sock_view.c).
 */
void smcr_sock_reply_drain(struct smcr_sock *sk);

/*
 * shutdown(how) of a connection on SMC: the TCP connection stays whole (its
 * end is how the peer learns we are gone).  0 or a negative errno.
 */
int smcr_sock_shut_smc(struct smcr_sock *sk, int how);

/* shutdown(how) asked during the CLC exchange: applied as it ends (smcr_sock_settle). */
void smcr_sock_shut_later(struct smcr_sock *sk, int how);

#endif
