/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Delay-based reaction point (delay_cc.h): additive increase below the
 * target RTT, a decrease scaled by the excess delay above it (Swift,
 * Kumar et al., SIGCOMM 2020, section 3.1: "MD scaled by the delay
 * excess", at most once per RTT, bounded by max_mdf).
 */
#include "delay_cc.h"

#include <string.h>

void
delay_params_default(struct delay_params *p, uint32_t line_kbps)
{
	memset(p, 0, sizeof(*p));
	p->target_ns = DELAY_DEF_TARGET_US * 1000ull;
	p->ai_kbps = DELAY_DEF_AI_MBPS * 1000u;
	p->beta_pct = DELAY_DEF_BETA_PCT;
	p->max_md_pct = DELAY_DEF_MAX_MD_PCT;
	p->min_kbps = 1000u;
	p->line_kbps = line_kbps;
}

void
delay_rp_init(struct delay_rp *rp)
{
	memset(rp, 0, sizeof(*rp));
}

static void
rp_increase(struct delay_rp *rp, const struct delay_params *p)
{
	uint64_t rate = (uint64_t)rp->rate_kbps + p->ai_kbps;

	if (rate >= p->line_kbps) {
		rp->limited = false; /* back at line rate: unlimited */
		rp->rate_kbps = p->line_kbps;
		return;
	}
	rp->rate_kbps = (uint32_t)rate;
}

static void
rp_decrease(struct delay_rp *rp, const struct delay_params *p, uint64_t rtt_ns, uint64_t now)
{
	if (!rp->limited) {
		rp->limited = true; /* the first cut finds the QP at line rate */
		rp->rate_kbps = p->line_kbps;
	} else if (now - rp->last_cut_ns < rtt_ns) {
		return; /* once per RTT: the last cut has not shown in the delay yet */
	}
	/* rate x beta x (RTT - target) / RTT, at most max_md of the rate; the
	 * excess share in per mille first (no overflow for any RTT) */
	uint64_t excess_pm = (rtt_ns - p->target_ns) * 1000u / rtt_ns;
	uint64_t cut = (uint64_t)rp->rate_kbps * p->beta_pct * excess_pm / 100000u;
	uint64_t max_cut = (uint64_t)rp->rate_kbps * p->max_md_pct / 100u;

	if (cut > max_cut)
		cut = max_cut;
	rp->rate_kbps -= (uint32_t)cut;
	if (rp->rate_kbps < p->min_kbps)
		rp->rate_kbps = p->min_kbps;
	rp->last_cut_ns = now;
	rp->cuts++;
}

void
delay_rp_sample(struct delay_rp *rp, const struct delay_params *p, uint64_t rtt_ns, uint64_t now)
{
	rp->last_rtt_ns = rtt_ns;
	rp->samples++;
	if (rtt_ns > p->target_ns)
		rp_decrease(rp, p, rtt_ns, now);
	else if (rp->limited)
		rp_increase(rp, p);
}
