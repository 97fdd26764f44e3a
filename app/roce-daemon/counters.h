/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Dataplane counters: one list, every counter in telemetry.
 *
 * enum ctr_id numbers every event counter once, from two X-macro lists:
 * - CTR_LIST, the counters the worker keeps itself (frames, drops by class,
 *   handoff, idle backoff, stalls): symbol, telemetry name, the scopes it is
 *   kept in (port, lcore, QP) and what it counts;
 * - lib/xport's XPORT_COUNTER_LIST (xport.h), the transport engine's per-QP
 *   counters, as CTR_XPORT_<symbol> = CTR_XPORT_FIRST + XPORT_CNT_<symbol>:
 *   kept in every scope, described by lib/xport, and named "qp_" + the
 *   lowercased symbol (DROP_STATE: "qp_drop_state"), except the few
 *   CTR_XPORT_NAMES renames that keep older telemetry names.
 * So a counter is added in one place: CTR_LIST if the worker counts it,
 * XPORT_COUNTER_LIST if the engine does; telemetry, /roce/counters/help and
 * the per-scope sums follow with no other edit. Drops of malformed RoCE
 * frames are counted per enum roce_drop_reason (lib/roce's ROCE_DROP_LIST).
 *
 * Ownership and memory ordering: every struct ctr_set has exactly one
 * writer, the worker lcore that owns it (per-lcore sets, the lcore's share of
 * each port, the QPs it owns). The writer adds with a relaxed load + relaxed
 * store (no lock prefix); readers (the telemetry thread) use relaxed loads
 * and sum the per-lcore shares when they read. Values are monotonic; a
 * reader may see a set mid-update (counter A new, counter B old), never a
 * torn 64-bit value. The engine's own array (xport_qp_counters()) is plain
 * memory of the owner lcore, never read by another thread: after every call
 * into the engine the owner adds what grew to the QP's, the lcore's and the
 * port's sets (engine_xport.c count_engine()).
 */
#ifndef ROCE_DAEMON_COUNTERS_H
#define ROCE_DAEMON_COUNTERS_H

#include <stdint.h>

#include "roce.h"
#include "xport.h"

/** Scopes a counter is reported in. */
#define CTR_S_PORT 1u
#define CTR_S_LCORE 2u
#define CTR_S_QP 4u
#define CTR_S_PL (CTR_S_PORT | CTR_S_LCORE)
#define CTR_S_ALL (CTR_S_PORT | CTR_S_LCORE | CTR_S_QP)

/* X(symbol, name, scopes, description) */
#define CTR_LIST(X) \
	X(RX_PACKETS, "rx_packets", CTR_S_ALL, "frames received") \
	X(RX_BYTES, "rx_bytes", CTR_S_ALL, "bytes received, Ethernet header onward") \
	X(TX_PACKETS, "tx_packets", CTR_S_ALL, "frames given to the PMD") \
	X(TX_BYTES, "tx_bytes", CTR_S_ALL, "bytes given to the PMD") \
	X(TX_DROPS, "tx_drops", CTR_S_PL, "frames the PMD did not take (TX queue full)") \
	X(TX_LINK_DOWN, "tx_link_down", CTR_S_PL, \
	  "frames not sent: the port's link was down (as on a pulled cable)") \
	X(RX_ROCE, "rx_roce", CTR_S_PL, "valid RoCEv2 frames for our addresses") \
	X(RX_ROCE_IPV6, "rx_roce_ipv6", CTR_S_PL, "of those, over IPv6 (to an IPv6 GID)") \
	X(RX_DROPS, "rx_drops", CTR_S_PL, "RoCE frames dropped as malformed (sum of drop_*)") \
	X(RX_ARP, "rx_arp", CTR_S_PL, "ARP frames passed to the control thread") \
	X(RX_ND, "rx_nd", CTR_S_PL, "ICMPv6 neighbour discovery frames passed on") \
	X(RX_ICMP_ECHO, "rx_icmp_echo", CTR_S_PL, "ICMP/ICMPv6 echo requests to our addresses") \
	X(RX_OTHER, "rx_other", CTR_S_PL, "frames that are not for the daemon (ignored)") \
	X(RX_OWN_SRC, "rx_own_src", CTR_S_PL, "our own transmitted frames seen again (af_packet)") \
	X(RX_OTHER_VLAN, "rx_other_vlan", CTR_S_PL, \
	  "RoCE/ARP/ND/echo frames of another VLAN than the port's, or untagged on a VLAN port") \
	X(RX_NOT_OUR_ADDR, "rx_not_our_addr", CTR_S_PL, "RoCE frames to an IP that is not ours") \
	X(RX_NO_QP, "rx_no_qp", CTR_S_PL, "RoCE frames for a QP that does not exist") \
	X(RX_MCAST, "rx_mcast", CTR_S_PL, "RoCE frames to a multicast group (mcast.h)") \
	X(RX_MCAST_DELIVERED, "rx_mcast_delivered", CTR_S_PL, \
	  "multicast frames handed to attached QPs (one per QP and frame)") \
	X(RX_MCAST_NO_MEMBER, "rx_mcast_no_member", CTR_S_PL, \
	  "multicast frames dropped: no QP of the port attached to the group") \
	X(RX_MCAST_BAD, "rx_mcast_bad", CTR_S_PL, \
	  "frames to a multicast group dropped: BTH DestQP not 0xFFFFFF") \
	X(RX_MCAST_CTL, "rx_mcast_ctl", CTR_S_PL, "IGMP/MLD frames passed to the control thread") \
	X(TX_MCAST_LOOP, "tx_mcast_loop", CTR_S_PL, \
	  "multicast frames sent also copied to the port's own members (loopback)") \
	X(RX_RAW, "rx_raw", CTR_S_ALL, \
	  "frames the port's flow rules steered to RAW_PACKET QPs (one per QP and frame)") \
	X(TX_RAW, "tx_raw", CTR_S_ALL, "whole frames RAW_PACKET QPs sent") \
	X(TX_RAW_LOOP, "tx_raw_loop", CTR_S_PL, \
	  "frames RAW_PACKET QPs sent also copied through the port's own flow rules") \
	X(RAW_DROPS, "raw_drops", CTR_S_PL, \
	  "raw frames lost in the daemon: no mbuf, or no room for the copy to the port's rules") \
	X(RX_CNP_NO_QP, "rx_cnp_no_qp", CTR_S_PL, "of those, CNPs (congestion notifications)") \
	X(RX_GSI, "rx_gsi", CTR_S_PL, "MADs for QP1 (GSI) passed to the control thread") \
	X(RX_GSI_BAD, "rx_gsi_bad", CTR_S_PL, \
	  "QP1 frames dropped: not UD SEND ONLY, not the GSI Q_Key or not one 256-byte MAD") \
	X(RX_MULTISEG, "rx_multiseg", CTR_S_PL, \
	  "frames spread over several mbufs (scatter RX), copied into one whole-frame mbuf") \
	X(RX_MULTISEG_DROPS, "rx_multiseg_drops", CTR_S_PL, \
	  "of those, dropped: no whole-frame mbuf (pool empty, or the port has none)") \
	X(SLOWPATH_DROPS, "slowpath_drops", CTR_S_PL, "ARP/ND/ICMP dropped: control ring full") \
	X(HANDOFF_TX, "handoff_tx", CTR_S_LCORE, "frames handed to the lcore owning their QP") \
	X(HANDOFF_RX, "handoff_rx", CTR_S_LCORE, "frames received from another lcore") \
	X(HANDOFF_DROPS, "handoff_drops", CTR_S_LCORE, "frames dropped: handoff ring full") \
	X(LOOPBACK, "loopback", CTR_S_ALL, "frames to our own GID delivered without the NIC") \
	X(LOOPBACK_DROPS, "loopback_drops", CTR_S_PL, "loopback frames dropped: queue full, or no mbuf to build one by reference in") \
	X(NEIGH_MISS, "neigh_miss", CTR_S_PL, "sends that found no resolved neighbour") \
	X(CAPTURE_DROPS, "capture_drops", CTR_S_LCORE, "frames not captured (ring or pool full)") \
	X(POLLS, "polls", CTR_S_LCORE, "worker loop iterations") \
	X(BUSY_NS, "busy_ns", CTR_S_LCORE, \
	  "time in loop iterations that did work (ns): the lcore's CPU cost, without its polling of nothing") \
	X(IDLE_BACKOFFS, "idle_backoffs", CTR_S_LCORE, "idle backoffs (pause/yield/sleep)") \
	X(IDLE_YIELDS, "idle_yields", CTR_S_LCORE, \
	  "idle = sleep backoffs that yielded instead: within idle_yield_us of work") \
	X(IDLE_YIELDS_SLOW, "idle_yields_slow", CTR_S_LCORE, \
	  "yields that returned late (a spinning thread shares the CPU): sleep for a while") \
	X(CONTROL_WAKES, "control_wakes", CTR_S_LCORE, \
	  "times this lcore woke the control thread for what it passed on (events, answers, frames)") \
	X(STALLS, "stalls", CTR_S_LCORE, \
	  "loop iterations over 10 ms (plus the idle sleep) apart: the lcore was descheduled or blocked") \
	X(STALLS_LONG, "stalls_long", CTR_S_LCORE, \
	  "of those, over 200 ms apart: long enough to exhaust a peer's transport retries") \
	X(STALL_MAX_US, "stall_max_us", CTR_S_LCORE, "longest gap between two loop iterations (us)") \
	X(BELL_WAKES, "bell_wakes", CTR_S_LCORE, "idle QPs woken by their send doorbell") \
	X(GRACE_WAKES, "grace_wakes", CTR_S_LCORE, \
	  "QPs woken by a post their lcore saw in the grace after idling (it crossed the doorbell flag)") \
	X(SCAN_WAKES, "scan_wakes", CTR_S_LCORE, \
	  "idle QPs woken by the sweep of idle send queues (a post that rang no doorbell)") \
	X(BELL_STRAYS, "bell_strays", CTR_S_LCORE, \
	  "doorbells rung in a CQ that name none of its QPs (forged by the client, or a QP gone)")

/*
 * X(engine symbol, telemetry name): engine counters that keep the name
 * telemetry gave them before they were listed here. Only for those: a new
 * engine counter is named "qp_" + its lowercased symbol.
 */
#define CTR_XPORT_NAMES(X) \
	X(RETRANSMIT_PKTS, "retransmits") \
	X(RETRY_TIMEOUT, "timeouts") \
	X(RNR_RETRY, "rnr_retries") \
	X(DUP_REQ, "dup_requests") \
	X(NAK_SEQ_TX, "nak_tx_psn_seq_error") \
	X(NAK_INV_REQ_TX, "nak_tx_invalid_request") \
	X(NAK_ACCESS_TX, "nak_tx_remote_access_error") \
	X(NAK_OP_TX, "nak_tx_remote_operational_error") \
	X(RNR_NAK_TX, "nak_tx_rnr") \
	X(NAK_SEQ_RX, "nak_rx_psn_seq_error") \
	X(NAK_INV_REQ_RX, "nak_rx_invalid_request") \
	X(NAK_ACCESS_RX, "nak_rx_remote_access_error") \
	X(NAK_OP_RX, "nak_rx_remote_operational_error") \
	X(RNR_NAK_RX, "nak_rx_rnr") \
	X(MR_FALLBACK_COPIES, "mr_fallback_copies") \
	X(MR_FALLBACK_ERRORS, "mr_fallback_errors")

/** Every counter: CTR_LIST's, then the engine's (XPORT_COUNTER_LIST, same order). */
enum ctr_id {
#define CTR_ENUM(sym, name, scopes, desc) CTR_##sym,
	CTR_LIST(CTR_ENUM)
#undef CTR_ENUM
#define CTR_XPORT_ENUM(sym, desc) CTR_XPORT_##sym,
	XPORT_COUNTER_LIST(CTR_XPORT_ENUM)
#undef CTR_XPORT_ENUM
	CTR_COUNT
};

/** The first engine counter: CTR_XPORT_FIRST + XPORT_CNT_x is CTR_XPORT_x. */
#define CTR_XPORT_FIRST ((unsigned int)CTR_COUNT - (unsigned int)XPORT_CNT_COUNT)

/** @return the counter of engine counter @p c. */
static inline enum ctr_id
ctr_of_xport(enum xport_counter c)
{
	return (enum ctr_id)(CTR_XPORT_FIRST + (unsigned int)c);
}

/** One set of counters (one port share, one lcore or one QP). */
struct ctr_set {
	uint64_t v[CTR_COUNT];
	uint64_t drop[ROCE_DROP_COUNT];   /**< by enum roce_drop_reason; [NONE] unused */
};

/** Longest telemetry name of a counter, with its NUL. */
#define CTR_NAME_MAX 64

/**
 * @return the telemetry name of counter @p id ("rx_packets", "qp_ack_tx"),
 * a constant or made in @p buf (CTR_NAME_MAX bytes); "?" for an unknown id
 */
const char *ctr_name(enum ctr_id id, char buf[CTR_NAME_MAX]);

/** @return the scopes (CTR_S_*) counter @p id is reported in; 0 for an unknown id. */
unsigned int ctr_scopes(enum ctr_id id);

/** @return what counter @p id counts; "?" for an unknown id. */
const char *ctr_desc(enum ctr_id id);

/** Writer side (owning lcore only): add @p n. */
static inline void
ctr_add(uint64_t *c, uint64_t n)
{
	__atomic_store_n(c, *c + n, __ATOMIC_RELAXED);
}

/** Reader side (any thread). */
static inline uint64_t
ctr_read(const uint64_t *c)
{
	return __atomic_load_n(c, __ATOMIC_RELAXED);
}

/** Add every counter of @p src to @p acc (reader side: relaxed loads of @p src). */
void ctr_set_accumulate(struct ctr_set *acc, const struct ctr_set *src);

#endif /* ROCE_DAEMON_COUNTERS_H */
