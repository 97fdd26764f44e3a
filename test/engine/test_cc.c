/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Congestion control (lib/xport dcqcn.c, xport_cc.c):
 * - dcqcn: the reaction point's rate and alpha against sequences computed
 *   by hand from the DCQCN paper's rules (section 3.1; numbers in the
 *   comments), the notification point's CNP interval;
 * - np / rp: the engine answers a CE-marked packet with a CNP laid out as
 *   Annex A17.9.3 says, one per interval; a CNP cuts the sender's rate,
 *   arms XPORT_TIMER_CC and paces the requester; malformed, foreign and
 *   unwanted CNPs are counted and change nothing;
 * - qos: ECN codepoint, DSCP and 802.1p priority of data frames and CNPs;
 * - bottleneck: one flow through a simulated switch queue that marks
 *   between kmin and kmax and drops above: with DCQCN nothing is dropped
 *   and the bottleneck stays busy; with cc = none the queue overflows.
 */
#include <criterion/criterion.h>

#include "util.h"

#define LINE_KBPS 1000000u   /* 1 Gb/s */

/* ---- dcqcn.c: hand-computed sequences ---------------------------------- */

static struct dcqcn_params
hand_params(void)
{
	struct dcqcn_params p;

	dcqcn_params_default(&p, LINE_KBPS);
	p.g_inv = 16;                 /* g = 1/16: alpha steps of 4096 / 65536 */
	p.alpha_ns = 50000;           /* K = 50 us */
	p.timer_ns = 100000;          /* T = 100 us */
	p.bytes = 0;                  /* byte counter off */
	p.f = 2;
	p.ai_kbps = 10000;
	p.hai_kbps = 50000;
	p.min_kbps = 1000;
	return p;
}

Test(dcqcn, defaults_are_the_papers)
{
	struct dcqcn_params p;

	dcqcn_params_default(&p, 40000000u);
	cr_expect_eq(p.g_inv, 256);            /* g = 1/256 */
	cr_expect_eq(p.alpha_ns, 55000);       /* K = 55 us */
	cr_expect_eq(p.timer_ns, 55000);       /* T = 55 us */
	cr_expect_eq(p.bytes, 10u << 20);      /* B = 10 MB */
	cr_expect_eq(p.f, 5);
	cr_expect_eq(p.ai_kbps, 40000);        /* R_AI = 40 Mb/s */
	cr_expect_eq(p.line_kbps, 40000000u);
	cr_expect_eq(DCQCN_DEF_CNP_US, 50);    /* N = 50 us */
}

Test(dcqcn, cut_decay_fast_recovery_additive)
{
	struct dcqcn_params p = hand_params();
	struct dcqcn_rp rp;

	dcqcn_rp_init(&rp);
	cr_expect_eq(dcqcn_rp_rate(&rp), 0, "line rate: not limited");
	cr_expect_eq(dcqcn_rp_next_ns(&rp), 0);

	/* t = 0: Rc = line = 1000000; Rt = 1000000; cut = Rc * alpha / 2 =
	 * 1000000 * 65536 / 131072 = 500000 -> Rc = 500000;
	 * alpha = 65536 - 65536/16 + 65536/16 = 65536 */
	dcqcn_rp_cnp(&rp, &p, 0);
	cr_expect_eq(rp.rc_kbps, 500000);
	cr_expect_eq(rp.rt_kbps, 1000000);
	cr_expect_eq(rp.alpha, 65536);
	cr_expect_eq(dcqcn_rp_rate(&rp), 500000);

	/* t = 10 us: Rt = 500000, Rc = 250000; alpha stays 65536; the alpha
	 * period and the timer restart: next events at 60 us and 110 us */
	dcqcn_rp_cnp(&rp, &p, 10000);
	cr_expect_eq(rp.rc_kbps, 250000);
	cr_expect_eq(rp.rt_kbps, 500000);
	cr_expect_eq(dcqcn_rp_next_ns(&rp), 60000);

	/* t = 60 us: K without CNP: alpha = 65536 - 65536/16 = 61440 */
	dcqcn_rp_timer(&rp, &p, 60000);
	cr_expect_eq(rp.alpha, 61440);
	cr_expect_eq(rp.rc_kbps, 250000);
	cr_expect_eq(dcqcn_rp_next_ns(&rp), 110000);

	/* t = 110 us: alpha = 61440 - 3840 = 57600; timer stage 1 < F = 2:
	 * fast recovery, Rc = (500000 + 250000) / 2 = 375000 (Rt stays) */
	dcqcn_rp_timer(&rp, &p, 110000);
	cr_expect_eq(rp.alpha, 57600);
	cr_expect_eq(rp.t_stage, 1);
	cr_expect_eq(rp.rc_kbps, 375000);
	cr_expect_eq(rp.rt_kbps, 500000);

	/* t = 210 us, one late call: alpha at 160 us (57600 - 3600 = 54000)
	 * and 210 us (54000 - 3375 = 50625); timer stage 2 = F: additive
	 * increase, Rt = 510000, Rc = (510000 + 375000) / 2 rounded up = 442500 */
	dcqcn_rp_timer(&rp, &p, 210000);
	cr_expect_eq(rp.alpha, 50625);
	cr_expect_eq(rp.t_stage, 2);
	cr_expect_eq(rp.rt_kbps, 510000);
	cr_expect_eq(rp.rc_kbps, 442500);

	/* t = 215 us: CNP: Rt = 442500; cut = 442500 * 50625 / 131072 =
	 * 170910 (170910.4 truncated) -> Rc = 271590;
	 * alpha = 50625 - 50625/16 (3164) + 4096 = 51557; stages reset */
	dcqcn_rp_cnp(&rp, &p, 215000);
	cr_expect_eq(rp.rt_kbps, 442500);
	cr_expect_eq(rp.rc_kbps, 271590);
	cr_expect_eq(rp.alpha, 51557);
	cr_expect_eq(rp.t_stage, 0);
	cr_expect_eq(rp.cuts, 3);
}

Test(dcqcn, byte_counter_and_hyper_increase)
{
	struct dcqcn_params p = hand_params();
	struct dcqcn_rp rp;

	p.alpha_ns = 1000000000; /* no alpha decay in this window */
	p.bytes = 1000;          /* B = 1000 bytes */
	dcqcn_rp_init(&rp);
	/* two CNPs at 0: Rc 1000000 -> 500000 -> 250000, Rt = 500000 */
	dcqcn_rp_cnp(&rp, &p, 0);
	dcqcn_rp_cnp(&rp, &p, 0);
	cr_assert_eq(rp.rc_kbps, 250000);

	dcqcn_rp_sent(&rp, &p, 999);  /* not yet */
	cr_expect_eq(rp.b_stage, 0);
	cr_expect_eq(rp.rc_kbps, 250000);
	dcqcn_rp_sent(&rp, &p, 1);    /* B reached: stage 1, fast recovery */
	cr_expect_eq(rp.b_stage, 1);
	cr_expect_eq(rp.rc_kbps, 375000);       /* (500000 + 250000) / 2 */
	dcqcn_rp_sent(&rp, &p, 1000); /* stage 2 = F: additive */
	cr_expect_eq(rp.rt_kbps, 510000);
	cr_expect_eq(rp.rc_kbps, 442500);       /* (510000 + 375000) / 2 */
	dcqcn_rp_sent(&rp, &p, 1000); /* stage 3, timer stage 0: additive */
	cr_expect_eq(rp.rt_kbps, 520000);
	cr_expect_eq(rp.rc_kbps, 481250);       /* (520000 + 442500) / 2 */

	/* timer stages 1 (100 us) and 2 (200 us): additive (min stage <= F) */
	dcqcn_rp_timer(&rp, &p, 200000);
	cr_expect_eq(rp.t_stage, 2);
	cr_expect_eq(rp.rt_kbps, 540000);
	cr_expect_eq(rp.rc_kbps, 522813);       /* 530000/505625, then (540000 + 505625 + 1) / 2 */
	/* timer stage 3 (300 us): both stages > F: hyper increase */
	dcqcn_rp_timer(&rp, &p, 300000);
	cr_expect_eq(rp.rt_kbps, 590000);
	cr_expect_eq(rp.rc_kbps, 556407);       /* (590000 + 522813 + 1) / 2 */
}

Test(dcqcn, late_call_equals_punctual_calls)
{
	struct dcqcn_params p = hand_params();
	struct dcqcn_rp a, b;

	dcqcn_rp_init(&a);
	dcqcn_rp_cnp(&a, &p, 0);
	dcqcn_rp_cnp(&a, &p, 5000);
	b = a;
	for (uint64_t t = 0; t <= 2000000; t += 7000)
		dcqcn_rp_timer(&a, &p, t);
	dcqcn_rp_timer(&a, &p, 2000000);
	dcqcn_rp_timer(&b, &p, 2000000);
	cr_expect_eq(a.rc_kbps, b.rc_kbps);
	cr_expect_eq(a.rt_kbps, b.rt_kbps);
	cr_expect_eq(a.alpha, b.alpha);
	cr_expect_eq(a.t_stage, b.t_stage);
}

Test(dcqcn, a_stopped_wheel_is_bounded)
{
	struct dcqcn_params p = hand_params();
	struct dcqcn_rp rp;

	p.ai_kbps = 1;             /* Rt 500000 -> 1000000 kb/s: 500000 timer events */
	p.hai_kbps = 1;
	p.timer_ns = 1000;
	p.alpha_ns = 1000;
	dcqcn_rp_init(&rp);
	dcqcn_rp_cnp(&rp, &p, 0);
	dcqcn_rp_cnp(&rp, &p, 0);
	dcqcn_rp_timer(&rp, &p, 10000000); /* 10 ms: 10000 timer events, still limited */
	cr_assert(rp.limited);
	cr_expect_lt(rp.rt_kbps, 600000);
	dcqcn_rp_timer(&rp, &p, 3600ull * 1000000000u); /* an hour late: one bounded call */
	cr_expect(!rp.limited);
	cr_expect_eq(rp.rc_kbps, LINE_KBPS);
	cr_expect_eq(dcqcn_rp_next_ns(&rp), 0);
}

Test(dcqcn, recovers_to_line_rate_then_stops)
{
	struct dcqcn_params p = hand_params();
	struct dcqcn_rp rp;
	uint32_t last = 0;

	dcqcn_rp_init(&rp);
	dcqcn_rp_cnp(&rp, &p, 0);
	/* Rc never falls while no CNP comes, and reaches line rate */
	for (uint64_t t = 100000; rp.limited && t < 100000000; t += 100000) {
		dcqcn_rp_timer(&rp, &p, t);
		if (rp.limited) {
			cr_assert_geq(rp.rc_kbps, last);
			cr_assert_leq(rp.rc_kbps, LINE_KBPS);
			last = rp.rc_kbps;
		}
	}
	cr_expect(!rp.limited);
	cr_expect_eq(dcqcn_rp_rate(&rp), 0, "unlimited again");
	cr_expect_eq(dcqcn_rp_next_ns(&rp), 0, "no timer left");
}

Test(dcqcn, rate_floor)
{
	struct dcqcn_params p = hand_params();
	struct dcqcn_rp rp;

	dcqcn_rp_init(&rp);
	/* alpha stays 1: each CNP halves; 1000000 / 2^10 = 976 < 1000 */
	for (int i = 0; i < 10; i++)
		dcqcn_rp_cnp(&rp, &p, 0);
	cr_expect_eq(rp.rc_kbps, 1000);
}

Test(dcqcn, np_one_cnp_per_interval)
{
	struct dcqcn_np np = { 0 };

	cr_expect(dcqcn_np_ce(&np, 50000, 1000));     /* first CE mark: CNP */
	cr_expect(!dcqcn_np_ce(&np, 50000, 11000));   /* within 50 us */
	cr_expect(!dcqcn_np_ce(&np, 50000, 50999));
	cr_expect(dcqcn_np_ce(&np, 50000, 51000));    /* 50 us later */
	cr_expect(dcqcn_np_ce(&np, 50000, 200000));
	cr_expect(!dcqcn_np_ce(&np, 50000, 200001));
	cr_expect(dcqcn_np_ce(&np, 0, 200001));       /* interval 0: every mark */
}

/* ---- delay_cc.c: hand-computed sequences ------------------------------- */

static struct delay_params
delay_hand_params(void)
{
	struct delay_params p;

	delay_params_default(&p, LINE_KBPS);
	p.target_ns = 100000;         /* 100 us */
	p.ai_kbps = 10000;            /* 10 Mb/s per sample */
	p.beta_pct = 80;
	p.max_md_pct = 50;
	p.min_kbps = 1000;
	return p;
}

Test(delay, defaults)
{
	struct delay_params p;

	delay_params_default(&p, 40000000u);
	cr_expect_eq(p.target_ns, 500000);
	cr_expect_eq(p.ai_kbps, 5000);
	cr_expect_eq(p.beta_pct, 80);          /* Swift's beta */
	cr_expect_eq(p.max_md_pct, 50);        /* Swift's max_mdf */
	cr_expect_eq(p.line_kbps, 40000000u);
}

Test(delay, scaled_decrease_once_per_rtt_then_additive_increase)
{
	struct delay_params p = delay_hand_params();
	struct delay_rp rp;

	delay_rp_init(&rp);
	/* t = 0, RTT 80 us <= 100 us: at line rate already, nothing to do */
	delay_rp_sample(&rp, &p, 80000, 0);
	cr_expect(!rp.limited);
	cr_expect_eq(delay_rp_rate(&rp), 0);
	cr_expect_eq(rp.samples, 1);

	/* t = 1 ms, RTT 200 us: from line rate 1000000; excess 100/200 = 500
	 * per mille; cut = 1000000 x 80 % x 500 / 1000 = 400000 (< 50 %) ->
	 * 600000 */
	delay_rp_sample(&rp, &p, 200000, 1000000);
	cr_expect(rp.limited);
	cr_expect_eq(rp.rate_kbps, 600000);
	cr_expect_eq(rp.cuts, 1);

	/* t = 1.1 ms, RTT 300 us: 100 us since the cut < one RTT: no cut */
	delay_rp_sample(&rp, &p, 300000, 1100000);
	cr_expect_eq(rp.rate_kbps, 600000);
	cr_expect_eq(rp.cuts, 1);

	/* t = 1.3 ms, RTT 300 us: one RTT since the cut; excess 200/300 = 666
	 * per mille; cut = 600000 x 80 x 666 / 100000 = 319680 > 50 % of
	 * 600000: max_md -> 300000 */
	delay_rp_sample(&rp, &p, 300000, 1300000);
	cr_expect_eq(rp.rate_kbps, 300000);
	cr_expect_eq(rp.cuts, 2);

	/* t = 2.3 ms, RTT 110 us: excess 10/110 = 90 per mille (90.9);
	 * cut = 300000 x 80 x 90 / 100000 = 21600 -> 278400 */
	delay_rp_sample(&rp, &p, 110000, 2300000);
	cr_expect_eq(rp.rate_kbps, 278400);
	cr_expect_eq(rp.cuts, 3);
	cr_expect_eq(rp.last_rtt_ns, 110000);

	/* RTT at the target (not above): + R_AI per sample */
	delay_rp_sample(&rp, &p, 100000, 2400000);
	cr_expect_eq(rp.rate_kbps, 288400);
	delay_rp_sample(&rp, &p, 50000, 2500000);
	cr_expect_eq(rp.rate_kbps, 298400);
	cr_expect_eq(delay_rp_rate(&rp), 298400);

	/* 70 more: 998400, still limited; the next reaches line rate */
	for (int i = 0; i < 70; i++)
		delay_rp_sample(&rp, &p, 50000, 2600000 + (uint64_t)i * 100000);
	cr_expect(rp.limited);
	cr_expect_eq(rp.rate_kbps, 998400);
	delay_rp_sample(&rp, &p, 50000, 10000000);
	cr_expect(!rp.limited, "back at line rate");
	cr_expect_eq(delay_rp_rate(&rp), 0);
	cr_expect_eq(rp.samples, 78);
	cr_expect_eq(rp.cuts, 3);
}

Test(delay, floor_and_huge_rtt)
{
	struct delay_params p = delay_hand_params();
	struct delay_rp rp;
	uint64_t t = 0;

	delay_rp_init(&rp);
	/* RTT 1 s: excess 999 per mille, cut capped at 50 % each RTT:
	 * 1000000 / 2^10 = 976 < 1000: the floor */
	for (int i = 0; i < 10; i++, t += 1000000000ull)
		delay_rp_sample(&rp, &p, 1000000000ull, t);
	cr_expect_eq(rp.rate_kbps, 1000);
	cr_expect_eq(rp.cuts, 10);
	/* an RTT of a day does not overflow: still the floor */
	delay_rp_sample(&rp, &p, 86400ull * 1000000000ull, t + 86400ull * 1000000000ull);
	cr_expect_eq(rp.rate_kbps, 1000);
}

/* ---- the engine: notification and reaction points ---------------------- */

static struct sim S;
static struct capture CAP;
static struct xport_cc CC[2];

static void
cc_default(struct xport_cc *cc)
{
	memset(cc, 0, sizeof(*cc));
	cc->ecn = XPORT_ECN_ECT0;
	cc->algo = XPORT_CC_DCQCN;
	cc->np = true;
	cc->cnp_dscp = 48;
	cc->cnp_pcp = 6;
	cc->cnp_interval_ns = 50000;
	dcqcn_params_default(&cc->dcqcn, LINE_KBPS);
}

/* Both hosts with CC[i] (NULL: no congestion control) in RTS; frames captured. */
static void
start(bool with_cc)
{
	struct sim_params p;

	sim_default_params(&p);
	p.arena_len = 1u << 20;
	cc_default(&CC[0]);
	cc_default(&CC[1]);
	if (with_cc) {
		p.cc[0] = &CC[0];
		p.cc[1] = &CC[1];
	}
	cr_assert_eq(sim_init(&S, &p, 11), 0);
	capture_attach(&S, &CAP);
	S.faults.delay_ns = 1000;
}

static void
stop(void)
{
	sim_fini(&S);
}

static uint64_t
cnt(int h, enum xport_counter c)
{
	return xport_qp_counters(S.h[h].qp)[c];
}

/* An 8-byte RDMA WRITE ONLY from host 0 to host 1 at @p psn, ECN bits @p ecn. */
static struct roce_pkt
write_pkt(uint32_t psn, uint8_t ecn)
{
	static const uint8_t data[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct roce_pkt p = req_pkt(&S, ROCE_OP_RC_RDMA_WRITE_ONLY, psn);

	p.reth.va = sim_va(&S, 1, 0);
	p.reth.rkey = S.h[1].arena_key;
	p.reth.length = 8;
	p.payload = data;
	p.payload_len = 8;
	p.l3.traffic_class = ecn;
	return p;
}

/* A CNP as host 1 sends it to host 0's QP. */
static struct roce_pkt
cnp_pkt(void)
{
	struct roce_pkt p = sim_pkt(&S, 1, ROCE_OP_CNP, 0);

	p.becn = true;
	return p;
}

/* The last captured frame from @p from with @p opcode, or NULL. */
static const struct roce_pkt *
last_of(int from, uint8_t opcode)
{
	for (uint32_t i = CAP.n; i-- > 0;)
		if (CAP.from[i] == from && CAP.pkt[i].opcode == opcode)
			return &CAP.pkt[i];
	return NULL;
}

Test(np, ce_mark_answered_with_one_cnp_per_interval)
{
	start(true);
	uint32_t psn = S.h[1].cfg.rq_psn;

	S.now = 1000000;
	struct roce_pkt p = write_pkt(psn, 3); /* CE */
	sim_inject(&S, 1, &p);
	cr_expect_eq(cnt(1, XPORT_CNT_CE_RX), 1);
	cr_expect_eq(cnt(1, XPORT_CNT_CNP_TX), 1);
	cr_assert_eq(capture_count(&CAP, 1, ROCE_OP_CNP), 1);
	const struct roce_pkt *c = last_of(1, ROCE_OP_CNP);
	cr_expect_eq(c->dest_qpn, S.h[0].cfg.qpn, "to the sender's QP");
	cr_expect(c->becn && !c->fecn && !c->ack_req);
	cr_expect_eq(c->psn, 0);
	cr_expect_eq(c->pkey, 0xffff);
	cr_expect_eq(c->l3.traffic_class, 48 << 2, "CNP DSCP, not-ECT");
	cr_expect_arr_eq(c->l3.dgid, S.h[0].cfg.av.sgid, 16);
	cr_expect_eq(c->payload_len, 0);
	/* the data itself was accepted and acknowledged as usual */
	cr_expect_eq(capture_count(&CAP, 1, ROCE_OP_RC_ACKNOWLEDGE), 1);

	/* another CE mark 10 us later: no CNP (one per 50 us) */
	S.now += 10000;
	p = write_pkt(psn + 1, 3);
	sim_inject(&S, 1, &p);
	cr_expect_eq(cnt(1, XPORT_CNT_CE_RX), 2);
	cr_expect_eq(capture_count(&CAP, 1, ROCE_OP_CNP), 1);
	/* an ECT(0) packet is not a mark */
	p = write_pkt(psn + 2, 2);
	sim_inject(&S, 1, &p);
	cr_expect_eq(cnt(1, XPORT_CNT_CE_RX), 2);
	/* 50 us after the first CNP: a new one */
	S.now += 40000;
	p = write_pkt(psn + 3, 3);
	sim_inject(&S, 1, &p);
	cr_expect_eq(capture_count(&CAP, 1, ROCE_OP_CNP), 2);
	cr_expect_eq(cnt(1, XPORT_CNT_CNP_TX), 2);
	/* the CNPs reach host 0, whose reaction point cuts its rate */
	sim_run(&S, never_done, NULL, S.now + 5000);
	cr_expect_eq(cnt(0, XPORT_CNT_CNP_RX), 2);
	cr_expect_eq(cnt(0, XPORT_CNT_CC_RATE_CUTS), 2);
	stop();
}

Test(np, off_without_cc_or_np)
{
	start(false);
	uint32_t psn = S.h[1].cfg.rq_psn;
	struct roce_pkt p = write_pkt(psn, 3);

	sim_inject(&S, 1, &p);
	cr_expect_eq(cnt(1, XPORT_CNT_CE_RX), 1, "counted");
	cr_expect_eq(capture_count(&CAP, 1, ROCE_OP_CNP), 0, "no CNP without cc");
	stop();

	start(true);
	CC[1].np = false;
	psn = S.h[1].cfg.rq_psn;
	p = write_pkt(psn, 3);
	sim_inject(&S, 1, &p);
	cr_expect_eq(capture_count(&CAP, 1, ROCE_OP_CNP), 0, "no CNP with cnp = no");
	stop();
}

Test(np, ud_cnp_goes_to_the_source_qp)
{
	struct sim_params sp;

	sim_default_params(&sp);
	sp.type = XPORT_UD;
	cc_default(&CC[0]);
	cc_default(&CC[1]);
	sp.cc[0] = &CC[0];
	sp.cc[1] = &CC[1];
	cr_assert_eq(sim_init(&S, &sp, 5), 0);
	capture_attach(&S, &CAP);
	struct rq_wqe r = rwqe_new(1, sim_va(&S, 1, 0), 256, S.h[1].arena_key);
	cr_assert(sim_post_recv(&S, 1, &r));
	struct roce_pkt p = sim_pkt(&S, 0, ROCE_OP_UD_SEND_ONLY, 0);
	static const uint8_t data[4] = { 9, 9, 9, 9 };
	p.deth.qkey = S.h[1].cfg.qkey;
	p.deth.src_qpn = 0x777;
	p.dest_qpn = S.h[1].cfg.qpn;
	p.payload = data;
	p.payload_len = 4;
	p.l3.traffic_class = 3;
	sim_inject(&S, 1, &p);
	const struct roce_pkt *c = last_of(1, ROCE_OP_CNP);
	cr_assert_not_null(c);
	cr_expect_eq(c->dest_qpn, 0x777);
	cr_expect_arr_eq(c->l3.dgid, p.l3.sgid, 16);
	cr_expect_arr_eq(c->l3.dmac, p.l3.smac, 6);
	sim_fini(&S);
}

Test(rp, cnp_cuts_rate_arms_timer_and_paces)
{
	start(true);
	S.now = 2000000;
	struct roce_pkt c = cnp_pkt();

	sim_inject(&S, 0, &c);
	cr_expect_eq(cnt(0, XPORT_CNT_CNP_RX), 1);
	cr_expect_eq(cnt(0, XPORT_CNT_CC_RATE_CUTS), 1);
	const struct dcqcn_rp *rp = xport_qp_dcqcn(S.h[0].qp);
	cr_expect(rp->limited);
	cr_expect_eq(rp->rc_kbps, LINE_KBPS / 2, "alpha = 1: half the line rate");
	cr_expect_eq(cnt(0, XPORT_CNT_CC_RATE_KBPS), LINE_KBPS / 2);
	cr_expect_eq(S.h[0].timer_at[XPORT_TIMER_CC], S.now + 55000, "K = T = 55 us");

	/* 64 KB at 500 Mb/s: the pacer holds the requester */
	struct sq_wqe w = wqe_new(WR_RDMA_WRITE, 1, WR_FLAG_SIGNALED);
	wqe_add_sge(&w, sim_va(&S, 0, 0), 65536, S.h[0].arena_key);
	w.wr.rdma.remote_addr = sim_va(&S, 1, 65536);
	w.wr.rdma.rkey = S.h[1].arena_key;
	cr_assert(sim_post_send(&S, 0, &w));
	uint64_t t0 = S.now;
	struct collect k;
	collect_init(&k);
	k.want[0][0] = 1;
	cr_assert(sim_run(&S, collect_done, &k, S.now + 1000000000));
	collect_fini(&k);
	cr_expect_gt(cnt(0, XPORT_CNT_PACE_WAIT), 0);
	/* 64 frames of 1024 + 96 bytes at >= 500 Mb/s: >= 63 x 17.9 us, less as the rate recovers */
	uint64_t took = S.now - t0;
	cr_expect_gt(took, 200000, "paced: took %lu ns", (unsigned long)took);
	stop();
}

Test(rp, rate_recovers_to_line_on_the_timer)
{
	start(true);
	struct roce_pkt c = cnp_pkt();

	S.now = 1000;
	sim_inject(&S, 0, &c);
	cr_assert(xport_qp_dcqcn(S.h[0].qp)->limited);
	sim_run(&S, never_done, NULL, S.now + 100000000);
	cr_expect(!xport_qp_dcqcn(S.h[0].qp)->limited, "back at line rate");
	cr_expect_eq(cnt(0, XPORT_CNT_CC_RATE_KBPS), 0);
	cr_expect_eq(S.h[0].timer_at[XPORT_TIMER_CC], 0, "timer cancelled");
	stop();
}

Test(rp, malformed_foreign_and_unwanted_cnps_change_nothing)
{
	start(true);
	struct roce_pkt c = cnp_pkt();

	c.becn = false; /* malformed */
	sim_inject(&S, 0, &c);
	cr_expect_eq(cnt(0, XPORT_CNT_CNP_MALFORMED), 1);

	c = cnp_pkt();
	c.pkey = 0x1234; /* another partition */
	sim_inject(&S, 0, &c);
	c = cnp_pkt();
	c.l3.sgid[15] ^= 0x40; /* not the connected peer */
	sim_inject(&S, 0, &c);
	cr_expect_eq(cnt(0, XPORT_CNT_CNP_IGNORED), 2);

	c = cnp_pkt();
	c.dest_qpn ^= 1; /* another QP */
	sim_inject(&S, 0, &c);
	cr_expect_eq(cnt(0, XPORT_CNT_DROP_DEST_QP), 1);

	/* cc = none: counted, ignored */
	CC[0].algo = XPORT_CC_NONE;
	c = cnp_pkt();
	sim_inject(&S, 0, &c);
	cr_expect_eq(cnt(0, XPORT_CNT_CNP_IGNORED), 3);

	cr_expect_eq(cnt(0, XPORT_CNT_CNP_RX), 0);
	cr_expect_eq(cnt(0, XPORT_CNT_CC_RATE_CUTS), 0);
	cr_expect(!xport_qp_dcqcn(S.h[0].qp)->limited);
	cr_expect_eq(S.h[0].timer_at[XPORT_TIMER_CC], 0);
	stop();

	/* no congestion control at all */
	start(false);
	c = cnp_pkt();
	sim_inject(&S, 0, &c);
	cr_expect_eq(cnt(0, XPORT_CNT_CNP_IGNORED), 1);
	cr_expect(!xport_qp_dcqcn(S.h[0].qp)->limited);
	stop();
}

Test(rp, reset_forgets_the_rate)
{
	start(true);
	struct roce_pkt c = cnp_pkt();

	sim_inject(&S, 0, &c);
	cr_assert(xport_qp_dcqcn(S.h[0].qp)->limited);
	sim_set_state(&S, 0, XPORT_STATE_RESET);
	cr_expect(!xport_qp_dcqcn(S.h[0].qp)->limited);
	cr_expect_eq(cnt(0, XPORT_CNT_CC_RATE_KBPS), 0);
	stop();
}

/* ---- QoS: ECN, DSCP, priority ------------------------------------------ */

/* Host 0's AV traffic class / VLAN as modify_qp would set them; then one WRITE. */
static const struct roce_pkt *
send_with_av(uint8_t tclass, bool vlan, uint16_t tci)
{
	S.h[0].cfg.av.traffic_class = tclass;
	S.h[0].cfg.av.vlan_present = vlan;
	S.h[0].cfg.av.vlan_tci = tci;
	cr_assert_eq(xport_qp_modify(S.h[0].qp, &S.h[0].cfg), 0);
	struct sq_wqe w = wqe_new(WR_RDMA_WRITE, 1, WR_FLAG_SIGNALED);
	wqe_add_sge(&w, sim_va(&S, 0, 0), 64, S.h[0].arena_key);
	w.wr.rdma.remote_addr = sim_va(&S, 1, 0);
	w.wr.rdma.rkey = S.h[1].arena_key;
	cr_assert(sim_post_send(&S, 0, &w));
	sim_poll(&S);
	return last_of(0, ROCE_OP_RC_RDMA_WRITE_ONLY);
}

Test(qos, ecn_dscp_and_priority_of_data)
{
	start(true);
	CC[0].dscp = 26;
	CC[0].pcp = 3;
	/* AV without DSCP: the port's DSCP 26, ECT(0) */
	cr_expect_eq(send_with_av(0x00, false, 0)->l3.traffic_class, 26 << 2 | 2);
	/* the AV's DSCP 10 is honoured; its ECN bits (CE here) are replaced */
	cr_expect_eq(send_with_av(10 << 2 | 3, false, 0)->l3.traffic_class, 10 << 2 | 2);
	/* ECT(1) */
	CC[0].ecn = XPORT_ECN_ECT1;
	cr_expect_eq(send_with_av(10 << 2, false, 0)->l3.traffic_class, 10 << 2 | 1);
	/* ECN off: not-ECT even if the AV asked for ECT */
	CC[0].ecn = XPORT_ECN_NOT_ECT;
	cr_expect_eq(send_with_av(10 << 2 | 2, false, 0)->l3.traffic_class, 10 << 2);
	/* a VLAN tag without priority gets the port's; one with a priority keeps it */
	const struct roce_pkt *p = send_with_av(0, true, 100);
	cr_expect(p->l3.vlan_present);
	cr_expect_eq(p->l3.vlan_tci, 3u << 13 | 100);
	cr_expect_eq(send_with_av(0, true, 5u << 13 | 100)->l3.vlan_tci, 5u << 13 | 100);
	stop();

	/* without congestion control: the AV's traffic class exactly */
	start(false);
	cr_expect_eq(send_with_av(10 << 2 | 3, false, 0)->l3.traffic_class, 10 << 2 | 3);
	stop();
}

Test(qos, cnp_priority_on_a_tagged_path)
{
	start(true);
	S.h[1].cfg.av.vlan_present = 1;
	S.h[1].cfg.av.vlan_tci = 2u << 13 | 100;
	cr_assert_eq(xport_qp_modify(S.h[1].qp, &S.h[1].cfg), 0);
	struct roce_pkt p = write_pkt(S.h[1].cfg.rq_psn, 3);
	sim_inject(&S, 1, &p);
	const struct roce_pkt *c = last_of(1, ROCE_OP_CNP);
	cr_assert_not_null(c);
	cr_expect(c->l3.vlan_present);
	cr_expect_eq(c->l3.vlan_tci, 6u << 13 | 100, "CNP priority 6, same VLAN");
	cr_expect_eq(c->l3.traffic_class, 48 << 2);
	stop();
}

/* ---- a bottleneck ------------------------------------------------------ */

#define BN_KBPS 100000u        /* 100 Mb/s bottleneck, 1 Gb/s line rate */
#define BN_WRITES 32           /* 32 x 256 KB = 8 MB */
#define BN_WRITE_LEN (256u << 10)

struct bn_result {
	bool done;
	uint64_t took_ns, dropped, marked, max_queue, retransmits, cnps, cuts;
	double below_kmax;          /* share of frames that found the queue below K_max */
};

static struct bn_result
bottleneck_run(enum xport_cc_algo algo)
{
	struct sim_params p;
	struct bn_result r = { 0 };
	struct collect k;

	sim_default_params(&p);
	p.arena_len = 16u << 20;
	p.cq_size = 256;
	p.timeout = 14; /* 67 ms, a common default: above the queueing delay */
	p.retry_cnt = 7;
	cc_default(&CC[0]);
	cc_default(&CC[1]);
	/* scaled to a 100 Mb/s bottleneck (the defaults are for 40 GbE): R_AI
	 * 1 Mb/s, R_HAI 5 Mb/s, T 300 us (mlx5's rpg_time_reset) */
	CC[0].dcqcn.ai_kbps = 1000;
	CC[0].dcqcn.hai_kbps = 5000;
	CC[0].dcqcn.timer_ns = 300000;
	CC[0].algo = (uint8_t)algo;
	CC[0].pace_line = true; /* no faster than host 0's link, as a NIC */
	p.cc[0] = &CC[0];
	p.cc[1] = &CC[1];
	cr_assert_eq(sim_init(&S, &p, 21), 0);
	S.faults.delay_ns = 2000;
	/* marks from 5 KB (the paper's K_min), certain at 50 KB; 250 KB of
	 * buffer: less than the sender's window (256 x 1 KB), so cc = none
	 * overflows it */
	S.bneck = (struct sim_bottleneck){ .kbps = BN_KBPS, .line_kbps = LINE_KBPS, .kmin = 5000,
					   .kmax = 50000, .pmax_ppm = 1000000, .limit = 250000 };
	collect_init(&k);
	for (uint32_t i = 0; i < BN_WRITES; i++) {
		struct sq_wqe w = wqe_new(WR_RDMA_WRITE, i, WR_FLAG_SIGNALED);
		wqe_add_sge(&w, sim_va(&S, 0, 0), BN_WRITE_LEN, S.h[0].arena_key);
		w.wr.rdma.remote_addr = sim_va(&S, 1, (uint64_t)(i % 8) * BN_WRITE_LEN);
		w.wr.rdma.rkey = S.h[1].arena_key;
		cr_assert(sim_post_send(&S, 0, &w));
	}
	k.want[0][0] = BN_WRITES;
	r.done = sim_run(&S, collect_done, &k, 20000000000ull);
	for (uint32_t i = 0; i < k.n[0][0]; i++)
		cr_expect_eq(k.c[0][0][i].status, WC_SUCCESS);
	collect_fini(&k);
	r.took_ns = S.now;
	r.dropped = S.bneck.dropped;
	r.marked = S.bneck.marked;
	r.max_queue = S.bneck.max_queue;
	r.below_kmax = (double)S.bneck.below_kmax / (double)(S.bneck.below_kmax + S.bneck.above_kmax);
	r.retransmits = cnt(0, XPORT_CNT_RETRANSMIT_PKTS);
	r.cnps = cnt(1, XPORT_CNT_CNP_TX);
	r.cuts = cnt(0, XPORT_CNT_CC_RATE_CUTS);
	sim_fini(&S);
	return r;
}

Test(bottleneck, dcqcn_no_drops_full_link_vs_none)
{
	struct bn_result d = bottleneck_run(XPORT_CC_DCQCN);
	struct bn_result n = bottleneck_run(XPORT_CC_NONE);
	double bits = (double)BN_WRITES * BN_WRITE_LEN * 8;
	double gd = bits / ((double)d.took_ns / 1e9) / 1e6, gn = bits / ((double)n.took_ns / 1e9) / 1e6;

	cr_log_info("dcqcn: %.1f Mb/s goodput, %lu marks, %lu CNPs, %lu cuts, %lu drops, "
		    "%lu retransmits, queue max %lu B, %.1f %% of frames below K_max",
		    gd, (unsigned long)d.marked, (unsigned long)d.cnps, (unsigned long)d.cuts,
		    (unsigned long)d.dropped, (unsigned long)d.retransmits,
		    (unsigned long)d.max_queue, 100 * d.below_kmax);
	cr_log_info("none:  %.1f Mb/s goodput, %lu marks, %lu CNPs, %lu drops, %lu retransmits",
		    gn, (unsigned long)n.marked, (unsigned long)n.cnps, (unsigned long)n.dropped,
		    (unsigned long)n.retransmits);
	cr_expect(d.done && n.done);
	/* DCQCN: reacts, drops nothing, keeps the queue below K_max for most
	 * frames and the bottleneck busy (1024 of ~1080 frame bytes are
	 * payload; the start-up overshoot and the recovery from it cost the rest) */
	cr_expect_gt(d.cuts, 0);
	cr_expect_eq(d.dropped, 0, "dcqcn dropped %lu", (unsigned long)d.dropped);
	cr_expect_eq(d.retransmits, 0);
	cr_expect_gt(d.below_kmax, 0.9);
	cr_expect_gt(gd, 0.75 * BN_KBPS / 1000, "dcqcn goodput %.1f Mb/s", gd);
	/* none: the same run overflows the queue and goes back N */
	cr_expect_gt(n.dropped, 0);
	cr_expect_gt(n.retransmits, 0);
	cr_expect_eq(n.cuts, 0);
}

/* ---- the pacer: burst bound and READ responses -------------------------- */

/* Host 0 posts one @p opcode of @p len bytes (host 1's arena at 64 KB) and waits for its completion. */
static void
rdma_and_wait(uint8_t opcode, uint32_t len)
{
	struct sq_wqe w = wqe_new(opcode, 1, WR_FLAG_SIGNALED);
	wqe_add_sge(&w, sim_va(&S, 0, 0), len, S.h[0].arena_key);
	w.wr.rdma.remote_addr = sim_va(&S, 1, 65536);
	w.wr.rdma.rkey = S.h[1].arena_key;
	cr_assert(sim_post_send(&S, 0, &w));
	struct collect k;
	collect_init(&k);
	k.want[0][0] = 1;
	cr_assert(sim_run(&S, collect_done, &k, S.now + 1000000000));
	cr_expect_eq(k.c[0][0][0].status, WC_SUCCESS);
	collect_fini(&k);
}

static void
write_len(uint32_t len)
{
	rdma_and_wait(WR_RDMA_WRITE, len);
}

/* Host 0's frames of @p opcode: the largest number that left at one instant. */
static uint32_t
largest_burst(uint8_t opcode, int from)
{
	uint32_t best = 0, run = 0;
	uint64_t at = UINT64_MAX;

	for (uint32_t i = 0; i < CAP.n; i++) {
		if (CAP.from[i] != from || CAP.pkt[i].opcode != opcode)
			continue;
		run = CAP.at[i] == at ? run + 1 : 1;
		at = CAP.at[i];
		if (run > best)
			best = run;
	}
	return best;
}

/* A 64 KB WRITE paced at 100 Mb/s (pace_line) with every PACE timer served
 * 1 ms late, burst bound @p burst bytes: the largest burst. */
static uint32_t
late_wakeup_burst(uint32_t burst)
{
	start(true);
	CC[0].pace_line = true;
	CC[0].dcqcn.line_kbps = 100000;
	CC[0].pace_burst = burst;
	S.faults.timer_late_ns = 1000000;
	write_len(65536);
	uint32_t b = largest_burst(ROCE_OP_RC_RDMA_WRITE_MIDDLE, 0);
	stop();
	return b;
}

/*
 * One frame = 1024 + 96 bytes = 89.6 us at 100 Mb/s. A PACE timer 1 ms
 * late: without a burst bound the schedule catches up at once, 1 + 11 =
 * 12 frames (lags 1 ms, 910.4 us, ... 14.4 us); with 4480 bytes (4
 * frames, 358.4 us of credit) 1 + 4 = 5.
 */
Test(pace, a_late_wakeup_sends_at_most_the_burst)
{
	cr_expect_eq(late_wakeup_burst(4 * 1120), 5);
	cr_expect_eq(late_wakeup_burst(0), 12);
}

/* Host 0 READs 64 KB from host 1, both QPs limited to 100 Mb/s: the
 * responder's 64 READ responses leave one per 89.6 us. */
Test(pace, read_responses_obey_the_rate)
{
	struct sim_params p;

	sim_default_params(&p);
	p.arena_len = 1u << 20;
	p.rate_limit_kbps = 100000;
	cr_assert_eq(sim_init(&S, &p, 11), 0);
	capture_attach(&S, &CAP);
	S.faults.delay_ns = 1000;
	rdma_and_wait(WR_RDMA_READ, 65536);
	uint64_t first = 0, last = 0;
	uint32_t n = 0;
	for (uint32_t i = 0; i < CAP.n; i++) {
		uint8_t op = CAP.pkt[i].opcode;
		if (CAP.from[i] != 1 || op < ROCE_OP_RC_RDMA_READ_RESPONSE_FIRST ||
		    op > ROCE_OP_RC_RDMA_READ_RESPONSE_ONLY)
			continue;
		if (n++ == 0)
			first = CAP.at[i];
		last = CAP.at[i];
	}
	cr_expect_eq(n, 64);
	/* 63 intervals of 89.6 us after the first: 5644.8 us, the timer tick late at most */
	cr_expect_geq(last - first, 63 * 89600ull, "READ responses took %lu ns",
		      (unsigned long)(last - first));
	cr_expect_leq(last - first, 63 * 89600ull * 105 / 100);
	cr_expect_gt(xport_qp_counters(S.h[1].qp)[XPORT_CNT_PACE_WAIT], 0);
	cr_expect_eq(largest_burst(ROCE_OP_RC_RDMA_READ_RESPONSE_MIDDLE, 1), 1);
	stop();
}

/*
 * A QP paced at 1 Mb/s sends a 16 KB WRITE: 16 frames, one per
 * (1024 + 96) x 8 / 1 Mb/s = 8.96 ms, more than the ACK timeout (4.2 ms,
 * timeout 10). AckReq only at the message end (every 64 packets) let the
 * timer expire with nothing lost, go back N and run out of retries (as
 * the testbed's senders did at a cut rate); every packet that leaves a
 * quarter of the timeout after the last AckReq asks for an ACK.
 */
Test(pace, slow_pacing_asks_acks_within_the_ack_timeout)
{
	struct sim_params p;

	sim_default_params(&p);
	p.rate_limit_kbps = 1000;
	cr_assert_eq(sim_init(&S, &p, 11), 0);
	capture_attach(&S, &CAP);
	S.faults.delay_ns = 1000;
	write_len(16384);
	cr_expect_eq(cnt(0, XPORT_CNT_RETRANSMIT_PKTS), 0);
	uint32_t ack_req = 0;
	for (uint32_t i = 0; i < CAP.n; i++)
		if (CAP.from[i] == 0 && CAP.pkt[i].ack_req)
			ack_req++;
	cr_expect_eq(ack_req, 16, "every frame: 8.96 ms apart > 4.2 ms / 4");
	stop();
}

/* ---- cc = delay through the engine ------------------------------------- */

static void
start_delay(uint64_t target_ns)
{
	start(true);
	CC[0].algo = XPORT_CC_DELAY;
	delay_params_default(&CC[0].delay, LINE_KBPS);
	CC[0].delay.target_ns = target_ns;
}

/*
 * One-way delay 1 us, the engine takes no time: every probe's RTT is 2 us.
 * Target 1 us: the first sample cuts from line rate by 80 % x 1/2 = 40 %
 * (1000000 -> 600000 kb/s), then once per RTT by 40 % again while the RTT
 * stays 2 us; the next message is paced.
 */
Test(delay_qp, rtt_above_target_cuts_and_paces)
{
	start_delay(1000);
	write_len(16384); /* one burst: every frame leaves before the first ACK */
	cr_expect_eq(cnt(0, XPORT_CNT_PACE_WAIT), 0);
	write_len(16384); /* at the cut rate */
	const struct delay_rp *dl = xport_qp_delay(S.h[0].qp);
	cr_expect_gt(cnt(0, XPORT_CNT_CC_RTT_SAMPLES), 0);
	cr_expect_eq(cnt(0, XPORT_CNT_CC_RTT_US), 2);
	cr_expect_eq(dl->last_rtt_ns, 2000);
	cr_expect(dl->limited);
	cr_expect_eq(cnt(0, XPORT_CNT_CC_RATE_CUTS), dl->cuts);
	/* 1000000 x 0.6^cuts, integer steps: 600000, 360000, 216000, ...,
	 * not below the 1 Mb/s floor */
	uint64_t want = 1000000;
	for (uint64_t i = 0; i < dl->cuts; i++) {
		want -= want * 80 * 500 / 100000;
		if (want < 1000)
			want = 1000;
	}
	cr_expect_eq(dl->rate_kbps, want, "%lu cuts", (unsigned long)dl->cuts);
	cr_expect_eq(cnt(0, XPORT_CNT_CC_RATE_KBPS), want);
	cr_expect_gt(cnt(0, XPORT_CNT_PACE_WAIT), 0);
	cr_expect_eq(S.h[0].timer_at[XPORT_TIMER_CC], 0, "no timer: samples drive the rate");
	stop();
}

/* Target 1 ms: 2 us RTTs never cut; the QP stays at line rate. CNPs are
 * ignored under cc = delay. */
Test(delay_qp, rtt_below_target_and_cnps_change_nothing)
{
	start_delay(1000000);
	write_len(65536);
	cr_expect_gt(cnt(0, XPORT_CNT_CC_RTT_SAMPLES), 0);
	cr_expect_eq(cnt(0, XPORT_CNT_CC_RATE_CUTS), 0);
	cr_expect_eq(cnt(0, XPORT_CNT_CC_RATE_KBPS), 0);
	cr_expect_eq(cnt(0, XPORT_CNT_PACE_WAIT), 0);
	struct roce_pkt c = cnp_pkt();
	sim_inject(&S, 0, &c);
	cr_expect_eq(cnt(0, XPORT_CNT_CNP_IGNORED), 1);
	cr_expect(!xport_qp_dcqcn(S.h[0].qp)->limited);
	stop();
}

/* A retransmission voids the probe (Karn): the lost probe's go-back-N
 * gives no sample of the time the loss took. */
Test(delay_qp, a_retransmitted_probe_gives_no_sample)
{
	start_delay(1000000);
	CAP.drop_op = ROCE_OP_RC_RDMA_WRITE_ONLY;
	CAP.drop_from = 0;
	CAP.drop_nth = 0;
	struct sq_wqe w = wqe_new(WR_RDMA_WRITE, 1, WR_FLAG_SIGNALED);
	wqe_add_sge(&w, sim_va(&S, 0, 0), 8, S.h[0].arena_key);
	w.wr.rdma.remote_addr = sim_va(&S, 1, 0);
	w.wr.rdma.rkey = S.h[1].arena_key;
	cr_assert(sim_post_send(&S, 0, &w));
	struct collect k;
	collect_init(&k);
	k.want[0][0] = 1;
	cr_assert(sim_run(&S, collect_done, &k, S.now + 1000000000));
	collect_fini(&k);
	cr_expect_eq(cnt(0, XPORT_CNT_RETRANSMIT_PKTS), 1);
	cr_expect_eq(cnt(0, XPORT_CNT_CC_RTT_SAMPLES), 0, "the timeout is not an RTT");
	stop();
}
