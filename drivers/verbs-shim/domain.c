/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs shim: thread domains and parent domains (verbs_context ops
 * alloc_td, dealloc_td, alloc_parent_domain; rdma-core's
 * ibv_alloc_parent_domain(3)).
 *
 * A parent domain is an ibv_pd standing for its protection domain: every
 * verb given it (QPs, SRQs, MRs, AHs, extended CQs with
 * IBV_CQ_INIT_ATTR_MASK_PD) reaches the daemon with the protection
 * domain's handle, so the daemon never sees it. ibv_dealloc_pd frees the
 * parent domain alone; its protection domain and thread domain stay busy
 * (EBUSY) while parent domains name them, as the kernel's use counts make
 * them for mlx5.
 *
 * The custom allocators are kept and never called: a provider calls them
 * for the buffers it allocates itself in the application's memory, and
 * this one allocates none (rings and CQEs live in memory the daemon made
 * and shares, doc/verbs-shim.md "Shared memory"). A thread domain is the
 * application's promise of single-threaded use, which a provider may use
 * to drop locks; this one keeps them (correct, only not faster).
 */
#include <errno.h>
#include <stdlib.h>

#include "shim.h"

struct ibv_td *shim_alloc_td(struct ibv_context *context, struct ibv_td_init_attr *attr)
{
	struct shim_td *td;

	if (attr == NULL || attr->comp_mask != 0)
		return shim_null(EINVAL);
	td = calloc(1, sizeof(*td));
	if (td == NULL)
		return shim_null(ENOMEM);
	td->td.context = context;
	return &td->td;
}

int shim_dealloc_td(struct ibv_td *ibtd)
{
	struct shim_td *td = shim_td(ibtd);

	if (__atomic_load_n(&td->domains, __ATOMIC_ACQUIRE) != 0)
		return shim_ret(EBUSY);
	free(td);
	return 0;
}

struct ibv_pd *shim_alloc_parent_domain(struct ibv_context *context,
					struct ibv_parent_domain_init_attr *attr)
{
	const uint32_t known = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
			       IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
	struct shim_pd *parent, *pd;

	if (attr == NULL || attr->pd == NULL || (attr->comp_mask & ~known))
		return shim_null(EINVAL);
	parent = shim_pd(attr->pd);
	if (attr->pd->context != context || parent->protection != NULL ||
	    (attr->td != NULL && attr->td->context != context))
		return shim_null(EINVAL); /* another context's, or a parent domain itself */
	if ((attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) &&
	    (attr->alloc == NULL || attr->free == NULL))
		return shim_null(EINVAL);
	pd = calloc(1, sizeof(*pd));
	if (pd == NULL)
		return shim_null(ENOMEM);
	pd->pd.context = context;
	pd->pd.handle = attr->pd->handle;
	pd->handle = parent->handle;
	pd->protection = parent;
	pd->td = attr->td ? shim_td(attr->td) : NULL;
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) {
		pd->alloc = attr->alloc;
		pd->free = attr->free;
	}
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)
		pd->pd_context = attr->pd_context;
	__atomic_add_fetch(&parent->domains, 1, __ATOMIC_RELEASE);
	if (pd->td)
		__atomic_add_fetch(&pd->td->domains, 1, __ATOMIC_RELEASE);
	return &pd->pd;
}

void shim_dealloc_parent_domain(struct shim_pd *pd)
{
	__atomic_sub_fetch(&pd->protection->domains, 1, __ATOMIC_RELEASE);
	if (pd->td)
		__atomic_sub_fetch(&pd->td->domains, 1, __ATOMIC_RELEASE);
	free(pd);
}
