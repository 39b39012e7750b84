/*
 * smcrd_log.c - where smcrd's messages go, and which of them.  Every line is
 * made printable on its way out: lines carry what other processes chose
 * (their command names), and the log ends up on an administrator's
 * terminal (smcrd -f, journalctl).  What clients make smcrd say is rationed
 * per uid: a client is cut off at its first malformed request, but it can
 * connect again at once, as often as it likes.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

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

#define CLIENT_LINES 10         /* lines per uid ... */
#define CLIENT_WINDOW_S 60      /* ... in each such window */
#define CLIENT_UIDS 64          /* uids rationed at once; the longest quiet one makes room */

/* One uid's ration: lines logged and held back in its window. */
struct ration {
	uid_t uid;
	bool used;
	uint64_t window;                /* CLOCK_MONOTONIC second it began */
	unsigned int logged, held_back;
};

static uint64_t now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec;
}

/* uid's ration, or the slot of the uid whose window began longest ago, made uid's. */
static struct ration *ration_of(uid_t uid)
{
	static struct ration rations[CLIENT_UIDS];
	struct ration *r = &rations[0];

	for (size_t i = 0; i < CLIENT_UIDS; i++) {
		if (rations[i].used && rations[i].uid == uid)
			return &rations[i];
		if (!rations[i].used || (r->used && rations[i].window < r->window))
			r = &rations[i];
	}
	*r = (struct ration){ .uid = uid, .used = true, .window = now_s() };
	return r;
}

void smcrd_log_client(uid_t uid, int priority, const char *fmt, ...)
{
	struct ration *r = ration_of(uid);
	uint64_t now = now_s();
	va_list ap;

	if (now - r->window >= CLIENT_WINDOW_S) {
		if (r->held_back)
			smcrd_log(LOG_NOTICE, "uid %u: %u more messages about its processes were "
				  "not logged", (unsigned int)uid, r->held_back);
		*r = (struct ration){ .uid = uid, .used = true, .window = now };
	}
	if (r->logged == CLIENT_LINES) {
		if (r->held_back++ == 0)
			smcrd_log(LOG_NOTICE, "uid %u: no more messages about its processes for "
				  "up to %d s", (unsigned int)uid, CLIENT_WINDOW_S);
		return;
	}
	r->logged++;
	va_start(ap, fmt);
	log_va(priority, fmt, ap);
	va_end(ap);
}
