/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Work-queue entry and completion formats shared by the verbs shim and the
 * daemon.
 *
 * These records live in shared-memory rings (queue.h) mapped by two
 * processes, so they hold no pointers: buffers are (address, length, key)
 * triples in the application's address space, address handles are resolved
 * into the WQE. Every record has a fixed size checked by static_assert, and
 * the enum values equal the libibverbs ones (enum ibv_wr_opcode,
 * ibv_send_flags, ibv_wc_status, ibv_wc_opcode, ibv_wc_flags,
 * ibv_event_type) so the shim copies fields without translation; the engine
 * tests assert the equality against <infiniband/verbs.h>.
 *
 * One CQE format (struct cqe) is written by the daemon and read by the shim's
 * poll_cq; it carries every field of struct ibv_wc.
 */
#ifndef QP_WQE_H
#define QP_WQE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WQE_MAX_SGE 16           /**< scatter/gather entries per send or receive WQE */
#define WQE_MAX_INLINE 256       /**< inline bytes per send WQE (shares the SGE space) */

/** What a send work request does: its requester path and its sq_wqe.wr member. */
enum wr_kind {
	WR_KIND_SEND = 0,   /**< payload to the peer's receive WQE (wr.ud on UD) */
	WR_KIND_WRITE,      /**< payload to remote memory (wr.rdma) */
	WR_KIND_READ,       /**< remote memory to the local SGEs (wr.rdma) */
	WR_KIND_ATOMIC,     /**< 8 bytes at remote memory (wr.atomic) */
	WR_KIND_NONE,       /**< not supported */
	WR_KIND_LOCAL,      /**< executed by the engine, nothing on the wire (wr.bind, imm_data) */
	WR_KIND_ATOMIC_WRITE, /**< 8 payload bytes stored at once at remote memory (wr.rdma) */
	WR_KIND_FLUSH,      /**< remote placement of earlier writes (wr.flush), no payload */
};

/** What sq_wqe.imm_data carries. */
enum wr_imm {
	WR_IMM_NONE = 0,
	WR_IMM_DATA,        /**< immediate data (big-endian), delivered with the last packet */
	WR_IMM_INV,         /**< the R_Key the responder invalidates */
};

/** @name QP types a work request is valid on (bit set of 1 << enum ibv_qp_type) @{ */
#define WR_QPT_RC (1u << 2)
#define WR_QPT_UC (1u << 3)
#define WR_QPT_UD (1u << 4)
#define WR_QPT_RAW (1u << 8)   /**< RAW_PACKET: SEND only, the payload is a whole Ethernet frame */
/** @} */

/*
 * Send work request opcodes: the one table the shim (post_send checks,
 * WQE fill) and the engine (fetch_wqe checks, completion opcode, wire
 * opcodes) are driven by.
 *
 * X(symbol, value = ibv_wr_opcode, kind, QP types, completion opcode,
 *   imm_data, wire)
 * kind: enum wr_kind suffix; QP types: WR_QPT_* set (0: not supported);
 * completion: enum wc_opcode suffix; imm_data: enum wr_imm suffix;
 * wire: the RC BTH opcodes (lib/roce ROCE_OP_RC_<name>) of its packets,
 * WR_WIRE(FIRST, MIDDLE, LAST, ONLY) for messages, WR_WIRE_ONLY(op) for
 * one-packet requests, WR_NO_WIRE if not supported; the engine defines these
 * three and adds the transport prefix (UC, UD) itself.
 */
#define WR_OPCODE_LIST(X) \
	X(RDMA_WRITE, 0, WRITE, WR_QPT_RC | WR_QPT_UC, RDMA_WRITE, NONE, \
	  WR_WIRE(RDMA_WRITE_FIRST, RDMA_WRITE_MIDDLE, RDMA_WRITE_LAST, RDMA_WRITE_ONLY)) \
	X(RDMA_WRITE_WITH_IMM, 1, WRITE, WR_QPT_RC | WR_QPT_UC, RDMA_WRITE, DATA, \
	  WR_WIRE(RDMA_WRITE_FIRST, RDMA_WRITE_MIDDLE, RDMA_WRITE_LAST_WITH_IMMEDIATE, \
		  RDMA_WRITE_ONLY_WITH_IMMEDIATE)) \
	X(SEND, 2, SEND, WR_QPT_RC | WR_QPT_UC | WR_QPT_UD | WR_QPT_RAW, SEND, NONE, \
	  WR_WIRE(SEND_FIRST, SEND_MIDDLE, SEND_LAST, SEND_ONLY)) \
	X(SEND_WITH_IMM, 3, SEND, WR_QPT_RC | WR_QPT_UC | WR_QPT_UD, SEND, DATA, \
	  WR_WIRE(SEND_FIRST, SEND_MIDDLE, SEND_LAST_WITH_IMMEDIATE, SEND_ONLY_WITH_IMMEDIATE)) \
	X(RDMA_READ, 4, READ, WR_QPT_RC, RDMA_READ, NONE, WR_WIRE_ONLY(RDMA_READ_REQUEST)) \
	X(ATOMIC_CMP_AND_SWP, 5, ATOMIC, WR_QPT_RC, COMP_SWAP, NONE, WR_WIRE_ONLY(COMPARE_SWAP)) \
	X(ATOMIC_FETCH_AND_ADD, 6, ATOMIC, WR_QPT_RC, FETCH_ADD, NONE, WR_WIRE_ONLY(FETCH_ADD)) \
	X(LOCAL_INV, 7, LOCAL, WR_QPT_RC | WR_QPT_UC, LOCAL_INV, INV, WR_NO_WIRE) \
	X(BIND_MW, 8, LOCAL, WR_QPT_RC | WR_QPT_UC, BIND_MW, NONE, WR_NO_WIRE) \
	X(SEND_WITH_INV, 9, SEND, WR_QPT_RC, SEND, INV, \
	  WR_WIRE(SEND_FIRST, SEND_MIDDLE, SEND_LAST_WITH_INVALIDATE, SEND_ONLY_WITH_INVALIDATE)) \
	X(FLUSH, 14, FLUSH, WR_QPT_RC, FLUSH, NONE, WR_WIRE_ONLY(FLUSH)) \
	X(ATOMIC_WRITE, 15, ATOMIC_WRITE, WR_QPT_RC, ATOMIC_WRITE, NONE, WR_WIRE_ONLY(ATOMIC_WRITE))

/** Send work request opcodes (= enum ibv_wr_opcode). */
enum wr_opcode {
#define WR_OPCODE_ENUM(sym, value, kind, qpts, wc, imm, wire) WR_##sym = (value),
	WR_OPCODE_LIST(WR_OPCODE_ENUM)
#undef WR_OPCODE_ENUM
};

#define WR_OPCODE_SLOTS 16 /**< opcode values the table covers: 0..15 */

/** Send flags (= enum ibv_send_flags). */
enum wr_send_flag {
	WR_FLAG_FENCE = 1u << 0,     /**< wait for prior READ/ATOMIC to complete */
	WR_FLAG_SIGNALED = 1u << 1,  /**< generate a CQE on success */
	WR_FLAG_SOLICITED = 1u << 2, /**< set SE on the last packet */
	WR_FLAG_INLINE = 1u << 3,    /**< payload is in inline_data, not sg_list */
	/**
	 * Not an ibv_send_flags bit: the payload is in the header line
	 * (wr.rdma.head, struct wr_head_data), the only SGE (num_sge 1) or, with
	 * WR_FLAG_INLINE, up to WQE_HEAD_INLINE bytes. Only on the kinds
	 * wr_kind_head_data() names; the engine fails any other use.
	 */
	WR_FLAG_HEAD_DATA = 1u << 31,
};

/** Completion status (= enum ibv_wc_status). */
enum wc_status {
	WC_SUCCESS = 0,
	WC_LOC_LEN_ERR = 1,
	WC_LOC_QP_OP_ERR = 2,
	WC_LOC_EEC_OP_ERR = 3,
	WC_LOC_PROT_ERR = 4,
	WC_WR_FLUSH_ERR = 5,
	WC_MW_BIND_ERR = 6,
	WC_BAD_RESP_ERR = 7,
	WC_LOC_ACCESS_ERR = 8,
	WC_REM_INV_REQ_ERR = 9,
	WC_REM_ACCESS_ERR = 10,
	WC_REM_OP_ERR = 11,
	WC_RETRY_EXC_ERR = 12,
	WC_RNR_RETRY_EXC_ERR = 13,
	WC_LOC_RDD_VIOL_ERR = 14,
	WC_REM_INV_RD_REQ_ERR = 15,
	WC_REM_ABORT_ERR = 16,
	WC_INV_EECN_ERR = 17,
	WC_INV_EEC_STATE_ERR = 18,
	WC_FATAL_ERR = 19,
	WC_RESP_TIMEOUT_ERR = 20,
	WC_GENERAL_ERR = 21,
	WC_TM_ERR = 22,             /**< a tag matching operation failed (DEL of no entry) */
	WC_TM_RNDV_INCOMPLETE = 23, /**< rendezvous left to software */
};

/** Completion opcode (= enum ibv_wc_opcode). */
enum wc_opcode {
	WC_SEND = 0,
	WC_RDMA_WRITE = 1,
	WC_RDMA_READ = 2,
	WC_COMP_SWAP = 3,
	WC_FETCH_ADD = 4,
	WC_BIND_MW = 5,
	WC_LOCAL_INV = 6,
	WC_FLUSH = 8,            /**< IBV_WC_FLUSH of rdma-core 45 (44 does not name it) */
	WC_ATOMIC_WRITE = 9,
	WC_RECV = 1 << 7,
	WC_RECV_RDMA_WITH_IMM = (1 << 7) + 1,
	/* tag matching (IBV_SRQT_TM): an ibv_post_srq_ops operation, or a receive on the SRQ */
	WC_TM_ADD = (1 << 7) + 2,
	WC_TM_DEL = (1 << 7) + 3,
	WC_TM_SYNC = (1 << 7) + 4,
	WC_TM_RECV = (1 << 7) + 5,   /**< a tagged message (matched or unexpected) */
	WC_TM_NO_TAG = (1 << 7) + 6, /**< a TMH NO_TAG message */
};

/** What the table says about one work request opcode. */
struct wr_opcode_desc {
	uint8_t kind;       /**< enum wr_kind */
	uint16_t qp_types;  /**< WR_QPT_* set it is valid on; 0: not supported (or no opcode) */
	uint8_t wc_opcode;  /**< enum wc_opcode of its send completion */
	uint8_t imm;        /**< enum wr_imm */
};

/**
 * @return the table's entry for @p opcode; for a value that is no opcode,
 * one valid on no QP type (kind WR_KIND_NONE, completion WC_SEND)
 */
static inline struct wr_opcode_desc
wr_opcode_desc(uint32_t opcode)
{
	static const struct wr_opcode_desc table[WR_OPCODE_SLOTS] = {
#define WR_OPCODE_DESC(sym, value, kind, qpts, wc, imm, wire) \
	[value] = { WR_KIND_##kind, (qpts), WC_##wc, WR_IMM_##imm },
		WR_OPCODE_LIST(WR_OPCODE_DESC)
#undef WR_OPCODE_DESC
	};
	struct wr_opcode_desc d = { WR_KIND_NONE, 0, WC_SEND, WR_IMM_NONE };

	if (__builtin_expect(opcode < WR_OPCODE_SLOTS, 1)) {
		d = table[opcode];
		if (d.qp_types == 0)
			d.kind = WR_KIND_NONE; /* a gap: completion WC_SEND, no imm */
	}
	return d;
}

/** @return true if the opcode described by @p d is valid on a QP of type @p qp_type (enum ibv_qp_type). */
static inline bool
wr_desc_valid_on(const struct wr_opcode_desc *d, uint32_t qp_type)
{
	return qp_type < 16 && (d->qp_types & (1u << qp_type)) != 0;
}

/** @return true if work request opcode @p opcode is valid on a QP of type @p qp_type (enum ibv_qp_type). */
static inline bool
wr_opcode_valid(uint32_t opcode, uint32_t qp_type)
{
	struct wr_opcode_desc d = wr_opcode_desc(opcode);

	return wr_desc_valid_on(&d, qp_type);
}

/** @return true if work requests of @p kind carry payload out (so may be inline). */
static inline bool
wr_kind_sends_payload(uint8_t kind)
{
	return kind == WR_KIND_SEND || kind == WR_KIND_WRITE || kind == WR_KIND_ATOMIC_WRITE;
}

/**
 * @return true if work requests of @p kind may carry their payload in the
 * header line (WR_FLAG_HEAD_DATA): their wr fields end before wr.rdma.head
 */
static inline bool
wr_kind_head_data(uint8_t kind)
{
	return kind == WR_KIND_SEND || kind == WR_KIND_WRITE || kind == WR_KIND_READ ||
	       kind == WR_KIND_ATOMIC_WRITE;
}

/**
 * @return true if work requests of @p kind use a responder resource at the
 * peer, so count against max_rd_atomic (initiator depth) and wait for a
 * response: READ, ATOMIC and, as in Linux rxe, ATOMIC WRITE and FLUSH
 */
static inline bool
wr_kind_rd_atomic(uint8_t kind)
{
	const uint32_t set = 1u << WR_KIND_READ | 1u << WR_KIND_ATOMIC | 1u << WR_KIND_ATOMIC_WRITE |
			     1u << WR_KIND_FLUSH;

	return kind < 32 && (set >> kind & 1u) != 0;
}

/** Completion flags (= enum ibv_wc_flags). */
enum wc_flag {
	WC_FLAG_GRH = 1u << 0,       /**< a 40-byte GRH heads the receive buffer (UD) */
	WC_FLAG_WITH_IMM = 1u << 1,  /**< imm_data is valid */
	WC_FLAG_IP_CSUM_OK = 1u << 2,
	WC_FLAG_WITH_INV = 1u << 3,  /**< imm_data holds the invalidated R_Key */
	WC_FLAG_TM_SYNC_REQ = 1u << 4,   /**< TM_ADD: the SRQ wants an IBV_OPS_TM_SYNC */
	WC_FLAG_TM_MATCH = 1u << 5,      /**< TM_RECV: the tag matched a posted entry */
	WC_FLAG_TM_DATA_VALID = 1u << 6, /**< TM_RECV: the data is in the entry's buffers */
};

/** Asynchronous event types (= enum ibv_event_type). */
enum async_event {
	ASYNC_CQ_ERR = 0,
	ASYNC_QP_FATAL = 1,
	ASYNC_QP_REQ_ERR = 2,
	ASYNC_QP_ACCESS_ERR = 3,
	ASYNC_COMM_EST = 4,
	ASYNC_SQ_DRAINED = 5,
	ASYNC_SRQ_ERR = 14,
	ASYNC_SRQ_LIMIT_REACHED = 15,
	ASYNC_QP_LAST_WQE_REACHED = 16,
};

/** One scatter/gather element (layout of struct ibv_sge). */
struct wr_sge {
	uint64_t addr;   /**< application virtual address (IOVA of the MR) */
	uint32_t length; /**< bytes */
	uint32_t lkey;   /**< local key of the MR containing [addr, addr+length) */
};

/** Inline bytes a send WQE's header line holds (struct wr_head_data). */
#define WQE_HEAD_INLINE 16u

/**
 * A send WQE's payload in its header line, with WR_FLAG_HEAD_DATA: a small
 * RC/UC/UD work request (one SGE, or a few inline bytes) then fills one
 * line instead of two, as a 1-SGE mlx5 WQE fills one 64-byte building
 * block. The line is the one that crosses from the application's core to
 * the worker's on every post (issue 18; doc/benchmarks.md, session 25).
 */
union wr_head_data {
	struct wr_sge sge;                      /**< the only SGE (num_sge 1) */
	uint8_t inline_data[WQE_HEAD_INLINE];   /**< inline bytes [0, inline_len) */
};

/**
 * A resolved address vector: everything needed to emit a frame to a peer.
 * Used in UD send WQEs (from the AH) and in the RC/UC QP configuration.
 * IPv4 GIDs are IPv4-mapped (::ffff:a.b.c.d).
 */
struct wr_av {
	uint8_t dmac[6];
	uint8_t smac[6];
	uint16_t vlan_tci;       /**< valid when vlan_present */
	uint8_t vlan_present;
	uint8_t ipv6;            /**< 1: IPv6 header, 0: IPv4 */
	uint8_t dgid[16];
	uint8_t sgid[16];
	uint32_t flow_label;     /**< 20 bits */
	uint8_t traffic_class;
	uint8_t hop_limit;
	uint8_t sl;
	uint8_t port_num;
	uint16_t udp_sport;      /**< 0: computed from the QPNs (roce_udp_sport) */
	uint16_t reserved0;
	uint32_t ah_handle;      /**< daemon AH index the fields were resolved from */
};

/**
 * Send WQE (one ibv_send_wr). 384 bytes. The payload is either sg_list
 * [0, num_sge) or, with WR_FLAG_INLINE, inline_data [0, inline_len).
 *
 * Its 64-byte lines in a ring: line 0 the header (up to av,
 * SQ_WQE_HEAD_BYTES), line 1 the AV (SQ_WQE_AV_LINE), lines 2-5 the SGEs or
 * inline bytes (SQ_WQE_SGE_LINE), unless the header holds them
 * (WR_FLAG_HEAD_DATA: wr.rdma.head; then a RC/UC WQE is its first line only). The AV line is part of a UD WQE only (the engine reads its
 * av.ah_handle); on every other QP type the shim does not write it and the
 * engine neither reads nor prefetches it, so a small RC WQE moves two lines
 * from the application's core to the worker's, not three.
 */
struct sq_wqe {
	uint64_t wr_id;
	uint8_t opcode;          /**< enum wr_opcode */
	uint8_t num_sge;         /**< <= WQE_MAX_SGE */
	uint16_t inline_len;     /**< <= WQE_MAX_INLINE, with WR_FLAG_INLINE */
	uint32_t send_flags;     /**< enum wr_send_flag set */
	uint32_t imm_data;       /**< *_WITH_IMM: big-endian as in ibv_send_wr; *_INV, LOCAL_INV: R_Key to invalidate */
	uint32_t xrc_remote_srqn; /**< XRC INI QPs: the target's XRC SRQ (ibv_send_wr qp_type.xrc.remote_srqn) */
	union {
		struct {
			uint64_t remote_addr;
			uint32_t rkey;
			uint32_t reserved;
			union wr_head_data head; /**< SEND, WRITE, READ, ATOMIC WRITE: WR_FLAG_HEAD_DATA */
		} rdma;
		struct {
			uint64_t remote_addr;  /**< 8-byte aligned */
			uint64_t compare_add;  /**< CAS compare value, or FETCH_ADD addend */
			uint64_t swap;         /**< CAS swap value */
			uint32_t rkey;
			uint32_t reserved;
		} atomic;
		struct {
			uint64_t remote_addr;  /**< RANGE: first byte to flush */
			uint32_t rkey;
			uint32_t length;       /**< RANGE: bytes (RETH DMA length) */
			uint8_t type;          /**< placement type: 1 global, 2 persistent (set of) */
			uint8_t level;         /**< selectivity: 0 range, 1 the whole region */
			uint8_t reserved[14];
		} flush;                       /**< FLUSH (IBTA 1.5; ibv_wr_flush of rdma-core 45) */
		struct {
			uint64_t addr;         /**< first byte of the window (MR IOVA) */
			uint64_t length;       /**< 0: unbind (type 1) */
			uint32_t mw_rkey;      /**< the window's current R_Key */
			uint32_t rkey;         /**< its next R_Key: the low byte is taken */
			uint32_t mr_lkey;      /**< the MR the window lies in */
			uint32_t access;       /**< the window's ibv_access_flags */
		} bind;                        /**< BIND_MW (IBA section 10.6.7) */
		struct {
			uint32_t remote_qpn;
			uint32_t remote_qkey;  /**< MSB set: use the QP's own Q_Key */
			uint32_t reserved[2];
			union wr_head_data head; /**< = rdma.head */
		} ud;
	} wr;
	struct wr_av av;         /**< UD: destination, resolved from the AH */
	uint8_t reserved1[8];
	union {
		struct wr_sge sg_list[WQE_MAX_SGE];
		uint8_t inline_data[WQE_MAX_INLINE];
	};
};

/**
 * Receive WQE (one ibv_recv_wr), for RQ and SRQ rings. 272 bytes; a ring's
 * slots hold its first rq_wqe_stride(max_sge) bytes (the SGEs the queue allows).
 */
struct rq_wqe {
	uint64_t wr_id;
	uint32_t num_sge;        /**< <= WQE_MAX_SGE */
	uint32_t reserved;
	struct wr_sge sg_list[WQE_MAX_SGE];
};

/**
 * @return bytes of an RQ or SRQ slot whose receive WQEs hold up to
 * @p max_sge SGEs (0 counts as 1): whole 64-byte lines while that is less
 * than sizeof(struct rq_wqe), else sizeof(struct rq_wqe). A WQE of up to
 * three SGEs is then one line, and a queue of 1-SGE receives takes 64
 * bytes a slot instead of 272. The daemon sets each ring's stride from the
 * queue's max_sge (lib/ctl); the shim checks it, and the engine bounds a
 * WQE's SGEs by it (rq_wqe_max_sge()).
 */
static inline uint32_t
rq_wqe_stride(uint32_t max_sge)
{
	uint32_t n = max_sge == 0 ? 1 : max_sge > WQE_MAX_SGE ? WQE_MAX_SGE : max_sge;
	uint32_t need = (uint32_t)(offsetof(struct rq_wqe, sg_list) + n * sizeof(struct wr_sge));
	uint32_t lines = (need + 63u) & ~63u;

	return lines < sizeof(struct rq_wqe) ? lines : (uint32_t)sizeof(struct rq_wqe);
}

/** @return the SGEs a receive slot of @p stride bytes (rq_wqe_stride()) holds. */
static inline uint32_t
rq_wqe_max_sge(uint32_t stride)
{
	return stride < offsetof(struct rq_wqe, sg_list) ? 0
	       : (uint32_t)((stride - offsetof(struct rq_wqe, sg_list)) / sizeof(struct wr_sge));
}

/** ibv_post_srq_ops operation (= enum ibv_ops_wr_opcode). */
enum tm_op_code {
	TM_OP_ADD = 0,  /**< IBV_WR_TAG_ADD */
	TM_OP_DEL = 1,  /**< IBV_WR_TAG_DEL */
	TM_OP_SYNC = 2, /**< IBV_WR_TAG_SYNC */
};

/** ibv_post_srq_ops flags (= enum ibv_ops_flags). */
enum tm_op_flag {
	TM_OP_SIGNALED = 1u << 0, /**< IBV_OPS_SIGNALED: complete on the SRQ's CQ */
	TM_OP_SYNC_CNT = 1u << 1, /**< IBV_OPS_TM_SYNC: unexpected_cnt reports handled messages */
};

/**
 * One ibv_post_srq_ops operation in the ops ring of a tag matching SRQ
 * (IBV_SRQT_TM): the shim produces, the SRQ's lcore consumes, and trusts
 * nothing in it (opcode, handle, num_sge are checked). handle is the index
 * of the entry (0..max_num_tags-1) the shim chose for an ADD, or names the
 * entry of a DEL. 312 bytes.
 */
struct tm_op_wqe {
	uint64_t wr_id;          /**< the operation's, for its completion */
	uint64_t recv_wr_id;     /**< ADD: the wr_id of the entry's receive completion */
	uint64_t tag, mask;      /**< ADD */
	uint32_t opcode;         /**< enum tm_op_code */
	uint32_t flags;          /**< enum tm_op_flag set */
	uint32_t handle;         /**< ADD, DEL: the entry's index */
	uint32_t unexpected_cnt; /**< with TM_OP_SYNC_CNT */
	uint32_t num_sge;        /**< ADD: <= WQE_MAX_SGE */
	uint32_t reserved;
	struct wr_sge sg_list[WQE_MAX_SGE];
};

/*
 * After the ops ring in a TM SRQ's shared memory: one uint32_t per entry
 * index, written only by the engine, incremented each time the entry at
 * that index leaves the list (matched, deleted, or its ADD failed). The
 * shim counts the ADDs it posted per index; an index is free again when
 * both counts are equal, which is how ibv_post_srq_ops hands out handles
 * synchronously.
 */

/** Completion queue entry: the fields of struct ibv_wc, fixed layout. 64 bytes. */
struct cqe {
	uint64_t wr_id;
	uint32_t status;         /**< enum wc_status */
	uint32_t opcode;         /**< enum wc_opcode */
	uint32_t vendor_err;     /**< engine detail code (enum xport_err in xport.h), 0 on success */
	uint32_t byte_len;
	uint32_t imm_data;       /**< WITH_IMM: big-endian as in ibv_wc; WITH_INV: invalidated R_Key;
				      TM_RECV with TM_MATCH: the TMH's app_ctx, host order */
	uint32_t qp_num;
	uint32_t src_qp;         /**< UD: source QPN from the DETH */
	uint32_t wc_flags;       /**< enum wc_flag set */
	uint16_t pkey_index;
	uint16_t slid;
	uint8_t sl;
	uint8_t dlid_path_bits;
	uint16_t reserved0;
	uint64_t timestamp;      /**< completion time, engine clock (ns) */
	uint64_t tm_tag;         /**< TM_RECV with TM_MATCH: the TMH's tag (ibv_wc_read_tm_info); else 0 */
};

_Static_assert(sizeof(struct wr_sge) == 16, "wr_sge is 16 bytes (ibv_sge)");
_Static_assert(sizeof(struct wr_av) == 64, "wr_av is 64 bytes");
_Static_assert(sizeof(struct sq_wqe) == 384, "sq_wqe is 384 bytes");
/** Bytes of a send WQE's header: what every QP type writes (the line before the AV line). */
#define SQ_WQE_HEAD_BYTES offsetof(struct sq_wqe, av)
/** The send WQE line only UD uses (struct sq_wqe). */
#define SQ_WQE_AV_LINE 1u
_Static_assert(SQ_WQE_HEAD_BYTES <= 64 * SQ_WQE_AV_LINE, "the header ends in the line before the AV's");
/** The first send WQE line of its SGEs or inline bytes (struct sq_wqe). */
#define SQ_WQE_SGE_LINE (SQ_WQE_AV_LINE + 1)
_Static_assert(offsetof(struct sq_wqe, sg_list) == 64 * SQ_WQE_SGE_LINE,
	       "the SGEs start in the line after the AV's");
_Static_assert(offsetof(struct sq_wqe, wr.rdma.head) + sizeof(union wr_head_data) <= SQ_WQE_HEAD_BYTES,
	       "the head data is in the header line");
_Static_assert(offsetof(struct sq_wqe, wr.rdma.head) == offsetof(struct sq_wqe, wr.ud.head),
	       "RC and UD head data lie at one place");
_Static_assert(sizeof(union wr_head_data) == sizeof(struct wr_sge), "the head holds one SGE");
_Static_assert(sizeof(struct rq_wqe) == 272, "rq_wqe is 272 bytes");
_Static_assert(sizeof(struct tm_op_wqe) == 312, "tm_op_wqe is 312 bytes");
_Static_assert(sizeof(struct cqe) == 64, "cqe is 64 bytes");

#ifdef __cplusplus
}
#endif
#endif /* QP_WQE_H */
