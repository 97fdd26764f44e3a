/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/ctl: ownership isolation between connections, teardown on close,
 * device-wide allocation, QP modify semantics, bad requests, the dataplane
 * hand-over and the socket server.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ctl_test.h"

static void setup(void)
{
	struct ctl_config cfg = base_cfg();

	ctl = ctl_create(&cfg);
	cr_assert_not_null(ctl);
}

static void teardown(void)
{
	ctl_destroy(ctl);
	ctl = NULL;
}

TestSuite(ctl, .init = setup, .fini = teardown, .timeout = 20);

Test(ctl, device_queries)
{
	struct client a;
	struct ipc_msg m, r;

	client_open(&a, false);
	req(&m, IPC_OP_DEVICE_LIST);
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), 0);
	cr_assert_eq(r.u.rsp_DEVICE_LIST.count, 1);
	cr_assert_str_eq(r.u.rsp_DEVICE_LIST.dev[0].name, "dpdk_roce0");
	cr_assert_eq(r.u.rsp_DEVICE_LIST.dev[0].node_type, IBV_NODE_CA);

	/* Everything else needs OPEN_DEVICE first. */
	req(&m, IPC_OP_QUERY_DEVICE);
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), ENODEV);
	req(&m, IPC_OP_OPEN_DEVICE);
	strcpy(m.u.req_OPEN_DEVICE.name, "mlx5_0");
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), ENODEV);
	memset(m.u.req_OPEN_DEVICE.name, 'x', sizeof(m.u.req_OPEN_DEVICE.name));
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), EINVAL, "unterminated name");
	client_close(&a);

	client_open(&a, true);
	req(&m, IPC_OP_OPEN_DEVICE);
	strcpy(m.u.req_OPEN_DEVICE.name, "dpdk_roce0");
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), EBUSY, "one device per connection");

	req(&m, IPC_OP_QUERY_DEVICE);
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), 0);
	cr_assert_eq(r.u.rsp_QUERY_DEVICE.attr.vendor_id, 0xffffff);
	cr_assert_eq(r.u.rsp_QUERY_DEVICE.attr.vendor_part_id, 0);
	cr_assert_neq(r.u.rsp_QUERY_DEVICE.attr.node_guid, 0);

	req(&m, IPC_OP_QUERY_PORT);
	m.u.req_QUERY_PORT.port = 1;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), 0);
	cr_assert_eq(r.u.rsp_QUERY_PORT.attr.state, IBV_PORT_ACTIVE);
	cr_assert_eq(r.u.rsp_QUERY_PORT.attr.link_layer, IBV_LINK_LAYER_ETHERNET);
	m.u.req_QUERY_PORT.port = 2;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), EINVAL);
	m.u.req_QUERY_PORT.port = 0;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), EINVAL);

	req(&m, IPC_OP_QUERY_GID);
	m.u.req_QUERY_GID.port = 1;
	m.u.req_QUERY_GID.index = 0;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), 0);
	cr_assert_eq(r.u.rsp_QUERY_GID.gid[0], 0xfe);
	cr_assert_eq(r.u.rsp_QUERY_GID.gid[8], 0x00, "EUI-64: universal/local bit flipped");
	cr_assert_eq(r.u.rsp_QUERY_GID.gid[11], 0xff);
	cr_assert_eq(r.u.rsp_QUERY_GID.gid_type, IBV_GID_TYPE_ROCE_V2);
	m.u.req_QUERY_GID.index = 1;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), 0);
	cr_assert_eq(r.u.rsp_QUERY_GID.gid[10], 0xff);
	cr_assert_eq(r.u.rsp_QUERY_GID.gid[12], 198);
	cr_assert_eq(r.u.rsp_QUERY_GID.gid[13], 18);
	m.u.req_QUERY_GID.index = 2;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), ENODATA, "empty slot");
	m.u.req_QUERY_GID.index = 1000;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), EINVAL);

	req(&m, IPC_OP_QUERY_PKEY);
	m.u.req_QUERY_PKEY.port = 1;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), 0);
	cr_assert_eq(r.u.rsp_QUERY_PKEY.pkey, 0xffff);
	m.u.req_QUERY_PKEY.index = 1;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), EINVAL);
	client_close(&a);
}

Test(ctl, another_connection_cannot_name_my_objects)
{
	struct client a, b;
	struct ipc_create_qp_rsp qa;
	struct ipc_msg m, r;
	uint32_t pd, cq, mr;

	client_open(&a, true);
	client_open(&b, true);
	pd = alloc_pd(&a);
	cq = create_cq(&a, 8, IPC_HANDLE_NONE);
	cr_assert_eq(create_qp(&a, pd, cq, IBV_QPT_RC, &qa), 0);
	req(&m, IPC_OP_REG_MR);
	m.u.req_REG_MR.pd = pd;
	m.u.req_REG_MR.addr = 0x10000;
	m.u.req_REG_MR.length = 4096;
	m.u.req_REG_MR.access = IBV_ACCESS_LOCAL_WRITE;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), 0);
	mr = r.u.rsp_REG_MR.handle;

	/* b uses a's handles: every one is unknown to b. */
	cr_assert_eq(destroy(&b, IPC_OP_DEALLOC_PD, pd), EINVAL);
	cr_assert_eq(destroy(&b, IPC_OP_DESTROY_CQ, cq), EINVAL);
	cr_assert_eq(destroy(&b, IPC_OP_DESTROY_QP, qa.handle), EINVAL);
	cr_assert_eq(destroy(&b, IPC_OP_DEREG_MR, mr), EINVAL);
	cr_assert_eq(create_qp(&b, pd, cq, IBV_QPT_RC, NULL), EINVAL);
	cr_assert_eq(create_qp(&b, alloc_pd(&b), cq, IBV_QPT_RC, NULL), EINVAL, "a's CQ");
	struct ipc_qp_attr at = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	cr_assert_eq(modify_qp(&b, qa.handle, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
						      IBV_QP_ACCESS_FLAGS, &at), EINVAL);
	req(&m, IPC_OP_QUERY_QP);
	m.u.req_QUERY_QP.handle = qa.handle;
	cr_assert_eq(call(&b, &m, NULL, 0, &r, NULL), EINVAL);

	/* a's objects are untouched and still a's. */
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), 0);
	cr_assert_eq(r.u.rsp_QUERY_QP.attr.qp_state, IBV_QPS_RESET);
	cr_assert_eq(modify_qp(&a, qa.handle, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
						      IBV_QP_ACCESS_FLAGS, &at), 0);
	cr_assert_eq(destroy(&a, IPC_OP_DESTROY_QP, qa.handle), 0);
	cr_assert_eq(destroy(&a, IPC_OP_DEREG_MR, mr), 0);
	cr_assert_eq(destroy(&a, IPC_OP_DESTROY_CQ, cq), 0);
	cr_assert_eq(destroy(&a, IPC_OP_DEALLOC_PD, pd), 0);
	cr_assert_eq(ctl_conn_nobjects(a.c), 0);
	client_close(&a);
	client_close(&b);
}

Test(ctl, closing_a_connection_tears_down_everything)
{
	struct client a, b;
	struct ipc_create_qp_rsp qa;
	struct ipc_msg m, r;
	int fds_before = count_fds(), rfds[IPC_MAX_FDS], mfd;
	uint32_t pd, cq, ch, srq, bpd;
	char *buf;

	client_open(&b, true);
	bpd = alloc_pd(&b);
	client_open(&a, true);
	pd = alloc_pd(&a);
	req(&m, IPC_OP_CREATE_CHANNEL);
	cr_assert_eq(call(&a, &m, NULL, 0, &r, rfds), 0);
	close(rfds[0]); /* the daemon's end stays valid without a reader */
	ch = r.u.rsp_CREATE_CHANNEL.handle;
	cq = create_cq(&a, 32, ch);
	req(&m, IPC_OP_CREATE_SRQ);
	m.u.req_CREATE_SRQ.pd = pd;
	m.u.req_CREATE_SRQ.max_wr = 8;
	m.u.req_CREATE_SRQ.max_sge = 1;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), 0);
	srq = r.u.rsp_CREATE_SRQ.handle;
	cr_assert_eq(create_qp(&a, pd, cq, IBV_QPT_UD, &qa), 0);
	/* An MR backed by a sealed memfd, mapped by the control plane. */
	mfd = ipc_shm_create("mr", 8192);
	buf = ipc_shm_map(mfd, 8192, 0);
	strcpy(buf + 100, "payload");
	req(&m, IPC_OP_REG_MR);
	m.u.req_REG_MR.pd = pd;
	m.u.req_REG_MR.addr = (uintptr_t)buf + 100;
	m.u.req_REG_MR.length = 5000;
	m.u.req_REG_MR.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	cr_assert_eq(call(&a, &m, &mfd, 1, &r, NULL), 0);
	req(&m, IPC_OP_CREATE_AH);
	m.u.req_CREATE_AH.pd = pd;
	m.u.req_CREATE_AH.attr.is_global = 1;
	m.u.req_CREATE_AH.attr.port_num = 1;
	m.u.req_CREATE_AH.attr.sgid_index = 1;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), 0);

	/* In use: the control plane refuses to pull objects out from under users. */
	cr_assert_eq(destroy(&a, IPC_OP_DEALLOC_PD, pd), EBUSY);
	cr_assert_eq(destroy(&a, IPC_OP_DESTROY_CQ, cq), EBUSY);
	cr_assert_eq(destroy(&a, IPC_OP_DESTROY_CHANNEL, ch), EBUSY);
	(void)srq;

	cr_assert_eq(ctl_conn_nobjects(a.c), 7, "PD, channel, CQ, SRQ, QP, MR, AH");
	cr_assert_eq(ctl_nobjects(ctl), 8);
	ctl_conn_close(a.c); /* as if the process crashed */
	a.c = NULL;
	cr_assert_eq(ctl_nobjects(ctl), 1, "only b's PD is left");
	cr_assert_eq(destroy(&b, IPC_OP_DEALLOC_PD, bpd), 0);
	client_close(&a);
	client_close(&b);
	munmap(buf, 8192);
	close(mfd);
	cr_assert_eq(count_fds(), fds_before, "every descriptor (eventfd, memfds, sockets) closed");
}

Test(ctl, qpns_and_keys_are_device_wide)
{
	struct client a, b;
	struct ipc_create_qp_rsp qa, qb;
	struct ipc_msg m, r;
	uint32_t ka, kb;

	client_open(&a, true);
	client_open(&b, true);
	uint32_t pa = alloc_pd(&a), pb = alloc_pd(&b);
	uint32_t ca = create_cq(&a, 4, 0), cb = create_cq(&b, 4, 0);

	cr_assert_eq(create_qp(&a, pa, ca, IBV_QPT_RC, &qa), 0);
	cr_assert_eq(create_qp(&b, pb, cb, IBV_QPT_RC, &qb), 0);
	cr_assert_neq(qa.qpn, qb.qpn);
	cr_assert_geq(qa.qpn, 2, "QPN 0 and 1 are reserved");
	req(&m, IPC_OP_REG_MR);
	m.u.req_REG_MR.pd = pa;
	m.u.req_REG_MR.addr = 4096;
	m.u.req_REG_MR.length = 1;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), 0);
	ka = r.u.rsp_REG_MR.lkey;
	m.u.req_REG_MR.pd = pb;
	cr_assert_eq(call(&b, &m, NULL, 0, &r, NULL), 0);
	kb = r.u.rsp_REG_MR.lkey;
	cr_assert_neq(ka, kb);

	/* A freed QPN is not handed out again at once; a stale handle stays dead. */
	cr_assert_eq(destroy(&a, IPC_OP_DESTROY_QP, qa.handle), 0);
	cr_assert_eq(destroy(&a, IPC_OP_DESTROY_QP, qa.handle), EINVAL);
	struct ipc_create_qp_rsp q2;

	cr_assert_eq(create_qp(&a, pa, ca, IBV_QPT_RC, &q2), 0);
	cr_assert_neq(q2.qpn, qa.qpn);
	cr_assert_neq(q2.handle, qa.handle);
	client_close(&a);
	client_close(&b);
	cr_assert_eq(ctl_nobjects(ctl), 0);
}

/*
 * Every errno expected here is the one Linux rxe answered in the rxe-peer
 * oracle (modify_qp_rxe.tsv, test/qp/test_qp_oracle.c), e.g. probes 35
 * (QKEY on RC), 3564 (port 2), 3681 (no GRH), 3683 (empty GID slot), 3623
 * (path_mtu 6), 948 (CUR_STATE on ERR -> RESET).
 */
Test(ctl, qp_state_machine_like_linux)
{
	struct client a;
	struct ipc_create_qp_rsp q;
	struct ipc_qp_attr at;
	struct ipc_msg m, r;
	const uint32_t init_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
	const uint32_t rtr_mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	const uint32_t rts_mask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				  IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;

	client_open(&a, true);
	uint32_t pd = alloc_pd(&a), cq = create_cq(&a, 4, 0);

	cr_assert_eq(create_qp(&a, pd, cq, IBV_QPT_RC, &q), 0);
	cr_assert_eq(q.cap.max_send_wr, 31,
		     "2^k - 1 >= 16 (lib/qp qp_sem_create); Linux rxe's query read 31 for 16 "
		     "(rxe-peer oracle, device_rxe.txt create std)");
	cr_assert_eq(q.sq.entries, 32);
	cr_assert_eq(q.sq.stride, sizeof(struct sq_wqe));
	cr_assert_eq(q.cap.max_recv_sge, 2);
	cr_assert_eq(q.rq.stride, 64, "two receive SGEs: one line a slot (wqe.h rq_wqe_stride())");
	cr_assert_geq(q.rq.offset, q.sq.offset + q.sq.entries * sizeof(struct sq_wqe));
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_RTR;
	cr_assert_eq(modify_qp(&a, q.handle, IBV_QP_STATE, &at), EINVAL, "RESET->RTR");
	at.qp_state = IBV_QPS_INIT;
	at.port_num = 1;
	cr_assert_eq(modify_qp(&a, q.handle, IBV_QP_STATE | IBV_QP_PORT, &at), EINVAL,
		     "missing required attributes");
	cr_assert_eq(modify_qp(&a, q.handle, init_mask | IBV_QP_QKEY, &at), EINVAL,
		     "QKEY is not an RC attribute");
	at.port_num = 2;
	cr_assert_eq(modify_qp(&a, q.handle, init_mask, &at), EINVAL, "bad port");
	at.port_num = 1;
	at.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	cr_assert_eq(modify_qp(&a, q.handle, init_mask, &at), 0);

	at.qp_state = IBV_QPS_RTR;
	at.path_mtu = IBV_MTU_1024;
	at.dest_qp_num = 0x123;
	at.rq_psn = 0x42;
	at.max_dest_rd_atomic = 1;
	at.min_rnr_timer = 12;
	at.ah_attr.port_num = 1;
	at.ah_attr.sgid_index = 1;
	cr_assert_eq(modify_qp(&a, q.handle, rtr_mask, &at), EINVAL, "RoCE needs a GRH");
	at.ah_attr.is_global = 1;
	at.ah_attr.sgid_index = 5;
	cr_assert_eq(modify_qp(&a, q.handle, rtr_mask, &at), ENODATA,
		     "empty source GID slot (lib/qp; Linux rxe answered ENODATA: rxe-peer "
		     "oracle probes 3683, 3715)");
	at.ah_attr.sgid_index = 1;
	at.ah_attr.hop_limit = 64;
	cr_assert_eq(modify_qp(&a, q.handle, rtr_mask, &at), EINVAL, "zero destination GID");
	at.ah_attr.dgid[10] = 0xff; /* ::ffff:198.18.0.2, an IPv4 peer like our GID 1 */
	at.ah_attr.dgid[11] = 0xff;
	at.ah_attr.dgid[12] = 198;
	at.ah_attr.dgid[13] = 18;
	at.ah_attr.dgid[15] = 2;
	at.path_mtu = 6;
	cr_assert_eq(modify_qp(&a, q.handle, rtr_mask, &at), EINVAL, "MTU above the port's");
	at.path_mtu = IBV_MTU_1024;
	cr_assert_eq(modify_qp(&a, q.handle, rtr_mask, &at), 0);

	at.qp_state = IBV_QPS_RTS;
	at.sq_psn = 0x77;
	at.timeout = 14;
	at.retry_cnt = 7;
	at.rnr_retry = 7;
	at.max_rd_atomic = 1;
	cr_assert_eq(modify_qp(&a, q.handle, rts_mask, &at), 0);

	req(&m, IPC_OP_QUERY_QP);
	m.u.req_QUERY_QP.handle = q.handle;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), 0);
	cr_assert_eq(r.u.rsp_QUERY_QP.attr.qp_state, IBV_QPS_RTS);
	cr_assert_eq(r.u.rsp_QUERY_QP.attr.dest_qp_num, 0x123);
	cr_assert_eq(r.u.rsp_QUERY_QP.attr.sq_psn, 0x77);
	cr_assert_eq(r.u.rsp_QUERY_QP.attr.rq_psn, 0x42);
	cr_assert_eq(r.u.rsp_QUERY_QP.attr.timeout, 14);
	cr_assert_eq(r.u.rsp_QUERY_QP.attr.ah_attr.hop_limit, 64);
	cr_assert_eq(r.u.rsp_QUERY_QP.attr.qp_access_flags, IBV_ACCESS_REMOTE_WRITE);
	cr_assert_eq(r.u.rsp_QUERY_QP.attr.cap.max_send_sge, 2);

	/* Any state -> ERR -> RESET; CUR_STATE only from RTR/RTS/SQD/SQE. */
	at.qp_state = IBV_QPS_ERR;
	cr_assert_eq(modify_qp(&a, q.handle, IBV_QP_STATE, &at), 0);
	at.qp_state = IBV_QPS_RESET;
	at.cur_qp_state = IBV_QPS_ERR;
	cr_assert_eq(modify_qp(&a, q.handle, IBV_QP_STATE | IBV_QP_CUR_STATE, &at), EINVAL);
	cr_assert_eq(modify_qp(&a, q.handle, IBV_QP_STATE, &at), 0);
	client_close(&a);
}

/* One request of code @p op (zeroed body, no descriptors) through ctl_conn_handle(); its status. */
static int raw_status(struct client *cl, uint32_t op)
{
	const struct ipc_op_desc *d = ipc_op_desc(op);
	struct ipc_msg m, r;
	int rfds[IPC_MAX_FDS];
	unsigned int rn = 1;

	memset(&m, 0, sizeof(m));
	ipc_req_init(&m, (enum ipc_op)op, 1);
	cr_assert_eq(ctl_conn_handle(cl->c, &m, NULL, 0, &r, rfds, &rn), 0, "op %u", op);
	cr_assert_eq(r.hdr.op, m.hdr.op);
	cr_assert_eq(r.hdr.seq, 1u);
	cr_assert_eq(r.hdr.len, sizeof(r.hdr) + (d ? d->rsp_size : 0), "op %u", op);
	cr_assert_eq(rn, 0u, "op %u: no descriptors", op);
	return r.hdr.status;
}

/*
 * The dispatch table is IPC_OPS: every op listed there has a handler, no
 * other code has one, and a code outside it is answered ENODEV before
 * OPEN_DEVICE and EOPNOTSUPP after (as ipc_recv() answers it -EOPNOTSUPP).
 */
Test(ctl, every_ipc_op_has_a_handler_and_no_other)
{
	static const uint32_t listed[] = {
#define LISTED(sym, val, rq, rs, rqfd, rsfd) IPC_OP_##sym,
		IPC_OPS(LISTED)
#undef LISTED
	};
	const size_t nlisted = sizeof(listed) / sizeof(listed[0]);
	struct client closed, opened;
	size_t handled = 0, outside = 0;

	for (size_t i = 0; i < nlisted; i++)
		cr_assert(ctl_op_handled(listed[i]), "%s has no handler", ipc_op_name(listed[i]));
	for (uint32_t op = 0; op <= UINT16_MAX; op++) {
		cr_assert_eq(ctl_op_handled(op), ipc_op_desc(op) != NULL, "op %u", op);
		handled += ctl_op_handled(op);
	}
	cr_assert_eq(handled, nlisted);

	client_open(&closed, false);
	client_open(&opened, true);
	for (uint32_t op = 0; op <= UINT16_MAX; op++) {
		if (ipc_op_desc(op) != NULL || (op > IPC_OP_MAX && op != UINT16_MAX))
			continue;
		cr_assert_eq(raw_status(&closed, op), ENODEV, "op %u before OPEN_DEVICE", op);
		cr_assert_eq(raw_status(&opened, op), EOPNOTSUPP, "op %u", op);
		outside++;
	}
	/* 0, the gaps (8, 9) and IPC_OP_MAX at least, and the largest code. */
	cr_assert_geq(outside, 5u);
	cr_assert_not(ctl_op_handled(IPC_OP_INVALID));
	cr_assert_not(ctl_op_handled(IPC_OP_MAX));
	/* The connection still serves a listed op afterwards. */
	cr_assert_eq(raw_status(&closed, IPC_OP_DEVICE_LIST), 0);
	client_close(&closed);
	client_close(&opened);
}

Test(ctl, bad_requests_get_clear_errors)
{
	struct client a;
	struct ipc_msg m, r;
	int fd;

	client_open(&a, true);
	uint32_t pd = alloc_pd(&a);

	cr_assert_eq(destroy(&a, IPC_OP_DEALLOC_PD, 0), EINVAL, "handle 0 is 'none'");
	cr_assert_eq(destroy(&a, IPC_OP_DEALLOC_PD, 0xdeadbeef), EINVAL);
	cr_assert_eq(destroy(&a, IPC_OP_DESTROY_CQ, pd), EINVAL, "a PD handle is not a CQ");

	req(&m, IPC_OP_CREATE_CQ);
	m.u.req_CREATE_CQ.cqe = 0;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), EINVAL);
	m.u.req_CREATE_CQ.cqe = 1u << 30;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), EINVAL);
	m.u.req_CREATE_CQ.cqe = 4;
	m.u.req_CREATE_CQ.comp_vector = 3;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), EINVAL);
	m.u.req_CREATE_CQ.comp_vector = 0;
	m.u.req_CREATE_CQ.channel = 12345;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), EINVAL);

	uint32_t cq = create_cq(&a, 4, 0);

	cr_assert_eq(create_qp(&a, pd, cq, IBV_QPT_RAW_PACKET, NULL), EOPNOTSUPP);
	cr_assert_eq(create_qp(&a, pd, cq, IBV_QPT_DRIVER, NULL), EOPNOTSUPP);
	req(&m, IPC_OP_CREATE_QP);
	m.u.req_CREATE_QP.pd = pd;
	m.u.req_CREATE_QP.send_cq = cq;
	m.u.req_CREATE_QP.recv_cq = cq;
	m.u.req_CREATE_QP.qp_type = IBV_QPT_RC;
	m.u.req_CREATE_QP.cap.max_send_wr = 1u << 20;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), EINVAL, "queue too deep");
	m.u.req_CREATE_QP.cap.max_send_wr = 4;
	m.u.req_CREATE_QP.cap.max_recv_sge = 1000;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), EINVAL, "too many SGEs");

	req(&m, IPC_OP_REG_MR);
	m.u.req_REG_MR.pd = pd;
	m.u.req_REG_MR.addr = 4096;
	m.u.req_REG_MR.length = 4096;
	m.u.req_REG_MR.access = IBV_ACCESS_REMOTE_WRITE;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), EINVAL, "remote write needs local write");
	m.u.req_REG_MR.access = 1u << 12;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), EINVAL, "unknown access bit");
	m.u.req_REG_MR.access = IBV_ACCESS_LOCAL_WRITE;
	m.u.req_REG_MR.length = 0;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), EINVAL, "empty MR");
	m.u.req_REG_MR.length = 4096;
	fd = memfd_create("unsealed", MFD_CLOEXEC);
	cr_assert_eq(ftruncate(fd, 4096), 0);
	cr_assert_eq(call(&a, &m, &fd, 1, &r, NULL), EPERM, "a memfd the client could shrink");
	fd = ipc_shm_create("small", 4096);
	m.u.req_REG_MR.length = 3 * 4096;
	cr_assert_eq(call(&a, &m, &fd, 1, &r, NULL), EINVAL, "memfd smaller than the MR");


	req(&m, IPC_OP_CREATE_AH);
	m.u.req_CREATE_AH.pd = pd;
	m.u.req_CREATE_AH.attr.port_num = 1;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), EINVAL, "RoCE AH without GRH");

	req(&m, IPC_OP_MODIFY_SRQ);
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), EINVAL);
	cr_assert_eq(ctl_conn_nobjects(a.c), 2, "failed requests leave nothing behind");
	client_close(&a);
}

/* An address handle of a port on a VLAN carries the port's tag; an untagged port's has none. */
Test(ctl, an_address_handle_carries_the_ports_vlan)
{
	struct ctl_config cfg = base_cfg();
	struct client a;
	struct ipc_msg m, r;
	uint32_t pd;

	for (uint16_t vlan = 0; vlan <= 100; vlan += 100) {
		teardown();
		cfg.dev[0].port[0].vlan = vlan;
		ctl = ctl_create(&cfg);
		cr_assert_not_null(ctl);
		client_open(&a, true);
		pd = alloc_pd(&a);
		req(&m, IPC_OP_CREATE_AH);
		m.u.req_CREATE_AH.pd = pd;
		m.u.req_CREATE_AH.attr.is_global = 1;
		m.u.req_CREATE_AH.attr.port_num = 1;
		m.u.req_CREATE_AH.attr.sgid_index = 1;
		m.u.req_CREATE_AH.attr.traffic_class = 26 << 2;
		cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), 0);
		cr_expect_eq(r.u.rsp_CREATE_AH.av.vlan_present, vlan != 0, "VLAN %u", vlan);
		cr_expect_eq(r.u.rsp_CREATE_AH.av.vlan_tci, vlan, "VID, priority 0 (the engine's pcp)");
		cr_expect_eq(r.u.rsp_CREATE_AH.av.traffic_class, 26 << 2, "the AH's DSCP stays");
		client_close(&a);
	}
}

Test(ctl, limits_are_enforced)
{
	struct ctl_config cfg = base_cfg();
	struct ctl *small;
	struct client a, b, c;
	struct ipc_msg m, r;

	teardown();
	cfg.limits.max_pd = 2;
	cfg.limits.max_conns = 2;
	small = ctl_create(&cfg);
	cr_assert_not_null(small);
	ctl = small;
	client_open(&a, true);
	client_open(&b, true);
	cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, c.sp), 0);
	cr_assert_null(ctl_conn_open(ctl, c.sp[0]));
	cr_assert_eq(errno, EMFILE);
	close(c.sp[0]);
	close(c.sp[1]);
	alloc_pd(&a);
	alloc_pd(&b);
	req(&m, IPC_OP_ALLOC_PD);
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), ENOMEM, "table full: never grows");
	client_close(&a);
	cr_assert_eq(call(&b, &m, NULL, 0, &r, NULL), 0, "a's slot came back");
	client_close(&b);

	cfg.ndevices = 0;
	cr_assert_null(ctl_create(&cfg));
	cr_assert_eq(errno, EINVAL);
}

/* ---- dataplane hand-over ---- */

struct fake_dp {
	int mr, cq, qp, srq, ah; /* live objects */
	int qp_modifies;
	uint32_t last_state;
	uint32_t last_fx;
	bool fail_qp_create;
	int fail_qp_modify; /* errno the next modify returns, 0: none */
	void *mr_local;
};

static int dp_mr_create(void *dp, struct ctl_mr_info *mr)
{
	((struct fake_dp *)dp)->mr++;
	((struct fake_dp *)dp)->mr_local = mr->local;
	mr->lkey = mr->rkey = 0xabc00 | (mr->lkey & 0xff); /* keys of the dataplane's own table */
	return 0;
}
static void dp_mr_destroy(void *dp, const struct ctl_mr_info *mr) { (void)mr; ((struct fake_dp *)dp)->mr--; }
static int dp_cq_create(void *dp, const struct ctl_cq_info *cq) { (void)cq; ((struct fake_dp *)dp)->cq++; return 0; }
static void dp_cq_destroy(void *dp, const struct ctl_cq_info *cq) { (void)cq; ((struct fake_dp *)dp)->cq--; }
static int dp_qp_create(void *dp, const struct ctl_qp_info *qp)
{
	struct fake_dp *f = dp;

	(void)qp;
	if (f->fail_qp_create)
		return EAGAIN;
	f->qp++;
	return 0;
}
static int dp_qp_modify(void *dp, const struct ctl_qp_info *qp, const struct qp_sem *next,
			const struct qp_sem_effects *fx)
{
	struct fake_dp *f = dp;
	int rc = f->fail_qp_modify;

	cr_assert_eq(qp->sem->attr.qp_state, fx->old_state, "the old attributes during the call");
	cr_assert_eq(next->attr.qp_state, fx->new_state);
	if (rc != 0) {
		f->fail_qp_modify = 0;
		return rc;
	}
	f->qp_modifies++;
	f->last_state = next->attr.qp_state;
	f->last_fx = fx->flags;
	return 0;
}
static void dp_qp_destroy(void *dp, const struct ctl_qp_info *qp) { (void)qp; ((struct fake_dp *)dp)->qp--; }

Test(ctl, dataplane_sees_every_object_and_teardown)
{
	static const struct ctl_dataplane_ops ops = {
		.mr_create = dp_mr_create, .mr_destroy = dp_mr_destroy,
		.cq_create = dp_cq_create, .cq_destroy = dp_cq_destroy,
		.qp_create = dp_qp_create, .qp_modify = dp_qp_modify, .qp_destroy = dp_qp_destroy,
	};
	struct fake_dp f = { 0 };
	struct ctl_config cfg = base_cfg();
	struct client a;
	struct ipc_create_qp_rsp q;
	struct ipc_msg m, r;
	int mfd;
	char *buf;

	teardown();
	cfg.dp_ops = &ops;
	cfg.dp = &f;
	ctl = ctl_create(&cfg);
	client_open(&a, true);
	uint32_t pd = alloc_pd(&a), cq = create_cq(&a, 4, 0);

	cr_assert_eq(f.cq, 1);
	cr_assert_eq(create_qp(&a, pd, cq, IBV_QPT_UC, &q), 0);
	cr_assert_eq(f.qp, 1);
	struct ipc_qp_attr at = { .qp_state = IBV_QPS_INIT, .port_num = 1 };

	cr_assert_eq(modify_qp(&a, q.handle, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
						     IBV_QP_ACCESS_FLAGS, &at), 0);
	cr_assert_eq(f.qp_modifies, 1);
	cr_assert_eq(f.last_state, IBV_QPS_INIT);
	/* The dataplane cannot take it (out of memory): ENOMEM, and nothing changed. */
	struct ipc_qp_attr wr = { .qp_state = IBV_QPS_INIT, .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };

	f.fail_qp_modify = ENOMEM;
	cr_assert_eq(modify_qp(&a, q.handle, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS, &wr), ENOMEM);
	req(&m, IPC_OP_QUERY_QP);
	m.u.req_QUERY_QP.handle = q.handle;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), 0);
	cr_assert_eq(r.u.rsp_QUERY_QP.attr.qp_state, IBV_QPS_INIT);
	cr_assert_eq(r.u.rsp_QUERY_QP.attr.qp_access_flags, 0, "the refused access flags are not kept");
	cr_assert_eq(modify_qp(&a, q.handle, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS, &wr), 0);
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), 0);
	cr_assert_eq(r.u.rsp_QUERY_QP.attr.qp_access_flags, IBV_ACCESS_REMOTE_WRITE);
	cr_assert_eq(f.qp_modifies, 2);
	at.qp_state = IBV_QPS_RTS;
	cr_assert_eq(modify_qp(&a, q.handle, IBV_QP_STATE, &at), EINVAL);
	cr_assert_eq(f.qp_modifies, 2, "a refused modify never reaches the dataplane");
	at.qp_state = IBV_QPS_RESET;
	cr_assert_eq(modify_qp(&a, q.handle, IBV_QP_STATE, &at), 0);
	cr_assert(f.last_fx & QP_SEM_FX_RESET, "the dataplane is told to drop the queues");
	at.qp_state = IBV_QPS_INIT;
	cr_assert_eq(modify_qp(&a, q.handle, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
						     IBV_QP_ACCESS_FLAGS, &at), 0);
	at.qp_state = IBV_QPS_ERR;
	cr_assert_eq(modify_qp(&a, q.handle, IBV_QP_STATE, &at), 0);
	cr_assert(f.last_fx & QP_SEM_FX_FLUSH, "and to flush on ERR");

	mfd = ipc_shm_create("mr", 4096);
	buf = ipc_shm_map(mfd, 4096, 0);
	strcpy(buf + 16, "seen by the daemon");
	req(&m, IPC_OP_REG_MR);
	m.u.req_REG_MR.pd = pd;
	m.u.req_REG_MR.addr = (uintptr_t)buf + 16;
	m.u.req_REG_MR.length = 64;
	cr_assert_eq(call(&a, &m, &mfd, 1, &r, NULL), 0);
	cr_assert_eq(f.mr, 1);
	cr_assert_eq(r.u.rsp_REG_MR.lkey >> 8, 0xabc, "the dataplane's keys reach the application");
	cr_assert_not_null(f.mr_local);
	cr_assert_str_eq(f.mr_local, "seen by the daemon", "the daemon reaches the app's bytes");

	f.fail_qp_create = true;
	cr_assert_eq(create_qp(&a, pd, cq, IBV_QPT_RC, NULL), EAGAIN);
	cr_assert_eq(ctl_conn_nobjects(a.c), 4, "a refused create is undone");

	client_close(&a);
	cr_assert_eq(f.qp, 0);
	cr_assert_eq(f.cq, 0);
	cr_assert_eq(f.mr, 0);
	munmap(buf, 4096);
	close(mfd);
}

Test(ctl, async_events_reach_the_owner_and_count_for_destroy)
{
	struct client a;
	struct ipc_create_qp_rsp q;
	struct ipc_async_event ev;

	client_open(&a, true);
	uint32_t pd = alloc_pd(&a), cq = create_cq(&a, 4, 0);
	struct ipc_msg m, r;

	cr_assert_eq(create_qp(&a, pd, cq, IBV_QPT_RC, &q), 0);
	cr_assert_eq(ctl_raise_event(ctl, IPC_OBJ_QP, q.qpn, IBV_EVENT_QP_FATAL), 0);
	cr_assert_eq(ctl_raise_event(ctl, IPC_OBJ_QP, q.qpn + 1000, IBV_EVENT_QP_FATAL), -ENOENT);
	cr_assert_eq(recv(a.async_fd, &ev, sizeof(ev), MSG_DONTWAIT), (ssize_t)sizeof(ev));
	cr_assert_eq(ev.type, IBV_EVENT_QP_FATAL);
	cr_assert_eq(ev.kind, IPC_OBJ_QP);
	ctl_raise_port_event(ctl, 0, 1, IBV_EVENT_PORT_ACTIVE);
	cr_assert_eq(recv(a.async_fd, &ev, sizeof(ev), MSG_DONTWAIT), (ssize_t)sizeof(ev));
	cr_assert_eq(ev.type, IBV_EVENT_PORT_ACTIVE);
	cr_assert_eq(ev.user_handle, 1);
	req(&m, IPC_OP_DESTROY_QP);
	m.u.req_DESTROY_QP.handle = q.handle;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), 0);
	cr_assert_eq(r.u.rsp_DESTROY_QP.events_reported, 1);
	client_close(&a);
}

/* A link change: every open connection of the device hears it, and queries follow. */
Test(ctl, port_attr_changes_reach_every_connection_and_queries)
{
	struct client a, b, idle;
	struct ipc_async_event ev;
	struct ipc_port_attr down, up;
	struct ipc_msg m, r;

	client_open(&a, true);
	client_open(&b, true);
	client_open(&idle, false); /* no device open: hears nothing */
	req(&m, IPC_OP_QUERY_PORT);
	m.u.req_QUERY_PORT.port = 1;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), 0);
	down = r.u.rsp_QUERY_PORT.attr;
	down.state = IBV_PORT_DOWN;
	down.phys_state = 3;
	down.active_speed = 1;
	down.active_width = 1;
	up = down;
	up.state = IBV_PORT_ACTIVE;
	up.phys_state = 5;
	up.active_speed = 32;
	up.active_width = 2;
	up.active_mtu = IBV_MTU_4096;

	cr_assert_eq(ctl_set_port_attr(ctl, 0, 1, &down), IBV_EVENT_PORT_ERR);
	cr_assert_eq(ctl_set_port_attr(ctl, 0, 1, &down), 0, "no crossing, no event");
	cr_assert_eq(call(&b, &m, NULL, 0, &r, NULL), 0);
	cr_assert_eq(r.u.rsp_QUERY_PORT.attr.state, IBV_PORT_DOWN);
	cr_assert_eq(r.u.rsp_QUERY_PORT.attr.phys_state, 3);
	cr_assert_eq(ctl_set_port_attr(ctl, 0, 1, &up), IBV_EVENT_PORT_ACTIVE);
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), 0);
	cr_assert_eq(r.u.rsp_QUERY_PORT.attr.state, IBV_PORT_ACTIVE);
	cr_assert_eq(r.u.rsp_QUERY_PORT.attr.active_speed, 32);
	cr_assert_eq(r.u.rsp_QUERY_PORT.attr.active_mtu, IBV_MTU_4096);
	for (int k = 0; k < 2; k++) {
		int fd = k == 0 ? a.async_fd : b.async_fd;

		cr_assert_eq(recv(fd, &ev, sizeof(ev), MSG_DONTWAIT), (ssize_t)sizeof(ev));
		cr_assert_eq(ev.type, IBV_EVENT_PORT_ERR);
		cr_assert_eq(ev.kind, IPC_OBJ_PORT);
		cr_assert_eq(ev.user_handle, 1);
		cr_assert_eq(recv(fd, &ev, sizeof(ev), MSG_DONTWAIT), (ssize_t)sizeof(ev));
		cr_assert_eq(ev.type, IBV_EVENT_PORT_ACTIVE);
		cr_assert_eq(recv(fd, &ev, sizeof(ev), MSG_DONTWAIT), -1, "one event per crossing");
	}
	cr_assert(idle.async_fd < 0 || recv(idle.async_fd, &ev, sizeof(ev), MSG_DONTWAIT) < 0);
	cr_assert_eq(ctl_set_port_attr(ctl, 0, 2, &up), -EINVAL);
	cr_assert_eq(ctl_set_port_attr(ctl, 0, 0, &up), -EINVAL);
	cr_assert_eq(ctl_set_port_attr(ctl, 1, 1, &up), -EINVAL);
	client_close(&idle);
	client_close(&b);
	client_close(&a);
}

Test(ctl, cq_resize_keeps_unread_completions)
{
	struct client a;
	struct ipc_msg m, r;
	int rfds[IPC_MAX_FDS];
	struct spsc_ring *ring;
	uint8_t *shm;

	client_open(&a, true);
	req(&m, IPC_OP_CREATE_CQ);
	m.u.req_CREATE_CQ.cqe = 4;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, rfds), 0);
	cr_assert_eq(r.u.rsp_CREATE_CQ.ring.stride, sizeof(struct cqe));
	shm = ipc_shm_map(rfds[0], r.u.rsp_CREATE_CQ.shm_size, 0);
	ring = (struct spsc_ring *)(shm + r.u.rsp_CREATE_CQ.ring.offset);
	cr_assert_eq(ring->size, r.u.rsp_CREATE_CQ.ring.entries);
	/* Pretend the daemon produced three CQEs and the app read one. */
	for (uint64_t i = 0; i < 3; i++)
		((struct cqe *)spsc_ring_prod_slot(ring, (uint32_t)i))->wr_id = 100 + i;
	spsc_ring_publish(ring, 3);
	spsc_ring_release(ring, 1);
	uint32_t h = r.u.rsp_CREATE_CQ.handle;

	munmap(shm, r.u.rsp_CREATE_CQ.shm_size);
	close(rfds[0]);
	req(&m, IPC_OP_RESIZE_CQ);
	m.u.req_RESIZE_CQ.handle = h;
	m.u.req_RESIZE_CQ.cqe = 1;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), EINVAL, "two CQEs do not fit in one");
	m.u.req_RESIZE_CQ.cqe = 100;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, rfds), 0);
	cr_assert_geq(r.u.rsp_RESIZE_CQ.cqe, 100);
	cr_assert_eq(r.u.rsp_RESIZE_CQ.handle, h);
	shm = ipc_shm_map(rfds[0], r.u.rsp_RESIZE_CQ.shm_size, 0);
	ring = (struct spsc_ring *)(shm + r.u.rsp_RESIZE_CQ.ring.offset);
	cr_assert_eq(spsc_ring_count(ring), 2);
	cr_assert_eq(((struct cqe *)spsc_ring_cons_slot(ring, 0))->wr_id, 101);
	cr_assert_eq(((struct cqe *)spsc_ring_cons_slot(ring, 1))->wr_id, 102);
	munmap(shm, r.u.rsp_RESIZE_CQ.shm_size);
	close(rfds[0]);
	client_close(&a);
}

/* ---- the socket server ---- */

static void serve_until(struct ctl_server *srv, uint32_t nconns)
{
	for (int i = 0; i < 100 && ctl_server_nconns(srv) != nconns; i++)
		ctl_server_poll(srv, 10);
	cr_assert_eq(ctl_server_nconns(srv), nconns);
}

/*
 * A watched eventfd ends the server's wait (the daemon's workers wake the
 * control thread so): poll returns at once, counts it, and resets it.
 */
Test(ctl, a_watched_eventfd_ends_the_servers_wait_and_is_reset)
{
	char dir[] = "/tmp/ctl-test-XXXXXX", path[64];
	struct ctl_server *srv;
	struct timespec t0, t1;
	uint64_t one = 1, v;
	int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);

	cr_assert_geq(efd, 0);
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/roce.sock", dir);
	srv = ctl_server_create(ctl, path);
	cr_assert_not_null(srv);
	ctl_server_watch(srv, efd);
	cr_assert_eq(ctl_server_poll(srv, 0), 0, "nothing to do");
	cr_assert_eq(write(efd, &one, sizeof(one)), (ssize_t)sizeof(one));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_assert_eq(ctl_server_poll(srv, 60000), 1, "the eventfd is one event");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	cr_assert_lt(t1.tv_sec - t0.tv_sec, 30, "it did not wait the minute out");
	cr_assert_eq(read(efd, &v, sizeof(v)), -1, "the server reset it");
	cr_assert_eq(errno, EAGAIN);
	ctl_server_watch(srv, -1);
	cr_assert_eq(write(efd, &one, sizeof(one)), (ssize_t)sizeof(one));
	cr_assert_eq(ctl_server_poll(srv, 0), 0, "no longer watched");
	ctl_server_destroy(srv);
	close(efd);
	rmdir(dir);
}

Test(ctl, server_drops_a_client_that_breaks_framing)
{
	char dir[] = "/tmp/ctl-test-XXXXXX", path[64];
	struct ctl_server *srv;
	struct ipc_msg m, r;
	int fd, good;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/roce.sock", dir);
	srv = ctl_server_create(ctl, path);
	cr_assert_not_null(srv);
	fd = ipc_connect(path);
	good = ipc_connect(path);
	cr_assert_geq(fd, 0);
	serve_until(srv, 2);

	/* A well-formed request is answered. */
	ipc_req_init(&m, IPC_OP_OPEN_DEVICE, 9);
	memset(&m.u.req_OPEN_DEVICE, 0, sizeof(m.u.req_OPEN_DEVICE));
	strcpy(m.u.req_OPEN_DEVICE.name, "dpdk_roce0");
	cr_assert_eq(ipc_send(fd, &m, NULL, 0), 0);
	ipc_req_init(&m, IPC_OP_ALLOC_PD, 10);
	memset(&m.u.req_ALLOC_PD, 0, sizeof(m.u.req_ALLOC_PD));
	cr_assert_eq(ipc_send(fd, &m, NULL, 0), 0);
	for (int i = 0; i < 20 && ctl_nobjects(ctl) == 0; i++)
		ctl_server_poll(srv, 10);
	cr_assert_eq(ctl_nobjects(ctl), 1);

	/* Garbage: the connection is dropped and its PD torn down. */
	cr_assert_eq(send(fd, "garbage!", 8, 0), 8);
	serve_until(srv, 1);
	cr_assert_eq(ctl_nobjects(ctl), 0);
	struct pollfd p = { .fd = fd, .events = POLLIN };

	for (int i = 0; i < 2; i++) { /* two answers queued, then EOF */
		int fds[IPC_MAX_FDS];
		unsigned int n;

		cr_assert_gt(ipc_recv(fd, &r, fds, &n, IPC_RESPONSE), 0);
		for (unsigned int k = 0; k < n; k++)
			close(fds[k]);
	}
	cr_assert_eq(poll(&p, 1, 1000), 1);
	cr_assert_eq(recv(fd, &r, sizeof(r), 0), 0, "EOF");
	close(fd);

	/* The other client is unaffected; then the server goes and it sees EOF. */
	ipc_req_init(&m, IPC_OP_DEVICE_LIST, 1);
	m.u.req_DEVICE_LIST.reserved = 0;
	cr_assert_eq(ipc_send(good, &m, NULL, 0), 0);
	ctl_server_poll(srv, 100);
	{
		int fds[IPC_MAX_FDS];
		unsigned int n;

		cr_assert_gt(ipc_recv(good, &r, fds, &n, IPC_RESPONSE), 0);
		cr_assert_eq(r.u.rsp_DEVICE_LIST.count, 1);
	}
	ctl_server_destroy(srv);
	cr_assert_eq(access(path, F_OK), -1, "socket path removed");
	cr_assert_eq(recv(good, &r, sizeof(r), 0), 0, "EOF once the server is gone");
	close(good);
	rmdir(dir);
}


Test(ctl_placement, qps_sharing_a_cq_or_srq_share_an_lcore)
{
	struct ctl_config cfg = base_cfg();
	struct ipc_create_qp_rsp q[8];
	struct ipc_msg m, r;
	struct client a;

	cfg.limits.n_lcores = 3;
	ctl = ctl_create(&cfg);
	cr_assert_not_null(ctl);
	client_open(&a, true);
	uint32_t pd = alloc_pd(&a);
	uint32_t c1 = create_cq(&a, 8, 0), c2 = create_cq(&a, 8, 0), c3 = create_cq(&a, 8, 0);

	/* unbound CQs: each new QP goes to the least loaded lcore */
	cr_assert_eq(create_rc_qp(&a, pd, c1, c1, 0, &q[0]), 0);
	cr_assert_eq(create_rc_qp(&a, pd, c2, c2, 0, &q[1]), 0);
	cr_assert_eq(create_rc_qp(&a, pd, c3, c3, 0, &q[2]), 0);
	uint32_t l1 = q[0].qpn % 3, l2 = q[1].qpn % 3, l3 = q[2].qpn % 3;
	cr_assert(l1 != l2 && l2 != l3 && l1 != l3, "spread over the lcores");
	/* later QPs follow their CQs, several times over */
	for (int i = 3; i < 7; i++) {
		cr_assert_eq(create_rc_qp(&a, pd, c2, c2, 0, &q[i]), 0);
		cr_assert_eq(q[i].qpn % 3, l2, "QPN %u on the lcore of its CQ", q[i].qpn);
	}
	/* send CQ bound, receive CQ unbound: the QP (and the receive CQ) follow the send CQ */
	uint32_t c4 = create_cq(&a, 8, 0);
	cr_assert_eq(create_rc_qp(&a, pd, c1, c4, 0, &q[7]), 0);
	cr_assert_eq(q[7].qpn % 3, l1);
	/* CQs bound to different lcores cannot serve one QP */
	cr_assert_eq(create_rc_qp(&a, pd, c1, c2, 0, NULL), EINVAL);
	cr_assert_eq(create_rc_qp(&a, pd, c4, c3, 0, NULL), EINVAL);
	/* an SRQ binds too */
	req(&m, IPC_OP_CREATE_SRQ);
	m.u.req_CREATE_SRQ.pd = pd;
	m.u.req_CREATE_SRQ.max_wr = 8;
	m.u.req_CREATE_SRQ.max_sge = 1;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), 0);
	uint32_t srq = r.u.rsp_CREATE_SRQ.handle;
	struct ipc_create_qp_rsp s1;

	cr_assert_eq(create_rc_qp(&a, pd, c3, c3, srq, &s1), 0);
	cr_assert_eq(s1.qpn % 3, l3);
	cr_assert_eq(create_rc_qp(&a, pd, c2, c2, srq, NULL), EINVAL, "SRQ on another lcore");
	/* once its last QP is gone a CQ may move */
	cr_assert_eq(destroy(&a, IPC_OP_DESTROY_QP, q[0].handle), 0);
	cr_assert_eq(create_rc_qp(&a, pd, c1, c2, 0, NULL), EINVAL, "c1 still has q[7]");
	cr_assert_eq(destroy(&a, IPC_OP_DESTROY_QP, q[7].handle), 0);
	cr_assert_eq(create_rc_qp(&a, pd, c1, c2, 0, &q[0]), 0);
	cr_assert_eq(q[0].qpn % 3, l2);
	struct ctl_stats st;

	ctl_get_stats(ctl, &st);
	cr_assert_eq(st.conns, 1);
	cr_assert_eq(st.qp, 8);
	cr_assert_eq(st.cq, 4);
	cr_assert_eq(st.srq, 1);
	client_close(&a);
	ctl_get_stats(ctl, &st);
	cr_assert_eq(st.conns + st.qp + st.cq + st.srq + st.pd, 0);
	ctl_destroy(ctl);
	ctl = NULL;
}

/* ---- asynchronous dataplane answers (ctl_dp_defer / ctl_dp_done) ---- */

/*
 * A dataplane that answers later when asked to: each deferring callback
 * keeps its token (a destroy: the last one) and counts the live objects
 * only once the answer was given (answer()).
 */
struct async_dp {
	bool defer_qp_create, defer_qp_modify, defer_qp_destroy, defer_mr;
	uint64_t tok[4];
	unsigned int ntok;
	int qp, mr;             /* objects the dataplane holds, answered or not */
};
static struct async_dp adp;

static void adp_defer(void)
{
	uint64_t t = ctl_dp_defer(ctl);

	cr_assert_neq(t, CTL_DP_TOKEN_NONE, "a request's callback may defer");
	cr_assert_lt(adp.ntok, 4u);
	adp.tok[adp.ntok++] = t;
}
static int adp_qp_create(void *dp, const struct ctl_qp_info *qp)
{
	(void)dp;
	(void)qp;
	adp.qp++;
	if (adp.defer_qp_create)
		adp_defer();
	return 0;
}
static int adp_qp_modify(void *dp, const struct ctl_qp_info *qp, const struct qp_sem *next,
			 const struct qp_sem_effects *fx)
{
	(void)dp;
	(void)qp;
	(void)next;
	(void)fx;
	if (adp.defer_qp_modify)
		adp_defer();
	return 0;
}
static void adp_qp_destroy(void *dp, const struct ctl_qp_info *qp)
{
	(void)dp;
	(void)qp;
	adp.qp--;
	if (adp.defer_qp_destroy)
		adp_defer();
}
static int adp_mr_create(void *dp, struct ctl_mr_info *mr)
{
	(void)dp;
	(void)mr;
	adp.mr++;
	if (adp.defer_mr)
		adp_defer();
	return 0;
}
static void adp_mr_destroy(void *dp, const struct ctl_mr_info *mr)
{
	(void)dp;
	(void)mr;
	adp.mr--;
	if (adp.defer_mr)
		adp_defer();
}

static const struct ctl_dataplane_ops adp_ops = {
	.mr_create = adp_mr_create, .mr_destroy = adp_mr_destroy,
	.qp_create = adp_qp_create, .qp_modify = adp_qp_modify, .qp_destroy = adp_qp_destroy,
};

static void async_setup(void)
{
	struct ctl_config cfg = base_cfg();

	memset(&adp, 0, sizeof(adp));
	cfg.dp_ops = &adp_ops;
	cfg.dp = &adp;
	ctl = ctl_create(&cfg);
	cr_assert_not_null(ctl);
}

/* The dataplane answers its oldest deferred call. */
static void answer(int rc)
{
	uint64_t t;

	cr_assert_gt(adp.ntok, 0u, "a call is pending");
	t = adp.tok[0];
	memmove(adp.tok, adp.tok + 1, --adp.ntok * sizeof(adp.tok[0]));
	cr_assert_eq(ctl_dp_done(ctl, t, rc), 0);
	cr_assert_eq(ctl_dp_done(ctl, t, rc), -ENOENT, "an answer counts once");
}

/* Send @p m on @p cl; it must stay pending. */
static void call_pending(struct client *cl, struct ipc_msg *m)
{
	struct ipc_msg r;
	int rfds[IPC_MAX_FDS];
	unsigned int rn;

	cr_assert_eq(ctl_conn_handle(cl->c, m, NULL, 0, &r, rfds, &rn), CTL_PENDING);
	cr_assert(ctl_conn_pending(cl->c));
	cr_assert_not(ctl_conn_answer(cl->c, &r, rfds, &rn), "no answer before the dataplane's");
}

/* The answer of @p cl's pending request, once given: its status. */
static int take_answer(struct client *cl, struct ipc_msg *r)
{
	int rfds[IPC_MAX_FDS];
	unsigned int rn;

	cr_assert(ctl_conn_answer(cl->c, r, rfds, &rn), "the answer is there");
	cr_assert_not(ctl_conn_pending(cl->c));
	for (unsigned int i = 0; i < rn; i++)
		close(rfds[i]);
	if (r->hdr.status != 0)
		cr_assert_eq(rn, 0u);
	return r->hdr.status;
}

static uint32_t qp_state_of(struct client *cl, uint32_t qp)
{
	struct ipc_msg m, r;

	req(&m, IPC_OP_QUERY_QP);
	m.u.req_QUERY_QP.handle = qp;
	cr_assert_eq(call(cl, &m, NULL, 0, &r, NULL), 0);
	return r.u.rsp_QUERY_QP.attr.qp_state;
}

static void modify_req(struct ipc_msg *m, uint32_t qp, uint32_t state)
{
	req(m, IPC_OP_MODIFY_QP);
	m->u.req_MODIFY_QP.handle = qp;
	m->u.req_MODIFY_QP.mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
	m->u.req_MODIFY_QP.attr = (struct ipc_qp_attr){ .qp_state = state, .port_num = 1 };
}

TestSuite(ctl_async, .init = async_setup, .fini = teardown, .timeout = 20);

Test(ctl_async, one_pending_request_does_not_hold_other_clients)
{
	struct client a, b;
	struct ipc_create_qp_rsp qa, qb;
	struct ipc_msg m, r;
	int mfd = ipc_shm_create("mr", 4096);
	char *buf = ipc_shm_map(mfd, 4096, 0);

	client_open(&a, true);
	client_open(&b, true);
	uint32_t pda = alloc_pd(&a), cqa = create_cq(&a, 4, 0);

	cr_assert_eq(create_qp(&a, pda, cqa, IBV_QPT_RC, &qa), 0);
	/* a's modify waits for the dataplane (an lcore that does not answer) */
	adp.defer_qp_modify = true;
	modify_req(&m, qa.handle, IBV_QPS_INIT);
	call_pending(&a, &m);
	adp.defer_qp_modify = false;
	cr_assert_eq(ctl_dp_inflight(ctl), 1);
	/* a's next request is refused at once, never queued behind silently */
	req(&m, IPC_OP_ALLOC_PD);
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), EBUSY);

	/* b is served meanwhile: reg_mr and create_qp answer at once */
	uint32_t pdb = alloc_pd(&b), cqb = create_cq(&b, 4, 0);

	req(&m, IPC_OP_REG_MR);
	m.u.req_REG_MR.pd = pdb;
	m.u.req_REG_MR.addr = (uintptr_t)buf;
	m.u.req_REG_MR.length = 4096;
	cr_assert_eq(call(&b, &m, &mfd, 1, &r, NULL), 0);
	cr_assert_eq(create_qp(&b, pdb, cqb, IBV_QPT_RC, &qb), 0);
	cr_assert_eq(adp.mr, 1);
	cr_assert_eq(adp.qp, 2);
	/* the pending QP is busy: its state did not change, nobody may use it */
	cr_assert(ctl_conn_pending(a.c));

	/* a's answer arrives: its request completes, with the new state */
	answer(0);
	cr_assert_eq(take_answer(&a, &r), 0);
	cr_assert_eq(r.hdr.op, IPC_OP_MODIFY_QP);
	cr_assert_eq(r.u.rsp_MODIFY_QP.state, IBV_QPS_INIT);
	cr_assert_eq(qp_state_of(&a, qa.handle), IBV_QPS_INIT);
	cr_assert_eq(ctl_dp_inflight(ctl), 0);

	/* a refused deferred modify changes nothing */
	adp.defer_qp_modify = true;
	modify_req(&m, qa.handle, IBV_QPS_RESET);
	m.u.req_MODIFY_QP.mask = IBV_QP_STATE;
	call_pending(&a, &m);
	adp.defer_qp_modify = false;
	answer(ENOMEM);
	cr_assert_eq(take_answer(&a, &r), ENOMEM);
	cr_assert_eq(qp_state_of(&a, qa.handle), IBV_QPS_INIT);

	client_close(&a);
	client_close(&b);
	cr_assert_eq(ctl_nobjects(ctl), 0);
	cr_assert_eq(adp.qp + adp.mr, 0);
	munmap(buf, 4096);
	close(mfd);
}

Test(ctl_async, two_slow_calls_finish_each_with_its_own_answer)
{
	struct client a, b;
	struct ipc_create_qp_rsp qa;
	struct ipc_msg m, r;

	client_open(&a, true);
	client_open(&b, true);
	uint32_t pda = alloc_pd(&a), cqa = create_cq(&a, 4, 0);
	uint32_t pdb = alloc_pd(&b), cqb = create_cq(&b, 4, 0);

	cr_assert_eq(create_qp(&a, pda, cqa, IBV_QPT_RC, &qa), 0);
	adp.defer_qp_modify = true;
	modify_req(&m, qa.handle, IBV_QPS_INIT);
	call_pending(&a, &m);                  /* tok[0]: a's modify */
	adp.defer_qp_modify = false;
	adp.defer_qp_create = true;
	req(&m, IPC_OP_CREATE_QP);
	m.u.req_CREATE_QP.pd = pdb;
	m.u.req_CREATE_QP.send_cq = cqb;
	m.u.req_CREATE_QP.recv_cq = cqb;
	m.u.req_CREATE_QP.qp_type = IBV_QPT_UC;
	m.u.req_CREATE_QP.cap = (struct ipc_qp_cap){ .max_send_wr = 4, .max_recv_wr = 4,
						     .max_send_sge = 1, .max_recv_sge = 1 };
	call_pending(&b, &m);                  /* tok[1]: b's create */
	adp.defer_qp_create = false;
	cr_assert_eq(ctl_dp_inflight(ctl), 2);

	/* b's answer comes first: only b's request completes */
	uint64_t ta = adp.tok[0];

	adp.tok[0] = adp.tok[1];
	adp.tok[1] = ta;
	answer(0);
	cr_assert(ctl_conn_pending(a.c), "a still waits for its own answer");
	cr_assert_not(ctl_conn_answer(a.c, &r, (int[IPC_MAX_FDS]){ 0 }, &(unsigned int){ 0 }));
	{
		int rfds[IPC_MAX_FDS];
		unsigned int rn;

		cr_assert(ctl_conn_answer(b.c, &r, rfds, &rn));
		cr_assert_eq(r.hdr.status, 0);
		cr_assert_eq(r.hdr.op, IPC_OP_CREATE_QP);
		cr_assert_neq(r.u.rsp_CREATE_QP.handle, 0u);
		cr_assert_eq(rn, 1u, "the rings' memfd comes with the late answer");
		close(rfds[0]);
	}
	cr_assert_eq(qp_state_of(&b, r.u.rsp_CREATE_QP.handle), IBV_QPS_RESET);
	/* then a's */
	answer(0);
	cr_assert_eq(take_answer(&a, &r), 0);
	cr_assert_eq(r.u.rsp_MODIFY_QP.state, IBV_QPS_INIT);

	/* a deferred create the dataplane refuses leaves nothing */
	uint32_t before = ctl_nobjects(ctl);

	adp.defer_qp_create = true;
	call_pending(&b, &m);
	adp.defer_qp_create = false;
	cr_assert_eq(ctl_nobjects(ctl), before + 1, "held while pending");
	answer(EAGAIN);
	cr_assert_eq(take_answer(&b, &r), EAGAIN);
	cr_assert_eq(ctl_nobjects(ctl), before);
	client_close(&a);
	client_close(&b);
	cr_assert_eq(ctl_nobjects(ctl), 0);
}

Test(ctl_async, disconnect_while_pending_leaves_nothing_once_answered)
{
	struct client a, b;
	struct ipc_msg m;
	int fds_before = count_fds();
	struct ctl_stats st;

	client_open(&a, true);
	client_open(&b, true);
	uint32_t pda = alloc_pd(&a), cqa = create_cq(&a, 4, 0);

	/* a's create_qp is pending when a goes; its QP and the rings are held */
	adp.defer_qp_create = true;
	adp.defer_qp_destroy = true;
	req(&m, IPC_OP_CREATE_QP);
	m.u.req_CREATE_QP.pd = pda;
	m.u.req_CREATE_QP.send_cq = cqa;
	m.u.req_CREATE_QP.recv_cq = cqa;
	m.u.req_CREATE_QP.qp_type = IBV_QPT_RC;
	m.u.req_CREATE_QP.cap = (struct ipc_qp_cap){ .max_send_wr = 4, .max_recv_wr = 4,
						     .max_send_sge = 1, .max_recv_sge = 1 };
	call_pending(&a, &m);
	client_close(&a);
	cr_assert_eq(ctl_nobjects(ctl), 3, "nothing is freed under the dataplane's feet");
	ctl_get_stats(ctl, &st);
	cr_assert_eq(st.conns, 1, "only b is open");
	/* b is served meanwhile */
	cr_assert_neq(alloc_pd(&b), 0u);
	/* the create succeeds late: the QP is destroyed at once, again asynchronously */
	answer(0);
	cr_assert_eq(adp.ntok, 1u, "teardown waits for the QP's destroy");
	cr_assert_eq(ctl_nobjects(ctl), 4, "the CQ stays while its QP goes");
	answer(0);
	cr_assert_eq(ctl_nobjects(ctl), 1, "then the rest of a's objects go; b's PD stays");
	cr_assert_eq(adp.qp, 0);
	cr_assert_eq(ctl_dp_inflight(ctl), 0);

	/* the same with an MR whose registration is refused after the disconnect */
	client_open(&a, true);
	uint32_t pd2 = alloc_pd(&a);
	int mfd = ipc_shm_create("mr", 4096);
	char *buf = ipc_shm_map(mfd, 4096, 0);

	adp.defer_mr = true;
	req(&m, IPC_OP_REG_MR);
	m.u.req_REG_MR.pd = pd2;
	m.u.req_REG_MR.addr = (uintptr_t)buf;
	m.u.req_REG_MR.length = 4096;
	{
		struct ipc_msg r;
		int fds[IPC_MAX_FDS] = { fcntl(mfd, F_DUPFD_CLOEXEC, 3), -1 }, rfds[IPC_MAX_FDS];
		unsigned int rn;

		cr_assert_eq(ctl_conn_handle(a.c, &m, fds, 1, &r, rfds, &rn), CTL_PENDING);
	}
	client_close(&a);
	answer(ENOMEM);
	cr_assert_eq(ctl_nobjects(ctl), 1);
	cr_assert_eq(adp.mr, 1, "refused: the fake counted it, lib/ctl never destroys it");
	adp.mr = 0;
	munmap(buf, 4096);
	close(mfd);
	client_close(&b);
	ctl_get_stats(ctl, &st);
	cr_assert_eq(st.conns + ctl_nobjects(ctl), 0);
	cr_assert_eq(count_fds(), fds_before, "every descriptor closed (memfds, the mapping's fd)");
}

Test(ctl_async, server_parks_a_pending_client_and_serves_the_others)
{
	char dir[] = "/tmp/ctl-test-XXXXXX", path[64];
	struct ctl_server *srv;
	struct ipc_msg m, r;
	int fa, fb, fds[IPC_MAX_FDS];
	unsigned int n;
	struct pollfd p;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/roce.sock", dir);
	srv = ctl_server_create(ctl, path);
	cr_assert_not_null(srv);
	fa = ipc_connect(path);
	fb = ipc_connect(path);
	serve_until(srv, 2);
	for (int k = 0; k < 2; k++) {
		int fd = k ? fb : fa;

		ipc_req_init(&m, IPC_OP_OPEN_DEVICE, 1);
		memset(&m.u.req_OPEN_DEVICE, 0, sizeof(m.u.req_OPEN_DEVICE));
		strcpy(m.u.req_OPEN_DEVICE.name, "dpdk_roce0");
		cr_assert_eq(ipc_send(fd, &m, NULL, 0), 0);
		ipc_req_init(&m, IPC_OP_ALLOC_PD, 2);
		memset(&m.u.req_ALLOC_PD, 0, sizeof(m.u.req_ALLOC_PD));
		cr_assert_eq(ipc_send(fd, &m, NULL, 0), 0);
		ipc_req_init(&m, IPC_OP_CREATE_CQ, 3);
		memset(&m.u.req_CREATE_CQ, 0, sizeof(m.u.req_CREATE_CQ));
		m.u.req_CREATE_CQ.cqe = 4;
		cr_assert_eq(ipc_send(fd, &m, NULL, 0), 0);
		for (int i = 0; i < 3; i++) {
			for (int t = 0; t < 50; t++) {
				p = (struct pollfd){ .fd = fd, .events = POLLIN };
				if (poll(&p, 1, 0) == 1)
					break;
				ctl_server_poll(srv, 10);
			}
			cr_assert_gt(ipc_recv(fd, &r, fds, &n, IPC_RESPONSE), 0);
			cr_assert_eq(r.hdr.status, 0);
			for (unsigned int f = 0; f < n; f++)
				close(fds[f]);
		}
	}
	/* a: create_qp (pending) then alloc_pd, queued behind it in the socket */
	adp.defer_qp_create = true;
	ipc_req_init(&m, IPC_OP_CREATE_QP, 4);
	memset(&m.u.req_CREATE_QP, 0, sizeof(m.u.req_CREATE_QP));
	m.u.req_CREATE_QP.pd = 1u << 20 | 1;  /* generation 1, index 0: a's PD */
	m.u.req_CREATE_QP.send_cq = 1u << 20 | 1;
	m.u.req_CREATE_QP.recv_cq = 1u << 20 | 1;
	m.u.req_CREATE_QP.qp_type = IBV_QPT_RC;
	m.u.req_CREATE_QP.cap = (struct ipc_qp_cap){ .max_send_wr = 4, .max_recv_wr = 4,
						     .max_send_sge = 1, .max_recv_sge = 1 };
	cr_assert_eq(ipc_send(fa, &m, NULL, 0), 0);
	ipc_req_init(&m, IPC_OP_ALLOC_PD, 5);
	memset(&m.u.req_ALLOC_PD, 0, sizeof(m.u.req_ALLOC_PD));
	cr_assert_eq(ipc_send(fa, &m, NULL, 0), 0);
	for (int t = 0; t < 50 && adp.ntok == 0; t++)
		ctl_server_poll(srv, 10);
	cr_assert_eq(adp.ntok, 1u);
	adp.defer_qp_create = false;
	/* b is answered at once, a gets nothing yet */
	ipc_req_init(&m, IPC_OP_ALLOC_PD, 6);
	memset(&m.u.req_ALLOC_PD, 0, sizeof(m.u.req_ALLOC_PD));
	cr_assert_eq(ipc_send(fb, &m, NULL, 0), 0);
	for (int t = 0; t < 50; t++) {
		p = (struct pollfd){ .fd = fb, .events = POLLIN };
		if (poll(&p, 1, 0) == 1)
			break;
		ctl_server_poll(srv, 10);
	}
	cr_assert_gt(ipc_recv(fb, &r, fds, &n, IPC_RESPONSE), 0);
	cr_assert_eq(r.hdr.seq, 6u);
	cr_assert_eq(r.hdr.status, 0);
	p = (struct pollfd){ .fd = fa, .events = POLLIN };
	cr_assert_eq(poll(&p, 1, 0), 0, "a's answers wait for the dataplane");
	/* the answer arrives: a gets both answers, in order */
	answer(0);
	for (uint32_t seq = 4; seq <= 5; seq++) {
		for (int t = 0; t < 50; t++) {
			p = (struct pollfd){ .fd = fa, .events = POLLIN };
			if (poll(&p, 1, 0) == 1)
				break;
			ctl_server_poll(srv, 10);
		}
		cr_assert_gt(ipc_recv(fa, &r, fds, &n, IPC_RESPONSE), 0);
		cr_assert_eq(r.hdr.seq, seq);
		cr_assert_eq(r.hdr.status, 0);
		cr_assert_eq(n, seq == 4 ? 1u : 0u);
		for (unsigned int f = 0; f < n; f++)
			close(fds[f]);
	}
	close(fa);
	close(fb);
	serve_until(srv, 0);
	cr_assert_eq(ctl_nobjects(ctl), 0);
	ctl_server_destroy(srv);
	rmdir(dir);
}
