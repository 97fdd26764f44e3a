/* SPDX-License-Identifier: BSD-3-Clause */
/* PSN arithmetic, UDP source port, timer encodings, CRC-32, Internet checksum, drop reason
 * names. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "ref_csum.h"
#include "roce.h"
#include "../../lib/roce/roce_internal.h"

Test(psn, compare_across_wrap)
{
	cr_expect_eq(roce_psn_cmp(5, 5), 0);
	cr_expect_lt(roce_psn_cmp(4, 5), 0);
	cr_expect_gt(roce_psn_cmp(6, 5), 0);
	/* 0xffffff is just before 0 and 0 just after 0xffffff. */
	cr_expect_lt(roce_psn_cmp(0xffffff, 0), 0);
	cr_expect_gt(roce_psn_cmp(0, 0xffffff), 0);
	cr_expect_gt(roce_psn_cmp(0x000010, 0xfffff0), 0);
	cr_expect_lt(roce_psn_cmp(0xfffff0, 0x000010), 0);
	/* Half the space ahead is "after", half behind is "before". */
	cr_expect_gt(roce_psn_cmp(0x7fffff, 0), 0);
	cr_expect_lt(roce_psn_cmp(0x800001, 0), 0);
	cr_expect_lt(roce_psn_cmp(0x800000, 0), 0);   /* exactly 2^23: sign bit set */
	/* Bits above 24 are ignored. */
	cr_expect_eq(roce_psn_cmp(0x1000005, 5), 0);
	for (uint32_t base = 0xfffff8; base != 0x000008; base = (base + 1) & ROCE_PSN_MASK)
		for (uint32_t d = 1; d < 16; d++) {
			uint32_t next = roce_psn_add(base, d);
			cr_assert_gt(roce_psn_cmp(next, base), 0, "%06x vs %06x", next, base);
			cr_assert_lt(roce_psn_cmp(base, next), 0);
			cr_assert_eq(roce_psn_diff(next, base), d);
		}
	cr_expect_eq(roce_psn_add(0xffffff, 1), 0);
	cr_expect_eq(roce_psn_add(0xfffffe, 5), 3);
	cr_expect_eq(roce_psn_diff(2, 0xfffffe), 4);
	cr_expect_eq(roce_psn_diff(0xfffffe, 2), 0xfffffc);
}

/*
 * Expected values worked out by hand from include/rdma/ib_verbs.h:
 *   v = lqpn * rqpn; v ^= v >> 20; v ^= v >> 40; fl = v & 0xfffff
 *   sport = ((fl & 0x3fff) ^ ((fl & 0xfc000) >> 14)) | 0xc000
 */
Test(sport, kernel_formula_known_values)
{
	/* 0x11 * 0x12 = 0x132: fl 0x132, sport 0xc132 (rc_send_pingpong.pcap has 49458). */
	cr_expect_eq(roce_flow_label_from_qpns(0x11, 0x12), 0x132);
	cr_expect_eq(roce_udp_sport(0, 0x11, 0x12), 0xc132);
	cr_expect_eq(roce_udp_sport(0, 0x12, 0x11), 0xc132);
	/* 0x12 * 0x13 = 0x156 -> 0xc156 = 49494 (rc_write_4k.pcap, QPNs 0x12/0x13). */
	cr_expect_eq(roce_udp_sport(0, 0x12, 0x13), 49494);
	/* 0x800001 * 3 = 0x1800003; ^ (>> 20 = 0x18) = 0x180001b; & 0xfffff = 0x1b. */
	cr_expect_eq(roce_flow_label_from_qpns(0x800001, 3), 0x1b);
	cr_expect_eq(roce_udp_sport(0, 3, 0x800001), 0xc01b);
	/* 0xffffff^2 = 0xfffffe000001; ^ (>> 20 = 0xfffffe0) = 0xfffff1ffffe1;
	 * ^ (>> 40 = 0xff) = 0xfffff1ffff1e; fl = 0xfff1e;
	 * sport = (0x3f1e ^ (0xfc000 >> 14 = 0x3f)) | 0xc000 = 0xff21. */
	cr_expect_eq(roce_flow_label_from_qpns(0xffffff, 0xffffff), 0xfff1e);
	cr_expect_eq(roce_udp_sport(0, 0xffffff, 0xffffff), 0xff21);
	/* Flow label given: folded directly. 0x12345 -> 0x2345 ^ 0x4 = 0x2341 | 0xc000. */
	cr_expect_eq(roce_flow_label_to_udp_sport(0x12345), 0xe341);
	cr_expect_eq(roce_udp_sport(0x12345, 0x11, 0x12), 0xe341);
	cr_expect_eq(roce_flow_label_to_udp_sport(0xfffff), 0xffc0);
	cr_expect_eq(roce_flow_label_to_udp_sport(0), 0xc000);
	/* Always in the RoCE entropy range and symmetric. */
	for (uint32_t a = 1; a < 0x1000000; a = a * 7 + 3)
		for (uint32_t b = 1; b < 0x1000000; b = b * 13 + 1) {
			uint16_t s = roce_udp_sport(0, a & 0xffffff, b & 0xffffff);
			cr_assert_geq(s, 0xc000);
			cr_assert_eq(s, roce_udp_sport(0, b & 0xffffff, a & 0xffffff));
		}
}

/* Table of IBTA Vol. 1 9.7.5.2.8 in milliseconds, as the spec prints it. */
static const char *const rnr_spec_ms[32] = {
	"655.36", "0.01", "0.02", "0.03", "0.04", "0.06", "0.08", "0.12",
	"0.16", "0.24", "0.32", "0.48", "0.64", "0.96", "1.28", "1.92",
	"2.56", "3.84", "5.12", "7.68", "10.24", "15.36", "20.48", "30.72",
	"40.96", "61.44", "81.92", "122.88", "163.84", "245.76", "327.68", "491.52",
};

Test(timers, rnr_table_matches_ibta)
{
	for (uint8_t code = 0; code < 32; code++) {
		char got[16];
		uint32_t us = roce_rnr_timer_usec(code);
		snprintf(got, sizeof(got), "%u.%02u", us / 1000, (us % 1000) / 10);
		cr_expect_str_eq(got, rnr_spec_ms[code], "code %u: %u us", code, us);
		cr_expect_eq(us % 10, 0);
	}
	cr_expect_eq(roce_rnr_timer_usec(25), 61440);   /* not rxe's 61410 */
	cr_expect_eq(roce_rnr_timer_usec(0), 655360);
	cr_expect_eq(roce_rnr_timer_usec(32), 0);
}

Test(timers, ack_timeout)
{
	cr_expect_eq(roce_ack_timeout_nsec(0), 0);               /* infinite */
	cr_expect_eq(roce_ack_timeout_nsec(1), 8192);            /* 8.192 us */
	cr_expect_eq(roce_ack_timeout_nsec(8), 1048576);         /* 1.05 ms */
	cr_expect_eq(roce_ack_timeout_nsec(14), 67108864);       /* 67.1 ms */
	cr_expect_eq(roce_ack_timeout_nsec(18), 1073741824);     /* 1.07 s */
	cr_expect_eq(roce_ack_timeout_nsec(31), UINT64_C(8796093022208)); /* 8796 s */
	for (uint8_t t = 1; t < 31; t++)
		cr_expect_eq(roce_ack_timeout_nsec(t + 1), 2 * roce_ack_timeout_nsec(t));
	cr_expect_eq(roce_ack_timeout_nsec(32), 0);
}

Test(timers, mtu_enum)
{
	cr_expect_eq(roce_mtu_bytes(1), 256);
	cr_expect_eq(roce_mtu_bytes(3), 1024);
	cr_expect_eq(roce_mtu_bytes(5), 4096);
	cr_expect_eq(roce_mtu_bytes(0), 0);
	cr_expect_eq(roce_mtu_bytes(6), 0);
}

Test(crc, matches_zlib_and_chains)
{
	uint8_t buf[9000];
	unsigned seed = 12345;

	for (size_t i = 0; i < sizeof(buf); i++) {
		seed = seed * 1103515245 + 12345;
		buf[i] = (uint8_t)(seed >> 16);
	}
	/* The CRC-32 check value of "123456789". */
	cr_expect_eq(roce_crc32(0, "123456789", 9), 0xcbf43926);
	cr_expect_eq(roce_crc32(0, buf, 0), 0);
	for (size_t len = 0; len < sizeof(buf); len = len * 3 + 1) {
		uint32_t z = (uint32_t)crc32(0, buf, (uInt)len);
		cr_assert_eq(roce_crc32(0, buf, len), z, "len %zu", len);
		for (size_t cut = 0; cut <= len; cut += len / 7 + 1)
			cr_assert_eq(roce_crc32(roce_crc32(0, buf, cut), buf + cut, len - cut), z,
				     "len %zu cut %zu", len, cut);
	}
	uint8_t ff[8];
	memset(ff, 0xff, sizeof(ff));
	cr_expect_eq(roce_crc32(0, ff, 8), ROCE_ICRC_SEED);
	cr_expect_eq((uint32_t)crc32(0, ff, 8), ROCE_ICRC_SEED);
	/* rxe's seed is the raw register value, i.e. the complement. */
	cr_expect_eq(~ROCE_ICRC_SEED, 0xdebb20e3);
}

Test(csum, matches_byte_loop_at_every_length_and_alignment)
{
	uint8_t buf[1100];
	uint32_t seed = 12345;

	for (size_t i = 0; i < sizeof(buf); i++) {
		seed = seed * 1103515245u + 12345u;
		buf[i] = (uint8_t)(seed >> 16);
	}
	memset(buf + 600, 0xff, 300); /* long runs of all-ones words: many end-around carries */
	for (size_t off = 0; off < 4; off++)
		for (size_t len = 0; len + off <= sizeof(buf); len += len < 80 ? 1 : 37)
			for (uint32_t sum = 0; sum <= 0x1ffff; sum += 0xfffe) {
				uint32_t want = ref_csum16(buf + off, len, sum);
				uint32_t got = roce_csum_add(sum, buf + off, len);
				cr_assert_eq(roce_csum_fold(got), roce_csum_fold(want),
					     "off %zu len %zu sum %#x: %#x != %#x", off, len, sum, got,
					     want);
				cr_assert_leq(got, 0xffffu);
			}
	/* A header that sums to all ones verifies as 0xffff (roce_parse's IPv4 check). */
	uint8_t ip[20] = { 0x45, 0, 0, 60, 0x12, 0x34, 0x40, 0, 64, 17, 0, 0, 198, 18, 0, 1,
			   198, 18, 0, 2 };
	uint16_t c = (uint16_t)~ref_csum16(ip, sizeof(ip), 0);
	ip[10] = (uint8_t)(c >> 8);
	ip[11] = (uint8_t)c;
	cr_expect_eq(roce_csum_fold(roce_csum_add(0, ip, sizeof(ip))), 0xffff);
	cr_expect_eq(roce_ipv4_hdr_sum(ip), 0xffff);
}

/* The IPv4 header sum without a loop is the byte loop's, on random headers and all-ones runs. */
Test(csum, ipv4_header_sum_matches_byte_loop)
{
	uint8_t h[20];
	uint32_t seed = 777;

	for (int round = 0; round < 200000; round++) {
		for (size_t i = 0; i < sizeof(h); i++) {
			seed = seed * 1103515245u + 12345u;
			h[i] = (uint8_t)(seed >> 16);
		}
		if (round % 7 == 0)
			memset(h, 0xff, (size_t)(round / 7) % 21); /* end-around carries */
		if (round % 11 == 0)
			memset(h + (round / 11) % 20, 0, 20 - (size_t)(round / 11) % 20);
		uint16_t want = ref_csum16(h, sizeof(h), 0);
		uint16_t got = roce_ipv4_hdr_sum(h);

		cr_assert_eq(got, want, "round %d: %#x != %#x", round, got, want);
	}
	memset(h, 0xff, sizeof(h));
	cr_assert_eq(roce_ipv4_hdr_sum(h), 0xffff);
}

Test(drop, names_unique_and_complete)
{
	for (int r = 0; r < ROCE_DROP_COUNT; r++) {
		cr_assert_not_null(roce_drop_reason_name(r));
		cr_assert_not_null(roce_drop_reason_str(r));
		cr_expect_gt(strlen(roce_drop_reason_str(r)), 5);
		for (int s = 0; s < r; s++)
			cr_expect_str_neq(roce_drop_reason_name(r), roce_drop_reason_name(s));
	}
	cr_expect_str_eq(roce_drop_reason_name(ROCE_DROP_ICRC), "ICRC");
	cr_expect_str_eq(roce_drop_reason_str(ROCE_DROP_NONE), "accepted");
	cr_expect_str_eq(roce_drop_reason_name(ROCE_DROP_COUNT), "UNKNOWN");
}
