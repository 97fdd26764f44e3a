/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The application interface's state (app_iface.h), shared by its files:
 * the bookkeeping of CQs, SRQs, QPs and operations in flight, and the
 * constants that size it. Data only; the functions live in the file of
 * their role:
 *
 * | file            | role                                                    |
 * |-----------------|---------------------------------------------------------|
 * | ai_op.c         | operations, control messages, backlog, answers          |
 * | ai_resolve.c    | address resolution (modify to RTR, create_ah, rdma_cm)  |
 * | ai_mr.c         | MR fan-out to every lcore's MR table                    |
 * | ai_cq.c         | CQ/SRQ views of the engine, binding to an lcore, resize |
 * | ai_qp.c         | QP create/modify/destroy on the owner lcore             |
 * | ai_event.c      | engine events, link changes, MADs -> lib/ctl            |
 * | ai_telemetry.c  | /roce/app/stats and /roce/cm                            |
 * | app_iface.c     | set-up, teardown, the control-loop hook, the tables     |
 *
 * Ownership, object by object (doc/architecture.md section 15):
 *  - struct ai_qp/ai_cq/ai_srq/ai_op bookkeeping: the control thread;
 *  - ai_cq.x / ai_srq.x (the engine's view of a CQ/SRQ): the lcore the CQ
 *    or SRQ is bound to while a QP uses it (nqps > 0), else the control
 *    thread; the hand-over is a control message (its ring is the
 *    release/acquire edge);
 *  - mrs[w]: worker w's lcore (written only by MR_REG/MR_DEREG messages), or
 *    the control thread once the workers stopped.
 */
#ifndef ROCE_DAEMON_AI_STATE_H
#define ROCE_DAEMON_AI_STATE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "ctl.h"
#include "ctl_msg.h"
#include "worker.h"
#include "xport.h"
#include "xport_tm.h"

struct daemon;
struct gsi;

#define AI_HANDLE_BITS 20u         /* engine CQ/SRQ handle: gen << 20 | number */
#define AI_HANDLE_MASK ((1u << AI_HANDLE_BITS) - 1)
#define AI_MAX_CONNS 256u
#define AI_MAX_AH 4096u
/* Tag matching SRQs: the largest max_num_tags and max_ops of one, the tags of one client's. */
#define AI_TM_MAX_TAGS 256u
#define AI_TM_MAX_OPS 256u
#define AI_TM_CLIENT_TAGS 4096u
#define AI_QPN_BASE 0x11u          /* worker QP tables hold qpn < max_qps + 17 */
#define AI_UNBOUND UINT32_MAX
/* operations in flight: one request per connection, teardown steps, detached flushes */
#define AI_MAX_OPS (4u * AI_MAX_CONNS)
#define AI_OP_NONE UINT32_MAX      /* ctl_msg.op of a message nobody waits for */
/*
 * Messages per lcore waiting for room on its ring. Requests and teardown
 * steps have at most one message per lcore in flight each (2 x AI_MAX_CONNS,
 * ring included); the rest is room for messages nobody waits for (event
 * flushes, MRs told to lcores without the PD's QPs). 216 B each.
 */
#define AI_BACKLOG 2048u
/*
 * Backlog slots only releases (QP_DESTROY, MR_DEREG) may take: an lcore that
 * is not told to let go of a QP or an MR would keep using memory lib/ctl
 * frees. A release that still finds no room fails closed: lib/ctl
 * quarantines the object (ctl_dp_destroy_failed(), destroys_held).
 */
#define AI_RELEASE_RESERVE 1024u
#define AI_ANSWER_BURST 32u
#define AI_BRISK_US 2000u          /* after a send, the loop looks for answers this often... */
#define AI_BRISK_SLEEP_US 20u      /* ...pausing this long between looks */

/* A CQ; indexed by cqn. */
struct ai_cq {
	const struct ctl_cq_info *info; /* lib/ctl's storage (stable); NULL: free */
	uint16_t gen;
	uint32_t lcore;                 /* while nqps > 0 */
	uint32_t nqps;                  /* QP references (send and receive count apart) */
	struct xport_cq x;              /* the engine's view: owned by `lcore` while nqps > 0 */
};

/* An SRQ; indexed by srqn - 1. */
struct ai_srq {
	const struct ctl_srq_info *info;
	uint16_t gen;
	uint32_t lcore;
	uint32_t nqps;
	struct xport_srq x;
	struct xport_tm tm;             /* IBV_SRQT_TM: x.tm points here */
};

/* A QP; indexed by qpn - AI_QPN_BASE. */
struct ai_qp {
	const struct ctl_qp_info *info; /* NULL: free */
	uint32_t cookie;                /* echoed in its engine events */
	uint16_t port;                  /* daemon port (= device index) */
	bool error_reported;            /* an async error event already moved it to ERR */
	struct xport_cfg cfg;           /* what the engine was last given */
};

/*
 * What an operation is, and so what its answers mean: X(kind) for every
 * kind. app_iface.c maps each kind to the function of its role that takes
 * the answers (ai_answered_fn), one table.
 */
#define AI_OP_LIST(X) \
	X(MR_REG)      /* MR_REG to every lcore */ \
	X(MR_UNDO)     /* MR_DEREG to the lcores that took a refused MR_REG */ \
	X(MR_DEREG)    /* MR_DEREG to every lcore */ \
	X(CQ_RESIZE) \
	X(SRQ_LIMIT) \
	X(SRQ_DETACH)  /* an XRC or TM SRQ's destroy: SRQ_DETACH to its lcore */ \
	X(TM_ATTACH)   /* a TM SRQ's create: TM_ATTACH to its CQ's lcore */ \
	X(AH_RESOLVE)  /* waits for the neighbour table */ \
	X(QP_RESOLVE)  /* a modify waiting for the neighbour table, then QP_MODIFY */ \
	X(QP_CREATE) \
	X(QP_MODIFY) \
	X(QP_DESTROY)

enum ai_op_kind {
	AI_OP_FREE,
#define AI_OP_ENUM(kind) AI_OP_##kind,
	AI_OP_LIST(AI_OP_ENUM)
#undef AI_OP_ENUM
	AI_OP_COUNT
};

/*
 * One dataplane operation in flight: lib/ctl's token, the answers it still
 * expects and what to do with them. Indexed by ctl_msg.op.
 */
struct ai_op {
	uint8_t kind;             /* enum ai_op_kind */
	bool in_call;             /* its dataplane callback has not returned yet */
	bool finished;            /* ... and it finished already (workers stopped): `result` */
	int result;               /* positive errno for lib/ctl */
	uint64_t token;           /* ctl_dp_defer(); CTL_DP_TOKEN_NONE: nobody waits */
	uint32_t waiting;         /* answers still expected */
	uint32_t ok_mask;         /* MR_REG: the lcores that registered it */
	bool held;                /* a release message could not be sent: an lcore may hold the object */
	int rc;                   /* first error among the answers (-errno) */
	uint32_t qpn;             /* QP operations */
	uint32_t srqn;            /* SRQ_DETACH */
	const struct ctl_mr_info *mr;
	struct ctl_ah_info *ah;   /* AH_RESOLVE: lib/ctl's record (held busy until the answer) */
	struct xport_cfg cfg;     /* QP_MODIFY: the engine's configuration once taken */
	int state;                /* QP_MODIFY: engine state, or -1 */
	uint32_t epoch;           /* QP_MODIFY: the QP's event epoch once taken */
	uint16_t port;            /* resolution: daemon port, destination, where the MAC goes */
	uint8_t dgid[16];
	uint8_t *mac;
	uint64_t deadline;        /* resolution: TSC */
	bool resolving;           /* counted in ops_resolving: ai_resolve_tick() looks at it */
	uint32_t next;            /* free list */
};

/* Messages for one lcore that found its ring full (or too many outstanding). */
struct ai_backlog {
	struct ctl_msg msg[AI_BACKLOG];
	uint32_t head, n;
	uint32_t outstanding;     /* sent, answer not drained yet: <= WORKER_CTL_RING */
};

struct app_iface;

/* A control message's handler on the owner lcore (app_iface.c's table). @return 0 or -errno */
typedef int (*ai_lcore_fn)(struct app_iface *ai, struct worker *w, const struct ctl_msg *m);

/* Every answer of an operation is in (op->rc: the first error): act on it. */
typedef void (*ai_answered_fn)(struct app_iface *ai, struct ai_op *op);

struct app_iface {
	struct daemon *d;
	struct ctl *ctl;
	struct ctl_server *srv;
	struct ctl_config cfg;
	const ai_answered_fn *answered; /* [enum ai_op_kind]: app_iface.c's table */
	struct mr_table *mrs[WORKER_MAX];
	struct ah_table *ahs;           /* UD address vectors: written here, read by every lcore */
	struct ai_cq *cq;
	struct ai_srq *srq;
	struct ai_qp *qp;
	uint32_t max_cq, max_srq, max_qp, max_pd;
	uint32_t *pd_qps;               /* [pd * n_workers + lcore]: QPs of the PD on the lcore */
	uint32_t next_cookie;
	uint32_t dp_mrs;                /* MRs registered on the lcores */
	unsigned int resolve_ms;        /* bound of one address resolution */
	bool warned_unmapped;
	struct ai_op *ops;              /* AI_MAX_OPS */
	uint32_t op_free;               /* free list head */
	uint32_t ops_inflight;
	uint32_t ops_resolving;         /* AI_OP_*_RESOLVE: ai_resolve_tick() has work */
	struct ai_backlog *bl[WORKER_MAX];
	uint64_t brisk_until;           /* TSC: answers are expected soon */
	uint64_t ctl_backlogged;        /* messages that waited for ring room */
	uint64_t ctl_refused;           /* operations refused: backlog full (EAGAIN) */
	uint64_t ctl_told_errors;       /* refusals of messages nobody waited for */
	_Atomic uint32_t stall_req[WORKER_MAX]; /* app_iface_stall_worker(): ms, any thread */
	uint64_t events_dropped;
	uint64_t cq_signals_dropped;    /* channel bytes lost: the application's channel was full */
	time_t qp_err_sec;              /* ai_event.c log_qp_error(): the second being counted */
	unsigned int qp_err_logged;     /* lines logged in it */
	uint64_t qp_err_quiet;          /* lines left out (more than QP_ERR_LOG_PER_SEC) */
	uint64_t destroys_held;         /* destroys an lcore might not have done: quarantined */
	struct gsi *gsi;                /* QP1: the CM's MADs (gsi.h) */
	struct ctl_cm_ops cm_ops;       /* lib/ctl's rdma_cm reaches the wire through these */
};

#endif /* ROCE_DAEMON_AI_STATE_H */
