/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdmacm shim: the daemon's CM over lib/ipc (the contract is
 * lib/ipc/ipc_cm.h).
 *
 * Commands: one connection per process, made the first time a channel is
 * created: the first device is opened with our libibverbs (ibv_open_device)
 * and IMPORT_DEVICE on that context's cmd_fd gives a connection of our own
 * in the same connection group, so the QPs the application creates on
 * id->verbs and the CM objects are owned together. Requests on it are
 * serialised by a mutex; ipc_call() pairs each answer with its request.
 *
 * Events: each rdma_event_channel is one end of a SOCK_SEQPACKET pair whose
 * other end is handed to the daemon (CM_CREATE_CHANNEL); every datagram on
 * it is one struct ipc_cm_event. The application's end is the channel fd:
 * pollable, and O_NONBLOCK on it makes the read fail with EAGAIN.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ipc.h"
#include "ipc_verbs.h"
#include "rcm.h"

/* How long the daemon may take to answer the import, ms. */
#define RCM_IMPORT_TIMEOUT_MS 10000

struct rcm_tp {
	uint32_t handle;   /* the daemon's channel handle */
	int fd;            /* our end: the application's channel fd */
};

static struct {
	pthread_mutex_t lock;
	int fd;            /* command connection; -1: not yet */
	int async_fd;      /* its async-event socket (unused, kept open) */
	uint32_t seq;
} rcm_conn = { PTHREAD_MUTEX_INITIALIZER, -1, -1, 0 };

/* Make the command connection (rcm_conn.lock held). @return 0 or a positive errno. */
static int rcm_conn_open(void)
{
	struct ibv_context *ctx;
	struct ipc_msg req, rsp;
	int rfds[IPC_MAX_FDS] = { -1, -1 };
	int sv[2], rc;

	if (rcm_conn.fd >= 0)
		return 0;
	ctx = rcm_any_context();
	if (ctx == NULL)
		return errno ? errno : ENODEV;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return errno;
	ipc_req_init(&req, IPC_OP_IMPORT_DEVICE, ++rcm_conn.seq);
	memset(&req.u, 0, ipc_op_desc(IPC_OP_IMPORT_DEVICE)->req_size);
	rc = ipc_send(ctx->cmd_fd, &req, &sv[1], 1);
	close(sv[1]);
	if (rc == 0)
		rc = ipc_await_timeout(sv[0], IPC_OP_IMPORT_DEVICE, req.hdr.seq, &rsp, rfds,
				       RCM_IMPORT_TIMEOUT_MS);
	if (rc < 0)
		rc = rc == -ETIMEDOUT ? ETIMEDOUT : ECONNREFUSED;
	if (rc) {
		for (unsigned int i = 0; i < IPC_MAX_FDS; i++)
			if (rfds[i] >= 0)
				close(rfds[i]);
		close(sv[0]);
		return rc;
	}
	rcm_conn.fd = sv[0];
	rcm_conn.async_fd = rfds[0];
	if (rfds[1] >= 0)
		close(rfds[1]);
	return 0;
}

/*
 * One request/answer on the command connection.
 * @return 0 or a positive errno (the daemon's status; EIO when the
 *         connection broke).
 */
static int rcm_call(struct ipc_msg *req, const int *fds, unsigned int nfds, struct ipc_msg *rsp)
{
	int rfds[IPC_MAX_FDS] = { -1, -1 };
	int rc;

	pthread_mutex_lock(&rcm_conn.lock);
	rc = rcm_conn_open();
	if (rc == 0) {
		req->hdr.seq = ++rcm_conn.seq;
		rc = ipc_call(rcm_conn.fd, req, fds, nfds, rsp, rfds);
		if (rc < 0)
			rc = EIO; /* the daemon went away: as a dead device */
	}
	pthread_mutex_unlock(&rcm_conn.lock);
	for (unsigned int i = 0; i < IPC_MAX_FDS; i++)
		if (rfds[i] >= 0)
			close(rfds[i]);
	return rc;
}

static void rcm_req(struct ipc_msg *m, enum ipc_op op)
{
	ipc_req_init(m, op, 0);
	memset(&m->u, 0, ipc_op_desc(op)->req_size);
}

static void rcm_addr_to_ipc(const struct sockaddr *sa, struct ipc_cm_addr *o)
{
	memset(o, 0, sizeof(*o));
	if (sa == NULL)
		return;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)sa;

		o->family = AF_INET;
		o->port = s->sin_port;
		memcpy(o->addr, &s->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)sa;

		o->family = AF_INET6;
		o->port = s->sin6_port;
		o->flowinfo = s->sin6_flowinfo;
		memcpy(o->addr, &s->sin6_addr, 16);
		o->scope_id = s->sin6_scope_id;
	}
}

static void rcm_addr_from_ipc(const struct ipc_cm_addr *a, struct sockaddr_storage *o)
{
	memset(o, 0, sizeof(*o));
	if (a->family == AF_INET) {
		struct sockaddr_in *s = (struct sockaddr_in *)o;

		s->sin_family = AF_INET;
		s->sin_port = a->port;
		memcpy(&s->sin_addr, a->addr, 4);
	} else if (a->family == AF_INET6) {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)o;

		s->sin6_family = AF_INET6;
		s->sin6_port = a->port;
		s->sin6_flowinfo = a->flowinfo;
		memcpy(&s->sin6_addr, a->addr, 16);
		s->sin6_scope_id = a->scope_id;
	}
}

int rcm_tp_open(struct rcm_tp **tpp, int *fd)
{
	struct rcm_tp *tp;
	struct ipc_msg req, rsp;
	int sv[2], rc;

	tp = calloc(1, sizeof(*tp));
	if (tp == NULL)
		return ENOMEM;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		rc = errno;
		free(tp);
		return rc;
	}
	rcm_req(&req, IPC_OP_CM_CREATE_CHANNEL);
	req.u.req_CM_CREATE_CHANNEL.user_handle = (uint64_t)(uintptr_t)tp;
	rc = rcm_call(&req, &sv[1], 1, &rsp);
	close(sv[1]);
	if (rc) {
		close(sv[0]);
		free(tp);
		return rc;
	}
	/* We never write on the channel: the daemon only sends. */
	shutdown(sv[0], SHUT_WR);
	tp->handle = rsp.u.rsp_CM_CREATE_CHANNEL.handle;
	tp->fd = sv[0];
	*fd = sv[0];
	*tpp = tp;
	return 0;
}

void rcm_tp_close(struct rcm_tp *tp)
{
	struct ipc_msg req, rsp;

	rcm_req(&req, IPC_OP_CM_DESTROY_CHANNEL);
	req.u.req_CM_DESTROY_CHANNEL.handle = tp->handle;
	(void)rcm_call(&req, NULL, 0, &rsp);
	close(tp->fd);
	free(tp);
}

int rcm_tp_create_id(struct rcm_tp *tp, uint64_t uid, enum rdma_port_space ps,
		     enum ibv_qp_type qp_type, uint32_t *handle)
{
	struct ipc_msg req, rsp;
	int rc;

	rcm_req(&req, IPC_OP_CM_CREATE_ID);
	req.u.req_CM_CREATE_ID.uid = uid;
	req.u.req_CM_CREATE_ID.channel = tp->handle;
	req.u.req_CM_CREATE_ID.ps = (uint16_t)ps;
	req.u.req_CM_CREATE_ID.qp_type = (uint8_t)qp_type;
	rc = rcm_call(&req, NULL, 0, &rsp);
	if (rc == 0)
		*handle = rsp.u.rsp_CM_CREATE_ID.handle;
	return rc;
}

/* A request that names only an id (and an argument). */
static int rcm_id_call(enum ipc_op op, uint32_t handle, uint32_t arg, struct ipc_msg *rsp)
{
	struct ipc_msg req;

	rcm_req(&req, op);
	req.u.req_CM_DESTROY_ID.id = handle; /* every ipc_cm_id_req op */
	req.u.req_CM_DESTROY_ID.arg = arg;
	return rcm_call(&req, NULL, 0, rsp);
}

int rcm_tp_destroy_id(struct rcm_tp *tp, uint32_t handle, uint32_t *events_reported)
{
	struct ipc_msg rsp;
	int rc;

	(void)tp;
	rc = rcm_id_call(IPC_OP_CM_DESTROY_ID, handle, 0, &rsp);
	*events_reported = rc ? 0 : rsp.u.rsp_CM_DESTROY_ID.events_reported;
	return rc;
}

int rcm_tp_join_mcast(struct rcm_tp *tp, uint32_t handle, const struct sockaddr *addr,
		      uint16_t join_flags, uint32_t *mc_handle)
{
	struct ipc_msg req, rsp;
	int rc;

	(void)tp;
	rcm_req(&req, IPC_OP_CM_JOIN_MCAST);
	req.u.req_CM_JOIN_MCAST.id = handle;
	req.u.req_CM_JOIN_MCAST.join_flags = join_flags;
	rcm_addr_to_ipc(addr, &req.u.req_CM_JOIN_MCAST.addr);
	rc = rcm_call(&req, NULL, 0, &rsp);
	*mc_handle = rc ? 0 : rsp.u.rsp_CM_JOIN_MCAST.handle;
	return rc;
}

int rcm_tp_leave_mcast(struct rcm_tp *tp, uint32_t mc_handle)
{
	struct ipc_msg rsp;

	(void)tp;
	return rcm_id_call(IPC_OP_CM_LEAVE_MCAST, mc_handle, 0, &rsp);
}

int rcm_tp_bind(struct rcm_tp *tp, uint32_t handle, const struct sockaddr *addr, socklen_t len)
{
	struct ipc_msg req, rsp;

	(void)tp;
	(void)len;
	rcm_req(&req, IPC_OP_CM_BIND);
	req.u.req_CM_BIND.id = handle;
	rcm_addr_to_ipc(addr, &req.u.req_CM_BIND.addr);
	return rcm_call(&req, NULL, 0, &rsp);
}

int rcm_tp_resolve_addr(struct rcm_tp *tp, uint32_t handle, const struct sockaddr *src,
			socklen_t src_len, const struct sockaddr *dst, socklen_t dst_len,
			int timeout_ms)
{
	struct ipc_msg req, rsp;

	(void)tp;
	(void)src_len;
	(void)dst_len;
	rcm_req(&req, IPC_OP_CM_RESOLVE_ADDR);
	req.u.req_CM_RESOLVE_ADDR.id = handle;
	req.u.req_CM_RESOLVE_ADDR.timeout_ms = timeout_ms < 0 ? 0 : (uint32_t)timeout_ms;
	rcm_addr_to_ipc(src, &req.u.req_CM_RESOLVE_ADDR.src);
	rcm_addr_to_ipc(dst, &req.u.req_CM_RESOLVE_ADDR.dst);
	return rcm_call(&req, NULL, 0, &rsp);
}

int rcm_tp_resolve_route(struct rcm_tp *tp, uint32_t handle, int timeout_ms)
{
	struct ipc_msg req, rsp;

	(void)tp;
	rcm_req(&req, IPC_OP_CM_RESOLVE_ROUTE);
	req.u.req_CM_RESOLVE_ROUTE.id = handle;
	req.u.req_CM_RESOLVE_ROUTE.timeout_ms = timeout_ms < 0 ? 0 : (uint32_t)timeout_ms;
	return rcm_call(&req, NULL, 0, &rsp);
}

static void rcm_path_from_ipc(const struct ipc_cm_path *a, struct ibv_sa_path_rec *o)
{
	memset(o, 0, sizeof(*o));
	memcpy(o->dgid.raw, a->dgid, 16);
	memcpy(o->sgid.raw, a->sgid, 16);
	o->dlid = a->dlid;
	o->slid = a->slid;
	o->raw_traffic = a->raw_traffic;
	o->flow_label = a->flow_label;
	o->hop_limit = a->hop_limit;
	o->traffic_class = a->traffic_class;
	o->reversible = a->reversible;
	o->numb_path = a->numb_path;
	o->pkey = a->pkey;
	o->sl = a->sl;
	o->mtu_selector = a->mtu_selector;
	o->mtu = a->mtu;
	o->rate_selector = a->rate_selector;
	o->rate = a->rate;
	o->packet_life_time_selector = a->packet_life_time_selector;
	o->packet_life_time = a->packet_life_time;
	o->preference = a->preference;
}

int rcm_tp_query_route(struct rcm_tp *tp, uint32_t handle, struct rcm_route_info *ri)
{
	struct ipc_msg rsp;
	const struct ipc_cm_query_rsp *q = &rsp.u.rsp_CM_QUERY;
	int rc;

	(void)tp;
	rc = rcm_id_call(IPC_OP_CM_QUERY, handle, 0, &rsp);
	if (rc)
		return rc;
	rcm_addr_from_ipc(&q->src, &ri->src);
	rcm_addr_from_ipc(&q->dst, &ri->dst);
	memcpy(ri->sgid.raw, q->sgid, 16);
	memcpy(ri->dgid.raw, q->dgid, 16);
	ri->pkey = q->pkey;
	ri->node_guid = q->node_guid;
	ri->port_num = q->port_num;
	ri->num_paths = q->num_paths ? 1 : 0;
	if (q->num_paths)
		rcm_path_from_ipc(&q->path, &ri->path);
	return 0;
}

int rcm_tp_listen(struct rcm_tp *tp, uint32_t handle, int backlog)
{
	struct ipc_msg req, rsp;

	(void)tp;
	rcm_req(&req, IPC_OP_CM_LISTEN);
	req.u.req_CM_LISTEN.id = handle;
	req.u.req_CM_LISTEN.backlog = backlog < 0 ? 0 : (uint32_t)backlog;
	return rcm_call(&req, NULL, 0, &rsp);
}

static void rcm_conn_to_ipc(const struct rcm_conn *c, struct ipc_cm_conn_param *o)
{
	memset(o, 0, sizeof(*o));
	o->qp_num = c->qp_num;
	o->qkey = c->qkey;
	memcpy(o->private_data, c->private_data, c->private_data_len);
	o->private_data_len = c->private_data_len;
	o->srq = c->srq;
	o->responder_resources = c->responder_resources;
	o->initiator_depth = c->initiator_depth;
	o->flow_control = c->flow_control;
	o->retry_count = c->retry_count;
	o->rnr_retry_count = c->rnr_retry_count;
	o->valid = c->valid;
}

int rcm_tp_connect(struct rcm_tp *tp, uint32_t handle, const struct rcm_conn *c)
{
	struct ipc_msg req, rsp;

	(void)tp;
	rcm_req(&req, IPC_OP_CM_CONNECT);
	req.u.req_CM_CONNECT.id = handle;
	rcm_conn_to_ipc(c, &req.u.req_CM_CONNECT.conn);
	req.u.req_CM_CONNECT.ece.vendor_id = c->ece_vendor_id;
	req.u.req_CM_CONNECT.ece.attr_mod = c->ece_options;
	return rcm_call(&req, NULL, 0, &rsp);
}

int rcm_tp_accept(struct rcm_tp *tp, uint32_t handle, uint64_t uid, const struct rcm_conn *c)
{
	struct ipc_msg req, rsp;

	(void)tp;
	rcm_req(&req, IPC_OP_CM_ACCEPT);
	req.u.req_CM_ACCEPT.id = handle;
	req.u.req_CM_ACCEPT.uid = uid;
	if (c) {
		rcm_conn_to_ipc(c, &req.u.req_CM_ACCEPT.conn);
		req.u.req_CM_ACCEPT.ece.vendor_id = c->ece_vendor_id;
		req.u.req_CM_ACCEPT.ece.attr_mod = c->ece_options;
	}
	return rcm_call(&req, NULL, 0, &rsp);
}

int rcm_tp_reject(struct rcm_tp *tp, uint32_t handle, const void *data, uint8_t len,
		  uint8_t reason)
{
	struct ipc_msg req, rsp;

	(void)tp;
	rcm_req(&req, IPC_OP_CM_REJECT);
	req.u.req_CM_REJECT.id = handle;
	req.u.req_CM_REJECT.reason = reason;
	req.u.req_CM_REJECT.private_data_len = len;
	if (len)
		memcpy(req.u.req_CM_REJECT.private_data, data, len);
	return rcm_call(&req, NULL, 0, &rsp);
}

int rcm_tp_disconnect(struct rcm_tp *tp, uint32_t handle)
{
	struct ipc_msg rsp;

	(void)tp;
	return rcm_id_call(IPC_OP_CM_DISCONNECT, handle, 0, &rsp);
}

int rcm_tp_notify(struct rcm_tp *tp, uint32_t handle, uint32_t event)
{
	struct ipc_msg rsp;

	(void)tp;
	return rcm_id_call(IPC_OP_CM_NOTIFY, handle, event, &rsp);
}

int rcm_tp_init_qp_attr(struct rcm_tp *tp, uint32_t handle, struct ibv_qp_attr *attr, int *mask)
{
	struct ipc_msg rsp;
	int rc;

	(void)tp;
	rc = rcm_id_call(IPC_OP_CM_INIT_QP_ATTR, handle, attr->qp_state, &rsp);
	if (rc)
		return rc;
	ipc_qp_attr_to_ibv(&rsp.u.rsp_CM_INIT_QP_ATTR.attr, attr);
	*mask = (int)rsp.u.rsp_CM_INIT_QP_ATTR.mask;
	return 0;
}

int rcm_tp_set_option(struct rcm_tp *tp, uint32_t handle, int level, int optname,
		      const void *optval, size_t optlen)
{
	struct ipc_msg req, rsp;

	(void)tp;
	if (optlen > IPC_CM_OPTVAL_MAX)
		return EINVAL;
	rcm_req(&req, IPC_OP_CM_SET_OPTION);
	req.u.req_CM_SET_OPTION.id = handle;
	req.u.req_CM_SET_OPTION.level = (uint32_t)level;
	req.u.req_CM_SET_OPTION.optname = (uint32_t)optname;
	req.u.req_CM_SET_OPTION.optlen = (uint32_t)optlen;
	memcpy(req.u.req_CM_SET_OPTION.optval, optval, optlen);
	return rcm_call(&req, NULL, 0, &rsp);
}

static int rcm_migrate_call(enum ipc_op op, struct rcm_tp *to, struct rcm_tp *from,
			    uint32_t handle, uint32_t last_seq, struct ipc_msg *rsp)
{
	struct ipc_msg req;

	rcm_req(&req, op);
	req.u.req_CM_MIGRATE_ID.id = handle; /* MIGRATE_COMMIT: the same body */
	req.u.req_CM_MIGRATE_ID.channel = to->handle;
	req.u.req_CM_MIGRATE_ID.from = from->handle;
	req.u.req_CM_MIGRATE_ID.last_seq = last_seq;
	return rcm_call(&req, NULL, 0, rsp);
}

int rcm_tp_migrate(struct rcm_tp *to, struct rcm_tp *from, int from_fd, uint32_t handle,
		   uint32_t last_seq)
{
	struct ipc_msg rsp;
	struct ipc_cm_event e;
	int rc;

	rc = rcm_migrate_call(IPC_OP_CM_MIGRATE_ID, to, from, handle, last_seq, &rsp);
	if (rc != 0 || !rsp.u.rsp_CM_MIGRATE_ID.pending)
		return rc;
	/*
	 * The daemon paused @p from and keeps copies of what it wrote there:
	 * read it dry (it writes nothing more until the commit), and it queues
	 * the id's events on @p to and the others on @p from again, in order.
	 */
	for (;;) {
		ssize_t n = recv(from_fd, &e, sizeof(e), MSG_DONTWAIT | MSG_TRUNC);

		if (n > 0 || (n < 0 && errno == EINTR))
			continue;
		break;
	}
	return rcm_migrate_call(IPC_OP_CM_MIGRATE_COMMIT, to, from, handle, last_seq, &rsp);
}

static void rcm_event_from_ipc(const struct ipc_cm_event *a, struct rcm_tp_event *o)
{
	const struct ipc_cm_conn_param *c = &a->param;

	memset(o, 0, sizeof(*o));
	o->uid = a->uid;
	o->id = a->id;
	o->seq = a->seq;
	o->event = a->event;
	o->status = a->status;
	o->param.qp_num = c->qp_num;
	o->param.qkey = c->qkey;
	o->param.srq = c->srq;
	o->param.responder_resources = c->responder_resources;
	o->param.initiator_depth = c->initiator_depth;
	o->param.flow_control = c->flow_control;
	o->param.retry_count = c->retry_count;
	o->param.rnr_retry_count = c->rnr_retry_count;
	o->param.valid = c->valid;
	o->param.private_data_len = c->private_data_len;
	memcpy(o->param.private_data, c->private_data, c->private_data_len);
	ipc_ah_to_ibv(&a->ud_ah, &o->param.ah_attr);
	o->param.ece_vendor_id = a->ece.vendor_id;
	o->param.ece_options = a->ece.attr_mod;
}

/*
 * The channel socket reached end of file. The daemon closes its end when
 * the channel is destroyed (rdma_destroy_event_channel, perhaps from
 * another thread while this one reads: the kernel's rdma_cm fd would leave
 * such a reader blocked) or when it goes away. Tell the two apart by the
 * command connection: @return EIO once the daemon is gone; EAGAIN for a
 * non-blocking fd while it lives; else wait (for ever if it lives on).
 */
static int rcm_channel_eof(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	struct pollfd p = { .fd = rcm_conn.fd, .events = POLLRDHUP };

	if (p.fd < 0)
		return EIO;
	for (;;) {
		int n = poll(&p, 1, (fl >= 0 && (fl & O_NONBLOCK)) ? 0 : -1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0)
			return EAGAIN;
		return EIO;
	}
}

int rcm_tp_wait_event(int fd)
{
	struct ipc_cm_event e;

	for (;;) {
		ssize_t n = recv(fd, &e, sizeof(e), MSG_PEEK | MSG_TRUNC);

		if (n > 0)
			return 0;
		if (n == 0)
			return rcm_channel_eof(fd);
		if (errno != EINTR)
			return errno;
	}
}

int rcm_tp_get_event(int fd, struct rcm_tp_event *ev)
{
	struct ipc_cm_event e;
	ssize_t n;

	for (;;) {
		n = recv(fd, &e, sizeof(e), MSG_TRUNC | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EWOULDBLOCK ? EAGAIN : errno;
		}
		if (n == 0)
			return EPIPE;
		if ((size_t)n != sizeof(e))
			continue; /* not an event record: ignore it */
		rcm_event_from_ipc(&e, ev);
		return 0;
	}
}
