/*
 * descriptors.c - how the descriptor table (base/fdtable.h) holds the
 * objects of the layers above it: a connection's record (conn_table.h), its
 * SMC connection (smc_sock.h), an epoll instance (readiness.h); and how
 * epoll follows libsmcr's own descriptors when they move (base/sys.h).  Registered
 * once at start, before the application can have made a connection, so
 * that a close(), dup() or exec-inherited descriptor always finds them.
 */
#include "conn_table.h"
#include "descriptors.h"
#include "fdtable.h"
#include "readiness.h"
#include "smc_sock.h"
#include "sys.h"

static const struct smcr_fd_refs refs = {
	.record_hold = smcr_conn_table_hold,
	.record_drop = smcr_conn_table_drop,
	.sock_get = smcr_sock_get,
	.sock_put = smcr_sock_put,
	.epoll_get = smcr_epoll_get,
	.epoll_put = smcr_epoll_put,
	.before_forget = smcr_readiness_forget,
};

void smcr_descriptors_init(void)
{
	smcr_fd_refs_register(&refs);
	smcr_sys_on_fd_moved(smcr_readiness_fd_moved);
	smcr_sock_on_phase_change(smcr_readiness_changed);
}
