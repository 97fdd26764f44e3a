/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Random (mask, attribute) requests and data-path events against random QPs
 * in random states, fixed seed, bounded count. Properties:
 *  - a failed call changes no byte of the QP and reports no effect;
 *  - a successful modify is one the table allows, lands in the requested
 *    state, and writes exactly the masked fields as requested;
 *  - whatever happens, every stored value stays inside its field's range.
 */
#include <errno.h>
#include <string.h>

#include <criterion/criterion.h>

#include "qp_fixture.h"

#define ITERATIONS 100000
#define EPISODE    24       /* operations on one QP before a fresh one */

static uint64_t rng;

static uint64_t
rnd(void)
{
	/* xorshift64* */
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545f4914f6cdd1dull;
}

static uint32_t
pick(uint32_t n)
{
	return (uint32_t)(rnd() % n);
}

/* Mostly plausible values, sometimes boundaries, sometimes noise. */
static uint32_t
value(uint32_t plausible, uint32_t limit)
{
	static const uint32_t edges[] = { 0, 1, 7, 8, 31, 32, 128, 129, 255, 256,
					  0xffffff, 0x1000000, 0x7fffffff,
					  0xffffffff };

	switch (pick(8)) {
	case 0:
		return edges[pick(sizeof(edges) / sizeof(edges[0]))];
	case 1:
		return (uint32_t)rnd();
	case 2:
		return pick(limit + 2);
	default:
		return plausible;
	}
}

static void
random_gid(union ibv_gid *g)
{
	static const char *const gids[] = { "self", "peer", "zero", "198.18.0.250",
					    "224.0.0.1", "ff02::1", "fe80::1",
					    "2001:db8::1" };
	struct ibv_qp_attr tmp;

	if (pick(4) != 0)
		return;
	cr_assert(fx_override(&tmp, "ah.grh.dgid", gids[pick(8)]));
	*g = tmp.ah_attr.grh.dgid;
}

static void
random_av(struct ibv_ah_attr *ah)
{
	random_gid(&ah->grh.dgid);
	if (pick(8) == 0)
		ah->grh.sgid_index = (uint8_t)value(1, 3);
	if (pick(8) == 0)
		ah->port_num = (uint8_t)value(1, 2);
	if (pick(8) == 0)
		ah->is_global = (uint8_t)pick(2);
	if (pick(4) == 0)
		ah->grh.flow_label = value(0x12345, 0xfffff);
	ah->grh.traffic_class = (uint8_t)rnd();
	ah->sl = (uint8_t)pick(16);
}

static void
random_attr(struct ibv_qp_attr *a, enum ibv_qp_state cur)
{
	fx_setup_attr(a, cur);
	a->qp_state = pick(16) == 0 ? (int)value(3, 8) : (int)pick(7);
	if (pick(6) == 0)
		a->cur_qp_state = (int)pick(9);
	a->en_sqd_async_notify = (uint8_t)pick(3);
	a->qp_access_flags = value(0x7, 0xff);
	a->pkey_index = (uint16_t)value(0, 2);
	a->port_num = (uint8_t)value(1, 2);
	a->qkey = (uint32_t)rnd();
	random_av(&a->ah_attr);
	a->path_mtu = (int)value(IBV_MTU_1024, 6);
	a->timeout = (uint8_t)value(14, 32);
	a->retry_cnt = (uint8_t)value(7, 8);
	a->rnr_retry = (uint8_t)value(7, 8);
	a->rq_psn = value(0x111111, 0xffffff);
	a->sq_psn = value(0x333333, 0xffffff);
	a->max_rd_atomic = (uint8_t)value(1, 129);
	a->max_dest_rd_atomic = (uint8_t)value(1, 129);
	random_av(&a->alt_ah_attr);
	a->alt_port_num = (uint8_t)value(1, 2);
	a->alt_pkey_index = (uint16_t)value(0, 2);
	a->alt_timeout = (uint8_t)value(14, 32);
	a->min_rnr_timer = (uint8_t)value(12, 32);
	a->path_mig_state = (int)value(IBV_MIG_MIGRATED, 3);
	a->dest_qp_num = value(0xabc, 0xffffff);
	a->rate_limit = value(1000, 100000000);
}

static int
random_mask(const struct qp_sem *qp, const struct ibv_qp_attr *a)
{
	int ti = qp_sem_type_index(qp->init.qp_type);
	const struct qp_sem_transition *t;
	int mask;

	switch (pick(10)) {
	case 0:  /* noise */
		return (int)rnd();
	case 1:  /* stay: optional bits of X -> X */
		t = qp_sem_transition(qp->attr.qp_state, qp->attr.qp_state);
		return (int)(rnd() & (uint32_t)t->opt[ti]);
	default:
		break;
	}
	t = qp_sem_transition(qp->attr.qp_state, (unsigned int)a->qp_state <= 6 ?
			      a->qp_state : IBV_QPS_RTS);
	mask = IBV_QP_STATE | t->req[ti] | (int)(rnd() & (uint32_t)t->opt[ti]);
	if (pick(4) == 0)
		mask ^= (int)(1u << pick(32));  /* one bit too many or too few */
	return mask;
}

/* Ranges every stored attribute must respect, whatever came before. */
static void
check_invariants(const struct qp_sem *qp)
{
	struct ibv_qp_attr a;

	cr_assert_eq(qp_sem_query(qp, 0, &a, NULL), 0);
	cr_assert_leq((unsigned int)a.qp_state, IBV_QPS_ERR);
	cr_assert_leq((unsigned int)a.cur_qp_state, IBV_QPS_ERR);
	cr_assert(a.path_mtu >= IBV_MTU_256 && a.path_mtu <= IBV_MTU_1024);
	cr_assert_leq((unsigned int)a.path_mig_state, IBV_MIG_ARMED);
	cr_assert_leq(a.rq_psn, 0xffffffu);
	cr_assert_leq(a.sq_psn, 0xffffffu);
	cr_assert_leq(a.dest_qp_num, 0xffffffu);
	cr_assert_leq(a.timeout, 31);
	cr_assert_leq(a.alt_timeout, 31);
	cr_assert_leq(a.min_rnr_timer, 31);
	cr_assert_leq(a.retry_cnt, 7);
	cr_assert_leq(a.rnr_retry, 7);
	cr_assert_leq(a.max_rd_atomic, 128);
	cr_assert_leq(a.max_dest_rd_atomic, 128);
	cr_assert_eq(a.pkey_index, 0);
	cr_assert_leq(a.port_num, 1);
	cr_assert_eq(a.qp_access_flags & ~0x1003ffu, 0); /* bits 8, 9: FLUSH (rdma-core 45) */
	cr_assert_leq(a.ah_attr.grh.flow_label, 0xfffffu);
	cr_assert_leq(a.sq_draining, 1);
	cr_assert(a.sq_draining == 0 || a.qp_state == IBV_QPS_SQD);
	cr_assert(a.rate_limit == 0 ||
		  (a.rate_limit >= 1000 && a.rate_limit <= 100000000));
}

struct counts {
	unsigned int ok, refused, events_ok, moves[7];
};

static void
fuzz_modify(struct qp_sem *qp, const struct qp_sem_device *dev,
	    struct counts *n)
{
	struct qp_sem saved = *qp;
	struct qp_sem_effects fx;
	struct ibv_qp_attr a, before, model;
	struct fx_dump want, have;
	char diff[2048];
	int mask, rc, next;

	random_attr(&a, qp->attr.qp_state);
	mask = random_mask(qp, &a);
	rc = qp_sem_modify(qp, &a, mask, dev, &fx);
	if (rc != 0) {
		cr_assert(rc == EINVAL || rc == EOPNOTSUPP || rc == ENODATA ||
			  rc == ETIMEDOUT, "rc %d", rc);
		cr_assert_eq(memcmp(qp, &saved, sizeof(*qp)), 0,
			     "failed modify (rc %d, mask 0x%x) changed the QP", rc,
			     mask);
		cr_assert_eq(fx.applied_mask, 0);
		cr_assert_eq(fx.flags, 0);
		cr_assert_eq(fx.n_events, 0);
		n->refused++;
		return;
	}
	next = (mask & IBV_QP_STATE) ? (int)a.qp_state : (int)saved.attr.qp_state;
	cr_assert(qp_sem_mask_ok(saved.attr.qp_state, next, qp->init.qp_type, mask),
		  "accepted a mask the table refuses: 0x%x", mask);
	cr_assert(!(mask & IBV_QP_CUR_STATE) ||
		  a.cur_qp_state == saved.attr.qp_state);
	cr_assert_eq((int)qp->attr.qp_state, next);
	cr_assert_eq(fx.applied_mask, mask);
	cr_assert_eq(qp_sem_query(&saved, 0, &before, NULL), 0);
	fx_model_after(&before, &a, mask, next, &model);
	fx_dump(&model, &qp->init, &want);
	fx_dump_qp(qp, &have);
	fx_dump_diff(&want, &have, diff, sizeof(diff));
	cr_assert_str_eq(diff, "-", "mask 0x%x: %s", mask, diff);
	n->ok++;
	n->moves[next]++;
}

static void
fuzz_event(struct qp_sem *qp, struct counts *n)
{
	static const enum ibv_event_type causes[] = {
		IBV_EVENT_QP_FATAL, IBV_EVENT_QP_REQ_ERR, IBV_EVENT_QP_ACCESS_ERR,
		IBV_EVENT_SQ_DRAINED,
	};
	struct qp_sem saved = *qp;
	struct qp_sem_effects fx;
	int rc;

	switch (pick(6)) {
	case 0:
		rc = qp_sem_sq_drained(qp, &fx);
		break;
	case 1:
		rc = qp_sem_comm_established(qp, &fx);
		break;
	case 2:
		rc = qp_sem_send_queue_error(qp, &fx);
		break;
	case 3:
		rc = qp_sem_fatal(qp, causes[pick(4)], &fx);
		break;
	case 4:
		rc = qp_sem_path_armed(qp, &fx);
		break;
	default:
		rc = qp_sem_path_migrated(qp, &fx);
		break;
	}
	cr_assert(rc == 0 || rc == EINVAL);
	if (rc != 0)
		cr_assert_eq(memcmp(qp, &saved, sizeof(*qp)), 0);
	else
		n->events_ok++;
	cr_assert_leq(fx.n_events, QP_SEM_MAX_EVENTS);
}

Test(qp_fuzz, modify_all_or_nothing, .timeout = 60)
{
	static const enum ibv_qp_type types[] = { IBV_QPT_RC, IBV_QPT_UC,
						  IBV_QPT_UD, IBV_QPT_RAW_PACKET };
	struct qp_sem_device plain, apm;
	struct counts n = { 0 };
	struct qp_sem qp;

	fx_device_copy(&plain);
	fx_device_copy(&apm);
	apm.attr.device_cap_flags |= IBV_DEVICE_AUTO_PATH_MIG;
	rng = 0x9e3779b97f4a7c15ull;
	for (unsigned int i = 0; i < ITERATIONS; i++) {
		if (i % EPISODE == 0) {
			static const enum ibv_qp_state states[] = {
				IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS,
				IBV_QPS_SQD, IBV_QPS_SQE, IBV_QPS_ERR };
			enum ibv_qp_type type = types[pick(4)];
			enum ibv_qp_state s = states[pick(7)];

			if (s == IBV_QPS_SQE && type != IBV_QPT_UC && type != IBV_QPT_UD)
				s = IBV_QPS_RTS;
			cr_assert_eq(fx_create(&qp, type), 0);
			cr_assert_eq(fx_bring_to(&qp, s), 0);
		}
		if (pick(7) == 0)
			fuzz_event(&qp, &n);
		else
			fuzz_modify(&qp, pick(2) ? &apm : &plain, &n);
		check_invariants(&qp);
	}
	cr_log_info("%u modifies accepted, %u refused, %u events; moves into "
		    "RESET %u INIT %u RTR %u RTS %u SQD %u ERR %u", n.ok, n.refused,
		    n.events_ok, n.moves[0], n.moves[1], n.moves[2], n.moves[3],
		    n.moves[4], n.moves[6]);
	/* The fuzzer must reach both outcomes and every target state. */
	cr_expect_gt(n.ok, ITERATIONS / 20);
	cr_expect_gt(n.refused, ITERATIONS / 4);
	for (int s = IBV_QPS_RESET; s <= IBV_QPS_ERR; s++)
		if (s != IBV_QPS_SQE)
			cr_expect_gt(n.moves[s], 100u, "state %d", s);
}
