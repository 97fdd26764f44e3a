/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * IBTA 1.5 RDMA ATOMIC WRITE and RDMA FLUSH (Linux rxe since 6.2).
 *
 * Responder, one packet at a time (hand-made requests fed to host 1, its
 * answers captured): the 8 bytes stored at once, the empty READ RESPONSE
 * ONLY that answers both, replay of duplicates without a second execution,
 * the length/alignment/placement rules (invalid request) and the access
 * rules (QP access flags: invalid request; region: remote access error).
 * Requester and completer, through the simulated link: WR_ATOMIC_WRITE and
 * WR_FLUSH complete with WC_ATOMIC_WRITE / WC_FLUSH, count against
 * max_rd_atomic, and a lost response is replayed, not re-executed.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define EPSN 0x100u /* host 1's first expected PSN (sim_default_params psn[0]) */
#define QP_ALL (MR_ACCESS_REMOTE_WRITE | MR_ACCESS_REMOTE_READ | MR_ACCESS_REMOTE_ATOMIC | \
		MR_ACCESS_FLUSH_GLOBAL)

static struct sim S;
static struct capture C;
static struct collect K;

static void
setup_access(uint32_t qp_access, bool answers)
{
	struct sim_params p;

	sim_default_params(&p);
	p.qp_access = qp_access;
	cr_assert_eq(sim_init(&S, &p, 1), 0);
	capture_attach(&S, &C);
	C.drop[1] = !answers; /* injected requests: host 0 never asked */
	collect_init(&K);
}

static void
setup(void)
{
	setup_access(QP_ALL, false);
}

static void
teardown(void)
{
	collect_fini(&K);
	sim_fini(&S);
}

TestSuite(ibta15, .init = setup, .fini = teardown, .timeout = 30);

static const uint64_t *
cnt(int h)
{
	return xport_qp_counters(S.h[h].qp);
}

static const struct roce_pkt *
last(void)
{
	cr_assert_gt(C.n, 0, "host 1 sent nothing");
	return &C.pkt[C.n - 1];
}

static uint64_t *
word1(uint64_t off)
{
	return (uint64_t *)(void *)(S.h[1].arena + off);
}

static struct roce_pkt
atomic_write(uint32_t psn, uint64_t off, const uint8_t value[8])
{
	struct roce_pkt p = req_pkt(&S, ROCE_OP_RC_ATOMIC_WRITE, psn);

	p.reth.va = sim_va(&S, 1, off);
	p.reth.rkey = S.h[1].arena_key;
	p.reth.length = 8;
	p.payload = value;
	p.payload_len = 8;
	return p;
}

static struct roce_pkt
flush(uint32_t psn, uint8_t placement, uint8_t selectivity, uint64_t off, uint32_t len)
{
	struct roce_pkt p = req_pkt(&S, ROCE_OP_RC_FLUSH, psn);

	p.feth.placement = placement;
	p.feth.selectivity = selectivity;
	p.reth.va = sim_va(&S, 1, off);
	p.reth.rkey = S.h[1].arena_key;
	p.reth.length = len;
	return p;
}

/* @p p is the empty READ RESPONSE ONLY with a positive ACK for @p psn (rxe send_read_response_ack). */
static void
assert_empty_read_resp(const struct roce_pkt *p, uint32_t psn)
{
	cr_assert_eq(p->opcode, ROCE_OP_RC_RDMA_READ_RESPONSE_ONLY, "opcode 0x%02x", p->opcode);
	cr_assert_eq(p->payload_len, 0);
	cr_assert_eq(p->aeth.syndrome, ROCE_AETH_ACK_UNLIMITED);
	cr_assert_eq(p->psn, psn);
}

static void
assert_class_c(uint8_t syndrome, uint32_t psn)
{
	assert_ack(last(), syndrome, psn);
	cr_assert_eq(xport_qp_state(S.h[1].qp), XPORT_STATE_ERR);
}

/* ---- responder ---------------------------------------------------------- */

Test(ibta15, atomic_write_stores_the_8_bytes_and_answers_an_empty_read_response)
{
	static const uint8_t v[8] = { 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88 };
	struct roce_pkt p = atomic_write(EPSN, 64, v);

	*word1(56) = 0x5a5a5a5a5a5a5a5aull;
	*word1(72) = 0xa5a5a5a5a5a5a5a5ull;
	sim_inject(&S, 1, &p);
	cr_assert_eq(C.n, 1);
	assert_empty_read_resp(last(), EPSN);
	cr_assert_eq(last()->aeth.msn, 1, "one message");
	cr_assert_eq(memcmp(S.h[1].arena + 64, v, 8), 0, "the bytes as on the wire");
	cr_assert_eq(*word1(56), 0x5a5a5a5a5a5a5a5aull, "nothing before");
	cr_assert_eq(*word1(72), 0xa5a5a5a5a5a5a5a5ull, "nothing after");
	cr_assert_eq(cnt(1)[XPORT_CNT_ATOMIC_WRITE_RX], 1);
	/* the next request is in sequence: a WRITE after it is ACKed */
	uint8_t d[4] = { 1, 2, 3, 4 };
	struct roce_pkt w = req_pkt(&S, ROCE_OP_RC_RDMA_WRITE_ONLY, EPSN + 1);
	w.reth.va = sim_va(&S, 1, 256);
	w.reth.rkey = S.h[1].arena_key;
	w.reth.length = 4;
	w.payload = d;
	w.payload_len = 4;
	sim_inject(&S, 1, &w);
	assert_ack(last(), ROCE_AETH_ACK_UNLIMITED, EPSN + 1);
}

Test(ibta15, duplicate_atomic_write_replays_the_response_never_the_store)
{
	static const uint8_t v[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct roce_pkt p = atomic_write(EPSN, 64, v);

	sim_inject(&S, 1, &p);
	assert_empty_read_resp(last(), EPSN);
	*word1(64) = 99; /* the application changed it meanwhile */
	sim_inject(&S, 1, &p);
	cr_assert_eq(C.n, 2);
	assert_empty_read_resp(last(), EPSN);
	cr_assert_eq(*word1(64), 99, "never executed twice");
	cr_assert_eq(cnt(1)[XPORT_CNT_ATOMIC_WRITE_RX], 1);
	cr_assert_eq(cnt(1)[XPORT_CNT_DUP_ATOMIC_REPLAY], 1);
}

Test(ibta15, misaligned_atomic_write_is_an_invalid_request)
{
	static const uint8_t v[8] = { 1 };
	struct roce_pkt p = atomic_write(EPSN, 68, v);

	sim_inject(&S, 1, &p);
	assert_class_c(ROCE_AETH_NAK_INVALID_REQ, EPSN);
	cr_assert_eq(*word1(64), 0, "nothing written");
	cr_assert_eq(*word1(72), 0);
}

Test(ibta15, atomic_write_with_a_dma_length_other_than_8_is_an_invalid_request)
{
	static const uint8_t v[8] = { 1 };
	struct roce_pkt p = atomic_write(EPSN, 64, v);

	p.reth.length = 16;
	sim_inject(&S, 1, &p);
	assert_class_c(ROCE_AETH_NAK_INVALID_REQ, EPSN);
	cr_assert_eq(*word1(64), 0, "nothing written");
}

Test(ibta15, atomic_write_needs_remote_write_on_the_qp, .init = NULL)
{
	static const uint8_t v[8] = { 1 };

	setup_access(MR_ACCESS_REMOTE_READ | MR_ACCESS_REMOTE_ATOMIC, false);
	struct roce_pkt p = atomic_write(EPSN, 64, v);
	sim_inject(&S, 1, &p);
	assert_class_c(ROCE_AETH_NAK_INVALID_REQ, EPSN);
	cr_assert_eq(*word1(64), 0);
}

/* A region of host 1 with @p access (PD SIM_PD) over a fresh buffer; @return its key. */
static uint32_t
reg1(uint8_t *buf, uint32_t access)
{
	uint32_t key;

	memset(buf, 0x5a, 4096);
	cr_assert_eq(mr_reg(S.h[1].mrs, SIM_PD, (uintptr_t)buf, 0x70000000, 4096, access, &key),
		     0);
	return key;
}

Test(ibta15, atomic_write_needs_remote_write_on_the_region)
{
	static const uint8_t v[8] = { 1 };
	uint8_t *buf = aligned_alloc(64, 4096);
	uint32_t key = reg1(buf, MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_ATOMIC |
					 MR_ACCESS_REMOTE_READ);
	struct roce_pkt p = atomic_write(EPSN, 0, v);

	p.reth.va = 0x70000000;
	p.reth.rkey = key;
	sim_inject(&S, 1, &p);
	assert_class_c(ROCE_AETH_NAK_REM_ACC_ERR, EPSN);
	cr_assert_eq(buf[0], 0x5a, "nothing written");
	cr_assert_eq(S.h[1].async[ASYNC_QP_ACCESS_ERR], 1);
	free(buf);
}

Test(ibta15, flush_global_of_a_range_and_of_the_region)
{
	struct roce_pkt p = flush(EPSN, ROCE_FLUSH_GLOBAL, ROCE_FLUSH_RANGE, 0, 4096);

	sim_inject(&S, 1, &p);
	assert_empty_read_resp(last(), EPSN);
	/* the whole region: VA and length are not looked at */
	p = flush(EPSN + 1, ROCE_FLUSH_GLOBAL, ROCE_FLUSH_MR, 0, 0);
	p.reth.va = 0xdead0000;
	p.reth.length = 0xffffff;
	sim_inject(&S, 1, &p);
	assert_empty_read_resp(last(), EPSN + 1);
	cr_assert_eq(cnt(1)[XPORT_CNT_FLUSH_RX], 2);
	cr_assert_eq(xport_qp_state(S.h[1].qp), XPORT_STATE_RTS);
	/* a duplicate is answered again, from the resource */
	sim_inject(&S, 1, &p);
	assert_empty_read_resp(last(), EPSN + 1);
	cr_assert_eq(cnt(1)[XPORT_CNT_FLUSH_RX], 2);
}

Test(ibta15, flush_of_a_range_outside_the_region_is_a_remote_access_error)
{
	struct roce_pkt p = flush(EPSN, ROCE_FLUSH_GLOBAL, ROCE_FLUSH_RANGE, S.h[1].arena_len - 8, 16);

	sim_inject(&S, 1, &p);
	assert_class_c(ROCE_AETH_NAK_REM_ACC_ERR, EPSN);
}

Test(ibta15, flush_needs_the_placement_access_on_the_region)
{
	uint8_t *buf = aligned_alloc(64, 4096);
	uint32_t key = reg1(buf, MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE);
	struct roce_pkt p = flush(EPSN, ROCE_FLUSH_GLOBAL, ROCE_FLUSH_MR, 0, 0);

	p.reth.rkey = key;
	sim_inject(&S, 1, &p);
	assert_class_c(ROCE_AETH_NAK_REM_ACC_ERR, EPSN);
	free(buf);
}

Test(ibta15, persistent_flush_of_memory_without_persistence_is_a_remote_access_error, .init = NULL)
{
	/* the QP allows it; the arena (as every region here) has no FLUSH_PERSISTENT */
	setup_access(QP_ALL | MR_ACCESS_FLUSH_PERSISTENT, false);
	struct roce_pkt p = flush(EPSN, ROCE_FLUSH_PERSISTENT, ROCE_FLUSH_RANGE, 0, 64);
	sim_inject(&S, 1, &p);
	assert_class_c(ROCE_AETH_NAK_REM_ACC_ERR, EPSN);
}

Test(ibta15, flush_needs_the_placement_access_on_the_qp, .init = NULL)
{
	setup_access(MR_ACCESS_REMOTE_WRITE | MR_ACCESS_REMOTE_READ, false);
	struct roce_pkt p = flush(EPSN, ROCE_FLUSH_GLOBAL, ROCE_FLUSH_RANGE, 0, 64);
	sim_inject(&S, 1, &p);
	assert_class_c(ROCE_AETH_NAK_INVALID_REQ, EPSN);
}

Test(ibta15, flush_with_a_reserved_placement_or_selectivity_is_an_invalid_request)
{
	static const uint8_t bad[][2] = { { 0, ROCE_FLUSH_RANGE }, { 4, ROCE_FLUSH_RANGE },
					  { ROCE_FLUSH_GLOBAL, 2 }, { ROCE_FLUSH_GLOBAL, 3 } };

	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (i) {
			teardown();
			setup();
		}
		struct roce_pkt p = flush(EPSN, bad[i][0], bad[i][1], 0, 64);
		sim_inject(&S, 1, &p);
		assert_class_c(ROCE_AETH_NAK_INVALID_REQ, EPSN);
	}
}

Test(ibta15, flush_of_an_unknown_key_by_region_is_a_remote_access_error)
{
	struct roce_pkt p = flush(EPSN, ROCE_FLUSH_GLOBAL, ROCE_FLUSH_MR, 0, 0);

	p.reth.rkey = 0x12345600; /* never registered */
	sim_inject(&S, 1, &p);
	assert_class_c(ROCE_AETH_NAK_REM_ACC_ERR, EPSN);
}

/* ---- requester and completer over the link ------------------------------ */

static void
setup_link(void)
{
	setup_access(QP_ALL, true);
	S.faults.delay_ns = 10000;
}

static struct sq_wqe
atomic_write_wqe(uint64_t wr_id, uint64_t roff, const uint8_t v[8])
{
	struct sq_wqe w = wqe_new(WR_ATOMIC_WRITE, wr_id, WR_FLAG_SIGNALED | WR_FLAG_INLINE);

	w.wr.rdma.remote_addr = sim_va(&S, 1, roff);
	w.wr.rdma.rkey = S.h[1].arena_key;
	memcpy(w.inline_data, v, 8);
	w.inline_len = 8;
	return w;
}

static struct sq_wqe
flush_wqe(uint64_t wr_id, uint8_t type, uint8_t level, uint64_t roff, uint32_t len)
{
	struct sq_wqe w = wqe_new(WR_FLUSH, wr_id, WR_FLAG_SIGNALED);

	w.wr.flush.remote_addr = sim_va(&S, 1, roff);
	w.wr.flush.rkey = S.h[1].arena_key;
	w.wr.flush.length = len;
	w.wr.flush.type = type;
	w.wr.flush.level = level;
	return w;
}

static void
run_until_sent(uint32_t n)
{
	K.want[0][0] = n;
	cr_assert(sim_run(&S, collect_done, &K, SIM_DEADLINE_NS));
}

Test(ibta15, atomic_write_and_flush_complete_at_the_requester, .init = setup_link)
{
	static const uint8_t v[8] = { 0xde, 0xad, 0xbe, 0xef, 0, 1, 2, 3 };
	uint8_t from_sge[8] = { 9, 8, 7, 6, 5, 4, 3, 2 };
	struct sq_wqe w = atomic_write_wqe(1, 128, v);

	cr_assert(sim_post_send(&S, 0, &w));
	/* the classic post_send form: the 8 bytes from an SGE */
	memcpy(S.h[0].arena + 512, from_sge, 8);
	w = wqe_new(WR_ATOMIC_WRITE, 2, WR_FLAG_SIGNALED);
	wqe_add_sge(&w, sim_va(&S, 0, 512), 8, S.h[0].arena_key);
	w.wr.rdma.remote_addr = sim_va(&S, 1, 136);
	w.wr.rdma.rkey = S.h[1].arena_key;
	cr_assert(sim_post_send(&S, 0, &w));
	w = flush_wqe(3, ROCE_FLUSH_GLOBAL, ROCE_FLUSH_RANGE, 128, 16);
	cr_assert(sim_post_send(&S, 0, &w));
	run_until_sent(3);
	static const uint8_t want_op[3] = { WC_ATOMIC_WRITE, WC_ATOMIC_WRITE, WC_FLUSH };
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(K.c[0][0][i].status, WC_SUCCESS, "wr %d status %u", i + 1,
			     K.c[0][0][i].status);
		cr_assert_eq(K.c[0][0][i].wr_id, (uint64_t)i + 1);
		cr_assert_eq(K.c[0][0][i].opcode, want_op[i]);
	}
	cr_assert_eq(memcmp(S.h[1].arena + 128, v, 8), 0);
	cr_assert_eq(memcmp(S.h[1].arena + 136, from_sge, 8), 0);
	cr_assert_eq(capture_count(&C, 0, ROCE_OP_RC_ATOMIC_WRITE), 2);
	cr_assert_eq(capture_count(&C, 0, ROCE_OP_RC_FLUSH), 1);
	cr_assert_eq(capture_count(&C, 1, ROCE_OP_RC_RDMA_READ_RESPONSE_ONLY), 3);
	cr_assert_eq(K.n[1][1], 0, "no receive completion at the responder");
}

Test(ibta15, atomic_write_of_other_than_8_bytes_is_a_local_length_error, .init = setup_link)
{
	struct sq_wqe w = wqe_new(WR_ATOMIC_WRITE, 7, WR_FLAG_SIGNALED);

	wqe_add_sge(&w, sim_va(&S, 0, 0), 4, S.h[0].arena_key);
	w.wr.rdma.remote_addr = sim_va(&S, 1, 0);
	w.wr.rdma.rkey = S.h[1].arena_key;
	cr_assert(sim_post_send(&S, 0, &w));
	run_until_sent(1);
	cr_assert_eq(K.c[0][0][0].status, WC_LOC_LEN_ERR);
	cr_assert_eq(capture_count(&C, 0, ROCE_OP_RC_ATOMIC_WRITE), 0, "nothing sent");
}

Test(ibta15, a_refused_flush_completes_with_remote_access_error, .init = NULL)
{
	setup_access(QP_ALL | MR_ACCESS_FLUSH_PERSISTENT, true);
	S.faults.delay_ns = 10000;
	struct sq_wqe w = flush_wqe(5, ROCE_FLUSH_PERSISTENT, ROCE_FLUSH_RANGE, 0, 64);

	cr_assert(sim_post_send(&S, 0, &w));
	run_until_sent(1);
	cr_assert_eq(K.c[0][0][0].status, WC_REM_ACCESS_ERR, "status %u", K.c[0][0][0].status);
}

static void
rd1(struct sim_params *p)
{
	p->max_rd_atomic = 1;
	p->qp_access = QP_ALL;
}

Test(ibta15, atomic_writes_and_flushes_count_against_max_rd_atomic, .init = NULL)
{
	struct sim_params p;
	static const uint8_t v[8] = { 1 };

	sim_default_params(&p);
	rd1(&p);
	cr_assert_eq(sim_init(&S, &p, 1), 0);
	capture_attach(&S, &C);
	collect_init(&K);
	S.faults.delay_ns = 10000;
	for (int i = 0; i < 4; i++) {
		struct sq_wqe w = i & 1 ? flush_wqe((uint64_t)i, ROCE_FLUSH_GLOBAL, ROCE_FLUSH_MR, 0, 0)
					: atomic_write_wqe((uint64_t)i, (uint64_t)i * 8, v);
		cr_assert(sim_post_send(&S, 0, &w));
	}
	run_until_sent(4);
	/* one outstanding at a time: every request follows the previous response */
	int outstanding = 0;
	for (uint32_t i = 0; i < C.n; i++) {
		if (C.from[i] == 0)
			outstanding++;
		else if (C.pkt[i].opcode == ROCE_OP_RC_RDMA_READ_RESPONSE_ONLY)
			outstanding--;
		cr_assert_leq(outstanding, 1, "frame %u", i);
	}
	for (int i = 0; i < 4; i++)
		cr_assert_eq(K.c[0][0][i].status, WC_SUCCESS);
}

Test(ibta15, a_lost_response_is_replayed_not_executed_again, .init = setup_link)
{
	static const uint8_t v[8] = { 0x77, 0, 0, 0, 0, 0, 0, 0x77 };
	struct sq_wqe w = atomic_write_wqe(1, 256, v);

	C.drop_op = ROCE_OP_RC_RDMA_READ_RESPONSE_ONLY;
	C.drop_from = 1;
	C.drop_nth = 0;
	cr_assert(sim_post_send(&S, 0, &w));
	run_until_sent(1);
	cr_assert_eq(K.c[0][0][0].status, WC_SUCCESS);
	cr_assert_eq(memcmp(S.h[1].arena + 256, v, 8), 0);
	cr_assert_eq(cnt(1)[XPORT_CNT_ATOMIC_WRITE_RX], 1, "executed once");
	cr_assert_eq(cnt(1)[XPORT_CNT_DUP_ATOMIC_REPLAY], 1);
	cr_assert_eq(cnt(0)[XPORT_CNT_RETRY_TIMEOUT], 1);
}
