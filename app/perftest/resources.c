/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Verbs resources of one side: device, PD, CQs, one MR over all buffers,
 * QPs and their RESET->INIT->RTR->RTS path (perftest_resources.c).
 *
 * Buffer layout, per QP: [tx area][rx area], each `slots` slots of `stride`
 * bytes. The tx area is the source of WRITE/SEND, the destination of READ and
 * the return buffer of atomics; the rx area is what the peer writes, reads or
 * applies atomics to, and where SENDs are received (UD: after the 40-byte GRH).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "perftest.h"

static size_t pt_round_up(size_t v, size_t a)
{
	return (v + a - 1) / a * a;
}

int pt_mtu_bytes(enum ibv_mtu mtu)
{
	switch (mtu) {
	case IBV_MTU_256: return 256;
	case IBV_MTU_512: return 512;
	case IBV_MTU_1024: return 1024;
	case IBV_MTU_2048: return 2048;
	case IBV_MTU_4096: return 4096;
	}
	return 0;
}

enum ibv_mtu pt_mtu_enum(int bytes)
{
	switch (bytes) {
	case 256: return IBV_MTU_256;
	case 512: return IBV_MTU_512;
	case 1024: return IBV_MTU_1024;
	case 2048: return IBV_MTU_2048;
	default: return IBV_MTU_4096;
	}
}

const char *pt_link_layer_name(uint8_t link_layer)
{
	switch (link_layer) {
	case IBV_LINK_LAYER_ETHERNET: return "Ethernet";
	case IBV_LINK_LAYER_INFINIBAND: return "IB";
	default: return "Unknown";
	}
}

int pt_layout_compute(const struct pt_params *p, uint64_t mtu_bytes, struct pt_layout *l)
{
	const struct pt_mode *m = p->mode;
	uint64_t max_size = p->size;
	size_t rx_off = p->conn == PT_UD ? PT_UD_GRH : 0;

	if (p->all_sizes)
		max_size = p->conn == PT_UD ? mtu_bytes : PT_MAX_SIZE;
	memset(l, 0, sizeof(*l));
	l->stride = pt_round_up(max_size + rx_off, 64);
	if (p->verify) {
		/* Every outstanding message owns its slot; as many slots as
		 * iterations when they fit, so each iteration is checked. */
		uint64_t cap = PT_VERIFY_AREA_MAX / l->stride;
		uint64_t want = p->duration ? cap : p->iters;

		if (m->kind == PT_LAT && (m->verb == PT_WRITE || m->verb == PT_SEND))
			want = 1;     /* ping-pong: one message in flight each way */
		if (cap < 1)
			cap = 1;
		l->slots = (uint32_t)(want < cap ? want : cap);
		if (l->slots < 1)
			l->slots = 1;
		l->window = (uint32_t)p->tx_depth < l->slots ? (uint32_t)p->tx_depth : l->slots;
		l->rx_depth = m->verb == PT_SEND ?
			((uint32_t)p->rx_depth < l->slots ? (uint32_t)p->rx_depth : l->slots) : 1;
	} else {
		l->slots = (uint32_t)(PT_CYCLE_BUFFER / l->stride);
		if (l->slots < 1)
			l->slots = 1;
		l->window = (uint32_t)p->tx_depth;
		l->rx_depth = m->verb == PT_SEND ? (uint32_t)p->rx_depth : 1;
	}
	if (m->kind == PT_LAT)
		l->window = 1;
	l->area = (size_t)l->slots * l->stride;
	return 0;
}

static bool pt_gid_is_ipv4_mapped(const union ibv_gid *g)
{
	static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return memcmp(g->raw, prefix, sizeof(prefix)) == 0;
}

static bool pt_gid_is_zero(const union ibv_gid *g)
{
	for (size_t i = 0; i < sizeof(g->raw); i++)
		if (g->raw[i])
			return false;
	return true;
}

/* perftest picks the IPv4-mapped (RoCE v2) GID when none is given. */
static int pt_pick_gid(struct pt_side *s)
{
	union ibv_gid g;
	int n = s->port_attr.gid_tbl_len;

	if (s->gid_index >= 0) {
		if (s->gid_index >= n || ibv_query_gid(s->ctx, (uint8_t)s->ib_port, s->gid_index, &s->gid)) {
			fprintf(stderr, " Cannot read GID index %d of %s port %d\n", s->gid_index, s->devname, s->ib_port);
			return -1;
		}
		if (pt_gid_is_zero(&s->gid)) {
			fprintf(stderr, " GID index %d of %s port %d is empty\n", s->gid_index, s->devname, s->ib_port);
			return -1;
		}
		return 0;
	}
	if (s->port_attr.link_layer != IBV_LINK_LAYER_ETHERNET)
		return 0;       /* InfiniBand: LID routing, no GRH */
	if (n > 256)
		n = 256;
	for (int i = 0; i < n; i++) {
		if (ibv_query_gid(s->ctx, (uint8_t)s->ib_port, i, &g) == 0 && pt_gid_is_ipv4_mapped(&g)) {
			s->gid_index = i;
			s->gid = g;
			return 0;
		}
	}
	if (ibv_query_gid(s->ctx, (uint8_t)s->ib_port, 0, &g) == 0 && !pt_gid_is_zero(&g)) {
		s->gid_index = 0;
		s->gid = g;
		return 0;
	}
	fprintf(stderr, " No usable GID on %s port %d (use -x)\n", s->devname, s->ib_port);
	return -1;
}

static struct ibv_context *pt_open_device(const char *name, const char **picked)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	bool found = false;
	int n = 0;

	list = ibv_get_device_list(&n);
	if (!list || n == 0) {
		fprintf(stderr, " No IB devices found\n");
		if (list)
			ibv_free_device_list(list);
		return NULL;
	}
	for (int i = 0; i < n; i++) {
		const char *dn = ibv_get_device_name(list[i]);

		if (name && strcmp(dn, name) != 0)
			continue;
		found = true;
		ctx = ibv_open_device(list[i]);
		if (!ctx)
			fprintf(stderr, " Couldn't get context for the device %s\n", dn);
		else
			*picked = strdup(dn);
		break;
	}
	if (!found)
		fprintf(stderr, " IB device %s not found\n", name);
	ibv_free_device_list(list);
	return ctx;
}

static int pt_qp_to_init(struct pt_side *s, struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = (uint8_t)s->ib_port,
	};
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

	switch (s->p->conn) {
	case PT_RC:
		a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
		mask |= IBV_QP_ACCESS_FLAGS;
		break;
	case PT_UC:
		a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
		mask |= IBV_QP_ACCESS_FLAGS;
		break;
	case PT_UD:
		a.qkey = PT_QKEY;
		mask |= IBV_QP_QKEY;
		break;
	}
	return ibv_modify_qp(qp, &a, mask);
}

int pt_side_open(struct pt_side *s, const struct pt_params *p, enum pt_role role,
		 const char *devname, int ib_port, int gid_index)
{
	const struct pt_mode *m = p->mode;
	enum ibv_qp_type qpt = p->conn == PT_RC ? IBV_QPT_RC : p->conn == PT_UC ? IBV_QPT_UC : IBV_QPT_UD;
	unsigned int access = IBV_ACCESS_LOCAL_WRITE;
	enum ibv_mtu mtu;
	int cqe;

	memset(s, 0, sizeof(*s));
	s->p = p;
	s->mode = m;
	s->role = role;
	s->ib_port = ib_port;
	s->gid_index = gid_index;
	s->ctx = pt_open_device(devname, &s->devname);
	if (!s->ctx)
		return -1;
	if (ibv_query_device(s->ctx, &s->dev_attr)) {
		fprintf(stderr, " Couldn't query device %s\n", s->devname);
		return -1;
	}
	if (ibv_query_port(s->ctx, (uint8_t)ib_port, &s->port_attr)) {
		fprintf(stderr, " Couldn't query port %d of %s\n", ib_port, s->devname);
		return -1;
	}
	if (s->port_attr.state != IBV_PORT_ACTIVE) {
		fprintf(stderr, " Port %d of %s is not active\n", ib_port, s->devname);
		return -1;
	}
	if (pt_pick_gid(s))
		return -1;

	mtu = s->port_attr.active_mtu;
	if (p->mtu) {
		if (pt_mtu_bytes(pt_mtu_enum(p->mtu)) > pt_mtu_bytes(mtu)) {
			fprintf(stderr, " Requested MTU %d is larger than the active MTU %d of %s port %d\n",
				p->mtu, pt_mtu_bytes(mtu), s->devname, ib_port);
			return -1;
		}
		mtu = pt_mtu_enum(p->mtu);
	}
	s->path_mtu = mtu;
	if (p->conn == PT_UD && !p->all_sizes && p->size > (uint64_t)pt_mtu_bytes(mtu)) {
		fprintf(stderr, " UD message size %lu is larger than the MTU %d\n",
			(unsigned long)p->size, pt_mtu_bytes(mtu));
		return -1;
	}
	pt_layout_compute(p, (uint64_t)pt_mtu_bytes(mtu), &s->layout);

	if ((int)s->layout.window > s->dev_attr.max_qp_wr || (int)s->layout.rx_depth > s->dev_attr.max_qp_wr) {
		fprintf(stderr, " tx/rx depth %u/%u exceeds the device limit %d\n",
			s->layout.window, s->layout.rx_depth, s->dev_attr.max_qp_wr);
		return -1;
	}
	if (p->num_qps > s->dev_attr.max_qp) {
		fprintf(stderr, " %d QPs exceed the device limit %d\n", p->num_qps, s->dev_attr.max_qp);
		return -1;
	}
	{
		int dev_reads = s->dev_attr.max_qp_rd_atom < s->dev_attr.max_qp_init_rd_atom ?
				s->dev_attr.max_qp_rd_atom : s->dev_attr.max_qp_init_rd_atom;

		if (dev_reads > 255)
			dev_reads = 255;
		if (dev_reads < 1)
			dev_reads = 1;
		if (p->out_reads > dev_reads) {
			fprintf(stderr, " -o %d exceeds the device limit %d\n", p->out_reads, dev_reads);
			return -1;
		}
		s->out_reads = (uint8_t)(p->out_reads ? p->out_reads : dev_reads);
	}
	s->inline_size = (m->verb == PT_SEND || m->verb == PT_WRITE) ? p->inline_size : 0;

	s->pd = ibv_alloc_pd(s->ctx);
	if (!s->pd) {
		fprintf(stderr, " Couldn't allocate PD\n");
		return -1;
	}
	if (p->use_event) {
		s->channel = ibv_create_comp_channel(s->ctx);
		if (!s->channel) {
			fprintf(stderr, " Couldn't create completion channel\n");
			return -1;
		}
	}
	cqe = p->num_qps * (int)s->layout.window + 16;
	if (cqe > s->dev_attr.max_cqe)
		cqe = s->dev_attr.max_cqe;
	s->send_cq = ibv_create_cq(s->ctx, cqe, NULL, s->channel, 0);
	cqe = p->num_qps * (int)s->layout.rx_depth + 16;
	if (cqe > s->dev_attr.max_cqe)
		cqe = s->dev_attr.max_cqe;
	s->recv_cq = ibv_create_cq(s->ctx, cqe, NULL, s->channel, 0);
	if (!s->send_cq || !s->recv_cq) {
		fprintf(stderr, " Couldn't create CQs\n");
		return -1;
	}

	s->num_qps = p->num_qps;
	s->buf_len = pt_round_up((size_t)s->num_qps * 2 * s->layout.area, 4096);
	if (posix_memalign((void **)&s->buf, 4096, s->buf_len)) {
		s->buf = NULL;
		fprintf(stderr, " Couldn't allocate %zu bytes of buffers\n", s->buf_len);
		return -1;
	}
	memset(s->buf, 0, s->buf_len);
	if (p->conn == PT_RC)
		access |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	else if (p->conn == PT_UC)
		access |= IBV_ACCESS_REMOTE_WRITE;
	s->mr = ibv_reg_mr(s->pd, s->buf, s->buf_len, (int)access);
	if (!s->mr) {
		fprintf(stderr, " Couldn't register %zu bytes of memory: %s\n", s->buf_len, strerror(errno));
		return -1;
	}

	s->qp = calloc((size_t)s->num_qps, sizeof(*s->qp));
	s->ah = calloc((size_t)s->num_qps, sizeof(*s->ah));
	s->local = calloc((size_t)s->num_qps, sizeof(*s->local));
	s->remote = calloc((size_t)s->num_qps, sizeof(*s->remote));
	s->rx = calloc((size_t)s->num_qps, sizeof(*s->rx));
	s->rx_expect = calloc((size_t)s->num_qps, sizeof(*s->rx_expect));
	s->pub.qp = calloc((size_t)s->num_qps, sizeof(*s->pub.qp));
	s->pub.num_qps = (uint32_t)s->num_qps;
	if (!s->qp || !s->ah || !s->local || !s->remote || !s->rx || !s->rx_expect || !s->pub.qp) {
		fprintf(stderr, " Out of memory\n");
		return -1;
	}
	for (int i = 0; i < s->num_qps; i++) {
		struct ibv_qp_init_attr ia = {
			.send_cq = s->send_cq,
			.recv_cq = s->recv_cq,
			.cap = {
				.max_send_wr = s->layout.window,
				.max_recv_wr = s->layout.rx_depth,
				.max_send_sge = 1,
				.max_recv_sge = 1,
				.max_inline_data = (uint32_t)s->inline_size,
			},
			.qp_type = qpt,
			.sq_sig_all = 0,
		};

		s->qp[i] = ibv_create_qp(s->pd, &ia);
		if (!s->qp[i]) {
			fprintf(stderr, " Couldn't create QP %d (%s, tx %u, rx %u, inline %d): %s\n", i,
				pt_conn_name(p->conn), s->layout.window, s->layout.rx_depth, s->inline_size,
				strerror(errno));
			return -1;
		}
		if (pt_qp_to_init(s, s->qp[i])) {
			fprintf(stderr, " Failed to modify QP %#x to INIT\n", s->qp[i]->qp_num);
			return -1;
		}
		s->local[i] = (struct pt_dest){
			.lid = s->port_attr.lid,
			.qpn = s->qp[i]->qp_num,
			.psn = (uint32_t)lrand48() & 0xffffff,
			.rkey = s->mr->rkey,
			.vaddr = (uint64_t)(uintptr_t)pt_rx_slot(s, (uint32_t)i, 0),
			.gid = s->gid,
			.out_reads = s->out_reads,
			.mtu = (uint8_t)s->path_mtu,
		};
	}
	return 0;
}

static void pt_fill_ah(const struct pt_side *s, const struct pt_dest *d, struct ibv_ah_attr *ah)
{
	memset(ah, 0, sizeof(*ah));
	ah->dlid = d->lid;
	ah->sl = (uint8_t)s->p->sl;
	ah->port_num = (uint8_t)s->ib_port;
	if (s->gid_index >= 0) {
		ah->is_global = 1;
		ah->grh.dgid = d->gid;
		ah->grh.sgid_index = (uint8_t)s->gid_index;
		ah->grh.hop_limit = PT_DEF_HOP_LIMIT;
	}
}

static int pt_qp_to_rtr_rts(struct pt_side *s, int i)
{
	const struct pt_dest *d = &s->remote[i];
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTR };
	int mask = IBV_QP_STATE;

	if (s->p->conn != PT_UD) {
		a.path_mtu = s->path_mtu;
		a.dest_qp_num = d->qpn;
		a.rq_psn = d->psn;
		pt_fill_ah(s, d, &a.ah_attr);
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
		if (s->p->conn == PT_RC) {
			a.max_dest_rd_atomic = s->rd_atomic;
			a.min_rnr_timer = 12;
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		}
	}
	if (ibv_modify_qp(s->qp[i], &a, mask)) {
		fprintf(stderr, " Failed to modify QP %#x to RTR\n", s->qp[i]->qp_num);
		return -1;
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = s->local[i].psn;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (s->p->conn == PT_RC) {
		a.timeout = (uint8_t)s->p->qp_timeout;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = s->rd_atomic;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
	}
	if (ibv_modify_qp(s->qp[i], &a, mask)) {
		fprintf(stderr, " Failed to modify QP %#x to RTS\n", s->qp[i]->qp_num);
		return -1;
	}
	if (s->p->pacing_kbps > 0) {
		struct ibv_qp_rate_limit_attr rl = { .rate_limit = (uint32_t)s->p->pacing_kbps };
		int rc = ibv_modify_qp_rate_limit(s->qp[i], &rl);

		if (rc) {
			fprintf(stderr, " Failed to pace QP %#x at %d kb/s: %s\n", s->qp[i]->qp_num,
				s->p->pacing_kbps, strerror(rc));
			return -1;
		}
	}
	return 0;
}

int pt_side_connect(struct pt_side *s)
{
	enum ibv_mtu peer_mtu = (enum ibv_mtu)s->remote[0].mtu;

	if (pt_mtu_bytes(peer_mtu) && pt_mtu_bytes(peer_mtu) < pt_mtu_bytes(s->path_mtu))
		s->path_mtu = peer_mtu;
	s->rd_atomic = s->out_reads < s->remote[0].out_reads ? s->out_reads : s->remote[0].out_reads;
	if (s->rd_atomic < 1)
		s->rd_atomic = 1;
	for (int i = 0; i < s->num_qps; i++) {
		if (pt_qp_to_rtr_rts(s, i))
			return -1;
		if (s->p->conn == PT_UD) {
			struct ibv_ah_attr ah;

			pt_fill_ah(s, &s->remote[i], &ah);
			s->ah[i] = ibv_create_ah(s->pd, &ah);
			if (!s->ah[i]) {
				fprintf(stderr, " Couldn't create address handle for QP %d\n", i);
				return -1;
			}
		}
	}
	return 0;
}

int pt_side_reset_run(struct pt_side *s, uint64_t size)
{
	const struct pt_params *p = s->p;

	s->size = size;
	s->iters = p->duration ? UINT64_MAX : p->iters;
	s->cq_mod = s->mode->kind == PT_BW ? (uint32_t)p->cq_mod : 1;
	if (s->cq_mod > s->layout.window)
		s->cq_mod = s->layout.window;
	memset(s->pub.qp, 0, (size_t)s->num_qps * sizeof(*s->pub.qp));
	memset(s->rx_expect, 0, (size_t)s->num_qps * sizeof(*s->rx_expect));
	s->pub.done = false;
	s->n_posted = s->n_completed = s->n_received = 0;
	s->t_begin = s->t_last_rx = s->t_peer_done = 0;
	s->rr = 0;
	memset(&s->win, 0, sizeof(s->win));
	s->verify_checked = s->verify_errors = s->lost = 0;
	memset(&s->post_wr, 0, sizeof(s->post_wr));
	s->post_wr.sg_list = &s->post_sge;
	s->post_wr.num_sge = 1;
	s->post_sge = (struct ibv_sge){ .length = (uint32_t)size, .lkey = s->mr->lkey };
	if (!p->duration && s->role == PT_ROLE_CLIENT && !s->tposted) {
		uint64_t n = p->iters * (uint64_t)s->num_qps;

		if (n > (SIZE_MAX / sizeof(uint64_t)) ||
		    !(s->tposted = malloc(n * sizeof(uint64_t))) ||
		    !(s->tcompleted = malloc(n * sizeof(uint64_t)))) {
			fprintf(stderr, " Couldn't allocate timestamps for %lu iterations (use -D)\n",
				(unsigned long)n);
			return -1;
		}
		s->ts_cap = n;
	}
	return 0;
}

int pt_post_recv(struct pt_side *s, uint32_t qp)
{
	struct pt_rx_ring *ring = &s->rx[qp];
	uint64_t slot = ring->posted_total % s->layout.slots;
	struct ibv_sge sge = {
		.addr = (uint64_t)(uintptr_t)pt_rx_slot(s, qp, slot),
		.length = (uint32_t)s->layout.stride,
		.lkey = s->mr->lkey,
	};
	struct ibv_recv_wr wr = {
		.wr_id = pt_wr_id(qp, slot),
		.sg_list = &sge,
		.num_sge = 1,
	}, *bad;

	if (ibv_post_recv(s->qp[qp], &wr, &bad)) {
		fprintf(stderr, " Couldn't post receive on QP %u\n", qp);
		return -1;
	}
	ring->posted_total++;
	s->pub.qp[qp].recv_posted++;
	return 0;
}

void pt_side_close(struct pt_side *s)
{
	for (int i = 0; s->ah && i < s->num_qps; i++)
		if (s->ah[i])
			ibv_destroy_ah(s->ah[i]);
	for (int i = 0; s->qp && i < s->num_qps; i++)
		if (s->qp[i])
			ibv_destroy_qp(s->qp[i]);
	if (s->send_cq)
		ibv_destroy_cq(s->send_cq);
	if (s->recv_cq)
		ibv_destroy_cq(s->recv_cq);
	if (s->channel)
		ibv_destroy_comp_channel(s->channel);
	if (s->mr)
		ibv_dereg_mr(s->mr);
	if (s->pd)
		ibv_dealloc_pd(s->pd);
	if (s->ctx)
		ibv_close_device(s->ctx);
	free(s->buf);
	free(s->qp);
	free(s->ah);
	free(s->local);
	free(s->remote);
	free(s->rx);
	free(s->rx_expect);
	free(s->pub.qp);
	free(s->tposted);
	free(s->tcompleted);
	free((void *)s->devname);
	memset(s, 0, sizeof(*s));
}
