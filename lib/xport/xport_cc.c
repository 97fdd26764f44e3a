/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Congestion control of the transport engine: QoS and ECN marking of the
 * frames a QP sends, the DCQCN notification point (a CE-marked packet ->
 * a CNP to its sender) and reaction point (a CNP -> dcqcn.h cuts the rate
 * the requester's pacer uses; XPORT_TIMER_CC raises it again), and the
 * delay-based reaction point (cc = delay: RTT probes -> delay_cc.h).
 *
 * As ConnectX does: the port's ECN codepoint replaces the ECN bits of the
 * AV's traffic class on every frame but CNPs; the AV's DSCP is honoured,
 * the port's DSCP used when the AV has none; CNPs go with their own DSCP
 * and not-ECT.
 */
#include "xport_internal.h"

static bool
cc_on(const struct xport_qp *qp)
{
	return qp->cfg.cc != NULL;
}

void
xport_cc_qos(const struct xport_cc *cc, struct roce_l3 *l3)
{
	if (!cc)
		return;
	uint8_t dscp = l3->traffic_class >> 2;
	if (dscp == 0)
		dscp = cc->dscp & 0x3f;
	l3->traffic_class = (uint8_t)(dscp << 2 | (cc->ecn & 3));
	/* 802.1Q PCP (bits 15:13 of the TCI) of a tagged frame without one */
	if (l3->vlan_present && (l3->vlan_tci >> 13) == 0)
		l3->vlan_tci = (uint16_t)(l3->vlan_tci | (cc->pcp & 7) << 13);
}

/* The L2/L3 fields of a CNP answering @p pkt (a UD QP has no connected peer). */
static void
cnp_l3(const struct xport_qp *qp, const struct roce_pkt *pkt, struct roce_l3 *l3)
{
	const struct xport_cc *cc = qp->cfg.cc;

	if (qp->cfg.type == XPORT_UD) {
		memset(l3, 0, sizeof(*l3));
		memcpy(l3->dmac, pkt->l3.smac, 6);
		memcpy(l3->smac, pkt->l3.dmac, 6);
		l3->vlan_present = pkt->l3.vlan_present;
		l3->vlan_tci = pkt->l3.vlan_tci & 0x0fff;
		l3->ipv6 = pkt->l3.ipv6;
		memcpy(l3->sgid, pkt->l3.dgid, 16);
		memcpy(l3->dgid, pkt->l3.sgid, 16);
		l3->hop_limit = 64;
		l3->udp_sport = roce_udp_sport(0, qp->cfg.qpn, pkt->deth.src_qpn);
	} else {
		*l3 = qp->tmpl_l3;
		l3->vlan_tci &= 0x0fff;
	}
	l3->ip_id = qp->tmpl_l3.ip_id;
	l3->traffic_class = (uint8_t)((cc->cnp_dscp & 0x3f) << 2); /* not-ECT */
	if (l3->vlan_present)
		l3->vlan_tci = (uint16_t)(l3->vlan_tci | (cc->cnp_pcp & 7) << 13);
}

/*
 * Notification point (DCQCN section 3.1, "NP algorithm"): an accepted
 * packet arrived with CE; send a CNP to its sender's QP unless one went
 * out in the last cnp_interval.
 */
void
xport_cc_rx_ce(struct xport_qp *qp, const struct roce_pkt *pkt, uint64_t now,
	       struct xport_out *out)
{
	cnt_inc(qp, XPORT_CNT_CE_RX);
	if (!cc_on(qp) || !qp->cfg.cc->np)
		return;
	if (out->nframes >= XPORT_OUT_FRAMES) {
		out->more = true;
		return; /* no room: the next CE mark asks again */
	}
	if (!dcqcn_np_ce(&qp->np, qp->cfg.cc->cnp_interval_ns, now))
		return;

	struct xport_frame *f = &out->frames[out->nframes];
	struct roce_l3 l3;
	uint32_t dest = qp->cfg.type == XPORT_UD ? pkt->deth.src_qpn : qp->cfg.dest_qpn;

	cnp_l3(qp, pkt, &l3);
	roce_cnp_init(&f->pkt, &l3, qp->cfg.pkey, dest);
	xport_frame_clear(f);
	xport_frame_commit(qp, out, f);
	cnt_inc(qp, XPORT_CNT_CNP_TX);
}

/*
 * Reaction point: a CNP for this QP. Checked as any packet is (P_Key, the
 * connected peer's GID); a CNP without BECN (Annex A17.9.3 sets it) is
 * malformed. Other fields are taken liberally (a PSN, FECN, AckReq): they
 * carry nothing for the reaction point. lib/roce's parser already dropped
 * CNPs with a payload or pad.
 */
void
xport_cc_rx_cnp(struct xport_qp *qp, const struct roce_pkt *pkt, uint64_t now)
{
	if (!pkt->becn || pkt->payload_len) {
		cnt_inc(qp, XPORT_CNT_CNP_MALFORMED);
		return;
	}
	if (!cc_on(qp) || qp->cfg.cc->algo != XPORT_CC_DCQCN ||
	    (qp->state != XPORT_STATE_RTS && qp->state != XPORT_STATE_SQD) ||
	    ((pkt->pkey ^ qp->cfg.pkey) & 0x7fff) != 0 ||
	    (qp->cfg.type != XPORT_UD && memcmp(pkt->l3.sgid, qp->cfg.av.dgid, 16) != 0)) {
		cnt_inc(qp, XPORT_CNT_CNP_IGNORED);
		return;
	}
	cnt_inc(qp, XPORT_CNT_CNP_RX);
	dcqcn_rp_cnp(&qp->rp, &qp->cfg.cc->dcqcn, now);
	cnt_inc(qp, XPORT_CNT_CC_RATE_CUTS);
	cnt_set(qp, XPORT_CNT_CC_RATE_KBPS, dcqcn_rp_rate(&qp->rp));
}

void
xport_cc_timer(struct xport_qp *qp, uint64_t now)
{
	if (!qp->rp.limited || !cc_on(qp))
		return;
	dcqcn_rp_timer(&qp->rp, &qp->cfg.cc->dcqcn, now);
	cnt_set(qp, XPORT_CNT_CC_RATE_KBPS, dcqcn_rp_rate(&qp->rp));
}

/*
 * cc = delay: time one AckReq packet at a time, from when it left to the
 * ACK (or READ response) that covers it. A retransmission voids the probe:
 * its ACK cannot tell which copy it answers (Karn's rule).
 */
void
xport_cc_probe_sent(struct xport_qp *qp, uint32_t psn, bool retransmit, uint64_t now)
{
	if (!cc_on(qp) || qp->cfg.cc->algo != XPORT_CC_DELAY)
		return;
	if (retransmit) {
		qp->probe_ns = 0;
		return;
	}
	if (qp->probe_ns == 0) {
		qp->probe_psn = psn;
		qp->probe_ns = now ? now : 1;
	}
}

/* Everything before @p psn is acknowledged: the probe's RTT, if it is covered. */
void
xport_cc_acked(struct xport_qp *qp, uint32_t psn, uint64_t now)
{
	if (qp->probe_ns == 0 || !psn_lt(qp->probe_psn, psn) || !cc_on(qp))
		return;
	uint64_t rtt = now > qp->probe_ns ? now - qp->probe_ns : 0;

	qp->probe_ns = 0;
	uint64_t cuts = qp->dl.cuts;
	delay_rp_sample(&qp->dl, &qp->cfg.cc->delay, rtt, now);
	cnt_inc(qp, XPORT_CNT_CC_RTT_SAMPLES);
	cnt_set(qp, XPORT_CNT_CC_RTT_US, rtt / 1000u);
	if (qp->dl.cuts != cuts)
		cnt_inc(qp, XPORT_CNT_CC_RATE_CUTS);
	cnt_set(qp, XPORT_CNT_CC_RATE_KBPS, delay_rp_rate(&qp->dl));
}

void
xport_cc_reset(struct xport_qp *qp)
{
	dcqcn_rp_init(&qp->rp);
	delay_rp_init(&qp->dl);
	qp->probe_ns = 0;
	memset(&qp->np, 0, sizeof(qp->np));
	cnt_set(qp, XPORT_CNT_CC_RATE_KBPS, 0);
}

const struct dcqcn_rp *
xport_qp_dcqcn(const struct xport_qp *qp)
{
	return &qp->rp;
}

const struct delay_rp *
xport_qp_delay(const struct xport_qp *qp)
{
	return &qp->dl;
}
