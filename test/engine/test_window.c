/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RC send window and loss back-off (xport_req.c "Send window"): a receiver
 * with a finite receive ring (sim.h struct sim_rx_ring, the daemon's
 * af_packet ring) that a full window overruns whenever it is slow to poll.
 * A capped window that halves per go-back-N gets the data through with a
 * bounded number of resends; a fixed window of 1024 resends far more.
 */
#include <criterion/criterion.h>

#include "util.h"

#define RING_SLOTS 64               /* frames the receiver takes per poll */
#define RING_POLL_NS 20000          /* receiver polls every 20 us */
#define MTU_BYTES 1024              /* sim_default_params(): path_mtu 3 */
#define WRITE_PKTS 1024             /* the large WRITE */
#define READS 16                    /* READ-heavy mix: 16 READs of 64 packets ... */
#define READ_PKTS 64
#define MIX_WRITES 8                /* ... and 8 WRITEs of 16 packets */
#define MIX_WRITE_PKTS 16

static struct sim S;
static struct collect K;

struct outcome {
	bool done;                  /* every WQE completed */
	uint32_t errors;            /* completions not WC_SUCCESS */
	uint64_t retransmits;       /* host 0 RETRANSMIT_PKTS */
	uint64_t timeouts;          /* host 0 RETRY_TIMEOUT */
	uint64_t shrinks;           /* host 0 WINDOW_SHRINK */
	uint64_t ring_drops;        /* both receive rings */
	uint64_t took_ns;           /* simulated time to the last completion */
};

static void
start(uint32_t cap, uint32_t min_window, bool rings)
{
	struct sim_params p;
	sim_default_params(&p);
	p.arena_len = 4u << 20;
	p.max_rd_atomic = READS;
	p.max_unacked = cap;
	p.cq_size = 4096;
	cr_assert_eq(sim_init(&S, &p, 3), 0);
	/* min_window is not a sim parameter: set it as modify_qp would */
	for (int h = 0; h < 2; h++) {
		S.h[h].cfg.min_window = min_window;
		cr_assert_eq(xport_qp_modify(S.h[h].qp, &S.h[h].cfg), 0);
	}
	S.faults.delay_ns = 5000;
	if (rings) {
		sim_rx_ring(&S, 0, RING_SLOTS, RING_POLL_NS);
		sim_rx_ring(&S, 1, RING_SLOTS, RING_POLL_NS);
	}
	collect_init(&K);
}

static void
stop(void)
{
	collect_fini(&K);
	sim_fini(&S);
}

static struct sq_wqe
rdma(uint8_t opcode, uint64_t wr_id, uint64_t loff, uint32_t len, uint64_t roff)
{
	struct sq_wqe w = wqe_new(opcode, wr_id, WR_FLAG_SIGNALED);
	wqe_add_sge(&w, sim_va(&S, 0, loff), len, S.h[0].arena_key);
	w.wr.rdma.remote_addr = sim_va(&S, 1, roff);
	w.wr.rdma.rkey = S.h[1].arena_key;
	return w;
}

/* Run host 0's @p n WQEs to their completions (10 simulated seconds at most). */
static struct outcome
finish(uint32_t n)
{
	struct outcome o = { 0 };
	const uint64_t *c = xport_qp_counters(S.h[0].qp);

	uint64_t t0 = S.now;
	K.want[0][0] = n;
	o.done = sim_run(&S, collect_done, &K, S.now + 10ull * 1000 * 1000 * 1000);
	for (uint32_t i = 0; i < K.n[0][0]; i++)
		o.errors += K.c[0][0][i].status != WC_SUCCESS;
	o.retransmits = c[XPORT_CNT_RETRANSMIT_PKTS];
	o.timeouts = c[XPORT_CNT_RETRY_TIMEOUT];
	o.shrinks = c[XPORT_CNT_WINDOW_SHRINK];
	o.ring_drops = S.h[0].ring.drops + S.h[1].ring.drops;
	o.took_ns = S.now - t0;
	return o;
}

/* One WRITE of WRITE_PKTS packets; the data must land intact. */
static struct outcome
large_write(uint32_t cap, uint32_t min_window)
{
	uint32_t len = WRITE_PKTS * MTU_BYTES;

	start(cap, min_window, true);
	fill(S.h[0].arena, len, 11);
	struct sq_wqe w = rdma(WR_RDMA_WRITE, 1, 0, len, 0);
	cr_assert(sim_post_send(&S, 0, &w));
	struct outcome o = finish(1);
	if (o.done && o.errors == 0)
		cr_assert_eq(check_fill(S.h[1].arena, len, 11), -1);
	stop();
	return o;
}

/* READs of READ_PKTS packets interleaved with small WRITEs. */
static struct outcome
read_mix(uint32_t cap, uint32_t min_window)
{
	uint32_t rlen = READ_PKTS * MTU_BYTES, wlen = MIX_WRITE_PKTS * MTU_BYTES;
	uint32_t n = 0;

	start(cap, min_window, true);
	fill(S.h[1].arena, (uint64_t)READS * rlen, 21);
	for (uint32_t i = 0; i < READS; i++) {
		struct sq_wqe w = rdma(WR_RDMA_READ, n++, (uint64_t)i * rlen, rlen,
				       (uint64_t)i * rlen);
		cr_assert(sim_post_send(&S, 0, &w));
		if (i % 2 == 0) {
			uint64_t off = (2u << 20) + (uint64_t)(i / 2) * wlen;
			w = rdma(WR_RDMA_WRITE, n++, off, wlen, off);
			cr_assert(sim_post_send(&S, 0, &w));
		}
	}
	cr_assert_eq(n, READS + MIX_WRITES);
	struct outcome o = finish(n);
	if (o.done && o.errors == 0)
		cr_assert_eq(check_fill(S.h[0].arena, (uint64_t)READS * rlen, 21), -1);
	stop();
	return o;
}

static void
report(const char *what, const struct outcome *o)
{
	cr_log_info("%s: done %d errors %u retransmits %lu timeouts %lu shrinks %lu drops %lu "
		    "took %lu us",
		    what, o->done, o->errors, (unsigned long)o->retransmits,
		    (unsigned long)o->timeouts, (unsigned long)o->shrinks,
		    (unsigned long)o->ring_drops, (unsigned long)(o->took_ns / 1000));
}

Test(window, large_write_through_small_ring, .timeout = 60)
{
	struct outcome bo = large_write(256, 8);
	struct outcome fixed = large_write(1024, 1024);
	report("write cap 256 back-off", &bo);
	report("write fixed 1024", &fixed);

	cr_assert(bo.done && bo.errors == 0);
	cr_assert_gt(bo.ring_drops, 0, "the ring must overflow for the test to mean anything");
	cr_assert_gt(bo.shrinks, 0);
	/* bounded: fewer resends than the message has packets */
	cr_assert_lt(bo.retransmits, WRITE_PKTS);
	/* the fixed window of 1024 resends the rest of the window per loss */
	cr_assert(!fixed.done || fixed.errors || fixed.retransmits > 4 * bo.retransmits,
		  "fixed %lu vs back-off %lu", (unsigned long)fixed.retransmits,
		  (unsigned long)bo.retransmits);
	cr_assert_eq(fixed.shrinks, 0, "min_window = max_unacked disables the back-off");
}

Test(window, read_mix_through_small_ring, .timeout = 60)
{
	uint64_t pkts = READS * READ_PKTS + MIX_WRITES * MIX_WRITE_PKTS;
	struct outcome bo = read_mix(256, 8);
	struct outcome fixed = read_mix(1024, 1024);
	report("read mix cap 256 back-off", &bo);
	report("read mix fixed 1024", &fixed);

	cr_assert(bo.done && bo.errors == 0);
	cr_assert_gt(bo.ring_drops, 0);
	/* READ retransmits count the re-sent request packets; the resent
	 * responses show as ring drops and timeouts: bound both */
	cr_assert_lt(bo.retransmits, pkts);
	cr_assert(!fixed.done || fixed.errors || fixed.ring_drops > 4 * bo.ring_drops,
		  "fixed drops %lu vs back-off %lu", (unsigned long)fixed.ring_drops,
		  (unsigned long)bo.ring_drops);
}

/* Drop every frame host 0 sends while set. */
static bool
drop_all(void *arg, int from, const struct roce_pkt *pkt)
{
	(void)pkt;
	return !(from == 0 && *(bool *)arg);
}

Test(window, halves_per_timeout_and_grows_back, .timeout = 30)
{
	static bool blackhole = true;
	uint32_t len = 64 * MTU_BYTES;

	start(64, 8, false);
	fill(S.h[0].arena, len, 5);
	S.filter = drop_all;
	S.filter_arg = &blackhole;
	cr_assert_eq(xport_qp_send_window(S.h[0].qp), 64);
	struct sq_wqe w = rdma(WR_RDMA_WRITE, 1, 0, len, 0);
	cr_assert(sim_post_send(&S, 0, &w));
	sim_poll(&S);
	/* three timeouts without an answer: 64 -> 32 -> 16 -> 8 */
	uint32_t expect[] = { 32, 16, 8 };
	for (unsigned i = 0; i < 3; i++) {
		uint64_t t = S.h[0].timer_at[XPORT_TIMER_RETRY];
		cr_assert_neq(t, 0);
		K.want[0][0] = 1;
		sim_run(&S, collect_done, &K, t);
		cr_assert_eq(xport_qp_counters(S.h[0].qp)[XPORT_CNT_RETRY_TIMEOUT], i + 1);
		cr_assert_eq(xport_qp_send_window(S.h[0].qp), expect[i]);
	}
	/* the resend after the third timeout is 8 packets: the floor */
	uint64_t tx = xport_qp_counters(S.h[0].qp)[XPORT_CNT_TX_PKTS];
	blackhole = false;
	sim_poll(&S);
	cr_assert_eq(xport_qp_counters(S.h[0].qp)[XPORT_CNT_TX_PKTS], tx);
	/* the link is back: the next timeout resends from the floor, and the
	 * 64 acknowledged PSNs add one per window's worth: 8+9+...+13 = 63 */
	cr_assert(sim_run(&S, collect_done, &K, S.now + 1000ull * 1000 * 1000));
	cr_assert_eq(K.c[0][0][0].status, WC_SUCCESS);
	cr_assert_eq(check_fill(S.h[1].arena, len, 5), -1);
	cr_assert_eq(xport_qp_send_window(S.h[0].qp), 14);
	cr_assert_eq(xport_qp_counters(S.h[0].qp)[XPORT_CNT_WINDOW_SHRINK], 3);
	stop();
}

/* Count READ requests host 0 puts on the wire (nothing is dropped). */
static bool
count_reads(void *arg, int from, const struct roce_pkt *pkt)
{
	if (from == 0 && pkt->opcode == ROCE_OP_RC_RDMA_READ_REQUEST)
		(*(uint32_t *)arg)++;
	return true;
}

Test(window, read_counts_its_response_packets, .timeout = 30)
{
	static uint32_t reads;
	uint32_t rlen = READ_PKTS * MTU_BYTES;

	start(128, 8, false);
	S.filter = count_reads;
	S.filter_arg = &reads;
	for (uint32_t i = 0; i < 4; i++) {
		struct sq_wqe w = rdma(WR_RDMA_READ, i, (uint64_t)i * rlen, rlen,
				       (uint64_t)i * rlen);
		cr_assert(sim_post_send(&S, 0, &w));
	}
	sim_poll(&S); /* the link delay holds every response back */
	cr_assert_eq(reads, 2, "128 PSNs hold two READs of 64 responses, not %u", reads);
	K.want[0][0] = 4;
	cr_assert(sim_run(&S, collect_done, &K, S.now + 1000ull * 1000 * 1000));
	cr_assert_eq(reads, 4);
	stop();
}

Test(window, read_larger_than_window_goes_alone, .timeout = 30)
{
	static uint32_t reads;
	uint32_t rlen = 200 * MTU_BYTES; /* 200 response packets, window 128 */

	start(128, 8, false);
	S.filter = count_reads;
	S.filter_arg = &reads;
	struct sq_wqe r = rdma(WR_RDMA_READ, 1, 0, rlen, 0);
	struct sq_wqe w = rdma(WR_RDMA_WRITE, 2, 1u << 20, MTU_BYTES, 1u << 20);
	cr_assert(sim_post_send(&S, 0, &r));
	cr_assert(sim_post_send(&S, 0, &w));
	sim_poll(&S);
	cr_assert_eq(reads, 1);
	cr_assert_eq(xport_qp_counters(S.h[0].qp)[XPORT_CNT_TX_PKTS], 1,
		     "the WRITE waits until the READ's responses are in");
	K.want[0][0] = 2;
	cr_assert(sim_run(&S, collect_done, &K, S.now + 1000ull * 1000 * 1000));
	cr_assert_eq(K.c[0][0][0].status, WC_SUCCESS);
	cr_assert_eq(K.c[0][0][1].status, WC_SUCCESS);
	stop();
}
