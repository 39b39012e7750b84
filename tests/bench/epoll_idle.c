/*
 * epoll_idle.c - what idle connections cost a waiting process: an echo
 * server over one epoll instance (or poll), and two clients, one that
 * holds idle connections and waits, one that measures round trips among
 * idle connections.  Used by tests/bench/epoll_idle.sh (epoll_wait's cost
 * beside 5,000 idle members) and tests/integration/idle_conns.sh (idle
 * connections cost no CPU).
 *
 *   bench_epoll_idle serve PORT WAIT
 *       listens on 127.0.0.1:PORT and echoes every connection, all of them
 *       in one epoll instance (WAIT epoll) or one pollfd array (WAIT poll),
 *       waiting without a timeout; prints "listening" once it is.
 *   bench_epoll_idle hold PORT N SECONDS WAIT
 *       opens N connections, makes one 1-byte round trip on each (so that
 *       each has ended its CLC exchange and carries bytes), prints "ready",
 *       then waits SECONDS in epoll_wait or poll on all of them, which must
 *       stay silent (exit status 1 if one reports anything).
 *   bench_epoll_idle run PORT ACTIVE IDLE SECONDS SERVER_PID [WARMUP]
 *       opens IDLE connections (one round trip each) and ACTIVE ones, all in
 *       one epoll instance, keeps one 64-byte message in flight on each
 *       active one, and after a warm-up of WARMUP s (0.5) counts round trips for
 *       SECONDS; prints "ROUND_TRIPS_PER_S CLIENT_US_PER_OP SERVER_US_PER_OP",
 *       CPU time (user + system) per round trip of this process
 *       (getrusage) and of SERVER_PID (/proc/PID/stat) over those seconds.
 *
 * Needs RLIMIT_NOFILE above the connections (and, under libsmcr, the
 * descriptors each SMC connection holds): the caller raises it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MSG 64

static void die(const char *what)
{
	perror(what);
	exit(2);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static struct sockaddr_in address(int port)
{
	return (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				     .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
}

/* ---- the server ---- */

/* Echoes what fd has; false once it ended (the caller closes it). */
static bool echo(int fd)
{
	char buf[4096];
	ssize_t n = read(fd, buf, sizeof(buf));

	if (n <= 0)
		return n < 0 && errno == EAGAIN;
	for (ssize_t off = 0; off < n;) {
		ssize_t w = write(fd, buf + off, (size_t)(n - off));

		if (w < 0 && errno != EAGAIN && errno != EINTR)
			return false;
		off += w > 0 ? w : 0;
	}
	return true;
}

static int listener(int port)
{
	struct sockaddr_in a = address(port);
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);

	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 4096))
		die("listen");
	printf("listening\n");
	fflush(stdout);
	return fd;
}

static void serve_epoll(int lfd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = lfd }, out[64];
	int ep = epoll_create1(0);

	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev))
		die("epoll");
	for (;;) {
		int n = epoll_wait(ep, out, 64, -1);

		for (int i = 0; i < n; i++) {
			int fd = out[i].data.fd, c;

			if (fd != lfd) {
				if (!echo(fd))
					close(fd);      /* leaves the instance */
				continue;
			}
			while ((c = accept4(lfd, NULL, NULL, 0)) >= 0) {
				ev = (struct epoll_event){ .events = EPOLLIN, .data.fd = c };
				if (epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev))
					die("epoll_ctl");
			}
		}
	}
}

static void serve_poll(int lfd)
{
	size_t n = 1, cap = 1024;
	struct pollfd *p = calloc(cap, sizeof(*p));

	if (!p)
		die("calloc");
	p[0] = (struct pollfd){ .fd = lfd, .events = POLLIN };
	for (;;) {
		int c;

		if (poll(p, n, -1) < 0 && errno != EINTR)
			die("poll");
		for (size_t i = n; i-- > 1;) {
			if (p[i].revents && !echo(p[i].fd)) {
				close(p[i].fd);
				p[i] = p[--n];
			}
		}
		if (!p[0].revents)
			continue;
		while ((c = accept4(lfd, NULL, NULL, 0)) >= 0) {
			if (n == cap && !(p = reallocarray(p, cap *= 2, sizeof(*p))))
				die("realloc");
			p[n++] = (struct pollfd){ .fd = c, .events = POLLIN };
		}
	}
}

/* ---- the clients ---- */

/* A connection that has made one 1-byte round trip. */
static int connected(int port)
{
	struct sockaddr_in a = address(port);
	int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);
	char b = 'x';

	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)))
		die("connect");
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (write(fd, &b, 1) != 1 || read(fd, &b, 1) != 1)
		die("first round trip");
	return fd;
}

static int hold(int port, int n, int seconds, bool use_poll)
{
	struct pollfd *p = calloc((size_t)n, sizeof(*p));
	struct epoll_event ev, out[16];
	int ep = epoll_create1(0), rc = 0;
	double end;

	if (!p || ep < 0)
		die("setup");
	for (int i = 0; i < n; i++) {
		p[i] = (struct pollfd){ .fd = connected(port), .events = POLLIN };
		ev = (struct epoll_event){ .events = EPOLLIN, .data.fd = p[i].fd };
		if (epoll_ctl(ep, EPOLL_CTL_ADD, p[i].fd, &ev))
			die("epoll_ctl");
	}
	printf("ready\n");
	fflush(stdout);
	for (end = now_s() + seconds; now_s() < end && !rc;) {
		int left = (int)((end - now_s()) * 1000) + 1;
		int got = use_poll ? poll(p, (nfds_t)n, left) : epoll_wait(ep, out, 16, left);

		if (got > 0) {
			fprintf(stderr, "an idle connection reported news\n");
			rc = 1;
		}
		if (got < 0 && errno != EINTR)
			die("wait");
	}
	free(p);
	return rc;
}

/* utime + stime of process pid, in seconds; -1 if unknown. */
static double cpu_of(long pid)
{
	char path[64], buf[1024], *p;
	unsigned long ut, st;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	if (!(f = fopen(path, "r")))
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* after the command's closing parenthesis: state is field 3, utime 14, stime 15 */
	if (!(p = strrchr(buf, ')')) ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static double own_cpu(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

struct active {
	int fd;
	int got;        /* bytes of the echo received */
};

/* Round trips on the active connections until end; counts them. */
static long round_trips(int ep, struct active *a, double end)
{
	static const char msg[MSG];
	struct epoll_event out[64];
	long done = 0;

	while (now_s() < end) {
		int n = epoll_wait(ep, out, 64, 1000);

		for (int i = 0; i < n; i++) {
			struct active *c = &a[out[i].data.u32];
			char buf[MSG];
			ssize_t r = read(c->fd, buf, (size_t)(MSG - c->got));

			if (r <= 0)
				die("read");
			if ((c->got += (int)r) < MSG)
				continue;
			c->got = 0;
			done++;
			if (write(c->fd, msg, MSG) != MSG)
				die("write");
		}
	}
	return done;
}

static int run(int port, int nactive, int nidle, int seconds, long server, double warmup)
{
	static const char msg[MSG];
	struct active *a = calloc((size_t)nactive, sizeof(*a));
	struct epoll_event ev;
	int ep = epoll_create1(0);
	double t0, c0, s0;
	long done;

	if (!a || ep < 0)
		die("setup");
	for (int i = 0; i < nidle; i++) {
		ev = (struct epoll_event){ .events = EPOLLIN, .data.u32 = UINT32_MAX };
		if (epoll_ctl(ep, EPOLL_CTL_ADD, connected(port), &ev))
			die("epoll_ctl");
	}
	for (int i = 0; i < nactive; i++) {
		a[i].fd = connected(port);
		ev = (struct epoll_event){ .events = EPOLLIN, .data.u32 = (uint32_t)i };
		if (epoll_ctl(ep, EPOLL_CTL_ADD, a[i].fd, &ev) || write(a[i].fd, msg, MSG) != MSG)
			die("active");
	}
	round_trips(ep, a, now_s() + warmup);
	t0 = now_s();
	c0 = own_cpu();
	s0 = cpu_of(server);
	done = round_trips(ep, a, t0 + seconds);
	if (done == 0)
		die("no round trip");
	printf("%.0f %.3f %.3f\n", (double)done / (now_s() - t0), (own_cpu() - c0) * 1e6 / (double)done,
	       (cpu_of(server) - s0) * 1e6 / (double)done);
	free(a);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	if (!strcmp(mode, "serve") && argc == 4) {
		int lfd = listener(atoi(argv[2]));

		if (!strcmp(argv[3], "poll"))
			serve_poll(lfd);
		serve_epoll(lfd);
	}
	if (!strcmp(mode, "hold") && argc == 6)
		return hold(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), !strcmp(argv[5], "poll"));
	if (!strcmp(mode, "run") && (argc == 7 || argc == 8))
		return run(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), atol(argv[6]),
			   argc == 8 ? atof(argv[7]) : 0.5);
	fprintf(stderr, "usage: %s serve PORT epoll|poll | hold PORT N SECONDS epoll|poll |"
		" run PORT ACTIVE IDLE SECONDS SERVER_PID [WARMUP]\n", argv[0]);
	return 2;
}
