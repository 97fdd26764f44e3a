/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The responder of an RC QP attached to a tag matching SRQ (issue 19 step
 * 2), one hand-made packet at a time into host 1 (its SRQ given a TM list):
 * EAGER data lands in the matched entry past the TMH and completes as
 * TM_RECV with MATCH | DATA_VALID and the tag; unexpected and NO_TAG
 * messages land whole in the SRQ's next receive; with no receive the
 * answer is RNR and nothing of the list changes (an unexpected message is
 * counted once, when it lands); a TMH that does not parse is an invalid
 * request, counted; a multi-packet EAGER message continues in the entry.
 * A matched RNDV completes MATCH and starts host 1's own READ
 * (test_tm_rndv.c has it with both engines).
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "xport_tm.h"

#define EPSN 0x100u /* host 1's first expected PSN (sim_default_params psn[0]) */
#define MTU 1024u   /* sim_default_params mtu 3 */

static struct sim S;
static struct capture C;
static struct xport_tm T;

static void
setup(void)
{
	struct sim_params p;

	sim_default_params(&p);
	p.srq = true;
	cr_assert_eq(sim_init(&S, &p, 1), 0);
	capture_attach(&S, &C);
	C.drop[1] = true; /* injected requests: host 0 never asked */
	cr_assert_eq(xport_tm_init(&T, 4), 0);
	S.h[1].srq.tm = &T;
}

static void
teardown(void)
{
	sim_fini(&S);
	xport_tm_fini(&T);
}

TestSuite(tm_resp, .init = setup, .fini = teardown, .timeout = 30);

static const struct roce_pkt *
last(void)
{
	cr_assert_gt(C.n, 0, "host 1 sent nothing");
	return &C.pkt[C.n - 1];
}

/* A TMH (op, app_ctx 0xa1b2c3d4, @p tag) and @p len - 16 bytes of @p fill in @p m. */
static uint32_t
tm_msg(uint8_t *m, uint8_t op, uint64_t tag, uint32_t len, uint8_t fill)
{
	memset(m, fill, len);
	memset(m, 0, XPORT_TMH_LEN);
	m[0] = op;
	m[4] = 0xa1, m[5] = 0xb2, m[6] = 0xc3, m[7] = 0xd4;
	for (int i = 0; i < 8; i++)
		m[8 + i] = (uint8_t)(tag >> (56 - 8 * i));
	return len;
}

static struct roce_pkt
send_pkt(uint8_t opcode, uint32_t psn, const uint8_t *payload, uint32_t len)
{
	struct roce_pkt p = req_pkt(&S, opcode, psn);

	p.payload = payload;
	p.payload_len = len;
	return p;
}

/* An entry for @p tag over host 1's arena [off, off + len). */
static uint32_t
add(uint64_t tag, uint64_t wr_id, uint64_t off, uint32_t len)
{
	struct wr_sge sg = { sim_va(&S, 1, off), len, S.h[1].arena_key };
	uint32_t h;

	cr_assert_eq(xport_tm_add(&T, tag, ~0ull, wr_id, &sg, 1, &h, NULL), 0);
	return h;
}

/* A receive of host 1's SRQ over its arena [off, off + len). */
static void
srq_recv(uint64_t wr_id, uint64_t off, uint32_t len)
{
	struct rq_wqe w = { .wr_id = wr_id, .num_sge = 1 };

	w.sg_list[0] = (struct wr_sge){ sim_va(&S, 1, off), len, S.h[1].arena_key };
	cr_assert(sim_post_recv(&S, 1, &w));
}

static const uint64_t *
cnt(void)
{
	return xport_qp_counters(S.h[1].qp);
}

Test(tm_resp, an_eager_message_lands_in_its_entry_past_the_tmh)
{
	uint8_t m[100];
	struct roce_pkt p = send_pkt(ROCE_OP_RC_SEND_ONLY, EPSN, m,
				     tm_msg(m, XPORT_TMH_EAGER, 0x55, sizeof(m), 'e'));
	struct cqe c;

	add(0x44, 1, 0, 256);
	add(0x55, 2, 4096, 256);
	srq_recv(9, 8192, 256); /* not used by a match */
	memset(S.h[1].arena + 4096, 'x', 256);
	sim_inject(&S, 1, &p);
	assert_ack(last(), ROCE_AETH_ACK_UNLIMITED, EPSN);
	cr_assert(sim_poll_cq(&S, 1, true, &c));
	cr_assert_eq(c.status, WC_SUCCESS);
	cr_assert_eq(c.opcode, WC_TM_RECV);
	cr_assert_eq(c.wc_flags, WC_FLAG_TM_MATCH | WC_FLAG_TM_DATA_VALID);
	cr_assert_eq(c.wr_id, 2);
	cr_assert_eq(c.tm_tag, 0x55);
	cr_assert_eq(c.imm_data, 0xa1b2c3d4);
	cr_assert_eq(c.byte_len, 100 - XPORT_TMH_LEN);
	for (uint32_t i = 0; i < 100 - XPORT_TMH_LEN; i++)
		cr_assert_eq(S.h[1].arena[4096 + i], 'e', "byte %u", i);
	cr_assert_eq(S.h[1].arena[4096 + 100 - XPORT_TMH_LEN], 'x', "nothing past the payload");
	cr_assert_eq(T.n, 1, "the entry is consumed, the other stays");
	cr_assert_eq(spsc_ring_count(S.h[1].srq_ring), 1, "the SRQ receive is untouched");
	cr_assert(xport_tm_synced(&T));
}

Test(tm_resp, a_multi_packet_eager_message_continues_in_the_entry)
{
	static uint8_t m[MTU + 200];
	struct cqe c;

	tm_msg(m, XPORT_TMH_EAGER, 7, sizeof(m), 0);
	for (uint32_t i = XPORT_TMH_LEN; i < sizeof(m); i++)
		m[i] = (uint8_t)(i - XPORT_TMH_LEN);
	add(7, 3, 0, 2048);
	struct roce_pkt f = send_pkt(ROCE_OP_RC_SEND_FIRST, EPSN, m, MTU);
	struct roce_pkt l = send_pkt(ROCE_OP_RC_SEND_LAST, EPSN + 1, m + MTU, 200);
	sim_inject(&S, 1, &f);
	sim_inject(&S, 1, &l);
	assert_ack(last(), ROCE_AETH_ACK_UNLIMITED, EPSN + 1);
	cr_assert(sim_poll_cq(&S, 1, true, &c));
	cr_assert_eq(c.wr_id, 3);
	cr_assert_eq(c.byte_len, sizeof(m) - XPORT_TMH_LEN);
	for (uint32_t i = 0; i < sizeof(m) - XPORT_TMH_LEN; i++)
		cr_assert_eq(S.h[1].arena[i], (uint8_t)i, "byte %u", i);
}

Test(tm_resp, an_eager_message_longer_than_its_entry_is_an_invalid_request)
{
	uint8_t m[100];
	struct roce_pkt p = send_pkt(ROCE_OP_RC_SEND_ONLY, EPSN, m,
				     tm_msg(m, XPORT_TMH_EAGER, 1, sizeof(m), 'e'));

	add(1, 1, 0, 100 - XPORT_TMH_LEN - 1);
	sim_inject(&S, 1, &p);
	assert_ack(last(), ROCE_AETH_NAK_INVALID_REQ, EPSN);
}

Test(tm_resp, unexpected_and_no_tag_messages_land_whole_in_the_srqs_receives)
{
	uint8_t u[64], n[40];
	struct cqe c;

	add(0x99, 1, 0, 256);
	srq_recv(10, 4096, 256);
	srq_recv(11, 8192, 256);
	struct roce_pkt pu = send_pkt(ROCE_OP_RC_SEND_ONLY, EPSN, u,
				      tm_msg(u, XPORT_TMH_EAGER, 0x98, sizeof(u), 'u'));
	struct roce_pkt pn = send_pkt(ROCE_OP_RC_SEND_ONLY, EPSN + 1, n,
				      tm_msg(n, XPORT_TMH_NO_TAG, 0x99, sizeof(n), 'n'));
	sim_inject(&S, 1, &pu);
	sim_inject(&S, 1, &pn);
	assert_ack(last(), ROCE_AETH_ACK_UNLIMITED, EPSN + 1);
	cr_assert(sim_poll_cq(&S, 1, true, &c));
	cr_assert_eq(c.opcode, WC_TM_RECV);
	cr_assert_eq(c.wc_flags, 0, "unexpected: no MATCH");
	cr_assert_eq(c.wr_id, 10);
	cr_assert_eq(c.byte_len, sizeof(u), "the whole message, TMH included");
	cr_assert_eq(memcmp(S.h[1].arena + 4096, u, sizeof(u)), 0);
	cr_assert(sim_poll_cq(&S, 1, true, &c));
	cr_assert_eq(c.opcode, WC_TM_NO_TAG);
	cr_assert_eq(c.wr_id, 11);
	cr_assert_eq(c.byte_len, sizeof(n));
	cr_assert_eq(memcmp(S.h[1].arena + 8192, n, sizeof(n)), 0);
	cr_assert_eq(T.n, 1, "a NO_TAG message matches nothing though its tag would");
	cr_assert_eq(T.unexp_hw, 1);
	cr_assert_not(xport_tm_synced(&T), "matching is off until software syncs");
}

/* A matched RNDV (step 3): MATCH, and host 1's own READ of the RVH's range goes out. */
Test(tm_resp, a_matched_rendezvous_completes_match_and_reads_the_rvhs_range)
{
	uint8_t m[XPORT_TMH_LEN + XPORT_RVH_LEN + 32];
	struct cqe c;

	tm_msg(m, XPORT_TMH_RNDV, 5, sizeof(m), 0x77);
	memcpy(m + 16, (uint8_t[]){ 0, 0, 0x7f, 1, 2, 3, 4, 5, 0xca, 0xfe, 0, 1, 0, 0, 0x10, 0 },
	       16);
	add(5, 1, 0, 8192);
	srq_recv(12, 4096, 256);
	struct roce_pkt p = send_pkt(ROCE_OP_RC_SEND_ONLY, EPSN, m, sizeof(m));
	sim_inject(&S, 1, &p);
	cr_assert(sim_poll_cq(&S, 1, true, &c));
	cr_assert_eq(c.opcode, WC_TM_RECV);
	cr_assert_eq(c.wc_flags, WC_FLAG_TM_MATCH);
	cr_assert_eq(c.wr_id, 1);
	cr_assert_eq(c.tm_tag, 5);
	cr_assert_eq(c.byte_len, 0);
	cr_assert_not(sim_poll_cq(&S, 1, true, &c), "DATA_VALID waits for the READ");
	cr_assert_eq(T.n, 0);
	cr_assert_eq(spsc_ring_count(S.h[1].srq_ring), 1, "the SRQ receive is untouched");
	for (uint32_t i = 0; i < 32; i++)
		cr_assert_neq(S.h[1].arena[i], 0x77, "nothing of the message is placed");
	/* the ACK, then the READ request (AckReq, the RVH's range) */
	cr_assert_eq(C.n, 2);
	assert_ack(&C.pkt[0], ROCE_AETH_ACK_UNLIMITED, EPSN);
	cr_assert_eq(C.pkt[1].opcode, ROCE_OP_RC_RDMA_READ_REQUEST);
	cr_assert_eq(C.pkt[1].reth.va, 0x00007f0102030405ull);
	cr_assert_eq(C.pkt[1].reth.rkey, 0xcafe0001);
	cr_assert_eq(C.pkt[1].reth.length, 0x1000);
	cr_assert_eq(C.pkt[1].psn, 0x2000, "host 1's first request PSN");
	cr_assert_eq(cnt()[XPORT_CNT_TM_RNDV], 1);
}

/* Unmatched, or out of sync: RNDV is unexpected, the RVH lands in the SRQ's receive. */
Test(tm_resp, an_unmatched_rendezvous_is_left_to_software)
{
	uint8_t m[XPORT_TMH_LEN + XPORT_RVH_LEN];
	struct cqe c;

	tm_msg(m, XPORT_TMH_RNDV, 6, sizeof(m), 0);
	add(5, 1, 0, 256);
	srq_recv(12, 4096, 256);
	struct roce_pkt p = send_pkt(ROCE_OP_RC_SEND_ONLY, EPSN, m, sizeof(m));
	sim_inject(&S, 1, &p);
	cr_assert(sim_poll_cq(&S, 1, true, &c));
	cr_assert_eq(c.opcode, WC_TM_RECV);
	cr_assert_eq(c.wc_flags, 0);
	cr_assert_eq(c.wr_id, 12, "unexpected: the RVH in the SRQ's receive");
	cr_assert_eq(T.n, 1, "the entry stays");
	cr_assert_eq(capture_count(&C, 1, ROCE_OP_RC_RDMA_READ_REQUEST), 0);
}

Test(tm_resp, without_a_receive_an_unexpected_message_is_rnr_and_changes_nothing)
{
	uint8_t u[64];
	struct cqe c;
	struct roce_pkt p = send_pkt(ROCE_OP_RC_SEND_ONLY, EPSN, u,
				     tm_msg(u, XPORT_TMH_EAGER, 0x98, sizeof(u), 'u'));

	add(0x99, 1, 0, 256);
	sim_inject(&S, 1, &p);
	cr_assert_eq(last()->aeth.syndrome & 0xe0, ROCE_AETH_RNR_NAK & 0xe0, "RNR NAK");
	cr_assert_eq(T.unexp_hw, 0, "not counted before it lands");
	cr_assert(xport_tm_synced(&T));
	cr_assert_not(sim_poll_cq(&S, 1, true, &c));
	/* resent with a receive posted: it lands, counted once */
	srq_recv(10, 4096, 256);
	sim_inject(&S, 1, &p);
	assert_ack(last(), ROCE_AETH_ACK_UNLIMITED, EPSN);
	cr_assert(sim_poll_cq(&S, 1, true, &c));
	cr_assert_eq(c.wr_id, 10);
	cr_assert_eq(T.unexp_hw, 1);
	/* an EAGER match needs no receive of the SRQ */
	uint8_t e[32];
	struct roce_pkt pe = send_pkt(ROCE_OP_RC_SEND_ONLY, EPSN + 1, e,
				      tm_msg(e, XPORT_TMH_EAGER, 0x99, sizeof(e), 'e'));
	xport_tm_sync(&T, 1);
	sim_inject(&S, 1, &pe);
	assert_ack(last(), ROCE_AETH_ACK_UNLIMITED, EPSN + 1);
	cr_assert(sim_poll_cq(&S, 1, true, &c));
	cr_assert_eq(c.wc_flags, WC_FLAG_TM_MATCH | WC_FLAG_TM_DATA_VALID);
}

Test(tm_resp, a_malformed_tmh_is_an_invalid_request_and_counted)
{
	uint8_t m[64];
	struct roce_pkt p;

	srq_recv(10, 4096, 256);
	add(1, 1, 0, 256);
	tm_msg(m, XPORT_TMH_EAGER, 1, sizeof(m), 0);
	m[0] = XPORT_TMH_EAGER + 1; /* an unknown opcode */
	p = send_pkt(ROCE_OP_RC_SEND_ONLY, EPSN, m, sizeof(m));
	sim_inject(&S, 1, &p);
	assert_ack(last(), ROCE_AETH_NAK_INVALID_REQ, EPSN);
	cr_assert_eq(xport_qp_state(S.h[1].qp), XPORT_STATE_ERR);
	cr_assert_eq(cnt()[XPORT_CNT_TM_BAD_TMH], 1);
	cr_assert_eq(T.n, 1, "nothing matched");
	cr_assert_eq(T.unexp_hw, 0);
}

/*
 * Reserved TMH bytes are not looked at, as mlx5 (pyverbs' test_tag_matching
 * writes opcode and tag over a payload of 'c's): the message matches.
 */
Test(tm_resp, reserved_tmh_bytes_are_ignored)
{
	uint8_t m[64];
	struct roce_pkt p;
	struct cqe c;

	add(1, 4, 0, 256);
	tm_msg(m, XPORT_TMH_EAGER, 1, sizeof(m), 'c');
	m[1] = m[2] = m[3] = 'c';
	p = send_pkt(ROCE_OP_RC_SEND_ONLY, EPSN, m, sizeof(m));
	sim_inject(&S, 1, &p);
	assert_ack(last(), ROCE_AETH_ACK_UNLIMITED, EPSN);
	cr_assert(sim_poll_cq(&S, 1, true, &c));
	cr_assert_eq(c.status, WC_SUCCESS);
	cr_assert_eq(c.wr_id, 4);
	cr_assert_eq(c.wc_flags, WC_FLAG_TM_MATCH | WC_FLAG_TM_DATA_VALID);
	cr_assert_eq(cnt()[XPORT_CNT_TM_BAD_TMH], 0);
}

/* Shorter than a TMH, an unknown opcode, an RNDV without its RVH: all refused the same way. */
Test(tm_resp, short_unknown_and_truncated_rendezvous_headers_are_invalid_requests)
{
	uint8_t m[XPORT_TMH_LEN + 8];
	const uint32_t lens[] = { XPORT_TMH_LEN - 1, XPORT_TMH_LEN, XPORT_TMH_LEN + 8 };
	const uint8_t ops[] = { XPORT_TMH_EAGER, 9, XPORT_TMH_RNDV };

	for (unsigned i = 0; i < 3; i++) {
		struct sim_params sp;
		struct roce_pkt p;

		sim_default_params(&sp);
		sp.srq = true;
		cr_assert_eq(sim_reset(&S, &sp, 1), 0);
		capture_attach(&S, &C);
		C.drop[1] = true;
		S.h[1].srq.tm = &T;
		srq_recv(10, 4096, 256);
		tm_msg(m, ops[i], 1, sizeof(m), 0);
		p = send_pkt(ROCE_OP_RC_SEND_ONLY, EPSN, m, lens[i]);
		sim_inject(&S, 1, &p);
		assert_ack(last(), ROCE_AETH_NAK_INVALID_REQ, EPSN);
		cr_assert_eq(cnt()[XPORT_CNT_TM_BAD_TMH], 1, "case %u", i);
	}
}

/* The READ needs the requester: in RTR a matched RNDV is RNR, the entry kept. */
Test(tm_resp, in_rtr_a_matched_rendezvous_is_rnr)
{
	uint8_t m[XPORT_TMH_LEN + XPORT_RVH_LEN];
	struct cqe c;

	tm_msg(m, XPORT_TMH_RNDV, 5, sizeof(m), 0);
	add(5, 1, 0, 256);
	srq_recv(12, 4096, 256);
	sim_set_state(&S, 1, XPORT_STATE_RTR);
	struct roce_pkt p = send_pkt(ROCE_OP_RC_SEND_ONLY, EPSN, m, sizeof(m));
	sim_inject(&S, 1, &p);
	cr_assert_eq(last()->aeth.syndrome & 0xe0, ROCE_AETH_RNR_NAK & 0xe0, "RNR NAK");
	cr_assert_not(sim_poll_cq(&S, 1, true, &c));
	cr_assert_eq(T.n, 1, "the entry stays");
	cr_assert_eq(cnt()[XPORT_CNT_TM_RNDV], 0);
	/* in RTS it goes through */
	sim_set_state(&S, 1, XPORT_STATE_RTS);
	sim_inject(&S, 1, &p);
	cr_assert(sim_poll_cq(&S, 1, true, &c));
	cr_assert_eq(c.wc_flags, WC_FLAG_TM_MATCH);
	cr_assert_eq(capture_count(&C, 1, ROCE_OP_RC_RDMA_READ_REQUEST), 1);
}
