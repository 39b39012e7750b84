/*
 * stats.h - what this process's libsmcr has seen, counted on the data path.
 *
 * Counters are relaxed atomic adds: no lock and no system call per update.
 */
#ifndef SMCR_STATS_H
#define SMCR_STATS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "reason.h"

struct smcr_stats {
	_Atomic uint64_t tcp_listeners;    /* listen() on a TCP socket */
	_Atomic uint64_t tcp_clients;      /* connect() started on a TCP socket */
	_Atomic uint64_t tcp_servers;      /* accept() returned a TCP socket */
	_Atomic uint64_t tcp_bytes_in;     /* received on TCP sockets */
	_Atomic uint64_t tcp_bytes_out;    /* sent on TCP sockets */
	_Atomic uint64_t smc_clients;      /* connect()s whose handshake negotiated SMC */
	_Atomic uint64_t smc_servers;      /* accept()s whose handshake negotiated SMC */
	_Atomic uint64_t fallbacks[SMCR_REASON_COUNT];  /* connections kept on TCP, by reason */
};

extern struct smcr_stats smcr_stats;

#define smcr_stat_add(field, n)                                                     \
	atomic_fetch_add_explicit(&smcr_stats.field, (uint64_t)(n), memory_order_relaxed)

/* A forked child starts counting from zero: the parent's work is the parent's. */
void smcr_stats_reset(void);

/*
 * One line: "tcp: 1 listener, 2 client, 3 server connections; 10 bytes in,
 * 20 out; smc: 1 client, 1 server negotiated; fallback: PEERNOSMC 3".
 */
size_t smcr_stats_format(char *buf, size_t size);

#endif
