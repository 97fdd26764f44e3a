/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdmacm shim: what is exported but not served yet (issue 21), so that
 * every program linked against librdmacm loads: rdma_join_multicast(_ex)
 * and rdma_leave_multicast fail with ENOSYS. (rsockets are rsocket*.c.)
 */
#include <errno.h>

#include "rcm.h"

static int rcm_enosys(void)
{
	errno = ENOSYS;
	return -1;
}

/* ---- multicast (issue 21) ---- */

RCM_EXPORT int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr, void *context)
{
	(void)id;
	(void)addr;
	(void)context;
	return rcm_enosys();
}

RCM_EXPORT int rdma_join_multicast_ex(struct rdma_cm_id *id,
				      struct rdma_cm_join_mc_attr_ex *mc_join_attr, void *context)
{
	(void)id;
	(void)mc_join_attr;
	(void)context;
	return rcm_enosys();
}

RCM_EXPORT int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
	(void)id;
	(void)addr;
	return rcm_enosys();
}
