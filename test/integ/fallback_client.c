/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A verbs client for test_integ whose registered memory the shim cannot
 * share with the daemon, so the daemon serves it through its fallback
 * (process_vm_readv/writev): a MAP_SHARED mapping of a file and a buffer on
 * the stack, next to ordinary heap memory.
 *
 *   fallback_client verify DIR   two RC QPs of this process, connected through
 *                                the daemon's loopback: RDMA WRITE, READ, SEND
 *                                and ATOMICs between the three kinds of memory,
 *                                every byte checked (the file also via read(2));
 *                                prints "fallback verify: OK"
 *   fallback_client die DIR      a child registers a file mapping; we stream
 *                                RDMA WRITEs into it and SIGKILL the child
 *                                mid-stream; prints the completions we got
 *
 * DIR holds the backing file (removed at exit). Bounded: every wait has a
 * deadline; exit 0 on success, 1 with a message otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "verbs_client.h"

#define FILE_LEN (64u * 1024)
#define WAIT_S VC_WAIT_S

static char file_path[256];

static void
remove_file(void)
{
	if (file_path[0])
		unlink(file_path);
}

struct conn_info {
	uint32_t qpn;
	union ibv_gid gid;
	uint64_t addr;
	uint32_t rkey;
};

static struct ibv_mr *
reg(struct dev *d, void *addr, size_t len)
{
	struct ibv_mr *mr = ibv_reg_mr(d->pd, addr, len,
				       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);

	if (mr == NULL)
		fail("ibv_reg_mr(%p, %zu): %s", addr, len, strerror(errno));
	return mr;
}

/* Post @p wr on @p qp and expect success (and @p recvs successful receives before it). */
static void
run(struct dev *d, struct ibv_qp *qp, struct ibv_send_wr *wr, int recvs, const char *what)
{
	post(qp, wr);
	for (int i = 0; i <= recvs; i++) {
		struct ibv_wc wc = wait_wc(d->cq);

		if (wc.status != IBV_WC_SUCCESS)
			fail("%s: %s (wr %llu)", what, ibv_wc_status_str(wc.status),
			     (unsigned long long)wc.wr_id);
	}
}

static uint8_t *
file_map(const char *dir, int *fd_out)
{
	int fd;
	uint8_t *p;

	snprintf(file_path, sizeof(file_path), "%s/fallback-XXXXXX", dir);
	fd = mkstemp(file_path);
	if (fd < 0 || ftruncate(fd, FILE_LEN) != 0)
		fail("%s: %s", file_path, strerror(errno));
	p = mmap(NULL, FILE_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		fail("mmap: %s", strerror(errno));
	*fd_out = fd;
	return p;
}

/* ---- verify ---- */

static int
verify(const char *dir)
{
	uint8_t stk[12288] __attribute__((aligned(64))); /* registered stack memory */
	uint8_t check[FILE_LEN];
	struct dev d;
	int fd;
	uint8_t *file = file_map(dir, &fd);
	uint8_t *heap = aligned_alloc(4096, FILE_LEN);

	dev_open(&d);
	struct ibv_mr *mf = reg(&d, file, FILE_LEN), *ms = reg(&d, stk, sizeof(stk)),
		      *mh = reg(&d, heap, FILE_LEN);
	struct ibv_qp *qa = qp_new(&d), *qb = qp_new(&d);
	struct conn_info ia = { .qpn = qa->qp_num, .gid = d.gid },
			 ib = { .qpn = qb->qp_num, .gid = d.gid };

	qp_connect(qa, ib.qpn, &ib.gid);
	qp_connect(qb, ia.qpn, &ia.gid);

	/* 1. WRITE stack -> file: fallback gather, fallback placement */
	fill(stk, 10000, 1);
	struct ibv_sge sg = { (uintptr_t)stk, 10000, ms->lkey };
	struct ibv_send_wr w = { .wr_id = 1, .sg_list = &sg, .num_sge = 1,
				 .opcode = IBV_WR_RDMA_WRITE,
				 .wr.rdma = { (uintptr_t)file + 100, mf->rkey } };
	run(&d, qa, &w, 0, "WRITE stack->file");
	expect_fill(file + 100, 10000, 1, "WRITE: the mapping");
	if (pread(fd, check, 10000, 100) != 10000)
		fail("pread: %s", strerror(errno));
	expect_fill(check, 10000, 1, "WRITE: the file");

	/* 2. READ file -> stack: fallback READ responses, fallback result scatter */
	fill(file + 20000, 9000, 2);
	memset(stk, 0, sizeof(stk));
	sg = (struct ibv_sge){ (uintptr_t)stk, 9000, ms->lkey };
	w = (struct ibv_send_wr){ .wr_id = 2, .sg_list = &sg, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_READ,
				  .wr.rdma = { (uintptr_t)file + 20000, mf->rkey } };
	run(&d, qa, &w, 0, "READ file->stack");
	expect_fill(stk, 9000, 2, "READ into the stack");

	/* 3. SEND file + heap -> stack (receive buffer) */
	struct ibv_sge rs = { (uintptr_t)stk, 6000, ms->lkey };
	struct ibv_recv_wr r = { .wr_id = 30, .sg_list = &rs, .num_sge = 1 }, *bad_r;
	struct ibv_sge ss[2] = { { (uintptr_t)file + 32000, 2500, mf->lkey },
				 { (uintptr_t)heap, 3500, mh->lkey } };

	if (ibv_post_recv(qb, &r, &bad_r))
		fail("ibv_post_recv: %s", strerror(errno));
	fill(file + 32000, 2500, 3);
	fill(heap, 3500, 4);
	memset(stk, 0, sizeof(stk));
	w = (struct ibv_send_wr){ .wr_id = 3, .sg_list = ss, .num_sge = 2, .opcode = IBV_WR_SEND };
	run(&d, qa, &w, 1, "SEND file+heap->stack");
	expect_fill(stk, 2500, 3, "SEND: the file part");
	expect_fill(stk + 2500, 3500, 4, "SEND: the heap part");

	/* 4. ATOMICs on the file, results on the stack */
	uint64_t v = 1000, *res = (uint64_t *)(void *)stk;

	memcpy(file + 40000, &v, 8);
	sg = (struct ibv_sge){ (uintptr_t)stk, 8, ms->lkey };
	w = (struct ibv_send_wr){ .wr_id = 4, .sg_list = &sg, .num_sge = 1,
				  .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
				  .wr.atomic = { (uintptr_t)file + 40000, 23, 0, mf->rkey } };
	run(&d, qa, &w, 0, "FETCH_ADD on the file");
	memcpy(&v, file + 40000, 8);
	if (*res != 1000 || v != 1023)
		fail("FETCH_ADD: returned %llu, memory %llu", (unsigned long long)*res,
		     (unsigned long long)v);
	w.wr_id = 5;
	w.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	w.wr.atomic.compare_add = 1023;
	w.wr.atomic.swap = 77;
	run(&d, qa, &w, 0, "CMP_SWAP on the file");
	memcpy(&v, file + 40000, 8);
	if (*res != 1023 || v != 77)
		fail("CMP_SWAP: returned %llu, memory %llu", (unsigned long long)*res,
		     (unsigned long long)v);

	/* 5. heap -> heap still takes the direct path, next to it */
	fill(heap, 8000, 5);
	sg = (struct ibv_sge){ (uintptr_t)heap, 8000, mh->lkey };
	w = (struct ibv_send_wr){ .wr_id = 6, .sg_list = &sg, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE,
				  .wr.rdma = { (uintptr_t)heap + 20000, mh->rkey } };
	run(&d, qa, &w, 0, "WRITE heap->heap");
	expect_fill(heap + 20000, 8000, 5, "WRITE heap->heap");

	ibv_destroy_qp(qa);
	ibv_destroy_qp(qb);
	ibv_dereg_mr(mf);
	ibv_dereg_mr(ms);
	ibv_dereg_mr(mh);
	ibv_destroy_cq(d.cq);
	ibv_dealloc_pd(d.pd);
	ibv_close_device(d.ctx);
	munmap(file, FILE_LEN);
	close(fd);
	unlink(file_path);
	free(heap);
	printf("fallback verify: OK\n");
	return 0;
}

/* ---- die: the target of a WRITE stream is killed ---- */

static void
xfer(int fd, void *p, size_t len, bool out)
{
	ssize_t n = out ? write(fd, p, len) : read(fd, p, len);

	if (n != (ssize_t)len)
		fail("pipe: %s", n < 0 ? strerror(errno) : "short");
}

static int
die(const char *dir)
{
	int up[2], down[2], fd;
	struct conn_info me, peer;
	pid_t child;

	if (pipe(up) || pipe(down))
		fail("pipe");
	child = fork(); /* before any verbs call: each process has its own context */
	if (child < 0)
		fail("fork");
	if (child == 0) {
		struct dev d;
		uint8_t *file = file_map(dir, &fd);

		alarm(30);
		dev_open(&d);
		struct ibv_mr *mf = reg(&d, file, FILE_LEN);
		struct ibv_qp *qp = qp_new(&d);

		me = (struct conn_info){ qp->qp_num, d.gid, (uintptr_t)file, mf->rkey };
		xfer(up[1], &me, sizeof(me), true);
		xfer(down[0], &peer, sizeof(peer), false);
		qp_connect(qp, peer.qpn, &peer.gid);
		xfer(up[1], &me, 1, true); /* ready */
		unlink(file_path);        /* the mapping keeps it */
		for (;;)
			pause();          /* killed by the parent (or the alarm) */
	}
	struct dev d;
	uint8_t *src = aligned_alloc(4096, FILE_LEN);

	dev_open(&d);
	struct ibv_mr *ms = reg(&d, src, FILE_LEN);
	struct ibv_qp *qp = qp_new(&d);

	xfer(up[0], &peer, sizeof(peer), false);
	me = (struct conn_info){ .qpn = qp->qp_num, .gid = d.gid };
	xfer(down[1], &me, sizeof(me), true);
	qp_connect(qp, peer.qpn, &peer.gid);
	xfer(up[0], &me, 1, false);

	/* stream 16 KiB WRITEs, 8 in flight; kill the target after 100 completions */
	unsigned int ok = 0, posted = 0, done = 0, errors = 0;
	enum ibv_wc_status first_err = IBV_WC_SUCCESS;
	bool killed = false;
	double end = now_s() + WAIT_S;

	fill(src, FILE_LEN, 9);
	while (now_s() < end && errors == 0) {
		while (posted - done < 8 && posted < 100000) {
			struct ibv_sge sg = { (uintptr_t)src, 16384, ms->lkey };
			struct ibv_send_wr w = { .wr_id = posted, .sg_list = &sg, .num_sge = 1,
						 .opcode = IBV_WR_RDMA_WRITE,
						 .wr.rdma = { peer.addr + (posted % 4) * 16384,
							      peer.rkey } };

			post(qp, &w);
			posted++;
		}
		struct ibv_wc wc;
		int n = ibv_poll_cq(d.cq, 1, &wc);

		if (n < 0)
			fail("ibv_poll_cq");
		if (n == 0)
			continue;
		done++;
		if (wc.status == IBV_WC_SUCCESS) {
			ok++;
		} else {
			errors++;
			first_err = wc.status;
		}
		if (ok == 100 && !killed) {
			kill(child, SIGKILL);
			killed = true;
		}
	}
	if (!killed)
		fail("only %u WRITEs completed before the deadline", ok);
	waitpid(child, NULL, 0);
	printf("writes ok %u, then %s\n", ok,
	       errors ? ibv_wc_status_str(first_err) : "no error within the deadline");
	if (errors == 0)
		fail("the stream never failed after its target died");
	ibv_destroy_qp(qp);
	ibv_dereg_mr(ms);
	ibv_destroy_cq(d.cq);
	ibv_dealloc_pd(d.pd);
	ibv_close_device(d.ctx);
	free(src);
	return 0;
}

int
main(int argc, char **argv)
{
	vc_name = "fallback_client";
	vc_cleanup = remove_file;
	if (argc == 3 && strcmp(argv[1], "verify") == 0)
		return verify(argv[2]);
	if (argc == 3 && strcmp(argv[1], "die") == 0)
		return die(argv[2]);
	fprintf(stderr, "usage: fallback_client verify|die DIR\n");
	return 2;
}
