/*
 * smcrd_log.c - where smcrd's messages go, and which of them.  Every line is
 * made printable on its way out: lines carry what other processes chose
 * (their command names), and the log ends up on an administrator's
 * terminal (smcrd -f, journalctl).  What clients make smcrd say is rationed
 * per uid (ration.h): a client is cut off at its first malformed request,
 * but it can connect again at once, as often as it likes.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "printable.h"
#include "ration.h"
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

static void log_va(int priority, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
static void log_va(int priority, const char *fmt, va_list ap)
{
	char line[1024], safe[SMCR_PRINTABLE_SIZE(sizeof(line))];

	if (priority > max_priority)
		return;
	vsnprintf(line, sizeof(line), fmt, ap);
	smcr_printable(line, sizeof(line), safe, sizeof(safe));
	if (use_syslog)
		syslog(priority, "%s", safe);
	else
		fprintf(stderr, "smcrd: %s\n", safe);
}

void smcrd_log(int priority, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_va(priority, fmt, ap);
	va_end(ap);
}

/* At most 10 lines per uid in each minute. */
static struct smcrd_rations rations = SMCRD_RATIONS(10, 60);

static uint64_t now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec;
}

void smcrd_log_client(uid_t uid, int priority, const char *fmt, ...)
{
	unsigned int held_back;
	struct smcrd_ration *r = smcrd_ration_of(&rations, uid, now_s(), &held_back);
	va_list ap;

	if (held_back)
		smcrd_log(LOG_NOTICE, "uid %u: %u more messages about its processes were "
			  "not logged", (unsigned int)uid, held_back);
	if (!smcrd_ration_take(&rations, r)) {
		if (r->refused == 1)
			smcrd_log(LOG_NOTICE, "uid %u: no more messages about its processes for "
				  "up to %u s", (unsigned int)uid, rations.window_s);
		return;
	}
	va_start(ap, fmt);
	log_va(priority, fmt, ap);
	va_end(ap);
}
