/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rsockets: the socket table and the socket calls (rsocket, rbind,
 * rlisten, raccept, rconnect, rshutdown, rclose, the names, the options,
 * rfcntl). An rsocket is named by the fd of its rdma_cm id's event
 * channel, as librdmacm names it, so the number is a real descriptor that
 * no other open() can take while the rsocket lives (librspreload relies on
 * that).
 *
 * SOCK_STREAM and SOCK_DGRAM (rsocket_dgram.c) over AF_INET/AF_INET6 are
 * served; AF_IB fails
 * with ENOTSUP (doc/rdma-cm.md, "rsockets").
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rdma/rsocket.h>

#include "rcm.h"
#include "rsocket.h"

/* ---- the table: fd -> rsocket, two levels of 1024 ---- */

#define RSK_TAB_BITS 10
#define RSK_TAB_L2 (1u << RSK_TAB_BITS)
#define RSK_TAB_L1 1024u /* fds below 1 Mi */

static struct rsk **rsk_tab[RSK_TAB_L1];
static pthread_mutex_t rsk_tab_lock = PTHREAD_MUTEX_INITIALIZER;

struct rsk *rsk_get(int fd)
{
	struct rsk **l2;

	if (fd < 0 || (unsigned int)fd >= RSK_TAB_L1 * RSK_TAB_L2)
		return NULL;
	l2 = __atomic_load_n(&rsk_tab[fd >> RSK_TAB_BITS], __ATOMIC_ACQUIRE);
	return l2 ? __atomic_load_n(&l2[fd & (RSK_TAB_L2 - 1)], __ATOMIC_ACQUIRE) : NULL;
}

int rsk_insert(struct rsk *rs)
{
	unsigned int i = (unsigned int)rs->fd >> RSK_TAB_BITS;

	if (rs->fd < 0 || i >= RSK_TAB_L1)
		return rcm_err(EMFILE);
	pthread_mutex_lock(&rsk_tab_lock);
	if (rsk_tab[i] == NULL) {
		struct rsk **l2 = calloc(RSK_TAB_L2, sizeof(*l2));

		if (l2 == NULL) {
			pthread_mutex_unlock(&rsk_tab_lock);
			return rcm_err(ENOMEM);
		}
		__atomic_store_n(&rsk_tab[i], l2, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&rsk_tab[i][rs->fd & (RSK_TAB_L2 - 1)], rs, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&rsk_tab_lock);
	return 0;
}

void rsk_remove(struct rsk *rs)
{
	if (rsk_get(rs->fd) != rs)
		return;
	pthread_mutex_lock(&rsk_tab_lock);
	__atomic_store_n(&rsk_tab[rs->fd >> RSK_TAB_BITS][rs->fd & (RSK_TAB_L2 - 1)], NULL,
			 __ATOMIC_RELEASE);
	pthread_mutex_unlock(&rsk_tab_lock);
}

/* ---- allocation ---- */

/* librdmacm's defaults (its rsocket.c; /etc/rdma/rsocket files are not read). */
#define RSK_DEF_INLINE 64u
#define RSK_DEF_QSIZE 384u
#define RSK_DEF_MEM (1u << 17)
#define RSK_MAX_MEM (1u << 26)

struct rsk *rsk_alloc(const struct rsk *inherit, int domain)
{
	struct rsk *rs = calloc(1, sizeof(*rs));

	if (rs == NULL)
		return NULL;
	rs->fd = -1;
	rs->domain = domain;
	pthread_mutex_init(&rs->lock, NULL);
	pthread_mutex_init(&rs->wait_lock, NULL);
	pthread_mutex_init(&rs->slock, NULL);
	pthread_mutex_init(&rs->rlock, NULL);
	if (inherit != NULL) {
		rs->sbuf_size = inherit->sbuf_size;
		rs->rbuf_size = inherit->rbuf_size;
		rs->sq_size = inherit->sq_size;
		rs->rq_size = inherit->rq_size;
		rs->sq_inline = inherit->sq_inline;
		rs->fs_flags = inherit->fs_flags;
		rs->so_opts = inherit->so_opts;
		rs->tcp_opts = inherit->tcp_opts;
		rs->keepalive_time = inherit->keepalive_time;
		rs->linger_ms = inherit->linger_ms;
		rs->linger_set = inherit->linger_set;
		rs->iomap_size = inherit->iomap_size;
	} else {
		rs->sbuf_size = RSK_DEF_MEM;
		rs->rbuf_size = RSK_DEF_MEM;
		rs->sq_size = RSK_DEF_QSIZE;
		rs->rq_size = RSK_DEF_QSIZE;
		rs->sq_inline = RSK_DEF_INLINE;
		rs->keepalive_time = 7200;
		rs->linger_ms = RSK_LINGER_MS;
	}
	return rs;
}

static void rsk_unmap(void *p, size_t len)
{
	if (p != NULL && p != MAP_FAILED)
		munmap(p, len);
}

void rsk_free(struct rsk *rs)
{
	rsk_ka_remove(rs);
	rsk_dg_free(rs); /* its QPs before the CQ they share */
	if (rs->cm != NULL && rs->cm->qp != NULL)
		rdma_destroy_qp(rs->cm);
	rsk_free_iomaps(rs);
	if (rs->smr)
		ibv_dereg_mr(rs->smr);
	if (rs->rmr)
		ibv_dereg_mr(rs->rmr);
	if (rs->tmr)
		ibv_dereg_mr(rs->tmr);
	if (rs->cq != NULL) {
		rsk_drain_cq_events(rs);
		if (rs->unacked_events)
			ibv_ack_cq_events(rs->cq, rs->unacked_events);
		ibv_destroy_cq(rs->cq);
	}
	if (rs->cch != NULL)
		ibv_destroy_comp_channel(rs->cch);
	if (rs->cm != NULL) {
		if (rs->cm->event != NULL) {
			rdma_ack_cm_event(rs->cm->event);
			rs->cm->event = NULL;
		}
		rdma_destroy_id(rs->cm);
	}
	rsk_unmap(rs->sbuf, rs->sbuf_alloc);
	rsk_unmap(rs->rbuf, rs->rbuf_alloc);
	rsk_unmap(rs->target, rs->target_alloc);
	free(rs->rqueue);
	free(rs->route);
	pthread_mutex_destroy(&rs->lock);
	pthread_mutex_destroy(&rs->wait_lock);
	pthread_mutex_destroy(&rs->slock);
	pthread_mutex_destroy(&rs->rlock);
	free(rs);
}

bool rsk_nonblocking(const struct rsk *rs, int flags)
{
	return (rs->fs_flags & O_NONBLOCK) || (flags & MSG_DONTWAIT);
}

static int rsk_fd_nonblock(int fd, bool on)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0)
		return -1;
	return fcntl(fd, F_SETFL, on ? (fl | O_NONBLOCK) : (fl & ~O_NONBLOCK));
}

static struct rsk *rsk_lookup(int fd)
{
	struct rsk *rs = rsk_get(fd);

	if (rs == NULL)
		errno = EBADF;
	return rs;
}

/* ---- the calls ---- */

RCM_EXPORT int rsocket(int domain, int type, int protocol)
{
	int stype = type & ~(SOCK_CLOEXEC | SOCK_NONBLOCK);
	struct rsk *rs;

	if ((domain != AF_INET && domain != AF_INET6) ||
	    !((stype == SOCK_STREAM && (!protocol || protocol == IPPROTO_TCP)) ||
	      (stype == SOCK_DGRAM && (!protocol || protocol == IPPROTO_UDP))))
		return rcm_err(ENOTSUP);
	rs = rsk_alloc(NULL, domain);
	if (rs == NULL)
		return rcm_err(ENOMEM);
	if (stype == SOCK_DGRAM ? rsk_dg_open(rs) : rdma_create_id(NULL, &rs->cm, rs, RDMA_PS_TCP)) {
		int e = errno;

		rsk_free(rs);
		return rcm_err(e);
	}
	rs->cm->route.addr.src_addr.sa_family = (sa_family_t)domain;
	rs->fd = rs->cm->channel->fd;
	if (type & SOCK_NONBLOCK)
		rs->fs_flags = O_NONBLOCK;
	if (type & SOCK_CLOEXEC)
		fcntl(rs->fd, F_SETFD, FD_CLOEXEC);
	if (rsk_insert(rs)) {
		int e = errno;

		rsk_free(rs);
		return rcm_err(e);
	}
	return rs->fd;
}

RCM_EXPORT int rbind(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	struct rsk *rs = rsk_lookup(socket);
	int rc;

	if (rs == NULL)
		return -1;
	if (addr == NULL || addrlen < sizeof(sa_family_t) || addrlen < rcm_addrlen(addr))
		return rcm_err(EINVAL);
	pthread_mutex_lock(&rs->lock);
	if (rs->dg != NULL) {
		rc = rsk_dg_bind(rs, addr, addrlen);
		pthread_mutex_unlock(&rs->lock);
		return rc;
	}
	if (rs->state != RSK_INIT) {
		pthread_mutex_unlock(&rs->lock);
		return rcm_err(EINVAL);
	}
	rc = rdma_bind_addr(rs->cm, (struct sockaddr *)addr);
	if (rc == 0)
		rs->state = RSK_BOUND;
	pthread_mutex_unlock(&rs->lock);
	return rc;
}

RCM_EXPORT int rlisten(int socket, int backlog)
{
	struct rsk *rs = rsk_lookup(socket);
	int rc = 0;

	if (rs == NULL)
		return -1;
	if (rs->dg != NULL)
		return rcm_err(EOPNOTSUPP); /* as listen(2) on a UDP socket */
	pthread_mutex_lock(&rs->lock);
	if (rs->state == RSK_LISTENING)
		goto out;
	if (rs->state != RSK_BOUND && rs->state != RSK_INIT) {
		rc = rcm_err(EINVAL);
		goto out;
	}
	rc = rdma_listen(rs->cm, backlog);
	if (rc == 0) {
		rs->state = RSK_LISTENING;
		rsk_fd_nonblock(rs->fd, rs->fs_flags & O_NONBLOCK);
	}
out:
	pthread_mutex_unlock(&rs->lock);
	return rc;
}

RCM_EXPORT int raccept(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	struct rsk *ls = rsk_lookup(socket), *rs;

	if (ls == NULL)
		return -1;
	if (ls->state != RSK_LISTENING)
		return rcm_err(EINVAL);
	pthread_mutex_lock(&ls->rlock);
	rs = rsk_accept_one(ls);
	pthread_mutex_unlock(&ls->rlock);
	if (rs == NULL)
		return -1;
	if (rs->so_opts & (1ull << SO_KEEPALIVE)) {
		/* inherited from the listener, as the option itself */
		pthread_mutex_lock(&rs->lock);
		rsk_ka_set(rs, true);
		pthread_mutex_unlock(&rs->lock);
	}
	if (addr != NULL && addrlen != NULL)
		rgetpeername(rs->fd, addr, addrlen);
	return rs->fd;
}

RCM_EXPORT int rconnect(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	struct rsk *rs = rsk_lookup(socket);
	socklen_t need;
	int rc;

	if (rs == NULL)
		return -1;
	if (addr == NULL || addrlen < sizeof(sa_family_t))
		return rcm_err(EINVAL);
	need = rcm_addrlen(addr);
	if (need == 0 || addrlen < need)
		return rcm_err(need == 0 ? EAFNOSUPPORT : EINVAL);
	pthread_mutex_lock(&rs->lock);
	if (rs->dg != NULL) {
		rc = rsk_dg_connect(rs, addr, addrlen);
		pthread_mutex_unlock(&rs->lock);
		return rc;
	}
	if (rs->state == RSK_INIT || rs->state == RSK_BOUND) {
		memcpy(&rs->dst, addr, need);
		rs->state = RSK_OPENING;
		rs->phase = RSK_PH_NONE;
	} else if (rs->state == RSK_LISTENING) {
		pthread_mutex_unlock(&rs->lock);
		return rcm_err(EINVAL);
	}
	rc = rsk_do_connect(rs);
	pthread_mutex_unlock(&rs->lock);
	return rc;
}

/* The control message a shutdown sends, and the state it leaves. */
static int rsk_shutdown_ctrl(struct rsk *rs, int how, enum rsk_ctrl *ctrl)
{
	if (how == SHUT_RDWR) {
		rs->state &= ~(uint32_t)(RSK_READABLE | RSK_WRITABLE);
		*ctrl = RSK_CTRL_DISCONNECT;
	} else if (how == SHUT_WR) {
		rs->state &= ~(uint32_t)RSK_WRITABLE;
		*ctrl = (rs->state & RSK_READABLE) ? RSK_CTRL_SHUTDOWN : RSK_CTRL_DISCONNECT;
	} else if (how == SHUT_RD) {
		rs->state &= ~(uint32_t)RSK_READABLE;
		if (rs->state & RSK_WRITABLE)
			return 1; /* nothing to tell the peer */
		*ctrl = RSK_CTRL_DISCONNECT;
	} else {
		return rcm_err(EINVAL);
	}
	return 0;
}

static int rsk_shutdown_locked(struct rsk *rs, int how)
{
	enum rsk_ctrl ctrl = RSK_CTRL_DISCONNECT;
	int rc = 0;

	if (rs->state & RSK_CONNECTED) {
		rc = rsk_shutdown_ctrl(rs, how, &ctrl);
		if (rc < 0)
			return rc;
		if (rc == 0) {
			if ((rsk_test_ctrl(rs) ||
			     rsk_process_until(rs, rs->linger_ms == 0, rsk_test_ctrl, rs->linger_ms) == 0) &&
			    (rs->state & RSK_CONNECTED))
				rc = rsk_send_ctrl(rs, ctrl);
		} else {
			rc = 0;
		}
	}
	/*
	 * Wait for the peer to take what was sent, but not forever: a peer
	 * that never reposts its receives holds our writes in RNR retries.
	 */
	if ((rs->state & RSK_CONNECTED) &&
	    (rs->linger_ms == 0 ||
	     (rsk_process_until(rs, false, rsk_test_all_sent, rs->linger_ms) && errno == ETIMEDOUT)) &&
	    how == SHUT_RDWR)
		rs->state = (rs->state & ~(uint32_t)RSK_RDWR) | RSK_DISCONNECTED;
	if ((rs->state & RSK_DISCONNECTED) && rs->cm->qp != NULL) {
		/* flush the receives so that a poller wakes (librdmacm does the same) */
		ibv_req_notify_cq(rs->cq, 0);
		rcm_modify_qp_err(rcm_id(rs->cm));
	}
	return rc;
}

RCM_EXPORT int rshutdown(int socket, int how)
{
	struct rsk *rs = rsk_lookup(socket);
	int rc;

	if (rs == NULL)
		return -1;
	if (rs->dg != NULL)
		return 0; /* no connection to shut (librdmacm: nothing for a datagram socket) */
	pthread_mutex_lock(&rs->lock);
	if (!(rs->state & (RSK_CONNECTED | RSK_DISCONNECTED | RSK_ERROR))) {
		pthread_mutex_unlock(&rs->lock);
		return rcm_err(ENOTCONN);
	}
	rc = rsk_shutdown_locked(rs, how);
	pthread_mutex_unlock(&rs->lock);
	return rc;
}

RCM_EXPORT int rclose(int socket)
{
	struct rsk *rs = rsk_lookup(socket);

	if (rs == NULL)
		return -1;
	pthread_mutex_lock(&rs->lock);
	if (rs->state & RSK_CONNECTED)
		rsk_shutdown_locked(rs, SHUT_RDWR);
	pthread_mutex_unlock(&rs->lock);
	rsk_remove(rs);
	rsk_free(rs);
	return 0;
}

static int rsk_copy_addr(const struct sockaddr *src, struct sockaddr *dst, socklen_t *len)
{
	socklen_t have = rcm_addrlen(src);

	/* as getsockname(2): no room asked for, nothing copied, the size told
	 * (librspreload's fallback to a kernel socket asks the family so) */
	if (len == NULL || (dst == NULL && *len > 0))
		return rcm_err(EFAULT);
	if (have == 0)
		return rcm_err(ENOTCONN);
	if (dst != NULL)
		memcpy(dst, src, *len < have ? *len : have);
	*len = have;
	return 0;
}

RCM_EXPORT int rgetpeername(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	struct rsk *rs = rsk_lookup(socket);

	if (rs == NULL)
		return -1;
	if (rs->dg != NULL)
		return rsk_dg_peer(rs, addr, addrlen);
	/* an accept still completing already knows its peer */
	if (!(rs->state & (RSK_CONNECTED | RSK_DISCONNECTED | RSK_ERROR | RSK_OPENING)))
		return rcm_err(ENOTCONN);
	return rsk_copy_addr(rdma_get_peer_addr(rs->cm), addr, addrlen);
}

RCM_EXPORT int rgetsockname(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	struct rsk *rs = rsk_lookup(socket);
	struct sockaddr_storage any;

	if (rs == NULL)
		return -1;
	if (rcm_addrlen(rdma_get_local_addr(rs->cm)) == 0) {
		/* not bound yet: the wildcard of the socket's family, as getsockname(2) */
		memset(&any, 0, sizeof(any));
		any.ss_family = (sa_family_t)rs->domain;
		return rsk_copy_addr((struct sockaddr *)&any, addr, addrlen);
	}
	return rsk_copy_addr(rdma_get_local_addr(rs->cm), addr, addrlen);
}

/* ---- options ---- */

static int rsk_optint(const void *optval, socklen_t optlen, int *v)
{
	if (optval == NULL || optlen < sizeof(int))
		return rcm_err(EINVAL);
	memcpy(v, optval, sizeof(int));
	return 0;
}

static void rsk_optbit(uint64_t *opts, int optname, bool on)
{
	if (optname < 0 || optname >= 64)
		return;
	if (on)
		*opts |= 1ull << optname;
	else
		*opts &= ~(1ull << optname);
}

/* A buffer size option: librdmacm keeps twice the value, as Linux reports it. */
static uint32_t rsk_bufsize(int v)
{
	uint64_t n = v <= 0 ? 2u * RSK_SNDLOWAT : 2ull * (uint32_t)v;

	if (n < 2u * RSK_SNDLOWAT)
		n = 2u * RSK_SNDLOWAT;
	if (n > RSK_MAX_MEM)
		n = RSK_MAX_MEM;
	return (uint32_t)(n & ~7ull);
}

static int rsk_set_sol_socket(struct rsk *rs, int optname, const void *optval, socklen_t optlen)
{
	int v;

	if (optname == SO_LINGER) {
		struct linger l;

		if (optval == NULL || optlen < sizeof(l))
			return rcm_err(EINVAL);
		memcpy(&l, optval, sizeof(l));
		/* on with 0: close without waiting for the peer (TCP's abortive close) */
		rs->linger_ms = !l.l_onoff ? RSK_LINGER_MS
			      : l.l_linger <= 0 ? 0
			      : l.l_linger < RSK_LINGER_MS / 1000 ? l.l_linger * 1000 : RSK_LINGER_MS;
		rs->linger_set = l.l_onoff != 0;
		return 0;
	}
	if (rsk_optint(optval, optlen, &v))
		return -1;
	switch (optname) {
	case SO_REUSEADDR:
		if (rdma_set_option(rs->cm, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &v, sizeof(v)) &&
		    errno != ENOSYS)
			return -1;
		break;
	case SO_RCVBUF:
		if (rs->rbuf == NULL)
			rs->rbuf_size = rsk_bufsize(v);
		break;
	case SO_SNDBUF:
		if (rs->sbuf == NULL)
			rs->sbuf_size = rsk_bufsize(v);
		break;
	case SO_KEEPALIVE:
		if (rs->dg == NULL && rsk_ka_set(rs, v != 0))
			return -1;
		break;
	case SO_OOBINLINE:
		break;
	default:
		return rcm_err(ENOTSUP);
	}
	rsk_optbit(&rs->so_opts, optname, v != 0);
	return 0;
}

static int rsk_set_tcp(struct rsk *rs, int optname, const void *optval, socklen_t optlen)
{
	int v;

	if (rsk_optint(optval, optlen, &v))
		return -1;
	switch (optname) {
	case TCP_KEEPIDLE:
		if (v <= 0)
			return rcm_err(EINVAL);
		rs->keepalive_time = (uint32_t)v;
		if (rs->so_opts & (1ull << SO_KEEPALIVE))
			return rsk_ka_set(rs, true); /* counted from now */
		return 0;
	case TCP_KEEPCNT:
	case TCP_KEEPINTVL:
	case TCP_MAXSEG:
		return 0; /* a reliable connection: nothing to tune */
	case TCP_NODELAY:
		rsk_optbit(&rs->tcp_opts, optname, v != 0);
		return 0;
	default:
		return rcm_err(ENOTSUP);
	}
}

static int rsk_set_rdma(struct rsk *rs, int optname, const void *optval, socklen_t optlen)
{
	int v = 0;

	if (rs->state & (RSK_OPENING | RSK_CONNECTED | RSK_DISCONNECTED | RSK_ERROR))
		return rcm_err(EINVAL);
	if (optname == RDMA_ROUTE) {
		void *copy = optlen ? malloc(optlen) : NULL;

		if (copy == NULL)
			return rcm_err(optlen ? ENOMEM : EINVAL);
		memcpy(copy, optval, optlen);
		free(rs->route);
		rs->route = copy;
		rs->route_len = optlen;
		return 0;
	}
	if (rsk_optint(optval, optlen, &v))
		return -1;
	switch (optname) {
	case RDMA_SQSIZE:
		rs->sq_size = (uint16_t)((uint32_t)v > RSK_QP_MAX ? RSK_QP_MAX : (uint32_t)v);
		return 0;
	case RDMA_RQSIZE:
		rs->rq_size = (uint16_t)((uint32_t)v > RSK_QP_MAX ? RSK_QP_MAX : (uint32_t)v);
		return 0;
	case RDMA_INLINE:
		rs->sq_inline = (uint32_t)v > RSK_QP_MAX ? RSK_QP_MAX : (uint32_t)v;
		return 0;
	case RDMA_IOMAPSIZE:
		/* what the 8-bit scale of the conn data can say, rounded as librdmacm */
		rs->iomap_size = v <= 0 ? 0
			       : rsk_unscale(rsk_scale((uint32_t)v < RSK_IOMAP_MAX ? (uint32_t)v : RSK_IOMAP_MAX));
		return 0;
	default:
		return rcm_err(ENOTSUP);
	}
}

RCM_EXPORT int rsetsockopt(int socket, int level, int optname, const void *optval,
			   socklen_t optlen)
{
	struct rsk *rs = rsk_lookup(socket);
	int rc, v;

	if (rs == NULL)
		return -1;
	pthread_mutex_lock(&rs->lock);
	switch (level) {
	case SOL_SOCKET:
		rc = rsk_set_sol_socket(rs, optname, optval, optlen);
		break;
	case IPPROTO_TCP:
		rc = rsk_set_tcp(rs, optname, optval, optlen);
		break;
	case IPPROTO_IPV6:
		if (optname != IPV6_V6ONLY) {
			rc = rcm_err(ENOTSUP);
			break;
		}
		rc = rsk_optint(optval, optlen, &v);
		if (rc == 0)
			rc = rdma_set_option(rs->cm, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &v,
					     sizeof(v));
		if (rc == 0)
			rsk_optbit(&rs->ipv6_opts, optname, v != 0);
		break;
	case SOL_RDMA:
		rc = rsk_set_rdma(rs, optname, optval, optlen);
		break;
	default:
		rc = rcm_err(ENOTSUP);
		break;
	}
	pthread_mutex_unlock(&rs->lock);
	return rc;
}

static int rsk_put_int(void *optval, socklen_t *optlen, int v)
{
	if (optval == NULL || optlen == NULL || *optlen < sizeof(int))
		return rcm_err(EINVAL);
	memcpy(optval, &v, sizeof(v));
	*optlen = sizeof(int);
	return 0;
}

static int rsk_get_sol_socket(struct rsk *rs, int optname, void *optval, socklen_t *optlen)
{
	int v;

	switch (optname) {
	case SO_REUSEADDR:
	case SO_KEEPALIVE:
	case SO_OOBINLINE:
		return rsk_put_int(optval, optlen, !!(rs->so_opts & (1ull << optname)));
	case SO_RCVBUF:
		return rsk_put_int(optval, optlen, (int)rs->rbuf_size);
	case SO_SNDBUF:
		return rsk_put_int(optval, optlen, (int)rs->sbuf_size);
	case SO_LINGER: {
		struct linger l = { .l_onoff = rs->linger_set, .l_linger = rs->linger_ms / 1000 };

		if (optval == NULL || optlen == NULL || *optlen < sizeof(l))
			return rcm_err(EINVAL);
		memcpy(optval, &l, sizeof(l));
		*optlen = sizeof(l);
		return 0;
	}
	case SO_ERROR:
		v = rs->err;
		if (rsk_put_int(optval, optlen, v))
			return -1;
		rs->err = 0;
		return 0;
	case SO_TYPE:
		return rsk_put_int(optval, optlen, rs->dg != NULL ? SOCK_DGRAM : SOCK_STREAM);
	default:
		return rcm_err(ENOTSUP);
	}
}

static int rsk_get_other(struct rsk *rs, int level, int optname, void *optval, socklen_t *optlen)
{
	if (level == IPPROTO_TCP) {
		switch (optname) {
		case TCP_KEEPIDLE:
			return rsk_put_int(optval, optlen, (int)rs->keepalive_time);
		case TCP_NODELAY:
			return rsk_put_int(optval, optlen, !!(rs->tcp_opts & (1ull << optname)));
		case TCP_KEEPCNT:
		case TCP_KEEPINTVL:
			return rsk_put_int(optval, optlen, 1);
		case TCP_MAXSEG:
			return rsk_put_int(optval, optlen, 2048);
		default:
			return rcm_err(ENOTSUP);
		}
	}
	if (level == IPPROTO_IPV6 && optname == IPV6_V6ONLY)
		return rsk_put_int(optval, optlen, !!(rs->ipv6_opts & (1ull << optname)));
	if (level == SOL_RDMA) {
		switch (optname) {
		case RDMA_SQSIZE:
			return rsk_put_int(optval, optlen, rs->sq_size);
		case RDMA_RQSIZE:
			return rsk_put_int(optval, optlen, rs->rq_size);
		case RDMA_INLINE:
			return rsk_put_int(optval, optlen, (int)rs->sq_inline);
		case RDMA_IOMAPSIZE:
			return rsk_put_int(optval, optlen, (int)rs->iomap_size);
		default:
			return rcm_err(ENOTSUP);
		}
	}
	return rcm_err(ENOTSUP);
}

RCM_EXPORT int rgetsockopt(int socket, int level, int optname, void *optval, socklen_t *optlen)
{
	struct rsk *rs = rsk_lookup(socket);
	int rc;

	if (rs == NULL)
		return -1;
	pthread_mutex_lock(&rs->lock);
	if (level == SOL_SOCKET)
		rc = rsk_get_sol_socket(rs, optname, optval, optlen);
	else
		rc = rsk_get_other(rs, level, optname, optval, optlen);
	pthread_mutex_unlock(&rs->lock);
	return rc;
}

RCM_EXPORT int rfcntl(int socket, int cmd, ...)
{
	struct rsk *rs = rsk_lookup(socket);
	va_list ap;
	int arg, rc = 0;

	if (rs == NULL)
		return -1;
	switch (cmd) {
	case F_GETFL:
		return rs->fs_flags;
	case F_SETFL:
		va_start(ap, cmd);
		arg = va_arg(ap, int);
		va_end(ap);
		pthread_mutex_lock(&rs->lock);
		rs->fs_flags = arg & O_NONBLOCK;
		/* a listener's and a connecting socket's waits are on the cm channel */
		if (rs->state & (RSK_LISTENING | RSK_OPENING))
			rc = rsk_fd_nonblock(rs->fd, arg & O_NONBLOCK);
		pthread_mutex_unlock(&rs->lock);
		return rc;
	default:
		return rcm_err(ENOTSUP);
	}
}
