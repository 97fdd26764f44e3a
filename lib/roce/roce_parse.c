/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receive side: validate one frame end to end and fill struct roce_pkt.
 *
 * Every read is preceded by a length check against what is left; the packet
 * ends where the IP length says (Ethernet padding after it is ignored). The
 * first failed check is the drop reason (order documented in roce.h).
 */
#include <netinet/in.h>
#include <string.h>

#include "roce.h"
#include "roce_internal.h"

/* Bounds of the part of the frame being parsed. */
struct cursor {
	const uint8_t *frame;
	size_t l3_off;   /* IP header */
	size_t l4_off;   /* UDP header */
	size_t end;      /* one past the ICRC (IP total length) */
	bool ipv6;
};

static inline uint16_t
rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t
rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t
rd64(const uint8_t *p)
{
	return (uint64_t)rd32(p) << 32 | rd32(p + 4);
}

static void
ipv4_mapped(uint8_t gid[16], const uint8_t addr[4])
{
	memset(gid, 0, 10);
	gid[10] = 0xff;
	gid[11] = 0xff;
	memcpy(gid + 12, addr, 4);
}

/* Ethernet + optional 802.1Q: where the IP header starts and its ethertype. */
static inline enum roce_drop_reason
eth_bounds(const uint8_t *frame, size_t len, size_t *l3_off, uint16_t *ethertype)
{
	return roce_eth_l3(frame, len, l3_off, ethertype) ? ROCE_DROP_NONE : ROCE_DROP_ETH_TRUNCATED;
}

/* The Ethernet fields of the record; eth_bounds() accepted the frame. */
static inline void
eth_fill(const uint8_t *frame, size_t l3_off, struct roce_pkt *pkt)
{
	const struct roce_eth_hdr *eth = (const void *)frame;

	memcpy(pkt->l3.dmac, eth->dst, 6);
	memcpy(pkt->l3.smac, eth->src, 6);
	if (l3_off > sizeof(*eth)) {
		const struct roce_vlan_hdr *vlan = (const void *)(frame + sizeof(*eth));
		pkt->l3.vlan_present = true;
		pkt->l3.vlan_tci = be16toh(vlan->tci);
	}
}

static enum roce_drop_reason
parse_ipv4(size_t len, struct roce_pkt *pkt, struct cursor *c)
{
	const uint8_t *raw = c->frame + c->l3_off;
	const struct roce_ipv4_hdr *ip = (const void *)raw;
	size_t avail = len - c->l3_off;

	if (avail < sizeof(*ip))
		return ROCE_DROP_IP_TRUNCATED;
	if (ip->version_ihl >> 4 != 4)
		return ROCE_DROP_IP_VERSION;
	if ((ip->version_ihl & 0xf) != sizeof(*ip) / 4)
		return ROCE_DROP_IP_IHL;
	if (roce_ipv4_hdr_sum(ip) != 0xffff)
		return ROCE_DROP_IP_CHECKSUM;
	size_t total = be16toh(ip->total_length);
	if (total < sizeof(*ip) || total > avail)
		return ROCE_DROP_IP_LENGTH;
	uint16_t frag = be16toh(ip->frag_off);
	if (frag & ~0x4000u)          /* reserved flag, MF, offset */
		return ROCE_DROP_IP_FRAGMENT;
	if (ip->protocol != IPPROTO_UDP)
		return ROCE_DROP_NOT_UDP;

	pkt->l3.ipv6 = false;
	ipv4_mapped(pkt->l3.sgid, ip->src);
	ipv4_mapped(pkt->l3.dgid, ip->dst);
	pkt->l3.traffic_class = ip->tos;
	pkt->l3.hop_limit = ip->ttl;
	pkt->l3.ip_id = be16toh(ip->id);
	pkt->l3.ipv4_df_clear = !(frag & 0x4000);
	c->ipv6 = false;
	c->l4_off = c->l3_off + sizeof(*ip);
	c->end = c->l3_off + total;
	return ROCE_DROP_NONE;
}

static enum roce_drop_reason
parse_ipv6(size_t len, struct roce_pkt *pkt, struct cursor *c)
{
	const struct roce_ipv6_hdr *ip = (const void *)(c->frame + c->l3_off);
	size_t avail = len - c->l3_off;

	if (avail < sizeof(*ip))
		return ROCE_DROP_IP_TRUNCATED;
	uint32_t vtc = be32toh(ip->vtc_flow);
	if (vtc >> 28 != 6)
		return ROCE_DROP_IP_VERSION;
	size_t payload = be16toh(ip->payload_len);
	if (payload > avail - sizeof(*ip))
		return ROCE_DROP_IP_LENGTH;
	if (ip->next_header != IPPROTO_UDP)    /* extension headers unsupported */
		return ROCE_DROP_NOT_UDP;

	pkt->l3.ipv6 = true;
	memcpy(pkt->l3.sgid, ip->src, 16);
	memcpy(pkt->l3.dgid, ip->dst, 16);
	pkt->l3.traffic_class = (uint8_t)(vtc >> 20);
	pkt->l3.flow_label = vtc & 0xfffff;
	pkt->l3.hop_limit = ip->hop_limit;
	c->ipv6 = true;
	c->l4_off = c->l3_off + sizeof(*ip);
	c->end = c->l4_off + payload;
	return ROCE_DROP_NONE;
}

static enum roce_drop_reason
parse_udp(struct roce_pkt *pkt, const struct cursor *c)
{
	const uint8_t *raw = c->frame + c->l4_off;
	const struct roce_udp_hdr *udp = (const void *)raw;
	size_t avail = c->end - c->l4_off;

	if (avail < sizeof(*udp))
		return ROCE_DROP_UDP_TRUNCATED;
	if (be16toh(udp->dst_port) != ROCE_UDP_PORT)
		return ROCE_DROP_NOT_ROCE_PORT;
	if (be16toh(udp->length) != avail)
		return ROCE_DROP_UDP_LENGTH;
	/* Zero means "no checksum" (RoCEv2 allows it on IPv6 too, A17.4). */
	if (udp->checksum != 0) {
		if (roce_udp_csum_sum(c->frame + c->l3_off, c->ipv6, raw, avail) != 0xffff)
			return ROCE_DROP_UDP_CHECKSUM;
		pkt->l3.udp_csum = true;
	}
	pkt->l3.udp_sport = be16toh(udp->src_port);
	return ROCE_DROP_NONE;
}

static void
parse_bth(const struct roce_bth *bth, struct roce_pkt *pkt)
{
	uint32_t qpn = be32toh(bth->qpn);
	uint32_t apsn = be32toh(bth->apsn);

	pkt->opcode = bth->opcode;
	pkt->se = bth->flags >> 7;
	pkt->migreq = (bth->flags >> 6) & 1;
	pkt->pad = roce_bth_pad(bth);
	pkt->tver = roce_bth_tver(bth);
	pkt->pkey = be16toh(bth->pkey);
	pkt->fecn = qpn >> 31;
	pkt->becn = (qpn >> 30) & 1;
	pkt->resv6a = (qpn >> 24) & 0x3f;
	pkt->dest_qpn = qpn & ROCE_QPN_MASK;
	pkt->ack_req = apsn >> 31;
	pkt->resv7 = (apsn >> 24) & 0x7f;
	pkt->psn = apsn & ROCE_PSN_MASK;
}

/* Extension headers; lengths were checked against desc->hdr_len. */
static void
parse_ext(const uint8_t *bth, const struct roce_opcode_desc *desc, struct roce_pkt *pkt)
{
	const uint8_t *p;

	if (desc->hdrs & ROCE_HDR_DETH) {
		p = bth + desc->offset[__builtin_ctz(ROCE_HDR_DETH)];
		pkt->deth.qkey = rd32(p);
		pkt->deth.resv = p[4];
		pkt->deth.src_qpn = rd32(p + 4) & ROCE_QPN_MASK;
	}
	if (desc->hdrs & ROCE_HDR_FETH) {
		uint32_t w = rd32(bth + desc->offset[__builtin_ctz(ROCE_HDR_FETH)]);
		pkt->feth.placement = (uint8_t)(w & ROCE_FETH_PLT_MASK);
		pkt->feth.selectivity = (uint8_t)((w & ROCE_FETH_SEL_MASK) >> ROCE_FETH_SEL_SHIFT);
		pkt->feth.resv = w & ~(uint32_t)(ROCE_FETH_PLT_MASK | ROCE_FETH_SEL_MASK);
	}
	if (desc->hdrs & ROCE_HDR_RETH) {
		p = bth + desc->offset[__builtin_ctz(ROCE_HDR_RETH)];
		pkt->reth.va = rd64(p);
		pkt->reth.rkey = rd32(p + 8);
		pkt->reth.length = rd32(p + 12);
	}
	if (desc->hdrs & ROCE_HDR_ATMETH) {
		p = bth + desc->offset[__builtin_ctz(ROCE_HDR_ATMETH)];
		pkt->atmeth.va = rd64(p);
		pkt->atmeth.rkey = rd32(p + 8);
		pkt->atmeth.swap_add = rd64(p + 12);
		pkt->atmeth.compare = rd64(p + 20);
	}
	if (desc->hdrs & ROCE_HDR_AETH) {
		p = bth + desc->offset[__builtin_ctz(ROCE_HDR_AETH)];
		pkt->aeth.syndrome = p[0];
		pkt->aeth.msn = rd32(p) & 0xffffff;
	}
	if (desc->hdrs & ROCE_HDR_ATMACK)
		pkt->atmack_orig = rd64(bth + desc->offset[__builtin_ctz(ROCE_HDR_ATMACK)]);
	if (desc->hdrs & ROCE_HDR_IMMDT)
		memcpy(&pkt->imm, bth + desc->offset[__builtin_ctz(ROCE_HDR_IMMDT)], 4);
	if (desc->hdrs & ROCE_HDR_IETH)
		pkt->ieth_rkey = rd32(bth + desc->offset[__builtin_ctz(ROCE_HDR_IETH)]);
	if (desc->hdrs & ROCE_HDR_XRCETH) /* 8 reserved bits, then the XRC SRQ number */
		pkt->xrc_srqn = rd32(bth + desc->offset[__builtin_ctz(ROCE_HDR_XRCETH)]) & ROCE_QPN_MASK;
}

/* Payload and pad rules (IBTA 9.2.1 pad, 9.7.4 / C9-20 lengths per opcode). */
enum roce_drop_reason
roce_check_payload(const struct roce_opcode_desc *desc, size_t with_pad, uint8_t pad)
{
	if (!(desc->kind & ROCE_KIND_PAYLOAD)) {
		if (with_pad != 0)
			return ROCE_DROP_PAYLOAD_LENGTH;
		return pad ? ROCE_DROP_PAD : ROCE_DROP_NONE;
	}
	if (with_pad % 4 != 0 || pad > with_pad)
		return ROCE_DROP_PAD;
	/* ATOMIC WRITE carries exactly the 8 bytes it stores (IBTA 1.5) */
	if ((desc->kind & ROCE_KIND_ATOMIC_WRITE) && (with_pad != 8 || pad))
		return ROCE_DROP_PAYLOAD_LENGTH;
	if (!(desc->kind & ROCE_KIND_LAST)) {
		/* FIRST/MIDDLE carry a whole path MTU: never padded, never empty. */
		if (pad)
			return ROCE_DROP_PAD;
		if (with_pad == 0)
			return ROCE_DROP_PAYLOAD_LENGTH;
	}
	return ROCE_DROP_NONE;
}

/*
 * From the IP header on: @p pkt was zeroed and holds the Ethernet fields,
 * c->l3_off is the IP header.
 */
static enum roce_drop_reason
parse_l3(const uint8_t *frame, size_t len, struct roce_pkt *pkt, struct cursor *c,
	 uint16_t ethertype, bool check_icrc)
{
	enum roce_drop_reason r;

	if (ethertype == ROCE_ETHERTYPE_IPV4)
		r = parse_ipv4(len, pkt, c);
	else if (ethertype == ROCE_ETHERTYPE_IPV6)
		r = parse_ipv6(len, pkt, c);
	else
		r = ROCE_DROP_NOT_IP;
	if (r != ROCE_DROP_NONE)
		return r;
	r = parse_udp(pkt, c);
	if (r != ROCE_DROP_NONE)
		return r;

	size_t bth_off = c->l4_off + sizeof(struct roce_udp_hdr);
	size_t roce_len = c->end - bth_off;    /* BTH .. ICRC */
	if (roce_len < ROCE_BTH_LEN + ROCE_ICRC_LEN)
		return ROCE_DROP_BTH_TRUNCATED;
	const struct roce_bth *bth = (const void *)(frame + bth_off);
	parse_bth(bth, pkt);
	if (pkt->tver != 0)
		return ROCE_DROP_BTH_TVER;
	const struct roce_opcode_desc *desc = roce_opcode_desc(pkt->opcode);
	if (!desc)
		return ROCE_DROP_OPCODE_INVALID;
	if (roce_len < (size_t)desc->hdr_len + ROCE_ICRC_LEN)
		return ROCE_DROP_HDR_TRUNCATED;
	size_t with_pad = roce_len - desc->hdr_len - ROCE_ICRC_LEN;
	r = roce_check_payload(desc, with_pad, pkt->pad);
	if (r != ROCE_DROP_NONE)
		return r;

	pkt->hdrs = desc->hdrs;
	parse_ext(frame + bth_off, desc, pkt);
	pkt->payload = frame + bth_off + desc->hdr_len;
	pkt->payload_len = (uint32_t)(with_pad - pkt->pad);
	const uint8_t *icrc = frame + c->end - ROCE_ICRC_LEN;
	pkt->icrc = (uint32_t)icrc[0] | (uint32_t)icrc[1] << 8 |
		    (uint32_t)icrc[2] << 16 | (uint32_t)icrc[3] << 24;
	pkt->l3_offset = (uint16_t)c->l3_off;
	pkt->bth_offset = (uint16_t)bth_off;
	pkt->frame_len = (uint32_t)c->end;

	if (check_icrc &&
	    roce_icrc_compute(frame + c->l3_off, c->end - ROCE_ICRC_LEN - c->l3_off) != pkt->icrc)
		return ROCE_DROP_ICRC;
	return ROCE_DROP_NONE;
}

static enum roce_drop_reason
parse(const uint8_t *frame, size_t len, struct roce_pkt *pkt, bool check_icrc)
{
	struct cursor c = { .frame = frame };
	enum roce_drop_reason r;
	uint16_t ethertype;

	memset(pkt, 0, sizeof(*pkt));
	r = eth_bounds(frame, len, &c.l3_off, &ethertype);
	if (r != ROCE_DROP_NONE)
		return r;
	eth_fill(frame, c.l3_off, pkt);
	return parse_l3(frame, len, pkt, &c, ethertype, check_icrc);
}

enum roce_drop_reason
roce_parse(const uint8_t *frame, size_t len, struct roce_pkt *pkt)
{
	return parse(frame, len, pkt, true);
}

enum roce_drop_reason
roce_parse_no_icrc(const uint8_t *frame, size_t len, struct roce_pkt *pkt)
{
	return parse(frame, len, pkt, false);
}

#define ICMP_ECHO_REQUEST 8
#define ICMPV6_ECHO_REQUEST 128
#define ICMPV6_ND_FIRST 133     /* router solicitation .. redirect */
#define ICMPV6_ND_LAST 137
#define ICMP_HDR_LEN 8

enum roce_class
roce_classify(const uint8_t *frame, size_t len, unsigned int flags, struct roce_pkt *pkt,
	      enum roce_drop_reason *drop)
{
	struct cursor c = { .frame = frame };
	uint16_t ethertype;
	size_t l4_off;
	uint8_t proto;

	*drop = eth_bounds(frame, len, &c.l3_off, &ethertype);
	if (*drop != ROCE_DROP_NONE)
		return ROCE_CLASS_MALFORMED;
	if (ethertype == ROCE_ETHERTYPE_ARP)
		return ROCE_CLASS_ARP;
	if (ethertype == ROCE_ETHERTYPE_IPV4) {
		const struct roce_ipv4_hdr *ip = (const void *)(frame + c.l3_off);

		if (len - c.l3_off < sizeof(*ip)) {
			*drop = ROCE_DROP_IP_TRUNCATED;
			return ROCE_CLASS_MALFORMED;
		}
		proto = ip->protocol;
		/* IHL as found: a bad one is roce_parse()'s to reject (IP_IHL) */
		l4_off = c.l3_off + (ip->version_ihl & 0xfu) * 4u;
		if (proto == IPPROTO_ICMP) {
			if (l4_off >= c.l3_off + sizeof(*ip) && len >= l4_off + ICMP_HDR_LEN &&
			    frame[l4_off] == ICMP_ECHO_REQUEST)
				return ROCE_CLASS_ECHO;
			return ROCE_CLASS_OTHER;
		}
	} else if (ethertype == ROCE_ETHERTYPE_IPV6) {
		const struct roce_ipv6_hdr *ip = (const void *)(frame + c.l3_off);

		if (len - c.l3_off < sizeof(*ip)) {
			*drop = ROCE_DROP_IP_TRUNCATED;
			return ROCE_CLASS_MALFORMED;
		}
		proto = ip->next_header;
		l4_off = c.l3_off + sizeof(*ip);
		if (proto == IPPROTO_ICMPV6) {
			uint8_t type;

			if (len < l4_off + ICMP_HDR_LEN)
				return ROCE_CLASS_OTHER;
			type = frame[l4_off];
			if (type >= ICMPV6_ND_FIRST && type <= ICMPV6_ND_LAST)
				return ROCE_CLASS_ND;
			return type == ICMPV6_ECHO_REQUEST ? ROCE_CLASS_ECHO : ROCE_CLASS_OTHER;
		}
	} else {
		return ROCE_CLASS_OTHER;
	}
	if (proto != IPPROTO_UDP)
		return ROCE_CLASS_OTHER;
	if (len < l4_off + sizeof(struct roce_udp_hdr)) {
		*drop = ROCE_DROP_UDP_TRUNCATED;
		return ROCE_CLASS_MALFORMED;
	}
	if (be16toh(((const struct roce_udp_hdr *)(frame + l4_off))->dst_port) != ROCE_UDP_PORT)
		return ROCE_CLASS_OTHER;
	memset(pkt, 0, sizeof(*pkt));
	eth_fill(frame, c.l3_off, pkt);
	*drop = parse_l3(frame, len, pkt, &c, ethertype, !(flags & ROCE_CLASSIFY_NO_ICRC));
	return ROCE_CLASS_ROCE;
}

const char *
roce_class_name(enum roce_class cls)
{
	static const char *const name[] = {
		[ROCE_CLASS_MALFORMED] = "malformed",
		[ROCE_CLASS_ROCE] = "roce",
		[ROCE_CLASS_ARP] = "arp",
		[ROCE_CLASS_ND] = "nd",
		[ROCE_CLASS_ECHO] = "echo",
		[ROCE_CLASS_OTHER] = "other",
	};

	return (unsigned int)cls < sizeof(name) / sizeof(name[0]) ? name[cls] : "?";
}
