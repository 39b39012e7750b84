/*
 * preload_exit.c - a process that ends with connections open: exit(),
 * returning from main, and the interposed _exit and _Exit.
 *
 * Over TCP, what send() took is the kernel's, and it goes out after the
 * process has gone.  A transport that only queued it (RDMA: WRITEs posted
 * on a queue pair that goes with the process) must see it leave first: a
 * fork server's child that sends its answer and ends, without close(),
 * would otherwise cut the answer short, and its peer would read the end of
 * the TCP connection as the end of the stream.  So each transport's
 * process_ending runs at the end (smc_transport.h): from an atexit handler
 * registered at start-up, so that the application's own handlers, which
 * may still send, run before it; and from _exit, which runs no handler
 * (Python's os._exit, a forked child's usual way out, a signal handler's).
 * Not in a vfork child: the links are its parent's, in its parent's
 * memory.  The socket layer goes first: a late Proposal left on a
 * server's stream would have the kernel reset the connection as it
 * closes it (smc_sock.h).
 */
#include <stdlib.h>
#include <unistd.h>

#include "exit.h"
#include "real.h"
#include "smc_sock.h"
#include "smc_transport.h"
#include "sys.h"

static void process_ending(void)
{
	if (smcr_sys_borrowed_memory())
		return;
	smcr_sock_process_ending();
	smc_transports_process_ending();
}

void smcr_exit_watch(void)
{
	(void)REAL(_exit);	/* resolved now, not in a signal handler or a vfork child */
	atexit(process_ending);
}

void _exit(int status)
{
	process_ending();
	REAL(_exit)(status);
	__builtin_unreachable();
}

void _Exit(int status)
{
	_exit(status);
}
