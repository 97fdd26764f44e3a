/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared formats against libibverbs, the SPSC ring, the MR table, the
 * counter and step tables. */
#include <criterion/criterion.h>
#include <infiniband/verbs.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <signal.h>
#include <sys/mman.h>
#include <stddef.h>

#include "bell.h"
#include "util.h"
#include "xport_internal.h"

#define SAME(a, b) _Static_assert((int)(a) == (int)(b), #a " == " #b)

/* The shim copies these values straight into/out of libibverbs structs. */
SAME(WR_RDMA_WRITE, IBV_WR_RDMA_WRITE);
SAME(WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_WRITE_WITH_IMM);
SAME(WR_SEND, IBV_WR_SEND);
SAME(WR_SEND_WITH_IMM, IBV_WR_SEND_WITH_IMM);
SAME(WR_RDMA_READ, IBV_WR_RDMA_READ);
SAME(WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_CMP_AND_SWP);
SAME(WR_ATOMIC_FETCH_AND_ADD, IBV_WR_ATOMIC_FETCH_AND_ADD);
SAME(WR_LOCAL_INV, IBV_WR_LOCAL_INV);
SAME(WR_BIND_MW, IBV_WR_BIND_MW);
SAME(WR_SEND_WITH_INV, IBV_WR_SEND_WITH_INV);
SAME(WR_FLAG_FENCE, IBV_SEND_FENCE);
SAME(WR_FLAG_SIGNALED, IBV_SEND_SIGNALED);
SAME(WR_FLAG_SOLICITED, IBV_SEND_SOLICITED);
SAME(WR_FLAG_INLINE, IBV_SEND_INLINE);
SAME(WC_SUCCESS, IBV_WC_SUCCESS);
SAME(WC_LOC_LEN_ERR, IBV_WC_LOC_LEN_ERR);
SAME(WC_LOC_QP_OP_ERR, IBV_WC_LOC_QP_OP_ERR);
SAME(WC_LOC_PROT_ERR, IBV_WC_LOC_PROT_ERR);
SAME(WC_WR_FLUSH_ERR, IBV_WC_WR_FLUSH_ERR);
SAME(WC_BAD_RESP_ERR, IBV_WC_BAD_RESP_ERR);
SAME(WC_REM_INV_REQ_ERR, IBV_WC_REM_INV_REQ_ERR);
SAME(WC_REM_ACCESS_ERR, IBV_WC_REM_ACCESS_ERR);
SAME(WC_REM_OP_ERR, IBV_WC_REM_OP_ERR);
SAME(WC_RETRY_EXC_ERR, IBV_WC_RETRY_EXC_ERR);
SAME(WC_RNR_RETRY_EXC_ERR, IBV_WC_RNR_RETRY_EXC_ERR);
SAME(WC_REM_INV_RD_REQ_ERR, IBV_WC_REM_INV_RD_REQ_ERR);
SAME(WC_FATAL_ERR, IBV_WC_FATAL_ERR);
SAME(WC_GENERAL_ERR, IBV_WC_GENERAL_ERR);
SAME(WC_TM_ERR, IBV_WC_TM_ERR);
SAME(WC_TM_RNDV_INCOMPLETE, IBV_WC_TM_RNDV_INCOMPLETE);
SAME(WC_SEND, IBV_WC_SEND);
SAME(WC_RDMA_WRITE, IBV_WC_RDMA_WRITE);
SAME(WC_RDMA_READ, IBV_WC_RDMA_READ);
SAME(WC_COMP_SWAP, IBV_WC_COMP_SWAP);
SAME(WC_FETCH_ADD, IBV_WC_FETCH_ADD);
SAME(WC_LOCAL_INV, IBV_WC_LOCAL_INV);
SAME(WC_ATOMIC_WRITE, IBV_WC_ATOMIC_WRITE);
SAME(WC_RECV, IBV_WC_RECV);
SAME(WC_RECV_RDMA_WITH_IMM, IBV_WC_RECV_RDMA_WITH_IMM);
SAME(WC_TM_ADD, IBV_WC_TM_ADD);
SAME(WC_TM_DEL, IBV_WC_TM_DEL);
SAME(WC_TM_SYNC, IBV_WC_TM_SYNC);
SAME(WC_TM_RECV, IBV_WC_TM_RECV);
SAME(WC_TM_NO_TAG, IBV_WC_TM_NO_TAG);
SAME(WC_FLAG_GRH, IBV_WC_GRH);
SAME(WC_FLAG_WITH_IMM, IBV_WC_WITH_IMM);
SAME(WC_FLAG_IP_CSUM_OK, IBV_WC_IP_CSUM_OK);
SAME(WC_FLAG_WITH_INV, IBV_WC_WITH_INV);
SAME(WC_FLAG_TM_SYNC_REQ, IBV_WC_TM_SYNC_REQ);
SAME(WC_FLAG_TM_MATCH, IBV_WC_TM_MATCH);
SAME(WC_FLAG_TM_DATA_VALID, IBV_WC_TM_DATA_VALID);
SAME(ASYNC_CQ_ERR, IBV_EVENT_CQ_ERR);
SAME(ASYNC_QP_FATAL, IBV_EVENT_QP_FATAL);
SAME(ASYNC_QP_REQ_ERR, IBV_EVENT_QP_REQ_ERR);
SAME(ASYNC_QP_ACCESS_ERR, IBV_EVENT_QP_ACCESS_ERR);
SAME(ASYNC_COMM_EST, IBV_EVENT_COMM_EST);
SAME(ASYNC_SQ_DRAINED, IBV_EVENT_SQ_DRAINED);
SAME(ASYNC_SRQ_ERR, IBV_EVENT_SRQ_ERR);
SAME(ASYNC_SRQ_LIMIT_REACHED, IBV_EVENT_SRQ_LIMIT_REACHED);
SAME(ASYNC_QP_LAST_WQE_REACHED, IBV_EVENT_QP_LAST_WQE_REACHED);
SAME(MR_ACCESS_LOCAL_WRITE, IBV_ACCESS_LOCAL_WRITE);
SAME(MR_ACCESS_REMOTE_WRITE, IBV_ACCESS_REMOTE_WRITE);
SAME(MR_ACCESS_REMOTE_READ, IBV_ACCESS_REMOTE_READ);
SAME(MR_ACCESS_REMOTE_ATOMIC, IBV_ACCESS_REMOTE_ATOMIC);
SAME(MR_ACCESS_MW_BIND, IBV_ACCESS_MW_BIND);
SAME(MR_ACCESS_ZERO_BASED, IBV_ACCESS_ZERO_BASED);
SAME(XPORT_RC, IBV_QPT_RC);
SAME(XPORT_UC, IBV_QPT_UC);
SAME(XPORT_UD, IBV_QPT_UD);
_Static_assert(sizeof(struct wr_sge) == sizeof(struct ibv_sge), "");
_Static_assert(offsetof(struct wr_sge, addr) == offsetof(struct ibv_sge, addr), "");
_Static_assert(offsetof(struct wr_sge, length) == offsetof(struct ibv_sge, length), "");
_Static_assert(offsetof(struct wr_sge, lkey) == offsetof(struct ibv_sge, lkey), "");
_Static_assert(WQE_MAX_INLINE <= sizeof(((struct sq_wqe *)0)->sg_list), "inline shares the SGEs");

Test(formats, cqe_carries_every_ibv_wc_field)
{
	/* a CQE converts to an ibv_wc field by field without loss */
	struct cqe c = {
		.wr_id = 0x1122334455667788ull, .status = WC_REM_OP_ERR, .opcode = WC_RECV,
		.vendor_err = 3, .byte_len = 4096, .imm_data = 0xaabbccdd, .qp_num = 0x123456,
		.src_qp = 0x654321, .wc_flags = WC_FLAG_GRH | WC_FLAG_WITH_IMM, .pkey_index = 7,
		.slid = 9, .sl = 3, .dlid_path_bits = 1,
	};
	struct ibv_wc wc = {
		.wr_id = c.wr_id, .status = (enum ibv_wc_status)c.status,
		.opcode = (enum ibv_wc_opcode)c.opcode, .vendor_err = c.vendor_err,
		.byte_len = c.byte_len, .imm_data = c.imm_data, .qp_num = c.qp_num,
		.src_qp = c.src_qp, .wc_flags = c.wc_flags, .pkey_index = c.pkey_index,
		.slid = c.slid, .sl = c.sl, .dlid_path_bits = c.dlid_path_bits,
	};
	cr_assert_eq(wc.status, IBV_WC_REM_OP_ERR);
	cr_assert_eq(wc.opcode, IBV_WC_RECV);
	cr_assert_eq(wc.wc_flags, IBV_WC_GRH | IBV_WC_WITH_IMM);
	cr_assert_eq(wc.imm_data, 0xaabbccdd);
	cr_assert_eq(sizeof(struct cqe) % 64, 0, "one cache line");
}

/* ---- SPSC ring ---- */

static struct spsc_ring *
ring(uint32_t size, uint32_t elem)
{
	size_t bytes = spsc_ring_bytes(size, elem);
	cr_assert_gt(bytes, 0);
	struct spsc_ring *r = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
	cr_assert_eq(spsc_ring_init(r, size, elem), 0);
	return r;
}

/* ---- the work request opcode table (wqe.h WR_OPCODE_LIST) ---- */

/* IBTA 1.5 FLUSH: rdma-core 45's values; rdma-core 44 does not name them. */
enum { IBV_WR_FLUSH = 14, IBV_WC_FLUSH = 8 };

/* Every row's value is libibverbs' opcode of the same name. */
#define WR_SAME_AS_IBV(sym, value, kind, qpts, wc, imm, wire) SAME(WR_##sym, IBV_WR_##sym);
WR_OPCODE_LIST(WR_SAME_AS_IBV)
#undef WR_SAME_AS_IBV

/* What libibverbs says of each opcode: its completion, and where it is valid (IBA 10.8). */
static const struct {
	enum ibv_wr_opcode wr;
	enum ibv_wc_opcode wc;
	bool rc, uc, ud; /* as we support it: LOCAL_INV and BIND_MW on RC and UC (IBA 10.8.2) */
	bool imm, inv, payload_out;
} verbs_wr[] = {
	{ IBV_WR_RDMA_WRITE, IBV_WC_RDMA_WRITE, true, true, false, false, false, true },
	{ IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WC_RDMA_WRITE, true, true, false, true, false, true },
	{ IBV_WR_SEND, IBV_WC_SEND, true, true, true, false, false, true },
	{ IBV_WR_SEND_WITH_IMM, IBV_WC_SEND, true, true, true, true, false, true },
	{ IBV_WR_RDMA_READ, IBV_WC_RDMA_READ, true, false, false, false, false, false },
	{ IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WC_COMP_SWAP, true, false, false, false, false, false },
	{ IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WC_FETCH_ADD, true, false, false, false, false, false },
	{ IBV_WR_LOCAL_INV, IBV_WC_LOCAL_INV, true, true, false, false, true, false },
	{ IBV_WR_BIND_MW, IBV_WC_BIND_MW, true, true, false, false, false, false },
	{ IBV_WR_SEND_WITH_INV, IBV_WC_SEND, true, false, false, false, true, true },
	{ (enum ibv_wr_opcode)IBV_WR_FLUSH, (enum ibv_wc_opcode)IBV_WC_FLUSH, true, false, false,
	  false, false, false },
	{ IBV_WR_ATOMIC_WRITE, IBV_WC_ATOMIC_WRITE, true, false, false, false, false, true },
};

Test(wr_opcodes, table_agrees_with_libibverbs)
{
	unsigned int rows = 0;

#define WR_COUNT_ROW(sym, value, kind, qpts, wc, imm, wire) rows++;
	WR_OPCODE_LIST(WR_COUNT_ROW)
#undef WR_COUNT_ROW
	cr_assert_eq(rows, sizeof(verbs_wr) / sizeof(verbs_wr[0]), "one row per verbs opcode");
	for (size_t i = 0; i < sizeof(verbs_wr) / sizeof(verbs_wr[0]); i++) {
		struct wr_opcode_desc d = wr_opcode_desc(verbs_wr[i].wr);

		cr_expect_eq(d.wc_opcode, verbs_wr[i].wc, "wr %d: completion", verbs_wr[i].wr);
		cr_expect_eq(wr_opcode_valid(verbs_wr[i].wr, IBV_QPT_RC), verbs_wr[i].rc, "wr %d RC",
			     verbs_wr[i].wr);
		cr_expect_eq(wr_opcode_valid(verbs_wr[i].wr, IBV_QPT_UC), verbs_wr[i].uc, "wr %d UC",
			     verbs_wr[i].wr);
		cr_expect_eq(wr_opcode_valid(verbs_wr[i].wr, IBV_QPT_UD), verbs_wr[i].ud, "wr %d UD",
			     verbs_wr[i].wr);
		cr_expect_not(wr_opcode_valid(verbs_wr[i].wr, IBV_QPT_XRC_SEND), "wr %d XRC",
			      verbs_wr[i].wr);
		cr_expect_eq(d.imm == WR_IMM_DATA, verbs_wr[i].imm, "wr %d: immediate", verbs_wr[i].wr);
		cr_expect_eq(d.imm == WR_IMM_INV, verbs_wr[i].inv, "wr %d: invalidate", verbs_wr[i].wr);
		if (d.qp_types != 0)
			cr_expect_eq(wr_kind_sends_payload(d.kind), verbs_wr[i].payload_out,
				     "wr %d: may be inline", verbs_wr[i].wr);
		else
			cr_expect_eq(d.kind, WR_KIND_NONE);
	}
	/* not opcodes of ours: TSO, DRIVER1, beyond the table */
	for (uint32_t op = IBV_WR_SEND_WITH_INV + 1; op < 300; op++) {
		if (op == IBV_WR_FLUSH || op == IBV_WR_ATOMIC_WRITE)
			continue;
		cr_expect_not(wr_opcode_valid(op, IBV_QPT_RC), "wr %u", op);
		cr_expect_eq(wr_opcode_desc(op).kind, WR_KIND_NONE, "wr %u", op);
	}
}

/* The packets of each opcode on each QP type it is valid on are what lib/roce says they are. */
Test(wr_opcodes, wire_opcodes_match_lib_roce)
{
	static const uint32_t types[] = { XPORT_RC, XPORT_UC, XPORT_UD };
	static const uint16_t pos_kind[4] = {
		ROCE_KIND_FIRST, ROCE_KIND_MIDDLE, ROCE_KIND_LAST, ROCE_KIND_FIRST | ROCE_KIND_LAST,
	};
	static const uint16_t kind_bit[] = {
		[WR_KIND_SEND] = ROCE_KIND_SEND, [WR_KIND_WRITE] = ROCE_KIND_WRITE,
		[WR_KIND_READ] = ROCE_KIND_READ, [WR_KIND_ATOMIC] = ROCE_KIND_ATOMIC,
		[WR_KIND_ATOMIC_WRITE] = ROCE_KIND_ATOMIC_WRITE, [WR_KIND_FLUSH] = ROCE_KIND_FLUSH,
	};
	unsigned int checked = 0;

	for (uint32_t op = 0; op < WR_OPCODE_SLOTS; op++) {
		struct wr_opcode_desc d = wr_opcode_desc(op);

		for (size_t t = 0; t < 3; t++) {
			if (!wr_opcode_valid(op, types[t]) || d.kind == WR_KIND_LOCAL)
				continue; /* LOCAL_INV, BIND_MW: nothing on the wire */
			/* ATOMIC WRITE's 8 bytes are always one packet */
			bool multi = (d.kind == WR_KIND_SEND || d.kind == WR_KIND_WRITE) &&
				     types[t] != XPORT_UD;

			for (unsigned int pos = multi ? 0 : 3; pos < 4; pos++) {
				uint8_t wire = xport_wr_wire_opcode(op, types[t], pos);
				const struct roce_opcode_desc *r = roce_opcode_desc(wire);

				cr_assert_not_null(r, "wr %u type %u pos %u: 0x%02x", op, types[t], pos, wire);
				cr_expect_eq(roce_opcode_transport(wire),
					     types[t] == XPORT_RC ? ROCE_TRANSPORT_RC :
					     types[t] == XPORT_UC ? ROCE_TRANSPORT_UC : ROCE_TRANSPORT_UD,
					     "%s", r->name);
				cr_expect(r->kind & ROCE_KIND_REQUEST, "%s", r->name);
				cr_expect(r->kind & kind_bit[d.kind], "wr %u: %s", op, r->name);
				cr_expect_eq(r->kind & (ROCE_KIND_FIRST | ROCE_KIND_MIDDLE | ROCE_KIND_LAST),
					     pos_kind[pos], "wr %u pos %u: %s", op, pos, r->name);
				bool last = pos >= 2;
				cr_expect_eq(!!(r->kind & ROCE_KIND_IMM), last && d.imm == WR_IMM_DATA,
					     "%s", r->name);
				cr_expect_eq(!!(r->kind & ROCE_KIND_INV), last && d.imm == WR_IMM_INV,
					     "%s", r->name);
				checked++;
			}
		}
	}
	/* WRITE, WRITE_IMM: 4 + 4; SEND, SEND_IMM: 4 + 4 + 1; READ, CAS, FADD: 1; SEND_INV: 4;
	 * FLUSH, ATOMIC_WRITE: 1 */
	cr_expect_eq(checked, 8 + 8 + 9 + 9 + 1 + 1 + 1 + 4 + 1 + 1);
}

Test(ring, geometry)
{
	cr_assert_eq(spsc_ring_bytes(0, 8), 0);
	cr_assert_eq(spsc_ring_bytes(3, 8), 0);
	cr_assert_eq(spsc_ring_bytes(4, 12), 0);
	cr_assert_eq(spsc_ring_bytes(4, 0), 0);
	cr_assert_eq(spsc_ring_bytes(4, 8), sizeof(struct spsc_ring) + 32);
	cr_assert_eq(offsetof(struct spsc_ring, cons) - offsetof(struct spsc_ring, prod), 64,
		     "indices on separate cache lines");
	/* the producer reads the bell request after every publish: not on the
	 * line the consumer writes on every release */
	cr_assert_geq(offsetof(struct spsc_ring, cons_flags), offsetof(struct spsc_ring, cons) + 64);
}

Test(ring, fifo_full_empty_and_index_wrap)
{
	struct spsc_ring *r = ring(4, 8);
	/* free-running indices near 2^32 */
	r->prod = r->cons = UINT32_MAX - 5;
	uint64_t v, next = 0, got = 0;
	for (int round = 0; round < 10; round++) {
		while (spsc_ring_free_count(r)) {
			v = next++;
			cr_assert_eq(spsc_ring_push(r, &v), 1);
		}
		cr_assert_eq(spsc_ring_count(r), 4);
		cr_assert_eq(spsc_ring_push(r, &v), 0, "full");
		while (spsc_ring_pop(r, &v))
			cr_assert_eq(v, got++);
		cr_assert_eq(spsc_ring_count(r), 0);
	}
	cr_assert_eq(got, 40);
	free(r);
}

Test(ring, corrupt_producer_index_is_clamped)
{
	struct spsc_ring *r = ring(8, 8);
	r->prod = 1000; /* another process wrote nonsense */
	cr_assert_eq(spsc_ring_count(r), 8, "never more than the ring holds");
	free(r);
}

struct stress {
	struct spsc_ring *r;
	uint64_t n;
	uint64_t bad;
};

static void *
producer(void *arg)
{
	struct stress *s = arg;
	for (uint64_t i = 0; i < s->n;) {
		uint32_t free_n = spsc_ring_free_count(s->r), k = 0;
		if (free_n == 0)
			sched_yield();
		for (; k < free_n && i < s->n; k++, i++) {
			uint64_t *slot = spsc_ring_prod_slot(s->r, k);
			slot[0] = i;
			slot[1] = ~i;
		}
		spsc_ring_publish(s->r, k);
	}
	return NULL;
}

Test(ring, two_threads_keep_order, .timeout = 30)
{
	struct stress s = { .r = ring(64, 16), .n = 100000 };
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, producer, &s), 0);
	uint64_t expect = 0;
	while (expect < s.n) {
		uint32_t n = spsc_ring_count(s.r);
		if (n == 0)
			sched_yield();
		for (uint32_t k = 0; k < n; k++) {
			const uint64_t *slot = spsc_ring_cons_slot(s.r, k);
			if (slot[0] != expect || slot[1] != ~expect)
				s.bad++;
			expect++;
		}
		spsc_ring_release(s.r, n);
	}
	pthread_join(t, NULL);
	cr_assert_eq(s.bad, 0);
	free(s.r);
}

/*
 * Send doorbells (queue.h spsc_ring_want_bell / spsc_ring_publish_bell,
 * bell.h): a consumer that goes idle, re-reads the producer index, goes on
 * reading it for a grace period (as the daemon's go_idle() / poll_grace())
 * and then waits only for the bell never misses a record. The producer has
 * no fence between its index store and its flag load, so x86 may let the
 * load pass the store: the producer reads no flag while the consumer's
 * first re-read sees the old index, and nobody rings. The grace reads see
 * the store once it drains; a record that none of them saw and no bell
 * announced is lost.
 */
static uint64_t
mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Wait up to @p ns for a bell; @return whether one is rung. */
static bool
bell_wait(const struct shm_bells *b, uint64_t ns)
{
	uint64_t end = mono_ns() + ns;

	while (!shm_bells_any(b) && mono_ns() < end)
		sched_yield();
	return shm_bells_any(b);
}

struct bell_stress {
	struct spsc_ring *r;
	struct shm_bells *b;
	uint32_t n;
	uint32_t rung;
	bool stop;                /* the consumer gave up: stop producing */
};

static void *
bell_producer(void *arg)
{
	struct bell_stress *s = arg;

	for (uint32_t i = 0; i < s->n; i++) {
		while (spsc_ring_free_count(s->r) == 0) {
			if (__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE))
				return NULL;
			sched_yield();
		}
		*(uint64_t *)spsc_ring_prod_slot(s->r, 0) = i;
		if (spsc_ring_publish_bell(s->r, 1)) {
			shm_bell_ring(s->b, __atomic_load_n(&s->r->bell, __ATOMIC_RELAXED));
			s->rung++;
		}
	}
	return NULL;
}

Test(ring, an_idle_consumer_waiting_for_its_bell_misses_no_record)
{
	struct shm_bells *b = aligned_alloc(64, sizeof(*b));
	struct bell_stress s = { .r = ring(1, 8), .b = b, .n = 20000 };
	uint32_t got = 0, lost = 0, idled = 0, bad = 0;
	pthread_t t;

	cr_assert_not_null(b);
	memset(b, 0, sizeof(*b));
	uint64_t end = mono_ns() + 10000000000u; /* 10 s at most (ASan, load): engine_units has 60 */

	cr_assert_eq(pthread_create(&t, NULL, bell_producer, &s), 0);
	while (got < s.n && lost == 0 && mono_ns() < end) {
		if (spsc_ring_count(s.r) > 0) { /* no cr_assert while the producer runs */
			bad += *(uint64_t *)spsc_ring_cons_slot(s.r, 0) != got;
			spsc_ring_release(s.r, 1);
			got++;
			continue;
		}
		/* idle: ask for a bell, read the index for the grace, then only the bell */
		uint32_t seen = spsc_ring_cons_index(s.r);

		spsc_ring_want_bell(s.r, 77);
		idled++;
		for (uint64_t until = mono_ns() + SPSC_RING_BELL_GRACE_NS;
		     spsc_ring_prod_acquire(s.r) == seen && mono_ns() < until;)
			;
		if (spsc_ring_prod_acquire(s.r) == seen) {
			/* a record published and no bell 1 s later (the producer rings right after) */
			if (!bell_wait(b, 1000000000u) && spsc_ring_prod_acquire(s.r) != seen &&
			    !bell_wait(b, 1000000000u))
				lost++;
			/* bell 77 alone; its word may be empty (taken with an earlier summary) */
			for (uint64_t m = shm_bells_take_summary(b); m != 0; m &= m - 1) {
				uint32_t i = (uint32_t)__builtin_ctzll(m);
				uint64_t w = shm_bells_take_word(b, i);

				bad += i != 77 / 64 || (w != 0 && w != (uint64_t)1 << (77 % 64));
			}
		}
		spsc_ring_bell_off(s.r);
	}
	__atomic_store_n(&s.stop, true, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	cr_expect_eq(bad, 0, "records out of order or bells other than 77");
	cr_expect_eq(lost, 0, "records published without a bell: %u", lost);
	cr_expect_gt(got, 500, "records through: %u of %u in 10 s at most", got, s.n);
	cr_expect_gt(s.rung, 0, "the bell path ran (%u of %u idle spells)", s.rung, idled);
	free(s.r);
	free(b);
}

/* ---- MR table ---- */

Test(mr, register_check_and_keys)
{
	struct mr_table *t = mr_table_create(4);
	uint8_t buf[256];
	uint32_t k1, k2, k3, k4;
	uint8_t *host;
	cr_assert_eq(mr_reg(t, 1, (uintptr_t)buf, 0x1000, 256, MR_ACCESS_REMOTE_WRITE, &k1),
		     -EINVAL, "remote write needs local write");
	cr_assert_eq(mr_reg(t, 1, (uintptr_t)buf, 0x1000, 256,
			    MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_READ, &k1), 0);
	cr_assert_eq(mr_check(t, k1, 1, 0x1000, 256, MR_ACCESS_REMOTE_READ, &host), MR_OK);
	cr_assert_eq(host, buf);
	cr_assert_eq(mr_check(t, k1, 1, 0x1010, 16, 0, &host), MR_OK);
	cr_assert_eq(host, buf + 16, "host = MR host + (iova - MR iova)");
	cr_assert_eq(mr_check(t, k1, 2, 0x1000, 8, 0, &host), MR_ERR_PD);
	cr_assert_eq(mr_check(t, k1, 1, 0x1000, 8, MR_ACCESS_REMOTE_WRITE, &host), MR_ERR_ACCESS);
	cr_assert_eq(mr_check(t, k1, 1, 0xfff, 8, 0, &host), MR_ERR_RANGE);
	cr_assert_eq(mr_check(t, k1, 1, 0x10f9, 8, 0, &host), MR_ERR_RANGE);
	cr_assert_eq(mr_check(t, k1, 1, 0x1000, UINT64_MAX, 0, &host), MR_ERR_RANGE);
	cr_assert_eq(mr_check(t, 0, 1, 0x1000, 8, 0, &host), MR_ERR_KEY, "key 0 is never valid");
	cr_assert_eq(mr_reg(t, 1, (uintptr_t)buf, 0, 256, 0, &k2), 0);
	cr_assert_eq(mr_reg(t, 1, (uintptr_t)buf, 0, 256, 0, &k3), 0);
	cr_assert_eq(mr_reg(t, 1, (uintptr_t)buf, 0, 256, 0, &k4), -ENOSPC);
	/* dereg: the stale key never matches the slot's next registration */
	cr_assert_eq(mr_dereg(t, k2), 0);
	cr_assert_eq(mr_check(t, k2, 1, 0, 8, 0, &host), MR_ERR_KEY);
	cr_assert_eq(mr_reg(t, 1, (uintptr_t)buf, 0, 256, 0, &k4), 0);
	cr_assert_eq(k4 >> 8, k2 >> 8, "slot reused");
	cr_assert_neq(k4, k2);
	cr_assert_eq(mr_check(t, k2, 1, 0, 8, 0, &host), MR_ERR_KEY);
	cr_assert_eq(mr_dereg(t, k2), -ENOENT);
	/* invalidate */
	cr_assert_eq(mr_invalidate(t, k1, 2), -EACCES);
	cr_assert_eq(mr_invalidate(t, k1, 1), 0);
	cr_assert_eq(mr_check(t, k1, 1, 0x1000, 8, 0, &host), MR_ERR_KEY);
	cr_assert_eq(mr_invalidate(t, k1, 1), -ENOENT);
	cr_assert_str_eq(mr_status_name(MR_ERR_RANGE), "RANGE");
	mr_table_destroy(t);
	cr_assert_null(mr_table_create(1));
}

Test(mr, register_with_a_given_key_mixes_with_mr_reg)
{
	struct mr_table *t = mr_table_create(5); /* slots 1..4 */
	uint8_t buf[64];
	uint8_t *host;
	uint32_t k[4];

	cr_assert_eq(mr_reg_key(t, 0x0207, 1, (uintptr_t)buf, 0x2000, 64, MR_ACCESS_LOCAL_WRITE), 0);
	cr_assert_eq(mr_check(t, 0x0207, 1, 0x2000, 64, MR_ACCESS_LOCAL_WRITE, &host), MR_OK);
	cr_assert_eq(host, buf);
	cr_assert_eq(mr_check(t, 0x0208, 1, 0x2000, 8, 0, &host), MR_ERR_KEY, "other generation");
	cr_assert_eq(mr_reg_key(t, 0x0209, 1, (uintptr_t)buf, 0, 64, 0), -EEXIST, "slot taken");
	cr_assert_eq(mr_reg_key(t, 0x0001, 1, (uintptr_t)buf, 0, 64, 0), -EINVAL, "slot 0");
	cr_assert_eq(mr_reg_key(t, 0x0501, 1, (uintptr_t)buf, 0, 64, 0), -EINVAL, "beyond capacity");
	cr_assert_eq(mr_reg_key(t, 0x0301, 1, (uintptr_t)buf, 0, 64, MR_ACCESS_REMOTE_WRITE),
		     -EINVAL, "remote write needs local write");
	/* mr_reg() never hands out slot 2 while the keyed registration lives */
	cr_assert_eq(mr_reg(t, 1, (uintptr_t)buf, 0, 64, 0, &k[0]), 0);
	cr_assert_eq(mr_reg(t, 1, (uintptr_t)buf, 0, 64, 0, &k[1]), 0);
	cr_assert_eq(mr_reg(t, 1, (uintptr_t)buf, 0, 64, 0, &k[2]), 0);
	cr_assert_eq(mr_reg(t, 1, (uintptr_t)buf, 0, 64, 0, &k[3]), -ENOSPC);
	for (int i = 0; i < 3; i++)
		cr_assert_neq(k[i] >> 8, 2u);
	cr_assert_eq(t->count, 4);
	/* after deregistration the slot returns to the free list exactly once */
	cr_assert_eq(mr_dereg(t, 0x0207), 0);
	cr_assert_eq(mr_reg(t, 1, (uintptr_t)buf, 0, 64, 0, &k[3]), 0);
	cr_assert_eq(k[3] >> 8, 2u);
	cr_assert_eq(mr_reg(t, 1, (uintptr_t)buf, 0, 64, 0, &k[3]), -ENOSPC);
	/* a keyed registration of a slot in the middle of the free list */
	cr_assert_eq(mr_dereg(t, k[0]), 0);
	cr_assert_eq(mr_dereg(t, k[1]), 0);
	cr_assert_eq(mr_dereg(t, k[2]), 0);
	cr_assert_eq(mr_reg_key(t, (k[1] & ~0xffu) | 0x42, 1, (uintptr_t)buf, 0, 64, 0), 0);
	cr_assert_eq(mr_reg(t, 1, (uintptr_t)buf, 0, 64, 0, &k[0]), 0);
	cr_assert_eq(mr_reg(t, 1, (uintptr_t)buf, 0, 64, 0, &k[2]), 0);
	cr_assert_neq(k[0] >> 8, k[1] >> 8);
	cr_assert_neq(k[2] >> 8, k[1] >> 8);
	cr_assert_eq(mr_reg(t, 1, (uintptr_t)buf, 0, 64, 0, &k[3]), -ENOSPC);
	mr_table_destroy(t);
}

/* ---- tables ---- */

Test(tables, names_complete_and_unique)
{
	for (int i = 0; i < XPORT_CNT_COUNT; i++) {
		cr_assert_not_null(xport_counter_name(i));
		cr_assert_gt(strlen(xport_counter_desc(i)), 0);
		for (int j = 0; j < i; j++)
			cr_assert_str_neq(xport_counter_name(i), xport_counter_name(j));
	}
	cr_assert_str_eq(xport_counter_name(XPORT_CNT_TX_PKTS), "TX_PKTS");
	cr_assert_str_eq(xport_counter_name(XPORT_CNT_COUNT), "?");
	cr_assert_str_eq(xport_err_name(XPORT_ERR_RETRY_EXC), "RETRY_EXC");
	cr_assert_str_eq(xport_req_step_name(0), "GET_WQE");
	cr_assert_str_eq(xport_comp_step_name(0), "ACK_RUN");
	cr_assert_str_eq(xport_resp_step_name(0), "CHECK_PSN");
	cr_assert_str_eq(xport_resp_step_name(1000), "?");
}

/* A simulation with the default parameters (@p p) and host 0's QP config. */
static struct xport_cfg
sim_one_host(struct sim *s, struct sim_params *p)
{
	sim_default_params(p);
	cr_assert_eq(sim_init(s, p, 1), 0);
	return s->h[0].cfg;
}

Test(tables, invalid_config_rejected)
{
	struct sim s;
	struct sim_params p;
	struct xport_cfg c = sim_one_host(&s, &p);
	c.path_mtu = 6;
	cr_assert_null(xport_qp_create(&c));
	c = s.h[0].cfg;
	c.type = 7;
	cr_assert_null(xport_qp_create(&c));
	c = s.h[0].cfg;
	c.max_dest_rd_atomic = XPORT_MAX_RD_ATOMIC + 1;
	cr_assert_null(xport_qp_create(&c));
	c = s.h[0].cfg;
	c.rq = NULL;
	cr_assert_null(xport_qp_create(&c));
	c = s.h[0].cfg;
	cr_assert_eq(xport_qp_mem_size(&c) > sizeof(struct xport_swqe) * p.sq_size, 1);
	sim_fini(&s);
}

/* Responder resources are per QP memory sized to max_dest_rd_atomic (RC
 * only), not XPORT_MAX_RD_ATOMIC in every QP; modify grows them. */
Test(tables, responder_resources_sized_per_qp)
{
	struct sim s;
	struct sim_params p;
	struct xport_cfg c = sim_one_host(&s, &p);
	c.max_dest_rd_atomic = 1;
	size_t one = xport_qp_mem_size(&c);
	c.max_dest_rd_atomic = XPORT_MAX_RD_ATOMIC;
	size_t all = xport_qp_mem_size(&c);
	cr_assert_eq(all - one, (XPORT_MAX_RD_ATOMIC - 1) * sizeof(struct xport_res));
	cr_assert_lt(sizeof(struct xport_qp), XPORT_MAX_RD_ATOMIC * sizeof(struct xport_res),
		     "the object holds no resource array");
	struct xport_cfg u = s.h[0].cfg;
	u.type = XPORT_UC;
	u.max_dest_rd_atomic = 1;
	size_t uc_one = xport_qp_mem_size(&u);
	u.max_dest_rd_atomic = 200; /* not checked for UC: no resources either way */
	cr_assert_eq(xport_qp_mem_size(&u), uc_one);

	/* created small, grown and shrunk in RESET, grown again when live */
	c.max_dest_rd_atomic = 1;
	struct xport_qp *qp = xport_qp_create(&c);
	cr_assert_not_null(qp);
	cr_assert_eq(qp->res_cap, 1);
	c.max_dest_rd_atomic = 16;
	cr_assert_eq(xport_qp_modify(qp, &c), 0);
	cr_assert_eq(qp->res_cap, 16);
	cr_assert(qp->res_heap);
	c.max_dest_rd_atomic = 4;
	cr_assert_eq(xport_qp_modify(qp, &c), 0);
	cr_assert_eq(qp->res_cap, 16, "kept, not reallocated");
	xport_out_reset(&s.out);
	xport_qp_set_state(qp, XPORT_STATE_RTR, 0, &s.out);
	c.max_dest_rd_atomic = XPORT_MAX_RD_ATOMIC;
	cr_assert_eq(xport_qp_modify(qp, &c), 0);
	cr_assert_eq(qp->res_cap, XPORT_MAX_RD_ATOMIC);
	c.max_dest_rd_atomic = XPORT_MAX_RD_ATOMIC + 1;
	cr_assert_eq(xport_qp_modify(qp, &c), -EINVAL);
	cr_assert_eq(qp->cfg.max_dest_rd_atomic, XPORT_MAX_RD_ATOMIC, "unchanged");
	xport_qp_destroy(qp); /* frees the grown array too (ASan: no leak) */

	/* xport_qp_init() memory: fini releases what modify allocated */
	c.max_dest_rd_atomic = 2;
	size_t size = xport_qp_mem_size(&c);
	void *mem = aligned_alloc(64, (size + 63) & ~(size_t)63);
	qp = xport_qp_init(mem, &c);
	cr_assert_not_null(qp);
	cr_assert_not(qp->res_heap);
	c.max_dest_rd_atomic = 32;
	cr_assert_eq(xport_qp_modify(qp, &c), 0);
	xport_qp_fini(qp);
	free(mem);
	sim_fini(&s);
}

/*
 * Shadow send WQEs hold the QP's SGEs (or inline bytes), not WQE_MAX_SGE:
 * the QP of bench/qp_hold (max_send_wr 1: two slots, one SGE, one
 * responder resource) took 2 584 bytes of engine memory, 1 728 of them the
 * object (with a 216-byte header template), 2 x 408 the full slots; now
 * 1 600 (a 96-byte template) + 2 x 168 + 40 = 1 976. Bound: 2 048 (2 kB,
 * a cache line of growth; the daemon's Rss per QP goal is 8 kB in all).
 */
Test(tables, shadow_slots_sized_to_the_sq_caps)
{
	struct sim s;
	struct sim_params p;
	struct xport_cfg c = sim_one_host(&s, &p);
	c.sq_size = 2;
	c.max_dest_rd_atomic = 1;
	c.sq_max_sge = 0;
	size_t full = xport_qp_mem_size(&c);
	c.sq_max_sge = WQE_MAX_SGE;
	cr_assert_eq(xport_qp_mem_size(&c), full);
	c.sq_max_sge = 1;
	size_t one = xport_qp_mem_size(&c);
	cr_assert_eq(full - one, 2 * (WQE_MAX_SGE - 1) * sizeof(struct wr_sge));
	cr_assert_leq(one, 2048, "engine memory of a small QP: %zu bytes", one);
	c.sq_max_sge = 2;
	cr_assert_eq(xport_qp_mem_size(&c) - one, 2 * sizeof(struct wr_sge));

	/* fixed at create; an SRQ QP has whole slots (tag matching READs) */
	c.sq_max_sge = 1;
	struct xport_qp *qp = xport_qp_create(&c);
	cr_assert_not_null(qp);
	cr_assert_eq(qp->sq_max_sge, 1);
	cr_assert_eq(swqe_at(qp, 2), swqe_at(qp, 0), "two slots: index 2 is slot 0");
	cr_assert_eq((uint8_t *)swqe_at(qp, 1) - (uint8_t *)swqe_at(qp, 0), qp->swqe_stride);
	cr_assert_eq(qp->swqe_stride, 168);
	c.sq_max_sge = 2;
	cr_assert_eq(xport_qp_modify(qp, &c), -EINVAL, "the slots cannot grow");
	c.sq_max_sge = 1;
	cr_assert_eq(xport_qp_modify(qp, &c), 0);
	xport_qp_destroy(qp);
	sim_fini(&s);

	p.srq = true;
	cr_assert_eq(sim_init(&s, &p, 1), 0);
	c = s.h[1].cfg;
	cr_assert_not_null(c.srq);
	c.sq_max_sge = 1;
	qp = xport_qp_create(&c);
	cr_assert_not_null(qp);
	cr_assert_eq(qp->sq_max_sge, WQE_MAX_SGE);
	xport_qp_destroy(qp);
	sim_fini(&s);
}

/* ---- rings written by a hostile application ---- */

/* An application scribbles over every ring header it shares with the daemon. */
static void
corrupt_header(struct spsc_ring *r)
{
	r->size = 1u << 30;
	r->mask = UINT32_MAX;
	r->elem_size = 1u << 20;
}

/* Producer side with the geometry the test allocated (the header is garbage). */
static void *
true_slot(struct spsc_ring *r, uint32_t size, uint32_t elem, uint32_t index)
{
	return spsc_ring_slot_in(r, size - 1, elem, index);
}

static bool
cqes_arrived(struct sim *s, void *arg)
{
	(void)arg;
	return s->h[0].scq_ring->prod != s->h[0].scq_ring->cons &&
	       s->h[1].rcq_ring->prod != s->h[1].rcq_ring->cons;
}

Test(untrusted_rings, engine_indexes_with_trusted_geometry_only)
{
	struct sim s;
	struct sim_params p;
	sim_default_params(&p);
	cr_assert_eq(sim_init(&s, &p, 7), 0);
	struct sim_host *a = &s.h[0], *b = &s.h[1];
	corrupt_header(a->sq);
	corrupt_header(a->rq);
	corrupt_header(a->scq_ring);
	corrupt_header(a->rcq_ring);
	corrupt_header(b->sq);
	corrupt_header(b->rq);
	corrupt_header(b->scq_ring);
	corrupt_header(b->rcq_ring);

	/* index wrap on top: the slots are (index & true mask) */
	struct rq_wqe *rw = true_slot(b->rq, p.rq_size, sizeof(*rw), b->rq->prod);
	*rw = (struct rq_wqe){ .wr_id = 0xbeef, .num_sge = 1,
			       .sg_list[0] = { sim_va(&s, 1, 0), 64, b->arena_key } };
	__atomic_store_n(&b->rq->prod, b->rq->prod + 1, __ATOMIC_RELEASE);
	memset(a->arena, 0x5a, 64);
	struct sq_wqe *sw = true_slot(a->sq, p.sq_size, sizeof(*sw), a->sq->prod);
	*sw = (struct sq_wqe){ .wr_id = 0xcafe, .opcode = WR_SEND, .num_sge = 1,
			       .send_flags = WR_FLAG_SIGNALED,
			       .sg_list[0] = { sim_va(&s, 0, 0), 64, a->arena_key } };
	__atomic_store_n(&a->sq->prod, a->sq->prod + 1, __ATOMIC_RELEASE);
	cr_assert(sim_run(&s, cqes_arrived, NULL, s.now + 1000000000ull));
	const struct cqe *sc = true_slot(a->scq_ring, p.cq_size, sizeof(*sc), a->scq_ring->cons);
	const struct cqe *rc = true_slot(b->rcq_ring, p.cq_size, sizeof(*rc), b->rcq_ring->cons);
	cr_assert_eq(sc->wr_id, 0xcafe);
	cr_assert_eq(sc->status, WC_SUCCESS);
	cr_assert_eq(rc->wr_id, 0xbeef);
	cr_assert_eq(rc->byte_len, 64);
	cr_assert_eq(b->arena[63], 0x5a, "payload placed");

	/* a producer index far beyond the ring: the engine starts nothing */
	uint64_t sent = s.frames_sent;
	__atomic_store_n(&a->sq->prod, a->sq->prod + 5000000, __ATOMIC_RELEASE);
	__atomic_store_n(&b->rq->prod, b->rq->prod + 5000000, __ATOMIC_RELEASE);
	sim_run(&s, cqes_arrived, NULL, s.now + 1000000ull);
	cr_assert_eq(s.frames_sent, sent, "garbage producer index: nothing fetched");
	/* the error flush walks at most one ring's worth, inside the ring */
	sim_set_state(&s, 1, XPORT_STATE_ERR);
	sim_set_state(&s, 0, XPORT_STATE_ERR);
	for (int i = 0; i < 8; i++)
		sim_run(&s, cqes_arrived, NULL, s.now + 1000000ull);
	cr_assert_leq(b->rcq_ring->prod - b->rcq_ring->cons, p.cq_size);
	sim_fini(&s);
}

/*
 * Found by fuzz/fuzz_xport.c: a QP in the error state whose client moved a
 * producer index far beyond the ring flushed phantom WQEs forever (one
 * budget per poll, out.more always set: its lcore never idled). A producer
 * more than a ring ahead broke the ring, as the requester already decides
 * (xport_req.c): its slots are not flushed; what was fetched still is.
 */
Test(untrusted_rings, an_overrun_producer_index_does_not_keep_the_flush_going)
{
	struct sim s;
	struct sim_params p;
	sim_default_params(&p);
	p.sq_size = p.rq_size = 16;
	cr_assert_eq(sim_init(&s, &p, 7), 0);
	for (int h = 0; h < 2; h++) {
		struct sim_host *x = &s.h[h];

		__atomic_store_n(&x->sq->prod, x->sq->prod + 0x80000000u, __ATOMIC_RELEASE);
		__atomic_store_n(&x->rq->prod, x->rq->prod + 0x80000000u, __ATOMIC_RELEASE);
		sim_set_state(&s, h, XPORT_STATE_ERR);
		bool idle = false;
		for (int i = 0; i < 64 && !idle; i++) {
			xport_out_reset(&s.out);
			xport_qp_poll(x->qp, s.now, &s.out);
			idle = !s.out.more;
		}
		cr_assert(idle, "host %d: the error flush stops", h);
		cr_assert_leq(xport_qp_counters(x->qp)[XPORT_CNT_CQ_OVERFLOW], 0,
			      "host %d: no phantom completions", h);
	}
	sim_fini(&s);
}

/* ---- ibv_modify_qp order: sq_psn arrives with RTR -> RTS ---- */

static uint32_t first_psn;
static bool first_seen;

static bool
note_first_psn(void *arg, int from, const struct roce_pkt *pkt)
{
	(void)arg;
	if (from == 0 && !first_seen) {
		first_psn = pkt->psn;
		first_seen = true;
	}
	return true;
}

static bool
send_completed(struct sim *s, void *arg)
{
	(void)arg;
	return s->h[0].scq_ring->prod != s->h[0].scq_ring->cons;
}

Test(modify, sq_psn_given_at_rtr_to_rts_is_the_first_psn)
{
	struct sim s;
	struct sim_params p;
	sim_default_params(&p);
	cr_assert_eq(sim_init(&s, &p, 11), 0);
	sim_set_state(&s, 0, XPORT_STATE_RESET);
	sim_set_state(&s, 1, XPORT_STATE_RESET);
	/* the responder learns the PSN in RESET -> RTR */
	struct xport_cfg c1 = s.h[1].cfg;
	c1.rq_psn = 0xabcdef;
	cr_assert_eq(xport_qp_modify(s.h[1].qp, &c1), 0);
	sim_set_state(&s, 1, XPORT_STATE_RTR);
	sim_set_state(&s, 1, XPORT_STATE_RTS);
	/* the requester goes to RTR first, then RTR -> RTS carries sq_psn */
	sim_set_state(&s, 0, XPORT_STATE_RTR);
	struct xport_cfg c0 = s.h[0].cfg;
	c0.sq_psn = 0xabcdef;
	cr_assert_eq(xport_qp_modify(s.h[0].qp, &c0), 0);
	sim_set_state(&s, 0, XPORT_STATE_RTS);
	cr_assert_eq(xport_qp_sq_psn(s.h[0].qp), 0xabcdef);
	s.filter = note_first_psn;
	first_seen = false;
	struct rq_wqe rw = { .wr_id = 1, .num_sge = 1,
			     .sg_list[0] = { sim_va(&s, 1, 0), 64, s.h[1].arena_key } };
	cr_assert(sim_post_recv(&s, 1, &rw));
	struct sq_wqe sw = { .wr_id = 2, .opcode = WR_SEND, .num_sge = 1,
			     .send_flags = WR_FLAG_SIGNALED,
			     .sg_list[0] = { sim_va(&s, 0, 0), 64, s.h[0].arena_key } };
	cr_assert(sim_post_send(&s, 0, &sw));
	cr_assert(sim_run(&s, send_completed, NULL, s.now + 1000000000ull));
	cr_assert(first_seen);
	cr_assert_eq(first_psn, 0xabcdef);
	struct cqe c;
	cr_assert(sim_poll_cq(&s, 0, false, &c));
	cr_assert_eq(c.status, WC_SUCCESS, "no PSN mismatch, no retries");
	cr_assert_eq(xport_qp_counters(s.h[0].qp)[XPORT_CNT_RETRANSMIT_PKTS], 0);
	/* once live, a later sq_psn is progress, not configuration */
	c0.sq_psn = 0x10;
	cr_assert_eq(xport_qp_modify(s.h[0].qp, &c0), 0);
	cr_assert_neq(xport_qp_sq_psn(s.h[0].qp), 0x10);
	sim_fini(&s);
}

/* ---- completion ordering ---- */

/*
 * A CQE visible for WR k must find WR k's SQ slot free: an application that
 * polls the CQE and posts at once (max_send_wr 1: ib_read_lat -R) may not
 * find the SQ full. Order checked at the very store that publishes the CQE:
 * the page holding the send CQ's producer index is read-only while the
 * engine runs, so the store faults; the handler reads the SQ's consumer
 * index, which the engine must have released already, then lets the store
 * through. Deterministic: no second thread, no timing.
 */
static struct {
	struct spsc_ring *sq, *scq; /* the work queue and the CQ its completions go to */
	void *page;
	volatile uint32_t checked, early;
} order;

static void
order_on_write(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	uintptr_t a = (uintptr_t)si->si_addr, pg = (uintptr_t)order.page;
	if (a < pg || a >= pg + 4096) { /* not ours: crash as without the handler */
		signal(sig, SIG_DFL);
		return;
	}
	if (a == (uintptr_t)&order.scq->prod) {
		uint32_t next = order.scq->prod + 1; /* the value being stored */
		order.checked++;
		order.early += (int32_t)(__atomic_load_n(&order.sq->cons, __ATOMIC_RELAXED) - next) < 0;
	}
	mprotect(order.page, 4096, PROT_READ | PROT_WRITE); /* the store retries and lands */
}

static bool
one_send_cqe(struct sim *s, void *arg)
{
	struct cqe c;
	if (!sim_poll_cq(s, 0, false, &c))
		return false;
	*(struct cqe *)arg = c;
	return true;
}

/* Watch @p wq's consumer index at every publication of @p cq (its first page). */
static struct sigaction
order_watch(struct spsc_ring *wq, struct spsc_ring *cq)
{
	struct sigaction sa = { .sa_sigaction = order_on_write, .sa_flags = SA_SIGINFO }, old;

	order.sq = wq;
	order.scq = cq;
	order.page = cq; /* rings are page-aligned (sim.c pool_take) */
	order.checked = order.early = 0;
	cr_assert_eq(sigaction(SIGSEGV, &sa, &old), 0);
	return old;
}

/* Stop watching; of @p n publications, all but those whose CQE slot shares
 * the page (twice round the ring) were checked, and none was early. */
static void
order_verdict(const struct sigaction *old, uint32_t n, const char *wq)
{
	uint32_t on_page = (4096 - offsetof(struct spsc_ring, slots)) / sizeof(struct cqe);

	sigaction(SIGSEGV, old, NULL);
	cr_assert_geq(order.checked, n - 2 * (on_page + 1), "%u of %u publications checked",
		      order.checked, n);
	cr_assert_eq(order.early, 0, "%u of %u CQEs were published while their %s slot was held",
		     order.early, order.checked, wq);
}

Test(completion_order, the_sq_slot_is_free_before_its_cqe_is_published)
{
	struct sim s;
	struct sim_params p;
	sim_default_params(&p);
	p.sq_size = 1; /* the application's max_send_wr */
	cr_assert_eq(sim_init(&s, &p, 7), 0);
	struct sigaction old = order_watch(s.h[0].sq, s.h[0].scq_ring);

	uint32_t n = 2 * p.cq_size;
	for (uint32_t k = 0; k < n; k++) {
		struct sq_wqe q = wqe_new(WR_RDMA_WRITE, k, WR_FLAG_SIGNALED);
		wqe_add_sge(&q, sim_va(&s, 0, 0), 8, s.h[0].arena_key);
		q.wr.rdma.remote_addr = sim_va(&s, 1, 64);
		q.wr.rdma.rkey = s.h[1].arena_key;
		/* as the application: the last WR's CQE was polled, so there is room */
		cr_assert(sim_post_send(&s, 0, &q), "SQ full after WR %u completed", k);
		/*
		 * The first write to the page in this run is the CQE's publication,
		 * unless the CQE's slot is on the page too (the first few slots):
		 * then the slot's write opens the page and this WR is not checked.
		 */
		cr_assert_eq(mprotect(order.page, 4096, PROT_READ), 0);
		struct cqe c;
		bool got = sim_run(&s, one_send_cqe, &c, s.now + 1000000000ull);
		mprotect(order.page, 4096, PROT_READ | PROT_WRITE);
		cr_assert(got);
		cr_assert_eq(c.wr_id, k);
		cr_assert_eq(c.status, WC_SUCCESS);
	}
	order_verdict(&old, n, "SQ");
	sim_fini(&s);
}

/* The same for receive WQEs flushed in the error state (reposted at once). */
Test(completion_order, a_flushed_receive_slot_is_free_before_its_cqe_is_published)
{
	struct sim s;
	struct sim_params p;
	sim_default_params(&p);
	p.rq_size = 1; /* the application's max_recv_wr */
	cr_assert_eq(sim_init(&s, &p, 7), 0);
	sim_set_state(&s, 1, XPORT_STATE_ERR);
	struct sigaction old = order_watch(s.h[1].rq, s.h[1].rcq_ring);

	uint32_t n = 2 * p.cq_size;
	for (uint32_t k = 0; k < n; k++) {
		struct rq_wqe r = rwqe_new(k, sim_va(&s, 1, 0), 64, s.h[1].arena_key);
		cr_assert(sim_post_recv(&s, 1, &r), "RQ full after WR %u was flushed", k);
		cr_assert_eq(mprotect(order.page, 4096, PROT_READ), 0);
		sim_poll(&s);
		mprotect(order.page, 4096, PROT_READ | PROT_WRITE);
		struct cqe c;
		cr_assert(sim_poll_cq(&s, 1, true, &c));
		cr_assert_eq(c.wr_id, k);
		cr_assert_eq(c.status, WC_WR_FLUSH_ERR);
	}
	order_verdict(&old, n, "RQ");
	sim_fini(&s);
}

/* ---- counters: every write marks its counter (xport_qp_counters_dirty) ---- */

struct dirty_watch {
	uint64_t shadow[2][XPORT_CNT_COUNT];
	uint32_t steps, changed, unmarked;
	uint32_t want;            /* send completions of host 0 to stop at */
	uint32_t got;
};

/* After every step of the simulated link: a counter that changed has its bit. */
static bool
dirty_step(struct sim *s, void *arg)
{
	struct dirty_watch *d = arg;
	struct cqe c;

	for (int h = 0; h < 2; h++) {
		const uint64_t *v = xport_qp_counters(s->h[h].qp);
		uint64_t m = xport_qp_counters_dirty(s->h[h].qp);

		for (unsigned int i = 0; i < XPORT_CNT_COUNT; i++) {
			if (v[i] == d->shadow[h][i])
				continue;
			d->changed++;
			d->unmarked += !(m >> i & 1);
			d->shadow[h][i] = v[i];
		}
	}
	d->steps++;
	while (sim_poll_cq(s, 0, false, &c))
		d->got++;
	while (sim_poll_cq(s, 1, true, &c))
		;
	return d->got >= d->want;
}

Test(counters, every_write_marks_its_counter_dirty)
{
	struct sim s;
	struct sim_params p;
	sim_default_params(&p);
	cr_assert_eq(sim_init(&s, &p, 11), 0);
	s.faults.loss_ppm = 50000; /* retransmission, NAKs, duplicates: many counters */
	s.faults.dup_ppm = 20000;
	s.faults.reorder_ppm = 20000;
	s.faults.delay_ns = 2000;
	s.faults.reorder_ns = 8000;
	static struct dirty_watch d;
	memset(&d, 0, sizeof(d));
	for (int h = 0; h < 2; h++) /* what sim_init did is not under test */
		xport_qp_counters_dirty(s.h[h].qp);
	memcpy(d.shadow[0], xport_qp_counters(s.h[0].qp), sizeof(d.shadow[0]));
	memcpy(d.shadow[1], xport_qp_counters(s.h[1].qp), sizeof(d.shadow[1]));

	for (uint32_t k = 0; k < 64; k++) {
		static const uint8_t ops[] = { WR_RDMA_WRITE, WR_RDMA_READ, WR_SEND,
					       WR_ATOMIC_FETCH_AND_ADD };
		uint8_t op = ops[k % 4];
		uint32_t len = op == WR_ATOMIC_FETCH_AND_ADD ? 8 : 100 + 700 * (k % 7);
		struct sq_wqe q = wqe_new(op, k, WR_FLAG_SIGNALED);
		wqe_add_sge(&q, sim_va(&s, 0, 0), len, s.h[0].arena_key);
		if (op == WR_ATOMIC_FETCH_AND_ADD) {
			q.wr.atomic.remote_addr = sim_va(&s, 1, 8192);
			q.wr.atomic.rkey = s.h[1].arena_key;
			q.wr.atomic.compare_add = 1;
		} else if (op != WR_SEND) {
			q.wr.rdma.remote_addr = sim_va(&s, 1, 8192);
			q.wr.rdma.rkey = s.h[1].arena_key;
		} else {
			struct rq_wqe r = rwqe_new(k, sim_va(&s, 1, 16384), 8192, s.h[1].arena_key);
			cr_assert(sim_post_recv(&s, 1, &r));
		}
		cr_assert(sim_post_send(&s, 0, &q));
	}
	d.want = 64;
	cr_assert(sim_run(&s, dirty_step, &d, SIM_DEADLINE_NS), "%u of 64 completed", d.got);
	cr_log_info("%u steps, %u counter changes", d.steps, d.changed);
	cr_assert_gt(d.changed, 100);
	cr_assert_eq(d.unmarked, 0, "%u counter changes without their dirty bit", d.unmarked);
	sim_fini(&s);
}

/*
 * Receive slots (wqe.h rq_wqe_stride()): whole lines while they are
 * smaller than the whole record, which holds WQE_MAX_SGE SGEs; never larger
 * than that record, and a slot holds at least the SGEs it was sized for.
 */
Test(formats, receive_slot_strides)
{
	static const uint32_t want[WQE_MAX_SGE + 1] = {
		64, 64, 64, 64, 128, 128, 128, 128, 192, 192, 192, 192, 256, 256, 256, 256, 272,
	};

	for (uint32_t n = 0; n <= WQE_MAX_SGE + 2; n++) {
		uint32_t s = rq_wqe_stride(n);

		cr_assert_eq(s, want[n > WQE_MAX_SGE ? WQE_MAX_SGE : n], "%u SGEs: %u bytes", n, s);
		cr_assert_geq(rq_wqe_max_sge(s), n == 0 ? 1 : n > WQE_MAX_SGE ? WQE_MAX_SGE : n);
		cr_assert_leq(s, sizeof(struct rq_wqe));
	}
	cr_assert_eq(rq_wqe_max_sge(sizeof(struct rq_wqe)), WQE_MAX_SGE);
	cr_assert_eq(rq_wqe_max_sge(8), 0);
}
