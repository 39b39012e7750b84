/*
 * smcr_sockops.h - the maps' layout shared by smcrd's sock_ops program
 * (smcr_sockops.bpf.c, built with clang -target bpf) and its loader
 * (negotiation.c): the policy value and the counters.  Plain UAPI types only,
 * so both compilers read the same definitions.
 */
#ifndef SMCR_SOCKOPS_H
#define SMCR_SOCKOPS_H

#include <linux/types.h>

#define SMCR_POLICY_MAX_ADDRS 64
#define SMCR_POLICY_PORT_WORDS (65536 / 64)

/*
 * One ip_addr_list entry as an IPv6 prefix: IPv4 entries become
 * ::ffff:a.b.c.d/(96 + prefix), so one comparison covers both families.
 * Words in network order; net is already masked.
 */
struct smcr_policy_addr {
	__u32 net[4];
	__u32 mask[4];
};

/* One version of the policy: what the program consults on every handshake. */
struct smcr_policy {
	__u32 enabled;
	__u32 n_addrs;
	struct smcr_policy_addr addrs[SMCR_POLICY_MAX_ADDRS];
	__u64 port_bits[SMCR_POLICY_PORT_WORDS];   /* bit p % 64 of word p / 64: port p allowed */
};

/* Indexes of the per-CPU counter array. */
enum smcr_sockops_counter {
	SMCR_CNT_SYN_OPTION,            /* SYNs that carried our option */
	SMCR_CNT_SYNACK_ECHO,           /* SYN-ACKs (retransmits included) that echoed it */
	SMCR_CNT_NO_SPACE,              /* no room left in the TCP header for it */
	SMCR_CNT_SYNCOOKIE,             /* echoes declined: the SYN-ACK was a syncookie */
	SMCR_CNT_NEGOTIATED_CLIENT,
	SMCR_CNT_NEGOTIATED_SERVER,
	SMCR_CNT_COUNT
};

#endif
