/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/ctl: XRC domains (IBTA Vol. 1 9.8.2; ibv_open_xrcd(3)).
 *
 * An XRCD handle (CTL_KIND_XRCD, per connection group, as many as the
 * client's PD quota allows PDs) names a domain (struct ctl_xdom, one table for the
 * daemon). Handles that opened the same inode on the same device name the
 * same domain, whichever process opened them, as the kernel's XRCD inode
 * tree does; a handle opened without a file has a domain of its own. The
 * domain lives while a handle names it.
 *
 * Placement: an XRC TGT QP receives into any XRC SRQ of its domain, and an
 * SRQ ring has one consumer, so a domain's SRQs and TGT QPs all run on one
 * lcore, bound while the domain has any (ctl.h "QP placement"); an XRC SRQ
 * binds its CQ to that lcore as a QP binds its CQs.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "ctl_internal.h"

int ctl_xrc_init(struct ctl *ctl)
{
	uint32_t n = ctl->cfg.limits.max_xrcd ? ctl->cfg.limits.max_xrcd : 1;

	ctl->xdoms = calloc(n, sizeof(*ctl->xdoms));
	return ctl->xdoms ? 0 : ENOMEM;
}

void ctl_xrc_fini(struct ctl *ctl)
{
	free(ctl->xdoms);
	ctl->xdoms = NULL;
}

/* The domain of inode (st_dev, st_ino) on device @p dev, or UINT32_MAX. */
static uint32_t ctl_xdom_find(const struct ctl *ctl, int dev, const struct stat *st)
{
	for (uint32_t i = 0; i < ctl->cfg.limits.max_xrcd; i++) {
		const struct ctl_xdom *d = &ctl->xdoms[i];

		if (d->handles && d->has_inode && d->dev == dev &&
		    d->st_dev == (uint64_t)st->st_dev && d->st_ino == (uint64_t)st->st_ino)
			return i;
	}
	return UINT32_MAX;
}

static uint32_t ctl_xdom_new(struct ctl *ctl, int dev, const struct stat *st)
{
	for (uint32_t i = 0; i < ctl->cfg.limits.max_xrcd; i++) {
		struct ctl_xdom *d = &ctl->xdoms[i];

		if (d->handles)
			continue;
		*d = (struct ctl_xdom){ .lcore = CTL_LCORE_NONE, .dev = dev };
		if (st != NULL) {
			d->has_inode = true;
			d->st_dev = (uint64_t)st->st_dev;
			d->st_ino = (uint64_t)st->st_ino;
		}
		return i;
	}
	return UINT32_MAX;
}

/*
 * OPEN_XRCD: as the kernel's ib_uverbs_open_xrcd(): an inode without a
 * domain needs O_CREAT, an existing one refuses O_EXCL (both EINVAL); no
 * file: a new private domain (O_CREAT required too).
 */
int ctl_h_OPEN_XRCD(const struct ctl_req *x)
{
	struct ctl_conn *c = x->conn;
	struct ctl *ctl = c->ctl;
	uint32_t oflags = x->req->u.req_OPEN_XRCD.oflags;
	int fd = x->nfds ? x->fds[0] : -1;
	struct stat st;
	struct ctl_xrcd *h;
	uint32_t dom = UINT32_MAX;

	if (ctl->cfg.limits.max_xrcd == 0)
		return EOPNOTSUPP;
	if (oflags & ~(uint32_t)(O_CREAT | O_EXCL))
		return EINVAL;
	if (fd >= 0) {
		if (fstat(fd, &st) != 0)
			return EBADF;
		dom = ctl_xdom_find(ctl, c->dev, &st);
		if (dom != UINT32_MAX && (oflags & O_EXCL))
			return EINVAL;
	}
	if (dom == UINT32_MAX && !(oflags & O_CREAT))
		return EINVAL;
	h = ctl_table_alloc(&ctl->tab[CTL_KIND_XRCD], c, CTL_KIND_XRCD, 0);
	if (h == NULL)
		return ENOMEM;
	if (dom == UINT32_MAX) {
		dom = ctl_xdom_new(ctl, c->dev, fd >= 0 ? &st : NULL);
		if (dom == UINT32_MAX) { /* cannot happen: as many domains as handles */
			ctl_table_free(&ctl->tab[CTL_KIND_XRCD], h);
			return ENOMEM;
		}
	}
	ctl->xdoms[dom].handles++;
	h->dom = dom;
	x->rsp->u.rsp_OPEN_XRCD.handle = ctl_obj_handle(&h->o);
	x->rsp->u.rsp_OPEN_XRCD.num = dom + 1;
	return 0;
}

/* CLOSE_XRCD: EBUSY while SRQs or TGT QPs were made through this handle (as Linux). */
int ctl_h_CLOSE_XRCD(const struct ctl_req *x)
{
	struct ctl_conn *c = x->conn;
	struct ctl_xrcd *h = ctl_lookup(c, CTL_KIND_XRCD, x->req->u.req_CLOSE_XRCD.handle);

	if (h == NULL)
		return EINVAL;
	if (h->o.refs != 0)
		return EBUSY;
	return ctl_obj_destroy(c->ctl, &h->o);
}

void ctl_xrcd_freed(struct ctl *ctl, struct ctl_xrcd *h)
{
	ctl->xdoms[h->dom].handles--;
}

uint32_t ctl_xrcd_num(const struct ctl_xrcd *h)
{
	return h->dom + 1;
}

uint32_t ctl_xrcd_lcore(const struct ctl *ctl, const struct ctl_xrcd *h)
{
	return ctl->xdoms[h->dom].lcore;
}

void ctl_xrcd_bind(struct ctl *ctl, struct ctl_xrcd *h, uint32_t lcore)
{
	struct ctl_xdom *d = &ctl->xdoms[h->dom];

	h->o.refs++;
	d->users++;
	d->lcore = lcore;
}

void ctl_xrcd_unbind(struct ctl *ctl, struct ctl_xrcd *h)
{
	struct ctl_xdom *d = &ctl->xdoms[h->dom];

	h->o.refs--;
	if (--d->users == 0)
		d->lcore = CTL_LCORE_NONE;
}
