/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Responder rules, one packet at a time: hand-made requests are fed to host
 * 1's QP (as if from host 0) and the responses it emits are asserted on.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define EPSN 0x100u /* host 1's first expected PSN (sim_default_params psn[0]) */

static struct sim S;
static struct capture C;

/* Both hosts from @p p, the link captured; host 1's answers stop there
 * (host 0 never asked: keep its completer out of it). */
static void
setup_with(const struct sim_params *p, uint64_t seed)
{
	cr_assert_eq(sim_init(&S, p, seed), 0);
	capture_attach(&S, &C);
	C.drop[1] = true;
}

static void
setup(void)
{
	struct sim_params p;
	sim_default_params(&p);
	setup_with(&p, 1);
}

static void
teardown(void)
{
	sim_fini(&S);
}

TestSuite(rules, .init = setup, .fini = teardown, .timeout = 30);

static const uint64_t *
cnt1(void)
{
	return xport_qp_counters(S.h[1].qp);
}

static const struct roce_pkt *
last(void)
{
	cr_assert_gt(C.n, 0, "host 1 sent nothing");
	return &C.pkt[C.n - 1];
}

static void
post_recv1(uint64_t wr_id, uint64_t off, uint32_t len)
{
	struct rq_wqe r = rwqe_new(wr_id, sim_va(&S, 1, off), len, S.h[1].arena_key);
	cr_assert(sim_post_recv(&S, 1, &r));
}

/* SEND_ONLY with @p len bytes of @p data. */
static struct roce_pkt
send_only(uint32_t psn, const uint8_t *data, uint32_t len)
{
	struct roce_pkt p = req_pkt(&S, ROCE_OP_RC_SEND_ONLY, psn);
	p.payload = data;
	p.payload_len = len;
	return p;
}

/* FETCH_ADD of @p add to the 8 bytes at host 1's arena offset @p off. */
static struct roce_pkt
fetch_add(uint32_t psn, uint64_t off, uint64_t add)
{
	return fetch_add_pkt(&S, psn, off, add);
}

/* The next receive completion of host 1 (there must be one). */
static struct cqe
recv_cqe1(void)
{
	struct cqe c;
	cr_assert(sim_poll_cq(&S, 1, true, &c), "no receive completion");
	return c;
}

static struct roce_pkt
write_only(uint32_t psn, uint64_t off, const uint8_t *data, uint32_t len)
{
	struct roce_pkt p = req_pkt(&S, ROCE_OP_RC_RDMA_WRITE_ONLY, psn);
	p.reth.va = sim_va(&S, 1, off);
	p.reth.rkey = S.h[1].arena_key;
	p.reth.length = len;
	p.payload = data;
	p.payload_len = len;
	return p;
}

Test(rules, psn_sequence_nak_once_then_silent)
{
	post_recv1(1, 0, 64);
	struct roce_pkt p = req_pkt(&S, ROCE_OP_RC_SEND_ONLY, EPSN + 1);
	sim_inject(&S, 1, &p);
	cr_assert_eq(C.n, 1);
	/* IBTA 9.7.5.2.1: NAK carrying the expected PSN */
	assert_ack(last(), ROCE_AETH_NAK_PSN_SEQ_ERROR, EPSN);
	p.psn = EPSN + 2;
	sim_inject(&S, 1, &p);
	cr_assert_eq(C.n, 1, "only one NAK per gap");
	cr_assert_eq(cnt1()[XPORT_CNT_DROP_PSN_OOS], 1);
	p.psn = EPSN;
	sim_inject(&S, 1, &p);
	assert_ack(last(), ROCE_AETH_ACK_UNLIMITED, EPSN);
	cr_assert_eq(xport_qp_rq_psn(S.h[1].qp), EPSN + 1);
	p.psn = EPSN + 3;
	sim_inject(&S, 1, &p);
	assert_ack(last(), ROCE_AETH_NAK_PSN_SEQ_ERROR, EPSN + 1);
	cr_assert_eq(cnt1()[XPORT_CNT_NAK_SEQ_TX], 2);
	cr_assert_eq(xport_qp_state(S.h[1].qp), XPORT_STATE_RTS, "class B: the QP stays");
}

Test(rules, rnr_nak_without_receive_wqe)
{
	struct xport_cfg cfg = S.h[1].cfg;
	cfg.min_rnr_timer = 14; /* modify_qp(MIN_RNR_TIMER) on the live QP */
	cr_assert_eq(xport_qp_modify(S.h[1].qp, &cfg), 0);
	cfg.qpn ^= 1;
	cr_assert_eq(xport_qp_modify(S.h[1].qp, &cfg), -EINVAL, "the QPN is immutable");
	struct roce_pkt p = req_pkt(&S, ROCE_OP_RC_SEND_ONLY, EPSN);
	sim_inject(&S, 1, &p);
	assert_ack(last(), ROCE_AETH_RNR_NAK | 14, EPSN);
	cr_assert_eq(xport_qp_rq_psn(S.h[1].qp), EPSN, "an RNR NAKed request is not consumed");
	cr_assert_eq(cnt1()[XPORT_CNT_RNR_NAK_TX], 1);
	/* what follows in flight is out of sequence: dropped silently */
	p.psn = EPSN + 1;
	sim_inject(&S, 1, &p);
	cr_assert_eq(C.n, 1);
	post_recv1(7, 0, 64);
	p.psn = EPSN;
	sim_inject(&S, 1, &p);
	assert_ack(last(), ROCE_AETH_ACK_UNLIMITED, EPSN);
	struct cqe c = recv_cqe1();
	cr_assert_eq(c.wr_id, 7);
	cr_assert_eq(c.status, WC_SUCCESS);
}

Test(rules, coalesced_ack_per_burst)
{
	post_recv1(1, 0, 64);
	post_recv1(2, 64, 64);
	post_recv1(3, 128, 64);
	struct roce_pkt a = req_pkt(&S, ROCE_OP_RC_SEND_ONLY, EPSN);
	struct roce_pkt b = req_pkt(&S, ROCE_OP_RC_SEND_ONLY, EPSN + 1);
	struct roce_pkt c = req_pkt(&S, ROCE_OP_RC_SEND_ONLY, EPSN + 2);
	const struct roce_pkt *burst[] = { &a, &b, &c };
	xport_out_reset(&S.out);
	xport_qp_rx_burst(S.h[1].qp, burst, 3, S.now, &S.out);
	cr_assert_eq(S.out.nframes, 1, "one ACK for three AckReq packets");
	assert_ack(&S.out.frames[0].pkt, ROCE_AETH_ACK_UNLIMITED, EPSN + 2);
	cr_assert_eq(S.out.frames[0].pkt.aeth.msn, 3, "MSN counts completed messages");
	xport_out_reset(&S.out);
}

Test(rules, opcode_sequence_error_is_invalid_request)
{
	uint8_t data[1024] = { 0 };
	struct roce_pkt p = req_pkt(&S, ROCE_OP_RC_RDMA_WRITE_MIDDLE, EPSN);
	p.payload = data;
	p.payload_len = 1024;
	sim_inject(&S, 1, &p);
	assert_ack(last(), ROCE_AETH_NAK_INVALID_REQ, EPSN);
	/* class C: the responder's QP goes to error once the NAK is out */
	cr_assert_eq(xport_qp_state(S.h[1].qp), XPORT_STATE_ERR);
	cr_assert_eq(S.h[1].qp_errors, 1);
	cr_assert_eq(S.h[1].async[ASYNC_QP_REQ_ERR], 1, "invalid request: QP_REQ_ERR event");
	cr_assert_eq(cnt1()[XPORT_CNT_NAK_INV_REQ_TX], 1);
}

Test(rules, length_errors_are_invalid_request)
{
	uint8_t data[1024] = { 0 };
	/* WRITE_ONLY with more payload than the RETH length */
	struct roce_pkt p = write_only(EPSN, 0, data, 100);
	p.reth.length = 50;
	sim_inject(&S, 1, &p);
	assert_ack(last(), ROCE_AETH_NAK_INVALID_REQ, EPSN);
	cr_assert_eq(S.h[1].arena[0], 0, "nothing written");
}

Test(rules, remote_access_errors, .init = NULL)
{
	/* each case on a fresh pair */
	static const struct {
		const char *name;
		uint32_t access;
		uint32_t pd;
		int64_t va_off;  /* relative to the MR start */
		uint32_t len;
		int op;          /* 0 write, 1 read, 2 fetch-add */
	} cases[] = {
		{ "no REMOTE_WRITE", MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_READ, SIM_PD, 0, 64, 0 },
		{ "other PD", MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE, SIM_PD + 1, 0, 64, 0 },
		{ "past the end", MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE, SIM_PD, 4000, 200, 0 },
		{ "before the start", MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE, SIM_PD, -8, 64, 0 },
		{ "no REMOTE_READ", MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE, SIM_PD, 0, 64, 1 },
		{ "no REMOTE_ATOMIC", MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE, SIM_PD, 0, 8, 2 },
		{ "bad key", 0, 0, 0, 64, 0 },
	};
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		setup();
		uint32_t key = 0x12345600; /* never registered */
		uint8_t *buf = aligned_alloc(64, 4096);
		memset(buf, 0x5a, 4096);
		if (cases[i].access)
			cr_assert_eq(mr_reg(S.h[1].mrs, cases[i].pd, (uintptr_t)buf, 0x70000000, 4096,
					    cases[i].access, &key), 0);
		uint64_t va = 0x70000000 + (uint64_t)cases[i].va_off;
		uint8_t data[256] = { 1, 2, 3 };
		struct roce_pkt p;
		if (cases[i].op == 0) {
			p = req_pkt(&S, ROCE_OP_RC_RDMA_WRITE_ONLY, EPSN);
			p.payload = data;
			p.payload_len = cases[i].len;
		} else if (cases[i].op == 1) {
			p = req_pkt(&S, ROCE_OP_RC_RDMA_READ_REQUEST, EPSN);
		} else {
			p = req_pkt(&S, ROCE_OP_RC_FETCH_ADD, EPSN);
			p.atmeth.va = va;
			p.atmeth.rkey = key;
			p.atmeth.swap_add = 1;
		}
		p.reth.va = va;
		p.reth.rkey = key;
		p.reth.length = cases[i].len;
		sim_inject(&S, 1, &p);
		cr_assert_eq(C.n, 1, "%s", cases[i].name);
		assert_ack(last(), ROCE_AETH_NAK_REM_ACC_ERR, EPSN);
		for (int b = 0; b < 4096; b++)
			cr_assert_eq(buf[b], 0x5a, "%s: no byte may move", cases[i].name);
		cr_assert_eq(xport_qp_state(S.h[1].qp), XPORT_STATE_ERR, "%s", cases[i].name);
		cr_assert_eq(S.h[1].async[ASYNC_QP_ACCESS_ERR], 1, "%s: QP_ACCESS_ERR", cases[i].name);
		free(buf);
		teardown();
	}
	setup(); /* for the suite's .fini */
}

Test(rules, zero_length_write_checks_no_rkey)
{
	struct roce_pkt p = write_only(EPSN, 0, NULL, 0);
	p.reth.rkey = 0xdead00; /* invalid, but C9-? no check for length 0 */
	sim_inject(&S, 1, &p);
	assert_ack(last(), ROCE_AETH_ACK_UNLIMITED, EPSN);
}

Test(rules, misaligned_atomic_is_invalid_request)
{
	struct roce_pkt p = req_pkt(&S, ROCE_OP_RC_COMPARE_SWAP, EPSN);
	p.atmeth.va = sim_va(&S, 1, 12);
	p.atmeth.rkey = S.h[1].arena_key;
	sim_inject(&S, 1, &p);
	assert_ack(last(), ROCE_AETH_NAK_INVALID_REQ, EPSN);
}

/*
 * A receive burst's receive completions are staged and published together
 * as xport_qp_rx_burst() returns (one release store and fence per burst):
 * all of them, in order, none left staged, the armed CQ signaled once; a
 * class C error in the burst completes after them, in order too.
 */
Test(rules, receive_burst_publishes_its_cqes_in_order)
{
	uint8_t data[16] = { 0 };
	struct roce_pkt pk[5];
	const struct roce_pkt *burst[5];

	for (uint32_t i = 0; i < 4; i++) {
		post_recv1(20 + i, 64 * i, 64);
		pk[i] = send_only(EPSN + i, data, sizeof(data));
		burst[i] = &pk[i];
	}
	S.h[1].cq_arm = XPORT_CQ_ARM_NEXT;
	sim_inject_burst(&S, 1, burst, 4);
	cr_assert_eq(S.h[1].rcq.staged, 0, "nothing left staged");
	cr_assert_eq(spsc_ring_count(S.h[1].rcq_ring), 4, "all four published");
	cr_assert_eq(S.h[1].notifies, 1, "the armed receive CQ was signaled once");
	for (uint32_t i = 0; i < 4; i++) {
		struct cqe c = recv_cqe1();
		cr_assert_eq(c.wr_id, 20 + i);
		cr_assert_eq(c.status, WC_SUCCESS);
		cr_assert_eq(c.byte_len, sizeof(data));
	}
	/* two good SENDs, then one too long for its buffer (class C: QP error) */
	post_recv1(30, 0, 64);
	post_recv1(31, 64, 64);
	post_recv1(32, 128, 8);
	for (uint32_t i = 0; i < 3; i++) {
		pk[i] = send_only(EPSN + 4 + i, data, sizeof(data));
		burst[i] = &pk[i];
	}
	sim_inject_burst(&S, 1, burst, 3);
	cr_assert_eq(S.h[1].rcq.staged, 0);
	cr_assert_eq(recv_cqe1().wr_id, 30);
	cr_assert_eq(recv_cqe1().wr_id, 31);
	struct cqe c = recv_cqe1();
	cr_assert_eq(c.wr_id, 32);
	cr_assert_eq(c.status, WC_LOC_LEN_ERR);
	assert_ack(last(), ROCE_AETH_NAK_INVALID_REQ, EPSN + 6);
}

Test(rules, unwritable_receive_buffer_is_remote_op_error)
{
	struct rq_wqe r = rwqe_new(9, sim_va(&S, 1, 0), 64, 0x4242); /* bad lkey */
	cr_assert(sim_post_recv(&S, 1, &r));
	uint8_t data[16] = { 0 };
	struct roce_pkt p = send_only(EPSN, data, sizeof(data));
	sim_inject(&S, 1, &p);
	assert_ack(last(), ROCE_AETH_NAK_REM_OP_ERR, EPSN);
	struct cqe c = recv_cqe1();
	cr_assert_eq(c.wr_id, 9);
	cr_assert_eq(c.status, WC_LOC_PROT_ERR);
	cr_assert_eq(cnt1()[XPORT_CNT_NAK_OP_TX], 1);
	cr_assert_eq(S.h[1].async[ASYNC_QP_FATAL], 1);
}

Test(rules, receive_buffer_too_small_is_invalid_request)
{
	post_recv1(3, 0, 8);
	uint8_t data[16] = { 0 };
	struct roce_pkt p = send_only(EPSN, data, sizeof(data));
	sim_inject(&S, 1, &p);
	assert_ack(last(), ROCE_AETH_NAK_INVALID_REQ, EPSN);
	cr_assert_eq(recv_cqe1().status, WC_LOC_LEN_ERR);
}

/*
 * Receive rings of one line a slot (wqe.h rq_wqe_stride(): up to three
 * SGEs, what the daemon makes for max_recv_sge <= 3), RQ and SRQ: SENDs
 * land in consecutive slots; a WQE claiming more SGEs than its slot holds
 * is read as no capacity (the engine does not read past the slot) and the
 * message is an invalid request.
 */
static void
line_slots(bool srq)
{
	struct sim_params p;

	sim_default_params(&p);
	p.rq_stride = rq_wqe_stride(3);
	p.srq = srq;
	cr_assert_eq(p.rq_stride, 64);
	cr_assert_eq(rq_wqe_max_sge(p.rq_stride), 3);
	setup_with(&p, 1);
}

static void
setup_line_slots(void)
{
	line_slots(false);
}

static void
setup_line_slots_srq(void)
{
	line_slots(true);
}

static void
receive_into_line_slots(void)
{
	uint8_t data[24];

	for (uint32_t i = 0; i < 3; i++) {
		struct rq_wqe r = rwqe_new(10 + i, sim_va(&S, 1, 64 * i), 8, S.h[1].arena_key);

		r.sg_list[1] = (struct wr_sge){ sim_va(&S, 1, 4096 + 64 * i), 16, S.h[1].arena_key };
		r.num_sge = 2;
		cr_assert(sim_post_recv(&S, 1, &r));
	}
	for (uint32_t i = 0; i < 3; i++) {
		memset(data, 0x30 + (int)i, sizeof(data));
		struct roce_pkt p = send_only(EPSN + i, data, sizeof(data));
		sim_inject(&S, 1, &p);
		assert_ack(last(), ROCE_AETH_ACK_UNLIMITED, EPSN + i);
		struct cqe c = recv_cqe1();
		cr_assert_eq(c.wr_id, 10 + i);
		cr_assert_eq(c.status, WC_SUCCESS);
		cr_assert_eq(c.byte_len, sizeof(data));
		cr_assert_eq(S.h[1].arena[64 * i + 7], 0x30 + i, "slot %u's first SGE", i);
		cr_assert_eq(S.h[1].arena[4096 + 64 * i + 15], 0x30 + i, "slot %u's second SGE", i);
	}
	/* four SGEs do not fit a line: the fourth would lie in the next slot */
	struct rq_wqe r = rwqe_new(20, sim_va(&S, 1, 8192), 4096, S.h[1].arena_key);
	r.num_sge = 4;
	cr_assert(sim_post_recv(&S, 1, &r));
	struct roce_pkt p = send_only(EPSN + 3, data, 8);
	sim_inject(&S, 1, &p);
	assert_ack(last(), ROCE_AETH_NAK_INVALID_REQ, EPSN + 3);
	struct cqe c = recv_cqe1();
	cr_assert_eq(c.wr_id, 20);
	cr_assert_eq(c.status, WC_LOC_LEN_ERR);
}

Test(rules, a_receive_ring_of_line_slots, .init = setup_line_slots)
{
	receive_into_line_slots();
}

Test(rules, an_srq_of_line_slots, .init = setup_line_slots_srq)
{
	receive_into_line_slots();
}

Test(rules, duplicate_write_and_send_reacked_not_reexecuted)
{
	uint8_t data[32];
	memset(data, 0xab, sizeof(data));
	struct roce_pkt w = write_only(EPSN, 256, data, sizeof(data));
	sim_inject(&S, 1, &w);
	cr_assert_eq(S.h[1].arena[256], 0xab);
	S.h[1].arena[256] = 0x11; /* the application changes it */
	post_recv1(1, 0, 64);
	post_recv1(2, 64, 64);
	struct roce_pkt s = send_only(EPSN + 1, data, 8);
	sim_inject(&S, 1, &s);
	uint32_t n = C.n;
	/* both again */
	sim_inject(&S, 1, &w);
	assert_ack(last(), ROCE_AETH_ACK_UNLIMITED, EPSN + 1); /* C9-105: ePSN - 1 */
	sim_inject(&S, 1, &s);
	assert_ack(last(), ROCE_AETH_ACK_UNLIMITED, EPSN + 1);
	cr_assert_eq(C.n, n + 2);
	cr_assert_eq(S.h[1].arena[256], 0x11, "duplicate WRITE not executed");
	struct cqe c = recv_cqe1();
	cr_assert_eq(c.wr_id, 1);
	cr_assert_not(sim_poll_cq(&S, 1, true, &c), "duplicate SEND not executed");
	cr_assert_eq(cnt1()[XPORT_CNT_DUP_REQ], 2);
}

static struct roce_pkt
read_req(uint32_t psn, uint64_t off, uint32_t len)
{
	struct roce_pkt p = req_pkt(&S, ROCE_OP_RC_RDMA_READ_REQUEST, psn);
	p.reth.va = sim_va(&S, 1, off);
	p.reth.rkey = S.h[1].arena_key;
	p.reth.length = len;
	return p;
}

Test(rules, duplicate_read_replays_from_any_psn)
{
	uint32_t mtu = 1024;
	fill(S.h[1].arena + 8192, 3 * mtu, 5);
	struct roce_pkt r = read_req(EPSN, 8192, 3 * mtu);
	sim_inject(&S, 1, &r);
	cr_assert_eq(C.n, 3);
	cr_assert_eq(C.pkt[0].opcode, ROCE_OP_RC_RDMA_READ_RESPONSE_FIRST);
	cr_assert_eq(C.pkt[1].opcode, ROCE_OP_RC_RDMA_READ_RESPONSE_MIDDLE);
	cr_assert_eq(C.pkt[2].opcode, ROCE_OP_RC_RDMA_READ_RESPONSE_LAST);
	cr_assert_eq(C.pkt[2].psn, EPSN + 2);
	cr_assert_eq(xport_qp_rq_psn(S.h[1].qp), EPSN + 3);
	/* a later request, then the READ again from its second packet */
	uint8_t data[8] = { 0 };
	struct roce_pkt w = write_only(EPSN + 3, 0, data, 8);
	sim_inject(&S, 1, &w);
	fill(S.h[1].arena + 8192, 3 * mtu, 6); /* memory changed: the replay re-reads it */
	struct roce_pkt d = read_req(EPSN + 1, 8192 + mtu, 2 * mtu);
	uint32_t n = C.n;
	sim_inject(&S, 1, &d);
	cr_assert_eq(C.n, n + 2);
	cr_assert_eq(C.pkt[n].opcode, ROCE_OP_RC_RDMA_READ_RESPONSE_MIDDLE);
	cr_assert_eq(C.pkt[n].psn, EPSN + 1);
	cr_assert_eq(C.pkt[n + 1].opcode, ROCE_OP_RC_RDMA_READ_RESPONSE_LAST);
	cr_assert_eq(cnt1()[XPORT_CNT_DUP_READ_REPLAY], 1);
	/* not a subset of the original: dropped (class D) */
	struct roce_pkt bad = read_req(EPSN + 1, 8192, 2 * mtu);
	sim_inject(&S, 1, &bad);
	cr_assert_eq(C.n, n + 2);
	cr_assert_eq(cnt1()[XPORT_CNT_DROP_DUP_UNKNOWN], 1);
	cr_assert_eq(xport_qp_rq_psn(S.h[1].qp), EPSN + 4, "duplicates do not move ePSN");
}

Test(rules, duplicate_atomic_replays_saved_result)
{
	uint64_t *slot = (uint64_t *)(void *)(S.h[1].arena + 64);
	*slot = 40;
	struct roce_pkt a = fetch_add(EPSN, 64, 2);
	sim_inject(&S, 1, &a);
	cr_assert_eq(last()->opcode, ROCE_OP_RC_ATOMIC_ACKNOWLEDGE);
	cr_assert_eq(last()->atmack_orig, 40);
	cr_assert_eq(*slot, 42);
	sim_inject(&S, 1, &a);
	cr_assert_eq(last()->opcode, ROCE_OP_RC_ATOMIC_ACKNOWLEDGE);
	cr_assert_eq(last()->atmack_orig, 40, "the saved original value");
	cr_assert_eq(*slot, 42, "never executed twice");
	cr_assert_eq(cnt1()[XPORT_CNT_DUP_ATOMIC_REPLAY], 1);
}

Test(rules, duplicate_older_than_resources_dropped)
{
	/* max_dest_rd_atomic atomics push the first one out of the resources */
	unsigned n = S.h[1].cfg.max_dest_rd_atomic;
	struct roce_pkt a = fetch_add(EPSN, 64, 1);
	for (unsigned i = 0; i <= n; i++) {
		a.psn = EPSN + i;
		sim_inject(&S, 1, &a);
	}
	uint32_t before = C.n;
	a.psn = EPSN;
	sim_inject(&S, 1, &a);
	cr_assert_eq(C.n, before, "silently dropped");
	cr_assert_eq(cnt1()[XPORT_CNT_DROP_DUP_UNKNOWN], 1);
	a.psn = EPSN + n;
	sim_inject(&S, 1, &a);
	cr_assert_eq(C.n, before + 1, "a recent one is still replayed");
}

/* Drain host 1's output: one activation holds XPORT_OUT_FRAMES frames. */
static void
drain1(void)
{
	for (int i = 0; i < 64; i++) {
		uint32_t n = C.n;
		sim_poll(&S);
		if (C.n == n)
			return;
	}
	cr_assert_fail("host 1 never stopped sending");
}

/* rxe under loss: the ACK of the oldest READ is late, the requester resends
 * all n outstanding READs (duplicates -> replays queued), the late ACK
 * arrives, the requester completes the oldest and sends READ n (new) in the
 * same receive burst as the duplicates. The new READ reuses the oldest
 * resource; its queued replay is dropped, no invalid request NAK. */
Test(rules, new_read_reuses_resource_of_queued_replay)
{
	unsigned n = S.h[1].cfg.max_dest_rd_atomic;
	struct roce_pkt pk[XPORT_MAX_RD_ATOMIC + 1];
	const struct roce_pkt *burst[XPORT_MAX_RD_ATOMIC + 1];

	fill(S.h[1].arena + 8192, (n + 1) * 8, 7);
	for (unsigned i = 0; i < n; i++) {
		pk[i] = read_req(EPSN + i, 8192 + 8 * i, 8);
		sim_inject(&S, 1, &pk[i]);
	}
	drain1();
	cr_assert_eq(C.n, n);
	for (unsigned i = 0; i <= n; i++) {
		pk[i] = read_req(EPSN + i, 8192 + 8 * i, 8);
		burst[i] = &pk[i];
	}
	uint32_t before = C.n;
	sim_inject_burst(&S, 1, burst, n + 1);
	drain1();
	cr_assert_eq(cnt1()[XPORT_CNT_NAK_INV_REQ_TX], 0, "no invalid request NAK");
	cr_assert_eq(xport_qp_state(S.h[1].qp), XPORT_STATE_RTS);
	cr_assert_eq(S.h[1].qp_errors, 0);
	cr_assert_eq(cnt1()[XPORT_CNT_DROP_STALE_REPLAY], 1);
	cr_assert_eq(cnt1()[XPORT_CNT_DUP_READ_REPLAY], n);
	cr_assert_eq(xport_qp_rq_psn(S.h[1].qp), EPSN + n + 1);
	/* replays of READs 1..n-1, then the new READ n, in PSN order */
	cr_assert_eq(C.n, before + n);
	for (unsigned i = 0; i < n; i++) {
		const struct roce_pkt *p = &C.pkt[before + i];
		cr_assert_eq(p->opcode, ROCE_OP_RC_RDMA_READ_RESPONSE_ONLY, "#%u 0x%02x", i,
			     p->opcode);
		cr_assert_eq(p->psn, EPSN + 1 + i, "#%u psn 0x%06x", i, p->psn);
		cr_assert_eq(p->payload_len, 8);
	}
	/* the new READ is a resource too: a duplicate of it is replayed */
	sim_inject(&S, 1, &pk[n]);
	cr_assert_eq(last()->psn, EPSN + n);
	cr_assert_eq(last()->opcode, ROCE_OP_RC_RDMA_READ_RESPONSE_ONLY);
}

/* Same with ATOMICs: a new FETCH_ADD executes once; the stale replay of the
 * oldest saved result is dropped. */
Test(rules, new_atomic_reuses_resource_of_queued_replay)
{
	unsigned n = S.h[1].cfg.max_dest_rd_atomic;
	uint64_t *slot = (uint64_t *)(void *)(S.h[1].arena + 64);
	struct roce_pkt pk[XPORT_MAX_RD_ATOMIC + 1];
	const struct roce_pkt *burst[XPORT_MAX_RD_ATOMIC + 1];

	*slot = 0;
	for (unsigned i = 0; i <= n; i++) {
		pk[i] = fetch_add(EPSN + i, 64, 1);
		burst[i] = &pk[i];
	}
	for (unsigned i = 0; i < n; i++)
		sim_inject(&S, 1, &pk[i]);
	drain1();
	uint32_t before = C.n;
	sim_inject_burst(&S, 1, burst, n + 1);
	drain1();
	cr_assert_eq(cnt1()[XPORT_CNT_NAK_INV_REQ_TX], 0, "no invalid request NAK");
	cr_assert_eq(xport_qp_state(S.h[1].qp), XPORT_STATE_RTS);
	cr_assert_eq(*slot, n + 1, "each ATOMIC executed exactly once");
	cr_assert_eq(cnt1()[XPORT_CNT_DROP_STALE_REPLAY], 1);
	cr_assert_eq(C.n, before + n);
	for (unsigned i = 0; i < n; i++) {
		cr_assert_eq(C.pkt[before + i].opcode, ROCE_OP_RC_ATOMIC_ACKNOWLEDGE);
		cr_assert_eq(C.pkt[before + i].psn, EPSN + 1 + i);
		cr_assert_eq(C.pkt[before + i].atmack_orig, 1 + i, "saved result of #%u", 1 + i);
	}
}

/* More new READs in one burst than responder resources, none answered yet:
 * still "too many outstanding" -> NAK invalid request, QP to error. */
Test(rules, too_many_new_reads_is_invalid_request)
{
	unsigned n = S.h[1].cfg.max_dest_rd_atomic;
	struct roce_pkt pk[XPORT_MAX_RD_ATOMIC + 1];
	const struct roce_pkt *burst[XPORT_MAX_RD_ATOMIC + 1];

	for (unsigned i = 0; i <= n; i++) {
		pk[i] = read_req(EPSN + i, 8192, 8);
		burst[i] = &pk[i];
	}
	sim_inject_burst(&S, 1, burst, n + 1);
	drain1();
	cr_assert_eq(cnt1()[XPORT_CNT_NAK_INV_REQ_TX], 1);
	cr_assert_eq(cnt1()[XPORT_CNT_DROP_STALE_REPLAY], 0);
	cr_assert_eq(xport_qp_state(S.h[1].qp), XPORT_STATE_ERR);
}

/* Inject READs of 8 bytes at PSNs EPSN + first .. + first + count - 1 in one
 * burst (nothing answered in between), then drain host 1. */
static void
read_burst(unsigned first, unsigned count)
{
	struct roce_pkt pk[XPORT_MAX_RD_ATOMIC + 1];
	const struct roce_pkt *burst[XPORT_MAX_RD_ATOMIC + 1];

	cr_assert_leq(count, XPORT_MAX_RD_ATOMIC + 1);
	for (unsigned i = 0; i < count; i++) {
		pk[i] = read_req(EPSN + first + i, 8192 + 8 * (first + i), 8);
		burst[i] = &pk[i];
	}
	sim_inject_burst(&S, 1, burst, count);
	drain1();
}

static void
setup_dest_rd_atomic(uint8_t n)
{
	struct sim_params p;
	sim_default_params(&p);
	p.max_dest_rd_atomic = n;
	setup_with(&p, 1);
}

/* modify_qp(MAX_DEST_RD_ATOMIC = @p n) on host 1's live QP, in SQD as the
 * modify table requires, then back to RTS. */
static void
modify_dest_rd_atomic(uint8_t n)
{
	sim_set_state(&S, 1, XPORT_STATE_SQD);
	struct xport_cfg cfg = S.h[1].cfg;
	cfg.max_dest_rd_atomic = n;
	cr_assert_eq(xport_qp_modify(S.h[1].qp, &cfg), 0);
	sim_set_state(&S, 1, XPORT_STATE_RTS);
}

/* max_dest_rd_atomic is the ring's length, not only a power of two: with 3
 * resources 3 new READs in one burst are fine, a 4th is one too many. */
Test(rules, resource_ring_has_max_dest_rd_atomic_slots, .init = NULL)
{
	setup_dest_rd_atomic(3);
	read_burst(0, 3);
	cr_assert_eq(cnt1()[XPORT_CNT_NAK_INV_REQ_TX], 0);
	cr_assert_eq(C.n, 3);
	read_burst(3, 3); /* the ring wraps: the answered ones are reused */
	cr_assert_eq(cnt1()[XPORT_CNT_NAK_INV_REQ_TX], 0);
	cr_assert_eq(C.n, 6);
	read_burst(6, 4);
	cr_assert_eq(cnt1()[XPORT_CNT_NAK_INV_REQ_TX], 1);
	cr_assert_eq(xport_qp_state(S.h[1].qp), XPORT_STATE_ERR);
}

/*
 * lib/xport's calloc() goes through here: this executable links with
 * -Wl,--wrap=calloc (test/engine/meson.build), so a test can make the next
 * allocations fail.
 */
void *__real_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size);
static unsigned int calloc_failures;

void *
__wrap_calloc(size_t n, size_t size)
{
	if (calloc_failures > 0) {
		calloc_failures--;
		errno = ENOMEM;
		return NULL;
	}
	return __real_calloc(n, size);
}

/* A modify that must grow the resources and gets no memory fails with
 * -ENOMEM and changes nothing (ibv_modify_qp is all or nothing): the same
 * two resources, the same state, and the QP keeps working. */
Test(rules, modify_without_memory_changes_nothing, .init = NULL)
{
	setup_dest_rd_atomic(2);
	read_burst(0, 2);
	cr_assert_eq(C.n, 2);
	sim_set_state(&S, 1, XPORT_STATE_SQD);
	struct xport_cfg cfg = S.h[1].cfg;
	cfg.max_dest_rd_atomic = 8;
	calloc_failures = 1;
	cr_assert_eq(xport_qp_modify(S.h[1].qp, &cfg), -ENOMEM);
	cr_assert_eq(calloc_failures, 0, "the modify asked for memory");
	cr_assert_eq(xport_qp_state(S.h[1].qp), XPORT_STATE_SQD);
	sim_set_state(&S, 1, XPORT_STATE_RTS);
	/* the oldest READ is still a resource: its duplicate is replayed */
	struct roce_pkt d = read_req(EPSN, 8192, 8);
	sim_inject(&S, 1, &d);
	cr_assert_eq(last()->opcode, ROCE_OP_RC_RDMA_READ_RESPONSE_ONLY);
	cr_assert_eq(last()->psn, EPSN);
	/* still two slots: three new READs at once are one too many (eight would fit) */
	read_burst(2, 3);
	cr_assert_eq(cnt1()[XPORT_CNT_NAK_INV_REQ_TX], 1);
	cr_assert_eq(xport_qp_state(S.h[1].qp), XPORT_STATE_ERR);
}

/* The same modify with memory: now three new READs at once fit. */
Test(rules, modify_with_memory_after_a_failed_one, .init = NULL)
{
	setup_dest_rd_atomic(2);
	read_burst(0, 2);
	sim_set_state(&S, 1, XPORT_STATE_SQD);
	struct xport_cfg cfg = S.h[1].cfg;
	cfg.max_dest_rd_atomic = 8;
	calloc_failures = 1;
	cr_assert_eq(xport_qp_modify(S.h[1].qp, &cfg), -ENOMEM);
	cr_assert_eq(xport_qp_modify(S.h[1].qp, &cfg), 0);
	sim_set_state(&S, 1, XPORT_STATE_RTS);
	read_burst(2, 3);
	cr_assert_eq(cnt1()[XPORT_CNT_NAK_INV_REQ_TX], 0);
	cr_assert_eq(C.n, 2 + 3);
}

/* modify_qp(MAX_DEST_RD_ATOMIC) in SQD on a live QP: the resources grow
 * (allocated by the modify) and keep what they had, in age order. */
Test(rules, modify_grows_resources_of_live_qp, .init = NULL)
{
	setup_dest_rd_atomic(2);
	read_burst(0, 2);
	cr_assert_eq(C.n, 2);
	modify_dest_rd_atomic(8);
	/* the oldest READ is still a resource: its duplicate is replayed */
	struct roce_pkt d = read_req(EPSN, 8192, 8);
	sim_inject(&S, 1, &d);
	cr_assert_eq(last()->opcode, ROCE_OP_RC_RDMA_READ_RESPONSE_ONLY);
	cr_assert_eq(last()->psn, EPSN);
	cr_assert_eq(cnt1()[XPORT_CNT_DUP_READ_REPLAY], 1);
	/* 8 new READs at once now fit; the 8 newest are the resources */
	read_burst(2, 8);
	cr_assert_eq(cnt1()[XPORT_CNT_NAK_INV_REQ_TX], 0);
	cr_assert_eq(C.n, 3 + 8);
	for (unsigned i = 0; i < 8; i++) {
		cr_assert_eq(C.pkt[3 + i].psn, EPSN + 2 + i);
		cr_assert_eq(C.pkt[3 + i].opcode, ROCE_OP_RC_RDMA_READ_RESPONSE_ONLY);
		cr_assert_eq(C.pkt[3 + i].payload_len, 8);
	}
	d = read_req(EPSN + 1, 8192 + 8, 8);
	uint32_t before = C.n;
	sim_inject(&S, 1, &d);
	cr_assert_eq(C.n, before, "pushed out by 8 newer ones: dropped");
	cr_assert_eq(cnt1()[XPORT_CNT_DROP_DUP_UNKNOWN], 1);
	/* 9 is one too many */
	read_burst(10, 9);
	cr_assert_eq(cnt1()[XPORT_CNT_NAK_INV_REQ_TX], 1);
}

/* A shorter ring keeps the newest resources. */
Test(rules, modify_shrinks_resources_keeping_newest, .init = NULL)
{
	setup_dest_rd_atomic(8);
	read_burst(0, 5); /* slots 0..4 of 8: not wrapped */
	read_burst(5, 5); /* wrapped: the oldest is PSN 2 in slot 2 */
	cr_assert_eq(C.n, 10);
	modify_dest_rd_atomic(3);
	for (unsigned i = 7; i < 10; i++) {
		struct roce_pkt d = read_req(EPSN + i, 8192 + 8 * i, 8);
		sim_inject(&S, 1, &d);
		cr_assert_eq(last()->psn, EPSN + i, "READ %u kept", i);
	}
	cr_assert_eq(cnt1()[XPORT_CNT_DUP_READ_REPLAY], 3);
	struct roce_pkt d = read_req(EPSN + 6, 8192 + 8 * 6, 8);
	sim_inject(&S, 1, &d);
	cr_assert_eq(cnt1()[XPORT_CNT_DROP_DUP_UNKNOWN], 1, "READ 6 is gone");
	read_burst(10, 3);
	cr_assert_eq(cnt1()[XPORT_CNT_NAK_INV_REQ_TX], 0);
	read_burst(13, 4);
	cr_assert_eq(cnt1()[XPORT_CNT_NAK_INV_REQ_TX], 1, "3 resources now");
}

/* rxe's limit: 128 new READs outstanding at once are accepted and answered. */
Test(rules, max_rd_atomic_resources_as_rxe)
{
	cr_assert_eq(S.h[1].cfg.max_dest_rd_atomic, 128);
	read_burst(0, 128);
	cr_assert_eq(cnt1()[XPORT_CNT_NAK_INV_REQ_TX], 0);
	cr_assert_eq(C.n, 128);
	cr_assert_eq(last()->psn, EPSN + 127);
}

Test(rules, filters_drop_and_count)
{
	post_recv1(1, 0, 64);
	struct roce_pkt p = req_pkt(&S, ROCE_OP_RC_SEND_ONLY, EPSN);
	p.l3.sgid[15] ^= 0x40; /* another host */
	sim_inject(&S, 1, &p);
	p = req_pkt(&S, ROCE_OP_RC_SEND_ONLY, EPSN);
	p.dest_qpn ^= 1;
	sim_inject(&S, 1, &p);
	p = req_pkt(&S, ROCE_OP_RC_SEND_ONLY, EPSN);
	p.pkey = 0x8001;
	sim_inject(&S, 1, &p);
	p = req_pkt(&S, ROCE_OP_UC_SEND_ONLY, EPSN);
	sim_inject(&S, 1, &p);
	cr_assert_eq(C.n, 0);
	cr_assert_eq(cnt1()[XPORT_CNT_DROP_SOURCE], 1);
	cr_assert_eq(cnt1()[XPORT_CNT_DROP_DEST_QP], 1);
	cr_assert_eq(cnt1()[XPORT_CNT_DROP_PKEY], 1);
	cr_assert_eq(cnt1()[XPORT_CNT_DROP_TRANSPORT], 1);
	cr_assert_eq(xport_qp_rq_psn(S.h[1].qp), EPSN);
}

Test(rules, send_with_invalidate)
{
	uint8_t *buf = aligned_alloc(64, 4096);
	uint32_t key;
	/* a region the peer may invalidate (rxe: a fast-registration MR) */
	cr_assert_eq(mr_reg(S.h[1].mrs, SIM_PD, (uintptr_t)buf, 0x70000000, 4096,
			    MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE |
				    MR_ACCESS_REMOTE_INVALIDATE,
			    &key),
		     0);
	post_recv1(4, 0, 64);
	struct roce_pkt p = req_pkt(&S, ROCE_OP_RC_SEND_ONLY_WITH_INVALIDATE, EPSN);
	p.ieth_rkey = key;
	sim_inject(&S, 1, &p);
	struct cqe c = recv_cqe1();
	cr_assert_eq(c.status, WC_SUCCESS);
	cr_assert_eq(c.wc_flags, WC_FLAG_WITH_INV);
	cr_assert_eq(c.imm_data, key, "invalidated_rkey");
	/* the key is dead now */
	uint8_t data[8] = { 0 };
	struct roce_pkt w = req_pkt(&S, ROCE_OP_RC_RDMA_WRITE_ONLY, EPSN + 1);
	w.reth.va = 0x70000000;
	w.reth.rkey = key;
	w.reth.length = 8;
	w.payload = data;
	w.payload_len = 8;
	sim_inject(&S, 1, &w);
	assert_ack(last(), ROCE_AETH_NAK_REM_ACC_ERR, EPSN + 1);
	free(buf);
}

/*
 * Issue 16: a SEND with Invalidate could invalidate any region of the PD,
 * a local-only one included (a peer could break the application's own
 * receive buffers). As rxe, a region of ibv_reg_mr() may not be
 * invalidated remotely: invalid request NAK, the receive completes with
 * IBV_WC_REM_INV_REQ_ERR, the region stays valid and the refusal is counted.
 */
Test(rules, send_with_invalidate_of_a_registered_region_is_refused)
{
	static const uint32_t kinds[] = { MR_ACCESS_LOCAL_WRITE,
					  MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE };

	for (unsigned int k = 0; k < 2; k++) {
		uint8_t *buf = aligned_alloc(64, 4096), *host;
		uint32_t key;

		if (k > 0) {
			teardown();
			setup();
		}
		cr_assert_eq(mr_reg(S.h[1].mrs, SIM_PD, (uintptr_t)buf, 0x70000000, 4096, kinds[k],
				    &key),
			     0);
		post_recv1(4, 0, 64);
		struct roce_pkt p = req_pkt(&S, ROCE_OP_RC_SEND_ONLY_WITH_INVALIDATE, EPSN);
		p.ieth_rkey = key;
		sim_inject(&S, 1, &p);
		assert_ack(last(), ROCE_AETH_NAK_INVALID_REQ, EPSN);
		cr_assert_eq(recv_cqe1().status, WC_REM_INV_REQ_ERR);
		cr_assert_eq(cnt1()[XPORT_CNT_INV_REFUSED], 1, "access 0x%x", kinds[k]);
		cr_assert_eq(mr_check(S.h[1].mrs, key, SIM_PD, 0x70000000, 8, 0, &host), MR_OK,
			     "the region is still valid (access 0x%x)", kinds[k]);
		free(buf);
	}
}

/*
 * Issue 16: the ATOMIC alignment check read the wire VA only. A region
 * whose IOVA is 8-aligned but whose buffer is not puts the CPU's atomic on
 * a misaligned host address (a split lock on x86, SIGBUS on arm64). Now:
 * invalid request NAK, counted, memory untouched.
 */
Test(rules, atomic_on_a_misaligned_host_address_is_an_invalid_request)
{
	uint8_t *buf = aligned_alloc(64, 4096);
	uint64_t before = 0x1122334455667788ull, now;
	uint32_t key;

	memcpy(buf + 4, &before, 8);
	cr_assert_eq(mr_reg(S.h[1].mrs, SIM_PD, (uintptr_t)buf + 4, 0x70000000, 64,
			    MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_ATOMIC, &key),
		     0);
	struct roce_pkt p = req_pkt(&S, ROCE_OP_RC_FETCH_ADD, EPSN);
	p.atmeth.va = 0x70000000; /* aligned on the wire */
	p.atmeth.rkey = key;
	p.atmeth.swap_add = 1;
	sim_inject(&S, 1, &p);
	assert_ack(last(), ROCE_AETH_NAK_INVALID_REQ, EPSN);
	cr_assert_eq(cnt1()[XPORT_CNT_ATOMIC_HOST_MISALIGNED], 1);
	memcpy(&now, buf + 4, 8);
	cr_assert_eq(now, before, "not executed");
	free(buf);
}

/*
 * Issue 16: only the low 15 bits of the P_Key were compared. IBA 10.9.3:
 * two limited members (bit 15 clear on both) may not communicate; a limited
 * member and a full member may.
 */
Test(rules, pkey_membership_bit)
{
	struct xport_cfg cfg = S.h[1].cfg;

	cfg.pkey = 0x7fff; /* host 1 is a limited member of the default partition */
	cr_assert_eq(xport_qp_modify(S.h[1].qp, &cfg), 0);
	post_recv1(1, 0, 64);
	post_recv1(2, 0, 64);
	struct roce_pkt p = req_pkt(&S, ROCE_OP_RC_SEND_ONLY, EPSN);
	p.pkey = 0x7fff; /* limited to limited */
	sim_inject(&S, 1, &p);
	cr_assert_eq(C.n, 0, "dropped, no answer");
	cr_assert_eq(cnt1()[XPORT_CNT_DROP_PKEY], 1);
	p.pkey = 0xffff; /* full to limited */
	sim_inject(&S, 1, &p);
	assert_ack(last(), ROCE_AETH_ACK_UNLIMITED, EPSN);
	cfg.pkey = 0xffff;
	cr_assert_eq(xport_qp_modify(S.h[1].qp, &cfg), 0);
	p = req_pkt(&S, ROCE_OP_RC_SEND_ONLY, EPSN + 1);
	p.pkey = 0x7fff; /* limited to full */
	sim_inject(&S, 1, &p);
	assert_ack(last(), ROCE_AETH_ACK_UNLIMITED, EPSN + 1);
	p = req_pkt(&S, ROCE_OP_RC_SEND_ONLY, EPSN + 2);
	p.pkey = 0x8000; /* no partition at all */
	sim_inject(&S, 1, &p);
	cr_assert_eq(cnt1()[XPORT_CNT_DROP_PKEY], 2);
}

Test(rules, srq_limit_event)
{
	sim_fini(&S);
	struct sim_params prm;
	sim_default_params(&prm);
	prm.srq = true;
	setup_with(&prm, 1);
	for (int i = 0; i < 5; i++)
		post_recv1((uint64_t)i, (uint64_t)i * 64, 64);
	S.h[1].srq.limit = 3;
	S.h[1].srq.limit_armed = true;
	struct roce_pkt p = req_pkt(&S, ROCE_OP_RC_SEND_ONLY, EPSN);
	sim_inject(&S, 1, &p); /* 4 left */
	cr_assert_eq(S.h[1].async[ASYNC_SRQ_LIMIT_REACHED], 0);
	p.psn = EPSN + 1;
	sim_inject(&S, 1, &p); /* 3 left: not below */
	cr_assert_eq(S.h[1].async[ASYNC_SRQ_LIMIT_REACHED], 0);
	p.psn = EPSN + 2;
	sim_inject(&S, 1, &p); /* 2 left: below the limit */
	cr_assert_eq(S.h[1].async[ASYNC_SRQ_LIMIT_REACHED], 1);
	cr_assert_not(S.h[1].srq.limit_armed, "the event disarms the limit");
	p.psn = EPSN + 3;
	sim_inject(&S, 1, &p);
	cr_assert_eq(S.h[1].async[ASYNC_SRQ_LIMIT_REACHED], 1);
}

Test(rules, comm_est_on_first_packet_in_rtr)
{
	sim_set_state(&S, 1, XPORT_STATE_RESET);
	sim_set_state(&S, 1, XPORT_STATE_RTR);
	post_recv1(1, 0, 64);
	struct roce_pkt p = req_pkt(&S, ROCE_OP_RC_SEND_ONLY, EPSN);
	sim_inject(&S, 1, &p);
	cr_assert_eq(S.h[1].async[ASYNC_COMM_EST], 1);
	assert_ack(last(), ROCE_AETH_ACK_UNLIMITED, EPSN);
	p.psn = EPSN + 1;
	sim_inject(&S, 1, &p);
	cr_assert_eq(S.h[1].async[ASYNC_COMM_EST], 1, "once");
	/* a response in RTR is dropped: the requester is not running */
	struct roce_pkt ack = req_pkt(&S, ROCE_OP_RC_ACKNOWLEDGE, 5);
	sim_inject(&S, 1, &ack);
	cr_assert_eq(cnt1()[XPORT_CNT_DROP_STATE], 1);
}

/* Hostile input: random well-formed records with random fields. Nothing may
 * crash, read or write outside registered memory (ASan build), or hang. */
static void
fuzz_type(uint8_t type, uint64_t seed)
{
	sim_fini(&S);
	struct sim_params prm;
	sim_default_params(&prm);
	prm.type = type;
	setup_with(&prm, seed);
	C.drop[0] = true;
	static uint8_t payload[4096];
	for (unsigned i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)i;
	const struct roce_opcode_desc *d;
	for (int i = 0; i < 20000; i++) {
		uint8_t op, want = type == XPORT_RC ? 0x00 : type == XPORT_UC ? 0x20 : 0x60;
		bool same = sim_below(&S, 8) != 0; /* mostly this QP's transport */
		do
			op = (uint8_t)sim_rand(&S);
		while (!(d = roce_opcode_desc(op)) || (same && roce_opcode_transport(op) != want));
		int h = (int)sim_below(&S, 2);
		struct roce_pkt p = req_pkt(&S, op, (uint32_t)sim_rand(&S));
		if (h == 0) { /* as if from host 1 */
			memcpy(p.l3.sgid, S.h[1].cfg.av.sgid, 16);
			p.dest_qpn = S.h[0].cfg.qpn;
		}
		if (sim_below(&S, 4) == 0) /* near the expected PSN */
			p.psn = (xport_qp_rq_psn(S.h[h].qp) + (uint32_t)sim_below(&S, 5) - 2) & ROCE_PSN_MASK;
		p.ack_req = sim_below(&S, 2);
		p.se = sim_below(&S, 2);
		p.reth.va = sim_below(&S, 2) ? sim_va(&S, h, sim_below(&S, 1u << 20)) : sim_rand(&S);
		p.reth.rkey = sim_below(&S, 2) ? S.h[h].arena_key : (uint32_t)sim_rand(&S);
		p.reth.length = (uint32_t)(sim_below(&S, 2) ? sim_below(&S, 9000) : sim_rand(&S));
		p.atmeth.va = p.reth.va;
		p.atmeth.rkey = p.reth.rkey;
		p.aeth.syndrome = (uint8_t)sim_rand(&S);
		p.aeth.msn = (uint32_t)sim_rand(&S) & 0xffffff;
		p.deth.qkey = sim_below(&S, 2) ? S.h[h].cfg.qkey : (uint32_t)sim_rand(&S);
		p.ieth_rkey = (uint32_t)sim_rand(&S);
		p.payload_len = (d->kind & ROCE_KIND_PAYLOAD) ? (uint32_t)sim_below(&S, 4097) : 0;
		p.payload = payload;
		if (sim_below(&S, 8) == 0) {
			struct rq_wqe r = rwqe_new((uint64_t)i, sim_va(&S, h, sim_below(&S, 1u << 19)),
						   (uint32_t)sim_below(&S, 70000), S.h[h].arena_key);
			if (sim_below(&S, 4) == 0)
				r.num_sge = (uint32_t)sim_rand(&S); /* malformed */
			sim_post_recv(&S, h, &r);
		}
		if (sim_below(&S, 8) == 0) {
			struct sq_wqe w = wqe_new((uint8_t)sim_below(&S, 12), (uint64_t)i,
						  (uint32_t)sim_rand(&S));
			w.num_sge = (uint8_t)sim_rand(&S);
			w.inline_len = (uint16_t)sim_rand(&S);
			for (int k = 0; k < WQE_MAX_SGE; k++)
				w.sg_list[k] = (struct wr_sge){ sim_va(&S, h, sim_below(&S, 1u << 20)),
								(uint32_t)sim_below(&S, 5000),
								S.h[h].arena_key };
			w.wr.rdma.remote_addr = sim_rand(&S);
			w.wr.rdma.rkey = (uint32_t)sim_rand(&S);
			w.av = S.h[h].cfg.av;
			sim_post_send(&S, h, &w);
		}
		S.now += sim_below(&S, 100000);
		sim_inject(&S, h, &p);
		sim_poll(&S);
		struct cqe c;
		for (int k = 0; k < 2; k++)
			while (sim_poll_cq(&S, h, k, &c))
				cr_assert_leq(c.status, WC_GENERAL_ERR);
		if (xport_qp_state(S.h[h].qp) == XPORT_STATE_ERR && sim_below(&S, 4) == 0) {
			/* back to work after errors */
			sim_set_state(&S, h, XPORT_STATE_RESET);
			sim_set_state(&S, h, XPORT_STATE_RTR);
			sim_set_state(&S, h, XPORT_STATE_RTS);
		}
	}
	uint64_t accepted = 0, dropped = 0;
	for (int h = 0; h < 2; h++) {
		const uint64_t *c = xport_qp_counters(S.h[h].qp);
		accepted += c[XPORT_CNT_RX_PKTS];
		for (int k = XPORT_CNT_DROP_STATE; k <= XPORT_CNT_DROP_UD_LEN; k++)
			dropped += c[k];
	}
	if (getenv("ROCE_ENGINE_DEBUG"))
		fprintf(stderr, "type %u: accepted %lu dropped %lu\n", type, (unsigned long)accepted,
			(unsigned long)dropped);
	cr_assert_gt(accepted, 100, "the random packets reach the roles");
	/* timers still fire without trouble */
	for (int h = 0; h < 2; h++)
		for (int t = 0; t < XPORT_TIMER_COUNT; t++) {
			xport_out_reset(&S.out);
			xport_qp_timer_expired(S.h[h].qp, (enum xport_timer)t, S.now + 100000000000ull,
					       &S.out);
		}
	xport_out_reset(&S.out);
}

Test(rules, hostile_input_rc, .timeout = 60)
{
	fuzz_type(XPORT_RC, 11);
}

Test(rules, hostile_input_uc_ud, .timeout = 60)
{
	fuzz_type(XPORT_UC, 12);
	fuzz_type(XPORT_UD, 13);
}

Test(rules, modify_in_reset_sets_the_psns)
{
	sim_set_state(&S, 1, XPORT_STATE_RESET);
	struct xport_cfg cfg = S.h[1].cfg;
	cfg.rq_psn = 0xfffffe;
	cfg.path_mtu = 1;
	cr_assert_eq(xport_qp_modify(S.h[1].qp, &cfg), 0);
	sim_set_state(&S, 1, XPORT_STATE_RTR);
	cr_assert_eq(xport_qp_rq_psn(S.h[1].qp), 0xfffffe);
	uint8_t data[256] = { 0 };
	struct roce_pkt p = write_only(0xfffffe, 0, data, 256);
	sim_inject(&S, 1, &p);
	assert_ack(last(), ROCE_AETH_ACK_UNLIMITED, 0xfffffe);
	p = write_only(0xffffff, 0, data, 257); /* more than the new 256 B MTU */
	p.reth.length = 257;
	sim_inject(&S, 1, &p);
	assert_ack(last(), ROCE_AETH_NAK_INVALID_REQ, 0xffffff);
}
