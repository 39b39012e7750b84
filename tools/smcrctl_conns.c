/*
 * smcrctl_conns.c - `smcrctl conns`: one line per connection of every
 * process using smcr, like smcss -W: who, where, on what (and if on TCP,
 * why), its state, buffers, cursors and traffic.  Filters by pid, port and
 * mode; --json for machines.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control_proto.h"
#include "reason.h"
#include "smcrctl.h"
#include "smcrctl_common.h"

typedef unsigned long long ull;

enum mode_filter { ANY, SMC, SHM, RDMA, TCP };

struct conns_opts {
	long pid;                       /* 0: any */
	long port;                      /* 0: any; local or peer */
	enum mode_filter mode;
	bool json;
};

static bool wanted(const struct conns_opts *o, const struct smcr_control_conn *e)
{
	const struct smcr_conn_view *c = &e->c;
	bool smc = c->mode == SMCR_CONN_SMC, tcp = c->mode == SMCR_CONN_TCP || c->mode == SMCR_CONN_RESET;

	if (o->pid && e->pid != o->pid)
		return false;
	if (o->port && c->local.port != o->port && c->peer.port != o->port)
		return false;
	switch (o->mode) {
	case SMC:
		return smc;
	case SHM:
		return smc && c->transport == SMCR_TRANSPORT_SHM;
	case RDMA:
		return smc && c->transport == SMCR_TRANSPORT_RDMA;
	case TCP:
		return tcp;
	default:
		return true;
	}
}

static bool on_smc(const struct smcr_conn_view *c)
{
	return c->mode == SMCR_CONN_SMC;
}

static void print_line(const struct smcr_control_conn *e)
{
	const struct smcr_conn_view *c = &e->c;
	char local[64], peer[64], mode[SMCRCTL_MODE_SIZE], cur[SMCR_CONN_CURSORS][16];
	char name[SMCRCTL_NAME_SIZE];

	smcr_conn_endpoint_str(&c->local, local, sizeof(local));
	smcr_conn_endpoint_str(&c->peer, peer, sizeof(peer));
	smcrctl_conn_mode(c, mode);
	for (unsigned int k = 0; k < SMCR_CONN_CURSORS; k++)
		if (on_smc(c))
			smcr_conn_cursor_str(c->cursor[k], cur[k], sizeof(cur[k]));
		else
			snprintf(cur[k], sizeof(cur[k]), "-");
	printf("%7d %-15s %5d %-22s %-22s %-32s %-10s %7llu %7llu %-13s %-13s %-13s %-13s "
	       "%-13s %12llu %12llu\n", e->pid, smcrctl_name(e->comm, name), c->fd, local, peer, mode,
	       smcr_conn_state_name(c->mode, c->close_flags),
	       on_smc(c) ? (ull)smcr_rmb_class_bytes(c->rmb_class) : 0ull,
	       on_smc(c) ? (ull)c->peer_rmb_size : 0ull, cur[SMCR_CURSOR_RX_PROD],
	       cur[SMCR_CURSOR_RX_CONS], cur[SMCR_CURSOR_TX_PREP], cur[SMCR_CURSOR_TX_SENT],
	       cur[SMCR_CURSOR_TX_FIN], (ull)c->bytes_in, (ull)c->bytes_out);
}

static void print_json(const struct smcr_control_conn *e, bool first)
{
	const struct smcr_conn_view *c = &e->c;
	static const char *const names[SMCR_CONN_CURSORS] = {
		[SMCR_CURSOR_RX_PROD] = "rx_prod", [SMCR_CURSOR_RX_CONS] = "rx_cons",
		[SMCR_CURSOR_TX_PREP] = "tx_prep", [SMCR_CURSOR_TX_SENT] = "tx_sent",
		[SMCR_CURSOR_TX_FIN] = "tx_fin",
	};
	char local[64], peer[64], cur[16], comm[SMCRCTL_JSON_COMM_SIZE];

	smcr_conn_endpoint_str(&c->local, local, sizeof(local));
	smcr_conn_endpoint_str(&c->peer, peer, sizeof(peer));
	printf("%s{\"pid\": %d, \"command\": \"%s\", \"fd\": %d, \"local\": \"%s\", \"peer\": \"%s\", "
	       "\"role\": \"%s\", \"mode\": \"%s\", \"state\": \"%s\"", first ? "" : ", ",
	       e->pid, smcrctl_json_comm(e->comm, comm), c->fd, local, peer, (c->flags & SMCR_CONN_ACTIVE) ? "client" : "server",
	       smcr_conn_mode_name(c->mode, c->transport),
	       smcr_conn_state_name(c->mode, c->close_flags));
	if (!on_smc(c))
		printf(", \"reason\": \"%s\", \"code\": \"0x%08x\", \"peer_code\": \"0x%08x\"",
		       smcr_reason_name(c->reason), smcr_reason_code(c->reason), c->peer_reason);
	else {
		printf(", \"rmb_size\": %llu, \"peer_rmb_size\": %u",
		       (ull)smcr_rmb_class_bytes(c->rmb_class), c->peer_rmb_size);
		for (unsigned int k = 0; k < SMCR_CONN_CURSORS; k++)
			printf(", \"%s\": \"%s\"", names[k],
			       smcr_conn_cursor_str(c->cursor[k], cur, sizeof(cur)));
		printf(", \"buffer_full_local\": %llu, \"buffer_full_remote\": %llu",
		       (ull)c->rmb_full, (ull)c->peer_rmb_full);
	}
	printf(", \"bytes_in\": %llu, \"bytes_out\": %llu, \"recvs\": %llu, \"sends\": %llu}",
	       (ull)c->bytes_in, (ull)c->bytes_out, (ull)c->recvs, (ull)c->sends);
}

static int parse(char **args, int nargs, struct conns_opts *o)
{
	char *end;

	for (int i = 0; i < nargs; i++) {
		const bool value = i + 1 < nargs;
		if (strcmp(args[i], "--json") == 0) {
			o->json = true;
		} else if (strcmp(args[i], "--pid") == 0 && value) {
			o->pid = strtol(args[++i], &end, 10);
			if (*end || o->pid <= 0)
				return -1;
		} else if (strcmp(args[i], "--port") == 0 && value) {
			o->port = strtol(args[++i], &end, 10);
			if (*end || o->port <= 0 || o->port > 65535)
				return -1;
		} else if (strcmp(args[i], "--mode") == 0 && value) {
			const char *m = args[++i];
			o->mode = strcmp(m, "smc") == 0 ? SMC : strcmp(m, "shm") == 0 ? SHM :
				  strcmp(m, "rdma") == 0 ? RDMA : strcmp(m, "tcp") == 0 ? TCP : ANY;
			if (o->mode == ANY)
				return -1;
		} else {
			return -1;
		}
	}
	return 0;
}

/* What the walk over smcrd's list carries from one connection to the next. */
struct conns_walk {
	const struct conns_opts *o;
	bool first;                     /* JSON: no ", " before the next object */
};

static void show_conn(const struct smcr_control_conn *e, void *arg)
{
	struct conns_walk *w = arg;

	if (!wanted(w->o, e))
		return;
	if (w->o->json)
		print_json(e, w->first);
	else
		print_line(e);
	w->first = false;
}

int smcrctl_conns(const struct smcrctl_args *a)
{
	struct conns_opts o = { 0 };
	struct conns_walk w = { .o = &o, .first = true };

	if (parse(a->argv, a->argc, &o)) {
		return EXIT_SHOW_USAGE;
	}
	if (o.json)
		printf("[");
	else
		printf("%7s %-15s %5s %-22s %-22s %-32s %-10s %7s %7s %-13s %-13s %-13s %-13s "
		       "%-13s %12s %12s\n", "PID", "COMMAND", "FD", "LOCAL", "PEER", "MODE", "STATE",
		       "RMB", "PEERRMB", "RXPROD", "RXCONS", "TXPREP", "TXSENT", "TXFIN",
		       "BYTES_IN", "BYTES_OUT");
	if (smcrctl_each_conn(show_conn, &w))
		return smcrctl_no_daemon();
	if (o.json)
		printf("]\n");
	return 0;
}
