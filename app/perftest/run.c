/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The driver: open one side (server or client) or both (single process),
 * connect them, then for each message size reset, set up, run the mode's
 * steps until every local side is done, exchange results and report.
 *
 * The step loop never blocks while a side has work. When nothing moved it
 * looks at the TCP link (at most once a millisecond, or blocking when the
 * local side only waits for the peer), sleeps on CQ events with -e, and
 * gives up after --stall-timeout seconds without a completion.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "perftest.h"

#define PT_LINK_CHECK_NS (1000 * 1000ull)
#define PT_WAIT_MS       100

struct pt_test {
	const struct pt_params *p;
	struct pt_side side[2];
	int nsides;
	bool linked;
	struct pt_link link;
	struct pt_progress mirror;   /* the remote peer's progress (two processes) */
	bool peer_done_seen;
	struct pt_info info;
	FILE *table;                 /* human table, or NULL */
	FILE *data;                  /* CSV/JSON, or NULL */
	struct pt_result *rows;
	size_t nrows;
	uint64_t checked, errors, lost;
	bool verify_failed;
};

static int pt_handle_peer_done(struct pt_test *t, uint32_t tag)
{
	if (pt_recv_done(&t->link, tag, &t->mirror))
		return -1;
	t->peer_done_seen = true;
	return 0;
}

static void pt_arm_events(struct pt_test *t)
{
	for (int i = 0; i < t->nsides; i++) {
		ibv_req_notify_cq(t->side[i].send_cq, 0);
		ibv_req_notify_cq(t->side[i].recv_cq, 0);
	}
}

/* Sleep until a CQ event or link data; events are acknowledged at once. */
static int pt_wait_events(struct pt_test *t, uint32_t tag)
{
	struct pollfd pfd[3];
	int n = 0, rc;

	for (int i = 0; i < t->nsides; i++)
		pfd[n++] = (struct pollfd){ .fd = t->side[i].channel->fd, .events = POLLIN };
	if (t->linked && !t->peer_done_seen)
		pfd[n++] = (struct pollfd){ .fd = t->link.fd, .events = POLLIN };
	do
		rc = poll(pfd, (nfds_t)n, PT_WAIT_MS);
	while (rc < 0 && errno == EINTR);
	if (rc < 0)
		return -1;
	for (int i = 0; i < t->nsides; i++) {
		struct ibv_cq *cq;
		void *cq_ctx;

		if (!(pfd[i].revents & POLLIN))
			continue;
		if (ibv_get_cq_event(t->side[i].channel, &cq, &cq_ctx) == 0)
			ibv_ack_cq_events(cq, 1);
	}
	if (t->linked && !t->peer_done_seen && (pfd[n - 1].revents & (POLLIN | POLLHUP | POLLERR)))
		return pt_handle_peer_done(t, tag);
	return 0;
}

static void pt_stall_report(const struct pt_test *t)
{
	fprintf(stderr, " No progress for %d s; giving up (--stall-timeout)\n", t->p->stall_timeout);
	for (int i = 0; i < t->nsides; i++) {
		const struct pt_side *s = &t->side[i];

		fprintf(stderr, "   %s side: posted %lu, completed %lu, received %lu\n",
			s->role == PT_ROLE_CLIENT ? "client" : "server", (unsigned long)s->n_posted,
			(unsigned long)s->n_completed, (unsigned long)s->n_received);
	}
}

/* Step every local side until all are done. */
static int pt_drive(struct pt_test *t, uint32_t tag)
{
	const struct pt_params *p = t->p;
	uint64_t now = pt_now_ns(), last_progress = now, last_link = now;
	uint64_t stall_ns = (uint64_t)p->stall_timeout * 1000000000ull;
	bool moved = false, armed = false;

	for (;;) {
		bool all_done = true, any_idle = false, progress = false;

		for (int i = 0; i < t->nsides; i++) {
			struct pt_side *s = &t->side[i];

			if (s->pub.done)
				continue;
			switch (s->mode->run(s)) {
			case PT_STEP_ERROR:
				return -1;
			case PT_STEP_DONE:
				s->pub.done = true;
				progress = true;
				if (t->linked && pt_send_done(&t->link, tag, &s->pub))
					return -1;
				break;
			case PT_STEP_BUSY:
				progress = true;
				break;
			case PT_STEP_IDLE:
				any_idle = true;
				break;
			case PT_STEP_WAIT_PEER:
				break;
			}
			all_done &= s->pub.done;
		}
		if (all_done)
			return 0;
		if (progress) {
			moved = true;
			continue;
		}
		now = pt_now_ns();
		if (moved) {
			last_progress = now;
			moved = false;
			armed = false;
		}
		if (t->linked && !t->peer_done_seen) {
			/* only waiting for the peer: block on the link; else peek now and then */
			int timeout = !any_idle ? PT_WAIT_MS : now - last_link >= PT_LINK_CHECK_NS ? 0 : -1;

			if (timeout >= 0) {
				int r = pt_link_wait(&t->link, timeout);

				last_link = now;
				if (r < 0 || (r > 0 && pt_handle_peer_done(t, tag)))
					return -1;
				if (r > 0)
					continue;
			}
		}
		if (p->use_event && any_idle) {
			if (!armed) {
				pt_arm_events(t);     /* then look at the CQs once more before sleeping */
				armed = true;
				continue;
			}
			if (pt_wait_events(t, tag))
				return -1;
			armed = false;
			now = pt_now_ns();
		}
		/* A side that waits for a remote peer is not stalled: the link
		 * reports a peer that went away. Locally nothing may wait forever. */
		if (stall_ns && (any_idle || !t->linked) && now - last_progress > stall_ns) {
			pt_stall_report(t);
			return -1;
		}
	}
}

static void pt_start_clock(struct pt_side *s, uint64_t now)
{
	const struct pt_params *p = s->p;

	s->t_begin = now;
	if (p->duration) {
		s->win.t_start = now;
		s->win.t_sample = now + (uint64_t)p->margin * 1000000000ull;
		s->win.t_stop = now + (uint64_t)(p->duration - p->margin) * 1000000000ull;
		s->win.t_end = now + (uint64_t)p->duration * 1000000000ull;
	}
}

static void pt_side_result(const struct pt_side *s, struct pt_result *r)
{
	if (s->mode->report)
		s->mode->report(s, r);
	else
		pt_report_bw_side(s, r);
}

static void pt_emit(struct pt_test *t, struct pt_result *r)
{
	const struct pt_params *p = t->p;

	if (t->table)
		pt_print_result(t->table, p, r);
	if (t->data && p->output == PT_OUT_CSV) {
		pt_csv_row(t->data, p, &t->info, r);
		fflush(t->data);
	}
	if (p->output == PT_OUT_JSON)
		t->rows[t->nrows++] = *r;
	if (p->verify && (r->verify_errors || !r->verify_checked)) {
		fprintf(stderr, " Data verification FAILED at %lu bytes: %lu of %lu checks failed\n",
			(unsigned long)r->size, (unsigned long)r->verify_errors, (unsigned long)r->verify_checked);
		t->verify_failed = true;
	}
	t->checked += r->verify_checked;
	t->errors += r->verify_errors;
	t->lost += r->lost;
}

static int pt_run_size(struct pt_test *t, uint32_t tag, uint64_t size)
{
	struct pt_result mine, theirs, shown;
	uint64_t now;

	for (int i = 0; i < t->nsides; i++) {
		struct pt_side *s = &t->side[i];

		if (pt_side_reset_run(s, size) || (s->mode->setup && s->mode->setup(s)))
			return -1;
	}
	if (t->linked) {
		t->mirror.done = false;
		t->peer_done_seen = false;
		for (uint32_t q = 0; q < t->mirror.num_qps; q++)
			t->mirror.qp[q] = (struct pt_qp_counts){ .recv_posted = UINT64_MAX };
		if (pt_xchg_sync(&t->link, tag))
			return -1;
	}
	now = pt_now_ns();
	for (int i = 0; i < t->nsides; i++)
		pt_start_clock(&t->side[i], now);
	if (pt_drive(t, tag))
		return -1;

	pt_side_result(&t->side[0], &mine);
	if (t->linked) {
		if (!t->peer_done_seen && pt_handle_peer_done(t, tag))
			return -1;
		if (pt_xchg_result(&t->link, tag, &mine, &theirs))
			return -1;
	} else {
		pt_side_result(&t->side[1], &theirs);
	}
	/* show what this side measured, else what the peer did (passive server) */
	shown = mine.valid ? mine : theirs;
	shown.size = size;
	shown.verify_checked = mine.verify_checked + theirs.verify_checked;
	shown.verify_errors = mine.verify_errors + theirs.verify_errors;
	shown.lost = mine.lost + theirs.lost;
	pt_emit(t, &shown);
	return 0;
}

/* Table to stdout unless CSV/JSON takes stdout; CSV/JSON to stdout or --out-file. */
static int pt_open_outputs(struct pt_test *t)
{
	const struct pt_params *p = t->p;

	t->table = (p->output == PT_OUT_TABLE || p->out_file) ? stdout : NULL;
	if (p->output == PT_OUT_TABLE)
		return 0;
	t->data = p->out_file ? fopen(p->out_file, "w") : stdout;
	if (!t->data) {
		fprintf(stderr, " Couldn't open %s: %s\n", p->out_file, strerror(errno));
		return -1;
	}
	return 0;
}

static int pt_open_single(struct pt_test *t)
{
	const struct pt_params *p = t->p;
	struct pt_side *c = &t->side[0], *s = &t->side[1];

	t->nsides = 2;
	if (pt_side_open(c, p, PT_ROLE_CLIENT, p->ib_devname, p->ib_port, p->gid_index))
		return -1;
	if (pt_side_open(s, p, PT_ROLE_SERVER, p->peer_devname ? p->peer_devname : c->devname,
			 p->peer_ib_port, p->peer_gid_index))
		return -1;
	memcpy(c->remote, s->local, (size_t)p->num_qps * sizeof(*c->remote));
	memcpy(s->remote, c->local, (size_t)p->num_qps * sizeof(*s->remote));
	if (pt_side_connect(c) || pt_side_connect(s))
		return -1;
	c->peer = &s->pub;
	s->peer = &c->pub;
	return 0;
}

static int pt_open_linked(struct pt_test *t)
{
	const struct pt_params *p = t->p;
	struct pt_side *s = &t->side[0];
	enum pt_role role = p->servername ? PT_ROLE_CLIENT : PT_ROLE_SERVER;

	t->nsides = 1;
	t->link.fd = -1;
	if (pt_side_open(s, p, role, p->ib_devname, p->ib_port, p->gid_index))
		return -1;
	if (role == PT_ROLE_SERVER ? pt_link_accept(&t->link, p->tcp_port, t->table != NULL)
				   : pt_link_connect(&t->link, p->servername, p->tcp_port))
		return -1;
	t->linked = true;
	if (pt_xchg_hello(&t->link, p) ||
	    pt_xchg_dests(&t->link, s->local, s->remote, (uint32_t)s->num_qps))
		return -1;
	if (pt_side_connect(s))
		return -1;
	t->mirror.num_qps = (uint32_t)s->num_qps;
	t->mirror.qp = calloc((size_t)s->num_qps, sizeof(*t->mirror.qp));
	if (!t->mirror.qp)
		return -1;
	s->peer = &t->mirror;
	/* both QPs must be in RTR before anyone sends */
	return pt_xchg_sync(&t->link, UINT32_MAX);
}

static void pt_fill_info(struct pt_test *t)
{
	const struct pt_side *s = &t->side[0];
	const struct pt_side *rx = t->nsides > 1 ? &t->side[1] : s;

	t->info = (struct pt_info){
		.role = s->role,
		.single = t->p->single_process,
		.device = s->devname,
		.peer_device = t->nsides > 1 ? t->side[1].devname : NULL,
		.mtu = pt_mtu_bytes(s->path_mtu),
		.link_layer = s->port_attr.link_layer,
		.gid_index = s->gid_index,
		.inline_size = s->inline_size,
		.out_reads = s->rd_atomic,
		.tx_depth = (int)s->layout.window,
		.rx_depth = (int)rx->layout.rx_depth,
		.cq_mod = s->p->cq_mod < (int)s->layout.window ? s->p->cq_mod : (int)s->layout.window,
	};
}

static void pt_print_addresses(struct pt_test *t)
{
	const struct pt_side *s = &t->side[0];
	bool gid = s->gid_index >= 0;

	for (int i = 0; i < s->num_qps; i++)
		pt_print_dest(t->table, t->p, "local", &s->local[i], gid);
	for (int i = 0; i < s->num_qps; i++)
		pt_print_dest(t->table, t->p, "remote", &s->remote[i], gid);
}

static void pt_print_summary(struct pt_test *t)
{
	if (!t->table)
		return;
	pt_print_rule(t->table);
	if (t->p->verify)
		fprintf(t->table, " Data verification: %s (%lu checks, %lu errors)\n",
			t->verify_failed ? "FAILED" : "OK", (unsigned long)t->checked, (unsigned long)t->errors);
	if (t->lost)
		fprintf(t->table, " Lost messages   : %lu\n", (unsigned long)t->lost);
}

int pt_test_main(const struct pt_params *p)
{
	struct pt_test t = { .p = p, .link = { .fd = -1 } };
	uint64_t sizes[24];
	size_t nsizes;
	int rc = 1;

	srand48((long)time(NULL) ^ (long)getpid() << 16);
	if (pt_open_outputs(&t))
		return 1;
	if (p->single_process ? pt_open_single(&t) : pt_open_linked(&t))
		goto out;

	pt_fill_info(&t);
	nsizes = pt_params_sizes(p, p->conn == PT_UD ? (uint64_t)t.info.mtu : PT_MAX_SIZE,
				 sizes, sizeof(sizes) / sizeof(sizes[0]));
	if (nsizes == 0) {
		fprintf(stderr, " No message size fits the MTU %d\n", t.info.mtu);
		goto out;
	}
	t.rows = calloc(nsizes, sizeof(*t.rows));
	if (!t.rows)
		goto out;
	if (t.table) {
		pt_print_header(t.table, p, &t.info);
		pt_print_addresses(&t);
		pt_print_table_head(t.table, p);
		fflush(t.table);
	}
	if (t.data && p->output == PT_OUT_CSV)
		pt_csv_head(t.data);
	for (size_t i = 0; i < nsizes; i++) {
		if (pt_run_size(&t, (uint32_t)i, sizes[i]))
			goto out;
		if (t.table)
			fflush(t.table);
	}
	pt_print_summary(&t);
	if (t.data && p->output == PT_OUT_JSON)
		pt_json_write(t.data, p, &t.info, t.rows, t.nrows);
	rc = t.verify_failed ? 1 : 0;
out:
	if (t.data && t.data != stdout)
		fclose(t.data);
	pt_link_close(&t.link);
	for (int i = 0; i < 2; i++)
		if (t.side[i].ctx || t.side[i].buf)
			pt_side_close(&t.side[i]);
	free(t.mirror.qp);
	free(t.rows);
	return rc;
}
