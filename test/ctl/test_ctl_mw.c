/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/ctl memory windows (ctl_mw.c): ALLOC_MW/DEALLOC_MW against the lcores'
 * window table (lib/xport mw.h), what a bound window holds (its MR, its PD),
 * teardown of a closing client, a QP's destroy unbinding its type 2
 * windows, quotas, and a device configured without windows.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <sys/mman.h>

#include "ctl_test.h"
#include "ipc_shm.h"
#include "mr.h"
#include "mw.h"

static void
setup(void)
{
	struct ctl_config cfg = base_cfg();

	cfg.limits.max_mw = 4;
	ctl = ctl_create(&cfg);
	cr_assert_not_null(ctl);
}

static void
teardown(void)
{
	ctl_destroy(ctl);
	ctl = NULL;
}

TestSuite(ctl_mw, .init = setup, .fini = teardown, .timeout = 20);

static int
alloc_mw(struct client *cl, uint32_t pd, uint32_t type, struct ipc_alloc_mw_rsp *out)
{
	struct ipc_msg m, r;
	int rc;

	req(&m, IPC_OP_ALLOC_MW);
	m.u.req_ALLOC_MW.pd = pd;
	m.u.req_ALLOC_MW.type = type;
	rc = call(cl, &m, NULL, 0, &r, NULL);
	if (out)
		*out = r.u.rsp_ALLOC_MW;
	return rc;
}

/* An MR of @p pd over a sealed memfd; @return its handle, lkey in @p key. */
static uint32_t
reg_mr(struct client *cl, uint32_t pd, uint32_t access, uint32_t *key, void **map, int *fd)
{
	struct ipc_msg m, r;

	*fd = ipc_shm_create("mwmr", 8192);
	*map = ipc_shm_map(*fd, 8192, 0);
	req(&m, IPC_OP_REG_MR);
	m.u.req_REG_MR.pd = pd;
	m.u.req_REG_MR.addr = (uintptr_t)*map;
	m.u.req_REG_MR.iova = (uintptr_t)*map;
	m.u.req_REG_MR.length = 8192;
	m.u.req_REG_MR.access = access;
	cr_assert_eq(call(cl, &m, fd, 1, &r, NULL), 0);
	*key = r.u.rsp_REG_MR.lkey;
	return r.u.rsp_REG_MR.handle;
}

Test(ctl_mw, alloc_bind_and_what_a_bound_window_holds)
{
	struct client a, b;
	struct ipc_alloc_mw_rsp w1, w2;
	struct mw_table *mws = ctl_mw_table(ctl);
	struct mr_table *mrs = mr_table_create(64);
	uint32_t pd, key, mr;
	void *map;
	int fd;

	cr_assert_not_null(mws);
	client_open(&a, true);
	client_open(&b, true);
	pd = alloc_pd(&a);
	cr_assert_eq(alloc_mw(&a, pd + 1, IBV_MW_TYPE_1, NULL), EINVAL, "no such PD");
	cr_assert_eq(alloc_mw(&b, pd, IBV_MW_TYPE_1, NULL), EINVAL, "another client's PD");
	cr_assert_eq(alloc_mw(&a, pd, 3, NULL), EINVAL, "no type 3");
	cr_assert_eq(alloc_mw(&a, pd, 0, NULL), EINVAL, "no type 0");
	cr_assert_eq(alloc_mw(&a, pd, IBV_MW_TYPE_1, &w1), 0);
	cr_assert_eq(alloc_mw(&a, pd, IBV_MW_TYPE_2, &w2), 0);
	cr_assert(mw_key_is_mw(w1.rkey) && mw_key_is_mw(w2.rkey));
	cr_assert_neq(w1.rkey >> 8, w2.rkey >> 8, "two slots");

	/* what the engine does on a bind: through the shared table */
	mr = reg_mr(&a, pd, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND, &key, &map, &fd);
	uint32_t pdi = (pd & 0xfffffu) - 1;
	cr_assert_eq(mr_reg_key(mrs, key, pdi, (uintptr_t)map, (uintptr_t)map, 8192,
				IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND), 0);
	struct mw_bind_req br = { .mw_key = w1.rkey, .new_key = w1.rkey + 1, .mr_key = key,
				  .access = IBV_ACCESS_REMOTE_READ, .pd = pdi, .qpn = 0x20,
				  .addr = (uintptr_t)map, .length = 4096 };
	cr_assert_eq(mw_bind(mws, mrs, &br), 0, "the window is open in the PD ALLOC_MW named");
	cr_assert_eq(destroy(&a, IPC_OP_DEREG_MR, mr), EINVAL, "bound: not deregistered (rxe)");
	cr_assert_eq(destroy(&a, IPC_OP_DEALLOC_PD, pd), EBUSY, "windows hold the PD");
	cr_assert_eq(destroy(&b, IPC_OP_DEALLOC_MW, w1.handle), EINVAL, "not b's window");
	cr_assert_eq(destroy(&a, IPC_OP_DEALLOC_MW, w1.handle), 0);
	cr_assert_eq(destroy(&a, IPC_OP_DEALLOC_MW, w1.handle), EINVAL, "once");
	cr_assert_eq(mw_mr_bound(mws, key), 0);
	uint8_t *host;
	cr_assert_eq(mw_check(mws, mrs, w1.rkey + 1, pdi, 0x20, (uintptr_t)map, 8,
			      IBV_ACCESS_REMOTE_READ, &host), MR_ERR_KEY, "closed");
	cr_assert_eq(destroy(&a, IPC_OP_DEREG_MR, mr), 0);

	/* a type 2 window bound through a QP; the QP's destroy unbinds it */
	struct ipc_create_qp_rsp q;
	uint32_t cq = create_cq(&a, 8, 0);
	mr = reg_mr(&a, pd, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND, &key, &map, &fd);
	cr_assert_eq(mr_dereg(mrs, br.mr_key), 0);
	cr_assert_eq(mr_reg_key(mrs, key, pdi, (uintptr_t)map, (uintptr_t)map, 8192,
				IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND), 0);
	cr_assert_eq(create_rc_qp(&a, pd, cq, cq, 0, &q), 0);
	br = (struct mw_bind_req){ .mw_key = w2.rkey, .new_key = 9, .mr_key = key,
				   .access = IBV_ACCESS_REMOTE_READ, .pd = pdi, .qpn = q.qpn,
				   .addr = (uintptr_t)map, .length = 64 };
	cr_assert_eq(mw_bind(mws, mrs, &br), 0);
	cr_assert_eq(mw_mr_bound(mws, key), 1);
	cr_assert_eq(destroy(&a, IPC_OP_DESTROY_QP, q.handle), 0);
	cr_assert_eq(mw_mr_bound(mws, key), 0, "the QP's type 2 windows went with it");

	/* a closing client's windows are closed before its MRs */
	br.mw_key = (w2.rkey & ~0xffu) | 9;
	cr_assert_eq(create_rc_qp(&a, pd, cq, cq, 0, &q), 0);
	br.qpn = q.qpn;
	br.new_key = 10;
	cr_assert_eq(mw_bind(mws, mrs, &br), 0);
	ctl_conn_close(a.c);
	a.c = NULL;
	cr_assert_eq(mw_mr_bound(mws, key), 0);
	cr_assert_eq(ctl_nobjects(ctl), 0);
	client_close(&a);
	client_close(&b);
	mr_table_destroy(mrs);
}

Test(ctl_mw, the_table_and_the_quota_bound_windows)
{
	struct ctl_config cfg = base_cfg();
	struct client a;
	uint32_t pd;

	client_open(&a, true);
	pd = alloc_pd(&a);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(alloc_mw(&a, pd, IBV_MW_TYPE_2, NULL), 0);
	cr_assert_eq(alloc_mw(&a, pd, IBV_MW_TYPE_2, NULL), ENOMEM, "max_mw is 4");
	client_close(&a);
	/* windows count against a client's MR quota */
	ctl_destroy(ctl);
	cfg.limits.max_mw = 4;
	cfg.quota.max_mr = 2;
	ctl = ctl_create(&cfg);
	cr_assert_not_null(ctl);
	client_open(&a, true);
	pd = alloc_pd(&a);
	cr_assert_eq(alloc_mw(&a, pd, IBV_MW_TYPE_1, NULL), 0);
	cr_assert_eq(alloc_mw(&a, pd, IBV_MW_TYPE_1, NULL), 0);
	cr_assert_eq(alloc_mw(&a, pd, IBV_MW_TYPE_1, NULL), ENOMEM, "the quota");
	client_close(&a);
}

Test(ctl_mw, a_device_without_windows_says_eopnotsupp)
{
	struct ctl_config cfg = base_cfg();
	struct client a;
	struct ipc_msg m, r;

	ctl_destroy(ctl);
	cfg.limits.max_mw = 0;
	ctl = ctl_create(&cfg);
	cr_assert_not_null(ctl);
	cr_assert_null(ctl_mw_table(ctl));
	client_open(&a, true);
	cr_assert_eq(alloc_mw(&a, alloc_pd(&a), IBV_MW_TYPE_1, NULL), EOPNOTSUPP);
	req(&m, IPC_OP_QUERY_DEVICE);
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), 0);
	cr_assert_eq(r.u.rsp_QUERY_DEVICE.attr.max_mw, 0);
	cr_assert_eq(r.u.rsp_QUERY_DEVICE.attr.device_cap_flags &
			     (IBV_DEVICE_MEM_WINDOW | IBV_DEVICE_MEM_WINDOW_TYPE_2B), 0);
	client_close(&a);
}
