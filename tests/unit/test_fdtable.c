/* Unit tests of the per-descriptor table and of libsmcr's own descriptors (libsmcr/base). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "fdtable.h"
#include "sys.h"

static int reset(void **state)
{
	(void)state;
	smcr_fd_forget_range(0, SMCR_FD_MAX - 1);
	return 0;
}

static void unknown_until_set(void **state)
{
	(void)state;
	assert_int_equal(smcr_fd_get(7), SMCR_FD_UNKNOWN);
	assert_true(smcr_fd_set(7, SMCR_FD_TCP_CLIENT));
	assert_int_equal(smcr_fd_get(7), SMCR_FD_TCP_CLIENT);
	assert_true(smcr_fd_is_tcp(7));
	assert_int_equal(smcr_fd_get(6), SMCR_FD_UNKNOWN);
	assert_int_equal(smcr_fd_get(8), SMCR_FD_UNKNOWN);
}

static void tcp_states(void **state)
{
	(void)state;
	assert_false(smcr_fd_state_is_tcp(SMCR_FD_UNKNOWN));
	assert_false(smcr_fd_state_is_tcp(SMCR_FD_OTHER));
	assert_true(smcr_fd_state_is_tcp(SMCR_FD_TCP));
	assert_true(smcr_fd_state_is_tcp(SMCR_FD_TCP_LISTENER));
	assert_true(smcr_fd_state_is_tcp(SMCR_FD_TCP_CLIENT));
	assert_true(smcr_fd_state_is_tcp(SMCR_FD_TCP_SERVER));
}

static void out_of_range_is_untracked(void **state)
{
	(void)state;
	errno = 1234;
	assert_false(smcr_fd_set(-1, SMCR_FD_TCP));
	assert_false(smcr_fd_set((int)SMCR_FD_MAX, SMCR_FD_TCP));
	assert_int_equal(smcr_fd_get(-1), SMCR_FD_UNKNOWN);
	assert_int_equal(smcr_fd_get((int)SMCR_FD_MAX), SMCR_FD_UNKNOWN);
	smcr_fd_forget(-5);
	assert_int_equal(errno, 1234);
}

static void chunk_edges(void **state)
{
	(void)state;
	const int last = (int)SMCR_FD_MAX - 1, edge = (int)SMCR_FD_CHUNK_SLOTS;
	errno = 4321;
	assert_true(smcr_fd_set(last, SMCR_FD_TCP_SERVER));
	assert_true(smcr_fd_set(edge - 1, SMCR_FD_OTHER));
	assert_true(smcr_fd_set(edge, SMCR_FD_TCP));
	assert_int_equal(errno, 4321);                  /* allocation keeps errno */
	assert_int_equal(smcr_fd_get(last), SMCR_FD_TCP_SERVER);
	assert_int_equal(smcr_fd_get(edge - 1), SMCR_FD_OTHER);
	assert_int_equal(smcr_fd_get(edge), SMCR_FD_TCP);
	assert_int_equal(smcr_fd_get(last - 1), SMCR_FD_UNKNOWN);
}

static void forget_and_copy(void **state)
{
	(void)state;
	smcr_fd_set(3, SMCR_FD_TCP_LISTENER);
	smcr_fd_copy(3, 10);                       /* dup */
	assert_int_equal(smcr_fd_get(10), SMCR_FD_TCP_LISTENER);
	smcr_fd_set(11, SMCR_FD_TCP_CLIENT);
	smcr_fd_copy(12, 11);                      /* dup2 of an unknown fd onto a known one */
	assert_int_equal(smcr_fd_get(11), SMCR_FD_UNKNOWN);
	smcr_fd_forget(3);
	assert_int_equal(smcr_fd_get(3), SMCR_FD_UNKNOWN);
	assert_int_equal(smcr_fd_get(10), SMCR_FD_TCP_LISTENER);
}

/* Every number that names a connection is found, a dup of it too, a plain socket not. */
static void next_sock_finds_each_number(void **state)
{
	static char a, b;
	struct smcr_sock *sk = (struct smcr_sock *)&a, *other = (struct smcr_sock *)&b;

	(void)state;
	assert_int_equal(smcr_fd_next_sock(0), -1);
	assert_true(smcr_fd_set(5, SMCR_FD_TCP_CLIENT) && smcr_fd_set_sock(5, other));
	assert_true(smcr_fd_set(40, SMCR_FD_TCP_SERVER) && smcr_fd_set_sock(40, sk));
	assert_true(smcr_fd_set(41, SMCR_FD_TCP_SERVER));          /* on TCP: no connection */
	assert_int_equal(smcr_fd_next_sock(0), 5);
	assert_int_equal(smcr_fd_next_sock(6), 40);
	assert_int_equal(smcr_fd_next_sock(41), -1);
	smcr_fd_copy(40, 9000);                    /* dup2, as onto descriptor 0 */
	smcr_fd_forget(40);                        /* and the original closed */
	assert_int_equal(smcr_fd_next_sock(6), 9000);
	assert_ptr_equal(smcr_fd_sock(9000), sk);
}

/*
 * A connection on TCP for good serves no call, and stays its descriptor's
 * (found for its hand-over, put at its close); a dup, or the number given
 * another connection, serves again.
 */
static void plain_serves_no_call(void **state)
{
	static char a, b;
	struct smcr_sock *sk = (struct smcr_sock *)&a, *other = (struct smcr_sock *)&b;

	(void)state;
	assert_null(smcr_fd_serving(6));
	assert_true(smcr_fd_set(6, SMCR_FD_TCP_CLIENT) && smcr_fd_set_sock(6, sk));
	assert_ptr_equal(smcr_fd_serving(6), sk);
	smcr_fd_set_plain(6, other);               /* not its connection: nothing */
	assert_ptr_equal(smcr_fd_serving(6), sk);
	smcr_fd_set_plain(6, sk);
	assert_null(smcr_fd_serving(6));
	assert_ptr_equal(smcr_fd_sock(6), sk);
	assert_int_equal(smcr_fd_next_sock(0), 6);
	smcr_fd_copy(6, 7);
	assert_ptr_equal(smcr_fd_serving(7), sk);
	smcr_fd_set_sock(6, other);
	assert_ptr_equal(smcr_fd_serving(6), other);
	smcr_fd_set_plain(6, other);
	smcr_fd_forget(6);
	assert_true(smcr_fd_set(6, SMCR_FD_TCP_SERVER) && smcr_fd_set_sock(6, other));
	assert_ptr_equal(smcr_fd_serving(6), other);
}

/* Only a number libsmcr knows nothing of is closed without a look. */
static void holds_nothing(void **state)
{
	static char a;

	(void)state;
	assert_true(smcr_fd_holds_nothing(8));
	assert_true(smcr_fd_holds_nothing(-1));
	assert_true(smcr_fd_set(8, SMCR_FD_OTHER));
	assert_false(smcr_fd_holds_nothing(8));
	smcr_fd_forget(8);
	assert_true(smcr_fd_holds_nothing(8));
	assert_true(smcr_fd_set_sock(8, (struct smcr_sock *)&a));
	assert_false(smcr_fd_holds_nothing(8));
	smcr_fd_forget(8);
	assert_true(smcr_fd_set_record(8, 3));
	assert_false(smcr_fd_holds_nothing(8));
}

static void forget_range(void **state)
{
	(void)state;
	for (int fd = 0; fd < 20; fd++)
		smcr_fd_set(fd, SMCR_FD_TCP);
	smcr_fd_set((int)SMCR_FD_CHUNK_SLOTS * 3 + 5, SMCR_FD_TCP);
	smcr_fd_forget_range(5, 9);
	for (int fd = 0; fd < 20; fd++)
		assert_int_equal(smcr_fd_get(fd), fd >= 5 && fd <= 9 ? SMCR_FD_UNKNOWN : SMCR_FD_TCP);
	smcr_fd_forget_range(15, ~0u);             /* closefrom(15) */
	assert_int_equal(smcr_fd_get(14), SMCR_FD_TCP);
	assert_int_equal(smcr_fd_get(15), SMCR_FD_UNKNOWN);
	assert_int_equal(smcr_fd_get((int)SMCR_FD_CHUNK_SLOTS * 3 + 5), SMCR_FD_UNKNOWN);
}

/* Threads creating the same chunk at once must all see their own writes. */
struct racer {
	int first;
	pthread_barrier_t *start;
};

static void *race(void *arg)
{
	struct racer *r = arg;
	pthread_barrier_wait(r->start);
	for (int i = 0; i < 64; i++)
		smcr_fd_set(r->first + i * 4, SMCR_FD_TCP_SERVER);
	return NULL;
}

static void concurrent_first_use(void **state)
{
	(void)state;
	for (int round = 0; round < 20; round++) {
		const int base = (int)SMCR_FD_CHUNK_SLOTS * (10 + round);
		pthread_barrier_t start;
		pthread_t threads[4];
		struct racer racers[4];
		pthread_barrier_init(&start, NULL, 4);
		for (int t = 0; t < 4; t++) {
			racers[t] = (struct racer){ .first = base + t, .start = &start };
			pthread_create(&threads[t], NULL, race, &racers[t]);
		}
		for (int t = 0; t < 4; t++)
			pthread_join(threads[t], NULL);
		pthread_barrier_destroy(&start);
		for (int fd = base; fd < base + 256; fd++)
			assert_int_equal(smcr_fd_get(fd), SMCR_FD_TCP_SERVER);
	}
}

/* libsmcr's own descriptors outlive the application's closes; next_in finds them. */
static void own_descriptors_stay(void **state)
{
	const int far = (int)SMCR_FD_CHUNK_SLOTS * 5 + 3;

	(void)state;
	smcr_fd_set(512, SMCR_FD_OWN);
	smcr_fd_set(far, SMCR_FD_OWN);
	smcr_fd_set(600, SMCR_FD_TCP);
	smcr_fd_forget(512);
	smcr_fd_forget_range(3, ~0u);
	assert_int_equal(smcr_fd_get(512), SMCR_FD_OWN);
	assert_int_equal(smcr_fd_get(far), SMCR_FD_OWN);
	assert_int_equal(smcr_fd_get(600), SMCR_FD_UNKNOWN);
	assert_int_equal(smcr_fd_next_in(3, ~0u, SMCR_FD_OWN), 512);
	assert_int_equal(smcr_fd_next_in(513, ~0u, SMCR_FD_OWN), far);
	assert_int_equal(smcr_fd_next_in((unsigned int)far + 1, ~0u, SMCR_FD_OWN), -1);
	assert_int_equal(smcr_fd_next_in(3, 511, SMCR_FD_OWN), -1);
	assert_true(smcr_fd_claim(512, SMCR_FD_OWN, SMCR_FD_UNKNOWN));
	assert_true(smcr_fd_claim(far, SMCR_FD_OWN, SMCR_FD_UNKNOWN));
}

static bool is_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

/* The application's close_range and closefrom close all but ours, around them. */
static void range_closes_spare_own(void **state)
{
	int null = open("/dev/null", O_RDONLY);

	(void)state;
	assert_true(null >= 0);
	for (int fd = 40; fd <= 47; fd++)
		assert_int_equal(dup2(null, fd), fd);
	smcr_fd_set(40, SMCR_FD_OWN);
	smcr_fd_set(43, SMCR_FD_OWN);
	smcr_fd_set(47, SMCR_FD_OWN);
	assert_int_equal(smcr_sys_close_range(40, 44, 0), 0);
	for (int fd = 40; fd <= 44; fd++)
		assert_int_equal(is_open(fd), fd == 40 || fd == 43);
	smcr_sys_closefrom(45);
	assert_false(is_open(45));
	assert_false(is_open(46));
	assert_true(is_open(47));
	smcr_sys_close(40);
	smcr_sys_close(43);
	smcr_sys_close(47);
	assert_false(is_open(40) || is_open(43) || is_open(47));
	assert_int_equal(smcr_fd_get(43), SMCR_FD_UNKNOWN);
	close(null);
}

static int moved_from = -1, moved_to = -1;

static void note_move(int from, int to)
{
	moved_from = from;
	moved_to = to;
}

/*
 * The application's dup2 onto a kept descriptor of ours: ours moves first,
 * its keeper follows, the layers above hear of it, and the number is the
 * application's; one that nobody keeps is given up.
 */
static void dup_onto_kept_moves_it(void **state)
{
	int kept = smcr_sys_fd_aside(smcr_sys_eventfd()), was = kept, null = open("/dev/null", O_RDONLY);
	int unkept = smcr_sys_fd_aside(smcr_sys_eventfd());
	uint64_t one = 1, got = 0;

	(void)state;
	assert_true(kept >= 0 && unkept >= 0 && null >= 0);
	smcr_sys_on_fd_moved(note_move);
	smcr_sys_fd_keep(&kept);
	assert_int_equal(write(kept, &one, sizeof(one)), sizeof(one));
	assert_true(smcr_sys_fd_before_dup(was));
	assert_int_not_equal(kept, was);
	assert_int_equal(moved_from, was);
	assert_int_equal(moved_to, kept);
	assert_int_equal(smcr_fd_get(was), SMCR_FD_UNKNOWN);
	assert_int_equal(smcr_fd_get(kept), SMCR_FD_OWN);
	assert_ptr_equal(smcr_fd_keeper(kept), &kept);
	assert_int_equal(dup2(null, was), was);
	/* the same eventfd, its count intact, under the new number */
	assert_int_equal(read(kept, &got, sizeof(got)), sizeof(got));
	assert_int_equal(got, 1);
	smcr_sys_close_kept(&kept);
	assert_int_equal(kept, -1);
	assert_false(is_open(moved_to));
	assert_true(is_open(was));
	/* not kept: given up where it is */
	moved_from = moved_to = -1;
	assert_true(smcr_sys_fd_before_dup(unkept));
	assert_int_equal(moved_from, -1);
	assert_int_equal(smcr_fd_get(unkept), SMCR_FD_UNKNOWN);
	close(unkept);
	close(was);
	close(null);
	smcr_sys_on_fd_moved(NULL);
}

/*
 * A process that lowered RLIMIT_NOFILE to 0 (as sandboxes do) gets EINVAL
 * from poll(); libsmcr's own waits still see data, the peer's end and a
 * timeout, on a descriptor above FD_SETSIZE too.
 */
/*
 * A wake-up channel whose tx another process made blocking and filled, and
 * whose rx a holder made blocking: sends and drains still return at once,
 * the channel stays readable, and once tx is shut a drain says so (without
 * SIGPIPE for a send after that).
 */
static void wake_channel_never_blocks(void **state)
{
	static const char flood[4096];
	struct smcr_wake_channel ch;
	struct pollfd p;
	int drains = 0;

	(void)state;
	assert_int_equal(smcr_sys_wake_channel(&ch), 0);
	assert_int_equal(fcntl(ch.tx, F_SETFL, 0), 0);
	assert_int_equal(fcntl(ch.rx, F_SETFL, 0), 0);
	alarm(30);              /* a send or drain that blocks fails the test */
	assert_true(smcr_sys_wake_drain(ch.rx));
	while (send(ch.tx, flood, sizeof(flood), MSG_DONTWAIT) > 0)
		;
	assert_int_equal(errno, EAGAIN);
	for (int i = 0; i < 1000; i++)
		smcr_sys_wake_send(ch.tx);
	p = (struct pollfd){ .fd = ch.rx, .events = POLLIN };
	assert_int_equal(poll(&p, 1, 0), 1);
	assert_int_equal(shutdown(ch.tx, SHUT_WR), 0);
	while (smcr_sys_wake_drain(ch.rx))
		assert_true(++drains < 100000);
	assert_true(drains > 1);        /* each drain takes a bounded part of a flood */
	smcr_sys_wake_send(ch.tx);
	assert_false(smcr_sys_wake_drain(ch.rx));
	alarm(0);
	close(ch.rx);
	close(ch.tx);
}

static void waits_survive_rlimit_nofile_0(void **state)
{
	struct rlimit was, none = { 0, 0 };
	int sv[2];
	char byte;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(dup2(sv[0], 1500), 1500);
	struct pollfd p = { .fd = 1500, .events = POLLIN | POLLRDHUP };

	assert_int_equal(getrlimit(RLIMIT_NOFILE, &was), 0);
	none.rlim_max = was.rlim_max;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &none), 0);
	assert_int_equal(poll(&p, 1, 0), -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(smcr_sys_poll(&p, 1, 20), 0);             /* the timeout */
	assert_int_equal(errno, 0);
	assert_int_equal(write(sv[1], "x", 1), 1);
	assert_int_equal(smcr_sys_poll(&p, 1, -1), 1);
	assert_int_equal(p.revents, POLLIN);
	assert_int_equal(read(1500, &byte, 1), 1);
	close(sv[1]);
	assert_int_equal(smcr_sys_poll(&p, 1, 1000), 1);
	assert_int_equal(p.revents, POLLIN | POLLRDHUP);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &was), 0);
	close(1500);
	close(sv[0]);
}

static volatile sig_atomic_t alarms;

static void count_alarm(int sig)
{
	(void)sig;
	alarms++;
}

/* A signal in the middle (no SA_RESTART) does not end smcr_sys_poll_until's wait. */
static void poll_until_outlasts_signals(void **state)
{
	struct sigaction sa = { .sa_handler = count_alarm }, was;
	struct itimerval every_20ms = { { 0, 20000 }, { 0, 20000 } }, off = { { 0, 0 }, { 0, 0 } };
	uint64_t deadline;
	int sv[2];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	struct pollfd p = { .fd = sv[0], .events = POLLIN };

	assert_int_equal(sigaction(SIGALRM, &sa, &was), 0);
	alarms = 0;
	assert_int_equal(setitimer(ITIMER_REAL, &every_20ms, NULL), 0);
	deadline = smc_deadline_after(200);
	assert_int_equal(smcr_sys_poll_until(&p, 1, deadline), 0);
	assert_true(smc_clock_ns() >= deadline);
	assert_true(alarms > 0);
	assert_int_equal(write(sv[1], "x", 1), 1);
	assert_int_equal(smcr_sys_poll_until(&p, 1, smc_deadline_after(1000)), 1);
	assert_int_equal(p.revents, POLLIN);
	assert_int_equal(smcr_sys_poll_until(&p, 1, 0), 1);       /* just looks */
	assert_int_equal(setitimer(ITIMER_REAL, &off, NULL), 0);
	assert_int_equal(sigaction(SIGALRM, &was, NULL), 0);
	close(sv[0]);
	close(sv[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(unknown_until_set, reset),
		cmocka_unit_test_setup(tcp_states, reset),
		cmocka_unit_test_setup(out_of_range_is_untracked, reset),
		cmocka_unit_test_setup(chunk_edges, reset),
		cmocka_unit_test_setup(forget_and_copy, reset),
		cmocka_unit_test_setup(next_sock_finds_each_number, reset),
		cmocka_unit_test_setup(plain_serves_no_call, reset),
		cmocka_unit_test_setup(holds_nothing, reset),
		cmocka_unit_test_setup(forget_range, reset),
		cmocka_unit_test_setup(concurrent_first_use, reset),
		cmocka_unit_test_setup(own_descriptors_stay, reset),
		cmocka_unit_test_setup(range_closes_spare_own, reset),
		cmocka_unit_test_setup(dup_onto_kept_moves_it, reset),
		cmocka_unit_test_setup(wake_channel_never_blocks, reset),
		cmocka_unit_test_setup(waits_survive_rlimit_nofile_0, reset),
		cmocka_unit_test_setup(poll_until_outlasts_signals, reset),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
