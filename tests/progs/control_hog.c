/*
 * control_hog - a local user's attempts to take more of smcrd than its
 * share, through the control socket (tests/adversarial/memory_quota.sh,
 * amplification.sh).  It speaks the protocol itself (control_proto.h):
 * libsmcr would not misbehave.
 *
 *   control_hog grant CONNS FIRST CHUNK
 *       CONNS control connections (as many processes, to smcrd), each asking
 *       for FIRST bytes at once, then CHUNK at a time until refused.  Prints
 *       "first: RESULT", then "held BYTES: TEXT" per connection (TEXT: why
 *       the last was refused), "total BYTES", "done"; then holds them.
 *   control_hog register CONNS sparse|punched
 *       CONNS connections, each registering with a statistics region that
 *       claims a full connection table: sparse (no page allocated but the
 *       first), or punched (allocated, then emptied but for the first page
 *       once smcrd took it).
 *       Prints "registered", "region refused: TEXT" or "refused: TEXT" per
 *       connection, "done"; then holds them.
 *   control_hog malformed N
 *       N connections one after the other, each sending one request of
 *       the wrong length.  Prints "hung up on: H of N", "done".
 *   control_hog stats N
 *       One connection asking for the statistics N times, each as soon as
 *       the last was answered.  Prints "served: S refused: R (TEXT)", TEXT
 *       being the last refusal's, "done".
 *   control_hog passed
 *       A child connects, hands the connection to its parent (SCM_RIGHTS)
 *       and exits; the parent reaps it and prints "connected PID" (the
 *       child's), then waits for a line on stdin (its pid reused, maybe)
 *       and sends REGISTER on the connection.  Prints "register: RESULT",
 *       "done"; then holds it.
 *   control_hog at PID PROG ARGS...  (root)
 *       Runs PROG as process PID (clone3 with set_tid), and waits for it.
 *
 * The socket is $SMCR_RUNDIR/smcrd.sock.  A negative RESULT is an errno.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "control_proto.h"

static int connect_smcrd(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", smcr_rundir(), SMCR_CONTROL_SOCKET);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		perror("connect");
		exit(1);
	}
	return fd;
}

/*
 * Sends a request of type with bytes and memfd (-1: none) and reads the
 * reply into *m: its result, or -EPIPE if smcrd hung up without one.
 */
static int ask(int fd, uint16_t type, uint64_t bytes, int memfd, struct smcr_control_msg *m)
{
	union smcr_control_cmsg room;
	struct iovec iov = { m, sizeof(*m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	*m = (struct smcr_control_msg){ .version = SMCR_CONTROL_VERSION, .type = type,
					.bytes = bytes };
	smcr_control_attach_fds(&mh, &room, &memfd, memfd >= 0);
	sendmsg(fd, &mh, MSG_NOSIGNAL);         /* refused at connect: the reply waits */
	ssize_t n = recv(fd, m, sizeof(*m), 0);
	if (n < 0 && errno == ECONNRESET)       /* hung up on with our request unread */
		n = recv(fd, m, sizeof(*m), MSG_DONTWAIT);
	if (n != sizeof(*m))
		return -EPIPE;
	return m->result;
}

static void grant(int conns, uint64_t first, uint64_t chunk)
{
	struct smcr_control_msg m;
	uint64_t total = 0;

	for (int i = 0; i < conns; i++) {
		int fd = connect_smcrd(), rc = ask(fd, SMCR_CONTROL_GRANT, first, -1, &m);
		uint64_t held = rc ? 0 : first;

		printf("first: %d\n", rc);
		while (ask(fd, SMCR_CONTROL_GRANT, chunk, -1, &m) == 0)
			held += chunk;
		printf("held %llu: %s\n", (unsigned long long)held, m.text);
		total += held;
	}
	printf("total %llu\n", (unsigned long long)total);
}

/* A region that says it has used every slot of its table, sealed as smcrd wants. */
static int fake_region(int punched)
{
	const size_t size = smcr_stats_region_size();
	int fd = memfd_create("fake-stats", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	struct smcr_stats *s;

	if (fd < 0 || ftruncate(fd, (off_t)size) ||
	    (punched && fallocate(fd, 0, 0, (off_t)size)) ||
	    (s = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
		perror("region");
		exit(1);
	}
	s->layout = SMCR_STATS_LAYOUT;
	s->size = sizeof(*s);
	atomic_store(&s->conns.high, SMCR_CONN_SLOTS);
	munmap(s, size);
	fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	return fd;
}

static void hog_register(int conns, int punched)
{
	const size_t size = smcr_stats_region_size();
	const off_t page = sysconf(_SC_PAGESIZE);
	struct smcr_control_msg m;

	for (int i = 0; i < conns; i++) {
		int fd = connect_smcrd(), memfd = fake_region(punched);
		int rc = ask(fd, SMCR_CONTROL_REGISTER, 0, memfd, &m);

		if (rc == 0)
			printf("registered\n");
		else
			printf("%s: %s\n", rc == -EINVAL ? "region refused" : "refused", m.text);
		/* all pages go but the first, which says the table is full, after smcrd saw them */
		if (rc == 0 && punched)
			fallocate(memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, page,
				  (off_t)(size - page));
		close(memfd);
	}
}

static void malformed(int n)
{
	static const char junk[] = "not a request";
	int hung_up = 0;

	for (int i = 0; i < n; i++) {
		int fd = connect_smcrd();
		struct pollfd p = { .fd = fd, .events = POLLIN };
		char buf[sizeof(struct smcr_control_msg)];

		send(fd, junk, sizeof(junk), MSG_NOSIGNAL);
		hung_up += poll(&p, 1, 10000) == 1 && recv(fd, buf, sizeof(buf), 0) == 0;
		close(fd);
	}
	printf("hung up on: %d of %d\n", hung_up, n);
}

static void stats(int n)
{
	struct smcr_control_msg m, refusal = { 0 };
	int fd = connect_smcrd(), served = 0, refused = 0;

	for (int i = 0; i < n; i++) {
		int rc = ask(fd, SMCR_CONTROL_STATS, 0, -1, &m);

		served += rc == 0;
		if (rc == -EAGAIN) {
			refused++;
			refusal = m;
		}
	}
	printf("served: %d refused: %d (%.*s)\n", served, refused, (int)sizeof(refusal.text),
	       refusal.text);
	close(fd);
}

/* The child's control connection, used by the parent once the child has gone. */
static void passed(void)
{
	int pair[2], fd = -1;
	union smcr_control_cmsg room;
	char byte = 0, line[16];
	struct iovec iov = { &byte, 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct smcr_control_msg m;
	pid_t child;

	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, pair) || (child = fork()) < 0) {
		perror("passed");
		exit(1);
	}
	if (child == 0) {
		int ctl = connect_smcrd();
		smcr_control_attach_fds(&mh, &room, &ctl, 1);
		_exit(sendmsg(pair[1], &mh, 0) == 1 ? 0 : 1);
	}
	mh.msg_control = room.buf;
	mh.msg_controllen = sizeof(room.buf);
	if (recvmsg(pair[0], &mh, 0) != 1 || smcr_control_take_fds(&mh, &fd, 1, close) != 1 ||
	    waitpid(child, NULL, 0) != child) {
		fprintf(stderr, "passed: no connection from the child\n");
		exit(1);
	}
	printf("connected %d\n", (int)child);
	if (!fgets(line, sizeof(line), stdin))
		exit(1);
	printf("register: %d\n", ask(fd, SMCR_CONTROL_REGISTER, 0, -1, &m));
}

/* PROG as process pid: how the test reuses a pid at will. */
static int run_at(pid_t pid, char **prog)
{
	struct clone_args args = { .exit_signal = SIGCHLD, .set_tid = (uintptr_t)&pid,
				   .set_tid_size = 1 };
	pid_t child = (pid_t)syscall(SYS_clone3, &args, sizeof(args));
	int status;

	if (child == 0) {
		execvp(prog[0], prog);
		_exit(127);
	}
	if (child < 0) {
		perror("clone3 with set_tid");
		return 1;
	}
	printf("running %d\n", (int)child);
	waitpid(child, &status, 0);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 5 && strcmp(argv[1], "grant") == 0) {
		grant(atoi(argv[2]), strtoull(argv[3], NULL, 0), strtoull(argv[4], NULL, 0));
	} else if (argc == 4 && strcmp(argv[1], "register") == 0) {
		hog_register(atoi(argv[2]), strcmp(argv[3], "punched") == 0);
	} else if (argc == 2 && strcmp(argv[1], "passed") == 0) {
		passed();
	} else if (argc >= 4 && strcmp(argv[1], "at") == 0) {
		return run_at((pid_t)atoi(argv[2]), argv + 3);
	} else if (argc == 3 && strcmp(argv[1], "malformed") == 0) {
		malformed(atoi(argv[2]));
		printf("done\n");
		return 0;
	} else if (argc == 3 && strcmp(argv[1], "stats") == 0) {
		stats(atoi(argv[2]));
		printf("done\n");
		return 0;
	} else {
		fprintf(stderr, "usage: control_hog grant CONNS FIRST CHUNK | register CONNS "
			"sparse|punched | malformed N | stats N | passed | at PID PROG ARGS...\n");
		return 2;
	}
	printf("done\n");
	for (;;)
		pause();        /* holding what it took, until killed */
}
