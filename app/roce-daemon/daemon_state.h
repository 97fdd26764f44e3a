/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The daemon's state (struct daemon), read by every file of app/roce-daemon:
 * configuration, ports, workers, neighbour table, link trackers, the
 * callbacks the application interface installs. Data and small accessors
 * only; start-up and shutdown (daemon.h) sit at the top of the files, and
 * a lower layer that must reach a higher one does it through the callbacks
 * here (on_event, on_link, ctl_msg_fn), never by including it.
 *
 * Threads (doc/architecture.md has the picture):
 *  - control thread (main lcore): start-up and shutdown, the slow path (ARP,
 *    ND, echo, neighbour timers), writing the capture file, and the hooks of
 *    the application interface (lib/ctl server); never touches a QP;
 *  - workers (one per other lcore): worker.h;
 *  - DPDK's telemetry thread: reads counters and read-only tables.
 */
#ifndef ROCE_DAEMON_DAEMON_STATE_H
#define ROCE_DAEMON_DAEMON_STATE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rte_build_config.h>

#include "config.h"
#include "ipc.h"
#include "link.h"
#include "neigh_table.h"
#include "port.h"

struct capture;
struct ctl_msg;
struct engine_ops;
struct flow_steer;
struct gsi;
struct mcast_table;
struct rte_rcu_qsbr;
struct worker;
struct worker_event;

#define WORKER_MAX 16u           /**< worker lcores */

/** A function the control loop calls every iteration (e.g. the ctl server). */
struct control_hook {
	/** @return work done; @p timeout_ms is how long it may block (poll(2)) */
	int (*fn)(void *arg, int timeout_ms);
	void *arg;
};

#define DAEMON_MAX_HOOKS 4u
#define DAEMON_NO_PORT UINT16_MAX

/** The daemon. One per process. */
/**
 * Waking the control thread early (control.c control_may_sleep(), worker.c
 * worker_wake_control()). Before it blocks in poll(2) for up to a period,
 * the control thread stores @c sleeping = 1 and looks at the workers'
 * control-bound rings once more (events, slow-path frames, neighbour
 * requests, control answers, captured frames). A worker that put something on one of them
 * in a loop iteration then loads @c sleeping; if set, the first such worker
 * clears it and writes @c fd, an eventfd in the control server's poll set.
 * Each side stores, then a seq_cst fence, then loads (the Dekker pattern):
 * one of them sees the other, so no wake-up is lost; at worst the control
 * thread polls once for nothing.
 */
struct control_wake {
	int fd;            /**< eventfd (non-blocking), or -1: the period bounds every wait */
	uint32_t sleeping; /**< 1 while the control thread may block; written by both sides */
};

struct daemon {
	struct config cfg;
	struct port port[CONFIG_MAX_PORTS];
	unsigned int n_ports;
	uint16_t port_index[RTE_MAX_ETHPORTS]; /**< ethdev port id -> index, or DAEMON_NO_PORT */
	struct worker *worker[WORKER_MAX];
	unsigned int n_workers;
	const struct engine_ops *engine;
	struct neigh_table neigh;               /**< writer: control thread */
	struct capture *capture;                /**< NULL unless --pcap */
	struct ipc_device_attr dev_attr;
	uint64_t tsc_hz;
	atomic_bool stop;                       /**< set by signals; every loop polls it */
	bool workers_running;
	unsigned int worker_failures;           /**< workers whose lcore returned non-zero */
	/** Control thread: engine events (NULL: counted in events_dropped and dropped). */
	void (*on_event)(struct daemon *d, const struct worker_event *ev, void *arg);
	void *on_event_arg;
	/**
	 * Runs a control message on the owner lcore (worker_ctl_run()); @return
	 * 0 or -errno. NULL: every message but PING/STALL answers -ENOTSUP.
	 */
	int (*ctl_msg_fn)(struct worker *w, struct ctl_msg *m, void *arg);
	void *ctl_msg_arg;
	uint64_t events_dropped;
	struct control_hook hook[DAEMON_MAX_HOOKS];
	unsigned int n_hooks;
	unsigned int control_sleep_us;          /**< control loop period when nothing is hooked */
	struct control_wake wake;               /**< workers end the control thread's wait */
	unsigned int control_wait_ms;           /**< the control thread's next idle wait (control.c) */
	uint64_t next_neigh_timer;              /**< control thread: next neighbour timer run (TSC) */
	/** Control thread: QP1 MADs in and out (gsi.h); NULL: QP1 frames are dropped there. */
	struct gsi *gsi;
	/** Link state of every port (port_link.c; control thread). */
	struct link_tracker link;
	bool link_ready;                        /**< port_link_init() done */
	int link_sock;                          /**< ioctl socket for kernel interface flags, or -1 */
	struct rte_rcu_qsbr *qsbr;              /**< workers' quiescent states (port restarts) */
	/** Control thread: a port's link changed (NULL: nobody listens). */
	void (*on_link)(struct daemon *d, unsigned int port, const struct link_sample *now,
			void *arg);
	void *on_link_arg;
	/** UD multicast groups (mcast_table.h): written by the control thread, read by workers; NULL: none. */
	struct mcast_table *mcast;
	/** RAW_PACKET flow rules (flow_steer.h): written by the control thread, read by workers; NULL: none. */
	struct flow_steer *flows;
};

/** Add a control-loop hook. @return 0 or -ENOSPC */
int daemon_add_hook(struct daemon *d, int (*fn)(void *arg, int timeout_ms), void *arg);

/** Ask everything to stop (async-signal-safe). */
static inline void
daemon_request_stop(struct daemon *d)
{
	atomic_store_explicit(&d->stop, true, memory_order_release);
}

/** @return true once a stop was requested. */
static inline bool
daemon_stopping(const struct daemon *d)
{
	return atomic_load_explicit(&d->stop, memory_order_acquire);
}

/** @return the daemon port index of ethdev @p port_id, or DAEMON_NO_PORT. */
static inline uint16_t
daemon_port_index(const struct daemon *d, uint16_t port_id)
{
	return port_id < RTE_MAX_ETHPORTS ? d->port_index[port_id] : DAEMON_NO_PORT;
}

/**
 * @return the index of the port that has @p gid in its GID table, or -1.
 * Any thread (GID tables are immutable while running).
 */
int daemon_find_gid(const struct daemon *d, const uint8_t gid[16]);

/** @return the index of the port whose MAC is @p mac, or -1. */
int daemon_find_mac(const struct daemon *d, const uint8_t mac[6]);

#endif /* ROCE_DAEMON_DAEMON_STATE_H */
