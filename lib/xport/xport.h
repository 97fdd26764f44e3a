/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Reliable-transport engine: requester, responder and completer of one QP
 * (RC, UC, UD over RoCEv2), as a pure library driven by its owner.
 *
 * Model
 * - One lcore owns a QP and makes every call on it: no locks, no atomics
 *   except on application memory (ATOMIC operations) and on the shared rings.
 * - The engine never reads a clock and never sends: each entry point takes
 *   `now` (nanoseconds, any monotonic origin) and an output context
 *   (struct xport_out) into which it writes frames to transmit, timer
 *   actions, and events. The caller flushes the context after the call.
 *   Completions go straight into the CQ rings (struct xport_cq): the CQ
 *   full check must happen where the CQE is produced (CQ overflow is a QP
 *   error).
 * - Inputs: the send queue and receive queue rings (queue.h, filled by the
 *   verbs shim), parsed packets (struct roce_pkt from roce_parse()), and
 *   timer expiries of the timers the engine asked for.
 * - Work per call is bounded: at most XPORT_OUT_FRAMES frames, and at most
 *   XPORT_FLUSH_BUDGET flushed WQEs; xport_out.more says the QP wants to be
 *   polled again.
 *
 * Frame output (zero-copy-ish gather): a struct xport_frame is a complete
 * header record (struct roce_pkt, payload pointer NULL) plus up to
 * XPORT_FRAME_MAX_SEG payload segments given as host addresses into the
 * registered memory (or the engine's copy of inline data). The caller
 * either builds a contiguous frame with lib/roce's roce_build_gather()
 * (headers, payload, pad, ICRC), or writes the headers with roce_build_headers() and
 * attaches the segments as external buffers, chaining the ICRC with
 * roce_icrc_update(). Segments are valid until the next call into the engine
 * for the same lcore (memory registration changes only happen between calls).
 * Payload of indirect MRs (memory the daemon cannot map, mr.h) is copied
 * into xport_out.bounce at gather time instead, so a segment always points
 * into this process.
 *
 * Timers: three per QP (enum xport_timer). The engine emits ARM/CANCEL
 * actions for them with an absolute expiry; the caller runs them on its
 * timer wheel (timer_wheel_handle(qp handle, timer id)) and calls
 * xport_qp_timer_expired() when one fires. Stale expiries are harmless.
 * The ACK timer is re-armed lazily: it keeps its first deadline and, when it
 * fires before the real one (last progress + timeout), asks to be re-armed.
 *
 * Memory access: host address = MR host + (IOVA - MR IOVA) via mr_check();
 * every access is checked (key, PD, access flags, range) right before it.
 * Indirect MRs (the fallback for memory the daemon cannot map) are reached
 * with mr_indirect_*() copies at the same places: slower (system calls,
 * counted in MR_FALLBACK_COPIES), same checks; a failed copy is a local
 * protection error (WC_LOC_PROT_ERR) or, at the responder, a remote access
 * error NAK (remote operational error for a SEND's receive buffer). ATOMICs
 * on them are not atomic against the owner's own CPU accesses.
 *
 * Untrusted rings: the application writes the SQ/RQ/SRQ producer indexes,
 * the CQ consumer index and can overwrite every header field. The engine
 * indexes only with the trusted geometry of xport_cfg.sq_size/rq_size,
 * xport_cq.size and xport_srq.size and the fixed record sizes, and clamps
 * every count derived from a shared index to the ring size, so a corrupt
 * ring misbehaves only for its own QP and never makes the engine touch
 * memory outside the ring.
 */
#ifndef QP_XPORT_H
#define QP_XPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ah_table.h"
#include "dcqcn.h"
#include "delay_cc.h"
#include "mr.h"
#include "mw.h"
#include "queue.h"
#include "roce.h"
#include "wqe.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @name Limits @{ */
#define XPORT_OUT_FRAMES 64        /**< frames one xport_out holds (cap per activation) */
#define XPORT_OUT_TIMERS 16        /**< timer actions one xport_out holds */
#define XPORT_OUT_EVENTS 16        /**< events one xport_out holds */
#define XPORT_FRAME_MAX_SEG (WQE_MAX_SGE + 1) /**< payload segments per frame */
#define XPORT_FLUSH_BUDGET 256     /**< WQEs flushed per call in the error state */
#define XPORT_MAX_RD_ATOMIC 128    /**< max of max_rd_atomic / max_dest_rd_atomic (as rxe) */
/** The requester's pacer (rate_limit_kbps): the range the device advertises
 *  as ibv_packet_pacing_caps, 1 Mb/s to 100 Gb/s, in kbps. */
#define XPORT_PACE_MIN_KBPS 1000u
#define XPORT_PACE_MAX_KBPS 100000000u
#define XPORT_ACK_REQ_EVERY 64     /**< default: AckReq at least every N packets */
#define XPORT_MAX_UNACKED 256      /**< default: cap of unacknowledged PSNs (send window) */
#define XPORT_MIN_WINDOW 8         /**< default: floor of the send window after losses */
#define XPORT_UD_GRH_LEN 40        /**< GRH bytes at the head of a UD receive buffer */
#define XPORT_BOUNCE_FRAME 4096    /**< payload a frame may copy from indirect MRs (max PMTU) */
/** @} */

/** QP transport types (= enum ibv_qp_type values). */
enum xport_qp_type {
	XPORT_RC = 2,
	XPORT_UC = 3,
	XPORT_UD = 4,
	/**
	 * RAW_PACKET: whole Ethernet frames, no transport. A send WQE is one
	 * frame (xport_frame.raw), completed once built; received frames come
	 * through xport_qp_raw_rx() (the daemon's flow steering), never as
	 * RoCE packets.
	 */
	XPORT_RAW = 8,
};

/**
 * Engine state, set by the owner from the QP semantics object
 * (xport_qp_set_state()), or moved to ERR by the engine itself.
 */
enum xport_state {
	XPORT_STATE_RESET = 0, /**< drops everything */
	XPORT_STATE_RTR,       /**< responder only */
	XPORT_STATE_RTS,       /**< requester, responder, completer */
	XPORT_STATE_SQD,       /**< as RTS but no new send WQEs are started */
	XPORT_STATE_ERR,       /**< everything posted is flushed */
};

/**
 * A completion queue as the engine sees it. The ring holds struct cqe and
 * may be shared by several QPs of the same lcore.
 */
struct shm_bells;

struct xport_cq {
	struct spsc_ring *ring;   /**< CQE ring: the engine is the producer */
	/**
	 * Slots of @ref ring as its allocator made it (trusted geometry: the
	 * engine indexes with size - 1, never with the shared header's mask);
	 * 0: the header's size, only when the consumer is trusted (tests).
	 */
	uint32_t size;
	uint32_t *arm;            /**< shared word written by req_notify_cq: 1 next, 2 solicited; NULL: no notification (and no fence per publish) */
	/**
	 * Send doorbells of the QPs whose send CQ this is (lib/shm bell.h), in
	 * the CQ's shared control block: read by the daemon's engine loop, not
	 * by lib/xport. NULL: none (their idle QPs' SQs are polled instead).
	 */
	struct shm_bells *bells;
	uint32_t handle;          /**< daemon CQ handle, echoed in events */
	bool overflowed;          /**< a CQE did not fit: the CQ is in error */
	bool staged_sol;          /**< a staged CQE is solicited or in error */
	uint32_t cons_cache;      /**< engine's copy of the ring's consumer index */
	/** CQEs the engine wrote past the ring's producer index, published
	 *  together at the end of the call that staged them (0 between calls) */
	uint32_t staged;
};

/** CQ arm word values (struct xport_cq.arm). */
enum xport_cq_arm {
	XPORT_CQ_ARM_NONE = 0,
	XPORT_CQ_ARM_NEXT = 1,
	XPORT_CQ_ARM_SOLICITED = 2,
};

struct xport_tm;

/** A shared receive queue: all its QPs live on one lcore (single consumer). */
struct xport_srq {
	struct spsc_ring *ring;   /**< struct rq_wqe ring: the engine is the consumer */
	uint32_t size;            /**< trusted slots of @ref ring; 0: the header's (see xport_cq) */
	uint32_t stride;          /**< bytes per slot (wqe.h rq_wqe_stride()); 0: sizeof(struct rq_wqe) */
	uint32_t handle;          /**< daemon SRQ handle, echoed in events */
	uint32_t limit;           /**< srq_limit: event when the count falls below it */
	bool limit_armed;         /**< set by modify_srq; cleared when the event fires */
	uint32_t prod_seen;       /**< the engine's: @ref ring's producer index last read (0 at creation) */
	/**
	 * @name XRC SRQs (IBTA 9.8.2): reached by number from the XRCETH of a
	 * request to an XRC TGT QP of the same XRC domain, on the lcore that
	 * runs the domain's TGT QPs.
	 * @{ */
	struct xport_cq *cq;      /**< receive completions of the SRQ */
	uint32_t pd;              /**< PD of its receive buffers and of the R_Keys used through it */
	uint32_t xrcd;            /**< XRC domain; 0: not an XRC SRQ */
	/**
	 * @ref handle while usable by TGT QPs, 0 otherwise; written by the
	 * owner lcore (store-release), read with load-acquire by any TGT QP
	 * that names the SRQ before it reads anything else of it.
	 */
	uint32_t xrc_live;
	/** @} */
	/**
	 * @name Tag matching SRQs (IBV_SRQT_TM, xport_tm.h): @ref cq gets the
	 * completions of the ibv_post_srq_ops operations the owner lcore takes
	 * from @ref tm_ops (xport_srq_tm_poll()).
	 * @{ */
	struct xport_tm *tm;      /**< its matching list; NULL: not a TM SRQ */
	struct spsc_ring *tm_ops; /**< struct tm_op_wqe ring: the engine is the consumer */
	uint32_t tm_ops_size;     /**< trusted slots of @ref tm_ops (a power of two) */
	uint32_t tm_max_sge;      /**< an ADD has at most this many SGEs (the SRQ's max_sge) */
	uint64_t tm_bad_ops;      /**< operations dropped as malformed (unknown opcode) */
	/** @} */
};


/** XRC role of a QP (cfg.type is XPORT_RC for both: XRC is RC with an XRCETH). */
enum xport_xrc {
	XPORT_XRC_NONE = 0,
	XPORT_XRC_INI,            /**< IBV_QPT_XRC_SEND: requester only, no receive side */
	XPORT_XRC_TGT,            /**< IBV_QPT_XRC_RECV: responder only, receives into XRC SRQs */
};

/**
 * XRC TGT QPs: the SRQ numbered @p srqn (from the XRCETH), or NULL if
 * there is none. The caller checks xrc_live and the domain.
 */
typedef struct xport_srq *(*xport_xrc_srq_fn)(void *ctx, uint32_t srqn);

/** ECN codepoint of RoCE frames (RFC 3168 section 5: the two low bits of the traffic class). */
enum xport_ecn {
	XPORT_ECN_NOT_ECT = 0, /**< not ECN-capable (what Linux rxe sends) */
	XPORT_ECN_ECT1 = 1,
	XPORT_ECN_ECT0 = 2,    /**< what ConnectX sends with ECN enabled */
};

/** Reaction point algorithm of a port. */
enum xport_cc_algo {
	XPORT_CC_NONE = 0,     /**< CNPs are counted and ignored */
	XPORT_CC_DCQCN = 1,    /**< DCQCN (dcqcn.h) paces the QP */
	XPORT_CC_DELAY = 2,    /**< the RTT of ACKs against a target (delay_cc.h) paces the QP; CNPs ignored */
};

/**
 * Congestion control and QoS of a port, shared by its QPs (xport_cfg.cc):
 * what RoCE NICs configure per port (mlx5: ECN enable per priority, the
 * notification and reaction point parameters, CNP DSCP and priority).
 */
struct xport_cc {
	uint8_t ecn;              /**< enum xport_ecn on every frame but CNPs: replaces the AV's ECN bits */
	uint8_t algo;             /**< enum xport_cc_algo (reaction point) */
	bool np;                  /**< notification point: answer CE-marked packets with CNPs */
	uint8_t dscp;             /**< DSCP of frames whose AV traffic class carries none (0) */
	uint8_t pcp;              /**< 802.1p priority of tagged frames whose AV tag has none */
	uint8_t cnp_dscp;         /**< DSCP of CNPs (their ECN bits: not-ECT) */
	uint8_t cnp_pcp;          /**< 802.1p priority of tagged CNPs */
	uint64_t cnp_interval_ns; /**< at most one CNP per QP per interval (DCQCN's N) */
	/**
	 * Pace at dcqcn.line_kbps while DCQCN does not limit the QP (as a NIC
	 * never exceeds its link): a window is not sent as one burst faster
	 * than the link. Off: unpaced until the first CNP (the software path
	 * is slower than the link anyway, and pacing costs a timer per hold).
	 */
	bool pace_line;
	/**
	 * Burst size of the pacer in bytes (payload + XPORT_PACE_OVERHEAD per
	 * frame): a late activation sends at most this much ahead of the rate,
	 * as a NIC rate limiter's max_burst_sz. 0: up to 10 ms of the rate
	 * (the pacer without congestion control).
	 */
	uint32_t pace_burst;
	struct dcqcn_params dcqcn;
	struct delay_params delay;  /**< cc = delay (RC QPs: the RTT needs ACKs) */
};

/**
 * Configuration of one QP, filled by the daemon from the QP semantics
 * object (ibv_qp_attr and create attributes). Ring and table pointers must
 * outlive the engine QP.
 */
struct xport_cfg {
	uint32_t handle;          /**< daemon QP index (timer handles, events) */
	uint8_t type;             /**< enum xport_qp_type */
	uint8_t xrc;              /**< enum xport_xrc (type is XPORT_RC then) */
	uint32_t xrcd;            /**< XRC TGT: its domain, matched against the SRQ's */
	xport_xrc_srq_fn xrc_srq; /**< XRC TGT: SRQ lookup by number */
	void *xrc_ctx;            /**< its context */
	uint32_t qpn;
	uint32_t pd;              /**< protection domain handle (MR checks) */
	uint16_t pkey;            /**< P_Key sent, and accepted (low 15 bits) */
	uint32_t qkey;            /**< UD Q_Key */
	/**
	 * RAW_PACKET: the longest frame a send may be, Ethernet header
	 * included (the port's MTU + 14, at most XPORT_BOUNCE_FRAME); a longer
	 * or shorter-than-Ethernet-header send completes with WC_LOC_LEN_ERR.
	 */
	uint32_t raw_frame_max;
	/* connected QPs (RC/UC) */
	uint32_t dest_qpn;
	struct wr_av av;          /**< path to the peer (its GID filters received packets) */
	uint8_t path_mtu;         /**< IB MTU enum 1..5 (256..4096) */
	uint32_t sq_psn;          /**< first PSN sent */
	uint32_t rq_psn;          /**< first PSN expected */
	uint8_t timeout;          /**< local ACK timeout code, 0 = infinite (IBTA 9.7.6.1.3) */
	uint8_t retry_cnt;        /**< 0..7 transport retries */
	uint8_t rnr_retry;        /**< 0..7, 7 = infinite */
	uint8_t min_rnr_timer;    /**< RNR timer code sent in RNR NAKs */
	uint8_t max_rd_atomic;    /**< outstanding READ/ATOMIC as requester, 1..XPORT_MAX_RD_ATOMIC */
	/**
	 * Responder resources (RC), 1..XPORT_MAX_RD_ATOMIC: the QP keeps this
	 * many READ/ATOMIC requests for replay; their memory is sized to it.
	 */
	uint8_t max_dest_rd_atomic;
	uint32_t access_flags;    /**< qp_access_flags (enum mr_access REMOTE_*) */
	bool sq_sig_all;          /**< every send WQE is signaled */
	uint32_t rate_limit_kbps; /**< 0 = unlimited (ibv_qp_attr.rate_limit) */
	uint32_t ack_req_every;   /**< AckReq every N packets of a message; 0 = XPORT_ACK_REQ_EVERY */
	/**
	 * Cap of the send window (RC): request PSNs sent and not acknowledged,
	 * a READ counting its response packets; 0 = XPORT_MAX_UNACKED.
	 */
	uint32_t max_unacked;
	/**
	 * Floor of the send window: every go-back-N (ACK timeout, sequence
	 * NAK, implied NAK) halves the window down to this; acknowledged PSNs
	 * grow it by one per window's worth (one per round trip) back to
	 * max_unacked; 0 = XPORT_MIN_WINDOW;
	 * >= max_unacked: no back-off (fixed window).
	 */
	uint32_t min_window;
	/* queues */
	struct spsc_ring *sq;     /**< struct sq_wqe ring (engine = consumer) */
	struct spsc_ring *rq;     /**< struct rq_wqe ring, or NULL with an SRQ (and for XRC) */
	/**
	 * Trusted slots of the SQ and RQ rings (the geometry the daemon
	 * allocated; the shared headers may be overwritten by the application).
	 * 0: the header's size, only when the producer is trusted (tests).
	 */
	uint32_t sq_size;
	uint32_t rq_size;
	/** Bytes per RQ slot (lib/shm wqe.h rq_wqe_stride()); 0: sizeof(struct rq_wqe). */
	uint32_t rq_stride;
	/**
	 * SGEs a send WQE of this QP may carry, or 16-byte units of its inline
	 * data if more (ibv_qp_cap max_send_sge / max_inline_data as created):
	 * the engine's copy of each send WQE holds that many and no more (a WQE
	 * beyond it completes with LOC_LEN_ERR). 0 or > WQE_MAX_SGE: WQE_MAX_SGE.
	 * A QP with an SRQ always has WQE_MAX_SGE (tag matching rendezvous
	 * READs carry a receive entry's SGEs). Fixed at create.
	 */
	uint32_t sq_max_sge;
	struct xport_srq *srq;    /**< or NULL */
	struct xport_cq *send_cq;
	struct xport_cq *recv_cq;
	struct mr_table *mrs;
	/** Memory windows of every lcore (mw.h); NULL: window keys fail
	 *  like unknown keys, BIND_MW and LOCAL_INV of a window fail. */
	struct mw_table *mws;
	/** Congestion control and QoS of the QP's port; NULL: none (no ECN
	 *  marking, no CNPs sent, CNPs ignored, the AV's traffic class as is). */
	const struct xport_cc *cc;
	/** UD: the daemon's address handles; a send WQE's AV comes from here
	 *  (by av.ah_handle, checked against pd), never from the ring. NULL: a
	 *  UD send fails (XPORT_ERR_LOC_AH). */
	const struct ah_table *ahs;
};

/*
 * Per-QP counters: one list, expanded into the enum and the name table.
 * X(symbol, description)
 */
#define XPORT_COUNTER_LIST(X) \
	X(TX_PKTS, "packets sent (all roles)") \
	X(TX_BYTES, "payload bytes sent") \
	X(RX_PKTS, "packets accepted") \
	X(RX_BYTES, "payload bytes accepted") \
	X(RETRANSMIT_PKTS, "request packets sent again (go-back-N)") \
	X(RETRY_TIMEOUT, "local ACK timeouts") \
	X(RETRY_SEQ_NAK, "go-back-N after a PSN sequence NAK") \
	X(RETRY_IMPLIED_NAK, "go-back-N after an implied NAK (skipped READ/ATOMIC response)") \
	X(RNR_RETRY, "resends after an RNR NAK's wait (one per RNR back-off)") \
	X(WINDOW_SHRINK, "send window halved by a go-back-N (loss back-off)") \
	X(ACK_TX, "ACKs sent") \
	X(ACK_RX, "ACKs received") \
	X(NAK_SEQ_TX, "PSN sequence error NAKs sent") \
	X(NAK_INV_REQ_TX, "invalid request NAKs sent") \
	X(NAK_ACCESS_TX, "remote access error NAKs sent") \
	X(NAK_OP_TX, "remote operational error NAKs sent") \
	X(RNR_NAK_TX, "RNR NAKs sent") \
	X(NAK_SEQ_RX, "PSN sequence error NAKs received") \
	X(NAK_INV_REQ_RX, "invalid request NAKs received") \
	X(NAK_ACCESS_RX, "remote access error NAKs received") \
	X(NAK_OP_RX, "remote operational error NAKs received") \
	X(NAK_INV_RD_REQ_RX, "invalid RD request NAKs received") \
	X(RNR_NAK_RX, "RNR NAKs received") \
	X(DUP_REQ, "duplicate requests received") \
	X(DUP_READ_REPLAY, "READ responses replayed from responder resources") \
	X(DUP_ATOMIC_REPLAY, "ATOMIC results replayed from responder resources") \
	X(PACE_WAIT, "times the rate limiter held the requester") \
	X(DROP_STATE, "dropped: QP state does not accept the packet") \
	X(DROP_DEST_QP, "dropped: destination QPN is not this QP") \
	X(DROP_TRANSPORT, "dropped: opcode of another transport") \
	X(DROP_XRC_ROLE, "dropped: a request to an XRC INI QP or a response to an XRC TGT QP") \
	X(NAK_XRC_SRQ_TX, "XRC: invalid request NAKs for an SRQ missing or of another domain") \
	X(DROP_SOURCE, "dropped: source GID is not the connected peer") \
	X(DROP_PKEY, "dropped: P_Key mismatch") \
	X(DROP_QKEY, "dropped: Q_Key mismatch (UD)") \
	X(DROP_PSN_OOS, "dropped: out of sequence after a NAK was sent") \
	X(DROP_DUP_UNKNOWN, "dropped: duplicate READ/ATOMIC not in the resources") \
	X(DROP_STALE_REPLAY, "replays dropped: a new READ/ATOMIC reused their resource") \
	X(DROP_STALE_RESP, "dropped: stale or unexpected response") \
	X(DROP_BAD_RESP, "dropped: response inconsistent with the request") \
	X(DROP_UC_MSG, "dropped: UC packet of a broken message") \
	X(DROP_NO_RECV, "dropped: UC/UD SEND without a receive WQE") \
	X(DROP_UD_LEN, "dropped: UD SEND larger than the receive WQE") \
	X(DROP_RAW_LEN, "dropped: RAW_PACKET frame larger than the receive WQE") \
	X(CQ_OVERFLOW, "CQEs that did not fit their CQ") \
	X(MR_FALLBACK_COPIES, "copies to/from memory the daemon cannot map (process_vm_readv/writev)") \
	X(MR_FALLBACK_ERRORS, "fallback copies that failed (owner gone, pages unmapped or read-only)") \
	X(CE_RX, "packets received with ECN Congestion Experienced (CE)") \
	X(CNP_TX, "CNPs sent (notification point, at most one per cnp_interval)") \
	X(CNP_RX, "CNPs received and acted on (reaction point)") \
	X(CNP_MALFORMED, "CNPs dropped as malformed (BECN clear)") \
	X(CNP_IGNORED, "CNPs ignored: cc = none, QP not sending (state), or from another peer/P_Key") \
	X(CC_RATE_CUTS, "congestion control rate cuts (DCQCN or delay)") \
	X(CC_RATE_KBPS, "congestion control current rate in kb/s (a gauge: 0 = not limited, line rate)") \
	X(CC_RTT_SAMPLES, "RTT samples taken for cc = delay (AckReq packet to its ACK)") \
	X(CC_RTT_US, "last RTT sample in us (a gauge, cc = delay)") \
	X(INV_REFUSED, "SEND with Invalidate of a key that may not be invalidated remotely") \
	X(ATOMIC_HOST_MISALIGNED, "ATOMICs whose host address is not 8-byte aligned") \
	X(ATOMIC_WRITE_RX, "RDMA ATOMIC WRITEs executed (IBTA 1.5)") \
	X(FLUSH_RX, "RDMA FLUSHes executed (IBTA 1.5)") \
	X(TM_BAD_TMH, "SENDs to a tag matching SRQ without a valid TMH (invalid request NAK)") \
	X(TM_RNDV, "tag matching rendezvous matched: the QP's own READ of the sender's buffer") \
	X(UD_AH_INVALID, "UD sends naming an address handle unknown, destroyed or of another PD")

/** Counter indices. */
enum xport_counter {
#define XPORT_COUNTER_ENUM(sym, desc) XPORT_CNT_##sym,
	XPORT_COUNTER_LIST(XPORT_COUNTER_ENUM)
#undef XPORT_COUNTER_ENUM
	XPORT_CNT_COUNT
};

/** Engine detail codes in cqe.vendor_err and error events. */
#define XPORT_ERR_LIST(X) \
	X(NONE, "no error") \
	X(LOC_KEY, "local key check failed") \
	X(LOC_LEN, "message length invalid for the transport") \
	X(LOC_OPCODE, "work request opcode not supported on this QP") \
	X(REM_NAK, "the responder answered with a NAK") \
	X(RETRY_EXC, "transport retries exhausted") \
	X(RNR_EXC, "RNR retries exhausted") \
	X(BAD_RESP, "malformed response") \
	X(RESP_CLASS_C, "responder detected a class C error (invalid request, access, length)") \
	X(RESP_OP, "responder could not place data (local protection)") \
	X(CQ_OVERFLOW, "completion queue overflow") \
	X(FLUSHED, "flushed in the error state") \
	X(MODIFY, "moved to error by modify_qp") \
	X(LOC_AH, "UD address handle unknown, destroyed or of another PD") \
	X(LOC_BIND, "memory window bind refused (window, MR, PD or access rules)") \
	X(LOC_INV, "local invalidate refused (unknown key, type 1 window, other PD or QP)")

enum xport_err {
#define XPORT_ERR_ENUM(sym, desc) XPORT_ERR_##sym,
	XPORT_ERR_LIST(XPORT_ERR_ENUM)
#undef XPORT_ERR_ENUM
	XPORT_ERR_COUNT
};

/** The two timers of a QP. */
enum xport_timer {
	XPORT_TIMER_RETRY = 0, /**< local ACK timeout, or RNR back-off wait */
	XPORT_TIMER_PACE = 1,  /**< rate limiter: requester may send again */
	XPORT_TIMER_CC = 2,    /**< congestion control: DCQCN alpha decay / rate increase */
	XPORT_TIMER_COUNT
};

/** Timer action for the caller's wheel. */
struct xport_timer_action {
	uint32_t qp_handle;
	uint8_t timer;         /**< enum xport_timer */
	uint8_t arm;           /**< 1: arm (or re-arm) at expires_ns; 0: cancel */
	uint64_t expires_ns;
};

/** Kinds of event. */
enum xport_event_type {
	XPORT_EV_ASYNC = 1,    /**< an ibv async event: code = enum async_event, on object `handle` */
	XPORT_EV_CQ_NOTIFY,    /**< armed CQ `handle` got a CQE: signal its completion channel */
	XPORT_EV_QP_ERROR,     /**< the engine moved QP `handle` to ERR: code = enum xport_err */
};

/** One event. */
struct xport_event {
	uint8_t type;          /**< enum xport_event_type */
	uint8_t code;          /**< enum async_event or enum xport_err */
	uint16_t reserved;
	uint32_t handle;       /**< QP, CQ or SRQ handle, per type/code */
};

/**
 * A frame to transmit: full header record + payload gather list, written
 * into a buffer by lib/roce's roce_build_gather(&f->pkt, f->seg, f->nseg, ...).
 */
struct xport_frame {
	struct roce_pkt pkt;   /**< every header field; pkt.payload is NULL, payload_len/pad set */
	/**
	 * RAW_PACKET: seg[] is the whole frame from its Ethernet header on, to
	 * be sent as it is (pkt.payload_len is its length; no headers, no
	 * ICRC): copy the segments, do not call roce_build_gather().
	 */
	bool raw;
	/**
	 * seg[0] (nseg 1) lies in an MR this process maps, and its bytes are the
	 * message's until the peer has taken the frame: an RC request (its WQE
	 * completes on the peer's acknowledgement) or a READ response. The
	 * daemon's loopback may then hand the receiver that pointer instead of
	 * a copy (doc/architecture.md section 6).
	 */
	bool seg_mr;
	uint32_t nseg;
	struct roce_seg seg[XPORT_FRAME_MAX_SEG]; /**< host addresses; lengths sum to pkt.payload_len */
};

/** Output context of one or more engine calls; the caller flushes and resets it. */
struct xport_out {
	uint32_t nframes;
	uint32_t ntimers;
	uint32_t nevents;
	bool more;             /**< some QP stopped early (budget/space): poll it again */
	struct xport_timer_action timers[XPORT_OUT_TIMERS];
	struct xport_event events[XPORT_OUT_EVENTS];
	struct xport_frame frames[XPORT_OUT_FRAMES];
	/**
	 * Payload copied out of indirect MRs (mr.h MR_INDIRECT: memory the
	 * daemon cannot map), frames[i]'s in bounce[i]; their seg[].addr point
	 * here. Engine-owned, valid as the frames are.
	 */
	uint8_t bounce[XPORT_OUT_FRAMES][XPORT_BOUNCE_FRAME];
};

/**
 * A TM SRQ's owner lcore: apply up to @p budget operations of its ops ring
 * (IBV_OPS_TM_SYNC counts first, then ADD at the index the shim chose, DEL,
 * SYNC), each completed on @ref xport_srq.cq (WC_TM_ADD/DEL/SYNC) when
 * signaled or failed (WC_TM_ERR). Nothing read from the ring is trusted:
 * the count is clamped to tm_ops_size, the handle bounded by the list, the
 * SGE count by tm_max_sge, an unknown opcode is dropped and counted in
 * tm_bad_ops. A full CQ is an overrun: ASYNC_CQ_ERR once, later
 * completions are lost (the operations still apply).
 * @return operations taken
 */
uint32_t xport_srq_tm_poll(struct xport_srq *srq, uint32_t budget, struct xport_out *out);

/** Empty @p out (after flushing it). */
static inline void
xport_out_reset(struct xport_out *out)
{
	out->nframes = 0;
	out->ntimers = 0;
	out->nevents = 0;
	out->more = false;
}

struct xport_qp;

/** @name Lifetime (control path) @{ */
/**
 * @return bytes of engine memory a QP with @p cfg needs (QP object, shadow
 * send queue, cfg->max_dest_rd_atomic responder resources), or 0 if @p cfg
 * is invalid.
 */
size_t xport_qp_mem_size(const struct xport_cfg *cfg);

/**
 * Initialise a QP in @p mem (xport_qp_mem_size() bytes, 64-byte aligned) in
 * state RESET. Validates @p cfg (type, MTU, rings, CQs, rd_atomic limits).
 * Call xport_qp_fini() before freeing @p mem.
 * @return the QP, or NULL if @p cfg is invalid
 */
struct xport_qp *xport_qp_init(void *mem, const struct xport_cfg *cfg);

/** As xport_qp_init() in memory from aligned_alloc(); free with xport_qp_destroy(). */
struct xport_qp *xport_qp_create(const struct xport_cfg *cfg);
void xport_qp_destroy(struct xport_qp *qp);

/**
 * Release what the engine allocated for a QP of xport_qp_init() beyond its
 * memory (responder resources grown by xport_qp_modify()); the caller then
 * frees that memory. xport_qp_destroy() does both.
 */
void xport_qp_fini(struct xport_qp *qp);

/**
 * Apply a changed configuration (modify_qp): timeout, retry counts,
 * min_rnr_timer, rd_atomic limits, access flags, P_Key/Q_Key, AV, path MTU,
 * rate limit, AckReq period and window. Rings, CQs, SRQ, MR table, type,
 * QPN and handle cannot change. sq_psn/rq_psn apply in RESET (they
 * are taken when the QP leaves RESET), and sq_psn also in RTR (the
 * requester has not started: RTR -> RTS brings it); otherwise a live QP
 * ignores them. A
 * path MTU change applies to packets built afterwards: change it only
 * where IBA allows it (INIT->RTR, SQD).
 * Responder resources are memory sized to max_dest_rd_atomic: a larger value
 * than the QP had so far allocates here (the only allocation after create,
 * never on the packet path); a live QP keeps its resources (the newest ones
 * when the value shrinks).
 * @return 0, -EINVAL (invalid or immutable field changed), or -ENOMEM (the
 *         resources could not be allocated; the QP is unchanged)
 */
int xport_qp_modify(struct xport_qp *qp, const struct xport_cfg *cfg);

/**
 * Move the engine to @p state (the semantics object validated the
 * transition). ERR flushes everything posted (IBV_WC_WR_FLUSH_ERR), in
 * bounded steps continued by xport_qp_poll(). RESET removes posted WRs
 * without completions, cancels the timers and forgets all progress; leaving
 * RESET starts from cfg.sq_psn / cfg.rq_psn.
 */
void xport_qp_set_state(struct xport_qp *qp, enum xport_state state, uint64_t now,
			struct xport_out *out);

/** @return the engine state. */
enum xport_state xport_qp_state(const struct xport_qp *qp);
/** @} */

/** @name Data path (owner lcore) @{ */
/**
 * Process received packets addressed to this QP (the caller dispatched by
 * BTH DestQP). Requests go to the responder, responses to the completer.
 * ACKs owed are coalesced: one per call.
 */
void xport_qp_rx_burst(struct xport_qp *qp, const struct roce_pkt *const pkts[],
		       uint32_t n, uint64_t now, struct xport_out *out);

/** One packet: xport_qp_rx_burst() with n = 1. */
void xport_qp_rx(struct xport_qp *qp, const struct roce_pkt *pkt, uint64_t now,
		 struct xport_out *out);

/**
 * Run the requester on newly posted WQEs, continue pending READ responses
 * and flushes. Sets out->more if work remains.
 */
void xport_qp_poll(struct xport_qp *qp, uint64_t now, struct xport_out *out);

/**
 * Whether xport_qp_poll() would do nothing now and keeps doing nothing
 * until the application posts to the SQ (moves the SQ producer index, the
 * doorbell of ipc_shm.h), a packet arrives (xport_qp_rx_burst()), a timer
 * fires (xport_qp_timer_expired()) or the state changes: nothing posted and
 * unsent, no ACK or READ response owed, RTS or RTR. A scheduler polls only
 * the QPs for which this is false, and after any of those four events.
 * Reads the SQ producer index (shared memory) and a few engine fields,
 * unless the requester's last run (xport_qp_poll(), or a received ACK's)
 * read it and found nothing new: that answer stands, so a post since then
 * is seen by the next poll. Call it right after a poll, as the daemon's
 * scheduler does; it lets a QP go idle only after many idle polls in a row.
 */
bool xport_qp_idle(const struct xport_qp *qp);

/**
 * The SQ index up to which the engine took WQEs. While xport_qp_idle() holds,
 * it equals the SQ ring's producer index, and a post moves that index away
 * from it: a scheduler keeps this value and compares the producer index
 * with it (the doorbell) instead of calling xport_qp_idle().
 */
uint32_t xport_qp_sq_fetched(const struct xport_qp *qp);

/**
 * RAW_PACKET QP: a received frame the daemon's flow rules steered to it
 * (@p len bytes from the Ethernet header on, as a NIC delivers it). Taken
 * in RTR, RTS and SQD (else dropped, DROP_STATE): the next receive WQE gets
 * the whole frame and an IBV_WC_RECV completion with byte_len @p len. No
 * receive WQE: dropped (DROP_NO_RECV); a frame larger than the WQE:
 * dropped, the WQE kept (DROP_RAW_LEN; as UD, IBA class D, and as rxe);
 * a receive buffer that cannot be written: the WQE completes with
 * WC_LOC_PROT_ERR.
 */
void xport_qp_raw_rx(struct xport_qp *qp, const uint8_t *frame, uint32_t len, uint64_t now,
		     struct xport_out *out);

/**
 * A RAW_PACKET QP's frame (xport_frame.raw): its segments, the whole frame,
 * copied as they are into @p buf (@p room bytes).
 * @return its length, 0 when it does not fit
 */
size_t xport_frame_raw_gather(const struct xport_frame *f, uint8_t *buf, size_t room);

/** Timer @p timer of this QP fired at @p now. */
void xport_qp_timer_expired(struct xport_qp *qp, enum xport_timer timer, uint64_t now,
			    struct xport_out *out);

/**
 * The owner could not deliver CQEs (kept for a daemon-side CQ): treat as
 * CQ overflow: IBV_EVENT_CQ_ERR on @p cq, QP to ERR.
 */
void xport_qp_cq_error(struct xport_qp *qp, struct xport_cq *cq, uint64_t now,
		       struct xport_out *out);
/** @} */

/** @name Introspection @{ */
/** @return the counter array (XPORT_CNT_COUNT entries). */
const uint64_t *xport_qp_counters(const struct xport_qp *qp);
/**
 * @return the counters written since the previous call (bit i: counter i),
 * which it forgets: a reader that adds up changes reads only these.
 */
uint64_t xport_qp_counters_dirty(struct xport_qp *qp);
/** @return the symbol of counter @p c ("TX_PKTS"). */
const char *xport_counter_name(enum xport_counter c);
/** @return the description of counter @p c. */
const char *xport_counter_desc(enum xport_counter c);
/** @return the symbol of detail code @p e. */
const char *xport_err_name(enum xport_err e);
/** @return the next PSN the requester will send. */
uint32_t xport_qp_sq_psn(const struct xport_qp *qp);
/** @return the send window now (PSNs, RC): between min_window and max_unacked. */
uint32_t xport_qp_send_window(const struct xport_qp *qp);
/** @return the PSN the responder expects next. */
uint32_t xport_qp_rq_psn(const struct xport_qp *qp);
/** @return the QP's DCQCN reaction point state (tests, telemetry). */
const struct dcqcn_rp *xport_qp_dcqcn(const struct xport_qp *qp);
/** @return the QP's delay-based reaction point state (cc = delay; tests, telemetry). */
const struct delay_rp *xport_qp_delay(const struct xport_qp *qp);
/** @} */

#ifdef __cplusplus
}
#endif
#endif /* QP_XPORT_H */
