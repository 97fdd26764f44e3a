/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ibv_query_qp() semantics: every attribute, whatever the mask asks for
 * (like rvt_query_qp and rxe_qp_to_attr), plus the creation attributes.
 */
#include <errno.h>

#include "qp_attr.h"

int
qp_sem_query(const struct qp_sem *qp, int attr_mask, struct ibv_qp_attr *attr,
	     struct ibv_qp_init_attr *init)
{
	/* libibverbs (ibv_cmd_query_qp) refuses these before the provider. */
	if (attr_mask & ~QP_SEM_QUERY_MASK_KNOWN)
		return EOPNOTSUPP;
	*attr = qp->attr;  /* cur_qp_state: see qp_sem_modify() */
	attr->cap = qp->init.cap;
	if (init != NULL)
		*init = qp->init;
	return 0;
}
