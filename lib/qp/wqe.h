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

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WQE_MAX_SGE 16           /**< scatter/gather entries per send or receive WQE */
#define WQE_MAX_INLINE 256       /**< inline bytes per send WQE (shares the SGE space) */

/** Send work request opcodes (= enum ibv_wr_opcode). */
enum wr_opcode {
	WR_RDMA_WRITE = 0,
	WR_RDMA_WRITE_WITH_IMM = 1,
	WR_SEND = 2,
	WR_SEND_WITH_IMM = 3,
	WR_RDMA_READ = 4,
	WR_ATOMIC_CMP_AND_SWP = 5,
	WR_ATOMIC_FETCH_AND_ADD = 6,
	WR_LOCAL_INV = 7,
	WR_BIND_MW = 8,
	WR_SEND_WITH_INV = 9,
};

/** Send flags (= enum ibv_send_flags). */
enum wr_send_flag {
	WR_FLAG_FENCE = 1u << 0,     /**< wait for prior READ/ATOMIC to complete */
	WR_FLAG_SIGNALED = 1u << 1,  /**< generate a CQE on success */
	WR_FLAG_SOLICITED = 1u << 2, /**< set SE on the last packet */
	WR_FLAG_INLINE = 1u << 3,    /**< payload is in inline_data, not sg_list */
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
	WC_RECV = 1 << 7,
	WC_RECV_RDMA_WITH_IMM = (1 << 7) + 1,
};

/** Completion flags (= enum ibv_wc_flags). */
enum wc_flag {
	WC_FLAG_GRH = 1u << 0,       /**< a 40-byte GRH heads the receive buffer (UD) */
	WC_FLAG_WITH_IMM = 1u << 1,  /**< imm_data is valid */
	WC_FLAG_IP_CSUM_OK = 1u << 2,
	WC_FLAG_WITH_INV = 1u << 3,  /**< imm_data holds the invalidated R_Key */
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
 */
struct sq_wqe {
	uint64_t wr_id;
	uint8_t opcode;          /**< enum wr_opcode */
	uint8_t num_sge;         /**< <= WQE_MAX_SGE */
	uint16_t inline_len;     /**< <= WQE_MAX_INLINE, with WR_FLAG_INLINE */
	uint32_t send_flags;     /**< enum wr_send_flag set */
	uint32_t imm_data;       /**< *_WITH_IMM: big-endian as in ibv_send_wr; *_INV: R_Key to invalidate */
	uint32_t reserved0;
	union {
		struct {
			uint64_t remote_addr;
			uint32_t rkey;
			uint32_t reserved;
			uint64_t reserved2[2];
		} rdma;
		struct {
			uint64_t remote_addr;  /**< 8-byte aligned */
			uint64_t compare_add;  /**< CAS compare value, or FETCH_ADD addend */
			uint64_t swap;         /**< CAS swap value */
			uint32_t rkey;
			uint32_t reserved;
		} atomic;
		struct {
			uint32_t remote_qpn;
			uint32_t remote_qkey;  /**< MSB set: use the QP's own Q_Key */
			uint32_t reserved[6];
		} ud;
	} wr;
	struct wr_av av;         /**< UD: destination, resolved from the AH */
	uint8_t reserved1[8];
	union {
		struct wr_sge sg_list[WQE_MAX_SGE];
		uint8_t inline_data[WQE_MAX_INLINE];
	};
};

/** Receive WQE (one ibv_recv_wr), for RQ and SRQ rings. 272 bytes. */
struct rq_wqe {
	uint64_t wr_id;
	uint32_t num_sge;        /**< <= WQE_MAX_SGE */
	uint32_t reserved;
	struct wr_sge sg_list[WQE_MAX_SGE];
};

/** Completion queue entry: the fields of struct ibv_wc, fixed layout. 64 bytes. */
struct cqe {
	uint64_t wr_id;
	uint32_t status;         /**< enum wc_status */
	uint32_t opcode;         /**< enum wc_opcode */
	uint32_t vendor_err;     /**< engine detail code (enum xport_err in xport.h), 0 on success */
	uint32_t byte_len;
	uint32_t imm_data;       /**< WITH_IMM: big-endian as in ibv_wc; WITH_INV: invalidated R_Key */
	uint32_t qp_num;
	uint32_t src_qp;         /**< UD: source QPN from the DETH */
	uint32_t wc_flags;       /**< enum wc_flag set */
	uint16_t pkey_index;
	uint16_t slid;
	uint8_t sl;
	uint8_t dlid_path_bits;
	uint16_t reserved0;
	uint64_t timestamp;      /**< completion time, engine clock (ns) */
	uint64_t reserved1;
};

_Static_assert(sizeof(struct wr_sge) == 16, "wr_sge is 16 bytes (ibv_sge)");
_Static_assert(sizeof(struct wr_av) == 64, "wr_av is 64 bytes");
_Static_assert(sizeof(struct sq_wqe) == 384, "sq_wqe is 384 bytes");
_Static_assert(sizeof(struct rq_wqe) == 272, "rq_wqe is 272 bytes");
_Static_assert(sizeof(struct cqe) == 64, "cqe is 64 bytes");

#ifdef __cplusplus
}
#endif
#endif /* QP_WQE_H */
