/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs shim: flow steering (verbs_context ibv_create_flow and
 * ibv_destroy_flow; the inline ibv_create_flow/ibv_destroy_flow of
 * <infiniband/verbs.h> reach them). The specs become one lib/flow rule
 * (ipc_flow_from_ibv()); the daemon checks it, the client's CAP_NET_RAW
 * and the QP (a RAW_PACKET QP of this context), and steers the frames
 * that match to the QP.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ipc_verbs.h"
#include "shim.h"

struct ibv_flow *shim_create_flow(struct ibv_qp *qp, struct ibv_flow_attr *attr)
{
	struct ibv_flow *flow = calloc(1, sizeof(*flow));
	struct ipc_msg req, rsp;
	int rc;

	if (flow == NULL)
		return shim_null(ENOMEM);
	shim_req(&req, IPC_OP_CREATE_FLOW);
	rc = ipc_flow_from_ibv(attr, &req.u.req_CREATE_FLOW);
	if (rc == 0) {
		req.u.req_CREATE_FLOW.user_handle = (uintptr_t)flow;
		req.u.req_CREATE_FLOW.qp = shim_qp(qp)->handle;
		rc = shim_rpc(shim_ctx(qp->context), &req, NULL, 0, &rsp, NULL);
	}
	if (rc) {
		free(flow);
		return shim_null(rc);
	}
	flow->context = qp->context;
	flow->handle = rsp.u.rsp_CREATE_FLOW.handle;
	return flow;
}

int shim_destroy_flow(struct ibv_flow *flow)
{
	int rc = shim_destroy_handle(flow->context, IPC_OP_DESTROY_FLOW, flow->handle);

	if (rc)
		return shim_ret(rc);
	free(flow);
	return 0;
}
