/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs shim: contexts. One SOCK_SEQPACKET connection to the daemon per
 * ibv_context (its fd is context->cmd_fd); the async-event socket the
 * daemon returns at OPEN_DEVICE is context->async_fd.
 *
 * Layout: [struct verbs_context (ending in ibv_context)][private], with
 * abi_compat = __VERBS_ABI_IS_EXTENDED and sz = sizeof(struct verbs_context)
 * so the inline verbs of <infiniband/verbs.h> find the extended ops.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "shim.h"

/* Ops defined in the per-object files. */
int shim_query_device_ex(struct ibv_context *, const struct ibv_query_device_ex_input *,
			 struct ibv_device_attr_ex *, size_t);
int shim_query_port(struct ibv_context *, uint8_t, struct ibv_port_attr *, size_t);
struct ibv_qp *shim_create_qp_ex(struct ibv_context *, struct ibv_qp_init_attr_ex *);
struct ibv_cq_ex *shim_create_cq_ex(struct ibv_context *, struct ibv_cq_init_attr_ex *);
struct ibv_srq *shim_create_srq_ex(struct ibv_context *, struct ibv_srq_init_attr_ex *);
int shim_get_srq_num(struct ibv_srq *, uint32_t *);

static _Atomic uint32_t shim_seq_base;

void shim_req(struct ipc_msg *m, enum ipc_op op)
{
	ipc_req_init(m, op, 0);
	memset(&m->u, 0, ipc_op_desc(op)->req_size);
}

int shim_rpc(struct shim_context *ctx, struct ipc_msg *req, const int *fds, unsigned int nfds,
	     struct ipc_msg *rsp, int *rfds)
{
	int rc;

	if (ctx->dead)
		return EIO;
	pthread_mutex_lock(&ctx->rpc_lock);
	req->hdr.seq = ++ctx->seq;
	rc = ipc_call(ctx->vctx.context.cmd_fd, req, fds, nfds, rsp, rfds);
	pthread_mutex_unlock(&ctx->rpc_lock);
	if (rc < 0) {
		/* The connection is gone (daemon stopped or protocol broken): like a
		 * disassociated device, every later request fails with EIO. */
		ctx->dead = true;
		return EIO;
	}
	return rc;
}

void *shim_map_shm(int fd, uint64_t size)
{
	if (size == 0 || size > SIZE_MAX) {
		errno = EPROTO;
		return NULL;
	}
	return ipc_shm_map(fd, (size_t)size, 0);
}

static void shim_set_ops(struct shim_context *ctx)
{
	struct verbs_context *v = &ctx->vctx;
	struct ibv_context_ops *o = &v->context.ops;

	/* The inline hot path: ibv_post_send/recv/srq_recv, ibv_poll_cq, ibv_req_notify_cq. */
	o->post_send = shim_post_send;
	o->post_recv = shim_post_recv;
	o->post_srq_recv = shim_post_srq_recv;
	o->poll_cq = shim_poll_cq;
	o->req_notify_cq = shim_req_notify_cq;
	/* alloc_mw/bind_mw stay NULL: ibv_alloc_mw then fails with EOPNOTSUPP. */

	/* Extended ops; NULL means "not supported" (the inline verb sets EOPNOTSUPP). */
	v->query_port = shim_query_port;
	v->query_device_ex = shim_query_device_ex;
	v->create_qp_ex = shim_create_qp_ex;
	v->create_cq_ex = shim_create_cq_ex;
	v->create_srq_ex = shim_create_srq_ex;
	v->get_srq_num = shim_get_srq_num;
	v->sz = sizeof(struct verbs_context);
}

SHIM_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct shim_device *dev = shim_device_of(device);
	struct shim_context *ctx;
	struct ipc_msg req, rsp;
	int rfds[IPC_MAX_FDS] = { -1, -1 };
	int fd, rc;

	fd = ipc_connect(NULL);
	if (fd < 0)
		return shim_null(-fd);
	ctx = calloc(1, sizeof(*ctx));
	if (ctx == NULL) {
		close(fd);
		return shim_null(ENOMEM);
	}
	pthread_mutex_init(&ctx->rpc_lock, NULL);
	pthread_mutex_init(&ctx->live_lock, NULL);
	pthread_mutex_init(&ctx->vctx.context.mutex, NULL);
	ctx->dev = dev;
	ctx->seq = atomic_fetch_add(&shim_seq_base, 0x10000);
	ctx->vctx.context.device = device;
	ctx->vctx.context.cmd_fd = fd;
	ctx->vctx.context.async_fd = -1;
	ctx->vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;

	shim_req(&req, IPC_OP_OPEN_DEVICE);
	snprintf(req.u.req_OPEN_DEVICE.name, sizeof(req.u.req_OPEN_DEVICE.name), "%s", device->name);
	rc = shim_rpc(ctx, &req, NULL, 0, &rsp, rfds);
	if (rc == 0 && rsp.hdr.nfds != 1)
		rc = EPROTO;
	if (rc)
		goto fail;
	ctx->vctx.context.async_fd = rfds[0];
	rfds[0] = -1;
	ctx->vctx.context.num_comp_vectors = (int)rsp.u.rsp_OPEN_DEVICE.num_comp_vectors;
	if (ctx->vctx.context.num_comp_vectors < 1)
		ctx->vctx.context.num_comp_vectors = 1;

	shim_req(&req, IPC_OP_QUERY_DEVICE);
	rc = shim_rpc(ctx, &req, NULL, 0, &rsp, NULL);
	if (rc)
		goto fail;
	ctx->attr = rsp.u.rsp_QUERY_DEVICE.attr;
	shim_set_ops(ctx);
	return &ctx->vctx.context;
fail:
	for (unsigned int i = 0; i < IPC_MAX_FDS; i++)
		if (rfds[i] >= 0)
			close(rfds[i]);
	if (ctx->vctx.context.async_fd >= 0)
		close(ctx->vctx.context.async_fd);
	close(fd);
	pthread_mutex_destroy(&ctx->rpc_lock);
	pthread_mutex_destroy(&ctx->live_lock);
	pthread_mutex_destroy(&ctx->vctx.context.mutex);
	free(ctx);
	return shim_null(rc);
}

/*
 * Closing the connection makes the daemon destroy everything the context
 * still owns; objects the application did not destroy leak their user-space
 * part exactly as with rdma-core.
 */
SHIM_EXPORT int ibv_close_device(struct ibv_context *context)
{
	struct shim_context *ctx = shim_ctx(context);

	close(context->cmd_fd);
	if (context->async_fd >= 0)
		close(context->async_fd);
	pthread_mutex_destroy(&ctx->rpc_lock);
	pthread_mutex_destroy(&ctx->live_lock);
	pthread_mutex_destroy(&context->mutex);
	free(ctx->live);
	free(ctx);
	return 0;
}

SHIM_EXPORT struct ibv_context *ibv_import_device(int cmd_fd)
{
	(void)cmd_fd;
	return shim_null(EOPNOTSUPP);
}
