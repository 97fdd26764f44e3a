/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory windows (mw.h): first the table's rules alone (bind, access,
 * invalidate, the MR's window count), then the engine through the simulated
 * link: BIND_MW and LOCAL_INV work requests, RDMA WRITE/READ through a
 * window, the NAK a violation gets, SEND with Invalidate of a type 2 window,
 * a refused bind, and a bind waiting for the WQEs posted before it.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "util.h"
#include "xport_internal.h"

#define PD 7
#define QPN 0x123
#define MR_VA 0x40000000ull
#define MR_LEN 0x10000ull
#define RW (MR_ACCESS_REMOTE_WRITE | MR_ACCESS_REMOTE_READ)

/* ---- the table alone ---- */

static struct mr_table *mrs;
static struct mw_table *mws;
static uint8_t *mem;
static uint32_t mr_key, ro_key, nobind_key, zb_key;

static void
table_setup(void)
{
	mem = aligned_alloc(4096, MR_LEN);
	mrs = mr_table_create(16);
	mws = mw_table_create(8, 16);
	cr_assert(mem && mrs && mws);
	cr_assert_eq(mr_reg(mrs, PD, (uintptr_t)mem, MR_VA, MR_LEN,
			    MR_ACCESS_LOCAL_WRITE | MR_ACCESS_MW_BIND, &mr_key), 0);
	cr_assert_eq(mr_reg(mrs, PD, (uintptr_t)mem, MR_VA, MR_LEN, MR_ACCESS_MW_BIND, &ro_key), 0);
	cr_assert_eq(mr_reg(mrs, PD, (uintptr_t)mem, MR_VA, MR_LEN, MR_ACCESS_LOCAL_WRITE,
			    &nobind_key), 0);
	cr_assert_eq(mr_reg(mrs, PD, (uintptr_t)mem, 0, MR_LEN,
			    MR_ACCESS_LOCAL_WRITE | MR_ACCESS_MW_BIND | MR_ACCESS_ZERO_BASED,
			    &zb_key), 0);
}

static void
table_teardown(void)
{
	mw_table_destroy(mws);
	mr_table_destroy(mrs);
	free(mem);
}

TestSuite(mw_table, .init = table_setup, .fini = table_teardown);

static struct mw_bind_req
bind_req(uint32_t mw, uint8_t tag, uint64_t off, uint64_t len, uint32_t access)
{
	return (struct mw_bind_req){
		.mw_key = mw, .new_key = tag, .mr_key = mr_key, .access = access,
		.pd = PD, .qpn = QPN, .addr = MR_VA + off, .length = len,
	};
}

Test(mw_table, keys_are_apart_from_mr_keys)
{
	uint8_t *host;
	uint32_t k = mw_key_make(0, 0x5a);

	cr_assert(mw_key_is_mw(k));
	cr_assert_not(mw_key_is_mw(mr_key));
	cr_assert_eq(mw_open(mws, mr_key, PD, MW_TYPE_1), -EINVAL, "an MR key opens no window");
	cr_assert_eq(mw_open(mws, mw_key_make(8, 1), PD, MW_TYPE_1), -EINVAL, "beyond the table");
	cr_assert_eq(mw_open(mws, k, PD, 3), -EINVAL, "no type 3");
	cr_assert_eq(mw_open(mws, k, PD, MW_TYPE_1), 0);
	cr_assert_eq(mw_open(mws, k, PD, MW_TYPE_1), -EEXIST);
	struct mw_bind_req b = bind_req(k, 0x5b, 0, 64, RW);
	cr_assert_eq(mw_bind(mws, mrs, &b), 0);
	/* a window key is never an MR key, an MR key never a window's */
	cr_assert_eq(mr_check(mrs, k | 0x5b, PD, MR_VA, 8, 0, &host), MR_ERR_KEY);
	cr_assert_eq(mw_check(mws, mrs, mr_key, PD, QPN, MR_VA, 8, 0, &host), MR_ERR_KEY);
}

Test(mw_table, type1_bind_rebind_and_unbind)
{
	uint32_t k = mw_key_make(1, 1), k2 = (k & ~0xffu) | 2, k3 = (k & ~0xffu) | 3;
	uint8_t *host;

	cr_assert_eq(mw_open(mws, k, PD, MW_TYPE_1), 0);
	cr_assert_eq(mw_check(mws, mrs, k, PD, QPN, MR_VA, 8, MR_ACCESS_REMOTE_READ, &host),
		     MR_ERR_KEY, "unbound");
	struct mw_bind_req b = bind_req(k, 2, 0x100, 0x200, RW);
	cr_assert_eq(mw_bind(mws, mrs, &b), 0);
	cr_assert_eq(mw_mr_bound(mws, mr_key), 1);
	cr_assert_eq(mw_check(mws, mrs, k2, PD, QPN, MR_VA + 0x100, 0x200, RW, &host), MR_OK);
	cr_assert_eq(host, mem + 0x100);
	cr_assert_eq(mw_check(mws, mrs, k2, PD, 0x999, MR_VA + 0x100, 8, RW, &host), MR_OK,
		     "type 1: any QP of the PD");
	cr_assert_eq(mw_check(mws, mrs, k, PD, QPN, MR_VA + 0x100, 8, RW, &host), MR_ERR_KEY,
		     "the key before the bind");
	cr_assert_eq(mw_check(mws, mrs, k2, PD, QPN, MR_VA + 0xff, 8, RW, &host), MR_ERR_RANGE);
	cr_assert_eq(mw_check(mws, mrs, k2, PD, QPN, MR_VA + 0x2f9, 8, RW, &host), MR_ERR_RANGE);
	cr_assert_eq(mw_check(mws, mrs, k2, PD, QPN, MR_VA + 0x2f8, 8, RW, &host), MR_OK);
	cr_assert_eq(mw_check(mws, mrs, k2, PD + 1, QPN, MR_VA + 0x100, 8, RW, &host), MR_ERR_PD);
	cr_assert_eq(mw_check(mws, mrs, k2, PD, QPN, MR_VA + 0x100, 8, MR_ACCESS_REMOTE_ATOMIC,
			      &host), MR_ERR_ACCESS);
	/* rebind: new key, new range; the MR is counted once */
	b = bind_req(k2, 3, 0x1000, 0x10, MR_ACCESS_REMOTE_READ);
	cr_assert_eq(mw_bind(mws, mrs, &b), 0);
	cr_assert_eq(mw_mr_bound(mws, mr_key), 1);
	cr_assert_eq(mw_check(mws, mrs, k2, PD, QPN, MR_VA + 0x1000, 8, MR_ACCESS_REMOTE_READ,
			      &host), MR_ERR_KEY);
	cr_assert_eq(mw_check(mws, mrs, k3, PD, QPN, MR_VA + 0x1000, 8, MR_ACCESS_REMOTE_WRITE,
			      &host), MR_ERR_ACCESS, "read only now");
	cr_assert_eq(mw_invalidate(mws, k3, PD, QPN), -EINVAL, "o10-37.2.26: not type 1");
	/* a zero-length bind unbinds (no MR needed) */
	b = bind_req(k3, 4, 0, 0, 0);
	b.mr_key = 0;
	cr_assert_eq(mw_bind(mws, mrs, &b), 0);
	cr_assert_eq(mw_mr_bound(mws, mr_key), 0);
	cr_assert_eq(mw_check(mws, mrs, (k & ~0xffu) | 4, PD, QPN, MR_VA, 0, MR_ACCESS_REMOTE_READ,
			      &host), MR_ERR_KEY, "unbound");
}

Test(mw_table, bind_rules)
{
	uint32_t k = mw_key_make(2, 1);
	struct mw_bind_req b;

	cr_assert_eq(mw_open(mws, k, PD, MW_TYPE_1), 0);
	b = bind_req(k, 2, 0, 64, RW);
	b.mr_key = nobind_key;
	cr_assert_eq(mw_bind(mws, mrs, &b), -EACCES, "C10-73: the MR must allow MW binding");
	b = bind_req(k, 2, 0, 64, MR_ACCESS_REMOTE_WRITE);
	b.mr_key = ro_key;
	cr_assert_eq(mw_bind(mws, mrs, &b), -EACCES, "C10-74: a writable window needs local write");
	b.access = MR_ACCESS_REMOTE_READ;
	cr_assert_eq(mw_bind(mws, mrs, &b), 0, "a read-only window on it is fine");
	b = bind_req((k & ~0xffu) | 2, 3, 0, 64, RW);
	b.mr_key = zb_key;
	b.addr = 0;
	cr_assert_eq(mw_bind(mws, mrs, &b), -EACCES, "no windows on zero-based MRs");
	b = bind_req((k & ~0xffu) | 2, 3, MR_LEN - 8, 16, RW);
	cr_assert_eq(mw_bind(mws, mrs, &b), -EINVAL, "C10-75: inside the MR");
	b = bind_req((k & ~0xffu) | 2, 3, 0, 16, RW);
	b.addr = MR_VA - 8;
	cr_assert_eq(mw_bind(mws, mrs, &b), -EINVAL, "below the MR");
	b = bind_req((k & ~0xffu) | 2, 3, 0, UINT64_MAX, RW);
	cr_assert_eq(mw_bind(mws, mrs, &b), -EINVAL, "wrapping");
	b = bind_req((k & ~0xffu) | 2, 3, 0, 16, RW | MR_ACCESS_ZERO_BASED);
	cr_assert_eq(mw_bind(mws, mrs, &b), -EINVAL, "o10-36.2.2: type 1 is not zero-based");
	b = bind_req((k & ~0xffu) | 2, 3, 0, 16, RW | MR_ACCESS_MW_BIND);
	cr_assert_eq(mw_bind(mws, mrs, &b), -EINVAL, "a window grants no MW binding");
	b = bind_req((k & ~0xffu) | 2, 3, 0, 16, RW);
	b.pd = PD + 1;
	cr_assert_eq(mw_bind(mws, mrs, &b), -EACCES, "C10-72: the QP's PD is the MR's");
	b = bind_req(k, 3, 0, 16, RW);
	cr_assert_eq(mw_bind(mws, mrs, &b), -EINVAL, "a stale window key");
	b = bind_req((k & ~0xffu) | 2, 3, 0, 16, RW);
	b.mr_key = mr_key + 1;
	cr_assert_eq(mw_bind(mws, mrs, &b), -EINVAL, "a stale MR key");
	cr_assert_eq(mw_mr_bound(mws, ro_key), 1, "only the good bind counted");
	/* deregistered MR: the bound window reaches nothing */
	uint8_t *host;
	cr_assert_eq(mr_dereg(mrs, ro_key), 0);
	cr_assert_eq(mw_check(mws, mrs, (k & ~0xffu) | 2, PD, QPN, MR_VA, 8,
			      MR_ACCESS_REMOTE_READ, &host), MR_ERR_KEY);
	mw_close(mws, k);
	cr_assert_eq(mw_mr_bound(mws, ro_key), 0, "closing unbinds");
	cr_assert_eq(mw_open(mws, k, PD, MW_TYPE_2), 0, "the slot is free again");
}

Test(mw_table, type2_bound_to_its_qp)
{
	uint32_t k = mw_key_make(3, 1), k2 = (k & ~0xffu) | 9;
	struct mw_bind_req b;
	uint8_t *host;

	cr_assert_eq(mw_open(mws, k, PD, MW_TYPE_2), 0);
	b = bind_req(k, 9, 0, 0, RW);
	cr_assert_eq(mw_bind(mws, mrs, &b), -EINVAL, "o10-37.2.40: no zero-length type 2 bind");
	b = bind_req(k, 9, 0x40, 0x40, RW | MR_ACCESS_ZERO_BASED);
	cr_assert_eq(mw_bind(mws, mrs, &b), 0);
	b = bind_req(k2, 10, 0, 0x40, RW);
	cr_assert_eq(mw_bind(mws, mrs, &b), -EINVAL, "o10-37.2.30: bound, not free");
	/* zero-based: addresses are offsets into the window */
	cr_assert_eq(mw_check(mws, mrs, k2, PD, QPN, 0x8, 8, RW, &host), MR_OK);
	cr_assert_eq(host, mem + 0x48);
	cr_assert_eq(mw_check(mws, mrs, k2, PD, QPN, 0x40, 1, RW, &host), MR_ERR_RANGE);
	cr_assert_eq(mw_check(mws, mrs, k2, PD, QPN + 1, 0x8, 8, RW, &host), MR_ERR_PD,
		     "type 2B: only through the QP that bound it");
	cr_assert_eq(mw_invalidate(mws, k2, PD, QPN + 1), -EACCES, "another QP");
	cr_assert_eq(mw_invalidate(mws, k2, PD + 1, QPN), -EACCES, "another PD");
	cr_assert_eq(mw_invalidate(mws, k, PD, QPN), -ENOENT, "the old key");
	cr_assert_eq(mw_invalidate(mws, k2, PD, QPN), 0);
	cr_assert_eq(mw_invalidate(mws, k2, PD, QPN), -ENOENT, "once");
	cr_assert_eq(mw_check(mws, mrs, k2, PD, QPN, 0x8, 8, RW, &host), MR_ERR_KEY);
	cr_assert_eq(mw_mr_bound(mws, mr_key), 0);
	/* free again: bindable, and a gone QP unbinds its windows */
	b = bind_req(k2, 11, 0, 0x40, RW);
	cr_assert_eq(mw_bind(mws, mrs, &b), 0);
	mw_qp_gone(mws, QPN + 1);
	cr_assert_eq(mw_mr_bound(mws, mr_key), 1, "another QP's");
	mw_qp_gone(mws, QPN);
	cr_assert_eq(mw_mr_bound(mws, mr_key), 0);
	cr_assert_eq(mw_check(mws, mrs, (k & ~0xffu) | 11, PD, QPN, MR_VA, 8, RW, &host),
		     MR_ERR_KEY);
}

/* ---- the engine ---- */

static struct sim S;
static struct collect K;
static struct mw_table *smws;
static uint32_t bind_key[2]; /* each host's MR allowing MW binding: arena [0x10000, 0x20000) */

#define WIN_OFF 0x10000ull
#define WIN_LEN 0x10000ull

static void
sim_setup(void)
{
	struct sim_params p;

	sim_default_params(&p);
	smws = mw_table_create(16, 64);
	cr_assert_not_null(smws);
	p.mws = smws;
	cr_assert_eq(sim_init(&S, &p, 1), 0);
	for (int h = 0; h < 2; h++)
		cr_assert_eq(mr_reg(S.h[h].mrs, SIM_PD, (uintptr_t)S.h[h].arena + WIN_OFF,
				    sim_va(&S, h, WIN_OFF), WIN_LEN,
				    MR_ACCESS_LOCAL_WRITE | MR_ACCESS_MW_BIND, &bind_key[h]), 0);
	collect_init(&K);
}

static void
sim_teardown(void)
{
	collect_fini(&K);
	sim_fini(&S);
	mw_table_destroy(smws);
}

TestSuite(mw_engine, .init = sim_setup, .fini = sim_teardown, .timeout = 60);

/* Wait for @p n more send CQEs on host @p h (and @p r more receive CQEs). */
static void
wait_cqes(int h, uint32_t n, uint32_t r)
{
	K.want[h][0] = K.n[h][0] + n;
	K.want[h][1] = K.n[h][1] + r;
	K.want[1 - h][0] = K.n[1 - h][0];
	K.want[1 - h][1] = K.n[1 - h][1];
	cr_assert(sim_run(&S, collect_done, &K, S.now + SIM_DEADLINE_NS), "CQEs on host %d", h);
}

static const struct cqe *
last_send_cqe(int h)
{
	return &K.c[h][0][K.n[h][0] - 1];
}

/* Host @p h binds window @p mw (current key) with tag @p tag over [off, off + len) of its arena. */
static uint32_t
bind(int h, uint32_t mw, uint8_t tag, uint64_t off, uint64_t len, uint32_t access)
{
	struct sq_wqe w = wqe_new(WR_BIND_MW, 100 + tag, WR_FLAG_SIGNALED);

	w.wr.bind.mw_rkey = mw;
	w.wr.bind.rkey = tag;
	w.wr.bind.mr_lkey = bind_key[h];
	w.wr.bind.addr = sim_va(&S, h, off);
	w.wr.bind.length = len;
	w.wr.bind.access = access;
	cr_assert(sim_post_send(&S, h, &w));
	wait_cqes(h, 1, 0);
	return (mw & ~0xffu) | tag;
}

/* Host 0 RDMA-WRITEs (or READs) @p len bytes at host 1's @p va through @p rkey. */
static const struct cqe *
rdma(uint8_t op, uint32_t rkey, uint64_t va, uint32_t len)
{
	struct sq_wqe w = wqe_new(op, 7, WR_FLAG_SIGNALED);

	w.wr.rdma.remote_addr = va;
	w.wr.rdma.rkey = rkey;
	wqe_add_sge(&w, sim_va(&S, 0, 0), len, S.h[0].arena_key);
	cr_assert(sim_post_send(&S, 0, &w));
	wait_cqes(0, 1, 0);
	return last_send_cqe(0);
}

/* Host 1's access-error NAKs in @p cap with @p syndrome. */
static uint32_t
nak_count(const struct capture *cap, uint8_t syndrome)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < cap->n; i++)
		n += cap->from[i] == 1 && cap->pkt[i].opcode == ROCE_OP_RC_ACKNOWLEDGE &&
		     cap->pkt[i].aeth.syndrome == syndrome;
	return n;
}

Test(mw_engine, type1_write_and_read_through_the_window)
{
	uint32_t mw = mw_key_make(0, 1);
	struct capture cap;

	cr_assert_eq(mw_open(smws, mw, SIM_PD, MW_TYPE_1), 0);
	uint32_t rk = bind(1, mw, 0x22, WIN_OFF + 0x1000, 0x2000, RW);
	cr_assert_eq(last_send_cqe(1)->status, WC_SUCCESS);
	cr_assert_eq(last_send_cqe(1)->opcode, WC_BIND_MW);
	cr_assert_eq(last_send_cqe(1)->wr_id, 100 + 0x22);
	cr_assert_eq(mw_mr_bound(smws, bind_key[1]), 1);

	fill(S.h[0].arena, 4096, 5);
	const struct cqe *c = rdma(WR_RDMA_WRITE, rk, sim_va(&S, 1, WIN_OFF + 0x1800), 4096);
	cr_assert_eq(c->status, WC_SUCCESS, "status %u", c->status);
	cr_assert_eq(check_fill(S.h[1].arena + WIN_OFF + 0x1800, 4096, 5), -1, "the bytes landed");
	fill(S.h[1].arena + WIN_OFF + 0x1000, 64, 6);
	c = rdma(WR_RDMA_READ, rk, sim_va(&S, 1, WIN_OFF + 0x1000), 64);
	cr_assert_eq(c->status, WC_SUCCESS);
	cr_assert_eq(check_fill(S.h[0].arena, 64, 6), -1, "READ through the window");

	/* beyond the window: the remote access error NAK (IBA 9.7.5.2 step 4), QP in error */
	capture_attach(&S, &cap);
	c = rdma(WR_RDMA_WRITE, rk, sim_va(&S, 1, WIN_OFF + 0x2ff0), 32);
	cr_assert_eq(c->status, WC_REM_ACCESS_ERR, "status %u", c->status);
	cr_assert_eq(nak_count(&cap, ROCE_AETH_NAK_REM_ACC_ERR), 1);
	cr_assert_eq(xport_qp_counters(S.h[1].qp)[XPORT_CNT_NAK_ACCESS_TX], 1);
	S.filter = NULL;
}

Test(mw_engine, a_window_without_write_access_gets_the_nak)
{
	uint32_t mw = mw_key_make(1, 1);
	struct capture cap;

	cr_assert_eq(mw_open(smws, mw, SIM_PD, MW_TYPE_1), 0);
	uint32_t rk = bind(1, mw, 2, WIN_OFF, 0x1000, MR_ACCESS_REMOTE_READ);
	capture_attach(&S, &cap);
	const struct cqe *c = rdma(WR_RDMA_WRITE, rk, sim_va(&S, 1, WIN_OFF), 8);
	cr_assert_eq(c->status, WC_REM_ACCESS_ERR);
	cr_assert_eq(nak_count(&cap, ROCE_AETH_NAK_REM_ACC_ERR), 1);
	S.filter = NULL;
}

Test(mw_engine, the_arena_key_of_the_mr_is_no_window)
{
	/* the MR allowing binds grants no remote access by its own key */
	const struct cqe *c = rdma(WR_RDMA_WRITE, bind_key[1], sim_va(&S, 1, WIN_OFF), 8);

	cr_assert_eq(c->status, WC_REM_ACCESS_ERR);
}

Test(mw_engine, type2_local_invalidate)
{
	uint32_t mw = mw_key_make(2, 1);

	cr_assert_eq(mw_open(smws, mw, SIM_PD, MW_TYPE_2), 0);
	uint32_t rk = bind(1, mw, 0x33, WIN_OFF, 0x100, RW);
	cr_assert_eq(last_send_cqe(1)->status, WC_SUCCESS);
	cr_assert_eq(rdma(WR_RDMA_WRITE, rk, sim_va(&S, 1, WIN_OFF), 8)->status, WC_SUCCESS);

	struct sq_wqe w = wqe_new(WR_LOCAL_INV, 55, WR_FLAG_SIGNALED);
	w.imm_data = rk;
	cr_assert(sim_post_send(&S, 1, &w));
	wait_cqes(1, 1, 0);
	cr_assert_eq(last_send_cqe(1)->status, WC_SUCCESS);
	cr_assert_eq(last_send_cqe(1)->opcode, WC_LOCAL_INV);
	cr_assert_eq(last_send_cqe(1)->wr_id, 55);
	cr_assert_eq(mw_mr_bound(smws, bind_key[1]), 0);
	cr_assert_eq(rdma(WR_RDMA_WRITE, rk, sim_va(&S, 1, WIN_OFF), 8)->status, WC_REM_ACCESS_ERR,
		     "invalidated");
}

/* Host 0 sends 16 bytes with Invalidate of host 1's @p rkey into a receive host 1 posted. */
static void
send_inv(uint32_t rkey)
{
	struct rq_wqe r = rwqe_new(9, sim_va(&S, 1, 0), 64, S.h[1].arena_key);
	struct sq_wqe w = wqe_new(WR_SEND_WITH_INV, 10, WR_FLAG_SIGNALED);

	cr_assert(sim_post_recv(&S, 1, &r));
	w.imm_data = rkey;
	wqe_add_sge(&w, sim_va(&S, 0, 0), 16, S.h[0].arena_key);
	cr_assert(sim_post_send(&S, 0, &w));
	wait_cqes(0, 1, 0);
}

Test(mw_engine, type2_remote_invalidate)
{
	uint32_t mw = mw_key_make(3, 1);

	cr_assert_eq(mw_open(smws, mw, SIM_PD, MW_TYPE_2), 0);
	uint32_t rk = bind(1, mw, 0x44, WIN_OFF, 0x100, RW);
	send_inv(rk);
	K.want[1][1] = 1;
	cr_assert(sim_run(&S, collect_done, &K, S.now + SIM_DEADLINE_NS));
	cr_assert_eq(last_send_cqe(0)->status, WC_SUCCESS);
	const struct cqe *rc = &K.c[1][1][0];
	cr_assert_eq(rc->status, WC_SUCCESS);
	cr_assert(rc->wc_flags & WC_FLAG_WITH_INV);
	cr_assert_eq(rc->imm_data, rk);
	cr_assert_eq(mw_mr_bound(smws, bind_key[1]), 0);
	cr_assert_eq(rdma(WR_RDMA_WRITE, rk, sim_va(&S, 1, WIN_OFF), 8)->status, WC_REM_ACCESS_ERR);
}

Test(mw_engine, a_type1_window_cannot_be_invalidated_remotely)
{
	uint32_t mw = mw_key_make(4, 1);

	cr_assert_eq(mw_open(smws, mw, SIM_PD, MW_TYPE_1), 0);
	uint32_t rk = bind(1, mw, 5, WIN_OFF, 0x100, RW);
	send_inv(rk);
	cr_assert_eq(last_send_cqe(0)->status, WC_REM_INV_REQ_ERR);
	cr_assert_eq(mw_mr_bound(smws, bind_key[1]), 1, "still bound");
}

Test(mw_engine, a_refused_bind_completes_in_error)
{
	uint32_t mw = mw_key_make(5, 1);
	struct sq_wqe w = wqe_new(WR_BIND_MW, 1, 0); /* unsignaled: errors complete anyway */

	cr_assert_eq(mw_open(smws, mw, SIM_PD, MW_TYPE_2), 0);
	w.wr.bind.mw_rkey = mw;
	w.wr.bind.rkey = 2;
	w.wr.bind.mr_lkey = S.h[1].arena_key; /* no MW_BIND access */
	w.wr.bind.addr = sim_va(&S, 1, 0);
	w.wr.bind.length = 64;
	w.wr.bind.access = RW;
	cr_assert(sim_post_send(&S, 1, &w));
	wait_cqes(1, 1, 0);
	cr_assert_eq(last_send_cqe(1)->status, WC_MW_BIND_ERR);
	cr_assert_eq(last_send_cqe(1)->opcode, WC_BIND_MW);
	cr_assert_eq(last_send_cqe(1)->vendor_err, XPORT_ERR_LOC_BIND);
	cr_assert_eq(S.h[1].qp->state, XPORT_STATE_ERR);
	cr_assert_eq(mw_mr_bound(smws, S.h[1].arena_key), 0);
}

Test(mw_engine, a_local_invalidate_of_an_unknown_key_fails)
{
	struct sq_wqe w = wqe_new(WR_LOCAL_INV, 3, WR_FLAG_SIGNALED);

	w.imm_data = mw_key_make(9, 9);
	cr_assert(sim_post_send(&S, 0, &w));
	wait_cqes(0, 1, 0);
	cr_assert_eq(last_send_cqe(0)->status, WC_LOC_QP_OP_ERR);
	cr_assert_eq(last_send_cqe(0)->opcode, WC_LOCAL_INV);
}

/* A bind runs once the WQEs before it completed: its CQE follows theirs. */
Test(mw_engine, a_bind_waits_for_earlier_work_requests)
{
	uint32_t mw = mw_key_make(6, 1);
	struct sq_wqe w = wqe_new(WR_RDMA_WRITE, 1, WR_FLAG_SIGNALED);
	struct sq_wqe b = wqe_new(WR_BIND_MW, 2, WR_FLAG_SIGNALED);

	cr_assert_eq(mw_open(smws, mw, SIM_PD, MW_TYPE_1), 0);
	w.wr.rdma.remote_addr = sim_va(&S, 1, 0);
	w.wr.rdma.rkey = S.h[1].arena_key;
	wqe_add_sge(&w, sim_va(&S, 0, 0), 64 * 1024, S.h[0].arena_key);
	b.wr.bind.addr = sim_va(&S, 0, WIN_OFF);
	b.wr.bind.length = 64;
	b.wr.bind.mw_rkey = mw;
	b.wr.bind.rkey = 7;
	b.wr.bind.mr_lkey = bind_key[0];
	b.wr.bind.access = RW;
	cr_assert(sim_post_send(&S, 0, &w));
	cr_assert(sim_post_send(&S, 0, &b));
	sim_poll(&S);
	cr_assert_eq(mw_mr_bound(smws, bind_key[0]), 0, "not before the WRITE completed");
	wait_cqes(0, 2, 0);
	cr_assert_eq(K.c[0][0][0].wr_id, 1);
	cr_assert_eq(K.c[0][0][1].wr_id, 2);
	cr_assert_eq(K.c[0][0][1].status, WC_SUCCESS);
	cr_assert_eq(mw_mr_bound(smws, bind_key[0]), 1);
}
