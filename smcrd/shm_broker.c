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
 * refused attempt leaves the offer for its peer.  Only the peer itself may
 * hear -EMFILE instead: smcrd had no descriptors left to send.
 *
 * What the peer gets.  A memfd sealed against shrinking, growing and further
 * sealing, so the owner cannot pull pages from under the peer's mapping
 * (SIGBUS), and not sealed against writing, so the peer can map it writable.
 * With it, the tx end of the owner's wake-up channel, which the peer sends a
 * byte on to wake the owner (libsmcr/base/sys.h says why a channel is a
 * pair of unix stream sockets).  The peer sends on whatever descriptor we
 * hand over without looking, so it must be such a socket, connected to one
 * that has no name (a socketpair's other end): a file, pipe, socket or
 * device written by the peer could stall it (a FUSE file), or act with the
 * peer's rights (some kernel files check the writer's credentials at write
 * time; a named socket is a service that may trust its callers), making the
 * peer do what the owner may not.  A connected stream socket cannot be
 * connected anew, so what is checked here stays true.  The rx end, handed
 * back only to the owner's side (RESUME), is checked alike: its holders
 * wait on it in poll and epoll, which on some files can block.
 *
 * Resuming.  The offering end also leaves its connection state (a third
 * memfd, libsmcr/socket/smc_sock_view.c) with the offer, and any process that shows the
 * offering socket itself (same socket cookie: it holds a descriptor of it,
 * passed over SCM_RIGHTS, or inherited across exec) gets back the state,
 * the buffer and the wake-up channel, with the other end's buffer and tx if
 * that end offered too: what it needs to carry on with the connection.
 * Showing the socket proves as much as for attaching: whoever holds it can
 * read and write the stream anyway.  That process then holds the offer too,
 * as does a forked child of a holder (smcrd_shm_share): when the owner goes,
 * the offer passes to a holder still there, with its grant, instead of
 * ending - the one that offered may go before the connection does, as when
 * a server passes each connection to a worker and exits.  For the same
 * reason, a process that shows the socket may withdraw the offer as well as
 * its owner: the last process to close the connection may not be the one
 * that opened it.  When the owner goes and no known holder is left, the
 * kernel is asked whether the socket is still open (sock_diag: a socket
 * with an inode has a file, in some process or in a message on its way to
 * one); if so the offer waits, owned by nobody, for a process to resume it.
 *
 * Sweeping.  The last process to hold a socket may exit without closing it
 * (a fork server's child serves a connection and exits; its parent closed
 * its copy at once), and then nobody withdraws the offer while its owner
 * lives on.  So when a process goes, the offers it held are looked at, and
 * those whose socket the kernel says is gone end, their grant returned to
 * their owner; all offers are, before a grant is refused for max_memory.
 * An exiting process's files are released after its descriptors are
 * closed, in an order of the kernel's, so smcrd may see it go while its
 * copy of the socket still stands: such offers are suspects, looked at
 * again a few times shortly after (control.c).
 *
 * How much we hold.  Offers live in one array searched linearly: one entry
 * per shared-memory connection end on the host, touched at connection setup
 * and close, and when a socket changes hands.  Buffers are whole pages
 * charged against max_memory, which bounds the entries; each holds four
 * descriptors while it lasts (memfd, channel, state), and their number is
 * capped (max_offers), so that smcrd keeps descriptors to serve its clients.
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
#include <sys/un.h>
#include <unistd.h>

#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>

#include "shm_broker.h"

#define SEALS_REQUIRED (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)
#define SEALS_FORBIDDEN (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE)
#define MAX_OFFERS 65536
#define OFFER_FDS 4                     /* an offer holds its memfd, channel and state */
#define STATE_MAX_BYTES 65536           /* a connection's state: a page or a few */

void smcrd_shm_broker_init(struct smcrd_shm_broker *b)
{
	struct rlimit rl;

	/*
	 * Half our descriptors may hold offers; a quarter may wait to be closed
	 * (closer.h), the rest serve clients.
	 */
	*b = (struct smcrd_shm_broker){ .max_offers = MAX_OFFERS };
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur / 2 / OFFER_FDS < MAX_OFFERS)
		b->max_offers = rl.rlim_cur / 2 / OFFER_FDS;
	int probe = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	socklen_t len = sizeof(b->netns);
	if (probe >= 0) {
		if (getsockopt(probe, SOL_SOCKET, SO_NETNS_COOKIE, &b->netns, &len))
			b->netns = 0;
		close(probe);
	}
}

static void forget(struct smcrd_shm_broker *b, size_t i)
{
	struct smcrd_shm_offer *o = &b->offers[i];

	close(o->memfd);
	close(o->wake_rx);
	close(o->wake_tx);
	close(o->statefd);
	b->attached -= o->attached;
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

/*
 * Whether memfd can be mapped, writable, for good, by another process than
 * its maker: least to most bytes, whole pages (*bytes: how many).
 */
static int check_memfd(int memfd, uint64_t least, uint64_t most, uint64_t *bytes, char *why,
		       size_t size)
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
	*bytes = (uint64_t)st.st_size;
	if (*bytes < least || *bytes > most) {
		snprintf(why, size, "the memfd holds %llu bytes, not %llu to %llu",
			 (unsigned long long)*bytes, (unsigned long long)least,
			 (unsigned long long)most);
		return -EINVAL;
	}
	/* Whole pages, as mapped: what is charged is what is used, and offers are few. */
	if (*bytes == 0 || *bytes % (uint64_t)sysconf(_SC_PAGESIZE)) {
		snprintf(why, size, "%llu bytes is not a whole number of pages",
			 (unsigned long long)*bytes);
		return -EINVAL;
	}
	return 0;
}

/*
 * Whether fd is an end of a wake-up channel (why the peer's sends must go
 * to nothing else: at the top): a unix stream socket connected to one
 * without a name.  Its address family, type and peer's name are the
 * kernel's, not the sender's to choose, and none is asked of a file system.
 */
static bool is_channel_end(int fd)
{
	struct sockaddr_un peer;
	socklen_t len = sizeof(peer);
	int domain = 0, type = 0;
	socklen_t dlen = sizeof(domain), tlen = sizeof(type);

	return getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &dlen) == 0 && domain == AF_UNIX &&
	       getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tlen) == 0 && type == SOCK_STREAM &&
	       getpeername(fd, (struct sockaddr *)&peer, &len) == 0 &&
	       len == sizeof(sa_family_t);
}

static int check_channel(const int fds[2], char *why, size_t size)
{
	if (is_channel_end(fds[0]) && is_channel_end(fds[1]))
		return 0;
	snprintf(why, size, "the wake-up channel is not a pair of unix stream sockets");
	return -EINVAL;
}

int smcrd_shm_check(struct smcrd_shm_offer *o, const int fds[SMCRD_SHM_OFFER_FDS],
		    uint64_t bytes, char *why, size_t size)
{
	uint64_t state_bytes;

	*o = (struct smcrd_shm_offer){ .bytes = bytes, .memfd = -1, .wake_rx = -1, .wake_tx = -1,
				       .statefd = -1 };
	int rc = check_memfd(fds[1], bytes, bytes, &o->bytes, why, size);
	if (!rc)
		rc = check_channel(fds + 2, why, size);
	if (!rc)
		rc = check_memfd(fds[4], 1, STATE_MAX_BYTES, &state_bytes, why, size);
	return rc ? rc : read_conn(fds[0], &o->conn, why, size);
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

/* Copies of fds[0..n) into copies[], close-on-exec: 0, or a negative errno and none. */
static int dup_fds(const int *fds, size_t n, int *copies)
{
	for (size_t i = 0; i < n; i++) {
		copies[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 0);
		if (copies[i] < 0) {
			int err = errno;

			while (i-- > 0)
				close(copies[i]);
			return -err;
		}
	}
	return 0;
}

int smcrd_shm_add(struct smcrd_shm_broker *b, const struct smcrd_shm_offer *o,
		  int fds[SMCRD_SHM_OFFER_FDS], uint64_t owner, uint64_t *token)
{
	if (b->n >= b->max_offers)
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
	struct smcrd_shm_offer *slot = &b->offers[b->n++];
	*slot = *o;
	slot->token = *token;
	slot->owner = owner;
	slot->memfd = fds[1];
	slot->wake_rx = fds[2];
	slot->wake_tx = fds[3];
	slot->statefd = fds[4];
	/* Checked to be memfds and unix sockets, whose close never waits: kept, not copied. */
	fds[1] = fds[2] = fds[3] = fds[4] = -1;
	return 0;
}

/* Whether c is the other end of the connection that o was offered on. */
static bool is_peer(const struct smcrd_shm_offer *o, const struct smcrd_shm_conn *c)
{
	return c->netns == o->conn.netns && c->cookie != o->conn.cookie &&
	       same_addr(&c->local, &o->conn.peer) && same_addr(&c->peer, &o->conn.local);
}

/* Whether c is the very socket that o was offered on. */
static bool is_self(const struct smcrd_shm_offer *o, const struct smcrd_shm_conn *c)
{
	return c->netns == o->conn.netns && c->cookie == o->conn.cookie;
}

/* The offer that match (is_peer, is_self) says belongs to connection c, if any. */
static struct smcrd_shm_offer *find_by_conn(struct smcrd_shm_broker *b, const struct smcrd_shm_conn *c,
					    bool (*match)(const struct smcrd_shm_offer *,
							  const struct smcrd_shm_conn *))
{
	for (size_t i = 0; i < b->n; i++)
		if (match(&b->offers[i], c))
			return &b->offers[i];
	return NULL;
}

int smcrd_shm_attach(struct smcrd_shm_broker *b, uint64_t *token, int sock, int fds[2])
{
	struct smcrd_shm_offer *o = NULL;
	struct smcrd_shm_conn c;
	char why[64];

	if (!read_conn(sock, &c, why, sizeof(why)))
		o = *token ? find(b, *token) : find_by_conn(b, &c, is_peer);
	if (!o || !is_peer(o, &c))
		return -EACCES;
	int rc = dup_fds((const int[]){ o->memfd, o->wake_tx }, 2, fds);    /* only -EMFILE */
	if (rc)
		return rc;
	*token = o->token;
	b->attached += !o->attached;
	o->attached = true;
	return 0;
}

/* asker holds o too (if there is a free place to remember it). */
static void add_holder(struct smcrd_shm_offer *o, uint64_t asker)
{
	uint64_t *free_place = NULL;

	if (o->owner == asker)
		return;
	for (size_t i = 0; i < SMCRD_SHM_HOLDERS; i++) {
		if (o->holders[i] == asker)
			return;
		if (!o->holders[i] && !free_place)
			free_place = &o->holders[i];
	}
	if (free_place)
		*free_place = asker;
}

int smcrd_shm_resume(struct smcrd_shm_broker *b, int sock, uint64_t asker, uint64_t *token,
		     uint64_t *adopted, int fds[SMCRD_SHM_RESUME_FDS], size_t *nfds)
{
	struct smcrd_shm_conn c;
	struct smcrd_shm_offer *own, *peer;
	char why[64];

	if (read_conn(sock, &c, why, sizeof(why)))
		return -ENOENT;
	own = find_by_conn(b, &c, is_self);
	peer = find_by_conn(b, &c, is_peer);
	if (!own || dup_fds((const int[]){ own->statefd, own->memfd, own->wake_rx, own->wake_tx },
			    4, fds))
		return -ENOENT;
	*nfds = 4;
	if (peer && dup_fds((const int[]){ peer->memfd, peer->wake_tx }, 2, fds + 4) == 0)
		*nfds = SMCRD_SHM_RESUME_FDS;
	*token = own->token;
	*adopted = own->owner ? 0 : own->bytes;
	if (!own->owner)
		own->owner = asker;
	add_holder(own, asker);
	return 0;
}

static bool holds(const struct smcrd_shm_offer *o, uint64_t id)
{
	for (size_t i = 0; i < SMCRD_SHM_HOLDERS; i++)
		if (o->holders[i] == id)
			return true;
	return o->owner == id;
}

void smcrd_shm_share(struct smcrd_shm_broker *b, uint64_t parent, uint64_t child)
{
	for (size_t i = 0; i < b->n; i++)
		if (holds(&b->offers[i], parent))
			add_holder(&b->offers[i], child);
}

uint64_t smcrd_shm_withdraw(struct smcrd_shm_broker *b, uint64_t token, uint64_t asker,
			    int sock, uint64_t *owner)
{
	struct smcrd_shm_offer *o = find(b, token);
	struct smcrd_shm_conn c;
	char why[64];

	/* its owner, or a process that holds its socket (see the top), ends an offer */
	if (!o || (o->owner != asker &&
		   (sock < 0 || read_conn(sock, &c, why, sizeof(why)) || !is_self(o, &c))))
		return 0;
	uint64_t bytes = o->bytes;
	*owner = o->owner;
	forget(b, (size_t)(o - b->offers));
	return bytes;
}

/*
 * Whether the kernel still has the TCP socket c with a file (an inode): a
 * process or a message in flight holds it.  Only our namespace can be
 * asked; elsewhere the answer is no.
 */
static bool socket_open_as(const struct smcrd_shm_conn *c, int family)
{
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 req;
	} q = {
		.nlh = { .nlmsg_len = sizeof(q), .nlmsg_type = SOCK_DIAG_BY_FAMILY,
			 .nlmsg_flags = NLM_F_REQUEST },
		.req = { .sdiag_family = (uint8_t)family, .sdiag_protocol = IPPROTO_TCP,
			 .idiag_states = ~0u,
			 .id = { .idiag_sport = htons(c->local.port), .idiag_dport = htons(c->peer.port),
				 .idiag_if = c->local.scope,
				 .idiag_cookie = { (uint32_t)c->cookie, (uint32_t)(c->cookie >> 32) } } },
	};
	union {
		struct nlmsghdr nlh;
		char buf[1024];
	} r;
	int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	bool open_ = false;
	ssize_t n;

	if (family == AF_INET) {
		memcpy(q.req.id.idiag_src, &c->local.addr[12], 4);
		memcpy(q.req.id.idiag_dst, &c->peer.addr[12], 4);
	} else {
		memcpy(q.req.id.idiag_src, c->local.addr, 16);
		memcpy(q.req.id.idiag_dst, c->peer.addr, 16);
	}
	if (nl < 0)
		return false;
	struct timeval tv = { 1, 0 };
	setsockopt(nl, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (send(nl, &q, sizeof(q), 0) == (ssize_t)sizeof(q) &&
	    (n = recv(nl, &r, sizeof(r), 0)) >= (ssize_t)NLMSG_LENGTH(sizeof(struct inet_diag_msg)) &&
	    r.nlh.nlmsg_type == SOCK_DIAG_BY_FAMILY)
		open_ = ((struct inet_diag_msg *)NLMSG_DATA(&r.nlh))->idiag_inode != 0;
	close(nl);
	return open_;
}

static bool socket_open(const struct smcrd_shm_broker *b, const struct smcrd_shm_conn *c)
{
	static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };

	if (!b->netns || c->netns != b->netns)
		return false;
	/* an IPv4 address: an AF_INET socket, or an AF_INET6 one talking IPv4 */
	if (memcmp(c->local.addr, v4mapped, 12) == 0 && socket_open_as(c, AF_INET))
		return true;
	return socket_open_as(c, AF_INET6);
}

/* The kernel has no file for c's socket any more: no process, no message holds it. */
static bool socket_gone(const struct smcrd_shm_broker *b, const struct smcrd_shm_conn *c)
{
	return b->netns && c->netns == b->netns && !socket_open(b, c);
}

/* Ends offer i if its socket is gone: true if it did. */
static bool end_if_gone(struct smcrd_shm_broker *b, size_t i, smcrd_shm_ended_fn *ended,
			void *ctx)
{
	struct smcrd_shm_offer *o = &b->offers[i];

	if (!socket_gone(b, &o->conn))
		return false;
	ended(ctx, o->owner, o->bytes);
	forget(b, i);
	return true;
}

size_t smcrd_shm_sweep(struct smcrd_shm_broker *b, uint64_t held_by,
		       smcrd_shm_ended_fn *ended, void *ctx)
{
	size_t ended_here = 0;

	for (size_t i = b->n; i-- > 0;) {
		if (held_by && !holds(&b->offers[i], held_by))
			continue;
		if (end_if_gone(b, i, ended, ctx))
			ended_here++;
		else if (held_by)
			b->offers[i].suspect = true;
	}
	return ended_here;
}

size_t smcrd_shm_sweep_suspects(struct smcrd_shm_broker *b, smcrd_shm_ended_fn *ended, void *ctx)
{
	size_t left = 0;

	for (size_t i = b->n; i-- > 0;)
		if (b->offers[i].suspect && !end_if_gone(b, i, ended, ctx))
			left++;
	return left;
}

void smcrd_shm_clear_suspects(struct smcrd_shm_broker *b)
{
	for (size_t i = 0; i < b->n; i++)
		b->offers[i].suspect = false;
}

void smcrd_shm_drop_owner(struct smcrd_shm_broker *b, uint64_t owner,
			  void (*moved)(void *ctx, uint64_t to, uint64_t bytes), void *ctx)
{
	for (size_t i = b->n; i-- > 0;) {
		struct smcrd_shm_offer *o = &b->offers[i];
		uint64_t next = 0;

		for (size_t h = 0; h < SMCRD_SHM_HOLDERS; h++) {
			if (o->holders[h] == owner)
				o->holders[h] = 0;
			if (o->holders[h] && !next)
				next = o->holders[h];
		}
		if (o->owner != owner && (o->owner || socket_open(b, &o->conn)))
			continue;
		if (!next) {
			if (o->owner && socket_open(b, &o->conn))
				o->owner = 0;   /* held where we cannot see, or in flight */
			else
				forget(b, i);
			continue;
		}
		for (size_t h = 0; h < SMCRD_SHM_HOLDERS; h++)
			if (o->holders[h] == next)
				o->holders[h] = 0;
		o->owner = next;
		moved(ctx, next, o->bytes);
	}
}
