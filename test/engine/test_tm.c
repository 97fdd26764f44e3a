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
	m[1] = m[2] = m[3] = 'c';
	cr_expect_eq(xport_tmh_parse(m, 16, &h), 0, "reserved bytes are ignored (as mlx5)");
	cr_expect_eq(h.tag, 0x0102030405060708ull);
	m[1] = m[2] = m[3] = 0;
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

/* ---- a TM SRQ's ops ring (xport_srq_tm_poll), as the shim fills it ---- */

#include <stdlib.h>

#include "xport.h"

#define OPS 8u  /* ops ring slots */
#define CQES 4u /* CQ slots */

static struct xport_tm st;
static struct xport_srq srq;
static struct xport_cq cq;
static uint32_t released[4];
static struct xport_out *out;

static void
ops_setup(void)
{
	struct spsc_ring *ops = aligned_alloc(64, spsc_ring_bytes(OPS, sizeof(struct tm_op_wqe)));
	struct spsc_ring *cqr = aligned_alloc(64, spsc_ring_bytes(CQES, sizeof(struct cqe)));

	cr_assert(ops && cqr);
	cr_assert_eq(spsc_ring_init(ops, OPS, sizeof(struct tm_op_wqe)), 0);
	cr_assert_eq(spsc_ring_init(cqr, CQES, sizeof(struct cqe)), 0);
	cr_assert_eq(xport_tm_init(&st, 4), 0);
	memset(released, 0, sizeof(released));
	st.released = released;
	cq = (struct xport_cq){ .ring = cqr, .size = CQES, .handle = 7 };
	srq = (struct xport_srq){ .tm = &st, .tm_ops = ops, .tm_ops_size = OPS, .tm_max_sge = 2,
				  .cq = &cq, .handle = 9 };
	out = calloc(1, sizeof(*out));
	cr_assert_not_null(out);
}

static void
ops_teardown(void)
{
	xport_tm_fini(&st);
	free(srq.tm_ops);
	free(cq.ring);
	free(out);
}

/* Post one operation into the ops ring (the shim's side). */
static void
post(uint32_t opcode, uint32_t flags, uint32_t handle, uint64_t tag, uint32_t num_sge,
     uint64_t wr_id)
{
	struct tm_op_wqe *w = spsc_ring_prod_slot(srq.tm_ops, 0);

	memset(w, 0, sizeof(*w));
	w->opcode = opcode;
	w->flags = flags;
	w->handle = handle;
	w->tag = tag;
	w->mask = ~0ull;
	w->num_sge = num_sge;
	w->wr_id = wr_id;
	w->recv_wr_id = wr_id + 1000;
	for (uint32_t i = 0; i < num_sge && i < WQE_MAX_SGE; i++)
		w->sg_list[i] = (struct wr_sge){ 0x1000 * (i + 1), 64, 5 };
	spsc_ring_publish(srq.tm_ops, 1);
}

/* The next completion of the SRQ's CQ; false if there is none. */
static bool
reap(struct cqe *c)
{
	if (spsc_ring_count(cq.ring) == 0)
		return false;
	*c = *(struct cqe *)spsc_ring_cons_slot(cq.ring, 0);
	spsc_ring_release(cq.ring, 1);
	return true;
}

TestSuite(tm_ops, .init = ops_setup, .fini = ops_teardown, .timeout = 10);

Test(tm_ops, add_del_and_sync_apply_at_the_shims_index_and_complete_on_the_cq)
{
	uint8_t m[64];
	struct xport_tmh h;
	struct xport_tm_entry hit;
	struct cqe c;

	post(TM_OP_ADD, TM_OP_SIGNALED, 2, 0x11, 1, 1);
	post(TM_OP_ADD, 0, 0, 0x22, 0, 2); /* unsignaled: no completion */
	cr_assert_eq(xport_srq_tm_poll(&srq, 16, out), 2);
	cr_assert(reap(&c));
	cr_assert_eq(c.opcode, WC_TM_ADD);
	cr_assert_eq(c.status, WC_SUCCESS);
	cr_assert_eq(c.wr_id, 1);
	cr_assert_not(reap(&c));
	cr_assert_eq(st.n, 2);
	cr_assert_eq(spsc_ring_free_count(srq.tm_ops), OPS, "the ops are given back");
	/* the entry at index 2 matches 0x11 first (posting order), with its SGE and wr_id */
	cr_assert_eq(xport_tm_match(&st, m, msg(m, XPORT_TMH_EAGER, 0x11, 64), &h, &hit),
		     XPORT_TM_EAGER);
	cr_assert_eq(hit.wr_id, 1001);
	cr_assert_eq(hit.num_sge, 1);
	cr_assert_eq(hit.sg[0].addr, 0x1000);
	cr_assert_eq(released[2], 1, "a match releases the index to the shim");
	cr_assert_eq(released[0], 0);
	/* DEL of index 0 works once; again (or of the matched 2) it is a TM_ERR */
	post(TM_OP_DEL, TM_OP_SIGNALED, 0, 0, 0, 3);
	post(TM_OP_DEL, 0, 0, 0, 0, 4);
	post(TM_OP_DEL, 0, 2, 0, 0, 5);
	cr_assert_eq(xport_srq_tm_poll(&srq, 16, out), 3);
	cr_assert(reap(&c));
	cr_assert_eq(c.opcode, WC_TM_DEL);
	cr_assert_eq(c.status, WC_SUCCESS);
	cr_assert_eq(c.wr_id, 3);
	for (uint64_t id = 4; id <= 5; id++) {
		cr_assert(reap(&c), "a failed operation completes though unsignaled");
		cr_assert_eq(c.opcode, WC_TM_DEL);
		cr_assert_eq(c.status, WC_TM_ERR);
		cr_assert_eq(c.wr_id, id);
	}
	cr_assert_eq(released[0], 1);
	cr_assert_eq(st.n, 0);
	/* an unexpected message: out of sync, an ADD asks for a SYNC; the count syncs */
	cr_assert_eq(xport_tm_match(&st, m, msg(m, XPORT_TMH_EAGER, 0x33, 64), &h, NULL),
		     XPORT_TM_UNEXPECTED);
	post(TM_OP_ADD, TM_OP_SIGNALED, 1, 0x33, 0, 6);
	post(TM_OP_SYNC, TM_OP_SIGNALED | TM_OP_SYNC_CNT, 0, 0, 0, 7);
	cr_assert_eq(xport_srq_tm_poll(&srq, 16, out), 2);
	cr_assert(reap(&c));
	cr_assert_eq(c.opcode, WC_TM_ADD);
	cr_assert_eq(c.wc_flags, WC_FLAG_TM_SYNC_REQ);
	cr_assert_not(xport_tm_synced(&st));
	/* unexpected_cnt 0 != 1: still out of sync; the right count brings matching back */
	cr_assert(reap(&c));
	cr_assert_eq(c.opcode, WC_TM_SYNC);
	cr_assert_not(xport_tm_synced(&st));
	struct tm_op_wqe *w = spsc_ring_prod_slot(srq.tm_ops, 0);
	post(TM_OP_SYNC, TM_OP_SYNC_CNT, 0, 0, 0, 8);
	w->unexpected_cnt = 1;
	cr_assert_eq(xport_srq_tm_poll(&srq, 16, out), 1);
	cr_assert_not(reap(&c), "an unsignaled SYNC completes nothing");
	cr_assert(xport_tm_synced(&st));
	cr_assert_eq(xport_tm_match(&st, m, msg(m, XPORT_TMH_EAGER, 0x33, 64), &h, NULL),
		     XPORT_TM_EAGER);
}

Test(tm_ops, nothing_the_client_writes_is_trusted)
{
	struct cqe c;

	/* an index past the list, a live index, too many SGEs, an unknown opcode */
	post(TM_OP_ADD, 0, 4, 0x1, 0, 1);
	post(TM_OP_ADD, 0, 0xffffffffu, 0x1, 0, 2);
	post(TM_OP_ADD, 0, 1, 0x1, 0, 3);
	post(TM_OP_ADD, 0, 1, 0x1, 0, 4);
	post(TM_OP_ADD, 0, 3, 0x1, 3, 5);         /* tm_max_sge is 2 */
	post(TM_OP_ADD, 0, 3, 0x1, 0xffffffffu, 6);
	post(TM_OP_DEL, 0, 0x10001, 0, 0, 7);     /* index 1 with a "generation": no such handle */
	post(77, TM_OP_SIGNALED, 0, 0, 0, 8);
	cr_assert_eq(xport_srq_tm_poll(&srq, 16, out), 8);
	uint64_t failed[] = { 1, 2, 4, 5, 6, 7 };
	for (unsigned i = 0; i < 4; i++) { /* the CQ holds 4: the rest overrun it */
		cr_assert(reap(&c));
		cr_assert_eq(c.wr_id, failed[i]);
		cr_assert_eq(c.status, WC_TM_ERR);
	}
	cr_assert_not(reap(&c));
	cr_assert(cq.overflowed, "completions past the CQ overrun it");
	cr_assert_eq(out->nevents, 1);
	cr_assert_eq(out->events[0].code, ASYNC_CQ_ERR);
	cr_assert_eq(out->events[0].handle, 7);
	cr_assert_eq(srq.tm_bad_ops, 1, "the unknown opcode is counted, not completed");
	cr_assert_eq(st.n, 1, "only the ADD at index 1 went in");
	cr_assert_eq(released[1], 0, "the refused second ADD at a live index is not released");
	cr_assert_eq(released[3], 2, "an ADD refused for its SGEs releases its index");
	cr_assert_eq(released[0] + released[2], 0);
	/* a producer index far ahead: at most the ring's size is read, nothing outside it */
	__atomic_store_n(&srq.tm_ops->prod, srq.tm_ops->cons + 1000, __ATOMIC_RELEASE);
	cr_assert_eq(xport_srq_tm_poll(&srq, 1000, out), OPS);
	/* budget */
	__atomic_store_n(&srq.tm_ops->prod, srq.tm_ops->cons + 5, __ATOMIC_RELEASE);
	cr_assert_eq(xport_srq_tm_poll(&srq, 2, out), 2);
	/* not a TM SRQ: nothing read */
	srq.tm = NULL;
	cr_assert_eq(xport_srq_tm_poll(&srq, 16, out), 0);
}

Test(tm, a_list_with_client_chosen_indices_refuses_engine_handles)
{
	uint32_t h;
	bool sync;

	cr_assert_eq(xport_tm_add_at(&t, 3, 1, ~0ull, 1, NULL, 0, &sync), 0);
	cr_assert_not(sync);
	cr_assert_eq(xport_tm_add(&t, 1, ~0ull, 1, NULL, 0, &h, NULL), EINVAL,
		     "by_index: no engine-chosen handles any more");
	cr_assert_eq(xport_tm_add_at(&t, 3, 1, ~0ull, 1, NULL, 0, NULL), EEXIST);
	cr_assert_eq(xport_tm_add_at(&t, 4, 1, ~0ull, 1, NULL, 0, NULL), EINVAL);
	cr_assert_eq(xport_tm_del(&t, 3), 0);
	cr_assert_eq(xport_tm_del(&t, 3), ENOENT);
	cr_assert_eq(xport_tm_add_at(&t, 3, 1, ~0ull, 1, NULL, 0, NULL), 0, "the index is reusable");
	cr_assert_eq(t.n, 1);
}
