/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * scripts/soak.sh's churn client: ROUNDS rounds (0: until killed) of open
 * device, alloc PD, register MRs, create a CQ with a completion channel,
 * QPS RC and UD QPs (RC to INIT, UD to RTR), an AH, then destroy everything
 * in reverse and close the device. Plain verbs through the shim, so the
 * soak can SIGKILL it in the middle of any of these calls.
 *
 * usage: soak_client ROUNDS QPS
 * Exit: 0, or 1 with the failing call on stderr.
 */
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_QPS 64
#define MR_BYTES (64u << 10)

static int
fail(const char *what)
{
	perror(what);
	return 1;
}

/* RC: to INIT (RTR needs a peer); UD: to RTR. */
static int
to_rtr(struct ibv_qp *qp, enum ibv_qp_type type)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1 };
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

	if (type == IBV_QPT_UD) {
		a.qkey = 0x11111111;
		mask |= IBV_QP_QKEY;
	} else {
		a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	if (ibv_modify_qp(qp, &a, mask))
		return -1;
	if (type != IBV_QPT_UD)
		return 0;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

static int
round_once(struct ibv_device *dev, int nqps, void *buf)
{
	struct ibv_context *ctx = ibv_open_device(dev);
	struct ibv_qp *qp[MAX_QPS];
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1,
				  .grh = { .sgid_index = 1, .hop_limit = 64 } };

	if (ctx == NULL)
		return fail("ibv_open_device");
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	if (pd == NULL)
		return fail("ibv_alloc_pd");
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, MR_BYTES, IBV_ACCESS_LOCAL_WRITE |
				       IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	if (mr == NULL)
		return fail("ibv_reg_mr");
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	if (ch == NULL)
		return fail("ibv_create_comp_channel");
	struct ibv_cq *cq = ibv_create_cq(ctx, 2 * nqps + 16, NULL, ch, 0);
	if (cq == NULL)
		return fail("ibv_create_cq");
	if (ibv_req_notify_cq(cq, 0))
		return fail("ibv_req_notify_cq");
	for (int i = 0; i < nqps; i++) {
		struct ibv_qp_init_attr ia = {
			.send_cq = cq, .recv_cq = cq,
			.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1 },
			.qp_type = (i & 1) ? IBV_QPT_UD : IBV_QPT_RC,
		};

		qp[i] = ibv_create_qp(pd, &ia);
		if (qp[i] == NULL)
			return fail("ibv_create_qp");
		if (to_rtr(qp[i], ia.qp_type))
			return fail("ibv_modify_qp");
	}
	/* an AH to our own GID 1 (the daemon's IPv4 address): no resolution needed */
	if (ibv_query_gid(ctx, 1, 1, &aa.grh.dgid))
		return fail("ibv_query_gid");
	struct ibv_ah *ah = ibv_create_ah(pd, &aa);
	if (ah == NULL)
		return fail("ibv_create_ah");
	if (ibv_destroy_ah(ah))
		return fail("ibv_destroy_ah");
	for (int i = nqps - 1; i >= 0; i--)
		if (ibv_destroy_qp(qp[i]))
			return fail("ibv_destroy_qp");
	if (ibv_destroy_cq(cq))
		return fail("ibv_destroy_cq");
	if (ibv_destroy_comp_channel(ch))
		return fail("ibv_destroy_comp_channel");
	if (ibv_dereg_mr(mr))
		return fail("ibv_dereg_mr");
	if (ibv_dealloc_pd(pd))
		return fail("ibv_dealloc_pd");
	if (ibv_close_device(ctx))
		return fail("ibv_close_device");
	return 0;
}

int
main(int argc, char **argv)
{
	long rounds = argc > 1 ? strtol(argv[1], NULL, 0) : 1;
	int nqps = argc > 2 ? atoi(argv[2]) : 4;
	struct ibv_device **list;
	int n;
	void *buf;

	if (nqps < 0 || nqps > MAX_QPS) {
		fprintf(stderr, "usage: soak_client ROUNDS QPS (QPS <= %d)\n", MAX_QPS);
		return 2;
	}
	list = ibv_get_device_list(&n);
	if (list == NULL || n < 1)
		return fail("ibv_get_device_list");
	buf = calloc(1, MR_BYTES);
	if (buf == NULL)
		return fail("calloc");
	for (long r = 0; rounds == 0 || r < rounds; r++)
		if (round_once(list[0], nqps, buf))
			return 1;
	free(buf);
	ibv_free_device_list(list);
	return 0;
}
