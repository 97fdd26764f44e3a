/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs shim: memory windows (context ops alloc_mw, dealloc_mw, bind_mw;
 * the inline ibv_alloc_mw/ibv_dealloc_mw/ibv_bind_mw of <infiniband/verbs.h>
 * reach them). The daemon opens the window (ALLOC_MW) and the engine binds
 * it: ibv_bind_mw posts a BIND_MW work request on the QP, as rdma-core's
 * rxe provider does, and its completion (IBV_WC_BIND_MW) says whether the
 * bind took; the window's rkey is the new one from the post on.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"

struct ibv_mw *shim_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct ibv_mw *mw = calloc(1, sizeof(*mw));
	struct ipc_msg req, rsp;
	int rc;

	if (mw == NULL)
		return shim_null(ENOMEM);
	shim_req(&req, IPC_OP_ALLOC_MW);
	req.u.req_ALLOC_MW.user_handle = (uintptr_t)mw;
	req.u.req_ALLOC_MW.pd = shim_pd(pd)->handle;
	req.u.req_ALLOC_MW.type = (uint32_t)type;
	rc = shim_rpc(shim_ctx(pd->context), &req, NULL, 0, &rsp, NULL);
	if (rc) {
		free(mw);
		return shim_null(rc);
	}
	mw->context = pd->context;
	mw->pd = pd;
	mw->rkey = rsp.u.rsp_ALLOC_MW.rkey;
	mw->handle = rsp.u.rsp_ALLOC_MW.handle;
	mw->type = type;
	return mw;
}

int shim_dealloc_mw(struct ibv_mw *mw)
{
	int rc = shim_destroy_handle(mw->context, IPC_OP_DEALLOC_MW, mw->handle);

	if (rc)
		return shim_ret(rc);
	free(mw);
	return 0;
}

/* ibv_bind_mw (type 1; verbs.h checked the type, the MR's PD, a NULL MR's range). */
int shim_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *mw_bind)
{
	struct ibv_send_wr wr, *bad = NULL;
	int rc;

	if (mw_bind->bind_info.mw_access_flags & IBV_ACCESS_ZERO_BASED)
		return shim_ret(EINVAL); /* o10-36.2.2: type 1 windows are not zero-based */
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = mw_bind->wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = mw_bind->send_flags;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = mw_bind->bind_info;
	rc = shim_post_send(qp, &wr, &bad);
	if (rc)
		return shim_ret(rc);
	mw->rkey = wr.bind_mw.rkey; /* a failed bind's completion says so: undo is the caller's */
	return 0;
}
