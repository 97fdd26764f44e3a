/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/ctl: rdma_cm ids and event channels (ipc_cm.h), the consumer of the
 * lib/cm agent as Linux's cma.c/ucma.c are of ib_cm (see ctl_cm.h).
 *
 * An id walks IDLE -> (bound) -> ADDR_QUERY -> ADDR_RESOLVED ->
 * ROUTE_RESOLVED -> CONNECT -> REP_RCVD -> ESTABLISHED on the active side,
 * LISTEN on a listener, and REQ_RCVD -> ACCEPTED -> ESTABLISHED for the id
 * a CONNECT_REQUEST creates; DISCONNECT and DONE at the end. lib/cm holds
 * the protocol state of its connection (id->conn); the id holds what
 * rdma_cm adds: addresses, port space, the route, the negotiated QP
 * parameters INIT_QP_ATTR reports (lib/qp's qp_sem_init_attr()).
 *
 * PSNs as Linux puts them on the wire (rxe's rdma_cm capture: the active
 * side's first SEND carries the REP's starting PSN): the starting PSN of a
 * REQ or REP is the PSN its sender will receive from (cma.c sets rq_psn to
 * the id's own seq_num, the value it sent); the peer's becomes our send
 * PSN. Each side picks its own (at CONNECT, or when the REQ arrives).
 *
 * Nothing here waits: address resolution is polled at each tick until its
 * deadline, events go to the channel socket or, when that is full, to a
 * bounded backlog flushed at the next ticks.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <rdma/rdma_cma.h>

#include "ctl_cm.h"
#include "ctl_internal.h"
#include "ipc_verbs.h"
#include "roce_mcast.h"

#define CM_LISTEN_COOKIE (UINT64_C(1) << 63) /* lib/cm listener cookie: | service ID */
#define CM_RESPONSE_TIMEOUT 20u   /* cma.c CMA_CM_RESPONSE_TIMEOUT: 4.096 us * 2^20 */
#define CM_MAX_CM_RETRIES 15u     /* cma.c CMA_MAX_CM_RETRIES */
#define CM_IBOE_PACKET_LIFETIME 18u /* cma.c CMA_IBOE_PACKET_LIFETIME (a REQ from rxe shows 19 = 18 + 1 as its ACK timeout) */
#define CM_UDP_QKEY 0x01234567u   /* RDMA_UDP_QKEY */
#define CM_LOOP_QUEUE 64u         /* looped-back MADs waiting for the next tick */
#define CM_PORT_LOW 32768u        /* ephemeral ports, as Linux's ip_local_port_range */
#define CM_PORT_HIGH 60999u
#define CM_DEFAULT_TIMEOUT_MS 2000u
#define CM_CH_SOCKET_EVENTS 128u  /* bytes of as many events: what a channel's socket may hold unread */
#define CM_CH_SENT_MAX 512u       /* sanity bound on its copies (SO_SNDBUF as the kernel set it) */

enum cm_id_state {
	CMS_IDLE,
	CMS_ADDR_QUERY,
	CMS_ADDR_RESOLVED,
	CMS_ROUTE_RESOLVED,
	CMS_LISTEN,
	CMS_CONNECT,      /* REQ / SIDR_REQ sent */
	CMS_REQ_RCVD,     /* passive: CONNECT_REQUEST reported, not yet accepted */
	CMS_ACCEPTED,     /* passive: REP sent */
	CMS_REP_RCVD,     /* active: CONNECT_RESPONSE reported, RTU not yet sent */
	CMS_ESTABLISHED,
	CMS_DREQ_RCVD,    /* DISCONNECTED reported, DREP owed */
	CMS_DISCONNECT,   /* DREQ sent */
	CMS_DONE,         /* disconnected, rejected, failed */
};

/* An event and the id it belongs to (the listener for a CONNECT_REQUEST: ucma's uevent->ctx). */
struct cm_ch_rec {
	uint32_t owner;
	struct ipc_cm_event ev;
};

struct ctl_cm_channel {
	struct ctl_obj o;
	int fd;                    /* the daemon's end of the application's socket pair */
	bool dead;                 /* the application closed its end */
	bool paused;               /* a migration waits for MIGRATE_COMMIT: nothing is written */
	uint32_t seq;
	struct cm_ch_rec *backlog; /* cm_ch_ring() records, allocated when needed */
	uint32_t head, count;
	struct cm_ch_rec *sent;    /* copies of the last sent_cap events written (a ring) */
	uint32_t sent_cap, sent_next, sent_n;
	uint32_t written;          /* seq of the last event written */
};

struct ctl_cm_id {
	struct ctl_obj o;
	struct ctl_cm_channel *ch;
	uint16_t ps;
	uint8_t qp_type;
	uint8_t state;             /* enum cm_id_state */
	bool bound;
	bool reuseaddr;
	bool afonly;
	bool tos_set;
	bool ack_timeout_set;
	bool uid_set;              /* passive ids: ACCEPT gave the application's cookie */
	bool ud;                   /* SIDR (UD QP) */
	uint8_t tos;
	uint8_t ack_timeout;
	int dev;                   /* -1: not bound to a device (wildcard) */
	uint32_t gid_index;
	struct ipc_cm_addr src;    /* our address; src.port is the bound port */
	struct ipc_cm_addr dst;
	uint8_t dmac[6];
	bool route;
	struct ipc_cm_path path;
	uint64_t deadline_us;      /* ADDR_QUERY */
	cm_conn_t conn;            /* lib/cm connection, CM_CONN_INVALID: none */
	uint32_t listener;         /* passive, until accepted/rejected: the listener's handle */
	uint32_t backlog;          /* LISTEN */
	uint32_t pending;          /* LISTEN: CONNECT_REQUESTs not yet accepted/rejected */
	/* negotiated (INIT_QP_ATTR) */
	uint32_t qpn, remote_qpn, remote_qkey;
	uint32_t sq_psn, rq_psn;
	uint8_t responder_resources, initiator_depth;
	uint8_t retry_count, rnr_retry_count, path_mtu;
};

struct ctl_cm_loop {
	struct cm_path from;
	uint8_t mad[CM_MAD_SIZE];
};

struct ctl_cm {
	struct cm_agent *agent;
	struct ctl_cm_ops ops;
	uint32_t resolving;        /* ids in ADDR_QUERY */
	uint32_t backlogged;       /* channels with a backlog */
	struct ctl_cm_loop loop[CM_LOOP_QUEUE];
	uint32_t loop_head, loop_count;
	uint64_t ctr[CTL_CM_CTR_COUNT];
};

/* ---- helpers ---- */

static uint64_t cm_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static uint32_t cm_random24(void)
{
	uint32_t v = 0;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != sizeof(v))
		v = (uint32_t)cm_now_us() * 2654435761u;
	return v & 0xffffff;
}

static bool addr_is_any(const struct ipc_cm_addr *a)
{
	static const uint8_t zero[16];

	return memcmp(a->addr, zero, a->family == AF_INET ? 4 : 16) == 0;
}

static void addr_to_gid(const struct ipc_cm_addr *a, uint8_t gid[16])
{
	if (a->family == AF_INET)
		cm_ip_gid_from_v4(a->addr, gid);
	else
		memcpy(gid, a->addr, 16);
}

static bool gid_is_v4(const uint8_t g[16])
{
	static const uint8_t pfx[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return memcmp(g, pfx, sizeof(pfx)) == 0;
}

static void cm_addr_from_ipc(const struct ipc_cm_addr *a, struct cm_ip_addr *o)
{
	memset(o, 0, sizeof(*o));
	o->family = a->family == AF_INET ? 4 : 6;
	o->port = ntohs(a->port);
	memcpy(o->addr, a->addr, a->family == AF_INET ? 4 : 16);
}

/* Find one of our GIDs: device and index, or -1. */
static int cm_find_gid(const struct ctl *ctl, const uint8_t gid[16], uint32_t *index)
{
	for (uint32_t d = 0; d < ctl->cfg.ndevices; d++) {
		const struct ctl_port_cfg *p = &ctl->cfg.dev[d].port[0];

		for (uint32_t i = 0; i < CTL_GID_TBL_LEN; i++) {
			if (p->gid_valid[i] && p->gid_type[i] == IBV_GID_TYPE_ROCE_V2 &&
			    memcmp(p->gid[i], gid, 16) == 0) {
				if (index)
					*index = i;
				return (int)d;
			}
		}
	}
	return -1;
}

static bool cm_valid_family(uint16_t f)
{
	return f == AF_INET || f == AF_INET6;
}

/* ---- ids and channels in the tables ---- */

static struct ctl_cm_id *cm_id_at(struct ctl *ctl, uint32_t handle)
{
	struct ctl_table *t = &ctl->tab[CTL_KIND_CM_ID];
	uint32_t idx = handle & CTL_HANDLE_INDEX_MASK;
	struct ctl_obj *o;

	if (idx == 0 || idx > t->cap)
		return NULL;
	o = ctl_table_at(t, idx - 1);
	if (o->owner == NULL || o->gen != (handle >> CTL_HANDLE_INDEX_BITS))
		return NULL;
	return (struct ctl_cm_id *)o;
}

static struct ctl_cm_id *cm_id_lookup(const struct ctl_req *x, uint32_t handle)
{
	return ctl_lookup(x->conn, CTL_KIND_CM_ID, handle);
}

#define CM_FOREACH_ID(ctl, id)                                                              \
	for (uint32_t i_ = 0; i_ < (ctl)->tab[CTL_KIND_CM_ID].cap; i_++)                    \
		if (((id) = ctl_table_at(&(ctl)->tab[CTL_KIND_CM_ID], i_))->o.owner != NULL)

/* ---- events ---- */

static void cm_ev_init(struct ipc_cm_event *ev, const struct ctl_cm_id *id, uint32_t type,
		       int32_t status)
{
	memset(ev, 0, sizeof(*ev));
	ev->uid = id->o.user_handle;
	ev->id = ctl_obj_handle(&id->o);
	ev->event = type;
	ev->status = status;
}

/* Backlog room: IPC_CM_EVENT_BACKLOG, and what a migration may queue again at its head. */
static uint32_t cm_ch_ring(const struct ctl_cm_channel *ch)
{
	return IPC_CM_EVENT_BACKLOG + ch->sent_cap;
}

static bool cm_ch_send(struct ctl_cm_channel *ch, const struct cm_ch_rec *r)
{
	ssize_t n = send(ch->fd, &r->ev, sizeof(r->ev), MSG_DONTWAIT | MSG_NOSIGNAL);

	if (n == (ssize_t)sizeof(r->ev)) {
		ch->sent[ch->sent_next] = *r;
		ch->sent_next = (ch->sent_next + 1) % ch->sent_cap;
		if (ch->sent_n < ch->sent_cap)
			ch->sent_n++;
		ch->written = r->ev.seq;
		return true;
	}
	if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != ENOBUFS)
		ch->dead = true;
	return false;
}

static void cm_ch_backlog_changed(struct ctl *ctl, struct ctl_cm_channel *ch, bool had)
{
	if (had && ch->count == 0 && ctl->cm->backlogged > 0)
		ctl->cm->backlogged--;
	else if (!had && ch->count > 0)
		ctl->cm->backlogged++;
}

static bool cm_ch_backlog_alloc(struct ctl_cm_channel *ch)
{
	if (ch->backlog == NULL)
		ch->backlog = calloc(cm_ch_ring(ch), sizeof(*ch->backlog));
	return ch->backlog != NULL;
}

/* Queue @p ev of the id @p owner on @p ch. @return false when it was dropped. */
static bool cm_ch_push(struct ctl *ctl, struct ctl_cm_channel *ch, uint32_t owner,
		       struct ipc_cm_event *ev)
{
	struct ctl_cm *cm = ctl->cm;
	struct cm_ch_rec r = { .owner = owner, .ev = *ev };

	r.ev.seq = ev->seq = ++ch->seq;
	if (!ch->dead && !ch->paused && ch->count == 0 && cm_ch_send(ch, &r)) {
		cm->ctr[CTL_CM_CTR_EVENTS]++;
		return true;
	}
	if (ch->dead || !cm_ch_backlog_alloc(ch) || ch->count >= IPC_CM_EVENT_BACKLOG)
		goto drop;
	ch->backlog[(ch->head + ch->count) % cm_ch_ring(ch)] = r;
	if (ch->count++ == 0)
		cm->backlogged++;
	return true;
drop:
	cm->ctr[CTL_CM_CTR_EVENTS_DROPPED]++;
	return false;
}

/* Send what waits in @p ch's backlog. @return events sent */
static unsigned int cm_ch_flush(struct ctl *ctl, struct ctl_cm_channel *ch)
{
	unsigned int n = 0;
	bool had = ch->count > 0;

	if (ch->paused)
		return 0;
	while (ch->count > 0 && !ch->dead && cm_ch_send(ch, &ch->backlog[ch->head])) {
		ch->head = (ch->head + 1) % cm_ch_ring(ch);
		ch->count--;
		n++;
	}
	ctl->cm->ctr[CTL_CM_CTR_EVENTS] += n;
	if (ch->dead && ch->count > 0) {
		ctl->cm->ctr[CTL_CM_CTR_EVENTS_DROPPED] += ch->count;
		ch->count = 0;
	}
	cm_ch_backlog_changed(ctl, ch, had);
	return n;
}

/* Report @p ev for @p id; a passive id nobody accepted yet reports nothing (as ucma). */
static void cm_id_report(struct ctl *ctl, struct ctl_cm_id *id, struct ipc_cm_event *ev)
{
	if (id->listener != 0 && !id->uid_set)
		return;
	if (cm_ch_push(ctl, id->ch, ctl_obj_handle(&id->o), ev))
		id->o.events++;
}

static void cm_id_event(struct ctl *ctl, struct ctl_cm_id *id, uint32_t type, int32_t status)
{
	struct ipc_cm_event ev;

	cm_ev_init(&ev, id, type, status);
	cm_id_report(ctl, id, &ev);
}

/* ---- ports ---- */

static bool cm_addr_overlap(const struct ctl_cm_id *a, const struct ctl_cm_id *b)
{
	if (a->src.family != b->src.family) {
		/* an IPv6 wildcard without AFONLY takes IPv4 too */
		const struct ctl_cm_id *v6 = a->src.family == AF_INET6 ? a : b;

		return addr_is_any(&v6->src) && !v6->afonly;
	}
	if (addr_is_any(&a->src) || addr_is_any(&b->src))
		return true;
	return memcmp(a->src.addr, b->src.addr, a->src.family == AF_INET ? 4 : 16) == 0;
}

/* Whether @p id may use @p port (network order) among the other bound ids (cma_check_port). */
static bool cm_port_free(struct ctl *ctl, const struct ctl_cm_id *id, uint16_t port, bool listen)
{
	struct ctl_cm_id *o;

	CM_FOREACH_ID(ctl, o) {
		if (o == id || !o->bound || o->ps != id->ps || o->src.port != port)
			continue;
		if (!cm_addr_overlap(o, id))
			continue;
		/* both REUSEADDR and neither listening: shared, as Linux allows */
		if (id->reuseaddr && o->reuseaddr && !listen && o->state != CMS_LISTEN)
			continue;
		return false;
	}
	return true;
}

static int cm_port_pick(struct ctl *ctl, struct ctl_cm_id *id)
{
	uint32_t span = CM_PORT_HIGH - CM_PORT_LOW + 1;
	uint32_t start = cm_random24() % span;

	for (uint32_t k = 0; k < span; k++) {
		uint16_t port = htons((uint16_t)(CM_PORT_LOW + (start + k) % span));

		if (cm_port_free(ctl, id, port, false)) {
			id->src.port = port;
			return 0;
		}
	}
	return EADDRINUSE;
}

/* Bind @p id to @p a (ours or the wildcard); port 0 picks one. */
static int cm_bind(struct ctl *ctl, struct ctl_cm_id *id, const struct ipc_cm_addr *a)
{
	uint8_t gid[16];
	uint32_t index = 0;
	int dev = -1;

	if (!cm_valid_family(a->family))
		return EAFNOSUPPORT;
	if (!addr_is_any(a)) {
		addr_to_gid(a, gid);
		dev = cm_find_gid(ctl, gid, &index);
		if (dev < 0)
			return EADDRNOTAVAIL;
	}
	id->src = *a;
	id->dev = dev;
	id->gid_index = index;
	if (a->port == 0) {
		int rc = cm_port_pick(ctl, id);

		if (rc)
			return rc;
	} else if (!cm_port_free(ctl, id, a->port, false)) {
		return EADDRINUSE;
	}
	id->bound = true;
	return 0;
}

/* A source GID for @p dst: our own GID when dst is ours, else the first of its family. */
static int cm_pick_source(struct ctl *ctl, const struct ipc_cm_addr *dst, struct ipc_cm_addr *src)
{
	uint8_t dgid[16];
	uint32_t index;
	int dev;

	addr_to_gid(dst, dgid);
	memset(src, 0, sizeof(*src));
	src->family = dst->family;
	dev = cm_find_gid(ctl, dgid, &index);
	if (dev >= 0) {
		memcpy(src->addr, dst->family == AF_INET ? dgid + 12 : dgid,
		       dst->family == AF_INET ? 4 : 16);
		return 0;
	}
	for (uint32_t d = 0; d < ctl->cfg.ndevices; d++) {
		const struct ctl_port_cfg *p = &ctl->cfg.dev[d].port[0];
		int best = -1;

		for (uint32_t i = 0; i < CTL_GID_TBL_LEN; i++) {
			if (!p->gid_valid[i] || p->gid_type[i] != IBV_GID_TYPE_ROCE_V2 ||
			    gid_is_v4(p->gid[i]) != (dst->family == AF_INET))
				continue;
			/* IPv6: a global address before the link-local one */
			if (best < 0 || (p->gid[best][0] == 0xfe && p->gid[i][0] != 0xfe))
				best = (int)i;
		}
		if (best >= 0) {
			memcpy(src->addr, dst->family == AF_INET ? p->gid[best] + 12 : p->gid[best],
			       dst->family == AF_INET ? 4 : 16);
			return 0;
		}
	}
	return EADDRNOTAVAIL;
}

/* ---- address resolution ---- */

static void cm_addr_done(struct ctl *ctl, struct ctl_cm_id *id, int err)
{
	ctl->cm->resolving--;
	if (err) {
		id->state = CMS_IDLE;
		cm_id_event(ctl, id, RDMA_CM_EVENT_ADDR_ERROR, -err);
		return;
	}
	id->state = CMS_ADDR_RESOLVED;
	cm_id_event(ctl, id, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
}

/* One look at the neighbour of @p id. @return 0 resolved, EAGAIN, or an errno */
static int cm_addr_try(struct ctl *ctl, struct ctl_cm_id *id)
{
	struct ctl_cm *cm = ctl->cm;
	uint8_t dgid[16];
	int rc;

	addr_to_gid(&id->dst, dgid);
	if (cm_find_gid(ctl, dgid, NULL) >= 0)
		return 0; /* loopback: no neighbour */
	if (cm->ops.resolve == NULL)
		return ENETUNREACH;
	rc = cm->ops.resolve(cm->ops.ctx, (uint32_t)id->dev, dgid, id->dmac);
	return rc == -EAGAIN ? EAGAIN : -rc;
}

static unsigned int cm_addr_tick(struct ctl *ctl, uint64_t now)
{
	struct ctl_cm_id *id;
	unsigned int n = 0;

	if (ctl->cm->resolving == 0)
		return 0;
	CM_FOREACH_ID(ctl, id) {
		int rc;

		if (id->state != CMS_ADDR_QUERY)
			continue;
		rc = cm_addr_try(ctl, id);
		if (rc == EAGAIN && now < id->deadline_us)
			continue;
		cm_addr_done(ctl, id, rc == EAGAIN ? ETIMEDOUT : rc);
		n++;
	}
	return n;
}

/* ---- the path (RoCE builds it locally: cma_resolve_iboe_route) ---- */

static uint8_t cm_hop_limit(struct ctl *ctl, int dev)
{
	struct ctl_cm *cm = ctl->cm;
	uint8_t h = cm->ops.hop_limit && dev >= 0 ? cm->ops.hop_limit(cm->ops.ctx, (uint32_t)dev) : 0;

	return h ? h : 64;
}

static void cm_build_path(struct ctl *ctl, struct ctl_cm_id *id)
{
	struct ipc_cm_path *p = &id->path;
	const struct ctl_port_cfg *pc = &ctl->cfg.dev[id->dev].port[0];

	memset(p, 0, sizeof(*p));
	addr_to_gid(&id->src, p->sgid);
	addr_to_gid(&id->dst, p->dgid);
	p->dlid = 0;
	p->slid = 0;
	p->pkey = htons(0xffff);
	p->reversible = 1;
	p->numb_path = 1;
	p->hop_limit = cm_hop_limit(ctl, id->dev);
	p->traffic_class = id->tos;
	/* SL: Linux's iboe_tos_to_sl() gives 0 without a VLAN egress map */
	p->sl = 0;
	p->mtu_selector = 2; /* exactly */
	p->mtu = (uint8_t)pc->attr.active_mtu;
	p->rate_selector = 2;
	p->rate = 0;
	p->packet_life_time_selector = 2;
	p->packet_life_time = CM_IBOE_PACKET_LIFETIME;
	id->route = true;
}

static void cm_path_to(const struct ctl_cm_id *id, struct cm_path *to)
{
	memset(to, 0, sizeof(*to));
	memcpy(to->remote_gid, id->path.dgid, 16);
	memcpy(to->local_gid, id->path.sgid, 16);
	memcpy(to->remote_mac, id->dmac, 6);
	to->remote_mac_valid = 1;
	to->traffic_class = id->path.traffic_class;
	to->hop_limit = id->path.hop_limit;
	to->flow_label = ntohl(id->path.flow_label);
	to->pkey = 0xffff;
	to->remote_qpn = CM_GSI_QPN;
	to->port = (uint32_t)id->dev;
	to->gid_index = id->gid_index;
}

/* Linux cm_ack_timeout(): the local ACK timeout from the CA's ACK delay and the path. */
static uint8_t cm_ack_timeout(uint8_t ca_ack_delay, uint8_t packet_life_time)
{
	int t = packet_life_time + 1;

	if (t >= ca_ack_delay)
		t += (ca_ack_delay >= t - 1);
	else
		t = ca_ack_delay + (t >= ca_ack_delay - 1);
	return (uint8_t)(t > 31 ? 31 : t);
}

static uint8_t cm_id_ack_timeout(const struct ctl *ctl, const struct ctl_cm_id *id)
{
	if (id->ack_timeout_set)
		return id->ack_timeout;
	return cm_ack_timeout(ctl->cfg.dev[id->dev < 0 ? 0 : id->dev].attr.local_ca_ack_delay,
			      id->path.packet_life_time);
}

/* The peer's address vector for a UD event. */
static void cm_ud_ah(struct ipc_ah_attr *ah, const struct ctl_cm_id *id)
{
	memset(ah, 0, sizeof(*ah));
	memcpy(ah->dgid, id->path.dgid, 16);
	ah->flow_label = ntohl(id->path.flow_label);
	ah->sgid_index = (uint8_t)id->gid_index;
	ah->hop_limit = id->path.hop_limit;
	ah->traffic_class = id->path.traffic_class;
	ah->is_global = 1;
	ah->sl = id->path.sl;
	ah->port_num = 1;
}

/* ---- the QP a CONNECT/ACCEPT names ---- */

static int cm_check_qp(const struct ctl_req *x, const struct ctl_cm_id *id, uint32_t qpn)
{
	struct ctl *ctl = x->conn->ctl;
	uint32_t idx = qpn - ctl->cfg.limits.qpn_base;
	struct ctl_qp *qp;

	if (qpn < ctl->cfg.limits.qpn_base || idx >= ctl->tab[CTL_KIND_QP].cap)
		return EINVAL;
	qp = ctl_table_at(&ctl->tab[CTL_KIND_QP], idx);
	if (qp->o.owner == NULL || qp->info.qpn != qpn)
		return EINVAL;
	/* a QP of this group, or of another connection of the same process */
	if (qp->o.owner != x->conn->group && (qp->o.owner->pid == 0 ||
					      qp->o.owner->pid != x->conn->pid))
		return EINVAL;
	if (id->dev >= 0 && qp->info.dev != (uint32_t)id->dev)
		return EINVAL;
	if (id->ud ? qp->info.qp_type != IBV_QPT_UD :
		     (qp->info.qp_type != IBV_QPT_RC && qp->info.qp_type != IBV_QPT_UC))
		return EINVAL;
	return 0;
}

/* ---- lib/cm callbacks ---- */

static void cm_loop_push(struct ctl *ctl, const struct cm_path *to, const uint8_t *mad, int dev,
			 uint32_t gid_index)
{
	struct ctl_cm *cm = ctl->cm;
	struct ctl_cm_loop *l;

	if (cm->loop_count == CM_LOOP_QUEUE) {
		cm->ctr[CTL_CM_CTR_LOOPBACK_DROPS]++;
		return;
	}
	l = &cm->loop[(cm->loop_head + cm->loop_count++) % CM_LOOP_QUEUE];
	memset(&l->from, 0, sizeof(l->from));
	memcpy(l->from.remote_gid, to->local_gid, 16);
	memcpy(l->from.local_gid, to->remote_gid, 16);
	l->from.traffic_class = to->traffic_class;
	l->from.hop_limit = to->hop_limit;
	l->from.pkey = 0xffff;
	l->from.remote_qpn = CM_GSI_QPN;
	l->from.port = (uint32_t)dev;
	l->from.gid_index = gid_index;
	memcpy(l->mad, mad, CM_MAD_SIZE);
	cm->ctr[CTL_CM_CTR_LOOPBACK]++;
}

static int cm_cb_send(void *ctx, const struct cm_path *to, const uint8_t mad[CM_MAD_SIZE])
{
	struct ctl *ctl = ctx;
	struct ctl_cm *cm = ctl->cm;
	uint32_t index;
	int dev = cm_find_gid(ctl, to->remote_gid, &index);
	int rc;

	if (dev >= 0) {
		cm_loop_push(ctl, to, mad, dev, index);
		return 0;
	}
	rc = cm->ops.send_mad ? cm->ops.send_mad(cm->ops.ctx, to, mad) : -ENETDOWN;
	if (rc < 0)
		cm->ctr[CTL_CM_CTR_SEND_ERRORS]++;
	return rc;
}

static void cm_conn_param_out(struct ipc_cm_conn_param *o, const uint8_t *pd, size_t len)
{
	if (len > sizeof(o->private_data))
		len = sizeof(o->private_data);
	memcpy(o->private_data, pd, len);
	o->private_data_len = (uint8_t)len;
}

/* The listener for a REQ of @p sid with IP header @p hdr (NULL: port space IB). */
static struct ctl_cm_id *cm_find_listener(struct ctl *ctl, uint64_t sid,
					  const struct cm_ip_hdr *hdr, bool *sid_match)
{
	struct ctl_cm_id *id, *wild = NULL;

	*sid_match = false;
	CM_FOREACH_ID(ctl, id) {
		struct cm_ip_addr bound;

		if (id->state != CMS_LISTEN)
			continue;
		if (cm_ip_service_id((enum cm_port_space)id->ps, ntohs(id->src.port)) != sid)
			continue;
		*sid_match = true;
		cm_addr_from_ipc(&id->src, &bound);
		if (!cm_ip_listen_match(&bound, id->afonly, hdr))
			continue;
		if (!addr_is_any(&id->src))
			return id;
		if (wild == NULL)
			wild = id;
	}
	return wild;
}

static struct ctl_cm_id *cm_new_passive(struct ctl *ctl, struct ctl_cm_id *l,
					const struct cm_event *ev, const struct cm_ip_hdr *hdr)
{
	struct ctl_cm_id *id;
	uint32_t index = 0;
	int dev;

	if (l->pending >= l->backlog || l->ch->dead || l->ch->count >= IPC_CM_EVENT_BACKLOG)
		return NULL;
	dev = cm_find_gid(ctl, ev->from->local_gid, &index);
	if (dev < 0)
		return NULL;
	id = ctl_table_alloc(&ctl->tab[CTL_KIND_CM_ID], l->o.owner, CTL_KIND_CM_ID, 0);
	if (id == NULL)
		return NULL;
	id->o.notify = l->o.notify;
	id->o.user_handle = l->o.user_handle; /* until ACCEPT: the listener's cookie */
	id->ch = l->ch;
	id->ch->o.refs++;
	id->ps = l->ps;
	id->qp_type = l->qp_type;
	id->ud = l->ud;
	id->tos = l->tos;
	id->tos_set = l->tos_set;
	id->afonly = l->afonly;
	id->dev = dev;
	id->gid_index = index;
	id->bound = false; /* takes no port of its own: the listener's */
	id->listener = ctl_obj_handle(&l->o);
	id->conn = ev->conn;
	memset(&id->src, 0, sizeof(id->src));
	memset(&id->dst, 0, sizeof(id->dst));
	if (hdr != NULL) {
		bool v4 = hdr->ip_version == 4;

		id->src.family = id->dst.family = v4 ? AF_INET : AF_INET6;
		memcpy(id->src.addr, hdr->dst, v4 ? 4 : 16);
		memcpy(id->dst.addr, hdr->src, v4 ? 4 : 16);
		id->src.port = l->src.port;
		id->dst.port = htons(hdr->src_port);
	} else {
		bool v4 = gid_is_v4(ev->from->remote_gid);

		id->src.family = id->dst.family = v4 ? AF_INET : AF_INET6;
		memcpy(id->src.addr, v4 ? ev->from->local_gid + 12 : ev->from->local_gid, v4 ? 4 : 16);
		memcpy(id->dst.addr, v4 ? ev->from->remote_gid + 12 : ev->from->remote_gid, v4 ? 4 : 16);
		id->src.port = l->src.port;
	}
	cm_build_path(ctl, id);
	memcpy(id->dmac, ev->from->remote_mac, 6);
	id->path.traffic_class = ev->from->traffic_class;
	if (ev->from->hop_limit)
		id->path.hop_limit = ev->from->hop_limit;
	id->state = CMS_REQ_RCVD;
	l->pending++;
	return id;
}

static void cm_on_req(struct ctl *ctl, const struct cm_event *ev)
{
	struct ctl_cm *cm = ctl->cm;
	uint64_t sid = ev->listen_service_id;
	bool sidr = ev->type == CM_EV_SIDR_REQ_RECEIVED;
	const uint8_t *pd = sidr ? ev->msg->sidr_req.private_data : ev->msg->req.private_data;
	size_t pdlen = sidr ? CM_SIDR_REQ_PRIVATE_DATA_SIZE : CM_REQ_PRIVATE_DATA_SIZE;
	struct cm_ip_hdr hdr;
	/* every IP id's REQ carries the header, whatever its port space (cma_user_data_offset) */
	const bool ip = true;
	bool sid_match;
	struct ctl_cm_id *l, *id;
	struct ipc_cm_event out;
	const uint64_t now = cm_now_us();

	if (ip && cm_ip_hdr_parse(pd, pdlen, &hdr) != 0) {
		cm->ctr[CTL_CM_CTR_REQ_BAD_HDR]++;
		cm_conn_destroy(cm->agent, ev->conn, now);
		return;
	}
	l = cm_find_listener(ctl, sid, ip ? &hdr : NULL, &sid_match);
	if (l == NULL) {
		cm->ctr[CTL_CM_CTR_REQ_NO_LISTENER]++;
		cm_conn_destroy(cm->agent, ev->conn, now); /* REJ consumer defined, as cma */
		return;
	}
	id = cm_new_passive(ctl, l, ev, ip ? &hdr : NULL);
	if (id == NULL) {
		cm->ctr[CTL_CM_CTR_REQ_BACKLOG]++;
		cm_conn_destroy(cm->agent, ev->conn, now);
		return;
	}
	cm_conn_set_cookie(cm->agent, ev->conn, ctl_obj_handle(&id->o));
	cm_ev_init(&out, id, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	out.uid = l->o.user_handle;
	if (ip) {
		pd += CM_IP_HDR_SIZE;
		pdlen -= CM_IP_HDR_SIZE;
	}
	cm_conn_param_out(&out.param, pd, pdlen);
	if (sidr) {
		id->ud = true;
		out.param.qkey = 0;
		cm_ud_ah(&out.ud_ah, id);
	} else {
		const struct cm_req *r = &ev->msg->req;

		id->remote_qpn = r->local_qpn;
		id->sq_psn = r->starting_psn; /* what the active side expects (see top) */
		id->rq_psn = cm_random24();
		id->responder_resources = r->initiator_depth;
		id->initiator_depth = r->responder_resources;
		id->retry_count = r->retry_count;
		id->rnr_retry_count = r->rnr_retry_count;
		id->path_mtu = r->path_mtu < id->path.mtu ? r->path_mtu : id->path.mtu;
		id->path.mtu = id->path_mtu;
		id->path.flow_label = htonl(r->primary.flow_label);
		id->path.sl = r->primary.sl;
		out.param.qp_num = r->local_qpn;
		out.param.responder_resources = r->responder_resources;
		out.param.initiator_depth = r->initiator_depth;
		out.param.flow_control = r->e2e_flow_control;
		out.param.retry_count = r->retry_count;
		out.param.rnr_retry_count = r->rnr_retry_count;
		out.param.srq = r->srq;
	}
	if (cm_ch_push(ctl, id->ch, ctl_obj_handle(&l->o), &out))
		id->o.events++;
}

static void cm_on_conn_event(struct ctl *ctl, struct ctl_cm_id *id, const struct cm_event *ev)
{
	struct ctl_cm *cm = ctl->cm;
	struct ipc_cm_event out;
	const struct cm_msg *m = ev->msg;
	uint64_t now = cm_now_us();

	switch (ev->type) {
	case CM_EV_REP_RECEIVED:
		if (id->state != CMS_CONNECT)
			return;
		id->remote_qpn = m->rep.local_qpn;
		id->sq_psn = m->rep.starting_psn; /* what the passive side expects (see top) */
		id->initiator_depth = m->rep.responder_resources < id->initiator_depth ?
					      m->rep.responder_resources : id->initiator_depth;
		id->responder_resources = m->rep.initiator_depth < id->responder_resources ?
						  m->rep.initiator_depth : id->responder_resources;
		id->rnr_retry_count = m->rep.rnr_retry_count;
		id->state = CMS_REP_RCVD;
		cm_ev_init(&out, id, RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
		cm_conn_param_out(&out.param, m->rep.private_data, CM_REP_PRIVATE_DATA_SIZE);
		out.param.qp_num = m->rep.local_qpn;
		out.param.responder_resources = m->rep.responder_resources;
		out.param.initiator_depth = m->rep.initiator_depth;
		out.param.flow_control = m->rep.e2e_flow_control;
		out.param.rnr_retry_count = m->rep.rnr_retry_count;
		out.param.srq = m->rep.srq;
		cm_id_report(ctl, id, &out);
		return;
	case CM_EV_RTU_RECEIVED:
		if (id->state != CMS_ACCEPTED)
			return;
		id->state = CMS_ESTABLISHED;
		cm_ev_init(&out, id, RDMA_CM_EVENT_ESTABLISHED, 0);
		cm_conn_param_out(&out.param, m->rtu.private_data, CM_RTU_PRIVATE_DATA_SIZE);
		out.param.qp_num = id->remote_qpn;
		cm_id_report(ctl, id, &out);
		return;
	case CM_EV_REJ_RECEIVED:
		id->state = CMS_DONE;
		cm_ev_init(&out, id, RDMA_CM_EVENT_REJECTED, m->rej.reason);
		cm_conn_param_out(&out.param, m->rej.private_data, CM_REJ_PRIVATE_DATA_SIZE);
		cm_id_report(ctl, id, &out);
		return;
	case CM_EV_DREQ_RECEIVED:
		if (id->state == CMS_ESTABLISHED || id->state == CMS_ACCEPTED ||
		    id->state == CMS_REP_RCVD) {
			id->state = CMS_DREQ_RCVD;
			cm_id_event(ctl, id, RDMA_CM_EVENT_DISCONNECTED, 0);
		} else if (id->state == CMS_DISCONNECT) {
			/*
			 * Crossing DREQs: lib/cm stopped waiting for the DREP of
			 * ours, and the peer's DREP will find us in TimeWait. As
			 * cma.c, the first of DREQ and DREP received is the
			 * DISCONNECTED event: this one.
			 */
			cm_send_drep(cm->agent, id->conn, NULL, 0, now);
			id->state = CMS_DONE;
			cm_id_event(ctl, id, RDMA_CM_EVENT_DISCONNECTED, 0);
		} else {
			cm_send_drep(cm->agent, id->conn, NULL, 0, now);
		}
		return;
	case CM_EV_DREP_RECEIVED:
	case CM_EV_DREQ_TIMEOUT:
		if (id->state == CMS_DISCONNECT) {
			id->state = CMS_DONE;
			cm_id_event(ctl, id, RDMA_CM_EVENT_DISCONNECTED, 0);
		}
		return;
	case CM_EV_TIMEWAIT_EXIT:
		cm_id_event(ctl, id, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
		return;
	case CM_EV_REQ_TIMEOUT:
	case CM_EV_REP_TIMEOUT:
	case CM_EV_SIDR_REQ_TIMEOUT:
		id->state = CMS_DONE;
		cm_id_event(ctl, id, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT);
		return;
	case CM_EV_PEER_TIMEOUT:
		id->state = CMS_DONE;
		return;
	case CM_EV_SIDR_REP_RECEIVED:
		if (id->state != CMS_CONNECT)
			return;
		if (m->sidr_rep.status != CM_SIDR_SUCCESS) {
			id->state = CMS_DONE;
			cm_ev_init(&out, id, RDMA_CM_EVENT_UNREACHABLE, m->sidr_rep.status);
		} else {
			id->state = CMS_ESTABLISHED;
			id->remote_qpn = m->sidr_rep.qpn;
			id->remote_qkey = m->sidr_rep.qkey;
			cm_ev_init(&out, id, RDMA_CM_EVENT_ESTABLISHED, 0);
			out.param.qp_num = m->sidr_rep.qpn;
			out.param.qkey = m->sidr_rep.qkey;
			cm_ud_ah(&out.ud_ah, id);
		}
		cm_conn_param_out(&out.param, m->sidr_rep.private_data,
				  CM_SIDR_REP_PRIVATE_DATA_SIZE);
		cm_conn_destroy(cm->agent, id->conn, now);
		id->conn = CM_CONN_INVALID;
		cm_id_report(ctl, id, &out);
		return;
	default:
		return;
	}
}

static void cm_cb_event(void *ctx, uint64_t cookie, const struct cm_event *ev)
{
	struct ctl *ctl = ctx;
	struct ctl_cm_id *id;

	if (ev->type == CM_EV_REQ_RECEIVED || ev->type == CM_EV_SIDR_REQ_RECEIVED) {
		cm_on_req(ctl, ev);
		return;
	}
	if (cookie & CM_LISTEN_COOKIE)
		return;
	id = cm_id_at(ctl, (uint32_t)cookie);
	if (id == NULL || id->conn != ev->conn)
		return; /* the id went away meanwhile */
	cm_on_conn_event(ctl, id, ev);
}

/* ---- lifecycle ---- */

int ctl_cm_create(struct ctl *ctl)
{
	const struct ctl_cm_limits *l = &ctl->cfg.cm_limits;
	struct cm_agent_config acfg = {
		.max_conns = l->max_conns ? l->max_conns : 2 * ctl->cfg.cm_limits.max_ids,
		.ca_guid = ctl->cfg.dev[0].attr.node_guid,
	};
	struct cm_ops ops = { .send = cm_cb_send, .event = cm_cb_event, .ctx = ctl };

	ctl->cm = calloc(1, sizeof(*ctl->cm));
	if (ctl->cm == NULL)
		return -ENOMEM;
	if (ctl->cfg.cm_ops != NULL)
		ctl->cm->ops = *ctl->cfg.cm_ops;
	ctl->cm->agent = cm_agent_create(&acfg, &ops);
	if (ctl->cm->agent == NULL) {
		free(ctl->cm);
		ctl->cm = NULL;
		return -ENOMEM;
	}
	return 0;
}

void ctl_cm_destroy(struct ctl *ctl)
{
	if (ctl->cm == NULL)
		return;
	cm_agent_destroy(ctl->cm->agent);
	free(ctl->cm);
	ctl->cm = NULL;
}

void ctl_cm_limits_default(struct ctl_cm_limits *l)
{
	if (l->max_ids == 0)
		l->max_ids = 1024;
	if (l->max_channels == 0)
		l->max_channels = 256;
	if (l->max_conns == 0)
		l->max_conns = 2 * l->max_ids;
}

/* Is any other listening id on @p sid? */
static bool cm_sid_listened(struct ctl *ctl, const struct ctl_cm_id *self, uint64_t sid)
{
	struct ctl_cm_id *o;

	CM_FOREACH_ID(ctl, o) {
		if (o != self && o->state == CMS_LISTEN &&
		    cm_ip_service_id((enum cm_port_space)o->ps, ntohs(o->src.port)) == sid)
			return true;
	}
	return false;
}

/* Everything an id holds on the wire and in other ids, before its slot goes. */
void ctl_cm_id_release(struct ctl *ctl, struct ctl_obj *o)
{
	struct ctl_cm_id *id = (struct ctl_cm_id *)o;
	struct ctl_cm *cm = ctl->cm;

	if (id->state == CMS_LISTEN) {
		uint64_t sid = cm_ip_service_id((enum cm_port_space)id->ps, ntohs(id->src.port));

		id->state = CMS_DONE;
		if (!cm_sid_listened(ctl, id, sid))
			cm_unlisten(cm->agent, sid);
	}
	if (id->state == CMS_ADDR_QUERY)
		cm->resolving--;
	if (id->listener != 0) {
		struct ctl_cm_id *l = cm_id_at(ctl, id->listener);

		if (l != NULL && l->pending > 0)
			l->pending--;
		id->listener = 0;
	}
	if (id->conn != CM_CONN_INVALID) {
		cm_conn_destroy(cm->agent, id->conn, cm_now_us());
		id->conn = CM_CONN_INVALID;
	}
	ctl_mcast_cm_id_gone(ctl, ctl_obj_handle(&id->o));
	id->state = CMS_DONE;
	id->bound = false;
}

void ctl_cm_id_freed(struct ctl *ctl, struct ctl_obj *o)
{
	struct ctl_cm_id *id = (struct ctl_cm_id *)o;

	(void)ctl;
	if (id->ch != NULL)
		id->ch->o.refs--;
	id->ch = NULL;
}

void ctl_cm_channel_freed(struct ctl *ctl, struct ctl_obj *o)
{
	struct ctl_cm_channel *ch = (struct ctl_cm_channel *)o;

	if (ch->count > 0) {
		ctl->cm->ctr[CTL_CM_CTR_EVENTS_DROPPED] += ch->count;
		ch->count = 0;
		if (ctl->cm->backlogged > 0)
			ctl->cm->backlogged--;
	}
	free(ch->backlog);
	ch->backlog = NULL;
	free(ch->sent);
	ch->sent = NULL;
	if (ch->fd >= 0)
		close(ch->fd);
	ch->fd = -1;
}

/* ---- the daemon's entry points ---- */

int ctl_cm_rx(struct ctl *ctl, const struct cm_path *from, const uint8_t *mad, size_t len)
{
	if (ctl->cm == NULL)
		return CM_MALFORMED_TRUNCATED;
	return cm_agent_rx(ctl->cm->agent, from, mad, len, cm_now_us());
}

unsigned int ctl_cm_tick(struct ctl *ctl)
{
	struct ctl_cm *cm = ctl->cm;
	uint64_t now = cm_now_us();
	unsigned int n = 0;

	if (cm == NULL)
		return 0;
	/* looped-back MADs: those queued now wait for the next tick */
	for (uint32_t k = cm->loop_count; k > 0; k--) {
		struct ctl_cm_loop l = cm->loop[cm->loop_head];

		cm->loop_head = (cm->loop_head + 1) % CM_LOOP_QUEUE;
		cm->loop_count--;
		cm_agent_rx(cm->agent, &l.from, l.mad, CM_MAD_SIZE, now);
		n++;
	}
	if (cm_agent_next_deadline(cm->agent) <= now)
		n += cm_agent_expire(cm->agent, now);
	n += cm_addr_tick(ctl, now);
	if (cm->backlogged > 0) {
		struct ctl_table *t = &ctl->tab[CTL_KIND_CM_CHANNEL];

		for (uint32_t i = 0; i < t->cap; i++) {
			struct ctl_cm_channel *ch = ctl_table_at(t, i);

			if (ch->o.owner != NULL && ch->count > 0 && !ch->paused)
				n += cm_ch_flush(ctl, ch);
		}
	}
	return n;
}

const uint64_t *ctl_cm_counters(const struct ctl *ctl)
{
	return ctl->cm ? cm_agent_counters(ctl->cm->agent) : NULL;
}

const uint64_t *ctl_cm_stats(const struct ctl *ctl)
{
	return ctl->cm ? ctl->cm->ctr : NULL;
}

void ctl_cm_usage(const struct ctl *ctl, uint32_t *ids, uint32_t *channels)
{
	*ids = ctl->tab[CTL_KIND_CM_ID].nused;
	*channels = ctl->tab[CTL_KIND_CM_CHANNEL].nused;
}

/* ---- handlers ---- */

static bool cm_fd_is_seqpacket(int fd)
{
	int v = 0;
	socklen_t len = sizeof(v);

	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &v, &len) < 0 || v != AF_UNIX)
		return false;
	len = sizeof(v);
	return getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &len) == 0 && v == SOCK_SEQPACKET;
}

/*
 * Bound what the channel's socket holds unread, and keep a copy of as many
 * last written events, so a migration can take an id's unread events back
 * (see "Migration" in ipc_cm.h). A send is admitted while the bytes charged
 * to the socket are below SO_SNDBUF, and each event is charged more than
 * its size (the kernel's skb truesize), so at most SO_SNDBUF / size + 1 wait.
 */
static int cm_ch_bound(struct ctl_cm_channel *ch)
{
	int want = (int)(CM_CH_SOCKET_EVENTS * sizeof(struct ipc_cm_event) / 2); /* doubled */
	int got = 0;
	socklen_t len = sizeof(got);

	if (setsockopt(ch->fd, SOL_SOCKET, SO_SNDBUF, &want, sizeof(want)) < 0 ||
	    getsockopt(ch->fd, SOL_SOCKET, SO_SNDBUF, &got, &len) < 0 || got <= 0)
		return EBADF;
	ch->sent_cap = (uint32_t)got / sizeof(struct ipc_cm_event) + 1;
	if (ch->sent_cap > CM_CH_SENT_MAX)
		return ENOBUFS;
	ch->sent = calloc(ch->sent_cap, sizeof(*ch->sent));
	return ch->sent ? 0 : ENOMEM;
}

int ctl_h_CM_CREATE_CHANNEL(const struct ctl_req *x)
{
	struct ctl *ctl = x->conn->ctl;
	struct ctl_cm_channel *ch;
	int fl, rc;

	if (x->nfds != 1 || !cm_fd_is_seqpacket(x->fds[0]))
		return EBADF;
	ch = ctl_table_alloc(&ctl->tab[CTL_KIND_CM_CHANNEL], x->conn, CTL_KIND_CM_CHANNEL,
			     x->req->u.req_CM_CREATE_CHANNEL.user_handle);
	if (ch == NULL)
		return ENOMEM;
	ch->fd = x->fds[0];
	x->fds[0] = -1; /* kept */
	rc = cm_ch_bound(ch);
	if (rc) {
		ctl_obj_destroy(ctl, &ch->o);
		return rc;
	}
	/* we only write: whatever the application writes is refused (EPIPE) */
	shutdown(ch->fd, SHUT_RD);
	fl = fcntl(ch->fd, F_GETFL);
	if (fl >= 0)
		fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK);
	x->rsp->u.rsp_CM_CREATE_CHANNEL.handle = ctl_obj_handle(&ch->o);
	return 0;
}

int ctl_h_CM_DESTROY_CHANNEL(const struct ctl_req *x)
{
	struct ctl *ctl = x->conn->ctl;
	struct ctl_cm_channel *ch = ctl_lookup(x->conn, CTL_KIND_CM_CHANNEL,
					       x->req->u.req_CM_DESTROY_CHANNEL.handle);
	struct ctl_cm_id *id;

	if (ch == NULL)
		return EINVAL;
	/* closing the kernel's rdma_cm file destroys its ids: so does this */
	CM_FOREACH_ID(ctl, id) {
		if (id->ch == ch)
			ctl_obj_destroy(ctl, &id->o);
	}
	return ctl_obj_destroy(ctl, &ch->o);
}

int ctl_h_CM_CREATE_ID(const struct ctl_req *x)
{
	const struct ipc_cm_create_id_req *q = &x->req->u.req_CM_CREATE_ID;
	struct ctl *ctl = x->conn->ctl;
	struct ctl_cm_channel *ch = ctl_lookup(x->conn, CTL_KIND_CM_CHANNEL, q->channel);
	struct ctl_cm_id *id;
	uint8_t type;

	if (ch == NULL)
		return EINVAL;
	switch (q->ps) {
	case RDMA_PS_TCP:
		type = IBV_QPT_RC;
		break;
	case RDMA_PS_UDP:
		type = IBV_QPT_UD;
		break;
	case RDMA_PS_IB:
		type = q->qp_type;
		if (type != IBV_QPT_RC && type != IBV_QPT_UC && type != IBV_QPT_UD)
			return EINVAL;
		break;
	default:
		/* RDMA_PS_IPOIB among them: its Q_Key comes from the IPoIB
		 * broadcast group's SA record (cma_set_qkey), and RoCE has no SA */
		return EPROTONOSUPPORT;
	}
	id = ctl_table_alloc(&ctl->tab[CTL_KIND_CM_ID], x->conn, CTL_KIND_CM_ID, q->uid);
	if (id == NULL)
		return ENOMEM;
	id->ch = ch;
	ch->o.refs++;
	id->ps = q->ps;
	id->qp_type = type;
	id->ud = type == IBV_QPT_UD;
	id->dev = -1;
	id->uid_set = true;
	id->state = CMS_IDLE;
	x->rsp->u.rsp_CM_CREATE_ID.handle = ctl_obj_handle(&id->o);
	return 0;
}

int ctl_h_CM_DESTROY_ID(const struct ctl_req *x)
{
	struct ctl_cm_id *id = cm_id_lookup(x, x->req->u.req_CM_DESTROY_ID.id);

	if (id == NULL)
		return EINVAL;
	x->rsp->u.rsp_CM_DESTROY_ID.events_reported = id->o.events;
	return ctl_obj_destroy(x->conn->ctl, &id->o);
}

int ctl_h_CM_BIND(const struct ctl_req *x)
{
	const struct ipc_cm_bind_req *q = &x->req->u.req_CM_BIND;
	struct ctl_cm_id *id = cm_id_lookup(x, q->id);

	if (id == NULL || id->bound || id->state != CMS_IDLE)
		return EINVAL;
	return cm_bind(x->conn->ctl, id, &q->addr);
}

int ctl_h_CM_RESOLVE_ADDR(const struct ctl_req *x)
{
	const struct ipc_cm_resolve_addr_req *q = &x->req->u.req_CM_RESOLVE_ADDR;
	struct ctl *ctl = x->conn->ctl;
	struct ctl_cm_id *id = cm_id_lookup(x, q->id);
	struct ipc_cm_addr src;
	uint32_t index;
	uint8_t gid[16];
	int rc;

	if (id == NULL || (id->state != CMS_IDLE && id->state != CMS_ADDR_RESOLVED))
		return EINVAL;
	if (!cm_valid_family(q->dst.family) || addr_is_any(&q->dst))
		return q->dst.family == AF_INET || q->dst.family == AF_INET6 ? EINVAL : EAFNOSUPPORT;
	if (q->src.family != 0 && q->src.family != q->dst.family)
		return EINVAL;
	if (!id->bound) {
		if (q->src.family != 0 && !addr_is_any(&q->src)) {
			src = q->src;
		} else {
			rc = cm_pick_source(ctl, &q->dst, &src);
			if (rc)
				return rc;
			src.port = q->src.family ? q->src.port : 0;
		}
		rc = cm_bind(ctl, id, &src);
		if (rc)
			return rc;
	} else if (id->dev < 0) {
		/* bound to the wildcard: the source follows the destination */
		if (id->src.family != q->dst.family && id->afonly)
			return EINVAL;
		rc = cm_pick_source(ctl, &q->dst, &src);
		if (rc)
			return rc;
		addr_to_gid(&src, gid);
		id->dev = cm_find_gid(ctl, gid, &index);
		id->gid_index = index;
		src.port = id->src.port;
		id->src = src;
	} else if (id->src.family != q->dst.family) {
		return EINVAL;
	}
	id->dst = q->dst;
	id->route = false;
	id->state = CMS_ADDR_QUERY;
	ctl->cm->resolving++;
	id->deadline_us = cm_now_us() + 1000u * (q->timeout_ms ? q->timeout_ms :
						CM_DEFAULT_TIMEOUT_MS);
	rc = cm_addr_try(ctl, id);
	if (rc != EAGAIN)
		cm_addr_done(ctl, id, rc);
	return 0;
}

int ctl_h_CM_RESOLVE_ROUTE(const struct ctl_req *x)
{
	struct ctl_cm_id *id = cm_id_lookup(x, x->req->u.req_CM_RESOLVE_ROUTE.id);

	if (id == NULL || id->state != CMS_ADDR_RESOLVED)
		return EINVAL;
	cm_build_path(x->conn->ctl, id);
	id->state = CMS_ROUTE_RESOLVED;
	cm_id_event(x->conn->ctl, id, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	return 0;
}

int ctl_h_CM_QUERY(const struct ctl_req *x)
{
	struct ctl *ctl = x->conn->ctl;
	struct ctl_cm_id *id = cm_id_lookup(x, x->req->u.req_CM_QUERY.id);
	struct ipc_cm_query_rsp *r = &x->rsp->u.rsp_CM_QUERY;

	if (id == NULL)
		return EINVAL;
	r->src = id->src;
	r->dst = id->dst;
	r->ps = id->ps;
	r->qp_type = id->qp_type;
	r->state = id->state;
	r->pkey = 0xffff;
	if (id->dev >= 0) {
		const struct ctl_device_cfg *d = &ctl->cfg.dev[id->dev];

		r->node_guid = d->attr.node_guid;
		memcpy(r->dev_name, d->name, sizeof(r->dev_name));
		r->port_num = 1;
		addr_to_gid(&id->src, r->sgid);
	}
	if (id->dst.family != 0)
		addr_to_gid(&id->dst, r->dgid);
	if (id->route) {
		r->num_paths = 1;
		r->path = id->path;
	}
	return 0;
}

int ctl_h_CM_LISTEN(const struct ctl_req *x)
{
	const struct ipc_cm_listen_req *q = &x->req->u.req_CM_LISTEN;
	struct ctl *ctl = x->conn->ctl;
	struct ctl_cm_id *id = cm_id_lookup(x, q->id);
	uint32_t backlog = q->backlog == 0 || q->backlog > IPC_CM_BACKLOG_MAX ?
				   IPC_CM_BACKLOG_MAX : q->backlog;
	uint64_t sid;
	int rc;

	if (id == NULL)
		return EINVAL;
	if (id->state == CMS_LISTEN) {
		id->backlog = backlog;
		return 0;
	}
	if (id->state != CMS_IDLE && id->state != CMS_ADDR_RESOLVED)
		return EINVAL;
	if (!id->bound) {
		struct ipc_cm_addr any = { .family = AF_INET };

		rc = cm_bind(ctl, id, &any);
		if (rc)
			return rc;
	}
	if (!cm_port_free(ctl, id, id->src.port, true))
		return EADDRINUSE;
	sid = cm_ip_service_id((enum cm_port_space)id->ps, ntohs(id->src.port));
	if (!cm_sid_listened(ctl, id, sid)) {
		rc = cm_listen(ctl->cm->agent, sid, 0, CM_LISTEN_COOKIE | sid);
		if (rc < 0)
			return -rc == EBUSY ? EADDRINUSE : -rc;
	}
	id->backlog = backlog;
	id->state = CMS_LISTEN;
	return 0;
}

static int cm_pd_check(const struct ipc_cm_conn_param *c, int max)
{
	return c->private_data_len > max ? EINVAL : 0;
}

static int cm_connect_ud(struct ctl *ctl, struct ctl_cm_id *id, const struct ipc_cm_conn_param *c)
{
	struct cm_sidr_req_param p;
	uint8_t pd[CM_SIDR_REQ_PRIVATE_DATA_SIZE];
	struct cm_ip_addr s, d;
	int off, rc;

	memset(&p, 0, sizeof(p));
	memset(pd, 0, sizeof(pd));
	cm_addr_from_ipc(&id->src, &s);
	cm_addr_from_ipc(&id->dst, &d);
	off = cm_ip_hdr_build(&s, &d, pd);
	if (off < 0)
		return EINVAL;
	if (cm_pd_check(c, CM_SIDR_REQ_PRIVATE_DATA_SIZE - off))
		return EINVAL;
	memcpy(pd + off, c->private_data, c->private_data_len);
	cm_path_to(id, &p.path);
	p.service_id = cm_ip_service_id((enum cm_port_space)id->ps, ntohs(id->dst.port));
	p.pkey = 0xffff;
	p.timeout = CM_RESPONSE_TIMEOUT;
	p.max_cm_retries = CM_MAX_CM_RETRIES;
	p.private_data_len = (uint8_t)(off + c->private_data_len);
	p.private_data = pd;
	rc = cm_send_sidr_req(ctl->cm->agent, ctl_obj_handle(&id->o), &p, cm_now_us(), &id->conn);
	if (rc < 0)
		return -rc == ENOSPC ? ENOMEM : -rc;
	id->state = CMS_CONNECT;
	return 0;
}

int ctl_h_CM_CONNECT(const struct ctl_req *x)
{
	const struct ipc_cm_connect_req *q = &x->req->u.req_CM_CONNECT;
	const struct ipc_cm_conn_param *c = &q->conn;
	struct ctl *ctl = x->conn->ctl;
	struct ctl_cm_id *id = cm_id_lookup(x, q->id);
	struct cm_req_param p;
	struct cm_req *r = &p.req;
	struct cm_ip_addr s, d;
	int off, rc;

	if (id == NULL || id->state != CMS_ROUTE_RESOLVED)
		return EINVAL;
	if (id->ud)
		return cm_connect_ud(ctl, id, c);
	rc = cm_check_qp(x, id, c->qp_num);
	if (rc)
		return rc;
	memset(&p, 0, sizeof(p));
	cm_addr_from_ipc(&id->src, &s);
	cm_addr_from_ipc(&id->dst, &d);
	off = cm_ip_hdr_build(&s, &d, r->private_data);
	if (off < 0)
		return EINVAL;
	if (cm_pd_check(c, CM_REQ_PRIVATE_DATA_SIZE - off) || c->retry_count > 7 ||
	    c->rnr_retry_count > 7)
		return EINVAL;
	memcpy(r->private_data + off, c->private_data, c->private_data_len);
	r->private_data_len = (uint8_t)(off + c->private_data_len);
	cm_path_to(id, &p.path);
	id->qpn = c->qp_num;
	id->rq_psn = cm_random24(); /* the REQ's starting PSN: what we receive from */
	id->responder_resources = c->responder_resources;
	id->initiator_depth = c->initiator_depth;
	id->retry_count = c->retry_count;
	id->rnr_retry_count = c->rnr_retry_count;
	id->path_mtu = id->path.mtu;
	r->service_id = cm_ip_service_id((enum cm_port_space)id->ps, ntohs(id->dst.port));
	r->local_qpn = c->qp_num;
	r->responder_resources = c->responder_resources;
	r->initiator_depth = c->initiator_depth;
	r->remote_cm_response_timeout = CM_RESPONSE_TIMEOUT;
	r->local_cm_response_timeout = CM_RESPONSE_TIMEOUT;
	r->transport_type = id->qp_type == IBV_QPT_UC ? CM_TRANSPORT_UC : CM_TRANSPORT_RC;
	r->e2e_flow_control = c->flow_control;
	r->starting_psn = id->rq_psn;
	r->retry_count = c->retry_count;
	r->pkey = 0xffff;
	r->path_mtu = id->path.mtu;
	r->rnr_retry_count = c->rnr_retry_count;
	r->max_cm_retries = CM_MAX_CM_RETRIES;
	r->srq = c->srq;
	r->primary.local_lid = 0xffff;
	r->primary.remote_lid = 0xffff;
	memcpy(r->primary.local_gid, id->path.sgid, 16);
	memcpy(r->primary.remote_gid, id->path.dgid, 16);
	r->primary.flow_label = ntohl(id->path.flow_label);
	r->primary.packet_rate = id->path.rate;
	r->primary.traffic_class = id->path.traffic_class;
	r->primary.hop_limit = id->path.hop_limit;
	r->primary.sl = id->path.sl;
	r->primary.subnet_local = id->path.hop_limit <= 1;
	r->primary.local_ack_timeout = cm_id_ack_timeout(ctl, id);
	p.packet_life_time = id->path.packet_life_time;
	rc = cm_send_req(ctl->cm->agent, ctl_obj_handle(&id->o), &p, cm_now_us(), &id->conn);
	if (rc < 0)
		return -rc == ENOSPC ? ENOMEM : -rc;
	id->state = CMS_CONNECT;
	return 0;
}

static int cm_accept_ud(struct ctl *ctl, struct ctl_cm_id *id, const struct ipc_cm_conn_param *c)
{
	struct cm_sidr_rep rep;
	int rc;

	if (cm_pd_check(c, CM_SIDR_REP_PRIVATE_DATA_SIZE))
		return EINVAL;
	memset(&rep, 0, sizeof(rep));
	rep.status = CM_SIDR_SUCCESS;
	rep.qpn = c->qp_num;
	rep.qkey = c->qkey ? c->qkey : CM_UDP_QKEY;
	rep.private_data_len = c->private_data_len;
	memcpy(rep.private_data, c->private_data, c->private_data_len);
	rc = cm_send_sidr_rep(ctl->cm->agent, id->conn, &rep, cm_now_us());
	if (rc < 0)
		return -rc;
	cm_conn_destroy(ctl->cm->agent, id->conn, cm_now_us());
	id->conn = CM_CONN_INVALID;
	id->state = CMS_ESTABLISHED;
	return 0;
}

/* The passive id is the application's now: its own cookie, off the listener's backlog. */
static void cm_adopt(struct ctl *ctl, struct ctl_cm_id *id, uint64_t uid)
{
	struct ctl_cm_id *l = id->listener ? cm_id_at(ctl, id->listener) : NULL;

	if (uid != 0)
		id->o.user_handle = uid;
	id->uid_set = true;
	if (l != NULL && l->pending > 0)
		l->pending--;
	id->listener = 0;
}

int ctl_h_CM_ACCEPT(const struct ctl_req *x)
{
	const struct ipc_cm_accept_req *q = &x->req->u.req_CM_ACCEPT;
	const struct ipc_cm_conn_param *c = &q->conn;
	struct ctl *ctl = x->conn->ctl;
	struct ctl_cm_id *id = cm_id_lookup(x, q->id);
	struct cm_rep rep;
	int rc;

	if (id == NULL)
		return EINVAL;
	if (id->state == CMS_REP_RCVD) {
		/* active side after CONNECT_RESPONSE: the RTU (librdmacm's completion) */
		if (cm_pd_check(c, CM_RTU_PRIVATE_DATA_SIZE))
			return EINVAL;
		rc = cm_send_rtu(ctl->cm->agent, id->conn, c->private_data, c->private_data_len,
				 cm_now_us());
		if (rc < 0)
			return -rc;
		id->state = CMS_ESTABLISHED;
		return 0;
	}
	if (id->state != CMS_REQ_RCVD)
		return EINVAL;
	if (id->ud) {
		rc = cm_check_qp(x, id, c->qp_num);
		if (rc == 0)
			rc = cm_accept_ud(ctl, id, c);
		if (rc == 0)
			cm_adopt(ctl, id, q->uid);
		return rc;
	}
	rc = cm_check_qp(x, id, c->qp_num);
	if (rc)
		return rc;
	if (cm_pd_check(c, CM_REP_PRIVATE_DATA_SIZE) || c->rnr_retry_count > 7)
		return EINVAL;
	memset(&rep, 0, sizeof(rep));
	id->qpn = c->qp_num;
	if (c->valid || c->responder_resources || c->initiator_depth) {
		id->responder_resources = c->responder_resources < id->responder_resources ?
						  c->responder_resources : id->responder_resources;
		id->initiator_depth = c->initiator_depth < id->initiator_depth ?
					      c->initiator_depth : id->initiator_depth;
	}
	rep.local_qpn = c->qp_num;
	rep.starting_psn = id->rq_psn;
	rep.responder_resources = id->responder_resources;
	rep.initiator_depth = id->initiator_depth;
	rep.target_ack_delay = ctl->cfg.dev[id->dev].attr.local_ca_ack_delay;
	rep.e2e_flow_control = c->flow_control;
	rep.rnr_retry_count = c->rnr_retry_count;
	rep.srq = c->srq;
	rep.private_data_len = c->private_data_len;
	memcpy(rep.private_data, c->private_data, c->private_data_len);
	rc = cm_send_rep(ctl->cm->agent, id->conn, &rep, cm_now_us());
	if (rc < 0)
		return -rc == ENOENT ? EINVAL : -rc;
	cm_adopt(ctl, id, q->uid);
	id->state = CMS_ACCEPTED;
	return 0;
}

int ctl_h_CM_REJECT(const struct ctl_req *x)
{
	const struct ipc_cm_reject_req *q = &x->req->u.req_CM_REJECT;
	struct ctl *ctl = x->conn->ctl;
	struct ctl_cm_id *id = cm_id_lookup(x, q->id);
	uint64_t now = cm_now_us();
	int rc;

	if (id == NULL || (id->state != CMS_REQ_RCVD && id->state != CMS_REP_RCVD))
		return EINVAL;
	if (id->ud) {
		struct cm_sidr_rep rep;

		if (q->private_data_len > CM_SIDR_REP_PRIVATE_DATA_SIZE)
			return EINVAL;
		memset(&rep, 0, sizeof(rep));
		rep.status = CM_SIDR_REJECT;
		rep.private_data_len = q->private_data_len;
		memcpy(rep.private_data, q->private_data, q->private_data_len);
		rc = cm_send_sidr_rep(ctl->cm->agent, id->conn, &rep, now);
	} else {
		if (q->private_data_len > CM_REJ_PRIVATE_DATA_SIZE)
			return EINVAL;
		rc = cm_send_rej(ctl->cm->agent, id->conn, q->reason ? q->reason :
				 CM_REJ_CONSUMER_DEFINED, NULL, 0, q->private_data,
				 q->private_data_len, now);
	}
	if (rc < 0)
		return -rc == ENOENT ? EINVAL : -rc;
	cm_adopt(ctl, id, 0);
	cm_conn_destroy(ctl->cm->agent, id->conn, now);
	id->conn = CM_CONN_INVALID;
	id->state = CMS_DONE;
	return 0;
}

int ctl_h_CM_DISCONNECT(const struct ctl_req *x)
{
	struct ctl *ctl = x->conn->ctl;
	struct ctl_cm_id *id = cm_id_lookup(x, x->req->u.req_CM_DISCONNECT.id);
	int rc;

	if (id == NULL)
		return EINVAL;
	switch (id->state) {
	case CMS_ESTABLISHED:
	case CMS_ACCEPTED:
		if (id->ud)
			return 0;
		rc = cm_send_dreq(ctl->cm->agent, id->conn, NULL, 0, cm_now_us());
		if (rc < 0)
			return -rc == ENOENT ? EINVAL : -rc;
		id->state = CMS_DISCONNECT;
		return 0;
	case CMS_DREQ_RCVD:
		rc = cm_send_drep(ctl->cm->agent, id->conn, NULL, 0, cm_now_us());
		id->state = CMS_DONE;
		return rc < 0 ? -rc : 0;
	case CMS_DISCONNECT:
	case CMS_DONE:
		return 0;
	default:
		return EINVAL;
	}
}

int ctl_h_CM_INIT_QP_ATTR(const struct ctl_req *x)
{
	const struct ipc_cm_id_req *q = &x->req->u.req_CM_INIT_QP_ATTR;
	struct ctl *ctl = x->conn->ctl;
	struct ctl_cm_id *id = cm_id_lookup(x, q->id);
	struct ipc_cm_init_qp_attr_rsp *r = &x->rsp->u.rsp_CM_INIT_QP_ATTR;
	struct qp_sem_conn_param cp;
	struct ibv_qp_attr attr;
	int mask = 0, rc;

	if (id == NULL || id->dev < 0)
		return EINVAL;
	memset(&cp, 0, sizeof(cp));
	cp.qp_type = (enum ibv_qp_type)id->qp_type;
	cp.port_num = 1;
	cp.pkey_index = 0;
	cp.access_flags = qp_sem_cm_access_flags(cp.qp_type, id->responder_resources);
	cp.qkey = id->ps == RDMA_PS_UDP ? CM_UDP_QKEY : 0;
	if (q->arg != IBV_QPS_INIT) {
		/* RTR/RTS need a connection (or, UD, nothing more) */
		if (!id->ud && id->state != CMS_REQ_RCVD && id->state != CMS_ACCEPTED &&
		    id->state != CMS_REP_RCVD && id->state != CMS_ESTABLISHED)
			return EINVAL;
		cp.ah_attr.is_global = 1;
		memcpy(cp.ah_attr.grh.dgid.raw, id->path.dgid, 16);
		cp.ah_attr.grh.sgid_index = (uint8_t)id->gid_index;
		cp.ah_attr.grh.hop_limit = id->path.hop_limit;
		cp.ah_attr.grh.traffic_class = id->path.traffic_class;
		cp.ah_attr.grh.flow_label = ntohl(id->path.flow_label);
		cp.ah_attr.sl = id->path.sl;
		cp.ah_attr.port_num = 1;
		cp.path_mtu = (enum ibv_mtu)(id->path_mtu ? id->path_mtu : id->path.mtu);
		cp.remote_qpn = id->remote_qpn;
		cp.rq_psn = id->rq_psn;
		cp.sq_psn = id->sq_psn;
		cp.responder_resources = id->responder_resources;
		cp.initiator_depth = id->initiator_depth;
		cp.min_rnr_timer = 0; /* as Linux's cm_init_qp_rtr_attr() */
		cp.timeout = cm_id_ack_timeout(ctl, id);
		cp.retry_cnt = id->retry_count;
		cp.rnr_retry = id->rnr_retry_count;
	}
	rc = qp_sem_init_attr(&cp, (enum ibv_qp_state)q->arg, &ctl->sem[id->dev].dev, &attr, &mask);
	if (rc)
		return rc;
	ipc_qp_attr_from_ibv(&attr, &r->attr);
	r->mask = (uint32_t)mask;
	return 0;
}

int ctl_h_CM_SET_OPTION(const struct ctl_req *x)
{
	const struct ipc_cm_option_req *q = &x->req->u.req_CM_SET_OPTION;
	struct ctl_cm_id *id = cm_id_lookup(x, q->id);
	int v = 0;

	if (id == NULL || q->optlen > IPC_CM_OPTVAL_MAX)
		return EINVAL;
	if (q->level != RDMA_OPTION_ID)
		return ENOSYS; /* RDMA_OPTION_IB_PATH: IB path records are not RoCE's */
	switch (q->optname) {
	case RDMA_OPTION_ID_TOS:
		if (q->optlen != sizeof(uint8_t))
			return EINVAL;
		id->tos = q->optval[0];
		id->tos_set = true;
		return 0;
	case RDMA_OPTION_ID_ACK_TIMEOUT:
		if (q->optlen != sizeof(uint8_t))
			return EINVAL;
		id->ack_timeout = q->optval[0] > 31 ? 31 : q->optval[0];
		id->ack_timeout_set = true;
		return 0;
	case RDMA_OPTION_ID_REUSEADDR:
	case RDMA_OPTION_ID_AFONLY:
		if (q->optlen != sizeof(int))
			return EINVAL;
		memcpy(&v, q->optval, sizeof(v));
		if (id->state != CMS_IDLE)
			return EINVAL;
		if (q->optname == RDMA_OPTION_ID_REUSEADDR) {
			if (id->bound && v && !id->reuseaddr)
				return EINVAL;
			id->reuseaddr = v != 0;
		} else {
			id->afonly = v != 0;
		}
		return 0;
	default:
		return ENOSYS;
	}
}

int ctl_h_CM_GET_OPTION(const struct ctl_req *x)
{
	const struct ipc_cm_option_req *q = &x->req->u.req_CM_GET_OPTION;
	struct ipc_cm_option_rsp *r = &x->rsp->u.rsp_CM_GET_OPTION;
	struct ctl_cm_id *id = cm_id_lookup(x, q->id);
	int v;

	if (id == NULL)
		return EINVAL;
	if (q->level != RDMA_OPTION_ID)
		return ENOSYS;
	switch (q->optname) {
	case RDMA_OPTION_ID_TOS:
		r->optlen = 1;
		r->optval[0] = id->tos;
		return 0;
	case RDMA_OPTION_ID_ACK_TIMEOUT:
		r->optlen = 1;
		r->optval[0] = cm_id_ack_timeout(x->conn->ctl, id);
		return 0;
	case RDMA_OPTION_ID_REUSEADDR:
	case RDMA_OPTION_ID_AFONLY:
		v = q->optname == RDMA_OPTION_ID_REUSEADDR ? id->reuseaddr : id->afonly;
		r->optlen = sizeof(v);
		memcpy(r->optval, &v, sizeof(v));
		return 0;
	default:
		return ENOSYS;
	}
}

int ctl_h_CM_NOTIFY(const struct ctl_req *x)
{
	const struct ipc_cm_id_req *q = &x->req->u.req_CM_NOTIFY;
	struct ctl *ctl = x->conn->ctl;
	struct ctl_cm_id *id = cm_id_lookup(x, q->id);

	if (id == NULL)
		return EINVAL;
	if (q->arg != IBV_EVENT_COMM_EST)
		return 0; /* as ib_cm_notify(): other events need no action */
	if (id->state != CMS_ACCEPTED)
		return 0;
	if (cm_establish(ctl->cm->agent, id->conn, cm_now_us()) < 0)
		return EINVAL;
	id->state = CMS_ESTABLISHED;
	cm_id_event(ctl, id, RDMA_CM_EVENT_ESTABLISHED, 0);
	return 0;
}

static void cm_id_set_channel(struct ctl_cm_id *id, struct ctl_cm_channel *ch)
{
	id->ch->o.refs--;
	id->ch = ch;
	ch->o.refs++;
}

/* Whether @p ch's socket may still hold an event of @p owner written after @p last_seq. */
static bool cm_ch_unread(const struct ctl_cm_channel *ch, uint32_t owner, uint32_t last_seq)
{
	for (uint32_t k = 0; k < ch->sent_n; k++) {
		const struct cm_ch_rec *r = &ch->sent[(ch->sent_next + ch->sent_cap - 1 - k) %
						      ch->sent_cap];

		if ((int32_t)(r->ev.seq - last_seq) <= 0)
			break;
		if (r->owner == owner)
			return true;
	}
	return false;
}

/*
 * An event of the migrating id @p id: onto @p to, after what is there
 * (ucma_migrate_id's list_splice_tail). The id a moved CONNECT_REQUEST
 * created (not accepted yet, so silent) follows its listener.
 */
static void cm_migrate_rec(struct ctl *ctl, struct ctl_cm_channel *from, struct ctl_cm_channel *to,
			   struct cm_ch_rec *r)
{
	if (r->ev.event == RDMA_CM_EVENT_CONNECT_REQUEST) {
		struct ctl_cm_id *nid = cm_id_at(ctl, r->ev.id);

		if (nid != NULL && nid->ch == from && !nid->uid_set)
			cm_id_set_channel(nid, to);
	}
	cm_ch_push(ctl, to, r->owner, &r->ev);
}

/*
 * Move @p owner's events from @p from to @p to: those in the backlog and,
 * when the caller read the socket dry (@p drained), those written after
 * @p last_seq (their copies are all that is left of them); the others
 * read then go back to the head of @p from's backlog in their order,
 * ahead of what waits there.
 */
static void cm_ch_migrate(struct ctl *ctl, struct ctl_cm_channel *from, struct ctl_cm_channel *to,
			  uint32_t owner, uint32_t last_seq, bool drained)
{
	uint32_t ring = cm_ch_ring(from), keep = 0, w = 0, first;
	uint32_t n = drained ? from->sent_n : 0;
	bool had = from->count > 0;

	/* the unread copies, oldest first; the others kept at the front of sent[] */
	first = (from->sent_next + from->sent_cap - from->sent_n) % from->sent_cap;
	for (uint32_t k = 0; k < n; k++) {
		struct cm_ch_rec *r = &from->sent[(first + k) % from->sent_cap];

		if ((int32_t)(r->ev.seq - last_seq) <= 0)
			continue;
		if (r->owner == owner)
			cm_migrate_rec(ctl, from, to, r);
		else
			from->sent[(first + keep++) % from->sent_cap] = *r;
	}
	/* the backlog: the id's out, the others compacted in order */
	for (uint32_t k = 0; k < from->count; k++) {
		struct cm_ch_rec *r = &from->backlog[(from->head + k) % ring];

		if (r->owner == owner)
			cm_migrate_rec(ctl, from, to, r);
		else
			from->backlog[(from->head + w++) % ring] = *r;
	}
	from->count = w;
	if (keep > 0 && cm_ch_backlog_alloc(from)) {
		from->head = (from->head + ring - keep) % ring;
		for (uint32_t k = 0; k < keep; k++)
			from->backlog[(from->head + k) % ring] = from->sent[(first + k) % from->sent_cap];
		from->count += keep;
	} else if (keep > 0) {
		ctl->cm->ctr[CTL_CM_CTR_EVENTS_DROPPED] += keep;
	}
	if (drained)
		from->sent_n = 0; /* nothing written waits there now */
	cm_ch_backlog_changed(ctl, from, had);
}

static int cm_migrate_lookup(const struct ctl_req *x, const struct ipc_cm_migrate_req *q,
			     struct ctl_cm_id **id, struct ctl_cm_channel **to,
			     struct ctl_cm_channel **from)
{
	*id = cm_id_lookup(x, q->id);
	*to = ctl_lookup(x->conn, CTL_KIND_CM_CHANNEL, q->channel);
	*from = ctl_lookup(x->conn, CTL_KIND_CM_CHANNEL, q->from);
	if (*id == NULL || *to == NULL || *from == NULL || (*id)->ch != *from)
		return EINVAL;
	return 0;
}

int ctl_h_CM_MIGRATE_ID(const struct ctl_req *x)
{
	const struct ipc_cm_migrate_req *q = &x->req->u.req_CM_MIGRATE_ID;
	struct ipc_cm_migrate_rsp *a = &x->rsp->u.rsp_CM_MIGRATE_ID;
	struct ctl_cm_channel *ch, *from;
	struct ctl_cm_id *id;
	uint32_t owner = q->id;

	if (cm_migrate_lookup(x, q, &id, &ch, &from) != 0)
		return EINVAL;
	a->events_reported = id->o.events;
	if (ch == from)
		return 0;
	if (from->paused || ch->paused)
		return EBUSY;
	if (cm_ch_unread(from, owner, q->last_seq)) {
		/* only the application's end can take those out: pause, let it read */
		from->paused = true;
		a->pending = 1;
		a->seq = from->written;
		return 0;
	}
	cm_ch_migrate(x->conn->ctl, from, ch, owner, q->last_seq, false);
	cm_id_set_channel(id, ch);
	cm_ch_flush(x->conn->ctl, from);
	return 0;
}

int ctl_h_CM_MIGRATE_COMMIT(const struct ctl_req *x)
{
	const struct ipc_cm_migrate_req *q = &x->req->u.req_CM_MIGRATE_COMMIT;
	struct ctl *ctl = x->conn->ctl;
	struct ctl_cm_channel *ch, *from = ctl_lookup(x->conn, CTL_KIND_CM_CHANNEL, q->from);
	struct ctl_cm_id *id;
	int rc;

	if (from == NULL || !from->paused)
		return EINVAL;
	from->paused = false;
	rc = cm_migrate_lookup(x, q, &id, &ch, &from);
	if (rc != 0 || ch == from || ch->paused) {
		/* the id went meanwhile: what the caller read goes back, nothing moves */
		cm_ch_migrate(ctl, from, from, 0, q->last_seq, true);
		cm_ch_flush(ctl, from);
		return rc ? rc : EINVAL;
	}
	x->rsp->u.rsp_CM_MIGRATE_COMMIT.events_reported = id->o.events;
	cm_ch_migrate(ctl, from, ch, q->id, q->last_seq, true);
	cm_id_set_channel(id, ch);
	cm_ch_flush(ctl, from);
	cm_ch_flush(ctl, ch);
	return 0;
}

/*
 * rdma_join_multicast: as Linux's cma.c for RoCE (cma_iboe_join_multicast),
 * the join completes locally: MULTICAST_JOIN with the group's MGID
 * (cma_iboe_set_mgid(): an IPv4 group IPv4-mapped), DestQP 0xFFFFFF and
 * RDMA_UDP_QKEY. The shim attaches the id's QP when it reads the event; that
 * attach is what joins the group on the link (the daemon's mcast.c), so a
 * send-only join sends no report, as the kernel's does not.
 */
int ctl_h_CM_JOIN_MCAST(const struct ctl_req *x)
{
	struct ctl *ctl = x->conn->ctl;
	const struct ipc_cm_join_mcast_req *q = &x->req->u.req_CM_JOIN_MCAST;
	struct ctl_cm_id *id = cm_id_lookup(x, q->id);
	struct ipc_cm_event ev;
	uint8_t mgid[16];
	uint32_t handle;
	int rc;

	if (id == NULL || !cm_valid_family(q->addr.family) ||
	    q->join_flags > RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER)
		return EINVAL;
	/* cma.c: bound to a device (ADDR_BOUND or ADDR_RESOLVED), a UD port space */
	if (id->dev < 0 || id->qp_type != IBV_QPT_UD ||
	    !(id->state == CMS_ADDR_RESOLVED || (id->state == CMS_IDLE && id->bound)))
		return EINVAL;
	addr_to_gid(&q->addr, mgid);
	if (!roce_gid_is_mcast(mgid))
		return EINVAL;
	rc = ctl_mcast_cm_join(ctl, x->conn->group, ctl_obj_handle(&id->o), mgid, q->join_flags,
			       &handle);
	if (rc) {
		ctl->cm->ctr[CTL_CM_CTR_MCAST_REFUSED]++;
		return rc;
	}
	ctl->cm->ctr[CTL_CM_CTR_MCAST_JOINS]++;
	x->rsp->u.rsp_CM_JOIN_MCAST.handle = handle;
	cm_ev_init(&ev, id, RDMA_CM_EVENT_MULTICAST_JOIN, 0);
	ev.param.qp_num = ROCE_MCAST_QPN;
	ev.param.qkey = CM_UDP_QKEY;
	memcpy(ev.ud_ah.dgid, mgid, 16);
	ev.ud_ah.sgid_index = (uint8_t)id->gid_index;
	ev.ud_ah.hop_limit = 64; /* cma.c: IPV6_DEFAULT_HOPLIMIT for RoCEv2 */
	ev.ud_ah.traffic_class = id->tos;
	ev.ud_ah.is_global = 1;
	ev.ud_ah.port_num = 1;
	cm_id_report(ctl, id, &ev);
	return 0;
}

int ctl_h_CM_LEAVE_MCAST(const struct ctl_req *x)
{
	struct ctl *ctl = x->conn->ctl;
	uint32_t id;

	return ctl_mcast_cm_leave(ctl, x->conn->group, x->req->u.req_CM_LEAVE_MCAST.id, &id);
}

size_t ctl_cm_id_size(void)
{
	return sizeof(struct ctl_cm_id);
}

size_t ctl_cm_channel_size(void)
{
	return sizeof(struct ctl_cm_channel);
}
