/* Unit tests of the seccomp filter interpreter (libsmcr/base/filter.h). */
#include <errno.h>
#include <linux/audit.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <cmocka.h>

#include "filter.h"

#define LOAD(off) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (off))
#define ALLOW BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
#define KILL BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS)
#define NR offsetof(struct seccomp_data, nr)
#define ARCH offsetof(struct seccomp_data, arch)
#define ARG(i) (offsetof(struct seccomp_data, args) + 8 * (i))

/*
 * A sandbox's filter, shaped as vsftpd's pre-login one: the architecture
 * checked, read and write allowed, recvfrom only with flags MSG_PEEK,
 * getpid answered with an error, everything else killed.
 */
static const struct sock_filter sandbox[] = {
	LOAD(ARCH),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
	KILL,
	LOAD(NR),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_read, 0, 1),
	ALLOW,
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_write, 0, 1),
	ALLOW,
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_recvfrom, 0, 4),
	LOAD(ARG(3)),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, MSG_PEEK, 0, 1),
	ALLOW,
	LOAD(NR),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getpid, 0, 1),
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
	KILL,
};

static uint32_t run(const struct sock_filter *prog, unsigned int len, long nr, uint64_t arg3)
{
	struct seccomp_data d = { .nr = (int)nr, .arch = AUDIT_ARCH_X86_64, .args = { [3] = arg3 } };

	return smcr_filter_run(prog, len, &d);
}

#define RUN(prog, nr, arg3) run(prog, sizeof(prog) / sizeof(prog[0]), nr, arg3)

static void sandbox_verdicts(void **state)
{
	(void)state;
	assert_int_equal(RUN(sandbox, SYS_read, 0), SECCOMP_RET_ALLOW);
	assert_int_equal(RUN(sandbox, SYS_write, 0), SECCOMP_RET_ALLOW);
	assert_int_equal(RUN(sandbox, SYS_recvfrom, MSG_PEEK), SECCOMP_RET_ALLOW);
	assert_int_equal(RUN(sandbox, SYS_recvfrom, MSG_DONTWAIT), SECCOMP_RET_KILL_PROCESS);
	assert_int_equal(RUN(sandbox, SYS_ppoll, 0), SECCOMP_RET_KILL_PROCESS);
	assert_int_equal(RUN(sandbox, SYS_getpid, 0), SECCOMP_RET_ERRNO | EPERM);
	assert_false(smcr_filter_action_allows(SECCOMP_RET_ERRNO | EPERM));
	assert_true(smcr_filter_action_allows(SECCOMP_RET_LOG));
	assert_false(smcr_filter_action_allows(SECCOMP_RET_TRAP));
}

/* The registers, scratch memory and arithmetic a compiler's filters use. */
static void registers_memory_and_arithmetic(void **state)
{
	/* allows when (nr * 2 + 1) stored, reloaded into X and moved back equals 2 * SYS_write + 1 */
	static const struct sock_filter prog[] = {
		LOAD(NR),
		BPF_STMT(BPF_ALU | BPF_MUL | BPF_K, 2),
		BPF_STMT(BPF_ALU | BPF_ADD | BPF_K, 1),
		BPF_STMT(BPF_ST, 3),
		BPF_STMT(BPF_LDX | BPF_MEM, 3),
		BPF_STMT(BPF_LD | BPF_IMM, 0),
		BPF_STMT(BPF_MISC | BPF_TXA, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 2 * SYS_write + 1, 0, 1),
		ALLOW,
		BPF_STMT(BPF_RET | BPF_A, 0),
	};

	(void)state;
	assert_int_equal(RUN(prog, SYS_write, 0), SECCOMP_RET_ALLOW);
	/* otherwise it returns A: 2 * SYS_read + 1 = 1, SECCOMP_RET_KILL_THREAD's data */
	assert_int_equal(RUN(prog, SYS_read, 0), 2 * SYS_read + 1);
}

/* A program the kernel would refuse is never taken for an allowing one. */
static void malformed_programs_deny(void **state)
{
	static const struct sock_filter past_end[] = {
		BPF_JUMP(BPF_JMP | BPF_JA, 5, 0, 0),
		ALLOW,
	};
	static const struct sock_filter outside_data[] = {
		LOAD(sizeof(struct seccomp_data)),
		ALLOW,
	};
	static const struct sock_filter unaligned[] = {
		LOAD(2),
		ALLOW,
	};
	static const struct sock_filter divide_by_zero[] = {
		BPF_STMT(BPF_LD | BPF_IMM, 1),
		BPF_STMT(BPF_ALU | BPF_DIV | BPF_K, 0),
		ALLOW,
	};
	static const struct sock_filter falls_off[] = {
		LOAD(NR),
	};
	static const struct sock_filter bad_memory[] = {
		BPF_STMT(BPF_ST, BPF_MEMWORDS),
		ALLOW,
	};

	(void)state;
	assert_int_equal(RUN(past_end, SYS_read, 0), SECCOMP_RET_KILL_PROCESS);
	assert_int_equal(RUN(outside_data, SYS_read, 0), SECCOMP_RET_KILL_PROCESS);
	assert_int_equal(RUN(unaligned, SYS_read, 0), SECCOMP_RET_KILL_PROCESS);
	assert_int_equal(RUN(divide_by_zero, SYS_read, 0), SECCOMP_RET_KILL_PROCESS);
	assert_int_equal(RUN(falls_off, SYS_read, 0), SECCOMP_RET_KILL_PROCESS);
	assert_int_equal(RUN(bad_memory, SYS_read, 0), SECCOMP_RET_KILL_PROCESS);
	assert_int_equal(run(sandbox, 0, SYS_read, 0), SECCOMP_RET_KILL_PROCESS);
	assert_int_equal(run(NULL, 3, SYS_read, 0), SECCOMP_RET_KILL_PROCESS);
}

/* Installed filters stack: a call must pass every one. */
static void filters_stack(void **state)
{
	static const struct sock_filter no_write[] = {
		LOAD(NR),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_write, 0, 1),
		KILL,
		ALLOW,
	};
	const struct sock_fprog first = { .len = sizeof(sandbox) / sizeof(sandbox[0]),
					  .filter = (struct sock_filter *)sandbox };
	const struct sock_fprog second = { .len = 4, .filter = (struct sock_filter *)no_write };
	const uint64_t none[6] = { 0 }, peek[6] = { [3] = MSG_PEEK };

	(void)state;
	assert_false(smcr_filter_any());
	assert_true(smcr_filter_permits(SYS_ppoll, none));
	assert_true(smcr_filter_permits_lock_waits());
	assert_true(smcr_filter_installed(&first));
	assert_true(smcr_filter_any());
	assert_false(smcr_filter_permits_lock_waits());     /* read and write only: no futex */
	assert_true(smcr_filter_permits(SYS_write, none));
	assert_true(smcr_filter_permits(SYS_recvfrom, peek));
	assert_false(smcr_filter_permits(SYS_recvfrom, none));
	assert_false(smcr_filter_permits(SYS_ppoll, none));
	assert_true(smcr_filter_installed(&second));
	assert_true(smcr_filter_permits(SYS_read, none));
	assert_false(smcr_filter_permits(SYS_write, none));
	/* one that cannot be kept: from then on nothing of ours is allowed */
	assert_false(smcr_filter_installed(NULL));
	assert_false(smcr_filter_permits(SYS_read, none));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sandbox_verdicts),
		cmocka_unit_test(registers_memory_and_arithmetic),
		cmocka_unit_test(malformed_programs_deny),
		cmocka_unit_test(filters_stack),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
