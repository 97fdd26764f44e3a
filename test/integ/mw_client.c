/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory windows between two lab hosts, for test_integ (issue 19).
 *
 *   mw_client server        on one host: an MR allowing MW binding, a type 1
 *                           window bound with ibv_bind_mw over one part of it
 *                           and a type 2 window bound with IBV_WR_BIND_MW over
 *                           another; sends their keys to the client, checks
 *                           what the client wrote (and that nothing outside
 *                           the windows changed), then invalidates the type 2
 *                           window with IBV_WR_LOCAL_INV; prints "mw server: OK"
 *   mw_client client IP     on the other host: RDMA WRITE and READ through both
 *                           windows, then a WRITE through the invalidated type
 *                           2 window and one past the type 1 window's end: each
 *                           completes with IBV_WC_REM_ACCESS_ERR (the responder's
 *                           NAK; a new QP for the second, the first went to the
 *                           error state); prints "mw client: OK"
 *
 * QPNs, GIDs and keys go over TCP port 18515 (as ibv_rc_pingpong's). Every
 * wait has a deadline; exit 0 on success, 1 with a message otherwise.
 */
#include "verbs_client.h"

#define PORT 18515
#define BUF_LEN 65536
#define W1_OFF 4096       /* type 1 window: [W1_OFF, W1_OFF + W_LEN) of the server's buffer */
#define W2_OFF 32768      /* type 2 window */
#define W_LEN 8192

/* What the two sides exchange (host byte order: both ends are this program). */
struct info {
	uint32_t qpn[2];
	union ibv_gid gid;
	uint64_t addr1, addr2;
	uint32_t rkey1, rkey2;
};

/* ---- verbs ---- */

/* The device and one buffer registered with @p access. */
static uint8_t *
buf_reg(struct dev *d, int access, struct ibv_mr **mr)
{
	uint8_t *buf = aligned_alloc(4096, BUF_LEN);

	if (buf == NULL)
		fail("no memory");
	memset(buf, 0, BUF_LEN);
	*mr = ibv_reg_mr(d->pd, buf, BUF_LEN, access);
	if (*mr == NULL)
		fail("ibv_reg_mr: %s", strerror(errno));
	return buf;
}

/* Post @p wr signaled; @return its completion's status. */
static enum ibv_wc_status
run(struct dev *d, struct ibv_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_wc wc;

	post(qp, wr);
	wc = wait_wc(d->cq);
	if (wc.wr_id != wr->wr_id)
		fail("completion of wr %llu, expected %llu", (unsigned long long)wc.wr_id,
		     (unsigned long long)wr->wr_id);
	return wc.status;
}

/* ---- the two sides ---- */

static int
server(void)
{
	struct dev d;
	struct info me = { 0 }, peer;
	struct ibv_qp *qp[2];
	struct ibv_mw *mw1, *mw2;
	struct ibv_mr *mr;
	uint8_t *buf;
	int fd;
	char go;

	dev_open(&d);
	buf = buf_reg(&d, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND, &mr);
	mw1 = ibv_alloc_mw(d.pd, IBV_MW_TYPE_1);
	mw2 = ibv_alloc_mw(d.pd, IBV_MW_TYPE_2);
	if (mw1 == NULL || mw2 == NULL)
		fail("ibv_alloc_mw: %s", strerror(errno));
	qp[0] = qp_new(&d);
	qp[1] = qp_new(&d);
	fd = vc_tcp_accept(PORT);
	vc_xfer(fd, &peer, sizeof(peer), 0);
	qp_connect(qp[0], peer.qpn[0], &peer.gid);
	qp_connect(qp[1], peer.qpn[1], &peer.gid);

	/* type 1: ibv_bind_mw; type 2: a BIND_MW work request; both on QP 0 */
	struct ibv_mw_bind mb = {
		.wr_id = 1, .send_flags = IBV_SEND_SIGNALED,
		.bind_info = { .mr = mr, .addr = (uintptr_t)buf + W1_OFF, .length = W_LEN,
			       .mw_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ },
	};
	if (ibv_bind_mw(qp[0], mw1, &mb))
		fail("ibv_bind_mw: %s", strerror(errno));
	struct ibv_wc wc = wait_wc(d.cq);
	if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_BIND_MW)
		fail("type 1 bind: %s, opcode %d", ibv_wc_status_str(wc.status), wc.opcode);
	struct ibv_send_wr b = { .wr_id = 2, .opcode = IBV_WR_BIND_MW };
	b.bind_mw.mw = mw2;
	b.bind_mw.rkey = ibv_inc_rkey(mw2->rkey);
	b.bind_mw.bind_info = mb.bind_info;
	b.bind_mw.bind_info.addr = (uintptr_t)buf + W2_OFF;
	b.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
	if (run(&d, qp[0], &b) != IBV_WC_SUCCESS)
		fail("type 2 bind failed");
	fill(buf + W1_OFF, W_LEN, 7); /* what the client READs */

	me.qpn[0] = qp[0]->qp_num;
	me.qpn[1] = qp[1]->qp_num;
	me.gid = d.gid;
	me.addr1 = (uintptr_t)buf + W1_OFF;
	me.rkey1 = mw1->rkey;
	me.addr2 = (uintptr_t)buf + W2_OFF;
	me.rkey2 = b.bind_mw.rkey;
	vc_xfer(fd, &me, sizeof(me), 1);

	vc_xfer(fd, &go, 1, 0); /* the client wrote through both windows */
	expect_fill(buf + W1_OFF + 4096, 4096, 1, "WRITE through the type 1 window");
	expect_fill(buf + W2_OFF, 6000, 2, "WRITE through the type 2 window");
	for (size_t i = 0; i < BUF_LEN; i++)
		if ((i < W1_OFF || i >= W1_OFF + W_LEN) && (i < W2_OFF || i >= W2_OFF + 6000) &&
		    buf[i] != 0)
			fail("byte %zu outside the windows changed", i);
	struct ibv_send_wr inv = { .wr_id = 3, .opcode = IBV_WR_LOCAL_INV,
				   .invalidate_rkey = me.rkey2 };
	wc.status = run(&d, qp[0], &inv);
	if (wc.status != IBV_WC_SUCCESS)
		fail("LOCAL_INV: %s", ibv_wc_status_str(wc.status));
	vc_xfer(fd, &go, 1, 1);
	vc_xfer(fd, &go, 1, 0); /* the client's violations are done */
	if (ibv_dereg_mr(mr) != EINVAL)
		fail("ibv_dereg_mr with a bound window did not fail with EINVAL");
	if (ibv_dealloc_mw(mw1) || ibv_dealloc_mw(mw2))
		fail("ibv_dealloc_mw: %s", strerror(errno));
	if (ibv_destroy_qp(qp[0]) || ibv_destroy_qp(qp[1]) || ibv_dereg_mr(mr) ||
	    ibv_destroy_cq(d.cq) || ibv_dealloc_pd(d.pd) || ibv_close_device(d.ctx))
		fail("teardown: %s", strerror(errno));
	printf("mw server: OK\n");
	return 0;
}

static int
client(const char *ip)
{
	struct dev d;
	struct info me = { 0 }, peer;
	struct ibv_qp *qp[2];
	enum ibv_wc_status st;
	struct ibv_mr *mr;
	uint8_t *buf;
	char go = 'g';
	int fd;

	dev_open(&d);
	buf = buf_reg(&d, IBV_ACCESS_LOCAL_WRITE, &mr);
	qp[0] = qp_new(&d);
	qp[1] = qp_new(&d);
	me.qpn[0] = qp[0]->qp_num;
	me.qpn[1] = qp[1]->qp_num;
	me.gid = d.gid;
	fd = vc_tcp_connect(ip, PORT);
	vc_xfer(fd, &me, sizeof(me), 1);
	vc_xfer(fd, &peer, sizeof(peer), 0);
	qp_connect(qp[0], peer.qpn[0], &peer.gid);
	qp_connect(qp[1], peer.qpn[1], &peer.gid);

	struct ibv_sge sg = { (uintptr_t)buf, 4096, mr->lkey };
	struct ibv_send_wr w = { .wr_id = 1, .sg_list = &sg, .num_sge = 1,
				 .opcode = IBV_WR_RDMA_WRITE,
				 .wr.rdma = { peer.addr1 + 4096, peer.rkey1 } };
	fill(buf, 4096, 1);
	if ((st = run(&d, qp[0], &w)) != IBV_WC_SUCCESS)
		fail("WRITE through the type 1 window: %s", ibv_wc_status_str(st));
	w = (struct ibv_send_wr){ .wr_id = 2, .sg_list = &sg, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_READ, .wr.rdma = { peer.addr1, peer.rkey1 } };
	memset(buf, 0, 4096);
	if ((st = run(&d, qp[0], &w)) != IBV_WC_SUCCESS)
		fail("READ through the type 1 window: %s", ibv_wc_status_str(st));
	expect_fill(buf, 4096, 7, "READ through the type 1 window");
	/* the type 2 window is the server's QP 0's (type 2B): through our QP 0 */
	fill(buf, 6000, 2);
	sg.length = 6000;
	w = (struct ibv_send_wr){ .wr_id = 3, .sg_list = &sg, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE, .wr.rdma = { peer.addr2, peer.rkey2 } };
	if ((st = run(&d, qp[0], &w)) != IBV_WC_SUCCESS)
		fail("WRITE through the type 2 window: %s", ibv_wc_status_str(st));
	vc_xfer(fd, &go, 1, 1);
	vc_xfer(fd, &go, 1, 0); /* the server invalidated the type 2 window */

	/* violations: the invalidated key, then (new QP) past the type 1 window */
	sg.length = 64;
	w = (struct ibv_send_wr){ .wr_id = 4, .sg_list = &sg, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE, .wr.rdma = { peer.addr2, peer.rkey2 } };
	if ((st = run(&d, qp[0], &w)) != IBV_WC_REM_ACCESS_ERR)
		fail("WRITE through the invalidated window: %s", ibv_wc_status_str(st));
	w = (struct ibv_send_wr){ .wr_id = 5, .sg_list = &sg, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE,
				  .wr.rdma = { peer.addr1 + W_LEN - 32, peer.rkey1 } };
	if ((st = run(&d, qp[1], &w)) != IBV_WC_REM_ACCESS_ERR)
		fail("WRITE past the type 1 window: %s", ibv_wc_status_str(st));
	vc_xfer(fd, &go, 1, 1);
	close(fd);
	printf("mw client: OK\n");
	return 0;
}

int
main(int argc, char **argv)
{
	vc_name = "mw_client";
	if (argc == 2 && strcmp(argv[1], "server") == 0)
		return server();
	if (argc == 3 && strcmp(argv[1], "client") == 0)
		return client(argv[2]);
	fprintf(stderr, "usage: mw_client server | mw_client client SERVER_IP\n");
	return 2;
}
