/*
 * config.h - smcr.conf: the model, its parser, validator and writer.
 *
 * The file holds the AIX smcr0 attributes (enabled, ip_addr_list,
 * port_range_list, max_memory) and our extensions, one "key = value" per line;
 * "#" starts a comment.  One key table (smcr_config_keys) drives parsing,
 * validation of a single value (smcrctl set), showing and the defaults, so a
 * key's rules live in exactly one place.  Shared by smcrd and smcrctl; nothing
 * here prints: every failure is returned as a struct smcr_config_error.
 */
#ifndef SMCR_CONFIG_H
#define SMCR_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define SMCR_CONFIG_MAX_ADDRS 64
#define SMCR_CONFIG_MAX_PORT_RANGES 64
#define SMCR_CONFIG_MAX_MEMORY_MB 1048576u         /* 1 TiB: anything above is a typo */
#define SMCR_CONFIG_MAX_PROCESSES 65536u          /* a uid's: more than a host's usual pid_max */
#define SMCR_CONFIG_BUF_MIN_KIB 16u
#define SMCR_CONFIG_BUF_MAX_KIB 1024u
#define SMCR_CONFIG_LINE_MAX 4096                   /* room for 64 IPv6 prefixes */
#define SMCR_CONFIG_FILE_MAX (1u << 20)

enum smcr_config_log_level {
	SMCR_CONFIG_LOG_ERROR,
	SMCR_CONFIG_LOG_WARN,
	SMCR_CONFIG_LOG_INFO,
	SMCR_CONFIG_LOG_DEBUG,
};

struct smcr_config_addr {
	sa_family_t family;             /* AF_INET or AF_INET6 */
	uint8_t prefix;                 /* leading bits that must match */
	uint8_t bytes[16];              /* network order; IPv4 uses the first 4 */
};

struct smcr_config_addr_list {
	size_t n;
	struct smcr_config_addr addr[SMCR_CONFIG_MAX_ADDRS];
};

struct smcr_config_port_range {
	uint16_t lo, hi;                /* inclusive, lo <= hi */
};

struct smcr_config_port_list {
	size_t n;
	struct smcr_config_port_range range[SMCR_CONFIG_MAX_PORT_RANGES];
};

struct smcr_config {
	bool enabled;
	struct smcr_config_addr_list ip_addrs;
	struct smcr_config_port_list ports;
	uint32_t max_memory_mb;
	uint32_t max_memory_per_user_pct;       /* of max_memory, for each uid but root's */
	uint32_t max_memory_per_process_pct;    /* of max_memory, for each process but root's */
	uint32_t max_processes_per_user;        /* control connections of each uid but root */
	uint32_t rmb_size_kib;
	uint32_t sndbuf_size_kib;
	bool shm;                       /* same-host shared-memory transport */
	bool rdma;
	enum smcr_config_log_level log_level;
};

struct smcr_config_error {
	unsigned int line;              /* 1-based line of the culprit; 0: none */
	char message[512];              /* "file:line: key: reason" or "key: reason" */
};

enum smcr_config_key_id {
	SMCR_KEY_ENABLED,
	SMCR_KEY_IP_ADDR_LIST,
	SMCR_KEY_PORT_RANGE_LIST,
	SMCR_KEY_MAX_MEMORY,
	SMCR_KEY_MAX_MEMORY_PER_USER,
	SMCR_KEY_MAX_MEMORY_PER_PROCESS,
	SMCR_KEY_MAX_PROCESSES_PER_USER,
	SMCR_KEY_RMB_SIZE,
	SMCR_KEY_SNDBUF_SIZE,
	SMCR_KEY_SHM,
	SMCR_KEY_RDMA,
	SMCR_KEY_LOG_LEVEL,
	SMCR_CONFIG_NKEYS
};

/* How a kind of value (0/1, a bounded number, an address list...) is parsed and shown. */
struct smcr_config_type;

struct smcr_config_key {
	const char *name;
	const char *default_value;      /* in file syntax, parsed like any value */
	const char *description;
	const struct smcr_config_type *type;
	size_t offset;                  /* of the field in struct smcr_config */
	uint32_t min, max;              /* bounds of a number */
	const char *unit;               /* of a number, for messages */
};

extern const struct smcr_config_key smcr_config_keys[SMCR_CONFIG_NKEYS];

/* The file smcrd and smcrctl use: $SMCR_CONF, else SMCR_CONF_DEFAULT (set by the build). */
const char *smcr_config_default_path(void);

/* Index in smcr_config_keys, or -1 for an unknown key. */
int smcr_config_key_index(const char *key);

/* Every key at its default. */
void smcr_config_init(struct smcr_config *cfg);

/*
 * Validates one attribute and stores it; on failure cfg is unchanged and err
 * says "key: reason".  Surrounding white space in value is ignored.
 */
int smcr_config_set(struct smcr_config *cfg, const char *key, const char *value,
		    struct smcr_config_error *err);

/* The value of key in file syntax (as smcrctl show prints it). */
int smcr_config_format_value(const struct smcr_config *cfg, const char *key, char *buf,
			     size_t size);

/* Parses a whole file's text; name is only used in error messages. */
int smcr_config_parse(const char *text, const char *name, struct smcr_config *out,
		      struct smcr_config_error *err);

/* Reads a file (at most SMCR_CONFIG_FILE_MAX bytes) into a NUL-terminated malloc()ed text. */
int smcr_config_read_file(const char *path, char **text, struct smcr_config_error *err);

/* smcr_config_read_file + smcr_config_parse. */
int smcr_config_load(const char *path, struct smcr_config *out, struct smcr_config_error *err);

/*
 * text with key's value replaced on its line (comments and other lines kept),
 * or "key = value" appended if no line sets key; value's surrounding white
 * space is dropped.  Does not validate.  malloc()ed; NULL on ENOMEM.
 */
char *smcr_config_edit(const char *text, const char *key, const char *value);

/*
 * Replaces path by new_text: temp file in the same directory, fsync, rename,
 * fsync of the directory.  A reader sees the old file or the new one, never a
 * mix; on failure the old file is untouched and the temp file removed.
 */
int smcr_config_write_atomic(const char *path, const char *new_text,
			     struct smcr_config_error *err);

#endif
