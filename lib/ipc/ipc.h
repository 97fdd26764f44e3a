/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * lib/ipc: the setup protocol between the verbs shim (libibverbs.so.1 in an
 * application) and roce-daemon.
 *
 * Transport: one AF_UNIX SOCK_SEQPACKET connection per ibv_context (plus a
 * short-lived one for device discovery). Every datagram is one message: a
 * fixed @ref ipc_hdr followed by the fixed-size body of its operation.
 * Requests and responses carry the same op; a response echoes the request's
 * seq and sets status (0 or a positive errno). File descriptors travel as
 * SCM_RIGHTS ancillary data; hdr.nfds says how many, and the operation table
 * bounds it. The server identifies its peer with SO_PEERCRED.
 *
 * Validation (ipc_msg_check()): magic, version, known op, exact body size for
 * the op and direction, fd count within the op's bound, no truncation. A
 * message that fails is rejected whole and its fds are closed; the receiver
 * never sees a partial message.
 *
 * Operations are listed once in IPC_OPS (X-macro): the enum, the name table
 * and the size/fd descriptor table are all expanded from it.
 *
 * Ownership: every handle in a request names an object the same connection
 * group created; anything else is EINVAL. A group is one connection
 * (ibv_open_device) plus those imported from it (IMPORT_DEVICE); its objects
 * are destroyed when the last of its sockets closes.
 *
 * Shared memory: CQ, QP (SQ+RQ) and SRQ rings live in a memfd the daemon
 * creates and passes back in the create response (see ipc_shm.h); they are
 * lib/shm's spsc_ring carrying lib/shm's sq_wqe/rq_wqe/cqe records. MR pages
 * live in a memfd the shim creates, passes with REG_MR, and maps at the
 * application's own addresses.
 *
 * rdma_cm (librdmacm shim): ipc_cm.h, operations 60-99, event channels.
 *
 * Attribute records (ipc_qp_attr, ipc_ah_attr, ...) have fixed widths;
 * ipc_verbs.h converts them to and from the <infiniband/verbs.h> structs.
 * Enum values inside them are the libibverbs ones.
 */
#ifndef IPC_H
#define IPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "flow.h"
#include "wqe.h"

#ifdef __cplusplus
extern "C" {
#endif

#define IPC_MAGIC 0x52434531u       /**< "RCE1" */
/* 2: CREATE_CHANNEL returns the channel fd (a socket pair), takes none
 * 3: ipc_device_attr carries the ODP capabilities
 * 4: XRC: OPEN_XRCD, CLOSE_XRCD (36, 37 kept for OPEN_QP); CREATE_SRQ takes a type, an XRC
 *    domain and a CQ, CREATE_QP an XRC domain
 * 5: CREATE_FLOW/DESTROY_FLOW; ipc_device_attr carries the raw packet caps
 * 6: device memory (ALLOC_DM, FREE_DM, REG_DM_MR, IMPORT_DM: 46-49; max_dm_size)
 * 7: rdma_migrate_id moves queued events: CM_MIGRATE_ID takes ipc_cm_migrate_req, CM_MIGRATE_COMMIT
 *    (80)
 * 8: RSS: CREATE_RSS_QP (50); ipc_device_attr carries the RSS caps
 * 9: tag matching: CREATE_SRQ takes IBV_SRQT_TM with max_num_tags, max_ops and a CQ; its answer
 *    describes the ops ring and the released counts
 * 10: send doorbells: struct ipc_cq_ctrl carries the bells of the QPs it is the send CQ of, the SQ
 *    ring header cons_flags (SPSC_RING_WANT_BELL) and bell (ipc_shm.h, lib/shm bell.h)
 * 11: ipc_device_attr's pad words pad_dm and pad_rss are tm_max_num_tags and tm_max_ops
 *    (tm_caps; same size)
 * 12: the SQ ring header's cons_flags moved from the consumer index's line to the geometry line
 *    (lib/shm queue.h) */
#define IPC_VERSION 12u
#define IPC_MAX_FDS 2u              /**< most fds any message carries */
#define IPC_MAX_DEVICES 8u          /**< devices in one DEVICE_LIST answer */
#define IPC_NAME_LEN 64u            /**< device name buffer, NUL included */
#define IPC_HANDLE_NONE 0u          /**< "no object" in optional handle fields */
/** Default socket path; the environment variable below overrides it. */
#define IPC_DEFAULT_SOCKET "/run/roce-dpdk/roce.sock"
#define IPC_SOCKET_ENV "ROCE_DAEMON_SOCKET"

/** Message header; the body of the op follows immediately. */
struct ipc_hdr {
	uint32_t magic;   /**< IPC_MAGIC */
	uint16_t version; /**< IPC_VERSION */
	uint16_t op;      /**< enum ipc_op */
	uint32_t seq;     /**< chosen by the requester, echoed in the response */
	uint32_t len;     /**< whole message: header + body */
	int32_t status;   /**< responses: 0 or a positive errno; requests: 0 */
	uint32_t nfds;    /**< descriptors attached with SCM_RIGHTS */
};

/** @name Shared attribute records (fixed widths, host byte order unless noted) @{ */

/** Device attributes (ibv_device_attr + the _ex fields we report). */
struct ipc_device_attr {
	char fw_ver[64];
	uint64_t node_guid;      /**< network byte order, as ibv_device_attr */
	uint64_t sys_image_guid; /**< network byte order */
	uint64_t max_mr_size;
	uint64_t page_size_cap;
	uint32_t vendor_id;
	uint32_t vendor_part_id;
	uint32_t hw_ver;
	uint32_t max_qp;
	uint32_t max_qp_wr;
	uint32_t device_cap_flags;
	uint32_t max_sge;
	uint32_t max_sge_rd;
	uint32_t max_cq;
	uint32_t max_cqe;
	uint32_t max_mr;
	uint32_t max_pd;
	uint32_t max_qp_rd_atom;
	uint32_t max_qp_init_rd_atom;
	uint32_t max_res_rd_atom;
	uint32_t atomic_cap;     /**< enum ibv_atomic_cap */
	uint32_t max_mw;
	uint32_t max_mcast_grp;
	uint32_t max_mcast_qp_attach;
	uint32_t max_total_mcast_qp_attach;
	uint32_t max_ah;
	uint32_t max_srq;
	uint32_t max_srq_wr;
	uint32_t max_srq_sge;
	uint32_t max_inline_data;
	uint16_t max_pkeys;
	uint8_t local_ca_ack_delay;
	uint8_t phys_port_cnt;
	uint64_t device_cap_flags_ex;
	uint64_t completion_timestamp_mask; /**< 0: no completion timestamps */
	uint64_t hca_core_clock;            /**< kHz; 0 when not supported */
	/** ibv_packet_pacing_caps: kbps bounds of IBV_QP_RATE_LIMIT and the QP
	 *  types (1 << IBV_QPT_*) it applies to; 0: no rate limiting. */
	uint32_t qp_rate_limit_min;
	uint32_t qp_rate_limit_max;
	uint32_t pacing_supported_qpts;
	/** ibv_odp_caps: on-demand paging (enum ibv_odp_general_caps, and
	 *  enum ibv_odp_transport_cap_bits per transport); 0: no ODP. */
	uint32_t odp_general_caps;
	uint32_t odp_rc_caps;
	uint32_t odp_uc_caps;
	uint32_t odp_ud_caps;
	uint32_t odp_xrc_caps;
	/** RAW_PACKET QPs (ibv_device_attr.max_raw_ethy_qp; 0: none) and
	 *  ibv_device_attr_ex.raw_packet_caps (enum ibv_raw_packet_caps) */
	uint32_t max_raw_ethy_qp;
	uint32_t raw_packet_caps;
	/** tag matching (ibv_tm_caps, IBV_SRQT_TM): the largest max_num_tags of a
	 *  TM SRQ for this client; 0: no tag matching (tm_caps all 0) */
	uint32_t tm_max_num_tags;
	/** ibv_device_attr_ex.max_dm_size: the largest ALLOC_DM; 0: no device memory */
	uint64_t max_dm_size;
	/** ibv_rss_caps (0: no RSS QPs) and max_wq_type_rq */
	uint32_t rss_max_tables;        /**< max_rwq_indirection_tables */
	uint32_t rss_max_table_size;    /**< max_rwq_indirection_table_size */
	uint32_t rss_supported_qpts;    /**< 1 << IBV_QPT_RAW_PACKET */
	uint32_t rss_hash_function;     /**< IBV_RX_HASH_FUNC_TOEPLITZ */
	uint64_t rss_hash_fields_mask;  /**< enum ibv_rx_hash_fields */
	uint32_t max_wq_type_rq;
	uint32_t tm_max_ops;            /**< tag matching: the largest max_ops */
};

/** Port attributes (ibv_port_attr). */
struct ipc_port_attr {
	uint32_t state;          /**< enum ibv_port_state */
	uint32_t max_mtu;        /**< enum ibv_mtu */
	uint32_t active_mtu;     /**< enum ibv_mtu */
	uint32_t gid_tbl_len;
	uint32_t port_cap_flags;
	uint32_t max_msg_sz;
	uint32_t bad_pkey_cntr;
	uint32_t qkey_viol_cntr;
	uint16_t pkey_tbl_len;
	uint16_t lid;
	uint16_t sm_lid;
	uint8_t lmc;
	uint8_t max_vl_num;
	uint8_t sm_sl;
	uint8_t subnet_timeout;
	uint8_t init_type_reply;
	uint8_t active_width;
	uint8_t active_speed;
	uint8_t phys_state;
	uint8_t link_layer;      /**< IBV_LINK_LAYER_* */
	uint8_t flags;
	uint16_t port_cap_flags2;
	uint16_t pad;
	uint32_t active_speed_ex;
};

/** Address vector (ibv_ah_attr with its GRH). */
struct ipc_ah_attr {
	uint8_t dgid[16];
	uint32_t flow_label;
	uint8_t sgid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint8_t is_global;
	uint16_t dlid;
	uint8_t sl;
	uint8_t src_path_bits;
	uint8_t static_rate;
	uint8_t port_num;
	uint16_t pad;
};

/** QP capabilities (ibv_qp_cap). */
struct ipc_qp_cap {
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data;
};

/** QP attributes (ibv_qp_attr); which fields matter is given by a mask of IBV_QP_* bits. */
struct ipc_qp_attr {
	uint32_t qp_state;
	uint32_t cur_qp_state;
	uint32_t path_mtu;
	uint32_t path_mig_state;
	uint32_t qkey;
	uint32_t rq_psn;
	uint32_t sq_psn;
	uint32_t dest_qp_num;
	uint32_t qp_access_flags;
	struct ipc_qp_cap cap;
	struct ipc_ah_attr ah_attr;
	struct ipc_ah_attr alt_ah_attr;
	uint16_t pkey_index;
	uint16_t alt_pkey_index;
	uint8_t en_sqd_async_notify;
	uint8_t sq_draining;
	uint8_t max_rd_atomic;
	uint8_t max_dest_rd_atomic;
	uint8_t min_rnr_timer;
	uint8_t port_num;
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t alt_port_num;
	uint8_t alt_timeout;
	uint8_t pad;
	uint32_t rate_limit;
};

/**
 * Where one ring sits inside the memfd of a create response: a struct
 * spsc_ring (lib/shm queue.h) at @c offset, records follow its header.
 */
struct ipc_ring_desc {
	uint64_t offset;  /**< byte offset of the ring header in the memfd */
	uint32_t entries; /**< power of two; 0: no ring */
	uint32_t stride;  /**< bytes per entry */
};
/** @} */

/** @name Request and response bodies @{ */
struct ipc_empty { uint32_t reserved; };

struct ipc_device_info {
	char name[IPC_NAME_LEN];
	uint64_t node_guid;    /**< network byte order */
	uint32_t node_type;    /**< enum ibv_node_type */
	uint32_t transport;    /**< enum ibv_transport_type */
	uint32_t phys_port_cnt;
	uint32_t pad;
};
struct ipc_device_list_rsp {
	uint32_t count;
	uint32_t pad;
	struct ipc_device_info dev[IPC_MAX_DEVICES];
};

/** OPEN_DEVICE binds the connection to one device; the answer carries the async-event socket. */
struct ipc_open_device_req { char name[IPC_NAME_LEN]; };
struct ipc_open_device_rsp { struct ipc_device_info info; uint32_t num_comp_vectors; uint32_t pad; };

/**
 * IMPORT_DEVICE (ibv_import_device): sent on an existing connection, with fd 0
 * the importer's end of a new SOCK_SEQPACKET socket pair. The daemon serves a
 * new connection on that socket that shares the sending connection's objects
 * (see "Ownership" above), and answers there, not on the connection the
 * request came in on: that socket may be shared with other processes, whose
 * own answers must not be interleaved with this one. The answer is that of
 * OPEN_DEVICE (fd 0: the new connection's async-event socket). Whoever can
 * send on a connection may import it, as whoever holds a uverbs fd may.
 */
struct ipc_query_device_rsp { struct ipc_device_attr attr; };
struct ipc_port_req { uint32_t port; uint32_t index; };
struct ipc_query_port_rsp { struct ipc_port_attr attr; };
struct ipc_query_gid_rsp {
	uint8_t gid[16];
	uint32_t gid_type;   /**< enum ibv_gid_type (IBV_GID_TYPE_*) */
	uint32_t ndev_ifindex;
};
struct ipc_query_pkey_rsp { uint16_t pkey; uint16_t pad; uint32_t pad2; };

/** Every create request carries the shim's cookie for the object; async events echo it. */
struct ipc_handle_req { uint32_t handle; uint32_t pad; };
/**
 * Destroy answer of objects that get async events (CQ, QP, SRQ): how many
 * events were queued for the object in total. The shim waits until the
 * application has acknowledged that many before freeing the object, as
 * rdma-core does with the kernel's events_reported.
 */
struct ipc_destroy_rsp { uint32_t events_reported; uint32_t pad; };
/** Create answer; num is the object's number where it has one (AH number for UD WQEs). */
struct ipc_create_rsp { uint32_t handle; uint32_t num; };

struct ipc_alloc_pd_req { uint64_t user_handle; };

/** REG_MR: fd 0 (optional) is a memfd holding [addr, addr+length) at fd_offset. */
struct ipc_reg_mr_req {
	uint64_t user_handle;
	uint64_t addr;
	uint64_t length;
	uint64_t iova;
	uint64_t fd_offset;  /**< offset of @c addr's page inside the memfd */
	uint32_t pd;
	uint32_t access;     /**< IBV_ACCESS_* */
};
struct ipc_reg_mr_rsp { uint32_t handle; uint32_t lkey; uint32_t rkey; uint32_t pad; };
/** IMPORT_MR (ibv_import_mr): the MR @c handle of the connection's group, registered in PD @c pd. */
struct ipc_import_mr_req { uint32_t handle; uint32_t pd; };
struct ipc_import_mr_rsp { uint32_t lkey; uint32_t rkey; uint64_t length; };
/**
 * ATTACH_MCAST / DETACH_MCAST (ibv_attach_mcast / ibv_detach_mcast): UD QP
 * @c qp joins or leaves multicast group @c gid (ff00::/8, or ::ffff:224.0.0.0/4
 * for an IPv4 group); @c lid is ignored on RoCE.
 */
/**
 * CREATE_FLOW (ibv_create_flow): steer the frames of port @c port that
 * match @c match to RAW_PACKET QP @c qp. The shim turns the verbs specs
 * (struct ibv_flow_spec_eth, _ipv4(_ext), _ipv6, _tcp_udp) into one
 * lib/flow rule; the daemon checks it (flow_match_check()).
 */
struct ipc_create_flow_req {
	uint64_t user_handle;
	uint32_t qp;
	uint32_t port;       /**< ibv_flow_attr.port */
	uint32_t type;       /**< enum ibv_flow_attr_type: IBV_FLOW_ATTR_NORMAL only */
	uint32_t flags;      /**< ibv_flow_attr.flags: 0 only */
	uint32_t priority;   /**< ibv_flow_attr.priority (16 bits): lower first */
	uint32_t reserved;
	struct flow_match match;
};
/**
 * CREATE_RSS_QP (ibv_create_qp_ex with IBV_QP_INIT_ATTR_RX_HASH and
 * IBV_QP_INIT_ATTR_IND_TABLE): a receive-only RAW_PACKET QP whose frames
 * (those its flows steer to it) go to the WQ its Toeplitz hash picks from
 * the indirection table. A WQ (ibv_create_wq, IBV_WQT_RQ) is, to the
 * daemon, a RAW_PACKET QP of the same group with its own receive queue;
 * the table is the shim's: its 2^@c log_size WQ handles travel here.
 * Answer: ipc_create_rsp {handle, QPN}.
 */
#define IPC_RSS_MAX_ENTRIES 64u
struct ipc_create_rss_qp_req {
	uint64_t user_handle;
	uint32_t pd;
	uint32_t log_size;     /**< ibv_rwq_ind_table_init_attr.log_ind_tbl_size */
	uint32_t hash_function; /**< ibv_rx_hash_conf.rx_hash_function */
	uint32_t key_len;
	uint64_t fields_mask;  /**< ibv_rx_hash_conf.rx_hash_fields_mask */
	uint8_t key[40];
	uint32_t wq[IPC_RSS_MAX_ENTRIES]; /**< WQ (QP) handles; entries past 2^log_size are 0 */
};
struct ipc_mcast_req { uint32_t qp; uint16_t lid; uint16_t pad; uint8_t gid[16]; };
/** ALLOC_MW (ibv_alloc_mw): a window of @c type (1 or 2, enum ibv_mw_type) in PD @c pd. */
struct ipc_alloc_mw_req { uint64_t user_handle; uint32_t pd; uint32_t type; };
/** The window's handle and its first R_Key (lib/xport mw.h keys). */
struct ipc_alloc_mw_rsp { uint32_t handle; uint32_t rkey; };
/**
 * ALLOC_DM (ibv_alloc_dm): @c length bytes of device memory. Ours is memory
 * the daemon owns: a memfd it creates, maps and passes back (fd 0 of the
 * answer) for the shim to map; bounded by max_dm_size, a per-client quota
 * and a global cap. @c comp_mask must be 0 (struct ibv_alloc_dm_attr).
 */
struct ipc_alloc_dm_req {
	uint64_t user_handle;
	uint64_t length;
	uint32_t log_align_req; /**< at most the page size's log (the memfd is page aligned) */
	uint32_t comp_mask;
};
/** ALLOC_DM and IMPORT_DM answer: fd 0 is the memfd, @c map_size bytes (whole pages). */
struct ipc_alloc_dm_rsp { uint32_t handle; uint32_t pad; uint64_t length; uint64_t map_size; };
/** REG_DM_MR (ibv_reg_dm_mr): [@c offset, + @c length) of DM @c dm, zero-based, in PD @c pd. */
struct ipc_reg_dm_mr_req {
	uint64_t user_handle;
	uint64_t offset;
	uint64_t length;
	uint32_t pd;
	uint32_t dm;
	uint32_t access;     /**< enum ibv_access_flags; IBV_ACCESS_ZERO_BASED required */
	uint32_t pad;
};
struct ipc_rereg_mr_req {
	uint32_t handle;
	uint32_t flags;      /**< IBV_REREG_MR_CHANGE_* */
	uint32_t pd;
	uint32_t access;
	uint64_t addr;
	uint64_t length;
	uint64_t iova;
	uint64_t fd_offset;
};

/**
 * CREATE_COMP_CHANNEL: the response's fd 0 is the reading end of a socket
 * pair whose other end only the daemon holds (ipc_channel_pair()): one byte
 * per notification of an armed CQ. The daemon sends with MSG_DONTWAIT, so
 * the application cannot make it block; a channel it never reads fills up
 * and loses notifications (cq_signals_dropped; notify_count still moves).
 */
struct ipc_create_channel_req { uint64_t user_handle; };

struct ipc_create_cq_req {
	uint64_t user_handle;
	uint32_t cqe;
	uint32_t channel;     /**< channel handle or IPC_HANDLE_NONE */
	uint32_t comp_vector;
	uint32_t wc_flags;    /**< IBV_WC_EX_WITH_* requested by create_cq_ex */
};
/** CQ create/resize answer; fd 0 is the memfd: [struct ipc_cq_ctrl][CQE ring]. */
struct ipc_cq_rsp {
	uint32_t handle;
	uint32_t cqe;         /**< usable entries (ring entries - 1) */
	uint64_t shm_size;
	uint64_t ctrl_offset; /**< struct ipc_cq_ctrl */
	struct ipc_ring_desc ring;
};
struct ipc_resize_cq_req { uint32_t handle; uint32_t cqe; };

struct ipc_create_qp_req {
	uint64_t user_handle;
	uint32_t pd;          /**< IPC_HANDLE_NONE for XRC_RECV */
	uint32_t send_cq;     /**< IPC_HANDLE_NONE for XRC_RECV */
	uint32_t recv_cq;     /**< IPC_HANDLE_NONE for XRC_SEND and XRC_RECV */
	uint32_t srq;         /**< or IPC_HANDLE_NONE */
	uint32_t qp_type;     /**< enum ibv_qp_type */
	uint32_t sq_sig_all;
	uint32_t create_flags;
	uint32_t xrcd;        /**< XRC_RECV: its XRC domain (OPEN_XRCD handle); else IPC_HANDLE_NONE */
	uint64_t send_ops_flags;
	struct ipc_qp_cap cap;
	uint32_t pad2;
};
/** QP create answer; fd 0 is the memfd holding the SQ and (without SRQ) the RQ. */
struct ipc_create_qp_rsp {
	uint32_t handle;
	uint32_t qpn;
	struct ipc_qp_cap cap;
	uint32_t pad;
	uint64_t shm_size;
	struct ipc_ring_desc sq;
	struct ipc_ring_desc rq;
};
struct ipc_modify_qp_req { uint32_t handle; uint32_t mask; struct ipc_qp_attr attr; };
struct ipc_modify_qp_rsp { uint32_t state; uint32_t pad; };
struct ipc_query_qp_req { uint32_t handle; uint32_t mask; };
struct ipc_query_qp_rsp {
	struct ipc_qp_attr attr;
	struct ipc_qp_cap init_cap;
	uint32_t sq_sig_all;
};

struct ipc_create_srq_req {
	uint64_t user_handle;
	uint32_t pd;
	uint32_t max_wr;
	uint32_t max_sge;
	uint32_t srq_limit;
	uint32_t srq_type;    /**< enum ibv_srq_type: IBV_SRQT_BASIC, IBV_SRQT_XRC or IBV_SRQT_TM */
	uint32_t xrcd;        /**< IBV_SRQT_XRC: its XRC domain (OPEN_XRCD handle) */
	uint32_t cq;          /**< IBV_SRQT_XRC: the CQ of its receive completions; IBV_SRQT_TM:
				   the CQ of its operations' completions */
	uint32_t max_num_tags; /**< IBV_SRQT_TM: ibv_tm_cap.max_num_tags (1..) */
	uint32_t max_ops;     /**< IBV_SRQT_TM: ibv_tm_cap.max_ops, outstanding ibv_post_srq_ops (1..) */
	uint32_t pad;
};
/**
 * SRQ create answer; fd 0 is the ring memfd. IBV_SRQT_TM: the memfd also
 * holds tm_ops (struct tm_op_wqe records, the shim produces, max_ops + 1
 * rounded up to a power of two) and, at tm_released, one uint32_t per
 * entry index (lib/shm wqe.h: the engine counts the entries that left the
 * list); entries 0 otherwise.
 */
struct ipc_create_srq_rsp {
	uint32_t handle;
	uint32_t srqn;
	uint32_t max_wr;
	uint32_t max_sge;
	uint64_t shm_size;
	struct ipc_ring_desc ring;
	struct ipc_ring_desc tm_ops;
	uint64_t tm_released;  /**< byte offset of the released counts */
	uint32_t max_num_tags;
	uint32_t max_ops;
};
struct ipc_modify_srq_req { uint32_t handle; uint32_t mask; uint32_t max_wr; uint32_t srq_limit; };

/**
 * OPEN_XRCD (ibv_open_xrcd(3)): fd 0, if any, names the domain by its inode:
 * every context of the device that opens the same inode shares one XRC
 * domain. oflags: O_CREAT (create it if the inode has none; required
 * without an fd), O_EXCL (fail if it exists). Answer: ipc_create_rsp
 * {handle, domain number}.
 */
struct ipc_open_xrcd_req { uint32_t oflags; uint32_t pad; };
struct ipc_query_srq_rsp { uint32_t max_wr; uint32_t max_sge; uint32_t srq_limit; uint32_t pad; };

struct ipc_create_ah_req { uint64_t user_handle; uint32_t pd; uint32_t pad; struct ipc_ah_attr attr; };
/**
 * AH answer: the address vector resolved as far as the daemon could (GIDs,
 * MACs, traffic class...); the shim copies it into every UD send WQE.
 */
struct ipc_create_ah_rsp { uint32_t handle; uint32_t num; struct wr_av av; };

/**
 * A record read from the async-event socket (the fd OPEN_DEVICE returns).
 * One datagram per event; user_handle is the creator's cookie of the object.
 */
struct ipc_async_event {
	uint32_t type;        /**< enum ibv_event_type */
	uint32_t kind;        /**< enum ipc_obj_kind: which element is valid */
	uint64_t user_handle; /**< creator's cookie of the QP/CQ/SRQ; port number for port events */
};
/** @} */

#include "ipc_cm.h" /* the rdma_cm operations and records (IPC_CM_OPS) */

/** Object kinds (for async events and diagnostics). */
enum ipc_obj_kind {
	IPC_OBJ_NONE = 0,
	IPC_OBJ_PD,
	IPC_OBJ_MR,
	IPC_OBJ_CHANNEL,
	IPC_OBJ_CQ,
	IPC_OBJ_QP,
	IPC_OBJ_SRQ,
	IPC_OBJ_AH,
	IPC_OBJ_PORT,
	IPC_OBJ_DEVICE,
};

/**
 * The operation list. IPC_OP(sym, value, request body, response body,
 * fds in request (max), fds in response (max)). IPC_OP_MAX follows the
 * last entry, so the list ends with its highest code.
 */
#define IPC_OPS(IPC_OP)                                                                  \
	IPC_OP(DEVICE_LIST,     1, ipc_empty,               ipc_device_list_rsp,  0, 0)  \
	IPC_OP(OPEN_DEVICE,     2, ipc_open_device_req,     ipc_open_device_rsp,  0, 1)  \
	IPC_OP(QUERY_DEVICE,    3, ipc_empty,               ipc_query_device_rsp, 0, 0)  \
	IPC_OP(QUERY_PORT,      4, ipc_port_req,            ipc_query_port_rsp,   0, 0)  \
	IPC_OP(QUERY_GID,       5, ipc_port_req,            ipc_query_gid_rsp,    0, 0)  \
	IPC_OP(QUERY_PKEY,      6, ipc_port_req,            ipc_query_pkey_rsp,   0, 0)  \
	IPC_OP(IMPORT_DEVICE,   7, ipc_empty,               ipc_open_device_rsp,  1, 1)  \
	IPC_OP(ALLOC_PD,       10, ipc_alloc_pd_req,        ipc_create_rsp,       0, 0)  \
	IPC_OP(DEALLOC_PD,     11, ipc_handle_req,          ipc_empty,            0, 0)  \
	IPC_OP(REG_MR,         12, ipc_reg_mr_req,          ipc_reg_mr_rsp,       1, 0)  \
	IPC_OP(REREG_MR,       13, ipc_rereg_mr_req,        ipc_reg_mr_rsp,       1, 0)  \
	IPC_OP(DEREG_MR,       14, ipc_handle_req,          ipc_empty,            0, 0)  \
	IPC_OP(CREATE_CHANNEL, 15, ipc_create_channel_req,  ipc_create_rsp,       0, 1)  \
	IPC_OP(DESTROY_CHANNEL,16, ipc_handle_req,          ipc_empty,            0, 0)  \
	IPC_OP(CREATE_CQ,      17, ipc_create_cq_req,       ipc_cq_rsp,           0, 1)  \
	IPC_OP(RESIZE_CQ,      18, ipc_resize_cq_req,       ipc_cq_rsp,           0, 1)  \
	IPC_OP(DESTROY_CQ,     19, ipc_handle_req,          ipc_destroy_rsp,      0, 0)  \
	IPC_OP(CREATE_QP,      20, ipc_create_qp_req,       ipc_create_qp_rsp,    0, 1)  \
	IPC_OP(MODIFY_QP,      21, ipc_modify_qp_req,       ipc_modify_qp_rsp,    0, 0)  \
	IPC_OP(QUERY_QP,       22, ipc_query_qp_req,        ipc_query_qp_rsp,     0, 0)  \
	IPC_OP(DESTROY_QP,     23, ipc_handle_req,          ipc_destroy_rsp,      0, 0)  \
	IPC_OP(CREATE_SRQ,     24, ipc_create_srq_req,      ipc_create_srq_rsp,   0, 1)  \
	IPC_OP(MODIFY_SRQ,     25, ipc_modify_srq_req,      ipc_empty,            0, 0)  \
	IPC_OP(QUERY_SRQ,      26, ipc_handle_req,          ipc_query_srq_rsp,    0, 0)  \
	IPC_OP(DESTROY_SRQ,    27, ipc_handle_req,          ipc_destroy_rsp,      0, 0)  \
	IPC_OP(CREATE_AH,      28, ipc_create_ah_req,       ipc_create_ah_rsp,    0, 0)  \
	IPC_OP(DESTROY_AH,     29, ipc_handle_req,          ipc_empty,            0, 0)  \
	IPC_OP(IMPORT_PD,      30, ipc_handle_req,          ipc_empty,            0, 0)  \
	IPC_OP(IMPORT_MR,      31, ipc_import_mr_req,       ipc_import_mr_rsp,    0, 0)  \
	IPC_OP(ATTACH_MCAST,   32, ipc_mcast_req,           ipc_empty,            0, 0)  \
	IPC_OP(DETACH_MCAST,   33, ipc_mcast_req,           ipc_empty,            0, 0)  \
	IPC_OP(OPEN_XRCD,      34, ipc_open_xrcd_req,       ipc_create_rsp,       1, 0)  \
	IPC_OP(CLOSE_XRCD,     35, ipc_handle_req,          ipc_empty,            0, 0)  \
	IPC_OP(CREATE_FLOW,    38, ipc_create_flow_req,     ipc_create_rsp,       0, 0)  \
	IPC_OP(DESTROY_FLOW,   39, ipc_handle_req,          ipc_empty,            0, 0)  \
	IPC_OP(ALLOC_MW,       44, ipc_alloc_mw_req,        ipc_alloc_mw_rsp,     0, 0)  \
	IPC_OP(DEALLOC_MW,     45, ipc_handle_req,          ipc_empty,            0, 0)  \
	IPC_OP(ALLOC_DM,       46, ipc_alloc_dm_req,        ipc_alloc_dm_rsp,     0, 1)  \
	IPC_OP(FREE_DM,        47, ipc_handle_req,          ipc_empty,            0, 0)  \
	IPC_OP(REG_DM_MR,      48, ipc_reg_dm_mr_req,       ipc_reg_mr_rsp,       0, 0)  \
	IPC_OP(IMPORT_DM,      49, ipc_handle_req,          ipc_alloc_dm_rsp,     0, 1)  \
	IPC_OP(CREATE_RSS_QP,  50, ipc_create_rss_qp_req,   ipc_create_rsp,       0, 0)  \
	IPC_CM_OPS(IPC_OP) /* 60-99: rdma_cm (ipc_cm.h); keep the highest codes last */

/** Operation codes. */
enum ipc_op {
	IPC_OP_INVALID = 0,
#define IPC_OP_ENUM(sym, val, req, rsp, rqfd, rsfd) IPC_OP_##sym = val,
	IPC_OPS(IPC_OP_ENUM)
#undef IPC_OP_ENUM
	IPC_OP_MAX,
};

/** Static description of one operation, expanded from IPC_OPS. */
struct ipc_op_desc {
	const char *name;  /**< "QUERY_PORT"; NULL for unused codes */
	uint32_t req_size; /**< body bytes of the request */
	uint32_t rsp_size; /**< body bytes of the response */
	uint8_t req_fds;   /**< most fds a request may carry */
	uint8_t rsp_fds;   /**< most fds a response may carry */
};

/** Descriptor of @p op, or NULL when the code is unknown. */
const struct ipc_op_desc *ipc_op_desc(uint32_t op);
/** Name of @p op ("QUERY_PORT"), "?" when unknown. */
const char *ipc_op_name(uint32_t op);

/** Largest message of any operation, header included. */
size_t ipc_msg_max(void);

/** A message buffer large enough for every operation. */
struct ipc_msg {
	struct ipc_hdr hdr;
	union {
#define IPC_OP_UNION(sym, val, req, rsp, rqfd, rsfd) struct req req_##sym; struct rsp rsp_##sym;
		IPC_OPS(IPC_OP_UNION)
#undef IPC_OP_UNION
		uint8_t raw[1];
	} u;
};

/** Message direction, for validation. */
enum ipc_dir { IPC_REQUEST, IPC_RESPONSE };

/**
 * Check a received message: magic, version, op known, exact length for the op
 * and direction (responses always carry the whole body, zeroed on error),
 * fd count within bounds and equal to hdr.nfds.
 * @return 0, or -EPROTO (bad magic/version/length), -EOPNOTSUPP (unknown op),
 *         -EBADMSG (fd count mismatch).
 */
int ipc_msg_check(const struct ipc_msg *msg, size_t len, unsigned int nfds, enum ipc_dir dir);

/** Fill a request header for @p op (len from the op table, seq given). */
void ipc_req_init(struct ipc_msg *msg, enum ipc_op op, uint32_t seq);
/**
 * Start the response to a validated request: same op and seq, body size of
 * the response, body zeroed. @p rsp must not alias @p req.
 */
void ipc_rsp_init(struct ipc_msg *rsp, const struct ipc_msg *req, int status);

/** @name Socket framing @{ */
/** Listen on @p path (unlinks a stale socket first). @return fd or -errno. */
int ipc_listen(const char *path, int backlog);
/** Connect to @p path (NULL: $ROCE_DAEMON_SOCKET or IPC_DEFAULT_SOCKET). @return fd or -errno. */
int ipc_connect(const char *path);
/** The socket path a client uses: $ROCE_DAEMON_SOCKET or IPC_DEFAULT_SOCKET. */
const char *ipc_socket_path(void);
/** Accept a connection (SOCK_CLOEXEC|SOCK_NONBLOCK as given). @return fd or -errno. */
int ipc_accept(int lfd, int flags);
/** Peer credentials of a connected socket (SO_PEERCRED). @return 0 or -errno. */
int ipc_peer_cred(int fd, pid_t *pid, uid_t *uid, gid_t *gid);

/**
 * Send one message of hdr.len bytes with @p nfds descriptors (hdr.nfds is
 * set from @p nfds). @return 0 or -errno.
 */
int ipc_send(int fd, struct ipc_msg *msg, const int *fds, unsigned int nfds);

/**
 * Receive and validate one message. Descriptors received are stored in
 * @p fds (up to IPC_MAX_FDS) and their number in @p nfds; on any error every
 * received descriptor is closed.
 * @return message length (> 0), 0 on orderly EOF, or -errno: -EAGAIN,
 *         -EMSGSIZE (truncated), -EPROTO/-EOPNOTSUPP/-EBADMSG (ipc_msg_check).
 */
ssize_t ipc_recv(int fd, struct ipc_msg *msg, int *fds, unsigned int *nfds, enum ipc_dir dir);

/**
 * Client round trip: send @p req (op/seq set by ipc_req_init), wait for the
 * response with the same seq, and return its status.
 * @param rsp receives the response (may be the same buffer as req)
 * @param rfds receives up to IPC_MAX_FDS descriptors; unset slots are -1
 * @return the response's status (>= 0: 0 or positive errno), or -errno for
 *         a transport error (connection lost, protocol violation).
 */
int ipc_call(int fd, struct ipc_msg *req, const int *fds, unsigned int nfds,
	     struct ipc_msg *rsp, int *rfds);

/**
 * The waiting half of ipc_call(): receive on @p fd until the response of
 * (@p op, @p seq) arrives, dropping stale answers of other requests.
 * For a request sent on another socket than its answer (IMPORT_DEVICE).
 * @return as ipc_call()
 */
int ipc_await(int fd, uint32_t op, uint32_t seq, struct ipc_msg *rsp, int *rfds);

/**
 * ipc_await() for at most @p timeout_ms milliseconds in all (< 0: no limit).
 * @return as ipc_call(), or -ETIMEDOUT when no answer came in time
 */
int ipc_await_timeout(int fd, uint32_t op, uint32_t seq, struct ipc_msg *rsp, int *rfds,
		      int timeout_ms);
/** @} */

#ifdef __cplusplus
}
#endif
#endif /* IPC_H */
