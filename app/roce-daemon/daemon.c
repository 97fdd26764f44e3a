/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The steps of start-up and shutdown, each one function, called in order
 * by main.c (and by the in-process tests).
 */
#include "daemon.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_launch.h>
#include <rte_lcore.h>

#include "capture.h"
#include "counters.h"
#include "gid.h"
#include "port_link.h"

void
daemon_init(struct daemon *d, const struct config *cfg, const struct engine_ops *engine)
{
	memset(d, 0, sizeof(*d));
	d->cfg = *cfg;
	d->engine = engine != NULL ? engine : &engine_none;
	for (unsigned int i = 0; i < RTE_MAX_ETHPORTS; i++)
		d->port_index[i] = DAEMON_NO_PORT;
	atomic_init(&d->stop, false);
	d->control_sleep_us = 200;
	d->wake.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); /* -1: the period bounds the wait */
	d->link_sock = -1;
}

/* Mbufs that may sit in the daemon's own rings and buffers, per port pool. */
static uint32_t
ring_mbufs(const struct daemon *d)
{
	const struct config_daemon *cd = &d->cfg.daemon;
	uint32_t n = d->n_workers;

	return n * (cd->burst + WORKER_LOOP_MAX + WORKER_SLOW_RING + n * cd->burst +
		    (n - 1) * cd->handoff_ring) + WORKER_SLOW_RING;
}

int
daemon_open_ports(struct daemon *d, char *err, size_t errlen)
{
	struct port_params pp = {
		.n_workers = d->n_workers,
		.burst = d->cfg.daemon.burst,
		.handoff_ring = d->cfg.daemon.handoff_ring,
		.extra_mbufs = ring_mbufs(d),
	};

	for (unsigned int i = 0; i < d->cfg.n_ports; i++) {
		struct port *p = &d->port[i];

		if (port_open(p, (uint16_t)i, &d->cfg.ports[i], &pp, err, errlen) < 0) {
			d->n_ports = i + 1; /* close this one too */
			return -1;
		}
		d->n_ports = i + 1;
		if (d->port_index[p->port_id] != DAEMON_NO_PORT) {
			snprintf(err, errlen, "[port %s] is the same device as [port %s]",
				 p->cfg->name, d->port[d->port_index[p->port_id]].cfg->name);
			return -1;
		}
		d->port_index[p->port_id] = (uint16_t)i;
	}
	gid_device_attr(&d->cfg, d->port[0].mac, (uint8_t)d->n_ports, &d->dev_attr);
	return port_link_init(d, err, errlen);
}

int
daemon_plan_workers(struct daemon *d, char *err, size_t errlen)
{
	unsigned int n = rte_lcore_count();

	if (n < 2) {
		snprintf(err, errlen, "%u lcore enabled: need at least 2 (the first runs the control "
			 "thread, the others are workers), e.g. lcores = 0-1 in [daemon]", n);
		return -1;
	}
	if (n - 1 > WORKER_MAX) {
		snprintf(err, errlen, "%u worker lcores: at most %u are supported", n - 1, WORKER_MAX);
		return -1;
	}
	d->n_workers = n - 1;
	return 0;
}

int
daemon_create_workers(struct daemon *d, char *err, size_t errlen)
{
	unsigned int lcore, i = 0;

	RTE_LCORE_FOREACH_WORKER(lcore) {
		if (i >= d->n_workers)
			break;
		d->worker[i] = worker_create(d, i, lcore, d->engine, err, errlen);
		if (d->worker[i] == NULL)
			return -1;
		i++;
	}
	if (i != d->n_workers) {
		snprintf(err, errlen, "found %u worker lcores, expected %u", i, d->n_workers);
		return -1;
	}
	return worker_connect(d, err, errlen);
}

int
daemon_create_neigh(struct daemon *d, char *err, size_t errlen)
{
	const struct config_daemon *cd = &d->cfg.daemon;
	uint64_t hz = rte_get_tsc_hz();

	d->tsc_hz = hz;
	if (neigh_table_init(&d->neigh, cd->neigh_entries, hz * cd->neigh_reachable_s,
			     hz / 1000 * cd->neigh_retry_ms, cd->neigh_retries) != 0) {
		snprintf(err, errlen, "no memory for %u neighbours", cd->neigh_entries);
		return -1;
	}
	return 0;
}

int
daemon_launch_workers(struct daemon *d)
{
	for (unsigned int i = 0; i < d->n_workers; i++) {
		int rc = rte_eal_remote_launch(worker_main, d->worker[i], d->worker[i]->lcore_id);

		if (rc != 0) {
			daemon_request_stop(d);
			rte_eal_mp_wait_lcore();
			return rc;
		}
	}
	d->workers_running = true;
	return 0;
}

void
daemon_stop_workers(struct daemon *d)
{
	daemon_request_stop(d);
	if (d->workers_running) {
		for (unsigned int i = 0; i < d->n_workers; i++)
			if (rte_eal_wait_lcore(d->worker[i]->lcore_id) != 0)
				d->worker_failures++;
		d->workers_running = false;
	}
#ifndef NDEBUG
	/* The join ordered the workers' last stores before ours: we own them now. */
	for (unsigned int i = 0; i < d->n_workers; i++)
		if (d->worker[i] != NULL)
			WORKER_OWNER_SET(d->worker[i], rte_lcore_id());
#endif
}

void
daemon_shutdown(struct daemon *d)
{
	daemon_stop_workers(d);
	ctr_telemetry_register(NULL); /* telemetry answers -ENODEV from now on */
	capture_close(d);
	/* Frames the control thread queued after the workers stopped. */
	for (unsigned int i = 0; i < d->n_workers; i++) {
		worker_free(d->worker[i]);
		d->worker[i] = NULL;
	}
	port_link_fini(d);
	for (unsigned int i = 0; i < d->n_ports; i++)
		port_close(&d->port[i]);
	d->n_ports = 0;
	neigh_table_free(&d->neigh);
	if (d->wake.fd >= 0)
		close(d->wake.fd);
	d->wake.fd = -1;
}
