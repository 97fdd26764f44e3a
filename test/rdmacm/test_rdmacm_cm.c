/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The rdmacm shim against a daemon's CM: shim-server (lib/ctl with its CM
 * agent, lib/ipc; no DPDK, no dataplane). Its device holds 198.18.0.1, so
 * connections from 198.18.0.1 to itself run the whole CM exchange (the
 * daemon loops MADs for its own GIDs back); no data moves.
 *
 *  - event channels: the fd is pollable, readable exactly while an event
 *    waits; O_NONBLOCK gives EAGAIN;
 *  - bind (port choice, EADDRNOTAVAIL, EADDRINUSE), route and device fields
 *    of the id, options;
 *  - RC connect/accept with private data both ways: the QPs walk to RTS on
 *    both sides, ESTABLISHED, DISCONNECTED;
 *  - reject with private data, private data beyond the IBTA limits;
 *  - UD (SIDR) connect: ESTABLISHED with the peer's QPN, Q_Key and address;
 *  - the synchronous API: rdma_create_ep, rdma_get_request, rdma_accept,
 *    rdma_connect without channels;
 *  - rdma_destroy_id waits for the ack of an event the application holds.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include "rdmacm_test.h"

#define OUR_IP "198.18.0.1"

TestSuite(cm, .init = rt_setup_server, .fini = rt_teardown, .timeout = 60);

static struct sockaddr_in sin_of(const char *ip, uint16_t port)
{
	struct sockaddr_in s = { .sin_family = AF_INET, .sin_port = htons(port) };

	cr_assert_eq(inet_pton(AF_INET, ip, &s.sin_addr), 1);
	return s;
}

/* Whether the channel fd is readable within @p ms. */
static bool readable(struct rdma_event_channel *ch, int ms)
{
	struct pollfd pf = { .fd = ch->fd, .events = POLLIN };

	return poll(&pf, 1, ms) == 1 && (pf.revents & POLLIN);
}

/* The next event (3 s at most), which must be @p type; not acked. */
static struct rdma_cm_event *expect_event(struct rdma_event_channel *ch,
					  enum rdma_cm_event_type type)
{
	struct rdma_cm_event *ev = NULL;

	cr_assert(readable(ch, 3000), "no event (waiting for %s)", rdma_event_str(type));
	cr_assert_eq(rdma_get_cm_event(ch, &ev), 0, "errno %d", errno);
	cr_assert_eq(ev->event, type, "got %s (status %d), want %s", rdma_event_str(ev->event),
		     ev->status, rdma_event_str(type));
	return ev;
}

static void ack_event(struct rdma_event_channel *ch, enum rdma_cm_event_type type)
{
	cr_assert_eq(rdma_ack_cm_event(expect_event(ch, type)), 0);
}

static enum ibv_qp_state qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	cr_assert_eq(ibv_query_qp(qp, &a, IBV_QP_STATE, &ia), 0);
	return a.qp_state;
}

static void qp_attr(struct ibv_qp_init_attr *a, enum ibv_qp_type type)
{
	memset(a, 0, sizeof(*a));
	a->qp_type = type;
	a->cap.max_send_wr = 4;
	a->cap.max_recv_wr = 4;
	a->cap.max_send_sge = 1;
	a->cap.max_recv_sge = 1;
}

Test(cm, channel_pollable_and_nonblocking)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in dst = sin_of(OUR_IP, 7000);
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;

	cr_assert_not_null(ch, "errno %d", errno);
	cr_assert_geq(ch->fd, 0);
	cr_assert_not(readable(ch, 50), "no event yet");
	cr_assert_eq(fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK), 0);
	errno = 0;
	cr_assert_eq(rdma_get_cm_event(ch, &ev), -1);
	cr_assert_eq(errno, EAGAIN, "errno %d", errno);

	cr_assert_eq(rdma_create_id(ch, &id, (void *)0x1234, RDMA_PS_TCP), 0);
	cr_assert_eq(id->channel, ch);
	cr_assert_eq(id->context, (void *)0x1234);
	cr_assert_eq(id->ps, RDMA_PS_TCP);
	cr_assert_eq(id->qp_type, IBV_QPT_RC);
	cr_assert_null(id->verbs);
	cr_assert_eq(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000), 0, "errno %d",
		     errno);
	ev = expect_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	cr_assert_eq(ev->id, id);
	cr_assert_eq(ev->status, 0);
	cr_assert_not_null(id->verbs, "the id is on our device");
	cr_assert_not_null(id->pd, "with the device's default PD");
	cr_assert_eq(id->port_num, 1);
	cr_assert_eq(rdma_get_peer_addr(id)->sa_family, AF_INET);
	cr_assert_eq(rdma_get_dst_port(id), htons(7000));
	cr_assert_eq(((struct sockaddr_in *)rdma_get_local_addr(id))->sin_addr.s_addr,
		     dst.sin_addr.s_addr, "source chosen: our address");
	cr_assert_eq(rdma_ack_cm_event(ev), 0);
	cr_assert_not(readable(ch, 50), "nothing pending after the read");
	errno = 0;
	cr_assert_eq(rdma_get_cm_event(ch, &ev), -1);
	cr_assert_eq(errno, EAGAIN);

	cr_assert_eq(rdma_resolve_route(id, 2000), 0);
	ev = expect_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
	cr_assert_eq(id->route.num_paths, 1);
	cr_assert_not_null(id->route.path_rec);
	cr_assert_eq(rdma_ack_cm_event(ev), 0);
	cr_assert_eq(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(ch);
}

Test(cm, bind_ports_and_errors)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in a = sin_of(OUR_IP, 0), other = sin_of("198.19.9.9", 7001);
	struct sockaddr_in6 bad6 = { .sin6_family = AF_INET6 };
	struct sockaddr unk = { .sa_family = AF_UNIX };
	struct rdma_cm_id *id, *id2;
	uint16_t port;

	cr_assert_not_null(ch);
	cr_assert_eq(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	cr_assert_eq(rdma_bind_addr(id, (struct sockaddr *)&a), 0, "errno %d", errno);
	port = ntohs(rdma_get_src_port(id));
	cr_assert_neq(port, 0, "a port was chosen");
	cr_assert_not_null(id->verbs);
	cr_assert_eq(id->port_num, 1);
	cr_assert_eq(rdma_listen(id, 4), 0, "errno %d", errno);

	cr_assert_eq(rdma_create_id(ch, &id2, NULL, RDMA_PS_TCP), 0);
	a.sin_port = htons(port);
	errno = 0;
	cr_expect_eq(rdma_bind_addr(id2, (struct sockaddr *)&a), -1);
	cr_expect_eq(errno, EADDRINUSE, "errno %d", errno);
	errno = 0;
	cr_expect_eq(rdma_bind_addr(id2, (struct sockaddr *)&other), -1);
	cr_expect_eq(errno, EADDRNOTAVAIL, "errno %d", errno);
	inet_pton(AF_INET6, "2001:db8::99", &bad6.sin6_addr);
	errno = 0;
	cr_expect_eq(rdma_bind_addr(id2, (struct sockaddr *)&bad6), -1);
	cr_expect_eq(errno, EADDRNOTAVAIL, "errno %d", errno);
	errno = 0;
	cr_expect_eq(rdma_bind_addr(id2, &unk), -1);
	cr_expect_eq(errno, EINVAL);
	errno = 0;
	cr_expect_eq(rdma_resolve_addr(id2, &unk, (struct sockaddr *)&a, 100), -1);
	cr_expect_eq(errno, EINVAL);
	cr_assert_eq(rdma_destroy_id(id2), 0);
	cr_assert_eq(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(ch);
}

/*
 * RDMA_PS_IPOIB has no meaning on RoCE: its Q_Key is the IPoIB broadcast
 * group's, from the SA (the kernel's cma_set_qkey), and RoCE has no SA. The
 * kernel creates the id and fails once it needs the Q_Key; the daemon
 * refuses it at once, with a port space error, and nothing is left behind.
 */
Test(cm, ipoib_port_space_is_refused)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id = NULL;

	cr_assert_not_null(ch);
	errno = 0;
	cr_assert_eq(rdma_create_id(ch, &id, NULL, RDMA_PS_IPOIB), -1);
	cr_assert_eq(errno, EPROTONOSUPPORT, "errno %d", errno);
	cr_assert_null(id);
	errno = 0;
	cr_assert_eq(rdma_create_id(ch, &id, NULL, (enum rdma_port_space)0x4242), -1);
	cr_assert_eq(errno, EINVAL, "an unknown port space, as the kernel's ucma: errno %d", errno);
	/* the channel is still good */
	cr_assert_eq(rdma_create_id(ch, &id, NULL, RDMA_PS_UDP), 0);
	cr_assert_eq(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(ch);
}

Test(cm, options)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id;
	uint8_t tos = 32, tmo = 14;
	int one = 1;

	cr_assert_not_null(ch);
	cr_assert_eq(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	cr_expect_eq(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, 1), 0, "%d", errno);
	cr_expect_eq(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &one, sizeof(one)), 0);
	cr_expect_eq(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &one, sizeof(one)), 0);
	cr_expect_eq(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &tmo, 1), 0);
	errno = 0;
	cr_expect_eq(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &one, sizeof(one)), -1);
	cr_expect_eq(errno, EINVAL);
	errno = 0;
	cr_expect_eq(rdma_set_option(id, RDMA_OPTION_ID, 99, &one, sizeof(one)), -1);
	cr_expect_eq(errno, ENOSYS);
	errno = 0;
	cr_expect_eq(rdma_set_option(id, 7, 0, &one, sizeof(one)), -1);
	cr_expect_eq(errno, ENOSYS);
	errno = 0;
	cr_expect_eq(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, NULL, 1), -1);
	cr_expect_eq(errno, EFAULT);
	cr_assert_eq(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(ch);
}

/* A listener on OUR_IP:port on @p ch; @return the id. */
static struct rdma_cm_id *listener(struct rdma_event_channel *ch, enum rdma_port_space ps,
				   uint16_t port)
{
	struct sockaddr_in a = sin_of(OUR_IP, port);
	struct rdma_cm_id *id;

	cr_assert_eq(rdma_create_id(ch, &id, NULL, ps), 0, "errno %d", errno);
	cr_assert_eq(rdma_bind_addr(id, (struct sockaddr *)&a), 0, "errno %d", errno);
	cr_assert_eq(rdma_listen(id, 8), 0, "errno %d", errno);
	return id;
}

/* An active id resolved to OUR_IP:port, with a QP when @p with_qp. */
static struct rdma_cm_id *resolved(struct rdma_event_channel *ch, enum rdma_port_space ps,
				   uint16_t port, bool with_qp)
{
	struct sockaddr_in dst = sin_of(OUR_IP, port);
	struct ibv_qp_init_attr qa;
	struct rdma_cm_id *id;

	cr_assert_eq(rdma_create_id(ch, &id, NULL, ps), 0);
	cr_assert_eq(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000), 0);
	ack_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	cr_assert_eq(rdma_resolve_route(id, 2000), 0);
	ack_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
	if (with_qp) {
		qp_attr(&qa, id->qp_type);
		cr_assert_eq(rdma_create_qp(id, NULL, &qa), 0, "errno %d", errno);
		cr_assert_not_null(id->qp);
		cr_assert_not_null(id->send_cq, "a CQ made for the queue");
		cr_assert_not_null(id->recv_cq);
		cr_assert_not_null(id->send_cq_channel);
		cr_assert_eq(id->qp->pd, id->pd, "the default PD");
	}
	return id;
}

Test(cm, rc_connect_accept_disconnect)
{
	struct rdma_event_channel *sch = rdma_create_event_channel();
	struct rdma_event_channel *cch = rdma_create_event_channel();
	struct rdma_conn_param cp = { .private_data = "hello", .private_data_len = 6,
				      .responder_resources = 1, .initiator_depth = 1,
				      .retry_count = 7, .rnr_retry_count = 7 };
	struct rdma_conn_param ap = { .private_data = "welcome", .private_data_len = 8,
				      .responder_resources = 1, .initiator_depth = 1 };
	struct rdma_cm_id *lid, *cid, *sid;
	struct rdma_cm_event *ev;
	struct ibv_qp_init_attr qa;

	cr_assert_not_null(sch);
	cr_assert_not_null(cch);
	lid = listener(sch, RDMA_PS_TCP, 7010);
	cid = resolved(cch, RDMA_PS_TCP, 7010, true);
	cr_assert_eq(qp_state(cid->qp), IBV_QPS_INIT, "INIT after rdma_create_qp");
	cr_assert_eq(rdma_connect(cid, &cp), 0, "errno %d", errno);

	ev = expect_event(sch, RDMA_CM_EVENT_CONNECT_REQUEST);
	cr_assert_eq(ev->listen_id, lid);
	sid = ev->id;
	cr_assert_neq(sid, lid, "a new id");
	cr_assert_eq(sid->channel, sch);
	cr_assert_not_null(sid->verbs);
	cr_assert_eq(ev->param.conn.private_data_len >= 6, 1);
	cr_assert_str_eq(ev->param.conn.private_data, "hello");
	cr_assert_eq(ev->param.conn.qp_num, cid->qp->qp_num);
	cr_assert_eq(rdma_get_dst_port(sid), rdma_get_src_port(cid));
	cr_assert_eq(rdma_ack_cm_event(ev), 0);

	qp_attr(&qa, IBV_QPT_RC);
	cr_assert_eq(rdma_create_qp(sid, NULL, &qa), 0, "errno %d", errno);
	cr_assert_eq(rdma_accept(sid, &ap), 0, "errno %d", errno);
	cr_assert_eq(qp_state(sid->qp), IBV_QPS_RTS, "passive QP walked in rdma_accept");

	ev = expect_event(cch, RDMA_CM_EVENT_ESTABLISHED);
	cr_assert_eq(ev->id, cid);
	cr_assert_eq(ev->param.conn.private_data_len >= 8, 1);
	cr_assert_str_eq(ev->param.conn.private_data, "welcome");
	cr_assert_eq(ev->param.conn.qp_num, sid->qp->qp_num);
	cr_assert_eq(rdma_ack_cm_event(ev), 0);
	cr_assert_eq(qp_state(cid->qp), IBV_QPS_RTS, "active QP walked on CONNECT_RESPONSE");
	ack_event(sch, RDMA_CM_EVENT_ESTABLISHED);

	cr_assert_eq(rdma_disconnect(cid), 0, "errno %d", errno);
	cr_assert_eq(qp_state(cid->qp), IBV_QPS_ERR);
	/* DREQ: the passive side hears it; its rdma_disconnect sends the DREP
	 * that completes the active side's (as with the kernel's CM). */
	ack_event(sch, RDMA_CM_EVENT_DISCONNECTED);
	cr_assert_eq(rdma_disconnect(sid), 0, "errno %d", errno);
	cr_assert_eq(qp_state(sid->qp), IBV_QPS_ERR);
	ack_event(cch, RDMA_CM_EVENT_DISCONNECTED);

	rdma_destroy_qp(cid);
	rdma_destroy_qp(sid);
	cr_assert_null(cid->qp);
	cr_assert_eq(rdma_destroy_id(cid), 0);
	cr_assert_eq(rdma_destroy_id(sid), 0);
	cr_assert_eq(rdma_destroy_id(lid), 0);
	rdma_destroy_event_channel(cch);
	rdma_destroy_event_channel(sch);
}

Test(cm, reject_and_private_data_limits)
{
	struct rdma_event_channel *sch = rdma_create_event_channel();
	struct rdma_event_channel *cch = rdma_create_event_channel();
	uint8_t big[200];
	struct rdma_conn_param cp = { .private_data = big, .private_data_len = 57 };
	struct rdma_cm_id *lid, *cid;
	struct rdma_cm_event *ev;

	memset(big, 0xab, sizeof(big));
	lid = listener(sch, RDMA_PS_TCP, 7020);
	cid = resolved(cch, RDMA_PS_TCP, 7020, true);
	/* REQ carries 92 bytes, 36 of them the rdma_cm IP header: 56 left. */
	errno = 0;
	cr_assert_eq(rdma_connect(cid, &cp), -1);
	cr_assert_eq(errno, EINVAL);
	cp.private_data_len = 56;
	cr_assert_eq(rdma_connect(cid, &cp), 0, "errno %d", errno);

	ev = expect_event(sch, RDMA_CM_EVENT_CONNECT_REQUEST);
	cr_assert_geq(ev->param.conn.private_data_len, 56);
	cr_assert_eq(memcmp(ev->param.conn.private_data, big, 56), 0);
	errno = 0;
	cr_assert_eq(rdma_reject(ev->id, big, 149), -1, "REJ carries 148 bytes");
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(rdma_reject(ev->id, "no", 3), 0, "errno %d", errno);
	cr_assert_eq(rdma_destroy_id(ev->id), 0);
	cr_assert_eq(rdma_ack_cm_event(ev), 0);

	ev = expect_event(cch, RDMA_CM_EVENT_REJECTED);
	cr_assert_eq(ev->status, 28, "consumer reject");
	cr_assert_geq(ev->param.conn.private_data_len, 3);
	cr_assert_str_eq(ev->param.conn.private_data, "no");
	cr_assert_eq(rdma_ack_cm_event(ev), 0);
	cr_assert_eq(qp_state(cid->qp), IBV_QPS_ERR, "REJECTED moves the QP to ERR");

	rdma_destroy_qp(cid);
	cr_assert_eq(rdma_destroy_id(cid), 0);
	cr_assert_eq(rdma_destroy_id(lid), 0);
	rdma_destroy_event_channel(cch);
	rdma_destroy_event_channel(sch);
}

Test(cm, ud_sidr)
{
	struct rdma_event_channel *sch = rdma_create_event_channel();
	struct rdma_event_channel *cch = rdma_create_event_channel();
	struct rdma_conn_param cp = { .private_data = "ud?", .private_data_len = 4 };
	struct rdma_conn_param ap = { .private_data = "ud!", .private_data_len = 4 };
	struct rdma_cm_id *lid, *cid, *sid;
	struct rdma_cm_event *ev;
	struct ibv_qp_init_attr qa;

	lid = listener(sch, RDMA_PS_UDP, 7030);
	cr_assert_eq(lid->qp_type, IBV_QPT_UD);
	cid = resolved(cch, RDMA_PS_UDP, 7030, true);
	cr_assert_eq(qp_state(cid->qp), IBV_QPS_RTS, "a UD QP goes to RTS at once");
	cr_assert_eq(rdma_connect(cid, &cp), 0, "errno %d", errno);

	ev = expect_event(sch, RDMA_CM_EVENT_CONNECT_REQUEST);
	sid = ev->id;
	cr_assert_eq(sid->qp_type, IBV_QPT_UD);
	cr_assert_geq(ev->param.ud.private_data_len, 4);
	cr_assert_str_eq(ev->param.ud.private_data, "ud?");
	cr_assert_eq(rdma_ack_cm_event(ev), 0);
	qp_attr(&qa, IBV_QPT_UD);
	cr_assert_eq(rdma_create_qp(sid, NULL, &qa), 0, "errno %d", errno);
	cr_assert_eq(rdma_accept(sid, &ap), 0, "errno %d", errno);

	ev = expect_event(cch, RDMA_CM_EVENT_ESTABLISHED);
	cr_assert_eq(ev->param.ud.qp_num, sid->qp->qp_num);
	cr_assert_eq(ev->param.ud.qkey, RDMA_UDP_QKEY);
	cr_assert_eq(ev->param.ud.ah_attr.is_global, 1);
	cr_assert_eq(ev->param.ud.ah_attr.port_num, 1);
	cr_assert_str_eq(ev->param.ud.private_data, "ud!");
	cr_assert_eq(rdma_ack_cm_event(ev), 0);

	rdma_destroy_qp(sid);
	rdma_destroy_qp(cid);
	cr_assert_eq(rdma_destroy_id(sid), 0);
	cr_assert_eq(rdma_destroy_id(cid), 0);
	cr_assert_eq(rdma_destroy_id(lid), 0);
	rdma_destroy_event_channel(cch);
	rdma_destroy_event_channel(sch);
}

/* ---- the synchronous API: server on a thread, client here ---- */

static struct rdma_cm_id *sync_listen;
static _Atomic int sync_server_rc = -100;

static void *sync_server(void *arg)
{
	struct rdma_cm_id *id = NULL;
	int rc;

	(void)arg;
	rc = rdma_get_request(sync_listen, &id);
	if (rc == 0 && (id->qp == NULL || id->event == NULL ||
			id->event->event != RDMA_CM_EVENT_CONNECT_REQUEST))
		rc = -2;
	if (rc == 0)
		rc = rdma_accept(id, NULL);
	if (rc == 0)
		rc = qp_state(id->qp) == IBV_QPS_RTS ? 0 : -3;
	if (rc == 0) {
		/* wait for the client's disconnect, then ours completes at once */
		rc = rdma_disconnect(id);
	}
	if (id)
		rdma_destroy_ep(id);
	sync_server_rc = rc ? (errno ? errno : rc) : 0;
	return NULL;
}

Test(cm, sync_create_ep_get_request)
{
	struct rdma_addrinfo hints = { .ai_flags = RAI_PASSIVE, .ai_port_space = RDMA_PS_TCP };
	struct rdma_addrinfo *srai, *crai;
	struct ibv_qp_init_attr qa;
	struct rdma_cm_id *cid;
	pthread_t th;

	cr_assert_eq(rdma_getaddrinfo(OUR_IP, "7040", &hints, &srai), 0, "errno %d", errno);
	qp_attr(&qa, IBV_QPT_RC);
	qa.sq_sig_all = 1;
	cr_assert_eq(rdma_create_ep(&sync_listen, srai, NULL, &qa), 0, "errno %d", errno);
	cr_assert_not_null(sync_listen->channel, "an id of its own with a channel");
	cr_assert_null(sync_listen->qp, "passive: the QP comes with each request");
	cr_assert_eq(rdma_listen(sync_listen, 2), 0, "errno %d", errno);
	cr_assert_eq(pthread_create(&th, NULL, sync_server, NULL), 0);

	hints.ai_flags = 0;
	cr_assert_eq(rdma_getaddrinfo(OUR_IP, "7040", &hints, &crai), 0);
	qp_attr(&qa, IBV_QPT_RC);
	cr_assert_eq(rdma_create_ep(&cid, crai, NULL, &qa), 0, "errno %d", errno);
	cr_assert_not_null(cid->qp);
	cr_assert_eq(qp_state(cid->qp), IBV_QPS_INIT);
	cr_assert_eq(rdma_connect(cid, NULL), 0, "errno %d", errno);
	cr_assert_eq(qp_state(cid->qp), IBV_QPS_RTS);
	cr_assert_eq(rdma_disconnect(cid), 0, "errno %d", errno);
	pthread_join(th, NULL);
	cr_assert_eq(sync_server_rc, 0, "server: %d", (int)sync_server_rc);
	rdma_destroy_ep(cid);
	rdma_destroy_ep(sync_listen);
	rdma_freeaddrinfo(crai);
	rdma_freeaddrinfo(srai);
}

Test(cm, sync_connect_refused)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP };
	struct rdma_addrinfo *rai;
	struct ibv_qp_init_attr qa;
	struct rdma_cm_id *cid;

	/* nobody listens on 7050: the daemon's CM rejects (invalid service ID) */
	cr_assert_eq(rdma_getaddrinfo(OUR_IP, "7050", &hints, &rai), 0);
	qp_attr(&qa, IBV_QPT_RC);
	cr_assert_eq(rdma_create_ep(&cid, rai, NULL, &qa), 0, "errno %d", errno);
	errno = 0;
	cr_assert_eq(rdma_connect(cid, NULL), -1);
	cr_assert_eq(errno, ECONNREFUSED, "errno %d", errno);
	cr_assert_not_null(cid->event);
	cr_assert_eq(cid->event->event, RDMA_CM_EVENT_REJECTED);
	rdma_destroy_ep(cid);
	rdma_freeaddrinfo(rai);
}

/*
 * perftest -R's race (doc/rdma-cm.md, "Against Linux rxe"): its client's
 * connection meets a server that has not listened again yet (REJECTED,
 * status 8); it destroys the id with its QP still attached and the event
 * channel, then retries with new ones once the server listens. Done right
 * (as upstream perftest now does) the retry connects; perftest 4.5-0.17
 * instead reuses the freed id and dies in the application.
 */
Test(cm, rejected_then_retried_with_fresh_ids)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_event_channel *sch = rdma_create_event_channel();
	struct rdma_cm_id *cid, *lid, *sid;
	struct rdma_cm_event *ev;
	struct ibv_qp_init_attr qa;
	struct ibv_qp *stale;
	struct ibv_pd *pd;
	struct ibv_cq *cq;

	cr_assert_not_null(ch);
	cr_assert_not_null(sch);
	/* the application's own PD and CQ, as perftest's ctx_init makes them */
	cid = resolved(ch, RDMA_PS_TCP, 7061, false);
	pd = ibv_alloc_pd(cid->verbs);
	cq = ibv_create_cq(cid->verbs, 8, NULL, NULL, 0);
	cr_assert_not_null(pd);
	cr_assert_not_null(cq);
	qp_attr(&qa, IBV_QPT_RC);
	qa.send_cq = qa.recv_cq = cq;
	cr_assert_eq(rdma_create_qp(cid, pd, &qa), 0, "errno %d", errno);
	stale = cid->qp;
	cr_assert_eq(rdma_connect(cid, NULL), 0, "errno %d", errno);
	ev = expect_event(ch, RDMA_CM_EVENT_REJECTED);
	cr_assert_eq(ev->status, 8, "invalid service ID: %d", ev->status);
	cr_assert_eq(rdma_ack_cm_event(ev), 0);
	cr_assert_eq(rdma_destroy_id(cid), 0, "with its QP attached: errno %d", errno);
	rdma_destroy_event_channel(ch);

	/* the server listens now; the retry uses a new channel and id */
	lid = listener(sch, RDMA_PS_TCP, 7061);
	ch = rdma_create_event_channel();
	cr_assert_not_null(ch);
	cid = resolved(ch, RDMA_PS_TCP, 7061, false);
	cr_assert_eq(cid->verbs, pd->context, "the same device context: the PD still fits");
	qp_attr(&qa, IBV_QPT_RC);
	qa.send_cq = qa.recv_cq = cq;
	cr_assert_eq(rdma_create_qp(cid, pd, &qa), 0, "errno %d", errno);
	cr_assert_eq(rdma_connect(cid, NULL), 0, "errno %d", errno);
	ev = expect_event(sch, RDMA_CM_EVENT_CONNECT_REQUEST);
	sid = ev->id;
	cr_assert_eq(rdma_ack_cm_event(ev), 0);
	qp_attr(&qa, IBV_QPT_RC);
	cr_assert_eq(rdma_create_qp(sid, NULL, &qa), 0, "errno %d", errno);
	cr_assert_eq(rdma_accept(sid, NULL), 0, "errno %d", errno);
	ack_event(ch, RDMA_CM_EVENT_ESTABLISHED);
	ack_event(sch, RDMA_CM_EVENT_ESTABLISHED);

	/* the first attempt's QP outlived its id: the application destroys it */
	cr_assert_eq(ibv_destroy_qp(stale), 0);
	rdma_destroy_qp(sid);
	cr_assert_eq(rdma_destroy_id(sid), 0);
	rdma_destroy_qp(cid);
	cr_assert_eq(rdma_destroy_id(cid), 0);
	cr_assert_eq(rdma_destroy_id(lid), 0);
	cr_assert_eq(ibv_destroy_cq(cq), 0);
	cr_assert_eq(ibv_dealloc_pd(pd), 0);
	rdma_destroy_event_channel(ch);
	rdma_destroy_event_channel(sch);
}

/* ---- rdma_destroy_id waits for the ack of an event the application holds ---- */

static struct rdma_cm_event *held;
static _Atomic int destroyed;

static void *destroyer(void *arg)
{
	rdma_destroy_id(arg);
	destroyed = 1;
	return NULL;
}

Test(cm, destroy_waits_for_ack)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in dst = sin_of(OUR_IP, 7060);
	struct rdma_cm_id *id;
	pthread_t th;

	cr_assert_eq(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	cr_assert_eq(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000), 0);
	held = expect_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	cr_assert_eq(pthread_create(&th, NULL, destroyer, id), 0);
	usleep(200000);
	cr_assert_eq(destroyed, 0, "rdma_destroy_id returned with an event unacked");
	cr_assert_eq(rdma_ack_cm_event(held), 0);
	pthread_join(th, NULL);
	cr_assert_eq(destroyed, 1);
	rdma_destroy_event_channel(ch);
}

/* An event still unread on the channel when its id is destroyed is dropped. */
Test(cm, unread_event_of_destroyed_id_dropped)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in dst = sin_of(OUR_IP, 7070);
	struct rdma_cm_id *id, *id2;
	struct rdma_cm_event *ev;

	cr_assert_eq(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	cr_assert_eq(rdma_create_id(ch, &id2, NULL, RDMA_PS_TCP), 0);
	cr_assert_eq(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000), 0);
	cr_assert(readable(ch, 3000), "the event is on the channel");
	cr_assert_eq(rdma_destroy_id(id), 0, "returns: the application never read it");
	cr_assert_eq(rdma_resolve_addr(id2, NULL, (struct sockaddr *)&dst, 2000), 0);
	ev = expect_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	cr_assert_eq(ev->id, id2, "the destroyed id's event was dropped");
	cr_assert_eq(rdma_ack_cm_event(ev), 0);
	cr_assert_eq(rdma_destroy_id(id2), 0);
	rdma_destroy_event_channel(ch);
}

/* The daemon going away: a blocked rdma_get_cm_event returns EIO, requests fail with EIO. */
Test(cm, daemon_gone_eio)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	int st;

	cr_assert_not_null(ch);
	cr_assert_eq(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	kill(rt_server, SIGTERM);
	waitpid(rt_server, &st, 0);
	rt_server = -1;
	errno = 0;
	cr_assert_eq(rdma_get_cm_event(ch, &ev), -1);
	cr_assert_eq(errno, EIO, "errno %d", errno);
	errno = 0;
	cr_assert_eq(rdma_listen(id, 1), -1);
	cr_assert_eq(errno, EIO, "errno %d", errno);
}

/*
 * Destroying a channel while another thread waits on it leaves that thread
 * waiting, as the kernel's rdma_cm fd does (cmtime destroys its channel
 * under its event thread on the way out): no error is reported to it.
 */
static _Atomic int waiter_returned;

static void *waiter(void *arg)
{
	struct rdma_cm_event *ev;

	rdma_get_cm_event(arg, &ev);
	waiter_returned = 1;
	return NULL;
}

Test(cm, destroy_channel_under_a_reader)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	pthread_t th;

	cr_assert_not_null(ch);
	cr_assert_eq(pthread_create(&th, NULL, waiter, ch), 0);
	usleep(100000);
	rdma_destroy_event_channel(ch);
	usleep(200000);
	cr_assert_eq(waiter_returned, 0, "the reader got an error for a channel its process destroyed");
	pthread_detach(th);
}

Test(cm, migrate_id_moves_events)
{
	struct rdma_event_channel *a = rdma_create_event_channel();
	struct rdma_event_channel *b = rdma_create_event_channel();
	struct sockaddr_in dst = sin_of(OUR_IP, 7080);
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;

	cr_assert_not_null(a);
	cr_assert_not_null(b);
	cr_assert_eq(rdma_create_id(a, &id, NULL, RDMA_PS_TCP), 0);
	cr_assert_eq(rdma_migrate_id(id, b), 0, "errno %d", errno);
	cr_assert_eq(id->channel, b);
	cr_assert_eq(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000), 0);
	ev = expect_event(b, RDMA_CM_EVENT_ADDR_RESOLVED);
	cr_assert_eq(ev->id, id);
	cr_assert_not(readable(a, 50), "nothing on the old channel");
	cr_assert_eq(rdma_ack_cm_event(ev), 0);
	/* to its own channel (synchronous from now on), and back */
	cr_assert_eq(rdma_migrate_id(id, NULL), 0, "errno %d", errno);
	cr_assert_neq(id->channel, a);
	cr_assert_neq(id->channel, b);
	errno = 0;
	cr_assert_eq(rdma_migrate_id(id, NULL), -1, "already synchronous");
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(rdma_migrate_id(id, a), 0);
	cr_assert_eq(id->channel, a);
	cr_assert_eq(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(b);
	rdma_destroy_event_channel(a);
}

/*
 * Events already queued on the old channel move with the id, as the
 * kernel's ucma_migrate_id moves them: a listener's CONNECT_REQUEST and an
 * accepted id's ESTABLISHED, written to the old channel and not read, are
 * read from the new one after rdma_migrate_id, and nothing is left (or
 * readable) on the old one.
 */
Test(cm, migrate_id_takes_queued_events_along)
{
	struct rdma_event_channel *a = rdma_create_event_channel();
	struct rdma_event_channel *b = rdma_create_event_channel();
	struct rdma_event_channel *c = rdma_create_event_channel();
	struct rdma_event_channel *cch = rdma_create_event_channel();
	struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1,
				      .retry_count = 7, .rnr_retry_count = 7 };
	struct rdma_cm_id *lid, *cid, *sid, *other;
	struct sockaddr_in dst = sin_of(OUR_IP, 7091);
	struct ibv_qp_init_attr qa;
	struct rdma_cm_event *ev;

	cr_assert_not_null(a);
	cr_assert_not_null(b);
	cr_assert_not_null(c);
	cr_assert_not_null(cch);
	lid = listener(a, RDMA_PS_TCP, 7090);
	cid = resolved(cch, RDMA_PS_TCP, 7090, true);
	/* another id's event stays where it is */
	cr_assert_eq(rdma_create_id(a, &other, NULL, RDMA_PS_TCP), 0);
	cr_assert_eq(rdma_resolve_addr(other, NULL, (struct sockaddr *)&dst, 2000), 0);
	cr_assert(readable(a, 3000));
	cr_assert_eq(rdma_connect(cid, &cp), 0, "errno %d", errno);
	usleep(200000); /* the REQ looped back: CONNECT_REQUEST written to a, unread */

	cr_assert_eq(rdma_migrate_id(lid, b), 0, "errno %d", errno);
	ev = expect_event(b, RDMA_CM_EVENT_CONNECT_REQUEST);
	cr_assert_eq(ev->listen_id, lid);
	sid = ev->id;
	cr_assert_eq(sid->channel, b, "the new id on the listener's channel");
	cr_assert_eq(rdma_ack_cm_event(ev), 0);
	ev = expect_event(a, RDMA_CM_EVENT_ADDR_RESOLVED);
	cr_assert_eq(ev->id, other, "the other id's event stayed on a");
	cr_assert_eq(rdma_ack_cm_event(ev), 0);
	cr_assert_not(readable(a, 100), "nothing of the listener left on a");
	cr_assert_not(readable(b, 50));

	qp_attr(&qa, IBV_QPT_RC);
	cr_assert_eq(rdma_create_qp(sid, NULL, &qa), 0, "errno %d", errno);
	cr_assert_eq(rdma_accept(sid, NULL), 0, "errno %d", errno);
	ack_event(cch, RDMA_CM_EVENT_ESTABLISHED);
	cr_assert(readable(b, 3000), "ESTABLISHED queued on b");
	cr_assert_eq(rdma_migrate_id(sid, c), 0, "errno %d", errno);
	cr_assert_eq(sid->channel, c);
	ev = expect_event(c, RDMA_CM_EVENT_ESTABLISHED);
	cr_assert_eq(ev->id, sid);
	cr_assert_eq(rdma_ack_cm_event(ev), 0);
	cr_assert_not(readable(b, 100), "nothing left on b");

	/* later events follow it */
	cr_assert_eq(rdma_disconnect(cid), 0, "errno %d", errno);
	ack_event(c, RDMA_CM_EVENT_DISCONNECTED);
	cr_assert_eq(rdma_disconnect(sid), 0, "errno %d", errno);
	ack_event(cch, RDMA_CM_EVENT_DISCONNECTED);
	rdma_destroy_qp(cid);
	rdma_destroy_qp(sid);
	cr_assert_eq(rdma_destroy_id(cid), 0);
	cr_assert_eq(rdma_destroy_id(sid), 0);
	cr_assert_eq(rdma_destroy_id(other), 0);
	cr_assert_eq(rdma_destroy_id(lid), 0);
	rdma_destroy_event_channel(cch);
	rdma_destroy_event_channel(c);
	rdma_destroy_event_channel(b);
	rdma_destroy_event_channel(a);
}

Test(cm, accept_private_data_limit)
{
	struct rdma_event_channel *sch = rdma_create_event_channel();
	struct rdma_event_channel *cch = rdma_create_event_channel();
	uint8_t big[197];
	struct rdma_conn_param cp = { .retry_count = 7 };
	struct rdma_conn_param ap = { .private_data = big, .private_data_len = 197 };
	struct rdma_cm_id *lid, *cid, *sid;
	struct rdma_cm_event *ev;
	struct ibv_qp_init_attr qa;

	memset(big, 0x5a, sizeof(big));
	lid = listener(sch, RDMA_PS_TCP, 7090);
	cid = resolved(cch, RDMA_PS_TCP, 7090, true);
	cr_assert_eq(rdma_connect(cid, &cp), 0, "errno %d", errno);
	ev = expect_event(sch, RDMA_CM_EVENT_CONNECT_REQUEST);
	sid = ev->id;
	cr_assert_eq(rdma_ack_cm_event(ev), 0);
	qp_attr(&qa, IBV_QPT_RC);
	cr_assert_eq(rdma_create_qp(sid, NULL, &qa), 0);
	/* REP carries 196 bytes of private data */
	errno = 0;
	cr_assert_eq(rdma_accept(sid, &ap), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(qp_state(sid->qp), IBV_QPS_INIT, "refused before the QP walk");
	ap.private_data_len = 196;
	cr_assert_eq(rdma_accept(sid, &ap), 0, "errno %d", errno);
	ev = expect_event(cch, RDMA_CM_EVENT_ESTABLISHED);
	cr_assert_geq(ev->param.conn.private_data_len, 196);
	cr_assert_eq(memcmp(ev->param.conn.private_data, big, 196), 0);
	cr_assert_eq(rdma_ack_cm_event(ev), 0);
	rdma_destroy_qp(sid);
	rdma_destroy_qp(cid);
	cr_assert_eq(rdma_destroy_id(sid), 0);
	cr_assert_eq(rdma_destroy_id(cid), 0);
	cr_assert_eq(rdma_destroy_id(lid), 0);
	rdma_destroy_event_channel(cch);
	rdma_destroy_event_channel(sch);
}

/* Both ends disconnect before reading any event (perftest -R does): both get DISCONNECTED. */
Test(cm, crossing_disconnects)
{
	struct rdma_event_channel *sch = rdma_create_event_channel();
	struct rdma_event_channel *cch = rdma_create_event_channel();
	struct rdma_conn_param cp = { .retry_count = 7, .rnr_retry_count = 7 };
	struct rdma_cm_id *lid, *cid, *sid;
	struct rdma_cm_event *ev;
	struct ibv_qp_init_attr qa;

	lid = listener(sch, RDMA_PS_TCP, 7100);
	cid = resolved(cch, RDMA_PS_TCP, 7100, true);
	cr_assert_eq(rdma_connect(cid, &cp), 0, "errno %d", errno);
	ev = expect_event(sch, RDMA_CM_EVENT_CONNECT_REQUEST);
	sid = ev->id;
	cr_assert_eq(rdma_ack_cm_event(ev), 0);
	qp_attr(&qa, IBV_QPT_RC);
	cr_assert_eq(rdma_create_qp(sid, NULL, &qa), 0);
	cr_assert_eq(rdma_accept(sid, NULL), 0, "errno %d", errno);
	ack_event(cch, RDMA_CM_EVENT_ESTABLISHED);
	ack_event(sch, RDMA_CM_EVENT_ESTABLISHED);

	cr_assert_eq(rdma_disconnect(cid), 0, "errno %d", errno);
	cr_assert_eq(rdma_disconnect(sid), 0, "errno %d", errno);
	ack_event(cch, RDMA_CM_EVENT_DISCONNECTED);
	ack_event(sch, RDMA_CM_EVENT_DISCONNECTED);

	rdma_destroy_qp(sid);
	rdma_destroy_qp(cid);
	cr_assert_eq(rdma_destroy_id(sid), 0);
	cr_assert_eq(rdma_destroy_id(cid), 0);
	cr_assert_eq(rdma_destroy_id(lid), 0);
	rdma_destroy_event_channel(cch);
	rdma_destroy_event_channel(sch);
}
