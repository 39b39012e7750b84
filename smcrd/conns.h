/*
 * conns.h - smcrd's answer to CONNS (`smcrctl conns`): the connection
 * records (conn_record.h) of every registered process, a page at a time.
 */
#ifndef SMCRD_CONNS_H
#define SMCRD_CONNS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "control.h"
#include "control_proto.h"

/*
 * Fills out with the connections that a process of uid viewer may see
 * (smcrd_client_visible) from where (0: the first; else a head.token of an
 * earlier page) on, and out->head.token with where the next page starts
 * (0: none).  Processes are taken in the order they registered, so a page
 * boundary stays put while others come and go.
 */
void smcrd_conns_page(const struct smcrd_client *clients, size_t nclients, uid_t viewer,
		      uint64_t where, struct smcr_control_conns *out);

#endif
