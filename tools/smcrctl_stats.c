/*
 * smcrctl_stats.c - `smcrctl stats`: the host's statistics as smcrd sums
 * them (entstat smcr0's view): the basic view, -d the detail per transport
 * (with the RDMA links) and per process, -r reset, --json, -i SECONDS
 * [-n COUNT] repeated with the changes since the previous sample, and
 * --prometheus [--output FILE] for node_exporter's textfile collector.  One
 * table of rows (STATS_ROWS) drives every view.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "control_proto.h"
#include "reason.h"
#include "smcrctl.h"
#include "smcrctl_common.h"
#include "smcrctl_prom.h"

#define TOP_REASONS 3                   /* fallback reasons in the text view */

typedef unsigned long long ull;

struct stats_opts {
	bool reset, json, detail, prometheus;
	const char *output;             /* --output: the file --prometheus replaces */
	unsigned int interval;          /* seconds; 0: once */
	unsigned long count;            /* samples with -i; 0: until interrupted */
};

/* Fallback reasons with a count, most frequent first, into order; their number. */
static unsigned int reasons_by_count(const struct smcr_stats_counts *c,
				     enum smcr_reason order[SMCR_REASON_COUNT])
{
	unsigned int n = 0;

	for (unsigned int r = 1; r < SMCR_REASON_COUNT; r++) {
		if (!c->fallbacks[r])
			continue;
		unsigned int i = n++;
		for (; i > 0 && c->fallbacks[order[i - 1]] < c->fallbacks[r]; i--)
			order[i] = order[i - 1];
		order[i] = (enum smcr_reason)r;
	}
	return n;
}

static uint64_t fallbacks_total(const struct smcr_stats_counts *c)
{
	uint64_t sum = 0;

	for (unsigned int r = 1; r < SMCR_REASON_COUNT; r++)
		sum += c->fallbacks[r];
	return sum;
}

/* Every transport's counters summed: the SMC side of the basic view. */
static struct smcr_stats_transport smc_total(const struct smcr_stats_counts *c)
{
	struct smcr_stats_transport sum = { 0 };

	for (unsigned int t = 0; t < SMCR_TRANSPORTS; t++)
		for (size_t w = 0; w < sizeof(sum) / sizeof(uint64_t); w++)
			((uint64_t *)&sum)[w] += ((const uint64_t *)&c->transport[t])[w];
	return sum;
}

/* bytes / calls, rounded; 0 without calls. */
static ull average(uint64_t bytes, uint64_t calls)
{
	return calls ? (bytes + calls / 2) / calls : 0;
}

static const char *rmb_class_name(unsigned int c, char *buf, size_t size)
{
	uint64_t kib = smcr_rmb_class_bytes(c) / 1024;

	if (kib >= 1024)
		snprintf(buf, size, "%lluMiB", (ull)(kib / 1024));
	else
		snprintf(buf, size, "%lluKiB", (ull)kib);
	return buf;
}

/* What a row is, and so how each output shows it. */
enum row_kind {
	COUNT,                          /* a number: "  Label:   N", "key": N */
	MIB_TENTHS,                     /* bytes: "  Label:   1.5 MiB", "key": bytes */
	MIB_WHOLE,                      /* the same, whole MiB in text */
	REASONS,                        /* the fallback reasons: the top ones, all in JSON */
	RMB_HISTOGRAM,                  /* text: our RMBs by size class, all transports */
	TRANSPORTS,                     /* JSON: an object of an object per transport */
	TRANSPORT_TABLE,                /* text: a row per transport */
	PROCESSES,                      /* a row, an object in JSON, per registered process */
};

enum row_level { BASIC, DETAIL };       /* DETAIL: only with -d */

/*
 * The Prometheus metric families (--prometheus): the name, its type and its
 * help text, once each.  The rows of STATS_ROWS say which family they are a
 * sample of, with which labels; a family's rows are next to each other there,
 * as the exposition format wants a family's samples together.
 */
#define PROM_FAMILIES(F)                                                                        \
	F(TCP_CONNS, "smcr_tcp_connections_total", "counter",                                  \
	  "TCP connections libsmcr saw, by role (client: connect, server: accept)")             \
	F(TCP_LISTENS, "smcr_tcp_listens_total", "counter", "listen() calls on TCP sockets")  \
	F(SMC_NEGOTIATED, "smcr_smc_negotiated_total", "counter",                              \
	  "Connections whose TCP handshake negotiated SMC, by role")                            \
	F(CONNS, "smcr_connections_total", "counter",                                          \
	  "SMC connections that went on over a transport, by transport and role")               \
	F(HANDSHAKE_ERRORS, "smcr_handshake_errors_total", "counter",                          \
	  "CLC exchanges that failed half-way (connection reset)")                              \
	F(FALLBACKS, "smcr_fallbacks_total", "counter",                                        \
	  "Connection ends kept on TCP, by fallback reason (name and code)")                    \
	F(OPEN, "smcr_connections_open", "gauge", "Connections open now")                     \
	F(OPEN_PEAK, "smcr_connections_open_peak", "gauge", "Connections open at most at once") \
	F(UNTRACKED, "smcr_untracked_connections_total", "counter",                            \
	  "Connections beyond the processes' connection tables (counted, not listed)")          \
	F(BYTES, "smcr_bytes_total", "counter", "Bytes received (in) and sent (out), by transport") \
	F(IO_CALLS, "smcr_io_calls_total", "counter",                                          \
	  "Receive (in) and send (out) calls that moved data, by transport")                    \
	F(BUFFER_FULL, "smcr_buffer_full_total", "counter",                                    \
	  "RMBs found full: local (ours, our reader was behind), remote (the peer's, a send waited)") \
	F(MEMORY, "smcr_memory_bytes", "gauge", "SMC buffer memory: in use, peak, limit (max_memory)") \
	F(PROCESSES, "smcr_processes", "gauge", "Processes registered with smcrd now")        \
	F(EXITED, "smcr_processes_exited_total", "counter", "Processes using smcr that exited") \
	F(RDMA_LINKS, "smcr_rdma_links", "gauge", "RDMA links up now")                        \
	F(RDMA_LINK_EVENTS, "smcr_rdma_link_events_total", "counter",                          \
	  "RDMA links made, ended, failed, and ended unused (idle)")                            \
	F(RDMA_WCS, "smcr_rdma_work_completions_total", "counter",                             \
	  "RDMA work completions taken, by operation")                                          \
	F(RDMA_CDC_WAITS, "smcr_rdma_cdc_slots_exhausted_total", "counter",                    \
	  "CDC messages that had to wait for a free send-queue slot")                           \
	F(RDMA_CDC_UNKNOWN, "smcr_rdma_cdc_unknown_token_total", "counter",                    \
	  "CDC messages for no connection of their link, dropped")                              \
	F(RDMA_REGISTERED, "smcr_rdma_registered_bytes_total", "counter",                      \
	  "Buffer memory registered with RDMA devices")

enum prom_family {
	PROM_NONE,                      /* a row Prometheus does not show */
#define PROM_FAMILY_ENUM(id, name, type, help) PROM_##id,
	PROM_FAMILIES(PROM_FAMILY_ENUM)
#undef PROM_FAMILY_ENUM
};

/* A row's sample: its family and labels (name, value, ...; NULL after the last). */
struct prom_metric {
	enum prom_family family;
	const char *labels[5];
};

#define PROM(family, ...) (struct prom_metric){ PROM_##family, { __VA_ARGS__ } }
#define NO_PROM (struct prom_metric){ PROM_NONE, { NULL } }

/*
 * Every view of `smcrctl stats`, in the order they list them.  A section is
 * a heading in text and an object in JSON; NULL: none in that view (a
 * section without a JSON key ends the previous object: the rows after it
 * are members of the top one).  A row has a text label ("": shown without
 * one; NULL: not in text), a JSON key (NULL: not in JSON), a kind, a value
 * (an expression on c, st, shm, rdma and smc: see walk_rows()) and its
 * Prometheus sample (NO_PROM: none; sums and averages are left to queries).
 */
#define STATS_ROWS(SECTION, ROW)                                                                \
	SECTION(BASIC, "Connections", "connections")                                          \
	ROW(BASIC, "TCP client connections seen:", "tcp_clients", COUNT, c->tcp_clients,       \
	    PROM(TCP_CONNS, "role", "client"))                                                  \
	ROW(BASIC, "TCP server connections seen:", "tcp_servers", COUNT, c->tcp_servers,       \
	    PROM(TCP_CONNS, "role", "server"))                                                  \
	ROW(BASIC, "TCP listeners:", "tcp_listeners", COUNT, c->tcp_listeners, PROM(TCP_LISTENS)) \
	ROW(BASIC, "SMC negotiated, client:", "smc_clients", COUNT, c->smc_clients,            \
	    PROM(SMC_NEGOTIATED, "role", "client"))                                             \
	ROW(BASIC, "SMC negotiated, server:", "smc_servers", COUNT, c->smc_servers,            \
	    PROM(SMC_NEGOTIATED, "role", "server"))                                             \
	ROW(BASIC, "On shared memory, client:", "shm_clients", COUNT, shm->clients,            \
	    PROM(CONNS, "transport", "shm", "role", "client"))                                  \
	ROW(BASIC, "On shared memory, server:", "shm_servers", COUNT, shm->servers,            \
	    PROM(CONNS, "transport", "shm", "role", "server"))                                  \
	ROW(BASIC, "Over RDMA, client:", NULL, COUNT, rdma->clients,                           \
	    PROM(CONNS, "transport", "rdma", "role", "client"))                                 \
	ROW(BASIC, "Over RDMA, server:", NULL, COUNT, rdma->servers,                           \
	    PROM(CONNS, "transport", "rdma", "role", "server"))                                 \
	ROW(BASIC, "Handshake errors (reset):", "handshake_errors", COUNT, c->handshake_errors, \
	    PROM(HANDSHAKE_ERRORS))                                                             \
	ROW(BASIC, "Fallbacks to TCP:", "fallbacks", COUNT, fallbacks_total(c), NO_PROM)       \
	ROW(BASIC, "", "fallback_reasons", REASONS, 0, PROM(FALLBACKS))                         \
	ROW(BASIC, "Open now:", "open", COUNT, st->connections, PROM(OPEN))                     \
	ROW(BASIC, "Open at most:", "open_peak", COUNT, st->peak_connections, PROM(OPEN_PEAK))  \
	ROW(BASIC, "Beyond the connection tables:", "untracked", COUNT, c->untracked,          \
	    PROM(UNTRACKED))                                                                    \
	SECTION(BASIC, "Data (bytes of the connections libsmcr saw)", "data")                 \
	ROW(BASIC, "Bytes in through TCP:", "tcp_bytes_in", COUNT, c->tcp_bytes_in,            \
	    PROM(BYTES, "transport", "tcp", "direction", "in"))                                 \
	ROW(BASIC, "Bytes out through TCP:", "tcp_bytes_out", COUNT, c->tcp_bytes_out,         \
	    PROM(BYTES, "transport", "tcp", "direction", "out"))                                \
	ROW(BASIC, NULL, "shm_bytes_in", COUNT, shm->bytes_in,                                  \
	    PROM(BYTES, "transport", "shm", "direction", "in"))                                 \
	ROW(BASIC, NULL, "shm_bytes_out", COUNT, shm->bytes_out,                                \
	    PROM(BYTES, "transport", "shm", "direction", "out"))                                \
	ROW(BASIC, NULL, NULL, COUNT, rdma->bytes_in, PROM(BYTES, "transport", "rdma", "direction", "in")) \
	ROW(BASIC, NULL, NULL, COUNT, rdma->bytes_out,                                          \
	    PROM(BYTES, "transport", "rdma", "direction", "out"))                               \
	ROW(BASIC, NULL, "tcp_recvs", COUNT, c->tcp_recvs,                                      \
	    PROM(IO_CALLS, "transport", "tcp", "direction", "in"))                              \
	ROW(BASIC, NULL, "tcp_sends", COUNT, c->tcp_sends,                                      \
	    PROM(IO_CALLS, "transport", "tcp", "direction", "out"))                             \
	ROW(BASIC, NULL, NULL, COUNT, shm->recvs, PROM(IO_CALLS, "transport", "shm", "direction", "in")) \
	ROW(BASIC, NULL, NULL, COUNT, shm->sends, PROM(IO_CALLS, "transport", "shm", "direction", "out")) \
	ROW(BASIC, NULL, NULL, COUNT, rdma->recvs, PROM(IO_CALLS, "transport", "rdma", "direction", "in")) \
	ROW(BASIC, NULL, NULL, COUNT, rdma->sends,                                              \
	    PROM(IO_CALLS, "transport", "rdma", "direction", "out"))                            \
	ROW(BASIC, "Average receive through TCP (B):", "tcp_avg_recv", COUNT,                  \
	    average(c->tcp_bytes_in, c->tcp_recvs), NO_PROM)                                    \
	ROW(BASIC, "Average send through TCP (B):", "tcp_avg_send", COUNT,                     \
	    average(c->tcp_bytes_out, c->tcp_sends), NO_PROM)                                   \
	ROW(BASIC, "Bytes in over SMC:", NULL, COUNT, smc->bytes_in, NO_PROM)                   \
	ROW(BASIC, "Bytes out over SMC:", NULL, COUNT, smc->bytes_out, NO_PROM)                 \
	ROW(BASIC, "Average receive over SMC (B):", "smc_avg_recv", COUNT,                     \
	    average(smc->bytes_in, smc->recvs), NO_PROM)                                        \
	ROW(BASIC, "Average send over SMC (B):", "smc_avg_send", COUNT,                        \
	    average(smc->bytes_out, smc->sends), NO_PROM)                                       \
	ROW(BASIC, "Buffer full, local (our RMB):", "buffer_full_local", COUNT, smc->rmb_full, \
	    PROM(BUFFER_FULL, "side", "local"))                                                 \
	ROW(BASIC, "Buffer full, remote (peer RMB):", "buffer_full_remote", COUNT,             \
	    smc->peer_rmb_full, PROM(BUFFER_FULL, "side", "remote"))                            \
	SECTION(BASIC, "RMB sizes (our receive buffers)", NULL)                               \
	ROW(BASIC, "", NULL, RMB_HISTOGRAM, 0, NO_PROM)                                         \
	ROW(BASIC, NULL, "transports", TRANSPORTS, 0, NO_PROM)                                  \
	SECTION(BASIC, "Memory (SMC buffers)", "memory")                                      \
	ROW(BASIC, "In use:", "in_use", MIB_TENTHS, st->head.bytes, PROM(MEMORY, "kind", "in_use")) \
	ROW(BASIC, "Peak:", "peak", MIB_TENTHS, st->peak_memory, PROM(MEMORY, "kind", "peak"))  \
	ROW(BASIC, "max_memory:", "max_memory", MIB_WHOLE, st->head.limit,                     \
	    PROM(MEMORY, "kind", "limit"))                                                      \
	SECTION(BASIC, "Processes", "processes")                                              \
	ROW(BASIC, "Registered now:", "registered", COUNT, st->processes, PROM(PROCESSES))      \
	ROW(BASIC, "Exited:", "exited", COUNT, st->exited, PROM(EXITED))                        \
	ROW(DETAIL, NULL, "detail", PROCESSES, 0, NO_PROM)                                      \
	SECTION(DETAIL, "Per transport", NULL)                                                \
	ROW(DETAIL, "", NULL, TRANSPORT_TABLE, 0, NO_PROM)                                      \
	SECTION(DETAIL, "RDMA links (a link group of one link each)", NULL)                   \
	ROW(DETAIL, "Up now:", NULL, COUNT, st->rdma_links, PROM(RDMA_LINKS))                   \
	ROW(DETAIL, "Made:", NULL, COUNT, c->rdma.links, PROM(RDMA_LINK_EVENTS, "event", "made")) \
	ROW(DETAIL, "Ended:", NULL, COUNT, c->rdma.links_ended,                                \
	    PROM(RDMA_LINK_EVENTS, "event", "ended"))                                           \
	ROW(DETAIL, "Failed:", NULL, COUNT, c->rdma.links_failed,                              \
	    PROM(RDMA_LINK_EVENTS, "event", "failed"))                                          \
	ROW(DETAIL, "Ended unused (idle):", NULL, COUNT, c->rdma.links_idle,                   \
	    PROM(RDMA_LINK_EVENTS, "event", "idle"))                                            \
	ROW(DETAIL, "Work completions, send:", NULL, COUNT, c->rdma.wc_send,                   \
	    PROM(RDMA_WCS, "op", "send"))                                                       \
	ROW(DETAIL, "Work completions, receive:", NULL, COUNT, c->rdma.wc_recv,                \
	    PROM(RDMA_WCS, "op", "recv"))                                                       \
	ROW(DETAIL, "CDC send slots exhausted:", NULL, COUNT, c->rdma.cdc_slots_exhausted,     \
	    PROM(RDMA_CDC_WAITS))                                                               \
	ROW(DETAIL, "CDCs for unknown tokens:", NULL, COUNT, c->rdma.cdc_unknown_token,        \
	    PROM(RDMA_CDC_UNKNOWN))                                                             \
	ROW(DETAIL, "Buffer memory registered:", NULL, MIB_TENTHS, c->rdma.bytes_registered,   \
	    PROM(RDMA_REGISTERED))                                                              \
	SECTION(DETAIL, "Per process (since each started; self-reported but MEMORY)", NULL)   \
	ROW(DETAIL, "", NULL, PROCESSES, 0, NO_PROM)

/*
 * The per-process figures after its pid and command, for both views (-d):
 * the text column's heading and width, the JSON key, the value (on p).
 */
#define PROCESS_COLUMNS(X)                                      \
	X("OPEN", 6, "open", p->open)                           \
	X("PEAK", 6, "peak", p->peak)                           \
	X("SMC", 6, "smc", p->smc)                              \
	X("FALLBACK", 8, "fallbacks", p->fallbacks)             \
	X("BYTES_IN", 14, "bytes_in", p->bytes_in)              \
	X("BYTES_OUT", 14, "bytes_out", p->bytes_out)           \
	X("MEMORY", 12, "memory", p->granted)

/*
 * The per-transport figures, for both views: the text column's heading and
 * width, and the counter, whose name is its JSON key.  One for every counter
 * of SMCR_STATS_TRANSPORT_COUNTERS.
 */
#define TRANSPORT_COLUMNS(X)                    \
	X("CLIENTS", 8, clients)                \
	X("SERVERS", 8, servers)                \
	X("CLOSED", 8, closed)                  \
	X("BYTES_IN", 14, bytes_in)             \
	X("BYTES_OUT", 14, bytes_out)           \
	X("RECVS", 10, recvs)                   \
	X("SENDS", 10, sends)                   \
	X("FULL_LOC", 10, rmb_full)             \
	X("FULL_REM", 10, peer_rmb_full)        \
	X("LEFT", 6, left)

#define PLUS_ONE(...) +1
_Static_assert(0 TRANSPORT_COLUMNS(PLUS_ONE) == 0 SMCR_STATS_TRANSPORT_COUNTERS(PLUS_ONE),
	       "a column for every transport counter");
#undef PLUS_ONE

/* One sample as a view prints it. */
struct view {
	const struct smcr_control_stats *st;
	const struct smcr_control_status *ps;   /* the process list (-d); NULL: without */
	struct smcr_stats_transport smc;         /* every transport summed */
	bool detail;                             /* DETAIL rows too (-d, --prometheus) */
	bool in_object;                          /* JSON: a section's object is open */
	bool first;                              /* JSON: no ", " before the next member */
	FILE *out;                               /* Prometheus: where it goes (--output) */
	enum prom_family family;                 /* Prometheus: the last one headed */
};

/* How a view shows the sections and the rows of STATS_ROWS. */
struct printer {
	void (*section)(struct view *v, const char *heading, const char *key);
	void (*row)(struct view *v, const char *label, const char *key, enum row_kind kind,
		    uint64_t value, const struct prom_metric *m);
};

/* Hands each section and row of STATS_ROWS to p, in order; DETAIL ones only in detail. */
static void walk_rows(struct view *v, const struct printer *p)
{
	const struct smcr_control_stats *st = v->st;
	const struct smcr_stats_counts *c = &st->counts;
	const struct smcr_stats_transport *shm = &c->transport[SMCR_TRANSPORT_SHM];
	const struct smcr_stats_transport *rdma = &c->transport[SMCR_TRANSPORT_RDMA];
	const struct smcr_stats_transport *smc = &v->smc;

#define WALK_SECTION(level, heading, key)                                       \
	if (level == BASIC || v->detail)                                        \
		p->section(v, heading, key);
#define WALK_ROW(level, label, key, kind, value, prom)                          \
	if (level == BASIC || v->detail)                                        \
		p->row(v, label, key, kind, value, &prom);
	STATS_ROWS(WALK_SECTION, WALK_ROW)
#undef WALK_SECTION
#undef WALK_ROW
}

/* ---- text ---- */

static void text_reasons(const struct smcr_stats_counts *c)
{
	enum smcr_reason order[SMCR_REASON_COUNT];
	unsigned int n = reasons_by_count(c, order);

	for (unsigned int i = 0; i < n && i < TOP_REASONS; i++)
		printf("    %s (0x%08x): %llu\n", smcr_reason_name(order[i]),
		       smcr_reason_code(order[i]), (ull)c->fallbacks[order[i]]);
}

static void text_rmb_histogram(const struct smcr_stats_transport *smc)
{
	char name[16];

	printf(" ");
	for (unsigned int r = 0; r < SMCR_RMB_CLASSES; r++)
		printf(" %8s", rmb_class_name(r, name, sizeof(name)));
	printf("\n ");
	for (unsigned int r = 0; r < SMCR_RMB_CLASSES; r++)
		printf(" %8llu", (ull)smc->rmbs[r]);
	printf("\n");
}

static void text_transport_table(const struct smcr_stats_counts *c)
{
#define TEXT_HEADING(heading, width, field) printf(" %*s", width, heading);
#define TEXT_VALUE(heading, width, field) printf(" %*llu", width, (ull)x->field);
	printf("  %-9s", "TRANSPORT");
	TRANSPORT_COLUMNS(TEXT_HEADING)
	printf("\n");
	for (unsigned int t = 0; t < SMCR_TRANSPORTS; t++) {
		const struct smcr_stats_transport *x = &c->transport[t];
		printf("  %-9s", smcr_transport_name(t));
		TRANSPORT_COLUMNS(TEXT_VALUE)
		printf("\n");
	}
#undef TEXT_HEADING
#undef TEXT_VALUE
}

static void text_processes(const struct smcr_control_status *ps)
{
#define TEXT_HEADING(heading, width, key, value) printf(" %*s", width, heading);
#define TEXT_VALUE(heading, width, key, value) printf(" %*llu", width, (ull)(value));
	printf("  %8s %-16s", "PID", "COMMAND");
	PROCESS_COLUMNS(TEXT_HEADING)
	printf("\n");
	for (uint32_t i = 0; i < ps->nprocs && i < SMCR_CONTROL_STATUS_PROCS; i++) {
		const struct smcr_control_proc *p = &ps->procs[i];
		char name[SMCRCTL_NAME_SIZE];
		printf("  %8d %-16s", p->pid, smcrctl_name(p->comm, name));
		PROCESS_COLUMNS(TEXT_VALUE)
		printf("\n");
	}
#undef TEXT_HEADING
#undef TEXT_VALUE
}

static void text_section(struct view *v, const char *heading, const char *key)
{
	(void)v, (void)key;             /* the text view keeps no state, and has no keys */
	if (heading)
		printf("\n%s:\n", heading);
}

static void text_row(struct view *v, const char *label, const char *key, enum row_kind kind,
		     uint64_t value, const struct prom_metric *m)
{
	const double mib = 1024.0 * 1024.0;

	(void)key, (void)m;
	if (!label)
		return;
	if (kind == COUNT)
		printf("  %-34s%llu\n", label, (ull)value);
	else if (kind == MIB_TENTHS || kind == MIB_WHOLE)
		printf("  %-34s%.*f MiB\n", label, kind == MIB_TENTHS ? 1 : 0, value / mib);
	else if (kind == REASONS)
		text_reasons(&v->st->counts);
	else if (kind == RMB_HISTOGRAM)
		text_rmb_histogram(&v->smc);
	else if (kind == TRANSPORT_TABLE)
		text_transport_table(&v->st->counts);
	else if (kind == PROCESSES)
		text_processes(v->ps);
}

static void print_text(struct view *v, unsigned int interval)
{
	static const struct printer text = { text_section, text_row };
	time_t since = (time_t)v->st->since;
	char when[64];

	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S %z", localtime(&since));
	printf("SMC-R STATISTICS (smcr)\n");
	printf("-----------------------\n");
	if (interval)
		printf("Interval: %u s: counters are the changes since the previous sample\n",
		       interval);
	else
		printf("Elapsed Time: %lld s, since %s\n", (long long)(time(NULL) - since), when);
	walk_rows(v, &text);
}

/* ---- JSON ---- */

/* The next member of the open object: its separator and "key": . */
static void json_key(struct view *v, const char *key)
{
	printf("%s\"%s\": ", v->first ? "" : ", ", key);
	v->first = false;
}

static void json_reasons(const struct smcr_stats_counts *c)
{
	enum smcr_reason order[SMCR_REASON_COUNT];
	unsigned int n = reasons_by_count(c, order);

	printf("[");
	for (unsigned int i = 0; i < n; i++)    /* names are [A-Z_]: nothing to escape */
		printf("%s{\"name\": \"%s\", \"code\": \"0x%08x\", \"count\": %llu}",
		       i ? ", " : "", smcr_reason_name(order[i]), smcr_reason_code(order[i]),
		       (ull)c->fallbacks[order[i]]);
	printf("]");
}

/* "name": {counters} of one transport, in JSON; rdma's with its links. */
static void json_transport(unsigned int t, const struct smcr_control_stats *st)
{
	const struct smcr_stats_transport *x = &st->counts.transport[t];
	const struct smcr_stats_rdma *rdma = &st->counts.rdma;
	char name[16];

#define JSON_FIELD(heading, width, field) printf("\"" #field "\": %llu, ", (ull)x->field);
	printf("\"%s\": {\"available\": true, ", smcr_transport_name(t));
	TRANSPORT_COLUMNS(JSON_FIELD)
#undef JSON_FIELD
	printf("\"avg_recv\": %llu, \"avg_send\": %llu, \"rmbs\": {",
	       average(x->bytes_in, x->recvs), average(x->bytes_out, x->sends));
	for (unsigned int r = 0; r < SMCR_RMB_CLASSES; r++)
		printf("%s\"%s\": %llu", r ? ", " : "", rmb_class_name(r, name, sizeof(name)),
		       (ull)x->rmbs[r]);
	printf("}");
	if (t == SMCR_TRANSPORT_RDMA) {
#define JSON_RDMA(field) printf(", \"" #field "\": %llu", (ull)rdma->field);
		printf(", \"links_up\": %llu", (ull)st->rdma_links);
		SMCR_STATS_RDMA_COUNTERS(JSON_RDMA)
#undef JSON_RDMA
	}
	printf("}");
}

static void json_transports(const struct smcr_control_stats *st)
{
	printf("{");
	for (unsigned int t = 0; t < SMCR_TRANSPORTS; t++) {
		printf("%s", t ? ", " : "");
		json_transport(t, st);
	}
	printf("}");
}

static void json_processes(const struct smcr_control_status *ps)
{
#define JSON_VALUE(heading, width, key, value) printf(", \"" key "\": %llu", (ull)(value));
	printf("[");
	for (uint32_t i = 0; i < ps->nprocs && i < SMCR_CONTROL_STATUS_PROCS; i++) {
		const struct smcr_control_proc *p = &ps->procs[i];
		char comm[SMCRCTL_JSON_COMM_SIZE];
		printf("%s{\"pid\": %d, \"command\": \"%s\"", i ? ", " : "", p->pid,
		       smcrctl_json_comm(p->comm, comm));
		PROCESS_COLUMNS(JSON_VALUE)
		printf("}");
	}
	printf("]");
#undef JSON_VALUE
}

/* Ends the open section's object, and opens key's (if any) in the top one. */
static void json_section(struct view *v, const char *heading, const char *key)
{
	(void)heading;
	if (v->in_object)
		printf("}");
	v->in_object = key != NULL;
	v->first = false;               /* the top object has "since" */
	if (!key)
		return;
	json_key(v, key);
	printf("{");
	v->first = true;
}

static void json_row(struct view *v, const char *label, const char *key, enum row_kind kind,
		     uint64_t value, const struct prom_metric *m)
{
	(void)label, (void)m;
	if (!key)
		return;
	json_key(v, key);
	if (kind == REASONS)
		json_reasons(&v->st->counts);
	else if (kind == TRANSPORTS)
		json_transports(v->st);
	else if (kind == PROCESSES)
		json_processes(v->ps);
	else
		printf("%llu", (ull)value);
}

static void print_json(struct view *v, unsigned int interval)
{
	static const struct printer json = { json_section, json_row };

	printf("{\"since\": %lld, \"interval\": %u", (long long)v->st->since, interval);
	walk_rows(v, &json);
	if (v->in_object)
		printf("}");
	printf("}\n");
}

/* One sample: the statistics, and (-d) the process list; -1 if smcrd does not answer. */
static int sample(bool detail, struct smcr_control_stats *st, struct smcr_control_status *ps)
{
	return smcrctl_ask(SMCR_CONTROL_STATS, 0, st, sizeof(*st)) ||
	       (detail && smcrctl_ask(SMCR_CONTROL_STATUS, 0, ps, sizeof(*ps))) ? -1 : 0;
}

/* ---- Prometheus (text exposition format 0.0.4) ---- */

static const struct {
	const char *name, *type, *help;
} prom_families[] = {
	[PROM_NONE] = { NULL, NULL, NULL },
#define PROM_FAMILY_ENTRY(id, name, type, help) [PROM_##id] = { name, type, help },
	PROM_FAMILIES(PROM_FAMILY_ENTRY)
#undef PROM_FAMILY_ENTRY
};

/* The # HELP and # TYPE lines of f, before its first sample. */
static void prom_head(struct view *v, enum prom_family f)
{
	if (v->family == f)
		return;
	v->family = f;
	smcrctl_prom_head(v->out, prom_families[f].name, prom_families[f].type,
			  prom_families[f].help);
}

static void prom_sample(struct view *v, const char *const labels[], uint64_t value)
{
	smcrctl_prom_sample(v->out, prom_families[v->family].name, labels, value);
}

/* A sample per reason of reason.h, those at zero too: a series does not come and go. */
static void prom_reasons(struct view *v, const struct smcr_stats_counts *c)
{
	char code[16];

	for (unsigned int r = 1; r < SMCR_REASON_COUNT; r++) {
		snprintf(code, sizeof(code), "0x%08x", smcr_reason_code(r));
		prom_sample(v, (const char *[]){ "reason", smcr_reason_name(r), "code", code, NULL },
			    c->fallbacks[r]);
	}
}

static void prom_section(struct view *v, const char *heading, const char *key)
{
	(void)v, (void)heading, (void)key;      /* families, not sections */
}

static void prom_row(struct view *v, const char *label, const char *key, enum row_kind kind,
		     uint64_t value, const struct prom_metric *m)
{
	(void)label, (void)key;
	if (m->family == PROM_NONE)
		return;
	prom_head(v, m->family);
	if (kind == REASONS)
		prom_reasons(v, &v->st->counts);
	else
		prom_sample(v, m->labels, value);
}

static void print_prometheus(struct view *v)
{
	static const struct printer prom = { prom_section, prom_row };

	walk_rows(v, &prom);
}

/*
 * The sample in the exposition format, to stdout or (output) into a file
 * replaced atomically: the textfile collector never reads half of one.
 */
static int prometheus(const char *output)
{
	struct smcr_control_stats st;
	struct smcr_config_error err = { .message = "out of memory" };    /* if fclose fails */
	char *text = NULL;
	size_t len;

	if (sample(false, &st, NULL))
		return smcrctl_no_daemon();
	struct view v = { .st = &st, .smc = smc_total(&st.counts), .detail = true,
			  .out = output ? open_memstream(&text, &len) : stdout };
	if (!v.out) {
		perror("smcrctl: open_memstream");
		return EXIT_FAILURE;
	}
	print_prometheus(&v);
	if (!output)
		return 0;
	int rc = fclose(v.out) ? -1 : smcr_config_write_atomic(output, text, &err);
	free(text);
	if (rc)
		fprintf(stderr, "smcrctl: %s\n", err.message);
	return rc ? EXIT_FAILURE : 0;
}

static int parse(char **args, int nargs, struct stats_opts *o)
{
	char *end;

	for (int i = 0; i < nargs; i++) {
		if (strcmp(args[i], "-r") == 0) {
			o->reset = true;
		} else if (strcmp(args[i], "--json") == 0) {
			o->json = true;
		} else if (strcmp(args[i], "--prometheus") == 0) {
			o->prometheus = true;
		} else if (strcmp(args[i], "--output") == 0 && i + 1 < nargs) {
			o->output = args[++i];
		} else if (strcmp(args[i], "-d") == 0) {
			o->detail = true;
		} else if (strcmp(args[i], "-i") == 0 && i + 1 < nargs) {
			unsigned long v = strtoul(args[++i], &end, 10);
			if (*end || v == 0 || v > 86400)
				return -1;
			o->interval = (unsigned int)v;
		} else if (strcmp(args[i], "-n") == 0 && i + 1 < nargs) {
			o->count = strtoul(args[++i], &end, 10);
			if (*end || o->count == 0)
				return -1;
		} else {
			return -1;
		}
	}
	if (o->prometheus)      /* one sample of every host-wide figure, as it is */
		return o->json || o->detail || o->reset || o->interval || o->count ? -1 : 0;
	return (o->count && !o->interval) || o->output ? -1 : 0;
}

static int reset(void)
{
	struct smcr_control_msg m;

	fflush(stdout);
	if (smcrctl_ask(SMCR_CONTROL_STATS_RESET, 0, &m, sizeof(m))) {
		fprintf(stderr, "smcrctl: smcrd did not answer the reset\n");
		return EXIT_FAILURE;
	}
	if (m.result) {
		fprintf(stderr, "smcrctl: reset refused: %s\n",
			m.text[0] ? m.text : strerror(-m.result));
		return EXIT_INVALID;
	}
	return 0;
}

int smcrctl_stats(const struct smcrctl_args *a)
{
	static struct smcr_control_status ps;
	struct smcr_control_stats st, prev;
	struct stats_opts o = { 0 };
	int rc = 0;

	if (parse(a->argv, a->argc, &o)) {
		return EXIT_SHOW_USAGE;
	}
	if (o.prometheus)
		return prometheus(o.output);
	if (o.reset && geteuid() != 0) {
		fprintf(stderr, "smcrctl: only root may reset the statistics (-r)\n");
		return EXIT_INVALID;
	}
	for (unsigned long i = 0; !o.count || i < o.count; i++) {
		if (i)
			sleep(o.interval);
		if (sample(o.detail, &st, &ps))
			return smcrctl_no_daemon();
		struct smcr_control_stats shown = st;
		if (i)          /* -i: the counters' changes; gauges (rdma_links...) as they are */
			smcr_stats_sub_counts(&shown.counts, &prev.counts);
		struct view v = { .st = &shown, .ps = o.detail ? &ps : NULL, .detail = o.detail,
				  .smc = smc_total(&shown.counts) };
		(o.json ? print_json : print_text)(&v, i ? o.interval : 0);
		fflush(stdout);
		prev = st;
		if (i == 0 && o.reset && (rc = reset()) != 0)
			return rc;
		if (i == 0 && o.reset)  /* later deltas are against zero */
			memset(&prev.counts, 0, sizeof(prev.counts));
		if (!o.interval)
			break;
	}
	return rc;
}
