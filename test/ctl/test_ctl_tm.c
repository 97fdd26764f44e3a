/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/ctl tag matching SRQs (IBV_SRQT_TM, issue 19): CREATE_SRQ's bounds
 * on max_num_tags and max_ops, its CQ, the quota of tags, the memfd that
 * holds the receive ring, the ops ring and the released counts, and the
 * SRQ staying on its CQ's lcore for its life (its lcore consumes the ops).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ctl_test.h"

static void setup_tm(uint32_t n_lcores, uint32_t max_tags, uint32_t max_ops, uint32_t quota)
{
	struct ctl_config cfg = base_cfg();

	cfg.limits.n_lcores = n_lcores;
	cfg.limits.max_tm_tags = max_tags;
	cfg.limits.max_tm_ops = max_ops;
	cfg.quota.max_tm_tags = quota;
	ctl = ctl_create(&cfg);
	cr_assert_not_null(ctl);
}

static void teardown(void)
{
	ctl_destroy(ctl);
	ctl = NULL;
}

TestSuite(ctl_tm, .fini = teardown, .timeout = 20);

/* CREATE_SRQ IBV_SRQT_TM; @return status, *rsp and *fd (or closed) on success. */
static int create_tm_srq(struct client *cl, uint32_t pd, uint32_t cq, uint32_t tags, uint32_t ops,
			 struct ipc_create_srq_rsp *rsp, int *fd)
{
	struct ipc_msg m, r;
	int rfds[IPC_MAX_FDS] = { -1, -1 };
	int rc;

	req(&m, IPC_OP_CREATE_SRQ);
	m.u.req_CREATE_SRQ.pd = pd;
	m.u.req_CREATE_SRQ.max_wr = 8;
	m.u.req_CREATE_SRQ.max_sge = 1;
	m.u.req_CREATE_SRQ.srq_type = IBV_SRQT_TM;
	m.u.req_CREATE_SRQ.cq = cq;
	m.u.req_CREATE_SRQ.max_num_tags = tags;
	m.u.req_CREATE_SRQ.max_ops = ops;
	rc = call(cl, &m, NULL, 0, &r, rfds);
	if (rc == 0 && rsp)
		*rsp = r.u.rsp_CREATE_SRQ;
	if (fd)
		*fd = rfds[0];
	else if (rfds[0] >= 0)
		close(rfds[0]);
	return rc;
}

Test(ctl_tm, no_tag_matching_without_limits)
{
	struct client a;

	setup_tm(1, 0, 0, 0);
	client_open(&a, true);
	uint32_t pd = alloc_pd(&a), cq = create_cq(&a, 8, 0);
	cr_assert_eq(create_tm_srq(&a, pd, cq, 4, 4, NULL, NULL), EOPNOTSUPP);
	client_close(&a);
}

static struct ipc_device_attr query_device(struct client *cl)
{
	struct ipc_msg m, r;

	req(&m, IPC_OP_QUERY_DEVICE);
	cr_assert_eq(call(cl, &m, NULL, 0, &r, NULL), 0);
	return r.u.rsp_QUERY_DEVICE.attr;
}

/* QUERY_DEVICE's tag matching bounds (the shim's tm_caps): the limits, the quota, 0 without. */
Test(ctl_tm, query_device_reports_the_limits)
{
	struct ipc_device_attr a;
	struct client cl;

	setup_tm(1, 0, 32, 0);
	client_open(&cl, true);
	a = query_device(&cl);
	cr_assert_eq(a.tm_max_num_tags, 0);
	cr_assert_eq(a.tm_max_ops, 0, "no tags, no tag matching");
	client_close(&cl);
	teardown();
	setup_tm(1, 64, 0, 0);
	client_open(&cl, true);
	a = query_device(&cl);
	cr_assert_eq(a.tm_max_num_tags, 0);
	cr_assert_eq(a.tm_max_ops, 0);
	client_close(&cl);
	teardown();
	setup_tm(1, 64, 32, 0);
	client_open(&cl, true);
	a = query_device(&cl);
	cr_assert_eq(a.tm_max_num_tags, 64);
	cr_assert_eq(a.tm_max_ops, 32);
	client_close(&cl);
	teardown();
	setup_tm(1, 64, 32, 24);
	client_open(&cl, true);
	a = query_device(&cl);
	cr_assert_eq(a.tm_max_num_tags, 24, "the client's quota");
	cr_assert_eq(a.tm_max_ops, 32);
	client_close(&cl);
	teardown();
	setup_tm(1, 0x12345, 32, 0);
	client_open(&cl, true);
	a = query_device(&cl);
	cr_assert_eq(a.tm_max_num_tags, 0xffff, "handles are 16-bit");
	client_close(&cl);
}

Test(ctl_tm, bounds_and_a_cq_are_checked)
{
	struct client a;

	setup_tm(1, 64, 32, 0);
	client_open(&a, true);
	uint32_t pd = alloc_pd(&a), cq = create_cq(&a, 8, 0);
	cr_assert_eq(create_tm_srq(&a, pd, 0, 4, 4, NULL, NULL), EINVAL, "no CQ");
	cr_assert_eq(create_tm_srq(&a, pd, cq + 77, 4, 4, NULL, NULL), EINVAL, "not a CQ");
	cr_assert_eq(create_tm_srq(&a, pd, cq, 0, 4, NULL, NULL), EINVAL);
	cr_assert_eq(create_tm_srq(&a, pd, cq, 65, 4, NULL, NULL), EINVAL);
	cr_assert_eq(create_tm_srq(&a, pd, cq, 4, 0, NULL, NULL), EINVAL);
	cr_assert_eq(create_tm_srq(&a, pd, cq, 4, 33, NULL, NULL), EINVAL);
	cr_assert_eq(create_tm_srq(&a, pd, cq, 0xffffffffu, 0xffffffffu, NULL, NULL), EINVAL);
	cr_assert_eq(create_tm_srq(&a, pd, cq, 64, 32, NULL, NULL), 0);
	/* the CQ is the SRQ's: not destroyed under it */
	cr_assert_eq(destroy(&a, IPC_OP_DESTROY_CQ, cq), EBUSY);
	client_close(&a);
	cr_assert_eq(ctl_nobjects(ctl), 0);
}

Test(ctl_tm, the_memfd_holds_the_ops_ring_and_the_released_counts)
{
	struct ipc_create_srq_rsp r;
	struct client a;
	int fd;

	setup_tm(1, 64, 32, 0);
	client_open(&a, true);
	uint32_t pd = alloc_pd(&a), cq = create_cq(&a, 8, 0);
	cr_assert_eq(create_tm_srq(&a, pd, cq, 20, 5, &r, &fd), 0);
	cr_assert_geq(fd, 0);
	cr_assert_eq(r.max_num_tags, 20);
	cr_assert_eq(r.max_ops, 7, "max_ops + 1 rounded up to a power of two, less one");
	cr_assert_eq(r.tm_ops.entries, 8);
	cr_assert_eq(r.tm_ops.stride, sizeof(struct tm_op_wqe));
	cr_assert_eq(r.tm_ops.offset % 64, 0);
	cr_assert_geq(r.tm_ops.offset, r.ring.offset + ipc_ring_bytes(r.ring.entries, r.ring.stride));
	cr_assert_geq(r.tm_released, r.tm_ops.offset + ipc_ring_bytes(8, sizeof(struct tm_op_wqe)));
	cr_assert_leq(r.tm_released + 20 * sizeof(uint32_t), r.shm_size);
	uint8_t *p = mmap(NULL, r.shm_size, PROT_READ, MAP_SHARED, fd, 0);
	cr_assert_neq(p, MAP_FAILED);
	const struct spsc_ring *ops = (const void *)(p + r.tm_ops.offset);
	cr_assert_eq(ops->size, 8);
	cr_assert_eq(ops->elem_size, sizeof(struct tm_op_wqe));
	for (uint32_t i = 0; i < 20; i++)
		cr_assert_eq(((const uint32_t *)(p + r.tm_released))[i], 0);
	munmap(p, r.shm_size);
	close(fd);
	/* a basic SRQ has none of it */
	struct ipc_msg m, rr;
	req(&m, IPC_OP_CREATE_SRQ);
	m.u.req_CREATE_SRQ.pd = pd;
	m.u.req_CREATE_SRQ.max_wr = 8;
	m.u.req_CREATE_SRQ.max_num_tags = 20; /* ignored without IBV_SRQT_TM */
	cr_assert_eq(call(&a, &m, NULL, 0, &rr, NULL), 0);
	cr_assert_eq(rr.u.rsp_CREATE_SRQ.tm_ops.entries, 0);
	cr_assert_eq(rr.u.rsp_CREATE_SRQ.max_num_tags, 0);
	client_close(&a);
}

Test(ctl_tm, tags_count_against_the_quota)
{
	struct ipc_create_srq_rsp r1, r2;
	struct ctl_stats st;
	struct client a, b;

	setup_tm(1, 64, 32, 24);
	client_open(&a, true);
	client_open(&b, true);
	uint32_t pd = alloc_pd(&a), cq = create_cq(&a, 8, 0);
	uint32_t pdb = alloc_pd(&b), cqb = create_cq(&b, 8, 0);
	cr_assert_eq(create_tm_srq(&a, pd, cq, 16, 4, &r1, NULL), 0);
	cr_assert_eq(create_tm_srq(&a, pd, cq, 8, 4, &r2, NULL), 0);
	cr_assert_eq(create_tm_srq(&a, pd, cq, 1, 4, NULL, NULL), ENOMEM);
	ctl_get_stats(ctl, &st);
	cr_assert_eq(st.quota_refused, 1);
	/* another client has its own */
	cr_assert_eq(create_tm_srq(&b, pdb, cqb, 24, 4, NULL, NULL), 0);
	/* destroying gives the tags back */
	cr_assert_eq(destroy(&a, IPC_OP_DESTROY_SRQ, r1.handle), 0);
	cr_assert_eq(create_tm_srq(&a, pd, cq, 17, 4, NULL, NULL), ENOMEM);
	cr_assert_eq(create_tm_srq(&a, pd, cq, 16, 4, NULL, NULL), 0);
	client_close(&a);
	client_close(&b);
	cr_assert_eq(ctl_nobjects(ctl), 0);
}

Test(ctl_tm, the_srq_stays_on_its_cqs_lcore)
{
	struct ipc_create_qp_rsp q[4];
	struct ipc_create_srq_rsp r;
	struct client a;

	setup_tm(3, 64, 32, 0);
	client_open(&a, true);
	uint32_t pd = alloc_pd(&a);
	uint32_t c1 = create_cq(&a, 8, 0), c2 = create_cq(&a, 8, 0);

	cr_assert_eq(create_rc_qp(&a, pd, c1, c1, 0, &q[0]), 0);
	uint32_t l1 = q[0].qpn % 3;
	cr_assert_eq(create_tm_srq(&a, pd, c1, 8, 8, &r, NULL), 0);
	cr_assert_eq(create_rc_qp(&a, pd, c2, c2, 0, &q[1]), 0);
	cr_assert_neq(q[1].qpn % 3, l1);
	/* a QP of the SRQ goes to its lcore; one whose CQ is elsewhere cannot use it */
	cr_assert_eq(create_rc_qp(&a, pd, c2, c2, r.handle, NULL), EINVAL);
	cr_assert_eq(create_rc_qp(&a, pd, c1, c1, r.handle, &q[2]), 0);
	cr_assert_eq(q[2].qpn % 3, l1);
	/* tag matching is RC's */
	struct ipc_msg m, rr;
	req(&m, IPC_OP_CREATE_QP);
	m.u.req_CREATE_QP.pd = pd;
	m.u.req_CREATE_QP.send_cq = m.u.req_CREATE_QP.recv_cq = c1;
	m.u.req_CREATE_QP.srq = r.handle;
	m.u.req_CREATE_QP.qp_type = IBV_QPT_UD;
	m.u.req_CREATE_QP.cap = (struct ipc_qp_cap){ .max_send_wr = 4, .max_send_sge = 1 };
	cr_assert_eq(call(&a, &m, NULL, 0, &rr, NULL), EINVAL);
	/* with its last QP gone the SRQ keeps its lcore (a basic SRQ would be free again) */
	cr_assert_eq(destroy(&a, IPC_OP_DESTROY_QP, q[2].handle), 0);
	cr_assert_eq(destroy(&a, IPC_OP_DESTROY_QP, q[0].handle), 0);
	uint32_t c3 = create_cq(&a, 8, 0);
	cr_assert_eq(create_rc_qp(&a, pd, c2, c2, r.handle, NULL), EINVAL);
	cr_assert_eq(create_rc_qp(&a, pd, c3, c3, r.handle, &q[3]), 0);
	cr_assert_eq(q[3].qpn % 3, l1);
	client_close(&a);
	cr_assert_eq(ctl_nobjects(ctl), 0);
}
