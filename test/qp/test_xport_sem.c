/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * xport_cfg_from_sem() and xport_state_from_sem() (lib/xport xport_sem.h): QPs
 * brought to each state by the real QP semantics (qp_fixture.c), translated
 * into engine configurations, every field checked.
 */
#include <string.h>

#include <criterion/criterion.h>

#include "qp_fixture.h"
#include "xport_sem.h"

static const uint16_t pkeys[4] = { 0xffff, 0x8001, 0x7002, 0 };
static const uint8_t gids[3][16] = {
	{ 0xfe, 0x80, [15] = 0x01 },                                      /* link-local IPv6 */
	{ [10] = 0xff, [11] = 0xff, 198, 18, 0, 1 },                      /* ::ffff:198.18.0.1 */
	{ 0x20, 0x01, 0x0d, 0xb8, [15] = 0x07 },                          /* 2001:db8::7 */
};
static const uint8_t mac[6] = { 0x02, 0, 0, 0, 0, 0x11 };
static const struct xport_cc cc_token;

static struct xport_sem_port
port(void)
{
	return (struct xport_sem_port){
		.active_mtu = IBV_MTU_4096,
		.pkeys = pkeys, .n_pkeys = 4,
		.gids = gids, .n_gids = 3,
		.mac = mac,
		.max_unacked = 512, .min_window = 16,
		.cc = &cc_token,
	};
}

/* A configuration as the daemon keeps it: identity and queues, no attributes yet. */
static struct xport_cfg
identity(void)
{
	static struct spsc_ring *sq = (struct spsc_ring *)(uintptr_t)0x1000;

	return (struct xport_cfg){ .handle = 7, .qpn = 0x42, .pd = 3, .sq = sq, .sq_size = 64 };
}

static void
qp_at(struct qp_sem *qp, enum ibv_qp_type type, enum ibv_qp_state st)
{
	cr_assert_eq(fx_create(qp, type), 0);
	cr_assert_eq(fx_bring_to(qp, st), 0, "bring to %d", st);
	cr_assert_eq(qp->attr.qp_state, st);
}

Test(xport_sem, state_table)
{
	static const struct {
		enum ibv_qp_state in;
		uint8_t out;
	} t[] = {
		{ IBV_QPS_RESET, XPORT_STATE_RESET }, { IBV_QPS_INIT, XPORT_STATE_RESET },
		{ IBV_QPS_RTR, XPORT_STATE_RTR },     { IBV_QPS_RTS, XPORT_STATE_RTS },
		{ IBV_QPS_SQD, XPORT_STATE_SQD },     { IBV_QPS_SQE, XPORT_STATE_RTS },
		{ IBV_QPS_ERR, XPORT_STATE_ERR },     { IBV_QPS_UNKNOWN, XPORT_STATE_RESET },
	};

	for (unsigned int i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		cr_expect_eq(xport_state_from_sem(t[i].in), t[i].out, "state %d", t[i].in);
}

/* A fresh RC QP: attributes and the daemon's settings, identity kept, no path. */
Test(xport_sem, reset_keeps_identity_no_path)
{
	struct xport_sem_port p = port();
	struct xport_cfg cur = identity(), out;
	struct qp_sem qp;

	qp_at(&qp, IBV_QPT_RC, IBV_QPS_RESET);
	qp.attr.path_mtu = 0; /* none given yet */
	memset(&out, 0xa5, sizeof(out));
	cr_assert_not(xport_cfg_from_sem(&cur, &qp, &p, &out));
	cr_expect_eq(out.handle, 7);
	cr_expect_eq(out.qpn, 0x42);
	cr_expect_eq(out.pd, 3);
	cr_expect_eq(out.sq, cur.sq);
	cr_expect_eq(out.sq_size, 64);
	cr_expect_eq(out.type, XPORT_RC);
	cr_expect_eq(out.pkey, 0xffff);
	cr_expect_eq(out.max_unacked, 512);
	cr_expect_eq(out.min_window, 16);
	cr_expect_eq(out.cc, &cc_token);
	cr_expect_eq(out.max_dest_rd_atomic, 1, "0 responder resources hold one");
	cr_expect_eq(out.path_mtu, IBV_MTU_4096, "no path MTU: the port's");
	cr_expect_eq(out.sq_max_sge, 1, "one send SGE, no inline data: one-SGE shadow slots");
	for (unsigned int i = 0; i < sizeof(out.av); i++)
		cr_expect_eq(((const uint8_t *)&out.av)[i], 0, "no path before RTR (byte %u)", i);
	/* inline data beyond the SGEs: its 16-byte units, rounded up */
	qp.init.cap.max_inline_data = 20;
	cr_assert_not(xport_cfg_from_sem(&cur, &qp, &p, &out));
	cr_expect_eq(out.sq_max_sge, 2);
	qp.init.cap.max_send_sge = 5;
	cr_assert_not(xport_cfg_from_sem(&cur, &qp, &p, &out));
	cr_expect_eq(out.sq_max_sge, 5);
}

/* RC at RTR: every attribute the fixture set, and a path whose MAC is to be resolved. */
Test(xport_sem, rtr_path_needs_resolution)
{
	struct xport_sem_port p = port();
	struct xport_cfg cur = identity(), out;
	struct qp_sem qp;

	qp_at(&qp, IBV_QPT_RC, IBV_QPS_RTR);
	cr_assert(xport_cfg_from_sem(&cur, &qp, &p, &out));
	cr_expect_eq(out.path_mtu, IBV_MTU_1024);
	cr_expect_eq(out.dest_qpn, 0xabc);
	cr_expect_eq(out.rq_psn, 0x111111);
	cr_expect_eq(out.timeout, qp.attr.timeout);
	cr_expect_eq(out.min_rnr_timer, 12);
	cr_expect_eq(out.max_dest_rd_atomic, qp.attr.max_dest_rd_atomic);
	cr_expect_eq(out.access_flags, MR_ACCESS_REMOTE_WRITE | MR_ACCESS_REMOTE_READ,
		     "LOCAL_WRITE is not the engine's business");
	cr_expect_eq(out.rate_limit_kbps, qp.attr.rate_limit);
	cr_expect_eq(memcmp(out.av.dgid, qp.attr.ah_attr.grh.dgid.raw, 16), 0);
	cr_expect_eq(memcmp(out.av.sgid, gids[1], 16), 0, "sgid_index 1");
	cr_expect_eq(memcmp(out.av.smac, mac, 6), 0);
	cr_expect_eq(out.av.ipv6, 0, "a v4-mapped source GID sends IPv4");
	cr_expect_eq(out.av.hop_limit, qp.attr.ah_attr.grh.hop_limit);
	cr_expect_eq(out.av.port_num, 1);
	for (unsigned int i = 0; i < 6; i++)
		cr_expect_eq(out.av.dmac[i], 0, "MAC not known yet");
}

/* A port on a VLAN tags every path with its VID, priority left to the engine (pcp). */
Test(xport_sem, a_vlan_port_tags_the_path)
{
	struct xport_sem_port p = port();
	struct xport_cfg cur = identity(), out;
	struct qp_sem qp;

	qp_at(&qp, IBV_QPT_RC, IBV_QPS_RTR);
	cr_assert(xport_cfg_from_sem(&cur, &qp, &p, &out));
	cr_expect_eq(out.av.vlan_present, 0, "an untagged port: no tag");
	cr_expect_eq(out.av.vlan_tci, 0);
	p.vlan = 100;
	qp.attr.ah_attr.grh.traffic_class = 26 << 2;
	cr_assert(xport_cfg_from_sem(&cur, &qp, &p, &out));
	cr_expect_eq(out.av.vlan_present, 1);
	cr_expect_eq(out.av.vlan_tci, 100, "VID 100, PCP 0: the engine puts the port's pcp in");
	cr_expect_eq(out.av.traffic_class, 26 << 2, "the AV's traffic class (DSCP) stays");
	qp_at(&qp, IBV_QPT_UC, IBV_QPS_RTS);
	cr_assert(xport_cfg_from_sem(&cur, &qp, &p, &out));
	cr_expect_eq(out.av.vlan_present, 1, "UC too");
	cr_expect_eq(out.av.vlan_tci, 100);
	p.vlan = 4094;
	cr_assert(xport_cfg_from_sem(&cur, &qp, &p, &out));
	cr_expect_eq(out.av.vlan_tci, 4094);
}

/* RTR -> RTS keeps the MAC resolved for the same GID; a new GID needs resolving again. */
Test(xport_sem, resolved_mac_kept_for_same_gid)
{
	static const uint8_t peer_mac[6] = { 0x02, 0, 0, 0, 0, 0x22 };
	struct xport_sem_port p = port();
	struct xport_cfg cur = identity(), out;
	struct qp_sem qp, rts;

	qp_at(&qp, IBV_QPT_RC, IBV_QPS_RTR);
	cr_assert(xport_cfg_from_sem(&cur, &qp, &p, &cur));
	memcpy(cur.av.dmac, peer_mac, 6); /* what the neighbour table answered */
	qp_at(&rts, IBV_QPT_RC, IBV_QPS_RTS); /* the same path, one step on */
	qp = rts;
	cr_assert_not(xport_cfg_from_sem(&cur, &qp, &p, &out));
	cr_expect_eq(memcmp(out.av.dmac, peer_mac, 6), 0);
	cr_expect_eq(out.sq_psn, qp.attr.sq_psn);
	qp.attr.ah_attr.grh.dgid.raw[15] ^= 1; /* another peer */
	cr_assert(xport_cfg_from_sem(&cur, &qp, &p, &out));
	for (unsigned int i = 0; i < 6; i++)
		cr_expect_eq(out.av.dmac[i], 0);
}

/* UD: the port's MTU whatever the attributes say, its Q_Key, never a path. */
Test(xport_sem, ud_no_path_port_mtu)
{
	struct xport_sem_port p = port();
	struct xport_cfg cur = identity(), out;
	struct qp_sem qp;

	qp_at(&qp, IBV_QPT_UD, IBV_QPS_RTS);
	qp.attr.path_mtu = IBV_MTU_256;
	cr_assert_not(xport_cfg_from_sem(&cur, &qp, &p, &out));
	cr_expect_eq(out.type, XPORT_UD);
	cr_expect_eq(out.path_mtu, IBV_MTU_4096);
	cr_expect_eq(out.qkey, qp.attr.qkey);
	cr_expect_eq(out.av.port_num, 0, "UD takes its AV from each WQE's AH");
}

/*
 * RAW_PACKET (issue 19): no path to resolve in RTR/RTS (the frames carry
 * their own addresses: ibv_modify_qp to RTR failed with ETIMEDOUT waiting
 * for the neighbour of GID ::), and the port's frame limit for its sends.
 */
Test(xport_sem, raw_packet_no_path_frame_limit)
{
	struct xport_sem_port p = port();
	struct xport_cfg cur = identity(), out;
	struct qp_sem qp;

	p.raw_frame_max = 1514;
	qp_at(&qp, IBV_QPT_RAW_PACKET, IBV_QPS_RTR);
	cr_expect_not(xport_cfg_from_sem(&cur, &qp, &p, &out), "RTR: nothing to resolve");
	cr_expect_eq(out.type, XPORT_RAW);
	cr_expect_eq(out.raw_frame_max, 1514);
	qp_at(&qp, IBV_QPT_RAW_PACKET, IBV_QPS_RTS);
	cr_expect_not(xport_cfg_from_sem(&cur, &qp, &p, &out), "RTS: nothing to resolve");
	p.raw_frame_max = 9014; /* jumbo: bounded by what one frame's bounce slot holds */
	xport_cfg_from_sem(&cur, &qp, &p, &out);
	cr_expect_eq(out.raw_frame_max, XPORT_BOUNCE_FRAME);
	qp_at(&qp, IBV_QPT_UD, IBV_QPS_RTS);
	xport_cfg_from_sem(&cur, &qp, &p, &out);
	cr_expect_eq(out.raw_frame_max, 0, "other QPs send no raw frames");
}

/* Out-of-range values are clamped or masked to what the engine holds. */
Test(xport_sem, clamps_and_masks)
{
	struct xport_sem_port p = port();
	struct xport_cfg cur = identity(), out;
	struct qp_sem qp;

	qp_at(&qp, IBV_QPT_RC, IBV_QPS_RTS);
	qp.attr.max_rd_atomic = 200;
	qp.attr.max_dest_rd_atomic = 255;
	qp.attr.dest_qp_num = 0xff123456;
	qp.attr.sq_psn = 0xfe000001;
	qp.attr.rq_psn = 0x01fffffe;
	qp.attr.pkey_index = 9;                 /* beyond the table: entry 0 */
	qp.attr.ah_attr.grh.sgid_index = 2;     /* the IPv6 GID */
	qp.attr.ah_attr.grh.flow_label = 0xfff12345;
	qp.attr.qp_access_flags = ~0u;
	xport_cfg_from_sem(&cur, &qp, &p, &out);
	cr_expect_eq(out.max_rd_atomic, XPORT_MAX_RD_ATOMIC);
	cr_expect_eq(out.max_dest_rd_atomic, XPORT_MAX_RD_ATOMIC);
	cr_expect_eq(out.dest_qpn, 0x123456);
	cr_expect_eq(out.sq_psn, 0x000001);
	cr_expect_eq(out.rq_psn, 0xfffffe);
	cr_expect_eq(out.pkey, 0xffff);
	cr_expect_eq(memcmp(out.av.sgid, gids[2], 16), 0);
	cr_expect_eq(out.av.ipv6, 1, "an IPv6 source GID sends IPv6");
	cr_expect_eq(out.av.flow_label, 0x12345);
	cr_expect_eq(out.access_flags,
		     MR_ACCESS_REMOTE_WRITE | MR_ACCESS_REMOTE_READ | MR_ACCESS_REMOTE_ATOMIC |
			     MR_ACCESS_FLUSH_GLOBAL | MR_ACCESS_FLUSH_PERSISTENT);
	qp.attr.pkey_index = 1;
	qp.attr.ah_attr.grh.sgid_index = 77;    /* beyond the table: entry 0 */
	xport_cfg_from_sem(&cur, &qp, &p, &out);
	cr_expect_eq(out.pkey, 0x8001);
	cr_expect_eq(memcmp(out.av.sgid, gids[0], 16), 0);
}

/* Only @p out is written, and in place works too (out == cur). */
Test(xport_sem, pure)
{
	struct xport_sem_port p = port();
	struct xport_cfg cur = identity(), before, a, b;
	struct qp_sem qp, qp_before;

	qp_at(&qp, IBV_QPT_UC, IBV_QPS_RTS);
	before = cur;
	qp_before = qp;
	memset(&a, 0, sizeof(a));
	cr_assert(xport_cfg_from_sem(&cur, &qp, &p, &a));
	cr_expect_eq(memcmp(&cur, &before, sizeof(cur)), 0, "cur untouched");
	cr_expect_eq(memcmp(&qp, &qp_before, sizeof(qp)), 0, "sem untouched");
	b = cur;
	cr_assert(xport_cfg_from_sem(&b, &qp, &p, &b));
	/* in place gives the same (compared by field: assignment need not copy padding) */
	cr_expect_eq(b.qpn, a.qpn);
	cr_expect_eq(b.sq, a.sq);
	cr_expect_eq(b.sq_psn, a.sq_psn);
	cr_expect_eq(b.dest_qpn, a.dest_qpn);
	cr_expect_eq(b.path_mtu, a.path_mtu);
	cr_expect_eq(memcmp(b.av.dgid, a.av.dgid, 16), 0);
	cr_expect_eq(memcmp(b.av.sgid, a.av.sgid, 16), 0);
	cr_expect_eq(a.type, XPORT_UC);
}
