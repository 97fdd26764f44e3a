/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * atomic_bw: FETCH_AND_ADD / CMP_AND_SWAP rate (ib_atomic_bw), RC only.
 * Each QP works on one 8-byte target that the server sets to
 * pt_atomic_base(qp). Iteration i adds 1 (FETCH_AND_ADD) or swaps base+i for
 * base+i+1 (CMP_AND_SWAP), so with the QP's in-order execution the value
 * returned to iteration i is base+i and the final value is base+iterations;
 * --verify checks both (client and server side).
 */
#include <string.h>

#include "perftest.h"

static uint64_t *pt_atomic_target(const struct pt_side *s, uint32_t qp)
{
	return (uint64_t *)(void *)pt_rx_slot(s, qp, 0);
}

void pt_atomic_prepare(struct pt_side *s, uint32_t qp, uint64_t iter,
		       struct ibv_send_wr *wr, struct ibv_sge *sge)
{
	uint64_t base = pt_atomic_base(qp);

	sge->length = PT_SIZE_ATOMIC;
	wr->wr.atomic.remote_addr = s->remote[qp].vaddr;
	wr->wr.atomic.rkey = s->remote[qp].rkey;
	if (s->p->atomic_op == PT_FETCH_AND_ADD) {
		wr->opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		wr->wr.atomic.compare_add = 1;
	} else {
		wr->opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
		wr->wr.atomic.compare_add = base + iter;
		wr->wr.atomic.swap = base + iter + 1;
	}
	if (s->p->verify)
		memset((void *)(uintptr_t)sge->addr, 0, PT_SIZE_ATOMIC);
}

void pt_atomic_complete(struct pt_side *s, uint32_t qp, uint64_t first, uint64_t end)
{
	if (!s->p->verify)
		return;
	for (uint64_t it = first; it < end; it++) {
		uint64_t got;

		memcpy(&got, pt_tx_slot(s, qp, it), sizeof(got));
		s->verify_checked++;
		if (got != pt_atomic_base(qp) + it)
			pt_verify_fail(s, "atomic original value", qp, it, 0);
	}
}

int pt_atomic_setup(struct pt_side *s)
{
	if (s->role == PT_ROLE_SERVER)
		for (uint32_t q = 0; q < (uint32_t)s->num_qps; q++)
			*pt_atomic_target(s, q) = pt_atomic_base(q);
	return 0;
}

void pt_atomic_check(struct pt_side *s)
{
	for (uint32_t q = 0; q < (uint32_t)s->num_qps; q++) {
		uint64_t n = s->peer->qp[q].posted;

		s->verify_checked++;
		if (*pt_atomic_target(s, q) != pt_atomic_base(q) + n)
			pt_verify_fail(s, "atomic final value", q, n, 0);
	}
}

static enum pt_step atomic_bw_run(struct pt_side *s)
{
	if (s->role == PT_ROLE_SERVER)
		return pt_target_step(s, pt_atomic_check);
	return pt_bw_requester_step(s, pt_atomic_prepare, pt_atomic_complete);
}

const struct pt_mode pt_mode_atomic_bw = {
	.name = "atomic_bw",
	.title = "Atomic",
	.verb = PT_ATOMIC,
	.kind = PT_BW,
	.conns = PT_CONN_BIT(PT_RC),
	.setup = pt_atomic_setup,
	.run = atomic_bw_run,
};
