/*
 * smc_ibv.h - libibverbs and librdmacm, loaded on first use.
 *
 * libsmcr.so does not link against the RDMA libraries: a process that never
 * uses the RDMA transport must not pay for loading them, and a host without
 * them must still run the preload.  smc_ibv_load() dlopen()s them once and
 * resolves every function the transport calls into IBV(name).
 *
 * The data-path verbs (ibv_post_send, ibv_post_recv, ibv_poll_cq,
 * ibv_req_notify_cq) are static inline in verbs.h and call through the
 * device context's own function table, so they need no symbol here.
 */
#ifndef SMCR_SMC_IBV_H
#define SMCR_SMC_IBV_H

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

/* X(library, name): every function the transport calls by symbol. */
#define SMC_IBV_FUNCS(X)			\
	X(VERBS, ibv_open_device)		\
	X(VERBS, ibv_alloc_pd)			\
	X(VERBS, ibv_dealloc_pd)		\
	X(VERBS, ibv_reg_mr)			\
	X(VERBS, ibv_dereg_mr)			\
	X(VERBS, ibv_create_comp_channel)	\
	X(VERBS, ibv_create_cq)			\
	X(VERBS, ibv_destroy_cq)		\
	X(VERBS, ibv_get_cq_event)		\
	X(VERBS, ibv_ack_cq_events)		\
	X(VERBS, ibv_get_async_event)		\
	X(VERBS, ibv_ack_async_event)		\
	X(VERBS, ibv_query_qp)			\
	X(VERBS, ibv_wc_status_str)		\
	X(CM, rdma_create_event_channel)	\
	X(CM, rdma_destroy_event_channel)	\
	X(CM, rdma_create_id)			\
	X(CM, rdma_destroy_id)			\
	X(CM, rdma_bind_addr)			\
	X(CM, rdma_listen)			\
	X(CM, rdma_resolve_addr)		\
	X(CM, rdma_resolve_route)		\
	X(CM, rdma_connect)			\
	X(CM, rdma_accept)			\
	X(CM, rdma_reject)			\
	X(CM, rdma_disconnect)			\
	X(CM, rdma_get_cm_event)		\
	X(CM, rdma_ack_cm_event)		\
	X(CM, rdma_create_qp)			\
	X(CM, rdma_destroy_qp)			\
	X(CM, rdma_migrate_id)			\
	X(CM, rdma_event_str)			\
	X(CM, rdma_get_src_port)

/* Not followed by "(", a name is never expanded as verbs.h's function-like macros. */
struct smc_ibv {
#define SMC_IBV_MEMBER(lib, name) __typeof__(&name) name;
	SMC_IBV_FUNCS(SMC_IBV_MEMBER)
#undef SMC_IBV_MEMBER
};

extern struct smc_ibv smc_ibv;
#define IBV(name) (smc_ibv.name)

/*
 * Loads both libraries and resolves the table, once: 0, or -ENODEV (with
 * why, for the log) when a library or a symbol is missing.
 */
int smc_ibv_load(const char **why);

#endif
