/*
 * conn_record.h - one connection as the outside sees it: the record a
 * process publishes for each of its TCP connections in its shared
 * statistics region (stats_region.h), smcrd reads and `smcrctl conns` prints, like
 * smcss -W.  This file owns that layout and the pure functions that name
 * and format its fields; conn_table.c fills the records in.
 *
 * Who writes what.  The owning process claims a free slot when a
 * connection is made (a compare-and-swap on mode), fills in its addresses,
 * then publishes the mode with a release store; it frees the slot when the
 * connection's last descriptor closes.  The traffic fields are written by
 * the thread that moves the bytes: under the connection's own lock (SMC:
 * plain relaxed stores of values the send and receive paths keep anyway)
 * or, for plain TCP, relaxed atomic adds.  Nothing here takes a lock or
 * makes a system call.  Readers (smcrd) take the fields one by one with
 * relaxed loads: a record may change, or be reused, while it is read, and
 * every value is only shown or added up, indexes checked first.
 */
#ifndef SMCR_CONN_RECORD_H
#define SMCR_CONN_RECORD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/*
 * The transports an SMC connection can go on over: X(ID, name), the one
 * list of them.  libsmcr finds a transport's ops as smc_<name>_ops
 * (libsmcr/transports/registry.c); the statistics count per transport.
 */
#define SMCR_TRANSPORT_LIST(X) \
	X(SHM, shm)            \
	X(RDMA, rdma)

#define SMCR_TRANSPORT_ENUM(id, name) SMCR_TRANSPORT_##id,
enum smcr_transport_id {
	SMCR_TRANSPORT_LIST(SMCR_TRANSPORT_ENUM)
	SMCR_TRANSPORTS
};

/* "shm", "rdma"; "?" for anything else. */
const char *smcr_transport_name(unsigned int id);

/* RMB sizes are 16 KiB << class (smc_transport.h): classes 0 (16 KiB) to 6 (1 MiB). */
#define SMCR_RMB_CLASSES 7

/* Bytes of an RMB of size class c; 0 for a class there is not (a record may hold any value). */
static inline uint64_t smcr_rmb_class_bytes(unsigned int c)
{
	return c < SMCR_RMB_CLASSES ? (uint64_t)16384 << c : 0;
}

/* A shared-memory buffer's memfd: this control page, then the RMB (libsmcr's shm transport). */
#define SMCR_SHM_CTL_BYTES 4096u

enum smcr_conn_mode {
	SMCR_CONN_FREE,         /* slot unused */
	SMCR_CONN_CLAIMED,      /* being filled in: not yet shown */
	SMCR_CONN_TCP,          /* plain TCP: reason says why */
	SMCR_CONN_CLC,          /* SMC negotiated, the CLC exchange is running */
	SMCR_CONN_SMC,          /* bytes go over the SMC connection (transport) */
	SMCR_CONN_RESET,        /* the CLC exchange failed half-way: connection reset */
};

/* A cursor as wrap << 32 | count (RFC 7609 wrap:count). */
static inline uint64_t smcr_conn_cursor_pack(uint16_t wrap, uint32_t count)
{
	return (uint64_t)wrap << 32 | count;
}

/* The cursors of an SMC connection, in its record's cursor[]: smcss -W's columns. */
enum smcr_conn_cursor {
	SMCR_CURSOR_RX_PROD,    /* the peer's producer cursor in our RMB */
	SMCR_CURSOR_RX_CONS,    /* how far we have read our RMB */
	SMCR_CURSOR_TX_PREP,    /* written into the peer's RMB */
	SMCR_CURSOR_TX_SENT,    /* announced to the peer */
	SMCR_CURSOR_TX_FIN,     /* released by the peer's reader */
	SMCR_CONN_CURSORS
};

/* One end of a TCP connection: address family, port (host order), address. */
struct smcr_conn_endpoint {
	uint16_t family;                /* AF_INET, AF_INET6; 0: unknown */
	uint16_t port;
	uint8_t addr[16];               /* IPv4: the first 4 bytes */
};

/* record.flags */
#define SMCR_CONN_ACTIVE 1u     /* we connected (a client) */

struct smcr_conn_record {
	_Atomic uint32_t mode;          /* enum smcr_conn_mode */
	_Atomic uint32_t refs;          /* descriptors of the process naming it */
	_Atomic uint32_t flags;         /* SMCR_CONN_* */
	_Atomic int32_t fd;             /* the descriptor it was made with */
	_Atomic uint32_t reason;        /* enum smcr_reason: why not SMC (TCP, RESET) */
	_Atomic uint32_t peer_reason;   /* the peer's Decline code, 0: none */
	_Atomic uint32_t transport;     /* enum smcr_transport_id (SMC) */
	_Atomic uint32_t rmb_class;     /* our RMB's size class (SMC) */
	_Atomic uint32_t peer_rmb_size; /* bytes (SMC) */
	_Atomic uint32_t close_flags;   /* SMC: ours | the peer's << 8 (SMCR_CONN_CLOSE_*), 1 << 16: error */
	struct smcr_conn_endpoint local, peer;
	_Atomic uint64_t cursor[SMCR_CONN_CURSORS];
	_Atomic uint64_t bytes_in, bytes_out;
	_Atomic uint64_t recvs, sends;  /* calls that moved data */
	_Atomic uint64_t rmb_full, peer_rmb_full;
};

/* record.close_flags: each side's close state, the bits of the CDC's flags (smc_cdc.h) */
#define SMCR_CONN_CLOSE_DONE_WRITING 0x80u
#define SMCR_CONN_CLOSE_CLOSED 0x40u
#define SMCR_CONN_CLOSE_ABORT 0x20u
#define SMCR_CONN_CLOSE_PEER_SHIFT 8
#define SMCR_CONN_CLOSE_ERROR (1u << 16)

/*
 * The connections a process may list at once; more are counted
 * (stats_region.h: untracked) but not listed.  Pages of the table are only
 * touched as slots are used.
 */
#define SMCR_CONN_SLOTS 4096

struct smcr_conn_table {
	_Atomic uint32_t in_use;        /* slots claimed now: the process's open connections */
	_Atomic uint32_t peak;          /* the most at once */
	_Atomic uint32_t high;          /* slots [0, high) have been claimed: where readers stop */
	struct smcr_conn_record slot[SMCR_CONN_SLOTS];
};

/* A record as read at one moment: plain values, for smcrd's replies and smcrctl. */
struct smcr_conn_view {
	uint32_t mode, flags, reason, peer_reason, transport, rmb_class, peer_rmb_size, close_flags;
	int32_t fd;
	struct smcr_conn_endpoint local, peer;
	uint64_t cursor[SMCR_CONN_CURSORS];
	uint64_t bytes_in, bytes_out, recvs, sends, rmb_full, peer_rmb_full;
};

/*
 * The buffer memory an SMC connection's end that v shows holds in its
 * process, as smcrd charges it: the memfd it offered (SMCR_SHM_CTL_BYTES and
 * its RMB), and over RDMA the staging buffer beside its RMB, granted as
 * large as the peer's RMB (at most 1 MiB here).  0 for a connection not on
 * SMC, or a record that makes no sense (any process may write its own).
 */
uint64_t smcr_conn_buffer_bytes(const struct smcr_conn_view *v);

/* Reads r (maybe another process's, changing) into v: false if it is no connection now. */
bool smcr_conn_record_read(const struct smcr_conn_record *r, struct smcr_conn_view *v);

/*
 * The state smcss would show: "CLC" (exchange running), "ACTIVE",
 * "PEERCLOSED" (the peer is done writing), "APPCLOSED" (we are),
 * "CLOSED" (both), "ABORTED" (error or abort), "RESET" (CLC failed), and
 * for plain TCP "OPEN" (we know no more of a TCP connection).
 */
const char *smcr_conn_state_name(uint32_t mode, uint32_t close_flags);

/* "SMC-R", "shm", "TCP", "CLC", "RESET"...: the mode column (without the reason). */
const char *smcr_conn_mode_name(uint32_t mode, uint32_t transport);

/* "wrap:count" as smcss prints it: %04x:%08x; buf of at least 14 bytes. */
char *smcr_conn_cursor_str(uint64_t packed, char *buf, unsigned long size);

/* "addr:port" ("[addr]:port" for IPv6), or "?" for an unknown endpoint. */
char *smcr_conn_endpoint_str(const struct smcr_conn_endpoint *e, char *buf,
			     unsigned long size);

#endif
