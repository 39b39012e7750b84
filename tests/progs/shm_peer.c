/*
 * shm_peer - exercises smcrd's shared-memory buffer broker through libsmcr's
 * client (shm_broker_client.h), as the two ends of a TCP connection on one
 * host will, and as impostors would.
 *
 *   shm_peer pair ADDR BYTES  two processes at the ends of one connection
 *            (ADDR 127.0.0.1, ::1, or "mapped": an IPv6 server, IPv4 client)
 *            each offer BYTES with a wake-up channel and attach the other's
 *            offer; what one writes the other must see, and what one sends
 *            on the channel it attached the other must read from its own,
 *            which no other end can read; a third
 *            process, the wrong token, a
 *            process's own end and sockets mimicking the connection (UDP,
 *            another network namespace, a forged port) must all be refused.
 *            The offering socket itself, in another process, resumes its
 *            offer (and only that), and a stranger cannot withdraw it.
 *            Then prints "holding" and waits for SIGUSR1; withdraws both
 *            offers, prints "withdrawn" and waits for SIGUSR1 again.
 *   shm_peer orphan BYTES  a child offers BYTES to its parent, prints
 *            "offerer PID" and waits to be killed; on SIGUSR1 the parent,
 *            the peer, tries to attach (it must be refused: the offer died
 *            with its owner).
 *   shm_peer bad BYTES  offers that smcrd must refuse (bad sockets, bad memfds,
 *            wake-up channels that are not unix stream socket pairs), BYTES beyond
 *            max_memory; a socket connected to itself attaching its own offer.
 *   shm_peer junk  malformed requests carrying descriptors, straight to
 *            smcrd's socket: each gets the connection closed.
 *
 * Prints "ok: CHECK" or "FAILED: CHECK: why" per check; exits 1 if any failed.
 * Every wait is bounded (SO_RCVTIMEO, alarm) so that it never hangs a test.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "control.h"
#include "control_proto.h"
#include "fork.h"
#include "log.h"
#include "shm_broker_client.h"
#include "sys.h"

#define TIMEOUT_S 20

static int failures;

static void __attribute__((format(printf, 2, 3))) check(bool ok, const char *fmt, ...)
{
	va_list ap;

	printf(ok ? "ok: " : "FAILED: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	failures += !ok;
}

static const char *rc_str(int rc)
{
	return rc ? strerror(-rc) : "success";
}

static void expect_rc(int rc, int want, const char *what)
{
	if (rc == want)
		check(true, "%s: %s", what, rc_str(rc));
	else
		check(false, "%s: got %s, expected %s", what, rc_str(rc), rc_str(want));
}

static void die(const char *what)
{
	printf("FAILED: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* The impostor's attempt: anything but EACCES is a failure. */
static void expect_refused(int sock, uint64_t token, const char *what)
{
	int memfd, tx;
	int rc = smcr_shm_attach(sock, token, &memfd, &tx);

	if (rc == 0) {
		close(memfd);
		close(tx);
	}
	expect_rc(rc, -EACCES, what);
	if (rc && (memfd != -1 || tx != -1))
		check(false, "%s: a refused attach left descriptors %d %d", what, memfd, tx);
}

static void expect_attach(int sock, uint64_t token, const char *what)
{
	int memfd, tx;
	int rc = smcr_shm_attach(sock, token, &memfd, &tx);

	expect_rc(rc, 0, what);
	if (rc == 0) {
		close(memfd);
		close(tx);
	}
}

/*
 * RESUME on sock: token 0 expects nothing offered on it (-ENOENT), else
 * that offer, with the state, buffer and channel, and the other end's buffer and tx.
 */
static void expect_resume(int sock, uint64_t token, const char *what)
{
	uint64_t got = 0;
	int fds[SMCR_SHM_RESUMED_BOTH], n;
	int rc = smcr_shm_resume(sock, &got, fds, &n);

	for (int i = 0; i < n; i++)
		close(fds[i]);
	if (!token) {
		expect_rc(rc, -ENOENT, what);
		return;
	}
	expect_rc(rc, 0, what);
	check(rc || (got == token && n == SMCR_SHM_RESUMED_BOTH), "%s: token and six descriptors",
	      what);
}

static void xsend(int fd, const void *buf, size_t n)
{
	if (send(fd, buf, n, MSG_NOSIGNAL) != (ssize_t)n)
		die("send on the TCP connection");
}

static void xrecv(int fd, void *buf, size_t n)
{
	if (recv(fd, buf, n, MSG_WAITALL) != (ssize_t)n)
		die("recv on the TCP connection");
}

static void bounded(int fd)
{
	struct timeval tv = { .tv_sec = TIMEOUT_S };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

static socklen_t make_addr(const char *text, uint16_t port, struct sockaddr_storage *ss)
{
	struct sockaddr_in *in = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, text, &in->sin_addr) == 1) {
		in->sin_family = AF_INET;
		in->sin_port = htons(port);
		return sizeof(*in);
	}
	if (inet_pton(AF_INET6, text, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		return sizeof(*in6);
	}
	fprintf(stderr, "shm_peer: bad address %s\n", text);
	exit(2);
}

static uint16_t port_of(int fd, bool peer)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if ((peer ? getpeername : getsockname)(fd, (struct sockaddr *)&ss, &len))
		die("getsockname");
	return ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
					     : ((struct sockaddr_in6 *)&ss)->sin6_port);
}

/* A listener on addr (port 0: any); "::" listens for IPv4 too. */
static int listener(const char *addr, uint16_t port)
{
	struct sockaddr_storage ss;
	socklen_t len = make_addr(addr, port, &ss);
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), off = 0, on = 1;

	if (fd < 0)
		die("socket");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
	if (ss.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off));
	if (bind(fd, (struct sockaddr *)&ss, len) || listen(fd, 8))
		die("bind/listen");
	return fd;
}

/* A TCP connection from (from_addr, from_port: 0 any) to addr:port; -1 if refused. */
static int connect_to(const char *from_addr, uint16_t from_port, const char *addr, uint16_t port)
{
	struct sockaddr_storage ss, local;
	socklen_t len = make_addr(addr, port, &ss);
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), on = 1;

	if (fd < 0)
		die("socket");
	if (from_addr) {
		socklen_t llen = make_addr(from_addr, from_port, &local);
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
		if (bind(fd, (struct sockaddr *)&local, llen)) {
			close(fd);
			return -1;
		}
	}
	if (connect(fd, (struct sockaddr *)&ss, len)) {
		close(fd);
		return -1;
	}
	bounded(fd);
	return fd;
}

static int accept_one(int lfd)
{
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		die("accept");
	bounded(fd);
	return fd;
}

/* Both ends of a loopback connection; *lfd: its listener, left open. */
static void tcp_pair(const char *addr, int *lfd, int *client, int *server)
{
	bool mapped = strcmp(addr, "mapped") == 0;

	*lfd = listener(mapped ? "::" : addr, 0);
	*client = connect_to(NULL, 0, mapped ? "127.0.0.1" : addr, port_of(*lfd, false));
	if (*client < 0)
		die("connect");
	*server = accept_one(*lfd);
}

static void *map(int memfd, uint64_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (p == MAP_FAILED)
		die("mmap");
	return p;
}

static uint8_t pattern(uint64_t i, uint8_t seed)
{
	return (uint8_t)(i * 7 + seed);
}

/* What each end of a pair holds. */
struct end {
	const char *name;
	int sock;
	uint64_t bytes;
	uint64_t token, peer_token;     /* its own offer, the other end's */
	uint8_t *rmb;                   /* its own buffer, which the peer writes */
	uint8_t *peer_rmb;              /* the other end's buffer, attached */
	struct smcr_wake_channel wake;  /* its own channel, which the peer sends on */
	int peer_tx;                    /* the other end's channel's tx, attached */
};

/* A new channel from smcr_sys_wake_channel, or the test dies. */
static struct smcr_wake_channel new_channel(void)
{
	struct smcr_wake_channel ch;
	int rc = smcr_sys_wake_channel(&ch);

	if (rc) {
		errno = -rc;
		die("smcr_sys_wake_channel");
	}
	return ch;
}

static void close_channel(struct smcr_wake_channel ch)
{
	close(ch.rx);
	close(ch.tx);
}

/* smcr_shm_offer with a fresh connection state of one page, as libsmcr leaves it. */
static int offer_state(int sock, int memfd, uint64_t bytes, struct smcr_wake_channel wake,
		       uint64_t *token)
{
	int state = smcr_sys_memfd_sealed((uint64_t)sysconf(_SC_PAGESIZE));
	int rc = state < 0 ? state : smcr_shm_offer(sock, memfd, bytes, wake, state, token, NULL);

	if (state >= 0)
		close(state);
	return rc;
}

/* memfd of bytes, mapped, and a channel; offered to sock's peer. */
static void offer_rmb(struct end *e)
{
	int memfd = smcr_sys_memfd_sealed(e->bytes);

	if (memfd < 0) {
		errno = -memfd;
		die("smcr_sys_memfd_sealed");
	}
	e->rmb = map(memfd, e->bytes);
	e->wake = new_channel();
	int rc = offer_state(e->sock, memfd, e->bytes, e->wake, &e->token);
	close(memfd);                   /* the mapping and smcrd's copy keep it */
	char what[64];
	snprintf(what, sizeof(what), "%s offers its buffer", e->name);
	expect_rc(rc, 0, what);
	if (rc)
		exit(1);
	xsend(e->sock, &e->token, sizeof(e->token));
	xrecv(e->sock, &e->peer_token, sizeof(e->peer_token));
}

static bool cloexec(int fd)
{
	int flags = fcntl(fd, F_GETFD);
	return flags >= 0 && (flags & FD_CLOEXEC);
}

static void attach_peer(struct end *e)
{
	char what[64];
	struct stat st;
	int memfd;
	int rc = smcr_shm_attach(e->sock, e->peer_token, &memfd, &e->peer_tx);

	snprintf(what, sizeof(what), "%s attaches the other end's buffer", e->name);
	expect_rc(rc, 0, what);
	if (rc)
		exit(1);
	check(fstat(memfd, &st) == 0 && (uint64_t)st.st_size == e->bytes,
	      "%s: the attached buffer has the offered size", e->name);
	check(cloexec(memfd) && cloexec(e->peer_tx),
	      "%s: the attached memfd and channel are close-on-exec", e->name);
	e->peer_rmb = map(memfd, e->bytes);
	close(memfd);
}

/*
 * Wakes the other end through the channel we attached; reads our own, which
 * the other end attached: the byte it sent proves that the channel smcrd
 * handed over is the very one offered.  What we got is only a tx: nothing
 * comes back on it.
 */
static void exchange_wakeups(struct end *e, uint8_t seed, uint8_t peer_seed)
{
	uint8_t wake = (uint8_t)(0x40 + seed), got = 0;
	char c = 'w';

	check(send(e->peer_tx, &wake, 1, MSG_DONTWAIT | MSG_NOSIGNAL) == 1,
	      "%s sends on the other end's channel", e->name);
	xsend(e->sock, &c, 1);          /* "woken": after the send, so the byte is there */
	xrecv(e->sock, &c, 1);
	ssize_t n = recv(e->wake.rx, &got, 1, MSG_DONTWAIT);
	check(n == 1 && got == 0x40 + peer_seed,
	      "%s reads from its own channel what the other end sent (0x%x)", e->name, got);
	check(recv(e->wake.rx, &got, 1, MSG_DONTWAIT) < 0 && errno == EAGAIN,
	      "%s: its channel is empty again", e->name);
	check(recv(e->peer_tx, &got, 1, MSG_DONTWAIT) == 0,
	      "%s: the channel it attached carries nothing its way", e->name);
	close(e->peer_tx);
}

/* Writes seed's pattern into the peer's buffer; checks the peer's in ours. */
static void exchange_data(struct end *e, uint8_t seed, uint8_t peer_seed)
{
	uint64_t bad = 0;
	char c = 'd';

	for (uint64_t i = 0; i < e->bytes; i++)
		e->peer_rmb[i] = pattern(i, seed);
	xsend(e->sock, &c, 1);          /* "written": as a CDC message will say */
	xrecv(e->sock, &c, 1);
	for (uint64_t i = 0; i < e->bytes; i++)
		bad += e->rmb[i] != pattern(i, peer_seed);
	check(bad == 0, "%s sees every byte the other end wrote into its buffer (%llu wrong)",
	      e->name, (unsigned long long)bad);
}

static void enter_new_netns(void)
{
	struct ifreq ifr = { .ifr_flags = IFF_UP | IFF_LOOPBACK | IFF_RUNNING };
	int fd = -1;

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	if (unshare(CLONE_NEWNET) || (fd = socket(AF_INET, SOCK_DGRAM, 0)) < 0 ||
	    ioctl(fd, SIOCSIFFLAGS, &ifr))
		die("a network namespace of our own");
	close(fd);
}

/*
 * A third process, knowing both tokens, tries every way in.  The pair is
 * client (cport) <-> server (sport) on addr; the listener still listens.
 * server_sock: the offering server's own socket (inherited).
 */
static void impostor(const char *addr, uint16_t sport, uint16_t cport, int server_sock,
		     uint64_t server_token, uint64_t client_token)
{
	const char *caddr = strcmp(addr, "mapped") == 0 ? "127.0.0.1" : addr;
	int fd, pipefd[2];

	/* Another connection to the same server port: same server, not the peer. */
	fd = connect_to(NULL, 0, caddr, sport);
	expect_refused(fd, server_token, "a third process's own connection to the server port");
	expect_refused(fd, client_token, "the same, for the client's buffer");
	expect_refused(fd, 0, "the same, with token 0");
	close(fd);

	/* The offering socket itself, passed on to another process: it may resume, not attach. */
	expect_refused(server_sock, server_token, "the offering socket, held by another process");
	expect_resume(server_sock, server_token, "the offering socket, held by another process");

	/* Nothing was offered on the third process's own connection to resume. */
	fd = connect_to(NULL, 0, caddr, sport);
	expect_resume(fd, 0, "a third process's own connection");

	/* A WITHDRAW from a stranger must not end the offers (checked by the attaches after). */
	smcr_shm_withdraw(server_token, -1);
	smcr_shm_withdraw(client_token, fd);
	close(fd);

	/* Forging the client's end: its port is taken, so the kernel must refuse. */
	fd = connect_to(caddr, cport, caddr, sport);
	check(fd < 0, "no second TCP socket can have the client end's addresses");
	if (fd >= 0) {
		expect_refused(fd, server_token, "a forged client end");
		close(fd);
	}

	/* UDP has its own ports: the same four addresses, but not a TCP connection. */
	struct sockaddr_storage local, remote;
	socklen_t llen = make_addr(caddr, cport, &local), rlen = make_addr(caddr, sport, &remote);
	fd = socket(local.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&local, llen) ||
	    connect(fd, (struct sockaddr *)&remote, rlen))
		die("a UDP socket with the client end's addresses");
	expect_refused(fd, server_token, "a UDP socket with the client end's addresses");
	close(fd);

	/* Not a socket at all. */
	if (pipe2(pipefd, O_CLOEXEC))
		die("pipe");
	expect_refused(pipefd[0], server_token, "a pipe");
	close(pipefd[0]);
	close(pipefd[1]);

	/* Exactly the same TCP connection, rebuilt in a network namespace of our own. */
	enter_new_netns();
	int lfd = listener(strcmp(addr, "mapped") == 0 ? "::" : addr, sport);
	fd = connect_to(caddr, cport, caddr, sport);
	if (fd < 0)
		die("the same connection in another namespace");
	int accepted = accept_one(lfd);
	expect_refused(fd, server_token, "the client end rebuilt in another network namespace");
	expect_refused(accepted, client_token,
		       "the server end rebuilt in another network namespace");
	exit(failures ? 1 : 0);
}

static void wait_usr1(const sigset_t *usr1)
{
	int sig;

	alarm(TIMEOUT_S * 3);
	sigwait(usr1, &sig);
	alarm(0);
}

static int reap(pid_t pid)
{
	int status;

	return waitpid(pid, &status, 0) == pid && WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

static int run_pair(const char *addr, uint64_t bytes, const sigset_t *usr1)
{
	int lfd, client, server;
	char c;

	tcp_pair(addr, &lfd, &client, &server);
	fflush(stdout);
	pid_t child = fork();
	if (child < 0)
		die("fork");
	if (child == 0) {                       /* the client end */
		struct end e = { .name = "client", .sock = client, .bytes = bytes };
		close(server);
		close(lfd);
		offer_rmb(&e);
		xrecv(client, &c, 1);           /* the impostor has had its go */
		attach_peer(&e);
		exchange_data(&e, 0x5c, 0xa3);
		exchange_wakeups(&e, 0x5c, 0xa3);
		expect_attach(client, e.peer_token, "the peer attaching again (another of its processes)");
		expect_resume(client, e.token, "the client end resuming its own");
		xrecv(client, &c, 1);           /* withdraw */
		smcr_shm_withdraw(e.token, -1);
		xsend(client, &c, 1);
		(void)!recv(client, &c, 1, 0);  /* until the server closes */
		exit(failures ? 1 : 0);
	}
	struct end e = { .name = "server", .sock = server, .bytes = bytes };
	close(client);
	offer_rmb(&e);

	/* Before the real attach, so that a refusal is not just "attached already". */
	expect_refused(server, e.token, "a process attaching its own offer with its own end");
	expect_refused(server, e.peer_token ^ 1, "the peer with a wrong token");
	/* token 0 asks for whatever the other end offered: the peer gets it, as a server's reach */
	expect_attach(server, 0, "the peer with token 0");
	fflush(stdout);
	pid_t third = fork();
	if (third < 0)
		die("fork");
	if (third == 0)
		impostor(addr, port_of(server, false), port_of(server, true), server, e.token,
			 e.peer_token);
	check(reap(third) == 0, "the third process was refused everywhere");

	xsend(server, &c, 1);
	attach_peer(&e);
	exchange_data(&e, 0xa3, 0x5c);
	exchange_wakeups(&e, 0xa3, 0x5c);
	printf("holding\n");
	fflush(stdout);
	wait_usr1(usr1);
	smcr_shm_withdraw(e.token, -1);
	xsend(server, &c, 1);
	xrecv(server, &c, 1);
	printf("withdrawn\n");
	fflush(stdout);
	wait_usr1(usr1);
	close(server);
	check(reap(child) == 0, "the client end saw no failure");
	return failures ? 1 : 0;
}

static int run_orphan(uint64_t bytes, const sigset_t *usr1)
{
	int lfd, client, server;
	uint64_t token;

	tcp_pair("127.0.0.1", &lfd, &client, &server);
	fflush(stdout);
	pid_t child = fork();
	if (child < 0)
		die("fork");
	if (child == 0) {
		int memfd = smcr_sys_memfd_sealed(bytes);
		close(server);
		expect_rc(memfd < 0 ? memfd : offer_state(client, memfd, bytes, new_channel(), &token), 0,
			  "the offerer offers its buffer");
		xsend(client, &token, sizeof(token));
		printf("offerer %d\n", (int)getpid());
		fflush(stdout);
		alarm(TIMEOUT_S * 3);           /* to be killed: by the test, else by this */
		for (;;)
			pause();
	}
	close(client);
	xrecv(server, &token, sizeof(token));
	wait_usr1(usr1);
	expect_refused(server, token, "the peer attaching after the offerer was killed");
	waitpid(child, NULL, 0);
	return failures ? 1 : 0;
}

static int sealed_memfd(uint64_t size, unsigned int seals)
{
	int fd = memfd_create("shm_peer", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0 || ftruncate(fd, (off_t)size) || (seals && fcntl(fd, F_ADD_SEALS, seals)))
		die("memfd");
	return fd;
}

/* Offers memfd with wake as the wake-up channel; closes them. */
static void offer_with(int sock, int memfd, uint64_t bytes, struct smcr_wake_channel wake,
		       int want, const char *what)
{
	uint64_t token;

	expect_rc(offer_state(sock, memfd, bytes, wake, &token), want, what);
	close(memfd);
	close_channel(wake);
}

static void expect_offer(int sock, int memfd, uint64_t bytes, int want, const char *what)
{
	offer_with(sock, memfd, bytes, new_channel(), want, what);
}

/* A good rx with a bad tx (and the other way round): smcrd must refuse both. */
static void expect_bad_channel_end(int sock, uint64_t bytes, int bad, const char *what)
{
	struct smcr_wake_channel good = new_channel();
	char both[128];

	snprintf(both, sizeof(both), "%s as the channel's tx", what);
	offer_with(sock, smcr_sys_memfd_sealed(bytes), bytes,
		   (struct smcr_wake_channel){ .rx = good.rx, .tx = dup(bad) }, -EINVAL, both);
	snprintf(both, sizeof(both), "%s as the channel's rx", what);
	offer_with(sock, smcr_sys_memfd_sealed(bytes), bytes,
		   (struct smcr_wake_channel){ .rx = dup(bad), .tx = good.tx }, -EINVAL, both);
	close(bad);
}

/* A unix stream socket connected to a named one: a service the peer would send to. */
static int connected_to_named(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	socklen_t len = offsetof(struct sockaddr_un, sun_path) + 1 +
			(socklen_t)snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1,
					    "shm_peer.%d", (int)getpid());

	if (l < 0 || c < 0 || bind(l, (struct sockaddr *)&a, len) || listen(l, 1) ||
	    connect(c, (struct sockaddr *)&a, len))
		die("a named unix socket");
	close(l);
	return c;
}

static int run_bad(uint64_t beyond)
{
	const unsigned int fixed = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
	const uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), bytes = 4 * page;
	int lfd, client, server;
	char path[64];

	tcp_pair("127.0.0.1", &lfd, &client, &server);
	expect_offer(client, sealed_memfd(bytes, 0), bytes, -EINVAL, "an unsealed memfd");
	expect_offer(client, sealed_memfd(bytes, F_SEAL_SHRINK), bytes, -EINVAL,
		     "a memfd that can still grow");
	expect_offer(client, sealed_memfd(bytes, fixed | F_SEAL_WRITE), bytes, -EINVAL,
		     "a memfd sealed against writing");
	expect_offer(client, sealed_memfd(bytes / 2, fixed), bytes, -EINVAL,
		     "a memfd smaller than offered");
	expect_offer(client, sealed_memfd(bytes * 2, fixed), bytes, -EINVAL,
		     "a memfd larger than offered");
	expect_offer(client, sealed_memfd(1000, fixed), 1000, -EINVAL, "a part of a page");
	int memfd = sealed_memfd(bytes, fixed);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", memfd);
	expect_offer(client, open(path, O_RDONLY | O_CLOEXEC), bytes, -EINVAL,
		     "a read-only descriptor of a memfd");
	close(memfd);
	int file = open("/dev/shm", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (file < 0 || ftruncate(file, (off_t)bytes))
		die("a tmpfs file");
	expect_offer(client, file, bytes, -EINVAL, "a tmpfs file, not a memfd");

	int udp = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct sockaddr_storage ss;
	socklen_t len = make_addr("127.0.0.1", port_of(lfd, false), &ss);
	if (udp < 0 || connect(udp, (struct sockaddr *)&ss, len))
		die("a UDP socket");
	expect_offer(udp, sealed_memfd(bytes, fixed), bytes, -EINVAL, "a UDP socket");
	expect_offer(lfd, sealed_memfd(bytes, fixed), bytes, -EINVAL, "a listening socket");
	int fresh = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	expect_offer(fresh, sealed_memfd(bytes, fixed), bytes, -EINVAL,
		     "an unconnected TCP socket");

	/* The peer will send on the channel's tx: an end of a unix stream socket pair, nothing else. */
	int pipefd[2], dgram[2];
	if (pipe2(pipefd, O_CLOEXEC) || socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, dgram))
		die("pipe");
	expect_bad_channel_end(client, bytes, pipefd[1], "a pipe");
	close(pipefd[0]);
	expect_bad_channel_end(client, bytes, dgram[1], "a datagram socket (the peer could "
			       "disconnect it)");
	close(dgram[0]);
	expect_bad_channel_end(client, bytes, connected_to_named(),
			       "a socket connected to a named one");
	char name[] = "/tmp/shm_peer.XXXXXX";
	file = mkostemp(name, O_CLOEXEC);
	if (file < 0)
		die("a regular file");
	unlink(name);
	expect_bad_channel_end(client, bytes, file, "a regular file");
	int epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0)
		die("epoll_create1");
	expect_bad_channel_end(client, bytes, epfd, "an epoll descriptor");
	int efd = smcr_sys_eventfd();
	if (efd < 0)
		die("eventfd");
	expect_bad_channel_end(client, bytes, efd, "an eventfd (the peer could make it block)");
	expect_bad_channel_end(client, bytes, smcr_sys_memfd_sealed(bytes), "a memfd");

	/* The connection state: a sealed memfd of a few pages, like the buffer. */
	uint64_t token;
	int state = sealed_memfd(page, 0);
	memfd = smcr_sys_memfd_sealed(bytes);
	struct smcr_wake_channel ch = new_channel();
	expect_rc(smcr_shm_offer(client, memfd, bytes, ch, state, &token, NULL), -EINVAL,
		  "an unsealed state memfd");
	close(state);
	state = sealed_memfd(256 * page, fixed);
	expect_rc(smcr_shm_offer(client, memfd, bytes, ch, state, &token, NULL), -EINVAL,
		  "a state memfd of a megabyte");
	close(state);
	expect_rc(smcr_shm_offer(client, memfd, bytes, ch, ch.tx, &token, NULL),
		  -EINVAL, "a socket as the state");
	close(memfd);
	close_channel(ch);

	expect_offer(client, sealed_memfd(beyond, fixed), beyond, -ENOMEM,
		     "an offer beyond max_memory");
	expect_offer(client, smcr_sys_memfd_sealed(bytes), bytes, 0, "a good offer after all that");

	/* A socket connected to itself has both ends' addresses, and is still not its peer. */
	int self = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	len = make_addr("127.0.0.1", 0, &ss);
	if (self < 0 || bind(self, (struct sockaddr *)&ss, len))
		die("bind");
	len = make_addr("127.0.0.1", port_of(self, false), &ss);
	if (connect(self, (struct sockaddr *)&ss, len))
		die("a TCP socket connected to itself");
	memfd = smcr_sys_memfd_sealed(bytes);
	ch = new_channel();
	expect_rc(offer_state(self, memfd, bytes, ch, &token), 0,
		  "an offer on a socket connected to itself");
	close(memfd);
	close_channel(ch);
	expect_refused(self, token, "that socket attaching its own offer");
	return failures ? 1 : 0;
}

/* Sends m with nfds copies of fd attached, on a connection of its own. */
static bool closed_by_smcrd(struct smcr_control_msg *m, size_t len, int fd, size_t nfds)
{
	char control[CMSG_SPACE(6 * sizeof(int))] = { 0 };
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct iovec iov = { m, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	int fds[6] = { fd, fd, fd, fd, fd, fd };
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	char reply[sizeof(*m)];

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", smcr_rundir(), SMCR_CONTROL_SOCKET);
	if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa)))
		die("connect to smcrd");
	bounded(s);
	if (nfds) {
		mh.msg_control = control;
		mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
	}
	if (sendmsg(s, &mh, MSG_NOSIGNAL) != (ssize_t)len)
		die("sendmsg to smcrd");
	ssize_t n = recv(s, reply, sizeof(reply), 0);
	close(s);
	return n == 0 || (n < 0 && errno == ECONNRESET);
}

static int run_junk(void)
{
	struct {
		uint16_t type;
		size_t nfds;
		const char *what;
	} cases[] = {
		{ SMCR_CONTROL_GRANT, 1, "a GRANT carrying a descriptor" },
		{ SMCR_CONTROL_STATUS, 2, "a STATUS carrying two" },
		{ SMCR_CONTROL_WITHDRAW, 2, "a WITHDRAW carrying two" },
		{ SMCR_CONTROL_OFFER, 1, "an OFFER carrying one descriptor, not five" },
		{ SMCR_CONTROL_OFFER, 4, "an OFFER carrying four" },
		{ SMCR_CONTROL_OFFER, 6, "an OFFER carrying six" },
		{ SMCR_CONTROL_ATTACH, 0, "an ATTACH carrying none" },
		{ SMCR_CONTROL_ATTACH, 4, "an ATTACH carrying four" },
		{ SMCR_CONTROL_RESUME, 0, "a RESUME carrying none" },
		{ SMCR_CONTROL_RESUME, 2, "a RESUME carrying two" },
	};
	int memfd = smcr_sys_memfd_sealed((uint64_t)sysconf(_SC_PAGESIZE));

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct smcr_control_msg m = { .version = SMCR_CONTROL_VERSION,
					      .type = cases[i].type, .bytes = 4096 };
		check(closed_by_smcrd(&m, sizeof(m), memfd, cases[i].nfds), "%s is dropped",
		      cases[i].what);
	}
	struct smcr_control_msg m = { .version = SMCR_CONTROL_VERSION, .type = SMCR_CONTROL_GRANT };
	char longer[sizeof(m) + 8] = { 0 };
	memcpy(longer, &m, sizeof(m));
	check(closed_by_smcrd((struct smcr_control_msg *)longer, sizeof(longer), memfd, 2),
	      "a request longer than a message, with descriptors, is dropped");
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	sigset_t usr1;

	setvbuf(stdout, NULL, _IOLBF, 0);
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, NULL);    /* taken by sigwait, inherited by children */
	smcr_log_init();                        /* SMCR_LOG=warn: why smcrd refused an offer */
	smcr_fork_init();                       /* as libsmcr.so does: each child registers itself */
	if (argc == 4 && strcmp(argv[1], "pair") == 0)
		return run_pair(argv[2], strtoull(argv[3], NULL, 0), &usr1);
	if (argc == 3 && strcmp(argv[1], "orphan") == 0)
		return run_orphan(strtoull(argv[2], NULL, 0), &usr1);
	if (argc == 3 && strcmp(argv[1], "bad") == 0)
		return run_bad(strtoull(argv[2], NULL, 0));
	if (argc == 2 && strcmp(argv[1], "junk") == 0)
		return run_junk();
	fprintf(stderr, "usage: shm_peer pair ADDR BYTES | orphan BYTES | bad BYTES | junk\n");
	return 2;
}
