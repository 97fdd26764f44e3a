/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RAW_PACKET QPs in the engine (issue 19): a send WQE is one whole frame
 * (xport_frame.raw), bounded by cfg.raw_frame_max; a received frame lands
 * whole in the next receive WQE (xport_qp_raw_rx()). The sim carries a raw
 * frame as its bytes to the peer's xport_qp_raw_rx(), as if one of the
 * daemon's flow rules matched it.
 */
#include <criterion/criterion.h>

#include "util.h"

static struct sim S;
static struct collect K;

#define RAW_MAX 1514u  /* MTU 1500 + Ethernet header */

static void
up(void)
{
	struct sim_params p;

	sim_default_params(&p);
	p.type = XPORT_RAW;
	p.raw_frame_max = RAW_MAX;
	cr_assert_eq(sim_init(&S, &p, 7), 0);
	collect_init(&K);
}

static void
down(void)
{
	collect_fini(&K);
	sim_fini(&S);
}

TestSuite(raw, .init = up, .fini = down, .timeout = 30);

static const uint64_t *
cnt(int h)
{
	return xport_qp_counters(S.h[h].qp);
}

/* Host 0 sends the @p len bytes at its arena's offset @p off as one frame. */
static void
send_frame(uint64_t wr_id, uint64_t off, uint32_t len)
{
	struct sq_wqe w = wqe_new(WR_SEND, wr_id, WR_FLAG_SIGNALED);

	wqe_add_sge(&w, sim_va(&S, 0, off), len, S.h[0].arena_key);
	cr_assert(sim_post_send(&S, 0, &w));
}

static void
post_recv1(uint64_t wr_id, uint64_t off, uint32_t len)
{
	struct rq_wqe r = rwqe_new(wr_id, sim_va(&S, 1, off), len, S.h[1].arena_key);

	cr_assert(sim_post_recv(&S, 1, &r));
}

/* Run until nothing is left to happen; the CQEs are in K. */
static void
settle(void)
{
	sim_run(&S, never_done, &K, SIM_DEADLINE_NS);
}

Test(raw, a_send_is_one_whole_frame_in_the_peers_receive_wqe)
{
	fill(S.h[0].arena, 1200, 3);
	post_recv1(9, 8192, 2048);
	send_frame(4, 0, 1200); /* beyond the 1024-byte path MTU: still one frame */
	K.want[0][0] = 1;
	K.want[1][1] = 1;
	cr_assert(sim_run(&S, collect_done, &K, SIM_DEADLINE_NS));
	cr_assert_eq(K.c[0][0][0].status, WC_SUCCESS);
	cr_assert_eq(K.c[0][0][0].opcode, WC_SEND);
	cr_assert_eq(K.c[0][0][0].wr_id, 4);
	const struct cqe *c = &K.c[1][1][0];
	cr_assert_eq(c->status, WC_SUCCESS);
	cr_assert_eq(c->opcode, WC_RECV);
	cr_assert_eq(c->wr_id, 9);
	cr_assert_eq(c->byte_len, 1200, "the whole frame, Ethernet header on: %u", c->byte_len);
	cr_assert_eq(c->wc_flags, 0, "no GRH, no immediate");
	cr_assert_eq(c->qp_num, S.h[1].cfg.qpn);
	cr_assert_eq(check_fill(S.h[1].arena + 8192, 1200, 3), -1, "every byte as sent");
	cr_assert_eq(S.frames_sent, 1);
	cr_assert_eq(cnt(1)[XPORT_CNT_RX_PKTS], 1);
	cr_assert_eq(cnt(1)[XPORT_CNT_RX_BYTES], 1200);
}

Test(raw, inline_frames_and_frames_from_several_sges)
{
	struct sq_wqe w = wqe_new(WR_SEND, 1, WR_FLAG_SIGNALED | WR_FLAG_INLINE);

	fill(S.h[0].arena, 300, 5);
	memcpy(w.inline_data, S.h[0].arena, 60);
	w.inline_len = 60;
	cr_assert(sim_post_send(&S, 0, &w));
	w = wqe_new(WR_SEND, 2, WR_FLAG_SIGNALED);
	wqe_add_sge(&w, sim_va(&S, 0, 0), 100, S.h[0].arena_key);
	wqe_add_sge(&w, sim_va(&S, 0, 100), 200, S.h[0].arena_key);
	cr_assert(sim_post_send(&S, 0, &w));
	post_recv1(1, 8192, 512);
	post_recv1(2, 16384, 512);
	K.want[0][0] = 2;
	K.want[1][1] = 2;
	cr_assert(sim_run(&S, collect_done, &K, SIM_DEADLINE_NS));
	cr_assert_eq(K.c[1][1][0].byte_len, 60);
	cr_assert_eq(K.c[1][1][1].byte_len, 300);
	cr_assert_eq(check_fill(S.h[1].arena + 8192, 60, 5), -1);
	cr_assert_eq(check_fill(S.h[1].arena + 16384, 300, 5), -1);
}

/* A frame beyond the port's MTU plus the Ethernet header, or shorter than that header, is refused. */
Test(raw, a_send_longer_than_the_port_allows_completes_with_loc_len_err)
{
	send_frame(1, 0, RAW_MAX);
	post_recv1(1, 8192, 4096);
	K.want[0][0] = 1;
	K.want[1][1] = 1;
	cr_assert(sim_run(&S, collect_done, &K, SIM_DEADLINE_NS));
	cr_assert_eq(K.c[0][0][0].status, WC_SUCCESS, "exactly the limit goes");
	cr_assert_eq(K.c[1][1][0].byte_len, RAW_MAX);

	send_frame(2, 0, RAW_MAX + 1);
	settle();
	cr_assert_eq(K.n[0][0], 2);
	cr_assert_eq(K.c[0][0][1].status, WC_LOC_LEN_ERR, "one byte more: %u",
		     K.c[0][0][1].status);
	cr_assert_eq(K.c[0][0][1].vendor_err, XPORT_ERR_LOC_LEN);
	cr_assert_eq(S.frames_sent, 1, "nothing of it left");
	cr_assert_eq(xport_qp_state(S.h[0].qp), XPORT_STATE_ERR, "a local error, as for UD");
}

Test(raw, a_send_shorter_than_an_ethernet_header_is_refused)
{
	send_frame(1, 0, 13);
	settle();
	cr_assert_eq(K.n[0][0], 1);
	cr_assert_eq(K.c[0][0][0].status, WC_LOC_LEN_ERR);
	cr_assert_eq(S.frames_sent, 0);
}

Test(raw, only_send_is_a_raw_work_request)
{
	struct sq_wqe w = wqe_new(WR_SEND_WITH_IMM, 1, WR_FLAG_SIGNALED);

	wqe_add_sge(&w, sim_va(&S, 0, 0), 64, S.h[0].arena_key);
	cr_assert(sim_post_send(&S, 0, &w));
	settle();
	cr_assert_eq(K.n[0][0], 1);
	cr_assert_eq(K.c[0][0][0].status, WC_LOC_QP_OP_ERR);
	cr_assert_eq(S.frames_sent, 0);
	cr_assert(wr_opcode_valid(WR_SEND, XPORT_RAW));
	cr_assert_not(wr_opcode_valid(WR_RDMA_WRITE, XPORT_RAW));
}

/* As UD (IBA class D) and rxe: dropped, and the WQE waits for a frame that fits. */
Test(raw, a_frame_larger_than_the_receive_wqe_is_dropped_and_the_wqe_kept)
{
	fill(S.h[0].arena, 200, 8);
	post_recv1(1, 8192, 100);
	send_frame(1, 0, 200);
	settle();
	cr_assert_eq(K.n[1][1], 0, "no completion for a frame that does not fit");
	cr_assert_eq(cnt(1)[XPORT_CNT_DROP_RAW_LEN], 1);
	send_frame(2, 0, 100);
	settle();
	cr_assert_eq(K.n[1][1], 1);
	cr_assert_eq(K.c[1][1][0].wr_id, 1, "the same WQE took the next frame");
	cr_assert_eq(K.c[1][1][0].byte_len, 100);
	cr_assert_eq(xport_qp_state(S.h[1].qp), XPORT_STATE_RTS);
}

Test(raw, without_a_receive_wqe_the_frame_is_lost)
{
	send_frame(1, 0, 64);
	settle();
	cr_assert_eq(cnt(1)[XPORT_CNT_DROP_NO_RECV], 1);
	post_recv1(1, 8192, 100);
	settle();
	cr_assert_eq(K.n[1][1], 0, "no RNR, no retry: gone");
}

Test(raw, nothing_is_taken_in_reset_nor_in_error)
{
	uint8_t frame[64] = { 0 };

	post_recv1(1, 8192, 100);
	sim_set_state(&S, 1, XPORT_STATE_RESET);
	xport_out_reset(&S.out);
	xport_qp_raw_rx(S.h[1].qp, frame, sizeof(frame), S.now, &S.out);
	cr_assert_eq(cnt(1)[XPORT_CNT_DROP_STATE], 1);
	sim_set_state(&S, 1, XPORT_STATE_ERR);
	xport_out_reset(&S.out);
	xport_qp_raw_rx(S.h[1].qp, frame, sizeof(frame), S.now, &S.out);
	cr_assert_eq(cnt(1)[XPORT_CNT_DROP_STATE], 2);
	cr_assert_eq(cnt(1)[XPORT_CNT_RX_PKTS], 0);
}

/* A RoCE packet naming a raw QP is not for it; a raw frame is not for a RoCE QP. */
Test(raw, roce_packets_and_raw_frames_do_not_cross)
{
	uint8_t frame[64] = { 0 };
	struct roce_pkt pkt = sim_pkt(&S, 0, ROCE_OP_UD_SEND_ONLY, 0);

	post_recv1(1, 8192, 100);
	pkt.dest_qpn = S.h[1].cfg.qpn;
	sim_inject(&S, 1, &pkt);
	cr_assert_eq(cnt(1)[XPORT_CNT_DROP_TRANSPORT], 1);
	settle();
	cr_assert_eq(K.n[1][1], 0);

	struct sim ud;
	struct sim_params p;

	sim_default_params(&p);
	p.type = XPORT_UD;
	cr_assert_eq(sim_init(&ud, &p, 1), 0);
	xport_out_reset(&ud.out);
	xport_qp_raw_rx(ud.h[1].qp, frame, sizeof(frame), ud.now, &ud.out);
	cr_assert_eq(xport_qp_counters(ud.h[1].qp)[XPORT_CNT_DROP_TRANSPORT], 1);
	sim_fini(&ud);
}

Test(raw, the_frame_limit_is_checked_at_create)
{
	struct xport_cfg c = S.h[0].cfg;

	c.raw_frame_max = 13;
	cr_assert_null(xport_qp_create(&c));
	c.raw_frame_max = XPORT_BOUNCE_FRAME + 1;
	cr_assert_null(xport_qp_create(&c));
	c.raw_frame_max = XPORT_BOUNCE_FRAME;
	struct xport_qp *qp = xport_qp_create(&c);
	cr_assert_not_null(qp);
	xport_qp_destroy(qp);
}
