/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The daemon's ports as a link source (port_link.h): link.c decides what
 * changed; this file reads the ports, keeps their gates, reconnects net_memif
 * clients and passes changes on to d->on_link.
 */
#include "port_link.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>
#include <rte_rcu_qsbr.h>

#include "daemon_state.h"

static uint64_t
tsc_to_ns(const struct daemon *d, uint64_t tsc)
{
	uint64_t hz = d->tsc_hz != 0 ? d->tsc_hz : rte_get_tsc_hz();

	return (uint64_t)((double)tsc * 1e9 / (double)hz);
}

static int
src_read(void *arg, unsigned int i, struct link_sample *out)
{
	struct daemon *d = arg;

	return port_link_sample(&d->port[i], d->link_sock, &out->up, &out->speed_mbps, &out->mtu);
}

/* Close the gates: from the next loop on no worker touches port @p p. */
static void
gates_close(struct port *p)
{
	__atomic_store_n(&p->tx_on, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&p->rx_on, 0, __ATOMIC_RELEASE);
}

/* Start a stopped memif client: the server may be there now. */
static int
memif_start(struct daemon *d, struct port *p)
{
	int rc = rte_eth_dev_start(p->port_id);

	if (rc < 0)
		return rc;
	p->started = true;
	p->restarts++;
	__atomic_store_n(&p->rx_on, 1, __ATOMIC_RELEASE);
	/* tx_on follows the link: the next reading opens it */
	link_lsc_raise(&d->link, p->index);
	return 0;
}

/*
 * A net_memif client whose server went away (or was never there) never
 * reconnects by itself (DPDK 22.11): stop and start it. Stopping needs the
 * workers out of the port: close its gates, let them pass a quiescent state
 * (checked each tick in restart_progress()), then stop and start.
 */
static int
src_recover(void *arg, unsigned int i, uint64_t now_ns)
{
	struct daemon *d = arg;
	struct port *p = &d->port[i];

	(void)now_ns;
	if (!p->memif_client)
		return -ENOTSUP;
	if (p->restart)
		return 0;    /* waiting for the workers */
	if (!p->started)
		return memif_start(d, p);
	gates_close(p);
	p->restart_token = rte_rcu_qsbr_start(d->qsbr);
	p->restart = 1;
	return 0;
}

/* Restarts waiting for the workers: stop and start once they passed. */
static unsigned int
restart_progress(struct daemon *d)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < d->n_ports; i++) {
		struct port *p = &d->port[i];

		if (!p->restart || rte_rcu_qsbr_check(d->qsbr, p->restart_token, false) != 1)
			continue;
		p->restart = 0;
		printf("[port %s] net_memif client: link down, reconnecting\n", p->cfg->name);
		fflush(stdout);
		(void)rte_eth_dev_stop(p->port_id);
		p->started = false;
		if (memif_start(d, p) < 0)
			d->link.port[i].recover_errors++;
		n++;
	}
	return n;
}

static void
on_change(void *arg, unsigned int i, enum link_change what, const struct link_sample *old,
	  const struct link_sample *now)
{
	struct daemon *d = arg;
	struct port *p = &d->port[i];

	(void)old;
	__atomic_store_n(&p->link_speed, now->speed_mbps, __ATOMIC_RELAXED);
	__atomic_store_n(&p->link_mtu, now->mtu, __ATOMIC_RELAXED);
	__atomic_store_n(&p->link_up, now->up ? 1 : 0, __ATOMIC_RELAXED);
	__atomic_store_n(&p->link_known, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&p->tx_on, now->up && p->started && !p->restart ? 1 : 0,
			 __ATOMIC_RELEASE);
	if (what == LINK_UP || what == LINK_DOWN || (what == LINK_FIRST && !now->up)) {
		printf("[port %s] link %s%s", p->cfg->name, now->up ? "up" : "down",
		       what == LINK_FIRST ? " at start" : "");
		if (now->up)
			printf(", %u Mb/s, mtu %u", now->speed_mbps, now->mtu);
		printf("\n");
		fflush(stdout);
	}
	if (d->on_link != NULL)
		d->on_link(d, i, now, d->on_link_arg);
}

static int
lsc_cb(uint16_t port_id, enum rte_eth_event_type type, void *arg, void *ret_param)
{
	struct daemon *d = arg;
	uint16_t i = daemon_port_index(d, port_id);

	(void)type;
	(void)ret_param;
	if (i != DAEMON_NO_PORT && i < d->link.n) {
		/* interrupt thread: mark only */
		__atomic_fetch_add(&d->link.port[i].lsc_events, 1, __ATOMIC_RELAXED);
		link_lsc_raise(&d->link, i);
	}
	return 0;
}

int
port_link_init(struct daemon *d, char *err, size_t errlen)
{
	const struct config_daemon *cd = &d->cfg.daemon;
	struct link_source src = { .read = src_read, .recover = src_recover, .arg = d };
	size_t sz = rte_rcu_qsbr_get_memsize(d->n_workers > 0 ? d->n_workers : 1);

	d->qsbr = rte_zmalloc("roce_link_qsbr", sz, RTE_CACHE_LINE_SIZE);
	if (d->qsbr == NULL || rte_rcu_qsbr_init(d->qsbr, d->n_workers > 0 ? d->n_workers : 1) != 0) {
		snprintf(err, errlen, "link state: no memory for the workers' quiescent states");
		return -1;
	}
	if (link_tracker_init(&d->link, d->n_ports, &src, (uint64_t)cd->link_poll_ms * 1000000u,
			      (uint64_t)cd->link_retry_ms * 1000000u) != 0) {
		snprintf(err, errlen, "link state: %u ports, at most %u", d->n_ports, LINK_MAX_PORTS);
		return -1;
	}
	link_tracker_on_change(&d->link, on_change, d);
	d->link_sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0); /* -1: ethdev only */
	for (unsigned int i = 0; i < d->n_ports; i++) {
		struct port *p = &d->port[i];

		if (p->lsc && rte_eth_dev_callback_register(p->port_id, RTE_ETH_EVENT_INTR_LSC, lsc_cb,
							    d) == 0)
			d->link.port[i].lsc = true;
	}
	d->link_ready = true;
	(void)link_tick(&d->link, tsc_to_ns(d, rte_get_tsc_cycles()));
	return 0;
}

unsigned int
port_link_poll(struct daemon *d, uint64_t now_tsc)
{
	if (!d->link_ready)
		return 0;
	return restart_progress(d) + link_tick(&d->link, tsc_to_ns(d, now_tsc));
}

void
port_link_fini(struct daemon *d)
{
	for (unsigned int i = 0; i < d->link.n && i < d->n_ports; i++)
		if (d->link.port[i].lsc)
			(void)rte_eth_dev_callback_unregister(d->port[i].port_id,
							      RTE_ETH_EVENT_INTR_LSC, lsc_cb, d);
	memset(&d->link, 0, sizeof(d->link));
	if (d->link_sock >= 0)
		close(d->link_sock);
	d->link_sock = -1;
	rte_free(d->qsbr);
	d->qsbr = NULL;
	d->link_ready = false;
}
