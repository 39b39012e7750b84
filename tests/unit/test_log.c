/* Unit tests of libsmcr's logging (libsmcr/base/log.c) and statistics line (stats.c). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "filter.h"
#include "log.h"
#include "stats.h"

static void parse_levels(void **state)
{
	(void)state;
	assert_int_equal(smcr_log_parse_level("error"), SMCR_LOG_ERROR);
	assert_int_equal(smcr_log_parse_level("warn"), SMCR_LOG_WARN);
	assert_int_equal(smcr_log_parse_level("info"), SMCR_LOG_INFO);
	assert_int_equal(smcr_log_parse_level("debug"), SMCR_LOG_DEBUG);
	assert_int_equal(smcr_log_parse_level("DEBUG"), -1);
	assert_int_equal(smcr_log_parse_level("warning"), -1);
	assert_int_equal(smcr_log_parse_level(""), -1);
}

static void env_sets_level(void **state)
{
	(void)state;
	setenv("SMCR_LOG", "info", 1);
	smcr_log_init();
	assert_int_equal(smcr_log_level, SMCR_LOG_INFO);
	setenv("SMCR_LOG", "loud", 1);            /* refused: level unchanged */
	smcr_log_init();
	assert_int_equal(smcr_log_level, SMCR_LOG_INFO);
	unsetenv("SMCR_LOG");
	smcr_log_level = SMCR_LOG_ERROR;
}

static void line_format(void **state)
{
	(void)state;
	char buf[64];
	size_t len = smcr_log_format(buf, sizeof(buf), 42, SMCR_LOG_WARN, "x=%d", 7);
	assert_string_equal(buf, "libsmcr[42]: warn: x=7\n");
	assert_int_equal(len, strlen(buf));
}

static void long_line_truncated_with_newline(void **state)
{
	(void)state;
	char buf[32], text[100];
	memset(text, 'a', sizeof(text) - 1);
	text[sizeof(text) - 1] = '\0';
	size_t len = smcr_log_format(buf, sizeof(buf), 1, SMCR_LOG_ERROR, "%s", text);
	assert_int_equal(len, sizeof(buf) - 1);
	assert_int_equal(buf[len - 1], '\n');
	assert_int_equal(buf[len], '\0');
}

static void logging_keeps_errno(void **state)
{
	(void)state;
	errno = EADDRINUSE;
	smcr_log_write(SMCR_LOG_DEBUG, "test line from %s", "test_log");
	assert_int_equal(errno, EADDRINUSE);
}

static void sockaddr_names(void **state)
{
	(void)state;
	char buf[64];
	struct sockaddr_in in = { .sin_family = AF_INET, .sin_port = htons(80) };
	struct sockaddr_in6 in6 = { .sin6_family = AF_INET6, .sin6_port = htons(443),
				    .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	inet_pton(AF_INET, "127.0.0.1", &in.sin_addr);
	assert_string_equal(smcr_sockaddr_str((void *)&in, sizeof(in), buf, sizeof(buf)),
			    "127.0.0.1:80");
	assert_string_equal(smcr_sockaddr_str((void *)&in6, sizeof(in6), buf, sizeof(buf)),
			    "[::1]:443");
	assert_string_equal(smcr_sockaddr_str((void *)&in6, 8, buf, sizeof(buf)), "?");
	assert_string_equal(smcr_sockaddr_str(NULL, 0, buf, sizeof(buf)), "?");
}

/*
 * Writes one error line to a regular file under RLIMIT_FSIZE 0, in a
 * child; returns its wait status.  told: whether the log hears of the limit.
 */
static int log_under_file_size_limit(bool told)
{
	char path[] = "/tmp/test_log.XXXXXX";
	int fd = mkstemp(path), status = -1;
	pid_t child;

	assert_true(fd >= 0);
	unlink(path);
	child = fork();
	if (child == 0) {
		struct rlimit none = { 0, 0 };

		smcr_log_use_fd(fd);
		if (setrlimit(RLIMIT_FSIZE, &none) != 0)
			_exit(2);
		if (told)
			smcr_log_file_limit(none.rlim_cur);
		smcr_log(SMCR_LOG_ERROR, "a line past the limit");
		_exit(0);
	}
	assert_int_equal(waitpid(child, &status, 0), child);
	close(fd);
	smcr_log_use_fd(STDERR_FILENO);
	return status;
}

/* A sandbox's RLIMIT_FSIZE 0 makes a log line to a file SIGXFSZ: none is written. */
static void no_line_to_a_file_past_its_limit(void **state)
{
	int status = log_under_file_size_limit(false);

	(void)state;
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGXFSZ);   /* the danger */
	status = log_under_file_size_limit(true);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/*
 * Writes one error line in a child whose seccomp filter kills on write;
 * returns its wait status.  told: whether the filter is made known
 * (base/filter.h), as the interposed prctl does before installing it.
 */
static int log_under_filter(bool told)
{
	struct sock_filter kill_write[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_write, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = 4, .filter = kill_write };
	int status = -1;
	pid_t child = fork();

	if (child == 0) {
		if (told && !smcr_filter_installed(&prog))
			_exit(2);
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
		    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
			_exit(3);
		smcr_log(SMCR_LOG_ERROR, "a line the filter forbids");
		syscall(SYS_exit_group, 0);
	}
	assert_int_equal(waitpid(child, &status, 0), child);
	return status;
}

/* A sandbox's filter that forbids write would make a log line SIGSYS: none is written. */
static void no_line_that_a_filter_forbids(void **state)
{
	int status = log_under_filter(false);

	(void)state;
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS);     /* the danger */
	status = log_under_filter(true);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void stats_line_and_reset(void **state)
{
	(void)state;
	char buf[512], small[40];
	smcr_stat_add(tcp_listeners, 1);
	smcr_stat_add(tcp_clients, 2);
	smcr_stat_add(tcp_servers, 3);
	smcr_stat_add(tcp_bytes_in, 10);
	smcr_stat_add(tcp_bytes_out, 20);
	smcr_stat_add(smc_clients, 1);
	smcr_stat_add(fallbacks[SMCR_REASON_PEERNOSMC], 2);
	smcr_stat_add(fallbacks[SMCR_REASON_NODAEMON], 1);
	smcr_stat_add(transport[SMCR_TRANSPORT_SHM].clients, 1);
	smcr_stat_add(transport[SMCR_TRANSPORT_SHM].bytes_in, 5);
	smcr_stat_add(transport[SMCR_TRANSPORT_SHM].bytes_out, 7);
	smcr_stats_format(buf, sizeof(buf));
	assert_string_equal(buf, "tcp: 1 listener, 2 client, 3 server connections; "
				 "10 bytes in, 20 out; smc: 1 client, 0 server negotiated; "
				 "shm: 1 client, 0 server, 5 B in, 7 B out; "
				 "fallback: NODAEMON 1, PEERNOSMC 2");
	size_t len = smcr_stats_format(small, sizeof(small));   /* truncated, terminated */
	assert_int_equal(len, sizeof(small) - 1);
	assert_int_equal(strlen(small), sizeof(small) - 1);
	smcr_stats_reset();
	smcr_stats_format(buf, sizeof(buf));
	assert_string_equal(buf, "tcp: 0 listener, 0 client, 0 server connections; "
				 "0 bytes in, 0 out; smc: 0 client, 0 server negotiated; "
				 "shm: 0 client, 0 server, 0 B in, 0 B out");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(parse_levels),
		cmocka_unit_test(env_sets_level),
		cmocka_unit_test(line_format),
		cmocka_unit_test(long_line_truncated_with_newline),
		cmocka_unit_test(logging_keeps_errno),
		cmocka_unit_test(sockaddr_names),
		cmocka_unit_test(no_line_to_a_file_past_its_limit),
		cmocka_unit_test(no_line_that_a_filter_forbids),
		cmocka_unit_test(stats_line_and_reset),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
