/* SPDX-License-Identifier: BSD-3-Clause */
/* verbs shim: protection domains. */
#include <errno.h>
#include <stdlib.h>

#include "shim.h"

SHIM_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct shim_pd *pd = calloc(1, sizeof(*pd));
	struct ipc_msg req, rsp;
	int rc;

	if (pd == NULL)
		return shim_null(ENOMEM);
	shim_req(&req, IPC_OP_ALLOC_PD);
	req.u.req_ALLOC_PD.user_handle = (uintptr_t)pd;
	rc = shim_rpc(shim_ctx(context), &req, NULL, 0, &rsp, NULL);
	if (rc) {
		free(pd);
		return shim_null(rc);
	}
	pd->handle = rsp.u.rsp_ALLOC_PD.handle;
	pd->pd.context = context;
	pd->pd.handle = pd->handle;
	return &pd->pd;
}

/*
 * 0 or a positive errno; EBUSY while MRs, QPs, SRQs, AHs, windows or parent
 * domains still use the PD. A parent domain is freed alone (domain.c).
 */
SHIM_EXPORT int ibv_dealloc_pd(struct ibv_pd *ibpd)
{
	struct shim_pd *pd = shim_pd(ibpd);
	struct ipc_msg req, rsp;
	int rc;

	if (pd->protection != NULL) {
		shim_dealloc_parent_domain(pd);
		return 0;
	}
	if (__atomic_load_n(&pd->domains, __ATOMIC_ACQUIRE) != 0)
		return shim_ret(EBUSY);

	shim_req(&req, IPC_OP_DEALLOC_PD);
	req.u.req_DEALLOC_PD.handle = pd->handle;
	rc = shim_destroy_rc(ibpd->context, shim_rpc(shim_ctx(ibpd->context), &req, NULL, 0, &rsp, NULL));
	if (rc)
		return shim_ret(rc);
	free(pd);
	return 0;
}

/*
 * A PD object for @p pd_handle, a PD of @p context's connection group (the
 * handle another context's ibv_pd->handle showed). ibv_dealloc_pd on it
 * destroys the PD for every context; ibv_unimport_pd frees only ours.
 */
SHIM_EXPORT struct ibv_pd *ibv_import_pd(struct ibv_context *context, uint32_t pd_handle)
{
	struct shim_pd *pd = calloc(1, sizeof(*pd));
	struct ipc_msg req, rsp;
	int rc;

	if (pd == NULL)
		return shim_null(ENOMEM);
	shim_req(&req, IPC_OP_IMPORT_PD);
	req.u.req_IMPORT_PD.handle = pd_handle;
	rc = shim_rpc(shim_ctx(context), &req, NULL, 0, &rsp, NULL);
	if (rc) {
		free(pd);
		return shim_null(rc);
	}
	pd->handle = pd_handle;
	pd->pd.context = context;
	pd->pd.handle = pd_handle;
	return &pd->pd;
}

SHIM_EXPORT void ibv_unimport_pd(struct ibv_pd *pd)
{
	free(shim_pd(pd));
}
