/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target for lib/ctl's request handlers (ctl_conn_handle(), the
 * daemon's own path for every IPC request) with lib/ipc's validation in
 * front, as ctl_server.c does, and a fake dataplane that keeps what it is
 * given (as the daemon does), refuses or defers on command.
 *
 * One control plane lives across inputs, and so does client B, a bystander
 * holding a PD, a CQ and an MR (its shared memory put back after each
 * input, itself rebuilt after one in 16). Per input: client A is hostile
 * (the input is its program). Commands: a request from A (any op, any body; handles taken from
 * A's or B's earlier answers patched in; a memfd of any size and seals, an
 * eventfd, a socket or nothing attached), a write of any bytes into shared
 * memory the daemon handed out (rings of CQs/QPs/SRQs, MR memfds), the
 * dataplane refusing or deferring its next call, deferred answers coming
 * back, A's connection closed and opened again.
 *
 * Invariants besides "no crash, no out-of-bounds access" (ASan/UBSan):
 *  - every answer is well-formed: same op, exact length, a status that is
 *    0 or an errno, no descriptors with an error;
 *  - B's objects are B's: A never changes B's object count;
 *  - A stays inside its quota (object count);
 *  - when A is gone and every deferred call answered, the control plane
 *    and the dataplane hold B's objects only (no destroy of one the
 *    dataplane never had); when B is gone too, nothing; no descriptor
 *    leaked (the count of open ones is what it was before the input).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <arpa/inet.h>

#include "ctl.h"

#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "invariant failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); abort(); } } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_HANDLES 32u
#define MAX_MAPS 16u
#define MAX_TOKENS 8u
#define QUOTA 8u

/* ---- the fake dataplane ---- */

struct fdp {
	int live;            /* objects it holds, every kind */
	int bad_destroys;    /* destroys of objects it never had */
	int refuse;          /* errno for the next create/modify, 0: none */
	bool defer;          /* defer the next call */
	uint64_t tokens[MAX_TOKENS];
	int pending_rc[MAX_TOKENS];
	uint8_t kind[MAX_TOKENS];  /* enum fdp_kind of the deferred call */
	unsigned int ntokens;
	bool rekey;
};

static struct fdp fdp;
static struct ctl *ctl;
static bool trace; /* FUZZ_CTL_TRACE set: print every request and its status */

enum fdp_kind { FDP_CREATE, FDP_MODIFY, FDP_DESTROY };

/* A deferred callback answers later with @p rc (a destroy: its own effect applied now). */
static bool
fdp_deferred(int rc, enum fdp_kind kind)
{
	if (!fdp.defer || fdp.ntokens == MAX_TOKENS)
		return false;
	uint64_t t = ctl_dp_defer(ctl);

	if (t == CTL_DP_TOKEN_NONE)
		return false;
	fdp.defer = false;
	fdp.pending_rc[fdp.ntokens] = rc;
	fdp.kind[fdp.ntokens] = (uint8_t)kind;
	fdp.tokens[fdp.ntokens++] = t;
	return true;
}

static int
fdp_create(void)
{
	int rc = fdp.refuse;

	fdp.refuse = 0;
	if (rc == 0)
		fdp.live++;
	/* a deferred create that will fail: its object was never taken */
	if (fdp_deferred(rc, FDP_CREATE))
		return 0;
	return rc;
}

static int
fdp_modify(void)
{
	int rc = fdp.refuse;

	fdp.refuse = 0;
	if (fdp_deferred(rc, FDP_MODIFY))
		return 0;
	return rc;
}

static void
fdp_destroy(void)
{
	if (fdp.live <= 0) {
		fdp.bad_destroys++;
		return;
	}
	fdp.live--;
	(void)fdp_deferred(0, FDP_DESTROY);
}

static int
f_mr_create(void *dp, struct ctl_mr_info *mr)
{
	(void)dp;
	if (fdp.rekey)
		mr->lkey = mr->rkey = (mr->lkey & ~UINT32_C(0xff)) | ((mr->lkey + 1) & 0xff);
	return fdp_create();
}
static void f_mr_destroy(void *dp, const struct ctl_mr_info *mr) { (void)dp; (void)mr; fdp_destroy(); }
static int f_cq_create(void *dp, const struct ctl_cq_info *cq) { (void)dp; (void)cq; return fdp_create(); }
static int
f_cq_resize(void *dp, const struct ctl_cq_info *cq, const struct ctl_cq_info *old)
{
	(void)dp;
	(void)cq;
	(void)old;
	return fdp_modify();
}
static void f_cq_destroy(void *dp, const struct ctl_cq_info *cq) { (void)dp; (void)cq; fdp_destroy(); }
static int f_srq_create(void *dp, const struct ctl_srq_info *s) { (void)dp; (void)s; return fdp_create(); }
static int f_srq_modify(void *dp, const struct ctl_srq_info *s) { (void)dp; (void)s; return fdp_modify(); }
static void f_srq_destroy(void *dp, const struct ctl_srq_info *s) { (void)dp; (void)s; fdp_destroy(); }
static int f_ah_create(void *dp, struct ctl_ah_info *ah) { (void)dp; (void)ah; return fdp_create(); }
static void f_ah_destroy(void *dp, const struct ctl_ah_info *ah) { (void)dp; (void)ah; fdp_destroy(); }
static int f_qp_create(void *dp, const struct ctl_qp_info *qp) { (void)dp; (void)qp; return fdp_create(); }
static int
f_qp_modify(void *dp, const struct ctl_qp_info *qp, const struct qp_sem *next,
	    const struct qp_sem_effects *fx)
{
	(void)dp;
	(void)qp;
	(void)next;
	(void)fx;
	return fdp_modify();
}
static void f_qp_destroy(void *dp, const struct ctl_qp_info *qp) { (void)dp; (void)qp; fdp_destroy(); }

static const struct ctl_dataplane_ops fdp_ops = {
	.mr_create = f_mr_create, .mr_destroy = f_mr_destroy,
	.cq_create = f_cq_create, .cq_resize = f_cq_resize, .cq_destroy = f_cq_destroy,
	.srq_create = f_srq_create, .srq_modify = f_srq_modify, .srq_destroy = f_srq_destroy,
	.ah_create = f_ah_create, .ah_destroy = f_ah_destroy,
	.qp_create = f_qp_create, .qp_modify = f_qp_modify, .qp_destroy = f_qp_destroy,
};

/* ---- clients ---- */

struct client {
	struct ctl_conn *c;
	int sp[2];
	bool pending;
};

struct fuzz {
	const uint8_t *p, *end;
	struct client a, b;
	uint32_t handles[MAX_HANDLES];
	unsigned int nhandles;
	struct { void *addr; size_t len; } maps[MAX_MAPS];
	unsigned int nmaps;
	uint32_t seq;
	bool b_scribbled;         /* a write into B's shared memory */
};

/*
 * The bystander lives across inputs (its connection and setup were half of
 * an execution): what it left in struct fuzz after its setup (its handles,
 * maps, the request sequence) is where every input starts from, and what
 * an input writes into its shared memory is put back after it (as a fresh
 * B's: lib/ctl reads that memory only in requests on B's objects, and tears
 * them down without reading it). It is torn down (the checks: nothing left,
 * the dataplane got everything back) and set up again after one input in
 * 16 (chosen by the input's last byte, so a finding replays).
 */
static struct {
	bool live;
	struct fuzz f;            /* F as B's setup left it */
	void *saved[MAX_MAPS];    /* its maps' contents then */
	uint32_t objects;         /* B's objects (ctl_conn_nobjects) */
	uint32_t ctl_objects;     /* the control plane's (ctl_nobjects): B's */
	int dp_live;              /* the dataplane's (fdp.live): B's */
} bys;

static struct fuzz F;
static union { struct ipc_msg m; uint8_t buf[1 << 16]; } reqbuf, rspbuf;

static uint8_t
take8(struct fuzz *f)
{
	return f->p < f->end ? *f->p++ : 0;
}

static uint32_t
take32(struct fuzz *f)
{
	uint32_t v = 0;

	for (int i = 0; i < 4; i++)
		v |= (uint32_t)take8(f) << (8 * i);
	return v;
}

/*
 * Descriptors open below FD_SCAN: one poll() (POLLNVAL marks a closed
 * one) instead of reading /proc/self/fd. Descriptors are allocated lowest
 * first and this process never holds near FD_SCAN at once (the tables are
 * a few dozen objects), so a leaked one is always below it.
 */
#define FD_SCAN 1024

static int
count_fds(void)
{
	static struct pollfd pfd[FD_SCAN];
	int n = 0;

	for (int i = 0; i < FD_SCAN; i++)
		pfd[i] = (struct pollfd){ .fd = i };
	CHECK(poll(pfd, FD_SCAN, 0) >= 0);
	for (int i = 0; i < FD_SCAN; i++)
		n += !(pfd[i].revents & POLLNVAL);
	CHECK(n < FD_SCAN / 2);
	return n;
}

static void
keep_handle(struct fuzz *f, uint32_t h)
{
	f->handles[f->nhandles++ % MAX_HANDLES] = h;
}

/* Map a descriptor the daemon handed out, to scribble on it later. */
static void
keep_map(struct fuzz *f, int fd)
{
	struct stat st;

	if (f->nmaps == MAX_MAPS || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
	    st.st_size > (64 << 20))
		return;
	void *a = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	if (a == MAP_FAILED)
		return;
	f->maps[f->nmaps].addr = a;
	f->maps[f->nmaps++].len = (size_t)st.st_size;
}

static void
check_answer(struct fuzz *f, const struct ipc_msg *req, const struct ipc_msg *rsp, int *rfds,
	     unsigned int rn)
{
	const struct ipc_op_desc *d = ipc_op_desc(req->hdr.op);

	if (trace)
		fprintf(stderr, "%s -> %d\n", d->name, rsp->hdr.status);
	CHECK(rsp->hdr.op == req->hdr.op && rsp->hdr.seq == req->hdr.seq);
	CHECK(rsp->hdr.len == sizeof(rsp->hdr) + d->rsp_size);
	CHECK(rsp->hdr.status >= 0 && rsp->hdr.status < 4096);
	CHECK(rn <= IPC_MAX_FDS && rn <= d->rsp_fds);
	if (rsp->hdr.status != 0)
		CHECK(rn == 0);
	else if (d->rsp_size >= 4)
		keep_handle(f, rsp->u.rsp_ALLOC_PD.handle); /* every create answer starts with it */
	for (unsigned int i = 0; i < rn; i++) {
		CHECK(fcntl(rfds[i], F_GETFD) >= 0);
		keep_map(f, rfds[i]);
		close(rfds[i]);
	}
}

/* A descriptor for a request: a memfd (any size, seals), an eventfd, a socket. */
static int
fuzz_fd(struct fuzz *f)
{
	uint8_t k = take8(f);
	int fd = -1;

	switch (k & 3) {
	case 0: {
		fd = memfd_create("fuzz-mr", MFD_ALLOW_SEALING | MFD_CLOEXEC);
		CHECK(fd >= 0);
		CHECK(ftruncate(fd, (off_t)(take8(f) & 0x3f) << 12) == 0);
		if (k & 4)
			(void)fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK);
		if (k & 8)
			(void)fcntl(fd, F_ADD_SEALS, F_SEAL_GROW);
		if (k & 16)
			(void)fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE);
		if (k & 32)
			(void)fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL);
		break;
	}
	case 1:
		fd = eventfd(0, EFD_CLOEXEC);
		break;
	case 2: {
		int sp[2];

		CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) == 0);
		close(sp[1]);
		fd = sp[0];
		break;
	}
	default:
		fd = open("/dev/null", O_RDWR | O_CLOEXEC);
		break;
	}
	CHECK(fd >= 0);
	return fd;
}

static void
answer_pending(struct fuzz *f, struct client *cl, const struct ipc_msg *req)
{
	int rfds[IPC_MAX_FDS];
	unsigned int rn = 0;

	if (!cl->pending || !ctl_conn_answer(cl->c, &rspbuf.m, rfds, &rn))
		return;
	cl->pending = false;
	if (req != NULL)
		check_answer(f, req, &rspbuf.m, rfds, rn);
	else
		for (unsigned int i = 0; i < rn; i++)
			close(rfds[i]);
}

static struct ipc_msg last_req_a;

/*
 * One request from @p cl: op (the caller took it), patch flags, body
 * (length byte and bytes), handle patches (flags bits 0-2: how many; each
 * a word index of the body and the pick of a handle of earlier answers),
 * a descriptor (bit 6), a lying length (bit 7).
 */
static void
cmd_request(struct fuzz *f, struct client *cl, uint8_t op_sel)
{
	struct ipc_msg *m = &reqbuf.m;
	int fds[IPC_MAX_FDS], rfds[IPC_MAX_FDS];
	unsigned int nfds = 0, rn = 0;
	uint32_t op = op_sel % IPC_OP_MAX;
	const struct ipc_op_desc *d = ipc_op_desc(op);
	uint8_t patch = take8(f);

	if (d == NULL || d->name == NULL)
		return;
	ipc_req_init(m, (enum ipc_op)op, ++f->seq);
	/* the body: a length byte, that many bytes from the start, zeros after */
	uint32_t n = take8(f);

	memset(&m->u, 0, d->req_size);
	for (uint32_t i = 0; i < n; i++) {
		uint8_t v = take8(f);

		if (i < d->req_size)
			m->u.raw[i] = v;
	}
	/* up to seven 32-bit words of the body replaced by handles seen in answers */
	for (unsigned int k = 0; k < (patch & 7u); k++) {
		uint32_t w = take8(f), pick = take8(f);

		if (f->nhandles == 0 || d->req_size < 4)
			continue;
		uint32_t h = f->handles[pick % (f->nhandles < MAX_HANDLES ? f->nhandles : MAX_HANDLES)];

		memcpy(m->u.raw + (w % (d->req_size / 4)) * 4, &h, 4);
	}
	if (d->req_fds && (patch & 0x40))
		fds[nfds++] = fuzz_fd(f);
	m->hdr.nfds = nfds;
	if (patch & 0x80)
		m->hdr.len = take32(f); /* a lying length: lib/ipc refuses, the server disconnects */
	if (ipc_msg_check(m, sizeof(m->hdr) + d->req_size, nfds, IPC_REQUEST) != 0) {
		for (unsigned int i = 0; i < nfds; i++)
			close(fds[i]);
		return;
	}
	int rc = ctl_conn_handle(cl->c, m, fds, nfds, &rspbuf.m, rfds, &rn);

	if (rc == CTL_PENDING) {
		CHECK(!cl->pending);
		cl->pending = true;
		if (cl == &f->a)
			last_req_a = *m;
		return;
	}
	CHECK(rc == 0);
	check_answer(f, m, &rspbuf.m, rfds, rn);
}

static void
cmd_scribble(struct fuzz *f)
{
	if (f->nmaps == 0)
		return;
	unsigned int i = take8(f) % f->nmaps;
	size_t off = take32(f) % f->maps[i].len, n = take8(f) % 65;

	if (i < bys.f.nmaps)
		f->b_scribbled = true;

	for (size_t k = 0; k < n && off + k < f->maps[i].len; k++)
		((uint8_t *)f->maps[i].addr)[off + k] = take8(f);
}

static void
finish_deferred(struct fuzz *f, unsigned int n, int rc_override)
{
	while (n-- && fdp.ntokens) {
		unsigned int i = --fdp.ntokens;
		int rc = fdp.pending_rc[i];

		/* the dataplane changes its mind: a create it took fails after all */
		if (rc_override >= 0 && fdp.kind[i] != FDP_DESTROY) {
			if (fdp.kind[i] == FDP_CREATE && rc == 0)
				fdp.live--;
			rc = rc_override;
		}

		/*
		 * (the token before the call: the continuation may call the
		 * dataplane again, which may defer again into this slot)
		 */
		uint64_t t = fdp.tokens[i];

		CHECK(ctl_dp_done(ctl, t, rc) == 0);
		CHECK(ctl_dp_done(ctl, t, rc) == -ENOENT); /* answered: the token is spent */
	}
	answer_pending(f, &f->a, &last_req_a);
	answer_pending(f, &f->b, NULL);
}

static void
client_open(struct fuzz *f, struct client *cl)
{
	CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, cl->sp) == 0);
	cl->c = ctl_conn_open(ctl, cl->sp[0]);
	CHECK(cl->c != NULL);
	cl->pending = false;
	(void)f;
}

static void
client_close(struct client *cl)
{
	if (cl->c != NULL)
		ctl_conn_close(cl->c);
	cl->c = NULL;
	close(cl->sp[0]);
	close(cl->sp[1]);
}

/* B's request with a fixed body; @return the answer's first word (a handle), 0 on error. */
static uint32_t
b_call(struct fuzz *f, enum ipc_op op, const void *body, size_t len, int fd)
{
	struct ipc_msg *m = &reqbuf.m;
	int fds[1] = { fd }, rfds[IPC_MAX_FDS];
	unsigned int rn = 0;

	ipc_req_init(m, op, ++f->seq);
	memset(&m->u, 0, ipc_op_desc(op)->req_size);
	memcpy(&m->u, body, len);
	m->hdr.nfds = fd >= 0;
	CHECK(ctl_conn_handle(f->b.c, m, fds, fd >= 0, &rspbuf.m, rfds, &rn) == 0);
	check_answer(f, m, &rspbuf.m, rfds, rn);
	return rspbuf.m.hdr.status == 0 ? rspbuf.m.u.rsp_ALLOC_PD.handle : 0;
}

static void
b_setup(struct fuzz *f)
{
	struct ipc_open_device_req od;
	struct ipc_alloc_pd_req pd = { .user_handle = 1 };
	struct ipc_create_cq_req cq;
	struct ipc_reg_mr_req mr;
	uint32_t pdh;

	memset(&od, 0, sizeof(od));
	strcpy(od.name, "dpdk_roce0");
	b_call(f, IPC_OP_OPEN_DEVICE, &od, sizeof(od), -1);
	pdh = b_call(f, IPC_OP_ALLOC_PD, &pd, sizeof(pd), -1);
	memset(&cq, 0, sizeof(cq));
	cq.cqe = 4;
	cq.channel = IPC_HANDLE_NONE;
	b_call(f, IPC_OP_CREATE_CQ, &cq, sizeof(cq), -1);
	int mfd = memfd_create("fuzz-b", MFD_ALLOW_SEALING | MFD_CLOEXEC);

	CHECK(mfd >= 0 && ftruncate(mfd, 4096) == 0);
	CHECK(fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK) == 0);
	memset(&mr, 0, sizeof(mr));
	mr.pd = pdh;
	mr.addr = 0x10000;
	mr.length = 4096;
	mr.access = 1; /* IBV_ACCESS_LOCAL_WRITE */
	b_call(f, IPC_OP_REG_MR, &mr, sizeof(mr), mfd);
}

static int
LLVMFuzzerInitialize_(void)
{
	struct ctl_config cfg;
	uint32_t ip;
	static const uint8_t mac[6] = { 0x02, 0x00, 0xc6, 0x12, 0x00, 0x01 };

	trace = getenv("FUZZ_CTL_TRACE") != NULL;
	inet_pton(AF_INET, "198.18.0.1", &ip);
	ctl_config_default(&cfg, "dpdk_roce0", mac, ip);
	cfg.limits.n_lcores = 2;
	cfg.limits.max_flows = 16; /* RAW_PACKET QPs and CREATE_FLOW's rule checks reachable */
	/*
	 * Tables of 4 quotas per kind (A, B, and A's earlier connections whose
	 * teardown a deferred destroy holds): lib/ctl's teardown scans a table
	 * per object it destroys, and the defaults' thousands of slots made
	 * that most of an execution. Full tables are one more path fuzzed.
	 */
	cfg.limits.max_pd = cfg.limits.max_mr = cfg.limits.max_channels = 4 * QUOTA;
	cfg.limits.max_cq = cfg.limits.max_qp = cfg.limits.max_srq = 4 * QUOTA;
	cfg.limits.max_ah = cfg.limits.max_mw = 4 * QUOTA;
	cfg.quota = (struct ctl_quota){ .max_pd = QUOTA, .max_mr = QUOTA, .max_cq = QUOTA,
					.max_qp = QUOTA, .max_srq = QUOTA, .max_ah = QUOTA,
					.max_channels = QUOTA, .max_mr_bytes = 1u << 20,
					.max_flows = QUOTA };
	cfg.dp_ops = &fdp_ops;
	cfg.dp = &fdp;
	ctl = ctl_create(&cfg);
	CHECK(ctl != NULL);
	return 0;
}

/* Open B and make its objects; F then holds B's state (bys.f). */
static void
bystander_setup(struct fuzz *f)
{
	memset(f, 0, sizeof(*f));
	memset(&fdp, 0, sizeof(fdp));
	client_open(f, &f->b);
	b_setup(f);
	bys.f = *f;
	for (unsigned int i = 0; i < f->nmaps; i++) {
		bys.saved[i] = malloc(f->maps[i].len);
		CHECK(bys.saved[i] != NULL);
		memcpy(bys.saved[i], f->maps[i].addr, f->maps[i].len);
	}
	bys.objects = ctl_conn_nobjects(f->b.c);
	bys.ctl_objects = ctl_nobjects(ctl);
	bys.dp_live = fdp.live;
	bys.live = true;
}

/* Close B: then the control plane holds nothing, the dataplane got all back. */
static void
bystander_teardown(struct fuzz *f)
{
	client_close(&f->b);
	finish_deferred(f, MAX_TOKENS, -1);
	CHECK(ctl_dp_inflight(ctl) == 0);
	CHECK(ctl_nobjects(ctl) == 0);
	CHECK(fdp.live == 0 && fdp.bad_destroys == 0);
	for (unsigned int i = 0; i < bys.f.nmaps; i++) {
		munmap(bys.f.maps[i].addr, bys.f.maps[i].len);
		free(bys.saved[i]);
	}
	bys.live = false;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz *f = &F;
	int fds_before;

	if (ctl == NULL)
		LLVMFuzzerInitialize_();
	if (!bys.live)
		bystander_setup(f);
	fds_before = count_fds();
	*f = bys.f;
	memset(&fdp, 0, sizeof(fdp));
	fdp.live = bys.dp_live;
	f->p = data;
	f->end = data + size;
	client_open(f, &f->a);
	uint32_t b_objects = bys.objects;

	fdp.rekey = size > 0 && (data[0] & 1);
	for (unsigned int steps = 0; f->p < f->end && steps < 512; steps++) {
		uint8_t c = take8(f);

		switch (c & 7) {
		case 0:
		case 1:
		case 2:
		case 3:
			if (!f->a.pending)
				cmd_request(f, &f->a, take8(f));
			break;
		case 4:
			cmd_scribble(f);
			break;
		case 5: {
			static const int errs[] = { ENOMEM, EINVAL, EIO, EAGAIN, EBUSY, ENOSPC };

			if (c & 8)
				fdp.defer = true;
			else
				fdp.refuse = errs[(c >> 4) % 6];
			break;
		}
		case 6:
			finish_deferred(f, 1 + (c >> 6), (c & 8) ? EIO : -1);
			break;
		default:
			if (f->a.pending)
				finish_deferred(f, MAX_TOKENS, -1);
			client_close(&f->a);
			client_open(f, &f->a);
			break;
		}
		CHECK(ctl_conn_nobjects(f->b.c) == b_objects);
		CHECK(ctl_conn_nobjects(f->a.c) <= 8 * QUOTA);
	}
	fdp.refuse = 0;
	fdp.defer = false;
	finish_deferred(f, MAX_TOKENS, -1);
	CHECK(ctl_conn_nobjects(f->b.c) == b_objects);
	client_close(&f->a);
	finish_deferred(f, MAX_TOKENS, -1);
	/* A gone: only B's objects are left, in the control plane and the dataplane */
	CHECK(ctl_dp_inflight(ctl) == 0);
	CHECK(ctl_conn_nobjects(f->b.c) == b_objects);
	CHECK(ctl_nobjects(ctl) == bys.ctl_objects);
	CHECK(fdp.live == bys.dp_live && fdp.bad_destroys == 0);
	for (unsigned int i = bys.f.nmaps; i < f->nmaps; i++)
		munmap(f->maps[i].addr, f->maps[i].len);
	if (size == 0 || (data[size - 1] & 15) == 15) {
		bystander_teardown(f);
		bystander_setup(f);
	} else if (f->b_scribbled) {
		for (unsigned int i = 0; i < bys.f.nmaps; i++)
			memcpy(bys.f.maps[i].addr, bys.saved[i], bys.f.maps[i].len);
	}
	CHECK(count_fds() == fds_before);
	return 0;
}
