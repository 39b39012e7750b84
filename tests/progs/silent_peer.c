/*
 * silent_peer - clients that negotiate SMC in the TCP handshake and then say
 * nothing: no CLC Proposal, no byte at all (tests/adversarial/silent_client.sh).
 * Any local user can be one: it registers with smcrd as libsmcr does
 * (control_proto.h), and marks its sockets in the ownership map smcrd gives
 * it, so that its SYNs carry the option; libsmcr would send its Proposal.
 *
 *   silent_peer ADDR PORT N BYTES [late|prompt]
 *       N connections to ADDR:PORT (IPv4), all made before any is read;
 *       then, from each, a banner of BYTES bytes, and, if BYTES is not 0,
 *       the stream to its end (10 s at most for all).  Prints per
 *       connection "conn I: decline 0xCODE then TEXT, END" when the stream
 *       begins with a whole CLC Decline (CODE its diagnosis, TEXT what
 *       follows it, or "N bytes" if longer than 64; END "end" if the
 *       stream ended, "reset" if it was reset, else "open"), else
 *       "conn I: TEXT, END"; then "done", and holds the connections open
 *       until killed.
 *       late: a client that was too slow, not a silent one: on a Decline,
 *       it sends its Proposal then (SMC-D), as libsmcr would have.
 *       prompt: not silent at all: it sends its Proposal as it connects, as
 *       libsmcr does, and waits for the answer with the rest.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/bpf.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "control_proto.h"
#include "smc_clc.h"

/* The ownership map smcrd gives a registered process; exits if there is none. */
static int owned_map(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct smcr_control_msg m = { .version = SMCR_CONTROL_VERSION,
				      .type = SMCR_CONTROL_REGISTER };
	union smcr_control_cmsg room;
	struct iovec iov = { &m, sizeof(m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0), maps[2] = { -1, -1 };

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", smcr_rundir(), SMCR_CONTROL_SOCKET);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    send(fd, &m, sizeof(m), MSG_NOSIGNAL) != sizeof(m)) {
		perror("smcrd");
		exit(1);
	}
	mh.msg_control = room.buf;
	mh.msg_controllen = sizeof(room.buf);
	if (recvmsg(fd, &mh, 0) != sizeof(m) || m.result ||
	    smcr_control_take_fds(&mh, maps, 2, close) != 2) {
		fprintf(stderr, "silent_peer: not registered: %s\n", m.text);
		exit(1);
	}
	return maps[1];         /* smcrd's connection stays open: we stay registered */
}

/* A socket marked in map, so that its SYN carries the option, connected to sa. */
static int marked_connect(int map, const struct sockaddr_in *sa)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	uint32_t mark = 1;
	union bpf_attr attr = { .map_fd = (uint32_t)map, .key = (uint64_t)(uintptr_t)&s,
				.value = (uint64_t)(uintptr_t)&mark };

	if (s < 0 || syscall(SYS_bpf, BPF_MAP_UPDATE_ELEM, &attr, sizeof(attr)) ||
	    connect(s, (const struct sockaddr *)sa, sizeof(*sa))) {
		perror("silent_peer: connect");
		exit(1);
	}
	return s;
}

/* A Proposal, as a client's library sends it (SMC-D). */
static void propose(int s)
{
	const struct smc_clc_proposal prop = { .smc_type = SMC_TYPE_D, .ism_gid = 1,
					       .prefix_len = 8 };
	uint8_t msg[SMC_CLC_MAX_LEN];
	int len = smc_clc_encode_proposal(msg, sizeof(msg), &prop);

	if (len <= 0 || send(s, msg, (size_t)len, MSG_NOSIGNAL) != len) {
		perror("silent_peer: a Proposal");
		exit(1);
	}
}

/*
 * The stream of s into buf, at most size bytes: BYTES of banner, after the
 * Decline it may begin with (late: then our Proposal goes); then, for a
 * banner, to its end; until deadline (CLOCK_MONOTONIC seconds).  *end: how
 * the stream ended.  How many came.
 */
static size_t read_banner(int s, char *buf, size_t size, size_t bytes, bool late,
			  time_t deadline, const char **end)
{
	static const char eyecatcher[] = "\xe2\xd4\xc3\xd9";
	size_t got = 0, want = bytes;
	struct timespec now;
	bool proposed = false;

	*end = "open";
	while ((got < want || (bytes && got < size)) &&
	       clock_gettime(CLOCK_MONOTONIC, &now) == 0 && now.tv_sec < deadline) {
		struct pollfd p = { .fd = s, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, 100) != 1)
			continue;
		n = recv(s, buf + got, size - got, 0);
		if (n <= 0) {
			*end = n == 0 ? "end" : errno == ECONNRESET ? "reset" : "open";
			break;
		}
		got += (size_t)n;
		if (got >= 4 && !memcmp(buf, eyecatcher, 4))
			want = SMC_CLC_DECLINE_LEN + bytes;
		if (late && !proposed && want > bytes && got >= SMC_CLC_DECLINE_LEN) {
			propose(s);
			proposed = true;
		}
	}
	return got;
}

/* Text of got bytes at buf, or how many if too many to show. */
static void show_text(const char *buf, size_t got)
{
	if (got > 64)
		printf("%zu bytes", got);
	else
		printf("%.*s", (int)got, buf);
}

/* What connection i received: the Decline it begins with, if whole, then the rest. */
static void show(int i, const char *buf, size_t got, const char *end)
{
	struct smc_clc_msg m;

	printf("conn %d: ", i);
	if (got >= SMC_CLC_DECLINE_LEN &&
	    smc_clc_decode((const uint8_t *)buf, SMC_CLC_DECLINE_LEN, &m) == SMCR_REASON_NONE &&
	    m.hdr.type == SMC_CLC_DECLINE) {
		printf("decline 0x%08x then ", m.decline.peer_diagnosis);
		buf += SMC_CLC_DECLINE_LEN;
		got -= SMC_CLC_DECLINE_LEN;
	}
	show_text(buf, got);
	printf(", %s\n", end);
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct timespec now;
	int n, *socks, map;
	size_t bytes;
	const char *mode = argc == 6 ? argv[5] : "";
	bool late = !strcmp(mode, "late"), prompt = !strcmp(mode, "prompt");

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 5 || argc > 6 || (argc == 6 && !late && !prompt) ||
	    inet_pton(AF_INET, argv[1], &sa.sin_addr) != 1) {
		fprintf(stderr, "usage: silent_peer ADDR PORT N BYTES [late|prompt]\n");
		return 2;
	}
	sa.sin_port = htons((uint16_t)atoi(argv[2]));
	n = atoi(argv[3]);
	bytes = strtoul(argv[4], NULL, 0);
	socks = calloc((size_t)n, sizeof(*socks));
	size_t size = SMC_CLC_DECLINE_LEN + bytes + 64;        /* room for what should not come */
	char *buf = malloc(size);
	if (!socks || !buf)
		return 1;
	map = owned_map();
	for (int i = 0; i < n; i++) {
		socks[i] = marked_connect(map, &sa);
		if (prompt)
			propose(socks[i]);
	}
	printf("connected %d\n", n);
	clock_gettime(CLOCK_MONOTONIC, &now);
	for (int i = 0; i < n; i++) {
		const char *end;
		size_t got = read_banner(socks[i], buf, size, bytes, late, now.tv_sec + 10, &end);

		show(i, buf, got, end);
	}
	printf("done\n");
	for (;;)
		pause();        /* the connections stay open, held, until killed */
}
