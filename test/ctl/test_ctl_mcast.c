/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/ctl multicast membership (ctl_mcast.c): ATTACH_MCAST / DETACH_MCAST
 * errors as Linux gives them, the three bounds and the client quota (each
 * refusal counted, nothing kept), what the dataplane is told (first and
 * last member), and detaches on QP destroy and on disconnect.
 */
#include "ctl_test.h"

/* A dataplane that records multicast changes and can refuse one. */
static struct {
	unsigned int attaches, detaches;
	uint32_t last_members;
	uint32_t last_qpn;
	int refuse;             /* errno for the next attach */
	bool qp_destroyed_attached; /* a QP reached qp_destroy while still attached */
	uint32_t attached[64];  /* QPNs the dataplane thinks are attached (any group) */
	unsigned int n_attached;
} fdp;

static int fdp_attach(void *dp, const struct ctl_mcast_info *m)
{
	(void)dp;
	if (fdp.refuse) {
		int e = fdp.refuse;

		fdp.refuse = 0;
		return e;
	}
	fdp.attaches++;
	fdp.last_members = m->members;
	fdp.last_qpn = m->qpn;
	fdp.attached[fdp.n_attached++] = m->qpn;
	return 0;
}

static void fdp_detach(void *dp, const struct ctl_mcast_info *m)
{
	(void)dp;
	fdp.detaches++;
	fdp.last_members = m->members;
	for (unsigned int i = 0; i < fdp.n_attached; i++) {
		if (fdp.attached[i] == m->qpn) {
			fdp.attached[i] = fdp.attached[--fdp.n_attached];
			break;
		}
	}
}

static void fdp_qp_destroy(void *dp, const struct ctl_qp_info *qp)
{
	(void)dp;
	for (unsigned int i = 0; i < fdp.n_attached; i++)
		if (fdp.attached[i] == qp->qpn)
			fdp.qp_destroyed_attached = true;
}

static const struct ctl_dataplane_ops fdp_ops = {
	.qp_destroy = fdp_qp_destroy,
	.mcast_attach = fdp_attach,
	.mcast_detach = fdp_detach,
};

static void setup_with(uint32_t grp, uint32_t per_grp, uint32_t total, uint32_t quota)
{
	struct ctl_config cfg = base_cfg();

	memset(&fdp, 0, sizeof(fdp));
	cfg.dev[0].attr.max_mcast_grp = grp;
	cfg.dev[0].attr.max_mcast_qp_attach = per_grp;
	cfg.dev[0].attr.max_total_mcast_qp_attach = total;
	cfg.quota.max_mcast_attach = quota;
	cfg.dp_ops = &fdp_ops;
	cfg.dp = &fdp;
	ctl = ctl_create(&cfg);
	cr_assert_not_null(ctl);
}

static void setup(void)
{
	setup_with(4, 3, 8, 0);
}

static void teardown(void)
{
	ctl_destroy(ctl);
	ctl = NULL;
	cr_assert_eq(fdp.n_attached, 0u, "the dataplane heard every detach");
	cr_assert_not(fdp.qp_destroyed_attached, "detached before the QP's destroy");
}

TestSuite(ctl_mcast, .init = setup, .fini = teardown, .timeout = 20);

static void group(uint8_t g[16], unsigned int i)
{
	memset(g, 0, 16);
	g[10] = g[11] = 0xff;
	g[12] = 239;
	g[13] = 9;
	g[15] = (uint8_t)i;
}

static int mcast(struct client *cl, enum ipc_op op, uint32_t qp, const uint8_t g[16])
{
	struct ipc_msg m, r;

	req(&m, op);
	m.u.req_ATTACH_MCAST.qp = qp;
	memcpy(m.u.req_ATTACH_MCAST.gid, g, 16);
	return call(cl, &m, NULL, 0, &r, NULL);
}

static uint32_t ud_qp(struct client *cl, uint32_t pd, uint32_t cq)
{
	struct ipc_create_qp_rsp r;

	cr_assert_eq(create_qp(cl, pd, cq, IBV_QPT_UD, &r), 0);
	return r.handle;
}

/* A client with one UD QP (its handle in *q). */
static void one_ud_qp(struct client *cl, uint32_t *q)
{
	uint32_t pd, cq;

	client_open(cl, true);
	pd = alloc_pd(cl);
	cq = create_cq(cl, 16, 0);
	*q = ud_qp(cl, pd, cq);
}

static struct ctl_mcast_stats stats(void)
{
	struct ctl_mcast_stats st;

	ctl_mcast_get_stats(ctl, &st);
	return st;
}

Test(ctl_mcast, errors_as_linux)
{
	struct client cl;
	struct ipc_create_qp_rsp rc;
	uint8_t g[16], unicast[16] = { [10] = 0xff, [11] = 0xff, 198, 18, 0, 11 };
	uint8_t v6[16] = { 0xff, 0x0e, [12] = 0x0d, 0xb8, 0, 1 };
	uint32_t pd, cq, ud;

	client_open(&cl, true);
	pd = alloc_pd(&cl);
	cq = create_cq(&cl, 16, 0);
	ud = ud_qp(&cl, pd, cq);
	cr_assert_eq(create_qp(&cl, pd, cq, IBV_QPT_RC, &rc), 0);
	group(g, 1);
	cr_assert_eq(mcast(&cl, IPC_OP_ATTACH_MCAST, rc.handle, g), EINVAL, "not UD");
	cr_assert_eq(mcast(&cl, IPC_OP_ATTACH_MCAST, ud, unicast), EINVAL, "not multicast");
	cr_assert_eq(mcast(&cl, IPC_OP_ATTACH_MCAST, ud + 1000, g), EINVAL, "no such QP");
	cr_assert_eq(mcast(&cl, IPC_OP_DETACH_MCAST, ud, g), EINVAL, "not attached");
	cr_assert_eq(stats().refused_bad, 3u);
	cr_assert_eq(fdp.attaches, 0u);
	cr_assert_eq(mcast(&cl, IPC_OP_ATTACH_MCAST, ud, g), 0);
	cr_assert_eq(mcast(&cl, IPC_OP_ATTACH_MCAST, ud, g), 0, "attached already: success");
	cr_assert_eq(fdp.attaches, 1u, "a repeated attach is not a second membership");
	cr_assert_eq(mcast(&cl, IPC_OP_ATTACH_MCAST, ud, v6), 0, "IPv6 group");
	cr_assert_eq(stats().groups, 2u);
	cr_assert_eq(mcast(&cl, IPC_OP_DETACH_MCAST, ud, g), 0);
	cr_assert_eq(mcast(&cl, IPC_OP_DETACH_MCAST, ud, g), EINVAL, "detached already");
	cr_assert_eq(mcast(&cl, IPC_OP_DETACH_MCAST, ud, v6), 0);
	cr_assert_eq(stats().attached, 0u);
	client_close(&cl);
}

Test(ctl_mcast, dataplane_hears_first_and_last_member)
{
	struct client cl;
	uint8_t g[16];
	uint32_t pd, cq, q1, q2;

	client_open(&cl, true);
	pd = alloc_pd(&cl);
	cq = create_cq(&cl, 16, 0);
	q1 = ud_qp(&cl, pd, cq);
	q2 = ud_qp(&cl, pd, cq);
	group(g, 1);
	cr_assert_eq(mcast(&cl, IPC_OP_ATTACH_MCAST, q1, g), 0);
	cr_assert_eq(fdp.last_members, 1u, "first member");
	cr_assert_eq(mcast(&cl, IPC_OP_ATTACH_MCAST, q2, g), 0);
	cr_assert_eq(fdp.last_members, 2u);
	cr_assert_eq(mcast(&cl, IPC_OP_DETACH_MCAST, q1, g), 0);
	cr_assert_eq(fdp.last_members, 1u);
	cr_assert_eq(mcast(&cl, IPC_OP_DETACH_MCAST, q2, g), 0);
	cr_assert_eq(fdp.last_members, 0u, "last member left");
	cr_assert_eq(stats().groups, 0u);
	client_close(&cl);
}

Test(ctl_mcast, join_flood_hits_max_mcast_grp)
{
	struct client cl;
	uint8_t g[16];
	uint32_t q;

	one_ud_qp(&cl, &q);
	for (unsigned int i = 0; i < 4; i++) {
		group(g, i);
		cr_assert_eq(mcast(&cl, IPC_OP_ATTACH_MCAST, q, g), 0);
	}
	for (unsigned int i = 4; i < 20; i++) {
		group(g, i);
		cr_assert_eq(mcast(&cl, IPC_OP_ATTACH_MCAST, q, g), ENOMEM);
	}
	cr_assert_eq(stats().refused_groups, 16u);
	cr_assert_eq(stats().groups, 4u, "nothing kept of the refused ones");
	cr_assert_eq(fdp.attaches, 4u);
	group(g, 0);
	cr_assert_eq(mcast(&cl, IPC_OP_DETACH_MCAST, q, g), 0);
	group(g, 7);
	cr_assert_eq(mcast(&cl, IPC_OP_ATTACH_MCAST, q, g), 0, "room again after a leave");
	client_close(&cl);
}

Test(ctl_mcast, oversubscribed_group_and_total)
{
	struct client cl;
	uint8_t g[16];
	uint32_t pd, cq, q[6];

	client_open(&cl, true);
	pd = alloc_pd(&cl);
	cq = create_cq(&cl, 64, 0);
	for (unsigned int i = 0; i < 6; i++)
		q[i] = ud_qp(&cl, pd, cq);
	group(g, 1);
	for (unsigned int i = 0; i < 3; i++)
		cr_assert_eq(mcast(&cl, IPC_OP_ATTACH_MCAST, q[i], g), 0);
	cr_assert_eq(mcast(&cl, IPC_OP_ATTACH_MCAST, q[3], g), ENOMEM, "max_mcast_qp_attach 3");
	cr_assert_eq(stats().refused_group_full, 1u);
	/* 8 attachments in all: 3 here, 5 more in other groups, then ENOMEM */
	for (unsigned int i = 0; i < 5; i++) {
		group(g, 2 + i / 3);
		cr_assert_eq(mcast(&cl, IPC_OP_ATTACH_MCAST, q[i % 3 + 3], g), 0);
	}
	group(g, 3);
	cr_assert_eq(mcast(&cl, IPC_OP_ATTACH_MCAST, q[0], g), ENOMEM, "max_total 8");
	cr_assert_eq(stats().refused_total, 1u);
	cr_assert_eq(stats().attached, 8u);
	client_close(&cl); /* teardown: every attachment goes with its QP */
	cr_assert_eq(stats().attached, 0u);
	cr_assert_eq(stats().groups, 0u);
}

Test(ctl_mcast, destroy_detaches_first)
{
	struct client cl;
	uint8_t g[16];
	uint32_t q;

	one_ud_qp(&cl, &q);
	group(g, 1);
	cr_assert_eq(mcast(&cl, IPC_OP_ATTACH_MCAST, q, g), 0);
	cr_assert_eq(destroy(&cl, IPC_OP_DESTROY_QP, q), 0);
	cr_assert_eq(fdp.detaches, 1u);
	cr_assert_eq(fdp.last_members, 0u);
	cr_assert_eq(stats().attached, 0u);
	client_close(&cl);
}

Test(ctl_mcast, dataplane_refusal_keeps_nothing)
{
	struct client cl;
	uint8_t g[16];
	uint32_t q;

	one_ud_qp(&cl, &q);
	group(g, 1);
	fdp.refuse = ENOBUFS;
	cr_assert_eq(mcast(&cl, IPC_OP_ATTACH_MCAST, q, g), ENOBUFS);
	cr_assert_eq(stats().refused_dp, 1u);
	cr_assert_eq(stats().groups, 0u);
	cr_assert_eq(stats().attached, 0u);
	cr_assert_eq(mcast(&cl, IPC_OP_DETACH_MCAST, q, g), EINVAL, "not attached");
	client_close(&cl);
}

Test(ctl_mcast, client_quota)
{
	struct client a, b;
	uint8_t g[16];
	uint32_t pa, ca, qa, pb, cb, qb;

	ctl_destroy(ctl); /* the suite's, for one with a quota */
	setup_with(16, 8, 64, 2);
	client_open(&a, true);
	client_open(&b, true);
	pa = alloc_pd(&a);
	ca = create_cq(&a, 16, 0);
	qa = ud_qp(&a, pa, ca);
	pb = alloc_pd(&b);
	cb = create_cq(&b, 16, 0);
	qb = ud_qp(&b, pb, cb);
	for (unsigned int i = 0; i < 2; i++) {
		group(g, i);
		cr_assert_eq(mcast(&a, IPC_OP_ATTACH_MCAST, qa, g), 0);
	}
	group(g, 2);
	cr_assert_eq(mcast(&a, IPC_OP_ATTACH_MCAST, qa, g), ENOMEM, "client a's quota");
	cr_assert_eq(stats().refused_quota, 1u);
	cr_assert_eq(mcast(&b, IPC_OP_ATTACH_MCAST, qb, g), 0, "another client is not affected");
	client_close(&a);
	client_close(&b);
}
