/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory windows (ibv_alloc_mw, ibv_dealloc_mw): the control plane opens
 * and closes them in the lcores' window table (lib/xport mw.h); binds and
 * invalidations are work requests the engine carries out, and every access
 * through a window key is checked there. Nothing here waits for an lcore:
 * the table is shared, each window under its own lock.
 */
#include <errno.h>

#include <infiniband/verbs.h>

#include "ctl_internal.h"

int ctl_h_ALLOC_MW(const struct ctl_req *x)
{
	struct ctl_conn *c = x->conn;
	struct ctl *ctl = c->ctl;
	const struct ipc_alloc_mw_req *q = &x->req->u.req_ALLOC_MW;
	struct ipc_alloc_mw_rsp *r = &x->rsp->u.rsp_ALLOC_MW;
	struct ctl_pd *pd = ctl_lookup(c, CTL_KIND_PD, q->pd);
	struct ctl_mw *mw;
	uint32_t key;

	if (ctl->mws == NULL)
		return EOPNOTSUPP;
	if (pd == NULL)
		return EINVAL;
	if (q->type != IBV_MW_TYPE_1 && q->type != IBV_MW_TYPE_2)
		return EINVAL; /* as rxe's rxe_alloc_mw(): the kernel refuses other types */
	mw = ctl_table_alloc(&ctl->tab[CTL_KIND_MW], c, CTL_KIND_MW, q->user_handle);
	if (mw == NULL)
		return ENOMEM;
	key = mw_key_make(mw->o.index, ctl_key_byte_next(&ctl->mw_key_byte[mw->o.index]));
	if (mw_open(ctl->mws, key, pd->o.index, (enum mw_type)q->type) != 0) {
		ctl_table_free(&ctl->tab[CTL_KIND_MW], mw); /* cannot happen: slots match */
		return EINVAL;
	}
	mw->pd = pd;
	mw->rkey = key;
	pd->o.refs++;
	r->handle = ctl_obj_handle(&mw->o);
	r->rkey = key;
	return 0;
}

int ctl_h_DEALLOC_MW(const struct ctl_req *x)
{
	struct ctl_conn *c = x->conn;
	struct ctl_mw *mw = ctl_lookup(c, CTL_KIND_MW, x->req->u.req_DEALLOC_MW.handle);

	if (mw == NULL)
		return EINVAL;
	return ctl_obj_destroy(c->ctl, &mw->o);
}

/* The destroy's end (ctl_obj_destroy_fin()): unbound at once for every lcore. */
void ctl_mw_destroyed(struct ctl *ctl, struct ctl_mw *mw)
{
	mw_close(ctl->mws, mw->rkey);
	mw->pd->o.refs--;
}
