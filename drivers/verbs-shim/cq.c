/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs shim: completion queues. The CQ ring lives in a memfd the daemon
 * created; the daemon's lcore produces CQEs, the application consumes them
 * here without any system call (see ipc_shm.h for the ordering contract).
 * Every CQ is an ibv_cq_ex, so the start/next/end poll API works on all.
 */
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "shim.h"

#define SHIM_WC_FLAGS_SUPPORTED                                                                 \
	(IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM |                 \
	 IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |                      \
	 IBV_WC_EX_WITH_DLID_PATH_BITS)

/* ---- polling (application side, no system call) ---- */

static void shim_cqe_to_wc(const struct cqe *e, struct ibv_wc *wc)
{
	wc->wr_id = e->wr_id;
	wc->status = (enum ibv_wc_status)e->status;
	wc->opcode = (enum ibv_wc_opcode)e->opcode;
	wc->vendor_err = e->vendor_err;
	wc->byte_len = e->byte_len;
	wc->imm_data = e->imm_data;
	wc->qp_num = e->qp_num;
	wc->src_qp = e->src_qp;
	wc->wc_flags = e->wc_flags;
	wc->pkey_index = e->pkey_index;
	wc->slid = e->slid;
	wc->sl = e->sl;
	wc->dlid_path_bits = e->dlid_path_bits;
}

/*
 * An application polling an empty CQ competes for the CPU with the daemon
 * lcore that will fill it, when both share a core. After yield_after empty
 * polls in a row every further empty poll calls sched_yield(): a runnable
 * thread on this CPU (the lcore) runs first; with none, the call returns at
 * once and the application keeps polling. ROCE_SHIM_POLL_YIELD sets
 * yield_after for CQs created afterwards (0: spin, never yield).
 *
 * The polls in a row are the calling thread's, on whichever CQs
 * (shim_empty_polls): a poll that finds a completion on any CQ restarts the
 * count. A thread that polls a quiet CQ between polls of a busy one is not
 * idle. Counted per CQ, perftest's send_bw (its send CQ polled on every step
 * and signaled every 100th WR) passed the count on its send CQ and yielded
 * on nearly every step while its receive CQ was full: a system call on
 * every step, and 23 % of the application's samples (doc/benchmarks.md,
 * session 27).
 */
#define SHIM_POLL_YIELD_ENV "ROCE_SHIM_POLL_YIELD"
#define SHIM_POLL_YIELD_DEFAULT 64u

/*
 * An application waiting for completions that a stopped daemon will never
 * write would poll forever: every SHIM_LOST_CHECK_POLLS empty polls in a row
 * (about a millisecond once the polls yield) the CQ asks whether the daemon
 * hung up; from then on an empty poll fails with EIO, as the requests of the
 * disassociated device do. Completions already in the ring still come first.
 */
#define SHIM_LOST_CHECK_POLLS 1024u

/* What an empty poll does after unlocking (flags). */
#define SHIM_EMPTY_YIELD 1u /* sched_yield() */
#define SHIM_EMPTY_CHECK 2u /* ask shim_ctx_lost() */

/*
 * Empty polls in a row of this thread, on any CQ (saturating). Initial-exec:
 * one %fs-relative access per poll instead of a __tls_get_addr() call; a
 * library loaded with dlopen() (pyverbs) takes its four bytes from the
 * static TLS that glibc keeps spare for that.
 */
static __thread uint32_t shim_empty_polls __attribute__((tls_model("initial-exec")));

/* Called with the lock held: SHIM_EMPTY_* for the caller after an empty (@p n == 0) poll. */
static inline unsigned int shim_cq_count_empty(struct shim_cq *cq, uint32_t n)
{
	unsigned int what = 0;

	if (n != 0) {
		shim_empty_polls = 0;
		cq->lost_check = 0;
		return 0;
	}
	if (++cq->lost_check >= SHIM_LOST_CHECK_POLLS) {
		cq->lost_check = 0;
		what |= SHIM_EMPTY_CHECK;
	}
	if (shim_empty_polls < UINT32_MAX)
		shim_empty_polls++;
	if (cq->yield_after == 0 || shim_empty_polls <= cq->yield_after)
		return what;
	return what | SHIM_EMPTY_YIELD;
}

/* After an empty poll, unlocked: true if the daemon is gone (errno EIO). */
static bool shim_cq_empty_wait(struct shim_cq *cq, unsigned int what)
{
	struct shim_context *ctx = shim_ctx(cq->cq.context);

	if (ctx->dead || ((what & SHIM_EMPTY_CHECK) && shim_ctx_lost(ctx))) {
		errno = EIO;
		return true;
	}
	if (what & SHIM_EMPTY_YIELD)
		sched_yield();
	return false;
}

int shim_poll_cq(struct ibv_cq *ibcq, int ne, struct ibv_wc *wc)
{
	struct shim_cq *cq = shim_cq(ibcq);
	unsigned int what;
	uint32_t n;

	if (ne <= 0)
		return 0;
	bool owned = shim_lock(&cq->lock);
	n = spsc_ring_count(cq->ring); /* acquire: the CQE contents are visible */
	if (n > (uint32_t)ne)
		n = (uint32_t)ne;
	for (uint32_t i = 0; i < n; i++)
		shim_cqe_to_wc(spsc_ring_cons_slot(cq->ring, i), &wc[i]);
	if (n)
		spsc_ring_release(cq->ring, n);
	what = shim_cq_count_empty(cq, n);
	shim_unlock(&cq->lock, owned);
	if (n == 0 && shim_cq_empty_wait(cq, what))
		return shim_minus1(EIO); /* the daemon is gone */
	return (int)n;
}

/*
 * Drop every pending CQE of QP @qpn, keeping the others in order (a QP that
 * went to RESET or was destroyed leaves nothing behind, as IBA 10.3.1 lets a
 * device do and as rdma-core's tests expect). Only the consumer-owned slots
 * [cons, cons + count) are touched: walking down from the newest, kept entries
 * slide towards the producer end, then the freed head slots are released.
 * Entries the daemon publishes meanwhile lie beyond the snapshot.
 */
void shim_cq_clean(struct shim_cq *cq, uint32_t qpn)
{
	uint32_t n, freed = 0;
	bool owned = shim_lock(&cq->lock);

	n = spsc_ring_count(cq->ring); /* acquire: the CQE contents are visible */
	for (uint32_t i = n; i-- > 0;) {
		struct cqe *e = spsc_ring_cons_slot(cq->ring, i);

		if (e->qp_num == qpn)
			freed++;
		else if (freed)
			memcpy(spsc_ring_cons_slot(cq->ring, i + freed), e, sizeof(*e));
	}
	if (freed)
		spsc_ring_release(cq->ring, freed);
	shim_unlock(&cq->lock, owned);
}

int shim_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct shim_cq *cq = shim_cq(ibcq);

	/* seq_cst pairs with the daemon's check of arm after publishing a CQE (ipc_shm.h). */
	__atomic_store_n(&cq->ctrl->arm, solicited_only ? IPC_CQ_ARM_SOLICITED : IPC_CQ_ARM_NEXT,
			 __ATOMIC_SEQ_CST);
	return 0;
}

/* ibv_cq_ex iteration: the lock is held from a successful start_poll to end_poll. */
static void shim_cq_ex_load(struct shim_cq *cq)
{
	cq->cur = spsc_ring_cons_slot(cq->ring, 0);
	cq->cq.wr_id = cq->cur->wr_id;
	cq->cq.status = (enum ibv_wc_status)cq->cur->status;
}

static int shim_start_poll(struct ibv_cq_ex *ibcq, struct ibv_poll_cq_attr *attr)
{
	struct shim_cq *cq = (struct shim_cq *)ibcq;

	if (attr->comp_mask)
		return shim_ret(EINVAL);
	bool owned = shim_lock(&cq->lock);
	if (spsc_ring_count(cq->ring) == 0) {
		unsigned int what = shim_cq_count_empty(cq, 0);

		shim_unlock(&cq->lock, owned);
		/* ENOENT, "nothing to poll", is no failure: errno stays. */
		return shim_cq_empty_wait(cq, what) ? shim_ret(EIO) : ENOENT;
	}
	cq->lock_owned = owned; /* for end_poll */
	shim_cq_count_empty(cq, 1);
	shim_cq_ex_load(cq);
	return 0;
}

static int shim_next_poll(struct ibv_cq_ex *ibcq)
{
	struct shim_cq *cq = (struct shim_cq *)ibcq;

	spsc_ring_release(cq->ring, 1);
	cq->cur = NULL;
	if (spsc_ring_count(cq->ring) == 0)
		return ENOENT;
	shim_cq_ex_load(cq);
	return 0;
}

static void shim_end_poll(struct ibv_cq_ex *ibcq)
{
	struct shim_cq *cq = (struct shim_cq *)ibcq;

	if (cq->cur != NULL)
		spsc_ring_release(cq->ring, 1);
	cq->cur = NULL;
	shim_unlock(&cq->lock, cq->lock_owned);
}

#define CUR(c) (((struct shim_cq *)(c))->cur)
static enum ibv_wc_opcode shim_read_opcode(struct ibv_cq_ex *c) { return (enum ibv_wc_opcode)CUR(c)->opcode; }
static uint32_t shim_read_vendor_err(struct ibv_cq_ex *c) { return CUR(c)->vendor_err; }
static uint32_t shim_read_byte_len(struct ibv_cq_ex *c) { return CUR(c)->byte_len; }
static __be32 shim_read_imm_data(struct ibv_cq_ex *c) { return CUR(c)->imm_data; }
static uint32_t shim_read_qp_num(struct ibv_cq_ex *c) { return CUR(c)->qp_num; }
static uint32_t shim_read_src_qp(struct ibv_cq_ex *c) { return CUR(c)->src_qp; }
static unsigned int shim_read_wc_flags(struct ibv_cq_ex *c) { return CUR(c)->wc_flags; }
static uint32_t shim_read_slid(struct ibv_cq_ex *c) { return CUR(c)->slid; }
static uint8_t shim_read_sl(struct ibv_cq_ex *c) { return CUR(c)->sl; }
static uint8_t shim_read_dlid_path_bits(struct ibv_cq_ex *c) { return CUR(c)->dlid_path_bits; }
static uint64_t shim_read_completion_ts(struct ibv_cq_ex *c) { return CUR(c)->timestamp; }
static uint16_t shim_read_cvlan(struct ibv_cq_ex *c) { (void)c; return 0; }
static uint32_t shim_read_flow_tag(struct ibv_cq_ex *c) { (void)c; return 0; }
/* The TMH's tag and app_ctx of a tag matching receive (struct cqe: tm_tag, imm_data); 0 else. */
static void shim_read_tm_info(struct ibv_cq_ex *c, struct ibv_wc_tm_info *tm)
{
	const struct cqe *e = CUR(c);
	bool tm_recv = e->opcode == WC_TM_RECV || e->opcode == WC_TM_NO_TAG;

	memset(tm, 0, sizeof(*tm));
	tm->tag = e->tm_tag;
	tm->priv = tm_recv ? e->imm_data : 0;
}
#undef CUR

static void shim_cq_ex_ops(struct shim_cq *cq)
{
	struct ibv_cq_ex *x = &cq->cq;

	x->start_poll = shim_start_poll;
	x->next_poll = shim_next_poll;
	x->end_poll = shim_end_poll;
	x->read_opcode = shim_read_opcode;
	x->read_vendor_err = shim_read_vendor_err;
	x->read_byte_len = shim_read_byte_len;
	x->read_imm_data = shim_read_imm_data;
	x->read_qp_num = shim_read_qp_num;
	x->read_src_qp = shim_read_src_qp;
	x->read_wc_flags = shim_read_wc_flags;
	x->read_slid = shim_read_slid;
	x->read_sl = shim_read_sl;
	x->read_dlid_path_bits = shim_read_dlid_path_bits;
	x->read_completion_ts = shim_read_completion_ts;
	x->read_cvlan = shim_read_cvlan;
	x->read_flow_tag = shim_read_flow_tag;
	x->read_tm_info = shim_read_tm_info;
}

/* ---- create / resize / destroy ---- */

/* Map the ring of a CQ create/resize answer into @p cq. */
static int shim_cq_map(struct shim_cq *cq, const struct ipc_cq_rsp *r, int fd)
{
	void *shm;

	if (r->ring.stride != sizeof(struct cqe) ||
	    ipc_ring_bytes(r->ring.entries, r->ring.stride) == 0 ||
	    r->ring.offset + ipc_ring_bytes(r->ring.entries, r->ring.stride) > r->shm_size ||
	    r->ctrl_offset + sizeof(struct ipc_cq_ctrl) > r->shm_size || r->cqe >= r->ring.entries)
		return EPROTO;
	shm = shim_map_shm(fd, r->shm_size);
	if (shm == NULL)
		return errno;
	cq->shm = shm;
	cq->shm_size = r->shm_size;
	cq->ring = (struct spsc_ring *)((uint8_t *)shm + r->ring.offset);
	cq->ctrl = (struct ipc_cq_ctrl *)((uint8_t *)shm + r->ctrl_offset);
	cq->cq.cqe = (int)r->cqe;
	return 0;
}

static struct shim_cq *shim_cq_create(struct ibv_context *context, uint32_t cqe, void *cq_context,
				      struct ibv_comp_channel *channel, int comp_vector,
				      uint32_t wc_flags)
{
	struct shim_channel *ch = (struct shim_channel *)channel;
	struct shim_cq *cq;
	struct ipc_msg req, rsp;
	int rfds[IPC_MAX_FDS] = { -1, -1 };
	int rc;

	if (comp_vector < 0 || comp_vector >= context->num_comp_vectors)
		return shim_null(EINVAL);
	cq = calloc(1, sizeof(*cq));
	if (cq == NULL)
		return shim_null(ENOMEM);
	shim_req(&req, IPC_OP_CREATE_CQ);
	req.u.req_CREATE_CQ.user_handle = (uintptr_t)cq;
	req.u.req_CREATE_CQ.cqe = cqe;
	req.u.req_CREATE_CQ.channel = ch ? ch->handle : IPC_HANDLE_NONE;
	req.u.req_CREATE_CQ.comp_vector = (uint32_t)comp_vector;
	req.u.req_CREATE_CQ.wc_flags = wc_flags;
	rc = shim_rpc(shim_ctx(context), &req, NULL, 0, &rsp, rfds);
	if (rc == 0 && rfds[0] < 0)
		rc = EPROTO;
	if (rc == 0) {
		rc = shim_cq_map(cq, &rsp.u.rsp_CREATE_CQ, rfds[0]);
		if (rc) {
			/* The daemon has the CQ: give it back. */
			struct ipc_msg d, dr;

			shim_req(&d, IPC_OP_DESTROY_CQ);
			d.u.req_DESTROY_CQ.handle = rsp.u.rsp_CREATE_CQ.handle;
			shim_rpc(shim_ctx(context), &d, NULL, 0, &dr, NULL);
		}
	}
	for (unsigned int i = 0; i < IPC_MAX_FDS; i++)
		if (rfds[i] >= 0)
			close(rfds[i]);
	if (rc) {
		free(cq);
		return shim_null(rc);
	}
	cq->handle = rsp.u.rsp_CREATE_CQ.handle;
	cq->wc_flags = wc_flags;
	cq->yield_after = shim_env_u32(SHIM_POLL_YIELD_ENV, SHIM_POLL_YIELD_DEFAULT, UINT32_MAX);
	shim_lock_init(&cq->lock);
	pthread_mutex_init(&cq->cq.mutex, NULL);
	pthread_cond_init(&cq->cq.cond, NULL);
	cq->cq.context = context;
	cq->cq.channel = channel;
	cq->cq.cq_context = cq_context;
	cq->cq.handle = cq->handle;
	shim_cq_ex_ops(cq);
	if (ch)
		shim_channel_attach(ch, cq);
	shim_live_add(context, cq);
	return cq;
}

SHIM_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
					 struct ibv_comp_channel *channel, int comp_vector)
{
	struct shim_cq *cq;

	if (cqe <= 0)
		return shim_null(EINVAL);
	cq = shim_cq_create(context, (uint32_t)cqe, cq_context, channel, comp_vector, 0);
	return cq ? ibv_cq_ex_to_cq(&cq->cq) : NULL;
}

/* verbs_context.create_cq_ex */
struct ibv_cq_ex *shim_create_cq_ex(struct ibv_context *context, struct ibv_cq_init_attr_ex *attr)
{
	struct shim_cq *cq;

	if (attr->comp_mask & ~(uint32_t)(IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD))
		return shim_null(EINVAL);
	/* a parent domain only (as mlx5); it changes nothing for the daemon's CQ */
	if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) &&
	    (attr->parent_domain == NULL || attr->parent_domain->context != context ||
	     shim_pd(attr->parent_domain)->protection == NULL))
		return shim_null(EINVAL);
	if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	    (attr->flags & ~(uint32_t)IBV_CREATE_CQ_ATTR_SINGLE_THREADED))
		return shim_null(EOPNOTSUPP);
	if (attr->wc_flags & ~(uint64_t)SHIM_WC_FLAGS_SUPPORTED) {
		/* Completion timestamps only when the daemon reports a clock. */
		struct ibv_device_attr_ex dx;
		uint64_t ok = SHIM_WC_FLAGS_SUPPORTED;

		if (ibv_query_device_ex(context, NULL, &dx) == 0) {
			if (dx.completion_timestamp_mask)
				ok |= IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
			/* Tag matching information only where the device matches tags. */
			if (dx.tm_caps.flags & IBV_TM_CAP_RC)
				ok |= IBV_WC_EX_WITH_TM_INFO;
		}
		if (attr->wc_flags & ~ok)
			return shim_null(EOPNOTSUPP);
	}
	if (attr->cqe == 0)
		return shim_null(EINVAL);
	cq = shim_cq_create(context, attr->cqe, attr->cq_context, attr->channel,
			    (int)attr->comp_vector, (uint32_t)attr->wc_flags);
	return cq ? &cq->cq : NULL;
}

SHIM_EXPORT int ibv_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct shim_cq *cq = shim_cq(ibcq);
	struct ipc_msg req, rsp;
	int rfds[IPC_MAX_FDS] = { -1, -1 };
	void *old = cq->shm;
	uint64_t old_size = cq->shm_size;
	struct spsc_ring *old_ring = cq->ring;
	struct ipc_cq_ctrl *old_ctrl = cq->ctrl;
	int rc;

	if (cqe <= 0)
		return shim_ret(EINVAL);
	shim_req(&req, IPC_OP_RESIZE_CQ);
	req.u.req_RESIZE_CQ.handle = cq->handle;
	req.u.req_RESIZE_CQ.cqe = (uint32_t)cqe;
	/* No poll may run while the daemon moves the unconsumed CQEs to the new ring. */
	bool owned = shim_lock(&cq->lock);
	rc = shim_rpc(shim_ctx(ibcq->context), &req, NULL, 0, &rsp, rfds);
	if (rc == 0 && rfds[0] < 0)
		rc = EPROTO;
	if (rc == 0) {
		rc = shim_cq_map(cq, &rsp.u.rsp_RESIZE_CQ, rfds[0]);
		if (rc == 0) {
			munmap(old, old_size);
		} else {
			cq->ring = old_ring;
			cq->ctrl = old_ctrl;
		}
	}
	shim_unlock(&cq->lock, owned);
	for (unsigned int i = 0; i < IPC_MAX_FDS; i++)
		if (rfds[i] >= 0)
			close(rfds[i]);
	return shim_ret(rc);
}

SHIM_EXPORT int ibv_destroy_cq(struct ibv_cq *ibcq)
{
	struct shim_cq *cq = shim_cq(ibcq);
	struct ipc_msg req, rsp;
	uint32_t events;
	int rc;

	shim_req(&req, IPC_OP_DESTROY_CQ);
	req.u.req_DESTROY_CQ.handle = cq->handle;
	rc = shim_destroy_rc(ibcq->context, shim_rpc(shim_ctx(ibcq->context), &req, NULL, 0, &rsp, NULL));
	if (rc)
		return shim_ret(rc); /* EBUSY while QPs use it */
	if (ibcq->channel)
		shim_channel_detach((struct shim_channel *)ibcq->channel, cq);
	/* As rdma-core: wait until every delivered event has been acknowledged. */
	events = shim_live_del(ibcq->context, cq, &cq->async_events);
	pthread_mutex_lock(&ibcq->mutex);
	while (!shim_ctx(ibcq->context)->dead &&
	       (ibcq->comp_events_completed != cq->events_delivered ||
		ibcq->async_events_completed != events))
		pthread_cond_wait(&ibcq->cond, &ibcq->mutex);
	pthread_mutex_unlock(&ibcq->mutex);
	munmap(cq->shm, cq->shm_size);
	shim_lock_destroy(&cq->lock);
	free(cq);
	return 0;
}

SHIM_EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += nevents;
	pthread_cond_signal(&cq->cond);
	pthread_mutex_unlock(&cq->mutex);
}
