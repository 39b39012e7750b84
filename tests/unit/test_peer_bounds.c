/*
 * Unit tests: every loop whose number of turns a peer controls ends.
 *
 *  - A peer that sends CDCs without pause: one fetch applies a bounded
 *    number (libsmcr/conn/smc_conn.c), over a fake transport that always
 *    has a new one.
 *  - A peer whose CDCs keep lagging behind its TCP end: the wait for them
 *    (ops->await_peer) gets a bounded number of rounds.
 *  - A same-host peer rewriting the mailbox's sequence word while we read
 *    it (smc_shm.c's seqlock): made deterministic by trapping every access
 *    to our control page (x86-64: the page is PROT_NONE, a SIGSEGV handler
 *    moves the sequence word through a second mapping and single-steps the
 *    load, a SIGTRAP handler protects the page again), so that every load
 *    of the word sees a new value - the worst a peer on another CPU could
 *    do, every time.
 * Without the bounds each of these loops for ever: alarm() ends the test.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>
#include <cmocka.h>

#include "smc_conn.h"
#include "smc_shm.h"
#include "sys.h"

#define OUR_TOKEN 0x1234u
#define RING 16384u

/* ---- a peer that always has another CDC ---- */

static unsigned int cdcs_fetched, awaits;
static struct smc_conn_state st;

static int fake_recv_cdc(struct smc_conn *conn, uint8_t msg[SMC_CDC_MSG_LEN])
{
	/* the state as it is, again: valid, and never "closed" */
	struct smc_cdc cdc = { .seqno = (uint16_t)++cdcs_fetched, .token = OUR_TOKEN,
			       .prod = conn->st->rx_prod, .cons = conn->st->tx_fin };

	smc_cdc_encode(&cdc, msg);
	return 1;
}

static int fake_send_cdc(struct smc_conn *conn, const uint8_t msg[SMC_CDC_MSG_LEN])
{
	(void)conn;
	(void)msg;
	return 0;
}

static bool fake_await_peer(struct smc_conn *conn)
{
	(void)conn;
	awaits++;
	return true;		/* one more came */
}

static uint32_t fake_events(struct smc_conn *conn)
{
	(void)conn;
	return cdcs_fetched;
}

static void fake_wake(struct smc_conn *conn)
{
	(void)conn;
}

static const struct smc_transport_ops flood_ops = {
	.name = "flood",
	.send_cdc = fake_send_cdc,
	.recv_cdc = fake_recv_cdc,
	.events = fake_events,
	.await_peer = fake_await_peer,
	.wake = fake_wake,
};

static void flooded_conn(struct smc_conn *conn)
{
	static uint8_t rmb[RING];

	smc_conn_init(conn, &flood_ops, &st, true);
	conn->rmb = rmb;
	conn->rmb_size = conn->peer_rmb_size = st.rmb_size = st.peer_rmb_size = RING;
	st.token = OUR_TOKEN;
	cdcs_fetched = awaits = 0;
	alarm(10);		/* without the bound: for ever */
}

static void fetch_ends_while_cdcs_keep_coming(void **state)
{
	struct smc_conn conn;

	(void)state;
	flooded_conn(&conn);
	smc_conn_lock(&conn);
	assert_int_equal(smc_conn_cdc_fetch(&conn), 0);
	smc_conn_unlock(&conn);
	alarm(0);
	assert_true(cdcs_fetched >= 1 && cdcs_fetched <= 64);
}

static void peer_lost_ends_while_cdcs_keep_lagging(void **state)
{
	struct smc_conn conn;

	(void)state;
	flooded_conn(&conn);
	smc_conn_lock(&conn);
	smc_conn_peer_lost(&conn);	/* conn.sock -1: the end reads as the peer's close */
	smc_conn_unlock(&conn);
	alarm(0);
	assert_true(awaits >= 1 && awaits <= 64);
	assert_true(st.peer_state & SMC_CDC_PEER_CONN_CLOSED);
}

/* ---- a mailbox whose sequence word moves at every load ---- */

#if defined(__x86_64__) && defined(__linux__)
#define TRAPS 1
/* smc_shm.c's layout: the mailbox is the control page's second 128-byte line, seq its first word */
#define SEQ_OFFSET 128
#define TRAP_FLAG 0x100

static uint8_t *ctl_page;		/* our control page, as the transport maps it */
static volatile uint32_t *seq_alias;	/* its seq word through a mapping of our own */
static unsigned int seq_loads;

static void on_segv(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;
	uint8_t *at = si->si_addr;

	(void)sig;
	if (at < ctl_page || at >= ctl_page + 4096)
		abort();
	if (at == ctl_page + SEQ_OFFSET) {
		*seq_alias += 2;	/* even: a whole new CDC, every time */
		seq_loads++;
	}
	mprotect(ctl_page, 4096, PROT_READ | PROT_WRITE);
	uc->uc_mcontext.gregs[REG_EFL] |= TRAP_FLAG;	/* the load, then SIGTRAP */
}

static void on_trap(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;

	(void)sig;
	(void)si;
	mprotect(ctl_page, 4096, PROT_NONE);
	uc->uc_mcontext.gregs[REG_EFL] &= ~TRAP_FLAG;
}

static void trap_page(void)
{
	struct sigaction sa = { .sa_flags = SA_SIGINFO };

	sigemptyset(&sa.sa_mask);
	sa.sa_sigaction = on_segv;
	assert_int_equal(sigaction(SIGSEGV, &sa, NULL), 0);
	sa.sa_sigaction = on_trap;
	assert_int_equal(sigaction(SIGTRAP, &sa, NULL), 0);
	assert_int_equal(mprotect(ctl_page, 4096, PROT_NONE), 0);
}

static void untrap_page(void)
{
	assert_int_equal(mprotect(ctl_page, 4096, PROT_READ | PROT_WRITE), 0);
	signal(SIGSEGV, SIG_DFL);
	signal(SIGTRAP, SIG_DFL);
}
#endif

static void mailbox_rewritten_at_every_read(void **state)
{
#ifdef TRAPS
	int memfd = smcr_sys_memfd_sealed(smc_shm_region_size(0));
	uint8_t msg[SMC_CDC_MSG_LEN];
	struct smcr_wake_channel ch;
	struct smc_conn conn;
	int rc;

	(void)state;
	assert_true(memfd >= 0);
	assert_int_equal(smcr_sys_wake_channel(&ch), 0);
	smc_conn_init(&conn, &smc_shm_ops, &st, true);
	assert_int_equal(conn.ops->create_rmb(&conn, 0, memfd, ch), 0);
	ctl_page = conn.rmb - 4096;
	seq_alias = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	assert_true(seq_alias != MAP_FAILED);
	seq_alias = (volatile uint32_t *)((volatile uint8_t *)seq_alias + SEQ_OFFSET);
	seq_loads = 0;
	alarm(10);		/* without the bound: for ever */
	trap_page();
	rc = conn.ops->recv_cdc(&conn, msg);
	untrap_page();
	alarm(0);
	/* nothing new yet: the torn reads are left for the next fetch, and events() moved */
	assert_int_equal(rc, 0);
	assert_true(seq_loads >= 2 && seq_loads <= 1000);
	assert_int_not_equal(conn.ops->events(&conn), 0);
	munmap((void *)((uintptr_t)seq_alias & ~(uintptr_t)4095), 4096);
	smc_conn_destroy(&conn);
	close(memfd);
#else
	(void)state;
	skip();
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fetch_ends_while_cdcs_keep_coming),
		cmocka_unit_test(peer_lost_ends_while_cdcs_keep_lagging),
		cmocka_unit_test(mailbox_rewritten_at_every_read),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
