/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Engine paths no other test reaches (issue 22), one hand-made packet at a
 * time through the simulated link:
 * - responder (host 1 gets the requests, its answers are captured and kept
 *   off the link): QP access flags, the 2^31 RDMA length limit, an MR that
 *   goes away in the middle of a WRITE, UC drops;
 * - completer (host 0 sends, its requests are captured and kept off the
 *   link, the responses are injected): the NAK mappings, reserved AETH
 *   syndromes, malformed READ responses, NAKs during an RNR wait.
 * Each test asserts what goes on the wire and/or the work completions, the
 * memory the packet must not touch, and the engine counter of the event.
 */
#include <criterion/criterion.h>

#include "util.h"

#define PSN0 0x100u  /* host 0's first request PSN = host 1's first expected PSN */
#define MTU 1024u    /* sim_default_params: path_mtu 3 */

static struct sim S;
static struct capture C;

TestSuite(resp, .timeout = 30);
TestSuite(comp, .timeout = 30);

static void
setup_with(const struct sim_params *p)
{
	cr_assert_eq(sim_init(&S, p, 1), 0);
	capture_attach(&S, &C);
}

static void
setup_type(uint8_t type)
{
	struct sim_params p;
	sim_default_params(&p);
	p.type = type;
	setup_with(&p);
}

/* Responder tests: host 0's completer never sees host 1's answers. */
static void
setup_resp(void)
{
	setup_type(XPORT_RC);
	C.drop[1] = true;
}

/* Completer tests: host 1 never sees host 0's requests. */
static void
setup_comp(void)
{
	setup_type(XPORT_RC);
	C.drop[0] = true;
}

static void
teardown(void)
{
	sim_fini(&S);
}

static const uint64_t *
cnt(int h)
{
	return xport_qp_counters(S.h[h].qp);
}

static const struct roce_pkt *
last(void)
{
	cr_assert_gt(C.n, 0, "nothing was sent");
	return &C.pkt[C.n - 1];
}

/* @return true if @p n bytes at @p p all equal @p v */
static bool
all_eq(const uint8_t *p, size_t n, uint8_t v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return false;
	return true;
}

/* Frames host @p h sent from capture index @p from on. */
static uint32_t
sent_since(int h, uint32_t from)
{
	uint32_t n = 0;
	for (uint32_t i = from; i < C.n; i++)
		n += C.from[i] == h;
	return n;
}

/* ---- responder: requests as host 0 would send them ---------------------- */

static struct roce_pkt
write_pkt(uint8_t opcode, uint32_t psn, uint64_t va, uint32_t rkey, uint32_t dma_len,
	  const uint8_t *data, uint32_t len)
{
	struct roce_pkt p = req_pkt(&S, opcode, psn);
	p.reth.va = va;
	p.reth.rkey = rkey;
	p.reth.length = dma_len;
	p.payload = data;
	p.payload_len = len;
	p.ack_req = (roce_opcode_table[opcode].kind & ROCE_KIND_LAST) != 0;
	return p;
}

/* WRITE_ONLY of @p len bytes to host 1's arena at @p off. */
static struct roce_pkt
write_only(uint32_t psn, uint64_t off, const uint8_t *data, uint32_t len)
{
	return write_pkt(ROCE_OP_RC_RDMA_WRITE_ONLY, psn, sim_va(&S, 1, off), S.h[1].arena_key,
			 len, data, len);
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

static struct roce_pkt
fetch_add(uint32_t psn, uint64_t off, uint64_t add)
{
	return fetch_add_pkt(&S, psn, off, add);
}

/* modify_qp(IBV_QP_ACCESS_FLAGS) on host 1's live QP (RTS -> RTS). */
static void
qp_access1(uint32_t flags)
{
	S.h[1].cfg.access_flags = flags;
	cr_assert_eq(xport_qp_modify(S.h[1].qp, &S.h[1].cfg), 0);
}

#define QP_ALL (MR_ACCESS_REMOTE_WRITE | MR_ACCESS_REMOTE_READ | MR_ACCESS_REMOTE_ATOMIC)

enum rop { ROP_WRITE, ROP_READ, ROP_ATOMIC, ROP_COUNT };

#define WRITE_OFF 0x1000u  /* host 1 arena: WRITE target */
#define READ_OFF 0x2000u   /* READ source */
#define ATOMIC_OFF 0x3000u /* FETCH_ADD target */

/* Inject operation @p op at @p psn into host 1. */
static void
inject_op(enum rop op, uint32_t psn)
{
	static const uint8_t data[64] = { 0xab, 0xcd };
	struct roce_pkt p;

	switch (op) {
	case ROP_WRITE:
		p = write_only(psn, WRITE_OFF, data, sizeof(data));
		break;
	case ROP_READ:
		p = read_req(psn, READ_OFF, 8);
		break;
	default:
		p = fetch_add(psn, ATOMIC_OFF, 1);
		break;
	}
	sim_inject(&S, 1, &p);
}

/* The positive answer of host 1 to @p op at @p psn. */
static void
assert_done(enum rop op, uint32_t psn)
{
	static const uint8_t opcode[ROP_COUNT] = {
		[ROP_WRITE] = ROCE_OP_RC_ACKNOWLEDGE,
		[ROP_READ] = ROCE_OP_RC_RDMA_READ_RESPONSE_ONLY,
		[ROP_ATOMIC] = ROCE_OP_RC_ATOMIC_ACKNOWLEDGE,
	};
	cr_assert_eq(last()->opcode, opcode[op], "op %d: opcode 0x%02x", op, last()->opcode);
	cr_assert_eq(last()->aeth.syndrome, ROCE_AETH_ACK_UNLIMITED);
	cr_assert_eq(last()->psn, psn);
}

/*
 * A QP whose qp_access_flags lack REMOTE_WRITE / READ / ATOMIC while the MR
 * grants everything: the other two operations still work, the missing one
 * is a class C error. Linux rxe check_op_valid() answers it with
 * RESPST_ERR_UNSUPPORTED_OPCODE, i.e. NAK invalid request (and the libibverbs
 * man page of IBV_WC_REM_INV_REQ_ERR names "qp_access_flags in remote QP
 * wasn't configured to support this operation"); the QP goes to error with
 * IBV_EVENT_QP_REQ_ERR. Not a remote access error: that is the R_Key check.
 */
Test(resp, qp_access_flags_gate_each_op, .init = NULL, .fini = NULL)
{
	static const uint32_t need[ROP_COUNT] = {
		[ROP_WRITE] = MR_ACCESS_REMOTE_WRITE,
		[ROP_READ] = MR_ACCESS_REMOTE_READ,
		[ROP_ATOMIC] = MR_ACCESS_REMOTE_ATOMIC,
	};
	for (int op = 0; op < ROP_COUNT; op++) {
		setup_resp();
		S.h[1].arena[READ_OFF] = 0x77;
		uint64_t *slot = (uint64_t *)(void *)(S.h[1].arena + ATOMIC_OFF);
		*slot = 1000;
		qp_access1(QP_ALL & ~need[op]);
		uint32_t psn = PSN0;
		for (int other = 0; other < ROP_COUNT; other++) {
			if (other == op)
				continue;
			inject_op((enum rop)other, psn);
			assert_done((enum rop)other, psn);
			psn++;
		}
		uint64_t before_slot = *slot;
		uint32_t n = C.n;
		uint8_t before_write[64];
		memcpy(before_write, S.h[1].arena + WRITE_OFF, sizeof(before_write));
		inject_op((enum rop)op, psn);
		cr_assert_eq(C.n, n + 1, "op %d: one NAK, no response", op);
		assert_ack(last(), ROCE_AETH_NAK_INVALID_REQ, psn);
		cr_assert_eq(memcmp(S.h[1].arena + WRITE_OFF, before_write, sizeof(before_write)), 0,
			     "op %d: nothing written", op);
		cr_assert_eq(*slot, before_slot, "op %d: the atomic did not run", op);
		cr_assert_eq(cnt(1)[XPORT_CNT_NAK_INV_REQ_TX], 1, "op %d", op);
		cr_assert_eq(cnt(1)[XPORT_CNT_NAK_ACCESS_TX], 0, "op %d", op);
		cr_assert_eq(xport_qp_state(S.h[1].qp), XPORT_STATE_ERR, "op %d", op);
		cr_assert_eq(S.h[1].async[ASYNC_QP_REQ_ERR], 1, "op %d", op);
		cr_assert_eq(xport_qp_rq_psn(S.h[1].qp), psn, "op %d: not executed", op);
		teardown();
	}
}

/*
 * The responder's WRITE_ONLY step (an in-order RC WRITE ONLY into a direct
 * region, xport_resp.c) and the general steps it hands over to when a
 * check fails: each packet gets the answer the general steps give it, in
 * a row on one QP, so what one leaves behind (ePSN, MSN, the NAK-sent
 * flag) is what the next is judged by.
 */
Test(resp, write_only_step_and_its_hand_overs, .init = setup_resp, .fini = teardown)
{
	static const uint8_t a[64] = { 1, 2, 3 }, b[64] = { 9, 9, 9 };
	uint8_t *dst = S.h[1].arena + WRITE_OFF;
	struct roce_pkt p;
	uint32_t psn = PSN0;

	p = write_only(psn, WRITE_OFF, a, sizeof(a)); /* the step */
	sim_inject(&S, 1, &p);
	assert_ack(last(), ROCE_AETH_ACK_UNLIMITED, psn);
	cr_assert_eq(last()->aeth.msn, 1);
	cr_assert_eq(memcmp(dst, a, sizeof(a)), 0);
	psn++;

	p = write_only(psn, WRITE_OFF, NULL, 0); /* zero length: no R_Key check */
	p.reth.rkey ^= 0x100;
	sim_inject(&S, 1, &p);
	assert_ack(last(), ROCE_AETH_ACK_UNLIMITED, psn);
	cr_assert_eq(last()->aeth.msn, 2);
	psn++;

	p = write_only(psn + 1, WRITE_OFF, b, sizeof(b)); /* ahead: one sequence NAK */
	sim_inject(&S, 1, &p);
	assert_ack(last(), ROCE_AETH_NAK_PSN_SEQ_ERROR, psn);
	uint32_t n = C.n;
	sim_inject(&S, 1, &p);
	cr_assert_eq(C.n, n, "a NAK was sent: silent until the expected PSN comes");

	p = write_only(psn - 1, WRITE_OFF, b, sizeof(b)); /* duplicate: ACK, not placed */
	sim_inject(&S, 1, &p);
	assert_ack(last(), ROCE_AETH_ACK_UNLIMITED, psn - 1);
	cr_assert_eq(memcmp(dst, a, sizeof(a)), 0);
	cr_assert_eq(cnt(1)[XPORT_CNT_DUP_REQ], 1);

	p = write_only(psn, WRITE_OFF + 64, b, sizeof(b)); /* the step clears the NAK flag */
	sim_inject(&S, 1, &p);
	assert_ack(last(), ROCE_AETH_ACK_UNLIMITED, psn);
	cr_assert_eq(last()->aeth.msn, 3);
	cr_assert_eq(memcmp(dst + 64, b, sizeof(b)), 0);
	psn++;
	p = write_only(psn + 1, WRITE_OFF, b, sizeof(b));
	sim_inject(&S, 1, &p);
	assert_ack(last(), ROCE_AETH_NAK_PSN_SEQ_ERROR, psn);

	p = write_only(psn, WRITE_OFF, b, sizeof(b)); /* RETH length above the payload */
	p.reth.length = sizeof(b) + 1;
	sim_inject(&S, 1, &p);
	assert_ack(last(), ROCE_AETH_NAK_INVALID_REQ, psn);
	cr_assert_eq(memcmp(dst, a, sizeof(a)), 0, "nothing placed");
	cr_assert_eq(xport_qp_state(S.h[1].qp), XPORT_STATE_ERR);
	cr_assert_eq(xport_qp_rq_psn(S.h[1].qp), psn, "not executed");
}

/* SEND ONLY (@p opcode: with immediate or not) of @p len bytes to host 1. */
static struct roce_pkt
send_only(uint8_t opcode, uint32_t psn, const uint8_t *data, uint32_t len)
{
	struct roce_pkt p = req_pkt(&S, opcode, psn);

	p.payload = data;
	p.payload_len = len;
	p.imm = 0x01020304;
	p.ack_req = true;
	return p;
}

/* A receive WQE of host 1: @p len bytes of its arena at @p off. */
static void
recv1(uint64_t wr_id, uint64_t off, uint32_t len)
{
	struct rq_wqe r = rwqe_new(wr_id, sim_va(&S, 1, off), len, S.h[1].arena_key);

	cr_assert(sim_post_recv(&S, 1, &r));
}

/* The next receive (@p recv) or send completion of host @p h (there must be one). */
static struct cqe
next_cqe(int h, bool recv)
{
	struct cqe c;

	cr_assert(sim_poll_cq(&S, h, recv, &c), "no %s completion", recv ? "receive" : "send");
	return c;
}

/*
 * The responder's SEND_ONLY step and its hand-overs, in a row on one QP:
 * a SEND and a SEND with immediate land and complete; without a receive
 * WQE, RNR NAK (nothing taken, nothing changed); then one longer than its
 * receive WQE: that WQE completes with a local length error, the sender
 * gets an invalid request NAK, the QP goes to error.
 */
Test(resp, send_only_step_and_its_hand_overs, .init = setup_resp, .fini = teardown)
{
	static const uint8_t a[64] = { 1, 2, 3 }, b[100] = { 7, 7 };
	struct roce_pkt p;
	struct cqe c;
	uint32_t psn = PSN0;

	recv1(11, 0x1000, 64);
	recv1(12, 0x2000, 64);
	p = send_only(ROCE_OP_RC_SEND_ONLY, psn, a, sizeof(a));
	sim_inject(&S, 1, &p);
	assert_ack(last(), ROCE_AETH_ACK_UNLIMITED, psn);
	cr_assert_eq(last()->aeth.msn, 1);
	c = next_cqe(1, true);
	cr_assert_eq(c.wr_id, 11);
	cr_assert_eq(c.status, WC_SUCCESS);
	cr_assert_eq(c.opcode, WC_RECV);
	cr_assert_eq(c.byte_len, sizeof(a));
	cr_assert_eq(c.wc_flags & WC_FLAG_WITH_IMM, 0);
	cr_assert_eq(memcmp(S.h[1].arena + 0x1000, a, sizeof(a)), 0);
	psn++;

	p = send_only(ROCE_OP_RC_SEND_ONLY_WITH_IMMEDIATE, psn, a, 10);
	sim_inject(&S, 1, &p);
	assert_ack(last(), ROCE_AETH_ACK_UNLIMITED, psn);
	cr_assert_eq(last()->aeth.msn, 2);
	c = next_cqe(1, true);
	cr_assert_eq(c.wr_id, 12);
	cr_assert_eq(c.byte_len, 10);
	cr_assert_eq(c.imm_data, 0x01020304);
	cr_assert_neq(c.wc_flags & WC_FLAG_WITH_IMM, 0);
	psn++;

	p = send_only(ROCE_OP_RC_SEND_ONLY, psn, a, sizeof(a)); /* no receive WQE */
	sim_inject(&S, 1, &p);
	cr_assert_eq(last()->opcode, ROCE_OP_RC_ACKNOWLEDGE);
	cr_assert_eq(last()->aeth.syndrome & ROCE_AETH_TYPE_MASK, ROCE_AETH_RNR_NAK);
	cr_assert_eq(last()->psn, psn);
	cr_assert_eq(cnt(1)[XPORT_CNT_RNR_NAK_TX], 1);
	cr_assert_eq(xport_qp_rq_psn(S.h[1].qp), psn, "not executed");

	recv1(13, 0x3000, 64);
	p = send_only(ROCE_OP_RC_SEND_ONLY, psn, b, sizeof(b)); /* longer than the buffer */
	sim_inject(&S, 1, &p);
	assert_ack(last(), ROCE_AETH_NAK_INVALID_REQ, psn);
	c = next_cqe(1, true);
	cr_assert_eq(c.wr_id, 13);
	cr_assert_eq(c.status, WC_LOC_LEN_ERR);
	cr_assert_eq(cnt(1)[XPORT_CNT_NAK_INV_REQ_TX], 1);
	cr_assert_eq(xport_qp_state(S.h[1].qp), XPORT_STATE_ERR);
}

/*
 * The responder's READ_REQUEST short cut and its hand-overs, in a row: a
 * READ is answered; one of 0 bytes checks no R_Key (the general steps) and
 * gets an empty response; one with a key the PD does not own gets the
 * remote access error NAK and runs nothing.
 */
Test(resp, read_request_step_and_its_hand_overs, .init = setup_resp, .fini = teardown)
{
	memset(S.h[1].arena + READ_OFF, 0x5a, 8);
	struct roce_pkt p = read_req(PSN0, READ_OFF, 8);

	sim_inject(&S, 1, &p);
	assert_done(ROP_READ, PSN0);
	cr_assert_eq(last()->payload_len, 8);
	cr_assert_eq(last()->aeth.msn, 1);

	p = read_req(PSN0 + 1, READ_OFF, 0);
	p.reth.rkey ^= 0x100;
	sim_inject(&S, 1, &p);
	assert_done(ROP_READ, PSN0 + 1);
	cr_assert_eq(last()->payload_len, 0);

	uint32_t n = C.n;
	p = read_req(PSN0 + 2, READ_OFF, 8);
	p.reth.rkey ^= 0x100;
	sim_inject(&S, 1, &p);
	cr_assert_eq(C.n, n + 1, "one NAK, no response");
	assert_ack(last(), ROCE_AETH_NAK_REM_ACC_ERR, PSN0 + 2);
	cr_assert_eq(xport_qp_state(S.h[1].qp), XPORT_STATE_ERR);
}

/* A WRITE ONLY with a key the QP's PD does not own: remote access error. */
Test(resp, write_only_bad_rkey_is_access_error, .init = setup_resp, .fini = teardown)
{
	static const uint8_t b[64] = { 9 };
	struct roce_pkt p = write_only(PSN0, WRITE_OFF, b, sizeof(b));

	p.reth.rkey ^= 0x100;
	sim_inject(&S, 1, &p);
	assert_ack(last(), ROCE_AETH_NAK_REM_ACC_ERR, PSN0);
	cr_assert_eq(S.h[1].arena[WRITE_OFF], 0, "nothing placed");
	cr_assert_eq(cnt(1)[XPORT_CNT_NAK_ACCESS_TX], 1);
	cr_assert_eq(xport_qp_state(S.h[1].qp), XPORT_STATE_ERR);
}

/*
 * REMOTE_WRITE taken away (modify_qp RTS -> RTS) between the FIRST and the
 * MIDDLE packet of a WRITE: rxe check_op_valid() tests every WRITE packet
 * (RXE_WRITE_MASK is set on FIRST, MIDDLE and LAST), so the MIDDLE is NAKed
 * invalid request and places nothing.
 */
Test(resp, write_access_revoked_mid_message, .init = setup_resp, .fini = teardown)
{
	uint8_t data[3][MTU];
	for (int i = 0; i < 3; i++)
		memset(data[i], 0xa1 + i, MTU);
	uint64_t va = sim_va(&S, 1, WRITE_OFF);
	uint32_t key = S.h[1].arena_key;
	struct roce_pkt p = write_pkt(ROCE_OP_RC_RDMA_WRITE_FIRST, PSN0, va, key, 3 * MTU,
				      data[0], MTU);
	sim_inject(&S, 1, &p);
	cr_assert_eq(C.n, 0);
	cr_assert(all_eq(S.h[1].arena + WRITE_OFF, MTU, 0xa1));
	qp_access1(MR_ACCESS_REMOTE_READ | MR_ACCESS_REMOTE_ATOMIC);
	p = write_pkt(ROCE_OP_RC_RDMA_WRITE_MIDDLE, PSN0 + 1, 0, 0, 0, data[1], MTU);
	sim_inject(&S, 1, &p);
	assert_ack(last(), ROCE_AETH_NAK_INVALID_REQ, PSN0 + 1);
	cr_assert(all_eq(S.h[1].arena + WRITE_OFF + MTU, 2 * MTU, 0), "nothing placed after FIRST");
	cr_assert_eq(cnt(1)[XPORT_CNT_NAK_INV_REQ_TX], 1);
	cr_assert_eq(xport_qp_state(S.h[1].qp), XPORT_STATE_ERR);
	cr_assert_eq(S.h[1].async[ASYNC_QP_REQ_ERR], 1);
}

/*
 * RDMA DMA length above 2^31 (the largest IBA message; the requester checks
 * the same in fetch_wqe()): invalid request, for a READ and for a WRITE
 * alike (rxe check_length: dmalen > 1 << 31 -> RESPST_ERR_LENGTH -> NAK
 * invalid request), before any R_Key check. Exactly 2^31 is a valid
 * length: it fails the R_Key range instead.
 */
Test(resp, rdma_length_above_2_31_is_invalid_request, .init = NULL, .fini = NULL)
{
	static const struct {
		const char *name;
		uint8_t opcode;
		uint32_t dma_len;
		uint8_t nak;
		enum xport_counter counter;
		uint8_t event;
	} cases[] = {
		{ "READ 2^31 + 1", ROCE_OP_RC_RDMA_READ_REQUEST, 0x80000001u,
		  ROCE_AETH_NAK_INVALID_REQ, XPORT_CNT_NAK_INV_REQ_TX, ASYNC_QP_REQ_ERR },
		{ "READ 2^32 - 1", ROCE_OP_RC_RDMA_READ_REQUEST, 0xffffffffu,
		  ROCE_AETH_NAK_INVALID_REQ, XPORT_CNT_NAK_INV_REQ_TX, ASYNC_QP_REQ_ERR },
		{ "WRITE_FIRST 2^31 + 1", ROCE_OP_RC_RDMA_WRITE_FIRST, 0x80000001u,
		  ROCE_AETH_NAK_INVALID_REQ, XPORT_CNT_NAK_INV_REQ_TX, ASYNC_QP_REQ_ERR },
		{ "READ 2^31 (valid, range)", ROCE_OP_RC_RDMA_READ_REQUEST, 0x80000000u,
		  ROCE_AETH_NAK_REM_ACC_ERR, XPORT_CNT_NAK_ACCESS_TX, ASYNC_QP_ACCESS_ERR },
	};
	static uint8_t data[MTU];
	memset(data, 0xee, sizeof(data));
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		setup_resp();
		bool write = cases[i].opcode == ROCE_OP_RC_RDMA_WRITE_FIRST;
		struct roce_pkt p = write_pkt(cases[i].opcode, PSN0, sim_va(&S, 1, WRITE_OFF),
					      S.h[1].arena_key, cases[i].dma_len, write ? data : NULL,
					      write ? MTU : 0);
		sim_inject(&S, 1, &p);
		cr_assert_eq(C.n, 1, "%s: one NAK, no READ response", cases[i].name);
		assert_ack(last(), cases[i].nak, PSN0);
		cr_assert(all_eq(S.h[1].arena + WRITE_OFF, MTU, 0), "%s: nothing written",
			  cases[i].name);
		cr_assert_eq(cnt(1)[cases[i].counter], 1, "%s", cases[i].name);
		cr_assert_eq(xport_qp_state(S.h[1].qp), XPORT_STATE_ERR, "%s", cases[i].name);
		cr_assert_eq(S.h[1].async[cases[i].event], 1, "%s", cases[i].name);
		teardown();
	}
}

/*
 * The MR of a multi-packet WRITE is deregistered (or its R_Key invalidated)
 * after the FIRST packet: the next packet re-checks the key (as rxe:
 * write_data_in() -> RESPST_ERR_RKEY_VIOLATION, class C, IBTA 9.9.3) and
 * is NAKed remote access error; nothing is placed from it on; the QP goes to
 * error, so the LAST is dropped.
 */
Test(resp, mr_gone_mid_write, .init = NULL, .fini = NULL)
{
	for (int invalidate = 0; invalidate < 2; invalidate++) {
		setup_resp();
		uint8_t *buf = aligned_alloc(64, 4 * MTU);
		memset(buf, 0x5a, 4 * MTU);
		uint32_t key;
		cr_assert_eq(mr_reg(S.h[1].mrs, SIM_PD, (uintptr_t)buf, 0x70000000, 4 * MTU,
				    MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE, &key), 0);
		uint8_t data[3][MTU];
		for (int i = 0; i < 3; i++)
			memset(data[i], 0xa1 + i, MTU);
		struct roce_pkt p = write_pkt(ROCE_OP_RC_RDMA_WRITE_FIRST, PSN0, 0x70000000, key,
					      3 * MTU, data[0], MTU);
		sim_inject(&S, 1, &p);
		cr_assert_eq(C.n, 0);
		cr_assert(all_eq(buf, MTU, 0xa1), "the FIRST landed");
		if (invalidate)
			cr_assert_eq(mr_invalidate(S.h[1].mrs, key, SIM_PD), 0);
		else
			cr_assert_eq(mr_dereg(S.h[1].mrs, key), 0);
		p = write_pkt(ROCE_OP_RC_RDMA_WRITE_MIDDLE, PSN0 + 1, 0, 0, 0, data[1], MTU);
		sim_inject(&S, 1, &p);
		cr_assert_eq(C.n, 1);
		assert_ack(last(), ROCE_AETH_NAK_REM_ACC_ERR, PSN0 + 1);
		p = write_pkt(ROCE_OP_RC_RDMA_WRITE_LAST, PSN0 + 2, 0, 0, 0, data[2], MTU);
		sim_inject(&S, 1, &p);
		cr_assert_eq(C.n, 1, "the QP is in error: the LAST is dropped");
		cr_assert(all_eq(buf + MTU, 3 * MTU, 0x5a), "%s: nothing placed after the FIRST",
			  invalidate ? "invalidated" : "deregistered");
		cr_assert_eq(cnt(1)[XPORT_CNT_NAK_ACCESS_TX], 1);
		cr_assert_eq(cnt(1)[XPORT_CNT_DROP_STATE], 1);
		cr_assert_eq(xport_qp_state(S.h[1].qp), XPORT_STATE_ERR);
		cr_assert_eq(S.h[1].async[ASYNC_QP_ACCESS_ERR], 1);
		cr_assert_eq(xport_qp_rq_psn(S.h[1].qp), PSN0 + 1);
		teardown();
		free(buf);
	}
}

/* The same over the link: the requester's WRITE completes REM_ACCESS_ERR. */
Test(resp, mr_gone_mid_write_over_the_link, .init = NULL, .fini = teardown)
{
	struct sim_params prm;
	sim_default_params(&prm);
	prm.rate_limit_kbps = 8000; /* one packet per 1.12 ms: room between them */
	setup_with(&prm);
	S.faults.delay_ns = 10000;
	uint8_t *buf = aligned_alloc(64, 4 * MTU);
	memset(buf, 0x5a, 4 * MTU);
	uint32_t key;
	cr_assert_eq(mr_reg(S.h[1].mrs, SIM_PD, (uintptr_t)buf, 0x70000000, 4 * MTU,
			    MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE, &key), 0);
	fill(S.h[0].arena, 3 * MTU, 21);
	struct sq_wqe w = wqe_new(WR_RDMA_WRITE, 1, WR_FLAG_SIGNALED);
	wqe_add_sge(&w, sim_va(&S, 0, 0), 3 * MTU, S.h[0].arena_key);
	w.wr.rdma.remote_addr = 0x70000000;
	w.wr.rdma.rkey = key;
	cr_assert(sim_post_send(&S, 0, &w));
	struct collect k;
	collect_init(&k);
	sim_run(&S, never_done, &k, S.now + 500000); /* the FIRST is in */
	cr_assert_eq(check_fill(buf, MTU, 21), -1);
	cr_assert_eq(mr_dereg(S.h[1].mrs, key), 0);
	k.want[0][0] = 1;
	cr_assert(sim_run(&S, collect_done, &k, SIM_DEADLINE_NS));
	cr_assert_eq(k.c[0][0][0].wr_id, 1);
	cr_assert_eq(k.c[0][0][0].status, WC_REM_ACCESS_ERR);
	cr_assert_eq(k.c[0][0][0].vendor_err, XPORT_ERR_REM_NAK);
	cr_assert(all_eq(buf + MTU, 3 * MTU, 0x5a), "nothing placed after the FIRST");
	cr_assert_eq(cnt(1)[XPORT_CNT_NAK_ACCESS_TX], 1);
	cr_assert_eq(cnt(0)[XPORT_CNT_NAK_ACCESS_RX], 1);
	cr_assert_eq(xport_qp_state(S.h[0].qp), XPORT_STATE_ERR);
	cr_assert_eq(xport_qp_state(S.h[1].qp), XPORT_STATE_ERR);
	collect_fini(&k);
	free(buf);
}

/* ---- UC: no NAK, ever -------------------------------------------------- */

static struct roce_pkt
uc_write(uint8_t opcode, uint32_t psn, uint32_t rkey, uint32_t dma_len, const uint8_t *data,
	 uint32_t len)
{
	struct roce_pkt p = write_pkt(opcode, psn, sim_va(&S, 1, WRITE_OFF), rkey, dma_len, data,
				      len);
	p.ack_req = false; /* rxe forces AckReq 0 on UC */
	return p;
}

/*
 * UC WRITE with a bad R_Key: UC never NAKs (IBTA 9.9.3, class D), the
 * message is dropped silently (DROP_UC_MSG, one per packet of it) and the
 * next good message on the QP lands (rxe: RESPST_ERR_RKEY_VIOLATION on UC ->
 * drop_msg).
 */
Test(resp, uc_bad_rkey_dropped_next_lands, .init = NULL, .fini = teardown)
{
	setup_type(XPORT_UC);
	uint8_t bad[MTU], good[MTU];
	memset(bad, 0xbb, sizeof(bad));
	memset(good, 0x99, sizeof(good));
	uint32_t badkey = 0x12345600; /* never registered */
	/* one packet */
	struct roce_pkt p = uc_write(ROCE_OP_UC_RDMA_WRITE_ONLY, PSN0, badkey, 64, bad, 64);
	sim_inject(&S, 1, &p);
	cr_assert_eq(cnt(1)[XPORT_CNT_DROP_UC_MSG], 1);
	/* three packets: each one of a broken message */
	p = uc_write(ROCE_OP_UC_RDMA_WRITE_FIRST, PSN0 + 1, badkey, 3 * MTU, bad, MTU);
	sim_inject(&S, 1, &p);
	p = uc_write(ROCE_OP_UC_RDMA_WRITE_MIDDLE, PSN0 + 2, 0, 0, bad, MTU);
	sim_inject(&S, 1, &p);
	p = uc_write(ROCE_OP_UC_RDMA_WRITE_LAST, PSN0 + 3, 0, 0, bad, MTU);
	sim_inject(&S, 1, &p);
	cr_assert_eq(cnt(1)[XPORT_CNT_DROP_UC_MSG], 4);
	cr_assert(all_eq(S.h[1].arena + WRITE_OFF, 3 * MTU, 0), "nothing written");
	cr_assert_eq(C.n, 0, "UC never answers");
	cr_assert_eq(xport_qp_state(S.h[1].qp), XPORT_STATE_RTS);
	/* the next good message on the same QP lands */
	p = uc_write(ROCE_OP_UC_RDMA_WRITE_FIRST, PSN0 + 4, S.h[1].arena_key, 2 * MTU, good, MTU);
	sim_inject(&S, 1, &p);
	p = uc_write(ROCE_OP_UC_RDMA_WRITE_LAST, PSN0 + 5, 0, 0, good, MTU);
	sim_inject(&S, 1, &p);
	cr_assert(all_eq(S.h[1].arena + WRITE_OFF, 2 * MTU, 0x99), "the good message landed");
	cr_assert_eq(cnt(1)[XPORT_CNT_DROP_UC_MSG], 4);
	cr_assert_eq(C.n, 0);
	cr_assert_eq(xport_qp_rq_psn(S.h[1].qp), PSN0 + 6);
}

/*
 * A UC QP without REMOTE_WRITE: the WRITE is dropped silently, not NAKed
 * (rxe check_op_valid, UC: drop_msg), whatever packet of the message it
 * is; once modify_qp grants the right again, the next message lands.
 */
Test(resp, uc_write_without_qp_access_dropped, .init = NULL, .fini = teardown)
{
	setup_type(XPORT_UC);
	uint8_t data[MTU];
	memset(data, 0x66, sizeof(data));
	uint32_t key = S.h[1].arena_key;
	qp_access1(MR_ACCESS_REMOTE_READ | MR_ACCESS_REMOTE_ATOMIC);
	struct roce_pkt p = uc_write(ROCE_OP_UC_RDMA_WRITE_FIRST, PSN0, key, 2 * MTU, data, MTU);
	sim_inject(&S, 1, &p);
	p = uc_write(ROCE_OP_UC_RDMA_WRITE_LAST, PSN0 + 1, 0, 0, data, MTU);
	sim_inject(&S, 1, &p);
	cr_assert_eq(cnt(1)[XPORT_CNT_DROP_UC_MSG], 2);
	cr_assert(all_eq(S.h[1].arena + WRITE_OFF, 2 * MTU, 0), "nothing written");
	cr_assert_eq(C.n, 0, "UC never answers");
	cr_assert_eq(xport_qp_state(S.h[1].qp), XPORT_STATE_RTS);
	qp_access1(QP_ALL);
	p = uc_write(ROCE_OP_UC_RDMA_WRITE_ONLY, PSN0 + 2, key, 64, data, 64);
	sim_inject(&S, 1, &p);
	cr_assert(all_eq(S.h[1].arena + WRITE_OFF, 64, 0x66), "the next message landed");
	cr_assert_eq(cnt(1)[XPORT_CNT_DROP_UC_MSG], 2);
}

/* The same over the link: both WRITEs complete at the UC requester (its
 * last packet is out), only the good one lands. */
Test(resp, uc_bad_rkey_over_the_link, .init = NULL, .fini = teardown)
{
	setup_type(XPORT_UC);
	fill(S.h[0].arena, 2 * MTU, 31);
	struct sq_wqe w = wqe_new(WR_RDMA_WRITE, 1, WR_FLAG_SIGNALED);
	wqe_add_sge(&w, sim_va(&S, 0, 0), 2 * MTU, S.h[0].arena_key);
	w.wr.rdma.remote_addr = sim_va(&S, 1, WRITE_OFF);
	w.wr.rdma.rkey = 0x12345600;
	cr_assert(sim_post_send(&S, 0, &w));
	w.wr_id = 2;
	w.wr.rdma.rkey = S.h[1].arena_key;
	w.wr.rdma.remote_addr = sim_va(&S, 1, WRITE_OFF + 4 * MTU);
	cr_assert(sim_post_send(&S, 0, &w));
	struct collect k;
	collect_init(&k);
	k.want[0][0] = 2;
	cr_assert(sim_run(&S, collect_done, &k, SIM_DEADLINE_NS));
	sim_run(&S, never_done, &k, SIM_DEADLINE_NS);
	cr_assert_eq(k.c[0][0][0].status, WC_SUCCESS);
	cr_assert_eq(k.c[0][0][1].status, WC_SUCCESS);
	cr_assert(all_eq(S.h[1].arena + WRITE_OFF, 2 * MTU, 0), "the bad-key message is dropped");
	cr_assert_eq(check_fill(S.h[1].arena + WRITE_OFF + 4 * MTU, 2 * MTU, 31), -1);
	cr_assert_eq(cnt(1)[XPORT_CNT_DROP_UC_MSG], 2, "FIRST and LAST of the broken message");
	cr_assert_eq(sent_since(1, 0), 0, "UC never answers");
	collect_fini(&k);
}

/* ---- completer: responses as host 1 would send them --------------------- */

static struct roce_pkt
resp_pkt(uint8_t opcode, uint32_t psn, uint8_t syndrome)
{
	struct roce_pkt p = sim_pkt(&S, 1, opcode, psn);

	p.aeth.syndrome = syndrome;
	return p;
}

static void
inject_ack(uint32_t psn, uint8_t syndrome)
{
	struct roce_pkt p = resp_pkt(ROCE_OP_RC_ACKNOWLEDGE, psn, syndrome);
	sim_inject(&S, 0, &p);
}

#define RD_LOFF 0x8000u  /* host 0 arena: READ target */
#define RD_ROFF 0x4000u  /* host 1 arena: READ source */

/* Post a WQE on host 0 aimed at host 1's arena. */
static void
post0(uint8_t opcode, uint64_t wr_id, uint32_t flags, uint64_t loff, uint32_t len,
      uint64_t roff)
{
	struct sq_wqe w = wqe_new(opcode, wr_id, flags);
	wqe_add_sge(&w, sim_va(&S, 0, loff), len, S.h[0].arena_key);
	if (opcode == WR_ATOMIC_FETCH_AND_ADD) {
		w.wr.atomic.remote_addr = sim_va(&S, 1, roff);
		w.wr.atomic.rkey = S.h[1].arena_key;
		w.wr.atomic.compare_add = 1;
	} else {
		w.wr.rdma.remote_addr = sim_va(&S, 1, roff);
		w.wr.rdma.rkey = S.h[1].arena_key;
	}
	cr_assert(sim_post_send(&S, 0, &w));
}

/* The next send completion of host 0 (there must be one). */
static struct cqe
scqe0(void)
{
	return next_cqe(0, false);
}

static void
assert_no_cqe0(void)
{
	struct cqe c;
	cr_assert_not(sim_poll_cq(&S, 0, false, &c), "unexpected completion wr_id %lu status %u",
		      (unsigned long)c.wr_id, c.status);
}

static void
assert_cqe0(uint64_t wr_id, uint8_t status)
{
	struct cqe c = scqe0();
	cr_assert_eq(c.wr_id, wr_id, "wr_id %lu != %lu", (unsigned long)c.wr_id,
		     (unsigned long)wr_id);
	cr_assert_eq(c.status, status, "wr %lu: status %u != %u", (unsigned long)wr_id, c.status,
		     status);
}

/* Requests of host 0 from capture index @p from on with PSN @p psn. */
static uint32_t
requests_at(uint32_t from, uint32_t psn)
{
	uint32_t n = 0;
	for (uint32_t i = from; i < C.n; i++)
		n += C.from[i] == 0 && C.pkt[i].psn == psn;
	return n;
}

/* PSN sequence error NAK: what precedes its PSN is acknowledged, the
 * requester goes back to it (IBTA 9.7.5.2.1; rxe COMPST_ERROR_RETRY). A
 * coalesced ACK then completes the rest and counts once. */
Test(comp, seq_nak_goes_back_to_its_psn, .init = setup_comp, .fini = teardown)
{
	for (uint64_t i = 1; i <= 3; i++)
		post0(WR_RDMA_WRITE, i, WR_FLAG_SIGNALED, 0, 64, 0);
	sim_poll(&S);
	cr_assert_eq(sent_since(0, 0), 3);
	uint32_t n = C.n;
	inject_ack(PSN0 + 1, ROCE_AETH_NAK_PSN_SEQ_ERROR);
	assert_cqe0(1, WC_SUCCESS);
	assert_no_cqe0();
	cr_assert_eq(sent_since(0, n), 2, "PSN0+1 and PSN0+2 again");
	cr_assert_eq(requests_at(n, PSN0 + 1), 1);
	cr_assert_eq(requests_at(n, PSN0 + 2), 1);
	cr_assert_eq(cnt(0)[XPORT_CNT_NAK_SEQ_RX], 1);
	cr_assert_eq(cnt(0)[XPORT_CNT_RETRY_SEQ_NAK], 1);
	cr_assert_eq(cnt(0)[XPORT_CNT_RETRANSMIT_PKTS], 2);
	cr_assert_eq(xport_qp_state(S.h[0].qp), XPORT_STATE_RTS);
	inject_ack(PSN0 + 2, ROCE_AETH_ACK_UNLIMITED);
	assert_cqe0(2, WC_SUCCESS);
	assert_cqe0(3, WC_SUCCESS);
	cr_assert_eq(cnt(0)[XPORT_CNT_ACK_RX], 1);
}

/*
 * A positive ACK's run of SEND/WRITE completions (comp_ack_run()) hands
 * over to the general steps where it stops: inside a multi-packet WRITE
 * (a partial ACK: progress, no completion) and at a READ the ACK passes
 * (implied NAK: go back to it, IBTA 9.7.5.1.2). The ACK counts once
 * however it is split, an unsignaled WRITE completes silently, and the
 * SQ slots of what completed are free.
 */
Test(comp, ack_run_hands_over_inside_a_write_and_at_a_read, .init = setup_comp,
     .fini = teardown)
{
	post0(WR_RDMA_WRITE, 1, WR_FLAG_SIGNALED, 0, 64, 0);      /* PSN0 */
	post0(WR_RDMA_WRITE, 2, 0, 0, 64, 0);                     /* PSN0 + 1 */
	post0(WR_RDMA_WRITE, 3, WR_FLAG_SIGNALED, 0, 3 * MTU, 0); /* PSN0 + 2..4 */
	post0(WR_RDMA_READ, 4, WR_FLAG_SIGNALED, RD_LOFF, 64, RD_ROFF); /* PSN0 + 5 */
	post0(WR_RDMA_WRITE, 5, WR_FLAG_SIGNALED, 0, 64, 0);      /* PSN0 + 6 */
	sim_poll(&S);
	cr_assert_eq(sent_since(0, 0), 7);
	uint32_t n = C.n;

	inject_ack(PSN0 + 3, ROCE_AETH_ACK_UNLIMITED); /* the middle of WRITE 3 */
	assert_cqe0(1, WC_SUCCESS);
	assert_no_cqe0();
	cr_assert_eq(spsc_ring_cons_index(S.h[0].sq), 2, "two SQ slots free");
	cr_assert_eq(cnt(0)[XPORT_CNT_ACK_RX], 1);

	inject_ack(PSN0 + 6, ROCE_AETH_ACK_UNLIMITED); /* beyond the READ's response */
	assert_cqe0(3, WC_SUCCESS);
	assert_no_cqe0();
	cr_assert_eq(cnt(0)[XPORT_CNT_ACK_RX], 2, "one per ACK, split or not");
	cr_assert_eq(cnt(0)[XPORT_CNT_RETRY_IMPLIED_NAK], 1);
	cr_assert_eq(requests_at(n, PSN0 + 5), 1, "the READ again");
	cr_assert_eq(spsc_ring_cons_index(S.h[0].sq), 3);
	cr_assert_eq(xport_qp_state(S.h[0].qp), XPORT_STATE_RTS);
}

static void
cq_of_4(struct sim_params *p)
{
	sim_default_params(p);
	p->cq_size = 4;
}

/*
 * The run takes a CQ slot only when its cached consumer index shows room;
 * where it does not, the general steps look at the CQ's consumer index
 * again (xport_cq_full()): an application that polled loses nothing and
 * the QP stays up.
 */
Test(comp, ack_run_hands_over_at_a_cq_that_looks_full, .init = NULL, .fini = teardown)
{
	struct sim_params p;

	cq_of_4(&p);
	setup_with(&p);
	C.drop[0] = true;
	/* round 0 leaves the cached consumer index at 0 with 3 CQEs taken:
	 * round 1's second CQE finds the CQ full by it */
	for (uint64_t round = 0; round < 2; round++) {
		for (uint64_t i = 1; i <= 3; i++)
			post0(WR_RDMA_WRITE, 3 * round + i, WR_FLAG_SIGNALED, 0, 64, 0);
		sim_poll(&S);
		inject_ack(PSN0 + 3 * (uint32_t)round + 2, ROCE_AETH_ACK_UNLIMITED);
		for (uint64_t i = 1; i <= 3; i++)
			assert_cqe0(3 * round + i, WC_SUCCESS);
	}
	assert_no_cqe0();
	cr_assert_eq(cnt(0)[XPORT_CNT_ACK_RX], 2);
	cr_assert_eq(cnt(0)[XPORT_CNT_CQ_OVERFLOW], 0);
	cr_assert_not(S.h[0].scq.overflowed);
	cr_assert_eq(xport_qp_state(S.h[0].qp), XPORT_STATE_RTS);
}

/*
 * Error NAKs (IBTA 9.9.3 class C at the responder; 9.9.2 the requester
 * completes the WQE with the matching status, even unsignaled (IBA 10.7.3: errors always complete), and
 * the QP goes to error; rxe check_ack): what precedes the NAK's PSN
 * completes, the NAKed WQE carries the status, everything after it -
 * started, unsignaled or posted later - is flushed. Nothing is resent.
 */
Test(comp, error_naks_complete_and_flush, .init = NULL, .fini = NULL)
{
	static const struct {
		uint8_t syndrome;
		uint8_t status;
		enum xport_counter counter;
	} cases[] = {
		{ ROCE_AETH_NAK_INVALID_REQ, WC_REM_INV_REQ_ERR, XPORT_CNT_NAK_INV_REQ_RX },
		{ ROCE_AETH_NAK_REM_ACC_ERR, WC_REM_ACCESS_ERR, XPORT_CNT_NAK_ACCESS_RX },
		{ ROCE_AETH_NAK_REM_OP_ERR, WC_REM_OP_ERR, XPORT_CNT_NAK_OP_RX },
		{ ROCE_AETH_NAK_INV_RD_REQ, WC_REM_INV_RD_REQ_ERR, XPORT_CNT_NAK_INV_RD_REQ_RX },
	};
	static const enum xport_counter naks[] = {
		XPORT_CNT_NAK_SEQ_RX, XPORT_CNT_NAK_INV_REQ_RX, XPORT_CNT_NAK_ACCESS_RX,
		XPORT_CNT_NAK_OP_RX, XPORT_CNT_NAK_INV_RD_REQ_RX, XPORT_CNT_RNR_NAK_RX,
	};
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		setup_comp();
		post0(WR_RDMA_WRITE, 1, WR_FLAG_SIGNALED, 0, 64, 0);
		post0(WR_RDMA_WRITE, 2, 0, 0, 64, 64);
		post0(WR_RDMA_WRITE, 3, 0, 0, 64, 128);
		post0(WR_RDMA_READ, 4, WR_FLAG_SIGNALED, RD_LOFF, 64, RD_ROFF);
		sim_poll(&S);
		cr_assert_eq(sent_since(0, 0), 4);
		uint32_t n = C.n;
		inject_ack(PSN0 + 1, cases[i].syndrome);
		post0(WR_RDMA_WRITE, 5, 0, 0, 64, 256); /* posted in the error state */
		sim_poll(&S);
		assert_cqe0(1, WC_SUCCESS);
		struct cqe c = scqe0();
		cr_assert_eq(c.wr_id, 2, "the unsignaled NAKed WQE completes");
		cr_assert_eq(c.status, cases[i].status, "syndrome 0x%02x: status %u",
			     cases[i].syndrome, c.status);
		cr_assert_eq(c.vendor_err, XPORT_ERR_REM_NAK);
		for (uint64_t id = 3; id <= 5; id++)
			assert_cqe0(id, WC_WR_FLUSH_ERR);
		assert_no_cqe0();
		for (unsigned k = 0; k < sizeof(naks) / sizeof(naks[0]); k++)
			cr_assert_eq(cnt(0)[naks[k]], naks[k] == cases[i].counter,
				     "syndrome 0x%02x: counter %s", cases[i].syndrome,
				     xport_counter_name(naks[k]));
		cr_assert_eq(xport_qp_state(S.h[0].qp), XPORT_STATE_ERR);
		cr_assert_eq(S.h[0].qp_errors, 1);
		cr_assert_eq(S.h[0].timer_at[XPORT_TIMER_RETRY], 0, "the ACK timer is cancelled");
		cr_assert_eq(sent_since(0, n), 0, "nothing resent");
		cr_assert(all_eq(S.h[0].arena + RD_LOFF, 64, 0), "the flushed READ placed nothing");
		teardown();
	}
}

/*
 * Reserved AETH syndromes (IBTA 9.7.5.1.3: type 010 and the top bit set
 * are reserved, so are NAK codes above 0x64), and READ
 * responses / ATOMIC ACKs that carry no positive ACK: the packet is
 * malformed. Dropped and counted (DROP_BAD_RESP) before it acknowledges
 * anything: no WQE completes, nothing is resent, no byte is placed.
 */
Test(comp, reserved_aeth_syndromes_dropped, .init = setup_comp, .fini = teardown)
{
	post0(WR_RDMA_WRITE, 1, WR_FLAG_SIGNALED, 0, 64, 0);
	post0(WR_RDMA_WRITE, 2, WR_FLAG_SIGNALED, 0, 64, 64);
	post0(WR_RDMA_READ, 3, WR_FLAG_SIGNALED, RD_LOFF, 8, RD_ROFF);
	post0(WR_ATOMIC_FETCH_AND_ADD, 4, WR_FLAG_SIGNALED, RD_LOFF + 64, 8, 0x100);
	sim_poll(&S);
	cr_assert_eq(sent_since(0, 0), 4);
	uint32_t n = C.n;
	static const uint8_t rdata[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	uint64_t drops = 0;
	for (unsigned s = 0; s < 256; s++) {
		uint8_t type = (uint8_t)(s & ROCE_AETH_TYPE_MASK);
		bool reserved = type == 0x40 || type >= 0x80 ||
				(type == ROCE_AETH_NAK && s > ROCE_AETH_NAK_INV_RD_REQ);
		bool positive = type == ROCE_AETH_ACK;
		if (reserved) {
			/* beyond WQE 1: would acknowledge it if it were taken */
			inject_ack(PSN0 + 1, (uint8_t)s);
			drops++;
		}
		if (!positive) {
			struct roce_pkt r = resp_pkt(ROCE_OP_RC_RDMA_READ_RESPONSE_ONLY, PSN0 + 2,
						     (uint8_t)s);
			r.payload = rdata;
			r.payload_len = sizeof(rdata);
			sim_inject(&S, 0, &r);
			struct roce_pkt a = resp_pkt(ROCE_OP_RC_ATOMIC_ACKNOWLEDGE, PSN0 + 3,
						     (uint8_t)s);
			a.atmack_orig = 0x1111;
			sim_inject(&S, 0, &a);
			drops += 2;
		}
	}
	assert_no_cqe0();
	cr_assert_eq(cnt(0)[XPORT_CNT_DROP_BAD_RESP], drops, "%lu != %lu",
		     (unsigned long)cnt(0)[XPORT_CNT_DROP_BAD_RESP], (unsigned long)drops);
	cr_assert_eq(sent_since(0, n), 0, "nothing resent");
	cr_assert(all_eq(S.h[0].arena + RD_LOFF, 128, 0), "nothing placed");
	static const enum xport_counter acted[] = {
		XPORT_CNT_ACK_RX, XPORT_CNT_NAK_SEQ_RX, XPORT_CNT_NAK_INV_REQ_RX,
		XPORT_CNT_NAK_ACCESS_RX, XPORT_CNT_NAK_OP_RX, XPORT_CNT_NAK_INV_RD_REQ_RX,
		XPORT_CNT_RNR_NAK_RX, XPORT_CNT_RETRY_SEQ_NAK, XPORT_CNT_RETRY_IMPLIED_NAK,
	};
	for (unsigned k = 0; k < sizeof(acted) / sizeof(acted[0]); k++)
		cr_assert_eq(cnt(0)[acted[k]], 0, "%s", xport_counter_name(acted[k]));
	cr_assert_eq(xport_qp_state(S.h[0].qp), XPORT_STATE_RTS);
	/* the well-formed ones still work: nothing was consumed */
	inject_ack(PSN0 + 1, ROCE_AETH_ACK_UNLIMITED);
	assert_cqe0(1, WC_SUCCESS);
	assert_cqe0(2, WC_SUCCESS);
	struct roce_pkt r = resp_pkt(ROCE_OP_RC_RDMA_READ_RESPONSE_ONLY, PSN0 + 2,
				     ROCE_AETH_ACK_UNLIMITED);
	r.payload = rdata;
	r.payload_len = sizeof(rdata);
	sim_inject(&S, 0, &r);
	assert_cqe0(3, WC_SUCCESS);
	cr_assert_eq(memcmp(S.h[0].arena + RD_LOFF, rdata, sizeof(rdata)), 0);
	struct roce_pkt a = resp_pkt(ROCE_OP_RC_ATOMIC_ACKNOWLEDGE, PSN0 + 3,
				     ROCE_AETH_ACK_UNLIMITED);
	a.atmack_orig = 0x2222;
	sim_inject(&S, 0, &a);
	assert_cqe0(4, WC_SUCCESS);
	uint64_t orig;
	memcpy(&orig, S.h[0].arena + RD_LOFF + 64, 8);
	cr_assert_eq(orig, 0x2222);
	cr_assert_eq(cnt(0)[XPORT_CNT_DROP_BAD_RESP], drops);
}

/* A READ response of host 1 to host 0. */
static void
inject_read_resp(uint8_t opcode, uint32_t psn, const uint8_t *data, uint32_t len)
{
	struct roce_pkt r = resp_pkt(opcode, psn, ROCE_AETH_ACK_UNLIMITED);
	r.payload = data;
	r.payload_len = len;
	sim_inject(&S, 0, &r);
}

/*
 * The completer's READ_ONLY step (the one response of the READ at the
 * head, at the oldest unacknowledged PSN) and its hand-overs: a response
 * with a WRITE still open before it (the general steps complete the
 * WRITE, then place the READ), one of the wrong length (dropped, counted,
 * nothing placed), then the good one; an ONLY with a NAK syndrome is
 * malformed (IBTA 9.7.5.1.3: READ responses carry a positive ACK).
 */
Test(comp, read_only_step_and_its_hand_overs, .init = setup_comp, .fini = teardown)
{
	uint8_t src[64];
	uint8_t *dst = S.h[0].arena + RD_LOFF;

	fill(src, sizeof(src), 43);
	post0(WR_RDMA_WRITE, 1, WR_FLAG_SIGNALED, 0, 64, 0);                    /* PSN0 */
	post0(WR_RDMA_READ, 2, WR_FLAG_SIGNALED, RD_LOFF, 64, RD_ROFF);        /* PSN0 + 1 */
	post0(WR_RDMA_READ, 3, WR_FLAG_SIGNALED, RD_LOFF + 64, 64, RD_ROFF); /* PSN0 + 2 */
	sim_poll(&S);
	cr_assert_eq(sent_since(0, 0), 3);

	inject_read_resp(ROCE_OP_RC_RDMA_READ_RESPONSE_ONLY, PSN0 + 1, src, 64);
	assert_cqe0(1, WC_SUCCESS);
	assert_cqe0(2, WC_SUCCESS);
	cr_assert_eq(memcmp(dst, src, 64), 0);

	inject_read_resp(ROCE_OP_RC_RDMA_READ_RESPONSE_ONLY, PSN0 + 2, src, 60);
	cr_assert_eq(cnt(0)[XPORT_CNT_DROP_BAD_RESP], 1, "60 bytes for a 64-byte READ");
	struct roce_pkt r = resp_pkt(ROCE_OP_RC_RDMA_READ_RESPONSE_ONLY, PSN0 + 2,
				     ROCE_AETH_NAK_PSN_SEQ_ERROR);
	r.payload = src;
	r.payload_len = 64;
	sim_inject(&S, 0, &r);
	cr_assert_eq(cnt(0)[XPORT_CNT_DROP_BAD_RESP], 2, "a READ response with a NAK");
	assert_no_cqe0();
	cr_assert(all_eq(dst + 64, 64, 0), "nothing placed");

	inject_read_resp(ROCE_OP_RC_RDMA_READ_RESPONSE_ONLY, PSN0 + 2, src, 64);
	assert_cqe0(3, WC_SUCCESS);
	assert_no_cqe0();
	cr_assert_eq(memcmp(dst + 64, src, 64), 0);
	cr_assert_eq(cnt(0)[XPORT_CNT_RETRY_IMPLIED_NAK], 0);
	cr_assert_eq(xport_qp_state(S.h[0].qp), XPORT_STATE_RTS);
}

/*
 * Malformed READ responses (IBTA 9.7.5.1: the responses of a READ are
 * FIRST, MIDDLE..., LAST or one ONLY, at its PSNs; FIRST and MIDDLE carry one
 * PMTU, LAST the rest): each is dropped and counted (DROP_BAD_RESP) and
 * places nothing - the completer waits for a well-formed one (or its ACK
 * timer resends the READ). rxe completes the WQE in error instead
 * (COMPST_ERROR from check_ack / do_read); a corrupted response should not
 * kill the connection. A response for a PSN never sent is stale.
 */
Test(comp, malformed_read_responses_dropped, .init = setup_comp, .fini = teardown)
{
	post0(WR_RDMA_READ, 1, WR_FLAG_SIGNALED, RD_LOFF, 3 * MTU, RD_ROFF);
	post0(WR_RDMA_WRITE, 2, WR_FLAG_SIGNALED, 0, 64, 0);
	sim_poll(&S);
	cr_assert_eq(sent_since(0, 0), 2);
	uint32_t n = C.n;
	uint8_t *src = malloc(3 * MTU + 1);
	fill(src, 3 * MTU + 1, 41);
	uint8_t *dst = S.h[0].arena + RD_LOFF;
	uint64_t bad = 0;

	/* a MIDDLE without FIRST */
	inject_read_resp(ROCE_OP_RC_RDMA_READ_RESPONSE_MIDDLE, PSN0, src, MTU);
	cr_assert_eq(cnt(0)[XPORT_CNT_DROP_BAD_RESP], ++bad, "MIDDLE at the first PSN");
	/* a LAST at the first PSN, an ONLY for a three-packet READ */
	inject_read_resp(ROCE_OP_RC_RDMA_READ_RESPONSE_LAST, PSN0, src, MTU);
	cr_assert_eq(cnt(0)[XPORT_CNT_DROP_BAD_RESP], ++bad, "LAST at the first PSN");
	inject_read_resp(ROCE_OP_RC_RDMA_READ_RESPONSE_ONLY, PSN0, src, MTU);
	cr_assert_eq(cnt(0)[XPORT_CNT_DROP_BAD_RESP], ++bad, "ONLY of a 3-packet READ");
	/* a FIRST that is not a full PMTU */
	inject_read_resp(ROCE_OP_RC_RDMA_READ_RESPONSE_FIRST, PSN0, src, MTU - 4);
	cr_assert_eq(cnt(0)[XPORT_CNT_DROP_BAD_RESP], ++bad, "short FIRST");
	cr_assert(all_eq(dst, 3 * MTU, 0), "nothing placed");
	inject_read_resp(ROCE_OP_RC_RDMA_READ_RESPONSE_FIRST, PSN0, src, MTU);
	cr_assert_eq(memcmp(dst, src, MTU), 0, "the good FIRST");
	/* a MIDDLE that is not a full PMTU */
	inject_read_resp(ROCE_OP_RC_RDMA_READ_RESPONSE_MIDDLE, PSN0 + 1, src + MTU, MTU - 4);
	cr_assert_eq(cnt(0)[XPORT_CNT_DROP_BAD_RESP], ++bad, "short MIDDLE");
	cr_assert(all_eq(dst + MTU, 2 * MTU, 0));
	inject_read_resp(ROCE_OP_RC_RDMA_READ_RESPONSE_MIDDLE, PSN0 + 1, src + MTU, MTU);
	/* a LAST longer, then shorter than what remains */
	inject_read_resp(ROCE_OP_RC_RDMA_READ_RESPONSE_LAST, PSN0 + 2, src + 2 * MTU, MTU + 1);
	cr_assert_eq(cnt(0)[XPORT_CNT_DROP_BAD_RESP], ++bad, "long LAST");
	inject_read_resp(ROCE_OP_RC_RDMA_READ_RESPONSE_LAST, PSN0 + 2, src + 2 * MTU, MTU - 1);
	cr_assert_eq(cnt(0)[XPORT_CNT_DROP_BAD_RESP], ++bad, "short LAST");
	cr_assert(all_eq(dst + 2 * MTU, MTU + 64, 0), "no byte of the bad LASTs");
	/* a response for a PSN never sent */
	inject_read_resp(ROCE_OP_RC_RDMA_READ_RESPONSE_LAST, PSN0 + 10, src, MTU);
	cr_assert_eq(cnt(0)[XPORT_CNT_DROP_STALE_RESP], 1);
	assert_no_cqe0();
	cr_assert_eq(sent_since(0, n), 0, "no retry for a malformed response");
	cr_assert_eq(cnt(0)[XPORT_CNT_RETRY_IMPLIED_NAK], 0);
	/* the well-formed LAST completes the READ */
	inject_read_resp(ROCE_OP_RC_RDMA_READ_RESPONSE_LAST, PSN0 + 2, src + 2 * MTU, MTU);
	struct cqe c = scqe0();
	cr_assert_eq(c.wr_id, 1);
	cr_assert_eq(c.status, WC_SUCCESS);
	cr_assert_eq(c.byte_len, 3 * MTU);
	cr_assert_eq(memcmp(dst, src, 3 * MTU), 0);
	cr_assert_eq(cnt(0)[XPORT_CNT_DROP_BAD_RESP], bad);
	cr_assert_eq(xport_qp_state(S.h[0].qp), XPORT_STATE_RTS);
	free(src);
}

/*
 * A READ response whose PSN is beyond the outstanding READ (that of a later
 * request): the READ's last responses were skipped - an implied NAK (IBTA
 * 9.7.5.1; rxe check_psn -> COMPST_ERROR_RETRY): nothing completes, no
 * byte of it is placed, the READ is asked again for what is missing.
 */
Test(comp, read_response_beyond_the_read_is_implied_nak, .init = setup_comp, .fini = teardown)
{
	post0(WR_RDMA_READ, 1, WR_FLAG_SIGNALED, RD_LOFF, 3 * MTU, RD_ROFF);
	post0(WR_RDMA_READ, 2, WR_FLAG_SIGNALED, RD_LOFF + 4 * MTU, 8, RD_ROFF);
	sim_poll(&S);
	cr_assert_eq(sent_since(0, 0), 2);
	uint8_t *src = malloc(3 * MTU);
	fill(src, 3 * MTU, 43);
	inject_read_resp(ROCE_OP_RC_RDMA_READ_RESPONSE_FIRST, PSN0, src, MTU);
	uint32_t n = C.n;
	inject_read_resp(ROCE_OP_RC_RDMA_READ_RESPONSE_ONLY, PSN0 + 3, src, 8);
	assert_no_cqe0();
	cr_assert(all_eq(S.h[0].arena + RD_LOFF + MTU, 2 * MTU, 0));
	cr_assert(all_eq(S.h[0].arena + RD_LOFF + 4 * MTU, 8, 0), "nothing placed for READ 2");
	cr_assert_eq(cnt(0)[XPORT_CNT_RETRY_IMPLIED_NAK], 1);
	cr_assert_eq(sent_since(0, n), 2, "READ 1 from its missing PSN, then READ 2");
	const struct roce_pkt *q = &C.pkt[n];
	cr_assert_eq(q->opcode, ROCE_OP_RC_RDMA_READ_REQUEST);
	cr_assert_eq(q->psn, PSN0 + 1);
	cr_assert_eq(q->reth.va, sim_va(&S, 1, RD_ROFF + MTU));
	cr_assert_eq(q->reth.length, 2 * MTU);
	cr_assert_eq(C.pkt[n + 1].psn, PSN0 + 3);
	free(src);
}

/* ---- NAKs during an RNR wait ------------------------------------------- */

#define RNR_CODE 14                 /* 1.28 ms */
#define RNR_NS (1280ull * 1000)

static bool
nothing(struct sim *s, void *arg)
{
	(void)s;
	(void)arg;
	return false;
}

/* SEND 1 at PSN0 and WRITE 2 at PSN0 + 1 sent; SEND 1 RNR NAKed. @return
 * the end of the RNR wait. */
static uint64_t
rnr_wait_setup(void)
{
	post0(WR_SEND, 1, WR_FLAG_SIGNALED, 0, 64, 0);
	post0(WR_RDMA_WRITE, 2, WR_FLAG_SIGNALED, 0, 64, 0);
	sim_poll(&S);
	cr_assert_eq(sent_since(0, 0), 2);
	inject_ack(PSN0, ROCE_AETH_RNR_NAK | RNR_CODE);
	uint64_t until = S.now + RNR_NS;
	cr_assert_eq(cnt(0)[XPORT_CNT_RNR_NAK_RX], 1);
	cr_assert_eq(S.h[0].timer_at[XPORT_TIMER_RETRY], until, "the RNR wait is armed");
	S.now += 100000; /* inside the wait */
	return until;
}

/*
 * A PSN sequence NAK beyond the RNR NAKed PSN during the wait: the responder
 * took that request after all (the NAK acknowledges every PSN before its
 * own, IBTA 9.7.5.2.1), so the wait is over: the SEND completes, the
 * requester goes back to the NAK's PSN now, and the end of the old wait
 * resends nothing more.
 */
Test(comp, seq_nak_ends_rnr_wait, .init = setup_comp, .fini = teardown)
{
	uint64_t until = rnr_wait_setup();
	uint32_t n = C.n;
	inject_ack(PSN0 + 1, ROCE_AETH_NAK_PSN_SEQ_ERROR);
	assert_cqe0(1, WC_SUCCESS);
	cr_assert_eq(sent_since(0, n), 1, "the WRITE again, now");
	cr_assert_eq(requests_at(n, PSN0 + 1), 1);
	cr_assert_eq(cnt(0)[XPORT_CNT_NAK_SEQ_RX], 1);
	cr_assert_eq(cnt(0)[XPORT_CNT_RETRY_SEQ_NAK], 1);
	cr_assert_eq(cnt(0)[XPORT_CNT_RETRANSMIT_PKTS], 1);
	sim_run(&S, nothing, NULL, until + 100000);
	cr_assert_eq(sent_since(0, n), 1, "no second retransmission at the end of the wait");
	cr_assert_eq(cnt(0)[XPORT_CNT_RETRANSMIT_PKTS], 1);
	inject_ack(PSN0 + 1, ROCE_AETH_ACK_UNLIMITED);
	assert_cqe0(2, WC_SUCCESS);
	cr_assert_eq(xport_qp_state(S.h[0].qp), XPORT_STATE_RTS);
}

/*
 * A sequence NAK for the RNR NAKed PSN itself asks for what the end of the
 * wait resends anyway: counted, no go-back of its own; each PSN is resent
 * once, when the wait is over.
 */
Test(comp, seq_nak_at_rnr_psn_resends_once, .init = setup_comp, .fini = teardown)
{
	uint64_t until = rnr_wait_setup();
	uint32_t n = C.n;
	inject_ack(PSN0, ROCE_AETH_NAK_PSN_SEQ_ERROR);
	cr_assert_eq(sent_since(0, n), 0, "still waiting");
	cr_assert_eq(cnt(0)[XPORT_CNT_NAK_SEQ_RX], 1);
	cr_assert_eq(cnt(0)[XPORT_CNT_RETRY_SEQ_NAK], 0);
	sim_run(&S, nothing, NULL, until + 100000);
	cr_assert_eq(sent_since(0, n), 2);
	cr_assert_eq(requests_at(n, PSN0), 1);
	cr_assert_eq(requests_at(n, PSN0 + 1), 1);
	for (uint32_t i = n; i < C.n; i++)
		cr_assert_geq(C.at[i], until, "resent before the wait was over");
	inject_ack(PSN0 + 1, ROCE_AETH_ACK_UNLIMITED);
	assert_cqe0(1, WC_SUCCESS);
	assert_cqe0(2, WC_SUCCESS);
}

/*
 * A remote access error NAK during the wait: acted on at once - what
 * precedes it completes, the NAKed WQE completes REM_ACCESS_ERR, the rest
 * is flushed, the wait's timer is cancelled and nothing is resent.
 */
Test(comp, access_nak_during_rnr_wait, .init = NULL, .fini = NULL)
{
	for (uint32_t at = 0; at < 2; at++) {
		setup_comp();
		uint64_t until = rnr_wait_setup();
		uint32_t n = C.n;
		inject_ack(PSN0 + at, ROCE_AETH_NAK_REM_ACC_ERR);
		sim_poll(&S);
		if (at == 1)
			assert_cqe0(1, WC_SUCCESS);
		assert_cqe0(1 + at, WC_REM_ACCESS_ERR);
		if (at == 0)
			assert_cqe0(2, WC_WR_FLUSH_ERR);
		assert_no_cqe0();
		cr_assert_eq(cnt(0)[XPORT_CNT_NAK_ACCESS_RX], 1);
		cr_assert_eq(xport_qp_state(S.h[0].qp), XPORT_STATE_ERR);
		cr_assert_eq(S.h[0].timer_at[XPORT_TIMER_RETRY], 0, "the RNR wait is cancelled");
		sim_run(&S, nothing, NULL, until + 100000);
		cr_assert_eq(sent_since(0, n), 0, "nothing resent");
		cr_assert_eq(cnt(0)[XPORT_CNT_RETRANSMIT_PKTS], 0);
		teardown();
	}
}
