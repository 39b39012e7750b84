/*
 * stats_region.h - the layout of a process's statistics region: the
 * counters libsmcr keeps (X-macro lists, the single source of their names)
 * and its connection table, in a memfd that the process shares with smcrd.
 * Shared by libsmcr (which writes it, libsmcr/services/stats.h), smcrd
 * (which sums it) and smcrctl (which shows the sums).  Data only: another
 * process maps it, so every value read from it is checked before use.
 */
#ifndef SMCR_STATS_REGION_H
#define SMCR_STATS_REGION_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include "conn_record.h"
#include "reason.h"

/* Bumped whenever struct smcr_stats changes: smcrd refuses other layouts. */
#define SMCR_STATS_LAYOUT 9

/* The scalar counters, each only ever growing; transport[], fallbacks[] and rdma follow. */
#define SMCR_STATS_COUNTERS(X)                                                      \
	X(tcp_listeners)    /* listen() on a TCP socket */                          \
	X(tcp_clients)      /* connect() started on a TCP socket */                 \
	X(tcp_servers)      /* accept() returned a TCP socket */                    \
	X(tcp_bytes_in)     /* received through TCP sockets */                      \
	X(tcp_bytes_out)    /* sent through TCP sockets */                          \
	X(tcp_recvs)        /* receive calls on TCP sockets that returned data */   \
	X(tcp_sends)        /* send calls on TCP sockets that sent data */          \
	X(smc_clients)      /* connect()s whose handshake negotiated SMC */         \
	X(smc_servers)      /* accept()s whose handshake negotiated SMC */           \
	X(handshake_errors) /* CLC exchanges that failed half-way: connection reset */ \
	X(untracked)        /* connections beyond the connection table (conn_table.h) */

/* Per transport (shm, rdma): connections that went on over it, and their traffic. */
#define SMCR_STATS_TRANSPORT_COUNTERS(X)                                            \
	X(clients)          /* client connections */                                \
	X(servers)          /* server connections */                                \
	X(closed)                                                                   \
	X(bytes_in)                                                                 \
	X(bytes_out)                                                                \
	X(recvs)            /* receive calls that returned data */                  \
	X(sends)            /* send calls that sent data */                         \
	X(rmb_full)         /* our RMB filled up: our reader was behind */          \
	X(peer_rmb_full)    /* the peer's RMB was full: a send had to wait (write_blocked) */ \
	X(left)             /* went on over TCP mid-stream, either end leaving (LEAVE) */

/*
 * The RDMA transport's links (smc_rdma_link.h), counted where they change.
 * A link is a whole link group here: one RC queue pair between two
 * processes.  Gauges are differences: links up now = links - links_ended,
 * buffers in use = buffers_out - buffers_back, connections on links =
 * conns_bound - conns_unbound.  smcrd counts the links of a process that
 * exited as ended.
 */
#define SMCR_STATS_RDMA_COUNTERS(X)                                                 \
	X(links)            /* links made: connected, or accepted from a peer */    \
	X(links_ended)      /* links freed: failed, idle or their process exited */ \
	X(links_failed)     /* links that failed: error, peer gone, device gone */  \
	X(links_idle)       /* links ended unused: idle here, or disconnected by the \
			       peer (idle there, or its process gone) */            \
	X(wc_send)          /* send completions taken (signalled WRITEs, SENDs) */  \
	X(wc_recv)          /* receive completions taken: CDCs received */           \
	X(cdc_slots_exhausted) /* a post had to wait for a send-queue slot */       \
	X(cdc_unknown_token) /* CDCs for no connection of the link, dropped */     \
	X(bytes_registered) /* buffer memory registered, at each connection's binding */ \
	X(buffers_out)      /* RMBs and staging buffers handed to connections */    \
	X(buffers_back)     /* ... and returned to the pool */                      \
	X(conns_bound)      /* connections bound to a link */                        \
	X(conns_unbound)

#define SMCR_STATS_PLAIN(name) uint64_t name;

struct smcr_stats_rdma {
	SMCR_STATS_RDMA_COUNTERS(SMCR_STATS_PLAIN)
};

struct smcr_stats_transport {
	SMCR_STATS_TRANSPORT_COUNTERS(SMCR_STATS_PLAIN)
	uint64_t rmbs[SMCR_RMB_CLASSES];        /* our RMBs, by size class (conn_record.h) */
};

/* The counters as plain numbers: sums, snapshots, the wire; also the layout of the words. */
struct smcr_stats_counts {
	SMCR_STATS_COUNTERS(SMCR_STATS_PLAIN)
	struct smcr_stats_transport transport[SMCR_TRANSPORTS];
	uint64_t fallbacks[SMCR_REASON_COUNT];  /* connections kept on TCP, by reason */
	struct smcr_stats_rdma rdma;
};

#define SMCR_STATS_WORDS (sizeof(struct smcr_stats_counts) / sizeof(uint64_t))
_Static_assert(sizeof(struct smcr_stats_counts) % sizeof(uint64_t) == 0,
	       "counters are whole words");

/* The counters as words, in the order of struct smcr_stats_counts. */
static inline uint64_t *smcr_stats_words(struct smcr_stats_counts *c)
{
	return (uint64_t *)c;
}

static inline const uint64_t *smcr_stats_cwords(const struct smcr_stats_counts *c)
{
	return (const uint64_t *)c;
}

/* The word of counter field (for example transport[SMCR_TRANSPORT_SHM].clients, rdma.links). */
#define SMCR_STAT_WORD(field) (offsetof(struct smcr_stats_counts, field) / sizeof(uint64_t))

struct smcr_stats {
	uint32_t layout;                /* SMCR_STATS_LAYOUT (shared regions) */
	uint32_t size;                  /* sizeof(struct smcr_stats) (shared regions) */
	_Atomic uint64_t word[SMCR_STATS_WORDS];
	struct smcr_conn_table conns;   /* this process's connections (conn_table.h) */
};

/*
 * Adds what s holds now to *sum (s may be another process's region,
 * read-only): its counters and its open connections' traffic.
 */
void smcr_stats_accumulate(struct smcr_stats_counts *sum, const struct smcr_stats *s);

/*
 * *w += v, stopping at the top: values from other processes' regions are
 * anything they wrote, and one that wrapped a sum round would hide the
 * traffic of every other process.
 */
static inline void smcr_stats_add_word(uint64_t *w, uint64_t v)
{
	*w = *w > UINT64_MAX - v ? UINT64_MAX : *w + v;
}

/* sum += more, word by word. */
static inline void smcr_stats_add_counts(struct smcr_stats_counts *sum,
					 const struct smcr_stats_counts *more)
{
	for (size_t i = 0; i < SMCR_STATS_WORDS; i++)
		smcr_stats_add_word(&smcr_stats_words(sum)[i], smcr_stats_cwords(more)[i]);
}

/* a -= b word by word, never below zero (values from other processes need not agree). */
static inline void smcr_stats_sub_counts(struct smcr_stats_counts *a,
					 const struct smcr_stats_counts *b)
{
	for (size_t i = 0; i < SMCR_STATS_WORDS; i++) {
		uint64_t *w = &smcr_stats_words(a)[i];
		*w = *w > smcr_stats_cwords(b)[i] ? *w - smcr_stats_cwords(b)[i] : 0;
	}
}

/* The size of a shared region, as made and as mapped: whole pages. */
static inline size_t smcr_stats_region_size(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return (sizeof(struct smcr_stats) + page - 1) / page * page;
}

#endif
