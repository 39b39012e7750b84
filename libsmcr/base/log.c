/*
 * log.c - formatting and writing libsmcr's diagnostics.
 *
 * Lines go to a copy of the stderr the process started with (smcr_log_use_fd;
 * fd 2 until then) with a raw write system call (never our interposed
 * write(), which logs through here) in a single call, so lines from several
 * threads do not interleave.  The C library's syscall() is interposed too,
 * only to watch for clone (entry/preload_clone.c): a write passes straight
 * through it.  Nothing goes to a regular file once the process limits
 * the size of the files it writes (smcr_log_file_limit), and none where a
 * seccomp filter it installed forbids the write (base/filter.h): a debug
 * line must not be what kills a sandboxed process.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <syslog.h>
#include <unistd.h>

#include "filter.h"
#include "log.h"

int smcr_log_level = SMCR_LOG_ERROR;
static int log_to_syslog;
static int log_fd = STDERR_FILENO;
static bool log_fd_is_file;             /* a regular file, which RLIMIT_FSIZE bounds */
static _Atomic bool file_size_limited;

static const char *const level_names[] = {
	[SMCR_LOG_ERROR] = "error",
	[SMCR_LOG_WARN] = "warn",
	[SMCR_LOG_INFO] = "info",
	[SMCR_LOG_DEBUG] = "debug",
};

int smcr_log_parse_level(const char *name)
{
	for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++)
		if (strcmp(name, level_names[i]) == 0)
			return (int)i;
	return -1;
}

void smcr_log_use_fd(int fd)
{
	struct stat st;
	int saved_errno = errno;

	log_fd = fd;
	log_fd_is_file = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
	errno = saved_errno;
}

void smcr_log_file_limit(unsigned long long soft)
{
	atomic_store(&file_size_limited, soft != RLIM_INFINITY);
}

/* Whether a line may go to log_fd now. */
static bool log_fd_writable(void)
{
	return log_fd >= 0 && !(log_fd_is_file && atomic_load(&file_size_limited));
}

void smcr_log_init(void)
{
	const char *level = getenv("SMCR_LOG");
	const char *dest = getenv("SMCR_LOG_DEST");

	if (dest && strcmp(dest, "syslog") == 0)
		log_to_syslog = 1;
	else if (dest && *dest && strcmp(dest, "stderr") != 0)
		smcr_log(SMCR_LOG_ERROR, "SMCR_LOG_DEST=%s: expected stderr or syslog; using stderr",
			 dest);

	if (!level || !*level)
		return;
	int parsed = smcr_log_parse_level(level);
	if (parsed < 0)
		smcr_log(SMCR_LOG_ERROR,
			 "SMCR_LOG=%s: expected error, warn, info or debug; using error", level);
	else
		smcr_log_level = parsed;
}

static size_t log_vformat(char *buf, size_t size, int pid, enum smcr_log_level level,
			  const char *fmt, va_list ap)
{
	int head = snprintf(buf, size, "libsmcr[%d]: %s: ", pid, level_names[level]);
	if (head < 0 || (size_t)head >= size)
		return 0;
	int body = vsnprintf(buf + head, size - head, fmt, ap);
	size_t len = (size_t)head + (body < 0 ? 0 : (size_t)body);
	if (len > size - 2)                         /* truncated: keep the newline */
		len = size - 2;
	buf[len++] = '\n';
	buf[len] = '\0';
	return len;
}

size_t smcr_log_format(char *buf, size_t size, int pid, enum smcr_log_level level,
		       const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	size_t len = log_vformat(buf, size, pid, level, fmt, ap);
	va_end(ap);
	return len;
}

/*
 * Whether a seccomp filter the process installed lets the log make call nr
 * (fd, buf, len): a line is dropped rather than kill a sandboxed process.
 */
static bool permitted(long nr, int fd, const void *buf, size_t len)
{
	const uint64_t args[6] = { (uint64_t)fd, (uint64_t)(uintptr_t)buf, len };

	return !smcr_filter_any() || smcr_filter_permits(nr, args);
}

void smcr_log_write(enum smcr_log_level level, const char *fmt, ...)
{
	static const int syslog_prio[] = {
		[SMCR_LOG_ERROR] = LOG_ERR,
		[SMCR_LOG_WARN] = LOG_WARNING,
		[SMCR_LOG_INFO] = LOG_INFO,
		[SMCR_LOG_DEBUG] = LOG_DEBUG,
	};
	int saved_errno = errno;
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	size_t len = log_vformat(line, sizeof(line), permitted(SYS_getpid, 0, NULL, 0) ? getpid() : 0,
				 level, fmt, ap);
	va_end(ap);
	if (log_to_syslog && permitted(SYS_sendto, 0, NULL, 0))
		syslog(LOG_USER | syslog_prio[level], "%.*s", (int)len - 1, line);
	else if (!log_to_syslog && len && log_fd_writable() && permitted(SYS_write, log_fd, line, len))
		(void)syscall(SYS_write, log_fd, line, len);
	errno = saved_errno;
}

const char *smcr_sockaddr_str(const struct sockaddr *sa, socklen_t len, char *buf,
			      size_t size)
{
	char host[INET6_ADDRSTRLEN];
	int saved_errno = errno;

	if (sa && sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *in = (const void *)sa;
		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		snprintf(buf, size, "%s:%u", host, ntohs(in->sin_port));
	} else if (sa && sa->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *in6 = (const void *)sa;
		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		snprintf(buf, size, "[%s]:%u", host, ntohs(in6->sin6_port));
	} else {
		snprintf(buf, size, "?");
	}
	errno = saved_errno;
	return buf;
}
