/*
 * sandbox_race.c - a process that forks in one thread while another
 * thread installs a seccomp filter, with many connections open: the two
 * calls in which libsmcr walks every connection of the process (a fork
 * counts each one held once more; a filter that forbids the waits makes
 * each leave for TCP), and both take a transport's locks.  It checks
 * that they never wait for each other.
 *
 *   sandbox_race HOST PORT CONNS
 *
 * Against an echo server: opens CONNS connections and echoes one byte on
 * each (so each is set up), starts a thread that forks as fast as it can
 * (each child exits at once), installs a filter that fails ppoll, poll,
 * select and pselect6 with EPERM and allows everything else, stops the
 * forks, then echoes one more byte on each connection.  Prints
 * "forks: N" and "echo exact on CONNS connections" and exits 0, or says
 * what failed.  A deadlock between the two walks would hang it (the
 * test's timeout), but its window is too narrow to hit at will.
 */
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <netdb.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_CONNS 512

#define FAIL_WITH_EPERM(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), \
			    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 1)

/* Fails the poll and select calls with EPERM; allows everything else. */
static int forbid_waits(void)
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		FAIL_WITH_EPERM(SYS_ppoll), FAIL_WITH_EPERM(SYS_poll),
		FAIL_WITH_EPERM(SYS_select), FAIL_WITH_EPERM(SYS_pselect6),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	const struct sock_fprog prog = { .len = sizeof(filter) / sizeof(filter[0]), .filter = filter };

	return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

static int dial(const struct addrinfo *ai)
{
	int fd = socket(ai->ai_family, SOCK_STREAM, 0);

	if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* One byte there and back; false if it did not come back whole. */
static int echo_byte(int fd, char byte)
{
	char back;

	return write(fd, &byte, 1) == 1 && read(fd, &back, 1) == 1 && back == byte;
}

static atomic_bool stop;
static atomic_ulong forks;

static void *fork_loop(void *unused)
{
	(void)unused;
	while (!atomic_load(&stop)) {
		pid_t child = fork();

		if (child == 0)
			_exit(0);
		if (child < 0 || waitpid(child, NULL, 0) != child)
			break;
		atomic_fetch_add(&forks, 1);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	int fds[MAX_CONNS], conns = argc == 4 ? atoi(argv[3]) : 0;
	pthread_t forker;

	if (conns < 1 || conns > MAX_CONNS) {
		fprintf(stderr, "usage: sandbox_race HOST PORT CONNS (1 to %d)\n", MAX_CONNS);
		return 2;
	}
	if (getaddrinfo(argv[1], argv[2], &hints, &ai) != 0) {
		fprintf(stderr, "sandbox_race: cannot resolve %s\n", argv[1]);
		return 1;
	}
	for (int i = 0; i < conns; i++)
		if ((fds[i] = dial(ai)) < 0 || !echo_byte(fds[i], 'a')) {
			printf("connection %d: first echo failed\n", i);
			return 1;
		}
	freeaddrinfo(ai);
	if (pthread_create(&forker, NULL, fork_loop, NULL) != 0)
		return 1;
	while (atomic_load(&forks) < 2)     /* the forks are under way */
		sched_yield();
	if (forbid_waits()) {
		perror("sandbox_race: the filter");
		return 1;
	}
	atomic_store(&stop, true);
	pthread_join(forker, NULL);
	printf("forks: %lu\n", atomic_load(&forks));
	for (int i = 0; i < conns; i++)
		if (!echo_byte(fds[i], 'b')) {
			printf("connection %d: echo after the filter failed\n", i);
			return 1;
		}
	printf("echo exact on %d connections\n", conns);
	return 0;
}
