/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ibv_attach_mcast / ibv_detach_mcast against a daemon (test/integ
 * mcast_lab.sh): the errors rxe and the kernel give, and the bounds.
 *
 *   mcast_client limits   a non-UD QP, a unicast GID, a detach of what is
 *                         not attached: EINVAL; a repeated attach: 0; a
 *                         flood of groups past max_mcast_grp and one group
 *                         past max_mcast_qp_attach QPs: ENOMEM each time,
 *                         the rest unchanged. Prints one line per check,
 *                         exits 0 when every check held.
 * Group addresses are 239.9.0.0/16 (IPv4-mapped GIDs).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

static int failures;

static void check(int ok, const char *what, int got_errno)
{
	printf("%s %s (errno %d)\n", ok ? "ok" : "FAIL", what, got_errno);
	if (!ok)
		failures++;
}

static void group(union ibv_gid *g, unsigned int i)
{
	memset(g, 0, sizeof(*g));
	g->raw[10] = 0xff;
	g->raw[11] = 0xff;
	g->raw[12] = 239;
	g->raw[13] = 9;
	g->raw[14] = (uint8_t)(i >> 8);
	g->raw[15] = (uint8_t)i;
}

static struct ibv_qp *qp_new(struct ibv_pd *pd, struct ibv_cq *cq, enum ibv_qp_type type)
{
	struct ibv_qp_init_attr a = {
		.send_cq = cq, .recv_cq = cq, .qp_type = type,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
	};

	return ibv_create_qp(pd, &a);
}

static int limits(struct ibv_context *ctx)
{
	struct ibv_device_attr da;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *ud, *rc, **many;
	union ibv_gid g, unicast;
	unsigned int ok_n = 0;
	int e;

	if (ibv_query_device(ctx, &da) != 0 || (pd = ibv_alloc_pd(ctx)) == NULL ||
	    (cq = ibv_create_cq(ctx, 64, NULL, NULL, 0)) == NULL) {
		perror("setup");
		return 2;
	}
	printf("max_mcast_grp %d max_mcast_qp_attach %d max_total_mcast_qp_attach %d\n",
	       da.max_mcast_grp, da.max_mcast_qp_attach, da.max_total_mcast_qp_attach);
	ud = qp_new(pd, cq, IBV_QPT_UD);
	rc = qp_new(pd, cq, IBV_QPT_RC);
	if (ud == NULL || rc == NULL) {
		perror("create_qp");
		return 2;
	}
	group(&g, 0);
	e = ibv_attach_mcast(rc, &g, 0);
	check(e == EINVAL, "RC QP attach: EINVAL", e);
	memset(&unicast, 0, sizeof(unicast));
	unicast.raw[10] = unicast.raw[11] = 0xff;
	unicast.raw[12] = 198;
	unicast.raw[13] = 18;
	unicast.raw[15] = 11;
	e = ibv_attach_mcast(ud, &unicast, 0);
	check(e == EINVAL, "unicast GID attach: EINVAL", e);
	e = ibv_detach_mcast(ud, &g, 0);
	check(e == EINVAL, "detach without attach: EINVAL", e);
	e = ibv_attach_mcast(ud, &g, 0);
	check(e == 0, "attach", e);
	e = ibv_attach_mcast(ud, &g, 0);
	check(e == 0, "repeated attach: 0", e);
	e = ibv_detach_mcast(ud, &g, 0);
	check(e == 0, "detach", e);
	e = ibv_detach_mcast(ud, &g, 0);
	check(e == EINVAL, "second detach: EINVAL", e);

	/* a join flood: one QP, max_mcast_grp + 8 groups */
	for (int i = 0; i < da.max_mcast_grp + 8; i++) {
		group(&g, (unsigned int)i);
		e = ibv_attach_mcast(ud, &g, 0);
		if (e == 0)
			ok_n++;
		else if (e != ENOMEM)
			check(0, "flood attach: 0 or ENOMEM", e);
	}
	check(ok_n == (unsigned int)da.max_mcast_grp, "flood: max_mcast_grp groups, then ENOMEM",
	      (int)ok_n);
	for (int i = 0; i < da.max_mcast_grp; i++) {
		group(&g, (unsigned int)i);
		e = ibv_detach_mcast(ud, &g, 0);
		if (e != 0)
			check(0, "flood detach", e);
	}
	group(&g, 1);
	e = ibv_attach_mcast(ud, &g, 0);
	check(e == 0, "attach after the flood left", e);

	/* an oversubscribed group: max_mcast_qp_attach + 1 QPs */
	many = calloc((size_t)da.max_mcast_qp_attach + 1, sizeof(*many));
	ok_n = 1; /* ud is in group 1 */
	for (int i = 0; many != NULL && i < da.max_mcast_qp_attach; i++) {
		many[i] = qp_new(pd, cq, IBV_QPT_UD);
		if (many[i] == NULL) {
			perror("create_qp");
			return 2;
		}
		e = ibv_attach_mcast(many[i], &g, 0);
		if (e == 0)
			ok_n++;
		else if (e != ENOMEM)
			check(0, "group attach: 0 or ENOMEM", e);
	}
	check(ok_n == (unsigned int)da.max_mcast_qp_attach,
	      "oversubscribed group: max_mcast_qp_attach QPs, then ENOMEM", (int)ok_n);
	/* destroying attached QPs detaches them (as uverbs) */
	for (int i = 0; many != NULL && i < da.max_mcast_qp_attach; i++)
		if (ibv_destroy_qp(many[i]) != 0)
			check(0, "destroy attached QP", errno);
	free(many);
	e = ibv_detach_mcast(ud, &g, 0);
	check(e == 0, "detach after the others' destroy", e);
	ibv_destroy_qp(ud);
	ibv_destroy_qp(rc);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx;
	int rc;

	if (list == NULL || list[0] == NULL || (ctx = ibv_open_device(list[0])) == NULL) {
		fprintf(stderr, "no device\n");
		return 2;
	}
	if (argc != 2 || strcmp(argv[1], "limits") != 0) {
		fprintf(stderr, "usage: mcast_client limits\n");
		return 2;
	}
	rc = limits(ctx);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return rc;
}
