/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The daemon's DPDK telemetry commands (/roce/info, /roce/port/..., /roce/lcore/...,
 * /roce/qp/..., /roce/neigh, /roce/counters/help; telemetry.c lists them).
 * They run on DPDK's telemetry thread and only read: counters (counters.h)
 * with relaxed loads, tables that do not change while running, neighbours
 * via seqcount.
 */
#ifndef ROCE_DAEMON_TELEMETRY_H
#define ROCE_DAEMON_TELEMETRY_H

struct daemon;

/**
 * Register the /roce/... telemetry commands for @p d (once per process;
 * telemetry callbacks have no context argument, so @p d is kept in a static
 * guarded by a rwlock). Pass NULL at shutdown, before freeing anything: the
 * commands then answer -ENODEV.
 * @return 0 or a negative errno
 */
int ctr_telemetry_register(struct daemon *d);

#endif /* ROCE_DAEMON_TELEMETRY_H */
