/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pcapng capture: workers copy, the control thread writes (capture.h).
 */
#include "capture.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_pcapng.h>
#include <rte_ring.h>

#include "daemon_state.h"
#include "worker.h"

#define CAPTURE_RING 1024u
#define CAPTURE_POOL 4095u

struct capture {
	rte_pcapng_t *pcapng;
	int fd;
	struct rte_mempool *pool;
	uint64_t max_packets;     /**< 0: unlimited */
	uint64_t written;
	uint64_t start_ns;
	uint64_t dropped_at_close;
};

int
capture_open(struct daemon *d, const char *path, uint64_t max_packets, char *err, size_t errlen)
{
	struct capture *c = calloc(1, sizeof(*c));
	uint32_t frame_max = 0;

	if (c == NULL) {
		snprintf(err, errlen, "capture: out of memory");
		return -1;
	}
	for (unsigned int p = 0; p < d->n_ports; p++)
		frame_max = RTE_MAX(frame_max, d->port[p].frame_max);
	c->max_packets = max_packets;
	c->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (c->fd < 0) {
		snprintf(err, errlen, "--pcap %s: %s", path, strerror(errno));
		free(c);
		return -1;
	}
	c->pool = rte_pktmbuf_pool_create("roce_capture", CAPTURE_POOL, 64, 0,
					  (uint16_t)rte_pcapng_mbuf_size(frame_max),
					  (int)rte_socket_id());
	if (c->pool == NULL) {
		snprintf(err, errlen, "--pcap: cannot create the copy pool: %s",
			 rte_strerror(rte_errno));
		goto fail;
	}
	c->pcapng = rte_pcapng_fdopen(c->fd, NULL, NULL, "roce-daemon", "RoCEv2 dataplane capture");
	if (c->pcapng == NULL) {
		snprintf(err, errlen, "--pcap %s: %s", path, rte_strerror(rte_errno));
		goto fail;
	}
	c->start_ns = (uint64_t)((double)rte_get_tsc_cycles() * 1e9 / (double)rte_get_tsc_hz());
	for (unsigned int i = 0; i < d->n_workers; i++) {
		char name[RTE_RING_NAMESIZE];
		struct worker *w = d->worker[i];

		snprintf(name, sizeof(name), "roce_cap%u", i);
		w->capture_pool = c->pool;
		w->capture = rte_ring_create(name, CAPTURE_RING, (int)rte_socket_id(),
					     RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (w->capture == NULL) {
			snprintf(err, errlen, "--pcap: cannot create ring %s", name);
			d->capture = c;
			capture_close(d);
			return -1;
		}
	}
	d->capture = c;
	return 0;
fail:
	rte_mempool_free(c->pool);
	close(c->fd);
	free(c);
	return -1;
}

unsigned int
capture_drain(struct daemon *d)
{
	struct capture *c = d->capture;
	struct rte_mbuf *pkts[64];
	unsigned int total = 0;

	if (c == NULL)
		return 0;
	for (unsigned int i = 0; i < d->n_workers; i++) {
		struct rte_ring *r = d->worker[i]->capture;
		unsigned int n;

		while (r != NULL && (n = rte_ring_sc_dequeue_burst(r, (void **)pkts, RTE_DIM(pkts),
								   NULL)) > 0) {
			unsigned int keep = n;

			if (c->max_packets != 0 && c->written + n > c->max_packets)
				keep = c->written < c->max_packets ? (unsigned int)(c->max_packets - c->written) : 0;
			if (keep < n) {
				rte_pktmbuf_free_bulk(&pkts[keep], n - keep);
				c->dropped_at_close += n - keep;
			}
			if (keep > 0 && rte_pcapng_write_packets(c->pcapng, pkts, (uint16_t)keep) < 0)
				c->dropped_at_close += keep;
			else
				c->written += keep;
			total += keep;
		}
	}
	return total;
}

void
capture_close(struct daemon *d)
{
	struct capture *c = d->capture;
	uint64_t end_ns;

	if (c == NULL)
		return;
	capture_drain(d);
	end_ns = (uint64_t)((double)rte_get_tsc_cycles() * 1e9 / (double)rte_get_tsc_hz());
	for (unsigned int p = 0; p < d->n_ports; p++)
		rte_pcapng_write_stats(c->pcapng, d->port[p].port_id, NULL, c->start_ns, end_ns,
				       c->written, c->dropped_at_close);
	for (unsigned int i = 0; i < d->n_workers; i++) {
		struct worker *w = d->worker[i];

		if (w->capture != NULL) {
			struct rte_mbuf *m;

			while (rte_ring_sc_dequeue(w->capture, (void **)&m) == 0)
				rte_pktmbuf_free(m);
			rte_ring_free(w->capture);
			w->capture = NULL;
		}
	}
	rte_pcapng_close(c->pcapng); /* closes the fd */
	rte_mempool_free(c->pool);
	free(c);
	d->capture = NULL;
}
