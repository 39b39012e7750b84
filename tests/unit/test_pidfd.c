/*
 * Unit tests of smcrd's clients pinned by pidfds (smcrd/pidfd.c): the
 * process that connected, and nobody once it has gone; what /proc says of
 * a pinned process only while it lives.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pidfd.h"

/* A child that sleeps until killed. */
static pid_t sleeper(void)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		for (;;)
			pause();
	}
	return pid;
}

/* Our own end of a pair: SO_PEERPIDFD (or the fallback) pins us. */
static void live_peer(void **state)
{
	int sv[2], pidfd;
	char comm[16];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	pidfd = smcrd_pidfd_of_peer(sv[0], getpid());
	assert_true(pidfd >= 0);
	assert_true(smcrd_pidfd_alive(pidfd));
	smcrd_pidfd_comm(getpid(), pidfd, comm, sizeof(comm));
	assert_string_equal(comm, "test_pidfd");
	assert_int_equal(smcrd_pidfd_parent(getpid(), pidfd), getppid());
	close(pidfd);
	close(sv[0]);
	close(sv[1]);
}

/* The socket's connector exited before the accept: nobody to pin, its pid or not. */
static void connector_gone(void **state)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int listener = socket(AF_UNIX, SOCK_STREAM, 0), fd;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	pid_t child;

	(void)state;
	snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "test_pidfd.%d", (int)getpid());
	assert_int_equal(bind(listener, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(listener, 1), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0)
		_exit(connect(socket(AF_UNIX, SOCK_STREAM, 0), (struct sockaddr *)&sa,
			      sizeof(sa)) != 0);
	assert_int_equal(waitpid(child, NULL, 0), child);
	fd = accept(listener, NULL, NULL);
	assert_true(fd >= 0);
	assert_int_equal(getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len), 0);
	assert_int_equal(cred.pid, child);
	assert_int_equal(smcrd_pidfd_of_peer(fd, cred.pid), -1);
	assert_int_equal(smcrd_pidfd_open_alive(child), -1);    /* the fallback's way */
	close(fd);
	close(listener);
}

/* A pinned process that exits: dead, nameless, parentless, even before it is reaped. */
static void pinned_then_gone(void **state)
{
	pid_t child = sleeper();
	int pidfd = smcrd_pidfd_open_alive(child);
	char comm[16];

	(void)state;
	assert_true(pidfd >= 0);
	assert_true(smcrd_pidfd_alive(pidfd));
	assert_int_equal(smcrd_pidfd_parent(child, pidfd), getpid());
	kill(child, SIGKILL);
	assert_int_equal(waitid(P_PID, (id_t)child, NULL, WEXITED | WNOWAIT), 0);
	assert_false(smcrd_pidfd_alive(pidfd));
	smcrd_pidfd_comm(child, pidfd, comm, sizeof(comm));
	assert_string_equal(comm, "?");
	assert_int_equal(smcrd_pidfd_parent(child, pidfd), 0);
	assert_int_equal(waitpid(child, NULL, 0), child);
	close(pidfd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(live_peer),
		cmocka_unit_test(connector_gone),
		cmocka_unit_test(pinned_then_gone),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
