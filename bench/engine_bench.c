/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Transport engine cost per packet: requester -> link -> responder -> ACK ->
 * completer, for RDMA WRITE, SEND and READ of a given size, two RC QPs in
 * one process on a perfect link.
 *
 * Side A (requester + completer) and side B (responder) run only inside the
 * noinline functions side_a_*() / side_b_*(), so a profiler can attribute
 * cost per side: bench/engine_callgrind.sh runs this under
 * `valgrind --tool=callgrind --collect-atstart=no --toggle-collect=side_a_*`
 * (then side_b_*) and subtracts the payload copies (memcpy/memmove), which
 * is deterministic. No CRC is computed anywhere in the measured path.
 *
 * Modes: "engine" hands the frame record (struct roce_pkt) to the peer, the
 * way the daemon's loopback would; "wire" also builds the headers on the
 * sending side (roce_build_headers) and parses them on the receiving side
 * (roce_parse_no_icrc), still without CRC; "frame" builds whole frames as
 * the daemon's transmit path does (headers, gathered payload, pad, ICRC:
 * the frame builder) and parses them without checking the ICRC.
 *
 * The application's part, in the same thread, posts as the verbs shim does
 * (each WQE written in place in its ring slot and published on its own) and
 * drains the completion rings; it is timed apart (app_ns_per_msg, two clock
 * reads per batch and per drain), and engine_ns_per_msg is the rest of the
 * wall time: the two engines and the hand-over of their frame records.
 * Until session 23 the bench copied a whole 384-byte WQE from the stack
 * into the ring, which the shim never does, and printed the sum only
 * (doc/benchmarks.md, session 23).
 *
 * Usage: engine_bench OP SIZE [MESSAGES] [engine|wire|frame] [MTU]
 *   OP: write | send | read; MTU 256..4096 (default 4096).
 *   Prints packets per side, wall-clock ns and the thread's CPU ns per
 *   message (CPU time: less disturbed by other load on shared cores), and
 *   the wall time split into the application's and the engine's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_clock.h"
#include "xport.h"

#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#endif
#endif
#ifndef CALLGRIND_ZERO_STATS
#define CALLGRIND_ZERO_STATS
#endif

#define BENCH_PD 1
#define RING 1024
#define BATCH 32
#define FRAME_BUF 4352

struct side {
	struct mr_table *mrs;
	uint8_t *mem;
	uint32_t key;
	struct spsc_ring *sq, *rq, *scq, *rcq;
	struct xport_cq send_cq, recv_cq;
	struct xport_qp *qp;
	struct xport_out out;
	uint64_t pkts_rx;
};

static struct side A, B;
static bool wire_mode;
static bool frame_mode; /* wire_mode, with the whole frame built */
static uint8_t wire_buf[XPORT_OUT_FRAMES][FRAME_BUF];
static uint8_t gather_buf[XPORT_OUT_FRAMES][FRAME_BUF];
static struct roce_pkt pkts[XPORT_OUT_FRAMES];
static uint64_t now_ns = 1000;
static uint8_t path_mtu = 5;

static struct spsc_ring *
ring_new(uint32_t elem)
{
	size_t bytes = spsc_ring_bytes(RING, elem);
	struct spsc_ring *r = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
	spsc_ring_init(r, RING, elem);
	return r;
}

static void
side_init(struct side *s, int self, uint32_t mem_len)
{
	s->mrs = mr_table_create(16);
	s->mem = aligned_alloc(4096, mem_len);
	memset(s->mem, self, mem_len);
	mr_reg(s->mrs, BENCH_PD, (uintptr_t)s->mem, (uintptr_t)s->mem, mem_len,
	       MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE | MR_ACCESS_REMOTE_READ, &s->key);
	s->sq = ring_new(sizeof(struct sq_wqe));
	s->rq = ring_new(sizeof(struct rq_wqe));
	s->scq = ring_new(sizeof(struct cqe));
	s->rcq = ring_new(sizeof(struct cqe));
	s->send_cq = (struct xport_cq){ .ring = s->scq, .handle = 1 };
	s->recv_cq = (struct xport_cq){ .ring = s->rcq, .handle = 2 };
	struct xport_cfg c = {
		.handle = (uint32_t)self,
		.type = XPORT_RC,
		.qpn = 0x10 + (uint32_t)self,
		.dest_qpn = 0x10 + (uint32_t)(1 - self),
		.pd = BENCH_PD,
		.pkey = 0xffff,
		.path_mtu = path_mtu,
		.sq_psn = 100,
		.rq_psn = 100,
		.timeout = 14,
		.retry_cnt = 7,
		.rnr_retry = 7,
		.max_rd_atomic = 16,
		.max_dest_rd_atomic = 16,
		.access_flags = MR_ACCESS_REMOTE_WRITE | MR_ACCESS_REMOTE_READ,
		.sq = s->sq,
		.rq = s->rq,
		.send_cq = &s->send_cq,
		.recv_cq = &s->recv_cq,
		.mrs = s->mrs,
	};
	c.av.sgid[10] = c.av.sgid[11] = c.av.dgid[10] = c.av.dgid[11] = 0xff;
	c.av.sgid[12] = c.av.dgid[12] = 198;
	c.av.sgid[13] = c.av.dgid[13] = 18;
	c.av.sgid[15] = (uint8_t)(1 + self);
	c.av.dgid[15] = (uint8_t)(2 - self);
	c.av.hop_limit = 64;
	s->qp = xport_qp_create(&c);
	if (!s->qp) {
		fprintf(stderr, "engine_bench: bad QP config\n");
		exit(1);
	}
	xport_out_reset(&s->out);
	xport_qp_set_state(s->qp, XPORT_STATE_RTR, now_ns, &s->out);
	xport_qp_set_state(s->qp, XPORT_STATE_RTS, now_ns, &s->out);
	xport_out_reset(&s->out);
}

/* The record the receiver sees: payload contiguous (pointer into the
 * sender's memory when one segment: zero copy, like an mbuf). */
static const uint8_t *
payload_of(const struct xport_frame *f, uint32_t i)
{
	if (f->nseg == 0)
		return NULL;
	if (f->nseg == 1)
		return f->seg[0].addr;
	uint32_t off = 0;
	for (uint32_t k = 0; k < f->nseg; k++) {
		memcpy(gather_buf[i] + off, f->seg[k].addr, f->seg[k].len);
		off += f->seg[k].len;
	}
	return gather_buf[i];
}

/* ---- measured functions (one side each) ---- */

__attribute__((noinline)) static void
side_a_rx_burst(struct side *s, const struct roce_pkt *const *pkts, uint32_t n)
{
	xport_qp_rx_burst(s->qp, pkts, n, now_ns, &s->out);
}

__attribute__((noinline)) static void
side_b_rx_burst(struct side *s, const struct roce_pkt *const *pkts, uint32_t n)
{
	xport_qp_rx_burst(s->qp, pkts, n, now_ns, &s->out);
}

__attribute__((noinline)) static void
side_a_poll(struct side *s)
{
	xport_qp_poll(s->qp, now_ns, &s->out);
}

__attribute__((noinline)) static size_t
side_a_wire_build(const struct xport_frame *f, uint8_t *buf)
{
	return roce_build_headers(&f->pkt, buf, FRAME_BUF);
}

__attribute__((noinline)) static size_t
side_b_wire_build(const struct xport_frame *f, uint8_t *buf)
{
	return roce_build_headers(&f->pkt, buf, FRAME_BUF);
}

__attribute__((noinline)) static size_t
side_a_frame_build(const struct xport_frame *f, uint8_t *buf)
{
	return roce_build_gather(&f->pkt, f->seg, f->nseg, buf, FRAME_BUF);
}

__attribute__((noinline)) static size_t
side_b_frame_build(const struct xport_frame *f, uint8_t *buf)
{
	return roce_build_gather(&f->pkt, f->seg, f->nseg, buf, FRAME_BUF);
}

__attribute__((noinline)) static enum roce_drop_reason
side_a_wire_parse(const uint8_t *buf, size_t len, struct roce_pkt *pkt)
{
	return roce_parse_no_icrc(buf, len, pkt);
}

__attribute__((noinline)) static enum roce_drop_reason
side_b_wire_parse(const uint8_t *buf, size_t len, struct roce_pkt *pkt)
{
	return roce_parse_no_icrc(buf, len, pkt);
}

/* Move every frame of @p from's output to the other side as one burst. */
static uint32_t
flush(struct side *from)
{
	bool from_a = from == &A;
	struct side *to = from_a ? &B : &A;
	uint32_t n = from->out.nframes;
	const struct roce_pkt *ptrs[XPORT_OUT_FRAMES];

	for (uint32_t i = 0; i < n; i++) {
		const struct xport_frame *f = &from->out.frames[i];
		ptrs[i] = &pkts[i];
		if (!wire_mode) {
			pkts[i] = f->pkt;
			pkts[i].payload = payload_of(f, i);
			continue;
		}
		uint8_t *buf = wire_buf[i];
		size_t len;
		if (frame_mode) {
			len = from_a ? side_a_frame_build(f, buf) : side_b_frame_build(f, buf);
		} else {
			size_t hlen = from_a ? side_a_wire_build(f, buf) : side_b_wire_build(f, buf);
			const uint8_t *pl = payload_of(f, i);
			if (f->pkt.payload_len)
				memcpy(buf + hlen, pl, f->pkt.payload_len);
			memset(buf + hlen + f->pkt.payload_len, 0,
			       (f->pkt.pad & 3) + ROCE_ICRC_LEN);
			len = hlen + f->pkt.payload_len + (f->pkt.pad & 3) + ROCE_ICRC_LEN;
		}
		enum roce_drop_reason why = from_a ? side_b_wire_parse(buf, len, &pkts[i])
						   : side_a_wire_parse(buf, len, &pkts[i]);
		if (why != ROCE_DROP_NONE) {
			fprintf(stderr, "engine_bench: parse: %s\n", roce_drop_reason_str(why));
			exit(1);
		}
	}
	xport_out_reset(&from->out);
	to->pkts_rx += n;
	if (n) {
		if (from_a)
			side_b_rx_burst(to, ptrs, n);
		else
			side_a_rx_burst(to, ptrs, n);
	}
	return n;
}

static uint64_t
drain(struct spsc_ring *r)
{
	struct cqe c;
	uint64_t n = 0;
	while (spsc_ring_pop(r, &c)) {
		if (c.status != WC_SUCCESS) {
			fprintf(stderr, "engine_bench: completion status %u\n", c.status);
			exit(1);
		}
		n++;
	}
	return n;
}

/* the application's time (posting, draining completions) in the measured run */
static uint64_t app_ns;

/*
 * Post one send WQE the way the verbs shim does (shim_fill_send() in
 * drivers/verbs-shim/qp.c): written in place in the ring's next slot, the
 * header line cleared (not the AV line, which RC leaves alone), its one SGE
 * in the header line (WR_FLAG_HEAD_DATA), published on its own as one
 * ibv_post_send() of one WR publishes it.
 */
static void
post_send(uint8_t wr_opcode, uint32_t size, uint64_t wr_id)
{
	struct sq_wqe *w = spsc_ring_prod_slot(A.sq, 0);

	memset(w, 0, SQ_WQE_HEAD_BYTES); /* as the shim does: RC leaves the AV line alone */
	w->wr_id = wr_id;
	w->opcode = wr_opcode;
	w->send_flags = WR_FLAG_SIGNALED | WR_FLAG_HEAD_DATA; /* one SGE: in the header line */
	w->num_sge = 1;
	w->wr.rdma.head.sge = (struct wr_sge){ (uintptr_t)A.mem, size, A.key };
	w->wr.rdma.remote_addr = (uintptr_t)B.mem;
	w->wr.rdma.rkey = B.key;
	spsc_ring_publish(A.sq, 1);
	if (wr_opcode == WR_SEND) {
		struct rq_wqe *r = spsc_ring_prod_slot(B.rq, 0);

		r->wr_id = wr_id;
		r->num_sge = 1;
		r->sg_list[0] = (struct wr_sge){ (uintptr_t)B.mem, size, B.key };
		spsc_ring_publish(B.rq, 1);
	}
}

static void
run(uint8_t wr_opcode, uint32_t size, uint64_t messages)
{
	uint64_t done = 0, posted = 0;
	while (done < messages) {
		uint32_t batch = messages - posted < BATCH ? (uint32_t)(messages - posted) : BATCH;
		uint64_t t0 = bench_now_ns();
		for (uint32_t i = 0; i < batch; i++)
			post_send(wr_opcode, size, posted + i);
		app_ns += bench_now_ns() - t0;
		posted += batch;
		uint64_t target = posted;
		for (int guard = 0; done < target; guard++) {
			side_a_poll(&A);
			/* requests out, responses back, until both sides are quiet */
			while (flush(&A) + flush(&B))
				;
			t0 = bench_now_ns();
			done += drain(A.scq);
			drain(B.rcq);
			app_ns += bench_now_ns() - t0;
			if (guard > 1000000) {
				fprintf(stderr, "engine_bench: no progress\n");
				exit(1);
			}
		}
	}
}

int
main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s write|send|read SIZE [MESSAGES] [engine|wire|frame] [MTU]\n",
			argv[0]);
		return 2;
	}
	uint8_t op;
	if (!strcmp(argv[1], "write"))
		op = WR_RDMA_WRITE;
	else if (!strcmp(argv[1], "send"))
		op = WR_SEND;
	else if (!strcmp(argv[1], "read"))
		op = WR_RDMA_READ;
	else {
		fprintf(stderr, "engine_bench: unknown op %s\n", argv[1]);
		return 2;
	}
	uint32_t size = (uint32_t)strtoul(argv[2], NULL, 0);
	uint64_t messages = argc > 3 ? strtoull(argv[3], NULL, 0) : 20000;
	frame_mode = argc > 4 && !strcmp(argv[4], "frame");
	wire_mode = frame_mode || (argc > 4 && !strcmp(argv[4], "wire"));
	if (argc > 5) {
		unsigned long mtu = strtoul(argv[5], NULL, 0);
		path_mtu = 0;
		for (uint8_t e = 1; e <= 5; e++)
			if (roce_mtu_bytes(e) == mtu)
				path_mtu = e;
		if (!path_mtu) {
			fprintf(stderr, "engine_bench: MTU 256, 512, 1024, 2048 or 4096\n");
			return 2;
		}
	}
	if (size == 0 || size > (1u << 20) || messages == 0) {
		fprintf(stderr, "engine_bench: SIZE 1..1048576, MESSAGES > 0\n");
		return 2;
	}
	side_init(&A, 0, 1u << 20);
	side_init(&B, 1, 1u << 20);
	run(op, size, 64); /* warm-up */
	CALLGRIND_ZERO_STATS; /* count the measured run only */
	uint64_t a0 = A.pkts_rx, b0 = B.pkts_rx;
	app_ns = 0;
	uint64_t tx_a0 = xport_qp_counters(A.qp)[XPORT_CNT_TX_PKTS];
	struct timespec t0, t1, c0, c1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
	run(op, size, messages);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
	double cpu_ns = (double)(c1.tv_sec - c0.tv_sec) * 1e9 + (double)(c1.tv_nsec - c0.tv_nsec);
	uint64_t data_pkts = op == WR_RDMA_READ ? A.pkts_rx - a0 : B.pkts_rx - b0;
	uint64_t a_tx = xport_qp_counters(A.qp)[XPORT_CNT_TX_PKTS] - tx_a0;
	printf("op=%s size=%u mtu=%u mode=%s messages=%lu data_pkts=%lu side_a_rx=%lu side_b_rx=%lu "
	       "side_a_tx=%lu ns_per_msg=%.1f cpu_ns_per_msg=%.1f app_ns_per_msg=%.1f "
	       "engine_ns_per_msg=%.1f warmup_msgs=64\n",
	       argv[1], size, roce_mtu_bytes(path_mtu), frame_mode ? "frame" : wire_mode ? "wire" : "engine",
	       (unsigned long)messages,
	       (unsigned long)data_pkts, (unsigned long)(A.pkts_rx - a0),
	       (unsigned long)(B.pkts_rx - b0), (unsigned long)a_tx, ns / (double)messages,
	       cpu_ns / (double)messages, (double)app_ns / (double)messages,
	       (ns - (double)app_ns) / (double)messages);
	return 0;
}
