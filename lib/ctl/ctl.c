/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/ctl: the control plane itself: configuration, connections, request
 * dispatch and the device/port/GID/P_Key queries.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "ctl_internal.h"
#include "ipc_verbs.h"
#include "xport.h"

/* ---- configuration ---- */

static void ctl_port_default(struct ctl_port_cfg *p, const uint8_t mac[6], uint32_t ipv4)
{
	memset(p, 0, sizeof(*p));
	p->attr.state = IBV_PORT_ACTIVE;
	p->attr.max_mtu = IBV_MTU_4096;
	p->attr.active_mtu = IBV_MTU_1024;
	p->attr.gid_tbl_len = CTL_GID_TBL_LEN;
	p->attr.port_cap_flags = IBV_PORT_CM_SUP;
	p->attr.max_msg_sz = UINT32_C(1) << 31;
	p->attr.pkey_tbl_len = CTL_PKEY_TBL_LEN;
	p->attr.max_vl_num = 1;
	p->attr.active_width = 2; /* 4X (IBA 14.2.5.6 PortInfo LinkWidthActive) */
	p->attr.active_speed = 32; /* EDR, 25 Gb/s per lane: 4X = 100 Gb/s */
	p->attr.phys_state = 5; /* LinkUp */
	p->attr.link_layer = IBV_LINK_LAYER_ETHERNET;
	p->pkey[0] = 0xffff;
	memcpy(p->mac, mac, 6);

	/* GID 0: link-local fe80::/64 + modified EUI-64 of the MAC (RFC 4291 App. A). */
	p->gid[0][0] = 0xfe;
	p->gid[0][1] = 0x80;
	p->gid[0][8] = mac[0] ^ 0x02;
	p->gid[0][9] = mac[1];
	p->gid[0][10] = mac[2];
	p->gid[0][11] = 0xff;
	p->gid[0][12] = 0xfe;
	p->gid[0][13] = mac[3];
	p->gid[0][14] = mac[4];
	p->gid[0][15] = mac[5];
	p->gid_type[0] = IBV_GID_TYPE_ROCE_V2;
	p->gid_valid[0] = true;
	/* GID 1: IPv4-mapped ::ffff:a.b.c.d (RoCEv2 over IPv4). */
	if (ipv4 != 0) {
		p->gid[1][10] = 0xff;
		p->gid[1][11] = 0xff;
		memcpy(&p->gid[1][12], &ipv4, 4);
		p->gid_type[1] = IBV_GID_TYPE_ROCE_V2;
		p->gid_valid[1] = true;
	}
}

void ctl_config_default(struct ctl_config *cfg, const char *name, const uint8_t mac[6],
			uint32_t ipv4)
{
	struct ctl_device_cfg *d = &cfg->dev[0];
	struct ipc_device_attr *a = &d->attr;
	uint64_t guid = 0;

	memset(cfg, 0, sizeof(*cfg));
	cfg->ndevices = 1;
	cfg->limits = (struct ctl_limits){
		.max_conns = 64, .max_pd = 256, .max_mr = 1024, .max_channels = 256,
		.max_cq = 512, .max_qp = 512, .max_srq = 128, .max_ah = 1024, .max_mw = 1024,
		.max_xrcd = 64, .qpn_base = 0x11,
	};
	snprintf(d->name, sizeof(d->name), "%s", name);
	d->num_comp_vectors = 1;

	/* Node GUID: EUI-64 of the MAC, as RoCE NICs derive it. */
	uint8_t g[8] = { mac[0] ^ 0x02, mac[1], mac[2], 0xff, 0xfe, mac[3], mac[4], mac[5] };

	memcpy(&guid, g, 8); /* already network order */
	snprintf(a->fw_ver, sizeof(a->fw_ver), "roce-dpdk 0.1.0");
	a->node_guid = guid;
	a->sys_image_guid = guid;
	a->max_mr_size = UINT64_C(1) << 40;
	a->page_size_cap = 0xfffff000u;
	a->vendor_id = 0xffffff; /* rxe's convention: perftest classifies us UNKNOWN */
	a->vendor_part_id = 0;
	a->max_qp = cfg->limits.max_qp;
	a->max_qp_wr = 4096;
	a->device_cap_flags = IBV_DEVICE_PORT_ACTIVE_EVENT | IBV_DEVICE_SYS_IMAGE_GUID |
			      IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_MEM_WINDOW |
			      IBV_DEVICE_MEM_WINDOW_TYPE_2B | IBV_DEVICE_XRC;
	/* IBTA 1.5: ATOMIC WRITE and FLUSH of global visibility (no pmem) */
	a->device_cap_flags_ex = QP_DEVICE_ATOMIC_WRITE | QP_DEVICE_FLUSH_GLOBAL;
	a->max_mw = cfg->limits.max_mw;
	a->max_sge = WQE_MAX_SGE;
	a->max_sge_rd = WQE_MAX_SGE;
	a->max_cq = cfg->limits.max_cq;
	a->max_cqe = 65535;
	a->max_mr = cfg->limits.max_mr;
	a->max_pd = cfg->limits.max_pd;
	/* responder resources are per QP, allocated as its max_dest_rd_atomic
	 * asks: every QP may have the engine's maximum (128, as rxe) */
	a->max_qp_rd_atom = XPORT_MAX_RD_ATOMIC;
	a->max_qp_init_rd_atom = XPORT_MAX_RD_ATOMIC;
	a->max_res_rd_atom = XPORT_MAX_RD_ATOMIC * cfg->limits.max_qp;
	a->atomic_cap = IBV_ATOMIC_HCA;
	a->max_ah = cfg->limits.max_ah;
	a->max_mcast_grp = 64;
	a->max_mcast_qp_attach = 16;
	a->max_total_mcast_qp_attach = 256;
	a->max_srq = cfg->limits.max_srq;
	a->max_srq_wr = 4096;
	a->max_srq_sge = WQE_MAX_SGE;
	a->max_inline_data = WQE_MAX_INLINE;
	a->max_pkeys = CTL_PKEY_TBL_LEN;
	a->local_ca_ack_delay = 15;
	a->phys_port_cnt = 1;
	/* the engine paces RC requesters (lib/xport rate_limit_kbps) */
	a->qp_rate_limit_min = XPORT_PACE_MIN_KBPS;
	a->qp_rate_limit_max = XPORT_PACE_MAX_KBPS;
	a->pacing_supported_qpts = 1u << IBV_QPT_RC;
	ctl_port_default(&d->port[0], mac, ipv4);
}

void ctl_devsem_build(struct ctl *ctl, uint32_t dev)
{
	struct ctl_device_cfg *d = &ctl->cfg.dev[dev];
	struct ctl_devsem *s = &ctl->sem[dev];

	memset(s, 0, sizeof(*s));
	ipc_device_attr_to_ibv(&d->attr, &s->dev.attr);
	s->dev.pacing.qp_rate_limit_min = d->attr.qp_rate_limit_min;
	s->dev.pacing.qp_rate_limit_max = d->attr.qp_rate_limit_max;
	s->dev.pacing.supported_qpts = d->attr.pacing_supported_qpts;
	s->dev.max_inline_data = d->attr.max_inline_data;
	s->dev.qp_types = 1u << IBV_QPT_RC | 1u << IBV_QPT_UC | 1u << IBV_QPT_UD;
	if (ctl->cfg.limits.max_xrcd)
		s->dev.qp_types |= 1u << IBV_QPT_XRC_SEND | 1u << IBV_QPT_XRC_RECV;
	if (ctl->cfg.limits.max_flows != 0)
		s->dev.qp_types |= 1u << IBV_QPT_RAW_PACKET;
	s->dev.port = s->port;
	s->dev.resolve = ctl->cfg.resolve;
	s->dev.resolve_ctx = ctl->cfg.resolve_ctx;
	for (uint32_t p = 0; p < d->attr.phys_port_cnt && p < CTL_MAX_PORTS; p++) {
		struct ctl_port_cfg *pc = &d->port[p];

		for (uint32_t i = 0; i < CTL_GID_TBL_LEN; i++) {
			memcpy(s->gid[p][i].gid.raw, pc->gid[i], 16);
			s->gid[p][i].type = (enum ibv_gid_type)pc->gid_type[i];
			s->gid[p][i].valid = pc->gid_valid[i];
		}
		s->port[p].max_mtu = (enum ibv_mtu)pc->attr.max_mtu;
		s->port[p].active_mtu = (enum ibv_mtu)pc->attr.active_mtu;
		s->port[p].gid_tbl_len = CTL_GID_TBL_LEN;
		s->port[p].gid = s->gid[p];
		s->port[p].pkey_tbl_len = CTL_PKEY_TBL_LEN;
		s->port[p].pkey = pc->pkey;
	}
}

static const size_t ctl_obj_sizes[CTL_KIND_COUNT] = {
	[CTL_KIND_QP] = sizeof(struct ctl_qp),
	[CTL_KIND_SRQ] = sizeof(struct ctl_srq),
	[CTL_KIND_XRCD] = sizeof(struct ctl_xrcd),
	[CTL_KIND_AH] = sizeof(struct ctl_ah),
	[CTL_KIND_MR] = sizeof(struct ctl_mr),
	[CTL_KIND_MW] = sizeof(struct ctl_mw),
	[CTL_KIND_DM] = sizeof(struct ctl_dm),
	[CTL_KIND_FLOW] = sizeof(struct ctl_flow),
	[CTL_KIND_CQ] = sizeof(struct ctl_cq),
	[CTL_KIND_CHANNEL] = sizeof(struct ctl_channel),
	[CTL_KIND_PD] = sizeof(struct ctl_pd),
};

static size_t ctl_obj_size(enum ctl_kind k)
{
	if (k == CTL_KIND_CM_ID)
		return ctl_cm_id_size();
	if (k == CTL_KIND_CM_CHANNEL)
		return ctl_cm_channel_size();
	return ctl_obj_sizes[k];
}

static uint32_t ctl_kind_cap(const struct ctl_limits *l, enum ctl_kind k)
{
	switch (k) {
	case CTL_KIND_QP: return l->max_qp;
	case CTL_KIND_SRQ: return l->max_srq;
	case CTL_KIND_XRCD: return l->max_xrcd ? l->max_xrcd : 1; /* 0: OPEN_XRCD refused */
	case CTL_KIND_AH: return l->max_ah;
	case CTL_KIND_MR: return l->max_mr;
	case CTL_KIND_MW: return l->max_mw ? l->max_mw : 1; /* 0: ALLOC_MW refused */
	case CTL_KIND_DM: return l->max_mr; /* bounded by bytes (max_dm_bytes) first */
	case CTL_KIND_FLOW: return l->max_flows ? l->max_flows : 1; /* 0: CREATE_FLOW refused */
	case CTL_KIND_CQ: return l->max_cq;
	case CTL_KIND_CHANNEL: return l->max_channels;
	case CTL_KIND_PD: return l->max_pd;
	default: return 0;
	}
}

static uint32_t ctl_cap(const struct ctl_config *cfg, enum ctl_kind k)
{
	if (k == CTL_KIND_CM_ID)
		return cfg->cm_limits.max_ids;
	if (k == CTL_KIND_CM_CHANNEL)
		return cfg->cm_limits.max_channels;
	return ctl_kind_cap(&cfg->limits, k);
}

struct ctl *ctl_create(const struct ctl_config *cfg)
{
	struct ctl *ctl;
	int rc = -EINVAL;

	if (cfg->ndevices == 0 || cfg->ndevices > CTL_MAX_DEVICES || cfg->limits.max_conns == 0 ||
	    cfg->limits.n_lcores > 1024 ||
	    cfg->limits.max_mr >= (UINT32_C(1) << 23) - 1 || /* MR keys below mw.h's MW_KEY_FLAG */
	    cfg->limits.max_mw > MW_MAX_CAPACITY ||
	    cfg->limits.qpn_base < 2 || cfg->limits.qpn_base + cfg->limits.max_qp > 0xffffff) {
		errno = EINVAL;
		return NULL;
	}
	for (uint32_t d = 0; d < cfg->ndevices; d++) {
		uint32_t np = cfg->dev[d].attr.phys_port_cnt;

		if (np == 0 || np > CTL_MAX_PORTS || cfg->dev[d].name[0] == '\0' ||
		    cfg->dev[d].num_comp_vectors == 0) {
			errno = EINVAL;
			return NULL;
		}
	}
	ctl = calloc(1, sizeof(*ctl));
	if (ctl == NULL)
		return NULL;
	ctl->cfg = *cfg;
	for (uint32_t d = 0; d < cfg->ndevices; d++) {
		struct ipc_device_attr *a = &ctl->cfg.dev[d].attr;

		/* windows as many as the table holds; none: no window capability */
		if (a->max_mw > cfg->limits.max_mw)
			a->max_mw = cfg->limits.max_mw;
		if (a->max_mw == 0)
			a->device_cap_flags &= ~(uint32_t)(IBV_DEVICE_MEM_WINDOW |
							   IBV_DEVICE_MEM_WINDOW_TYPE_2A |
							   IBV_DEVICE_MEM_WINDOW_TYPE_2B);
		/* XRC as the configuration allows; none: no XRC capability */
		if (cfg->limits.max_xrcd == 0)
			a->device_cap_flags &= ~(uint32_t)IBV_DEVICE_XRC;
	}
	ctl_flow_caps(ctl);
	ctl_cm_limits_default(&ctl->cfg.cm_limits);
	ctl->cur = &ctl->detached;
	for (uint32_t d = 0; d < cfg->ndevices; d++) {
		ctl_mr_odp_caps(&ctl->cfg.dev[d].attr);
		if (cfg->limits.max_xrcd == 0)
			ctl->cfg.dev[d].attr.odp_xrc_caps = 0;
		ctl_devsem_build(ctl, d);
	}
	ctl->conns = calloc(cfg->limits.max_conns, sizeof(*ctl->conns));
	ctl->lcore_qps = calloc(cfg->limits.n_lcores > 1 ? cfg->limits.n_lcores : 1,
				sizeof(*ctl->lcore_qps));
	if (ctl->conns == NULL || ctl->lcore_qps == NULL)
		goto fail;
	for (int k = 0; k < CTL_KIND_COUNT; k++) {
		rc = ctl_table_init(&ctl->tab[k], ctl_cap(&ctl->cfg, k), ctl_obj_size(k));
		if (rc < 0)
			goto fail;
	}
	ctl->mr_key_byte = calloc(ctl->tab[CTL_KIND_MR].cap + 1, 1);
	ctl->mw_key_byte = calloc(ctl->tab[CTL_KIND_MW].cap + 1, 1);
	if (ctl->mr_key_byte == NULL || ctl->mw_key_byte == NULL || ctl_xrc_init(ctl) != 0)
		goto fail;
	if (cfg->limits.max_mw != 0) {
		ctl->mws = mw_table_create(cfg->limits.max_mw, cfg->limits.max_mr + 1);
		if (ctl->mws == NULL)
			goto fail;
	}
	rc = ctl_cm_create(ctl);
	if (rc < 0)
		goto fail;
	rc = ctl_mcast_create(ctl);
	if (rc < 0) {
		ctl_cm_destroy(ctl);
		goto fail;
	}
	return ctl;
fail:
	for (int k = 0; k < CTL_KIND_COUNT; k++)
		ctl_table_fini(&ctl->tab[k]);
	free(ctl->mr_key_byte);
	free(ctl->mw_key_byte);
	ctl_xrc_fini(ctl);
	mw_table_destroy(ctl->mws);
	free(ctl->conns);
	free(ctl->lcore_qps);
	free(ctl);
	errno = rc < 0 ? -rc : ENOMEM;
	return NULL;
}

void ctl_destroy(struct ctl *ctl)
{
	if (ctl == NULL)
		return;
	for (uint32_t i = 0; i < ctl->cfg.limits.max_conns; i++) {
		struct ctl_conn *c = &ctl->conns[i];

		if (!c->open)
			continue; /* free, or a closed group head: its last member frees it */
		ctl_send_event(c, IBV_EVENT_DEVICE_FATAL, IPC_OBJ_DEVICE, 0);
		ctl_conn_close(c);
	}
	ctl_cm_destroy(ctl);
	ctl_mcast_destroy(ctl);
	for (int k = 0; k < CTL_KIND_COUNT; k++)
		ctl_table_fini(&ctl->tab[k]);
	free(ctl->mr_key_byte);
	free(ctl->mw_key_byte);
	ctl_xrc_fini(ctl);
	mw_table_destroy(ctl->mws);
	free(ctl->conns);
	free(ctl->lcore_qps);
	free(ctl);
}

struct mw_table *ctl_mw_table(const struct ctl *ctl)
{
	return ctl->mws;
}

int ctl_set_gid(struct ctl *ctl, uint32_t dev, uint32_t port, uint32_t index,
		const uint8_t gid[16], uint32_t gid_type, bool valid)
{
	struct ctl_port_cfg *p;

	if (dev >= ctl->cfg.ndevices || port == 0 || port > ctl->cfg.dev[dev].attr.phys_port_cnt ||
	    index >= CTL_GID_TBL_LEN)
		return -EINVAL;
	p = &ctl->cfg.dev[dev].port[port - 1];
	if (valid) {
		memcpy(p->gid[index], gid, 16);
		p->gid_type[index] = gid_type;
	} else {
		memset(p->gid[index], 0, 16);
	}
	p->gid_valid[index] = valid;
	ctl_devsem_build(ctl, dev);
	ctl_raise_port_event(ctl, dev, port, IBV_EVENT_GID_CHANGE);
	return 0;
}

void ctl_get_stats(const struct ctl *ctl, struct ctl_stats *st)
{
	memset(st, 0, sizeof(*st));
	for (uint32_t i = 0; i < ctl->cfg.limits.max_conns; i++) {
		if (ctl->conns[i].open) {
			st->conns++;
			if (ctl->conns[i].dev >= 0)
				st->contexts++;
			st->events_dropped += ctl->conns[i].events_dropped;
		}
	}
	st->events_dropped += ctl->events_dropped;
	st->quarantined = ctl->quarantined;
	st->quarantined_bytes = ctl->quarantined_bytes;
	st->qkey_refused = ctl->qkey_refused;
	st->raw_refused = ctl->raw_refused;
	st->flows_bad = ctl->flows_bad;
	st->flow = ctl->tab[CTL_KIND_FLOW].nused;
	st->quota_refused = ctl->quota_refused;
	st->dm = ctl->tab[CTL_KIND_DM].nused;
	st->dm_bytes = ctl->dm_bytes;
	st->conns_refused = ctl->conns_refused;
	st->pd = ctl->tab[CTL_KIND_PD].nused;
	st->mr = ctl->tab[CTL_KIND_MR].nused;
	st->channel = ctl->tab[CTL_KIND_CHANNEL].nused;
	st->cq = ctl->tab[CTL_KIND_CQ].nused;
	st->qp = ctl->tab[CTL_KIND_QP].nused;
	st->srq = ctl->tab[CTL_KIND_SRQ].nused;
	st->ah = ctl->tab[CTL_KIND_AH].nused;
}

uint32_t ctl_nobjects(const struct ctl *ctl)
{
	uint32_t n = 0;

	for (int k = 0; k < CTL_KIND_COUNT; k++)
		n += ctl->tab[k].nused;
	return n;
}

/* ---- connections ---- */

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77 /* Linux 6.5 */
#endif

/* Start time of process @p pid in clock ticks after boot (/proc/PID/stat field 22); 0: unknown. */
static unsigned long long ctl_proc_start(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long start = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
	/* after ") ": state is field 3; start time is field 22, 19 fields further */
	for (int f = 3; p != NULL && f < 22; f++)
		p = strchr(p + 1, ' ');
	if (p == NULL || sscanf(p + 1, "%llu", &start) != 1)
		return 0;
	return start;
}

/*
 * A pidfd of the process at the other end of @p sock, as it was when it
 * connected: SO_PEERPIDFD (Linux 6.5) gives exactly that. Without it:
 * pidfd_open(@p pid) now, trusted only if that process started before
 * this moment (a PID reused since the peer died names a younger process).
 * @return the pidfd or -1
 */
static int ctl_peer_pidfd(int sock, pid_t pid)
{
	socklen_t len = sizeof(int);
	struct timespec now;
	unsigned long long start, now_ticks;
	int fd = -1;

	if (getsockopt(sock, SOL_SOCKET, SO_PEERPIDFD, &fd, &len) == 0 && fd >= 0)
		return fd;
	if (pid <= 0 || clock_gettime(CLOCK_BOOTTIME, &now) != 0)
		return -1;
	now_ticks = (unsigned long long)now.tv_sec * (unsigned long long)sysconf(_SC_CLK_TCK);
	fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd < 0)
		return -1;
	start = ctl_proc_start(pid);
	if (start == 0 || start > now_ticks + 1) {
		close(fd);
		return -1;
	}
	return fd;
}


/*
 * Has process @p pid capability @p cap in its effective set? capget(2) of
 * another process: one system call (reading /proc/PID/status CapEff was a
 * third of a connect). pid 0 would name the daemon itself: refused.
 */
static bool ctl_proc_has_cap(pid_t pid, unsigned int cap)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = pid };
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];

	if (pid <= 0 || cap >= 32 * _LINUX_CAPABILITY_U32S_3 || syscall(SYS_capget, &h, d) != 0)
		return false;
	return d[cap / 32].effective >> (cap % 32) & 1;
}

/* Is group @p gid among the groups of process @p pid (/proc/PID/status Groups)? */
static bool ctl_proc_in_group(pid_t pid, gid_t gid)
{
	char path[64], line[4096], *p, *end;
	bool in = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (f == NULL)
		return false;
	while (!in && fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, "Groups:", 7) != 0)
			continue;
		for (p = line + 7;; p = end) {
			unsigned long g = strtoul(p, &end, 10);

			if (end == p)
				break;
			in = in || g == gid;
		}
		break;
	}
	fclose(f);
	return in;
}

/* ctl_access: may the peer (@p pid, @p uid, @p gid) connect? */
static bool ctl_peer_allowed(const struct ctl_access *a, pid_t pid, uid_t uid, gid_t gid)
{
	if (a->n_uids == 0 && a->n_gids == 0)
		return true;
	if (uid == 0)
		return true;
	for (uint32_t i = 0; i < a->n_uids && i < CTL_MAX_ALLOWED; i++)
		if (a->uids[i] == uid)
			return true;
	for (uint32_t i = 0; i < a->n_gids && i < CTL_MAX_ALLOWED; i++)
		if (a->gids[i] == gid || (pid > 0 && ctl_proc_in_group(pid, a->gids[i])))
			return true;
	return false;
}

/* User @p uid holds its quota of open connections already (root: never). */
static bool ctl_user_conns_full(const struct ctl *ctl, uid_t uid)
{
	uint32_t q = ctl->cfg.quota.max_conns_per_user, n = 0;

	if (q == 0 || uid == 0)
		return false;
	for (uint32_t i = 0; i < ctl->cfg.limits.max_conns; i++)
		n += ctl->conns[i].used && ctl->conns[i].open && ctl->conns[i].uid == uid;
	return n >= q;
}

struct ctl_conn *ctl_conn_open(struct ctl *ctl, int sock)
{
	pid_t pid = 0;
	uid_t uid = (uid_t)-1;
	gid_t gid = (gid_t)-1;
	bool cred = ipc_peer_cred(sock, &pid, &uid, &gid) == 0;

	if (cred && ctl_user_conns_full(ctl, uid)) {
		ctl->quota_refused++;
		errno = EMFILE;
		return NULL;
	}
	if (!cred || !ctl_peer_allowed(&ctl->cfg.access, pid, uid, gid)) {
		/* no credentials, or not on the lists: refused before any state */
		if (ctl->cfg.access.n_uids > 0 || ctl->cfg.access.n_gids > 0) {
			ctl->conns_refused++;
			errno = EACCES;
			return NULL;
		}
	}
	for (uint32_t i = 0; i < ctl->cfg.limits.max_conns; i++) {
		struct ctl_conn *c = &ctl->conns[i];

		if (c->used)
			continue;
		memset(c, 0, sizeof(*c));
		c->ctl = ctl;
		c->used = true;
		c->open = true;
		c->group = c;
		c->members = 1;
		c->dev = -1;
		c->async_fd = -1;
		c->pend.conn = c;
		c->pend.gen = 1;
		c->pid = pid;
		c->uid = uid;
		c->gid = gid;
		c->pidfd = ctl_peer_pidfd(sock, c->pid);
		c->cap_net_raw = c->pidfd >= 0 && ctl_proc_has_cap(c->pid, CAP_NET_RAW);
		return c;
	}
	errno = EMFILE;
	return NULL;
}

/* Visit every allocated object of every table, in teardown order (enum ctl_kind). */
static void ctl_objs_foreach(struct ctl *ctl, void (*fn)(struct ctl *, struct ctl_obj *, void *),
			     void *arg)
{
	for (int k = 0; k < CTL_KIND_COUNT; k++) {
		struct ctl_table *t = &ctl->tab[k];

		for (uint32_t i = 0; i < t->cap && t->nused > 0; i++) {
			struct ctl_obj *o = ctl_table_at(t, i);

			if (o->owner != NULL)
				fn(ctl, o, arg);
		}
	}
}

/* The next object of group @p g teardown may destroy now: teardown order, unused, not busy. */
static struct ctl_obj *ctl_group_victim(struct ctl *ctl, const struct ctl_conn *g)
{
	for (int k = 0; k < CTL_KIND_COUNT; k++) {
		struct ctl_table *t = &ctl->tab[k];

		for (uint32_t i = 0; i < t->cap && t->nused > 0; i++) {
			struct ctl_obj *o = ctl_table_at(t, i);

			if (o->owner == g && o->refs == 0 && !o->busy)
				return o;
		}
	}
	return NULL;
}

static void ctl_obj_unnotify(struct ctl *ctl, struct ctl_obj *o, void *conn)
{
	(void)ctl;
	if (o->notify == conn)
		o->notify = NULL;
}

/*
 * Tear down group @p g once no connection of it is open and none of its
 * dataplane operations is in flight: destroy its objects, users before what
 * they use. A destroy the dataplane defers stops the walk; its answer
 * (ctl_pend_settle()) resumes it. The head is freed with the last object.
 */
static void ctl_group_reap(struct ctl *ctl, struct ctl_conn *g)
{
	struct ctl_pend *saved = ctl->cur;

	if (g->members > 0 || g->npend > 0)
		return;
	ctl->cur = &g->pend;
	g->pend.teardown = true;
	while (g->nobjs > 0) {
		struct ctl_obj *o = ctl_group_victim(ctl, g);

		if (o == NULL || ctl_obj_destroy(ctl, o) == CTL_DEFERRED)
			break;
	}
	ctl->cur = saved;
	if (g->nobjs == 0 && g->npend == 0)
		memset(g, 0, sizeof(*g));
}

/* Drop an answer nobody will take (its connection closed). */
static void ctl_pend_discard(struct ctl_pend *p)
{
	for (unsigned int i = 0; i < p->rnfds; i++)
		close(p->rfds[i]);
	p->rnfds = 0;
	p->state = CTL_PEND_IDLE;
}

void ctl_conn_close(struct ctl_conn *c)
{
	struct ctl *ctl = c->ctl;
	struct ctl_conn *g = c->group;

	if (!c->open)
		return;
	c->open = false;
	if (c->async_fd >= 0)
		close(c->async_fd);
	c->async_fd = -1;
	if (c->pidfd >= 0)
		close(c->pidfd);
	c->pidfd = -1;
	ctl->events_dropped += c->events_dropped;
	c->events_dropped = 0;
	if (c->pend.state == CTL_PEND_READY)
		ctl_pend_discard(&c->pend);
	ctl_objs_foreach(ctl, ctl_obj_unnotify, c); /* c has nowhere to report events */
	--g->members;
	/* A member waiting for the dataplane keeps its slot until the answer (ctl_pend_settle). */
	if (c != g && c->pend.state == CTL_PEND_IDLE)
		memset(c, 0, sizeof(*c));
	ctl_group_reap(ctl, g); /* a closed head stays allocated while the group has objects */
}

/* ---- pending requests ---- */

int ctl_then(struct ctl *ctl, struct ctl_pend *p, int rc, ctl_fin_fn fin, struct ctl_obj *o)
{
	p->obj = o;
	if (!p->deferred)
		return fin(ctl, p, rc);
	p->deferred = false;
	p->fin = fin;
	p->state = CTL_PEND_WAIT;
	p->conn->group->npend++;
	if (o != NULL)
		o->busy = true;
	return CTL_DEFERRED;
}

void ctl_dp_destroy_failed(struct ctl *ctl)
{
	ctl->cur->dp_held = true;
}

uint64_t ctl_dp_defer(struct ctl *ctl)
{
	struct ctl_pend *p = ctl->cur;

	if (p->conn == NULL || p->deferred)
		return CTL_DP_TOKEN_NONE;
	p->deferred = true;
	if (++p->gen == 0)
		p->gen = 1;
	return (uint64_t)p->gen << 32 | (uint64_t)(p->conn - ctl->conns);
}

/* The final status of a request in @p p: keep the answer, or drop it for a closed connection. */
static void ctl_pend_answer(struct ctl_pend *p, int status)
{
	if (status != 0) {
		for (unsigned int i = 0; i < p->rnfds; i++)
			close(p->rfds[i]);
		p->rnfds = 0;
		ipc_rsp_init(&p->rsp, &p->req, status);
	}
}

/* After a continuation of @p p returned @p status (not CTL_DEFERRED). */
static void ctl_pend_settle(struct ctl *ctl, struct ctl_pend *p, int status)
{
	struct ctl_conn *c = p->conn, *g = c->group;

	if (p->teardown) {
		p->state = CTL_PEND_IDLE;
		ctl_group_reap(ctl, g);
		return;
	}
	ctl_pend_answer(p, status);
	p->state = CTL_PEND_READY;
	if (!c->open) {
		ctl_pend_discard(p);
		if (c != g)
			memset(c, 0, sizeof(*c));
		ctl_group_reap(ctl, g);
	}
}

/* An event raised while its QP was busy, now that it is not. */
static void ctl_unstash(struct ctl *ctl, struct ctl_obj *o)
{
	struct ctl_qp *qp = (struct ctl_qp *)o;
	uint8_t ev;

	if (o == NULL || o->owner == NULL || o->busy || o->kind != CTL_KIND_QP || !qp->ev_stash)
		return;
	ev = qp->ev_stash;
	qp->ev_stash = 0;
	ctl_qp_event(ctl, qp->info.qpn, (enum ctl_qp_event)(ev - 1), qp->ev_cause);
}

int ctl_dp_done(struct ctl *ctl, uint64_t token, int rc)
{
	uint32_t i = (uint32_t)token, gen = (uint32_t)(token >> 32);
	struct ctl_pend *p, *saved = ctl->cur;
	struct ctl_obj *o;
	int status;

	if (i >= ctl->cfg.limits.max_conns || !ctl->conns[i].used)
		return -ENOENT;
	p = &ctl->conns[i].pend;
	if (p->state != CTL_PEND_WAIT || p->gen != gen || gen == 0)
		return -ENOENT;
	o = p->obj;
	if (o != NULL)
		o->busy = false;
	p->state = CTL_PEND_IDLE;
	p->conn->group->npend--;
	ctl->cur = p;
	status = p->fin(ctl, p, rc);
	ctl->cur = saved;
	if (status != CTL_DEFERRED) {
		ctl_unstash(ctl, o);
		ctl_pend_settle(ctl, p, status);
	}
	return 0;
}

uint32_t ctl_dp_inflight(const struct ctl *ctl)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < ctl->cfg.limits.max_conns; i++)
		n += ctl->conns[i].used && ctl->conns[i].pend.state == CTL_PEND_WAIT;
	return n;
}

bool ctl_conn_pending(const struct ctl_conn *c)
{
	return c->pend.state != CTL_PEND_IDLE;
}

/* Hand the answer in @p p to the caller. */
static void ctl_pend_take(struct ctl_pend *p, struct ipc_msg *rsp, int *rfds, unsigned int *rnfds)
{
	*rsp = p->rsp;
	*rnfds = p->rnfds;
	for (unsigned int i = 0; i < IPC_MAX_FDS; i++)
		rfds[i] = i < p->rnfds ? p->rfds[i] : -1;
	p->rnfds = 0;
	p->state = CTL_PEND_IDLE;
}

bool ctl_conn_answer(struct ctl_conn *c, struct ipc_msg *rsp, int *rfds, unsigned int *rnfds)
{
	if (c->pend.state != CTL_PEND_READY)
		return false;
	ctl_pend_take(&c->pend, rsp, rfds, rnfds);
	return true;
}

/* Give @p c its async-event socketpair; the application's end goes to rfds[0]. */
static int ctl_conn_async_open(struct ctl_conn *c, int *rfds, unsigned int *rnfds)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return errno;
	/* Our end never blocks the control thread: a full buffer drops the event. */
	if (shutdown(sv[1], SHUT_WR) < 0 || shutdown(sv[0], SHUT_RD) < 0) {
		close(sv[0]);
		close(sv[1]);
		return EIO;
	}
	c->async_fd = sv[0];
	rfds[0] = sv[1];
	*rnfds = 1;
	return 0;
}

uint32_t ctl_conn_nobjects(const struct ctl_conn *c)
{
	return c->group->nobjs;
}

int ctl_send_event(struct ctl_conn *c, uint32_t type, enum ipc_obj_kind kind, uint64_t user_handle)
{
	struct ipc_async_event ev = { .type = type, .kind = kind, .user_handle = user_handle };

	if (c == NULL || c->async_fd < 0)
		return -ENOTCONN;
	if (send(c->async_fd, &ev, sizeof(ev), MSG_DONTWAIT | MSG_NOSIGNAL) != sizeof(ev)) {
		c->events_dropped++;
		return -EAGAIN;
	}
	return 0;
}

/* The object behind (kind, number), or NULL when that slot is free. */
static struct ctl_obj *ctl_obj_by_num(struct ctl *ctl, enum ipc_obj_kind kind, uint32_t num)
{
	enum ctl_kind k;
	uint32_t idx;
	struct ctl_obj *o;

	switch (kind) {
	case IPC_OBJ_QP:
		k = CTL_KIND_QP;
		idx = num - ctl->cfg.limits.qpn_base;
		break;
	case IPC_OBJ_CQ:
		k = CTL_KIND_CQ;
		idx = num;
		break;
	case IPC_OBJ_SRQ:
		k = CTL_KIND_SRQ;
		idx = num - 1;
		break;
	default:
		return NULL;
	}
	if (idx >= ctl->tab[k].cap)
		return NULL;
	o = ctl_table_at(&ctl->tab[k], idx);
	return o->owner ? o : NULL;
}

int ctl_raise_event(struct ctl *ctl, enum ipc_obj_kind kind, uint32_t num, uint32_t type)
{
	struct ctl_obj *o = ctl_obj_by_num(ctl, kind, num);
	int rc;

	if (o == NULL)
		return -ENOENT;
	rc = ctl_send_event(o->notify, type, kind, o->user_handle);
	/*
	 * Only events the client can read count for destroy (ibv_destroy_* waits
	 * for that many acks). COMM_EST does not count: Linux rxe never raises
	 * it, and applications that never read async events (perftest's server
	 * receives in RTR) would otherwise wait in ibv_destroy_qp forever.
	 */
	if (rc == 0 && type != IBV_EVENT_COMM_EST)
		o->events++;
	return rc;
}

void ctl_raise_port_event(struct ctl *ctl, uint32_t dev, uint32_t port, uint32_t type)
{
	for (uint32_t i = 0; i < ctl->cfg.limits.max_conns; i++) {
		struct ctl_conn *c = &ctl->conns[i];

		if (c->open && c->dev == (int)dev)
			ctl_send_event(c, type, IPC_OBJ_PORT, port);
	}
}

int ctl_set_port_attr(struct ctl *ctl, uint32_t dev, uint32_t port,
		      const struct ipc_port_attr *attr)
{
	struct ctl_port_cfg *p;
	bool was, now;

	if (dev >= ctl->cfg.ndevices || port == 0 || port > ctl->cfg.dev[dev].attr.phys_port_cnt ||
	    port > CTL_MAX_PORTS)
		return -EINVAL;
	p = &ctl->cfg.dev[dev].port[port - 1];
	was = p->attr.state == IBV_PORT_ACTIVE;
	now = attr->state == IBV_PORT_ACTIVE;
	p->attr = *attr;
	ctl_devsem_build(ctl, dev);
	if (was == now)
		return 0;
	ctl_raise_port_event(ctl, dev, port, now ? IBV_EVENT_PORT_ACTIVE : IBV_EVENT_PORT_ERR);
	return now ? IBV_EVENT_PORT_ACTIVE : IBV_EVENT_PORT_ERR;
}

/* ---- device handlers ---- */

static void ctl_device_info(const struct ctl_device_cfg *d, struct ipc_device_info *out)
{
	memset(out, 0, sizeof(*out));
	memcpy(out->name, d->name, sizeof(out->name));
	out->name[sizeof(out->name) - 1] = '\0';
	out->node_guid = d->attr.node_guid;
	out->node_type = IBV_NODE_CA;
	out->transport = IBV_TRANSPORT_IB;
	out->phys_port_cnt = d->attr.phys_port_cnt;
}

int ctl_h_DEVICE_LIST(const struct ctl_req *x)
{
	struct ctl_conn *c = x->conn;
	struct ipc_msg *rsp = x->rsp;
	struct ipc_device_list_rsp *r = &rsp->u.rsp_DEVICE_LIST;

	r->count = c->ctl->cfg.ndevices;
	for (uint32_t i = 0; i < r->count; i++)
		ctl_device_info(&c->ctl->cfg.dev[i], &r->dev[i]);
	return 0;
}

int ctl_h_OPEN_DEVICE(const struct ctl_req *x)
{
	struct ctl_conn *c = x->conn;
	const struct ipc_msg *req = x->req;
	struct ipc_msg *rsp = x->rsp;
	int *rfds = x->rfds;
	unsigned int *rnfds = x->rnfds;
	const struct ipc_open_device_req *q = &req->u.req_OPEN_DEVICE;
	struct ipc_open_device_rsp *r = &rsp->u.rsp_OPEN_DEVICE;
	struct ctl *ctl = c->ctl;
	int rc;

	if (c->dev >= 0)
		return EBUSY;
	if (memchr(q->name, '\0', sizeof(q->name)) == NULL)
		return EINVAL;
	for (uint32_t i = 0; i < ctl->cfg.ndevices; i++) {
		if (strcmp(ctl->cfg.dev[i].name, q->name) != 0)
			continue;
		rc = ctl_conn_async_open(c, rfds, rnfds);
		if (rc)
			return rc;
		c->dev = (int)i;
		ctl_device_info(&ctl->cfg.dev[i], &r->info);
		r->num_comp_vectors = ctl->cfg.dev[i].num_comp_vectors;
		return 0;
	}
	return ENODEV;
}

struct ctl_conn *ctl_conn_import(struct ctl_conn *parent, int sock, const struct ipc_msg *req,
				 struct ipc_msg *rsp, int *rfds, unsigned int *rnfds)
{
	struct ipc_open_device_rsp *r = &rsp->u.rsp_IMPORT_DEVICE;
	struct ctl *ctl = parent->ctl;
	struct ctl_conn *c = NULL;
	int rc = ENODEV;

	*rnfds = 0;
	for (unsigned int i = 0; i < IPC_MAX_FDS; i++)
		rfds[i] = -1;
	ipc_rsp_init(rsp, req, 0);
	if (parent->dev >= 0) {
		c = ctl_conn_open(ctl, sock);
		rc = c ? 0 : errno;
	}
	if (c) {
		c->group = parent->group;
		c->group->members++;
		c->dev = parent->dev;
		rc = ctl_conn_async_open(c, rfds, rnfds);
	}
	if (rc) {
		if (c)
			ctl_conn_close(c);
		ipc_rsp_init(rsp, req, rc);
		return NULL;
	}
	ctl_device_info(&ctl->cfg.dev[c->dev], &r->info);
	r->num_comp_vectors = ctl->cfg.dev[c->dev].num_comp_vectors;
	return c;
}

static const struct ctl_device_cfg *ctl_dev(const struct ctl_conn *c)
{
	return &c->ctl->cfg.dev[c->dev];
}

int ctl_h_QUERY_DEVICE(const struct ctl_req *x)
{
	struct ctl_conn *c = x->conn;
	struct ipc_msg *rsp = x->rsp;

	struct ipc_device_attr *a = &rsp->u.rsp_QUERY_DEVICE.attr;
	const struct ctl_quota *q = &c->ctl->cfg.quota;

	*a = ctl_dev(c)->attr;
	a->max_dm_size = c->ctl->cfg.limits.max_dm_size; /* ctl_dm.c */
	/* this client's limits: the device's, or its quota where smaller */
#define CTL_QUOTA_MIN(field, quota) \
	if ((quota) != 0 && (quota) < a->field) \
		a->field = (quota);
	CTL_QUOTA_MIN(max_qp, q->max_qp)
	CTL_QUOTA_MIN(max_raw_ethy_qp, q->max_qp)
	CTL_QUOTA_MIN(max_cq, q->max_cq)
	CTL_QUOTA_MIN(max_mr, q->max_mr)
	CTL_QUOTA_MIN(max_pd, q->max_pd)
	CTL_QUOTA_MIN(max_srq, q->max_srq)
	CTL_QUOTA_MIN(max_ah, q->max_ah)
	CTL_QUOTA_MIN(max_mr_size, q->max_mr_bytes)
	CTL_QUOTA_MIN(max_dm_size, q->max_dm_bytes)
	CTL_QUOTA_MIN(max_total_mcast_qp_attach, q->max_mcast_attach)
	/* tag matching where the limits allow TM SRQs (ctl_objs.c), 0: none */
	const struct ctl_limits *l = &c->ctl->cfg.limits;
	bool tm = l->max_tm_tags != 0 && l->max_tm_ops != 0;
	a->tm_max_num_tags = !tm ? 0 : l->max_tm_tags < 0xffffu ? l->max_tm_tags : 0xffffu;
	a->tm_max_ops = tm ? l->max_tm_ops : 0;
	CTL_QUOTA_MIN(tm_max_num_tags, q->max_tm_tags)
#undef CTL_QUOTA_MIN
	return 0;
}

static const struct ctl_port_cfg *ctl_port(const struct ctl_conn *c, uint32_t port)
{
	const struct ctl_device_cfg *d = ctl_dev(c);

	if (port == 0 || port > d->attr.phys_port_cnt)
		return NULL;
	return &d->port[port - 1];
}

int ctl_h_QUERY_PORT(const struct ctl_req *x)
{
	struct ctl_conn *c = x->conn;
	const struct ipc_msg *req = x->req;
	struct ipc_msg *rsp = x->rsp;
	const struct ctl_port_cfg *p = ctl_port(c, req->u.req_QUERY_PORT.port);

	if (p == NULL)
		return EINVAL;
	rsp->u.rsp_QUERY_PORT.attr = p->attr;
	return 0;
}

int ctl_h_QUERY_GID(const struct ctl_req *x)
{
	struct ctl_conn *c = x->conn;
	const struct ipc_msg *req = x->req;
	struct ipc_msg *rsp = x->rsp;
	const struct ipc_port_req *q = &req->u.req_QUERY_GID;
	const struct ctl_port_cfg *p = ctl_port(c, q->port);
	struct ipc_query_gid_rsp *r = &rsp->u.rsp_QUERY_GID;

	if (p == NULL || q->index >= CTL_GID_TBL_LEN)
		return EINVAL;
	if (!p->gid_valid[q->index])
		return ENODATA;
	memcpy(r->gid, p->gid[q->index], 16);
	r->gid_type = p->gid_type[q->index];
	r->ndev_ifindex = p->gid_ndev[q->index];
	return 0;
}

int ctl_h_QUERY_PKEY(const struct ctl_req *x)
{
	struct ctl_conn *c = x->conn;
	const struct ipc_msg *req = x->req;
	struct ipc_msg *rsp = x->rsp;
	const struct ipc_port_req *q = &req->u.req_QUERY_PKEY;
	const struct ctl_port_cfg *p = ctl_port(c, q->port);

	if (p == NULL || q->index >= CTL_PKEY_TBL_LEN)
		return EINVAL;
	rsp->u.rsp_QUERY_PKEY.pkey = p->pkey[q->index];
	return 0;
}

/* ---- dispatch ---- */

/* IMPORT_DEVICE is answered on another socket: ctl_conn_import(). */
int ctl_h_IMPORT_DEVICE(const struct ctl_req *x)
{
	(void)x;
	return EINVAL;
}

/* The handler of every op, expanded from IPC_OPS; NULL for codes outside it. */
static ctl_handler_fn *const ctl_handlers[IPC_OP_MAX] = {
#define CTL_HANDLER_ROW(sym, val, rq, rs, rqfd, rsfd) [IPC_OP_##sym] = ctl_h_##sym,
	IPC_OPS(CTL_HANDLER_ROW)
#undef CTL_HANDLER_ROW
};

static ctl_handler_fn *ctl_handler(uint32_t op)
{
	return op < IPC_OP_MAX ? ctl_handlers[op] : NULL;
}

bool ctl_op_handled(uint32_t op)
{
	return ctl_handler(op) != NULL;
}

/* Ops a connection may send before OPEN_DEVICE; every other op is ENODEV until then. */
static bool ctl_op_before_open(uint32_t op)
{
	return op == IPC_OP_DEVICE_LIST || op == IPC_OP_OPEN_DEVICE || op == IPC_OP_IMPORT_DEVICE;
}

/*
 * What the handler of @p req sees: the descriptors within the bounds IPC_OPS
 * gives its op (none when the request carries none: the caller closes any;
 * no response slots when the response carries none).
 */
static struct ctl_req ctl_req_of(struct ctl_conn *c, const struct ipc_op_desc *d,
				 const struct ipc_msg *req, int *fds, unsigned int nfds,
				 struct ipc_msg *rsp, int *rfds, unsigned int *rnfds)
{
	return (struct ctl_req){
		.conn = c,
		.req = req,
		.fds = d->req_fds ? fds : NULL,
		.nfds = d->req_fds ? nfds : 0,
		.rsp = rsp,
		.rfds = d->rsp_fds ? rfds : NULL,
		.rnfds = d->rsp_fds ? rnfds : NULL,
	};
}

static int ctl_dispatch(struct ctl_conn *c, const struct ipc_msg *req, int *fds, unsigned int nfds,
			struct ipc_msg *rsp, int *rfds, unsigned int *rnfds)
{
	uint32_t op = req->hdr.op;
	const struct ipc_op_desc *d = ipc_op_desc(op);
	ctl_handler_fn *h = ctl_handler(op);
	struct ctl_req x;

	if (c->dev < 0 && !ctl_op_before_open(op))
		return ENODEV;
	if (h == NULL || d == NULL)
		return EOPNOTSUPP;
	x = ctl_req_of(c, d, req, fds, nfds, rsp, rfds, rnfds);
	return h(&x);
}

int ctl_conn_handle(struct ctl_conn *c, const struct ipc_msg *req, int *fds, unsigned int nfds,
		    struct ipc_msg *rsp, int *rfds, unsigned int *rnfds)
{
	struct ctl *ctl = c->ctl;
	struct ctl_pend *p = &c->pend;
	int status;

	*rnfds = 0;
	for (unsigned int i = 0; i < IPC_MAX_FDS; i++)
		rfds[i] = -1;
	if (p->state != CTL_PEND_IDLE) {
		for (unsigned int i = 0; i < nfds; i++) {
			if (fds[i] >= 0)
				close(fds[i]);
			fds[i] = -1;
		}
		ipc_rsp_init(rsp, req, EBUSY);
		return 0;
	}
	p->req = *req;
	p->teardown = false;
	p->obj = NULL;
	p->rnfds = 0;
	for (unsigned int i = 0; i < IPC_MAX_FDS; i++)
		p->rfds[i] = -1;
	ipc_rsp_init(&p->rsp, req, 0);
	ctl->cur = p;
	status = ctl_dispatch(c, &p->req, fds, nfds, &p->rsp, p->rfds, &p->rnfds);
	ctl->cur = &ctl->detached;
	/* Descriptors the handler did not keep are closed here. */
	for (unsigned int i = 0; i < nfds; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
		fds[i] = -1;
	}
	if (status == CTL_DEFERRED)
		return CTL_PENDING;
	ctl_pend_answer(p, status);
	ctl_pend_take(p, rsp, rfds, rnfds);
	return 0;
}
