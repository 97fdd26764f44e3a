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

struct rte_mbuf;
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
	/**
	 * rx_mbuf_size below the largest frame (scatter RX): whole-frame mbufs
	 * for what is transmitted and for received frames that arrived in
	 * several mbufs (worker.c copies them into one). NULL otherwise.
	 */
	struct rte_mempool *big_pool;
	bool rx_scatter;                /**< frames may arrive in several mbufs */
	struct gid_table gids;
	bool started;
	bool xdp_prog_custom;           /**< shared mode: our program is attached */
	struct xport_cc cc;             /**< congestion control and QoS of its QPs (config_port_cc()) */
	/*
	 * Link state (port_link.c; the control thread writes, anyone reads with
	 * __atomic loads). Workers poll RX only while rx_on (the port is
	 * started) and transmit only while tx_on (started and the link up):
	 * with the link down a frame is dropped and counted (tx_link_down), as
	 * a NIC whose cable was pulled, so the transport's retries run.
	 */
	uint8_t rx_on;
	uint8_t tx_on;
	uint8_t link_known;             /**< link_up/speed/mtu hold a reading */
	uint8_t link_up;
	uint32_t link_speed;            /**< Mb/s, 0: unknown */
	uint32_t link_mtu;              /**< IP MTU the link carries now (<= mtu) */
	bool lsc;                       /**< the PMD raises LSC interrupts (registered) */
	bool memif_client;              /**< net_memif, role=client: reconnects are ours */
	uint8_t restart;                /**< memif client restart: 1 = waiting for the workers */
	uint64_t restart_token;         /**< rte_rcu_qsbr token the workers must pass */
	uint64_t restarts;              /**< restarts done (stop + start) */
	/**
	 * net_af_packet: frames the kernel dropped for want of a free slot in
	 * the PMD's receive rings, summed by port_rx_ring_drops() (atomic: the
	 * telemetry threads add what each read cleared).
	 */
	uint64_t rx_ring_drops;
};

/** Workers: may this port be polled (it is started)? */
static inline bool
port_rx_on(const struct port *p)
{
	return __atomic_load_n(&p->rx_on, __ATOMIC_ACQUIRE) != 0;
}

/** Workers: may frames be given to this port (started, link up)? */
static inline bool
port_tx_on(const struct port *p)
{
	return __atomic_load_n(&p->tx_on, __ATOMIC_RELAXED) != 0;
}

/** The port's 802.1Q VLAN ID (`vlan`, 1..4094), 0: its frames are untagged. */
static inline uint16_t
port_vlan(const struct port *p)
{
	return p->cfg != NULL ? (uint16_t)p->cfg->vlan : 0;
}

/**
 * The 802.1Q TCI of a frame @p p sends at priority @p pcp: its VID with
 * @p pcp in the PCP bits 15:13 (IEEE 802.1Q section 9.6); 0 (no tag) on a
 * port without a VLAN.
 */
static inline uint16_t
port_vlan_tci(const struct port *p, uint8_t pcp)
{
	uint16_t vid = port_vlan(p);

	return vid != 0 ? (uint16_t)((pcp & 7u) << 13 | vid) : 0;
}

/**
 * Put an untagged frame @p *m on @p p's VLAN: an 802.1Q tag with its VID,
 * priority 0, after the MAC addresses (rte_vlan_insert(), which may replace
 * @p *m). A tagged frame, or any frame of a port without a VLAN, is left
 * as it is.
 * @return 0, or -errno (the mbuf is shared or has no headroom): the caller frees it
 */
int port_vlan_tag(const struct port *p, struct rte_mbuf **m);

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

/**
 * @return link up and speed (Mb/s) of @p p, without waiting: the tracked
 * state (port_link.c) once there is one, else what the ethdev says.
 */
bool port_link(const struct port *p, uint32_t *speed_mbps);

/**
 * Read @p p's link now, without blocking: the ethdev's link and, for a port
 * behind a kernel interface (af_packet, af_xdp, mlx5 bifurcated), that
 * interface's IFF_UP and IFF_RUNNING (carrier) and MTU, through @p sock (a
 * datagram socket for ioctl(2); -1: ethdev only). net_af_packet and
 * net_af_xdp report their link up from start to stop whatever the
 * interface does, so the kernel's view is the cable there.
 * @return 0, or -errno
 */
int port_link_sample(const struct port *p, int sock, bool *up, uint32_t *speed_mbps,
		     uint32_t *mtu);

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

/**
 * Frames lost because the PMD's receive ring was full and the PMD does not
 * count them (net_af_packet in DPDK 22.11 reports no imissed): the
 * kernel's per-socket PACKET_STATISTICS drops of this process's AF_PACKET
 * sockets bound to @p p's interface, read (which clears them) and added to
 * p->rx_ring_drops. 0 for other PMDs (they report imissed themselves).
 * Any thread; the sockets are looked up on each call (/proc/self/fd), so a
 * port started again with new sockets is followed.
 * @return the running total
 */
uint64_t port_rx_ring_drops(struct port *p);

#endif /* ROCE_DAEMON_PORT_H */
