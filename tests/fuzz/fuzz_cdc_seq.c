/*
 * fuzz_cdc_seq.c - libFuzzer target for the receive side of one connection
 * under a sequence of CDC messages from a hostile peer (libsmcr/conn/smc_rx.c,
 * with smc_tx.c, smc_cdc.c and smc_cursor.h), interleaved with reads,
 * writes, polls and a shutdown of our own (fuzz_cdc_seq_input.h).
 *
 * The connection runs over a fake transport: the CDCs it fetches are the
 * input's, what it writes lands in a buffer standing for the peer's RMB,
 * and what it sends is checked as it goes.  After every step the cursors
 * are checked with arithmetic of this file's own (absolute positions, not
 * wrap:count): none moves backward or by more than a ring, each lies in
 * its ring, consumer <= producer <= confirmed consumer + one ring on each
 * side; a CDC that breaks the protocol resets the connection and moves
 * nothing, one that keeps it moves exactly what it says; once reset,
 * nothing moves; what is read is what the peer wrote.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "fuzz_cdc_seq_input.h"
#include "smc_conn.h"
#include "smc_rx.h"
#include "smc_tx.h"

#define CHECK(cond)				\
	do {					\
		if (!(cond))			\
			abort();		\
	} while (0)

#define OUR_TOKEN 0x11223344u
#define PEER_TOKEN 0x55667788u
#define MAX_RING 32768u
#define MAX_STEPS 64
#define QUEUE 16

/* The peer as the fake transport plays it. */
struct fake_peer {
	const uint8_t *queue[QUEUE];    /* CDCs sent, not yet fetched */
	size_t queued;
	struct smc_cursor prod;         /* the producer cursor it last sent honestly */
	uint64_t written;               /* where our next write must land: absolute */
	uint16_t seqno;                 /* of our last CDC */
	uint32_t events;
	uint8_t rmb[MAX_RING];          /* its RMB, which we write */
};

static struct fake_peer peer;
static uint8_t rmb[MAX_RING];           /* ours, which the peer writes */
static uint8_t io[2 * MAX_RING];
static bool content_known;      /* what our ring holds is what pattern() says */

/* Where c lies in the ring's 2^16 laps, counted in bytes. */
static uint64_t absolute(uint32_t size, struct smc_cursor c)
{
	return (uint64_t)c.wrap * size + c.count;
}

/* The bytes in the 2^16 laps of a ring of size: where absolute positions wrap. */
static uint64_t laps(uint32_t size)
{
	return (uint64_t)size << 16;
}

/* How far b is ahead of a. */
static uint64_t ahead(uint32_t size, struct smc_cursor a, struct smc_cursor b)
{
	return (absolute(size, b) + laps(size) - absolute(size, a)) % laps(size);
}

/* The cursor n bytes (negative: back) from c. */
static struct smc_cursor moved(uint32_t size, struct smc_cursor c, int64_t n)
{
	int64_t all = (int64_t)laps(size);
	uint64_t at = (uint64_t)((((int64_t)absolute(size, c) + n) % all + all) % all);

	return (struct smc_cursor){ .wrap = (uint16_t)(at / size), .count = (uint32_t)(at % size) };
}

/* What the peer wrote at absolute position at of our ring. */
static uint8_t pattern(uint64_t at)
{
	return (uint8_t)(at * 131 + 7);
}

static int fake_write(struct smc_conn *conn, uint32_t off, const void *src, uint32_t len)
{
	uint32_t size = conn->peer_rmb_size;

	CHECK(off < size && len <= size - off);
	CHECK(off == peer.written % size);      /* right after the last write */
	memcpy(peer.rmb + off, src, len);
	peer.written += len;
	return 0;
}

static int fake_send_cdc(struct smc_conn *conn, const uint8_t msg[SMC_CDC_MSG_LEN])
{
	struct smc_cdc cdc;

	CHECK(smc_cdc_decode(msg, SMC_CDC_MSG_LEN, &cdc) == 0);
	CHECK(cdc.token == PEER_TOKEN && cdc.seqno == (uint16_t)(peer.seqno + 1));
	CHECK(smc_cursor_equal(cdc.prod, conn->st->tx_prep));
	CHECK(smc_cursor_equal(cdc.cons, conn->st->rx_cons));
	peer.seqno = cdc.seqno;
	return 0;
}

static int fake_recv_cdc(struct smc_conn *conn, uint8_t msg[SMC_CDC_MSG_LEN])
{
	(void)conn;
	if (!peer.queued)
		return 0;
	memcpy(msg, peer.queue[0], SMC_CDC_MSG_LEN);
	memmove(peer.queue, peer.queue + 1, --peer.queued * sizeof(peer.queue[0]));
	return 1;
}

static uint32_t fake_events(struct smc_conn *conn)
{
	(void)conn;
	return peer.events;
}

static int fake_wait(struct smc_conn *conn, uint32_t since, int timeout_ms)
{
	(void)conn;
	(void)since;
	(void)timeout_ms;
	abort();                /* every call here is non-blocking */
}

static void fake_wake(struct smc_conn *conn)
{
	(void)conn;
	peer.events++;
}

static const struct smc_transport_ops fake_ops = {
	.name = "fuzz",
	.write = fake_write,
	.send_cdc = fake_send_cdc,
	.recv_cdc = fake_recv_cdc,
	.events = fake_events,
	.wait = fake_wait,
	.wake = fake_wake,
};

/* A ring size byte of the header (fuzz_cdc_seq_input.h). */
static uint32_t ring_size(uint8_t b)
{
	return b < FUZZ_RING_RMB ? 1u + b : 16384u << (b & 1);
}

static uint32_t le(const uint8_t *p, unsigned int bytes)
{
	uint32_t v = 0;

	while (bytes--)
		v = v << 8 | p[bytes];
	return v;
}

static struct smc_cursor start_cursor(const uint8_t wrap[2], const uint8_t count[2], uint32_t size)
{
	return (struct smc_cursor){ .wrap = (uint16_t)le(wrap, 2), .count = le(count, 2) % size };
}

static void set_up(struct smc_conn *conn, struct smc_conn_state *st,
		   const struct fuzz_cdc_seq_header *h)
{
	smc_conn_init(conn, &fake_ops, st, true);
	conn->rmb = rmb;
	st->token = OUR_TOKEN;
	st->peer_token = PEER_TOKEN;
	/* as a transport sets them up: the view's own sizes, and the page's */
	conn->rmb_size = st->rmb_size = ring_size(h->rmb_size);
	conn->peer_rmb_size = st->peer_rmb_size = ring_size(h->peer_rmb_size);
	st->oob_inline = h->oob_inline & 1;
	st->rx_prod = st->rx_cons = st->rx_confirmed = start_cursor(h->rx_wrap, h->rx_count,
								     st->rmb_size);
	st->tx_prep = st->tx_sent = st->tx_fin = start_cursor(h->tx_wrap, h->tx_count,
							      st->peer_rmb_size);
	peer = (struct fake_peer){ .prod = st->rx_prod,
				   .written = absolute(st->peer_rmb_size, st->tx_prep) };
	memset(rmb, 0xee, st->rmb_size);        /* not what the peer writes anywhere */
}

/* The cursors in a ring of size: each in it, and a <= b <= c <= a + one ring. */
static void check_ordered(uint32_t size, struct smc_cursor a, struct smc_cursor b,
			  struct smc_cursor c)
{
	CHECK(a.count < size && b.count < size && c.count < size);
	CHECK(ahead(size, a, b) <= ahead(size, a, c) && ahead(size, a, c) <= size);
}

/* from moved to to: forward, by at most a ring. */
static void check_forward(uint32_t size, struct smc_cursor from, struct smc_cursor to)
{
	CHECK(ahead(size, from, to) <= size);
}

static void check_state(const struct smc_conn_state *before, const struct smc_conn_state *st)
{
	check_ordered(st->rmb_size, st->rx_confirmed, st->rx_cons, st->rx_prod);
	check_ordered(st->peer_rmb_size, st->tx_fin, st->tx_sent, st->tx_prep);
	check_forward(st->rmb_size, before->rx_prod, st->rx_prod);
	check_forward(st->rmb_size, before->rx_cons, st->rx_cons);
	check_forward(st->rmb_size, before->rx_confirmed, st->rx_confirmed);
	check_forward(st->peer_rmb_size, before->tx_fin, st->tx_fin);
	check_forward(st->peer_rmb_size, before->tx_sent, st->tx_sent);
	check_forward(st->peer_rmb_size, before->tx_prep, st->tx_prep);
	CHECK(peer.written % laps(st->peer_rmb_size) == absolute(st->peer_rmb_size, st->tx_prep));
	if (before->err) {      /* reset: nothing moves any more */
		CHECK(st->err == before->err);
		CHECK(smc_cursor_equal(before->rx_prod, st->rx_prod) &&
		      smc_cursor_equal(before->rx_cons, st->rx_cons) &&
		      smc_cursor_equal(before->tx_fin, st->tx_fin) &&
		      smc_cursor_equal(before->tx_prep, st->tx_prep));
	}
}

/* What the protocol makes of cdc in state st: refused, or where the cursors it carries go. */
struct verdict {
	bool refused;
	struct smc_cursor rx_prod, tx_fin;
};

/* update moves last forward by 1..room bytes. */
static bool advances(uint32_t size, struct smc_cursor last, struct smc_cursor update,
		     uint64_t room)
{
	uint64_t d = ahead(size, last, update);

	return d > 0 && d <= room;
}

/* update is last, or up to a ring behind it: old news. */
static bool stale(uint32_t size, struct smc_cursor last, struct smc_cursor update)
{
	return ahead(size, update, last) <= size;
}

/* Moves *at to update, or leaves it; false if update is neither old news nor allowed. */
static bool judge_cursor(uint32_t size, struct smc_cursor *at, struct smc_cursor update,
			 uint64_t room)
{
	if (advances(size, *at, update, room)) {
		*at = update;
		return true;
	}
	return stale(size, *at, update);
}

static struct verdict judge(const struct smc_conn_state *st, const struct smc_cdc *cdc)
{
	const uint32_t size = st->rmb_size, peer_size = st->peer_rmb_size;
	struct verdict v = { .rx_prod = st->rx_prod, .tx_fin = st->tx_fin };

	/* the peer writes up to one ring past what we last confirmed; it reads what we sent */
	v.refused = cdc->token != OUR_TOKEN || cdc->prod.count >= size ||
		    cdc->cons.count >= peer_size ||
		    !judge_cursor(size, &v.rx_prod, cdc->prod,
				  size - ahead(size, st->rx_confirmed, st->rx_prod)) ||
		    !judge_cursor(peer_size, &v.tx_fin, cdc->cons,
				  ahead(peer_size, st->tx_fin, st->tx_sent));
	return v;
}

static int fetch(struct smc_conn *conn)
{
	int rc;

	smc_conn_lock(conn);
	rc = smc_conn_cdc_fetch(conn);
	smc_conn_unlock(conn);
	return rc;
}

/* The one CDC fetched from state before did what judge() says. */
static void check_applied(const struct smc_conn_state *before, const struct smc_conn_state *st,
			  const struct smc_cdc *cdc)
{
	struct verdict v = judge(before, cdc);

	if (v.refused) {
		CHECK(st->err == ECONNRESET);
		CHECK(smc_cursor_equal(st->rx_prod, before->rx_prod) &&
		      smc_cursor_equal(st->tx_fin, before->tx_fin));
		return;
	}
	CHECK(smc_cursor_equal(st->rx_prod, v.rx_prod) && smc_cursor_equal(st->tx_fin, v.tx_fin));
	CHECK(st->err == ((before->peer_state | cdc->conn_state_flags) & SMC_CDC_PEER_CONN_ABORT ?
			  ECONNRESET : 0));
}

/* The peer writes its data up to prod, if it may: where we have released. */
static void peer_writes(const struct smc_conn_state *st, struct smc_cursor prod)
{
	const uint32_t size = st->rmb_size;
	uint64_t d = ahead(size, peer.prod, prod), from = absolute(size, peer.prod);

	if (d == 0 || d > size || ahead(size, st->rx_confirmed, prod) > size ||
	    ahead(size, st->rx_confirmed, peer.prod) > ahead(size, st->rx_confirmed, prod))
		return;
	for (uint64_t i = 0; i < d; i++)
		rmb[(from + i) % size] = pattern((from + i) % laps(size));
	peer.prod = prod;
}

static struct smc_cdc peer_cdc(const struct smc_conn_state *st, const struct fuzz_cdc_seq_cdc *a)
{
	struct smc_cdc cdc = {
		.seqno = (uint16_t)(peer.events + 1),
		.token = a->control & FUZZ_CDC_BAD_TOKEN ? ~OUR_TOKEN : OUR_TOKEN,
		.prod = moved(st->rmb_size, peer.prod, (int32_t)le(a->prod_delta, 4)),
		.cons = moved(st->peer_rmb_size, st->tx_fin, (int32_t)le(a->cons_delta, 4)),
		.prod_flags = a->prod_flags,
		.conn_state_flags = a->conn_state_flags,
	};

	if (a->control & FUZZ_CDC_BAD_COUNT)
		cdc.prod.count += st->rmb_size;
	else if (!(a->control & FUZZ_CDC_BAD_TOKEN))
		peer_writes(st, cdc.prod);
	return cdc;
}

/* Queues msg; fetched now unless queued says wait, and then judged if it came alone. */
static void deliver(struct smc_conn *conn, const uint8_t *msg, bool queued)
{
	struct smc_conn_state before = *conn->st;
	bool alone = peer.queued == 0 && !before.err;
	struct smc_cdc cdc;

	if (peer.queued == QUEUE)
		return;
	peer.queue[peer.queued++] = msg;
	peer.events++;
	if (queued)
		return;
	fetch(conn);
	if (alone && smc_cdc_decode(msg, SMC_CDC_MSG_LEN, &cdc) == 0)
		check_applied(&before, conn->st, &cdc);
}

static uint8_t sent_cdcs[MAX_STEPS][SMC_CDC_MSG_LEN];

static void step_cdc(struct smc_conn *conn, const struct fuzz_cdc_seq_cdc *a, size_t step)
{
	struct smc_cdc cdc = peer_cdc(conn->st, a);

	smc_cdc_encode(&cdc, sent_cdcs[step]);
	deliver(conn, sent_cdcs[step], a->control & FUZZ_CDC_QUEUED);
}

/* A raw CDC may move our producer cursor past what the peer wrote. */
static void step_raw_cdc(struct smc_conn *conn, const uint8_t *msg)
{
	deliver(conn, msg, false);
	if (!smc_cursor_equal(conn->st->rx_prod, peer.prod) &&
	    ahead(conn->st->rmb_size, peer.prod, conn->st->rx_prod) <= conn->st->rmb_size) {
		content_known = false;
		peer.prod = conn->st->rx_prod;
	}
}

static int io_flags(uint8_t bits)
{
	return (bits & FUZZ_IO_PEEK ? MSG_PEEK : 0) | (bits & FUZZ_IO_TRUNC ? MSG_TRUNC : 0) |
	       (bits & FUZZ_IO_OOB ? MSG_OOB : 0) | (bits & FUZZ_IO_WAITALL ? MSG_WAITALL : 0) |
	       (bits & FUZZ_IO_MORE ? MSG_MORE : 0);
}

/* A read takes what the peer wrote, in order, from our consumer cursor. */
static void step_recv(struct smc_conn *conn, const struct fuzz_cdc_seq_io *a)
{
	const uint32_t size = conn->st->rmb_size;
	struct smc_conn_state before = *conn->st;
	struct iovec iov = { io, le(a->len, 2) % (2 * size + 1) };
	int flags = io_flags(a->flags) & ~MSG_MORE;
	ssize_t rc = smc_rx_recv(conn, &iov, 1, flags, true);
	const struct smc_conn_state *st = conn->st;

	CHECK(rc <= (ssize_t)iov.iov_len);
	if (rc <= 0 || (flags & MSG_OOB) || st->rx_urg_state != SMC_URG_NONE)
		return;         /* the urgent byte, out of the stream or stepped over */
	CHECK(ahead(size, before.rx_cons, st->rx_cons) == (flags & MSG_PEEK ? 0 : (uint64_t)rc));
	for (ssize_t i = 0; content_known && !(flags & MSG_TRUNC) && i < rc; i++)
		CHECK(io[i] == pattern((absolute(size, before.rx_cons) + (uint64_t)i) % laps(size)));
}

/*
 * A write lands, in order, in the peer's ring at our producer cursor; but
 * the first send after the peer closed goes, as TCP's, and what it did not
 * write before the close is lost.
 */
static void step_send(struct smc_conn *conn, const struct fuzz_cdc_seq_io *a)
{
	const uint32_t size = conn->st->peer_rmb_size;
	struct smc_conn_state before = *conn->st;
	struct iovec iov = { io, le(a->len, 2) % (2 * size + 1) };
	int flags = io_flags(a->flags) & (MSG_OOB | MSG_MORE);
	ssize_t rc;
	uint64_t moved;

	for (size_t i = 0; i < iov.iov_len; i++)
		io[i] = (uint8_t)(i * 7 + 3);
	rc = smc_tx_send(conn, &iov, 1, flags, true);
	CHECK(rc <= (ssize_t)iov.iov_len);
	if (rc <= 0)
		return;
	moved = ahead(size, before.tx_prep, conn->st->tx_prep);
	if (!before.tx_after_close && conn->st->tx_after_close)
		CHECK(moved <= (uint64_t)rc);
	else
		CHECK(moved == (uint64_t)rc);
	for (uint64_t i = 0; i < moved; i++)
		CHECK(peer.rmb[(before.tx_prep.count + i) % size] == io[i]);
}

static void step_poll(struct smc_conn *conn)
{
	CHECK(smc_rx_readable(conn) <= conn->st->rmb_size);
	smc_tx_writable(conn);
	smc_rx_urgent(conn);
}

/* The size of op's argument. */
static size_t argument_size(enum fuzz_cdc_seq_op op)
{
	switch (op) {
	case FUZZ_OP_CDC:
		return sizeof(struct fuzz_cdc_seq_cdc);
	case FUZZ_OP_RAW_CDC:
		return SMC_CDC_MSG_LEN;
	case FUZZ_OP_RECV:
	case FUZZ_OP_SEND:
		return sizeof(struct fuzz_cdc_seq_io);
	default:
		return 0;
	}
}

static void step(struct smc_conn *conn, enum fuzz_cdc_seq_op op, const uint8_t *arg, size_t n)
{
	struct fuzz_cdc_seq_cdc cdc;
	struct fuzz_cdc_seq_io rw;

	switch (op) {
	case FUZZ_OP_CDC:
		memcpy(&cdc, arg, sizeof(cdc));
		step_cdc(conn, &cdc, n);
		break;
	case FUZZ_OP_RAW_CDC:
		step_raw_cdc(conn, arg);
		break;
	case FUZZ_OP_RECV:
		memcpy(&rw, arg, sizeof(rw));
		step_recv(conn, &rw);
		break;
	case FUZZ_OP_SEND:
		memcpy(&rw, arg, sizeof(rw));
		step_send(conn, &rw);
		break;
	case FUZZ_OP_POLL:
		step_poll(conn);
		break;
	default:
		smc_tx_shutdown(conn);
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct smc_conn_state st;
	struct fuzz_cdc_seq_header h;
	struct smc_conn conn;

	if (size < sizeof(h))
		return 0;
	memcpy(&h, data, sizeof(h));
	data += sizeof(h);
	size -= sizeof(h);
	set_up(&conn, &st, &h);
	content_known = true;
	for (size_t n = 0; n < MAX_STEPS && size > 0; n++) {
		enum fuzz_cdc_seq_op op = (enum fuzz_cdc_seq_op)(data[0] % FUZZ_OP_COUNT);
		size_t arg = argument_size(op);
		struct smc_conn_state before = st;

		if (size < 1 + arg)
			break;
		step(&conn, op, data + 1, n);
		check_state(&before, &st);
		data += 1 + arg;
		size -= 1 + arg;
	}
	smc_conn_destroy(&conn);        /* what a peek kept */
	return 0;
}
