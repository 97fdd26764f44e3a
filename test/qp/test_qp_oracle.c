/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The modify/query/create oracle of the real Linux stack (rxe on 6.1,
 * ../shared/rxe-peer/oracle) replayed against lib/qp.
 *
 * Every probe of modify_qp_rxe.tsv is rebuilt (fresh QP, minimal path to the
 * source state, the probe's mask and values) and must give the oracle's
 * errno and state, unless one of the deliberate differences below applies;
 * then it must give the documented result instead. Each probe is counted
 * under exactly one heading, and the counts must add up to the oracle's
 * total. doc/qp-state-machine.md explains each difference.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "qp_fixture.h"

/* ---- deliberate differences (doc/qp-state-machine.md, "Differences") ---- */

enum diff {
	D_SAME,               /* we answer as Linux rxe did */
	D_RATE_LIMIT_RC,      /* RC rate limiting accepted on 3 moves */
	D_RATE_LIMIT_TABLE,   /* RC rate limit elsewhere: EINVAL, not EOPNOTSUPP */
	D_RATE_LIMIT_CALL,    /* ibv_modify_qp_rate_limit() works */
	D_UC_SQD_AV,          /* UC SQD->SQD with AV follows the table */
	D_CUR_STATE,          /* IBV_QP_CUR_STATE must name the real state */
	D_QP_STATE_RANGE,     /* qp_state 256, 257 are not RESET, INIT */
	D_PATH_MTU_ZERO,      /* path_mtu 0 */
	D_PATH_MTU_ACTIVE,    /* path_mtu above the active MTU */
	D_PSN_24BIT,          /* PSNs are refused, not masked */
	D_QPN_24BIT,          /* dest_qp_num beyond 24 bits */
	D_RETRY_3BIT,         /* retry_cnt, rnr_retry > 7 */
	D_RNR_TIMER_5BIT,     /* min_rnr_timer > 31 */
	D_MIG_STATE,          /* path_mig_state beyond ARMED */
	D_PKEY_INDEX,         /* pkey_index beyond the P_Key table */
	D_ACCESS_FLAGS,       /* unknown IBV_ACCESS_* bits */
	D_DEST_RD_ATOMIC,     /* max_dest_rd_atomic above max_qp_rd_atom */
	D_MCAST_DGID,         /* multicast DGID on a connected QP */
	D_FLOW_LABEL,         /* flow label beyond 20 bits */
	D_COUNT
};

static const char *const diff_names[D_COUNT] = {
	[D_SAME] = "same as Linux",
	[D_RATE_LIMIT_RC] = "rate_limit on RC accepted",
	[D_RATE_LIMIT_TABLE] = "rate_limit on RC outside the 3 moves: EINVAL",
	[D_RATE_LIMIT_CALL] = "ibv_modify_qp_rate_limit accepted",
	[D_UC_SQD_AV] = "UC SQD->SQD with AV accepted",
	[D_CUR_STATE] = "CUR_STATE must match",
	[D_QP_STATE_RANGE] = "qp_state 256/257 refused",
	[D_PATH_MTU_ZERO] = "path_mtu 0 refused",
	[D_PATH_MTU_ACTIVE] = "path_mtu above active MTU refused",
	[D_PSN_24BIT] = "PSN > 24 bits refused",
	[D_QPN_24BIT] = "dest_qp_num > 24 bits refused",
	[D_RETRY_3BIT] = "retry_cnt/rnr_retry > 7 refused",
	[D_RNR_TIMER_5BIT] = "min_rnr_timer > 31 refused",
	[D_MIG_STATE] = "path_mig_state > ARMED refused",
	[D_PKEY_INDEX] = "pkey_index beyond table refused",
	[D_ACCESS_FLAGS] = "unknown access flags refused",
	[D_DEST_RD_ATOMIC] = "max_dest_rd_atomic > limit refused",
	[D_MCAST_DGID] = "multicast DGID refused",
	[D_FLOW_LABEL] = "flow_label > 20 bits refused",
};

/* How many probes each heading holds; doc/qp-state-machine.md quotes them. */
static const unsigned int diff_expected[D_COUNT] = {
	[D_SAME] = 3710,
	[D_RATE_LIMIT_RC] = 7, [D_RATE_LIMIT_TABLE] = 39, [D_RATE_LIMIT_CALL] = 1,
	[D_UC_SQD_AV] = 2, [D_CUR_STATE] = 57, [D_QP_STATE_RANGE] = 2,
	[D_PATH_MTU_ZERO] = 2, [D_PATH_MTU_ACTIVE] = 4, [D_PSN_24BIT] = 10,
	[D_QPN_24BIT] = 4, [D_RETRY_3BIT] = 5, [D_RNR_TIMER_5BIT] = 6,
	[D_MIG_STATE] = 6, [D_PKEY_INDEX] = 16, [D_ACCESS_FLAGS] = 9,
	[D_DEST_RD_ATOMIC] = 4, [D_MCAST_DGID] = 6, [D_FLOW_LABEL] = 1,
};

/* IBV_ACCESS_* bits 0-7, rdma-core 45's FLUSH_GLOBAL/_PERSISTENT (8, 9), RELAXED_ORDERING */
#define ACCESS_KNOWN 0x1003ffu

struct expect {
	int rc;
	int state;
	enum diff why;
};

static bool
is_multicast(const union ibv_gid *g)
{
	static const uint8_t v4[12] = { [10] = 0xff, [11] = 0xff };

	if (memcmp(g->raw, v4, 12) == 0)
		return (g->raw[12] & 0xf0) == 0xe0;
	return g->raw[0] == 0xff;
}

/* The value rules where we are stricter than rxe, first match wins. */
static enum diff
stricter_value(const struct fx_probe *p, const struct ibv_qp_attr *a, int m)
{
	if ((m & IBV_QP_CUR_STATE) && (int)a->cur_qp_state != p->from)
		return D_CUR_STATE;
	if ((m & IBV_QP_STATE) && (unsigned int)a->qp_state > IBV_QPS_ERR)
		return D_QP_STATE_RANGE;
	if ((m & IBV_QP_PATH_MTU) && a->path_mtu == 0)
		return D_PATH_MTU_ZERO;
	if ((m & IBV_QP_PATH_MTU) && a->path_mtu > IBV_MTU_1024)
		return D_PATH_MTU_ACTIVE;
	if (((m & IBV_QP_RQ_PSN) && a->rq_psn > 0xffffff) ||
	    ((m & IBV_QP_SQ_PSN) && a->sq_psn > 0xffffff))
		return D_PSN_24BIT;
	if ((m & IBV_QP_DEST_QPN) && a->dest_qp_num > 0xffffff)
		return D_QPN_24BIT;
	if (((m & IBV_QP_RETRY_CNT) && a->retry_cnt > 7) ||
	    ((m & IBV_QP_RNR_RETRY) && a->rnr_retry > 7))
		return D_RETRY_3BIT;
	if ((m & IBV_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31)
		return D_RNR_TIMER_5BIT;
	if ((m & IBV_QP_PATH_MIG_STATE) && a->path_mig_state > IBV_MIG_ARMED)
		return D_MIG_STATE;
	if ((m & IBV_QP_PKEY_INDEX) && a->pkey_index >= 1)
		return D_PKEY_INDEX;
	if ((m & IBV_QP_ACCESS_FLAGS) && (a->qp_access_flags & ~ACCESS_KNOWN))
		return D_ACCESS_FLAGS;
	if ((m & IBV_QP_MAX_DEST_RD_ATOMIC) && a->max_dest_rd_atomic > 128)
		return D_DEST_RD_ATOMIC;
	if ((m & IBV_QP_AV) && is_multicast(&a->ah_attr.grh.dgid))
		return D_MCAST_DGID;
	if ((m & IBV_QP_AV) && a->ah_attr.grh.flow_label > 0xfffff)
		return D_FLOW_LABEL;
	return D_SAME;
}

static struct expect
expect_of(const struct fx_probe *p, const struct ibv_qp_attr *a, int m)
{
	struct expect e = { p->rc, p->state_after, D_SAME };
	int to = p->has_to ? (int)p->to : p->from;
	bool unknown_bits = m & ~QP_SEM_MASK_KNOWN;

	if (strcmp(p->variant, "ibv_modify_qp_rate_limit") == 0)
		return (struct expect){ 0, p->from, D_RATE_LIMIT_CALL };
	if (p->type == IBV_QPT_RC && (m & IBV_QP_RATE_LIMIT) && !unknown_bits) {
		bool move = (p->from == IBV_QPS_INIT && to == IBV_QPS_RTR) ||
			    (p->from == IBV_QPS_RTR && to == IBV_QPS_RTS) ||
			    (p->from == IBV_QPS_RTS && to == IBV_QPS_RTS);
		int base = IBV_QP_STATE | fx_required(p->type, p->from, to);

		if (move && (m & ~IBV_QP_RATE_LIMIT) == base)
			return (struct expect){ 0, to, D_RATE_LIMIT_RC };
		return (struct expect){ EINVAL, p->from, D_RATE_LIMIT_TABLE };
	}
	if (p->type == IBV_QPT_UC && p->from == IBV_QPS_SQD && to == IBV_QPS_SQD &&
	    (m & ~IBV_QP_STATE) == IBV_QP_AV)
		return (struct expect){ 0, IBV_QPS_SQD, D_UC_SQD_AV };
	if (p->rc != 0)
		return e;
	e.why = stricter_value(p, a, m);
	if (e.why != D_SAME) {
		e.rc = EINVAL;
		e.state = p->from;
	}
	return e;
}

/* Fields whose value we deliberately report differently from rxe; the
 * model above decides them, the oracle's "changed" column the others. */
static bool
ours_field(const char *name)
{
	static const char *const names[] = {
		"max_rd_atomic",       /* not rounded up */
		"ah.sl",               /* stored (rxe reads 0) */
		"ah.static_rate",      /* stored (rxe reads 0) */
		"en_sqd_async_notify", /* reported (rxe leaves it unwritten) */
		"rate_limit",          /* reported (rxe leaves it unwritten) */
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strncmp(name, names[i], strlen(names[i])) == 0 &&
		    (name[strlen(names[i])] == ':' || name[strlen(names[i])] == '\0'))
			return true;
	return false;
}

/* Keep the comma-separated entries of @p list not (or only) in ours_field(). */
static void
filter_changed(const char *list, bool keep_ours, char *out, size_t len)
{
	char buf[2048], *save = NULL;
	size_t used = 0;

	out[0] = '\0';
	if (strcmp(list, "-") == 0)
		return;
	snprintf(buf, sizeof(buf), "%s", list);
	for (char *t = strtok_r(buf, ",", &save); t != NULL;
	     t = strtok_r(NULL, ",", &save)) {
		if (ours_field(t) != keep_ours)
			continue;
		used += (size_t)snprintf(out + used, len - used, "%s%s",
					 used ? "," : "", t);
		if (used >= len)
			break;
	}
}

struct tally {
	unsigned int total;
	unsigned int by_diff[D_COUNT];
	unsigned int sq_drained;                 /* SQ_DRAINED raised, as Linux */
	unsigned int sq_drained_without_notify;  /* ... without EN_SQD_ASYNC_NOTIFY */
	unsigned int field_diffs;                /* probes with ours_field() changes */
	unsigned int failures;
};

static void
fail(struct tally *t, const struct fx_probe *p, const char *what)
{
	if (t->failures++ < 30)
		cr_log_error("probe %d (%s %s %s): %s", p->id, p->section,
			     p->variant, p->overrides, what);
}

static void
run_probe(const struct fx_probe *p, struct tally *t)
{
	const struct qp_sem_device *dev = fx_device();
	struct qp_sem qp, saved;
	struct ibv_qp_attr a, qa, model;
	struct ibv_qp_init_attr qi;
	struct qp_sem_effects fx;
	struct fx_dump before, after, want;
	struct expect e;
	char msg[8192], ours[2048], theirs[2048];
	int mask, rc;

	cr_assert_eq(fx_create(&qp, p->type), 0);
	cr_assert_eq(fx_bring_to(&qp, p->from), 0, "probe %d: bring-up", p->id);
	fx_probe_request(p, &a, &mask);
	fx_dump_qp(&qp, &before);
	saved = qp;

	rc = qp_sem_modify(&qp, &a, mask, dev, &fx);
	e = expect_of(p, &a, mask);
	t->total++;
	t->by_diff[e.why]++;
	if (rc != e.rc) {
		snprintf(msg, sizeof(msg), "rc %d, expected %d (%s; Linux %d)", rc,
			 e.rc, diff_names[e.why], p->rc);
		fail(t, p, msg);
		return;
	}
	if (rc != 0) {
		/* All or nothing: not one byte of the QP may change. */
		if (memcmp(&qp, &saved, sizeof(qp)) != 0)
			fail(t, p, "failed call changed the QP");
		fx_dump_qp(&qp, &after);
		fx_dump_diff(&before, &after, ours, sizeof(ours));
		if (strcmp(ours, "-") != 0)
			fail(t, p, "failed call changed the query dump");
		if (fx.applied_mask != 0 || fx.flags != 0 || fx.n_events != 0)
			fail(t, p, "failed call reported effects");
		return;
	}
	if ((int)qp.attr.qp_state != e.state) {
		snprintf(msg, sizeof(msg), "state %d, expected %d", qp.attr.qp_state,
			 e.state);
		fail(t, p, msg);
	}
	if (fx.applied_mask != mask)
		fail(t, p, "applied_mask differs from the request");

	/* Every field: the request applied, nothing else touched. */
	cr_assert_eq(qp_sem_query(&saved, 0, &qa, &qi), 0);
	fx_model_after(&qa, &a, mask, e.state, &model);
	fx_dump(&model, &qi, &want);
	fx_dump_qp(&qp, &after);
	fx_dump_diff(&want, &after, ours, sizeof(ours));
	if (strcmp(ours, "-") != 0) {
		snprintf(msg, sizeof(msg), "differs from the request: %s", ours);
		fail(t, p, msg);
	}

	/* RTS -> SQD: the engine finds the send queue empty at once, as rxe
	 * did before the oracle's query; SQ_DRAINED every time, as rxe. */
	if (fx.flags & QP_SEM_FX_SQ_DRAIN) {
		struct qp_sem_effects dr;
		bool notify = (mask & IBV_QP_EN_SQD_ASYNC_NOTIFY) &&
			      a.en_sqd_async_notify;

		cr_assert_eq(qp_sem_sq_drained(&qp, &dr), 0);
		if (dr.n_events != 1u || dr.event[0] != IBV_EVENT_SQ_DRAINED)
			fail(t, p, "SQ_DRAINED event");
		if (strcmp(p->events, "SQ_DRAINED(this_qp)") != 0)
			fail(t, p, "event Linux did not raise");
		t->sq_drained++;
		t->sq_drained_without_notify += !notify;
		fx_dump_qp(&qp, &after);
	} else if (strcmp(p->events, "-") != 0 && e.why == D_SAME) {
		fail(t, p, "Linux raised an event, we started no drain");
	}

	/* Where Linux succeeded too, the same fields changed the same way. */
	if (e.why == D_SAME) {
		char all[2048], ours_f[2048];

		fx_dump_diff(&before, &after, all, sizeof(all));
		filter_changed(all, false, ours, sizeof(ours));
		filter_changed(p->changed, false, theirs, sizeof(theirs));
		if (strcmp(ours, theirs) != 0) {
			snprintf(msg, sizeof(msg), "changed [%s], Linux [%s]", ours,
				 theirs);
			fail(t, p, msg);
		}
		filter_changed(all, true, ours_f, sizeof(ours_f));
		filter_changed(p->changed, true, theirs, sizeof(theirs));
		if (strcmp(ours_f, theirs) != 0)
			t->field_diffs++;
	}
}

Test(qp_oracle, modify_probes, .timeout = 120)
{
	unsigned int n, summary;
	struct fx_probe *probes = fx_load_probes(&n, &summary);
	struct tally t = { 0 };
	unsigned int sum = 0;

	cr_assert_eq(n, summary, "parsed %u probes, the file says %u", n, summary);
	cr_assert_gt(n, 3800u);
	for (unsigned int i = 0; i < n; i++)
		run_probe(&probes[i], &t);

	cr_log_info("%u probes", t.total);
	for (int d = 0; d < D_COUNT; d++) {
		sum += t.by_diff[d];
		if (t.by_diff[d] != 0)
			cr_log_info("  %5u  %s", t.by_diff[d], diff_names[d]);
		cr_expect_eq(t.by_diff[d], diff_expected[d], "%s: %u probes, the "
			     "doc says %u", diff_names[d], t.by_diff[d],
			     diff_expected[d]);
	}
	cr_log_info("  (%u with SQ_DRAINED as Linux, %u of them without "
		    "EN_SQD_ASYNC_NOTIFY; %u with reported field differences)",
		    t.sq_drained, t.sq_drained_without_notify, t.field_diffs);
	/* Every probe is accounted for, once. */
	cr_expect_eq(sum, n);
	cr_expect_eq(t.total, n);
	cr_expect_eq(t.sq_drained, 10u);
	cr_expect_eq(t.sq_drained_without_notify, 5u);
	cr_expect_eq(t.failures, 0u, "%u probes failed (first 30 logged)",
		     t.failures);
	free(probes);
}

/* Our one table against what the Linux table alone predicted (tbl column). */
Test(qp_oracle, table_matches_linux)
{
	unsigned int n, summary, compared = 0, ours_differ = 0;
	struct fx_probe *probes = fx_load_probes(&n, &summary);

	for (unsigned int i = 0; i < n; i++) {
		const struct fx_probe *p = &probes[i];
		struct ibv_qp_attr a;
		int mask, to, cur;
		bool linux_ok, ours;

		if (strcmp(p->tbl, "ok") != 0 && strcmp(p->tbl, "bad") != 0)
			continue;
		fx_probe_request(p, &a, &mask);
		cur = (mask & IBV_QP_CUR_STATE) ? (int)a.cur_qp_state : p->from;
		to = p->has_to ? (int)p->to : cur;
		linux_ok = strcmp(p->tbl, "ok") == 0;
		ours = qp_sem_mask_ok(cur, to, p->type, mask);
		compared++;
		if (p->type == IBV_QPT_RC && (mask & IBV_QP_RATE_LIMIT) &&
		    !(mask & ~QP_SEM_MASK_KNOWN) && ours && !linux_ok) {
			ours_differ++;  /* our RC rate-limit cells */
			continue;
		}
		cr_expect_eq(ours, linux_ok, "probe %d: table says %d, Linux %d",
			     p->id, ours, linux_ok);
	}
	cr_log_info("%u table verdicts compared, %u differ (RC rate limit)",
		    compared, ours_differ);
	cr_expect_gt(compared, 3500u);
	/* plus:RATE_LIMIT on the 3 moves, and 4 rate_limit value probes. */
	cr_expect_eq(ours_differ, 7u);
	free(probes);
}

/* ---- query dumps (query_qp_rxe.txt) ---- */

static int
step(struct qp_sem *qp, enum ibv_qp_state to, int extra)
{
	struct ibv_qp_attr a;
	int from = qp->attr.qp_state;
	int req = fx_required(qp->init.qp_type, from, to);

	fx_setup_attr(&a, from);
	a.qp_state = to;
	for (unsigned int b = 0; b < 32; b++)
		if (extra & (int)(1u << b))
			fx_alt_attr(&a, b);
	return qp_sem_modify(qp, &a, IBV_QP_STATE | req | extra, fx_device(), NULL);
}

static int
optional_bits(const struct qp_sem *qp, enum ibv_qp_state to)
{
	const struct qp_sem_transition *t = qp_sem_transition(qp->attr.qp_state, to);

	return t->opt[qp_sem_type_index(qp->init.qp_type)] &
	       ~(IBV_QP_ALT_PATH | IBV_QP_RATE_LIMIT);
}

/* Rebuild the QP the oracle queried under @p path. */
static void
build_path(struct qp_sem *qp, enum ibv_qp_type type, const char *path)
{
	cr_assert_eq(fx_create(qp, type), 0);
	if (strncmp(path, "after_exact:", 12) == 0) {
		char from[8], to[8];

		cr_assert_eq(sscanf(path + 12, "%7[A-Z]->%7[A-Z]", from, to), 2);
		cr_assert_eq(fx_bring_to(qp, fx_state_parse(from)), 0);
		cr_assert_eq(step(qp, fx_state_parse(to), 0), 0, "%s", path);
		if (qp->attr.sq_draining)
			cr_assert_eq(qp_sem_sq_drained(qp, NULL), 0);
		return;
	}
	if (strcmp(path, "RESET(fresh)") == 0)
		return;
	if (strcmp(path, "RTS(all_optional)") == 0) {
		cr_assert_eq(step(qp, IBV_QPS_INIT, 0), 0);
		cr_assert_eq(step(qp, IBV_QPS_RTR, optional_bits(qp, IBV_QPS_RTR)), 0);
		cr_assert_eq(step(qp, IBV_QPS_RTS, optional_bits(qp, IBV_QPS_RTS)), 0);
		return;
	}
	if (strcmp(path, "ERR(from_INIT)") == 0) {
		cr_assert_eq(fx_bring_to(qp, IBV_QPS_ERR), 0);
		return;
	}
	/* The main chain: fresh, INIT, RTR, RTS, SQD, RTS(from_SQD),
	 * ERR(from_RTS), RESET(from_ERR), INIT(after_reset). */
	static const struct { const char *path; enum ibv_qp_state to; } chain[] = {
		{ "INIT", IBV_QPS_INIT }, { "RTR", IBV_QPS_RTR },
		{ "RTS", IBV_QPS_RTS }, { "SQD", IBV_QPS_SQD },
		{ "RTS(from_SQD)", IBV_QPS_RTS }, { "ERR(from_RTS)", IBV_QPS_ERR },
		{ "RESET(from_ERR)", IBV_QPS_RESET },
		{ "INIT(after_reset)", IBV_QPS_INIT },
	};
	for (size_t i = 0; i < sizeof(chain) / sizeof(chain[0]); i++) {
		cr_assert_eq(step(qp, chain[i].to, 0), 0, "%s", chain[i].path);
		if (qp->attr.sq_draining)
			cr_assert_eq(qp_sem_sq_drained(qp, NULL), 0);
		if (strcmp(path, chain[i].path) == 0)
			return;
	}
	cr_assert_fail("unknown query path %s", path);
}

static int
query_mask(const char *name)
{
	if (strcmp(name, "STATE") == 0)
		return IBV_QP_STATE;
	if (strcmp(name, "0") == 0)
		return 0;
	if (strcmp(name, "bits0-24") == 0)
		return (1 << 25) - 1;
	if (strcmp(name, "bits0-25") == 0)
		return (1 << 26) - 1;
	cr_assert_str_eq(name, "bits0-31");
	return -1;
}

Test(qp_oracle, query_dumps, .timeout = 60)
{
	char path[512], line[512], group[128] = "";
	FILE *f = fopen(fx_oracle_path("query_qp_rxe.txt", path, sizeof(path)), "r");
	struct qp_sem qp;
	struct fx_dump d;
	unsigned int fields = 0, same = 0, cur_state = 0, cached = 0;
	unsigned int unwritten = 0, groups = 0;

	cr_assert(f != NULL, "cannot open %s", path);
	while (fgets(line, sizeof(line), f) != NULL) {
		char *c[8], key[128];
		struct ibv_qp_attr a;
		struct ibv_qp_init_attr init;
		const char *ours;
		int rc;

		if (line[0] == '#')
			continue;
		cr_assert_eq(fx_split_tabs(line, c, 8), 6, "bad line");
		snprintf(key, sizeof(key), "%s/%s/%s", c[0], c[1], c[2]);
		if (strcmp(key, group) != 0) {
			snprintf(group, sizeof(group), "%s", key);
			build_path(&qp, fx_type_parse(c[0]), c[1]);
			groups++;
		}
		rc = qp_sem_query(&qp, query_mask(c[2]), &a, &init);
		if (strcmp(c[3], "_rc") == 0) {
			cr_expect_eq(rc, atoi(c[4]), "%s: query rc %d, Linux %s",
				     key, rc, c[4]);
			continue;
		}
		if (strcmp(c[3], "ibv_qp.state") == 0) {
			cached++;  /* libibverbs' cached copy: the shim's business */
			continue;
		}
		cr_assert_eq(rc, 0, "%s", key);
		fx_dump(&a, &init, &d);
		ours = fx_dump_get(&d, c[3]);
		cr_assert(ours != NULL, "%s: no field %s", key, c[3]);
		fields++;
		if (strcmp(c[5], "UNWRITTEN") == 0)
			unwritten++;  /* we write it; its value must still agree */
		if (strcmp(c[3], "cur_qp_state") == 0)
			cur_state++;  /* as Linux: RESET until a CUR_STATE call */
		cr_expect_str_eq(ours, c[4], "%s %s: ours %s, Linux %s", key, c[3],
				 ours, c[4]);
		same += strcmp(ours, c[4]) == 0;
	}
	fclose(f);
	cr_log_info("%u groups, %u fields: %u equal (%u cur_qp_state), %u were "
		    "unwritten by rxe, %u cached-state lines skipped", groups,
		    fields, same, cur_state, unwritten, cached);
	cr_expect_gt(groups, 150u);
	cr_expect_gt(fields, 10000u);
}

/* ---- creation (device_rxe.txt "create" lines) ---- */

Test(qp_oracle, create_caps)
{
	char path[512], line[512];
	FILE *f = fopen(fx_oracle_path("device_rxe.txt", path, sizeof(path)), "r");
	unsigned int checked = 0, enomem = 0;

	cr_assert(f != NULL, "cannot open %s", path);
	while (fgets(line, sizeof(line), f) != NULL) {
		char *c[8];
		unsigned int n = fx_split_tabs(line, c, 8);
		struct ibv_qp_init_attr init = { .qp_context = FX_CTX,
						 .send_cq = FX_CQ, .recv_cq = FX_CQ };
		struct ibv_qp_cap q;
		struct qp_sem qp;
		int rc, want;

		if (n < 6 || strcmp(c[0], "create") != 0)
			continue;
		if (strcmp(c[2], "-") != 0)
			init.qp_type = fx_type_parse(c[2]);
		else if (strcmp(c[1], "XRC_SEND") == 0)
			init.qp_type = IBV_QPT_XRC_SEND;
		else if (strcmp(c[1], "XRC_RECV") == 0)
			init.qp_type = IBV_QPT_XRC_RECV;
		else if (strcmp(c[1], "DRIVER") == 0)
			init.qp_type = IBV_QPT_DRIVER;
		else
			init.qp_type = 99;
		cr_assert_eq(sscanf(c[3], "req=%u/%u/%u/%u/%u", &init.cap.max_send_wr,
				    &init.cap.max_recv_wr, &init.cap.max_send_sge,
				    &init.cap.max_recv_sge,
				    &init.cap.max_inline_data), 5);
		if (strcmp(c[1], "srq") == 0)
			init.srq = FX_SRQ;
		if (strcmp(c[1], "sq_sig_all") == 0)
			init.sq_sig_all = 1;
		rc = qp_sem_create(&qp, &init, fx_device());
		want = strcmp(c[4], "OK") == 0 ? 0 : fx_errno_parse(c[5]);
		checked++;
		if (want == ENOMEM) {
			/* Deliberate: ring memory is the engine's to allocate. */
			cr_expect_eq(rc, 0, "%s %s", c[1], c[2]);
			enomem++;
			continue;
		}
		cr_expect_eq(rc, want, "%s %s: rc %d", c[1], c[2], rc);
		if (rc != 0 || want != 0)
			continue;
		cr_assert(n >= 7);
		cr_assert_eq(sscanf(c[6], "query=%u/%u/%u/%u/%u", &q.max_send_wr,
				    &q.max_recv_wr, &q.max_send_sge, &q.max_recv_sge,
				    &q.max_inline_data), 5);
		cr_expect_eq(memcmp(&qp.init.cap, &q, sizeof(q)), 0, "%s %s caps",
			     c[1], c[2]);
		cr_expect_eq(memcmp(&qp.attr.cap, &q, sizeof(q)), 0);
		cr_expect_eq(qp.init.sq_sig_all, init.sq_sig_all);
		cr_expect_eq(qp.attr.qp_state, IBV_QPS_RESET);
	}
	fclose(f);
	cr_log_info("%u create probes, %u ENOMEM left to the engine", checked,
		    enomem);
	cr_expect_gt(checked, 50u);
	cr_expect_eq(enomem, 3u);
}
