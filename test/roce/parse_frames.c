/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Runs roce_parse() on every frame of a pcap and prints the result, for the
 * cross-check against frames that scapy built (crosscheck.py). One line per
 * frame, space-separated key=value tokens, integers in hex:
 *
 *   frame=N drop=NAME [every field of struct roce_pkt]
 *
 * After a drop only frame= and drop= are printed. The payload is printed as
 * hex bytes ("-" when empty), hdrs as extension header names joined by '|'.
 * usage: roce_parse_frames IN.pcap
 * Exit 0 when every frame was read (whatever roce_parse() said), 2 otherwise.
 */
#include <inttypes.h>
#include <pcap/pcap.h>
#include <stdio.h>

#include "roce.h"

static void
put_bytes(const char *key, const uint8_t *p, size_t n)
{
	printf(" %s=", key);
	if (n == 0)
		putchar('-');
	for (size_t i = 0; i < n; i++)
		printf("%02x", p[i]);
}

static void
put_hdrs(uint16_t hdrs)
{
	static const char *const names[] = { "RDETH", "DETH", "RETH", "ATMETH", "AETH",
					     "ATMACK", "IMMDT", "IETH", "CNP", "XRCETH",
					     "FETH" };
	const char *sep = "";

	printf(" hdrs=");
	if (hdrs == 0)
		putchar('-');
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (hdrs & (1u << i)) {
			printf("%s%s", sep, names[i]);
			sep = "|";
		}
	}
	if (hdrs >> (sizeof(names) / sizeof(names[0])))
		printf("%sUNKNOWN", sep);
}

static void
put_pkt(const struct roce_pkt *p)
{
	const struct roce_l3 *l3 = &p->l3;

	put_bytes("dmac", l3->dmac, 6);
	put_bytes("smac", l3->smac, 6);
	printf(" vlan_present=%x vlan_tci=%x ipv6=%x", l3->vlan_present, l3->vlan_tci, l3->ipv6);
	put_bytes("sgid", l3->sgid, 16);
	put_bytes("dgid", l3->dgid, 16);
	printf(" traffic_class=%x hop_limit=%x flow_label=%" PRIx32 " ip_id=%x"
	       " ipv4_df_clear=%x udp_sport=%x udp_csum=%x",
	       l3->traffic_class, l3->hop_limit, l3->flow_label, l3->ip_id,
	       l3->ipv4_df_clear, l3->udp_sport, l3->udp_csum);
	printf(" opcode=%x se=%x migreq=%x pad=%x tver=%x pkey=%x fecn=%x becn=%x resv6a=%x"
	       " dest_qpn=%" PRIx32 " ack_req=%x resv7=%x psn=%" PRIx32,
	       p->opcode, p->se, p->migreq, p->pad, p->tver, p->pkey, p->fecn, p->becn,
	       p->resv6a, p->dest_qpn, p->ack_req, p->resv7, p->psn);
	put_hdrs(p->hdrs);
	printf(" reth.va=%" PRIx64 " reth.rkey=%" PRIx32 " reth.length=%" PRIx32,
	       p->reth.va, p->reth.rkey, p->reth.length);
	printf(" aeth.syndrome=%x aeth.msn=%" PRIx32, p->aeth.syndrome, p->aeth.msn);
	printf(" atmeth.va=%" PRIx64 " atmeth.rkey=%" PRIx32 " atmeth.swap_add=%" PRIx64
	       " atmeth.compare=%" PRIx64,
	       p->atmeth.va, p->atmeth.rkey, p->atmeth.swap_add, p->atmeth.compare);
	printf(" atmack_orig=%" PRIx64, p->atmack_orig);
	printf(" deth.qkey=%" PRIx32 " deth.src_qpn=%" PRIx32 " deth.resv=%x",
	       p->deth.qkey, p->deth.src_qpn, p->deth.resv);
	/* imm holds the wire bytes in memory order: print them in that order. */
	put_bytes("imm", (const uint8_t *)&p->imm, 4);
	printf(" ieth_rkey=%" PRIx32, p->ieth_rkey);
	put_bytes("payload", p->payload, p->payload_len);
	printf(" payload_len=%" PRIx32 " icrc=%" PRIx32 " l3_offset=%x bth_offset=%x"
	       " frame_len=%" PRIx32,
	       p->payload_len, p->icrc, p->l3_offset, p->bth_offset, p->frame_len);
}

int
main(int argc, char **argv)
{
	char err[PCAP_ERRBUF_SIZE];

	if (argc != 2) {
		fprintf(stderr, "usage: %s IN.pcap\n", argv[0]);
		return 2;
	}
	pcap_t *in = pcap_open_offline(argv[1], err);
	if (!in) {
		fprintf(stderr, "%s: %s\n", argv[0], err);
		return 2;
	}
	if (pcap_datalink(in) != DLT_EN10MB) {
		fprintf(stderr, "%s: %s is not Ethernet\n", argv[0], argv[1]);
		pcap_close(in);
		return 2;
	}
	struct pcap_pkthdr *h;
	const u_char *data;
	unsigned n = 0;
	int rc;
	while ((rc = pcap_next_ex(in, &h, &data)) == 1) {
		struct roce_pkt pkt;
		enum roce_drop_reason r = roce_parse(data, h->caplen, &pkt);

		printf("frame=%x drop=%s", ++n, roce_drop_reason_name(r));
		if (r == ROCE_DROP_NONE)
			put_pkt(&pkt);
		putchar('\n');
	}
	if (rc != PCAP_ERROR_BREAK) {
		fprintf(stderr, "%s: %s: %s\n", argv[0], argv[1], pcap_geterr(in));
		pcap_close(in);
		return 2;
	}
	pcap_close(in);
	return fflush(stdout) == 0 ? 0 : 2;
}
