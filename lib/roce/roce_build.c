/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Transmit side: write a frame from struct roce_pkt. The inverse of
 * roce_parse(): every field the parser records (reserved bits included) is
 * written back, so parse -> build reproduces a captured frame exactly.
 * The one frame builder of the project: the transport engine's frames
 * (payload gathered from registered memory) and every other frame (CNPs,
 * QP1 MADs, tests) are written by roce_build_gather().
 */
#include <string.h>

#include "roce.h"
#include "roce_internal.h"

static inline void
wr16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void
wr32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline void
wr64(uint8_t *p, uint64_t v)
{
	wr32(p, (uint32_t)(v >> 32));
	wr32(p + 4, (uint32_t)v);
}

static size_t
l2_len(const struct roce_pkt *pkt)
{
	return sizeof(struct roce_eth_hdr) +
	       (pkt->l3.vlan_present ? sizeof(struct roce_vlan_hdr) : 0);
}

static size_t
ip_len(const struct roce_pkt *pkt)
{
	return pkt->l3.ipv6 ? sizeof(struct roce_ipv6_hdr) : sizeof(struct roce_ipv4_hdr);
}

size_t
roce_headers_len(const struct roce_pkt *pkt)
{
	const struct roce_opcode_desc *desc = roce_opcode_desc(pkt->opcode);

	if (!desc)
		return 0;
	return l2_len(pkt) + ip_len(pkt) + sizeof(struct roce_udp_hdr) + desc->hdr_len;
}

static uint8_t *
write_eth(const struct roce_pkt *pkt, uint8_t *p)
{
	memcpy(p, pkt->l3.dmac, 6);
	memcpy(p + 6, pkt->l3.smac, 6);
	p += 12;
	if (pkt->l3.vlan_present) {
		wr16(p, ROCE_ETHERTYPE_VLAN);
		wr16(p + 2, pkt->l3.vlan_tci);
		p += 4;
	}
	wr16(p, pkt->l3.ipv6 ? ROCE_ETHERTYPE_IPV6 : ROCE_ETHERTYPE_IPV4);
	return p + 2;
}

static uint8_t *
write_ip(const struct roce_pkt *pkt, uint8_t *p, size_t udp_len)
{
	const struct roce_l3 *l3 = &pkt->l3;

	if (l3->ipv6) {
		struct roce_ipv6_hdr *ip = (void *)p;
		ip->vtc_flow = htobe32(6u << 28 | (uint32_t)l3->traffic_class << 20 |
				       (l3->flow_label & 0xfffff));
		ip->payload_len = htobe16((uint16_t)udp_len);
		ip->next_header = 17;
		ip->hop_limit = l3->hop_limit;
		memcpy(ip->src, l3->sgid, 16);
		memcpy(ip->dst, l3->dgid, 16);
		return p + sizeof(*ip);
	}
	struct roce_ipv4_hdr *ip = (void *)p;
	uint16_t total = (uint16_t)(sizeof(*ip) + udp_len), frag = l3->ipv4_df_clear ? 0 : 0x4000;
	uint32_t src, dst;

	memcpy(&src, l3->sgid + 12, 4);
	memcpy(&dst, l3->dgid + 12, 4);
	src = be32toh(src);
	dst = be32toh(dst);
	ip->version_ihl = 0x45;
	ip->tos = l3->traffic_class;
	ip->total_length = htobe16(total);
	ip->id = htobe16(l3->ip_id);
	ip->frag_off = htobe16(frag);
	ip->ttl = l3->hop_limit;
	ip->protocol = 17;
	memcpy(ip->src, l3->sgid + 12, 4);
	memcpy(ip->dst, l3->dgid + 12, 4);
	/* RFC 1071 over the header's 16-bit words, summed from the values: a
	 * read-back of the bytes just stored stalls on store forwarding */
	uint32_t sum = (0x45u << 8 | l3->traffic_class) + total + l3->ip_id + frag +
		       ((uint32_t)l3->hop_limit << 8 | 17u) + (src >> 16) + (src & 0xffff) +
		       (dst >> 16) + (dst & 0xffff);
	ip->checksum = htobe16((uint16_t)~roce_csum_fold(sum));
	return p + sizeof(*ip);
}

static void
write_bth(const struct roce_pkt *pkt, uint8_t *p)
{
	p[0] = pkt->opcode;
	p[1] = (uint8_t)(pkt->se << 7 | pkt->migreq << 6 | (pkt->pad & 3) << 4 | (pkt->tver & 0xf));
	wr16(p + 2, pkt->pkey);
	wr32(p + 4, (uint32_t)pkt->fecn << 31 | (uint32_t)pkt->becn << 30 |
		    (uint32_t)(pkt->resv6a & 0x3f) << 24 | (pkt->dest_qpn & ROCE_QPN_MASK));
	wr32(p + 8, (uint32_t)pkt->ack_req << 31 | (uint32_t)(pkt->resv7 & 0x7f) << 24 |
		    (pkt->psn & ROCE_PSN_MASK));
}

static void
write_ext(const struct roce_pkt *pkt, const struct roce_opcode_desc *desc, uint8_t *bth)
{
	uint8_t *p;

	if (desc->hdrs & ROCE_HDR_RDETH)
		memset(bth + desc->offset[__builtin_ctz(ROCE_HDR_RDETH)], 0, 4);
	if (desc->hdrs & ROCE_HDR_DETH) {
		p = bth + desc->offset[__builtin_ctz(ROCE_HDR_DETH)];
		wr32(p, pkt->deth.qkey);
		wr32(p + 4, (uint32_t)pkt->deth.resv << 24 | (pkt->deth.src_qpn & ROCE_QPN_MASK));
	}
	if (desc->hdrs & ROCE_HDR_FETH)
		wr32(bth + desc->offset[__builtin_ctz(ROCE_HDR_FETH)],
		     (pkt->feth.resv & ~(uint32_t)(ROCE_FETH_PLT_MASK | ROCE_FETH_SEL_MASK)) |
			     ((uint32_t)pkt->feth.selectivity << ROCE_FETH_SEL_SHIFT &
			      ROCE_FETH_SEL_MASK) |
			     (pkt->feth.placement & ROCE_FETH_PLT_MASK));
	if (desc->hdrs & ROCE_HDR_RETH) {
		p = bth + desc->offset[__builtin_ctz(ROCE_HDR_RETH)];
		wr64(p, pkt->reth.va);
		wr32(p + 8, pkt->reth.rkey);
		wr32(p + 12, pkt->reth.length);
	}
	if (desc->hdrs & ROCE_HDR_ATMETH) {
		p = bth + desc->offset[__builtin_ctz(ROCE_HDR_ATMETH)];
		wr64(p, pkt->atmeth.va);
		wr32(p + 8, pkt->atmeth.rkey);
		wr64(p + 12, pkt->atmeth.swap_add);
		wr64(p + 20, pkt->atmeth.compare);
	}
	if (desc->hdrs & ROCE_HDR_AETH)
		wr32(bth + desc->offset[__builtin_ctz(ROCE_HDR_AETH)],
		     (uint32_t)pkt->aeth.syndrome << 24 | (pkt->aeth.msn & 0xffffff));
	if (desc->hdrs & ROCE_HDR_ATMACK)
		wr64(bth + desc->offset[__builtin_ctz(ROCE_HDR_ATMACK)], pkt->atmack_orig);
	if (desc->hdrs & ROCE_HDR_IMMDT)
		memcpy(bth + desc->offset[__builtin_ctz(ROCE_HDR_IMMDT)], &pkt->imm, 4);
	if (desc->hdrs & ROCE_HDR_IETH)
		wr32(bth + desc->offset[__builtin_ctz(ROCE_HDR_IETH)], pkt->ieth_rkey);
	if (desc->hdrs & ROCE_HDR_XRCETH)
		wr32(bth + desc->offset[__builtin_ctz(ROCE_HDR_XRCETH)], pkt->xrc_srqn & ROCE_QPN_MASK);
	if (desc->hdrs & ROCE_HDR_CNP)
		memset(bth + desc->offset[__builtin_ctz(ROCE_HDR_CNP)], 0, 16);
}

/* UDP length of @p pkt, or 0 if it does not fit the IP length fields. */
static size_t
udp_len_of(const struct roce_pkt *pkt, const struct roce_opcode_desc *desc)
{
	size_t len = sizeof(struct roce_udp_hdr) + desc->hdr_len + (size_t)pkt->payload_len +
		     (pkt->pad & 3) + ROCE_ICRC_LEN;
	size_t limit = pkt->l3.ipv6 ? 0xffff : 0xffff - sizeof(struct roce_ipv4_hdr);

	return len <= limit ? len : 0;
}

size_t
roce_build_headers(const struct roce_pkt *pkt, uint8_t *buf, size_t cap)
{
	const struct roce_opcode_desc *desc = roce_opcode_desc(pkt->opcode);
	size_t hlen = roce_headers_len(pkt);

	if (!desc || cap < hlen)
		return 0;
	size_t udp_len = udp_len_of(pkt, desc);
	if (udp_len == 0)
		return 0;

	uint8_t *p = write_eth(pkt, buf);
	p = write_ip(pkt, p, udp_len);
	struct roce_udp_hdr *udp = (void *)p;
	udp->src_port = htobe16(pkt->l3.udp_sport);
	udp->dst_port = htobe16(ROCE_UDP_PORT);
	udp->length = htobe16((uint16_t)udp_len);
	udp->checksum = 0;
	p += sizeof(*udp);
	write_bth(pkt, p);
	write_ext(pkt, desc, p);
	return hlen;
}

/* @return whether the @p nseg segments hold exactly @p len bytes, none at NULL */
static inline bool
segs_hold(const struct roce_seg *seg, uint32_t nseg, size_t len)
{
	size_t sum = 0;

	for (uint32_t i = 0; i < nseg; i++) {
		if (seg[i].len && !seg[i].addr)
			return false;
		sum += seg[i].len;
	}
	return sum == len;
}

/* The optional UDP checksum of the @p total byte frame @p buf (off the hot
 * path: RoCEv2 senders leave it 0). It covers the ICRC, so it comes last;
 * the ICRC masks this field. */
static __attribute__((noinline)) void
write_udp_csum(const struct roce_pkt *pkt, uint8_t *buf, size_t total)
{
	size_t l3_off = l2_len(pkt);
	size_t udp_off = l3_off + ip_len(pkt);
	uint16_t sum = roce_udp_csum_sum(buf + l3_off, pkt->l3.ipv6, buf + udp_off, total - udp_off);
	uint16_t csum = (uint16_t)~sum;

	wr16(buf + udp_off + offsetof(struct roce_udp_hdr, checksum), csum ? csum : 0xffff);
}

/* roce_build_gather(); @p icrc false: roce_build_gather_local() */
static inline size_t
build_gather(const struct roce_pkt *pkt, const struct roce_seg *seg, uint32_t nseg, uint8_t *buf,
	     size_t cap, bool icrc)
{
	size_t hlen = roce_headers_len(pkt);
	size_t pad = pkt->pad & 3;
	size_t total = hlen + (size_t)pkt->payload_len + pad + ROCE_ICRC_LEN;

	/* segments checked first: a longer list would write past the frame */
	if (hlen == 0 || cap < total || !segs_hold(seg, nseg, pkt->payload_len) ||
	    roce_build_headers(pkt, buf, cap) != hlen)
		return 0;
	/* Annex A17.3.3: the ICRC covers the headers from IP on (variant
	 * fields masked), the payload and the pad; chained over each segment
	 * right after its copy, while it is in cache. */
	size_t l3_off = l2_len(pkt);
	uint32_t crc = icrc ? roce_icrc_headers(buf + l3_off, hlen - l3_off) : 0;
	uint8_t *p = buf + hlen;
	for (uint32_t i = 0; i < nseg; i++) {
		if (seg[i].len == 0) /* its addr may be NULL: not even memcpy(p, NULL, 0) */
			continue;
		memcpy(p, seg[i].addr, seg[i].len);
		if (icrc)
			crc = roce_icrc_update(crc, p, seg[i].len);
		p += seg[i].len;
	}
	if (pad) {
		memset(p, 0, pad);
		if (icrc)
			crc = roce_icrc_update(crc, p, pad);
		p += pad;
	}
	/* least significant byte first; one store, which a read of the frame
	 * right after (roce_pkt_built()) can forward from */
	uint32_t le = htole32(icrc ? roce_icrc_final(crc) : 0);
	memcpy(p, &le, 4);
	if (pkt->l3.udp_csum)
		write_udp_csum(pkt, buf, total);
	return total;
}

size_t
roce_build_gather(const struct roce_pkt *pkt, const struct roce_seg *seg, uint32_t nseg,
		  uint8_t *buf, size_t cap)
{
	return build_gather(pkt, seg, nseg, buf, cap, true);
}

size_t
roce_build_gather_local(const struct roce_pkt *pkt, const struct roce_seg *seg, uint32_t nseg,
			uint8_t *buf, size_t cap)
{
	return build_gather(pkt, seg, nseg, buf, cap, false);
}

size_t
roce_frame_len(const struct roce_pkt *pkt)
{
	const struct roce_opcode_desc *desc = roce_opcode_desc(pkt->opcode);
	size_t hlen = roce_headers_len(pkt);

	if (!desc || hlen == 0 || udp_len_of(pkt, desc) == 0)
		return 0;
	return hlen + (size_t)pkt->payload_len + (pkt->pad & 3) + ROCE_ICRC_LEN;
}

/* Zero what a parser leaves zero: the extension headers @p hdrs lacks. */
static void
clear_absent_ext(struct roce_pkt *p, uint16_t hdrs)
{
	if (!(hdrs & ROCE_HDR_RETH))
		memset(&p->reth, 0, sizeof(p->reth));
	if (!(hdrs & ROCE_HDR_FETH))
		memset(&p->feth, 0, sizeof(p->feth));
	if (!(hdrs & ROCE_HDR_AETH))
		memset(&p->aeth, 0, sizeof(p->aeth));
	if (!(hdrs & ROCE_HDR_ATMETH))
		memset(&p->atmeth, 0, sizeof(p->atmeth));
	if (!(hdrs & ROCE_HDR_ATMACK))
		p->atmack_orig = 0;
	if (!(hdrs & ROCE_HDR_DETH))
		memset(&p->deth, 0, sizeof(p->deth));
	if (!(hdrs & ROCE_HDR_IMMDT))
		p->imm = 0;
	if (!(hdrs & ROCE_HDR_IETH))
		p->ieth_rkey = 0;
	if (!(hdrs & ROCE_HDR_XRCETH))
		p->xrc_srqn = 0;
}

bool
roce_pkt_built(struct roce_pkt *out, const struct roce_pkt *pkt, const uint8_t *frame, size_t len)
{
	const struct roce_opcode_desc *desc = roce_opcode_desc(pkt->opcode);
	size_t hlen = roce_headers_len(pkt), pad = pkt->pad & 3;

	/* what roce_classify() would refuse is left to it */
	if (!desc || hlen == 0 || (pkt->tver & 0xf) != 0 ||
	    len != hlen + (size_t)pkt->payload_len + pad + ROCE_ICRC_LEN ||
	    roce_check_payload(desc, pkt->payload_len + pad, (uint8_t)pad) != ROCE_DROP_NONE)
		return false;
	/* Every field cut is read from @p pkt first and then stored: a load of
	 * what the copy just stored (an in-place AND) fails store forwarding. */
	bool ipv6 = pkt->l3.ipv6, vlan = pkt->l3.vlan_present;
	uint32_t flow = pkt->l3.flow_label & 0xfffff;
	uint8_t resv6a = pkt->resv6a & 0x3f, resv7 = pkt->resv7 & 0x7f;
	uint32_t dest_qpn = pkt->dest_qpn & ROCE_QPN_MASK, psn = pkt->psn & ROCE_PSN_MASK;
	uint32_t src_qpn = pkt->deth.src_qpn & ROCE_QPN_MASK, msn = pkt->aeth.msn & 0xffffff;
	uint32_t xrc_srqn = pkt->xrc_srqn & ROCE_QPN_MASK;
	uint32_t feth_resv = pkt->feth.resv & ~(uint32_t)(ROCE_FETH_PLT_MASK | ROCE_FETH_SEL_MASK);
	uint8_t feth_sel = (uint8_t)(((uint32_t)pkt->feth.selectivity << ROCE_FETH_SEL_SHIFT &
				      ROCE_FETH_SEL_MASK) >> ROCE_FETH_SEL_SHIFT);
	uint8_t feth_plt = pkt->feth.placement & ROCE_FETH_PLT_MASK;
	uint16_t l3_offset = (uint16_t)l2_len(pkt);
	uint16_t bth_offset = (uint16_t)(l3_offset + ip_len(pkt) + sizeof(struct roce_udp_hdr));

	if (out != pkt)
		*out = *pkt;
	struct roce_l3 *l3 = &out->l3;
	if (!vlan)
		l3->vlan_tci = 0;
	if (ipv6) {
		l3->ip_id = 0;
		l3->ipv4_df_clear = false;
		l3->flow_label = flow;
	} else {
		/* only the last four bytes go on the wire: ::ffff:a.b.c.d */
		memset(l3->sgid, 0, 10);
		memset(l3->dgid, 0, 10);
		l3->sgid[10] = l3->sgid[11] = l3->dgid[10] = l3->dgid[11] = 0xff;
		l3->flow_label = 0;
	}
	out->pad = (uint8_t)pad;
	out->tver = 0;
	out->resv6a = resv6a;
	out->dest_qpn = dest_qpn;
	out->resv7 = resv7;
	out->psn = psn;
	out->hdrs = desc->hdrs;
	out->deth.src_qpn = src_qpn;
	out->feth.resv = feth_resv;
	out->feth.selectivity = feth_sel;
	out->feth.placement = feth_plt;
	out->aeth.msn = msn;
	out->xrc_srqn = xrc_srqn;
	clear_absent_ext(out, desc->hdrs);
	out->l3_offset = l3_offset;
	out->bth_offset = bth_offset;
	out->payload = frame != NULL ? frame + bth_offset + desc->hdr_len : NULL;
	out->frame_len = (uint32_t)len;
	out->icrc = 0; /* the loopback builders' (the frame's last four bytes are not read) */
	return true;
}

size_t
roce_build(const struct roce_pkt *pkt, uint8_t *buf, size_t cap)
{
	struct roce_seg one = { pkt->payload, pkt->payload_len };

	if (pkt->payload_len && !pkt->payload)
		return 0;
	return roce_build_gather(pkt, &one, pkt->payload_len ? 1 : 0, buf, cap);
}

void
roce_cnp_init(struct roce_pkt *cnp, const struct roce_l3 *l3, uint16_t pkey, uint32_t dest_qpn)
{
	memset(cnp, 0, sizeof(*cnp));
	cnp->l3 = *l3;
	cnp->opcode = ROCE_OP_CNP;
	cnp->hdrs = roce_opcode_table[ROCE_OP_CNP].hdrs;
	cnp->pkey = pkey;
	cnp->becn = true; /* Annex A17.9.3: a CNP carries BECN set */
	cnp->dest_qpn = dest_qpn & ROCE_QPN_MASK;
}
