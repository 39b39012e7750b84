/*
 * filter.c - the seccomp filters a process installed, and a classic BPF
 * interpreter that runs them as the kernel does (filter.h).
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include "filter.h"

#if defined(__x86_64__)
#define OUR_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define OUR_AUDIT_ARCH AUDIT_ARCH_AARCH64
#else
#error "the seccomp_data arch of this machine is not known here"
#endif

/* The registers and scratch memory of one run. */
struct machine {
	uint32_t a, x, mem[BPF_MEMWORDS];
};

/* A 32-bit word of d at offset k, as BPF_LD|BPF_W|BPF_ABS loads it; false if outside. */
static bool load_word(const struct seccomp_data *d, uint32_t k, uint32_t *out)
{
	if (k % 4 || k > sizeof(*d) - 4)
		return false;
	memcpy(out, (const uint8_t *)d + k, 4);
	return true;
}

/* What f (BPF_LD or BPF_LDX, not BPF_ABS) loads; false if no such load. */
static bool load_value(const struct sock_filter *f, const struct machine *m, uint32_t *out)
{
	if (BPF_SIZE(f->code) != BPF_W)
		return false;
	switch (BPF_MODE(f->code)) {
	case BPF_LEN:
		*out = sizeof(struct seccomp_data);
		return true;
	case BPF_IMM:
		*out = f->k;
		return true;
	case BPF_MEM:
		if (f->k >= BPF_MEMWORDS)
			return false;
		*out = m->mem[f->k];
		return true;
	default:
		return false;
	}
}

/* A op b for BPF_ALU op; false on a division by zero or an unknown op. */
static bool alu(uint16_t op, uint32_t a, uint32_t b, uint32_t *out)
{
	switch (op) {
	case BPF_ADD: *out = a + b; return true;
	case BPF_SUB: *out = a - b; return true;
	case BPF_MUL: *out = a * b; return true;
	case BPF_DIV: *out = b ? a / b : 0; return b != 0;
	case BPF_MOD: *out = b ? a % b : 0; return b != 0;
	case BPF_OR: *out = a | b; return true;
	case BPF_AND: *out = a & b; return true;
	case BPF_XOR: *out = a ^ b; return true;
	case BPF_LSH: *out = b < 32 ? a << b : 0; return true;
	case BPF_RSH: *out = b < 32 ? a >> b : 0; return true;
	case BPF_NEG: *out = -a; return true;
	default: return false;
	}
}

/* Whether the conditional jump op holds for a against b. */
static bool jump_holds(uint16_t op, uint32_t a, uint32_t b)
{
	switch (op) {
	case BPF_JEQ: return a == b;
	case BPF_JGT: return a > b;
	case BPF_JGE: return a >= b;
	default: return (a & b) != 0;   /* BPF_JSET */
	}
}

/*
 * Runs instruction i on m; returns the next instruction's index, or -1
 * with *action set when the program returns (or is malformed).
 */
static long step(const struct sock_filter *prog, unsigned int len, unsigned int i,
		 const struct seccomp_data *d, struct machine *m, uint32_t *action)
{
	const struct sock_filter *f = &prog[i];
	uint32_t src = BPF_SRC(f->code) == BPF_X ? m->x : f->k;

	*action = SECCOMP_RET_KILL_PROCESS;
	switch (BPF_CLASS(f->code)) {
	case BPF_LD:
		if (f->code == (BPF_LD | BPF_W | BPF_ABS))
			return load_word(d, f->k, &m->a) ? (long)i + 1 : -1;
		return load_value(f, m, &m->a) ? (long)i + 1 : -1;
	case BPF_LDX:
		return load_value(f, m, &m->x) ? (long)i + 1 : -1;
	case BPF_ST:
	case BPF_STX:
		if (f->k >= BPF_MEMWORDS)
			return -1;
		m->mem[f->k] = BPF_CLASS(f->code) == BPF_ST ? m->a : m->x;
		return (long)i + 1;
	case BPF_ALU:
		return alu(BPF_OP(f->code), m->a, src, &m->a) ? (long)i + 1 : -1;
	case BPF_JMP: {
		uint32_t off = BPF_OP(f->code) == BPF_JA ? f->k :
			       jump_holds(BPF_OP(f->code), m->a, src) ? f->jt : f->jf;

		return off < len - i - 1 ? (long)(i + 1 + off) : -1;
	}
	case BPF_RET:
		if (BPF_RVAL(f->code) == BPF_A)
			*action = m->a;
		else if (BPF_RVAL(f->code) == BPF_K)
			*action = f->k;
		return -1;
	default:                /* BPF_MISC */
		if (BPF_MISCOP(f->code) == BPF_TAX)
			m->x = m->a;
		else
			m->a = m->x;
		return (long)i + 1;
	}
}

uint32_t smcr_filter_run(const struct sock_filter *prog, unsigned int len,
			 const struct seccomp_data *d)
{
	struct machine m = { 0 };
	uint32_t action = SECCOMP_RET_KILL_PROCESS;
	long next = 0;

	if (!prog || len == 0 || len > BPF_MAXINSNS)
		return action;
	/* every jump goes forward, so at most len steps */
	while (next >= 0 && (unsigned long)next < len)
		next = step(prog, len, (unsigned int)next, d, &m, &action);
	return action;
}

bool smcr_filter_action_allows(uint32_t action)
{
	uint32_t kind = action & SECCOMP_RET_ACTION_FULL;

	return kind == SECCOMP_RET_ALLOW || kind == SECCOMP_RET_LOG;
}

/*
 * The filters installed, each a copy of its program, in a fixed table:
 * entries below nfilters never change, so readers take no lock.  One that
 * could not be kept (memory, too many) makes every call count as denied.
 */
#define FILTERS_MAX 32
static pthread_mutex_t install_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sock_fprog filters[FILTERS_MAX];
static unsigned int nfilters;
static bool unkept;

bool smcr_filter_installed(const struct sock_fprog *prog)
{
	int saved_errno = errno;
	struct sock_filter *copy = NULL;
	unsigned int n;

	pthread_mutex_lock(&install_lock);
	n = nfilters;
	if (prog && prog->filter && prog->len > 0 && prog->len <= BPF_MAXINSNS &&
	    n < FILTERS_MAX && (copy = malloc(prog->len * sizeof(*copy)))) {
		memcpy(copy, prog->filter, prog->len * sizeof(*copy));
		filters[n] = (struct sock_fprog){ .len = prog->len, .filter = copy };
		__atomic_store_n(&nfilters, n + 1, __ATOMIC_RELEASE);
	} else {
		__atomic_store_n(&unkept, true, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&install_lock);
	errno = saved_errno;
	return copy != NULL;
}

/* The mode on /proc/self/status's "Seccomp:" line: 0 none, 1 strict, 2 filter; 0 if unknown. */
static int seccomp_mode(void)
{
	FILE *status = fopen("/proc/self/status", "re");
	char line[256];
	int mode = 0;

	if (!status)
		return 0;
	while (fgets(line, sizeof(line), status))
		if (sscanf(line, "Seccomp: %d", &mode) == 1)
			break;
	fclose(status);
	return mode;
}

void smcr_filter_learn_inherited(void)
{
	static struct sock_filter forbids_bpf[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_bpf, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	const struct sock_fprog assumed = { .len = 4, .filter = forbids_bpf };
	const char *allows_bpf = getenv("SMCR_SECCOMP_ALLOWS_BPF");
	int saved_errno = errno;

	if (seccomp_mode() != 0 && !(allows_bpf && strcmp(allows_bpf, "1") == 0))
		smcr_filter_installed(&assumed);
	errno = saved_errno;
}

bool smcr_filter_any(void)
{
	return __atomic_load_n(&nfilters, __ATOMIC_ACQUIRE) ||
	       __atomic_load_n(&unkept, __ATOMIC_ACQUIRE);
}

bool smcr_filter_permits_with(const struct sock_fprog *candidate, long nr,
			      const uint64_t args[6])
{
	struct seccomp_data d = { .nr = (int)nr, .arch = OUR_AUDIT_ARCH };
	unsigned int n = __atomic_load_n(&nfilters, __ATOMIC_ACQUIRE);

	if (__atomic_load_n(&unkept, __ATOMIC_ACQUIRE))
		return false;
	memcpy(d.args, args, sizeof(d.args));
	if (candidate && !smcr_filter_action_allows(smcr_filter_run(candidate->filter,
								    candidate->len, &d)))
		return false;
	for (unsigned int i = 0; i < n; i++)
		if (!smcr_filter_action_allows(smcr_filter_run(filters[i].filter, filters[i].len, &d)))
			return false;
	return true;
}

bool smcr_filter_permits_sockopts(int fd, const int *opts, int n)
{
	for (int i = 0; i < n; i++) {
		const uint64_t args[6] = { (uint64_t)fd, SOL_SOCKET, (uint64_t)opts[i] };

		if (!smcr_filter_permits(SYS_getsockopt, args))
			return false;
	}
	return true;
}

bool smcr_filter_permits(long nr, const uint64_t args[6])
{
	return !smcr_filter_any() || smcr_filter_permits_with(NULL, nr, args);
}

bool smcr_filter_permits_lock_waits(void)
{
	const uint64_t wait[6] = { 0, FUTEX_WAIT_PRIVATE }, wake[6] = { 0, FUTEX_WAKE_PRIVATE };

	return smcr_filter_permits(SYS_futex, wait) && smcr_filter_permits(SYS_futex, wake);
}
