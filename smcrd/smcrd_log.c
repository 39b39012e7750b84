/*
 * smcrd_log.c - where smcrd's messages go, and which of them.  Every line is
 * made printable on its way out: lines carry what other processes chose
 * (their command names), and the log ends up on an administrator's
 * terminal (smcrd -f, journalctl).
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#include "printable.h"
#include "smcrd_log.h"

static int max_priority = LOG_NOTICE;   /* log_level = warn, the default */
static bool use_syslog;

void smcrd_log_set_level(enum smcr_config_log_level level)
{
	static const int max_for_level[] = {
		[SMCR_CONFIG_LOG_ERROR] = LOG_ERR,
		[SMCR_CONFIG_LOG_WARN] = LOG_NOTICE,
		[SMCR_CONFIG_LOG_INFO] = LOG_INFO,
		[SMCR_CONFIG_LOG_DEBUG] = LOG_DEBUG,
	};
	max_priority = max_for_level[level];
}

void smcrd_log_to_syslog(void)
{
	openlog("smcrd", LOG_PID, LOG_DAEMON);
	use_syslog = true;
}

void smcrd_log(int priority, const char *fmt, ...)
{
	char line[1024], safe[SMCR_PRINTABLE_SIZE(sizeof(line))];
	va_list ap;

	if (priority > max_priority)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	smcr_printable(line, sizeof(line), safe, sizeof(safe));
	if (use_syslog)
		syslog(priority, "%s", safe);
	else
		fprintf(stderr, "smcrd: %s\n", safe);
}
