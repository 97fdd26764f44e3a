/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * XRC through the simulated link (IBTA Vol. 1 9.8.2): host 0 is an XRC INI
 * QP, host 1 an XRC TGT QP whose requests land in the XRC SRQ their XRCETH
 * names; an SRQ missing, going or of another XRC domain is an invalid
 * request (NAK, class C).
 */
#include <criterion/criterion.h>

#include "util.h"

#define DOMAIN 7

static struct sim S;
static struct collect K;
static struct capture CAP;

static void
up_xrc(uint8_t mtu, uint32_t srq_domain)
{
	struct sim_params p;

	sim_default_params(&p);
	p.type = XPORT_RC;
	p.mtu = mtu;
	p.xrcd = DOMAIN;
	p.xrc_srq_xrcd = srq_domain;
	cr_assert_eq(sim_init(&S, &p, 19), 0);
	collect_init(&K);
	capture_attach(&S, &CAP);
}

static void
down(void)
{
	collect_fini(&K);
	sim_fini(&S);
}

TestSuite(xrc, .fini = down, .timeout = 30);

static const uint64_t *
cnt(int h)
{
	return xport_qp_counters(S.h[h].qp);
}

/* A SEND of @p len bytes from host 0's arena to XRC SRQ @p srqn. */
static void
xrc_send(uint64_t wr_id, uint32_t len, uint32_t srqn)
{
	struct sq_wqe w = wqe_new(WR_SEND_WITH_IMM, wr_id, WR_FLAG_SIGNALED);

	wqe_add_sge(&w, sim_va(&S, 0, 0), len, S.h[0].arena_key);
	w.imm_data = 0x0a0b0c0d;
	w.xrc_remote_srqn = srqn;
	cr_assert(sim_post_send(&S, 0, &w));
}

static void
post_srq_recv(uint64_t wr_id, uint32_t len)
{
	struct rq_wqe r = rwqe_new(wr_id, sim_va(&S, 1, 8192), len, S.h[1].arena_key);

	cr_assert(sim_post_recv(&S, 1, &r));
}

Test(xrc, a_send_lands_in_the_srq_its_xrceth_names)
{
	up_xrc(1 /* 256 B: a 1000-byte SEND is 4 packets */, 0);
	fill(S.h[0].arena, 1000, 5);
	post_srq_recv(31, 4096);
	xrc_send(9, 1000, SIM_XRC_SRQN);
	K.want[0][0] = 1;
	K.want[1][1] = 1;
	cr_assert(sim_run(&S, collect_done, &K, SIM_DEADLINE_NS));
	cr_assert_eq(K.c[0][0][0].status, WC_SUCCESS);
	cr_assert_eq(K.c[0][0][0].wr_id, 9);
	const struct cqe *c = &K.c[1][1][0];
	cr_assert_eq(c->status, WC_SUCCESS);
	cr_assert_eq(c->wr_id, 31);
	cr_assert_eq(c->byte_len, 1000);
	cr_assert_eq(c->imm_data, 0x0a0b0c0d);
	cr_assert_eq(c->wc_flags, WC_FLAG_WITH_IMM);
	cr_assert_eq(c->qp_num, S.h[1].cfg.qpn, "the TGT QP's number, as xsrq_pingpong's find_qp expects");
	cr_assert_eq(check_fill(S.h[1].arena + 8192, 1000, 5), -1);
	/* on the wire: XRC requests, each with the XRCETH; XRC ACKs back */
	cr_assert_eq(capture_count(&CAP, 0, ROCE_OP_XRC_SEND_FIRST), 1);
	cr_assert_eq(capture_count(&CAP, 0, ROCE_OP_XRC_SEND_MIDDLE), 2);
	cr_assert_eq(capture_count(&CAP, 0, ROCE_OP_XRC_SEND_LAST_WITH_IMMEDIATE), 1);
	cr_assert_gt(capture_count(&CAP, 1, ROCE_OP_XRC_ACKNOWLEDGE), 0);
	for (uint32_t i = 0; i < CAP.n; i++) {
		uint8_t t = roce_opcode_transport(CAP.pkt[i].opcode);

		cr_assert_eq(t, ROCE_TRANSPORT_XRC, "frame %u opcode 0x%02x", i, CAP.pkt[i].opcode);
		if (CAP.from[i] == 0) {
			cr_assert(roce_pkt_has(&CAP.pkt[i], ROCE_HDR_XRCETH));
			cr_assert_eq(CAP.pkt[i].xrc_srqn, SIM_XRC_SRQN);
		}
	}
	cr_assert_eq(cnt(1)[XPORT_CNT_NAK_XRC_SRQ_TX], 0);
}

Test(xrc, rdma_write_checks_the_rkey_against_the_srqs_pd)
{
	up_xrc(3, 0);
	fill(S.h[0].arena, 300, 8);
	struct sq_wqe w = wqe_new(WR_RDMA_WRITE, 4, WR_FLAG_SIGNALED);

	wqe_add_sge(&w, sim_va(&S, 0, 0), 300, S.h[0].arena_key);
	w.wr.rdma.remote_addr = sim_va(&S, 1, 100);
	w.wr.rdma.rkey = S.h[1].arena_key;
	w.xrc_remote_srqn = SIM_XRC_SRQN;
	cr_assert(sim_post_send(&S, 0, &w));
	K.want[0][0] = 1;
	cr_assert(sim_run(&S, collect_done, &K, SIM_DEADLINE_NS));
	cr_assert_eq(K.c[0][0][0].status, WC_SUCCESS);
	cr_assert_eq(check_fill(S.h[1].arena + 100, 300, 8), -1);
	cr_assert_eq(capture_count(&CAP, 0, ROCE_OP_XRC_RDMA_WRITE_ONLY), 1);
}

/* The NAK case: the SEND fails remotely, nothing lands, the receive WQE stays. */
static void
expect_invalid_request(void)
{
	K.want[0][0] = 1;
	cr_assert(sim_run(&S, collect_done, &K, SIM_DEADLINE_NS));
	cr_assert_eq(K.c[0][0][0].status, WC_REM_INV_REQ_ERR);
	cr_assert_eq(cnt(1)[XPORT_CNT_NAK_XRC_SRQ_TX], 1);
	cr_assert_eq(cnt(1)[XPORT_CNT_NAK_INV_REQ_TX], 1);
	cr_assert_eq(capture_count(&CAP, 1, ROCE_OP_XRC_ACKNOWLEDGE), 1);
	collect_drain(&S, &K);
	cr_assert_eq(K.n[1][1], 0, "no receive completion");
	cr_assert_eq(spsc_ring_count_in(S.h[1].srq_ring, S.h[1].srq.size), 1,
		     "the SRQ's receive WQE was not taken");
}

Test(xrc, an_srq_of_another_domain_is_an_invalid_request)
{
	up_xrc(3, DOMAIN + 1);
	post_srq_recv(1, 4096);
	xrc_send(2, 64, SIM_XRC_SRQN);
	expect_invalid_request();
}

Test(xrc, an_unknown_srq_number_is_an_invalid_request)
{
	up_xrc(3, 0);
	post_srq_recv(1, 4096);
	xrc_send(2, 64, SIM_XRC_SRQN + 1);
	expect_invalid_request();
}

Test(xrc, an_srq_being_destroyed_is_an_invalid_request)
{
	up_xrc(3, 0);
	post_srq_recv(1, 4096);
	/* its lcore let go of it (the daemon's SRQ_DETACH) */
	__atomic_store_n(&S.h[1].srq.xrc_live, 0, __ATOMIC_RELEASE);
	xrc_send(2, 64, SIM_XRC_SRQN);
	expect_invalid_request();
}

Test(xrc, ini_drops_requests_and_tgt_drops_responses)
{
	up_xrc(3, 0);
	struct roce_pkt req = sim_pkt(&S, 1, ROCE_OP_XRC_SEND_ONLY, S.h[0].cfg.rq_psn);
	struct roce_pkt ack = sim_pkt(&S, 0, ROCE_OP_XRC_ACKNOWLEDGE, S.h[1].cfg.sq_psn);

	req.xrc_srqn = SIM_XRC_SRQN;
	sim_inject(&S, 0, &req);
	sim_inject(&S, 1, &ack);
	cr_assert_eq(cnt(0)[XPORT_CNT_DROP_XRC_ROLE], 1);
	cr_assert_eq(cnt(1)[XPORT_CNT_DROP_XRC_ROLE], 1);
	/* an RC opcode is another transport for either */
	struct roce_pkt rc = sim_pkt(&S, 0, ROCE_OP_RC_SEND_ONLY, S.h[1].cfg.rq_psn);
	sim_inject(&S, 1, &rc);
	cr_assert_eq(cnt(1)[XPORT_CNT_DROP_TRANSPORT], 1);
}

/*
 * The IBTA 1.5 ATOMIC WRITE and FLUSH have no XRC opcode here (Linux rxe has
 * no XRC at all): an XRC INI QP completes them with a local QP operation
 * error and sends nothing (without the check the engine built 0xbd/0xbc,
 * which name no opcode, and crashed).
 */
static void
expect_local_op_error(struct sq_wqe *w)
{
	w->xrc_remote_srqn = SIM_XRC_SRQN;
	cr_assert(sim_post_send(&S, 0, w));
	K.want[0][0] = 1;
	cr_assert(sim_run(&S, collect_done, &K, SIM_DEADLINE_NS));
	cr_assert_eq(K.c[0][0][0].status, WC_LOC_QP_OP_ERR, "status %u", K.c[0][0][0].status);
	cr_assert_eq(CAP.n, 0, "nothing on the wire");
}

Test(xrc, atomic_write_is_a_local_op_error_on_an_ini_qp)
{
	up_xrc(3, 0);
	struct sq_wqe w = wqe_new(WR_ATOMIC_WRITE, 40, WR_FLAG_SIGNALED);

	wqe_add_sge(&w, sim_va(&S, 0, 0), 8, S.h[0].arena_key);
	w.wr.rdma.remote_addr = sim_va(&S, 1, 64);
	w.wr.rdma.rkey = S.h[1].arena_key;
	expect_local_op_error(&w);
}

Test(xrc, flush_is_a_local_op_error_on_an_ini_qp)
{
	up_xrc(3, 0);
	struct sq_wqe w = wqe_new(WR_FLUSH, 41, WR_FLAG_SIGNALED);

	w.wr.flush.remote_addr = sim_va(&S, 1, 64);
	w.wr.flush.rkey = S.h[1].arena_key;
	w.wr.flush.length = 8;
	w.wr.flush.type = 1;  /* global visibility */
	w.wr.flush.level = 0; /* a range */
	expect_local_op_error(&w);
}
