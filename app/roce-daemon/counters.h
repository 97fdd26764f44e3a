/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Dataplane counters, generated from one list.
 *
 * CTR_LIST names every event counter once: enum symbol, telemetry name,
 * the scopes it is kept in (port, lcore, QP) and what it counts. Drops of
 * malformed RoCE frames are counted per enum roce_drop_reason (lib/roce's
 * ROCE_DROP_LIST), NAKs per syndrome class (CTR_NAK_LIST).
 *
 * Ownership: every struct ctr_set has exactly one writer, the worker lcore
 * that owns it (per-lcore sets, the lcore's share of each port, the QPs it
 * owns). The writer adds with a relaxed load + relaxed store (no lock prefix);
 * readers (the telemetry thread) use relaxed loads and sum the per-lcore
 * shares. Values are monotonic; a reader may see a set mid-update (counter A
 * new, counter B old), never a torn 64-bit value.
 */
#ifndef ROCE_DAEMON_COUNTERS_H
#define ROCE_DAEMON_COUNTERS_H

#include <stdint.h>

#include "roce.h"

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
	X(RX_ROCE, "rx_roce", CTR_S_PL, "valid RoCEv2 frames for our addresses") \
	X(RX_ROCE_IPV6, "rx_roce_ipv6", CTR_S_PL, "of those, over IPv6 (to an IPv6 GID)") \
	X(RX_DROPS, "rx_drops", CTR_S_PL, "RoCE frames dropped as malformed (sum of drop_*)") \
	X(RX_ARP, "rx_arp", CTR_S_PL, "ARP frames passed to the control thread") \
	X(RX_ND, "rx_nd", CTR_S_PL, "ICMPv6 neighbour discovery frames passed on") \
	X(RX_ICMP_ECHO, "rx_icmp_echo", CTR_S_PL, "ICMP/ICMPv6 echo requests to our addresses") \
	X(RX_OTHER, "rx_other", CTR_S_PL, "frames that are not for the daemon (ignored)") \
	X(RX_OWN_SRC, "rx_own_src", CTR_S_PL, "our own transmitted frames seen again (af_packet)") \
	X(RX_NOT_OUR_ADDR, "rx_not_our_addr", CTR_S_PL, "RoCE frames to an IP that is not ours") \
	X(RX_NO_QP, "rx_no_qp", CTR_S_PL, "RoCE frames for a QP that does not exist") \
	X(RX_MULTISEG, "rx_multiseg", CTR_S_PL, "frames spread over several mbufs (dropped)") \
	X(SLOWPATH_DROPS, "slowpath_drops", CTR_S_PL, "ARP/ND/ICMP dropped: control ring full") \
	X(HANDOFF_TX, "handoff_tx", CTR_S_LCORE, "frames handed to the lcore owning their QP") \
	X(HANDOFF_RX, "handoff_rx", CTR_S_LCORE, "frames received from another lcore") \
	X(HANDOFF_DROPS, "handoff_drops", CTR_S_LCORE, "frames dropped: handoff ring full") \
	X(LOOPBACK, "loopback", CTR_S_ALL, "frames to our own GID delivered without the NIC") \
	X(LOOPBACK_DROPS, "loopback_drops", CTR_S_PL, "loopback frames dropped: queue full") \
	X(RETRANSMITS, "retransmits", CTR_S_ALL, "packets sent again after a timeout or NAK") \
	X(TIMEOUTS, "timeouts", CTR_S_ALL, "local ACK timeouts (retransmit timer expiries)") \
	X(RNR_RETRIES, "rnr_retries", CTR_S_ALL, "sends repeated after an RNR NAK") \
	X(DUP_REQUESTS, "dup_requests", CTR_S_ALL, "duplicate requests received (the peer retransmitted)") \
	X(QP_DROP_STATE, "qp_drop_state", CTR_S_ALL, "dropped by the QP: its state does not accept the frame") \
	X(QP_DROP_DEST_QP, "qp_drop_dest_qp", CTR_S_ALL, "dropped by the QP: another destination QPN") \
	X(QP_DROP_TRANSPORT, "qp_drop_transport", CTR_S_ALL, "dropped by the QP: opcode of another transport") \
	X(QP_DROP_SOURCE, "qp_drop_source", CTR_S_ALL, "dropped by the QP: source is not its connected peer") \
	X(QP_DROP_PKEY, "qp_drop_pkey", CTR_S_ALL, "dropped by the QP: P_Key mismatch") \
	X(QP_DROP_QKEY, "qp_drop_qkey", CTR_S_ALL, "dropped by the QP: Q_Key mismatch (UD)") \
	X(QP_DROP_PSN_OOS, "qp_drop_psn_oos", CTR_S_ALL, "dropped by the QP: out of sequence after a NAK") \
	X(QP_DROP_DUP_UNKNOWN, "qp_drop_dup_unknown", CTR_S_ALL, "dropped by the QP: duplicate READ/ATOMIC not in its resources") \
	X(QP_DROP_STALE_RESP, "qp_drop_stale_resp", CTR_S_ALL, "dropped by the QP: stale or unexpected response") \
	X(QP_DROP_BAD_RESP, "qp_drop_bad_resp", CTR_S_ALL, "dropped by the QP: response inconsistent with the request") \
	X(QP_DROP_OTHER, "qp_drop_other", CTR_S_ALL, "dropped by the QP: broken UC message, no receive WQE, UD too long, stale replay") \
	X(MR_FALLBACK_COPIES, "mr_fallback_copies", CTR_S_ALL, \
	  "copies to/from registered memory the daemon cannot map (process_vm_readv/writev)") \
	X(MR_FALLBACK_ERRORS, "mr_fallback_errors", CTR_S_ALL, \
	  "fallback copies that failed (client gone, pages unmapped or read-only)") \
	X(NEIGH_MISS, "neigh_miss", CTR_S_PL, "sends that found no resolved neighbour") \
	X(CAPTURE_DROPS, "capture_drops", CTR_S_LCORE, "frames not captured (ring or pool full)") \
	X(POLLS, "polls", CTR_S_LCORE, "worker loop iterations") \
	X(IDLE_BACKOFFS, "idle_backoffs", CTR_S_LCORE, "idle backoffs (pause/yield/sleep)") \
	X(IDLE_YIELDS, "idle_yields", CTR_S_LCORE, \
	  "idle = sleep backoffs that yielded instead: within idle_yield_us of work") \
	X(IDLE_YIELDS_SLOW, "idle_yields_slow", CTR_S_LCORE, \
	  "yields that returned late (a spinning thread shares the CPU): sleep for a while") \
	X(STALLS, "stalls", CTR_S_LCORE, \
	  "loop iterations over 10 ms (plus the idle sleep) apart: the lcore was descheduled or blocked") \
	X(STALLS_LONG, "stalls_long", CTR_S_LCORE, \
	  "of those, over 200 ms apart: long enough to exhaust a peer's transport retries") \
	X(STALL_MAX_US, "stall_max_us", CTR_S_LCORE, "longest gap between two loop iterations (us)")

/* X(symbol, name, AETH syndrome) - NAK syndromes we count separately. */
#define CTR_NAK_LIST(X) \
	X(RNR, "rnr", ROCE_AETH_RNR_NAK) \
	X(PSN_SEQ_ERROR, "psn_seq_error", ROCE_AETH_NAK_PSN_SEQ_ERROR) \
	X(INVALID_REQ, "invalid_request", ROCE_AETH_NAK_INVALID_REQ) \
	X(REM_ACC_ERR, "remote_access_error", ROCE_AETH_NAK_REM_ACC_ERR) \
	X(REM_OP_ERR, "remote_operational_error", ROCE_AETH_NAK_REM_OP_ERR) \
	X(INV_RD_REQ, "invalid_rd_request", ROCE_AETH_NAK_INV_RD_REQ) \
	X(OTHER, "other", 0xff)

enum ctr_id {
#define CTR_ENUM(sym, name, scopes, desc) CTR_##sym,
	CTR_LIST(CTR_ENUM)
#undef CTR_ENUM
	CTR_COUNT
};

enum ctr_nak {
#define CTR_NAK_ENUM(sym, name, syn) CTR_NAK_##sym,
	CTR_NAK_LIST(CTR_NAK_ENUM)
#undef CTR_NAK_ENUM
	CTR_NAK_COUNT
};

/** One set of counters (one port share, one lcore or one QP). */
struct ctr_set {
	uint64_t v[CTR_COUNT];
	uint64_t drop[ROCE_DROP_COUNT];   /**< by enum roce_drop_reason; [NONE] unused */
	uint64_t nak_rx[CTR_NAK_COUNT];   /**< NAKs received, by syndrome */
	uint64_t nak_tx[CTR_NAK_COUNT];   /**< NAKs sent, by syndrome */
};

/** Descriptor of a counter, from CTR_LIST. */
struct ctr_desc {
	const char *name;
	unsigned int scopes;
	const char *desc;
};

extern const struct ctr_desc ctr_descs[CTR_COUNT];
extern const char *const ctr_nak_names[CTR_NAK_COUNT];

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

/** @return the NAK class of an AETH syndrome (RNR for any RNR timer code). */
enum ctr_nak ctr_nak_from_syndrome(uint8_t syndrome);

/** Add every counter of @p src to @p acc (reader side: relaxed loads of @p src). */
void ctr_set_accumulate(struct ctr_set *acc, const struct ctr_set *src);

struct daemon;

/**
 * Register the /roce/... telemetry commands for @p d (once per process;
 * telemetry callbacks have no context argument, so @p d is kept in a static
 * guarded by a rwlock). Pass NULL at shutdown, before freeing anything: the
 * commands then answer -ENODEV.
 * @return 0 or a negative errno
 */
int ctr_telemetry_register(struct daemon *d);

#endif /* ROCE_DAEMON_COUNTERS_H */
