/* SPDX-License-Identifier: BSD-3-Clause */
/* Tag matching SRQs: the ibv_post_srq_ops ring, consumed by the owner lcore (xport.h). */
#include <errno.h>

#include "xport_internal.h"
#include "xport_tm.h"

/* A completion of the SRQ's CQ, with no QP to put in error on overrun. */
static void
tm_cq_post(struct xport_cq *cq, const struct cqe *c, struct xport_out *out)
{
	struct spsc_ring *r = cq->ring;
	uint32_t size = cq_slots(cq);
	/* engine: sole producer (nothing staged between calls: + staged for form) */
	uint32_t prod = __atomic_load_n(&r->prod, __ATOMIC_RELAXED) + cq->staged;
	struct cqe *slot;

	if (cq->overflowed)
		return;
	if (prod - cq->cons_cache >= size) {
		cq->cons_cache = __atomic_load_n(&r->cons, __ATOMIC_ACQUIRE);
		if (prod - cq->cons_cache >= size) {
			cq->overflowed = true;
			xport_event(out, XPORT_EV_ASYNC, ASYNC_CQ_ERR, cq->handle);
			return;
		}
	}
	slot = spsc_ring_slot_in(r, size - 1, sizeof(struct cqe), prod);
	*slot = *c;
	xport_cq_commit(cq, slot, false, out);
}

uint32_t
xport_srq_tm_poll(struct xport_srq *srq, uint32_t budget, struct xport_out *out)
{
	struct spsc_ring *ring = srq->tm_ops;
	uint32_t size = srq->tm_ops_size;
	uint32_t n, i;

	if (srq->tm == NULL || ring == NULL || size == 0)
		return 0;
	n = spsc_ring_count_in(ring, size);
	if (n > budget)
		n = budget;
	for (i = 0; i < n; i++) {
		const struct tm_op_wqe *w = spsc_ring_slot_in(ring, size - 1, sizeof(*w),
							      spsc_ring_cons_index(ring) + i);
		/* one read of each field the decisions rest on: the client may rewrite the slot */
		uint32_t opcode = __atomic_load_n(&w->opcode, __ATOMIC_RELAXED);
		uint32_t flags = __atomic_load_n(&w->flags, __ATOMIC_RELAXED);
		uint32_t handle = __atomic_load_n(&w->handle, __ATOMIC_RELAXED);
		uint32_t num_sge = __atomic_load_n(&w->num_sge, __ATOMIC_RELAXED);
		struct wr_sge sg[WQE_MAX_SGE];
		bool sync_req = false;
		uint32_t wc;
		struct cqe c;
		int rc;

		if (flags & TM_OP_SYNC_CNT)
			xport_tm_sync(srq->tm, __atomic_load_n(&w->unexpected_cnt, __ATOMIC_RELAXED));
		switch (opcode) {
		case TM_OP_ADD:
			wc = WC_TM_ADD;
			if (num_sge > srq->tm_max_sge || num_sge > WQE_MAX_SGE) {
				num_sge = WQE_MAX_SGE + 1; /* xport_tm_add_at() refuses, releases */
			} else {
				for (uint32_t k = 0; k < num_sge; k++)
					sg[k] = w->sg_list[k];
			}
			rc = xport_tm_add_at(srq->tm, handle, w->tag, w->mask, w->recv_wr_id, sg,
					     num_sge, &sync_req);
			break;
		case TM_OP_DEL:
			wc = WC_TM_DEL;
			rc = xport_tm_del(srq->tm, handle);
			break;
		case TM_OP_SYNC:
			wc = WC_TM_SYNC;
			rc = 0;
			break;
		default:
			srq->tm_bad_ops++;
			continue;
		}
		if (rc == 0 && !(flags & TM_OP_SIGNALED))
			continue;
		xport_tm_op_cqe(&c, wc, w->wr_id, rc, sync_req);
		if (srq->cq != NULL)
			tm_cq_post(srq->cq, &c, out);
	}
	if (n)
		spsc_ring_release(ring, n);
	return n;
}
