/*
 * leave_probe.c - a process that confines itself in the middle of a
 * connection, as a privilege-separated server's pre-login child does
 * (vsftpd's seccomp sandbox): a seccomp filter that allows reading and
 * writing but kills the process on any wait call (futex, poll, select,
 * epoll) or socket call.
 *
 *   leave_probe HOST PORT BYTES
 *   leave_probe --listen|--connect HOST PORT BYTES AT [epoll]
 *
 * Against an echo server: writes BYTES of a known pattern, reads half of
 * their echo back, installs the filter, then writes BYTES more and reads
 * the rest of the echo, with read() and write() alone, and checks every
 * byte.  So at the moment the filter comes, the echo server holds bytes
 * not yet read, and this process's buffer holds echoed bytes not yet read.
 * Prints "confined" once the filter is in, then "echo exact: N bytes" and
 * exits 0, or says what differed.
 *
 * Both ends (--listen, which accepts one connection, and --connect):
 * each sends BYTES of the pattern and reads the other's, in step, a chunk
 * each way at a time, and installs the filter once it sent AT bytes (a
 * multiple of the chunk), before it reads the other's chunk of that step,
 * which is likely in its buffer by then.  Prints "confined", then "stream exact: N bytes each way".
 * With "epoll", once confined it waits in epoll_wait (level-triggered,
 * the socket added before the filter, which then allows epoll and ppoll
 * too) before each read, and reads at most 1 KiB at a time: bytes that
 * wait where the kernel cannot see them (an RMB read out after both ends
 * left at once) must be told again and again, or it waits 10 s and says so.
 */
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <netdb.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CHUNK 16384
#define EPOLL_READ 1024
#define EPOLL_WAIT_MS 10000

/* With "epoll": the instance a confined end waits in before each read (-1: none). */
static int waits_in = -1;
static bool confined;

/* Byte i of the stream: a pattern no shift or repeat of it matches. */
static uint8_t pattern(uint64_t i)
{
	uint64_t x = i * 0x9e3779b97f4a7c15ull;

	return (uint8_t)(x >> 56 ^ x >> 23 ^ i);
}

#define ALLOW(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), \
		  BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

/* Allows what reading, writing, memory and exiting need (and waiting, with "epoll"); kills on anything else. */
static int confine(void)
{
	int waits = waits_in >= 0;
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		ALLOW(SYS_read), ALLOW(SYS_write), ALLOW(SYS_close), ALLOW(SYS_shutdown),
		ALLOW(SYS_exit), ALLOW(SYS_exit_group), ALLOW(SYS_brk), ALLOW(SYS_mmap),
		ALLOW(SYS_munmap), ALLOW(SYS_mprotect), ALLOW(SYS_madvise), ALLOW(SYS_rt_sigreturn),
		ALLOW(SYS_rt_sigprocmask), ALLOW(SYS_fstat), ALLOW(SYS_newfstatat), ALLOW(SYS_getpid),
		ALLOW(SYS_gettid), ALLOW(SYS_clock_gettime), ALLOW(SYS_nanosleep),
		ALLOW(SYS_prctl),       /* the sanitizers' runtime asks after the filter */
		/* without "epoll", a number no call has: nothing more allowed */
		ALLOW(waits ? SYS_epoll_wait : -1u), ALLOW(waits ? SYS_epoll_pwait : -1u),
		ALLOW(waits ? SYS_epoll_ctl : -1u), ALLOW(waits ? SYS_ppoll : -1u),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
	};
	const struct sock_fprog prog = { .len = sizeof(filter) / sizeof(filter[0]), .filter = filter };

	return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

static int dial(const char *host, const char *port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	int fd = -1;

	if (getaddrinfo(host, port, &hints, &ai) != 0)
		return -1;
	fd = socket(ai->ai_family, SOCK_STREAM, 0);
	if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
		close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	return fd;
}

/* Writes stream bytes [*sent, *sent + n); false on an error. */
static int put(int fd, uint64_t *sent, uint64_t n)
{
	uint8_t buf[CHUNK];

	while (n > 0) {
		size_t len = n < CHUNK ? (size_t)n : CHUNK;
		ssize_t w;

		for (size_t i = 0; i < len; i++)
			buf[i] = pattern(*sent + i);
		w = write(fd, buf, len);
		if (w <= 0)
			return 0;
		*sent += (uint64_t)w;
		n -= (uint64_t)w;
	}
	return 1;
}

/* Confined with "epoll": how much the next read may take once epoll says so; 0: it did not. */
static size_t may_read(int fd, uint64_t n, uint64_t got)
{
	struct epoll_event ev;

	if (!confined || waits_in < 0)
		return n < CHUNK ? (size_t)n : CHUNK;
	if (epoll_wait(waits_in, &ev, 1, EPOLL_WAIT_MS) != 1 || ev.data.fd != fd) {
		printf("epoll told nothing for %d s with %llu bytes to come from byte %llu\n",
		       EPOLL_WAIT_MS / 1000, (unsigned long long)n, (unsigned long long)got);
		return 0;
	}
	return n < EPOLL_READ ? (size_t)n : EPOLL_READ;
}

/* Reads n echoed bytes from *got on and checks them; false, said, on a difference. */
static int take(int fd, uint64_t *got, uint64_t n)
{
	uint8_t buf[CHUNK];

	while (n > 0) {
		size_t len = may_read(fd, n, *got);
		ssize_t r;

		if (!len)
			return 0;
		r = read(fd, buf, len);

		if (r <= 0) {
			printf("echo ended at byte %llu (%s)\n", (unsigned long long)*got,
			       r ? "error" : "end of file");
			return 0;
		}
		for (ssize_t i = 0; i < r; i++)
			if (buf[i] != pattern(*got + (uint64_t)i)) {
				printf("echo differs at byte %llu\n", (unsigned long long)(*got + (uint64_t)i));
				return 0;
			}
		*got += (uint64_t)r;
		n -= (uint64_t)r;
	}
	return 1;
}

/* The one connection to host:port, accepted; -1 on an error. */
static int accept_one(const char *host, const char *port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE }, *ai;
	int one = 1, lfd = -1, fd = -1;

	if (getaddrinfo(host, port, &hints, &ai) != 0)
		return -1;
	lfd = socket(ai->ai_family, SOCK_STREAM, 0);
	if (lfd >= 0 && !setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) &&
	    !bind(lfd, ai->ai_addr, ai->ai_addrlen) && !listen(lfd, 1)) {
		printf("listening\n");
		fflush(stdout);
		fd = accept(lfd, NULL, NULL);
	}
	if (lfd >= 0)
		close(lfd);
	freeaddrinfo(ai);
	return fd;
}

/* "epoll": fd goes into a new instance, level-triggered, before any filter. */
static int watch(int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	waits_in = epoll_create1(EPOLL_CLOEXEC);
	if (waits_in < 0 || epoll_ctl(waits_in, EPOLL_CTL_ADD, fd, &ev) != 0) {
		perror("leave_probe: epoll");
		return 0;
	}
	return 1;
}

static int confine_said(void)
{
	if (confine()) {
		perror("leave_probe: the filter");
		return 0;
	}
	confined = true;
	printf("confined\n");
	fflush(stdout);
	return 1;
}

/* Reads the peer's end: nothing may follow what it sent. */
static int ends_there(int fd)
{
	uint8_t extra;

	if (read(fd, &extra, 1) != 0) {
		printf("more than was sent came\n");
		return 0;
	}
	return 1;
}

/* One of both ends: BYTES each way in step, confined at AT bytes sent, before its read. */
static int both_ends(int fd, uint64_t bytes, uint64_t at)
{
	uint64_t sent = 0, got = 0;

	while (sent < bytes) {
		if (!put(fd, &sent, CHUNK) || (sent == at && !confine_said()) ||
		    !take(fd, &got, CHUNK))
			return 1;
	}
	if (shutdown(fd, SHUT_WR) != 0 || !ends_there(fd))
		return 1;
	printf("stream exact: %llu bytes each way\n", (unsigned long long)got);
	return 0;
}

int main(int argc, char **argv)
{
	bool peer = (argc == 6 || (argc == 7 && !strcmp(argv[6], "epoll"))) &&
		    (!strcmp(argv[1], "--listen") || !strcmp(argv[1], "--connect"));
	char **arg = argv + peer;
	uint64_t bytes, at = 0, sent = 0, got = 0;
	int fd;

	if (argc != 4 + 2 * peer + (argc == 7) || (bytes = strtoull(arg[3], NULL, 10)) < 2 * CHUNK ||
	    (peer && ((at = strtoull(arg[4], NULL, 10)) % CHUNK || at >= bytes))) {
		fprintf(stderr, "usage: leave_probe HOST PORT BYTES (at least %d)\n"
			"       leave_probe --listen|--connect HOST PORT BYTES AT (a multiple "
			"of %d, below BYTES) [epoll]\n", 2 * CHUNK, CHUNK);
		return 2;
	}
	fd = peer && !strcmp(argv[1], "--listen") ? accept_one(arg[1], arg[2]) :
						    dial(arg[1], arg[2]);
	if (fd < 0) {
		perror("leave_probe: the connection");
		return 1;
	}
	if (argc == 7 && !watch(fd))
		return 1;
	if (peer)
		return both_ends(fd, bytes, at);
	if (!put(fd, &sent, bytes) || !take(fd, &got, bytes / 2) || !confine_said())
		return 1;
	/* the echo stays 1.5 * BYTES behind at most: each read finds its bytes */
	while (sent < 2 * bytes)
		if (!put(fd, &sent, CHUNK) || !take(fd, &got, CHUNK))
			return 1;
	if (!take(fd, &got, sent - got) || shutdown(fd, SHUT_WR) != 0 || !ends_there(fd))
		return 1;
	printf("echo exact: %llu bytes\n", (unsigned long long)got);
	return 0;
}
