/* SPDX-License-Identifier: BSD-3-Clause */
/* lib/ctl internals, grouped by defining file. */
#ifndef CTL_INTERNAL_H
#define CTL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctl.h"
#include "mw.h"

/*
 * Handles: (generation << 20) | (index + 1). The generation changes every
 * time a slot is freed, so a stale handle never names the slot's next
 * occupant; 0 is IPC_HANDLE_NONE.
 */
#define CTL_HANDLE_INDEX_BITS 20u
#define CTL_HANDLE_INDEX_MASK ((UINT32_C(1) << CTL_HANDLE_INDEX_BITS) - 1)
#define CTL_HANDLE_GEN_MASK 0xfffu
#define CTL_TABLE_MAX (CTL_HANDLE_INDEX_MASK - 1)

/* The dataplane's callbacks (struct ctl_dataplane_ops) and whether it has @p fn. */
#define DP(ctl) ((ctl)->cfg.dp_ops)
#define DP_HAS(ctl, fn) (DP(ctl) != NULL && DP(ctl)->fn != NULL)

/* Object kinds that live in tables, in teardown order. */
enum ctl_kind {
	CTL_KIND_CM_ID,      /* rdma_cm ids first: they name QPs by number and channels */
	CTL_KIND_CM_CHANNEL,
	CTL_KIND_MW,         /* windows before QPs and MRs: unbinding lets the MR go */
	CTL_KIND_FLOW,       /* flow rules before their RAW_PACKET QPs */
	CTL_KIND_QP,
	CTL_KIND_SRQ,
	CTL_KIND_XRCD,       /* after its SRQs and TGT QPs */
	CTL_KIND_AH,
	CTL_KIND_MR,
	CTL_KIND_DM,         /* device memory after the MRs registered on it */
	CTL_KIND_CQ,
	CTL_KIND_CHANNEL,
	CTL_KIND_PD,
	CTL_KIND_COUNT,
};

/* Common head of every table object. */
struct ctl_obj {
	struct ctl_conn *owner; /* the group head (ctl_conn.group); NULL: free slot */
	struct ctl_conn *notify; /* gets its async events: the creator; NULL once it closed */
	uint64_t user_handle;
	uint32_t index;
	uint16_t gen;
	uint16_t kind;          /* enum ctl_kind */
	uint32_t refs;          /* other objects pointing at this one */
	uint32_t events;        /* async events queued for it (destroy reports it) */
	bool busy;              /* a dataplane operation on it is pending (ctl_then()) */
};

/*
 * A fixed table of objects of one kind. Free slots are on FIFO lists, one
 * per class (index + class_base) % nclass (ctl_table_alloc_class()), linked
 * through next[]: O(1) allocation and free, a freed slot reused last.
 */
struct ctl_table {
	uint8_t *mem;
	size_t obj_size;
	uint32_t cap;
	uint32_t nused;
	uint32_t *next;      /* free-list link of each free slot */
	uint32_t *head;      /* nclass list heads (&one_head when nclass == 1) */
	uint32_t *tail;      /* nclass list tails (&one_tail when nclass == 1) */
	uint32_t nclass;
	uint32_t class_base;
	uint32_t one_head;
	uint32_t one_tail;
};

/* Shared memory the daemon created for rings. */
struct ctl_shm {
	void *map;
	size_t size;
	/* The dataplane may still write it (a destroy it could not finish): never unmapped. */
	bool held;
};

struct ctl_pd {
	struct ctl_obj o;
};

/* A memory window: its state is the lcores' (lib/xport mw.h), keyed by rkey. */
struct ctl_mw {
	struct ctl_obj o;
	struct ctl_pd *pd;
	uint32_t rkey;   /* its key as opened; the binds change the low byte */
};

/*
 * Device memory (ctl_dm.c): a memfd the daemon creates and maps; the
 * client maps it too (ALLOC_DM/IMPORT_DM send it), MRs of REG_DM_MR point
 * into the daemon's mapping. Charged to its group's dm_bytes and the
 * daemon's (ctl.dm_bytes) until freed.
 */
struct ctl_dm {
	struct ctl_obj o;
	struct ctl_shm shm;  /* the daemon's mapping, whole pages */
	int fd;              /* the memfd, kept for IMPORT_DM */
	uint64_t length;     /* as asked (the mapping is rounded up to pages) */
};

struct ctl_flow {
	struct ctl_obj o;
	struct ctl_qp *qp;          /* holds a reference: DESTROY_QP is EBUSY meanwhile */
	struct ctl_flow_info info;
};

struct ctl_mr {
	struct ctl_obj o;
	struct ctl_pd *pd;
	struct ctl_dm *dm;  /* REG_DM_MR: the device memory it lies in (a reference), else NULL */
	void *map;          /* mapping of the client's memfd, or NULL */
	size_t map_len;
	/*
	 * The dataplane lost it (a REREG_MR whose restore it refused): no
	 * memory, no dataplane object; only DEREG_MR may name it.
	 */
	bool invalid;
	/* The dataplane may still reach it (a destroy it could not finish): never unmapped or closed. */
	bool held;
	struct ctl_mr_info info;
};

struct ctl_channel {
	struct ctl_obj o;
	int efd; /* the daemon's end of the channel's socket pair (ipc_channel_pair()) */
};

/* Not bound to an lcore (no QP uses the CQ/SRQ). */
#define CTL_LCORE_NONE UINT32_MAX

struct ctl_cq {
	struct ctl_obj o;
	uint32_t lcore;          /* CTL_LCORE_NONE while o.refs == 0 (QP placement) */
	struct ctl_channel *ch;
	struct ctl_shm shm;
	struct ctl_cq_info info;
};

/*
 * An XRC domain (ctl_xrc.c): shared by every XRCD handle of the device that
 * opened the same inode (or private to one handle without an inode).
 */
struct ctl_xdom {
	uint32_t handles;        /* XRCD handles naming it; 0: free slot */
	uint32_t users;          /* its XRC SRQs and TGT QPs (they bind its lcore) */
	uint32_t lcore;          /* CTL_LCORE_NONE while users == 0 */
	int dev;
	bool has_inode;
	uint64_t st_dev, st_ino;
};

/* An XRCD handle: one context's name for a domain (ctl->xdoms[dom]). */
struct ctl_xrcd {
	struct ctl_obj o;        /* refs: its SRQs and TGT QPs */
	uint32_t dom;
};

struct ctl_srq {
	struct ctl_obj o;
	uint32_t lcore;          /* as ctl_cq.lcore; an XRC SRQ: its domain's, for its life */
	struct ctl_pd *pd;
	struct ctl_xrcd *xrcd;   /* XRC SRQ: its domain handle and its CQ; else NULL */
	struct ctl_cq *cq;       /* XRC or TM SRQ: its CQ (bound to lcore with it); else NULL */
	struct ctl_shm shm;
	struct ctl_srq_info info;
};

/*
 * An RSS QP's configuration (ctl_flow.c): the hash and the WQs (RAW_PACKET
 * QPs of its group with a receive queue of their own) of its indirection
 * table, each holding a reference (DESTROY_QP of a WQ is EBUSY meanwhile).
 */
struct ctl_rss {
	struct flow_rss cfg;        /* dest[]: the WQs' QPNs */
	struct ctl_qp *wq[FLOW_RSS_MAX_ENTRIES];
};

struct ctl_qp {
	struct ctl_obj o;
	struct ctl_rss *rss;     /* an RSS QP: no dataplane QP, no rings, no state; else NULL */
	struct ctl_pd *pd;       /* NULL: XRC_RECV */
	struct ctl_cq *scq;      /* NULL: XRC_RECV */
	struct ctl_cq *rcq;      /* NULL: XRC_SEND, XRC_RECV */
	struct ctl_srq *srq;
	struct ctl_xrcd *xrcd;   /* XRC_RECV: its domain handle */
	struct ctl_shm shm;
	struct ctl_qp_info info;
	struct qp_sem sem;       /* lib/qp: the attributes query reports */
	uint8_t ev_stash;        /* 1 + enum ctl_qp_event raised while busy; 0: none */
	uint32_t ev_cause;
};

struct ctl_ah {
	struct ctl_obj o;
	struct ctl_pd *pd;
	struct ctl_ah_info info;
};

/*
 * A request (or a teardown step) and what it waits for. Every connection
 * has one: it takes one request at a time. A dataplane callback that calls
 * ctl_dp_defer() leaves the request pending (WAIT); ctl_dp_done() runs its
 * continuation `fin`, which either finishes it (an answer, READY until
 * ctl_conn_answer() takes it) or calls the dataplane again (WAIT again).
 */
enum ctl_pend_state {
	CTL_PEND_IDLE,
	CTL_PEND_WAIT,   /* a dataplane answer is awaited (token = gen << 32 | conn index) */
	CTL_PEND_READY,  /* the answer is in rsp/rfds */
};

/* Status of a handler or continuation whose dataplane call was deferred. */
#define CTL_DEFERRED (-1)

struct ctl_pend;
/* Continuation: @p rc is the dataplane's result. @return a status, or CTL_DEFERRED. */
typedef int (*ctl_fin_fn)(struct ctl *ctl, struct ctl_pend *p, int rc);

struct ctl_pend {
	uint32_t gen;            /* token generation: bumped by every ctl_dp_defer() */
	uint8_t state;           /* enum ctl_pend_state */
	bool deferred;           /* ctl_dp_defer() was called during the current callback */
	bool teardown;           /* a teardown step of the group, not a request */
	bool dp_held;            /* ctl_dp_destroy_failed() during the current destroy callback */
	struct ctl_conn *conn;   /* NULL: the detached context (events), never deferred */
	ctl_fin_fn fin;
	struct ctl_obj *obj;     /* the object the continuation works on (busy meanwhile) */
	struct ipc_msg req;      /* the request, kept for its continuation */
	struct ipc_msg rsp;
	int rfds[IPC_MAX_FDS];
	unsigned int rnfds;
	union {                  /* what a continuation needs besides obj */
		struct {
			struct ctl_mr old, next;
			int rc;
		} rereg;
		struct {
			struct ctl_cq next;
			int fd;
		} resize;
		struct ctl_srq_info srq;
		struct {
			struct qp_sem next;
			struct qp_sem_effects fx;
		} modify;
		struct {
			uint32_t lcore;
		} create_qp;
	} u;
};

/*
 * Connection groups (ibv_import_device): connections imported from one
 * another share one object set. Objects belong to the group's head, the
 * connection that opened the device; every member points at it. The head
 * stays allocated, its socket possibly closed (open == false), until the
 * last member closes; then the group's objects are destroyed.
 */
struct ctl_conn {
	struct ctl *ctl;
	bool used;        /* slot allocated */
	bool open;        /* its socket is served (false: a closed head kept for its group) */
	struct ctl_conn *group; /* the head: itself unless imported */
	uint32_t members; /* head only: open connections of the group, itself included */
	int dev;          /* -1 until OPEN_DEVICE */
	int async_fd;     /* our end of the async-event socketpair, -1 before open */
	pid_t pid;        /* the peer (SO_PEERCRED at connect) */
	bool cap_net_raw; /* the peer had CAP_NET_RAW in its effective set at connect */
	uid_t uid;
	gid_t gid;
	int pidfd;        /* a pidfd of pid opened at connect, -1: none (fallback MRs dup it) */
	uint32_t nobjs;   /* head only: objects of the group */
	uint32_t nkind[CTL_KIND_COUNT]; /* head only: ... per kind (quotas) */
	uint64_t mr_bytes; /* head only: bytes registered (quota) */
	uint64_t dm_bytes; /* head only: bytes of device memory (quota) */
	uint64_t tm_tags;  /* head only: max_num_tags of its TM SRQs (quota) */
	uint32_t npend;   /* head only: dataplane operations of the group in flight */
	uint64_t events_dropped;
	struct ctl_pend pend; /* its request; the head's also serves teardown steps */
};

/*
 * One request as its handler sees it. Every op of IPC_OPS has a handler of
 * this one signature, named after the op's symbol: ctl_h_ALLOC_PD; they are
 * declared here and ctl_dispatch() calls them through a table, both expanded
 * from IPC_OPS (so an op without a handler does not link). The descriptors
 * are within the op's IPC_OPS bounds: @c fds only when its request may carry
 * some (else NULL, 0), @c rfds only when its response may (else NULL).
 * A handler returns a status (0 or a positive errno) or CTL_DEFERRED.
 */
struct ctl_req {
	struct ctl_conn *conn;
	const struct ipc_msg *req;
	int *fds;             /* received; a handler keeping one sets its slot to -1 */
	unsigned int nfds;
	struct ipc_msg *rsp;  /* initialised for the op, status 0 */
	int *rfds;            /* descriptors to send back (IPC_MAX_FDS slots, -1) */
	unsigned int *rnfds;
};

typedef int ctl_handler_fn(const struct ctl_req *x);

/* ctl_dm.c: release a destroyed DM's memory, fd and charge. */
void ctl_dm_destroyed(struct ctl *ctl, struct ctl_dm *dm);

#define CTL_HANDLER_DECL(sym, val, rq, rs, rqfd, rsfd) ctl_handler_fn ctl_h_##sym;
IPC_OPS(CTL_HANDLER_DECL)
#undef CTL_HANDLER_DECL

/* What lib/qp's QP semantics judge a modify against, per device. */
struct ctl_devsem {
	struct qp_sem_gid gid[CTL_MAX_PORTS][CTL_GID_TBL_LEN];
	struct qp_sem_port port[CTL_MAX_PORTS];
	struct qp_sem_device dev;
};

struct ctl {
	struct ctl_config cfg;
	struct ctl_devsem sem[CTL_MAX_DEVICES];
	struct ctl_table tab[CTL_KIND_COUNT];
	struct ctl_conn *conns;
	uint32_t *lcore_qps;     /* QPs per lcore (limits.n_lcores entries) */
	uint64_t events_dropped; /* of closed connections */
	uint8_t *mr_key_byte;    /* per MR slot: the random low byte of its last key */
	uint8_t *mw_key_byte;    /* per window slot: the same for windows */
	struct mw_table *mws;    /* the lcores' windows (ctl_mw_table()), NULL: none */
	uint64_t quarantined;    /* objects whose destroy the dataplane could not finish */
	uint64_t qkey_refused;   /* controlled Q_Keys asked for without CAP_NET_RAW */
	uint64_t raw_refused;    /* RAW_PACKET QPs and flows asked for without CAP_NET_RAW */
	uint64_t flows_bad;      /* malformed flow rules */
	uint64_t quota_refused;  /* requests over a client's quota */
	uint64_t conns_refused;  /* peers not allowed to connect */
	uint64_t quarantined_bytes; /* their memory, kept mapped for good */
	uint64_t dm_bytes;       /* device memory of all clients (limits.max_dm_bytes) */
	struct ctl_pend *cur;    /* the context dataplane callbacks run in (ctl_dp_defer()) */
	struct ctl_pend detached; /* context outside requests (events): never deferred */
	struct ctl_cm *cm;       /* rdma_cm: the lib/cm agent and its queues (ctl_cm.c) */
	struct ctl_mcast *mcast; /* multicast membership (ctl_mcast.c) */
	struct ctl_xdom *xdoms;  /* XRC domains (limits.max_xrcd slots; number = index + 1) */
};

/* ctl_table.c */
int ctl_table_init(struct ctl_table *t, uint32_t cap, size_t obj_size);
void ctl_table_fini(struct ctl_table *t);
void *ctl_table_alloc(struct ctl_table *t, struct ctl_conn *owner, enum ctl_kind kind,
		      uint64_t user_handle);
/*
 * As ctl_table_alloc(), only slots with (index + base) % modulus == rem.
 * O(1), except the first call with another (base % modulus, modulus) than
 * the table's last, which re-sorts the free slots in O(cap): keep one
 * (base, modulus) per table.
 */
void *ctl_table_alloc_class(struct ctl_table *t, struct ctl_conn *owner, enum ctl_kind kind,
			    uint64_t user_handle, uint32_t base, uint32_t modulus, uint32_t rem);
void ctl_table_free(struct ctl_table *t, void *obj);
void *ctl_table_at(const struct ctl_table *t, uint32_t index);
uint32_t ctl_obj_handle(const struct ctl_obj *o);
void *ctl_lookup(struct ctl_conn *conn, enum ctl_kind kind, uint32_t handle);

/*
 * ctl_objs.c: constructors/destructors used by the handlers and teardown.
 * ctl_obj_destroy() runs in ctl->cur: @return 0, or CTL_DEFERRED while the
 * dataplane lets go of it (the object stays, busy, until then).
 */
int ctl_obj_destroy(struct ctl *ctl, struct ctl_obj *o);
void ctl_shm_free(struct ctl_shm *shm);
int ctl_shm_alloc(struct ctl_shm *shm, const char *name, size_t size, int *fd_out);
/* A new random low key byte unlike *@p last (stored there): MR and window keys. */
uint8_t ctl_key_byte_next(uint8_t *last);

/* ctl_mw.c */
void ctl_mw_destroyed(struct ctl *ctl, struct ctl_mw *mw);

/* ctl_flow.c */
/* RAW_PACKET QPs may exist here (limits.max_flows); @return 0, EOPNOTSUPP or EPERM (counted). */
int ctl_raw_allowed(struct ctl_conn *c);
/* The destroy's end (ctl_obj_destroy_fin()): the QP's reference goes. */
void ctl_flow_destroyed(struct ctl *ctl, struct ctl_flow *f);
/* Device attributes and QP types when RAW_PACKET QPs exist (ctl_create()). */
void ctl_flow_caps(struct ctl *ctl);
/* An RSS QP's destroy (ctl_qp_destroyed()): its WQs' references and its configuration go. */
void ctl_rss_qp_destroyed(struct ctl *ctl, struct ctl_qp *qp);

/* ctl.c */
void ctl_devsem_build(struct ctl *ctl, uint32_t dev);
/*
 * After a dataplane call made in @p p: continue with @p fin(rc) now, or,
 * when the callback deferred, once ctl_dp_done() brings the answer (@p o is
 * busy until then). @return fin's status, or CTL_DEFERRED.
 */
int ctl_then(struct ctl *ctl, struct ctl_pend *p, int rc, ctl_fin_fn fin, struct ctl_obj *o);
int ctl_send_event(struct ctl_conn *c, uint32_t type, enum ipc_obj_kind kind, uint64_t user_handle);

/* ctl_mcast.c: multicast membership */
int ctl_mcast_create(struct ctl *ctl);
void ctl_mcast_destroy(struct ctl *ctl);
/* QP @p qp is being destroyed: detach it from every group (before the dataplane's qp_destroy). */
void ctl_mcast_qp_gone(struct ctl *ctl, struct ctl_qp *qp);
/*
 * rdma_cm joins of CM id @p id_handle: one per group and id; bounded in all
 * and per client (its max_mcast_attach quota, or CTL_MCAST_CM_PER_CLIENT).
 * @return 0 with *handle, EADDRINUSE (the id joined it already) or ENOMEM
 */
int ctl_mcast_cm_join(struct ctl *ctl, struct ctl_conn *owner, uint32_t id_handle,
		      const uint8_t gid[16], uint16_t flags, uint32_t *handle);
/* @return 0 with the join's CM id in *id_handle, or EINVAL (no such join of @p owner) */
int ctl_mcast_cm_leave(struct ctl *ctl, struct ctl_conn *owner, uint32_t handle,
		       uint32_t *id_handle);
/* CM id @p id_handle goes: its joins go with it. */
void ctl_mcast_cm_id_gone(struct ctl *ctl, uint32_t id_handle);

/* ctl_cm.c: rdma_cm ids and channels in the object life cycle */
void ctl_cm_limits_default(struct ctl_cm_limits *l);
int ctl_cm_create(struct ctl *ctl);
void ctl_cm_destroy(struct ctl *ctl);
/* An id lets go of the wire (REJ/DREQ/DREP as due), its listener and its port. */
void ctl_cm_id_release(struct ctl *ctl, struct ctl_obj *o);
/* The last of an id / a channel before its slot is freed. */
void ctl_cm_id_freed(struct ctl *ctl, struct ctl_obj *o);
void ctl_cm_channel_freed(struct ctl *ctl, struct ctl_obj *o);
size_t ctl_cm_id_size(void);
size_t ctl_cm_channel_size(void);

/* ctl_xrc.c: XRC domains */
int ctl_xrc_init(struct ctl *ctl);
void ctl_xrc_fini(struct ctl *ctl);
/* The last of an XRCD handle before its slot is freed. */
void ctl_xrcd_freed(struct ctl *ctl, struct ctl_xrcd *h);
/* Its domain's number for the dataplane (1..). */
uint32_t ctl_xrcd_num(const struct ctl_xrcd *h);
/* The lcore its domain is bound to, or CTL_LCORE_NONE. */
uint32_t ctl_xrcd_lcore(const struct ctl *ctl, const struct ctl_xrcd *h);
/* One more SRQ or TGT QP of the domain, on @p lcore; and one less. */
void ctl_xrcd_bind(struct ctl *ctl, struct ctl_xrcd *h, uint32_t lcore);
void ctl_xrcd_unbind(struct ctl *ctl, struct ctl_xrcd *h);

/* ctl_qp.c */
/* The lcore with the fewest QPs (QP placement). */
uint32_t ctl_lcore_least(const struct ctl *ctl);
/* Merge one object's binding into @p lcore. @return false on a conflict. */
bool ctl_place_with(uint32_t bound, uint32_t *lcore);
/* The rest of a QP's destroy once the dataplane let go of it. */
void ctl_qp_destroyed(struct ctl *ctl, struct ctl_qp *qp);
void ctl_qp_raise_fx(struct ctl *ctl, struct ctl_qp *qp, const struct qp_sem_effects *fx);

/** ODP capabilities (lib/ctl serves ODP MRs on the copy path: ctl_objs.c). */
void ctl_mr_odp_caps(struct ipc_device_attr *a);

#endif /* CTL_INTERNAL_H */
