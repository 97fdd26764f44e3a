/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * QP1, the General Services Interface, on RoCEv2: where CM MADs enter and
 * leave the daemon (IBTA vol1 chapter 13.5; Annex A17: RoCEv2 carries GMPs
 * in UD SEND ONLY packets to and from QP1 with the GSI Q_Key).
 *
 * Receive: a worker that classified a valid RoCE frame for one of our GIDs
 * with destination QP 1 checks it with gsi_check() (UD SEND ONLY, Q_Key
 * 0x80010000, exactly one 256-byte MAD) and passes it to the control thread
 * on its slow-path ring (counted rx_gsi), or drops it (rx_gsi_bad). The
 * control thread (control_poll() -> gsi_input()) parses it again, without
 * the ICRC the worker already checked, and hands the MAD with the path it
 * came on to d->on_gsi (the CM agent).
 *
 * Transmit (control thread only): gsi_send() builds the UD SEND ONLY from
 * QP 1 to QP 1 with lib/roce's builder (P_Key 0xffff, DETH Q_Key 0x80010000
 * source QP 1, IPv4 DF and TTL 64 or IPv6, one UDP source port, a PSN per
 * port) and gives it to worker_ctl_tx(). A destination whose MAC is not
 * known yet waits in a bounded queue while the neighbour table resolves it
 * (gsi_tick()); it is dropped (counted) when the queue is full or the
 * resolution fails: CM retransmissions cover the loss.
 */
#ifndef ROCE_DAEMON_GSI_H
#define ROCE_DAEMON_GSI_H

#include <stdbool.h>
#include <stdint.h>

#include "gsi_wire.h"
#include "roce.h"

#define GSI_TXQ 64u           /**< MADs waiting for a neighbour */
#define GSI_RESOLVE_MS 3000u  /**< how long one waits */

struct daemon;
struct rte_mbuf;
struct cm_path;

/** Control-thread GSI counters (telemetry /roce/cm): X(symbol, name, description). */
#define GSI_CTR_LIST(X) \
	X(RX, "gsi_rx", "MADs received on QP1 and handed to the CM") \
	X(RX_UNPARSED, "gsi_rx_unparsed", "QP1 frames the control thread could not parse again") \
	X(TX, "gsi_tx", "MADs sent from QP1") \
	X(TX_QUEUED, "gsi_tx_queued", "MADs that waited for their neighbour") \
	X(TX_DROP_QUEUE, "gsi_tx_drop_queue_full", "MADs dropped: neighbour queue full") \
	X(TX_DROP_UNREACH, "gsi_tx_drop_unreachable", "MADs dropped: neighbour unresolvable") \
	X(TX_DROP_NOMBUF, "gsi_tx_drop_nombuf", "MADs dropped: no mbuf / bad address")

enum gsi_ctr {
#define GSI_CTR_ENUM(sym, name, desc) GSI_CTR_##sym,
	GSI_CTR_LIST(GSI_CTR_ENUM)
#undef GSI_CTR_ENUM
	GSI_CTR_COUNT
};

/** Receive hook: a MAD for the CM (control thread). @p from->port is the daemon port. */
typedef void (*gsi_rx_fn)(void *arg, const struct cm_path *from, const uint8_t *mad, uint32_t len);

/** The GSI state of a daemon (control thread only). */
struct gsi;

/** Create the GSI state; @p rx gets every MAD. @return NULL on ENOMEM */
struct gsi *gsi_create(struct daemon *d, gsi_rx_fn rx, void *arg);
void gsi_destroy(struct gsi *g);

/**
 * Control thread: a QP1 frame from a worker's slow-path ring, parsed again
 * into @p pkt (roce_classify() without the ICRC); consumes @p m.
 */
void gsi_input(struct gsi *g, uint16_t port_idx, struct rte_mbuf *m, const struct roce_pkt *pkt);

/** Control thread: send @p mad on @p to (to->port = daemon port). @return 0 or -errno */
int gsi_send(struct gsi *g, const struct cm_path *to, const uint8_t *mad);

/** Control thread: MADs whose neighbour resolved or failed. @return MADs moved */
unsigned int gsi_tick(struct gsi *g);

/** The counters (GSI_CTR_COUNT). */
const uint64_t *gsi_counters(const struct gsi *g);

/**
 * Build the frame of @p mad on @p to (pure; also for tests): UD SEND ONLY
 * QP1 -> QP1, UDP source port to->udp_sport (0: QP1's own, what
 * gsi_send() always uses), with an 802.1Q tag of TCI @p vlan_tci unless it
 * is 0 (the port's VLAN and priority: port_vlan_tci()).
 * @return the frame length, 0 when @p cap is too small
 */
uint32_t gsi_build(const struct cm_path *to, const uint8_t smac[6], const uint8_t dmac[6],
		   uint16_t vlan_tci, uint32_t psn, uint16_t ip_id, const uint8_t *mad,
		   uint8_t *buf, uint32_t cap);

/** Fill @p from (a struct cm_path) from a parsed QP1 frame received on @p port_idx. */
void gsi_path_of(const struct roce_pkt *pkt, uint16_t port_idx, int gid_index,
		 struct cm_path *from);

#endif /* ROCE_DAEMON_GSI_H */
