/*
 * Unit tests of smcr.conf handling (common/config.c, common/config_file.c):
 * every value rule, accepted and refused, through both the file parser and
 * smcr_config_set; the file's structure rules; rewriting one key; the atomic
 * replacement of the file; and the allow-list predicates.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "config.h"

static struct smcr_config cfg;
static struct smcr_config_error err;

/* Parses "# header\n\nKEY = VALUE\n" (the entry on line 3) as file "t.conf". */
static int parse_entry(const char *key, const char *value)
{
	char text[8192];

	snprintf(text, sizeof(text), "# header\n\n%s = %s\n", key, value);
	memset(&err, 0, sizeof(err));
	return smcr_config_parse(text, "t.conf", &cfg, &err);
}

static void assert_refused(const char *text, unsigned int line, const char *message)
{
	struct smcr_config before;

	smcr_config_init(&cfg);
	cfg.max_memory_mb = 7;          /* a failed parse must leave out alone */
	before = cfg;
	memset(&err, 0, sizeof(err));
	assert_int_equal(smcr_config_parse(text, "t.conf", &cfg, &err), -1);
	assert_int_equal(err.line, line);
	assert_string_equal(err.message, message);
	assert_memory_equal(&cfg, &before, sizeof(cfg));
}

static void defaults(void **state)
{
	char buf[256];

	(void)state;
	smcr_config_init(&cfg);
	assert_false(cfg.enabled);
	assert_int_equal(cfg.ip_addrs.n, 0);
	assert_int_equal(cfg.ports.n, 0);
	assert_int_equal(cfg.max_memory_mb, 256);
	assert_int_equal(cfg.max_memory_per_user_pct, 50);
	assert_int_equal(cfg.max_memory_per_process_pct, 50);
	assert_int_equal(cfg.max_processes_per_user, 256);
	assert_int_equal(cfg.rmb_size_kib, 256);
	assert_int_equal(cfg.sndbuf_size_kib, 64);
	assert_true(cfg.shm);
	assert_true(cfg.rdma);
	assert_int_equal(cfg.log_level, SMCR_CONFIG_LOG_WARN);
	for (int i = 0; i < SMCR_CONFIG_NKEYS; i++) {
		const struct smcr_config_key *k = &smcr_config_keys[i];
		struct smcr_config fresh;
		smcr_config_init(&fresh);
		assert_int_equal(smcr_config_set(&fresh, k->name, k->default_value, &err), 0);
		assert_int_equal(smcr_config_format_value(&cfg, k->name, buf, sizeof(buf)), 0);
		assert_string_equal(buf, k->default_value);
		assert_non_null(k->description);
		assert_int_equal(smcr_config_key_index(k->name), i);
	}
	/* An empty file is all defaults. */
	struct smcr_config empty;
	assert_int_equal(smcr_config_parse("", "t.conf", &empty, &err), 0);
	assert_memory_equal(&empty, &cfg, sizeof(cfg));
}

struct value_case {
	const char *key, *value;
	const char *result;     /* accepted: shown as; refused: the reason */
};

static const struct value_case accepted[] = {
	{ "enabled", "0", "0" },
	{ "enabled", "1", "1" },
	{ "ip_addr_list", "", "" },
	{ "ip_addr_list", "127.0.0.1", "127.0.0.1" },
	{ "ip_addr_list", "::1", "::1" },
	{ "ip_addr_list", "10.0.0.0/8, 192.168.1.0/24\t::1", "10.0.0.0/8 192.168.1.0/24 ::1" },
	{ "ip_addr_list", "10.1.2.3,10.1.2.4", "10.1.2.3 10.1.2.4" },
	{ "ip_addr_list", "0.0.0.0/0 ::/0", "0.0.0.0/0 ::/0" },
	{ "ip_addr_list", "10.1.2.3/32 FE80::1/128 2001:db8::/32", "10.1.2.3 fe80::1 2001:db8::/32" },
	{ "ip_addr_list", "::ffff:10.0.0.1", "::ffff:10.0.0.1" },
	{ "port_range_list", "", "" },
	{ "port_range_list", "1-20,23,50", "1-20,23,50" },
	{ "port_range_list", "1, 65535", "1,65535" },
	{ "port_range_list", "1-65535", "1-65535" },
	{ "port_range_list", "7-7 8", "7,8" },
	{ "max_memory", "1", "1" },
	{ "max_memory", "1048576", "1048576" },
	{ "max_memory", "0256", "256" },
	{ "max_memory_per_user", "100", "100" },
	{ "max_memory_per_process", "1", "1" },
	{ "max_processes_per_user", "65536", "65536" },
	{ "rmb_size", "16", "16" },
	{ "rmb_size", "1024", "1024" },
	{ "sndbuf_size", "128", "128" },
	{ "shm", "0", "0" },
	{ "rdma", "0", "0" },
	{ "log_level", "error", "error" },
	{ "log_level", "warn", "warn" },
	{ "log_level", "info", "info" },
	{ "log_level", "debug", "debug" },
};

static const struct value_case refused[] = {
	{ "enabled", "2", "'2' must be 0 or 1" },
	{ "enabled", "yes", "'yes' must be 0 or 1" },
	{ "enabled", "", "'' must be 0 or 1" },
	{ "enabled", "1 1", "'1 1' must be 0 or 1" },
	{ "ip_addr_list", "1.2.3", "'1.2.3' is not an IPv4 or IPv6 address" },
	{ "ip_addr_list", "127.0.0.1 localhost", "'localhost' is not an IPv4 or IPv6 address" },
	{ "ip_addr_list", "fe80::1%eth0", "'fe80::1%eth0' is not an IPv4 or IPv6 address" },
	{ "ip_addr_list", "10.0.0.1/33", "'10.0.0.1/33': prefix must be 0-32" },
	{ "ip_addr_list", "::1/129", "'::1/129': prefix must be 0-128" },
	{ "ip_addr_list", "10.0.0.1/", "'10.0.0.1/': prefix must be 0-32" },
	{ "ip_addr_list", "10.0.0.1/x", "'10.0.0.1/x': prefix must be 0-32" },
	{ "ip_addr_list", "10.0.0.1/-1", "'10.0.0.1/-1': prefix must be 0-32" },
	{ "port_range_list", "0", "'0': ports are 1-65535" },
	{ "port_range_list", "65536", "'65536': ports are 1-65535" },
	{ "port_range_list", "0-10", "'0-10': ports are 1-65535" },
	{ "port_range_list", "1-65536", "'1-65536': ports are 1-65535" },
	{ "port_range_list", "5-3", "'5-3': range is reversed" },
	{ "port_range_list", "5-0", "'5-0': ports are 1-65535" },
	{ "port_range_list", "1-", "'1-' is not a port or port range (like 1-20)" },
	{ "port_range_list", "-5", "'-5' is not a port or port range (like 1-20)" },
	{ "port_range_list", "1-2-3", "'1-2-3' is not a port or port range (like 1-20)" },
	{ "port_range_list", "http", "'http' is not a port or port range (like 1-20)" },
	{ "port_range_list", "+80", "'+80' is not a port or port range (like 1-20)" },
	{ "max_memory", "12x", "'12x' is not a whole number of MB" },
	{ "max_memory", "-1", "'-1' is not a whole number of MB" },
	{ "max_memory", "", "'' is not a whole number of MB" },
	{ "max_memory", "1 2", "'1 2' is not a whole number of MB" },
	{ "max_memory", "0x10", "'0x10' is not a whole number of MB" },
	{ "max_memory", "99999999999999999999", "'99999999999999999999' is out of range (1-1048576 MB)" },
	{ "max_memory", "0", "'0' is out of range (1-1048576 MB)" },
	{ "max_memory", "1048577", "'1048577' is out of range (1-1048576 MB)" },
	{ "max_memory_per_user", "0", "'0' is out of range (1-100 percent)" },
	{ "max_memory_per_process", "101", "'101' is out of range (1-100 percent)" },
	{ "max_memory_per_user", "50%", "'50%' is not a whole number of percent" },
	{ "max_processes_per_user", "0", "'0' is out of range (1-65536 processes)" },
	{ "rmb_size", "8", "'8' is out of range (16-1024 KiB)" },
	{ "rmb_size", "2048", "'2048' is out of range (16-1024 KiB)" },
	{ "rmb_size", "48", "'48' is not a power of two (16-1024 KiB)" },
	{ "rmb_size", "64k", "'64k' is not a whole number of KiB" },
	{ "sndbuf_size", "1000", "'1000' is not a power of two (16-1024 KiB)" },
	{ "sndbuf_size", "0", "'0' is out of range (16-1024 KiB)" },
	{ "shm", "2", "'2' must be 0 or 1" },
	{ "rdma", "on", "'on' must be 0 or 1" },
	{ "log_level", "verbose", "'verbose' must be error, warn, info or debug" },
	{ "log_level", "WARN", "'WARN' must be error, warn, info or debug" },
};

static void values_accepted(void **state)
{
	char shown[4096];

	(void)state;
	for (size_t i = 0; i < sizeof(accepted) / sizeof(accepted[0]); i++) {
		const struct value_case *c = &accepted[i];
		struct smcr_config by_set, again;

		print_message("accept %s = '%s'\n", c->key, c->value);
		assert_int_equal(parse_entry(c->key, c->value), 0);
		assert_int_equal(smcr_config_format_value(&cfg, c->key, shown, sizeof(shown)), 0);
		assert_string_equal(shown, c->result);

		smcr_config_init(&by_set);
		assert_int_equal(smcr_config_set(&by_set, c->key, c->value, &err), 0);
		assert_memory_equal(&by_set, &cfg, sizeof(cfg));

		/* What show prints reads back to the same configuration. */
		smcr_config_init(&again);
		assert_int_equal(smcr_config_set(&again, c->key, shown, &err), 0);
		assert_memory_equal(&again, &cfg, sizeof(cfg));
	}
}

static void values_refused(void **state)
{
	char message[sizeof(err.message)];

	(void)state;
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		const struct value_case *c = &refused[i];
		struct smcr_config by_set, before;

		print_message("refuse %s = '%s'\n", c->key, c->value);
		char text[256];
		snprintf(text, sizeof(text), "# header\n\n%s = %s\n", c->key, c->value);
		snprintf(message, sizeof(message), "t.conf:3: %s: %s", c->key, c->result);
		assert_refused(text, 3, message);

		smcr_config_init(&by_set);
		before = by_set;
		assert_int_equal(smcr_config_set(&by_set, c->key, c->value, &err), -1);
		assert_int_equal(err.line, 0);
		snprintf(message, sizeof(message), "%s: %s", c->key, c->result);
		assert_string_equal(err.message, message);
		assert_memory_equal(&by_set, &before, sizeof(by_set));
	}
}

static void list_limits(void **state)
{
	char addrs[4096] = "", ports[4096] = "", text[8300];
	size_t a = 0, p = 0;

	(void)state;
	for (int i = 1; i <= SMCR_CONFIG_MAX_ADDRS; i++) {
		a += (size_t)snprintf(addrs + a, sizeof(addrs) - a, "2001:db8::%x/64 ", i);
		p += (size_t)snprintf(ports + p, sizeof(ports) - p, "%d-%d,", i * 10, i * 10 + 5);
	}
	assert_int_equal(parse_entry("ip_addr_list", addrs), 0);
	assert_int_equal(cfg.ip_addrs.n, SMCR_CONFIG_MAX_ADDRS);
	assert_int_equal(parse_entry("port_range_list", ports), 0);
	assert_int_equal(cfg.ports.n, SMCR_CONFIG_MAX_PORT_RANGES);

	snprintf(text, sizeof(text), "ip_addr_list = %s10.0.0.1\n", addrs);
	assert_refused(text, 1, "t.conf:1: ip_addr_list: too many addresses (max 64)");
	snprintf(text, sizeof(text), "port_range_list = %s9\n", ports);
	assert_refused(text, 1, "t.conf:1: port_range_list: too many ports and ranges (max 64)");
}

static void file_syntax(void **state)
{
	static const char text[] =
		"# comment\n"
		"   # indented comment\n"
		"\n"
		"  \t \n"
		"enabled=1\n"
		"ip_addr_list = 10.0.0.0/8 # trailing comment\n"
		"\tport_range_list\t=\t80,443  \r\n"
		"max_memory = 512\r\n"
		"log_level = debug";     /* no final newline */

	(void)state;
	assert_int_equal(smcr_config_parse(text, "t.conf", &cfg, &err), 0);
	assert_true(cfg.enabled);
	assert_int_equal(cfg.ip_addrs.n, 1);
	assert_int_equal(cfg.ip_addrs.addr[0].prefix, 8);
	assert_int_equal(cfg.ports.n, 2);
	assert_int_equal(cfg.ports.range[1].lo, 443);
	assert_int_equal(cfg.max_memory_mb, 512);
	assert_int_equal(cfg.log_level, SMCR_CONFIG_LOG_DEBUG);
	assert_int_equal(cfg.rmb_size_kib, 256);         /* absent: default */
}

static void file_structure_refused(void **state)
{
	char long_line[SMCR_CONFIG_LINE_MAX + 64];

	(void)state;
	assert_refused("enabled = 1\nnosuch = 1\n", 2, "t.conf:2: nosuch: unknown key");
	assert_refused("Enabled = 1\n", 1, "t.conf:1: Enabled: unknown key");
	assert_refused("# x\nenabled = 1\nmax_memory = 5\nenabled = 0\n", 4,
		       "t.conf:4: enabled: duplicate key (first set on line 2)");
	assert_refused("\nenabled 1\n", 2,
		       "t.conf:2: 'enabled 1': missing '=' (expected key = value)");
	assert_refused("= 1\n", 1, "t.conf:1: missing key before '='");
	assert_refused("enabled = 1 # ok\nmax_memory = 12x # comment\n", 2,
		       "t.conf:2: max_memory: '12x' is not a whole number of MB");

	memset(long_line, 'x', sizeof(long_line) - 1);
	long_line[sizeof(long_line) - 1] = '\0';
	memcpy(long_line, "ip_addr_list = ", 15);
	assert_refused(long_line, 1, "t.conf:1: line too long (max 4096 bytes)");
}

static void set_specifics(void **state)
{
	char buf[64];

	(void)state;
	smcr_config_init(&cfg);
	assert_int_equal(smcr_config_set(&cfg, "nosuch", "1", &err), -1);
	assert_string_equal(err.message, "nosuch: unknown key");
	assert_int_equal(smcr_config_set(&cfg, "enabled", " \t1 \n", &err), 0);
	assert_true(cfg.enabled);
	/* A value that would smuggle a second line into the file is refused. */
	assert_int_equal(smcr_config_set(&cfg, "enabled", "0\nmax_memory=1", &err), -1);
	assert_int_equal(smcr_config_set(&cfg, "ip_addr_list", "::1\nenabled=0", &err), -1);
	assert_string_equal(err.message,
			    "ip_addr_list: '::1\nenabled=0' is not an IPv4 or IPv6 address");
	assert_int_equal(smcr_config_format_value(&cfg, "nosuch", buf, sizeof(buf)), -1);
	assert_int_equal(smcr_config_set(&cfg, "ip_addr_list", "2001:db8::1 2001:db8::2", &err), 0);
	assert_int_equal(smcr_config_format_value(&cfg, "ip_addr_list", buf, 12), -1);
}

static void edit_keeps_the_rest(void **state)
{
	static const char text[] =
		"# smcr\n"
		"enabled = 0   # off for now\n"
		"\n"
		"max_memory=256\n"
		"# port_range_list = 1-2\n"
		"ip_addr_list =\n"
		"log_level = # chosen later\n";
	char *out;

	(void)state;
	out = smcr_config_edit(text, "enabled", " 1 ");
	assert_string_equal(out, "# smcr\nenabled = 1   # off for now\n\nmax_memory=256\n"
				 "# port_range_list = 1-2\nip_addr_list =\n"
				 "log_level = # chosen later\n");
	free(out);
	out = smcr_config_edit(text, "max_memory", "1024");
	assert_non_null(strstr(out, "\nmax_memory=1024\n# port_range_list = 1-2\n"));
	free(out);
	out = smcr_config_edit(text, "ip_addr_list", "::1");
	assert_non_null(strstr(out, "\nip_addr_list = ::1\nlog_level"));
	free(out);
	out = smcr_config_edit(text, "log_level", "info");
	assert_non_null(strstr(out, "\nlog_level = info # chosen later\n"));
	free(out);
	/* The commented-out line is not the key's line: append. */
	out = smcr_config_edit(text, "port_range_list", "80");
	assert_int_equal(strncmp(out, text, strlen(text)), 0);
	assert_string_equal(out + strlen(text), "port_range_list = 80\n");
	free(out);
	out = smcr_config_edit("enabled = 1", "shm", "0");
	assert_string_equal(out, "enabled = 1\nshm = 0\n");
	free(out);
	out = smcr_config_edit("", "shm", "0");
	assert_string_equal(out, "shm = 0\n");
	free(out);
}

/* A fresh directory holding "smcr.conf" with text. */
static void make_conf(char dir[64], char path[128], const char *text)
{
	strcpy(dir, "/tmp/test_config.XXXXXX");
	assert_non_null(mkdtemp(dir));
	assert_int_equal(chmod(dir, 0755), 0);
	snprintf(path, 128, "%s/smcr.conf", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(path, 0640), 0);
}

static int entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	return n;
}

static void assert_file(const char *path, const char *expected)
{
	char *text;

	assert_int_equal(smcr_config_read_file(path, &text, &err), 0);
	assert_string_equal(text, expected);
	free(text);
}

static void remove_conf(const char *dir, const char *path)
{
	unlink(path);
	assert_int_equal(rmdir(dir), 0);
}

static void write_atomic_replaces(void **state)
{
	static const char old[] = "# old\nenabled = 0\n", new[] = "# new\nenabled = 1\n";
	char dir[64], path[128];
	struct stat st;

	(void)state;
	make_conf(dir, path, old);
	assert_int_equal(smcr_config_write_atomic(path, new, &err), 0);
	assert_file(path, new);
	assert_int_equal(entries(dir), 1);              /* temp file gone */
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);     /* mode kept */
	assert_int_equal(smcr_config_load(path, &cfg, &err), 0);
	assert_true(cfg.enabled);
	remove_conf(dir, path);
}

/* Runs write_atomic in a child (after setup); the child's exit status says whether it failed as expected. */
static void assert_write_fails(const char *path, const char *text, void (*setup)(void),
			       const char *reason)
{
	pid_t pid = fork();
	int status;

	assert_true(pid >= 0);
	if (pid == 0) {
		setup();
		int rc = smcr_config_write_atomic(path, text, &err);
		_exit(rc == -1 && strstr(err.message, reason) ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void become_nobody(void)
{
	if (geteuid() == 0 && (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
			       setresuid(65534, 65534, 65534)))
		_exit(2);
}

static void limit_file_size(void)
{
	struct rlimit small = { 8, RLIM_INFINITY };

	signal(SIGXFSZ, SIG_IGN);               /* write() then fails with EFBIG */
	if (setrlimit(RLIMIT_FSIZE, &small))
		_exit(2);
}

static void write_atomic_failures_keep_the_file(void **state)
{
	static const char old[] = "# old\nenabled = 0\n";
	static const char new[] = "# a new text, longer than eight bytes\nenabled = 1\n";
	char dir[64], path[128];

	(void)state;
	make_conf(dir, path, old);
	/* A directory we may not write in (as root: after dropping to nobody). */
	if (geteuid() != 0)
		assert_int_equal(chmod(dir, 0555), 0);
	assert_write_fails(path, new, become_nobody, "cannot create a temporary file beside it");
	assert_int_equal(chmod(dir, 0755), 0);
	assert_file(path, old);
	assert_int_equal(entries(dir), 1);

	/* The write itself fails half way. */
	assert_write_fails(path, new, limit_file_size, "File too large");
	assert_file(path, old);
	assert_int_equal(entries(dir), 1);
	remove_conf(dir, path);

	/* The rename fails: the target is a directory. */
	make_conf(dir, path, old);
	char sub[160];
	snprintf(sub, sizeof(sub), "%s/sub", dir);
	assert_int_equal(mkdir(sub, 0755), 0);
	assert_int_equal(smcr_config_write_atomic(sub, new, &err), -1);
	assert_non_null(strstr(err.message, "cannot replace it"));
	assert_int_equal(entries(dir), 2);
	assert_int_equal(rmdir(sub), 0);
	remove_conf(dir, path);
}

static void read_and_load_errors(void **state)
{
	char dir[64], path[128], message[256];
	char *text;

	(void)state;
	make_conf(dir, path, "enabled = 1\nmax_memory = -1\n");
	assert_int_equal(smcr_config_load(path, &cfg, &err), -1);
	snprintf(message, sizeof(message), "%s:2: max_memory: '-1' is not a whole number of MB",
		 path);
	assert_string_equal(err.message, message);
	assert_int_equal(err.line, 2);

	int fd = open(path, O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "enabled = 1\n\0", 13), 13);
	close(fd);
	assert_int_equal(smcr_config_read_file(path, &text, &err), -1);
	assert_non_null(strstr(err.message, "contains a NUL byte"));
	remove_conf(dir, path);

	assert_int_equal(smcr_config_load(path, &cfg, &err), -1);
	snprintf(message, sizeof(message), "%s: No such file or directory", path);
	assert_string_equal(err.message, message);
}

static void shipped_file(void **state)
{
	char path[4096];
	const char *tail = strstr(__FILE__, "tests/unit/test_config.c");

	(void)state;
	if (!tail || __FILE__[0] != '/')
		skip();
	snprintf(path, sizeof(path), "%.*sconf/smcr.conf", (int)(tail - __FILE__), __FILE__);
	assert_int_equal(smcr_config_load(path, &cfg, &err), 0);
	assert_false(cfg.enabled);              /* off, and nothing allowed: as installed */
	assert_int_equal(cfg.ip_addrs.n, 0);
	assert_int_equal(cfg.ports.n, 0);
	assert_int_equal(cfg.max_memory_mb, 256);
}

static void default_path(void **state)
{
	(void)state;
	setenv("SMCR_CONF", "/tmp/x.conf", 1);
	assert_string_equal(smcr_config_default_path(), "/tmp/x.conf");
	unsetenv("SMCR_CONF");
	assert_string_equal(smcr_config_default_path(), SMCR_CONF_DEFAULT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(defaults),
		cmocka_unit_test(values_accepted),
		cmocka_unit_test(values_refused),
		cmocka_unit_test(list_limits),
		cmocka_unit_test(file_syntax),
		cmocka_unit_test(file_structure_refused),
		cmocka_unit_test(set_specifics),
		cmocka_unit_test(edit_keeps_the_rest),
		cmocka_unit_test(write_atomic_replaces),
		cmocka_unit_test(write_atomic_failures_keep_the_file),
		cmocka_unit_test(read_and_load_errors),
		cmocka_unit_test(shipped_file),
		cmocka_unit_test(default_path),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
