/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs shim: contexts. One SOCK_SEQPACKET connection to the daemon per
 * ibv_context (its fd is context->cmd_fd); the async-event socket the
 * daemon returns at OPEN_DEVICE is context->async_fd. An imported context
 * (ibv_import_device) has a connection of its own too, in the daemon's
 * connection group of the one it was imported from: same objects.
 *
 * Layout: [struct verbs_context (ending in ibv_context)][private], with
 * abi_compat = __VERBS_ABI_IS_EXTENDED and sz = sizeof(struct verbs_context)
 * so the inline verbs of <infiniband/verbs.h> find the extended ops.
 */
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shim.h"

/* Ops defined in the per-object files. */
int shim_query_device_ex(struct ibv_context *, const struct ibv_query_device_ex_input *,
			 struct ibv_device_attr_ex *, size_t);
int shim_query_port(struct ibv_context *, uint8_t, struct ibv_port_attr *, size_t);
struct ibv_qp *shim_create_qp_ex(struct ibv_context *, struct ibv_qp_init_attr_ex *);
struct ibv_cq_ex *shim_create_cq_ex(struct ibv_context *, struct ibv_cq_init_attr_ex *);
struct ibv_srq *shim_create_srq_ex(struct ibv_context *, struct ibv_srq_init_attr_ex *);
int shim_post_srq_ops(struct ibv_srq *, struct ibv_ops_wr *, struct ibv_ops_wr **);
int shim_get_srq_num(struct ibv_srq *, uint32_t *);
int shim_modify_qp_rate_limit(struct ibv_qp *, struct ibv_qp_rate_limit_attr *);

/* How long ibv_import_device() waits for the daemon, ms (environment, default 10 s). */
#define SHIM_IMPORT_TIMEOUT_ENV "ROCE_SHIM_IMPORT_TIMEOUT_MS"
#define SHIM_IMPORT_TIMEOUT_MS 10000u

static _Atomic uint32_t shim_seq_base;

void shim_req(struct ipc_msg *m, enum ipc_op op)
{
	ipc_req_init(m, op, 0);
	memset(&m->u, 0, ipc_op_desc(op)->req_size);
}

int shim_destroy_handle(struct ibv_context *c, enum ipc_op op, uint32_t handle)
{
	struct ipc_msg req, rsp;

	shim_req(&req, op);
	req.u.req_DEALLOC_MW.handle = handle; /* every such body is an ipc_handle_req */
	return shim_destroy_rc(c, shim_rpc(shim_ctx(c), &req, NULL, 0, &rsp, NULL));
}

static void shim_close_fds(int *fds)
{
	for (unsigned int i = 0; i < IPC_MAX_FDS; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/*
 * A new connection in the connection group of @p cmd_fd: a socket pair
 * whose far end travels in an IMPORT_DEVICE request on @p cmd_fd; the
 * daemon answers on our end only, so @p cmd_fd, perhaps shared with other
 * processes, carries no answer of ours. @return 0 with our end in @p fd and
 * the answer in @p rsp and @p rfds, or a positive errno: the daemon's, EIO
 * (it refused the socket or is gone), ETIMEDOUT (no answer within
 * ROCE_SHIM_IMPORT_TIMEOUT_MS: not a daemon).
 */
static int shim_join_group(int cmd_fd, int *fd, struct ipc_msg *rsp, int *rfds)
{
	struct ipc_msg req;
	int sv[2], rc;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return errno;
	shim_req(&req, IPC_OP_IMPORT_DEVICE);
	req.hdr.seq = 1; /* the first request on our own socket */
	rc = ipc_send(cmd_fd, &req, &sv[1], 1);
	close(sv[1]);
	if (rc == 0)
		rc = ipc_await_timeout(sv[0], IPC_OP_IMPORT_DEVICE, req.hdr.seq, rsp, rfds,
				       (int)shim_env_u32(SHIM_IMPORT_TIMEOUT_ENV,
							 SHIM_IMPORT_TIMEOUT_MS, INT32_MAX));
	if (rc == -ETIMEDOUT)
		rc = ETIMEDOUT;
	else if (rc < 0)
		rc = EIO;
	if (rc) {
		close(sv[0]);
		return rc;
	}
	*fd = sv[0];
	return 0;
}

/*
 * The socket for this process's requests (rpc_lock held). A forked child
 * calling through its parent's context must not share cmd_fd's answers:
 * each process would take whichever answer came first and drop the others'
 * as stale, and the caller they were meant for would wait forever (pyverbs'
 * test_multi_process_alloc_dm: five children allocating device memory on
 * the parent's context hung so). Its first request joins cmd_fd's group
 * with a connection of its own (as ibv_import_device), same objects, as
 * uverbs children share their parent's ufile. Async events of objects the
 * child creates go to that connection's async socket, which the child keeps
 * open but does not read. @return the socket, or a negative errno.
 */
static int shim_rpc_fd(struct shim_context *ctx)
{
	struct ipc_msg rsp;
	int rfds[IPC_MAX_FDS] = { -1, -1 };
	pid_t pid = getpid();
	int fd, rc;

	if (__builtin_expect(ctx->rpc_pid == pid, 1))
		return ctx->rpc_fd;
	rc = shim_join_group(ctx->vctx.context.cmd_fd, &fd, &rsp, rfds);
	if (rc == 0 && rsp.hdr.nfds != 1) {
		close(fd);
		rc = EPROTO;
	}
	if (rc) {
		shim_close_fds(rfds);
		return -rc;
	}
	/* a grandchild: its parent's own connection is not ours to use, only to close */
	if (ctx->rpc_fd != ctx->vctx.context.cmd_fd)
		close(ctx->rpc_fd);
	if (ctx->rpc_async_fd >= 0)
		close(ctx->rpc_async_fd);
	ctx->rpc_fd = fd;
	ctx->rpc_async_fd = rfds[0];
	ctx->rpc_pid = pid;
	return fd;
}

int shim_rpc(struct shim_context *ctx, struct ipc_msg *req, const int *fds, unsigned int nfds,
	     struct ipc_msg *rsp, int *rfds)
{
	int rc, fd;

	if (ctx->dead)
		return EIO;
	pthread_mutex_lock(&ctx->rpc_lock);
	fd = shim_rpc_fd(ctx);
	req->hdr.seq = ++ctx->seq;
	rc = fd < 0 ? fd : ipc_call(fd, req, fds, nfds, rsp, rfds);
	pthread_mutex_unlock(&ctx->rpc_lock);
	if (rc < 0) {
		/* The connection is gone (daemon stopped or protocol broken): like a
		 * disassociated device, every later request fails with EIO. */
		ctx->dead = true;
		return EIO;
	}
	return rc;
}

bool shim_ctx_lost(struct shim_context *ctx)
{
	struct pollfd p = { .fd = ctx->vctx.context.cmd_fd, .events = POLLRDHUP };

	if (ctx->dead)
		return true;
	/* Only responses arrive on cmd_fd, and poll(2) reads nothing: no lock. */
	if (poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLRDHUP | POLLERR)))
		ctx->dead = true;
	return ctx->dead;
}

uint32_t shim_env_u32(const char *name, uint32_t dflt, uint32_t max)
{
	const char *v = getenv(name);
	char *end;
	unsigned long n;

	if (v == NULL || *v == '\0')
		return dflt;
	errno = 0;
	n = strtoul(v, &end, 10);
	return *end == '\0' && errno == 0 && n <= max ? (uint32_t)n : dflt;
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
	/* memory windows (mw.c) */
	o->alloc_mw = shim_alloc_mw;
	o->dealloc_mw = shim_dealloc_mw;
	o->bind_mw = shim_bind_mw;

	/* Extended ops; NULL means "not supported" (the inline verb sets EOPNOTSUPP). */
	v->query_port = shim_query_port;
	v->query_device_ex = shim_query_device_ex;
	v->create_qp_ex = shim_create_qp_ex;
	v->create_cq_ex = shim_create_cq_ex;
	v->create_srq_ex = shim_create_srq_ex;
	v->get_srq_num = shim_get_srq_num;
	v->post_srq_ops = shim_post_srq_ops;
	v->open_xrcd = shim_open_xrcd;
	v->close_xrcd = shim_close_xrcd;
	v->modify_qp_rate_limit = shim_modify_qp_rate_limit;
	v->alloc_td = shim_alloc_td;
	v->dealloc_td = shim_dealloc_td;
	v->alloc_parent_domain = shim_alloc_parent_domain;
	v->advise_mr = shim_advise_mr;
	/* device memory (dm.c) */
	v->alloc_dm = shim_alloc_dm;
	v->free_dm = shim_free_dm;
	v->reg_dm_mr = shim_reg_dm_mr;
	v->ibv_create_flow = shim_create_flow;
	v->ibv_destroy_flow = shim_destroy_flow;
	/* WQs, indirection tables (wq.c) */
	v->create_wq = shim_create_wq;
	v->modify_wq = shim_modify_wq;
	v->destroy_wq = shim_destroy_wq;
	v->create_rwq_ind_table = shim_create_rwq_ind_table;
	v->destroy_rwq_ind_table = shim_destroy_rwq_ind_table;
	v->sz = sizeof(struct verbs_context);
}

/* A context on connection @p fd (owned from here on), before OPEN/IMPORT_DEVICE. */
static struct shim_context *shim_context_alloc(int fd)
{
	struct shim_context *ctx = calloc(1, sizeof(*ctx));

	if (ctx == NULL) {
		close(fd);
		return NULL;
	}
	pthread_mutex_init(&ctx->rpc_lock, NULL);
	pthread_mutex_init(&ctx->live_lock, NULL);
	pthread_mutex_init(&ctx->ud_lock, NULL);
	pthread_mutex_init(&ctx->vctx.context.mutex, NULL);
	ctx->seq = atomic_fetch_add(&shim_seq_base, 0x10000);
	ctx->import_fd = -1;
	ctx->rpc_fd = fd;
	ctx->rpc_async_fd = -1;
	ctx->rpc_pid = getpid();
	ctx->vctx.context.cmd_fd = fd;
	ctx->vctx.context.async_fd = -1;
	ctx->vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
	return ctx;
}

static void shim_context_free(struct shim_context *ctx)
{
	if (ctx->rpc_fd != ctx->vctx.context.cmd_fd)
		close(ctx->rpc_fd);
	if (ctx->rpc_async_fd >= 0)
		close(ctx->rpc_async_fd);
	close(ctx->vctx.context.cmd_fd);
	if (ctx->vctx.context.async_fd >= 0)
		close(ctx->vctx.context.async_fd);
	if (ctx->import_fd >= 0)
		close(ctx->import_fd);
	pthread_mutex_destroy(&ctx->rpc_lock);
	pthread_mutex_destroy(&ctx->live_lock);
	pthread_mutex_destroy(&ctx->ud_lock);
	pthread_mutex_destroy(&ctx->vctx.context.mutex);
	free(ctx->live);
	free(ctx);
}

/*
 * Complete a context from the OPEN_DEVICE/IMPORT_DEVICE answer @p r whose
 * async-event socket is @p async_fd (owned from here on): attributes, ops.
 * @return 0 or a positive errno (the caller frees the context).
 */
static int shim_context_setup(struct shim_context *ctx, const struct ipc_open_device_rsp *r,
			      int async_fd)
{
	struct ibv_context *c = &ctx->vctx.context;
	struct ipc_msg req, rsp;
	int rc;

	c->async_fd = async_fd;
	if (ctx->dev == NULL) {
		ctx->dev = shim_device_lookup(&r->info);
		if (ctx->dev == NULL)
			return ENOMEM;
	}
	c->device = &ctx->dev->device;
	c->num_comp_vectors = r->num_comp_vectors < 1 ? 1 : (int)r->num_comp_vectors;
	shim_req(&req, IPC_OP_QUERY_DEVICE);
	rc = shim_rpc(ctx, &req, NULL, 0, &rsp, NULL);
	if (rc)
		return rc;
	ctx->attr = rsp.u.rsp_QUERY_DEVICE.attr;
	shim_set_ops(ctx);
	return 0;
}

/*
 * The end of OPEN_DEVICE and IMPORT_DEVICE (same answer): with the call's
 * result @p rc and its answer, set @p ctx up, or free it. Closes @p rfds.
 * @return the context, or NULL with errno set
 */
static struct ibv_context *shim_context_finish(struct shim_context *ctx, int rc,
					       const struct ipc_msg *rsp, int *rfds)
{
	if (rc == 0 && rsp->hdr.nfds != 1)
		rc = EPROTO;
	if (rc == 0) {
		rc = shim_context_setup(ctx, &rsp->u.rsp_OPEN_DEVICE, rfds[0]);
		rfds[0] = -1;
	}
	shim_close_fds(rfds);
	if (rc) {
		shim_context_free(ctx);
		return shim_null(rc);
	}
	return &ctx->vctx.context;
}

SHIM_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct shim_context *ctx;
	struct ipc_msg req, rsp;
	int rfds[IPC_MAX_FDS] = { -1, -1 };
	int fd, rc;

	fd = ipc_connect(NULL);
	if (fd < 0)
		return shim_null(-fd);
	ctx = shim_context_alloc(fd);
	if (ctx == NULL)
		return shim_null(ENOMEM);
	ctx->dev = shim_device_of(device);
	shim_req(&req, IPC_OP_OPEN_DEVICE);
	snprintf(req.u.req_OPEN_DEVICE.name, sizeof(req.u.req_OPEN_DEVICE.name), "%s", device->name);
	rc = shim_rpc(ctx, &req, NULL, 0, &rsp, rfds);
	return shim_context_finish(ctx, rc, &rsp, rfds);
}

/*
 * Closing the connection makes the daemon destroy everything the context
 * still owns, unless other contexts share its objects (ibv_import_device):
 * then the last one's close does. Objects the application did not destroy
 * leak their user-space part exactly as with rdma-core.
 */
SHIM_EXPORT int ibv_close_device(struct ibv_context *context)
{
	shim_context_free(shim_ctx(context));
	return 0;
}

/*
 * A context on a connection of its own that shares the objects of the
 * connection @p cmd_fd belongs to (a dup of some context's cmd_fd, from this
 * process or another). Our socket pair's far end travels in an
 * IMPORT_DEVICE request on @p cmd_fd; the daemon serves it as a member of
 * that connection's group and answers on it, so @p cmd_fd, perhaps shared
 * with the exporting process, carries no answer of ours. Possession of
 * @p cmd_fd is the only credential, as for a uverbs fd. @p cmd_fd is ours
 * from here on: ibv_close_device closes it (as rdma-core does). A peer
 * that is not a daemon fails with EINVAL (not a SOCK_SEQPACKET socket), EIO
 * (it closed our socket) or, if it holds the request unanswered,
 * ETIMEDOUT after ROCE_SHIM_IMPORT_TIMEOUT_MS.
 */
SHIM_EXPORT struct ibv_context *ibv_import_device(int cmd_fd)
{
	struct ibv_context *c;
	struct shim_context *ctx;
	struct ipc_msg rsp;
	int rfds[IPC_MAX_FDS] = { -1, -1 };
	int fd, v = 0, rc;
	socklen_t len = sizeof(v);
	struct stat st;

	if (fstat(cmd_fd, &st) < 0 || !S_ISSOCK(st.st_mode) ||
	    getsockopt(cmd_fd, SOL_SOCKET, SO_TYPE, &v, &len) < 0 || v != SOCK_SEQPACKET)
		return shim_null(EINVAL);
	rc = shim_join_group(cmd_fd, &fd, &rsp, rfds);
	if (rc) {
		shim_close_fds(rfds);
		return shim_null(rc);
	}
	ctx = shim_context_alloc(fd);
	if (ctx == NULL) {
		shim_close_fds(rfds);
		return shim_null(ENOMEM);
	}
	c = shim_context_finish(ctx, 0, &rsp, rfds);
	if (c != NULL)
		ctx->import_fd = cmd_fd;
	return c;
}
