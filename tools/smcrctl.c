/*
 * smcrctl - administer smcr: to smcr.conf what AIX's lsattr/chdev are to smcr0.
 *
 *   smcrctl [-c FILE] COMMAND [ARGS] | COMMAND --help | help
 *
 * This file is main: the global options and the table of commands, which
 * both dispatches (to the command files, smcrctl.h) and writes every help
 * text, so that a command cannot be run without being listed, nor listed
 * without its usage.  The commands call only downward (smcrctl_common.h).
 * Exit status: 0 done, 1 invalid value or configuration (file unchanged) or
 * not applied (or reset refused) or check fell back, 2 usage, 3 (status,
 * stats, conns, top, check) smcrd not running.
 */
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "smcrctl.h"
#include "smcrctl_common.h"

struct command {
	const char *name;
	int (*run)(const struct smcrctl_args *a);
	int min_args, max_args;         /* how many arguments it takes */
	const char *synopsis;           /* its arguments, for its usage line */
	const char *summary;            /* one line in `smcrctl help` */
	const char *help;               /* `smcrctl NAME --help`, after the usage line */
};

static int show_help(const struct smcrctl_args *a);

static const struct command commands[] = {
	{ "show", smcrctl_show, 0, 0, "", "every attribute with its value and meaning",
	  "Every attribute of the configuration file with its value and meaning.\n" },
	{ "set", smcrctl_set, 1, INT_MAX, "KEY=VALUE...",
	  "change attributes and have smcrd reload them",
	  "Change attributes: all are validated first, then the file is rewritten\n"
	  "atomically and smcrd reloads it.  If a value or the resulting file is\n"
	  "invalid, nothing changes.\n" },
	{ "enable", smcrctl_enable, 0, 0, "", "set enabled=1",
	  "Set enabled=1 (as smcrctl set enabled=1): smcrd negotiates SMC.\n" },
	{ "disable", smcrctl_disable, 0, 0, "", "set enabled=0",
	  "Set enabled=0 (as smcrctl set enabled=0): connections stay on TCP.\n" },
	{ "status", smcrctl_status, 0, 0, "",
	  "smcrd running?, its program, memory, buffers, processes",
	  "smcrd: running?, program attached, memory in use of max_memory,\n"
	  "shared-memory buffers, registered processes (other users' only to root).\n" },
	{ "stats", smcrctl_stats, 0, INT_MAX,
	  "[-d] [-r] [--json] [-i SECONDS [-n COUNT]] | --prometheus [--output FILE]",
	  "the host's statistics from every process using smcr",
	  "The host's statistics from every process using smcr, exited ones included.\n"
	  "\n"
	  "  -d             per transport (with the RDMA links) and process (other\n"
	  "                 users' only to root; figures as each process reports them)\n"
	  "  -r             then reset them to zero (root)\n"
	  "  --json         as JSON\n"
	  "  -i SECONDS     again every SECONDS, the changes since the last\n"
	  "  -n COUNT       with -i: COUNT samples in all\n"
	  "  --prometheus   every host-wide figure (-d's RDMA links too) in the\n"
	  "                 Prometheus text format, for node_exporter's textfile collector\n"
	  "  --output FILE  with --prometheus: replace FILE atomically instead of printing\n" },
	{ "conns", smcrctl_conns, 0, INT_MAX,
	  "[--pid PID] [--port PORT] [--mode smc|shm|rdma|tcp] [--json]",
	  "one line per open connection (like smcss -W)",
	  "One line per open connection (like smcss -W): mode, or why TCP; state,\n"
	  "buffers, cursors, bytes, as its process reports them.  Other users'\n"
	  "connections only to root.\n"
	  "\n"
	  "  --pid PID    only that process's\n"
	  "  --port PORT  only those with that local or peer port\n"
	  "  --mode MODE  only those on SMC (smc), shared memory (shm), RDMA (rdma)\n"
	  "               or TCP (tcp)\n"
	  "  --json       as JSON\n" },
	{ "top", smcrctl_top, 0, INT_MAX, "[-b] [-d SECONDS] [-n COUNT]",
	  "a live view of the connections, busiest first (like top)",
	  "A live view, redrawn every second: the connections busiest first, with\n"
	  "their process, mode (or why TCP) and rates each way; above them the\n"
	  "totals and memory in use of max_memory.  q or Ctrl-C quits.  Other\n"
	  "users' connections only to root.\n"
	  "\n"
	  "  -b          batch: frames one after another, no escapes, no keys (also\n"
	  "              when stdout is not a terminal)\n"
	  "  -d SECONDS  between frames (default 1; at least 0.1)\n"
	  "  -n COUNT    COUNT frames, then exit\n" },
	{ "check", smcrctl_check, 1, 3, "HOST [PORT] | --serve PORT",
	  "an echo exchange to HOST: shm, SMC-R or TCP, and why",
	  "An echo exchange to HOST under the preload: says whether it used shm,\n"
	  "SMC-R or TCP (and why, and what to change); without PORT, against its\n"
	  "own server on a free port of port_range_list.\n"
	  "\n"
	  "  --serve PORT  that server, to run on HOST\n" },
	{ "help", show_help, 0, 0, "", "this text", "The commands and options of smcrctl.\n" },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void print_usage(FILE *to)
{
	fputs("usage: smcrctl [-c FILE] COMMAND [ARGS]\n"
	      "Show and change the smcr configuration (the attributes of AIX's smcr0, extended).\n"
	      "Each command's arguments: smcrctl COMMAND --help.\n"
	      "\n", to);
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(to, "  %-9s %s\n", commands[i].name, commands[i].summary);
	fputs("\n"
	      "  -c FILE    configuration file (default: $SMCR_CONF, else " SMCR_CONF_DEFAULT ")\n"
	      "  -h, --help this text\n"
	      "\n"
	      "Exit status: 0 done, 1 invalid value or configuration (file unchanged) or not\n"
	      "applied (or reset refused) or check fell back, 2 usage, 3 (status, stats,\n"
	      "conns, top, check) smcrd not running.\n", to);
}

static void print_command_usage(const struct command *c, FILE *to)
{
	fprintf(to, "usage: smcrctl [-c FILE] %s%s%s\n%s", c->name, c->synopsis[0] ? " " : "",
		c->synopsis, c->help);
}

static int show_help(const struct smcrctl_args *a)
{
	(void)a;                        /* the text is the same whatever the file */
	print_usage(stdout);
	return 0;
}

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

static bool asks_help(const char *arg)
{
	return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0;
}

/* Runs c with a's arguments, or prints c's usage: when asked, or when they are wrong. */
static int dispatch(const struct command *c, const struct smcrctl_args *a)
{
	if (a->argc > 0 && asks_help(a->argv[0])) {
		print_command_usage(c, stdout);
		return 0;
	}
	int status = a->argc < c->min_args || a->argc > c->max_args ? EXIT_SHOW_USAGE : c->run(a);
	if (status != EXIT_SHOW_USAGE)
		return status;
	print_command_usage(c, stderr);
	return EXIT_USAGE;
}

int main(int argc, char **argv)
{
	static const struct option long_options[] = {
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct smcrctl_args a = { .conf = smcr_config_default_path() };
	int opt;

	while ((opt = getopt_long(argc, argv, "+c:h", long_options, NULL)) != -1) {
		switch (opt) {
		case 'c':
			a.conf = optarg;
			break;
		case 'h':
			print_usage(stdout);
			return 0;
		default:
			print_usage(stderr);
			return EXIT_USAGE;
		}
	}
	const struct command *c = optind < argc ? find_command(argv[optind]) : NULL;
	if (!c) {
		print_usage(stderr);
		return EXIT_USAGE;
	}
	a.argv = argv + optind + 1;
	a.argc = argc - optind - 1;
	return dispatch(c, &a);
}
