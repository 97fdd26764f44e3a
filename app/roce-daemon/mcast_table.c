/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * UD multicast membership (mcast_table.h): one writer, the control thread;
 * every change of a group between rte_seqcount write begin and end, read
 * by the workers under the same seqcount.
 */
#include "mcast_table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>

#include "roce.h"

struct mcast_table *
mcast_table_new(void)
{
	struct mcast_table *t = calloc(1, sizeof(*t));

	if (t == NULL)
		return NULL;
	for (unsigned int p = 0; p < CONFIG_MAX_PORTS; p++)
		for (unsigned int i = 0; i < MCAST_MAX_GROUPS; i++)
			rte_seqcount_init(&t->port[p].grp[i].sc);
	return t;
}

void
mcast_table_free(struct mcast_table *t)
{
	free(t);
}

void
mcast_table_count(struct mcast_table *t, enum mcast_ctr c)
{
	__atomic_store_n(&t->ctr[c], t->ctr[c] + 1, __ATOMIC_RELAXED);
}

/* ---- the writer (control thread): plain reads, it is the only writer ---- */

struct mcast_group *
mcast_table_find(struct mcast_table *t, uint16_t port, const uint8_t gid[16])
{
	struct mcast_port *p = &t->port[port];

	for (unsigned int i = 0; i < MCAST_MAX_GROUPS; i++)
		if (p->grp[i].n != 0 && memcmp(p->grp[i].gid, gid, 16) == 0)
			return &p->grp[i];
	return NULL;
}

static struct mcast_group *
group_free_entry(struct mcast_port *p)
{
	for (unsigned int i = 0; i < MCAST_MAX_GROUPS; i++)
		if (p->grp[i].n == 0)
			return &p->grp[i];
	return NULL;
}

int
mcast_table_add(struct mcast_table *t, uint16_t port, const uint8_t gid[16], uint32_t qpn,
		bool *first)
{
	struct mcast_port *p = &t->port[port];
	struct mcast_group *g = mcast_table_find(t, port, gid);

	*first = g == NULL;
	if (*first)
		g = group_free_entry(p);
	if (g == NULL || g->n >= MCAST_MAX_MEMBERS || p->n_attach >= MCAST_MAX_ATTACH) {
		*first = false;
		mcast_table_count(t, MCAST_CTR_ATTACH_REFUSED);
		return ENOMEM;
	}
	for (uint32_t i = 0; i < g->n; i++)
		if (g->qpn[i] == qpn)
			return 0;
	rte_seqcount_write_begin(&g->sc);
	if (*first)
		memcpy(g->gid, gid, 16);
	g->qpn[g->n] = qpn;
	g->n++;
	rte_seqcount_write_end(&g->sc);
	p->n_attach++;
	if (*first)
		__atomic_store_n(&p->n_groups, p->n_groups + 1, __ATOMIC_RELAXED);
	return 0;
}

bool
mcast_table_remove(struct mcast_table *t, uint16_t port, const uint8_t gid[16], uint32_t qpn)
{
	struct mcast_port *p = &t->port[port];
	struct mcast_group *g = mcast_table_find(t, port, gid);

	if (g == NULL)
		return false;
	for (uint32_t i = 0; i < g->n; i++) {
		if (g->qpn[i] != qpn)
			continue;
		rte_seqcount_write_begin(&g->sc);
		g->qpn[i] = g->qpn[g->n - 1];
		g->n--;
		rte_seqcount_write_end(&g->sc);
		p->n_attach--;
		if (g->n != 0)
			return false;
		__atomic_store_n(&p->n_groups, p->n_groups - 1, __ATOMIC_RELAXED);
		return true;
	}
	return false;
}

/* ---- the readers (any thread) ---- */

uint32_t
mcast_members(const struct mcast_table *t, uint16_t port, const uint8_t gid[16],
	      uint32_t qpn[MCAST_MAX_MEMBERS])
{
	const struct mcast_port *p;

	if (!mcast_port_active(t, port))
		return 0;
	p = &t->port[port];
	for (unsigned int i = 0; i < MCAST_MAX_GROUPS; i++) {
		const struct mcast_group *g = &p->grp[i];
		uint32_t sn, n;
		bool match;

		do {
			sn = rte_seqcount_read_begin(&g->sc);
			n = RTE_MIN(g->n, MCAST_MAX_MEMBERS);
			match = n != 0 && memcmp(g->gid, gid, 16) == 0;
			if (match)
				memcpy(qpn, g->qpn, n * sizeof(qpn[0]));
		} while (rte_seqcount_read_retry(&g->sc, sn));
		if (match)
			return n;
	}
	return 0;
}

bool
mcast_is_ctl_frame(const uint8_t *f, uint32_t len)
{
	uint16_t et;
	size_t l3;

	/* untagged, or on the port's VLAN (the worker checked the VID) */
	if (!roce_eth_l3(f, len, &l3, &et) || len < l3 + 20)
		return false;
	if (et == 0x0800)
		return f[l3 + 9] == 2; /* IGMP (an IGMPv2 query is 46 bytes) */
	/* MLD always carries a hop-by-hop Router Alert (RFC 3810 section 5) */
	return et == 0x86dd && len >= l3 + 40 && f[l3 + 6] == 0 && f[l3 + 24] == 0xff;
}
