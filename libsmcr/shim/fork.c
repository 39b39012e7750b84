/*
 * fork.c - what libsmcr does around fork(), every step in one place and in
 * one explicit order (pthread_atfork runs one set of handlers, these).
 *
 * Before: offer to smcrd the buffers of server connections whose exchange
 * has not yet needed them, so that a child that execs finds them there
 * (smc_sock_view.c); then take every lock a child's copy must find free,
 * outermost first:
 * the transports' (smc_transport.h), the connections' list, the control
 * socket's (a connection's exchange asks smcrd while it holds the list or
 * the connection's lock), then the kept descriptors' (sys.h).
 * After, in the parent: release them in the reverse order.  After, in the
 * child (one thread, every lock held by the fork's own thread):
 *   1. statistics: count from zero, privately; the connections inherited
 *      are the child's from now on;
 *   2. connections: both processes now share them (smc_sock_view.c); a
 *      connect whose outcome another thread was recording is the
 *      parent's to finish (handshake.h);
 *   3. smcrd: the parent's registration is not the child's; a child of a
 *      registered parent registers now, before a sandbox could forbid it;
 *   4. transports: what the child cannot use is forgotten, never touched
 *      (RDMA: the parent's links and devices);
 *   5. epoll: every member is looked at anew, quiet or not (epoll.c).
 * posix_spawn and vfork run no fork handlers: spawning costs nothing.  A
 * process made by the raw clone system call (a sandbox's fork into new
 * namespaces) gets the same steps through smcr_fork_by.
 */
#include <pthread.h>

#include "conn_table.h"
#include "control.h"
#include "fork.h"
#include "handshake.h"
#include "readiness.h"
#include "smc_sock.h"
#include "smc_transport.h"
#include "stats.h"
#include "sys.h"

/* Runs transport t's fork step (the ops member step: fork_prepare, ...), if it has one. */
#define TRANSPORT_STEP(t, step) do {                                            \
		const struct smc_transport_ops *ops_ = smc_transport(t);        \
		if (ops_->step)                                                 \
			ops_->step();                                           \
	} while (0)

static void prepare(void)
{
	smcr_sock_offer_all(true);
	for (unsigned int t = SMCR_TRANSPORTS; t-- > 0;)
		TRANSPORT_STEP(t, fork_prepare);
	smcr_sock_fork_prepare();
	smcr_control_fork_prepare();
	smcr_sys_fork_prepare();
	smcr_stats_before_fork();
}

static void parent(void)
{
	smcr_sys_fork_done();
	smcr_control_fork_parent();
	smcr_sock_fork_done();
	for (unsigned int t = 0; t < SMCR_TRANSPORTS; t++)
		TRANSPORT_STEP(t, fork_parent);
}

static void child(void)
{
	smcr_sys_own_memory();
	smcr_sys_fork_done();
	smcr_stats_reset();
	smcr_conn_table_forked(&smcr_stats_now()->conns);
	smcr_sock_fork_child();
	smcr_handshake_fork_child();
	smcr_control_fork_child();
	for (unsigned int t = 0; t < SMCR_TRANSPORTS; t++)
		TRANSPORT_STEP(t, fork_child);
	smcr_readiness_forked();
}

void smcr_fork_init(void)
{
	pthread_atfork(prepare, parent, child);
}

long smcr_fork_by(long (*fork_call)(void *arg), void *arg)
{
	long rc;

	prepare();
	rc = fork_call(arg);
	if (rc == 0)
		child();
	else
		parent();
	return rc;
}
