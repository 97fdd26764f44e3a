/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * lib/ctl: rdma_cm on the control plane (ctl_cm.c). The CM_* operations of
 * lib/ipc (ipc_cm.h) act on rdma_cm ids and event channels, objects of the
 * client's connection group like every other (destroyed with it: a dying
 * client's connections are rejected or disconnected on the wire). One
 * lib/cm agent per control plane runs the IB CM protocol; this file is its
 * consumer, as Linux's cma.c/ucma.c are ib_cm's.
 *
 * The daemon gives the CM its wire through struct ctl_cm_ops: send one MAD
 * to QP1 of a peer, and look up the MAC of a destination (ARP/ND, never
 * waiting). It feeds received GSI MADs to ctl_cm_rx() and calls
 * ctl_cm_tick() from its control loop (lib/cm timers, address resolution
 * deadlines, event channels that were full). All on the control thread.
 *
 * MADs between two of our own GIDs (both ends on this daemon) never reach
 * the daemon's send: they are queued here and delivered at the next tick
 * (lib/cm may not be re-entered from its own send callback).
 */
#ifndef CTL_CM_H
#define CTL_CM_H

#include <stdint.h>

#include "cm.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ctl;

/** How the CM reaches the wire; every call is on the control thread and never blocks. */
struct ctl_cm_ops {
	/**
	 * Send @p mad (CM_MAD_SIZE bytes) as a UD SEND ONLY from QP1 to QP1 of
	 * @p to->remote_gid, from device @p to->port (a device index) and our
	 * GID @p to->local_gid. Resolution of the MAC is the callee's (it may
	 * queue the MAD meanwhile). @return 0 or -errno (counted; lib/cm's
	 * retransmissions cover losses).
	 */
	int (*send_mad)(void *ctx, const struct cm_path *to, const uint8_t *mad);
	/**
	 * The MAC of @p dgid leaving device @p dev (next hop, ARP/ND):
	 * @return 0 with @p mac filled, -EAGAIN while resolving (the CM asks
	 * again at the next tick), -EHOSTUNREACH/-ENETUNREACH when there is no
	 * way (no route, no answer).
	 */
	int (*resolve)(void *ctx, uint32_t dev, const uint8_t dgid[16], uint8_t mac[6]);
	/** IPv4 TTL / IPv6 hop limit of routes from @p dev (0: 64). */
	uint8_t (*hop_limit)(void *ctx, uint32_t dev);
	void *ctx;
};

/** rdma_cm bounds of ctl_create() (0: the default said). */
struct ctl_cm_limits {
	uint32_t max_ids;      /**< rdma_cm ids, all clients; 0: 1024 */
	uint32_t max_channels; /**< event channels; 0: 256 */
	uint32_t max_conns;    /**< lib/cm connection slots; 0: 2 * max_ids */
};

/**
 * A MAD received on QP1 of device @p from->port: run the CM. @p mad is the
 * UD payload (@p len bytes; lib/cm judges the length).
 * @return 0, or the enum cm_malformed reason (> 0) it was dropped for
 */
int ctl_cm_rx(struct ctl *ctl, const struct cm_path *from, const uint8_t *mad, size_t len);

/**
 * Run what is due: lib/cm timers, resolution deadlines, looped-back MADs,
 * events waiting for room on their channel. Bounded work per call.
 * @return items handled (0: idle)
 */
unsigned int ctl_cm_tick(struct ctl *ctl);

/** The lib/cm agent's counters (CM_CTR_COUNT of them, enum cm_ctr), NULL without agent. */
const uint64_t *ctl_cm_counters(const struct ctl *ctl);

/** Counters of the rdma_cm layer itself: X(symbol, name, description). */
#define CTL_CM_CTR_LIST(X) \
	X(EVENTS, "rdma_cm_events", "events written to event channels") \
	X(EVENTS_DROPPED, "rdma_cm_events_dropped", "events lost: the channel was full or closed") \
	X(REQ_BACKLOG, "rdma_cm_req_backlog_rej", "CONNECT_REQUESTs rejected: listener backlog or channel full") \
	X(REQ_NO_LISTENER, "rdma_cm_req_no_listener", "REQs whose service has a listener, but not on that address (REJ consumer defined)") \
	X(REQ_BAD_HDR, "rdma_cm_req_bad_ip_hdr", "REQs/SIDR_REQs without a valid rdma_cm IP header (rejected)") \
	X(LOOPBACK, "rdma_cm_mad_loopback", "MADs between two of our GIDs, delivered internally") \
	X(LOOPBACK_DROPS, "rdma_cm_mad_loopback_drops", "looped-back MADs dropped: queue full") \
	X(SEND_ERRORS, "rdma_cm_mad_send_errors", "MADs the daemon could not send") \
	X(MCAST_JOINS, "rdma_cm_mcast_joins", "multicast joins (rdma_join_multicast)") \
	X(MCAST_REFUSED, "rdma_cm_mcast_refused", \
	  "multicast joins refused: too many (ENOMEM) or the id joined the group already")

/** Indexes of ctl_cm_stats(). */
enum ctl_cm_ctr {
#define CTL_CM_CTR_ENUM(sym, name, desc) CTL_CM_CTR_##sym,
	CTL_CM_CTR_LIST(CTL_CM_CTR_ENUM)
#undef CTL_CM_CTR_ENUM
	CTL_CM_CTR_COUNT
};

/** The rdma_cm layer's counters (CTL_CM_CTR_COUNT of them). */
const uint64_t *ctl_cm_stats(const struct ctl *ctl);

/** rdma_cm ids and event channels in use (tests, diagnostics). */
void ctl_cm_usage(const struct ctl *ctl, uint32_t *ids, uint32_t *channels);

#ifdef __cplusplus
}
#endif
#endif /* CTL_CM_H */
