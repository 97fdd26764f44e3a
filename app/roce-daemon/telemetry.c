/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The DPDK telemetry commands of the daemon (telemetry.h):
 *
 *   /roce/info                 daemon summary
 *   /roce/counters/help        every counter with its description
 *   /roce/port/list            port names, by index
 *   /roce/port/info,P          identity, MTU, link, queues of port P
 *   /roce/port/stats,P         counters of port P (sum over lcores), the QPN of its
 *                              latest rx_no_qp frame, ethdev stats
 *   /roce/port/gids,P          GID table of port P
 *   /roce/lcore/stats,W        counters of worker W
 *   /roce/qp/list              QPNs attached to the dataplane
 *   /roce/qp/stats,QPN         counters of one QP
 *   /roce/neigh                neighbour table
 *
 * Try: dpdk-telemetry.py -f PREFIX, then /roce/port/stats,0
 * Callbacks run on the telemetry thread and only read: counters with relaxed
 * loads, tables that do not change while running, neighbours via seqcount.
 * The rwlock keeps the daemon alive while a callback runs; shutdown takes it
 * for writing before freeing anything.
 */
#include "telemetry.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ethdev.h>
#include <rte_rwlock.h>
#include <rte_telemetry.h>

#include "counters.h"
#include "daemon_state.h"
#include "gid.h"
#include "neigh_table.h"
#include "port.h"
#include "worker.h"


static struct daemon *tel_daemon;       /* guarded by tel_lock */
static rte_rwlock_t tel_lock = RTE_RWLOCK_INITIALIZER;
static bool tel_registered;

/* "ICRC" -> "drop_icrc" */
static void
drop_key(enum roce_drop_reason r, char *buf, size_t len)
{
	size_t n = (size_t)snprintf(buf, len, "drop_%s", roce_drop_reason_name(r));

	for (size_t i = 5; i < n && i < len; i++)
		buf[i] = (char)tolower((unsigned char)buf[i]);
}

/*
 * Every counter of @p s kept in @p scope, into dict @p t.
 * @return 0, or the error of the first entry that did not fit (-ENOSPC: the
 * dict is full; the command fails rather than silently omit a counter)
 */
static int
add_set(struct rte_tel_data *t, const struct ctr_set *s, unsigned int scope)
{
	char key[CTR_NAME_MAX];
	int rc = 0;

	for (unsigned int i = 0; i < CTR_COUNT && rc == 0; i++)
		if (ctr_scopes((enum ctr_id)i) & scope)
			rc = rte_tel_data_add_dict_u64(t, ctr_name((enum ctr_id)i, key), s->v[i]);
	if (scope != CTR_S_QP) {
		for (unsigned int r = 1; r < ROCE_DROP_COUNT && rc == 0; r++) {
			drop_key((enum roce_drop_reason)r, key, sizeof(key));
			rc = rte_tel_data_add_dict_u64(t, key, s->drop[r]);
		}
	}
	return rc;
}

static bool
param_u32(const char *params, uint32_t *out)
{
	char *end;
	unsigned long v;

	if (params == NULL || *params == '\0')
		return false;
	errno = 0;
	v = strtoul(params, &end, 0);
	if (errno != 0 || *end != '\0' || v > UINT32_MAX)
		return false;
	*out = (uint32_t)v;
	return true;
}

static void
format_mac(const uint8_t mac[6], char *buf, size_t len)
{
	snprintf(buf, len, "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3],
		 mac[4], mac[5]);
}

static void
format_ip(const uint8_t ip[16], char *buf, size_t len)
{
	if (config_addr_is_v4mapped(ip))
		inet_ntop(AF_INET, ip + 12, buf, (socklen_t)len);
	else
		inet_ntop(AF_INET6, ip, buf, (socklen_t)len);
}

/* Run @p fn with the daemon read-locked; -ENODEV when it is gone. */
#define WITH_DAEMON(d, body) \
	do { \
		int rc_; \
		rte_rwlock_read_lock(&tel_lock); \
		struct daemon *d = tel_daemon; \
		if (d == NULL) { \
			rte_rwlock_read_unlock(&tel_lock); \
			return -ENODEV; \
		} \
		rc_ = (body); \
		rte_rwlock_read_unlock(&tel_lock); \
		return rc_; \
	} while (0)

static int
info_locked(struct daemon *d, struct rte_tel_data *t)
{
	rte_tel_data_start_dict(t);
	rte_tel_data_add_dict_string(t, "version", "roce-dpdk 0.1");
	rte_tel_data_add_dict_string(t, "config", d->cfg.path);
	rte_tel_data_add_dict_int(t, "ports", (int)d->n_ports);
	rte_tel_data_add_dict_int(t, "workers", (int)d->n_workers);
	rte_tel_data_add_dict_string(t, "engine", d->engine->name);
	rte_tel_data_add_dict_string(t, "idle", config_idle_name(d->cfg.daemon.idle));
	rte_tel_data_add_dict_int(t, "capture", d->capture != NULL);
	return 0;
}

static int
tel_info(const char *cmd, const char *params, struct rte_tel_data *t)
{
	(void)cmd;
	(void)params;
	WITH_DAEMON(d, info_locked(d, t));
}

/* Every counter with its description; @return 0 or the first negative error (dict full). */
static int
tel_help(const char *cmd, const char *params, struct rte_tel_data *t)
{
	char key[CTR_NAME_MAX];
	int rc = 0;

	(void)cmd;
	(void)params;
	rte_tel_data_start_dict(t);
	/* (a description over RTE_TEL_MAX_STRING_LEN is cut and answers E2BIG: not an error) */
	for (unsigned int i = 0; i < CTR_COUNT && rc >= 0; i++)
		rc = rte_tel_data_add_dict_string(t, ctr_name((enum ctr_id)i, key),
						  ctr_desc((enum ctr_id)i));
	for (unsigned int r = 1; r < ROCE_DROP_COUNT && rc >= 0; r++) {
		drop_key((enum roce_drop_reason)r, key, sizeof(key));
		rc = rte_tel_data_add_dict_string(t, key,
						  roce_drop_reason_str((enum roce_drop_reason)r));
	}
	if (rc >= 0)
		rc = rte_tel_data_add_dict_string(t, "rx_no_qp_last_qpn",
						  "port stats: destination QPN of the latest rx_no_qp frame (0: none)");
	return rc < 0 ? rc : 0;
}

static int
port_list_locked(struct daemon *d, struct rte_tel_data *t)
{
	rte_tel_data_start_array(t, RTE_TEL_STRING_VAL);
	for (unsigned int i = 0; i < d->n_ports; i++)
		rte_tel_data_add_array_string(t, d->port[i].cfg->name);
	return 0;
}

static int
tel_port_list(const char *cmd, const char *params, struct rte_tel_data *t)
{
	(void)cmd;
	(void)params;
	WITH_DAEMON(d, port_list_locked(d, t));
}

static int
port_info_locked(struct daemon *d, const char *params, struct rte_tel_data *t)
{
	uint32_t idx, speed = 0;
	char mac[32];

	if (!param_u32(params, &idx) || idx >= d->n_ports)
		return -EINVAL;
	const struct port *p = &d->port[idx];
	bool up = port_link(p, &speed);

	rte_tel_data_start_dict(t);
	rte_tel_data_add_dict_string(t, "name", p->cfg->name);
	rte_tel_data_add_dict_int(t, "port_id", p->port_id);
	rte_tel_data_add_dict_string(t, "driver", p->driver);
	rte_tel_data_add_dict_string(t, "devargs", p->cfg->devargs);
	rte_tel_data_add_dict_string(t, "ifname", p->ifname);
	format_mac(p->mac, mac, sizeof(mac));
	rte_tel_data_add_dict_string(t, "mac", mac);
	rte_tel_data_add_dict_int(t, "mtu", (int)p->mtu);
	rte_tel_data_add_dict_int(t, "ib_mtu", (int)roce_mtu_bytes((uint8_t)gid_ib_mtu_from_ip_mtu(p->mtu)));
	rte_tel_data_add_dict_string(t, "mode", p->cfg->mode == CONFIG_PORT_SHARED ? "shared" : "dedicated");
	/* 802.1Q VID of every frame and GID of the port (0: untagged), priorities of data and CNPs */
	rte_tel_data_add_dict_int(t, "vlan", port_vlan(p));
	rte_tel_data_add_dict_int(t, "pcp", p->cc.pcp);
	rte_tel_data_add_dict_int(t, "cnp_pcp", p->cc.cnp_pcp);
	rte_tel_data_add_dict_string(t, "link", up ? "up" : "down");
	rte_tel_data_add_dict_int(t, "speed_mbps", (int)speed);
	if (idx < d->link.n) {
		const struct link_port *lp = &d->link.port[idx];

		rte_tel_data_add_dict_string(t, "link_source", lp->lsc ? "lsc+poll" : "poll");
		rte_tel_data_add_dict_int(t, "link_mtu", (int)__atomic_load_n(&p->link_mtu, __ATOMIC_RELAXED));
		rte_tel_data_add_dict_u64(t, "link_ups", __atomic_load_n(&lp->ups, __ATOMIC_RELAXED));
		rte_tel_data_add_dict_u64(t, "link_downs", __atomic_load_n(&lp->downs, __ATOMIC_RELAXED));
		rte_tel_data_add_dict_u64(t, "link_lsc_events",
					  __atomic_load_n(&lp->lsc_events, __ATOMIC_RELAXED));
		rte_tel_data_add_dict_u64(t, "link_restarts",
					  __atomic_load_n(&p->restarts, __ATOMIC_RELAXED));
	}
	rte_tel_data_add_dict_int(t, "rx_queues", p->n_rxq);
	rte_tel_data_add_dict_int(t, "tx_queues", p->n_txq);
	return 0;
}

static int
tel_port_info(const char *cmd, const char *params, struct rte_tel_data *t)
{
	(void)cmd;
	WITH_DAEMON(d, port_info_locked(d, params, t));
}

/* The destination QPN of port @p idx's latest rx_no_qp frame over all lcores (0: none). */
static uint32_t
port_no_qp_last(const struct daemon *d, uint32_t idx)
{
	uint64_t last = 0;

	for (unsigned int w = 0; w < d->n_workers; w++) {
		uint64_t v = __atomic_load_n(&d->worker[w]->no_qp_last[idx], __ATOMIC_RELAXED);

		if (v > last)
			last = v;
	}
	return (uint32_t)(last & ROCE_QPN_MASK);
}

static int
port_stats_locked(struct daemon *d, const char *params, struct rte_tel_data *t)
{
	struct ctr_set sum;
	struct rte_eth_stats es;
	uint32_t idx;
	int rc;

	if (!param_u32(params, &idx) || idx >= d->n_ports)
		return -EINVAL;
	memset(&sum, 0, sizeof(sum));
	for (unsigned int w = 0; w < d->n_workers; w++)
		ctr_set_accumulate(&sum, &d->worker[w]->port_ctr[idx]);
	rte_tel_data_start_dict(t);
	rc = add_set(t, &sum, CTR_S_PORT);
	if (rc != 0)
		return rc;
	rte_tel_data_add_dict_u64(t, "rx_no_qp_last_qpn", port_no_qp_last(d, idx));
	if (rte_eth_stats_get(d->port[idx].port_id, &es) == 0) {
		rte_tel_data_add_dict_u64(t, "eth_ipackets", es.ipackets);
		rte_tel_data_add_dict_u64(t, "eth_opackets", es.opackets);
		/* af_packet: the kernel's ring drops, which the PMD does not count */
		rte_tel_data_add_dict_u64(t, "eth_imissed", es.imissed + port_rx_ring_drops(&d->port[idx]));
		rte_tel_data_add_dict_u64(t, "eth_ierrors", es.ierrors);
		rte_tel_data_add_dict_u64(t, "eth_oerrors", es.oerrors);
		rte_tel_data_add_dict_u64(t, "eth_rx_nombuf", es.rx_nombuf);
	}
	return 0;
}

static int
tel_port_stats(const char *cmd, const char *params, struct rte_tel_data *t)
{
	(void)cmd;
	WITH_DAEMON(d, port_stats_locked(d, params, t));
}

static int
port_gids_locked(struct daemon *d, const char *params, struct rte_tel_data *t)
{
	uint32_t idx;
	char ip[64], key[16];

	if (!param_u32(params, &idx) || idx >= d->n_ports)
		return -EINVAL;
	const struct gid_table *g = &d->port[idx].gids;

	rte_tel_data_start_dict(t);
	for (unsigned int i = 0; i < g->n; i++) {
		if (!g->entry[i].valid)
			continue;
		inet_ntop(AF_INET6, g->entry[i].gid, ip, sizeof(ip));
		snprintf(key, sizeof(key), "%u", i);
		rte_tel_data_add_dict_string(t, key, ip);
	}
	snprintf(key, sizeof(key), "pkey0");
	rte_tel_data_add_dict_int(t, key, g->pkey[0]);
	/* every GID is on the port's VLAN, as rxe's GIDs are on the VLAN netdev they come from */
	rte_tel_data_add_dict_int(t, "vlan", port_vlan(&d->port[idx]));
	return 0;
}

static int
tel_port_gids(const char *cmd, const char *params, struct rte_tel_data *t)
{
	(void)cmd;
	WITH_DAEMON(d, port_gids_locked(d, params, t));
}

static int
lcore_stats_locked(struct daemon *d, const char *params, struct rte_tel_data *t)
{
	uint32_t idx;
	struct ctr_set sum;

	if (!param_u32(params, &idx) || idx >= d->n_workers)
		return -EINVAL;
	memset(&sum, 0, sizeof(sum));
	ctr_set_accumulate(&sum, &d->worker[idx]->ctr);
	rte_tel_data_start_dict(t);
	rte_tel_data_add_dict_int(t, "lcore", (int)d->worker[idx]->lcore_id);
	return add_set(t, &sum, CTR_S_LCORE);
}

static int
tel_lcore_stats(const char *cmd, const char *params, struct rte_tel_data *t)
{
	(void)cmd;
	WITH_DAEMON(d, lcore_stats_locked(d, params, t));
}

static int
qp_list_locked(struct daemon *d, struct rte_tel_data *t)
{
	rte_tel_data_start_array(t, RTE_TEL_INT_VAL);
	for (unsigned int w = 0; w < d->n_workers; w++) {
		const struct worker *wk = d->worker[w];

		for (uint32_t s = 0; s < wk->n_qp_slots; s++) {
			void *qp = __atomic_load_n(&wk->qp[s].engine_qp, __ATOMIC_ACQUIRE);

			if (qp != NULL)
				rte_tel_data_add_array_int(t, (int)__atomic_load_n(&wk->qp[s].qpn,
										  __ATOMIC_RELAXED));
		}
	}
	return 0;
}

static int
tel_qp_list(const char *cmd, const char *params, struct rte_tel_data *t)
{
	(void)cmd;
	(void)params;
	WITH_DAEMON(d, qp_list_locked(d, t));
}

static int
qp_stats_locked(struct daemon *d, const char *params, struct rte_tel_data *t)
{
	uint32_t qpn;
	struct ctr_set sum;

	if (!param_u32(params, &qpn) || qpn > ROCE_QPN_MASK || d->n_workers == 0)
		return -EINVAL;
	const struct worker *w = d->worker[worker_of_qpn(qpn, d->n_workers)];
	uint32_t s = qpn / d->n_workers;

	if (s >= w->n_qp_slots || __atomic_load_n(&w->qp[s].engine_qp, __ATOMIC_ACQUIRE) == NULL ||
	    __atomic_load_n(&w->qp[s].qpn, __ATOMIC_RELAXED) != qpn)
		return -ENOENT;
	memset(&sum, 0, sizeof(sum));
	ctr_set_accumulate(&sum, &w->qp[s].ctr);
	rte_tel_data_start_dict(t);
	rte_tel_data_add_dict_int(t, "qpn", (int)qpn);
	rte_tel_data_add_dict_int(t, "lcore", (int)w->lcore_id);
	return add_set(t, &sum, CTR_S_QP);
}

static int
tel_qp_stats(const char *cmd, const char *params, struct rte_tel_data *t)
{
	(void)cmd;
	WITH_DAEMON(d, qp_stats_locked(d, params, t));
}

static const char *const neigh_state_names[] = {
	[NEIGH_FREE] = "free", [NEIGH_INCOMPLETE] = "incomplete", [NEIGH_REACHABLE] = "reachable",
	[NEIGH_FAILED] = "failed", [NEIGH_LOCAL] = "local",
};

static int
neigh_locked(struct daemon *d, struct rte_tel_data *t)
{
	const struct neigh_table *nt = &d->neigh;
	uint32_t n = nt->n_buckets * NEIGH_WAYS;

	rte_tel_data_start_array(t, RTE_TEL_STRING_VAL);
	for (uint32_t i = 0; i < n && nt->entry != NULL; i++) {
		const struct neigh_entry *e = &nt->entry[i];
		uint8_t ip[16], mac[6], state;
		uint16_t port;
		uint32_t sn;
		char line[192], ips[64], macs[32];

		do {
			sn = rte_seqcount_read_begin(&e->sc);
			memcpy(ip, e->ip, 16);
			memcpy(mac, e->mac, 6);
			state = e->state;
			port = e->port;
		} while (rte_seqcount_read_retry(&e->sc, sn));
		if (state == NEIGH_FREE || state > NEIGH_LOCAL)
			continue;
		format_ip(ip, ips, sizeof(ips));
		format_mac(mac, macs, sizeof(macs));
		snprintf(line, sizeof(line), "%s %s %s %s",
			 port < d->n_ports ? d->port[port].cfg->name : "?", ips,
			 state == NEIGH_REACHABLE ? macs : "-", neigh_state_names[state]);
		rte_tel_data_add_array_string(t, line);
	}
	return 0;
}

static int
tel_neigh(const char *cmd, const char *params, struct rte_tel_data *t)
{
	(void)cmd;
	(void)params;
	WITH_DAEMON(d, neigh_locked(d, t));
}

static const struct {
	const char *cmd;
	telemetry_cb fn;
	const char *help;
} tel_cmds[] = {
	{ "/roce/info", tel_info, "Daemon summary. No parameters" },
	{ "/roce/counters/help", tel_help, "Every counter with its meaning. No parameters" },
	{ "/roce/port/list", tel_port_list, "Port names by index. No parameters" },
	{ "/roce/port/info", tel_port_info, "Port identity, MTU, link. Parameter: port index" },
	{ "/roce/port/stats", tel_port_stats, "Port counters (all lcores). Parameter: port index" },
	{ "/roce/port/gids", tel_port_gids, "GID table. Parameter: port index" },
	{ "/roce/lcore/stats", tel_lcore_stats, "Worker counters. Parameter: worker index" },
	{ "/roce/qp/list", tel_qp_list, "QPNs attached to the dataplane. No parameters" },
	{ "/roce/qp/stats", tel_qp_stats, "QP counters. Parameter: QPN" },
	{ "/roce/neigh", tel_neigh, "Neighbour table. No parameters" },
};

int
ctr_telemetry_register(struct daemon *d)
{
	rte_rwlock_write_lock(&tel_lock);
	tel_daemon = d;
	rte_rwlock_write_unlock(&tel_lock);
	if (d == NULL || tel_registered)
		return 0;
	for (size_t i = 0; i < sizeof(tel_cmds) / sizeof(tel_cmds[0]); i++) {
		int rc = rte_telemetry_register_cmd(tel_cmds[i].cmd, tel_cmds[i].fn, tel_cmds[i].help);

		if (rc != 0)
			return rc;
	}
	tel_registered = true;
	return 0;
}
