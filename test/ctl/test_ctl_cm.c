/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/ctl rdma_cm (ctl_cm.c): ids and event channels over the public
 * request path, two clients of one control plane talking through lib/cm on
 * the looped-back GSI path (both ends on GID ::ffff:198.18.0.1), the wire
 * through fake ops (MADs captured, neighbours from a table), and bad input
 * on both the socket and the GSI side.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "ctl_test.h"

/* ---- the fake wire ---- */

#define WIRE_MAX 64
static struct {
	struct cm_path to[WIRE_MAX];
	uint8_t mad[WIRE_MAX][CM_MAD_SIZE];
	unsigned int n;
	int resolve_rc;          /* what resolve answers for a foreign address */
} wire;

static int fake_send(void *ctx, const struct cm_path *to, const uint8_t *mad)
{
	(void)ctx;
	if (wire.n < WIRE_MAX) {
		wire.to[wire.n] = *to;
		memcpy(wire.mad[wire.n], mad, CM_MAD_SIZE);
	}
	wire.n++;
	return 0;
}

static int fake_resolve(void *ctx, uint32_t dev, const uint8_t dgid[16], uint8_t mac[6])
{
	(void)ctx;
	(void)dev;
	(void)dgid;
	memset(mac, 0x02, 6);
	return wire.resolve_rc;
}

static const struct ctl_cm_ops fake_ops = { .send_mad = fake_send, .resolve = fake_resolve };

/* A control plane with the fake wire and @p max_ids ids, which one client may hold all of. */
static void setup_with(uint32_t max_ids, uint32_t max_conns)
{
	struct ctl_config cfg = base_cfg();

	memset(&wire, 0, sizeof(wire));
	cfg.cm_ops = &fake_ops;
	cfg.cm_limits.max_ids = max_ids;
	cfg.cm_limits.max_channels = 16;
	cfg.cm_limits.max_conns = max_conns;
	if (cfg.quota.max_cm_ids < max_ids)
		cfg.quota.max_cm_ids = max_ids;
	ctl = ctl_create(&cfg);
	cr_assert_not_null(ctl);
}

static void setup(void)
{
	setup_with(64, 32);
}

static void teardown(void)
{
	ctl_destroy(ctl);
	ctl = NULL;
}

TestSuite(ctl_cm, .init = setup, .fini = teardown, .timeout = 30);

/* ---- client helpers ---- */

struct cmch {
	uint32_t h;
	int fd; /* the application's end */
};

static struct cmch channel(struct client *cl)
{
	struct ipc_msg m, r;
	int sp[2];
	struct cmch ch;

	cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp), 0);
	req(&m, IPC_OP_CM_CREATE_CHANNEL);
	cr_assert_eq(call(cl, &m, &sp[1], 1, &r, NULL), 0);
	ch.h = r.u.rsp_CM_CREATE_CHANNEL.handle;
	ch.fd = sp[0];
	return ch;
}

static int create_id(struct client *cl, struct cmch ch, uint16_t ps, uint64_t uid, uint32_t *h)
{
	struct ipc_msg m, r;
	int rc;

	req(&m, IPC_OP_CM_CREATE_ID);
	m.u.req_CM_CREATE_ID.uid = uid;
	m.u.req_CM_CREATE_ID.channel = ch.h;
	m.u.req_CM_CREATE_ID.ps = ps;
	m.u.req_CM_CREATE_ID.qp_type = ps == RDMA_PS_UDP ? IBV_QPT_UD : IBV_QPT_RC;
	rc = call(cl, &m, NULL, 0, &r, NULL);
	*h = r.u.rsp_CM_CREATE_ID.handle;
	return rc;
}

static struct ipc_cm_addr v4(const char *ip, uint16_t port)
{
	struct ipc_cm_addr a = { .family = AF_INET, .port = htons(port) };

	inet_pton(AF_INET, ip, a.addr);
	return a;
}

static int bind_id(struct client *cl, uint32_t id, struct ipc_cm_addr a)
{
	struct ipc_msg m, r;

	req(&m, IPC_OP_CM_BIND);
	m.u.req_CM_BIND.id = id;
	m.u.req_CM_BIND.addr = a;
	return call(cl, &m, NULL, 0, &r, NULL);
}

static int listen_id(struct client *cl, uint32_t id, uint32_t backlog)
{
	struct ipc_msg m, r;

	req(&m, IPC_OP_CM_LISTEN);
	m.u.req_CM_LISTEN.id = id;
	m.u.req_CM_LISTEN.backlog = backlog;
	return call(cl, &m, NULL, 0, &r, NULL);
}

static int resolve_addr(struct client *cl, uint32_t id, struct ipc_cm_addr dst, uint32_t ms)
{
	struct ipc_msg m, r;

	req(&m, IPC_OP_CM_RESOLVE_ADDR);
	m.u.req_CM_RESOLVE_ADDR.id = id;
	m.u.req_CM_RESOLVE_ADDR.dst = dst;
	m.u.req_CM_RESOLVE_ADDR.timeout_ms = ms;
	return call(cl, &m, NULL, 0, &r, NULL);
}

static int simple(struct client *cl, enum ipc_op op, uint32_t id, uint32_t arg)
{
	struct ipc_msg m, r;

	req(&m, op);
	m.u.req_CM_DISCONNECT.id = id;
	m.u.req_CM_DISCONNECT.arg = arg;
	return call(cl, &m, NULL, 0, &r, NULL);
}

/* CM_MIGRATE_ID or CM_MIGRATE_COMMIT of @p id from @p from to @p to. */
static int migrate(struct client *cl, enum ipc_op op, uint32_t id, struct cmch to,
		   struct cmch from, uint32_t last_seq, struct ipc_cm_migrate_rsp *o)
{
	struct ipc_msg m, r;
	int rc;

	req(&m, op);
	m.u.req_CM_MIGRATE_ID.id = id;
	m.u.req_CM_MIGRATE_ID.channel = to.h;
	m.u.req_CM_MIGRATE_ID.from = from.h;
	m.u.req_CM_MIGRATE_ID.last_seq = last_seq;
	rc = call(cl, &m, NULL, 0, &r, NULL);
	if (o != NULL)
		*o = r.u.rsp_CM_MIGRATE_ID;
	return rc;
}

/* The next event on @p ch within @p ms, ticking the CM meanwhile; event 0xffff: none. */
static struct ipc_cm_event next_event(struct cmch ch, int ms)
{
	struct ipc_cm_event ev = { .event = 0xffff };
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		ssize_t n;

		ctl_cm_tick(ctl);
		n = recv(ch.fd, &ev, sizeof(ev), MSG_DONTWAIT);
		if (n == (ssize_t)sizeof(ev))
			return ev;
		cr_assert(n < 0 && errno == EAGAIN, "a whole event per datagram");
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 > ms)
			return (struct ipc_cm_event){ .event = 0xffff };
		poll(NULL, 0, 1);
	}
}

static struct ipc_cm_event expect(struct cmch ch, uint32_t type)
{
	struct ipc_cm_event ev = next_event(ch, 3000);

	cr_assert_eq(ev.event, type, "event %u (status %d), expected %u", ev.event, ev.status,
		     type);
	return ev;
}

static uint32_t qp_of(struct client *cl, uint32_t type)
{
	struct ipc_create_qp_rsp q;
	uint32_t pd = alloc_pd(cl), cq = create_cq(cl, 8, IPC_HANDLE_NONE);

	cr_assert_eq(create_qp(cl, pd, cq, type, &q), 0);
	return q.qpn;
}

static int connect_id(struct client *cl, uint32_t id, uint32_t qpn, const char *pd)
{
	struct ipc_msg m, r;

	req(&m, IPC_OP_CM_CONNECT);
	m.u.req_CM_CONNECT.id = id;
	m.u.req_CM_CONNECT.conn.qp_num = qpn;
	m.u.req_CM_CONNECT.conn.responder_resources = 1;
	m.u.req_CM_CONNECT.conn.initiator_depth = 1;
	m.u.req_CM_CONNECT.conn.retry_count = 7;
	m.u.req_CM_CONNECT.conn.rnr_retry_count = 7;
	if (pd) {
		m.u.req_CM_CONNECT.conn.private_data_len = (uint8_t)strlen(pd);
		memcpy(m.u.req_CM_CONNECT.conn.private_data, pd, strlen(pd));
	}
	return call(cl, &m, NULL, 0, &r, NULL);
}

static int accept_id(struct client *cl, uint32_t id, uint32_t qpn, uint64_t uid, const char *pd)
{
	struct ipc_msg m, r;

	req(&m, IPC_OP_CM_ACCEPT);
	m.u.req_CM_ACCEPT.id = id;
	m.u.req_CM_ACCEPT.uid = uid;
	m.u.req_CM_ACCEPT.conn.qp_num = qpn;
	m.u.req_CM_ACCEPT.conn.qkey = 0x1234;
	m.u.req_CM_ACCEPT.conn.responder_resources = 1;
	m.u.req_CM_ACCEPT.conn.initiator_depth = 1;
	m.u.req_CM_ACCEPT.conn.rnr_retry_count = 7;
	m.u.req_CM_ACCEPT.conn.valid = 1;
	if (pd) {
		m.u.req_CM_ACCEPT.conn.private_data_len = (uint8_t)strlen(pd);
		memcpy(m.u.req_CM_ACCEPT.conn.private_data, pd, strlen(pd));
	}
	return call(cl, &m, NULL, 0, &r, NULL);
}

static int init_attr(struct client *cl, uint32_t id, uint32_t state, struct ipc_cm_init_qp_attr_rsp *o)
{
	struct ipc_msg m, r;
	int rc;

	req(&m, IPC_OP_CM_INIT_QP_ATTR);
	m.u.req_CM_INIT_QP_ATTR.id = id;
	m.u.req_CM_INIT_QP_ATTR.arg = state;
	rc = call(cl, &m, NULL, 0, &r, NULL);
	*o = r.u.rsp_CM_INIT_QP_ATTR;
	return rc;
}

/* A listener on 198.18.0.1:@p port and an active id routed to it. */
struct pair {
	struct client s, c;
	struct cmch sch, cch;
	uint32_t lid, cid;
};

static void pair_up(struct pair *p, uint16_t ps, uint16_t port)
{
	client_open(&p->s, true);
	client_open(&p->c, true);
	p->sch = channel(&p->s);
	p->cch = channel(&p->c);
	cr_assert_eq(create_id(&p->s, p->sch, ps, 0x5e, &p->lid), 0);
	cr_assert_eq(bind_id(&p->s, p->lid, v4("198.18.0.1", port)), 0);
	cr_assert_eq(listen_id(&p->s, p->lid, 4), 0);
	cr_assert_eq(create_id(&p->c, p->cch, ps, 0xc1, &p->cid), 0);
	cr_assert_eq(resolve_addr(&p->c, p->cid, v4("198.18.0.1", port), 1000), 0);
	cr_assert_eq(expect(p->cch, RDMA_CM_EVENT_ADDR_RESOLVED).uid, 0xc1);
	cr_assert_eq(simple(&p->c, IPC_OP_CM_RESOLVE_ROUTE, p->cid, 1000), 0);
	expect(p->cch, RDMA_CM_EVENT_ROUTE_RESOLVED);
}

static void pair_down(struct pair *p)
{
	close(p->sch.fd);
	close(p->cch.fd);
	client_close(&p->c);
	client_close(&p->s);
}

Test(ctl_cm, rc_connect_accept_disconnect_over_loopback)
{
	struct pair p;
	struct ipc_cm_event ev;
	struct ipc_cm_init_qp_attr_rsp a_rtr, a_rts, p_rtr, p_rts, init;
	struct ipc_msg m, r;
	uint32_t cqpn, sqpn, nid;

	pair_up(&p, RDMA_PS_TCP, 7471);
	cqpn = qp_of(&p.c, IBV_QPT_RC);
	sqpn = qp_of(&p.s, IBV_QPT_RC);
	cr_assert_eq(init_attr(&p.c, p.cid, IBV_QPS_INIT, &init), 0);
	cr_assert(init.mask & IBV_QP_ACCESS_FLAGS);
	cr_assert_eq(init.attr.port_num, 1);
	cr_assert_eq(init_attr(&p.c, p.cid, IBV_QPS_RTR, &a_rtr), EINVAL, "no connection yet");
	cr_assert_eq(connect_id(&p.c, p.cid, cqpn, "hello"), 0);

	ev = expect(p.sch, RDMA_CM_EVENT_CONNECT_REQUEST);
	cr_assert_eq(ev.uid, 0x5e, "the listener's cookie");
	cr_assert_neq(ev.id, p.lid, "a new id");
	cr_assert_eq(ev.param.qp_num, cqpn);
	cr_assert_eq(memcmp(ev.param.private_data, "hello", 5), 0, "IP header stripped");
	cr_assert_eq(ev.param.private_data_len, CM_REQ_PRIVATE_DATA_SIZE - CM_IP_HDR_SIZE);
	nid = ev.id;

	/* the new id knows both addresses */
	req(&m, IPC_OP_CM_QUERY);
	m.u.req_CM_QUERY.id = nid;
	cr_assert_eq(call(&p.s, &m, NULL, 0, &r, NULL), 0);
	cr_assert_eq(r.u.rsp_CM_QUERY.src.port, htons(7471));
	cr_assert_eq(r.u.rsp_CM_QUERY.dst.family, AF_INET);
	cr_assert_neq(r.u.rsp_CM_QUERY.dst.port, 0);
	cr_assert_str_eq(r.u.rsp_CM_QUERY.dev_name, "dpdk_roce0");
	cr_assert_eq(r.u.rsp_CM_QUERY.num_paths, 1);

	cr_assert_eq(init_attr(&p.s, nid, IBV_QPS_RTR, &p_rtr), 0);
	cr_assert_eq(init_attr(&p.s, nid, IBV_QPS_RTS, &p_rts), 0);
	cr_assert_eq(p_rtr.attr.dest_qp_num, cqpn);
	cr_assert(p_rtr.mask & IBV_QP_AV);
	cr_assert_eq(accept_id(&p.s, nid, sqpn, 0xacce, "world"), 0);

	ev = expect(p.cch, RDMA_CM_EVENT_CONNECT_RESPONSE);
	cr_assert_eq(ev.uid, 0xc1);
	cr_assert_eq(ev.param.qp_num, sqpn);
	cr_assert_eq(memcmp(ev.param.private_data, "world", 5), 0);
	cr_assert_eq(init_attr(&p.c, p.cid, IBV_QPS_RTR, &a_rtr), 0);
	cr_assert_eq(init_attr(&p.c, p.cid, IBV_QPS_RTS, &a_rts), 0);
	cr_assert_eq(a_rtr.attr.dest_qp_num, sqpn);
	/* each side's send PSN is the other's receive PSN */
	cr_assert_eq(a_rts.attr.sq_psn, p_rtr.attr.rq_psn);
	cr_assert_eq(p_rts.attr.sq_psn, a_rtr.attr.rq_psn);
	cr_assert_eq(a_rts.attr.retry_cnt, 7);

	/* the active side's ACCEPT is the RTU */
	req(&m, IPC_OP_CM_ACCEPT);
	m.u.req_CM_ACCEPT.id = p.cid;
	cr_assert_eq(call(&p.c, &m, NULL, 0, &r, NULL), 0);
	ev = expect(p.sch, RDMA_CM_EVENT_ESTABLISHED);
	cr_assert_eq(ev.uid, 0xacce, "ACCEPT's cookie");
	cr_assert_eq(ev.id, nid);

	cr_assert_eq(simple(&p.c, IPC_OP_CM_DISCONNECT, p.cid, 0), 0);
	expect(p.sch, RDMA_CM_EVENT_DISCONNECTED);
	cr_assert_eq(simple(&p.s, IPC_OP_CM_DISCONNECT, nid, 0), 0);
	expect(p.cch, RDMA_CM_EVENT_DISCONNECTED);

	req(&m, IPC_OP_CM_DESTROY_ID);
	m.u.req_CM_DESTROY_ID.id = p.cid;
	cr_assert_eq(call(&p.c, &m, NULL, 0, &r, NULL), 0);
	cr_assert_eq(r.u.rsp_CM_DESTROY_ID.events_reported, 4, "addr, route, response, disconnected");
	pair_down(&p);
	uint32_t ids, chs;

	ctl_cm_usage(ctl, &ids, &chs);
	cr_assert_eq(ids, 0);
	cr_assert_eq(chs, 0);
}

Test(ctl_cm, reject_carries_reason_and_private_data)
{
	struct pair p;
	struct ipc_cm_event ev;
	struct ipc_msg m, r;

	pair_up(&p, RDMA_PS_TCP, 7472);
	cr_assert_eq(connect_id(&p.c, p.cid, qp_of(&p.c, IBV_QPT_RC), NULL), 0);
	ev = expect(p.sch, RDMA_CM_EVENT_CONNECT_REQUEST);
	req(&m, IPC_OP_CM_REJECT);
	m.u.req_CM_REJECT.id = ev.id;
	m.u.req_CM_REJECT.private_data_len = 3;
	memcpy(m.u.req_CM_REJECT.private_data, "no!", 3);
	cr_assert_eq(call(&p.s, &m, NULL, 0, &r, NULL), 0);
	cr_assert_eq(call(&p.s, &m, NULL, 0, &r, NULL), EINVAL, "rejected already");
	ev = expect(p.cch, RDMA_CM_EVENT_REJECTED);
	cr_assert_eq(ev.status, CM_REJ_CONSUMER_DEFINED);
	cr_assert_eq(memcmp(ev.param.private_data, "no!", 3), 0);
	pair_down(&p);
}

Test(ctl_cm, connect_to_a_port_nobody_listens_on_is_rejected)
{
	struct pair p;
	struct ipc_cm_event ev;
	uint32_t other;

	pair_up(&p, RDMA_PS_TCP, 7473);
	cr_assert_eq(create_id(&p.c, p.cch, RDMA_PS_TCP, 0xc2, &other), 0);
	cr_assert_eq(resolve_addr(&p.c, other, v4("198.18.0.1", 9), 1000), 0);
	expect(p.cch, RDMA_CM_EVENT_ADDR_RESOLVED);
	cr_assert_eq(simple(&p.c, IPC_OP_CM_RESOLVE_ROUTE, other, 1000), 0);
	expect(p.cch, RDMA_CM_EVENT_ROUTE_RESOLVED);
	cr_assert_eq(connect_id(&p.c, other, qp_of(&p.c, IBV_QPT_RC), NULL), 0);
	ev = expect(p.cch, RDMA_CM_EVENT_REJECTED);
	cr_assert_eq(ev.uid, 0xc2);
	cr_assert_eq(ev.status, CM_REJ_INVALID_SERVICE_ID, "as ib_cm answers: %d", ev.status);
	cr_assert_geq(ctl_cm_counters(ctl)[CM_CTR_REJ_TX_INVALID_SID], 1);
	pair_down(&p);
}

Test(ctl_cm, dying_client_disconnects_on_the_wire)
{
	struct pair p;
	struct ipc_cm_event ev;
	struct ipc_msg m, r;

	pair_up(&p, RDMA_PS_TCP, 7474);
	cr_assert_eq(connect_id(&p.c, p.cid, qp_of(&p.c, IBV_QPT_RC), NULL), 0);
	ev = expect(p.sch, RDMA_CM_EVENT_CONNECT_REQUEST);
	cr_assert_eq(accept_id(&p.s, ev.id, qp_of(&p.s, IBV_QPT_RC), 0x77, NULL), 0);
	expect(p.cch, RDMA_CM_EVENT_CONNECT_RESPONSE);
	req(&m, IPC_OP_CM_ACCEPT);
	m.u.req_CM_ACCEPT.id = p.cid;
	cr_assert_eq(call(&p.c, &m, NULL, 0, &r, NULL), 0);
	expect(p.sch, RDMA_CM_EVENT_ESTABLISHED);
	/* the client dies: its group goes, its connection is disconnected (DREQ) */
	client_close(&p.c);
	close(p.cch.fd);
	ev = expect(p.sch, RDMA_CM_EVENT_DISCONNECTED);
	cr_assert_eq(ev.uid, 0x77);
	close(p.sch.fd);
	client_close(&p.s);
}

Test(ctl_cm, half_open_connection_of_a_dying_listener_is_rejected)
{
	struct pair p;

	pair_up(&p, RDMA_PS_TCP, 7475);
	cr_assert_eq(connect_id(&p.c, p.cid, qp_of(&p.c, IBV_QPT_RC), NULL), 0);
	expect(p.sch, RDMA_CM_EVENT_CONNECT_REQUEST);
	client_close(&p.s);
	close(p.sch.fd);
	cr_assert_eq(expect(p.cch, RDMA_CM_EVENT_REJECTED).status, CM_REJ_CONSUMER_DEFINED);
	close(p.cch.fd);
	client_close(&p.c);
}

Test(ctl_cm, ud_ids_resolve_with_sidr)
{
	struct pair p;
	struct ipc_cm_event ev;
	uint32_t sqpn;

	pair_up(&p, RDMA_PS_UDP, 7476);
	cr_assert_eq(connect_id(&p.c, p.cid, 0, "sidr"), 0);
	ev = expect(p.sch, RDMA_CM_EVENT_CONNECT_REQUEST);
	cr_assert_eq(memcmp(ev.param.private_data, "sidr", 4), 0);
	cr_assert_eq(ev.ud_ah.is_global, 1);
	sqpn = qp_of(&p.s, IBV_QPT_UD);
	cr_assert_eq(accept_id(&p.s, ev.id, qp_of(&p.s, IBV_QPT_RC), 1, NULL), EINVAL,
		     "an RC QP for a UD id");
	cr_assert_eq(accept_id(&p.s, ev.id, sqpn, 1, NULL), 0);
	ev = expect(p.cch, RDMA_CM_EVENT_ESTABLISHED);
	cr_assert_eq(ev.param.qp_num, sqpn);
	cr_assert_eq(ev.param.qkey, 0x1234);
	cr_assert_eq(ev.ud_ah.dgid[15], 1);
	pair_down(&p);
}

Test(ctl_cm, ports_reuseaddr_and_wildcards)
{
	struct client a;
	struct cmch ch;
	uint32_t x, y, z;
	struct ipc_msg m, r;
	int one = 1;

	client_open(&a, true);
	ch = channel(&a);
	cr_assert_eq(create_id(&a, ch, RDMA_PS_TCP, 1, &x), 0);
	cr_assert_eq(create_id(&a, ch, RDMA_PS_TCP, 2, &y), 0);
	cr_assert_eq(create_id(&a, ch, RDMA_PS_UDP, 3, &z), 0);
	cr_assert_eq(bind_id(&a, x, v4("198.18.0.9", 0)), EADDRNOTAVAIL, "not ours");
	cr_assert_eq(bind_id(&a, x, v4("198.18.0.1", 5000)), 0);
	cr_assert_eq(bind_id(&a, x, v4("198.18.0.1", 5001)), EINVAL, "bound already");
	cr_assert_eq(bind_id(&a, y, v4("0.0.0.0", 5000)), EADDRINUSE, "wildcard overlaps");
	cr_assert_eq(bind_id(&a, z, v4("198.18.0.1", 5000)), 0, "another port space");
	req(&m, IPC_OP_CM_SET_OPTION);
	m.u.req_CM_SET_OPTION.id = y;
	m.u.req_CM_SET_OPTION.level = RDMA_OPTION_ID;
	m.u.req_CM_SET_OPTION.optname = RDMA_OPTION_ID_REUSEADDR;
	m.u.req_CM_SET_OPTION.optlen = 1;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), EINVAL, "optlen of an int");
	m.u.req_CM_SET_OPTION.optlen = sizeof(int);
	memcpy(m.u.req_CM_SET_OPTION.optval, &one, sizeof(one));
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), 0);
	m.u.req_CM_SET_OPTION.id = x;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), EINVAL, "bound without it");
	m.u.req_CM_SET_OPTION.optname = 99;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), ENOSYS);
	m.u.req_CM_SET_OPTION.level = RDMA_OPTION_IB;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), ENOSYS);
	cr_assert_eq(bind_id(&a, y, v4("0.0.0.0", 0)), 0, "an ephemeral port");
	req(&m, IPC_OP_CM_QUERY);
	m.u.req_CM_QUERY.id = y;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), 0);
	cr_assert_geq(ntohs(r.u.rsp_CM_QUERY.src.port), 32768);
	cr_assert_eq(r.u.rsp_CM_QUERY.port_num, 0, "wildcard: no device yet");
	cr_assert_eq(listen_id(&a, x, 1), 0);
	/* TOS */
	req(&m, IPC_OP_CM_SET_OPTION);
	m.u.req_CM_SET_OPTION.id = y;
	m.u.req_CM_SET_OPTION.optname = RDMA_OPTION_ID_TOS;
	m.u.req_CM_SET_OPTION.optlen = 1;
	m.u.req_CM_SET_OPTION.optval[0] = 0x20;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), 0);
	req(&m, IPC_OP_CM_GET_OPTION);
	m.u.req_CM_GET_OPTION.id = y;
	m.u.req_CM_GET_OPTION.optname = RDMA_OPTION_ID_TOS;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), 0);
	cr_assert_eq(r.u.rsp_CM_GET_OPTION.optval[0], 0x20);
	/* multicast: an id that is not UD, or no id */
	req(&m, IPC_OP_CM_JOIN_MCAST);
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), EINVAL);
	m.u.req_CM_JOIN_MCAST.id = y;
	m.u.req_CM_JOIN_MCAST.addr.family = AF_INET;
	m.u.req_CM_JOIN_MCAST.addr.addr[0] = 239;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), EINVAL);
	close(ch.fd);
	client_close(&a);
}

Test(ctl_cm, handles_and_qps_are_checked)
{
	struct pair p;
	struct client other;
	struct cmch och;
	uint32_t oid;
	struct ipc_msg m, r;

	pair_up(&p, RDMA_PS_TCP, 7477);
	client_open(&other, true);
	och = channel(&other);
	/* another group's ids and channels are unknown */
	cr_assert_eq(create_id(&other, p.cch, RDMA_PS_TCP, 1, &oid), EINVAL);
	cr_assert_eq(simple(&other, IPC_OP_CM_DISCONNECT, p.cid, 0), EINVAL);
	cr_assert_eq(simple(&other, IPC_OP_CM_DESTROY_ID, p.lid, 0), EINVAL);
	cr_assert_eq(migrate(&other, IPC_OP_CM_MIGRATE_ID, p.cid, och, p.cch, 0, NULL), EINVAL);
	cr_assert_eq(create_id(&other, och, 0x4242, 1, &oid), EPROTONOSUPPORT);
	/* a QPN that is nobody's */
	cr_assert_eq(connect_id(&p.c, p.cid, 0xfffff0, NULL), EINVAL);
	cr_assert_eq(connect_id(&p.c, p.cid, qp_of(&p.c, IBV_QPT_UD), NULL), EINVAL, "UD QP, RC id");
	/* channel: EBADF without a SEQPACKET socket */
	req(&m, IPC_OP_CM_CREATE_CHANNEL);
	cr_assert_eq(call(&other, &m, NULL, 0, &r, NULL), EBADF);
	/* wrong states */
	cr_assert_eq(simple(&p.s, IPC_OP_CM_RESOLVE_ROUTE, p.lid, 0), EINVAL);
	cr_assert_eq(accept_id(&p.c, p.cid, 0, 0, NULL), EINVAL);
	cr_assert_eq(simple(&p.c, IPC_OP_CM_DISCONNECT, p.cid, 0), EINVAL);
	/* migrate to a channel of ours */
	struct cmch ch2 = channel(&p.c);

	cr_assert_eq(migrate(&p.c, IPC_OP_CM_MIGRATE_ID, p.cid, ch2, p.cch, 0, NULL), 0);
	cr_assert_eq(simple(&p.c, IPC_OP_CM_DESTROY_CHANNEL, p.cch.h, 0), 0, "no id left on it");
	cr_assert_eq(simple(&p.c, IPC_OP_CM_DESTROY_CHANNEL, ch2.h, 0), 0, "its ids go with it");
	cr_assert_eq(simple(&p.c, IPC_OP_CM_DISCONNECT, p.cid, 0), EINVAL, "destroyed");
	close(ch2.fd);
	close(och.fd);
	client_close(&other);
	pair_down(&p);
}

Test(ctl_cm, address_errors_come_as_events)
{
	struct client a;
	struct cmch ch;
	uint32_t x;
	struct ipc_cm_event ev;

	client_open(&a, true);
	ch = channel(&a);
	cr_assert_eq(create_id(&a, ch, RDMA_PS_TCP, 1, &x), 0);
	wire.resolve_rc = -EHOSTUNREACH;
	cr_assert_eq(resolve_addr(&a, x, v4("198.18.0.2", 1), 1000), 0);
	ev = expect(ch, RDMA_CM_EVENT_ADDR_ERROR);
	cr_assert_eq(ev.status, -EHOSTUNREACH);
	/* no answer in time: ETIMEDOUT after the timeout */
	wire.resolve_rc = -EAGAIN;
	cr_assert_eq(resolve_addr(&a, x, v4("198.18.0.2", 1), 50), 0);
	cr_assert_eq(next_event(ch, 20).event, 0xffff, "not before its time");
	ev = expect(ch, RDMA_CM_EVENT_ADDR_ERROR);
	cr_assert_eq(ev.status, -ETIMEDOUT);
	/* resolved: the REQ goes to the wire with the neighbour's MAC */
	wire.resolve_rc = 0;
	cr_assert_eq(resolve_addr(&a, x, v4("198.18.0.2", 1), 50), 0);
	expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	cr_assert_eq(simple(&a, IPC_OP_CM_RESOLVE_ROUTE, x, 0), 0);
	expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
	cr_assert_eq(connect_id(&a, x, qp_of(&a, IBV_QPT_RC), NULL), 0);
	cr_assert_eq(wire.n, 1);
	cr_assert_eq(wire.to[0].remote_mac[0], 0x02);
	cr_assert_eq(wire.to[0].remote_gid[15], 2);
	cr_assert_eq(wire.to[0].local_gid[15], 1);
	cr_assert_eq(wire.mad[0][1], CM_MAD_MGMT_CLASS);
	cr_assert_eq(wire.mad[0][17], CM_ATTR_REQ & 0xff);
	close(ch.fd);
	client_close(&a);
}

/* A REQ from a foreign peer built with lib/cm's codec, for the GSI tests. */
static void foreign_req(uint8_t mad[CM_MAD_SIZE], uint16_t port, uint32_t comm_id)
{
	struct cm_msg msg;
	struct cm_ip_addr s = { .family = 4, .port = 40000 }, d = { .family = 4, .port = port };

	memset(&msg, 0, sizeof(msg));
	cm_msg_init(&msg, CM_ATTR_REQ, 0x1000 + comm_id);
	inet_pton(AF_INET, "198.18.0.2", s.addr);
	inet_pton(AF_INET, "198.18.0.1", d.addr);
	msg.req.local_comm_id = comm_id;
	msg.req.service_id = cm_ip_service_id(CM_PS_TCP, port);
	msg.req.local_qpn = 0x99 + comm_id; /* one QPN per connection: a second REQ from one QP is stale */
	msg.req.starting_psn = 0x123;
	msg.req.path_mtu = 3;
	msg.req.max_cm_retries = 3;
	msg.req.remote_cm_response_timeout = 20;
	msg.req.local_cm_response_timeout = 20;
	msg.req.pkey = 0xffff;
	msg.req.primary.local_lid = msg.req.primary.remote_lid = 0xffff;
	cm_ip_gid_from_v4(s.addr, msg.req.primary.local_gid);
	cm_ip_gid_from_v4(d.addr, msg.req.primary.remote_gid);
	cm_ip_hdr_build(&s, &d, msg.req.private_data);
	msg.req.private_data_len = CM_IP_HDR_SIZE;
	cr_assert_eq(cm_mad_build(&msg, mad), 0);
}

static struct cm_path peer_path(void)
{
	struct cm_path f = { .pkey = 0xffff, .remote_qpn = 1, .hop_limit = 64, .port = 0 };
	uint8_t a[4];

	inet_pton(AF_INET, "198.18.0.2", a);
	cm_ip_gid_from_v4(a, f.remote_gid);
	inet_pton(AF_INET, "198.18.0.1", a);
	cm_ip_gid_from_v4(a, f.local_gid);
	f.gid_index = 1;
	f.remote_mac_valid = 1;
	return f;
}

Test(ctl_cm, gsi_bad_input_is_counted_and_answered)
{
	struct cm_path f = peer_path();
	uint8_t mad[CM_MAD_SIZE];
	const uint64_t *c = ctl_cm_counters(ctl);
	struct cm_msg msg;

	foreign_req(mad, 7999, 1);
	cr_assert_eq(ctl_cm_rx(ctl, &f, mad, 100), CM_MALFORMED_TRUNCATED);
	cr_assert_eq(c[CM_CTR_MALFORMED_TRUNCATED], 1);
	mad[1] = 0x04; /* not the CM class */
	cr_assert_eq(ctl_cm_rx(ctl, &f, mad, CM_MAD_SIZE), CM_MALFORMED_CLASS);

	/* a REQ for a service nobody listens on: REJ "invalid service ID" on the wire */
	foreign_req(mad, 7999, 2);
	cr_assert_eq(ctl_cm_rx(ctl, &f, mad, CM_MAD_SIZE), 0);
	cr_assert_eq(wire.n, 1);
	cr_assert_eq(cm_mad_parse(wire.mad[0], CM_MAD_SIZE, &msg), 0);
	cr_assert_eq(msg.hdr.attr_id, CM_ATTR_REJ);
	cr_assert_eq(msg.rej.reason, CM_REJ_INVALID_SERVICE_ID);
	cr_assert_eq(msg.rej.remote_comm_id, 2);

	/* an RTU and a REP for no REQ: dropped, counted */
	memset(&msg, 0, sizeof(msg));
	cm_msg_init(&msg, CM_ATTR_RTU, 5);
	msg.rtu.local_comm_id = 77;
	msg.rtu.remote_comm_id = 88;
	cr_assert_eq(cm_mad_build(&msg, mad), 0);
	cr_assert_eq(ctl_cm_rx(ctl, &f, mad, CM_MAD_SIZE), 0);
	memset(&msg, 0, sizeof(msg));
	cm_msg_init(&msg, CM_ATTR_REP, 6);
	msg.rep.local_comm_id = 77;
	msg.rep.remote_comm_id = 89;
	cr_assert_eq(cm_mad_build(&msg, mad), 0);
	cr_assert_eq(ctl_cm_rx(ctl, &f, mad, CM_MAD_SIZE), 0);
	cr_assert_geq(c[CM_CTR_NO_CONN], 2);
	cr_assert_eq(wire.n, 1, "nothing sent for them");
}

Test(ctl_cm, req_flood_is_bounded_and_the_listener_carries_on)
{
	struct client s;
	struct cmch ch;
	uint32_t lid;
	struct cm_path f = peer_path();
	uint8_t mad[CM_MAD_SIZE];
	unsigned int reqs = 0;
	struct ipc_cm_event ev;

	client_open(&s, true);
	ch = channel(&s);
	cr_assert_eq(create_id(&s, ch, RDMA_PS_TCP, 9, &lid), 0);
	cr_assert_eq(bind_id(&s, lid, v4("198.18.0.1", 6000)), 0);
	cr_assert_eq(listen_id(&s, lid, 4), 0);
	for (uint32_t i = 0; i < 200; i++) {
		foreign_req(mad, 6000, 100 + i);
		cr_assert_eq(ctl_cm_rx(ctl, &f, mad, CM_MAD_SIZE), 0);
	}
	uint32_t first = 0;
	struct ipc_msg m, r;

	while ((ev = next_event(ch, 50)).event != 0xffff) {
		cr_assert_eq(ev.event, RDMA_CM_EVENT_CONNECT_REQUEST);
		if (reqs++ == 0)
			first = ev.id;
	}
	cr_assert_eq(reqs, 4, "the backlog: %u", reqs);
	cr_assert_eq(ctl_cm_stats(ctl)[CTL_CM_CTR_REQ_BACKLOG], 196);
	cr_assert_geq(ctl_cm_counters(ctl)[CM_CTR_REJ_TX_CONSUMER], 196, "each refused on the wire");
	/* one answered: room for the next REQ */
	req(&m, IPC_OP_CM_REJECT);
	m.u.req_CM_REJECT.id = first;
	cr_assert_eq(call(&s, &m, NULL, 0, &r, NULL), 0);
	foreign_req(mad, 6000, 1000);
	cr_assert_eq(ctl_cm_rx(ctl, &f, mad, CM_MAD_SIZE), 0);
	expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	close(ch.fd);
	client_close(&s);
}

/*
 * PSNs as Linux puts them on the wire (rxe's rdma_cm capture: the active
 * side's first SEND carries the REP's starting PSN): a REQ's or REP's
 * starting PSN is what its sender receives from; the peer sends with it.
 * A first run against rxe with the IBTA reading NAKed every first SEND.
 */
Test(ctl_cm, starting_psns_mean_what_linux_means)
{
	struct client s;
	struct cmch ch;
	uint32_t lid;
	struct cm_path f = peer_path();
	uint8_t mad[CM_MAD_SIZE];
	struct ipc_cm_event ev;
	struct ipc_cm_init_qp_attr_rsp rtr, rts;
	struct cm_msg rep;

	client_open(&s, true);
	ch = channel(&s);
	cr_assert_eq(create_id(&s, ch, RDMA_PS_TCP, 9, &lid), 0);
	cr_assert_eq(bind_id(&s, lid, v4("198.18.0.1", 6001)), 0);
	cr_assert_eq(listen_id(&s, lid, 4), 0);
	foreign_req(mad, 6001, 42); /* starting PSN 0x123 */
	cr_assert_eq(ctl_cm_rx(ctl, &f, mad, CM_MAD_SIZE), 0);
	ev = expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	cr_assert_eq(init_attr(&s, ev.id, IBV_QPS_RTS, &rts), 0);
	cr_assert_eq(rts.attr.sq_psn, 0x123, "we send with the REQ's starting PSN");
	cr_assert_eq(init_attr(&s, ev.id, IBV_QPS_RTR, &rtr), 0);
	uint32_t qpn = qp_of(&s, IBV_QPT_RC);

	cr_assert_eq(accept_id(&s, ev.id, qpn, 1, NULL), 0);
	cr_assert_eq(wire.n, 1);
	cr_assert_eq(cm_mad_parse(wire.mad[0], CM_MAD_SIZE, &rep), 0);
	cr_assert_eq(rep.hdr.attr_id, CM_ATTR_REP);
	cr_assert_eq(rep.rep.starting_psn, rtr.attr.rq_psn, "the REP's starting PSN is what we receive");
	cr_assert_eq(rep.rep.local_qpn, qpn, "the accepted QP");
	close(ch.fd);
	client_close(&s);
}

/* Both ends disconnect at once (crossing DREQs): each gets one DISCONNECTED. */
Test(ctl_cm, crossing_disconnects_both_report_disconnected)
{
	struct pair p;
	struct ipc_cm_event ev;
	struct ipc_msg m, r;
	uint32_t nid;

	pair_up(&p, RDMA_PS_TCP, 7478);
	cr_assert_eq(connect_id(&p.c, p.cid, qp_of(&p.c, IBV_QPT_RC), NULL), 0);
	ev = expect(p.sch, RDMA_CM_EVENT_CONNECT_REQUEST);
	nid = ev.id;
	cr_assert_eq(accept_id(&p.s, nid, qp_of(&p.s, IBV_QPT_RC), 0x55, NULL), 0);
	expect(p.cch, RDMA_CM_EVENT_CONNECT_RESPONSE);
	req(&m, IPC_OP_CM_ACCEPT);
	m.u.req_CM_ACCEPT.id = p.cid;
	cr_assert_eq(call(&p.c, &m, NULL, 0, &r, NULL), 0);
	expect(p.sch, RDMA_CM_EVENT_ESTABLISHED);
	/* both DREQs leave before either arrives */
	cr_assert_eq(simple(&p.c, IPC_OP_CM_DISCONNECT, p.cid, 0), 0);
	cr_assert_eq(simple(&p.s, IPC_OP_CM_DISCONNECT, nid, 0), 0);
	expect(p.cch, RDMA_CM_EVENT_DISCONNECTED);
	expect(p.sch, RDMA_CM_EVENT_DISCONNECTED);
	cr_assert_eq(next_event(p.cch, 100).event, 0xffff, "exactly one");
	cr_assert_eq(next_event(p.sch, 100).event, 0xffff, "exactly one");
	pair_down(&p);
}

/*
 * Per-client quotas on rdma_cm ids and event channels (ctl_quota): a
 * refusal is ENOMEM and counted (quota_refused); other clients are not
 * affected; a listener whose client is at its quota refuses a new
 * connection on the wire (REJ consumer defined), as for a full backlog.
 */
Test(ctl_cm, per_client_quota_on_ids_and_channels)
{
	struct ctl_config cfg = base_cfg();
	struct client a, b;
	struct cmch ch[2], bch;
	struct ctl_stats st0, st1;
	struct ipc_msg m, r;
	uint32_t ids[3], lid, extra;
	struct cm_path f = peer_path();
	uint8_t mad[CM_MAD_SIZE];
	int sp[2];

	ctl_destroy(ctl);
	cfg.cm_ops = &fake_ops;
	cfg.cm_limits.max_ids = 64;
	cfg.cm_limits.max_channels = 16;
	cfg.cm_limits.max_conns = 32;
	cfg.quota.max_cm_ids = 3;
	cfg.quota.max_cm_channels = 2;
	ctl = ctl_create(&cfg);
	cr_assert_not_null(ctl);
	client_open(&a, true);
	client_open(&b, true);
	ctl_get_stats(ctl, &st0);

	ch[0] = channel(&a);
	ch[1] = channel(&a);
	cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp), 0);
	req(&m, IPC_OP_CM_CREATE_CHANNEL);
	cr_assert_eq(call(&a, &m, &sp[1], 1, &r, NULL), ENOMEM, "a third channel");
	close(sp[0]);

	for (unsigned int i = 0; i < 3; i++)
		cr_assert_eq(create_id(&a, ch[i % 2], RDMA_PS_TCP, 0x10 + i, &ids[i]), 0);
	cr_assert_eq(create_id(&a, ch[0], RDMA_PS_TCP, 0x20, &extra), ENOMEM, "a fourth id");
	ctl_get_stats(ctl, &st1);
	cr_assert_eq(st1.quota_refused - st0.quota_refused, 2, "both refusals counted");

	/* another client has its own quota */
	bch = channel(&b);
	cr_assert_eq(create_id(&b, bch, RDMA_PS_TCP, 0x30, &extra), 0);

	/* one destroyed: room for one more */
	cr_assert_eq(simple(&a, IPC_OP_CM_DESTROY_ID, ids[2], 0), 0);
	cr_assert_eq(create_id(&a, ch[1], RDMA_PS_TCP, 0x12, &ids[2]), 0);

	/* a listener at its client's quota: the REQ is refused on the wire */
	lid = ids[0];
	cr_assert_eq(bind_id(&a, lid, v4("198.18.0.1", 6100)), 0);
	cr_assert_eq(listen_id(&a, lid, 4), 0);
	foreign_req(mad, 6100, 4242);
	cr_assert_eq(ctl_cm_rx(ctl, &f, mad, CM_MAD_SIZE), 0);
	cr_assert_eq(next_event(ch[0], 100).event, 0xffff, "no CONNECT_REQUEST beyond the quota");
	cr_assert_geq(ctl_cm_counters(ctl)[CM_CTR_REJ_TX_CONSUMER], 1, "refused on the wire");

	/* under the quota again: the next REQ comes through */
	cr_assert_eq(simple(&a, IPC_OP_CM_DESTROY_ID, ids[1], 0), 0);
	foreign_req(mad, 6100, 4243);
	cr_assert_eq(ctl_cm_rx(ctl, &f, mad, CM_MAD_SIZE), 0);
	expect(ch[0], RDMA_CM_EVENT_CONNECT_REQUEST);

	close(ch[0].fd);
	close(ch[1].fd);
	close(bch.fd);
	client_close(&b);
	client_close(&a);
}

/* rdma_join_multicast as cma.c for RoCE: MULTICAST_JOIN at once, bounds, leave. */
static int join(struct client *cl, uint32_t id, struct ipc_cm_addr a, uint16_t flags,
		uint32_t *h)
{
	struct ipc_msg m, r;
	int rc;

	req(&m, IPC_OP_CM_JOIN_MCAST);
	m.u.req_CM_JOIN_MCAST.id = id;
	m.u.req_CM_JOIN_MCAST.join_flags = flags;
	m.u.req_CM_JOIN_MCAST.addr = a;
	rc = call(cl, &m, NULL, 0, &r, NULL);
	if (h != NULL)
		*h = r.u.rsp_CM_JOIN_MCAST.handle;
	return rc;
}

/*
 * mckey's receiver: rdma_bind_addr, rdma_resolve_addr to the group with a
 * timeout (mckey: 2000 ms), join, attach its QP, then wait for data. The
 * resolve timer must not outlive the resolution: long past the timeout, no
 * further event, the join is still counted and the QP still attached; the
 * leave and the detach then find them.
 */
Test(ctl_cm, multicast_join_outlives_the_resolve_timeout)
{
	static const uint8_t mgid[16] = { [10] = 0xff, [11] = 0xff, 239, 1, 2, 3 };
	struct client a;
	struct cmch ch;
	struct ipc_create_qp_rsp qp;
	struct ipc_msg m, r;
	struct ctl_mcast_stats st;
	uint32_t id, mc;

	client_open(&a, true);
	ch = channel(&a);
	cr_assert_eq(create_id(&a, ch, RDMA_PS_UDP, 9, &id), 0);
	cr_assert_eq(bind_id(&a, id, v4("198.18.0.1", 0)), 0);
	wire.resolve_rc = 0; /* the dataplane answers a group's MAC at once */
	cr_assert_eq(resolve_addr(&a, id, v4("239.1.2.3", 0), 50), 0);
	expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	cr_assert_eq(create_qp(&a, alloc_pd(&a), create_cq(&a, 8, IPC_HANDLE_NONE), IBV_QPT_UD,
			       &qp), 0);
	cr_assert_eq(join(&a, id, v4("239.1.2.3", 0), 0, &mc), 0);
	expect(ch, RDMA_CM_EVENT_MULTICAST_JOIN);
	req(&m, IPC_OP_ATTACH_MCAST);
	m.u.req_ATTACH_MCAST.qp = qp.handle;
	memcpy(m.u.req_ATTACH_MCAST.gid, mgid, 16);
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), 0);
	/* four times the resolve timeout, the CM ticking all along */
	cr_assert_eq(next_event(ch, 200).event, 0xffff, "no event after the join");
	ctl_mcast_get_stats(ctl, &st);
	cr_assert_eq(st.cm_joins, 1, "the join is still counted");
	cr_assert_eq(st.attached, 1, "the QP is still attached");
	cr_assert_eq(st.groups, 1);
	cr_assert_eq(simple(&a, IPC_OP_CM_LEAVE_MCAST, mc, 0), 0, "the join is still there");
	req(&m, IPC_OP_DETACH_MCAST);
	m.u.req_ATTACH_MCAST.qp = qp.handle;
	memcpy(m.u.req_ATTACH_MCAST.gid, mgid, 16);
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), 0, "the QP was still attached");
	ctl_mcast_get_stats(ctl, &st);
	cr_assert_eq(st.cm_joins, 0);
	cr_assert_eq(st.attached, 0);
	close(ch.fd);
	client_close(&a);
}

Test(ctl_cm, multicast_join_and_leave)
{
	static const uint8_t mgid[16] = { [10] = 0xff, [11] = 0xff, 239, 1, 2, 3 };
	struct client a;
	struct cmch ch;
	struct ipc_cm_event ev;
	uint32_t id, unbound, mc, mc6, n;
	struct ipc_cm_addr g6 = { .family = AF_INET6, .addr = { 0xff, 0x0e, [15] = 1 } };
	int rc;

	client_open(&a, true);
	ch = channel(&a);
	cr_assert_eq(create_id(&a, ch, RDMA_PS_UDP, 7, &id), 0);
	cr_assert_eq(create_id(&a, ch, RDMA_PS_UDP, 8, &unbound), 0);
	cr_assert_eq(join(&a, unbound, v4("239.1.2.3", 0), 0, NULL), EINVAL, "not bound");
	cr_assert_eq(bind_id(&a, id, v4("198.18.0.1", 0)), 0);
	cr_assert_eq(join(&a, id, v4("198.18.0.2", 0), 0, NULL), EINVAL, "not a group");
	cr_assert_eq(join(&a, id, v4("239.1.2.3", 0), 2, NULL), EINVAL, "bad flags");
	cr_assert_eq(join(&a, id, v4("239.1.2.3", 0), 0, &mc), 0);
	ev = expect(ch, RDMA_CM_EVENT_MULTICAST_JOIN);
	cr_assert_eq(ev.uid, 7u);
	cr_assert_eq(ev.status, 0);
	cr_assert_eq(ev.param.qp_num, 0xffffffu);
	cr_assert_eq(ev.param.qkey, 0x01234567u);
	cr_assert_arr_eq(ev.ud_ah.dgid, mgid, 16, "IPv4-mapped MGID");
	cr_assert_eq(ev.ud_ah.is_global, 1);
	cr_assert_eq(ev.ud_ah.sgid_index, 1, "the bound address's GID");
	cr_assert_eq(join(&a, id, v4("239.1.2.3", 0), 0, NULL), EADDRINUSE, "joined already");
	cr_assert_eq(join(&a, id, g6, 1, &mc6), 0, "an IPv6 group, send-only");
	ev = expect(ch, RDMA_CM_EVENT_MULTICAST_JOIN);
	cr_assert_arr_eq(ev.ud_ah.dgid, g6.addr, 16);
	/* a join flood: the client's share runs out with ENOMEM */
	n = 2;
	for (unsigned int i = 0; i < CTL_MCAST_CM_PER_CLIENT + 4; i++) {
		char ip[32];

		snprintf(ip, sizeof(ip), "239.2.%u.%u", i / 200, i % 200);
		rc = join(&a, id, v4(ip, 0), 0, NULL);
		cr_assert(rc == 0 || rc == ENOMEM);
		if (rc == 0) {
			n++;
			expect(ch, RDMA_CM_EVENT_MULTICAST_JOIN);
		}
	}
	cr_assert_eq(n, CTL_MCAST_CM_PER_CLIENT);
	cr_assert_geq(ctl_cm_stats(ctl)[CTL_CM_CTR_MCAST_REFUSED], 4u + 2);
	cr_assert_eq(simple(&a, IPC_OP_CM_LEAVE_MCAST, mc, 0), 0);
	cr_assert_eq(simple(&a, IPC_OP_CM_LEAVE_MCAST, mc, 0), EINVAL, "left already");
	cr_assert_eq(join(&a, id, v4("239.1.2.3", 0), 0, NULL), 0, "room again");
	/* the id's joins go with it */
	cr_assert_eq(simple(&a, IPC_OP_CM_DESTROY_ID, id, 0), 0);
	cr_assert_eq(simple(&a, IPC_OP_CM_LEAVE_MCAST, mc6, 0), EINVAL);
	close(ch.fd);
	client_close(&a);
}

/*
 * Issue 21 bad input: a client's multicast join flood runs out of its own
 * share (ENOMEM, counted), and nothing else stalls: another client still
 * joins and hears of it, and the flooding client's other ids still get
 * their events.
 */
Test(ctl_cm, multicast_join_flood_leaves_others_alone)
{
	struct client a, b;
	struct cmch cha, chb;
	uint32_t ida, idb, other, refused = 0;
	uint64_t before = ctl_cm_stats(ctl)[CTL_CM_CTR_MCAST_REFUSED];

	client_open(&a, true);
	client_open(&b, true);
	cha = channel(&a);
	chb = channel(&b);
	cr_assert_eq(create_id(&a, cha, RDMA_PS_UDP, 1, &ida), 0);
	cr_assert_eq(bind_id(&a, ida, v4("198.18.0.1", 0)), 0);
	cr_assert_eq(create_id(&a, cha, RDMA_PS_TCP, 2, &other), 0);
	cr_assert_eq(create_id(&b, chb, RDMA_PS_UDP, 3, &idb), 0);
	cr_assert_eq(bind_id(&b, idb, v4("198.18.0.1", 0)), 0);
	for (unsigned int i = 0; i < 4 * CTL_MCAST_CM_PER_CLIENT; i++) {
		char ip[32];
		int rc;

		snprintf(ip, sizeof(ip), "239.3.%u.%u", i / 200, i % 200);
		rc = join(&a, ida, v4(ip, 0), 0, NULL);
		cr_assert(rc == 0 || rc == ENOMEM, "rc %d", rc);
		refused += rc == ENOMEM;
	}
	cr_assert_eq(refused, 3 * CTL_MCAST_CM_PER_CLIENT, "a's share: %u refused", refused);
	cr_assert_eq(ctl_cm_stats(ctl)[CTL_CM_CTR_MCAST_REFUSED] - before, refused, "each counted");
	cr_assert_eq(join(&b, idb, v4("239.4.0.1", 0), 0, NULL), 0, "another client joins");
	cr_assert_eq(expect(chb, RDMA_CM_EVENT_MULTICAST_JOIN).uid, 3u);
	cr_assert_eq(resolve_addr(&a, other, v4("198.18.0.1", 6400), 1000), 0);
	for (struct ipc_cm_event ev;;) {
		ev = next_event(cha, 3000);
		cr_assert_neq(ev.event, 0xffff, "a's other id got no event");
		if (ev.uid == 2u) {
			cr_assert_eq(ev.event, RDMA_CM_EVENT_ADDR_RESOLVED);
			break;
		}
		cr_assert_eq(ev.event, RDMA_CM_EVENT_MULTICAST_JOIN);
	}
	close(cha.fd);
	close(chb.fd);
	client_close(&b);
	client_close(&a);
}

/* ---- rdma_migrate_id moves the events not read yet (ucma_migrate_id) ---- */

static void setup_big(void)
{
	setup_with(512, 512);
}

TestSuite(ctl_cm_migrate, .init = setup_big, .fini = teardown, .timeout = 30);

/* Read @p ch dry without ticking, as the shim does after a pending MIGRATE_ID. @return records */
static unsigned int drain(struct cmch ch)
{
	struct ipc_cm_event ev;
	unsigned int n = 0;

	while (recv(ch.fd, &ev, sizeof(ev), MSG_DONTWAIT) == (ssize_t)sizeof(ev))
		n++;
	return n;
}

/* A foreign REQ for 198.18.0.1:@p port: a CONNECT_REQUEST for its listener. */
static void inject_req(uint16_t port, uint32_t comm_id)
{
	struct cm_path f = peer_path();
	uint8_t mad[CM_MAD_SIZE];

	foreign_req(mad, port, comm_id);
	cr_assert_eq(ctl_cm_rx(ctl, &f, mad, CM_MAD_SIZE), 0);
}

/*
 * A listener's CONNECT_REQUESTs written to its channel and not read, with
 * another id's event between them: after MIGRATE_ID (pending: the channel
 * is paused), the socket read dry and MIGRATE_COMMIT, the CONNECT_REQUESTs
 * are read from the new channel, in order, none from the old one, and the
 * other id's event is read from the old channel again.
 */
Test(ctl_cm_migrate, unread_events_move_with_their_id)
{
	struct client s;
	struct cmch a, b;
	uint32_t lid, yid, first;
	struct ipc_cm_migrate_rsp o;
	struct ipc_cm_event ev;

	client_open(&s, true);
	a = channel(&s);
	b = channel(&s);
	cr_assert_eq(create_id(&s, a, RDMA_PS_TCP, 0x11, &lid), 0);
	cr_assert_eq(bind_id(&s, lid, v4("198.18.0.1", 6100)), 0);
	cr_assert_eq(listen_id(&s, lid, 16), 0);
	cr_assert_eq(create_id(&s, a, RDMA_PS_TCP, 0x22, &yid), 0);
	inject_req(6100, 1);
	cr_assert_eq(resolve_addr(&s, yid, v4("198.18.0.1", 6101), 1000), 0);
	ctl_cm_tick(ctl);
	inject_req(6100, 2);
	/* nothing read: all three wait in a's socket */
	cr_assert_eq(migrate(&s, IPC_OP_CM_MIGRATE_ID, lid, b, a, 0, &o), 0);
	cr_assert_eq(o.pending, 1, "the listener's events are in the socket");
	cr_assert_eq(o.seq, 3, "three written");
	cr_assert_eq(migrate(&s, IPC_OP_CM_MIGRATE_ID, lid, b, a, 0, NULL), EBUSY, "paused");
	inject_req(6100, 3); /* while paused: waits in a's backlog */
	cr_assert_eq(drain(a), 3);
	cr_assert_eq(migrate(&s, IPC_OP_CM_MIGRATE_COMMIT, lid, b, a, 0, &o), 0);
	cr_assert_eq(o.pending, 0);
	ev = next_event(b, 1000);
	cr_assert_eq(ev.event, RDMA_CM_EVENT_CONNECT_REQUEST);
	cr_assert_eq(ev.uid, 0x11);
	first = ev.id;
	ev = next_event(b, 1000);
	cr_assert_eq(ev.event, RDMA_CM_EVENT_CONNECT_REQUEST);
	cr_assert_neq(ev.id, first, "the second connection");
	cr_assert_eq(expect(b, RDMA_CM_EVENT_CONNECT_REQUEST).uid, 0x11, "the one queued while paused");
	ev = next_event(a, 1000);
	cr_assert_eq(ev.event, RDMA_CM_EVENT_ADDR_RESOLVED, "the other id's event, again");
	cr_assert_eq(ev.uid, 0x22);
	cr_assert_eq(next_event(a, 100).event, 0xffff, "nothing of the listener left on a");
	cr_assert_eq(next_event(b, 100).event, 0xffff);
	/* later events follow the id; the other id stays */
	inject_req(6100, 4);
	cr_assert_eq(expect(b, RDMA_CM_EVENT_CONNECT_REQUEST).uid, 0x11);
	/* the connection a moved CONNECT_REQUEST made is on b: its events after ACCEPT too */
	cr_assert_eq(accept_id(&s, first, qp_of(&s, IBV_QPT_RC), 0x33, NULL), 0);
	cr_assert_eq(simple(&s, IPC_OP_CM_RESOLVE_ROUTE, yid, 1000), 0);
	expect(a, RDMA_CM_EVENT_ROUTE_RESOLVED);
	cr_assert_eq(migrate(&s, IPC_OP_CM_MIGRATE_COMMIT, lid, b, a, 0, NULL), EINVAL, "not paused");
	close(a.fd);
	close(b.fd);
	client_close(&s);
}

/*
 * The socket holds a bounded number of unread events (the daemon keeps a
 * copy of each); the rest wait in the backlog. Both parts move, in order;
 * an event read before the migration (last_seq) stays read. No unread
 * event of the id: the move is done at once.
 */
Test(ctl_cm_migrate, socket_and_backlog_both_move_in_order)
{
	struct client s;
	struct cmch a, b, c;
	uint32_t lid, prev;
	struct ipc_cm_migrate_rsp o;
	struct ipc_cm_event ev;
	unsigned int in_socket, n = 0;

	client_open(&s, true);
	a = channel(&s);
	b = channel(&s);
	c = channel(&s);
	cr_assert_eq(create_id(&s, a, RDMA_PS_TCP, 0x11, &lid), 0);
	cr_assert_eq(bind_id(&s, lid, v4("198.18.0.1", 6200)), 0);
	cr_assert_eq(listen_id(&s, lid, 300), 0);
	for (uint32_t i = 0; i < 200; i++)
		inject_req(6200, 10 + i);
	cr_assert_eq(recv(a.fd, &ev, sizeof(ev), 0), (ssize_t)sizeof(ev));
	cr_assert_eq(ev.seq, 1);
	cr_assert_eq(migrate(&s, IPC_OP_CM_MIGRATE_ID, lid, b, a, ev.seq, &o), 0);
	cr_assert_eq(o.pending, 1);
	in_socket = drain(a);
	cr_log_info("unread in the socket: %u of 199", in_socket);
	cr_assert_gt(in_socket, 0);
	cr_assert_lt(in_socket, 100, "the socket is bounded: %u", in_socket);
	cr_assert_eq(migrate(&s, IPC_OP_CM_MIGRATE_COMMIT, lid, b, a, 1, NULL), 0);
	prev = 0;
	while ((ev = next_event(b, 100)).event != 0xffff) {
		cr_assert_eq(ev.event, RDMA_CM_EVENT_CONNECT_REQUEST);
		cr_assert_gt(ev.seq, prev, "in order");
		prev = ev.seq;
		n++;
	}
	cr_assert_eq(n, 199, "every unread one moved: %u", n);
	cr_assert_eq(next_event(a, 100).event, 0xffff, "none left on a");
	cr_assert_eq(ctl_cm_stats(ctl)[CTL_CM_CTR_EVENTS_DROPPED], 0);
	/* nothing unread: at once */
	cr_assert_eq(migrate(&s, IPC_OP_CM_MIGRATE_ID, lid, c, b, prev, &o), 0);
	cr_assert_eq(o.pending, 0);
	inject_req(6200, 500);
	expect(c, RDMA_CM_EVENT_CONNECT_REQUEST);
	close(a.fd);
	close(b.fd);
	close(c.fd);
	client_close(&s);
}

/*
 * Hostile or careless callers: the old channel must be the id's, a commit
 * needs a pause, a paused channel refuses another migration, another
 * client's handles are unknown; a client that never commits stalls only
 * its own channel, and if its id goes meanwhile the commit gives what it
 * read back to the old channel.
 */
Test(ctl_cm_migrate, bad_migrations_are_refused)
{
	struct client s, t;
	struct cmch a, b, ta;
	uint32_t lid, tid;
	struct ipc_cm_migrate_rsp o;

	client_open(&s, true);
	client_open(&t, true);
	a = channel(&s);
	b = channel(&s);
	ta = channel(&t);
	cr_assert_eq(create_id(&s, a, RDMA_PS_TCP, 0x11, &lid), 0);
	cr_assert_eq(bind_id(&s, lid, v4("198.18.0.1", 6300)), 0);
	cr_assert_eq(listen_id(&s, lid, 16), 0);
	cr_assert_eq(create_id(&t, ta, RDMA_PS_TCP, 0x44, &tid), 0);
	cr_assert_eq(migrate(&s, IPC_OP_CM_MIGRATE_ID, lid, a, b, 0, NULL), EINVAL, "not its channel");
	cr_assert_eq(migrate(&s, IPC_OP_CM_MIGRATE_COMMIT, lid, b, a, 0, NULL), EINVAL, "no pause");
	cr_assert_eq(migrate(&t, IPC_OP_CM_MIGRATE_ID, lid, ta, a, 0, NULL), EINVAL, "not t's id");
	inject_req(6300, 1);
	cr_assert_eq(migrate(&s, IPC_OP_CM_MIGRATE_ID, lid, b, a, 0, &o), 0);
	cr_assert_eq(o.pending, 1);
	cr_assert_eq(migrate(&t, IPC_OP_CM_MIGRATE_COMMIT, tid, ta, ta, 0, NULL), EINVAL);
	/* another client's channel carries on */
	cr_assert_eq(resolve_addr(&t, tid, v4("198.18.0.1", 6301), 1000), 0);
	expect(ta, RDMA_CM_EVENT_ADDR_RESOLVED);
	/* the id goes before the commit: what was read comes back on a */
	cr_assert_eq(drain(a), 1);
	cr_assert_eq(simple(&s, IPC_OP_CM_DESTROY_ID, lid, 0), 0);
	cr_assert_eq(migrate(&s, IPC_OP_CM_MIGRATE_COMMIT, lid, b, a, 0, NULL), EINVAL);
	cr_assert_eq(expect(a, RDMA_CM_EVENT_CONNECT_REQUEST).uid, 0x11, "given back");
	close(a.fd);
	close(b.fd);
	close(ta.fd);
	client_close(&t);
	client_close(&s);
}
