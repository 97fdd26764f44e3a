/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tag matching lists and verdicts (lib/xport xport_tm.h): the TMH/RVH
 * wire layout, posting-order matching under masks, a match consuming its
 * entry, DEL of a consumed entry failing, a full list, and the phase
 * synchronisation of ibv_post_srq_ops(3) as pyverbs test_tag_matching
 * drives it (an unexpected message turns matching off until a SYNC
 * reports it handled).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "xport_tm.h"

/* A tagged message as test_tag_matching.py builds it (big-endian fields). */
static uint32_t
msg(uint8_t *m, uint8_t op, uint64_t tag, uint32_t len)
{
	memset(m, 'c', len);
	memset(m, 0, 16);
	m[0] = op;
	m[4] = 0xa1, m[5] = 0xb2, m[6] = 0xc3, m[7] = 0xd4; /* app_ctx */
	for (int i = 0; i < 8; i++)
		m[8 + i] = (uint8_t)(tag >> (56 - 8 * i));
	return len;
}

static struct xport_tm t;

static void
setup(void)
{
	cr_assert_eq(xport_tm_init(&t, 4), 0);
}

static void
teardown(void)
{
	xport_tm_fini(&t);
}

TestSuite(tm, .init = setup, .fini = teardown, .timeout = 10);

Test(tm, headers_are_parsed_big_endian_and_checked)
{
	uint8_t m[64];
	struct xport_tmh h;

	msg(m, XPORT_TMH_RNDV, 0x0102030405060708ull, 64);
	for (int i = 0; i < 8; i++)
		m[16 + i] = (uint8_t)(0x10 + i);
	m[24] = 0xde, m[25] = 0xad, m[26] = 0xbe, m[27] = 0xef;
	m[28] = 0, m[29] = 0, m[30] = 0x04, m[31] = 0x00;
	cr_assert_eq(xport_tmh_parse(m, 64, &h), 0);
	cr_expect_eq(h.op, XPORT_TMH_RNDV);
	cr_expect_eq(h.app_ctx, 0xa1b2c3d4u);
	cr_expect_eq(h.tag, 0x0102030405060708ull);
	cr_expect_eq(h.va, 0x1011121314151617ull);
	cr_expect_eq(h.rkey, 0xdeadbeefu);
	cr_expect_eq(h.len, 1024u);
	cr_expect_eq(xport_tmh_parse(m, 31, &h), -EINVAL, "RNDV without its RVH");
	m[0] = XPORT_TMH_EAGER;
	cr_expect_eq(xport_tmh_parse(m, 16, &h), 0, "EAGER: the TMH alone");
	cr_expect_eq(xport_tmh_parse(m, 15, &h), -EINVAL);
	m[2] = 1;
	cr_expect_eq(xport_tmh_parse(m, 16, &h), -EINVAL, "reserved bytes");
	m[2] = 0;
	m[0] = 4;
	cr_expect_eq(xport_tmh_parse(m, 16, &h), -EINVAL, "unknown opcode");
}

Test(tm, tags_match_in_posting_order_under_their_masks_and_are_consumed)
{
	struct wr_sge sg = { .addr = 0x1000, .length = 256, .lkey = 7 };
	struct xport_tm_entry hit;
	struct xport_tmh h;
	uint32_t h1, h2, h3;
	bool sync_req = true;
	uint8_t m[64];

	cr_assert_eq(xport_tm_add(&t, 0x12, 0xff, 101, &sg, 1, &h1, &sync_req), 0);
	cr_expect_not(sync_req);
	cr_assert_eq(xport_tm_add(&t, 0x1200, 0xff00, 102, &sg, 1, &h2, NULL), 0);
	cr_assert_eq(xport_tm_add(&t, 0x12, 0xff, 103, &sg, 1, &h3, NULL), 0);
	/* 0x1212 matches entries 1 (low byte) and 2 (high byte): the older wins */
	cr_assert_eq(xport_tm_match(&t, m, msg(m, XPORT_TMH_EAGER, 0x1212, 64), &h, &hit),
		     XPORT_TM_EAGER);
	cr_expect_eq(hit.wr_id, 101);
	cr_expect_eq(hit.sg[0].addr, 0x1000);
	cr_expect_eq(h.tag, 0x1212);
	cr_expect_eq(xport_tm_del(&t, h1), ENOENT, "consumed");
	cr_assert_eq(xport_tm_match(&t, m, msg(m, XPORT_TMH_EAGER, 0x1212, 64), &h, &hit),
		     XPORT_TM_EAGER);
	cr_expect_eq(hit.wr_id, 102);
	cr_assert_eq(xport_tm_del(&t, h3), 0);
	cr_expect_eq(xport_tm_del(&t, h3), ENOENT, "deleted already");
	cr_expect_eq(t.n, 0u);
	cr_expect(xport_tm_synced(&t), "nothing was unexpected");
	/* a reused slot does not answer to its old handle */
	cr_assert_eq(xport_tm_add(&t, 1, ~0ull, 104, NULL, 0, &h2, NULL), 0);
	cr_expect_eq(xport_tm_del(&t, h1), ENOENT);
	cr_expect_eq(xport_tm_del(&t, h3), ENOENT);
}

Test(tm, a_full_list_and_bad_sges_are_refused)
{
	uint32_t h;

	for (int i = 0; i < 4; i++)
		cr_assert_eq(xport_tm_add(&t, (uint64_t)i, ~0ull, (uint64_t)i, NULL, 0, &h, NULL), 0);
	cr_expect_eq(xport_tm_add(&t, 9, ~0ull, 9, NULL, 0, &h, NULL), ENOSPC);
	cr_expect_eq(xport_tm_add(&t, 9, ~0ull, 9, NULL, WQE_MAX_SGE + 1, &h, NULL), EINVAL);
	cr_expect_eq(xport_tm_del(&t, 0xffff), ENOENT, "an index past the list");
	struct xport_tm big;

	cr_expect_eq(xport_tm_init(&big, 0), EINVAL);
	cr_expect_eq(xport_tm_init(&big, XPORT_TM_MAX_TAGS + 1), EINVAL);
}

Test(tm, no_tag_and_fin_and_headerless_sends_are_plain_receives)
{
	struct xport_tmh h;
	uint8_t m[64];
	uint32_t hd;

	cr_assert_eq(xport_tm_add(&t, 0x1234, ~0ull, 1, NULL, 0, &hd, NULL), 0);
	cr_expect_eq(xport_tm_match(&t, m, msg(m, XPORT_TMH_NO_TAG, 0x1234, 64), &h, NULL),
		     XPORT_TM_NO_TAG, "NO_TAG never matches, even an equal tag");
	cr_expect_eq(xport_tm_match(&t, m, msg(m, XPORT_TMH_FIN, 0x1234, 64), &h, NULL),
		     XPORT_TM_NO_TAG);
	cr_expect_eq(xport_tm_match(&t, m, 8, &h, NULL), XPORT_TM_NO_TAG, "shorter than a TMH");
	cr_expect_eq(t.n, 1u, "the entry is still there");
	cr_expect(xport_tm_synced(&t));
}

/* test_tm_unexpected_tag: tags 1..9 posted, tag 0x1234 sent, then SYNC with the count. */
Test(tm, an_unexpected_message_stops_matching_until_software_syncs)
{
	struct xport_tm_entry hit;
	struct xport_tmh h;
	bool sync_req = false;
	uint8_t m[64];
	uint32_t hd;

	cr_assert_eq(xport_tm_add(&t, 1, 0xffff, 1, NULL, 0, &hd, NULL), 0);
	cr_assert_eq(xport_tm_add(&t, 2, 0xffff, 2, NULL, 0, &hd, NULL), 0);
	cr_expect_eq(xport_tm_match(&t, m, msg(m, XPORT_TMH_EAGER, 0x1234, 64), &h, NULL),
		     XPORT_TM_UNEXPECTED);
	cr_expect_eq(t.unexp_hw, 1u);
	cr_expect_not(xport_tm_synced(&t));
	/* out of sync: a message that would match is unexpected too, an ADD asks for a sync */
	cr_expect_eq(xport_tm_match(&t, m, msg(m, XPORT_TMH_EAGER, 2, 64), &h, NULL),
		     XPORT_TM_UNEXPECTED);
	cr_expect_eq(t.unexp_hw, 2u);
	cr_assert_eq(xport_tm_add(&t, 3, 0xffff, 3, NULL, 0, &hd, &sync_req), 0);
	cr_expect(sync_req);
	xport_tm_sync(&t, 1); /* software handled one of the two */
	cr_expect_not(xport_tm_synced(&t));
	xport_tm_sync(&t, 2);
	cr_expect(xport_tm_synced(&t));
	cr_assert_eq(xport_tm_match(&t, m, msg(m, XPORT_TMH_RNDV, 2, 64), &h, &hit),
		     XPORT_TM_RNDV, "matching is back");
	cr_expect_eq(hit.wr_id, 2);
	cr_expect_eq(t.n, 2u);
}

/*
 * The completions test_tag_matching.py checks (verify_cqe: wr_id, opcode,
 * wc_flags, ibv_wc_read_tm_info().tag): a tag only where the message matched.
 */
Test(tm, receive_completions_carry_what_test_tag_matching_reads)
{
	struct wr_sge sg = { .addr = 0x1000, .length = 256, .lkey = 7 };
	struct xport_tm_entry hit;
	struct xport_tmh h;
	struct cqe c;
	uint8_t m[64];
	uint32_t hd;

	/* EAGER: the entry's wr_id, MATCH | DATA_VALID, the tag, the payload after the TMH */
	cr_assert_eq(xport_tm_add(&t, 5, 0xffff, 55, &sg, 1, &hd, NULL), 0);
	cr_assert_eq(xport_tm_match(&t, m, msg(m, XPORT_TMH_EAGER, 5, 64), &h, &hit),
		     XPORT_TM_EAGER);
	c = (struct cqe){ .wr_id = 999, .tm_tag = 1, .imm_data = 1, .wc_flags = WC_FLAG_GRH };
	xport_tm_recv_cqe(&c, XPORT_TM_EAGER, XPORT_TM_CQE_ARRIVED, &h, &hit, 64);
	cr_expect_eq(c.wr_id, 55);
	cr_expect_eq(c.opcode, WC_TM_RECV);
	cr_expect_eq(c.wc_flags, WC_FLAG_TM_MATCH | WC_FLAG_TM_DATA_VALID);
	cr_expect_eq(c.tm_tag, 5);
	cr_expect_eq(c.imm_data, 0xa1b2c3d4u, "app_ctx");
	cr_expect_eq(c.byte_len, 64 - XPORT_TMH_LEN);

	/* RNDV: MATCH with the tag first, then DATA_VALID without it */
	cr_assert_eq(xport_tm_add(&t, 6, 0xffff, 66, &sg, 1, &hd, NULL), 0);
	msg(m, XPORT_TMH_RNDV, 6, 64);
	m[28] = 0, m[29] = 0, m[30] = 0x04, m[31] = 0x00; /* rvh.len 1024 */
	cr_assert_eq(xport_tm_match(&t, m, 32, &h, &hit), XPORT_TM_RNDV);
	c = (struct cqe){ .wr_id = 999 };
	xport_tm_recv_cqe(&c, XPORT_TM_RNDV, XPORT_TM_CQE_ARRIVED, &h, &hit, 32);
	cr_expect_eq(c.wr_id, 66);
	cr_expect_eq(c.opcode, WC_TM_RECV);
	cr_expect_eq(c.wc_flags, WC_FLAG_TM_MATCH);
	cr_expect_eq(c.tm_tag, 6);
	cr_expect_eq(c.byte_len, 0, "no data yet");
	c = (struct cqe){ .wr_id = 999, .tm_tag = 1 };
	xport_tm_recv_cqe(&c, XPORT_TM_RNDV, XPORT_TM_CQE_RNDV_DONE, &h, &hit, 32);
	cr_expect_eq(c.wr_id, 66);
	cr_expect_eq(c.opcode, WC_TM_RECV);
	cr_expect_eq(c.wc_flags, WC_FLAG_TM_DATA_VALID);
	cr_expect_eq(c.tm_tag, 0, "test_tm_rndv expects tag 0 on the data completion");
	cr_expect_eq(c.byte_len, 1024);

	/* UNEXPECTED and NO_TAG: the SRQ receive's wr_id, no flags, no tag, the whole message */
	cr_assert_eq(xport_tm_match(&t, m, msg(m, XPORT_TMH_EAGER, 0x1234, 64), &h, NULL),
		     XPORT_TM_UNEXPECTED);
	c = (struct cqe){ .wr_id = 7, .tm_tag = 1, .imm_data = 1 };
	xport_tm_recv_cqe(&c, XPORT_TM_UNEXPECTED, XPORT_TM_CQE_ARRIVED, &h, NULL, 64);
	cr_expect_eq(c.wr_id, 7);
	cr_expect_eq(c.opcode, WC_TM_RECV);
	cr_expect_eq(c.wc_flags, 0);
	cr_expect_eq(c.tm_tag, 0);
	cr_expect_eq(c.imm_data, 0);
	cr_expect_eq(c.byte_len, 64);
	cr_assert_eq(xport_tm_match(&t, m, msg(m, XPORT_TMH_NO_TAG, 0x1234, 64), &h, NULL),
		     XPORT_TM_NO_TAG);
	c = (struct cqe){ .wr_id = 8 };
	xport_tm_recv_cqe(&c, XPORT_TM_NO_TAG, XPORT_TM_CQE_ARRIVED, &h, NULL, 64);
	cr_expect_eq(c.wr_id, 8);
	cr_expect_eq(c.opcode, WC_TM_NO_TAG);
	cr_expect_eq(c.wc_flags, 0);
	cr_expect_eq(c.tm_tag, 0);
	cr_expect_eq(c.byte_len, 64);
}

Test(tm, operation_completions_report_errors_and_sync_requests)
{
	struct cqe c;

	xport_tm_op_cqe(&c, WC_TM_ADD, 3, 0, true);
	cr_expect_eq(c.wr_id, 3);
	cr_expect_eq(c.status, WC_SUCCESS);
	cr_expect_eq(c.opcode, WC_TM_ADD);
	cr_expect_eq(c.wc_flags, WC_FLAG_TM_SYNC_REQ);
	xport_tm_op_cqe(&c, WC_TM_ADD, 3, 0, false);
	cr_expect_eq(c.wc_flags, 0);
	xport_tm_op_cqe(&c, WC_TM_DEL, 4, ENOENT, false);
	cr_expect_eq(c.status, WC_TM_ERR, "DEL of a consumed entry");
	cr_expect_eq(c.opcode, WC_TM_DEL);
	xport_tm_op_cqe(&c, WC_TM_SYNC, 27, 0, false);
	cr_expect_eq(c.status, WC_SUCCESS);
	cr_expect_eq(c.opcode, WC_TM_SYNC);
	cr_expect_eq(c.tm_tag, 0);
}
