/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/ctl on the dataplane (app_iface.h): set-up and teardown, the
 * control-loop hook, and the three tables that tie the roles together:
 *  - ai_ops: lib/ctl's dataplane callbacks -> the role that carries them out;
 *  - ai_lcore_fns: each control message (CTL_MSG_LIST) -> its handler on
 *    the owner lcore;
 *  - ai_answered_fns: each operation kind (AI_OP_LIST) -> the function that
 *    takes its answers.
 * The roles, one file each, are listed in ai_state.h; nothing below this
 * file calls up into it except through these tables.
 */
#include "app_iface.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>

#include "ah_table.h"
#include "ai_cq.h"
#include "ai_event.h"
#include "ai_mr.h"
#include "ai_op.h"
#include "ai_qp.h"
#include "ai_resolve.h"
#include "ai_telemetry.h"
#include "config.h"
#include "daemon.h"
#include "flow_steer.h"
#include "gid.h"
#include "gid_ndev.h"
#include "gsi.h"
#include "mcast.h"
#include "mr.h"
#include "port.h"
#include "wqe.h"

static int
dp_mcast_attach(void *dp, const struct ctl_mcast_info *m)
{
	return mcast_attach(((struct app_iface *)dp)->d, m);
}

static void
dp_mcast_detach(void *dp, const struct ctl_mcast_info *m)
{
	mcast_detach(((struct app_iface *)dp)->d, m);
}

/* A flow rule to the port's table (flow_steer.h); lib/ctl checked it and its QP. */
static int
dp_flow_create(void *dp, const struct ctl_flow_info *f)
{
	struct daemon *d = ((struct app_iface *)dp)->d;

	if (d->flows == NULL || f->dev >= d->n_ports)
		return EINVAL;
	if (f->has_rss) /* to the WQ the hash picks (flow_steer_add_rss()) */
		return flow_steer_add_rss(d->flows, (uint16_t)f->dev, f->id, &f->match, f->priority,
					  &f->rss);
	return flow_steer_add(d->flows, (uint16_t)f->dev, f->id, &f->match, f->priority, f->qpn);
}

static void
dp_flow_destroy(void *dp, const struct ctl_flow_info *f)
{
	struct daemon *d = ((struct app_iface *)dp)->d;

	if (d->flows != NULL)
		flow_steer_del(d->flows, f->id);
}

static const struct ctl_dataplane_ops ai_ops = {
	.mr_create = ai_dp_mr_create,
	.mr_destroy = ai_dp_mr_destroy,
	.cq_create = ai_dp_cq_create,
	.cq_resize = ai_dp_cq_resize,
	.cq_destroy = ai_dp_cq_destroy,
	.srq_create = ai_dp_srq_create,
	.srq_modify = ai_dp_srq_modify,
	.srq_destroy = ai_dp_srq_destroy,
	.ah_create = ai_dp_ah_create,
	.ah_destroy = ai_dp_ah_destroy,
	.qp_create = ai_dp_qp_create,
	.qp_modify = ai_dp_qp_modify,
	.qp_destroy = ai_dp_qp_destroy,
	.mcast_attach = dp_mcast_attach,
	.mcast_detach = dp_mcast_detach,
	.flow_create = dp_flow_create,
	.flow_destroy = dp_flow_destroy,
};

/* ---- the lcore side: one handler per message (daemon.ctl_msg_fn) ---- */

#define AI_LCORE_FN_PING NULL   /* worker.c runs these itself */
#define AI_LCORE_FN_STALL NULL
#define AI_LCORE_FN_QP_CREATE ai_lcore_qp_create
#define AI_LCORE_FN_QP_MODIFY ai_lcore_qp_modify
#define AI_LCORE_FN_QP_DESTROY ai_lcore_qp_destroy
#define AI_LCORE_FN_MR_REG ai_lcore_mr_reg
#define AI_LCORE_FN_MR_DEREG ai_lcore_mr_dereg
#define AI_LCORE_FN_CQ_RESIZE ai_lcore_cq_resize
#define AI_LCORE_FN_SRQ_LIMIT ai_lcore_srq_limit
#define AI_LCORE_FN_SRQ_DETACH ai_lcore_srq_detach
#define AI_LCORE_FN_TM_ATTACH ai_lcore_tm_attach

static const ai_lcore_fn ai_lcore_fns[CTL_MSG_COUNT] = {
#define AI_LCORE_FN(sym, name) [CTL_MSG_##sym] = AI_LCORE_FN_##sym,
	CTL_MSG_LIST(AI_LCORE_FN)
#undef AI_LCORE_FN
};

/* Runs on the owner lcore (worker_ctl_run()). */
static int
ai_lcore_run(struct worker *w, struct ctl_msg *m, void *arg)
{
	ai_lcore_fn fn = m->type < CTL_MSG_COUNT ? ai_lcore_fns[m->type] : NULL;

	return fn != NULL ? fn(arg, w, m) : -ENOTSUP;
}

/* ---- the answers: one function per operation kind (ai->answered) ---- */

#define AI_ANSWERED_MR_REG ai_mr_reg_answered
#define AI_ANSWERED_MR_UNDO ai_mr_reg_answered
#define AI_ANSWERED_MR_DEREG ai_mr_dereg_answered
#define AI_ANSWERED_CQ_RESIZE ai_cq_resize_answered
#define AI_ANSWERED_SRQ_LIMIT ai_srq_limit_answered
#define AI_ANSWERED_SRQ_DETACH ai_srq_detached
#define AI_ANSWERED_TM_ATTACH ai_tm_attached
#define AI_ANSWERED_AH_RESOLVE ai_ah_resolved
#define AI_ANSWERED_QP_RESOLVE ai_qp_resolved
#define AI_ANSWERED_QP_CREATE ai_qp_created
#define AI_ANSWERED_QP_MODIFY ai_qp_modified
#define AI_ANSWERED_QP_DESTROY ai_qp_destroyed

static const ai_answered_fn ai_answered_fns[AI_OP_COUNT] = {
#define AI_ANSWERED(kind) [AI_OP_##kind] = AI_ANSWERED_##kind,
	AI_OP_LIST(AI_ANSWERED)
#undef AI_ANSWERED
};

uint32_t
app_iface_lcore_mrs(const struct app_iface *ai, unsigned int worker)
{
	if (worker >= ai->d->n_workers || ai->mrs[worker] == NULL)
		return 0;
	return __atomic_load_n(&ai->mrs[worker]->count, __ATOMIC_RELAXED);
}

int
app_iface_stall_worker(struct app_iface *ai, unsigned int worker, unsigned int ms)
{
	if (worker >= ai->d->n_workers || ms == 0)
		return -EINVAL;
	atomic_store_explicit(&ai->stall_req[worker], ms, memory_order_release);
	return 0;
}

/* Control-loop hook: the lcores' answers, resolutions, then the clients' requests. */
static int
ai_poll(void *arg, int timeout_ms)
{
	struct app_iface *ai = arg;
	int work = (int)ai_answers(ai);
	int n;

	ai_stall_requests(ai);
	if (ai->ops_resolving > 0)
		work += (int)ai_resolve_tick(ai);
	work += (int)ctl_cm_tick(ai->ctl);
	/*
	 * Answers of the lcores arrive on rings, not descriptors: right after a
	 * send the loop looks again soon instead of sleeping a whole period.
	 */
	if (work == 0 && timeout_ms > 0 && rte_get_tsc_cycles() < ai->brisk_until) {
		struct timespec ts = { 0, AI_BRISK_SLEEP_US * 1000L };

		timeout_ms = 0;
		nanosleep(&ts, NULL);
	}
	n = ctl_server_poll(ai->srv, work ? 0 : timeout_ms);
	if (n > 0)
		work += n;
	ai_stats_publish(ai);
	return work;
}

static const struct ctl_cm_ops ai_cm_ops = {
	.send_mad = ai_cm_send,
	.resolve = ai_cm_resolve,
};

/* ---- set-up ---- */

/* One device per port, as lib/ctl describes devices. */
static void
device_cfg(const struct daemon *d, unsigned int p, struct ctl_device_cfg *dev)
{
	const struct port *port = &d->port[p];
	struct ctl_port_cfg *pc = &dev->port[0];
	struct ipc_device_attr *a = &dev->attr;
	uint32_t speed = 0;
	bool up = port_link(port, &speed);

	memset(dev, 0, sizeof(*dev));
	snprintf(dev->name, sizeof(dev->name), "dpdk_roce%u", p);
	gid_device_attr(&d->cfg, port->mac, 1, a);
	/* what one WQE and the engine can hold */
	if (a->max_sge > WQE_MAX_SGE)
		a->max_sge = WQE_MAX_SGE;
	if (a->max_sge_rd > WQE_MAX_SGE)
		a->max_sge_rd = WQE_MAX_SGE;
	if (a->max_srq_sge > WQE_MAX_SGE)
		a->max_srq_sge = WQE_MAX_SGE;
	if (a->max_inline_data > WQE_MAX_INLINE)
		a->max_inline_data = WQE_MAX_INLINE;
	if (a->max_qp_rd_atom > XPORT_MAX_RD_ATOMIC)
		a->max_qp_rd_atom = XPORT_MAX_RD_ATOMIC;
	if (a->max_qp_init_rd_atom > XPORT_MAX_RD_ATOMIC)
		a->max_qp_init_rd_atom = XPORT_MAX_RD_ATOMIC;
	a->max_ah = AI_MAX_AH;
	dev->num_comp_vectors = 1;
	gid_port_attr(port->link_known && port->link_mtu ? port->link_mtu : port->mtu, up, speed, &pc->attr);
	for (unsigned int i = 0; i < port->gids.n && i < CTL_GID_TBL_LEN; i++) {
		if (!port->gids.entry[i].valid)
			continue;
		memcpy(pc->gid[i], port->gids.entry[i].gid, 16);
		pc->gid_type[i] = IBV_GID_TYPE_ROCE_V2;
		pc->gid_valid[i] = true;
		pc->gid_ndev[i] = gid_ndev_ifindex(pc->gid[i]);
	}
	pc->pkey[0] = 0xffff;
	memcpy(pc->mac, port->mac, 6);
	pc->vlan = port_vlan(port);
}

/* mkdir the directory of the socket (/run/roce-dpdk) if it is missing. */
static void
make_parent_dir(const char *path)
{
	char dir[CONFIG_PATH_LEN];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash == NULL || slash == dir)
		return;
	*slash = '\0';
	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		fprintf(stderr, "roce-daemon: mkdir %s: %s\n", dir, strerror(errno));
}

/* [daemon] allowed_users / allowed_groups into lib/ctl's access lists (config.c checked them). */
static int
ai_access(const struct config_daemon *cd, struct ctl_access *a, char *err, size_t errlen)
{
	uint32_t ids[CONFIG_MAX_ALLOWED];
	int nu = config_id_list(cd->allowed_users, false, ids, CONFIG_MAX_ALLOWED), ng;

	_Static_assert(CONFIG_MAX_ALLOWED == CTL_MAX_ALLOWED, "one bound for both");
	memset(a, 0, sizeof(*a));
	for (int i = 0; i < nu; i++)
		a->uids[i] = ids[i];
	ng = config_id_list(cd->allowed_groups, true, ids, CONFIG_MAX_ALLOWED);
	for (int i = 0; i < ng; i++)
		a->gids[i] = ids[i];
	if (nu < 0 || ng < 0) {
		snprintf(err, errlen, "[daemon] allowed_users/allowed_groups: unknown name");
		return -1;
	}
	a->n_uids = (uint32_t)nu;
	a->n_gids = (uint32_t)ng;
	return 0;
}

/*
 * The socket's owner, group and mode from [daemon] (socket_owner,
 * socket_group, socket_mode), not the umask: who may connect at all.
 */
static int
ai_socket_perms(const struct config_daemon *cd, char *err, size_t errlen)
{
	uint32_t uid = (uint32_t)-1, gid = (uint32_t)-1;
	unsigned long mode = strtoul(cd->socket_mode, NULL, 8);

	if ((cd->socket_owner[0] != '\0' && config_user_id(cd->socket_owner, &uid) != 0) ||
	    (cd->socket_group[0] != '\0' && config_group_id(cd->socket_group, &gid) != 0)) {
		snprintf(err, errlen, "[daemon] socket_owner/socket_group: unknown name");
		return -1;
	}
	if (chown(cd->socket_path, (uid_t)uid, (gid_t)gid) != 0 ||
	    chmod(cd->socket_path, (mode_t)(mode & 07777)) != 0) {
		snprintf(err, errlen, "[daemon] socket = %s: %s", cd->socket_path, strerror(errno));
		return -1;
	}
	return 0;
}

static void
ai_free(struct app_iface *ai)
{
	for (unsigned int i = 0; i < WORKER_MAX; i++) {
		mr_table_destroy(ai->mrs[i]);
		free(ai->bl[i]);
	}
	ah_table_destroy(ai->ahs);
	if (ai->d != NULL) {
		mcast_destroy(ai->d);
		flow_steer_free(ai->d->flows);
		ai->d->flows = NULL;
	}
	free(ai->ops);
	free(ai->pd_qps);
	free(ai->cq);
	free(ai->srq);
	free(ai->qp);
	gsi_destroy(ai->gsi);
	free(ai);
}

struct app_iface *
app_iface_create(struct daemon *d, char *err, size_t errlen)
{
	const struct config_daemon *cd = &d->cfg.daemon;
	struct app_iface *ai = calloc(1, sizeof(*ai));
	struct ctl_config *cfg;

	if (ai == NULL) {
		snprintf(err, errlen, "application interface: out of memory");
		return NULL;
	}
	ai->d = d;
	cfg = &ai->cfg;
	cfg->ndevices = d->n_ports < CTL_MAX_DEVICES ? d->n_ports : CTL_MAX_DEVICES;
	for (unsigned int p = 0; p < cfg->ndevices; p++)
		device_cfg(d, p, &cfg->dev[p]);
	cfg->limits = (struct ctl_limits){
		.max_conns = AI_MAX_CONNS,
		.max_pd = cd->max_pds,
		.max_mr = cd->max_mrs,
		.max_channels = cd->max_cqs,
		.max_cq = cd->max_cqs,
		.max_qp = cd->max_qps,
		.max_srq = cd->max_srqs ? cd->max_srqs : 1,
		.max_ah = AI_MAX_AH,
		.max_mw = cd->max_mrs, /* windows: as many as MRs (gid.c reports it) */
		.max_dm_bytes = (uint64_t)cd->max_dm_kb << 10,
		.max_dm_size = (uint64_t)cd->dm_size_kb << 10,
		.max_xrcd = cd->max_pds, /* XRC domain handles: as many as PDs */
		.max_flows = cd->max_flows, /* 0: no RAW_PACKET QPs (ctl_flow.c) */
		.max_tm_tags = AI_TM_MAX_TAGS, /* IBV_SRQT_TM: lcores poll their ops (ai_cq.c) */
		.max_tm_ops = AI_TM_MAX_OPS,
		.qpn_base = AI_QPN_BASE,
		.n_lcores = d->n_workers,
	};
	cfg->quota = (struct ctl_quota){
		.max_pd = cd->client_max_pds,
		.max_mr = cd->client_max_mrs,
		.max_cq = cd->client_max_cqs,
		.max_channels = cd->client_max_cqs,
		.max_qp = cd->client_max_qps,
		.max_srq = cd->client_max_srqs,
		.max_ah = cd->client_max_ahs,
		.max_cm_ids = cd->client_max_cm_ids,
		.max_cm_channels = cd->client_max_cm_channels,
		.max_mr_bytes = (uint64_t)cd->client_max_mr_mb << 20,
		.max_dm_bytes = (uint64_t)cd->client_max_dm_kb << 10,
		.max_flows = cd->client_max_flows,
		.max_tm_tags = AI_TM_CLIENT_TAGS,
		.max_conns_per_user = cd->user_max_conns,
	};
	if (ai_access(cd, &cfg->access, err, errlen) != 0) {
		free(ai);
		return NULL;
	}
	cfg->dp_ops = &ai_ops;
	ai->answered = ai_answered_fns;
	cfg->dp = ai;
	cfg->resolve = ai_resolve;
	cfg->resolve_ctx = ai;
	ai->cm_ops = ai_cm_ops;
	ai->cm_ops.ctx = ai;
	cfg->cm_ops = &ai->cm_ops;
	ai->gsi = gsi_create(d, ai_gsi_rx, ai);
	ai->max_cq = cfg->limits.max_cq;
	ai->max_srq = cfg->limits.max_srq;
	ai->max_qp = cfg->limits.max_qp;
	/* ARP/ND give up after neigh_retries probes: wait that long, plus one interval */
	ai->resolve_ms = cd->neigh_retry_ms * (cd->neigh_retries + 1);
	if (ai->resolve_ms > 10000)
		ai->resolve_ms = 10000;
	ai->cq = calloc(ai->max_cq, sizeof(*ai->cq));
	ai->srq = calloc(ai->max_srq, sizeof(*ai->srq));
	ai->qp = calloc(ai->max_qp, sizeof(*ai->qp));
	ai->ops = calloc(AI_MAX_OPS, sizeof(*ai->ops));
	ai->max_pd = cfg->limits.max_pd;
	ai->pd_qps = calloc((size_t)ai->max_pd * d->n_workers + 1, sizeof(*ai->pd_qps));
	ai->ahs = ah_table_create(AI_MAX_AH); /* lib/ctl's AH numbers are its table indexes */
	if (ai->cq == NULL || ai->srq == NULL || ai->qp == NULL || ai->ops == NULL ||
	    ai->pd_qps == NULL || ai->ahs == NULL || ai->gsi == NULL) {
		snprintf(err, errlen, "application interface: out of memory");
		goto fail;
	}
	for (uint32_t i = 0; i < AI_MAX_OPS; i++)
		ai->ops[i].next = i + 1 < AI_MAX_OPS ? i + 1 : UINT32_MAX;
	ai->op_free = 0;
	for (unsigned int w = 0; w < d->n_workers; w++) {
		ai->bl[w] = calloc(1, sizeof(*ai->bl[w]));
		if (ai->bl[w] == NULL) {
			snprintf(err, errlen, "application interface: out of memory");
			goto fail;
		}
		/* keys are (ctl MR index + 1) << 8 | gen: slots 1..max_mr */
		ai->mrs[w] = mr_table_create(cd->max_mrs + 1);
		if (ai->mrs[w] == NULL) {
			snprintf(err, errlen, "no memory for %u MRs", cd->max_mrs);
			goto fail;
		}
	}
	if (mcast_create(d) != 0) {
		snprintf(err, errlen, "application interface: out of memory");
		goto fail;
	}
	if (cd->max_flows != 0 && (d->flows = flow_steer_new(cd->max_flows)) == NULL) {
		snprintf(err, errlen, "no memory for %u flow rules per port", cd->max_flows);
		goto fail;
	}
	ai->ctl = ctl_create(cfg);
	if (ai->ctl == NULL) {
		snprintf(err, errlen, "control plane: %s", strerror(errno));
		goto fail;
	}
	make_parent_dir(cd->socket_path);
	ai->srv = ctl_server_create(ai->ctl, cd->socket_path);
	if (ai->srv != NULL)
		ctl_server_watch(ai->srv, d->wake.fd); /* workers end its wait (control.c) */
	if (ai->srv == NULL) {
		snprintf(err, errlen, "[daemon] socket = %s: %s", cd->socket_path, strerror(errno));
		ctl_destroy(ai->ctl);
		goto fail;
	}
	if (ai_socket_perms(cd, err, errlen) != 0) {
		ctl_server_destroy(ai->srv);
		ctl_destroy(ai->ctl);
		goto fail;
	}
	if (daemon_add_hook(d, ai_poll, ai) != 0) {
		snprintf(err, errlen, "no room for the application interface hook");
		ctl_server_destroy(ai->srv);
		ctl_destroy(ai->ctl);
		goto fail;
	}
	d->on_event = ai_on_event;
	d->on_event_arg = ai;
	d->on_link = ai_on_link;
	d->on_link_arg = ai;
	d->ctl_msg_fn = ai_lcore_run;
	d->ctl_msg_arg = ai;
	d->gsi = ai->gsi;
	ai_telemetry_start(ai, cd->telemetry);
	return ai;
fail:
	ai_free(ai);
	return NULL;
}

void
app_iface_destroy(struct app_iface *ai)
{
	struct daemon *d;

	if (ai == NULL)
		return;
	d = ai->d;
	/*
	 * The lcores stop first; what they still had to do runs here and every
	 * operation in flight gets its answer. Then every client gets
	 * DEVICE_FATAL and its objects go (ctl_server_destroy), all at once.
	 */
	ai_drain_stopped(ai);
	ai_resolve_tick(ai);
	ctl_server_destroy(ai->srv);
	ctl_destroy(ai->ctl);
	mcast_destroy(d); /* after ctl_destroy: the last detaches went through it */
	d->gsi = NULL;
	ai_telemetry_stop();
	for (unsigned int h = 0; h < d->n_hooks; h++) {
		if (d->hook[h].arg == ai) {
			d->hook[h] = d->hook[--d->n_hooks];
			break;
		}
	}
	d->on_event = NULL;
	d->on_event_arg = NULL;
	d->on_link = NULL;
	d->on_link_arg = NULL;
	d->ctl_msg_fn = NULL;
	d->ctl_msg_arg = NULL;
	ai_free(ai);
}

