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

/* Message k: the pattern of k, then the mark the receiver polls for. */
static void write_lat_prepare(struct pt_side *s, uint32_t qp, uint64_t iter,
			      struct ibv_send_wr *wr, struct ibv_sge *sge)
{
	uint8_t *msg = (uint8_t *)(uintptr_t)sge->addr;

	wr->opcode = IBV_WR_RDMA_WRITE;
	wr->wr.rdma.remote_addr = pt_remote_slot(s, qp, iter);
	wr->wr.rdma.rkey = s->remote[qp].rkey;
	if (s->p->verify)
		pt_pattern_fill(msg, s->size - 1, iter, qp);
	msg[s->size - 1] = pt_pingpong_mark(iter);
}

static enum pt_step write_lat_run(struct pt_side *s)
{
	const struct pt_qp_counts *c = &s->pub.qp[0];
	bool expect = c->received < (s->role == PT_ROLE_CLIENT ? c->posted : s->iters);

	return pt_pingpong_step(s, expect && write_lat_arrived(s), true, write_lat_prepare);
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
