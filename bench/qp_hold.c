/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * qp_hold: create N RC QPs on the first ibverbs device, move them to INIT,
 * hold them for a while, destroy them. bench/sweep.sh runs it through the
 * verbs shim (scripts/lab.sh run a ...) to read the daemon's resident memory
 * with 1, 1 k and 16 k QPs.
 *
 *   qp_hold N [HOLD_SEC] [connect]   N in 1..1048576, HOLD_SEC in 0..60 (default 2)
 *
 * connect: the QPs are joined in pairs (0 with 1, 2 with 3, ...) over the
 * device's own GID (index 0: the daemon's loopback path) and moved to RTS,
 * so they are connected and idle while held: bench/idle_qps.sh measures one
 * busy QP beside them. An odd last QP stays in INIT.
 *
 * Prints "qp_hold: holding N QPs" once all exist (the sampling window), then
 * "qp_hold: created N destroyed N create_us_per_qp X first_us Y last_us Z
 * destroy_us_per_qp W": X the mean over all N, Y and Z the means over the
 * first and the last QP_HOLD_WINDOW QPs (fewer when N is smaller), so the
 * cost of one more QP at N is Z. Exit status 0 when all
 * N QPs were created and destroyed, 1 otherwise (with the failing call).
 * Every QP shares one PD and one CQ; queues are 1 WR deep with one SGE, so
 * what grows with N is the daemon's per-QP state, not the rings asked for.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define QP_HOLD_MAX (1u << 20)
#define QP_HOLD_WINDOW 1024ul

static double
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static int
parse_uint(const char *s, unsigned long max, unsigned long *out)
{
	char *end;

	errno = 0;
	*out = strtoul(s, &end, 10);
	return (errno || end == s || *end || *out > max) ? -1 : 0;
}

/* Create QP i and move it to INIT; NULL (message printed) on failure. */
static struct ibv_qp *
qp_make(struct ibv_pd *pd, struct ibv_cq *cq, unsigned long i)
{
	struct ibv_qp_init_attr init = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &init);
	int rc;

	if (!qp) {
		fprintf(stderr, "qp_hold: ibv_create_qp #%lu: %s\n", i, strerror(errno));
		return NULL;
	}
	rc = ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			   IBV_QP_ACCESS_FLAGS);
	if (rc) {
		fprintf(stderr, "qp_hold: ibv_modify_qp(INIT) #%lu: %s\n", i, strerror(rc));
		ibv_destroy_qp(qp);
		return NULL;
	}
	return qp;
}

/* Move @p qp (INIT) to RTR then RTS, connected to QPN @p peer at @p gid. */
static int
qp_connect(struct ibv_qp *qp, uint32_t peer, const union ibv_gid *gid)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024, .dest_qp_num = peer,
		.rq_psn = 0, .max_dest_rd_atomic = 1, .min_rnr_timer = 12,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .dgid = *gid, .sgid_index = 0, .hop_limit = 64 } },
	};
	int rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			       IBV_QP_MIN_RNR_TIMER);

	if (rc)
		return rc;
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .sq_psn = 0, .timeout = 14,
				  .retry_cnt = 7, .rnr_retry = 7, .max_rd_atomic = 1 };
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
			     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

int
main(int argc, char **argv)
{
	unsigned long n, hold = 2, made = 0, freed = 0, i;
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_pd *pd = NULL;
	struct ibv_cq *cq = NULL;
	struct ibv_qp **qps;
	double t0, t1, t_first = 0, t_last0 = 0, t2, t3;
	unsigned long win;
	int ndev = 0, status = 1;
	bool connect = argc == 4 && strcmp(argv[3], "connect") == 0;
	union ibv_gid gid;

	if (argc < 2 || argc > 4 || parse_uint(argv[1], QP_HOLD_MAX, &n) || n == 0 ||
	    (argc >= 3 && parse_uint(argv[2], 60, &hold)) || (argc == 4 && !connect)) {
		fprintf(stderr, "usage: qp_hold N [HOLD_SEC] [connect]   (N 1..%u, HOLD_SEC 0..60)\n",
			QP_HOLD_MAX);
		return 2;
	}
	qps = calloc(n, sizeof(*qps));
	list = ibv_get_device_list(&ndev);
	if (!qps || !list || ndev < 1) {
		fprintf(stderr, "qp_hold: no ibverbs device (%s)\n", qps ? "device list" : "memory");
		goto out;
	}
	ctx = ibv_open_device(list[0]);
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	cq = pd ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
	if (!cq) {
		fprintf(stderr, "qp_hold: open/PD/CQ on %s failed: %s\n",
			ibv_get_device_name(list[0]), strerror(errno));
		goto out;
	}
	win = n < QP_HOLD_WINDOW ? n : QP_HOLD_WINDOW;
	t0 = now_us();
	for (i = 0; i < n; i++) {
		if (i == n - win)
			t_last0 = now_us();
		qps[i] = qp_make(pd, cq, i);
		if (!qps[i])
			break;
		made++;
		if (made == win)
			t_first = now_us();
	}
	t1 = now_us();
	bool ok = made == n;

	if (ok && connect) {
		int rc = ibv_query_gid(ctx, 1, 0, &gid);

		for (i = 0; rc == 0 && i + 1 < n; i += 2) {
			rc = qp_connect(qps[i], qps[i + 1]->qp_num, &gid);
			if (rc == 0)
				rc = qp_connect(qps[i + 1], qps[i]->qp_num, &gid);
			if (rc)
				break;
		}
		if (rc) {
			fprintf(stderr, "qp_hold: connecting pair %lu: %s\n", i / 2, strerror(rc));
			ok = false;
		} else {
			printf("qp_hold: connected %lu pairs in %.1f us per QP\n", n / 2,
			       (now_us() - t1) / (double)n);
		}
	}
	if (ok) {
		printf("qp_hold: holding %lu QPs\n", n);
		fflush(stdout);
		sleep((unsigned int)hold);
		status = 0;
	}
	t2 = now_us();
	for (i = 0; i < made; i++)
		if (ibv_destroy_qp(qps[i]) == 0)
			freed++;
	t3 = now_us();
	if (freed != made)
		status = 1;
	printf("qp_hold: created %lu destroyed %lu create_us_per_qp %.1f", made, freed,
	       made ? (t1 - t0) / (double)made : 0.0);
	if (made == n)
		printf(" first_us %.1f last_us %.1f", (t_first - t0) / (double)win,
		       (t1 - t_last0) / (double)win);
	printf(" destroy_us_per_qp %.1f\n", made ? (t3 - t2) / (double)made : 0.0);
out:
	if (cq)
		ibv_destroy_cq(cq);
	if (pd)
		ibv_dealloc_pd(pd);
	if (ctx)
		ibv_close_device(ctx);
	if (list)
		ibv_free_device_list(list);
	free(qps);
	return status;
}
