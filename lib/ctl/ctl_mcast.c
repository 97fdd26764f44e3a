/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * UD multicast membership (ctl_mcast.h): ATTACH_MCAST and DETACH_MCAST.
 *
 * Errors as Linux gives them to a user QP (uverbs ib_uverbs_attach_mcast,
 * ib_attach_mcast's checks, rxe_mcast.c's limits): a QP that is not UD or a
 * GID that is not multicast is EINVAL; attaching twice is success without a
 * second membership; detaching what is not attached is EINVAL; a full
 * table (groups, QPs per group, attachments per device) is ENOMEM, and so
 * is a client over its quota. The tables are small and fixed at ctl_create()
 * (linear scans: a join is a control-plane event, never per packet).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_internal.h"
#include "roce_mcast.h"

struct ctl_mcast_grp {
	bool used;
	uint32_t dev;
	uint32_t members;
	uint8_t gid[16];
};

struct ctl_mcast_att {
	struct ctl_qp *qp; /* NULL: free slot */
	uint32_t grp;
};

struct ctl_mcast_cm {
	struct ctl_conn *owner;  /* NULL: free slot */
	uint32_t id;             /* the CM id's handle */
	uint16_t gen;
	uint16_t flags;
	uint8_t gid[16];
};

struct ctl_mcast {
	struct ctl_mcast_cm cm[CTL_MCAST_CM_MAX];
	uint32_t n_grp, n_att;           /* table sizes */
	struct ctl_mcast_grp *grp;
	struct ctl_mcast_att *att;
	uint32_t dev_grps[CTL_MAX_DEVICES];
	uint32_t dev_atts[CTL_MAX_DEVICES];
	struct ctl_mcast_stats st;
};

static uint32_t cap(uint32_t v, uint32_t max)
{
	return v < max ? v : max;
}

int ctl_mcast_create(struct ctl *ctl)
{
	struct ctl_mcast *m = calloc(1, sizeof(*m));
	uint64_t n_grp = 0, n_att = 0;

	if (m == NULL)
		return -ENOMEM;
	for (uint32_t d = 0; d < ctl->cfg.ndevices; d++) {
		const struct ipc_device_attr *a = &ctl->cfg.dev[d].attr;

		n_grp += cap(a->max_mcast_grp, CTL_MCAST_MAX_GROUPS);
		n_att += cap(a->max_total_mcast_qp_attach, CTL_MCAST_MAX_ATTACH);
	}
	m->n_grp = (uint32_t)cap((uint32_t)n_grp, CTL_MCAST_MAX_GROUPS);
	m->n_att = (uint32_t)cap((uint32_t)n_att, CTL_MCAST_MAX_ATTACH);
	m->grp = calloc(m->n_grp + 1, sizeof(*m->grp));
	m->att = calloc(m->n_att + 1, sizeof(*m->att));
	if (m->grp == NULL || m->att == NULL) {
		free(m->grp);
		free(m->att);
		free(m);
		return -ENOMEM;
	}
	ctl->mcast = m;
	return 0;
}

void ctl_mcast_destroy(struct ctl *ctl)
{
	if (ctl->mcast == NULL)
		return;
	free(ctl->mcast->grp);
	free(ctl->mcast->att);
	free(ctl->mcast);
	ctl->mcast = NULL;
}

/* The group @p gid of device @p dev, or UINT32_MAX. */
static uint32_t grp_find(const struct ctl_mcast *m, uint32_t dev, const uint8_t gid[16])
{
	for (uint32_t i = 0; i < m->n_grp; i++)
		if (m->grp[i].used && m->grp[i].dev == dev && memcmp(m->grp[i].gid, gid, 16) == 0)
			return i;
	return UINT32_MAX;
}

/* The attachment of @p qp to group @p g, or UINT32_MAX. */
static uint32_t att_find(const struct ctl_mcast *m, const struct ctl_qp *qp, uint32_t g)
{
	for (uint32_t i = 0; i < m->n_att; i++)
		if (m->att[i].qp == qp && m->att[i].grp == g)
			return i;
	return UINT32_MAX;
}

/* Attachments held by the QPs of connection group @p owner. */
static uint32_t owner_atts(const struct ctl_mcast *m, const struct ctl_conn *owner)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < m->n_att; i++)
		if (m->att[i].qp != NULL && m->att[i].qp->o.owner == owner)
			n++;
	return n;
}

static uint32_t free_slot_grp(const struct ctl_mcast *m)
{
	for (uint32_t i = 0; i < m->n_grp; i++)
		if (!m->grp[i].used)
			return i;
	return UINT32_MAX;
}

static uint32_t free_slot_att(const struct ctl_mcast *m)
{
	for (uint32_t i = 0; i < m->n_att; i++)
		if (m->att[i].qp == NULL)
			return i;
	return UINT32_MAX;
}

static void info_of(const struct ctl_mcast *m, uint32_t g, const struct ctl_qp *qp,
		    struct ctl_mcast_info *mi)
{
	memset(mi, 0, sizeof(*mi));
	mi->dev = m->grp[g].dev;
	mi->port = qp->info.port != 0 ? qp->info.port : 1;
	mi->qpn = qp->info.qpn;
	mi->members = m->grp[g].members;
	memcpy(mi->gid, m->grp[g].gid, 16);
}

/* Unlink attachment @p a from the tables; the group goes with its last QP. */
static void att_unlink(struct ctl_mcast *m, uint32_t a)
{
	struct ctl_mcast_att *at = &m->att[a];
	struct ctl_mcast_grp *g = &m->grp[at->grp];

	g->members--;
	m->dev_atts[g->dev]--;
	m->st.attached--;
	at->qp = NULL;
	if (g->members == 0) {
		g->used = false;
		m->dev_grps[g->dev]--;
		m->st.groups--;
	}
}

/* Remove attachment @p a and tell the dataplane. */
static void att_remove(struct ctl *ctl, uint32_t a)
{
	struct ctl_mcast *m = ctl->mcast;
	struct ctl_mcast_info mi;

	info_of(m, m->att[a].grp, m->att[a].qp, &mi);
	mi.members--;
	att_unlink(m, a);
	m->st.detaches++;
	if (DP_HAS(ctl, mcast_detach))
		DP(ctl)->mcast_detach(ctl->cfg.dp, &mi);
}

/* Validate a request: @return the QP, or NULL with *err set. */
static struct ctl_qp *mcast_req_qp(const struct ctl_req *x, int *err)
{
	struct ctl_conn *c = x->conn;
	const struct ipc_mcast_req *q = &x->req->u.req_ATTACH_MCAST;
	struct ctl_qp *qp = ctl_lookup(c, CTL_KIND_QP, q->qp);

	*err = EINVAL;
	if (qp == NULL || c->dev < 0)
		return NULL;
	if (qp->info.qp_type != IBV_QPT_UD || !roce_gid_is_mcast(q->gid)) {
		c->ctl->mcast->st.refused_bad++;
		return NULL;
	}
	return qp;
}

/*
 * Look a request up: its QP, the group (UINT32_MAX: none yet) and the QP's
 * attachment to it (UINT32_MAX: none). @return 0 or EINVAL (counted)
 */
static int mcast_req_find(const struct ctl_req *x, struct ctl_qp **qp, uint32_t *g, uint32_t *a)
{
	struct ctl_mcast *m = x->conn->ctl->mcast;
	int rc;

	*qp = mcast_req_qp(x, &rc);
	if (*qp == NULL)
		return rc;
	*g = grp_find(m, (*qp)->info.dev, x->req->u.req_ATTACH_MCAST.gid);
	*a = *g != UINT32_MAX ? att_find(m, *qp, *g) : UINT32_MAX;
	return 0;
}

/* Why a new attachment of @p qp to @p gid does not fit: 0, or ENOMEM (counted). */
static int mcast_room(struct ctl *ctl, const struct ctl_qp *qp, uint32_t g)
{
	struct ctl_mcast *m = ctl->mcast;
	const struct ipc_device_attr *a = &ctl->cfg.dev[qp->info.dev].attr;
	uint32_t quota = ctl->cfg.quota.max_mcast_attach;

	if (g == UINT32_MAX &&
	    (m->dev_grps[qp->info.dev] >= a->max_mcast_grp || free_slot_grp(m) == UINT32_MAX)) {
		m->st.refused_groups++;
		return ENOMEM;
	}
	if (g != UINT32_MAX && m->grp[g].members >= a->max_mcast_qp_attach) {
		m->st.refused_group_full++;
		return ENOMEM;
	}
	if (m->dev_atts[qp->info.dev] >= a->max_total_mcast_qp_attach ||
	    free_slot_att(m) == UINT32_MAX) {
		m->st.refused_total++;
		return ENOMEM;
	}
	if (quota != 0 && owner_atts(m, qp->o.owner) >= quota) {
		m->st.refused_quota++;
		ctl->quota_refused++;
		return ENOMEM;
	}
	return 0;
}

int ctl_h_ATTACH_MCAST(const struct ctl_req *x)
{
	struct ctl *ctl = x->conn->ctl;
	struct ctl_mcast *m = ctl->mcast;
	const struct ipc_mcast_req *q = &x->req->u.req_ATTACH_MCAST;
	struct ctl_mcast_info mi;
	uint32_t g, a;
	struct ctl_qp *qp;
	int rc = mcast_req_find(x, &qp, &g, &a);

	if (rc)
		return rc;
	if (a != UINT32_MAX)
		return 0; /* already a member: as uverbs, nothing more */
	rc = mcast_room(ctl, qp, g);
	if (rc)
		return rc;
	if (g == UINT32_MAX) {
		g = free_slot_grp(m);
		m->grp[g] = (struct ctl_mcast_grp){ .used = true, .dev = qp->info.dev };
		memcpy(m->grp[g].gid, q->gid, 16);
		m->dev_grps[qp->info.dev]++;
		m->st.groups++;
	}
	a = free_slot_att(m);
	m->att[a] = (struct ctl_mcast_att){ .qp = qp, .grp = g };
	m->grp[g].members++;
	m->dev_atts[qp->info.dev]++;
	m->st.attached++;
	info_of(m, g, qp, &mi);
	rc = DP_HAS(ctl, mcast_attach) ? DP(ctl)->mcast_attach(ctl->cfg.dp, &mi) : 0;
	if (rc) {
		/* undo without telling the dataplane, which kept nothing */
		m->st.refused_dp++;
		att_unlink(m, a);
		return rc;
	}
	m->st.attaches++;
	return 0;
}

int ctl_h_DETACH_MCAST(const struct ctl_req *x)
{
	struct ctl *ctl = x->conn->ctl;
	struct ctl_mcast *m = ctl->mcast;
	uint32_t g, a;
	struct ctl_qp *qp;
	int rc = mcast_req_find(x, &qp, &g, &a);

	if (rc)
		return rc;
	if (a == UINT32_MAX) {
		m->st.refused_bad++;
		return EINVAL; /* not attached: as uverbs */
	}
	att_remove(ctl, a);
	return 0;
}

void ctl_mcast_qp_gone(struct ctl *ctl, struct ctl_qp *qp)
{
	struct ctl_mcast *m = ctl->mcast;

	if (m == NULL)
		return;
	for (uint32_t i = 0; i < m->n_att; i++)
		if (m->att[i].qp == qp)
			att_remove(ctl, i);
}

void ctl_mcast_get_stats(const struct ctl *ctl, struct ctl_mcast_stats *st)
{
	*st = ctl->mcast->st;
}

uint32_t ctl_mcast_members(const struct ctl *ctl, uint32_t dev, const uint8_t gid[16],
			   uint32_t *qpn, uint32_t max)
{
	const struct ctl_mcast *m = ctl->mcast;
	uint32_t g = grp_find(m, dev, gid), n = 0;

	if (g == UINT32_MAX)
		return 0;
	for (uint32_t i = 0; i < m->n_att; i++) {
		if (m->att[i].qp == NULL || m->att[i].grp != g)
			continue;
		if (n < max)
			qpn[n] = m->att[i].qp->info.qpn;
		n++;
	}
	return n;
}

/* ---- rdma_cm joins ---- */

int ctl_mcast_cm_join(struct ctl *ctl, struct ctl_conn *owner, uint32_t id_handle,
		      const uint8_t gid[16], uint16_t flags, uint32_t *handle)
{
	struct ctl_mcast *m = ctl->mcast;
	uint32_t quota = ctl->cfg.quota.max_mcast_attach ? ctl->cfg.quota.max_mcast_attach
							 : CTL_MCAST_CM_PER_CLIENT;
	uint32_t mine = 0, slot = UINT32_MAX;

	for (uint32_t i = 0; i < CTL_MCAST_CM_MAX; i++) {
		const struct ctl_mcast_cm *j = &m->cm[i];

		if (j->owner == NULL) {
			if (slot == UINT32_MAX)
				slot = i;
			continue;
		}
		if (j->id == id_handle && memcmp(j->gid, gid, 16) == 0) {
			m->st.cm_refused++;
			return EADDRINUSE;
		}
		if (j->owner == owner)
			mine++;
	}
	if (slot == UINT32_MAX || mine >= quota) {
		m->st.cm_refused++;
		if (slot != UINT32_MAX)
			ctl->quota_refused++;
		return ENOMEM;
	}
	m->cm[slot].owner = owner;
	m->cm[slot].id = id_handle;
	m->cm[slot].flags = flags;
	m->cm[slot].gen++;
	memcpy(m->cm[slot].gid, gid, 16);
	m->st.cm_joins++;
	*handle = (uint32_t)m->cm[slot].gen << 16 | (slot + 1);
	return 0;
}

int ctl_mcast_cm_leave(struct ctl *ctl, struct ctl_conn *owner, uint32_t handle,
		       uint32_t *id_handle)
{
	struct ctl_mcast *m = ctl->mcast;
	uint32_t slot = (handle & 0xffff) - 1;

	if (slot >= CTL_MCAST_CM_MAX || m->cm[slot].owner != owner ||
	    m->cm[slot].gen != (uint16_t)(handle >> 16))
		return EINVAL;
	*id_handle = m->cm[slot].id;
	m->cm[slot].owner = NULL;
	m->st.cm_joins--;
	return 0;
}

void ctl_mcast_cm_id_gone(struct ctl *ctl, uint32_t id_handle)
{
	struct ctl_mcast *m = ctl->mcast;

	if (m == NULL)
		return;
	for (uint32_t i = 0; i < CTL_MCAST_CM_MAX; i++) {
		if (m->cm[i].owner != NULL && m->cm[i].id == id_handle) {
			m->cm[i].owner = NULL;
			m->st.cm_joins--;
		}
	}
}
