/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The daemon as a whole, at the top of its files: start-up and shutdown of
 * ports, workers, the neighbour table and capture. The daemon's state
 * (struct daemon) is daemon_state.h, which the files below read; this
 * header also brings in the control loop (control.h) and telemetry
 * (telemetry.h) for main.c and the tests.
 *
 * Start-up is an explicit sequence (main.c): config -> EAL -> signals ->
 * ports -> workers -> neighbour table -> capture -> telemetry -> launch ->
 * control loop; shutdown runs it backwards.
 */
#ifndef ROCE_DAEMON_DAEMON_H
#define ROCE_DAEMON_DAEMON_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "control.h"
#include "daemon_state.h"
#include "neigh.h"
#include "telemetry.h"
#include "worker.h"

/** Prepare @p d for @p cfg (no EAL calls). */
void daemon_init(struct daemon *d, const struct config *cfg, const struct engine_ops *engine);

/**
 * Decide the number of workers: one per enabled lcore except the main one.
 * @return 0 or -1 with @p err (fewer than 2 lcores, too many)
 */
int daemon_plan_workers(struct daemon *d, char *err, size_t errlen);

/** Open every configured port. @return 0 or -1 with @p err. */
int daemon_open_ports(struct daemon *d, char *err, size_t errlen);

/**
 * Create one worker per worker lcore (every enabled lcore except the main
 * one), their rings and QP tables. @return 0 or -1 with @p err.
 */
int daemon_create_workers(struct daemon *d, char *err, size_t errlen);

/** Allocate the neighbour table from the configuration. @return 0 or -1. */
int daemon_create_neigh(struct daemon *d, char *err, size_t errlen);

/** Launch every worker on its lcore. */
int daemon_launch_workers(struct daemon *d);

/**
 * Request a stop and wait until every worker lcore returned (failures
 * counted in d->worker_failures). Afterwards the control thread is the only
 * thread touching worker state: the calling thread becomes every worker's
 * owner (WORKER_OWNER_SET). Idempotent.
 */
void daemon_stop_workers(struct daemon *d);

/**
 * Stop workers (daemon_stop_workers()), free workers, close ports, free
 * tables.
 */
void daemon_shutdown(struct daemon *d);

#endif /* ROCE_DAEMON_DAEMON_H */
