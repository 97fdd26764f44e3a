/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tag matching rendezvous (issue 19 step 3) between two simulated engines:
 * host 0 is the sender (a plain RC QP with an RQ, as pyverbs'
 * test_tag_matching client), host 1 the receiver, its QP on an SRQ with a
 * TM list. A matched RNDV completes MATCH, host 1's own requester READs
 * rvh.len bytes from host 0 into the entry, then sends a FIN (a SEND of a
 * TMH FIN) that lands in host 0's receive, and the entry completes
 * DATA_VALID; the internal WQEs never reach host 1's send CQ nor its SQ
 * ring (its application's sends go on as before). Unmatched: to software
 * (the SRQ's receive). A READ the sender refuses: the entry completes with
 * that error and host 1's QP goes to error. rvh.len past the entry: a
 * local length error. No room in the send shadow: RNR.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "xport_tm.h"

static struct sim S;
static struct collect K;
static struct capture C;
static struct xport_tm T;

#define SRC_OFF 65536u   /* host 0: the rendezvous data */
#define HDR_OFF 0u       /* host 0: the RNDV message (TMH + RVH) */
#define FIN_OFF 4096u    /* host 0: the receive the FIN lands in */
#define DST_OFF 131072u  /* host 1: the entry's buffers */

static void
start(uint32_t sq_size)
{
	struct sim_params p;

	sim_default_params(&p);
	p.srq = true;
	if (sq_size)
		p.sq_size = sq_size;
	cr_assert_eq(sim_init(&S, &p, 7), 0);
	capture_attach(&S, &C);
	collect_init(&K);
	cr_assert_eq(xport_tm_init(&T, 8), 0);
	S.h[1].srq.tm = &T;
}

static void
setup(void)
{
	start(0);
}

static void
teardown(void)
{
	collect_fini(&K);
	sim_fini(&S);
	xport_tm_fini(&T);
}

TestSuite(tm_rndv, .init = setup, .fini = teardown, .timeout = 60);

static void
be(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
}

/*
 * Host 0 sends an RNDV for @p tag (app_ctx 0xa1b2c3d4) whose RVH names
 * [va, va + len) of its arena under @p rkey, after posting a receive for
 * the FIN (wr_id 50 + @p tag).
 */
static void
send_rndv(uint64_t tag, uint64_t va, uint32_t rkey, uint32_t len)
{
	uint8_t *m = S.h[0].arena + HDR_OFF;
	struct rq_wqe r = rwqe_new(50 + tag, sim_va(&S, 0, FIN_OFF), 64, S.h[0].arena_key);
	struct sq_wqe w = wqe_new(WR_SEND, 100 + tag, WR_FLAG_SIGNALED);

	memset(m, 0xee, 64); /* 64 bytes, as max_rndv_hdr_size: the rest is not placed */
	memset(m, 0, XPORT_TMH_LEN + XPORT_RVH_LEN);
	m[0] = XPORT_TMH_RNDV;
	be(m + 4, 0xa1b2c3d4, 4);
	be(m + 8, tag, 8);
	be(m + 16, va, 8);
	be(m + 24, rkey, 4);
	be(m + 28, len, 4);
	cr_assert(sim_post_recv(&S, 0, &r));
	wqe_add_sge(&w, sim_va(&S, 0, HDR_OFF), 64, S.h[0].arena_key);
	cr_assert(sim_post_send(&S, 0, &w));
}

#define SGE0 1000u /* an entry's first SGE: DST_OFF, SGE0 bytes; the second at DST_OFF + 8192 */

/* An entry of @p len (> SGE0) bytes for @p tag over host 1's arena, in two SGEs. */
static void
add(uint64_t tag, uint64_t wr_id, uint32_t len)
{
	struct wr_sge sg[2] = {
		{ sim_va(&S, 1, DST_OFF), SGE0, S.h[1].arena_key },
		{ sim_va(&S, 1, DST_OFF + 8192), len - SGE0, S.h[1].arena_key },
	};
	uint32_t h;

	cr_assert_eq(xport_tm_add(&T, tag, ~0ull, wr_id, sg, 2, &h, NULL), 0);
}

static bool
entry_holds(uint32_t len, uint64_t id)
{
	uint8_t *got = malloc(len);
	bool ok;

	memcpy(got, S.h[1].arena + DST_OFF, SGE0);
	memcpy(got + SGE0, S.h[1].arena + DST_OFF + 8192, len - SGE0);
	ok = check_fill(got, len, id) == -1;
	free(got);
	return ok;
}

static const uint64_t *
cnt(int h)
{
	return xport_qp_counters(S.h[h].qp);
}

/* Run until nothing is left to happen; the CQEs in K. */
static void
settle(void)
{
	sim_run(&S, never_done, &K, S.now + 2ull * 1000 * 1000 * 1000);
	collect_drain(&S, &K);
}

static void
assert_fin(const struct cqe *c, uint64_t tag)
{
	const uint8_t *f = S.h[0].arena + FIN_OFF;

	cr_assert_eq(c->status, WC_SUCCESS);
	cr_assert_eq(c->opcode, WC_RECV);
	cr_assert_eq(c->wr_id, 50 + tag);
	cr_assert_eq(c->byte_len, XPORT_TMH_LEN, "the FIN is a TMH");
	cr_assert_eq(f[0], XPORT_TMH_FIN);
	cr_assert_eq(f[1] | f[2] | f[3], 0);
	cr_assert_eq(f[4], 0xa1);
	cr_assert_eq(f[7], 0xd4, "the RNDV's app_ctx");
	for (int i = 0; i < 8; i++)
		cr_assert_eq(f[8 + i], (uint8_t)(tag >> (56 - 8 * i)), "tag byte %d", i);
}

Test(tm_rndv, a_match_reads_the_data_then_sends_a_fin)
{
	const uint32_t len = 3000; /* three READ responses at MTU 1024 */

	fill(S.h[0].arena + SRC_OFF, len, 1);
	add(7, 17, 4000);
	send_rndv(7, sim_va(&S, 0, SRC_OFF), S.h[0].arena_key, len);
	settle();
	/* host 1: MATCH, then DATA_VALID; nothing on its send CQ */
	cr_assert_eq(K.n[1][1], 2);
	const struct cqe *m = &K.c[1][1][0], *d = &K.c[1][1][1];
	cr_assert_eq(m->status, WC_SUCCESS);
	cr_assert_eq(m->opcode, WC_TM_RECV);
	cr_assert_eq(m->wc_flags, WC_FLAG_TM_MATCH);
	cr_assert_eq(m->wr_id, 17);
	cr_assert_eq(m->tm_tag, 7);
	cr_assert_eq(m->imm_data, 0xa1b2c3d4);
	cr_assert_eq(d->status, WC_SUCCESS);
	cr_assert_eq(d->opcode, WC_TM_RECV);
	cr_assert_eq(d->wc_flags, WC_FLAG_TM_DATA_VALID);
	cr_assert_eq(d->wr_id, 17);
	cr_assert_eq(d->tm_tag, 0, "DATA_VALID carries no tag (as mlx5)");
	cr_assert_eq(d->byte_len, len);
	cr_assert_eq(K.n[1][0], 0, "the internal READ and FIN complete nothing on the send CQ");
	cr_assert(entry_holds(len, 1));
	cr_assert_eq(S.h[1].arena[DST_OFF + 8192 + (len - SGE0)], 0, "nothing past rvh.len");
	/* host 0: its SEND, then the FIN in its receive */
	cr_assert_eq(K.n[0][0], 1);
	cr_assert_eq(K.c[0][0][0].status, WC_SUCCESS);
	cr_assert_eq(K.c[0][0][0].wr_id, 107);
	cr_assert_eq(K.n[0][1], 1);
	assert_fin(&K.c[0][1][0], 7);
	/* on the wire: one READ request from host 1, served by host 0's responder */
	cr_assert_eq(capture_count(&C, 1, ROCE_OP_RC_RDMA_READ_REQUEST), 1);
	cr_assert_eq(capture_count(&C, 0, ROCE_OP_RC_RDMA_READ_RESPONSE_FIRST), 1);
	cr_assert_eq(capture_count(&C, 0, ROCE_OP_RC_RDMA_READ_RESPONSE_LAST), 1);
	cr_assert_eq(capture_count(&C, 1, ROCE_OP_RC_SEND_ONLY), 1, "the FIN");
	cr_assert_eq(cnt(1)[XPORT_CNT_TM_RNDV], 1);
	cr_assert_eq(T.n, 0);
	cr_assert(xport_tm_synced(&T));
	/* host 1's SQ ring saw none of it */
	cr_assert_eq(spsc_ring_cons_index(S.h[1].sq), 0);
	cr_assert_eq(xport_qp_sq_fetched(S.h[1].qp), 0);
	cr_assert_eq(xport_qp_state(S.h[1].qp), XPORT_STATE_RTS);
}

/* The ring index and the shadow index part: the application's sends still complete as theirs. */
Test(tm_rndv, the_applications_sends_interleave_with_rendezvous)
{
	const uint32_t len = 1500;

	for (uint64_t i = 0; i < 3; i++) {
		struct sq_wqe w = wqe_new(WR_SEND, 900 + i, WR_FLAG_SIGNALED);
		struct rq_wqe r = rwqe_new(700 + i, sim_va(&S, 0, 200000), 1024, S.h[0].arena_key);

		fill(S.h[0].arena + SRC_OFF, len, 10 + i);
		add(20 + i, 30 + i, 2048);
		send_rndv(20 + i, sim_va(&S, 0, SRC_OFF), S.h[0].arena_key, len);
		/* host 1's own send, posted while the rendezvous runs */
		wqe_add_sge(&w, sim_va(&S, 1, 500000), 32, S.h[1].arena_key);
		cr_assert(sim_post_recv(&S, 0, &r));
		sim_poll(&S);
		cr_assert(sim_post_send(&S, 1, &w));
		settle();
		cr_assert(entry_holds(len, 10 + i), "rendezvous %u", (unsigned)i);
		cr_assert_eq(K.n[1][0], i + 1, "one send CQE per application send");
		cr_assert_eq(K.c[1][0][i].wr_id, 900 + i);
		cr_assert_eq(K.c[1][0][i].opcode, WC_SEND);
		cr_assert_eq(K.c[1][0][i].status, WC_SUCCESS);
		cr_assert_eq(K.n[1][1], 2 * (i + 1));
		cr_assert_eq(K.c[1][1][2 * i + 1].wc_flags, WC_FLAG_TM_DATA_VALID);
		cr_assert_eq(K.c[1][1][2 * i + 1].wr_id, 30 + i);
		cr_assert_eq(spsc_ring_cons_index(S.h[1].sq), i + 1, "the ring gets its slot back");
	}
	cr_assert_eq(K.n[0][1], 6, "three FINs, three sends of host 1");
	cr_assert_eq(xport_qp_state(S.h[1].qp), XPORT_STATE_RTS);
}

Test(tm_rndv, without_a_match_the_rendezvous_goes_to_software)
{
	struct rq_wqe r = rwqe_new(12, sim_va(&S, 1, 300000), 256, S.h[1].arena_key);

	add(7, 17, 4000);
	cr_assert(sim_post_recv(&S, 1, &r));
	send_rndv(8, sim_va(&S, 0, SRC_OFF), S.h[0].arena_key, 3000);
	settle();
	cr_assert_eq(K.n[1][1], 1);
	cr_assert_eq(K.c[1][1][0].opcode, WC_TM_RECV);
	cr_assert_eq(K.c[1][1][0].wc_flags, 0);
	cr_assert_eq(K.c[1][1][0].wr_id, 12);
	cr_assert_eq(K.c[1][1][0].byte_len, 64, "the whole message, headers and all");
	cr_assert_eq(memcmp(S.h[1].arena + 300000, S.h[0].arena + HDR_OFF, 64), 0);
	cr_assert_eq(capture_count(&C, 1, ROCE_OP_RC_RDMA_READ_REQUEST), 0);
	cr_assert_eq(K.n[0][1], 0, "no FIN");
	cr_assert_eq(T.n, 1);
	cr_assert_eq(T.unexp_hw, 1);
}

Test(tm_rndv, a_read_the_sender_refuses_fails_the_entry_and_the_qp)
{
	add(7, 17, 4000);
	send_rndv(7, sim_va(&S, 0, SRC_OFF), S.h[0].arena_key ^ 0x100, 3000);
	settle();
	cr_assert_eq(K.n[1][1], 2);
	cr_assert_eq(K.c[1][1][0].wc_flags, WC_FLAG_TM_MATCH);
	cr_assert_eq(K.c[1][1][1].status, WC_REM_ACCESS_ERR);
	cr_assert_eq(K.c[1][1][1].opcode, WC_TM_RECV);
	cr_assert_eq(K.c[1][1][1].wr_id, 17);
	cr_assert_eq(K.n[1][0], 0, "no send CQE, not even flushed ones");
	cr_assert_eq(xport_qp_state(S.h[1].qp), XPORT_STATE_ERR);
	cr_assert_eq(capture_count(&C, 1, ROCE_OP_RC_SEND_ONLY), 0, "no FIN");
	cr_assert_eq(capture_count(&C, 0, ROCE_OP_RC_RDMA_READ_RESPONSE_FIRST), 0);
	for (uint32_t i = 0; i < SGE0; i++)
		cr_assert_eq(S.h[1].arena[DST_OFF + i], 0, "byte %u", i);
}

/* The READ starts at the sender's range: a range past its region is the sender's access error. */
Test(tm_rndv, a_read_past_the_senders_region_is_refused)
{
	add(7, 17, 4000);
	send_rndv(7, sim_va(&S, 0, S.h[0].arena_len - 100), S.h[0].arena_key, 3000);
	settle();
	cr_assert_eq(K.n[1][1], 2);
	cr_assert_eq(K.c[1][1][1].status, WC_REM_ACCESS_ERR);
	cr_assert_eq(xport_qp_state(S.h[1].qp), XPORT_STATE_ERR);
}

Test(tm_rndv, a_rendezvous_longer_than_its_entry_is_a_local_length_error)
{
	add(7, 17, 2999);
	send_rndv(7, sim_va(&S, 0, SRC_OFF), S.h[0].arena_key, 3000);
	settle();
	cr_assert_eq(K.n[1][1], 1);
	cr_assert_eq(K.c[1][1][0].status, WC_LOC_LEN_ERR);
	cr_assert_eq(K.c[1][1][0].opcode, WC_TM_RECV);
	cr_assert_eq(K.c[1][1][0].wr_id, 17);
	cr_assert_eq(T.n, 0, "the entry is consumed");
	cr_assert_eq(capture_count(&C, 1, ROCE_OP_RC_RDMA_READ_REQUEST), 0);
	cr_assert_eq(K.n[0][0], 1);
	cr_assert_eq(K.c[0][0][0].status, WC_REM_INV_REQ_ERR);
	cr_assert_eq(K.n[1][0], 0);
	for (uint32_t i = 0; i < SGE0; i++)
		cr_assert_eq(S.h[1].arena[DST_OFF + i], 0, "byte %u", i);
}

/*
 * A send shadow of one slot held by the application's send (host 0 has no
 * receive for it: RNR): the RNDV is RNR too, the list untouched; once the
 * receives are there both go through.
 */
Test(tm_rndv, no_room_for_the_read_is_rnr_until_there_is)
{
	const uint32_t len = 2000;
	struct sq_wqe w = wqe_new(WR_SEND, 900, WR_FLAG_SIGNALED);
	struct rq_wqe r = rwqe_new(700, sim_va(&S, 0, 200000), 1024, S.h[0].arena_key);

	teardown();
	start(1); /* host 1's send shadow: one slot */
	fill(S.h[0].arena + SRC_OFF, len, 5);
	add(7, 17, 4000);
	wqe_add_sge(&w, sim_va(&S, 1, 500000), 100, S.h[1].arena_key);
	cr_assert(sim_post_send(&S, 1, &w));
	sim_run(&S, never_done, &K, S.now + 1000 * 1000);
	cr_assert_gt(cnt(1)[XPORT_CNT_RNR_NAK_RX], 0, "host 1's send waits for a receive");
	/* the RNDV's FIN receive would take host 1's send: post the RNDV alone first */
	uint8_t *m = S.h[0].arena + HDR_OFF;
	memset(m, 0, 64);
	m[0] = XPORT_TMH_RNDV;
	be(m + 8, 7, 8);
	be(m + 16, sim_va(&S, 0, SRC_OFF), 8);
	be(m + 24, S.h[0].arena_key, 4);
	be(m + 28, len, 4);
	struct sq_wqe s = wqe_new(WR_SEND, 107, WR_FLAG_SIGNALED);
	wqe_add_sge(&s, sim_va(&S, 0, HDR_OFF), 64, S.h[0].arena_key);
	cr_assert(sim_post_send(&S, 0, &s));
	sim_run(&S, never_done, &K, S.now + 1000 * 1000);
	cr_assert_gt(cnt(0)[XPORT_CNT_RNR_NAK_RX], 0, "the RNDV is RNR");
	cr_assert_eq(T.n, 1, "the entry stays");
	cr_assert_eq(K.n[1][1], 0);
	cr_assert_eq(cnt(1)[XPORT_CNT_TM_RNDV], 0);
	/* receives for host 1's send and the FIN */
	cr_assert(sim_post_recv(&S, 0, &r));
	r.wr_id = 701;
	cr_assert(sim_post_recv(&S, 0, &r));
	settle();
	cr_assert_eq(K.n[1][0], 1);
	cr_assert_eq(K.c[1][0][0].wr_id, 900);
	cr_assert_eq(K.n[1][1], 2);
	cr_assert_eq(K.c[1][1][0].wc_flags, WC_FLAG_TM_MATCH);
	cr_assert_eq(K.c[1][1][1].wc_flags, WC_FLAG_TM_DATA_VALID);
	cr_assert(entry_holds(len, 5));
	cr_assert_eq(K.n[0][1], 2);
	cr_assert_eq(K.n[0][0], 1);
	cr_assert_eq(K.c[0][0][0].status, WC_SUCCESS);
	cr_assert_eq(T.n, 0);
}
