/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Address resolution for the application interface (ai_resolve.h): a
 * modify to RTR with a new path, an ibv_create_ah and rdma_resolve_addr
 * wait for neigh.c's table as operations, never in a loop.
 */
#include "ai_resolve.h"

#include <errno.h>
#include <string.h>

#include <rte_cycles.h>

#include "ah_table.h"
#include "ai_op.h"
#include "daemon.h"
#include "neigh.h"

/*
 * lib/qp's resolve hook (qp_sem_device.resolve), inside the modify's
 * checks: it only starts the resolution (the modify waits for it in
 * ai_dp_qp_modify, asynchronously). Without a route there is nothing to wait
 * for: ETIMEDOUT at once, as Linux (ib_resolve_eth_dmac) answers an
 * unresolvable neighbour.
 */
int
ai_resolve(void *ctx, uint8_t port_num, const struct ibv_global_route *grh,
	   const struct qp_sem_gid *sgid, uint8_t *hop_limit)
{
	struct app_iface *ai = ctx;
	int port = daemon_find_gid(ai->d, sgid->gid.raw);
	uint8_t mac[6];
	int rc;

	(void)port_num;
	(void)hop_limit;
	rc = neigh_resolve(ai->d, -1, (uint16_t)(port < 0 ? 0 : port), grh->dgid.raw, mac);
	return rc == 0 || rc == -EAGAIN ? 0 : ETIMEDOUT;
}

/*
 * Start resolving the MAC of @p dgid from @p port into @p mac for @p op:
 * at once when known (@p op untouched: @return 0), else @p op waits in the
 * neighbour table (ai_resolve_tick()) until the answer or the bound.
 * @return 0 resolved, -EAGAIN waiting, ETIMEDOUT unresolvable
 */
int
ai_resolve_start(struct app_iface *ai, struct ai_op *op, uint16_t port, const uint8_t dgid[16],
		 uint8_t *mac)
{
	int rc = neigh_resolve(ai->d, -1, port, dgid, mac);

	if (rc == 0)
		return 0;
	if (rc != -EAGAIN)
		return ETIMEDOUT;
	op->port = port;
	memcpy(op->dgid, dgid, 16);
	op->mac = mac;
	op->deadline = rte_get_tsc_cycles() + ai->d->tsc_hz / 1000 * ai->resolve_ms;
	op->resolving = true;
	ai->ops_resolving++;
	return -EAGAIN;
}

/* Operations waiting for a neighbour: resolved, or out of time. @return those that moved */
unsigned int
ai_resolve_tick(struct app_iface *ai)
{
	uint64_t now = rte_get_tsc_cycles();
	unsigned int n = 0;

	for (uint32_t i = 0; i < AI_MAX_OPS && ai->ops_resolving > 0; i++) {
		struct ai_op *op = &ai->ops[i];
		int rc;

		if (!op->resolving)
			continue;
		rc = neigh_resolve(ai->d, -1, op->port, op->dgid, op->mac);
		if (rc == -EAGAIN && now < op->deadline && !daemon_stopping(ai->d))
			continue;
		n++;
		op->resolving = false;
		ai->ops_resolving--;
		/* the neighbour table answered: the operation's role goes on */
		op->rc = rc == 0 ? 0 : -ETIMEDOUT;
		ai_op_answered(ai, op);
	}
	return n;
}


/*
 * The resolved vector of @p ah goes into the table the lcores send UD WQEs
 * from (by handle, for QPs of its PD only): the application's ring names
 * the handle, never the addresses. @return 0 or EINVAL (beyond the table)
 */
static int
ah_publish(struct app_iface *ai, const struct ctl_ah_info *ah)
{
	return ah_table_set(ai->ahs, ah->ahn, ah->pd, &ah->av) == 0 ? 0 : EINVAL;
}

/* AH_RESOLVE: the neighbour answered (or the bound passed). */
void
ai_ah_resolved(struct app_iface *ai, struct ai_op *op)
{
	/* Linux (ib_resolve_eth_dmac): an unresolvable neighbour is ETIMEDOUT */
	ai_op_finish(ai, op, op->rc != 0 ? ETIMEDOUT : ah_publish(ai, op->ah));
}

int
ai_dp_ah_create(void *dp, struct ctl_ah_info *ah)
{
	struct app_iface *ai = dp;
	struct ai_op *op;
	int rc;

	if (ah->dev >= ai->d->n_ports || ah->ahn >= ai->ahs->capacity)
		return EINVAL;
	op = ai_op_new(ai, AI_OP_AH_RESOLVE);
	if (op == NULL)
		return EAGAIN;
	/* ah->av is lib/ctl's storage, kept (busy) until the answer */
	op->ah = ah;
	rc = ai_resolve_start(ai, op, (uint16_t)ah->dev, ah->av.dgid, ah->av.dmac);
	if (rc != -EAGAIN) {
		ai_op_free(ai, op);
		return rc == 0 ? ah_publish(ai, ah) : rc;
	}
	return ai_op_return(ai, op);
}

/* The handle answers no more; a WQE already fetched keeps its own copy. */
void
ai_dp_ah_destroy(void *dp, const struct ctl_ah_info *ah)
{
	struct app_iface *ai = dp;

	ah_table_clear(ai->ahs, ah->ahn);
}

/*
 * rdma_resolve_addr's neighbour: no route is ENETUNREACH at once; an
 * unanswered ARP/ND keeps the id waiting until its own timeout, which
 * then reports ETIMEDOUT, as the kernel's rdma_resolve_addr does.
 */
int
ai_cm_resolve(void *ctx, uint32_t dev, const uint8_t dgid[16], uint8_t mac[6])
{
	struct app_iface *ai = ctx;
	uint8_t nh[16];
	int rc;

	if (dev >= ai->d->n_ports || !neigh_next_hop(ai->d, (uint16_t)dev, dgid, nh))
		return -ENETUNREACH;
	rc = neigh_resolve(ai->d, -1, (uint16_t)dev, dgid, mac);
	return rc == 0 ? 0 : -EAGAIN;
}
