/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * roce-dump: decode the RoCEv2 packets of a pcap file, one line each.
 *
 *   roce-dump [--check] FILE.pcap
 *
 * A frame is RoCEv2 when it is IPv4/IPv6 (optionally 802.1Q tagged) carrying
 * UDP to port 4791, judged from the raw bytes before any validation, so a
 * RoCEv2 frame with a broken IP checksum still counts (as bad). Other frames
 * are skipped and counted. Exit status: 0, or 1 with --check when any RoCEv2
 * frame fails validation, 2 on usage or file errors.
 *
 * MADs to QP1 (UD with a DETH, the GSI) are decoded with lib/cm: the CM
 * message (REQ, REP, RTU, REJ with its reason, DREQ, DREP, MRA, SIDR_REQ,
 * SIDR_REP, ClassPortInfo), its transaction and communication IDs, or why
 * the MAD is malformed.
 */
#include <getopt.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm.h"
#include "roce.h"

struct counts {
	unsigned long frames;
	unsigned long roce;
	unsigned long bad;
	unsigned long skipped;
	unsigned long reasons[ROCE_DROP_COUNT];
};

/* @return true if @p f looks like UDP to 4791, from the raw bytes only. */
static bool
is_udp_4791(const uint8_t *f, size_t len)
{
	size_t off = 12;
	size_t l4;

	if (len < off + 2)
		return false;
	uint16_t type = (uint16_t)(f[off] << 8 | f[off + 1]);
	if (type == ROCE_ETHERTYPE_VLAN) {
		off += 4;
		if (len < off + 2)
			return false;
		type = (uint16_t)(f[off] << 8 | f[off + 1]);
	}
	off += 2;
	if (type == ROCE_ETHERTYPE_IPV4) {
		if (len < off + 20 || f[off + 9] != 17)
			return false;
		l4 = off + (size_t)(f[off] & 0xf) * 4;
	} else if (type == ROCE_ETHERTYPE_IPV6) {
		if (len < off + 40 || f[off + 6] != 17)
			return false;
		l4 = off + 40;
	} else {
		return false;
	}
	return len >= l4 + 4 && (f[l4 + 2] << 8 | f[l4 + 3]) == ROCE_UDP_PORT;
}

/* " cm REQ ..." for a MAD to QP1, "" for anything else. */
static void
cm_describe(const struct roce_pkt *pkt, char *out, size_t cap)
{
	struct cm_msg m;
	int rc;

	out[0] = '\0';
	if (pkt->dest_qpn != CM_GSI_QPN || !roce_pkt_has(pkt, ROCE_HDR_DETH))
		return;
	rc = cm_mad_parse(pkt->payload, pkt->payload_len, &m);
	if (rc != CM_MAD_OK) {
		snprintf(out, cap, " mad malformed (%s)", cm_malformed_name(rc));
		return;
	}
	int k = snprintf(out, cap, " cm %s tid 0x%llx", cm_attr_name(m.hdr.attr_id),
			 (unsigned long long)m.hdr.tid);
	size_t o = k > 0 && (size_t)k < cap ? (size_t)k : cap - 1;

	switch (m.hdr.attr_id) {
	case CM_ATTR_REQ:
		snprintf(out + o, cap - o, " comm 0x%x sid 0x%llx qpn 0x%x psn 0x%x mtu %u",
			 m.req.local_comm_id, (unsigned long long)m.req.service_id,
			 m.req.local_qpn, m.req.starting_psn, m.req.path_mtu);
		break;
	case CM_ATTR_REP:
		snprintf(out + o, cap - o, " comm 0x%x/0x%x qpn 0x%x psn 0x%x", m.rep.local_comm_id,
			 m.rep.remote_comm_id, m.rep.local_qpn, m.rep.starting_psn);
		break;
	case CM_ATTR_REJ:
		snprintf(out + o, cap - o, " comm 0x%x/0x%x reason %u (%s)", m.rej.local_comm_id,
			 m.rej.remote_comm_id, m.rej.reason, cm_rej_reason_name(m.rej.reason));
		break;
	case CM_ATTR_RTU:
	case CM_ATTR_DREP:
	case CM_ATTR_MRA:
		/* the comm IDs sit at the same place in these three */
		snprintf(out + o, cap - o, " comm 0x%x/0x%x", m.rtu.local_comm_id,
			 m.rtu.remote_comm_id);
		break;
	case CM_ATTR_DREQ:
		snprintf(out + o, cap - o, " comm 0x%x/0x%x qpn 0x%x", m.dreq.local_comm_id,
			 m.dreq.remote_comm_id, m.dreq.remote_qpn);
		break;
	case CM_ATTR_SIDR_REQ:
		snprintf(out + o, cap - o, " req 0x%x sid 0x%llx", m.sidr_req.request_id,
			 (unsigned long long)m.sidr_req.service_id);
		break;
	case CM_ATTR_SIDR_REP:
		snprintf(out + o, cap - o, " req 0x%x status %u qpn 0x%x qkey 0x%x",
			 m.sidr_rep.request_id, m.sidr_rep.status, m.sidr_rep.qpn, m.sidr_rep.qkey);
		break;
	default:
		break;
	}
}

static void
dump_frame(unsigned long n, const uint8_t *f, size_t len, struct counts *c)
{
	struct roce_pkt pkt;
	char line[512];

	c->frames++;
	if (!is_udp_4791(f, len)) {
		c->skipped++;
		return;
	}
	c->roce++;
	enum roce_drop_reason r = roce_parse(f, len, &pkt);
	c->reasons[r]++;
	if (r == ROCE_DROP_NONE) {
		char cm[256];

		roce_pkt_format(&pkt, line, sizeof(line));
		cm_describe(&pkt, cm, sizeof(cm));
		printf("%lu %s%s icrc ok\n", n, line, cm);
		return;
	}
	c->bad++;
	if (r == ROCE_DROP_ICRC) {
		roce_pkt_format(&pkt, line, sizeof(line));
		printf("%lu %s icrc BAD (wire 0x%08x, computed 0x%08x)\n", n, line, pkt.icrc,
		       roce_icrc_compute(f + pkt.l3_offset,
					 pkt.frame_len - ROCE_ICRC_LEN - pkt.l3_offset));
		return;
	}
	printf("%lu DROP %s: %s (%zu bytes)\n", n, roce_drop_reason_name(r),
	       roce_drop_reason_str(r), len);
}

static void
usage(FILE *out)
{
	fprintf(out, "usage: roce-dump [--check] FILE.pcap\n"
		     "  Decode every RoCEv2 (UDP 4791) packet of FILE, one line each.\n"
		     "  --check  exit 1 if any RoCEv2 packet fails validation\n");
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "check", no_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool check = false;
	int opt;

	while ((opt = getopt_long(argc, argv, "ch", opts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			check = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return 2;
	}

	const char *path = argv[optind];
	char err[PCAP_ERRBUF_SIZE];
	pcap_t *pc = pcap_open_offline(path, err);
	if (!pc) {
		fprintf(stderr, "roce-dump: cannot read %s: %s\n", path, err);
		return 2;
	}
	if (pcap_datalink(pc) != DLT_EN10MB) {
		fprintf(stderr, "roce-dump: %s: link type %s is not Ethernet\n", path,
			pcap_datalink_val_to_name(pcap_datalink(pc)) ?: "unknown");
		pcap_close(pc);
		return 2;
	}

	struct counts c = {0};
	struct pcap_pkthdr *hdr;
	const u_char *data;
	int rc;
	while ((rc = pcap_next_ex(pc, &hdr, &data)) == 1)
		dump_frame(c.frames + 1, data, hdr->caplen, &c);
	if (rc == PCAP_ERROR) {
		fprintf(stderr, "roce-dump: %s: %s after %lu frames\n", path, pcap_geterr(pc),
			c.frames);
		pcap_close(pc);
		return 2;
	}
	pcap_close(pc);

	printf("summary: %lu frames, %lu RoCEv2 (%lu ok, %lu bad), %lu non-RoCE skipped\n",
	       c.frames, c.roce, c.roce - c.bad, c.bad, c.skipped);
	for (int r = 1; r < ROCE_DROP_COUNT; r++)
		if (c.reasons[r])
			printf("  drop %s: %lu\n", roce_drop_reason_name(r), c.reasons[r]);
	return check && c.bad ? 1 : 0;
}
