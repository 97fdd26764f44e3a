/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/ctl: device memory (ibv_alloc_dm, ibv_free_dm, ibv_import_dm).
 *
 * A NIC's device memory is on-chip memory an application reaches through a
 * mapping and the verbs reach through MRs (ibv_reg_dm_mr). Ours is memory
 * the daemon owns: a memfd it creates and maps, whose descriptor it passes
 * to the client (ALLOC_DM and IMPORT_DM answers) to map as well; MRs of
 * REG_DM_MR (ctl_objs.c) point into the daemon's mapping, so the lcores
 * reach it as any shared MR. What a client may hold is bounded three ways:
 * one allocation by limits.max_dm_size (QUERY_DEVICE's max_dm_size), a
 * group by quota.max_dm_bytes, the daemon by limits.max_dm_bytes. A length
 * beyond max_dm_size is EINVAL (as rdma-core's mlx5 provider answers before
 * asking the kernel); a quota or the cap reached is ENOMEM, counted
 * (quota_refused), as a NIC whose memory is taken. ctl_get_stats() reports the
 * allocations and their bytes (/roce/app/stats dm, dm_bytes).
 */
#include <errno.h>
#include <unistd.h>

#include "ctl_internal.h"
#include "ipc_shm.h"

/* The daemon's and the group's charge of @p bytes more: within both bounds? */
static bool ctl_dm_bytes_ok(struct ctl_conn *c, uint64_t bytes)
{
	struct ctl *ctl = c->ctl;
	uint64_t q = ctl->cfg.quota.max_dm_bytes, cap = ctl->cfg.limits.max_dm_bytes;

	if (bytes <= cap && ctl->dm_bytes <= cap - bytes &&
	    (q == 0 || (bytes <= q && c->group->dm_bytes <= q - bytes)))
		return true;
	ctl->quota_refused++;
	return false;
}

/* The pages a DM of @p length takes (its memfd and both mappings). */
static uint64_t ctl_dm_map_size(uint64_t length)
{
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);

	return (length + pg - 1) & ~(pg - 1);
}

/* Answer with @p dm's memfd (a duplicate: the DM keeps its own). */
static int ctl_dm_answer(const struct ctl_req *x, const struct ctl_dm *dm,
			 struct ipc_alloc_dm_rsp *r)
{
	int fd = dup(dm->fd);

	if (fd < 0)
		return errno;
	r->handle = ctl_obj_handle(&dm->o);
	r->length = dm->length;
	r->map_size = dm->shm.size;
	x->rfds[0] = fd;
	*x->rnfds = 1;
	return 0;
}

int ctl_h_ALLOC_DM(const struct ctl_req *x)
{
	struct ctl_conn *c = x->conn;
	const struct ipc_alloc_dm_req *q = &x->req->u.req_ALLOC_DM;
	struct ipc_alloc_dm_rsp *r = &x->rsp->u.rsp_ALLOC_DM;
	struct ctl *ctl = c->ctl;
	struct ctl_dm *dm;
	uint64_t size;
	int rc;

	/* comp_mask: struct ibv_alloc_dm_attr has no optional field; alignment:
	 * the memfd starts on a page */
	if (q->comp_mask != 0 || q->length == 0 || (1ull << (q->log_align_req & 63)) >
	    (uint64_t)sysconf(_SC_PAGESIZE) || q->log_align_req > 63)
		return EINVAL;
	if (ctl->cfg.limits.max_dm_size == 0)
		return EOPNOTSUPP;
	if (q->length > ctl->cfg.limits.max_dm_size)
		return EINVAL; /* beyond max_dm_size: as rdma-core's mlx5_alloc_dm */
	size = ctl_dm_map_size(q->length);
	if (!ctl_dm_bytes_ok(c, size))
		return ENOMEM;
	dm = ctl_table_alloc(&ctl->tab[CTL_KIND_DM], c, CTL_KIND_DM, q->user_handle);
	if (dm == NULL)
		return ENOMEM;
	rc = ctl_shm_alloc(&dm->shm, "roce-dm", (size_t)size, &dm->fd);
	if (rc == 0) {
		dm->length = q->length;
		rc = ctl_dm_answer(x, dm, r);
		if (rc) {
			ctl_shm_free(&dm->shm);
			close(dm->fd);
		}
	}
	if (rc) {
		ctl_table_free(&ctl->tab[CTL_KIND_DM], dm);
		return rc;
	}
	c->group->dm_bytes += size;
	ctl->dm_bytes += size;
	return 0;
}

int ctl_h_FREE_DM(const struct ctl_req *x)
{
	struct ctl_conn *c = x->conn;
	struct ctl_dm *dm = ctl_lookup(c, CTL_KIND_DM, x->req->u.req_FREE_DM.handle);

	if (dm == NULL)
		return EINVAL;
	if (dm->o.refs != 0)
		return EBUSY; /* an MR lies in it */
	return ctl_obj_destroy(c->ctl, &dm->o);
}

/* ibv_import_dm: a DM of the connection's group (a context imported from its creator's). */
int ctl_h_IMPORT_DM(const struct ctl_req *x)
{
	struct ctl_dm *dm = ctl_lookup(x->conn, CTL_KIND_DM, x->req->u.req_IMPORT_DM.handle);

	if (dm == NULL)
		return EINVAL;
	return ctl_dm_answer(x, dm, &x->rsp->u.rsp_IMPORT_DM);
}

void ctl_dm_destroyed(struct ctl *ctl, struct ctl_dm *dm)
{
	size_t size = dm->shm.size;

	ctl_shm_free(&dm->shm); /* kept if a quarantined MR points into it */
	close(dm->fd);
	dm->fd = -1;
	dm->o.owner->dm_bytes -= size;
	ctl->dm_bytes -= size;
}
