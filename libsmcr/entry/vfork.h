/*
 * vfork.h - what the vfork stubs (vfork_*.S) call in the parent
 * before the clone (preload_vfork.c).
 */
#ifndef SMCR_VFORK_H
#define SMCR_VFORK_H

#include "real.h"

/*
 * Each offers every connection whose buffer is not yet on offer, as fork
 * does, then returns the C library's vfork (or __vfork), for the stub to
 * jump to with the caller's stack as it came.
 */
smcr_real_vfork_t smcr_vfork_prepare(void);
smcr_real___vfork_t smcr___vfork_prepare(void);

#endif
