/*
 * closer.c - closing client-supplied descriptors in helper processes
 * (closer.h).
 *
 * Descriptors wait in a queue.  Once a round, if none is at work, smcrd
 * starts a helper for all that wait, a process sharing smcrd's descriptor
 * table (CLONE_FILES) but not its memory, so it sees the batch as it was.
 * The helper first forks a keeper, a process with its own copy of the
 * table, which holds every file until smcrd closes the gate pipe and then
 * exits.  The helper then puts smcrd's placeholder (/dev/null) in place of
 * each descriptor of the batch with dup2(), which drops smcrd's reference
 * (a FUSE flush waits here, in the helper) without freeing the number, and
 * exits.  When it has ended, smcrd closes the placeholders and the gate,
 * and the keeper, exiting, drops the last references: the kernel does not
 * linger in the close of an exiting process.
 *
 * A helper that takes longer than HELPER_MS is killed.  dup2() clears
 * FD_CLOEXEC, which every queued descriptor has, so a descriptor that still
 * has it was not reached and waits for the next helper; one without it is
 * a placeholder.  A helper blocked where SIGKILL cannot reach it (a FUSE
 * flush) is waited for; meanwhile the queue fills to its room (closer.h)
 * and smcrd stops reading requests (control.c), so smcrd's descriptor
 * count stays bounded whatever its clients send.  The room is a share of
 * the open-file limit, so that honest requests are never refused for
 * descriptors that only wait here: below 1,012 descriptors, where a
 * quarter is less than one message can carry, smcrd reads a request only
 * once the helper has closed all the last one brought.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "closer.h"

#define HELPER_MS 1000          /* a helper's time for its batch before it is killed */
#define RETRY_MS 100            /* after a helper could not be started */

static int *queue;              /* queue[0 .. batch) is the helper's, the rest waits */
static size_t queued, capacity, batch;
static size_t room = SMCRD_CLOSER_ROOM;         /* smcrd_closer_has_room */
static int placeholder = -1;    /* what takes a closed descriptor's place */
static int helper_fd = -1;      /* pidfd of the helper at work */
static int gate[2] = { -1, -1 };        /* the keeper exits when smcrd closes these */
static uint64_t deadline_ms;    /* 0: the helper is killed, or none is at work */

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* clone3() without a stack, as fork(): 0 in the child. */
static pid_t spawn(uint64_t flags, int *pidfd)
{
	struct clone_args args = { .flags = flags, .pidfd = (uintptr_t)pidfd,
				   .exit_signal = SIGCHLD };

	return (pid_t)syscall(SYS_clone3, &args, sizeof(args));
}

/*
 * The keeper is smcrd's child (CLONE_PARENT), so smcrd reaps it.  If it
 * cannot be made, the helper goes on, and a close that lingers in it is
 * cut short when it is killed.
 */
static _Noreturn void helper(void)
{
	if (spawn(CLONE_PARENT, NULL) == 0) {
		char byte;

		close(gate[1]);
		while (read(gate[0], &byte, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	for (size_t i = 0; i < batch; i++)
		dup2(placeholder, queue[i]);
	_exit(0);
}

int smcrd_closer_start(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur / 4 < room)
		room = rl.rlim_cur / 4;
	placeholder = open("/dev/null", O_RDONLY | O_CLOEXEC);
	return placeholder < 0 ? -1 : 0;
}

int smcrd_close_later(int fd)
{
	if (fd < 0)
		return 0;
	if (placeholder >= 0 && queued == capacity) {
		size_t cap = capacity ? capacity * 2 : 64;
		int *grown = realloc(queue, cap * sizeof(*queue));
		if (grown) {
			queue = grown;
			capacity = cap;
		}
	}
	/* No helpers (start-up, tests) or no memory: at once.  The mark: see above. */
	if (placeholder < 0 || queued == capacity || fcntl(fd, F_SETFD, FD_CLOEXEC))
		close(fd);
	else
		queue[queued++] = fd;
	return 0;
}

bool smcrd_closer_has_room(size_t n)
{
	return queued == 0 || queued + n <= room;
}

int smcrd_closer_fd(void)
{
	return helper_fd;
}

int smcrd_closer_timeout(void)
{
	if (helper_fd < 0)
		return queued ? RETRY_MS : -1;
	if (!deadline_ms)
		return -1;
	uint64_t now = now_ms();
	return deadline_ms > now ? (int)(deadline_ms - now) : 0;
}

static void start_helper(void)
{
	if (pipe2(gate, O_CLOEXEC))
		return;
	batch = queued;
	pid_t pid = spawn(CLONE_FILES | CLONE_PIDFD, &helper_fd);
	if (pid == 0)
		helper();
	if (pid < 0) {
		helper_fd = -1;
		batch = 0;
		close(gate[0]);
		close(gate[1]);
		return;
	}
	deadline_ms = now_ms() + HELPER_MS;
}

/* Whether the helper has ended (its pidfd is readable). */
static bool helper_ended(void)
{
	struct pollfd pfd = { .fd = helper_fd, .events = POLLIN };

	return poll(&pfd, 1, 0) == 1;
}

/*
 * The helper ended: its placeholders are closed, what it did not reach
 * goes back to the front of the queue, the keeper goes.
 */
static void settle(void)
{
	size_t kept = 0;

	for (size_t i = 0; i < batch; i++) {
		int flags = fcntl(queue[i], F_GETFD);
		if (flags >= 0 && (flags & FD_CLOEXEC))
			queue[kept++] = queue[i];
		else if (flags >= 0)
			close(queue[i]);
	}
	memmove(queue + kept, queue + batch, (queued - batch) * sizeof(*queue));
	queued -= batch - kept;
	batch = 0;
	close(gate[0]);
	close(gate[1]);
	close(helper_fd);
	helper_fd = -1;
	deadline_ms = 0;
}

/* The helpers and keepers that ended (smcrd has no other children); a pidfd outlives its reaping. */
static void reap(void)
{
	siginfo_t info;

	do
		info.si_pid = 0;
	while (waitid(P_ALL, 0, &info, WEXITED | WNOHANG) == 0 && info.si_pid);
}

void smcrd_closer_serve(void)
{
	if (helper_fd >= 0 && helper_ended())
		settle();
	reap();
	if (helper_fd >= 0 && deadline_ms && now_ms() >= deadline_ms) {
		syscall(SYS_pidfd_send_signal, helper_fd, SIGKILL, NULL, 0);
		deadline_ms = 0;
	}
	if (helper_fd < 0 && queued)
		start_helper();
}
