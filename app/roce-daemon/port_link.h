/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The daemon's ports as a link source (link.h): readings from the ethdev
 * and the kernel interface behind it (port_link_sample()), LSC interrupts
 * where the PMD raises them, polling otherwise, and net_memif client
 * reconnects. A change updates the port's gates (port_rx_on(), port_tx_on())
 * and goes on to d->on_link (the application interface: ibv_query_port and
 * IBV_EVENT_PORT_ACTIVE/ERR).
 *
 * A reconnect stops and starts the ethdev, which the workers must not touch
 * meanwhile: the control thread closes the port's gates, waits (without
 * blocking: it looks again every tick) until every worker has passed a
 * quiescent state (rte_rcu_qsbr, reported once per worker loop), then stops
 * and starts the port.
 */
#ifndef ROCE_DAEMON_PORT_LINK_H
#define ROCE_DAEMON_PORT_LINK_H

#include <stddef.h>
#include <stdint.h>

struct daemon;

/**
 * After the ports are open (daemon_open_ports()): the tracker, LSC
 * callbacks, the workers' quiescent-state variable; reads every port once.
 * @return 0 or -1 with @p err
 */
int port_link_init(struct daemon *d, char *err, size_t errlen);

/** Control thread: due readings, changes, reconnects. @return changes (work) */
unsigned int port_link_poll(struct daemon *d, uint64_t now_tsc);

/** Unregister LSC callbacks, free what port_link_init() made. Idempotent. */
void port_link_fini(struct daemon *d);

#endif /* ROCE_DAEMON_PORT_LINK_H */
