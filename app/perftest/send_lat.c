/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * send_lat: SEND/RECV ping-pong latency (ib_send_lat) over RC, UC or UD.
 * A side answers message k once its receive completion arrives; the receive
 * is re-posted before the answer goes out. --verify checks every received
 * message against the pattern of its iteration.
 */
#include "perftest.h"

static enum pt_step send_lat_run(struct pt_side *s)
{
	const struct pt_qp_counts *c = &s->pub.qp[0];
	int n = pt_poll_recv(s);

	if (n < 0)
		return PT_STEP_ERROR;
	/* credits (single process): the peer's receive must be posted */
	return pt_pingpong_step(s, n > 0, c->posted < s->peer->qp[0].recv_posted, pt_send_prepare);
}

const struct pt_mode pt_mode_send_lat = {
	.name = "send_lat",
	.title = "Send",
	.verb = PT_SEND,
	.kind = PT_LAT,
	.conns = PT_CONN_BIT(PT_RC) | PT_CONN_BIT(PT_UC) | PT_CONN_BIT(PT_UD),
	.setup = pt_bw_post_receives,
	.run = send_lat_run,
	.report = pt_report_pingpong,
};
