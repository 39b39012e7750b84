/*
 * preload_vfork.c - vfork and __vfork (Python's subprocess): the C half of
 * the stubs in vfork_x86_64.S and vfork_aarch64.S.  A vfork child runs in its parent's memory
 * until it execs, and its exec hands the new image holds on the
 * connections it keeps (smcr_sock_exec_prepare), but it must not ask
 * smcrd anything: its requests would go on its parent's socket.  So a
 * server's connection whose client's Proposal has not been read yet, whose
 * state still waits in the server's view, is offered here, in the parent,
 * before the clone, as fork's handlers offer it: the new image finds it at
 * smcrd and carries its CLC exchange on.  Before, that image found
 * nothing, took the connection for plain TCP, and the client's Proposal
 * reached the program as data.
 *
 * vfork cannot be wrapped in C: the child returns into the wrapper's frame,
 * which the parent then finds changed.  So the stub calls this first, then
 * jumps to the C library's function as if called from the application.
 */
#include <errno.h>

#include "real.h"
#include "smc_sock.h"
#include "sys.h"
#include "vfork.h"

static void offer_before_vfork(void)
{
	int saved_errno = errno;

	if (!smcr_sys_borrowed_memory())        /* a vfork child's vfork: not its socket */
		smcr_sock_offer_all(false);
	errno = saved_errno;
}

smcr_real_vfork_t smcr_vfork_prepare(void)
{
	offer_before_vfork();
	return REAL(vfork);
}

smcr_real___vfork_t smcr___vfork_prepare(void)
{
	offer_before_vfork();
	return REAL(__vfork);
}
