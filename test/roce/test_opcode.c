/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Opcode table against the spec: IBTA Vol. 1 table 39 (opcodes), 9.2-9.3
 * (header sizes and order), Annex A17.9.3 (CNP), 9.3.5 (XRCETH, 4 bytes
 * right after the BTH in every XRC request). Offsets and lengths below
 * are typed from the spec figures, not derived from lib/roce.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "roce.h"

struct spec_hdr {
	uint16_t bit;
	uint8_t off;
};

struct spec_op {
	uint8_t op;
	const char *name;
	uint8_t hdr_len;          /* BTH + extension headers */
	struct spec_hdr h[3];     /* present headers with their offset from the BTH */
	bool payload;
	char pos;                 /* F(irst) M(iddle) L(ast) O(nly), 0 for CNP */
};

#define RETH ROCE_HDR_RETH
#define AETH ROCE_HDR_AETH
#define ATM ROCE_HDR_ATMETH
#define ATMACK ROCE_HDR_ATMACK
#define DETH ROCE_HDR_DETH
#define IMM ROCE_HDR_IMMDT
#define IETH ROCE_HDR_IETH
#define FETH ROCE_HDR_FETH
#define XRC ROCE_HDR_XRCETH

/* RC and UC share 0x00..0x0b (UC adds 0x20). */
#define SEND_WRITE(pfx, base) \
	{ base + 0x00, pfx "_SEND_FIRST", 12, {{0}}, true, 'F' }, \
	{ base + 0x01, pfx "_SEND_MIDDLE", 12, {{0}}, true, 'M' }, \
	{ base + 0x02, pfx "_SEND_LAST", 12, {{0}}, true, 'L' }, \
	{ base + 0x03, pfx "_SEND_LAST_WITH_IMMEDIATE", 16, {{IMM, 12}}, true, 'L' }, \
	{ base + 0x04, pfx "_SEND_ONLY", 12, {{0}}, true, 'O' }, \
	{ base + 0x05, pfx "_SEND_ONLY_WITH_IMMEDIATE", 16, {{IMM, 12}}, true, 'O' }, \
	{ base + 0x06, pfx "_RDMA_WRITE_FIRST", 28, {{RETH, 12}}, true, 'F' }, \
	{ base + 0x07, pfx "_RDMA_WRITE_MIDDLE", 12, {{0}}, true, 'M' }, \
	{ base + 0x08, pfx "_RDMA_WRITE_LAST", 12, {{0}}, true, 'L' }, \
	{ base + 0x09, pfx "_RDMA_WRITE_LAST_WITH_IMMEDIATE", 16, {{IMM, 12}}, true, 'L' }, \
	{ base + 0x0a, pfx "_RDMA_WRITE_ONLY", 28, {{RETH, 12}}, true, 'O' }, \
	{ base + 0x0b, pfx "_RDMA_WRITE_ONLY_WITH_IMMEDIATE", 32, {{RETH, 12}, {IMM, 28}}, true, 'O' }

static const struct spec_op spec[] = {
	SEND_WRITE("RC", 0x00),
	{ 0x0c, "RC_RDMA_READ_REQUEST", 28, {{RETH, 12}}, false, 'O' },
	{ 0x0d, "RC_RDMA_READ_RESPONSE_FIRST", 16, {{AETH, 12}}, true, 'F' },
	{ 0x0e, "RC_RDMA_READ_RESPONSE_MIDDLE", 12, {{0}}, true, 'M' },
	{ 0x0f, "RC_RDMA_READ_RESPONSE_LAST", 16, {{AETH, 12}}, true, 'L' },
	{ 0x10, "RC_RDMA_READ_RESPONSE_ONLY", 16, {{AETH, 12}}, true, 'O' },
	{ 0x11, "RC_ACKNOWLEDGE", 16, {{AETH, 12}}, false, 'O' },
	{ 0x12, "RC_ATOMIC_ACKNOWLEDGE", 24, {{AETH, 12}, {ATMACK, 16}}, false, 'O' },
	{ 0x13, "RC_COMPARE_SWAP", 40, {{ATM, 12}}, false, 'O' },
	{ 0x14, "RC_FETCH_ADD", 40, {{ATM, 12}}, false, 'O' },
	{ 0x16, "RC_SEND_LAST_WITH_INVALIDATE", 16, {{IETH, 12}}, true, 'L' },
	{ 0x17, "RC_SEND_ONLY_WITH_INVALIDATE", 16, {{IETH, 12}}, true, 'O' },
	/* IBTA 1.5: FLUSH is BTH, FETH (4), RETH (16); ATOMIC WRITE is BTH,
	 * RETH and its 8 payload bytes (Linux rxe_opcode.c has the same) */
	{ 0x1c, "RC_FLUSH", 32, {{FETH, 12}, {RETH, 16}}, false, 'O' },
	{ 0x1d, "RC_ATOMIC_WRITE", 28, {{RETH, 12}}, true, 'O' },
	SEND_WRITE("UC", 0x20),
	{ 0x64, "UD_SEND_ONLY", 20, {{DETH, 12}}, true, 'O' },
	{ 0x65, "UD_SEND_ONLY_WITH_IMMEDIATE", 24, {{DETH, 12}, {IMM, 20}}, true, 'O' },
	{ 0x81, "CNP", 28, {{ROCE_HDR_CNP, 12}}, false, 0 },
	/* XRC: requests carry the XRCETH at 12, everything after it moves by 4 */
	{ 0xa0, "XRC_SEND_FIRST", 16, {{XRC, 12}}, true, 'F' },
	{ 0xa1, "XRC_SEND_MIDDLE", 16, {{XRC, 12}}, true, 'M' },
	{ 0xa2, "XRC_SEND_LAST", 16, {{XRC, 12}}, true, 'L' },
	{ 0xa3, "XRC_SEND_LAST_WITH_IMMEDIATE", 20, {{XRC, 12}, {IMM, 16}}, true, 'L' },
	{ 0xa4, "XRC_SEND_ONLY", 16, {{XRC, 12}}, true, 'O' },
	{ 0xa5, "XRC_SEND_ONLY_WITH_IMMEDIATE", 20, {{XRC, 12}, {IMM, 16}}, true, 'O' },
	{ 0xa6, "XRC_RDMA_WRITE_FIRST", 32, {{XRC, 12}, {RETH, 16}}, true, 'F' },
	{ 0xa7, "XRC_RDMA_WRITE_MIDDLE", 16, {{XRC, 12}}, true, 'M' },
	{ 0xa8, "XRC_RDMA_WRITE_LAST", 16, {{XRC, 12}}, true, 'L' },
	{ 0xa9, "XRC_RDMA_WRITE_LAST_WITH_IMMEDIATE", 20, {{XRC, 12}, {IMM, 16}}, true, 'L' },
	{ 0xaa, "XRC_RDMA_WRITE_ONLY", 32, {{XRC, 12}, {RETH, 16}}, true, 'O' },
	{ 0xab, "XRC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", 36, {{XRC, 12}, {RETH, 16}, {IMM, 32}}, true, 'O' },
	{ 0xac, "XRC_RDMA_READ_REQUEST", 32, {{XRC, 12}, {RETH, 16}}, false, 'O' },
	{ 0xad, "XRC_RDMA_READ_RESPONSE_FIRST", 16, {{AETH, 12}}, true, 'F' },
	{ 0xae, "XRC_RDMA_READ_RESPONSE_MIDDLE", 12, {{0}}, true, 'M' },
	{ 0xaf, "XRC_RDMA_READ_RESPONSE_LAST", 16, {{AETH, 12}}, true, 'L' },
	{ 0xb0, "XRC_RDMA_READ_RESPONSE_ONLY", 16, {{AETH, 12}}, true, 'O' },
	{ 0xb1, "XRC_ACKNOWLEDGE", 16, {{AETH, 12}}, false, 'O' },
	{ 0xb2, "XRC_ATOMIC_ACKNOWLEDGE", 24, {{AETH, 12}, {ATMACK, 16}}, false, 'O' },
	{ 0xb3, "XRC_COMPARE_SWAP", 44, {{XRC, 12}, {ATM, 16}}, false, 'O' },
	{ 0xb4, "XRC_FETCH_ADD", 44, {{XRC, 12}, {ATM, 16}}, false, 'O' },
	{ 0xb6, "XRC_SEND_LAST_WITH_INVALIDATE", 20, {{XRC, 12}, {IETH, 16}}, true, 'L' },
	{ 0xb7, "XRC_SEND_ONLY_WITH_INVALIDATE", 20, {{XRC, 12}, {IETH, 16}}, true, 'O' },
};

static const struct spec_op *
spec_find(unsigned op)
{
	for (size_t i = 0; i < sizeof(spec) / sizeof(spec[0]); i++)
		if (spec[i].op == op)
			return &spec[i];
	return NULL;
}

Test(opcode, valid_set_is_exactly_rc_uc_ud_xrc_cnp)
{
	unsigned valid = 0;

	for (unsigned op = 0; op < 256; op++) {
		const struct spec_op *s = spec_find(op);
		const struct roce_opcode_desc *d = roce_opcode_desc((uint8_t)op);
		if (!s) {
			cr_expect_null(d, "opcode 0x%02x must be invalid", op);
			cr_expect_null(roce_opcode_table[op].name);
			continue;
		}
		valid++;
		cr_assert_not_null(d, "opcode 0x%02x (%s) must be valid", op, s->name);
		cr_expect_str_eq(d->name, s->name);
	}
	cr_expect_eq(valid, 23 + 2 + 12 + 2 + 1 + 23);
	/* RD is not supported; 0x15 and 0xb5 are reserved. */
	for (unsigned op = 0x40; op < 0x60; op++)
		cr_expect_null(roce_opcode_desc((uint8_t)op));
	for (unsigned op = 0xb8; op < 0xc0; op++)
		cr_expect_null(roce_opcode_desc((uint8_t)op));
	cr_expect_null(roce_opcode_desc(0x15));
	cr_expect_null(roce_opcode_desc(0xb5));
}

Test(opcode, header_lengths_and_offsets)
{
	for (size_t i = 0; i < sizeof(spec) / sizeof(spec[0]); i++) {
		const struct spec_op *s = &spec[i];
		const struct roce_opcode_desc *d = roce_opcode_desc(s->op);
		uint16_t hdrs = 0;

		cr_assert_not_null(d);
		cr_expect_eq(d->hdr_len, s->hdr_len, "%s hdr_len %u, spec %u", s->name, d->hdr_len,
			     s->hdr_len);
		for (int k = 0; k < 3 && s->h[k].bit; k++) {
			hdrs |= s->h[k].bit;
			unsigned idx = (unsigned)__builtin_ctz(s->h[k].bit);
			cr_expect_eq(d->offset[idx], s->h[k].off, "%s header bit %u at %u, spec %u",
				     s->name, idx, d->offset[idx], s->h[k].off);
		}
		cr_expect_eq(d->hdrs, hdrs, "%s header set 0x%x, spec 0x%x", s->name, d->hdrs, hdrs);
		for (unsigned idx = 0; idx < ROCE_HDR_BITS; idx++)
			if (!(hdrs & (1u << idx)))
				cr_expect_eq(d->offset[idx], 0, "%s absent header %u has offset", s->name,
					     idx);
	}
}

Test(opcode, kinds_match_position_and_payload)
{
	for (size_t i = 0; i < sizeof(spec) / sizeof(spec[0]); i++) {
		const struct spec_op *s = &spec[i];
		const struct roce_opcode_desc *d = roce_opcode_desc(s->op);
		uint16_t pos = d->kind & (ROCE_KIND_FIRST | ROCE_KIND_MIDDLE | ROCE_KIND_LAST);
		uint16_t want = s->pos == 'F' ? ROCE_KIND_FIRST :
				s->pos == 'M' ? ROCE_KIND_MIDDLE :
				s->pos == 'L' ? ROCE_KIND_LAST :
				s->pos == 'O' ? ROCE_KIND_FIRST | ROCE_KIND_LAST : 0;

		cr_expect_eq(pos, want, "%s position", s->name);
		cr_expect_eq(!!(d->kind & ROCE_KIND_PAYLOAD), s->payload, "%s payload", s->name);
		cr_expect_eq(!!(d->kind & ROCE_KIND_IMM), !!strstr(s->name, "IMMEDIATE"), "%s", s->name);
		cr_expect_eq(!!(d->kind & ROCE_KIND_INV), !!strstr(s->name, "INVALIDATE"), "%s", s->name);
		cr_expect_eq(!!(d->kind & ROCE_KIND_ACK), !!strstr(s->name, "ACKNOWLEDGE"), "%s", s->name);
		cr_expect_eq(!!(d->kind & ROCE_KIND_CNP), s->op == ROCE_OP_CNP);
		bool response = strstr(s->name, "RESPONSE") || strstr(s->name, "ACKNOWLEDGE");
		if (s->op != ROCE_OP_CNP) {
			cr_expect_eq(!!(d->kind & ROCE_KIND_RESPONSE), response, "%s", s->name);
			cr_expect_eq(!!(d->kind & ROCE_KIND_REQUEST), !response, "%s", s->name);
		}
		/* Opcode values are not mask bits: the transport is the top three bits. */
		uint8_t t = roce_opcode_transport(s->op);
		const char *pfx = t == ROCE_TRANSPORT_RC ? "RC_" : t == ROCE_TRANSPORT_UC ? "UC_" :
				  t == ROCE_TRANSPORT_UD ? "UD_" : t == ROCE_TRANSPORT_XRC ? "XRC_" : "CNP";
		cr_expect_eq(strncmp(s->name, pfx, strlen(pfx)), 0, "%s transport prefix", s->name);
		/* every XRC request, and no response, names its SRQ (9.3.5) */
		if (t == ROCE_TRANSPORT_XRC)
			cr_expect_eq(!!(d->hdrs & ROCE_HDR_XRCETH), !response, "%s XRCETH", s->name);
	}
}

Test(opcode, enum_values_match_spec)
{
	cr_expect_eq(ROCE_OP_RC_SEND_FIRST, 0x00);
	cr_expect_eq(ROCE_OP_RC_RDMA_READ_REQUEST, 0x0c);
	cr_expect_eq(ROCE_OP_RC_ACKNOWLEDGE, 0x11);
	cr_expect_eq(ROCE_OP_RC_SEND_ONLY_WITH_INVALIDATE, 0x17);
	cr_expect_eq(ROCE_OP_UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, 0x2b);
	cr_expect_eq(ROCE_OP_UD_SEND_ONLY_WITH_IMMEDIATE, 0x65);
	cr_expect_eq(ROCE_OP_CNP, 0x81);
	cr_expect_eq(ROCE_OP_RC_FLUSH, 0x1c);
	cr_expect_eq(ROCE_OP_RC_ATOMIC_WRITE, 0x1d);
	/* 0x18..0x1b (IBTA 1.5 RDMA WRITE-like reserved range) stay invalid */
	for (unsigned op = 0x18; op < 0x1c; op++)
		cr_expect_null(roce_opcode_desc((uint8_t)op));
	cr_expect_eq(ROCE_OP_XRC_SEND_FIRST, 0xa0);
	cr_expect_eq(ROCE_OP_XRC_ACKNOWLEDGE, 0xb1);
	cr_expect_eq(ROCE_OP_XRC_SEND_ONLY_WITH_INVALIDATE, 0xb7);
}
