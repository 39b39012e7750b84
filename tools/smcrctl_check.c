/*
 * smcrctl_check.c - `smcrctl check HOST [PORT]`, like smc_chk: a short echo
 * exchange under the preload, then what became of it, read from smcrd's
 * connection records ("using shm", "using SMC-R", or "fallback to TCP"
 * with the reason on each end) and what to change.
 *
 * The two ends are this very program run again under smcr_run (found next
 * to smcrctl): `check --serve PORT` (an echo server, also for the user to
 * run on a remote HOST) and `check --client HOST PORT` (internal: it
 * echoes, says its local port on stdout, and holds the connection open
 * until its stdin closes, so that its record can be read).  The reasons
 * are reason.c's; only the advice is this file's.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"
#include "control_proto.h"
#include "reason.h"
#include "smcrctl.h"
#include "smcrctl_common.h"

#define CHILD_ENV "SMCR_CHECK_CHILD"    /* set in the ends: they run under the preload */
#define ECHO_BYTES 65536                /* enough to cross a few CDC updates */

/* ---- the two ends ---- */

static int tcp_socket(const char *host, const char *port, bool listening)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = listening ? AI_PASSIVE : 0 }, *ai;
	int fd = -1;

	if (getaddrinfo(host, port, &hints, &ai))
		return -1;
	for (struct addrinfo *a = ai; a && fd < 0; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, 0);
		if (fd < 0)
			continue;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &(int){ 1 }, sizeof(int));
		if (listening ? bind(fd, a->ai_addr, a->ai_addrlen) || listen(fd, 8)
			      : connect(fd, a->ai_addr, a->ai_addrlen)) {
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(ai);
	return fd;
}

static uint16_t port_of(int fd, bool local)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if ((local ? getsockname : getpeername)(fd, (struct sockaddr *)&ss, &len))
		return 0;
	return ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
					      : ((struct sockaddr_in *)&ss)->sin_port);
}

static bool write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w <= 0)
			return false;
		p += w;
		n -= (size_t)w;
	}
	return true;
}

static int serve(const char *port)
{
	int lfd = tcp_socket(NULL, port, true);
	char buf[16384];

	if (lfd < 0) {
		fprintf(stderr, "smcrctl: cannot listen on port %s: %s\n", port, strerror(errno));
		return EXIT_FAILURE;
	}
	printf("listening on port %s: run `smcrctl check THIS_HOST %s` on the other host\n",
	       port, port);
	fflush(stdout);
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		ssize_t n;
		if (fd < 0)
			continue;
		while ((n = read(fd, buf, sizeof(buf))) > 0 && write_all(fd, buf, (size_t)n))
			;
		close(fd);
	}
}

static int client(const char *host, const char *port)
{
	static char out[ECHO_BYTES], in[ECHO_BYTES];
	int fd = tcp_socket(host, port, false);
	size_t got = 0;

	if (fd < 0) {
		printf("error cannot connect to %s port %s: %s\n", host, port, strerror(errno));
		return EXIT_FAILURE;
	}
	for (size_t i = 0; i < sizeof(out); i++)
		out[i] = (char)('a' + i % 26);
	if (!write_all(fd, out, sizeof(out)))
		got = 0;
	else
		while (got < sizeof(in)) {
			ssize_t n = read(fd, in + got, sizeof(in) - got);
			if (n <= 0)
				break;
			got += (size_t)n;
		}
	if (got != sizeof(in) || memcmp(in, out, sizeof(in))) {
		printf("error the echo came back wrong (%zu of %zu bytes)\n", got, sizeof(in));
		return EXIT_FAILURE;
	}
	printf("ok %u\n", port_of(fd, true));
	fflush(stdout);
	while (read(STDIN_FILENO, in, 1) > 0)      /* held open until told */
		;
	close(fd);
	return 0;
}

/* ---- running the ends ---- */

/* Becomes `smcrctl check ARGS...` under smcr_run (the one next to us, else PATH's). */
static void exec_preloaded(char *const args[])
{
	char exe[PATH_MAX], run[PATH_MAX + 16];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *argv[8] = { run, exe, "check" };

	if (n <= 0)
		return;
	exe[n] = '\0';
	snprintf(run, sizeof(run), "%.*s/smcr_run", (int)(strrchr(exe, '/') - exe), exe);
	for (int k = 0; args[k] && k < 4; k++)
		argv[3 + k] = args[k];
	setenv(CHILD_ENV, "1", 1);
	execv(run, argv);
	execvp("smcr_run", argv);
	fprintf(stderr, "smcrctl: cannot run smcr_run: %s\n", strerror(errno));
}

/*
 * Starts an end (exec_preloaded) as a child that dies with us; *out: its
 * stdout; *in: its stdin.
 */
static pid_t spawn(char *const args[], FILE **out, int *in)
{
	int o[2], i[2];

	if (pipe2(o, O_CLOEXEC))
		return -1;
	if (pipe2(i, O_CLOEXEC)) {
		close(o[0]);
		close(o[1]);
		return -1;
	}
	pid_t pid = fork();
	if (pid == 0) {
		dup2(o[1], STDOUT_FILENO);
		dup2(i[0], STDIN_FILENO);
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		exec_preloaded(args);
		_exit(127);
	}
	close(o[1]);
	close(i[0]);
	*out = fdopen(o[0], "r");
	*in = i[1];
	return pid;
}

/* The connection of ports (local, peer) in smcrd's records; false if none. */
static bool find_conn(uint16_t local, uint16_t peer, struct smcr_conn_view *found)
{
	static struct smcr_control_conns page;
	uint64_t where = 0;

	do {
		if (smcrctl_ask(SMCR_CONTROL_CONNS, where, &page, sizeof(page)))
			return false;
		for (uint32_t i = 0; i < page.n && i < SMCR_CONTROL_CONNS_PAGE; i++)
			if (page.conn[i].c.local.port == local && page.conn[i].c.peer.port == peer) {
				*found = page.conn[i].c;
				return true;
			}
		where = page.head.token;
	} while (where);
	return false;
}

/* ---- the verdict ---- */

static bool port_allowed(const struct smcr_config *cfg, unsigned int port)
{
	for (size_t i = 0; i < cfg->ports.n; i++)
		if (port >= cfg->ports.range[i].lo && port <= cfg->ports.range[i].hi)
			return true;
	return false;
}

/* What to change for a connection that stayed on TCP for reason, on port. */
static void advise(enum smcr_reason reason, const struct smcr_config *cfg, const char *conf,
		   unsigned int port)
{
	static const struct {
		enum smcr_reason reason;
		const char *advice;
	} advice[] = {
		{ SMCR_REASON_NODAEMON, "smcrd is not running: start it (smcrd, or systemctl start smcrd)" },
		{ SMCR_REASON_PEERNOSMC, "the peer did not signal SMC: run it under the preload "
					 "(smcr_run), with smcrd running on its host" },
		{ SMCR_REASON_MEM, "max_memory is used up: see smcrctl stats, raise it with "
				   "smcrctl set max_memory=MB" },
		{ SMCR_REASON_OPTUNSUPP, "no room for the SMC TCP option (TCP MD5, AO or MPTCP in use)" },
		{ SMCR_REASON_CONFINED, "the server's process had confined itself (RLIMIT_NOFILE, "
					"chroot, network namespace) before it set the connection up: "
					"it stays on TCP" },
	};
	char ports[SMCR_CONFIG_LINE_MAX + 1] = "";

	if (reason == SMCR_REASON_POLICY && cfg) {
		smcr_config_format_value(cfg, "port_range_list", ports, sizeof(ports));
		if (!cfg->enabled)
			printf("  advice: enabled=0 in %s: smcrctl enable\n", conf);
		else if (!port_allowed(cfg, port))
			printf("  advice: port %u not in port_range_list: smcrctl set "
			       "port_range_list=%s%s%u\n", port, ports, ports[0] ? "," : "", port);
		else
			printf("  advice: the address is not in ip_addr_list: see smcrctl show, "
			       "smcrctl set ip_addr_list=...\n");
		return;
	}
	for (size_t i = 0; i < sizeof(advice) / sizeof(advice[0]); i++)
		if (advice[i].reason == reason) {
			printf("  advice: %s\n", advice[i].advice);
			return;
		}
	printf("  advice: %s\n", smcr_reason_text(reason));
}

static bool smc(const struct smcr_conn_view *c)
{
	return c->mode == SMCR_CONN_SMC;
}

static void end_str(const struct smcr_conn_view *c, bool known, char *buf, size_t size)
{
	if (!known)
		snprintf(buf, size, "unknown (not seen by this host's smcrd)");
	else if (smc(c))
		snprintf(buf, size, "%s", smcr_conn_mode_name(c->mode, c->transport));
	else
		snprintf(buf, size, "%s (0x%08x: %s)", smcr_reason_name(c->reason),
			 smcr_reason_code(c->reason), smcr_reason_text(c->reason));
}

/* Prints the verdict on the client's and (if known) the server's end. */
static int verdict(const struct smcr_conn_view *cli, const struct smcr_conn_view *srv,
		   bool server_known, const struct smcr_config *cfg, const char *conf,
		   unsigned int port)
{
	char c[160], s[160];

	if (smc(cli) && (!server_known || smc(srv))) {
		printf("using %s\n", smcr_conn_mode_name(cli->mode, cli->transport));
		return 0;
	}
	end_str(cli, true, c, sizeof(c));
	end_str(srv, server_known, s, sizeof(s));
	printf("fallback to TCP: client %s, server %s\n", c, s);
	if (!smc(cli))
		advise((enum smcr_reason)cli->reason, cfg, conf, port);
	if (server_known && !smc(srv) && srv->reason != cli->reason)
		advise((enum smcr_reason)srv->reason, cfg, conf, port);
	return EXIT_FAILURE;
}

/* ---- the command ---- */

/* Whether host names an address of this machine (one can bind to it). */
static bool local_host(const char *host)
{
	int fd = tcp_socket(host, "0", true);

	if (fd >= 0)
		close(fd);
	return fd >= 0;
}

/* A port of port_range_list free on host (0: none), else a free port of the kernel's. */
static unsigned int free_port(const char *host, const struct smcr_config *cfg)
{
	char num[12];

	for (size_t i = 0; i < cfg->ports.n; i++)
		for (unsigned int p = cfg->ports.range[i].lo; p <= cfg->ports.range[i].hi; p++) {
			snprintf(num, sizeof(num), "%u", p);
			int fd = tcp_socket(host, num, true);
			if (fd >= 0) {
				close(fd);
				return p;
			}
		}
	return 0;
}

static int check(const char *conf, const char *host, const char *port_arg)
{
	static struct smcr_control_status st;
	struct smcr_config cfg;
	struct smcr_config_error err;
	const bool have_cfg = smcr_config_load(conf, &cfg, &err) == 0;
	const bool local = local_host(host);
	char port[12], line[128];
	FILE *srv_out = NULL, *cli_out = NULL;
	int srv_in = -1, cli_in = -1, rc = EXIT_FAILURE;
	pid_t srv = -1, cli;
	unsigned int lport = 0;

	if (smcrctl_ask(SMCR_CONTROL_STATUS, 0, &st, sizeof(st))) {
		printf("fallback to TCP: %s (0x%08x: %s)\n", smcr_reason_name(SMCR_REASON_NODAEMON),
		       smcr_reason_code(SMCR_REASON_NODAEMON), smcr_reason_text(SMCR_REASON_NODAEMON));
		advise(SMCR_REASON_NODAEMON, NULL, conf, 0);
		return EXIT_NO_DAEMON;
	}
	if (port_arg) {
		snprintf(port, sizeof(port), "%s", port_arg);
	} else {
		unsigned int p = have_cfg ? free_port(local ? host : NULL, &cfg) : 0;
		if (!p) {
			printf("no free port in port_range_list: name one (smcrctl check %s PORT)\n",
			       host);
			return EXIT_USAGE;
		}
		snprintf(port, sizeof(port), "%u", p);
		if (!local) {
			printf("on %s run: smcrctl check --serve %s\nthen here: smcrctl check %s %s\n",
			       host, port, host, port);
			return 0;
		}
		srv = spawn((char *[]){ "--serve", port, NULL }, &srv_out, &srv_in);
		if (srv < 0 || !srv_out || !fgets(line, sizeof(line), srv_out)) {
			printf("error: the echo server did not start\n");
			goto out;
		}
	}
	cli = spawn((char *[]){ "--client", (char *)host, port, NULL }, &cli_out, &cli_in);
	line[0] = '\0';
	if (cli < 0 || !cli_out || !fgets(line, sizeof(line), cli_out) ||
	    sscanf(line, "ok %u", &lport) != 1) {
		printf("%s", line[0] ? line : "error: the echo client failed\n");
		goto stop_client;
	}
	struct smcr_conn_view c = { 0 }, s = { 0 };
	if (!find_conn((uint16_t)lport, (uint16_t)atoi(port), &c)) {
		printf("error: smcrd has no record of the client's connection (port %u)\n", lport);
		goto stop_client;
	}
	bool server_known = local && find_conn((uint16_t)atoi(port), (uint16_t)lport, &s);
	rc = verdict(&c, &s, server_known, have_cfg ? &cfg : NULL, conf, (unsigned int)atoi(port));
	if (!local)
		printf("(the server's end: smcrctl conns --port %s on %s, while connected)\n",
		       port, host);
stop_client:
	close(cli_in);
	if (cli > 0)
		waitpid(cli, NULL, 0);
out:
	if (srv > 0) {
		kill(srv, SIGTERM);
		waitpid(srv, NULL, 0);
	}
	if (srv_in >= 0)
		close(srv_in);
	if (srv_out)
		fclose(srv_out);
	if (cli_out)
		fclose(cli_out);
	return rc;
}

int smcrctl_check(const struct smcrctl_args *a)
{
	char **args = a->argv;
	const int nargs = a->argc;

	if (nargs == 2 && strcmp(args[0], "--serve") == 0) {
		if (!getenv(CHILD_ENV)) {       /* run by hand: again, under the preload */
			exec_preloaded(args);
			return EXIT_FAILURE;
		}
		return serve(args[1]);
	}
	if (nargs == 3 && strcmp(args[0], "--client") == 0 && getenv(CHILD_ENV))
		return client(args[1], args[2]);
	if (nargs == 1 || nargs == 2)
		return check(a->conf, args[0], nargs == 2 ? args[1] : NULL);
	return EXIT_SHOW_USAGE;
}
