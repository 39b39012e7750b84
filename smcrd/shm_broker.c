/*
 * shm_broker.c - the offers of shared-memory buffers between the two ends of
 * a TCP connection on this host (see shm_broker.h).
 *
 * Who may attach.  The offering process shows us its TCP socket, and we note
 * the connection's network namespace and addresses as the kernel reports
 * them, not as anyone claims them.  A process may attach only by showing a
 * TCP socket (SO_PROTOCOL: not UDP, whose ports are a space of their own, nor
 * MPTCP) in the same namespace whose local address and port are the offering
 * socket's peer's and whose peer address and port are the offering socket's
 * own, and which is not the offering socket itself (a socket connected to
 * itself has both ends alike).  Within one namespace the kernel lets no two
 * TCP sockets that have a peer share a four-tuple (connect() fails with
 * EADDRNOTAVAIL; a segment for it reaches the existing socket, not a
 * listener), so while the offering socket lives only its peer passes:
 * whoever holds that descriptor is the peer, by the rule the kernel applies
 * to the TCP stream itself.  Forging one takes TCP_REPAIR, which needs
 * CAP_NET_ADMIN over the namespace: such a process could read the stream
 * anyway.  The offering process withdraws before it closes its socket (and
 * dies with it), so the four-tuple is not reused (it first sits in
 * TIME_WAIT) while the offer is open.
 *
 * What a refusal tells.  A wrong token, an offer already attached and a
 * socket that is not the peer all get the same -EACCES, so a process that is
 * not the peer learns nothing, not even whether a token exists; the 64-bit
 * random token only names an offer and keeps nobody out by itself.  A
 * refused attempt leaves the offer for its peer.
 *
 * What the peer gets.  A memfd sealed against shrinking, growing and further
 * sealing, so the owner cannot pull pages from under the peer's mapping
 * (SIGBUS), and not sealed against writing, so the peer can map it writable.
 * With it, the owner's eventfd, which the peer writes 8 bytes into to wake
 * the owner.  The peer writes whatever descriptor we hand over without
 * looking, so it must be an eventfd, which only counts: a file, pipe,
 * socket or device written by the peer could stall it (a full pipe, a FUSE
 * file), kill it (SIGPIPE) or act with the peer's rights (some kernel files
 * check the writer's credentials at write time), making the peer do what
 * the owner may not.  Both are handed over once: after that we hold nothing
 * but the token, owner and size, so that the grant stays charged until the
 * owner withdraws or goes.
 *
 * How much we hold.  Offers live in one array searched linearly: one entry
 * per shared-memory connection on the host, touched at connection setup and
 * close only.  Buffers are whole pages charged against max_memory, which
 * bounds the entries; those still waiting for their peer hold two
 * descriptors each (memfd, eventfd) and are capped (max_pending), so that
 * smcrd keeps descriptors to serve its clients.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shm_broker.h"

#define SEALS_REQUIRED (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)
#define SEALS_FORBIDDEN (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE)
#define EVENTFD_LINK "anon_inode:[eventfd]"
#define MAX_PENDING 4096
#define PENDING_FDS 2                   /* a waiting offer holds its memfd and its eventfd */

void smcrd_shm_broker_init(struct smcrd_shm_broker *b)
{
	struct rlimit rl;

	/*
	 * Half our descriptors may wait for peers, the other half serve clients.
	 * A buffer waits one round trip, so a few thousand is plenty for a host.
	 */
	*b = (struct smcrd_shm_broker){ .max_pending = MAX_PENDING };
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur / 2 / PENDING_FDS < MAX_PENDING)
		b->max_pending = rl.rlim_cur / 2 / PENDING_FDS;
}

static void forget(struct smcrd_shm_broker *b, size_t i)
{
	struct smcrd_shm_offer *o = &b->offers[i];

	if (o->memfd >= 0) {
		close(o->memfd);
		close(o->efd);
		b->pending--;
	}
	b->offers[i] = b->offers[--b->n];
}

void smcrd_shm_broker_close(struct smcrd_shm_broker *b)
{
	while (b->n)
		forget(b, b->n - 1);
	free(b->offers);
	smcrd_shm_broker_init(b);
}

/* sa as an address in one form for both families; false if it is neither. */
static bool normalize(const struct sockaddr_storage *sa, struct smcrd_shm_addr *a)
{
	*a = (struct smcrd_shm_addr){ 0 };
	if (sa->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
		a->addr[10] = a->addr[11] = 0xff;
		memcpy(&a->addr[12], &in->sin_addr, 4);
		a->port = ntohs(in->sin_port);
		return true;
	}
	if (sa->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
		memcpy(a->addr, &in6->sin6_addr, 16);
		a->port = ntohs(in6->sin6_port);
		a->scope = in6->sin6_scope_id;
		return true;
	}
	return false;
}

static bool same_addr(const struct smcrd_shm_addr *a, const struct smcrd_shm_addr *b)
{
	return memcmp(a->addr, b->addr, sizeof(a->addr)) == 0 && a->port == b->port &&
	       a->scope == b->scope;
}

static bool sockopt_u64(int sock, int opt, uint64_t *v)
{
	socklen_t len = sizeof(*v);
	return getsockopt(sock, SOL_SOCKET, opt, v, &len) == 0 && len == sizeof(*v);
}

/* What the kernel says of sock: 0, or a negative errno with why filled. */
static int read_conn(int sock, struct smcrd_shm_conn *c, char *why, size_t size)
{
	struct sockaddr_storage local, peer;
	socklen_t llen = sizeof(local), plen = sizeof(peer), len = sizeof(int);
	int protocol = 0;

	/* IPPROTO_TCP, not MPTCP: only plain TCP promises the four-tuple is unique. */
	if (getsockopt(sock, SOL_SOCKET, SO_PROTOCOL, &protocol, &len) || protocol != IPPROTO_TCP) {
		snprintf(why, size, "not a TCP socket");
		return -EINVAL;
	}
	/* Fails for a listener, an unconnected socket, and one whose connection ended. */
	if (getsockname(sock, (struct sockaddr *)&local, &llen) ||
	    getpeername(sock, (struct sockaddr *)&peer, &plen) ||
	    !normalize(&local, &c->local) || !normalize(&peer, &c->peer)) {
		snprintf(why, size, "the TCP socket is not connected");
		return -EINVAL;
	}
	if (!sockopt_u64(sock, SO_NETNS_COOKIE, &c->netns) ||
	    !sockopt_u64(sock, SO_COOKIE, &c->cookie)) {
		snprintf(why, size, "cannot tell the socket's network namespace: %s",
			 strerror(errno));
		return -EOPNOTSUPP;
	}
	return 0;
}

/* Whether memfd can be the peer's to map, writable, for good. */
static int check_memfd(int memfd, uint64_t bytes, char *why, size_t size)
{
	struct stat st;
	/*
	 * First: F_GET_SEALS works on memfds only (a tmpfs file shows F_SEAL_SEAL
	 * alone) and asks no file system, where fstat of, say, a FUSE file could
	 * keep smcrd waiting on whoever serves it.
	 */
	int seals = fcntl(memfd, F_GET_SEALS);
	int flags = fcntl(memfd, F_GETFL);

	if (seals < 0 || flags < 0 || fstat(memfd, &st) || !S_ISREG(st.st_mode)) {
		snprintf(why, size, "the buffer is not a memfd");
		return -EINVAL;
	}
	if ((seals & SEALS_REQUIRED) != SEALS_REQUIRED || (seals & SEALS_FORBIDDEN)) {
		snprintf(why, size, "the memfd must be sealed against shrink, grow and seal, "
			 "and not write (seals 0x%x)", (unsigned int)seals);
		return -EINVAL;
	}
	if ((flags & O_ACCMODE) != O_RDWR) {
		snprintf(why, size, "the memfd is not open for reading and writing");
		return -EINVAL;
	}
	if ((uint64_t)st.st_size != bytes) {
		snprintf(why, size, "the memfd holds %lld bytes, not the %llu offered",
			 (long long)st.st_size, (unsigned long long)bytes);
		return -EINVAL;
	}
	/* Whole pages, as mapped: what is charged is what is used, and offers are few. */
	if (bytes == 0 || bytes % (uint64_t)sysconf(_SC_PAGESIZE)) {
		snprintf(why, size, "%llu bytes is not a whole number of pages",
			 (unsigned long long)bytes);
		return -EINVAL;
	}
	return 0;
}

/*
 * Whether efd is an eventfd (why the peer's writes must go to nothing else:
 * at the top).  The link is the kernel's name for the file, not one a
 * process chooses: a path in a file system begins with '/', and of the
 * anonymous files only eventfd()'s is named so.  Nor does readlink ask any
 * file system (check_memfd says why that matters).
 */
static int check_eventfd(int efd, char *why, size_t size)
{
	char path[64], link[sizeof(EVENTFD_LINK)];

	snprintf(path, sizeof(path), "/proc/self/fd/%d", efd);
	ssize_t n = readlink(path, link, sizeof(link));
	if (n != (ssize_t)strlen(EVENTFD_LINK) || memcmp(link, EVENTFD_LINK, (size_t)n)) {
		snprintf(why, size, "the wake-up descriptor is not an eventfd");
		return -EINVAL;
	}
	return 0;
}

int smcrd_shm_check(struct smcrd_shm_offer *o, int sock, int memfd, int efd, uint64_t bytes,
		    char *why, size_t size)
{
	*o = (struct smcrd_shm_offer){ .bytes = bytes, .memfd = -1, .efd = -1 };
	int rc = check_memfd(memfd, bytes, why, size);
	if (!rc)
		rc = check_eventfd(efd, why, size);
	return rc ? rc : read_conn(sock, &o->conn, why, size);
}

static struct smcrd_shm_offer *find(struct smcrd_shm_broker *b, uint64_t token)
{
	for (size_t i = 0; i < b->n; i++)
		if (b->offers[i].token == token)
			return &b->offers[i];
	return NULL;
}

/* A fresh token: random, so that one connection's says nothing of another's. */
static int new_token(struct smcrd_shm_broker *b, uint64_t *token)
{
	do {
		if (getrandom(token, sizeof(*token), 0) != sizeof(*token))
			return -errno;
	} while (*token == 0 || find(b, *token));
	return 0;
}

int smcrd_shm_add(struct smcrd_shm_broker *b, const struct smcrd_shm_offer *o, int memfd,
		  int efd, uint64_t owner, uint64_t *token)
{
	if (b->pending >= b->max_pending)
		return -EMFILE;
	if (b->n == b->capacity) {
		size_t cap = b->capacity ? b->capacity * 2 : 16;
		void *grown = realloc(b->offers, cap * sizeof(*b->offers));
		if (!grown)
			return -ENOMEM;
		b->offers = grown;
		b->capacity = cap;
	}
	int rc = new_token(b, token);
	if (rc)
		return rc;
	int mem_copy = fcntl(memfd, F_DUPFD_CLOEXEC, 0);
	if (mem_copy < 0)
		return -errno;
	int efd_copy = fcntl(efd, F_DUPFD_CLOEXEC, 0);
	if (efd_copy < 0) {
		rc = -errno;
		close(mem_copy);
		return rc;
	}
	struct smcrd_shm_offer *slot = &b->offers[b->n++];
	*slot = *o;
	slot->token = *token;
	slot->owner = owner;
	slot->memfd = mem_copy;
	slot->efd = efd_copy;
	b->pending++;
	return 0;
}

/* Whether c is the other end of the connection that o was offered on. */
static bool is_peer(const struct smcrd_shm_offer *o, const struct smcrd_shm_conn *c)
{
	return c->netns == o->conn.netns && c->cookie != o->conn.cookie &&
	       same_addr(&c->local, &o->conn.peer) && same_addr(&c->peer, &o->conn.local);
}

int smcrd_shm_attach(struct smcrd_shm_broker *b, uint64_t token, int sock, int *memfd,
		     int *efd)
{
	struct smcrd_shm_offer *o = find(b, token);
	struct smcrd_shm_conn c;
	char why[64];

	if (!o || o->memfd < 0 || read_conn(sock, &c, why, sizeof(why)) || !is_peer(o, &c))
		return -EACCES;
	*memfd = o->memfd;
	*efd = o->efd;
	o->memfd = o->efd = -1;
	b->pending--;
	return 0;
}

uint64_t smcrd_shm_withdraw(struct smcrd_shm_broker *b, uint64_t owner, uint64_t token)
{
	struct smcrd_shm_offer *o = find(b, token);

	if (!o || o->owner != owner)
		return 0;               /* only its owner ends an offer */
	uint64_t bytes = o->bytes;
	forget(b, (size_t)(o - b->offers));
	return bytes;
}

void smcrd_shm_drop_owner(struct smcrd_shm_broker *b, uint64_t owner)
{
	for (size_t i = b->n; i-- > 0;)
		if (b->offers[i].owner == owner)
			forget(b, i);
}
