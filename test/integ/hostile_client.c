/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A hostile application for test_integ: it speaks lib/ipc directly (no
 * shim), connects an RC QP to itself through the daemon, then scribbles over
 * everything it shares with the daemon: every ring header (size, mask,
 * elem_size), producer indexes far beyond the rings, the CQ consumer index,
 * and WQEs whose SGEs and remote addresses leave the registered memory. The
 * daemon must keep running, serve other clients, and tear this one down.
 *
 *   hostile_client [SECONDS]     (ROCE_DAEMON_SOCKET names the daemon)
 *
 * Exit 0 when every step the daemon had to answer was answered; prints what
 * it did. The memory it corrupts is its own.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "ipc.h"
#include "ipc_shm.h"
#include "queue.h"
#include "wqe.h"

#define MR_LEN 65536u

static int sock;
static uint32_t seq;

static int
call(struct ipc_msg *m, enum ipc_op op, const int *fds, unsigned int nfds, int *rfds)
{
	int tmp[IPC_MAX_FDS];
	int rc;

	m->hdr.op = op;
	m->hdr.seq = ++seq;
	rc = ipc_call(sock, m, fds, nfds, m, rfds ? rfds : tmp);
	if (rc != 0)
		fprintf(stderr, "hostile: %s: %s\n", ipc_op_name(op), strerror(rc < 0 ? -rc : rc));
	return rc;
}

static void
req(struct ipc_msg *m, enum ipc_op op)
{
	memset(m, 0, sizeof(*m));
	ipc_req_init(m, op, 0);
}

static void *
map_fd(int fd, size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	if (p == MAP_FAILED) {
		perror("hostile: mmap");
		exit(1);
	}
	return p;
}

static void
corrupt(struct spsc_ring *r)
{
	r->size = 1u << 30;
	r->mask = UINT32_MAX;
	r->elem_size = 1u << 20;
}

static int
modify(uint32_t qp, uint32_t mask, const struct ipc_qp_attr *a)
{
	struct ipc_msg m;

	req(&m, IPC_OP_MODIFY_QP);
	m.u.req_MODIFY_QP.handle = qp;
	m.u.req_MODIFY_QP.mask = mask;
	m.u.req_MODIFY_QP.attr = *a;
	return call(&m, IPC_OP_MODIFY_QP, NULL, 0, NULL);
}

int
main(int argc, char **argv)
{
	unsigned int seconds = argc > 1 ? (unsigned int)atoi(argv[1]) : 2;
	struct ipc_msg m;
	int rfds[IPC_MAX_FDS];
	uint32_t pd, cq, qp, qpn, lkey, rkey;
	uint8_t gid[16];
	struct ipc_create_qp_rsp qr;
	struct ipc_cq_rsp cr;

	sock = ipc_connect(NULL);
	if (sock < 0) {
		fprintf(stderr, "hostile: connect: %s\n", strerror(-sock));
		return 1;
	}
	req(&m, IPC_OP_OPEN_DEVICE);
	strcpy(m.u.req_OPEN_DEVICE.name, "dpdk_roce0");
	if (call(&m, IPC_OP_OPEN_DEVICE, NULL, 0, rfds))
		return 1;
	req(&m, IPC_OP_QUERY_GID);
	m.u.req_QUERY_GID.port = 1;
	m.u.req_QUERY_GID.index = 1;
	if (call(&m, IPC_OP_QUERY_GID, NULL, 0, NULL))
		return 1;
	memcpy(gid, m.u.rsp_QUERY_GID.gid, 16);
	req(&m, IPC_OP_ALLOC_PD);
	if (call(&m, IPC_OP_ALLOC_PD, NULL, 0, NULL))
		return 1;
	pd = m.u.rsp_ALLOC_PD.handle;

	/* registered memory: a sealed memfd, as the shim makes it */
	int mfd = memfd_create("hostile-mr", MFD_ALLOW_SEALING);
	uint8_t *mem;

	if (mfd < 0 || ftruncate(mfd, MR_LEN) != 0 ||
	    fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) != 0)
		return 1;
	mem = map_fd(mfd, MR_LEN);
	req(&m, IPC_OP_REG_MR);
	m.u.req_REG_MR.pd = pd;
	m.u.req_REG_MR.addr = (uint64_t)(uintptr_t)mem;
	m.u.req_REG_MR.iova = (uint64_t)(uintptr_t)mem;
	m.u.req_REG_MR.length = MR_LEN;
	m.u.req_REG_MR.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	if (call(&m, IPC_OP_REG_MR, &mfd, 1, NULL))
		return 1;
	lkey = m.u.rsp_REG_MR.lkey;
	rkey = m.u.rsp_REG_MR.rkey;

	req(&m, IPC_OP_CREATE_CQ);
	m.u.req_CREATE_CQ.cqe = 16;
	if (call(&m, IPC_OP_CREATE_CQ, NULL, 0, rfds))
		return 1;
	cr = m.u.rsp_CREATE_CQ;
	cq = cr.handle;
	uint8_t *cqm = map_fd(rfds[0], cr.shm_size);
	struct spsc_ring *cq_ring = (struct spsc_ring *)(cqm + cr.ring.offset);

	req(&m, IPC_OP_CREATE_QP);
	m.u.req_CREATE_QP.pd = pd;
	m.u.req_CREATE_QP.send_cq = cq;
	m.u.req_CREATE_QP.recv_cq = cq;
	m.u.req_CREATE_QP.qp_type = IBV_QPT_RC;
	m.u.req_CREATE_QP.cap = (struct ipc_qp_cap){ .max_send_wr = 16, .max_recv_wr = 16,
						     .max_send_sge = 1, .max_recv_sge = 1 };
	if (call(&m, IPC_OP_CREATE_QP, NULL, 0, rfds))
		return 1;
	qr = m.u.rsp_CREATE_QP;
	qp = qr.handle;
	qpn = qr.qpn;
	uint8_t *qpm = map_fd(rfds[0], qr.shm_size);
	struct spsc_ring *sq = (struct spsc_ring *)(qpm + qr.sq.offset);
	struct spsc_ring *rq = (struct spsc_ring *)(qpm + qr.rq.offset);
	uint32_t sq_n = qr.sq.entries, rq_n = qr.rq.entries;

	/* RESET -> INIT -> RTR -> RTS, connected to itself (the daemon's loopback) */
	struct ipc_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
						    IBV_ACCESS_REMOTE_ATOMIC };
	if (modify(qp, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, &a))
		return 1;
	a = (struct ipc_qp_attr){ .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
				  .dest_qp_num = qpn, .rq_psn = 0, .max_dest_rd_atomic = 4,
				  .min_rnr_timer = 1 };
	memcpy(a.ah_attr.dgid, gid, 16);
	a.ah_attr.sgid_index = 1;
	a.ah_attr.hop_limit = 64;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	if (modify(qp, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			       IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
		   &a))
		return 1;
	a = (struct ipc_qp_attr){ .qp_state = IBV_QPS_RTS, .timeout = 8, .retry_cnt = 2,
				  .rnr_retry = 1, .sq_psn = 0, .max_rd_atomic = 4 };
	if (modify(qp, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			       IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC,
		   &a))
		return 1;
	printf("hostile: QP 0x%x connected to itself\n", qpn);

	/* every header the daemon shares with us */
	corrupt(sq);
	corrupt(rq);
	corrupt(cq_ring);
	/* WQEs in the real slots: memory outside the MR, wild SGE counts, bad keys */
	uint32_t p = sq->prod;
	struct sq_wqe w;

	for (uint32_t i = 0; i < 6; i++) {
		memset(&w, 0, sizeof(w));
		w.wr_id = i;
		w.send_flags = WR_FLAG_SIGNALED;
		w.num_sge = 1;
		w.sg_list[0] = (struct wr_sge){ (uint64_t)(uintptr_t)mem, 64, lkey };
		switch (i) {
		case 0: /* local SGE running past the MR */
			w.opcode = WR_RDMA_WRITE;
			w.sg_list[0].addr += MR_LEN - 16;
			w.wr.rdma.remote_addr = (uint64_t)(uintptr_t)mem;
			w.wr.rdma.rkey = rkey;
			break;
		case 1: /* remote address past the MR */
			w.opcode = WR_RDMA_WRITE;
			w.wr.rdma.remote_addr = (uint64_t)(uintptr_t)mem + MR_LEN;
			w.wr.rdma.rkey = rkey;
			break;
		case 2: /* READ into the daemon's address space? only through an rkey */
			w.opcode = WR_RDMA_READ;
			w.wr.rdma.remote_addr = 0x1000;
			w.wr.rdma.rkey = rkey ^ 0x100;
			break;
		case 3: /* more SGEs than a WQE holds */
			w.opcode = WR_SEND;
			w.num_sge = 200;
			break;
		case 4: /* inline longer than the WQE */
			w.opcode = WR_SEND;
			w.send_flags |= WR_FLAG_INLINE;
			w.inline_len = 60000;
			break;
		default: /* an atomic on an unaligned remote address outside the MR */
			w.opcode = WR_ATOMIC_FETCH_AND_ADD;
			w.sg_list[0].length = 8;
			w.wr.atomic.remote_addr = (uint64_t)(uintptr_t)mem - 4;
			w.wr.atomic.rkey = rkey;
			break;
		}
		memcpy(spsc_ring_slot_in(sq, sq_n - 1, sizeof(w), p + i), &w, sizeof(w));
	}
	__atomic_store_n(&sq->prod, p + 6, __ATOMIC_RELEASE);
	/* receive WQEs with SGEs outside the MR, then producer indexes into the blue */
	struct rq_wqe r = { .wr_id = 99, .num_sge = 1,
			    .sg_list[0] = { (uint64_t)(uintptr_t)mem + MR_LEN - 8, 4096, lkey } };
	memcpy(spsc_ring_slot_in(rq, rq_n - 1, sizeof(r), rq->prod), &r, sizeof(r));
	__atomic_store_n(&rq->prod, rq->prod + 1, __ATOMIC_RELEASE);
	usleep(300000);
	__atomic_store_n(&sq->prod, sq->prod + 0x7fffffffu, __ATOMIC_RELEASE);
	__atomic_store_n(&rq->prod, rq->prod + 0x40000000u, __ATOMIC_RELEASE);
	__atomic_store_n(&cq_ring->cons, cq_ring->prod + 12345, __ATOMIC_RELEASE);
	__atomic_store_n(&cq_ring->prod, 0xdeadbeef, __ATOMIC_RELEASE);
	printf("hostile: rings corrupted\n");
	fflush(stdout);
	sleep(seconds);

	/* the daemon still answers; the QP is in error or still limping, its business */
	req(&m, IPC_OP_QUERY_QP);
	m.u.req_QUERY_QP.handle = qp;
	m.u.req_QUERY_QP.mask = IBV_QP_STATE;
	if (call(&m, IPC_OP_QUERY_QP, NULL, 0, NULL))
		return 1;
	printf("hostile: daemon alive, QP state %u\n", m.u.rsp_QUERY_QP.attr.qp_state);
	return 0; /* exit without destroying anything: the daemon cleans up */
}
