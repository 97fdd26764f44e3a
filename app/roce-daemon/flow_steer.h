/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Flow steering of RAW_PACKET QPs on the dataplane: the flow rules
 * (ibv_create_flow) of every port, as lib/flow tables, and the lookup a
 * worker makes for a frame the stack does not take.
 *
 * - **Table.** Per port, a lib/flow table of `limits.max_flows` rules,
 *   preallocated at start-up. One writer, the control thread (lib/ctl's
 *   flow_create/flow_destroy callbacks through app_iface.c); the workers
 *   read a port's table under its rte_seqcount, so a reader never acts on
 *   half a change (it retries).
 * - **Receive.** A frame that is not RoCEv2 for us (worker.c classify():
 *   not for our addresses, not ARP/ND/echo/IGMP/MLD) is parsed once
 *   (flow_parse()) and matched; every rule of the best priority that
 *   matches gets a copy (lib/flow semantics): one mbuf reference and one
 *   record per QP, delivered on the QP's lcore like any frame (worker.c
 *   rx_raw()). No rule: it stays with the stack (counted and dropped).
 *   A rule to an RSS QP (flow_steer_add_rss()) holds a copy of its
 *   indirection table and hash; the reader picks the WQ's QPN per frame
 *   (lib/flow flow_rss_pick()) under the same seqcount.
 * - **Transmit.** A RAW_PACKET QP's frame leaves through the port and,
 *   when the port has rules, a copy runs through them (the loopback
 *   queue), so two raw QPs of one port see each other, as through a NIC's
 *   local loopback (worker.c worker_tx_raw()).
 *
 * Below the workers (layer table: test/daemon/include_layers.py): this
 * module includes nothing of the daemon but config.h.
 */
#ifndef ROCE_DAEMON_FLOW_STEER_H
#define ROCE_DAEMON_FLOW_STEER_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_seqcount.h>

#include "config.h"
#include "flow.h"

/** QPs one frame is copied to at most (rules of equal best priority beyond it are cut). */
#define FLOW_STEER_MAX_DEST 16u
/** A rule's lib/flow destination with this bit is an RSS rule: the low bits are its id. */
#define FLOW_STEER_RSS (UINT32_C(1) << 31)

/** The rules of one port. */
struct flow_steer_port {
	rte_seqcount_t sc;      /**< the writer's begin/end around every change */
	uint32_t n;             /**< rules (relaxed: readers skip an empty port) */
	struct flow_table t;    /**< lib/flow table over flow_steer.rules */
};

/** Every port's rules (d->flows, daemon_state.h). */
struct flow_steer {
	uint32_t cap;                  /**< rules per port: limits.max_flows */
	struct flow_steer_port port[CONFIG_MAX_PORTS];
	struct flow_rule *rules;       /**< CONFIG_MAX_PORTS * cap */
	/** per flow id (< cap, lib/ctl's ctl_flow_info.id): its port + 1 (0: none) and index */
	uint16_t *id_port;
	uint32_t *id_index;
	/** per flow id: the RSS QP's configuration of an RSS rule (written under the seqcount) */
	struct flow_rss *rss;
};

/** Tables for @p max_flows rules per port (>= 1). @return NULL: no memory */
struct flow_steer *flow_steer_new(uint32_t max_flows);

/** Free @p s (NULL: nothing); no reader may be left. */
void flow_steer_free(struct flow_steer *s);

/**
 * Control thread: rule @p id (unique among live rules, < cap) steers the
 * frames of port @p port that match @p m to QP @p qpn.
 * @return 0, or EINVAL (port, id in use), ENOSPC (the port's table is full),
 *   or lib/flow's refusal of @p m (EINVAL, EOPNOTSUPP) as a positive errno
 */
int flow_steer_add(struct flow_steer *s, uint16_t port, uint32_t id, const struct flow_match *m,
		   uint16_t priority, uint32_t qpn);

/**
 * Control thread: as flow_steer_add(), to an RSS QP: a frame that matches
 * goes to the QPN of @p rss's table its Toeplitz hash picks
 * (flow_rss_pick()), decided per frame by the reader.
 */
int flow_steer_add_rss(struct flow_steer *s, uint16_t port, uint32_t id,
		       const struct flow_match *m, uint16_t priority, const struct flow_rss *rss);

/** Control thread: remove rule @p id (unknown: nothing). */
void flow_steer_del(struct flow_steer *s, uint32_t id);

/**
 * Any thread: the QPs frame @p k of port @p port goes to (the best
 * priority's rules), copied to @p qpn. @return how many (0: none)
 */
uint32_t flow_steer_lookup(const struct flow_steer *s, uint16_t port, const struct flow_key *k,
			   uint32_t qpn[FLOW_STEER_MAX_DEST]);

/** Any thread: does port @p port have any rule? (a cheap test before parsing) */
static inline bool
flow_steer_active(const struct flow_steer *s, uint16_t port)
{
	return s != NULL && port < CONFIG_MAX_PORTS &&
	       __atomic_load_n(&s->port[port].n, __ATOMIC_RELAXED) != 0;
}

#endif /* ROCE_DAEMON_FLOW_STEER_H */
