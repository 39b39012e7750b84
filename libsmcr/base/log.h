/*
 * log.h - diagnostics of libsmcr, which lives in someone else's process.
 *
 * SMCR_LOG=error|warn|info|debug chooses how much is said (default: errors
 * only, so a working application prints nothing of ours); SMCR_LOG_DEST=syslog
 * sends it to syslog instead of stderr.  Logging never changes errno.
 */
#ifndef SMCR_LOG_H
#define SMCR_LOG_H

#include <stddef.h>
#include <sys/socket.h>

enum smcr_log_level {
	SMCR_LOG_ERROR,
	SMCR_LOG_WARN,
	SMCR_LOG_INFO,
	SMCR_LOG_DEBUG,
};

extern int smcr_log_level;

/* Reads SMCR_LOG and SMCR_LOG_DEST; complains (once) about bad values. */
void smcr_log_init(void);

/*
 * Lines go to fd (-1: nowhere) from now on, not to descriptor 2: the
 * application may put a connection or a file of its own there later.
 */
void smcr_log_use_fd(int fd);

/*
 * The process's RLIMIT_FSIZE soft limit changed to soft (RLIM_INFINITY:
 * none).  Under a limit, lines no longer go to a regular file: a write
 * past the limit raises SIGXFSZ, which kills the process (sandboxes set it
 * to 0), and where the file ends cannot be asked of every sandbox.
 */
void smcr_log_file_limit(unsigned long long soft);

/* "warn" -> SMCR_LOG_WARN; returns -1 for anything else. */
int smcr_log_parse_level(const char *name);

/* Formats one line "libsmcr[pid]: level: text\n" into buf; returns its length. */
size_t smcr_log_format(char *buf, size_t size, int pid, enum smcr_log_level level,
		       const char *fmt, ...) __attribute__((format(printf, 5, 6)));

void smcr_log_write(enum smcr_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define smcr_log(level, ...)                                                        \
	do {                                                                        \
		if (__builtin_expect((level) <= smcr_log_level, 0))                 \
			smcr_log_write(level, __VA_ARGS__);                          \
	} while (0)

#define smcr_debugging() __builtin_expect(smcr_log_level >= SMCR_LOG_DEBUG, 0)

/* "127.0.0.1:80", "[::1]:80" or "?" for a socket address. */
const char *smcr_sockaddr_str(const struct sockaddr *sa, socklen_t len, char *buf,
			      size_t size);

#endif
