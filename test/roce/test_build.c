/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Builder: every valid opcode over IPv4 and IPv6, with and without 802.1Q
 * and a UDP checksum, parses back to the same record; the IPv6 ICRC is
 * checked against zlib over a copy masked here by hand; IPv6 bit flips give
 * the expected reasons.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "pkt_equal.h"
#include "roce.h"
#include "roce_internal.h"
#include "test_gids.h"

static uint8_t payload[4096];

static struct roce_pkt
record_for(uint8_t op, bool ipv6, bool vlan, bool udp_csum)
{
	const struct roce_opcode_desc *d = roce_opcode_desc(op);
	struct roce_pkt p = {
		.opcode = op, .se = true, .pkey = 0x8001, .dest_qpn = 0xfedcba, .ack_req = true,
		.psn = 0xffffff, .migreq = true,
		.l3 = {
			.dmac = { 0x52, 0x54, 0, 0xc6, 0x12, 1 },
			.smac = { 0x02, 0, 0xc6, 0x12, 0, 2 },
			.vlan_present = vlan, .vlan_tci = 0x2064,
			.ipv6 = ipv6, .traffic_class = 0x6a, .hop_limit = 17, .flow_label = 0xabcde,
			.ip_id = 0xbeef, .udp_sport = 0xd123, .udp_csum = udp_csum,
		},
		.reth = { 0x0123456789abcdefull, 0x11223344, 0x10000 },
		.feth = { ROCE_FLUSH_GLOBAL | ROCE_FLUSH_PERSISTENT, ROCE_FLUSH_MR, 0xabcd0000 },
		.aeth = { ROCE_AETH_RNR_NAK | 14, 0x654321 },
		.atmeth = { 0x7fff0000aaaa5550ull, 0x55667788, 0x1111222233334444ull,
			    0x9999888877776666ull },
		.atmack_orig = 0xa5a5a5a55a5a5a5aull,
		.deth = { ROCE_GSI_QKEY, 0x000001, 0 },
		.imm = htobe32(0xc0ffee11),
		.ieth_rkey = 0x0badcafe,
		.xrc_srqn = 0x00abcdef,
		.payload = payload,
	};
	test_gids(&p, ipv6);
	p.hdrs = d->hdrs;
	if (!(d->kind & ROCE_KIND_PAYLOAD)) {
		p.payload = NULL;
	} else if (d->kind & ROCE_KIND_ATOMIC_WRITE) {
		p.payload_len = 8; /* exactly its 8 bytes */
	} else if (d->kind & ROCE_KIND_LAST) {
		p.payload_len = 1021;
		p.pad = 3;
	} else {
		p.payload_len = 1024;
	}
	if (op == ROCE_OP_CNP) {
		p.becn = true;
		p.se = p.ack_req = p.migreq = false;
	}
	return p;
}

static uint32_t
icrc6_by_hand(const uint8_t *l3, size_t covered)
{
	uint8_t *c = malloc(covered), ff[8];
	memcpy(c, l3, covered);
	c[0] |= 0x0f;
	c[1] = c[2] = c[3] = 0xff;      /* traffic class + flow label */
	c[7] = 0xff;                    /* hop limit */
	c[40 + 6] = c[40 + 7] = 0xff;   /* UDP checksum */
	c[48 + 4] = 0xff;               /* BTH byte 4 */
	memset(ff, 0xff, 8);
	uint32_t crc = (uint32_t)crc32(crc32(0, ff, 8), c, (uInt)covered);
	free(c);
	return crc;
}

Test(build, every_opcode_round_trips)
{
	static uint8_t buf[8192], again[8192];

	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 31 + 7);
	for (unsigned op = 0; op < 256; op++) {
		if (!roce_opcode_desc((uint8_t)op))
			continue;
		for (unsigned variant = 0; variant < 8; variant++) {
			bool ipv6 = variant & 1, vlan = variant & 2, csum = variant & 4;
			struct roce_pkt in = record_for((uint8_t)op, ipv6, vlan, csum), out;
			size_t n = roce_build(&in, buf, sizeof(buf));
			cr_assert_gt(n, 0);
			size_t l3 = vlan ? 18 : 14;
			enum roce_drop_reason r = roce_parse(buf, n, &out);
			cr_assert_eq(r, ROCE_DROP_NONE, "%s variant %u: %s",
				     roce_opcode_desc((uint8_t)op)->name, variant,
				     roce_drop_reason_name(r));
			cr_assert_eq(out.payload, in.payload_len ? buf + n - 4 - in.pad - in.payload_len :
								   out.payload);
			cr_assert_eq(memcmp(out.payload, payload, in.payload_len), 0);
			/* Every field the record holds comes back. */
			in.payload = out.payload;
			in.icrc = out.icrc;
			in.l3_offset = out.l3_offset;
			in.bth_offset = out.bth_offset;
			in.frame_len = out.frame_len;
			const struct roce_opcode_desc *d = roce_opcode_desc((uint8_t)op);
			if (!(d->hdrs & ROCE_HDR_RETH)) memset(&in.reth, 0, sizeof(in.reth));
			if (!(d->hdrs & ROCE_HDR_FETH)) memset(&in.feth, 0, sizeof(in.feth));
			if (!(d->hdrs & ROCE_HDR_AETH)) memset(&in.aeth, 0, sizeof(in.aeth));
			if (!(d->hdrs & ROCE_HDR_ATMETH)) memset(&in.atmeth, 0, sizeof(in.atmeth));
			if (!(d->hdrs & ROCE_HDR_ATMACK)) in.atmack_orig = 0;
			if (!(d->hdrs & ROCE_HDR_DETH)) memset(&in.deth, 0, sizeof(in.deth));
			if (!(d->hdrs & ROCE_HDR_IMMDT)) in.imm = 0;
			if (!(d->hdrs & ROCE_HDR_IETH)) in.ieth_rkey = 0;
			if (!(d->hdrs & ROCE_HDR_XRCETH)) in.xrc_srqn = 0;
			if (!vlan) in.l3.vlan_tci = 0;
			if (!ipv6) in.l3.flow_label = 0;
			else in.l3.ip_id = 0;
			const char *diff = pkt_diff(&in, &out);
			cr_assert_null(diff, "%s variant %u: %s differs", d->name, variant, diff);
			cr_assert_eq(out.l3_offset, l3);
			cr_assert_eq(roce_build(&out, again, sizeof(again)), n);
			cr_assert_eq(memcmp(again, buf, n), 0);
			if (ipv6) {
				uint32_t want = icrc6_by_hand(buf + l3, n - 4 - l3);
				cr_assert_eq(out.icrc, want, "%s IPv6 ICRC", d->name);
			}
			if (csum)
				cr_assert_neq(buf[l3 + (ipv6 ? 40 : 20) + 6] | buf[l3 + (ipv6 ? 40 : 20) + 7], 0);
		}
	}
}

Test(build, ipv6_bit_flips)
{
	static uint8_t buf[4096], m[4096];
	struct roce_pkt in = record_for(ROCE_OP_RC_RDMA_WRITE_ONLY, true, false, false), out;
	size_t n = roce_build(&in, buf, sizeof(buf));
	const size_t l3 = 14;

	for (size_t byte = l3; byte < l3 + 40; byte++)
		for (int bit = 0; bit < 8; bit++) {
			memcpy(m, buf, n);
			m[byte] ^= (uint8_t)(1u << bit);
			size_t f = byte - l3;
			enum roce_drop_reason want;
			if (f == 0)
				want = bit >= 4 ? ROCE_DROP_IP_VERSION : ROCE_DROP_NONE; /* class */
			else if (f < 4 || f == 7)
				want = ROCE_DROP_NONE;         /* class, flow label, hop limit: masked */
			else if (f < 6)                      /* payload length */
				want = (m[l3 + 4] << 8 | m[l3 + 5]) > (int)(n - l3 - 40) ?
					       ROCE_DROP_IP_LENGTH : ROCE_DROP_UDP_LENGTH;
			else if (f == 6)
				want = ROCE_DROP_NOT_UDP;
			else
				want = ROCE_DROP_ICRC;         /* addresses */
			enum roce_drop_reason r = roce_parse(m, n, &out);
			cr_assert_eq(r, want, "IPv6 byte %zu bit %d: %s, want %s", f, bit,
				     roce_drop_reason_name(r), roce_drop_reason_name(want));
		}
	/* With a UDP checksum, addresses fail it first (pseudo-header). */
	in.l3.udp_csum = true;
	n = roce_build(&in, buf, sizeof(buf));
	buf[l3 + 8] ^= 1;
	cr_expect_eq(roce_parse(buf, n, &out), ROCE_DROP_UDP_CHECKSUM);
}

Test(build, headers_only_then_payload_matches_build)
{
	static uint8_t a[4096], b[4096];
	struct roce_pkt p = record_for(ROCE_OP_RC_SEND_LAST_WITH_IMMEDIATE, false, true, false);
	size_t n = roce_build(&p, a, sizeof(a));
	size_t h = roce_build_headers(&p, b, sizeof(b));
	cr_assert_eq(h, roce_headers_len(&p));
	memcpy(b + h, payload, p.payload_len);
	memset(b + h + p.payload_len, 0, p.pad);
	uint32_t crc = roce_icrc_headers(b + 18, h - 18);
	crc = roce_icrc_update(crc, b + h, p.payload_len + p.pad);
	crc = roce_icrc_final(crc);
	uint8_t *t = b + h + p.payload_len + p.pad;
	t[0] = (uint8_t)crc, t[1] = (uint8_t)(crc >> 8), t[2] = (uint8_t)(crc >> 16),
	t[3] = (uint8_t)(crc >> 24);
	cr_assert_eq(h + p.payload_len + p.pad + 4, n);
	cr_assert_eq(memcmp(a, b, n), 0);
}

Test(build, icrc_header_split_at_every_offset)
{
	static uint8_t buf[4096];

	for (unsigned variant = 0; variant < 2; variant++) {
		struct roce_pkt p = record_for(ROCE_OP_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, variant, false,
					       false);
		p.payload_len = 61;
		size_t n = roce_build(&p, buf, sizeof(buf));
		const uint8_t *l3 = buf + 14;
		size_t covered = n - 14 - 4;
		uint32_t wire = buf[n - 4] | buf[n - 3] << 8 | buf[n - 2] << 16 |
				(uint32_t)buf[n - 1] << 24;
		cr_assert_eq(roce_icrc_compute(l3, covered), wire);
		/* Masked part in the header call, the rest in any number of updates. */
		for (size_t k = 0; k <= covered; k++) {
			uint32_t crc = roce_icrc_headers(l3, k);
			size_t mid = k + (covered - k) / 2;
			crc = roce_icrc_update(crc, l3 + k, mid - k);
			crc = roce_icrc_update(crc, l3 + mid, covered - mid);
			if (k >= (variant ? 60u : 40u))   /* every masked field was seen by headers() */
				cr_assert_eq(roce_icrc_final(crc), wire, "v%u split at %zu", variant, k);
		}
	}
}

/*
 * Cut @p len bytes of payload into @p k segments at i^2/k^2 of the length
 * (small and empty ones first, large ones last).
 * @return k
 */
static uint32_t
split(const uint8_t *base, uint32_t len, uint32_t k, struct roce_seg *seg)
{
	for (uint32_t i = 0; i < k; i++) {
		uint32_t from = (uint32_t)((uint64_t)len * i * i / ((uint64_t)k * k));
		uint32_t to = (uint32_t)((uint64_t)len * (i + 1) * (i + 1) / ((uint64_t)k * k));
		seg[i] = (struct roce_seg){ base + from, to - from };
	}
	return k;
}

Test(build, gather_equals_build_for_every_split)
{
	static uint8_t want[4352], got[4352];
	struct roce_seg seg[17];

	for (unsigned int i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 131 + 7);
	for (unsigned int op = 0; op < 256; op++) {
		const struct roce_opcode_desc *d = roce_opcode_desc((uint8_t)op);
		if (!d || !(d->kind & ROCE_KIND_PAYLOAD))
			continue;
		for (unsigned int v = 0; v < 8; v++) {
			struct roce_pkt p = record_for((uint8_t)op, v & 1, v & 2, v & 4);
			size_t n = roce_build(&p, want, sizeof(want));
			cr_assert_gt(n, 0, "opcode 0x%02x variant %u", op, v);
			p.payload = NULL; /* the gather builder must not read it */
			for (uint32_t k = 1; k <= 17; k++) {
				memset(got, 0x5a, sizeof(got));
				uint32_t ns = split(payload, p.payload_len, k, seg);
				cr_assert_eq(roce_build_gather(&p, seg, ns, got, sizeof(got)), n,
					     "opcode 0x%02x variant %u %u segments", op, v, k);
				cr_assert_eq(memcmp(want, got, n), 0, "opcode 0x%02x variant %u %u segments",
					     op, v, k);
				cr_assert_eq(got[n], 0x5a, "wrote past the frame");
			}
		}
	}
	/* no payload: no segment, or only empty ones */
	struct roce_pkt ack = record_for(ROCE_OP_RC_ACKNOWLEDGE, false, false, false);
	size_t n = roce_build(&ack, want, sizeof(want));
	cr_assert_gt(n, 0);
	cr_assert_eq(roce_build_gather(&ack, NULL, 0, got, sizeof(got)), n);
	cr_assert_eq(memcmp(want, got, n), 0);
	seg[0] = (struct roce_seg){ NULL, 0 };
	cr_assert_eq(roce_build_gather(&ack, seg, 1, got, sizeof(got)), n);
}

Test(build, gather_local_is_the_frame_with_a_zero_icrc_that_loopback_accepts)
{
	static uint8_t want[4352], got[4352];
	struct roce_seg seg[3];

	for (unsigned int i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 29 + 3);
	for (unsigned int op = 0; op < 256; op++) {
		if (!roce_opcode_desc((uint8_t)op))
			continue;
		for (unsigned int v = 0; v < 4; v++) { /* IPv4/6, VLAN; no UDP checksum */
			struct roce_pkt p = record_for((uint8_t)op, v & 1, v & 2, false), q;
			uint32_t ns = p.payload_len ? split(payload, p.payload_len, 3, seg) : 0;
			size_t n = roce_build_gather(&p, seg, ns, want, sizeof(want));
			enum roce_drop_reason why;

			cr_assert_gt(n, 0, "opcode 0x%02x variant %u", op, v);
			memset(got, 0x5a, sizeof(got));
			cr_assert_eq(roce_build_gather_local(&p, seg, ns, got, sizeof(got)), n);
			cr_assert_eq(memcmp(want, got, n - ROCE_ICRC_LEN), 0, "opcode 0x%02x variant %u", op, v);
			cr_assert_eq(got[n - 4] | got[n - 3] | got[n - 2] | got[n - 1], 0, "ICRC not zero");
			cr_assert_eq(got[n], 0x5a, "wrote past the frame");
			/* the loopback's receive path takes it; a port's would drop it */
			cr_assert_eq(roce_classify(got, n, ROCE_CLASSIFY_NO_ICRC, &q, &why), ROCE_CLASS_ROCE);
			cr_assert_eq(why, ROCE_DROP_NONE, "opcode 0x%02x variant %u: %s", op, v,
				     roce_drop_reason_str(why));
			cr_assert_eq(q.psn, p.psn);
			cr_assert_eq(q.payload_len, p.payload_len);
			roce_classify(got, n, 0, &q, &why);
			cr_assert_eq(why, ROCE_DROP_ICRC, "opcode 0x%02x variant %u", op, v);
		}
	}
}

/*
 * roce_frame_len() is the length of the frame the builders make, without
 * making it, and 0 for a record they refuse.
 */
Test(build, frame_len_is_the_built_frames_length)
{
	static uint8_t buf[4352];
	struct roce_seg seg;

	for (unsigned int op = 0; op < 256; op++) {
		if (!roce_opcode_desc((uint8_t)op)) {
			struct roce_pkt bad = record_for(ROCE_OP_RC_SEND_ONLY, op & 1, false, false);

			bad.opcode = (uint8_t)op;
			cr_assert_eq(roce_frame_len(&bad), 0, "opcode 0x%02x: no such opcode", op);
			continue;
		}
		struct roce_pkt p = record_for((uint8_t)op, op & 1, op & 2, false);
		uint32_t ns = p.payload_len ? split(payload, p.payload_len, 1, &seg) : 0;

		cr_assert_eq(roce_frame_len(&p), roce_build_gather_local(&p, &seg, ns, buf, sizeof(buf)),
			     "opcode 0x%02x", op);
	}
	struct roce_pkt p = record_for(ROCE_OP_RC_RDMA_WRITE_ONLY, false, false, false);
	p.payload_len = 0xffff - 20 - 8 - 12 - 16 - 4 + 1; /* one byte over IPv4's total length */
	p.pad = 0;
	cr_assert_eq(roce_frame_len(&p), 0);
	p.payload_len--;
	cr_assert_gt(roce_frame_len(&p), 0);
}

Test(build, ipv4_header_checksum_of_random_fields_sums_to_all_ones)
{
	static uint8_t buf[1024];
	uint64_t x = 0x9e3779b97f4a7c15ull;

	for (int i = 0; i < 20000; i++) {
		struct roce_pkt p = record_for(ROCE_OP_RC_RDMA_WRITE_ONLY, false, i & 1, false);

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		p.l3.traffic_class = (uint8_t)x;
		p.l3.hop_limit = (uint8_t)(x >> 8);
		p.l3.ip_id = (uint16_t)(x >> 16);
		p.l3.ipv4_df_clear = (x >> 32) & 1;
		memcpy(p.l3.sgid + 12, (uint8_t *)&x + 3, 4);
		memcpy(p.l3.dgid + 12, (uint8_t *)&x + 1, 4);
		p.payload_len = (uint32_t)(x >> 40) & 0xff;
		p.pad = (uint8_t)((4 - (p.payload_len & 3)) & 3);
		p.payload = payload;
		size_t n = roce_build(&p, buf, sizeof(buf));
		cr_assert_gt(n, 0);
		size_t l3 = i & 1 ? 18 : 14;
		cr_assert_eq(roce_csum_fold(roce_csum_add(0, buf + l3, 20)), 0xffff, "round %d", i);
	}
}

/* Every field of @p p that a frame carries or a parser clears, random; the payload kept. */
static void
scramble(struct roce_pkt *p, uint64_t *x)
{
	uint8_t r[256];

	for (size_t i = 0; i < sizeof(r); i += 8) {
		*x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
		memcpy(r + i, x, 8);
	}
	memcpy(p->l3.dmac, r, 6);
	memcpy(p->l3.smac, r + 6, 6);
	memcpy(&p->l3.vlan_tci, r + 12, 2);
	memcpy(p->l3.sgid, r + 14, 16);
	memcpy(p->l3.dgid, r + 30, 16);
	p->l3.traffic_class = r[46];
	p->l3.hop_limit = r[47];
	memcpy(&p->l3.flow_label, r + 48, 4);
	memcpy(&p->l3.ip_id, r + 52, 2);
	p->l3.ipv4_df_clear = r[54] & 1;
	memcpy(&p->l3.udp_sport, r + 55, 2);
	p->se = r[57] & 1;
	p->migreq = r[58] & 1;
	memcpy(&p->pkey, r + 59, 2);
	p->fecn = r[61] & 1;
	p->becn = r[62] & 1;
	p->resv6a = r[63];
	memcpy(&p->dest_qpn, r + 64, 4);
	p->ack_req = r[68] & 1;
	p->resv7 = r[69];
	memcpy(&p->psn, r + 70, 4);
	memcpy(&p->reth, r + 74, sizeof(p->reth));
	memcpy(&p->feth, r + 90, sizeof(p->feth));
	memcpy(&p->aeth, r + 98, sizeof(p->aeth));
	memcpy(&p->atmeth, r + 106, sizeof(p->atmeth));
	memcpy(&p->atmack_orig, r + 146, 8);
	memcpy(&p->deth, r + 154, sizeof(p->deth));
	memcpy(&p->imm, r + 166, 4);
	memcpy(&p->ieth_rkey, r + 170, 4);
	memcpy(&p->xrc_srqn, r + 174, 4);
	memcpy(&p->hdrs, r + 178, 2);
	memcpy(&p->icrc, r + 180, 4);
	memcpy(&p->l3_offset, r + 184, 2);
	memcpy(&p->bth_offset, r + 186, 2);
	memcpy(&p->frame_len, r + 188, 4);
}

/* The loopback's record of a frame it built is the one roce_classify() gives. */
Test(build, a_built_frames_record_is_what_classify_parses)
{
	static uint8_t buf[4352];
	struct roce_seg seg[2];
	uint64_t x = 0x2545f4914f6cdd1dull;

	for (unsigned int op = 0; op < 256; op++) {
		if (!roce_opcode_desc((uint8_t)op))
			continue;
		for (unsigned int v = 0; v < 8 * 16; v++) {
			struct roce_pkt p = record_for((uint8_t)op, v & 1, v & 2, v & 4), want, got;
			enum roce_drop_reason why;

			scramble(&p, &x);
			uint32_t ns = p.payload_len ? split(payload, p.payload_len, 2, seg) : 0;
			size_t n = (v & 8) ? roce_build_gather_local(&p, seg, ns, buf, sizeof(buf))
					   : roce_build_gather(&p, seg, ns, buf, sizeof(buf));
			cr_assert_gt(n, 0, "opcode 0x%02x variant %u", op, v);
			cr_assert_eq(roce_classify(buf, n, ROCE_CLASSIFY_NO_ICRC, &want, &why), ROCE_CLASS_ROCE);
			cr_assert_eq(why, ROCE_DROP_NONE, "opcode 0x%02x variant %u: %s", op, v,
				     roce_drop_reason_name(why));
			cr_assert(roce_pkt_built(&got, &p, buf, n), "opcode 0x%02x variant %u", op, v);
			/* the record's ICRC is the local builder's, zero, whichever built it */
			if (v & 8)
				cr_assert_eq(want.icrc, 0, "the local builder's ICRC, parsed");
			else
				want.icrc = 0;
			const char *diff = pkt_diff(&want, &got);
			cr_assert_null(diff, "opcode 0x%02x variant %u: %s differs", op, v, diff);
			cr_assert_eq(got.payload, want.payload);
			cr_assert_eq(got.l3_offset, want.l3_offset);
			cr_assert_eq(got.bth_offset, want.bth_offset);
			cr_assert_eq(got.frame_len, want.frame_len);
			/* the record builds the frame it was cut from (the loopback
			 * builds a frame by reference from its record, worker.c) */
			static uint8_t again[4352];
			size_t n2 = (v & 8) ? roce_build_gather_local(&got, seg, ns, again, sizeof(again))
					    : roce_build_gather(&got, seg, ns, again, sizeof(again));
			cr_assert_eq(n2, n, "opcode 0x%02x variant %u", op, v);
			cr_assert_eq(memcmp(again, buf, n), 0,
				     "opcode 0x%02x variant %u: rebuilt differs", op, v);
			/* in place */
			cr_assert(roce_pkt_built(&p, &p, buf, n));
			cr_assert_null(pkt_diff(&want, &p));
			/* not that frame, or not a frame the builders make */
			cr_assert_not(roce_pkt_built(&got, &p, buf, n - 1));
			p.tver = 1;
			cr_assert_not(roce_pkt_built(&got, &p, buf, n));
		}
	}
}

Test(build, gather_refuses_segments_that_do_not_add_up)
{
	static uint8_t buf[8192];
	struct roce_pkt p = record_for(ROCE_OP_RC_SEND_ONLY, false, false, false);
	size_t total = roce_headers_len(&p) + p.payload_len + (p.pad & 3) + ROCE_ICRC_LEN;
	struct roce_seg seg[3];

	/* longer than payload_len: refused before the extra bytes are written */
	memset(buf, 0xa5, sizeof(buf));
	split(payload, p.payload_len, 2, seg);
	seg[2] = (struct roce_seg){ payload, 100 };
	cr_expect_eq(roce_build_gather(&p, seg, 3, buf, sizeof(buf)), 0);
	for (size_t i = total; i < sizeof(buf); i++)
		cr_assert_eq(buf[i], 0xa5, "byte %zu past the frame written", i);
	/* one segment too long by a byte */
	seg[0] = (struct roce_seg){ payload, p.payload_len + 1 };
	cr_expect_eq(roce_build_gather(&p, seg, 1, buf, sizeof(buf)), 0);
	/* shorter than payload_len */
	seg[0] = (struct roce_seg){ payload, p.payload_len - 1 };
	cr_expect_eq(roce_build_gather(&p, seg, 1, buf, sizeof(buf)), 0);
	cr_expect_eq(roce_build_gather(&p, NULL, 0, buf, sizeof(buf)), 0);
	/* a NULL address with a length */
	seg[0] = (struct roce_seg){ NULL, p.payload_len };
	cr_expect_eq(roce_build_gather(&p, seg, 1, buf, sizeof(buf)), 0);
	/* a buffer one byte short: nothing written at all */
	memset(buf, 0xa5, sizeof(buf));
	seg[0] = (struct roce_seg){ payload, p.payload_len };
	cr_expect_eq(roce_build_gather(&p, seg, 1, buf, total - 1), 0);
	for (size_t i = 0; i < total; i++)
		cr_assert_eq(buf[i], 0xa5, "byte %zu written into a short buffer", i);
	cr_expect_eq(roce_build_gather(&p, seg, 1, buf, total), total);
}

/*
 * IBTA 1.5 FLUSH and ATOMIC WRITE byte by byte, typed from the spec layout
 * (as Linux rxe puts them on the wire): FLUSH is BTH, FETH (bits 3:0
 * placement type, 5:4 selectivity), RETH; ATOMIC WRITE is BTH, RETH and the
 * 8 bytes it stores, as they are in memory.
 */
Test(build, flush_and_atomic_write_byte_layout)
{
	static const uint8_t value[8] = { 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88 };
	uint8_t buf[256];
	struct roce_pkt p = record_for(ROCE_OP_RC_FLUSH, false, false, false), out;
	const size_t bth = 14 + 20 + 8;

	p.feth.placement = ROCE_FLUSH_GLOBAL;
	p.feth.selectivity = ROCE_FLUSH_MR;
	p.feth.resv = 0;
	p.reth.va = 0x0102030405060708ull;
	p.reth.rkey = 0xa1b2c3d4;
	p.reth.length = 0x40;
	size_t n = roce_build(&p, buf, sizeof(buf));
	cr_assert_eq(n, bth + 12 + 4 + 16 + 4);
	cr_expect_eq(buf[bth], 0x1c);
	static const uint8_t flush[20] = { 0, 0, 0, 0x11, /* FETH: sel MR (1 << 4) | GLOBAL */
					   1, 2, 3, 4, 5, 6, 7, 8, 0xa1, 0xb2, 0xc3, 0xd4,
					   0, 0, 0, 0x40 };
	cr_expect_eq(memcmp(buf + bth + 12, flush, sizeof(flush)), 0);
	cr_assert_eq(roce_parse(buf, n, &out), ROCE_DROP_NONE);
	cr_expect_eq(out.feth.placement, ROCE_FLUSH_GLOBAL);
	cr_expect_eq(out.feth.selectivity, ROCE_FLUSH_MR);
	cr_expect_eq(out.reth.length, 0x40);

	/* persistent, range */
	buf[bth + 15] = 0x02;
	cr_assert_eq(roce_parse_no_icrc(buf, n, &out), ROCE_DROP_NONE);
	cr_expect_eq(out.feth.placement, ROCE_FLUSH_PERSISTENT);
	cr_expect_eq(out.feth.selectivity, ROCE_FLUSH_RANGE);

	p = record_for(ROCE_OP_RC_ATOMIC_WRITE, false, false, false);
	p.reth.va = 0x0102030405060708ull;
	p.reth.rkey = 0xa1b2c3d4;
	p.reth.length = 8;
	p.payload = value;
	p.payload_len = 8;
	p.pad = 0;
	n = roce_build(&p, buf, sizeof(buf));
	cr_assert_eq(n, bth + 12 + 16 + 8 + 4);
	cr_expect_eq(buf[bth], 0x1d);
	cr_expect_eq(buf[bth + 1] & 0x30, 0, "no pad");
	static const uint8_t aw[24] = { 1, 2, 3, 4, 5, 6, 7, 8, 0xa1, 0xb2, 0xc3, 0xd4,
					0, 0, 0, 8,
					0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88 };
	cr_expect_eq(memcmp(buf + bth + 12, aw, sizeof(aw)), 0);
	cr_assert_eq(roce_parse(buf, n, &out), ROCE_DROP_NONE);
	cr_expect_eq(out.payload_len, 8);
	cr_expect_eq(memcmp(out.payload, value, 8), 0);
}
