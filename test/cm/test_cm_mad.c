/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/cm codec: every CM MAD of the golden rxe capture parses and rebuilds
 * byte for byte, with the values doc/rdma-cm.md reads from it; a message
 * of every attribute survives a build/parse round trip with every field at
 * its extreme; malformed MADs (every truncation, bad header fields, LAP/APR,
 * reserved values) are refused with the right reason.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pcap/pcap.h>
#include <stdlib.h>
#include <string.h>

#include "cm.h"
#include "splitmix64.h"

#include "cm_golden.h"

/* CM MADs of rc_send_rdmacm.pcap: UD SEND to QP1, after BTH (12) and DETH (8). */
size_t
load_golden(struct golden_mad *out, size_t max)
{
	const char *dir = getenv("ROCE_PCAP_DIR");
	char path[4096], err[PCAP_ERRBUF_SIZE];
	struct pcap_pkthdr *h;
	const u_char *d;
	unsigned int idx = 0;
	size_t n = 0;
	pcap_t *pc;

	cr_assert_not_null(dir, "ROCE_PCAP_DIR is not set");
	snprintf(path, sizeof(path), "%s/rc_send_rdmacm.pcap", dir);
	pc = pcap_open_offline(path, err);
	cr_assert_not_null(pc, "%s: %s", path, err);
	while (pcap_next_ex(pc, &h, &d) == 1) {
		size_t l3 = 14, l4, bth;

		idx++;
		if (h->caplen < 14 || d[12] != 0x08 || d[13] != 0x00)
			continue; /* the capture is IPv4 only */
		l4 = l3 + (size_t)(d[l3] & 0xf) * 4;
		if (d[l3 + 9] != 17 || h->caplen < l4 + 8 || (d[l4 + 2] << 8 | d[l4 + 3]) != 4791)
			continue;
		bth = l4 + 8;
		/* opcode UD SEND ONLY (0x64), destination QP 1 */
		if (h->caplen < bth + 20 + CM_MAD_SIZE || d[bth] != 0x64 ||
		    (d[bth + 5] << 16 | d[bth + 6] << 8 | d[bth + 7]) != 1)
			continue;
		cr_assert_lt(n, max);
		out[n].frame = idx;
		memcpy(out[n].mad, d + bth + 20, CM_MAD_SIZE);
		n++;
	}
	pcap_close(pc);
	return n;
}

Test(cm_golden, every_mad_parses_and_rebuilds_byte_identical)
{
	static struct golden_mad g[MAX_MADS];
	size_t n = load_golden(g, MAX_MADS);

	cr_assert_eq(n, 11, "the capture holds 11 CM MADs, found %zu", n);
	for (size_t i = 0; i < n; i++) {
		struct cm_msg m;
		uint8_t out[CM_MAD_SIZE];
		int rc = cm_mad_parse(g[i].mad, CM_MAD_SIZE, &m);

		cr_assert_eq(rc, CM_MAD_OK, "frame %u: %s", g[i].frame, cm_malformed_name(rc));
		cr_assert_eq(cm_mad_build(&m, out), 0);
		for (size_t b = 0; b < CM_MAD_SIZE; b++)
			cr_assert_eq(out[b], g[i].mad[b], "frame %u (%s) byte %zu: %02x != %02x",
				     g[i].frame, cm_attr_name(m.hdr.attr_id), b, out[b], g[i].mad[b]);
	}
}

const struct golden_mad *
frame(const struct golden_mad *g, size_t n, unsigned int f)
{
	for (size_t i = 0; i < n; i++)
		if (g[i].frame == f)
			return &g[i];
	cr_assert_fail("frame %u is not a CM MAD", f);
	return NULL;
}

Test(cm_golden, values_of_the_first_connection)
{
	static struct golden_mad g[MAX_MADS];
	size_t n = load_golden(g, MAX_MADS);
	static const uint8_t gid_2[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 18, 0, 2};
	static const uint8_t gid_1[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 18, 0, 1};
	struct cm_msg req, rep, rtu;
	struct cm_ip_hdr ip;
	enum cm_port_space ps;
	uint16_t port;

	cr_assert_eq(cm_mad_parse(frame(g, n, 1)->mad, CM_MAD_SIZE, &req), 0);
	cr_assert_eq(cm_mad_parse(frame(g, n, 2)->mad, CM_MAD_SIZE, &rep), 0);
	cr_assert_eq(cm_mad_parse(frame(g, n, 3)->mad, CM_MAD_SIZE, &rtu), 0);

	/* header */
	cr_assert_eq(req.hdr.base_version, 1);
	cr_assert_eq(req.hdr.mgmt_class, 0x07);
	cr_assert_eq(req.hdr.class_version, 2);
	cr_assert_eq(req.hdr.method, CM_MAD_METHOD_SEND);
	cr_assert_eq(req.hdr.attr_id, CM_ATTR_REQ);
	cr_assert_eq(req.hdr.tid, UINT64_C(0x00000002f095fcca));
	/* REQ, REP and RTU share the active side's TID */
	cr_assert_eq(rep.hdr.tid, req.hdr.tid);
	cr_assert_eq(rtu.hdr.tid, req.hdr.tid);

	cr_assert_eq(req.req.local_comm_id, 0xcafc95f0);
	cr_assert_eq(req.req.service_id, UINT64_C(0x00000000010648af));
	cr_assert(cm_ip_service_id_parse(req.req.service_id, &ps, &port));
	cr_assert_eq(ps, CM_PS_TCP);
	cr_assert_eq(port, 0x48af);
	cr_assert_eq(cm_ip_service_id(CM_PS_TCP, 0x48af), req.req.service_id);
	cr_assert_eq(req.req.local_ca_guid, UINT64_C(0x505400fffec61202));
	cr_assert_eq(req.req.local_qpn, 0x18);
	cr_assert_eq(req.req.starting_psn, 0x4b170f);
	cr_assert_eq(req.req.pkey, 0xffff);
	cr_assert_eq(req.req.path_mtu, 3);
	cr_assert_eq(req.req.responder_resources, 0);
	cr_assert_eq(req.req.initiator_depth, 0);
	cr_assert_eq(req.req.remote_cm_response_timeout, 0x14);
	cr_assert_eq(req.req.local_cm_response_timeout, 0x14);
	cr_assert_eq(req.req.max_cm_retries, 15);
	cr_assert_eq(req.req.retry_count, 7);
	cr_assert_eq(req.req.rnr_retry_count, 7);
	cr_assert_eq(req.req.transport_type, CM_TRANSPORT_RC);
	cr_assert_eq(req.req.primary.local_lid, 0xffff);
	cr_assert_eq(req.req.primary.remote_lid, 0xffff);
	cr_assert_arr_eq(req.req.primary.local_gid, gid_2, 16);
	cr_assert_arr_eq(req.req.primary.remote_gid, gid_1, 16);
	/* Bytes 88-91 are 38 4b 80 00: a 20-bit flow label, 6 reserved bits,
	 * a 6-bit packet rate (IBTA Table 106, Linux's CM_REQ_PRIMARY_*).
	 * tshark 4.0 shows 0x00384 and rate 0x38: it reads them a byte off. */
	cr_assert_eq(req.req.primary.flow_label, 0x384b8);
	cr_assert_eq(req.req.primary.packet_rate, 0);
	cr_assert_eq(req.req.primary.traffic_class, 0);
	cr_assert_eq(req.req.primary.hop_limit, 64);
	cr_assert_eq(req.req.primary.sl, 0);
	cr_assert_eq(req.req.primary.local_ack_timeout, 0x13);
	cr_assert_eq(req.req.alternate.local_lid, 0);
	cr_assert_eq(req.req.private_data_len, CM_REQ_PRIVATE_DATA_SIZE);

	/* the rdma_cm IP header: IPv4 198.18.0.2 -> 198.18.0.1 */
	cr_assert_eq(cm_ip_hdr_parse(req.req.private_data, req.req.private_data_len, &ip), 0);
	cr_assert_eq(ip.ip_version, 4);
	cr_assert_eq(ip.src_port, 0x9ed7);
	cr_assert_arr_eq(ip.src, ((uint8_t[]){198, 18, 0, 2}), 4);
	cr_assert_arr_eq(ip.dst, ((uint8_t[]){198, 18, 0, 1}), 4);

	/* REP */
	cr_assert_eq(rep.rep.remote_comm_id, req.req.local_comm_id);
	cr_assert_eq(rep.rep.local_comm_id, 0x01a4c33a);
	cr_assert_eq(rep.rep.local_qpn, 0x17);
	cr_assert_eq(rep.rep.starting_psn, 0x1fcf74);
	cr_assert_eq(rep.rep.target_ack_delay, 15);
	cr_assert_eq(rep.rep.failover_accepted, 0);
	cr_assert_eq(rep.rep.e2e_flow_control, 0);
	cr_assert_eq(rep.rep.rnr_retry_count, 7);
	cr_assert_eq(rep.rep.srq, 0);
	cr_assert_eq(rep.rep.local_ca_guid, UINT64_C(0x505400fffec61201));

	/* RTU */
	cr_assert_eq(rtu.rtu.local_comm_id, req.req.local_comm_id);
	cr_assert_eq(rtu.rtu.remote_comm_id, rep.rep.local_comm_id);
}

Test(cm_golden, crossing_dreqs_and_their_dreps)
{
	static struct golden_mad g[MAX_MADS];
	size_t n = load_golden(g, MAX_MADS);
	struct cm_msg d67, d68, p69;

	cr_assert_eq(cm_mad_parse(frame(g, n, 67)->mad, CM_MAD_SIZE, &d67), 0);
	cr_assert_eq(cm_mad_parse(frame(g, n, 68)->mad, CM_MAD_SIZE, &d68), 0);
	cr_assert_eq(cm_mad_parse(frame(g, n, 69)->mad, CM_MAD_SIZE, &p69), 0);
	cr_assert_eq(d67.hdr.attr_id, CM_ATTR_DREQ);
	cr_assert_eq(d68.hdr.attr_id, CM_ATTR_DREQ);
	cr_assert_eq(p69.hdr.attr_id, CM_ATTR_DREP);
	/* each side's DREQ has its own TID; the DREP echoes the one it answers */
	cr_assert_neq(d67.hdr.tid, d68.hdr.tid);
	cr_assert_eq(d67.dreq.local_comm_id, d68.dreq.remote_comm_id);
	cr_assert_eq(d68.dreq.remote_qpn, 0x18);
	cr_assert_eq(p69.hdr.tid, d68.hdr.tid);
	cr_assert_eq(p69.drep.local_comm_id, d68.dreq.remote_comm_id);
	cr_assert_eq(p69.drep.remote_comm_id, d68.dreq.local_comm_id);
}

/* ---- round trips of every attribute ---------------------------------- */

static void
fill(uint8_t *p, size_t n, uint64_t *seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)splitmix64_next(seed);
}

static void
roundtrip(const struct cm_msg *m)
{
	uint8_t mad[CM_MAD_SIZE], again[CM_MAD_SIZE];
	struct cm_msg p;

	cr_assert_eq(cm_mad_build(m, mad), 0, "%s", cm_attr_name(m->hdr.attr_id));
	cr_assert_eq(cm_mad_parse(mad, sizeof(mad), &p), 0, "%s", cm_attr_name(m->hdr.attr_id));
	cr_assert_eq(cm_mad_build(&p, again), 0);
	cr_assert_arr_eq(mad, again, CM_MAD_SIZE, "%s", cm_attr_name(m->hdr.attr_id));
	cr_assert_eq(p.hdr.tid, m->hdr.tid);
}

Test(cm_codec, req_fields_at_their_maximum_round_trip)
{
	struct cm_msg m;
	uint8_t mad[CM_MAD_SIZE];
	struct cm_msg p;
	uint64_t seed = 1;

	cm_msg_init(&m, CM_ATTR_REQ, UINT64_MAX);
	m.req.local_comm_id = UINT32_MAX;
	m.req.service_id = UINT64_MAX;
	m.req.local_ca_guid = UINT64_C(0x0123456789abcdef);
	m.req.local_qkey = 0xfedcba98;
	m.req.local_qpn = 0xffffff;
	m.req.responder_resources = 0xff;
	m.req.local_eecn = 0xffffff;
	m.req.initiator_depth = 0xff;
	m.req.remote_eecn = 0xffffff;
	m.req.remote_cm_response_timeout = 31;
	m.req.transport_type = 3;
	m.req.e2e_flow_control = 1;
	m.req.starting_psn = 0xffffff;
	m.req.local_cm_response_timeout = 31;
	m.req.retry_count = 7;
	m.req.pkey = 0xffff;
	m.req.path_mtu = 5;
	m.req.rdc_exists = 1;
	m.req.rnr_retry_count = 7;
	m.req.max_cm_retries = 15;
	m.req.srq = 1;
	m.req.extended_transport = 7;
	m.req.primary.local_lid = 0xffff;
	m.req.primary.remote_lid = 0xfffe;
	fill(m.req.primary.local_gid, 16, &seed);
	fill(m.req.primary.remote_gid, 16, &seed);
	m.req.primary.flow_label = 0xfffff;
	m.req.primary.packet_rate = 0x3f;
	m.req.primary.traffic_class = 0xff;
	m.req.primary.hop_limit = 0xff;
	m.req.primary.sl = 15;
	m.req.primary.subnet_local = 1;
	m.req.primary.local_ack_timeout = 31;
	m.req.alternate = m.req.primary;
	m.req.alt_sap_supported = 1;
	m.req.private_data_len = CM_REQ_PRIVATE_DATA_SIZE;
	fill(m.req.private_data, CM_REQ_PRIVATE_DATA_SIZE, &seed);
	cr_assert_eq(cm_mad_build(&m, mad), 0);
	cr_assert_eq(cm_mad_parse(mad, sizeof(mad), &p), 0);
	/* every field came back whole: the parse equals the source */
	cr_assert_eq(memcmp(&p.req, &m.req, sizeof(m.req)), 0);
	roundtrip(&m);
}

Test(cm_codec, every_attribute_round_trips_with_random_fields)
{
	static const uint16_t attrs[] = {CM_ATTR_REQ, CM_ATTR_MRA, CM_ATTR_REJ, CM_ATTR_REP, CM_ATTR_RTU,
					 CM_ATTR_DREQ, CM_ATTR_DREP, CM_ATTR_SIDR_REQ, CM_ATTR_SIDR_REP,
					 CM_ATTR_CLASS_PORT_INFO};
	uint64_t seed = 42;

	for (int round = 0; round < 200; round++) {
		for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++) {
			uint8_t mad[CM_MAD_SIZE];
			struct cm_msg m;

			/* random bytes as a MAD, with a valid header and
			 * the reserved-value fields pulled into range */
			fill(mad, sizeof(mad), &seed);
			mad[0] = 1;
			mad[1] = 7;
			mad[2] = 2;
			mad[3] = attrs[i] == CM_ATTR_CLASS_PORT_INFO ? CM_MAD_METHOD_GET : CM_MAD_METHOD_SEND;
			mad[4] = mad[5] = 0;
			mad[16] = (uint8_t)(attrs[i] >> 8);
			mad[17] = (uint8_t)attrs[i];
			if (attrs[i] == CM_ATTR_REQ)
				mad[24 + 50] = (uint8_t)((mad[24 + 50] & 0x0f) | (1 + round % 5) << 4);
			if (attrs[i] == CM_ATTR_MRA)
				mad[24 + 8] &= 0x7f;
			if (attrs[i] == CM_ATTR_REJ) {
				mad[24 + 8] &= 0x7f;
				mad[24 + 9] = (uint8_t)((round % 73) << 1 | (mad[24 + 9] & 1));
			}
			if (attrs[i] == CM_ATTR_SIDR_REP)
				mad[24 + 5] = (uint8_t)(round % 73);
			cr_assert_eq(cm_mad_parse(mad, sizeof(mad), &m), 0, "%s round %d",
				     cm_attr_name(attrs[i]), round);
			roundtrip(&m);
		}
	}
}

Test(cm_codec, build_zeroes_reserved_bits_and_masks_fields)
{
	struct cm_msg m;
	uint8_t mad[CM_MAD_SIZE];

	cm_msg_init(&m, CM_ATTR_DREQ, 7);
	m.dreq.local_comm_id = 1;
	m.dreq.remote_comm_id = 2;
	m.dreq.remote_qpn = 0xABCDEF12; /* wider than 24 bits: masked */
	memset(mad, 0xee, sizeof(mad));
	cr_assert_eq(cm_mad_build(&m, mad), 0);
	cr_assert_eq(mad[18], 0); /* header reserved */
	cr_assert_eq(mad[19], 0);
	cr_assert_eq(mad[24 + 8], 0xCD);
	cr_assert_eq(mad[24 + 9], 0xEF);
	cr_assert_eq(mad[24 + 10], 0x12);
	cr_assert_eq(mad[24 + 11], 0);   /* reserved byte after the QPN */
	for (size_t i = 24 + 12; i < CM_MAD_SIZE; i++)
		cr_assert_eq(mad[i], 0, "byte %zu", i);
}

Test(cm_codec, build_refuses_what_it_cannot_encode)
{
	struct cm_msg m;
	uint8_t mad[CM_MAD_SIZE];

	cm_msg_init(&m, CM_ATTR_LAP, 1);
	cr_assert_eq(cm_mad_build(&m, mad), -EINVAL);
	cm_msg_init(&m, 0x77, 1);
	cr_assert_eq(cm_mad_build(&m, mad), -EINVAL);
	cm_msg_init(&m, CM_ATTR_RTU, 1);
	m.rtu.private_data_len = CM_RTU_PRIVATE_DATA_SIZE + 1;
	cr_assert_eq(cm_mad_build(&m, mad), -EINVAL);
	cm_msg_init(&m, CM_ATTR_REJ, 1);
	m.rej.ari_len = CM_REJ_ARI_SIZE + 1;
	cr_assert_eq(cm_mad_build(&m, mad), -EINVAL);
	cr_assert_eq(cm_mad_build(NULL, mad), -EINVAL);
}

Test(cm_codec, iba_time)
{
	cr_assert_eq(cm_iba_time_us(0), 5);        /* 4.096 us, rounded up */
	cr_assert_eq(cm_iba_time_us(8), 1049);     /* 1048.576 us */
	cr_assert_eq(cm_iba_time_us(20), 4294968); /* 4.29 s: rdma_cm's CM response timeout */
	cr_assert_eq(cm_iba_time_us(31), UINT64_C(8796093023));
}

/* ---- malformed -------------------------------------------------------- */

static void
valid_rtu(uint8_t mad[CM_MAD_SIZE])
{
	struct cm_msg m;

	cm_msg_init(&m, CM_ATTR_RTU, 99);
	m.rtu.local_comm_id = 5;
	m.rtu.remote_comm_id = 6;
	cr_assert_eq(cm_mad_build(&m, mad), 0);
}

Test(cm_malformed, every_truncation_is_refused)
{
	static struct golden_mad g[MAX_MADS];
	size_t n = load_golden(g, MAX_MADS);
	struct cm_msg m;

	for (size_t i = 0; i < n; i++)
		for (size_t len = 0; len < CM_MAD_SIZE; len++)
			cr_assert_eq(cm_mad_parse(g[i].mad, len, &m), CM_MALFORMED_TRUNCATED,
				     "frame %u len %zu", g[i].frame, len);
	cr_assert_eq(cm_mad_parse(NULL, CM_MAD_SIZE, &m), CM_MALFORMED_TRUNCATED);
}

Test(cm_malformed, bad_header_fields)
{
	uint8_t mad[CM_MAD_SIZE + 8];
	struct cm_msg m;

	memset(mad, 0, sizeof(mad));
	valid_rtu(mad);
	cr_assert_eq(cm_mad_parse(mad, sizeof(mad), &m), CM_MAD_OK, "longer than 256 is fine");
	struct {
		size_t off;
		uint8_t val;
		int reason;
	} cases[] = {
		{0, 0, CM_MALFORMED_BASE_VERSION},
		{0, 2, CM_MALFORMED_BASE_VERSION},
		{1, 0x01, CM_MALFORMED_CLASS},
		{1, 0x81, CM_MALFORMED_CLASS},
		{2, 1, CM_MALFORMED_CLASS_VERSION},
		{2, 3, CM_MALFORMED_CLASS_VERSION},
		{3, CM_MAD_METHOD_GET, CM_MALFORMED_METHOD},
		{3, 0x83, CM_MALFORMED_METHOD},
		{3, 0x00, CM_MALFORMED_METHOD},
		{4, 0x80, CM_MALFORMED_STATUS},
		{5, 0x01, CM_MALFORMED_STATUS},
		{17, 0x19, CM_MALFORMED_ATTR_UNSUPPORTED}, /* LAP */
		{17, 0x1A, CM_MALFORMED_ATTR_UNSUPPORTED}, /* APR */
		{17, 0x1B, CM_MALFORMED_ATTR_UNKNOWN},
		{17, 0x02, CM_MALFORMED_ATTR_UNKNOWN},
		{16, 0x01, CM_MALFORMED_ATTR_UNKNOWN},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint8_t bad[CM_MAD_SIZE];

		memcpy(bad, mad, sizeof(bad));
		bad[cases[i].off] = cases[i].val;
		cr_assert_eq(cm_mad_parse(bad, sizeof(bad), &m), cases[i].reason, "case %zu: %s", i,
			     cm_malformed_name(cm_mad_parse(bad, sizeof(bad), &m)));
	}
	/* ClassPortInfo takes Get/GetResp but not Send */
	mad[17] = 0x01;
	cr_assert_eq(cm_mad_parse(mad, CM_MAD_SIZE, &m), CM_MALFORMED_METHOD);
	mad[3] = CM_MAD_METHOD_GET_RESP;
	cr_assert_eq(cm_mad_parse(mad, CM_MAD_SIZE, &m), CM_MAD_OK);
}

Test(cm_malformed, reserved_field_values)
{
	struct cm_msg m;
	uint8_t mad[CM_MAD_SIZE];

	/* REQ path MTU 0 and 6..15 */
	cm_msg_init(&m, CM_ATTR_REQ, 1);
	m.req.path_mtu = 3;
	cr_assert_eq(cm_mad_build(&m, mad), 0);
	for (unsigned int mtu = 0; mtu < 16; mtu++) {
		mad[24 + 50] = (uint8_t)(mtu << 4);
		cr_assert_eq(cm_mad_parse(mad, CM_MAD_SIZE, &m),
			     mtu >= 1 && mtu <= 5 ? CM_MAD_OK : CM_MALFORMED_FIELD, "mtu %u", mtu);
	}
	/* MRA "message MRAed" 3 */
	cm_msg_init(&m, CM_ATTR_MRA, 1);
	cr_assert_eq(cm_mad_build(&m, mad), 0);
	mad[24 + 8] = 0xC0;
	cr_assert_eq(cm_mad_parse(mad, CM_MAD_SIZE, &m), CM_MALFORMED_FIELD);
	/* REJ "message rejected" 3, ARI length 73..127 */
	cm_msg_init(&m, CM_ATTR_REJ, 1);
	cr_assert_eq(cm_mad_build(&m, mad), 0);
	mad[24 + 8] = 0xC0;
	cr_assert_eq(cm_mad_parse(mad, CM_MAD_SIZE, &m), CM_MALFORMED_FIELD);
	mad[24 + 8] = 0;
	for (unsigned int len = 0; len < 128; len++) {
		mad[24 + 9] = (uint8_t)(len << 1);
		cr_assert_eq(cm_mad_parse(mad, CM_MAD_SIZE, &m), len <= 72 ? CM_MAD_OK : CM_MALFORMED_FIELD);
	}
	/* SIDR_REP additional information length above 72 */
	cm_msg_init(&m, CM_ATTR_SIDR_REP, 1);
	cr_assert_eq(cm_mad_build(&m, mad), 0);
	mad[24 + 5] = 73;
	cr_assert_eq(cm_mad_parse(mad, CM_MAD_SIZE, &m), CM_MALFORMED_FIELD);
	mad[24 + 5] = 255;
	cr_assert_eq(cm_mad_parse(mad, CM_MAD_SIZE, &m), CM_MALFORMED_FIELD);
}

Test(cm_malformed, random_bytes_never_crash)
{
	uint64_t seed = 7;
	unsigned int ok = 0;

	for (int i = 0; i < 200000; i++) {
		uint8_t mad[CM_MAD_SIZE];
		struct cm_msg m;
		int rc;

		fill(mad, sizeof(mad), &seed);
		/* a valid header half the time, so the bodies get parsed */
		if (i & 1) {
			mad[0] = 1;
			mad[1] = 7;
			mad[2] = 2;
			mad[3] = 3;
			mad[4] = mad[5] = 0;
			mad[16] = 0;
			mad[17] = (uint8_t)(0x10 + i % 9);
		}
		rc = cm_mad_parse(mad, (size_t)(splitmix64_next(&seed) % 2 ? CM_MAD_SIZE : splitmix64_next(&seed) % 300), &m);
		cr_assert(rc >= CM_MAD_OK && rc < CM_MALFORMED_COUNT);
		if (rc == CM_MAD_OK) {
			uint8_t out[CM_MAD_SIZE];

			ok++;
			cr_assert_eq(cm_mad_build(&m, out), 0);
		}
	}
	cr_assert_gt(ok, 1000);
}

Test(cm_names, lists_have_names)
{
	for (int r = 0; r < CM_MALFORMED_COUNT; r++)
		cr_assert_str_neq(cm_malformed_name(r), "unknown");
	cr_assert_str_eq(cm_malformed_name(CM_MALFORMED_COUNT), "unknown");
	cr_assert_str_eq(cm_attr_name(CM_ATTR_SIDR_REP), "SIDR_REP");
	cr_assert_str_eq(cm_attr_name(0x99), "unknown");
	cr_assert_str_eq(cm_rej_reason_name(CM_REJ_STALE_CONN), "stale conn");
	cr_assert_str_eq(cm_rej_reason_name(28), "consumer defined");
	cr_assert_str_eq(cm_rej_reason_name(999), "unrecognized reason");
	for (int s = 0; s < CM_STATE_COUNT; s++)
		cr_assert_str_neq(cm_state_name(s), "unknown");
	for (int e = 0; e < CM_EV_COUNT; e++)
		cr_assert_str_neq(cm_event_name(e), "unknown");
	for (int c = 0; c < CM_CTR_COUNT; c++)
		cr_assert_not_null(cm_ctr_name(c));
	cr_assert_null(cm_ctr_name(CM_CTR_COUNT));
	cr_assert_str_eq(cm_ctr_name(CM_CTR_MALFORMED_FIELD), "malformed_field");
}
