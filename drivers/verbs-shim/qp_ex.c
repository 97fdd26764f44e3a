/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs shim: the ibv_wr_* post-send API of ibv_qp_ex. Built generically on
 * the SQ ring: wr_start takes the SQ lock, each wr_<opcode> opens the next
 * ring slot, the wr_set_* setters fill it, wr_complete publishes every slot
 * opened since wr_start with one release store (the doorbell) and wr_abort
 * drops them. The first error is remembered and returned by wr_complete,
 * which then posts nothing (the errnos of shim_post_send: EINVAL, ENOMEM).
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "shim.h"

static struct shim_qp *qpx_of(struct ibv_qp_ex *x)
{
	return (struct shim_qp *)x;
}

static void shim_wr_start(struct ibv_qp_ex *x)
{
	struct shim_qp *qp = qpx_of(x);

	qp->wr_owned = shim_lock(&qp->sq_lock);
	qp->wr_pending = 0;
	qp->wr_cur = NULL;
	qp->wr_err = 0;
}

static int shim_wr_complete(struct ibv_qp_ex *x)
{
	struct shim_qp *qp = qpx_of(x);
	int rc = qp->wr_err;
	bool bell = false;

	if (rc == 0 && qp->wr_pending && !(qp->qp.state == IBV_QPS_RTS || qp->qp.state == IBV_QPS_SQD ||
					  qp->qp.state == IBV_QPS_SQE || qp->qp.state == IBV_QPS_ERR))
		rc = EINVAL;
	if (rc == 0 && qp->wr_pending)
		bell = shim_sq_publish(qp, qp->wr_pending);
	qp->wr_pending = 0;
	qp->wr_cur = NULL;
	shim_unlock(&qp->sq_lock, qp->wr_owned);
	if (bell)
		shim_sq_ring_bell(qp);
	return shim_ret(rc);
}

static void shim_wr_abort(struct ibv_qp_ex *x)
{
	struct shim_qp *qp = qpx_of(x);

	qp->wr_pending = 0;
	qp->wr_cur = NULL;
	shim_unlock(&qp->sq_lock, qp->wr_owned);
}

/* Open the next slot for @p opcode; on error the setters that follow are ignored. */
static struct sq_wqe *shim_wr_open(struct ibv_qp_ex *x, enum ibv_wr_opcode opcode)
{
	struct shim_qp *qp = qpx_of(x);
	struct sq_wqe *w;

	qp->wr_cur = NULL;
	if (qp->wr_err)
		return NULL;
	if (!shim_opcode_ok(qp->qp.qp_type, opcode)) {
		qp->wr_err = EINVAL;
		return NULL;
	}
	if (qp->wr_pending >=
	    shim_wq_room(qp->sq, qp->sq_prod, qp->cap.max_send_wr, qp->wr_pending + 1,
			 &qp->sq_cons_seen)) {
		qp->wr_err = ENOMEM;
		return NULL;
	}
	w = spsc_ring_slot(qp->sq, qp->sq_prod + qp->wr_pending);
	memset(w, 0, SQ_WQE_HEAD_BYTES); /* the AV line is UD's only (wqe.h) */
	w->wr_id = x->wr_id;
	w->send_flags = x->wr_flags & ~(uint32_t)WR_FLAG_HEAD_DATA; /* the shim's to set */
	w->opcode = (uint8_t)opcode;
	qp->wr_pending++;
	qp->wr_cur = w;
	return w;
}

static void shim_wr_send(struct ibv_qp_ex *x)
{
	shim_wr_open(x, IBV_WR_SEND);
}

static void shim_wr_send_imm(struct ibv_qp_ex *x, __be32 imm)
{
	struct sq_wqe *w = shim_wr_open(x, IBV_WR_SEND_WITH_IMM);

	if (w)
		w->imm_data = imm;
}

static void shim_wr_send_inv(struct ibv_qp_ex *x, uint32_t rkey)
{
	struct sq_wqe *w = shim_wr_open(x, IBV_WR_SEND_WITH_INV);

	if (w)
		w->imm_data = rkey;
}

static void shim_wr_rdma(struct ibv_qp_ex *x, enum ibv_wr_opcode op, uint32_t rkey, uint64_t raddr,
			 __be32 imm)
{
	struct sq_wqe *w = shim_wr_open(x, op);

	if (w) {
		w->wr.rdma.rkey = rkey;
		w->wr.rdma.remote_addr = raddr;
		w->imm_data = imm;
	}
}

static void shim_wr_rdma_write(struct ibv_qp_ex *x, uint32_t rkey, uint64_t raddr)
{
	shim_wr_rdma(x, IBV_WR_RDMA_WRITE, rkey, raddr, 0);
}

static void shim_wr_rdma_write_imm(struct ibv_qp_ex *x, uint32_t rkey, uint64_t raddr, __be32 imm)
{
	shim_wr_rdma(x, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, raddr, imm);
}

static void shim_wr_rdma_read(struct ibv_qp_ex *x, uint32_t rkey, uint64_t raddr)
{
	shim_wr_rdma(x, IBV_WR_RDMA_READ, rkey, raddr, 0);
}

static void shim_wr_atomic(struct ibv_qp_ex *x, enum ibv_wr_opcode op, uint32_t rkey,
			   uint64_t raddr, uint64_t compare_add, uint64_t swap)
{
	struct sq_wqe *w = shim_wr_open(x, op);

	if (w) {
		w->wr.atomic.rkey = rkey;
		w->wr.atomic.remote_addr = raddr;
		w->wr.atomic.compare_add = compare_add;
		w->wr.atomic.swap = swap;
	}
}

static void shim_wr_atomic_cmp_swp(struct ibv_qp_ex *x, uint32_t rkey, uint64_t raddr,
				   uint64_t compare, uint64_t swap)
{
	shim_wr_atomic(x, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, raddr, compare, swap);
}

static void shim_wr_atomic_fetch_add(struct ibv_qp_ex *x, uint32_t rkey, uint64_t raddr,
				     uint64_t add)
{
	shim_wr_atomic(x, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, raddr, add, 0);
}

/* Operations the shim does not implement: the batch fails with EOPNOTSUPP. */
static void shim_wr_unsupported(struct shim_qp *qp)
{
	qp->wr_cur = NULL;
	if (qp->wr_err == 0)
		qp->wr_err = EOPNOTSUPP;
}

static void shim_wr_bind_mw(struct ibv_qp_ex *x, struct ibv_mw *mw, uint32_t rkey,
			    const struct ibv_mw_bind_info *info)
{
	struct sq_wqe *w = shim_wr_open(x, IBV_WR_BIND_MW);

	if (w == NULL)
		return;
	if (mw == NULL || info == NULL) {
		qpx_of(x)->wr_err = EINVAL;
		return;
	}
	shim_fill_bind(w, mw, rkey, info);
}

static void shim_wr_local_inv(struct ibv_qp_ex *x, uint32_t rkey)
{
	struct sq_wqe *w = shim_wr_open(x, IBV_WR_LOCAL_INV);

	if (w)
		w->imm_data = rkey;
}

static void shim_wr_send_tso(struct ibv_qp_ex *x, void *hdr, uint16_t hdr_sz, uint16_t mss)
{
	(void)hdr; (void)hdr_sz; (void)mss;
	shim_wr_unsupported(qpx_of(x));
}

/* XRC INI: the target's XRC SRQ of the WR just opened (XRCETH). */
static void shim_wr_set_xrc_srqn(struct ibv_qp_ex *x, uint32_t srqn)
{
	struct shim_qp *qp = qpx_of(x);

	if (qp->qp.qp_type != IBV_QPT_XRC_SEND)
		shim_wr_unsupported(qp);
	else if (qp->wr_cur != NULL)
		qp->wr_cur->xrc_remote_srqn = srqn;
}

/* IBTA 1.5 ATOMIC WRITE: the 8 bytes travel inline in the WQE, whatever max_inline_data is. */
static void shim_wr_atomic_write(struct ibv_qp_ex *x, uint32_t rkey, uint64_t raddr,
				 const void *data)
{
	struct sq_wqe *w = shim_wr_open(x, IBV_WR_ATOMIC_WRITE);

	if (w) {
		w->wr.rdma.rkey = rkey;
		w->wr.rdma.remote_addr = raddr;
		memcpy(shim_wqe_payload(qpx_of(x), w, true, 8), data, 8);
		w->inline_len = 8;
		w->num_sge = 0;
		w->send_flags |= IBV_SEND_INLINE;
	}
}

static void shim_wr_set_ud_addr(struct ibv_qp_ex *x, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey)
{
	struct shim_qp *qp = qpx_of(x);

	if (qp->wr_cur == NULL)
		return;
	if (ah == NULL) {
		qp->wr_err = EINVAL;
		return;
	}
	qp->wr_cur->av = shim_ah(ah)->av;
	qp->wr_cur->wr.ud.remote_qpn = qpn;
	qp->wr_cur->wr.ud.remote_qkey = qkey;
}

static void shim_wr_set_sge_list(struct ibv_qp_ex *x, size_t n, const struct ibv_sge *sg)
{
	struct shim_qp *qp = qpx_of(x);

	if (qp->wr_cur == NULL)
		return;
	if (n > qp->cap.max_send_sge) {
		qp->wr_err = EINVAL;
		return;
	}
	shim_sge_copy(shim_wqe_payload(qp, qp->wr_cur, false, n), sg, n);
	qp->wr_cur->num_sge = (uint8_t)n;
	qp->wr_cur->inline_len = 0;
	qp->wr_cur->send_flags &= ~(uint32_t)IBV_SEND_INLINE;
}

static void shim_wr_set_sge(struct ibv_qp_ex *x, uint32_t lkey, uint64_t addr, uint32_t length)
{
	struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

	shim_wr_set_sge_list(x, 1, &sge);
}

static void shim_wr_set_inline_data_list(struct ibv_qp_ex *x, size_t n, const struct ibv_data_buf *b)
{
	struct shim_qp *qp = qpx_of(x);
	uint32_t max = qp->cap.max_inline_data;
	uint8_t *dst;
	size_t total = 0;

	if (qp->wr_cur == NULL)
		return;
	for (size_t i = 0; i < n; i++) {
		if (b[i].length > max - total) {
			qp->wr_err = EINVAL;
			return;
		}
		total += b[i].length;
	}
	dst = shim_wqe_payload(qp, qp->wr_cur, true, total);
	total = 0;
	for (size_t i = 0; i < n; i++) {
		memcpy(dst + total, b[i].addr, b[i].length);
		total += b[i].length;
	}
	qp->wr_cur->inline_len = (uint16_t)total;
	qp->wr_cur->num_sge = 0;
	qp->wr_cur->send_flags |= IBV_SEND_INLINE;
}

static void shim_wr_set_inline_data(struct ibv_qp_ex *x, void *addr, size_t length)
{
	struct ibv_data_buf b = { .addr = addr, .length = length };

	shim_wr_set_inline_data_list(x, 1, &b);
}

void shim_qp_ex_init(struct shim_qp *qp, uint64_t send_ops_flags)
{
	struct ibv_qp_ex *x = &qp->qpx;

	(void)send_ops_flags; /* validated at create; unrequested ops still work */
	x->comp_mask = 0;
	x->wr_start = shim_wr_start;
	x->wr_complete = shim_wr_complete;
	x->wr_abort = shim_wr_abort;
	x->wr_send = shim_wr_send;
	x->wr_send_imm = shim_wr_send_imm;
	x->wr_send_inv = shim_wr_send_inv;
	x->wr_send_tso = shim_wr_send_tso;
	x->wr_rdma_write = shim_wr_rdma_write;
	x->wr_rdma_write_imm = shim_wr_rdma_write_imm;
	x->wr_rdma_read = shim_wr_rdma_read;
	x->wr_atomic_cmp_swp = shim_wr_atomic_cmp_swp;
	x->wr_atomic_fetch_add = shim_wr_atomic_fetch_add;
	x->wr_atomic_write = shim_wr_atomic_write;
	x->wr_bind_mw = shim_wr_bind_mw;
	x->wr_local_inv = shim_wr_local_inv;
	x->wr_set_ud_addr = shim_wr_set_ud_addr;
	x->wr_set_xrc_srqn = shim_wr_set_xrc_srqn;
	x->wr_set_sge = shim_wr_set_sge;
	x->wr_set_sge_list = shim_wr_set_sge_list;
	x->wr_set_inline_data = shim_wr_set_inline_data;
	x->wr_set_inline_data_list = shim_wr_set_inline_data_list;
}
