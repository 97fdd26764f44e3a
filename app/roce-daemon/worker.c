/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The worker loop (see worker.h for the shape and the ownership rules).
 *
 * Receive path per burst, array style: classify every frame into a next
 * step, then act per group: slow path (one bulk enqueue to the control
 * thread), local RoCE (one call into the engine), handoff (per-destination
 * buffers, flushed as one bulk enqueue per ring), drop (one bulk free).
 */
#include "worker.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <rte_branch_prediction.h>
#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_pause.h>
#include <rte_pcapng.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include "daemon_state.h"
#include "flow_steer.h"
#include "gsi_wire.h"
#include "mcast_table.h"
#include "roce_mcast.h"

const struct engine_ops engine_none = {
	.name = "none",
};

/*
 * --pcap: copy @p m (direction TX if @p tx) into this worker's capture ring
 * (capture.h: the control thread writes the file). Never blocks: a full
 * ring or pool loses the copy, counted in CTR_CAPTURE_DROPS.
 */
static void
capture_frame(struct worker *w, uint16_t port_idx, const struct rte_mbuf *m, bool tx)
{
	const struct port *p = &w->d->port[port_idx];
	struct rte_mbuf *copy;

	copy = rte_pcapng_copy(p->port_id, w->index, m, w->capture_pool, UINT32_MAX,
			       rte_get_tsc_cycles(),
			       tx ? RTE_PCAPNG_DIRECTION_OUT : RTE_PCAPNG_DIRECTION_IN);
	if (copy == NULL || rte_ring_sp_enqueue(w->capture, copy) != 0) {
		rte_pktmbuf_free(copy);
		ctr_add(&w->ctr.v[CTR_CAPTURE_DROPS], 1);
		return;
	}
	w->wake_control = true; /* the control thread writes the file */
}

/*
 * Quiescent states for port restarts (port_link.c waits on d->qsbr before
 * it touches a port's queues): online when the lcore starts, quiescent after
 * every loop iteration (it holds no port then), offline when it stops.
 */
static void
qsbr_online(struct worker *w)
{
	if (w->d->qsbr != NULL && rte_rcu_qsbr_thread_register(w->d->qsbr, w->index) == 0)
		rte_rcu_qsbr_thread_online(w->d->qsbr, w->index);
}

static void
qsbr_quiescent(struct worker *w)
{
	if (w->d->qsbr != NULL)
		rte_rcu_qsbr_quiescent(w->d->qsbr, w->index);
}

static void
qsbr_offline(struct worker *w)
{
	if (w->d->qsbr != NULL) {
		rte_rcu_qsbr_thread_offline(w->d->qsbr, w->index);
		(void)rte_rcu_qsbr_thread_unregister(w->d->qsbr, w->index);
	}
}

/* ---- counting ---- */

static inline void
count_rx_frame(struct worker *w, uint16_t port, const struct rte_mbuf *m)
{
	ctr_add(&w->port_ctr[port].v[CTR_RX_PACKETS], 1);
	ctr_add(&w->port_ctr[port].v[CTR_RX_BYTES], m->pkt_len);
	ctr_add(&w->ctr.v[CTR_RX_PACKETS], 1);
	ctr_add(&w->ctr.v[CTR_RX_BYTES], m->pkt_len);
}

static inline void
count_pl(struct worker *w, uint16_t port, enum ctr_id id)
{
	ctr_add(&w->port_ctr[port].v[id], 1);
	ctr_add(&w->ctr.v[id], 1);
}

static inline void
count_drop(struct worker *w, uint16_t port, enum roce_drop_reason r)
{
	ctr_add(&w->port_ctr[port].drop[r], 1);
	ctr_add(&w->ctr.drop[r], 1);
	count_pl(w, port, CTR_RX_DROPS);
}

void
worker_count(struct worker *w, uint16_t port_idx, struct qp_slot *qp, enum ctr_id id, uint64_t n)
{
	ctr_add(&w->ctr.v[id], n);
	if (port_idx < CONFIG_MAX_PORTS)
		ctr_add(&w->port_ctr[port_idx].v[id], n);
	if (qp != NULL)
		ctr_add(&qp->ctr.v[id], n);
}

/* ---- ownership (debug builds) ---- */

#ifndef NDEBUG
void
worker_owner_fail(const struct worker *w, const char *fn)
{
	fprintf(stderr, "roce-daemon: %s: worker %u touched on lcore %d; its owner is lcore %d\n",
		fn, w->index, (int)rte_lcore_id(),
		(int)__atomic_load_n(&w->owner_lcore, __ATOMIC_RELAXED));
	abort();
}
#endif

/* ---- QP table ---- */

struct qp_slot *
worker_qp_slot(struct worker *w, uint32_t qpn)
{
	uint32_t s;

	if (qpn_split_owner(w->split, qpn) != w->index)
		return NULL;
	s = qpn_split_slot(w->split, qpn);
	if (s >= w->n_qp_slots || w->qp[s].engine_qp == NULL)
		return NULL;
	return &w->qp[s];
}

int
worker_qp_attach(struct worker *w, uint32_t qpn, void *engine_qp)
{
	uint32_t s = qpn / w->n_workers;
	struct qp_slot *slot;

	WORKER_OWNER_ASSERT(w);
	if (engine_qp == NULL || qpn > ROCE_QPN_MASK || worker_of_qpn(qpn, w->n_workers) != w->index ||
	    s >= w->n_qp_slots)
		return -EINVAL;
	slot = &w->qp[s];
	if (slot->engine_qp != NULL)
		return -EEXIST;
	/* Counters restart for the new QP; telemetry may read meanwhile. */
	for (unsigned int i = 0; i < CTR_COUNT; i++)
		__atomic_store_n(&slot->ctr.v[i], 0, __ATOMIC_RELAXED);
	__atomic_store_n(&slot->qpn, qpn, __ATOMIC_RELAXED);
	/* release: telemetry that sees engine_qp also sees qpn and the zeroes */
	__atomic_store_n(&slot->engine_qp, engine_qp, __ATOMIC_RELEASE);
	return 0;
}

void *
worker_qp_detach(struct worker *w, uint32_t qpn)
{
	struct qp_slot *slot;
	void *qp;

	WORKER_OWNER_ASSERT(w);
	slot = worker_qp_slot(w, qpn);
	if (slot == NULL || slot->qpn != qpn)
		return NULL;
	qp = slot->engine_qp;
	__atomic_store_n(&slot->engine_qp, NULL, __ATOMIC_RELEASE);
	return qp;
}

/* ---- transmit ---- */

static void
tx_drop_cb(struct rte_mbuf **pkts, uint16_t unsent, void *userdata)
{
	struct worker_txcb *cb = userdata;

	ctr_add(&cb->w->port_ctr[cb->port].v[CTR_TX_DROPS], unsent);
	ctr_add(&cb->w->ctr.v[CTR_TX_DROPS], unsent);
	rte_pktmbuf_free_bulk(pkts, unsent);
}

/* Port @p port_idx's pool for frames we build: with scatter RX the port's
 * own mbufs may be smaller than a frame. */
static struct rte_mempool *
tx_pool(const struct worker *w, uint16_t port_idx)
{
	const struct port *p = &w->d->port[port_idx];

	return p->big_pool != NULL ? p->big_pool : p->pool;
}

unsigned int
worker_tx_alloc(struct worker *w, uint16_t port_idx, struct rte_mbuf **m, unsigned int n)
{
	struct rte_mempool *pool = tx_pool(w, port_idx);
	unsigned int i;

	if (n == 0 || rte_pktmbuf_alloc_bulk(pool, m, n) == 0)
		return n;
	for (i = 0; i < n; i++) {
		m[i] = rte_pktmbuf_alloc(pool);
		if (m[i] == NULL)
			break;
	}
	return i;
}

/*
 * Build frame @p m (its length already the whole frame's) from record
 * @p rec with payload @p src: a frame by reference becomes a frame like any
 * other (roce_build_gather_local() of roce_pkt_built()'s record is the
 * frame of the record it was cut from; test_build.c). A length that does
 * not match leaves an empty frame, which the parser drops as a runt.
 * @return where the payload now is
 */
static const uint8_t *
frame_fill(struct rte_mbuf *m, const struct roce_pkt *rec, const uint8_t *src)
{
	uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *);
	struct roce_seg seg = { src, rec->payload_len };

	if (roce_build_gather_local(rec, &seg, rec->payload_len ? 1 : 0, f, m->data_len) !=
	    m->data_len) {
		m->data_len = 0;
		m->pkt_len = 0;
		return f;
	}
	return f + m->data_len - ROCE_ICRC_LEN - (rec->pad & 3) - rec->payload_len;
}

/*
 * The frame of record @p rec, queued alone (worker_tx_loop_ref(): its
 * payload, if any, in the sender's MR), for port @p local, built in an mbuf
 * of that port's pool; @p payload (optional) gets where the payload now is.
 * NULL: no mbuf.
 */
static struct rte_mbuf *
loop_frame(struct worker *w, uint16_t local, const struct roce_pkt *rec,
	   const uint8_t **payload)
{
	struct rte_mbuf *m;
	const uint8_t *at;

	if (worker_tx_alloc(w, local, &m, 1) != 1)
		return NULL;
	m->data_len = (uint16_t)rec->frame_len;
	m->pkt_len = rec->frame_len;
	m->port = w->d->port[local].port_id;
	at = frame_fill(m, rec, rec->payload);
	if (payload != NULL)
		*payload = at;
	return m;
}

/* Slot @p i, by reference, becomes a frame like any other; without an mbuf
 * it is lost, as on a full queue (counted). */
static void
loop_fill(struct worker *w, uint32_t i)
{
	struct roce_pkt *rec = &w->loop_rec[i];

	w->loop[i] = loop_frame(w, w->loop_port[i], rec, &rec->payload);
	if (w->loop[i] == NULL) {
		count_pl(w, w->loop_port[i], CTR_LOOPBACK_DROPS);
		w->loop_has_rec[i] = false; /* lost */
	}
	w->loop_ref[i] = false;
	w->loop_n_ref--;
}

/*
 * Build every queued frame by reference: before a control message runs
 * (it may unmap the memory they point into: DEREG_MR, a QP's reset, a
 * client's end), so that no reference outlives one.
 */
static void
loop_fill_all(struct worker *w)
{
	for (uint32_t k = 0; k < w->loop_n && w->loop_n_ref > 0; k++) {
		uint32_t i = (w->loop_head + k) & (WORKER_LOOP_MAX - 1);

		if (w->loop_ref[i])
			loop_fill(w, i);
	}
}

/* The next slot of the loopback queue, or -1 when it is full (a drop on
 * port @p port_idx, counted). */
static int32_t
loop_slot(struct worker *w, uint16_t port_idx, bool raw)
{
	if (unlikely(w->loop_n >= WORKER_LOOP_MAX)) {
		count_pl(w, port_idx, raw ? CTR_RAW_DROPS : CTR_LOOPBACK_DROPS);
		return -1;
	}
	return (int32_t)((w->loop_head + w->loop_n++) & (WORKER_LOOP_MAX - 1));
}

/*
 * Queue @p m for delivery to port @p local by the next poll (loopback);
 * @p raw: a RAW_PACKET QP's frame for the port's flow rules only (the stack
 * does not see it; it is captured when it leaves through the port).
 * @p built: worker_tx_loop_built()'s.
 */
static void
loop_enqueue(struct worker *w, uint16_t port_idx, uint16_t local, struct rte_mbuf *m, bool raw,
	     const struct roce_pkt *built)
{
	int32_t i = loop_slot(w, port_idx, raw);

	if (i < 0) {
		rte_pktmbuf_free(m);
		return;
	}
	m->port = w->d->port[local].port_id;
	w->loop[i] = m;
	w->loop_port[i] = local;
	w->loop_raw[i] = raw;
	w->loop_ref[i] = false;
	w->loop_has_rec[i] = built != NULL &&
			     roce_pkt_built(&w->loop_rec[i], built, rte_pktmbuf_mtod(m, const uint8_t *),
					    m->data_len);
	if (unlikely(w->capture != NULL) && !raw)
		capture_frame(w, port_idx, m, true);
	count_pl(w, port_idx, raw ? CTR_TX_RAW_LOOP : CTR_LOOPBACK);
}

bool
worker_tx_loop_ref(struct worker *w, uint16_t port_idx, uint16_t local,
		   const struct roce_pkt *built, const uint8_t *payload, size_t len)
{
	struct rte_mempool *pool = tx_pool(w, local);
	struct roce_pkt *rec;
	int32_t i;

	/* a reference never leaves this lcore: the owner (qpn_split_owner(),
	 * worker_of_qpn() without a DIV) depends on the QPN alone, so the
	 * receive path finds the same one */
	if (w->capture != NULL ||
	    qpn_split_owner(w->split, built->dest_qpn & ROCE_QPN_MASK) != w->index ||
	    len > (size_t)rte_pktmbuf_data_room_size(pool) - RTE_PKTMBUF_HEADROOM)
		return false;
	i = loop_slot(w, port_idx, false);
	if (i < 0)
		return true;
	rec = &w->loop_rec[i];
	if (!roce_pkt_built(rec, built, NULL, len) || (payload == NULL) != (rec->payload_len == 0)) {
		w->loop_n--; /* the slot just taken: nothing else queued since */
		return false;
	}
	rec->payload = payload;
	w->loop[i] = NULL;
	w->loop_port[i] = local;
	w->loop_raw[i] = false;
	w->loop_has_rec[i] = true;
	w->loop_ref[i] = payload != NULL; /* a record without payload refers to nothing */
	w->loop_n_ref += payload != NULL;
	count_pl(w, port_idx, CTR_LOOPBACK);
	return true;
}

/* A copy of one-segment frame @p m in a new mbuf of port @p port's pool, or NULL (no mbuf). */
static struct rte_mbuf *
frame_copy(struct worker *w, uint16_t port, const struct rte_mbuf *m)
{
	struct rte_mbuf *c;
	char *dst;

	if (worker_tx_alloc(w, port, &c, 1) != 1)
		return NULL;
	dst = rte_pktmbuf_append(c, m->data_len);
	if (dst == NULL) {
		rte_pktmbuf_free(c);
		return NULL;
	}
	memcpy(dst, rte_pktmbuf_mtod(m, const uint8_t *), m->data_len);
	return c;
}

/*
 * A copy of frame @p m (about to go out on port @p port) when it is a RoCE
 * frame to a group with members on that port, for the loopback queue, as
 * Linux loops multicast back to the host (mcast_table.h "Transmit"); NULL
 * otherwise, or no mbuf.
 */
static struct rte_mbuf *
mcast_loop_copy(struct worker *w, uint16_t port, const struct rte_mbuf *m)
{
	const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *);
	uint32_t len = m->data_len, qpn[MCAST_MAX_MEMBERS];
	struct roce_pkt pkt;
	enum roce_drop_reason why;

	if (!mcast_port_active(w->d->mcast, port) || m->nb_segs != 1 ||
	    roce_classify(f, len, ROCE_CLASSIFY_NO_ICRC, &pkt, &why) != ROCE_CLASS_ROCE ||
	    why != ROCE_DROP_NONE || !roce_gid_is_mcast(pkt.l3.dgid) ||
	    mcast_members(w->d->mcast, port, pkt.l3.dgid, qpn) == 0)
		return NULL;
	return frame_copy(w, port, m);
}

int
worker_local_port(const struct worker *w, const uint8_t dmac[6])
{
	return (dmac[0] & 1) == 0 ? daemon_find_mac(w->d, dmac) : -1;
}

void
worker_tx(struct worker *w, uint16_t port_idx, struct rte_mbuf *m)
{
	struct daemon *d = w->d;
	const uint8_t *dst = rte_pktmbuf_mtod(m, const uint8_t *);
	int local = worker_local_port(w, dst);

	if (local >= 0) {
		/* Loopback: our own GID. Delivered by the next poll, through the
		 * same receive path as a frame from the NIC. */
		loop_enqueue(w, port_idx, (uint16_t)local, m, false, NULL);
		return;
	}
	if (unlikely(dst[0] & 1) && mcast_port_active(d->mcast, port_idx)) {
		/* a group with members here: they get a copy, as rxe loops it back */
		struct rte_mbuf *c = mcast_loop_copy(w, port_idx, m);

		if (c != NULL) {
			count_pl(w, port_idx, CTR_TX_MCAST_LOOP);
			loop_enqueue(w, port_idx, port_idx, c, false, NULL);
		}
	}
	if (unlikely(!port_tx_on(&d->port[port_idx]))) {
		/* no link: the frame is lost as on a pulled cable; retries run */
		count_pl(w, port_idx, CTR_TX_LINK_DOWN);
		rte_pktmbuf_free(m);
		return;
	}
	if (unlikely(w->capture != NULL))
		capture_frame(w, port_idx, m, true);
	ctr_add(&w->port_ctr[port_idx].v[CTR_TX_PACKETS], 1);
	ctr_add(&w->port_ctr[port_idx].v[CTR_TX_BYTES], m->pkt_len);
	ctr_add(&w->ctr.v[CTR_TX_PACKETS], 1);
	ctr_add(&w->ctr.v[CTR_TX_BYTES], m->pkt_len);
	rte_eth_tx_buffer(d->port[port_idx].port_id, (uint16_t)w->index, w->txbuf[port_idx], m);
}

void
worker_tx_loop_built(struct worker *w, uint16_t port_idx, uint16_t local, struct rte_mbuf *m,
		     const struct roce_pkt *built)
{
	loop_enqueue(w, port_idx, local, m, false, built);
}

void
worker_tx_raw(struct worker *w, uint16_t port_idx, struct rte_mbuf *m)
{
	const uint8_t *dst = rte_pktmbuf_mtod(m, const uint8_t *);

	count_pl(w, port_idx, CTR_TX_RAW);
	/* to one of our MACs, the loopback path runs it through the rules anyway */
	if (flow_steer_active(w->d->flows, port_idx) &&
	    worker_local_port(w, dst) < 0) {
		struct rte_mbuf *c = frame_copy(w, port_idx, m);

		if (c != NULL)
			loop_enqueue(w, port_idx, port_idx, c, true, NULL);
		else
			count_pl(w, port_idx, CTR_RAW_DROPS);
	}
	worker_tx(w, port_idx, m);
}

void
worker_tx_flush(struct worker *w)
{
	struct daemon *d = w->d;

	for (unsigned int p = 0; p < d->n_ports; p++) {
		struct rte_eth_dev_tx_buffer *b = w->txbuf[p];

		if (b == NULL || b->length == 0)
			continue;
		if (likely(port_tx_on(&d->port[p]))) {
			rte_eth_tx_buffer_flush(d->port[p].port_id, (uint16_t)w->index, b);
		} else {
			/* the link went down (or the port is restarting) meanwhile */
			ctr_add(&w->port_ctr[p].v[CTR_TX_LINK_DOWN], b->length);
			ctr_add(&w->ctr.v[CTR_TX_LINK_DOWN], b->length);
			rte_pktmbuf_free_bulk(b->pkts, b->length);
			b->length = 0;
		}
	}
}

void
worker_ctl_tx(struct daemon *d, uint16_t port_idx, struct rte_mbuf *m)
{
	struct worker *w0 = d->worker[0];

	/* ARP/ND probes and IGMP/MLD reports are built untagged: on a VLAN
	 * port they go out on its VLAN, priority 0 (a VLAN netdev's default
	 * egress map); frames built tagged (CM MADs, answers in place) keep theirs */
	if (port_idx < d->n_ports && port_vlan_tag(&d->port[port_idx], &m) != 0) {
		rte_pktmbuf_free(m);
		return;
	}
	m->port = port_idx; /* the consumer reads the daemon port index from here */
	if (w0 == NULL || rte_ring_sp_enqueue(w0->ctl_tx, m) != 0)
		rte_pktmbuf_free(m);
}

/* ---- receive ---- */

enum rx_next {
	RX_NEXT_DROP,
	RX_NEXT_SLOW,    /* ARP / ND / echo / QP1 MADs -> control thread */
	RX_NEXT_ROCE,    /* parsed into w->rx[...] */
	RX_NEXT_MCAST,   /* parsed, to a multicast group: fanned out by rx_mcast() */
	RX_NEXT_RAW,     /* not the stack's, the port has flow rules: rx_raw() matches it */
	RX_NEXT_PARSE,   /* loop_record(): not taken from its record; classify() it */
};

/*
 * Classify one frame: roce_classify() reads it once (RoCE frames are parsed
 * into @p pkt, the ICRC checked unless it came through loopback, where we
 * built it ourselves); what is left here is the daemon's: our own source
 * MAC, capture, our GIDs and the counters.
 */
static enum rx_next
classify(struct worker *w, uint16_t port, struct rte_mbuf *m, bool loopback, struct roce_pkt *pkt)
{
	const struct port *p = &w->d->port[port];
	const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *);
	uint32_t len = m->data_len;
	enum roce_drop_reason why;
	enum roce_class cls;
	bool our_vlan;

	if (unlikely(m->nb_segs != 1)) {   /* rx_linearize() failed to run: never */
		count_pl(w, port, CTR_RX_MULTISEG_DROPS);
		return RX_NEXT_DROP;
	}
	if (unlikely(len < sizeof(struct roce_eth_hdr))) {
		count_drop(w, port, ROCE_DROP_ETH_TRUNCATED);
		return RX_NEXT_DROP;
	}
	/* af_packet also delivers what this host sent: not for us. */
	if (!loopback && memcmp(f + 6, p->mac, 6) == 0) {
		count_pl(w, port, CTR_RX_OWN_SRC);
		return RX_NEXT_DROP;
	}
	if (unlikely(w->capture != NULL) && !loopback)
		capture_frame(w, port, m, false);
	cls = roce_classify(f, len, loopback ? ROCE_CLASSIFY_NO_ICRC : 0, pkt, &why);
	/* A port on a VLAN is a NIC on a VLAN netdev: the stack's frames are
	 * those of its VLAN only (IEEE 802.1Q); untagged or priority-tagged
	 * frames belong to a port without one. Anything else is left as rx_other;
	 * either way the frame is not the stack's, so the raw QPs' rules see it. */
	our_vlan = roce_eth_vid(f, len) == port_vlan(p);
	if (unlikely(!our_vlan) && cls != ROCE_CLASS_OTHER && cls != ROCE_CLASS_MALFORMED) {
		count_pl(w, port, CTR_RX_OTHER_VLAN);
		return flow_steer_active(w->d->flows, port) ? RX_NEXT_RAW : RX_NEXT_DROP;
	}
	switch (cls) {
	case ROCE_CLASS_ROCE:
		if (why != ROCE_DROP_NONE)
			break;
		if (unlikely(roce_gid_is_mcast(pkt->l3.dgid))) {
			/* IBA section 9.2: multicast packets carry DestQP 0xFFFFFF */
			count_pl(w, port, pkt->dest_qpn == ROCE_MCAST_QPN ? CTR_RX_MCAST : CTR_RX_MCAST_BAD);
			return pkt->dest_qpn == ROCE_MCAST_QPN ? RX_NEXT_MCAST : RX_NEXT_DROP;
		}
		if (gid_table_find(&p->gids, pkt->l3.dgid) < 0) {
			count_pl(w, port, CTR_RX_NOT_OUR_ADDR);
			return flow_steer_active(w->d->flows, port) ? RX_NEXT_RAW : RX_NEXT_DROP;
		}
		count_pl(w, port, CTR_RX_ROCE);
		if (pkt->l3.ipv6)
			count_pl(w, port, CTR_RX_ROCE_IPV6);
		if (unlikely(pkt->dest_qpn == GSI_QPN)) {
			/* GMPs (CM MADs) are the control thread's (gsi.h) */
			if (gsi_check(pkt) != GSI_OK) {
				count_pl(w, port, CTR_RX_GSI_BAD);
				return RX_NEXT_DROP;
			}
			count_pl(w, port, CTR_RX_GSI);
			return RX_NEXT_SLOW;
		}
		return RX_NEXT_ROCE;
	case ROCE_CLASS_ARP:
		count_pl(w, port, CTR_RX_ARP);
		return RX_NEXT_SLOW;
	case ROCE_CLASS_ND:
		count_pl(w, port, CTR_RX_ND);
		return RX_NEXT_SLOW;
	case ROCE_CLASS_ECHO:
		count_pl(w, port, CTR_RX_ICMP_ECHO);
		return RX_NEXT_SLOW;
	case ROCE_CLASS_MALFORMED:
		break;
	case ROCE_CLASS_OTHER:
	default:
		if (unlikely(mcast_port_active(w->d->mcast, port)) && our_vlan &&
		    mcast_is_ctl_frame(f, len)) {
			count_pl(w, port, CTR_RX_MCAST_CTL); /* IGMP/MLD: queries to answer */
			return RX_NEXT_SLOW;
		}
		count_pl(w, port, CTR_RX_OTHER);
		return flow_steer_active(w->d->flows, port) ? RX_NEXT_RAW : RX_NEXT_DROP;
	}
	count_drop(w, port, why);
	return RX_NEXT_DROP;
}

/*
 * classify() of a frame we built and looped back with its record (@p rec,
 * roce_pkt_built()): the record is copied, not parsed again. RX_NEXT_PARSE
 * for anything but a unicast frame to one of the port's GIDs on its VLAN and
 * a QP other than QP1: classify() counts and routes those. @p m NULL: a
 * record queued alone (worker_tx_loop_ref()), whose frame is built here
 * when it is to be parsed (RX_NEXT_DROP, counted, when no mbuf is left).
 */
static enum rx_next
loop_record(struct worker *w, uint16_t port, struct rte_mbuf **m, const struct roce_pkt *rec,
	    struct roce_pkt *pkt)
{
	const struct port *p = &w->d->port[port];

	if (unlikely(roce_pkt_vid(rec) != port_vlan(p) || roce_gid_is_mcast(rec->l3.dgid) ||
		     rec->dest_qpn == GSI_QPN || gid_table_find(&p->gids, rec->l3.dgid) < 0)) {
		/* a frame by reference is built to be parsed */
		if (*m == NULL) {
			*m = loop_frame(w, port, rec, NULL);
			if (*m == NULL) {
				count_pl(w, port, CTR_LOOPBACK_DROPS);
				return RX_NEXT_DROP;
			}
		}
		return RX_NEXT_PARSE;
	}
	*pkt = *rec;
	count_pl(w, port, CTR_RX_ROCE);
	if (pkt->l3.ipv6)
		count_pl(w, port, CTR_RX_ROCE_IPV6);
	return RX_NEXT_ROCE;
}

/* Give @p n parsed frames in w->rx to the engine; frees them. */
static void
deliver_local(struct worker *w, uint16_t n)
{
	struct rte_mbuf *done[WORKER_BURST_MAX];
	uint16_t k = 0, n_done = 0;

	for (uint16_t i = 0; i < n; i++) {
		struct engine_rx *r = &w->rx[i];
		struct qp_slot *qp = worker_qp_slot(w, r->pkt.dest_qpn);

		if (qp == NULL) {
			count_pl(w, r->port, CTR_RX_NO_QP);
			if (r->pkt.opcode == ROCE_OP_CNP)
				count_pl(w, r->port, CTR_RX_CNP_NO_QP);
			__atomic_store_n(&w->no_qp_last[r->port],
					 worker_no_qp_stamp(rte_rdtsc(), r->pkt.dest_qpn),
					 __ATOMIC_RELAXED);
			done[n_done++] = r->m;
			continue;
		}
		ctr_add(&qp->ctr.v[CTR_RX_PACKETS], 1);
		ctr_add(&qp->ctr.v[CTR_RX_BYTES], r->m != NULL ? r->m->pkt_len : r->pkt.frame_len);
		if (r->loopback)
			ctr_add(&qp->ctr.v[CTR_LOOPBACK], 1);
		r->qp = qp;
		if (k != i)
			w->rx[k] = *r;
		k++;
	}
	if (k > 0 && w->engine->rx != NULL)
		w->engine->rx(w, w->rx, k);
	for (uint16_t i = 0; i < k; i++)
		done[n_done++] = w->rx[i].m;
	rte_pktmbuf_free_bulk(done, n_done);
}

/* Free the mbufs of @p n handoff records. */
static void
handoff_free(const struct engine_rx *h, unsigned int n)
{
	struct rte_mbuf *m[64];

	while (n > 0) {
		unsigned int k = RTE_MIN(n, (unsigned int)RTE_DIM(m));

		for (unsigned int i = 0; i < k; i++)
			m[i] = h[i].m;
		rte_pktmbuf_free_bulk(m, k);
		h += k;
		n -= k;
	}
}

/*
 * Hand the parsed frames buffered for @p dst over in one bulk enqueue. The
 * records travel by value: the ring's store-release of its producer tail
 * (and the consumer's load-acquire of it) publishes them, and the frames
 * their payload pointers point into, to the owner.
 */
static void
handoff_flush(struct worker *w, unsigned int dst)
{
	struct rte_ring *r = w->d->worker[dst]->handoff_in[w->index];
	uint16_t n = w->handoff_n[dst];
	unsigned int sent;

	if (n == 0)
		return;
	sent = rte_ring_sp_enqueue_burst_elem(r, w->handoff_buf[dst], sizeof(struct engine_rx), n,
					      NULL);
	ctr_add(&w->ctr.v[CTR_HANDOFF_TX], sent);
	if (sent < n) {
		ctr_add(&w->ctr.v[CTR_HANDOFF_DROPS], n - sent);
		handoff_free(&w->handoff_buf[dst][sent], n - sent);
	}
	w->handoff_n[dst] = 0;
}

/*
 * A frame that arrived in several mbufs (scatter RX: rx_mbuf_size below the
 * frame) becomes one whole-frame mbuf of the port's big_pool, so everything
 * after (the parser, the engine's payload pointers) sees contiguous bytes.
 * One copy per large frame. @return it, or NULL (freed and counted)
 */
static struct rte_mbuf *
rx_linearize(struct worker *w, uint16_t port, struct rte_mbuf *m)
{
	struct rte_mempool *big = w->d->port[port].big_pool;
	struct rte_mbuf *l = big != NULL ? rte_pktmbuf_alloc(big) : NULL;
	uint8_t *dst = l != NULL ? (uint8_t *)rte_pktmbuf_append(l, (uint16_t)m->pkt_len) : NULL;
	uint32_t left = m->pkt_len;

	count_pl(w, port, CTR_RX_MULTISEG);
	if (unlikely(dst == NULL || m->pkt_len > UINT16_MAX)) {
		count_pl(w, port, CTR_RX_MULTISEG_DROPS);
		rte_pktmbuf_free(l);
		rte_pktmbuf_free(m);
		return NULL;
	}
	for (const struct rte_mbuf *s = m; s != NULL && left > 0; s = s->next) {
		uint32_t k = RTE_MIN((uint32_t)s->data_len, left);

		memcpy(dst, rte_pktmbuf_mtod(s, const uint8_t *), k);
		dst += k;
		left -= k;
	}
	l->port = m->port;
	rte_pktmbuf_free(m);
	return l;
}

/*
 * Fan record @p src out to the @p nq QPs @p qpn (nq >= 1): one mbuf
 * reference and one record per QP, each with the QP's own QPN as
 * destination, delivered here (w->rx, @p k records so far) or handed to
 * the QP's lcore like any frame. @return the records now in w->rx
 */
static uint16_t
fan_out(struct worker *w, const struct engine_rx *src, const uint32_t *qpn, uint32_t nq,
	uint16_t k)
{
	rte_mbuf_refcnt_update(src->m, (int16_t)(nq - 1));
	for (uint32_t j = 0; j < nq; j++) {
		unsigned int owner = qpn_split_owner(w->split, qpn[j]);
		struct engine_rx *r;

		if (owner == w->index) {
			r = &w->rx[k++];
		} else {
			r = &w->handoff_buf[owner][w->handoff_n[owner]++];
		}
		*r = *src;
		r->pkt.dest_qpn = qpn[j];
		if (owner != w->index && w->handoff_n[owner] == w->burst)
			handoff_flush(w, owner);
		if (k == w->burst) {
			deliver_local(w, k);
			k = 0;
		}
	}
	return k;
}

/*
 * Fan the burst's @p n multicast frames (w->mc_in) out to the QPs attached
 * to their group on their port (fan_out()). Runs after deliver_local(), so
 * w->rx is free.
 */
static void
rx_mcast(struct worker *w, uint16_t n)
{
	uint16_t k = 0;

	for (uint16_t i = 0; i < n; i++) {
		const struct engine_rx *src = &w->mc_in[i];
		uint32_t qpn[MCAST_MAX_MEMBERS];
		uint32_t nm = mcast_members(w->d->mcast, src->port, src->pkt.l3.dgid, qpn);

		if (nm == 0) {
			count_pl(w, src->port, CTR_RX_MCAST_NO_MEMBER);
			rte_pktmbuf_free(src->m);
			continue;
		}
		ctr_add(&w->port_ctr[src->port].v[CTR_RX_MCAST_DELIVERED], nm);
		ctr_add(&w->ctr.v[CTR_RX_MCAST_DELIVERED], nm);
		k = fan_out(w, src, qpn, nm, k);
	}
	if (k > 0)
		deliver_local(w, k);
}

/*
 * The burst's @p n frames for the flow rules (w->raw_in): each parsed once
 * (flow_parse()) and matched against its port's rules; every QP of the
 * best matching priority gets it (fan_out(), records marked raw). A frame
 * no rule takes stays with the stack, which ignores it (counted already by
 * classify()). Runs after rx_mcast(), so w->rx is free.
 */
static void
rx_raw(struct worker *w, uint16_t n)
{
	uint16_t k = 0;

	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = w->raw_in[i];
		uint16_t port = w->raw_in_port[i];
		uint32_t qpn[FLOW_STEER_MAX_DEST], nq = 0;
		struct flow_key key;

		if (flow_parse(rte_pktmbuf_mtod(m, const uint8_t *), m->data_len, &key) == 0)
			nq = flow_steer_lookup(w->d->flows, port, &key, qpn);
		if (nq == 0) {
			rte_pktmbuf_free(m);
			continue;
		}
		ctr_add(&w->port_ctr[port].v[CTR_RX_RAW], nq);
		ctr_add(&w->ctr.v[CTR_RX_RAW], nq);
		k = fan_out(w, &(struct engine_rx){ .m = m, .port = port,
						    .loopback = w->raw_in_loop[i], .raw = true },
			    qpn, nq, k);
	}
	if (k > 0)
		deliver_local(w, k);
}

/*
 * Classify and dispatch @p n frames. Each frame's port is its m->port
 * (ethdev id); loopback frames carry the port they were looped to.
 * @p raw_only (loopback, or NULL): raw_only[i] marks a RAW_PACKET QP's
 * frame that goes to the port's flow rules only, not to the stack.
 * @p recs (loopback, or NULL): recs[i] is frame i's record (or NULL); a
 * NULL frame is its record alone (worker_tx_loop_ref()).
 * @p ports (loopback, or NULL): ports[i] is frame i's port (daemon index),
 * the one its m->port names when it has an mbuf.
 */
static void
rx_dispatch(struct worker *w, struct rte_mbuf **pkts, uint16_t n, bool loopback,
	    const bool *raw_only, const struct roce_pkt *const *recs, const uint16_t *ports)
{
	struct daemon *d = w->d;
	struct rte_mbuf *slow[WORKER_BURST_MAX], *drop[WORKER_BURST_MAX];
	uint16_t n_slow = 0, n_drop = 0, n_local = 0, n_mc = 0, n_raw = 0;

	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		uint16_t port = ports != NULL ? ports[i] : daemon_port_index(d, m->port);
		struct engine_rx *r = &w->rx[n_local];
		unsigned int owner;

		if (unlikely(port == DAEMON_NO_PORT)) {
			drop[n_drop++] = m;
			continue;
		}
		const struct roce_pkt *rec = recs != NULL ? recs[i] : NULL;
		enum rx_next next;

		if (unlikely(m != NULL && m->nb_segs != 1)) {
			m = rx_linearize(w, port, m);
			if (m == NULL)
				continue;
			rec = NULL; /* its payload pointer was into the chain */
		}
		if (!loopback)
			count_rx_frame(w, port, m);
		/* recs are read here only, before any frame reaches the engine,
		 * whose transmits may reuse their loopback slots */
		next = raw_only != NULL && raw_only[i] ? RX_NEXT_RAW
		       : rec != NULL		       ? loop_record(w, port, &m, rec, &r->pkt)
						       : RX_NEXT_PARSE;
		if (next == RX_NEXT_PARSE)
			next = classify(w, port, m, loopback, &r->pkt);
		switch (next) {
		case RX_NEXT_SLOW:
			slow[n_slow++] = m;
			break;
		case RX_NEXT_ROCE:
			owner = qpn_split_owner(w->split, r->pkt.dest_qpn);
			if (owner == w->index) {
				r->m = m;
				r->port = port;
				r->loopback = loopback;
				r->raw = false; /* the slot may hold a steered frame's record */
				r->qp = NULL;
				n_local++;
			} else {
				/* the record goes with the frame: the owner does not parse it */
				struct engine_rx *h = &w->handoff_buf[owner][w->handoff_n[owner]++];

				h->m = m;
				h->port = port;
				h->loopback = loopback;
				h->raw = false;
				h->qp = NULL;
				h->pkt = r->pkt;
				if (w->handoff_n[owner] == w->burst)
					handoff_flush(w, owner);
			}
			break;
		case RX_NEXT_MCAST:
			w->mc_in[n_mc] = (struct engine_rx){ .m = m, .port = port, .loopback = loopback,
							     .pkt = r->pkt };
			n_mc++;
			break;
		case RX_NEXT_RAW:
			w->raw_in[n_raw] = m;
			w->raw_in_port[n_raw] = port;
			w->raw_in_loop[n_raw++] = loopback;
			break;
		case RX_NEXT_DROP:
		default:
			drop[n_drop++] = m;
			break;
		}
	}
	if (n_slow > 0) {
		unsigned int q = rte_ring_sp_enqueue_burst(w->slow_out, (void **)slow, n_slow, NULL);

		w->wake_control |= q > 0;

		for (unsigned int i = q; i < n_slow; i++)
			count_pl(w, daemon_port_index(d, slow[i]->port), CTR_SLOWPATH_DROPS);
		rte_pktmbuf_free_bulk(&slow[q], n_slow - q);
	}
	if (n_local > 0)
		deliver_local(w, n_local);
	if (n_mc > 0)
		rx_mcast(w, n_mc);
	if (n_raw > 0)
		rx_raw(w, n_raw);
	for (unsigned int o = 0; o < w->n_workers; o++)
		handoff_flush(w, o);
	rte_pktmbuf_free_bulk(drop, n_drop);
}

/*
 * Frames another lcore classified for QPs we own: their records come by
 * value, straight into w->rx; the frame is not parsed again (its ICRC was
 * checked once, by the lcore that received it).
 */
static unsigned int
handoff_receive(struct worker *w)
{
	unsigned int total = 0;

	for (unsigned int s = 0; s < w->n_workers; s++) {
		struct rte_ring *r = w->handoff_in[s];
		uint16_t n;

		if (r == NULL)
			continue;
		n = (uint16_t)rte_ring_sc_dequeue_burst_elem(r, w->rx, sizeof(w->rx[0]), w->burst,
							      NULL);
		ctr_add(&w->ctr.v[CTR_HANDOFF_RX], n);
		if (n > 0)
			deliver_local(w, n);
		total += n;
	}
	return total;
}

static unsigned int
loopback_receive(struct worker *w)
{
	struct rte_mbuf *pkts[WORKER_BURST_MAX];
	bool raw[WORKER_BURST_MAX];
	const struct roce_pkt *recs[WORKER_BURST_MAX];
	uint16_t ports[WORKER_BURST_MAX];
	uint32_t n = RTE_MIN(w->loop_n, (uint32_t)w->burst), k = 0;

	if (n == 0)
		return 0;
	for (uint32_t j = 0; j < n; j++) {
		uint32_t i = (w->loop_head + j) & (WORKER_LOOP_MAX - 1);

		if (w->loop[i] == NULL && !w->loop_has_rec[i])
			continue; /* lost: no mbuf when it had to be built (loop_fill()) */
		pkts[k] = w->loop[i];
		raw[k] = w->loop_raw[i];
		recs[k] = w->loop_has_rec[i] ? &w->loop_rec[i] : NULL;
		ports[k++] = w->loop_port[i];
		/* taken now: its reference lives until the engine has it below */
		if (w->loop_ref[i]) {
			w->loop_ref[i] = false;
			w->loop_n_ref--;
		}
	}
	/* Frames looped back while we deliver these go behind the rest; an
	 * emptied ring starts again at slot 0, whose records are in cache. */
	w->loop_n -= n;
	w->loop_head = w->loop_n != 0 ? w->loop_head + n : 0;
	rx_dispatch(w, pkts, (uint16_t)k, true, raw, recs, ports);
	return n;
}

/* ---- control messages ---- */

void
worker_ctl_run(struct worker *w, struct ctl_msg *m)
{
	struct daemon *d = w->d;
	struct timespec ts;

	WORKER_OWNER_ASSERT(w);
	switch (m->type) {
	case CTL_MSG_PING:
		m->rc = (int32_t)rte_lcore_id();
		break;
	case CTL_MSG_STALL:
		ts.tv_sec = m->u.stall_ms / 1000u;
		ts.tv_nsec = (long)(m->u.stall_ms % 1000u) * 1000000L;
		nanosleep(&ts, NULL);
		m->rc = 0;
		break;
	default:
		m->rc = m->type < CTL_MSG_COUNT && d->ctl_msg_fn != NULL
				? d->ctl_msg_fn(w, m, d->ctl_msg_arg)
				: -ENOTSUP;
		break;
	}
	m->worker = (uint16_t)w->index;
}

/*
 * An event identical to one already waiting adds nothing (a second CQ
 * notification before the first was signalled, the same async event of the
 * same QP incarnation): drop it. Distinct events are bounded by the objects
 * (a CQ notification is the only one an application raises at will, by
 * re-arming; coalesced, there is at most one per CQ), so the spill stays
 * bounded without losing any.
 */
static bool
event_spill_has(const struct worker *w, const struct worker_event *ev)
{
	for (uint32_t i = w->ev_spill_n; i-- > 0;)
		if (memcmp(&w->ev_spill[i], ev, sizeof(*ev)) == 0)
			return true;
	return false;
}

/* Room for one more spilled event: double the spill (cold path: the control thread is behind). */
static bool
event_spill_grow(struct worker *w)
{
	uint32_t cap = w->ev_spill_cap ? 2 * w->ev_spill_cap : WORKER_EVENT_SPILL;
	struct worker_event *v;

	if (w->ev_spill_n < w->ev_spill_cap)
		return true;
	if (cap > WORKER_EVENT_SPILL_MAX)
		return false;
	v = realloc(w->ev_spill, cap * sizeof(*v));
	if (v == NULL)
		return false;
	w->ev_spill = v;
	w->ev_spill_cap = cap;
	return true;
}

void
worker_event_post(struct worker *w, const struct worker_event *ev)
{
	if (w->ev_spill_n == 0 &&
	    rte_ring_sp_enqueue_elem(w->events, (void *)(uintptr_t)ev, sizeof(*ev)) == 0) {
		w->wake_control = true;
		return;
	}
	if (event_spill_has(w, ev)) {
		__atomic_store_n(&w->events_coalesced, w->events_coalesced + 1, __ATOMIC_RELAXED);
		return;
	}
	if (event_spill_grow(w)) {
		w->ev_spill[w->ev_spill_n++] = *ev; /* behind the others: order kept */
		return;
	}
	__atomic_store_n(&w->events_lost, w->events_lost + 1, __ATOMIC_RELAXED);
}

/* Events that waited for room on the event ring. */
static void
event_spill_flush(struct worker *w)
{
	unsigned int k = rte_ring_sp_enqueue_burst_elem(w->events, w->ev_spill, sizeof(w->ev_spill[0]),
							w->ev_spill_n, NULL);

	memmove(w->ev_spill, w->ev_spill + k, (w->ev_spill_n - k) * sizeof(w->ev_spill[0]));
	w->ev_spill_n -= k;
	w->wake_control |= k > 0;
}

static unsigned int
control_receive(struct worker *w)
{
	struct ctl_msg msg[WORKER_CTL_BURST];
	struct rte_mbuf *tx[WORKER_BURST_MAX];
	unsigned int n, ntx = 0;

	/*
	 * Answers first. Room is certain while the control thread keeps at most
	 * WORKER_CTL_RING messages outstanding (ctl_msg.h); should it not be,
	 * the answers wait here and no new message is taken (back-pressure).
	 */
	if (w->ctl_ans_n > 0) {
		unsigned int k = rte_ring_sp_enqueue_burst_elem(w->ctl_out, w->ctl_ans,
								sizeof(w->ctl_ans[0]), w->ctl_ans_n,
								NULL);

		memmove(w->ctl_ans, w->ctl_ans + k, (w->ctl_ans_n - k) * sizeof(w->ctl_ans[0]));
		w->ctl_ans_n -= k;
		w->wake_control |= k > 0;
	}
	if (w->ev_spill_n > 0)
		event_spill_flush(w);
	n = w->ctl_ans_n > 0 ? 0 : rte_ring_sc_dequeue_burst_elem(w->ctl_in, msg, sizeof(msg[0]),
								   RTE_DIM(msg), NULL);
	if (n > 0 && w->loop_n_ref > 0)
		loop_fill_all(w); /* no payload by reference outlives a control message */
	for (unsigned int i = 0; i < n; i++)
		worker_ctl_run(w, &msg[i]);
	if (n > 0) {
		unsigned int k = rte_ring_sp_enqueue_burst_elem(w->ctl_out, msg, sizeof(msg[0]), n,
								NULL);

		memcpy(w->ctl_ans, msg + k, (n - k) * sizeof(msg[0]));
		w->ctl_ans_n = n - k;
		w->wake_control |= k > 0;
	}
	if (w->ctl_tx != NULL) {
		ntx = rte_ring_sc_dequeue_burst(w->ctl_tx, (void **)tx, w->burst, NULL);
		for (unsigned int i = 0; i < ntx; i++) {
			uint16_t port = tx[i]->port; /* daemon port index (worker_ctl_tx) */

			if (port >= w->d->n_ports) {
				rte_pktmbuf_free(tx[i]);
				continue;
			}
			tx[i]->port = w->d->port[port].port_id;
			worker_tx(w, port, tx[i]);
		}
	}
	return n + ntx;
}

int
worker_ctl_send(struct worker *w, struct ctl_msg *m)
{
	/* rte_ring's release on the producer tail publishes the message by value */
	return rte_ring_sp_enqueue_elem(w->ctl_in, m, sizeof(*m)) == 0 ? 0 : -ENOBUFS;
}

unsigned int
worker_ctl_answers(struct worker *w, struct ctl_msg *out, unsigned int n)
{
	return rte_ring_sc_dequeue_burst_elem(w->ctl_out, out, sizeof(out[0]), n, NULL);
}

/* ---- the loop ---- */

void
worker_wake_control(struct worker *w)
{
	struct control_wake *k = &w->d->wake;
	uint64_t one = 1;

	w->wake_control = false;
	/* our ring stores, then the load of sleeping: pairs with control_may_sleep() */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (k->fd < 0 || __atomic_load_n(&k->sleeping, __ATOMIC_RELAXED) == 0 ||
	    __atomic_exchange_n(&k->sleeping, 0, __ATOMIC_RELAXED) == 0)
		return; /* awake, or another worker woke it */
	if (write(k->fd, &one, sizeof(one)) == (ssize_t)sizeof(one))
		ctr_add(&w->ctr.v[CTR_CONTROL_WAKES], 1);
}

uint64_t
worker_idle_sleep_ns(struct worker *w, uint64_t now)
{
	uint64_t ns = w->sleep_ns; /* worker_create() sets it, work resets it */

	if (w->engine->idle_ns != NULL) {
		uint64_t t = w->engine->idle_ns(w, now);

		if (t < ns)
			ns = t;
	}
	return ns;
}

static void
idle_backoff(struct worker *w, uint64_t now)
{
	struct timespec ts;
	uint64_t ns;

	ctr_add(&w->ctr.v[CTR_IDLE_BACKOFFS], 1);
	switch (w->idle) {
	case CONFIG_IDLE_PAUSE:
		rte_pause();
		break;
	case CONFIG_IDLE_YIELD:
		sched_yield();
		break;
	case CONFIG_IDLE_SLEEP:
		/* Work that stopped just now likely resumes soon: stay runnable. */
		if (now - w->last_work_tsc < w->idle_yield_tsc && now >= w->yield_off_until) {
			ctr_add(&w->ctr.v[CTR_IDLE_YIELDS], 1);
			sched_yield();
			if (w->yield_slow_tsc != 0 && rte_rdtsc() - now > w->yield_slow_tsc) {
				ctr_add(&w->ctr.v[CTR_IDLE_YIELDS_SLOW], 1);
				w->yield_off_until = now + w->tsc_hz / 1000 * WORKER_YIELD_PAUSE_MS;
			}
			break;
		}
		ns = worker_idle_sleep_ns(w, now);
		ts.tv_sec = (time_t)(ns / 1000000000u);
		ts.tv_nsec = (long)(ns % 1000000000u);
		nanosleep(&ts, NULL);
		w->sleep_ns = w->sleep_ns >= w->idle_sleep_max_ns / 2 ? w->idle_sleep_max_ns
								     : w->sleep_ns * 2;
		break;
	case CONFIG_IDLE_NONE:
	default:
		break;
	}
}

/*
 * Count a gap since the previous iteration: while an lcore does not poll,
 * its QPs neither answer nor retransmit, and a peer whose retry budget is
 * shorter than the gap fails with RETRY_EXC_ERR (doc/architecture.md 15).
 */
static void
count_stall(struct worker *w, uint64_t now)
{
	uint64_t gap = now - w->last_poll_tsc;

	if (w->last_poll_tsc != 0 && now > w->last_poll_tsc && gap > w->stall_tsc) {
		uint64_t us = (uint64_t)((unsigned __int128)gap * 1000000u / (w->tsc_hz ? w->tsc_hz : 1));

		ctr_add(&w->ctr.v[CTR_STALLS], 1);
		if (gap > w->stall_long_tsc)
			ctr_add(&w->ctr.v[CTR_STALLS_LONG], 1);
		if (us > w->ctr.v[CTR_STALL_MAX_US])
			__atomic_store_n(&w->ctr.v[CTR_STALL_MAX_US], us, __ATOMIC_RELAXED);
	}
	w->last_poll_tsc = now;
}

unsigned int
worker_poll(struct worker *w, uint64_t now)
{
	struct daemon *d = w->d;
	struct rte_mbuf *pkts[WORKER_BURST_MAX];
	unsigned int work = 0;

	WORKER_OWNER_ASSERT(w);
	ctr_add(&w->ctr.v[CTR_POLLS], 1);
	count_stall(w, now);
	for (uint16_t i = 0; i < w->n_rxq; i++) {
		uint16_t port = w->rx_port[i];
		uint16_t n;

		if (unlikely(!port_rx_on(&d->port[port])))
			continue;   /* not started (memif client without a server, restarting) */
		n = rte_eth_rx_burst(d->port[port].port_id, (uint16_t)w->index, pkts,
					      w->burst);

		if (n > 0) {
			rx_dispatch(w, pkts, n, false, NULL, NULL, NULL);
			work += n;
		}
	}
	work += handoff_receive(w);
	work += loopback_receive(w);
	work += control_receive(w);
	if (w->engine->poll != NULL)
		work += w->engine->poll(w, now);
	if (now - w->tx_deadline >= w->tx_drain_tsc || work == 0) {
		worker_tx_flush(w);
		w->tx_deadline = now;
	}
	if (w->wake_control)
		worker_wake_control(w);
	if (work == 0 && w->loop_n == 0) {
		if (w->idle != CONFIG_IDLE_NONE && ++w->empty_polls > w->idle_polls)
			idle_backoff(w, now);
	} else {
		w->empty_polls = 0;
		w->last_work_tsc = now;
		w->sleep_ns = w->idle_sleep_ns;
		/* the lcore's cost: an idle iteration and its backoff do not count */
		ctr_add(&w->ctr.v[CTR_BUSY_NS],
			(uint64_t)((unsigned __int128)(rte_rdtsc() - now) * w->ns_per_tsc_q32 >> 32));
	}
	return work;
}

int
worker_main(void *arg)
{
	struct worker *w = arg;
	struct daemon *d = w->d;
	int rc = 0;

	/* launched: this lcore owns the worker until it returns (worker.h) */
	WORKER_OWNER_SET(w, rte_lcore_id());
	/*
	 * A sleeping lcore answers late by its sleep plus the timer slack, 50 us
	 * by default for a normal thread: more than the 20 us sleep itself.
	 */
	if (w->timer_slack_ns != 0 && prctl(PR_SET_TIMERSLACK, (unsigned long)w->timer_slack_ns) != 0)
		fprintf(stderr, "roce-daemon: worker %u: PR_SET_TIMERSLACK: %s\n", w->index,
			strerror(errno));
	if (w->engine->lcore_init != NULL) {
		rc = w->engine->lcore_init(w);
		if (rc != 0) {
			fprintf(stderr, "roce-daemon: worker %u: engine %s: init failed: %s\n",
				w->index, w->engine->name, strerror(rc < 0 ? -rc : rc));
			daemon_request_stop(d);
			WORKER_OWNER_SET(w, rte_get_main_lcore());
			return rc;
		}
	}
	qsbr_online(w);
	while (!daemon_stopping(d)) {
		worker_poll(w, rte_rdtsc());
		qsbr_quiescent(w);
	}
	qsbr_offline(w);
	/* Deliver what is still buffered, then stop the engine. */
	worker_tx_flush(w);
	if (w->engine->lcore_fini != NULL)
		w->engine->lcore_fini(w);
	worker_tx_flush(w);
	WORKER_OWNER_SET(w, rte_get_main_lcore());
	return 0;
}

/* ---- creation ---- */

static struct rte_ring *
ring_new(const char *name, unsigned int esize, unsigned int count, int socket, char *err,
	 size_t errlen)
{
	struct rte_ring *r = rte_ring_create_elem(name, esize, count, socket,
						  RING_F_SP_ENQ | RING_F_SC_DEQ);

	if (r == NULL)
		snprintf(err, errlen, "cannot create ring %s: %s", name, rte_strerror(rte_errno));
	return r;
}

struct worker *
worker_create(struct daemon *d, unsigned int index, unsigned int lcore_id,
	      const struct engine_ops *engine, char *err, size_t errlen)
{
	const struct config_daemon *cd = &d->cfg.daemon;
	int socket = (int)rte_lcore_to_socket_id(lcore_id);
	char name[RTE_RING_NAMESIZE];
	struct worker *w;

	w = rte_zmalloc_socket("roce_worker", sizeof(*w), RTE_CACHE_LINE_SIZE, socket);
	if (w == NULL) {
		snprintf(err, errlen, "worker %u: out of memory", index);
		return NULL;
	}
	w->d = d;
	w->index = index;
	w->n_workers = d->n_workers;
	w->split = qpn_split_of(d->n_workers);
	w->lcore_id = lcore_id;
	WORKER_OWNER_SET(w, rte_lcore_id());
	w->burst = (uint16_t)RTE_MIN(cd->burst, WORKER_BURST_MAX);
	w->tsc_hz = rte_get_tsc_hz();
	w->ns_per_tsc_q32 = (uint64_t)(((unsigned __int128)1000000000u << 32) / (w->tsc_hz ? w->tsc_hz : 1));
	w->tx_drain_tsc = w->tsc_hz / 1000000 * cd->tx_flush_us;
	w->idle = (enum config_idle)cd->idle;
	w->idle_polls = cd->idle_polls;
	w->idle_yield_tsc = w->tsc_hz / 1000000 * cd->idle_yield_us;
	w->yield_slow_tsc = w->tsc_hz / 1000000 * cd->idle_yield_slow_us;
	w->idle_sleep_ns = cd->idle_sleep_us * 1000u;
	w->idle_sleep_max_ns = (cd->idle_sleep_max_us > cd->idle_sleep_us ? cd->idle_sleep_max_us
									  : cd->idle_sleep_us) * 1000u;
	w->sleep_ns = w->idle_sleep_ns;
	w->timer_slack_ns = cd->idle_timer_slack_ns;
	w->stall_tsc = w->tsc_hz / 1000000 * ((uint64_t)WORKER_STALL_US + w->idle_sleep_max_ns / 1000u);
	w->stall_long_tsc = w->tsc_hz / 1000000 * ((uint64_t)WORKER_STALL_LONG_US + w->idle_sleep_max_ns / 1000u);
	w->engine = engine != NULL ? engine : &engine_none;
	for (unsigned int p = 0; p < d->n_ports; p++) {
		if (index < d->port[p].n_rxq)
			w->rx_port[w->n_rxq++] = (uint16_t)p;
		w->txbuf[p] = rte_zmalloc_socket("roce_txbuf", RTE_ETH_TX_BUFFER_SIZE(w->burst), 0,
						 socket);
		if (w->txbuf[p] == NULL) {
			snprintf(err, errlen, "worker %u: out of memory", index);
			goto fail;
		}
		rte_eth_tx_buffer_init(w->txbuf[p], w->burst);
		w->txcb[p].w = w;
		w->txcb[p].port = (uint16_t)p;
		rte_eth_tx_buffer_set_err_callback(w->txbuf[p], tx_drop_cb, &w->txcb[p]);
	}
	for (unsigned int o = 0; o < d->n_workers; o++) {
		if (o == index)
			continue;
		w->handoff_buf[o] = rte_malloc_socket("roce_handoff_buf",
						      (size_t)w->burst * sizeof(struct engine_rx),
						      RTE_CACHE_LINE_SIZE, socket);
		if (w->handoff_buf[o] == NULL) {
			snprintf(err, errlen, "worker %u: out of memory", index);
			goto fail;
		}
	}
	w->n_qp_slots = (cd->max_qps + WORKER_QPN_SPARE) / d->n_workers + 1;
	w->qp = rte_zmalloc_socket("roce_qp_slots", (size_t)w->n_qp_slots * sizeof(w->qp[0]),
				   RTE_CACHE_LINE_SIZE, socket);
	if (w->qp == NULL) {
		snprintf(err, errlen, "worker %u: no memory for %u QP slots", index, w->n_qp_slots);
		goto fail;
	}
	snprintf(name, sizeof(name), "roce_slow%u", index);
	w->slow_out = ring_new(name, sizeof(void *), WORKER_SLOW_RING, socket, err, errlen);
	if (w->slow_out == NULL)
		goto fail;
	snprintf(name, sizeof(name), "roce_nreq%u", index);
	w->neigh_req = ring_new(name, sizeof(struct worker_neigh_req), 64, socket, err, errlen);
	if (w->neigh_req == NULL)
		goto fail;
	snprintf(name, sizeof(name), "roce_ctl%u", index);
	w->ctl_in = ring_new(name, sizeof(struct ctl_msg), WORKER_CTL_RING, socket, err, errlen);
	if (w->ctl_in == NULL)
		goto fail;
	snprintf(name, sizeof(name), "roce_ctlo%u", index);
	w->ctl_out = ring_new(name, sizeof(struct ctl_msg), WORKER_CTL_RING, socket, err, errlen);
	if (w->ctl_out == NULL)
		goto fail;
	snprintf(name, sizeof(name), "roce_ev%u", index);
	w->events = ring_new(name, sizeof(struct worker_event), WORKER_EVENT_RING, socket, err,
			     errlen);
	if (w->events == NULL)
		goto fail;
	if (index == 0) {
		w->ctl_tx = ring_new("roce_ctltx", sizeof(void *), WORKER_SLOW_RING, socket, err,
				     errlen);
		if (w->ctl_tx == NULL)
			goto fail;
	}
	return w;
fail:
	worker_free(w);
	return NULL;
}

int
worker_connect(struct daemon *d, char *err, size_t errlen)
{
	for (unsigned int dst = 0; dst < d->n_workers; dst++) {
		struct worker *w = d->worker[dst];

		for (unsigned int src = 0; src < d->n_workers; src++) {
			char name[RTE_RING_NAMESIZE];

			if (src == dst)
				continue;
			snprintf(name, sizeof(name), "roce_ho%u_%u", src, dst);
			w->handoff_in[src] = ring_new(name, sizeof(struct engine_rx),
						      d->cfg.daemon.handoff_ring,
						      (int)rte_lcore_to_socket_id(w->lcore_id), err,
						      errlen);
			if (w->handoff_in[src] == NULL)
				return -1;
		}
	}
	return 0;
}

/* Free a ring of mbufs and what is still in it. */
static void
ring_drain_free(struct rte_ring *r)
{
	void *obj[64];
	unsigned int n;

	if (r == NULL)
		return;
	while ((n = rte_ring_sc_dequeue_burst(r, obj, RTE_DIM(obj), NULL)) > 0)
		rte_pktmbuf_free_bulk((struct rte_mbuf **)obj, n);
	rte_ring_free(r);
}

/* Free a handoff ring and the frames of the records still in it. */
static void
handoff_drain_free(struct rte_ring *r)
{
	struct engine_rx h[16];
	unsigned int n;

	if (r == NULL)
		return;
	while ((n = rte_ring_sc_dequeue_burst_elem(r, h, sizeof(h[0]), RTE_DIM(h), NULL)) > 0)
		handoff_free(h, n);
	rte_ring_free(r);
}

void
worker_free(struct worker *w)
{
	if (w == NULL)
		return;
	for (unsigned int s = 0; s < WORKER_MAX; s++)
		handoff_drain_free(w->handoff_in[s]);
	for (unsigned int o = 0; o < WORKER_MAX; o++) {
		if (w->handoff_buf[o] != NULL)
			handoff_free(w->handoff_buf[o], w->handoff_n[o]);
		rte_free(w->handoff_buf[o]);
	}
	for (uint32_t k = 0; k < w->loop_n; k++)
		rte_pktmbuf_free(w->loop[(w->loop_head + k) & (WORKER_LOOP_MAX - 1)]);
	ring_drain_free(w->slow_out);
	ring_drain_free(w->ctl_tx);
	rte_ring_free(w->ctl_in); /* messages by value: nothing to free */
	rte_ring_free(w->ctl_out);
	rte_ring_free(w->neigh_req);
	rte_ring_free(w->events);
	free(w->ev_spill);
	for (unsigned int p = 0; p < CONFIG_MAX_PORTS; p++) {
		if (w->txbuf[p] != NULL) {
			rte_pktmbuf_free_bulk(w->txbuf[p]->pkts, w->txbuf[p]->length);
			rte_free(w->txbuf[p]);
		}
	}
	rte_free(w->qp);
	rte_free(w);
}
