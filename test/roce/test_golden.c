/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Every RoCEv2 frame of the Linux rxe captures: parses, its ICRC verifies
 * (through lib/roce, and through zlib on a copy masked here by hand), the
 * chunked ICRC equals the one-shot one, and the frame rebuilt from the
 * parsed record is byte-identical.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "golden.h"
#include "pkt_equal.h"
#include "roce.h"

TestSuite(golden, .init = golden_suite_init, .fini = golden_suite_fini);

Test(golden, all_frames_parse_and_icrc_verifies)
{
	unsigned per_op[256] = {0};

	for (size_t i = 0; i < golden_nframes; i++) {
		struct golden_frame *g = &golden_frames[i];
		struct roce_pkt pkt;
		enum roce_drop_reason r = roce_parse(g->data, g->len, &pkt);
		cr_assert_eq(r, ROCE_DROP_NONE, "%s #%u: %s", g->file, g->index,
			     roce_drop_reason_name(r));
		cr_assert_eq(pkt.frame_len, g->len, "%s #%u", g->file, g->index);
		cr_assert_eq(pkt.l3_offset, 14);
		cr_assert_eq(pkt.bth_offset, 14 + 20 + 8);
		cr_assert_eq(pkt.tver, 0);
		cr_assert_eq(pkt.pkey, 0xffff);
		cr_assert(!pkt.l3.ipv6 && !pkt.l3.vlan_present && !pkt.l3.ipv4_df_clear);
		cr_assert_eq(pkt.l3.hop_limit, 64);
		/* payload + pad + ICRC end the frame */
		cr_assert_eq((size_t)(pkt.payload - g->data) + pkt.payload_len + pkt.pad + 4, g->len);
		per_op[pkt.opcode]++;
	}
	/* The captures cover these opcodes (README of rxe-peer). */
	static const uint8_t seen[] = {
		ROCE_OP_RC_SEND_FIRST, ROCE_OP_RC_SEND_MIDDLE, ROCE_OP_RC_SEND_LAST,
		ROCE_OP_RC_SEND_ONLY, ROCE_OP_RC_RDMA_WRITE_FIRST, ROCE_OP_RC_RDMA_WRITE_MIDDLE,
		ROCE_OP_RC_RDMA_WRITE_LAST, ROCE_OP_RC_RDMA_READ_REQUEST,
		ROCE_OP_RC_RDMA_READ_RESPONSE_FIRST, ROCE_OP_RC_RDMA_READ_RESPONSE_MIDDLE,
		ROCE_OP_RC_RDMA_READ_RESPONSE_LAST, ROCE_OP_RC_ACKNOWLEDGE,
		ROCE_OP_RC_ATOMIC_ACKNOWLEDGE, ROCE_OP_RC_COMPARE_SWAP, ROCE_OP_RC_FETCH_ADD,
		ROCE_OP_UC_RDMA_WRITE_FIRST, ROCE_OP_UC_RDMA_WRITE_MIDDLE,
		ROCE_OP_UC_RDMA_WRITE_LAST, ROCE_OP_UD_SEND_ONLY,
	};
	for (size_t k = 0; k < sizeof(seen); k++)
		cr_expect_gt(per_op[seen[k]], 0, "no %s frame", roce_opcode_desc(seen[k])->name);
	cr_expect_geq(golden_nframes, 279);
}

/* ICRC computed here with zlib over a copy masked per Annex A17.3.3 (IPv4). */
static uint32_t
icrc_by_hand(const uint8_t *frame, size_t len)
{
	size_t n = len - 14 - 4;
	uint8_t *c = malloc(n);
	uint8_t ff[8];

	memcpy(c, frame + 14, n);
	c[1] = 0xff;                        /* TOS */
	c[8] = 0xff;                        /* TTL */
	c[10] = c[11] = 0xff;               /* IP checksum */
	c[20 + 6] = c[20 + 7] = 0xff;       /* UDP checksum */
	c[28 + 4] = 0xff;                   /* BTH FECN/BECN/resv6a */
	memset(ff, 0xff, 8);
	uint32_t crc = (uint32_t)crc32(crc32(0, ff, 8), c, (uInt)n);
	free(c);
	return crc;
}

Test(golden, icrc_cross_checked_with_zlib_and_chunks)
{
	for (size_t i = 0; i < golden_nframes; i++) {
		struct golden_frame *g = &golden_frames[i];
		struct roce_pkt pkt;
		cr_assert_eq(roce_parse(g->data, g->len, &pkt), ROCE_DROP_NONE);
		const uint8_t *wire = g->data + g->len - 4;
		uint32_t wire_le = wire[0] | wire[1] << 8 | wire[2] << 16 | (uint32_t)wire[3] << 24;
		cr_assert_eq(pkt.icrc, wire_le);
		cr_assert_eq(icrc_by_hand(g->data, g->len), wire_le, "%s #%u", g->file, g->index);

		const uint8_t *l3 = g->data + pkt.l3_offset;
		size_t covered = g->len - 4 - pkt.l3_offset;
		uint32_t one_shot = roce_icrc_compute(l3, covered);
		cr_assert_eq(one_shot, wire_le);

		/* Headers through the extension headers, then payload in odd segments, then pad. */
		size_t hdr = (size_t)(pkt.payload - l3);
		uint32_t crc = roce_icrc_headers(l3, hdr);
		size_t seg[] = { 1, 7, 64, 3, 1000 };
		size_t done = 0;
		for (size_t k = 0; done < pkt.payload_len; k = (k + 1) % 5) {
			size_t n = seg[k] < pkt.payload_len - done ? seg[k] : pkt.payload_len - done;
			crc = roce_icrc_update(crc, pkt.payload + done, n);
			done += n;
		}
		crc = roce_icrc_update(crc, pkt.payload + pkt.payload_len, pkt.pad);
		cr_assert_eq(roce_icrc_final(crc), wire_le, "%s #%u chunked", g->file, g->index);

		/* Headers only through the BTH, extension headers as a separate chunk. */
		size_t through_bth = pkt.bth_offset - pkt.l3_offset + ROCE_BTH_LEN;
		crc = roce_icrc_headers(l3, through_bth);
		crc = roce_icrc_update(crc, l3 + through_bth, covered - through_bth);
		cr_assert_eq(roce_icrc_final(crc), wire_le);
	}
}

Test(golden, rebuild_is_byte_identical)
{
	uint8_t *buf = malloc(1 << 16);

	for (size_t i = 0; i < golden_nframes; i++) {
		struct golden_frame *g = &golden_frames[i];
		struct roce_pkt pkt;
		cr_assert_eq(roce_parse(g->data, g->len, &pkt), ROCE_DROP_NONE);

		size_t hlen = roce_headers_len(&pkt);
		cr_assert_eq(hlen, (size_t)(pkt.payload - g->data));
		memset(buf, 0xa5, 1 << 16);
		cr_assert_eq(roce_build_headers(&pkt, buf, 1 << 16), hlen);
		cr_assert_eq(memcmp(buf, g->data, hlen), 0,
			     "%s #%u headers differ", g->file, g->index);
		cr_assert_eq(roce_build_headers(&pkt, buf, hlen - 1), 0);

		memset(buf, 0x5a, 1 << 16);
		size_t n = roce_build(&pkt, buf, 1 << 16);
		cr_assert_eq(n, g->len, "%s #%u: built %zu of %zu", g->file, g->index, n, g->len);
		for (size_t k = 0; k < n; k++)
			cr_assert_eq(buf[k], g->data[k], "%s #%u differs at byte %zu", g->file,
				     g->index, k);
		cr_assert_eq(roce_build(&pkt, buf, g->len - 1), 0, "must not overrun cap");
		/* The copy is a record too: parse(build(parse(x))) == parse(x). */
		struct roce_pkt again;
		cr_assert_eq(roce_parse(buf, n, &again), ROCE_DROP_NONE);
		again.payload = pkt.payload;
		const char *diff = pkt_diff(&again, &pkt);
		cr_assert_null(diff, "%s #%u: %s differs after rebuild", g->file, g->index, diff);
	}
	free(buf);
}

Test(golden, format_line_names_the_fields)
{
	char line[512];

	for (size_t i = 0; i < golden_nframes; i++) {
		struct roce_pkt pkt;
		cr_assert_eq(roce_parse(golden_frames[i].data, golden_frames[i].len, &pkt), ROCE_DROP_NONE);
		int n = roce_pkt_format(&pkt, line, sizeof(line));
		cr_assert_lt((size_t)n, sizeof(line));
		cr_assert_eq((size_t)n, strlen(line));
		cr_assert_not_null(strstr(line, roce_opcode_desc(pkt.opcode)->name));
		char want[32];
		snprintf(want, sizeof(want), "psn 0x%06x", pkt.psn);
		cr_assert_not_null(strstr(line, want), "%s", line);
		if (roce_pkt_has(&pkt, ROCE_HDR_RETH)) {
			snprintf(want, sizeof(want), "rkey 0x%08x", pkt.reth.rkey);
			cr_assert_not_null(strstr(line, want), "%s", line);
		}
		if (roce_pkt_has(&pkt, ROCE_HDR_AETH))
			cr_assert_not_null(strstr(line, "ACK"), "%s", line);
		/* Truncated output stays terminated and reports the full length. */
		char small[16];
		cr_assert_eq(roce_pkt_format(&pkt, small, sizeof(small)), n);
		cr_assert_eq(strlen(small), sizeof(small) - 1);
	}
}
