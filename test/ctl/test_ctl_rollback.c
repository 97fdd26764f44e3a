/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/ctl: what a request leaves behind when the dataplane refuses it.
 *
 * A fake dataplane keeps the objects it was given, as the daemon does, and
 * refuses the next call(s) of one callback with a chosen errno. For each
 * create/modify the client must get that errno and nothing may change: the
 * object tables and counts, the reference counts of the PD/CQ/SRQ/channel
 * (seen through their destroy answering 0 and not EBUSY), the memfds and
 * mappings the request brought or the control plane made for it, the old
 * object (a CQ keeps its ring and size, a QP/SRQ its attributes, an MR its
 * registration). Then the same request with a working dataplane succeeds.
 * Every request goes through ctl_conn_handle(), the daemon's own path.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <grp.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ctl_test.h"

/* ---- a dataplane that refuses on demand ---- */

enum fdp_op {
	FDP_MR_CREATE,
	FDP_CQ_CREATE,
	FDP_CQ_RESIZE,
	FDP_SRQ_CREATE,
	FDP_SRQ_MODIFY,
	FDP_AH_CREATE,
	FDP_QP_CREATE,
	FDP_QP_MODIFY,
	FDP_QP_DESTROY, /* "refused": the dataplane could not let go (ctl_dp_destroy_failed()) */
	FDP_MR_DESTROY,
	FDP_NOPS,
};

#define FDP_SLOTS 16u

struct fdp {
	int fail_errno[FDP_NOPS];      /* what the refused calls return */
	unsigned int fail_n[FDP_NOPS]; /* how many of the next calls are refused */
	unsigned int calls[FDP_NOPS];
	/* the dataplane's objects, by their number (key slot, cqn, srqn, ahn, QP index) */
	bool mr_live[FDP_SLOTS];
	struct ctl_mr_info mr[FDP_SLOTS];     /* copies taken at mr_create */
	const struct ctl_cq_info *cq[FDP_SLOTS]; /* the control plane's record, kept as the daemon does */
	uint32_t cq_entries[FDP_SLOTS];       /* the ring size the dataplane produces into */
	const struct ctl_srq_info *srq[FDP_SLOTS];
	uint32_t srq_limit[FDP_SLOTS];
	bool ah_live[FDP_SLOTS];
	bool qp_live[FDP_SLOTS];
	uint32_t qp_state[FDP_SLOTS];
	int live;                             /* objects of every kind */
	int bad_destroys;                     /* destroys of objects the dataplane does not have */
	bool mr_rekey;                        /* mr_create chooses keys of its own (ctl.h allows it) */
};

static struct fdp fdp;

static void fdp_fail(enum fdp_op op, int err, unsigned int n)
{
	fdp.fail_errno[op] = err;
	fdp.fail_n[op] = n;
}

/* Count the call; @return the errno it is refused with, 0: taken. */
static int fdp_refuses(enum fdp_op op)
{
	fdp.calls[op]++;
	if (fdp.fail_n[op] == 0)
		return 0;
	fdp.fail_n[op]--;
	return fdp.fail_errno[op];
}

static uint32_t fdp_slot(uint32_t num)
{
	cr_assert_lt(num, FDP_SLOTS, "object number %u beyond the fake's table", num);
	return num;
}

/* MR keys are (slot + 1) << 8 | generation (ctl_mr_info). */
static uint32_t fdp_mr_slot(uint32_t key)
{
	return fdp_slot((key >> 8) - 1);
}

static int fdp_mr_create(void *dp, struct ctl_mr_info *mr)
{
	uint32_t s = fdp_mr_slot(mr->lkey);
	int rc = fdp_refuses(FDP_MR_CREATE);

	(void)dp;
	if (rc)
		return rc;
	cr_assert(!fdp.mr_live[s], "key 0x%x registered twice", mr->lkey);
	if (fdp.mr_rekey) /* another 8-bit generation, same slot */
		mr->lkey = mr->rkey = (mr->lkey & ~UINT32_C(0xff)) | ((mr->lkey + 1) & 0xff);
	fdp.mr_live[s] = true;
	fdp.mr[s] = *mr;
	fdp.live++;
	return 0;
}

static void fdp_mr_destroy(void *dp, const struct ctl_mr_info *mr)
{
	uint32_t s = fdp_mr_slot(mr->lkey);

	(void)dp;
	if (!fdp.mr_live[s] || fdp.mr[s].lkey != mr->lkey) {
		fdp.bad_destroys++;
		return;
	}
	if (fdp_refuses(FDP_MR_DESTROY)) {
		ctl_dp_destroy_failed(ctl); /* still ours: lib/ctl must keep the memory */
		return;
	}
	fdp.mr_live[s] = false;
	fdp.live--;
}

static int fdp_cq_create(void *dp, const struct ctl_cq_info *cq)
{
	uint32_t s = fdp_slot(cq->cqn);
	int rc = fdp_refuses(FDP_CQ_CREATE);

	(void)dp;
	if (rc)
		return rc;
	fdp.cq[s] = cq;
	fdp.cq_entries[s] = cq->ring.entries;
	fdp.live++;
	return 0;
}

/* As the daemon's cq_move(): the unconsumed CQEs go to the new ring. */
static int fdp_cq_resize(void *dp, const struct ctl_cq_info *cq, const struct ctl_cq_info *old)
{
	uint32_t s = fdp_slot(old->cqn), n = spsc_ring_count(old->ring.ring);
	int rc = fdp_refuses(FDP_CQ_RESIZE);

	(void)dp;
	cr_assert_eq(fdp.cq[s], old, "the old record is the one the dataplane holds");
	if (rc)
		return rc;
	for (uint32_t i = 0; i < n; i++)
		memcpy(spsc_ring_prod_slot(cq->ring.ring, i), spsc_ring_cons_slot(old->ring.ring, i),
		       sizeof(struct cqe));
	spsc_ring_publish(cq->ring.ring, n);
	fdp.cq_entries[s] = cq->ring.entries;
	return 0;
}

static void fdp_cq_destroy(void *dp, const struct ctl_cq_info *cq)
{
	uint32_t s = fdp_slot(cq->cqn);

	(void)dp;
	if (fdp.cq[s] != cq) {
		fdp.bad_destroys++;
		return;
	}
	fdp.cq[s] = NULL;
	fdp.live--;
}

static int fdp_srq_create(void *dp, const struct ctl_srq_info *srq)
{
	uint32_t s = fdp_slot(srq->srqn);
	int rc = fdp_refuses(FDP_SRQ_CREATE);

	(void)dp;
	if (rc)
		return rc;
	fdp.srq[s] = srq;
	fdp.srq_limit[s] = srq->srq_limit;
	fdp.live++;
	return 0;
}

static int fdp_srq_modify(void *dp, const struct ctl_srq_info *srq)
{
	uint32_t s = fdp_slot(srq->srqn);
	int rc = fdp_refuses(FDP_SRQ_MODIFY);

	(void)dp;
	cr_assert_not_null(fdp.srq[s]);
	if (rc)
		return rc;
	fdp.srq_limit[s] = srq->srq_limit;
	return 0;
}

static void fdp_srq_destroy(void *dp, const struct ctl_srq_info *srq)
{
	uint32_t s = fdp_slot(srq->srqn);

	(void)dp;
	if (fdp.srq[s] != srq) {
		fdp.bad_destroys++;
		return;
	}
	fdp.srq[s] = NULL;
	fdp.live--;
}

static int fdp_ah_create(void *dp, struct ctl_ah_info *ah)
{
	uint32_t s = fdp_slot(ah->ahn);
	int rc = fdp_refuses(FDP_AH_CREATE);

	(void)dp;
	if (rc)
		return rc;
	fdp.ah_live[s] = true;
	fdp.live++;
	return 0;
}

static void fdp_ah_destroy(void *dp, const struct ctl_ah_info *ah)
{
	uint32_t s = fdp_slot(ah->ahn);

	(void)dp;
	if (!fdp.ah_live[s]) {
		fdp.bad_destroys++;
		return;
	}
	fdp.ah_live[s] = false;
	fdp.live--;
}

static uint32_t fdp_qp_slot(const struct ctl_qp_info *qp)
{
	return fdp_slot(qp->qpn - base_cfg().limits.qpn_base);
}

static int fdp_qp_create(void *dp, const struct ctl_qp_info *qp)
{
	uint32_t s = fdp_qp_slot(qp);
	int rc = fdp_refuses(FDP_QP_CREATE);

	(void)dp;
	if (rc)
		return rc;
	fdp.qp_live[s] = true;
	fdp.qp_state[s] = qp->sem->attr.qp_state;
	fdp.live++;
	return 0;
}

static int fdp_qp_modify(void *dp, const struct ctl_qp_info *qp, const struct qp_sem *next,
			 const struct qp_sem_effects *fx)
{
	uint32_t s = fdp_qp_slot(qp);
	int rc = fdp_refuses(FDP_QP_MODIFY);

	(void)dp;
	(void)fx;
	cr_assert(fdp.qp_live[s]);
	if (rc)
		return rc;
	fdp.qp_state[s] = next->attr.qp_state;
	return 0;
}

static void fdp_qp_destroy(void *dp, const struct ctl_qp_info *qp)
{
	uint32_t s = fdp_qp_slot(qp);

	(void)dp;
	if (!fdp.qp_live[s]) {
		fdp.bad_destroys++;
		return;
	}
	if (fdp_refuses(FDP_QP_DESTROY)) {
		ctl_dp_destroy_failed(ctl);
		return;
	}
	fdp.qp_live[s] = false;
	fdp.live--;
}

static const struct ctl_dataplane_ops fdp_ops = {
	.mr_create = fdp_mr_create, .mr_destroy = fdp_mr_destroy,
	.cq_create = fdp_cq_create, .cq_resize = fdp_cq_resize, .cq_destroy = fdp_cq_destroy,
	.srq_create = fdp_srq_create, .srq_modify = fdp_srq_modify, .srq_destroy = fdp_srq_destroy,
	.ah_create = fdp_ah_create, .ah_destroy = fdp_ah_destroy,
	.qp_create = fdp_qp_create, .qp_modify = fdp_qp_modify, .qp_destroy = fdp_qp_destroy,
};

/* Two lcores, so that a QP create also binds CQs and SRQs (ctl.h "QP placement"). */
static void setup(void)
{
	struct ctl_config cfg = base_cfg();

	memset(&fdp, 0, sizeof(fdp));
	cfg.limits.n_lcores = 2;
	cfg.dp_ops = &fdp_ops;
	cfg.dp = &fdp;
	ctl = ctl_create(&cfg);
	cr_assert_not_null(ctl);
}

static void teardown(void)
{
	ctl_destroy(ctl);
	ctl = NULL;
	cr_assert_eq(fdp.live, 0, "the dataplane got every object back");
	cr_assert_eq(fdp.bad_destroys, 0, "no destroy of an object the dataplane never had");
}

TestSuite(ctl_rollback, .init = setup, .fini = teardown, .timeout = 20);

/* ---- what must not change ---- */

/* Everything a refused request could leave behind, in one record. */
struct trace {
	struct ctl_stats st;     /* objects per kind */
	uint32_t group_objs;     /* the client's count */
	int fds;                 /* descriptors of this process (memfds, pidfds) */
	int maps_cq, maps_srq, maps_qp, maps_mr; /* shared-memory mappings */
	int dp_live;             /* the dataplane's objects */
};

#define TEST_MR_MEMFD "rb-mr"

static struct trace trace_take(const struct client *cl)
{
	struct trace t;

	memset(&t, 0, sizeof(t));
	ctl_get_stats(ctl, &t.st);
	t.group_objs = ctl_conn_nobjects(cl->c);
	t.fds = count_fds();
	t.maps_cq = count_maps("roce-cq");
	t.maps_srq = count_maps("roce-srq");
	t.maps_qp = count_maps("roce-qp");
	t.maps_mr = count_maps(TEST_MR_MEMFD);
	t.dp_live = fdp.live;
	return t;
}

static void trace_same(const struct trace *before, const struct trace *after)
{
	cr_assert_eq(after->st.pd, before->st.pd, "PDs");
	cr_assert_eq(after->st.mr, before->st.mr, "MRs");
	cr_assert_eq(after->st.channel, before->st.channel, "channels");
	cr_assert_eq(after->st.cq, before->st.cq, "CQs");
	cr_assert_eq(after->st.qp, before->st.qp, "QPs");
	cr_assert_eq(after->st.srq, before->st.srq, "SRQs");
	cr_assert_eq(after->st.ah, before->st.ah, "AHs");
	cr_assert_eq(after->group_objs, before->group_objs, "the client's object count");
	cr_assert_eq(after->fds, before->fds, "descriptors: %d, were %d", after->fds, before->fds);
	cr_assert_eq(after->maps_cq, before->maps_cq, "CQ ring mappings");
	cr_assert_eq(after->maps_srq, before->maps_srq, "SRQ ring mappings");
	cr_assert_eq(after->maps_qp, before->maps_qp, "QP ring mappings");
	cr_assert_eq(after->maps_mr, before->maps_mr, "MR memfd mappings");
	cr_assert_eq(after->dp_live, before->dp_live, "dataplane objects");
}

/* No async event is waiting for @p cl. */
static void no_event(const struct client *cl)
{
	struct ipc_async_event ev;

	cr_assert_eq(recv(cl->async_fd, &ev, sizeof(ev), MSG_DONTWAIT), -1, "event %u", ev.type);
}

/* ---- request builders ---- */

/* An MR memfd of @p size, mapped here too (one mapping); @p text at offset 0. */
struct memfd {
	int fd;
	char *buf;
	size_t size;
};

static struct memfd memfd_new(size_t size, const char *text)
{
	struct memfd m = { .size = size };

	m.fd = ipc_shm_create(TEST_MR_MEMFD, size);
	cr_assert_geq(m.fd, 0);
	m.buf = ipc_shm_map(m.fd, size, 0);
	cr_assert_not_null(m.buf);
	strcpy(m.buf, text);
	return m;
}

static void memfd_free(struct memfd *m)
{
	munmap(m->buf, m->size);
	close(m->fd);
}

/* REG_MR of @p len bytes at the start of @p mem (NULL: not shared, the fallback path). */
static int reg_mr(struct client *cl, uint32_t pd, const struct memfd *mem, uint64_t len,
		  uint32_t access, struct ipc_reg_mr_rsp *out)
{
	struct ipc_msg m, r;
	int fd = mem ? dup(mem->fd) : -1;
	int rc;

	req(&m, IPC_OP_REG_MR);
	m.u.req_REG_MR.pd = pd;
	m.u.req_REG_MR.addr = mem ? (uintptr_t)mem->buf : 0x10000;
	m.u.req_REG_MR.iova = m.u.req_REG_MR.addr;
	m.u.req_REG_MR.length = len;
	m.u.req_REG_MR.access = access;
	rc = call(cl, &m, mem ? &fd : NULL, mem ? 1 : 0, &r, NULL);
	if (out)
		*out = r.u.rsp_REG_MR;
	return rc;
}

/* REREG_MR of @p mr onto @p pd, @p access and the start of @p mem (all three change). */
static int rereg_mr(struct client *cl, uint32_t mr, uint32_t pd, const struct memfd *mem,
		    uint64_t len, uint32_t access)
{
	struct ipc_msg m, r;
	int fd = dup(mem->fd);

	req(&m, IPC_OP_REREG_MR);
	m.u.req_REREG_MR.handle = mr;
	m.u.req_REREG_MR.flags = IBV_REREG_MR_CHANGE_PD | IBV_REREG_MR_CHANGE_ACCESS |
				 IBV_REREG_MR_CHANGE_TRANSLATION;
	m.u.req_REREG_MR.pd = pd;
	m.u.req_REREG_MR.access = access;
	m.u.req_REREG_MR.addr = (uintptr_t)mem->buf;
	m.u.req_REREG_MR.iova = (uintptr_t)mem->buf;
	m.u.req_REREG_MR.length = len;
	return call(cl, &m, &fd, 1, &r, NULL);
}

/* IMPORT_MR: the MR's keys and length as the control plane hands them out. */
static int import_mr(struct client *cl, uint32_t mr, uint32_t pd, struct ipc_import_mr_rsp *out)
{
	struct ipc_msg m, r;
	int rc;

	req(&m, IPC_OP_IMPORT_MR);
	m.u.req_IMPORT_MR.handle = mr;
	m.u.req_IMPORT_MR.pd = pd;
	rc = call(cl, &m, NULL, 0, &r, NULL);
	if (out)
		*out = r.u.rsp_IMPORT_MR;
	return rc;
}

static int create_channel(struct client *cl, uint32_t *out)
{
	struct ipc_msg m, r;
	int rc;

	req(&m, IPC_OP_CREATE_CHANNEL);
	rc = call(cl, &m, NULL, 0, &r, NULL);
	*out = r.u.rsp_CREATE_CHANNEL.handle;
	return rc;
}

static int create_cq_ch(struct client *cl, uint32_t cqe, uint32_t channel, uint32_t *out)
{
	struct ipc_msg m, r;
	int rc;

	req(&m, IPC_OP_CREATE_CQ);
	m.u.req_CREATE_CQ.cqe = cqe;
	m.u.req_CREATE_CQ.channel = channel;
	rc = call(cl, &m, NULL, 0, &r, NULL);
	*out = r.u.rsp_CREATE_CQ.handle;
	return rc;
}

static int create_srq(struct client *cl, uint32_t pd, uint32_t max_wr, uint32_t limit,
		      uint32_t *out)
{
	struct ipc_msg m, r;
	int rc;

	req(&m, IPC_OP_CREATE_SRQ);
	m.u.req_CREATE_SRQ.pd = pd;
	m.u.req_CREATE_SRQ.max_wr = max_wr;
	m.u.req_CREATE_SRQ.max_sge = 1;
	m.u.req_CREATE_SRQ.srq_limit = limit;
	rc = call(cl, &m, NULL, 0, &r, NULL);
	*out = r.u.rsp_CREATE_SRQ.handle;
	return rc;
}

static struct ipc_query_srq_rsp query_srq(struct client *cl, uint32_t srq)
{
	struct ipc_msg m, r;

	req(&m, IPC_OP_QUERY_SRQ);
	m.u.req_QUERY_SRQ.handle = srq;
	cr_assert_eq(call(cl, &m, NULL, 0, &r, NULL), 0);
	return r.u.rsp_QUERY_SRQ;
}

static int create_ah(struct client *cl, uint32_t pd, uint32_t *out)
{
	struct ipc_msg m, r;
	int rc;

	req(&m, IPC_OP_CREATE_AH);
	m.u.req_CREATE_AH.pd = pd;
	m.u.req_CREATE_AH.attr.is_global = 1;
	m.u.req_CREATE_AH.attr.port_num = 1;
	m.u.req_CREATE_AH.attr.sgid_index = 1;
	m.u.req_CREATE_AH.attr.dgid[10] = 0xff;
	m.u.req_CREATE_AH.attr.dgid[11] = 0xff;
	m.u.req_CREATE_AH.attr.dgid[12] = 198;
	m.u.req_CREATE_AH.attr.dgid[13] = 18;
	m.u.req_CREATE_AH.attr.dgid[15] = 2;
	rc = call(cl, &m, NULL, 0, &r, NULL);
	*out = r.u.rsp_CREATE_AH.handle;
	return rc;
}


static struct ipc_query_qp_rsp query_qp(struct client *cl, uint32_t qp)
{
	struct ipc_msg m, r;

	req(&m, IPC_OP_QUERY_QP);
	m.u.req_QUERY_QP.handle = qp;
	m.u.req_QUERY_QP.mask = UINT32_C(0x1ffffff); /* bits 0..24, as the oracle's queries */
	cr_assert_eq(call(cl, &m, NULL, 0, &r, NULL), 0);
	return r.u.rsp_QUERY_QP;
}

/* ---- MR ---- */

/* The memory of a refused REG_MR: a memfd the client shares, or none (pidfd fallback). */
static void reg_mr_refused(bool shared)
{
	struct client a;
	struct memfd mem = memfd_new(8192, "bytes of the client");
	struct ipc_reg_mr_rsp mr;
	uint32_t pd;

	client_open(&a, true);
	pd = alloc_pd(&a);
	struct trace before = trace_take(&a);

	fdp_fail(FDP_MR_CREATE, ENOMEM, 1);
	cr_assert_eq(reg_mr(&a, pd, shared ? &mem : NULL, 100, IBV_ACCESS_LOCAL_WRITE, NULL), ENOMEM);
	struct trace after = trace_take(&a);

	trace_same(&before, &after);
	cr_assert_eq(fdp.calls[FDP_MR_CREATE], 1);

	cr_assert_eq(reg_mr(&a, pd, shared ? &mem : NULL, 100, IBV_ACCESS_LOCAL_WRITE, &mr), 0,
		     "the same request, the dataplane willing");
	uint32_t s = fdp_mr_slot(mr.lkey);

	cr_assert(fdp.mr_live[s]);
	cr_assert_eq(fdp.mr[s].length, 100);
	if (shared)
		cr_assert_str_eq(fdp.mr[s].local, "bytes of the client");
	else
		cr_assert_geq(fdp.mr[s].mem_fd, 0);
	cr_assert_eq(destroy(&a, IPC_OP_DEALLOC_PD, pd), EBUSY, "the MR holds its PD");
	cr_assert_eq(destroy(&a, IPC_OP_DEREG_MR, mr.handle), 0);
	cr_assert_eq(destroy(&a, IPC_OP_DEALLOC_PD, pd), 0, "the refused MR left no reference");
	cr_assert_eq(ctl_conn_nobjects(a.c), 0);
	client_close(&a);
	memfd_free(&mem);
}

Test(ctl_rollback, reg_mr_of_shared_memory)
{
	reg_mr_refused(true);
}

Test(ctl_rollback, reg_mr_of_unshared_memory)
{
	reg_mr_refused(false);
}

/*
 * On-demand paging: an ODP MR is served on the copy path (never a memfd),
 * costs no registered bytes (the daemon maps and pins nothing for it), and
 * stays ODP for its life, as in the kernel. The implicit MR (0, 2^64 - 1)
 * is ODP only.
 */
Test(ctl_rollback, odp_mrs_take_the_copy_path_and_no_registered_bytes)
{
	struct ctl_config cfg = base_cfg();
	struct ctl *saved = ctl;
	struct memfd mem = memfd_new(8192, "odp");
	const uint32_t odp = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND;
	struct ipc_reg_mr_rsp a_mr, big, imp;
	struct ipc_msg m, r;
	struct client a;
	uint32_t pd;

	cfg.limits.n_lcores = 2;
	cfg.dp_ops = &fdp_ops;
	cfg.dp = &fdp;
	cfg.quota = (struct ctl_quota){ .max_mr_bytes = 4096 };
	ctl = ctl_create(&cfg);
	cr_assert_not_null(ctl);
	client_open(&a, true);
	pd = alloc_pd(&a);

	req(&m, IPC_OP_QUERY_DEVICE);
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), 0);
	cr_assert_eq(r.u.rsp_QUERY_DEVICE.attr.odp_general_caps,
		     IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT);
	cr_assert_eq(reg_mr(&a, pd, &mem, 8192, odp, NULL), EINVAL, "ODP never takes a memfd");
	cr_assert_eq(reg_mr(&a, pd, NULL, 1u << 20, odp, &big), 0, "1 MiB of ODP under a 4 KiB quota");
	cr_assert_geq(fdp.mr[fdp_mr_slot(big.lkey)].mem_fd, 0, "served through /proc/PID/mem");
	cr_assert_null(fdp.mr[fdp_mr_slot(big.lkey)].local);
	cr_assert_eq(reg_mr(&a, pd, &mem, 4096, IBV_ACCESS_LOCAL_WRITE, &a_mr), 0,
		     "the quota is still whole for mapped memory");
	cr_assert_eq(reg_mr(&a, pd, NULL, 1, IBV_ACCESS_LOCAL_WRITE, NULL), ENOMEM);

	req(&m, IPC_OP_REG_MR);
	m.u.req_REG_MR.pd = pd;
	m.u.req_REG_MR.length = UINT64_MAX;
	m.u.req_REG_MR.access = IBV_ACCESS_LOCAL_WRITE;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), EINVAL, "address 0, length 2^64-1: ODP only");
	m.u.req_REG_MR.access = odp;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), 0, "the implicit ODP MR");
	imp = r.u.rsp_REG_MR;
	cr_assert_eq(fdp.mr[fdp_mr_slot(imp.lkey)].length, UINT64_MAX);

	req(&m, IPC_OP_REREG_MR);
	m.u.req_REREG_MR.handle = big.handle;
	m.u.req_REREG_MR.flags = IBV_REREG_MR_CHANGE_ACCESS;
	m.u.req_REREG_MR.access = IBV_ACCESS_LOCAL_WRITE;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), EINVAL, "ODP is fixed at registration");
	m.u.req_REREG_MR.handle = a_mr.handle;
	m.u.req_REREG_MR.access = odp;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), EINVAL);

	cr_assert_eq(destroy(&a, IPC_OP_DEREG_MR, big.handle), 0);
	cr_assert_eq(destroy(&a, IPC_OP_DEREG_MR, imp.handle), 0);
	cr_assert_eq(destroy(&a, IPC_OP_DEREG_MR, a_mr.handle), 0);
	cr_assert_eq(reg_mr(&a, pd, &mem, 4096, IBV_ACCESS_LOCAL_WRITE, &a_mr), 0,
		     "deregistering ODP MRs gave back no bytes they never took");
	cr_assert_eq(destroy(&a, IPC_OP_DEREG_MR, a_mr.handle), 0);
	cr_assert_eq(destroy(&a, IPC_OP_DEALLOC_PD, pd), 0);
	client_close(&a);
	ctl_destroy(ctl);
	ctl = saved;
	memfd_free(&mem);
}

/*
 * A refused REREG_MR (new PD, access and memory at once) keeps the old
 * registration: the dataplane gets it back, with the old keys; the new
 * memory's mapping goes, the new PD gains no reference.
 */
Test(ctl_rollback, rereg_mr_keeps_the_old_registration)
{
	struct client a;
	struct memfd old_mem = memfd_new(4096, "old bytes"), new_mem = memfd_new(8192, "new bytes");
	struct ipc_import_mr_rsp im;
	struct ipc_reg_mr_rsp mr;
	uint32_t pd1, pd2, s;

	client_open(&a, true);
	pd1 = alloc_pd(&a);
	pd2 = alloc_pd(&a);
	cr_assert_eq(reg_mr(&a, pd1, &old_mem, 64, IBV_ACCESS_LOCAL_WRITE, &mr), 0);
	s = fdp_mr_slot(mr.lkey);
	struct trace before = trace_take(&a);

	fdp_fail(FDP_MR_CREATE, EAGAIN, 1);
	cr_assert_eq(rereg_mr(&a, mr.handle, pd2, &new_mem, 200,
			      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE), EAGAIN);
	struct trace after = trace_take(&a);

	trace_same(&before, &after);
	cr_assert_eq(fdp.calls[FDP_MR_CREATE], 3, "registered, refused the new one, took the old back");
	cr_assert(fdp.mr_live[s]);
	cr_assert_eq(fdp.mr[s].lkey, mr.lkey);
	cr_assert_eq(fdp.mr[s].length, 64);
	cr_assert_eq(fdp.mr[s].access, IBV_ACCESS_LOCAL_WRITE);
	cr_assert_str_eq(fdp.mr[s].local, "old bytes");
	cr_assert_eq(import_mr(&a, mr.handle, pd2, NULL), EINVAL, "still on its old PD");
	cr_assert_eq(import_mr(&a, mr.handle, pd1, &im), 0);
	cr_assert_eq(im.lkey, mr.lkey);
	cr_assert_eq(im.rkey, mr.rkey);
	cr_assert_eq(im.length, 64);

	cr_assert_eq(rereg_mr(&a, mr.handle, pd2, &new_mem, 200,
			      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE), 0,
		     "the same request, the dataplane willing");
	cr_assert(fdp.mr_live[s]);
	cr_assert_eq(fdp.mr[s].length, 200);
	cr_assert_str_eq(fdp.mr[s].local, "new bytes");
	cr_assert_eq(count_maps(TEST_MR_MEMFD), before.maps_mr, "old memory unmapped, new mapped");
	cr_assert_eq(destroy(&a, IPC_OP_DEALLOC_PD, pd1), 0, "the old PD was released once");
	cr_assert_eq(destroy(&a, IPC_OP_DEALLOC_PD, pd2), EBUSY);
	cr_assert_eq(destroy(&a, IPC_OP_DEREG_MR, mr.handle), 0);
	cr_assert_eq(destroy(&a, IPC_OP_DEALLOC_PD, pd2), 0);
	client_close(&a);
	memfd_free(&old_mem);
	memfd_free(&new_mem);
}

/*
 * The dataplane refuses the new registration and then the old one back: the
 * MR fails closed. It is invalidated: its keys reach nothing, its memory is
 * released, every request naming it but DEREG_MR fails with EINVAL, and
 * DEREG_MR (which the application still owes, as after rdma-core's
 * IBV_REREG_MR_ERR_CMD) frees it without a dataplane destroy.
 */
Test(ctl_rollback, rereg_mr_whose_restore_is_refused_fails_closed)
{
	struct client a;
	struct memfd old_mem = memfd_new(4096, "old bytes"), new_mem = memfd_new(8192, "new bytes");
	struct ipc_reg_mr_rsp mr, mr2;
	uint32_t pd1, pd2;

	client_open(&a, true);
	pd1 = alloc_pd(&a);
	pd2 = alloc_pd(&a);
	struct trace before = trace_take(&a);

	cr_assert_eq(reg_mr(&a, pd1, &old_mem, 64, IBV_ACCESS_LOCAL_WRITE, &mr), 0);
	fdp_fail(FDP_MR_CREATE, EAGAIN, 2);
	cr_assert_eq(rereg_mr(&a, mr.handle, pd2, &new_mem, 200, IBV_ACCESS_LOCAL_WRITE), EAGAIN,
		     "the error of the request, not of the restore");
	cr_assert_eq(fdp.calls[FDP_MR_CREATE], 3);
	cr_assert_eq(fdp.live, 0, "the dataplane has no MR");
	cr_assert_eq(count_maps(TEST_MR_MEMFD), before.maps_mr, "neither memory stays mapped");
	cr_assert_eq(count_fds(), before.fds);

	cr_assert_eq(import_mr(&a, mr.handle, pd1, NULL), EINVAL, "no keys to hand out");
	cr_assert_eq(rereg_mr(&a, mr.handle, pd2, &new_mem, 200, IBV_ACCESS_LOCAL_WRITE), EINVAL);
	cr_assert_eq(fdp.calls[FDP_MR_CREATE], 3, "an invalidated MR never reaches the dataplane");
	cr_assert_eq(destroy(&a, IPC_OP_DEALLOC_PD, pd1), EBUSY, "held until DEREG_MR");
	cr_assert_eq(destroy(&a, IPC_OP_DEALLOC_PD, pd2), 0, "the new PD gained nothing");
	cr_assert_eq(destroy(&a, IPC_OP_DEREG_MR, mr.handle), 0);
	cr_assert_eq(fdp.bad_destroys, 0, "no destroy of the MR the dataplane lost");
	cr_assert_eq(destroy(&a, IPC_OP_DEREG_MR, mr.handle), EINVAL, "gone");
	cr_assert_eq(destroy(&a, IPC_OP_DEALLOC_PD, pd1), 0);
	struct trace after = trace_take(&a);

	cr_assert_eq(after.st.pd + after.st.mr, 0);
	cr_assert_eq(after.fds, before.fds);

	/* The dataplane willing again: the memory registers anew, under another key. */
	pd2 = alloc_pd(&a);
	cr_assert_eq(reg_mr(&a, pd2, &new_mem, 200, IBV_ACCESS_LOCAL_WRITE, &mr2), 0);
	cr_assert_neq(mr2.lkey, mr.lkey);
	cr_assert_str_eq(fdp.mr[fdp_mr_slot(mr2.lkey)].local, "new bytes");
	client_close(&a);
	memfd_free(&old_mem);
	memfd_free(&new_mem);
}

/*
 * The dataplane refuses the new registration and takes the old one back,
 * but under other keys (mr_create may choose its own): the keys the
 * application holds would name nothing, so the MR fails closed as above and
 * the dataplane's copy is destroyed.
 */
Test(ctl_rollback, rereg_mr_restored_under_other_keys_fails_closed)
{
	struct client a;
	struct memfd old_mem = memfd_new(4096, "old bytes"), new_mem = memfd_new(8192, "new bytes");
	struct ipc_reg_mr_rsp mr;
	uint32_t pd;

	client_open(&a, true);
	pd = alloc_pd(&a);
	struct trace before = trace_take(&a);

	cr_assert_eq(reg_mr(&a, pd, &old_mem, 64, IBV_ACCESS_LOCAL_WRITE, &mr), 0);
	fdp_fail(FDP_MR_CREATE, ENOMEM, 1);
	fdp.mr_rekey = true;
	cr_assert_eq(rereg_mr(&a, mr.handle, pd, &new_mem, 200, IBV_ACCESS_LOCAL_WRITE), ENOMEM);
	cr_assert_eq(fdp.calls[FDP_MR_CREATE], 3);
	cr_assert_eq(fdp.live, 0, "the copy under other keys is gone");
	cr_assert_eq(count_maps(TEST_MR_MEMFD), before.maps_mr, "neither memory stays mapped");
	cr_assert_eq(import_mr(&a, mr.handle, pd, NULL), EINVAL, "no keys to hand out");
	cr_assert_eq(destroy(&a, IPC_OP_DEREG_MR, mr.handle), 0);
	cr_assert_eq(destroy(&a, IPC_OP_DEALLOC_PD, pd), 0);
	cr_assert_eq(fdp.bad_destroys, 0);
	client_close(&a);
	memfd_free(&old_mem);
	memfd_free(&new_mem);
}

/* ---- CQ ---- */

Test(ctl_rollback, create_cq)
{
	struct client a;
	uint32_t ch, cq;

	client_open(&a, true);
	cr_assert_eq(create_channel(&a, &ch), 0);
	struct trace before = trace_take(&a);

	fdp_fail(FDP_CQ_CREATE, ENOSPC, 1);
	cr_assert_eq(create_cq_ch(&a, 16, ch, &cq), ENOSPC);
	struct trace after = trace_take(&a);

	trace_same(&before, &after);
	cr_assert_eq(create_cq_ch(&a, 16, ch, &cq), 0, "the same request, the dataplane willing");
	cr_assert_eq(destroy(&a, IPC_OP_DESTROY_CHANNEL, ch), EBUSY, "the CQ holds its channel");
	cr_assert_eq(destroy(&a, IPC_OP_DESTROY_CQ, cq), 0);
	cr_assert_eq(destroy(&a, IPC_OP_DESTROY_CHANNEL, ch), 0, "the refused CQ left no reference");
	client_close(&a);
}

/* The dataplane produces one CQE into the CQ it holds (as an lcore would). */
static void fdp_produce(uint32_t cqn, uint64_t wr_id)
{
	const struct ctl_cq_info *cq = fdp.cq[fdp_slot(cqn)];
	struct cqe e = { .wr_id = wr_id };

	cr_assert_not_null(cq);
	cr_assert_eq(cq->ring.entries, fdp.cq_entries[cqn], "the ring the dataplane knows");
	cr_assert_eq(spsc_ring_push(cq->ring.ring, &e), 1, "room in the ring");
}

/* A refused resize keeps the old ring: the client reads it at the old size, nothing moved. */
Test(ctl_rollback, resize_cq_keeps_the_old_ring)
{
	struct client a;
	struct ipc_msg m, r;
	int rfds[IPC_MAX_FDS];
	struct spsc_ring *ring;
	uint32_t cq, cqn = 0, entries;
	size_t size;
	uint8_t *shm;

	client_open(&a, true);
	req(&m, IPC_OP_CREATE_CQ);
	m.u.req_CREATE_CQ.cqe = 4;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, rfds), 0);
	cq = r.u.rsp_CREATE_CQ.handle;
	entries = r.u.rsp_CREATE_CQ.ring.entries;
	size = r.u.rsp_CREATE_CQ.shm_size;
	shm = ipc_shm_map(rfds[0], size, 0);
	close(rfds[0]);
	ring = (struct spsc_ring *)(shm + r.u.rsp_CREATE_CQ.ring.offset);
	for (uint32_t i = 0; i < FDP_SLOTS; i++)
		if (fdp.cq[i] != NULL)
			cqn = i;
	for (uint64_t i = 0; i < 3; i++)
		fdp_produce(cqn, 100 + i);
	spsc_ring_release(ring, 1); /* the application read one */
	struct trace before = trace_take(&a);

	fdp_fail(FDP_CQ_RESIZE, EAGAIN, 1);
	req(&m, IPC_OP_RESIZE_CQ);
	m.u.req_RESIZE_CQ.handle = cq;
	m.u.req_RESIZE_CQ.cqe = 100;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, rfds), EAGAIN);
	struct trace after = trace_take(&a);

	trace_same(&before, &after);
	cr_assert_eq(fdp.cq[cqn]->ring.entries, entries, "the control plane's record: the old ring");
	cr_assert_eq(fdp.cq[cqn]->cqe, entries - 1);
	cr_assert_eq(fdp.cq_entries[cqn], entries);
	/* Still usable: the dataplane fills it to the old size, the client reads on. */
	for (uint64_t i = 3; i < entries; i++)
		fdp_produce(cqn, 100 + i);
	cr_assert_eq(spsc_ring_count(ring), entries - 1, "cqe = entries - 1 unread CQEs");
	cr_assert_eq(((struct cqe *)spsc_ring_cons_slot(ring, 0))->wr_id, 101);
	cr_assert_eq(((struct cqe *)spsc_ring_cons_slot(ring, entries - 2))->wr_id,
		     100 + entries - 1);
	spsc_ring_release(ring, entries - 3); /* leave two */

	cr_assert_eq(call(&a, &m, NULL, 0, &r, rfds), 0, "the same request, the dataplane willing");
	cr_assert_geq(r.u.rsp_RESIZE_CQ.cqe, 100);
	munmap(shm, size);
	size = r.u.rsp_RESIZE_CQ.shm_size;
	shm = ipc_shm_map(rfds[0], size, 0);
	close(rfds[0]);
	ring = (struct spsc_ring *)(shm + r.u.rsp_RESIZE_CQ.ring.offset);
	cr_assert_eq(spsc_ring_count(ring), 2, "the unread CQEs moved");
	cr_assert_eq(((struct cqe *)spsc_ring_cons_slot(ring, 1))->wr_id, 100 + entries - 1);
	cr_assert_eq(fdp.cq[cqn]->ring.entries, r.u.rsp_RESIZE_CQ.ring.entries);
	cr_assert_eq(count_maps("roce-cq"), 2, "ours and the control plane's, of the new ring");
	munmap(shm, size);
	cr_assert_eq(destroy(&a, IPC_OP_DESTROY_CQ, cq), 0);
	client_close(&a);
}

/* ---- SRQ ---- */

Test(ctl_rollback, create_srq)
{
	struct client a;
	uint32_t pd, srq;

	client_open(&a, true);
	pd = alloc_pd(&a);
	struct trace before = trace_take(&a);

	fdp_fail(FDP_SRQ_CREATE, ENOMEM, 1);
	cr_assert_eq(create_srq(&a, pd, 8, 2, &srq), ENOMEM);
	struct trace after = trace_take(&a);

	trace_same(&before, &after);
	cr_assert_eq(create_srq(&a, pd, 8, 2, &srq), 0, "the same request, the dataplane willing");
	cr_assert_eq(destroy(&a, IPC_OP_DEALLOC_PD, pd), EBUSY, "the SRQ holds its PD");
	cr_assert_eq(destroy(&a, IPC_OP_DESTROY_SRQ, srq), 0);
	cr_assert_eq(destroy(&a, IPC_OP_DEALLOC_PD, pd), 0, "the refused SRQ left no reference");
	client_close(&a);
}

Test(ctl_rollback, modify_srq_limit_keeps_the_old_limit)
{
	struct client a;
	struct ipc_msg m, r;
	uint32_t pd, srq, srqn = 0;

	client_open(&a, true);
	pd = alloc_pd(&a);
	cr_assert_eq(create_srq(&a, pd, 8, 2, &srq), 0);
	for (uint32_t i = 0; i < FDP_SLOTS; i++)
		if (fdp.srq[i] != NULL)
			srqn = i;
	struct ipc_query_srq_rsp old = query_srq(&a, srq);
	struct trace before = trace_take(&a);

	fdp_fail(FDP_SRQ_MODIFY, EBUSY, 1);
	req(&m, IPC_OP_MODIFY_SRQ);
	m.u.req_MODIFY_SRQ.handle = srq;
	m.u.req_MODIFY_SRQ.mask = IBV_SRQ_LIMIT;
	m.u.req_MODIFY_SRQ.srq_limit = 5;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), EBUSY);
	struct trace after = trace_take(&a);
	struct ipc_query_srq_rsp now = query_srq(&a, srq);

	trace_same(&before, &after);
	cr_assert_eq(now.srq_limit, 2);
	cr_assert_eq(memcmp(&now, &old, sizeof(now)), 0, "QUERY_SRQ answers as before");
	cr_assert_eq(fdp.srq[srqn]->srq_limit, 2, "the record the dataplane reads");
	cr_assert_eq(fdp.srq_limit[srqn], 2);

	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), 0, "the same request, the dataplane willing");
	cr_assert_eq(query_srq(&a, srq).srq_limit, 5);
	cr_assert_eq(fdp.srq_limit[srqn], 5);
	client_close(&a);
}

/* ---- AH ---- */

Test(ctl_rollback, create_ah)
{
	struct client a;
	uint32_t pd, ah;

	client_open(&a, true);
	pd = alloc_pd(&a);
	struct trace before = trace_take(&a);

	fdp_fail(FDP_AH_CREATE, EHOSTUNREACH, 1);
	cr_assert_eq(create_ah(&a, pd, &ah), EHOSTUNREACH);
	struct trace after = trace_take(&a);

	trace_same(&before, &after);
	cr_assert_eq(create_ah(&a, pd, &ah), 0, "the same request, the dataplane willing");
	cr_assert_eq(destroy(&a, IPC_OP_DEALLOC_PD, pd), EBUSY, "the AH holds its PD");
	cr_assert_eq(destroy(&a, IPC_OP_DESTROY_AH, ah), 0);
	cr_assert_eq(destroy(&a, IPC_OP_DEALLOC_PD, pd), 0, "the refused AH left no reference");
	client_close(&a);
}

/* ---- QP ---- */

/*
 * A refused QP leaves its CQs and SRQ as they were: unreferenced, and not
 * bound to an lcore (a CQ bound by a refused QP would turn away QPs that
 * share it with a CQ of another lcore).
 */
Test(ctl_rollback, create_qp)
{
	struct client a;
	struct ipc_create_qp_rsp q0, q1, q2, q3;
	uint32_t pd, c1, c2, srq;

	client_open(&a, true);
	pd = alloc_pd(&a);
	c1 = create_cq(&a, 8, 0);
	c2 = create_cq(&a, 8, 0);
	cr_assert_eq(create_srq(&a, pd, 8, 0, &srq), 0);
	cr_assert_eq(create_rc_qp(&a, pd, c2, c2, 0, &q0), 0); /* binds c2 */
	struct trace before = trace_take(&a);

	fdp_fail(FDP_QP_CREATE, ENOMEM, 1);
	/* c1 and the SRQ are unbound: the QP would go to the other lcore */
	cr_assert_eq(create_rc_qp(&a, pd, c1, c1, srq, NULL), ENOMEM);
	struct trace after = trace_take(&a);

	trace_same(&before, &after);
	cr_assert_eq(create_rc_qp(&a, pd, c1, c2, 0, &q1), 0, "c1 is still unbound");
	cr_assert_eq(create_rc_qp(&a, pd, c2, c2, srq, &q2), 0, "the SRQ is still unbound");
	cr_assert_eq(q1.qpn % 2, q0.qpn % 2);
	cr_assert_eq(create_rc_qp(&a, pd, c1, c1, srq, &q3), 0,
		     "the same request, the dataplane willing");
	cr_assert_eq(q3.qpn % 2, q0.qpn % 2);
	cr_assert_eq(destroy(&a, IPC_OP_DESTROY_QP, q0.handle), 0);
	cr_assert_eq(destroy(&a, IPC_OP_DESTROY_QP, q1.handle), 0);
	cr_assert_eq(destroy(&a, IPC_OP_DESTROY_QP, q2.handle), 0);
	cr_assert_eq(destroy(&a, IPC_OP_DESTROY_QP, q3.handle), 0);
	cr_assert_eq(destroy(&a, IPC_OP_DESTROY_SRQ, srq), 0, "the refused QP left no reference");
	cr_assert_eq(destroy(&a, IPC_OP_DESTROY_CQ, c1), 0);
	cr_assert_eq(destroy(&a, IPC_OP_DESTROY_CQ, c2), 0);
	cr_assert_eq(destroy(&a, IPC_OP_DEALLOC_PD, pd), 0);
	cr_assert_eq(ctl_conn_nobjects(a.c), 0);
	client_close(&a);
}

/* A refused modify keeps every attribute QUERY_QP shows, and raises no event. */
Test(ctl_rollback, modify_qp_keeps_the_old_attributes)
{
	const uint32_t init_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				   IBV_QP_ACCESS_FLAGS;
	const uint32_t rtr_mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	const uint32_t rts_mask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				  IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
	static const struct {
		uint32_t mask;
		int err;
	} steps[] = {
		{ init_mask, ENOMEM },
		{ rtr_mask, EAGAIN },
		{ rts_mask, EIO },
		{ IBV_QP_STATE, EBUSY }, /* RTS -> ERR (flush) */
		{ IBV_QP_STATE, ENOMEM }, /* ERR -> RESET (drop the queues) */
	};
	static const uint32_t to[] = { IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPS_ERR,
				       IBV_QPS_RESET };
	struct client a;
	struct ipc_create_qp_rsp q;
	struct ipc_qp_attr at;
	uint32_t pd, cq, s;

	client_open(&a, true);
	pd = alloc_pd(&a);
	cq = create_cq(&a, 8, 0);
	cr_assert_eq(create_rc_qp(&a, pd, cq, cq, 0, &q), 0);
	s = q.qpn - base_cfg().limits.qpn_base;
	memset(&at, 0, sizeof(at));
	at.port_num = 1;
	at.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	at.path_mtu = IBV_MTU_1024;
	at.dest_qp_num = 0x123;
	at.rq_psn = 0x42;
	at.max_dest_rd_atomic = 1;
	at.min_rnr_timer = 12;
	at.ah_attr.is_global = 1;
	at.ah_attr.port_num = 1;
	at.ah_attr.sgid_index = 1;
	at.ah_attr.hop_limit = 64;
	at.ah_attr.dgid[10] = 0xff;
	at.ah_attr.dgid[11] = 0xff;
	at.ah_attr.dgid[12] = 198;
	at.ah_attr.dgid[13] = 18;
	at.ah_attr.dgid[15] = 2;
	at.sq_psn = 0x77;
	at.timeout = 14;
	at.retry_cnt = 7;
	at.rnr_retry = 7;
	at.max_rd_atomic = 1;
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		struct ipc_query_qp_rsp old = query_qp(&a, q.handle), now;
		uint32_t dp_state = fdp.qp_state[s];
		struct trace before = trace_take(&a);

		at.qp_state = to[i];
		fdp_fail(FDP_QP_MODIFY, steps[i].err, 1);
		cr_assert_eq(modify_qp(&a, q.handle, steps[i].mask, &at), steps[i].err,
			     "step %zu", i);
		struct trace after = trace_take(&a);

		trace_same(&before, &after);
		now = query_qp(&a, q.handle);
		cr_assert_eq(memcmp(&now, &old, sizeof(now)), 0,
			     "step %zu: QUERY_QP answers as before the refused modify", i);
		cr_assert_eq(fdp.qp_state[s], dp_state);
		no_event(&a);
		cr_assert_eq(modify_qp(&a, q.handle, steps[i].mask, &at), 0,
			     "step %zu: the same request, the dataplane willing", i);
		cr_assert_eq(query_qp(&a, q.handle).attr.qp_state, to[i]);
		cr_assert_eq(fdp.qp_state[s], to[i]);
	}
	cr_assert_eq(query_qp(&a, q.handle).attr.dest_qp_num, 0x123, "RESET keeps the attributes");
	client_close(&a);
}

/*
 * Issue 16: a destroy the dataplane could not finish (an lcore that was
 * never told, or refused) used to free the rings and the MR's mapping
 * anyway, while the lcore could still write into them. Now the object fails
 * closed into quarantine: the request fails with EIO, the handle is gone,
 * the memory (the QP's rings and its CQs', the MR's mapping) stays mapped
 * for good and is counted, and the PD stays held (its index names the
 * lcore's copy). Every other object and client carries on.
 */
Test(ctl_rollback, a_destroy_the_dataplane_could_not_finish_keeps_the_memory)
{
	struct client a, b;
	struct ipc_create_qp_rsp q0;
	struct ipc_reg_mr_rsp mr;
	struct ctl_stats st;
	struct memfd mem = memfd_new(8192, "kept");
	uint32_t pd, cq, bpd;

	client_open(&a, true);
	client_open(&b, true);
	pd = alloc_pd(&a);
	cq = create_cq(&a, 8, 0);
	cr_assert_eq(create_rc_qp(&a, pd, cq, cq, 0, &q0), 0);
	cr_assert_eq(reg_mr(&a, pd, &mem, 8192, IBV_ACCESS_LOCAL_WRITE, &mr), 0);
	int maps_qp = count_maps("roce-qp"), maps_cq = count_maps("roce-cq");
	int maps_mr = count_maps(TEST_MR_MEMFD);

	fdp_fail(FDP_QP_DESTROY, EIO, 1);
	cr_assert_eq(destroy(&a, IPC_OP_DESTROY_QP, q0.handle), EIO, "told, not hidden");
	cr_assert_eq(count_maps("roce-qp"), maps_qp, "the QP's rings stay mapped");
	cr_assert_eq(destroy(&a, IPC_OP_DESTROY_QP, q0.handle), EINVAL, "the handle is gone");
	cr_assert_eq(destroy(&a, IPC_OP_DESTROY_CQ, cq), 0, "its CQ can go...");
	cr_assert_eq(count_maps("roce-cq"), maps_cq, "...but its ring, which the QP writes, stays");
	fdp_fail(FDP_MR_DESTROY, EIO, 1);
	cr_assert_eq(destroy(&a, IPC_OP_DEREG_MR, mr.handle), EIO);
	cr_assert_eq(count_maps(TEST_MR_MEMFD), maps_mr, "the MR's mapping stays");
	cr_assert_eq(destroy(&a, IPC_OP_DEALLOC_PD, pd), EBUSY, "the PD's index stays taken");
	ctl_get_stats(ctl, &st);
	cr_assert_eq(st.quarantined, 2);
	cr_assert_geq(st.quarantined_bytes, 8192u, "counted with their memory");
	/* every other client is served as before */
	bpd = alloc_pd(&b);
	cr_assert_eq(destroy(&b, IPC_OP_DEALLOC_PD, bpd), 0);
	/* the fake's lcore lets go in the end, as a stalled lcore would: its books balance */
	for (uint32_t i = 0; i < FDP_SLOTS; i++) {
		if (fdp.qp_live[i] || fdp.mr_live[i])
			fdp.live--;
		fdp.qp_live[i] = fdp.mr_live[i] = false;
	}
	memfd_free(&mem);
	client_close(&a);
	client_close(&b);
}

/*
 * Issue 16: an MR key was (slot + 1) << 8 | the slot's generation, so a
 * peer that saw one key could name the next registration of any slot. The
 * low byte is now random (as rxe's), and never the slot's previous one.
 */
Test(ctl_rollback, mr_keys_are_not_guessable_from_the_slot)
{
	struct client a;
	struct memfd mem = memfd_new(4096, "k");
	struct ipc_reg_mr_rsp mr;
	uint8_t last[4096] = { 0 };
	bool seen_slot[4096] = { false }, seen_byte[256] = { false };
	unsigned int repeats = 0, successor = 0, distinct = 0;
	struct ctl_config cfg = base_cfg();
	struct ctl *saved = ctl;
	uint32_t pd;

	ctl = ctl_create(&cfg); /* no dataplane: any number of slots */
	cr_assert_not_null(ctl);
	client_open(&a, true);
	pd = alloc_pd(&a);
	for (int i = 0; i < 2000; i++) {
		cr_assert_eq(reg_mr(&a, pd, &mem, 4096, IBV_ACCESS_LOCAL_WRITE, &mr), 0);
		uint32_t slot = (mr.lkey >> 8) & 4095;
		uint8_t b = (uint8_t)mr.lkey;

		cr_assert_eq(mr.rkey, mr.lkey);
		if (seen_slot[slot]) {
			repeats++;
			cr_assert_neq(b, last[slot], "a slot's next key differs from its last");
			successor += b == (uint8_t)(last[slot] + 1);
		}
		seen_slot[slot] = true;
		last[slot] = b;
		distinct += !seen_byte[b];
		seen_byte[b] = true;
		cr_assert_eq(destroy(&a, IPC_OP_DEREG_MR, mr.handle), 0);
	}
	cr_assert_gt(repeats, 100, "slots were reused (%u)", repeats);
	cr_assert_lt(successor, repeats / 10, "%u of %u keys were the last one + 1", successor,
		     repeats);
	cr_assert_gt(distinct, 200, "the low byte takes most values (%u)", distinct);
	cr_assert_eq(destroy(&a, IPC_OP_DEALLOC_PD, pd), 0);
	memfd_free(&mem);
	client_close(&a);
	ctl_destroy(ctl);
	ctl = saved;
}

/*
 * Issue 16: a registration without a memfd is served by copies into the
 * client's process with the daemon's privileges. It was granted to any
 * process whose IDs were the peer's, a non-dumpable one too (a setuid
 * program that dropped its IDs, holding what it read as root): now only
 * to a process the peer itself could trace (dumpable: its /proc files are
 * the peer's).
 */
Test(ctl_rollback, a_fallback_registration_needs_a_process_its_user_could_trace, .timeout = 20)
{
	struct ipc_reg_mr_rsp mr;
	struct peer p;
	uint32_t pd;

	if (geteuid() != 0) {
		cr_skip_test("needs root: a peer with other IDs");
		return;
	}
	peer_open(&p, 65534, 65534);
	cr_assert_not_null(p.cl.c);
	pd = alloc_pd(&p.cl);
	cr_assert_eq(reg_mr(&p.cl, pd, NULL, 100, IBV_ACCESS_LOCAL_WRITE, &mr), 0,
		     "a process its user could trace");
	cr_assert_geq(fdp.mr[fdp_mr_slot(mr.lkey)].mem_fd, 0);
	cr_assert_eq(destroy(&p.cl, IPC_OP_DEREG_MR, mr.handle), 0);
	peer_do(&p, 'n');
	cr_assert_eq(reg_mr(&p.cl, pd, NULL, 100, IBV_ACCESS_LOCAL_WRITE, NULL), EPERM,
		     "not dumpable: not for its user to reach, so not through us");
	cr_assert_eq(destroy(&p.cl, IPC_OP_DEALLOC_PD, pd), 0);
	peer_close(&p);
}

/*
 * Issue 16: a UD QP's Q_Key with the high bit set (a controlled Q_Key,
 * IBA 10.2.4) was anyone's; Linux gives it only to CAP_NET_RAW
 * (uverbs modify_qp). The WR's own Q_Key with that bit means "the QP's",
 * so refusing it here is enough.
 */
Test(ctl_rollback, a_controlled_qkey_needs_cap_net_raw, .timeout = 20)
{
	struct ipc_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = 0x80010000u };
	const uint32_t mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
	struct ipc_create_qp_rsp q;
	struct ctl_stats st;
	struct client root;
	struct peer p;
	uint32_t pd, cq;

	if (geteuid() != 0) {
		cr_skip_test("needs root: a peer with other IDs");
		return;
	}
	peer_open(&p, 65534, 65534);
	cr_assert_not_null(p.cl.c);
	pd = alloc_pd(&p.cl);
	cq = create_cq(&p.cl, 8, 0);
	cr_assert_eq(create_qp(&p.cl, pd, cq, IBV_QPT_UD, &q), 0);
	cr_assert_eq(modify_qp(&p.cl, q.handle, mask, &a), EPERM, "no CAP_NET_RAW");
	ctl_get_stats(ctl, &st);
	cr_assert_eq(st.qkey_refused, 1);
	a.qkey = 0x1234;
	cr_assert_eq(modify_qp(&p.cl, q.handle, mask, &a), 0, "an ordinary Q_Key");
	cr_assert_eq(destroy(&p.cl, IPC_OP_DESTROY_QP, q.handle), 0);
	cr_assert_eq(destroy(&p.cl, IPC_OP_DESTROY_CQ, cq), 0);
	cr_assert_eq(destroy(&p.cl, IPC_OP_DEALLOC_PD, pd), 0);
	peer_close(&p);
	/* root (this process) may */
	client_open(&root, true);
	pd = alloc_pd(&root);
	cq = create_cq(&root, 8, 0);
	cr_assert_eq(create_qp(&root, pd, cq, IBV_QPT_UD, &q), 0);
	a.qkey = 0x80010000u;
	cr_assert_eq(modify_qp(&root, q.handle, mask, &a), 0, "CAP_NET_RAW");
	cr_assert_eq(destroy(&root, IPC_OP_DESTROY_QP, q.handle), 0);
	client_close(&root);
}

/*
 * Issue 16, authorization and quotas: two unprivileged users share the
 * control plane. Only the users on the allowed list get in; each has its
 * own quota, reported by QUERY_DEVICE as its limits; neither can name the
 * other's objects. (Neither can send as another host: the UD address
 * vector is the daemon's, test/engine ud tests; neither stalls the other's
 * verbs: test/daemon app_iface a_stopped_lcore_holds_only_the_clients_it_serves.)
 */
Test(ctl_rollback, two_users_neither_reaches_the_other_nor_beyond_its_quota, .timeout = 30)
{
	struct ctl_config cfg = base_cfg();
	struct ctl *saved = ctl;
	struct memfd mem = memfd_new(3 * 4096, "q");
	struct ipc_create_qp_rsp qa[2], qb[2];
	struct ipc_reg_mr_rsp mra;
	struct ipc_msg m, r;
	struct ctl_stats st;
	struct peer a, a2, b, c;
	uint32_t pda, pdb, cqa, cqb;

	if (geteuid() != 0) {
		cr_skip_test("needs root: peers with other IDs");
		return;
	}
	cfg.limits.n_lcores = 2;
	cfg.dp_ops = &fdp_ops;
	cfg.dp = &fdp;
	cfg.quota = (struct ctl_quota){ .max_qp = 2, .max_cq = 1, .max_mr = 2,
					.max_mr_bytes = 2 * 4096, .max_conns_per_user = 1 };
	cfg.access.n_uids = 2;
	cfg.access.uids[0] = 65534;
	cfg.access.uids[1] = 65533;
	ctl = ctl_create(&cfg);
	cr_assert_not_null(ctl);

	peer_open(&c, 65532, 65532);
	cr_assert_null(c.cl.c, "a user not on the list is refused");
	peer_open(&a, 65534, 65534);
	peer_open(&b, 65533, 65533);
	cr_assert_not_null(a.cl.c);
	cr_assert_not_null(b.cl.c);
	peer_open(&a2, 65534, 65534);
	cr_assert_null(a2.cl.c, "a's second connection: over its user's quota");
	peer_close(&a2);

	/* the quota is each client's limit, and what QUERY_DEVICE says */
	req(&m, IPC_OP_QUERY_DEVICE);
	cr_assert_eq(call(&a.cl, &m, NULL, 0, &r, NULL), 0);
	cr_assert_eq(r.u.rsp_QUERY_DEVICE.attr.max_qp, 2);
	cr_assert_eq(r.u.rsp_QUERY_DEVICE.attr.max_cq, 1);
	cr_assert_eq(r.u.rsp_QUERY_DEVICE.attr.max_mr, 2);
	cr_assert_eq(r.u.rsp_QUERY_DEVICE.attr.max_mr_size, 2 * 4096);
	pda = alloc_pd(&a.cl);
	pdb = alloc_pd(&b.cl);
	cqa = create_cq(&a.cl, 8, 0);
	cqb = create_cq(&b.cl, 8, 0);
	req(&m, IPC_OP_CREATE_CQ);
	m.u.req_CREATE_CQ.cqe = 8;
	cr_assert_eq(call(&a.cl, &m, NULL, 0, &r, NULL), ENOMEM, "a's one CQ");
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(create_qp(&a.cl, pda, cqa, IBV_QPT_RC, &qa[i]), 0);
		cr_assert_eq(create_qp(&b.cl, pdb, cqb, IBV_QPT_RC, &qb[i]), 0, "b's own quota");
	}
	cr_assert_eq(create_qp(&a.cl, pda, cqa, IBV_QPT_RC, NULL), ENOMEM, "a's third QP");
	cr_assert_eq(reg_mr(&a.cl, pda, &mem, 2 * 4096, IBV_ACCESS_LOCAL_WRITE, &mra), 0);
	cr_assert_eq(reg_mr(&a.cl, pda, &mem, 1, IBV_ACCESS_LOCAL_WRITE, NULL), ENOMEM,
		     "a's registered bytes");
	ctl_get_stats(ctl, &st);
	cr_assert_eq(st.quota_refused, 4);
	cr_assert_eq(st.conns_refused, 1);

	/* b names a's objects: as if they did not exist */
	cr_assert_eq(destroy(&b.cl, IPC_OP_DESTROY_QP, qa[0].handle), EINVAL);
	cr_assert_eq(destroy(&b.cl, IPC_OP_DEREG_MR, mra.handle), EINVAL);
	cr_assert_eq(destroy(&b.cl, IPC_OP_DESTROY_CQ, cqa), EINVAL);
	cr_assert_eq(destroy(&b.cl, IPC_OP_DEALLOC_PD, pda), EINVAL);
	req(&m, IPC_OP_IMPORT_PD);
	m.u.req_IMPORT_PD.handle = pda;
	cr_assert_eq(call(&b.cl, &m, NULL, 0, &r, NULL), EINVAL, "no importing a's PD");
	cr_assert_eq(create_qp(&b.cl, pda, cqb, IBV_QPT_RC, NULL), EINVAL, "nor using it");
	cr_assert_eq(import_mr(&b.cl, mra.handle, pdb, NULL), EINVAL);

	/* freed quota is quota again */
	cr_assert_eq(destroy(&a.cl, IPC_OP_DESTROY_QP, qa[1].handle), 0);
	cr_assert_eq(create_qp(&a.cl, pda, cqa, IBV_QPT_RC, &qa[1]), 0);
	cr_assert_eq(destroy(&a.cl, IPC_OP_DEREG_MR, mra.handle), 0);
	cr_assert_eq(reg_mr(&a.cl, pda, &mem, 4096, IBV_ACCESS_LOCAL_WRITE, &mra), 0);
	cr_assert_eq(destroy(&a.cl, IPC_OP_DEREG_MR, mra.handle), 0);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(destroy(&a.cl, IPC_OP_DESTROY_QP, qa[i].handle), 0);
		cr_assert_eq(destroy(&b.cl, IPC_OP_DESTROY_QP, qb[i].handle), 0);
	}
	peer_close(&a);
	peer_close(&b);
	peer_close(&c);
	ctl_destroy(ctl);
	ctl = saved;
	memfd_free(&mem);
}
