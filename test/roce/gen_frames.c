/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Writes a pcap of frames built by lib/roce for every valid opcode over IPv4
 * and IPv6, each plain and 802.1Q-tagged, for the cross-check against scapy
 * and tshark (crosscheck.py knows every value written here). Order: opcode,
 * then IPv4/IPv6, then untagged/tagged. Tagged frames carry a UDP checksum
 * (so tshark verifies ours); untagged ones send it as 0, as rxe does.
 * usage: roce_gen_frames OUT.pcap
 */
#include <pcap/pcap.h>
#include <stdio.h>
#include <string.h>

#include "roce.h"

int
main(int argc, char **argv)
{
	static uint8_t payload[2048], frame[4096];
	static const uint8_t sgid4[16] = { [10] = 0xff, [11] = 0xff, 198, 18, 0, 2 };
	static const uint8_t dgid4[16] = { [10] = 0xff, [11] = 0xff, 198, 18, 0, 1 };
	static const uint8_t sgid6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 2 };
	static const uint8_t dgid6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 };

	if (argc != 2) {
		fprintf(stderr, "usage: %s OUT.pcap\n", argv[0]);
		return 2;
	}
	pcap_t *dead = pcap_open_dead(DLT_EN10MB, 65535);
	pcap_dumper_t *out = dead ? pcap_dump_open(dead, argv[1]) : NULL;
	if (!out) {
		fprintf(stderr, "%s: cannot write %s: %s\n", argv[0], argv[1],
			dead ? pcap_geterr(dead) : "pcap_open_dead failed");
		return 2;
	}
	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7);

	unsigned count = 0;
	for (unsigned op = 0; op < 256; op++) {
		const struct roce_opcode_desc *d = roce_opcode_desc((uint8_t)op);
		/* XRC is left out: crosscheck.py's scapy reference has no XRCETH
		 * layer (test_opcode.c and test_build.c cover the XRC rows); so
		 * are the IBTA 1.5 FLUSH and ATOMIC WRITE, which neither scapy 2.5
		 * nor tshark 4.0 know (test_opcode.c and test_build.c cover them
		 * against the spec and Linux rxe's layout) */
		if (!d || roce_opcode_transport((uint8_t)op) == ROCE_TRANSPORT_XRC ||
		    (d->kind & (ROCE_KIND_FLUSH | ROCE_KIND_ATOMIC_WRITE)))
			continue;
		for (int v = 0; v < 4; v++) {
			bool ipv6 = v >= 2, vlan = v & 1;
			struct roce_pkt p = {
				.opcode = (uint8_t)op, .pkey = 0xffff, .dest_qpn = 0x11 + op,
				.psn = 0xfffff0 + op % 32, .ack_req = (d->kind & ROCE_KIND_LAST) != 0,
				.becn = op == ROCE_OP_CNP,
				.l3 = {
					.dmac = { 0x52, 0x54, 0, 0xc6, 0x12, 1 },
					.smac = { 0x52, 0x54, 0, 0xc6, 0x12, 2 },
					.vlan_present = vlan, .vlan_tci = 100,
					.ipv6 = ipv6,
					.traffic_class = 0x02, .hop_limit = 64, .ip_id = (uint16_t)op,
					.flow_label = ipv6 ? 0x5a5a0 + op : 0,
					.udp_sport = roce_udp_sport(0, 0x11 + op, 0x12),
					.udp_csum = vlan,
				},
				.reth = { 0x00005651467bc000ull + op, 0x34a, 4096 },
				.aeth = { ROCE_AETH_ACK | ROCE_AETH_ACK_UNLIMITED, 7 },
				.atmeth = { 0x00005651467bc000ull, 0x34a, 1, 0 },
				.atmack_orig = 0x1122334455667788ull,
				.deth = { 0x11111111, 0x1a, 0 },
				.imm = htobe32(0x12345678),
				.ieth_rkey = 0x486,
				.payload = payload,
			};
			if (ipv6) {
				memcpy(p.l3.sgid, sgid6, 16);
				memcpy(p.l3.dgid, dgid6, 16);
			} else {
				memcpy(p.l3.sgid, sgid4, 16);
				memcpy(p.l3.dgid, dgid4, 16);
			}
			if (d->kind & ROCE_KIND_PAYLOAD) {
				bool last = d->kind & ROCE_KIND_LAST;
				p.payload_len = last ? 255 : 1024;
				p.pad = last ? 1 : 0;
			}
			size_t n = roce_build(&p, frame, sizeof(frame));
			if (n == 0) {
				fprintf(stderr, "cannot build %s (%s%s)\n", d->name,
					ipv6 ? "IPv6" : "IPv4", vlan ? ", 802.1Q" : "");
				return 1;
			}
			struct pcap_pkthdr h = { .ts = { .tv_sec = 1700000000, .tv_usec = count },
						 .caplen = (bpf_u_int32)n, .len = (bpf_u_int32)n };
			pcap_dump((u_char *)out, &h, frame);
			count++;
		}
	}
	pcap_dump_close(out);
	pcap_close(dead);
	printf("%u frames\n", count);
	return 0;
}
