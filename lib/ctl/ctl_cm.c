/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/ctl: rdma_cm ids and event channels (ipc_cm.h). Handlers of the
 * CM_* operations of IPC_OPS.
 *
 * Not yet implemented: every handler answers EOPNOTSUPP until the CM agent
 * lands; JOIN_MCAST/LEAVE_MCAST answer ENOSYS until multicast (issue 21).
 */
#include <errno.h>

#include "ctl_internal.h"

#define CTL_CM_TODO(sym)                                                                  \
	int ctl_h_##sym(const struct ctl_req *x)                                          \
	{                                                                                 \
		(void)x;                                                                  \
		return EOPNOTSUPP; /* not implemented yet */                              \
	}

CTL_CM_TODO(CM_CREATE_CHANNEL)
CTL_CM_TODO(CM_DESTROY_CHANNEL)
CTL_CM_TODO(CM_CREATE_ID)
CTL_CM_TODO(CM_DESTROY_ID)
CTL_CM_TODO(CM_BIND)
CTL_CM_TODO(CM_RESOLVE_ADDR)
CTL_CM_TODO(CM_RESOLVE_ROUTE)
CTL_CM_TODO(CM_QUERY)
CTL_CM_TODO(CM_LISTEN)
CTL_CM_TODO(CM_CONNECT)
CTL_CM_TODO(CM_ACCEPT)
CTL_CM_TODO(CM_REJECT)
CTL_CM_TODO(CM_DISCONNECT)
CTL_CM_TODO(CM_INIT_QP_ATTR)
CTL_CM_TODO(CM_SET_OPTION)
CTL_CM_TODO(CM_GET_OPTION)
CTL_CM_TODO(CM_NOTIFY)
CTL_CM_TODO(CM_MIGRATE_ID)

/* Multicast belongs to issue 21. */
int ctl_h_CM_JOIN_MCAST(const struct ctl_req *x)
{
	(void)x;
	return ENOSYS;
}

int ctl_h_CM_LEAVE_MCAST(const struct ctl_req *x)
{
	(void)x;
	return ENOSYS;
}
