/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target for roce_parse() and roce_classify(). Besides "no crash, no out-of-bounds
 * read" (ASan), every accepted frame must satisfy the record's invariants
 * and rebuild (roce_build) into a frame that parses to the same record.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "roce.h"

#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "invariant failed: %s\n", #cond); abort(); } } while (0)

static uint8_t rebuilt[1 << 17];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct roce_pkt pkt, again;
	char line[512];

	enum roce_drop_reason r = roce_parse(data, size, &pkt);
	CHECK(r < ROCE_DROP_COUNT);
	CHECK(roce_drop_reason_name(r) != NULL);
	enum roce_drop_reason r2 = roce_parse_no_icrc(data, size, &pkt);
	/* Without the ICRC check only the ICRC reason can go away. */
	CHECK(r2 == r || (r == ROCE_DROP_ICRC && r2 == ROCE_DROP_NONE));
	/* roce_classify(): a RoCE frame gets roce_parse()'s verdict and record. */
	enum roce_drop_reason rc = ROCE_DROP_COUNT;
	enum roce_class cls = roce_classify(data, size, 0, &again, &rc);
	CHECK(rc < ROCE_DROP_COUNT);
	CHECK(r != ROCE_DROP_NONE || (cls == ROCE_CLASS_ROCE && rc == ROCE_DROP_NONE));
	CHECK(cls != ROCE_CLASS_ROCE || rc == r);
	CHECK(cls == ROCE_CLASS_ROCE || cls == ROCE_CLASS_MALFORMED || rc == ROCE_DROP_NONE);
	if (cls == ROCE_CLASS_ROCE && rc == ROCE_DROP_NONE)
		CHECK(again.dest_qpn == pkt.dest_qpn && again.psn == pkt.psn &&
		      again.payload == pkt.payload && again.frame_len == pkt.frame_len);
	if (r2 != ROCE_DROP_NONE)
		return 0;

	const struct roce_opcode_desc *d = roce_opcode_desc(pkt.opcode);
	CHECK(d != NULL && pkt.hdrs == d->hdrs);
	CHECK(pkt.frame_len <= size);
	CHECK(pkt.payload >= data + pkt.bth_offset + d->hdr_len);
	CHECK(pkt.payload + pkt.payload_len + pkt.pad + ROCE_ICRC_LEN == data + pkt.frame_len);
	CHECK(pkt.dest_qpn <= ROCE_QPN_MASK && pkt.psn <= ROCE_PSN_MASK && pkt.tver == 0);
	roce_pkt_format(&pkt, line, sizeof(line));

	size_t n = roce_build(&pkt, rebuilt, sizeof(rebuilt));
	CHECK(n == pkt.frame_len);
	CHECK(roce_parse(rebuilt, n, &again) == ROCE_DROP_NONE);
	CHECK(again.opcode == pkt.opcode && again.psn == pkt.psn &&
	      again.dest_qpn == pkt.dest_qpn && again.payload_len == pkt.payload_len &&
	      memcmp(again.payload, pkt.payload, pkt.payload_len) == 0 &&
	      memcmp(&again.l3.sgid, &pkt.l3.sgid, 16) == 0);
	/* Bytes outside the record (pad, CNP reserved, IPv4 checksum -0) aside,
	 * the rebuild is the original: check the headers up to the BTH. */
	CHECK(memcmp(rebuilt, data, pkt.l3_offset) == 0);
	CHECK(memcmp(rebuilt + pkt.bth_offset, data + pkt.bth_offset, ROCE_BTH_LEN) == 0);
	return 0;
}
