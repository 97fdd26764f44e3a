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
 */
#include <getopt.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
		roce_pkt_format(&pkt, line, sizeof(line));
		printf("%lu %s icrc ok\n", n, line);
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
