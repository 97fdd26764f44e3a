/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Delay-based reaction point (`cc = delay`), in the manner of TIMELY
 * (Mittal et al., SIGCOMM 2015) and Swift (Kumar et al., SIGCOMM 2020):
 * the sender measures the round-trip time of its own packets (an AckReq
 * packet to the ACK that covers it, one probe at a time, so about one
 * sample per RTT) and compares it with a target delay:
 *
 * - RTT <= target: additive increase, rate += R_AI per sample; reaching
 *   the line rate ends the limitation;
 * - RTT > target: multiplicative decrease scaled by the excess delay,
 *   rate -= rate x beta x (RTT - target) / RTT, at most max_md of the rate
 *   (Swift's max_mdf) and at most once per RTT (the last cut's effect is
 *   not yet visible before one RTT passed); never below the floor.
 *
 * The first sample above the target finds the QP at line rate (as DCQCN's
 * first CNP). No switch support (no ECN, no CNP) is needed: the queue the
 * flow crosses is seen in its delay.
 *
 * No clock, no I/O: every call takes `now` and the RTT in nanoseconds
 * (lib/xport's engine takes the samples, xport_cc.c), so a test can
 * compute every step by hand. Rates in kb/s.
 */
#ifndef QP_DELAY_CC_H
#define QP_DELAY_CC_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @name Defaults @{ */
#define DELAY_DEF_TARGET_US 500u     /**< target RTT (a software path on a shared host; Swift's fabric target is tens of us) */
#define DELAY_DEF_AI_MBPS 5u         /**< R_AI per sample (about one per RTT) */
#define DELAY_DEF_BETA_PCT 80u       /**< beta = 0.8 (Swift's beta) */
#define DELAY_DEF_MAX_MD_PCT 50u     /**< at most half the rate per cut (Swift's max_mdf) */
/** @} */

/** Parameters of one port (all QPs of the port share them). */
struct delay_params {
	uint64_t target_ns;     /**< target RTT */
	uint32_t ai_kbps;       /**< additive increase per sample at or below the target */
	uint32_t beta_pct;      /**< decrease scale: rate x beta x (RTT - target) / RTT */
	uint32_t max_md_pct;    /**< largest cut, in percent of the rate (1..100) */
	uint32_t min_kbps;      /**< floor of the rate */
	uint32_t line_kbps;     /**< line rate: the rate before the first cut and the ceiling */
};

/** Fill @p p with the defaults above for a line rate of @p line_kbps (floor 1 Mb/s). */
void delay_params_default(struct delay_params *p, uint32_t line_kbps);

/** Reaction point state of one QP. */
struct delay_rp {
	bool limited;           /**< a sample above the target cut the rate, not yet back at line rate */
	uint32_t rate_kbps;     /**< the pacer's rate while limited */
	uint64_t last_cut_ns;   /**< when the last decrease was applied */
	uint64_t last_rtt_ns;   /**< the last sample */
	uint64_t samples;       /**< samples so far */
	uint64_t cuts;          /**< decreases so far */
};

/** Reset @p rp: line rate, no samples. */
void delay_rp_init(struct delay_rp *rp);

/** An RTT sample of @p rtt_ns taken at @p now: increase or decrease the rate. */
void delay_rp_sample(struct delay_rp *rp, const struct delay_params *p, uint64_t rtt_ns,
		     uint64_t now);

/** @return the pacer's rate in kb/s, 0 = not limited. */
static inline uint32_t
delay_rp_rate(const struct delay_rp *rp)
{
	return rp->limited ? rp->rate_kbps : 0;
}

#ifdef __cplusplus
}
#endif
#endif /* QP_DELAY_CC_H */
