/*
 * smcrctl_top.c - `smcrctl top`: a live view of the connections of every
 * process using smcr, as top is of processes.  This file owns the view:
 * two samples of smcrd's statistics and connection list (smcrctl_common.h),
 * each connection's rates between them, the order (busiest first), and the
 * drawing.
 *
 * The terminal is driven with plain ANSI sequences (home, clear to end of
 * line and of screen, cursor hidden), which every terminal emulator takes:
 * a screen of text redrawn in place does not need curses.  Keys are read in
 * non-canonical mode without echo, so that q quits without Enter; Ctrl-C
 * still sends SIGINT.  Every way out (q, a signal, an error) goes through
 * one place that puts the terminal back and shows the cursor.  Each line
 * is cut to the window's width and the frame to its height (TIOCGWINSZ,
 * read again on SIGWINCH), so that nothing wraps or scrolls.  With -b, or
 * when stdout is no terminal, frames follow one another without escapes
 * and without reading keys (top -b).
 *
 * smcrd lists other users' connections only to root, as for `conns`: the
 * view shows what it is given.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "control_proto.h"
#include "smcrctl.h"
#include "smcrctl_common.h"

#define LINE_MAX_BYTES 512              /* a line as built, before the cut to the width */
#define FIRST_WAIT 0.5                  /* seconds before the first frame, at most */

struct top_opts {
	double seconds;                 /* -d: between samples */
	unsigned long count;            /* -n: frames, then exit; 0: until q */
	bool batch;                     /* -b: no escapes, no keys */
};

/* One connection of a sample, with its rates since the previous sample. */
struct top_conn {
	struct smcr_control_conn e;
	double in, out;                 /* bytes per second */
};

struct sample {
	struct smcr_control_stats st;
	struct top_conn *conn;
	size_t n, cap;
	struct timespec at;             /* CLOCK_MONOTONIC */
};

/* What the screen is: a size of 0 is no limit (not a terminal). */
struct screen {
	unsigned int width, height;
	bool ansi;
};

static volatile sig_atomic_t stop_requested, resized;

static void on_stop(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void on_winch(int sig)
{
	(void)sig;
	resized = 1;
}

/* ---- sampling ---- */

static void add_conn(const struct smcr_control_conn *e, void *arg)
{
	struct sample *s = arg;

	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		struct top_conn *grown = realloc(s->conn, cap * sizeof(*grown));
		if (!grown)
			return;         /* out of memory: the frame shows those it holds */
		s->conn = grown;
		s->cap = cap;
	}
	s->conn[s->n++] = (struct top_conn){ .e = *e };
}

/* A connection's identity across samples: its process, descriptor and ends. */
static int conn_key_cmp(const void *a, const void *b)
{
	const struct smcr_control_conn *x = &((const struct top_conn *)a)->e;
	const struct smcr_control_conn *y = &((const struct top_conn *)b)->e;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->c.fd != y->c.fd)
		return x->c.fd < y->c.fd ? -1 : 1;
	int d = memcmp(&x->c.local, &y->c.local, sizeof(x->c.local));
	return d ? d : memcmp(&x->c.peer, &y->c.peer, sizeof(x->c.peer));
}

/* Sorts s's connections by cmp (qsort wants a buffer, even for none). */
static void sort_conns(struct sample *s, int (*cmp)(const void *, const void *))
{
	if (s->n > 1)
		qsort(s->conn, s->n, sizeof(*s->conn), cmp);
}

/* -1 if smcrd does not answer; the list sorted by identity, for rates(). */
static int take_sample(struct sample *s)
{
	s->n = 0;
	clock_gettime(CLOCK_MONOTONIC, &s->at);
	if (smcrctl_ask(SMCR_CONTROL_STATS, 0, &s->st, sizeof(s->st)) ||
	    smcrctl_each_conn(add_conn, s))
		return -1;
	sort_conns(s, conn_key_cmp);
	return 0;
}

/* b - a, never negative: a record may be reused by a new connection meanwhile. */
static double grew(uint64_t a, uint64_t b)
{
	return b > a ? (double)(b - a) : 0.0;
}

/* Each connection's rates since prev; one prev did not have moved all its bytes since. */
static void rates(struct sample *now, const struct sample *prev)
{
	double dt = (double)(now->at.tv_sec - prev->at.tv_sec) +
		    (double)(now->at.tv_nsec - prev->at.tv_nsec) / 1e9;

	if (dt <= 0)
		return;
	for (size_t i = 0; i < now->n; i++) {
		struct top_conn *c = &now->conn[i];
		const struct top_conn *was =
			prev->n ? bsearch(c, prev->conn, prev->n, sizeof(*c), conn_key_cmp) : NULL;
		c->in = grew(was ? was->e.c.bytes_in : 0, c->e.c.bytes_in) / dt;
		c->out = grew(was ? was->e.c.bytes_out : 0, c->e.c.bytes_out) / dt;
	}
}

/* Busiest first; then the most bytes moved; then by process and descriptor. */
static int busiest_first(const void *a, const void *b)
{
	const struct top_conn *x = a, *y = b;
	double rx = x->in + x->out, ry = y->in + y->out;
	uint64_t bx = x->e.c.bytes_in + x->e.c.bytes_out, by = y->e.c.bytes_in + y->e.c.bytes_out;

	if (rx != ry)
		return rx > ry ? -1 : 1;
	if (bx != by)
		return bx > by ? -1 : 1;
	return conn_key_cmp(a, b);
}

/* ---- drawing ---- */

/* v as top prints sizes: 512, 12.0K, 345.6M, 1.2G (powers of 1024). */
static char *human(double v, char *buf, size_t size)
{
	static const char units[] = "KMGT";
	int u = -1;

	while (v >= 1024 && u < (int)sizeof(units) - 2) {
		v /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(buf, size, "%.0f", v);
	else
		snprintf(buf, size, "%.1f%c", v, units[u]);
	return buf;
}

/* One line, cut to the screen's width; the rest of the screen line cleared. */
static void put_line(const struct screen *scr, unsigned int *row, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void put_line(const struct screen *scr, unsigned int *row, const char *fmt, ...)
{
	char line[LINE_MAX_BYTES];
	va_list ap;

	if (scr->height && *row + 1 >= scr->height)     /* the last row stays empty: no scroll */
		return;
	va_start(ap, fmt);
	int len = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (len < 0)
		return;
	if (scr->width && (unsigned int)len > scr->width)
		len = (int)scr->width;          /* names are escaped to ASCII: a byte a column */
	printf("%.*s%s\n", len, line, scr->ansi ? "\033[K" : "");
	(*row)++;
}

/* Connections by mode, and the traffic of all, for the header. */
struct totals {
	unsigned int shm, rdma, tcp, other;
	double in, out;
};

static struct totals add_up(const struct sample *s)
{
	struct totals t = { 0 };

	for (size_t i = 0; i < s->n; i++) {
		const struct smcr_conn_view *c = &s->conn[i].e.c;
		if (c->mode == SMCR_CONN_SMC && c->transport == SMCR_TRANSPORT_SHM)
			t.shm++;
		else if (c->mode == SMCR_CONN_SMC)
			t.rdma++;
		else if (c->mode == SMCR_CONN_TCP)
			t.tcp++;
		else
			t.other++;
		t.in += s->conn[i].in;
		t.out += s->conn[i].out;
	}
	return t;
}

static void draw_header(const struct screen *scr, unsigned int *row, const struct sample *s,
			const struct top_opts *o)
{
	const double mib = 1024.0 * 1024.0;
	const struct smcr_control_stats *st = &s->st;
	struct totals t = add_up(s);
	char when[16], in[16], out[16], whose[64] = "";
	time_t now = time(NULL);

	strftime(when, sizeof(when), "%H:%M:%S", localtime(&now));
	if (geteuid() != 0)     /* smcrd lists a user's own only */
		snprintf(whose, sizeof(whose), " (uid %u's only)", (unsigned)geteuid());
	put_line(scr, row, "smcrctl top - %s, every %g s%s", when, o->seconds,
		 o->batch ? "" : " (q quits)");
	put_line(scr, row, "Connections: %zu open%s: %u shm, %u SMC-R, %u TCP, %u other; "
		 "processes: %llu", s->n, whose, t.shm, t.rdma, t.tcp, t.other,
		 (unsigned long long)st->processes);
	put_line(scr, row, "Traffic: %sB/s in, %sB/s out", human(t.in, in, sizeof(in)),
		 human(t.out, out, sizeof(out)));
	put_line(scr, row, "Memory: %.1f MiB in use of max_memory %.0f MiB (%.0f%%), peak %.1f MiB",
		 st->head.bytes / mib, st->head.limit / mib,
		 st->head.limit ? 100.0 * (double)st->head.bytes / (double)st->head.limit : 0.0,
		 st->peak_memory / mib);
	put_line(scr, row, "%s", "");
	put_line(scr, row, "%7s %-15s %5s %9s %9s %-32s %-22s %s", "PID", "COMMAND", "FD",
		 "IN B/s", "OUT B/s", "MODE", "LOCAL", "PEER");
}

static void draw_conn(const struct screen *scr, unsigned int *row, const struct top_conn *t)
{
	const struct smcr_conn_view *c = &t->e.c;
	char name[SMCRCTL_NAME_SIZE], mode[SMCRCTL_MODE_SIZE], local[64], peer[64], in[16], out[16];

	smcr_conn_endpoint_str(&c->local, local, sizeof(local));
	smcr_conn_endpoint_str(&c->peer, peer, sizeof(peer));
	put_line(scr, row, "%7d %-15s %5d %9s %9s %-32s %-22s %s", t->e.pid,
		 smcrctl_name(t->e.comm, name), c->fd, human(t->in, in, sizeof(in)),
		 human(t->out, out, sizeof(out)), smcrctl_conn_mode(c, mode), local, peer);
}

static void draw(const struct screen *scr, const struct sample *s, const struct top_opts *o)
{
	unsigned int row = 0;

	if (scr->ansi)
		printf("\033[H");
	draw_header(scr, &row, s, o);
	for (size_t i = 0; i < s->n; i++)
		draw_conn(scr, &row, &s->conn[i]);
	if (scr->ansi)
		printf("\033[J");
	else
		printf("\n");           /* batch: a blank line between frames */
	fflush(stdout);
}

/* ---- the terminal ---- */

static struct termios saved_termios;
static bool termios_saved;

static struct screen screen_size(bool ansi)
{
	struct winsize ws;
	struct screen scr = { .ansi = ansi };

	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0) {
		scr.width = ws.ws_col;
		scr.height = ansi ? ws.ws_row : 0;      /* batch: every connection */
	}
	return scr;
}

/* Keys without Enter or echo (Ctrl-C still signals), the cursor hidden. */
static void terminal_enter(void)
{
	struct termios raw;

	if (tcgetattr(STDIN_FILENO, &saved_termios) == 0) {
		termios_saved = true;
		raw = saved_termios;
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_cc[VMIN] = 1;
		raw.c_cc[VTIME] = 0;
		tcsetattr(STDIN_FILENO, TCSANOW, &raw);
	}
	printf("\033[?25l\033[H\033[2J");
	fflush(stdout);
}

static void terminal_leave(void)
{
	if (termios_saved)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved_termios);
	printf("\033[?25h");
	fflush(stdout);
}

static void catch_signals(void)
{
	struct sigaction sa = { .sa_handler = on_stop };    /* no SA_RESTART: poll returns */

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sa.sa_handler = on_winch;
	sigaction(SIGWINCH, &sa, NULL);
}

/* ---- the loop ---- */

static long ms_until(const struct timespec *from, double seconds)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	double left = seconds - (double)(now.tv_sec - from->tv_sec) -
		      (double)(now.tv_nsec - from->tv_nsec) / 1e9;
	return left > 0 ? (long)(left * 1000) + 1 : 0;
}

/* True if q was typed (interactive only: batch reads no keys). */
static bool quit_key(bool keys)
{
	char buf[32];
	ssize_t n;

	if (!keys || (n = read(STDIN_FILENO, buf, sizeof(buf))) <= 0)
		return false;
	return memchr(buf, 'q', (size_t)n) || memchr(buf, 'Q', (size_t)n);
}

/*
 * Waits seconds from s's sample, redrawing s on a resize.  False if the
 * view is to end: q, or a signal that stops it.
 */
static bool wait_next(struct screen *scr, const struct sample *s, const struct top_opts *o,
		      double seconds)
{
	const bool keys = !o->batch && termios_saved;
	long ms;

	while (!stop_requested && (ms = ms_until(&s->at, seconds)) > 0) {
		struct pollfd p = { .fd = keys ? STDIN_FILENO : -1, .events = POLLIN };
		int r = poll(&p, 1, (int)(ms > 60000 ? 60000 : ms));
		if (r > 0 && (p.revents & (POLLHUP | POLLERR)))
			return false;           /* the terminal is gone */
		if (r > 0 && quit_key(keys))
			return false;
		if (resized && !o->batch) {
			resized = 0;
			*scr = screen_size(true);
			draw(scr, s, o);
		}
	}
	return !stop_requested;
}

/*
 * A frame per sample, each connection's rates against the previous
 * sample; the first one soon, against a sample taken at the start.
 */
static int run(const struct top_opts *o)
{
	struct sample a = { 0 }, b = { 0 }, *now = &b, *prev = &a;
	struct screen scr = screen_size(!o->batch);
	double wait = o->seconds < FIRST_WAIT ? o->seconds : FIRST_WAIT;
	int rc = 0;

	if (take_sample(prev))
		return smcrctl_no_daemon();
	for (unsigned long frame = 0; !o->count || frame < o->count; frame++, wait = o->seconds) {
		if (!wait_next(&scr, prev, o, wait))
			break;
		if (take_sample(now)) {
			rc = smcrctl_no_daemon();
			break;
		}
		rates(now, prev);
		sort_conns(now, busiest_first);
		draw(&scr, now, o);
		sort_conns(now, conn_key_cmp);          /* for the next rates() */
		struct sample *last = prev;
		prev = now;
		now = last;
	}
	free(a.conn);
	free(b.conn);
	return rc;
}

static int parse(char **args, int nargs, struct top_opts *o)
{
	char *end;

	for (int i = 0; i < nargs; i++) {
		const bool value = i + 1 < nargs;
		if (strcmp(args[i], "-b") == 0) {
			o->batch = true;
		} else if (strcmp(args[i], "-d") == 0 && value) {
			o->seconds = strtod(args[++i], &end);
			if (*end || !(o->seconds >= 0.1 && o->seconds <= 86400))
				return -1;
		} else if (strcmp(args[i], "-n") == 0 && value) {
			o->count = strtoul(args[++i], &end, 10);
			if (*end || o->count == 0 || args[i][0] == '-')
				return -1;
		} else {
			return -1;
		}
	}
	return 0;
}

int smcrctl_top(const struct smcrctl_args *a)
{
	struct top_opts o = { .seconds = 1.0 };

	if (parse(a->argv, a->argc, &o))
		return EXIT_SHOW_USAGE;
	if (!isatty(STDOUT_FILENO))
		o.batch = true;         /* a file or a pipe: frames, not a screen */
	catch_signals();
	if (!o.batch)
		terminal_enter();
	int rc = run(&o);
	if (!o.batch)
		terminal_leave();
	return rc;
}
