/*
 * privileges.h - what smcrd keeps of root's powers once it is set up
 * (privileges.c says what each later step needs, and why smcrd stays
 * uid 0).
 */
#ifndef SMCRD_PRIVILEGES_H
#define SMCRD_PRIVILEGES_H

#include <stddef.h>

/*
 * Keeps, in the effective, permitted and bounding sets, only the
 * capability that lets smcrd make BPF maps (CAP_BPF, or CAP_SYS_ADMIN
 * where it holds no CAP_BPF), empties the inheritable and ambient sets and
 * sets no_new_privs.  Call it once the program is loaded and attached, the
 * maps are made, the run directory and socket are there and the limits are
 * raised.  0, or -1 with why filled: smcrd must then not go on.
 */
int smcrd_privileges_drop(char *why, size_t size);

#endif
