/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the oracle cannot show: encodings, effects and events, SQE, APM,
 * rate limiting, RAW_PACKET, the resolver hook, init_qp_attr.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include <criterion/criterion.h>

#include "qp_fixture.h"

/* A QP of @p type brought from RESET to @p state (both steps asserted). */
static void
open_qp(struct qp_sem *qp, enum ibv_qp_type type, enum ibv_qp_state state)
{
	cr_assert_eq(fx_create(qp, type), 0);
	cr_assert_eq(fx_bring_to(qp, state), 0, "bring-up to state %d", state);
}

/* ---- encodings ---- */

Test(qp_encoding, ack_timeout)
{
	/* 4.096 us x 2^t, 0 = no timer (roce-wire.md 4.8). */
	cr_expect_eq(qp_sem_ack_timeout_ns(0), 0);
	cr_expect_eq(qp_sem_ack_timeout_ns(1), 8192);           /* 8.19 us */
	cr_expect_eq(qp_sem_ack_timeout_ns(8), 1048576);        /* 1.05 ms */
	cr_expect_eq(qp_sem_ack_timeout_ns(14), 67108864);      /* 67.1 ms */
	cr_expect_eq(qp_sem_ack_timeout_ns(18), 1073741824);    /* 1.07 s */
	cr_expect_eq(qp_sem_ack_timeout_ns(31), 8796093022208ull); /* 8796 s */
	cr_expect_eq(qp_sem_ack_timeout_ns(32), 0);
	for (uint8_t t = 1; t < 31; t++)
		cr_expect_eq(qp_sem_ack_timeout_ns(t + 1),
			     2 * qp_sem_ack_timeout_ns(t));
}

Test(qp_encoding, rnr_timer_ibta_table)
{
	/* roce-wire.md 4.7, in units of 10 us (the IBTA table's ms x 100). */
	static const uint32_t ten_us[32] = {
		65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192,
		256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192,
		12288, 16384, 24576, 32768, 49152,
	};

	for (uint8_t c = 0; c < 32; c++)
		cr_expect_eq(qp_sem_rnr_timer_us(c), ten_us[c] * 10, "code %u", c);
	/* Not the scrambled man-page listing (6 = 2.56 ms, 12 = 0.08 ms)... */
	cr_expect_eq(qp_sem_rnr_timer_us(6), 80);
	cr_expect_eq(qp_sem_rnr_timer_us(12), 640);
	/* ...and not rxe's typo for code 25 (61410 us). */
	cr_expect_eq(qp_sem_rnr_timer_us(25), 61440);
	cr_expect_eq(qp_sem_rnr_timer_us(32), 0);
}

Test(qp_encoding, rnr_timer_inverse)
{
	for (uint8_t c = 1; c <= 31; c++) {
		cr_expect_eq(qp_sem_rnr_timer_code(qp_sem_rnr_timer_us(c)), c);
		if (c < 31)
			cr_expect_eq(qp_sem_rnr_timer_code(qp_sem_rnr_timer_us(c) + 1),
				     c + 1);
	}
	cr_expect_eq(qp_sem_rnr_timer_code(0), 1);
	cr_expect_eq(qp_sem_rnr_timer_code(491521), 0);  /* 655.36 ms */
	cr_expect_eq(qp_sem_rnr_timer_code(UINT32_MAX), 0);
}

Test(qp_encoding, retries_and_mtu)
{
	struct qp_sem qp;
	struct qp_sem_timing t;

	cr_expect(qp_sem_rnr_retry_infinite(7));
	cr_expect_not(qp_sem_rnr_retry_infinite(6));
	cr_expect_eq(qp_sem_retry_budget(7), 7);  /* seven retries, not infinite */
	cr_expect_eq(qp_sem_mtu_bytes(IBV_MTU_256), 256);
	cr_expect_eq(qp_sem_mtu_bytes(IBV_MTU_1024), 1024);
	cr_expect_eq(qp_sem_mtu_bytes(IBV_MTU_4096), 4096);
	cr_expect_eq(qp_sem_mtu_bytes(0), 0);
	cr_expect_eq(qp_sem_mtu_bytes(6), 0);

	open_qp(&qp, IBV_QPT_RC, IBV_QPS_RTS);
	qp_sem_timing(&qp, &t);
	cr_expect_eq(t.ack_timeout_ns, 67108864);  /* timeout 14 */
	cr_expect_eq(t.retry_cnt, 7);
	cr_expect_eq(t.rnr_retry, UINT_MAX);       /* rnr_retry 7 */
	cr_expect_eq(t.path_mtu_bytes, 1024);
	cr_expect_eq(t.rnr_nak_code, 12);
}

/* ---- names and the table rule ---- */

Test(qp_table, names_and_rule)
{
	cr_expect_str_eq(qp_sem_attr_name(7), "AV");
	cr_expect_str_eq(qp_sem_attr_name(25), "RATE_LIMIT");
	cr_expect_null(qp_sem_attr_name(21));
	cr_expect_null(qp_sem_attr_name(40));
	cr_expect_str_eq(qp_sem_state_name(IBV_QPS_SQE), "SQE");
	cr_expect_null(qp_sem_state_name(7));
	cr_expect_null(qp_sem_transition(IBV_QPS_ERR, 7));
	cr_expect_eq(qp_sem_type_index(IBV_QPT_XRC_SEND), QP_SEM_XRC_INI);
	cr_expect_eq(qp_sem_type_index(IBV_QPT_XRC_RECV), QP_SEM_XRC_TGT);
	cr_expect_eq(qp_sem_type_index(IBV_QPT_DRIVER), -1);

	cr_expect(qp_sem_mask_ok(IBV_QPS_RTS, IBV_QPS_RTS, IBV_QPT_RC,
				 IBV_QP_STATE | IBV_QP_CUR_STATE));
	/* CUR_STATE only where an async event can change the state. */
	cr_expect_not(qp_sem_mask_ok(IBV_QPS_INIT, IBV_QPS_INIT, IBV_QPT_RC,
				     IBV_QP_STATE | IBV_QP_CUR_STATE));
	cr_expect_not(qp_sem_mask_ok(IBV_QPS_RESET, IBV_QPS_ERR, IBV_QPT_RC,
				     IBV_QP_STATE));
	cr_expect_not(qp_sem_mask_ok(IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPT_UD,
				     IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT));
	cr_expect(qp_sem_mask_ok(IBV_QPS_RTS, IBV_QPS_RTS, IBV_QPT_RAW_PACKET,
				 IBV_QP_STATE | IBV_QP_RATE_LIMIT));
	cr_expect_not(qp_sem_mask_ok(IBV_QPS_RTS, IBV_QPS_RTS, IBV_QPT_UD,
				     IBV_QP_STATE | IBV_QP_RATE_LIMIT));
	/* Every cell reachable from RESET is valid for some mask. */
	for (int s = IBV_QPS_RESET; s <= IBV_QPS_ERR; s++)
		cr_expect(qp_sem_transition(s, IBV_QPS_RESET)->valid);
	cr_expect_not(qp_sem_transition(IBV_QPS_RTS, IBV_QPS_SQE)->valid);
}

/* ---- effects ---- */

static int
go(struct qp_sem *qp, enum ibv_qp_state to, int extra,
   struct qp_sem_effects *fx)
{
	struct ibv_qp_attr a;
	int from = qp->attr.qp_state;

	fx_setup_attr(&a, from);
	a.qp_state = to;
	return qp_sem_modify(qp, &a, IBV_QP_STATE | extra |
			     fx_required(qp->init.qp_type, from, to), fx_device(), fx);
}

Test(qp_effects, rc_lifecycle)
{
	struct qp_sem qp, saved;
	struct qp_sem_effects fx;
	struct ibv_qp_attr q;

	cr_assert_eq(fx_create(&qp, IBV_QPT_RC), 0);
	cr_assert_eq(go(&qp, IBV_QPS_INIT, 0, &fx), 0);
	cr_expect_eq(fx.flags, 0);
	cr_expect_eq(fx.old_state, IBV_QPS_RESET);
	cr_expect_eq(fx.new_state, IBV_QPS_INIT);
	cr_assert_eq(go(&qp, IBV_QPS_RTR, 0, &fx), 0);
	cr_expect_eq(fx.flags, QP_SEM_FX_RECV_START);
	cr_expect_eq(fx.applied_mask, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
		     IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
		     IBV_QP_MIN_RNR_TIMER);
	cr_assert_eq(go(&qp, IBV_QPS_RTS, 0, &fx), 0);
	cr_expect_eq(fx.flags, QP_SEM_FX_SEND_START);

	/* RTS -> SQD drains; nothing else may change until it is drained. */
	cr_assert_eq(go(&qp, IBV_QPS_SQD, 0, &fx), 0);
	cr_expect_eq(fx.flags, QP_SEM_FX_SQ_DRAIN);
	cr_assert_eq(qp_sem_query(&qp, 0, &q, NULL), 0);
	cr_expect_eq(q.sq_draining, 1);
	saved = qp;
	cr_expect_eq(go(&qp, IBV_QPS_RTS, 0, &fx), EINVAL);
	cr_expect_eq(go(&qp, IBV_QPS_SQD, IBV_QP_TIMEOUT, &fx), EINVAL);
	cr_expect_eq(memcmp(&qp, &saved, sizeof(qp)), 0);
	cr_assert_eq(qp_sem_sq_drained(&qp, &fx), 0);
	cr_assert_eq(fx.n_events, 1);  /* not requested, raised all the same (rxe) */
	cr_expect_eq(fx.event[0], IBV_EVENT_SQ_DRAINED);
	cr_expect_eq(qp.attr.sq_draining, 0);
	cr_expect_eq(qp_sem_sq_drained(&qp, &fx), EINVAL);
	cr_assert_eq(go(&qp, IBV_QPS_SQD, IBV_QP_TIMEOUT, &fx), 0);
	cr_expect_eq(fx.flags, 0);
	cr_expect_eq(qp.attr.timeout, 14);
	cr_assert_eq(go(&qp, IBV_QPS_RTS, 0, &fx), 0);
	cr_expect_eq(fx.flags, QP_SEM_FX_SQ_RESUME);

	cr_assert_eq(go(&qp, IBV_QPS_ERR, 0, &fx), 0);
	cr_expect_eq(fx.flags, QP_SEM_FX_FLUSH);
	cr_expect_eq(fx.n_events, 0);
	cr_assert_eq(go(&qp, IBV_QPS_ERR, 0, &fx), 0);
	cr_expect_eq(fx.flags, 0);  /* already flushed */
	cr_assert_eq(go(&qp, IBV_QPS_RESET, 0, &fx), 0);
	cr_expect_eq(fx.flags, QP_SEM_FX_RESET);
	/* RESET keeps the attributes, as Linux rxe did (rxe-peer oracle,
	 * query_qp_rxe.txt RESET(from_ERR)). */
	cr_expect_eq(qp.attr.sq_psn, 0x333333);
	cr_expect_eq(qp.attr.dest_qp_num, 0xabc);
}

Test(qp_effects, sq_drained_with_or_without_request)
{
	struct qp_sem qp;
	struct qp_sem_effects fx;

	open_qp(&qp, IBV_QPT_UC, IBV_QPS_RTS);
	cr_assert_eq(go(&qp, IBV_QPS_SQD, IBV_QP_EN_SQD_ASYNC_NOTIFY, &fx), 0);
	cr_expect_eq(qp.attr.en_sqd_async_notify, 1);
	cr_assert_eq(qp_sem_sq_drained(&qp, &fx), 0);
	cr_assert_eq(fx.n_events, 1);
	cr_expect_eq(fx.event[0], IBV_EVENT_SQ_DRAINED);

	/* Leaving for ERR while draining is allowed and ends the drain. */
	cr_assert_eq(go(&qp, IBV_QPS_RTS, 0, &fx), 0);
	cr_assert_eq(go(&qp, IBV_QPS_SQD, 0, &fx), 0);
	cr_expect_eq(qp.attr.en_sqd_async_notify, 0);  /* per request */
	cr_assert_eq(qp_sem_sq_drained(&qp, &fx), 0);
	cr_assert_eq(fx.n_events, 1, "every drain is reported, as Linux rxe");
	cr_expect_eq(fx.event[0], IBV_EVENT_SQ_DRAINED);
	cr_assert_eq(go(&qp, IBV_QPS_RTS, 0, &fx), 0);
	cr_assert_eq(go(&qp, IBV_QPS_SQD, 0, &fx), 0);
	cr_assert_eq(go(&qp, IBV_QPS_ERR, 0, &fx), 0);
	cr_expect_eq(qp.attr.sq_draining, 0);
	cr_expect_eq(qp_sem_sq_drained(&qp, &fx), EINVAL);
}

Test(qp_effects, srq_last_wqe_and_fatal)
{
	struct ibv_qp_init_attr init = { .send_cq = FX_CQ, .recv_cq = FX_CQ,
					 .srq = FX_SRQ, .cap = { 4, 4, 1, 1, 0 },
					 .qp_type = IBV_QPT_RC };
	struct qp_sem qp;
	struct qp_sem_effects fx;

	cr_assert_eq(qp_sem_create(&qp, &init, fx_device()), 0);
	cr_expect_eq(qp.init.cap.max_recv_wr, 0);
	cr_expect_eq(qp_sem_fatal(&qp, IBV_EVENT_QP_FATAL, &fx), EINVAL); /* RESET */
	cr_assert_eq(fx_bring_to(&qp, IBV_QPS_RTS), 0);
	cr_expect_eq(qp_sem_fatal(&qp, IBV_EVENT_SQ_DRAINED, &fx), EINVAL);
	cr_expect_eq(qp.attr.qp_state, IBV_QPS_RTS);
	cr_assert_eq(qp_sem_fatal(&qp, IBV_EVENT_QP_REQ_ERR, &fx), 0);
	cr_expect_eq(qp.attr.qp_state, IBV_QPS_ERR);
	cr_expect_eq(fx.flags, QP_SEM_FX_FLUSH);
	cr_expect_eq(fx.new_state, IBV_QPS_ERR);
	cr_assert_eq(fx.n_events, 2);
	cr_expect_eq(fx.event[0], IBV_EVENT_QP_REQ_ERR);
	cr_expect_eq(fx.event[1], IBV_EVENT_QP_LAST_WQE_REACHED);
	cr_assert_eq(qp_sem_fatal(&qp, IBV_EVENT_QP_FATAL, &fx), 0);
	cr_expect_eq(fx.n_events, 0);

	/* A modify to ERR reports LAST_WQE_REACHED too. */
	cr_assert_eq(go(&qp, IBV_QPS_RESET, 0, &fx), 0);
	cr_assert_eq(go(&qp, IBV_QPS_INIT, 0, &fx), 0);
	cr_assert_eq(go(&qp, IBV_QPS_ERR, 0, &fx), 0);
	cr_assert_eq(fx.n_events, 1);
	cr_expect_eq(fx.event[0], IBV_EVENT_QP_LAST_WQE_REACHED);
}

Test(qp_effects, sqe_for_uc_ud)
{
	struct qp_sem qp;
	struct qp_sem_effects fx;
	struct ibv_qp_attr a;

	open_qp(&qp, IBV_QPT_RC, IBV_QPS_RTS);
	cr_expect_eq(qp_sem_send_queue_error(&qp, &fx), EINVAL);  /* RC: no SQE */

	open_qp(&qp, IBV_QPT_UD, IBV_QPS_RTR);
	cr_expect_eq(qp_sem_send_queue_error(&qp, &fx), EINVAL);  /* not RTS */
	cr_assert_eq(go(&qp, IBV_QPS_RTS, 0, &fx), 0);
	cr_assert_eq(qp_sem_send_queue_error(&qp, &fx), 0);
	cr_expect_eq(qp.attr.qp_state, IBV_QPS_SQE);
	cr_expect_eq(fx.flags, QP_SEM_FX_FLUSH_SQ);

	/* SQE -> RTS: the claim must be the real state. */
	fx_setup_attr(&a, IBV_QPS_RTS);
	a.qp_state = IBV_QPS_RTS;
	cr_expect_eq(qp_sem_modify(&qp, &a, IBV_QP_STATE | IBV_QP_CUR_STATE,
				   fx_device(), &fx), EINVAL);
	cr_expect_eq(qp_sem_modify(&qp, &a, 0, fx_device(), &fx), EINVAL); /* no SQE->SQE */
	a.cur_qp_state = IBV_QPS_SQE;
	a.qkey = 0x5555;
	cr_assert_eq(qp_sem_modify(&qp, &a, IBV_QP_STATE | IBV_QP_CUR_STATE |
				   IBV_QP_QKEY, fx_device(), &fx), 0);
	cr_expect_eq(fx.flags, QP_SEM_FX_SQ_RESUME);
	cr_expect_eq(qp.attr.qkey, 0x5555);
	cr_expect_eq(qp.attr.qp_state, IBV_QPS_RTS);
}

Test(qp_effects, comm_established_once)
{
	struct qp_sem qp;
	struct qp_sem_effects fx;

	open_qp(&qp, IBV_QPT_RC, IBV_QPS_RTR);
	cr_assert_eq(qp_sem_comm_established(&qp, &fx), 0);
	cr_assert_eq(fx.n_events, 1);
	cr_expect_eq(fx.event[0], IBV_EVENT_COMM_EST);
	cr_assert_eq(qp_sem_comm_established(&qp, &fx), 0);
	cr_expect_eq(fx.n_events, 0);
	cr_assert_eq(go(&qp, IBV_QPS_RTS, 0, &fx), 0);
	cr_expect_eq(qp_sem_comm_established(&qp, &fx), EINVAL);

	open_qp(&qp, IBV_QPT_UD, IBV_QPS_RTR);
	cr_expect_eq(qp_sem_comm_established(&qp, &fx), EINVAL);
}

/* ---- APM, on a device that advertises it ---- */

Test(qp_apm, alternate_path_and_migration)
{
	struct qp_sem_device dev;
	struct qp_sem qp, saved;
	struct qp_sem_effects fx;
	struct ibv_qp_attr a;
	int rtr = IBV_QP_STATE | fx_required(IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_RTR);

	fx_device_copy(&dev);
	open_qp(&qp, IBV_QPT_RC, IBV_QPS_INIT);
	fx_setup_attr(&a, IBV_QPS_INIT);
	a.qp_state = IBV_QPS_RTR;
	a.alt_ah_attr.grh.dgid = fx_gid_peer;
	a.alt_timeout = 18;
	cr_expect_eq(qp_sem_modify(&qp, &a, rtr | IBV_QP_ALT_PATH, &dev, &fx),
		     EINVAL);  /* no IBV_DEVICE_AUTO_PATH_MIG */
	dev.attr.device_cap_flags |= IBV_DEVICE_AUTO_PATH_MIG;
	saved = qp;
	a.alt_timeout = 32;
	cr_expect_eq(qp_sem_modify(&qp, &a, rtr | IBV_QP_ALT_PATH, &dev, &fx), EINVAL);
	a.alt_timeout = 18;
	a.alt_port_num = 2;
	cr_expect_eq(qp_sem_modify(&qp, &a, rtr | IBV_QP_ALT_PATH, &dev, &fx), EINVAL);
	a.alt_port_num = 1;
	a.alt_pkey_index = 1;
	cr_expect_eq(qp_sem_modify(&qp, &a, rtr | IBV_QP_ALT_PATH, &dev, &fx), EINVAL);
	a.alt_pkey_index = 0;
	a.alt_ah_attr.grh.sgid_index = 3;
	cr_expect_eq(qp_sem_modify(&qp, &a, rtr | IBV_QP_ALT_PATH, &dev, &fx), ENODATA);
	a.alt_ah_attr.grh.sgid_index = 1;
	cr_expect_eq(memcmp(&qp, &saved, sizeof(qp)), 0);
	cr_assert_eq(qp_sem_modify(&qp, &a, rtr | IBV_QP_ALT_PATH, &dev, &fx), 0);
	cr_expect_eq(qp.attr.alt_timeout, 18);
	cr_expect_eq(memcmp(&qp.attr.alt_ah_attr.grh.dgid, &fx_gid_peer, 16), 0);
	cr_expect_eq(qp.attr.alt_ah_attr.grh.hop_limit, 64);  /* resolved */

	/* REARM, armed by the engine, then the primary path fails. */
	cr_expect_eq(qp_sem_path_migrated(&qp, &fx), EINVAL);
	fx_setup_attr(&a, IBV_QPS_RTR);
	a.qp_state = IBV_QPS_RTS;
	a.path_mig_state = IBV_MIG_REARM;
	cr_assert_eq(qp_sem_modify(&qp, &a, IBV_QP_STATE | IBV_QP_PATH_MIG_STATE |
				   fx_required(IBV_QPT_RC, IBV_QPS_RTR, IBV_QPS_RTS),
				   &dev, &fx), 0);
	cr_expect(fx.flags & QP_SEM_FX_PATH_MIG);
	cr_assert_eq(qp_sem_path_armed(&qp, &fx), 0);
	cr_expect_eq(qp.attr.path_mig_state, IBV_MIG_ARMED);
	cr_assert_eq(qp_sem_path_migrated(&qp, &fx), 0);
	cr_expect_eq(fx.flags, QP_SEM_FX_MIGRATED | QP_SEM_FX_PATH_MIG);
	cr_assert_eq(fx.n_events, 1);
	cr_expect_eq(fx.event[0], IBV_EVENT_PATH_MIG);
	cr_expect_eq(qp.attr.path_mig_state, IBV_MIG_MIGRATED);
	cr_expect_eq(qp.attr.timeout, 18);      /* the alternate's */
	cr_expect_eq(qp.attr.alt_timeout, 14);  /* the old primary's */
	cr_expect_eq(memcmp(&qp.attr.ah_attr.grh.dgid, &fx_gid_peer, 16), 0);
	cr_expect_eq(qp_sem_path_migrated(&qp, &fx), EINVAL);
	cr_expect_eq(qp_sem_path_armed(&qp, &fx), EINVAL);  /* not REARM */
}

/* ---- rate limiting ---- */

Test(qp_rate, bounds_and_types)
{
	struct qp_sem_device dev;
	struct qp_sem qp;
	struct qp_sem_effects fx;
	struct ibv_qp_attr a;

	open_qp(&qp, IBV_QPT_RC, IBV_QPS_RTS);
	fx_setup_attr(&a, IBV_QPS_RTS);
	a.rate_limit = 999;  /* below qp_rate_limit_min */
	cr_expect_eq(qp_sem_modify(&qp, &a, IBV_QP_RATE_LIMIT, fx_device(), &fx),
		     EINVAL);
	a.rate_limit = 100000001;
	cr_expect_eq(qp_sem_modify(&qp, &a, IBV_QP_RATE_LIMIT, fx_device(), &fx),
		     EINVAL);
	a.rate_limit = 25000000;
	cr_assert_eq(qp_sem_modify(&qp, &a, IBV_QP_RATE_LIMIT, fx_device(), &fx), 0);
	cr_expect_eq(qp.attr.rate_limit, 25000000);
	cr_expect_eq(fx.applied_mask, IBV_QP_RATE_LIMIT);
	a.rate_limit = 0;  /* unlimited */
	cr_assert_eq(qp_sem_modify(&qp, &a, IBV_QP_RATE_LIMIT, fx_device(), &fx), 0);
	cr_expect_eq(qp.attr.rate_limit, 0);
	/* SQD -> RTS has no rate limit cell. */
	cr_assert_eq(go(&qp, IBV_QPS_SQD, 0, &fx), 0);
	cr_assert_eq(qp_sem_sq_drained(&qp, &fx), 0);
	cr_expect_eq(go(&qp, IBV_QPS_RTS, IBV_QP_RATE_LIMIT, &fx), EINVAL);

	/* A device without pacing: EOPNOTSUPP, what the rxe-peer oracle got for
	 * every RATE_LIMIT probe. That answer was libibverbs 44's, not rxe's:
	 * its ibv_cmd_modify_qp() refuses IBV_QP_RATE_LIMIT and above before
	 * any system call (errno stays 0); the kernel never saw the bit. */
	fx_device_copy(&dev);
	dev.pacing.supported_qpts = 0;
	cr_assert_eq(go(&qp, IBV_QPS_RTS, 0, &fx), 0);
	cr_expect_eq(qp_sem_modify(&qp, &a, IBV_QP_RATE_LIMIT, &dev, &fx), EOPNOTSUPP);

	/* RAW_PACKET: RTR -> RTS and RTS -> RTS, as in Linux. */
	open_qp(&qp, IBV_QPT_RAW_PACKET, IBV_QPS_RTR);
	cr_assert_eq(go(&qp, IBV_QPS_RTS, IBV_QP_RATE_LIMIT, &fx), 0);
	cr_expect_eq(qp.attr.rate_limit, 1000);
}

/* ---- RAW_PACKET cells ---- */

Test(qp_table, raw_packet)
{
	struct qp_sem qp;
	struct qp_sem_effects fx;

	cr_assert_eq(fx_create(&qp, IBV_QPT_RAW_PACKET), 0);
	cr_expect_eq(go(&qp, IBV_QPS_INIT, IBV_QP_PKEY_INDEX, &fx), EINVAL);
	cr_assert_eq(go(&qp, IBV_QPS_INIT, 0, &fx), 0);
	cr_expect_eq(qp.attr.port_num, 1);
	cr_expect_eq(go(&qp, IBV_QPS_INIT, IBV_QP_PORT, &fx), EINVAL);
	cr_expect_eq(go(&qp, IBV_QPS_RTR, IBV_QP_AV, &fx), EINVAL);
	cr_assert_eq(go(&qp, IBV_QPS_RTR, 0, &fx), 0);
	cr_assert_eq(go(&qp, IBV_QPS_RTS, 0, &fx), 0);
	cr_expect_eq(go(&qp, IBV_QPS_SQD, IBV_QP_EN_SQD_ASYNC_NOTIFY, &fx), EINVAL);
	cr_assert_eq(go(&qp, IBV_QPS_SQD, 0, &fx), 0);
	cr_expect_eq(fx.flags, QP_SEM_FX_SQ_DRAIN);
}

/* ---- values the oracle did not probe ---- */

Test(qp_values, path_mtu_against_active_mtu)
{
	struct qp_sem_device dev;
	struct qp_sem_port port;
	struct qp_sem qp;
	struct ibv_qp_attr a;
	int rtr = IBV_QP_STATE | fx_required(IBV_QPT_UC, IBV_QPS_INIT, IBV_QPS_RTR);

	open_qp(&qp, IBV_QPT_UC, IBV_QPS_INIT);
	fx_setup_attr(&a, IBV_QPS_INIT);
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_4096;
	cr_expect_eq(qp_sem_modify(&qp, &a, rtr, fx_device(), NULL), EINVAL);
	fx_device_copy(&dev);
	port = dev.port[0];
	port.active_mtu = IBV_MTU_4096;
	dev.port = &port;
	cr_expect_eq(qp_sem_modify(&qp, &a, rtr, &dev, NULL), 0);
	cr_expect_eq(qp.attr.path_mtu, IBV_MTU_4096);
}

static int
resolve_fails(void *ctx, uint8_t port, const struct ibv_global_route *grh,
	      const struct qp_sem_gid *sgid, uint8_t *hop)
{
	(void)ctx, (void)port, (void)grh, (void)sgid, (void)hop;
	return -EHOSTUNREACH;  /* negative errno is accepted too */
}

Test(qp_values, av_and_resolver)
{
	struct qp_sem_device dev;
	struct qp_sem qp, saved;
	struct ibv_qp_attr a;
	int rtr = IBV_QP_STATE | fx_required(IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_RTR);

	open_qp(&qp, IBV_QPT_RC, IBV_QPS_INIT);
	fx_setup_attr(&a, IBV_QPS_INIT);
	a.qp_state = IBV_QPS_RTR;
	saved = qp;
	a.ah_attr.grh.sgid_index = 200;  /* inside the table, empty */
	cr_expect_eq(qp_sem_modify(&qp, &a, rtr, fx_device(), NULL), ENODATA);
	a.ah_attr.grh.sgid_index = 255;
	cr_expect_eq(qp_sem_modify(&qp, &a, rtr, fx_device(), NULL), ENODATA);
	a.ah_attr.grh.sgid_index = 1;

	fx_device_copy(&dev);
	dev.resolve = resolve_fails;
	cr_expect_eq(qp_sem_modify(&qp, &a, rtr, &dev, NULL), EHOSTUNREACH);
	cr_expect_eq(memcmp(&qp, &saved, sizeof(qp)), 0);

	/* Without a resolver, the AV is stored as given (minus the LID). */
	dev.resolve = NULL;
	a.ah_attr.grh.hop_limit = 7;
	a.ah_attr.dlid = 0x1234;
	a.ah_attr.sl = 5;
	a.ah_attr.is_global = 2;
	cr_assert_eq(qp_sem_modify(&qp, &a, rtr, &dev, NULL), 0);
	cr_expect_eq(qp.attr.ah_attr.grh.hop_limit, 7);
	cr_expect_eq(qp.attr.ah_attr.dlid, 0);
	cr_expect_eq(qp.attr.ah_attr.sl, 5);
	cr_expect_eq(qp.attr.ah_attr.is_global, 1);
}

Test(qp_values, max_rd_atomic_limits)
{
	struct qp_sem_device dev;
	struct qp_sem qp;
	struct ibv_qp_attr a;

	fx_device_copy(&dev);
	dev.attr.max_qp_rd_atom = 16;
	dev.attr.max_qp_init_rd_atom = 8;
	open_qp(&qp, IBV_QPT_RC, IBV_QPS_SQD);
	fx_setup_attr(&a, IBV_QPS_SQD);
	a.max_rd_atomic = 9;
	cr_expect_eq(qp_sem_modify(&qp, &a, IBV_QP_MAX_QP_RD_ATOMIC, &dev, NULL), EINVAL);
	a.max_rd_atomic = 7;
	cr_assert_eq(qp_sem_modify(&qp, &a, IBV_QP_MAX_QP_RD_ATOMIC, &dev, NULL), 0);
	cr_expect_eq(qp.attr.max_rd_atomic, 7);  /* initiator depth as asked */
	a.max_dest_rd_atomic = 17;
	cr_expect_eq(qp_sem_modify(&qp, &a, IBV_QP_MAX_DEST_RD_ATOMIC, &dev, NULL), EINVAL);
	a.max_dest_rd_atomic = 9;
	cr_assert_eq(qp_sem_modify(&qp, &a, IBV_QP_MAX_DEST_RD_ATOMIC, &dev, NULL), 0);
	cr_expect_eq(qp.attr.max_dest_rd_atomic, 16);  /* power-of-two ring */
	dev.attr.max_qp_rd_atom = 12;
	cr_assert_eq(qp_sem_modify(&qp, &a, IBV_QP_MAX_DEST_RD_ATOMIC, &dev, NULL), 0);
	cr_expect_eq(qp.attr.max_dest_rd_atomic, 12);  /* never above the limit */
}

/* ---- query ---- */

Test(qp_query, masks_and_fields)
{
	struct qp_sem qp;
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr init;

	open_qp(&qp, IBV_QPT_RC, IBV_QPS_RTS);
	cr_expect_eq(qp_sem_query(&qp, IBV_QP_RATE_LIMIT, &a, &init), EOPNOTSUPP);
	cr_expect_eq(qp_sem_query(&qp, 1 << 30, &a, &init), EOPNOTSUPP);
	memset(&a, 0xff, sizeof(a));
	cr_assert_eq(qp_sem_query(&qp, IBV_QP_STATE, &a, NULL), 0);
	cr_expect_eq(a.qp_state, IBV_QPS_RTS);
	/* As Linux rxe: RESET until a CUR_STATE call, then the state it made. */
	cr_expect_eq(a.cur_qp_state, IBV_QPS_RESET);
	cr_expect_eq(a.sq_psn, 0x333333);  /* not asked for, still filled */
	cr_expect_eq(a.rate_limit, 0);
	cr_expect_eq(a.en_sqd_async_notify, 0);
	cr_assert_eq(qp_sem_query(&qp, 0, &a, &init), 0);
	cr_expect_eq(init.qp_context, FX_CTX);
	cr_expect_eq(init.qp_type, IBV_QPT_RC);
	cr_expect_eq(memcmp(&init.cap, &a.cap, sizeof(a.cap)), 0);
}

/* ---- create ---- */

Test(qp_create, type_and_cq_checks)
{
	struct ibv_qp_init_attr init = { .send_cq = FX_CQ, .recv_cq = FX_CQ,
					 .qp_type = IBV_QPT_RC };
	struct qp_sem_device dev;
	struct qp_sem qp;

	cr_expect_eq(qp_sem_create(&qp, &init, fx_device()), 0);
	init.recv_cq = NULL;
	cr_expect_eq(qp_sem_create(&qp, &init, fx_device()), EINVAL);
	init.recv_cq = FX_CQ;
	init.qp_type = IBV_QPT_RAW_PACKET;
	cr_expect_eq(qp_sem_create(&qp, &init, fx_device()), EOPNOTSUPP);
	fx_device_copy(&dev);
	dev.qp_types |= 1u << IBV_QPT_RAW_PACKET;
	cr_expect_eq(qp_sem_create(&qp, &init, &dev), 0);
	/* XRC: a type the device lists or not; TGT needs no CQ, INI no receive CQ */
	init.qp_type = IBV_QPT_XRC_RECV;
	cr_expect_eq(qp_sem_create(&qp, &init, &dev), EINVAL, "no XRC, so no XRC domain (Linux)");
	dev.qp_types |= 1u << IBV_QPT_XRC_RECV | 1u << IBV_QPT_XRC_SEND;
	init.send_cq = init.recv_cq = NULL;
	cr_expect_eq(qp_sem_create(&qp, &init, &dev), 0);
	cr_expect_eq(qp.init.cap.max_send_wr, 0);
	cr_expect_eq(qp.init.cap.max_recv_wr, 0);
	init.qp_type = IBV_QPT_XRC_SEND;
	cr_expect_eq(qp_sem_create(&qp, &init, &dev), EINVAL, "INI needs a send CQ");
	init.send_cq = FX_CQ;
	cr_expect_eq(qp_sem_create(&qp, &init, &dev), 0);
	cr_expect_eq(qp.init.cap.max_recv_wr, 0);
	init.recv_cq = FX_CQ;
	init.qp_type = IBV_QPT_DRIVER;
	cr_expect_eq(qp_sem_create(&qp, &init, &dev), EOPNOTSUPP);
	init.qp_type = 77;
	cr_expect_eq(qp_sem_create(&qp, &init, &dev), EINVAL);
}

/* ---- init_qp_attr ---- */

static void
conn_param(struct qp_sem_conn_param *cp, enum ibv_qp_type type)
{
	memset(cp, 0, sizeof(*cp));
	cp->qp_type = type;
	cp->port_num = 1;
	cp->pkey_index = 0;
	cp->access_flags = qp_sem_cm_access_flags(type, 3);
	cp->qkey = 0x11111111;
	cp->ah_attr.grh.dgid = fx_gid_peer;
	cp->ah_attr.grh.sgid_index = 1;
	cp->ah_attr.grh.hop_limit = 64;
	cp->path_mtu = IBV_MTU_4096;  /* above the port's 1024: clamped */
	cp->remote_qpn = 0x123456;
	cp->rq_psn = 0xabcdef;
	cp->sq_psn = 0x000042;
	cp->responder_resources = 3;
	cp->initiator_depth = 3;
	cp->min_rnr_timer = 12;
	cp->timeout = 14;
	cp->retry_cnt = 7;
	cp->rnr_retry = 7;
	cp->rate_limit = type == IBV_QPT_RC ? 5000 : 0;
}

Test(qp_init_attr, brings_every_type_to_rts)
{
	static const enum ibv_qp_type types[] = { IBV_QPT_RC, IBV_QPT_UC,
						  IBV_QPT_UD, IBV_QPT_RAW_PACKET };
	static const enum ibv_qp_state path[] = { IBV_QPS_INIT, IBV_QPS_RTR,
						  IBV_QPS_RTS };

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		struct qp_sem_conn_param cp;
		struct qp_sem qp;

		conn_param(&cp, types[i]);
		cr_assert_eq(fx_create(&qp, types[i]), 0);
		for (size_t s = 0; s < 3; s++) {
			struct ibv_qp_attr a;
			int mask, ti = qp_sem_type_index(types[i]);
			const struct qp_sem_transition *t =
				qp_sem_transition(qp.attr.qp_state, path[s]);

			cr_assert_eq(qp_sem_init_attr(&cp, path[s], fx_device(), &a,
						      &mask), 0);
			cr_expect_eq(mask & t->req[ti], t->req[ti], "type %d step %zu",
				     types[i], s);
			cr_expect(qp_sem_mask_ok(qp.attr.qp_state, path[s], types[i],
						 mask));
			cr_assert_eq(qp_sem_modify(&qp, &a, mask, fx_device(), NULL), 0,
				     "type %d step %zu", types[i], s);
		}
		cr_expect_eq(qp.attr.qp_state, IBV_QPS_RTS);
		if (types[i] == IBV_QPT_RC || types[i] == IBV_QPT_UC) {
			cr_expect_eq(qp.attr.path_mtu, IBV_MTU_1024);
			cr_expect_eq(qp.attr.dest_qp_num, 0x123456);
			cr_expect_eq(qp.attr.rq_psn, 0xabcdef);
		}
		if (types[i] != IBV_QPT_RAW_PACKET)
			cr_expect_eq(qp.attr.sq_psn, 0x42);
		if (types[i] == IBV_QPT_RC) {
			cr_expect_eq(qp.attr.max_dest_rd_atomic, 4);
			cr_expect_eq(qp.attr.max_rd_atomic, 3);
			cr_expect_eq(qp.attr.rate_limit, 5000);
			cr_expect_eq(qp.attr.qp_access_flags,
				     IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				     IBV_ACCESS_REMOTE_ATOMIC);
		}
		if (types[i] == IBV_QPT_UD)
			cr_expect_eq(qp.attr.qkey, 0x11111111);
	}
}

Test(qp_init_attr, refusals_and_access)
{
	struct qp_sem_conn_param cp;
	struct ibv_qp_attr a;
	int mask = 0x5a5a;

	conn_param(&cp, IBV_QPT_RC);
	cr_expect_eq(qp_sem_init_attr(&cp, IBV_QPS_SQD, NULL, &a, &mask), EINVAL);
	cr_expect_eq(mask, 0x5a5a);
	cp.qp_type = IBV_QPT_XRC_SEND;
	cr_expect_eq(qp_sem_init_attr(&cp, IBV_QPS_INIT, NULL, &a, &mask), EINVAL);
	cp.qp_type = IBV_QPT_RC;
	cr_assert_eq(qp_sem_init_attr(&cp, IBV_QPS_RTR, NULL, &a, &mask), 0);
	cr_expect_eq(a.path_mtu, IBV_MTU_4096);  /* no device: not clamped */
	cr_expect_eq(a.ah_attr.is_global, 1);
	cr_expect_eq(a.ah_attr.port_num, 1);
	cr_assert_eq(qp_sem_init_attr(&cp, IBV_QPS_RTS, NULL, &a, &mask), 0);
	cr_expect(mask & IBV_QP_RATE_LIMIT);
	cp.rate_limit = 0;
	cr_assert_eq(qp_sem_init_attr(&cp, IBV_QPS_RTS, NULL, &a, &mask), 0);
	cr_expect_not(mask & IBV_QP_RATE_LIMIT);

	cr_expect_eq(qp_sem_cm_access_flags(IBV_QPT_RC, 0), IBV_ACCESS_REMOTE_WRITE);
	cr_expect_eq(qp_sem_cm_access_flags(IBV_QPT_UC, 4), IBV_ACCESS_REMOTE_WRITE);
	cr_expect_eq(qp_sem_cm_access_flags(IBV_QPT_RC, 1),
		     IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		     IBV_ACCESS_REMOTE_ATOMIC);
}
