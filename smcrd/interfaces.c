/*
 * interfaces.c - local addresses through a libnl cache manager: the caches
 * of links and addresses stay current from rtnetlink notifications, read
 * when smcrd's loop sees the manager's descriptor readable.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <netlink/cache.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>

#include "interfaces.h"
#include "smcrd_log.h"

struct smcrd_interfaces {
	struct nl_cache_mngr *mngr;
	struct nl_cache *links, *addrs;
	bool present[SMCR_CONFIG_MAX_ADDRS];    /* entry i covered a local address at the last check */
};

static bool prefix_covers(const uint8_t *net, const uint8_t *addr, unsigned int bits)
{
	unsigned int whole = bits / 8, rest = bits % 8;

	if (memcmp(net, addr, whole) != 0)
		return false;
	return rest == 0 || ((net[whole] ^ addr[whole]) & (0xff00 >> rest) & 0xff) == 0;
}

/* The interface index of the first local address entry covers; 0 if none. */
static int interface_of(const struct smcrd_interfaces *ifs, const struct smcr_config_addr *entry)
{
	for (struct nl_object *o = nl_cache_get_first(ifs->addrs); o; o = nl_cache_get_next(o)) {
		struct rtnl_addr *a = (struct rtnl_addr *)o;
		struct nl_addr *local = rtnl_addr_get_local(a);
		if (!local || nl_addr_get_family(local) != entry->family)
			continue;
		if (nl_addr_get_len(local) >= (entry->family == AF_INET ? 4u : 16u) &&
		    prefix_covers(entry->bytes, nl_addr_get_binary_addr(local), entry->prefix))
			return rtnl_addr_get_ifindex(a);
	}
	return 0;
}

static const char *entry_str(const struct smcr_config_addr *entry, char *buf, size_t size)
{
	char text[INET6_ADDRSTRLEN];

	inet_ntop(entry->family, entry->bytes, text, sizeof(text));
	if (entry->prefix == (entry->family == AF_INET ? 32 : 128))
		snprintf(buf, size, "%s", text);
	else
		snprintf(buf, size, "%s/%u", text, entry->prefix);
	return buf;
}

void smcrd_interfaces_check(struct smcrd_interfaces *ifs, const struct smcr_config *cfg,
			    bool new_config)
{
	char name[64];

	for (size_t i = 0; i < cfg->ip_addrs.n; i++) {
		const struct smcr_config_addr *entry = &cfg->ip_addrs.addr[i];
		bool present = interface_of(ifs, entry) != 0;
		if (!present && (new_config || ifs->present[i]))
			smcrd_log(LOG_WARNING, "ip_addr_list entry %s is on no interface",
				  entry_str(entry, name, sizeof(name)));
		else if (present && !new_config && !ifs->present[i])
			smcrd_log(LOG_NOTICE, "ip_addr_list entry %s is on an interface again",
				  entry_str(entry, name, sizeof(name)));
		ifs->present[i] = present;
	}
}

void smcrd_interfaces_describe(const struct smcrd_interfaces *ifs, const struct smcr_config *cfg,
			       char *buf, size_t size)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < cfg->ip_addrs.n && used < size; i++) {
		char name[64], ifname[IFNAMSIZ] = "-";
		int ifindex = interface_of(ifs, &cfg->ip_addrs.addr[i]);
		if (ifindex && !rtnl_link_i2name(ifs->links, ifindex, ifname, sizeof(ifname)))
			snprintf(ifname, sizeof(ifname), "#%d", ifindex);
		int n = snprintf(buf + used, size - used, "%s%s %s", i ? ", " : "",
				 entry_str(&cfg->ip_addrs.addr[i], name, sizeof(name)), ifname);
		used += n > 0 ? (size_t)n : 0;
	}
}

struct smcrd_interfaces *smcrd_interfaces_open(char *err, size_t errlen)
{
	struct smcrd_interfaces *ifs = calloc(1, sizeof(*ifs));
	int rc = -NLE_NOMEM;

	if (ifs && (rc = nl_cache_mngr_alloc(NULL, NETLINK_ROUTE, NL_AUTO_PROVIDE, &ifs->mngr)) == 0 &&
	    (rc = nl_cache_mngr_add(ifs->mngr, "route/link", NULL, NULL, &ifs->links)) == 0 &&
	    (rc = nl_cache_mngr_add(ifs->mngr, "route/addr", NULL, NULL, &ifs->addrs)) == 0)
		return ifs;
	snprintf(err, errlen, "following local addresses (rtnetlink): %s", nl_geterror(rc));
	smcrd_interfaces_close(ifs);
	return NULL;
}

void smcrd_interfaces_close(struct smcrd_interfaces *ifs)
{
	if (!ifs)
		return;
	if (ifs->mngr)
		nl_cache_mngr_free(ifs->mngr);      /* frees its caches too */
	free(ifs);
}

int smcrd_interfaces_fd(const struct smcrd_interfaces *ifs)
{
	return nl_cache_mngr_get_fd(ifs->mngr);
}

void smcrd_interfaces_update(struct smcrd_interfaces *ifs, const struct smcr_config *cfg)
{
	int rc = nl_cache_mngr_data_ready(ifs->mngr);

	if (rc < 0)
		smcrd_log(LOG_WARNING, "reading address changes: %s", nl_geterror(rc));
	smcrd_interfaces_check(ifs, cfg, false);
}
