/*
 * seccomp_exec.c - runs a program under a seccomp filter it never saw
 * installed, as systemd does for a unit with SystemCallFilter=: installs
 * a filter, then execs.
 *
 *   seccomp_exec bpf PROG ARGS...      the filter kills the process on
 *                                      bpf(2) (systemd's @system-service
 *                                      leaves bpf out, and kills by default)
 *   seccomp_exec nothing PROG ARGS...  the filter allows every call
 */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	const long forbidden = argc > 1 && strcmp(argv[1], "bpf") == 0 ? SYS_bpf : -1;
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)forbidden, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	const struct sock_fprog prog = { .len = sizeof(filter) / sizeof(filter[0]), .filter = filter };

	if (argc < 3 || (forbidden < 0 && strcmp(argv[1], "nothing") != 0)) {
		fprintf(stderr, "usage: seccomp_exec bpf|nothing PROG ARGS...\n");
		return 2;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
		perror("seccomp_exec: the filter");
		return 1;
	}
	execvp(argv[2], argv + 2);
	perror("seccomp_exec: exec");
	return 1;
}
