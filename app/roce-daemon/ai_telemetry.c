/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The application interface's telemetry (ai_telemetry.h): a snapshot the
 * control thread publishes each loop, read by DPDK's telemetry thread.
 */
#include "ai_telemetry.h"

#include <errno.h>
#include <stdio.h>

#include <rte_telemetry.h>

#include "cm.h"
#include "daemon.h"
#include "gsi.h"
#include "mcast.h"

#define AI_STAT_LIST(X) \
	X(conns) X(contexts) X(pd) X(mr) X(channel) X(cq) X(qp) X(srq) X(ah) X(dp_mrs) \
	X(events_dropped) X(ops_inflight) X(ctl_backlogged) X(ctl_refused) X(ctl_told_errors) \
	X(cq_signals_dropped) X(events_coalesced) X(destroys_held) X(quarantined) \
	X(quarantined_bytes) X(qkey_refused) X(quota_refused) X(conns_refused) \
	X(flow) X(raw_refused) X(flows_bad) X(dm) X(dm_bytes)

static struct {
#define AI_STAT_FIELD(name) atomic_uint_fast64_t name;
	AI_STAT_LIST(AI_STAT_FIELD)
#undef AI_STAT_FIELD
	atomic_bool live;
} ai_stats;
static bool ai_stats_registered; /* commands cannot be unregistered: once per process */

/*
 * rdma_cm counters (/roce/cm): the GSI's (gsi.h), the rdma_cm layer's
 * (lib/ctl CTL_CM_CTR_LIST) and the CM agent's (lib/cm CM_CTR_LIST, "cm_"
 * + name), snapshot by the control thread like ai_stats.
 */
static struct {
	atomic_uint_fast64_t gsi[GSI_CTR_COUNT];
	atomic_uint_fast64_t rdma_cm[CTL_CM_CTR_COUNT];
	atomic_uint_fast64_t cm[CM_CTR_COUNT];
	atomic_uint_fast64_t ids, channels;
} ai_cm_stats;
static bool ai_cm_stats_registered;

/* Engine events the workers could not pass on (worker_event_post()). */
static uint64_t
ai_events_lost(const struct app_iface *ai)
{
	uint64_t n = 0;

	for (unsigned int wi = 0; wi < ai->d->n_workers; wi++)
		n += __atomic_load_n(&ai->d->worker[wi]->events_lost, __ATOMIC_RELAXED);
	return n;
}

/* Engine events dropped as repeats of one still waiting in a worker's spill. */
static uint64_t
ai_events_coalesced(const struct app_iface *ai)
{
	uint64_t n = 0;

	for (unsigned int wi = 0; wi < ai->d->n_workers; wi++)
		n += __atomic_load_n(&ai->d->worker[wi]->events_coalesced, __ATOMIC_RELAXED);
	return n;
}

static void
cm_stats_publish(struct app_iface *ai)
{
	const uint64_t *g = ai->gsi ? gsi_counters(ai->gsi) : NULL;
	const uint64_t *r = ctl_cm_stats(ai->ctl);
	const uint64_t *c = ctl_cm_counters(ai->ctl);
	uint32_t ids = 0, chs = 0;

	for (unsigned int i = 0; g != NULL && i < GSI_CTR_COUNT; i++)
		atomic_store_explicit(&ai_cm_stats.gsi[i], g[i], memory_order_relaxed);
	for (unsigned int i = 0; r != NULL && i < CTL_CM_CTR_COUNT; i++)
		atomic_store_explicit(&ai_cm_stats.rdma_cm[i], r[i], memory_order_relaxed);
	for (unsigned int i = 0; c != NULL && i < CM_CTR_COUNT; i++)
		atomic_store_explicit(&ai_cm_stats.cm[i], c[i], memory_order_relaxed);
	ctl_cm_usage(ai->ctl, &ids, &chs);
	atomic_store_explicit(&ai_cm_stats.ids, ids, memory_order_relaxed);
	atomic_store_explicit(&ai_cm_stats.channels, chs, memory_order_relaxed);
}

static int
tel_cm_stats(const char *cmd, const char *params, struct rte_tel_data *t)
{
	static const char *const gsi_names[] = {
#define GSI_CTR_NAME(sym, name, desc) name,
		GSI_CTR_LIST(GSI_CTR_NAME)
#undef GSI_CTR_NAME
	};
	static const char *const rdma_cm_names[] = {
#define CTL_CM_CTR_NAME(sym, name, desc) name,
		CTL_CM_CTR_LIST(CTL_CM_CTR_NAME)
#undef CTL_CM_CTR_NAME
	};
	char name[64];

	(void)cmd;
	(void)params;
	if (!atomic_load_explicit(&ai_stats.live, memory_order_acquire))
		return -ENODEV;
	rte_tel_data_start_dict(t);
	rte_tel_data_add_dict_u64(t, "rdma_cm_ids", atomic_load(&ai_cm_stats.ids));
	rte_tel_data_add_dict_u64(t, "rdma_cm_channels", atomic_load(&ai_cm_stats.channels));
	for (unsigned int i = 0; i < GSI_CTR_COUNT; i++)
		rte_tel_data_add_dict_u64(t, gsi_names[i], atomic_load(&ai_cm_stats.gsi[i]));
	for (unsigned int i = 0; i < CTL_CM_CTR_COUNT; i++)
		rte_tel_data_add_dict_u64(t, rdma_cm_names[i], atomic_load(&ai_cm_stats.rdma_cm[i]));
	for (int i = 0; i < CM_CTR_COUNT; i++) {
		snprintf(name, sizeof(name), "cm_%s", cm_ctr_name(i));
		rte_tel_data_add_dict_u64(t, name, atomic_load(&ai_cm_stats.cm[i]));
	}
	return 0;
}

void
ai_stats_publish(struct app_iface *ai)
{
	struct ctl_stats st;
	struct ctl_mcast_stats mst;

	ctl_get_stats(ai->ctl, &st);
	ctl_mcast_get_stats(ai->ctl, &mst);
	mcast_publish_ctl(ai->d, &mst);
#define AI_STAT_STORE(name, v) atomic_store_explicit(&ai_stats.name, (v), memory_order_relaxed);
	AI_STAT_STORE(conns, st.conns)
	AI_STAT_STORE(contexts, st.contexts)
	AI_STAT_STORE(pd, st.pd)
	AI_STAT_STORE(mr, st.mr)
	AI_STAT_STORE(channel, st.channel)
	AI_STAT_STORE(cq, st.cq)
	AI_STAT_STORE(qp, st.qp)
	AI_STAT_STORE(srq, st.srq)
	AI_STAT_STORE(ah, st.ah)
	AI_STAT_STORE(dp_mrs, ai->dp_mrs)
	AI_STAT_STORE(events_dropped, st.events_dropped + ai->events_dropped + ai->d->events_dropped +
				      ai_events_lost(ai))
	AI_STAT_STORE(ops_inflight, ai->ops_inflight)
	AI_STAT_STORE(ctl_backlogged, ai->ctl_backlogged)
	AI_STAT_STORE(ctl_refused, ai->ctl_refused)
	AI_STAT_STORE(ctl_told_errors, ai->ctl_told_errors)
	AI_STAT_STORE(cq_signals_dropped, ai->cq_signals_dropped)
	AI_STAT_STORE(events_coalesced, ai_events_coalesced(ai))
	AI_STAT_STORE(destroys_held, ai->destroys_held)
	AI_STAT_STORE(quarantined, st.quarantined)
	AI_STAT_STORE(quarantined_bytes, st.quarantined_bytes)
	AI_STAT_STORE(qkey_refused, st.qkey_refused)
	AI_STAT_STORE(quota_refused, st.quota_refused)
	AI_STAT_STORE(conns_refused, st.conns_refused)
	AI_STAT_STORE(dm, st.dm)
	AI_STAT_STORE(dm_bytes, st.dm_bytes)
	AI_STAT_STORE(flow, st.flow)
	AI_STAT_STORE(raw_refused, st.raw_refused)
	AI_STAT_STORE(flows_bad, st.flows_bad)
#undef AI_STAT_STORE
	cm_stats_publish(ai);
}

static int
tel_app_stats(const char *cmd, const char *params, struct rte_tel_data *t)
{
	(void)cmd;
	(void)params;
	if (!atomic_load_explicit(&ai_stats.live, memory_order_acquire))
		return -ENODEV;
	rte_tel_data_start_dict(t);
#define AI_STAT_ADD(name) \
	rte_tel_data_add_dict_u64(t, #name, \
				  atomic_load_explicit(&ai_stats.name, memory_order_relaxed));
	AI_STAT_LIST(AI_STAT_ADD)
#undef AI_STAT_ADD
	return 0;
}

void
ai_telemetry_start(struct app_iface *ai, bool registered)
{
	ai_stats_publish(ai);
	if (registered && !ai_cm_stats_registered &&
	    rte_telemetry_register_cmd("/roce/cm", tel_cm_stats,
				       "rdma_cm: ids, channels, QP1 MADs, CM messages sent/received/"
				       "retried/rejected, malformed MADs. No parameters") == 0)
		ai_cm_stats_registered = true;
	if (registered && !ai_stats_registered &&
	    rte_telemetry_register_cmd("/roce/app/stats", tel_app_stats,
				       "Application objects (connections, PDs, MRs, CQs, QPs...) "
				       "and MRs on the lcores. No parameters") == 0)
		ai_stats_registered = true;
	atomic_store_explicit(&ai_stats.live, true, memory_order_release);
}

void
ai_telemetry_stop(void)
{
	atomic_store_explicit(&ai_stats.live, false, memory_order_release);
}
