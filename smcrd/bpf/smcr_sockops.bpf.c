// SPDX-License-Identifier: GPL-2.0
/*
 * smcr_sockops.bpf.c - smcrd's sock_ops program: the RFC 7609 TCP option
 * (kind 254, ExID E2D4C3D9) in the handshake, and what each side learnt.
 *
 * Only sockets that libsmcr marked in smcr_owned (before connect() or
 * listen()) may offer SMC: a process without libsmcr could not speak CLC, so
 * its handshake must not claim it can.
 * Client: a marked connect() that the policy allows (enabled, server port in
 * port_range_list, local address in ip_addr_list) gets the option on its SYN.
 * Server: a marked listener on an allowed port keeps its SYNs (TCP_SAVE_SYN)
 * and asks for the header callbacks; its SYN-ACK echoes the option iff the SYN had it,
 * the same policy allows the connection, and the SYN-ACK is no syncookie
 * (a cookie SYN-ACK cannot be matched with its SYN later: both sides fall
 * back).  The result, SMCR_HS_* bits (handshake_flags.h), goes into the
 * socket's entry of smcr_handshake, read by libsmcr after connect()/accept().
 *
 * The policy is one struct smcr_policy in an array map that the loader never
 * changes once published; smcr_policy's single slot points at the current
 * one.  Each callback looks the slot up once, so it sees one whole version.
 *
 * Only UAPI headers: no vmlinux.h, no CO-RE.
 */
#include <linux/bpf.h>
#include <linux/errno.h>
#include <linux/tcp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "handshake_flags.h"
#include "smcr_sockops.h"

#define SOL_TCP 6
#define AF_INET6 10
#define TCPHDR_SYN 0x02
#define TCPHDR_ACK 0x10

struct smcr_tcpopt {
	__u8 kind, len, exid[4];
} __attribute__((packed));

#define SMCR_TCPOPT_INIT                                                         \
	{ .kind = SMCR_TCPOPT_KIND, .len = SMCR_TCPOPT_LEN,                      \
	  .exid = { SMCR_TCPOPT_EXID >> 24, SMCR_TCPOPT_EXID >> 16 & 0xff,       \
		    SMCR_TCPOPT_EXID >> 8 & 0xff, SMCR_TCPOPT_EXID & 0xff } }

/*
 * Sizes, not types: clang 14 gives an inner map's value struct only a forward
 * declaration in BTF, which libbpf cannot size (and a key type without a
 * value type is refused).
 */
struct smcr_policy_version {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct smcr_policy));
};

/* Slot 0: the policy in force; empty (nothing allowed) until smcrd fills it. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, struct smcr_policy_version);
} smcr_policy SEC(".maps");

/* The result per socket: SMCR_HS_* bits. */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u32);
} smcr_handshake SEC(".maps");

/*
 * Sockets of processes running libsmcr, marked by libsmcr itself through a
 * writable descriptor smcrd hands to registered processes.  The key of a
 * user-space update is a descriptor of the caller: a process can only mark
 * (opt in) its own sockets.
 */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u32);
} smcr_owned SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SMCR_CNT_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} smcr_counters SEC(".maps");

/* Both ends of a connection, addresses as IPv6 (network order), ports in host order. */
struct smcr_endpoints {
	__u32 local[4], remote[4];
	__u32 local_port, remote_port;
};

/*
 * Server connections whose SYN-ACK had no room for the echo.  A SYN-ACK is
 * sent for a request socket, which has no storage; the accepted socket finds
 * its entry here so that it does not claim what the wire did not carry.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, struct smcr_endpoints);
	__type(value, __u8);
} smcr_no_echo SEC(".maps");

static __always_inline void count(enum smcr_sockops_counter counter)
{
	__u32 key = counter;
	__u64 *n = bpf_map_lookup_elem(&smcr_counters, &key);

	/* Atomic: a softirq on this CPU may run the program in between. */
	if (n)
		__sync_fetch_and_add(n, 1);
}

static __always_inline const struct smcr_policy *current_policy(void)
{
	__u32 zero = 0;
	void *version = bpf_map_lookup_elem(&smcr_policy, &zero);

	return version ? bpf_map_lookup_elem(version, &zero) : NULL;
}

static __always_inline int port_allowed(const struct smcr_policy *policy, __u32 port)
{
	port &= 0xffff;
	return policy->port_bits[port / 64] >> (port % 64) & 1;
}

static __always_inline int addr_allowed(const struct smcr_policy *policy, const __u32 addr[4])
{
	for (__u32 i = 0; i < SMCR_POLICY_MAX_ADDRS && i < policy->n_addrs; i++) {
		const struct smcr_policy_addr *a = &policy->addrs[i];

		if (!(((addr[0] & a->mask[0]) ^ a->net[0]) | ((addr[1] & a->mask[1]) ^ a->net[1]) |
		      ((addr[2] & a->mask[2]) ^ a->net[2]) | ((addr[3] & a->mask[3]) ^ a->net[3])))
			return 1;
	}
	return 0;
}

/*
 * A context field read right here: the verifier refuses loads through a
 * context pointer that the compiler offset in advance (&skops->local_ip6[3]).
 */
#define CTX_READ(field) ({ __u32 value_ = (field); barrier_var(value_); value_; })

/*
 * side's (local or remote) address of skops as IPv6: IPv4 becomes
 * ::ffff:a.b.c.d, the form an IPv6 socket already uses for IPv4 peers.
 */
#define ENDPOINT_ADDR(skops, side, addr)                                          \
	do {                                                                     \
		if ((skops)->family == AF_INET6) {                               \
			(addr)[0] = CTX_READ((skops)->side##_ip6[0]);            \
			(addr)[1] = CTX_READ((skops)->side##_ip6[1]);            \
			(addr)[2] = CTX_READ((skops)->side##_ip6[2]);            \
			(addr)[3] = CTX_READ((skops)->side##_ip6[3]);            \
		} else {                                                         \
			(addr)[0] = 0;                                           \
			(addr)[1] = 0;                                           \
			(addr)[2] = bpf_htonl(0xffff);                           \
			(addr)[3] = CTX_READ((skops)->side##_ip4);               \
		}                                                                \
	} while (0)

/* The policy of one connection: enabled, its server port, our local address. */
static __always_inline int connection_allowed(const struct bpf_sock_ops *skops, __u32 server_port)
{
	const struct smcr_policy *policy = current_policy();
	__u32 local[4];

	if (!policy || !policy->enabled || !port_allowed(policy, server_port))
		return 0;
	ENDPOINT_ADDR(skops, local, local);
	return addr_allowed(policy, local);
}

static __always_inline void endpoints(const struct bpf_sock_ops *skops, struct smcr_endpoints *e)
{
	ENDPOINT_ADDR(skops, local, e->local);
	ENDPOINT_ADDR(skops, remote, e->remote);
	e->local_port = skops->local_port;
	e->remote_port = bpf_ntohl(skops->remote_port);
}

/* The header callbacks (LEN and WRITE) run only while this flag is set. */
static __always_inline void want_header_callbacks(struct bpf_sock_ops *skops, int on)
{
	__u32 flags = skops->bpf_sock_ops_cb_flags;
	__u32 wanted = on ? flags | BPF_SOCK_OPS_WRITE_HDR_OPT_CB_FLAG
			  : flags & ~BPF_SOCK_OPS_WRITE_HDR_OPT_CB_FLAG;

	if (wanted != flags)
		bpf_sock_ops_cb_flags_set(skops, wanted);
}

/* load_flags 0: the segment being handled; BPF_LOAD_HDR_OPT_TCP_SYN: the SYN. */
static __always_inline long find_option(struct bpf_sock_ops *skops, __u64 load_flags)
{
	struct smcr_tcpopt opt = SMCR_TCPOPT_INIT;

	return bpf_load_hdr_opt(skops, &opt, sizeof(opt), load_flags);
}

static __always_inline __u32 *handshake_of(struct bpf_sock_ops *skops, __u64 create)
{
	struct bpf_sock *sk = skops->sk;    /* sock_or_null on every read: check this copy */

	return sk ? bpf_sk_storage_get(&smcr_handshake, sk, NULL, create) : NULL;
}

static __always_inline void out_of_space(__u32 *handshake)
{
	if (handshake && !(*handshake & SMCR_HS_NO_SPACE)) {
		*handshake |= SMCR_HS_NO_SPACE;
		count(SMCR_CNT_NO_SPACE);
	}
}

static __always_inline void echo_out_of_space(struct bpf_sock_ops *skops)
{
	struct smcr_endpoints e = {};
	__u8 one = 1;

	endpoints(skops, &e);
	if (!bpf_map_update_elem(&smcr_no_echo, &e, &one, BPF_NOEXIST))
		count(SMCR_CNT_NO_SPACE);
}

static __always_inline int echo_was_out_of_space(struct bpf_sock_ops *skops)
{
	struct smcr_endpoints e = {};

	endpoints(skops, &e);
	return bpf_map_delete_elem(&smcr_no_echo, &e) == 0;
}

static __always_inline int owned(struct bpf_sock *sk)
{
	return bpf_sk_storage_get(&smcr_owned, sk, NULL, 0) != NULL;
}

static __always_inline void on_connect(struct bpf_sock_ops *skops)
{
	struct bpf_sock *sk = skops->sk;
	__u32 *handshake;

	if (!sk)
		return;
	if (!owned(sk) || !connection_allowed(skops, bpf_ntohl(skops->remote_port))) {
		/* A socket may connect again after a failure: no stale result. */
		bpf_sk_storage_delete(&smcr_handshake, sk);
		return;
	}
	handshake = bpf_sk_storage_get(&smcr_handshake, sk, NULL, BPF_SK_STORAGE_GET_F_CREATE);
	if (!handshake)
		return;
	*handshake = SMCR_HS_ACTIVE;
	want_header_callbacks(skops, 1);
}

/*
 * The SYN-ACK hook tests the listener's flags, so they are set here (for a
 * marked listener), whatever enabled says: a later "enabled = 1" then applies to running servers.  A
 * listener opened while its port was not allowed never echoes.
 */
static __always_inline void on_listen(struct bpf_sock_ops *skops)
{
	const struct smcr_policy *policy = current_policy();
	struct bpf_sock *sk = skops->sk;
	int one = 1;

	if (sk && owned(sk) && policy && port_allowed(policy, skops->local_port) &&
	    !bpf_setsockopt(skops, SOL_TCP, TCP_SAVE_SYN, &one, sizeof(one)))
		want_header_callbacks(skops, 1);
}

static __always_inline void reserve_on_syn(struct bpf_sock_ops *skops)
{
	__u32 *handshake = handshake_of(skops, 0);

	if (handshake && (*handshake & SMCR_HS_ACTIVE) &&
	    bpf_reserve_hdr_opt(skops, SMCR_TCPOPT_LEN, 0))
		out_of_space(handshake);
}

/* skops->sk is the request socket here: no storage, policy re-checked. */
static __always_inline void reserve_on_synack(struct bpf_sock_ops *skops)
{
	if (find_option(skops, BPF_LOAD_HDR_OPT_TCP_SYN) <= 0 ||
	    !connection_allowed(skops, skops->local_port))
		return;
	if (skops->args[0] == BPF_WRITE_HDR_TCP_SYNACK_COOKIE)
		count(SMCR_CNT_SYNCOOKIE);
	else if (bpf_reserve_hdr_opt(skops, SMCR_TCPOPT_LEN, 0))
		echo_out_of_space(skops);
}

/*
 * Once the handshake is over the callbacks would run for every segment and
 * MSS computation: stop them.  Not in SYN_RECV: a TCP Fast Open child still
 * has its SYN-ACK to send.
 */
static __always_inline void stop_after_handshake(struct bpf_sock_ops *skops)
{
	if (skops->is_fullsock && skops->state != BPF_TCP_SYN_SENT &&
	    skops->state != BPF_TCP_SYN_RECV)
		want_header_callbacks(skops, 0);
}

static __always_inline void on_hdr_opt_len(struct bpf_sock_ops *skops)
{
	__u32 tcp_flags = skops->skb_tcp_flags;

	if (!(tcp_flags & TCPHDR_SYN))
		stop_after_handshake(skops);
	else if (tcp_flags & TCPHDR_ACK)
		reserve_on_synack(skops);
	else
		reserve_on_syn(skops);
}

/* Runs only when on_hdr_opt_len reserved room: the decision is taken there. */
static __always_inline void on_write_hdr_opt(struct bpf_sock_ops *skops)
{
	struct smcr_tcpopt opt = SMCR_TCPOPT_INIT;
	__u32 tcp_flags = skops->skb_tcp_flags;
	__u32 *handshake;
	long err;

	if (!(tcp_flags & TCPHDR_SYN))
		return;
	err = bpf_store_hdr_opt(skops, &opt, sizeof(opt), 0);
	if (tcp_flags & TCPHDR_ACK) {
		if (err)
			echo_out_of_space(skops);
		else
			count(SMCR_CNT_SYNACK_ECHO);
		return;
	}
	handshake = handshake_of(skops, 0);
	if (err) {
		out_of_space(handshake);
	} else if (handshake && !(*handshake & SMCR_HS_OPT_SENT)) {
		*handshake |= SMCR_HS_OPT_SENT;
		count(SMCR_CNT_SYN_OPTION);
	}
}

/* skops->skb is the SYN-ACK. */
static __always_inline void on_active_established(struct bpf_sock_ops *skops)
{
	__u32 *handshake = handshake_of(skops, 0);

	if (!handshake)
		return;
	want_header_callbacks(skops, 0);
	if (find_option(skops, 0) > 0)
		*handshake |= SMCR_HS_PEER_OPT;
	if ((*handshake & (SMCR_HS_OPT_SENT | SMCR_HS_PEER_OPT)) ==
	    (SMCR_HS_OPT_SENT | SMCR_HS_PEER_OPT)) {
		*handshake |= SMCR_HS_NEGOTIATED;
		count(SMCR_CNT_NEGOTIATED_CLIENT);
	}
}

/*
 * The accepted socket inherits the listener's flags: without ours the
 * listener was not allowed when it started listening and kept no SYN.  The
 * echo decision of reserve_on_synack is taken again from the saved SYN and the
 * policy; no saved SYN means the handshake ended with a syncookie.  (A TCP
 * Fast Open child gets here before its SYN-ACK is built: should that echo
 * find no room, it is only counted.)
 */
static __always_inline void on_passive_established(struct bpf_sock_ops *skops)
{
	__u32 *handshake;
	long found;

	if (!(skops->bpf_sock_ops_cb_flags & BPF_SOCK_OPS_WRITE_HDR_OPT_CB_FLAG))
		return;
	if (skops->state != BPF_TCP_SYN_RECV)
		want_header_callbacks(skops, 0);
	if (!connection_allowed(skops, skops->local_port))
		return;
	handshake = handshake_of(skops, BPF_SK_STORAGE_GET_F_CREATE);
	if (!handshake)
		return;
	*handshake = SMCR_HS_PASSIVE;
	found = find_option(skops, BPF_LOAD_HDR_OPT_TCP_SYN);
	if (found == -ENOENT) {
		*handshake |= SMCR_HS_SYNCOOKIE;
		return;
	}
	if (found <= 0)
		return;
	*handshake |= SMCR_HS_PEER_OPT;
	if (echo_was_out_of_space(skops)) {
		*handshake |= SMCR_HS_NO_SPACE;
		return;
	}
	*handshake |= SMCR_HS_OPT_SENT | SMCR_HS_NEGOTIATED;
	count(SMCR_CNT_NEGOTIATED_SERVER);
}

SEC("sockops")
int smcr_sockops(struct bpf_sock_ops *skops)
{
	switch (skops->op) {
	case BPF_SOCK_OPS_TCP_CONNECT_CB:           /* before the SYN is built */
		on_connect(skops);
		break;
	case BPF_SOCK_OPS_TCP_LISTEN_CB:
		on_listen(skops);
		break;
	case BPF_SOCK_OPS_HDR_OPT_LEN_CB:
		on_hdr_opt_len(skops);
		break;
	case BPF_SOCK_OPS_WRITE_HDR_OPT_CB:
		on_write_hdr_opt(skops);
		break;
	case BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB:
		on_active_established(skops);
		break;
	case BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB:
		on_passive_established(skops);
		break;
	}
	return 1;   /* never refuse: other return values only mean "error" to TCP */
}

char _license[] SEC("license") = "GPL";
