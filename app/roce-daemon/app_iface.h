/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The application interface on the dataplane: lib/ctl's control plane and
 * server on the control thread, its `struct ctl_dataplane_ops` carried out
 * on the worker lcores.
 *
 * - One device per port ("dpdk_roce<port index>"), attributes and GID
 *   tables from gid.c, served on `[daemon] socket` by ctl_server_poll() as
 *   a control-loop hook.
 * - Every object change reaches the lcore that owns it as a control message
 *   by value (ctl_msg.h), answered on a reply ring: the control thread never
 *   touches a QP, a CQ producer or an MR table, and never waits for an
 *   lcore (lib/ctl keeps the client's request pending meanwhile and serves
 *   the others). QPs sharing a CQ or SRQ share an lcore (lib/ctl's QP
 *   placement, ctl.h), so each CQ ring keeps a single producer.
 * - MRs: each worker has its own lib/qp MR table with the keys lib/ctl hands
 *   out (mr_reg_key()); registration and deregistration go to every worker
 *   and complete once those running a QP of the MR's PD did (the others
 *   take it before any QP of that PD can reach them), so no lcore ever sees
 *   an unmapped region.
 * - Rings are indexed with the geometry lib/ctl allocated (ctl_ring_info),
 *   never the shared headers (xport.h "Untrusted rings").
 * - Engine events come back through the workers' event rings: CQ
 *   notifications (ipc_cq_signal()), affiliated async events
 *   (ctl_qp_event(), ctl_raise_event()).
 * - Address vectors are resolved through neigh.c: modify to RTR and
 *   create_ah stay pending (asynchronously) a bounded time, then fail with
 *   ETIMEDOUT.
 *
 * doc/architecture.md section 15 has the whole picture.
 */
#ifndef ROCE_DAEMON_APP_IFACE_H
#define ROCE_DAEMON_APP_IFACE_H

#include <stddef.h>
#include <stdint.h>

struct daemon;
struct app_iface;

/**
 * Build the control plane from the daemon's ports (after ports, workers and
 * the neighbour table exist, before the workers are launched), listen on
 * `[daemon] socket`, hook into the control loop and take d->on_event.
 * @return the interface, or NULL with a message in @p err
 */
struct app_iface *app_iface_create(struct daemon *d, char *err, size_t errlen);

/**
 * Test hook, any thread: make worker @p worker stop for @p ms (a STALL
 * control message the control thread sends on its next iteration), as a
 * starved or wedged lcore would. @return 0 or -EINVAL
 */
int app_iface_stall_worker(struct app_iface *ai, unsigned int worker, unsigned int ms);

/**
 * Diagnostics and tests, any thread: MRs in worker @p worker's table now
 * (a relaxed read of a count only that lcore writes). 0 for a bad index.
 */
uint32_t app_iface_lcore_mrs(const struct app_iface *ai, unsigned int worker);

/**
 * Stop serving: every client gets IBV_EVENT_DEVICE_FATAL, then all objects
 * are torn down (on the lcores while they run; directly once the daemon is
 * stopping and its workers have returned), the socket is removed.
 * NULL is ignored.
 */
void app_iface_destroy(struct app_iface *ai);

#endif /* ROCE_DAEMON_APP_IFACE_H */
