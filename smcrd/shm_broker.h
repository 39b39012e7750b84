/*
 * shm_broker.h - the shared-memory buffers that the two ends of a TCP
 * connection on this host hand each other through smcrd (protocol:
 * SMCR_CONTROL_OFFER, _ATTACH and _WITHDRAW in libsmcr/control_proto.h).
 *
 * An offer is a sealed memfd that one end puts up for the other end of its
 * connection, with the eventfd by which that other end wakes the owner; the
 * broker keeps both until that other end attaches (once) and remembers the
 * offer until its owner withdraws it or goes.  Memory grants are not kept
 * here: control.c charges an offer's bytes to its owner and returns them
 * when the broker says the offer is over.
 */
#ifndef SMCRD_SHM_BROKER_H
#define SMCRD_SHM_BROKER_H

#include <stddef.h>
#include <stdint.h>

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
	int memfd;                      /* -1 once attached */
	int efd;                        /* the owner's eventfd; -1 once attached */
};

struct smcrd_shm_broker {
	struct smcrd_shm_offer *offers;
	size_t n, capacity;
	size_t pending;                 /* offers not attached yet: each holds a memfd
					   and an eventfd */
	size_t max_pending;             /* so that buffers never take all our descriptors */
};

void smcrd_shm_broker_init(struct smcrd_shm_broker *b);

/* Closes every descriptor held; forgets every offer. */
void smcrd_shm_broker_close(struct smcrd_shm_broker *b);

/*
 * Checks an offer of bytes: sock a connected TCP socket, memfd a read-write
 * memfd of exactly bytes (whole pages), sealed so that its size is fixed for
 * good, efd an eventfd.  Fills *o (descriptors not taken yet).  0, or a
 * negative errno with why filled.
 */
int smcrd_shm_check(struct smcrd_shm_offer *o, int sock, int memfd, int efd, uint64_t bytes,
		    char *why, size_t size);

/*
 * Records a checked offer for owner, keeping copies of memfd and efd; its
 * token in *token.  0, -EMFILE (too many offers wait for their peer) or
 * -ENOMEM.
 */
int smcrd_shm_add(struct smcrd_shm_broker *b, const struct smcrd_shm_offer *o, int memfd,
		  int efd, uint64_t owner, uint64_t *token);

/*
 * Hands over the memfd and the eventfd of offer token if sock is the other
 * end of the offering connection and nobody attached yet: *memfd and *efd
 * are the caller's to close.  -EACCES otherwise, whatever the reason (see
 * shm_broker.c).
 */
int smcrd_shm_attach(struct smcrd_shm_broker *b, uint64_t token, int sock, int *memfd,
		     int *efd);

/* Ends owner's offer token; the bytes to return to owner (0: no such offer). */
uint64_t smcrd_shm_withdraw(struct smcrd_shm_broker *b, uint64_t owner, uint64_t token);

/* Ends all of owner's offers (it has gone; its grants are returned as a whole). */
void smcrd_shm_drop_owner(struct smcrd_shm_broker *b, uint64_t owner);

#endif
