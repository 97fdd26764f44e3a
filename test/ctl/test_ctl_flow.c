/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/ctl RAW_PACKET QPs and flow steering (ctl_flow.c): CAP_NET_RAW
 * required for both (EPERM, counted), nothing of either without
 * limits.max_flows, the device attributes, every malformed rule refused
 * (counted, nothing kept), the per-client quota and the global limit,
 * what the dataplane is told, EBUSY for a QP flows steer to, and the
 * flows going before their QP when a client disconnects.
 */
#include "ctl_test.h"

/* A dataplane that records flows, can refuse one and checks the order. */
static struct {
	unsigned int creates, destroys;
	struct ctl_flow_info last;
	int refuse;                 /* errno for the next create */
	uint32_t live[16];          /* QPNs of the flows it holds */
	unsigned int n_live;
	bool qp_destroyed_with_flows; /* a QP reached qp_destroy while flows named it */
} fdp;

static int fdp_flow_create(void *dp, const struct ctl_flow_info *f)
{
	(void)dp;
	if (fdp.refuse) {
		int e = fdp.refuse;

		fdp.refuse = 0;
		return e;
	}
	fdp.creates++;
	fdp.last = *f;
	fdp.live[fdp.n_live++] = f->qpn;
	return 0;
}

static void fdp_flow_destroy(void *dp, const struct ctl_flow_info *f)
{
	(void)dp;
	fdp.destroys++;
	for (unsigned int i = 0; i < fdp.n_live; i++) {
		if (fdp.live[i] == f->qpn) {
			fdp.live[i] = fdp.live[--fdp.n_live];
			break;
		}
	}
}

static void fdp_qp_destroy(void *dp, const struct ctl_qp_info *qp)
{
	(void)dp;
	for (unsigned int i = 0; i < fdp.n_live; i++)
		if (fdp.live[i] == qp->qpn)
			fdp.qp_destroyed_with_flows = true;
}

static const struct ctl_dataplane_ops fdp_ops = {
	.qp_destroy = fdp_qp_destroy,
	.flow_create = fdp_flow_create,
	.flow_destroy = fdp_flow_destroy,
};

static void setup_with(uint32_t max_flows, uint32_t quota)
{
	struct ctl_config cfg = base_cfg();

	memset(&fdp, 0, sizeof(fdp));
	cfg.limits.max_flows = max_flows;
	cfg.quota.max_flows = quota;
	cfg.dp_ops = &fdp_ops;
	cfg.dp = &fdp;
	ctl = ctl_create(&cfg);
	cr_assert_not_null(ctl);
}

static void setup(void)
{
	setup_with(8, 0);
}

static void teardown(void)
{
	ctl_destroy(ctl);
	ctl = NULL;
	cr_assert_eq(fdp.n_live, 0u, "the dataplane heard every flow go");
	cr_assert_not(fdp.qp_destroyed_with_flows, "flows go before their QP");
}

TestSuite(ctl_flow, .init = setup, .fini = teardown, .timeout = 20);

/* A rule as test_flow.py's UDP test asks: Ethernet + IPv4 + UDP ports. */
static struct flow_match udp_rule(void)
{
	struct flow_match m = { .layers = FLOW_L_ETH | FLOW_L_IPV4 | FLOW_L_UDP };

	m.val.ether_type = htons(0x0800);
	m.mask.ether_type = 0xffff;
	m.val.l4_dst = htons(7000);
	m.mask.l4_dst = 0xffff;
	return m;
}

static int create_flow(struct client *cl, uint32_t qp, uint32_t port, uint32_t type,
		       uint32_t prio, const struct flow_match *m, uint32_t *handle)
{
	struct ipc_msg q, r;
	int rc;

	req(&q, IPC_OP_CREATE_FLOW);
	q.u.req_CREATE_FLOW.qp = qp;
	q.u.req_CREATE_FLOW.port = port;
	q.u.req_CREATE_FLOW.type = type;
	q.u.req_CREATE_FLOW.priority = prio;
	q.u.req_CREATE_FLOW.match = *m;
	rc = call(cl, &q, NULL, 0, &r, NULL);
	if (handle)
		*handle = r.u.rsp_CREATE_FLOW.handle;
	return rc;
}

static uint32_t raw_qp(struct client *cl, uint32_t pd, uint32_t cq)
{
	struct ipc_create_qp_rsp r;

	cr_assert_eq(create_qp(cl, pd, cq, IBV_QPT_RAW_PACKET, &r), 0);
	return r.handle;
}

static struct ipc_device_attr query_device(struct client *cl)
{
	struct ipc_msg m, r;

	req(&m, IPC_OP_QUERY_DEVICE);
	cr_assert_eq(call(cl, &m, NULL, 0, &r, NULL), 0);
	return r.u.rsp_QUERY_DEVICE.attr;
}

Test(ctl_flow, a_flow_reaches_the_dataplane_and_leaves_it)
{
	struct flow_match m = udp_rule();
	struct ctl_stats st;
	struct client cl;
	uint32_t pd, cq, qp, fl;

	client_open(&cl, true);
	pd = alloc_pd(&cl);
	cq = create_cq(&cl, 8, 0);
	qp = raw_qp(&cl, pd, cq);
	cr_assert_eq(create_flow(&cl, qp, 1, IBV_FLOW_ATTR_NORMAL, 3, &m, &fl), 0);
	cr_assert_neq(fl, 0u);
	cr_assert_eq(fdp.creates, 1u);
	cr_assert_eq(fdp.last.port, 1u);
	cr_assert_eq(fdp.last.priority, 3);
	cr_assert_eq(fdp.last.match.val.l4_dst, htons(7000));
	cr_assert_eq(fdp.last.match.layers, m.layers);
	ctl_get_stats(ctl, &st);
	cr_assert_eq(st.flow, 1u);
	cr_assert_eq(destroy(&cl, IPC_OP_DESTROY_QP, qp), EBUSY, "a flow steers to it");
	cr_assert_eq(destroy(&cl, IPC_OP_DESTROY_FLOW, fl), 0);
	cr_assert_eq(fdp.destroys, 1u);
	cr_assert_eq(destroy(&cl, IPC_OP_DESTROY_FLOW, fl), EINVAL, "already gone");
	cr_assert_eq(destroy(&cl, IPC_OP_DESTROY_QP, qp), 0);
	ctl_get_stats(ctl, &st);
	cr_assert_eq(st.flow, 0u);
	client_close(&cl);
}

Test(ctl_flow, the_device_reports_raw_qps_and_flow_steering)
{
	struct client cl;
	struct ipc_device_attr a;

	client_open(&cl, true);
	a = query_device(&cl);
	cr_assert_eq(a.max_raw_ethy_qp, a.max_qp);
	cr_assert(a.device_cap_flags & IBV_DEVICE_MANAGED_FLOW_STEERING);
	client_close(&cl);
}

Test(ctl_flow, without_max_flows_there_are_no_raw_qps_nor_flows)
{
	struct flow_match m = udp_rule();
	struct ipc_create_qp_rsp r;
	struct ipc_device_attr a;
	struct client cl;
	uint32_t pd, cq, ud;

	ctl_destroy(ctl); /* the suite's, for one without raw QPs */
	setup_with(0, 0);
	client_open(&cl, true);
	a = query_device(&cl);
	cr_assert_eq(a.max_raw_ethy_qp, 0u);
	cr_assert_not(a.device_cap_flags & IBV_DEVICE_MANAGED_FLOW_STEERING);
	pd = alloc_pd(&cl);
	cq = create_cq(&cl, 8, 0);
	cr_assert_eq(create_qp(&cl, pd, cq, IBV_QPT_RAW_PACKET, &r), EOPNOTSUPP);
	cr_assert_eq(create_qp(&cl, pd, cq, IBV_QPT_UD, &r), 0);
	ud = r.handle;
	cr_assert_eq(create_flow(&cl, ud, 1, IBV_FLOW_ATTR_NORMAL, 0, &m, NULL), EOPNOTSUPP);
	cr_assert_eq(fdp.creates, 0u);
	client_close(&cl);
}

Test(ctl_flow, malformed_rules_are_refused_counted_and_leave_nothing)
{
	struct flow_match m = udp_rule(), bad;
	struct ipc_create_qp_rsp r;
	struct ctl_stats st;
	struct client cl;
	uint32_t pd, cq, qp;

	client_open(&cl, true);
	pd = alloc_pd(&cl);
	cq = create_cq(&cl, 8, 0);
	qp = raw_qp(&cl, pd, cq);
	cr_assert_eq(create_flow(&cl, qp, 0, IBV_FLOW_ATTR_NORMAL, 0, &m, NULL), EINVAL, "port 0");
	cr_assert_eq(create_flow(&cl, qp, 2, IBV_FLOW_ATTR_NORMAL, 0, &m, NULL), EINVAL, "port 2");
	cr_assert_eq(create_flow(&cl, qp, 1, IBV_FLOW_ATTR_NORMAL, 0x10000, &m, NULL), EINVAL,
		     "priority is 16 bits");
	cr_assert_eq(create_flow(&cl, qp, 1, IBV_FLOW_ATTR_SNIFFER, 0, &m, NULL), EOPNOTSUPP);
	cr_assert_eq(create_flow(&cl, qp, 1, IBV_FLOW_ATTR_ALL_DEFAULT, 0, &m, NULL), EOPNOTSUPP);
	bad = m;
	bad.layers |= FLOW_L_TCP;
	cr_assert_eq(create_flow(&cl, qp, 1, IBV_FLOW_ATTR_NORMAL, 0, &bad, NULL), EINVAL,
		     "TCP and UDP");
	bad = m;
	bad.layers = 1u << 20;
	cr_assert_eq(create_flow(&cl, qp, 1, IBV_FLOW_ATTR_NORMAL, 0, &bad, NULL), EOPNOTSUPP);
	bad = m;
	bad.mask.ip6_dst[0] = 0xff;
	cr_assert_eq(create_flow(&cl, qp, 1, IBV_FLOW_ATTR_NORMAL, 0, &bad, NULL), EINVAL,
		     "an IPv6 field in an IPv4 rule");
	ctl_get_stats(ctl, &st);
	cr_assert_eq(st.flows_bad, 8u);
	cr_assert_eq(st.flow, 0u);
	cr_assert_eq(fdp.creates, 0u);
	/* only RAW_PACKET QPs, only one's own */
	cr_assert_eq(create_qp(&cl, pd, cq, IBV_QPT_UD, &r), 0);
	cr_assert_eq(create_flow(&cl, r.handle, 1, IBV_FLOW_ATTR_NORMAL, 0, &m, NULL), EINVAL);
	cr_assert_eq(create_flow(&cl, qp + 1, 1, IBV_FLOW_ATTR_NORMAL, 0, &m, NULL), EINVAL);
	fdp.refuse = ENOSPC;
	cr_assert_eq(create_flow(&cl, qp, 1, IBV_FLOW_ATTR_NORMAL, 0, &m, NULL), ENOSPC,
		     "the dataplane's refusal");
	ctl_get_stats(ctl, &st);
	cr_assert_eq(st.flow, 0u);
	cr_assert_eq(destroy(&cl, IPC_OP_DESTROY_QP, qp), 0, "no reference left behind");
	client_close(&cl);
}

Test(ctl_flow, quota_and_device_limit_refuse_more_flows)
{
	struct flow_match m = udp_rule();
	struct client a, b;
	struct ctl_stats st;
	uint32_t qa, qb, pd, cq;

	ctl_destroy(ctl); /* the suite's, for one with a quota */
	setup_with(3, 2);
	client_open(&a, true);
	client_open(&b, true);
	pd = alloc_pd(&a);
	cq = create_cq(&a, 8, 0);
	qa = raw_qp(&a, pd, cq);
	pd = alloc_pd(&b);
	cq = create_cq(&b, 8, 0);
	qb = raw_qp(&b, pd, cq);
	cr_assert_eq(create_flow(&a, qa, 1, IBV_FLOW_ATTR_NORMAL, 0, &m, NULL), 0);
	cr_assert_eq(create_flow(&a, qa, 1, IBV_FLOW_ATTR_NORMAL, 1, &m, NULL), 0);
	cr_assert_eq(create_flow(&a, qa, 1, IBV_FLOW_ATTR_NORMAL, 2, &m, NULL), ENOMEM, "quota 2");
	ctl_get_stats(ctl, &st);
	cr_assert_eq(st.quota_refused, 1u);
	cr_assert_eq(create_flow(&b, qb, 1, IBV_FLOW_ATTR_NORMAL, 0, &m, NULL), 0);
	cr_assert_eq(create_flow(&b, qb, 1, IBV_FLOW_ATTR_NORMAL, 1, &m, NULL), ENOMEM,
		     "the device's 3");
	cr_assert_eq(fdp.creates, 3u);
	client_close(&a); /* teardown: its two flows before its QP (checked in fini) */
	cr_assert_eq(fdp.destroys, 2u);
	cr_assert_eq(create_flow(&b, qb, 1, IBV_FLOW_ATTR_NORMAL, 1, &m, NULL), 0, "room again");
	client_close(&b);
	cr_assert_eq(fdp.destroys, 4u);
}

Test(ctl_flow, one_client_cannot_name_anothers_flow)
{
	struct flow_match m = udp_rule();
	struct client a, b;
	uint32_t pd, cq, qp, fl;

	client_open(&a, true);
	client_open(&b, true);
	pd = alloc_pd(&a);
	cq = create_cq(&a, 8, 0);
	qp = raw_qp(&a, pd, cq);
	cr_assert_eq(create_flow(&a, qp, 1, IBV_FLOW_ATTR_NORMAL, 0, &m, &fl), 0);
	cr_assert_eq(destroy(&b, IPC_OP_DESTROY_FLOW, fl), EINVAL);
	cr_assert_eq(create_flow(&b, qp, 1, IBV_FLOW_ATTR_NORMAL, 0, &m, NULL), EINVAL,
		     "nor steer to its QP");
	cr_assert_eq(fdp.destroys, 0u);
	client_close(&b);
	client_close(&a);
}

/*
 * A RAW_PACKET QP sends frames of its own making and a flow takes frames
 * meant for others: both need CAP_NET_RAW, as Linux (uverbs create_qp,
 * create_flow). Judged on the peer's credentials, not on its word.
 */
Test(ctl_flow, raw_qps_and_flows_need_cap_net_raw)
{
	struct flow_match m = udp_rule();
	struct ipc_create_qp_rsp r;
	struct ctl_stats st;
	struct client root;
	struct peer p;
	uint32_t pd, cq, qp;

	if (geteuid() != 0) {
		cr_skip_test("needs root: a peer with other IDs");
		return;
	}
	/* root (this process) creates a raw QP; the peer tries to steer to its own */
	peer_open(&p, 65534, 65534);
	cr_assert_not_null(p.cl.c);
	pd = alloc_pd(&p.cl);
	cq = create_cq(&p.cl, 8, 0);
	cr_assert_eq(create_qp(&p.cl, pd, cq, IBV_QPT_RAW_PACKET, &r), EPERM);
	cr_assert_eq(create_qp(&p.cl, pd, cq, IBV_QPT_UD, &r), 0);
	cr_assert_eq(create_flow(&p.cl, r.handle, 1, IBV_FLOW_ATTR_NORMAL, 0, &m, NULL), EPERM,
		     "refused before the QP is even looked at");
	ctl_get_stats(ctl, &st);
	cr_assert_eq(st.raw_refused, 2u);
	cr_assert_eq(st.flow, 0u);
	cr_assert_eq(destroy(&p.cl, IPC_OP_DESTROY_QP, r.handle), 0);
	peer_close(&p);
	client_open(&root, true);
	pd = alloc_pd(&root);
	cq = create_cq(&root, 8, 0);
	qp = raw_qp(&root, pd, cq);
	cr_assert_eq(create_flow(&root, qp, 1, IBV_FLOW_ATTR_NORMAL, 0, &m, NULL), 0);
	client_close(&root);
}

/* ---- RSS QPs (CREATE_RSS_QP): a hostile client's every value is checked ---- */

static int create_rss(struct client *cl, uint32_t pd, uint32_t log_size, const uint32_t *wq,
		      uint64_t fields, uint32_t key_len, uint32_t *handle, uint32_t *qpn)
{
	struct ipc_msg q, r;
	int rc;

	req(&q, IPC_OP_CREATE_RSS_QP);
	q.u.req_CREATE_RSS_QP.pd = pd;
	q.u.req_CREATE_RSS_QP.log_size = log_size;
	q.u.req_CREATE_RSS_QP.hash_function = IBV_RX_HASH_FUNC_TOEPLITZ;
	q.u.req_CREATE_RSS_QP.key_len = key_len;
	q.u.req_CREATE_RSS_QP.fields_mask = fields;
	for (uint32_t i = 0; i < 40; i++)
		q.u.req_CREATE_RSS_QP.key[i] = (uint8_t)(i * 13 + 1);
	for (uint32_t i = 0; i < IPC_RSS_MAX_ENTRIES && wq[i] != 0; i++)
		q.u.req_CREATE_RSS_QP.wq[i] = wq[i];
	rc = call(cl, &q, NULL, 0, &r, NULL);
	if (handle)
		*handle = r.u.rsp_CREATE_RSS_QP.handle;
	if (qpn)
		*qpn = r.u.rsp_CREATE_RSS_QP.num;
	return rc;
}

Test(ctl_flow, an_rss_qp_takes_its_wqs_and_its_flows_carry_the_table)
{
	const uint64_t ip4 = IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4;
	struct flow_match m = udp_rule();
	struct ipc_create_qp_rsp ud;
	struct ipc_device_attr a;
	struct ctl_stats st;
	struct client cl, other;
	uint32_t pd, cq, wq[IPC_RSS_MAX_ENTRIES + 1] = { 0 }, wqn[4], rss, rssn, fl;
	uint32_t bad[IPC_RSS_MAX_ENTRIES + 1] = { 0 };

	client_open(&cl, true);
	client_open(&other, true);
	a = query_device(&cl);
	cr_assert_eq(a.rss_max_table_size, IPC_RSS_MAX_ENTRIES);
	cr_assert_eq(a.rss_supported_qpts, 1u << IBV_QPT_RAW_PACKET);
	cr_assert_eq(a.rss_hash_function, IBV_RX_HASH_FUNC_TOEPLITZ);
	cr_assert_eq(a.rss_hash_fields_mask, 0xffu);
	cr_assert_gt(a.rss_max_tables, 0u);
	pd = alloc_pd(&cl);
	cq = create_cq(&cl, 8, 0);
	for (int i = 0; i < 4; i++) {
		struct ipc_create_qp_rsp r;

		cr_assert_eq(create_qp(&cl, pd, cq, IBV_QPT_RAW_PACKET, &r), 0);
		wq[i] = r.handle;
		wqn[i] = r.qpn;
	}
	/* every malformed request: refused, nothing kept */
	cr_assert_eq(create_rss(&cl, pd, 2, wq, ip4, 39, NULL, NULL), EINVAL, "key length");
	cr_assert_eq(create_rss(&cl, pd, 3, wq, ip4, 40, NULL, NULL), EINVAL, "8 entries, 4 WQs");
	cr_assert_eq(create_rss(&cl, pd, 1, wq, ip4, 40, NULL, NULL), EINVAL,
		     "handles past the table");
	cr_assert_eq(create_rss(&cl, pd, 7, wq, ip4, 40, NULL, NULL), EINVAL, "128 entries");
	cr_assert_eq(create_rss(&cl, pd, 40, wq, ip4, 40, NULL, NULL), EINVAL, "a huge log");
	cr_assert_eq(create_rss(&cl, pd, 2, wq, ip4 | IBV_RX_HASH_SRC_IPV6, 40, NULL, NULL), EINVAL,
		     "IPv4 and IPv6");
	cr_assert_eq(create_rss(&cl, pd, 2, wq, IBV_RX_HASH_INNER, 40, NULL, NULL), EOPNOTSUPP);
	cr_assert_eq(create_rss(&cl, pd + 1, 2, wq, ip4, 40, NULL, NULL), EINVAL, "no such PD");
	cr_assert_eq(create_qp(&cl, pd, cq, IBV_QPT_UD, &ud), 0);
	memcpy(bad, wq, sizeof(bad));
	bad[3] = ud.handle;
	cr_assert_eq(create_rss(&cl, pd, 2, bad, ip4, 40, NULL, NULL), EINVAL, "a UD QP as WQ");
	bad[3] = wq[3] + 1000;
	cr_assert_eq(create_rss(&cl, pd, 2, bad, ip4, 40, NULL, NULL), EINVAL, "no such WQ");
	cr_assert_eq(create_rss(&other, alloc_pd(&other), 2, wq, ip4, 40, NULL, NULL), EINVAL,
		     "another client's WQs");
	ctl_get_stats(ctl, &st);
	cr_assert_eq(st.qp, 5u, "nothing kept");

	cr_assert_eq(create_rss(&cl, pd, 2, wq, ip4, 40, &rss, &rssn), 0);
	cr_assert_eq(destroy(&cl, IPC_OP_DESTROY_QP, wq[1]), EBUSY, "its table names it");
	bad[0] = rss;
	cr_assert_eq(create_rss(&cl, pd, 0, bad, ip4, 40, NULL, NULL), EINVAL, "an RSS QP as WQ");
	cr_assert_eq(create_flow(&cl, rss, 1, IBV_FLOW_ATTR_NORMAL, 0, &m, &fl), 0);
	cr_assert(fdp.last.has_rss);
	cr_assert_eq(fdp.last.qpn, rssn);
	cr_assert_eq(fdp.last.rss.log_size, 2u);
	cr_assert_eq(fdp.last.rss.fields, ip4);
	cr_assert_eq(fdp.last.rss.key[1], 14);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(fdp.last.rss.dest[i], wqn[i], "entry %d: the WQ's QPN", i);
	cr_assert_eq(create_flow(&cl, wq[0], 1, IBV_FLOW_ATTR_NORMAL, 0, &m, NULL), 0);
	cr_assert_not(fdp.last.has_rss, "a plain raw QP's flow");
	cr_assert_eq(destroy(&cl, IPC_OP_DESTROY_QP, rss), EBUSY, "a flow steers to it");
	cr_assert_eq(destroy(&cl, IPC_OP_DESTROY_FLOW, fl), 0);
	cr_assert_eq(destroy(&cl, IPC_OP_DESTROY_QP, rss), 0);
	cr_assert_eq(destroy(&cl, IPC_OP_DESTROY_QP, wq[2]), 0, "the table let go");
	/* a client that leaves one behind: torn down, RSS QP before its WQs */
	wq[2] = wq[0];
	cr_assert_eq(create_rss(&cl, pd, 2, wq, 0, 40, NULL, NULL), 0, "a WQ twice, no field");
	client_close(&other);
	client_close(&cl);
	ctl_get_stats(ctl, &st);
	cr_assert_eq(st.qp, 0u);
}
