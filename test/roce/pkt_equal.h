/* SPDX-License-Identifier: BSD-3-Clause */
/* Field-by-field comparison of two parsed records (padding bytes ignored). */
#ifndef TEST_ROCE_PKT_EQUAL_H
#define TEST_ROCE_PKT_EQUAL_H

#include <string.h>

#include "roce.h"

/** @return NULL if equal, else the name of the first differing field. */
static inline const char *
pkt_diff(const struct roce_pkt *a, const struct roce_pkt *b)
{
#define SAME(f) do { if (a->f != b->f) return #f; } while (0)
#define SAME_BYTES(f) do { if (memcmp(a->f, b->f, sizeof(a->f))) return #f; } while (0)
	SAME_BYTES(l3.dmac);
	SAME_BYTES(l3.smac);
	SAME(l3.vlan_present);
	SAME(l3.vlan_tci);
	SAME(l3.ipv6);
	SAME_BYTES(l3.sgid);
	SAME_BYTES(l3.dgid);
	SAME(l3.traffic_class);
	SAME(l3.hop_limit);
	SAME(l3.flow_label);
	SAME(l3.ip_id);
	SAME(l3.ipv4_df_clear);
	SAME(l3.udp_sport);
	SAME(l3.udp_csum);
	SAME(opcode);
	SAME(se);
	SAME(migreq);
	SAME(pad);
	SAME(tver);
	SAME(pkey);
	SAME(fecn);
	SAME(becn);
	SAME(resv6a);
	SAME(dest_qpn);
	SAME(ack_req);
	SAME(resv7);
	SAME(psn);
	SAME(hdrs);
	SAME(reth.va);
	SAME(reth.rkey);
	SAME(reth.length);
	SAME(feth.placement);
	SAME(feth.selectivity);
	SAME(feth.resv);
	SAME(aeth.syndrome);
	SAME(aeth.msn);
	SAME(atmeth.va);
	SAME(atmeth.rkey);
	SAME(atmeth.swap_add);
	SAME(atmeth.compare);
	SAME(atmack_orig);
	SAME(deth.qkey);
	SAME(deth.src_qpn);
	SAME(deth.resv);
	SAME(imm);
	SAME(ieth_rkey);
	SAME(xrc_srqn);
	SAME(payload);
	SAME(payload_len);
	SAME(icrc);
	SAME(l3_offset);
	SAME(bth_offset);
	SAME(frame_len);
#undef SAME
#undef SAME_BYTES
	return NULL;
}

#endif
