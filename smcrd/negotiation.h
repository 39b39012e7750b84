/*
 * negotiation.h - smcrd's side of the SMC handshake signal: the sock_ops
 * program (bpf/smcr_sockops.bpf.c, embedded in smcrd) loaded, attached with a
 * bpf_link to a cgroup v2 directory, and fed the configuration's policy.
 *
 * The link is not pinned: the program is detached when smcrd exits, however
 * it exits.  Starting needs root (CAP_BPF, CAP_NET_ADMIN, CAP_SYS_ADMIN);
 * afterwards, a new policy needs CAP_BPF (privileges.c), the rest nothing.
 */
#ifndef SMCRD_NEGOTIATION_H
#define SMCRD_NEGOTIATION_H

#include <stddef.h>
#include <stdint.h>

#include "bpf/smcr_sockops.h"
#include "config.h"

struct smcr_negotiation;

/*
 * Loads the program, installs cfg's policy and attaches the program to
 * cgroup (a cgroup v2 directory), or to the cgroup v2 root if NULL.  On
 * failure: NULL, and err says what failed and why.
 */
struct smcr_negotiation *smcr_negotiation_start(const struct smcr_config *cfg,
						const char *cgroup, char *err, size_t errlen);

/*
 * Makes cfg's enabled, ip_addr_list and port_range_list the policy, at once
 * for every later handshake step.  -1 (errno set, old policy kept) on failure.
 */
int smcr_negotiation_apply(struct smcr_negotiation *neg, const struct smcr_config *cfg);

/*
 * A new read-only descriptor (close-on-exec) of the result map: an sk_storage
 * map whose key is a socket descriptor of the caller and whose value is the
 * u32 SMCR_HS_* bits of handshake_flags.h.  The caller closes it; -1 on error.
 */
int smcr_negotiation_result_map_ro(const struct smcr_negotiation *neg);

/*
 * A new writable descriptor (close-on-exec) of the ownership map, in which
 * libsmcr marks its own sockets (key: the caller's socket descriptor) before
 * connect() or listen(): only marked sockets offer SMC.  -1 on error.
 */
int smcr_negotiation_owned_map(const struct smcr_negotiation *neg);

/* The cgroup directory the program is attached to. */
const char *smcr_negotiation_cgroup(const struct smcr_negotiation *neg);

uint32_t smcr_negotiation_prog_id(const struct smcr_negotiation *neg);

/* Detaches the program and frees everything; NULL is ignored. */
void smcr_negotiation_stop(struct smcr_negotiation *neg);

#endif
