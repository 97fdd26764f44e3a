/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Poll-mode workers: one per worker lcore, shaped like DPDK examples/l2fwd.
 *
 * Each iteration of a worker:
 *   rx burst from its RX queue of every port
 *   -> classify (ARP/ND/echo -> control thread; UDP 4791 -> roce_parse();
 *      the rest is ignored and counted)
 *   -> dispatch by destination QPN: the owner lcore is qpn % n_workers; frames
 *      for another lcore are buffered per destination and handed over in
 *      batches through single-producer/single-consumer rings
 *   -> the transport engine's rx hook with the frames for QPs this lcore owns
 *   -> loopback queue, frames from the control thread, control messages
 *   -> the engine's poll hook (send queues, timers)
 *   -> buffered TX, flushed when full or on a TSC deadline
 *   -> idle backoff after a run of empty polls.
 *
 * Ownership: a worker's struct, its QP table, its TX buffers and its ring
 * ends are touched only by its lcore, except where a field says otherwise.
 * The control thread never touches a QP: it sends a control message by
 * value (ctl_msg.h) on the worker's ctl_in ring, the owner runs it between
 * bursts and answers on ctl_out; nobody waits for anybody.
 *
 * Rings (all rte_ring, RING_F_SP_ENQ | RING_F_SC_DEQ; rte_ring's own
 * release/acquire on head/tail publishes the mbuf contents and messages):
 *   handoff_in[s]  worker s -> this worker: struct engine_rx by value (the
 *                  mbuf and its parsed record: the frame is not parsed again)
 *   slow_out       this worker -> control: ARP/ND/echo mbufs
 *   neigh_req      this worker -> control: struct worker_neigh_req
 *   ctl_in         control -> this worker: struct ctl_msg (by value)
 *   ctl_out        this worker -> control: struct ctl_msg, the answers
 *   ctl_tx         control -> this worker: frames to transmit (worker 0 only)
 *   events         this worker -> control: struct worker_event (engine events)
 *   capture        this worker -> control: pcapng copies (--pcap only)
 */
#ifndef ROCE_DAEMON_WORKER_H
#define ROCE_DAEMON_WORKER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <rte_branch_prediction.h>
#include <rte_common.h>
#include <rte_lcore.h>

#include "config.h"
#include "counters.h"
#include "ctl_msg.h"
#include "daemon_state.h"
#include "roce.h"

#define WORKER_BURST_MAX 256u    /**< largest configurable burst */
#define WORKER_LOOP_MAX 512u     /**< loopback frames queued per worker (a power of two) */
#define WORKER_SLOW_RING 512u    /**< slow-path ring slots */
#define WORKER_CTL_RING 256u     /**< control message ring slots (and answer ring slots) */
#define WORKER_CTL_BURST 8u      /**< control messages run per poll */
#define WORKER_QPN_SPARE 16u     /**< QPNs beyond max_qps the tables accept */
#define WORKER_STALL_US 10000u   /**< loop gap (beyond the idle sleep) counted as a stall */
/*
 * A sched_yield() that returns idle_yield_slow_us late means a thread on our
 * CPU that does not yield (it spins) kept the CPU for its time slice:
 * yielding then costs a slice, while a sleeping worker preempts such a
 * thread when it wakes. So the worker sleeps instead of yielding for
 * WORKER_YIELD_PAUSE_MS.
 */
#define WORKER_YIELD_PAUSE_MS 100u
#define WORKER_STALL_LONG_US 200000u /**< a stall a peer's retries may not survive */

struct rte_mbuf;
struct rte_ring;
struct rte_eth_dev_tx_buffer;
struct daemon;
struct worker;

/** A QP as the dataplane sees it: the engine's object and its counters. */
struct qp_slot {
	uint32_t qpn;           /**< written by the owner; read by telemetry (relaxed) */
	void *engine_qp;        /**< NULL: no QP here */
	struct ctr_set ctr;
};

/**
 * A parsed RoCE frame for a QP this lcore owns, as the engine receives it;
 * or (raw) a whole frame the port's flow rules steered to a RAW_PACKET QP.
 */
struct engine_rx {
	/** the frame; the worker frees it after rx() returns. NULL: a looped
	 *  back record queued alone (worker_tx_loop_ref()) */
	struct rte_mbuf *m;
	struct qp_slot *qp;     /**< never NULL: frames for missing QPs are dropped before */
	uint16_t port;          /**< daemon port index it arrived on */
	bool loopback;          /**< came through the loopback path (ICRC not checked) */
	/**
	 * a flow rule's copy for RAW_PACKET QP pkt.dest_qpn: m is the whole
	 * frame (one segment) and the rest of pkt is zero (flow_steer.h)
	 */
	bool raw;
	struct roce_pkt pkt;    /**< parsed record; payload points into m */
};
/* handoff rings carry struct engine_rx by value (rte_ring elements: 4-byte multiple) */
_Static_assert(sizeof(struct engine_rx) % 4 == 0, "engine_rx is a ring element");

/**
 * The transport engine's per-lcore hooks. Every hook runs on the worker's
 * lcore; any may be NULL.
 */
struct engine_ops {
	const char *name;
	/** Create per-lcore state (timer wheel, QP objects) in w->engine. @return 0 or -errno */
	int (*lcore_init)(struct worker *w);
	void (*lcore_fini)(struct worker *w);
	/**
	 * Frames for QPs this lcore owns. The engine copies what it needs (or
	 * takes a reference with rte_mbuf_refcnt_update()); the worker frees
	 * every m afterwards.
	 */
	void (*rx)(struct worker *w, struct engine_rx *pkts, uint16_t n);
	/**
	 * Send queues, timers, completions. @return units of work done (0: idle).
	 * Frames go out through worker_tx().
	 */
	unsigned int (*poll)(struct worker *w, uint64_t now_tsc);
	/**
	 * Nanoseconds from @p now_tsc until the engine needs the lcore without
	 * new input (its next timer: a retransmission, a paced send, a DCQCN
	 * step); UINT64_MAX: nothing armed. An idle lcore sleeps no longer.
	 */
	uint64_t (*idle_ns)(struct worker *w, uint64_t now_tsc);
};

/** The engine used when none is installed: counts frames for unknown QPs. */
extern const struct engine_ops engine_none;

/** Neighbour resolution request, worker -> control (20 bytes: rte_ring element). */
struct worker_neigh_req {
	uint16_t port;
	uint16_t pad;
	uint8_t ip[16];
};

/**
 * An event of the engine for the control thread (which tells the
 * application: async events, CQ notifications). 16 bytes: rte_ring element.
 */
struct worker_event {
	uint8_t type;       /**< engine specific (engine_xport: enum xport_event_type) */
	uint8_t code;       /**< engine specific (async event or error code) */
	uint16_t worker;    /**< index of the worker that raised it */
	uint32_t handle;    /**< the object: CQ/SRQ handle, or the QP's slot */
	uint32_t qpn;       /**< QP events: the QPN; otherwise UINT32_MAX */
	uint32_t cookie;    /**< QP events: the cookie the QP was created with (stale-event check) */
};

#define WORKER_EVENT_RING 1024u
#define WORKER_EVENT_SPILL 1024u  /**< first size of the spill (events kept while the ring is full) */
/** Most events the spill grows to (16 MiB); distinct events are bounded far below by the tables. */
#define WORKER_EVENT_SPILL_MAX (1u << 20)

/**
 * The QPN split of the packet path: owner qpn % n and slot qpn / n with
 * multiplications, not a DIV (one took 13-26 % of the samples of the
 * functions that route each loopback frame; doc/benchmarks.md, session 21).
 * Lemire, Kaser and Kurz, "Faster remainder by direct computation" (2019):
 * with m = floor((2^64 - 1) / n) + 1, for every 32-bit a and 2 <= n < 2^32,
 * a % n = ((m * a mod 2^64) * n) >> 64 and a / n = (m * a) >> 64. For n = 1
 * m wraps to 0, so the helpers take that case apart.
 */
struct qpn_split {
	uint64_t m; /**< floor((2^64 - 1) / n) + 1 (0 for n = 1) */
	uint32_t n; /**< workers, >= 1 */
};

/** The split for @p n_workers (>= 1). */
static inline struct qpn_split
qpn_split_of(uint32_t n_workers)
{
	return (struct qpn_split){ .m = UINT64_MAX / n_workers + 1, .n = n_workers };
}

/** qpn % n: the worker owning @p qpn, as worker_of_qpn(). */
static inline uint32_t
qpn_split_owner(struct qpn_split s, uint32_t qpn)
{
	return s.n == 1 ? 0 : (uint32_t)(((unsigned __int128)(s.m * qpn) * s.n) >> 64);
}

/** qpn / n: the slot of @p qpn in its owner's QP table. */
static inline uint32_t
qpn_split_slot(struct qpn_split s, uint32_t qpn)
{
	return s.n == 1 ? qpn : (uint32_t)(((unsigned __int128)s.m * qpn) >> 64);
}

/** One worker. Cache-aligned; allocated on the lcore's socket. */
struct worker {
	/* read-only after worker_create() */
	struct daemon *d;
	unsigned int index;             /**< 0..n_workers-1: owns QPNs with qpn % n == index */
	unsigned int n_workers;
	struct qpn_split split;         /**< qpn % n_workers and / n_workers on the packet path */
	unsigned int lcore_id;
	uint16_t n_rxq;                 /**< ports whose RX queue `index` we poll */
	uint16_t rx_port[CONFIG_MAX_PORTS];
	uint16_t burst;
	uint64_t tx_drain_tsc;          /**< tx_flush_us in TSC cycles */
	uint32_t idle_polls;
	uint32_t idle_sleep_ns;         /**< the first idle sleep (idle_sleep_us) */
	uint32_t idle_sleep_max_ns;     /**< the longest (idle_sleep_max_us) */
	uint32_t timer_slack_ns;  /**< PR_SET_TIMERSLACK of the lcore thread */
	enum config_idle idle;
	const struct engine_ops *engine;

	/* rings; see the file comment for who produces and consumes */
	struct rte_ring *handoff_in[WORKER_MAX];
	struct rte_ring *slow_out;
	struct rte_ring *neigh_req;
	struct rte_ring *ctl_in;
	struct rte_ring *ctl_out;
	struct rte_ring *ctl_tx;
	struct rte_ring *events;
	struct rte_ring *capture;       /**< NULL unless capturing */
	struct rte_mempool *capture_pool;

#ifndef NDEBUG
	/**
	 * Debug builds: the lcore that owns this worker's QP table and engine
	 * QPs now (WORKER_OWNER_ASSERT). The creating thread, worker_main()'s
	 * lcore while it runs, the thread that joined the workers once they
	 * stopped (daemon_stop_workers()). Relaxed loads and stores: a hand-over
	 * happens at a launch or a join, which order it already.
	 */
	unsigned int owner_lcore;
#endif

	/* owner-only state */
	void *engine_ctx;               /**< the engine's per-lcore state */
	struct rte_eth_dev_tx_buffer *txbuf[CONFIG_MAX_PORTS];
	struct worker_txcb {
		struct worker *w;
		uint16_t port;
	} txcb[CONFIG_MAX_PORTS];       /**< context of the TX-drop callback */
	uint64_t tx_deadline;
	uint32_t empty_polls;
	bool wake_control;              /**< this iteration passed something to the control thread */
	uint32_t sleep_ns;              /**< the next idle sleep: doubles per sleep, reset by work */
	uint64_t idle_yield_tsc;        /**< idle = sleep: yield this long after the last work */
	uint64_t last_work_tsc;         /**< `now` of the last poll that found work */
	uint64_t yield_off_until;       /**< no yield phase before this TSC (a yield was slow) */
	uint64_t yield_slow_tsc;        /**< a yield this long was slow; 0: never */
	uint64_t last_poll_tsc;         /**< `now` of the previous worker_poll() (0: none yet) */
	uint64_t stall_tsc;             /**< a longer gap counts in CTR_STALLS (10 ms + longest idle sleep) */
	uint64_t stall_long_tsc;        /**< ... and in CTR_STALLS_LONG (200 ms + longest idle sleep) */
	uint64_t tsc_hz;
	uint64_t ns_per_tsc_q32;         /**< 2^32 ns per TSC cycle (CTR_BUSY_NS) */
	/** frames for worker o's QPs, with their records, until the burst's end:
	 *  `burst` records each (NULL for o == index) */
	struct engine_rx *handoff_buf[WORKER_MAX];
	uint16_t handoff_n[WORKER_MAX];
	/** the loopback queue: a ring of loop_n frames from slot loop_head on
	 *  (index & (WORKER_LOOP_MAX - 1)), delivered by the next polls */
	struct rte_mbuf *loop[WORKER_LOOP_MAX];
	/** loop[i] is a RAW_PACKET QP's frame for the port's flow rules only (worker_tx_raw()) */
	bool loop_raw[WORKER_LOOP_MAX];
	/** loop_rec[i] is loop[i]'s record (worker_tx_loop_built()): it is not parsed */
	bool loop_has_rec[WORKER_LOOP_MAX];
	struct roce_pkt loop_rec[WORKER_LOOP_MAX];
	/** slot i is a frame by reference (worker_tx_loop_ref()): loop[i] is
	 *  NULL and loop_rec[i].payload points into the sender's MR. loop[i]
	 *  is NULL too for a record without payload; NULL without a record:
	 *  lost (no mbuf when it had to be built) */
	bool loop_ref[WORKER_LOOP_MAX];
	uint16_t loop_port[WORKER_LOOP_MAX]; /**< slot i's port (daemon index) */
	uint32_t loop_n_ref;            /**< slots with loop_ref set */
	uint32_t loop_head;
	uint32_t loop_n;
	struct engine_rx rx[WORKER_BURST_MAX];
	struct engine_rx mc_in[WORKER_BURST_MAX]; /**< a burst's multicast frames (rx_mcast()) */
	struct rte_mbuf *raw_in[WORKER_BURST_MAX]; /**< a burst's frames for the flow rules (rx_raw()) */
	uint16_t raw_in_port[WORKER_BURST_MAX];
	bool raw_in_loop[WORKER_BURST_MAX];
	struct ctl_msg ctl_ans[WORKER_CTL_BURST]; /**< answers ctl_out had no room for */
	uint32_t ctl_ans_n;
	struct worker_event *ev_spill; /**< events the ring had no room for (malloc, grows) */
	uint32_t ev_spill_n;
	uint32_t ev_spill_cap;
	/** events lost: spill at WORKER_EVENT_SPILL_MAX or out of memory (relaxed store by this lcore, any thread reads) */
	uint64_t events_lost;
	/** events dropped as identical to one already waiting in the spill (same reader rules) */
	uint64_t events_coalesced;
	/** QPs this lcore owns, indexed by qpn / n_workers; fixed at start-up. */
	struct qp_slot *qp;
	uint32_t n_qp_slots;

	/* counters: written by this lcore only (counters.h) */
	struct ctr_set ctr;
	struct ctr_set port_ctr[CONFIG_MAX_PORTS];
	/**
	 * Per port, the last frame counted in rx_no_qp: worker_no_qp_stamp()
	 * (TSC with the low 24 bits cleared | destination QPN). Relaxed store by
	 * this lcore, relaxed load by telemetry; 0: none yet.
	 */
	uint64_t no_qp_last[CONFIG_MAX_PORTS];
} __rte_cache_aligned;

/**
 * @name Ownership checks (debug builds)
 *
 * WORKER_OWNER_ASSERT(w) in an entry point that touches w's QP table or an
 * engine QP attached to it aborts unless rte_lcore_id() is w's owner lcore
 * (worker.owner_lcore); every QP of a worker is owned by the worker's owner.
 * WORKER_OWNER_SET(w, lcore) hands the worker over. With NDEBUG both compile
 * to nothing. A thread that is not an EAL lcore has rte_lcore_id()
 * LCORE_ID_ANY, so such threads are one identity to the check.
 * @{
 */
#ifndef NDEBUG
/** Report that @p fn touched @p w off its owner lcore, then abort(). */
__rte_noreturn void worker_owner_fail(const struct worker *w, const char *fn);

#define WORKER_OWNER_ASSERT(w)                                                              \
	do {                                                                                \
		if (unlikely(rte_lcore_id() !=                                              \
			     __atomic_load_n(&(w)->owner_lcore, __ATOMIC_RELAXED)))         \
			worker_owner_fail((w), __func__);                                   \
	} while (0)
#define WORKER_OWNER_SET(w, lcore) __atomic_store_n(&(w)->owner_lcore, (lcore), __ATOMIC_RELAXED)
#else
#define WORKER_OWNER_ASSERT(w) do { } while (0)
#define WORKER_OWNER_SET(w, lcore) do { } while (0)
#endif
/** @} */

/** An rx_no_qp record (worker.no_qp_last): @p tsc at 2^24-cycle resolution, then @p qpn. */
static inline uint64_t
worker_no_qp_stamp(uint64_t tsc, uint32_t qpn)
{
	return (tsc & ~(uint64_t)ROCE_QPN_MASK) | (qpn & ROCE_QPN_MASK);
}

/** @return the index of the worker owning @p qpn. */
static inline unsigned int
worker_of_qpn(uint32_t qpn, unsigned int n_workers)
{
	return qpn % n_workers;
}

/**
 * Create worker @p index (rings, TX buffers, QP table) for lcore @p lcore_id.
 * Rings between workers are connected by worker_connect(). The calling
 * thread owns the worker until worker_main() runs.
 * @return the worker, or NULL with a message in @p err
 */
struct worker *worker_create(struct daemon *d, unsigned int index, unsigned int lcore_id,
			     const struct engine_ops *engine, char *err, size_t errlen);

/** Create the handoff rings between every pair of workers of @p d. @return 0 or -1 */
int worker_connect(struct daemon *d, char *err, size_t errlen);

/** Free a worker (after it stopped). Frees queued mbufs. */
void worker_free(struct worker *w);

/**
 * lcore entry point (rte_eal_remote_launch): takes the worker over (its owner
 * lcore is this one), engine init, loop until stop, flush; on return the
 * owner is the main lcore, until the thread that joins the worker takes it
 * (daemon_stop_workers()).
 */
int worker_main(void *arg);

/**
 * One iteration of the loop, for worker_main() and for tests that drive a
 * worker from their own thread (its owner: asserted in debug builds).
 * @return units of work done (0: idle)
 */
unsigned int worker_poll(struct worker *w, uint64_t now_tsc);

/**
 * The length of the worker's next idle sleep (idle = sleep, past the yield
 * phase): idle_sleep_us after work, doubled by each sleep up to
 * idle_sleep_max_us, and never past the engine's next timer (engine_ops
 * idle_ns). Each wake-up of a sleeping thread costs a context switch, which
 * a paravirtualised guest pays dearly (doc/architecture.md "Idle").
 */
uint64_t worker_idle_sleep_ns(struct worker *w, uint64_t now_tsc);

/**
 * End the control thread's wait if it may be blocking (daemon_state.h
 * struct control_wake): called by worker_poll() after an iteration that
 * put something on a ring the control thread reads. Clears wake_control.
 */
void worker_wake_control(struct worker *w);

/** Send everything buffered now. */
void worker_tx_flush(struct worker *w);

/**
 * Owner only: queue frame @p m for port @p port_idx. A frame whose
 * destination MAC is one of our ports takes the loopback path (delivered to
 * that port's receive path without the NIC). Consumes @p m.
 */
void worker_tx(struct worker *w, uint16_t port_idx, struct rte_mbuf *m);

/**
 * @return the index of our port a frame to @p dmac loops back to (a unicast
 *         MAC of one of our ports, daemon_find_mac()), or -1
 */
int worker_local_port(const struct worker *w, const uint8_t dmac[6]);

/**
 * worker_tx() of a frame @p m the engine built from @p built (by
 * roce_build_gather_local(): no ICRC) to port @p local, one of ours
 * (worker_local_port()), while nothing is captured: queued for the loopback
 * with the record roce_pkt_built() makes, so that the receive path does not
 * parse it back (a frame is parsed once; this one never). Consumes @p m.
 */
void worker_tx_loop_built(struct worker *w, uint16_t port_idx, uint16_t local,
			  struct rte_mbuf *m, const struct roce_pkt *built);

/**
 * A frame of @p len bytes (roce_frame_len()) the engine would build from
 * @p built for port @p local, as worker_tx_loop_built(), queued by
 * reference instead: no mbuf and nothing written; the loopback queue holds
 * the record, whose payload is @p payload (NULL: a frame without payload,
 * which then refers to nothing). That memory must stay valid and
 * the message's until the frame is received or the next control message
 * (an RC request's or READ response's registered memory,
 * xport_frame.seg_mr). The frame is built from the record, in an mbuf of
 * port @p local's pool with a copy of the payload, before a control message
 * runs and before anything parses it (doc/architecture.md section 6).
 * @return false, with nothing queued, when the frame cannot go so: a QP of
 *         another lcore (a reference never leaves this one), a capture
 *         running, a record roce_pkt_built() refuses or whose payload is not
 *         @p payload's, or a frame larger than the pool's mbufs; the caller
 *         then builds it. true: queued, or
 *         dropped and counted on a full queue (CTR_LOOPBACK_DROPS).
 */
bool worker_tx_loop_ref(struct worker *w, uint16_t port_idx, uint16_t local,
			const struct roce_pkt *built, const uint8_t *payload, size_t len);

/**
 * Owner only: queue whole frame @p m a RAW_PACKET QP sent, for port
 * @p port_idx, as worker_tx() does; when the port has flow rules and the
 * frame is not for one of our own MACs (which the loopback path takes
 * anyway), a copy goes through the port's rules too (flow_steer.h
 * "Transmit"). Consumes @p m.
 */
void worker_tx_raw(struct worker *w, uint16_t port_idx, struct rte_mbuf *m);

/**
 * Owner only: @p n mbufs from port @p port_idx's pool into @p m, in one bulk
 * get when the pool has them, else one by one.
 * @return how many were allocated (the first ones of @p m).
 */
unsigned int worker_tx_alloc(struct worker *w, uint16_t port_idx, struct rte_mbuf **m,
			     unsigned int n);

/** Owner only: the slot of @p qpn, or NULL if the QPN is outside the table or not ours. */
struct qp_slot *worker_qp_slot(struct worker *w, uint32_t qpn);

/**
 * Owner only (asserted in debug builds): attach the engine's object for
 * @p qpn; the QP is owned by w's owner lcore from now on.
 * @return 0, -EINVAL, -EEXIST
 */
int worker_qp_attach(struct worker *w, uint32_t qpn, void *engine_qp);

/** Owner only (asserted in debug builds): detach @p qpn. @return the engine's object, or NULL */
void *worker_qp_detach(struct worker *w, uint32_t qpn);

/**
 * Owner only: add @p n to counter @p id (an engine counter, CTR_TX_DROPS,
 * ...) of the QP, the lcore and the port at once.
 */
void worker_count(struct worker *w, uint16_t port_idx, struct qp_slot *qp, enum ctr_id id,
		  uint64_t n);

/**
 * Control thread: send @p m to @p w (by value; it runs on w's lcore between
 * bursts and its answer comes back on w->ctl_out). Never waits.
 * @return 0, or -ENOBUFS when the ring is full (nothing was sent)
 */
int worker_ctl_send(struct worker *w, struct ctl_msg *m);

/** Control thread: up to @p n answers of @p w into @p out. @return how many */
unsigned int worker_ctl_answers(struct worker *w, struct ctl_msg *out, unsigned int n);

/**
 * Run message @p m as w's lcore does and set its answer (m->rc, m->worker).
 * Owner lcore only, or the control thread once the workers stopped (it
 * owns them then); asserted in debug builds.
 */
void worker_ctl_run(struct worker *w, struct ctl_msg *m);

/**
 * Owner only: pass engine event @p ev to the control thread (events ring).
 * A full ring does not lose it: it waits, in order, in the spill (which
 * grows) until the next poll finds room. An event identical to one already
 * waiting is coalesced (events_coalesced): that bounds the spill by the
 * objects, so nothing is lost unless memory runs out (events_lost).
 */
void worker_event_post(struct worker *w, const struct worker_event *ev);

/** Control thread: queue @p m for transmission on @p port_idx by worker 0. */
void worker_ctl_tx(struct daemon *d, uint16_t port_idx, struct rte_mbuf *m);

#endif /* ROCE_DAEMON_WORKER_H */
