/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RAW_PACKET QPs, the receive side (xport.h xport_qp_raw_rx()): a frame the
 * daemon's flow rules steered here lands whole, from its Ethernet header
 * on, in the next receive WQE, as a NIC delivers it. No transport: no PSN,
 * no ACK, no GRH. The send side is the requester's (xport_req.c: one WQE,
 * one frame, marked xport_frame.raw).
 *
 * It shares the responder's receive WQE (resp.recv, xport_resp_take_recv())
 * and the CQ producer with UD, so a raw QP on an SRQ, the SRQ limit event,
 * CQ overflow and the error flush behave as for every other QP.
 */
#include <string.h>

#include "xport_internal.h"

size_t
xport_frame_raw_gather(const struct xport_frame *f, uint8_t *buf, size_t room)
{
	size_t len = 0;

	for (uint32_t i = 0; i < f->nseg; i++) {
		if (f->seg[i].len > room - len)
			return 0;
		memcpy(buf + len, f->seg[i].addr, f->seg[i].len);
		len += f->seg[i].len;
	}
	return len;
}

/* The receive completion of the WQE in resp.recv: the frame's length, or an error. */
static void
raw_recv_cqe(struct xport_qp *qp, uint8_t status, uint32_t len, uint64_t now,
	     struct xport_out *out)
{
	struct xport_cq *cq = qp_recv_cq(qp);
	struct cqe *c = cq ? xport_cq_reserve(qp, cq, out) : NULL;

	qp->resp.have_recv = false;
	if (!c)
		return; /* CQ overflow: the QP is in error now */
	*c = (struct cqe){
		.wr_id = qp->resp.recv.wr_id,
		.status = status,
		.opcode = WC_RECV,
		.vendor_err = status == WC_SUCCESS ? XPORT_ERR_NONE : XPORT_ERR_RESP_OP,
		.byte_len = status == WC_SUCCESS ? len : 0,
		.qp_num = qp->cfg.qpn,
		.timestamp = now,
	};
	xport_cq_commit(cq, c, false, out);
}

void
xport_qp_raw_rx(struct xport_qp *qp, const uint8_t *frame, uint32_t len, uint64_t now,
		struct xport_out *out)
{
	struct xport_resp *r = &qp->resp;

	if (qp->cfg.type != XPORT_RAW) {
		cnt_inc(qp, XPORT_CNT_DROP_TRANSPORT);
		return;
	}
	/* receive from RTR on, as every QP (IBA 10.3.1); RESET/INIT and ERR take nothing */
	if (qp->state == XPORT_STATE_RESET || qp->state == XPORT_STATE_ERR) {
		cnt_inc(qp, XPORT_CNT_DROP_STATE);
		return;
	}
	if (!r->have_recv && !xport_resp_take_recv(qp, out)) {
		cnt_inc(qp, XPORT_CNT_DROP_NO_RECV); /* no RNR without a transport: lost */
		return;
	}
	if (len > r->recv_cap) {
		/* as UD (IBA class D) and rxe: dropped, the WQE waits for the next frame */
		cnt_inc(qp, XPORT_CNT_DROP_RAW_LEN);
		return;
	}
	if (xport_sg_scatter(qp, r->recv.sg_list, r->recv.num_sge, 0, frame, len) != MR_OK) {
		raw_recv_cqe(qp, WC_LOC_PROT_ERR, 0, now, out);
		return;
	}
	cnt_inc(qp, XPORT_CNT_RX_PKTS);
	cnt_add(qp, XPORT_CNT_RX_BYTES, len);
	raw_recv_cqe(qp, WC_SUCCESS, len, now, out);
}
