/* SPDX-License-Identifier: BSD-3-Clause */
/* lib/ipc: the operation table and message validation. */
#include <errno.h>
#include <string.h>

#include "ipc.h"

static const struct ipc_op_desc ipc_ops[IPC_OP_MAX] = {
#define IPC_OP_DESC(sym, val, req, rsp, rqfd, rsfd)                                      \
	[val] = { .name = #sym, .req_size = sizeof(struct req),                          \
		  .rsp_size = sizeof(struct rsp), .req_fds = rqfd, .rsp_fds = rsfd },
	IPC_OPS(IPC_OP_DESC)
#undef IPC_OP_DESC
};

#define IPC_OP_FDS_FIT(sym, val, req, rsp, rqfd, rsfd)                                   \
	_Static_assert(rqfd <= IPC_MAX_FDS && rsfd <= IPC_MAX_FDS, #sym " fd bound");
IPC_OPS(IPC_OP_FDS_FIT)
#undef IPC_OP_FDS_FIT

const struct ipc_op_desc *ipc_op_desc(uint32_t op)
{
	if (op >= IPC_OP_MAX || ipc_ops[op].name == NULL)
		return NULL;
	return &ipc_ops[op];
}

const char *ipc_op_name(uint32_t op)
{
	const struct ipc_op_desc *d = ipc_op_desc(op);

	return d ? d->name : "?";
}

size_t ipc_msg_max(void)
{
	return sizeof(struct ipc_msg);
}

int ipc_msg_check(const struct ipc_msg *msg, size_t len, unsigned int nfds, enum ipc_dir dir)
{
	const struct ipc_op_desc *d;
	size_t body;

	if (len < sizeof(msg->hdr) || msg->hdr.magic != IPC_MAGIC ||
	    msg->hdr.version != IPC_VERSION || msg->hdr.len != len)
		return -EPROTO;
	d = ipc_op_desc(msg->hdr.op);
	if (d == NULL)
		return -EOPNOTSUPP;
	body = dir == IPC_REQUEST ? d->req_size : d->rsp_size;
	if (len != sizeof(msg->hdr) + body)
		return -EPROTO;
	if (dir == IPC_REQUEST && msg->hdr.status != 0)
		return -EPROTO;
	if (msg->hdr.nfds != nfds || nfds > (dir == IPC_REQUEST ? d->req_fds : d->rsp_fds))
		return -EBADMSG;
	return 0;
}

void ipc_req_init(struct ipc_msg *msg, enum ipc_op op, uint32_t seq)
{
	const struct ipc_op_desc *d = ipc_op_desc(op);

	memset(&msg->hdr, 0, sizeof(msg->hdr));
	msg->hdr.magic = IPC_MAGIC;
	msg->hdr.version = IPC_VERSION;
	msg->hdr.op = (uint16_t)op;
	msg->hdr.seq = seq;
	msg->hdr.len = (uint32_t)(sizeof(msg->hdr) + (d ? d->req_size : 0));
}

void ipc_rsp_init(struct ipc_msg *rsp, const struct ipc_msg *req, int status)
{
	const struct ipc_op_desc *d = ipc_op_desc(req->hdr.op);
	struct ipc_hdr h = req->hdr;

	h.len = (uint32_t)(sizeof(h) + (d ? d->rsp_size : 0));
	h.status = status;
	h.nfds = 0;
	rsp->hdr = h;
	if (d != NULL)
		memset(&rsp->u, 0, d->rsp_size);
}
