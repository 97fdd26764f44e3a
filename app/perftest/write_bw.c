/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * write_bw: RDMA WRITE bandwidth (ib_write_bw). The client keeps the window
 * full; the server lends its rx area. With --verify every WRITE carries the
 * pattern of its iteration and the server checks, once the client is done,
 * that each slot holds the last iteration written to it (with enough memory,
 * every iteration has its own slot).
 */
#include <string.h>

#include "perftest.h"

static void write_bw_prepare(struct pt_side *s, uint32_t qp, uint64_t iter,
			     struct ibv_send_wr *wr, struct ibv_sge *sge)
{
	wr->opcode = IBV_WR_RDMA_WRITE;
	wr->wr.rdma.remote_addr = pt_remote_slot(s, qp, iter);
	wr->wr.rdma.rkey = s->remote[qp].rkey;
	if (s->p->verify)
		pt_pattern_fill((void *)(uintptr_t)sge->addr, sge->length, iter, qp);
}

static void write_bw_check(struct pt_side *s)
{
	uint64_t slots = s->layout.slots;

	for (uint32_t q = 0; q < (uint32_t)s->num_qps; q++) {
		uint64_t n = s->peer->qp[q].posted;

		for (uint64_t slot = 0; slot < slots && slot < n; slot++) {
			uint64_t last = slot + (n - 1 - slot) / slots * slots;
			size_t bad = pt_pattern_check(pt_rx_slot(s, q, slot), s->size, last, q);

			s->verify_checked++;
			if (bad != SIZE_MAX)
				pt_verify_fail(s, "WRITE target", q, last, bad);
		}
	}
}

static int write_bw_setup(struct pt_side *s)
{
	if (s->role == PT_ROLE_SERVER && s->p->verify)
		for (uint32_t q = 0; q < (uint32_t)s->num_qps; q++)
			memset(pt_rx_slot(s, q, 0), 0, s->layout.area);
	return 0;
}

static enum pt_step write_bw_run(struct pt_side *s)
{
	if (s->role == PT_ROLE_SERVER)
		return pt_target_step(s, write_bw_check);
	return pt_bw_requester_step(s, write_bw_prepare, NULL);
}

const struct pt_mode pt_mode_write_bw = {
	.name = "write_bw",
	.title = "RDMA_Write",
	.verb = PT_WRITE,
	.kind = PT_BW,
	.conns = PT_CONN_BIT(PT_RC) | PT_CONN_BIT(PT_UC),
	.setup = write_bw_setup,
	.run = write_bw_run,
};
