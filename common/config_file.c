/*
 * config_file.c - smcr.conf as a file: its line syntax, parsing a whole text,
 * reading it, rewriting one key's line, and replacing the file atomically.
 *
 * A line is blank, a comment ("#" to the end of the line; it may also follow a
 * value, which never contains "#"), or "key = value".  The values' rules live
 * in config.c; this file only finds keys and values and says where they were.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config_priv.h"

struct conf_line {
	const char *key, *value;        /* both point into the line, without blanks */
	size_t key_len, value_len;
};

enum line_kind { LINE_EMPTY, LINE_ENTRY, LINE_NO_EQUALS };

static void trim(const char **s, size_t *len)
{
	while (*len && strchr(BLANKS, **s)) {
		(*s)++;
		(*len)--;
	}
	while (*len && strchr(BLANKS, (*s)[*len - 1]))
		(*len)--;
}

/* The one reading of a line, used both to parse and to edit. */
static enum line_kind split_line(const char *line, size_t len, struct conf_line *out)
{
	const char *hash = memchr(line, '#', len);

	if (hash)
		len = (size_t)(hash - line);
	trim(&line, &len);
	if (len == 0)
		return LINE_EMPTY;
	const char *eq = memchr(line, '=', len);
	if (!eq)
		return LINE_NO_EQUALS;
	out->key = line;
	out->key_len = (size_t)(eq - line);
	trim(&out->key, &out->key_len);
	out->value = eq + 1;
	out->value_len = len - (size_t)(out->value - line);
	trim(&out->value, &out->value_len);
	return LINE_ENTRY;
}

static int parse_entry(const struct conf_line *l, const char *name, unsigned int lineno,
		       unsigned int first_seen[SMCR_CONFIG_NKEYS], struct smcr_config *cfg,
		       struct smcr_config_error *err)
{
	char key[64], value[SMCR_CONFIG_LINE_MAX + 1];
	struct smcr_config_error why;

	if (l->key_len == 0)
		return smcr_config_fail(err, lineno, "%s:%u: missing key before '='", name,
					lineno);
	snprintf(key, sizeof(key), "%.*s", (int)l->key_len, l->key);
	snprintf(value, sizeof(value), "%.*s", (int)l->value_len, l->value);
	int i = l->key_len < sizeof(key) ? smcr_config_key_index(key) : -1;
	if (i < 0)
		return smcr_config_fail(err, lineno, "%s:%u: %s: unknown key", name, lineno, key);
	if (first_seen[i])
		return smcr_config_fail(err, lineno, "%s:%u: %s: duplicate key (first set on line %u)",
					name, lineno, key, first_seen[i]);
	first_seen[i] = lineno;
	if (smcr_config_set(cfg, key, value, &why))
		return smcr_config_fail(err, lineno, "%s:%u: %s", name, lineno, why.message);
	return 0;
}

int smcr_config_parse(const char *text, const char *name, struct smcr_config *out,
		      struct smcr_config_error *err)
{
	unsigned int first_seen[SMCR_CONFIG_NKEYS] = { 0 };
	struct smcr_config cfg;
	unsigned int lineno = 0;

	smcr_config_init(&cfg);
	for (const char *p = text; *p;) {
		size_t len = strcspn(p, "\n");
		struct conf_line l;

		lineno++;
		if (len > SMCR_CONFIG_LINE_MAX)
			return smcr_config_fail(err, lineno, "%s:%u: line too long (max %d bytes)",
						name, lineno, SMCR_CONFIG_LINE_MAX);
		switch (split_line(p, len, &l)) {
		case LINE_EMPTY:
			break;
		case LINE_NO_EQUALS:
			trim(&p, &len);
			return smcr_config_fail(err, lineno,
						"%s:%u: '%.*s': missing '=' (expected key = value)",
						name, lineno, (int)(len < 64 ? len : 64), p);
		case LINE_ENTRY:
			if (parse_entry(&l, name, lineno, first_seen, &cfg, err))
				return -1;
			break;
		}
		p += len;
		p += *p == '\n';
	}
	*out = cfg;
	return 0;
}

int smcr_config_read_file(const char *path, char **text, struct smcr_config_error *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char *buf = NULL;
	size_t len = 0;
	ssize_t n;

	if (fd < 0)
		return smcr_config_fail(err, 0, "%s: %s", path, strerror(errno));
	buf = malloc(SMCR_CONFIG_FILE_MAX + 1);
	if (!buf) {
		close(fd);
		return smcr_config_fail(err, 0, "%s: %s", path, strerror(ENOMEM));
	}
	while ((n = read(fd, buf + len, SMCR_CONFIG_FILE_MAX + 1 - len)) > 0 ||
	       (n < 0 && errno == EINTR))
		len += n > 0 ? (size_t)n : 0;
	int saved_errno = errno;
	close(fd);
	if (n < 0 || len > SMCR_CONFIG_FILE_MAX || memchr(buf, '\0', len)) {
		free(buf);
		if (n < 0)
			return smcr_config_fail(err, 0, "%s: %s", path, strerror(saved_errno));
		return smcr_config_fail(err, 0, "%s: not a configuration file (%s)", path,
					len > SMCR_CONFIG_FILE_MAX ? "larger than 1 MiB"
								   : "contains a NUL byte");
	}
	buf[len] = '\0';
	*text = buf;
	return 0;
}

int smcr_config_load(const char *path, struct smcr_config *out, struct smcr_config_error *err)
{
	char *text;

	if (smcr_config_read_file(path, &text, err))
		return -1;
	int rc = smcr_config_parse(text, path, out, err);
	free(text);
	return rc;
}

/* text[0..at) + middle + text[resume..], malloc()ed. */
static char *replace_span(const char *text, size_t at, const char *middle, size_t resume)
{
	char *out;

	if (asprintf(&out, "%.*s%s%s", (int)at, text, middle, text + resume) < 0)
		return NULL;
	return out;
}

char *smcr_config_edit(const char *text, const char *key, const char *value)
{
	char *middle = NULL, *out;
	size_t end = strlen(text), value_len = strlen(value);

	trim(&value, &value_len);

	for (const char *p = text; *p;) {
		size_t len = strcspn(p, "\n");
		struct conf_line l;

		if (split_line(p, len, &l) == LINE_ENTRY && l.key_len == strlen(key) &&
		    memcmp(l.key, key, l.key_len) == 0) {
			/* An empty value sits right after "=" or right before "#". */
			size_t at = (size_t)(l.value - text);
			size_t resume = at + l.value_len;
			bool after_eq = l.value_len == 0 && l.value[-1] == '=';
			bool before_hash = l.value_len == 0 && l.value[0] == '#';
			if (asprintf(&middle, "%s%.*s%s", after_eq ? " " : "", (int)value_len,
				     value, before_hash ? " " : "") < 0)
				return NULL;
			out = replace_span(text, at, middle, resume);
			free(middle);
			return out;
		}
		p += len;
		p += *p == '\n';
	}
	if (asprintf(&middle, "%s%s = %.*s\n", end && text[end - 1] != '\n' ? "\n" : "", key,
		     (int)value_len, value) < 0)
		return NULL;
	out = replace_span(text, end, middle, end);
	free(middle);
	return out;
}

static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Makes the rename itself durable. */
static int fsync_parent(const char *path)
{
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX];

	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path + 1) : 1,
		 slash ? path : ".");
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int rc = fsync(fd);
	close(fd);
	return rc;
}

int smcr_config_write_atomic(const char *path, const char *new_text,
			     struct smcr_config_error *err)
{
	char tmp[PATH_MAX];
	struct stat st;
	mode_t mode = stat(path, &st) == 0 ? st.st_mode & 07777 : 0644;

	if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int)sizeof(tmp))
		return smcr_config_fail(err, 0, "%s: %s", path, strerror(ENAMETOOLONG));
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return smcr_config_fail(err, 0, "%s: cannot create a temporary file beside it: %s",
					path, strerror(errno));
	if (fchmod(fd, mode) || write_all(fd, new_text, strlen(new_text)) || fsync(fd)) {
		int saved_errno = errno;
		close(fd);
		unlink(tmp);
		return smcr_config_fail(err, 0, "%s: cannot write %s: %s", path, tmp,
					strerror(saved_errno));
	}
	if (close(fd) || rename(tmp, path)) {
		int saved_errno = errno;
		unlink(tmp);
		return smcr_config_fail(err, 0, "%s: cannot replace it: %s", path,
					strerror(saved_errno));
	}
	if (fsync_parent(path))
		return smcr_config_fail(err, 0, "%s: replaced, but syncing its directory failed: %s",
					path, strerror(errno));
	return 0;
}
