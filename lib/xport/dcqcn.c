/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * DCQCN reaction point (dcqcn.h). Section numbers are those of the DCQCN
 * paper (Zhu et al., SIGCOMM 2015); the increase stages are QCN's
 * (IEEE 802.1Qau reaction point), which section 3.1 adopts.
 */
#include "dcqcn.h"

#include <stdint.h>
#include <string.h>

void
dcqcn_params_default(struct dcqcn_params *p, uint32_t line_kbps)
{
	memset(p, 0, sizeof(*p));
	p->g_inv = DCQCN_DEF_G_INV;
	p->alpha_ns = DCQCN_DEF_ALPHA_US * 1000ull;
	p->timer_ns = DCQCN_DEF_TIMER_US * 1000ull;
	p->bytes = DCQCN_DEF_BYTES;
	p->f = DCQCN_DEF_F;
	p->ai_kbps = DCQCN_DEF_AI_MBPS * 1000u;
	p->hai_kbps = DCQCN_DEF_HAI_MBPS * 1000u;
	p->min_kbps = DCQCN_DEF_MIN_MBPS * 1000u;
	p->line_kbps = line_kbps;
}

void
dcqcn_rp_init(struct dcqcn_rp *rp)
{
	memset(rp, 0, sizeof(*rp));
	rp->alpha = DCQCN_ALPHA_ONE; /* the paper starts alpha at 1 */
}

static uint32_t
g_inv_of(const struct dcqcn_params *p)
{
	return p->g_inv ? p->g_inv : 1;
}

void
dcqcn_rp_cnp(struct dcqcn_rp *rp, const struct dcqcn_params *p, uint64_t now)
{
	uint32_t g_inv = g_inv_of(p);

	if (!rp->limited) {
		/* the first CNP finds the QP at line rate */
		rp->limited = true;
		rp->rc_kbps = p->line_kbps;
	}
	/* section 3.1: Rt = Rc, Rc = Rc (1 - alpha / 2), alpha = (1 - g) alpha + g */
	rp->rt_kbps = rp->rc_kbps;
	uint64_t cut = ((uint64_t)rp->rc_kbps * rp->alpha) >> (DCQCN_ALPHA_SHIFT + 1);
	rp->rc_kbps -= (uint32_t)cut;
	if (rp->rc_kbps < p->min_kbps)
		rp->rc_kbps = p->min_kbps;
	rp->alpha = rp->alpha - rp->alpha / g_inv + DCQCN_ALPHA_ONE / g_inv;
	if (rp->alpha > DCQCN_ALPHA_ONE)
		rp->alpha = DCQCN_ALPHA_ONE;
	/* a cut restarts the alpha period, the timer, the byte counter and the stages */
	rp->t_stage = 0;
	rp->b_stage = 0;
	rp->bytes = 0;
	rp->alpha_at = p->alpha_ns ? now + p->alpha_ns : UINT64_MAX;
	rp->timer_at = p->timer_ns ? now + p->timer_ns : UINT64_MAX;
	rp->cuts++;
}

/* One rate increase event (timer or byte counter), after its stage count grew. */
static void
rp_increase(struct dcqcn_rp *rp, const struct dcqcn_params *p)
{
	uint32_t hi = rp->t_stage > rp->b_stage ? rp->t_stage : rp->b_stage;
	uint32_t lo = rp->t_stage < rp->b_stage ? rp->t_stage : rp->b_stage;
	uint64_t rt = rp->rt_kbps;

	if (hi < p->f)
		; /* fast recovery: towards Rt, which stays */
	else if (lo > p->f)
		rt += p->hai_kbps; /* hyper increase */
	else
		rt += p->ai_kbps; /* additive increase */
	if (rt > p->line_kbps)
		rt = p->line_kbps;
	rp->rt_kbps = (uint32_t)rt;
	/* rounded up, so Rc reaches Rt (and line rate) instead of stopping one short */
	rp->rc_kbps = (uint32_t)(((uint64_t)rp->rt_kbps + rp->rc_kbps + 1) / 2);
	if (rp->rc_kbps >= p->line_kbps) {
		/* recovered: back to line rate, nothing left to time */
		rp->limited = false;
		rp->rc_kbps = p->line_kbps;
	}
}

void
dcqcn_rp_timer(struct dcqcn_rp *rp, const struct dcqcn_params *p, uint64_t now)
{
	uint32_t g_inv = g_inv_of(p);

	/* a recovery takes F + (line - Rt) / R_AI timer events at most, a few
	 * hundred with sane parameters; a lapse of more events than
	 * DCQCN_MAX_CATCH_UP (a wheel that stopped) ends the limitation */
	for (uint32_t n = 0; rp->limited; n++) {
		bool alpha_due = rp->alpha_at <= now;
		bool timer_due = rp->timer_at <= now;

		if (!alpha_due && !timer_due)
			break;
		if (n == DCQCN_MAX_CATCH_UP) {
			rp->limited = false;
			rp->rc_kbps = p->line_kbps;
			break;
		}
		if (alpha_due && (!timer_due || rp->alpha_at <= rp->timer_at)) {
			/* K without a CNP: alpha = (1 - g) alpha */
			rp->alpha -= rp->alpha / g_inv;
			rp->alpha_at += p->alpha_ns;
		} else {
			rp->t_stage++;
			rp->timer_at += p->timer_ns;
			rp_increase(rp, p);
		}
	}
}

void
dcqcn_rp_sent(struct dcqcn_rp *rp, const struct dcqcn_params *p, uint64_t n)
{
	if (!rp->limited || p->bytes == 0)
		return;
	rp->bytes += n;
	while (rp->limited && rp->bytes >= p->bytes) {
		rp->bytes -= p->bytes;
		rp->b_stage++;
		rp_increase(rp, p);
	}
}

uint64_t
dcqcn_rp_next_ns(const struct dcqcn_rp *rp)
{
	uint64_t at = rp->alpha_at < rp->timer_at ? rp->alpha_at : rp->timer_at;

	return rp->limited && at != UINT64_MAX ? at : 0;
}
