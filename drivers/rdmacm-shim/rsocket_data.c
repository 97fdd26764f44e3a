/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rsockets: the data path. Completions (one CQ, every WR signalled),
 * credits and buffer announcements, rsend/rsendmsg/rwrite(v) and
 * rrecv/rrecvmsg/rread(v).
 *
 * Locks: rs->lock guards the state; slock and rlock serialise senders
 * and receivers. A blocking call sleeps in poll(2) on the CQ channel and
 * the cm channel holding wait_lock (taken before lock), one thread at a
 * time, and lets it go after every wake so that a sender and a receiver
 * of one socket both make progress (the receiver's data may be what frees
 * the sender's credits).
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

#include <rdma/rsocket.h>

#include "rcm.h"
#include "rsocket.h"

#define RSK_WR_RECV (UINT64_C(1) << 63)
#define RSK_POLL_BATCH 16

/* ---- posting ---- */

int rsk_post_write(struct rsk *rs, struct ibv_sge *sg, int nsg, uint32_t msg, bool imm, int flags,
		   uint64_t addr, uint32_t rkey)
{
	struct ibv_send_wr wr, *bad;
	int rc;

	memset(&wr, 0, sizeof(wr));
	/* the completion tells what was sent: the message itself */
	wr.wr_id = msg;
	wr.sg_list = sg;
	wr.num_sge = nsg;
	wr.opcode = imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
	wr.send_flags = (unsigned int)flags;
	if (imm)
		wr.imm_data = htobe32(msg);
	wr.wr.rdma.remote_addr = addr;
	wr.wr.rdma.rkey = rkey;
	rc = ibv_post_send(rs->cm->qp, &wr, &bad);
	return rc ? rcm_err(rc) : 0;
}

static int rsk_post_write_imm(struct rsk *rs, struct ibv_sge *sg, int nsg, uint32_t msg,
			      int flags, uint64_t addr, uint32_t rkey)
{
	return rsk_post_write(rs, sg, nsg, msg, true, flags, addr, rkey);
}

void rsk_arm(struct rsk *rs)
{
	if (!rs->cq_armed && ibv_req_notify_cq(rs->cq, 0) == 0)
		rs->cq_armed = true;
}

void rsk_drain_cq_events(struct rsk *rs)
{
	struct ibv_cq *cq;
	void *ctx;

	while (rs->cch != NULL && ibv_get_cq_event(rs->cch, &cq, &ctx) == 0) {
		rs->cq_armed = false;
		if (++rs->unacked_events >= 64u) {
			ibv_ack_cq_events(rs->cq, rs->unacked_events);
			rs->unacked_events = 0;
		}
	}
}

static bool rsk_ctrl_avail(const struct rsk *rs)
{
	return rs->ctrl_seqno != rs->ctrl_max_seqno;
}

int rsk_send_ctrl(struct rsk *rs, enum rsk_ctrl ctrl)
{
	rs->ctrl_seqno++;
	/* a zero-length write: only the immediate matters, the address is not used */
	return rsk_post_write_imm(rs, NULL, 0, rsk_msg(RSK_OP_CTRL, ctrl), 0,
				  rs->peer.target_sgl.addr, rs->peer.target_sgl.key);
}

static struct rsk_sge rsk_sge_for_peer(const struct rsk *rs, uint32_t off)
{
	struct rsk_sge s = { .addr = (uintptr_t)(rs->rbuf + off),
			     .key = rs->rmr->rkey,
			     .length = rs->rbuf_size / 2 };

	/* written in the reader's byte order */
	if (rs->peer.swap) {
		s.addr = __builtin_bswap64(s.addr);
		s.key = __builtin_bswap32(s.key);
		s.length = __builtin_bswap32(s.length);
	}
	return s;
}

/* An SGL message: credits, and the next free half of rbuf if there is one. */
static void rsk_send_credits(struct rsk *rs)
{
	uint32_t off, msg;
	struct ibv_sge sg;
	struct rsk_sge s, *slot;
	int flags = 0;

	rs->ctrl_seqno++;
	if (!rsk_rx_take_half(&rs->rx, &off)) {
		msg = rsk_msg(RSK_OP_SGL, rsk_rx_credit_limit(&rs->rx));
		rsk_post_write_imm(rs, NULL, 0, msg, 0, rs->peer.target_sgl.addr,
				   rs->peer.target_sgl.key);
		return;
	}
	msg = rsk_msg(RSK_OP_SGL, rsk_rx_credit_limit(&rs->rx));
	s = rsk_sge_for_peer(rs, off);
	if (rs->sq_inline >= sizeof(s)) {
		sg.addr = (uintptr_t)&s;
		sg.lkey = 0;
		flags = IBV_SEND_INLINE;
	} else {
		slot = (struct rsk_sge *)(rs->sbuf + rs->sbuf_size) +
		       (rs->ctrl_seqno & (RSK_CTRL_SLOTS - 1));
		*slot = s;
		sg.addr = (uintptr_t)slot;
		sg.lkey = rs->smr->lkey;
	}
	sg.length = sizeof(s);
	rsk_post_write_imm(rs, &sg, 1, msg, flags,
			   rs->peer.target_sgl.addr + rs->remote_sge * sizeof(struct rsk_sge),
			   rs->peer.target_sgl.key);
	rs->remote_sge = (rs->remote_sge + 1) % rs->peer.target_sgl.length;
}

static void rsk_update_credits(struct rsk *rs)
{
	if ((rs->state & RSK_CONNECTED) && rsk_ctrl_avail(rs) && rsk_rx_want_credits(&rs->rx))
		rsk_send_credits(rs);
}

/* ---- completions ---- */

/* A peer broke the protocol: the connection fails, the peer sees it go. */
static void rsk_fail(struct rsk *rs, int err)
{
	if (rs->state & RSK_CONNECTED) {
		rs->state = RSK_ERROR;
		rs->err = err;
		rcm_modify_qp_err(rcm_id(rs->cm));
	}
}

static void rsk_ctrl_rx(struct rsk *rs, enum rsk_ctrl c)
{
	if (c == RSK_CTRL_DISCONNECT) {
		rs->state = RSK_DISCONNECTED;
	} else if (c == RSK_CTRL_SHUTDOWN) {
		if (rs->state & RSK_WRITABLE)
			rs->state &= ~(uint32_t)RSK_READABLE;
		else
			rs->state = RSK_DISCONNECTED;
	}
	/* KEEPALIVE: its arrival is all it says */
}

static void rsk_recv_wc(struct rsk *rs, const struct ibv_wc *wc)
{
	struct rsk_rx_result r;

	if (wc->status != IBV_WC_SUCCESS)
		return; /* flushed */
	if (!(wc->wc_flags & IBV_WC_WITH_IMM)) {
		__atomic_fetch_add(&rsk_bad_count[RSK_BAD_msg_no_imm], 1, __ATOMIC_RELAXED);
		rsk_fail(rs, EPROTO);
		return;
	}
	r = rsk_rx_msg(&rs->rx, be32toh(wc->imm_data), rs->sseq_no, rs->peer.credits);
	if (r.bad != RSK_OK) {
		rsk_fail(rs, EPROTO);
		return;
	}
	if (r.has_credits)
		rs->sseq_comp = r.credits;
	if (r.ctrl)
		rsk_ctrl_rx(rs, r.ctrl_msg);
}

static void rsk_send_wc(struct rsk *rs, const struct ibv_wc *wc)
{
	uint32_t msg = (uint32_t)wc->wr_id;

	switch (rsk_msg_op(msg)) {
	case RSK_OP_SGL:
		rs->ctrl_max_seqno++;
		break;
	case RSK_OP_CTRL:
		rs->ctrl_max_seqno++;
		if (rsk_msg_arg(msg) == RSK_CTRL_DISCONNECT)
			rs->state = RSK_DISCONNECTED;
		break;
	case RSK_OP_IOMAP_SGL:
		rs->sqe_avail++;
		rs->sbuf_avail += sizeof(struct rsk_iomap);
		break;
	default: /* DATA and WRITE: the byte count */
		rs->sqe_avail++;
		rs->sbuf_avail += rsk_msg_arg(msg);
		break;
	}
	if (wc->status != IBV_WC_SUCCESS && (rs->state & RSK_CONNECTED)) {
		rs->state = RSK_ERROR;
		rs->err = EIO;
	}
}

/* Apply every completion there is; repost the receives taken. */
static int rsk_poll_cq(struct rsk *rs)
{
	struct ibv_wc wc[RSK_POLL_BATCH];
	uint32_t recvs = 0;
	int n;

	if (rs->cq == NULL)
		return 0;
	while ((n = ibv_poll_cq(rs->cq, RSK_POLL_BATCH, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			if (wc[i].wr_id & RSK_WR_RECV) {
				recvs++;
				rsk_recv_wc(rs, &wc[i]);
			} else {
				rsk_send_wc(rs, &wc[i]);
			}
		}
	}
	if (n < 0 && (rs->state & RSK_CONNECTED)) {
		rs->state = RSK_ERROR;
		rs->err = EIO;
	}
	if (rs->state & RSK_CONNECTED) {
		struct ibv_recv_wr wr = { .wr_id = RSK_WR_RECV }, *bad;

		for (; recvs; recvs--) {
			if (ibv_post_recv(rs->cm->qp, &wr, &bad)) {
				rs->state = RSK_ERROR;
				rs->err = EIO;
				break;
			}
		}
	}
	return 0;
}

/* ---- waiting ---- */

bool rsk_can_send(struct rsk *rs)
{
	volatile struct rsk_sge *t = &rs->target[rs->target_idx];

	return rs->sqe_avail && rs->sbuf_avail >= RSK_SNDLOWAT && rs->sseq_no != rs->sseq_comp &&
	       t->length != 0;
}

bool rsk_test_can_send(struct rsk *rs)
{
	return rsk_can_send(rs) || !(rs->state & RSK_WRITABLE);
}

bool rsk_test_have_data(struct rsk *rs)
{
	return rsk_rx_has_data(&rs->rx) || !(rs->state & RSK_READABLE);
}

bool rsk_test_all_sent(struct rsk *rs)
{
	return (rs->ctrl_max_seqno - rs->ctrl_seqno) + rs->sqe_avail == rs->sq_size ||
	       !(rs->state & RSK_CONNECTED);
}

bool rsk_test_ctrl(struct rsk *rs)
{
	return rsk_ctrl_avail(rs) || !(rs->state & RSK_CONNECTED);
}

bool rsk_test_any(struct rsk *rs)
{
	(void)rs;
	return true;
}

static int64_t rsk_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Sleep until the CQ or the cm channel says something, or @p until_ms
 * (monotonic; 0: no limit) passes (lock held, wait_lock held).
 */
static int rsk_sleep(struct rsk *rs, int64_t until_ms)
{
	struct pollfd p[2] = { { .fd = rs->cch->fd, .events = POLLIN },
			       { .fd = rs->fd, .events = POLLIN } };
	int n, to = -1;

	if (until_ms) {
		int64_t left = until_ms - rsk_now_ms();

		if (left <= 0)
			return rcm_err(ETIMEDOUT);
		to = (int)left;
	}
	pthread_mutex_unlock(&rs->lock);
	n = poll(p, 2, to);
	pthread_mutex_lock(&rs->lock);
	if (n < 0)
		return errno == EINTR ? 0 : -1;
	if (p[0].revents)
		rsk_drain_cq_events(rs);
	if (p[1].revents)
		rsk_cm_events(rs);
	return 0;
}

int rsk_process_until(struct rsk *rs, bool nonblock, rsk_test_fn test, int timeout_ms)
{
	int64_t until = timeout_ms > 0 ? rsk_now_ms() + timeout_ms : 0;
	bool waiting = false;
	int rc = 0;

	for (;;) {
		rsk_update_credits(rs);
		rsk_poll_cq(rs);
		rsk_update_credits(rs);
		if (test(rs))
			break;
		if (nonblock || rs->cq == NULL) {
			rc = rcm_err(EWOULDBLOCK);
			break;
		}
		if (!waiting) {
			/* wait_lock before lock */
			pthread_mutex_unlock(&rs->lock);
			pthread_mutex_lock(&rs->wait_lock);
			pthread_mutex_lock(&rs->lock);
			waiting = true;
			continue;
		}
		if (!rs->cq_armed) {
			rsk_arm(rs);
			continue;
		}
		if (rsk_sleep(rs, until)) {
			rc = -1;
			break;
		}
		/* let another sleeper of this socket see the state first */
		pthread_mutex_unlock(&rs->wait_lock);
		waiting = false;
	}
	if (waiting)
		pthread_mutex_unlock(&rs->wait_lock);
	return rc;
}

int rsk_process(struct rsk *rs, bool nonblock, rsk_test_fn test)
{
	return rsk_process_until(rs, nonblock, test, 0);
}

/* ---- send ---- */

/* The bytes of @p iov from @p *pos on, @p len of them, copied to @p dst. */
static void rsk_iov_copy(uint8_t *dst, const struct iovec *iov, int iovcnt, size_t *pos,
			 size_t len)
{
	size_t skip = *pos;

	*pos += len;
	for (int i = 0; i < iovcnt && len; i++) {
		size_t l = iov[i].iov_len;

		if (skip >= l) {
			skip -= l;
			continue;
		}
		size_t n = l - skip < len ? l - skip : len;

		memcpy(dst, (const uint8_t *)iov[i].iov_base + skip, n);
		dst += n;
		len -= n;
		skip = 0;
	}
}

/* The send ring's bytes at its head as SGEs (1 or 2), the head moved past them. */
static int rsk_ring_sges(struct rsk *rs, uint32_t len, struct ibv_sge sg[2])
{
	uint32_t first = rs->sbuf_size - rs->sbuf_head;
	int nsg = 1;

	if (first > len)
		first = len;
	sg[0] = (struct ibv_sge){ .addr = (uintptr_t)(rs->sbuf + rs->sbuf_head),
				  .length = first,
				  .lkey = rs->smr->lkey };
	if (first < len) {
		sg[1] = (struct ibv_sge){ .addr = (uintptr_t)rs->sbuf,
					  .length = len - first,
					  .lkey = rs->smr->lkey };
		nsg = 2;
	}
	rs->sbuf_head = (rs->sbuf_head + len) % rs->sbuf_size;
	return nsg;
}

/* Write @p len bytes (already in sbuf at sbuf_head, or inline from @p inline_buf). */
static int rsk_write_data(struct rsk *rs, uint32_t len, const void *inline_buf)
{
	volatile struct rsk_sge *t = &rs->target[rs->target_idx];
	struct ibv_sge sg[2];
	uint64_t addr = t->addr;
	uint32_t rkey = t->key;
	int nsg = 1, flags = 0;

	if (inline_buf != NULL) {
		sg[0] = (struct ibv_sge){ .addr = (uintptr_t)inline_buf, .length = len };
		flags = IBV_SEND_INLINE;
	} else {
		nsg = rsk_ring_sges(rs, len, sg);
	}
	rs->sseq_no++;
	rs->sqe_avail--;
	rs->sbuf_avail -= len;
	/* the target entry is ours to update once announced (docs/rsocket) */
	t->addr = addr + len;
	t->length -= len;
	if (t->length == 0)
		rs->target_idx = (rs->target_idx + 1) % RSK_SGL_SIZE;
	return rsk_post_write_imm(rs, sg, nsg, rsk_msg(RSK_OP_DATA, len), flags, addr, rkey);
}

/* Copy @p len bytes of the iov into the send ring at its head (wrapping). */
static void rsk_stage(struct rsk *rs, const struct iovec *iov, int iovcnt, size_t *pos,
		      uint32_t len)
{
	uint32_t first = rs->sbuf_size - rs->sbuf_head;

	if (first > len)
		first = len;
	rsk_iov_copy(rs->sbuf + rs->sbuf_head, iov, iovcnt, pos, first);
	rsk_iov_copy(rs->sbuf, iov, iovcnt, pos, len - first);
}

int rsk_stage_buf(struct rsk *rs, const void *buf, uint32_t len, struct ibv_sge sg[2])
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	size_t pos = 0;

	rsk_stage(rs, &iov, 1, &pos, len);
	return rsk_ring_sges(rs, len, sg);
}

static uint32_t rsk_xfer_size(struct rsk *rs, size_t left, uint32_t *olen)
{
	uint32_t x = left > *olen ? *olen : (uint32_t)left;
	uint32_t tl = rs->target[rs->target_idx].length;

	/* start small, double to RSK_MAX_TRANSFER: the first bytes go out early */
	if (*olen < left && *olen < RSK_MAX_TRANSFER)
		*olen <<= 1;
	if (x > rs->sbuf_avail)
		x = rs->sbuf_avail;
	if (x > tl)
		x = tl;
	return x;
}

int rsk_wait_send(struct rsk *rs, int flags)
{
	if (rsk_can_send(rs))
		return 0;
	if (rsk_process(rs, rsk_nonblocking(rs, flags), rsk_test_can_send))
		return -1;
	if (!(rs->state & RSK_WRITABLE))
		return rcm_err((rs->state & RSK_ERROR) && rs->err ? rs->err : ECONNRESET);
	return 0;
}

static ssize_t rsk_sendv(struct rsk *rs, const struct iovec *iov, int iovcnt, int flags)
{
	size_t len = 0, left, pos = 0;
	uint32_t olen = RSK_OLAP_START;
	int rc = 0;

	for (int i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	left = len;
	while (left) {
		uint32_t x;

		rc = rsk_wait_send(rs, flags);
		if (rc)
			break;
		x = rsk_xfer_size(rs, left, &olen);
		if (iovcnt == 1 && x <= rs->sq_inline) {
			rc = rsk_write_data(rs, x, (const uint8_t *)iov[0].iov_base + pos);
			pos += x;
		} else {
			rsk_stage(rs, iov, iovcnt, &pos, x);
			rc = rsk_write_data(rs, x, NULL);
		}
		if (rc)
			break;
		left -= x;
	}
	return (rc && left == len) ? rc : (ssize_t)(len - left);
}

int rsk_ready(struct rsk *rs)
{
	if (!(rs->state & RSK_OPENING))
		return 0;
	if (rsk_do_connect(rs) == 0)
		return 0;
	if (errno == EINPROGRESS)
		errno = EAGAIN;
	return -1;
}

static ssize_t rsk_send_common(int socket, const struct iovec *iov, int iovcnt, int flags)
{
	struct rsk *rs = rsk_get(socket);
	ssize_t n;

	if (rs == NULL)
		return rcm_err(EBADF);
	if (iovcnt < 0 || (iovcnt > 0 && iov == NULL))
		return rcm_err(EINVAL);
	if (rs->dg != NULL)
		return rsk_dg_sendv(rs, iov, iovcnt, flags, NULL, 0);
	pthread_mutex_lock(&rs->slock);
	pthread_mutex_lock(&rs->lock);
	n = rsk_ready(rs);
	if (n == 0 && !(rs->state & RSK_CONNECTED))
		n = rcm_err(rs->state & RSK_DISCONNECTED ? EPIPE : ENOTCONN);
	if (n == 0 && rs->iomap_pending)
		n = rsk_send_iomaps(rs, flags);
	if (n == 0)
		n = rsk_sendv(rs, iov, iovcnt, flags);
	pthread_mutex_unlock(&rs->lock);
	pthread_mutex_unlock(&rs->slock);
	return n;
}

RCM_EXPORT ssize_t rsend(int socket, const void *buf, size_t len, int flags)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return rsk_send_common(socket, &iov, 1, flags);
}

RCM_EXPORT ssize_t rsendto(int socket, const void *buf, size_t len, int flags,
			   const struct sockaddr *dest_addr, socklen_t addrlen)
{
	struct rsk *rs = rsk_get(socket);
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	if (rs != NULL && rs->dg != NULL)
		return rsk_dg_sendv(rs, &iov, 1, flags, dest_addr, addrlen);
	if (dest_addr != NULL)
		return rcm_err(EISCONN); /* a stream socket: the peer is fixed */
	return rsend(socket, buf, len, flags);
}

RCM_EXPORT ssize_t rsendmsg(int socket, const struct msghdr *msg, int flags)
{
	if (msg == NULL)
		return rcm_err(EFAULT);
	if (msg->msg_control && msg->msg_controllen)
		return rcm_err(ENOTSUP);
	if (msg->msg_name != NULL && rsk_get(socket) != NULL && rsk_get(socket)->dg != NULL)
		return rsk_dg_sendv(rsk_get(socket), msg->msg_iov, (int)msg->msg_iovlen, flags,
				    msg->msg_name, msg->msg_namelen);
	return rsk_send_common(socket, msg->msg_iov, (int)msg->msg_iovlen, flags);
}

RCM_EXPORT ssize_t rwrite(int socket, const void *buf, size_t count)
{
	return rsend(socket, buf, count, 0);
}

RCM_EXPORT ssize_t rwritev(int socket, const struct iovec *iov, int iovcnt)
{
	return rsk_send_common(socket, iov, iovcnt, 0);
}

/* ---- receive ---- */

static ssize_t rsk_recv_locked(struct rsk *rs, uint8_t *buf, size_t len, int flags)
{
	size_t done = 0;
	int rc = 0;

	do {
		if (!rsk_rx_has_data(&rs->rx)) {
			rc = rsk_process(rs, rsk_nonblocking(rs, flags), rsk_test_have_data);
			if (rc)
				break;
		}
		if (!rsk_rx_has_data(&rs->rx)) {
			/* end of stream, or the connection failed */
			if ((rs->state & RSK_ERROR) && done == 0)
				rc = rcm_err(rs->err ? rs->err : ECONNRESET);
			break;
		}
		if (flags & MSG_PEEK) {
			done += rsk_rx_read(&rs->rx, rs->rbuf, buf + done, len - done, true);
			break;
		}
		done += rsk_rx_read(&rs->rx, rs->rbuf, buf + done, len - done, false);
	} while (done < len && (flags & MSG_WAITALL) && (rs->state & RSK_READABLE));
	/* what was read may be announced again now rather than at the next call */
	rsk_update_credits(rs);
	return (rc && done == 0) ? rc : (ssize_t)done;
}

static ssize_t rsk_recv_common(int socket, void *buf, size_t len, int flags)
{
	struct rsk *rs = rsk_get(socket);
	ssize_t n;

	if (rs == NULL)
		return rcm_err(EBADF);
	if (len == 0)
		return 0;
	if (buf == NULL)
		return rcm_err(EFAULT);
	if (rs->dg != NULL)
		return rsk_dg_recv(rs, buf, len, flags, NULL, NULL);
	pthread_mutex_lock(&rs->rlock);
	pthread_mutex_lock(&rs->lock);
	n = rsk_ready(rs);
	if (n == 0 && !(rs->state & (RSK_CONNECTED | RSK_DISCONNECTED | RSK_ERROR)))
		n = rcm_err(ENOTCONN);
	if (n == 0)
		n = rsk_recv_locked(rs, buf, len, flags);
	pthread_mutex_unlock(&rs->lock);
	pthread_mutex_unlock(&rs->rlock);
	return n;
}

RCM_EXPORT ssize_t rrecv(int socket, void *buf, size_t len, int flags)
{
	return rsk_recv_common(socket, buf, len, flags);
}

RCM_EXPORT ssize_t rrecvfrom(int socket, void *buf, size_t len, int flags,
			     struct sockaddr *src_addr, socklen_t *addrlen)
{
	struct rsk *rs = rsk_get(socket);
	ssize_t n;

	if (rs != NULL && rs->dg != NULL)
		return buf == NULL && len ? rcm_err(EFAULT)
					  : rsk_dg_recv(rs, buf, len, flags, src_addr, addrlen);
	n = rrecv(socket, buf, len, flags);
	if (n > 0 && src_addr != NULL && addrlen != NULL)
		rgetpeername(socket, src_addr, addrlen);
	return n;
}

/* Into the first non-empty vector (librdmacm fills the first one only). */
static ssize_t rsk_recvv(int socket, const struct iovec *iov, int iovcnt, int flags)
{
	for (int i = 0; i < iovcnt; i++)
		if (iov[i].iov_len)
			return rsk_recv_common(socket, iov[i].iov_base, iov[i].iov_len, flags);
	return rsk_get(socket) ? 0 : rcm_err(EBADF);
}

RCM_EXPORT ssize_t rrecvmsg(int socket, struct msghdr *msg, int flags)
{
	if (msg == NULL || (msg->msg_iovlen && msg->msg_iov == NULL))
		return rcm_err(EFAULT);
	if (msg->msg_control && msg->msg_controllen)
		return rcm_err(ENOTSUP);
	msg->msg_flags = 0;
	return rsk_recvv(socket, msg->msg_iov, (int)msg->msg_iovlen, flags);
}

RCM_EXPORT ssize_t rread(int socket, void *buf, size_t count)
{
	return rrecv(socket, buf, count, 0);
}

RCM_EXPORT ssize_t rreadv(int socket, const struct iovec *iov, int iovcnt)
{
	if (iovcnt < 0 || (iovcnt > 0 && iov == NULL))
		return rcm_err(EINVAL);
	return rsk_recvv(socket, iov, iovcnt, 0);
}
