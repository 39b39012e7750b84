/*
 * shm_broker.h - the shared-memory buffers that the two ends of a TCP
 * connection on this host hand each other through smcrd (protocol:
 * SMCR_CONTROL_OFFER, _ATTACH and _WITHDRAW in common/control_proto.h).
 *
 * An offer is a sealed memfd that one end puts up for the other end of its
 * connection, with the wake-up channel whose tx that other end wakes the
 * owner by, and
 * the end's connection state (RESUME hands all back to a process holding
 * that end's socket); the broker keeps them until the owner (or a process
 * holding the socket) withdraws the offer, or the owner goes.  Memory grants are not kept
 * here: control.c charges an offer's bytes to its owner and returns them
 * when the broker says the offer is over.
 */
#ifndef SMCRD_SHM_BROKER_H
#define SMCRD_SHM_BROKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Processes besides its owner that an offer remembers as holding its socket. */
#define SMCRD_SHM_HOLDERS 8

/* One end of a TCP connection as the kernel names it. */
struct smcrd_shm_addr {
	uint8_t addr[16];               /* IPv4 as IPv4-mapped IPv6: one form for both */
	uint16_t port;
	uint32_t scope;                 /* IPv6 scope (interface) of a link-local address */
};

/* A TCP socket: which network namespace, which socket, which connection. */
struct smcrd_shm_conn {
	uint64_t netns;                 /* SO_NETNS_COOKIE */
	uint64_t cookie;                /* SO_COOKIE: the socket itself */
	struct smcrd_shm_addr local, peer;
};

struct smcrd_shm_offer {
	uint64_t token;
	uint64_t owner;                 /* smcrd_client.id of the offering process */
	uint64_t bytes;                 /* the memfd's size, charged to the owner */
	struct smcrd_shm_conn conn;     /* the offering socket */
	int memfd;
	int wake_rx, wake_tx;           /* the owner's wake-up channel */
	int statefd;                    /* the owner's connection state */
	bool attached;                  /* the peer has attached */
	bool suspect;                   /* a holder left while its socket was still open */
	uint64_t holders[SMCRD_SHM_HOLDERS];    /* other processes holding the socket
						   (0: a free place), to own it next */
};

struct smcrd_shm_broker {
	struct smcrd_shm_offer *offers;
	size_t n, capacity;
	size_t attached;                /* offers whose peer has attached */
	size_t max_offers;              /* so that offers never take all our descriptors */
	uint64_t netns;                 /* ours: sockets of other namespaces are not seen */
};

/* OFFER's descriptors: the TCP socket, the memfd, the channel (rx, tx), the state memfd. */
#define SMCRD_SHM_OFFER_FDS 5
/* RESUME's: state, memfd, channel (rx, tx), and the other end's memfd and tx. */
#define SMCRD_SHM_RESUME_FDS 6

void smcrd_shm_broker_init(struct smcrd_shm_broker *b);

/* Closes every descriptor held; forgets every offer. */
void smcrd_shm_broker_close(struct smcrd_shm_broker *b);

/*
 * Checks an offer of bytes, fds as OFFER carries them: a connected TCP
 * socket, a read-write memfd of exactly bytes (whole pages) sealed so that
 * its size is fixed for good, a wake-up channel (rx, tx: unix stream
 * sockets connected to unnamed ones), and a state memfd sealed alike (a
 * few pages).  Fills *o (descriptors not taken yet).  0, or a negative
 * errno with why filled.
 */
int smcrd_shm_check(struct smcrd_shm_offer *o, const int fds[SMCRD_SHM_OFFER_FDS],
		    uint64_t bytes, char *why, size_t size);

/*
 * Records a checked offer for owner, taking its memfd, channel and state
 * from fds[1..4] (set to -1 then); its token in *token.  0, -EMFILE (too
 * many offers) or -ENOMEM, the descriptors left where they were.
 */
int smcrd_shm_add(struct smcrd_shm_broker *b, const struct smcrd_shm_offer *o,
		  int fds[SMCRD_SHM_OFFER_FDS], uint64_t owner, uint64_t *token);

/*
 * Copies of the memfd and the channel's tx of offer *token (0: the one made on
 * the other end of sock's connection, whose token goes into *token) into
 * fds[] (the caller's to close) if sock is the other end of the offering
 * connection.  -EACCES otherwise, whatever the reason (see shm_broker.c);
 * -EMFILE if smcrd has no descriptors for the copies.
 */
int smcrd_shm_attach(struct smcrd_shm_broker *b, uint64_t *token, int sock, int fds[2]);

/*
 * Copies of the state, memfd and channel (rx, tx) offered on sock itself,
 * then of the memfd and tx offered on its other end if there is one, into
 * fds[] (*nfds: 4 or 6, the caller's to close); asker now holds the offer too,
 * and owns it if nobody did (*adopted: its bytes, to charge; else 0); its
 * token in *token.  -ENOENT if nothing was offered on sock.
 */
int smcrd_shm_resume(struct smcrd_shm_broker *b, int sock, uint64_t asker, uint64_t *token,
		     uint64_t *adopted, int fds[SMCRD_SHM_RESUME_FDS], size_t *nfds);

/* child (a fork of parent) holds every offer parent owns or holds. */
void smcrd_shm_share(struct smcrd_shm_broker *b, uint64_t parent, uint64_t child);

/*
 * Ends offer token if asker owns it or sock (-1: none) is the offering
 * socket: the bytes to return to *owner (0: nothing ended).
 */
uint64_t smcrd_shm_withdraw(struct smcrd_shm_broker *b, uint64_t token, uint64_t asker,
			    int sock, uint64_t *owner);

/* Told of each offer a sweep ends: its bytes go back from owner (0: nobody was charged). */
typedef void smcrd_shm_ended_fn(void *ctx, uint64_t owner, uint64_t bytes);

/*
 * Ends the offers held or owned by held_by (0: every offer) whose socket
 * the kernel says is gone, as its last holder exited without withdrawing
 * them.  Those of held_by whose socket is still open become suspects: a
 * process's files may be released just after smcrd sees it go.  Returns
 * how many ended.
 */
size_t smcrd_shm_sweep(struct smcrd_shm_broker *b, uint64_t held_by,
		       smcrd_shm_ended_fn *ended, void *ctx);

/* The same for the suspects only; returns how many are left. */
size_t smcrd_shm_sweep_suspects(struct smcrd_shm_broker *b, smcrd_shm_ended_fn *ended, void *ctx);

/* Stops suspecting every offer (the sweep before a refused grant still looks). */
void smcrd_shm_clear_suspects(struct smcrd_shm_broker *b);

/*
 * owner has gone: it holds none of the offers any more, and each offer it
 * owned passes to a process known to hold it (moved(ctx, to, bytes): the
 * grant moves with it), or, while the kernel says its socket is still open
 * somewhere (a process unknown here, a message in flight), is owned and
 * charged by nobody until one resumes it; else it ends.  Offers owned by
 * nobody whose socket is gone end too.
 */
void smcrd_shm_drop_owner(struct smcrd_shm_broker *b, uint64_t owner,
			  void (*moved)(void *ctx, uint64_t to, uint64_t bytes), void *ctx);

#endif
