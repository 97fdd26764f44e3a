/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * write_lat: RDMA WRITE ping-pong latency (ib_write_lat). Each side writes
 * message k into the other's rx slot; the receiver notices it by polling the
 * last byte, which carries pt_pingpong_mark(k), and answers with its own
 * message k. Half the round trip is the latency. --verify checks the rest of
 * every message against the pattern of k.
 */
#include <string.h>

#include "perftest.h"

static int write_lat_setup(struct pt_side *s)
{
	memset(pt_rx_slot(s, 0, 0), 0, s->layout.area);
	return 0;
}

/* Has the peer's message number `received` arrived? */
static bool write_lat_arrived(struct pt_side *s)
{
	struct pt_qp_counts *c = &s->pub.qp[0];
	const uint8_t *msg = pt_rx_slot(s, 0, c->received);

	/* The HCA writes this memory behind the compiler's back: load the mark
	 * with acquire so that the payload read after it is not older. */
	if (__atomic_load_n(msg + s->size - 1, __ATOMIC_ACQUIRE) != pt_pingpong_mark(c->received))
		return false;
	if (s->p->verify) {
		size_t bad = pt_pattern_check(msg, s->size - 1, c->received, 0);

		s->verify_checked++;
		if (bad != SIZE_MAX)
			pt_verify_fail(s, "WRITE ping-pong", 0, c->received, bad);
	}
	c->received++;
	return true;
}

static int write_lat_post(struct pt_side *s)
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
		.opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = {
			.remote_addr = pt_remote_slot(s, 0, c->posted),
			.rkey = s->remote[0].rkey,
		},
	}, *bad;

	if (s->p->verify)
		pt_pattern_fill(msg, s->size - 1, c->posted, 0);
	msg[s->size - 1] = pt_pingpong_mark(c->posted);
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

static enum pt_step write_lat_run(struct pt_side *s)
{
	struct pt_qp_counts *c = &s->pub.qp[0];
	bool client = s->role == PT_ROLE_CLIENT;
	bool progress = false, time_up = false;

	if (c->received < (client ? c->posted : s->iters) && write_lat_arrived(s))
		progress = true;
	if (client)
		time_up = pt_window_update(s, c->received);
	if (pt_pingpong_may_send(s, time_up)) {
		if (write_lat_post(s))
			return PT_STEP_ERROR;
		progress = true;
	}
	return pt_pingpong_finish(s, time_up, progress);
}

const struct pt_mode pt_mode_write_lat = {
	.name = "write_lat",
	.title = "RDMA_Write",
	.verb = PT_WRITE,
	.kind = PT_LAT,
	.conns = PT_CONN_BIT(PT_RC) | PT_CONN_BIT(PT_UC),
	.setup = write_lat_setup,
	.run = write_lat_run,
	.report = pt_report_pingpong,
};
