/*
 * interfaces.h - the host's local addresses and their interfaces, followed
 * live through rtnetlink (libnl-route), checked against ip_addr_list.
 *
 * An ip_addr_list entry that covers no local address is almost always a
 * mistake (a typo, an interface not up yet): smcrd warns when an entry is on
 * no interface and says when it appears.  Each entry's interface is what
 * the RDMA transport will pick its device from; smcrctl status shows it.
 */
#ifndef SMCRD_INTERFACES_H
#define SMCRD_INTERFACES_H

#include <stddef.h>

#include "config.h"

struct smcrd_interfaces;

/* Subscribes to address and link changes; NULL (and why in err) on failure. */
struct smcrd_interfaces *smcrd_interfaces_open(char *err, size_t errlen);

void smcrd_interfaces_close(struct smcrd_interfaces *ifs);

/* The descriptor to poll for changes. */
int smcrd_interfaces_fd(const struct smcrd_interfaces *ifs);

/* Reads the pending changes, then checks cfg's entries again. */
void smcrd_interfaces_update(struct smcrd_interfaces *ifs, const struct smcr_config *cfg);

/*
 * Checks every ip_addr_list entry of cfg: a warning for each entry on no
 * interface, a notice for one that came back.  new_config: cfg was just
 * (re)loaded, so every absent entry is reported again.
 */
void smcrd_interfaces_check(struct smcrd_interfaces *ifs, const struct smcr_config *cfg,
			    bool new_config);

/* "127.0.0.1 lo, ::1 lo, 10.0.0.9 -": each entry and its interface ("-": none). */
void smcrd_interfaces_describe(const struct smcrd_interfaces *ifs, const struct smcr_config *cfg,
			       char *buf, size_t size);

#endif
