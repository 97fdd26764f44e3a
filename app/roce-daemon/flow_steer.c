/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Flow steering tables (flow_steer.h): one writer, the control thread;
 * every change of a port's table between rte_seqcount write begin and end,
 * read by the workers under the same seqcount.
 */
#include "flow_steer.h"

#include <errno.h>
#include <stdlib.h>

struct flow_steer *
flow_steer_new(uint32_t max_flows)
{
	struct flow_steer *s = calloc(1, sizeof(*s));

	if (s == NULL || max_flows == 0)
		goto fail;
	s->cap = max_flows;
	s->rules = calloc((size_t)CONFIG_MAX_PORTS * max_flows, sizeof(*s->rules));
	s->id_port = calloc(max_flows, sizeof(*s->id_port));
	s->id_index = calloc(max_flows, sizeof(*s->id_index));
	s->rss = calloc(max_flows, sizeof(*s->rss));
	if (s->rules == NULL || s->id_port == NULL || s->id_index == NULL || s->rss == NULL)
		goto fail;
	for (unsigned int p = 0; p < CONFIG_MAX_PORTS; p++) {
		rte_seqcount_init(&s->port[p].sc);
		flow_table_init(&s->port[p].t, &s->rules[(size_t)p * max_flows], max_flows);
	}
	return s;
fail:
	flow_steer_free(s);
	return NULL;
}

void
flow_steer_free(struct flow_steer *s)
{
	if (s == NULL)
		return;
	free(s->rules);
	free(s->id_port);
	free(s->id_index);
	free(s->rss);
	free(s);
}

/* ---- the writer (control thread) ---- */

static int steer_add(struct flow_steer *s, uint16_t port, uint32_t id, const struct flow_match *m,
		     uint16_t priority, uint32_t qpn, const struct flow_rss *rss);

int
flow_steer_add(struct flow_steer *s, uint16_t port, uint32_t id, const struct flow_match *m,
	       uint16_t priority, uint32_t qpn)
{
	return steer_add(s, port, id, m, priority, qpn, NULL);
}

int
flow_steer_add_rss(struct flow_steer *s, uint16_t port, uint32_t id, const struct flow_match *m,
		   uint16_t priority, const struct flow_rss *rss)
{
	return rss == NULL ? EINVAL : steer_add(s, port, id, m, priority, 0, rss);
}

static int
steer_add(struct flow_steer *s, uint16_t port, uint32_t id, const struct flow_match *m,
	  uint16_t priority, uint32_t qpn, const struct flow_rss *rss)
{
	struct flow_steer_port *p;
	int idx;

	if (port >= CONFIG_MAX_PORTS || id >= s->cap || s->id_port[id] != 0 ||
	    (qpn & FLOW_STEER_RSS) || (rss != NULL && flow_rss_check(rss) != 0))
		return EINVAL;
	p = &s->port[port];
	rte_seqcount_write_begin(&p->sc);
	if (rss != NULL) {
		s->rss[id] = *rss;
		qpn = FLOW_STEER_RSS | id;
	}
	idx = flow_table_add(&p->t, m, priority, qpn);
	rte_seqcount_write_end(&p->sc);
	if (idx < 0)
		return -idx;
	s->id_port[id] = (uint16_t)(port + 1);
	s->id_index[id] = (uint32_t)idx;
	__atomic_store_n(&p->n, p->t.n, __ATOMIC_RELAXED);
	return 0;
}

void
flow_steer_del(struct flow_steer *s, uint32_t id)
{
	struct flow_steer_port *p;

	if (id >= s->cap || s->id_port[id] == 0)
		return;
	p = &s->port[s->id_port[id] - 1];
	rte_seqcount_write_begin(&p->sc);
	(void)flow_table_del(&p->t, s->id_index[id]);
	rte_seqcount_write_end(&p->sc);
	s->id_port[id] = 0;
	__atomic_store_n(&p->n, p->t.n, __ATOMIC_RELAXED);
}

/* ---- the readers (any thread) ---- */

uint32_t
flow_steer_lookup(const struct flow_steer *s, uint16_t port, const struct flow_key *k,
		  uint32_t qpn[FLOW_STEER_MAX_DEST])
{
	const struct flow_steer_port *p;
	uint32_t sn, n;

	if (!flow_steer_active(s, port))
		return 0;
	p = &s->port[port];
	do {
		sn = rte_seqcount_read_begin(&p->sc);
		n = flow_table_lookup(&p->t, k, qpn, FLOW_STEER_MAX_DEST);
		/* an RSS rule's QP is the hash's pick, read under the same seqcount */
		for (uint32_t i = 0; i < n; i++)
			if (qpn[i] & FLOW_STEER_RSS)
				qpn[i] = flow_rss_pick(&s->rss[(qpn[i] & ~FLOW_STEER_RSS) % s->cap], k);
	} while (rte_seqcount_read_retry(&p->sc, sn));
	return n;
}
