/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs shim: XRC domains (ibv_open_xrcd(3), ibv_close_xrcd). The daemon
 * keeps the domain (lib/ctl ctl_xrc.c): the file's descriptor goes along
 * with OPEN_XRCD, so contexts that open the same inode share one domain,
 * in this process or another.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>

#include "shim.h"

struct ibv_xrcd *shim_open_xrcd(struct ibv_context *context, struct ibv_xrcd_init_attr *attr)
{
	const uint32_t known = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
	struct ipc_msg req, rsp;
	struct shim_xrcd *x;
	int fd, rc;

	if (attr->comp_mask & ~known)
		return shim_null(EOPNOTSUPP);
	/* as libibverbs' ibv_cmd_open_xrcd(): both fields are required */
	if (!(attr->comp_mask & IBV_XRCD_INIT_ATTR_FD) || !(attr->comp_mask & IBV_XRCD_INIT_ATTR_OFLAGS))
		return shim_null(EINVAL);
	if (attr->oflags & ~(O_CREAT | O_EXCL))
		return shim_null(EINVAL);
	x = calloc(1, sizeof(*x));
	if (x == NULL)
		return shim_null(ENOMEM);
	fd = attr->fd;
	shim_req(&req, IPC_OP_OPEN_XRCD);
	req.u.req_OPEN_XRCD.oflags = (uint32_t)attr->oflags;
	rc = shim_rpc(shim_ctx(context), &req, fd >= 0 ? &fd : NULL, fd >= 0 ? 1 : 0, &rsp, NULL);
	if (rc) {
		free(x);
		return shim_null(rc);
	}
	x->v.xrcd.context = context;
	x->v.comp_mask = 0;
	x->v.handle = rsp.u.rsp_OPEN_XRCD.handle;
	x->handle = rsp.u.rsp_OPEN_XRCD.handle;
	return &x->v.xrcd;
}

int shim_close_xrcd(struct ibv_xrcd *xrcd)
{
	struct shim_xrcd *x = shim_xrcd(xrcd);
	struct ipc_msg req, rsp;
	int rc;

	shim_req(&req, IPC_OP_CLOSE_XRCD);
	req.u.req_CLOSE_XRCD.handle = x->handle;
	rc = shim_destroy_rc(xrcd->context, shim_rpc(shim_ctx(xrcd->context), &req, NULL, 0, &rsp,
						     NULL));
	if (rc)
		return shim_ret(rc); /* EBUSY while its SRQs or TGT QPs live */
	free(x);
	return 0;
}
