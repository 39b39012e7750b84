/*
 * smc_rdma_cm.c - finding and establishing links through librdmacm
 * (smc_rdma_link.h; docs/PROTOCOL.md, section 9, has the whole exchange).
 *
 * The side that needs a link and has none (the CLC server, before its
 * Accept) resolves the peer's address and instance port on an event
 * channel of its own and connects; both sides put a hello in the private
 * data of connect and accept: magic, their instance, their QP number
 * (iWARP carries no QP number of its own).  Once established the id moves
 * to the poller's event channel, where the listener ids live too, and
 * whose events (a peer's connect request, a disconnect) this file handles.
 * A link that is up stays in the table until it fails or has been idle
 * for smc_rdma.idle_ms (smc_rdma_link.c).
 *
 * A process listens on an address when its first connection there needs
 * the local block, or, as a client, before its first handshake with
 * another host (smc_rdma_prepare_client): loading the libraries and
 * opening the device took a new process seconds in a loaded guest, and
 * the Proposal that waited for them came after the server gave up on it.
 * Threads that connect meanwhile wait for that first one.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "real.h"
#include "smc_rdma_priv.h"
#include "sys.h"

#define HELLO_MAGIC	0x534d4352u	/* "SMCR" */
#define LISTEN_BACKLOG	128

/* In rdma_connect's and rdma_accept's private data, big-endian. */
struct hello {
	uint32_t magic;
	uint32_t qpn;
	uint16_t instance;
	uint16_t flags;
} __attribute__((packed));

/*
 * The sender's QP answers a zero-length RDMA READ (one responder resource
 * each way): on iWARP, its response is the proof that the WRITEs before
 * it arrived (smc_rdma_link.h).  A peer without it sends 0.
 */
#define HELLO_READS 1u
/* What a link asks of rdma_cm, so that each side may have one READ in flight. */
#define LINK_READS_IN_FLIGHT 1

static socklen_t addr_len(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

/* sa with port (host order) into *out. */
static void addr_with_port(const struct sockaddr *sa, uint16_t port, struct sockaddr_storage *out)
{
	memset(out, 0, sizeof(*out));
	memcpy(out, sa, addr_len(sa));
	if (sa->sa_family == AF_INET6)
		((struct sockaddr_in6 *)out)->sin6_port = htons(port);
	else
		((struct sockaddr_in *)out)->sin_port = htons(port);
}

static bool same_ip(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			       &((const struct sockaddr_in6 *)b)->sin6_addr, 16);
	return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
	       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
}

/* The MAC of the interface holding the local address sa (zeros if none). */
static void mac_of(const struct sockaddr *sa, uint8_t mac[6])
{
	struct ifaddrs *all, *a, *p;

	memset(mac, 0, 6);
	if (getifaddrs(&all))
		return;
	for (a = all; a; a = a->ifa_next) {
		if (!a->ifa_addr || !same_ip(a->ifa_addr, sa))
			continue;
		for (p = all; p; p = p->ifa_next) {
			const struct sockaddr_ll *ll = (const void *)p->ifa_addr;

			if (ll && ll->sll_family == AF_PACKET && !strcmp(p->ifa_name, a->ifa_name) &&
			    ll->sll_halen == 6)
				memcpy(mac, ll->sll_addr, 6);
		}
		break;
	}
	freeifaddrs(all);
}

static int accept_link(struct rdma_cm_event *e)
{
	const struct hello *h = e->param.conn.private_data;
	struct hello reply;
	struct rdma_conn_param param = { .rnr_retry_count = 7, .private_data = &reply,
					  .private_data_len = sizeof(reply) };
	struct smc_rdma_link *link;
	struct listener *l = e->listen_id->context;
	bool reads;
	int rc;

	if (!h || e->param.conn.private_data_len < sizeof(*h) || ntohl(h->magic) != HELLO_MAGIC)
		return -EPROTO;
	reads = ntohs(h->flags) & HELLO_READS;
	if (reads)
		param.responder_resources = param.initiator_depth = LINK_READS_IN_FLIGHT;
	rc = smc_rdma_link_new(e->id, &link);
	if (rc)
		return rc;
	addr_with_port(rdma_get_peer_addr(e->id), 0, &link->peer);
	link->peer_instance = ntohs(h->instance);
	link->info.peer_qpn = ntohl(h->qpn);
	link->reads = reads;
	reply = (struct hello){ .magic = htonl(HELLO_MAGIC), .qpn = htonl(link->info.qpn),
				.instance = htons(l->local.instance),
				.flags = htons(reads ? HELLO_READS : 0) };
	if (IBV(rdma_accept)(e->id, &param)) {
		rc = -errno;
		e->id->context = NULL;
		smc_rdma_link_free(link, false);
		return rc;
	}
	pthread_mutex_lock(&smc_rdma.lock);
	link->refs = 1;
	link->next = smc_rdma.links;
	smc_rdma.links = link;
	pthread_mutex_unlock(&smc_rdma.lock);
	smcr_stat_add(rdma.links, 1);
	return 0;
}

/* The poller's: connect requests, links established, disconnected or failed, devices gone. */
static void on_cm_events(struct rdma_dev *unused)
{
	struct rdma_cm_event *e;

	(void)unused;
	while (IBV(rdma_get_cm_event)(smc_rdma.cm, &e) == 0) {
		enum kind *ctx = e->id->context;
		struct rdma_cm_id *refused = NULL;
		int rc;

		smcr_log(SMCR_LOG_DEBUG, "rdma: %s (status %d)", IBV(rdma_event_str)(e->event), e->status);

		switch (e->event) {
		case RDMA_CM_EVENT_CONNECT_REQUEST:
			if ((rc = accept_link(e)) != 0) {
				smcr_log(SMCR_LOG_INFO, "rdma: refusing a link request: %s", strerror(-rc));
				IBV(rdma_reject)(e->id, NULL, 0);
				refused = e->id;
			}
			break;
		case RDMA_CM_EVENT_ESTABLISHED:
			if (ctx && *ctx == K_LINK) {
				pthread_mutex_lock(&smc_rdma.lock);
				if (atomic_load(&((struct smc_rdma_link *)ctx)->state) == LINK_CONNECTING)
					smc_rdma_link_up((struct smc_rdma_link *)ctx);
				pthread_mutex_unlock(&smc_rdma.lock);
			}
			break;
		case RDMA_CM_EVENT_DEVICE_REMOVAL: {
			struct rdma_dev *gone = NULL;

			pthread_mutex_lock(&smc_rdma.lock);
			for (struct rdma_dev *d = smc_rdma.devs; d; d = d->next)
				if (d->cm_verbs == e->id->verbs || d->verbs == e->id->verbs)
					gone = d;
			pthread_mutex_unlock(&smc_rdma.lock);
			if (gone)
				smc_rdma_dev_fail_links(gone, "device removed");
			break;
		}
		case RDMA_CM_EVENT_DISCONNECTED:	/* idle at the peer, or it went */
			if (ctx && *ctx == K_LINK)
				smc_rdma_link_disconnected((struct smc_rdma_link *)ctx);
			break;
		default:	/* rejected, unreachable, errors */
			if (ctx && *ctx == K_LINK)
				smc_rdma_link_fail((struct smc_rdma_link *)ctx, IBV(rdma_event_str)(e->event));
			break;
		}
		IBV(rdma_ack_cm_event)(e);
		if (refused)
			IBV(rdma_destroy_id)(refused);
	}
}

/*
 * l's rdma_cm id, bound to l->addr (port 0: the kernel picks one) and
 * listening: 0 or a negative errno (-ENODEV: no RDMA device serves the
 * address).  On iWARP the port is a real TCP port too, which rdma_cm picks
 * without looking at TCP's: listen fails with EADDRINUSE when a TCP socket
 * has it, and another port is tried.
 */
static int listen_id(struct listener *l)
{
	struct sockaddr_storage any = l->addr;
	const char *why;

	for (int tries = 0; tries < 5; tries++) {
		if (IBV(rdma_create_id)(smc_rdma.cm, &l->id, l, RDMA_PS_TCP)) {
			smcr_log(SMCR_LOG_INFO, "rdma: no rdma_cm id: %s", strerror(errno));
			return -ENODEV;
		}
		if ((why = "bind", !IBV(rdma_bind_addr)(l->id, (struct sockaddr *)&any)) &&
		    (why = "no device", errno = ENODEV, l->id->verbs) &&
		    (why = "device", (l->local.dev = smc_rdma_dev_get(l->id->verbs))) &&
		    (why = "listen", !IBV(rdma_listen)(l->id, LISTEN_BACKLOG)))
			return 0;
		smcr_log(SMCR_LOG_INFO, "rdma: no listener on the connection's address: %s: %s", why,
			 strerror(errno));
		IBV(rdma_destroy_id)(l->id);
		if (errno != EADDRINUSE)
			break;
	}
	return -ENODEV;
}

static const struct smc_rdma_poller_ops poller_ops = {
	.ready = {
		[P_CM] = on_cm_events,
		[P_REAP] = smc_rdma_on_reap,
		[P_ASYNC] = smc_rdma_on_async_events,
		[P_CQ] = smc_rdma_on_cq_events,
	},
	.idle = smc_rdma_on_idle,
	.rearm = smc_rdma_on_rearm,
	.reap_later = smc_rdma_link_reap_later,
};

int smc_rdma_listen(const struct sockaddr *local, struct smc_rdma_local *out)
{
	struct listener *l;
	int rc = 0;

	rc = smc_rdma_start(&poller_ops);
	if (rc)
		return rc;
	pthread_mutex_lock(&smc_rdma.lock);
	for (l = smc_rdma.listeners; l && !same_ip((struct sockaddr *)&l->addr, local); l = l->next)
		;
	if (l)
		goto found;
	l = calloc(1, sizeof(*l));
	if (!l) {
		rc = -ENOMEM;
		goto out;
	}
	l->kind = K_LISTENER;
	addr_with_port(local, 0, &l->addr);
	rc = listen_id(l);
	if (rc) {
		free(l);
		goto out;
	}
	l->local.instance = ntohs(IBV(rdma_get_src_port)(l->id));
	l->local.lcl.peer_id[0] = (uint8_t)(l->local.instance >> 8);
	l->local.lcl.peer_id[1] = (uint8_t)l->local.instance;
	mac_of(local, l->local.lcl.mac);
	memcpy(l->local.lcl.peer_id + 2, l->local.lcl.mac, 6);
	memcpy(l->local.lcl.gid, &l->id->route.addr.addr.ibaddr.sgid, 16);
	l->next = smc_rdma.listeners;
	smc_rdma.listeners = l;
found:
	*out = l->local;
out:
	pthread_mutex_unlock(&smc_rdma.lock);
	return rc;
}

/* Whether sa is a loopback address, plain or IPv4-mapped: never served by RDMA. */
static bool loopback(const struct sockaddr *sa)
{
	const struct in6_addr *a6 = &((const struct sockaddr_in6 *)sa)->sin6_addr;

	if (sa->sa_family == AF_INET)
		return ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24 == 127;
	return IN6_IS_ADDR_LOOPBACK(a6) || (IN6_IS_ADDR_V4MAPPED(a6) && a6->s6_addr[12] == 127);
}

static bool unspecified(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_addr.s_addr == htonl(INADDR_ANY);
	return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)sa)->sin6_addr);
}

/*
 * The address sock will connect to peer from: its own if bound to one,
 * else the route's (a UDP socket connected to peer says it, and sends
 * nothing).  0 or a negative errno.
 */
static int source_for(int sock, const struct sockaddr *peer, socklen_t len,
		      struct sockaddr_storage *local)
{
	socklen_t local_len = sizeof(*local);
	int udp, rc = 0;

	if (REAL(getsockname)(sock, (struct sockaddr *)local, &local_len) == 0 &&
	    local->ss_family == peer->sa_family && !unspecified((struct sockaddr *)local))
		return 0;
	udp = REAL(socket)(peer->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (udp < 0)
		return -errno;
	local_len = sizeof(*local);
	if (REAL(connect)(udp, peer, len) ||
	    REAL(getsockname)(udp, (struct sockaddr *)local, &local_len))
		rc = -errno;
	REAL(close)(udp);
	return rc;
}

/*
 * Another thread is making RDMA ready: until it has, for SMC_CLC_WAIT_MS
 * at most.  Our Proposal needs the same, right after our handshake, and
 * would otherwise wait for it there, past the server's bound.
 */
static void await_prepared(void)
{
	uint64_t end = smc_deadline_after(SMC_CLC_WAIT_MS);

	while (!atomic_load(&smc_rdma.client_ready) && smc_clock_ns() < end)
		usleep(1000);
}

void smc_rdma_prepare_client(int sock, const struct sockaddr *peer, socklen_t len, bool remote)
{
	struct sockaddr_storage local;
	struct smc_rdma_local me;
	int saved_errno = errno;

	if ((peer->sa_family != AF_INET || len < sizeof(struct sockaddr_in)) &&
	    (peer->sa_family != AF_INET6 || len < sizeof(struct sockaddr_in6)))
		return;
	/* a peer not served (on this host, if remote) does not count as the first time */
	if (loopback(peer) || atomic_load(&smc_rdma.client_ready) ||
	    source_for(sock, peer, len, &local) != 0 ||
	    (remote && same_ip((struct sockaddr *)&local, peer))) {
		errno = saved_errno;
		return;
	}
	if (atomic_exchange(&smc_rdma.client_prepared, true)) {
		await_prepared();
	} else {
		if (smc_rdma_listen((struct sockaddr *)&local, &me) == 0)
			smcr_log(SMCR_LOG_DEBUG, "rdma: ready for a Proposal, before the first handshake");
		atomic_store(&smc_rdma.client_ready, true);
	}
	errno = saved_errno;
}

/* The next rdma_cm event on ch, which must be want, within timeout_ms; copies its hello. */
static int expect_event(struct rdma_event_channel *ch, enum rdma_cm_event_type want,
			int timeout_ms, struct hello *h)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *e;
	int rc;

	/* a signal to the application (a fork server's SIGCHLD) does not end the wait */
	rc = smcr_sys_poll_until(&p, 1, smc_deadline_after(timeout_ms));
	if (rc <= 0)
		return rc ? -errno : -ETIMEDOUT;
	if (IBV(rdma_get_cm_event)(ch, &e))
		return -errno;
	/* a rejection's status is the peer's reason code (the transport's own), not an errno */
	rc = e->event == want ? 0 : e->status && e->event != RDMA_CM_EVENT_REJECTED ?
		-abs(e->status) : -ECONNREFUSED;
	if (!rc && h) {
		if (e->param.conn.private_data_len >= sizeof(*h) && e->param.conn.private_data)
			memcpy(h, e->param.conn.private_data, sizeof(*h));
		if (ntohl(h->magic) != HELLO_MAGIC)
			rc = -EPROTO;
	}
	if (rc)
		smcr_log(SMCR_LOG_INFO, "rdma: connecting a link: %s (status %d) instead of %s",
			 IBV(rdma_event_str)(e->event), e->status, IBV(rdma_event_str)(want));
	IBV(rdma_ack_cm_event)(e);
	return rc;
}

/* Connects a new link from local to the process listening at peer:instance. */
static int link_connect(const struct sockaddr *local, const struct sockaddr *peer,
			uint16_t instance, int timeout_ms, struct smc_rdma_link **out)
{
	struct smc_rdma_local me;
	struct sockaddr_storage src, dst;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id = NULL;
	struct smc_rdma_link *link = NULL;
	struct hello hello, peer_hello = { 0 };
	struct rdma_conn_param param = { .retry_count = 7, .rnr_retry_count = 7,
					  .responder_resources = LINK_READS_IN_FLIGHT,
					  .initiator_depth = LINK_READS_IN_FLIGHT,
					  .private_data = &hello, .private_data_len = sizeof(hello) };
	int rc = smc_rdma_listen(local, &me);

	if (rc)
		return rc;
	addr_with_port(local, 0, &src);
	addr_with_port(peer, instance, &dst);
	ch = IBV(rdma_create_event_channel)();
	if (!ch)
		return -ENODEV;
	if (IBV(rdma_create_id)(ch, &id, NULL, RDMA_PS_TCP)) {
		rc = -errno;
		id = NULL;
		goto out;
	}
	if ((rc = IBV(rdma_resolve_addr)(id, (struct sockaddr *)&src, (struct sockaddr *)&dst,
					 timeout_ms) ? -errno : 0) ||
	    (rc = expect_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED, timeout_ms, NULL)) ||
	    (rc = IBV(rdma_resolve_route)(id, timeout_ms) ? -errno : 0) ||
	    (rc = expect_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, timeout_ms, NULL)) ||
	    (rc = smc_rdma_link_new(id, &link)))
		goto out;
	hello = (struct hello){ .magic = htonl(HELLO_MAGIC), .qpn = htonl(link->info.qpn),
				.instance = htons(me.instance), .flags = htons(HELLO_READS) };
	if ((rc = IBV(rdma_connect)(id, &param) ? -errno : 0) ||
	    (rc = expect_event(ch, RDMA_CM_EVENT_ESTABLISHED, timeout_ms, &peer_hello)) ||
	    (rc = IBV(rdma_migrate_id)(id, smc_rdma.cm) ? -errno : 0))
		goto out;
	link->peer_instance = instance;
	link->info.peer_qpn = ntohl(peer_hello.qpn);
	link->reads = ntohs(peer_hello.flags) & HELLO_READS;
	addr_with_port(peer, 0, &link->peer);
	pthread_mutex_lock(&smc_rdma.lock);
	smc_rdma_link_up(link);
	link->refs = 2;		/* the table's and the caller's */
	link->next = smc_rdma.links;
	smc_rdma.links = link;
	pthread_mutex_unlock(&smc_rdma.lock);
	smcr_stat_add(rdma.links, 1);
	/*
	 * iWARP (MPA, RFC 5044) lets the accepting side send only after our
	 * first message: a zero-length RDMA WRITE, which needs no rkey and
	 * reaches no connection, opens the stream.
	 */
	rc = smc_rdma_post(link, &(struct smc_rdma_write){ 0 }, 1, NULL, 0);
	if (rc) {
		smc_rdma_link_put(link);
		goto out_linked;
	}
	*out = link;
out_linked:
	link = NULL;
	id = NULL;
out:
	if (link)
		smc_rdma_link_free(link, true);
	else if (id)
		IBV(rdma_destroy_id)(id);
	IBV(rdma_destroy_event_channel)(ch);
	return rc;
}

/* timeout_ms from now, for pthread_cond_timedwait on smc_rdma.changed (CLOCK_REALTIME). */
static struct timespec deadline_in(int timeout_ms)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	t.tv_sec += timeout_ms / 1000;
	t.tv_nsec += timeout_ms % 1000 * 1000000L;
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	return t;
}

/* Under smc_rdma.lock: an up link to (peer, instance), with a reference taken. */
static struct smc_rdma_link *up_link(const struct sockaddr *peer, uint16_t instance)
{
	struct smc_rdma_link *link;

	for (link = smc_rdma.links; link; link = link->next)
		if (atomic_load(&link->state) == LINK_UP && link->peer_instance == instance &&
		    same_ip((struct sockaddr *)&link->peer, peer)) {
			link->refs++;
			break;
		}
	return link;
}

/* Under smc_rdma.lock: whether a thread of ours is connecting a link to (peer, instance). */
static bool connecting(const struct sockaddr *peer, uint16_t instance)
{
	for (struct rdma_connecting *c = smc_rdma.connecting; c; c = c->next)
		if (c->instance == instance && same_ip((struct sockaddr *)&c->peer, peer))
			return true;
	return false;
}

/*
 * One link per pair of processes: connections that want a link to the
 * same process at the same time wait for the first one's (a multi-threaded
 * server's accepts from one client).
 */
int smc_rdma_link_get(const struct sockaddr *local, const struct sockaddr *peer,
		      const struct smc_clc_local *peer_lcl, int timeout_ms,
		      struct smc_rdma_link **out, bool *fresh)
{
	uint16_t instance = smc_rdma_instance_of(peer_lcl);
	struct rdma_connecting self = { .instance = instance }, **pp;
	struct timespec deadline = deadline_in(timeout_ms);
	int rc;

	pthread_mutex_lock(&smc_rdma.lock);
	*fresh = false;
	while (!(*out = up_link(peer, instance)) && connecting(peer, instance) &&
	       pthread_cond_timedwait(&smc_rdma.changed, &smc_rdma.lock, &deadline) != ETIMEDOUT)
		;
	if (*out) {
		pthread_mutex_unlock(&smc_rdma.lock);
		return 0;
	}
	addr_with_port(peer, 0, &self.peer);
	self.next = smc_rdma.connecting;
	smc_rdma.connecting = &self;
	pthread_mutex_unlock(&smc_rdma.lock);
	*fresh = true;
	/* iWARP: the source port rdma_cm picks may be a TCP socket's, as in listen_id */
	for (int tries = 0; tries < 5; tries++)
		if ((rc = link_connect(local, peer, instance, timeout_ms, out)) != -EADDRINUSE)
			break;
	pthread_mutex_lock(&smc_rdma.lock);
	for (pp = &smc_rdma.connecting; *pp != &self; pp = &(*pp)->next)
		;
	*pp = self.next;
	pthread_cond_broadcast(&smc_rdma.changed);      /* the waiters look again */
	pthread_mutex_unlock(&smc_rdma.lock);
	return rc;
}

/* Under smc_rdma.lock: whether link is the one from peer that name names. */
static bool named(const struct smc_rdma_link *link, const struct sockaddr *peer,
		  const struct smc_rdma_link_name *name)
{
	return atomic_load(&link->state) == LINK_UP && link->info.peer_qpn == name->peer_qpn &&
	       link->peer_instance == name->peer_instance &&
	       same_ip((const struct sockaddr *)&link->peer, peer) &&
	       !(name->first_contact && link->named_first);
}

int smc_rdma_link_find(const struct sockaddr *peer, const struct smc_rdma_link_name *name,
		       int timeout_ms, struct smc_rdma_link **out)
{
	struct timespec deadline = deadline_in(timeout_ms);
	struct smc_rdma_link *link;
	int rc = -ENOLINK;

	pthread_mutex_lock(&smc_rdma.lock);
	for (;;) {
		for (link = smc_rdma.links; link && !named(link, peer, name); link = link->next)
			;
		if (link) {
			link->named_first |= name->first_contact;
			link->refs++;
			*out = link;
			rc = 0;
			break;
		}
		/*
		 * The peer saw it established first: our poller is just behind,
		 * maybe not even done accepting it.
		 */
		if (pthread_cond_timedwait(&smc_rdma.changed, &smc_rdma.lock, &deadline) == ETIMEDOUT)
			break;
	}
	pthread_mutex_unlock(&smc_rdma.lock);
	return rc;
}
