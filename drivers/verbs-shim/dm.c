/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs shim: device memory (context ops alloc_dm, free_dm, reg_dm_mr; the
 * inline ibv_alloc_dm/ibv_free_dm/ibv_reg_dm_mr and ibv_memcpy_to/from_dm
 * of <infiniband/verbs.h> reach them; ibv_import_dm/ibv_unimport_dm).
 *
 * Our device memory is memory the daemon owns (lib/ctl ctl_dm.c): ALLOC_DM
 * answers with a memfd, mapped here; the copies are memcpy on that mapping
 * with the rules of a NIC's memory window (mlx5): inside the allocation,
 * else EFAULT, offset and length multiples of 4 bytes, else EINVAL. MRs over it
 * (REG_DM_MR) are zero-based, as rdma-core requires (IBV_ACCESS_ZERO_BASED):
 * address 0 of the MR is byte dm_offset of the DM.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "shim.h"

#define SHIM_DM_ALIGN 4u /* copy granule of device memory */

struct shim_dm {
	struct ibv_dm dm;    /* must be first */
	uint8_t *map;
	uint64_t map_size;
	uint64_t length;
	bool imported;       /* ibv_import_dm: ibv_unimport_dm only unmaps */
};

static struct shim_dm *shim_dm(struct ibv_dm *dm)
{
	return (struct shim_dm *)dm;
}

/*
 * The copy rules, in rdma-core's mlx5 order: inside the allocation (else
 * EFAULT), then 4-byte granules (else EINVAL). @return 0 or the errno; the
 * verbs return it and set errno to it (ibv_memcpy_to_dm(3): "the value of
 * errno on failure").
 */
static int shim_dm_range_check(const struct shim_dm *d, uint64_t off, size_t len)
{
	if (off > d->length || len > d->length - off)
		return EFAULT;
	if (off % SHIM_DM_ALIGN != 0 || len % SHIM_DM_ALIGN != 0)
		return EINVAL;
	return 0;
}

static int shim_memcpy_to_dm(struct ibv_dm *dm, uint64_t off, const void *host, size_t len)
{
	struct shim_dm *d = shim_dm(dm);
	int rc = shim_dm_range_check(d, off, len);

	if (rc)
		return shim_ret(rc);
	memcpy(d->map + off, host, len);
	return 0;
}

static int shim_memcpy_from_dm(void *host, struct ibv_dm *dm, uint64_t off, size_t len)
{
	struct shim_dm *d = shim_dm(dm);
	int rc = shim_dm_range_check(d, off, len);

	if (rc)
		return shim_ret(rc);
	memcpy(host, d->map + off, len);
	return 0;
}

/* Map the answer of ALLOC_DM/IMPORT_DM into a new DM of @p context; @return it or NULL (errno). */
static struct ibv_dm *shim_dm_mapped(struct ibv_context *context, const struct ipc_alloc_dm_rsp *r,
				     int fd, bool imported)
{
	struct shim_dm *d = calloc(1, sizeof(*d));

	if (d == NULL)
		return shim_null(ENOMEM);
	if (r->length == 0 || r->map_size < r->length) {
		free(d);
		return shim_null(EPROTO);
	}
	d->map = shim_map_shm(fd, r->map_size);
	if (d->map == NULL) {
		int e = errno;

		free(d);
		return shim_null(e);
	}
	d->map_size = r->map_size;
	d->length = r->length;
	d->imported = imported;
	d->dm.context = context;
	d->dm.memcpy_to_dm = shim_memcpy_to_dm;
	d->dm.memcpy_from_dm = shim_memcpy_from_dm;
	d->dm.comp_mask = IBV_DM_MASK_HANDLE;
	d->dm.handle = r->handle;
	return &d->dm;
}

/* One ALLOC_DM or IMPORT_DM round trip on @p context. */
static struct ibv_dm *shim_dm_rpc(struct ibv_context *context, struct ipc_msg *req, bool imported)
{
	struct ipc_msg rsp;
	int rfds[IPC_MAX_FDS] = { -1, -1 };
	struct ibv_dm *dm = NULL;
	int rc = shim_rpc(shim_ctx(context), req, NULL, 0, &rsp, rfds);

	if (rc == 0) {
		/* the two answers share their record (IPC_OPS) */
		dm = rfds[0] >= 0 ? shim_dm_mapped(context, &rsp.u.rsp_ALLOC_DM, rfds[0], imported)
				  : shim_null(EPROTO);
		rc = dm == NULL ? errno : 0;
		if (dm == NULL && !imported) {
			/* allocated, but not mappable here: give it back */
			struct ipc_msg f, fr;

			shim_req(&f, IPC_OP_FREE_DM);
			f.u.req_FREE_DM.handle = rsp.u.rsp_ALLOC_DM.handle;
			shim_rpc(shim_ctx(context), &f, NULL, 0, &fr, NULL);
		}
	}
	for (unsigned int i = 0; i < IPC_MAX_FDS; i++)
		if (rfds[i] >= 0)
			close(rfds[i]);
	return rc ? shim_null(rc) : dm;
}

struct ibv_dm *shim_alloc_dm(struct ibv_context *context, struct ibv_alloc_dm_attr *attr)
{
	struct ipc_msg req;

	if (attr == NULL)
		return shim_null(EINVAL);
	shim_req(&req, IPC_OP_ALLOC_DM);
	req.u.req_ALLOC_DM.length = attr->length;
	req.u.req_ALLOC_DM.log_align_req = attr->log_align_req;
	req.u.req_ALLOC_DM.comp_mask = attr->comp_mask;
	return shim_dm_rpc(context, &req, false);
}

int shim_free_dm(struct ibv_dm *dm)
{
	struct shim_dm *d = shim_dm(dm);
	struct ipc_msg req, rsp;
	int rc;

	if (d->imported)
		return shim_ret(EINVAL); /* ibv_unimport_dm, as rdma-core's imported objects */
	shim_req(&req, IPC_OP_FREE_DM);
	req.u.req_FREE_DM.handle = dm->handle;
	rc = shim_destroy_rc(dm->context, shim_rpc(shim_ctx(dm->context), &req, NULL, 0, &rsp, NULL));
	if (rc)
		return shim_ret(rc);
	munmap(d->map, d->map_size);
	free(d);
	return 0;
}

struct ibv_mr *shim_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *dm, uint64_t offset, size_t length,
			      unsigned int access)
{
	struct shim_mr *mr;
	struct ipc_msg req, rsp;
	int rc;

	if (!(access & IBV_ACCESS_ZERO_BASED))
		return shim_null(EINVAL); /* rdma-core: DM MRs are zero-based */
	mr = calloc(1, sizeof(*mr));
	if (mr == NULL)
		return shim_null(ENOMEM);
	shim_req(&req, IPC_OP_REG_DM_MR);
	req.u.req_REG_DM_MR.user_handle = (uintptr_t)mr;
	req.u.req_REG_DM_MR.offset = offset;
	req.u.req_REG_DM_MR.length = length;
	req.u.req_REG_DM_MR.pd = shim_pd(pd)->handle;
	req.u.req_REG_DM_MR.dm = dm->handle;
	req.u.req_REG_DM_MR.access = access;
	rc = shim_rpc(shim_ctx(pd->context), &req, NULL, 0, &rsp, NULL);
	if (rc) {
		free(mr);
		return shim_null(rc);
	}
	mr->access = access;
	mr->handle = rsp.u.rsp_REG_DM_MR.handle;
	mr->mr.context = pd->context;
	mr->mr.pd = pd;
	mr->mr.addr = NULL; /* zero-based, as rdma-core's ibv_cmd_reg_dm_mr */
	mr->mr.length = length;
	mr->mr.handle = mr->handle;
	mr->mr.lkey = rsp.u.rsp_REG_DM_MR.lkey;
	mr->mr.rkey = rsp.u.rsp_REG_DM_MR.rkey;
	return &mr->mr;
}

/* A DM of @p context's group (another context imported from the creator's). */
SHIM_EXPORT struct ibv_dm *ibv_import_dm(struct ibv_context *context, uint32_t dm_handle)
{
	struct ipc_msg req;

	shim_req(&req, IPC_OP_IMPORT_DM);
	req.u.req_IMPORT_DM.handle = dm_handle;
	return shim_dm_rpc(context, &req, true);
}

/* Only the local part: the DM stays its creator's (rdma-core: no command). */
SHIM_EXPORT void ibv_unimport_dm(struct ibv_dm *dm)
{
	struct shim_dm *d = shim_dm(dm);

	munmap(d->map, d->map_size);
	free(d);
}
