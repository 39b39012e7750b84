/*
 * hs_probe - one TCP connection end, and what smcrd's sock_ops program
 * recorded for it (negotiation_wire.sh).
 *
 *   hs_probe listen ADDR PORT PROG_ID    accept one connection, then print
 *                                        "server FLAGS", close, exit
 *   hs_probe connect ADDR PORT PROG_ID [SRC]  connect (from address SRC),
 *                                        print "client FLAGS", exit
 *   hs_probe counters PROG_ID            print the program's counters, summed
 *                                        over the CPUs, in enum order
 *
 * Like libsmcr, it marks its socket in the program's ownership map before
 * listen() or connect() (not with HS_UNMARKED=1: a process without libsmcr).
 * FLAGS is the socket's SMCR_HS_* value in hex ("none": no entry, or PROG_ID
 * 0).  The maps are found from the program's id, as root; libsmcr gets the
 * result map's descriptor from smcrd instead.  ADDR "::" listens on both
 * families.
 */
#include <arpa/inet.h>
#include <linux/bpf.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

static long sys_bpf(int cmd, union bpf_attr *attr)
{
	return syscall(SYS_bpf, cmd, attr, sizeof(*attr));
}

/* ADDR (IPv4 or IPv6) and port into ss; -1 if ADDR is neither. */
static int parse_addr(const char *addr, uint16_t port, struct sockaddr_storage *ss)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, addr, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
	} else if (inet_pton(AF_INET6, addr, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
	} else {
		fprintf(stderr, "hs_probe: bad address %s\n", addr);
		return -1;
	}
	return 0;
}

/* The program's map called name, or -1. */
static int prog_map(uint32_t prog_id, const char *name)
{
	union bpf_attr attr = { .prog_id = prog_id };
	uint32_t map_ids[16];
	struct bpf_prog_info prog = { .nr_map_ids = 16, .map_ids = (uint64_t)(uintptr_t)map_ids };
	int prog_fd = (int)sys_bpf(BPF_PROG_GET_FD_BY_ID, &attr);

	if (prog_fd < 0)
		return -1;
	memset(&attr, 0, sizeof(attr));
	attr.info.bpf_fd = (uint32_t)prog_fd;
	attr.info.info_len = sizeof(prog);
	attr.info.info = (uint64_t)(uintptr_t)&prog;
	if (sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &attr))
		return -1;
	for (uint32_t i = 0; i < prog.nr_map_ids && i < 16; i++) {
		struct bpf_map_info map = { 0 };
		memset(&attr, 0, sizeof(attr));
		attr.map_id = map_ids[i];
		int map_fd = (int)sys_bpf(BPF_MAP_GET_FD_BY_ID, &attr);
		memset(&attr, 0, sizeof(attr));
		attr.info.bpf_fd = (uint32_t)map_fd;
		attr.info.info_len = sizeof(map);
		attr.info.info = (uint64_t)(uintptr_t)&map;
		if (map_fd >= 0 && !sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &attr) &&
		    strcmp(map.name, name) == 0)
			return map_fd;
		close(map_fd);
	}
	return -1;
}

/* Marks sock as libsmcr does before connect() or listen(), unless HS_UNMARKED is set. */
static void mark(int sock, uint32_t prog_id)
{
	int map = prog_id && !getenv("HS_UNMARKED") ? prog_map(prog_id, "smcr_owned") : -1;
	uint32_t one = 1;
	union bpf_attr attr = { .map_fd = (uint32_t)map, .key = (uint64_t)(uintptr_t)&sock,
				.value = (uint64_t)(uintptr_t)&one };

	if (map >= 0 && sys_bpf(BPF_MAP_UPDATE_ELEM, &attr))
		perror("hs_probe: mark");
}

/*
 * HS_FULL_HEADER=1: TCP-MD5 (20 bytes, no timestamps), MSS, window scale,
 * SACK and a TFO cookie request leave 4 of the 40 option bytes: no room for
 * the SMC option.  peer is the other end's address.
 */
static void fill_header(int sock, const struct sockaddr_storage *peer, int connecting)
{
	struct tcp_md5sig md5 = { .tcpm_keylen = 4 };
	int one = 1;

	if (!getenv("HS_FULL_HEADER"))
		return;
	memcpy(&md5.tcpm_addr, peer, sizeof(*peer));
	memcpy(md5.tcpm_key, "smcr", 4);
	if (setsockopt(sock, IPPROTO_TCP, TCP_MD5SIG, &md5, sizeof(md5)))
		perror("hs_probe: TCP_MD5SIG");
	if (connecting ? setsockopt(sock, IPPROTO_TCP, TCP_FASTOPEN_CONNECT, &one, sizeof(one))
		       : setsockopt(sock, IPPROTO_TCP, TCP_FASTOPEN, &one, sizeof(one)))
		perror("hs_probe: TCP_FASTOPEN");
}

static void print_flags(const char *side, int sock, uint32_t prog_id)
{
	int map = prog_id ? prog_map(prog_id, "smcr_handshake") : -1;
	uint32_t flags;
	union bpf_attr attr = { .map_fd = (uint32_t)map, .key = (uint64_t)(uintptr_t)&sock,
				.value = (uint64_t)(uintptr_t)&flags };

	if (map >= 0 && !sys_bpf(BPF_MAP_LOOKUP_ELEM, &attr))
		printf("%s 0x%02x\n", side, flags);
	else
		printf("%s none\n", side);
}

/* The number of possible CPUs: per-CPU map values have one slot each. */
static long possible_cpus(void)
{
	FILE *f = fopen("/sys/devices/system/cpu/possible", "r");
	long first = 0, last = 0;
	int n = f ? fscanf(f, "%ld-%ld", &first, &last) : 0;

	if (f)
		fclose(f);
	return n == 2 ? last + 1 : first + 1;
}

static int print_counters(uint32_t prog_id)
{
	int map = prog_map(prog_id, "smcr_counters");
	long ncpus = possible_cpus();
	uint64_t per_cpu[ncpus];

	for (uint32_t key = 0; map >= 0; key++) {
		union bpf_attr attr = { .map_fd = (uint32_t)map, .key = (uint64_t)(uintptr_t)&key,
					.value = (uint64_t)(uintptr_t)per_cpu };
		uint64_t sum = 0;
		if (sys_bpf(BPF_MAP_LOOKUP_ELEM, &attr))
			break;
		for (long cpu = 0; cpu < ncpus; cpu++)
			sum += per_cpu[cpu];
		printf("%s%llu", key ? " " : "", (unsigned long long)sum);
	}
	printf("\n");
	return map >= 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	struct sockaddr_storage ss, src;
	int one = 1, zero = 0;

	if (argc == 3 && strcmp(argv[1], "counters") == 0)
		return print_counters((uint32_t)strtoul(argv[2], NULL, 0));
	if (argc != 5 && !(argc == 6 && strcmp(argv[1], "connect") == 0)) {
		fputs("usage: hs_probe listen|connect ADDR PORT PROG_ID [SRC] | counters PROG_ID\n",
		      stderr);
		return 2;
	}
	uint32_t prog_id = (uint32_t)strtoul(argv[4], NULL, 0);
	if (parse_addr(argv[2], (uint16_t)atoi(argv[3]), &ss) ||
	    (argc == 6 && parse_addr(argv[5], 0, &src)))
		return 2;
	alarm(20);                      /* never hang a test */
	int s = socket(ss.ss_family, SOCK_STREAM, 0);
	if (strcmp(argv[1], "listen") == 0) {
		setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (ss.ss_family == AF_INET6)
			setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		mark(s, prog_id);
		fill_header(s, &ss, 0);         /* loopback: the peer has our address */
		if (bind(s, (struct sockaddr *)&ss, sizeof(ss)) || listen(s, 8)) {
			perror("hs_probe: listen");
			return 1;
		}
		printf("listening\n");
		fflush(stdout);
		int c = accept(s, NULL, NULL);
		if (c < 0) {
			perror("hs_probe: accept");
			return 1;
		}
		print_flags("server", c, prog_id);
	} else {
		if (argc == 6 && bind(s, (struct sockaddr *)&src, sizeof(src))) {
			perror("hs_probe: bind");
			return 1;
		}
		mark(s, prog_id);
		fill_header(s, &ss, 1);
		if (connect(s, (struct sockaddr *)&ss, sizeof(ss))) {
			perror("hs_probe: connect");
			return 1;
		}
		print_flags("client", s, prog_id);
	}
	return 0;
}
