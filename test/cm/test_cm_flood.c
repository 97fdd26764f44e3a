/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/cm under a REQ flood: 10,000 distinct REQs (random comm IDs, QPNs and
 * CA GUIDs, as a hostile peer would send) at an agent of 256 connection
 * slots that already carries one established connection. Memory stays at
 * the slots given, every REQ is answered or left pending and counted, the
 * established connection carries on, and the pending ones are released
 * when their senders would have given up.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "cm_wire.h"
#include "splitmix64.h"

#define FLOOD 10000u
#define SLOTS 256u

Test(cm_flood, ten_thousand_reqs_at_256_slots)
{
	struct wire *w = wire_new(SLOTS);
	struct side *A = &w->s[0], *B = &w->s[1];
	struct cm_path from = {.pkey = 0xffff, .remote_qpn = 1};
	uint64_t seed = 2026, rej_before;
	cm_conn_t a, b;
	unsigned int pending;

	cr_assert_eq(cm_listen(B->a, SID_A, 0, 0xB0B), 0);
	a = wire_connect(w, 0, SID_A, 0x18);
	wire_run_for(w, 1000);
	cr_assert_eq(side_state(A, a), CM_STATE_ESTABLISHED);
	b = side_event(B, CM_EV_RTU_RECEIVED, 0)->conn;

	/* the flood: B's consumer takes its time (no REP), as a busy listener */
	B->auto_rep = false;
	B->auto_destroy = true;
	memcpy(from.remote_gid, A->gid, 16);
	memcpy(from.local_gid, B->gid, 16);
	rej_before = side_ctr(B, CM_CTR_TX_REJ);
	for (unsigned int i = 0; i < FLOOD; i++) {
		struct cm_msg m;
		uint8_t mad[CM_MAD_SIZE];

		cm_msg_init(&m, CM_ATTR_REQ, splitmix64_next(&seed));
		m.req.local_comm_id = (uint32_t)splitmix64_next(&seed);
		m.req.service_id = SID_A;
		m.req.local_ca_guid = splitmix64_next(&seed);
		m.req.local_qpn = (uint32_t)splitmix64_next(&seed) & 0xffffff;
		m.req.path_mtu = 3;
		m.req.max_cm_retries = 15;
		m.req.remote_cm_response_timeout = 20;
		m.req.local_cm_response_timeout = 20;
		m.req.primary.local_ack_timeout = 19;
		cr_assert_eq(cm_mad_build(&m, mad), 0);
		cr_assert_eq(cm_agent_rx(B->a, &from, mad, CM_MAD_SIZE, w->now), 0);
		cr_assert_leq(cm_agent_conns_in_use(B->a), SLOTS);
	}
	pending = side_count(B, CM_EV_REQ_RECEIVED) - 1;
	cr_assert_eq(pending, SLOTS - 1, "every free slot took one REQ");
	cr_assert_eq(cm_agent_conns_in_use(B->a), SLOTS);
	cr_assert_eq(side_ctr(B, CM_CTR_REJ_TX_NO_RES), FLOOD - pending);
	cr_assert_eq(side_ctr(B, CM_CTR_TX_REJ) - rej_before, FLOOD - pending, "each refused REQ got a REJ");
	cr_assert_eq(side_ctr(B, CM_CTR_RX_REQ), FLOOD + 1);
	/* the REJs went to the flood's source and say "no resources" */
	for (unsigned int i = w->nlog - 5; i < w->nlog; i++) {
		struct cm_msg r;

		cr_assert_eq(cm_mad_parse(w->log[i].mad, CM_MAD_SIZE, &r), 0);
		cr_assert_eq(r.hdr.attr_id, CM_ATTR_REJ);
		cr_assert_eq(r.rej.reason, CM_REJ_NO_RESOURCES);
	}
	w->nq = 0; /* the flood's answers go nowhere */

	/* the established connection carries on: B disconnects it cleanly */
	cr_assert_eq(side_state(B, b), CM_STATE_ESTABLISHED);
	cr_assert_eq(cm_send_dreq(B->a, b, NULL, 0, w->now), 0);
	wire_run_for(w, 1000);
	cr_assert_eq(side_count(A, CM_EV_DREQ_RECEIVED), 1);
	cr_assert_eq(side_count(B, CM_EV_DREP_RECEIVED), 1);

	/* the flood's senders never retry: their REQs are released when
	 * they would have given up (16 x (2 x 4.096us x 2^18 + 4.096us x 2^20)) */
	wire_run_for(w, 16 * (2 * cm_iba_time_us(18) + cm_iba_time_us(20)) + 1000);
	cr_assert_eq(side_count(B, CM_EV_PEER_TIMEOUT), SLOTS - 1);
	cr_assert_eq(side_ctr(B, CM_CTR_PEER_ABANDONED), SLOTS - 1);
	cr_assert_leq(cm_agent_conns_in_use(B->a), 1, "only B's TimeWait can remain");
	wire_run_for(w, 10000000);
	cr_assert_eq(side_count(B, CM_EV_TIMEWAIT_EXIT), 1);
	cr_assert_eq(cm_agent_conns_in_use(B->a), 0, "b went with its TimeWait (auto_destroy)");
	cr_assert_eq(cm_conn_destroy(B->a, b, w->now), -ENOENT);

	/* and B takes new connections again */
	B->auto_rep = true;
	B->auto_destroy = false;
	a = wire_connect(w, 0, SID_A, 0x99);
	wire_run_for(w, 1000);
	cr_assert_eq(side_state(A, a), CM_STATE_ESTABLISHED);
	wire_free(w);
}
