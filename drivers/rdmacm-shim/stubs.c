/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdmacm shim: what is exported but not served yet (issue 21), so that
 * every program linked against librdmacm loads:
 *  - riomap/riounmap/riowrite fail with ENOSYS (the stream rsockets are
 *    rsocket*.c);
 *  - rdma_join_multicast(_ex) and rdma_leave_multicast fail with ENOSYS.
 */
#include <errno.h>

#include <rdma/rsocket.h>

#include "rcm.h"

static int rcm_enosys(void)
{
	errno = ENOSYS;
	return -1;
}

RCM_EXPORT off_t riomap(int socket, void *buf, size_t len, int prot, int flags, off_t offset)
{
	(void)socket;
	(void)buf;
	(void)len;
	(void)prot;
	(void)flags;
	(void)offset;
	return rcm_enosys();
}

RCM_EXPORT int riounmap(int socket, void *buf, size_t len)
{
	(void)socket;
	(void)buf;
	(void)len;
	return rcm_enosys();
}

RCM_EXPORT size_t riowrite(int socket, const void *buf, size_t count, off_t offset, int flags)
{
	(void)socket;
	(void)buf;
	(void)count;
	(void)offset;
	(void)flags;
	rcm_enosys();
	return (size_t)-1; /* librdmacm's riowrite returns -1 as size_t on error */
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
