/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * DCQCN (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments",
 * SIGCOMM 2015) as two pure state machines, one per role:
 *
 * - the notification point (NP, the receiver): a CE-marked packet of a flow
 *   asks for a CNP to the flow's sender, at most one per flow per
 *   `cnp_interval_ns` (the paper's N = 50 us, section 3.1);
 * - the reaction point (RP, the sender): the current rate Rc, the target
 *   rate Rt and the congestion estimate alpha, per QP. On a CNP:
 *   Rt = Rc, Rc = Rc (1 - alpha / 2), alpha = (1 - g) alpha + g; alpha decays
 *   as alpha = (1 - g) alpha every K without a CNP; the rate rises on two
 *   clocks, a timer (every T) and a byte counter (every B bytes sent), whose
 *   stage counts (since the last cut) choose the increase: fast recovery
 *   while both are below F (Rc = (Rt + Rc) / 2), additive increase
 *   (Rt += R_AI) once one of them reached F, hyper increase (Rt += R_HAI)
 *   once both exceeded F; then Rc = (Rt + Rc) / 2 (QCN's rate increase,
 *   IEEE 802.1Qau, as DCQCN section 3.1 adopts it).
 *
 * No clock, no I/O: every call takes `now` in nanoseconds and the caller
 * (lib/xport's transport engine, xport_cc.c) runs the deadline
 * dcqcn_rp_next_ns() on its timer wheel. Rates are in kb/s, alpha in
 * fixed point (DCQCN_ALPHA_ONE = 1.0), so a test can compute every step by
 * hand.
 */
#ifndef QP_DCQCN_H
#define QP_DCQCN_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DCQCN_ALPHA_SHIFT 16u                     /**< alpha fixed point: 16 fractional bits */
#define DCQCN_ALPHA_ONE (1u << DCQCN_ALPHA_SHIFT) /**< alpha = 1.0 */
#define DCQCN_MAX_CATCH_UP 65536u                 /**< events one dcqcn_rp_timer() call applies at most */

/** @name Defaults (the DCQCN paper's values unless noted) @{ */
#define DCQCN_DEF_G_INV 256u            /**< g = 1/256 (paper, section 3.1 and 5) */
#define DCQCN_DEF_ALPHA_US 55u          /**< K: alpha decay period without CNP (paper: 55 us) */
#define DCQCN_DEF_TIMER_US 55u          /**< T: rate increase timer (paper: 55 us) */
#define DCQCN_DEF_BYTES (10u << 20)     /**< B: byte counter (paper: 10 MB) */
#define DCQCN_DEF_F 5u                  /**< F: fast recovery stages (QCN's threshold, paper: 5) */
#define DCQCN_DEF_AI_MBPS 40u           /**< R_AI: additive increase (paper: 40 Mb/s at 40 GbE) */
#define DCQCN_DEF_HAI_MBPS 400u         /**< R_HAI: hyper increase (10 x R_AI, QCN's ratio) */
#define DCQCN_DEF_MIN_MBPS 1u           /**< floor of Rc (mlx5 rpg_min_rate: 1 Mb/s) */
#define DCQCN_DEF_CNP_US 50u            /**< N: NP's CNP interval per flow (paper: 50 us) */
/** @} */

/** Parameters of one port (all QPs of the port share them). */
struct dcqcn_params {
	uint32_t g_inv;          /**< g = 1 / g_inv (>= 1) */
	uint64_t alpha_ns;       /**< K */
	uint64_t timer_ns;       /**< T */
	uint64_t bytes;          /**< B */
	uint32_t f;              /**< F */
	uint32_t ai_kbps;        /**< R_AI */
	uint32_t hai_kbps;       /**< R_HAI */
	uint32_t min_kbps;       /**< floor of Rc */
	uint32_t line_kbps;      /**< line rate: the rate before the first CNP and the ceiling */
};

/** Fill @p p with the defaults above for a line rate of @p line_kbps. */
void dcqcn_params_default(struct dcqcn_params *p, uint32_t line_kbps);

/** Reaction point state of one QP. */
struct dcqcn_rp {
	bool limited;            /**< a CNP cut the rate and it has not recovered to line rate */
	uint32_t rc_kbps;        /**< current rate Rc (the pacer's rate while limited) */
	uint32_t rt_kbps;        /**< target rate Rt */
	uint32_t alpha;          /**< alpha, DCQCN_ALPHA_ONE = 1.0 */
	uint32_t t_stage;        /**< timer expiries since the last cut */
	uint32_t b_stage;        /**< byte counter expiries since the last cut */
	uint64_t bytes;          /**< bytes sent towards the next byte counter expiry */
	uint64_t alpha_at;       /**< next alpha decay (ns), valid while limited */
	uint64_t timer_at;       /**< next rate increase by timer (ns), valid while limited */
	uint64_t cuts;           /**< rate cuts so far */
};

/** Reset @p rp: line rate, alpha = 1 (the paper's initial alpha), no stages. */
void dcqcn_rp_init(struct dcqcn_rp *rp);

/** A CNP arrived at @p now: cut the rate (DCQCN section 3.1, "RP algorithm"). */
void dcqcn_rp_cnp(struct dcqcn_rp *rp, const struct dcqcn_params *p, uint64_t now);

/**
 * Run what is due at @p now: alpha decays (every K since the last CNP or
 * decay) and timer increases (every T). Each is applied as many times as
 * its period elapsed, in time order, so a late call gives the same rate as
 * punctual ones; a call more than DCQCN_MAX_CATCH_UP events late returns
 * the QP to line rate.
 */
void dcqcn_rp_timer(struct dcqcn_rp *rp, const struct dcqcn_params *p, uint64_t now);

/** @p n bytes left the QP (frame bytes): the byte counter may expire. */
void dcqcn_rp_sent(struct dcqcn_rp *rp, const struct dcqcn_params *p, uint64_t n);

/** @return the next deadline (ns) the RP needs a call of dcqcn_rp_timer() at, 0: none. */
uint64_t dcqcn_rp_next_ns(const struct dcqcn_rp *rp);

/** @return the pacer's rate in kb/s, 0 = not limited by DCQCN. */
static inline uint32_t
dcqcn_rp_rate(const struct dcqcn_rp *rp)
{
	return rp->limited ? rp->rc_kbps : 0;
}

/** Notification point state of one flow (QP). */
struct dcqcn_np {
	uint64_t last_cnp_ns;    /**< when the last CNP was sent */
	bool sent;               /**< a CNP was sent (last_cnp_ns is valid) */
};

/**
 * A CE-marked packet arrived at @p now.
 * @return true if a CNP is to be sent now (none in the last @p interval_ns);
 * the caller sends it, and the NP counts it as sent.
 */
static inline bool
dcqcn_np_ce(struct dcqcn_np *np, uint64_t interval_ns, uint64_t now)
{
	if (np->sent && now - np->last_cnp_ns < interval_ns)
		return false;
	np->sent = true;
	np->last_cnp_ns = now;
	return true;
}

#ifdef __cplusplus
}
#endif
#endif /* QP_DCQCN_H */
