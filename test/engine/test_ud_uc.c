/* SPDX-License-Identifier: BSD-3-Clause */
/* UD (DETH, Q_Key rules, GRH in the receive buffer) and UC (no ACKs, broken
 * messages dropped) through the simulated link. */
#include <criterion/criterion.h>

#include "util.h"

static struct sim S;
static struct collect K;
static struct capture CAP;

static void
up(uint8_t type, bool ipv6)
{
	struct sim_params p;
	sim_default_params(&p);
	p.type = type;
	p.ipv6 = ipv6;
	cr_assert_eq(sim_init(&S, &p, 3), 0);
	collect_init(&K);
	capture_attach(&S, &CAP);
}

static void
down(void)
{
	collect_fini(&K);
	sim_fini(&S);
}

TestSuite(ud, .fini = down, .timeout = 30);
TestSuite(uc, .fini = down, .timeout = 30);

static const uint64_t *
cnt(int h)
{
	return xport_qp_counters(S.h[h].qp);
}

static struct sq_wqe
ud_send(uint64_t wr_id, uint32_t len, uint32_t qkey)
{
	struct sq_wqe w = wqe_new(WR_SEND_WITH_IMM, wr_id, WR_FLAG_SIGNALED);
	wqe_add_sge(&w, sim_va(&S, 0, 0), len, S.h[0].arena_key);
	w.imm_data = 0x01020304;
	w.av = S.h[0].cfg.av; /* resolved AH towards host 1 */
	w.wr.ud.remote_qpn = S.h[1].cfg.qpn;
	w.wr.ud.remote_qkey = qkey;
	return w;
}

static void
post_recv1(uint64_t wr_id, uint32_t len)
{
	struct rq_wqe r = rwqe_new(wr_id, sim_va(&S, 1, 4096), len, S.h[1].arena_key);
	cr_assert(sim_post_recv(&S, 1, &r));
}

static void
ud_grh_case(bool ipv6)
{
	up(XPORT_UD, ipv6);
	fill(S.h[0].arena, 500, 21);
	post_recv1(1, 1024);
	/* the MSB of the WR's Q_Key selects the QP's own Q_Key (IBTA 10.2.4) */
	struct sq_wqe w = ud_send(5, 500, 0x80000000u);
	cr_assert(sim_post_send(&S, 0, &w));
	K.want[0][0] = 1;
	K.want[1][1] = 1;
	cr_assert(sim_run(&S, collect_done, &K, SIM_DEADLINE_NS));
	cr_assert_eq(K.c[0][0][0].status, WC_SUCCESS);
	const struct cqe *c = &K.c[1][1][0];
	cr_assert_eq(c->status, WC_SUCCESS);
	cr_assert_eq(c->byte_len, XPORT_UD_GRH_LEN + 500);
	cr_assert_eq(c->wc_flags, WC_FLAG_GRH | WC_FLAG_WITH_IMM);
	cr_assert_eq(c->imm_data, 0x01020304);
	cr_assert_eq(c->src_qp, S.h[0].cfg.qpn);
	cr_assert_eq(CAP.pkt[0].opcode, ROCE_OP_UD_SEND_ONLY_WITH_IMMEDIATE);
	cr_assert_eq(S.frames_seg_mr, 0, "completed on sending: the buffer is the app's again");
	cr_assert_eq(CAP.pkt[0].deth.qkey, S.h[0].cfg.qkey);
	cr_assert_eq(CAP.pkt[0].deth.src_qpn, S.h[0].cfg.qpn);
	cr_assert_not(CAP.pkt[0].ack_req);
	const uint8_t *grh = S.h[1].arena + 4096;
	if (ipv6) {
		cr_assert_eq(grh[0] >> 4, 6);
		cr_assert_eq(grh[6], 17, "next header UDP");
		cr_assert_eq(memcmp(grh + 8, S.h[0].cfg.av.sgid, 16), 0);
		cr_assert_eq(memcmp(grh + 24, S.h[1].cfg.av.sgid, 16), 0);
	} else {
		for (int i = 0; i < 20; i++)
			cr_assert_eq(grh[i], 0, "IPv4: first 20 GRH bytes are zero");
		cr_assert_eq(grh[20], 0x45);
		cr_assert_eq(grh[20 + 9], 17);
		cr_assert_eq(memcmp(grh + 20 + 12, S.h[0].cfg.av.sgid + 12, 4), 0);
		cr_assert_eq(memcmp(grh + 20 + 16, S.h[1].cfg.av.sgid + 12, 4), 0);
	}
	cr_assert_eq(check_fill(grh + XPORT_UD_GRH_LEN, 500, 21), -1);
}

Test(ud, send_grh_ipv4)
{
	ud_grh_case(false);
}

Test(ud, send_grh_ipv6)
{
	ud_grh_case(true);
}

/*
 * Issue 16: a UD WQE's address vector came from the application's ring and
 * went on the wire as is: any source MAC/GID, destination, VLAN and UDP
 * port. Now only its AH handle counts; the vector is the daemon's.
 */
Test(ud, the_address_vector_is_the_daemons_not_the_rings)
{
	up(XPORT_UD, false);
	post_recv1(1, 1024);
	struct sq_wqe w = ud_send(5, 64, 0x80000000u);

	/* forged: another host's source, another VLAN, a chosen UDP port */
	memset(w.av.smac, 0x66, 6);
	memset(w.av.sgid + 12, 0x42, 4);
	w.av.vlan_present = 1;
	w.av.vlan_tci = 7;
	w.av.udp_sport = 4242;
	cr_assert(sim_post_send(&S, 0, &w));
	K.want[0][0] = 1;
	K.want[1][1] = 1;
	cr_assert(sim_run(&S, collect_done, &K, SIM_DEADLINE_NS));
	cr_assert_eq(K.c[0][0][0].status, WC_SUCCESS);
	cr_assert_eq(memcmp(CAP.pkt[0].l3.sgid, S.h[0].cfg.av.sgid, 16), 0, "our source GID");
	cr_assert_eq(memcmp(CAP.pkt[0].l3.smac, S.h[0].cfg.av.smac, 6), 0, "our source MAC");
	cr_assert_not(CAP.pkt[0].l3.vlan_present, "no VLAN the AH does not have");
	cr_assert_neq(CAP.pkt[0].l3.udp_sport, 4242);
}

/* A handle unknown, or of an AH of another PD: the WQE fails locally, nothing is sent. */
Test(ud, an_address_handle_of_another_pd_or_none_fails_the_wqe)
{
	for (uint32_t h = 0; h < 3; h++) {
		if (h > 0)
			down();
		up(XPORT_UD, false);
		cr_assert_eq(ah_table_set(S.h[0].ahs, 2, SIM_PD + 1, &S.h[0].cfg.av), 0);
		struct sq_wqe w = ud_send(10 + h, 64, 0x80000000u);

		w.av.ah_handle = h == 0 ? 2 : h == 1 ? 5 : 4096; /* other PD, unused, beyond */
		cr_assert(sim_post_send(&S, 0, &w));
		K.want[0][0] = 1;
		cr_assert(sim_run(&S, collect_done, &K, SIM_DEADLINE_NS));
		cr_assert_eq(K.c[0][0][0].status, WC_LOC_QP_OP_ERR, "case %u", h);
		cr_assert_eq(K.c[0][0][0].vendor_err, XPORT_ERR_LOC_AH);
		cr_assert_eq(cnt(0)[XPORT_CNT_UD_AH_INVALID], 1);
		cr_assert_eq(CAP.n, 0, "nothing on the wire");
	}
}

Test(ud, qkey_mismatch_dropped_and_counted)
{
	up(XPORT_UD, false);
	post_recv1(1, 1024);
	struct sq_wqe w = ud_send(5, 100, 0x22222222);
	cr_assert(sim_post_send(&S, 0, &w));
	K.want[0][0] = 1;
	cr_assert(sim_run(&S, collect_done, &K, SIM_DEADLINE_NS));
	sim_run(&S, never_done, &K, S.now + 1000000);
	cr_assert_eq(K.c[0][0][0].status, WC_SUCCESS, "UD sends complete locally");
	cr_assert_eq(K.n[1][1], 0);
	cr_assert_eq(cnt(1)[XPORT_CNT_DROP_QKEY], 1);
}

Test(ud, lengths)
{
	up(XPORT_UD, false);
	/* larger than the path MTU: local length error */
	struct sq_wqe w = ud_send(1, 2000, 0x80000000u);
	cr_assert(sim_post_send(&S, 0, &w));
	K.want[0][0] = 1;
	cr_assert(sim_run(&S, collect_done, &K, SIM_DEADLINE_NS));
	cr_assert_eq(K.c[0][0][0].status, WC_LOC_LEN_ERR);
	down();

	/* receive buffer without room for GRH + payload */
	up(XPORT_UD, false);
	post_recv1(1, 100);
	w = ud_send(1, 80, 0x80000000u);
	cr_assert(sim_post_send(&S, 0, &w));
	K.want[1][1] = 1;
	cr_assert(sim_run(&S, collect_done, &K, SIM_DEADLINE_NS));
	cr_assert_eq(K.c[1][1][0].status, WC_LOC_LEN_ERR);
	cr_assert_eq(xport_qp_state(S.h[1].qp), XPORT_STATE_RTS);
	down();

	/* no receive WQE: dropped and counted, no RNR on UD */
	up(XPORT_UD, false);
	w = ud_send(1, 80, 0x80000000u);
	cr_assert(sim_post_send(&S, 0, &w));
	sim_run(&S, never_done, &K, S.now + 1000000);
	cr_assert_eq(cnt(1)[XPORT_CNT_DROP_NO_RECV], 1);
	cr_assert_eq(cnt(1)[XPORT_CNT_RNR_NAK_TX], 0);
}

Test(ud, rdma_not_allowed)
{
	up(XPORT_UD, false);
	struct sq_wqe w = wqe_new(WR_RDMA_WRITE, 1, 0);
	wqe_add_sge(&w, sim_va(&S, 0, 0), 8, S.h[0].arena_key);
	cr_assert(sim_post_send(&S, 0, &w));
	K.want[0][0] = 1;
	cr_assert(sim_run(&S, collect_done, &K, SIM_DEADLINE_NS));
	cr_assert_eq(K.c[0][0][0].status, WC_LOC_QP_OP_ERR);
	cr_assert_eq(CAP.n, 0);
}

Test(uc, send_and_write_without_acks)
{
	up(XPORT_UC, false);
	fill(S.h[0].arena, 3000, 31);
	fill(S.h[0].arena + 4096, 5000, 32);
	post_recv1(1, 4000);
	struct sq_wqe w = wqe_new(WR_SEND, 1, WR_FLAG_SIGNALED);
	wqe_add_sge(&w, sim_va(&S, 0, 0), 3000, S.h[0].arena_key);
	cr_assert(sim_post_send(&S, 0, &w));
	w = wqe_new(WR_RDMA_WRITE_WITH_IMM, 2, WR_FLAG_SIGNALED);
	wqe_add_sge(&w, sim_va(&S, 0, 4096), 5000, S.h[0].arena_key);
	w.wr.rdma.remote_addr = sim_va(&S, 1, 65536);
	w.wr.rdma.rkey = S.h[1].arena_key;
	w.imm_data = 77;
	cr_assert(sim_post_send(&S, 0, &w));
	post_recv1(2, 0);
	K.want[0][0] = 2;
	K.want[1][1] = 2;
	cr_assert(sim_run(&S, collect_done, &K, SIM_DEADLINE_NS));
	cr_assert_eq(K.c[1][1][0].byte_len, 3000);
	cr_assert_eq(check_fill(S.h[1].arena + 4096, 3000, 31), -1);
	cr_assert_eq(K.c[1][1][1].opcode, WC_RECV_RDMA_WITH_IMM);
	cr_assert_eq(K.c[1][1][1].imm_data, 77);
	cr_assert_eq(check_fill(S.h[1].arena + 65536, 5000, 32), -1);
	cr_assert_eq(cnt(1)[XPORT_CNT_ACK_TX], 0);
	for (uint32_t i = 0; i < CAP.n; i++)
		cr_assert_not(CAP.pkt[i].ack_req, "UC never asks for ACKs");
	cr_assert_eq(S.frames_seg_mr, 0, "completed on sending: the buffer is the app's again");
}

Test(uc, broken_message_dropped_next_one_delivered)
{
	up(XPORT_UC, false);
	CAP.drop_op = ROCE_OP_UC_SEND_MIDDLE;
	CAP.drop_from = 0;
	CAP.drop_nth = 0;
	fill(S.h[0].arena, 3000, 41);
	post_recv1(1, 4000);
	struct sq_wqe w = wqe_new(WR_SEND, 1, WR_FLAG_SIGNALED);
	wqe_add_sge(&w, sim_va(&S, 0, 0), 3000, S.h[0].arena_key);
	cr_assert(sim_post_send(&S, 0, &w));
	w.wr_id = 2;
	cr_assert(sim_post_send(&S, 0, &w));
	K.want[0][0] = 2;
	K.want[1][1] = 1;
	cr_assert(sim_run(&S, collect_done, &K, SIM_DEADLINE_NS));
	sim_run(&S, never_done, &K, S.now + 1000000);
	cr_assert_eq(K.c[0][0][0].status, WC_SUCCESS, "UC sender does not know");
	cr_assert_eq(K.n[1][1], 1, "only the intact message completes");
	cr_assert_eq(K.c[1][1][0].wr_id, 1, "into the receive WQE the broken one left");
	cr_assert_eq(K.c[1][1][0].byte_len, 3000);
	cr_assert_eq(check_fill(S.h[1].arena + 4096, 3000, 41), -1);
	cr_assert_geq(cnt(1)[XPORT_CNT_DROP_UC_MSG], 1);
}
