/*
 * smcrctl_stats.c - `smcrctl stats`: the host's statistics as smcrd sums
 * them (entstat smcr0's view): the basic view, -d the detail per transport
 * (with the RDMA links) and per process, -r reset, --json, -i SECONDS
 * [-n COUNT] repeated with the changes since the previous sample.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "control_proto.h"
#include "reason.h"
#include "smcrctl.h"
#include "smcrctl_common.h"

#define TOP_REASONS 3                   /* fallback reasons in the text view */

typedef unsigned long long ull;

struct stats_opts {
	bool reset, json, detail;
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

static void print_row(const char *label, ull value)
{
	printf("  %-34s%llu\n", label, value);
}

static void print_text(const struct smcr_control_stats *st, const struct smcr_control_status *ps,
		       unsigned int interval)
{
	const struct smcr_stats_counts *c = &st->counts;
	const struct smcr_stats_transport smc = smc_total(c);
	enum smcr_reason order[SMCR_REASON_COUNT];
	unsigned int n = reasons_by_count(c, order);
	time_t since = (time_t)st->since;
	char when[64], name[16];
	const double mib = 1024.0 * 1024.0;

	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S %z", localtime(&since));
	printf("SMC-R STATISTICS (smcr)\n");
	printf("-----------------------\n");
	if (interval)
		printf("Interval: %u s: counters are the changes since the previous sample\n",
		       interval);
	else
		printf("Elapsed Time: %lld s, since %s\n", (long long)(time(NULL) - since), when);
	printf("\nConnections:\n");
	print_row("TCP client connections seen:", c->tcp_clients);
	print_row("TCP server connections seen:", c->tcp_servers);
	print_row("TCP listeners:", c->tcp_listeners);
	print_row("SMC negotiated, client:", c->smc_clients);
	print_row("SMC negotiated, server:", c->smc_servers);
	print_row("On shared memory, client:", c->transport[SMCR_TRANSPORT_SHM].clients);
	print_row("On shared memory, server:", c->transport[SMCR_TRANSPORT_SHM].servers);
	print_row("Over RDMA, client:", c->transport[SMCR_TRANSPORT_RDMA].clients);
	print_row("Over RDMA, server:", c->transport[SMCR_TRANSPORT_RDMA].servers);
	print_row("Handshake errors (reset):", c->handshake_errors);
	print_row("Fallbacks to TCP:", fallbacks_total(c));
	for (unsigned int i = 0; i < n && i < TOP_REASONS; i++)
		printf("    %s (0x%08x): %llu\n", smcr_reason_name(order[i]),
		       smcr_reason_code(order[i]), (ull)c->fallbacks[order[i]]);
	print_row("Open now:", st->connections);
	print_row("Open at most:", st->peak_connections);
	print_row("Beyond the connection tables:", c->untracked);
	printf("\nData (bytes of the connections libsmcr saw):\n");
	print_row("Bytes in through TCP:", c->tcp_bytes_in);
	print_row("Bytes out through TCP:", c->tcp_bytes_out);
	print_row("Average receive through TCP (B):", average(c->tcp_bytes_in, c->tcp_recvs));
	print_row("Average send through TCP (B):", average(c->tcp_bytes_out, c->tcp_sends));
	print_row("Bytes in over SMC:", smc.bytes_in);
	print_row("Bytes out over SMC:", smc.bytes_out);
	print_row("Average receive over SMC (B):", average(smc.bytes_in, smc.recvs));
	print_row("Average send over SMC (B):", average(smc.bytes_out, smc.sends));
	print_row("Buffer full, local (our RMB):", smc.rmb_full);
	print_row("Buffer full, remote (peer RMB):", smc.peer_rmb_full);
	printf("\nRMB sizes (our receive buffers):\n ");
	for (unsigned int r = 0; r < SMCR_RMB_CLASSES; r++)
		printf(" %8s", rmb_class_name(r, name, sizeof(name)));
	printf("\n ");
	for (unsigned int r = 0; r < SMCR_RMB_CLASSES; r++)
		printf(" %8llu", (ull)smc.rmbs[r]);
	printf("\n\nMemory (SMC buffers):\n");
	printf("  %-34s%.1f MiB\n", "In use:", st->head.bytes / mib);
	printf("  %-34s%.1f MiB\n", "Peak:", st->peak_memory / mib);
	printf("  %-34s%.0f MiB\n", "max_memory:", st->head.limit / mib);
	printf("\nProcesses:\n");
	print_row("Registered now:", st->processes);
	print_row("Exited:", st->exited);
	if (!ps)
		return;
	printf("\nPer transport:\n");
	printf("  %-9s %8s %8s %8s %14s %14s %10s %10s %10s %10s\n", "TRANSPORT", "CLIENTS",
	       "SERVERS", "CLOSED", "BYTES_IN", "BYTES_OUT", "RECVS", "SENDS", "FULL_LOC",
	       "FULL_REM");
	for (unsigned int t = 0; t < SMCR_TRANSPORTS; t++) {
		const struct smcr_stats_transport *x = &c->transport[t];
		printf("  %-9s %8llu %8llu %8llu %14llu %14llu %10llu %10llu %10llu %10llu\n",
		       smcr_transport_name(t), (ull)x->clients, (ull)x->servers, (ull)x->closed,
		       (ull)x->bytes_in, (ull)x->bytes_out, (ull)x->recvs, (ull)x->sends,
		       (ull)x->rmb_full, (ull)x->peer_rmb_full);
	}
	printf("\nRDMA links (a link group of one link each):\n");
	print_row("Up now:", st->rdma_links);
	print_row("Made:", c->rdma.links);
	print_row("Ended:", c->rdma.links_ended);
	print_row("Failed:", c->rdma.links_failed);
	print_row("Ended unused (idle):", c->rdma.links_idle);
	print_row("Work completions, send:", c->rdma.wc_send);
	print_row("Work completions, receive:", c->rdma.wc_recv);
	print_row("CDC send slots exhausted:", c->rdma.cdc_slots_exhausted);
	print_row("CDCs for unknown tokens:", c->rdma.cdc_unknown_token);
	printf("  %-34s%.1f MiB\n", "Buffer memory registered:", c->rdma.bytes_registered / mib);
	printf("\nPer process (since each started):\n");
	printf("  %8s %-16s %6s %6s %6s %8s %14s %14s %12s\n", "PID", "COMMAND", "OPEN", "PEAK",
	       "SMC", "FALLBACK", "BYTES_IN", "BYTES_OUT", "MEMORY");
	for (uint32_t i = 0; i < ps->nprocs && i < SMCR_CONTROL_STATUS_PROCS; i++) {
		const struct smcr_control_proc *p = &ps->procs[i];
		printf("  %8d %-16.16s %6u %6u %6llu %8llu %14llu %14llu %12llu\n", p->pid, p->comm,
		       p->open, p->peak, (ull)p->smc, (ull)p->fallbacks, (ull)p->bytes_in,
		       (ull)p->bytes_out, (ull)p->granted);
	}
}

/* "name": {counters} of one transport, in JSON; rdma's with its links. */
static void json_transport(unsigned int t, const struct smcr_control_stats *st)
{
	const struct smcr_stats_transport *x = &st->counts.transport[t];
	const struct smcr_stats_rdma *rdma = &st->counts.rdma;
	char name[16];

#define JSON_FIELD(field) printf("\"" #field "\": %llu, ", (ull)x->field);
	printf("\"%s\": {\"available\": true, ", smcr_transport_name(t));
	SMCR_STATS_TRANSPORT_COUNTERS(JSON_FIELD)
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

static void print_json(const struct smcr_control_stats *st, const struct smcr_control_status *ps,
		       unsigned int interval)
{
	const struct smcr_stats_counts *c = &st->counts;
	const struct smcr_stats_transport *shm = &c->transport[SMCR_TRANSPORT_SHM];
	const struct smcr_stats_transport smc = smc_total(c);
	enum smcr_reason order[SMCR_REASON_COUNT];
	unsigned int n = reasons_by_count(c, order);

	printf("{\"since\": %lld, \"interval\": %u, \"connections\": {\"tcp_clients\": %llu, "
	       "\"tcp_servers\": %llu, \"tcp_listeners\": %llu, \"smc_clients\": %llu, "
	       "\"smc_servers\": %llu, \"shm_clients\": %llu, \"shm_servers\": %llu, "
	       "\"handshake_errors\": %llu, \"fallbacks\": %llu, \"fallback_reasons\": [",
	       (long long)st->since, interval, (ull)c->tcp_clients, (ull)c->tcp_servers,
	       (ull)c->tcp_listeners, (ull)c->smc_clients, (ull)c->smc_servers,
	       (ull)shm->clients, (ull)shm->servers, (ull)c->handshake_errors,
	       (ull)fallbacks_total(c));
	for (unsigned int i = 0; i < n; i++)    /* names are [A-Z_]: nothing to escape */
		printf("%s{\"name\": \"%s\", \"code\": \"0x%08x\", \"count\": %llu}",
		       i ? ", " : "", smcr_reason_name(order[i]), smcr_reason_code(order[i]),
		       (ull)c->fallbacks[order[i]]);
	printf("], \"open\": %llu, \"open_peak\": %llu, \"untracked\": %llu}, "
	       "\"data\": {\"tcp_bytes_in\": %llu, \"tcp_bytes_out\": %llu, "
	       "\"tcp_recvs\": %llu, \"tcp_sends\": %llu, "
	       "\"shm_bytes_in\": %llu, \"shm_bytes_out\": %llu, "
	       "\"smc_avg_recv\": %llu, \"smc_avg_send\": %llu, "
	       "\"tcp_avg_recv\": %llu, \"tcp_avg_send\": %llu, "
	       "\"buffer_full_local\": %llu, \"buffer_full_remote\": %llu}, \"transports\": {",
	       (ull)st->connections, (ull)st->peak_connections, (ull)c->untracked,
	       (ull)c->tcp_bytes_in, (ull)c->tcp_bytes_out, (ull)c->tcp_recvs, (ull)c->tcp_sends,
	       (ull)shm->bytes_in, (ull)shm->bytes_out, average(smc.bytes_in, smc.recvs),
	       average(smc.bytes_out, smc.sends), average(c->tcp_bytes_in, c->tcp_recvs),
	       average(c->tcp_bytes_out, c->tcp_sends), (ull)smc.rmb_full,
	       (ull)smc.peer_rmb_full);
	for (unsigned int t = 0; t < SMCR_TRANSPORTS; t++) {
		printf("%s", t ? ", " : "");
		json_transport(t, st);
	}
	printf("}, \"memory\": {\"in_use\": %llu, \"peak\": %llu, \"max_memory\": %llu}, "
	       "\"processes\": {\"registered\": %llu, \"exited\": %llu",
	       (ull)st->head.bytes, (ull)st->peak_memory, (ull)st->head.limit,
	       (ull)st->processes, (ull)st->exited);
	if (ps) {
		printf(", \"detail\": [");
		for (uint32_t i = 0; i < ps->nprocs && i < SMCR_CONTROL_STATUS_PROCS; i++) {
			const struct smcr_control_proc *p = &ps->procs[i];
			char comm[sizeof(p->comm) + 1];
			printf("%s{\"pid\": %d, \"command\": \"%s\", \"open\": %u, \"peak\": %u, "
			       "\"smc\": %llu, \"fallbacks\": %llu, \"bytes_in\": %llu, "
			       "\"bytes_out\": %llu, \"memory\": %llu}", i ? ", " : "", p->pid,
			       smcrctl_json_comm(p->comm, comm), p->open, p->peak, (ull)p->smc, (ull)p->fallbacks,
			       (ull)p->bytes_in, (ull)p->bytes_out, (ull)p->granted);
		}
		printf("]");
	}
	printf("}}\n");
}

static int parse(char **args, int nargs, struct stats_opts *o)
{
	char *end;

	for (int i = 0; i < nargs; i++) {
		if (strcmp(args[i], "-r") == 0) {
			o->reset = true;
		} else if (strcmp(args[i], "--json") == 0) {
			o->json = true;
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
	return o->count && !o->interval ? -1 : 0;
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

/* One sample: the statistics, and (-d) the process list; -1 if smcrd does not answer. */
static int sample(bool detail, struct smcr_control_stats *st, struct smcr_control_status *ps)
{
	return smcrctl_ask(SMCR_CONTROL_STATS, 0, st, sizeof(*st)) ||
	       (detail && smcrctl_ask(SMCR_CONTROL_STATUS, 0, ps, sizeof(*ps))) ? -1 : 0;
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
		if (o.json)
			print_json(&shown, o.detail ? &ps : NULL, i ? o.interval : 0);
		else
			print_text(&shown, o.detail ? &ps : NULL, i ? o.interval : 0);
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
