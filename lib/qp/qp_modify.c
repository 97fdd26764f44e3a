/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ibv_modify_qp() semantics: check the whole request (mask bits, the
 * transition table, every value against the device), resolve the AV last,
 * then apply everything. Nothing is written before the last check passed,
 * so a failed call leaves the QP exactly as it was.
 *
 * Also the state changes the data path causes (SQ drained, SQE, fatal
 * errors, COMM_EST, APM), which produce effects and events the same way.
 */
#include <errno.h>
#include <string.h>

#include "qp_attr.h"

#define PSN_MAX      0xffffffu  /* 24-bit PSN */
#define QPN_MAX      0xffffffu  /* 24-bit QPN */
#define FLOW_MAX     0xfffffu   /* 20-bit IPv6 flow label */
#define CODE5_MAX    31u        /* timeout, min_rnr_timer: 5-bit codes */
#define RETRY3_MAX   7u         /* retry_cnt, rnr_retry: 3-bit fields */

/* Every IBV_ACCESS_* bit <infiniband/verbs.h> defines, and rdma-core 45's FLUSH bits. */
#define ACCESS_KNOWN (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |      \
		      IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |     \
		      IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED |            \
		      IBV_ACCESS_ON_DEMAND | IBV_ACCESS_HUGETLB |             \
		      QP_ACCESS_FLUSH_GLOBAL | QP_ACCESS_FLUSH_PERSISTENT |   \
		      IBV_ACCESS_RELAXED_ORDERING)

/* What the checks decided, for the apply step. */
struct modify_plan {
	enum ibv_qp_state next;
	uint8_t hop_limit;      /* AV hop limit after resolution */
	uint8_t alt_hop_limit;  /* alternate AV hop limit after resolution */
};

static void
effects_init(struct qp_sem_effects *fx, enum ibv_qp_state state)
{
	memset(fx, 0, sizeof(*fx));
	fx->old_state = state;
	fx->new_state = state;
}

static void
effects_event(struct qp_sem_effects *fx, enum ibv_event_type ev)
{
	if (fx->n_events < QP_SEM_MAX_EVENTS)
		fx->event[fx->n_events++] = ev;
}

static const struct qp_sem_port *
device_port(const struct qp_sem_device *dev, unsigned int port_num)
{
	if (port_num < 1 || port_num > dev->attr.phys_port_cnt)
		return NULL;
	return &dev->port[port_num - 1];
}

static bool
gid_is_zero(const union ibv_gid *g)
{
	static const union ibv_gid zero;

	return memcmp(g->raw, zero.raw, sizeof(zero.raw)) == 0;
}

/* ::ffff:a.b.c.d, the RoCEv2 encoding of an IPv4 address (RFC 4291 2.5.5.2). */
static bool
gid_is_v4mapped(const union ibv_gid *g)
{
	static const uint8_t prefix[12] = { [10] = 0xff, [11] = 0xff };

	return memcmp(g->raw, prefix, sizeof(prefix)) == 0;
}

static bool
gid_is_multicast(const union ibv_gid *g)
{
	if (gid_is_v4mapped(g))
		return (g->raw[12] & 0xf0) == 0xe0;  /* 224.0.0.0/4 */
	return g->raw[0] == 0xff;                    /* ff00::/8 */
}

static bool
pkey_index_ok(const struct qp_sem_port *p, uint16_t index)
{
	/* A P_Key whose 15 low bits are zero is an invalid (empty) entry. */
	return p != NULL && index < p->pkey_tbl_len &&
	       (p->pkey[index] & 0x7fff) != 0;
}

/*
 * A RoCE address vector: GRH mandatory (IBV_QPF_GRH_REQUIRED), leaving from
 * the QP's port, from a populated GID of a matching family, to a unicast
 * destination (connected QPs have a single peer).
 */
static int
check_av(const struct qp_sem_device *dev, const struct ibv_ah_attr *ah,
	 uint8_t port_num, const struct qp_sem_gid **sgid)
{
	const struct qp_sem_port *p = device_port(dev, port_num);
	const struct qp_sem_gid *g;

	if (!ah->is_global || p == NULL || ah->port_num != port_num)
		return EINVAL;
	if (ah->grh.sgid_index >= p->gid_tbl_len)
		return EINVAL;
	g = &p->gid[ah->grh.sgid_index];
	if (!g->valid)
		return ENODATA;
	if (ah->grh.flow_label > FLOW_MAX)
		return EINVAL;
	if (gid_is_zero(&ah->grh.dgid) || gid_is_multicast(&ah->grh.dgid))
		return EINVAL;
	if (g->type == IBV_GID_TYPE_ROCE_V2 &&
	    gid_is_v4mapped(&g->gid) != gid_is_v4mapped(&ah->grh.dgid))
		return EINVAL;
	*sgid = g;
	return 0;
}

static int
resolve_av(const struct qp_sem_device *dev, const struct ibv_ah_attr *ah,
	   const struct qp_sem_gid *sgid, uint8_t *hop_limit)
{
	int rc;

	*hop_limit = ah->grh.hop_limit;
	if (dev->resolve == NULL)
		return 0;
	rc = dev->resolve(dev->resolve_ctx, ah->port_num, &ah->grh, sgid,
			  hop_limit);
	return rc < 0 ? -rc : rc;
}

/* The state rules: mask bits, CUR_STATE, the table, SQD draining. */
static int
check_state(const struct qp_sem *qp, const struct ibv_qp_attr *a, int mask,
	    const struct qp_sem_device *dev, enum ibv_qp_state *next)
{
	enum ibv_qp_type type = qp->init.qp_type;
	enum ibv_qp_state cur = qp->attr.qp_state;

	if (mask & ~QP_SEM_MASK_KNOWN)
		return EOPNOTSUPP;
	if ((mask & IBV_QP_RATE_LIMIT) &&
	    ((unsigned int)type >= 32 ||
	     !(dev->pacing.supported_qpts & (1u << type))))
		return EOPNOTSUPP;
	if ((mask & IBV_QP_STATE) && (unsigned int)a->qp_state > IBV_QPS_ERR)
		return EINVAL;
	/* The consumer's idea of the current state must be right (the
	 * Modify QP verb's "invalid current QP state" result). */
	if ((mask & IBV_QP_CUR_STATE) && a->cur_qp_state != cur)
		return EINVAL;
	*next = (mask & IBV_QP_STATE) ? a->qp_state : cur;
	if (!qp_sem_mask_ok(cur, *next, type, mask))
		return EINVAL;
	/* Attributes change in SQD only once drained; leaving for RESET or ERR
	 * is always possible. */
	if (cur == IBV_QPS_SQD && qp->attr.sq_draining &&
	    *next != IBV_QPS_RESET && *next != IBV_QPS_ERR)
		return EINVAL;
	return 0;
}

static int
check_alt_path(const struct ibv_qp_attr *a, const struct qp_sem_device *dev,
	       const struct qp_sem_gid **sgid)
{
	int rc;

	/* Only a device that advertises APM takes alternate paths. */
	if (!(dev->attr.device_cap_flags & IBV_DEVICE_AUTO_PATH_MIG))
		return EINVAL;
	rc = check_av(dev, &a->alt_ah_attr, a->alt_port_num, sgid);
	if (rc != 0)
		return rc;
	if (!pkey_index_ok(device_port(dev, a->alt_port_num), a->alt_pkey_index) ||
	    a->alt_timeout > CODE5_MAX)
		return EINVAL;
	return 0;
}

/* Every value the mask names, in mask bit order. */
static int
check_values(const struct qp_sem *qp, const struct ibv_qp_attr *a, int mask,
	     const struct qp_sem_device *dev, struct modify_plan *plan)
{
	uint8_t port_num = (mask & IBV_QP_PORT) ? a->port_num : qp->attr.port_num;
	const struct qp_sem_port *port = device_port(dev, port_num);
	const struct qp_sem_gid *sgid = NULL, *alt_sgid = NULL;
	int rc;

	if ((mask & IBV_QP_PORT) && port == NULL)
		return EINVAL;
	if ((mask & IBV_QP_ACCESS_FLAGS) && (a->qp_access_flags & ~ACCESS_KNOWN))
		return EINVAL;
	if ((mask & IBV_QP_PKEY_INDEX) && !pkey_index_ok(port, a->pkey_index))
		return EINVAL;
	if (mask & IBV_QP_AV) {
		rc = check_av(dev, &a->ah_attr, port_num, &sgid);
		if (rc != 0)
			return rc;
	}
	if ((mask & IBV_QP_PATH_MTU) &&
	    (port == NULL || (unsigned int)a->path_mtu < IBV_MTU_256 ||
	     (unsigned int)a->path_mtu > (unsigned int)port->active_mtu))
		return EINVAL;
	if ((mask & IBV_QP_TIMEOUT) && a->timeout > CODE5_MAX)
		return EINVAL;
	if ((mask & IBV_QP_RETRY_CNT) && a->retry_cnt > RETRY3_MAX)
		return EINVAL;
	if ((mask & IBV_QP_RNR_RETRY) && a->rnr_retry > RETRY3_MAX)
		return EINVAL;
	if ((mask & IBV_QP_RQ_PSN) && a->rq_psn > PSN_MAX)
		return EINVAL;
	if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) &&
	    a->max_rd_atomic > dev->attr.max_qp_init_rd_atom)
		return EINVAL;
	if (mask & IBV_QP_ALT_PATH) {
		rc = check_alt_path(a, dev, &alt_sgid);
		if (rc != 0)
			return rc;
	}
	if ((mask & IBV_QP_MIN_RNR_TIMER) && a->min_rnr_timer > CODE5_MAX)
		return EINVAL;
	if ((mask & IBV_QP_SQ_PSN) && a->sq_psn > PSN_MAX)
		return EINVAL;
	if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) &&
	    a->max_dest_rd_atomic > dev->attr.max_qp_rd_atom)
		return EINVAL;
	if ((mask & IBV_QP_PATH_MIG_STATE) &&
	    (unsigned int)a->path_mig_state > IBV_MIG_ARMED)
		return EINVAL;
	if (mask & IBV_QP_CAP)  /* no resize: the table never allows it */
		return EINVAL;
	if ((mask & IBV_QP_DEST_QPN) && a->dest_qp_num > QPN_MAX)
		return EINVAL;
	if ((mask & IBV_QP_RATE_LIMIT) && a->rate_limit != 0 &&
	    (a->rate_limit < dev->pacing.qp_rate_limit_min ||
	     a->rate_limit > dev->pacing.qp_rate_limit_max))
		return EINVAL;

	/* Last: address resolution may take time and fail on its own. */
	if (mask & IBV_QP_AV) {
		rc = resolve_av(dev, &a->ah_attr, sgid, &plan->hop_limit);
		if (rc != 0)
			return rc;
	}
	if (mask & IBV_QP_ALT_PATH) {
		rc = resolve_av(dev, &a->alt_ah_attr, alt_sgid,
				&plan->alt_hop_limit);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/* The AV as stored: RoCE has no LIDs, so DLID and path bits read back 0. */
static void
store_av(struct ibv_ah_attr *dst, const struct ibv_ah_attr *src,
	 uint8_t hop_limit)
{
	*dst = *src;
	dst->is_global = 1;
	dst->dlid = 0;
	dst->src_path_bits = 0;
	dst->grh.hop_limit = hop_limit;
}

/* Responder resources are kept as a power-of-two ring (like rxe). */
static uint8_t
dest_rd_atomic_slots(uint8_t n, int limit)
{
	unsigned int p = 1;

	if (n == 0)
		return 0;
	while (p < n)
		p <<= 1;
	return (uint8_t)(p > (unsigned int)limit ? (unsigned int)limit : p);
}

static void
apply_values(struct qp_sem *qp, const struct ibv_qp_attr *a, int mask,
	     const struct qp_sem_device *dev, const struct modify_plan *plan)
{
	struct ibv_qp_attr *q = &qp->attr;

	if (mask & IBV_QP_ACCESS_FLAGS)
		q->qp_access_flags = a->qp_access_flags;
	if (mask & IBV_QP_PKEY_INDEX)
		q->pkey_index = a->pkey_index;
	if (mask & IBV_QP_PORT)
		q->port_num = a->port_num;
	if (mask & IBV_QP_QKEY)
		q->qkey = a->qkey;
	if (mask & IBV_QP_AV)
		store_av(&q->ah_attr, &a->ah_attr, plan->hop_limit);
	if (mask & IBV_QP_PATH_MTU)
		q->path_mtu = a->path_mtu;
	if (mask & IBV_QP_TIMEOUT)
		q->timeout = a->timeout;
	if (mask & IBV_QP_RETRY_CNT)
		q->retry_cnt = a->retry_cnt;
	if (mask & IBV_QP_RNR_RETRY)
		q->rnr_retry = a->rnr_retry;
	if (mask & IBV_QP_RQ_PSN)
		q->rq_psn = a->rq_psn;
	/* Initiator depth is kept as asked: rounding it up would let us have
	 * more READ/ATOMIC requests outstanding than the peer has responder
	 * resources for. */
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
		q->max_rd_atomic = a->max_rd_atomic;
	if (mask & IBV_QP_ALT_PATH) {
		store_av(&q->alt_ah_attr, &a->alt_ah_attr, plan->alt_hop_limit);
		q->alt_port_num = a->alt_port_num;
		q->alt_pkey_index = a->alt_pkey_index;
		q->alt_timeout = a->alt_timeout;
		qp->alt_path_loaded = true;
	}
	if (mask & IBV_QP_MIN_RNR_TIMER)
		q->min_rnr_timer = a->min_rnr_timer;
	if (mask & IBV_QP_SQ_PSN)
		q->sq_psn = a->sq_psn;
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
		q->max_dest_rd_atomic = dest_rd_atomic_slots(a->max_dest_rd_atomic,
							    dev->attr.max_qp_rd_atom);
	if (mask & IBV_QP_PATH_MIG_STATE)
		q->path_mig_state = a->path_mig_state;
	if (mask & IBV_QP_DEST_QPN)
		q->dest_qp_num = a->dest_qp_num;
	if (mask & IBV_QP_RATE_LIMIT)
		q->rate_limit = a->rate_limit;
}

/* Enter ERR: flush everything; a QP on an SRQ also reports that it takes no
 * more WQEs from the SRQ (the "Last WQE Reached" affiliated event). */
static void
enter_error(struct qp_sem *qp, struct qp_sem_effects *fx)
{
	qp->attr.qp_state = IBV_QPS_ERR;
	qp->attr.sq_draining = 0;
	fx->flags |= QP_SEM_FX_FLUSH;
	if (qp->init.srq != NULL)
		effects_event(fx, IBV_EVENT_QP_LAST_WQE_REACHED);
}

/* What the move old -> next means for the data path. */
static void
apply_transition(struct qp_sem *qp, const struct ibv_qp_attr *a, int mask,
		 enum ibv_qp_state next, struct qp_sem_effects *fx)
{
	struct ibv_qp_attr *q = &qp->attr;
	enum ibv_qp_state old = q->qp_state;

	if (next == old) {
		if (mask & IBV_QP_PATH_MIG_STATE)
			fx->flags |= QP_SEM_FX_PATH_MIG;
		return;
	}
	q->qp_state = next;
	switch (next) {
	case IBV_QPS_RESET:
		fx->flags |= QP_SEM_FX_RESET;
		q->sq_draining = 0;
		qp->comm_est_raised = false;
		break;
	case IBV_QPS_ERR:
		enter_error(qp, fx);
		break;
	case IBV_QPS_RTR:
		fx->flags |= QP_SEM_FX_RECV_START;
		qp->comm_est_raised = false;
		break;
	case IBV_QPS_RTS:
		if (old == IBV_QPS_RTR)
			fx->flags |= QP_SEM_FX_SEND_START;
		else
			fx->flags |= QP_SEM_FX_SQ_RESUME;
		q->sq_draining = 0;
		break;
	case IBV_QPS_SQD:
		/* Only RTS -> SQD exists; notify is per request. */
		fx->flags |= QP_SEM_FX_SQ_DRAIN;
		q->sq_draining = 1;
		q->en_sqd_async_notify = (mask & IBV_QP_EN_SQD_ASYNC_NOTIFY) &&
					 a->en_sqd_async_notify != 0;
		break;
	default:
		break;
	}
	if (mask & IBV_QP_PATH_MIG_STATE)
		fx->flags |= QP_SEM_FX_PATH_MIG;
}

int
qp_sem_modify(struct qp_sem *qp, const struct ibv_qp_attr *attr,
	      int attr_mask, const struct qp_sem_device *dev,
	      struct qp_sem_effects *fx)
{
	struct qp_sem_effects local;
	struct modify_plan plan = { .next = qp->attr.qp_state };
	int rc;

	if (fx == NULL)
		fx = &local;
	effects_init(fx, qp->attr.qp_state);
	rc = check_state(qp, attr, attr_mask, dev, &plan.next);
	if (rc == 0)
		rc = check_values(qp, attr, attr_mask, dev, &plan);
	if (rc != 0)
		return rc;

	/* Point of no return: everything below succeeds. */
	apply_values(qp, attr, attr_mask, dev, &plan);
	apply_transition(qp, attr, attr_mask, plan.next, fx);
	/* As Linux (uverbs passes qp_state only with IBV_QP_STATE, rxe stores
	 * it as cur_qp_state on a CUR_STATE call): cur_qp_state reads back as
	 * the state of the last successful IBV_QP_CUR_STATE call (RESET if it
	 * had no IBV_QP_STATE), RESET before any. */
	if (attr_mask & IBV_QP_CUR_STATE)
		qp->attr.cur_qp_state = (attr_mask & IBV_QP_STATE) ?
					qp->attr.qp_state : IBV_QPS_RESET;
	fx->new_state = qp->attr.qp_state;
	fx->applied_mask = attr_mask;
	return 0;
}

int
qp_sem_sq_drained(struct qp_sem *qp, struct qp_sem_effects *fx)
{
	struct qp_sem_effects local;

	if (fx == NULL)
		fx = &local;
	effects_init(fx, qp->attr.qp_state);
	if (qp->attr.qp_state != IBV_QPS_SQD || !qp->attr.sq_draining)
		return EINVAL;
	qp->attr.sq_draining = 0;
	/* Every drain is reported, EN_SQD_ASYNC_NOTIFY or not, as Linux rxe
	 * does (the oracle saw it after all 1,207 moves to SQD). */
	effects_event(fx, IBV_EVENT_SQ_DRAINED);
	return 0;
}

int
qp_sem_comm_established(struct qp_sem *qp, struct qp_sem_effects *fx)
{
	struct qp_sem_effects local;
	enum ibv_qp_type type = qp->init.qp_type;

	if (fx == NULL)
		fx = &local;
	effects_init(fx, qp->attr.qp_state);
	if (qp->attr.qp_state != IBV_QPS_RTR ||
	    (type != IBV_QPT_RC && type != IBV_QPT_UC))
		return EINVAL;
	if (!qp->comm_est_raised) {
		qp->comm_est_raised = true;
		effects_event(fx, IBV_EVENT_COMM_EST);
	}
	return 0;
}

int
qp_sem_send_queue_error(struct qp_sem *qp, struct qp_sem_effects *fx)
{
	struct qp_sem_effects local;
	enum ibv_qp_type type = qp->init.qp_type;

	if (fx == NULL)
		fx = &local;
	effects_init(fx, qp->attr.qp_state);
	/* Only UC and UD have the SQ Error state. */
	if (qp->attr.qp_state != IBV_QPS_RTS ||
	    (type != IBV_QPT_UC && type != IBV_QPT_UD))
		return EINVAL;
	qp->attr.qp_state = IBV_QPS_SQE;
	fx->flags |= QP_SEM_FX_FLUSH_SQ;
	fx->new_state = IBV_QPS_SQE;
	return 0;
}

int
qp_sem_fatal(struct qp_sem *qp, enum ibv_event_type cause,
	     struct qp_sem_effects *fx)
{
	struct qp_sem_effects local;

	if (fx == NULL)
		fx = &local;
	effects_init(fx, qp->attr.qp_state);
	if (cause != IBV_EVENT_QP_FATAL && cause != IBV_EVENT_QP_REQ_ERR &&
	    cause != IBV_EVENT_QP_ACCESS_ERR)
		return EINVAL;
	if (qp->attr.qp_state == IBV_QPS_RESET)
		return EINVAL;
	if (qp->attr.qp_state == IBV_QPS_ERR)
		return 0;
	effects_event(fx, cause);
	enter_error(qp, fx);
	fx->new_state = IBV_QPS_ERR;
	return 0;
}

int
qp_sem_path_armed(struct qp_sem *qp, struct qp_sem_effects *fx)
{
	struct qp_sem_effects local;

	if (fx == NULL)
		fx = &local;
	effects_init(fx, qp->attr.qp_state);
	if (qp->attr.path_mig_state != IBV_MIG_REARM || !qp->alt_path_loaded)
		return EINVAL;
	qp->attr.path_mig_state = IBV_MIG_ARMED;
	fx->flags |= QP_SEM_FX_PATH_MIG;
	return 0;
}

int
qp_sem_path_migrated(struct qp_sem *qp, struct qp_sem_effects *fx)
{
	struct qp_sem_effects local;
	struct ibv_qp_attr *q = &qp->attr;
	struct ibv_ah_attr ah;
	uint16_t pkey;
	uint8_t port, timeout;

	if (fx == NULL)
		fx = &local;
	effects_init(fx, q->qp_state);
	if (q->path_mig_state != IBV_MIG_ARMED || !qp->alt_path_loaded ||
	    (q->qp_state != IBV_QPS_RTS && q->qp_state != IBV_QPS_SQD))
		return EINVAL;
	/* The alternate path becomes the primary one; the old primary stays as
	 * the alternate but must be loaded again before re-arming. */
	ah = q->ah_attr;
	q->ah_attr = q->alt_ah_attr;
	q->alt_ah_attr = ah;
	port = q->port_num;
	q->port_num = q->alt_port_num;
	q->alt_port_num = port;
	pkey = q->pkey_index;
	q->pkey_index = q->alt_pkey_index;
	q->alt_pkey_index = pkey;
	timeout = q->timeout;
	q->timeout = q->alt_timeout;
	q->alt_timeout = timeout;
	q->path_mig_state = IBV_MIG_MIGRATED;
	qp->alt_path_loaded = false;
	fx->flags |= QP_SEM_FX_MIGRATED | QP_SEM_FX_PATH_MIG;
	effects_event(fx, IBV_EVENT_PATH_MIG);
	return 0;
}
