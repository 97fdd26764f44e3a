/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target for the transport engine (lib/qp xport*.c, mr.c): two
 * live QPs of the simulated link (test/engine/sim.c), the input a program of
 * commands: hostile packets injected into either QP (host 1's responder,
 * host 0's completer), send and receive WQEs as a hostile client writes
 * them (any opcode, SGE count, length, key, inline size), ring producer
 * indexes overwritten, time running (the two engines then talk: timers,
 * retransmissions, responses), state changes and MR churn.
 *
 * One sim serves every input: sim_reset() makes it new, keeping only its
 * allocations (test_random proves a reset sim replays as a fresh one); the
 * frames still in flight are dropped at the end of an input, so that an
 * input frees what it allocated (libFuzzer reruns one that does not, to
 * look for a leak).
 *
 * The first byte picks the QP type (RC, UC, UD), an SRQ on host 1, the path
 * MTU. Host 1's arena is cut into regions with different rights:
 *   [ 0K, 16K)  all rights (receive buffers)        key 0
 *   [16K, 32K)  local write only                     key 1
 *   [32K, 40K)  not registered
 *   [40K, 56K)  remote read only                     key 2
 *   [56K, 64K)  remote write, remotely invalidatable key 3 (re-registered by a command)
 * Host 0's arena: [0, 32K) local write only (its send/receive buffers),
 * [32K, 64K) not registered.
 *
 * Invariants besides "no crash, no out-of-bounds access, no undefined
 * behaviour" (ASan/UBSan):
 *  - no byte of a region the peer has no right to write (host 1: local-only,
 *    unregistered and read-only regions; host 0: its unregistered half)
 *    ever changes: only receives into posted buffers and READ/ATOMIC
 *    responses into host 0's local buffers write memory;
 *  - PSNs stay 24-bit; an RC responder's expected PSN moves only on the
 *    packet carrying it, and only forwards;
 *  - every CQE names a WR that was posted on that side, with a known
 *    status, and a receive's byte_len fits the buffers posted (unless
 *    the ring's producer index was scribbled: then slots may be stale);
 *  - every frame the engines emit builds (sim.c aborts otherwise).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "invariant failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); abort(); } } while (0)

#define ARENA (64u << 10)
#define K (1u << 10)
#define WRID_TAG 0x5afe000000000000ull
#define MAX_WR 4096u
#define RUN_STEP_NS 20000u

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct region {
	uint32_t off, len, access;
};

static const struct region h1_regions[] = {
	{ 0, 16 * K, MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE | MR_ACCESS_REMOTE_READ |
		     MR_ACCESS_REMOTE_ATOMIC },
	{ 16 * K, 16 * K, MR_ACCESS_LOCAL_WRITE },
	{ 40 * K, 16 * K, MR_ACCESS_REMOTE_READ },
	{ 56 * K, 8 * K, MR_ACCESS_LOCAL_WRITE | MR_ACCESS_REMOTE_WRITE |
		MR_ACCESS_REMOTE_INVALIDATE },
};
#define H1_NREG (sizeof(h1_regions) / sizeof(h1_regions[0]))

/* Byte ranges nobody may write (a write there stays: checked once, at the end): host 1 [16K, 56K), host 0 [32K, 64K). */
static const struct region guarded[2] = { { 32 * K, 32 * K, 0 }, { 16 * K, 40 * K, 0 } };

struct fuzz {
	struct sim s;
	uint32_t h1_key[H1_NREG];
	uint32_t h0_key;
	uint8_t pristine[2][ARENA]; /* the arenas' initial pattern */
	/* receive length posted per WR index, per host; send WRs posted */
	uint32_t recv_len[2][MAX_WR];
	bool recv_posted[2][MAX_WR];
	bool send_posted[MAX_WR];
	bool scribbled[2];        /* a ring index was moved: slots may be stale */
	uint32_t next_wr;
	const uint8_t *p, *end;
};

static struct fuzz F;

static uint8_t
take8(struct fuzz *f)
{
	return f->p < f->end ? *f->p++ : 0;
}

static uint16_t
take16(struct fuzz *f)
{
	return (uint16_t)(take8(f) | take8(f) << 8);
}

static uint32_t
take32(struct fuzz *f)
{
	return (uint32_t)take16(f) | (uint32_t)take16(f) << 16;
}

static void
regs_setup(struct fuzz *f)
{
	static bool once;

	if (!once) {
		for (uint32_t i = 0; i < ARENA; i++)
			for (int h = 0; h < 2; h++)
				f->pristine[h][i] = (uint8_t)(i * 7 + (uint32_t)h);
		once = true;
	}
	for (int h = 0; h < 2; h++) {
		struct sim_host *sh = &f->s.h[h];

		CHECK(mr_dereg(sh->mrs, sh->arena_key) == 0);
		memcpy(sh->arena, f->pristine[h], ARENA);
	}
	for (uint32_t i = 0; i < H1_NREG; i++) {
		const struct region *r = &h1_regions[i];
		struct sim_host *sh = &f->s.h[1];

		CHECK(mr_reg(sh->mrs, SIM_PD, (uintptr_t)sh->arena + r->off, sh->arena_iova + r->off,
			     r->len, r->access, &f->h1_key[i]) == 0);
	}
	CHECK(mr_reg(f->s.h[0].mrs, SIM_PD, (uintptr_t)f->s.h[0].arena, f->s.h[0].arena_iova,
		     32 * K, MR_ACCESS_LOCAL_WRITE, &f->h0_key) == 0);
}

static void
check_memory(const struct fuzz *f)
{
	for (int h = 0; h < 2; h++) {
		const struct region *g = &guarded[h];

		CHECK(memcmp(f->s.h[h].arena + g->off, f->pristine[h] + g->off, g->len) == 0);
	}
}

static void
check_cqes(struct fuzz *f)
{
	struct cqe c;

	for (int h = 0; h < 2; h++) {
		while (sim_poll_cq(&f->s, h, false, &c)) {
			uint32_t i = (uint32_t)(c.wr_id & (MAX_WR - 1));

			CHECK(c.status <= WC_GENERAL_ERR);
			if (f->scribbled[h])
				continue;
			CHECK((c.wr_id & ~(uint64_t)(MAX_WR - 1)) == WRID_TAG);
			CHECK(h == 0 && f->send_posted[i]);
			f->send_posted[i] = false;
		}
		while (sim_poll_cq(&f->s, h, true, &c)) {
			uint32_t i = (uint32_t)(c.wr_id & (MAX_WR - 1));

			CHECK(c.status <= WC_GENERAL_ERR);
			if (f->scribbled[h])
				continue;
			CHECK((c.wr_id & ~(uint64_t)(MAX_WR - 1)) == WRID_TAG);
			CHECK(f->recv_posted[h][i]);
			/* a WRITE with immediate reports the WRITE's length */
			if (c.status == WC_SUCCESS && c.opcode == WC_RECV)
				CHECK(c.byte_len <= f->recv_len[h][i]);
			f->recv_posted[h][i] = false;
		}
	}
}

static void
check_psns(const struct fuzz *f)
{
	for (int h = 0; h < 2; h++) {
		CHECK(xport_qp_sq_psn(f->s.h[h].qp) <= ROCE_PSN_MASK);
		CHECK(xport_qp_rq_psn(f->s.h[h].qp) <= ROCE_PSN_MASK);
	}
}

static uint16_t
csum16(const uint8_t *p, size_t n)
{
	uint32_t s = 0;

	for (size_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)(p[i] << 8 | p[i + 1]);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

/* Eth/IPv4/UDP from host 1 - @p h to host @p h around @p body (BTH on). */
static size_t
frame_wrap(const struct fuzz *f, int h, const uint8_t *body, size_t blen, uint8_t *buf)
{
	const struct wr_av *to = &f->s.h[h].cfg.av, *from = &f->s.h[1 - h].cfg.av;
	size_t ip_len = 20 + 8 + blen + ROCE_ICRC_LEN;
	uint8_t *ip = buf + 14, *udp = ip + 20;

	memcpy(buf, to->smac, 6);
	memcpy(buf + 6, from->smac, 6);
	buf[12] = 0x08;
	buf[13] = 0x00;
	memset(ip, 0, 20);
	ip[0] = 0x45;
	ip[1] = 0x02;
	ip[2] = (uint8_t)(ip_len >> 8);
	ip[3] = (uint8_t)ip_len;
	ip[6] = 0x40;
	ip[8] = 64;
	ip[9] = 17;
	memcpy(ip + 12, from->sgid + 12, 4);
	memcpy(ip + 16, to->sgid + 12, 4);
	uint16_t c = csum16(ip, 20);
	ip[10] = (uint8_t)(c >> 8);
	ip[11] = (uint8_t)c;
	udp[0] = 0xc0;
	udp[1] = 0x00;
	udp[2] = ROCE_UDP_PORT >> 8;
	udp[3] = ROCE_UDP_PORT & 0xff;
	udp[4] = (uint8_t)((ip_len - 20) >> 8);
	udp[5] = (uint8_t)(ip_len - 20);
	udp[6] = udp[7] = 0;
	memcpy(udp + 8, body, blen);
	memset(udp + 8 + blen, 0, ROCE_ICRC_LEN);
	return 14 + ip_len;
}

/*
 * Inject one packet into host @p h: flags, length, then the bytes from the
 * BTH on. Flags bit 0: keep the input's DestQP (else this QP's); bit 1: PSN
 * near what the QP expects (its responder's ePSN for a request, its
 * requester's last PSN for a response), offset by the next signed byte.
 */
static void
cmd_inject(struct fuzz *f, int h)
{
	uint8_t flags = take8(f);
	int8_t delta = (int8_t)take8(f);
	size_t blen = take16(f) % 4200u;
	uint8_t body[4200], buf[4300];
	struct roce_pkt pkt;

	if (blen > (size_t)(f->end - f->p))
		blen = (size_t)(f->end - f->p);
	if (blen < ROCE_BTH_LEN)
		return;
	memcpy(body, f->p, blen);
	f->p += blen;
	if (!(flags & 1)) {
		uint32_t qpn = f->s.h[h].cfg.qpn;

		body[5] = (uint8_t)(qpn >> 16);
		body[6] = (uint8_t)(qpn >> 8);
		body[7] = (uint8_t)qpn;
	}
	uint32_t epsn = xport_qp_rq_psn(f->s.h[h].qp);
	if (flags & 2) {
		bool response = body[0] >= 0x0d && body[0] <= 0x12 && (body[0] & 0xe0) == 0;
		uint32_t base = response ? roce_psn_add(xport_qp_sq_psn(f->s.h[h].qp), ROCE_PSN_MASK)
					 : epsn;
		uint32_t psn = roce_psn_add(base, (uint32_t)(int32_t)delta & ROCE_PSN_MASK);

		body[9] = (uint8_t)(psn >> 16);
		body[10] = (uint8_t)(psn >> 8);
		body[11] = (uint8_t)psn;
	}
	size_t len = frame_wrap(f, h, body, blen, buf);
	if (roce_parse_no_icrc(buf, len, &pkt) != ROCE_DROP_NONE)
		return;
	if (pkt.dest_qpn != f->s.h[h].cfg.qpn)
		return; /* the worker dispatches by DestQP: another QP's packet never gets here */
	sim_inject(&f->s, h, &pkt);
	uint32_t now_epsn = xport_qp_rq_psn(f->s.h[h].qp);
	if (f->s.h[h].cfg.type == XPORT_RC && now_epsn != epsn) {
		CHECK(pkt.psn == epsn);
		CHECK(roce_psn_cmp(now_epsn, epsn) > 0);
	}
}

/* An SGE somewhere near host @p h's arena, with one of its keys or any. */
static void
fuzz_sge(struct fuzz *f, int h, struct wr_sge *sge, bool recv)
{
	uint8_t sel = take8(f);
	uint32_t off = take16(f), len = take16(f);
	struct sim_host *sh = &f->s.h[h];

	if (recv && h == 1)
		off %= 16 * K; /* host 1 receives only into its all-rights region */
	sge->addr = sh->arena_iova + off;
	sge->length = len % (sel & 0x80 ? 0xffffu : 4096u);
	switch (sel & 3) {
	case 0:
		sge->lkey = h == 0 ? f->h0_key : f->h1_key[0];
		break;
	case 1:
		sge->lkey = h == 0 ? f->h0_key : f->h1_key[(sel >> 2) % H1_NREG];
		break;
	default:
		sge->lkey = take32(f);
		break;
	}
	if (sel & 0x40)
		sge->addr = (uint64_t)take32(f) << (sel & 0x20 ? 32 : 0) | take16(f);
}

static void
cmd_post_send(struct fuzz *f)
{
	struct sq_wqe w;
	uint8_t op = take8(f), flags = take8(f), sel = take8(f);
	uint32_t i = f->next_wr++ % MAX_WR;

	memset(&w, 0, sizeof(w));
	w.wr_id = WRID_TAG | i;
	w.opcode = op & 0x0f;
	w.send_flags = flags;
	w.imm_data = take32(f);
	w.num_sge = sel & 0x80 ? take8(f) : sel & 3;
	/* the remote address: in one of host 1's regions, or anything */
	uint32_t key = sel & 0x10 ? take32(f) : f->h1_key[(sel >> 2) % H1_NREG];
	uint64_t raddr = f->s.h[1].arena_iova + (take16(f) % ARENA);

	if (sel & 0x20)
		raddr = (uint64_t)take32(f) << 32 | take32(f);
	w.wr.rdma.remote_addr = raddr;
	w.wr.rdma.rkey = key;
	if (w.opcode == WR_ATOMIC_CMP_AND_SWP || w.opcode == WR_ATOMIC_FETCH_AND_ADD) {
		w.wr.atomic.remote_addr = raddr;
		w.wr.atomic.compare_add = take32(f);
		w.wr.atomic.swap = take32(f);
		w.wr.atomic.rkey = key;
	}
	if (f->s.h[0].cfg.type == XPORT_UD) {
		w.wr.ud.remote_qpn = sel & 0x40 ? take32(f) : f->s.h[1].cfg.qpn;
		w.wr.ud.remote_qkey = sel & 0x40 ? take32(f) : f->s.h[1].cfg.qkey;
		w.av.ah_handle = sel & 0x40 ? take32(f) : SIM_AH;
	}
	if (flags & WR_FLAG_INLINE) {
		w.inline_len = take16(f);
		if (!(sel & 0x40))
			w.inline_len %= WQE_MAX_INLINE + 1;
		memset(w.inline_data, 0x5a, sizeof(w.inline_data));
	} else {
		for (uint32_t s = 0; s < w.num_sge && s < WQE_MAX_SGE; s++)
			fuzz_sge(f, 0, &w.sg_list[s], false);
	}
	f->send_posted[i] = true;
	if (!sim_post_send(&f->s, 0, &w))
		f->send_posted[i] = false;
}

static void
cmd_post_recv(struct fuzz *f, int h)
{
	struct rq_wqe w;
	uint8_t sel = take8(f);
	uint32_t i = f->next_wr++ % MAX_WR, total = 0;

	memset(&w, 0, sizeof(w));
	w.wr_id = WRID_TAG | i;
	w.num_sge = sel & 0x80 ? take32(f) : sel & 3;
	for (uint32_t s = 0; s < w.num_sge && s < WQE_MAX_SGE; s++) {
		fuzz_sge(f, h, &w.sg_list[s], true);
		total += w.sg_list[s].length;
	}
	f->recv_len[h][i] = total;
	f->recv_posted[h][i] = true;
	if (!sim_post_recv(&f->s, h, &w))
		f->recv_posted[h][i] = false;
}

static bool
never(struct sim *s, void *arg)
{
	(void)s;
	(void)arg;
	return false;
}

/* A hostile client moves a producer index of its ring anywhere. */
static void
cmd_ring(struct fuzz *f)
{
	uint8_t sel = take8(f);
	uint32_t v = take32(f);
	struct sim_host *h = &f->s.h[sel & 1];
	struct spsc_ring *r = (sel & 2) ? h->sq : (h->rq ? h->rq : h->srq_ring);

	f->scribbled[sel & 1] = true;
	__atomic_store_n(&r->prod, v, __ATOMIC_RELEASE);
}

static void
cmd_state(struct fuzz *f)
{
	uint8_t sel = take8(f);
	int h = sel & 1;
	struct sim_host *sh = &f->s.h[h];

	switch ((sel >> 1) & 3) {
	case 0:
		sim_set_state(&f->s, h, XPORT_STATE_ERR);
		break;
	case 1:
		if (xport_qp_state(sh->qp) == XPORT_STATE_RTS)
			sim_set_state(&f->s, h, XPORT_STATE_SQD);
		else if (xport_qp_state(sh->qp) == XPORT_STATE_SQD)
			sim_set_state(&f->s, h, XPORT_STATE_RTS);
		break;
	case 2: /* ERR -> RESET -> RTR -> RTS, as a client recovers a QP */
		if (xport_qp_state(sh->qp) != XPORT_STATE_ERR)
			break;
		sim_set_state(&f->s, h, XPORT_STATE_RESET);
		sim_set_state(&f->s, h, XPORT_STATE_RTR);
		sim_set_state(&f->s, h, XPORT_STATE_RTS);
		break;
	default: { /* re-register the invalidatable region of host 1 */
		const struct region *r = &h1_regions[H1_NREG - 1];
		struct sim_host *h1 = &f->s.h[1];

		mr_dereg(h1->mrs, f->h1_key[H1_NREG - 1]);
		CHECK(mr_reg(h1->mrs, SIM_PD, (uintptr_t)h1->arena + r->off, h1->arena_iova + r->off,
			     r->len, r->access, &f->h1_key[H1_NREG - 1]) == 0);
		break;
	}
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz *f = &F;
	struct sim_params p;

	if (size < 1)
		return 0;
	memset(f->recv_posted, 0, sizeof(f->recv_posted));
	memset(f->send_posted, 0, sizeof(f->send_posted));
	memset(f->scribbled, 0, sizeof(f->scribbled));
	f->next_wr = 0;
	f->p = data + 1;
	f->end = data + size;
	sim_default_params(&p);
	p.type = (uint8_t)(XPORT_RC + (data[0] & 3) % 3);
	p.srq = (data[0] & 4) != 0;
	p.mtu = (uint8_t)(1 + (data[0] >> 3) % 5);
	p.sq_size = 16;
	p.rq_size = 16;
	p.cq_size = 64;
	p.arena_len = ARENA;
	p.max_rd_atomic = 2;
	p.max_dest_rd_atomic = 2;
	p.timeout = 1 + (data[0] >> 6);
	p.retry_cnt = 2;
	p.rnr_retry = 2;
	/* one sim for every input, reset (sim.h: as fresh, allocations kept) */
	static bool live;
	CHECK((live ? sim_reset(&f->s, &p, 1) : sim_init(&f->s, &p, 1)) == 0);
	live = true;
	f->s.trace_off = true; /* nothing here compares traces */
	regs_setup(f);
	for (unsigned int steps = 0; f->p < f->end && steps < 256; steps++) {
		uint8_t op = take8(f);

		switch (op & 7) {
		case 0:
		case 1:
		case 2:
			cmd_inject(f, op & 3 ? 1 : 0);
			break;
		case 3:
			cmd_post_send(f);
			break;
		case 4:
			cmd_post_recv(f, (op >> 3) & 1);
			break;
		case 5:
			sim_run(&f->s, never, NULL, f->s.now + (uint64_t)(op >> 3) * RUN_STEP_NS);
			break;
		case 6:
			cmd_ring(f);
			break;
		default:
			cmd_state(f);
			break;
		}
		sim_poll(&f->s);
		check_psns(f);
		check_cqes(f);
	}
	/* let everything in flight land */
	sim_run(&f->s, never, NULL, f->s.now + 50u * RUN_STEP_NS);
	check_memory(f);
	check_psns(f);
	check_cqes(f);
	/*
	 * What the input allocated, it frees: frames still in flight (timers
	 * keep retransmitting) would otherwise be freed by the next input's
	 * reset, and libFuzzer runs every input that ends with more mallocs
	 * than frees a second time to look for a leak.
	 */
	sim_drop_frames(&f->s);
	return 0;
}
