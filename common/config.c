/*
 * config.c - the keys of smcr.conf: their table, their values' rules, their
 * defaults, and the questions smcrd asks of a configuration.
 *
 * Each kind of value (0/1, bounded number, power of two, address list, port
 * list, log level) is one struct smcr_config_type with a parser and a
 * formatter; each key is one row of smcr_config_keys naming its type, field
 * and bounds.  Parsing a file, "smcrctl set", "smcrctl show" and the defaults
 * all go through that table.  The file syntax lives in config_file.c.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_priv.h"

struct smcr_config_type {
	/* Parses value; stores it in field only if it is valid, else says why. */
	int (*parse)(const struct smcr_config_key *key, const char *value, void *field,
		     char *why, size_t size);
	/* Writes field in file syntax; -1 if buf is too small. */
	int (*format)(const void *field, char *buf, size_t size);
};

#define LIST_SEPARATORS ", \t"
#define TOKEN_MAX 64                    /* longer than any address/prefix or port range */

int smcr_config_fail(struct smcr_config_error *err, unsigned int line, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return -1;
	err->line = line;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
	return -1;
}

/* Appends to buf at *len like snprintf; -1 once it no longer fits. */
static int append(char *buf, size_t size, size_t *len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int append(char *buf, size_t size, size_t *len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(buf + *len, size - *len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= size - *len)
		return -1;
	*len += (size_t)n;
	return 0;
}

/* Decimal digits only (no sign, no blanks): EINVAL; above max: ERANGE. */
static int parse_uint(const char *s, size_t len, uint32_t max, uint32_t *out)
{
	uint64_t v = 0;

	if (len == 0 || strspn(s, "0123456789") < len)
		return EINVAL;
	for (size_t i = 0; i < len; i++) {
		v = v * 10 + (uint64_t)(s[i] - '0');
		if (v > max)
			return ERANGE;
	}
	*out = (uint32_t)v;
	return 0;
}

/* The next token of a comma/blank separated list, copied NUL-terminated into tok. */
static const char *next_token(const char *p, char tok[TOKEN_MAX + 1], size_t *len)
{
	p += strspn(p, LIST_SEPARATORS);
	*len = strcspn(p, LIST_SEPARATORS);
	snprintf(tok, TOKEN_MAX + 1, "%.*s", (int)*len, p);
	return p + *len;
}

static int bool_parse(const struct smcr_config_key *key, const char *value, void *field,
		      char *why, size_t size)
{
	(void)key;
	if (strcmp(value, "0") != 0 && strcmp(value, "1") != 0) {
		snprintf(why, size, "'%.64s' must be 0 or 1", value);
		return -1;
	}
	*(bool *)field = value[0] == '1';
	return 0;
}

static int bool_format(const void *field, char *buf, size_t size)
{
	size_t len = 0;
	return append(buf, size, &len, "%d", *(const bool *)field);
}

static int uint_parse(const struct smcr_config_key *key, const char *value, void *field,
		      char *why, size_t size)
{
	uint32_t v;
	int rc = parse_uint(value, strlen(value), key->max, &v);

	if (rc == EINVAL) {
		snprintf(why, size, "'%.64s' is not a whole number of %s", value, key->unit);
		return -1;
	}
	if (rc == ERANGE || v < key->min) {
		snprintf(why, size, "'%.64s' is out of range (%u-%u %s)", value, key->min,
			 key->max, key->unit);
		return -1;
	}
	*(uint32_t *)field = v;
	return 0;
}

static int uint_format(const void *field, char *buf, size_t size)
{
	size_t len = 0;
	return append(buf, size, &len, "%u", *(const uint32_t *)field);
}

static int pow2_parse(const struct smcr_config_key *key, const char *value, void *field,
		      char *why, size_t size)
{
	uint32_t v;

	if (uint_parse(key, value, &v, why, size))
		return -1;
	if (v & (v - 1)) {
		snprintf(why, size, "'%.64s' is not a power of two (%u-%u %s)", value, key->min,
			 key->max, key->unit);
		return -1;
	}
	*(uint32_t *)field = v;
	return 0;
}

/* "a.b.c.d[/0-32]" or "v6[/0-128]". */
static int addr_parse(const char *tok, struct smcr_config_addr *a, char *why, size_t size)
{
	char host[TOKEN_MAX + 1];
	const char *slash = strchr(tok, '/');
	size_t host_len = slash ? (size_t)(slash - tok) : strlen(tok);
	uint32_t prefix;

	snprintf(host, sizeof(host), "%.*s", (int)host_len, tok);
	memset(a, 0, sizeof(*a));
	if (inet_pton(AF_INET, host, a->bytes) == 1) {
		a->family = AF_INET;
		prefix = 32;
	} else if (inet_pton(AF_INET6, host, a->bytes) == 1) {
		a->family = AF_INET6;
		prefix = 128;
	} else {
		snprintf(why, size, "'%s' is not an IPv4 or IPv6 address", tok);
		return -1;
	}
	if (slash) {
		uint32_t max = prefix;
		if (parse_uint(slash + 1, strlen(slash + 1), max, &prefix)) {
			snprintf(why, size, "'%s': prefix must be 0-%u", tok, max);
			return -1;
		}
	}
	a->prefix = (uint8_t)prefix;
	return 0;
}

static int addr_list_parse(const struct smcr_config_key *key, const char *value, void *field,
			   char *why, size_t size)
{
	struct smcr_config_addr_list list = { 0 };
	char tok[TOKEN_MAX + 1];
	size_t len;

	(void)key;
	for (const char *p = next_token(value, tok, &len); len; p = next_token(p, tok, &len)) {
		if (list.n == SMCR_CONFIG_MAX_ADDRS) {
			snprintf(why, size, "too many addresses (max %d)", SMCR_CONFIG_MAX_ADDRS);
			return -1;
		}
		if (len > TOKEN_MAX) {
			snprintf(why, size, "'%s...' is not an IPv4 or IPv6 address", tok);
			return -1;
		}
		if (addr_parse(tok, &list.addr[list.n++], why, size))
			return -1;
	}
	*(struct smcr_config_addr_list *)field = list;
	return 0;
}

static int addr_list_format(const void *field, char *buf, size_t size)
{
	const struct smcr_config_addr_list *list = field;
	size_t len = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < list->n; i++) {
		const struct smcr_config_addr *a = &list->addr[i];
		char host[INET6_ADDRSTRLEN];
		unsigned int full = a->family == AF_INET ? 32 : 128;

		inet_ntop(a->family, a->bytes, host, sizeof(host));
		if (append(buf, size, &len, "%s%s", i ? " " : "", host) ||
		    (a->prefix != full && append(buf, size, &len, "/%u", a->prefix)))
			return -1;
	}
	return 0;
}

/* "port" or "lo-hi", each 1-65535, lo <= hi. */
static int port_range_parse(const char *tok, struct smcr_config_port_range *r, char *why,
			    size_t size)
{
	const char *dash = strchr(tok, '-');
	size_t lo_len = dash ? (size_t)(dash - tok) : strlen(tok);
	const char *hi_text = dash ? dash + 1 : tok;
	uint32_t lo, hi;
	int rc = parse_uint(tok, lo_len, UINT16_MAX, &lo);

	if (!rc)
		rc = parse_uint(hi_text, strlen(hi_text), UINT16_MAX, &hi);
	if (rc == EINVAL) {
		snprintf(why, size, "'%s' is not a port or port range (like 1-20)", tok);
		return -1;
	}
	if (rc == ERANGE || lo == 0 || hi == 0) {
		snprintf(why, size, "'%s': ports are 1-65535", tok);
		return -1;
	}
	if (lo > hi) {
		snprintf(why, size, "'%s': range is reversed", tok);
		return -1;
	}
	r->lo = (uint16_t)lo;
	r->hi = (uint16_t)hi;
	return 0;
}

static int port_list_parse(const struct smcr_config_key *key, const char *value, void *field,
			   char *why, size_t size)
{
	struct smcr_config_port_list list = { 0 };
	char tok[TOKEN_MAX + 1];
	size_t len;

	(void)key;
	for (const char *p = next_token(value, tok, &len); len; p = next_token(p, tok, &len)) {
		if (list.n == SMCR_CONFIG_MAX_PORT_RANGES) {
			snprintf(why, size, "too many ports and ranges (max %d)",
				 SMCR_CONFIG_MAX_PORT_RANGES);
			return -1;
		}
		if (len > TOKEN_MAX) {
			snprintf(why, size, "'%s...' is not a port or port range", tok);
			return -1;
		}
		if (port_range_parse(tok, &list.range[list.n++], why, size))
			return -1;
	}
	*(struct smcr_config_port_list *)field = list;
	return 0;
}

static int port_list_format(const void *field, char *buf, size_t size)
{
	const struct smcr_config_port_list *list = field;
	size_t len = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < list->n; i++) {
		const struct smcr_config_port_range *r = &list->range[i];
		if (append(buf, size, &len, "%s%u", i ? "," : "", r->lo) ||
		    (r->hi != r->lo && append(buf, size, &len, "-%u", r->hi)))
			return -1;
	}
	return 0;
}

static const char *const log_level_names[] = {
	[SMCR_CONFIG_LOG_ERROR] = "error",
	[SMCR_CONFIG_LOG_WARN] = "warn",
	[SMCR_CONFIG_LOG_INFO] = "info",
	[SMCR_CONFIG_LOG_DEBUG] = "debug",
};

static int log_level_parse(const struct smcr_config_key *key, const char *value, void *field,
			   char *why, size_t size)
{
	(void)key;
	for (size_t i = 0; i < sizeof(log_level_names) / sizeof(log_level_names[0]); i++) {
		if (strcmp(value, log_level_names[i]) == 0) {
			*(enum smcr_config_log_level *)field = (enum smcr_config_log_level)i;
			return 0;
		}
	}
	snprintf(why, size, "'%.64s' must be error, warn, info or debug", value);
	return -1;
}

static int log_level_format(const void *field, char *buf, size_t size)
{
	size_t len = 0;
	return append(buf, size, &len, "%s",
		      log_level_names[*(const enum smcr_config_log_level *)field]);
}

static const struct smcr_config_type bool_type = { bool_parse, bool_format };
static const struct smcr_config_type uint_type = { uint_parse, uint_format };
static const struct smcr_config_type pow2_type = { pow2_parse, uint_format };
static const struct smcr_config_type addr_list_type = { addr_list_parse, addr_list_format };
static const struct smcr_config_type port_list_type = { port_list_parse, port_list_format };
static const struct smcr_config_type log_level_type = { log_level_parse, log_level_format };

#define FIELD(name) .offset = offsetof(struct smcr_config, name)

const struct smcr_config_key smcr_config_keys[SMCR_CONFIG_NKEYS] = {
	[SMCR_KEY_ENABLED] = { "enabled", "0",
		"negotiate SMC at all (0/1)", &bool_type, FIELD(enabled) },
	[SMCR_KEY_IP_ADDR_LIST] = { "ip_addr_list", "",
		"local IPv4/IPv6 addresses[/prefix] that may use SMC; empty: none",
		&addr_list_type, FIELD(ip_addrs) },
	[SMCR_KEY_PORT_RANGE_LIST] = { "port_range_list", "",
		"server ports or ranges (1-20,23,50) that may use SMC; empty: none",
		&port_list_type, FIELD(ports) },
	[SMCR_KEY_MAX_MEMORY] = { "max_memory", "256",
		"MB of SMC buffer memory, host-wide (1-1048576)", &uint_type, FIELD(max_memory_mb),
		1, SMCR_CONFIG_MAX_MEMORY_MB, "MB" },
	[SMCR_KEY_MAX_MEMORY_PER_USER] = { "max_memory_per_user", "50",
		"percent of max_memory one user (uid) may hold; root: no limit (1-100)",
		&uint_type, FIELD(max_memory_per_user_pct), 1, 100, "percent" },
	[SMCR_KEY_MAX_MEMORY_PER_PROCESS] = { "max_memory_per_process", "50",
		"percent of max_memory one process may hold; root's: no limit (1-100)",
		&uint_type, FIELD(max_memory_per_process_pct), 1, 100, "percent" },
	[SMCR_KEY_MAX_PROCESSES_PER_USER] = { "max_processes_per_user", "256",
		"processes of one user (uid) smcrd serves at once; root: no limit",
		&uint_type, FIELD(max_processes_per_user), 1, SMCR_CONFIG_MAX_PROCESSES,
		"processes" },
	[SMCR_KEY_RMB_SIZE] = { "rmb_size", "256",
		"KiB of receive buffer (RMB) per connection, power of two 16-1024",
		&pow2_type, FIELD(rmb_size_kib), SMCR_CONFIG_BUF_MIN_KIB,
		SMCR_CONFIG_BUF_MAX_KIB, "KiB" },
	[SMCR_KEY_SNDBUF_SIZE] = { "sndbuf_size", "64",
		"KiB of send buffer per connection, power of two 16-1024 (sizes nothing)",
		&pow2_type, FIELD(sndbuf_size_kib), SMCR_CONFIG_BUF_MIN_KIB,
		SMCR_CONFIG_BUF_MAX_KIB, "KiB" },
	[SMCR_KEY_SHM] = { "shm", "1",
		"shared-memory transport between processes of this host (0/1)",
		&bool_type, FIELD(shm) },
	[SMCR_KEY_RDMA] = { "rdma", "1",
		"RDMA transport between hosts (0/1)", &bool_type, FIELD(rdma) },
	[SMCR_KEY_LOG_LEVEL] = { "log_level", "warn",
		"smcr diagnostics: error, warn, info or debug", &log_level_type,
		FIELD(log_level) },
};

const char *smcr_config_default_path(void)
{
	const char *env = getenv("SMCR_CONF");
	return env && *env ? env : SMCR_CONF_DEFAULT;
}

int smcr_config_key_index(const char *key)
{
	for (int i = 0; i < SMCR_CONFIG_NKEYS; i++)
		if (strcmp(key, smcr_config_keys[i].name) == 0)
			return i;
	return -1;
}

void smcr_config_init(struct smcr_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	/* The defaults are valid (test_config checks), so this cannot fail. */
	for (int i = 0; i < SMCR_CONFIG_NKEYS; i++)
		smcr_config_set(cfg, smcr_config_keys[i].name, smcr_config_keys[i].default_value,
				NULL);
}

int smcr_config_set(struct smcr_config *cfg, const char *key, const char *value,
		    struct smcr_config_error *err)
{
	int i = smcr_config_key_index(key);
	char trimmed[SMCR_CONFIG_LINE_MAX + 1], why[400];

	if (i < 0)
		return smcr_config_fail(err, 0, "%.64s: unknown key", key);
	const struct smcr_config_key *k = &smcr_config_keys[i];

	value += strspn(value, BLANKS);
	size_t len = strlen(value);
	while (len && strchr(BLANKS, value[len - 1]))
		len--;
	if (len > SMCR_CONFIG_LINE_MAX)
		return smcr_config_fail(err, 0, "%s: value too long (max %d bytes)", k->name,
					SMCR_CONFIG_LINE_MAX);
	snprintf(trimmed, sizeof(trimmed), "%.*s", (int)len, value);
	if (k->type->parse(k, trimmed, (char *)cfg + k->offset, why, sizeof(why)))
		return smcr_config_fail(err, 0, "%s: %s", k->name, why);
	return 0;
}

int smcr_config_format_value(const struct smcr_config *cfg, const char *key, char *buf,
			     size_t size)
{
	int i = smcr_config_key_index(key);

	if (i < 0 || size == 0)
		return -1;
	const struct smcr_config_key *k = &smcr_config_keys[i];
	return k->type->format((const char *)cfg + k->offset, buf, size);
}
