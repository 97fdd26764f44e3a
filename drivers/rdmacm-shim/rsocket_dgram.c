/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Datagram rsockets (SOCK_DGRAM): one UD QP per socket on its rdma_cm id
 * (RDMA_PS_UDP), bound to one local RoCE address and a port; every UD
 * message starts with librdmacm's ds header (the sender's address and
 * port: rsocket_dgram_wire.c) and uses Q_Key RDMA_UDP_QKEY, as librdmacm's.
 *
 * Finding a destination's QP: librdmacm asks over a kernel UDP socket on
 * the same address (its udp header exchange). Here the RoCE address is the
 * daemon's, not the kernel's (the kernel has no route to a peer's RoCE
 * address), so we use what the IB CM has for it: SIDR. The socket's id
 * listens on its address and port (the daemon answers SIDR_REQs for that
 * service ID with our QPN and the rdma_cm Q_Key); a new destination is
 * resolved with a SIDR_REQ from a temporary id (rdma_resolve_addr,
 * rdma_resolve_route, rdma_connect), whose answer gives the QPN, the Q_Key
 * and the address vector for the address handle. doc/rdma-cm.md,
 * "Datagram rsockets".
 *
 * Bounds: RSK_DG_MAX_DESTS destinations a socket keeps (more: ENOBUFS,
 * counted as ds_dests); a UD message whose ds header does not parse is
 * counted (ds_hdr) and dropped; RSK_DG_CM_BATCH SIDR requests per pass.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rcm.h"
#include "rsocket.h"

#define RSK_DG_MAX_DESTS 256u
#define RSK_DG_CM_BATCH 32
#define RSK_DG_RESOLVE_MS 2000
#define RSK_DG_SLOT (RSK_DS_GRH + RSK_DS_MSG) /* a receive slot: GRH, ds header, data */

struct rsk_ddest {
	struct rsk_ddest *next;
	struct sockaddr_storage addr;
	struct ibv_ah *ah;
	uint32_t qpn, qkey;
};

struct rsk_dmsg {                       /* a datagram received, not read yet */
	uint32_t slot;
	uint32_t len;                   /* ds header and data */
};

struct rsk_dgram {
	uint32_t sq, rq;                /* slots */
	uint8_t hdr[RSK_DS_HDR6];       /* the ds header of what we send */
	uint32_t hdr_len;
	uint32_t max_msg;               /* header and data: a slot, at most the path MTU */
	struct rsk_ddest *dests;
	uint32_t ndests;
	struct rsk_ddest *conn;         /* rconnect's */
	uint32_t *sfree;                /* free send slots (a stack) */
	uint32_t nsfree;
	struct rsk_dmsg *ring;          /* received, in order: rq entries */
	uint32_t head, count;
	bool ep;                        /* bound, listening, QP and buffers made */
};

static socklen_t rsk_dg_addrlen(const struct sockaddr *a)
{
	return a->sa_family == AF_INET ? sizeof(struct sockaddr_in)
	     : a->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : 0;
}

/* Same family, port and address (librdmacm's ds_compare_addr). */
static bool rsk_dg_same(const struct sockaddr *a, const struct sockaddr *b)
{
	const struct sockaddr_in6 *x6 = (const void *)a, *y6 = (const void *)b;
	const struct sockaddr_in *x4 = (const void *)a, *y4 = (const void *)b;

	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET)
		return x4->sin_port == y4->sin_port && x4->sin_addr.s_addr == y4->sin_addr.s_addr;
	return x6->sin6_port == y6->sin6_port && !memcmp(&x6->sin6_addr, &y6->sin6_addr, 16);
}

static void rsk_dg_set_port(struct sockaddr *a, in_port_t port)
{
	if (a->sa_family == AF_INET)
		((struct sockaddr_in *)a)->sin_port = port;
	else
		((struct sockaddr_in6 *)a)->sin6_port = port;
}

int rsk_dg_open(struct rsk *rs)
{
	rs->dg = calloc(1, sizeof(*rs->dg));
	if (rs->dg == NULL)
		return rcm_err(ENOMEM);
	if (rdma_create_id(NULL, &rs->cm, rs, RDMA_PS_UDP))
		return -1;
	rs->cm->route.addr.src_addr.sa_family = (sa_family_t)rs->domain;
	rs->fd = rs->cm->channel->fd;
	return 0;
}

/* ---- the endpoint ---- */

static uint8_t *rsk_dg_map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static int rsk_dg_post_recv(struct rsk *rs, uint32_t slot)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(rs->rbuf + (size_t)slot * RSK_DG_SLOT),
			       .length = RSK_DG_SLOT, .lkey = rs->rmr->lkey };
	struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sge, .num_sge = 1 }, *bad;

	return rcm_seterrno(ibv_post_recv(rs->cm->qp, &wr, &bad));
}

/* Slots sized from the options as librdmacm's ds_set_qp_size(). */
static int rsk_dg_bufs(struct rsk *rs)
{
	struct rsk_dgram *dg = rs->dg;
	uint32_t sq = rs->sq_size, rq = rs->rq_size;

	if (sq > rs->sbuf_size / RSK_DS_MSG)
		sq = rs->sbuf_size / RSK_DS_MSG;
	if (rq > rs->rbuf_size / RSK_DS_MSG)
		rq = rs->rbuf_size / RSK_DS_MSG;
	dg->sq = sq < 4 ? 4 : sq;
	dg->rq = rq < 4 ? 4 : rq;
	rs->sbuf_alloc = (size_t)dg->sq * RSK_DS_MSG;
	rs->rbuf_alloc = (size_t)dg->rq * RSK_DG_SLOT;
	rs->sbuf = rsk_dg_map(rs->sbuf_alloc);
	rs->rbuf = rsk_dg_map(rs->rbuf_alloc);
	dg->sfree = calloc(dg->sq, sizeof(*dg->sfree));
	dg->ring = calloc(dg->rq, sizeof(*dg->ring));
	if (rs->sbuf == NULL || rs->rbuf == NULL || dg->sfree == NULL || dg->ring == NULL)
		return rcm_err(ENOMEM);
	for (uint32_t i = 0; i < dg->sq; i++)
		dg->sfree[dg->nsfree++] = dg->sq - 1 - i;
	return 0;
}

static int rsk_dg_qp(struct rsk *rs)
{
	struct ibv_context *verbs = rs->cm->verbs;
	struct ibv_qp_init_attr a = { .qp_type = IBV_QPT_UD, .sq_sig_all = 1 };

	rs->cch = ibv_create_comp_channel(verbs);
	if (rs->cch == NULL ||
	    fcntl(rs->cch->fd, F_SETFL, fcntl(rs->cch->fd, F_GETFL) | O_NONBLOCK))
		return -1;
	rs->cq = ibv_create_cq(verbs, (int)(rs->dg->sq + rs->dg->rq), rs, rs->cch, 0);
	if (rs->cq == NULL)
		return -1;
	a.qp_context = rs;
	a.send_cq = a.recv_cq = rs->cq;
	a.cap = (struct ibv_qp_cap){ .max_send_wr = rs->dg->sq, .max_recv_wr = rs->dg->rq,
				     .max_send_sge = 1, .max_recv_sge = 1,
				     .max_inline_data = rs->sq_inline };
	if (rdma_create_qp(rs->cm, NULL, &a))
		return -1;
	rs->sq_inline = a.cap.max_inline_data;
	rs->smr = ibv_reg_mr(rs->cm->pd, rs->sbuf, rs->sbuf_alloc, IBV_ACCESS_LOCAL_WRITE);
	rs->rmr = ibv_reg_mr(rs->cm->pd, rs->rbuf, rs->rbuf_alloc, IBV_ACCESS_LOCAL_WRITE);
	if (rs->smr == NULL || rs->rmr == NULL)
		return -1;
	for (uint32_t i = 0; i < rs->dg->rq; i++)
		if (rsk_dg_post_recv(rs, i))
			return -1;
	rsk_arm(rs);
	return 0;
}

/*
 * A UD message is one packet: a slot (librdmacm's 2048 bytes), or less
 * when the port's MTU is (a UD message is a single packet).
 */
static uint32_t rsk_dg_max_msg(struct rsk *rs)
{
	struct ibv_port_attr pa;
	uint32_t mtu;

	if (ibv_query_port(rs->cm->verbs, rs->cm->port_num, &pa) || pa.active_mtu < IBV_MTU_256)
		return RSK_DS_MSG;
	mtu = 128u << pa.active_mtu;
	return mtu < RSK_DS_MSG ? mtu : RSK_DS_MSG;
}

/*
 * Bound to @p src (port 0: one is picked), listening for SIDR requests,
 * with the QP and its buffers (lock held). Once per socket.
 */
static int rsk_dg_setup(struct rsk *rs, const struct sockaddr *src)
{
	struct rsk_dgram *dg = rs->dg;
	struct sockaddr *local;

	if (dg->ep)
		return 0;
	if (rdma_bind_addr(rs->cm, (struct sockaddr *)src) || rdma_listen(rs->cm, 16))
		return -1;
	if (rs->cm->verbs == NULL)
		return rcm_err(EADDRNOTAVAIL); /* a wildcard: one RoCE address per socket */
	/* requests are read in passing: the channel must never block */
	if (fcntl(rs->fd, F_SETFL, fcntl(rs->fd, F_GETFL) | O_NONBLOCK) || rsk_dg_bufs(rs) ||
	    rsk_dg_qp(rs))
		return -1;
	local = rdma_get_local_addr(rs->cm);
	dg->hdr_len = rsk_ds_hdr_build(dg->hdr, local);
	dg->max_msg = rsk_dg_max_msg(rs);
	dg->ep = true;
	rs->state |= RSK_BOUND | RSK_READABLE | RSK_WRITABLE;
	return 0;
}

/* An unbound socket sending to @p to: bound to the local address its route takes. */
static int rsk_dg_autobind(struct rsk *rs, const struct sockaddr *to)
{
	struct sockaddr_storage src;
	struct rdma_cm_id *id;
	int rc;

	if (rs->dg->ep)
		return 0;
	if (rdma_create_id(NULL, &id, NULL, RDMA_PS_UDP))
		return -1;
	rc = rdma_resolve_addr(id, NULL, (struct sockaddr *)to, RSK_DG_RESOLVE_MS);
	if (rc == 0) {
		memcpy(&src, rdma_get_local_addr(id), rsk_dg_addrlen(rdma_get_local_addr(id)));
		rsk_dg_set_port((struct sockaddr *)&src, 0);
	}
	rdma_destroy_id(id);
	return rc ? rc : rsk_dg_setup(rs, (struct sockaddr *)&src);
}

/* ---- destinations ---- */

/*
 * The QPN, Q_Key and address handle of @p d: a SIDR_REQ to its address
 * and port from a synchronous id (lock held; bounded by the CM's timeouts).
 */
static int rsk_dg_resolve(struct rsk *rs, struct rsk_ddest *d)
{
	struct rdma_conn_param param = { .qp_num = rs->cm->qp->qp_num };
	struct sockaddr_storage src;
	struct rdma_cm_id *id;
	struct rdma_ud_param *ud;
	int rc = -1;

	memcpy(&src, rdma_get_local_addr(rs->cm), rsk_dg_addrlen(rdma_get_local_addr(rs->cm)));
	rsk_dg_set_port((struct sockaddr *)&src, 0);
	if (rdma_create_id(NULL, &id, NULL, RDMA_PS_UDP))
		return -1;
	if (rdma_resolve_addr(id, (struct sockaddr *)&src, (struct sockaddr *)&d->addr,
			      RSK_DG_RESOLVE_MS) ||
	    rdma_resolve_route(id, RSK_DG_RESOLVE_MS) || rdma_connect(id, &param))
		goto out;
	if (id->event == NULL || id->event->event != RDMA_CM_EVENT_ESTABLISHED) {
		errno = EHOSTUNREACH;
		goto out;
	}
	ud = &id->event->param.ud;
	d->ah = ibv_create_ah(rs->cm->pd, &ud->ah_attr);
	if (d->ah == NULL)
		goto out;
	d->qpn = ud->qp_num;
	d->qkey = ud->qkey;
	rc = 0;
out:
	if (rc && errno == 0)
		errno = EHOSTUNREACH;
	{
		int e = errno;

		rdma_destroy_id(id);
		errno = e;
	}
	return rc;
}

/* The destination @p to, resolved when new (librdmacm's ds_get_dest). */
static int rsk_dg_get_dest(struct rsk *rs, const struct sockaddr *to, socklen_t len,
			   struct rsk_ddest **out)
{
	struct rsk_dgram *dg = rs->dg;
	socklen_t need = rsk_dg_addrlen(to);
	struct rsk_ddest *d;

	if (need == 0 || len < need)
		return rcm_err(need == 0 ? EAFNOSUPPORT : EINVAL);
	if (to->sa_family != rs->domain)
		return rcm_err(EAFNOSUPPORT);
	for (d = dg->dests; d != NULL; d = d->next)
		if (rsk_dg_same((const struct sockaddr *)&d->addr, to)) {
			*out = d;
			return 0;
		}
	if (dg->ndests >= RSK_DG_MAX_DESTS) {
		__atomic_fetch_add(&rsk_bad_count[RSK_BAD_ds_dests], 1, __ATOMIC_RELAXED);
		return rcm_err(ENOBUFS);
	}
	if (rsk_dg_autobind(rs, to))
		return -1;
	d = calloc(1, sizeof(*d));
	if (d == NULL)
		return rcm_err(ENOMEM);
	memcpy(&d->addr, to, need);
	if (rsk_dg_resolve(rs, d)) {
		int e = errno;

		free(d);
		return rcm_err(e);
	}
	d->next = dg->dests;
	dg->dests = d;
	dg->ndests++;
	*out = d;
	return 0;
}

/* ---- what arrives: SIDR requests, completions ---- */

/* Answer the SIDR requests waiting on the socket's channel with our QPN (lock held). */
static void rsk_dg_cm_events(struct rsk *rs)
{
	struct rdma_cm_event *ev;

	if (!rs->dg->ep)
		return;
	for (int i = 0; i < RSK_DG_CM_BATCH && rdma_get_cm_event(rs->cm->channel, &ev) == 0; i++) {
		struct rdma_cm_id *id = ev->event == RDMA_CM_EVENT_CONNECT_REQUEST ? ev->id : NULL;
		struct rdma_conn_param param = { .qp_num = rs->cm->qp->qp_num };

		if (id != NULL && rdma_accept(id, &param))
			rdma_reject(id, NULL, 0);
		rdma_ack_cm_event(ev);
		if (id != NULL)
			rdma_destroy_id(id);
	}
}

static void rsk_dg_recv_wc(struct rsk *rs, const struct ibv_wc *wc)
{
	struct rsk_dgram *dg = rs->dg;
	uint32_t slot = (uint32_t)wc->wr_id, hlen;
	const uint8_t *m = rs->rbuf + (size_t)slot * RSK_DG_SLOT + RSK_DS_GRH;

	if (wc->status != IBV_WC_SUCCESS || slot >= dg->rq)
		return; /* flushed: the QP is going */
	if (wc->byte_len < RSK_DS_GRH || dg->count == dg->rq ||
	    rsk_ds_hdr_parse(m, wc->byte_len - RSK_DS_GRH, NULL, &hlen) != RSK_OK) {
		rsk_dg_post_recv(rs, slot);
		return;
	}
	dg->ring[(dg->head + dg->count) % dg->rq] =
		(struct rsk_dmsg){ .slot = slot, .len = wc->byte_len - RSK_DS_GRH };
	dg->count++;
}

static void rsk_dg_poll_cq(struct rsk *rs)
{
	struct ibv_wc wc[16];
	int n;

	if (rs->cq == NULL)
		return;
	while ((n = ibv_poll_cq(rs->cq, 16, wc)) > 0)
		for (int i = 0; i < n; i++) {
			if (wc[i].opcode & IBV_WC_RECV)
				rsk_dg_recv_wc(rs, &wc[i]);
			else if (wc[i].wr_id < rs->dg->sq)
				rs->dg->sfree[rs->dg->nsfree++] = (uint32_t)wc[i].wr_id;
		}
}

/* Everything that may have arrived, without blocking (lock held). */
static void rsk_dg_progress(struct rsk *rs)
{
	rsk_dg_cm_events(rs);
	rsk_dg_poll_cq(rs);
}

int rsk_dg_wait_fds(struct rsk *rs, struct pollfd *out)
{
	int n = 0;

	if (rs->cq != NULL) {
		rsk_arm(rs);
		out[n++] = (struct pollfd){ .fd = rs->cch->fd, .events = POLLIN };
	}
	out[n++] = (struct pollfd){ .fd = rs->fd, .events = POLLIN };
	return n;
}

static bool rsk_dg_have_data(const struct rsk_dgram *dg)
{
	return dg->count > 0;
}

static bool rsk_dg_can_send(const struct rsk_dgram *dg)
{
	return dg->nsfree > 0;
}

/* Until @p ready holds, or (nonblocking) EWOULDBLOCK (lock held). */
static int rsk_dg_wait(struct rsk *rs, int flags, bool (*ready)(const struct rsk_dgram *))
{
	for (;;) {
		struct pollfd p[2];
		int n;

		rsk_dg_progress(rs);
		if (ready(rs->dg))
			return 0;
		if (rsk_nonblocking(rs, flags))
			return rcm_err(EWOULDBLOCK);
		n = rsk_dg_wait_fds(rs, p);
		/* armed: what landed before the arm is seen here */
		rsk_dg_poll_cq(rs);
		if (ready(rs->dg))
			return 0;
		pthread_mutex_unlock(&rs->lock);
		n = poll(p, (nfds_t)n, -1);
		pthread_mutex_lock(&rs->lock);
		if (n < 0 && errno != EINTR)
			return -1;
		rsk_drain_cq_events(rs);
	}
}

short rsk_dg_revents(struct rsk *rs, short events)
{
	short rev = 0;

	rsk_dg_progress(rs);
	if ((events & POLLIN) && rsk_dg_have_data(rs->dg))
		rev |= POLLIN;
	if ((events & POLLOUT) && (!rs->dg->ep || rsk_dg_can_send(rs->dg)))
		rev |= POLLOUT;
	return rev;
}

/* ---- the calls ---- */

int rsk_dg_bind(struct rsk *rs, const struct sockaddr *addr, socklen_t len)
{
	if (rs->dg->ep || len < rsk_dg_addrlen(addr) || rsk_dg_addrlen(addr) == 0)
		return rcm_err(EINVAL);
	return rsk_dg_setup(rs, addr);
}

int rsk_dg_connect(struct rsk *rs, const struct sockaddr *addr, socklen_t len)
{
	return rsk_dg_get_dest(rs, addr, len, &rs->dg->conn);
}

int rsk_dg_peer(struct rsk *rs, struct sockaddr *addr, socklen_t *len)
{
	socklen_t have;

	if (rs->dg->conn == NULL)
		return rcm_err(ENOTCONN);
	if (addr == NULL || len == NULL)
		return rcm_err(EFAULT);
	have = rsk_dg_addrlen((struct sockaddr *)&rs->dg->conn->addr);
	memcpy(addr, &rs->dg->conn->addr, *len < have ? *len : have);
	*len = have;
	return 0;
}

/* Into a send slot, over UD (librdmacm's dsend()); @p len fits a slot. */
static ssize_t rsk_dg_ud_send(struct rsk *rs, struct rsk_ddest *d, const uint8_t *buf, size_t len,
			      int flags)
{
	struct rsk_dgram *dg = rs->dg;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	uint32_t slot;
	uint8_t *m;
	int rc;

	if (!rsk_dg_can_send(dg) && rsk_dg_wait(rs, flags, rsk_dg_can_send))
		return -1;
	slot = dg->sfree[--dg->nsfree];
	m = rs->sbuf + (size_t)slot * RSK_DS_MSG;
	memcpy(m, dg->hdr, dg->hdr_len);
	memcpy(m + dg->hdr_len, buf, len);
	sge = (struct ibv_sge){ .addr = (uintptr_t)m, .length = dg->hdr_len + (uint32_t)len,
				.lkey = rs->smr->lkey };
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = slot;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = sge.length <= rs->sq_inline ? IBV_SEND_INLINE : 0;
	wr.wr.ud.ah = d->ah;
	wr.wr.ud.remote_qpn = d->qpn;
	wr.wr.ud.remote_qkey = d->qkey;
	rc = ibv_post_send(rs->cm->qp, &wr, &bad);
	if (rc) {
		dg->sfree[dg->nsfree++] = slot;
		return rcm_err(rc);
	}
	return (ssize_t)len;
}

ssize_t rsk_dg_sendv(struct rsk *rs, const struct iovec *iov, int iovcnt, int flags,
		     const struct sockaddr *to, socklen_t tolen)
{
	uint8_t buf[RSK_DS_MSG];
	struct rsk_ddest *d;
	size_t len = 0;
	ssize_t n = -1;

	for (int i = 0; i < iovcnt; i++) {
		if (iov[i].iov_len > RSK_DS_MSG - len)
			return rcm_err(EMSGSIZE);
		memcpy(buf + len, iov[i].iov_base, iov[i].iov_len);
		len += iov[i].iov_len;
	}
	pthread_mutex_lock(&rs->lock);
	d = rs->dg->conn;
	if (to != NULL && (d == NULL || !rsk_dg_same(to, (struct sockaddr *)&d->addr)) &&
	    rsk_dg_get_dest(rs, to, tolen, &d))
		goto out;
	if (d == NULL)
		n = rcm_err(EDESTADDRREQ);
	else if (len + rs->dg->hdr_len > rs->dg->max_msg)
		n = rcm_err(EMSGSIZE);
	else
		n = rsk_dg_ud_send(rs, d, buf, len, flags);
out:
	pthread_mutex_unlock(&rs->lock);
	return n;
}

ssize_t rsk_dg_recv(struct rsk *rs, void *buf, size_t len, int flags, struct sockaddr *from,
		    socklen_t *fromlen)
{
	struct rsk_dgram *dg = rs->dg;
	struct sockaddr_storage src;
	const uint8_t *msg;
	struct rsk_dmsg *m;
	uint32_t hlen = 0;
	size_t n;

	pthread_mutex_lock(&rs->lock);
	if (!dg->ep || rsk_dg_wait(rs, flags, rsk_dg_have_data)) {
		pthread_mutex_unlock(&rs->lock);
		return dg->ep ? -1 : rcm_err(EINVAL); /* never bound: nothing can arrive */
	}
	m = &dg->ring[dg->head];
	msg = rs->rbuf + (size_t)m->slot * RSK_DG_SLOT + RSK_DS_GRH;
	rsk_ds_hdr_parse(msg, m->len, &src, &hlen); /* checked when queued */
	n = m->len - hlen < len ? m->len - hlen : len;
	memcpy(buf, msg + hlen, n);
	if (from != NULL && fromlen != NULL) {
		socklen_t have = rsk_dg_addrlen((struct sockaddr *)&src);

		memcpy(from, &src, *fromlen < have ? *fromlen : have);
		*fromlen = have;
	}
	if (!(flags & MSG_PEEK)) {
		rsk_dg_post_recv(rs, m->slot);
		dg->head = (dg->head + 1) % dg->rq;
		dg->count--;
	}
	pthread_mutex_unlock(&rs->lock);
	return (ssize_t)n;
}

void rsk_dg_free(struct rsk *rs)
{
	struct rsk_dgram *dg = rs->dg;

	if (dg == NULL)
		return;
	while (dg->dests != NULL) {
		struct rsk_ddest *d = dg->dests;

		dg->dests = d->next;
		if (d->ah != NULL)
			ibv_destroy_ah(d->ah);
		free(d);
	}
	free(dg->sfree);
	free(dg->ring);
	free(dg);
	rs->dg = NULL;
}
