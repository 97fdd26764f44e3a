/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/ctl device memory (ctl_dm.c, REG_DM_MR in ctl_objs.c): the memfd the
 * daemon creates and passes, both mappings seeing the same bytes, MRs that
 * point into the daemon's mapping (a fake dataplane records them), the
 * bounds (max_dm_size, the client's quota, the global cap), EBUSY while an
 * MR lies in a DM, IMPORT_DM within a group only, the stats, and teardown
 * of a closing client returning every byte and descriptor.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ctl_test.h"
#include "ipc_shm.h"

#define DM_SIZE (64u << 10)   /* the largest one allocation */
#define DM_CLIENT (128u << 10) /* one client's quota */
#define DM_TOTAL (192u << 10)  /* every client's */

static struct ctl_mr_info last_mr;
static int mr_creates, mr_destroys;

static int
fake_mr_create(void *dp, struct ctl_mr_info *mr)
{
	(void)dp;
	last_mr = *mr;
	mr_creates++;
	return 0;
}

static void
fake_mr_destroy(void *dp, const struct ctl_mr_info *mr)
{
	(void)dp;
	(void)mr;
	mr_destroys++;
}

static const struct ctl_dataplane_ops fake_dp = {
	.mr_create = fake_mr_create,
	.mr_destroy = fake_mr_destroy,
};

static void
setup(void)
{
	struct ctl_config cfg = base_cfg();

	cfg.limits.max_dm_size = DM_SIZE;
	cfg.limits.max_dm_bytes = DM_TOTAL;
	cfg.quota.max_dm_bytes = DM_CLIENT;
	cfg.dp_ops = &fake_dp;
	mr_creates = mr_destroys = 0;
	ctl = ctl_create(&cfg);
	cr_assert_not_null(ctl);
}

static void
teardown(void)
{
	ctl_destroy(ctl);
	ctl = NULL;
}

TestSuite(ctl_dm, .init = setup, .fini = teardown, .timeout = 20);

/* ALLOC_DM of @p len; on success maps it at *map (if @p map) and @return 0. */
static int
alloc_dm(struct client *cl, uint64_t len, struct ipc_alloc_dm_rsp *out, uint8_t **map)
{
	struct ipc_msg m, r;
	int rfds[IPC_MAX_FDS] = { -1, -1 };
	int rc;

	req(&m, IPC_OP_ALLOC_DM);
	m.u.req_ALLOC_DM.length = len;
	rc = call(cl, &m, NULL, 0, &r, rfds);
	if (out)
		*out = r.u.rsp_ALLOC_DM;
	if (rc == 0) {
		cr_assert_geq(rfds[0], 0, "the memfd comes with the answer");
		if (map) {
			*map = ipc_shm_map(rfds[0], r.u.rsp_ALLOC_DM.map_size, 0);
			cr_assert_not_null(*map);
		}
		close(rfds[0]);
	}
	return rc;
}

static int
reg_dm_mr(struct client *cl, uint32_t pd, uint32_t dm, uint64_t off, uint64_t len,
	  uint32_t access, struct ipc_reg_mr_rsp *out)
{
	struct ipc_msg m, r;
	int rc;

	req(&m, IPC_OP_REG_DM_MR);
	m.u.req_REG_DM_MR.pd = pd;
	m.u.req_REG_DM_MR.dm = dm;
	m.u.req_REG_DM_MR.offset = off;
	m.u.req_REG_DM_MR.length = len;
	m.u.req_REG_DM_MR.access = access;
	rc = call(cl, &m, NULL, 0, &r, NULL);
	if (out)
		*out = r.u.rsp_REG_DM_MR;
	return rc;
}

static struct ctl_stats
stats(void)
{
	struct ctl_stats st;

	ctl_get_stats(ctl, &st);
	return st;
}

Test(ctl_dm, query_device_reports_max_dm_size)
{
	struct client a;
	struct ipc_msg m, r;

	client_open(&a, true);
	req(&m, IPC_OP_QUERY_DEVICE);
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), 0);
	cr_assert_eq(r.u.rsp_QUERY_DEVICE.attr.max_dm_size, DM_SIZE);
	client_close(&a);
}

Test(ctl_dm, the_client_and_the_daemon_see_the_same_bytes_and_mrs_point_into_them)
{
	struct client a;
	struct ipc_alloc_dm_rsp d;
	struct ipc_reg_mr_rsp mr;
	uint8_t *map;

	client_open(&a, true);
	uint32_t pd = alloc_pd(&a);
	cr_assert_eq(alloc_dm(&a, 1000, &d, &map), 0);
	cr_assert_eq(d.length, 1000);
	cr_assert_eq(d.map_size % (uint64_t)sysconf(_SC_PAGESIZE), 0);
	cr_assert_geq(d.map_size, 1000);
	cr_assert_eq(count_maps("roce-dm"), 2, "the daemon's mapping and ours");
	memset(map, 0xab, 1000);
	cr_assert_eq(reg_dm_mr(&a, pd, d.handle, 256, 512,
			       IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE |
				       IBV_ACCESS_REMOTE_WRITE, &mr), 0);
	cr_assert_eq(mr_creates, 1);
	cr_assert_eq(last_mr.iova, 0, "zero-based");
	cr_assert_eq(last_mr.length, 512);
	cr_assert_eq(last_mr.lkey, mr.lkey);
	cr_assert_not_null(last_mr.local, "the lcores reach it directly");
	cr_assert_eq(last_mr.mem_fd, -1);
	/* the daemon's bytes at offset 256 are ours */
	uint8_t *daemon = last_mr.local;
	cr_assert_eq(daemon[0], 0xab);
	daemon[0] = 0x5c;
	cr_assert_eq(map[256], 0x5c, "written through the daemon's mapping, seen in ours");
	cr_assert_eq(stats().dm, 1);
	cr_assert_eq(stats().dm_bytes, d.map_size);
	/* busy while the MR lies in it */
	cr_assert_eq(destroy(&a, IPC_OP_FREE_DM, d.handle), EBUSY);
	cr_assert_eq(destroy(&a, IPC_OP_DEREG_MR, mr.handle), 0);
	cr_assert_eq(destroy(&a, IPC_OP_FREE_DM, d.handle), 0);
	cr_assert_eq(destroy(&a, IPC_OP_FREE_DM, d.handle), EINVAL, "freed once");
	cr_assert_eq(stats().dm, 0);
	cr_assert_eq(stats().dm_bytes, 0);
	munmap(map, d.map_size);
	cr_assert_eq(count_maps("roce-dm"), 0, "the daemon unmapped it");
	client_close(&a);
}

Test(ctl_dm, bad_allocations_are_refused_and_counted)
{
	struct client a;
	struct ipc_msg m, r;
	uint64_t refused;

	client_open(&a, true);
	cr_assert_eq(alloc_dm(&a, 0, NULL, NULL), EINVAL);
	refused = stats().quota_refused;
	cr_assert_eq(alloc_dm(&a, DM_SIZE + 1, NULL, NULL), EINVAL, "above max_dm_size (mlx5)");
	req(&m, IPC_OP_ALLOC_DM);
	m.u.req_ALLOC_DM.length = 64;
	m.u.req_ALLOC_DM.comp_mask = 1;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), EINVAL, "no optional field");
	m.u.req_ALLOC_DM.comp_mask = 0;
	m.u.req_ALLOC_DM.log_align_req = 20;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), EINVAL, "more than a page of alignment");
	m.u.req_ALLOC_DM.log_align_req = 6;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), 0);
	/* the quota: two of DM_SIZE fit DM_CLIENT, the third does not */
	cr_assert_eq(alloc_dm(&a, DM_SIZE, NULL, NULL), 0);
	cr_assert_eq(alloc_dm(&a, DM_SIZE, NULL, NULL), ENOMEM, "over the client's quota");
	cr_assert_eq(stats().quota_refused, refused + 1);
	client_close(&a);
}

Test(ctl_dm, the_global_cap_bounds_every_client_together)
{
	struct client a, b, c;

	client_open(&a, true);
	client_open(&b, true);
	client_open(&c, true);
	cr_assert_eq(alloc_dm(&a, DM_SIZE, NULL, NULL), 0);
	cr_assert_eq(alloc_dm(&a, DM_SIZE, NULL, NULL), 0);
	cr_assert_eq(alloc_dm(&b, DM_SIZE, NULL, NULL), 0);
	cr_assert_eq(alloc_dm(&c, DM_SIZE, NULL, NULL), ENOMEM, "DM_TOTAL reached");
	client_close(&a);
	cr_assert_eq(stats().dm_bytes, DM_SIZE, "a's bytes came back at its close");
	cr_assert_eq(alloc_dm(&c, DM_SIZE, NULL, NULL), 0);
	client_close(&b);
	client_close(&c);
	cr_assert_eq(stats().dm, 0);
	cr_assert_eq(stats().dm_bytes, 0);
}

Test(ctl_dm, reg_dm_mr_rules)
{
	struct client a, b;
	struct ipc_alloc_dm_rsp d, e;
	const uint32_t zb = IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE;

	client_open(&a, true);
	client_open(&b, true);
	uint32_t pd = alloc_pd(&a), pdb = alloc_pd(&b);
	cr_assert_eq(alloc_dm(&a, 100, &d, NULL), 0);
	cr_assert_eq(alloc_dm(&b, 100, &e, NULL), 0);
	cr_assert_eq(reg_dm_mr(&a, pd, d.handle, 0, 100, IBV_ACCESS_LOCAL_WRITE, NULL), EINVAL,
		     "not zero-based");
	cr_assert_eq(reg_dm_mr(&a, pd, d.handle, 0, 104, zb, NULL), EINVAL, "beyond the DM");
	cr_assert_eq(reg_dm_mr(&a, pd, d.handle, 100, 4, zb, NULL), EINVAL, "beyond the DM");
	cr_assert_eq(reg_dm_mr(&a, pd, e.handle, 0, 100, zb, NULL), EINVAL, "b's DM");
	cr_assert_eq(reg_dm_mr(&a, pdb, d.handle, 0, 100, zb, NULL), EINVAL, "b's PD");
	cr_assert_eq(reg_dm_mr(&a, pd, d.handle, 0, 100,
			       IBV_ACCESS_ZERO_BASED | IBV_ACCESS_REMOTE_WRITE, NULL), EINVAL,
		     "remote write without local write");
	cr_assert_eq(mr_creates, 0, "nothing reached the dataplane");
	cr_assert_eq(reg_dm_mr(&a, pd, d.handle, 0, 100, zb | IBV_ACCESS_REMOTE_READ, NULL), 0);
	/* 0 bytes, even at the end: as ib_uverbs_reg_dm_mr() (pyverbs registers some) */
	cr_assert_eq(reg_dm_mr(&a, pd, d.handle, 100, 0, zb, NULL), 0, "empty");
	/* the PD is busy */
	cr_assert_eq(destroy(&a, IPC_OP_DEALLOC_PD, pd), EBUSY);
	client_close(&a);
	cr_assert_eq(mr_destroys, 2, "the MRs went at a's close, before their DM");
	cr_assert_eq(stats().dm, 1);
	client_close(&b);
}

Test(ctl_dm, import_dm_within_the_group_only)
{
	struct client a, b;
	struct ipc_alloc_dm_rsp d;
	struct ipc_msg m, r;
	int rfds[IPC_MAX_FDS] = { -1, -1 };
	uint8_t *map;

	client_open(&a, true);
	client_open(&b, true);
	cr_assert_eq(alloc_dm(&a, 4096, &d, &map), 0);
	map[7] = 0x42;
	req(&m, IPC_OP_IMPORT_DM);
	m.u.req_IMPORT_DM.handle = d.handle;
	cr_assert_eq(call(&b, &m, NULL, 0, &r, NULL), EINVAL, "not b's group");
	cr_assert_eq(call(&a, &m, NULL, 0, &r, rfds), 0);
	cr_assert_eq(r.u.rsp_IMPORT_DM.handle, d.handle);
	cr_assert_eq(r.u.rsp_IMPORT_DM.length, 4096);
	uint8_t *again = ipc_shm_map(rfds[0], r.u.rsp_IMPORT_DM.map_size, 0);
	cr_assert_not_null(again);
	close(rfds[0]);
	cr_assert_eq(again[7], 0x42, "the same memory");
	munmap(again, r.u.rsp_IMPORT_DM.map_size);
	munmap(map, d.map_size);
	client_close(&a);
	client_close(&b);
}

Test(ctl_dm, a_closing_client_leaves_no_descriptor_and_no_mapping)
{
	struct client a;
	int fds0 = count_fds(), fds;

	client_open(&a, true);
	fds = count_fds();
	uint32_t pd = alloc_pd(&a);
	struct ipc_alloc_dm_rsp d;
	cr_assert_eq(alloc_dm(&a, 5000, &d, NULL), 0);
	cr_assert_eq(reg_dm_mr(&a, pd, d.handle, 0, 5000, IBV_ACCESS_ZERO_BASED, NULL), 0);
	cr_assert_eq(count_fds(), fds + 1, "the daemon keeps the memfd (IMPORT_DM)");
	cr_assert_eq(count_maps("roce-dm"), 1);
	client_close(&a);
	cr_assert_eq(count_fds(), fds0, "the memfd closed with everything of the client");
	cr_assert_eq(count_maps("roce-dm"), 0);
	cr_assert_eq(stats().dm_bytes, 0);
}

Test(ctl_dm, a_device_without_device_memory, .init = NULL)
{
	struct ctl_config cfg = base_cfg();
	struct client a;

	ctl = ctl_create(&cfg);
	cr_assert_not_null(ctl);
	client_open(&a, true);
	cr_assert_eq(alloc_dm(&a, 64, NULL, NULL), EOPNOTSUPP);
	client_close(&a);
}
