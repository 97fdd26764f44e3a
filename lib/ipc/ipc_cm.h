/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * lib/ipc: the rdma_cm part of the protocol between the librdmacm shim
 * (drivers/rdmacm-shim, a drop-in librdmacm.so.1) and roce-daemon. Included
 * by ipc.h, whose IPC_OPS lists these operations (numbers 60-99) through
 * IPC_CM_OPS; framing, validation and ownership are those of ipc.h.
 *
 * The model is the kernel's ucma ABI (<rdma/rdma_user_cm.h>): the same
 * commands, the same event record, the same values for every enum that
 * crosses (enum rdma_cm_event_type, RDMA_PS_*, RDMA_OPTION_*, enum
 * ibv_qp_state/ibv_qp_type, IB CM reject reasons), so the shim can
 * translate field by field as librdmacm does with the kernel's answers.
 *
 * @par Connections and ownership
 * CM commands travel on a connection that opened a device (OPEN_DEVICE or
 * IMPORT_DEVICE; before that: ENODEV, as every verbs op). The rdma_cm ids and
 * event channels a command creates belong to that connection's group and
 * die with it, like every other object: a group that goes away (the
 * process died) has its connected ids disconnected on the wire (DREQ), its
 * half-open ones rejected (REJ) and its listeners removed. An id is not tied
 * to the device of its connection: bind and resolve_addr choose the device
 * by address; QUERY reports which one (@c node_guid, @c dev_name). A handle
 * of another group is EINVAL. Recommended for the shim: open the device
 * with ibv_open_device() (our verbs shim), then IMPORT_DEVICE on its
 * context->cmd_fd to get a connection of its own in the same group for the
 * CM commands (a lock-free command socket, and the QPs the application
 * creates on id->verbs are in the group).
 *
 * @par QPs
 * CONNECT and ACCEPT name the QP by number (conn.qp_num) as the kernel ABI
 * does. The daemon checks it: a QP with that QPN must exist on the id's
 * device, of the id's QP type (RC/UC for RDMA_PS_TCP/IB, UD for RDMA_PS_UDP),
 * owned by a connection group whose peer is the same process (SO_PEERCRED
 * pid) as the sender; else EINVAL. The daemon's CM never modifies the QP:
 * as librdmacm does, the shim walks it INIT/RTR/RTS with ibv_modify_qp()
 * and the attributes INIT_QP_ATTR returns (the CM chooses the starting PSN
 * and reports it there as rq_psn/sq_psn; conn has no PSN field).
 *
 * @par Event channels: how events reach the application
 * An event channel is a SOCK_SEQPACKET socket pair the shim makes; it sends
 * one end with CM_CREATE_CHANNEL (fd 0) and keeps the other as
 * rdma_event_channel->fd. The daemon only writes on its end (it shuts its
 * receive side down: a write by the application fails with EPIPE): each
 * datagram is exactly one struct ipc_cm_event, no ipc_hdr, nothing else.
 * So:
 *  - the fd is readable (poll/epoll) exactly while an event is pending;
 *  - rdma_get_cm_event() is one recv() of sizeof(struct ipc_cm_event) bytes
 *    (blocking or not as the application set the fd: O_NONBLOCK gives
 *    EAGAIN when none is pending); there is no GET_EVENT command;
 *  - commands and answers never share a socket with events: commands go
 *    over the group's command connection (ipc_call()), events only over
 *    the channel's socket.
 * The daemon never blocks on a channel: when the socket is full it keeps
 * up to IPC_CM_EVENT_BACKLOG further events per channel in its own memory
 * and sends them as room appears, in order; beyond that it drops the event
 * and counts it (a listener's CONNECT_REQUEST beyond its backlog, or when
 * the channel is full, is rejected on the wire instead, as the kernel's
 * ucma does when its backlog is exhausted). Events are ordered per id as
 * the kernel orders them.
 * CM_DESTROY_CHANNEL (rdma_destroy_event_channel) destroys the ids still
 * on the channel, as closing the kernel's rdma_cm file does; the shim
 * closes its end afterwards. A channel whose socket the application closed
 * is noticed at the next event (EPIPE): it is destroyed the same way.
 *
 * @par Events and acknowledgement
 * ucma counts the events it reported per id and DESTROY_ID/MIGRATE_ID
 * return that count so librdmacm can wait until the application
 * acknowledged (rdma_ack_cm_event) as many; ipc_cm_destroy_rsp does the
 * same. A CONNECT_REQUEST event creates the new id on the listener's
 * channel: @c id is the new id's handle, @c uid the listener's cookie (as
 * the kernel does). The new id's own cookie is 0 until ACCEPT sets it
 * (its @c uid); as ucma does, events of such an id before that (the peer
 * gave up before the application accepted) are not reported.
 *
 * @par Migration
 * rdma_migrate_id moves the id's events not yet read to the new channel,
 * after the events already there, as ucma_migrate_id() does (a listener's
 * CONNECT_REQUESTs are the listener's). Those still in the daemon's backlog
 * it moves itself; those written to the old channel's socket only the
 * application's end can take out. So the daemon bounds how many unread
 * events a channel's socket can hold (SO_SNDBUF on its end) and keeps a
 * copy of that many last written ones. CM_MIGRATE_ID names the old
 * channel and the seq of the last event the caller read from it: when no
 * later event of the id was written there, the id moves at once; else
 * the answer is @c pending, the old channel is paused (later events wait
 * in its backlog), the caller reads the old socket dry and sends
 * CM_MIGRATE_COMMIT: the daemon queues the id's events of those it copied
 * on the new channel, the others again at the head of the old channel,
 * in their order, and resumes it. A client that never commits stalls only
 * its own channel.
 *
 * @par Addresses
 * struct ipc_cm_addr carries AF_INET or AF_INET6 (AF_IB: EAFNOSUPPORT), the
 * port and the address in network byte order, as a sockaddr would.
 *
 * @par Status values in events
 * As the kernel: 0, or a negative errno for ADDR_ERROR, ROUTE_ERROR,
 * CONNECT_ERROR, UNREACHABLE (-ETIMEDOUT when retries ran out; ADDR_ERROR
 * -ENODEV when no GID of ours has the source, -EHOSTUNREACH/-ETIMEDOUT
 * when ARP/ND gives no answer in time), and for REJECTED the IB CM reject
 * reason (positive: 8 invalid service ID, 28 consumer reject, ...).
 *
 * @par Multicast
 * JOIN_MCAST (rdma_join_multicast) answers the join's handle and reports
 * RDMA_CM_EVENT_MULTICAST_JOIN on the id (uid and id: the id's) with the
 * group's address vector in ud_ah (dgid = the MGID: an IPv4 group as
 * ::ffff:a.b.c.d, an IPv6 group as itself), param.qp_num 0xFFFFFF and
 * param.qkey 0x01234567; the shim attaches the id's QP when it reads the
 * event (not for RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER). LEAVE_MCAST takes
 * the join's handle as its id. Errors: EINVAL (an id not bound to a device,
 * not UD, not a multicast address, bad flags), EADDRINUSE (the id joined
 * that group already), ENOMEM (too many joins: CTL_MCAST_CM_MAX in all,
 * CTL_MCAST_CM_PER_CLIENT or the client's max_mcast_attach per client).
 */
#ifndef IPC_CM_H
#define IPC_CM_H

#include <stdint.h>

/* Included by ipc.h after its shared records (struct ipc_ah_attr, ipc_qp_attr, ...). */

#define IPC_CM_PRIVATE_DATA_MAX 256u /**< as RDMA_MAX_PRIVATE_DATA; the wire bounds per message */
#define IPC_CM_OPTVAL_MAX 128u       /**< SET/GET_OPTION value bytes */
#define IPC_CM_EVENT_BACKLOG 256u    /**< events the daemon holds per channel beyond the socket */
#define IPC_CM_BACKLOG_MAX 1024u     /**< LISTEN backlog bound (0 and larger values: this) */

/**
 * A socket address (sockaddr_in/sockaddr_in6 in fixed width). family 0 in
 * an optional field means "none" (RESOLVE_ADDR without a source).
 */
struct ipc_cm_addr {
	uint16_t family;    /**< AF_INET, AF_INET6, or 0 */
	uint16_t port;      /**< network byte order */
	uint32_t flowinfo;  /**< IPv6 only, network byte order */
	uint8_t addr[16];   /**< IPv4: first 4 bytes; network byte order */
	uint32_t scope_id;  /**< IPv6 link-local: interface index */
	uint32_t pad;
};

/**
 * Connection parameters (struct rdma_conn_param / rdma_ucm_conn_param).
 * In CONNECT/ACCEPT: the application's; in events: the peer's (REQ/REP
 * fields), private data with the rdma_cm IP header already stripped on
 * CONNECT_REQUEST, as the kernel delivers it.
 */
struct ipc_cm_conn_param {
	uint32_t qp_num;          /**< the QP (CONNECT/ACCEPT: checked, see "QPs") */
	uint32_t qkey;            /**< UD ids */
	uint8_t private_data[IPC_CM_PRIVATE_DATA_MAX];
	uint8_t private_data_len;
	uint8_t srq;
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t flow_control;
	uint8_t retry_count;      /**< 0-7 */
	uint8_t rnr_retry_count;  /**< 0-7 */
	uint8_t valid;            /**< ACCEPT on the active side: 0 = no parameters */
};

/** The kernel's ECE (enhanced connection establishment) pair; we report zeros. */
struct ipc_cm_ece {
	uint32_t vendor_id;
	uint32_t attr_mod;
};

/**
 * One event, as the daemon writes it on a channel socket (one datagram
 * each). Mirrors struct rdma_ucm_event_resp: @c param is the conn
 * parameters, @c ud the UD parameters (RDMA_PS_UDP: SIDR and
 * ESTABLISHED carry the peer's QPN/Q_Key in param and its address in
 * ud_ah), both fixed-width and always present.
 */
struct ipc_cm_event {
	uint64_t uid;             /**< the id's cookie (CONNECT_REQUEST: the listener's) */
	uint32_t id;              /**< the id's handle (CONNECT_REQUEST: the new id) */
	uint32_t event;           /**< enum rdma_cm_event_type */
	int32_t status;           /**< see "Status values in events" */
	uint32_t seq;             /**< per-channel event number from 1 (diagnostics) */
	struct ipc_cm_conn_param param;
	struct ipc_ah_attr ud_ah; /**< UD: address of the peer; else zero */
	struct ipc_cm_ece ece;
};

/** @name Request and response bodies @{ */

/**
 * CM_CREATE_CHANNEL: fd 0 is the daemon's end of a SOCK_SEQPACKET pair.
 * Answer: ipc_create_rsp (handle).
 */
struct ipc_cm_create_channel_req { uint64_t user_handle; };

/** CM_CREATE_ID (rdma_create_id). Answer: ipc_create_rsp (handle). */
struct ipc_cm_create_id_req {
	uint64_t uid;       /**< the application's cookie, echoed in events */
	uint32_t channel;   /**< event channel handle */
	uint16_t ps;        /**< RDMA_PS_TCP, RDMA_PS_UDP or RDMA_PS_IB */
	uint8_t qp_type;    /**< IBV_QPT_RC, IBV_QPT_UC or IBV_QPT_UD */
	uint8_t pad;
};

/** CM_DESTROY_ID answer: events reported for the id so far. */
struct ipc_cm_destroy_rsp { uint32_t events_reported; uint32_t pad; };

/**
 * CM_BIND (rdma_bind_addr): address of ours (a GID's IP of one of our
 * devices) or the wildcard; port 0 picks a free one. EADDRNOTAVAIL, or
 * EADDRINUSE (without REUSEADDR on both / port taken by a listener).
 */
struct ipc_cm_bind_req { uint32_t id; uint32_t pad; struct ipc_cm_addr addr; };

/**
 * CM_RESOLVE_ADDR (rdma_resolve_addr): @c src optional (family 0); an
 * unbound id is bound as by BIND. The answer only says the request was
 * taken; ADDR_RESOLVED or ADDR_ERROR follows on the channel within
 * timeout_ms.
 */
struct ipc_cm_resolve_addr_req {
	uint32_t id;
	uint32_t timeout_ms;
	struct ipc_cm_addr src;
	struct ipc_cm_addr dst;
};

/** CM_RESOLVE_ROUTE: ROUTE_RESOLVED or ROUTE_ERROR follows (the path is built locally). */
struct ipc_cm_resolve_route_req { uint32_t id; uint32_t timeout_ms; };

/** Generic "an id" request (CM_DESTROY_ID, CM_DISCONNECT, CM_QUERY...). */
struct ipc_cm_id_req { uint32_t id; uint32_t arg; };

/**
 * A path record (struct ibv_sa_path_rec in fixed width), as RoCE builds it
 * locally: GIDs, MTU of the port, hop limit, traffic class and SL from TOS.
 */
struct ipc_cm_path {
	uint8_t dgid[16];
	uint8_t sgid[16];
	uint16_t dlid;            /**< network byte order, as ibv_sa_path_rec */
	uint16_t slid;
	uint32_t flow_label;      /**< network byte order */
	uint16_t pkey;            /**< network byte order */
	uint8_t raw_traffic;
	uint8_t reversible;
	uint8_t numb_path;
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint8_t sl;
	uint8_t mtu_selector;
	uint8_t mtu;              /**< enum ibv_mtu */
	uint8_t rate_selector;
	uint8_t rate;
	uint8_t packet_life_time_selector;
	uint8_t packet_life_time;
	uint8_t preference;
	uint8_t pad;
};

/**
 * CM_QUERY (rdma_cm ucma QUERY addr/path/gid in one): everything the daemon
 * knows of an id. Request: ipc_cm_id_req (arg unused).
 */
struct ipc_cm_query_rsp {
	uint64_t node_guid;       /**< of the bound device (network byte order); 0: unbound */
	char dev_name[IPC_NAME_LEN]; /**< the bound device; "" while unbound */
	struct ipc_cm_addr src;
	struct ipc_cm_addr dst;
	uint8_t sgid[16];
	uint8_t dgid[16];
	uint16_t pkey;
	uint8_t port_num;         /**< 0 while unbound */
	uint8_t num_paths;        /**< 0 until ROUTE_RESOLVED (or a connection's path) */
	uint16_t ps;
	uint8_t qp_type;
	uint8_t state;            /**< the daemon's id state (diagnostics) */
	struct ipc_cm_path path;
};

/** CM_LISTEN (rdma_listen): backlog 0 or > IPC_CM_BACKLOG_MAX means IPC_CM_BACKLOG_MAX. */
struct ipc_cm_listen_req { uint32_t id; uint32_t backlog; };

/** CM_CONNECT (rdma_connect): route resolved, QP checked (see "QPs"). */
struct ipc_cm_connect_req {
	uint32_t id;
	uint32_t pad;
	struct ipc_cm_conn_param conn;
	struct ipc_cm_ece ece;
};

/**
 * CM_ACCEPT: on the passive side rdma_accept (REP; UD: SIDR_REP); on the
 * active side, after CONNECT_RESPONSE, the RTU (librdmacm's completion;
 * conn.valid 0). @c uid replaces the id's cookie when not 0.
 */
struct ipc_cm_accept_req {
	uint64_t uid;
	uint32_t id;
	uint32_t pad;
	struct ipc_cm_conn_param conn;
	struct ipc_cm_ece ece;
};

/** CM_REJECT (rdma_reject / rdma_reject_ece): REJ with reason (0: consumer reject, 28). */
struct ipc_cm_reject_req {
	uint32_t id;
	uint8_t reason;
	uint8_t private_data_len;
	uint16_t pad;
	uint8_t private_data[IPC_CM_PRIVATE_DATA_MAX];
};

/** CM_INIT_QP_ATTR: request ipc_cm_id_req with arg = the target enum ibv_qp_state. */
struct ipc_cm_init_qp_attr_rsp {
	uint32_t mask;            /**< IBV_QP_* bits valid in attr */
	uint32_t pad;
	struct ipc_qp_attr attr;
};

/** CM_SET_OPTION (rdma_set_option). RDMA_OPTION_ID_{TOS,REUSEADDR,AFONLY,ACK_TIMEOUT}. */
struct ipc_cm_option_req {
	uint32_t id;
	uint32_t level;           /**< RDMA_OPTION_ID or RDMA_OPTION_IB */
	uint32_t optname;
	uint32_t optlen;          /**< bytes valid in optval; > IPC_CM_OPTVAL_MAX: EINVAL */
	uint8_t optval[IPC_CM_OPTVAL_MAX];
};
/** CM_GET_OPTION answer (request: ipc_cm_option_req, optval ignored). */
struct ipc_cm_option_rsp {
	uint32_t optlen;
	uint32_t pad;
	uint8_t optval[IPC_CM_OPTVAL_MAX];
};

/** CM_NOTIFY (rdma_notify): request ipc_cm_id_req with arg = enum ibv_event_type. */
/**
 * CM_MIGRATE_ID and CM_MIGRATE_COMMIT (rdma_migrate_id): see "Migration" above.
 * MIGRATE_ID: @c from must be the id's channel; @c last_seq is the seq of the
 * last event the caller read from it. MIGRATE_COMMIT: the same fields, after
 * the caller read @c from dry.
 */
struct ipc_cm_migrate_req {
	uint32_t id;
	uint32_t channel;         /**< the new channel */
	uint32_t from;            /**< the id's channel */
	uint32_t last_seq;        /**< seq of the last event read from @c from (0: none) */
};
/** CM_MIGRATE_ID / CM_MIGRATE_COMMIT answer. */
struct ipc_cm_migrate_rsp {
	uint32_t events_reported; /**< events reported for the id so far */
	uint32_t seq;             /**< MIGRATE_ID with @c pending: the last seq written on @c from */
	uint8_t pending;          /**< 1: @c from is paused: read it dry, then MIGRATE_COMMIT */
	uint8_t pad[7];
};

/** CM_JOIN_MCAST (rdma_join_multicast(_ex)): see "Multicast" above. Answer: ipc_create_rsp. */
struct ipc_cm_join_mcast_req {
	uint64_t uid;
	uint32_t id;
	uint16_t join_flags;      /**< RDMA_MC_JOIN_FLAG_FULLMEMBER or _SENDONLY_FULLMEMBER */
	uint16_t pad;
	struct ipc_cm_addr addr;
};
/** @} */

/**
 * The rdma_cm operations. IPC_OP(sym, value, request, response, fds in request, fds
 * in response), as IPC_OPS in ipc.h, which includes this list.
 */
#define IPC_CM_OPS(IPC_OP)                                                                  \
	IPC_OP(CM_CREATE_CHANNEL, 60, ipc_cm_create_channel_req, ipc_create_rsp,           1, 0) \
	IPC_OP(CM_DESTROY_CHANNEL,61, ipc_handle_req,            ipc_empty,                0, 0) \
	IPC_OP(CM_CREATE_ID,      62, ipc_cm_create_id_req,      ipc_create_rsp,           0, 0) \
	IPC_OP(CM_DESTROY_ID,     63, ipc_cm_id_req,             ipc_cm_destroy_rsp,       0, 0) \
	IPC_OP(CM_BIND,           64, ipc_cm_bind_req,           ipc_empty,                0, 0) \
	IPC_OP(CM_RESOLVE_ADDR,   65, ipc_cm_resolve_addr_req,   ipc_empty,                0, 0) \
	IPC_OP(CM_RESOLVE_ROUTE,  66, ipc_cm_resolve_route_req,  ipc_empty,                0, 0) \
	IPC_OP(CM_QUERY,          67, ipc_cm_id_req,             ipc_cm_query_rsp,         0, 0) \
	IPC_OP(CM_LISTEN,         68, ipc_cm_listen_req,         ipc_empty,                0, 0) \
	IPC_OP(CM_CONNECT,        69, ipc_cm_connect_req,        ipc_empty,                0, 0) \
	IPC_OP(CM_ACCEPT,         70, ipc_cm_accept_req,         ipc_empty,                0, 0) \
	IPC_OP(CM_REJECT,         71, ipc_cm_reject_req,         ipc_empty,                0, 0) \
	IPC_OP(CM_DISCONNECT,     72, ipc_cm_id_req,             ipc_empty,                0, 0) \
	IPC_OP(CM_INIT_QP_ATTR,   73, ipc_cm_id_req,             ipc_cm_init_qp_attr_rsp,  0, 0) \
	IPC_OP(CM_SET_OPTION,     74, ipc_cm_option_req,         ipc_empty,                0, 0) \
	IPC_OP(CM_GET_OPTION,     75, ipc_cm_option_req,         ipc_cm_option_rsp,        0, 0) \
	IPC_OP(CM_NOTIFY,         76, ipc_cm_id_req,             ipc_empty,                0, 0) \
	IPC_OP(CM_MIGRATE_ID,     77, ipc_cm_migrate_req,        ipc_cm_migrate_rsp,       0, 0) \
	IPC_OP(CM_JOIN_MCAST,     78, ipc_cm_join_mcast_req,     ipc_create_rsp,           0, 0) \
	IPC_OP(CM_LEAVE_MCAST,    79, ipc_cm_id_req,             ipc_cm_destroy_rsp,       0, 0) \
	IPC_OP(CM_MIGRATE_COMMIT, 80, ipc_cm_migrate_req,        ipc_cm_migrate_rsp,       0, 0)

#endif /* IPC_CM_H */
