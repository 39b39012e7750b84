/*
 * conn_record.c - names and text for the fields of a connection record
 * (conn_record.h), shared by libsmcr, smcrd and smcrctl.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <sys/socket.h>

#include "conn_record.h"

const char *smcr_transport_name(unsigned int id)
{
#define NAME(id, name) [SMCR_TRANSPORT_##id] = #name,
	static const char *const names[SMCR_TRANSPORTS] = { SMCR_TRANSPORT_LIST(NAME) };
#undef NAME

	return id < SMCR_TRANSPORTS ? names[id] : "?";
}

#define LOAD(x) atomic_load_explicit(&(x), memory_order_relaxed)

bool smcr_conn_record_read(const struct smcr_conn_record *r, struct smcr_conn_view *v)
{
	v->mode = atomic_load_explicit(&r->mode, memory_order_acquire);
	if (v->mode == SMCR_CONN_FREE || v->mode == SMCR_CONN_CLAIMED)
		return false;
	v->flags = LOAD(r->flags);
	v->reason = LOAD(r->reason);
	v->peer_reason = LOAD(r->peer_reason);
	v->transport = LOAD(r->transport);
	v->rmb_class = LOAD(r->rmb_class);
	v->peer_rmb_size = LOAD(r->peer_rmb_size);
	v->close_flags = LOAD(r->close_flags);
	v->fd = LOAD(r->fd);
	v->local = r->local;
	v->peer = r->peer;
	for (unsigned int c = 0; c < SMCR_CONN_CURSORS; c++)
		v->cursor[c] = LOAD(r->cursor[c]);
	v->bytes_in = LOAD(r->bytes_in);
	v->bytes_out = LOAD(r->bytes_out);
	v->recvs = LOAD(r->recvs);
	v->sends = LOAD(r->sends);
	v->rmb_full = LOAD(r->rmb_full);
	v->peer_rmb_full = LOAD(r->peer_rmb_full);
	return true;
}

uint64_t smcr_conn_buffer_bytes(const struct smcr_conn_view *v)
{
	uint64_t rmb = smcr_rmb_class_bytes(v->rmb_class);
	uint64_t most = smcr_rmb_class_bytes(SMCR_RMB_CLASSES - 1);

	if (v->mode != SMCR_CONN_SMC || !rmb)
		return 0;
	switch (v->transport) {
	case SMCR_TRANSPORT_SHM:
		return SMCR_SHM_CTL_BYTES + rmb;
	case SMCR_TRANSPORT_RDMA:       /* staging as large as the peer's RMB */
		return SMCR_SHM_CTL_BYTES + rmb + (v->peer_rmb_size < most ? v->peer_rmb_size : most);
	default:
		return 0;
	}
}

const char *smcr_conn_state_name(uint32_t mode, uint32_t close_flags)
{
	const uint32_t done = SMCR_CONN_CLOSE_DONE_WRITING | SMCR_CONN_CLOSE_CLOSED;
	uint32_t ours = close_flags & 0xff, peers = (close_flags >> SMCR_CONN_CLOSE_PEER_SHIFT) & 0xff;

	switch (mode) {
	case SMCR_CONN_TCP:
		return "OPEN";
	case SMCR_CONN_CLC:
		return "CLC";
	case SMCR_CONN_RESET:
		return "RESET";
	case SMCR_CONN_SMC:
		break;
	default:
		return "?";
	}
	if ((close_flags & SMCR_CONN_CLOSE_ERROR) || ((ours | peers) & SMCR_CONN_CLOSE_ABORT))
		return "ABORTED";
	if ((ours & done) && (peers & done))
		return "CLOSED";
	if (peers & done)
		return "PEERCLOSED";
	if (ours & done)
		return "APPCLOSED";
	return "ACTIVE";
}

const char *smcr_conn_mode_name(uint32_t mode, uint32_t transport)
{
	switch (mode) {
	case SMCR_CONN_TCP:
	case SMCR_CONN_RESET:
		return "TCP";
	case SMCR_CONN_CLC:
		return "CLC";
	case SMCR_CONN_SMC:
		return transport == SMCR_TRANSPORT_RDMA ? "SMC-R" : smcr_transport_name(transport);
	default:
		return "?";
	}
}

char *smcr_conn_cursor_str(uint64_t packed, char *buf, unsigned long size)
{
	snprintf(buf, size, "%04x:%08x", (unsigned int)(packed >> 32) & 0xffff,
		 (unsigned int)packed);
	return buf;
}

char *smcr_conn_endpoint_str(const struct smcr_conn_endpoint *e, char *buf, unsigned long size)
{
	char addr[INET6_ADDRSTRLEN];

	if ((e->family != AF_INET && e->family != AF_INET6) ||
	    !inet_ntop(e->family, e->addr, addr, sizeof(addr)))
		snprintf(buf, size, "?");
	else if (e->family == AF_INET6)
		snprintf(buf, size, "[%s]:%u", addr, e->port);
	else
		snprintf(buf, size, "%s:%u", addr, e->port);
	return buf;
}
