/* SPDX-License-Identifier: BSD-3-Clause */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "cm_wire.h"
#include "splitmix64.h"

static uint16_t
attr_of(const uint8_t *mad)
{
	return (uint16_t)(mad[16] << 8 | mad[17]);
}

static void
enqueue(struct wire *w, int to, const uint8_t *mad, uint64_t extra)
{
	cr_assert_lt(w->nq, WIRE_QUEUE, "wire queue full");
	w->q[w->nq].to = to;
	w->q[w->nq].at = w->now + WIRE_LATENCY_US + extra;
	w->q[w->nq].seq = w->seq++;
	memcpy(w->q[w->nq].mad, mad, CM_MAD_SIZE);
	w->nq++;
}

static enum wire_action
judge(struct wire *w, int from, const uint8_t *mad, uint64_t *delay)
{
	for (unsigned int i = 0; i < w->nrules; i++) {
		struct wire_rule *r = &w->rules[i];

		if ((r->from >= 0 && r->from != from) || (r->attr && r->attr != attr_of(mad)) || r->count == 0)
			continue;
		if (r->skip > 0) {
			r->skip--;
			continue;
		}
		if (r->percent && splitmix64_next(&w->rng) % 100 >= r->percent)
			continue;
		if (r->count > 0)
			r->count--;
		*delay = r->delay_us;
		return r->action;
	}
	return WIRE_PASS;
}

static int
side_send(void *ctx, const struct cm_path *to, const uint8_t mad[CM_MAD_SIZE])
{
	struct side *s = ctx;
	struct wire *w = s->w;
	uint64_t delay = 0;
	enum wire_action act = judge(w, s->idx, mad, &delay);
	int peer = 1 - s->idx;

	/* the agent addresses the peer by its GID */
	cr_assert_arr_eq(to->remote_gid, w->s[peer].gid, 16, "side %d sent to a GID not its peer's", s->idx);
	cr_assert_lt(w->nlog, WIRE_LOG);
	w->log[w->nlog].from = s->idx;
	w->log[w->nlog].at = w->now;
	w->log[w->nlog].dropped = act == WIRE_DROP;
	memcpy(w->log[w->nlog].mad, mad, CM_MAD_SIZE);
	w->nlog++;
	switch (act) {
	case WIRE_DROP:
		break;
	case WIRE_DUP:
		enqueue(w, peer, mad, 0);
		enqueue(w, peer, mad, 1);
		break;
	case WIRE_DELAY:
		enqueue(w, peer, mad, delay);
		break;
	default:
		enqueue(w, peer, mad, 0);
		break;
	}
	return 0;
}

static void
side_event_cb(void *ctx, uint64_t cookie, const struct cm_event *ev)
{
	struct side *s = ctx;
	struct ev_rec *r;
	uint64_t now = s->w->now;

	cr_assert_eq(cookie, ev->cookie);
	cr_assert_lt(s->nev, SIDE_EVENTS);
	r = &s->ev[s->nev++];
	r->type = ev->type;
	r->conn = ev->conn;
	r->cookie = ev->cookie;
	r->at = now;
	r->has_msg = ev->msg != NULL;
	if (ev->msg)
		r->msg = *ev->msg;

	switch (ev->type) {
	case CM_EV_REQ_RECEIVED:
		s->last_req_conn = ev->conn;
		cr_assert_eq(cm_conn_set_cookie(s->a, ev->conn, 1000 + s->nev), 0);
		if (s->mra_on_req >= 0) {
			cr_assert_eq(cm_send_mra(s->a, ev->conn, (uint8_t)s->mra_on_req, s->mra_flags, "wait", 4, now), 0);
		} else if (s->auto_rep) {
			struct cm_rep rep = {
				.local_qpn = s->next_qpn++,
				.starting_psn = 0x123456,
				.responder_resources = ev->msg->req.initiator_depth,
				.initiator_depth = ev->msg->req.responder_resources,
				.target_ack_delay = 15,
				.rnr_retry_count = 7,
			};

			if (s->rep_pd) {
				rep.private_data_len = (uint8_t)strlen(s->rep_pd);
				memcpy(rep.private_data, s->rep_pd, rep.private_data_len);
			}
			cr_assert_eq(cm_send_rep(s->a, ev->conn, &rep, now), 0);
		}
		break;
	case CM_EV_REP_RECEIVED:
		if (s->auto_rtu)
			cr_assert_eq(cm_send_rtu(s->a, ev->conn, "rtu", 3, now), 0);
		break;
	case CM_EV_DREQ_RECEIVED:
		if (s->auto_drep)
			cr_assert_eq(cm_send_drep(s->a, ev->conn, NULL, 0, now), 0);
		break;
	case CM_EV_SIDR_REQ_RECEIVED:
		if (s->auto_sidr_rep) {
			struct cm_sidr_rep rep = {.status = CM_SIDR_SUCCESS, .qpn = 0x123, .qkey = 0x11111111};

			cr_assert_eq(cm_send_sidr_rep(s->a, ev->conn, &rep, now), 0);
			if (s->auto_destroy)
				cr_assert_eq(cm_conn_destroy(s->a, ev->conn, now), 0);
		}
		break;
	case CM_EV_REJ_RECEIVED:
	case CM_EV_REQ_TIMEOUT:
	case CM_EV_REP_TIMEOUT:
	case CM_EV_SIDR_REQ_TIMEOUT:
	case CM_EV_SIDR_REP_RECEIVED:
	case CM_EV_TIMEWAIT_EXIT:
	case CM_EV_PEER_TIMEOUT:
		if (s->auto_destroy)
			cr_assert_eq(cm_conn_destroy(s->a, ev->conn, now), 0);
		break;
	default:
		break;
	}
}

struct wire *
wire_new(uint32_t max_conns)
{
	struct wire *w = calloc(1, sizeof(*w));

	cr_assert_not_null(w);
	w->now = 1000000; /* not 0: nothing may assume the clock starts there */
	w->rng = 12345;
	for (int i = 0; i < 2; i++) {
		struct side *s = &w->s[i];
		struct cm_agent_config cfg = {
			.max_conns = max_conns ? max_conns : 64,
			.max_listeners = 8,
			.ca_guid = UINT64_C(0x505400fffec61200) + (uint64_t)i + 1,
			.seed = (uint64_t)i + 77,
		};
		struct cm_ops ops = {.send = side_send, .event = side_event_cb, .ctx = s};

		s->w = w;
		s->idx = i;
		s->guid = cfg.ca_guid;
		/* ::ffff:198.18.0.(i+1) */
		s->gid[10] = s->gid[11] = 0xff;
		s->gid[12] = 198;
		s->gid[13] = 18;
		s->gid[15] = (uint8_t)(i + 1);
		s->mra_on_req = -1;
		s->auto_rep = s->auto_rtu = s->auto_drep = s->auto_sidr_rep = true;
		s->next_qpn = 0x100u * (unsigned int)(i + 1);
		s->a = cm_agent_create(&cfg, &ops);
		cr_assert_not_null(s->a);
	}
	return w;
}

void
wire_free(struct wire *w)
{
	cm_agent_destroy(w->s[0].a);
	cm_agent_destroy(w->s[1].a);
	free(w);
}

void
wire_rule(struct wire *w, struct wire_rule r)
{
	cr_assert_lt(w->nrules, WIRE_RULES);
	w->rules[w->nrules++] = r;
}

struct cm_path
wire_path(struct wire *w, int from)
{
	struct cm_path p = {.pkey = 0xffff, .remote_qpn = CM_GSI_QPN, .hop_limit = 64, .udp_sport = 55410};

	memcpy(p.remote_gid, w->s[1 - from].gid, 16);
	memcpy(p.local_gid, w->s[from].gid, 16);
	return p;
}

static int
earliest_packet(const struct wire *w)
{
	int best = -1;

	for (unsigned int i = 0; i < w->nq; i++)
		if (best < 0 || w->q[i].at < w->q[best].at ||
		    (w->q[i].at == w->q[best].at && w->q[i].seq < w->q[best].seq))
			best = (int)i;
	return best;
}

void
wire_run(struct wire *w, uint64_t until)
{
	for (unsigned int iter = 0;; iter++) {
		int p = earliest_packet(w);
		uint64_t next = p >= 0 ? w->q[p].at : UINT64_MAX;

		cr_assert_lt(iter, 2000000u, "the wire does not settle");
		for (int i = 0; i < 2; i++) {
			uint64_t d = cm_agent_next_deadline(w->s[i].a);

			if (d < next)
				next = d;
		}
		if (next > until) {
			if (until > w->now)
				w->now = until;
			return;
		}
		if (next > w->now)
			w->now = next;
		if (p >= 0 && w->q[p].at <= w->now) {
			uint8_t mad[CM_MAD_SIZE];
			int to = w->q[p].to;
			/* as the daemon fills it on receive: remote = the sender */
			struct cm_path rx = {.pkey = 0xffff, .remote_qpn = 1, .udp_sport = 55410};

			memcpy(rx.remote_gid, w->s[1 - to].gid, 16);
			memcpy(rx.local_gid, w->s[to].gid, 16);
			memcpy(mad, w->q[p].mad, CM_MAD_SIZE);
			w->q[p] = w->q[--w->nq];
			cr_assert_eq(cm_agent_rx(w->s[to].a, &rx, mad, CM_MAD_SIZE, w->now), 0);
			continue;
		}
		for (int i = 0; i < 2; i++)
			while (cm_agent_expire(w->s[i].a, w->now) == CM_EXPIRE_BATCH)
				;
	}
}

void
wire_run_for(struct wire *w, uint64_t us)
{
	wire_run(w, w->now + us);
}

struct cm_req_param
wire_req_param(struct wire *w, int from, uint64_t sid, uint32_t qpn)
{
	struct cm_req_param p = {.path = wire_path(w, from)};
	struct cm_ip_addr src = {.family = 4, .port = 40000}, dst = {.family = 4, .port = (uint16_t)sid};

	memcpy(src.addr, w->s[from].gid + 12, 4);
	memcpy(dst.addr, w->s[1 - from].gid + 12, 4);
	p.req.service_id = sid;
	p.req.local_qpn = qpn;
	p.req.starting_psn = 0x4b170f;
	p.req.pkey = 0xffff;
	p.req.path_mtu = 3;
	p.req.remote_cm_response_timeout = 20;
	p.req.local_cm_response_timeout = 20;
	p.req.max_cm_retries = 15;
	p.req.retry_count = 7;
	p.req.rnr_retry_count = 7;
	p.req.primary.local_lid = p.req.primary.remote_lid = 0xffff;
	memcpy(p.req.primary.local_gid, w->s[from].gid, 16);
	memcpy(p.req.primary.remote_gid, w->s[1 - from].gid, 16);
	p.req.primary.hop_limit = 64;
	p.req.primary.local_ack_timeout = 19;
	cr_assert_eq(cm_ip_hdr_build(&src, &dst, p.req.private_data), CM_IP_HDR_SIZE);
	memcpy(p.req.private_data + CM_IP_HDR_SIZE, "hello", 5);
	p.req.private_data_len = CM_IP_HDR_SIZE + 5;
	return p;
}

cm_conn_t
wire_connect(struct wire *w, int from, uint64_t sid, uint32_t qpn)
{
	struct cm_req_param p = wire_req_param(w, from, sid, qpn);
	cm_conn_t c = CM_CONN_INVALID;

	cr_assert_eq(cm_send_req(w->s[from].a, 500 + qpn, &p, w->now, &c), 0);
	cr_assert_neq(c, CM_CONN_INVALID);
	return c;
}

unsigned int
side_count(const struct side *s, enum cm_event_type type)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < s->nev; i++)
		n += s->ev[i].type == type;
	return n;
}

const struct ev_rec *
side_event(const struct side *s, enum cm_event_type type, unsigned int n)
{
	for (unsigned int i = 0; i < s->nev; i++)
		if (s->ev[i].type == type && n-- == 0)
			return &s->ev[i];
	return NULL;
}

enum cm_state
side_state(const struct side *s, cm_conn_t conn)
{
	struct cm_conn_info info;

	cr_assert_eq(cm_conn_query(s->a, conn, &info), 0, "no connection %llx", (unsigned long long)conn);
	return info.state;
}

uint64_t
side_ctr(const struct side *s, enum cm_ctr c)
{
	return cm_agent_counters(s->a)[c];
}

unsigned int
wire_sent(const struct wire *w, int from, uint16_t attr, bool with_dropped)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < w->nlog; i++)
		if (w->log[i].from == from && attr_of(w->log[i].mad) == attr && (with_dropped || !w->log[i].dropped))
			n++;
	return n;
}

void
wire_sent_msg(const struct wire *w, int from, uint16_t attr, unsigned int n, struct cm_msg *out)
{
	for (unsigned int i = 0; i < w->nlog; i++)
		if (w->log[i].from == from && attr_of(w->log[i].mad) == attr && n-- == 0) {
			cr_assert_eq(cm_mad_parse(w->log[i].mad, CM_MAD_SIZE, out), 0);
			return;
		}
	cr_assert_fail("side %d sent no %s number %u", from, cm_attr_name(attr), n);
}
