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

#include <syslog.h>

#include "config.h"

void smcrd_log_set_level(enum smcr_config_log_level level);

/* From now on, to syslog. */
void smcrd_log_to_syslog(void);

void smcrd_log(int priority, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
