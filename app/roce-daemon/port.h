/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Port bring-up: probe the PMD from its devargs, check what the PMD can
 * carry against the configured MTU (net_af_packet framesz, net_af_xdp's
 * 4 KiB UMEM chunk, net_memif bsize; see doc/architecture.md), create a
 * mempool sized for the MTU, queues for every worker, start.
 *
 * Queues: every worker owns TX queue w of every port (so a TX queue has one
 * writer) and polls RX queue w if the port has one. The control thread never
 * transmits directly: it hands frames to worker 0 (worker.h).
 */
#ifndef ROCE_DAEMON_PORT_H
#define ROCE_DAEMON_PORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "gid.h"
#include "xport.h"

struct rte_mempool;

/** Frame bytes around the IP MTU: Ethernet header + one VLAN tag. */
#define PORT_L2_OVERHEAD 18u

/** One port, set up by port_open(); read-only while workers run. */
struct port {
	const struct config_port *cfg;
	uint16_t index;                 /**< in the daemon's port array */
	uint16_t port_id;               /**< DPDK ethdev port */
	char driver[32];                /**< PMD name, e.g. net_af_packet */
	char ifname[32];                /**< kernel interface behind the PMD, or "" */
	unsigned int ifindex;           /**< 0 when not kernel-backed */
	uint8_t mac[6];
	uint32_t mtu;                   /**< IP MTU */
	uint32_t frame_max;             /**< mtu + PORT_L2_OVERHEAD */
	uint16_t n_rxq;
	uint16_t n_txq;
	struct rte_mempool *pool;       /**< RX and TX mbufs of this port */
	struct gid_table gids;
	bool started;
	bool xdp_prog_custom;           /**< shared mode: our program is attached */
	struct xport_cc cc;             /**< congestion control and QoS of its QPs (config_port_cc()) */
};

/** What port_open() needs besides the port's own section. */
struct port_params {
	unsigned int n_workers;
	uint32_t burst;
	uint32_t handoff_ring;
	uint32_t extra_mbufs;          /**< mbufs that may sit in daemon rings */
};

/**
 * Probe, check, configure and start the port of @p cp.
 * @return 0, or -1 with a message naming the port and the fix in @p err
 */
int port_open(struct port *p, uint16_t index, const struct config_port *cp,
	      const struct port_params *params, char *err, size_t errlen);

/** Stop and close (detaches an XDP program the PMD attached). Safe on a failed open. */
void port_close(struct port *p);

/** @return link up and speed (Mb/s) of @p p, without waiting. */
bool port_link(const struct port *p, uint32_t *speed_mbps);

/**
 * Checks of an MTU against a PMD, from the PMD name and its devargs. Pure
 * function, exposed for the unit tests.
 * @return NULL if fine, else why not (static or in @p buf)
 */
const char *port_check_pmd_mtu(const char *driver, const char *devargs, uint32_t mtu,
			       char *buf, size_t len);

/** Mbuf data room for @p frame_max on @p driver with @p devargs (headroom included). */
uint32_t port_data_room(const char *driver, const char *devargs, uint32_t frame_max);

/**
 * Shared mode: write our addresses into the `roce_addrs` map of the XDP
 * program attached to @p p's interface (bpf/roce_xdp.c).
 * @return 0 or -1 with @p err
 */
int port_xdp_set_addrs(struct port *p, char *err, size_t errlen);

#endif /* ROCE_DAEMON_PORT_H */
