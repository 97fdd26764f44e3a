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

/** Longest idle wait of the control thread (ms): its timers' resolution when idle. */
#define CONTROL_WAIT_MAX_MS 8u

/**
 * The control thread's wait after an iteration that did @p work: about
 * control_sleep_us after work, doubled by each idle iteration up to
 * CONTROL_WAIT_MAX_MS. Whatever comes from outside ends a wait early (a
 * client's request, a worker's wake), so the longer waits only coarsen the
 * control thread's own timers (neighbours, CM MAD retries, link polling).
 * @return the wait in ms (also kept in d->control_wait_ms)
 */
unsigned int control_next_wait_ms(struct daemon *d, unsigned int work);

/** Control loop: control_poll() and the hooks until d->stop. */
void control_run(struct daemon *d);

#endif /* ROCE_DAEMON_CONTROL_H */
