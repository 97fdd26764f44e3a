/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Pure pieces of roce-daemon, without EAL: GID table and attributes, the
 * neighbour table's state machine on a fake clock, the PMD limit checks,
 * the counter tables, the multicast membership table and the QP1 frame
 * builder against rxe's capture.
 */
#include <criterion/criterion.h>
#include <ctype.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_telemetry.h>

#include "config.h"
#include "counters.h"
#include "cm.h"
#include "gid.h"
#include "gsi.h"
#include "helpers.h"
#include "mcast_table.h"
#include "neigh.h"
#include "port.h"
#include "ai_cq.h"
#include "worker.h"

/* ---- GIDs and attributes ---- */

Test(gid, link_local_is_modified_eui64)
{
	const uint8_t mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };
	uint8_t gid[16], want[16];

	gid_link_local_from_mac(mac, gid);
	t_gid6("fe80::5054:ff:fe12:3456", want);
	cr_expect_arr_eq(gid, want, 16);
}

Test(gid, table_from_config)
{
	static struct config cfg;
	char err[1024];
	const uint8_t mac[6] = { 0x02, 0, 0, 0, 0, 1 };
	struct gid_table t;
	uint8_t g[16];

	cr_assert_eq(config_load_string("[port p]\ndevargs=x\nipv4=198.18.0.1/24\nipv6=2001:db8::1/64\n",
					"t", &cfg, err, sizeof(err)), 0, "%s", err);
	gid_table_build(&t, mac, &cfg.ports[0]);
	cr_assert_eq(t.n, 3);
	t_gid6("fe80::ff:fe00:1", g);
	cr_expect_eq(gid_table_find(&t, g), 0);
	t_gid4("198.18.0.1", g);
	cr_expect_eq(gid_table_find(&t, g), 1);
	cr_expect(t.entry[1].ipv4);
	t_gid6("2001:db8::1", g);
	cr_expect_eq(gid_table_find(&t, g), 2);
	cr_expect(!t.entry[2].ipv4);
	t_gid4("198.18.0.2", g);
	cr_expect_eq(gid_table_find(&t, g), -1);
	cr_expect_eq(t.pkey[0], 0xffff);
}

Test(gid, roce_mtu_like_rxe)
{
	/* largest IB MTU <= IP MTU - 80 (Linux rxe) */
	cr_expect_eq(gid_ib_mtu_from_ip_mtu(1500), IBV_MTU_1024);
	cr_expect_eq(gid_ib_mtu_from_ip_mtu(1100), IBV_MTU_512);
	cr_expect_eq(gid_ib_mtu_from_ip_mtu(1104), IBV_MTU_1024);
	cr_expect_eq(gid_ib_mtu_from_ip_mtu(4200), IBV_MTU_4096);
	cr_expect_eq(gid_ib_mtu_from_ip_mtu(9000), IBV_MTU_4096);
	cr_expect_eq(gid_ib_mtu_from_ip_mtu(384), IBV_MTU_256);
	cr_expect_eq(gid_ib_mtu_from_ip_mtu(300), 0);
}

Test(gid, attributes_follow_the_limits)
{
	static struct config cfg;
	const uint8_t mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };
	const uint8_t guid[8] = { 0x50, 0x54, 0x00, 0xff, 0xfe, 0x12, 0x34, 0x56 };
	struct ipc_device_attr da;
	struct ipc_port_attr pa;

	config_defaults(&cfg);
	cfg.daemon.max_qps = 77;
	cfg.daemon.max_cqe = 1234;
	gid_device_attr(&cfg, mac, 2, &da);
	cr_expect_eq(da.max_qp, 77);
	cr_expect_eq(da.max_cqe, 1234);
	cr_expect_eq(da.max_res_rd_atom, 77 * cfg.daemon.max_rd_atomic);
	cr_expect_eq(da.phys_port_cnt, 2);
	cr_expect_eq(da.vendor_id, 0xffffff);
	cr_expect_arr_eq(&da.node_guid, guid, 8);
	cr_expect_eq(da.atomic_cap, IBV_ATOMIC_HCA);

	gid_port_attr(1500, true, 25000, &pa);
	cr_expect_eq(pa.state, IBV_PORT_ACTIVE);
	cr_expect_eq(pa.active_mtu, IBV_MTU_1024);
	cr_expect_eq(pa.max_mtu, IBV_MTU_4096);
	cr_expect_eq(pa.link_layer, IBV_LINK_LAYER_ETHERNET);
	cr_expect_eq(pa.gid_tbl_len, GID_TABLE_LEN);
	cr_expect_eq(pa.pkey_tbl_len, 1);
	cr_expect(pa.port_cap_flags & IBV_PORT_CM_SUP);
	cr_expect_eq(pa.active_width, 1);  /* 1X */
	cr_expect_eq(pa.active_speed, 32); /* EDR: 25 Gb/s */
	gid_port_attr(9000, false, 0, &pa);
	cr_expect_eq(pa.state, IBV_PORT_DOWN);
	cr_expect_eq(pa.active_mtu, IBV_MTU_4096);
}

/* ---- neighbour table on a fake clock ---- */

#define REACH 1000u
#define RETRY 100u
#define RETRIES 3u

static struct neigh_table nt;
static unsigned int probes;
static uint8_t last_probe[16];

static void
probe(void *arg, uint16_t port, const uint8_t ip[16])
{
	(void)arg;
	(void)port;
	probes++;
	memcpy(last_probe, ip, 16);
}

static void
nt_init(void)
{
	probes = 0;
	cr_assert_eq(neigh_table_init(&nt, 16, REACH, RETRY, RETRIES), 0);
}

static void
nt_fini(void)
{
	neigh_table_free(&nt);
}

TestSuite(neigh, .init = nt_init, .fini = nt_fini);

Test(neigh, resolve_learn_lookup)
{
	const uint8_t mac[6] = { 2, 0, 0, 0, 0, 0x12 };
	uint8_t ip[16];
	struct neigh_result r;

	t_gid4(T_IP_B, ip);
	cr_expect_eq(neigh_lookup(&nt, 0, ip).state, NEIGH_FREE);
	cr_expect(!neigh_learn(&nt, 0, ip, mac, false, 5), "unsolicited: not created");
	cr_expect(neigh_want(&nt, 0, ip, 10), "first request: probe now");
	cr_expect(!neigh_want(&nt, 0, ip, 11), "already probing");
	cr_expect_eq(neigh_lookup(&nt, 0, ip).state, NEIGH_INCOMPLETE);
	cr_expect_eq(neigh_lookup(&nt, 1, ip).state, NEIGH_FREE, "ports are separate");
	cr_expect(neigh_learn(&nt, 0, ip, mac, false, 20), "answer to our probe");
	r = neigh_lookup(&nt, 0, ip);
	cr_expect_eq(r.state, NEIGH_REACHABLE);
	cr_expect_arr_eq(r.mac, mac, 6);
	cr_expect(!neigh_want(&nt, 0, ip, 21));
	cr_expect_eq(neigh_expire(&nt, 20 + REACH - 1, probe, NULL), 0);
	cr_expect_eq(probes, 0);
}

Test(neigh, unanswered_probes_fail_then_hold_down)
{
	uint8_t ip[16];
	uint64_t t = 0;

	t_gid6("2001:db8::12", ip);
	cr_assert(neigh_want(&nt, 0, ip, t));   /* probe 1 sent by the caller */
	for (unsigned int i = 1; i < RETRIES; i++) {
		t += RETRY;
		cr_expect_eq(neigh_expire(&nt, t - 1, probe, NULL), 0);
		cr_expect_eq(probes, i - 1, "no probe before the retry interval");
		neigh_expire(&nt, t, probe, NULL);
		cr_expect_eq(probes, i);
		cr_expect_arr_eq(last_probe, ip, 16);
	}
	t += RETRY;
	cr_expect_eq(neigh_expire(&nt, t, probe, NULL), 1, "retries exhausted");
	cr_expect_eq(probes, RETRIES - 1, "no probe beyond the retry count");
	cr_expect_eq(neigh_lookup(&nt, 0, ip).state, NEIGH_FAILED);
	cr_expect(!neigh_want(&nt, 0, ip, t + 1), "held down after failing");
	cr_expect(neigh_want(&nt, 0, ip, t + RETRY), "asked again after the hold-down");
	cr_expect_eq(neigh_lookup(&nt, 0, ip).state, NEIGH_INCOMPLETE);
}

Test(neigh, reachable_entries_are_refreshed)
{
	const uint8_t mac[6] = { 2, 0, 0, 0, 0, 0x13 };
	uint8_t ip[16];

	t_gid4(T_IP_B, ip);
	cr_assert(neigh_learn(&nt, 0, ip, mac, true, 0));
	neigh_expire(&nt, REACH, probe, NULL);
	cr_expect_eq(probes, 1, "re-probed when the reachable time ends");
	cr_expect_eq(neigh_lookup(&nt, 0, ip).state, NEIGH_REACHABLE, "still usable meanwhile");
	cr_expect(neigh_learn(&nt, 0, ip, mac, false, REACH + 10), "confirmed");
	neigh_expire(&nt, REACH + 10 + RETRY, probe, NULL);
	cr_expect_eq(probes, 1, "confirmed: no probing until the next reachable time");
	/* now let the peer vanish */
	uint64_t t = REACH + 10 + REACH;
	for (unsigned int i = 0; i <= RETRIES; i++, t += RETRY)
		neigh_expire(&nt, t, probe, NULL);
	cr_expect_eq(probes, 1 + RETRIES);
	cr_expect_eq(neigh_lookup(&nt, 0, ip).state, NEIGH_FAILED);
}

Test(neigh, full_table_replaces_the_oldest)
{
	uint8_t ip[16], mac[6] = { 2, 0, 0, 0, 0, 0 };
	unsigned int n = 200, present = 0;

	/* 16 entries, 200 neighbours: the table keeps the most recent ones. */
	for (unsigned int i = 0; i < n; i++) {
		t_gid4(T_IP_B, ip);
		ip[14] = (uint8_t)(i >> 8);
		ip[15] = (uint8_t)i;
		mac[5] = (uint8_t)i;
		cr_assert(neigh_learn(&nt, 0, ip, mac, true, i));
	}
	for (unsigned int i = 0; i < n; i++) {
		struct neigh_result r;

		ip[14] = (uint8_t)(i >> 8);
		ip[15] = (uint8_t)i;
		r = neigh_lookup(&nt, 0, ip);
		if (r.state == NEIGH_REACHABLE) {
			present++;
			cr_expect_eq(r.mac[5], (uint8_t)i, "entry %u has its own MAC", i);
		}
	}
	cr_expect_leq(present, nt.n_buckets * NEIGH_WAYS);
	cr_expect_geq(present, nt.n_buckets, "every bucket holds at least one");
	ip[15] = (uint8_t)(n - 1);
	ip[14] = (uint8_t)((n - 1) >> 8);
	cr_expect_eq(neigh_lookup(&nt, 0, ip).state, NEIGH_REACHABLE, "newest is present");
}

/* ---- PMD limits ---- */

Test(port, pmd_mtu_checks)
{
	char buf[256];
	const char *m;

	cr_expect_null(port_check_pmd_mtu("net_af_packet", "net_af_packet0,iface=v", 1500, buf, 256));
	cr_expect_null(port_check_pmd_mtu("net_af_packet", "net_af_packet0,iface=v", 1964, buf, 256));
	m = port_check_pmd_mtu("net_af_packet", "net_af_packet0,iface=v", 4200, buf, sizeof(buf));
	cr_assert_not_null(m);
	cr_expect(strstr(m, "framesz=4608,blocksz=36864") != NULL, "%s", m);
	cr_expect_null(port_check_pmd_mtu("net_af_packet", "net_af_packet0,iface=v,framesz=4608,"
					  "blocksz=36864", 4200, buf, sizeof(buf)));
	cr_expect_null(port_check_pmd_mtu("net_af_xdp", "net_af_xdp0,iface=v", 3438, buf, 256));
	m = port_check_pmd_mtu("net_af_xdp", "net_af_xdp0,iface=v", 3439, buf, sizeof(buf));
	cr_assert_not_null(m);
	cr_expect(strstr(m, "mtu <= 3438") != NULL, "%s", m);
	m = port_check_pmd_mtu("net_memif", "net_memif0,role=server", 4200, buf, sizeof(buf));
	cr_assert_not_null(m);
	cr_expect(strstr(m, "bsize=") != NULL, "%s", m);
	cr_expect_null(port_check_pmd_mtu("net_memif", "net_memif0,bsize=4608", 4200, buf, 256));
	cr_expect_null(port_check_pmd_mtu("net_ring", "net_ring0", 9000, buf, 256));
}

Test(port, mbuf_room_fits_the_pmd)
{
	cr_expect_geq(port_data_room("net_af_packet", "x,framesz=4608", 4218), 128 + 4608 - 32);
	cr_expect_geq(port_data_room("net_ring", "x", 9018), 128 + 9018);
	cr_expect_leq(port_data_room("net_af_xdp", "x", 3456), 3712);
	cr_expect_geq(port_data_room("net_af_xdp", "x", 3456), 128 + 3456);
}

/* ---- counters ---- */

/* A name the DPDK telemetry library accepts as a dict key ([A-Za-z0-9_]). */
static bool
tel_key_ok(const char *k)
{
	if (*k == '\0')
		return false;
	for (; *k != '\0'; k++)
		if (!isalnum((unsigned char)*k) && *k != '_')
			return false;
	return true;
}

Test(counters, one_list_names_scopes_descriptions)
{
	char bi[CTR_NAME_MAX], bj[CTR_NAME_MAX];

	for (unsigned int i = 0; i < CTR_COUNT; i++) {
		const char *n = ctr_name((enum ctr_id)i, bi);

		cr_expect(tel_key_ok(n), "counter %u: name '%s'", i, n);
		cr_expect_lt(strlen(n), CTR_NAME_MAX);
		cr_expect_neq(ctr_scopes((enum ctr_id)i), 0, "%s", n);
		cr_expect_str_neq(ctr_desc((enum ctr_id)i), "?", "%s", n);
		cr_expect_lt(strlen(ctr_desc((enum ctr_id)i)), RTE_TEL_MAX_STRING_LEN,
			     "%s: /roce/counters/help would cut its description", n);
		for (unsigned int j = 0; j < i; j++)
			cr_expect_str_neq(n, ctr_name((enum ctr_id)j, bj), "counters %u and %u", i, j);
	}
	cr_expect_str_eq(ctr_name(CTR_COUNT, bi), "?");
	cr_expect_eq(ctr_scopes(CTR_COUNT), 0);
}

Test(counters, engine_counters_are_counters_of_every_scope)
{
	char buf[CTR_NAME_MAX];

	cr_expect_eq(CTR_XPORT_FIRST + XPORT_CNT_COUNT, CTR_COUNT);
	for (unsigned int c = 0; c < XPORT_CNT_COUNT; c++) {
		enum ctr_id id = ctr_of_xport((enum xport_counter)c);

		cr_expect_geq((unsigned int)id, CTR_XPORT_FIRST);
		cr_expect_eq(ctr_scopes(id), CTR_S_ALL, "%s", xport_counter_name((enum xport_counter)c));
		cr_expect_str_eq(ctr_desc(id), xport_counter_desc((enum xport_counter)c));
	}
	cr_expect_eq(ctr_of_xport(XPORT_CNT_ACK_TX), CTR_XPORT_ACK_TX);
	/* named "qp_" + the symbol, or the name telemetry gave them before */
	cr_expect_str_eq(ctr_name(CTR_XPORT_ACK_TX, buf), "qp_ack_tx");
	cr_expect_str_eq(ctr_name(CTR_XPORT_WINDOW_SHRINK, buf), "qp_window_shrink");
	cr_expect_str_eq(ctr_name(CTR_XPORT_CQ_OVERFLOW, buf), "qp_cq_overflow");
	cr_expect_str_eq(ctr_name(CTR_XPORT_DROP_PSN_OOS, buf), "qp_drop_psn_oos");
	cr_expect_str_eq(ctr_name(CTR_XPORT_RETRANSMIT_PKTS, buf), "retransmits");
	cr_expect_str_eq(ctr_name(CTR_XPORT_RETRY_TIMEOUT, buf), "timeouts");
	cr_expect_str_eq(ctr_name(CTR_XPORT_RNR_RETRY, buf), "rnr_retries");
	cr_expect_str_eq(ctr_name(CTR_XPORT_RNR_NAK_RX, buf), "nak_rx_rnr");
	cr_expect_str_eq(ctr_name(CTR_XPORT_NAK_SEQ_RX, buf), "nak_rx_psn_seq_error");
	cr_expect_str_eq(ctr_name(CTR_XPORT_MR_FALLBACK_COPIES, buf), "mr_fallback_copies");
	cr_expect_str_eq(ctr_name(CTR_RX_DROPS, buf), "rx_drops");
}

Test(counters, accumulate)
{
	struct ctr_set a, b;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	ctr_add(&b.v[CTR_RX_PACKETS], 3);
	ctr_add(&b.drop[ROCE_DROP_ICRC], 2);
	ctr_add(&b.v[CTR_XPORT_RNR_NAK_TX], 1);
	ctr_set_accumulate(&a, &b);
	ctr_set_accumulate(&a, &b);
	cr_expect_eq(a.v[CTR_RX_PACKETS], 6);
	cr_expect_eq(a.drop[ROCE_DROP_ICRC], 4);
	cr_expect_eq(a.v[CTR_XPORT_RNR_NAK_TX], 2);
}

/* ---- UD multicast membership (mcast_table.h) ---- */

static struct mcast_table *mt;

static void
mt_init(void)
{
	mt = mcast_table_new();
	cr_assert_not_null(mt);
}

static void
mt_fini(void)
{
	mcast_table_free(mt);
	mt = NULL;
}

TestSuite(mcast_table, .init = mt_init, .fini = mt_fini);

Test(mcast_table, first_attach_joins_last_detach_leaves)
{
	uint8_t g[16];
	uint32_t qpn[MCAST_MAX_MEMBERS];
	bool first;

	t_gid4("224.0.0.251", g);
	cr_expect(!mcast_port_active(mt, 1));
	cr_expect_eq(mcast_members(mt, 1, g, qpn), 0);
	cr_assert_eq(mcast_table_add(mt, 1, g, 17, &first), 0);
	cr_expect(first);
	cr_assert_eq(mcast_table_add(mt, 1, g, 18, &first), 0);
	cr_expect(!first);
	cr_assert_eq(mcast_table_add(mt, 1, g, 17, &first), 0, "attached again: no change");
	cr_expect(!first);
	cr_expect(mcast_port_active(mt, 1));
	cr_expect(!mcast_port_active(mt, 0), "another port has no group");
	cr_expect(!mcast_port_active(mt, CONFIG_MAX_PORTS));
	cr_expect(!mcast_port_active(NULL, 1));
	cr_expect_eq(mt->port[1].n_attach, 2);
	cr_assert_eq(mcast_members(mt, 1, g, qpn), 2);
	cr_expect(qpn[0] == 17 && qpn[1] == 18);
	cr_expect_eq(mcast_members(mt, 0, g, qpn), 0, "the group is per port");
	cr_expect_not_null(mcast_table_find(mt, 1, g));
	cr_expect(!mcast_table_remove(mt, 1, g, 99), "not attached");
	cr_expect(!mcast_table_remove(mt, 1, g, 17), "a member remains");
	cr_assert_eq(mcast_members(mt, 1, g, qpn), 1);
	cr_expect_eq(qpn[0], 18);
	cr_expect(mcast_table_remove(mt, 1, g, 18), "the last member leaves the link");
	cr_expect(!mcast_port_active(mt, 1));
	cr_expect_null(mcast_table_find(mt, 1, g));
	cr_expect_eq(mt->port[1].n_attach, 0);
	cr_expect(!mcast_table_remove(mt, 1, g, 18), "gone already");
	cr_expect_eq(mt->ctr[MCAST_CTR_ATTACH_REFUSED], 0);
}

Test(mcast_table, full_group_and_full_port_refuse_with_enomem_counted)
{
	uint8_t g[16];
	uint32_t qpn[MCAST_MAX_MEMBERS];
	bool first;

	t_gid6("ff0e::1", g);
	for (uint32_t i = 0; i < MCAST_MAX_MEMBERS; i++)
		cr_assert_eq(mcast_table_add(mt, 0, g, 100 + i, &first), 0);
	cr_expect_eq(mcast_table_add(mt, 0, g, 999, &first), ENOMEM);
	cr_expect(!first);
	cr_expect_eq(mt->ctr[MCAST_CTR_ATTACH_REFUSED], 1);
	cr_expect_eq(mcast_members(mt, 0, g, qpn), MCAST_MAX_MEMBERS);
	for (unsigned int i = 1; i < MCAST_MAX_GROUPS; i++) {
		g[15] = (uint8_t)(i + 1);
		cr_assert_eq(mcast_table_add(mt, 0, g, 7, &first), 0, "group %u", i);
		cr_expect(first);
	}
	g[15] = 0xee;
	cr_expect_eq(mcast_table_add(mt, 0, g, 7, &first), ENOMEM, "no group entry left");
	cr_expect_eq(mt->ctr[MCAST_CTR_ATTACH_REFUSED], 2);
	cr_expect_eq(mt->port[0].n_groups, MCAST_MAX_GROUPS);
	cr_expect_eq(mt->port[0].n_attach, MCAST_MAX_MEMBERS + MCAST_MAX_GROUPS - 1);
}

Test(mcast_table, only_igmp_and_mld_go_to_the_control_thread)
{
	uint8_t f[128];

	memset(f, 0, sizeof(f));
	f[12] = 0x08; /* IPv4 */
	f[14 + 9] = 2; /* IGMP */
	cr_expect(mcast_is_ctl_frame(f, 14 + 28));
	cr_expect(!mcast_is_ctl_frame(f, 14 + 19), "shorter than an IPv4 header");
	f[14 + 9] = 17; /* UDP */
	cr_expect(!mcast_is_ctl_frame(f, 14 + 28));
	memset(f, 0, sizeof(f));
	f[12] = 0x86;
	f[13] = 0xdd;
	f[14 + 6] = 0; /* hop-by-hop: MLD's Router Alert */
	f[14 + 24] = 0xff; /* to a group */
	cr_expect(mcast_is_ctl_frame(f, 14 + 48));
	cr_expect(!mcast_is_ctl_frame(f, 14 + 39), "shorter than an IPv6 header");
	f[14 + 24] = 0xfe;
	cr_expect(!mcast_is_ctl_frame(f, 14 + 48), "to a unicast address");
	f[14 + 24] = 0xff;
	f[14 + 6] = 58; /* ICMPv6 without Router Alert: ND, the slow path's anyway */
	cr_expect(!mcast_is_ctl_frame(f, 14 + 48));
	f[12] = 0x88; /* neither */
	cr_expect(!mcast_is_ctl_frame(f, 14 + 48));
	/* on a VLAN: after the 802.1Q tag */
	memset(f, 0, sizeof(f));
	f[12] = 0x81;
	f[16] = 0x08;
	f[18 + 9] = 2;
	cr_expect(mcast_is_ctl_frame(f, 18 + 28), "a tagged IGMP frame");
	cr_expect(!mcast_is_ctl_frame(f, 18 + 19), "shorter than its IPv4 header");
	cr_expect(!mcast_is_ctl_frame(f, 17), "shorter than its tag");
	f[18 + 9] = 17;
	cr_expect(!mcast_is_ctl_frame(f, 18 + 28));
}

/* ---- QP1 frames: byte for byte what Linux rxe sends (gsi.h) ---- */

Test(gsi, our_qp1_frames_match_the_rxe_capture_byte_for_byte)
{
	const char *dir = getenv("ROCE_PCAP_DIR");
	char path[4096], err[PCAP_ERRBUF_SIZE];
	uint8_t ours[2048];
	unsigned int n_qp1 = 0;
	struct pcap_pkthdr *h;
	const u_char *frame;
	pcap_t *pc;

	cr_assert_not_null(dir, "ROCE_PCAP_DIR is not set");
	snprintf(path, sizeof(path), "%s/rc_send_rdmacm.pcap", dir);
	pc = pcap_open_offline(path, err);
	cr_assert_not_null(pc, "%s: %s", path, err);
	cr_assert_eq(pcap_datalink(pc), DLT_EN10MB, "Ethernet");
	while (pcap_next_ex(pc, &h, &frame) == 1) {
		struct roce_pkt pkt;
		enum roce_drop_reason why;
		struct cm_path to;

		cr_assert_eq(h->caplen, h->len, "whole frames");
		if (roce_classify(frame, h->caplen, 0, &pkt, &why) != ROCE_CLASS_ROCE ||
		    pkt.dest_qpn != 1)
			continue;
		cr_assert_eq(why, ROCE_DROP_NONE);
		cr_assert_eq(gsi_check(&pkt), GSI_OK, "rxe's MADs pass our receive check");
		/* the same MAD on the same path, built by us */
		gsi_path_of(&pkt, 0, 1, &to);
		memcpy(to.remote_gid, pkt.l3.dgid, 16);
		memcpy(to.local_gid, pkt.l3.sgid, 16);
		to.hop_limit = pkt.l3.hop_limit;
		to.remote_qpn = pkt.dest_qpn;
		cr_assert_eq(gsi_build(&to, pkt.l3.smac, pkt.l3.dmac,
				       pkt.l3.vlan_present ? pkt.l3.vlan_tci : 0, pkt.psn, pkt.l3.ip_id,
				       pkt.payload, ours, sizeof(ours)),
			     pkt.frame_len);
		cr_assert_arr_eq(ours, frame, pkt.frame_len, "QP1 frame %u differs", n_qp1);
		n_qp1++;
	}
	pcap_close(pc);
	cr_assert_geq(n_qp1, 9, "REQ REP RTU x2, DREQ DREP...");
}

/* qpn_split_owner/slot are % and / for every QPN (exhaustive over the
 * 24-bit QPNs for 1..8 workers) and at 32-bit edges for other counts. */
Test(worker, qpn_split_is_mod_and_div)
{
	static const uint32_t edge_n[] = { 9, 13, 64, 127, 255, 1000, 65537, 0x7fffffffu,
					   0xfffffffeu, 0xffffffffu };
	uint64_t bad = 0;

	for (uint32_t n = 1; n <= 8; n++) {
		struct qpn_split s = qpn_split_of(n);

		for (uint32_t q = 0; q <= ROCE_QPN_MASK; q++)
			if (qpn_split_owner(s, q) != q % n || qpn_split_slot(s, q) != q / n) {
				cr_log_error("n %u qpn %u: %u %u", n, q, qpn_split_owner(s, q),
					     qpn_split_slot(s, q));
				if (++bad > 10)
					break;
			}
	}
	for (unsigned int i = 0; i < sizeof(edge_n) / sizeof(edge_n[0]); i++) {
		struct qpn_split s = qpn_split_of(edge_n[i]);
		uint32_t n = edge_n[i];
		const uint32_t base[] = { 0, n - 1, n, n + 1, UINT32_MAX / n * n, UINT32_MAX - 1,
					  UINT32_MAX, ROCE_QPN_MASK };

		for (unsigned int b = 0; b < sizeof(base) / sizeof(base[0]); b++)
			for (uint32_t d = 0; d < 3; d++) {
				uint32_t q = base[b] - d;

				if (qpn_split_owner(s, q) != q % n || qpn_split_slot(s, q) != q / n) {
					cr_log_error("n %u qpn %u: %u %u", n, q, qpn_split_owner(s, q),
						     qpn_split_slot(s, q));
					bad++;
				}
			}
	}
	cr_assert_eq(bad, 0, "%llu QPNs split wrongly", (unsigned long long)bad);
}

/*
 * The engine's view of a CQ holds its arm word only when the CQ has a
 * completion channel: without one no event can reach the application, and
 * the engine then neither reads the word nor fences each publish against
 * it (ai_cq.c ai_cq_arm_word(); issue 18, doc/benchmarks.md session 26).
 */
Test(ai_cq, only_a_cq_with_a_channel_has_its_arm_word_read)
{
	struct ipc_cq_ctrl ctrl[2];
	struct ctl_cq_info info[2] = {
		{ .cqn = 1, .event_fd = -1, .ctrl = &ctrl[0] },
		{ .cqn = 2, .event_fd = 7, .ctrl = &ctrl[1] },
	};
	struct ai_cq c[2] = { { .info = &info[0] }, { .info = &info[1] } };

	memset(ctrl, 0, sizeof(ctrl));
	cr_assert_eq(ai_cq_bind(&c[0], 0), 0);
	cr_assert_eq(ai_cq_bind(&c[1], 0), 0);
	cr_assert_null(c[0].x.arm, "no channel: nothing to notify");
	cr_assert_eq(c[1].x.arm, &ctrl[1].arm, "a channel: the engine reads its arm word");
	cr_assert_eq(c[0].x.bells, &ctrl[0].bells, "the send doorbells either way");
	cr_assert_eq(ai_cq_bind(&c[0], 1), -EINVAL, "bound to lcore 0");
}
