/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * From the dataplane to the applications (ai_event.h): engine events, link
 * changes and QP1 MADs handed to lib/ctl on the control thread.
 */
#include "ai_event.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ai_cq.h"
#include "ai_qp.h"
#include "daemon.h"
#include "gid.h"
#include "gsi.h"
#include "ipc.h"
#include "link.h"
#define QP_ERR_LOG_PER_SEC 20

/*
 * One line on stderr (the daemon's log) for a QP the engine moved to ERR,
 * with the counters that say why (a QP that ran out of retries: were frames
 * lost, NAKed, paced?), at most QP_ERR_LOG_PER_SEC a second (a peer that
 * dies takes all its QPs along). The counters are the worker's, read relaxed
 * as telemetry does.
 */
static void
log_qp_error(struct daemon *d, struct app_iface *ai, const struct worker_event *ev)
{
	const struct worker *w;
	struct ctr_set sum;
	uint32_t s;
	time_t now = time(NULL);

	if (now != ai->qp_err_sec) {
		if (ai->qp_err_logged > QP_ERR_LOG_PER_SEC)
			fprintf(stderr, "roce-daemon: %u more QP errors in that second not logged\n",
				ai->qp_err_logged - QP_ERR_LOG_PER_SEC);
		ai->qp_err_sec = now;
		ai->qp_err_logged = 0;
	}
	if (ai->qp_err_logged++ >= QP_ERR_LOG_PER_SEC) {
		ai->qp_err_quiet++;
		return;
	}
	memset(&sum, 0, sizeof(sum));
	w = d->n_workers ? d->worker[worker_of_qpn(ev->qpn, d->n_workers)] : NULL;
	s = d->n_workers ? ev->qpn / d->n_workers : 0;
	if (w != NULL && s < w->n_qp_slots)
		ctr_set_accumulate(&sum, &w->qp[s].ctr);
#define QPC(x) sum.v[ctr_of_xport(XPORT_CNT_##x)]
	fprintf(stderr,
		"roce-daemon: qp %u: error %s: timeouts %" PRIu64 ", seq NAKs %" PRIu64
		", retransmitted %" PRIu64 ", RNR NAKs %" PRIu64 ", window halved %" PRIu64
		", CNPs %" PRIu64 ", rate %" PRIu64 " kb/s, acks %" PRIu64 ", packets %" PRIu64
		", responses dropped stale %" PRIu64 " bad %" PRIu64 "\n",
		ev->qpn, xport_err_name((enum xport_err)ev->code), QPC(RETRY_TIMEOUT),
		QPC(NAK_SEQ_RX), QPC(RETRANSMIT_PKTS), QPC(RNR_NAK_RX), QPC(WINDOW_SHRINK),
		QPC(CNP_RX), QPC(CC_RATE_KBPS), QPC(ACK_RX), QPC(TX_PKTS), QPC(DROP_STALE_RESP),
		QPC(DROP_BAD_RESP));
#undef QPC
}

static void
qp_event(struct daemon *d, struct app_iface *ai, const struct worker_event *ev)
{
	struct ai_qp *q = ai_qp_of(ai, ev->qpn);

	if (q == NULL || q->info == NULL || q->cookie != ev->cookie)
		return; /* raised before a reset, or by a QP destroyed meanwhile
			 * (its QPN may be someone else's now) */
	if (ev->type == XPORT_EV_QP_ERROR) {
		if (ev->code == XPORT_ERR_MODIFY || q->error_reported)
			return; /* the application asked for ERR / the async event did it */
		log_qp_error(d, ai, ev);
		if (ev->code == XPORT_ERR_CQ_OVERFLOW)
			ctl_qp_event(ai->ctl, ev->qpn, CTL_QP_EV_FATAL, IBV_EVENT_QP_FATAL);
		else
			ctl_qp_event(ai->ctl, ev->qpn, CTL_QP_EV_ERROR, 0);
		q->error_reported = true;
		return;
	}
	switch (ev->code) {
	case ASYNC_QP_FATAL:
	case ASYNC_QP_REQ_ERR:
	case ASYNC_QP_ACCESS_ERR:
		ctl_qp_event(ai->ctl, ev->qpn, CTL_QP_EV_FATAL, ev->code);
		q->error_reported = true;
		break;
	case ASYNC_COMM_EST:
		ctl_qp_event(ai->ctl, ev->qpn, CTL_QP_EV_COMM_EST, 0);
		break;
	case ASYNC_SQ_DRAINED:
		ctl_qp_event(ai->ctl, ev->qpn, CTL_QP_EV_SQ_DRAINED, 0);
		break;
	default:
		/* LAST_WQE_REACHED: lib/qp raised it with the move to ERR */
		break;
	}
}

/*
 * d->on_event, from control_poll(): nothing in the control thread nests
 * any more (no request waits inside the loop), so events are handled at once.
 */
void
ai_on_event(struct daemon *d, const struct worker_event *ev, void *arg)
{
	struct app_iface *ai = arg;
	struct ai_cq *c;
	struct ai_srq *s;

	if (ev->qpn != UINT32_MAX) {
		qp_event(d, ai, ev);
		return;
	}
	if (ev->type == XPORT_EV_CQ_NOTIFY) {
		c = ai_cq_of_handle(ai, ev->handle);
		/* A channel the application does not read loses the byte, never blocks us. */
		if (c != NULL && ipc_cq_signal(c->info->ctrl, c->info->event_fd) != 0)
			ai->cq_signals_dropped++;
		return;
	}
	if (ev->type != XPORT_EV_ASYNC)
		return;
	if (ev->code == ASYNC_CQ_ERR) {
		c = ai_cq_of_handle(ai, ev->handle);
		if (c != NULL)
			ctl_raise_event(ai->ctl, IPC_OBJ_CQ, c->info->cqn, IBV_EVENT_CQ_ERR);
	} else if (ev->code == ASYNC_SRQ_LIMIT_REACHED || ev->code == ASYNC_SRQ_ERR) {
		s = ai_srq_of_handle(ai, ev->handle);
		if (s != NULL)
			ctl_raise_event(ai->ctl, IPC_OBJ_SRQ, s->info->srqn, ev->code);
	}
}

/* ---- rdma_cm: the CM's wire (lib/ctl ctl_cm_ops) ---- */

int
ai_cm_send(void *ctx, const struct cm_path *to, const uint8_t *mad)
{
	struct app_iface *ai = ctx;

	return ai->gsi ? gsi_send(ai->gsi, to, mad) : -ENETDOWN;
}

/* A MAD from QP1 (gsi_input()): to the CM. */
void
ai_gsi_rx(void *arg, const struct cm_path *from, const uint8_t *mad, uint32_t len)
{
	struct app_iface *ai = arg;

	ctl_cm_rx(ai->ctl, from, mad, len);
}

/*
 * d->on_link, from control_poll(): a port's link changed. ibv_query_port
 * answers the new state from now on, and every context of the port's device
 * gets IBV_EVENT_PORT_ACTIVE or IBV_EVENT_PORT_ERR when the state flips.
 */
void
ai_on_link(struct daemon *d, unsigned int port, const struct link_sample *now, void *arg)
{
	struct app_iface *ai = arg;
	struct ipc_port_attr attr;

	gid_port_attr(now->mtu != 0 ? now->mtu : d->port[port].mtu, now->up, now->speed_mbps, &attr);
	(void)ctl_set_port_attr(ai->ctl, port, 1, &attr);
}
