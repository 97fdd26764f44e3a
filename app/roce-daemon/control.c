/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control thread's loop: slow-path frames from the workers, neighbour
 * requests and timers, capture writing, and the hooks (the application
 * interface server). It sleeps when there is nothing to do, so it costs
 * almost no CPU; its latency bound is the hook timeout or control_sleep_us.
 */
#include "control.h"

#include <stddef.h>
#include <time.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include "capture.h"
#include "daemon_state.h"
#include "gsi.h"
#include "mcast.h"
#include "neigh.h"
#include "port_link.h"
#include "worker.h"

#define CONTROL_BURST 32u
#define NEIGH_TIMER_MS 10u

static void
probe_cb(void *arg, uint16_t port, const uint8_t ip[16])
{
	neigh_probe(arg, port, ip);
}

/* Keep the configured `resolve` neighbours resolved: ask again when failed. */
static unsigned int
resolve_configured(struct daemon *d, uint64_t now)
{
	unsigned int n = 0;

	for (unsigned int p = 0; p < d->n_ports; p++) {
		const struct config_port *cp = d->port[p].cfg;

		for (unsigned int i = 0; i < cp->n_resolve; i++) {
			uint8_t nh[16];

			if (neigh_next_hop(d, (uint16_t)p, cp->resolve[i].addr, nh) &&
			    neigh_want(&d->neigh, (uint16_t)p, nh, now)) {
				neigh_probe(d, (uint16_t)p, nh);
				n++;
			}
		}
	}
	return n;
}

/* A slow-path frame: a QP1 MAD (the only RoCE frames workers pass on) or ARP/ND/echo. */
static void
slow_input(struct daemon *d, uint16_t port, struct rte_mbuf *m, uint64_t now)
{
	const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *);
	struct roce_pkt pkt;
	enum roce_drop_reason why;

	if (roce_classify(f, m->data_len, ROCE_CLASSIFY_NO_ICRC, &pkt, &why) == ROCE_CLASS_ROCE) {
		if (d->gsi != NULL && port != DAEMON_NO_PORT && why == ROCE_DROP_NONE)
			gsi_input(d->gsi, port, m, &pkt);
		else
			rte_pktmbuf_free(m);
		return;
	}
	if (mcast_input(d, port, m))
		return;
	neigh_input(d, port, m, now);
}

unsigned int
control_poll(struct daemon *d, uint64_t now)
{
	unsigned int work = port_link_poll(d, now);

	for (unsigned int i = 0; i < d->n_workers; i++) {
		struct worker *w = d->worker[i];
		struct rte_mbuf *m[CONTROL_BURST];
		struct worker_neigh_req req[8];
		struct worker_event ev[16];
		unsigned int n;

		n = rte_ring_sc_dequeue_burst(w->slow_out, (void **)m, CONTROL_BURST, NULL);
		for (unsigned int k = 0; k < n; k++)
			slow_input(d, daemon_port_index(d, m[k]->port), m[k], now);
		work += n;
		n = rte_ring_sc_dequeue_burst_elem(w->neigh_req, req, sizeof(req[0]), RTE_DIM(req),
						   NULL);
		for (unsigned int k = 0; k < n; k++)
			if (req[k].port < d->n_ports && neigh_want(&d->neigh, req[k].port, req[k].ip, now))
				neigh_probe(d, req[k].port, req[k].ip);
		work += n;
		n = rte_ring_sc_dequeue_burst_elem(w->events, ev, sizeof(ev[0]), RTE_DIM(ev), NULL);
		for (unsigned int k = 0; k < n; k++) {
			if (d->on_event != NULL)
				d->on_event(d, &ev[k], d->on_event_arg);
			else
				d->events_dropped++;
		}
		work += n;
	}
	if (now >= d->next_neigh_timer && d->neigh.entry != NULL) {
		d->next_neigh_timer = now + d->tsc_hz / 1000 * NEIGH_TIMER_MS;
		work += neigh_expire(&d->neigh, now, probe_cb, d);
		work += resolve_configured(d, now);
	}
	if (d->gsi != NULL)
		work += gsi_tick(d->gsi);
	work += mcast_tick(d, now);
	work += capture_drain(d);
	return work;
}

bool
control_may_sleep(struct daemon *d)
{
	if (d->wake.fd < 0)
		return true;
	__atomic_store_n(&d->wake.sleeping, 1, __ATOMIC_RELAXED);
	/* sleeping, then the loads of the rings: pairs with worker_wake_control() */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	for (unsigned int i = 0; i < d->n_workers; i++) {
		const struct worker *w = d->worker[i];

		if (w != NULL && (rte_ring_count(w->events) || rte_ring_count(w->slow_out) ||
				  rte_ring_count(w->neigh_req) || rte_ring_count(w->ctl_out) ||
				  (w->capture != NULL && rte_ring_count(w->capture)))) {
			__atomic_store_n(&d->wake.sleeping, 0, __ATOMIC_RELAXED);
			return false;
		}
	}
	return true;
}

unsigned int
control_next_wait_ms(struct daemon *d, unsigned int work)
{
	unsigned int base = d->control_sleep_us / 1000u + 1u;
	unsigned int cap = RTE_MAX(base, CONTROL_WAIT_MAX_MS);

	if (work > 0 || d->control_wait_ms < base)
		d->control_wait_ms = base;
	else
		d->control_wait_ms = RTE_MIN(d->control_wait_ms * 2u, cap);
	return d->control_wait_ms;
}

void
control_run(struct daemon *d)
{
	unsigned int wait_ms = control_next_wait_ms(d, 1);

	while (!daemon_stopping(d)) {
		unsigned int work = control_poll(d, rte_get_tsc_cycles());

		for (unsigned int h = 0; h < d->n_hooks; h++) {
			/*
			 * The first hook may block (poll(2)) when idle, up to a wait that
			 * grows while nothing happens; a worker that passes something on
			 * ends it (d->wake), as does a client's request.
			 */
			int t = (work == 0 && h == 0) ? (int)wait_ms : 0;
			int rc;

			if (t > 0 && !control_may_sleep(d))
				t = 0;
			rc = d->hook[h].fn(d->hook[h].arg, t);
			if (t > 0)
				__atomic_store_n(&d->wake.sleeping, 0, __ATOMIC_RELAXED);
			if (rc > 0)
				work += (unsigned int)rc;
		}
		if (work == 0 && d->n_hooks == 0) {
			struct timespec ts = { 0, (long)d->control_sleep_us * 1000L };

			nanosleep(&ts, NULL);
		}
		wait_ms = control_next_wait_ms(d, work);
	}
}
