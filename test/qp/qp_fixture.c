/* SPDX-License-Identifier: BSD-3-Clause */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "qp_fixture.h"

int fx_cq_token, fx_srq_token, fx_ctx_token;

const union ibv_gid fx_gid_self = { .raw = {
	[10] = 0xff, [11] = 0xff, [12] = 198, [13] = 18, [14] = 0, [15] = 1 } };
const union ibv_gid fx_gid_peer = { .raw = {
	[10] = 0xff, [11] = 0xff, [12] = 198, [13] = 18, [14] = 0, [15] = 2 } };

#define GID_TBL_LEN 1024

static struct qp_sem_gid gid_table[GID_TBL_LEN] = {
	[0] = { .gid = { .raw = { 0xfe, 0x80, [8] = 0x50, [9] = 0x54,
				  [11] = 0xff, [12] = 0xfe, [13] = 0xc6,
				  [14] = 0x12, [15] = 0x01 } },
		.type = IBV_GID_TYPE_ROCE_V2, .valid = true },
	[1] = { .gid = { .raw = { [10] = 0xff, [11] = 0xff, [12] = 198,
				  [13] = 18, [14] = 0, [15] = 1 } },
		.type = IBV_GID_TYPE_ROCE_V2, .valid = true },
};
static const uint16_t pkey_table[1] = { 0xffff };

static const struct qp_sem_port rxe_port = {
	.max_mtu = IBV_MTU_4096,
	.active_mtu = IBV_MTU_1024,
	.gid_tbl_len = GID_TBL_LEN,
	.gid = gid_table,
	.pkey_tbl_len = 1,
	.pkey = pkey_table,
};

/* Stands in for the daemon's ARP: the oracle's static neighbour entries. */
static int
fx_resolve(void *ctx, uint8_t port_num, const struct ibv_global_route *grh,
	   const struct qp_sem_gid *sgid, uint8_t *hop_limit)
{
	(void)ctx;
	(void)port_num;
	(void)sgid;
	if (memcmp(&grh->dgid, &fx_gid_self, sizeof(grh->dgid)) == 0 ||
	    memcmp(&grh->dgid, &fx_gid_peer, sizeof(grh->dgid)) == 0) {
		*hop_limit = 64;  /* the route's hop limit, as Linux reports */
		return 0;
	}
	return ETIMEDOUT;
}

static const struct qp_sem_device rxe_device = {
	.attr = {
		.max_qp_wr = 1048576,
		.max_sge = 32,
		.max_sge_rd = 32,
		.max_qp_rd_atom = 128,
		.max_qp_init_rd_atom = 128,
		.device_cap_flags = 0x1223c76 & ~IBV_DEVICE_AUTO_PATH_MIG,
		.atomic_cap = IBV_ATOMIC_HCA,
		.max_pkeys = 64,
		.local_ca_ack_delay = 15,
		.phys_port_cnt = 1,
	},
	.pacing = {
		.qp_rate_limit_min = 1000,          /* 1 Mbit/s */
		.qp_rate_limit_max = 100000000,     /* 100 Gbit/s */
		.supported_qpts = 1u << IBV_QPT_RC | 1u << IBV_QPT_RAW_PACKET,
	},
	.max_inline_data = 512,
	.qp_types = 1u << IBV_QPT_RC | 1u << IBV_QPT_UC | 1u << IBV_QPT_UD,
	.port = &rxe_port,
	.resolve = fx_resolve,
};

const struct qp_sem_device *
fx_device(void)
{
	return &rxe_device;
}

void
fx_device_copy(struct qp_sem_device *dev)
{
	*dev = rxe_device;
}

int
fx_create(struct qp_sem *qp, enum ibv_qp_type type)
{
	struct ibv_qp_init_attr init = {
		.qp_context = FX_CTX,
		.send_cq = FX_CQ,
		.recv_cq = FX_CQ,
		.cap = { 16, 16, 1, 1, 0 },
		.qp_type = type,
	};
	struct qp_sem_device dev;

	fx_device_copy(&dev);
	dev.qp_types |= 1u << IBV_QPT_RAW_PACKET;
	return qp_sem_create(qp, &init, &dev);
}

static void
fx_av(struct ibv_ah_attr *ah)
{
	memset(ah, 0, sizeof(*ah));
	ah->is_global = 1;
	ah->grh.dgid = fx_gid_self;
	ah->grh.sgid_index = 1;
	ah->grh.hop_limit = 64;
	ah->port_num = 1;
}

void
fx_setup_attr(struct ibv_qp_attr *a, enum ibv_qp_state cur)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = cur;
	a->cur_qp_state = cur;
	a->en_sqd_async_notify = 1;
	a->qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			     IBV_ACCESS_REMOTE_READ;
	a->pkey_index = 0;
	a->port_num = 1;
	a->qkey = 0x11111111;
	fx_av(&a->ah_attr);
	a->path_mtu = IBV_MTU_1024;
	a->timeout = 14;
	a->retry_cnt = 7;
	a->rnr_retry = 7;
	a->rq_psn = 0x111111;
	a->sq_psn = 0x333333;
	a->max_rd_atomic = 1;
	a->max_dest_rd_atomic = 1;
	fx_av(&a->alt_ah_attr);
	a->alt_port_num = 1;
	a->alt_pkey_index = 0;
	a->alt_timeout = 14;
	a->min_rnr_timer = 12;
	a->path_mig_state = IBV_MIG_MIGRATED;
	a->cap = (struct ibv_qp_cap){ 16, 16, 1, 1, 0 };
	a->dest_qp_num = 0xabc;
	a->rate_limit = 1000;
}

void
fx_alt_attr(struct ibv_qp_attr *a, unsigned int bit)
{
	switch ((int)(1u << bit)) {
	case IBV_QP_ACCESS_FLAGS:
		a->qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
		break;
	case IBV_QP_QKEY:
		a->qkey = 0x22222222;
		break;
	case IBV_QP_AV:
		a->ah_attr.grh.hop_limit = 32;
		a->ah_attr.grh.traffic_class = 0x20;
		a->ah_attr.grh.flow_label = 0x12345;
		a->ah_attr.sl = 3;
		break;
	case IBV_QP_PATH_MTU:
		a->path_mtu = IBV_MTU_512;
		break;
	case IBV_QP_TIMEOUT:
		a->timeout = 18;
		break;
	case IBV_QP_RETRY_CNT:
		a->retry_cnt = 6;
		break;
	case IBV_QP_RNR_RETRY:
		a->rnr_retry = 6;
		break;
	case IBV_QP_RQ_PSN:
		a->rq_psn = 0x222222;
		break;
	case IBV_QP_SQ_PSN:
		a->sq_psn = 0x444444;
		break;
	case IBV_QP_MAX_QP_RD_ATOMIC:
		a->max_rd_atomic = 4;
		break;
	case IBV_QP_MAX_DEST_RD_ATOMIC:
		a->max_dest_rd_atomic = 4;
		break;
	case IBV_QP_ALT_PATH:
		a->alt_timeout = 18;
		break;
	case IBV_QP_MIN_RNR_TIMER:
		a->min_rnr_timer = 20;
		break;
	case IBV_QP_PATH_MIG_STATE:
		a->path_mig_state = IBV_MIG_REARM;
		break;
	case IBV_QP_DEST_QPN:
		a->dest_qp_num = 0xdef;
		break;
	default:  /* CUR_STATE, EN_SQD, PKEY, PORT, CAP, RATE_LIMIT: same */
		break;
	}
}

int
fx_required(enum ibv_qp_type type, int from, int to)
{
	const struct qp_sem_transition *t;
	int ti = qp_sem_type_index(type);

	if (from < 0 || to < 0 || ti < 0)
		return 0;
	t = qp_sem_transition(from, to);
	return (t != NULL && t->valid) ? t->req[ti] : 0;
}

static int
fx_step(struct qp_sem *qp, enum ibv_qp_state to)
{
	struct ibv_qp_attr a;
	int from = qp->attr.qp_state;

	fx_setup_attr(&a, from);
	a.qp_state = to;
	return qp_sem_modify(qp, &a,
			     IBV_QP_STATE | fx_required(qp->init.qp_type, from, to),
			     fx_device(), NULL);
}

int
fx_bring_to(struct qp_sem *qp, enum ibv_qp_state state)
{
	static const enum ibv_qp_state up[] = { IBV_QPS_INIT, IBV_QPS_RTR,
						IBV_QPS_RTS, IBV_QPS_SQD };
	int rc = 0;

	if (state == IBV_QPS_RESET)
		return 0;
	if (state == IBV_QPS_ERR) {
		rc = fx_step(qp, IBV_QPS_INIT);
		return rc ? rc : fx_step(qp, IBV_QPS_ERR);
	}
	if (state == IBV_QPS_SQE) {
		rc = fx_bring_to(qp, IBV_QPS_RTS);
		return rc ? rc : qp_sem_send_queue_error(qp, NULL);
	}
	for (unsigned int i = 0; i < sizeof(up) / sizeof(up[0]) && rc == 0; i++) {
		rc = fx_step(qp, up[i]);
		if (up[i] == IBV_QPS_SQD && rc == 0)
			rc = qp_sem_sq_drained(qp, NULL);
		if (up[i] == state)
			break;
	}
	return rc;
}

static uint8_t
pow2_slots(uint8_t n)
{
	unsigned int p = 1;

	if (n == 0)
		return 0;
	while (p < n)
		p <<= 1;
	return (uint8_t)(p > 128 ? 128 : p);
}

static void
model_av(struct ibv_ah_attr *dst, const struct ibv_ah_attr *src)
{
	*dst = *src;
	dst->is_global = 1;
	dst->dlid = 0;
	dst->src_path_bits = 0;
	dst->grh.hop_limit = 64;  /* fx_resolve's route */
}

void
fx_model_after(const struct ibv_qp_attr *before, const struct ibv_qp_attr *a,
	       int m, int new_state, struct ibv_qp_attr *out)
{
	*out = *before;
	if (m & IBV_QP_ACCESS_FLAGS)
		out->qp_access_flags = a->qp_access_flags;
	if (m & IBV_QP_PKEY_INDEX)
		out->pkey_index = a->pkey_index;
	if (m & IBV_QP_PORT)
		out->port_num = a->port_num;
	if (m & IBV_QP_QKEY)
		out->qkey = a->qkey;
	if (m & IBV_QP_AV)
		model_av(&out->ah_attr, &a->ah_attr);
	if (m & IBV_QP_PATH_MTU)
		out->path_mtu = a->path_mtu;
	if (m & IBV_QP_TIMEOUT)
		out->timeout = a->timeout;
	if (m & IBV_QP_RETRY_CNT)
		out->retry_cnt = a->retry_cnt;
	if (m & IBV_QP_RNR_RETRY)
		out->rnr_retry = a->rnr_retry;
	if (m & IBV_QP_RQ_PSN)
		out->rq_psn = a->rq_psn;
	if (m & IBV_QP_MAX_QP_RD_ATOMIC)
		out->max_rd_atomic = a->max_rd_atomic;
	if (m & IBV_QP_ALT_PATH) {
		model_av(&out->alt_ah_attr, &a->alt_ah_attr);
		out->alt_port_num = a->alt_port_num;
		out->alt_pkey_index = a->alt_pkey_index;
		out->alt_timeout = a->alt_timeout;
	}
	if (m & IBV_QP_MIN_RNR_TIMER)
		out->min_rnr_timer = a->min_rnr_timer;
	if (m & IBV_QP_SQ_PSN)
		out->sq_psn = a->sq_psn;
	if (m & IBV_QP_MAX_DEST_RD_ATOMIC)
		out->max_dest_rd_atomic = pow2_slots(a->max_dest_rd_atomic);
	if (m & IBV_QP_PATH_MIG_STATE)
		out->path_mig_state = a->path_mig_state;
	if (m & IBV_QP_DEST_QPN)
		out->dest_qp_num = a->dest_qp_num;
	if (m & IBV_QP_RATE_LIMIT)
		out->rate_limit = a->rate_limit;
	if (before->qp_state == IBV_QPS_RTS && new_state == IBV_QPS_SQD) {
		out->sq_draining = 1;
		out->en_sqd_async_notify = (m & IBV_QP_EN_SQD_ASYNC_NOTIFY) &&
					   a->en_sqd_async_notify;
	} else if (new_state != IBV_QPS_SQD) {
		out->sq_draining = 0;
	}
	out->qp_state = new_state;
	if (m & IBV_QP_CUR_STATE)
		out->cur_qp_state = (m & IBV_QP_STATE) ? new_state : IBV_QPS_RESET;
}

static const char *const state_names[] = { "RESET", "INIT", "RTR", "RTS",
					   "SQD", "SQE", "ERR" };

int
fx_state_parse(const char *s)
{
	if (s[0] == 'S' && (s[1] == '-' || (s[1] >= '0' && s[1] <= '9')))
		return (int)strtol(s + 1, NULL, 0);
	for (int i = 0; i < 7; i++)
		if (strcmp(s, state_names[i]) == 0)
			return i;
	if (s[0] >= '0' && s[0] <= '9')
		return (int)strtoul(s, NULL, 0);
	return -1000;
}

enum ibv_qp_type
fx_type_parse(const char *s)
{
	if (strcmp(s, "RC") == 0)
		return IBV_QPT_RC;
	if (strcmp(s, "UC") == 0)
		return IBV_QPT_UC;
	if (strcmp(s, "UD") == 0)
		return IBV_QPT_UD;
	return IBV_QPT_RAW_PACKET;
}

int
fx_errno_parse(const char *s)
{
	static const struct { const char *name; int value; } names[] = {
		{ "OK", 0 }, { "EINVAL", EINVAL }, { "EOPNOTSUPP", EOPNOTSUPP },
		{ "ENODATA", ENODATA }, { "ETIMEDOUT", ETIMEDOUT },
		{ "ENOMEM", ENOMEM }, { "ENOENT", ENOENT },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(s, names[i].name) == 0)
			return names[i].value;
	return -1;
}

static bool
parse_gid(const char *s, union ibv_gid *g)
{
	struct in_addr v4;

	if (strcmp(s, "self") == 0) {
		*g = fx_gid_self;
	} else if (strcmp(s, "peer") == 0) {
		*g = fx_gid_peer;
	} else if (strcmp(s, "zero") == 0) {
		memset(g, 0, sizeof(*g));
	} else if (inet_pton(AF_INET, s, &v4) == 1) {
		memset(g, 0, sizeof(*g));
		g->raw[10] = g->raw[11] = 0xff;
		memcpy(&g->raw[12], &v4, 4);
	} else if (inet_pton(AF_INET6, s, g->raw) != 1) {
		return false;
	}
	return true;
}

bool
fx_override(struct ibv_qp_attr *a, const char *key, const char *val)
{
	unsigned long v = strtoul(val, NULL, 0);

#define NUM(k, field) if (strcmp(key, k) == 0) { a->field = v; return true; }
	NUM("pkey_index", pkey_index)
	NUM("port_num", port_num)
	NUM("qp_access_flags", qp_access_flags)
	NUM("qkey", qkey)
	NUM("path_mtu", path_mtu)
	NUM("max_dest_rd_atomic", max_dest_rd_atomic)
	NUM("max_rd_atomic", max_rd_atomic)
	NUM("min_rnr_timer", min_rnr_timer)
	NUM("dest_qp_num", dest_qp_num)
	NUM("rq_psn", rq_psn)
	NUM("sq_psn", sq_psn)
	NUM("timeout", timeout)
	NUM("retry_cnt", retry_cnt)
	NUM("rnr_retry", rnr_retry)
	NUM("path_mig_state", path_mig_state)
	NUM("alt_port_num", alt_port_num)
	NUM("alt_timeout", alt_timeout)
	NUM("alt_pkey_index", alt_pkey_index)
	NUM("alt_ah.is_global", alt_ah_attr.is_global)
	NUM("alt_ah.port_num", alt_ah_attr.port_num)
	NUM("rate_limit", rate_limit)
	NUM("cap.max_send_wr", cap.max_send_wr)
	NUM("en_sqd_async_notify", en_sqd_async_notify)
	NUM("ah.is_global", ah_attr.is_global)
	NUM("ah.port_num", ah_attr.port_num)
	NUM("ah.grh.sgid_index", ah_attr.grh.sgid_index)
	NUM("ah.grh.hop_limit", ah_attr.grh.hop_limit)
	NUM("ah.grh.traffic_class", ah_attr.grh.traffic_class)
	NUM("ah.grh.flow_label", ah_attr.grh.flow_label)
	NUM("ah.sl", ah_attr.sl)
	NUM("ah.static_rate", ah_attr.static_rate)
	NUM("ah.dlid", ah_attr.dlid)
	NUM("ah.src_path_bits", ah_attr.src_path_bits)
#undef NUM
	if (strcmp(key, "cur_qp_state") == 0) {
		a->cur_qp_state = fx_state_parse(val);
		return true;
	}
	if (strcmp(key, "qp_state") == 0) {
		a->qp_state = (int)v;
		return true;
	}
	if (strcmp(key, "ah.grh.dgid") == 0)
		return parse_gid(val, &a->ah_attr.grh.dgid);
	return false;
}

/* ---- dumps ---- */

static void
gid_name(const union ibv_gid *g, char *out, size_t len)
{
	static const union ibv_gid zero;

	if (memcmp(g, &zero, sizeof(zero)) == 0)
		snprintf(out, len, "zero");
	else if (memcmp(g, &fx_gid_self, sizeof(*g)) == 0)
		snprintf(out, len, "self");
	else if (memcmp(g, &fx_gid_peer, sizeof(*g)) == 0)
		snprintf(out, len, "peer");
	else
		inet_ntop(AF_INET6, g->raw, out, (socklen_t)len);
}

static void
put(struct fx_dump *d, const char *name, const char *fmt, unsigned long v)
{
	if (d->n >= FX_DUMP_MAX)
		return;
	d->f[d->n].name = name;
	snprintf(d->f[d->n].val, sizeof(d->f[d->n].val), fmt, v);
	d->n++;
}

static void
put_state(struct fx_dump *d, const char *name, int s)
{
	const char *n = qp_sem_state_name(s);

	if (n != NULL) {
		d->f[d->n].name = name;
		snprintf(d->f[d->n].val, sizeof(d->f[d->n].val), "%s", n);
		d->n++;
	} else {
		put(d, name, "%lu", (unsigned long)(unsigned int)s);
	}
}

static void
put_ptr(struct fx_dump *d, const char *name, const void *p)
{
	const char *s = p == NULL ? "NULL" : p == FX_CQ ? "the_cq" :
			p == FX_CTX ? "the_qp_context" : p == FX_SRQ ? "the_srq" :
			"other";

	d->f[d->n].name = name;
	snprintf(d->f[d->n].val, sizeof(d->f[d->n].val), "%s", s);
	d->n++;
}

static void
put_ah(struct fx_dump *d, const struct ibv_ah_attr *ah, bool alt)
{
	static const char *const names[2][11] = {
		{ "ah.grh.dgid", "ah.grh.flow_label", "ah.grh.sgid_index",
		  "ah.grh.hop_limit", "ah.grh.traffic_class", "ah.dlid", "ah.sl",
		  "ah.src_path_bits", "ah.static_rate", "ah.is_global",
		  "ah.port_num" },
		{ "alt_ah.grh.dgid", "alt_ah.grh.flow_label",
		  "alt_ah.grh.sgid_index", "alt_ah.grh.hop_limit",
		  "alt_ah.grh.traffic_class", "alt_ah.dlid", "alt_ah.sl",
		  "alt_ah.src_path_bits", "alt_ah.static_rate", "alt_ah.is_global",
		  "alt_ah.port_num" },
	};
	const char *const *n = names[alt];

	d->f[d->n].name = n[0];
	gid_name(&ah->grh.dgid, d->f[d->n].val, sizeof(d->f[d->n].val));
	d->n++;
	put(d, n[1], "0x%lx", ah->grh.flow_label);
	put(d, n[2], "%lu", ah->grh.sgid_index);
	put(d, n[3], "%lu", ah->grh.hop_limit);
	put(d, n[4], "0x%lx", ah->grh.traffic_class);
	put(d, n[5], "0x%lx", ah->dlid);
	put(d, n[6], "%lu", ah->sl);
	put(d, n[7], "0x%lx", ah->src_path_bits);
	put(d, n[8], "%lu", ah->static_rate);
	put(d, n[9], "%lu", ah->is_global);
	put(d, n[10], "%lu", ah->port_num);
}

void
fx_dump(const struct ibv_qp_attr *a, const struct ibv_qp_init_attr *init,
	struct fx_dump *d)
{
	d->n = 0;
	put_state(d, "qp_state", a->qp_state);
	put_state(d, "cur_qp_state", a->cur_qp_state);
	put(d, "path_mtu", "%lu", a->path_mtu);
	put(d, "path_mig_state", "%lu", a->path_mig_state);
	put(d, "qkey", "0x%lx", a->qkey);
	put(d, "rq_psn", "0x%lx", a->rq_psn);
	put(d, "sq_psn", "0x%lx", a->sq_psn);
	put(d, "dest_qp_num", "0x%lx", a->dest_qp_num);
	put(d, "qp_access_flags", "0x%lx", a->qp_access_flags);
	put(d, "cap.max_send_wr", "%lu", a->cap.max_send_wr);
	put(d, "cap.max_recv_wr", "%lu", a->cap.max_recv_wr);
	put(d, "cap.max_send_sge", "%lu", a->cap.max_send_sge);
	put(d, "cap.max_recv_sge", "%lu", a->cap.max_recv_sge);
	put(d, "cap.max_inline_data", "%lu", a->cap.max_inline_data);
	put_ah(d, &a->ah_attr, false);
	put_ah(d, &a->alt_ah_attr, true);
	put(d, "pkey_index", "%lu", a->pkey_index);
	put(d, "alt_pkey_index", "%lu", a->alt_pkey_index);
	put(d, "en_sqd_async_notify", "%lu", a->en_sqd_async_notify);
	put(d, "sq_draining", "%lu", a->sq_draining);
	put(d, "max_rd_atomic", "%lu", a->max_rd_atomic);
	put(d, "max_dest_rd_atomic", "%lu", a->max_dest_rd_atomic);
	put(d, "min_rnr_timer", "%lu", a->min_rnr_timer);
	put(d, "port_num", "%lu", a->port_num);
	put(d, "timeout", "%lu", a->timeout);
	put(d, "retry_cnt", "%lu", a->retry_cnt);
	put(d, "rnr_retry", "%lu", a->rnr_retry);
	put(d, "alt_port_num", "%lu", a->alt_port_num);
	put(d, "alt_timeout", "%lu", a->alt_timeout);
	put(d, "rate_limit", "%lu", a->rate_limit);
	put_ptr(d, "init.qp_context", init->qp_context);
	put_ptr(d, "init.send_cq", init->send_cq);
	put_ptr(d, "init.recv_cq", init->recv_cq);
	put_ptr(d, "init.srq", init->srq);
	put(d, "init.cap.max_send_wr", "%lu", init->cap.max_send_wr);
	put(d, "init.cap.max_recv_wr", "%lu", init->cap.max_recv_wr);
	put(d, "init.cap.max_send_sge", "%lu", init->cap.max_send_sge);
	put(d, "init.cap.max_recv_sge", "%lu", init->cap.max_recv_sge);
	put(d, "init.cap.max_inline_data", "%lu", init->cap.max_inline_data);
	put(d, "init.qp_type", "%lu", init->qp_type);
	put(d, "init.sq_sig_all", "%lu", (unsigned long)init->sq_sig_all);
}

void
fx_dump_qp(const struct qp_sem *qp, struct fx_dump *d)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr init;

	cr_assert_eq(qp_sem_query(qp, 0, &a, &init), 0);
	fx_dump(&a, &init, d);
}

const char *
fx_dump_get(const struct fx_dump *d, const char *name)
{
	for (unsigned int i = 0; i < d->n; i++)
		if (strcmp(d->f[i].name, name) == 0)
			return d->f[i].val;
	return NULL;
}

void
fx_dump_diff(const struct fx_dump *a, const struct fx_dump *b, char *out,
	     size_t len)
{
	size_t used = 0;

	out[0] = '\0';
	for (unsigned int i = 0; i < a->n && i < b->n; i++) {
		int w;

		if (strcmp(a->f[i].val, b->f[i].val) == 0)
			continue;
		w = snprintf(out + used, len - used, "%s%s:%s>%s",
			     used ? "," : "", a->f[i].name, a->f[i].val,
			     b->f[i].val);
		if (w < 0 || (size_t)w >= len - used)
			break;
		used += (size_t)w;
	}
	if (used == 0)
		snprintf(out, len, "-");
}

/* ---- oracle files ---- */

const char *
fx_oracle_path(const char *file, char *buf, size_t len)
{
	const char *dir = getenv("QP_ORACLE_DIR");

	cr_assert(dir != NULL, "QP_ORACLE_DIR is not set (meson passes it)");
	snprintf(buf, len, "%s/%s", dir, file);
	return buf;
}

unsigned int
fx_split_tabs(char *line, char **field, unsigned int max)
{
	unsigned int n = 0;
	char *save = NULL;

	line[strcspn(line, "\r\n")] = '\0';
	/* strtok would merge empty fields; the files have none. */
	for (char *t = strtok_r(line, "\t", &save); t != NULL && n < max;
	     t = strtok_r(NULL, "\t", &save))
		field[n++] = t;
	return n;
}

static void
copy(char *dst, size_t len, const char *src)
{
	snprintf(dst, len, "%s", src);
}

struct fx_probe *
fx_load_probes(unsigned int *n, unsigned int *summary_probes)
{
	char path[512], line[4096];
	struct fx_probe *probes = calloc(4096, sizeof(*probes));
	FILE *f = fopen(fx_oracle_path("modify_qp_rxe.tsv", path, sizeof(path)), "r");

	cr_assert(probes != NULL);
	cr_assert(f != NULL, "cannot open %s", path);
	*n = 0;
	*summary_probes = 0;
	while (fgets(line, sizeof(line), f) != NULL) {
		char *c[24];
		struct fx_probe *p;

		if (sscanf(line, "# summary: probes=%u", summary_probes) == 1)
			continue;
		if (line[0] == '#' || strncmp(line, "id\t", 3) == 0)
			continue;
		cr_assert(fx_split_tabs(line, c, 24) == 20, "bad line %s", line);
		cr_assert(*n < 4096);
		p = &probes[(*n)++];
		p->id = atoi(c[0]);
		copy(p->section, sizeof(p->section), c[1]);
		p->type = fx_type_parse(c[2]);
		p->from = fx_state_parse(c[3]);
		p->has_to = strcmp(c[4], "-") != 0;
		p->to = p->has_to ? fx_state_parse(c[4]) : p->from;
		p->has_mask = strcmp(c[5], "-") != 0;
		p->mask = (uint32_t)strtoul(c[5], NULL, 16);
		copy(p->variant, sizeof(p->variant), c[7]);
		copy(p->overrides, sizeof(p->overrides), c[8]);
		copy(p->tbl, sizeof(p->tbl), c[9]);
		p->rc = fx_errno_parse(c[11]);
		p->errno_after = strcmp(c[12], "0") == 0 ? 0 : fx_errno_parse(c[12]);
		p->ibqp_state = fx_state_parse(c[13]);
		p->state_after = fx_state_parse(c[14]);
		copy(p->changed, sizeof(p->changed), c[18]);
		copy(p->events, sizeof(p->events), c[19]);
	}
	fclose(f);
	return probes;
}

static int
bit_by_name(const char *name)
{
	for (unsigned int b = 0; b < 32; b++) {
		const char *n = qp_sem_attr_name(b);

		if (n != NULL && strcmp(n, name) == 0)
			return (int)b;
	}
	return -1;
}

void
fx_probe_request(const struct fx_probe *p, struct ibv_qp_attr *a, int *mask)
{
	bool stays = !p->has_to;
	int req = fx_required(p->type, p->from, stays ? p->from : (int)p->to);
	char ov[sizeof(p->overrides)], *save = NULL;

	fx_setup_attr(a, p->from);
	a->qp_state = (int)p->to;
	*mask = (int)p->mask;
	if (strcmp(p->variant, "ibv_modify_qp_rate_limit") == 0)
		*mask = IBV_QP_RATE_LIMIT;  /* the shim maps the call to this */
	if (strncmp(p->variant, "plus:", 5) == 0) {
		int bit = bit_by_name(p->variant + 5);

		if (bit >= 0)
			fx_alt_attr(a, (unsigned int)bit);
	}
	if (strcmp(p->section, "value") == 0 || strcmp(p->section, "misc") == 0)
		for (unsigned int b = 0; b < 32; b++)
			if ((*mask & ~req) & (int)(1u << b))
				fx_alt_attr(a, b);
	if (strcmp(p->overrides, "-") == 0)
		return;
	copy(ov, sizeof(ov), p->overrides);
	for (char *kv = strtok_r(ov, ";", &save); kv != NULL;
	     kv = strtok_r(NULL, ";", &save)) {
		char *eq = strchr(kv, '=');

		cr_assert(eq != NULL, "probe %d: override %s", p->id, kv);
		*eq = '\0';
		cr_assert(fx_override(a, kv, eq + 1), "probe %d: unknown key %s",
			  p->id, kv);
	}
}
