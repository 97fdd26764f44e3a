/* SPDX-License-Identifier: BSD-3-Clause */
/* RC through the simulated link: each operation on a clean link, then the
 * targeted NAK / RNR / retry / duplicate rules with hooks on the link. */
#include <criterion/criterion.h>

#include "util.h"
#include "xport_internal.h"

static struct sim S;
static struct collect K;

/* Both hosts with the default parameters changed by @p tweak (may be NULL). */
static void
setup_sim(void (*tweak)(struct sim_params *))
{
	struct sim_params p;
	sim_default_params(&p);
	if (tweak)
		tweak(&p);
	cr_assert_eq(sim_init(&S, &p, 1), 0);
	collect_init(&K);
}

static void
teardown(void)
{
	collect_fini(&K);
	sim_fini(&S);
}

static void
setup_default(void)
{
	setup_sim(NULL);
}

/* A WQE of host @p h with one SGE (its arena at @p loff, @p len bytes) aimed
 * at the peer's arena at @p roff: RDMA or atomic by @p opcode. */
static struct sq_wqe
wqe_to_peer(int h, uint8_t opcode, uint64_t wr_id, uint32_t flags, uint64_t loff, uint32_t len,
	    uint64_t roff)
{
	struct sq_wqe w = wqe_new(opcode, wr_id, flags);
	wqe_add_sge(&w, sim_va(&S, h, loff), len, S.h[h].arena_key);
	if (opcode == WR_ATOMIC_FETCH_AND_ADD || opcode == WR_ATOMIC_CMP_AND_SWP) {
		w.wr.atomic.remote_addr = sim_va(&S, 1 - h, roff);
		w.wr.atomic.rkey = S.h[1 - h].arena_key;
	} else {
		w.wr.rdma.remote_addr = sim_va(&S, 1 - h, roff);
		w.wr.rdma.rkey = S.h[1 - h].arena_key;
	}
	return w;
}

/* Run until host 0 has @p n send completions (and what else K.want asks). */
static void
run_until_sent(uint32_t n)
{
	K.want[0][0] = n;
	cr_assert(sim_run(&S, collect_done, &K, SIM_DEADLINE_NS));
}

static const uint64_t *
cnt(int h)
{
	return xport_qp_counters(S.h[h].qp);
}

TestSuite(rc, .init = setup_default, .fini = teardown, .timeout = 30);

Test(rc, write_multi_packet_lands)
{
	uint32_t len = 10000; /* 10 packets at MTU 1024 */
	fill(S.h[0].arena, len, 7);
	struct sq_wqe w = wqe_to_peer(0, WR_RDMA_WRITE, 42, WR_FLAG_SIGNALED, 0, len, 4096);
	cr_assert(sim_post_send(&S, 0, &w));
	run_until_sent(1);
	cr_assert_eq(K.c[0][0][0].wr_id, 42);
	cr_assert_eq(K.c[0][0][0].status, WC_SUCCESS);
	cr_assert_eq(K.c[0][0][0].opcode, WC_RDMA_WRITE);
	cr_assert_eq(check_fill(S.h[1].arena + 4096, len, 7), -1);
	cr_assert_eq(cnt(0)[XPORT_CNT_TX_PKTS], 10);
	cr_assert_eq(S.frames_seg_mr, 10, "each packet's payload lies in the MR until the ACK");
	cr_assert_eq(cnt(0)[XPORT_CNT_RETRANSMIT_PKTS], 0);
	cr_assert_eq(K.n[1][1], 0, "a plain WRITE consumes no receive WQE");
	cr_assert_gt(cnt(1)[XPORT_CNT_ACK_TX], 0);
	cr_assert_eq(cnt(0)[XPORT_CNT_ACK_RX], cnt(1)[XPORT_CNT_ACK_TX],
		     "no loss: every ACK sent is received, the one that completes the WRITE too");
}

/*
 * An ACK that covers several WRITEs completes them in one xport_comp_rx():
 * their CQEs are staged and published together as it returns, in order,
 * none left unpublished, and the armed send CQ is signaled (once).
 */
/* Host 0's send WQEs hold one SGE or 16 inline bytes (xport_cfg.sq_max_sge 1). */
static void
one_sge(struct sim_params *p)
{
	p->sq_max_sge = 1;
}

static void
setup_one_sge(void)
{
	setup_sim(one_sge);
}

TestSuite(small_slots, .init = setup_one_sge, .fini = teardown, .timeout = 30);

/* What fits the QP's shadow slot goes out whole; a second SGE does not fit. */
Test(small_slots, one_sge_and_16_inline_bytes_fit_a_second_sge_does_not)
{
	fill(S.h[0].arena, 4096, 5);
	struct sq_wqe w = wqe_to_peer(0, WR_RDMA_WRITE, 1, WR_FLAG_SIGNALED, 0, 3000, 8192);
	cr_assert(sim_post_send(&S, 0, &w));
	struct sq_wqe in = wqe_new(WR_RDMA_WRITE, 2, WR_FLAG_SIGNALED | WR_FLAG_INLINE);
	in.inline_len = 16;
	memcpy(in.inline_data, S.h[0].arena + 3000, 16);
	in.wr.rdma.remote_addr = sim_va(&S, 1, 8192 + 3000);
	in.wr.rdma.rkey = S.h[1].arena_key;
	cr_assert(sim_post_send(&S, 0, &in));
	run_until_sent(2);
	cr_assert_eq(K.c[0][0][0].status, WC_SUCCESS);
	cr_assert_eq(K.c[0][0][1].status, WC_SUCCESS);
	cr_assert_eq(check_fill(S.h[1].arena + 8192, 3016, 5), -1);
	cr_assert_eq(S.frames_seg_mr, 3, "the SGE's three packets; not the inline one");

	struct sq_wqe two = wqe_to_peer(0, WR_RDMA_WRITE, 3, WR_FLAG_SIGNALED, 0, 100, 0);
	wqe_add_sge(&two, sim_va(&S, 0, 100), 100, S.h[0].arena_key);
	cr_assert(sim_post_send(&S, 0, &two));
	run_until_sent(3);
	cr_assert_eq(K.c[0][0][2].wr_id, 3);
	cr_assert_eq(K.c[0][0][2].status, WC_LOC_LEN_ERR);
	cr_assert_eq(xport_qp_state(S.h[0].qp), XPORT_STATE_ERR);
	cr_assert_eq(S.h[1].arena[0], 0, "nothing of it was sent");
}

Test(small_slots, seventeen_inline_bytes_do_not_fit)
{
	struct sq_wqe in = wqe_new(WR_SEND, 9, WR_FLAG_SIGNALED | WR_FLAG_INLINE);
	in.inline_len = 17;
	cr_assert(sim_post_send(&S, 0, &in));
	run_until_sent(1);
	cr_assert_eq(K.c[0][0][0].wr_id, 9);
	cr_assert_eq(K.c[0][0][0].status, WC_LOC_LEN_ERR);
	cr_assert_eq(cnt(0)[XPORT_CNT_TX_PKTS], 0);
}

/* Keeps only the ACK of PSN *arg off host 1's frames. */
static bool
only_ack_of(void *arg, int from, const struct roce_pkt *pkt)
{
	return from == 0 || pkt->opcode != ROCE_OP_RC_ACKNOWLEDGE || pkt->psn == *(uint32_t *)arg;
}

/*
 * The requester's PLAIN step (a one-packet RC SEND/WRITE or one-response
 * READ on an unpaced QP, xport_req.c) stands for CHECK_LIMITS, BUILD and
 * ADVANCE. Run the same
 * mix twice: unpaced (PLAIN takes the one-packet WQEs) and with a rate
 * limit (paced: every WQE takes the general steps). The requests on the
 * wire, the completions on both hosts and the requester's counters match.
 * The mix: WRITE, WRITE with immediate of 0 bytes, SEND solicited, SEND
 * with immediate, inline SEND, a WRITE of one MTU exactly, one of MTU + 1
 * (two packets: the general steps in both runs), a READ then a fenced
 * WRITE (the fence holds it until the READ completes); the second WRITE
 * unsignaled.
 */
#define PLAIN_MIX 10
#define PLAIN_CAP 64

struct plain_run {
	struct roce_pkt req[PLAIN_CAP];
	uint32_t n;
	struct cqe c[2][2][PLAIN_MIX];
	uint32_t nc[2][2];
	uint64_t cnt[XPORT_CNT_COUNT];
};

static bool
keep_requests(void *arg, int from, const struct roce_pkt *pkt)
{
	struct plain_run *r = arg;

	if (from == 0 && r->n < PLAIN_CAP)
		r->req[r->n++] = *pkt;
	return true;
}

static void
plain_run(struct plain_run *r, uint32_t rate_kbps)
{
	struct sim_params p;
	uint64_t mtu = 1024; /* sim_default_params: path MTU 3 */

	memset(r, 0, sizeof(*r));
	sim_default_params(&p);
	p.rate_limit_kbps = rate_kbps;
	cr_assert_eq(sim_init(&S, &p, 1), 0);
	collect_init(&K);
	S.filter = keep_requests;
	S.filter_arg = r;
	fill(S.h[0].arena, 3 * mtu, 5);
	for (uint64_t i = 0; i < 4; i++) { /* the SENDs and the WRITE with immediate */
		struct rq_wqe rw = rwqe_new(50 + i, sim_va(&S, 1, 0x10000 + i * 0x1000), 0x1000,
					    S.h[1].arena_key);
		cr_assert(sim_post_recv(&S, 1, &rw));
	}
	struct sq_wqe w[PLAIN_MIX] = {
		wqe_to_peer(0, WR_RDMA_WRITE, 1, WR_FLAG_SIGNALED, 0, 64, 0),
		wqe_to_peer(0, WR_RDMA_WRITE, 10, 0, 0, 64, 0x5000),
		wqe_new(WR_RDMA_WRITE_WITH_IMM, 2, WR_FLAG_SIGNALED),
		wqe_to_peer(0, WR_SEND, 3, WR_FLAG_SIGNALED | WR_FLAG_SOLICITED, 64, 100, 0),
		wqe_to_peer(0, WR_SEND_WITH_IMM, 4, WR_FLAG_SIGNALED, 0, 200, 0),
		wqe_new(WR_SEND, 5, WR_FLAG_SIGNALED | WR_FLAG_INLINE),
		wqe_to_peer(0, WR_RDMA_WRITE, 6, WR_FLAG_SIGNALED, 0, (uint32_t)mtu, 0x1000),
		wqe_to_peer(0, WR_RDMA_WRITE, 7, WR_FLAG_SIGNALED, 0, (uint32_t)mtu + 1, 0x2000),
		wqe_to_peer(0, WR_RDMA_READ, 8, WR_FLAG_SIGNALED, 0x8000, 64, 0x3000),
		wqe_to_peer(0, WR_RDMA_WRITE, 9, WR_FLAG_SIGNALED | WR_FLAG_FENCE, 0, 64, 0x4000),
	};
	w[2].wr.rdma.remote_addr = sim_va(&S, 1, 0);
	w[2].wr.rdma.rkey = S.h[1].arena_key;
	w[2].imm_data = 0x11223344;
	w[4].imm_data = 0x55667788;
	w[5].inline_len = 16;
	memset(w[5].inline_data, 0xab, 16);
	for (int i = 0; i < PLAIN_MIX; i++)
		cr_assert(sim_post_send(&S, 0, &w[i]));
	K.want[1][1] = 4;
	run_until_sent(PLAIN_MIX - 1); /* the second WRITE is unsignaled */
	for (int h = 0; h < 2; h++)
		for (int q = 0; q < 2; q++) {
			r->nc[h][q] = K.n[h][q];
			for (uint32_t i = 0; i < K.n[h][q] && i < PLAIN_MIX; i++)
				r->c[h][q][i] = K.c[h][q][i];
		}
	memcpy(r->cnt, cnt(0), sizeof(r->cnt));
	teardown();
}

Test(plain, plain_step_sends_what_the_general_steps_send, .timeout = 30)
{
	static struct plain_run a, b;

	plain_run(&a, 0);
	plain_run(&b, 100000000); /* 100 Gb/s: paced */
	cr_assert_eq(a.n, b.n, "%u requests unpaced, %u paced", a.n, b.n);
	cr_assert_eq(a.n, 11, "ten WQEs, one of two packets");
	for (uint32_t i = 0; i < a.n; i++) {
		const struct roce_pkt *x = &a.req[i], *y = &b.req[i];

		cr_assert_eq(x->opcode, y->opcode, "request %u", i);
		cr_assert_eq(x->psn, y->psn, "request %u", i);
		cr_assert_eq(x->dest_qpn, y->dest_qpn, "request %u", i);
		cr_assert_eq(x->ack_req, y->ack_req, "request %u", i);
		cr_assert_eq(x->se, y->se, "request %u", i);
		cr_assert_eq(x->pad, y->pad, "request %u", i);
		cr_assert_eq(x->payload_len, y->payload_len, "request %u", i);
		cr_assert_eq(x->hdrs, y->hdrs, "request %u", i);
		/* the extension headers the opcode has (no others are read) */
		if (roce_pkt_has(x, ROCE_HDR_RETH)) {
			cr_assert_eq(x->reth.va, y->reth.va, "request %u", i);
			cr_assert_eq(x->reth.rkey, y->reth.rkey, "request %u", i);
			cr_assert_eq(x->reth.length, y->reth.length, "request %u", i);
		}
		if (roce_pkt_has(x, ROCE_HDR_IMMDT))
			cr_assert_eq(x->imm, y->imm, "request %u", i);
		if (roce_pkt_has(x, ROCE_HDR_IETH))
			cr_assert_eq(x->ieth_rkey, y->ieth_rkey, "request %u", i);
		cr_assert_eq(x->l3.ip_id, y->l3.ip_id, "request %u", i);
	}
	for (int h = 0; h < 2; h++)
		for (int q = 0; q < 2; q++) {
			cr_assert_eq(a.nc[h][q], b.nc[h][q]);
			for (uint32_t i = 0; i < a.nc[h][q] && i < PLAIN_MIX; i++) {
				const struct cqe *x = &a.c[h][q][i], *y = &b.c[h][q][i];

				cr_assert_eq(x->wr_id, y->wr_id);
				cr_assert_eq(x->status, WC_SUCCESS);
				cr_assert_eq(x->status, y->status);
				cr_assert_eq(x->opcode, y->opcode);
				cr_assert_eq(x->byte_len, y->byte_len);
				cr_assert_eq(x->imm_data, y->imm_data);
			}
		}
	static const enum xport_counter same[] = {
		XPORT_CNT_TX_PKTS, XPORT_CNT_TX_BYTES, XPORT_CNT_RETRANSMIT_PKTS,
	};
	for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++)
		cr_assert_eq(a.cnt[same[i]], b.cnt[same[i]], "counter %s",
			     xport_counter_name(same[i]));
	cr_assert_eq(a.cnt[XPORT_CNT_RETRANSMIT_PKTS], 0);
	cr_assert_eq(a.cnt[XPORT_CNT_PACE_WAIT], 0);
	cr_assert_gt(b.cnt[XPORT_CNT_PACE_WAIT], 0, "the second run was paced");
}

Test(rc, coalesced_ack_publishes_its_cqes_together)
{
	uint32_t n = 8;
	static uint32_t last_psn;

	last_psn = (S.h[0].cfg.sq_psn + n - 1) & ROCE_PSN_MASK;
	S.filter = only_ack_of;
	S.filter_arg = &last_psn;
	S.h[0].scq.arm = &S.h[0].cq_arm;
	S.h[0].cq_arm = XPORT_CQ_ARM_NEXT;
	for (uint32_t i = 0; i < n; i++) {
		struct sq_wqe w = wqe_to_peer(0, WR_RDMA_WRITE, 100 + i, WR_FLAG_SIGNALED, 64 * i,
					      64, 4096 + 64 * i);
		cr_assert(sim_post_send(&S, 0, &w));
	}
	run_until_sent(n);
	cr_assert_eq(K.n[0][0], n);
	for (uint32_t i = 0; i < n; i++) {
		cr_assert_eq(K.c[0][0][i].wr_id, 100 + i);
		cr_assert_eq(K.c[0][0][i].status, WC_SUCCESS);
		cr_assert_eq(K.c[0][0][i].opcode, WC_RDMA_WRITE);
	}
	cr_assert_eq(cnt(0)[XPORT_CNT_ACK_RX], 1, "one ACK covered the WRITEs");
	cr_assert_eq(S.h[0].scq.staged, 0, "nothing left unpublished");
	cr_assert_eq(spsc_ring_count(S.h[0].scq_ring), 0, "all were published and taken");
	cr_assert_eq(S.h[0].notifies, 1, "the armed send CQ was signaled once");
	cr_assert_eq(S.h[0].cq_arm, XPORT_CQ_ARM_NONE);
}

Test(rc, send_with_imm_scatter)
{
	uint32_t len = 3000;
	fill(S.h[0].arena, len, 9);
	/* three receive SGEs */
	struct rq_wqe r = rwqe_new(5, sim_va(&S, 1, 100), 1000, S.h[1].arena_key);
	r.sg_list[1] = (struct wr_sge){ sim_va(&S, 1, 5000), 1500, S.h[1].arena_key };
	r.sg_list[2] = (struct wr_sge){ sim_va(&S, 1, 9000), 1000, S.h[1].arena_key };
	r.num_sge = 3;
	cr_assert(sim_post_recv(&S, 1, &r));
	struct sq_wqe w = wqe_new(WR_SEND_WITH_IMM, 1, WR_FLAG_SIGNALED | WR_FLAG_SOLICITED);
	wqe_add_sge(&w, sim_va(&S, 0, 0), 1234, S.h[0].arena_key);
	wqe_add_sge(&w, sim_va(&S, 0, 1234), len - 1234, S.h[0].arena_key);
	w.imm_data = 0xdeadbeef;
	S.h[1].cq_arm = XPORT_CQ_ARM_SOLICITED;
	cr_assert(sim_post_send(&S, 0, &w));
	K.want[1][1] = 1;
	run_until_sent(1);
	const struct cqe *rc = &K.c[1][1][0];
	cr_assert_eq(rc->wr_id, 5);
	cr_assert_eq(rc->status, WC_SUCCESS);
	cr_assert_eq(rc->opcode, WC_RECV);
	cr_assert_eq(rc->byte_len, len);
	cr_assert_eq(rc->wc_flags, WC_FLAG_WITH_IMM);
	cr_assert_eq(rc->imm_data, 0xdeadbeef);
	cr_assert_eq(rc->qp_num, S.h[1].cfg.qpn);
	cr_assert_eq(S.h[1].notifies, 1, "solicited completion signals the armed CQ");
	cr_assert_eq(S.h[1].cq_arm, 0);
	uint8_t got[3000];
	memcpy(got, S.h[1].arena + 100, 1000);
	memcpy(got + 1000, S.h[1].arena + 5000, 1500);
	memcpy(got + 2500, S.h[1].arena + 9000, 500);
	cr_assert_eq(check_fill(got, len, 9), -1);
}

/*
 * The payload in the header line (wqe.h WR_FLAG_HEAD_DATA, what the verbs
 * shim writes for a one-SGE or small inline WR): a WRITE, a READ and an
 * inline SEND carry it as from the SGE line, which holds poison here.
 */
static struct sq_wqe
to_head(struct sq_wqe w)
{
	if (w.send_flags & WR_FLAG_INLINE)
		memcpy(w.wr.rdma.head.inline_data, w.inline_data, w.inline_len);
	else
		w.wr.rdma.head.sge = w.sg_list[0];
	memset(w.sg_list, 0xa5, sizeof(w.sg_list));
	w.send_flags |= WR_FLAG_HEAD_DATA;
	return w;
}

Test(rc, a_payload_in_the_header_line_goes_out_as_from_the_sge_line)
{
	fill(S.h[0].arena, 3000, 4);
	fill(S.h[1].arena + 0x8000, 2000, 6);
	struct rq_wqe r = rwqe_new(5, sim_va(&S, 1, 0x4000), 64, S.h[1].arena_key);
	cr_assert(sim_post_recv(&S, 1, &r));
	struct sq_wqe in = wqe_new(WR_SEND, 3, WR_FLAG_SIGNALED | WR_FLAG_INLINE);
	in.inline_len = WQE_HEAD_INLINE;
	memcpy(in.inline_data, "sixteen bytes ok", WQE_HEAD_INLINE);
	struct sq_wqe w[] = {
		to_head(wqe_to_peer(0, WR_RDMA_WRITE, 1, WR_FLAG_SIGNALED, 0, 3000, 0x1000)),
		to_head(wqe_to_peer(0, WR_RDMA_READ, 2, WR_FLAG_SIGNALED, 0x2000, 2000, 0x8000)),
		to_head(in),
	};
	for (size_t i = 0; i < 3; i++)
		cr_assert(sim_post_send(&S, 0, &w[i]));
	K.want[1][1] = 1;
	run_until_sent(3);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(K.c[0][0][i].wr_id, (uint64_t)i + 1);
		cr_assert_eq(K.c[0][0][i].status, WC_SUCCESS, "WQE %d: status %u", i,
			     K.c[0][0][i].status);
	}
	cr_assert_eq(K.c[0][0][1].byte_len, 2000);
	cr_assert_eq(check_fill(S.h[1].arena + 0x1000, 3000, 4), -1, "the WRITE's bytes");
	cr_assert_eq(check_fill(S.h[0].arena + 0x2000, 2000, 6), -1, "the READ's bytes");
	cr_assert_eq(K.c[1][1][0].byte_len, WQE_HEAD_INLINE);
	cr_assert_eq(memcmp(S.h[1].arena + 0x4000, "sixteen bytes ok", WQE_HEAD_INLINE), 0,
		     "the SEND's inline bytes");
}

/*
 * WR_FLAG_HEAD_DATA where it does not belong fails the WQE and sends
 * nothing: on an atomic (whose fields fill the head), with two SGEs, with
 * more inline bytes than the head holds.
 */
Test(rc, a_misused_header_payload_flag_fails_the_wqe)
{
	static const struct {
		uint8_t opcode;
		uint8_t num_sge;
		uint16_t inline_len;
		uint32_t status;
	} bad[] = {
		{ WR_ATOMIC_FETCH_AND_ADD, 1, 0, WC_LOC_QP_OP_ERR },
		{ WR_RDMA_WRITE, 2, 0, WC_LOC_LEN_ERR },
		{ WR_SEND, 0, WQE_HEAD_INLINE + 1, WC_LOC_LEN_ERR },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (i > 0) {
			teardown();
			setup_default();
		}
		struct sq_wqe w = wqe_to_peer(0, bad[i].opcode, 7, WR_FLAG_SIGNALED, 0, 8, 64);

		w.send_flags |= WR_FLAG_HEAD_DATA;
		w.num_sge = bad[i].num_sge;
		if (bad[i].inline_len) {
			w.send_flags |= WR_FLAG_INLINE;
			w.inline_len = bad[i].inline_len;
		}
		cr_assert(sim_post_send(&S, 0, &w));
		run_until_sent(1);
		cr_assert_eq(K.c[0][0][0].status, bad[i].status, "case %zu: status %u", i,
			     K.c[0][0][0].status);
		cr_assert_eq(cnt(0)[XPORT_CNT_TX_PKTS], 0, "case %zu: nothing sent", i);
	}
}

Test(rc, read_multi_packet)
{
	uint32_t len = 5000;
	fill(S.h[1].arena + 8192, len, 3);
	struct sq_wqe w = wqe_to_peer(0, WR_RDMA_READ, 77, WR_FLAG_SIGNALED, 0, 2000, 8192);
	wqe_add_sge(&w, sim_va(&S, 0, 4000), 3000, S.h[0].arena_key);
	uint32_t psn0 = xport_qp_sq_psn(S.h[0].qp);
	cr_assert(sim_post_send(&S, 0, &w));
	run_until_sent(1);
	cr_assert_eq(K.c[0][0][0].status, WC_SUCCESS);
	cr_assert_eq(K.c[0][0][0].opcode, WC_RDMA_READ);
	cr_assert_eq(K.c[0][0][0].byte_len, len);
	uint8_t got[5000];
	memcpy(got, S.h[0].arena, 2000);
	memcpy(got + 2000, S.h[0].arena + 4000, 3000);
	cr_assert_eq(check_fill(got, len, 3), -1);
	cr_assert_eq(S.frames_seg_mr, 5, "the responses' payload lies in the responder's MR");
	/* IBTA 9.7.1.1: a READ of 5000 B at MTU 1024 uses 5 PSNs */
	cr_assert_eq(roce_psn_diff(xport_qp_sq_psn(S.h[0].qp), psn0), 5);
	cr_assert_eq(xport_qp_rq_psn(S.h[1].qp), roce_psn_add(psn0, 5));
}

Test(rc, atomics)
{
	uint64_t *slot = (uint64_t *)(void *)(S.h[1].arena + 64);
	*slot = 100;
	struct sq_wqe w = wqe_to_peer(0, WR_ATOMIC_FETCH_AND_ADD, 1, WR_FLAG_SIGNALED, 0, 8, 64);
	w.wr.atomic.compare_add = 5;
	cr_assert(sim_post_send(&S, 0, &w));
	w = wqe_to_peer(0, WR_ATOMIC_CMP_AND_SWP, 2, WR_FLAG_SIGNALED, 8, 8, 64);
	w.wr.atomic.compare_add = 105;
	w.wr.atomic.swap = 7;
	cr_assert(sim_post_send(&S, 0, &w));
	w.wr_id = 3; /* compare fails now (value is 7) */
	w.sg_list[0].addr = sim_va(&S, 0, 16);
	cr_assert(sim_post_send(&S, 0, &w));
	run_until_sent(3);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(K.c[0][0][i].status, WC_SUCCESS);
		cr_assert_eq(K.c[0][0][i].wr_id, (uint64_t)i + 1);
	}
	cr_assert_eq(K.c[0][0][0].opcode, WC_FETCH_ADD);
	cr_assert_eq(K.c[0][0][1].opcode, WC_COMP_SWAP);
	uint64_t *res = (uint64_t *)(void *)S.h[0].arena;
	cr_assert_eq(res[0], 100);
	cr_assert_eq(res[1], 105);
	cr_assert_eq(res[2], 7);
	cr_assert_eq(*slot, 7);
}

/* ---- requester / completer rules over the link ---- */

static struct capture CAP;

/* setup_sim() plus a capture on the link and a 10 us one-way delay. */
static void
setup_params(void (*tweak)(struct sim_params *))
{
	setup_sim(tweak);
	capture_attach(&S, &CAP);
	S.faults.delay_ns = 10000;
}

static void
post_write(int h, uint64_t wr_id, uint64_t loff, uint64_t roff, uint32_t len, uint32_t flags)
{
	struct sq_wqe w = wqe_to_peer(h, WR_RDMA_WRITE, wr_id, flags, loff, len, roff);
	cr_assert(sim_post_send(&S, h, &w));
}

static void
post_read(int h, uint64_t wr_id, uint64_t loff, uint64_t roff, uint32_t len)
{
	struct sq_wqe w = wqe_to_peer(h, WR_RDMA_READ, wr_id, WR_FLAG_SIGNALED, loff, len, roff);
	cr_assert(sim_post_send(&S, h, &w));
}

static void
post_send(int h, uint64_t wr_id, uint64_t loff, uint32_t len)
{
	struct sq_wqe w = wqe_new(WR_SEND, wr_id, WR_FLAG_SIGNALED);
	wqe_add_sge(&w, sim_va(&S, h, loff), len, S.h[h].arena_key);
	cr_assert(sim_post_send(&S, h, &w));
}

static void
retry3(struct sim_params *p)
{
	p->retry_cnt = 3;
}

Test(rc, retry_exhaustion_completes_with_error_and_flushes, .init = NULL)
{
	setup_params(retry3);
	CAP.drop[1] = true; /* the responder's answers never arrive */
	post_write(0, 1, 0, 0, 3000, WR_FLAG_SIGNALED);
	post_write(0, 2, 0, 4096, 100, 0);
	post_write(0, 3, 0, 8192, 100, WR_FLAG_SIGNALED);
	uint64_t t0 = S.now;
	run_until_sent(3);
	cr_assert_eq(K.c[0][0][0].wr_id, 1);
	cr_assert_eq(K.c[0][0][0].status, WC_RETRY_EXC_ERR);
	cr_assert_eq(K.c[0][0][0].vendor_err, XPORT_ERR_RETRY_EXC);
	/* flushed WRs complete even when unsignaled */
	cr_assert_eq(K.c[0][0][1].wr_id, 2);
	cr_assert_eq(K.c[0][0][1].status, WC_WR_FLUSH_ERR);
	cr_assert_eq(K.c[0][0][2].wr_id, 3);
	cr_assert_eq(K.c[0][0][2].status, WC_WR_FLUSH_ERR);
	cr_assert_eq(xport_qp_state(S.h[0].qp), XPORT_STATE_ERR);
	cr_assert_eq(S.h[0].qp_errors, 1);
	cr_assert_eq(cnt(0)[XPORT_CNT_RETRY_TIMEOUT], 4, "retry_cnt 3: the 4th timeout gives up");
	uint64_t t = roce_ack_timeout_nsec(S.h[0].cfg.timeout);
	cr_assert_geq(S.now - t0, 4 * t);
	cr_assert_eq(capture_count(&CAP, 0, ROCE_OP_RC_RDMA_WRITE_FIRST), 4, "sent + 3 retries");
}

static void
rnr2(struct sim_params *p)
{
	p->rnr_retry = 2;
	p->min_rnr_timer = 14; /* 1.28 ms */
}

Test(rc, rnr_retry_exhaustion_and_backoff, .init = NULL)
{
	setup_params(rnr2);
	post_send(0, 1, 0, 100);
	post_send(0, 2, 0, 100);
	run_until_sent(2);
	cr_assert_eq(K.c[0][0][0].status, WC_RNR_RETRY_EXC_ERR);
	cr_assert_eq(K.c[0][0][1].status, WC_WR_FLUSH_ERR);
	cr_assert_eq(cnt(0)[XPORT_CNT_RNR_NAK_RX], 3, "rnr_retry 2: the 3rd RNR NAK gives up");
	/* each resend waits at least the NAK's timer (IBTA 9.7.5.2.8) */
	uint64_t nak_at = 0;
	int checked = 0;
	for (uint32_t i = 0; i < CAP.n; i++) {
		if (CAP.from[i] == 1 && CAP.pkt[i].opcode == ROCE_OP_RC_ACKNOWLEDGE &&
		    (CAP.pkt[i].aeth.syndrome & ROCE_AETH_TYPE_MASK) == ROCE_AETH_RNR_NAK) {
			cr_assert_eq(CAP.pkt[i].aeth.syndrome & 0x1f, 14);
			nak_at = CAP.at[i] + S.faults.delay_ns;
		} else if (nak_at && CAP.from[i] == 0 && CAP.pkt[i].opcode == ROCE_OP_RC_SEND_ONLY) {
			cr_assert_geq(CAP.at[i] - nak_at, 1280000, "resent after %lu ns",
				      (unsigned long)(CAP.at[i] - nak_at));
			nak_at = 0;
			checked++;
		}
	}
	cr_assert_eq(checked, 2);
	cr_assert_eq(cnt(0)[XPORT_CNT_RNR_RETRY], 2, "one per resend after an RNR wait");
}

/*
 * The responder's view of the RQ producer index (xport_resp.c
 * recv_avail()): the receives it saw published are taken in order, and an
 * index the application moves behind the engine's consumer index posts
 * nothing (an RNR NAK). Read as unsigned, it was once a full ring of
 * stale slots.
 */
Test(rc, a_receive_index_behind_the_engines_posts_nothing, .init = NULL)
{
	setup_params(rnr2);
	for (uint32_t i = 0; i < 2; i++) {
		struct rq_wqe r = rwqe_new(10 + i, sim_va(&S, 1, 64 * i), 64, S.h[1].arena_key);

		cr_assert(sim_post_recv(&S, 1, &r));
	}
	post_send(0, 1, 0, 8);
	post_send(0, 2, 0, 8);
	K.want[1][1] = 2;
	run_until_sent(2);
	cr_assert_eq(K.c[1][1][0].wr_id, 10);
	cr_assert_eq(K.c[1][1][1].wr_id, 11);

	struct spsc_ring *rq = S.h[1].rq;

	__atomic_store_n(&rq->prod, spsc_ring_cons_index(rq) - 1, __ATOMIC_RELEASE);
	post_send(0, 3, 0, 8);
	K.want[1][1] = 0;
	run_until_sent(3);
	cr_assert_eq(K.c[0][0][2].status, WC_RNR_RETRY_EXC_ERR);
	cr_assert_eq(K.n[1][1], 2, "nothing received into a stale slot");
	cr_assert_eq(cnt(1)[XPORT_CNT_RNR_NAK_TX], 3, "rnr_retry 2: three RNR NAKs");
}

static void
rnr_inf(struct sim_params *p)
{
	p->rnr_retry = 7;
}

Test(rc, rnr_retry_7_is_infinite, .init = NULL)
{
	setup_params(rnr_inf);
	post_send(0, 1, 0, 100);
	K.want[0][0] = 1;
	cr_assert_not(sim_run(&S, collect_done, &K, S.now + 20000000));
	cr_assert_gt(cnt(0)[XPORT_CNT_RNR_NAK_RX], 50);
	cr_assert_eq(xport_qp_state(S.h[0].qp), XPORT_STATE_RTS);
	struct rq_wqe r = rwqe_new(9, sim_va(&S, 1, 0), 128, S.h[1].arena_key);
	cr_assert(sim_post_recv(&S, 1, &r));
	K.want[1][1] = 1;
	run_until_sent(1);
	cr_assert_eq(K.c[0][0][0].status, WC_SUCCESS);
	cr_assert_eq(K.c[1][1][0].wr_id, 9);
	cr_assert_eq(cnt(0)[XPORT_CNT_RNR_RETRY], cnt(0)[XPORT_CNT_RNR_NAK_RX],
		     "every RNR NAK was followed by a resend (the last one succeeded)");
}

Test(rc, remote_access_error_at_requester, .init = NULL)
{
	setup_params(NULL);
	/* unsignaled: errors complete anyway; runs past the MR */
	post_write(0, 1, 0, S.h[1].arena_len - 32, 64, 0);
	post_write(0, 2, 0, 0, 64, WR_FLAG_SIGNALED);
	run_until_sent(2);
	cr_assert_eq(K.c[0][0][0].wr_id, 1);
	cr_assert_eq(K.c[0][0][0].status, WC_REM_ACCESS_ERR);
	cr_assert_eq(K.c[0][0][1].status, WC_WR_FLUSH_ERR);
	cr_assert_eq(xport_qp_state(S.h[0].qp), XPORT_STATE_ERR);
	cr_assert_eq(xport_qp_state(S.h[1].qp), XPORT_STATE_ERR);
	cr_assert_eq(cnt(0)[XPORT_CNT_NAK_ACCESS_RX], 1);
}

Test(rc, invalid_request_and_op_error_at_requester, .init = NULL)
{
	setup_params(NULL);
	struct sq_wqe w = wqe_to_peer(0, WR_ATOMIC_FETCH_AND_ADD, 1, WR_FLAG_SIGNALED, 0, 8,
				      4); /* misaligned */
	cr_assert(sim_post_send(&S, 0, &w));
	run_until_sent(1);
	cr_assert_eq(K.c[0][0][0].status, WC_REM_INV_REQ_ERR);
	teardown();

	setup_params(NULL);
	struct rq_wqe r = rwqe_new(5, sim_va(&S, 1, 0), 64, 0x77700); /* bad lkey */
	cr_assert(sim_post_recv(&S, 1, &r));
	post_send(0, 1, 0, 16);
	K.want[1][1] = 1;
	run_until_sent(1);
	cr_assert_eq(K.c[0][0][0].status, WC_REM_OP_ERR);
	cr_assert_eq(K.c[1][1][0].status, WC_LOC_PROT_ERR);
}

static bool
drop_once(void *arg, int from, const struct roce_pkt *pkt)
{
	return capture_filter(arg, from, pkt);
}

Test(rc, go_back_n_on_sequence_nak, .init = NULL)
{
	setup_params(NULL);
	S.filter = drop_once;
	CAP.drop_op = ROCE_OP_RC_RDMA_WRITE_MIDDLE;
	CAP.drop_from = 0;
	CAP.drop_nth = 2;
	uint32_t len = 8 * 1024;
	fill(S.h[0].arena, len, 11);
	post_write(0, 1, 0, 65536, len, WR_FLAG_SIGNALED);
	run_until_sent(1);
	cr_assert_eq(K.c[0][0][0].status, WC_SUCCESS);
	cr_assert_eq(check_fill(S.h[1].arena + 65536, len, 11), -1);
	cr_assert_eq(cnt(1)[XPORT_CNT_NAK_SEQ_TX], 1);
	cr_assert_eq(cnt(0)[XPORT_CNT_RETRY_SEQ_NAK], 1);
	cr_assert_eq(cnt(0)[XPORT_CNT_RETRY_TIMEOUT], 0);
	/* packets 3..7 again: go-back-N from the NAKed PSN */
	cr_assert_eq(cnt(0)[XPORT_CNT_RETRANSMIT_PKTS], 5);
}

Test(rc, implied_nak_restarts_read_mid_message, .init = NULL)
{
	setup_params(NULL);
	CAP.drop_op = ROCE_OP_RC_RDMA_READ_RESPONSE_MIDDLE;
	CAP.drop_from = 1;
	CAP.drop_nth = 1; /* the 3rd response packet */
	uint32_t len = 6 * 1024;
	fill(S.h[1].arena + 4096, len, 12);
	post_read(0, 1, 0, 4096, len);
	run_until_sent(1);
	cr_assert_eq(K.c[0][0][0].status, WC_SUCCESS);
	cr_assert_eq(check_fill(S.h[0].arena, len, 12), -1);
	cr_assert_eq(cnt(0)[XPORT_CNT_RETRY_IMPLIED_NAK], 1);
	cr_assert_eq(cnt(1)[XPORT_CNT_DUP_READ_REPLAY], 1);
	/* the retried request asks for the rest, from the missing PSN */
	uint32_t reqs = 0;
	for (uint32_t i = 0; i < CAP.n; i++) {
		if (CAP.from[i] != 0 || CAP.pkt[i].opcode != ROCE_OP_RC_RDMA_READ_REQUEST)
			continue;
		if (reqs++ == 1) {
			cr_assert_eq(CAP.pkt[i].reth.va, sim_va(&S, 1, 4096 + 2 * 1024));
			cr_assert_eq(CAP.pkt[i].reth.length, len - 2 * 1024);
		}
	}
	cr_assert_eq(reqs, 2);
}

Test(rc, lost_atomic_ack_replays_result, .init = NULL)
{
	setup_params(NULL);
	CAP.drop_op = ROCE_OP_RC_ATOMIC_ACKNOWLEDGE;
	CAP.drop_from = 1;
	CAP.drop_nth = 0;
	uint64_t *slot = (uint64_t *)(void *)(S.h[1].arena + 128);
	*slot = 1000;
	struct sq_wqe w = wqe_to_peer(0, WR_ATOMIC_FETCH_AND_ADD, 1, WR_FLAG_SIGNALED, 0, 8, 128);
	w.wr.atomic.compare_add = 1;
	cr_assert(sim_post_send(&S, 0, &w));
	run_until_sent(1);
	cr_assert_eq(K.c[0][0][0].status, WC_SUCCESS);
	cr_assert_eq(*(uint64_t *)(void *)S.h[0].arena, 1000);
	cr_assert_eq(*slot, 1001, "executed once");
	cr_assert_eq(cnt(0)[XPORT_CNT_RETRY_TIMEOUT], 1);
	cr_assert_eq(cnt(1)[XPORT_CNT_DUP_ATOMIC_REPLAY], 1);
}

static void
rd2(struct sim_params *p)
{
	p->max_rd_atomic = 2;
}

/*
 * The most single-packet READs host 0 had outstanding, from the capture
 * (arrival order at host 0 == send order + a constant delay).
 */
static int
peak_outstanding_reads(void)
{
	int outstanding = 0, peak = 0;

	for (uint32_t i = 0; i < CAP.n; i++) {
		if (CAP.from[i] == 0 && CAP.pkt[i].opcode == ROCE_OP_RC_RDMA_READ_REQUEST)
			outstanding++;
		if (CAP.from[i] == 1 && CAP.pkt[i].opcode == ROCE_OP_RC_RDMA_READ_RESPONSE_ONLY)
			outstanding--;
		if (outstanding > peak)
			peak = outstanding;
	}
	return peak;
}

Test(rc, max_rd_atomic_limits_outstanding_reads, .init = NULL)
{
	setup_params(rd2);
	for (int i = 0; i < 6; i++)
		post_read(0, (uint64_t)i, (uint64_t)i * 256, (uint64_t)i * 256, 200);
	run_until_sent(6);
	cr_assert_eq(peak_outstanding_reads(), 2);
	for (int i = 0; i < 6; i++)
		cr_assert_eq(K.c[0][0][i].status, WC_SUCCESS);
}

static void
rd128(struct sim_params *p)
{
	p->max_rd_atomic = XPORT_MAX_RD_ATOMIC; /* rxe's limit */
	p->max_dest_rd_atomic = XPORT_MAX_RD_ATOMIC;
}

Test(rc, max_rd_atomic_128_outstanding_reads, .init = NULL)
{
	setup_params(rd128);
	for (int i = 0; i < 160; i++)
		post_read(0, (uint64_t)i, (uint64_t)i * 256, 65536 + (uint64_t)i * 256, 200);
	run_until_sent(160);
	cr_assert_eq(peak_outstanding_reads(), XPORT_MAX_RD_ATOMIC);
	for (int i = 0; i < 160; i++)
		cr_assert_eq(K.c[0][0][i].status, WC_SUCCESS);
	cr_assert_eq(cnt(1)[XPORT_CNT_NAK_INV_REQ_TX], 0);
}

Test(rc, fence_waits_for_prior_read, .init = NULL)
{
	setup_params(NULL);
	struct rq_wqe r = rwqe_new(1, sim_va(&S, 1, 0), 64, S.h[1].arena_key);
	cr_assert(sim_post_recv(&S, 1, &r));
	post_read(0, 1, 0, 0, 64);
	struct sq_wqe w = wqe_new(WR_SEND, 2, WR_FLAG_SIGNALED | WR_FLAG_FENCE);
	wqe_add_sge(&w, sim_va(&S, 0, 1024), 16, S.h[0].arena_key);
	cr_assert(sim_post_send(&S, 0, &w));
	run_until_sent(2);
	uint64_t resp_at = 0, send_at = 0;
	for (uint32_t i = 0; i < CAP.n; i++) {
		if (CAP.pkt[i].opcode == ROCE_OP_RC_RDMA_READ_RESPONSE_ONLY)
			resp_at = CAP.at[i] + S.faults.delay_ns;
		if (CAP.pkt[i].opcode == ROCE_OP_RC_SEND_ONLY)
			send_at = CAP.at[i];
	}
	cr_assert(resp_at && send_at >= resp_at, "the fenced SEND left after the READ completed");
}

Test(rc, unsignaled_success_is_silent, .init = NULL)
{
	setup_params(NULL);
	post_write(0, 1, 0, 0, 64, 0);
	post_write(0, 2, 0, 128, 64, WR_FLAG_SIGNALED);
	run_until_sent(1);
	sim_run(&S, never_done, &K, S.now + 1000000);
	cr_assert_eq(K.n[0][0], 1);
	cr_assert_eq(K.c[0][0][0].wr_id, 2);
}

Test(rc, local_key_errors, .init = NULL)
{
	setup_params(NULL);
	struct sq_wqe w = wqe_to_peer(0, WR_RDMA_WRITE, 1, 0, 0, 64, 0);
	w.sg_list[0].lkey = 0x99900; /* bad lkey */
	cr_assert(sim_post_send(&S, 0, &w));
	run_until_sent(1);
	cr_assert_eq(K.c[0][0][0].status, WC_LOC_PROT_ERR);
	cr_assert_eq(K.c[0][0][0].vendor_err, XPORT_ERR_LOC_KEY);
	cr_assert_eq(capture_count(&CAP, 0, ROCE_OP_RC_RDMA_WRITE_ONLY), 0, "nothing sent");
	teardown();

	/* READ into a region without LOCAL_WRITE */
	setup_params(NULL);
	uint32_t ro;
	cr_assert_eq(mr_reg(S.h[0].mrs, SIM_PD, (uintptr_t)S.h[0].arena, 0x50000000, 4096, 0, &ro),
		     0);
	struct sq_wqe rd = wqe_to_peer(0, WR_RDMA_READ, 1, WR_FLAG_SIGNALED, 0, 64, 0);
	rd.sg_list[0] = (struct wr_sge){ .addr = 0x50000000, .length = 64, .lkey = ro };
	cr_assert(sim_post_send(&S, 0, &rd));
	run_until_sent(1);
	cr_assert_eq(K.c[0][0][0].status, WC_LOC_PROT_ERR);
}

static void
small_cq(struct sim_params *p)
{
	p->cq_size = 4;
}

Test(rc, cq_overflow_is_cq_error_and_qp_error, .init = NULL)
{
	setup_params(small_cq);
	for (int i = 0; i < 6; i++)
		post_write(0, (uint64_t)i, 0, (uint64_t)i * 64, 64, WR_FLAG_SIGNALED);
	sim_run(&S, never_done, &K, S.now + 100000000); /* nobody polls host 0's CQ */
	(void)K;
	cr_assert_eq(S.h[0].async[ASYNC_CQ_ERR], 1);
	cr_assert(S.h[0].scq.overflowed);
	cr_assert_eq(xport_qp_state(S.h[0].qp), XPORT_STATE_ERR);
	cr_assert_eq(cnt(0)[XPORT_CNT_CQ_OVERFLOW] >= 1, 1);
}

Test(rc, modify_to_error_flushes_everything, .init = NULL)
{
	setup_params(NULL);
	CAP.drop[0] = true;
	post_write(0, 1, 0, 0, 64, WR_FLAG_SIGNALED);
	post_write(0, 2, 0, 0, 64, 0);
	struct rq_wqe r = rwqe_new(7, sim_va(&S, 0, 0), 64, S.h[0].arena_key);
	cr_assert(sim_post_recv(&S, 0, &r));
	r.wr_id = 8;
	cr_assert(sim_post_recv(&S, 0, &r));
	sim_poll(&S);
	sim_set_state(&S, 0, XPORT_STATE_ERR);
	post_write(0, 3, 0, 0, 64, 0); /* posted in the error state: flushed too */
	K.want[0][1] = 2;
	run_until_sent(3);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(K.c[0][0][i].wr_id, (uint64_t)i + 1);
		cr_assert_eq(K.c[0][0][i].status, WC_WR_FLUSH_ERR);
	}
	cr_assert_eq(K.c[0][1][0].wr_id, 7);
	cr_assert_eq(K.c[0][1][1].wr_id, 8);
	cr_assert_eq(K.c[0][1][1].status, WC_WR_FLUSH_ERR);
	cr_assert_eq(K.c[0][1][1].opcode, WC_RECV);
}

static void
paced(struct sim_params *p)
{
	p->rate_limit_kbps = 8000; /* 1 byte per microsecond */
}

Test(rc, rate_limit_paces_the_requester, .init = NULL)
{
	setup_params(paced);
	for (int i = 0; i < 4; i++)
		post_write(0, (uint64_t)i, 0, 0, 1000, WR_FLAG_SIGNALED);
	run_until_sent(4);
	uint64_t prev = 0;
	int seen = 0;
	for (uint32_t i = 0; i < CAP.n; i++) {
		if (CAP.from[i] != 0 || CAP.pkt[i].opcode != ROCE_OP_RC_RDMA_WRITE_ONLY)
			continue;
		/* one interval apart, give or take the timer tick the pace
		 * timer fires on (the schedule runs from when a frame was due) */
		if (seen++)
			cr_assert_geq(CAP.at[i] - prev, (1000 + 96) * 1000ull - 1000, "gap %lu ns",
				      (unsigned long)(CAP.at[i] - prev));
		prev = CAP.at[i];
	}
	cr_assert_eq(seen, 4);
	cr_assert_geq(cnt(0)[XPORT_CNT_PACE_WAIT], 3);
}

/* An lcore that wakes 300 us late for every pace timer (27 % of the 1.1 ms
 * interval) still sends at the asked rate: the schedule runs from when each
 * frame was due, not from when it left (bench/rate_limit.sh on a busy host). */
Test(rc, rate_limit_holds_with_late_timers, .init = NULL)
{
	const uint64_t interval = (1000 + 96) * 1000ull; /* ns at 8000 kb/s */
	uint64_t first = 0, last = 0;
	int seen = 0;

	setup_params(paced);
	S.faults.timer_late_ns = 300000;
	for (int i = 0; i < 20; i++)
		post_write(0, (uint64_t)i, 0, 0, 1000, WR_FLAG_SIGNALED);
	run_until_sent(20);
	for (uint32_t i = 0; i < CAP.n; i++) {
		if (CAP.from[i] != 0 || CAP.pkt[i].opcode != ROCE_OP_RC_RDMA_WRITE_ONLY)
			continue;
		if (seen++ == 0)
			first = CAP.at[i];
		last = CAP.at[i];
	}
	cr_assert_eq(seen, 20);
	cr_expect_leq(last - first, 19 * interval * 105 / 100, "19 intervals took %lu ns, "
		      "asked %lu", (unsigned long)(last - first), (unsigned long)(19 * interval));
	cr_expect_geq(last - first, 19 * interval - 300000, "never faster than asked");
}

Test(rc, stale_response_ignored, .init = NULL)
{
	setup_params(NULL);
	post_write(0, 1, 0, 0, 64, WR_FLAG_SIGNALED);
	run_until_sent(1);
	/* replay the ACK host 1 sent */
	for (uint32_t i = 0; i < CAP.n; i++)
		if (CAP.from[i] == 1 && CAP.pkt[i].opcode == ROCE_OP_RC_ACKNOWLEDGE) {
			struct roce_pkt ack = CAP.pkt[i];
			sim_inject(&S, 0, &ack);
		}
	sim_run(&S, never_done, &K, S.now + 1000000);
	cr_assert_eq(K.n[0][0], 1);
	cr_assert_eq(cnt(0)[XPORT_CNT_DROP_STALE_RESP], 1);
}

Test(rc, sqd_drains_then_signals, .init = NULL)
{
	setup_params(NULL);
	post_write(0, 1, 0, 0, 3000, WR_FLAG_SIGNALED);
	sim_poll(&S); /* the first WRITE is on the wire */
	sim_set_state(&S, 0, XPORT_STATE_SQD);
	post_write(0, 2, 0, 4096, 100, WR_FLAG_SIGNALED);
	run_until_sent(1);
	sim_run(&S, never_done, &K, S.now + 1000000);
	cr_assert_eq(K.n[0][0], 1, "nothing new starts in SQD");
	cr_assert_eq(S.h[0].async[ASYNC_SQ_DRAINED], 1);
	sim_set_state(&S, 0, XPORT_STATE_RTS);
	run_until_sent(2);
	cr_assert_eq(K.c[0][0][1].wr_id, 2);
}

Test(rc, reset_discards_posted_work_and_timers, .init = NULL)
{
	setup_params(NULL);
	CAP.drop[1] = true; /* no ACK: the ACK timer stays armed */
	post_write(0, 1, 0, 0, 64, WR_FLAG_SIGNALED);
	sim_poll(&S);
	cr_assert_neq(S.h[0].timer_at[XPORT_TIMER_RETRY], 0);
	post_write(0, 2, 0, 0, 64, WR_FLAG_SIGNALED);
	struct rq_wqe r = rwqe_new(7, sim_va(&S, 0, 0), 64, S.h[0].arena_key);
	cr_assert(sim_post_recv(&S, 0, &r));
	sim_set_state(&S, 0, XPORT_STATE_RESET);
	cr_assert_eq(S.h[0].timer_at[XPORT_TIMER_RETRY], 0, "timer cancelled");
	cr_assert_eq(spsc_ring_count(S.h[0].sq), 0, "send WRs removed");
	cr_assert_eq(spsc_ring_count(S.h[0].rq), 0, "receive WRs removed");
	sim_run(&S, never_done, &K, S.now + 100000000);
	cr_assert_eq(K.n[0][0] + K.n[0][1], 0, "without completions");
}
