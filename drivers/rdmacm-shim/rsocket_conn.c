/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rsockets: the endpoint (CQ with its channel, the RC QP, the send,
 * receive and target-SGL buffers) and the connection exchange over our
 * rdma_cm: the active side's resolve/route/connect steps (non-blocking
 * when the socket is: each step is started, then completed from the
 * id's event channel on a later call), the passive side's accept, and
 * the conn data both carry (rsocket_wire.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rcm.h"
#include "rsocket.h"

#define RSK_RESOLVE_MS 2000
#define RSK_RETRIES 6

static void *rsk_map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static size_t rsk_page_round(size_t n)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	return (n + pg - 1) / pg * pg;
}

static void rsk_fit_queues(struct rsk *rs)
{
	struct rcm_id *p = rcm_id(rs->cm);
	uint32_t max = RSK_QP_MAX;

	if (p->dev != NULL && p->dev->max_qpsize && p->dev->max_qpsize < max)
		max = p->dev->max_qpsize;
	if (rs->sq_size > max)
		rs->sq_size = (uint16_t)max;
	if (rs->sq_size < RSK_QP_MIN)
		rs->sq_size = RSK_QP_MIN;
	if (rs->rq_size > max)
		rs->rq_size = (uint16_t)max;
	if (rs->rq_size < RSK_QP_MIN)
		rs->rq_size = RSK_QP_MIN;
}

static int rsk_create_cq(struct rsk *rs)
{
	struct ibv_context *verbs = rs->cm->verbs;

	rs->cch = ibv_create_comp_channel(verbs);
	if (rs->cch == NULL)
		return -1;
	/* waits poll(2) the fd; the read after a wake must never block */
	if (fcntl(rs->cch->fd, F_SETFL, fcntl(rs->cch->fd, F_GETFL) | O_NONBLOCK))
		return -1;
	rs->cq = ibv_create_cq(verbs, rs->sq_size + rs->rq_size, rs, rs->cch, 0);
	if (rs->cq == NULL)
		return -1;
	rsk_arm(rs);
	return 0;
}

static int rsk_create_qp(struct rsk *rs)
{
	struct ibv_qp_init_attr qa;

	memset(&qa, 0, sizeof(qa));
	qa.qp_context = rs;
	qa.send_cq = rs->cq;
	qa.recv_cq = rs->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.sq_sig_all = 1;
	qa.cap.max_send_wr = rs->sq_size;
	qa.cap.max_recv_wr = rs->rq_size;
	qa.cap.max_send_sge = 2;
	qa.cap.max_recv_sge = 1;
	qa.cap.max_inline_data = rs->sq_inline;
	if (rdma_create_qp(rs->cm, NULL, &qa))
		return -1;
	rs->sq_inline = qa.cap.max_inline_data;
	return 0;
}

static struct ibv_mr *rsk_reg(struct rsk *rs, void *buf, size_t len, bool remote)
{
	int access = IBV_ACCESS_LOCAL_WRITE | (remote ? IBV_ACCESS_REMOTE_WRITE : 0);

	return ibv_reg_mr(rs->cm->qp->pd, buf, len, access);
}

static int rsk_create_bufs(struct rsk *rs)
{
	/* the send ring, then one 16-byte slot per control message in flight */
	rs->sbuf_alloc = rsk_page_round(rs->sbuf_size + RSK_CTRL_SLOTS * sizeof(struct rsk_sge));
	rs->rbuf_alloc = rsk_page_round(rs->rbuf_size);
	size_t tlen = RSK_SGL_SIZE * sizeof(struct rsk_sge) + rs->iomap_size * sizeof(struct rsk_iomap);

	rs->target_alloc = rsk_page_round(tlen);
	rs->sbuf = rsk_map(rs->sbuf_alloc);
	rs->rbuf = rsk_map(rs->rbuf_alloc);
	rs->target = rsk_map(rs->target_alloc);
	rs->rqueue = calloc(rs->rq_size + 1u, sizeof(*rs->rqueue));
	if (rs->sbuf == NULL || rs->rbuf == NULL || rs->target == NULL || rs->rqueue == NULL)
		return rcm_err(ENOMEM);
	rs->smr = rsk_reg(rs, rs->sbuf, rs->sbuf_alloc, false);
	rs->rmr = rsk_reg(rs, rs->rbuf, rs->rbuf_size, true);
	rs->tmr = rsk_reg(rs, rs->target, tlen, true);
	rs->target_iomap = (struct rsk_iomap *)(rs->target + RSK_SGL_SIZE);
	if (rs->smr == NULL || rs->rmr == NULL || rs->tmr == NULL)
		return -1;
	rsk_rx_init(&rs->rx, rs->rq_size, rs->rbuf_size, rs->rqueue);
	rs->rx.iomap_size = rs->iomap_size;
	rs->sbuf_avail = rs->sbuf_size;
	rs->ctrl_max_seqno = RSK_CTRL_SLOTS;
	rs->sqe_avail = rs->sq_size - RSK_CTRL_SLOTS;
	return 0;
}

static int rsk_post_recvs(struct rsk *rs)
{
	struct ibv_recv_wr wr = { .wr_id = UINT64_C(1) << 63 }, *bad;

	/* messages are writes with immediate: the receive takes no buffer */
	for (uint32_t i = 0; i < rs->rq_size; i++)
		if (ibv_post_recv(rs->cm->qp, &wr, &bad))
			return -1;
	return 0;
}

int rsk_create_ep(struct rsk *rs)
{
	rsk_fit_queues(rs);
	if (rsk_create_cq(rs) || rsk_create_qp(rs) || rsk_create_bufs(rs) || rsk_post_recvs(rs))
		return -1;
	return 0;
}

static void rsk_conn_data(struct rsk *rs, struct rsk_conn_data *cd)
{
	struct rsk_sge tsgl = { .addr = (uintptr_t)rs->target,
				.key = rs->tmr->rkey,
				.length = RSK_SGL_SIZE };
	struct rsk_sge buf = { .addr = (uintptr_t)rs->rbuf,
			       .key = rs->rmr->rkey,
			       .length = rs->rbuf_size / 2 };

	rsk_conn_data_build(cd, rs->rq_size, rs->iomap_size, &tsgl, &buf);
}

/* Take the peer's conn data: its first buffer is our first target. */
static int rsk_save_peer(struct rsk *rs, const void *pd, size_t len)
{
	if (rsk_conn_data_parse(pd, len, &rs->peer) != RSK_OK)
		return rcm_err(EPROTO);
	if (rs->peer.iomap_size > RSK_IOMAP_MAX)
		rs->peer.iomap_size = RSK_IOMAP_MAX;
	rs->target[0] = rs->peer.data_buf;
	rs->target_idx = 0;
	rs->remote_sge = 1 % rs->peer.target_sgl.length;
	rs->sseq_comp = rs->peer.credits;
	return 0;
}

/* Connected: the cm channel only carries DISCONNECTED from now on, read in passing. */
static void rsk_established(struct rsk *rs)
{
	int fl = fcntl(rs->fd, F_GETFL);

	if (rs->cm->event != NULL) {
		rdma_ack_cm_event(rs->cm->event);
		rs->cm->event = NULL;
	}
	if (fl >= 0)
		fcntl(rs->fd, F_SETFL, fl | O_NONBLOCK);
	rs->state = RSK_RDWR;
	rs->phase = RSK_PH_NONE;
}

/* Continue a step that returned EAGAIN: its event, read without blocking if non-blocking. */
static int rsk_step_complete(struct rsk *rs)
{
	return rcm_complete(rcm_id(rs->cm));
}

static bool rsk_again(void)
{
	return errno == EAGAIN || errno == EWOULDBLOCK;
}

static int rsk_connect_send(struct rsk *rs)
{
	struct rdma_conn_param param;
	struct rsk_conn_data cd;

	if (rs->cm->qp == NULL && rsk_create_ep(rs))
		return -1;
	rsk_conn_data(rs, &cd);
	memset(&param, 0, sizeof(param));
	param.private_data = &cd;
	param.private_data_len = sizeof(cd);
	param.flow_control = 1;
	param.retry_count = 7;
	param.rnr_retry_count = 7; /* the protocol leans on RNR retries (docs/rsocket) */
	rs->phase = RSK_PH_CONNECT;
	return rdma_connect(rs->cm, &param);
}

static int rsk_connected(struct rsk *rs)
{
	const struct rdma_conn_param *c = &rs->cm->event->param.conn;

	if (rsk_save_peer(rs, c->private_data, c->private_data_len))
		return -1;
	rsk_established(rs);
	return 0;
}

/* One step of the active side; @return 0 (go on), -1 with errno. */
static int rsk_connect_step(struct rsk *rs)
{
	int to = RSK_RESOLVE_MS;

	switch (rs->phase) {
	case RSK_PH_NONE:
		rs->phase = RSK_PH_RESOLVE_ADDR;
		return rdma_resolve_addr(rs->cm, NULL, (struct sockaddr *)&rs->dst, to);
	case RSK_PH_RESOLVE_ADDR:
		/* RDMA_ROUTE (a path from rdma_getaddrinfo) is not needed on RoCE: resolve it */
		rs->phase = RSK_PH_RESOLVE_ROUTE;
		return rdma_resolve_route(rs->cm, to);
	case RSK_PH_RESOLVE_ROUTE:
		return rsk_connect_send(rs);
	case RSK_PH_CONNECT:
		return rsk_connected(rs);
	default:
		return rcm_err(EINVAL);
	}
}

static void rsk_connect_failed(struct rsk *rs)
{
	rs->err = errno;
	rs->state = RSK_CONNECT_ERROR;
	rs->phase = RSK_PH_NONE;
}

int rsk_do_connect(struct rsk *rs)
{
	bool pending = rs->phase != RSK_PH_NONE;

	if (rs->state & RSK_CONNECTED)
		return 0;
	if (rs->state == RSK_CONNECT_ERROR || (rs->state & (RSK_DISCONNECTED | RSK_ERROR)))
		return rcm_err(ENOTCONN);
	if (!(rs->state & RSK_OPENING))
		return rcm_err(EINVAL);
	if (rs->phase == RSK_PH_NONE)
		fcntl(rs->fd, F_SETFL,
		      (fcntl(rs->fd, F_GETFL) & ~O_NONBLOCK) | (rs->fs_flags & O_NONBLOCK));
	while (!(rs->state & RSK_CONNECTED)) {
		/* a step started earlier that returned EAGAIN: read its event first */
		int rc = pending ? rsk_step_complete(rs) : 0;

		pending = false;
		if (rc == 0 && rs->phase == RSK_PH_ACCEPT) {
			rsk_established(rs);
			break;
		}
		if (rc == 0)
			rc = rsk_connect_step(rs);
		if (rc == 0)
			continue; /* done at once (blocking): its event is on the id */
		if (rsk_again())
			return rcm_err(EINPROGRESS);
		if (errno == ETIMEDOUT && rs->retries++ < RSK_RETRIES &&
		    (rs->phase == RSK_PH_RESOLVE_ADDR || rs->phase == RSK_PH_RESOLVE_ROUTE)) {
			rs->phase = rs->phase == RSK_PH_RESOLVE_ADDR ? RSK_PH_NONE : RSK_PH_RESOLVE_ADDR;
			continue;
		}
		rsk_connect_failed(rs);
		return -1;
	}
	return 0;
}

void rsk_cm_events(struct rsk *rs)
{
	struct rdma_cm_event *ev;

	while (rdma_get_cm_event(rs->cm->channel, &ev) == 0) {
		if (ev->event == RDMA_CM_EVENT_DISCONNECTED && (rs->state & RSK_CONNECTED))
			rs->state = (rs->state & ~(uint32_t)RSK_RDWR) | RSK_DISCONNECTED;
		rdma_ack_cm_event(ev);
	}
}

/* The passive side of one request taken from the listener: endpoint, REP. */
static int rsk_accept_req(struct rsk *ls, struct rsk *rs)
{
	struct rdma_conn_param param;
	struct rsk_conn_data cd;
	const struct rdma_conn_param *req = &rs->cm->event->param.conn;

	rs->state = RSK_OPENING;
	rs->phase = RSK_PH_ACCEPT;
	if (rsk_create_ep(rs) || rsk_save_peer(rs, req->private_data, req->private_data_len))
		return -1;
	rsk_conn_data(rs, &cd);
	param = *req;
	param.private_data = &cd;
	param.private_data_len = sizeof(cd);
	param.srq = 0;
	param.qp_num = rs->cm->qp->qp_num;
	/* a non-blocking listener's new socket finishes the accept in later calls */
	if (ls->fs_flags & O_NONBLOCK)
		fcntl(rs->fd, F_SETFL, fcntl(rs->fd, F_GETFL) | O_NONBLOCK);
	if (rdma_accept(rs->cm, &param) == 0)
		rsk_established(rs);
	else if (!rsk_again())
		return -1;
	return 0;
}

struct rsk *rsk_accept_one(struct rsk *ls)
{
	for (;;) {
		struct rdma_cm_id *id;
		struct rsk *rs;

		if (rdma_get_request(ls->cm, &id))
			return NULL; /* EAGAIN on a non-blocking listener */
		rs = rsk_alloc(ls, ls->domain);
		if (rs == NULL) {
			rdma_reject(id, NULL, 0);
			rdma_destroy_id(id);
			errno = ENOMEM;
			return NULL;
		}
		rs->cm = id;
		id->context = rs;
		rs->fd = id->channel->fd;
		if (rsk_accept_req(ls, rs) == 0 && rsk_insert(rs) == 0)
			return rs;
		/* a request we cannot serve (bad conn data, no memory): refused, take the next */
		if (!(rs->state & RSK_CONNECTED) && rs->cm->event != NULL)
			rdma_reject(id, NULL, 0);
		rsk_free(rs);
	}
}
