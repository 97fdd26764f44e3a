/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * send_lat: SEND/RECV ping-pong latency (ib_send_lat) over RC, UC or UD.
 * A side answers message k once its receive completion arrives; the receive
 * is re-posted before the answer goes out. --verify checks every received
 * message against the pattern of its iteration.
 */
#include "perftest.h"

static int send_lat_post(struct pt_side *s)
{
	struct pt_qp_counts *c = &s->pub.qp[0];
	uint8_t *msg = pt_tx_slot(s, 0, c->posted);
	struct ibv_sge sge = {
		.addr = (uint64_t)(uintptr_t)msg,
		.length = (uint32_t)s->size,
		.lkey = s->mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = pt_wr_id(0, c->posted),
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	if (s->p->conn == PT_UD) {
		wr.wr.ud.ah = s->ah[0];
		wr.wr.ud.remote_qpn = s->remote[0].qpn;
		wr.wr.ud.remote_qkey = PT_QKEY;
	}
	if (s->p->verify)
		pt_pattern_fill(msg, s->size, c->posted, 0);
	if (s->size <= (uint64_t)s->inline_size)
		wr.send_flags |= IBV_SEND_INLINE;
	if (s->tposted && s->n_posted < s->ts_cap)
		s->tposted[s->n_posted] = pt_now_ns();
	if (ibv_post_send(s->qp[0], &wr, &bad)) {
		fprintf(stderr, " Couldn't post send: iteration %lu\n", (unsigned long)c->posted);
		return -1;
	}
	s->n_posted++;
	c->posted++;
	return 0;
}

static enum pt_step send_lat_run(struct pt_side *s)
{
	const struct pt_qp_counts *c = &s->pub.qp[0];
	bool progress = false, time_up = false;
	int n = pt_poll_recv(s);

	if (n < 0)
		return PT_STEP_ERROR;
	progress = n > 0;
	if (s->role == PT_ROLE_CLIENT)
		time_up = pt_window_update(s, c->received);
	/* credits (single process): the peer's receive must be posted */
	if (pt_pingpong_may_send(s, time_up) && c->posted < s->peer->qp[0].recv_posted) {
		if (send_lat_post(s))
			return PT_STEP_ERROR;
		progress = true;
	}
	return pt_pingpong_finish(s, time_up, progress);
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
