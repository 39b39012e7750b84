/*
 * fuzz_shm_peer.c - libFuzzer target for a same-host peer that writes the
 * shared memory of a connection as it likes: libsmcr's data path
 * (conn/smc_rx.c, smc_tx.c, smc_conn.c) over the real shared-memory
 * transport (transports/shm/smc_shm.c), both ends in this process, each
 * with its memfd (control page and ring) and wake-up channel as libsmcr
 * sets them up.
 *
 * The input is a sequence of steps (fuzz_shm_peer_input.h): the peer
 * sends through its own end (well-behaved bytes and CDCs); the peer
 * scribbles up to 16 input bytes at an input offset of our memfd (header,
 * mailbox, wake words, ring); we read (MSG_PEEK, _TRUNC, _WAITALL, _OOB,
 * into two pieces as readv); we send; the peer reads; we poll; the peer
 * shuts down or aborts.
 * The peer's writes come between our calls, at every point the input
 * chooses, rather than from a second thread while a call runs: a failing
 * input then replays exactly.  The seqlock's retry bound, which only a
 * write during a read exercises, has its own deterministic test
 * (tests/unit/test_peer_bounds.c).
 *
 * Checked: no crash and no access outside the mappings (ASan), every call
 * ends (libFuzzer's -timeout), no call returns more than asked, our cursors
 * stay in our ring, a read moves rx_cons by what it returned, and the bytes
 * of a stream position, once a peek returned them, are what every later
 * peek and read of that position returns, whatever the peer scribbled.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fuzz_shm_peer_input.h"
#include "smc_conn.h"
#include "smc_rx.h"
#include "smc_shm.h"
#include "smc_tx.h"
#include "sys.h"

#define CHECK(cond)				\
	do {					\
		if (!(cond))			\
			abort();		\
	} while (0)

#define OUR_TOKEN 0x0a0b0c0du
#define PEER_TOKEN 0x01020304u
#define RING 16384u
#define CTL 4096u
#define MAX_STEPS 96

struct end {
	struct smc_conn conn;
	struct smc_conn_state st;
	int memfd;
};

static struct end us, peer;
static uint8_t io[2 * RING];
/* What peeks returned of the stream from our rx_cons on: known bytes of it. */
static uint8_t seen[RING];
static uint32_t seen_len;
static bool model;		/* off once an urgent byte makes stream positions ambiguous */

static int end_create(struct end *e, uint32_t token, uint32_t peer_token)
{
	struct smcr_wake_channel ch;

	e->memfd = smcr_sys_memfd_sealed(smc_shm_region_size(0));
	if (e->memfd < 0 || smcr_sys_wake_channel(&ch))
		return -1;
	smc_conn_init(&e->conn, &smc_shm_ops, &e->st, true);
	e->st.token = token;
	e->st.peer_token = peer_token;
	return e->conn.ops->create_rmb(&e->conn, 0, e->memfd, ch);
}

/* a's end attaches b's buffer and the tx end of b's channel. */
static int end_attach(struct end *a, struct end *b)
{
	struct smc_clc_accept_confirm desc = { .smc_type = SMC_TYPE_D, .d = { .dmbe_size = 0 } };
	struct smcr_wake_channel ch = b->conn.ops->wake_channel(&b->conn);

	return a->conn.ops->attach_peer(&a->conn, &desc, b->memfd, dup(ch.tx));
}

static void end_destroy(struct end *e)
{
	smc_conn_destroy(&e->conn);
	close(e->memfd);
}

static uint32_t le16(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8;
}

static void peer_send(const uint8_t *arg)
{
	struct iovec iov = { io, le16(arg) % (RING + 1) };

	for (size_t i = 0; i < iov.iov_len; i++)
		io[i] = (uint8_t)(i * 13 + arg[2]);
	smc_tx_send(&peer.conn, &iov, 1, arg[2] & 1 ? MSG_OOB : 0, true);
}

/* Up to 16 bytes anywhere in our memfd: control page or ring. */
static void scribble(const uint8_t *arg)
{
	uint8_t *base = us.conn.rmb - CTL;
	uint32_t at = le16(arg), n = arg[2] % 17;

	at = arg[0] & 0x80 ? at % 256 : at % (CTL + RING - n);
	memcpy(base + at, arg + 3, n);
}

static int recv_flags(uint8_t b)
{
	return (b & 1 ? MSG_PEEK : 0) | (b & 2 ? MSG_TRUNC : 0) | (b & 4 ? MSG_WAITALL : 0) |
	       (b & 8 ? MSG_OOB : 0);
}

/* What a read or peek returned agrees with what earlier peeks returned, and moves as it says. */
static void check_read(const struct smc_conn_state *before, ssize_t rc, int flags)
{
	size_t n = rc > 0 ? (size_t)rc : 0, same = n < seen_len ? n : seen_len;
	uint32_t moved = smc_cursor_diff(RING, before->rx_cons, us.st.rx_cons);

	if (us.st.rx_urg_state != SMC_URG_NONE || (flags & MSG_OOB))
		model = false;
	if (!model || rc <= 0)
		return;
	CHECK(moved == (flags & MSG_PEEK ? 0 : n));
	if (!(flags & MSG_TRUNC))
		CHECK(memcmp(io, seen, same) == 0);
	if (flags & MSG_PEEK) {
		if (!(flags & MSG_TRUNC) && n > seen_len) {
			memcpy(seen + seen_len, io + seen_len, n - seen_len);
			seen_len = (uint32_t)n;
		}
		return;
	}
	memmove(seen, seen + same, seen_len - same);
	seen_len -= (uint32_t)same;
}

static void our_recv(const uint8_t *arg)
{
	struct smc_conn_state before = us.st;
	int flags = recv_flags(arg[2]);
	size_t len = le16(arg) % (2 * RING + 1);
	/* two pieces, as readv: the cut from the input */
	size_t cut = len ? arg[3] % (len + 1) : 0;
	struct iovec iov[2] = { { io, cut }, { io + cut, len - cut } };
	ssize_t rc = smc_rx_recv(&us.conn, iov, 2, flags, true);

	CHECK(rc <= (ssize_t)len);
	check_read(&before, rc, flags);
}

static void our_send(const uint8_t *arg)
{
	struct iovec iov = { io, le16(arg) % (2 * RING + 1) };

	memset(io, arg[2], iov.iov_len);
	CHECK(smc_tx_send(&us.conn, &iov, 1, arg[2] & 1 ? MSG_MORE : 0, true) <= (ssize_t)iov.iov_len);
}

static void peer_recv(const uint8_t *arg)
{
	static uint8_t sink[2 * RING];
	struct iovec iov = { sink, le16(arg) % (2 * RING + 1) };

	smc_rx_recv(&peer.conn, &iov, 1, arg[2] & 2 ? MSG_TRUNC : 0, true);
}

static void our_poll(void)
{
	CHECK(smc_rx_readable(&us.conn) <= RING);
	smc_tx_writable(&us.conn);
	smc_rx_urgent(&us.conn);
}

static void peer_end(const uint8_t *arg)
{
	if (arg[0] & 1)
		smc_conn_abort(&peer.conn);
	else
		smc_tx_shutdown(&peer.conn);
}

static void step(enum fuzz_shm_op op, const uint8_t *arg)
{
	switch (op) {
	case FUZZ_SHM_PEER_SEND:
		peer_send(arg);
		break;
	case FUZZ_SHM_SCRIBBLE:
		scribble(arg);
		break;
	case FUZZ_SHM_RECV:
		our_recv(arg);
		break;
	case FUZZ_SHM_SEND:
		our_send(arg);
		break;
	case FUZZ_SHM_PEER_RECV:
		peer_recv(arg);
		break;
	case FUZZ_SHM_POLL:
		our_poll();
		break;
	default:
		peer_end(arg);
		break;
	}
}

/* Our cursors as the path keeps them: in the ring, the reader behind what was announced. */
static void check_state(void)
{
	const struct smc_conn_state *st = &us.st;

	CHECK(st->rx_cons.count < RING && st->rx_prod.count < RING &&
	      st->rx_confirmed.count < RING);
	CHECK(st->tx_prep.count < RING && st->tx_fin.count < RING);
	CHECK(!model || seen_len <= smc_cursor_diff(RING, st->rx_cons, st->rx_prod) || st->err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (end_create(&us, OUR_TOKEN, PEER_TOKEN) || end_create(&peer, PEER_TOKEN, OUR_TOKEN) ||
	    end_attach(&us, &peer) || end_attach(&peer, &us))
		abort();	/* out of descriptors or memory: not the input's doing */
	seen_len = 0;
	model = true;
	for (size_t n = 0; n < MAX_STEPS && size >= 1 + FUZZ_SHM_ARG; n++) {
		step((enum fuzz_shm_op)(data[0] % FUZZ_SHM_OP_COUNT), data + 1);
		check_state();
		data += 1 + FUZZ_SHM_ARG;
		size -= 1 + FUZZ_SHM_ARG;
	}
	end_destroy(&us);
	end_destroy(&peer);
	return 0;
}
