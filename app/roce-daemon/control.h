/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The control thread's loop (control.c): slow-path frames (ARP, ND, echo,
 * QP1 MADs), neighbour requests and timers, link changes, capture writing,
 * engine events (d->on_event) and the hooks (the application interface).
 * It never touches a QP and never waits for a worker.
 */
#ifndef ROCE_DAEMON_CONTROL_H
#define ROCE_DAEMON_CONTROL_H

#include <stdbool.h>
#include <stdint.h>

struct daemon;

/**
 * Control-thread work, once: slow-path frames, neighbour requests and timers,
 * capture writing. @return units of work done
 */
unsigned int control_poll(struct daemon *d, uint64_t now_tsc);

/**
 * About to block: store d->wake.sleeping, then look at the workers' rings
 * (daemon_state.h struct control_wake). @return false (and sleeping
 * cleared) if one holds something: do not block.
 */
bool control_may_sleep(struct daemon *d);

/** Control loop: control_poll() and the hooks until d->stop. */
void control_run(struct daemon *d);

#endif /* ROCE_DAEMON_CONTROL_H */
