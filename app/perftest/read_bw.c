/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * read_bw: RDMA READ bandwidth (ib_read_bw), RC only. With --verify the
 * server fills slot k of its rx area with the pattern of k, and the client
 * checks every READ it completes (iteration i reads slot i % slots).
 */
#include <string.h>

#include "perftest.h"

#define PT_POISON 0xa5

void pt_read_prepare(struct pt_side *s, uint32_t qp, uint64_t iter,
		     struct ibv_send_wr *wr, struct ibv_sge *sge)
{
	wr->opcode = IBV_WR_RDMA_READ;
	wr->wr.rdma.remote_addr = pt_remote_slot(s, qp, iter);
	wr->wr.rdma.rkey = s->remote[qp].rkey;
	if (s->p->verify)       /* a READ that places nothing must not pass */
		memset((void *)(uintptr_t)sge->addr, PT_POISON, sge->length);
}

void pt_read_complete(struct pt_side *s, uint32_t qp, uint64_t first, uint64_t end)
{
	if (!s->p->verify)
		return;
	for (uint64_t it = first; it < end; it++) {
		uint64_t slot = it % s->layout.slots;
		size_t bad = pt_pattern_check(pt_tx_slot(s, qp, it), s->size, slot, qp);

		s->verify_checked++;
		if (bad != SIZE_MAX)
			pt_verify_fail(s, "READ data", qp, it, bad);
	}
}

int pt_read_setup(struct pt_side *s)
{
	if (s->role != PT_ROLE_SERVER || !s->p->verify)
		return 0;
	for (uint32_t q = 0; q < (uint32_t)s->num_qps; q++)
		for (uint64_t slot = 0; slot < s->layout.slots; slot++)
			pt_pattern_fill(pt_rx_slot(s, q, slot), s->size, slot, q);
	return 0;
}

static enum pt_step read_bw_run(struct pt_side *s)
{
	if (s->role == PT_ROLE_SERVER)
		return pt_target_step(s, NULL);
	return pt_bw_requester_step(s, pt_read_prepare, pt_read_complete);
}

const struct pt_mode pt_mode_read_bw = {
	.name = "read_bw",
	.title = "RDMA_Read",
	.verb = PT_READ,
	.kind = PT_BW,
	.conns = PT_CONN_BIT(PT_RC),
	.setup = pt_read_setup,
	.run = read_bw_run,
};
