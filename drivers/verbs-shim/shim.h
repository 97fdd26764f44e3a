/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * drivers/verbs-shim internals, grouped by defining file.
 *
 * Object layouts follow rdma-core so that the inline verbs of
 * <infiniband/verbs.h> compiled into applications work unchanged:
 *  - device:  struct ibv_device, then a NULL "ops" pointer (verbs_device);
 *  - context: struct verbs_context (ending in ibv_context), private after;
 *  - QP:      ibv_qp / ibv_qp_ex union first, then comp_mask (verbs_qp);
 *  - CQ:      struct ibv_cq_ex first (ibv_cq is its prefix).
 */
#ifndef SHIM_H
#define SHIM_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <infiniband/verbs.h>

#include "ipc.h"
#include "ipc_shm.h"
#include "ipc_verbs.h"
#include "bell.h"
#include "lock.h"
#include "queue.h"
#include "wqe.h"

#define SHIM_EXPORT __attribute__((visibility("default")))

/* ibv_tm_caps.max_rndv_hdr_size: as mlx5 (the engine reads TMH + RVH, 32 bytes) */
#define SHIM_TM_MAX_RNDV_HDR 64u

/* rdma-core's driver.h values we need (enum ibv_gid_type_sysfs). */
enum shim_gid_type_sysfs {
	SHIM_GID_TYPE_SYSFS_IB_ROCE_V1,
	SHIM_GID_TYPE_SYSFS_ROCE_V2,
};

/* Private exports (rdma-core driver.h prototypes) the shim calls itself. */
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
		       enum shim_gid_type_sysfs *type);

/* ---- device.c ---- */
struct shim_device {
	struct ibv_device device;  /* must be first */
	const void *verbs_ops;     /* NULL, where verbs_device has its ops: dv checks fail */
	struct ipc_device_info info;
	bool present;              /* in the daemon's latest list */
};

struct shim_device *shim_device_of(struct ibv_device *dev);
/* The device object for a daemon's device record (created if new); NULL: no room. */
struct shim_device *shim_device_lookup(const struct ipc_device_info *info);

/* ---- context.c ---- */
struct shim_context {
	struct verbs_context vctx; /* ends with struct ibv_context */
	struct shim_device *dev;
	int import_fd;             /* ibv_import_device's cmd_fd, ours to close; -1: opened */
	pthread_mutex_t rpc_lock;  /* one request in flight per connection */
	uint32_t seq;
	/*
	 * The connection requests travel on: cmd_fd in the process that opened
	 * the context; in a forked child that calls through it, a connection of
	 * the child's own in cmd_fd's group (shim_rpc), with its async socket.
	 */
	int rpc_fd;
	int rpc_async_fd;          /* the child's connection's async socket; -1: none */
	pid_t rpc_pid;             /* the process rpc_fd is for */
	struct ipc_device_attr attr; /* cached at open, for post-path limits */
	bool async_eof;            /* the async socket saw EOF (daemon gone), reported once */
	_Atomic bool dead;         /* the daemon connection broke: requests fail with EIO */
	/*
	 * Live QPs/CQs/SRQs, the objects an async event may name: an event for
	 * one destroyed meanwhile is dropped unread, as the kernel drops it.
	 */
	pthread_mutex_t live_lock;
	void **live;
	uint32_t nlive, live_cap;
	pthread_mutex_t ud_lock;   /* ud_qps, and their ud_wait/ud_target (drain.c) */
	struct shim_qp *ud_qps;    /* live UD QPs, whose SQs drain before an AH goes */
};

static inline struct shim_context *shim_ctx(struct ibv_context *c)
{
	return (struct shim_context *)((uint8_t *)c - offsetof(struct shim_context, vctx.context));
}

/*
 * One request/response round trip on the context's socket.
 * @return 0 or a positive errno (daemon status, or EIO/ECONNRESET/... for a
 *         transport failure).
 */
int shim_rpc(struct shim_context *ctx, struct ipc_msg *req, const int *fds, unsigned int nfds,
	     struct ipc_msg *rsp, int *rfds);
/*
 * Whether the daemon connection is gone: @p ctx is dead, or its socket says
 * the daemon hung up (then it is marked dead). One poll(2) without waiting;
 * for paths that wait for the daemon without a request of their own (CQ
 * polls, completion events).
 */
bool shim_ctx_lost(struct shim_context *ctx);
/*
 * Destroy verbs after the daemon went away succeed and free the local part,
 * as rdma-core does on a disassociated device: @return 0 when @p rc is the
 * EIO of a dead connection, else @p rc.
 */
static inline int shim_destroy_rc(struct ibv_context *c, int rc)
{
	return (rc == EIO && shim_ctx(c)->dead) ? 0 : rc;
}
/* Start a request of @p op in @p m (zeroed body). */
void shim_req(struct ipc_msg *m, enum ipc_op op);
/*
 * A destroy whose request is only the object's @p handle and whose answer
 * has no body the shim needs (DEALLOC_MW, DESTROY_FLOW): @return 0 or an
 * errno (shim_destroy_rc() applied); the caller frees on 0.
 */
int shim_destroy_handle(struct ibv_context *c, enum ipc_op op, uint32_t handle);
/* Map a daemon-created memfd; @return address or NULL (errno set). */
void *shim_map_shm(int fd, uint64_t size);
/** Environment variable @p name as a decimal number <= @p max, or @p dflt if unset, empty or not one. */
uint32_t shim_env_u32(const char *name, uint32_t dflt, uint32_t max);

/*
 * The errno rule, the one place every verb reports an error through
 * (doc/verbs-shim.md, "errno"). A verb that fails says so the way its
 * signature does AND leaves errno set to the same error, as an rdma-core
 * provider does when its system call fails:
 *   int verbs returning an errno value:  return shim_ret(e);
 *   pointer verbs:                       return shim_null(e);
 *   int verbs returning -1 (legacy):     return shim_minus1(e);
 * A verb that succeeds leaves errno alone (shim_ret(0) does not touch it).
 */
static inline int shim_ret(int e)
{
	if (e != 0)
		errno = e;
	return e;
}

static inline void *shim_null(int e)
{
	errno = e;
	return NULL;
}

static inline int shim_minus1(int e)
{
	errno = e;
	return -1;
}

/* ---- pd.c, domain.c ---- */
struct shim_td {
	struct ibv_td td;
	uint32_t domains;             /* parent domains naming it (atomic) */
};
static inline struct shim_td *shim_td(struct ibv_td *t) { return (struct shim_td *)t; }

/* A protection domain, or a parent domain (protection != NULL) standing for one. */
struct shim_pd {
	struct ibv_pd pd;
	uint32_t handle;              /* the daemon's PD: a parent domain's is its protection domain's */
	uint32_t domains;             /* PD: parent domains naming it (atomic) */
	struct shim_pd *protection;   /* parent domain: its protection domain */
	struct shim_td *td;           /* parent domain: its thread domain, or NULL */
	void *(*alloc)(struct ibv_pd *pd, void *pd_context, size_t size, size_t alignment,
		       uint64_t resource_type); /* kept, never called (domain.c) */
	void (*free)(struct ibv_pd *pd, void *pd_context, void *ptr, uint64_t resource_type);
	void *pd_context;
};
static inline struct shim_pd *shim_pd(struct ibv_pd *p) { return (struct shim_pd *)p; }
struct ibv_td *shim_alloc_td(struct ibv_context *context, struct ibv_td_init_attr *attr);
int shim_dealloc_td(struct ibv_td *td);
struct ibv_pd *shim_alloc_parent_domain(struct ibv_context *context,
					struct ibv_parent_domain_init_attr *attr);
void shim_dealloc_parent_domain(struct shim_pd *pd);

/* ---- mr.c ---- */
struct shim_backing;
struct shim_mr {
	struct ibv_mr mr;
	uint32_t handle;
	struct shim_backing *backing; /* shared memfd behind the pages, NULL: fallback */
	unsigned int access;          /* enum ibv_access_flags it was registered with */
	bool odp;                     /* IBV_ACCESS_ON_DEMAND: never a backing */
	struct shim_mr *odp_next;     /* in shim_odp_mrs, for ibv_advise_mr */
};
/* ---- dm.c ---- */
struct ibv_dm *shim_alloc_dm(struct ibv_context *context, struct ibv_alloc_dm_attr *attr);
int shim_free_dm(struct ibv_dm *dm);
struct ibv_mr *shim_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *dm, uint64_t offset, size_t length,
			      unsigned int access);

int shim_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags,
		   struct ibv_sge *sg_list, uint32_t num_sge);

/* ---- cq.c ---- */
struct shim_channel;
struct shim_cq {
	struct ibv_cq_ex cq;          /* must be first; ibv_cq is its prefix */
	uint32_t handle;
	struct shim_lock lock;        /* consumer side of the ring (lock.h) */
	bool lock_owned;              /* ibv_start_poll..end_poll: shim_lock()'s answer */
	struct spsc_ring *ring;       /* struct cqe records, produced by the daemon */
	struct ipc_cq_ctrl *ctrl;     /* arm word and notify_count */
	void *shm;
	uint64_t shm_size;
	uint32_t wc_flags;            /* create_cq_ex wc_flags */
	struct cqe *cur;              /* ibv_cq_ex iteration: the CQE being read */
	uint32_t notify_seen;         /* notifications delivered by get_cq_event */
	uint32_t events_delivered;    /* completion events handed to the app */
	uint32_t async_events;        /* async events handed to the app */
	struct shim_cq *ch_next;      /* channel's CQ list */
	uint32_t lost_check;          /* empty polls since the last shim_ctx_lost() (under lock) */
	uint32_t yield_after;         /* thread's empty polls in a row before this CQ yields; 0: never */
};
static inline struct shim_cq *shim_cq(struct ibv_cq *c) { return (struct shim_cq *)c; }

/* ---- events.c ---- */
struct shim_channel {
	struct ibv_comp_channel ch;
	uint32_t handle;
	pthread_mutex_t lock;
	struct shim_cq *cqs;          /* CQs attached to this channel */
};
void shim_channel_attach(struct shim_channel *ch, struct shim_cq *cq);
void shim_channel_detach(struct shim_channel *ch, struct shim_cq *cq);
/* Wait until the app has acked every async event reported for an object. */
/*
 * Async event bookkeeping. Like the kernel's events_reported, an object's
 * count is of the events the application read (ibv_get_async_event), so
 * ibv_destroy_* waits only for acks it can get.
 * shim_live_add: the object (ibv_qp/ibv_cq/ibv_srq address) may be named by
 * events; without memory for it its events are dropped.
 * shim_live_del: no event names it any more; @return its read-event count.
 */
void shim_live_add(struct ibv_context *context, void *obj);
uint32_t shim_live_del(struct ibv_context *context, void *obj, const uint32_t *events);
void shim_wait_async_acks(pthread_mutex_t *m, pthread_cond_t *cv, const uint32_t *acked,
			  uint32_t reported);

/* ---- xrcd.c ---- */
struct shim_xrcd {
	struct {                      /* shaped like rdma-core's verbs_xrcd */
		struct ibv_xrcd xrcd;
		uint32_t comp_mask;
		uint32_t handle;
	} v;
	uint32_t handle;              /* OPEN_XRCD's */
};
static inline struct shim_xrcd *shim_xrcd(struct ibv_xrcd *x) { return (struct shim_xrcd *)x; }
struct ibv_xrcd *shim_open_xrcd(struct ibv_context *context, struct ibv_xrcd_init_attr *attr);
int shim_close_xrcd(struct ibv_xrcd *xrcd);

/* ---- srq.c ---- */
struct shim_srq {
	struct {                      /* shaped like rdma-core's verbs_srq */
		struct ibv_srq srq;
		enum ibv_srq_type srq_type;
		void *xrcd;
		struct ibv_cq *cq;
		uint32_t srq_num;
	} v;
	uint32_t handle;
	uint32_t srqn;
	struct shim_lock lock;        /* producer side of the ring (lock.h) */
	struct spsc_ring *ring;       /* struct rq_wqe records */
	uint32_t prod;                /* ring's producer index, our own copy (shim_wq_room()), under lock */
	uint32_t cons_seen;           /* shim_wq_room() of ring, under lock */
	void *shm;
	uint64_t shm_size;
	uint32_t max_wr;
	uint32_t max_sge;
	/* IBV_SRQT_TM (max_num_tags 0 otherwise); under lock */
	struct spsc_ring *tm_ops;     /* struct tm_op_wqe records, max_ops + 1 slots */
	uint32_t tm_prod;             /* tm_ops' producer index, our own copy */
	uint32_t tm_cons_seen;        /* shim_wq_room() of tm_ops */
	uint32_t max_num_tags;
	uint32_t max_ops;
	const uint32_t *tm_released;  /* per index, the engine's count of entries gone */
	uint32_t *tm_posted;          /* per index, the ADDs posted */
	uint32_t tm_next;             /* where the search for a free index starts */
	uint32_t async_events;
};
static inline struct shim_srq *shim_srq(struct ibv_srq *s) { return (struct shim_srq *)s; }
int shim_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);

/* ---- qp.c ---- */
struct shim_qp {
	union {
		struct ibv_qp qp;
		struct ibv_qp_ex qpx;
	};
	uint32_t comp_mask;           /* verbs_qp */
	void *xrcd;                   /* verbs_qp */
	uint32_t handle;
	bool has_qpx;                 /* created with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS */
	bool sq_sig_all;
	struct ibv_qp_cap cap;
	void *shm;
	uint64_t shm_size;
	struct shim_lock sq_lock;     /* lock.h */
	struct shim_lock rq_lock;
	struct spsc_ring *sq;         /* struct sq_wqe records */
	struct spsc_ring *rq;         /* struct rq_wqe records; NULL with an SRQ */
	uint32_t sq_prod;             /* sq's producer index, our own copy (shim_wq_room()): under sq_lock */
	uint32_t rq_prod;             /* rq's, under rq_lock */
	uint32_t sq_cons_seen;        /* shim_wq_room(): under sq_lock */
	uint32_t rq_cons_seen;        /* shim_wq_room(): under rq_lock */
	bool sq_sge_line;             /* the last post wrote its SGE line (shim_wqe_payload()) */
	uint32_t async_events;
	void *rss_table;              /* an RSS QP (wq.c): its indirection table; else NULL */
	/* ibv_wr_* builder (between wr_start and wr_complete/abort, sq_lock held) */
	bool wr_owned;                /* wr_start's shim_lock() answer */
	uint32_t wr_pending;          /* WQEs written after prod */
	struct sq_wqe *wr_cur;        /* the WQE wr_set_* complete */
	int wr_err;                   /* first error, reported by wr_complete */
	/* UD QPs only, under the context's ud_lock (drain.c) */
	struct shim_qp *ud_next;
	bool ud_wait;                 /* shim_ud_drain_pd waits for ud_target */
	uint32_t ud_target;           /* SQ producer index when ibv_destroy_ah was called */
};
static inline struct shim_qp *shim_qp(struct ibv_qp *q) { return (struct shim_qp *)q; }
int shim_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
int shim_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
void shim_qp_ex_init(struct shim_qp *qp, uint64_t send_ops_flags);
/**
 * shim_qp_init_common() - what every kind of QP (ordinary, XRC, RSS) sets
 * alike once the daemon created it: its handle and number, its locks, the
 * ibv_qp's context, @p qp_context and @p type, state RESET.
 */
void shim_qp_init_common(struct shim_qp *qp, struct ibv_context *context, void *qp_context,
			 uint32_t handle, uint32_t qpn, enum ibv_qp_type type);
int shim_check_send_ops(enum ibv_qp_type type, uint64_t send_ops_flags);
bool shim_opcode_ok(enum ibv_qp_type type, enum ibv_wr_opcode op);
int shim_post_recv_ring(struct spsc_ring *ring, uint32_t *prod, uint32_t cap, uint32_t max_sge,
			uint32_t *cons_seen, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);

/*
 * Producer side of a work queue: how many more WQEs fit past @p prod, the
 * ring's producer index, given the queue's
 * capacity @p cap (the reported max_wr, at most the ring size). The shim
 * alone moves the producer index and keeps its own copy of it (sq_prod,
 * rq_prod, the SRQ's prod, tm_prod; spsc_ring_publish_to()): the daemon's
 * core reads that line on every poll, and reading it back cost two misses
 * per post (issue 18; doc/benchmarks.md, session 28). The daemon
 * releases a slot when the WQE completes. *@p seen is the consumer index as
 * last read: the index is read again (acquire, pairing with the daemon's
 * release) only when that copy shows fewer than @p want free slots, because
 * it is a line the daemon's core writes on every completion and reading it
 * on each post is a cache miss per post. The index only moves forward (a
 * QP's reset moves it to prod), so an old copy can only under-count.
 */
static inline uint32_t shim_wq_room(const struct spsc_ring *r, uint32_t prod, uint32_t cap,
				    uint32_t want, uint32_t *seen)
{
	uint32_t used = prod - *seen;

	if (used >= cap || cap - used < want) {
		*seen = __atomic_load_n(&r->cons, __ATOMIC_ACQUIRE);
		used = prod - *seen;
	}
	return used >= cap ? 0 : cap - used;
}

/*
 * Copy @p n scatter/gather entries from the application's list into a WQE,
 * field by field. Applications fill an ibv_sge just before they post it
 * (perftest: addr, length, lkey, three stores). memcpy() reads an entry as
 * one 16-byte load, which cannot take its bytes from those three stores
 * still in the store buffer: it waits until they reach the cache, and they
 * wait behind the previous post's stores to lines the daemon's core holds.
 * Loads of the stores' own sizes are forwarded (issue 18; doc/benchmarks.md,
 * session 25). The asm keeps the compiler from merging the fields back into
 * one 16-byte load.
 */
static inline void shim_sge_copy(struct wr_sge *dst, const struct ibv_sge *src, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t addr = src[i].addr;
		uint32_t length = src[i].length, lkey = src[i].lkey;

		__asm__("" : "+r"(addr), "+r"(length), "+r"(lkey));
		dst[i].addr = addr;
		dst[i].length = length;
		dst[i].lkey = lkey;
	}
}

/*
 * Where the payload of send WQE @p w goes (its opcode set): @p n SGEs or,
 * with @p is_inline, @p n inline bytes, their number checked against the
 * QP's caps. The header line when the opcode leaves room there
 * (wr_kind_head_data()) and the payload fits (one SGE, WQE_HEAD_INLINE
 * bytes): then the flag WR_FLAG_HEAD_DATA is set and the post writes one
 * line for the worker's core to take instead of two (wqe.h wr_head_data).
 * Otherwise the SGE lines, and the flag is cleared. Notes in @p qp which
 * line the post writes (shim_sq_prefetch()).
 */
static inline void *shim_wqe_payload(struct shim_qp *qp, struct sq_wqe *w, bool is_inline, size_t n)
{
	bool head = wr_kind_head_data(wr_opcode_desc(w->opcode).kind) &&
		    (is_inline ? n <= WQE_HEAD_INLINE : n == 1);

	w->send_flags &= ~(uint32_t)WR_FLAG_HEAD_DATA;
	qp->sq_sge_line = !head && n > 0;
	if (!head)
		return is_inline ? (void *)w->inline_data : (void *)w->sg_list;
	w->send_flags |= WR_FLAG_HEAD_DATA;
	return is_inline ? (void *)w->wr.rdma.head.inline_data : (void *)&w->wr.rdma.head.sge;
}

/*
 * Free slots beyond the one being written whose lines a post takes ahead
 * for writing, on every work queue: the SQ (shim_sq_prefetch()), RQs and
 * SRQs (shim_post_recv_ring(): their first line). The worker's core read
 * those lines a lap ago. Only a free slot (below the room the post saw): a
 * published one is the daemon's to read.
 */
#define SHIM_WQ_PREFETCH 4u

/*
 * Take the lines a post writes in the SQ slot @p i places past the producer
 * index (its header, on UD its AV line and, if the last post wrote one, its
 * first SGE or inline line) into this core's
 * cache for writing, before the post that fills it: the daemon's core read
 * them a lap ago, and a store to such a line waits for the line to come
 * back (issue 18; doc/benchmarks.md, session 20). Only a free slot
 * (@p i < @p room): a published one is the daemon's to read.
 */
static inline void shim_sq_prefetch(const struct shim_qp *qp, uint32_t i, uint32_t room)
{
	const char *p;

	if (i >= room)
		return;
	p = spsc_ring_slot(qp->sq, qp->sq_prod + i);
	for (unsigned int k = 0; k <= SQ_WQE_SGE_LINE; k++) {
		if (k == SQ_WQE_AV_LINE && qp->qp.qp_type != IBV_QPT_UD)
			continue; /* not written (wqe.h) */
		if (k == SQ_WQE_SGE_LINE && !qp->sq_sge_line)
			continue; /* the last post's payload was in its header: so, likely, the next's */
		spsc_ring_prefetchw(p + 64 * k);
	}
}

/*
 * Publish @p n send WQEs (sq_lock held). @return whether the daemon asked
 * for a bell (the QP is idle there): the caller then calls
 * shim_sq_ring_bell() once sq_lock is released. Every writer of an SQ
 * producer index publishes through this (ipc_shm.h, send doorbells).
 */
static inline bool shim_sq_publish(struct shim_qp *qp, uint32_t n)
{
	qp->sq_prod += n;
	return spsc_ring_publish_bell_to(qp->sq, qp->sq_prod) != 0;
}

/*
 * Ring @p qp's bell in its send CQ's control block. Under the CQ's lock:
 * ibv_resize_cq() replaces (and unmaps) the block under it, after the
 * daemon carried the bells over into the new one.
 */
static inline void shim_sq_ring_bell(struct shim_qp *qp)
{
	struct shim_cq *cq = qp->qp.send_cq ? shim_cq(qp->qp.send_cq) : NULL;

	if (cq == NULL)
		return;
	bool owned = shim_lock(&cq->lock);

	shm_bell_ring(&cq->ctrl->bells, __atomic_load_n(&qp->sq->bell, __ATOMIC_RELAXED));
	shim_unlock(&cq->lock, owned);
}

/* ---- drain.c: UD send queues drain before their AH or QP goes ---- */
/* Enter/leave the context's list of live UD QPs (create, destroy). */
void shim_ud_add(struct shim_qp *qp);
void shim_ud_del(struct shim_qp *qp);
/*
 * Before the daemon destroys an AH of @p pd: wait until every UD QP of that
 * PD in RTS has completed the WQEs posted so far. Bounded; returns at once
 * when nothing is pending or the daemon connection is gone.
 */
void shim_ud_drain_pd(struct ibv_pd *pd);
/* The same for the SQ of @p qp alone, before the daemon destroys it (UD in RTS only). */
void shim_ud_drain_qp(struct shim_qp *qp);

/* ---- wq.c: WQs, indirection tables, RSS QPs ---- */
struct ibv_wq *shim_create_wq(struct ibv_context *context, struct ibv_wq_init_attr *attr);
int shim_modify_wq(struct ibv_wq *wq, struct ibv_wq_attr *attr);
int shim_destroy_wq(struct ibv_wq *wq);
struct ibv_rwq_ind_table *shim_create_rwq_ind_table(struct ibv_context *context,
						    struct ibv_rwq_ind_table_init_attr *attr);
int shim_destroy_rwq_ind_table(struct ibv_rwq_ind_table *t);
/* create_qp_ex with IBV_QP_INIT_ATTR_RX_HASH / _IND_TABLE */
struct ibv_qp *shim_create_rss_qp(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr);
/* An RSS QP was destroyed: its table may go. */
void shim_rss_qp_gone(struct shim_qp *qp);
struct ibv_qp *shim_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr);

/* ---- mw.c: context ops (ibv_alloc_mw, ibv_dealloc_mw, ibv_bind_mw) ---- */
struct ibv_mw *shim_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
/* flow.c */
struct ibv_flow *shim_create_flow(struct ibv_qp *qp, struct ibv_flow_attr *attr);
int shim_destroy_flow(struct ibv_flow *flow);
int shim_dealloc_mw(struct ibv_mw *mw);
int shim_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *mw_bind);
/* The bind fields of a BIND_MW WQE (ibv_post_send, ibv_wr_bind_mw). */
static inline void shim_fill_bind(struct sq_wqe *w, const struct ibv_mw *mw, uint32_t rkey,
				  const struct ibv_mw_bind_info *b)
{
	w->wr.bind.mw_rkey = mw->rkey;
	w->wr.bind.rkey = rkey;
	w->wr.bind.mr_lkey = b->mr ? b->mr->lkey : 0;
	w->wr.bind.addr = b->addr;
	w->wr.bind.length = b->length;
	w->wr.bind.access = b->mw_access_flags;
}

/* ---- ah.c ---- */
struct shim_ah {
	struct ibv_ah ah;
	uint32_t handle;
	uint32_t ahn;
	struct wr_av av;              /* resolved by the daemon; copied into UD WQEs */
};
static inline struct shim_ah *shim_ah(struct ibv_ah *a) { return (struct shim_ah *)a; }

/* ---- context.c: ops installed in every context ---- */
int shim_poll_cq(struct ibv_cq *cq, int ne, struct ibv_wc *wc);
int shim_req_notify_cq(struct ibv_cq *cq, int solicited_only);
void shim_cq_clean(struct shim_cq *cq, uint32_t qpn);

#endif /* SHIM_H */
