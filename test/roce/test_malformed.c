/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Malformed input: every truncation and every single-bit flip in the headers
 * and ICRC of the golden frames, and hand-made bad lengths, pads and opcodes.
 * Each case asserts the precise drop reason. Frames are copied into buffers
 * of exactly their length so ASan catches any read past the end.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "golden.h"
#include "ref_csum.h"
#include "roce.h"

TestSuite(malformed, .init = golden_suite_init, .fini = golden_suite_fini);

/* Parse @p len bytes from a heap buffer of exactly that size. */
static enum roce_drop_reason
parse_exact(const uint8_t *data, size_t len, struct roce_pkt *pkt)
{
	uint8_t *copy = malloc(len ? len : 1);
	memcpy(copy, data, len);
	enum roce_drop_reason r = roce_parse(copy, len, pkt);
	free(copy);
	return r;
}

static void
fix_ipv4_csum(uint8_t *ip)
{
	ip[10] = ip[11] = 0;
	uint16_t c = (uint16_t)~ref_csum16(ip, 20, 0);
	ip[10] = (uint8_t)(c >> 8);
	ip[11] = (uint8_t)c;
}

/* Correct UDP checksum of an IPv4 frame (l3 at 14), as it would be sent. */
static uint16_t
udp4_csum(const uint8_t *f)
{
	const uint8_t *ip = f + 14, *udp = ip + 20;
	size_t ulen = (size_t)(udp[4] << 8 | udp[5]);
	uint8_t *copy = malloc(ulen);
	memcpy(copy, udp, ulen);
	copy[6] = copy[7] = 0;
	uint32_t sum = ref_csum16(ip + 12, 8, 0) + 17 + (uint32_t)ulen;
	uint16_t c = (uint16_t)~ref_csum16(copy, ulen, sum);
	free(copy);
	return c ? c : 0xffff;
}

/* The payload/pad rules of IBTA 9.2/9.7, restated for the expected results. */
static enum roce_drop_reason
expect_lengths(uint8_t opcode, size_t roce_len, uint8_t pad)
{
	const struct roce_opcode_desc *d = roce_opcode_desc(opcode);
	if (!d)
		return ROCE_DROP_OPCODE_INVALID;
	if (roce_len < d->hdr_len + 4u)
		return ROCE_DROP_HDR_TRUNCATED;
	size_t rest = roce_len - d->hdr_len - 4;
	if (!(d->kind & ROCE_KIND_PAYLOAD))
		return rest ? ROCE_DROP_PAYLOAD_LENGTH : pad ? ROCE_DROP_PAD : ROCE_DROP_NONE;
	if (rest % 4 || pad > rest)
		return ROCE_DROP_PAD;
	if ((d->kind & ROCE_KIND_ATOMIC_WRITE) && (rest != 8 || pad))
		return ROCE_DROP_PAYLOAD_LENGTH; /* IBTA 1.5: its 8 bytes, unpadded */
	if (!(d->kind & ROCE_KIND_LAST) && pad)
		return ROCE_DROP_PAD;
	if (!(d->kind & ROCE_KIND_LAST) && rest == 0)
		return ROCE_DROP_PAYLOAD_LENGTH;
	return ROCE_DROP_NONE;
}

Test(malformed, every_truncation_fails_on_length)
{
	struct roce_pkt pkt;

	for (size_t i = 0; i < golden_nframes; i++) {
		struct golden_frame *g = &golden_frames[i];
		for (size_t len = 0; len < g->len; len++) {
			enum roce_drop_reason want = len < 14 ? ROCE_DROP_ETH_TRUNCATED :
						     len < 34 ? ROCE_DROP_IP_TRUNCATED :
								ROCE_DROP_IP_LENGTH;
			enum roce_drop_reason r = parse_exact(g->data, len, &pkt);
			cr_assert_eq(r, want, "%s #%u cut to %zu: %s, want %s", g->file, g->index,
				     len, roce_drop_reason_name(r), roce_drop_reason_name(want));
		}
	}
}

Test(malformed, ethernet_padding_is_ignored)
{
	struct roce_pkt pkt;
	uint8_t buf[2048];

	for (size_t i = 0; i < golden_nframes; i += 7) {
		struct golden_frame *g = &golden_frames[i];
		memcpy(buf, g->data, g->len);
		memset(buf + g->len, 0xee, 64);
		cr_assert_eq(parse_exact(buf, g->len + 64, &pkt), ROCE_DROP_NONE);
		cr_assert_eq(pkt.frame_len, g->len);
	}
	/* The smallest RoCEv2 frame (SEND_ONLY, no payload) is 58 bytes: NICs pad it to 60. */
	struct roce_pkt small = {
		.opcode = ROCE_OP_RC_SEND_ONLY, .pkey = 0xffff, .dest_qpn = 0x11, .psn = 1,
		.l3 = { .hop_limit = 64, .udp_sport = 0xc000,
			.sgid = { [10] = 0xff, [11] = 0xff, 198, 18, 0, 2 },
			.dgid = { [10] = 0xff, [11] = 0xff, 198, 18, 0, 1 } },
	};
	size_t n = roce_build(&small, buf, sizeof(buf));
	cr_assert_eq(n, 58);
	memset(buf + n, 0, 2);
	cr_assert_eq(parse_exact(buf, 60, &pkt), ROCE_DROP_NONE);
	cr_assert_eq(pkt.frame_len, 58);
	cr_assert_eq(pkt.payload_len, 0);
}

/* The reason a single flipped bit must produce, by field (IPv4 golden frames). */
static enum roce_drop_reason
expect_flip(const struct golden_frame *g, const struct roce_pkt *orig, size_t byte, int bit,
	    const uint8_t *mutant)
{
	const size_t l3 = 14, l4 = 34, bth = 42;
	size_t roce_len = g->len - bth;

	if (byte < 12)
		return ROCE_DROP_NONE;                          /* MACs: not covered */
	if (byte < l3)
		return ROCE_DROP_NOT_IP;                        /* ethertype */
	if (byte == l3)
		return bit >= 4 ? ROCE_DROP_IP_VERSION : ROCE_DROP_IP_IHL;
	if (byte < l4)
		return ROCE_DROP_IP_CHECKSUM;                   /* TOS, TTL included */
	if (byte < l4 + 2)
		return ROCE_DROP_ICRC;                          /* UDP source port */
	if (byte < l4 + 4)
		return ROCE_DROP_NOT_ROCE_PORT;
	if (byte < l4 + 6)
		return ROCE_DROP_UDP_LENGTH;
	if (byte < bth) {                                       /* UDP checksum */
		uint16_t now = (uint16_t)(mutant[l4 + 6] << 8 | mutant[l4 + 7]);
		return now == udp4_csum(g->data) ? ROCE_DROP_NONE : ROCE_DROP_UDP_CHECKSUM;
	}
	if (byte == bth)
		return expect_lengths(mutant[bth], roce_len, orig->pad) == ROCE_DROP_NONE ?
			       ROCE_DROP_ICRC : expect_lengths(mutant[bth], roce_len, orig->pad);
	if (byte == bth + 1) {
		if (bit < 4)
			return ROCE_DROP_BTH_TVER;
		if (bit < 6) {
			enum roce_drop_reason r = expect_lengths(orig->opcode, roce_len,
								 (mutant[bth + 1] >> 4) & 3);
			return r == ROCE_DROP_NONE ? ROCE_DROP_ICRC : r;
		}
		return ROCE_DROP_ICRC;                          /* SE, MigReq */
	}
	if (byte == bth + 4)
		return ROCE_DROP_NONE;                          /* FECN/BECN/resv6a: masked */
	return ROCE_DROP_ICRC;                                  /* rest of BTH, ext hdrs, data, ICRC */
}

Test(malformed, every_header_and_icrc_bit_flip)
{
	struct roce_pkt orig, pkt;
	uint8_t *rebuilt = malloc(1 << 16);
	unsigned accepted = 0, total = 0;

	for (size_t i = 0; i < golden_nframes; i++) {
		struct golden_frame *g = &golden_frames[i];
		cr_assert_eq(roce_parse(g->data, g->len, &orig), ROCE_DROP_NONE);
		size_t hdr_end = (size_t)(orig.payload - g->data);
		size_t data_end = hdr_end + orig.payload_len + orig.pad;
		uint8_t *m = malloc(g->len);

		for (size_t byte = 0; byte < g->len; byte++) {
			/* All headers and the ICRC; payload/pad at its edges only. */
			bool edge = byte == hdr_end || byte + 1 == data_end ||
				    (byte >= data_end - orig.pad && byte < data_end);
			if (byte >= hdr_end && byte < data_end && !edge)
				continue;
			for (int bit = 0; bit < 8; bit++) {
				memcpy(m, g->data, g->len);
				m[byte] ^= (uint8_t)(1u << bit);
				enum roce_drop_reason want = expect_flip(g, &orig, byte, bit, m);
				enum roce_drop_reason r = roce_parse(m, g->len, &pkt);
				total++;
				cr_assert_eq(r, want, "%s #%u byte %zu bit %d: %s, want %s", g->file,
					     g->index, byte, bit, roce_drop_reason_name(r),
					     roce_drop_reason_name(want));
				if (r != ROCE_DROP_NONE)
					continue;
				/* Accepted mutants (MACs, FECN/BECN) are recorded and rebuilt exactly. */
				accepted++;
				cr_assert_eq(roce_build(&pkt, rebuilt, 1 << 16), g->len);
				cr_assert_eq(memcmp(rebuilt, m, g->len), 0, "%s #%u byte %zu bit %d",
					     g->file, g->index, byte, bit);
			}
		}
		free(m);
	}
	cr_assert_gt(total, 100000);
	cr_assert_geq(accepted, golden_nframes * (12 + 1) * 8);  /* + rare UDP checksum hits */
	free(rebuilt);
}

/* A record with sane defaults: IPv4 198.18.0.2 -> 198.18.0.1, P_Key 0xffff. */
static struct roce_pkt
base_pkt(uint8_t opcode)
{
	struct roce_pkt p = {
		.opcode = opcode, .pkey = 0xffff, .dest_qpn = 0x123456, .psn = 0xabcdef,
		.l3 = {
			.dmac = { 0x52, 0x54, 0, 0xc6, 0x12, 1 },
			.smac = { 0x02, 0, 0xc6, 0x12, 0, 2 },
			.sgid = { [10] = 0xff, [11] = 0xff, 198, 18, 0, 2 },
			.dgid = { [10] = 0xff, [11] = 0xff, 198, 18, 0, 1 },
			.hop_limit = 64, .ip_id = 0x1234, .udp_sport = 0xc132,
		},
	};
	return p;
}

static enum roce_drop_reason
build_and_parse(const struct roce_pkt *in, const uint8_t *payload, struct roce_pkt *out)
{
	static uint8_t buf[1 << 16];
	struct roce_pkt p = *in;
	p.payload = payload;
	size_t n = roce_build(&p, buf, sizeof(buf));
	cr_assert_gt(n, 0, "build %s", roce_opcode_desc(p.opcode)->name);
	return parse_exact(buf, n, out);
}

Test(malformed, pad_and_payload_rules)
{
	static const uint8_t data[4096];
	struct roce_pkt p, out;
	static const struct {
		uint8_t op;
		uint32_t len;
		uint8_t pad;
		enum roce_drop_reason want;
	} cases[] = {
		{ ROCE_OP_RC_SEND_LAST, 1, 3, ROCE_DROP_NONE },
		{ ROCE_OP_RC_SEND_LAST, 0, 0, ROCE_DROP_NONE },
		{ ROCE_OP_RC_SEND_LAST, 5, 0, ROCE_DROP_PAD },       /* not a multiple of 4 */
		{ ROCE_OP_RC_SEND_LAST, 5, 1, ROCE_DROP_PAD },
		{ ROCE_OP_RC_SEND_LAST, 0, 3, ROCE_DROP_PAD },
		{ ROCE_OP_RC_SEND_ONLY, 2, 2, ROCE_DROP_NONE },
		{ ROCE_OP_RC_SEND_ONLY, 0, 0, ROCE_DROP_NONE },      /* zero-length send */
		{ ROCE_OP_RC_SEND_FIRST, 1024, 0, ROCE_DROP_NONE },
		{ ROCE_OP_RC_SEND_FIRST, 1021, 3, ROCE_DROP_PAD },   /* FIRST is never padded */
		{ ROCE_OP_RC_SEND_MIDDLE, 0, 0, ROCE_DROP_PAYLOAD_LENGTH },
		{ ROCE_OP_RC_RDMA_WRITE_FIRST, 0, 0, ROCE_DROP_PAYLOAD_LENGTH },
		{ ROCE_OP_RC_RDMA_READ_RESPONSE_MIDDLE, 256, 0, ROCE_DROP_NONE },
		{ ROCE_OP_RC_RDMA_READ_RESPONSE_ONLY, 0, 0, ROCE_DROP_NONE },
		{ ROCE_OP_RC_RDMA_READ_REQUEST, 4, 0, ROCE_DROP_PAYLOAD_LENGTH },
		{ ROCE_OP_RC_ACKNOWLEDGE, 4, 0, ROCE_DROP_PAYLOAD_LENGTH },
		{ ROCE_OP_RC_ACKNOWLEDGE, 0, 2, ROCE_DROP_PAYLOAD_LENGTH }, /* pad bytes are payload */
		{ ROCE_OP_RC_FETCH_ADD, 8, 0, ROCE_DROP_PAYLOAD_LENGTH },
		{ ROCE_OP_RC_ATOMIC_ACKNOWLEDGE, 4, 0, ROCE_DROP_PAYLOAD_LENGTH },
		{ ROCE_OP_RC_ATOMIC_WRITE, 8, 0, ROCE_DROP_NONE },
		{ ROCE_OP_RC_ATOMIC_WRITE, 4, 0, ROCE_DROP_PAYLOAD_LENGTH },  /* 8 bytes, no fewer */
		{ ROCE_OP_RC_ATOMIC_WRITE, 12, 0, ROCE_DROP_PAYLOAD_LENGTH }, /* nor more */
		{ ROCE_OP_RC_ATOMIC_WRITE, 7, 1, ROCE_DROP_PAYLOAD_LENGTH },  /* nor padded */
		{ ROCE_OP_RC_ATOMIC_WRITE, 0, 0, ROCE_DROP_PAYLOAD_LENGTH },
		{ ROCE_OP_RC_FLUSH, 0, 0, ROCE_DROP_NONE },
		{ ROCE_OP_RC_FLUSH, 4, 0, ROCE_DROP_PAYLOAD_LENGTH },
		{ ROCE_OP_CNP, 4, 0, ROCE_DROP_PAYLOAD_LENGTH },
		{ ROCE_OP_CNP, 0, 0, ROCE_DROP_NONE },
		{ ROCE_OP_UD_SEND_ONLY, 0, 0, ROCE_DROP_NONE },
		{ ROCE_OP_UD_SEND_ONLY_WITH_IMMEDIATE, 3, 1, ROCE_DROP_NONE },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		p = base_pkt(cases[i].op);
		p.payload_len = cases[i].len;
		p.pad = cases[i].pad;
		enum roce_drop_reason r = build_and_parse(&p, data, &out);
		cr_expect_eq(r, cases[i].want, "case %zu %s len %u pad %u: %s", i,
			     roce_opcode_desc(cases[i].op)->name, cases[i].len, cases[i].pad,
			     roce_drop_reason_name(r));
	}

	/* Pad count set on a packet that has no payload at all. */
	uint8_t buf[256];
	p = base_pkt(ROCE_OP_RC_ACKNOWLEDGE);
	size_t n = roce_build(&p, buf, sizeof(buf));
	buf[42 + 1] |= 0x20;
	cr_expect_eq(parse_exact(buf, n, &out), ROCE_DROP_PAD);
}

Test(malformed, opcode_not_valid_for_transport)
{
	static const uint8_t bad[] = {
		0x15, 0x18, 0x1f, 0x3c /* UC FLUSH */, 0x3d /* UC ATOMIC_WRITE */,
		0x2c /* UC READ */, 0x31 /* UC ACK */, 0x33 /* UC atomic */, 0x36 /* UC SEND_INV */,
		0x40, 0x44, 0x51, 0x60 /* UD SEND_FIRST */, 0x66, 0x6c, 0x71, 0x80, 0x82,
		0xb5, 0xb8 /* the XRC class (0xa0..) has neither */, 0xc0, 0xe0, 0xff,
	};
	uint8_t buf[256];
	struct roce_pkt p = base_pkt(ROCE_OP_UD_SEND_ONLY), out;
	p.deth.qkey = 0x11111111;
	p.deth.src_qpn = 0x1a;
	size_t n = roce_build(&p, buf, sizeof(buf));
	cr_assert_eq(parse_exact(buf, n, &out), ROCE_DROP_NONE);
	for (size_t i = 0; i < sizeof(bad); i++) {
		buf[42] = bad[i];
		cr_expect_eq(parse_exact(buf, n, &out), ROCE_DROP_OPCODE_INVALID, "0x%02x", bad[i]);
	}
	/* Invalid opcodes cannot be built either. */
	p.opcode = 0x15;
	cr_expect_eq(roce_build(&p, buf, sizeof(buf)), 0);
	cr_expect_eq(roce_headers_len(&p), 0);
}

Test(malformed, bad_ip_and_udp_fields)
{
	uint8_t base[256], f[256];
	struct roce_pkt p = base_pkt(ROCE_OP_RC_SEND_ONLY), out;
	static const uint8_t data[16];
	p.payload = data;
	p.payload_len = 16;
	size_t n = roce_build(&p, base, sizeof(base));
	cr_assert_eq(n, 14 + 20 + 8 + 12 + 16 + 4);
	cr_assert_eq(parse_exact(base, n, &out), ROCE_DROP_NONE);
	uint8_t *ip = f + 14, *udp = f + 34;

#define MUTATE(stmt, fix, want) do { \
		memcpy(f, base, n); \
		stmt; \
		if (fix) fix_ipv4_csum(ip); \
		enum roce_drop_reason r_ = parse_exact(f, n, &out); \
		cr_expect_eq(r_, want, "%s: %s", #stmt, roce_drop_reason_name(r_)); \
	} while (0)

	MUTATE(f[12] = 0x08; f[13] = 0x06, false, ROCE_DROP_NOT_IP);               /* ARP */
	MUTATE(ip[0] = 0x65, true, ROCE_DROP_IP_VERSION);
	MUTATE(ip[0] = 0x46, true, ROCE_DROP_IP_IHL);                             /* options */
	MUTATE(ip[0] = 0x44, true, ROCE_DROP_IP_IHL);
	MUTATE(ip[10] ^= 1, false, ROCE_DROP_IP_CHECKSUM);
	MUTATE(ip[3] += 1, true, ROCE_DROP_IP_LENGTH);                            /* > frame */
	MUTATE(ip[2] = 0; ip[3] = 19, true, ROCE_DROP_IP_LENGTH);                 /* < header */
	MUTATE(ip[3] -= 4, true, ROCE_DROP_UDP_LENGTH);                           /* < UDP len */
	MUTATE(ip[2] = 0; ip[3] = 27, true, ROCE_DROP_UDP_TRUNCATED);
	MUTATE(ip[6] |= 0x20, true, ROCE_DROP_IP_FRAGMENT);                       /* MF */
	MUTATE(ip[7] = 8, true, ROCE_DROP_IP_FRAGMENT);                           /* offset */
	MUTATE(ip[6] |= 0x80, true, ROCE_DROP_IP_FRAGMENT);                       /* reserved */
	MUTATE(ip[6] &= (uint8_t)~0x40, true, ROCE_DROP_ICRC);                    /* DF: covered by ICRC */
	MUTATE(ip[9] = 6, true, ROCE_DROP_NOT_UDP);
	MUTATE(udp[3] = 0xb6, false, ROCE_DROP_NOT_ROCE_PORT);                    /* 4790 */
	MUTATE(udp[5] += 4, false, ROCE_DROP_UDP_LENGTH);
	MUTATE(udp[5] -= 4, false, ROCE_DROP_UDP_LENGTH);
	MUTATE(udp[7] = 1, false, ROCE_DROP_UDP_CHECKSUM);
	MUTATE(f[43] |= 1, false, ROCE_DROP_BTH_TVER);
	MUTATE(ip[1] = 0x02, true, ROCE_DROP_NONE);                               /* ECN: masked */
	MUTATE(ip[8] = 1, true, ROCE_DROP_NONE);                                  /* TTL: masked */
	MUTATE(f[46] = 0xc0, false, ROCE_DROP_NONE);                              /* FECN|BECN */

	/* Lengths too short for the BTH or for the extension headers. */
	struct roce_pkt s = base_pkt(ROCE_OP_RC_SEND_ONLY);
	size_t m = roce_build(&s, f, sizeof(f));
	cr_assert_eq(parse_exact(f, m, &out), ROCE_DROP_NONE);
	f[42] = ROCE_OP_RC_RDMA_WRITE_ONLY;                                       /* wants RETH */
	cr_expect_eq(parse_exact(f, m, &out), ROCE_DROP_HDR_TRUNCATED);
	f[42] = ROCE_OP_RC_SEND_ONLY;
	for (unsigned cut = 1; cut <= 4; cut++) {                                 /* BTH+ICRC < 16 */
		uint16_t ulen = (uint16_t)(8 + 16 - cut), tot = (uint16_t)(20 + ulen);
		ip = f + 14;
		ip[2] = (uint8_t)(tot >> 8), ip[3] = (uint8_t)tot;
		fix_ipv4_csum(ip);
		f[34 + 4] = (uint8_t)(ulen >> 8), f[34 + 5] = (uint8_t)ulen;
		cr_expect_eq(parse_exact(f, m, &out), ROCE_DROP_BTH_TRUNCATED, "cut %u", cut);
	}
	/* VLAN header truncated, QinQ and VLAN-tagged non-IP. */
	uint8_t v[18] = { [12] = 0x81, [13] = 0x00, [16] = 0x08, [17] = 0x06 };
	cr_expect_eq(parse_exact(v, 16, &out), ROCE_DROP_ETH_TRUNCATED);
	cr_expect_eq(parse_exact(v, 18, &out), ROCE_DROP_NOT_IP);
	v[16] = 0x81, v[17] = 0x00;                                              /* QinQ */
	cr_expect_eq(parse_exact(v, 18, &out), ROCE_DROP_NOT_IP);
	v[16] = 0x86, v[17] = 0xdd;
	cr_expect_eq(parse_exact(v, 18, &out), ROCE_DROP_IP_TRUNCATED);
#undef MUTATE
}

Test(malformed, builder_rejects_impossible_records)
{
	uint8_t buf[256];
	struct roce_pkt p = base_pkt(ROCE_OP_RC_SEND_ONLY);
	p.payload_len = 8;
	p.payload = NULL;
	cr_expect_eq(roce_build(&p, buf, sizeof(buf)), 0);
	static uint8_t big[70000];
	p.payload = big;
	p.payload_len = sizeof(big);
	static uint8_t out[80000];
	cr_expect_eq(roce_build(&p, out, sizeof(out)), 0);
	p.payload_len = 0xffff - 20 - 8 - 12 - 4;
	cr_expect_eq(roce_build(&p, out, sizeof(out)), 14 + 0xffff);
	p.payload_len++;
	cr_expect_eq(roce_build(&p, out, sizeof(out)), 0);
}
