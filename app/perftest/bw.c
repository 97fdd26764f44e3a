/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Engines the modes share: the requester that keeps a window of WRs in
 * flight (perftest's run_iter_bw), the SEND receiver (run_iter_bw_server),
 * the passive target, the ping-pong of the SEND/WRITE latency modes, and the
 * -D measurement window. Each call is one bounded, non-blocking step.
 */
#include <string.h>
#include <time.h>

#include "perftest.h"

#define PT_POLL_BATCH 16
#define PT_POST_BURST 16
#define PT_DRAIN_NS   (200 * 1000 * 1000ull)  /* receiver grace after the sender is done */
#define PT_VERIFY_SHOW 5                      /* mismatches printed per side */

uint64_t pt_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t pt_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * Counts move in steps: a signaled completion stands for cq_mod (100)
 * messages. An edge taken at its deadline would cut a step, and the count
 * would be off by up to one step: 100 of the ~1200 1 MiB messages of a 2 s
 * window at 5 Gb/s, 8 %. So each edge waits for the first change of the
 * count at or after its deadline; the window then holds whole steps and its
 * time is the time they took. A count that stops moving still ends the
 * window: the start at t_stop, the stop at t_end.
 */
bool pt_window_step(struct pt_window *w, uint64_t now, uint64_t count)
{
	bool moved = count != w->n_last;

	w->n_last = count;
	if (w->time_up)
		return true;
	if (!w->sampling) {
		if (now >= w->t_sample && (moved || now >= w->t_stop)) {
			w->sampling = true;
			w->n_sample = count;
			w->t_sample_seen = now;
			w->cpu_sample = pt_cpu_ns();
		}
	} else if (!w->stopped && now >= w->t_stop && (moved || now >= w->t_end)) {
		w->stopped = true;
		w->n_stop = count;
		w->t_stop_seen = now;
		w->cpu_stop = pt_cpu_ns();
	}
	if (now >= w->t_end)
		w->time_up = true;
	return w->time_up;
}

/*
 * The clock is read when the count moved (an edge may be due) and otherwise
 * on every PT_WINDOW_CLOCK_EVERY-th call: a read per step was 15 % of the
 * process's CPU time at 64 B. An edge is still taken at the first move at or
 * after its deadline; a count that stopped moving ends the window at most
 * that many steps late.
 */
#define PT_WINDOW_CLOCK_EVERY 32u

bool pt_window_update(struct pt_side *s, uint64_t count)
{
	if (!s->p->duration || s->win.time_up)
		return s->win.time_up;
	if (count == s->win.n_last && ++s->win.unread < PT_WINDOW_CLOCK_EVERY)
		return false;
	s->win.unread = 0;
	return pt_window_step(&s->win, pt_now_ns(), count);
}

void pt_verify_fail(struct pt_side *s, const char *what, uint32_t qp, uint64_t iter, size_t off)
{
	if (++s->verify_errors <= PT_VERIFY_SHOW)
		fprintf(stderr, " Data verification failed (%s side, %s): QP %u iteration %lu byte %zu\n",
			s->role == PT_ROLE_CLIENT ? "client" : "server", what, qp, (unsigned long)iter, off);
}

int pt_poll_send(struct pt_side *s, struct ibv_wc *wc, int max)
{
	int n = ibv_poll_cq(s->send_cq, max, wc);

	if (n < 0) {
		fprintf(stderr, " Poll CQ failed %d\n", n);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		if (wc[i].status != IBV_WC_SUCCESS) {
			fprintf(stderr, " Completion with error on QP %u, iteration %lu: %s (status %d, vendor error %#x)\n",
				pt_wr_qp(wc[i].wr_id), (unsigned long)pt_wr_n(wc[i].wr_id),
				ibv_wc_status_str(wc[i].status), wc[i].status, wc[i].vendor_err);
			return -1;
		}
	}
	return n;
}

/*
 * Post iteration c->posted of QP @p q with @p flags (SIGNALED or 0). The WR
 * and SGE are the side's own, filled in again, not built anew: every store
 * of a post waits in the store buffer behind the WQE line, whose owner is
 * the daemon's core (x86 commits stores in order), and zeroing a whole WR
 * per post was half of this function's samples with the cores far apart
 * (doc/benchmarks.md, session 29). pt_side_reset_run() set what stays.
 */
static int pt_post_one(struct pt_side *s, uint32_t q, unsigned int flags, pt_prepare_fn *prep)
{
	struct pt_qp_counts *c = &s->pub.qp[q];
	uint64_t iter = c->posted;
	struct ibv_sge *sge = &s->post_sge;
	struct ibv_send_wr *wr = &s->post_wr, *bad;

	sge->addr = (uint64_t)(uintptr_t)pt_tx_slot(s, q, iter);
	wr->wr_id = pt_wr_id(q, iter);
	wr->send_flags = flags;
	prep(s, q, iter, wr, sge);
	if ((wr->opcode == IBV_WR_SEND || wr->opcode == IBV_WR_RDMA_WRITE) && s->size <= (uint64_t)s->inline_size)
		wr->send_flags |= IBV_SEND_INLINE;
	if (s->tposted && s->n_posted < s->ts_cap)
		s->tposted[s->n_posted] = pt_now_ns();
	if (ibv_post_send(s->qp[q], wr, &bad)) {
		fprintf(stderr, " Couldn't post send: QP %u iteration %lu\n", q, (unsigned long)iter);
		return -1;
	}
	s->n_posted++;
	c->posted++;
	return 0;
}

/* May QP @p q post another WR? In -D mode the last WR before stopping must
 * be a signaled one, so posting goes on up to the next cq_mod boundary. */
static bool pt_may_post(const struct pt_side *s, uint32_t q, const struct pt_qp_counts *c, bool time_up)
{
	if (c->posted >= s->iters || c->posted - c->completed >= s->layout.window)
		return false;
	if (time_up && c->posted % s->cq_mod == 0)
		return false;
	/* Credits (single process only): never send into a missing receive. */
	if (s->mode->verb == PT_SEND && c->posted >= s->peer->qp[q].recv_posted)
		return false;
	return true;
}

enum pt_step pt_bw_requester_step(struct pt_side *s, pt_prepare_fn *prep, pt_complete_fn *done)
{
	struct ibv_wc wc[PT_POLL_BATCH];
	uint32_t nq = (uint32_t)s->num_qps;
	bool time_up = pt_window_update(s, s->n_completed);
	bool progress = false, finished = true;
	int n;

	for (uint32_t k = 0; k < nq; k++) {
		uint32_t q = (s->rr + k) % nq;
		struct pt_qp_counts *c = &s->pub.qp[q];

		for (int b = 0; b < PT_POST_BURST && pt_may_post(s, q, c, time_up); b++) {
			/* CQ moderation: every cq_mod-th WR and the last one are signaled. */
			uint64_t next = c->posted + 1;
			unsigned int flags = next % s->cq_mod == 0 || next == s->iters ? IBV_SEND_SIGNALED : 0;

			if (pt_post_one(s, q, flags, prep))
				return PT_STEP_ERROR;
			progress = true;
		}
	}
	s->rr = nq > 1 ? (s->rr + 1) % nq : 0;

	n = pt_poll_send(s, wc, PT_POLL_BATCH);
	if (n < 0)
		return PT_STEP_ERROR;
	for (int i = 0; i < n; i++) {
		uint32_t q = pt_wr_qp(wc[i].wr_id);
		uint64_t end = pt_wr_n(wc[i].wr_id) + 1;
		struct pt_qp_counts *c;
		uint64_t now;

		if (q >= nq || end <= s->pub.qp[q].completed || end > s->pub.qp[q].posted) {
			fprintf(stderr, " Unexpected completion wr_id %#lx\n", (unsigned long)wc[i].wr_id);
			return PT_STEP_ERROR;
		}
		c = &s->pub.qp[q];
		now = s->tcompleted ? pt_now_ns() : 0;
		/* A signaled completion retires every earlier WR of its QP. */
		for (uint64_t k = c->completed; k < end; k++) {
			if (s->tcompleted && s->n_completed < s->ts_cap)
				s->tcompleted[s->n_completed] = now;
			s->n_completed++;
		}
		if (done)
			done(s, q, c->completed, end);
		c->completed = end;
		progress = true;
	}

	for (uint32_t q = 0; q < nq; q++) {
		const struct pt_qp_counts *c = &s->pub.qp[q];

		if (c->completed != c->posted ||
		    !(c->posted >= s->iters || (time_up && c->posted % s->cq_mod == 0))) {
			finished = false;
			break;
		}
	}
	if (finished)
		return PT_STEP_DONE;
	return progress ? PT_STEP_BUSY : PT_STEP_IDLE;
}

int pt_bw_post_receives(struct pt_side *s)
{
	uint64_t want = s->layout.rx_depth < s->iters ? s->layout.rx_depth : s->iters;

	for (uint32_t q = 0; q < (uint32_t)s->num_qps; q++) {
		/* receives left over from an earlier size count for this one */
		s->pub.qp[q].recv_posted = pt_rx_outstanding(&s->rx[q]);
		while (pt_rx_outstanding(&s->rx[q]) < want)
			if (pt_post_recv(s, q))
				return -1;
	}
	return 0;
}

static void pt_check_received(struct pt_side *s, uint32_t q, const struct ibv_wc *wc)
{
	size_t off = s->p->conn == PT_UD ? PT_UD_GRH : 0;
	const uint8_t *data = pt_rx_slot(s, q, pt_wr_n(wc->wr_id)) + off;
	uint64_t iter = s->rx_expect[q];
	size_t bad;

	s->verify_checked++;
	if (wc->byte_len != s->size + off) {
		pt_verify_fail(s, "length", q, iter, wc->byte_len);
		return;
	}
	/* Unreliable transports may lose messages: follow the iteration the
	 * message says it is, as long as it moves forward. */
	if (s->p->conn != PT_RC && s->size >= 8) {
		uint64_t got;

		if (pt_pattern_iter(data, s->size, q, &got) && got >= iter)
			iter = got;
	}
	bad = pt_pattern_check(data, s->size, iter, q);
	if (bad != SIZE_MAX)
		pt_verify_fail(s, "SEND payload", q, iter, bad);
	s->rx_expect[q] = iter + 1;
}

int pt_poll_recv(struct pt_side *s)
{
	struct ibv_wc wc[PT_POLL_BATCH];
	int n = ibv_poll_cq(s->recv_cq, PT_POLL_BATCH, wc);

	if (n < 0) {
		fprintf(stderr, " Poll CQ failed %d\n", n);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		uint32_t q = pt_wr_qp(wc[i].wr_id);
		struct pt_qp_counts *c;

		if (wc[i].status != IBV_WC_SUCCESS) {
			fprintf(stderr, " Receive completion with error on QP %u: %s (status %d, vendor error %#x)\n",
				q, ibv_wc_status_str(wc[i].status), wc[i].status, wc[i].vendor_err);
			return -1;
		}
		if (q >= (uint32_t)s->num_qps) {
			fprintf(stderr, " Unexpected receive wr_id %#lx\n", (unsigned long)wc[i].wr_id);
			return -1;
		}
		c = &s->pub.qp[q];
		if (s->p->verify)
			pt_check_received(s, q, &wc[i]);
		s->rx[q].done_total++;
		c->received++;
		s->n_received++;
		if (c->recv_posted < s->iters && pt_post_recv(s, q))
			return -1;
	}
	if (n)
		s->t_last_rx = pt_now_ns();
	return n;
}

enum pt_step pt_bw_receiver_step(struct pt_side *s)
{
	int n = pt_poll_recv(s);
	uint64_t missing = 0, now;
	bool all = true;

	if (n < 0)
		return PT_STEP_ERROR;
	pt_window_update(s, s->n_received);
	for (uint32_t q = 0; q < (uint32_t)s->num_qps; q++)
		if (s->pub.qp[q].received < s->iters)
			all = false;
	if (all)
		return PT_STEP_DONE;
	if (!s->peer->done)
		return n ? PT_STEP_BUSY : PT_STEP_IDLE;
	/* The sender is done: take what is still on its way, then count the rest as lost. */
	for (uint32_t q = 0; q < (uint32_t)s->num_qps; q++) {
		uint64_t sent = s->peer->qp[q].posted, got = s->pub.qp[q].received;

		missing += sent > got ? sent - got : 0;
	}
	if (!missing)
		return PT_STEP_DONE;
	if (n)
		return PT_STEP_BUSY;
	now = pt_now_ns();
	if (!s->t_peer_done)
		s->t_peer_done = now;
	if (now - (s->t_last_rx > s->t_peer_done ? s->t_last_rx : s->t_peer_done) > PT_DRAIN_NS) {
		s->lost = missing;
		return PT_STEP_DONE;
	}
	return PT_STEP_IDLE;
}

enum pt_step pt_target_step(struct pt_side *s, void (*check)(struct pt_side *s))
{
	if (!check || !s->p->verify)
		return PT_STEP_DONE;
	if (!s->peer->done)
		return PT_STEP_WAIT_PEER;
	check(s);
	return PT_STEP_DONE;
}

/* May this side send its next ping-pong message now? */
static bool pt_pingpong_may_send(const struct pt_side *s, bool time_up)
{
	const struct pt_qp_counts *c = &s->pub.qp[0];

	if (c->completed != c->posted)  /* one message in flight each way */
		return false;
	if (s->role == PT_ROLE_CLIENT)
		return c->posted == c->received && c->posted < s->iters && !time_up;
	return c->posted < c->received;
}

/* Poll the send CQ and tell whether the ping-pong side is done. */
static enum pt_step pt_pingpong_finish(struct pt_side *s, bool time_up, bool progress)
{
	struct pt_qp_counts *c = &s->pub.qp[0];
	struct ibv_wc wc;
	int n = pt_poll_send(s, &wc, 1);

	if (n < 0)
		return PT_STEP_ERROR;
	if (n) {
		c->completed = pt_wr_n(wc.wr_id) + 1;
		progress = true;
	}
	if (c->completed == c->posted) {
		if (s->role == PT_ROLE_CLIENT) {
			if (c->received == c->posted && (c->posted >= s->iters || time_up))
				return PT_STEP_DONE;
		} else if (c->posted >= s->iters ||
			   (s->peer->done && c->posted >= s->peer->qp[0].posted)) {
			return PT_STEP_DONE;
		}
	}
	return progress ? PT_STEP_BUSY : PT_STEP_IDLE;
}

enum pt_step pt_pingpong_step(struct pt_side *s, bool progress, bool credit, pt_prepare_fn *prep)
{
	const struct pt_qp_counts *c = &s->pub.qp[0];
	bool time_up = s->role == PT_ROLE_CLIENT && pt_window_update(s, c->received);

	if (credit && pt_pingpong_may_send(s, time_up)) {
		/* one message in flight each way: every one is signaled */
		if (pt_post_one(s, 0, IBV_SEND_SIGNALED, prep))
			return PT_STEP_ERROR;
		progress = true;
	}
	return pt_pingpong_finish(s, time_up, progress);
}
