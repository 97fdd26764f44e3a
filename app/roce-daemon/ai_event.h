/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * From the dataplane to the applications (ai_event.c), control thread only:
 * the daemon's callbacks (daemon.h on_event, on_link) and the CM's wire
 * (lib/ctl ctl_cm_ops.send_mad, gsi.h's receive callback).
 *
 * - Engine events: CQ notifications -> ipc_cq_signal() (a full channel loses
 *   the byte, counted in cq_signals_dropped; never blocks); QP events of the
 *   QP's current epoch -> ctl_qp_event() (an event raised before a reset or
 *   by a destroyed QP is dropped); CQ/SRQ async events -> ctl_raise_event().
 * - Link changes -> ctl_set_port_attr() (PORT_ACTIVE / PORT_ERR events).
 * - QP1 MADs <-> lib/ctl's rdma_cm (gsi.h).
 */
#ifndef ROCE_DAEMON_AI_EVENT_H
#define ROCE_DAEMON_AI_EVENT_H

#include <stdint.h>

#include "ai_state.h"

struct cm_path;
struct link_sample;

/** daemon.h on_event: one engine event a worker passed on. */
void ai_on_event(struct daemon *d, const struct worker_event *ev, void *arg);

/** daemon.h on_link: port @p port's link is now @p now. */
void ai_on_link(struct daemon *d, unsigned int port, const struct link_sample *now, void *arg);

/** gsi.h receive callback: a MAD from QP1, to lib/ctl's CM. */
void ai_gsi_rx(void *arg, const struct cm_path *from, const uint8_t *mad, uint32_t len);

/** ctl_cm_ops.send_mad: a MAD of lib/ctl's CM out through QP1. @return 0 or -errno */
int ai_cm_send(void *ctx, const struct cm_path *to, const uint8_t *mad);

#endif /* ROCE_DAEMON_AI_EVENT_H */
