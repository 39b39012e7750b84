/*
 * smcrd_log.h - smcrd's messages: "smcrd: text" lines on stderr while it runs
 * in the foreground, syslog (ident smcrd, facility daemon) once detached.
 *
 * Control bytes, bytes beyond ASCII and backslashes in a message are
 * escaped (common/printable.h): a message may hold another process's name.
 *
 * Priorities are syslog's.  The configuration's log_level filters them:
 * error shows LOG_ERR and worse, warn adds warnings and notices (configuration
 * loaded, reloaded, refused), info and debug add those.
 */
#ifndef SMCRD_LOG_H
#define SMCRD_LOG_H

#include <sys/types.h>
#include <syslog.h>

#include "config.h"

void smcrd_log_set_level(enum smcr_config_log_level level);

/* From now on, to syslog. */
void smcrd_log_to_syslog(void);

void smcrd_log(int priority, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * A message that a client of uid caused (a malformed request, a refusal):
 * at most 10 a minute for each uid, then one line saying the rest are held
 * back, and their number once the minute is over (that line waits for the
 * uid's next message).
 */
void smcrd_log_client(uid_t uid, int priority, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
