/*
 * readiness_priv.h - inside readiness (readiness.h): what epoll.c (epoll
 * instances) and poll.c (poll and select) share, which
 * readiness_common.c defines, and what poll.c asks of epoll.c about an
 * epoll instance among its descriptors.  Nothing outside these three
 * files includes it.
 */
#ifndef SMCR_READINESS_PRIV_H
#define SMCR_READINESS_PRIV_H

#include <stdbool.h>
#include <stdint.h>

/*
 * How a descriptor must be waited for: the regimes of epoll.c's opening
 * comment; NONE is a member the kernel holds nothing for yet.
 */
enum regime { REG_NONE, REG_PLAIN, REG_WATCH, REG_SMC, REG_RESET, REG_NESTED };

/* ---- readiness_common.c ---- */

/* What fd needs now: its connection's phase, or what the descriptor is. */
enum regime smcr_regime_of(int fd);

/* A connect() or CLC exchange in progress on fd moves on, if it can. */
void smcr_drive(int fd);

/*
 * What is left of a wait until deadline (0: none was set, wait as asked),
 * rounded up: like the kernel's, a wait never ends before its time.
 */
int smcr_wait_remaining(int timeout_ms, uint64_t deadline);

/* ---- epoll.c: nested instances ---- */

/*
 * Whether epoll_wait on fd, an instance of ours, would report something
 * now; when not, its connections are armed, so that their news makes fd
 * readable in the kernel (epoll.c's opening comment, nested instances).
 */
bool smcr_epoll_nested_ready(int fd);

/*
 * Whether fd is an instance with members of ours, for poll and select: one
 * without any (most: every instance is ours from epoll_create on) is the
 * kernel's to tell.
 */
bool smcr_epoll_has_members(int fd);

#endif
