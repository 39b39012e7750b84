/*
 * conn_table.h - this process's connection records (conn_record.h), kept in
 * its statistics region (stats.h) so that smcrd can list them: claimed when
 * a connection is made, updated as it changes, freed (its traffic added to
 * the process's counters) when its last descriptor closes.
 *
 * A record is named by its id, slot + 1 (0: none), never by a pointer:
 * the region moves when the process registers again, and each access finds
 * the record in the live region with one load.  The descriptor table holds
 * one reference per descriptor naming the connection (fdtable.h: dup adds
 * one), like the SMC socket's.
 *
 * Cost on the data path: plain TCP, two relaxed atomic adds per call
 * (bytes, calls); SMC, a dozen relaxed stores under the connection's lock
 * (smcr_conn_table_moved).  Setting a record up costs getsockname() and
 * getpeername(), once per connection.
 */
#ifndef SMCR_CONN_TABLE_H
#define SMCR_CONN_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fdtable.h"
#include "reason.h"
#include "stats.h"

struct smc_conn;

/*
 * A connection made on fd (active: by connect()), in mode SMCR_CONN_CLC
 * (SMC negotiated) or SMCR_CONN_TCP (reason says why not): its record's
 * id, with one reference; 0 if the table is full (counted as untracked).
 */
uint32_t smcr_conn_table_open(int fd, bool active, enum smcr_conn_mode mode,
			      enum smcr_reason reason);

/* Another descriptor names the connection (dup). */
void smcr_conn_table_hold(uint32_t id);

/* A descriptor naming it closed; after the last, its traffic joins the counters. */
void smcr_conn_table_drop(uint32_t id);

/* The CLC exchange ended on TCP (SMCR_CONN_TCP) or in a reset (SMCR_CONN_RESET). */
void smcr_conn_table_fell_back(uint32_t id, enum smcr_conn_mode mode, enum smcr_reason reason,
			       uint32_t peer_reason);

/* conn, under its lock, went on over its transport with our RMB of rmb_class. */
void smcr_conn_table_smc_opened(struct smc_conn *conn, bool active, unsigned int rmb_class);

/* conn, under its lock, is on its transport already: another process opened it (counted there). */
void smcr_conn_table_smc_taken(struct smc_conn *conn, unsigned int rmb_class);

/*
 * Under conn->lock, at the end of a receive or send call that moved in or
 * out bytes (0: none): counted, and the connection's cursors, close state
 * and traffic published in its record.
 */
void smcr_conn_table_moved(struct smc_conn *conn, size_t in, size_t out);

/*
 * conn went on over TCP (conn/smc_leave.h): counted left and closed, for
 * reason (ours: why we left, or PEERLEFT) and peer_reason (the code the
 * peer gave, or 0), both in its record.  What it moved so far goes into
 * its transport's counters; from here its record is a TCP connection's,
 * which counts what goes over the kernel's socket.
 */
void smcr_conn_table_smc_left(struct smc_conn *conn, enum smcr_reason reason, uint32_t peer_reason);

/* conn is over: counted closed (and its traffic, if it had no record). */
void smcr_conn_table_smc_closed(struct smc_conn *conn);

/* n bytes received (in) or sent over TCP in one call, counted for no connection's record. */
static inline void smcr_conn_table_tcp_unrecorded(bool in, size_t n)
{
	if (in) {
		smcr_stat_add(tcp_bytes_in, n);
		smcr_stat_add(tcp_recvs, 1);
	} else {
		smcr_stat_add(tcp_bytes_out, n);
		smcr_stat_add(tcp_sends, 1);
	}
}

/* n bytes received (in) or sent through the TCP socket fd, in one call. */
static inline void smcr_conn_table_tcp(int fd, bool in, size_t n)
{
	struct smcr_fd_slot *slot = smcr_fd_slot_peek(fd);
	uint32_t id = slot ? atomic_load_explicit(&slot->conn, memory_order_relaxed) : 0;

	if (id && id <= SMCR_CONN_SLOTS) {
		struct smcr_conn_record *r = &smcr_stats_now()->conns.slot[id - 1];
		atomic_fetch_add_explicit(in ? &r->bytes_in : &r->bytes_out, n,
					  memory_order_relaxed);
		atomic_fetch_add_explicit(in ? &r->recvs : &r->sends, 1, memory_order_relaxed);
	} else {                /* a socket with no record: straight into the counters */
		smcr_conn_table_tcp_unrecorded(in, n);
	}
}

/* Forked child: what the inherited records carried was the parent's. */
void smcr_conn_table_forked(struct smcr_conn_table *t);

#endif
