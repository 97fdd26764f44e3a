/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Indirect MRs (mr.h): registered memory the engine reaches only by
 * process_vm_readv/writev, as the daemon reaches memory the verbs shim
 * could not share. First the mr.h primitives on our own process, then the
 * engine through the simulated link with the memory in a forked child
 * ("the client"): every copy site (gather, READ response, WRITE and SEND
 * placement, READ/ATOMIC result scatter, ATOMIC execution), and a client
 * that died: the accesses fail like protection errors, nothing crashes.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include <stdio.h>
#include <inttypes.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"
#include "xport_internal.h"

_Static_assert(sizeof(struct mr_entry) <= 56, "an MR table entry stays small");

#define ALL_ACCESS (MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE | MR_ACCESS_REMOTE_READ | \
		    MR_ACCESS_REMOTE_ATOMIC)
#define IKEY ((10u << 8) | 1u)          /* the indirect key in both hosts' tables */
#define IVA 0x7000000000ull             /* its IOVA */
#define REGION_LEN (64u * 1024)

/* /proc/PID/mem of @p pid, as lib/ctl opens it at registration. */
static int
memfd_of(pid_t pid)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	fd = open(path, O_RDWR | O_CLOEXEC);
	cr_assert_geq(fd, 0, "open %s: %m", path);
	return fd;
}

/* ---- mr.h on our own process ---- */

Test(mr_indirect, own_process_copies_and_checks)
{
	struct mr_table *t = mr_table_create(16);
	uint8_t *buf = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			    -1, 0);
	int pidfd = memfd_of(getpid());
	uint32_t key = (3u << 8) | 7u, dkey;
	uint8_t *host, in[100], out[100];
	uint64_t orig;

	cr_assert_neq(buf, MAP_FAILED);
	cr_assert_eq(mr_reg_key_indirect(t, key, 1, (uintptr_t)buf, 0x5000, 4096, ALL_ACCESS, 0,
					 pidfd), -EINVAL, "no owner pid");
	cr_assert_eq(mr_reg_key_indirect(t, key, 1, (uintptr_t)buf, 0x5000, 4096, ALL_ACCESS,
					 getpid(), -1), -EINVAL, "no mem fd");
	cr_assert_eq(mr_reg_key_indirect(t, key, 1, (uintptr_t)buf, 0x5000, 4096, ALL_ACCESS,
					 getpid(), pidfd), 0);
	cr_assert_eq(mr_reg(t, 1, (uintptr_t)in, 0x9000, sizeof(in), ALL_ACCESS, &dkey), 0);

	/* the usual checks, then MR_INDIRECT with the owner's address */
	cr_assert_eq(mr_check(t, key, 1, 0x5010, 100, MR_ACCESS_REMOTE_WRITE, &host), MR_INDIRECT);
	cr_assert_eq(host, buf + 0x10);
	cr_assert_eq(mr_check(t, key, 2, 0x5010, 100, 0, &host), MR_ERR_PD);
	cr_assert_eq(mr_check(t, key, 1, 0x5f90, 0x80, 0, &host), MR_ERR_RANGE);
	cr_assert_eq(mr_check(t, dkey, 1, 0x9000, 8, 0, &host), MR_OK, "direct keys unchanged");
	cr_assert_str_eq(mr_status_name(MR_INDIRECT), "INDIRECT");
	cr_assert_str_eq(mr_status_name(MR_ERR_COPY), "COPY");

	/* copies */
	fill(in, sizeof(in), 1);
	cr_assert_eq(mr_indirect_write(t, key, buf + 0x10, in, sizeof(in)), MR_OK);
	cr_assert_eq(memcmp(buf + 0x10, in, sizeof(in)), 0);
	fill(buf + 0x200, sizeof(out), 2);
	cr_assert_eq(mr_indirect_read(t, key, buf + 0x200, out, sizeof(out)), MR_OK);
	cr_assert_eq(check_fill(out, sizeof(out), 2), -1);
	cr_assert_eq(mr_indirect_read(t, dkey, (uint8_t *)in, out, 8), MR_ERR_KEY,
		     "not an indirect key");

	/* read-modify-write: fetch-add, CAS hit, CAS miss */
	uint64_t v = 40;
	memcpy(buf + 8, &v, 8);
	cr_assert_eq(mr_indirect_atomic(t, key, buf + 8, false, 0, 2, &orig), MR_OK);
	cr_assert_eq(orig, 40);
	cr_assert_eq(mr_indirect_atomic(t, key, buf + 8, true, 42, 7, &orig), MR_OK);
	cr_assert_eq(orig, 42);
	cr_assert_eq(mr_indirect_atomic(t, key, buf + 8, true, 42, 9, &orig), MR_OK);
	cr_assert_eq(orig, 7);
	memcpy(&v, buf + 8, 8);
	cr_assert_eq(v, 7, "a missed CAS leaves the value");

	/* pages that went away, or are read-only: MR_ERR_COPY, never a crash */
	cr_assert_eq(munmap(buf + 4096, 4096), 0);
	cr_assert_eq(mr_indirect_read(t, key, buf + 4000, out, 100), MR_ERR_COPY, "half unmapped");
	cr_assert_eq(mprotect(buf, 4096, PROT_READ), 0);
	cr_assert_eq(mr_indirect_read(t, key, buf, out, 8), MR_OK, "read-only pages read");

	/* the registration-time probe */
	cr_assert_eq(mr_indirect_probe(getpid(), pidfd, (uintptr_t)buf), 0);
	cr_assert_lt(mr_indirect_probe(getpid(), pidfd, (uintptr_t)buf + 4096), 0, "not mapped");
	cr_assert_eq(mr_indirect_probe(getpid(), -1, (uintptr_t)buf), -EINVAL);

	cr_assert_eq(mr_dereg(t, key), 0);
	cr_assert_eq(mr_check(t, key, 1, 0x5010, 8, 0, &host), MR_ERR_KEY);
	munmap(buf, 4096);
	close(pidfd);
	mr_table_destroy(t);
}

/* An owner that exited (its PID free for reuse) fails every copy. */
Test(mr_indirect, a_dead_owner_fails_every_copy)
{
	struct mr_table *t = mr_table_create(16);
	uint8_t buf[64] = { 1 }, out[64];
	int hold[2];

	cr_assert_eq(pipe(hold), 0);
	pid_t child = fork();

	cr_assert_geq(child, 0);
	if (child == 0) {
		char c;

		/* alive until the parent has opened its mem (a zombie's cannot be opened) */
		close(hold[1]);
		(void)!read(hold[0], &c, 1);
		_exit(0);
	}
	close(hold[0]);
	int pidfd = memfd_of(child);
	close(hold[1]);
	cr_assert_eq(waitpid(child, NULL, 0), child); /* reaped: its PID is free for reuse */
	/* pretend the PID was reused by us: the fd still names the dead image */
	cr_assert_eq(mr_reg_key_indirect(t, 0x201, 1, (uintptr_t)buf, 0, sizeof(buf), ALL_ACCESS,
					 getpid(), pidfd), 0);
	cr_assert_eq(mr_indirect_read(t, 0x201, buf, out, sizeof(out)), MR_ERR_COPY);
	cr_assert_eq(mr_indirect_write(t, 0x201, buf, out, sizeof(out)), MR_ERR_COPY);
	cr_assert_neq(mr_indirect_probe(getpid(), pidfd, (uintptr_t)buf), 0);
	close(pidfd);
	mr_table_destroy(t);
}

/*
 * Issue 16: a registration without a memfd was served by
 * process_vm_readv/writev on the owner's PID, checked only for being
 * alive. An owner that execs (a setuid program, say) keeps the PID: the
 * daemon then read and wrote the new program's memory for the old
 * registration. The copies now go through the /proc/PID/mem opened at
 * registration, which stays bound to the registering image.
 */
Test(mr_indirect, an_exec_ends_the_registration, .timeout = 20)
{
	struct mr_table *t = mr_table_create(16);
	uint64_t lo = 0, hi = 0, word = 0;
	char path[64], line[256], comm[32] = "";
	int go[2], memfd;
	pid_t child;
	FILE *f;

	cr_assert_eq(pipe(go), 0);
	child = fork();
	cr_assert_geq(child, 0);
	if (child == 0) {
		char c;

		close(go[1]);
		alarm(20);
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		execl("/bin/sleep", "sleep", "10", (char *)NULL);
		_exit(127);
	}
	close(go[0]);
	memfd = memfd_of(child);
	/* the whole user address space, so any address of the next image is "inside" */
	cr_assert_eq(mr_reg_key_indirect(t, 0x301, 1, 0, 0, UINT64_C(1) << 47, ALL_ACCESS, child,
					 memfd),
		     0);
	cr_assert_eq(write(go[1], "x", 1), 1);
	close(go[1]);
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)child);
	for (int i = 0; i < 400 && strncmp(comm, "sleep", 5) != 0; i++) {
		f = fopen(path, "re");
		if (f != NULL) {
			if (fgets(comm, sizeof(comm), f) == NULL)
				comm[0] = '\0';
			fclose(f);
		}
		usleep(5000);
	}
	cr_assert_eq(strncmp(comm, "sleep", 5), 0, "the child exec'd");
	/* an address the new image has mapped: readable through its PID... */
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)child);
	f = fopen(path, "re");
	cr_assert_not_null(f);
	cr_assert_not_null(fgets(line, sizeof(line), f));
	fclose(f);
	cr_assert_eq(sscanf(line, "%" SCNx64 "-%" SCNx64, &lo, &hi), 2);
	struct iovec l = { &word, 8 }, r = { (void *)(uintptr_t)lo, 8 };

	cr_assert_eq(process_vm_readv(child, &l, 1, &r, 1, 0), 8, "what the old path would copy");
	/* ...but not through the registration, which belongs to the old image */
	cr_assert_eq(mr_indirect_read(t, 0x301, (uint8_t *)(uintptr_t)lo, &word, 8), MR_ERR_COPY);
	cr_assert_eq(mr_indirect_write(t, 0x301, (uint8_t *)(uintptr_t)lo, &word, 8), MR_ERR_COPY);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	close(memfd);
	mr_table_destroy(t);
}

/* ---- the engine, with the memory in a child process ---- */

static struct sim S;
static struct collect K;
static uint8_t *region;         /* same address in the child (forked) */
static struct {
	pid_t pid;              /* -1 once killed and reaped */
	pid_t registered;       /* the PID the MRs name (stays after the kill) */
	int pidfd;
	int hold;               /* closing it lets the child exit */
} owner = { .pid = -1, .pidfd = -1, .hold = -1 };

#define CHILD_FILL 77

/* Fork the owner: its copy of region holds pattern CHILD_FILL, ours 0xee. */
static void
owner_start(void)
{
	int ready[2], hold[2];
	char c;

	cr_assert_eq(pipe(ready), 0);
	cr_assert_eq(pipe(hold), 0);
	owner.pid = fork();
	cr_assert_geq(owner.pid, 0);
	if (owner.pid == 0) {
		close(ready[0]);
		close(hold[1]);
		alarm(30); /* bounded even if the test runner vanished */
		fill(region, REGION_LEN, CHILD_FILL);
		if (write(ready[1], "r", 1) != 1)
			_exit(1);
		while (read(hold[0], &c, 1) > 0) /* EOF: the parent closed or died */
			;
		_exit(0);
	}
	close(ready[1]);
	close(hold[0]);
	cr_assert_eq(read(ready[0], &c, 1), 1);
	close(ready[0]);
	owner.hold = hold[1];
	owner.registered = owner.pid;
	owner.pidfd = memfd_of(owner.pid);
	memset(region, 0xee, REGION_LEN); /* ours differs: data must come from the child */
}

static void
owner_kill(void)
{
	if (owner.pid > 0) {
		kill(owner.pid, SIGKILL);
		waitpid(owner.pid, NULL, 0);
	}
	owner.pid = -1;
}

/* @p len bytes of the child's region at @p off. */
static void
owner_peek(uint64_t off, void *dst, size_t len)
{
	struct iovec l = { dst, len }, r = { region + off, len };

	cr_assert_eq(process_vm_readv(owner.pid, &l, 1, &r, 1, 0), (ssize_t)len);
}

/* Both hosts, QPs in RTS, IKEY on both naming the owner's region. */
static void
sim_up(void)
{
	struct sim_params p;

	sim_default_params(&p); /* MTU 1024 */
	cr_assert_eq(sim_init(&S, &p, 1), 0);
	collect_init(&K);
	for (int h = 0; h < 2; h++)
		cr_assert_eq(mr_reg_key_indirect(S.h[h].mrs, IKEY, SIM_PD, (uintptr_t)region, IVA,
						 REGION_LEN, ALL_ACCESS, owner.registered,
						 owner.pidfd),
			     0);
}

static void
sim_down(void)
{
	collect_fini(&K);
	sim_fini(&S);
}

static void
setup(void)
{
	region = mmap(NULL, REGION_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(region, MAP_FAILED);
	owner_start();
	sim_up();
}

static void
teardown(void)
{
	sim_down();
	owner_kill();
	if (owner.hold >= 0)
		close(owner.hold);
	if (owner.pidfd >= 0)
		close(owner.pidfd);
	owner.hold = owner.pidfd = -1;
	munmap(region, REGION_LEN);
}

static const uint64_t *
cnt(int h)
{
	return xport_qp_counters(S.h[h].qp);
}

/* Post on host 0 and run until host 0 has @p sent send CQEs and host 1 @p recvd receive CQEs. */
static void
run(const struct sq_wqe *w, uint32_t sent, uint32_t recvd)
{
	cr_assert(sim_post_send(&S, 0, w));
	K.want[0][0] = sent;
	K.want[1][1] = recvd;
	cr_assert(sim_run(&S, collect_done, &K, SIM_DEADLINE_NS));
}

static struct sq_wqe
rdma(uint8_t opcode, uint64_t wr_id, uint64_t lva, uint32_t len, uint32_t lkey, uint64_t rva,
     uint32_t rkey)
{
	struct sq_wqe w = wqe_new(opcode, wr_id, WR_FLAG_SIGNALED);

	wqe_add_sge(&w, lva, len, lkey);
	w.wr.rdma.remote_addr = rva;
	w.wr.rdma.rkey = rkey;
	return w;
}

static struct sq_wqe
atomic(uint8_t opcode, uint64_t wr_id, uint64_t loff, uint64_t roff, uint64_t compare_add,
       uint64_t swap)
{
	struct sq_wqe w = wqe_new(opcode, wr_id, WR_FLAG_SIGNALED);

	wqe_add_sge(&w, sim_va(&S, 0, loff), 8, S.h[0].arena_key);
	w.wr.atomic.remote_addr = IVA + roff;
	w.wr.atomic.rkey = IKEY;
	w.wr.atomic.compare_add = compare_add;
	w.wr.atomic.swap = swap;
	return w;
}

TestSuite(fallback, .init = setup, .fini = teardown, .timeout = 30);

Test(fallback, every_copy_site_reaches_the_owner)
{
	uint8_t got[10000], want[3000];
	uint32_t n = 0;

	/* RDMA WRITE, 10 packets, placed into the owner (responder placement) */
	fill(S.h[0].arena, 10000, 1);
	struct sq_wqe w = rdma(WR_RDMA_WRITE, 1, sim_va(&S, 0, 0), 10000, S.h[0].arena_key,
			       IVA + 100, IKEY);
	run(&w, ++n, 0);
	cr_assert_eq(K.c[0][0][n - 1].status, WC_SUCCESS);
	owner_peek(100, got, 10000);
	cr_assert_eq(check_fill(got, 10000, 1), -1);
	cr_assert_eq(cnt(1)[XPORT_CNT_MR_FALLBACK_COPIES], 10, "one copy per packet");

	/* RDMA READ of the owner's own bytes (READ responses via the bounce slots) */
	w = rdma(WR_RDMA_READ, 2, sim_va(&S, 0, 0), 5000, S.h[0].arena_key, IVA + 20000, IKEY);
	uint64_t by_ref = S.frames_seg_mr;
	run(&w, ++n, 0);
	cr_assert_eq(S.frames_seg_mr, by_ref, "a bounce slot is not the MR's memory");
	cr_assert_eq(K.c[0][0][n - 1].status, WC_SUCCESS);
	for (uint32_t i = 0; i < 5000; i++)
		cr_assert_eq(S.h[0].arena[i], pattern(CHILD_FILL, 20000 + i), "byte %u", i);

	/* SEND gathered from direct + indirect SGEs, scattered into the owner */
	fill(S.h[0].arena, 1000, 3);
	struct rq_wqe r = rwqe_new(9, IVA + 40000, 3000, IKEY);
	cr_assert(sim_post_recv(&S, 1, &r));
	w = wqe_new(WR_SEND, 3, WR_FLAG_SIGNALED);
	wqe_add_sge(&w, sim_va(&S, 0, 0), 1000, S.h[0].arena_key);
	wqe_add_sge(&w, IVA + 30000, 1500, IKEY);
	wqe_add_sge(&w, sim_va(&S, 0, 1000), 500, S.h[0].arena_key);
	fill(S.h[0].arena + 1000, 500, 4);
	run(&w, ++n, 1);
	cr_assert_eq(K.c[0][0][n - 1].status, WC_SUCCESS);
	cr_assert_eq(K.c[1][1][0].status, WC_SUCCESS);
	cr_assert_eq(K.c[1][1][0].byte_len, 3000);
	fill(want, 1000, 3);
	for (uint32_t i = 0; i < 1500; i++)
		want[1000 + i] = pattern(CHILD_FILL, 30000 + i);
	fill(want + 2500, 500, 4);
	owner_peek(40000, got, 3000);
	cr_assert_eq(memcmp(got, want, 3000), 0);

	/* RDMA READ into the owner (the requester's result scatter) */
	fill(S.h[1].arena + 4096, 3000, 5);
	w = rdma(WR_RDMA_READ, 4, IVA + 50000, 3000, IKEY, sim_va(&S, 1, 4096), S.h[1].arena_key);
	run(&w, ++n, 0);
	cr_assert_eq(K.c[0][0][n - 1].status, WC_SUCCESS);
	owner_peek(50000, got, 3000);
	cr_assert_eq(check_fill(got, 3000, 5), -1);

	/* ATOMICs executed on the owner's word, results into our arena */
	uint64_t v0, v, res;
	owner_peek(8, &v0, 8);
	w = atomic(WR_ATOMIC_FETCH_AND_ADD, 5, 64, 8, 5, 0);
	run(&w, ++n, 0);
	cr_assert_eq(K.c[0][0][n - 1].status, WC_SUCCESS);
	memcpy(&res, S.h[0].arena + 64, 8);
	owner_peek(8, &v, 8);
	cr_assert_eq(res, v0);
	cr_assert_eq(v, v0 + 5);
	w = atomic(WR_ATOMIC_CMP_AND_SWP, 6, 72, 8, v0 + 5, 0x1234);
	run(&w, ++n, 0);
	memcpy(&res, S.h[0].arena + 72, 8);
	owner_peek(8, &v, 8);
	cr_assert_eq(res, v0 + 5);
	cr_assert_eq(v, 0x1234, "CAS hit swaps");
	w = atomic(WR_ATOMIC_CMP_AND_SWP, 7, 80, 8, 1, 99);
	run(&w, ++n, 0);
	owner_peek(8, &v, 8);
	cr_assert_eq(v, 0x1234, "CAS miss leaves it");

	for (uint32_t i = 0; i < n; i++)
		cr_assert_eq(K.c[0][0][i].status, WC_SUCCESS, "wr %u", i);
	cr_assert_eq(cnt(0)[XPORT_CNT_MR_FALLBACK_ERRORS] + cnt(1)[XPORT_CNT_MR_FALLBACK_ERRORS], 0);
	cr_assert_geq(cnt(0)[XPORT_CNT_MR_FALLBACK_COPIES], 2 + 3, "gather + READ scatter");
	/* none of it touched our own copy of the region */
	for (uint32_t i = 0; i < REGION_LEN; i++)
		cr_assert_eq(region[i], 0xee, "byte %u of our copy", i);
}

/* The owner died before a remote access: NAK remote access error, counted. */
Test(fallback, dead_owner_is_a_remote_access_error)
{
	static const uint8_t ops[] = { WR_RDMA_WRITE, WR_RDMA_READ, WR_ATOMIC_FETCH_AND_ADD };

	owner_kill();
	for (unsigned int i = 0; i < sizeof(ops); i++) {
		struct sq_wqe w = ops[i] == WR_ATOMIC_FETCH_AND_ADD
					  ? atomic(ops[i], i, 0, 0, 1, 0)
					  : rdma(ops[i], i, sim_va(&S, 0, 0), 3000, S.h[0].arena_key,
						 IVA, IKEY);
		uint64_t errs = cnt(1)[XPORT_CNT_MR_FALLBACK_ERRORS];

		run(&w, 1, 0);
		cr_assert_eq(K.c[0][0][0].status, WC_REM_ACCESS_ERR, "op %u: status %u", ops[i],
			     K.c[0][0][0].status);
		cr_assert_gt(cnt(1)[XPORT_CNT_MR_FALLBACK_ERRORS], errs, "op %u", ops[i]);
		sim_down(); /* a fresh pair of QPs for the next operation */
		sim_up();
	}
}

/* ... and for its own requests and receive buffers: local protection errors. */
Test(fallback, dead_owner_local_access_is_a_protection_error)
{
	owner_kill();
	/* gather */
	struct sq_wqe w = wqe_new(WR_SEND, 1, WR_FLAG_SIGNALED);
	wqe_add_sge(&w, IVA, 100, IKEY);
	run(&w, 1, 0);
	cr_assert_eq(K.c[0][0][0].status, WC_LOC_PROT_ERR);
	cr_assert_eq(cnt(0)[XPORT_CNT_MR_FALLBACK_ERRORS], 1);
	/* receive buffer: the responder's receive fails, the requester gets REM_OP_ERR */
	sim_down();
	sim_up();
	struct rq_wqe r = rwqe_new(9, IVA, 3000, IKEY);
	cr_assert(sim_post_recv(&S, 1, &r));
	w = wqe_new(WR_SEND, 2, WR_FLAG_SIGNALED);
	wqe_add_sge(&w, sim_va(&S, 0, 0), 2000, S.h[0].arena_key);
	run(&w, 1, 1);
	cr_assert_eq(K.c[1][1][0].status, WC_LOC_PROT_ERR);
	cr_assert_eq(K.c[0][0][0].status, WC_REM_OP_ERR);
}
