/*
 * smc_shm.h - the shared-memory transport: two processes on one host.
 *
 * Each side's RMB lives in a memfd, behind a small control area; the peer
 * maps it and writes payload and CDC messages into it with plain stores
 * (smc_shm.c says how).  The user-space counterpart of Linux's SMC-D
 * loopback device.
 */
#ifndef SMCR_SMC_SHM_H
#define SMCR_SMC_SHM_H

#include <stdint.h>

#include "smc_transport.h"

extern const struct smc_transport_ops smc_shm_ops;

/*
 * Bytes of memfd that create_rmb needs for an RMB of this size class (at
 * most SMC_RMB_MAX_CLASS_D): the control area, then the ring.  The memfd
 * of either side must be sealed against shrinking (F_SEAL_SHRINK), since
 * the peer's stores into it would fault past a shrunk end.
 */
uint64_t smc_shm_region_size(unsigned int size_class);

#endif
