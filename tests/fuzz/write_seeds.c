/*
 * write_seeds.c - writes the seed corpora of the fuzz targets into
 * DIR/<target>/ (ctest runs it before the fuzz tests, through seeds.cmake,
 * into the build tree): the unit tests' golden messages (tests/unit/golden_*.h)
 * for fuzz_clc and fuzz_cdc, and for fuzz_control and fuzz_cdc_seq inputs
 * in their formats (fuzz_*_input.h) that walk each target's way through a
 * well-behaved exchange and a few of the malformed cases; for fuzz_clc_seq,
 * both roles' exchanges to SMC and a Decline; for fuzz_shm_peer, data both
 * ways with a peek and a scribble between it and the read; for fuzz_filter,
 * a sandbox's filter over the calls it allows and one it kills.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "control_proto.h"
#include "fuzz_cdc_seq_input.h"
#include "fuzz_clc_seq_input.h"
#include "fuzz_control_input.h"
#include "fuzz_shm_peer_input.h"
#include "golden_cdc.h"
#include "golden_clc.h"
#include "golden_leave.h"

struct seed {
	uint8_t bytes[1024];
	size_t len;
};

static void put(struct seed *s, const void *p, size_t n)
{
	if (n > sizeof(s->bytes) - s->len) {
		fprintf(stderr, "write_seeds: a seed outgrew its buffer\n");
		exit(1);
	}
	memcpy(s->bytes + s->len, p, n);
	s->len += n;
}

static void write_seed(const char *dir, const char *target, const char *name,
		       const uint8_t *bytes, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, target);
	if (mkdir(path, 0755) && errno != EEXIST) {
		perror(path);
		exit(1);
	}
	snprintf(path, sizeof(path), "%s/%s/%s", dir, target, name);
	f = fopen(path, "wb");
	if (!f || fwrite(bytes, 1, len, f) != len || fclose(f)) {
		perror(path);
		exit(1);
	}
}

static void clc_seeds(const char *dir)
{
	for (size_t i = 0; i < NGOLDENS; i++)
		write_seed(dir, "fuzz_clc", goldens[i].name, goldens[i].bytes, goldens[i].len);
}

#define SLOT(kind, pages) ((uint8_t)((kind) | (pages) << 4))

static struct fuzz_control_request request(uint8_t type, uint8_t slots, uint8_t offer)
{
	return (struct fuzz_control_request){ .shape = slots, .type = type, .offer = offer };
}

/* Register, offer on both ends, attach, resume, withdraw twice, ask for the status. */
static void control_lifecycle(const char *dir)
{
	struct fuzz_control_request r[8];
	struct seed s = { .len = 0 };

	r[0] = request(SMCR_CONTROL_REGISTER, 1, 0);
	r[0].slot[0] = SLOT(FUZZ_FD_STATS, 0);
	r[1] = request(SMCR_CONTROL_OFFER, 5, 0);
	r[1].bytes_pages = 1;
	memcpy(r[1].slot, (uint8_t[]){ SLOT(FUZZ_FD_TCP_A, 0), SLOT(FUZZ_FD_MEMFD_SEALED, 1),
					SLOT(FUZZ_FD_UNIX, 0), SLOT(FUZZ_FD_UNIX, 0),
					SLOT(FUZZ_FD_MEMFD_SEALED, 1) }, 5);
	r[2] = r[1];
	r[2].bytes_pages = 2;
	r[2].slot[0] = SLOT(FUZZ_FD_TCP_B, 0);
	r[2].slot[1] = SLOT(FUZZ_FD_MEMFD_SEALED, 2);
	r[3] = request(SMCR_CONTROL_ATTACH, 1, 0);
	r[3].slot[0] = SLOT(FUZZ_FD_TCP_B, 0);
	r[4] = request(SMCR_CONTROL_RESUME, 1, 0);
	r[4].slot[0] = SLOT(FUZZ_FD_TCP_A, 0);
	r[5] = request(SMCR_CONTROL_WITHDRAW, 1 | FUZZ_SHAPE_STRANGER, 0);
	r[5].slot[0] = SLOT(FUZZ_FD_TCP_A, 0);
	r[6] = request(SMCR_CONTROL_WITHDRAW, 0, 1);
	r[7] = request(SMCR_CONTROL_STATUS, 0, 0);
	for (size_t i = 0; i < 8; i++)
		put(&s, &r[i], sizeof(r[i]));
	write_seed(dir, "fuzz_control", "lifecycle", s.bytes, s.len);
}

/* Too many descriptors, too few, a wrong version, a message too short and too long. */
static void control_malformed(const char *dir)
{
	struct fuzz_control_request r[5];
	struct seed s = { .len = 0 };

	r[0] = request(SMCR_CONTROL_GRANT, 7, 0);
	memset(r[0].slot, SLOT(FUZZ_FD_DEV_NULL, 0), sizeof(r[0].slot));
	r[1] = request(SMCR_CONTROL_OFFER, 3, 0);
	memcpy(r[1].slot, (uint8_t[]){ SLOT(FUZZ_FD_UNIX, 0), SLOT(FUZZ_FD_PIPE, 0),
					SLOT(FUZZ_FD_TCP_LISTENER, 0) }, 3);
	r[2] = request(SMCR_CONTROL_STATS, FUZZ_SHAPE_BAD_VERSION, 0);
	r[3] = request(SMCR_CONTROL_GRANT, FUZZ_SHAPE_BAD_LENGTH, 0);
	r[3].len_delta = -8;
	r[4] = request(SMCR_CONTROL_RELEASE, FUZZ_SHAPE_BAD_LENGTH, 0);
	r[4].len_delta = 8;
	for (size_t i = 0; i < 5; i++)
		put(&s, &r[i], sizeof(r[i]));
	write_seed(dir, "fuzz_control", "malformed", s.bytes, s.len);
}

static void le(uint8_t *p, uint32_t v, unsigned int bytes)
{
	for (unsigned int i = 0; i < bytes; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

static struct fuzz_cdc_seq_header seq_header(uint8_t size, uint8_t peer_size, uint16_t wrap)
{
	struct fuzz_cdc_seq_header h = { .rmb_size = size, .peer_rmb_size = peer_size };

	le(h.rx_wrap, wrap, 2);
	le(h.tx_wrap, wrap, 2);
	le(h.rx_count, 3, 2);
	le(h.tx_count, 1, 2);
	return h;
}

static void seq_cdc(struct seed *s, int32_t prod, int32_t cons, uint8_t prod_flags)
{
	struct fuzz_cdc_seq_cdc a = { .prod_flags = prod_flags };
	uint8_t op = FUZZ_OP_CDC;

	le(a.prod_delta, (uint32_t)prod, 4);
	le(a.cons_delta, (uint32_t)cons, 4);
	put(s, &op, 1);
	put(s, &a, sizeof(a));
}

static void seq_io(struct seed *s, enum fuzz_cdc_seq_op op, uint16_t len, uint8_t flags)
{
	struct fuzz_cdc_seq_io a = { .flags = flags };
	uint8_t op_byte = (uint8_t)op;

	le(a.len, len, 2);
	put(s, &op_byte, 1);
	put(s, &a, sizeof(a));
}

static void seq_op(struct seed *s, enum fuzz_cdc_seq_op op)
{
	uint8_t op_byte = (uint8_t)op;

	put(s, &op_byte, 1);
}

/* Data both ways on RMB-sized rings, an urgent byte, a shutdown. */
static void cdc_seq_exchange(const char *dir)
{
	struct fuzz_cdc_seq_header h = seq_header(FUZZ_RING_RMB, FUZZ_RING_RMB + 1, 0);
	struct seed s = { .len = 0 };

	put(&s, &h, sizeof(h));
	seq_cdc(&s, 1000, 0, 0);
	seq_io(&s, FUZZ_OP_RECV, 500, 0);
	seq_io(&s, FUZZ_OP_SEND, 2000, 0);
	seq_cdc(&s, 100, 2000, SMC_CDC_CONS_UPDATE_REQ);
	seq_io(&s, FUZZ_OP_RECV, 4096, FUZZ_IO_WAITALL);
	seq_cdc(&s, 1, 0, SMC_CDC_URG_DATA_PENDING | SMC_CDC_URG_DATA_PRESENT);
	seq_op(&s, FUZZ_OP_POLL);
	seq_io(&s, FUZZ_OP_RECV, 1, FUZZ_IO_OOB);
	seq_op(&s, FUZZ_OP_SHUTDOWN);
	write_seed(dir, "fuzz_cdc_seq", "exchange", s.bytes, s.len);
}

/* Tiny rings whose cursors wrap past 65535:size, filled, drained, refilled. */
static void cdc_seq_wrap(const char *dir)
{
	struct fuzz_cdc_seq_header h = seq_header(7, 4, 0xffff);
	struct seed s = { .len = 0 };

	put(&s, &h, sizeof(h));
	seq_cdc(&s, 8, 0, SMC_CDC_WRITE_BLOCKED);
	seq_io(&s, FUZZ_OP_RECV, 3, FUZZ_IO_PEEK);
	seq_io(&s, FUZZ_OP_RECV, 16, 0);
	seq_cdc(&s, 8, 0, 0);
	seq_io(&s, FUZZ_OP_SEND, 9, FUZZ_IO_MORE);
	seq_cdc(&s, 0, 5, 0);
	seq_io(&s, FUZZ_OP_SEND, 9, 0);
	seq_io(&s, FUZZ_OP_RECV, 16, FUZZ_IO_TRUNC);
	write_seed(dir, "fuzz_cdc_seq", "wrap", s.bytes, s.len);
}

/* The golden CDC, as received: its token is not ours, so the connection resets. */
static void cdc_seeds(const char *dir)
{
	struct fuzz_cdc_seq_header h = seq_header(FUZZ_RING_RMB, FUZZ_RING_RMB, 0x0102);
	struct seed s = { .len = 0 };

	write_seed(dir, "fuzz_cdc", "sample", sample_wire, sizeof(sample_wire));
	write_seed(dir, "fuzz_cdc", "leave", leave_sample_wire, sizeof(leave_sample_wire));
	put(&s, &h, sizeof(h));
	seq_op(&s, FUZZ_OP_RAW_CDC);
	put(&s, sample_wire, sizeof(sample_wire));
	write_seed(dir, "fuzz_cdc_seq", "golden", s.bytes, s.len);
}

/* A filter that checks the architecture, allows read and write and kills the rest, on nr. */
static void filter_seed(const char *dir, const char *name, int nr)
{
	const struct sock_filter prog[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_read, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_write, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	const struct seccomp_data d = { .nr = nr, .arch = AUDIT_ARCH_X86_64 };
	struct seed s = { .len = 0 };

	put(&s, &d, sizeof(d));
	put(&s, prog, sizeof(prog));
	write_seed(dir, "fuzz_filter", name, s.bytes, s.len);
}

/* One step of fuzz_clc_seq: op, then its argument's first bytes (the rest zero). */
static void clc_step(struct seed *s, enum fuzz_clc_op op, const uint8_t *arg, size_t n)
{
	uint8_t full[FUZZ_CLC_ARG] = { 0 };

	memcpy(full, arg, n);
	put(s, &(uint8_t){ op }, 1);
	put(s, full, sizeof(full));
}

/* The peer's messages, each the input's type index (type - 1) and SMC_TYPE_D (1). */
static void clc_seq_seed(const char *dir, const char *name, uint8_t role, const uint8_t *types,
			 size_t n)
{
	struct fuzz_clc_seq_header h = { .role = role, .offers = 1 };
	struct seed s = { .len = 0 };

	put(&s, &h, sizeof(h));
	for (size_t i = 0; i < n; i++)
		clc_step(&s, FUZZ_CLC_MSG, (const uint8_t[]){ types[i], 1, 0, 0, 0, 0, 0, 0, 0, 0x77 },
			 10);
	write_seed(dir, "fuzz_clc_seq", name, s.bytes, s.len);
}

static void clc_seq_seeds(const char *dir)
{
	clc_seq_seed(dir, "client_done", 0, (const uint8_t[]){ 1 }, 1);
	clc_seq_seed(dir, "server_done", 1, (const uint8_t[]){ 0, 2 }, 2);
	clc_seq_seed(dir, "server_declined", 1, (const uint8_t[]){ 3 }, 1);
}

/* A server that wants to write before the Proposal comes: it declines, then discards the Proposal. */
static void clc_seq_late_proposal(const char *dir)
{
	struct fuzz_clc_seq_header h = { .role = 1, .offers = 1 };
	struct seed s = { .len = 0 };

	put(&s, &h, sizeof(h));
	clc_step(&s, FUZZ_CLC_WANT_SEND, (const uint8_t[]){ 1 }, 1);
	clc_step(&s, FUZZ_CLC_MSG, (const uint8_t[]){ 0, 1 }, 2);
	write_seed(dir, "fuzz_clc_seq", "late_proposal", s.bytes, s.len);
}

static void shm_step(struct seed *s, enum fuzz_shm_op op, uint16_t a, uint8_t b, uint8_t c)
{
	uint8_t arg[FUZZ_SHM_ARG] = { (uint8_t)a, (uint8_t)(a >> 8), b, c };

	memset(arg + 4, 'Z', sizeof(arg) - 4);
	put(s, &(uint8_t){ op }, 1);
	put(s, arg, sizeof(arg));
}

static void shm_peer_seed(const char *dir)
{
	struct seed s = { .len = 0 };

	shm_step(&s, FUZZ_SHM_PEER_SEND, 100, 0, 0);
	shm_step(&s, FUZZ_SHM_RECV, 10, 1, 0);                  /* a peek */
	shm_step(&s, FUZZ_SHM_SCRIBBLE, 4096, 16, 0);           /* the ring's first 16 bytes */
	shm_step(&s, FUZZ_SHM_RECV, 50, 0, 20);                 /* the read, in two pieces */
	shm_step(&s, FUZZ_SHM_SEND, 30, 0, 0);
	shm_step(&s, FUZZ_SHM_PEER_RECV, 30, 0, 0);
	shm_step(&s, FUZZ_SHM_SCRIBBLE, 0x80 | 128, 8, 0);      /* the mailbox */
	shm_step(&s, FUZZ_SHM_POLL, 0, 0, 0);
	shm_step(&s, FUZZ_SHM_PEER_END, 0, 0, 0);
	shm_step(&s, FUZZ_SHM_RECV, 100, 0, 0);
	write_seed(dir, "fuzz_shm_peer", "exchange", s.bytes, s.len);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: write_seeds DIR\n");
		return 2;
	}
	if (mkdir(argv[1], 0755) && errno != EEXIST) {
		perror(argv[1]);
		return 1;
	}
	clc_seeds(argv[1]);
	cdc_seeds(argv[1]);
	control_lifecycle(argv[1]);
	control_malformed(argv[1]);
	cdc_seq_exchange(argv[1]);
	cdc_seq_wrap(argv[1]);
	clc_seq_seeds(argv[1]);
	clc_seq_late_proposal(argv[1]);
	shm_peer_seed(argv[1]);
	filter_seed(argv[1], "allowed", SYS_read);
	filter_seed(argv[1], "killed", SYS_bpf);
	return 0;
}
