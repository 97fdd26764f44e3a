/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * drivers/rdmacm-shim internals: a drop-in librdmacm.so.1 over roce-daemon.
 *
 * The library mirrors rdma-core's librdmacm: the public objects
 * (rdma_event_channel, rdma_cm_id, rdma_cm_event) are the first member of
 * private ones; the daemon's connection manager plays the part of the
 * kernel's rdma_ucm (ids, addresses, CM MADs, events) and this library does
 * what librdmacm does in user space: devices and their default PD, QPs and
 * their INIT/RTR/RTS walk with ibv_modify_qp, the synchronous API, event
 * accounting.
 *
 * Layers, downward only:
 *   api (id.c, qp.c, ep.c, addrinfo.c, channel.c)
 *     -> device.c (ibv_context per daemon device, over our libibverbs)
 *     -> transport (transport.c: lib/ipc, ipc_cm.h)
 */
#ifndef RCM_H
#define RCM_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#define RCM_EXPORT __attribute__((visibility("default")))

/* IBTA private data limits (CM message formats; the rdma_cm IP header of
 * 36 bytes is taken from REQ's 92 by the CM for RDMA_PS_TCP/UDP). */
#define RCM_REQ_PRIVATE_DATA 92u
#define RCM_REP_PRIVATE_DATA 196u
#define RCM_REJ_PRIVATE_DATA 148u
#define RCM_DREQ_PRIVATE_DATA 220u
#define RCM_SIDR_REQ_PRIVATE_DATA 216u
#define RCM_SIDR_REP_PRIVATE_DATA 136u
#define RCM_IP_HDR 36u
#define RCM_MAX_PRIVATE_DATA 256u /* room in one event for any message's data */

/** Set errno and return -1 (librdmacm's ERR()). */
static inline int rcm_err(int e)
{
	errno = e;
	return -1;
}

/** A verbs return code (0 or a positive errno) as the rdma_* convention. */
static inline int rcm_seterrno(int rc)
{
	return rc ? rcm_err(rc) : 0;
}

/* ---- device.c ---- */
struct rcm_device {
	struct ibv_device *dev;
	struct ibv_context *verbs;    /* opened on first use, kept for the process */
	struct ibv_pd *pd;            /* default PD of ids on this device */
	uint64_t guid;                /* node GUID, network order */
	uint32_t refcnt;              /* ids using pd */
	uint8_t port_cnt;
	uint8_t max_initiator_depth;
	uint8_t max_responder_resources;
	uint32_t max_qpsize;
	uint8_t link_layer[4];        /* per port (1-based index - 1) */
};

/*
 * Make sure the daemon has devices (librdmacm's ucma_init).
 * @return 0, or -1 with errno ENODEV (no daemon or no device)
 */
int rcm_init(void);
/*
 * The device whose node GUID is @p guid (network order), opened, with a
 * reference on its default PD. @return the device, or NULL with errno set.
 */
struct rcm_device *rcm_device_get(uint64_t guid);
/* Drop a reference taken by rcm_device_get(). */
void rcm_device_put(struct rcm_device *d);
/* The first device, opened (the command connection is imported from it); NULL, errno set. */
struct ibv_context *rcm_any_context(void);
/* The device behind an open context, or NULL. */
struct rcm_device *rcm_device_of(struct ibv_context *verbs);

/* ---- transport.c: the daemon's CM (what the kernel's rdma_ucm is to librdmacm) ---- */
struct rcm_tp;

/* Connection parameters in a request (connect/accept) or an event. */
struct rcm_conn {
	uint32_t qp_num;
	uint32_t qkey;                /* UD events */
	uint8_t srq;
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t flow_control;
	uint8_t retry_count;
	uint8_t rnr_retry_count;
	uint8_t private_data_len;
	uint8_t valid;
	uint8_t private_data[RCM_MAX_PRIVATE_DATA];
	struct ibv_ah_attr ah_attr;   /* UD events */
	uint32_t ece_vendor_id;
	uint32_t ece_options;
};

/* What an id is bound/resolved to (librdmacm's query of ADDR/ROUTE/GID). */
struct rcm_route_info {
	struct sockaddr_storage src;
	struct sockaddr_storage dst;
	union ibv_gid sgid;
	union ibv_gid dgid;
	uint16_t pkey;                /* network order */
	uint64_t node_guid;           /* network order; 0: no device yet */
	uint8_t port_num;
	uint32_t num_paths;
	struct ibv_sa_path_rec path;  /* valid when num_paths > 0 */
};

/* One event read from a channel. */
struct rcm_tp_event {
	uint64_t uid;                 /* the id's cookie (the listener's for CONNECT_REQUEST) */
	uint32_t id;                  /* daemon handle of the id; the new id for CONNECT_REQUEST */
	uint32_t seq;                 /* the channel's event number */
	uint32_t event;               /* enum rdma_cm_event_type */
	int32_t status;
	struct rcm_conn param;
};

/* Open/close a channel's daemon connection; @p fd receives the pollable fd. */
int rcm_tp_open(struct rcm_tp **tp, int *fd);
void rcm_tp_close(struct rcm_tp *tp);
/*
 * Requests. Each returns 0 or a positive errno (the daemon's, or
 * ECONNREFUSED/EIO when it cannot be reached).
 */
int rcm_tp_create_id(struct rcm_tp *tp, uint64_t uid, enum rdma_port_space ps,
		     enum ibv_qp_type qp_type, uint32_t *handle);
int rcm_tp_destroy_id(struct rcm_tp *tp, uint32_t handle, uint32_t *events_reported);
/* JOIN_MCAST / LEAVE_MCAST: the daemon's handle of the membership in @p mc_handle. */
int rcm_tp_join_mcast(struct rcm_tp *tp, uint32_t handle, const struct sockaddr *addr,
		      uint16_t join_flags, uint32_t *mc_handle);
int rcm_tp_leave_mcast(struct rcm_tp *tp, uint32_t mc_handle);
int rcm_tp_bind(struct rcm_tp *tp, uint32_t handle, const struct sockaddr *addr, socklen_t len);
int rcm_tp_resolve_addr(struct rcm_tp *tp, uint32_t handle, const struct sockaddr *src,
			socklen_t src_len, const struct sockaddr *dst, socklen_t dst_len,
			int timeout_ms);
int rcm_tp_resolve_route(struct rcm_tp *tp, uint32_t handle, int timeout_ms);
int rcm_tp_query_route(struct rcm_tp *tp, uint32_t handle, struct rcm_route_info *ri);
int rcm_tp_listen(struct rcm_tp *tp, uint32_t handle, int backlog);
int rcm_tp_connect(struct rcm_tp *tp, uint32_t handle, const struct rcm_conn *c);
/* ACCEPT: passive side (with @p c) or the active side's RTU (@p c NULL). */
int rcm_tp_accept(struct rcm_tp *tp, uint32_t handle, uint64_t uid, const struct rcm_conn *c);
int rcm_tp_reject(struct rcm_tp *tp, uint32_t handle, const void *data, uint8_t len,
		  uint8_t reason);
int rcm_tp_disconnect(struct rcm_tp *tp, uint32_t handle);
int rcm_tp_notify(struct rcm_tp *tp, uint32_t handle, uint32_t event);
int rcm_tp_init_qp_attr(struct rcm_tp *tp, uint32_t handle, struct ibv_qp_attr *attr,
			int *mask);
int rcm_tp_set_option(struct rcm_tp *tp, uint32_t handle, int level, int optname,
		      const void *optval, size_t optlen);
/*
 * MIGRATE_ID: move @p handle from channel @p from (its socket @p from_fd)
 * to @p to, with the events of it not yet read: @p last_seq is the seq of
 * the last event read from @p from. The caller holds @p from's read lock.
 * When some are still in the socket it reads the socket dry and commits
 * (ipc_cm.h "Migration").
 */
int rcm_tp_migrate(struct rcm_tp *to, struct rcm_tp *from, int from_fd, uint32_t handle,
		   uint32_t last_seq);
/*
 * Wait until an event waits on @p fd, without taking it; returns at once
 * when the fd is O_NONBLOCK. @return 0, EAGAIN, or EIO (the daemon went
 * away); a channel destroyed under the caller leaves it waiting.
 */
int rcm_tp_wait_event(int fd);
/* Take the next event, never blocking. @return 0, EAGAIN, EPIPE (end of file) or an errno. */
int rcm_tp_get_event(int fd, struct rcm_tp_event *ev);

/* ---- channel.c ---- */
struct rcm_channel {
	struct rdma_event_channel ch; /* must be first: the application sees ch.fd */
	struct rcm_tp *tp;
	pthread_mutex_t rd_lock;      /* taking an event, and migrating an id away */
	uint32_t last_seq;            /* seq of the last event taken (under rd_lock) */
};
static inline struct rcm_channel *rcm_channel(struct rdma_event_channel *c)
{
	return (struct rcm_channel *)c;
}
static inline struct rcm_tp *rcm_tp_of(struct rdma_cm_id *id)
{
	return rcm_channel(id->channel)->tp;
}

/* ---- id.c ---- */
struct rcm_id {
	struct rdma_cm_id id;         /* must be first */
	uint32_t handle;              /* the daemon's */
	bool sync;                    /* channel created for this id (no channel given) */
	bool connect_error;
	struct rcm_device *dev;
	pthread_mutex_t mut;
	pthread_cond_t cond;
	uint32_t events_delivered;    /* events of this id read from a channel (under the registry lock) */
	uint32_t events_completed;    /* of those, acked or consumed by the library */
	struct rcm_id *hnext;         /* registry chain */
	uint8_t initiator_depth;
	uint8_t responder_resources;
	uint8_t connect_len;          /* rdma_create_ep's ai_connect, sent with rdma_connect */
	void *connect;
	struct ibv_qp_init_attr *qp_init_attr; /* passive rdma_create_ep: for rdma_get_request */
	struct ibv_sa_path_rec path;  /* route.path_rec points here */
	struct ibv_ece local_ece;
	struct ibv_ece remote_ece;
	struct rcm_mc *mc_list;       /* multicast joins (mcast.c), under mut */
};
static inline struct rcm_id *rcm_id(struct rdma_cm_id *id)
{
	return (struct rcm_id *)id;
}

/* An event handed to the application. */
struct rcm_event {
	struct rdma_cm_event event;   /* must be first */
	struct rcm_id *id_priv;       /* whose events_completed the ack counts */
	uint8_t private_data[RCM_MAX_PRIVATE_DATA];
};

/*
 * The registry of live ids. An event already written on a channel socket
 * cannot be taken back when its id is destroyed (the kernel drops such
 * events from its queue), so an event is processed only when it names a
 * live id: rcm_id_hold() looks the id up and counts the event as delivered
 * in one step, and rdma_destroy_id() unregisters the id before it waits
 * for the acks of the events delivered so far; a later event for it is
 * dropped unread. @p handle UINT32_MAX: match the cookie alone
 * (CONNECT_REQUEST names the listener by cookie and the new id by handle).
 */
void rcm_id_register(struct rcm_id *p);
void rcm_id_unregister(struct rcm_id *p);
struct rcm_id *rcm_id_hold(uint64_t uid, uint32_t handle);

struct rcm_id *rcm_id_alloc(struct rdma_event_channel *channel, void *context,
			    enum rdma_port_space ps, enum ibv_qp_type qp_type);
void rcm_id_free(struct rcm_id *p);
int rcm_create_id2(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context,
		   enum rdma_port_space ps, enum ibv_qp_type qp_type);
/* Fill id->route, verbs, pd, port_num from the daemon's view of the id. */
int rcm_query_route(struct rcm_id *p);
/* Synchronous ids: wait for the event the call started (librdmacm's ucma_complete). */
int rcm_complete(struct rcm_id *p);
void rcm_complete_event(struct rcm_id *p);
socklen_t rcm_addrlen(const struct sockaddr *addr);

/* ---- mcast.c ---- */
/* MULTICAST_JOIN: fill the event, attach the id's QP (librdmacm's ucma_process_join). */
void rcm_mc_process_join(struct rcm_event *e, const struct rcm_tp_event *ev, struct rcm_id *p);
/* The id goes: forget its joins (the daemon drops them with the id). */
void rcm_mc_free_all(struct rcm_id *p);

/* ---- qp.c ---- */
int rcm_modify_qp_rtr(struct rcm_id *p, uint8_t resp_res);
int rcm_modify_qp_rts(struct rcm_id *p, uint8_t init_depth);
int rcm_modify_qp_err(struct rcm_id *p);
/* Active side on CONNECT_RESPONSE: RTR, RTS, then the RTU. */
int rcm_process_conn_resp(struct rcm_id *p);

#endif /* RCM_H */
