/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * roce-daemon configuration: an INI file parsed with inih.
 *
 * One [daemon] section (socket path, lcores, idle backoff, limits, neighbour
 * timers) and one [port NAME] section per port (PMD devargs, addresses, MTU,
 * queues). Every key is described once in a table (config.c) that drives the
 * parser, the defaults and `--help`. Errors name the file and the line.
 * Pure C (no DPDK) so it is unit-tested without EAL.
 */
#ifndef ROCE_DAEMON_CONFIG_H
#define ROCE_DAEMON_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CONFIG_MAX_PORTS 8      /**< [port] sections */
#define CONFIG_MAX_ADDRS 8      /**< addresses per port (IPv4 + IPv6) */
#define CONFIG_NAME_LEN 32      /**< port name, with NUL */
#define CONFIG_DEVARGS_LEN 256
#define CONFIG_PATH_LEN 108     /**< sizeof(sockaddr_un.sun_path) */
#define CONFIG_MAX_ALLOWED 16   /**< entries of allowed_users, allowed_groups (= CTL_MAX_ALLOWED) */
#define CONFIG_ERR_LEN 4096     /**< room for all error lines */

/** What a worker does when a poll found no work (see doc/architecture.md). */
enum config_idle {
	CONFIG_IDLE_NONE,   /**< busy-poll: lowest latency, one core at 100 % */
	CONFIG_IDLE_PAUSE,  /**< rte_pause() only */
	CONFIG_IDLE_YIELD,  /**< sched_yield() */
	CONFIG_IDLE_SLEEP,  /**< nanosleep(idle_sleep_us) */
};

/** Who owns the port. */
enum config_port_mode {
	CONFIG_PORT_DEDICATED, /**< the daemon owns every frame; answers ARP/ND itself */
	CONFIG_PORT_SHARED,    /**< net_af_xdp + bpf/roce_xdp.o: only RoCE reaches us */
};

/** One interface address; IPv4 is stored IPv4-mapped (::ffff:a.b.c.d). */
struct config_addr {
	uint8_t addr[16];
	uint8_t prefix_len;     /**< in IPv6 terms: IPv4 /24 is stored as 120 */
	bool ipv6;
};

/** One [port NAME] section. */
struct config_port {
	char name[CONFIG_NAME_LEN];
	char devargs[CONFIG_DEVARGS_LEN]; /**< e.g. net_af_packet0,iface=veth0 or 0000:01:00.0 */
	struct config_addr addrs[CONFIG_MAX_ADDRS];
	unsigned int n_addrs;
	struct config_addr resolve[CONFIG_MAX_ADDRS]; /**< neighbours resolved at start-up */
	unsigned int n_resolve;
	struct config_addr gateway4;      /**< valid when has_gateway4 */
	struct config_addr gateway6;
	bool has_gateway4;
	bool has_gateway6;
	uint32_t mtu;                     /**< IP MTU (Ethernet payload), not frame length */
	uint32_t rx_queues;               /**< 0: one per worker */
	uint32_t tx_queues;               /**< 0: one per worker */
	uint32_t rx_desc;
	uint32_t tx_desc;
	uint32_t mbufs;                   /**< 0: computed from queues and rings */
	uint32_t rx_mbuf_size;            /**< RX mbuf data room; 0: one whole frame */
	uint32_t mode;                    /**< enum config_port_mode */
	bool promisc;
	uint32_t vlan;                    /**< 802.1Q VID of every frame, 0: untagged */
	/* congestion control and QoS (lib/xport struct xport_cc, doc/congestion.md) */
	uint32_t ecn;                     /**< ECN codepoint on data: 0 none, 1 ECT(1), 2 ECT(0) */
	uint32_t cc;                      /**< reaction point: 0 none, 1 dcqcn, 2 delay */
	bool cnp;                         /**< notification point: CNPs on CE marks */
	uint32_t cnp_interval_us;
	uint32_t dscp;                    /**< DSCP when the AV's traffic class has none */
	uint32_t pcp;                     /**< 802.1p priority of tagged frames */
	uint32_t cnp_dscp;
	uint32_t cnp_pcp;
	uint32_t dcqcn_g_inv;             /**< g = 1 / dcqcn_g_inv */
	uint32_t dcqcn_alpha_us;          /**< K */
	uint32_t dcqcn_timer_us;          /**< T */
	uint32_t dcqcn_bytes;             /**< B, 0: no byte counter */
	uint32_t dcqcn_f;                 /**< F */
	uint32_t dcqcn_ai_mbps;           /**< R_AI */
	uint32_t dcqcn_hai_mbps;          /**< R_HAI */
	uint32_t dcqcn_min_mbps;          /**< floor of the rate */
	uint32_t dcqcn_line_mbps;         /**< line rate, 0: the link speed */
	bool dcqcn_pace_line;             /**< pace at line rate while not limited */
	uint32_t pace_burst_bytes;        /**< pacer burst size, 0: 10 ms of the rate */
	uint32_t delay_target_us;         /**< cc = delay: target RTT */
	uint32_t delay_ai_mbps;           /**< cc = delay: additive increase per RTT sample */
	uint32_t delay_beta_pct;          /**< cc = delay: decrease scale beta */
	uint32_t delay_max_md_pct;        /**< cc = delay: largest cut per RTT */
	unsigned int line;                /**< line of the [port] header, for errors */
};

/** The [daemon] section. */
struct config_daemon {
	char socket_path[CONFIG_PATH_LEN];
	char socket_owner[64];            /**< user owning the socket; empty: the daemon's */
	char socket_group[64];            /**< group owning the socket; empty: the daemon's */
	char socket_mode[8];              /**< octal permissions of the socket */
	char allowed_users[512];          /**< users allowed to connect (SO_PEERCRED); empty: any */
	char allowed_groups[512];         /**< groups allowed to connect; empty: any */
	uint32_t client_max_pds;          /**< per-client quotas; 0: none beyond the device's */
	uint32_t client_max_mrs;
	uint32_t client_max_cqs;
	uint32_t client_max_qps;
	uint32_t client_max_srqs;
	uint32_t client_max_cm_ids;
	uint32_t client_max_cm_channels;
	uint32_t client_max_ahs;
	uint32_t client_max_mr_mb;        /**< registered MiB per client */
	uint32_t max_dm_kb;               /**< device memory KiB of all clients (ctl_dm.c) */
	uint32_t dm_size_kb;              /**< largest one device memory allocation, KiB */
	uint32_t client_max_dm_kb;        /**< device memory KiB per client; 0: no quota */
	uint32_t max_flows;               /**< flow rules of all clients (and per port); 0: no raw QPs */
	uint32_t client_max_flows;        /**< flow rules per client; 0: no quota */
	uint32_t user_max_conns;          /**< open connections per user (root exempt); 0: no quota */
	char lcores[128];                 /**< EAL --lcores value, unless given on the command line */
	char eal_args[512];               /**< extra EAL arguments, whitespace separated */
	uint32_t idle;                    /**< enum config_idle */
	uint32_t idle_polls;              /**< empty polls before backing off */
	uint32_t idle_sleep_us;           /**< the first idle sleep */
	uint32_t idle_sleep_max_us;       /**< the longest: each sleep doubles up to it */
	uint32_t idle_timer_slack_ns;
	uint32_t idle_yield_us;
	uint32_t idle_yield_slow_us;
	uint32_t idle_scan_us;            /**< sweep of the idle QPs' SQs (engine_xport.c); 0: every loop */
	uint32_t tx_flush_us;             /**< TX buffer drain deadline */
	uint32_t burst;                   /**< RX/TX burst size */
	uint32_t handoff_ring;            /**< slots per worker-to-worker ring */
	uint32_t max_qps;
	uint32_t max_mrs;
	uint32_t max_pds;
	uint32_t max_cqs;
	uint32_t max_cqe;
	uint32_t max_qp_wr;
	uint32_t max_sge;
	uint32_t max_srqs;
	uint32_t max_srq_wr;
	uint32_t max_inline;
	uint32_t max_rd_atomic;           /**< max_qp_rd_atom, max_qp_init_rd_atom (1..128) */
	uint32_t max_inflight_packets;    /**< RC send window cap (xport_cfg.max_unacked) */
	uint32_t min_inflight_packets;    /**< send window floor after losses (xport_cfg.min_window) */
	uint32_t neigh_entries;
	uint32_t neigh_reachable_s;       /**< lifetime of a resolved entry */
	uint32_t neigh_retry_ms;          /**< interval between ARP/NS probes */
	uint32_t neigh_retries;           /**< probes before an entry fails */
	bool telemetry;
	uint32_t link_poll_ms;            /**< link state read period (link.h) */
	uint32_t link_retry_ms;           /**< memif client reconnect period */
};

/**
 * A user given by name or number (socket_owner, allowed_users).
 * @return 0, or -1 (no such user)
 */
int config_user_id(const char *s, uint32_t *out);
/** A group given by name or number. @return 0 or -1 */
int config_group_id(const char *s, uint32_t *out);
/**
 * A comma separated list of users (@p groups false) or groups into @p out.
 * @return how many (0 for an empty list), or -1 (an unknown name, more than @p max)
 */
int config_id_list(const char *list, bool groups, uint32_t *out, uint32_t max);

/** A whole configuration. */
struct config {
	char path[256];                   /**< file it came from, for messages */
	struct config_daemon daemon;
	struct config_port ports[CONFIG_MAX_PORTS];
	unsigned int n_ports;
};

/**
 * Parse the INI file @p path into @p cfg (defaults first, then the file,
 * then cross-checks). On failure @p err holds one line per problem, each
 * "FILE:LINE: message".
 *
 * @return 0 on success, -1 on any error
 */
int config_load(const char *path, struct config *cfg, char *err, size_t errlen);

/** As config_load() on an in-memory text; @p name is used in messages. */
int config_load_string(const char *text, const char *name, struct config *cfg,
		       char *err, size_t errlen);

/** Fill @p cfg with the defaults of every key (no ports). */
void config_defaults(struct config *cfg);

/** Print every section and key with its default and meaning (for --help). */
void config_print_keys(FILE *out);

struct xport_cc;

/** Line rate DCQCN assumes when neither dcqcn_line_mbps nor the link says one. */
#define CONFIG_CC_LINE_MBPS_DEFAULT 10000u

/**
 * The transport engine's congestion control and QoS of port @p cp
 * (lib/xport struct xport_cc): its ECN, CNP, DSCP/priority and DCQCN keys;
 * the line rate is dcqcn_line_mbps, else @p link_mbps, else
 * CONFIG_CC_LINE_MBPS_DEFAULT.
 */
void config_port_cc(const struct config_port *cp, uint32_t link_mbps, struct xport_cc *cc);

/** @return the name of an idle mode ("sleep"). */
const char *config_idle_name(enum config_idle idle);

/** Format @p a as "198.18.0.1/24" or "2001:db8::1/64". */
void config_addr_format(const struct config_addr *a, char *buf, size_t len);

/** @return true if @p a is an IPv4-mapped address (::ffff:0:0/96). */
bool config_addr_is_v4mapped(const uint8_t a[16]);

#endif /* ROCE_DAEMON_CONFIG_H */
