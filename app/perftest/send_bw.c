/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * send_bw: SEND bandwidth (ib_send_bw) over RC, UC or UD. The server keeps
 * rx_depth receives posted per QP and measures what arrives; with --verify it
 * checks every message against the pattern of its iteration.
 */
#include "perftest.h"

void pt_send_prepare(struct pt_side *s, uint32_t qp, uint64_t iter,
		     struct ibv_send_wr *wr, struct ibv_sge *sge)
{
	wr->opcode = IBV_WR_SEND;
	if (s->p->conn == PT_UD) {
		wr->wr.ud.ah = s->ah[qp];
		wr->wr.ud.remote_qpn = s->remote[qp].qpn;
		wr->wr.ud.remote_qkey = PT_QKEY;
	}
	if (s->p->verify)
		pt_pattern_fill((void *)(uintptr_t)sge->addr, sge->length, iter, qp);
}

static int send_bw_setup(struct pt_side *s)
{
	return s->role == PT_ROLE_SERVER ? pt_bw_post_receives(s) : 0;
}

static enum pt_step send_bw_run(struct pt_side *s)
{
	if (s->role == PT_ROLE_SERVER)
		return pt_bw_receiver_step(s);
	return pt_bw_requester_step(s, pt_send_prepare, NULL);
}

const struct pt_mode pt_mode_send_bw = {
	.name = "send_bw",
	.title = "Send",
	.verb = PT_SEND,
	.kind = PT_BW,
	.conns = PT_CONN_BIT(PT_RC) | PT_CONN_BIT(PT_UC) | PT_CONN_BIT(PT_UD),
	.setup = send_bw_setup,
	.run = send_bw_run,
};
