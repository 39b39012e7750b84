/*
 * conn_table.c - this process's connection records (conn_table.h).
 *
 * Slots are claimed lock-free, lowest free first (so that readers, which
 * stop at high, read little), by a compare-and-swap on mode; the claimant
 * fills the record in and then publishes its mode with a release store.
 * Freeing stores FREE first and adds the record's traffic to the counters
 * after: a reader racing a close may miss that connection's traffic for a
 * moment, never count it twice.
 */
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "conn_table.h"
#include "real.h"
#include "smc_transport.h"

_Static_assert(SMCR_CONN_CLOSE_DONE_WRITING == SMC_CDC_PEER_DONE_WRITING &&
	       SMCR_CONN_CLOSE_CLOSED == SMC_CDC_PEER_CONN_CLOSED &&
	       SMCR_CONN_CLOSE_ABORT == SMC_CDC_PEER_CONN_ABORT,
	       "a record's close state holds the CDC's flags as they are");

#define RELAXED memory_order_relaxed

static struct smcr_conn_record *record(uint32_t id)
{
	return id && id <= SMCR_CONN_SLOTS ? &smcr_stats_now()->conns.slot[id - 1] : NULL;
}

static void endpoint(struct smcr_conn_endpoint *e, const struct sockaddr_storage *ss)
{
	memset(e, 0, sizeof(*e));
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)ss;
		e->family = AF_INET;
		e->port = ntohs(in->sin_port);
		memcpy(e->addr, &in->sin_addr, 4);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)ss;
		e->family = AF_INET6;
		e->port = ntohs(in6->sin6_port);
		memcpy(e->addr, &in6->sin6_addr, 16);
	}
}

static void addresses(struct smcr_conn_record *r, int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int saved_errno = errno;

	memset(&ss, 0, sizeof(ss));
	REAL(getsockname)(fd, (struct sockaddr *)&ss, &len);
	endpoint(&r->local, &ss);
	memset(&ss, 0, sizeof(ss));
	len = sizeof(ss);
	REAL(getpeername)(fd, (struct sockaddr *)&ss, &len);
	endpoint(&r->peer, &ss);
	errno = saved_errno;
}

static void clear_traffic(struct smcr_conn_record *r)
{
	atomic_store_explicit(&r->bytes_in, 0, RELAXED);
	atomic_store_explicit(&r->bytes_out, 0, RELAXED);
	atomic_store_explicit(&r->recvs, 0, RELAXED);
	atomic_store_explicit(&r->sends, 0, RELAXED);
	atomic_store_explicit(&r->rmb_full, 0, RELAXED);
	atomic_store_explicit(&r->peer_rmb_full, 0, RELAXED);
}

/* A free slot of t, claimed; NULL if there is none. */
static struct smcr_conn_record *claim(struct smcr_conn_table *t, uint32_t *id)
{
	for (uint32_t i = 0; i < SMCR_CONN_SLOTS; i++) {
		struct smcr_conn_record *r = &t->slot[i];
		uint32_t expected = SMCR_CONN_FREE;

		if (atomic_load_explicit(&r->mode, RELAXED) != SMCR_CONN_FREE ||
		    !atomic_compare_exchange_strong_explicit(&r->mode, &expected,
							     SMCR_CONN_CLAIMED, memory_order_acquire,
							     RELAXED))
			continue;
		uint32_t high = atomic_load_explicit(&t->high, RELAXED);
		while (high <= i && !atomic_compare_exchange_weak_explicit(&t->high, &high, i + 1,
									  RELAXED, RELAXED))
			;
		uint32_t open = atomic_fetch_add_explicit(&t->in_use, 1, RELAXED) + 1;
		uint32_t peak = atomic_load_explicit(&t->peak, RELAXED);
		while (peak < open && !atomic_compare_exchange_weak_explicit(&t->peak, &peak, open,
									    RELAXED, RELAXED))
			;
		*id = i + 1;
		return r;
	}
	return NULL;
}

uint32_t smcr_conn_table_open(int fd, bool active, enum smcr_conn_mode mode,
			      enum smcr_reason reason)
{
	struct smcr_conn_table *t = &smcr_stats_now()->conns;
	uint32_t id;
	struct smcr_conn_record *r = claim(t, &id);

	if (!r) {
		smcr_stat_add(untracked, 1);
		return 0;
	}
	atomic_store_explicit(&r->refs, 1, RELAXED);
	atomic_store_explicit(&r->flags, active ? SMCR_CONN_ACTIVE : 0, RELAXED);
	atomic_store_explicit(&r->fd, fd, RELAXED);
	atomic_store_explicit(&r->reason, reason, RELAXED);
	atomic_store_explicit(&r->peer_reason, 0, RELAXED);
	atomic_store_explicit(&r->transport, 0, RELAXED);
	atomic_store_explicit(&r->rmb_class, 0, RELAXED);
	atomic_store_explicit(&r->peer_rmb_size, 0, RELAXED);
	atomic_store_explicit(&r->close_flags, 0, RELAXED);
	for (unsigned int c = 0; c < SMCR_CONN_CURSORS; c++)
		atomic_store_explicit(&r->cursor[c], 0, RELAXED);
	clear_traffic(r);
	addresses(r, fd);
	atomic_store_explicit(&r->mode, mode, memory_order_release);
	return id;
}

void smcr_conn_table_hold(uint32_t id)
{
	struct smcr_conn_record *r = record(id);

	if (r)
		atomic_fetch_add_explicit(&r->refs, 1, RELAXED);
}

/* A finished connection's traffic, into the counters of its mode (as stats_sum.c). */
static void fold(uint32_t mode, uint32_t t, const struct smc_traffic *tr)
{
	if (mode == SMCR_CONN_TCP) {
		smcr_stat_add(tcp_bytes_in, tr->bytes_in);
		smcr_stat_add(tcp_bytes_out, tr->bytes_out);
		smcr_stat_add(tcp_recvs, tr->recvs);
		smcr_stat_add(tcp_sends, tr->sends);
	} else if (mode == SMCR_CONN_SMC && t < SMCR_TRANSPORTS) {
		smcr_stat_add(transport[t].bytes_in, tr->bytes_in);
		smcr_stat_add(transport[t].bytes_out, tr->bytes_out);
		smcr_stat_add(transport[t].recvs, tr->recvs);
		smcr_stat_add(transport[t].sends, tr->sends);
		smcr_stat_add(transport[t].rmb_full, tr->rmb_full);
		smcr_stat_add(transport[t].peer_rmb_full, tr->peer_rmb_full);
	}
}

void smcr_conn_table_drop(uint32_t id)
{
	struct smcr_conn_record *r = record(id);

	if (!r || atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) != 1)
		return;
	uint32_t mode = atomic_load_explicit(&r->mode, RELAXED);
	uint32_t t = atomic_load_explicit(&r->transport, RELAXED);
	const struct smc_traffic tr = {
		.bytes_in = atomic_load_explicit(&r->bytes_in, RELAXED),
		.bytes_out = atomic_load_explicit(&r->bytes_out, RELAXED),
		.recvs = atomic_load_explicit(&r->recvs, RELAXED),
		.sends = atomic_load_explicit(&r->sends, RELAXED),
		.rmb_full = atomic_load_explicit(&r->rmb_full, RELAXED),
		.peer_rmb_full = atomic_load_explicit(&r->peer_rmb_full, RELAXED),
	};

	atomic_store_explicit(&r->mode, SMCR_CONN_FREE, memory_order_release);
	atomic_fetch_sub_explicit(&smcr_stats_now()->conns.in_use, 1, RELAXED);
	fold(mode, t, &tr);
}

void smcr_conn_table_fell_back(uint32_t id, enum smcr_conn_mode mode, enum smcr_reason reason,
			       uint32_t peer_reason)
{
	struct smcr_conn_record *r = record(id);

	if (!r)
		return;
	atomic_store_explicit(&r->reason, reason, RELAXED);
	atomic_store_explicit(&r->peer_reason, peer_reason, RELAXED);
	atomic_store_explicit(&r->mode, mode, memory_order_release);
}

static uint64_t packed(struct smc_cursor c)
{
	return smcr_conn_cursor_pack(c.wrap, c.count);
}

/* Under conn->lock: its cursors, close state and traffic, into its record. */
static void publish(const struct smc_conn *conn)
{
	struct smcr_conn_record *r = record(conn->record);
	const struct smc_traffic *tr = &conn->traffic;

	/* one that left SMC counts its TCP bytes itself (smcr_conn_table_smc_left) */
	if (!r || atomic_load_explicit(&r->mode, RELAXED) == SMCR_CONN_TCP)
		return;
	atomic_store_explicit(&r->cursor[SMCR_CURSOR_RX_PROD], packed(conn->st->rx_prod), RELAXED);
	atomic_store_explicit(&r->cursor[SMCR_CURSOR_RX_CONS], packed(conn->st->rx_cons), RELAXED);
	atomic_store_explicit(&r->cursor[SMCR_CURSOR_TX_PREP], packed(conn->st->tx_prep), RELAXED);
	atomic_store_explicit(&r->cursor[SMCR_CURSOR_TX_SENT], packed(conn->st->tx_sent), RELAXED);
	atomic_store_explicit(&r->cursor[SMCR_CURSOR_TX_FIN], packed(conn->st->tx_fin), RELAXED);
	atomic_store_explicit(&r->close_flags,
			      conn->st->local_state | (uint32_t)conn->st->peer_state << SMCR_CONN_CLOSE_PEER_SHIFT |
			      (conn->st->err ? SMCR_CONN_CLOSE_ERROR : 0), RELAXED);
	atomic_store_explicit(&r->bytes_in, tr->bytes_in, RELAXED);
	atomic_store_explicit(&r->bytes_out, tr->bytes_out, RELAXED);
	atomic_store_explicit(&r->recvs, tr->recvs, RELAXED);
	atomic_store_explicit(&r->sends, tr->sends, RELAXED);
	atomic_store_explicit(&r->rmb_full, tr->rmb_full, RELAXED);
	atomic_store_explicit(&r->peer_rmb_full, tr->peer_rmb_full, RELAXED);
}

void smcr_conn_table_smc_opened(struct smc_conn *conn, bool active, unsigned int rmb_class)
{
	const unsigned int t = conn->ops->id;

	if (active)
		smcr_stat_add(transport[t].clients, 1);
	else
		smcr_stat_add(transport[t].servers, 1);
	if (rmb_class < SMCR_RMB_CLASSES)
		smcr_stat_add(transport[t].rmbs[rmb_class], 1);
	smcr_conn_table_smc_taken(conn, rmb_class);
}

void smcr_conn_table_smc_taken(struct smc_conn *conn, unsigned int rmb_class)
{
	const unsigned int t = conn->ops->id;
	struct smcr_conn_record *r = record(conn->record);

	if (!r)
		return;
	atomic_store_explicit(&r->transport, t, RELAXED);
	atomic_store_explicit(&r->rmb_class, rmb_class, RELAXED);
	atomic_store_explicit(&r->peer_rmb_size, conn->peer_rmb_size, RELAXED);
	publish(conn);
	atomic_store_explicit(&r->mode, SMCR_CONN_SMC, memory_order_release);
}

void smcr_conn_table_moved(struct smc_conn *conn, size_t in, size_t out)
{
	conn->traffic.bytes_in += in;
	conn->traffic.recvs += in > 0;
	conn->traffic.bytes_out += out;
	conn->traffic.sends += out > 0;
	publish(conn);
}

void smcr_conn_table_smc_left(struct smc_conn *conn, enum smcr_reason reason, uint32_t peer_reason)
{
	const unsigned int t = conn->ops->id;
	struct smcr_conn_record *r = record(conn->record);

	smcr_stat_add(transport[t].left, 1);
	smcr_stat_add(transport[t].closed, 1);
	fold(SMCR_CONN_SMC, t, &conn->traffic);
	conn->traffic = (struct smc_traffic){ 0 };
	if (r) {
		publish(conn);  /* the cursors where it left */
		atomic_store_explicit(&r->reason, reason, RELAXED);
		atomic_store_explicit(&r->peer_reason, peer_reason, RELAXED);
		atomic_store_explicit(&r->mode, SMCR_CONN_TCP, memory_order_release);
	}
}

void smcr_conn_table_smc_closed(struct smc_conn *conn)
{
	const unsigned int t = conn->ops->id;

	smcr_stat_add(transport[t].closed, 1);
	if (!conn->record)      /* else its record carries the traffic into the counters */
		fold(SMCR_CONN_SMC, t, &conn->traffic);
}

void smcr_conn_table_forked(struct smcr_conn_table *t)
{
	uint32_t high = atomic_load_explicit(&t->high, RELAXED);

	/* the child counts its own traffic from here; the parent keeps what was */
	for (uint32_t i = 0; i < high && i < SMCR_CONN_SLOTS; i++)
		clear_traffic(&t->slot[i]);
	atomic_store_explicit(&t->peak, atomic_load_explicit(&t->in_use, RELAXED), RELAXED);
}
