/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * lib/cm: the InfiniBand Communication Manager (IBTA vol1 chapter 12) as
 * rdma_cm uses it over RoCEv2, in pure C: no DPDK, no sockets, no threads,
 * no clock, no blocking.
 *
 * Three layers, one file each:
 *  - the MAD codec (cm_mad.c): a 256-byte CM MAD <-> struct cm_msg, byte
 *    exact with IBTA vol1 chapter 12 (Tables 106-120) and Linux's
 *    include/rdma/ibta_vol1_c12.h; every reserved bit zero on build;
 *  - the rdma_cm IP layer (cm_ip.c): IP-based service IDs (port space and
 *    port), the 36-byte rdma_cm IP private-data header for IPv4 and IPv6,
 *    the per-message private-data limits, listen matching by address;
 *  - the agent (cm_agent.c, with cm_conn.c for the tables and cm_timer.c):
 *    the connection state machine of Linux's ib_cm (cm.c): retransmission
 *    of REQ/REP/DREQ/SIDR_REQ after the peer's CM response timeout up to
 *    the max CM retries, duplicates answered and never re-processed, MRA,
 *    crossing DREQs, stale connections, TimeWait, SIDR, all in bounded
 *    memory (connection slots and listeners fixed at creation).
 *
 * The agent is driven from outside: the caller hands it received MADs
 * (cm_agent_rx()), calls cm_agent_expire() when cm_agent_next_deadline()
 * has passed, and passes the time (`now_us`, any monotonic microsecond
 * clock) to every call. It answers through two callbacks: struct cm_ops's
 * send (one MAD to QP1 of a peer) and event (what happened to a
 * connection). Callbacks run synchronously inside the agent's calls; an
 * event callback may call back into the agent (send a REP, REJ, DREP,
 * destroy the connection...), nothing else may re-enter it. One agent
 * belongs to one thread.
 *
 * Connections are named by a cm_conn_t handle (slot index and generation:
 * a stale handle is refused with -ENOENT, never aliased) and carry a
 * 64-bit cookie chosen by the consumer, given back with every event.
 * Communication IDs on the wire are random 32-bit values, unrelated to
 * the slot index.
 *
 * Functions return 0 or a negative errno; they never abort on bad input.
 */
#ifndef CM_H
#define CM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ====================================================================== */
/** @name MAD constants @{ */
#define CM_MAD_SIZE 256u              /**< a CM MAD is always 256 bytes */
#define CM_MAD_HDR_SIZE 24u           /**< common MAD header */
#define CM_MAD_DATA_SIZE 232u         /**< attribute data after the header */
#define CM_MAD_BASE_VERSION 1u        /**< MAD base version */
#define CM_MAD_MGMT_CLASS 0x07u       /**< management class: Communication Management */
#define CM_MAD_CLASS_VERSION 2u       /**< CM class version */
#define CM_MAD_METHOD_GET 0x01u       /**< Get (ClassPortInfo only) */
#define CM_MAD_METHOD_SEND 0x03u      /**< Send: every CM message */
#define CM_MAD_METHOD_GET_RESP 0x81u  /**< GetResp (ClassPortInfo only) */
#define CM_GSI_QPN 1u                 /**< CM MADs go to and come from QP1 */
#define CM_GSI_QKEY 0x80010000u       /**< the well-known GSI Q_Key */
/** @} */

/**
 * Attribute IDs of the CM class: X(symbol, value, name).
 * LAP and APR are recognised and refused (no alternate paths on RoCE).
 */
#define CM_ATTR_LIST(X) \
	X(CLASS_PORT_INFO, 0x0001, "ClassPortInfo") \
	X(REQ, 0x0010, "REQ") \
	X(MRA, 0x0011, "MRA") \
	X(REJ, 0x0012, "REJ") \
	X(REP, 0x0013, "REP") \
	X(RTU, 0x0014, "RTU") \
	X(DREQ, 0x0015, "DREQ") \
	X(DREP, 0x0016, "DREP") \
	X(SIDR_REQ, 0x0017, "SIDR_REQ") \
	X(SIDR_REP, 0x0018, "SIDR_REP") \
	X(LAP, 0x0019, "LAP") \
	X(APR, 0x001A, "APR")

/** CM attribute IDs (host order). */
enum cm_attr {
#define CM_ATTR_ENUM(sym, val, name) CM_ATTR_##sym = val,
	CM_ATTR_LIST(CM_ATTR_ENUM)
#undef CM_ATTR_ENUM
};

/** Name of attribute @p attr ("REQ"...), "unknown" for another value. */
const char *cm_attr_name(uint16_t attr);

/**
 * Why cm_mad_parse() refused a MAD: X(symbol, name, description).
 * Each is counted by the agent (counter "malformed_" + name).
 */
#define CM_MALFORMED_LIST(X) \
	X(TRUNCATED, "truncated", "shorter than 256 bytes") \
	X(BASE_VERSION, "base_version", "MAD base version is not 1") \
	X(CLASS, "class", "management class is not CM (0x07)") \
	X(CLASS_VERSION, "class_version", "CM class version is not 2") \
	X(METHOD, "method", "method not Send (Get/GetResp for ClassPortInfo)") \
	X(STATUS, "status", "non-zero MAD status on a Send") \
	X(ATTR_UNKNOWN, "attr_unknown", "attribute ID not of the CM class") \
	X(ATTR_UNSUPPORTED, "attr_unsupported", "LAP or APR (alternate paths): recognised, not supported") \
	X(FIELD, "field", "a field holds a reserved or out-of-range value")

/** Reasons of cm_mad_parse(); 0 is success. */
enum cm_malformed {
	CM_MAD_OK = 0, /**< parsed */
#define CM_MALFORMED_ENUM(sym, name, desc) CM_MALFORMED_##sym,
	CM_MALFORMED_LIST(CM_MALFORMED_ENUM)
#undef CM_MALFORMED_ENUM
	CM_MALFORMED_COUNT /**< number of values including CM_MAD_OK */
};

/** Name of a cm_malformed value ("ok" for CM_MAD_OK). */
const char *cm_malformed_name(int reason);

/**
 * REJ reasons (IBTA vol1 Table 109; Linux's enum ib_cm_rej_reason):
 * X(symbol, value, name).
 */
#define CM_REJ_REASON_LIST(X) \
	X(NO_QP, 1, "no QP") \
	X(NO_EEC, 2, "no EEC") \
	X(NO_RESOURCES, 3, "no resources") \
	X(TIMEOUT, 4, "timeout") \
	X(UNSUPPORTED, 5, "unsupported") \
	X(INVALID_COMM_ID, 6, "invalid comm ID") \
	X(INVALID_COMM_INSTANCE, 7, "invalid comm instance") \
	X(INVALID_SERVICE_ID, 8, "invalid service ID") \
	X(INVALID_TRANSPORT_TYPE, 9, "invalid transport type") \
	X(STALE_CONN, 10, "stale conn") \
	X(RDC_NOT_EXIST, 11, "RDC not exist") \
	X(INVALID_GID, 12, "invalid GID") \
	X(INVALID_LID, 13, "invalid LID") \
	X(INVALID_SL, 14, "invalid SL") \
	X(INVALID_TRAFFIC_CLASS, 15, "invalid traffic class") \
	X(INVALID_HOP_LIMIT, 16, "invalid hop limit") \
	X(INVALID_PACKET_RATE, 17, "invalid packet rate") \
	X(INVALID_ALT_GID, 18, "invalid alt GID") \
	X(INVALID_ALT_LID, 19, "invalid alt LID") \
	X(INVALID_ALT_SL, 20, "invalid alt SL") \
	X(INVALID_ALT_TRAFFIC_CLASS, 21, "invalid alt traffic class") \
	X(INVALID_ALT_HOP_LIMIT, 22, "invalid alt hop limit") \
	X(INVALID_ALT_PACKET_RATE, 23, "invalid alt packet rate") \
	X(PORT_CM_REDIRECT, 24, "port CM redirect") \
	X(PORT_REDIRECT, 25, "port redirect") \
	X(INVALID_MTU, 26, "invalid MTU") \
	X(INSUFFICIENT_RESP_RESOURCES, 27, "insufficient resp resources") \
	X(CONSUMER_DEFINED, 28, "consumer defined") \
	X(INVALID_RNR_RETRY, 29, "invalid RNR retry") \
	X(DUPLICATE_LOCAL_COMM_ID, 30, "duplicate local comm ID") \
	X(INVALID_CLASS_VERSION, 31, "invalid class version") \
	X(INVALID_FLOW_LABEL, 32, "invalid flow label") \
	X(INVALID_ALT_FLOW_LABEL, 33, "invalid alt flow label")

/** REJ reason codes. */
enum cm_rej_reason {
#define CM_REJ_ENUM(sym, val, name) CM_REJ_##sym = val,
	CM_REJ_REASON_LIST(CM_REJ_ENUM)
#undef CM_REJ_ENUM
};

/** Name of REJ reason @p reason ("unrecognized reason" for others). */
const char *cm_rej_reason_name(uint16_t reason);

/** "Message rejected"/"message MRAed" codes of REJ and MRA. */
enum cm_msg_response {
	CM_MSG_RESPONSE_REQ = 0,   /**< the REQ */
	CM_MSG_RESPONSE_REP = 1,   /**< the REP */
	CM_MSG_RESPONSE_OTHER = 2, /**< another message (LAP) */
};

/** SIDR_REP status (IBTA vol1 Table 121). */
enum cm_sidr_status {
	CM_SIDR_SUCCESS = 0,             /**< QPN and Q_Key valid */
	CM_SIDR_UNSUPPORTED = 1,         /**< service ID not supported (no listener) */
	CM_SIDR_REJECT = 2,              /**< rejected by the service */
	CM_SIDR_NO_QP = 3,               /**< no QP available */
	CM_SIDR_REDIRECT = 4,            /**< redirected (additional information) */
	CM_SIDR_UNSUPPORTED_VERSION = 5, /**< class version not supported */
};

/** Transport service type of a REQ (2-bit field). */
enum cm_transport {
	CM_TRANSPORT_RC = 0, /**< reliable connected */
	CM_TRANSPORT_UC = 1, /**< unreliable connected */
	CM_TRANSPORT_RD = 2, /**< reliable datagram (never used) */
	CM_TRANSPORT_EXT = 3, /**< see the extended transport type (XRC) */
};

/** @name Private-data sizes per message (IBTA vol1 chapter 12, Linux IB_CM_*_PRIVATE_DATA_SIZE) @{ */
#define CM_REQ_PRIVATE_DATA_SIZE 92u
#define CM_MRA_PRIVATE_DATA_SIZE 222u
#define CM_REJ_PRIVATE_DATA_SIZE 148u
#define CM_REP_PRIVATE_DATA_SIZE 196u
#define CM_RTU_PRIVATE_DATA_SIZE 224u
#define CM_DREQ_PRIVATE_DATA_SIZE 220u
#define CM_DREP_PRIVATE_DATA_SIZE 224u
#define CM_SIDR_REQ_PRIVATE_DATA_SIZE 216u
#define CM_SIDR_REP_PRIVATE_DATA_SIZE 136u
#define CM_REJ_ARI_SIZE 72u              /**< REJ additional rejection information */
#define CM_SIDR_REP_INFO_SIZE 72u        /**< SIDR_REP additional information */
#define CM_PRIVATE_DATA_MAX 224u         /**< the largest of them */
/** @} */

/* ====================================================================== */
/** @name Messages (host order; bit fields as plain integers of their width) @{ */

/** The common MAD header (IBTA vol1 13.4.2). */
struct cm_mad_hdr {
	uint8_t base_version;    /**< 1 */
	uint8_t mgmt_class;      /**< 0x07 */
	uint8_t class_version;   /**< 2 */
	uint8_t method;          /**< CM_MAD_METHOD_* */
	uint16_t status;         /**< 0 on every Send */
	uint16_t class_specific; /**< 0 */
	uint64_t tid;            /**< transaction ID */
	uint16_t attr_id;        /**< enum cm_attr */
	uint32_t attr_mod;       /**< attribute modifier (0) */
};

/** A path of a REQ (primary or alternate), IBTA vol1 Table 106. */
struct cm_req_path {
	uint16_t local_lid;        /**< 0xFFFF (permissive) on RoCE */
	uint16_t remote_lid;       /**< 0xFFFF on RoCE */
	uint8_t local_gid[16];     /**< the sender's port GID */
	uint8_t remote_gid[16];    /**< the receiver's port GID */
	uint32_t flow_label;       /**< 20 bits */
	uint8_t packet_rate;       /**< 6 bits */
	uint8_t traffic_class;     /**< 8 bits */
	uint8_t hop_limit;         /**< 8 bits */
	uint8_t sl;                /**< 4 bits */
	uint8_t subnet_local;      /**< 1 bit */
	uint8_t local_ack_timeout; /**< 5 bits, 4.096 us * 2^n */
};

/** REQ (Table 106). */
struct cm_req {
	uint32_t local_comm_id;
	uint64_t service_id;
	uint64_t local_ca_guid;
	uint32_t local_qkey;
	uint32_t local_qpn;                 /**< 24 bits */
	uint8_t responder_resources;
	uint32_t local_eecn;                /**< 24 bits */
	uint8_t initiator_depth;
	uint32_t remote_eecn;               /**< 24 bits */
	uint8_t remote_cm_response_timeout; /**< 5 bits: how long the passive side may take */
	uint8_t transport_type;             /**< 2 bits, enum cm_transport */
	uint8_t e2e_flow_control;           /**< 1 bit */
	uint32_t starting_psn;              /**< 24 bits */
	uint8_t local_cm_response_timeout;  /**< 5 bits: how long the active side may take */
	uint8_t retry_count;                /**< 3 bits */
	uint16_t pkey;
	uint8_t path_mtu;                   /**< 4 bits, IB MTU code 1..5 */
	uint8_t rdc_exists;                 /**< 1 bit */
	uint8_t rnr_retry_count;            /**< 3 bits */
	uint8_t max_cm_retries;             /**< 4 bits */
	uint8_t srq;                        /**< 1 bit */
	uint8_t extended_transport;         /**< 3 bits (XRC) */
	struct cm_req_path primary;
	struct cm_req_path alternate;       /**< all zero on RoCE */
	uint8_t alt_sap_supported;          /**< 1 bit (byte 139 of the data) */
	uint8_t private_data_len;           /**< parse: 92; build: bytes used, the rest zeroed */
	uint8_t private_data[CM_REQ_PRIVATE_DATA_SIZE];
};

/** MRA (Table 107). */
struct cm_mra {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint8_t message_mraed;   /**< 2 bits, enum cm_msg_response */
	uint8_t service_timeout; /**< 5 bits, 4.096 us * 2^n */
	uint8_t private_data_len;
	uint8_t private_data[CM_MRA_PRIVATE_DATA_SIZE];
};

/** REJ (Table 108). */
struct cm_rej {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;   /**< 0 when rejecting a REQ nobody took */
	uint8_t message_rejected;  /**< 2 bits, enum cm_msg_response */
	uint8_t ari_len;           /**< 7 bits, 0..72 */
	uint16_t reason;           /**< enum cm_rej_reason */
	uint8_t ari[CM_REJ_ARI_SIZE];
	uint8_t private_data_len;
	uint8_t private_data[CM_REJ_PRIVATE_DATA_SIZE];
};

/** REP (Table 110). */
struct cm_rep {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint32_t local_qkey;
	uint32_t local_qpn;          /**< 24 bits */
	uint32_t local_eecn;         /**< 24 bits */
	uint32_t starting_psn;       /**< 24 bits */
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t target_ack_delay;    /**< 5 bits */
	uint8_t failover_accepted;   /**< 2 bits */
	uint8_t e2e_flow_control;    /**< 1 bit */
	uint8_t rnr_retry_count;     /**< 3 bits */
	uint8_t srq;                 /**< 1 bit */
	uint64_t local_ca_guid;
	uint8_t private_data_len;
	uint8_t private_data[CM_REP_PRIVATE_DATA_SIZE];
};

/** RTU (Table 111). */
struct cm_rtu {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint8_t private_data_len;
	uint8_t private_data[CM_RTU_PRIVATE_DATA_SIZE];
};

/** DREQ (Table 112). */
struct cm_dreq {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint32_t remote_qpn;         /**< 24 bits: the receiver's QPN */
	uint8_t private_data_len;
	uint8_t private_data[CM_DREQ_PRIVATE_DATA_SIZE];
};

/** DREP (Table 113). */
struct cm_drep {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint8_t private_data_len;
	uint8_t private_data[CM_DREP_PRIVATE_DATA_SIZE];
};

/** SIDR_REQ (Table 119). */
struct cm_sidr_req {
	uint32_t request_id;
	uint16_t pkey;
	uint64_t service_id;
	uint8_t private_data_len;
	uint8_t private_data[CM_SIDR_REQ_PRIVATE_DATA_SIZE];
};

/** SIDR_REP (Table 120). */
struct cm_sidr_rep {
	uint32_t request_id;
	uint8_t status;              /**< enum cm_sidr_status */
	uint8_t info_len;            /**< 0..72 */
	uint32_t qpn;                /**< 24 bits */
	uint64_t service_id;
	uint32_t qkey;
	uint8_t info[CM_SIDR_REP_INFO_SIZE];
	uint8_t private_data_len;
	uint8_t private_data[CM_SIDR_REP_PRIVATE_DATA_SIZE];
};

/** ClassPortInfo (IBTA vol1 13.4.8.1), 72 bytes. */
struct cm_class_port_info {
	uint8_t base_version;
	uint8_t class_version;
	uint16_t capability_mask;
	uint32_t capability_mask2;   /**< 27 bits */
	uint8_t resp_time_value;     /**< 5 bits */
	uint8_t redirect_gid[16];
	uint8_t redirect_tc;
	uint8_t redirect_sl;         /**< 4 bits */
	uint32_t redirect_fl;        /**< 20 bits */
	uint16_t redirect_lid;
	uint16_t redirect_pkey;
	uint32_t redirect_qp;        /**< 24 bits */
	uint32_t redirect_qkey;
	uint8_t trap_gid[16];
	uint8_t trap_tc;
	uint8_t trap_sl;             /**< 4 bits */
	uint32_t trap_fl;            /**< 20 bits */
	uint16_t trap_lid;
	uint16_t trap_pkey;
	uint8_t trap_hl;
	uint32_t trap_qp;            /**< 24 bits */
	uint32_t trap_qkey;
};

/** One parsed CM MAD: the header and the attribute named by hdr.attr_id. */
struct cm_msg {
	struct cm_mad_hdr hdr;
	union {
		struct cm_req req;
		struct cm_mra mra;
		struct cm_rej rej;
		struct cm_rep rep;
		struct cm_rtu rtu;
		struct cm_dreq dreq;
		struct cm_drep drep;
		struct cm_sidr_req sidr_req;
		struct cm_sidr_rep sidr_rep;
		struct cm_class_port_info cpi;
	};
};
/** @} */

/**
 * Parse one CM MAD.
 *
 * Checks the header (base version 1, class 0x07, class version 2, method
 * Send with status 0, or Get/GetResp for ClassPortInfo), the attribute ID,
 * and fields whose values are reserved (an MRA/REJ "message" code of 3, a
 * REJ ARI or SIDR_REP information length above 72, a REQ path MTU code
 * outside 1..5). Reserved bits are ignored as IBTA requires of receivers.
 * Bytes past 256 are ignored. Private data is copied whole
 * (private_data_len = the message's full size).
 *
 * @param mad  the MAD (the UD payload after BTH and DETH).
 * @param len  its length; less than CM_MAD_SIZE is CM_MALFORMED_TRUNCATED.
 * @param out  the message; undefined on failure.
 * @return CM_MAD_OK (0) or an enum cm_malformed value.
 */
int cm_mad_parse(const uint8_t *mad, size_t len, struct cm_msg *out);

/**
 * Build a CM MAD from @p msg: header from msg->hdr (attr_id selects the
 * union member), every reserved field and bit zero, values masked to their
 * field width, private data beyond private_data_len zeroed.
 *
 * @return 0, or -EINVAL for an attribute this codec does not build
 *         (LAP, APR, unknown) or a private_data_len/ari_len/info_len above
 *         the field.
 */
int cm_mad_build(const struct cm_msg *msg, uint8_t mad[CM_MAD_SIZE]);

/** Initialise @p msg's header for a CM Send of attribute @p attr with @p tid. */
void cm_msg_init(struct cm_msg *msg, uint16_t attr, uint64_t tid);

/** 4.096 us * 2^@p exp in microseconds, rounded up (exp is masked to 5 bits). */
uint64_t cm_iba_time_us(uint8_t exp);

/* ====================================================================== */
/** @name rdma_cm IP layer (Linux cma.c) @{ */

/** rdma_cm port spaces (enum rdma_ucm_port_space). */
enum cm_port_space {
	CM_PS_IPOIB = 0x0002,
	CM_PS_IB = 0x013F,
	CM_PS_TCP = 0x0106,
	CM_PS_UDP = 0x0111,
};

#define CM_IP_HDR_SIZE 36u           /**< the rdma_cm IP private-data header */
#define CM_IP_HDR_VERSION 0u         /**< its version byte */
#define CM_IP_SERVICE_ID_MASK UINT64_C(0xFFFFFFFFFFFF0000) /**< port space part of a service ID */

/** IP-based service ID: (port space << 16) | port, e.g. 0x00000000010648AF for TCP port 0x48af. */
uint64_t cm_ip_service_id(enum cm_port_space ps, uint16_t port);

/** Whether @p sid is an IP-based service ID; fills @p ps and @p port if so (either may be NULL). */
bool cm_ip_service_id_parse(uint64_t sid, enum cm_port_space *ps, uint16_t *port);

/** An IPv4 or IPv6 address and port (host-order port). */
struct cm_ip_addr {
	uint8_t family;      /**< 4 or 6 */
	uint16_t port;       /**< host order */
	uint8_t addr[16];    /**< IPv6, or IPv4 in addr[0..3] */
};

/** The rdma_cm IP private-data header (struct cma_hdr in Linux cma.c). */
struct cm_ip_hdr {
	uint8_t cma_version; /**< 0 */
	uint8_t ip_version;  /**< 4 or 6 (high nibble of byte 1 on the wire) */
	uint16_t src_port;   /**< the active side's port, host order */
	uint8_t src[16];     /**< IPv6, or IPv4 in src[0..3] */
	uint8_t dst[16];     /**< same for the destination */
};

/**
 * Write the 36-byte header for @p src -> @p dst (same family) into @p out:
 * version 0, IP version nibble, source port, addresses (IPv4 in the last 4
 * bytes of its 16-byte field, the rest zero).
 *
 * @return CM_IP_HDR_SIZE, or -EINVAL for mixed or unknown families.
 */
int cm_ip_hdr_build(const struct cm_ip_addr *src, const struct cm_ip_addr *dst,
		    uint8_t out[CM_IP_HDR_SIZE]);

/**
 * Parse the header at the start of private data @p pd of @p len bytes.
 *
 * @return 0, -EINVAL if shorter than 36 bytes, -EPROTONOSUPPORT for a
 *         version byte other than 0 or an IP version other than 4 or 6.
 */
int cm_ip_hdr_parse(const uint8_t *pd, size_t len, struct cm_ip_hdr *out);

/**
 * Room for the consumer's private data in message @p attr (REQ, REP, REJ,
 * MRA, RTU, DREQ, DREP, SIDR_REQ, SIDR_REP) of port space @p ps: the
 * message's private-data size, less the IP header for a REQ or SIDR_REQ of
 * an IP port space (every one but CM_PS_IB), as cma_user_data_offset() does.
 *
 * @return the byte count, or -EINVAL for another attribute.
 */
int cm_ip_private_data_max(uint16_t attr, enum cm_port_space ps);

/**
 * Whether a listener bound to @p bound accepts a REQ whose header says
 * @p hdr, by address: the bound address is a wildcard (all zero; IPv4
 * 0.0.0.0 takes IPv4, IPv6 :: takes IPv6 and, unless @p afonly, IPv4) or
 * equal to the header's destination (an IPv6 ::ffff:a.b.c.d also takes
 * IPv4 a.b.c.d unless @p afonly). The port is not compared: it is the
 * service ID's (bound->port is ignored).
 */
bool cm_ip_listen_match(const struct cm_ip_addr *bound, bool afonly, const struct cm_ip_hdr *hdr);

/** IPv4-mapped GID (::ffff:a.b.c.d) of IPv4 address @p v4 (network order bytes). */
void cm_ip_gid_from_v4(const uint8_t v4[4], uint8_t gid[16]);
/** @} */

/* ====================================================================== */
/** @name The agent @{ */

/** Handle of a connection (slot and generation); 0 is never valid. */
typedef uint64_t cm_conn_t;
#define CM_CONN_INVALID ((cm_conn_t)0)

/**
 * Where a MAD comes from or goes to: what the daemon needs to build a
 * RoCEv2 UD frame to QP1 of the peer, and what it knows of a received one.
 * On receive the daemon fills it from the frame (remote = the frame's
 * source); the agent answers a received message on the same path
 * (a copy of it), and sends a REQ/SIDR_REQ on the path given to it.
 */
struct cm_path {
	uint8_t remote_gid[16];  /**< the peer's GID (IPv4-mapped for IPv4) */
	uint8_t local_gid[16];   /**< our GID (the frame's destination on receive) */
	uint8_t remote_mac[6];   /**< the peer's MAC, if remote_mac_valid */
	uint8_t remote_mac_valid; /**< 1 if remote_mac is known */
	uint8_t traffic_class;   /**< IP DSCP/ECN byte to send with */
	uint8_t hop_limit;       /**< TTL / hop limit (0: the daemon's default) */
	uint32_t flow_label;     /**< IPv6 flow label (20 bits) */
	uint16_t udp_sport;      /**< UDP source port seen / to use (0: the daemon's choice) */
	uint16_t pkey;           /**< P_Key (0xFFFF) */
	uint32_t remote_qpn;     /**< the peer's GSI QPN (1) */
	uint32_t port;           /**< the daemon's port number, opaque to lib/cm */
	uint32_t gid_index;      /**< the daemon's GID index of local_gid, opaque */
};

/**
 * Connection states (Linux enum ib_cm_state): X(symbol, name).
 * An active connection walks IDLE -> REQ_SENT -> REP_RCVD -> ESTABLISHED,
 * a passive one REQ_RCVD -> REP_SENT -> ESTABLISHED; both then DREQ_SENT
 * or DREQ_RCVD -> TIMEWAIT -> IDLE.
 */
#define CM_STATE_LIST(X) \
	X(IDLE, "idle") \
	X(REQ_SENT, "req_sent") \
	X(REQ_RCVD, "req_rcvd") \
	X(MRA_REQ_SENT, "mra_req_sent") \
	X(MRA_REQ_RCVD, "mra_req_rcvd") \
	X(REP_SENT, "rep_sent") \
	X(REP_RCVD, "rep_rcvd") \
	X(MRA_REP_SENT, "mra_rep_sent") \
	X(MRA_REP_RCVD, "mra_rep_rcvd") \
	X(ESTABLISHED, "established") \
	X(DREQ_SENT, "dreq_sent") \
	X(DREQ_RCVD, "dreq_rcvd") \
	X(TIMEWAIT, "timewait") \
	X(SIDR_REQ_SENT, "sidr_req_sent") \
	X(SIDR_REQ_RCVD, "sidr_req_rcvd")

/** Connection states. */
enum cm_state {
#define CM_STATE_ENUM(sym, name) CM_STATE_##sym,
	CM_STATE_LIST(CM_STATE_ENUM)
#undef CM_STATE_ENUM
	CM_STATE_COUNT
};

/** Name of state @p s. */
const char *cm_state_name(int s);

/**
 * Events to the consumer: X(symbol, name, what ev->msg holds).
 * For the *_RECEIVED events ev->msg is the parsed message and ev->from
 * the path it came on; both are valid during the callback only.
 */
#define CM_EVENT_LIST(X) \
	X(REQ_RECEIVED, "req_received", "the REQ; ev->conn is a new passive connection in REQ_RCVD, ev->cookie the listener's") \
	X(REP_RECEIVED, "rep_received", "the REP; the connection is in REP_RCVD: move the QP to RTR/RTS, then cm_send_rtu()") \
	X(RTU_RECEIVED, "rtu_received", "the RTU; the connection is ESTABLISHED") \
	X(REJ_RECEIVED, "rej_received", "the REJ; the connection is IDLE, or TIMEWAIT if it was past the REP or the reason is stale conn") \
	X(MRA_RECEIVED, "mra_received", "the MRA; the wait was extended") \
	X(DREQ_RECEIVED, "dreq_received", "the DREQ; the connection is DREQ_RCVD: answer with cm_send_drep()") \
	X(DREP_RECEIVED, "drep_received", "the DREP; the connection is in TIMEWAIT (from DREQ_RCVD too: cm_send_drep() is then refused)") \
	X(TIMEWAIT_EXIT, "timewait_exit", "NULL; the connection is IDLE, its comm ID free") \
	X(REQ_TIMEOUT, "req_timeout", "NULL; no REP after the max CM retries: unreachable, IDLE") \
	X(REP_TIMEOUT, "rep_timeout", "NULL; no RTU after the max CM retries: IDLE") \
	X(DREQ_TIMEOUT, "dreq_timeout", "NULL; no DREP after the max CM retries: TIMEWAIT") \
	X(SIDR_REQ_TIMEOUT, "sidr_req_timeout", "NULL; no SIDR_REP after the max CM retries: IDLE") \
	X(PEER_TIMEOUT, "peer_timeout", "NULL; a passive REQ_RCVD/MRA_REQ_SENT connection the consumer never answered, abandoned by the peer: IDLE") \
	X(SIDR_REQ_RECEIVED, "sidr_req_received", "the SIDR_REQ; ev->conn is new in SIDR_REQ_RCVD: answer with cm_send_sidr_rep()") \
	X(SIDR_REP_RECEIVED, "sidr_rep_received", "the SIDR_REP; the connection is IDLE")

/** Event types. */
enum cm_event_type {
#define CM_EVENT_ENUM(sym, name, desc) CM_EV_##sym,
	CM_EVENT_LIST(CM_EVENT_ENUM)
#undef CM_EVENT_ENUM
	CM_EV_COUNT
};

/** Name of event type @p t. */
const char *cm_event_name(int t);

/** One event. */
struct cm_event {
	enum cm_event_type type;
	cm_conn_t conn;             /**< the connection */
	uint64_t cookie;            /**< the connection's cookie (a listener's for REQ/SIDR_REQ_RECEIVED) */
	uint64_t listen_service_id; /**< REQ/SIDR_REQ_RECEIVED: the service ID the listener was made with */
	const struct cm_msg *msg;   /**< the message that caused it, or NULL */
	const struct cm_path *from; /**< the path it came on, or NULL */
};

/** Callbacks of an agent. */
struct cm_ops {
	/**
	 * Send one MAD to QP1 of the peer on @p to. Must not block; may fail
	 * (return < 0, counted as send_errors; a retransmission timer covers
	 * messages that expect an answer). The MAD is only valid during the call.
	 */
	int (*send)(void *ctx, const struct cm_path *to, const uint8_t mad[CM_MAD_SIZE]);
	/** Deliver @p ev for the connection whose cookie is @p cookie (== ev->cookie). */
	void (*event)(void *ctx, uint64_t cookie, const struct cm_event *ev);
	void *ctx; /**< passed to both */
};

/** Creation parameters; zero fields take the default said. */
struct cm_agent_config {
	uint32_t max_conns;        /**< connection slots (live, pending and TimeWait); 1..2^24; 0: 1024 */
	uint32_t max_listeners;    /**< listening service IDs; 0: 64 */
	uint64_t ca_guid;          /**< our CA GUID for REQ/REP when the caller gives none */
	uint64_t seed;             /**< seeds comm IDs and TIDs; 0: from getrandom() */
	uint8_t packet_life_time;  /**< IBA exponent for responses and TimeWait; 0: 16 (cma's RoCE value) */
	uint32_t timewait_us;      /**< TimeWait length; 0: 4.096 us * 2^(packet_life_time + 1), as Linux */
	uint8_t cpi_resp_time;     /**< ClassPortInfo RespTimeValue; 0: 20 */
	uint64_t max_peer_wait_us; /**< cap on how long an unanswered REQ_RCVD/SIDR_REQ_RCVD holds its
	                                slot (a REQ may claim hours of retries); 0: 600 s */
};

/** Opaque agent. */
struct cm_agent;

/**
 * Create an agent: all memory (slots, hash tables, listeners) is allocated
 * here and never grows.
 *
 * @return the agent, or NULL with errno EINVAL (bad config/ops: send and
 *         event are required) or ENOMEM.
 */
struct cm_agent *cm_agent_create(const struct cm_agent_config *cfg, const struct cm_ops *ops);

/** Free the agent; sends nothing, delivers no event. NULL is a no-op. */
void cm_agent_destroy(struct cm_agent *a);

/**
 * A MAD received on QP1: parse it and run the state machine. Malformed
 * MADs and messages for no connection are counted and dropped (a DREQ for
 * no connection is answered with a DREP, as Linux does).
 *
 * @return 0 if processed (answered, dropped as duplicate or stale included),
 *         or the enum cm_malformed reason (> 0) it was dropped for.
 */
int cm_agent_rx(struct cm_agent *a, const struct cm_path *from, const uint8_t *mad, size_t len,
		uint64_t now_us);

/** The earliest time cm_agent_expire() has work, UINT64_MAX if none. */
uint64_t cm_agent_next_deadline(const struct cm_agent *a);

/**
 * Run every timer due at @p now_us: retransmissions, timeouts (events),
 * TimeWait exits. Bounded: at most CM_EXPIRE_BATCH timers per call; the
 * return value says if more are due (call again).
 *
 * @return the number of timers run.
 */
unsigned int cm_agent_expire(struct cm_agent *a, uint64_t now_us);
#define CM_EXPIRE_BATCH 256u /**< timers per cm_agent_expire() call */

/**
 * Listen on @p service_id (masked: a REQ/SIDR_REQ matches when
 * (its service ID & @p mask) == (@p service_id & @p mask); mask 0 means
 * all ones). REQ_RECEIVED / SIDR_REQ_RECEIVED events carry @p cookie.
 *
 * @return 0, -EBUSY if an equal listener exists, -ENOSPC past max_listeners.
 */
int cm_listen(struct cm_agent *a, uint64_t service_id, uint64_t mask, uint64_t cookie);

/** Stop listening on @p service_id. @return 0 or -ENOENT. */
int cm_unlisten(struct cm_agent *a, uint64_t service_id);

/** Parameters of cm_send_req(). */
struct cm_req_param {
	struct cm_path path;       /**< where the REQ goes (the peer's QP1) */
	struct cm_req req;         /**< the REQ; local_comm_id is chosen by the agent, local_ca_guid 0
	                                takes the agent's, private_data_len bytes of private_data sent */
	uint8_t packet_life_time;  /**< IBA exponent of the path; 0: the agent's */
};

/**
 * Active side: make a connection with @p cookie and send the REQ
 * (state REQ_SENT). Retransmitted every 2 * packet lifetime + the REQ's
 * remote_cm_response_timeout up to its max_cm_retries, then CM_EV_REQ_TIMEOUT.
 * The REQ's TID is new; the REP and RTU of the connection reuse it.
 *
 * @return 0 and *conn, -ENOSPC if no slot is free, -EINVAL for a bad field
 *         (private_data_len > 92, max_cm_retries > 15).
 */
int cm_send_req(struct cm_agent *a, uint64_t cookie, const struct cm_req_param *p, uint64_t now_us,
		cm_conn_t *conn);

/**
 * Passive side: accept a REQ_RCVD/MRA_REQ_SENT connection with @p rep
 * (comm IDs are filled in; local_ca_guid 0 takes the agent's). State
 * REP_SENT; retransmitted after the REQ's local_cm_response_timeout (+2
 * packet lifetimes) up to the REQ's max_cm_retries, then CM_EV_REP_TIMEOUT.
 *
 * @return 0, -ENOENT (stale handle), -EINVAL (wrong state, bad field).
 */
int cm_send_rep(struct cm_agent *a, cm_conn_t conn, const struct cm_rep *rep, uint64_t now_us);

/**
 * Active side: after REP_RECEIVED (REP_RCVD or MRA_REP_SENT), send the RTU:
 * ESTABLISHED. A duplicate REP is answered with this RTU again.
 */
int cm_send_rtu(struct cm_agent *a, cm_conn_t conn, const void *pd, uint8_t pd_len, uint64_t now_us);

/**
 * Passive side: the QP saw traffic before the RTU (IB "communication
 * established"): REP_SENT/MRA_REP_RCVD -> ESTABLISHED without an RTU.
 */
int cm_establish(struct cm_agent *a, cm_conn_t conn, uint64_t now_us);

/**
 * Reject with @p reason, ARI and private data, as ib_send_cm_rej(): a
 * received REQ (REQ_RCVD, MRA_REQ_SENT) or REP (REP_RCVD, MRA_REP_SENT), or
 * our own REQ (REQ_SENT, MRA_REQ_RCVD): the connection goes IDLE (kept
 * until destroyed); our REP (REP_SENT, MRA_REP_RCVD): it goes to TIMEWAIT.
 *
 * @return 0, -ENOENT, -EINVAL (wrong state, ari_len > 72, pd_len > 148).
 */
int cm_send_rej(struct cm_agent *a, cm_conn_t conn, uint16_t reason, const void *ari, uint8_t ari_len,
		const void *pd, uint8_t pd_len, uint64_t now_us);

/** cm_send_mra() flag: change state but send the MRA only in answer to a duplicate (Linux IB_CM_MRA_FLAG_DELAY). */
#define CM_MRA_DELAY 0x80u

/**
 * Ask the peer to wait @p service_timeout (IBA exponent, 5 bits) longer:
 * REQ_RCVD -> MRA_REQ_SENT or REP_RCVD -> MRA_REP_SENT. Duplicates of the
 * REQ/REP are then answered with this MRA.
 */
int cm_send_mra(struct cm_agent *a, cm_conn_t conn, uint8_t service_timeout, unsigned int flags,
		const void *pd, uint8_t pd_len, uint64_t now_us);

/**
 * Disconnect an ESTABLISHED connection: send a DREQ (its own TID),
 * DREQ_SENT, retransmitted like the REQ/REP; on DREP or timeout, TIMEWAIT.
 * In DREQ_RCVD (the peer's DREQ came first, or they crossed) this sends
 * the DREP instead, as rdma_disconnect() does. -EINVAL in other states.
 */
int cm_send_dreq(struct cm_agent *a, cm_conn_t conn, const void *pd, uint8_t pd_len, uint64_t now_us);

/** Answer a DREQ (DREQ_RCVD) with a DREP echoing its TID: TIMEWAIT. */
int cm_send_drep(struct cm_agent *a, cm_conn_t conn, const void *pd, uint8_t pd_len, uint64_t now_us);

/** Parameters of cm_send_sidr_req(). */
struct cm_sidr_req_param {
	struct cm_path path;      /**< where it goes */
	uint64_t service_id;
	uint16_t pkey;
	uint8_t timeout;          /**< IBA exponent of the service's response time (plus 2 packet lifetimes) */
	uint8_t max_cm_retries;   /**< 0..15 */
	uint8_t private_data_len; /**< <= 216 */
	const uint8_t *private_data;
};

/**
 * UD id: ask the service for its QPN and Q_Key (SIDR_REQ_SENT); the answer
 * comes as CM_EV_SIDR_REP_RECEIVED or CM_EV_SIDR_REQ_TIMEOUT.
 */
int cm_send_sidr_req(struct cm_agent *a, uint64_t cookie, const struct cm_sidr_req_param *p,
		     uint64_t now_us, cm_conn_t *conn);

/**
 * Answer a SIDR_REQ_RCVD connection with @p rep (request_id and service_id
 * are filled in); the connection goes IDLE (destroy it).
 */
int cm_send_sidr_rep(struct cm_agent *a, cm_conn_t conn, const struct cm_sidr_rep *rep, uint64_t now_us);

/**
 * Give up a connection as Linux's cm_destroy_id() does: in REQ_SENT or
 * MRA_REQ_RCVD a REJ "timeout" is sent; in REQ_RCVD, MRA_REQ_SENT,
 * REP_RCVD, MRA_REP_SENT a REJ "consumer defined"; in REP_SENT or
 * MRA_REP_RCVD a REJ "consumer defined"; ESTABLISHED a DREQ (sent once,
 * not retried); DREQ_RCVD a DREP; SIDR_REQ_RCVD a SIDR_REP "reject". A
 * connection leaving for TimeWait keeps its slot and comm ID until the
 * TimeWait ends, without events. The handle is invalid afterwards.
 *
 * @return 0 or -ENOENT.
 */
int cm_conn_destroy(struct cm_agent *a, cm_conn_t conn, uint64_t now_us);

/** Change the cookie of @p conn (e.g. the new rdma_cm id of a passive connection). */
int cm_conn_set_cookie(struct cm_agent *a, cm_conn_t conn, uint64_t cookie);

/** What cm_conn_query() reports. */
struct cm_conn_info {
	enum cm_state state;
	uint64_t cookie;
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint64_t remote_ca_guid;
	uint32_t local_qpn;
	uint32_t remote_qpn;
	uint64_t service_id;
	bool active;             /**< this side sent the REQ / SIDR_REQ */
	struct cm_path path;     /**< where its messages go */
};

/** Report @p conn. @return 0 or -ENOENT. */
int cm_conn_query(const struct cm_agent *a, cm_conn_t conn, struct cm_conn_info *info);

/**
 * Agent counters: X(symbol, name, description). Names are stable (the
 * daemon publishes them as "cm_" + name).
 */
#define CM_CTR_LIST(X) \
	X(TX_REQ, "tx_req", "REQs sent (first transmissions)") \
	X(TX_MRA, "tx_mra", "MRAs sent") \
	X(TX_REJ, "tx_rej", "REJs sent") \
	X(TX_REP, "tx_rep", "REPs sent (first transmissions)") \
	X(TX_RTU, "tx_rtu", "RTUs sent") \
	X(TX_DREQ, "tx_dreq", "DREQs sent (first transmissions)") \
	X(TX_DREP, "tx_drep", "DREPs sent") \
	X(TX_SIDR_REQ, "tx_sidr_req", "SIDR_REQs sent (first transmissions)") \
	X(TX_SIDR_REP, "tx_sidr_rep", "SIDR_REPs sent") \
	X(TX_CPI, "tx_class_port_info", "ClassPortInfo GetResps sent") \
	X(RX_REQ, "rx_req", "REQs received (well formed)") \
	X(RX_MRA, "rx_mra", "MRAs received") \
	X(RX_REJ, "rx_rej", "REJs received") \
	X(RX_REP, "rx_rep", "REPs received") \
	X(RX_RTU, "rx_rtu", "RTUs received") \
	X(RX_DREQ, "rx_dreq", "DREQs received") \
	X(RX_DREP, "rx_drep", "DREPs received") \
	X(RX_SIDR_REQ, "rx_sidr_req", "SIDR_REQs received") \
	X(RX_SIDR_REP, "rx_sidr_rep", "SIDR_REPs received") \
	X(RX_CPI, "rx_class_port_info", "ClassPortInfo MADs received") \
	X(RETRY_REQ, "retry_req", "REQ retransmissions") \
	X(RETRY_REP, "retry_rep", "REP retransmissions") \
	X(RETRY_DREQ, "retry_dreq", "DREQ retransmissions") \
	X(RETRY_SIDR_REQ, "retry_sidr_req", "SIDR_REQ retransmissions") \
	X(DUP_REQ, "dup_req", "duplicate REQs (answered with MRA/REP/REJ or dropped)") \
	X(DUP_REP, "dup_rep", "duplicate REPs (answered with RTU/MRA or dropped)") \
	X(DUP_RTU, "dup_rtu", "RTUs for a connection past REP_SENT") \
	X(DUP_MRA, "dup_mra", "MRAs in a state that takes none") \
	X(DUP_DREQ, "dup_dreq", "duplicate DREQs (answered with DREP in TimeWait)") \
	X(DUP_DREP, "dup_drep", "DREPs in a state that takes none") \
	X(DUP_REJ, "dup_rej", "REJs in a state that takes none") \
	X(DUP_SIDR_REQ, "dup_sidr_req", "duplicate SIDR_REQs (dropped)") \
	X(DUP_SIDR_REP, "dup_sidr_rep", "SIDR_REPs for no pending SIDR_REQ") \
	X(NO_CONN, "no_conn", "REP/RTU/MRA/REJ/DREP/DREQ for no known connection (dropped; DREQ answered)") \
	X(REJ_TX_INVALID_SID, "rej_tx_invalid_service_id", "REQs for a service nobody listens on (REJ 8)") \
	X(REJ_TX_STALE, "rej_tx_stale_conn", "REQs/REPs for a stale connection (REJ 10)") \
	X(REJ_TX_NO_RES, "rej_tx_no_resources", "REQs refused: no free connection slot (REJ 3)") \
	X(REJ_TX_TIMEOUT, "rej_tx_timeout", "REJ timeout sent (REQ given up)") \
	X(REJ_TX_CONSUMER, "rej_tx_consumer", "REJs sent by the consumer or on destroy") \
	X(SIDR_NO_LISTENER, "sidr_tx_unsupported", "SIDR_REQs for a service nobody listens on") \
	X(SIDR_NO_RES, "sidr_drop_no_resources", "SIDR_REQs dropped: no free connection slot") \
	X(TIMEOUT_REQ, "timeout_req", "REQs given up after the max CM retries") \
	X(TIMEOUT_REP, "timeout_rep", "REPs given up after the max CM retries") \
	X(TIMEOUT_DREQ, "timeout_dreq", "DREQs given up after the max CM retries") \
	X(TIMEOUT_SIDR_REQ, "timeout_sidr_req", "SIDR_REQs given up after the max CM retries") \
	X(PEER_ABANDONED, "peer_abandoned", "unanswered passive REQs released after the peer gave up") \
	X(ESTABLISHED, "established", "connections that reached ESTABLISHED") \
	X(TIMEWAIT_ENTER, "timewait_enter", "connections that entered TimeWait") \
	X(TIMEWAIT_EXIT, "timewait_exit", "TimeWaits that ended") \
	X(SEND_ERRORS, "send_errors", "MADs the send callback refused") \
	X(MALFORMED_TRUNCATED, "malformed_truncated", "MADs shorter than 256 bytes") \
	X(MALFORMED_BASE_VERSION, "malformed_base_version", "MADs of base version other than 1") \
	X(MALFORMED_CLASS, "malformed_class", "MADs of another management class") \
	X(MALFORMED_CLASS_VERSION, "malformed_class_version", "CM MADs of class version other than 2") \
	X(MALFORMED_METHOD, "malformed_method", "CM MADs of an unexpected method") \
	X(MALFORMED_STATUS, "malformed_status", "CM Sends with a non-zero status") \
	X(MALFORMED_ATTR_UNKNOWN, "malformed_attr_unknown", "CM MADs of an unknown attribute") \
	X(MALFORMED_ATTR_UNSUPPORTED, "malformed_attr_unsupported", "LAP/APR (not supported)") \
	X(MALFORMED_FIELD, "malformed_field", "CM MADs with a reserved or out-of-range field value")

/** Counter indexes. */
enum cm_ctr {
#define CM_CTR_ENUM(sym, name, desc) CM_CTR_##sym,
	CM_CTR_LIST(CM_CTR_ENUM)
#undef CM_CTR_ENUM
	CM_CTR_COUNT
};

/** Name of counter @p c (NULL if out of range). */
const char *cm_ctr_name(int c);

/** The agent's counters, CM_CTR_COUNT of them, indexed by enum cm_ctr (live, read-only). */
const uint64_t *cm_agent_counters(const struct cm_agent *a);

/** Connection slots in use (live, pending and TimeWait). */
uint32_t cm_agent_conns_in_use(const struct cm_agent *a);
/** @} */

#ifdef __cplusplus
}
#endif

#endif /* CM_H */
