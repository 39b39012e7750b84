/*
 * semprobe - the socket semantics an SMC connection must keep, row by row:
 * SIGPIPE, shutdown, ioctl queues, urgent data, MSG_TRUNC, TCP_CORK,
 * timeouts, epoll flags and epoll instances nested in epoll, poll and
 * select.  Each row makes its own connections to IPV4_ADDR:PORT (the
 * arguments) and prints outcomes only (no timings, descriptors or ports),
 * so that
 * semantics.sh can require the same output plainly and under libsmcr.so
 * with smcrd, where every connection must have gone over SMC.  Between
 * them the rows call every function libsmcr interposes (libsmcr/base/real.h);
 * built with _FORTIFY_SOURCE so that the __*_chk forms are among them.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/sockios.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <linux/seccomp.h>
#include <linux/filter.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <sys/uio.h>
#include <unistd.h>

/*
 * Waits for what is coming have no timeout: a wakeup lost and made up for
 * by a timeout would print the same.  The alarm ends a probe that hangs.
 */
#define FOREVER -1
#define HANG_SECONDS 60
/* where row_dup2_over_high's storm starts: above the verbs libraries' own */
#define HIGH_FDS 256

static const char *addr;
static int port, listener, pairs;
static volatile sig_atomic_t sigpipes;

static void show(const char *what, long rc)
{
	printf("%-44s rc=%ld errno=%s\n", what, rc, rc < 0 ? strerrorname_np(errno) : "-");
	errno = 0;
}

#define CALL(what, expr) show(what, (long)(expr))

static void say(const char *what, const char *value)
{
	printf("%-44s %s\n", what, value);
}

/* A length the compiler cannot see: fortified calls then go through __*_chk. */
static size_t dyn(size_t n)
{
	static volatile size_t launder;
	launder = n;
	return launder;
}

/*
 * A buffer the compiler cannot size: fortified calls then go to the plain
 * entry point even where the compiler would check a constant length
 * (with ASan, GCC checks them all).
 */
static void *opaque(void *p)
{
	static void *volatile launder;
	launder = p;
	return launder;
}

static const char *revents(int ev)
{
	static char s[96];

	snprintf(s, sizeof(s), "%s%s%s%s%s%s", ev & POLLIN ? "IN " : "", ev & POLLOUT ? "OUT " : "",
		 ev & POLLPRI ? "PRI " : "", ev & POLLRDHUP ? "RDHUP " : "",
		 ev & POLLHUP ? "HUP " : "", ev & POLLERR ? "ERR " : "");
	return *s ? s : "none";
}

static void show_poll(const char *what, int fd, short events, int timeout)
{
	struct pollfd p = { .fd = fd, .events = events };
	int rc = poll(opaque(&p), 1, timeout);

	printf("%-44s rc=%d revents=%s\n", what, rc,
	       rc < 0 ? strerrorname_np(errno) : revents(p.revents));
}

static void show_int_ioctl(const char *what, int fd, unsigned long req)
{
	int v = -1, rc = ioctl(fd, req, &v);

	printf("%-44s rc=%d value=%d\n", what, rc, v);
}

static struct sockaddr_in loopback(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	inet_pton(AF_INET, addr, &a.sin_addr);
	return a;
}

/*
 * A connected pair, c the client and s the server end, both on the path
 * they will keep: under the preload with smcrd, their CLC exchange is
 * driven by poll on both ends (one thread holds both).
 */
static void pair(int *c, int *s)
{
	struct sockaddr_in a = loopback();
	struct pollfd p[2];

	*c = socket(AF_INET, SOCK_STREAM, 0);
	if (*c < 0 || connect(*c, (void *)&a, sizeof(a)) != 0 ||
	    (*s = accept(listener, NULL, NULL)) < 0) {
		perror("pair");
		exit(1);
	}
	p[0] = (struct pollfd){ .fd = *c, .events = POLLOUT };
	p[1] = (struct pollfd){ .fd = *s, .events = POLLOUT };
	while (!(p[0].revents & POLLOUT) || !(p[1].revents & POLLOUT))
		if (poll(p, 2, FOREVER) <= 0) {
			perror("pair: poll");
			exit(1);
		}
	pairs++;
}

static void unpair(int c, int s)
{
	close(c);
	close(s);
}

/* Waits for fd to be readable, however long the peer takes. */
static void await_in(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	poll(&p, 1, FOREVER);
}

static void on_sigpipe(int sig)
{
	(void)sig;
	sigpipes++;
}

static void row_sigpipe(void)
{
	char buf[8];
	int c, s, err = 0;
	socklen_t len = sizeof(err);
	long rc;

	puts("== SIGPIPE");
	pair(&c, &s);
	close(s);
	await_in(c);                    /* the peer's close arrived */
	sigpipes = 0;
	/* TCP: the first send goes, and the closed peer's reset fails the next */
	CALL("send after the peer closed", send(c, "abcde", 5, 0));
	printf("%-44s %d\n", "SIGPIPE raised", sigpipes);
	show_poll("poll after the peer's reset", c, POLLIN | POLLOUT | POLLRDHUP, 0);
	do
		rc = send(c, "abcde", 5, 0);
	while (rc == 5);
	show("send until it fails, no MSG_NOSIGNAL", rc);
	printf("%-44s %d\n", "SIGPIPE raised", sigpipes);
	show_poll("poll, the error reported", c, POLLIN | POLLOUT | POLLRDHUP, 0);
	CALL("read", read(c, buf, sizeof(buf)));
	close(c);

	pair(&c, &s);
	close(s);
	await_in(c);
	CALL("send after the peer closed", send(c, "abcde", 5, MSG_NOSIGNAL));
	CALL("getsockopt(SO_ERROR)", getsockopt(c, SOL_SOCKET, SO_ERROR, &err, &len));
	printf("%-44s %s\n", "error", err ? strerrorname_np(err) : "none");
	show_poll("poll, the error reported", c, POLLIN | POLLOUT | POLLRDHUP, 0);
	sigpipes = 0;
	CALL("send MSG_NOSIGNAL", send(c, "abcde", 5, MSG_NOSIGNAL));
	printf("%-44s %d\n", "SIGPIPE raised", sigpipes);
	sigpipes = 0;
	CALL("write", write(c, "abcde", 5));
	printf("%-44s %d\n", "SIGPIPE raised", sigpipes);
	close(c);
}

static void row_shutdown(void)
{
	char buf[16];
	int c, s;

	puts("== shutdown");
	pair(&c, &s);
	CALL("shutdown(SHUT_RD)", shutdown(s, SHUT_RD));
	show_poll("poll after SHUT_RD", s, POLLIN | POLLOUT | POLLRDHUP, 0);
	CALL("recv after SHUT_RD", recv(s, buf, sizeof(buf), MSG_DONTWAIT));
	show_poll("peer's poll after SHUT_RD", c, POLLIN | POLLOUT | POLLRDHUP, 0);
	CALL("send to the SHUT_RD end", send(s, "xyz", 3, 0));
	await_in(c);
	CALL("peer reads it", recv(c, buf, sizeof(buf), 0));
	unpair(c, s);

	pair(&c, &s);
	CALL("shutdown(SHUT_RDWR)", shutdown(s, SHUT_RDWR));
	await_in(c);
	show_poll("peer's poll after SHUT_RDWR", c, POLLIN | POLLOUT | POLLRDHUP, 0);
	CALL("peer's read", read(c, buf, sizeof(buf)));
	show_poll("poll after SHUT_RDWR", s, POLLIN | POLLOUT | POLLRDHUP, 0);
	CALL("read after SHUT_RDWR", read(s, buf, sizeof(buf)));
	CALL("send after SHUT_RDWR", send(s, "xyz", 3, MSG_NOSIGNAL));
	CALL("shutdown(SHUT_RDWR) again", shutdown(s, SHUT_RDWR));
	unpair(c, s);
}

/*
 * A client that half-closes as soon as its connect() completed, before the
 * server accepted (under the preload: in its CLC exchange): the server
 * reads the end, and its reply still arrives.
 */
static void row_shutdown_at_once(void)
{
	struct sockaddr_in a = loopback();
	struct pollfd p = { .events = POLLOUT };
	char buf[16] = { 0 };
	int c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), s;

	puts("== shutdown as soon as connected");
	CALL("non-blocking connect in progress", connect(c, (void *)&a, sizeof(a)) < 0 &&
						 errno == EINPROGRESS);
	p.fd = c;
	CALL("poll: connected", poll(&p, 1, FOREVER));
	CALL("shutdown(SHUT_WR) before the accept", shutdown(c, SHUT_WR));
	s = accept(listener, NULL, NULL);
	/* one thread holds both ends: the client's next call carries its exchange on */
	CALL("the client's recv, nothing yet", recv(c, buf, sizeof(buf), 0));
	await_in(s);
	CALL("the server reads the end", recv(s, buf, sizeof(buf), 0));
	CALL("the server replies", send(s, "reply", 5, 0));
	CALL("fcntl: blocking", fcntl(c, F_SETFL, 0));
	CALL("the client reads the reply", recv(c, buf, 5, MSG_WAITALL));
	say("it is", buf);
	pairs++;
	unpair(c, s);
}

static void row_queues(void)
{
	char buf[128] = { 0 };
	int c, s;

	puts("== FIONREAD, SIOCOUTQ");
	pair(&c, &s);
	show_int_ioctl("FIONREAD, nothing sent", s, FIONREAD);
	show_int_ioctl("SIOCOUTQ, nothing sent", c, SIOCOUTQ);
	CALL("send 100", send(c, buf, 100, 0));
	await_in(s);
	show_int_ioctl("FIONREAD after 100 came", s, FIONREAD);
	CALL("recv 40", recv(s, opaque(buf), 40, 0));
	show_int_ioctl("FIONREAD after 40 read", s, FIONREAD);
	CALL("recv the rest", recv(s, buf, sizeof(buf), 0));
	show_int_ioctl("FIONREAD after all read", s, FIONREAD);
	show_int_ioctl("SIOCOUTQ after the peer read all", c, SIOCOUTQ);
	unpair(c, s);
}

static void row_oob(void)
{
	char buf[16] = { 0 };
	int c, s, on = 1, mark = -1;
	fd_set ex;

	puts("== MSG_OOB");
	pair(&c, &s);
	CALL("send ab", send(c, "ab", 2, 0));
	CALL("send c MSG_OOB", send(c, "c", 1, MSG_OOB));
	/*
	 * The urgent byte may come after "ab" (over RDMA each send is its own
	 * CDC; on loopback TCP both are there when send returns): wait for it
	 * alone, then look at both.
	 */
	show_poll("poll POLLPRI, until it comes", s, POLLPRI, FOREVER);
	show_poll("poll POLLIN|POLLPRI", s, POLLIN | POLLPRI, 0);
	FD_ZERO(&ex);
	FD_SET(s, &ex);
	CALL("select exceptfds", select(s + 1, NULL, NULL, &ex, NULL));
	say("exceptfds holds it", FD_ISSET(s, &ex) ? "yes" : "no");
	CALL("ioctl SIOCATMARK", ioctl(s, SIOCATMARK, &mark));
	printf("%-44s %d\n", "at mark", mark);
	CALL("recv stops at the mark", recv(s, buf, sizeof(buf), 0));
	CALL("ioctl SIOCATMARK", ioctl(s, SIOCATMARK, &mark));
	printf("%-44s %d\n", "at mark", mark);
	CALL("recv MSG_OOB", recv(s, buf, sizeof(buf), MSG_OOB));
	printf("%-44s %c\n", "urgent byte", buf[0]);
	CALL("ioctl SIOCATMARK after it was read", ioctl(s, SIOCATMARK, &mark));
	printf("%-44s %d\n", "at mark", mark);
	CALL("recv MSG_OOB again", recv(s, buf, sizeof(buf), MSG_OOB));
	CALL("send d after the urgent byte was read", send(c, "d", 1, 0));
	await_in(s);
	CALL("recv d", recv(s, buf, sizeof(buf), 0));
	CALL("ioctl SIOCATMARK after d was read", ioctl(s, SIOCATMARK, &mark));
	printf("%-44s %d\n", "at mark", mark);
	show_poll("poll POLLPRI after it was read", s, POLLIN | POLLPRI, 0);
	unpair(c, s);

	pair(&c, &s);
	CALL("setsockopt(SO_OOBINLINE)", setsockopt(s, SOL_SOCKET, SO_OOBINLINE, &on, sizeof(on)));
	CALL("send de, f MSG_OOB", send(c, "de", 2, 0) + send(c, "f", 1, MSG_OOB));
	show_poll("poll POLLPRI, until the urgent byte comes", s, POLLPRI, FOREVER);
	CALL("recv inline, up to the mark", recv(s, buf, 2, MSG_WAITALL));
	CALL("ioctl SIOCATMARK", ioctl(s, SIOCATMARK, &mark));
	printf("%-44s %d\n", "at mark", mark);
	CALL("recv MSG_OOB with SO_OOBINLINE", recv(s, buf, sizeof(buf), MSG_OOB));
	CALL("recv inline the urgent byte", recv(s, buf, 1, 0));
	show_poll("poll POLLPRI after it was read inline", s, POLLPRI, 0);
	/* not before: over SMC a send waits until the peer has read up to the urgent byte */
	CALL("send g", send(c, "g", 1, 0));
	await_in(s);
	CALL("recv g", recv(s, buf + 1, 1, 0));
	printf("%-44s %.2s\n", "inline bytes", buf);
	unpair(c, s);
}

static void row_trunc_cork(void)
{
	char buf[16] = { 0 };
	int c, s, on = 1, off = 0;

	puts("== MSG_TRUNC, TCP_CORK");
	pair(&c, &s);
	CALL("send 10", send(c, "0123456789", 10, 0));
	await_in(s);
	CALL("recv 4 MSG_TRUNC", recv(s, buf, 4, MSG_TRUNC));
	say("buffer untouched", buf[0] ? "no" : "yes");
	CALL("recv 4 MSG_TRUNC|MSG_PEEK", recv(s, buf, 4, MSG_TRUNC | MSG_PEEK));
	CALL("recv the rest", recv(s, buf, sizeof(buf), 0));
	printf("%-44s %.6s\n", "rest", buf);
	CALL("setsockopt(TCP_CORK, 1)", setsockopt(c, IPPROTO_TCP, TCP_CORK, &on, sizeof(on)));
	CALL("send 5 corked", send(c, "corks", 5, 0));
	show_int_ioctl("SIOCOUTQ while corked", c, SIOCOUTQ);
	show_poll("peer's poll while corked", s, POLLIN, 0);
	CALL("setsockopt(TCP_CORK, 0)", setsockopt(c, IPPROTO_TCP, TCP_CORK, &off, sizeof(off)));
	await_in(s);
	CALL("peer reads it", recv(s, buf, sizeof(buf), 0));
	unpair(c, s);
}

static void row_timeouts(void)
{
	struct timeval tv = { 0, 100000 };
	char *big = calloc(1, 65536);
	int c, s;
	long rc;

	puts("== SO_RCVTIMEO, SO_SNDTIMEO");
	pair(&c, &s);
	CALL("setsockopt(SO_RCVTIMEO)", setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
	CALL("recv, nothing comes", recv(s, big, 16, 0));
	CALL("setsockopt(SO_SNDTIMEO)", setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)));
	do
		rc = send(c, big, 65536, 0);
	while (rc > 0);
	show("send until the peer's buffer is full", rc);
	free(big);
	unpair(c, s);
}

static void show_epoll(const char *what, int ep, int timeout)
{
	struct epoll_event ev[4];
	int rc = epoll_wait(ep, ev, 4, timeout);

	printf("%-44s rc=%d events=%s\n", what, rc, rc > 0 ? revents((int)ev[0].events) : "none");
}

static void row_epoll_flags(void)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP };
	char buf[16];
	int c, s, ep = epoll_create1(EPOLL_CLOEXEC), ep2 = epoll_create1(0);

	puts("== EPOLLRDHUP, EPOLLONESHOT, EPOLLEXCLUSIVE");
	pair(&c, &s);
	CALL("epoll_ctl ADD IN|RDHUP", epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev));
	show_epoll("epoll_wait, nothing yet", ep, 0);
	CALL("peer's shutdown(SHUT_WR)", shutdown(c, SHUT_WR));
	show_epoll("epoll_wait", ep, FOREVER);
	CALL("epoll_ctl DEL", epoll_ctl(ep, EPOLL_CTL_DEL, s, NULL));
	unpair(c, s);

	pair(&c, &s);
	ev.events = EPOLLIN | EPOLLONESHOT;
	CALL("epoll_ctl ADD IN|ONESHOT", epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev));
	CALL("peer sends", send(c, "x", 1, 0));
	show_epoll("epoll_wait", ep, FOREVER);
	show_epoll("epoll_wait again, not re-armed", ep, 0);
	CALL("epoll_ctl MOD re-arms", epoll_ctl(ep, EPOLL_CTL_MOD, s, &ev));
	show_epoll("epoll_wait, re-armed, unread", ep, 0);
	CALL("recv", recv(s, buf, sizeof(buf), 0));
	CALL("epoll_ctl MOD re-arms", epoll_ctl(ep, EPOLL_CTL_MOD, s, &ev));
	show_epoll("epoll_wait, all read", ep, 0);
	unpair(c, s);

	pair(&c, &s);
	ev.events = EPOLLIN | EPOLLEXCLUSIVE;
	CALL("epoll_ctl ADD IN|EXCLUSIVE", epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev));
	CALL("epoll_ctl ADD IN|EXCLUSIVE, second", epoll_ctl(ep2, EPOLL_CTL_ADD, s, &ev));
	CALL("epoll_ctl MOD IN|EXCLUSIVE", epoll_ctl(ep, EPOLL_CTL_MOD, s, &ev));
	CALL("peer sends", send(c, "x", 1, 0));
	show_epoll("epoll_wait, first", ep, FOREVER);
	show_epoll("epoll_wait, second", ep2, FOREVER);
	unpair(c, s);
	close(ep);
	close(ep2);
}

/*
 * One connection waited for by two parties: two epoll instances, then an
 * epoll instance and poll.  A wait that finds nothing for itself must not
 * take the news from the other.  In libsmcr a member of a set of more than
 * 64 goes quiet after 256 looks with nothing to report, and then only its
 * wake descriptor brings it back: the crowd's 66 members (both ends of 33
 * connections, few enough for smcrd's memory over RDMA), looked at 300
 * times, are all quiet when the news comes.
 */
#define CROWD_PAIRS 33
#define QUIET_LOOKS 300

static void quieten_crowd(int crowd)
{
	struct epoll_event out[4];

	for (int i = 0; i < QUIET_LOOKS; i++)
		epoll_wait(crowd, out, 4, 0);
	show_epoll("epoll_wait, the crowd idle", crowd, 0);
}

static void row_shared_wake(void)
{
	struct epoll_event ev = { .events = EPOLLIN }, hup = { .events = EPOLLRDHUP };
	int c[CROWD_PAIRS], s[CROWD_PAIRS], crowd = epoll_create1(EPOLL_CLOEXEC),
	    other = epoll_create1(EPOLL_CLOEXEC);
	char byte;

	puts("== one connection, two parties waiting: epoll and epoll, epoll and poll");
	for (int i = 0; i < CROWD_PAIRS; i++) {
		pair(&c[i], &s[i]);
		epoll_ctl(crowd, EPOLL_CTL_ADD, c[i], &ev);
		epoll_ctl(crowd, EPOLL_CTL_ADD, s[i], &ev);
	}
	quieten_crowd(crowd);
	CALL("epoll_ctl ADD RDHUP, another instance", epoll_ctl(other, EPOLL_CTL_ADD, s[0], &hup));
	CALL("peer sends", send(c[0], "x", 1, 0));
	show_epoll("epoll_wait, the other, nothing for it", other, 50);
	show_epoll("epoll_wait, the crowd", crowd, FOREVER);
	CALL("recv", recv(s[0], &byte, 1, 0));
	CALL("epoll_ctl DEL, the other", epoll_ctl(other, EPOLL_CTL_DEL, s[0], NULL));
	quieten_crowd(crowd);
	CALL("peer sends", send(c[0], "x", 1, 0));
	show_poll("poll RDHUP, nothing for it", s[0], POLLRDHUP, 50);
	show_epoll("epoll_wait, the crowd", crowd, FOREVER);
	CALL("recv", recv(s[0], &byte, 1, 0));
	for (int i = 0; i < CROWD_PAIRS; i++)
		unpair(c[i], s[i]);
	close(crowd);
	close(other);
}

/*
 * epoll's data is the application's, whatever it holds: here, on a pipe,
 * what libsmcr's own tag for the connection s looks like.
 */
static void row_epoll_opaque_data(void)
{
	struct epoll_event ev = { .events = EPOLLIN }, out[4];
	uint64_t like_a_tag = 0x534d430000000000ull;
	uint32_t conn_ev = 0, pipe_ev = 0;
	int c, s, p[2], ep = epoll_create1(EPOLL_CLOEXEC), n, others = 0;
	char buf[4];

	puts("== epoll data that looks like libsmcr's");
	pair(&c, &s);
	CALL("pipe", pipe2(p, O_CLOEXEC | O_NONBLOCK));
	ev.data.u64 = 1;
	CALL("epoll_ctl ADD the connection", epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev));
	ev.data.u64 = like_a_tag | (uint32_t)s;
	CALL("epoll_ctl ADD a pipe, data like a tag", epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev));
	CALL("write the pipe", write(p[1], "p", 1));
	CALL("peer sends", send(c, "x", 1, 0));
	await_in(s);
	/* the two may come in either order, or in two waits */
	for (int round = 0; round < 2 && !(conn_ev && pipe_ev); round++) {
		n = epoll_wait(ep, out, 4, FOREVER);
		for (int i = 0; i < n; i++) {
			if (out[i].data.u64 == 1)
				conn_ev |= out[i].events;
			else if (out[i].data.u64 == ev.data.u64)
				pipe_ev |= out[i].events;
			else
				others++;
		}
	}
	say("epoll_wait: the connection", revents((int)conn_ev));
	say("epoll_wait: the pipe, its data intact", revents((int)pipe_ev));
	show("epoll_wait: events with other data", others);
	CALL("read the pipe", read(p[0], buf, sizeof(buf)));
	CALL("recv", recv(s, buf, sizeof(buf), 0));
	show_epoll("epoll_wait, all read", ep, 0);
	CALL("epoll_ctl DEL the pipe", epoll_ctl(ep, EPOLL_CTL_DEL, p[0], NULL));
	CALL("epoll_ctl DEL the pipe again", epoll_ctl(ep, EPOLL_CTL_DEL, p[0], NULL));
	close(p[0]);
	close(p[1]);
	close(ep);
	unpair(c, s);
}

/*
 * Sends one byte on *fd once the main thread is likely asleep: a wakeup to
 * deliver (sent sooner, the row prints the same and tests a little less).
 */
static void *send_later(void *fd)
{
	usleep(300000);
	send(*(int *)fd, "w", 1, 0);
	return NULL;
}

/* How the inner epoll instance is waited for: by an outer one, poll, ppoll, select, pselect. */
enum outer { BY_EPOLL, BY_POLL, BY_PPOLL, BY_SELECT, BY_PSELECT };

/*
 * A daemon that dup2()s one file of its own onto every high descriptor
 * (where libsmcr keeps its own), closes them again, and goes on using its
 * connections, asleep in epoll and in recv: every wakeup still comes, and
 * nothing is written into its file.
 */
static void row_dup2_over_high(void)
{
	char path[] = "/tmp/semprobe-dup2.XXXXXX", buf[4];
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 7 };
	int file = mkstemp(path), ep = epoll_create1(EPOLL_CLOEXEC), c, s, failed = 0;
	struct rlimit rl, saved;
	struct stat st;
	pthread_t t;

	puts("== dup2 onto every high descriptor");
	unlink(path);
	/*
	 * A limit a storm can cover (libsmcr keeps its own at half of it), and
	 * room above it up to the hard limit, where libsmcr moves its own
	 * once the application has taken every number below.
	 */
	getrlimit(RLIMIT_NOFILE, &rl);
	saved = rl;
	rl.rlim_cur = rl.rlim_cur < 1024 ? rl.rlim_cur : 1024;
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_cur + 64 > rl.rlim_max)
		rl.rlim_cur = rl.rlim_max - 64;
	CALL("setrlimit(RLIMIT_NOFILE) to at most 1024", setrlimit(RLIMIT_NOFILE, &rl));
	pair(&c, &s);
	CALL("epoll_ctl ADD", epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev));
	CALL("peer sends", send(c, "a", 1, 0));
	show_epoll("epoll_wait", ep, FOREVER);
	CALL("recv", recv(s, buf, sizeof(buf), 0));
	for (int fd = HIGH_FDS; fd < (int)rl.rlim_cur; fd++)
		failed += dup2(file, fd) != fd;
	show("dup2 onto the high descriptors, failed", failed);
	pthread_create(&t, NULL, send_later, &c);
	show_epoll("epoll_wait, sent while asleep", ep, FOREVER);
	pthread_join(t, NULL);
	CALL("recv", recv(s, buf, sizeof(buf), 0));
	pthread_create(&t, NULL, send_later, &s);
	CALL("peer's recv, sent while asleep", recv(c, buf, sizeof(buf), 0));
	pthread_join(t, NULL);
	CALL("close_range of the high descriptors", close_range(HIGH_FDS, ~0u, 0));
	CALL("peer sends", send(c, "b", 1, 0));
	show_epoll("epoll_wait", ep, FOREVER);
	CALL("recv", recv(s, buf, sizeof(buf), 0));
	CALL("fstat the file", fstat(file, &st));
	show("its size", (long)st.st_size);
	close(file);
	close(ep);
	unpair(c, s);
	setrlimit(RLIMIT_NOFILE, &saved);
}

static int wait_outer(enum outer how, int inner, int outer_ep, int timeout_ms)
{
	struct pollfd p = { .fd = inner, .events = POLLIN };
	struct timespec ts = { timeout_ms / 1000, timeout_ms % 1000 * 1000000L };
	struct timeval tv = { timeout_ms / 1000, timeout_ms % 1000 * 1000 };
	struct epoll_event ev;
	fd_set r;
	bool forever = timeout_ms < 0;

	FD_ZERO(&r);
	FD_SET(inner, &r);
	switch (how) {
	case BY_EPOLL:
		return epoll_pwait2(outer_ep, &ev, 1, forever ? NULL : &ts, NULL);
	case BY_POLL:
		return poll(&p, dyn(1), timeout_ms);
	case BY_PPOLL:
		return ppoll(opaque(&p), 1, forever ? NULL : &ts, NULL);
	case BY_SELECT:
		return select(inner + 1, &r, NULL, NULL, forever ? NULL : &tv);
	default:
		return pselect(inner + 1, &r, NULL, NULL, forever ? NULL : &ts, NULL);
	}
}

/* outer_first: the inner instance goes into the outer one while it is still empty */
static void row_nested(enum outer how, const char *name, bool outer_first)
{
	struct epoll_event ev = { .events = EPOLLIN };
	pthread_t t;
	char buf[8];
	int c, s, inner = epoll_create(1), outer = epoll_create1(0);

	pair(&c, &s);
	printf("== nested epoll, waited for by %s\n", name);
	/* a byte came and was read: the connection's wake-up was spent on it */
	CALL("peer sends", send(c, "u", 1, 0));
	await_in(s);
	CALL("recv", recv(s, buf, sizeof(buf), 0));
	if (outer_first)
		CALL("epoll_ctl ADD the inner to the outer", epoll_ctl(outer, EPOLL_CTL_ADD, inner, &ev));
	CALL("epoll_ctl ADD to the inner", epoll_ctl(inner, EPOLL_CTL_ADD, s, &ev));
	if (!outer_first)
		CALL("epoll_ctl ADD the inner to the outer", epoll_ctl(outer, EPOLL_CTL_ADD, inner, &ev));
	CALL("nothing sent: outer says", wait_outer(how, inner, outer, 0));
	show_epoll("nothing sent: inner says", inner, 0);
	pthread_create(&t, NULL, send_later, &c);
	CALL("sent while asleep: outer says", wait_outer(how, inner, outer, FOREVER));
	pthread_join(t, NULL);
	show_epoll("inner says", inner, 0);
	CALL("recv", recv(s, buf, sizeof(buf), MSG_DONTWAIT));
	CALL("all read: outer says", wait_outer(how, inner, outer, 0));
	CALL("peer sends", send(c, "v", 1, 0));
	await_in(s);
	CALL("unread: outer says", wait_outer(how, inner, outer, FOREVER));
	show_epoll("inner says", inner, 0);
	unpair(c, s);
	close(inner);
	/* the inner's number goes to the next descriptor: a new one for the outer */
	pair(&c, &s);
	CALL("epoll_ctl ADD a socket, the inner closed", epoll_ctl(outer, EPOLL_CTL_ADD, c, &ev));
	CALL("peer sends", send(s, "t", 1, 0));
	CALL("outer says", epoll_wait(outer, &ev, 1, FOREVER));
	unpair(c, s);
	close(outer);
}

/* The interposed calls the rows above leave out, each on a live connection. */
/*
 * A child made by the raw clone system call (as vsftpd isolates a
 * session) holds the connection as a forked one does: its parent's close
 * right after the clone does not end it, and the end comes when the child
 * goes.  (It does not use the connection: one on RDMA is the parent's.)
 */
static void row_raw_clone(void)
{
	char buf[32], go;
	int c, s, status, gate[2];
	long child;

	puts("== a child of the raw clone system call");
	pair(&c, &s);
	if (pipe(gate) != 0) {
		perror("pipe");
		exit(1);
	}
	child = syscall(SYS_clone, (long)SIGCHLD, 0L, 0L, 0L, 0L);
	if (child == 0) {
		close(c);
		_exit(read(gate[0], &go, 1) == 1 ? 0 : 1);     /* holds s until told */
	}
	CALL("clone", child > 0);
	close(s);
	show_poll("the parent's copy closed: the peer's poll", c, POLLIN | POLLRDHUP, 100);
	CALL("the clone goes", write(gate[1], "x", 1));
	CALL("the clone's exit", waitpid((pid_t)child, &status, 0) == child && status == 0);
	CALL("then the peer reads the end", recv(c, buf, sizeof(buf), 0));
	close(gate[0]);
	close(gate[1]);
	close(c);
}

/* The C library's other name for vfork, which it does not declare. */
extern pid_t __vfork(void);

/* A vfork child's exit status, as its parent's waitpid reports it (-1: none). */
static int vfork_child_status(pid_t child)
{
	int status;

	return child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) ?
		       WEXITSTATUS(status) : -1;
}

/*
 * vfork and __vfork (as Python's subprocess starts a program): a child in
 * its parent's memory, holding the connections, that exits at once.  The
 * parent's connection goes on.
 */
static void row_vfork(void)
{
	char buf[4] = { 0 };
	int c, s;

	puts("== vfork and __vfork, each child exiting at once");
	pair(&c, &s);
	pid_t child = vfork();
	if (child == 0)
		_exit(7);
	CALL("vfork: the child's exit status", vfork_child_status(child));
	child = __vfork();
	if (child == 0)
		_exit(8);
	CALL("__vfork: the child's exit status", vfork_child_status(child));
	CALL("then send", send(c, "vfrk", 4, 0));
	CALL("and recv", recv(s, buf, 4, MSG_WAITALL));
	printf("%-44s %.4s\n", "bytes", buf);
	unpair(c, s);
}

/* A child's connection: it connects, sends len bytes of data and ends at once by how. */
static void send_and_end(const char *data, size_t len, void (*how)(int))
{
	struct sockaddr_in a = loopback();
	int c = socket(AF_INET, SOCK_STREAM, 0);

	how(c >= 0 && connect(c, (void *)&a, sizeof(a)) == 0 &&
	    send(c, data, len, 0) == (ssize_t)len ? 0 : 1);
}

/*
 * A child that makes its own connection, sends and ends at once, without
 * closing it: by _exit, then by _Exit.  Its peer reads every byte, then
 * the end, as over TCP, where the kernel sends them after the child has
 * gone.
 */
static void row_sender_ends(void)
{
	static char data[256 * 1024];
	void (*const ends[])(int) = { _exit, _Exit };
	const char *const names[] = { "_exit", "_Exit" };
	char buf[65536];

	puts("== a child sends and ends at once, without close");
	memset(data, 'e', sizeof(data));
	for (unsigned int i = 0; i < 2; i++) {
		size_t got = 0;
		ssize_t n;
		int s, status;
		pid_t child = fork();

		if (child == 0)
			send_and_end(data, sizeof(data), ends[i]);
		s = accept(listener, NULL, NULL);
		while ((n = recv(s, buf, sizeof(buf), 0)) > 0)
			got += (size_t)n;
		printf("%-44s %zu bytes, then rc=%zd\n", names[i], got, n);
		CALL("the child's exit status",
		     waitpid(child, &status, 0) == child && WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		close(s);
		pairs++;
	}
}

/*
 * A child that confines itself as sandboxes do, then uses a connection:
 * RLIMIT_NOFILE 1 (below what an SMC wait watches) and RLIMIT_FSIZE 0 (a
 * line written to a regular file then raises SIGXFSZ, which kills: run it
 * with stderr in a file and a log level that has libsmcr speak at exit).
 * The connection is the child's own, both ends: over RDMA one made before
 * a fork stays with the parent.
 */
static void row_confined_child(void)
{
	const struct rlimit one = { 1, 1 }, none = { 0, 0 };
	const struct rlimit64 none64 = { 0, 0 };
	char buf[8] = { 0 };
	int c, s, status;
	pid_t child;

	puts("== a child that lowers its limits, then uses a connection");
	fflush(stdout);
	child = fork();
	if (child == 0) {
		pair(&c, &s);
		CALL("child: setrlimit(RLIMIT_NOFILE, 1)", setrlimit(RLIMIT_NOFILE, &one));
		CALL("child: setrlimit(RLIMIT_FSIZE, 0)", setrlimit(RLIMIT_FSIZE, &none));
		CALL("child: setrlimit64(RLIMIT_CORE, 0)", setrlimit64(RLIMIT_CORE, &none64));
		show_poll("child: poll, nothing yet", s, POLLIN, 0);
		CALL("child: send", send(c, "ping", 4, 0));
		show_poll("child: poll for it", s, POLLIN, FOREVER);
		CALL("child: recv", recv(s, buf, 4, 0));
		printf("%-44s %.4s\n", "child: bytes", buf);
		exit(0);                /* through the destructors, which may speak */
	}
	CALL("the child's end", waitpid(child, &status, 0) == child ? status : -1);
}

/*
 * Every form of exec and spawn (system and popen too: a shell that finds
 * no such program), of a program that does not exist: each
 * returns as without libsmcr, which hands the connections' holds to the
 * next image before an exec and takes them back after, and the connection
 * goes on.
 */
static void row_exec_fails(void)
{
	char *const argv[] = { "smcr-no-such-program", NULL };
	const char *gone = "/nonexistent/smcr-no-such-program";
	char buf[4] = { 0 };
	pid_t child;
	int c, s;

	puts("== exec or spawn of a program that does not exist, every form");
	pair(&c, &s);
	CALL("execve", execve(gone, argv, environ));
	CALL("execv", execv(gone, argv));
	CALL("execvp, searched", execvp(argv[0], argv));
	CALL("execvpe, searched", execvpe(argv[0], argv, environ));
	CALL("execl", execl(gone, argv[0], (char *)NULL));
	CALL("execlp, searched", execlp(argv[0], argv[0], (char *)NULL));
	CALL("execle", execle(gone, argv[0], (char *)NULL, environ));
	CALL("fexecve of no descriptor", fexecve(-1, argv, environ));
	CALL("execveat", execveat(AT_FDCWD, gone, argv, environ, 0));
	printf("%-44s %s\n", "posix_spawn",
	       strerrorname_np(posix_spawn(&child, gone, NULL, NULL, argv, environ)));
	printf("%-44s %s\n", "posix_spawnp, searched",
	       strerrorname_np(posix_spawnp(&child, argv[0], NULL, NULL, argv, environ)));
	CALL("system, its shell's status", system("smcr-no-such-program 2>/dev/null"));
	FILE *shell = popen("smcr-no-such-program 2>/dev/null", "r");

	CALL("popen, its shell's status", shell ? pclose(shell) : -1);
	CALL("then send", send(c, "exec", 4, 0));
	CALL("and recv", recv(s, buf, 4, MSG_WAITALL));
	printf("%-44s %.4s\n", "bytes", buf);
	unpair(c, s);
}

/*
 * vsftpd's pre-login process: a connection accepted but not yet used is
 * handed to a child of the raw clone system call, which puts it on a
 * descriptor of its own, closes the number it came by, and installs a
 * seccomp filter that kills on the socket calls (recvfrom, sendto), waits
 * (poll, ppoll) and futex, before its first read or write.  What libsmcr
 * must still do on that connection has to be done before the filter goes
 * in.  The client connects without blocking and says nothing until the
 * child is on its way, so that no Accept has gone out before it confines.
 * The child closes its copy of the listener first, so that its
 * confinement leaves the parent's listener as it was.
 */
static void row_sandboxed_handoff(void)
{
	static const int killed[] = { SYS_recvfrom, SYS_sendto, SYS_poll, SYS_ppoll, SYS_futex };
	struct sock_filter code[2 + 2 * (sizeof(killed) / sizeof(killed[0]))];
	struct sock_fprog prog = { .filter = code };
	struct sockaddr_in a = loopback();
	char buf[8] = { 0 };
	int c, s, status;
	long child;

	puts("== an unused connection, handed to a sandboxed child of the raw clone");
	code[prog.len++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
							 offsetof(struct seccomp_data, nr));
	for (size_t i = 0; i < sizeof(killed) / sizeof(killed[0]); i++) {
		code[prog.len++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
								 (unsigned int)killed[i], 0, 1);
		code[prog.len++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
								 SECCOMP_RET_KILL_PROCESS);
	}
	code[prog.len++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (c < 0 || (connect(c, (void *)&a, sizeof(a)) != 0 && errno != EINPROGRESS) ||
	    (s = accept(listener, NULL, NULL)) < 0) {
		perror("handoff");
		exit(1);
	}
	fflush(stdout);
	child = syscall(SYS_clone, (long)SIGCHLD, 0L, 0L, 0L, 0L);
	if (child == 0) {
		close(listener);
		close(c);
		if (dup2(s, 20) != 20 || close(s) != 0 ||
		    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
		    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
			_exit(3);
		_exit(read(20, buf, 4) == 4 && write(20, "pong", 4) == 4 ? 0 : 4);
	}
	CALL("clone", child > 0);
	close(s);
	show_poll("the client's poll", c, POLLOUT, FOREVER);
	CALL("blocking again", fcntl(c, F_SETFL, 0));
	CALL("send", send(c, "ping", 4, 0));
	CALL("recv, all of it", recv(c, buf, 4, MSG_WAITALL));
	printf("%-44s %.4s\n", "bytes", buf);
	CALL("the child's end", waitpid((pid_t)child, &status, 0) == child ? status : -1);
	close(c);
}

/* The next line the peer c got, printed as what. */
/*
 * A sandboxed child, as vsftpd's and OpenSSH's: it sets up a connection,
 * then installs a seccomp filter that kills the process on bpf (a call of
 * libsmcr's fast path: smcrd's maps), goes on using the connection, and
 * makes a new one.  Run last: the filter makes libsmcr take the SMC mark
 * off the listener, which the parent shares.  The new connection stays
 * on TCP (CONFINED), as semantics.sh expects.
 */
static void row_seccomp_child(void)
{
	struct sock_filter kill_bpf[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_bpf, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = 4, .filter = kill_bpf };
	char buf[8] = { 0 };
	int c, s, status;
	pid_t child;

	puts("== a child that installs a seccomp filter, then uses connections");
	fflush(stdout);
	child = fork();
	if (child == 0) {
		pair(&c, &s);
		CALL("child: send before", send(c, "a", 1, 0));
		CALL("child: recv before", recv(s, buf, 1, 0));
		CALL("child: PR_SET_NO_NEW_PRIVS", prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
		CALL("child: PR_SET_SECCOMP, bpf kills",
		     prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog));
		CALL("child: send after", send(c, "ping", 4, 0));
		show_poll("child: poll for it", s, POLLIN, FOREVER);
		CALL("child: recv after", recv(s, buf, 4, 0));
		printf("%-44s %.4s\n", "child: bytes", buf);
		unpair(c, s);
		pair(&c, &s);
		CALL("child: new connection, send", send(c, "pong", 4, 0));
		CALL("child: new connection, recv", recv(s, buf, 4, MSG_WAITALL));
		printf("%-44s %.4s\n", "child: bytes", buf);
		exit(0);
	}
	CALL("the child's end", waitpid(child, &status, 0) == child ? status : -1);
}

static void show_line(const char *what, int c)
{
	char line[64] = { 0 };

	for (size_t n = 0; n < sizeof(line) - 1 && recv(c, &line[n], 1, 0) == 1; n++)
		if (line[n] == '\n')
			break;
	printf("%-44s %s", what, line);
}

/*
 * stdio on a connection: C's streams make their own read and write calls,
 * which no preload sees, so libsmcr must give them streams of its own: a
 * stream fdopen() makes, and standard output while dup2() has put a
 * connection on descriptor 1 (as a forked child does before it prints).
 */
static void row_stdio(void)
{
	char got[64] = { 0 };
	int c, s, saved;
	FILE *f;

	puts("== stdio streams on a connection");
	pair(&c, &s);
	f = fdopen(dup(s), "r+");
	CALL("fdopen", f != NULL);
	fprintf(f, "fprintf %d\n", 42);
	CALL("fflush", fflush(f));
	show_line("the peer reads", c);
	CALL("the peer sends a line", send(c, "a line back\n", 12, 0));
	printf("%-44s %s", "fgets", fgets(got, sizeof(got), f));
	CALL("fclose", fclose(f));
	saved = dup(STDOUT_FILENO);
	dup2(s, STDOUT_FILENO);
	printf("printf while 1 is the connection\n");
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	show_line("the peer reads from our stdout", c);
	say("stdout still line-buffered (setvbuf)", __flbf(stdout) ? "yes" : "no");
	unpair(c, s);
}

static void row_every_call(void)
{
	char buf[64] = { 0 }, file[] = "/tmp/semprobe.XXXXXX";
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	struct iovec iov = { buf, 4 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct mmsghdr mm = { .msg_hdr = msg };
	struct epoll_event ev = { .events = EPOLLIN };
	int c, s, d, p[2], f = mkstemp(file), ep = epoll_create1(0);
	off_t off = 0;
	off64_t off64 = 0;

	puts("== every other interposed call");
	unlink(file);
	CALL("write the file", write(f, "filedata", 8));
	pair(&c, &s);
	CALL("getsockname", getsockname(c, (void *)&a, &len));
	CALL("getpeername", getpeername(s, (void *)&a, &len));
	CALL("getsockopt(SO_ERROR)", getsockopt(c, SOL_SOCKET, SO_ERROR, buf, &len));
	CALL("fcntl(F_GETFL) O_NONBLOCK", fcntl(c, F_GETFL) & O_NONBLOCK);
	CALL("fcntl64(F_SETFL, O_NONBLOCK)", fcntl64(s, F_SETFL, O_NONBLOCK));
	CALL("recvfrom, nothing yet", recvfrom(s, buf, 4, 0, NULL, NULL));
	CALL("sendto", sendto(c, "abcd", 4, 0, NULL, 0));
	CALL("sendfile", sendfile(c, f, &off, 4));
	CALL("sendfile64", sendfile64(c, f, &off64, 8));
	CALL("writev", writev(c, &iov, 1));
	CALL("sendmsg", sendmsg(c, &msg, 0));
	CALL("sendmmsg", sendmmsg(c, &mm, 1, 0));
	CALL("epoll_ctl ADD", epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev));
	CALL("epoll_pwait", epoll_pwait(ep, &ev, 1, FOREVER, NULL));
	CALL("ppoll (fortified)",
	     ppoll(&(struct pollfd){ .fd = s, .events = POLLIN }, dyn(1), NULL, NULL));
	CALL("recvfrom", recvfrom(s, opaque(buf), 4, 0, (void *)&a, &len));
	printf("%-44s %.4s\n", "bytes", buf);
	CALL("recvfrom (fortified)", recvfrom(s, buf, dyn(4), 0, NULL, NULL));
	CALL("recv (fortified)", recv(s, buf, dyn(4), 0));
	CALL("read (fortified)", read(s, buf, dyn(4)));
	printf("%-44s %.4s\n", "bytes", buf);
	CALL("read", read(s, opaque(buf), 4));
	CALL("readv", readv(s, &iov, 1));
	CALL("recvmsg", recvmsg(s, &msg, 0));
	CALL("recvmmsg", recvmmsg(s, &mm, 1, 0, NULL));
	CALL("pipe", pipe(p));
	/* one CPU allowed: a wait that no longer spins still sees the bytes come */
	cpu_set_t all, one;
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu() > 0 ? sched_getcpu() : 0, &one);
	CALL("sched_getaffinity", sched_getaffinity(0, sizeof(all), &all));
	CALL("sched_setaffinity to one CPU", sched_setaffinity(0, sizeof(one), &one));
	CALL("send 3", send(c, "xyz", 3, 0));
	await_in(s);
	CALL("splice socket to pipe", splice(s, NULL, p[1], NULL, 3, 0));
	CALL("sched_setaffinity back", sched_setaffinity(0, sizeof(all), &all));
	CALL("splice pipe to socket", splice(p[0], NULL, c, NULL, 3, 0));
	await_in(s);
	d = dup(s);
	CALL("dup, read through it", read(d, buf, 3));
	CALL("dup2 is the descriptor asked for", dup2(c, d) == d);
	CALL("dup3 is the descriptor asked for", dup3(s, d, O_CLOEXEC) == d);
	CALL("close the dup", close(d));
	CALL("fcntl64(listener, F_SETFL, O_NONBLOCK)", fcntl64(listener, F_SETFL, O_NONBLOCK));
	CALL("accept4, nothing waits", accept4(listener, NULL, NULL, SOCK_NONBLOCK));
	CALL("close_range of the file", close_range((unsigned int)f, (unsigned int)f, 0));
	unpair(c, s);
	close(p[0]);
	close(p[1]);
	close(ep);
}

static void listen_on_port(void)
{
	struct sockaddr_in a = loopback();
	int one = 1;

	listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (listener < 0 || setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(listener, (void *)&a, sizeof(a)) || listen(listener, 16)) {
		perror("listener");
		exit(1);
	}
}

int main(int argc, char **argv)
{
	struct in_addr check;

	if (argc != 3 || inet_pton(AF_INET, argv[1], &check) != 1 || (port = atoi(argv[2])) <= 0) {
		fprintf(stderr, "usage: semprobe IPV4_ADDR PORT\n");
		return 2;
	}
	addr = argv[1];
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, on_sigpipe);
	alarm(HANG_SECONDS);
	listen_on_port();
	row_sigpipe();
	row_shutdown();
	row_shutdown_at_once();
	row_queues();
	row_oob();
	row_trunc_cork();
	row_timeouts();
	row_epoll_flags();
	row_epoll_opaque_data();
	row_shared_wake();
	row_nested(BY_EPOLL, "epoll", false);
	row_nested(BY_EPOLL, "epoll, which held it first", true);
	row_nested(BY_POLL, "poll", false);
	row_nested(BY_PPOLL, "ppoll", false);
	row_nested(BY_SELECT, "select", false);
	row_nested(BY_PSELECT, "pselect", false);
	row_raw_clone();
	row_exec_fails();
	row_vfork();
	row_sender_ends();
	row_confined_child();
	row_stdio();
	row_dup2_over_high();
	row_every_call();
	row_sandboxed_handoff();
	row_seccomp_child();
	closefrom(listener);
	printf("connections: %d\n", pairs);
	return 0;
}
