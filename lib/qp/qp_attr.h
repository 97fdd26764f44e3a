/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * QP semantics: ibv_modify_qp(3), ibv_query_qp(3) and rdma_init_qp_attr(3)
 * as a pure C library (no DPDK, no I/O).
 *
 * A struct qp_sem holds every attribute of one queue pair, in the layout of
 * <infiniband/verbs.h> so the verbs shim can hand its callers' structs
 * straight through. qp_sem_modify() checks a whole request against the
 * transition table (qp_state.c, one table for RC, UC, UD and RAW_PACKET,
 * after the Linux core's qp_state_table) and against the values the device
 * advertises, then applies all of it or nothing. What the transition means
 * for the data path (reset the queues, flush with IBV_WC_WR_FLUSH_ERR, drain
 * the send queue, raise an async event) comes back as data in struct
 * qp_sem_effects; the transport engine and the daemon act on it.
 *
 * Ownership: a struct qp_sem has a single owner (the lcore or control thread
 * that serialises verbs for that QP). No function here locks, allocates,
 * sleeps or touches another QP; every function is safe to call on distinct
 * QPs from distinct threads.
 *
 * Error numbers are positive errno values, as libibverbs returns them.
 * doc/qp-state-machine.md lists the table, the effects and every place
 * where we deliberately differ from Linux rxe.
 */
#ifndef ROCE_QP_ATTR_H
#define ROCE_QP_ATTR_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

/**
 * @name IBTA 1.5 FLUSH and ATOMIC WRITE names rdma-core 44 lacks
 * The values of rdma-core 45's verbs.h (IBV_ACCESS_FLUSH_GLOBAL/_PERSISTENT)
 * and of the kernel's IB_UVERBS_DEVICE_FLUSH_GLOBAL/_PERSISTENT and
 * IB_UVERBS_DEVICE_ATOMIC_WRITE (device_cap_flags_ex), which is what an
 * application built against newer headers passes and tests.
 * @{
 */
#define QP_ACCESS_FLUSH_GLOBAL (1u << 8)
#define QP_ACCESS_FLUSH_PERSISTENT (1u << 9)
#define QP_DEVICE_FLUSH_GLOBAL (1ULL << 38)
#define QP_DEVICE_FLUSH_PERSISTENT (1ULL << 39)
#define QP_DEVICE_ATOMIC_WRITE (1ULL << 40)
/** @} */

#ifdef __cplusplus
extern "C" {
#endif

/** @name Attribute mask bits
 * The IBV_QP_* bits of enum ibv_qp_attr_mask that ibv_modify_qp() defines.
 * Bits 21-24 (the old SMAC/ALT_SMAC/VID/ALT_VID) and bits above 25 are not
 * part of the ABI: a mask with any of them fails with EOPNOTSUPP.
 * @{ */
#define QP_SEM_MASK_VERBS ((int)((1u << 21) - 1)) /**< bits 0-20 */
#define QP_SEM_MASK_KNOWN (QP_SEM_MASK_VERBS | IBV_QP_RATE_LIMIT)
/** Query masks: libibverbs refuses IBV_QP_RATE_LIMIT and above. */
#define QP_SEM_QUERY_MASK_KNOWN ((int)(IBV_QP_RATE_LIMIT - 1))
/** @} */

/** Index of a QP type in the transition table's per-type masks. */
enum qp_sem_type_index {
	QP_SEM_RC,
	QP_SEM_UC,
	QP_SEM_UD,
	QP_SEM_RAW_PACKET,
	QP_SEM_XRC_INI,                /**< IBV_QPT_XRC_SEND */
	QP_SEM_XRC_TGT,                /**< IBV_QPT_XRC_RECV */
	QP_SEM_NTYPES,
};

/**
 * One cell of the transition table: may a QP go from state A to state B,
 * and with which attribute bits (IBV_QP_STATE is implied everywhere).
 */
struct qp_sem_transition {
	bool valid;                    /**< the move exists at all */
	int req[QP_SEM_NTYPES];        /**< bits the mask must contain */
	int opt[QP_SEM_NTYPES];        /**< bits the mask may contain */
};

/**
 * Table lookup.
 * @return the cell for @p cur -> @p next, NULL if either state is not one of
 *   IBV_QPS_RESET..IBV_QPS_ERR.
 */
const struct qp_sem_transition *qp_sem_transition(enum ibv_qp_state cur,
						   enum ibv_qp_state next);

/** @return the table index of @p type, or -1 for a type the table lacks. */
int qp_sem_type_index(enum ibv_qp_type type);

/**
 * The mask rule alone, like the kernel's ib_modify_qp_is_ok(): the move is in
 * the table, @p mask has every required bit and nothing beyond required,
 * optional and IBV_QP_STATE, and IBV_QP_CUR_STATE only when @p cur is RTR,
 * RTS, SQD or SQE. Values are not judged.
 */
bool qp_sem_mask_ok(enum ibv_qp_state cur, enum ibv_qp_state next,
		    enum ibv_qp_type type, int mask);

/** @return "RESET", "INIT", ... "ERR", or NULL beyond ERR. */
const char *qp_sem_state_name(enum ibv_qp_state state);

/** @return the IBV_QP_ suffix of mask bit @p bit ("STATE", "AV", ...), NULL if unnamed. */
const char *qp_sem_attr_name(unsigned int bit);

/** @name Device description
 * What the device advertises, supplied by the caller (the daemon owns it).
 * @{ */

/** One GID table entry. */
struct qp_sem_gid {
	union ibv_gid gid;
	enum ibv_gid_type type;  /**< IBV_GID_TYPE_ROCE_V2 for RoCEv2 entries */
	bool valid;              /**< false: empty slot (AV using it -> ENODATA) */
};

/** One port. */
struct qp_sem_port {
	enum ibv_mtu max_mtu;
	enum ibv_mtu active_mtu;          /**< path_mtu may not exceed this */
	uint32_t gid_tbl_len;             /**< sgid_index >= this -> EINVAL */
	const struct qp_sem_gid *gid;     /**< gid_tbl_len entries */
	uint16_t pkey_tbl_len;
	const uint16_t *pkey;             /**< pkey_tbl_len entries */
};

/**
 * Address resolution hook (ARP/ND for the DGID of a unicast AV), owned by
 * the daemon. Called last, after every other check passed, so a failure
 * still leaves the QP untouched.
 * @param ctx        qp_sem_device.resolve_ctx
 * @param port_num   port the AV leaves from
 * @param grh        the AV's GRH as requested
 * @param sgid       the source GID entry @p grh selects
 * @param[out] hop_limit the route's hop limit (preset to the requested one)
 * @return 0, or a positive errno (ETIMEDOUT, EHOSTUNREACH, ...) that
 *   qp_sem_modify() returns unchanged.
 */
typedef int (*qp_sem_resolve_fn)(void *ctx, uint8_t port_num,
				 const struct ibv_global_route *grh,
				 const struct qp_sem_gid *sgid, uint8_t *hop_limit);

/** The device limits and tables a modify is judged against. */
struct qp_sem_device {
	/**
	 * Standard attributes. Used: max_qp_wr, max_sge, max_qp_rd_atom
	 * (limit of max_dest_rd_atomic), max_qp_init_rd_atom (limit of
	 * max_rd_atomic), device_cap_flags (IBV_DEVICE_AUTO_PATH_MIG gates
	 * IBV_QP_ALT_PATH), phys_port_cnt.
	 */
	struct ibv_device_attr attr;
	/** Rate limiting: kbps bounds and supported_qpts (1 << IBV_QPT_*). */
	struct ibv_packet_pacing_caps pacing;
	uint32_t max_inline_data;         /**< create: larger requests -> EINVAL */
	uint32_t qp_types;                /**< create: 1 << IBV_QPT_* accepted */
	const struct qp_sem_port *port;   /**< port[0] is port 1 */
	qp_sem_resolve_fn resolve;        /**< NULL: hop_limit kept, no resolution */
	void *resolve_ctx;
};
/** @} */

/** The attributes of one QP. Treat as opaque; read it with qp_sem_query(). */
struct qp_sem {
	struct ibv_qp_attr attr;       /**< every attribute, as query reports it */
	struct ibv_qp_init_attr init;  /**< creation attributes, caps adjusted */
	bool alt_path_loaded;          /**< an ALT_PATH was accepted */
	bool comm_est_raised;          /**< COMM_EST already reported in this RTR */
};

/** @name Effects of a state change, as data for the engine and the daemon
 * @{ */
enum qp_sem_effect {
	/** Entered RESET from another state: drop every SQ/RQ entry without a
	 *  completion and reset transport state (PSN windows, MSN, responder
	 *  resources). Attributes stay as they were (query still reports them). */
	QP_SEM_FX_RESET      = 1u << 0,
	/** Entered ERR: complete every outstanding WR, and every WR posted
	 *  later, with IBV_WC_WR_FLUSH_ERR; stop the transport. */
	QP_SEM_FX_FLUSH      = 1u << 1,
	/** Entered SQE (UC/UD): complete outstanding send WRs with
	 *  IBV_WC_WR_FLUSH_ERR; the receive side keeps working. */
	QP_SEM_FX_FLUSH_SQ   = 1u << 2,
	/** RTS -> SQD: stop starting new send WRs, let outstanding ones finish,
	 *  then call qp_sem_sq_drained(). */
	QP_SEM_FX_SQ_DRAIN   = 1u << 3,
	/** SQD or SQE -> RTS: resume the send queue. */
	QP_SEM_FX_SQ_RESUME  = 1u << 4,
	/** INIT -> RTR: the responder starts accepting packets. */
	QP_SEM_FX_RECV_START = 1u << 5,
	/** RTR -> RTS: the requester may transmit. */
	QP_SEM_FX_SEND_START = 1u << 6,
	/** path_mig_state was written (APM: REARM asks to arm the alternate
	 *  path, MIGRATED forces use of the current one). */
	QP_SEM_FX_PATH_MIG   = 1u << 7,
	/** Primary and alternate path swapped (automatic migration). */
	QP_SEM_FX_MIGRATED   = 1u << 8,
};

#define QP_SEM_MAX_EVENTS 2

/** What a call did, for the caller to carry out. */
struct qp_sem_effects {
	uint32_t flags;                 /**< enum qp_sem_effect bits */
	enum ibv_qp_state old_state;
	enum ibv_qp_state new_state;
	int applied_mask;               /**< IBV_QP_* bits written (0 on error) */
	unsigned int n_events;          /**< affiliated async events to deliver */
	enum ibv_event_type event[QP_SEM_MAX_EVENTS];
};
/** @} */

/**
 * Create: like ibv_create_qp() on rxe. Checks the type and caps against
 * @p dev and fills @p qp in RESET with caps adjusted to the real ring sizes:
 * max_send_wr/max_recv_wr become 2^k - 1 >= requested, max_inline_data
 * becomes max(16 x max_send_sge, requested) and max_send_sge that / 16; with
 * an SRQ the receive caps are 0. (libibverbs then writes back the requested
 * WR counts but the adjusted SGE/inline values; that is the shim's job.)
 * XRC: an XRC_SEND (INI) QP needs a send CQ only and has no receive caps;
 * an XRC_RECV (TGT) QP needs no CQ and has no caps at all (its XRC domain
 * is the control plane's business).
 * @return 0; EINVAL for caps above the limits, missing CQs or an unknown
 *   type; EOPNOTSUPP for a known type @p dev does not list.
 */
int qp_sem_create(struct qp_sem *qp, const struct ibv_qp_init_attr *init,
		  const struct qp_sem_device *dev);

/**
 * ibv_modify_qp(): validate the whole request, then apply all of it or
 * nothing. A mask without IBV_QP_STATE means "stay" and is judged as the
 * move X -> X. On any error nothing changes, not even the state.
 * @param fx  may be NULL; filled on success and on error (empty then)
 * @return 0; EOPNOTSUPP for unknown mask bits or rate limiting the device
 *   does not offer for this QP type; EINVAL for anything the table or a value
 *   check refuses; ENODATA for an AV naming an empty GID slot; any errno of
 *   qp_sem_device.resolve.
 */
int qp_sem_modify(struct qp_sem *qp, const struct ibv_qp_attr *attr,
		  int attr_mask, const struct qp_sem_device *dev,
		  struct qp_sem_effects *fx);

/**
 * ibv_query_qp(): fills every field of @p attr and @p init whatever
 * @p attr_mask says (like rvt_query_qp). cur_qp_state reads as Linux rxe
 * reports it: RESET until a modify with IBV_QP_CUR_STATE succeeds, then the
 * state that call moved to.
 * @param init may be NULL
 * @return 0; EOPNOTSUPP if @p attr_mask has IBV_QP_RATE_LIMIT or a higher bit
 *   (libibverbs refuses those masks before asking the provider).
 */
int qp_sem_query(const struct qp_sem *qp, int attr_mask,
		 struct ibv_qp_attr *attr, struct ibv_qp_init_attr *init);

/** @name Events raised by the data path
 * Called by the transport engine; each returns 0 and fills @p fx (may be
 * NULL), or EINVAL when the QP is not in a state where the event exists.
 * @{ */

/** The send queue is empty after QP_SEM_FX_SQ_DRAIN: sq_draining drops to 0
 *  and IBV_EVENT_SQ_DRAINED is raised, whether or not the RTS -> SQD call
 *  set IBV_QP_EN_SQD_ASYNC_NOTIFY (as Linux rxe; IBTA leaves it optional). */
int qp_sem_sq_drained(struct qp_sem *qp, struct qp_sem_effects *fx);

/** The first packet arrived in RTR (RC/UC): IBV_EVENT_COMM_EST, once per RTR. */
int qp_sem_comm_established(struct qp_sem *qp, struct qp_sem_effects *fx);

/** A send-side error on UC/UD in RTS: the QP enters SQE (QP_SEM_FX_FLUSH_SQ). */
int qp_sem_send_queue_error(struct qp_sem *qp, struct qp_sem_effects *fx);

/** A fatal error: the QP enters ERR (QP_SEM_FX_FLUSH) and raises @p cause,
 *  one of IBV_EVENT_QP_FATAL, IBV_EVENT_QP_REQ_ERR, IBV_EVENT_QP_ACCESS_ERR,
 *  plus IBV_EVENT_QP_LAST_WQE_REACHED if the QP uses an SRQ. Not from RESET;
 *  a QP already in ERR just returns 0 with no effects. */
int qp_sem_fatal(struct qp_sem *qp, enum ibv_event_type cause,
		 struct qp_sem_effects *fx);

/** APM: both ends loaded the alternate path; REARM -> ARMED. */
int qp_sem_path_armed(struct qp_sem *qp, struct qp_sem_effects *fx);

/** APM: the primary path failed while ARMED; the alternate path becomes the
 *  primary one (QP_SEM_FX_MIGRATED), MIGRATED, IBV_EVENT_PATH_MIG. */
int qp_sem_path_migrated(struct qp_sem *qp, struct qp_sem_effects *fx);
/** @} */

/** @name rdma_init_qp_attr()
 * @{ */

/** Parameters a connection manager negotiated for one side. */
struct qp_sem_conn_param {
	enum ibv_qp_type qp_type;
	uint8_t port_num;
	uint16_t pkey_index;
	unsigned int access_flags;    /**< INIT (RC/UC); see qp_sem_cm_access_flags() */
	uint32_t qkey;                /**< INIT (UD) */
	struct ibv_ah_attr ah_attr;   /**< RTR (RC/UC): path to the remote QP */
	enum ibv_mtu path_mtu;        /**< RTR (RC/UC); clamped to the active MTU */
	uint32_t remote_qpn;          /**< RTR (RC/UC): dest_qp_num */
	uint32_t rq_psn;              /**< RTR: first PSN expected (remote's start) */
	uint32_t sq_psn;              /**< RTS: our first PSN */
	uint8_t responder_resources;  /**< RTR (RC): max_dest_rd_atomic */
	uint8_t initiator_depth;      /**< RTS (RC): max_rd_atomic */
	uint8_t min_rnr_timer;        /**< RTR (RC), IBTA code */
	uint8_t timeout;              /**< RTS (RC): local ACK timeout code */
	uint8_t retry_cnt;            /**< RTS (RC) */
	uint8_t rnr_retry;            /**< RTS (RC), 7 = infinite */
	uint32_t rate_limit;          /**< RTS (RC, RAW_PACKET), kbps, 0 = none */
};

/**
 * Fill @p attr for the move into @p state (INIT, RTR or RTS) from @p cp:
 * every attribute the table requires for that move and type, plus the
 * optional ones @p cp carries (rate_limit when non-zero). The caller may
 * override fields before qp_sem_modify(). @p attr is zeroed first.
 * @param dev  may be NULL; if given, path_mtu is clamped to the port's
 *   active MTU
 * @return 0; EINVAL for another state or a type the table lacks.
 */
int qp_sem_init_attr(const struct qp_sem_conn_param *cp,
		     enum ibv_qp_state state, const struct qp_sem_device *dev,
		     struct ibv_qp_attr *attr, int *attr_mask);

/** The access flags the Linux CM grants at INIT: REMOTE_WRITE, plus
 *  REMOTE_READ and REMOTE_ATOMIC when @p responder_resources > 0 (RC). */
unsigned int qp_sem_cm_access_flags(enum ibv_qp_type type,
				    uint8_t responder_resources);
/** @} */

/** @name Encodings (IBTA Vol. 1; ../shared/docs/roce-wire.md 4.7, 4.8)
 * @{ */

/** Local ACK timeout: 4.096 us x 2^code in ns; 0 for code 0 (no timer) and
 *  for codes above 31. */
uint64_t qp_sem_ack_timeout_ns(uint8_t code);

/** RNR NAK timer code (0..31) -> minimum delay in us (IBTA table: 0 is
 *  655.36 ms, 1 is 0.01 ms ... 31 is 491.52 ms); 0 for codes above 31. */
uint32_t qp_sem_rnr_timer_us(uint8_t code);

/** @return the code of the shortest RNR delay >= @p usec: one of 1..31, or
 *  0 (655.36 ms, the longest) when @p usec exceeds 491.52 ms. */
uint8_t qp_sem_rnr_timer_code(uint32_t usec);

/** rnr_retry 7 means retry forever; 0..6 are counts. */
static inline bool
qp_sem_rnr_retry_infinite(uint8_t rnr_retry)
{
	return rnr_retry == 7;
}

/** retry_cnt is a plain count: 7 means seven retries, never infinite. */
static inline unsigned int
qp_sem_retry_budget(uint8_t retry_cnt)
{
	return retry_cnt;
}

/** @return the MTU in bytes (256 << (mtu - 1)), 0 for values outside 1..5. */
uint32_t qp_sem_mtu_bytes(enum ibv_mtu mtu);

/** Transport timing derived from a QP's attributes, for the engine. */
struct qp_sem_timing {
	uint64_t ack_timeout_ns;   /**< 0: no retransmit timer (timeout 0) */
	unsigned int retry_cnt;    /**< transport retries after a timeout or NAK */
	unsigned int rnr_retry;    /**< RNR retries; UINT_MAX for infinite */
	uint32_t path_mtu_bytes;
	uint8_t rnr_nak_code;      /**< min_rnr_timer: the code our RNR NAKs carry */
};

/** Fill @p t from @p qp's current attributes. */
void qp_sem_timing(const struct qp_sem *qp, struct qp_sem_timing *t);
/** @} */

#ifdef __cplusplus
}
#endif

#endif /* ROCE_QP_ATTR_H */
