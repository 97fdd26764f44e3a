/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Operations and control messages of the application interface (ai_op.h).
 *
 * Nothing here waits. A dataplane callback of lib/ctl that needs an lcore
 * starts an operation (struct ai_op): it sends control messages by value
 * (ctl_msg.h) to the owning lcore, or to every lcore for an MR, defers its
 * answer (ctl_dp_defer()) and returns. The control loop drains the lcores'
 * answers (ai_answers()) and, once an operation has all of them, hands it
 * to the function of its role (ai->answered[kind], app_iface.c's table),
 * which gives lib/ctl the result (ai_op_finish() -> ctl_dp_done()).
 */
#include "ai_op.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include "daemon.h"

static void ai_answer(struct app_iface *ai, const struct ctl_msg *m);

struct ai_op *
ai_op_new(struct app_iface *ai, enum ai_op_kind kind)
{
	struct ai_op *op;
	uint32_t i = ai->op_free;

	if (i == UINT32_MAX)
		return NULL;
	op = &ai->ops[i];
	ai->op_free = op->next;
	memset(op, 0, sizeof(*op));
	op->kind = (uint8_t)kind;
	op->in_call = true;
	op->state = -1;
	ai->ops_inflight++;
	return op;
}

static uint32_t
op_index(const struct app_iface *ai, const struct ai_op *op)
{
	return (uint32_t)(op - ai->ops);
}

void
ai_op_free(struct app_iface *ai, struct ai_op *op)
{
	if (op->resolving)
		ai->ops_resolving--;
	op->kind = AI_OP_FREE;
	op->next = ai->op_free;
	ai->op_free = op_index(ai, op);
	ai->ops_inflight--;
}

/*
 * @p op is over with @p result (0 or a positive errno). Inside its callback
 * (the workers stopped, so everything ran at once) the callback returns it;
 * afterwards lib/ctl gets it, which may start other operations.
 */
void
ai_op_finish(struct app_iface *ai, struct ai_op *op, int result)
{
	uint64_t token = op->token;

	if (op->in_call) {
		op->finished = true;
		op->result = result;
		return;
	}
	ai_op_free(ai, op);
	if (token != CTL_DP_TOKEN_NONE)
		ctl_dp_done(ai->ctl, token, result);
}

/*
 * The end of a dataplane callback that started @p op: its result if it is
 * over already, else 0 with the answer deferred (lib/ctl waits for
 * ctl_dp_done(); outside a request nobody waits and the operation ends on
 * its own).
 */
int
ai_op_return(struct app_iface *ai, struct ai_op *op)
{
	int result = op->result;

	op->in_call = false;
	if (op->finished) {
		ai_op_free(ai, op);
		return result;
	}
	op->token = ctl_dp_defer(ai->ctl);
	return 0;
}

/* Run @p m as its lcore would, here: only once the workers stopped. */
static void
ai_run_here(struct app_iface *ai, unsigned int wi, struct ctl_msg *m)
{
	worker_ctl_run(ai->d->worker[wi], m);
	ai_answer(ai, m);
}

/* Move what waits in lcore @p wi's backlog onto its ring, as room allows. */
static unsigned int
ai_backlog_flush(struct app_iface *ai, unsigned int wi)
{
	struct ai_backlog *b = ai->bl[wi];
	unsigned int n = 0;

	while (b->n > 0 && b->outstanding < WORKER_CTL_RING &&
	       worker_ctl_send(ai->d->worker[wi], &b->msg[b->head]) == 0) {
		b->head = (b->head + 1) % AI_BACKLOG;
		b->n--;
		b->outstanding++;
		n++;
	}
	return n;
}

/* A message that makes an lcore let go of memory lib/ctl will free. */
static bool
ai_release(const struct ctl_msg *m)
{
	return m->type == CTL_MSG_QP_DESTROY || m->type == CTL_MSG_MR_DEREG ||
	       m->type == CTL_MSG_SRQ_DETACH;
}

int
ai_send(struct app_iface *ai, unsigned int wi, struct ai_op *op, struct ctl_msg *m)
{
	struct daemon *d = ai->d;
	struct ai_backlog *b = ai->bl[wi];

	m->op = op != NULL ? op_index(ai, op) : AI_OP_NONE;
	m->rc = 0;
	if (op != NULL)
		op->waiting++;
	if (daemon_stopping(d))
		daemon_stop_workers(d);
	if (!d->workers_running) {
		ai_run_here(ai, wi, m);
		return 0;
	}
	ai->brisk_until = rte_get_tsc_cycles() + d->tsc_hz / 1000000 * AI_BRISK_US;
	if (b->n == 0 && b->outstanding < WORKER_CTL_RING &&
	    worker_ctl_send(d->worker[wi], m) == 0) {
		b->outstanding++;
		return 0;
	}
	if (b->n >= (ai_release(m) ? AI_BACKLOG : AI_BACKLOG - AI_RELEASE_RESERVE)) {
		if (op != NULL)
			op->waiting--;
		ai->ctl_refused++;
		return -ENOBUFS;
	}
	b->msg[(b->head + b->n++) % AI_BACKLOG] = *m;
	ai->ctl_backlogged++;
	return 0;
}

/* Drain every lcore's answers and refill its ring from the backlog. @return answers */
unsigned int
ai_answers(struct app_iface *ai)
{
	struct ctl_msg m[AI_ANSWER_BURST];
	unsigned int work = 0;

	for (unsigned int wi = 0; wi < ai->d->n_workers; wi++) {
		unsigned int n = worker_ctl_answers(ai->d->worker[wi], m, RTE_DIM(m));

		ai->bl[wi]->outstanding -= n;
		for (unsigned int i = 0; i < n; i++)
			ai_answer(ai, &m[i]);
		work += n + ai_backlog_flush(ai, wi);
	}
	return work;
}

/*
 * Once the workers stopped (shutdown): run what is still queued for them
 * here, so every operation gets its answer.
 */
void
ai_drain_stopped(struct app_iface *ai)
{
	struct daemon *d = ai->d;

	daemon_stop_workers(d);
	for (unsigned int wi = 0; wi < d->n_workers; wi++) {
		struct ai_backlog *b = ai->bl[wi];
		struct ctl_msg m;

		/* in the order the lcore ran them: answered, kept answers, still queued */
		ai_answers(ai);
		for (uint32_t k = 0; k < d->worker[wi]->ctl_ans_n; k++) {
			b->outstanding--;
			ai_answer(ai, &d->worker[wi]->ctl_ans[k]);
		}
		d->worker[wi]->ctl_ans_n = 0;
		while (rte_ring_sc_dequeue_elem(d->worker[wi]->ctl_in, &m, sizeof(m)) == 0) {
			b->outstanding--;
			ai_run_here(ai, wi, &m);
		}
		while (b->n > 0) {
			m = b->msg[b->head];
			b->head = (b->head + 1) % AI_BACKLOG;
			b->n--;
			ai_run_here(ai, wi, &m);
		}
	}
}

/* One answer of an lcore, for operation m->op. */
static void
ai_answer(struct app_iface *ai, const struct ctl_msg *m)
{
	struct ai_op *op = m->op < AI_MAX_OPS ? &ai->ops[m->op] : NULL;

	if (op == NULL || op->kind == AI_OP_FREE || op->waiting == 0) {
		/* nobody waits (an MR told to an lcore without its PD's QPs, a test's STALL) */
		if (m->rc != 0 && m->rc != -ENOENT)
			ai->ctl_told_errors++;
		return;
	}
	if (m->rc != 0 && op->rc == 0)
		op->rc = m->rc;
	if (m->rc == 0 && m->type == CTL_MSG_MR_REG)
		op->ok_mask |= 1u << m->worker;
	if (--op->waiting == 0)
		ai_op_answered(ai, op);
}

/* Every answer of @p op is in: the function of its role acts on them. */
void
ai_op_answered(struct app_iface *ai, struct ai_op *op)
{
	ai_answered_fn fn = op->kind < AI_OP_COUNT ? ai->answered[op->kind] : NULL;

	if (fn != NULL)
		fn(ai, op);
}

/* Stall requests of a test (app_iface_stall_worker()) become STALL messages. */
void
ai_stall_requests(struct app_iface *ai)
{
	for (unsigned int wi = 0; wi < ai->d->n_workers; wi++) {
		uint32_t ms = atomic_exchange_explicit(&ai->stall_req[wi], 0, memory_order_acquire);
		struct ctl_msg m = { .type = CTL_MSG_STALL };

		if (ms == 0)
			continue;
		m.u.stall_ms = ms;
		ai_send(ai, wi, NULL, &m);
	}
}

int
ai_send_release(struct app_iface *ai, unsigned int wi, struct ai_op *op, struct ctl_msg *m)
{
	if (ai_send(ai, wi, op, m) != 0) {
		ai->destroys_held++;
		ai_op_free(ai, op);
		ctl_dp_destroy_failed(ai->ctl);
		return -1;
	}
	if (ai_op_return(ai, op) != 0)
		ctl_dp_destroy_failed(ai->ctl);
	return 0;
}
