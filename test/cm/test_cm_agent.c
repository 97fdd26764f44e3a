/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/cm agent: two agents back to back (cm_wire.c) through the whole
 * life of connections: establish, private data, disconnect (crossing
 * DREQs too), loss of each message and the retry that recovers it,
 * timeouts after the max CM retries, MRA, REJ (unknown service, consumer,
 * stale connection, withdrawn REQ), SIDR, TimeWait, duplicates and
 * reordering, messages for no connection, and the API's refusals.
 * Side 0 is active ("A"), side 1 passive ("B") unless a test says so.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "cm_wire.h"

#define SEC UINT64_C(1000000)

static struct wire *w;
static struct side *A, *B;

static void
setup(void)
{
	w = wire_new(0);
	A = &w->s[0];
	B = &w->s[1];
	cr_assert_eq(cm_listen(B->a, SID_A, 0, 0xB0B), 0);
}

static void
teardown(void)
{
	wire_free(w);
}

TestSuite(cm_agent, .init = setup, .fini = teardown);

/* Connect A -> B and check both ends are established. */
static cm_conn_t
establish(uint32_t qpn, cm_conn_t *passive)
{
	cm_conn_t c = wire_connect(w, 0, SID_A, qpn);
	unsigned int before = side_count(B, CM_EV_RTU_RECEIVED);

	wire_run_for(w, 1000);
	cr_assert_eq(side_state(A, c), CM_STATE_ESTABLISHED);
	cr_assert_eq(side_count(B, CM_EV_RTU_RECEIVED), before + 1);
	*passive = side_event(B, CM_EV_RTU_RECEIVED, before)->conn;
	cr_assert_eq(side_state(B, *passive), CM_STATE_ESTABLISHED);
	return c;
}

Test(cm_agent, connect_private_data_disconnect_timewait)
{
	cm_conn_t a = wire_connect(w, 0, SID_A, 0x18), b;
	const struct ev_rec *e;
	struct cm_msg req, rep, rtu, dreq, drep;
	struct cm_ip_hdr ip;

	cr_assert_eq(side_state(A, a), CM_STATE_REQ_SENT);
	wire_run_for(w, 1000);

	/* B saw the REQ with its private data behind the IP header */
	e = side_event(B, CM_EV_REQ_RECEIVED, 0);
	cr_assert_not_null(e);
	cr_assert_eq(e->cookie, 0xB0B, "a REQ event carries the listener's cookie");
	cr_assert_eq(e->msg.req.local_qpn, 0x18);
	cr_assert_eq(cm_ip_hdr_parse(e->msg.req.private_data, e->msg.req.private_data_len, &ip), 0);
	cr_assert_eq(ip.src_port, 40000);
	cr_assert_arr_eq(e->msg.req.private_data + CM_IP_HDR_SIZE, "hello", 5);
	b = e->conn;
	/* A saw the REP, B the RTU with its private data */
	e = side_event(A, CM_EV_REP_RECEIVED, 0);
	cr_assert_not_null(e);
	cr_assert_eq(e->cookie, 500 + 0x18);
	cr_assert_eq(e->msg.rep.local_qpn, 0x200);
	e = side_event(B, CM_EV_RTU_RECEIVED, 0);
	cr_assert_not_null(e);
	cr_assert_eq(e->conn, b);
	cr_assert_neq(e->cookie, 0xB0B, "the consumer's new cookie");
	cr_assert_arr_eq(e->msg.rtu.private_data, "rtu", 3);
	cr_assert_eq(side_state(A, a), CM_STATE_ESTABLISHED);
	cr_assert_eq(side_state(B, b), CM_STATE_ESTABLISHED);

	/* REQ, REP and RTU share the active side's TID */
	wire_sent_msg(w, 0, CM_ATTR_REQ, 0, &req);
	wire_sent_msg(w, 1, CM_ATTR_REP, 0, &rep);
	wire_sent_msg(w, 0, CM_ATTR_RTU, 0, &rtu);
	cr_assert_eq(rep.hdr.tid, req.hdr.tid);
	cr_assert_eq(rtu.hdr.tid, req.hdr.tid);
	cr_assert_eq(rep.rep.remote_comm_id, req.req.local_comm_id);
	cr_assert_eq(req.req.local_ca_guid, A->guid);
	cr_assert_eq(rep.rep.local_ca_guid, B->guid);

	/* B disconnects; A answers; both in TimeWait */
	cr_assert_eq(cm_send_dreq(B->a, b, "bye", 3, w->now), 0);
	cr_assert_eq(side_state(B, b), CM_STATE_DREQ_SENT);
	wire_run_for(w, 1000);
	cr_assert_eq(side_count(A, CM_EV_DREQ_RECEIVED), 1);
	cr_assert_arr_eq(side_event(A, CM_EV_DREQ_RECEIVED, 0)->msg.dreq.private_data, "bye", 3);
	cr_assert_eq(side_count(B, CM_EV_DREP_RECEIVED), 1);
	cr_assert_eq(side_state(A, a), CM_STATE_TIMEWAIT);
	cr_assert_eq(side_state(B, b), CM_STATE_TIMEWAIT);
	wire_sent_msg(w, 1, CM_ATTR_DREQ, 0, &dreq);
	wire_sent_msg(w, 0, CM_ATTR_DREP, 0, &drep);
	cr_assert_neq(dreq.hdr.tid, req.hdr.tid, "B's DREQ has B's own TID");
	cr_assert_eq(drep.hdr.tid, dreq.hdr.tid, "the DREP echoes it");
	cr_assert_eq(dreq.dreq.remote_qpn, 0x18);

	/* TimeWait ends, then the connections are idle */
	wire_run_for(w, 10 * SEC);
	cr_assert_eq(side_count(A, CM_EV_TIMEWAIT_EXIT), 1);
	cr_assert_eq(side_count(B, CM_EV_TIMEWAIT_EXIT), 1);
	cr_assert_eq(side_state(A, a), CM_STATE_IDLE);
	cr_assert_eq(cm_conn_destroy(A->a, a, w->now), 0);
	cr_assert_eq(cm_conn_destroy(B->a, b, w->now), 0);
	cr_assert_eq(cm_agent_conns_in_use(A->a), 0);
	cr_assert_eq(cm_agent_conns_in_use(B->a), 0);
	/* nothing was retransmitted on a clean wire */
	for (int s = 0; s < 2; s++)
		for (int c = CM_CTR_RETRY_REQ; c <= CM_CTR_RETRY_SIDR_REQ; c++)
			cr_assert_eq(side_ctr(&w->s[s], (enum cm_ctr)c), 0, "%s", cm_ctr_name(c));
	cr_assert_eq(side_ctr(A, CM_CTR_ESTABLISHED), 1);
	cr_assert_eq(side_ctr(B, CM_CTR_ESTABLISHED), 1);
	cr_assert_eq(w->nq, 0);
}

Test(cm_agent, crossing_dreqs_are_both_answered)
{
	cm_conn_t b, a = establish(0x18, &b);

	/* both disconnect before either hears the other */
	cr_assert_eq(cm_send_dreq(A->a, a, NULL, 0, w->now), 0);
	cr_assert_eq(cm_send_dreq(B->a, b, NULL, 0, w->now), 0);
	wire_run_for(w, 1000);
	cr_assert_eq(side_count(A, CM_EV_DREQ_RECEIVED), 1);
	cr_assert_eq(side_count(B, CM_EV_DREQ_RECEIVED), 1);
	cr_assert_eq(wire_sent(w, 0, CM_ATTR_DREP, true), 1);
	cr_assert_eq(wire_sent(w, 1, CM_ATTR_DREP, true), 1);
	cr_assert_eq(side_state(A, a), CM_STATE_TIMEWAIT);
	cr_assert_eq(side_state(B, b), CM_STATE_TIMEWAIT);
	/* each DREP found its connection already in TimeWait */
	cr_assert_eq(side_ctr(A, CM_CTR_DUP_DREP), 1);
	cr_assert_eq(side_ctr(B, CM_CTR_DUP_DREP), 1);
	/* and no DREQ went again */
	wire_run_for(w, 30 * SEC);
	cr_assert_eq(side_ctr(A, CM_CTR_RETRY_DREQ), 0);
	cr_assert_eq(side_ctr(B, CM_CTR_RETRY_DREQ), 0);
	cr_assert_eq(side_count(A, CM_EV_TIMEWAIT_EXIT), 1);
	cr_assert_eq(side_count(B, CM_EV_TIMEWAIT_EXIT), 1);
}

Test(cm_agent, dreq_from_rdma_disconnect_after_peer_dreq_sends_the_drep)
{
	cm_conn_t b, a = establish(0x18, &b);

	A->auto_drep = false;
	cr_assert_eq(cm_send_dreq(B->a, b, NULL, 0, w->now), 0);
	wire_run_for(w, 1000);
	cr_assert_eq(side_state(A, a), CM_STATE_DREQ_RCVD);
	/* rdma_disconnect() on A now: the DREP */
	cr_assert_eq(cm_send_dreq(A->a, a, NULL, 0, w->now), 0);
	cr_assert_eq(side_state(A, a), CM_STATE_TIMEWAIT);
	wire_run_for(w, 1000);
	cr_assert_eq(side_count(B, CM_EV_DREP_RECEIVED), 1);
	cr_assert_eq(wire_sent(w, 0, CM_ATTR_DREQ, true), 0);
}

Test(cm_agent, lost_req_is_retried)
{
	cm_conn_t b, a;

	wire_rule(w, (struct wire_rule){.from = 0, .attr = CM_ATTR_REQ, .count = 1, .action = WIRE_DROP});
	a = wire_connect(w, 0, SID_A, 0x18);
	wire_run_for(w, 4 * SEC);
	cr_assert_eq(side_state(A, a), CM_STATE_REQ_SENT, "no retry before the response timeout");
	wire_run_for(w, 2 * SEC);
	cr_assert_eq(side_state(A, a), CM_STATE_ESTABLISHED);
	cr_assert_eq(side_ctr(A, CM_CTR_RETRY_REQ), 1);
	cr_assert_eq(side_count(B, CM_EV_REQ_RECEIVED), 1);
	b = side_event(B, CM_EV_REQ_RECEIVED, 0)->conn;
	cr_assert_eq(side_state(B, b), CM_STATE_ESTABLISHED);
	/* the retry went at 2 * packet lifetime + response timeout:
	 * 2 * 4.096us * 2^16 + 4.096us * 2^20 */
	cr_assert_eq(w->log[1].at - w->log[0].at, 2 * cm_iba_time_us(16) + cm_iba_time_us(20));
}

Test(cm_agent, lost_rep_duplicate_req_answered_with_the_rep)
{
	cm_conn_t a;

	wire_rule(w, (struct wire_rule){.from = 1, .attr = CM_ATTR_REP, .count = 1, .action = WIRE_DROP});
	a = wire_connect(w, 0, SID_A, 0x18);
	wire_run_for(w, 6 * SEC);
	cr_assert_eq(side_state(A, a), CM_STATE_ESTABLISHED);
	cr_assert_eq(side_ctr(A, CM_CTR_RETRY_REQ), 1);
	cr_assert_eq(side_ctr(B, CM_CTR_DUP_REQ), 1);
	cr_assert_eq(side_count(B, CM_EV_REQ_RECEIVED), 1, "a duplicate REQ is never processed again");
	cr_assert_eq(wire_sent(w, 1, CM_ATTR_REP, true), 2);
	cr_assert_eq(side_count(B, CM_EV_RTU_RECEIVED), 1);
}

Test(cm_agent, lost_rtu_rep_retried_and_answered_with_the_rtu)
{
	cm_conn_t a, b;

	wire_rule(w, (struct wire_rule){.from = 0, .attr = CM_ATTR_RTU, .count = 1, .action = WIRE_DROP});
	a = wire_connect(w, 0, SID_A, 0x18);
	wire_run_for(w, 1000);
	b = side_event(B, CM_EV_REQ_RECEIVED, 0)->conn;
	cr_assert_eq(side_state(A, a), CM_STATE_ESTABLISHED);
	cr_assert_eq(side_state(B, b), CM_STATE_REP_SENT);
	/* B's REP waits for A's response time: 2 * 4.096us * 2^18 + 4.096us * 2^20
	 * (B takes A's packet lifetime as its local ACK timeout 19 less one) */
	wire_run_for(w, 2 * cm_iba_time_us(18) + cm_iba_time_us(20) - 1000);
	cr_assert_eq(side_state(B, b), CM_STATE_REP_SENT);
	wire_run_for(w, 2000);
	cr_assert_eq(side_state(B, b), CM_STATE_ESTABLISHED);
	cr_assert_eq(side_ctr(B, CM_CTR_RETRY_REP), 1);
	cr_assert_eq(side_ctr(A, CM_CTR_DUP_REP), 1);
	cr_assert_eq(wire_sent(w, 0, CM_ATTR_RTU, true), 2);
	cr_assert_eq(side_count(A, CM_EV_REP_RECEIVED), 1, "a duplicate REP is never processed again");
}

Test(cm_agent, req_times_out_after_max_cm_retries)
{
	struct cm_req_param p = wire_req_param(w, 0, SID_A, 0x18);
	cm_conn_t a;
	const struct ev_rec *e;
	uint64_t t0 = w->now, per_try = 2 * cm_iba_time_us(16) + cm_iba_time_us(20);

	p.req.max_cm_retries = 3;
	wire_rule(w, (struct wire_rule){.from = 0, .attr = CM_ATTR_REQ, .count = -1, .action = WIRE_DROP});
	cr_assert_eq(cm_send_req(A->a, 7, &p, w->now, &a), 0);
	wire_run_for(w, 60 * SEC);
	cr_assert_eq(wire_sent(w, 0, CM_ATTR_REQ, true), 4, "the REQ and 3 retries");
	cr_assert_eq(side_ctr(A, CM_CTR_RETRY_REQ), 3);
	cr_assert_eq(side_ctr(A, CM_CTR_TIMEOUT_REQ), 1);
	e = side_event(A, CM_EV_REQ_TIMEOUT, 0);
	cr_assert_not_null(e);
	cr_assert_eq(e->cookie, 7);
	cr_assert_eq(e->at - t0, 4 * per_try);
	cr_assert_eq(side_state(A, a), CM_STATE_IDLE);
	/* the kernel sends no REJ when its REQ times out */
	cr_assert_eq(wire_sent(w, 0, CM_ATTR_REJ, true), 0);
	cr_assert_eq(cm_agent_next_deadline(A->a), UINT64_MAX);
}

Test(cm_agent, rep_times_out_after_the_reqs_max_cm_retries)
{
	struct cm_req_param p = wire_req_param(w, 0, SID_A, 0x18);
	cm_conn_t a, b;

	p.req.max_cm_retries = 2;
	/* every RTU (and so every answer to a duplicate REP) is lost */
	wire_rule(w, (struct wire_rule){.from = 0, .attr = CM_ATTR_RTU, .count = -1, .action = WIRE_DROP});
	cr_assert_eq(cm_send_req(A->a, 7, &p, w->now, &a), 0);
	wire_run_for(w, 120 * SEC);
	b = side_event(B, CM_EV_REQ_RECEIVED, 0)->conn;
	cr_assert_eq(wire_sent(w, 1, CM_ATTR_REP, true), 3);
	cr_assert_eq(side_count(B, CM_EV_REP_TIMEOUT), 1);
	cr_assert_eq(side_state(B, b), CM_STATE_IDLE);
	cr_assert_eq(side_ctr(B, CM_CTR_TIMEOUT_REP), 1);
	/* A is established (it sent its RTU) and answered each duplicate REP */
	cr_assert_eq(side_state(A, a), CM_STATE_ESTABLISHED);
	cr_assert_eq(side_ctr(A, CM_CTR_DUP_REP), 2);
}

Test(cm_agent, mra_extends_the_wait)
{
	cm_conn_t a, b;
	struct cm_rep rep = {.local_qpn = 0x77, .rnr_retry_count = 7};

	B->mra_on_req = 24; /* 4.096us * 2^24 = 68.7 s */
	a = wire_connect(w, 0, SID_A, 0x18);
	wire_run_for(w, 1000);
	b = side_event(B, CM_EV_REQ_RECEIVED, 0)->conn;
	cr_assert_eq(side_state(B, b), CM_STATE_MRA_REQ_SENT);
	cr_assert_eq(side_state(A, a), CM_STATE_MRA_REQ_RCVD);
	cr_assert_eq(side_count(A, CM_EV_MRA_RECEIVED), 1);
	cr_assert_arr_eq(side_event(A, CM_EV_MRA_RECEIVED, 0)->msg.mra.private_data, "wait", 4);
	/* far past the REQ's own timeout, nothing was resent */
	wire_run_for(w, 60 * SEC);
	cr_assert_eq(side_ctr(A, CM_CTR_RETRY_REQ), 0);
	cr_assert_eq(side_state(A, a), CM_STATE_MRA_REQ_RCVD);
	/* B accepts after all */
	cr_assert_eq(cm_send_rep(B->a, b, &rep, w->now), 0);
	wire_run_for(w, 1000);
	cr_assert_eq(side_state(A, a), CM_STATE_ESTABLISHED);
	cr_assert_eq(side_state(B, b), CM_STATE_ESTABLISHED);
}

Test(cm_agent, mra_after_the_extended_wait_the_req_goes_again_and_the_mra_answers_it)
{
	cm_conn_t a, b;

	B->mra_on_req = 10; /* 4.2 ms */
	a = wire_connect(w, 0, SID_A, 0x18);
	wire_run_for(w, 1000);
	b = side_event(B, CM_EV_REQ_RECEIVED, 0)->conn;
	/* MRA wait: service timeout + (packet lifetime + 1) */
	wire_run_for(w, cm_iba_time_us(10) + cm_iba_time_us(17) + 1000);
	cr_assert_eq(side_ctr(A, CM_CTR_RETRY_REQ), 1);
	cr_assert_eq(side_ctr(B, CM_CTR_DUP_REQ), 1);
	cr_assert_eq(wire_sent(w, 1, CM_ATTR_MRA, true), 2, "the duplicate REQ got the MRA again");
	cr_assert_eq(side_ctr(A, CM_CTR_DUP_MRA), 1, "the second MRA extends nothing");
	cr_assert_eq(side_count(B, CM_EV_REQ_RECEIVED), 1);
	cr_assert_eq(side_state(B, b), CM_STATE_MRA_REQ_SENT);
	(void)a;
}

Test(cm_agent, delayed_mra_is_sent_only_to_a_duplicate)
{
	cm_conn_t a;

	B->mra_on_req = 24;
	B->mra_flags = CM_MRA_DELAY;
	a = wire_connect(w, 0, SID_A, 0x18);
	wire_run_for(w, 1000);
	cr_assert_eq(wire_sent(w, 1, CM_ATTR_MRA, true), 0);
	cr_assert_eq(side_state(A, a), CM_STATE_REQ_SENT);
	wire_run_for(w, 5 * SEC);
	cr_assert_eq(side_ctr(A, CM_CTR_RETRY_REQ), 1);
	cr_assert_eq(wire_sent(w, 1, CM_ATTR_MRA, true), 1);
	cr_assert_eq(side_state(A, a), CM_STATE_MRA_REQ_RCVD);
}

Test(cm_agent, req_for_a_service_nobody_listens_on_is_rejected)
{
	cm_conn_t a = wire_connect(w, 0, SID_A + 1, 0x18);
	const struct ev_rec *e;

	wire_run_for(w, 1000);
	e = side_event(A, CM_EV_REJ_RECEIVED, 0);
	cr_assert_not_null(e);
	cr_assert_eq(e->msg.rej.reason, CM_REJ_INVALID_SERVICE_ID);
	cr_assert_eq(e->msg.rej.message_rejected, CM_MSG_RESPONSE_REQ);
	cr_assert_eq(side_state(A, a), CM_STATE_IDLE);
	cr_assert_eq(side_ctr(B, CM_CTR_REJ_TX_INVALID_SID), 1);
	cr_assert_eq(cm_agent_conns_in_use(B->a), 0);
	cr_assert_eq(side_count(B, CM_EV_REQ_RECEIVED), 0);
	wire_run_for(w, 60 * SEC);
	cr_assert_eq(side_ctr(A, CM_CTR_RETRY_REQ), 0, "a rejected REQ is not retried");
}

Test(cm_agent, consumer_reject_with_private_data)
{
	cm_conn_t a, b;
	const struct ev_rec *e;

	B->auto_rep = false;
	a = wire_connect(w, 0, SID_A, 0x18);
	wire_run_for(w, 1000);
	b = side_event(B, CM_EV_REQ_RECEIVED, 0)->conn;
	cr_assert_eq(cm_send_rej(B->a, b, CM_REJ_CONSUMER_DEFINED, NULL, 0, "no thanks", 9, w->now), 0);
	cr_assert_eq(side_state(B, b), CM_STATE_IDLE);
	wire_run_for(w, 1000);
	e = side_event(A, CM_EV_REJ_RECEIVED, 0);
	cr_assert_not_null(e);
	cr_assert_eq(e->msg.rej.reason, CM_REJ_CONSUMER_DEFINED);
	cr_assert_eq(e->msg.rej.local_comm_id, 0, "a REJ from REQ_RCVD carries no local ID");
	cr_assert_arr_eq(e->msg.rej.private_data, "no thanks", 9);
	cr_assert_eq(side_state(A, a), CM_STATE_IDLE);
}

Test(cm_agent, withdrawn_req_rejects_with_timeout_and_our_ca_guid)
{
	cm_conn_t a, b;
	const struct ev_rec *e;

	B->auto_rep = false;
	a = wire_connect(w, 0, SID_A, 0x18);
	wire_run_for(w, 1000);
	b = side_event(B, CM_EV_REQ_RECEIVED, 0)->conn;
	cr_assert_eq(cm_conn_destroy(A->a, a, w->now), 0);
	cr_assert_eq(cm_conn_query(A->a, a, &(struct cm_conn_info){0}), -ENOENT);
	wire_run_for(w, 1000);
	e = side_event(B, CM_EV_REJ_RECEIVED, 0);
	cr_assert_not_null(e, "B found its connection from the ARI's CA GUID");
	cr_assert_eq(e->conn, b);
	cr_assert_eq(e->msg.rej.reason, CM_REJ_TIMEOUT);
	cr_assert_eq(e->msg.rej.ari_len, 8);
	cr_assert_eq(side_state(B, b), CM_STATE_IDLE);
}

Test(cm_agent, stale_connection_rejected_and_the_old_one_disconnected)
{
	cm_conn_t b, a = establish(0x18, &b), a2;
	const struct ev_rec *e;

	/* A reuses QPN 0x18 (a QP B still believes connected) */
	a2 = wire_connect(w, 0, SID_A, 0x18);
	wire_run_for(w, 1000);
	e = side_event(A, CM_EV_REJ_RECEIVED, 0);
	cr_assert_not_null(e);
	cr_assert_eq(e->conn, a2);
	cr_assert_eq(e->msg.rej.reason, CM_REJ_STALE_CONN);
	cr_assert_eq(side_state(A, a2), CM_STATE_TIMEWAIT, "a stale REJ leads to TimeWait");
	cr_assert_eq(side_ctr(B, CM_CTR_REJ_TX_STALE), 1);
	cr_assert_eq(side_count(B, CM_EV_REQ_RECEIVED), 1, "no new connection on B");
	/* and B disconnected the old one, as cm.c does */
	cr_assert_eq(side_count(A, CM_EV_DREQ_RECEIVED), 1);
	cr_assert_eq(side_event(A, CM_EV_DREQ_RECEIVED, 0)->conn, a);
	cr_assert_eq(side_state(B, b), CM_STATE_TIMEWAIT);
	cr_assert_eq(side_state(A, a), CM_STATE_TIMEWAIT);
}

/*
 * A QPN whose old connection is in TimeWait may connect again at once: as
 * Linux's cm_enter_timewait() (cm_cleanup_timewait()), TimeWait leaves the
 * remote-QPN table, so only a live connection makes a REQ stale. (The soak
 * found this: rping in a loop got REJ 10 when the daemon reused a QPN
 * within the peer's TimeWait.)
 */
Test(cm_agent, a_qpn_in_timewait_connects_again)
{
	cm_conn_t b, a = establish(0x18, &b), a2;

	cr_assert_eq(cm_send_dreq(A->a, a, NULL, 0, w->now), 0);
	wire_run_for(w, 1000);
	cr_assert_eq(side_state(B, b), CM_STATE_TIMEWAIT);
	cr_assert_eq(side_state(A, a), CM_STATE_TIMEWAIT);
	a2 = wire_connect(w, 0, SID_A, 0x18);
	wire_run_for(w, 1000);
	cr_assert_eq(side_ctr(B, CM_CTR_REJ_TX_STALE), 0, "not stale: the old one is gone");
	cr_assert_eq(side_state(A, a2), CM_STATE_ESTABLISHED);
	cr_assert_eq(side_count(B, CM_EV_REQ_RECEIVED), 2);
}

Test(cm_agent, duplicate_req_in_timewait_gets_a_stale_rej)
{
	cm_conn_t b, a = establish(0x18, &b);
	uint8_t old_req[CM_MAD_SIZE];
	struct cm_path from = {.pkey = 0xffff, .remote_qpn = 1};

	memcpy(old_req, w->log[0].mad, CM_MAD_SIZE);
	cr_assert_eq(cm_send_dreq(A->a, a, NULL, 0, w->now), 0);
	wire_run_for(w, 1000);
	cr_assert_eq(side_state(B, b), CM_STATE_TIMEWAIT);
	/* the consumer lets go; the slot stays held for the TimeWait */
	cr_assert_eq(cm_conn_destroy(B->a, b, w->now), 0);
	cr_assert_eq(cm_agent_conns_in_use(B->a), 1);
	memcpy(from.remote_gid, A->gid, 16);
	memcpy(from.local_gid, B->gid, 16);
	cr_assert_eq(cm_agent_rx(B->a, &from, old_req, CM_MAD_SIZE, w->now), 0);
	cr_assert_eq(side_ctr(B, CM_CTR_DUP_REQ), 1);
	cr_assert_eq(side_ctr(B, CM_CTR_REJ_TX_STALE), 1);
	cr_assert_eq(side_count(B, CM_EV_REQ_RECEIVED), 1);
	/* after the TimeWait the slot and its comm ID are free */
	wire_run_for(w, 10 * SEC);
	cr_assert_eq(cm_agent_conns_in_use(B->a), 0);
	cr_assert_eq(side_count(B, CM_EV_TIMEWAIT_EXIT), 0, "an orphan exits TimeWait silently");
	cr_assert_eq(side_ctr(B, CM_CTR_TIMEWAIT_EXIT), 1);
}

Test(cm_agent, timewait_keeps_the_comm_id_and_answers_a_late_dreq)
{
	struct cm_req_param p = wire_req_param(w, 0, SID_A, 0x18);
	struct cm_conn_info ia;
	struct cm_msg dreq;
	cm_conn_t a, b;

	/* a long path (ACK timeout 23: B's TimeWait is 4.096us * 2^23 = 34 s)
	 * so A's DREQ retry comes while B is in TimeWait */
	p.req.primary.local_ack_timeout = 23;
	cr_assert_eq(cm_send_req(A->a, 1, &p, w->now, &a), 0);
	wire_run_for(w, 1000);
	cr_assert_eq(side_state(A, a), CM_STATE_ESTABLISHED);
	b = side_event(B, CM_EV_RTU_RECEIVED, 0)->conn;

	cr_assert_eq(cm_conn_query(A->a, a, &ia), 0);
	/* B's DREP is lost: A resends its DREQ after B's TimeWait began */
	wire_rule(w, (struct wire_rule){.from = 1, .attr = CM_ATTR_DREP, .count = 1, .action = WIRE_DROP});
	cr_assert_eq(cm_send_dreq(A->a, a, NULL, 0, w->now), 0);
	wire_run_for(w, 1000);
	cr_assert_eq(side_state(B, b), CM_STATE_TIMEWAIT);
	cr_assert_eq(side_state(A, a), CM_STATE_DREQ_SENT);
	wire_run_for(w, 2 * cm_iba_time_us(16) + cm_iba_time_us(20) + 1000);
	cr_assert_eq(side_ctr(A, CM_CTR_RETRY_DREQ), 1);
	cr_assert_eq(side_ctr(B, CM_CTR_DUP_DREQ), 1);
	cr_assert_eq(side_count(A, CM_EV_DREP_RECEIVED), 1);
	cr_assert_eq(side_state(A, a), CM_STATE_TIMEWAIT);
	wire_sent_msg(w, 0, CM_ATTR_DREQ, 1, &dreq);
	cr_assert_eq(dreq.dreq.local_comm_id, ia.local_comm_id);
	cr_assert_eq(side_state(B, b), CM_STATE_TIMEWAIT);
	/* no new connection can take the comm ID while it is held */
	for (int i = 0; i < 40; i++) {
		cm_conn_t x = wire_connect(w, 0, SID_A + 7, (uint32_t)(0x1000 + i));
		struct cm_conn_info ix;

		cr_assert_eq(cm_conn_query(A->a, x, &ix), 0);
		cr_assert_neq(ix.local_comm_id, ia.local_comm_id);
	}
}

Test(cm_agent, dreq_after_timewait_is_still_answered)
{
	cm_conn_t b, a = establish(0x18, &b);

	/* B's DREP lost; B's TimeWait (4.096us * 2^19 = 2.1 s) ends before
	 * A's DREQ goes again (4.8 s): the idle connection answers it */
	wire_rule(w, (struct wire_rule){.from = 1, .attr = CM_ATTR_DREP, .count = 1, .action = WIRE_DROP});
	cr_assert_eq(cm_send_dreq(A->a, a, NULL, 0, w->now), 0);
	wire_run_for(w, 2 * cm_iba_time_us(16) + cm_iba_time_us(20) + 1000);
	cr_assert_eq(side_count(B, CM_EV_TIMEWAIT_EXIT), 1);
	cr_assert_eq(side_state(B, b), CM_STATE_IDLE);
	cr_assert_eq(side_count(A, CM_EV_DREP_RECEIVED), 1);
	cr_assert_eq(side_ctr(A, CM_CTR_RETRY_DREQ), 1);
	cr_assert_eq(side_count(B, CM_EV_DREQ_RECEIVED), 1);
}

Test(cm_agent, dreq_and_drep_retries_then_dreq_timeout)
{
	cm_conn_t b, a = establish(0x18, &b);

	wire_rule(w, (struct wire_rule){.from = 0, .attr = CM_ATTR_DREQ, .count = -1, .action = WIRE_DROP});
	cr_assert_eq(cm_send_dreq(A->a, a, NULL, 0, w->now), 0);
	wire_run_for(w, 200 * SEC);
	cr_assert_eq(wire_sent(w, 0, CM_ATTR_DREQ, true), 16, "the DREQ and the REQ's 15 retries");
	cr_assert_eq(side_count(A, CM_EV_DREQ_TIMEOUT), 1);
	cr_assert_eq(side_count(A, CM_EV_TIMEWAIT_EXIT), 1);
	cr_assert_eq(side_state(A, a), CM_STATE_IDLE);
	cr_assert_eq(side_state(B, b), CM_STATE_ESTABLISHED, "B never heard of it");
}

Test(cm_agent, sidr_resolves_a_qpn_and_qkey)
{
	struct cm_sidr_req_param p = {.path = wire_path(w, 0), .service_id = SID_A, .pkey = 0xffff,
				      .timeout = 20, .max_cm_retries = 3, .private_data_len = 4,
				      .private_data = (const uint8_t *)"udp!"};
	cm_conn_t a;
	const struct ev_rec *e;

	B->auto_destroy = true;
	cr_assert_eq(cm_send_sidr_req(A->a, 9, &p, w->now, &a), 0);
	cr_assert_eq(side_state(A, a), CM_STATE_SIDR_REQ_SENT);
	wire_run_for(w, 1000);
	e = side_event(B, CM_EV_SIDR_REQ_RECEIVED, 0);
	cr_assert_not_null(e);
	cr_assert_arr_eq(e->msg.sidr_req.private_data, "udp!", 4);
	e = side_event(A, CM_EV_SIDR_REP_RECEIVED, 0);
	cr_assert_not_null(e);
	cr_assert_eq(e->cookie, 9);
	cr_assert_eq(e->msg.sidr_rep.status, CM_SIDR_SUCCESS);
	cr_assert_eq(e->msg.sidr_rep.qpn, 0x123);
	cr_assert_eq(e->msg.sidr_rep.qkey, 0x11111111);
	cr_assert_eq(e->msg.sidr_rep.service_id, SID_A);
	cr_assert_eq(side_state(A, a), CM_STATE_IDLE);
	cr_assert_eq(cm_agent_conns_in_use(B->a), 0);
}

Test(cm_agent, sidr_lost_retried_unknown_service_and_timeout)
{
	struct cm_sidr_req_param p = {.path = wire_path(w, 0), .service_id = SID_A, .timeout = 20,
				      .max_cm_retries = 2};
	cm_conn_t a1, a2, a3;

	B->auto_destroy = true;
	/* the first SIDR_REQ is lost, the retry is answered */
	wire_rule(w, (struct wire_rule){.from = 0, .attr = CM_ATTR_SIDR_REQ, .count = 1, .action = WIRE_DROP});
	cr_assert_eq(cm_send_sidr_req(A->a, 1, &p, w->now, &a1), 0);
	wire_run_for(w, 10 * SEC);
	cr_assert_eq(side_ctr(A, CM_CTR_RETRY_SIDR_REQ), 1);
	cr_assert_eq(side_count(A, CM_EV_SIDR_REP_RECEIVED), 1);
	/* nobody listens: status "unsupported" */
	p.service_id = SID_A + 5;
	cr_assert_eq(cm_send_sidr_req(A->a, 2, &p, w->now, &a2), 0);
	wire_run_for(w, 1000);
	cr_assert_eq(side_count(A, CM_EV_SIDR_REP_RECEIVED), 2);
	cr_assert_eq(side_event(A, CM_EV_SIDR_REP_RECEIVED, 1)->msg.sidr_rep.status, CM_SIDR_UNSUPPORTED);
	cr_assert_eq(side_ctr(B, CM_CTR_SIDR_NO_LISTENER), 1);
	/* every SIDR_REQ lost: a timeout after 1 + 2 sends */
	wire_rule(w, (struct wire_rule){.from = 0, .attr = CM_ATTR_SIDR_REQ, .count = -1, .action = WIRE_DROP});
	cr_assert_eq(cm_send_sidr_req(A->a, 3, &p, w->now, &a3), 0);
	wire_run_for(w, 60 * SEC);
	cr_assert_eq(side_count(A, CM_EV_SIDR_REQ_TIMEOUT), 1);
	cr_assert_eq(side_event(A, CM_EV_SIDR_REQ_TIMEOUT, 0)->conn, a3);
	cr_assert_eq(side_ctr(A, CM_CTR_TIMEOUT_SIDR_REQ), 1);
	(void)a1;
	(void)a2;
}

Test(cm_agent, duplicated_wire_changes_nothing_but_counters)
{
	cm_conn_t b, a;

	wire_rule(w, (struct wire_rule){.from = -1, .count = -1, .action = WIRE_DUP});
	a = establish(0x18, &b);
	cr_assert_eq(side_count(B, CM_EV_REQ_RECEIVED), 1);
	cr_assert_eq(side_count(A, CM_EV_REP_RECEIVED), 1);
	cr_assert_eq(side_count(B, CM_EV_RTU_RECEIVED), 1);
	cr_assert_gt(side_ctr(B, CM_CTR_DUP_REQ), 0);
	cr_assert_gt(side_ctr(A, CM_CTR_DUP_REP), 0);
	cr_assert_gt(side_ctr(B, CM_CTR_DUP_RTU), 0);
	cr_assert_eq(cm_send_dreq(A->a, a, NULL, 0, w->now), 0);
	wire_run_for(w, 10 * SEC);
	cr_assert_eq(side_count(B, CM_EV_DREQ_RECEIVED), 1);
	cr_assert_eq(side_count(A, CM_EV_DREP_RECEIVED), 1);
	cr_assert_eq(side_count(A, CM_EV_TIMEWAIT_EXIT), 1);
	cr_assert_eq(side_count(B, CM_EV_TIMEWAIT_EXIT), 1);
}

Test(cm_agent, dreq_overtaking_the_rtu)
{
	cm_conn_t a, b;

	/* the RTU is held 50 ms; A disconnects meanwhile */
	wire_rule(w, (struct wire_rule){.from = 0, .attr = CM_ATTR_RTU, .count = 1, .action = WIRE_DELAY,
					 .delay_us = 50000});
	a = wire_connect(w, 0, SID_A, 0x18);
	wire_run_for(w, 1000);
	b = side_event(B, CM_EV_REQ_RECEIVED, 0)->conn;
	cr_assert_eq(side_state(A, a), CM_STATE_ESTABLISHED);
	cr_assert_eq(side_state(B, b), CM_STATE_REP_SENT);
	cr_assert_eq(cm_send_dreq(A->a, a, NULL, 0, w->now), 0);
	wire_run_for(w, 1000);
	/* B takes the DREQ in REP_SENT (cm.c does) and answers */
	cr_assert_eq(side_count(B, CM_EV_DREQ_RECEIVED), 1);
	cr_assert_eq(side_state(B, b), CM_STATE_TIMEWAIT);
	cr_assert_eq(side_count(A, CM_EV_DREP_RECEIVED), 1);
	wire_run_for(w, 100000);
	cr_assert_eq(side_ctr(B, CM_CTR_DUP_RTU), 1, "the late RTU is dropped");
	cr_assert_eq(side_count(B, CM_EV_RTU_RECEIVED), 0);
	cr_assert_eq(side_ctr(B, CM_CTR_RETRY_REP), 0);
}

Test(cm_agent, passive_establish_without_rtu)
{
	cm_conn_t a, b;

	wire_rule(w, (struct wire_rule){.from = 0, .attr = CM_ATTR_RTU, .count = -1, .action = WIRE_DROP});
	a = wire_connect(w, 0, SID_A, 0x18);
	wire_run_for(w, 1000);
	b = side_event(B, CM_EV_REQ_RECEIVED, 0)->conn;
	cr_assert_eq(side_state(B, b), CM_STATE_REP_SENT);
	/* data arrived on the QP: "communication established" */
	cr_assert_eq(cm_establish(B->a, b, w->now), 0);
	cr_assert_eq(side_state(B, b), CM_STATE_ESTABLISHED);
	wire_run_for(w, 60 * SEC);
	cr_assert_eq(side_ctr(B, CM_CTR_RETRY_REP), 0);
	cr_assert_eq(cm_establish(B->a, b, w->now), -EINVAL);
	(void)a;
}

Test(cm_agent, unanswered_req_released_when_the_peer_gives_up)
{
	struct cm_req_param p = wire_req_param(w, 0, SID_A, 0x18);
	cm_conn_t a, b;

	p.req.max_cm_retries = 1;
	B->auto_rep = false;
	B->auto_destroy = true;
	A->auto_destroy = true;
	cr_assert_eq(cm_send_req(A->a, 1, &p, w->now, &a), 0);
	wire_run_for(w, 60 * SEC);
	cr_assert_eq(side_count(A, CM_EV_REQ_TIMEOUT), 1);
	cr_assert_eq(side_count(B, CM_EV_PEER_TIMEOUT), 1);
	b = side_event(B, CM_EV_REQ_RECEIVED, 0)->conn;
	cr_assert_eq(side_event(B, CM_EV_PEER_TIMEOUT, 0)->conn, b);
	cr_assert_eq(cm_agent_conns_in_use(A->a), 0);
	cr_assert_eq(cm_agent_conns_in_use(B->a), 0);
	cr_assert_eq(side_ctr(B, CM_CTR_PEER_ABANDONED), 1);
	/* released only after the peer's last retry could have come */
	cr_assert_geq(side_event(B, CM_EV_PEER_TIMEOUT, 0)->at, side_event(A, CM_EV_REQ_TIMEOUT, 0)->at - 1000);
}

Test(cm_agent, a_req_claiming_hours_of_retries_holds_its_slot_ten_minutes)
{
	struct cm_path from = {.pkey = 0xffff, .remote_qpn = 1};
	uint8_t mad[CM_MAD_SIZE];
	struct cm_msg m;
	uint64_t t0 = w->now;

	B->auto_rep = false;
	memcpy(from.remote_gid, A->gid, 16);
	cm_msg_init(&m, CM_ATTR_REQ, 1);
	m.req.service_id = SID_A;
	m.req.local_comm_id = 0x1234;
	m.req.path_mtu = 3;
	m.req.max_cm_retries = 15;
	m.req.remote_cm_response_timeout = 31;
	m.req.local_cm_response_timeout = 31;
	m.req.primary.local_ack_timeout = 31;
	cr_assert_eq(cm_mad_build(&m, mad), 0);
	cr_assert_eq(cm_agent_rx(B->a, &from, mad, CM_MAD_SIZE, w->now), 0);
	cr_assert_eq(cm_agent_next_deadline(B->a), t0 + 600 * SEC);
	wire_run_for(w, 601 * SEC);
	cr_assert_eq(side_count(B, CM_EV_PEER_TIMEOUT), 1);
	cr_assert_eq(side_event(B, CM_EV_PEER_TIMEOUT, 0)->at, t0 + 600 * SEC);
}

/*
 * A consumer that disconnects and destroys at once (rping's client:
 * rdma_disconnect, then rdma_destroy_id without waiting for DISCONNECTED)
 * leaves a DREQ whose loss only a retry repairs. cm.c cancels the DREQ on
 * destroy and enters TimeWait, so the peer, waiting for DISCONNECTED, never
 * learns of it (session 16's soak: an rping server stalled for its 60 s
 * bound after its client's DREQ was lost on the 5 % lossy link). Here the
 * orphaned connection keeps the DREQ's retries, silently, until the DREP.
 */
Test(cm_agent, a_destroyed_connections_lost_dreq_is_retried_until_the_peer_answers)
{
	cm_conn_t b, a = establish(0x18, &b);

	wire_rule(w, (struct wire_rule){.from = 0, .attr = CM_ATTR_DREQ, .count = 2, .action = WIRE_DROP});
	cr_assert_eq(cm_send_dreq(A->a, a, NULL, 0, w->now), 0);
	cr_assert_eq(cm_conn_destroy(A->a, a, w->now), 0);
	wire_run_for(w, 60 * SEC);
	cr_assert_eq(wire_sent(w, 0, CM_ATTR_DREQ, true), 3, "two lost, the third arrives");
	cr_assert_eq(side_count(B, CM_EV_DREQ_RECEIVED), 1, "the peer learns of the disconnect");
	cr_assert_eq(side_ctr(A, CM_CTR_RETRY_DREQ), 2);
	cr_assert_eq(side_count(A, CM_EV_DREP_RECEIVED), 0, "an orphan delivers nothing");
	cr_assert_eq(side_count(A, CM_EV_TIMEWAIT_EXIT), 0);
	cr_assert_eq(cm_agent_conns_in_use(A->a), 0, "TimeWait ended, the slot is free");

	/* destroyed while established, its one DREQ lost: retried as well */
	a = establish(0x20, &b);
	wire_rule(w, (struct wire_rule){.from = 0, .attr = CM_ATTR_DREQ, .count = 1, .action = WIRE_DROP});
	cr_assert_eq(cm_conn_destroy(A->a, a, w->now), 0);
	wire_run_for(w, 60 * SEC);
	cr_assert_eq(side_count(B, CM_EV_DREQ_RECEIVED), 2);
	cr_assert_eq(side_ctr(A, CM_CTR_RETRY_DREQ), 3);
	cr_assert_eq(cm_agent_conns_in_use(A->a), 0);
}

/*
 * rxe-interop's loss phase (ib_send_bw -R, session 19): the application
 * disconnects and exits at once, so its connection is an orphan in
 * DREQ_SENT; its DREQ is lost and the peer's own DREQ crosses it. No
 * consumer is left to answer that DREQ: the orphan answers it with the DREP
 * at once (cm.c's destroyed cm_id does so from TimeWait), else the peer
 * retries its DREQ unanswered until it times out, and its application waits
 * for DISCONNECTED that long.
 */
Test(cm_agent, an_orphan_answers_a_crossing_dreq)
{
	cm_conn_t b, a = establish(0x18, &b);

	wire_rule(w, (struct wire_rule){.from = 0, .attr = CM_ATTR_DREQ, .count = 1, .action = WIRE_DROP});
	cr_assert_eq(cm_send_dreq(A->a, a, NULL, 0, w->now), 0);
	cr_assert_eq(cm_conn_destroy(A->a, a, w->now), 0);
	B->auto_drep = false; /* B's consumer waits for DISCONNECTED, as cma does */
	cr_assert_eq(cm_send_dreq(B->a, b, NULL, 0, w->now), 0);
	wire_run_for(w, 1000);
	cr_assert_eq(wire_sent(w, 0, CM_ATTR_DREP, true), 1, "the orphan answers");
	cr_assert_eq(side_count(B, CM_EV_DREP_RECEIVED), 1, "B is disconnected at once");
	cr_assert_eq(side_ctr(B, CM_CTR_RETRY_DREQ), 0);
	cr_assert_eq(side_count(A, CM_EV_DREQ_RECEIVED), 0, "an orphan delivers nothing");
	/* the orphan's own DREQ, retried, finds B in TimeWait: a DREP again */
	wire_run_for(w, 60 * SEC);
	cr_assert_eq(side_ctr(B, CM_CTR_RETRY_DREQ), 0);
	cr_assert_eq(cm_agent_conns_in_use(A->a), 0, "TimeWait ended, the slot is free");
	cr_assert_eq(side_count(B, CM_EV_TIMEWAIT_EXIT), 1);
}

Test(cm_agent, destroy_in_each_state_sends_what_the_kernel_sends)
{
	cm_conn_t b, a = establish(0x18, &b);

	/* established: one DREQ, held silently until its DREP (retried if
	 * lost: a_destroyed_connections_lost_dreq_is_retried_until_the_peer_answers),
	 * then TimeWait */
	cr_assert_eq(cm_conn_destroy(A->a, a, w->now), 0);
	cr_assert_eq(wire_sent(w, 0, CM_ATTR_DREQ, true), 1);
	cr_assert_eq(cm_agent_conns_in_use(A->a), 1);
	wire_run_for(w, 1000);
	cr_assert_eq(side_count(B, CM_EV_DREQ_RECEIVED), 1);
	cr_assert_eq(side_ctr(A, CM_CTR_DUP_DREP), 0, "the DREP answers the orphan's DREQ");
	cr_assert_eq(side_count(A, CM_EV_DREP_RECEIVED), 0, "an orphan delivers nothing");
	wire_run_for(w, 60 * SEC);
	cr_assert_eq(side_ctr(A, CM_CTR_RETRY_DREQ), 0);
	cr_assert_eq(cm_agent_conns_in_use(A->a), 0);
	/* a second destroy of the same handle is refused */
	cr_assert_eq(cm_conn_destroy(A->a, a, w->now), -ENOENT);

	/* passive REQ_RCVD: REJ consumer defined */
	B->auto_rep = false;
	a = wire_connect(w, 0, SID_A, 0x30);
	wire_run_for(w, 1000);
	b = B->last_req_conn;
	cr_assert_eq(cm_conn_destroy(B->a, b, w->now), 0);
	wire_run_for(w, 1000);
	cr_assert_eq(side_event(A, CM_EV_REJ_RECEIVED, 0)->msg.rej.reason, CM_REJ_CONSUMER_DEFINED);
	cr_assert_eq(side_state(A, a), CM_STATE_IDLE);
}

Test(cm_agent, messages_for_no_connection)
{
	struct cm_path from = {.pkey = 0xffff, .remote_qpn = 1};
	static const uint16_t attrs[] = {CM_ATTR_REP, CM_ATTR_RTU, CM_ATTR_DREP, CM_ATTR_MRA, CM_ATTR_REJ,
					 CM_ATTR_SIDR_REP};
	uint8_t mad[CM_MAD_SIZE];
	struct cm_msg m, drep;

	memcpy(from.remote_gid, A->gid, 16);
	memcpy(from.local_gid, B->gid, 16);
	for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++) {
		cm_msg_init(&m, attrs[i], 0x1234);
		if (attrs[i] == CM_ATTR_SIDR_REP) {
			m.sidr_rep.request_id = 0xdead;
		} else {
			m.rtu.local_comm_id = 0xdead; /* the first two words of each */
			m.rtu.remote_comm_id = 0xbeef;
		}
		cr_assert_eq(cm_mad_build(&m, mad), 0);
		cr_assert_eq(cm_agent_rx(B->a, &from, mad, CM_MAD_SIZE, w->now), 0);
	}
	cr_assert_eq(side_ctr(B, CM_CTR_NO_CONN), 5);
	cr_assert_eq(side_ctr(B, CM_CTR_DUP_SIDR_REP), 1);
	cr_assert_eq(w->nlog, 0, "nothing answered");
	/* a DREQ for no connection is answered with a DREP (cm.c does) */
	cm_msg_init(&m, CM_ATTR_DREQ, 0x777);
	m.dreq.local_comm_id = 0xdead;
	m.dreq.remote_comm_id = 0xbeef;
	cr_assert_eq(cm_mad_build(&m, mad), 0);
	cr_assert_eq(cm_agent_rx(B->a, &from, mad, CM_MAD_SIZE, w->now), 0);
	cr_assert_eq(w->nlog, 1);
	wire_sent_msg(w, 1, CM_ATTR_DREP, 0, &drep);
	cr_assert_eq(drep.hdr.tid, 0x777);
	cr_assert_eq(drep.drep.local_comm_id, 0xbeef);
	cr_assert_eq(drep.drep.remote_comm_id, 0xdead);
	cr_assert_eq(side_ctr(B, CM_CTR_NO_CONN), 6);
	cr_assert_eq(cm_agent_conns_in_use(B->a), 0);
}

Test(cm_agent, malformed_mads_are_counted_by_reason_and_never_answered)
{
	struct cm_path from = {.pkey = 0xffff, .remote_qpn = 1};
	uint8_t mad[CM_MAD_SIZE];
	struct cm_msg m;

	memcpy(from.remote_gid, A->gid, 16);
	cm_msg_init(&m, CM_ATTR_REQ, 1);
	m.req.path_mtu = 3;
	m.req.service_id = SID_A;
	cr_assert_eq(cm_mad_build(&m, mad), 0);
	for (size_t len = 0; len < CM_MAD_SIZE; len++)
		cr_assert_eq(cm_agent_rx(B->a, &from, mad, len, w->now), CM_MALFORMED_TRUNCATED);
	cr_assert_eq(side_ctr(B, CM_CTR_MALFORMED_TRUNCATED), CM_MAD_SIZE);
	mad[2] = 1;
	cr_assert_eq(cm_agent_rx(B->a, &from, mad, CM_MAD_SIZE, w->now), CM_MALFORMED_CLASS_VERSION);
	mad[2] = 2;
	mad[17] = 0x19;
	cr_assert_eq(cm_agent_rx(B->a, &from, mad, CM_MAD_SIZE, w->now), CM_MALFORMED_ATTR_UNSUPPORTED);
	mad[17] = 0x10;
	mad[24 + 50] = 0x70;
	cr_assert_eq(cm_agent_rx(B->a, &from, mad, CM_MAD_SIZE, w->now), CM_MALFORMED_FIELD);
	cr_assert_eq(side_ctr(B, CM_CTR_MALFORMED_CLASS_VERSION), 1);
	cr_assert_eq(side_ctr(B, CM_CTR_MALFORMED_ATTR_UNSUPPORTED), 1);
	cr_assert_eq(side_ctr(B, CM_CTR_MALFORMED_FIELD), 1);
	cr_assert_eq(side_ctr(B, CM_CTR_RX_REQ), 0);
	cr_assert_eq(w->nlog, 0);
	cr_assert_eq(cm_agent_conns_in_use(B->a), 0);
	cr_assert_eq(cm_agent_rx(B->a, NULL, mad, CM_MAD_SIZE, w->now), -EINVAL);
}

Test(cm_agent, class_port_info_get_is_answered)
{
	struct cm_path from = {.pkey = 0xffff, .remote_qpn = 1};
	uint8_t mad[CM_MAD_SIZE];
	struct cm_msg m, r;

	memcpy(from.remote_gid, A->gid, 16);
	cm_msg_init(&m, CM_ATTR_CLASS_PORT_INFO, 0xabc);
	m.hdr.method = CM_MAD_METHOD_GET;
	cr_assert_eq(cm_mad_build(&m, mad), 0);
	cr_assert_eq(cm_agent_rx(B->a, &from, mad, CM_MAD_SIZE, w->now), 0);
	wire_sent_msg(w, 1, CM_ATTR_CLASS_PORT_INFO, 0, &r);
	cr_assert_eq(r.hdr.method, CM_MAD_METHOD_GET_RESP);
	cr_assert_eq(r.hdr.tid, 0xabc);
	cr_assert_eq(r.cpi.class_version, 2);
	cr_assert_eq(r.cpi.resp_time_value, 20);
	/* a GetResp is not answered */
	cr_assert_eq(cm_agent_rx(A->a, &from, w->log[0].mad, CM_MAD_SIZE, w->now), 0);
	cr_assert_eq(w->nlog, 1);
	cr_assert_eq(side_ctr(B, CM_CTR_RX_CPI), 1);
}

Test(cm_agent, api_refusals)
{
	struct cm_req_param p = wire_req_param(w, 0, SID_A, 0x18);
	struct cm_rep rep = {0};
	cm_conn_t c;
	struct cm_agent_config cfg = {.max_conns = (1u << 24) + 1};
	struct cm_ops ops = {0};

	cr_assert_eq(cm_listen(B->a, SID_A, 0, 1), -EBUSY);
	for (int i = 1; i < 8; i++)
		cr_assert_eq(cm_listen(B->a, SID_A + (uint64_t)i, 0, 1), 0);
	cr_assert_eq(cm_listen(B->a, SID_A + 100, 0, 1), -ENOSPC);
	cr_assert_eq(cm_unlisten(B->a, SID_A + 100), -ENOENT);
	cr_assert_eq(cm_unlisten(B->a, SID_A + 7), 0);
	cr_assert_eq(cm_listen(B->a, SID_A + 100, 0, 1), 0);

	cr_assert_eq(cm_send_rep(A->a, 12345, &rep, w->now), -ENOENT);
	cr_assert_eq(cm_send_rtu(A->a, CM_CONN_INVALID, NULL, 0, w->now), -ENOENT);
	p.req.private_data_len = CM_REQ_PRIVATE_DATA_SIZE + 1;
	cr_assert_eq(cm_send_req(A->a, 1, &p, w->now, &c), -EINVAL);
	p.req.private_data_len = 0;
	p.req.max_cm_retries = 16;
	cr_assert_eq(cm_send_req(A->a, 1, &p, w->now, &c), -EINVAL);
	p.req.max_cm_retries = 15;
	cr_assert_eq(cm_send_req(A->a, 1, &p, w->now, &c), 0);
	/* wrong states */
	cr_assert_eq(cm_send_rep(A->a, c, &rep, w->now), -EINVAL);
	cr_assert_eq(cm_send_rtu(A->a, c, NULL, 0, w->now), -EINVAL);
	cr_assert_eq(cm_send_dreq(A->a, c, NULL, 0, w->now), -EINVAL);
	cr_assert_eq(cm_send_drep(A->a, c, NULL, 0, w->now), -EINVAL);
	cr_assert_eq(cm_send_mra(A->a, c, 10, 0, NULL, 0, w->now), -EINVAL);
	cr_assert_eq(cm_send_sidr_rep(A->a, c, &(struct cm_sidr_rep){0}, w->now), -EINVAL);
	cr_assert_eq(cm_send_rej(A->a, c, 28, NULL, CM_REJ_ARI_SIZE + 1, NULL, 0, w->now), -EINVAL);
	cr_assert_eq(cm_conn_set_cookie(A->a, c, 99), 0);
	cr_assert_eq(cm_conn_destroy(A->a, c, w->now), 0);
	cr_assert_eq(cm_conn_set_cookie(A->a, c, 99), -ENOENT, "a stale handle");
	/* a new connection in the same slot has another handle */
	cr_assert_eq(cm_send_req(A->a, 1, &p, w->now, &c), 0);
	cr_assert_eq(cm_conn_destroy(A->a, c ^ (UINT64_C(1) << 32), w->now), -ENOENT);

	cr_assert_null(cm_agent_create(&cfg, &ops));
	cr_assert_eq(errno, EINVAL);
	cfg.max_conns = 4;
	cr_assert_null(cm_agent_create(&cfg, &ops), "send and event are required");
	cm_agent_destroy(NULL);
}

Test(cm_agent, comm_ids_are_random_and_tids_follow_them)
{
	uint32_t ids[64];

	for (int i = 0; i < 64; i++) {
		struct cm_conn_info info;
		cm_conn_t c = wire_connect(w, 0, SID_A + 9, (uint32_t)(0x40 + i));

		cr_assert_eq(cm_conn_query(A->a, c, &info), 0);
		ids[i] = info.local_comm_id;
		cr_assert_neq(ids[i], 0);
		for (int j = 0; j < i; j++)
			cr_assert_neq(ids[i], ids[j]);
	}
	/* not a counter: consecutive IDs differ in many bits */
	unsigned int small_steps = 0;

	for (int i = 1; i < 64; i++)
		small_steps += (ids[i] - ids[i - 1]) < 256u || (ids[i - 1] - ids[i]) < 256u;
	cr_assert_lt(small_steps, 3);
}

Test(cm_agent, soak_under_loss_every_connection_comes_and_goes)
{
	const int n = 40;
	cm_conn_t conns[40];

	/* 30% of every message lost both ways */
	wire_rule(w, (struct wire_rule){.from = -1, .count = -1, .action = WIRE_DROP, .percent = 30});
	A->auto_destroy = B->auto_destroy = true;
	for (int i = 0; i < n; i++)
		conns[i] = wire_connect(w, 0, SID_A, (uint32_t)(0x1000 + i));
	wire_run_for(w, 120 * SEC);
	for (int i = 0; i < n; i++) {
		struct cm_conn_info info;

		if (cm_conn_query(A->a, conns[i], &info) == 0 && info.state == CM_STATE_ESTABLISHED)
			cr_assert_eq(cm_send_dreq(A->a, conns[i], NULL, 0, w->now), 0);
	}
	wire_run_for(w, 600 * SEC);
	/* every connection established once: REP timeouts can only come if
	 * 16 sends of a message were all lost */
	cr_assert_eq(side_ctr(A, CM_CTR_ESTABLISHED), (uint64_t)n);
	cr_assert_eq(side_count(B, CM_EV_REQ_RECEIVED), (unsigned int)n);
	cr_assert_gt(side_ctr(A, CM_CTR_RETRY_REQ), 0);
	cr_assert_gt(side_ctr(A, CM_CTR_RETRY_DREQ), 0);
	/* and every slot came back */
	cr_assert_eq(cm_agent_conns_in_use(A->a), 0);
	cr_assert_eq(cm_agent_conns_in_use(B->a), 0);
	cr_assert_eq(side_count(A, CM_EV_TIMEWAIT_EXIT), (unsigned int)n);
	cr_assert_eq(cm_agent_next_deadline(A->a), UINT64_MAX);
}
