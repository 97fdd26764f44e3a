/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/cm: the agent, the connection state machine of IBTA vol1 chapter 12
 * (section 12.9, the CM state diagrams) as Linux's drivers/infiniband/core/cm.c
 * runs it: what each received message does in each state, what each
 * consumer call sends, and what each timer does. doc/rdma-cm.md ("The CM
 * protocol (lib/cm)") tells the whole story and where we differ.
 *
 * Re-entrancy: every handler finishes its own state changes before it
 * delivers an event, and touches nothing after, so the consumer may call
 * back into the agent from the event callback.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "cm.h"
#include "cm_internal.h"

/* rdma_cm's defaults over RoCE (Linux cma.c): packet lifetime exponent
 * CMA_IBOE_PACKET_LIFETIME, CM response timeout CMA_CM_RESPONSE_TIMEOUT,
 * max CM retries CMA_MAX_CM_RETRIES. */
#define CM_DEFAULT_PACKET_LIFE_TIME 16u
#define CM_DEFAULT_RESPONSE_TIMEOUT 20u
#define CM_DEFAULT_MAX_CM_RETRIES 15u
#define CM_DEFAULT_MAX_CONNS 1024u
#define CM_DEFAULT_MAX_LISTENERS 64u
#define CM_DEFAULT_MAX_PEER_WAIT_US (600 * UINT64_C(1000000))
#define CM_MAX_CONNS_LIMIT (1u << 24)
#define CM_MAX_LISTENERS_LIMIT 65536u

/* Malformed counters follow CM_MALFORMED_LIST, in order. */
#define CM_MALFORMED_CTR_CHECK(sym, name, desc) \
	_Static_assert(CM_CTR_MALFORMED_##sym - CM_CTR_MALFORMED_TRUNCATED == \
		       CM_MALFORMED_##sym - CM_MALFORMED_TRUNCATED, "CM_CTR_LIST malformed order");
CM_MALFORMED_LIST(CM_MALFORMED_CTR_CHECK)

/* ---- names -------------------------------------------------------------- */

static const char *const state_names[CM_STATE_COUNT] = {
#define CM_STATE_NAME(sym, name) [CM_STATE_##sym] = name,
	CM_STATE_LIST(CM_STATE_NAME)
#undef CM_STATE_NAME
};

static const char *const event_names[CM_EV_COUNT] = {
#define CM_EVENT_NAME(sym, name, desc) [CM_EV_##sym] = name,
	CM_EVENT_LIST(CM_EVENT_NAME)
#undef CM_EVENT_NAME
};

static const char *const ctr_names[CM_CTR_COUNT] = {
#define CM_CTR_NAME(sym, name, desc) [CM_CTR_##sym] = name,
	CM_CTR_LIST(CM_CTR_NAME)
#undef CM_CTR_NAME
};

const char *
cm_state_name(int s)
{
	return s >= 0 && s < CM_STATE_COUNT ? state_names[s] : "unknown";
}

const char *
cm_event_name(int t)
{
	return t >= 0 && t < CM_EV_COUNT ? event_names[t] : "unknown";
}

const char *
cm_ctr_name(int c)
{
	return c >= 0 && c < CM_CTR_COUNT ? ctr_names[c] : NULL;
}

/* ---- helpers ------------------------------------------------------------ */

static inline void
count(struct cm_agent *a, enum cm_ctr c)
{
	a->ctr[c]++;
}

static enum cm_ctr
tx_ctr(uint16_t attr)
{
	switch (attr) {
	case CM_ATTR_REQ: return CM_CTR_TX_REQ;
	case CM_ATTR_MRA: return CM_CTR_TX_MRA;
	case CM_ATTR_REJ: return CM_CTR_TX_REJ;
	case CM_ATTR_REP: return CM_CTR_TX_REP;
	case CM_ATTR_RTU: return CM_CTR_TX_RTU;
	case CM_ATTR_DREQ: return CM_CTR_TX_DREQ;
	case CM_ATTR_DREP: return CM_CTR_TX_DREP;
	case CM_ATTR_SIDR_REQ: return CM_CTR_TX_SIDR_REQ;
	case CM_ATTR_SIDR_REP: return CM_CTR_TX_SIDR_REP;
	default: return CM_CTR_TX_CPI;
	}
}

static enum cm_ctr
retry_ctr(uint16_t attr)
{
	switch (attr) {
	case CM_ATTR_REQ: return CM_CTR_RETRY_REQ;
	case CM_ATTR_REP: return CM_CTR_RETRY_REP;
	case CM_ATTR_DREQ: return CM_CTR_RETRY_DREQ;
	default: return CM_CTR_RETRY_SIDR_REQ;
	}
}

static uint16_t
mad_attr(const uint8_t *mad)
{
	return (uint16_t)(mad[16] << 8 | mad[17]);
}

/* Hand one MAD to the daemon, counted under @ctr. */
static void
xmit_raw(struct cm_agent *a, const struct cm_path *to, const uint8_t *mad, enum cm_ctr ctr)
{
	count(a, ctr);
	if (a->ops.send(a->ops.ctx, to, mad) < 0)
		count(a, CM_CTR_SEND_ERRORS);
}

/* Build @m (into @keep if given, so it can go again) and send it as a
 * first transmission. */
static int
xmit_msg(struct cm_agent *a, const struct cm_path *to, const struct cm_msg *m, uint8_t *keep)
{
	uint8_t buf[CM_MAD_SIZE];
	uint8_t *mad = keep ? keep : buf;

	if (cm_mad_build(m, mad) < 0)
		return -EINVAL;
	xmit_raw(a, to, mad, tx_ctr(m->hdr.attr_id));
	return 0;
}

static void
deliver(struct cm_agent *a, struct cm_conn *c, enum cm_event_type type, const struct cm_msg *m,
	const struct cm_path *from)
{
	struct cm_event ev = {
		.type = type,
		.conn = cm_conn_handle(a, c),
		.cookie = c->cookie,
		.listen_service_id = c->listen_sid,
		.msg = m,
		.from = from,
	};

	if (c->orphan)
		return;
	a->ops.event(a->ops.ctx, ev.cookie, &ev);
}

/* Our TIDs: a per-agent high half and the local comm ID (cm.c's
 * cm_form_tid() puts the MAD agent number and the local ID there). */
static uint64_t
our_tid(const struct cm_agent *a, const struct cm_conn *c)
{
	return (uint64_t)a->tid_hi << 32 | c->local_id;
}

static uint8_t
clamp5(unsigned int v)
{
	return (uint8_t)(v > 31 ? 31 : v);
}

/* How long a response may take: twice the packet lifetime (there and
 * back) plus the peer's response time, both IBA exponents (IBTA vol1
 * section 12.7.34 and 12.7.35: the REQ's CM response timeouts). */
static uint64_t
wait_us(uint8_t pkt_life, uint8_t response_timeout)
{
	return 2 * cm_iba_time_us(pkt_life) + cm_iba_time_us(response_timeout);
}

static uint64_t
timewait_us(const struct cm_agent *a, const struct cm_conn *c)
{
	if (a->cfg.timewait_us)
		return a->cfg.timewait_us;
	return cm_iba_time_us(clamp5(c->packet_life_time + 1u));
}

/*
 * TimeWait keeps the comm ID (a late DREQ is answered, a duplicate REQ
 * gets a stale REJ) but frees the QPN: as cm.c's cm_enter_timewait() ->
 * cm_cleanup_timewait(), only a live connection makes a REQ naming its
 * QPN stale, so a QPN reused at once connects again.
 */
static void
enter_timewait(struct cm_agent *a, struct cm_conn *c, uint64_t now)
{
	cm_remove_qpn(a, c);
	c->state = CM_STATE_TIMEWAIT;
	count(a, CM_CTR_TIMEWAIT_ENTER);
	cm_timer_arm(a, c, now + timewait_us(a, c));
}

static void
reset_to_idle(struct cm_agent *a, struct cm_conn *c)
{
	c->state = CM_STATE_IDLE;
	cm_timer_cancel(a, c);
	cm_remove_remote(a, c);
}

static void
start_retry(struct cm_agent *a, struct cm_conn *c, uint64_t wait, uint64_t now)
{
	c->retries_left = c->max_cm_retries;
	c->retry_us = wait;
	cm_timer_arm(a, c, now + wait);
}

/* A passive connection waits for its consumer at most as long as the
 * peer keeps retrying, and never past max_peer_wait_us: a REQ can claim
 * hours of retries (timeouts of 31 are 2.4 h each). */
static void
arm_peer_wait(struct cm_agent *a, struct cm_conn *c, uint64_t now)
{
	uint64_t wait = c->peer_wait_us < a->cfg.max_peer_wait_us ? c->peer_wait_us : a->cfg.max_peer_wait_us;

	cm_timer_arm(a, c, now + wait);
}

static const struct cm_listener *
find_listener(const struct cm_agent *a, uint64_t sid)
{
	for (uint32_t i = 0; i < a->cfg.max_listeners; i++) {
		const struct cm_listener *l = &a->listeners[i];

		if (l->used && (sid & l->mask) == (l->sid & l->mask))
			return l;
	}
	return NULL;
}

static uint64_t
be64_get(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static void
be64_put(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--) {
		p[i] = (uint8_t)v;
		v >>= 8;
	}
}

/* A REJ for a received message nobody holds (cm.c's cm_issue_rej): the
 * IDs swapped from the message's first two words, its TID echoed. */
static void
issue_rej(struct cm_agent *a, const struct cm_path *to, uint64_t tid, uint32_t local_id,
	  uint32_t remote_id, uint16_t reason, uint8_t msg_rejected)
{
	struct cm_msg m;

	cm_msg_init(&m, CM_ATTR_REJ, tid);
	m.rej.local_comm_id = local_id;
	m.rej.remote_comm_id = remote_id;
	m.rej.reason = reason;
	m.rej.message_rejected = msg_rejected;
	xmit_msg(a, to, &m, NULL);
}

/* A REJ for connection @c, formatted for state @state (cm.c's cm_format_rej). */
static void
conn_rej(struct cm_agent *a, struct cm_conn *c, enum cm_state state, uint16_t reason,
	 const void *ari, uint8_t ari_len, const void *pd, uint8_t pd_len)
{
	struct cm_msg m;

	cm_msg_init(&m, CM_ATTR_REJ, c->tid);
	m.rej.remote_comm_id = c->remote_id;
	m.rej.local_comm_id = c->local_id;
	m.rej.reason = reason;
	switch (state) {
	case CM_STATE_REQ_RCVD:
		m.rej.local_comm_id = 0;
		m.rej.message_rejected = CM_MSG_RESPONSE_REQ;
		break;
	case CM_STATE_MRA_REQ_SENT:
		m.rej.message_rejected = CM_MSG_RESPONSE_REQ;
		break;
	case CM_STATE_REP_RCVD:
	case CM_STATE_MRA_REP_SENT:
		m.rej.message_rejected = CM_MSG_RESPONSE_REP;
		break;
	default:
		m.rej.message_rejected = CM_MSG_RESPONSE_OTHER;
		break;
	}
	if (ari && ari_len) {
		m.rej.ari_len = ari_len;
		memcpy(m.rej.ari, ari, ari_len);
	}
	if (pd && pd_len) {
		m.rej.private_data_len = pd_len;
		memcpy(m.rej.private_data, pd, pd_len);
	}
	count(a, reason == CM_REJ_TIMEOUT ? CM_CTR_REJ_TX_TIMEOUT :
	      reason == CM_REJ_STALE_CONN ? CM_CTR_REJ_TX_STALE : CM_CTR_REJ_TX_CONSUMER);
	xmit_msg(a, &c->path, &m, NULL);
}

/* DREQ for an established connection (cm.c's cm_send_dreq_locked). */
static int
send_dreq(struct cm_agent *a, struct cm_conn *c, const void *pd, uint8_t pd_len, uint64_t now)
{
	struct cm_msg m;

	if (c->state != CM_STATE_ESTABLISHED || pd_len > CM_DREQ_PRIVATE_DATA_SIZE)
		return -EINVAL;
	cm_msg_init(&m, CM_ATTR_DREQ, our_tid(a, c));
	m.dreq.local_comm_id = c->local_id;
	m.dreq.remote_comm_id = c->remote_id;
	m.dreq.remote_qpn = c->remote_qpn;
	if (pd && pd_len) {
		m.dreq.private_data_len = pd_len;
		memcpy(m.dreq.private_data, pd, pd_len);
	}
	xmit_msg(a, &c->path, &m, c->msg);
	c->msg_valid = 1;
	c->state = CM_STATE_DREQ_SENT;
	start_retry(a, c, c->interval_us, now);
	return 0;
}

/* A stale connection was found (a REQ/REP names its remote QPN and CA
 * GUID): cm.c disconnects it. */
static void
disconnect_stale(struct cm_agent *a, struct cm_conn *s, uint64_t now)
{
	if (s->state == CM_STATE_ESTABLISHED)
		send_dreq(a, s, NULL, 0, now);
}

/* ---- received messages -------------------------------------------------- */

static void
dup_req(struct cm_agent *a, struct cm_conn *c, const struct cm_path *from)
{
	count(a, CM_CTR_DUP_REQ);
	switch (c->state) {
	case CM_STATE_MRA_REQ_SENT:
		/* Our MRA again (sent now if it was delayed). */
		if (c->msg_valid)
			xmit_raw(a, from, c->msg, CM_CTR_TX_MRA);
		break;
	case CM_STATE_REP_SENT:
	case CM_STATE_MRA_REP_RCVD:
		/* The REP was lost: send it again now rather than at the
		 * next retransmission (Linux drops the REQ and waits). */
		xmit_raw(a, from, c->msg, CM_CTR_RETRY_REP);
		break;
	case CM_STATE_TIMEWAIT:
		conn_rej(a, c, CM_STATE_TIMEWAIT, CM_REJ_STALE_CONN, NULL, 0, NULL, 0);
		break;
	default:
		break; /* REQ_RCVD: the consumer has not answered yet */
	}
}

static void
rx_req(struct cm_agent *a, const struct cm_path *from, const struct cm_msg *m, uint64_t now)
{
	const struct cm_req *req = &m->req;
	const struct cm_listener *l;
	struct cm_conn *c, *s;
	uint8_t pkt;

	c = cm_find_remote(a, req->local_comm_id, req->local_ca_guid, false);
	if (c) {
		dup_req(a, c, from);
		return;
	}
	s = cm_find_qpn(a, req->local_qpn, req->local_ca_guid, NULL);
	if (s) {
		count(a, CM_CTR_REJ_TX_STALE);
		issue_rej(a, from, m->hdr.tid, 0, req->local_comm_id, CM_REJ_STALE_CONN, CM_MSG_RESPONSE_REQ);
		disconnect_stale(a, s, now);
		return;
	}
	l = find_listener(a, req->service_id);
	if (!l) {
		count(a, CM_CTR_REJ_TX_INVALID_SID);
		issue_rej(a, from, m->hdr.tid, 0, req->local_comm_id, CM_REJ_INVALID_SERVICE_ID,
			  CM_MSG_RESPONSE_REQ);
		return;
	}
	c = cm_conn_alloc(a, l->cookie);
	if (!c) {
		/* Every slot is taken: refuse, never grow. */
		count(a, CM_CTR_REJ_TX_NO_RES);
		issue_rej(a, from, m->hdr.tid, 0, req->local_comm_id, CM_REJ_NO_RESOURCES,
			  CM_MSG_RESPONSE_REQ);
		return;
	}
	c->state = CM_STATE_REQ_RCVD;
	c->listen_sid = l->sid;
	c->remote_id = req->local_comm_id;
	c->remote_ca_guid = req->local_ca_guid;
	c->remote_qpn = req->local_qpn;
	c->service_id = req->service_id;
	c->tid = m->hdr.tid;
	c->path = *from;
	c->max_cm_retries = req->max_cm_retries;
	/* cm.c takes the packet lifetime as the REQ's local ACK timeout less one. */
	pkt = req->primary.local_ack_timeout;
	c->packet_life_time = pkt ? (uint8_t)(pkt - 1) : 0;
	/* Our REP waits for the active side's response time. */
	c->interval_us = wait_us(c->packet_life_time, req->local_cm_response_timeout);
	/* The active side retries its REQ this long before it gives up. */
	c->peer_wait_us = (uint64_t)(req->max_cm_retries + 1u) *
			  wait_us(c->packet_life_time, req->remote_cm_response_timeout);
	cm_insert_remote(a, c);
	arm_peer_wait(a, c, now);
	deliver(a, c, CM_EV_REQ_RECEIVED, m, from);
}

static void
rx_rep(struct cm_agent *a, const struct cm_path *from, const struct cm_msg *m, uint64_t now)
{
	const struct cm_rep *rep = &m->rep;
	struct cm_conn *c = cm_find_local(a, rep->remote_comm_id), *s;

	if (!c || c->sidr || !c->active) {
		count(a, CM_CTR_NO_CONN);
		return;
	}
	if (c->state == CM_STATE_REQ_SENT || c->state == CM_STATE_MRA_REQ_RCVD) {
		if (cm_find_remote(a, rep->local_comm_id, rep->local_ca_guid, false)) {
			count(a, CM_CTR_DUP_REP);
			return;
		}
		s = cm_find_qpn(a, rep->local_qpn, rep->local_ca_guid, c);
		if (s) {
			count(a, CM_CTR_REJ_TX_STALE);
			issue_rej(a, from, m->hdr.tid, rep->remote_comm_id, rep->local_comm_id,
				  CM_REJ_STALE_CONN, CM_MSG_RESPONSE_REP);
			disconnect_stale(a, s, now);
			return;
		}
		c->remote_id = rep->local_comm_id;
		c->remote_ca_guid = rep->local_ca_guid;
		c->remote_qpn = rep->local_qpn;
		cm_insert_remote(a, c);
		cm_timer_cancel(a, c);
		c->state = CM_STATE_REP_RCVD;
		deliver(a, c, CM_EV_REP_RECEIVED, m, from);
		return;
	}
	if (c->remote_id != rep->local_comm_id) {
		count(a, CM_CTR_NO_CONN);
		return;
	}
	/* A duplicate: the RTU or MRA again (cm.c's cm_dup_rep_handler). */
	count(a, CM_CTR_DUP_REP);
	if (c->state == CM_STATE_ESTABLISHED && c->msg_valid && mad_attr(c->msg) == CM_ATTR_RTU)
		xmit_raw(a, from, c->msg, CM_CTR_TX_RTU);
	else if (c->state == CM_STATE_MRA_REP_SENT && c->msg_valid)
		xmit_raw(a, from, c->msg, CM_CTR_TX_MRA);
}

/* The connection a message with (remote comm ID = ours, local comm ID =
 * the peer's) is for, or NULL. */
static struct cm_conn *
find_pair(const struct cm_agent *a, uint32_t ours, uint32_t theirs)
{
	struct cm_conn *c = cm_find_local(a, ours);

	return c && !c->sidr && c->remote_id == theirs ? c : NULL;
}

static void
rx_rtu(struct cm_agent *a, const struct cm_path *from, const struct cm_msg *m)
{
	struct cm_conn *c = find_pair(a, m->rtu.remote_comm_id, m->rtu.local_comm_id);

	if (!c || c->active) {
		count(a, CM_CTR_NO_CONN);
		return;
	}
	if (c->state != CM_STATE_REP_SENT && c->state != CM_STATE_MRA_REP_RCVD) {
		count(a, CM_CTR_DUP_RTU);
		return;
	}
	cm_timer_cancel(a, c);
	c->state = CM_STATE_ESTABLISHED;
	count(a, CM_CTR_ESTABLISHED);
	deliver(a, c, CM_EV_RTU_RECEIVED, m, from);
}

static void
rx_mra(struct cm_agent *a, const struct cm_path *from, const struct cm_msg *m, uint64_t now)
{
	const struct cm_mra *mra = &m->mra;
	struct cm_conn *c;
	uint64_t wait;

	/* An MRA of our REQ comes before we know the peer's comm ID. */
	c = find_pair(a, mra->remote_comm_id,
		      mra->message_mraed == CM_MSG_RESPONSE_REQ ? 0 : mra->local_comm_id);
	if (!c) {
		count(a, CM_CTR_NO_CONN);
		return;
	}
	if (c->state == CM_STATE_REQ_SENT && mra->message_mraed == CM_MSG_RESPONSE_REQ)
		c->state = CM_STATE_MRA_REQ_RCVD;
	else if (c->state == CM_STATE_REP_SENT && mra->message_mraed == CM_MSG_RESPONSE_REP)
		c->state = CM_STATE_MRA_REP_RCVD;
	else {
		count(a, CM_CTR_DUP_MRA);
		return;
	}
	/* cm.c: wait the service timeout plus the path's ACK timeout
	 * (packet lifetime + 1), retries left unchanged. */
	wait = cm_iba_time_us(mra->service_timeout) + cm_iba_time_us(clamp5(c->packet_life_time + 1u));
	c->retry_us = wait;
	cm_timer_arm(a, c, now + wait);
	deliver(a, c, CM_EV_MRA_RECEIVED, m, from);
}

static void
rx_rej(struct cm_agent *a, const struct cm_path *from, const struct cm_msg *m, uint64_t now)
{
	const struct cm_rej *rej = &m->rej;
	struct cm_conn *c;

	/* cm.c's cm_acquire_rejected_id(): a "timeout" REJ names the
	 * sender's CA GUID in its ARI and its comm ID; a rejected REQ comes
	 * before we know the peer's ID. */
	if (rej->reason == CM_REJ_TIMEOUT)
		c = rej->ari_len >= 8 ? cm_find_remote(a, rej->local_comm_id, be64_get(rej->ari), false) : NULL;
	else if (rej->message_rejected == CM_MSG_RESPONSE_REQ)
		c = find_pair(a, rej->remote_comm_id, 0);
	else
		c = find_pair(a, rej->remote_comm_id, rej->local_comm_id);
	if (!c) {
		count(a, CM_CTR_NO_CONN);
		return;
	}
	switch (c->state) {
	case CM_STATE_REQ_SENT:
	case CM_STATE_MRA_REQ_RCVD:
	case CM_STATE_REP_SENT:
	case CM_STATE_MRA_REP_RCVD:
	case CM_STATE_REQ_RCVD:
	case CM_STATE_MRA_REQ_SENT:
		cm_timer_cancel(a, c);
		if (rej->reason == CM_REJ_STALE_CONN)
			enter_timewait(a, c, now);
		else
			reset_to_idle(a, c);
		break;
	case CM_STATE_DREQ_SENT:
	case CM_STATE_REP_RCVD:
	case CM_STATE_MRA_REP_SENT:
	case CM_STATE_ESTABLISHED:
		cm_timer_cancel(a, c);
		enter_timewait(a, c, now);
		break;
	default:
		count(a, CM_CTR_DUP_REJ);
		return;
	}
	deliver(a, c, CM_EV_REJ_RECEIVED, m, from);
}

/* A DREP echoing a DREQ's TID, IDs swapped (cm.c's cm_issue_drep). */
static void
issue_drep(struct cm_agent *a, const struct cm_path *to, const struct cm_msg *dreq)
{
	struct cm_msg m;

	cm_msg_init(&m, CM_ATTR_DREP, dreq->hdr.tid);
	m.drep.local_comm_id = dreq->dreq.remote_comm_id;
	m.drep.remote_comm_id = dreq->dreq.local_comm_id;
	xmit_msg(a, to, &m, NULL);
}

/* The DREP of connection @p c in DREQ_RCVD (cm.c's cm_send_drep_locked()), then TimeWait. */
static void
conn_drep(struct cm_agent *a, struct cm_conn *c, const void *pd, uint8_t pd_len, uint64_t now_us)
{
	struct cm_msg m;

	cm_msg_init(&m, CM_ATTR_DREP, c->tid);
	m.drep.local_comm_id = c->local_id;
	m.drep.remote_comm_id = c->remote_id;
	m.drep.private_data_len = pd_len;
	if (pd_len)
		memcpy(m.drep.private_data, pd, pd_len);
	xmit_msg(a, &c->path, &m, c->msg);
	c->msg_valid = 1;
	enter_timewait(a, c, now_us);
}

static void
rx_dreq(struct cm_agent *a, const struct cm_path *from, const struct cm_msg *m, uint64_t now)
{
	const struct cm_dreq *dreq = &m->dreq;
	struct cm_conn *c = find_pair(a, dreq->remote_comm_id, dreq->local_comm_id);

	if (!c) {
		/* Linux answers a DREQ for no connection: the peer may have
		 * lost our DREP after we forgot the connection. */
		count(a, CM_CTR_NO_CONN);
		issue_drep(a, from, m);
		return;
	}
	if (c->local_qpn != dreq->remote_qpn) {
		count(a, CM_CTR_NO_CONN);
		return;
	}
	switch (c->state) {
	case CM_STATE_REP_SENT:
	case CM_STATE_DREQ_SENT:    /* crossing DREQs: answer, do not wait */
	case CM_STATE_MRA_REP_RCVD:
	case CM_STATE_ESTABLISHED:
		cm_timer_cancel(a, c);
		break;
	case CM_STATE_TIMEWAIT:
		/* Our DREP was lost (or the DREQs crossed and ours was
		 * answered first): a DREP again, echoing this DREQ's TID. */
		count(a, CM_CTR_DUP_DREQ);
		if (c->msg_valid && mad_attr(c->msg) == CM_ATTR_DREP) {
			be64_put(c->msg + 8, m->hdr.tid);
			xmit_raw(a, from, c->msg, CM_CTR_TX_DREP);
		} else {
			issue_drep(a, from, m);
		}
		return;
	case CM_STATE_IDLE:
		/* TimeWait is over but the peer still asks (our DREP was
		 * lost): answer as for no connection. cm.c drops it and the
		 * peer waits for its DREQ to time out. */
		count(a, CM_CTR_DUP_DREQ);
		issue_drep(a, from, m);
		return;
	default:                    /* DREQ_RCVD: the consumer answers */
		count(a, CM_CTR_DUP_DREQ);
		return;
	}
	c->state = CM_STATE_DREQ_RCVD;
	c->tid = m->hdr.tid;
	if (c->orphan) {
		/* Destroyed in DREQ_SENT (its DREQ lost, or crossing this one):
		 * no consumer will answer, so answer now, as cm.c's destroyed
		 * cm_id does from TimeWait; else the peer's DREQ is retried
		 * unanswered until it times out. */
		conn_drep(a, c, NULL, 0, now);
		return;
	}
	deliver(a, c, CM_EV_DREQ_RECEIVED, m, from);
}

static void
rx_drep(struct cm_agent *a, const struct cm_path *from, const struct cm_msg *m, uint64_t now)
{
	struct cm_conn *c = find_pair(a, m->drep.remote_comm_id, m->drep.local_comm_id);

	if (!c) {
		count(a, CM_CTR_NO_CONN);
		return;
	}
	if (c->state != CM_STATE_DREQ_SENT && c->state != CM_STATE_DREQ_RCVD) {
		count(a, CM_CTR_DUP_DREP);
		return;
	}
	cm_timer_cancel(a, c);
	enter_timewait(a, c, now);
	deliver(a, c, CM_EV_DREP_RECEIVED, m, from);
}

static void
send_sidr_rep(struct cm_agent *a, const struct cm_path *to, uint64_t tid, uint32_t request_id,
	      uint64_t sid, const struct cm_sidr_rep *rep)
{
	struct cm_msg m;

	cm_msg_init(&m, CM_ATTR_SIDR_REP, tid);
	if (rep)
		m.sidr_rep = *rep;
	m.sidr_rep.request_id = request_id;
	m.sidr_rep.service_id = sid;
	xmit_msg(a, to, &m, NULL);
}

static void
rx_sidr_req(struct cm_agent *a, const struct cm_path *from, const struct cm_msg *m, uint64_t now)
{
	const struct cm_sidr_req *req = &m->sidr_req;
	uint64_t who = cm_gid_fold(from->remote_gid);
	const struct cm_listener *l;
	struct cm_conn *c;

	if (cm_find_remote(a, req->request_id, who, true)) {
		count(a, CM_CTR_DUP_SIDR_REQ);
		return;
	}
	l = find_listener(a, req->service_id);
	if (!l) {
		struct cm_sidr_rep rep = {.status = CM_SIDR_UNSUPPORTED};

		count(a, CM_CTR_SIDR_NO_LISTENER);
		send_sidr_rep(a, from, m->hdr.tid, req->request_id, req->service_id, &rep);
		return;
	}
	c = cm_conn_alloc(a, l->cookie);
	if (!c) {
		count(a, CM_CTR_SIDR_NO_RES);
		return;
	}
	c->sidr = 1;
	c->state = CM_STATE_SIDR_REQ_RCVD;
	c->listen_sid = l->sid;
	c->remote_id = req->request_id;
	c->remote_ca_guid = who;
	c->service_id = req->service_id;
	c->tid = m->hdr.tid;
	c->path = *from;
	c->packet_life_time = a->cfg.packet_life_time;
	/* The requester's wait is unknown: rdma_cm's defaults bound it. */
	c->peer_wait_us = (CM_DEFAULT_MAX_CM_RETRIES + 1u) *
			  wait_us(c->packet_life_time, CM_DEFAULT_RESPONSE_TIMEOUT);
	cm_insert_remote(a, c);
	arm_peer_wait(a, c, now);
	deliver(a, c, CM_EV_SIDR_REQ_RECEIVED, m, from);
}

static void
rx_sidr_rep(struct cm_agent *a, const struct cm_path *from, const struct cm_msg *m)
{
	struct cm_conn *c = cm_find_local(a, m->sidr_rep.request_id);

	if (!c || !c->sidr || c->state != CM_STATE_SIDR_REQ_SENT) {
		count(a, CM_CTR_DUP_SIDR_REP);
		return;
	}
	cm_timer_cancel(a, c);
	c->state = CM_STATE_IDLE;
	deliver(a, c, CM_EV_SIDR_REP_RECEIVED, m, from);
}

/* ClassPortInfo Get: our (minimal) ClassPortInfo, no redirection. */
static void
rx_cpi(struct cm_agent *a, const struct cm_path *from, const struct cm_msg *m)
{
	struct cm_msg r;

	if (m->hdr.method != CM_MAD_METHOD_GET)
		return;
	cm_msg_init(&r, CM_ATTR_CLASS_PORT_INFO, m->hdr.tid);
	r.hdr.method = CM_MAD_METHOD_GET_RESP;
	r.cpi.base_version = CM_MAD_BASE_VERSION;
	r.cpi.class_version = CM_MAD_CLASS_VERSION;
	r.cpi.resp_time_value = a->cfg.cpi_resp_time;
	xmit_msg(a, from, &r, NULL);
}

static const enum cm_ctr rx_ctrs[] = {
	[CM_ATTR_REQ - CM_ATTR_REQ] = CM_CTR_RX_REQ,
	[CM_ATTR_MRA - CM_ATTR_REQ] = CM_CTR_RX_MRA,
	[CM_ATTR_REJ - CM_ATTR_REQ] = CM_CTR_RX_REJ,
	[CM_ATTR_REP - CM_ATTR_REQ] = CM_CTR_RX_REP,
	[CM_ATTR_RTU - CM_ATTR_REQ] = CM_CTR_RX_RTU,
	[CM_ATTR_DREQ - CM_ATTR_REQ] = CM_CTR_RX_DREQ,
	[CM_ATTR_DREP - CM_ATTR_REQ] = CM_CTR_RX_DREP,
	[CM_ATTR_SIDR_REQ - CM_ATTR_REQ] = CM_CTR_RX_SIDR_REQ,
	[CM_ATTR_SIDR_REP - CM_ATTR_REQ] = CM_CTR_RX_SIDR_REP,
};

int
cm_agent_rx(struct cm_agent *a, const struct cm_path *from, const uint8_t *mad, size_t len, uint64_t now_us)
{
	struct cm_msg m;
	int rc;

	if (!a || !from)
		return -EINVAL;
	rc = cm_mad_parse(mad, len, &m);
	if (rc != CM_MAD_OK) {
		count(a, (enum cm_ctr)(CM_CTR_MALFORMED_TRUNCATED + rc - CM_MALFORMED_TRUNCATED));
		return rc;
	}
	if (m.hdr.attr_id == CM_ATTR_CLASS_PORT_INFO) {
		count(a, CM_CTR_RX_CPI);
		rx_cpi(a, from, &m);
		return 0;
	}
	count(a, rx_ctrs[m.hdr.attr_id - CM_ATTR_REQ]);
	switch (m.hdr.attr_id) {
	case CM_ATTR_REQ: rx_req(a, from, &m, now_us); break;
	case CM_ATTR_MRA: rx_mra(a, from, &m, now_us); break;
	case CM_ATTR_REJ: rx_rej(a, from, &m, now_us); break;
	case CM_ATTR_REP: rx_rep(a, from, &m, now_us); break;
	case CM_ATTR_RTU: rx_rtu(a, from, &m); break;
	case CM_ATTR_DREQ: rx_dreq(a, from, &m, now_us); break;
	case CM_ATTR_DREP: rx_drep(a, from, &m, now_us); break;
	case CM_ATTR_SIDR_REQ: rx_sidr_req(a, from, &m, now_us); break;
	case CM_ATTR_SIDR_REP: rx_sidr_rep(a, from, &m); break;
	default: break;
	}
	return 0;
}

/* ---- timers ------------------------------------------------------------- */

static void
give_up(struct cm_agent *a, struct cm_conn *c, uint64_t now)
{
	switch (c->state) {
	case CM_STATE_REQ_SENT:
	case CM_STATE_MRA_REQ_RCVD:
		count(a, CM_CTR_TIMEOUT_REQ);
		reset_to_idle(a, c);
		deliver(a, c, CM_EV_REQ_TIMEOUT, NULL, NULL);
		break;
	case CM_STATE_REP_SENT:
	case CM_STATE_MRA_REP_RCVD:
		count(a, CM_CTR_TIMEOUT_REP);
		reset_to_idle(a, c);
		deliver(a, c, CM_EV_REP_TIMEOUT, NULL, NULL);
		break;
	case CM_STATE_DREQ_SENT:
		count(a, CM_CTR_TIMEOUT_DREQ);
		enter_timewait(a, c, now);
		deliver(a, c, CM_EV_DREQ_TIMEOUT, NULL, NULL);
		break;
	default: /* SIDR_REQ_SENT */
		count(a, CM_CTR_TIMEOUT_SIDR_REQ);
		c->state = CM_STATE_IDLE;
		deliver(a, c, CM_EV_SIDR_REQ_TIMEOUT, NULL, NULL);
		break;
	}
}

static void
on_timer(struct cm_agent *a, struct cm_conn *c, uint64_t now)
{
	switch (c->state) {
	case CM_STATE_REQ_SENT:
	case CM_STATE_MRA_REQ_RCVD:
	case CM_STATE_REP_SENT:
	case CM_STATE_MRA_REP_RCVD:
	case CM_STATE_DREQ_SENT:
	case CM_STATE_SIDR_REQ_SENT:
		if (c->retries_left == 0) {
			give_up(a, c, now);
			return;
		}
		c->retries_left--;
		xmit_raw(a, &c->path, c->msg, retry_ctr(mad_attr(c->msg)));
		cm_timer_arm(a, c, now + c->retry_us);
		return;
	case CM_STATE_TIMEWAIT:
		count(a, CM_CTR_TIMEWAIT_EXIT);
		if (c->orphan) {
			cm_conn_free(a, c);
			return;
		}
		reset_to_idle(a, c);
		deliver(a, c, CM_EV_TIMEWAIT_EXIT, NULL, NULL);
		return;
	case CM_STATE_REQ_RCVD:
	case CM_STATE_MRA_REQ_SENT:
	case CM_STATE_SIDR_REQ_RCVD:
		/* The consumer never answered and the peer has given up. */
		count(a, CM_CTR_PEER_ABANDONED);
		reset_to_idle(a, c);
		deliver(a, c, CM_EV_PEER_TIMEOUT, NULL, NULL);
		return;
	default:
		return;
	}
}

unsigned int
cm_agent_expire(struct cm_agent *a, uint64_t now_us)
{
	unsigned int n = 0;
	struct cm_conn *c;

	if (!a)
		return 0;
	while (n < CM_EXPIRE_BATCH && (c = cm_timer_due(a, now_us)) != NULL) {
		cm_timer_cancel(a, c);
		n++;
		on_timer(a, c, now_us);
	}
	return n;
}

/* ---- consumer calls ----------------------------------------------------- */

int
cm_listen(struct cm_agent *a, uint64_t service_id, uint64_t mask, uint64_t cookie)
{
	struct cm_listener *free_l = NULL;

	if (!a)
		return -EINVAL;
	if (mask == 0)
		mask = UINT64_MAX;
	for (uint32_t i = 0; i < a->cfg.max_listeners; i++) {
		struct cm_listener *l = &a->listeners[i];

		if (!l->used) {
			if (!free_l)
				free_l = l;
		} else if ((l->sid & l->mask & mask) == (service_id & l->mask & mask)) {
			return -EBUSY;
		}
	}
	if (!free_l)
		return -ENOSPC;
	*free_l = (struct cm_listener){.sid = service_id & mask, .mask = mask, .cookie = cookie, .used = 1};
	return 0;
}

int
cm_unlisten(struct cm_agent *a, uint64_t service_id)
{
	if (!a)
		return -EINVAL;
	for (uint32_t i = 0; i < a->cfg.max_listeners; i++) {
		struct cm_listener *l = &a->listeners[i];

		if (l->used && l->sid == (service_id & l->mask)) {
			l->used = 0;
			return 0;
		}
	}
	return -ENOENT;
}

int
cm_send_req(struct cm_agent *a, uint64_t cookie, const struct cm_req_param *p, uint64_t now_us,
	    cm_conn_t *conn)
{
	struct cm_conn *c;
	struct cm_msg m;

	if (!a || !p || !conn || p->req.private_data_len > CM_REQ_PRIVATE_DATA_SIZE ||
	    p->req.max_cm_retries > 15)
		return -EINVAL;
	c = cm_conn_alloc(a, cookie);
	if (!c)
		return -ENOSPC;
	c->active = 1;
	c->path = p->path;
	c->service_id = p->req.service_id;
	c->local_qpn = p->req.local_qpn & 0xFFFFFF;
	c->max_cm_retries = p->req.max_cm_retries;
	c->packet_life_time = p->packet_life_time ? clamp5(p->packet_life_time) : a->cfg.packet_life_time;
	/* cm.c: twice the packet lifetime plus the passive side's response time. */
	c->interval_us = wait_us(c->packet_life_time, p->req.remote_cm_response_timeout);
	c->tid = our_tid(a, c);
	cm_msg_init(&m, CM_ATTR_REQ, c->tid);
	m.req = p->req;
	m.req.local_comm_id = c->local_id;
	if (!m.req.local_ca_guid)
		m.req.local_ca_guid = a->cfg.ca_guid;
	c->local_ca_guid = m.req.local_ca_guid;
	if (xmit_msg(a, &c->path, &m, c->msg) < 0) {
		cm_conn_free(a, c);
		return -EINVAL;
	}
	c->msg_valid = 1;
	c->state = CM_STATE_REQ_SENT;
	start_retry(a, c, c->interval_us, now_us);
	*conn = cm_conn_handle(a, c);
	return 0;
}

int
cm_send_rep(struct cm_agent *a, cm_conn_t conn, const struct cm_rep *rep, uint64_t now_us)
{
	struct cm_conn *c = cm_conn_get(a, conn);
	struct cm_msg m;

	if (!c)
		return -ENOENT;
	if (!rep || (c->state != CM_STATE_REQ_RCVD && c->state != CM_STATE_MRA_REQ_SENT) ||
	    rep->private_data_len > CM_REP_PRIVATE_DATA_SIZE)
		return -EINVAL;
	cm_msg_init(&m, CM_ATTR_REP, c->tid);
	m.rep = *rep;
	m.rep.local_comm_id = c->local_id;
	m.rep.remote_comm_id = c->remote_id;
	if (!m.rep.local_ca_guid)
		m.rep.local_ca_guid = a->cfg.ca_guid;
	if (xmit_msg(a, &c->path, &m, c->msg) < 0)
		return -EINVAL;
	c->msg_valid = 1;
	c->local_ca_guid = m.rep.local_ca_guid;
	c->local_qpn = rep->local_qpn & 0xFFFFFF;
	c->state = CM_STATE_REP_SENT;
	start_retry(a, c, c->interval_us, now_us);
	return 0;
}

int
cm_send_rtu(struct cm_agent *a, cm_conn_t conn, const void *pd, uint8_t pd_len, uint64_t now_us)
{
	struct cm_conn *c = cm_conn_get(a, conn);
	struct cm_msg m;

	(void)now_us;
	if (!c)
		return -ENOENT;
	if ((c->state != CM_STATE_REP_RCVD && c->state != CM_STATE_MRA_REP_SENT) ||
	    pd_len > CM_RTU_PRIVATE_DATA_SIZE || (pd_len && !pd))
		return -EINVAL;
	cm_msg_init(&m, CM_ATTR_RTU, c->tid);
	m.rtu.local_comm_id = c->local_id;
	m.rtu.remote_comm_id = c->remote_id;
	m.rtu.private_data_len = pd_len;
	if (pd_len)
		memcpy(m.rtu.private_data, pd, pd_len);
	xmit_msg(a, &c->path, &m, c->msg);
	c->msg_valid = 1;
	c->state = CM_STATE_ESTABLISHED;
	count(a, CM_CTR_ESTABLISHED);
	return 0;
}

int
cm_establish(struct cm_agent *a, cm_conn_t conn, uint64_t now_us)
{
	struct cm_conn *c = cm_conn_get(a, conn);

	(void)now_us;
	if (!c)
		return -ENOENT;
	if (c->state != CM_STATE_REP_SENT && c->state != CM_STATE_MRA_REP_RCVD)
		return -EINVAL;
	cm_timer_cancel(a, c);
	c->state = CM_STATE_ESTABLISHED;
	count(a, CM_CTR_ESTABLISHED);
	return 0;
}

int
cm_send_rej(struct cm_agent *a, cm_conn_t conn, uint16_t reason, const void *ari, uint8_t ari_len,
	    const void *pd, uint8_t pd_len, uint64_t now_us)
{
	struct cm_conn *c = cm_conn_get(a, conn);
	enum cm_state state;

	if (!c)
		return -ENOENT;
	if (ari_len > CM_REJ_ARI_SIZE || pd_len > CM_REJ_PRIVATE_DATA_SIZE || (ari_len && !ari) ||
	    (pd_len && !pd))
		return -EINVAL;
	state = (enum cm_state)c->state;
	switch (state) {
	case CM_STATE_REQ_SENT:
	case CM_STATE_MRA_REQ_RCVD:
	case CM_STATE_REQ_RCVD:
	case CM_STATE_MRA_REQ_SENT:
	case CM_STATE_REP_RCVD:
	case CM_STATE_MRA_REP_SENT:
		reset_to_idle(a, c);
		break;
	case CM_STATE_REP_SENT:
	case CM_STATE_MRA_REP_RCVD:
		cm_timer_cancel(a, c);
		enter_timewait(a, c, now_us);
		break;
	default:
		return -EINVAL;
	}
	conn_rej(a, c, state, reason, ari, ari_len, pd, pd_len);
	return 0;
}

int
cm_send_mra(struct cm_agent *a, cm_conn_t conn, uint8_t service_timeout, unsigned int flags,
	    const void *pd, uint8_t pd_len, uint64_t now_us)
{
	struct cm_conn *c = cm_conn_get(a, conn);
	uint8_t next, mraed;
	struct cm_msg m;

	if (!c)
		return -ENOENT;
	if (pd_len > CM_MRA_PRIVATE_DATA_SIZE || (pd_len && !pd))
		return -EINVAL;
	if (c->state == CM_STATE_REQ_RCVD) {
		next = CM_STATE_MRA_REQ_SENT;
		mraed = CM_MSG_RESPONSE_REQ;
	} else if (c->state == CM_STATE_REP_RCVD) {
		next = CM_STATE_MRA_REP_SENT;
		mraed = CM_MSG_RESPONSE_REP;
	} else {
		return -EINVAL;
	}
	cm_msg_init(&m, CM_ATTR_MRA, c->tid);
	m.mra.local_comm_id = c->local_id;
	m.mra.remote_comm_id = c->remote_id;
	m.mra.message_mraed = mraed;
	m.mra.service_timeout = service_timeout & 0x1f;
	m.mra.private_data_len = pd_len;
	if (pd_len)
		memcpy(m.mra.private_data, pd, pd_len);
	if (cm_mad_build(&m, c->msg) < 0)
		return -EINVAL;
	c->msg_valid = 1;
	if (!(flags & CM_MRA_DELAY))
		xmit_raw(a, &c->path, c->msg, CM_CTR_TX_MRA);
	c->state = next;
	c->service_timeout = m.mra.service_timeout;
	if (next == CM_STATE_MRA_REQ_SENT) {
		/* The active side now waits the service timeout per try. */
		uint64_t per_try = cm_iba_time_us(c->service_timeout) +
				   cm_iba_time_us(clamp5(c->packet_life_time + 1u));

		c->peer_wait_us += (uint64_t)(c->max_cm_retries + 1u) * per_try;
		arm_peer_wait(a, c, now_us);
	}
	return 0;
}

int
cm_send_dreq(struct cm_agent *a, cm_conn_t conn, const void *pd, uint8_t pd_len, uint64_t now_us)
{
	struct cm_conn *c = cm_conn_get(a, conn);

	if (!c)
		return -ENOENT;
	if (pd_len && !pd)
		return -EINVAL;
	/* rdma_disconnect(): a DREQ, or the DREP if the peer's DREQ came first. */
	if (c->state == CM_STATE_DREQ_RCVD)
		return cm_send_drep(a, conn, pd, pd_len, now_us);
	return send_dreq(a, c, pd, pd_len, now_us);
}

int
cm_send_drep(struct cm_agent *a, cm_conn_t conn, const void *pd, uint8_t pd_len, uint64_t now_us)
{
	struct cm_conn *c = cm_conn_get(a, conn);

	if (!c)
		return -ENOENT;
	if (c->state != CM_STATE_DREQ_RCVD || pd_len > CM_DREP_PRIVATE_DATA_SIZE || (pd_len && !pd))
		return -EINVAL;
	conn_drep(a, c, pd, pd_len, now_us);
	return 0;
}

int
cm_send_sidr_req(struct cm_agent *a, uint64_t cookie, const struct cm_sidr_req_param *p, uint64_t now_us,
		 cm_conn_t *conn)
{
	struct cm_conn *c;
	struct cm_msg m;

	if (!a || !p || !conn || p->private_data_len > CM_SIDR_REQ_PRIVATE_DATA_SIZE ||
	    (p->private_data_len && !p->private_data) || p->max_cm_retries > 15)
		return -EINVAL;
	c = cm_conn_alloc(a, cookie);
	if (!c)
		return -ENOSPC;
	c->active = 1;
	c->sidr = 1;
	c->path = p->path;
	c->service_id = p->service_id;
	c->max_cm_retries = p->max_cm_retries;
	c->packet_life_time = a->cfg.packet_life_time;
	c->interval_us = wait_us(c->packet_life_time, p->timeout);
	c->tid = our_tid(a, c);
	cm_msg_init(&m, CM_ATTR_SIDR_REQ, c->tid);
	m.sidr_req.request_id = c->local_id;
	m.sidr_req.pkey = p->pkey;
	m.sidr_req.service_id = p->service_id;
	m.sidr_req.private_data_len = p->private_data_len;
	if (p->private_data_len)
		memcpy(m.sidr_req.private_data, p->private_data, p->private_data_len);
	xmit_msg(a, &c->path, &m, c->msg);
	c->msg_valid = 1;
	c->state = CM_STATE_SIDR_REQ_SENT;
	start_retry(a, c, c->interval_us, now_us);
	*conn = cm_conn_handle(a, c);
	return 0;
}

int
cm_send_sidr_rep(struct cm_agent *a, cm_conn_t conn, const struct cm_sidr_rep *rep, uint64_t now_us)
{
	struct cm_conn *c = cm_conn_get(a, conn);

	(void)now_us;
	if (!c)
		return -ENOENT;
	if (!rep || c->state != CM_STATE_SIDR_REQ_RCVD || rep->private_data_len > CM_SIDR_REP_PRIVATE_DATA_SIZE ||
	    rep->info_len > CM_SIDR_REP_INFO_SIZE)
		return -EINVAL;
	send_sidr_rep(a, &c->path, c->tid, c->remote_id, c->service_id, rep);
	reset_to_idle(a, c);
	return 0;
}

int
cm_conn_destroy(struct cm_agent *a, cm_conn_t conn, uint64_t now_us)
{
	struct cm_conn *c = cm_conn_get(a, conn);
	enum cm_state state;
	uint8_t guid[8];

	if (!c)
		return -ENOENT;
	state = (enum cm_state)c->state;
	/* As cm.c's cm_destroy_id(), state by state, but for the DREQ: cm.c
	 * cancels its retries and enters TimeWait, so a lost DREQ leaves the
	 * peer connected (rping's server waits for DISCONNECTED forever); an
	 * orphaned connection keeps them, silently, until the DREP or the last
	 * retry, then TimeWait (session 16). */
	switch (state) {
	case CM_STATE_SIDR_REQ_RCVD: {
		struct cm_sidr_rep rep = {.status = CM_SIDR_REJECT};

		send_sidr_rep(a, &c->path, c->tid, c->remote_id, c->service_id, &rep);
		break;
	}
	case CM_STATE_REQ_SENT:
	case CM_STATE_MRA_REQ_RCVD:
		/* The REQ is withdrawn: "timeout", our CA GUID in the ARI. */
		be64_put(guid, c->local_ca_guid);
		conn_rej(a, c, state, CM_REJ_TIMEOUT, guid, sizeof(guid), NULL, 0);
		break;
	case CM_STATE_REQ_RCVD:
	case CM_STATE_MRA_REQ_SENT:
	case CM_STATE_REP_RCVD:
	case CM_STATE_MRA_REP_SENT:
		conn_rej(a, c, state, CM_REJ_CONSUMER_DEFINED, NULL, 0, NULL, 0);
		break;
	case CM_STATE_REP_SENT:
	case CM_STATE_MRA_REP_RCVD:
		conn_rej(a, c, state, CM_REJ_CONSUMER_DEFINED, NULL, 0, NULL, 0);
		cm_timer_cancel(a, c);
		enter_timewait(a, c, now_us);
		break;
	case CM_STATE_ESTABLISHED:
		send_dreq(a, c, NULL, 0, now_us); /* retried as a DREQ_SENT one */
		break;
	case CM_STATE_DREQ_SENT:
		break;
	case CM_STATE_DREQ_RCVD:
		cm_send_drep(a, conn, NULL, 0, now_us);
		break;
	default:
		break;
	}
	if (c->state == CM_STATE_TIMEWAIT || c->state == CM_STATE_DREQ_SENT) {
		/* Held, silent, until the TimeWait ends (after the DREP or the
		 * DREQ's last retry): the comm ID and the stale-connection entry
		 * stay taken. */
		c->orphan = 1;
		return 0;
	}
	cm_conn_free(a, c);
	return 0;
}

int
cm_conn_set_cookie(struct cm_agent *a, cm_conn_t conn, uint64_t cookie)
{
	struct cm_conn *c = cm_conn_get(a, conn);

	if (!c)
		return -ENOENT;
	c->cookie = cookie;
	return 0;
}

int
cm_conn_query(const struct cm_agent *a, cm_conn_t conn, struct cm_conn_info *info)
{
	const struct cm_conn *c = cm_conn_get(a, conn);

	if (!c)
		return -ENOENT;
	if (!info)
		return -EINVAL;
	*info = (struct cm_conn_info){
		.state = (enum cm_state)c->state,
		.cookie = c->cookie,
		.local_comm_id = c->local_id,
		.remote_comm_id = c->remote_id,
		.remote_ca_guid = c->sidr ? 0 : c->remote_ca_guid,
		.local_qpn = c->local_qpn,
		.remote_qpn = c->remote_qpn,
		.service_id = c->service_id,
		.active = c->active,
		.path = c->path,
	};
	return 0;
}

/* ---- agent -------------------------------------------------------------- */

struct cm_agent *
cm_agent_create(const struct cm_agent_config *cfg, const struct cm_ops *ops)
{
	struct cm_agent *a;
	uint64_t seed;

	if (!cfg || !ops || !ops->send || !ops->event || cfg->max_conns > CM_MAX_CONNS_LIMIT ||
	    cfg->max_listeners > CM_MAX_LISTENERS_LIMIT || cfg->packet_life_time > 31 ||
	    cfg->cpi_resp_time > 31) {
		errno = EINVAL;
		return NULL;
	}
	a = calloc(1, sizeof(*a));
	if (!a) {
		errno = ENOMEM;
		return NULL;
	}
	a->cfg = *cfg;
	a->ops = *ops;
	if (!a->cfg.max_conns)
		a->cfg.max_conns = CM_DEFAULT_MAX_CONNS;
	if (!a->cfg.max_listeners)
		a->cfg.max_listeners = CM_DEFAULT_MAX_LISTENERS;
	if (!a->cfg.packet_life_time)
		a->cfg.packet_life_time = CM_DEFAULT_PACKET_LIFE_TIME;
	if (!a->cfg.cpi_resp_time)
		a->cfg.cpi_resp_time = CM_DEFAULT_RESPONSE_TIMEOUT;
	if (!a->cfg.max_peer_wait_us)
		a->cfg.max_peer_wait_us = CM_DEFAULT_MAX_PEER_WAIT_US;
	seed = cfg->seed;
	if (!seed && getrandom(&seed, sizeof(seed), 0) != (ssize_t)sizeof(seed))
		seed = (uint64_t)(uintptr_t)a ^ UINT64_C(0x5DEECE66D);
	a->rng = seed;
	a->hash_key = cm_rand64(a);
	a->tid_hi = (uint32_t)cm_rand64(a);
	if (cm_tables_init(a) < 0) {
		cm_tables_fini(a);
		free(a);
		errno = ENOMEM;
		return NULL;
	}
	return a;
}

void
cm_agent_destroy(struct cm_agent *a)
{
	if (!a)
		return;
	cm_tables_fini(a);
	free(a);
}

const uint64_t *
cm_agent_counters(const struct cm_agent *a)
{
	return a ? a->ctr : NULL;
}

uint32_t
cm_agent_conns_in_use(const struct cm_agent *a)
{
	return a ? a->in_use : 0;
}
