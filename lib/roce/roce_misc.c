/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Small helpers: drop reason names, UDP source port entropy, IBTA timer
 * encodings and the one-line packet description.
 */
#include <stdarg.h>
#include <stdio.h>

#include "roce.h"

static const char *const drop_text[ROCE_DROP_COUNT] = {
#define ROCE_DROP_TEXT(sym, text) [ROCE_DROP_##sym] = text,
	ROCE_DROP_LIST(ROCE_DROP_TEXT)
#undef ROCE_DROP_TEXT
};

static const char *const drop_name[ROCE_DROP_COUNT] = {
#define ROCE_DROP_NAME(sym, text) [ROCE_DROP_##sym] = #sym,
	ROCE_DROP_LIST(ROCE_DROP_NAME)
#undef ROCE_DROP_NAME
};

const char *
roce_drop_reason_str(enum roce_drop_reason reason)
{
	return (unsigned)reason < ROCE_DROP_COUNT ? drop_text[reason] : "unknown drop reason";
}

const char *
roce_drop_reason_name(enum roce_drop_reason reason)
{
	return (unsigned)reason < ROCE_DROP_COUNT ? drop_name[reason] : "UNKNOWN";
}

/*
 * UDP source port, as include/rdma/ib_verbs.h computes it (RoCEv2 Annex A17.5
 * recommends a per-flow entropy port in 0xC000..0xFFFF).
 */
#define ROCE_FLOW_LABEL_MASK 0xfffffu
#define ROCE_UDP_SPORT_MIN 0xc000u

uint32_t
roce_flow_label_from_qpns(uint32_t lqpn, uint32_t rqpn)
{
	uint64_t v = (uint64_t)lqpn * rqpn;   /* symmetric in the two QPNs */

	v ^= v >> 20;
	v ^= v >> 40;
	return (uint32_t)(v & ROCE_FLOW_LABEL_MASK);
}

uint16_t
roce_flow_label_to_udp_sport(uint32_t flow_label)
{
	uint32_t low = flow_label & 0x03fff;
	uint32_t high = flow_label & 0xfc000;

	low ^= high >> 14;
	return (uint16_t)(low | ROCE_UDP_SPORT_MIN);
}

uint16_t
roce_udp_sport(uint32_t flow_label, uint32_t lqpn, uint32_t rqpn)
{
	if (flow_label == 0)
		flow_label = roce_flow_label_from_qpns(lqpn, rqpn);
	return roce_flow_label_to_udp_sport(flow_label);
}

/*
 * RNR NAK timer field (IBTA Vol. 1 table 45, 9.7.5.2.8; Linux enum
 * ib_rnr_timeout). Codes 1..31 grow as 10 us x {1,2,3,4,6,8,12,16,...}:
 * the table is the spec's, typed from its millisecond column.
 */
static const uint32_t rnr_usec[32] = {
	655360, 10, 20, 30, 40, 60, 80, 120,
	160, 240, 320, 480, 640, 960, 1280, 1920,
	2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720,
	40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

uint32_t
roce_rnr_timer_usec(uint8_t code)
{
	return code < 32 ? rnr_usec[code] : 0;
}

/* Local ACK timeout (IBTA 9.7.6.1.3): 4.096 us x 2^code, 0 = no timer. */
uint64_t
roce_ack_timeout_nsec(uint8_t code)
{
	if (code == 0 || code > 31)
		return 0;
	return UINT64_C(4096) << code;
}

/* Appends to a fixed buffer, remembering the length a full write needs. */
struct line {
	char *buf;
	size_t cap;
	size_t len;
};

__attribute__((format(printf, 2, 3))) static void
put(struct line *l, const char *fmt, ...)
{
	va_list ap;
	size_t room = l->len < l->cap ? l->cap - l->len : 0;

	va_start(ap, fmt);
	int n = vsnprintf(room ? l->buf + l->len : NULL, room, fmt, ap);
	va_end(ap);
	if (n > 0)
		l->len += (size_t)n;
}

static void
put_addr(struct line *l, const struct roce_l3 *l3, const uint8_t gid[16])
{
	if (!l3->ipv6) {
		put(l, "%u.%u.%u.%u", gid[12], gid[13], gid[14], gid[15]);
		return;
	}
	put(l, "[");
	for (int i = 0; i < 16; i += 2)
		put(l, "%s%x", i ? ":" : "", gid[i] << 8 | gid[i + 1]);
	put(l, "]");
}

static void
put_aeth(struct line *l, const struct roce_pkt *pkt)
{
	uint8_t syn = pkt->aeth.syndrome;
	static const char *const nak[] = {
		"PSN_SEQ_ERR", "INVALID_REQ", "REM_ACCESS_ERR", "REM_OP_ERR", "INV_RD_REQ",
	};

	put(l, " aeth ");
	switch (syn & ROCE_AETH_TYPE_MASK) {
	case ROCE_AETH_ACK:
		put(l, "ACK credits %u", syn & 0x1f);
		break;
	case ROCE_AETH_RNR_NAK:
		put(l, "RNR_NAK timer %u (%u us)", syn & 0x1f, roce_rnr_timer_usec(syn & 0x1f));
		break;
	case ROCE_AETH_NAK:
		if ((syn & 0x1f) < sizeof(nak) / sizeof(nak[0]))
			put(l, "NAK %s", nak[syn & 0x1f]);
		else
			put(l, "NAK code %u (reserved)", syn & 0x1f);
		break;
	default:
		put(l, "reserved syndrome 0x%02x", syn);
		break;
	}
	put(l, " msn 0x%06x", pkt->aeth.msn);
}

int
roce_pkt_format(const struct roce_pkt *pkt, char *buf, size_t cap)
{
	struct line l = { .buf = buf, .cap = cap };
	const struct roce_opcode_desc *desc = roce_opcode_desc(pkt->opcode);

	if (cap)
		buf[0] = '\0';
	if (desc)
		put(&l, "%s", desc->name);
	else
		put(&l, "OPCODE_0x%02x", pkt->opcode);
	put(&l, " ");
	put_addr(&l, &pkt->l3, pkt->l3.sgid);
	put(&l, ":%u > ", pkt->l3.udp_sport);
	put_addr(&l, &pkt->l3, pkt->l3.dgid);
	put(&l, " qpn 0x%06x psn 0x%06x", pkt->dest_qpn, pkt->psn);
	if (pkt->ack_req || pkt->se || pkt->migreq || pkt->fecn || pkt->becn) {
		put(&l, " [%s%s%s%s%s ]", pkt->ack_req ? " A" : "", pkt->se ? " SE" : "",
		    pkt->migreq ? " M" : "", pkt->fecn ? " FECN" : "", pkt->becn ? " BECN" : "");
	}
	if (pkt->pkey != ROCE_DEFAULT_PKEY)
		put(&l, " pkey 0x%04x", pkt->pkey);
	if (roce_pkt_has(pkt, ROCE_HDR_DETH))
		put(&l, " deth qkey 0x%08x srcqp 0x%06x", pkt->deth.qkey, pkt->deth.src_qpn);
	if (roce_pkt_has(pkt, ROCE_HDR_RETH))
		put(&l, " reth va 0x%016llx rkey 0x%08x len %u",
		    (unsigned long long)pkt->reth.va, pkt->reth.rkey, pkt->reth.length);
	if (roce_pkt_has(pkt, ROCE_HDR_ATMETH))
		put(&l, " atmeth va 0x%016llx rkey 0x%08x swap_add 0x%016llx compare 0x%016llx",
		    (unsigned long long)pkt->atmeth.va, pkt->atmeth.rkey,
		    (unsigned long long)pkt->atmeth.swap_add,
		    (unsigned long long)pkt->atmeth.compare);
	if (roce_pkt_has(pkt, ROCE_HDR_AETH))
		put_aeth(&l, pkt);
	if (roce_pkt_has(pkt, ROCE_HDR_ATMACK))
		put(&l, " orig 0x%016llx", (unsigned long long)pkt->atmack_orig);
	if (roce_pkt_has(pkt, ROCE_HDR_IMMDT))
		put(&l, " imm 0x%08x", be32toh(pkt->imm));
	if (roce_pkt_has(pkt, ROCE_HDR_IETH))
		put(&l, " inv_rkey 0x%08x", pkt->ieth_rkey);
	put(&l, " payload %u", pkt->payload_len);
	if (pkt->pad)
		put(&l, " pad %u", pkt->pad);
	return l.len > INT32_MAX ? INT32_MAX : (int)l.len;
}
