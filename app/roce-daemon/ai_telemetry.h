/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The application interface's telemetry (ai_telemetry.c): `/roce/app/stats`
 * (lib/ctl's objects and the interface's own counters, AI_STAT_LIST) and
 * `/roce/cm` (the GSI's, the rdma_cm layer's and the CM agent's counters).
 *
 * The control thread publishes a snapshot (relaxed atomics) each loop; the
 * telemetry thread reads only the snapshot, never the interface. While no
 * interface is live the commands answer -ENODEV. DPDK cannot unregister a
 * command: they are registered once per process.
 */
#ifndef ROCE_DAEMON_AI_TELEMETRY_H
#define ROCE_DAEMON_AI_TELEMETRY_H

#include <stdbool.h>

#include "ai_state.h"

/** Control thread: copy the counters of @p ai into the snapshot. */
void ai_stats_publish(struct app_iface *ai);

/**
 * Publish a first snapshot, register the commands when @p registered
 * ([daemon] telemetry) and they are not yet, and answer from now on.
 */
void ai_telemetry_start(struct app_iface *ai, bool registered);

/** The commands answer -ENODEV again (the interface is going away). */
void ai_telemetry_stop(void);

#endif /* ROCE_DAEMON_AI_TELEMETRY_H */
