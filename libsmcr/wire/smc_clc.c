/*
 * smc_clc.c - CLC message layouts, encoders and the strict decoder (smc_clc.h).
 *
 * Each layout is written once per direction, field by field in wire order,
 * so that the encoder and the decoder of a message read like its table in
 * docs/PROTOCOL.md.  The decoder first proves that the message's length is
 * the one its header and contents imply, and only then reads fields: every
 * read below is inside the buffer because of the checks before it.
 */
#include <assert.h>
#include <string.h>

#include "smc_clc.h"

/* "SMCR" and "SMCD" in EBCDIC; the trailer repeats the header's. */
static const uint8_t smcr_eyecatcher[4] = { 0xe2, 0xd4, 0xc3, 0xd9 };
static const uint8_t smcd_eyecatcher[4] = { 0xe2, 0xd4, 0xc3, 0xc4 };
#define EYECATCHER_LEN 4

/* The header's last byte: version:4, flag:1, reserved:1, smc type:2. */
#define HDR_VERSION_SHIFT 4
#define HDR_FLAG          0x08          /* first contact; in a Decline, out of sync */
#define HDR_SMC_TYPE_MASK 0x03

#define LOCAL_LEN         30
#define PROPOSAL_BASE_LEN (SMC_CLC_HDR_LEN + LOCAL_LEN + 2)     /* up to iparea_offset */
#define SMCD_AREA_LEN     40            /* ISM GID, then reserved */
#define PREFIX_AREA_LEN   8             /* subnet, prefix length, reserved, IPv6 count */
#define IPV6_PREFIX_LEN   17
#define SMCD_ACC_RESERVED 12            /* after link_id: SMC-D v2 fields */

static_assert(SMC_CLC_PROPOSAL_MAX_LEN == PROPOSAL_BASE_LEN + SMCD_AREA_LEN + PREFIX_AREA_LEN +
		      SMC_CLC_MAX_V6_PREFIX * IPV6_PREFIX_LEN + SMC_CLC_TRAILER_LEN,
	      "the longest v1 Proposal");

static bool smcr_offered(enum smc_type type)
{
	return type == SMC_TYPE_R || type == SMC_TYPE_B;
}

static bool smcd_offered(enum smc_type type)
{
	return type == SMC_TYPE_D || type == SMC_TYPE_B;
}

static size_t proposal_v1_len(size_t iparea_offset, size_t ipv6_prefix_count)
{
	return PROPOSAL_BASE_LEN + iparea_offset + PREFIX_AREA_LEN +
	       ipv6_prefix_count * IPV6_PREFIX_LEN + SMC_CLC_TRAILER_LEN;
}

/* The shortest message of a type, of any version: rejected before reading. */
static size_t min_len(uint8_t type)
{
	switch (type) {
	case SMC_CLC_PROPOSAL:
		/* a later version's Proposal offering only that version has no IP area */
		return PROPOSAL_BASE_LEN + SMC_CLC_TRAILER_LEN;
	case SMC_CLC_ACCEPT:
	case SMC_CLC_CONFIRM:
		return SMCD_CLC_ACCEPT_CONFIRM_LEN;
	case SMC_CLC_DECLINE:
		return SMC_CLC_DECLINE_LEN;
	default:
		return 0;
	}
}

/* ---- writing, in wire order ---- */

static uint8_t *put_bytes(uint8_t *p, const void *src, size_t n)
{
	memcpy(p, src, n);
	return p + n;
}

static uint8_t *put_zeros(uint8_t *p, size_t n)
{
	memset(p, 0, n);
	return p + n;
}

static uint8_t *put_u8(uint8_t *p, uint8_t v)
{
	*p = v;
	return p + 1;
}

static uint8_t *put_be(uint8_t *p, uint64_t v, size_t n)
{
	for (size_t i = n; i-- > 0; v >>= 8)
		p[i] = (uint8_t)v;
	return p + n;
}

static uint8_t *put_local(uint8_t *p, const struct smc_clc_local *lcl)
{
	p = put_bytes(p, lcl->peer_id, sizeof(lcl->peer_id));
	p = put_bytes(p, lcl->gid, sizeof(lcl->gid));
	return put_bytes(p, lcl->mac, sizeof(lcl->mac));
}

/* The header of a len-byte message and its trailer; returns where the body starts. */
static uint8_t *put_frame(uint8_t *buf, size_t len, const uint8_t eyecatcher[EYECATCHER_LEN],
			  enum smc_clc_type type, bool flag, enum smc_type smc_type)
{
	uint8_t *p = put_bytes(buf, eyecatcher, EYECATCHER_LEN);

	p = put_u8(p, (uint8_t)type);
	p = put_be(p, len, 2);
	p = put_u8(p, (uint8_t)(SMC_CLC_V1 << HDR_VERSION_SHIFT | (flag ? HDR_FLAG : 0) |
				(unsigned int)smc_type));
	put_bytes(buf + len - SMC_CLC_TRAILER_LEN, eyecatcher, EYECATCHER_LEN);
	return p;
}

int smc_clc_encode_proposal(uint8_t *buf, size_t cap, const struct smc_clc_proposal *prop)
{
	size_t iparea_offset = smcd_offered(prop->smc_type) ? SMCD_AREA_LEN : 0;
	size_t len = proposal_v1_len(iparea_offset, prop->ipv6_prefix_count);
	uint8_t *p;

	if ((!smcr_offered(prop->smc_type) && !smcd_offered(prop->smc_type)) ||
	    prop->ipv6_prefix_count > SMC_CLC_MAX_V6_PREFIX || len > cap)
		return -1;
	/* Linux frames every Proposal with "SMCR", whatever it offers */
	p = put_frame(buf, len, smcr_eyecatcher, SMC_CLC_PROPOSAL, false, prop->smc_type);
	p = put_local(p, &prop->lcl);
	p = put_be(p, iparea_offset, 2);
	if (iparea_offset) {
		p = put_be(p, prop->ism_gid, 8);
		p = put_zeros(p, SMCD_AREA_LEN - 8);
	}
	p = put_be(p, prop->outgoing_subnet, 4);
	p = put_u8(p, prop->prefix_len);
	p = put_zeros(p, 2);
	p = put_u8(p, prop->ipv6_prefix_count);
	for (unsigned int i = 0; i < prop->ipv6_prefix_count; i++) {
		p = put_bytes(p, prop->ipv6_prefix[i].prefix, sizeof(prop->ipv6_prefix[i].prefix));
		p = put_u8(p, prop->ipv6_prefix[i].prefix_len);
	}
	return (int)len;
}

static bool smcr_fits(const struct smcr_clc_accept_confirm *r)
{
	return r->qpn <= 0xffffff && r->psn <= 0xffffff && r->rmbe_size <= 0xf &&
	       r->qp_mtu <= 0xf;
}

static int encode_smcr_accept_confirm(uint8_t *buf, size_t cap, enum smc_clc_type type,
				      bool first_contact, const struct smcr_clc_accept_confirm *r)
{
	uint8_t *p;

	if (!smcr_fits(r) || cap < SMCR_CLC_ACCEPT_CONFIRM_LEN)
		return -1;
	p = put_frame(buf, SMCR_CLC_ACCEPT_CONFIRM_LEN, smcr_eyecatcher, type, first_contact,
		      SMC_TYPE_R);
	p = put_local(p, &r->lcl);
	p = put_be(p, r->qpn, 3);
	p = put_be(p, r->rmb_rkey, 4);
	p = put_u8(p, r->rmbe_idx);
	p = put_be(p, r->rmbe_alert_token, 4);
	p = put_u8(p, (uint8_t)(r->rmbe_size << 4 | r->qp_mtu));
	p = put_zeros(p, 1);
	p = put_be(p, r->rmb_dma_addr, 8);
	p = put_zeros(p, 1);
	put_be(p, r->psn, 3);
	return SMCR_CLC_ACCEPT_CONFIRM_LEN;
}

static int encode_smcd_accept_confirm(uint8_t *buf, size_t cap, enum smc_clc_type type,
				      bool first_contact, const struct smcd_clc_accept_confirm *d)
{
	uint8_t *p;

	if (d->dmbe_size > 0xf || cap < SMCD_CLC_ACCEPT_CONFIRM_LEN)
		return -1;
	p = put_frame(buf, SMCD_CLC_ACCEPT_CONFIRM_LEN, smcd_eyecatcher, type, first_contact,
		      SMC_TYPE_D);
	p = put_be(p, d->gid, 8);
	p = put_be(p, d->token, 8);
	p = put_u8(p, d->dmbe_idx);
	p = put_u8(p, (uint8_t)(d->dmbe_size << 4));
	p = put_zeros(p, 2);
	p = put_be(p, d->link_id, 4);
	put_zeros(p, SMCD_ACC_RESERVED);
	return SMCD_CLC_ACCEPT_CONFIRM_LEN;
}

static int encode_accept_confirm(uint8_t *buf, size_t cap, enum smc_clc_type type,
				 const struct smc_clc_accept_confirm *ac)
{
	switch (ac->smc_type) {
	case SMC_TYPE_R:
		return encode_smcr_accept_confirm(buf, cap, type, ac->first_contact, &ac->r);
	case SMC_TYPE_D:
		return encode_smcd_accept_confirm(buf, cap, type, ac->first_contact, &ac->d);
	default:
		return -1;
	}
}

int smc_clc_encode_accept(uint8_t *buf, size_t cap, const struct smc_clc_accept_confirm *acc)
{
	return encode_accept_confirm(buf, cap, SMC_CLC_ACCEPT, acc);
}

int smc_clc_encode_confirm(uint8_t *buf, size_t cap, const struct smc_clc_accept_confirm *conf)
{
	return encode_accept_confirm(buf, cap, SMC_CLC_CONFIRM, conf);
}

int smc_clc_encode_decline(uint8_t *buf, size_t cap, const struct smc_clc_decline *decl)
{
	uint8_t *p;

	if (decl->os_type > 0xf || cap < SMC_CLC_DECLINE_LEN)
		return -1;
	/* "SMCR" whatever was declined, as Linux does */
	p = put_frame(buf, SMC_CLC_DECLINE_LEN, smcr_eyecatcher, SMC_CLC_DECLINE,
		      decl->out_of_sync, SMC_TYPE_R);
	p = put_bytes(p, decl->peer_id, sizeof(decl->peer_id));
	p = put_be(p, decl->peer_diagnosis, 4);
	p = put_u8(p, (uint8_t)(decl->os_type << 4));
	put_zeros(p, 3);
	return SMC_CLC_DECLINE_LEN;
}

/* ---- reading, in wire order, only once the length is proven ---- */

static void get_bytes(const uint8_t **p, void *dst, size_t n)
{
	memcpy(dst, *p, n);
	*p += n;
}

static uint8_t get_u8(const uint8_t **p)
{
	return *(*p)++;
}

static uint64_t get_be(const uint8_t **p, size_t n)
{
	uint64_t v = 0;

	for (size_t i = 0; i < n; i++)
		v = v << 8 | (*p)[i];
	*p += n;
	return v;
}

static void get_local(const uint8_t **p, struct smc_clc_local *lcl)
{
	get_bytes(p, lcl->peer_id, sizeof(lcl->peer_id));
	get_bytes(p, lcl->gid, sizeof(lcl->gid));
	get_bytes(p, lcl->mac, sizeof(lcl->mac));
}

static const uint8_t *known_eyecatcher(const uint8_t *p)
{
	if (!memcmp(p, smcr_eyecatcher, EYECATCHER_LEN))
		return smcr_eyecatcher;
	if (!memcmp(p, smcd_eyecatcher, EYECATCHER_LEN))
		return smcd_eyecatcher;
	return NULL;
}

enum smcr_reason smc_clc_frame_length(const uint8_t hdr[SMC_CLC_HDR_LEN], size_t *total)
{
	const uint8_t *p = hdr + EYECATCHER_LEN;
	uint8_t type = get_u8(&p);
	size_t len = (size_t)get_be(&p, 2);
	size_t min = min_len(type);

	if (!known_eyecatcher(hdr) || !min || len < min || len > SMC_CLC_MAX_LEN)
		return SMCR_REASON_SYNCERR;
	*total = len;
	return SMCR_REASON_NONE;
}

/*
 * A v1 Proposal is exactly as long as its IP area says; a later version's
 * appends its extensions after it (len may be longer).  The SMC-D area, when
 * D is offered, lies between iparea_offset and the IP area, and is exactly
 * the 40 bytes Linux sends; with R only, the bytes skipped are reserved.
 */
static enum smcr_reason decode_proposal(const uint8_t *buf, size_t len, uint8_t version,
					enum smc_type smc_type, struct smc_clc_proposal *prop)
{
	const uint8_t *p = buf + SMC_CLC_HDR_LEN;
	size_t iparea_offset, ip_area, count, v1_len;

	prop->smc_type = smc_type;
	get_local(&p, &prop->lcl);
	iparea_offset = (size_t)get_be(&p, 2);
	if (smc_type == SMC_TYPE_N)     /* a later version offering only itself */
		return version > SMC_CLC_V1 ? SMCR_REASON_NONE : SMCR_REASON_SYNCERR;
	if (iparea_offset > SMCD_AREA_LEN ||
	    (smcd_offered(smc_type) && iparea_offset != SMCD_AREA_LEN))
		return SMCR_REASON_SYNCERR;
	ip_area = PROPOSAL_BASE_LEN + iparea_offset;
	if (proposal_v1_len(iparea_offset, 0) > len)
		return SMCR_REASON_SYNCERR;
	count = buf[ip_area + PREFIX_AREA_LEN - 1];
	if (count > SMC_CLC_MAX_V6_PREFIX)
		return SMCR_REASON_SYNCERR;
	v1_len = proposal_v1_len(iparea_offset, count);
	if (version == SMC_CLC_V1 ? len != v1_len : len < v1_len)
		return SMCR_REASON_SYNCERR;

	if (smcd_offered(smc_type))
		prop->ism_gid = get_be(&p, 8);
	p = buf + ip_area;
	prop->outgoing_subnet = (uint32_t)get_be(&p, 4);
	prop->prefix_len = get_u8(&p);
	p += 2;
	prop->ipv6_prefix_count = get_u8(&p);
	for (size_t i = 0; i < count; i++) {
		get_bytes(&p, prop->ipv6_prefix[i].prefix, sizeof(prop->ipv6_prefix[i].prefix));
		prop->ipv6_prefix[i].prefix_len = get_u8(&p);
	}
	return SMCR_REASON_NONE;
}

static void decode_smcr_accept_confirm(const uint8_t *p, struct smcr_clc_accept_confirm *r)
{
	uint8_t sizes;

	get_local(&p, &r->lcl);
	r->qpn = (uint32_t)get_be(&p, 3);
	r->rmb_rkey = (uint32_t)get_be(&p, 4);
	r->rmbe_idx = get_u8(&p);
	r->rmbe_alert_token = (uint32_t)get_be(&p, 4);
	sizes = get_u8(&p);
	r->rmbe_size = sizes >> 4;
	r->qp_mtu = sizes & 0xf;
	p += 1;
	r->rmb_dma_addr = get_be(&p, 8);
	p += 1;
	r->psn = (uint32_t)get_be(&p, 3);
}

static void decode_smcd_accept_confirm(const uint8_t *p, struct smcd_clc_accept_confirm *d)
{
	d->gid = get_be(&p, 8);
	d->token = get_be(&p, 8);
	d->dmbe_idx = get_u8(&p);
	d->dmbe_size = get_u8(&p) >> 4;
	p += 2;
	d->link_id = (uint32_t)get_be(&p, 4);
}

/* SMC-R in "SMCR" of 68 bytes, SMC-D in "SMCD" of 48: nothing else. */
static enum smcr_reason decode_accept_confirm(const uint8_t *buf, size_t len, bool first_contact,
					      enum smc_type smc_type,
					      struct smc_clc_accept_confirm *ac)
{
	const uint8_t *eyecatcher = known_eyecatcher(buf);

	ac->smc_type = smc_type;
	ac->first_contact = first_contact;
	if (smc_type == SMC_TYPE_R && eyecatcher == smcr_eyecatcher &&
	    len == SMCR_CLC_ACCEPT_CONFIRM_LEN)
		decode_smcr_accept_confirm(buf + SMC_CLC_HDR_LEN, &ac->r);
	else if (smc_type == SMC_TYPE_D && eyecatcher == smcd_eyecatcher &&
		 len == SMCD_CLC_ACCEPT_CONFIRM_LEN)
		decode_smcd_accept_confirm(buf + SMC_CLC_HDR_LEN, &ac->d);
	else
		return SMCR_REASON_SYNCERR;
	return SMCR_REASON_NONE;
}

/* A later version's Decline appends diagnosis codes before its trailer. */
static enum smcr_reason decode_decline(const uint8_t *buf, size_t len, uint8_t version,
				       bool out_of_sync, struct smc_clc_decline *decl)
{
	const uint8_t *p = buf + SMC_CLC_HDR_LEN;

	if (version == SMC_CLC_V1 && len != SMC_CLC_DECLINE_LEN)
		return SMCR_REASON_SYNCERR;
	get_bytes(&p, decl->peer_id, sizeof(decl->peer_id));
	decl->peer_diagnosis = (uint32_t)get_be(&p, 4);
	decl->os_type = get_u8(&p) >> 4;
	decl->out_of_sync = out_of_sync;
	return SMCR_REASON_NONE;
}

enum smcr_reason smc_clc_decode(const uint8_t *buf, size_t len, struct smc_clc_msg *out)
{
	enum smc_type smc_type;
	size_t total;
	uint8_t flags;
	bool flag;

	memset(out, 0, sizeof(*out));
	if (len < SMC_CLC_HDR_LEN || smc_clc_frame_length(buf, &total) || total != len ||
	    memcmp(buf + len - SMC_CLC_TRAILER_LEN, buf, EYECATCHER_LEN))
		return SMCR_REASON_SYNCERR;
	flags = buf[SMC_CLC_HDR_LEN - 1];
	out->hdr.type = buf[EYECATCHER_LEN];
	out->hdr.version = flags >> HDR_VERSION_SHIFT;
	flag = flags & HDR_FLAG;
	smc_type = (enum smc_type)(flags & HDR_SMC_TYPE_MASK);
	if (out->hdr.version < SMC_CLC_V1)
		return SMCR_REASON_SYNCERR;

	switch (out->hdr.type) {
	case SMC_CLC_PROPOSAL:
		return decode_proposal(buf, len, out->hdr.version, smc_type, &out->proposal);
	case SMC_CLC_ACCEPT:
	case SMC_CLC_CONFIRM:
		if (out->hdr.version != SMC_CLC_V1)
			return SMCR_REASON_VERSMISMAT;
		return decode_accept_confirm(buf, len, flag, smc_type, &out->accept_confirm);
	default:        /* SMC_CLC_DECLINE: smc_clc_frame_length() admits no other */
		return decode_decline(buf, len, out->hdr.version, flag, &out->decline);
	}
}
