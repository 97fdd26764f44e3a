/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * lib/ctl: the daemon's control-plane object model, in pure C (no DPDK).
 *
 * One `struct ctl` holds the devices the daemon exposes (device and port
 * attributes, GID and P_Key tables) and the device-wide object tables: PDs,
 * MRs, completion channels, CQs, QPs, SRQs and AHs. Tables are allocated
 * once at ctl_create() from the configured limits and never grow. QPNs, MR
 * keys and handles are allocated device-wide (next-fit, so a freed QPN or
 * key is not handed out again at once).
 *
 * Every object belongs to the connection group of the connection
 * (`struct ctl_conn`) that created it. A group is a connection that opened a
 * device plus the connections imported from it (ctl_conn_import(),
 * ibv_import_device); usually it is one connection. A handle in a request is
 * looked up together with the connection's group: an object of another
 * group is indistinguishable from a free slot (EINVAL). When the last
 * connection of a group closes, ctl_conn_close() destroys everything the
 * group owned, in dependency order (QP, SRQ, AH, MR, CQ, channel, PD),
 * whatever the state. Async events of an object go to the connection that
 * created it (dropped once that one closed).
 *
 * Requests arrive as validated lib/ipc messages (ctl_conn_handle()).
 * ctl_server.c is a ready poll(2) loop over a listening socket for the
 * daemon's control thread and for tests.
 *
 * Objects the dataplane must know about (QP, CQ, SRQ, MR, AH) are handed to
 * it through `struct ctl_dataplane_ops`; the daemon implements them on its
 * lcores. Without ops (tests) the control plane works alone: rings and
 * memory are still set up, nothing consumes them.
 *
 * Threading: a `struct ctl` and its connections are used by one thread (the
 * daemon's control thread). The dataplane callbacks are called from that
 * thread; ctl_raise_event(), ctl_raise_port_event() and ctl_dp_done() too.
 * Dataplane callbacks may answer later (see "Asynchronous answers" at
 * struct ctl_dataplane_ops): one client's request then waits while the
 * others are served.
 */
#ifndef CTL_H
#define CTL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "ctl_cm.h"
#include "ctl_mcast.h"
#include "flow.h"
#include "ipc.h"
#include "ipc_shm.h"
#include "qp_attr.h"
#include "queue.h"
#include "wqe.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CTL_MAX_DEVICES IPC_MAX_DEVICES
#define CTL_MAX_PORTS 1u       /**< ports per device (one device per DPDK port) */
#define CTL_GID_TBL_LEN 16u
#define CTL_PKEY_TBL_LEN 1u

/** One port's identity; GID slots with valid == false answer ENODATA. */
struct ctl_port_cfg {
	struct ipc_port_attr attr;
	uint8_t gid[CTL_GID_TBL_LEN][16];
	uint32_t gid_type[CTL_GID_TBL_LEN]; /**< IBV_GID_TYPE_IB / IBV_GID_TYPE_ROCE_V2 */
	bool gid_valid[CTL_GID_TBL_LEN];
	/** ifindex of the kernel interface holding the GID's address (0: none), as ndev_ifindex */
	uint32_t gid_ndev[CTL_GID_TBL_LEN];
	uint16_t pkey[CTL_PKEY_TBL_LEN];
	uint8_t mac[6];
	/** 802.1Q VID of the port (1..4094): address handles are tagged with it; 0: untagged */
	uint16_t vlan;
};

/** One device as applications see it. */
struct ctl_device_cfg {
	char name[IPC_NAME_LEN];
	struct ipc_device_attr attr;   /**< attr.phys_port_cnt is the number of ports */
	struct ctl_port_cfg port[CTL_MAX_PORTS];
	uint32_t num_comp_vectors;
};

/** Table sizes; every table is allocated once. */
struct ctl_limits {
	uint32_t max_conns;
	uint32_t max_pd;
	uint32_t max_mr;
	uint32_t max_channels;
	uint32_t max_cq;
	uint32_t max_qp;
	uint32_t max_srq;
	uint32_t max_ah;
	/**
	 * Memory windows (ibv_alloc_mw) of all clients; 0: none (EOPNOTSUPP).
	 * One lib/xport window table (mw.h) for every lcore: ctl_mw_table().
	 */
	uint32_t max_mw;
	/**
	 * Device memory (ibv_alloc_dm): bytes of all clients together, and
	 * the largest one allocation (QUERY_DEVICE's max_dm_size); 0: none.
	 */
	uint64_t max_dm_bytes;
	uint64_t max_dm_size;
	/**
	 * XRC domains (ibv_open_xrcd) of all clients, the XRCD handles of
	 * every client counted (a domain shared by two contexts is two); 0: no
	 * XRC (IBV_DEVICE_XRC not reported, OPEN_XRCD EOPNOTSUPP).
	 */
	uint32_t max_xrcd;
	/**
	 * Flow rules (ibv_create_flow) of all clients; 0: the dataplane carries
	 * no RAW_PACKET QPs, so neither they nor flows exist (EOPNOTSUPP) and the
	 * device reports max_raw_ethy_qp 0. Both need CAP_NET_RAW (EPERM), as in
	 * Linux (uverbs create_qp, create_flow).
	 */
	uint32_t max_flows;
	/**
	 * Tag matching SRQs (IBV_SRQT_TM): the largest max_num_tags (at most
	 * 0xffff) and max_ops of one; 0: none (CREATE_SRQ IBV_SRQT_TM is
	 * EOPNOTSUPP).
	 */
	uint32_t max_tm_tags;
	uint32_t max_tm_ops;
	uint32_t qpn_base;     /**< first QPN handed out (QPN 0 and 1 are special) */
	/**
	 * Dataplane lcores: QP qpn runs on lcore qpn % n_lcores (0 counts as
	 * 1). See "QP placement" below.
	 */
	uint32_t n_lcores;
};

/**
 * @name QP placement
 * A CQ ring has a single producer and an SRQ ring a single consumer, so
 * every QP that shares a CQ or an SRQ must run on the same lcore. The
 * control plane chooses QPNs accordingly:
 *  - a CQ or SRQ is unbound until a QP uses it; it is then bound to that
 *    QP's lcore until its last QP is destroyed;
 *  - a new QP goes to the lcore its send CQ, receive CQ and SRQ are bound
 *    to; if none is bound, to the lcore with the fewest QPs; its QPN is the
 *    next free one with qpn % n_lcores == that lcore;
 *  - if they are bound to different lcores, ibv_create_qp fails with EINVAL
 *    (such a QP would need two producers on one CQ ring).
 *  - XRC: an XRC domain is bound to one lcore while it has XRC SRQs or
 *    XRC_RECV QPs (a TGT QP reaches every SRQ of its domain); an XRC SRQ
 *    binds its CQ there too, and a TGT QP goes there.
 * @{ */
/** @return the lcore of QPN @p qpn under @p limits. */
static inline uint32_t ctl_qpn_lcore(const struct ctl_limits *limits, uint32_t qpn)
{
	return limits->n_lcores > 1 ? qpn % limits->n_lcores : 0;
}
/** @} */

struct ctl;
struct ctl_conn;
struct mw_table;
struct ctl_qp;
struct ctl_cq;
struct ctl_srq;
struct ctl_mr;
struct ctl_ah;

/**
 * A shared ring as the dataplane sees it. The geometry here is the control
 * plane's own copy; the application can scribble over the shared header, so
 * a consumer should index with these values, not with ring->size/mask.
 */
struct ctl_ring_info {
	struct spsc_ring *ring;  /**< in this process's mapping of the memfd */
	uint32_t entries;        /**< power of two; 0: no ring */
	uint32_t stride;         /**< bytes per record */
};

/** What the dataplane gets for a QP (valid until qp_destroy returns). */
struct ctl_qp_info {
	uint32_t qpn;
	uint32_t qp_type;        /**< enum ibv_qp_type */
	uint32_t pd;             /**< PD index: MR/AH/QP with equal pd may be used together
				      (XRC_RECV: UINT32_MAX, its SRQs' PDs count) */
	uint32_t send_cqn;       /**< CQ numbers (see ctl_cq_info.cqn); UINT32_MAX: none (XRC) */
	uint32_t recv_cqn;
	uint32_t xrcd;           /**< XRC_RECV: its XRC domain number (1..); 0: none */
	uint32_t srqn;           /**< UINT32_MAX: no SRQ */
	uint32_t port;           /**< device-local port 1.. of the QP's device */
	uint32_t dev;            /**< device index in the configuration */
	struct ctl_ring_info sq; /**< struct sq_wqe records */
	struct ctl_ring_info rq; /**< struct rq_wqe records; entries == 0 with an SRQ */
	const struct qp_sem *sem; /**< current attributes (caps, state, AV, PSNs...) */
	uint64_t user_handle;
	struct ctl_conn *owner;  /**< the owning connection group (its head) */
};

/** What the dataplane gets for a CQ. */
struct ctl_cq_info {
	uint32_t cqn;
	uint32_t cqe;
	int event_fd;            /**< channel eventfd or -1: pass to ipc_cq_signal() */
	struct ipc_cq_ctrl *ctrl; /**< arm word (xport_cq.arm) and notify_count */
	struct ctl_ring_info ring; /**< struct cqe records; the dataplane produces */
	uint64_t user_handle;
	struct ctl_conn *owner;  /**< the owning connection group (its head) */
};

/** What the dataplane gets for an SRQ. */
struct ctl_srq_info {
	uint32_t srqn;           /**< also the number XRC requests name it by (XRCETH) */
	uint32_t pd;
	uint32_t xrcd;           /**< XRC SRQ: its domain number (1..); 0: a basic SRQ */
	uint32_t cqn;            /**< XRC or TM SRQ: the CQ of its completions; else UINT32_MAX */
	uint32_t lcore;          /**< XRC SRQ: the lcore of its domain; TM SRQ: its CQ's (QP placement) */
	uint32_t max_wr;
	uint32_t max_sge;
	uint32_t srq_limit;      /**< 0: disarmed; raise IBV_EVENT_SRQ_LIMIT_REACHED once below */
	struct ctl_ring_info ring; /**< struct rq_wqe records */
	/**
	 * @name Tag matching SRQ (IBV_SRQT_TM; max_num_tags 0 otherwise): bound
	 * to @ref lcore (its CQ's) for its life, which consumes tm_ops and
	 * completes the operations on cqn.
	 * @{ */
	uint32_t max_num_tags;
	uint32_t max_ops;
	struct ctl_ring_info tm_ops; /**< struct tm_op_wqe records; the dataplane consumes */
	uint32_t *tm_released;   /**< max_num_tags counts the dataplane writes (wqe.h) */
	/** @} */
	uint64_t user_handle;
	struct ctl_conn *owner;  /**< the owning connection group (its head) */
};

/** What the dataplane gets for an MR. */
struct ctl_mr_info {
	uint32_t lkey;           /**< == rkey; (slot << 8) | 8-bit generation, as lib/xport mr.h;
				      the dataplane may choose its own in mr_create */
	uint32_t rkey;
	uint32_t pd;
	uint32_t access;         /**< IBV_ACCESS_* (optional-range bits removed) */
	uint64_t iova;           /**< address the peer and WQEs use */
	uint64_t length;
	uint64_t app_addr;       /**< the application's virtual address of iova */
	void *local;             /**< the same bytes mapped in this process; NULL: not shared,
				      reach them in process @p pid (fallback: lib/xport mr.h
				      indirect regions, through @p mem_fd) */
	pid_t pid;               /**< owner process (the registering connection's peer) */
	int mem_fd;              /**< while local is NULL: /proc/@p pid/mem opened at
				      registration (bound to that image: an exec ends it),
				      held by lib/ctl until mr_destroy returned; else -1 */
};

/** What the dataplane gets for an AH. */
struct ctl_ah_info {
	uint32_t ahn;            /**< the number UD WQEs carry in av.ah_handle */
	uint32_t pd;
	uint32_t dev;
	struct ipc_ah_attr attr; /**< as the application asked */
	/**
	 * Resolved address vector: GIDs, source MAC, traffic class, hop limit,
	 * flow label filled by the control plane; ah_create may complete it
	 * (destination MAC). The application copies it into every UD WQE.
	 */
	struct wr_av av;
};

/**
 * What the dataplane gets for a flow rule (ibv_create_flow): frames of
 * @c port that match @c match go to RAW_PACKET QP @c qpn (lib/flow
 * flow_table semantics: the best priority of a port wins).
 */
struct ctl_flow_info {
	uint32_t id;             /**< unique among live flows: < limits.max_flows */
	uint32_t qpn;
	uint32_t dev;            /**< device index in the configuration */
	uint32_t port;           /**< device-local port 1.. */
	uint16_t priority;       /**< lower first */
	struct flow_match match; /**< checked (flow_match_check()) */
	struct ctl_conn *owner;  /**< the owning connection group (its head) */
	/** to an RSS QP (qpn is its number): the frames go to rss.dest[hash] instead */
	bool has_rss;
	struct flow_rss rss;     /**< checked (flow_rss_check()) */
};

/** Things that happen to a QP in the dataplane (ctl_qp_event()). */
enum ctl_qp_event {
	CTL_QP_EV_FATAL,         /**< the engine moved the QP to ERR (cause: an ibv_event_type) */
	CTL_QP_EV_SQ_ERROR,      /**< UC/UD send error: the QP enters SQE */
	CTL_QP_EV_SQ_DRAINED,    /**< SQD: the send queue is empty */
	CTL_QP_EV_COMM_EST,      /**< first packet received in RTR */
	/**
	 * The engine moved the QP to ERR after a completion error of its own
	 * work request (retries exhausted, remote NAK...): ERR and flush like
	 * FATAL, but no IBV_EVENT_QP_FATAL (Linux reports these errors only in
	 * the CQE); an SRQ QP still gets IBV_EVENT_QP_LAST_WQE_REACHED.
	 */
	CTL_QP_EV_ERROR,
};

/**
 * The interface through which the control plane hands objects to the
 * dataplane (the daemon's lcores). Every callback runs on the control thread
 * and never waits for an lcore. Create/modify callbacks return 0 or a
 * positive errno, which fails the request (the control plane then undoes its
 * own part: a refused operation leaves nothing behind). A destroy callback
 * that completed (at once or with ctl_dp_done(token, 0)) means the dataplane
 * no longer touches the object, its rings or its memory. If it could not
 * let go (a message to an lcore refused, an lcore's refusal), it says so
 * (ctl_dp_destroy_failed() at once, or a nonzero ctl_dp_done() result): the
 * object fails closed into quarantine. Its handle goes, its memory (rings,
 * MR mapping, mem fd) and that of the CQs/SRQ a QP used are never unmapped
 * or closed (ctl_stats quarantined, quarantined_bytes), and the request
 * fails with EIO. Any pointer may be NULL ("nothing to do").
 *
 * Asynchronous answers: any callback may answer later. It then calls
 * ctl_dp_defer(), keeps the token and returns 0 (its result is ignored); the
 * dataplane later calls ctl_dp_done(token, result) (a destroy: result 0,
 * when it let go). Until then the request stays pending: the object is
 * busy (requests naming it fail with EINVAL as if it did not exist), the
 * client's connection takes no other request (ctl_server does not read its
 * socket), its descriptors and memory are held, and every other client is
 * served. A client that disconnects meanwhile leaves nothing behind once
 * the answer arrived (a create that succeeded is destroyed again, with
 * the rest of its objects). Out-fields a callback may fill (mr_create's
 * keys, ah_create's av) may be filled up to ctl_dp_done(). A connection
 * group is torn down one destroy at a time, each after the previous one's
 * answer (users before what they use). Outside a
 * request (ctl_qp_event()) ctl_dp_defer() returns CTL_DP_TOKEN_NONE: the
 * dataplane then acts on its own and reports nothing.
 *
 * Order guarantees: an MR/CQ/SRQ is created before any QP that uses it and
 * destroyed after it (after its destroy completed); qp_destroy is always
 * called for every created QP, including on connection teardown; at most
 * one operation per object is in flight.
 */
struct ctl_dataplane_ops {
	/**
	 * May replace mr->lkey/rkey with keys of its own (e.g. lib/xport mr_reg()
	 * chooses them); the application gets whatever they are on return.
	 *
	 * REREG_MR is mr_destroy of the old registration, then mr_create of the
	 * new one. If that is refused, the old one is created again and the
	 * request fails with the refusal's errno. If the dataplane refuses the
	 * old one too, or takes it back under other keys than the application
	 * holds (then it is destroyed again), the MR fails closed: it is
	 * invalidated (its memory released, no dataplane object, no mr_destroy
	 * later), the request fails with the first errno, and the MR's handle
	 * is good only for DEREG_MR (every other request naming it: EINVAL),
	 * which the application owes anyway (ibv_rereg_mr(3):
	 * IBV_REREG_MR_ERR_CMD). Its keys and PD reference are held until then.
	 */
	int (*mr_create)(void *dp, struct ctl_mr_info *mr);
	void (*mr_destroy)(void *dp, const struct ctl_mr_info *mr);
	int (*cq_create)(void *dp, const struct ctl_cq_info *cq);
	/** The ring moves: copy the CQEs not yet consumed from @p old to @p cq's ring. */
	int (*cq_resize)(void *dp, const struct ctl_cq_info *cq, const struct ctl_cq_info *old);
	void (*cq_destroy)(void *dp, const struct ctl_cq_info *cq);
	int (*srq_create)(void *dp, const struct ctl_srq_info *srq);
	int (*srq_modify)(void *dp, const struct ctl_srq_info *srq);
	void (*srq_destroy)(void *dp, const struct ctl_srq_info *srq);
	/** May complete @p ah->av (e.g. the destination MAC) before the answer goes out. */
	int (*ah_create)(void *dp, struct ctl_ah_info *ah);
	void (*ah_destroy)(void *dp, const struct ctl_ah_info *ah);
	int (*qp_create)(void *dp, const struct ctl_qp_info *qp);
	/**
	 * Apply a modify the QP semantics accepted: @p next is the complete new
	 * attribute set, @p fx what the transition means for the data path
	 * (QP_SEM_FX_RESET: drop every SQ/RQ entry, i.e. set each ring's cons to
	 * its prod; QP_SEM_FX_FLUSH: flush; ...). qp->sem still shows the old
	 * attributes during the call.
	 */
	int (*qp_modify)(void *dp, const struct ctl_qp_info *qp, const struct qp_sem *next,
			 const struct qp_sem_effects *fx);
	void (*qp_destroy)(void *dp, const struct ctl_qp_info *qp);
	/**
	 * A UD QP joined a multicast group (ctl_mcast.h); answers at once (no
	 * ctl_dp_defer()). A nonzero errno fails the attach, nothing kept.
	 */
	int (*mcast_attach)(void *dp, const struct ctl_mcast_info *m);
	/** A QP left a group (ibv_detach_mcast, or its destroy). Cannot fail. */
	void (*mcast_detach)(void *dp, const struct ctl_mcast_info *m);
	/**
	 * A flow rule steers frames to a RAW_PACKET QP from now on; answers at
	 * once (no ctl_dp_defer()). A nonzero errno fails ibv_create_flow.
	 */
	int (*flow_create)(void *dp, const struct ctl_flow_info *f);
	/** The rule is gone (ibv_destroy_flow or teardown, always before its QP). Cannot fail. */
	void (*flow_destroy)(void *dp, const struct ctl_flow_info *f);
};

/**
 * Per-client quotas: what one connection group (a client and the contexts
 * imported from it) may hold. 0: no quota beyond the device's limits.
 * QUERY_DEVICE reports the smaller of the two where verbs has a field.
 * A refusal is ENOMEM, as the kernel's for exhausted resources.
 */
struct ctl_quota {
	uint32_t max_pd;
	uint32_t max_mr;
	uint32_t max_cq;
	uint32_t max_qp;
	uint32_t max_srq;
	uint32_t max_ah;
	uint32_t max_channels;   /**< (memory windows are bounded by max_mr, XRCD handles by max_pd) */
	uint32_t max_cm_ids;      /**< rdma_cm ids (CM_CREATE_ID, and ids a CONNECT_REQUEST makes) */
	uint32_t max_cm_channels; /**< rdma_cm event channels */
	uint64_t max_mr_bytes;   /**< bytes of all its registrations */
	uint64_t max_dm_bytes;   /**< bytes of all its device memory (ibv_alloc_dm) */
	uint32_t max_mcast_attach; /**< multicast attachments of all its QPs (ctl_mcast.h) */
	uint32_t max_flows;      /**< flow rules (ibv_create_flow) */
	uint32_t max_tm_tags;    /**< tag matching entries of all its TM SRQs (max_num_tags summed) */
	/**
	 * Open connections of one user (SO_PEERCRED uid; root exempt). Each
	 * connection has at most one request pending (the next is read after
	 * the answer), so this also bounds a user's pending requests.
	 */
	uint32_t max_conns_per_user;
};

#define CTL_MAX_ALLOWED 16u

/**
 * Who may connect, by SO_PEERCRED: a peer whose user is in @p uids, or
 * whose primary or supplementary group is in @p gids. Both lists empty:
 * anyone who can open the socket. Root always.
 */
struct ctl_access {
	uint32_t n_uids, n_gids;
	uid_t uids[CTL_MAX_ALLOWED];
	gid_t gids[CTL_MAX_ALLOWED];
};

/** Everything ctl_create() needs. */
struct ctl_config {
	struct ctl_quota quota;
	struct ctl_access access;
	uint32_t ndevices;
	struct ctl_device_cfg dev[CTL_MAX_DEVICES];
	struct ctl_limits limits;
	const struct ctl_dataplane_ops *dp_ops; /**< NULL: no dataplane */
	void *dp;                               /**< first argument of every dp callback */
	qp_sem_resolve_fn resolve;              /**< neighbour resolution for QP AVs, or NULL */
	void *resolve_ctx;
	/** rdma_cm's wire (ctl_cm.h); NULL: only MADs between our own GIDs go anywhere */
	const struct ctl_cm_ops *cm_ops;
	struct ctl_cm_limits cm_limits;         /**< zeros: defaults */
};

/**
 * Fill @p cfg with one device of sensible attributes (vendor 0xffffff, part
 * 0, port ACTIVE, Ethernet, MTU 1024 of 4096, P_Key table [0xffff]) and the
 * GID table index 0 = fe80::EUI-64(mac), index 1 = ::ffff:@p ipv4, both RoCE
 * v2. Limits default to small tables suitable for tests.
 * @param ipv4 address in network byte order; 0 leaves slot 1 empty
 */
void ctl_config_default(struct ctl_config *cfg, const char *name, const uint8_t mac[6],
			uint32_t ipv4);

/** Create the control plane. @return NULL with errno set (ENOMEM, EINVAL). */
struct ctl *ctl_create(const struct ctl_config *cfg);
/**
 * Close every connection (each gets IBV_EVENT_DEVICE_FATAL first) and free
 * everything. The dataplane must answer what it deferred meanwhile (from
 * its callbacks, e.g. synchronously once its lcores stopped): objects still
 * waiting for it are then freed without their destroy completing.
 */
void ctl_destroy(struct ctl *ctl);

/**
 * The memory windows every lcore's engine checks window keys in
 * (xport_qp_cfg.mws): shared by the lcores and the control thread, each
 * window under its own lock (lib/xport mw.h). NULL when limits.max_mw is 0.
 * ALLOC_MW opens a window, DEALLOC_MW and teardown close it, DEREG_MR is
 * refused while windows are bound to the MR (EINVAL, as rxe).
 */
struct mw_table *ctl_mw_table(const struct ctl *ctl);

/** Change one GID slot at runtime (address configured/removed). @return 0 or -errno. */
int ctl_set_gid(struct ctl *ctl, uint32_t dev, uint32_t port, uint32_t index,
		const uint8_t gid[16], uint32_t gid_type, bool valid);

/**
 * Open a connection for a client whose socket is @p sock (used only for its
 * peer credentials; the caller keeps reading and writing it).
 * @return NULL with errno (EMFILE when max_conns connections exist).
 */
struct ctl_conn *ctl_conn_open(struct ctl *ctl, int sock);
/**
 * Close @p conn. The last connection of a group destroys every object of
 * the group and frees it; others leave the objects to the group.
 */
void ctl_conn_close(struct ctl_conn *conn);

/**
 * Serve an IMPORT_DEVICE request (see lib/ipc) that arrived on @p parent:
 * open a connection for @p sock, the socket that came with the request, in
 * @p parent's group (same device, same objects). The answer, an OPEN_DEVICE
 * answer whose @p rfds hold the new connection's async-event socket, is to
 * be sent on @p sock, not on @p parent's socket (the caller sends it, then
 * closes @p rfds).
 * @return the new connection; NULL when the import failed (rsp carries the
 *         status: ENODEV before OPEN_DEVICE, EMFILE...)
 */
struct ctl_conn *ctl_conn_import(struct ctl_conn *parent, int sock, const struct ipc_msg *req,
				 struct ipc_msg *rsp, int *rfds, unsigned int *rnfds);

/**
 * Handle one validated request (ipc_recv(..., IPC_REQUEST) succeeded).
 * IMPORT_DEVICE is not one of them: its answer goes to another socket (see
 * ctl_conn_import()); here it is answered EINVAL. A connection takes one
 * request at a time: while one is pending (CTL_PENDING), another is
 * answered EBUSY at once.
 * @param fds descriptors that came with the request; always consumed (kept
 *            by the object they belong to, or closed)
 * @param rsp the response to send (op/seq of @p req, status, body)
 * @param rfds descriptors to send with the response; the caller sends them
 *             with ipc_send() and then closes them
 * @param rnfds number of @p rfds
 * @return 0: @p rsp is the answer; CTL_PENDING: the dataplane answers later
 *         (ctl_dp_done()), then ctl_conn_answer() gives the response
 */
int ctl_conn_handle(struct ctl_conn *conn, const struct ipc_msg *req, int *fds,
		    unsigned int nfds, struct ipc_msg *rsp, int *rfds, unsigned int *rnfds);

#define CTL_PENDING 1 /**< ctl_conn_handle(): the answer comes later */

/**
 * Whether ctl_conn_handle() has a handler for @p op: every op of IPC_OPS
 * (the dispatch table is expanded from it), no other code. A request with
 * another code is answered ENODEV before OPEN_DEVICE, EOPNOTSUPP after.
 */
bool ctl_op_handled(uint32_t op);

/**
 * Take the answer of @p conn's pending request once the dataplane gave it
 * (same outputs as ctl_conn_handle()). @return true if there was one; the
 * connection then takes requests again.
 */
bool ctl_conn_answer(struct ctl_conn *conn, struct ipc_msg *rsp, int *rfds, unsigned int *rnfds);

/** @return true while @p conn has a request whose answer was not taken yet. */
bool ctl_conn_pending(const struct ctl_conn *conn);

/** @name Asynchronous dataplane answers @{ */
#define CTL_DP_TOKEN_NONE 0u /**< ctl_dp_defer() outside a request: answer now */
/**
 * Inside an (async) dataplane callback: the answer comes later, through
 * ctl_dp_done() with the token returned. The callback then returns 0.
 * @return the token; CTL_DP_TOKEN_NONE when this call cannot be deferred
 *         (the callback must then answer before it returns)
 */
uint64_t ctl_dp_defer(struct ctl *ctl);
/**
 * The dataplane's answer to a deferred callback: @p rc is what the callback
 * would have returned (0 or a positive errno; a destroy: 0). Runs the rest
 * of the request (which may call the dataplane again) on this thread.
 * @return 0; -ENOENT for an unknown or already answered token
 */
int ctl_dp_done(struct ctl *ctl, uint64_t token, int rc);
/**
 * In a destroy callback that answers at once: the dataplane could not let
 * go of the object (it may still hold it). The control plane quarantines it
 * (see struct ctl_dataplane_ops).
 */
void ctl_dp_destroy_failed(struct ctl *ctl);
/** Dataplane operations in flight (deferred, not yet answered). */
uint32_t ctl_dp_inflight(const struct ctl *ctl);
/** @} */

/** Object counts of a whole control plane (diagnostics, telemetry). */
struct ctl_stats {
	uint32_t conns;          /**< open connections */
	uint32_t contexts;       /**< open connections with a device (ibv_open_device/import_device) */
	uint32_t pd, mr, channel, cq, qp, srq, ah;
	uint64_t events_dropped; /**< async events clients did not read in time */
	uint64_t quarantined;    /**< objects the dataplane could not let go of (kept mapped) */
	uint64_t quarantined_bytes; /**< their shared memory and MR mappings */
	uint64_t qkey_refused;   /**< controlled Q_Keys asked for without CAP_NET_RAW (EPERM) */
	uint32_t flow;           /**< flow rules */
	uint64_t raw_refused;    /**< RAW_PACKET QPs and flows asked for without CAP_NET_RAW (EPERM) */
	uint64_t flows_bad;      /**< flow rules refused as malformed (EINVAL, EOPNOTSUPP) */
	uint64_t quota_refused;  /**< requests refused by a client's quota (ENOMEM) */
	uint64_t conns_refused;  /**< connections of peers not allowed (ctl_access) */
	uint32_t dm;             /**< device memory allocations (ibv_alloc_dm) */
	uint64_t dm_bytes;       /**< their bytes (limits.max_dm_bytes bounds them) */
};

/** Fill @p st. */
void ctl_get_stats(const struct ctl *ctl, struct ctl_stats *st);

/** Objects currently owned by @p conn's group (all kinds), for tests and diagnostics. */
uint32_t ctl_conn_nobjects(const struct ctl_conn *conn);
/** Objects allocated in @p ctl (all connections, all kinds). */
uint32_t ctl_nobjects(const struct ctl *ctl);

/**
 * Queue an async event for an object to the application that owns it
 * (dataplane -> application), e.g. IBV_EVENT_QP_FATAL for a QP.
 * @param kind IPC_OBJ_QP, IPC_OBJ_CQ or IPC_OBJ_SRQ
 * @param num the object's number: QPN, cqn or srqn of its info record
 * @return 0; -ENOENT when no such object exists; -EAGAIN when the client
 *         does not read its events (the event is dropped and counted)
 */
int ctl_raise_event(struct ctl *ctl, enum ipc_obj_kind kind, uint32_t num, uint32_t ibv_event_type);
/**
 * The dataplane reports what happened to a QP: the control plane updates the
 * QP's semantic state (lib/qp qp_sem_fatal() etc.), tells the dataplane the
 * effects through qp_modify when there are any (e.g. FLUSH), and queues the
 * affiliated async events to the owner.
 * @param cause for CTL_QP_EV_FATAL: IBV_EVENT_QP_FATAL, _QP_REQ_ERR or _QP_ACCESS_ERR
 * @return 0; -ENOENT (no such QP); -EINVAL (not possible in the QP's state)
 */
int ctl_qp_event(struct ctl *ctl, uint32_t qpn, enum ctl_qp_event ev, uint32_t cause);

/** Send a port event (IBV_EVENT_PORT_ACTIVE/ERR, GID_CHANGE) to every connection of @p dev. */
void ctl_raise_port_event(struct ctl *ctl, uint32_t dev, uint32_t port, uint32_t ibv_event_type);

/**
 * The link of port @p port (1..) of device @p dev changed: from now on
 * ibv_query_port answers @p attr (state, speed, width, active MTU) and QP
 * modifies are judged against its active MTU. When the state crosses
 * IBV_PORT_ACTIVE, every connection of the device gets IBV_EVENT_PORT_ACTIVE
 * (now active) or IBV_EVENT_PORT_ERR (no longer active), as a NIC's driver
 * raises them on a link change.
 * @return the event raised (IBV_EVENT_PORT_ACTIVE/ERR), 0 when the state did
 *         not cross ACTIVE, or -EINVAL for a device or port that does not exist
 */
int ctl_set_port_attr(struct ctl *ctl, uint32_t dev, uint32_t port,
		      const struct ipc_port_attr *attr);

/** @name Control server: a poll(2) loop over a listening socket @{ */
struct ctl_server;
/** Listen on @p path and serve @p ctl. @return NULL with errno set. */
struct ctl_server *ctl_server_create(struct ctl *ctl, const char *path);
/**
 * Wait up to @p timeout_ms for activity and process all of it: accept,
 * requests, disconnects (teardown). @return events handled, or -errno.
 */
int ctl_server_poll(struct ctl_server *srv, int timeout_ms);
/**
 * Also end ctl_server_poll()'s wait when @p fd (an eventfd, non-blocking)
 * becomes readable; it is read (reset) there and counts as one event.
 * -1: none (the default). The caller keeps and closes @p fd.
 */
void ctl_server_watch(struct ctl_server *srv, int fd);
/** Number of open client connections. */
uint32_t ctl_server_nconns(const struct ctl_server *srv);
/** Close every connection and the listening socket, unlink the path. */
void ctl_server_destroy(struct ctl_server *srv);
/** @} */

#ifdef __cplusplus
}
#endif
#endif /* CTL_H */
