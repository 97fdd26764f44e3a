/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shim's verbs in-process, against a lib/ctl server on a thread. A
 * fake dataplane records what the control plane hands over, and the test
 * plays the daemon's lcore on the shared rings (consume WQEs, produce CQEs,
 * signal the completion channel), so the whole shim <-> daemon contract is
 * exercised without DPDK.
 *
 * Linked against the built shim (libibverbs.so.1 of this tree), never the
 * system library.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "ctl.h"
#include "ipc.h"
#include "mr.h"
#include "mw.h"
#include "qp_attr.h"
#include "qp_fixture.h"

/* Private export (rdma-core driver.h): not in the installed headers. */
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
		       void *type);

static const uint8_t mac[6] = { 0x02, 0x00, 0xc6, 0x12, 0x00, 0x01 };

/* ---- fake dataplane: remembers the objects, by number ---- */

#define FAKE_MAX 64
static struct {
	const struct ctl_qp_info *qp[FAKE_MAX];   /* by qpn - qpn_base */
	const struct ctl_cq_info *cq[FAKE_MAX];   /* by cqn */
	const struct ctl_srq_info *srq[FAKE_MAX]; /* by srqn */
	const struct ctl_mr_info *mr;             /* the latest one */
	void *mr_local[FAKE_MAX];                 /* by lkey >> 8 */
	int nmr;
} fake;

static int f_mr_create(void *dp, struct ctl_mr_info *mr)
{
	(void)dp;
	fake.mr = mr;
	fake.mr_local[(mr->lkey >> 8) % FAKE_MAX] = mr->local;
	fake.nmr++;
	return 0;
}
static void f_mr_destroy(void *dp, const struct ctl_mr_info *mr)
{
	(void)dp;
	fake.mr_local[(mr->lkey >> 8) % FAKE_MAX] = NULL;
	fake.nmr--;
}
static int f_cq_create(void *dp, const struct ctl_cq_info *cq)
{
	(void)dp;
	fake.cq[cq->cqn % FAKE_MAX] = cq;
	return 0;
}
static void f_cq_destroy(void *dp, const struct ctl_cq_info *cq)
{
	(void)dp;
	fake.cq[cq->cqn % FAKE_MAX] = NULL;
}
static int f_qp_create(void *dp, const struct ctl_qp_info *qp)
{
	(void)dp;
	fake.qp[(qp->qpn - 0x11) % FAKE_MAX] = qp;
	return 0;
}
static void f_qp_destroy(void *dp, const struct ctl_qp_info *qp)
{
	(void)dp;
	fake.qp[(qp->qpn - 0x11) % FAKE_MAX] = NULL;
}
static int f_srq_create(void *dp, const struct ctl_srq_info *srq)
{
	(void)dp;
	fake.srq[srq->srqn % FAKE_MAX] = srq;
	return 0;
}
static int f_ah_create(void *dp, struct ctl_ah_info *ah)
{
	(void)dp;
	ah->av.dmac[5] = 0x42; /* "ARP resolved" */
	return 0;
}

/*
 * One watched UD send queue: the WQEs the dataplane had not fetched yet when
 * the daemon destroyed an AH, or the watched QP (-1: no destroy seen).
 */
static struct {
	struct spsc_ring *sq;
	int64_t at_ah_destroy, at_qp_destroy;
} ud_watch;

static void f_ah_destroy(void *dp, const struct ctl_ah_info *ah)
{
	(void)dp;
	(void)ah;
	if (ud_watch.sq != NULL)
		ud_watch.at_ah_destroy = spsc_ring_count(ud_watch.sq);
}
static void f_qp_destroy_watched(void *dp, const struct ctl_qp_info *qp)
{
	if (ud_watch.sq != NULL && ud_watch.sq == qp->sq.ring) {
		ud_watch.at_qp_destroy = spsc_ring_count(ud_watch.sq);
		ud_watch.sq = NULL; /* the ring goes with the QP */
	}
	f_qp_destroy(dp, qp);
}

static const struct ctl_dataplane_ops fake_ops = {
	.mr_create = f_mr_create, .mr_destroy = f_mr_destroy,
	.cq_create = f_cq_create, .cq_destroy = f_cq_destroy,
	.qp_create = f_qp_create, .qp_destroy = f_qp_destroy_watched,
	.srq_create = f_srq_create, .ah_create = f_ah_create, .ah_destroy = f_ah_destroy,
};

/* ---- the daemon on a thread ---- */

#define DM_SIZE (64u << 10) /* max_dm_size of the server */

static char dir[64], sock[128];
static struct ctl *ctl;
static struct ctl_server *srv;
static pthread_t srv_thread;
static pthread_mutex_t srv_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile int srv_stop;

/*
 * The daemon's control thread. It holds srv_lock only while it works,
 * never across a wait: a test that takes the lock to look into the
 * daemon's tables must not depend on being scheduled within the short
 * gap between two held waits (on a loaded 2-core machine it may not be,
 * for many gaps in a row).
 */
static void *serve(void *arg)
{
	(void)arg;
	while (!srv_stop) {
		pthread_mutex_lock(&srv_lock);
		ctl_server_poll(srv, 0);
		pthread_mutex_unlock(&srv_lock);
		usleep(200);
	}
	return NULL;
}

static void daemon_start(void)
{
	struct ctl_config cfg;
	uint32_t ip;

	memset(&fake, 0, sizeof(fake));
	memset(&ud_watch, 0, sizeof(ud_watch));
	strcpy(dir, "/tmp/shim-verbs-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(sock, sizeof(sock), "%s/roce.sock", dir);
	setenv("ROCE_DAEMON_SOCKET", sock, 1);
	inet_pton(AF_INET, "198.18.0.1", &ip);
	ctl_config_default(&cfg, "dpdk_roce0", mac, ip);
	cfg.dp_ops = &fake_ops;
	cfg.limits.max_dm_size = DM_SIZE; /* device memory: 4 allocations of the largest size */
	cfg.limits.max_dm_bytes = 4 * DM_SIZE;
	cfg.limits.max_tm_tags = 4; /* tag matching SRQs of at most 4 entries, 16 operations */
	cfg.limits.max_tm_ops = 16;
	ctl = ctl_create(&cfg);
	cr_assert_not_null(ctl);
	srv = ctl_server_create(ctl, sock);
	cr_assert_not_null(srv);
	srv_stop = 0;
	cr_assert_eq(pthread_create(&srv_thread, NULL, serve, NULL), 0);
}

static void daemon_stop(void)
{
	if (srv == NULL)
		return;
	srv_stop = 1;
	pthread_join(srv_thread, NULL);
	ctl_server_destroy(srv);
	ctl_destroy(ctl);
	srv = NULL;
	rmdir(dir);
}

/* ---- the application side ---- */

static struct ibv_context *ctx;
static struct ibv_pd *pd;

static void open_ctx(void)
{
	struct ibv_device **list;
	int n;

	daemon_start();
	list = ibv_get_device_list(&n);
	cr_assert_not_null(list);
	cr_assert_eq(n, 1);
	cr_assert_str_eq(ibv_get_device_name(list[0]), "dpdk_roce0");
	ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	cr_assert_not_null(ctx);
	pd = ibv_alloc_pd(ctx);
	cr_assert_not_null(pd);
}

static void close_ctx(void)
{
	if (pd)
		cr_assert_eq(ibv_dealloc_pd(pd), 0);
	if (ctx)
		cr_assert_eq(ibv_close_device(ctx), 0);
	pd = NULL;
	ctx = NULL;
	daemon_stop();
}

/* Play the engine: complete up to @p n send WQEs of @p qp into its send CQ. */
static uint32_t engine_complete_sends(struct ibv_qp *qp, uint32_t n, struct sq_wqe *seen)
{
	const struct ctl_qp_info *qi = fake.qp[(qp->qp_num - 0x11) % FAKE_MAX];
	const struct ctl_cq_info *ci;
	uint32_t done = 0;

	cr_assert_not_null(qi);
	ci = fake.cq[qi->send_cqn % FAKE_MAX];
	cr_assert_not_null(ci);
	while (done < n && spsc_ring_count(qi->sq.ring) > 0) {
		struct sq_wqe wqe = *(const struct sq_wqe *)spsc_ring_cons_slot(qi->sq.ring, 0);
		const struct sq_wqe *w = &wqe;
		struct cqe *e = spsc_ring_prod_slot(ci->ring.ring, 0);

		if (wqe.send_flags & WR_FLAG_HEAD_DATA) { /* as the engine's fetch_wqe(): flag kept */
			if (wqe.send_flags & IBV_SEND_INLINE)
				memcpy(wqe.inline_data, wqe.wr.rdma.head.inline_data, WQE_HEAD_INLINE);
			else
				wqe.sg_list[0] = wqe.wr.rdma.head.sge;
		}
		if (seen)
			seen[done] = *w;
		memset(e, 0, sizeof(*e));
		e->wr_id = w->wr_id;
		e->status = IBV_WC_SUCCESS;
		e->opcode = w->opcode == IBV_WR_RDMA_WRITE ? IBV_WC_RDMA_WRITE : IBV_WC_SEND;
		e->qp_num = qi->qpn;
		e->byte_len = w->num_sge ? w->sg_list[0].length : w->inline_len;
		spsc_ring_publish(ci->ring.ring, 1);
		spsc_ring_release(qi->sq.ring, 1);
		done++;
	}
	/* The notification the engine reports and the daemon delivers. */
	if (done && __atomic_exchange_n(&ci->ctrl->arm, 0, __ATOMIC_SEQ_CST) != 0)
		ipc_cq_signal(ci->ctrl, ci->event_fd);
	return done;
}

static void to_rts(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };

	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					   IBV_QP_ACCESS_FLAGS), 0);
	cr_assert_eq(qp->state, IBV_QPS_INIT);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = qp->qp_num;
	a.rq_psn = 1;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.sgid_index = 1;
	a.ah_attr.grh.hop_limit = 0xff;
	cr_assert_eq(ibv_query_gid(ctx, 1, 1, &a.ah_attr.grh.dgid), 0); /* loop back to ourselves */
	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					   IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 1;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
					   IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					   IBV_QP_MAX_QP_RD_ATOMIC), 0);
	cr_assert_eq(qp->state, IBV_QPS_RTS);
}

static struct ibv_qp *make_qp(struct ibv_cq *cq, enum ibv_qp_type type, uint32_t wr, uint32_t sge)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = type,
		.cap = { .max_send_wr = wr, .max_recv_wr = wr, .max_send_sge = sge, .max_recv_sge = sge },
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);

	cr_assert_not_null(qp, "create_qp: %s", strerror(errno));
	return qp;
}

TestSuite(shim_verbs, .init = open_ctx, .fini = close_ctx, .timeout = 30);

Test(shim_verbs, device_port_gid_pkey)
{
	struct ibv_device_attr da;
	struct ibv_device_attr_ex dx;
	struct ibv_port_attr pa;
	struct ibv_gid_entry ge[4];
	union ibv_gid gid;
	enum { ROCE_V2 = 1 } t;
	__be16 pkey;

	cr_assert_eq(ibv_query_device(ctx, &da), 0);
	cr_assert_eq(da.vendor_id, 0xffffff);
	cr_assert_eq(da.vendor_part_id, 0);
	cr_assert_eq(da.phys_port_cnt, 1);
	cr_assert_eq(ibv_query_device_ex(ctx, NULL, &dx), 0);
	cr_assert_eq(dx.phys_port_cnt_ex, 1);
	cr_assert_eq(dx.orig_attr.max_qp_wr, da.max_qp_wr);
	cr_assert_geq(ctx->num_comp_vectors, 1);

	cr_assert_eq(ibv_query_port(ctx, 1, &pa), 0);
	cr_assert_eq(pa.state, IBV_PORT_ACTIVE);
	cr_assert_eq(pa.link_layer, IBV_LINK_LAYER_ETHERNET);
	cr_assert_eq(pa.gid_tbl_len, 16);
	cr_assert_eq(ibv_query_port(ctx, 2, &pa), EINVAL, "pyverbs expects EINVAL");

	cr_assert_eq(ibv_query_gid(ctx, 1, 1, &gid), 0);
	cr_assert_eq(gid.raw[10], 0xff);
	cr_assert_eq(gid.raw[15], 1);
	cr_assert_eq(ibv_query_gid(ctx, 1, 5, &gid), 0, "legacy: empty slot is a zero GID");
	cr_assert_eq(gid.global.interface_id, 0);
	cr_assert_eq(ibv_query_gid(ctx, 1, 99, &gid), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(ibv_query_gid_ex(ctx, 1, 0, &ge[0], 0), 0);
	cr_assert_eq(ge[0].gid_type, IBV_GID_TYPE_ROCE_V2);
	cr_assert_eq(ge[0].gid.raw[0], 0xfe);
	cr_assert_eq(ibv_query_gid_ex(ctx, 1, 5, &ge[0], 0), ENODATA);
	cr_assert_eq(ibv_query_gid_ex(ctx, 3, 0, &ge[0], 0), EINVAL);
	cr_assert_eq(ibv_query_gid_table(ctx, ge, 4, 0), 2);
	cr_assert_eq(ge[1].gid_index, 1);
	cr_assert_eq(ibv_query_gid_table(ctx, ge, 1, 0), -EINVAL, "buffer too small");
	cr_assert_eq(ibv_query_gid_type(ctx, 1, 1, &t), 0);
	cr_assert_eq(t, ROCE_V2);

	cr_assert_eq(ibv_query_pkey(ctx, 1, 0, &pkey), 0);
	cr_assert_eq(pkey, htons(0xffff));
	cr_assert_eq(ibv_query_pkey(ctx, 1, 1, &pkey), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(ibv_get_pkey_index(ctx, 1, htons(0xffff)), 0);
}

static bool maps_line_for(void *addr, char *out, size_t cap)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	bool found = false;

	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo <= (uintptr_t)addr &&
		    (uintptr_t)addr < hi) {
			snprintf(out, cap, "%s", line);
			found = true;
		}
	}
	fclose(f);
	return found;
}

Test(shim_verbs, registered_pages_are_shared_with_the_daemon)
{
	long pg = sysconf(_SC_PAGESIZE);
	size_t len = 3 * (size_t)pg;
	uint8_t *buf = mmap(NULL, len + pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ibv_mr *mr, *mr2;
	uint8_t *remote;
	char line[512];

	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(i * 7);
	mr = ibv_reg_mr(pd, buf + 100, len - 200, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	cr_assert_not_null(mr, "%s", strerror(errno));
	cr_assert_eq(mr->addr, buf + 100);
	cr_assert_eq(mr->lkey, mr->rkey);
	remote = fake.mr_local[(mr->lkey >> 8) % FAKE_MAX];
	cr_assert_not_null(remote, "the daemon maps the application's pages");
	cr_assert_neq(remote, buf + 100, "at its own address");
	cr_assert_eq(memcmp(remote, buf + 100, len - 200), 0, "contents survived the remap");
	remote[0] = 0xab;
	cr_assert_eq(buf[100], 0xab, "daemon writes land in the application");
	buf[len - 101] = 0xcd;
	cr_assert_eq(remote[len - 201], 0xcd, "application writes reach the daemon");
	cr_assert(maps_line_for(buf + 100, line, sizeof(line)));
	cr_assert(strstr(line, "roce-mr") != NULL && strstr(line, "rw-s") != NULL, "%s", line);

	/* A second registration inside the first reuses its pages. */
	mr2 = ibv_reg_mr(pd, buf + pg, 16, IBV_ACCESS_LOCAL_WRITE);
	cr_assert_not_null(mr2);
	cr_assert_neq(mr2->lkey, mr->lkey);
	remote = fake.mr_local[(mr2->lkey >> 8) % FAKE_MAX];
	remote[0] = 0x5a;
	cr_assert_eq(buf[pg], 0x5a);

	cr_assert_eq(ibv_dereg_mr(mr), 0);
	cr_assert(maps_line_for(buf + 100, line, sizeof(line)));
	cr_assert(strstr(line, "roce-mr") != NULL, "still shared while mr2 uses it: %s", line);
	cr_assert_eq(ibv_dereg_mr(mr2), 0);
	cr_assert_eq(fake.nmr, 0);
	cr_assert(maps_line_for(buf + 100, line, sizeof(line)));
	cr_assert(strstr(line, "roce-mr") == NULL && strstr(line, "rw-p") != NULL,
		  "private memory again: %s", line);
	cr_assert_eq(buf[100], 0xab, "contents kept after the last deregistration");
	cr_assert_eq(buf[pg], 0x5a);
	cr_assert_eq(buf[len - 101], 0xcd);
	cr_assert_eq(buf[2 * pg + 1], (uint8_t)((2 * pg + 1) * 7));
	munmap(buf, len + pg);

	/* Bad flows: pyverbs' test_reg_mr_bad_flags, ODP, empty. */
	uint8_t small[64];

	cr_assert_null(ibv_reg_mr(pd, small, sizeof(small), IBV_ACCESS_REMOTE_WRITE));
	cr_assert_eq(errno, EINVAL);
	cr_assert_null(ibv_reg_mr(pd, small, sizeof(small), IBV_ACCESS_REMOTE_ATOMIC));
	cr_assert_eq(errno, EINVAL);
	cr_assert_null(ibv_reg_mr(pd, small, 0, IBV_ACCESS_LOCAL_WRITE));
	cr_assert_eq(errno, EINVAL);
	/* Stack memory cannot be remapped: registered without direct access (fallback). */
	mr = ibv_reg_mr(pd, small, sizeof(small), IBV_ACCESS_LOCAL_WRITE);
	cr_assert_not_null(mr);
	cr_assert_null(fake.mr_local[(mr->lkey >> 8) % FAKE_MAX]);
	cr_assert_eq(ibv_dereg_mr(mr), 0);
}

/* The daemon's view of an ODP MR: no shared pages, its /proc/PID/mem. */
static ssize_t odp_daemon_read(const struct ibv_mr *mr, const void *addr, void *out, size_t n)
{
	(void)mr;
	cr_assert_null(fake.mr->local, "an ODP MR is never shared through a memfd");
	cr_assert_geq(fake.mr->mem_fd, 0, "the daemon reaches it through /proc/PID/mem");
	return pread(fake.mr->mem_fd, out, n, (off_t)(uintptr_t)addr);
}

Test(shim_verbs, odp_mrs_follow_the_mapping)
{
	long pg = sysconf(_SC_PAGESIZE);
	uint8_t *buf = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned int rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_ON_DEMAND;
	struct ibv_device_attr_ex dx;
	struct ibv_mr *mr, *imr;
	uint8_t seen[16];
	char line[512];

	cr_assert_eq(ibv_query_device_ex(ctx, NULL, &dx), 0);
	cr_assert_eq(dx.odp_caps.general_caps, IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT);
	cr_assert_eq(dx.odp_caps.per_transport_caps.rc_odp_caps,
		     IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE |
			     IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV);
	cr_assert_eq(dx.odp_caps.per_transport_caps.ud_odp_caps,
		     IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_SRQ_RECV);
	cr_assert_eq(dx.xrc_odp_caps, dx.odp_caps.per_transport_caps.rc_odp_caps,
		     "XRC reaches memory as RC does");

	memset(buf, 0x11, 2 * pg);
	mr = ibv_reg_mr(pd, buf, 2 * pg, rw);
	cr_assert_not_null(mr, "%s", strerror(errno));
	cr_assert(maps_line_for(buf, line, sizeof(line)));
	cr_assert(strstr(line, "roce-mr") == NULL && strstr(line, "rw-p") != NULL,
		  "ODP leaves the application's pages alone: %s", line);
	cr_assert_eq(odp_daemon_read(mr, buf + 8, seen, sizeof(seen)), (ssize_t)sizeof(seen));
	cr_assert_eq(seen[0], 0x11);
	/* New pages at the same address: the MR reaches them, not the old ones. */
	cr_assert_eq(mmap(buf, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
			  -1, 0), buf);
	memset(buf, 0x22, pg);
	cr_assert_eq(odp_daemon_read(mr, buf + 8, seen, sizeof(seen)), (ssize_t)sizeof(seen));
	cr_assert_eq(seen[0], 0x22, "the access follows the mapping of the moment");
	/* A hole in the range: the access fails there (the engine completes it with an error). */
	cr_assert_eq(munmap(buf + pg, pg), 0);
	cr_assert_lt(odp_daemon_read(mr, buf + pg, seen, sizeof(seen)), 0);
	cr_assert_eq(ibv_dereg_mr(mr), 0);

	/* Implicit ODP: NULL and SIZE_MAX, only with IBV_ACCESS_ON_DEMAND. */
	imr = ibv_reg_mr(pd, NULL, SIZE_MAX, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
	cr_assert_not_null(imr, "%s", strerror(errno));
	cr_assert_eq(fake.mr->length, UINT64_MAX);
	cr_assert_eq(odp_daemon_read(imr, buf + 8, seen, sizeof(seen)), (ssize_t)sizeof(seen));
	cr_assert_eq(seen[0], 0x22, "an implicit MR reaches any address of the process");
	errno = 0;
	cr_assert_null(ibv_reg_mr(pd, NULL, SIZE_MAX, IBV_ACCESS_LOCAL_WRITE));
	cr_assert_eq(errno, EINVAL, "NULL/SIZE_MAX is implicit ODP only");
	cr_assert_eq(ibv_dereg_mr(imr), 0);
	munmap(buf, pg);
}

/* ibv_advise_mr's checks, errno as mlx5's: keys, PD, write access, range, advice, flags. */
Test(shim_verbs, advise_mr_checks_as_mlx5)
{
	long pg = sysconf(_SC_PAGESIZE);
	uint8_t *buf = mmap(NULL, 4 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ibv_pd *pd2 = ibv_alloc_pd(ctx);
	struct ibv_mr *odp = ibv_reg_mr(pd, buf, 2 * pg, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
	struct ibv_mr *ro = ibv_reg_mr(pd, buf, pg, IBV_ACCESS_ON_DEMAND);
	struct ibv_mr *plain = ibv_reg_mr(pd, buf + 3 * pg, pg, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *imr = ibv_reg_mr(pd, NULL, SIZE_MAX, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 2 * pg };
	const int flush = IBV_ADVISE_MR_FLAG_FLUSH;

	cr_assert(odp && ro && plain && imr && pd2);
#define ADVISE(p, adv, fl, s, n, want)                                                           \
	do {                                                                                     \
		errno = 0;                                                                       \
		int r_ = ibv_advise_mr(p, adv, fl, s, n);                                         \
		cr_assert_eq(r_, want, "ibv_advise_mr: %d, want %d", r_, want);                   \
		if (want != 0)                                                                   \
			cr_assert_eq(errno, want, "errno %d, want %d", errno, want);             \
	} while (0)
	sge.lkey = odp->lkey;
	ADVISE(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, flush, &sge, 1, 0);
	ADVISE(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge, 1, 0);
	ADVISE(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT, flush, &sge, 1, 0);
	ADVISE(pd, (enum ibv_advise_mr_advice)7, flush, &sge, 1, EOPNOTSUPP);
	ADVISE(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 1u << 1, &sge, 1, EOPNOTSUPP);
	ADVISE(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, flush, &sge, 0, EINVAL);
	ADVISE(pd2, IBV_ADVISE_MR_ADVICE_PREFETCH, flush, &sge, 1, EPERM); /* another PD's key */
	sge.length = 2 * pg + 1;
	ADVISE(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, flush, &sge, 1, EFAULT); /* past the MR */
	sge.length = 64;
	sge.lkey = ro->lkey;
	ADVISE(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, flush, &sge, 1, 0);
	ADVISE(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, flush, &sge, 1, EPERM); /* no local write */
	sge.lkey = plain->lkey;
	sge.addr = (uintptr_t)(buf + 3 * pg);
	ADVISE(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, flush, &sge, 1, ENOENT); /* not an ODP MR */
	sge.lkey = 0x12345678;
	ADVISE(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, flush, &sge, 1, ENOENT);
	/* Unmapped pages under the implicit MR: a synchronous prefetch fails, an async one not. */
	cr_assert_eq(ibv_dereg_mr(plain), 0);
	cr_assert_eq(munmap(buf + 2 * pg, 2 * pg), 0);
	sge.lkey = imr->lkey;
	sge.addr = (uintptr_t)(buf + 2 * pg);
	ADVISE(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, flush, &sge, 1, EFAULT);
	ADVISE(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, 0, &sge, 1, 0);
#undef ADVISE
	cr_assert_eq(ibv_dereg_mr(odp), 0);
	cr_assert_eq(ibv_dereg_mr(ro), 0);
	cr_assert_eq(ibv_dereg_mr(imr), 0);
	cr_assert_eq(ibv_dealloc_pd(pd2), 0);
	munmap(buf, 2 * pg);
}

Test(shim_verbs, rereg_mr)
{
	uint8_t *a = aligned_alloc(4096, 8192), *b = aligned_alloc(4096, 8192);
	struct ibv_pd *pd2 = ibv_alloc_pd(ctx);
	struct ibv_mr *mr = ibv_reg_mr(pd, a, 8192, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	uint32_t key;

	cr_assert_not_null(mr);
	key = mr->lkey;
	cr_assert_eq(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
				  IBV_ACCESS_LOCAL_WRITE), 0);
	cr_assert_eq(fake.mr->access, IBV_ACCESS_LOCAL_WRITE);
	cr_assert_eq(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0, 0), 0);
	cr_assert_eq(mr->pd, pd2);
	cr_assert_eq(fake.mr->pd, 1, "the dataplane sees the new PD");
	cr_assert_eq(ibv_dealloc_pd(pd2), EBUSY, "the MR uses it now");
	b[10] = 77;
	cr_assert_eq(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, b, 4096, 0), 0);
	cr_assert_eq(mr->addr, b);
	cr_assert_eq(mr->lkey, key, "keys survive a rereg when the dataplane keeps them");
	cr_assert_eq(((uint8_t *)fake.mr->local)[10], 77, "the new pages are shared");
	cr_assert_eq(ibv_rereg_mr(mr, 0, NULL, NULL, 0, 0), IBV_REREG_MR_ERR_INPUT);
	cr_assert_eq(ibv_dereg_mr(mr), 0);
	cr_assert_eq(ibv_dealloc_pd(pd2), 0);
	free(a);
	free(b);
}

Test(shim_verbs, posting_bad_flows_like_rxe)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_qp *qp;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;
	uint8_t buf[256];
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	struct ibv_sge sge[4] = { { (uintptr_t)buf, 8, mr->lkey }, { (uintptr_t)buf + 8, 8, mr->lkey },
				  { (uintptr_t)buf + 16, 8, mr->lkey }, { (uintptr_t)buf + 24, 8, mr->lkey } };
	struct ibv_send_wr swr = { .wr_id = 1, .sg_list = sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED }, *bad_s = NULL;
	struct ibv_recv_wr rwr = { .wr_id = 2, .sg_list = sge, .num_sge = 1 }, *bad_r = NULL;
	uint32_t max;

	cr_assert_not_null(cq);
	qp = make_qp(cq, IBV_QPT_RC, 4, 2);
	cr_assert_eq(qp->state, IBV_QPS_RESET);
	cr_assert_eq(ibv_post_send(qp, &swr, &bad_s), EINVAL, "send in RESET");
	cr_assert_eq(bad_s, &swr);
	cr_assert_eq(ibv_post_recv(qp, &rwr, &bad_r), EINVAL, "receive in RESET");
	cr_assert_eq(bad_r, &rwr);
	to_rts(qp);

	cr_assert_eq(ibv_query_qp(qp, &qa, IBV_QP_CAP, &qi), 0);
	max = qa.cap.max_recv_wr;
	cr_assert_geq(max, 4);
	cr_assert_eq(qa.cap.max_recv_sge, 2);
	rwr.num_sge = 3;
	cr_assert_eq(ibv_post_recv(qp, &rwr, &bad_r), EINVAL, "more SGEs than max_recv_sge");
	rwr.num_sge = 1;
	for (uint32_t i = 0; i < max; i++)
		cr_assert_eq(ibv_post_recv(qp, &rwr, &bad_r), 0);
	cr_assert_eq(ibv_post_recv(qp, &rwr, &bad_r), ENOMEM, "RQ full at max_recv_wr + 1");

	swr.num_sge = 4;
	cr_assert_eq(ibv_post_send(qp, &swr, &bad_s), EINVAL, "more SGEs than max_send_sge");
	swr.num_sge = 1;
	swr.opcode = IBV_WR_TSO;
	cr_assert_eq(ibv_post_send(qp, &swr, &bad_s), EINVAL, "opcode not supported");
	swr.opcode = IBV_WR_RDMA_READ;
	swr.send_flags |= IBV_SEND_INLINE;
	cr_assert_eq(ibv_post_send(qp, &swr, &bad_s), EINVAL, "a READ brings no payload to inline");
	swr.send_flags &= ~(unsigned int)IBV_SEND_INLINE;
	swr.opcode = IBV_WR_SEND;
	/* A chain: the WRs before the bad one are posted. */
	struct ibv_send_wr chain[3] = { swr, swr, swr };

	chain[0].next = &chain[1];
	chain[1].next = &chain[2];
	chain[2].num_sge = 9;
	cr_assert_eq(ibv_post_send(qp, chain, &bad_s), EINVAL);
	cr_assert_eq(bad_s, &chain[2]);
	cr_assert_eq(engine_complete_sends(qp, 10, NULL), 2, "two WQEs reached the ring");
	cr_assert_eq(ibv_query_qp(qp, &qa, IBV_QP_CAP, &qi), 0);
	for (uint32_t i = 0; i < qa.cap.max_send_wr; i++)
		cr_assert_eq(ibv_post_send(qp, &swr, &bad_s), 0);
	cr_assert_eq(ibv_post_send(qp, &swr, &bad_s), ENOMEM, "SQ full");

	/* Inline data is copied into the WQE. */
	engine_complete_sends(qp, 100, NULL);
	struct ibv_wc wc[64];

	while (ibv_poll_cq(cq, 64, wc) > 0)
		;
	memcpy(buf, "inline!", 8);
	swr.send_flags |= IBV_SEND_INLINE;
	cr_assert_eq(ibv_post_send(qp, &swr, &bad_s), 0);
	struct sq_wqe seen;

	cr_assert_eq(engine_complete_sends(qp, 1, &seen), 1);
	cr_assert_eq(seen.inline_len, 8);
	cr_assert_str_eq((char *)seen.inline_data, "inline!");

	cr_assert_eq(ibv_destroy_cq(cq), EBUSY, "the QP uses it");
	cr_assert_eq(ibv_destroy_qp(qp), 0);
	cr_assert_eq(ibv_dereg_mr(mr), 0);
	cr_assert_eq(ibv_destroy_cq(cq), 0);
}

/* The WQE fields the shim fills follow the opcode table: wr.rdma, wr.atomic, imm_data. */
Test(shim_verbs, send_wqe_fields_follow_the_opcode)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp *qp = make_qp(cq, IBV_QPT_RC, 8, 1);
	uint64_t buf[8];
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	struct ibv_sge sge = { (uintptr_t)buf, 8, mr->lkey };
	struct ibv_send_wr wr[3], *bad;
	struct sq_wqe seen[3];

	to_rts(qp);
	memset(wr, 0, sizeof(wr));
	for (int i = 0; i < 3; i++) {
		wr[i].sg_list = &sge;
		wr[i].num_sge = 1;
		wr[i].next = i < 2 ? &wr[i + 1] : NULL;
	}
	wr[0].opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr[0].imm_data = 0x12345678;
	wr[0].wr.rdma.remote_addr = 0x1000;
	wr[0].wr.rdma.rkey = 0x77;
	wr[1].opcode = IBV_WR_SEND_WITH_INV;
	wr[1].invalidate_rkey = 0xabcd;
	wr[2].opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr[2].wr.atomic.remote_addr = 0x2000;
	wr[2].wr.atomic.rkey = 0x88;
	wr[2].wr.atomic.compare_add = 5;
	cr_assert_eq(ibv_post_send(qp, wr, &bad), 0);
	cr_assert_eq(engine_complete_sends(qp, 3, seen), 3);
	cr_expect_eq(seen[0].imm_data, 0x12345678, "WITH_IMM: the immediate data");
	cr_expect_eq(seen[0].wr.rdma.remote_addr, 0x1000);
	cr_expect_eq(seen[0].wr.rdma.rkey, 0x77);
	cr_expect_eq(seen[1].imm_data, 0xabcd, "WITH_INV: the R_Key to invalidate");
	cr_expect_eq(seen[2].imm_data, 0, "FETCH_ADD carries none");
	cr_expect_eq(seen[2].wr.atomic.remote_addr, 0x2000);
	cr_expect_eq(seen[2].wr.atomic.rkey, 0x88);
	cr_expect_eq(seen[2].wr.atomic.compare_add, 5);
	cr_assert_eq(ibv_destroy_qp(qp), 0);
	cr_assert_eq(ibv_destroy_cq(cq), 0);
	cr_assert_eq(ibv_dereg_mr(mr), 0);
}

/* A small RC QP on @p cq with the ibv_wr_* builders of @p send_ops (4-deep queues, one SGE). */
static struct ibv_qp *make_qp_ex(struct ibv_cq *cq, uint64_t send_ops)
{
	struct ibv_qp_init_attr_ex ix = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC, .pd = pd,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = send_ops,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};

	return ibv_create_qp_ex(ctx, &ix);
}

/*
 * An RC WQE leaves its ring slot's AV line alone (wqe.h, SQ_WQE_AV_LINE):
 * only UD uses it, and a line the shim wrote would move to the worker's
 * core when the engine takes the WQE. A payload that fits the header line
 * (one SGE, up to WQE_HEAD_INLINE inline bytes, on an opcode whose fields
 * leave room: wr_kind_head_data()) goes there with WR_FLAG_HEAD_DATA, so
 * the WQE is one line; any other goes to the SGE line, without the flag.
 * Both ibv_post_send and the ibv_wr_* builders.
 */
Test(shim_verbs, rc_posts_write_only_the_lines_their_payload_needs)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp_init_attr_ex ix = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC, .pd = pd,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_SEND |
				  IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 2, .max_recv_sge = 1,
			 .max_inline_data = 32 },
	};
	struct ibv_qp *qp = ibv_create_qp_ex(ctx, &ix);
	uint64_t buf[4];
	char text[33] = "0123456789abcdefghijklmnopqrstuv";
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	struct ibv_sge sge[2] = { { (uintptr_t)buf, 8, mr->lkey }, { (uintptr_t)&buf[2], 8, mr->lkey } };
	struct ibv_sge in[2] = { { (uintptr_t)text, 8, 0 }, { (uintptr_t)text, 32, 0 } };
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(qp);
	static const struct {
		const char *what;
		int opcode, num_sge, inline_len; /* inline_len: 0 SGEs */
		bool head;
	} cases[] = {
		{ "WRITE, one SGE", IBV_WR_RDMA_WRITE, 1, 0, true },
		{ "WRITE, two SGEs", IBV_WR_RDMA_WRITE, 2, 0, false },
		{ "SEND, one SGE", IBV_WR_SEND, 1, 0, true },
		{ "SEND, 8 inline bytes", IBV_WR_SEND, 1, 8, true },
		{ "SEND, 32 inline bytes", IBV_WR_SEND, 1, 32, false },
		{ "FETCH_ADD, one SGE", IBV_WR_ATOMIC_FETCH_AND_ADD, 1, 0, false },
	};

	cr_assert_not_null(qp);
	to_rts(qp);
	struct spsc_ring *sq = fake.qp[(qp->qp_num - 0x11) % FAKE_MAX]->sq.ring;

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		for (int how = 0; how < 2; how++) {
			const char *api = how ? "ibv_wr_*" : "ibv_post_send";
			uint8_t *slot = spsc_ring_prod_slot(sq, 0);
			struct sq_wqe seen;
			int op = cases[c].opcode, len = cases[c].inline_len;

			memset(slot + 64 * SQ_WQE_AV_LINE, 0xee, 128); /* the AV and SGE lines */
			if (how == 0) {
				struct ibv_send_wr wr = {
					.wr_id = 1, .opcode = op, .num_sge = cases[c].num_sge,
					.sg_list = len ? &in[len == 32] : sge,
					.send_flags = len ? IBV_SEND_INLINE : 0,
				}, *bad;

				if (op == IBV_WR_RDMA_WRITE) {
					wr.wr.rdma.remote_addr = 0x1000;
					wr.wr.rdma.rkey = 0x77;
				} else if (op != IBV_WR_SEND) {
					wr.wr.atomic.remote_addr = 0x1000;
					wr.wr.atomic.rkey = 0x77;
				}
				cr_assert_eq(ibv_post_send(qp, &wr, &bad), 0, "%s %s", api, cases[c].what);
			} else {
				ibv_wr_start(x);
				x->wr_id = 1;
				if (op == IBV_WR_RDMA_WRITE)
					ibv_wr_rdma_write(x, 0x77, 0x1000);
				else if (op == IBV_WR_SEND)
					ibv_wr_send(x);
				else
					ibv_wr_atomic_fetch_add(x, 0x77, 0x1000, 1);
				if (len)
					ibv_wr_set_inline_data(x, text, (size_t)len);
				else
					ibv_wr_set_sge_list(x, (size_t)cases[c].num_sge, sge);
				cr_assert_eq(ibv_wr_complete(x), 0, "%s %s", api, cases[c].what);
			}
			for (int i = 0; i < 64; i++)
				cr_assert_eq(slot[64 * SQ_WQE_AV_LINE + i], 0xee,
					     "%s %s wrote byte %d of the AV line", api, cases[c].what, i);
			bool line2 = false;

			for (int i = 0; i < 64; i++)
				line2 |= slot[64 * SQ_WQE_SGE_LINE + i] != 0xee;
			cr_assert_eq(line2, !cases[c].head, "%s %s: SGE line %s", api, cases[c].what,
				     line2 ? "written" : "left alone");
			cr_assert_eq(engine_complete_sends(qp, 4, &seen), 1);
			cr_assert_eq((seen.send_flags & WR_FLAG_HEAD_DATA) != 0, cases[c].head,
				     "%s %s: WR_FLAG_HEAD_DATA", api, cases[c].what);
			if (op != IBV_WR_SEND)
				cr_expect_eq(op == IBV_WR_RDMA_WRITE ? seen.wr.rdma.rkey : seen.wr.atomic.rkey,
					     0x77, "%s %s: the header", api, cases[c].what);
			if (len) {
				cr_expect_eq(seen.inline_len, len);
				cr_expect_eq(memcmp(seen.inline_data, text, (size_t)len), 0,
					     "%s %s: the inline bytes", api, cases[c].what);
			} else {
				cr_expect_eq(seen.num_sge, cases[c].num_sge);
				for (int i = 0; i < cases[c].num_sge; i++)
					cr_expect(seen.sg_list[i].addr == sge[i].addr &&
						  seen.sg_list[i].length == 8 && seen.sg_list[i].lkey == mr->lkey,
						  "%s %s: SGE %d", api, cases[c].what, i);
			}
		}
	}
	struct ibv_wc wc[8];

	while (ibv_poll_cq(cq, 8, wc) > 0)
		;
	cr_assert_eq(ibv_destroy_qp(qp), 0);
	cr_assert_eq(ibv_destroy_cq(cq), 0);
	cr_assert_eq(ibv_dereg_mr(mr), 0);
}

/*
 * Send doorbells (ipc_shm.h): once the engine has marked a QP's SQ
 * SPSC_RING_WANT_BELL with bell b, ibv_post_send and ibv_wr_complete ring
 * bell b in the send CQ's control block after publishing; without the flag
 * they ring nothing. Played here as the engine would.
 */
Test(shim_verbs, posts_ring_the_send_cqs_bell_only_when_the_engine_asks)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp *qp = make_qp_ex(cq, IBV_QP_EX_WITH_SEND);
	uint64_t buf[4];
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	struct ibv_sge sge = { (uintptr_t)buf, 8, mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND },
			   *bad;

	cr_assert_not_null(qp);
	to_rts(qp);
	const struct ctl_qp_info *qi = fake.qp[(qp->qp_num - 0x11) % FAKE_MAX];
	const struct ctl_cq_info *ci = fake.cq[qi->send_cqn % FAKE_MAX];
	struct shm_bells *b = &ci->ctrl->bells;

	cr_assert_eq(ibv_post_send(qp, &wr, &bad), 0);
	cr_expect_eq(b->summary, 0, "a busy QP: no bell");
	cr_assert_eq(engine_complete_sends(qp, 4, NULL), 1);

	spsc_ring_want_bell(qi->sq.ring, 4096 + 130); /* the engine: idle, bell = its slot */
	cr_assert_eq(ibv_post_send(qp, &wr, &bad), 0);
	cr_expect_eq(b->summary, (uint64_t)1 << 2, "word 130 / 64 = 2 (bells are modulo 4096)");
	cr_expect_eq(b->word[2], (uint64_t)1 << (130 % 64));
	cr_assert_eq(engine_complete_sends(qp, 4, NULL), 1);
	b->summary = b->word[2] = 0; /* the engine took them; still idle */

	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(qp);

	ibv_wr_start(x);
	x->wr_id = 2;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, mr->lkey, (uintptr_t)buf, 8);
	cr_assert_eq(ibv_wr_complete(x), 0);
	cr_expect_eq(b->word[2], (uint64_t)1 << (130 % 64), "ibv_wr_complete rings too");
	cr_expect_eq(b->summary, (uint64_t)1 << 2);
	cr_assert_eq(engine_complete_sends(qp, 4, NULL), 1);

	spsc_ring_bell_off(qi->sq.ring); /* polled again */
	b->summary = b->word[2] = 0;
	cr_assert_eq(ibv_post_send(qp, &wr, &bad), 0);
	cr_expect_eq(b->summary, 0);
	cr_assert_eq(engine_complete_sends(qp, 4, NULL), 1);
	struct ibv_wc wc[8];

	while (ibv_poll_cq(cq, 8, wc) > 0)
		;
	cr_assert_eq(ibv_destroy_qp(qp), 0);
	cr_assert_eq(ibv_destroy_cq(cq), 0);
	cr_assert_eq(ibv_dereg_mr(mr), 0);
}

/*
 * Memory windows: ALLOC_MW/DEALLOC_MW in the daemon, the binds and
 * invalidations as WQEs (what the fake engine sees), and the daemon's side
 * of a bound window: its MR cannot be deregistered (EINVAL, as rxe), its
 * PD not deallocated (EBUSY). The engine's checks: test/engine test_mw.c.
 */
Test(shim_verbs, memory_windows)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp *qp = make_qp(cq, IBV_QPT_RC, 8, 1);
	static uint64_t buf[512];
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof(buf),
				       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	struct ibv_mw *mw1 = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	struct ibv_mw *mw2 = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	struct ibv_device_attr da;
	struct sq_wqe seen[4];

	cr_assert_not_null(mr);
	cr_assert_not_null(mw1, "alloc_mw: %s", strerror(errno));
	cr_assert_not_null(mw2);
	cr_assert_eq(ibv_query_device(ctx, &da), 0);
	cr_expect(da.device_cap_flags & IBV_DEVICE_MEM_WINDOW);
	cr_expect(da.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B);
	cr_expect_gt(da.max_mw, 0);
	cr_expect_eq(mw1->type, IBV_MW_TYPE_1);
	cr_expect(mw_key_is_mw(mw1->rkey) && mw_key_is_mw(mw2->rkey), "window keys are no MR keys");
	cr_expect(!mw_key_is_mw(mr->rkey));
	cr_expect_neq(mw1->rkey, mw2->rkey);
	to_rts(qp);

	/* ibv_bind_mw (type 1): a BIND_MW WQE with the next key */
	uint32_t old = mw1->rkey;
	struct ibv_mw_bind mb = {
		.wr_id = 7, .send_flags = IBV_SEND_SIGNALED,
		.bind_info = { .mr = mr, .addr = (uintptr_t)&buf[8], .length = 256,
			       .mw_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ },
	};
	cr_assert_eq(ibv_bind_mw(qp, mw1, &mb), 0);
	cr_expect_eq(mw1->rkey, ibv_inc_rkey(old), "the window's key is the bound one");
	mb.bind_info.mw_access_flags |= IBV_ACCESS_ZERO_BASED;
	cr_expect_eq(ibv_bind_mw(qp, mw1, &mb), EINVAL, "type 1 windows are not zero-based");
	cr_expect_eq(errno, EINVAL);
	mb.bind_info.mw_access_flags &= ~(unsigned int)IBV_ACCESS_ZERO_BASED;
	cr_expect_eq(ibv_bind_mw(qp, mw2, &mb), EINVAL, "ibv_bind_mw is for type 1 (verbs.h)");

	/* type 2 through ibv_post_send, then LOCAL_INV of its key */
	struct ibv_send_wr wr[2], *bad;
	memset(wr, 0, sizeof(wr));
	wr[0].opcode = IBV_WR_BIND_MW;
	wr[0].wr_id = 8;
	wr[0].bind_mw.mw = mw2;
	wr[0].bind_mw.rkey = ibv_inc_rkey(mw2->rkey);
	wr[0].bind_mw.bind_info = mb.bind_info;
	wr[0].next = &wr[1];
	wr[1].opcode = IBV_WR_LOCAL_INV;
	wr[1].invalidate_rkey = wr[0].bind_mw.rkey;
	cr_assert_eq(ibv_post_send(qp, wr, &bad), 0);
	wr[0].bind_mw.mw = NULL;
	wr[0].next = NULL;
	cr_expect_eq(ibv_post_send(qp, wr, &bad), EINVAL, "BIND_MW without a window");
	cr_assert_eq(engine_complete_sends(qp, 4, seen), 3);
	cr_expect_eq(seen[0].opcode, IBV_WR_BIND_MW);
	cr_expect_eq(seen[0].wr.bind.mw_rkey, old);
	cr_expect_eq(seen[0].wr.bind.rkey, mw1->rkey);
	cr_expect_eq(seen[0].wr.bind.mr_lkey, mr->lkey);
	cr_expect_eq(seen[0].wr.bind.addr, (uintptr_t)&buf[8]);
	cr_expect_eq(seen[0].wr.bind.length, 256);
	cr_expect_eq(seen[0].wr.bind.access, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	cr_expect_eq(seen[0].num_sge, 0);
	cr_expect_eq(seen[1].wr.bind.mw_rkey, mw2->rkey);
	cr_expect_eq(seen[1].wr.bind.rkey, wr[0].bind_mw.rkey);
	cr_expect_eq(seen[2].opcode, IBV_WR_LOCAL_INV);
	cr_expect_eq(seen[2].imm_data, wr[0].bind_mw.rkey);

	/* The daemon's table, as the engine leaves it after that bind. */
	struct mw_table *mws = ctl_mw_table(ctl);
	struct mr_table *mrs = mr_table_create(64);
	uint32_t pdi = (pd->handle & 0xfffffu) - 1;
	struct mw_bind_req b = {
		.mw_key = old, .new_key = mw1->rkey, .mr_key = mr->lkey,
		.access = IBV_ACCESS_REMOTE_WRITE, .pd = pdi, .qpn = qp->qp_num,
		.addr = (uintptr_t)&buf[8], .length = 256,
	};
	cr_assert_not_null(mws);
	cr_assert_eq(mr_reg_key(mrs, mr->lkey, pdi, (uintptr_t)buf, (uintptr_t)buf, sizeof(buf),
				IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND), 0);
	pthread_mutex_lock(&srv_lock);
	cr_assert_eq(mw_bind(mws, mrs, &b), 0);
	pthread_mutex_unlock(&srv_lock);
	cr_expect_eq(ibv_dereg_mr(mr), EINVAL, "not while a window is bound to it (rxe: EINVAL)");
	cr_expect_eq(errno, EINVAL);
	cr_expect_eq(ibv_dealloc_pd(pd), EBUSY, "its windows hold the PD");
	cr_assert_eq(ibv_dealloc_mw(mw1), 0);
	cr_expect_eq(mw_mr_bound(mws, mr->lkey), 0, "the dealloc unbound it");
	cr_assert_eq(ibv_dealloc_mw(mw2), 0);
	cr_assert_eq(ibv_destroy_qp(qp), 0);
	cr_assert_eq(ibv_dereg_mr(mr), 0);
	cr_assert_eq(ibv_destroy_cq(cq), 0);
	mr_table_destroy(mrs);
}

static int allocs_called;
static void *pd_alloc(struct ibv_pd *p, void *c, size_t size, size_t align, uint64_t type)
{
	(void)p; (void)c; (void)size; (void)align; (void)type;
	allocs_called++;
	return IBV_ALLOCATOR_USE_DEFAULT;
}
static void pd_free(struct ibv_pd *p, void *c, void *ptr, uint64_t type)
{
	(void)p; (void)c; (void)ptr; (void)type;
}

/*
 * Thread and parent domains: objects made with a parent domain are its
 * protection domain's in the daemon (a WRITE through such a QP into such
 * an MR), and the domains hold what they name.
 */
Test(shim_verbs, parent_and_thread_domains)
{
	struct ibv_td_init_attr ta = { 0 };
	struct ibv_td *td = ibv_alloc_td(ctx, &ta);
	struct ibv_parent_domain_init_attr pa = {
		.pd = pd, .td = td, .alloc = pd_alloc, .free = pd_free, .pd_context = &ta,
		.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
			     IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT,
	};
	struct ibv_pd *par;

	cr_assert_not_null(td, "alloc_td: %s", strerror(errno));
	ta.comp_mask = 1;
	cr_assert_null(ibv_alloc_td(ctx, &ta));
	cr_assert_eq(errno, EINVAL);
	par = ibv_alloc_parent_domain(ctx, &pa);
	cr_assert_not_null(par, "alloc_parent_domain: %s", strerror(errno));
	cr_expect_eq(par->handle, pd->handle, "it stands for its PD");

	/* refused: a parent domain's parent, unknown bits, an allocator without free */
	pa.pd = par;
	cr_expect_null(ibv_alloc_parent_domain(ctx, &pa));
	cr_expect_eq(errno, EINVAL);
	pa.pd = pd;
	pa.comp_mask = 1u << 5;
	cr_expect_null(ibv_alloc_parent_domain(ctx, &pa));
	cr_expect_eq(errno, EINVAL);
	pa.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS;
	pa.free = NULL;
	cr_expect_null(ibv_alloc_parent_domain(ctx, &pa));
	cr_expect_eq(errno, EINVAL);

	/* objects through the parent domain */
	struct ibv_cq_init_attr_ex cx = { .cqe = 16, .wc_flags = IBV_WC_STANDARD_FLAGS,
					  .comp_mask = IBV_CQ_INIT_ATTR_MASK_PD, .parent_domain = pd };
	cr_expect_null(ibv_create_cq_ex(ctx, &cx), "a CQ's domain must be a parent domain");
	cr_expect_eq(errno, EINVAL);
	cx.parent_domain = par;
	struct ibv_cq_ex *cq = ibv_create_cq_ex(ctx, &cx);
	cr_assert_not_null(cq, "create_cq_ex: %s", strerror(errno));
	uint64_t buf[8] = { 0 };
	struct ibv_mr *mr = ibv_reg_mr(par, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	cr_assert_not_null(mr, "reg_mr: %s", strerror(errno));
	cr_expect_eq(mr->pd, par);
	struct ibv_qp_init_attr ia = {
		.send_cq = ibv_cq_ex_to_cq(cq), .recv_cq = ibv_cq_ex_to_cq(cq),
		.qp_type = IBV_QPT_RC, .cap = { .max_send_wr = 4, .max_recv_wr = 4,
						.max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(par, &ia);
	cr_assert_not_null(qp, "create_qp: %s", strerror(errno));
	struct ibv_mw *mw = ibv_alloc_mw(par, IBV_MW_TYPE_2);
	cr_assert_not_null(mw);

	/* what they name stays while they live */
	cr_expect_eq(ibv_dealloc_pd(pd), EBUSY);
	cr_expect_eq(ibv_dealloc_td(td), EBUSY);
	cr_expect_eq(errno, EBUSY);
	cr_assert_eq(ibv_dealloc_mw(mw), 0);
	cr_assert_eq(ibv_destroy_qp(qp), 0);
	cr_assert_eq(ibv_dereg_mr(mr), 0);
	cr_assert_eq(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), 0);
	cr_assert_eq(ibv_dealloc_pd(par), 0, "frees the parent domain alone");
	cr_expect_eq(allocs_called, 0, "no buffer of ours comes from the application");
	cr_assert_eq(ibv_dealloc_td(td), 0);
}

Test(shim_verbs, completions_flow_through_the_rings)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp *qp = make_qp(cq, IBV_QPT_RC, 8, 1);
	uint64_t buf[8];
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	struct ibv_sge sge = { (uintptr_t)buf, 32, mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc[8];
	struct sq_wqe seen[3];

	to_rts(qp);
	wr.wr.rdma.remote_addr = 0x1000;
	wr.wr.rdma.rkey = 0x77;
	for (uint64_t i = 0; i < 3; i++) {
		wr.wr_id = 100 + i;
		cr_assert_eq(ibv_post_send(qp, &wr, &bad), 0);
	}
	cr_assert_eq(ibv_poll_cq(cq, 8, wc), 0, "nothing completed yet");
	cr_assert_eq(engine_complete_sends(qp, 3, seen), 3);
	cr_assert_eq(seen[0].opcode, IBV_WR_RDMA_WRITE);
	cr_assert_eq(seen[0].wr.rdma.rkey, 0x77);
	cr_assert_eq(seen[0].sg_list[0].lkey, mr->lkey);
	cr_assert_eq(ibv_poll_cq(cq, 2, wc), 2);
	cr_assert_eq(wc[0].wr_id, 100);
	cr_assert_eq(wc[1].wr_id, 101);
	cr_assert_eq(wc[0].qp_num, qp->qp_num);
	cr_assert_eq(wc[0].opcode, IBV_WC_RDMA_WRITE);
	cr_assert_eq(wc[0].byte_len, 32);
	cr_assert_eq(ibv_poll_cq(cq, 8, wc), 1);
	cr_assert_eq(wc[0].wr_id, 102);

	/* The new post-send API writes the same ring. */
	struct ibv_qp_init_attr_ex ix = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC, .pd = pd,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *q2 = ibv_create_qp_ex(ctx, &ix);
	struct ibv_qp_ex *x;

	cr_assert_not_null(q2);
	cr_assert_null(ibv_qp_to_qp_ex(qp), "only QPs created with send_ops_flags");
	x = ibv_qp_to_qp_ex(q2);
	cr_assert_not_null(x);
	to_rts(q2);
	ibv_wr_start(x);
	x->wr_id = 7;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, mr->lkey, (uintptr_t)buf, 16);
	x->wr_id = 8;
	ibv_wr_rdma_write(x, 0x99, 0x2000);
	ibv_wr_set_sge(x, mr->lkey, (uintptr_t)buf, 24);
	cr_assert_eq(ibv_wr_complete(x), 0);
	cr_assert_eq(engine_complete_sends(q2, 5, seen), 2);
	cr_assert_eq(seen[0].wr_id, 7);
	cr_assert_eq(seen[0].opcode, IBV_WR_SEND);
	cr_assert_eq(seen[1].wr.rdma.rkey, 0x99);
	cr_assert_eq(seen[1].sg_list[0].length, 24);

	/* ibv_cq_ex polling of what is left. */
	struct ibv_poll_cq_attr pa = { 0 };
	struct ibv_cq_ex *cx = (struct ibv_cq_ex *)cq;
	int n = 0;

	cr_assert_eq(ibv_start_poll(cx, &pa), 0);
	do {
		cr_assert_eq(cx->status, IBV_WC_SUCCESS);
		cr_assert_eq(cx->wr_id, (uint64_t)(7 + n));
		cr_assert_eq(ibv_wc_read_qp_num(cx), q2->qp_num);
		n++;
	} while (ibv_next_poll(cx) == 0);
	ibv_end_poll(cx);
	cr_assert_eq(n, 2);
	cr_assert_eq(ibv_start_poll(cx, &pa), ENOENT);

	/* RESET drops the QP's unpolled completions (pyverbs test_mr rereg restates QPs). */
	ibv_wr_start(x);
	x->wr_id = 9;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, mr->lkey, (uintptr_t)buf, 16);
	cr_assert_eq(ibv_wr_complete(x), 0);
	cr_assert_eq(engine_complete_sends(q2, 5, NULL), 1);

	/* ... and the bad flow: wrong state is EINVAL at wr_complete (pyverbs test_qpex). */
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };

	cr_assert_eq(ibv_modify_qp(q2, &a, IBV_QP_STATE), 0);
	cr_assert_eq(ibv_poll_cq(cq, 8, wc), 0, "RESET removed wr_id 9's completion");
	ibv_wr_start(x);
	ibv_wr_send(x);
	ibv_wr_set_sge(x, mr->lkey, (uintptr_t)buf, 16);
	cr_assert_eq(ibv_wr_complete(x), EINVAL);
	cr_assert_eq(engine_complete_sends(q2, 5, NULL), 0, "nothing was posted");

	cr_assert_eq(ibv_destroy_qp(q2), 0);
	cr_assert_eq(ibv_destroy_qp(qp), 0);
	cr_assert_eq(ibv_dereg_mr(mr), 0);
	cr_assert_eq(ibv_destroy_cq(cq), 0);
}

/*
 * sched_yield() of this thread, counted: the shim calls it through the PLT,
 * so the executable's definition is the one it reaches.
 */
static pthread_t yield_thread;
static unsigned int yields;

int sched_yield(void)
{
	if (pthread_equal(pthread_self(), yield_thread))
		yields++;
	return (int)syscall(SYS_sched_yield);
}

Test(shim_verbs, empty_polls_yield_the_cpu_after_a_while)
{
	struct ibv_wc wc[4];
	struct ibv_poll_cq_attr pa = { 0 };
	struct ibv_cq_init_attr_ex cx = { .cqe = 16, .wc_flags = IBV_WC_STANDARD_FLAGS };

	yield_thread = pthread_self();
	cr_assert_eq(unsetenv("ROCE_SHIM_POLL_YIELD"), 0);
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp *qp = make_qp(cq, IBV_QPT_RC, 8, 1);
	struct ibv_send_wr wr = { .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED }, *bad;

	to_rts(qp);
	yields = 0;
	for (int i = 0; i < 64; i++)
		cr_assert_eq(ibv_poll_cq(cq, 4, wc), 0);
	cr_expect_eq(yields, 0, "the first 64 empty polls spin");
	for (int i = 0; i < 10; i++)
		cr_assert_eq(ibv_poll_cq(cq, 4, wc), 0);
	cr_expect_eq(yields, 10, "then every empty poll yields");
	cr_assert_eq(ibv_post_send(qp, &wr, &bad), 0);
	cr_assert_eq(engine_complete_sends(qp, 1, NULL), 1);
	cr_assert_eq(ibv_poll_cq(cq, 4, wc), 1);
	yields = 0;
	for (int i = 0; i < 64; i++)
		cr_assert_eq(ibv_poll_cq(cq, 4, wc), 0);
	cr_expect_eq(yields, 0, "a completion restarts the count");

	/* ROCE_SHIM_POLL_YIELD=0: pure spin, for CQs created afterwards. */
	cr_assert_eq(setenv("ROCE_SHIM_POLL_YIELD", "0", 1), 0);
	struct ibv_cq *spin = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	cr_assert_eq(setenv("ROCE_SHIM_POLL_YIELD", "3", 1), 0);
	struct ibv_cq_ex *cx3 = ibv_create_cq_ex(ctx, &cx);
	cr_assert_eq(unsetenv("ROCE_SHIM_POLL_YIELD"), 0);
	cr_assert_not_null(spin);
	cr_assert_not_null(cx3);
	yields = 0;
	for (int i = 0; i < 200; i++)
		cr_assert_eq(ibv_poll_cq(spin, 4, wc), 0);
	cr_expect_eq(yields, 0, "ROCE_SHIM_POLL_YIELD=0 never yields");
	/* the count is the thread's: a completion on any CQ restarts it */
	cr_assert_eq(ibv_post_send(qp, &wr, &bad), 0);
	cr_assert_eq(engine_complete_sends(qp, 1, NULL), 1);
	cr_assert_eq(ibv_poll_cq(cq, 4, wc), 1);
	yields = 0;
	for (int i = 0; i < 5; i++)
		cr_assert_eq(ibv_start_poll(cx3, &pa), ENOENT);
	cr_expect_eq(yields, 2, "ROCE_SHIM_POLL_YIELD=3: start_poll yields from the 4th empty poll");

	yield_thread = (pthread_t)0;
	cr_assert_eq(ibv_destroy_cq(ibv_cq_ex_to_cq(cx3)), 0);
	cr_assert_eq(ibv_destroy_cq(spin), 0);
	cr_assert_eq(ibv_destroy_qp(qp), 0);
	cr_assert_eq(ibv_destroy_cq(cq), 0);
}

/*
 * The empty polls in a row are the thread's, on any CQ: a thread that polls
 * a quiet CQ between polls of a busy one is not idle (perftest's send_bw:
 * its send CQ, signaled every 100th WR, polled on every step beside its busy
 * receive CQ) and does not yield; once nothing completes anywhere, it does.
 */
Test(shim_verbs, a_thread_finding_completions_on_another_cq_does_not_yield)
{
	struct ibv_wc wc[4];

	yield_thread = pthread_self();
	cr_assert_eq(unsetenv("ROCE_SHIM_POLL_YIELD"), 0);
	struct ibv_cq *quiet = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_cq *busy = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp *qp = make_qp(busy, IBV_QPT_RC, 8, 1);
	struct ibv_send_wr wr = { .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED }, *bad;

	cr_assert_not_null(quiet);
	to_rts(qp);
	yields = 0;
	for (int i = 0; i < 200; i++) {
		cr_assert_eq(ibv_poll_cq(quiet, 4, wc), 0);
		if (i % 8 == 7) {
			cr_assert_eq(ibv_post_send(qp, &wr, &bad), 0);
			cr_assert_eq(engine_complete_sends(qp, 1, NULL), 1);
			cr_assert_eq(ibv_poll_cq(busy, 4, wc), 1);
		}
	}
	cr_expect_eq(yields, 0, "200 empty polls of a quiet CQ, a completion on the other every 8th: no yield");
	for (int i = 0; i < 70; i++)
		cr_assert_eq(ibv_poll_cq(quiet, 4, wc), 0);
	cr_expect_eq(yields, 6, "nothing anywhere: the 65th empty poll in a row and each after yield");

	yield_thread = (pthread_t)0;
	cr_assert_eq(ibv_destroy_qp(qp), 0);
	cr_assert_eq(ibv_destroy_cq(busy), 0);
	cr_assert_eq(ibv_destroy_cq(quiet), 0);
}

Test(shim_verbs, completion_channel_and_resize)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq *cq, *got;
	struct ibv_qp *qp;
	struct ibv_sge sge = { 0, 0, 0 };
	struct ibv_send_wr wr = { .wr_id = 5, .sg_list = &sge, .num_sge = 0, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct pollfd p;
	struct ibv_wc wc[4];
	void *cctx;
	int marker;

	cr_assert_not_null(ch);
	cq = ibv_create_cq(ctx, 4, &marker, ch, 0);
	cr_assert_not_null(cq);
	cr_assert_eq(cq->channel, ch);
	qp = make_qp(cq, IBV_QPT_RC, 4, 1);
	to_rts(qp);
	cr_assert_eq(ibv_destroy_comp_channel(ch), EBUSY, "a CQ uses it");

	cr_assert_eq(ibv_req_notify_cq(cq, 0), 0);
	cr_assert_eq(ibv_post_send(qp, &wr, &bad), 0);
	p = (struct pollfd){ .fd = ch->fd, .events = POLLIN };
	cr_assert_eq(poll(&p, 1, 0), 0, "no event before the completion");
	cr_assert_eq(engine_complete_sends(qp, 1, NULL), 1);
	cr_assert_eq(poll(&p, 1, 1000), 1, "the channel fd is readable");
	cr_assert_eq(ibv_get_cq_event(ch, &got, &cctx), 0);
	cr_assert_eq(got, cq);
	cr_assert_eq(cctx, &marker);
	cr_assert_eq(ibv_poll_cq(cq, 4, wc), 1);
	cr_assert_eq(wc[0].wr_id, 5);
	/* Not armed again: the next completion raises no event. */
	cr_assert_eq(ibv_post_send(qp, &wr, &bad), 0);
	cr_assert_eq(engine_complete_sends(qp, 1, NULL), 1);
	cr_assert_eq(poll(&p, 1, 0), 0);

	/* Resize keeps the unread completion. */
	cr_assert_eq(ibv_resize_cq(cq, 100), 0);
	cr_assert_geq(cq->cqe, 100);
	cr_assert_eq(ibv_poll_cq(cq, 4, wc), 1);
	cr_assert_eq(wc[0].wr_id, 5);

	ibv_ack_cq_events(cq, 1);
	cr_assert_eq(ibv_destroy_qp(qp), 0);
	cr_assert_eq(ibv_destroy_cq(cq), 0, "every event was acknowledged");
	cr_assert_eq(ibv_destroy_comp_channel(ch), 0);
}

/* A UD QP from RESET to RTS. */
static void ud_to_rts(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = 0x11111111 };

	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY), 0);
	a.qp_state = IBV_QPS_RTR;
	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
}

/* An AH to 198.18.0.2 (IPv4-mapped GID) from GID index 1. */
static void ud_ah_attr(struct ibv_ah_attr *aa)
{
	*aa = (struct ibv_ah_attr){ .is_global = 1, .port_num = 1,
				    .grh = { .sgid_index = 1, .hop_limit = 64 } };
	aa->grh.dgid.raw[10] = aa->grh.dgid.raw[11] = 0xff;
	aa->grh.dgid.raw[12] = 198;
	aa->grh.dgid.raw[13] = 18;
	aa->grh.dgid.raw[15] = 2;
}

Test(shim_verbs, srq_and_ud_address_handles)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	struct ibv_srq_init_attr si = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ibv_srq *srq = ibv_create_srq(pd, &si);
	struct ibv_srq_attr sa;
	struct ibv_recv_wr rwr = { .wr_id = 1, .num_sge = 1 }, *bad_r;
	struct ibv_sge sge = { 0, 4, 0 };
	uint32_t num;

	cr_assert_not_null(srq);
	cr_assert_geq(si.attr.max_wr, 4);
	cr_assert_eq(ibv_query_srq(srq, &sa), 0);
	cr_assert_eq(sa.max_wr, si.attr.max_wr);
	cr_assert_eq(ibv_get_srq_num(srq, &num), 0);
	cr_assert_neq(num, 0);
	rwr.sg_list = &sge;
	for (uint32_t i = 0; i < sa.max_wr; i++)
		cr_assert_eq(ibv_post_srq_recv(srq, &rwr, &bad_r), 0);
	cr_assert_eq(ibv_post_srq_recv(srq, &rwr, &bad_r), ENOMEM);
	rwr.num_sge = 2;
	cr_assert_eq(ibv_post_srq_recv(srq, &rwr, &bad_r), EINVAL);

	struct ibv_qp_init_attr ia = { .send_cq = cq, .recv_cq = cq, .srq = srq, .qp_type = IBV_QPT_UD,
				       .cap = { .max_send_wr = 4, .max_send_sge = 1 } };
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);

	cr_assert_not_null(qp);
	cr_assert_eq(ibv_post_recv(qp, &rwr, &bad_r), EINVAL, "the QP's receives go to the SRQ");
	cr_assert_eq(ibv_destroy_srq(srq), EBUSY);

	struct ibv_ah_attr aa;
	struct ibv_ah *ah;

	ud_ah_attr(&aa);
	ah = ibv_create_ah(pd, &aa);
	cr_assert_not_null(ah);
	aa.is_global = 0;
	cr_assert_null(ibv_create_ah(pd, &aa), "RoCE needs a GRH");
	cr_assert_eq(errno, EINVAL);

	ud_to_rts(qp);
	struct ibv_send_wr swr = { .wr_id = 9, .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad_s;
	struct sq_wqe seen;

	swr.wr.ud.ah = ah;
	swr.wr.ud.remote_qpn = 0x1234;
	swr.wr.ud.remote_qkey = 0x11111111;
	cr_assert_eq(ibv_post_send(qp, &swr, &bad_s), 0);
	swr.opcode = IBV_WR_RDMA_WRITE;
	cr_assert_eq(ibv_post_send(qp, &swr, &bad_s), EINVAL, "no RDMA on UD");
	swr.opcode = IBV_WR_SEND;
	swr.wr.ud.ah = NULL;
	cr_assert_eq(ibv_post_send(qp, &swr, &bad_s), EINVAL, "UD needs an AH");
	cr_assert_eq(engine_complete_sends(qp, 2, &seen), 1);
	cr_assert_eq(seen.wr.ud.remote_qpn, 0x1234);
	cr_assert_eq(seen.av.dgid[12], 198);
	cr_assert_eq(seen.av.dgid[15], 2);
	cr_assert_eq(seen.av.sgid[15], 1, "source GID filled from the table");
	cr_assert_eq(seen.av.smac[5], 0x01);
	cr_assert_eq(seen.av.dmac[5], 0x42, "the dataplane's resolution reaches the WQE");
	cr_assert_eq(seen.av.ipv6, 0);
	cr_assert_eq(seen.av.hop_limit, 64);

	cr_assert_eq(ibv_destroy_ah(ah), 0);
	cr_assert_eq(ibv_destroy_qp(qp), 0);
	cr_assert_eq(ibv_destroy_srq(srq), 0);
	cr_assert_eq(ibv_destroy_cq(cq), 0);
}

/* A RoCEv2/IPv4 receive buffer: 20 unused bytes, then the IPv4 header (IBA A17.4.5.1). */
/* ---- UD sends outlive ibv_destroy_ah / ibv_destroy_qp (drivers/verbs-shim/drain.c) ---- */

static struct ibv_qp *ud_qp_rts(struct ibv_cq *cq)
{
	struct ibv_qp *qp = make_qp(cq, IBV_QPT_UD, 8, 1);

	ud_to_rts(qp);
	return qp;
}

static struct ibv_ah *ud_ah(void)
{
	struct ibv_ah_attr aa;
	struct ibv_ah *ah;

	ud_ah_attr(&aa);
	ah = ibv_create_ah(pd, &aa);
	cr_assert_not_null(ah, "create_ah: %s", strerror(errno));
	return ah;
}

/* Post @p n unsignaled UD sends through @p ah, as rdma-core's mckey does, and watch the SQ. */
static void ud_post_unsignaled(struct ibv_qp *qp, struct ibv_ah *ah, unsigned int n)
{
	static char msg[16] = "mckey message";
	struct ibv_sge sge = { (uintptr_t)msg, sizeof(msg), 0 };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_INLINE }, *bad;

	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = 0xffffff;
	wr.wr.ud.remote_qkey = 0x11111111;
	ud_watch.sq = fake.qp[(qp->qp_num - 0x11) % FAKE_MAX]->sq.ring;
	ud_watch.at_ah_destroy = ud_watch.at_qp_destroy = -1;
	uint32_t before = spsc_ring_count(ud_watch.sq);

	for (unsigned int i = 0; i < n; i++)
		cr_assert_eq(ibv_post_send(qp, &wr, &bad), 0);
	cr_assert_eq(spsc_ring_count(ud_watch.sq), before + n);
}

/* A descheduled lcore: fetches (and completes) the watched SQ's WQEs 150 ms late. */
static void *late_lcore(void *arg)
{
	struct spsc_ring *sq = arg;

	usleep(150 * 1000);
	spsc_ring_release(sq, spsc_ring_count(sq));
	return NULL;
}

/*
 * Post @p n sends through @p ah, then destroy the QP (@p qp_goes) or the AH
 * while the lcore fetches late. @return the WQEs not yet fetched when the
 * daemon destroyed it.
 */
static int64_t unfetched_at_destroy(struct ibv_qp *qp, struct ibv_ah *ah, unsigned int n,
				    bool qp_goes)
{
	pthread_t t;

	ud_post_unsignaled(qp, ah, n);
	cr_assert_eq(pthread_create(&t, NULL, late_lcore, ud_watch.sq), 0);
	cr_assert_eq(qp_goes ? ibv_destroy_qp(qp) : ibv_destroy_ah(ah), 0);
	pthread_join(t, NULL);
	return qp_goes ? ud_watch.at_qp_destroy : ud_watch.at_ah_destroy;
}

static double ms_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

/*
 * CI's mcast_lab failure: mckey posts unsignaled UD sends and destroys the AH
 * and the QP at once; the daemon reads the AV from its AH table only when
 * its lcore fetches the WQE. The daemon must see DESTROY_AH (and DESTROY_QP)
 * only after the WQEs posted before it were fetched.
 */
Test(shim_verbs, ud_sends_are_fetched_before_their_ah_or_qp_goes)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	struct ibv_qp *qp = ud_qp_rts(cq);
	struct ibv_qp *idle = ud_qp_rts(cq);
	struct ibv_ah *ah = ud_ah();
	int64_t left;

	left = unfetched_at_destroy(qp, ah, 3, false);
	cr_assert_eq(left, 0, "%lld WQEs not yet fetched when the daemon destroyed their AH",
		     (long long)left);
	ah = ud_ah();
	left = unfetched_at_destroy(qp, ah, 2, true);
	cr_assert_eq(left, 0, "%lld WQEs not yet fetched when the daemon destroyed their QP",
		     (long long)left);

	/* Nothing pending: no wait at all. */
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_assert_eq(ibv_destroy_ah(ah), 0);
	cr_assert_eq(ibv_destroy_qp(idle), 0);
	cr_assert_lt(ms_since(&t0), 100.0, "a drained SQ costs no wait");
	cr_assert_eq(ibv_destroy_cq(cq), 0);
}

/* A dataplane that never fetches: the wait ends at ROCE_SHIM_UD_DRAIN_MS; a lost daemon at once. */
Test(shim_verbs, ud_drain_wait_is_bounded)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	struct ibv_qp *qp = ud_qp_rts(cq);
	struct ibv_ah *ah = ud_ah();
	struct timespec t0;
	double ms;

	setenv("ROCE_SHIM_UD_DRAIN_MS", "200", 1);
	ud_post_unsignaled(qp, ah, 1);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_assert_eq(ibv_destroy_ah(ah), 0, "a bounded wait, then the destroy as asked");
	ms = ms_since(&t0);
	unsetenv("ROCE_SHIM_UD_DRAIN_MS");
	cr_assert_geq(ms, 190.0, "waited %.1f ms", ms);
	cr_assert_lt(ms, 1000.0, "waited %.1f ms", ms);
	cr_assert_eq(ud_watch.at_ah_destroy, 1);

	/* The daemon goes away with a WQE pending: no wait for the default second. */
	ah = ud_ah();
	ud_post_unsignaled(qp, ah, 1);
	daemon_stop();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_assert_eq(ibv_destroy_ah(ah), 0);
	cr_assert_eq(ibv_destroy_qp(qp), 0);
	cr_assert_eq(ibv_destroy_cq(cq), 0);
	ms = ms_since(&t0);
	cr_assert_lt(ms, 300.0, "waited %.1f ms for a daemon that is gone", ms);
	cr_assert_eq(ibv_dealloc_pd(pd), 0);
	pd = NULL;
}

Test(shim_verbs, ah_from_a_received_ipv4_packet)
{
	uint8_t buf[40] = { 0 };
	uint8_t *ip = buf + 20;
	struct ibv_wc wc = { .wc_flags = IBV_WC_GRH, .sl = 3 };
	struct ibv_ah_attr aa;
	uint32_t sum = 0;
	struct ibv_ah *ah;

	ip[0] = 0x45;
	ip[1] = 0x68;               /* TOS */
	ip[8] = 61;                 /* TTL */
	ip[9] = 17;                 /* UDP */
	memcpy(ip + 12, "\xc6\x12\x00\x07", 4); /* from 198.18.0.7 */
	memcpy(ip + 16, "\xc6\x12\x00\x01", 4); /* to us, GID 1 */
	for (int i = 0; i < 20; i += 2)
		sum += (uint32_t)(ip[i] << 8 | ip[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	ip[10] = (uint8_t)(~sum >> 8);
	ip[11] = (uint8_t)~sum;

	cr_assert_eq(ibv_init_ah_from_wc(ctx, 1, &wc, (struct ibv_grh *)buf, &aa), 0);
	cr_assert_eq(aa.is_global, 1);
	cr_assert_eq(aa.grh.sgid_index, 1, "our IPv4-mapped RoCE v2 GID");
	cr_assert_eq(aa.grh.dgid.raw[10], 0xff);
	cr_assert_eq(aa.grh.dgid.raw[15], 7, "reply to the sender");
	cr_assert_eq(aa.grh.hop_limit, 61);
	cr_assert_eq(aa.grh.traffic_class, 0x68);
	cr_assert_eq(aa.sl, 3);
	ah = ibv_create_ah_from_wc(pd, &wc, (struct ibv_grh *)buf, 1);
	cr_assert_not_null(ah, "%s", strerror(errno));
	cr_assert_eq(ibv_destroy_ah(ah), 0);
	memcpy(ip + 16, "\xc6\x12\x00\x09", 4); /* not our address: no source GID */
	cr_assert_eq(ibv_init_ah_from_wc(ctx, 1, &wc, (struct ibv_grh *)buf, &aa), -1);
}

Test(shim_verbs, async_events_and_daemon_loss)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	struct ibv_qp *qp = make_qp(cq, IBV_QPT_RC, 4, 1);
	struct ibv_async_event ev;
	struct pollfd p = { .fd = ctx->async_fd, .events = POLLIN };

	to_rts(qp);
	pthread_mutex_lock(&srv_lock);
	cr_assert_eq(ctl_qp_event(ctl, qp->qp_num, CTL_QP_EV_FATAL, IBV_EVENT_QP_FATAL), 0);
	pthread_mutex_unlock(&srv_lock);
	cr_assert_eq(poll(&p, 1, 1000), 1, "async_fd is pollable");
	cr_assert_eq(ibv_get_async_event(ctx, &ev), 0);
	cr_assert_eq(ev.event_type, IBV_EVENT_QP_FATAL);
	cr_assert_eq(ev.element.qp, qp);
	ibv_ack_async_event(&ev);
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;

	cr_assert_eq(ibv_query_qp(qp, &qa, IBV_QP_STATE, &qi), 0);
	cr_assert_eq(qa.qp_state, IBV_QPS_ERR, "the semantics followed the dataplane");
	cr_assert_eq(ibv_destroy_qp(qp), 0, "the event was acknowledged");
	cr_assert_eq(ibv_destroy_cq(cq), 0);

	/* The daemon goes away: DEVICE_FATAL, then errors, never a crash or hang. */
	daemon_stop();
	cr_assert_eq(ibv_get_async_event(ctx, &ev), 0);
	cr_assert_eq(ev.event_type, IBV_EVENT_DEVICE_FATAL);
	ibv_ack_async_event(&ev);
	cr_assert_null(ibv_alloc_pd(ctx));
	cr_assert_eq(errno, EIO, "as a disassociated device");
	cr_assert_eq(ibv_dealloc_pd(pd), 0, "destroys still succeed and free the local part");
	pd = NULL;
}

static void *wait_cq_event(void *arg)
{
	static int rc;
	struct ibv_cq *cq;
	void *cq_context;

	rc = ibv_get_cq_event(arg, &cq, &cq_context);
	return &rc;
}

/*
 * The daemon goes away under an application that never reads async events:
 * a thread busy polling its CQ and one asleep in ibv_get_cq_event. The
 * completions they wait for will never come; both must get an error (EIO,
 * as the disassociated device's requests) within a bound, not spin or sleep
 * forever.
 */
Test(shim_verbs, daemon_loss_ends_cq_polls_and_cq_event_waits)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 4, NULL, ch, 0);
	struct ibv_cq_init_attr_ex ca = { .cqe = 4, .wc_flags = IBV_WC_STANDARD_FLAGS };
	struct ibv_cq_ex *cqx = ibv_create_cq_ex(ctx, &ca);
	struct ibv_poll_cq_attr pa = { .comp_mask = 0 };
	struct ibv_qp *qp;
	struct ibv_wc wc;
	struct timespec deadline;
	pthread_t waiter;
	void *ret = NULL;
	long polls;
	int n = 0, rc;

	cr_assert(ch != NULL && cq != NULL && cqx != NULL, "%s", strerror(errno));
	qp = make_qp(cq, IBV_QPT_RC, 4, 1);
	to_rts(qp);
	cr_assert_eq(ibv_req_notify_cq(cq, 0), 0);
	cr_assert_eq(pthread_create(&waiter, NULL, wait_cq_event, ch), 0);
	cr_assert_eq(ibv_poll_cq(cq, 1, &wc), 0, "empty while the daemon is there");
	cr_assert_eq(ibv_start_poll(cqx, &pa), ENOENT);
	usleep(100000); /* the waiter is asleep in ibv_get_cq_event */

	daemon_stop();
	for (polls = 0; polls < 1000000 && (n = ibv_poll_cq(cq, 1, &wc)) == 0; polls++)
		;
	cr_assert_lt(n, 0, "ibv_poll_cq still says empty after %ld polls", polls);
	cr_assert_eq(errno, EIO);
	cr_log_info("ibv_poll_cq failed %ld polls after the daemon went away", polls);
	for (polls = 0; polls < 1000000 && (rc = ibv_start_poll(cqx, &pa)) == ENOENT; polls++)
		;
	cr_assert_eq(rc, EIO, "ibv_start_poll: %d after %ld polls", rc, polls);
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += 5;
	rc = pthread_timedjoin_np(waiter, &ret, &deadline);
	if (rc != 0) {
		pthread_cancel(waiter); /* blocked in read(2), a cancellation point */
		pthread_join(waiter, NULL);
	}
	cr_assert_eq(rc, 0, "ibv_get_cq_event still asleep 5 s after the daemon went away");
	cr_assert_eq(*(int *)ret, -1, "ibv_get_cq_event without an event");
	cr_assert_eq(ibv_destroy_qp(qp), 0);
	cr_assert_eq(ibv_destroy_cq(cq), 0);
	cr_assert_eq(ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)), 0);
	cr_assert_eq(ibv_destroy_comp_channel(ch), 0);
}

/* Wait (bounded) until the server serves @p n connections; @return the objects left. */
static uint32_t server_settles(uint32_t n)
{
	uint32_t conns = UINT32_MAX, objs = 0;

	for (int i = 0; i < 400 && conns != n; i++) {
		pthread_mutex_lock(&srv_lock);
		conns = ctl_server_nconns(srv);
		objs = ctl_nobjects(ctl);
		pthread_mutex_unlock(&srv_lock);
		if (conns != n)
			usleep(5000);
	}
	cr_assert_eq(conns, n, "%u connections, want %u", conns, n);
	return objs;
}

/* Post one signalled send of @p len bytes at @p addr with @p lkey, play the engine, reap it. */
static void send_one(struct ibv_qp *qp, struct ibv_cq *cq, void *addr, uint32_t lkey)
{
	struct ibv_sge sge = { .addr = (uintptr_t)addr, .length = 64, .lkey = lkey };
	struct ibv_send_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct sq_wqe seen;
	struct ibv_wc wc;

	cr_assert_eq(ibv_post_send(qp, &wr, &bad), 0);
	cr_assert_eq(engine_complete_sends(qp, 1, &seen), 1);
	cr_assert_eq(seen.sg_list[0].lkey, lkey);
	cr_assert_eq(ibv_poll_cq(cq, 1, &wc), 1);
	cr_assert_eq(wc.status, IBV_WC_SUCCESS);
	cr_assert_eq(wc.wr_id, 7);
}

/*
 * ibv_import_device/pd/mr as pyverbs' test_shared_pd uses them: a second
 * context on a dup of cmd_fd sees the first one's PD and MR, builds its own
 * CQ/QP on them, gets its own async events; the objects outlive the first
 * context and go with the last.
 */
Test(shim_verbs, import_device_shares_pd_and_mr)
{
	long pg = sysconf(_SC_PAGESIZE);
	uint8_t *buf = mmap(NULL, (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, (size_t)pg, IBV_ACCESS_LOCAL_WRITE |
				       IBV_ACCESS_REMOTE_WRITE);
	struct ibv_context *ctx2, *ctx3;
	struct ibv_pd *pd2, *pdx;
	struct ibv_mr *mr2;
	struct ibv_cq *cq2;
	struct ibv_qp *qp2;
	struct ibv_async_event ev;
	struct pollfd p;
	int fd;

	cr_assert_not_null(mr);
	fd = dup(ctx->cmd_fd);
	ctx2 = ibv_import_device(fd);
	cr_assert_not_null(ctx2, "import: %s", strerror(errno));
	cr_assert_eq(ctx2->device, ctx->device);
	cr_assert_neq(ctx2->cmd_fd, ctx->cmd_fd, "a connection of its own");
	cr_assert_eq(server_settles(2), 2, "two connections, one set: pd and mr");

	pd2 = ibv_import_pd(ctx2, pd->handle);
	cr_assert_not_null(pd2, "import_pd: %s", strerror(errno));
	cr_assert_eq(pd2->handle, pd->handle);
	cr_assert_eq(pd2->context, ctx2);
	mr2 = ibv_import_mr(pd2, mr->handle);
	cr_assert_not_null(mr2, "import_mr: %s", strerror(errno));
	cr_assert_eq(mr2->lkey, mr->lkey);
	cr_assert_eq(mr2->rkey, mr->rkey);
	cr_assert_eq(mr2->length, mr->length);
	cr_assert_eq(mr2->handle, mr->handle);
	cr_assert_null(mr2->addr, "as rdma-core: an imported MR has no address");
	cr_assert_eq(mr2->pd, pd2);

	/* Bad handles: a wrong PD for the MR, a stale or made-up handle. */
	pdx = ibv_alloc_pd(ctx2);
	cr_assert_not_null(pdx, "ctx2 allocates in the shared set too");
	cr_assert_null(ibv_import_mr(pdx, mr->handle));
	cr_assert_eq(errno, EINVAL);
	cr_assert_null(ibv_import_mr(pd2, mr->handle ^ 0x100000));
	cr_assert_eq(errno, EINVAL);
	cr_assert_null(ibv_import_pd(ctx2, 0));
	cr_assert_eq(errno, EINVAL);
	struct ibv_pd *pdy = ibv_import_pd(ctx, pdx->handle);

	cr_assert_not_null(pdy, "and ctx sees ctx2's");
	ibv_unimport_pd(pdy);
	cr_assert_null(ibv_import_device(-1));
	cr_assert_eq(errno, EINVAL);
	int pfd[2];

	cr_assert_eq(pipe(pfd), 0);
	cr_assert_null(ibv_import_device(pfd[0]), "not a daemon connection");
	cr_assert_eq(errno, EINVAL);
	close(pfd[0]);
	close(pfd[1]);

	/* A SOCK_SEQPACKET peer that takes the request and never answers: ETIMEDOUT. */
	int sp[2];
	struct timespec t0, t1;
	char reqbuf[4096];

	cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sp), 0);
	cr_assert_eq(setenv("ROCE_SHIM_IMPORT_TIMEOUT_MS", "300", 1), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_assert_null(ibv_import_device(sp[0]), "a silent peer");
	cr_assert_eq(errno, ETIMEDOUT, "%s", strerror(errno));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	unsetenv("ROCE_SHIM_IMPORT_TIMEOUT_MS");
	double waited = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	cr_assert(waited >= 0.29 && waited < 5.0, "waited %.3f s", waited);
	cr_assert_gt(recv(sp[1], reqbuf, sizeof(reqbuf), MSG_DONTWAIT), 0, "the request reached the peer");
	close(sp[0]);
	close(sp[1]);

	/* A context that was not given the fd cannot name the group's objects. */
	ctx3 = ibv_open_device(ctx->device);
	cr_assert_not_null(ctx3);
	cr_assert_null(ibv_import_pd(ctx3, pd->handle));
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(ibv_close_device(ctx3), 0);

	/* ctx2's own CQ and QP in the shared PD, posting with the shared MR's key. */
	cq2 = ibv_create_cq(ctx2, 4, NULL, NULL, 0);
	cr_assert_not_null(cq2);
	struct ibv_qp_init_attr ia = {
		.send_cq = cq2, .recv_cq = cq2, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	qp2 = ibv_create_qp(pd2, &ia);
	cr_assert_not_null(qp2, "%s", strerror(errno));
	to_rts(qp2);
	cr_assert_eq(fake.qp[(qp2->qp_num - 0x11) % FAKE_MAX]->pd, fake.mr->pd, "one PD");
	send_one(qp2, cq2, buf, mr2->lkey);

	/* Its async events go to ctx2, not to ctx. */
	pthread_mutex_lock(&srv_lock);
	cr_assert_eq(ctl_qp_event(ctl, qp2->qp_num, CTL_QP_EV_FATAL, IBV_EVENT_QP_FATAL), 0);
	pthread_mutex_unlock(&srv_lock);
	p = (struct pollfd){ .fd = ctx2->async_fd, .events = POLLIN };
	cr_assert_eq(poll(&p, 1, 1000), 1);
	cr_assert_eq(ibv_get_async_event(ctx2, &ev), 0);
	cr_assert_eq(ev.element.qp, qp2);
	ibv_ack_async_event(&ev);
	p = (struct pollfd){ .fd = ctx->async_fd, .events = POLLIN };
	cr_assert_eq(poll(&p, 1, 0), 0);

	/* The first context goes (its user-space objects unimported): the set lives on. */
	ibv_unimport_mr(mr);
	ibv_unimport_pd(pd);
	pd = NULL;
	cr_assert_eq(ibv_close_device(ctx), 0);
	ctx = NULL;
	cr_assert_eq(server_settles(2), 5, "pd, pdx, mr, cq2, qp2 (ctx2 holds ctx's socket: fd)");
	cr_assert_eq(fake.nmr, 1);
	cr_assert_eq(ibv_dealloc_pd(pdx), 0);
	cr_assert_not_null(pdx = ibv_import_pd(ctx2, pd2->handle), "still there");
	ibv_unimport_pd(pdx);
	cr_assert_eq(ibv_destroy_qp(qp2), 0);
	cr_assert_eq(ibv_destroy_cq(cq2), 0);

	/* The last one goes: the rest (pd, mr) is destroyed. */
	ibv_unimport_mr(mr2);
	ibv_unimport_pd(pd2);
	cr_assert_eq(server_settles(2), 2);
	cr_assert_eq(ibv_close_device(ctx2), 0, "closes the imported fd too");
	cr_assert_eq(fcntl(fd, F_GETFD), -1);
	cr_assert_eq(server_settles(0), 0);
	cr_assert_eq(fake.nmr, 0);
	munmap(buf, (size_t)pg);
}

/* ---- the import protocol, spoken directly ---- */

/* A connection of our own that opened the device. */
static int raw_open(void)
{
	struct ipc_msg req, rsp;
	int rfds[IPC_MAX_FDS];
	int fd = ipc_connect(sock);

	cr_assert_geq(fd, 0);
	ipc_req_init(&req, IPC_OP_OPEN_DEVICE, 1);
	memset(&req.u.req_OPEN_DEVICE, 0, sizeof(req.u.req_OPEN_DEVICE));
	strcpy(req.u.req_OPEN_DEVICE.name, "dpdk_roce0");
	cr_assert_eq(ipc_call(fd, &req, NULL, 0, &rsp, rfds), 0);
	close(rfds[0]);
	return fd;
}

/* IMPORT_DEVICE on @p fd. @return the new connection's socket, or -status. */
static int raw_import(int fd)
{
	static uint32_t seq = 100;
	struct ipc_msg req, rsp;
	int rfds[IPC_MAX_FDS];
	int sv[2], rc;

	cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	ipc_req_init(&req, IPC_OP_IMPORT_DEVICE, ++seq);
	memset(&req.u.req_IMPORT_DEVICE, 0, sizeof(req.u.req_IMPORT_DEVICE));
	cr_assert_eq(ipc_send(fd, &req, &sv[1], 1), 0);
	close(sv[1]);
	rc = ipc_await(sv[0], IPC_OP_IMPORT_DEVICE, seq, &rsp, rfds);
	if (rc != 0) {
		close(sv[0]);
		return rc < 0 ? rc : -rc;
	}
	cr_assert_eq(rsp.hdr.nfds, 1, "the new connection's async-event socket");
	close(rfds[0]);
	return sv[0];
}

/* A one-handle request (ALLOC_PD answers a handle, IMPORT_PD a status). */
static int raw_pd(int fd, enum ipc_op op, uint32_t handle, uint32_t *out)
{
	struct ipc_msg req, rsp;
	int rc;

	ipc_req_init(&req, op, 7);
	memset(&req.u, 0, ipc_op_desc(op)->req_size);
	if (op == IPC_OP_IMPORT_PD)
		req.u.req_IMPORT_PD.handle = handle;
	rc = ipc_call(fd, &req, NULL, 0, &rsp, NULL);
	if (rc == 0 && out)
		*out = rsp.u.rsp_ALLOC_PD.handle;
	return rc;
}

/*
 * A group outlives its first connection's socket and goes with the last one;
 * an import needs a device and a socket; other groups see nothing.
 */
Test(shim_verbs, import_protocol_group_lifetime)
{
	int head = raw_open(), m1, m2, bare, pfd[2];
	struct ipc_msg req, rsp;
	uint32_t pdh;

	cr_assert_eq(raw_pd(head, IPC_OP_ALLOC_PD, 0, &pdh), 0);
	m1 = raw_import(head);
	cr_assert_geq(m1, 0, "import: %s", strerror(-m1));
	cr_assert_eq(raw_pd(m1, IPC_OP_IMPORT_PD, pdh, NULL), 0);
	cr_assert_null(ibv_import_pd(ctx, pdh), "another group's handle");
	cr_assert_eq(errno, EINVAL);

	close(head);
	cr_assert_eq(server_settles(2), 2, "ctx's pd and the group's, whose head socket closed");
	cr_assert_eq(raw_pd(m1, IPC_OP_IMPORT_PD, pdh, NULL), 0, "the group lives on");
	m2 = raw_import(m1);
	cr_assert_geq(m2, 0, "a member exports the group as well");
	close(m1);
	cr_assert_eq(server_settles(2), 2);
	cr_assert_eq(raw_pd(m2, IPC_OP_IMPORT_PD, pdh, NULL), 0);
	close(m2);
	cr_assert_eq(server_settles(1), 1, "the last member took the group's pd along");

	/* Bad imports: before OPEN_DEVICE, without a socket, with a pipe. */
	bare = ipc_connect(sock);
	cr_assert_geq(bare, 0);
	cr_assert_eq(raw_import(bare), -ENODEV, "answered on the new socket");
	ipc_req_init(&req, IPC_OP_IMPORT_DEVICE, 9);
	memset(&req.u.req_IMPORT_DEVICE, 0, sizeof(req.u.req_IMPORT_DEVICE));
	cr_assert_eq(ipc_call(bare, &req, NULL, 0, &rsp, NULL), EINVAL,
		     "no socket: answered on the connection itself");
	cr_assert_eq(pipe(pfd), 0);
	cr_assert_eq(ipc_call(bare, &req, &pfd[0], 1, &rsp, NULL), EINVAL);
	close(pfd[0]);
	close(pfd[1]);
	close(bare);
	cr_assert_eq(server_settles(1), 1);
}

/*
 * A forked child imports the parent's context again and again while the
 * parent keeps calling through the very socket the child's requests travel
 * on: no answer meant for one lands at the other.
 */
Test(shim_verbs, import_from_a_forked_child_beside_the_parent)
{
	struct ibv_port_attr pa;
	int status = -1;
	pid_t child = fork();

	cr_assert_geq(child, 0);
	if (child == 0) {
		for (int i = 0; i < 20; i++) {
			struct ibv_context *c2 = ibv_import_device(dup(ctx->cmd_fd));
			struct ibv_pd *p2 = c2 ? ibv_import_pd(c2, pd->handle) : NULL;

			if (p2 == NULL)
				_exit(1);
			ibv_unimport_pd(p2);
			if (ibv_close_device(c2) != 0)
				_exit(2);
		}
		_exit(0);
	}
	for (int i = 0; i < 200; i++)
		cr_assert_eq(ibv_query_port(ctx, 1, &pa), 0);
	cr_assert_eq(waitpid(child, &status, 0), child);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status);
	cr_assert_eq(server_settles(1), 1);
}

Test(shim_verbs, unsupported_verbs_say_eopnotsupp)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	struct ibv_qp_init_attr qi = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RAW_PACKET };

	/* (XRC exists now: ctl_xrc, pyverbs' XRC tests and integ's xsrq_pingpong cover it) */
	cr_assert_null(ibv_create_qp(pd, &qi));
	cr_assert_eq(errno, EOPNOTSUPP);
	cr_assert_null(ibv_reg_dmabuf_mr(pd, 0, 4096, 0, 3, IBV_ACCESS_LOCAL_WRITE));
	cr_assert_eq(errno, EOPNOTSUPP);
	/* device memory exists (dm.c): a handle of no DM of this group is EINVAL */
	cr_assert_null(ibv_import_dm(ctx, 1));
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(ibv_destroy_cq(cq), 0);
}

/*
 * ibv_create_flow reaches the daemon (the verbs_context op, the specs
 * turned into a rule): a server without raw packet QPs (limits.max_flows 0)
 * says EOPNOTSUPP; a malformed spec is refused in the shim (EINVAL).
 */
Test(shim_verbs, create_flow_reaches_the_daemon)
{
	struct {
		struct ibv_flow_attr attr;
		struct ibv_flow_spec_eth eth;
	} fa = { .attr = { .type = IBV_FLOW_ATTR_NORMAL, .size = sizeof(fa), .num_of_specs = 1,
			   .port = 1 },
		 .eth = { .type = IBV_FLOW_SPEC_ETH, .size = sizeof(struct ibv_flow_spec_eth) } };
	struct ibv_cq *cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	struct ibv_qp_init_attr qi = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_UD,
				       .cap = { .max_send_wr = 1, .max_recv_wr = 1,
						.max_send_sge = 1, .max_recv_sge = 1 } };
	struct ibv_qp *qp = ibv_create_qp(pd, &qi);

	cr_assert_not_null(qp);
	errno = 0;
	cr_assert_null(ibv_create_flow(qp, &fa.attr));
	cr_assert_eq(errno, EOPNOTSUPP, "errno %d", errno);
	fa.eth.size = 2; /* shorter than a spec header */
	errno = 0;
	cr_assert_null(ibv_create_flow(qp, &fa.attr));
	cr_assert_eq(errno, EINVAL, "errno %d", errno);
	cr_assert_eq(ibv_destroy_qp(qp), 0);
	cr_assert_eq(ibv_destroy_cq(cq), 0);
}

Test(shim_verbs_nodaemon, empty_list_without_daemon)
{
	struct ibv_device **list;
	int n = -1;

	setenv("ROCE_DAEMON_SOCKET", "/nonexistent/roce.sock", 1);
	list = ibv_get_device_list(&n);
	cr_assert_not_null(list, "an empty list, not NULL");
	cr_assert_eq(n, 0);
	cr_assert_null(list[0]);
	ibv_free_device_list(list);
	cr_assert_str_eq(ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR), "remote access error");
	cr_assert_str_eq(ibv_event_type_str(IBV_EVENT_DEVICE_FATAL), "local catastrophic error");
	cr_assert_eq(ibv_rate_to_mbps(IBV_RATE_100_GBPS), 103125);
	cr_assert_eq(mult_to_ibv_rate(4), IBV_RATE_10_GBPS);
}

/* ---- the errno rule (doc/verbs-shim.md "errno"): every failing verb sets errno ---- */

/* Exported by the shim as by rdma-core (IBVERBS_PRIVATE_34), not in the installed headers. */
int ibv_cmd_destroy_ah(struct ibv_ah *ah);

#define ERRNO_POISON 0x7ead /* no errno has this value: a verb that leaves errno alone shows it */

/* @p call (an int expression) must return @p ret and leave errno at @p err. */
#define EXPECT_FAIL(call, ret, err)                                                              \
	do {                                                                                     \
		errno = ERRNO_POISON;                                                            \
		int r_ = (call);                                                                 \
		int e_ = errno;                                                                  \
		cr_expect_eq(r_, (ret), "%s: returned %d, expected %d", #call, r_, (int)(ret));  \
		cr_expect_eq(e_, (err), "%s: errno %d (%s), expected %d (%s)", #call, e_,        \
			     e_ == ERRNO_POISON ? "untouched" : strerror(e_), (int)(err),        \
			     strerror(err));                                                     \
		checked++;                                                                       \
	} while (0)

/* @p call (a pointer expression) must return NULL and leave errno at @p err. */
#define EXPECT_NULL(call, err) EXPECT_FAIL((call) == NULL ? 0 : -12345, 0, err)

/* A successful verb leaves errno as it was. */
#define EXPECT_OK_KEEPS_ERRNO(call)                                                              \
	do {                                                                                     \
		errno = ERRNO_POISON;                                                            \
		cr_expect_eq((call), 0, "%s", #call);                                            \
		cr_expect_eq(errno, ERRNO_POISON, "%s succeeded but changed errno", #call);      \
	} while (0)

Test(shim_verbs, every_failing_verb_sets_errno)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq *ccq = ibv_create_cq(ctx, 8, NULL, ch, 0);
	struct ibv_srq_init_attr si = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ibv_srq *srq = ibv_create_srq(pd, &si);
	struct ibv_qp *qp = make_qp(cq, IBV_QPT_RC, 4, 1);
	struct ibv_qp_init_attr_ex qx = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
					  .cap = { 4, 4, 1, 1, 0 },
					  .comp_mask = IBV_QP_INIT_ATTR_PD |
						       IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
					  .pd = pd, .send_ops_flags = IBV_QP_EX_WITH_SEND };
	struct ibv_qp *qpx = ibv_create_qp_ex(ctx, &qx);
	static uint8_t buf[4096];
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	struct ibv_cq_init_attr_ex cx = { .cqe = 4, .wc_flags = IBV_WC_STANDARD_FLAGS };
	struct ibv_cq_ex *cqx = ibv_create_cq_ex(ctx, &cx);
	struct ibv_qp_attr a = { 0 };
	struct ibv_qp_init_attr qi;
	struct ibv_port_attr pa;
	struct ibv_device_attr_ex dx;
	struct ibv_gid_entry ge;
	struct ibv_srq_attr sa = { .max_wr = 4, .srq_limit = 1000 };
	struct ibv_sge sge = { (uintptr_t)buf, 8, 0 };
	struct ibv_send_wr swr = { .opcode = IBV_WR_SEND, .sg_list = &sge, .num_sge = 1 }, *bs;
	struct ibv_recv_wr rwr = { .sg_list = &sge, .num_sge = 1 }, *br;
	struct ibv_poll_cq_attr pca = { .comp_mask = 1 };
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1, .grh = { .sgid_index = 5 } };
	struct ibv_ece ece = { 0 };
	union ibv_gid gid;
	__be16 pkey;
	uint8_t mac6[6];
	uint16_t vid;
	unsigned int checked = 0;

	cr_assert(cq && ch && ccq && srq && qpx && mr && cqx, "%s", strerror(errno));
	aa.grh.dgid.raw[10] = aa.grh.dgid.raw[11] = 0xff;
	aa.grh.dgid.raw[12] = 198;
	aa.grh.dgid.raw[13] = 18;
	aa.grh.dgid.raw[15] = 2;

	/* Queries. */
	EXPECT_FAIL(ibv_query_port(ctx, 2, &pa), EINVAL, EINVAL);
	EXPECT_FAIL(ibv_query_gid(ctx, 1, 99, &gid), -1, EINVAL);
	EXPECT_FAIL(ibv_query_gid_ex(ctx, 1, 5, &ge, 0), ENODATA, ENODATA);
	EXPECT_FAIL(ibv_query_gid_ex(ctx, 3, 0, &ge, 0), EINVAL, EINVAL);
	EXPECT_FAIL((int)ibv_query_gid_table(ctx, &ge, 1, 0), -EINVAL, EINVAL);
	EXPECT_FAIL(ibv_query_pkey(ctx, 1, 1, &pkey), -1, EINVAL);
	EXPECT_FAIL(ibv_get_pkey_index(ctx, 1, htons(0x1234)), -1, EINVAL);

	/* QPs: a transition the table refuses, a query mask beyond the known bits. */
	a.qp_state = IBV_QPS_RTS;
	EXPECT_FAIL(ibv_modify_qp(qp, &a, IBV_QP_STATE), EINVAL, EINVAL);
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 9;
	EXPECT_FAIL(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					      IBV_QP_ACCESS_FLAGS), EINVAL, EINVAL);
	EXPECT_FAIL(ibv_query_ece(qp, &ece), EOPNOTSUPP, EOPNOTSUPP);
	EXPECT_FAIL(ibv_set_ece(qp, &ece), EOPNOTSUPP, EOPNOTSUPP);
	/* multicast on an RC QP (and a GID that is not a group): EINVAL, as Linux */
	EXPECT_FAIL(ibv_attach_mcast(qp, &gid, 0), EINVAL, EINVAL);
	EXPECT_FAIL(ibv_detach_mcast(qp, &gid, 0), EINVAL, EINVAL);

	/* Posting (rxe returns the value without a system call; we set errno too). */
	EXPECT_FAIL(ibv_post_send(qp, &swr, &bs), EINVAL, EINVAL);
	EXPECT_FAIL(ibv_post_recv(qp, &rwr, &br), EINVAL, EINVAL);
	rwr.num_sge = 2;
	EXPECT_FAIL(ibv_post_srq_recv(srq, &rwr, &br), EINVAL, EINVAL);
	rwr.num_sge = 1;
	ibv_wr_start(ibv_qp_to_qp_ex(qpx));
	ibv_wr_send(ibv_qp_to_qp_ex(qpx));
	ibv_wr_set_sge(ibv_qp_to_qp_ex(qpx), mr->lkey, (uintptr_t)buf, 8);
	EXPECT_FAIL(ibv_wr_complete(ibv_qp_to_qp_ex(qpx)), EINVAL, EINVAL);
	EXPECT_FAIL(ibv_start_poll(cqx, &pca), EINVAL, EINVAL);

	/* SRQs, CQs, channels, PDs, MRs, AHs. */
	EXPECT_FAIL(ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT), EINVAL, EINVAL);
	EXPECT_FAIL(ibv_modify_srq(srq, &sa, IBV_SRQ_MAX_WR), EOPNOTSUPP, EOPNOTSUPP);
	EXPECT_FAIL(ibv_resize_cq(cq, 0), EINVAL, EINVAL);
	EXPECT_FAIL(ibv_destroy_cq(cq), EBUSY, EBUSY);
	EXPECT_OK_KEEPS_ERRNO(ibv_destroy_srq(srq));
	EXPECT_FAIL(ibv_destroy_comp_channel(ch), EBUSY, EBUSY);
	EXPECT_FAIL(ibv_dealloc_pd(pd), EBUSY, EBUSY);
	EXPECT_FAIL(ibv_rereg_mr(mr, 0, NULL, NULL, 0, 0), IBV_REREG_MR_ERR_INPUT, EINVAL);
	EXPECT_FAIL(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, 1 << 30),
		    IBV_REREG_MR_ERR_CMD, EINVAL);
	EXPECT_FAIL(ibv_resolve_eth_l2_from_gid(ctx, &aa, mac6, &vid), EOPNOTSUPP, EOPNOTSUPP);
	EXPECT_FAIL(ibv_cmd_destroy_ah(NULL), EOPNOTSUPP, EOPNOTSUPP);

	/* Pointer verbs: NULL and errno. */
	EXPECT_NULL(ibv_create_ah(pd, &aa), ENODATA); /* an empty GID slot, as Linux */
	aa.grh.sgid_index = 200;
	EXPECT_NULL(ibv_create_ah(pd, &aa), EINVAL); /* beyond the table */
	EXPECT_NULL(ibv_create_cq(ctx, -1, NULL, NULL, 0), EINVAL);
	EXPECT_NULL(ibv_reg_mr(pd, buf, sizeof(buf), 1 << 30), EINVAL);
	EXPECT_NULL(ibv_alloc_mw(pd, (enum ibv_mw_type)3), EINVAL); /* no such type, as rxe */
	EXPECT_NULL(ibv_alloc_parent_domain(ctx, &(struct ibv_parent_domain_init_attr){ 0 }), EINVAL);
	EXPECT_NULL(ibv_alloc_td(ctx, &(struct ibv_td_init_attr){ .comp_mask = 2 }), EINVAL);

	/* Success leaves errno alone. */
	EXPECT_OK_KEEPS_ERRNO(ibv_query_port(ctx, 1, &pa));
	EXPECT_OK_KEEPS_ERRNO(ibv_query_qp(qp, &a, IBV_QP_STATE, &qi));

	/* The daemon gone: every request fails with EIO, and says so in errno. */
	cr_assert_eq(ibv_destroy_cq((struct ibv_cq *)cqx), 0);
	daemon_stop();
	EXPECT_FAIL(ibv_query_port(ctx, 1, &pa), EIO, EIO);
	EXPECT_FAIL(ibv_query_device_ex(ctx, NULL, &dx), EIO, EIO);
	EXPECT_FAIL(ibv_query_gid_ex(ctx, 1, 0, &ge, 0), EIO, EIO);
	EXPECT_FAIL(ibv_query_gid(ctx, 1, 0, &gid), -1, EIO);
	EXPECT_FAIL(ibv_modify_qp(qp, &a, IBV_QP_STATE), EIO, EIO);
	EXPECT_FAIL(ibv_query_qp(qp, &a, IBV_QP_STATE, &qi), EIO, EIO);
	EXPECT_NULL(ibv_create_srq(pd, &si), EIO);
	EXPECT_FAIL(ibv_resize_cq(cq, 16), EIO, EIO);
	EXPECT_FAIL(ibv_poll_cq(cq, 1, &(struct ibv_wc){ 0 }), -1, EIO);
	EXPECT_NULL(ibv_alloc_pd(ctx), EIO);
	EXPECT_NULL(ibv_alloc_mw(pd, IBV_MW_TYPE_2), EIO);
	EXPECT_NULL(ibv_create_cq(ctx, 4, NULL, NULL, 0), EIO);
	EXPECT_NULL(ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE), EIO);
	cr_expect_geq(checked, 40u);
	/* Destroys succeed on a disassociated device and free the local part. */
	cr_assert_eq(ibv_destroy_qp(qpx), 0);
	cr_assert_eq(ibv_destroy_qp(qp), 0);
	cr_assert_eq(ibv_dereg_mr(mr), 0);
	cr_assert_eq(ibv_destroy_cq(ccq), 0);
	cr_assert_eq(ibv_destroy_comp_channel(ch), 0);
	cr_assert_eq(ibv_destroy_cq(cq), 0);
	cr_assert_eq(ibv_dealloc_pd(pd), 0);
	pd = NULL;
}

/*
 * Device memory verbs that fail, with the errno rdma-core's mlx5 provider
 * and the kernel give: alloc (comp_mask, length 0 or beyond max_dm_size,
 * alignment: EINVAL; the daemon's cap reached: ENOMEM), copies (outside:
 * EFAULT, unaligned: EINVAL, returned and in errno), MRs (not zero-based,
 * outside the DM, bad access: EINVAL; FLUSH_PERSISTENT without the
 * capability: EOPNOTSUPP; 0 bytes are fine), free (an MR in it: EBUSY;
 * imported: EINVAL),
 * import (no such DM: EINVAL), and EIO once the daemon is gone.
 */
Test(shim_verbs, device_memory_verbs_set_errno)
{
	struct ibv_alloc_dm_attr da = { .length = 4096 };
	struct ibv_dm *dm = ibv_alloc_dm(ctx, &da), *big[4], *imp;
	struct ibv_device_attr_ex dx;
	uint8_t buf[16] = { 1, 2, 3, 4 };
	unsigned int checked = 0;
	struct ibv_mr *mr;
	const unsigned int zb = IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE;

	cr_assert_not_null(dm, "alloc_dm: %s", strerror(errno));
	cr_assert_eq(ibv_query_device_ex(ctx, NULL, &dx), 0);
	cr_assert_eq(dx.max_dm_size, DM_SIZE);

	/* ibv_alloc_dm */
	EXPECT_NULL(ibv_alloc_dm(ctx, &(struct ibv_alloc_dm_attr){ .length = DM_SIZE + 1 }), EINVAL);
	EXPECT_NULL(ibv_alloc_dm(ctx, &(struct ibv_alloc_dm_attr){ .length = 64, .comp_mask = 1 }),
		    EINVAL);
	EXPECT_NULL(ibv_alloc_dm(ctx, &(struct ibv_alloc_dm_attr){ .length = 0 }), EINVAL);
	EXPECT_NULL(ibv_alloc_dm(ctx, &(struct ibv_alloc_dm_attr){ .length = 64, .log_align_req = 40 }),
		    EINVAL);
	for (int i = 0; i < 3; i++) {
		big[i] = ibv_alloc_dm(ctx, &(struct ibv_alloc_dm_attr){ .length = DM_SIZE });
		cr_assert_not_null(big[i], "alloc_dm %d: %s", i, strerror(errno));
	}
	/* 3 x 64 KiB and the 4 KiB one: the next 64 KiB passes the 256 KiB cap */
	EXPECT_NULL(big[3] = ibv_alloc_dm(ctx, &(struct ibv_alloc_dm_attr){ .length = DM_SIZE }),
		    ENOMEM);
	for (int i = 0; i < 3; i++)
		EXPECT_OK_KEEPS_ERRNO(ibv_free_dm(big[i]));

	/* ibv_memcpy_to_dm / ibv_memcpy_from_dm */
	EXPECT_FAIL(ibv_memcpy_to_dm(dm, 4096, buf, 4), EFAULT, EFAULT);
	EXPECT_FAIL(ibv_memcpy_from_dm(buf, dm, 4092, 8), EFAULT, EFAULT);
	EXPECT_FAIL(ibv_memcpy_to_dm(dm, 2, buf, 4), EINVAL, EINVAL);
	EXPECT_FAIL(ibv_memcpy_from_dm(buf, dm, 0, 3), EINVAL, EINVAL);
	EXPECT_OK_KEEPS_ERRNO(ibv_memcpy_to_dm(dm, 4088, buf, 8));

	/* ibv_reg_dm_mr */
	EXPECT_NULL(ibv_reg_dm_mr(pd, dm, 0, 64, IBV_ACCESS_LOCAL_WRITE), EINVAL);
	EXPECT_NULL(ibv_reg_dm_mr(pd, dm, 0, 4097, zb), EINVAL);
	EXPECT_NULL(ibv_reg_dm_mr(pd, dm, 4100, 4, zb), EINVAL);
	EXPECT_NULL(ibv_reg_dm_mr(pd, dm, 0, 64, IBV_ACCESS_ZERO_BASED | IBV_ACCESS_REMOTE_WRITE),
		    EINVAL); /* remote write without local write (IBA section 10.6.3, item 1) */
	EXPECT_NULL(ibv_reg_dm_mr(pd, dm, 0, 64, zb | (1u << 30)), EINVAL);
	EXPECT_NULL(ibv_reg_dm_mr(pd, dm, 0, 64, zb | QP_ACCESS_FLUSH_PERSISTENT), EOPNOTSUPP);
	/* 0 bytes: allowed, as ib_uverbs_reg_dm_mr() allows them */
	mr = ibv_reg_dm_mr(pd, dm, 4096, 0, zb);
	cr_assert_not_null(mr, "reg_dm_mr of 0 bytes: %s", strerror(errno));
	cr_assert_eq(ibv_dereg_mr(mr), 0);
	mr = ibv_reg_dm_mr(pd, dm, 64, 128, zb | IBV_ACCESS_REMOTE_READ | QP_ACCESS_FLUSH_GLOBAL);
	cr_assert_not_null(mr, "reg_dm_mr: %s", strerror(errno));
	cr_assert_null(mr->addr, "zero-based");

	/* ibv_free_dm, ibv_import_dm */
	EXPECT_FAIL(ibv_free_dm(dm), EBUSY, EBUSY);
	EXPECT_NULL(ibv_import_dm(ctx, dm->handle ^ 0x100000), EINVAL);
	imp = ibv_import_dm(ctx, dm->handle);
	cr_assert_not_null(imp, "import_dm: %s", strerror(errno));
	EXPECT_FAIL(ibv_free_dm(imp), EINVAL, EINVAL); /* ibv_unimport_dm's */
	cr_assert_eq(ibv_memcpy_from_dm(buf + 8, imp, 4088, 8), 0);
	cr_assert_eq(memcmp(buf + 8, buf, 8), 0, "the same memory");
	ibv_unimport_dm(imp);
	cr_assert_eq(ibv_dereg_mr(mr), 0);

	/* the daemon gone: EIO; the free of a DM then frees the local part */
	daemon_stop();
	EXPECT_NULL(ibv_alloc_dm(ctx, &da), EIO);
	EXPECT_NULL(ibv_reg_dm_mr(pd, dm, 0, 64, zb), EIO);
	EXPECT_OK_KEEPS_ERRNO(ibv_free_dm(dm));
	cr_expect_eq(checked, 20u);
	cr_assert_eq(ibv_dealloc_pd(pd), 0);
	pd = NULL;
}

/*
 * Wait for the @p n forked children @p kids within @p ms in all: @return
 * how many exited with status 0. The ones still running then are killed
 * (a child stuck on an answer that never comes) and reaped.
 */
static int wait_children(pid_t *kids, int n, int ms)
{
	int ok = 0, left = n, status;

	for (int t = 0; t < ms / 10 && left > 0; t++) {
		for (int k = 0; k < n; k++) {
			if (kids[k] > 0 && waitpid(kids[k], &status, WNOHANG) == kids[k]) {
				ok += WIFEXITED(status) && WEXITSTATUS(status) == 0;
				kids[k] = 0;
				left--;
			}
		}
		usleep(10000);
	}
	for (int k = 0; k < n; k++) {
		if (kids[k] > 0) {
			kill(kids[k], SIGKILL);
			waitpid(kids[k], &status, 0);
		}
	}
	return ok;
}

/*
 * Forked children calling through their parent's context, as pyverbs'
 * test_multi_process_alloc_dm (five children allocating device memory at
 * once): each child's answers reach that child. On the one shared socket
 * every process took whichever answer came first and dropped the others'
 * as stale, and their callers waited forever; now a child's first request
 * opens a connection of its own in the context's group.
 */
Test(shim_verbs, forked_children_call_through_the_parents_context)
{
	enum { CHILDREN = 4, ROUNDS = 25 };
	struct ibv_port_attr pa;
	pid_t kids[CHILDREN];

	for (int k = 0; k < CHILDREN; k++) {
		kids[k] = fork();
		cr_assert_geq(kids[k], 0);
		if (kids[k] != 0)
			continue;
		for (int i = 0; i < ROUNDS; i++) {
			struct ibv_dm *dm = ibv_alloc_dm(ctx, &(struct ibv_alloc_dm_attr){ .length = 4096 });
			struct ibv_pd *p = ibv_alloc_pd(ctx);

			if (dm == NULL || p == NULL)
				_exit(1);
			if (ibv_dealloc_pd(p) != 0 || ibv_free_dm(dm) != 0)
				_exit(2);
		}
		_exit(0);
	}
	/* (the parent's calls beside them: import_from_a_forked_child_beside_the_parent;
	 * here it waits first, so that without the fix the test fails, bounded) */
	cr_assert_eq(wait_children(kids, CHILDREN, 10000), CHILDREN, "children that succeeded");
	for (int i = 0; i < 20; i++)
		cr_assert_eq(ibv_query_port(ctx, 1, &pa), 0);
	/* the children's connections went with them; their objects too */
	cr_assert_eq(server_settles(1), 1, "the parent's PD only");
}

/* Read the next async event within a second (the daemon thread raises it). */
static bool next_async_event(struct ibv_async_event *ev)
{
	struct pollfd p = { .fd = ctx->async_fd, .events = POLLIN };

	if (poll(&p, 1, 1000) != 1)
		return false;
	return ibv_get_async_event(ctx, ev) == 0;
}

/* What the rxe-peer oracle (Linux rxe) showed and the shim used to answer otherwise. */
Test(shim_verbs, answers_as_the_linux_oracle)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	struct ibv_qp *qp = make_qp(cq, IBV_QPT_RC, 4, 1);
	struct ibv_qp *qp2 = make_qp(cq, IBV_QPT_RC, 4, 1);
	struct ibv_qp_attr a, q;
	struct ibv_qp_init_attr qi;
	struct ibv_async_event ev;

	/* SQ_DRAINED after every RTS -> SQD, asked for or not (rxe: 10 of 10). */
	to_rts(qp);
	for (int notify = 0; notify < 2; notify++) {
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_SQD;
		a.en_sqd_async_notify = 1;
		cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE |
					   (notify ? IBV_QP_EN_SQD_ASYNC_NOTIFY : 0)), 0);
		cr_assert(next_async_event(&ev), "no SQ_DRAINED (notify %d)", notify);
		cr_expect_eq(ev.event_type, IBV_EVENT_SQ_DRAINED);
		cr_expect_eq(ev.element.qp, qp);
		ibv_ack_async_event(&ev);
		cr_assert_eq(ibv_query_qp(qp, &q, IBV_QP_STATE, &qi), 0);
		cr_expect_eq(q.sq_draining, 0);
		a.qp_state = IBV_QPS_RTS;
		cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	}

	/* ibv_query_qp leaves en_sqd_async_notify and rate_limit as they were. */
	memset(&q, 0xff, sizeof(q));
	cr_assert_eq(ibv_query_qp(qp, &q, IBV_QP_STATE, &qi), 0);
	cr_expect_eq(q.en_sqd_async_notify, 0xff);
	cr_expect_eq(q.rate_limit, 0xffffffffu);
	cr_expect_eq(q.qp_state, IBV_QPS_RTS);
	cr_expect_eq(q.sq_psn, 1, "the other fields are written");
	/* cur_qp_state: RESET until a CUR_STATE call, then that call's state. */
	cr_expect_eq(q.cur_qp_state, IBV_QPS_RESET);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.cur_qp_state = IBV_QPS_RTS;
	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_CUR_STATE), 0);
	cr_assert_eq(ibv_query_qp(qp, &q, 0, &qi), 0);
	cr_expect_eq(q.cur_qp_state, IBV_QPS_RTS);
	/* Only a query with IBV_QP_STATE refreshes libibverbs's cached state. */
	qp->state = IBV_QPS_SQD;
	cr_assert_eq(ibv_query_qp(qp, &q, IBV_QP_TIMEOUT, &qi), 0);
	cr_expect_eq(qp->state, IBV_QPS_SQD);
	cr_assert_eq(ibv_query_qp(qp, &q, IBV_QP_STATE, &qi), 0);
	cr_expect_eq(qp->state, IBV_QPS_RTS);

	/* An sgid_index naming an empty GID slot: ENODATA, as Linux. */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	cr_assert_eq(ibv_modify_qp(qp2, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					    IBV_QP_ACCESS_FLAGS), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = qp->qp_num;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.sgid_index = 5;
	a.ah_attr.grh.hop_limit = 64;
	cr_assert_eq(ibv_query_gid(ctx, 1, 1, &a.ah_attr.grh.dgid), 0);
	errno = 0;
	cr_expect_eq(ibv_modify_qp(qp2, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					    IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER), ENODATA);
	cr_expect_eq(errno, ENODATA);
	cr_expect_eq(qp2->state, IBV_QPS_INIT);

	cr_assert_eq(ibv_destroy_qp(qp2), 0);
	cr_assert_eq(ibv_destroy_qp(qp), 0);
	cr_assert_eq(ibv_destroy_cq(cq), 0);
}

/* ---- the rxe-peer oracle's modify probes through the shim: errno on each ---- */

/* Read and acknowledge every async event already queued; @return SQ_DRAINED events of @p qp. */
static unsigned int drain_async_events(struct ibv_qp *qp)
{
	struct pollfd p = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;
	unsigned int drained = 0;

	while (poll(&p, 1, 0) == 1 && ibv_get_async_event(ctx, &ev) == 0) {
		drained += ev.event_type == IBV_EVENT_SQ_DRAINED && ev.element.qp == qp;
		ibv_ack_async_event(&ev);
	}
	return drained;
}

/* fx_bring_to() through the shim: the oracle's minimal path to @p state. */
static int shim_bring_to(struct ibv_qp *qp, int state)
{
	static const enum ibv_qp_state up[] = { IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS,
						IBV_QPS_SQD };
	const enum ibv_qp_state *path = up;
	static const enum ibv_qp_state to_err[] = { IBV_QPS_INIT, IBV_QPS_ERR };
	unsigned int n = 0;

	if (state == IBV_QPS_ERR) {
		path = to_err;
		n = 2;
	} else {
		while (n < 4 && (int)up[n] != state)
			n++;
		n = state == IBV_QPS_RESET ? 0 : n + 1;
	}
	for (unsigned int i = 0; i < n; i++) {
		struct ibv_qp_attr a;
		int from = qp->state, rc;

		fx_setup_attr(&a, from);
		a.qp_state = path[i];
		rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | fx_required(qp->qp_type, from, path[i]));
		if (rc)
			return rc;
	}
	return 0;
}

struct shim_tally {
	unsigned int probes, failed, same_rc, linux_errno0, sq_drained;
};

static void shim_probe(struct ibv_cq *cq, const struct fx_probe *p, struct shim_tally *t)
{
	struct ibv_qp_init_attr ia = { .send_cq = cq, .recv_cq = cq, .qp_type = p->type,
				       .cap = { 16, 16, 1, 1, 0 } };
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);
	struct ibv_qp_attr a, q;
	struct ibv_qp_init_attr qi;
	int mask, rc, err;

	cr_assert_not_null(qp, "probe %d: create: %s", p->id, strerror(errno));
	cr_assert_eq(shim_bring_to(qp, p->from), 0, "probe %d: bring-up", p->id);
	drain_async_events(qp);
	fx_probe_request(p, &a, &mask);
	errno = ERRNO_POISON;
	rc = ibv_modify_qp(qp, &a, mask);
	err = errno;
	t->probes++;
	if (rc != 0) {
		t->failed++;
		/* The rule: the error returned is the error in errno. */
		cr_expect_eq(err, rc, "probe %d (%s %s): rc %d, errno %d", p->id, p->section,
			     p->variant, rc, err);
		cr_expect_eq(qp->state, (enum ibv_qp_state)p->from, "probe %d: all or nothing",
			     p->id);
	} else {
		cr_expect_eq(err, ERRNO_POISON, "probe %d: success changed errno", p->id);
	}
	if (rc == p->rc) {
		t->same_rc++;
		/* Where the kernel refused, errno is what Linux left; where
		 * libibverbs refused without a system call (errno 0 there), ours
		 * is set all the same (doc/verbs-shim.md "errno"). */
		if (rc != 0 && p->errno_after != 0)
			cr_expect_eq(err, p->errno_after, "probe %d: errno", p->id);
		t->linux_errno0 += rc != 0 && p->errno_after == 0;
		if (rc == 0)
			cr_expect_eq((int)qp->state, p->ibqp_state, "probe %d: cached state",
				     p->id);
	}
	/* Every drain reported, as the oracle's events column shows. */
	if (rc == 0 && p->rc == 0) {
		unsigned int n = drain_async_events(qp);

		cr_expect_eq(n, strcmp(p->events, "SQ_DRAINED(this_qp)") == 0 ? 1u : 0u,
			     "probe %d: %u SQ_DRAINED, Linux %s", p->id, n, p->events);
		t->sq_drained += n;
	}
	memset(&q, 0xff, sizeof(q));
	cr_assert_eq(ibv_query_qp(qp, &q, IBV_QP_STATE, &qi), 0);
	cr_expect(q.en_sqd_async_notify == 0xff && q.rate_limit == 0xffffffffu,
		  "probe %d: query wrote what the kernel leaves", p->id);
	drain_async_events(qp);
	cr_assert_eq(ibv_destroy_qp(qp), 0);
}

Test(shim_verbs, oracle_modify_probes_set_errno, .timeout = 300)
{
	unsigned int n, summary;
	struct fx_probe *probes = fx_load_probes(&n, &summary);
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct shim_tally t = { 0 };

	cr_assert_eq(n, summary);
	for (unsigned int i = 0; i < n; i++)
		shim_probe(cq, &probes[i], &t);
	cr_log_info("%u probes through the shim: %u failed (errno = rc on each), %u with "
		    "Linux's rc, %u of those refused by libibverbs without errno there; "
		    "%u SQ_DRAINED", t.probes, t.failed, t.same_rc, t.linux_errno0,
		    t.sq_drained);
	cr_expect_eq(t.probes, n);
	cr_expect_gt(t.failed, 3000u, "the oracle's failing probes fail here too");
	cr_expect_eq(t.sq_drained, 10u, "Linux raised 10");
	cr_assert_eq(ibv_destroy_cq(cq), 0);
	free(probes);
}

/* Rate limiting: the pacing caps are reported and a rate reaches the dataplane's QP. */
Test(shim_verbs, rate_limit_reaches_the_dataplane)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	struct ibv_qp *qp = make_qp(cq, IBV_QPT_RC, 4, 1);
	struct ibv_qp *ud = make_qp(cq, IBV_QPT_UD, 4, 1);
	const struct ctl_qp_info *qi = fake.qp[(qp->qp_num - 0x11) % FAKE_MAX];
	struct ibv_device_attr_ex dx;
	struct ibv_qp_rate_limit_attr rl = { .rate_limit = 10000, .max_burst_sz = 4096,
					     .typical_pkt_sz = 1024 };
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTS };

	cr_assert_eq(ibv_query_device_ex(ctx, NULL, &dx), 0);
	cr_expect_eq(dx.packet_pacing_caps.qp_rate_limit_min, 1000, "1 Mb/s");
	cr_expect_eq(dx.packet_pacing_caps.qp_rate_limit_max, 100000000, "100 Gb/s");
	cr_expect_eq(dx.packet_pacing_caps.supported_qpts, 1u << IBV_QPT_RC);
	cr_assert_not_null(qi);

	/* Not in RTS yet: the RTS -> RTS move does not exist. */
	errno = 0;
	cr_expect_eq(ibv_modify_qp_rate_limit(qp, &rl), EINVAL);
	cr_expect_eq(errno, EINVAL);
	to_rts(qp);
	cr_assert_eq(ibv_modify_qp_rate_limit(qp, &rl), 0);
	cr_expect_eq(qi->sem->attr.rate_limit, 10000, "the engine's QP gets 10 Mb/s");
	/* IBV_QP_RATE_LIMIT through ibv_modify_qp, as perftest's HW limit does. */
	a.rate_limit = 10000000;
	cr_assert_eq(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_RATE_LIMIT), 0);
	cr_expect_eq(qi->sem->attr.rate_limit, 10000000, "10 Gb/s");
	rl.rate_limit = 0;
	cr_assert_eq(ibv_modify_qp_rate_limit(qp, &rl), 0);
	cr_expect_eq(qi->sem->attr.rate_limit, 0, "0 lifts the limit");

	/* Out of the caps, a comp_mask, a QP type without pacing: refused, errno set. */
	rl.rate_limit = 999;
	errno = 0;
	cr_expect_eq(ibv_modify_qp_rate_limit(qp, &rl), EINVAL);
	cr_expect_eq(errno, EINVAL);
	rl.rate_limit = 100000001;
	cr_expect_eq(ibv_modify_qp_rate_limit(qp, &rl), EINVAL);
	rl.rate_limit = 5000;
	rl.comp_mask = 1;
	cr_expect_eq(ibv_modify_qp_rate_limit(qp, &rl), EINVAL);
	rl.comp_mask = 0;
	cr_expect_eq(qi->sem->attr.rate_limit, 0, "nothing changed");
	errno = 0;
	cr_expect_eq(ibv_modify_qp_rate_limit(ud, &rl), EOPNOTSUPP);
	cr_expect_eq(errno, EOPNOTSUPP);

	cr_assert_eq(ibv_destroy_qp(ud), 0);
	cr_assert_eq(ibv_destroy_qp(qp), 0);
	cr_assert_eq(ibv_destroy_cq(cq), 0);
}

/*
 * WQs, indirection tables and RSS QPs (wq.c) reach the daemon and say why
 * they fail, errno set: this server has no raw packet QPs (max_flows 0),
 * so its rss_caps are 0 and a WQ (a RAW_PACKET QP to it) is EOPNOTSUPP;
 * what the shim checks itself is refused before any request.
 */
Test(shim_verbs, wqs_and_rss_qps_fail_cleanly_without_raw_qps)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	struct ibv_wq_init_attr wa = { .wq_type = IBV_WQT_RQ, .max_wr = 4, .max_sge = 1,
				       .pd = pd, .cq = cq };
	struct ibv_device_attr_ex ex;
	struct ibv_rwq_ind_table_init_attr ta = { .log_ind_tbl_size = 7 };
	uint8_t key[40] = { 0 };
	struct ibv_qp_init_attr_ex qa = {
		.qp_type = IBV_QPT_RAW_PACKET,
		.comp_mask = IBV_QP_INIT_ATTR_RX_HASH | IBV_QP_INIT_ATTR_IND_TABLE,
		.rx_hash_conf = { .rx_hash_function = IBV_RX_HASH_FUNC_TOEPLITZ,
				  .rx_hash_key_len = 40, .rx_hash_key = key },
	};
	struct ibv_wq *dummy[1] = { NULL };

	cr_assert_not_null(cq);
	cr_assert_eq(ibv_query_device_ex(ctx, NULL, &ex), 0);
	cr_assert_eq(ex.rss_caps.supported_qpts, 0u);
	cr_assert_eq(ex.rss_caps.max_rwq_indirection_table_size, 0u);
	cr_assert_eq(ex.max_wq_type_rq, 0u);
	errno = 0;
	cr_assert_null(ibv_create_wq(ctx, &wa));
	cr_assert_eq(errno, EOPNOTSUPP, "the daemon has no raw QPs: errno %d", errno);
	wa.wq_type = (enum ibv_wq_type)1;
	errno = 0;
	cr_assert_null(ibv_create_wq(ctx, &wa));
	cr_assert_eq(errno, EOPNOTSUPP, "no such WQ type: errno %d", errno);
	errno = 0;
	ta.ind_tbl = dummy;
	cr_assert_null(ibv_create_rwq_ind_table(ctx, &ta));
	cr_assert_eq(errno, EINVAL, "128 entries: errno %d", errno);
	ta.log_ind_tbl_size = 0;
	errno = 0;
	cr_assert_null(ibv_create_rwq_ind_table(ctx, &ta));
	cr_assert_eq(errno, EINVAL, "a NULL WQ: errno %d", errno);
	errno = 0;
	cr_assert_null(ibv_create_qp_ex(ctx, &qa));
	cr_assert_eq(errno, EINVAL, "an RSS QP without PD nor table: errno %d", errno);
	cr_assert_eq(ibv_destroy_cq(cq), 0);
}

/*
 * Tag matching completions carry the TMH's tag and app_ctx (struct cqe:
 * tm_tag, imm_data), read by ibv_wc_read_tm_info; other completions read 0.
 * tm_caps follow the daemon's limits (the fake's: 4 tags, 16 operations;
 * test_ctl_tm: 0 without them), and a CQ with IBV_WC_EX_WITH_TM_INFO is
 * accepted with IBV_TM_CAP_RC (EOPNOTSUPP without it, cq.c).
 */
Test(shim_verbs, tm_completions_give_their_tag_and_app_ctx)
{
	struct ibv_cq_init_attr_ex ca = { .cqe = 8, .wc_flags = IBV_WC_STANDARD_FLAGS };
	struct ibv_device_attr_ex ex;
	struct ibv_cq_ex *cx;
	struct ibv_qp *qp;
	const struct ctl_qp_info *qi;
	const struct ctl_cq_info *ci;
	struct ibv_poll_cq_attr pa = { 0 };
	struct ibv_wc_tm_info tm;
	struct cqe *e;

	cr_assert_eq(ibv_query_device_ex(ctx, NULL, &ex), 0);
	cr_assert_eq(ex.tm_caps.flags, IBV_TM_CAP_RC);
	cr_assert_eq(ex.tm_caps.max_num_tags, 4u);
	cr_assert_eq(ex.tm_caps.max_ops, 16u);
	cr_assert_eq(ex.tm_caps.max_rndv_hdr_size, 64u);
	cr_assert_eq(ex.tm_caps.max_sge, ex.orig_attr.max_srq_sge);
	ca.wc_flags |= IBV_WC_EX_WITH_TM_INFO;
	cx = ibv_create_cq_ex(ctx, &ca);
	cr_assert_not_null(cx, "IBV_WC_EX_WITH_TM_INFO with IBV_TM_CAP_RC: errno %d", errno);
	qp = make_qp(ibv_cq_ex_to_cq(cx), IBV_QPT_RC, 4, 1);
	qi = fake.qp[(qp->qp_num - 0x11) % FAKE_MAX];
	cr_assert_not_null(qi);
	ci = fake.cq[qi->recv_cqn % FAKE_MAX];
	cr_assert_not_null(ci);

	/* Play the engine: an eager match, a rendezvous match, a plain receive with imm. */
	e = spsc_ring_prod_slot(ci->ring.ring, 0);
	*e = (struct cqe){ .wr_id = 5, .opcode = WC_TM_RECV, .byte_len = 48, .qp_num = qi->qpn,
			   .wc_flags = WC_FLAG_TM_MATCH | WC_FLAG_TM_DATA_VALID,
			   .imm_data = 0xa1b2c3d4u, .tm_tag = 0x0123456789abcdefull };
	e = spsc_ring_prod_slot(ci->ring.ring, 1);
	*e = (struct cqe){ .wr_id = 6, .opcode = WC_TM_RECV, .qp_num = qi->qpn,
			   .wc_flags = WC_FLAG_TM_MATCH, .imm_data = 7, .tm_tag = 0x1234 };
	e = spsc_ring_prod_slot(ci->ring.ring, 2);
	*e = (struct cqe){ .wr_id = 7, .opcode = WC_RECV, .qp_num = qi->qpn,
			   .wc_flags = WC_FLAG_WITH_IMM, .imm_data = 0x55 };
	spsc_ring_publish(ci->ring.ring, 3);

	cr_assert_eq(ibv_start_poll(cx, &pa), 0);
	cr_assert_eq(cx->wr_id, 5u);
	cr_assert_eq(ibv_wc_read_opcode(cx), IBV_WC_TM_RECV);
	cr_assert_eq(ibv_wc_read_wc_flags(cx), IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID);
	memset(&tm, 0xff, sizeof(tm));
	ibv_wc_read_tm_info(cx, &tm);
	cr_assert_eq(tm.tag, 0x0123456789abcdefull);
	cr_assert_eq(tm.priv, 0xa1b2c3d4u);
	cr_assert_eq(ibv_next_poll(cx), 0);
	cr_assert_eq(ibv_wc_read_wc_flags(cx), IBV_WC_TM_MATCH);
	ibv_wc_read_tm_info(cx, &tm);
	cr_assert_eq(tm.tag, 0x1234u);
	cr_assert_eq(tm.priv, 7u);
	cr_assert_eq(ibv_next_poll(cx), 0);
	cr_assert_eq(ibv_wc_read_opcode(cx), IBV_WC_RECV);
	memset(&tm, 0xff, sizeof(tm));
	ibv_wc_read_tm_info(cx, &tm);
	cr_assert_eq(tm.tag, 0u, "not a tag matching completion");
	cr_assert_eq(tm.priv, 0u, "imm_data is no app_ctx");
	cr_assert_eq(ibv_wc_read_imm_data(cx), 0x55u);
	ibv_end_poll(cx);

	cr_assert_eq(ibv_destroy_qp(qp), 0);
	cr_assert_eq(ibv_destroy_cq(ibv_cq_ex_to_cq(cx)), 0);
}

/* IBV_SRQT_TM: creation, and ibv_post_srq_ops filling the ops ring the SRQ's lcore consumes. */
Test(shim_verbs, tm_srq_ops_go_to_the_ring_with_handles_from_the_free_entries)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	struct ibv_srq_init_attr_ex a = {
		.attr = { .max_wr = 8, .max_sge = 2 },
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TM,
		.srq_type = IBV_SRQT_TM, .pd = pd,
		.tm_cap = { .max_num_tags = 4, .max_ops = 8 },
	};
	struct ibv_srq_init_attr basic = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ibv_ops_wr op[6], *bad;
	struct ibv_sge sge = { .addr = 0x1000, .length = 64, .lkey = 0x105 };
	struct ibv_srq *srq, *plain;
	uint32_t srqn, h[5];

	cr_assert_not_null(cq);
	errno = 0;
	cr_assert_null(ibv_create_srq_ex(ctx, &a), "a TM SRQ needs a CQ");
	cr_assert_eq(errno, EINVAL);
	a.comp_mask |= IBV_SRQ_INIT_ATTR_CQ;
	a.cq = cq;
	a.tm_cap.max_num_tags = 5;
	errno = 0;
	cr_assert_null(ibv_create_srq_ex(ctx, &a), "past the daemon's max_num_tags");
	cr_assert_eq(errno, EINVAL);
	a.tm_cap.max_num_tags = 4;
	srq = ibv_create_srq_ex(ctx, &a);
	cr_assert_not_null(srq, "errno %d", errno);
	cr_assert_eq(ibv_get_srq_num(srq, &srqn), 0);
	const struct ctl_srq_info *info = fake.srq[srqn % FAKE_MAX];
	cr_assert_not_null(info);
	cr_assert_eq(info->max_num_tags, 4);
	cr_assert_eq(info->max_ops, 15);

	/* four ADDs take the four entries; a fifth finds none (ENOMEM, as mlx5) */
	memset(op, 0, sizeof(op));
	for (int i = 0; i < 5; i++) {
		op[i].wr_id = 100 + i;
		op[i].next = i < 4 ? &op[i + 1] : NULL;
		op[i].opcode = IBV_WR_TAG_ADD;
		op[i].flags = IBV_OPS_SIGNALED;
		op[i].tm.add.recv_wr_id = 200 + i;
		op[i].tm.add.tag = 0xabc0 + i;
		op[i].tm.add.mask = ~0ull;
		op[i].tm.add.sg_list = &sge;
		op[i].tm.add.num_sge = 1;
	}
	cr_assert_eq(ibv_post_srq_ops(srq, op, &bad), ENOMEM);
	cr_assert_eq(bad, &op[4]);
	for (int i = 0; i < 4; i++) {
		h[i] = op[i].tm.handle;
		cr_assert_lt(h[i], 4);
		for (int j = 0; j < i; j++)
			cr_assert_neq(h[i], h[j], "handles %d and %d", i, j);
	}
	/* the ring holds them as the engine reads them */
	struct spsc_ring *ring = info->tm_ops.ring;
	cr_assert_eq(spsc_ring_count(ring), 4);
	for (uint32_t i = 0; i < 4; i++) {
		const struct tm_op_wqe *w = spsc_ring_cons_slot(ring, i);

		cr_assert_eq(w->opcode, TM_OP_ADD);
		cr_assert_eq(w->flags, TM_OP_SIGNALED);
		cr_assert_eq(w->handle, h[i]);
		cr_assert_eq(w->wr_id, 100 + i);
		cr_assert_eq(w->recv_wr_id, 200 + i);
		cr_assert_eq(w->tag, 0xabc0 + i);
		cr_assert_eq(w->num_sge, 1);
		cr_assert_eq(w->sg_list[0].addr, 0x1000);
		cr_assert_eq(w->sg_list[0].lkey, 0x105);
	}
	spsc_ring_release(ring, 4);
	/* the engine lets go of one entry: its index is handed out again */
	__atomic_store_n(&info->tm_released[h[2]], 1, __ATOMIC_RELEASE);
	op[4].next = NULL;
	cr_assert_eq(ibv_post_srq_ops(srq, &op[4], &bad), 0);
	cr_assert_eq(op[4].tm.handle, h[2]);
	spsc_ring_release(ring, 1);
	/* refused whole: a DEL past the list, an unknown opcode, too many SGEs */
	op[0] = (struct ibv_ops_wr){ .opcode = IBV_WR_TAG_DEL, .tm.handle = 4 };
	cr_assert_eq(ibv_post_srq_ops(srq, op, &bad), EINVAL);
	cr_assert_eq(bad, &op[0]);
	op[0] = (struct ibv_ops_wr){ .opcode = 7 };
	cr_assert_eq(ibv_post_srq_ops(srq, op, &bad), EINVAL);
	op[0] = (struct ibv_ops_wr){ .opcode = IBV_WR_TAG_ADD, .tm.add.num_sge = 3 };
	cr_assert_eq(ibv_post_srq_ops(srq, op, &bad), EINVAL);
	cr_assert_eq(spsc_ring_count(ring), 0);
	/* max_ops operations outstanding, then ENOMEM; SYNC carries its count */
	for (uint32_t i = 0; i < 15; i++) {
		op[0] = (struct ibv_ops_wr){ .opcode = IBV_WR_TAG_SYNC, .flags = IBV_OPS_TM_SYNC,
					     .tm.unexpected_cnt = i };
		cr_assert_eq(ibv_post_srq_ops(srq, op, &bad), 0, "op %u", i);
	}
	cr_assert_eq(ibv_post_srq_ops(srq, op, &bad), ENOMEM);
	const struct tm_op_wqe *w = spsc_ring_cons_slot(ring, 14);
	cr_assert_eq(w->opcode, TM_OP_SYNC);
	cr_assert_eq(w->flags, TM_OP_SYNC_CNT);
	cr_assert_eq(w->unexpected_cnt, 14);
	/* not a TM SRQ */
	plain = ibv_create_srq(pd, &basic);
	cr_assert_not_null(plain);
	cr_assert_eq(ibv_post_srq_ops(plain, op, &bad), EINVAL);
	cr_assert_eq(ibv_destroy_srq(plain), 0);
	cr_assert_eq(ibv_destroy_srq(srq), 0);
	cr_assert_eq(ibv_destroy_cq(cq), 0);
}
