/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MRs on the lcores (ai_mr.h): one lib/qp MR table per worker, keys from
 * lib/ctl (mr_reg_key()); registration and deregistration fan out to every
 * worker and complete once those running a QP of the MR's PD answered.
 */
#include "ai_mr.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ai_op.h"
#include "daemon.h"
#include "mr.h"

int
ai_lcore_mr_reg(struct app_iface *ai, struct worker *w, const struct ctl_msg *m)
{
	struct mr_table *t = ai->mrs[w->index];

	if (m->u.mr.local == 0) /* fallback: copies into the client (mr.h) */
		return mr_reg_key_indirect(t, m->u.mr.key, m->u.mr.pd, m->u.mr.app_addr,
					   m->u.mr.iova, m->u.mr.length, m->u.mr.access,
					   m->u.mr.pid, m->u.mr.mem_fd);
	return mr_reg_key(t, m->u.mr.key, m->u.mr.pd, m->u.mr.local, m->u.mr.iova, m->u.mr.length,
			  m->u.mr.access);
}

int
ai_lcore_mr_dereg(struct app_iface *ai, struct worker *w, const struct ctl_msg *m)
{
	int rc = mr_dereg(ai->mrs[w->index], m->u.mr.key);

	return rc == -ENOENT ? 0 : rc;
}

static void
mr_msg(struct ctl_msg *m, enum ctl_msg_type type, const struct ctl_mr_info *mr)
{
	memset(m, 0, sizeof(*m));
	m->type = (uint16_t)type;
	m->u.mr.key = mr->lkey;
	m->u.mr.pd = mr->pd;
	/* the six verbs bits of mr.h, and FLUSH_GLOBAL (IBTA 1.5 FLUSH target) */
	m->u.mr.access = mr->access & (0x3fu | MR_ACCESS_FLUSH_GLOBAL);
	m->u.mr.pid = mr->pid;
	m->u.mr.mem_fd = mr->mem_fd;
	m->u.mr.local = (uint64_t)(uintptr_t)mr->local;
	m->u.mr.app_addr = mr->app_addr;
	m->u.mr.iova = mr->iova;
	m->u.mr.length = mr->length;
}

/*
 * Send @p type for @p op's MR to the lcores in @p wait (@p op waits for
 * their answers) and in @p tell (nobody waits). The operation is held
 * meanwhile, so answers given at once (workers stopped) cannot finish it
 * before every message went out. A message that finds no room fails the
 * operation (-ENOBUFS), after the answers of those sent.
 */
static void
mr_fan_out(struct app_iface *ai, struct ai_op *op, enum ctl_msg_type type, uint32_t wait,
	   uint32_t tell)
{
	struct ctl_msg m;

	op->waiting++;
	for (unsigned int wi = 0; wi < ai->d->n_workers; wi++) {
		if (!((wait | tell) & 1u << wi))
			continue;
		mr_msg(&m, type, op->mr);
		if (ai_send(ai, wi, wait & 1u << wi ? op : NULL, &m) == 0)
			continue;
		if (type == CTL_MSG_MR_DEREG) {
			/* every other lcore is still told; this one may keep the MR */
			op->held = true;
			continue;
		}
		if (wait & 1u << wi) {
			if (op->rc == 0)
				op->rc = -ENOBUFS;
			break;
		}
	}
	if (--op->waiting == 0)
		ai_op_answered(ai, op);
}

static uint32_t
all_workers(const struct app_iface *ai)
{
	return ai->d->n_workers >= 32 ? UINT32_MAX : (1u << ai->d->n_workers) - 1;
}

/*
 * The lcores an MR of PD @p pd must be on (or gone from) before the client
 * hears back: those running a QP of that PD. The others cannot touch the
 * MR until a QP of the PD comes to them, and its QP_CREATE follows the MR
 * message on their ring; they are told without being waited for, so a
 * stopped lcore delays only the clients whose QPs it runs.
 */
static uint32_t
mr_lcores(const struct app_iface *ai, uint32_t pd)
{
	uint32_t mask = 0;

	for (unsigned int wi = 0; wi < ai->d->n_workers && pd < ai->max_pd; wi++)
		if (ai->pd_qps[pd * ai->d->n_workers + wi] > 0)
			mask |= 1u << wi;
	return mask;
}

/* lib/ctl's errno for a refused registration */
static int
mr_errno(int rc)
{
	return rc == -EEXIST || rc == -EINVAL ? EINVAL : rc == -ENOSPC ? ENOMEM : EAGAIN;
}

/* Every lcore answered MR_REG / the undo: done, or undo where it was taken. */
void
ai_mr_reg_answered(struct app_iface *ai, struct ai_op *op)
{
	if (op->rc == 0) {
		ai->dp_mrs++;
		ai_op_finish(ai, op, 0);
		return;
	}
	if (op->kind == AI_OP_MR_REG) {
		uint32_t told = all_workers(ai) & ~mr_lcores(ai, op->mr->pd);

		op->kind = AI_OP_MR_UNDO; /* its answers come back here */
		mr_fan_out(ai, op, CTL_MSG_MR_DEREG, op->ok_mask, told);
		return;
	}
	ai_op_finish(ai, op, mr_errno(op->rc));
}

int
ai_dp_mr_create(void *dp, struct ctl_mr_info *mr)
{
	struct app_iface *ai = dp;
	struct ai_op *op;
	uint32_t wait;
	int rc;

	if (mr->local == NULL && !(mr->access & IBV_ACCESS_ON_DEMAND)) {
		/* Not shared with us (doc/verbs-shim.md): the lcores copy from/to
		 * the client's pages (its /proc/PID/mem), if we may. An ODP MR
		 * always takes this path and its pages need not exist yet. */
		rc = mr_indirect_probe(mr->pid, mr->mem_fd, mr->app_addr);
		if (!ai->warned_unmapped)
			fprintf(stderr, "roce-daemon: pid %d registered memory the daemon cannot "
				"map (stack, file or read-only pages): %s\n", (int)mr->pid,
				rc == 0 ? "served by copies (slower)" : strerror(-rc));
		ai->warned_unmapped = true;
		if (rc != 0)
			return -rc;
	}
	op = ai_op_new(ai, AI_OP_MR_REG);
	if (op == NULL)
		return EAGAIN;
	op->mr = mr;
	wait = mr_lcores(ai, mr->pd);
	mr_fan_out(ai, op, CTL_MSG_MR_REG, wait, all_workers(ai) & ~wait);
	return ai_op_return(ai, op);
}

/* Complete only when no lcore can reach the region any more. */
void
ai_dp_mr_destroy(void *dp, const struct ctl_mr_info *mr)
{
	struct app_iface *ai = dp;
	struct ai_op *op = ai_op_new(ai, AI_OP_MR_DEREG);
	uint32_t wait;

	if (op == NULL) {
		ai->ctl_refused++; /* cannot happen: AI_MAX_OPS > what lib/ctl has in flight */
		return;
	}
	op->mr = mr;
	wait = mr_lcores(ai, mr->pd);
	mr_fan_out(ai, op, CTL_MSG_MR_DEREG, wait, all_workers(ai) & ~wait);
	if (op->held)
		ai->destroys_held++;
	if (ai_op_return(ai, op) != 0)
		ctl_dp_destroy_failed(ai->ctl); /* lib/ctl keeps the memory for good */
}

/* Every lcore let go of the MR (or was told to): lib/ctl may unmap it. */
void
ai_mr_dereg_answered(struct app_iface *ai, struct ai_op *op)
{
	ai->dp_mrs--;
	ai_op_finish(ai, op, op->held || (op->rc != 0 && op->rc != -ENOENT) ? EIO : 0);
}
