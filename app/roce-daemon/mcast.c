/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * UD multicast, the control side (mcast.h): attach/detach into the
 * membership table (mcast_table.c) and the host's IGMP/MLD membership on
 * the link.
 */
#include "mcast.h"

#include <errno.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_mbuf.h>
#include <rte_telemetry.h>

#include "daemon_state.h"
#include "gid.h"
#include "roce_mcast.h"
#include "worker.h"

#define MCAST_REPEAT_MS 1000u        /* RFC 3376 section 8.11: Unsolicited Report Interval */
#define MCAST_V2_QUERIER_S 260u      /* RFC 3376 section 8.12: Older Version Querier Present */
#define MCAST_REPORT_GROUPS 32u      /* groups per current-state report frame */
#define MCAST_FRAME_MAX 1024u

static struct mcast_table *mcast_tel; /* what /roce/mcast reads; NULL: no daemon */
static bool mcast_tel_registered;

/* ---- reports on the link ---- */

/* The port's source address for IGMP (its first IPv4 GID) or MLD (link-local). */
static bool
report_source(const struct port *p, bool v4, uint8_t src[16])
{
	if (!v4) {
		gid_link_local_from_mac(p->mac, src);
		return true;
	}
	for (unsigned int i = 0; i < p->gids.n; i++) {
		if (p->gids.entry[i].valid && p->gids.entry[i].ipv4) {
			memcpy(src, p->gids.entry[i].gid, 16);
			return true;
		}
	}
	return false;
}

static int
report_send(struct daemon *d, uint16_t port, enum roce_mcast_rec rec, const uint8_t (*groups)[16],
	    unsigned int n)
{
	struct mcast_table *t = d->mcast;
	const struct port *p = &d->port[port];
	bool v4 = roce_gid_is_v4mapped(groups[0]);
	unsigned int version = v4 && rte_get_tsc_cycles() < t->port[port].igmp_v2_until ? 2 : 3;
	uint8_t src[16], buf[MCAST_FRAME_MAX];
	struct rte_mbuf *m;
	size_t len;
	char *dst;

	if (!v4)
		version = 2; /* MLDv2 */
	if (!report_source(p, v4, src))
		goto fail;
	if (v4 && version == 2) {
		/* IGMPv2 has one group per message */
		int sent = 0;

		for (unsigned int i = 0; i < n; i++) {
			len = roce_mcast_report_build(buf, sizeof(buf), p->mac, src, 2, rec, &groups[i], 1);
			m = len != 0 ? rte_pktmbuf_alloc(p->pool) : NULL;
			dst = m != NULL ? rte_pktmbuf_append(m, (uint16_t)len) : NULL;
			if (dst == NULL) {
				rte_pktmbuf_free(m);
				mcast_table_count(t, MCAST_CTR_REPORTS_FAILED);
				continue;
			}
			memcpy(dst, buf, len);
			worker_ctl_tx(d, port, m);
			mcast_table_count(t, MCAST_CTR_REPORTS_TX);
			sent++;
		}
		return sent > 0 ? 0 : -ENOBUFS;
	}
	len = roce_mcast_report_build(buf, sizeof(buf), p->mac, src, version, rec, groups, n);
	m = len != 0 ? rte_pktmbuf_alloc(p->pool) : NULL;
	dst = m != NULL ? rte_pktmbuf_append(m, (uint16_t)len) : NULL;
	if (dst == NULL) {
		rte_pktmbuf_free(m);
		goto fail;
	}
	memcpy(dst, buf, len);
	worker_ctl_tx(d, port, m);
	mcast_table_count(t, MCAST_CTR_REPORTS_TX);
	return 0;
fail:
	mcast_table_count(t, MCAST_CTR_REPORTS_FAILED);
	return -ENOBUFS;
}

/* A join or leave: sent now and once more MCAST_REPEAT_MS later. */
static void
report_change(struct daemon *d, uint16_t port, const uint8_t gid[16], bool leave)
{
	struct mcast_table *t = d->mcast;
	uint8_t g[1][16];

	memcpy(g[0], gid, 16);
	(void)report_send(d, port, leave ? ROCE_MCAST_LEAVE : ROCE_MCAST_JOIN, g, 1);
	for (unsigned int i = 0; i < MCAST_REPEATS; i++) {
		struct mcast_repeat *r = &t->repeat[i];

		/* a newer change of the same group replaces the older one's repeat */
		if (r->due != 0 && !(r->port == port && memcmp(r->gid, gid, 16) == 0))
			continue;
		r->due = rte_get_tsc_cycles() + rte_get_tsc_hz() / 1000 * MCAST_REPEAT_MS;
		r->port = port;
		r->leave = leave;
		memcpy(r->gid, gid, 16);
		return;
	}
}

unsigned int
mcast_tick(struct daemon *d, uint64_t now)
{
	struct mcast_table *t = d->mcast;
	unsigned int n = 0;

	if (t == NULL)
		return 0;
	for (unsigned int i = 0; i < MCAST_REPEATS; i++) {
		struct mcast_repeat *r = &t->repeat[i];
		uint8_t g[1][16];

		if (r->due == 0 || now < r->due)
			continue;
		r->due = 0;
		/* a join whose group has gone meanwhile (or a leave rejoined) is moot */
		if ((mcast_table_find(t, r->port, r->gid) == NULL) != r->leave)
			continue;
		memcpy(g[0], r->gid, 16);
		(void)report_send(d, r->port, r->leave ? ROCE_MCAST_LEAVE : ROCE_MCAST_JOIN, g, 1);
		n++;
	}
	return n;
}

/* Answer a query: our groups of that family (or the one asked for) as current state. */
static void
query_answer(struct daemon *d, uint16_t port, const struct roce_mcast_query *q)
{
	static const uint8_t zero[16];
	struct mcast_port *p = &d->mcast->port[port];
	uint8_t groups[MCAST_REPORT_GROUPS][16];
	unsigned int n = 0;
	bool general = memcmp(q->group, zero, 16) == 0;

	for (unsigned int i = 0; i < MCAST_MAX_GROUPS; i++) {
		const struct mcast_group *g = &p->grp[i];

		if (g->n == 0 || roce_gid_is_v4mapped(g->gid) == q->ipv6)
			continue;
		if (!general && memcmp(g->gid, q->group, 16) != 0)
			continue;
		memcpy(groups[n++], g->gid, 16);
		if (n == MCAST_REPORT_GROUPS) {
			(void)report_send(d, port, ROCE_MCAST_CURRENT, groups, n);
			n = 0;
		}
	}
	if (n > 0)
		(void)report_send(d, port, ROCE_MCAST_CURRENT, groups, n);
	mcast_table_count(d->mcast, MCAST_CTR_QUERIES_ANSWERED);
}

bool
mcast_input(struct daemon *d, uint16_t port, struct rte_mbuf *m)
{
	struct roce_mcast_query q;

	if (d->mcast == NULL || port >= d->n_ports ||
	    !roce_mcast_query_parse(rte_pktmbuf_mtod(m, const uint8_t *), m->data_len, &q))
		return false;
	mcast_table_count(d->mcast, MCAST_CTR_QUERIES_RX);
	if (!q.ipv6 && q.version < 3)
		d->mcast->port[port].igmp_v2_until =
			rte_get_tsc_cycles() + rte_get_tsc_hz() * MCAST_V2_QUERIER_S;
	if (mcast_port_active(d->mcast, port))
		query_answer(d, port, &q);
	rte_pktmbuf_free(m);
	return true;
}

/* ---- membership changes (control thread) ---- */

int
mcast_attach(struct daemon *d, const struct ctl_mcast_info *mi)
{
	bool first;
	int rc;

	if (d->mcast == NULL || mi->dev >= d->n_ports)
		return EINVAL;
	rc = mcast_table_add(d->mcast, (uint16_t)mi->dev, mi->gid, mi->qpn, &first);
	if (rc == 0 && first)
		report_change(d, (uint16_t)mi->dev, mi->gid, false);
	return rc;
}

void
mcast_detach(struct daemon *d, const struct ctl_mcast_info *mi)
{
	if (d->mcast == NULL || mi->dev >= d->n_ports)
		return;
	if (mcast_table_remove(d->mcast, (uint16_t)mi->dev, mi->gid, mi->qpn))
		report_change(d, (uint16_t)mi->dev, mi->gid, true);
}

/* ---- telemetry ---- */

static int
tel_mcast(const char *cmd, const char *params, struct rte_tel_data *t)
{
	static const char *const names[] = {
#define MCAST_CTR_NAME(sym, name, desc) name,
		MCAST_CTR_LIST(MCAST_CTR_NAME)
#undef MCAST_CTR_NAME
	};
	const struct mcast_table *m = __atomic_load_n(&mcast_tel, __ATOMIC_ACQUIRE);
	uint64_t groups = 0, attached = 0;

	(void)cmd;
	(void)params;
	if (m == NULL)
		return -ENODEV;
	for (unsigned int p = 0; p < CONFIG_MAX_PORTS; p++) {
		groups += __atomic_load_n(&m->port[p].n_groups, __ATOMIC_RELAXED);
		attached += __atomic_load_n(&m->port[p].n_attach, __ATOMIC_RELAXED);
	}
	rte_tel_data_start_dict(t);
	rte_tel_data_add_dict_u64(t, "groups", groups);
	rte_tel_data_add_dict_u64(t, "attached", attached);
	for (unsigned int i = 0; i < MCAST_CTR_COUNT; i++)
		rte_tel_data_add_dict_u64(t, names[i], __atomic_load_n(&m->ctr[i], __ATOMIC_RELAXED));
#define MCAST_TEL_CTL(f) \
	rte_tel_data_add_dict_u64(t, "ctl_" #f, __atomic_load_n(&m->ctl.f, __ATOMIC_RELAXED));
	MCAST_TEL_CTL(attaches)
	MCAST_TEL_CTL(detaches)
	MCAST_TEL_CTL(refused_groups)
	MCAST_TEL_CTL(refused_group_full)
	MCAST_TEL_CTL(refused_total)
	MCAST_TEL_CTL(refused_quota)
	MCAST_TEL_CTL(refused_bad)
	MCAST_TEL_CTL(refused_dp)
	MCAST_TEL_CTL(cm_joins)
	MCAST_TEL_CTL(cm_refused)
#undef MCAST_TEL_CTL
	return 0;
}

void
mcast_publish_ctl(struct daemon *d, const struct ctl_mcast_stats *st)
{
	struct ctl_mcast_stats *o;

	if (d->mcast == NULL)
		return;
	o = &d->mcast->ctl;
#define MCAST_PUB(f) __atomic_store_n(&o->f, st->f, __ATOMIC_RELAXED);
	MCAST_PUB(groups)
	MCAST_PUB(attached)
	MCAST_PUB(attaches)
	MCAST_PUB(detaches)
	MCAST_PUB(refused_groups)
	MCAST_PUB(refused_group_full)
	MCAST_PUB(refused_total)
	MCAST_PUB(refused_quota)
	MCAST_PUB(refused_bad)
	MCAST_PUB(refused_dp)
	MCAST_PUB(cm_joins)
	MCAST_PUB(cm_refused)
#undef MCAST_PUB
}

int
mcast_create(struct daemon *d)
{
	struct mcast_table *t = mcast_table_new();

	if (t == NULL)
		return -ENOMEM;
	d->mcast = t;
	__atomic_store_n(&mcast_tel, t, __ATOMIC_RELEASE);
	if (d->cfg.daemon.telemetry && !mcast_tel_registered &&
	    rte_telemetry_register_cmd("/roce/mcast", tel_mcast,
				       "UD multicast: groups, attached QPs, IGMP/MLD reports sent, "
				       "queries heard and answered, refused attaches. No parameters") == 0)
		mcast_tel_registered = true;
	return 0;
}

void
mcast_destroy(struct daemon *d)
{
	if (d->mcast == NULL)
		return;
	if (__atomic_load_n(&mcast_tel, __ATOMIC_RELAXED) == d->mcast)
		__atomic_store_n(&mcast_tel, NULL, __ATOMIC_RELEASE);
	mcast_table_free(d->mcast);
	d->mcast = NULL;
}
