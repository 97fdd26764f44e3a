/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs shim: completion channels and async events.
 *
 * A completion channel is the reading end of a socket pair the daemon made
 * (it keeps the other end and sends with MSG_DONTWAIT, so no application can
 * make it block). When a CQE
 * lands in an armed CQ, the engine disarms the CQ and the daemon bumps the
 * CQ's notify_count and sends one byte (ipc_cq_signal()).
 * ibv_get_cq_event takes one byte and finds the CQ whose notify_count
 * moved, so poll(2) on channel->fd and get_cq_event agree.
 *
 * Async events arrive as ipc_async_event datagrams on context->async_fd.
 * When the daemon goes away the socket reads EOF, which is reported once as
 * IBV_EVENT_DEVICE_FATAL; a thread asleep in ibv_get_cq_event wakes with EIO
 * (and CQ polls fail with EIO, cq.c), so nobody waits forever for it.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "shim.h"

SHIM_EXPORT struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	struct shim_channel *ch = calloc(1, sizeof(*ch));
	struct ipc_msg req, rsp;
	int rfds[IPC_MAX_FDS] = { -1, -1 }, efd, rc;

	if (ch == NULL)
		return shim_null(ENOMEM);
	shim_req(&req, IPC_OP_CREATE_CHANNEL);
	req.u.req_CREATE_CHANNEL.user_handle = (uintptr_t)ch;
	rc = shim_rpc(shim_ctx(context), &req, NULL, 0, &rsp, rfds);
	efd = rfds[0];
	if (rc == 0 && efd < 0)
		rc = EPROTO;
	if (rc) {
		if (efd >= 0)
			close(efd);
		free(ch);
		return shim_null(rc);
	}
	pthread_mutex_init(&ch->lock, NULL);
	ch->handle = rsp.u.rsp_CREATE_CHANNEL.handle;
	ch->ch.context = context;
	ch->ch.fd = efd;
	ch->ch.refcnt = 0;
	return &ch->ch;
}

SHIM_EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	struct shim_channel *ch = (struct shim_channel *)channel;
	struct ipc_msg req, rsp;
	int rc;

	pthread_mutex_lock(&ch->lock);
	rc = channel->refcnt ? EBUSY : 0;
	pthread_mutex_unlock(&ch->lock);
	if (rc)
		return shim_ret(rc);
	shim_req(&req, IPC_OP_DESTROY_CHANNEL);
	req.u.req_DESTROY_CHANNEL.handle = ch->handle;
	rc = shim_destroy_rc(channel->context,
			     shim_rpc(shim_ctx(channel->context), &req, NULL, 0, &rsp, NULL));
	if (rc)
		return shim_ret(rc);
	close(channel->fd);
	pthread_mutex_destroy(&ch->lock);
	free(ch);
	return 0;
}

void shim_channel_attach(struct shim_channel *ch, struct shim_cq *cq)
{
	pthread_mutex_lock(&ch->lock);
	cq->notify_seen = __atomic_load_n(&cq->ctrl->notify_count, __ATOMIC_ACQUIRE);
	cq->ch_next = ch->cqs;
	ch->cqs = cq;
	ch->ch.refcnt++;
	pthread_mutex_unlock(&ch->lock);
}

void shim_channel_detach(struct shim_channel *ch, struct shim_cq *cq)
{
	pthread_mutex_lock(&ch->lock);
	for (struct shim_cq **pp = &ch->cqs; *pp; pp = &(*pp)->ch_next) {
		if (*pp == cq) {
			*pp = cq->ch_next;
			ch->ch.refcnt--;
			break;
		}
	}
	pthread_mutex_unlock(&ch->lock);
}

/* A CQ of @p ch with an undelivered notification, taken; NULL if none (ch->lock held). */
static struct shim_cq *shim_channel_take(struct shim_channel *ch)
{
	for (struct shim_cq *cq = ch->cqs; cq; cq = cq->ch_next) {
		uint32_t n = __atomic_load_n(&cq->ctrl->notify_count, __ATOMIC_ACQUIRE);

		if (n != cq->notify_seen) {
			cq->notify_seen++;
			return cq;
		}
	}
	return NULL;
}

/*
 * Before a blocking read of the channel: sleep until it is readable or the
 * daemon hangs up (it would never be written again). @return false if the
 * daemon is gone and no event is pending (errno EIO, as the requests of the
 * disassociated device); true to read (a non-blocking fd: at once).
 */
static bool shim_channel_wait(struct ibv_comp_channel *channel)
{
	struct shim_context *ctx = shim_ctx(channel->context);
	/* POLLRDHUP only: a response to another thread's request is not ours to see */
	struct pollfd p[2] = { { .fd = channel->fd, .events = POLLIN },
			       { .fd = channel->context->cmd_fd, .events = POLLRDHUP } };
	int fl = fcntl(channel->fd, F_GETFL);

	if (fl < 0 || (fl & O_NONBLOCK))
		return true;
	for (;;) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return true; /* the read reports it */
		}
		if (p[0].revents != 0)
			return true;
		if (p[1].revents & (POLLHUP | POLLRDHUP | POLLERR)) {
			ctx->dead = true;
			errno = EIO;
			return false;
		}
	}
}

/*
 * The channel carries one byte per notification, each delivered
 * event takes one, so poll(2) on channel->fd says
 * readable exactly while an event is pending. The read blocks unless the
 * application made the fd non-blocking (then -1/EAGAIN, as rdma-core); a
 * blocking call ends with -1/EIO when the daemon goes away.
 */
SHIM_EXPORT int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq,
				 void **cq_context)
{
	struct shim_channel *ch = (struct shim_channel *)channel;
	struct shim_cq *found;
	uint8_t v;

	for (;;) {
		if (!shim_channel_wait(channel))
			return -1;
		ssize_t n = read(channel->fd, &v, sizeof(v));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n == 0) {
			/* The daemon closed its end: it is gone, nothing will come. */
			shim_ctx(channel->context)->dead = true;
			return shim_minus1(EIO);
		}
		/* notify_count was bumped (release) before the byte we consumed. */
		pthread_mutex_lock(&ch->lock);
		found = shim_channel_take(ch);
		if (found) {
			pthread_mutex_lock(&found->cq.mutex);
			found->events_delivered++;
			pthread_mutex_unlock(&found->cq.mutex);
		}
		pthread_mutex_unlock(&ch->lock);
		if (found) {
			*cq = ibv_cq_ex_to_cq(&found->cq);
			*cq_context = found->cq.cq_context;
			return 0;
		}
		/* A notification of a CQ destroyed meanwhile: wait for the next one. */
	}
}

/* ---- async events ---- */

void shim_live_add(struct ibv_context *context, void *obj)
{
	struct shim_context *ctx = shim_ctx(context);

	pthread_mutex_lock(&ctx->live_lock);
	if (ctx->nlive == ctx->live_cap) {
		uint32_t cap = ctx->live_cap ? 2 * ctx->live_cap : 16;
		void **v = realloc(ctx->live, cap * sizeof(*v));

		if (v == NULL) {
			pthread_mutex_unlock(&ctx->live_lock);
			return;
		}
		ctx->live = v;
		ctx->live_cap = cap;
	}
	ctx->live[ctx->nlive++] = obj;
	pthread_mutex_unlock(&ctx->live_lock);
}

/* The read-event counter of live @p obj (ctx->live_lock held), or NULL. */
static uint32_t *shim_live_counter(struct shim_context *ctx, enum ipc_obj_kind kind, void *obj)
{
	uint32_t i;

	for (i = 0; i < ctx->nlive && ctx->live[i] != obj; i++)
		;
	if (i == ctx->nlive)
		return NULL;
	switch (kind) {
	case IPC_OBJ_QP: return &((struct shim_qp *)obj)->async_events;
	case IPC_OBJ_CQ: return &((struct shim_cq *)obj)->async_events;
	case IPC_OBJ_SRQ: return &((struct shim_srq *)obj)->async_events;
	default: return NULL;
	}
}

uint32_t shim_live_del(struct ibv_context *context, void *obj, const uint32_t *events)
{
	struct shim_context *ctx = shim_ctx(context);
	uint32_t n;

	pthread_mutex_lock(&ctx->live_lock);
	for (uint32_t i = 0; i < ctx->nlive; i++) {
		if (ctx->live[i] == obj) {
			ctx->live[i] = ctx->live[--ctx->nlive];
			break;
		}
	}
	n = *events; /* final: nobody counts for it any more */
	pthread_mutex_unlock(&ctx->live_lock);
	return n;
}

/* Count an event the application is about to read; false: its object is gone, drop it. */
static bool shim_event_count(struct ibv_context *context, const struct ipc_async_event *rec)
{
	struct shim_context *ctx = shim_ctx(context);
	uint32_t *events;

	if (rec->kind != IPC_OBJ_QP && rec->kind != IPC_OBJ_CQ && rec->kind != IPC_OBJ_SRQ)
		return true;
	pthread_mutex_lock(&ctx->live_lock);
	events = shim_live_counter(ctx, rec->kind, (void *)(uintptr_t)rec->user_handle);
	if (events != NULL)
		(*events)++;
	pthread_mutex_unlock(&ctx->live_lock);
	return events != NULL;
}

SHIM_EXPORT int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
	struct ipc_async_event rec;
	ssize_t n;

	do {
		n = recv(context->async_fd, &rec, sizeof(rec), 0);
	} while ((n < 0 && errno == EINTR) ||
		 ((size_t)n == sizeof(rec) && !shim_event_count(context, &rec)));
	if (n < 0)
		return -1;
	memset(event, 0, sizeof(*event));
	if (n == 0) {
		/* The daemon is gone: report it; later calls find no device. */
		struct shim_context *ctx = shim_ctx(context);

		pthread_mutex_lock(&context->mutex);
		if (ctx->async_eof) {
			pthread_mutex_unlock(&context->mutex);
			errno = ENODEV;
			return -1;
		}
		ctx->async_eof = true;
		pthread_mutex_unlock(&context->mutex);
		event->event_type = IBV_EVENT_DEVICE_FATAL;
		event->element.port_num = 0;
		return 0;
	}
	if ((size_t)n != sizeof(rec)) {
		errno = EPROTO;
		return -1;
	}
	event->event_type = (enum ibv_event_type)rec.type;
	if (rec.type == IBV_EVENT_DEVICE_FATAL) {
		/* the daemon said it first: its EOF that follows is not a second event */
		struct shim_context *ctx = shim_ctx(context);

		pthread_mutex_lock(&context->mutex);
		ctx->async_eof = true;
		pthread_mutex_unlock(&context->mutex);
	}
	switch (rec.kind) {
	case IPC_OBJ_QP:
		event->element.qp = (struct ibv_qp *)(uintptr_t)rec.user_handle;
		break;
	case IPC_OBJ_CQ:
		event->element.cq = (struct ibv_cq *)(uintptr_t)rec.user_handle;
		break;
	case IPC_OBJ_SRQ:
		event->element.srq = (struct ibv_srq *)(uintptr_t)rec.user_handle;
		break;
	case IPC_OBJ_PORT:
		event->element.port_num = (int)rec.user_handle;
		break;
	default:
		break;
	}
	return 0;
}

SHIM_EXPORT void ibv_ack_async_event(struct ibv_async_event *event)
{
	switch (event->event_type) {
	case IBV_EVENT_CQ_ERR: {
		struct ibv_cq *cq = event->element.cq;

		pthread_mutex_lock(&cq->mutex);
		cq->async_events_completed++;
		pthread_cond_signal(&cq->cond);
		pthread_mutex_unlock(&cq->mutex);
		return;
	}
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED: {
		struct ibv_qp *qp = event->element.qp;

		pthread_mutex_lock(&qp->mutex);
		qp->events_completed++;
		pthread_cond_signal(&qp->cond);
		pthread_mutex_unlock(&qp->mutex);
		return;
	}
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED: {
		struct ibv_srq *srq = event->element.srq;

		pthread_mutex_lock(&srq->mutex);
		srq->events_completed++;
		pthread_cond_signal(&srq->cond);
		pthread_mutex_unlock(&srq->mutex);
		return;
	}
	default:
		return;
	}
}

void shim_wait_async_acks(pthread_mutex_t *m, pthread_cond_t *cv, const uint32_t *acked,
			  uint32_t reported)
{
	/* acks of events the daemon does not count (COMM_EST) may run ahead */
	pthread_mutex_lock(m);
	while (*acked < reported)
		pthread_cond_wait(cv, m);
	pthread_mutex_unlock(m);
}
