/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * roce-perftest internals: bandwidth and latency tests over the ibverbs API.
 *
 * The tool imitates linux-rdma perftest (ib_write_bw & co.): the same
 * options, the same defaults and the same result table, but one binary with
 * one file per test mode. A mode is a small ops table (struct pt_mode):
 * `setup` prepares a side before each message size, `run` does one bounded,
 * non-blocking step of that side's role, `report` turns the side's counters
 * into a result. Because steps never block, one thread can drive both ends of
 * a connection (single-process mode) as easily as one end talking to a peer
 * process over the TCP exchange.
 *
 * Ownership: every struct pt_side belongs to the single thread that runs
 * roce-perftest; nothing here is shared between threads. In single-process
 * mode a side reads its peer's counters directly (pt_side.peer points at the
 * other side's pt_progress); in two-process mode it reads a mirror that the
 * driver refreshes from the peer's DONE message.
 *
 * Prototypes are grouped by the file that defines them.
 */
#ifndef PT_PERFTEST_H
#define PT_PERFTEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <infiniband/verbs.h>

/** Version printed by -V and sent in the exchange HELLO. */
#define PT_VERSION "0.1.0"

/* perftest's defaults and limits (perftest_parameters.h). */
#define PT_DEF_PORT        18515
#define PT_DEF_SIZE_BW     65536
#define PT_DEF_SIZE_LAT    2
#define PT_SIZE_ATOMIC     8
#define PT_DEF_ITERS       1000
#define PT_DEF_ITERS_WB    5000   /**< write_bw default iterations */
#define PT_DEF_TX_BW       128
#define PT_DEF_RX_SEND     512
#define PT_DEF_CQ_MOD      100
#define PT_DEF_QP_TIMEOUT  14
#define PT_DEF_DURATION    5
#define PT_DEF_HOP_LIMIT   64
#define PT_QKEY            0x11111111u
#define PT_MIN_ITERS       5
#define PT_MAX_SIZE        (8u << 20)   /**< -a goes up to 2^23 */
#define PT_MAX_TX          15000
#define PT_MAX_RX          16384
#define PT_MAX_QPS         16384
#define PT_MAX_CQ_MOD      1024
#define PT_MAX_INLINE      1024
#define PT_PEAK_MAX_ITERS  20000        /**< above this the peak is not computed */
#define PT_UD_GRH          40           /**< GRH in front of every UD receive */
#define PT_CYCLE_BUFFER    4096         /**< bytes cycled through without --verify */
#define PT_VERIFY_AREA_MAX (16u << 20)  /**< per QP and area with --verify */
#define PT_LAT_TAIL        2            /**< largest samples dropped, like perftest */

/** What the test does on the wire. */
enum pt_verb {
	PT_SEND,
	PT_WRITE,
	PT_READ,
	PT_ATOMIC,
};

/** Bandwidth or latency. */
enum pt_kind {
	PT_BW,
	PT_LAT,
};

/** Transport. The values index pt_conn_name(). */
enum pt_conn {
	PT_RC,
	PT_UC,
	PT_UD,
};

#define PT_CONN_BIT(c) (1u << (c))

enum pt_atomic_op {
	PT_CMP_AND_SWAP,
	PT_FETCH_AND_ADD,
};

enum pt_output {
	PT_OUT_TABLE,
	PT_OUT_CSV,
	PT_OUT_JSON,
};

/** Which end of the connection a side is. */
enum pt_role {
	PT_ROLE_CLIENT,  /**< the requester: posts the measured work */
	PT_ROLE_SERVER,  /**< the target: receives, or just lends memory */
};

/** What one step of a side reports back to the driver. */
enum pt_step {
	PT_STEP_ERROR = -1, /**< fatal; the side already printed why */
	PT_STEP_DONE,       /**< this side has finished the current size */
	PT_STEP_BUSY,       /**< made progress; call again soon */
	PT_STEP_IDLE,       /**< waits for a completion or incoming data */
	PT_STEP_WAIT_PEER,  /**< waits only for the peer side to finish */
};

struct pt_side;
struct pt_result;

/**
 * One test mode (like testpmd's struct fwd_engine). Optional hooks are NULL
 * when the mode needs nothing special.
 */
struct pt_mode {
	const char *name;       /**< command-line name, e.g. "write_bw" */
	const char *title;      /**< perftest's heading word, e.g. "RDMA_Write" */
	enum pt_verb verb;
	enum pt_kind kind;
	unsigned int conns;     /**< PT_CONN_BIT() of the transports that make sense */
	/** Before each message size, after the counters were reset. NULL: nothing. */
	int (*setup)(struct pt_side *side);
	/** One bounded, non-blocking step of side->role. */
	enum pt_step (*run)(struct pt_side *side);
	/** Fill @p res from the side's counters. NULL: pt_report_bw_side(). */
	void (*report)(const struct pt_side *side, struct pt_result *res);
};

#define PT_MODE_LIST(X) \
	X(write_bw)     \
	X(read_bw)      \
	X(send_bw)      \
	X(atomic_bw)    \
	X(write_lat)    \
	X(read_lat)     \
	X(send_lat)     \
	X(atomic_lat)

#define PT_MODE_DECLARE(n) extern const struct pt_mode pt_mode_##n;
PT_MODE_LIST(PT_MODE_DECLARE)
#undef PT_MODE_DECLARE

/** Everything the command line decides. */
struct pt_params {
	const struct pt_mode *mode;
	const char *ib_devname;     /**< -d; NULL: first device */
	int ib_port;                /**< -i */
	int gid_index;              /**< -x; -1: pick the IPv4-mapped RoCE GID */
	const char *peer_devname;   /**< --peer-dev (single process); NULL: same as -d */
	int peer_ib_port;
	int peer_gid_index;
	const char *servername;     /**< client mode when set */
	int tcp_port;               /**< -p */
	bool single_process;        /**< --single-process / --loopback */
	enum pt_conn conn;          /**< -c */
	enum pt_atomic_op atomic_op;/**< -A */
	uint64_t size;              /**< -s */
	bool all_sizes;             /**< -a */
	uint64_t iters;             /**< -n, per QP */
	int duration;               /**< -D seconds; 0: iterations mode */
	int margin;                 /**< -f seconds */
	int num_qps;                /**< -q */
	int tx_depth;               /**< -t */
	int rx_depth;               /**< -r */
	int cq_mod;                 /**< -Q */
	int inline_size;            /**< -I */
	int mtu;                    /**< -m bytes; 0: port MTU */
	int out_reads;              /**< -o; 0: device maximum */
	int sl;                     /**< -S */
	int qp_timeout;             /**< -u */
	bool use_event;             /**< -e */
	bool no_peak;               /**< -N */
	bool report_gbits;          /**< --report_gbits */
	int pacing_kbps;            /**< --pacing-kbps; 0: no rate limit */
	bool verify;                /**< --verify */
	enum pt_output output;      /**< --output */
	const char *out_file;       /**< --out-file; NULL: stdout */
	int stall_timeout;          /**< --stall-timeout seconds; 0: never */
	/* set by the parser to tell defaults from explicit values */
	bool size_set, tx_depth_set, rx_depth_set, cq_mod_set;
};

/** Slots of the per-QP buffers; both ends compute the same layout. */
struct pt_layout {
	size_t stride;      /**< bytes per slot (cache-line multiple, >= any message + GRH) */
	uint32_t slots;     /**< slots per area */
	uint32_t window;    /**< max outstanding send WRs per QP */
	uint32_t rx_depth;  /**< receives kept posted per QP */
	size_t area;        /**< bytes of one area (tx or rx) of one QP */
};

/** What one QP tells its peer (perftest's pingpong_dest). */
struct pt_dest {
	uint16_t lid;
	uint32_t qpn;
	uint32_t psn;
	uint32_t rkey;
	uint64_t vaddr;       /**< start of this QP's rx area */
	union ibv_gid gid;
	uint8_t out_reads;    /**< outstanding reads/atomics offered */
	uint8_t mtu;          /**< enum ibv_mtu of the sending side */
};

/**
 * Receive ring of one QP. The RQ completes in posting order, so the n-th
 * receive ever posted uses slot n % slots; with rx_depth <= slots the posted
 * receives always own distinct slots, also across message sizes.
 */
struct pt_rx_ring {
	uint64_t posted_total;  /**< receives ever posted (pt_post_recv() only) */
	uint64_t done_total;    /**< receives ever completed (pt_poll_recv() only) */
};

/*
 * Receives posted and not completed yet. Two counters, each written in one
 * place, and no third one kept beside them: GCC merged the increments of two
 * adjacent counters into one 16-byte load and add, and that load cannot take
 * its bytes from the 8-byte store pt_poll_recv() had just made to one of
 * them. It waited for the store buffer to drain, behind the shim's stores
 * to lines the daemon's core holds: 89 % of pt_post_recv()'s samples in a
 * 64 B SEND run (doc/benchmarks.md, session 27).
 */
static inline uint64_t pt_rx_outstanding(const struct pt_rx_ring *r)
{
	return r->posted_total - r->done_total;
}

/** Per-QP counters of the current size, owned by their side. */
struct pt_qp_counts {
	uint64_t posted;       /**< send WRs posted */
	uint64_t completed;    /**< send WRs completed */
	uint64_t recv_posted;  /**< receives posted (UINT64_MAX: unknown, do not limit) */
	uint64_t received;     /**< receives completed */
};

/** What a side publishes to its peer: done flag + per-QP counters. */
struct pt_progress {
	bool done;
	uint32_t num_qps;
	struct pt_qp_counts *qp;
};

/** Measurement window of the -D mode (perftest's START/SAMPLE/STOP states). */
struct pt_window {
	uint64_t t_start, t_sample, t_stop, t_end;  /**< deadlines, ns */
	uint64_t n_sample, n_stop;                  /**< counts seen at the two edges */
	uint64_t n_last;                            /**< count at the previous update */
	uint64_t t_sample_seen, t_stop_seen;        /**< when the edges were seen */
	uint64_t cpu_sample, cpu_stop;              /**< process CPU ns at the two edges */
	uint32_t unread;                            /**< pt_window_update() calls without a clock read */
	bool sampling, stopped, time_up;
};

/** One end of the connection: device objects, buffers and run state. */
struct pt_side {
	const struct pt_params *p;
	const struct pt_mode *mode;
	enum pt_role role;
	const char *devname;
	int ib_port;
	int gid_index;

	struct ibv_context *ctx;
	struct ibv_device_attr dev_attr;
	struct ibv_port_attr port_attr;
	union ibv_gid gid;
	struct ibv_pd *pd;
	struct ibv_comp_channel *channel;
	struct ibv_cq *send_cq;
	struct ibv_cq *recv_cq;
	struct ibv_mr *mr;
	uint8_t *buf;
	size_t buf_len;
	struct pt_layout layout;
	uint8_t out_reads;
	int inline_size;

	int num_qps;
	struct ibv_qp **qp;
	struct ibv_ah **ah;          /**< UD only */
	struct pt_dest *local;       /**< what we tell the peer */
	struct pt_dest *remote;      /**< what the peer told us */
	enum ibv_mtu path_mtu;
	uint8_t rd_atomic;           /**< negotiated outstanding reads/atomics */
	struct pt_rx_ring *rx;       /**< receive ring per QP, kept across sizes */

	/* run state of the current size (reset by pt_side_reset_run) */
	uint64_t size;
	uint64_t iters;              /**< per QP; UINT64_MAX in -D mode */
	uint32_t cq_mod;
	struct pt_progress pub;      /**< our counters, read by the peer */
	const struct pt_progress *peer;
	uint64_t *tposted;           /**< per global post, ns (iterations mode) */
	uint64_t *tcompleted;        /**< per global completion, ns */
	uint64_t ts_cap;             /**< entries of tposted/tcompleted */
	uint64_t n_posted, n_completed, n_received;
	uint64_t t_begin;            /**< start of the run, ns */
	uint64_t t_last_rx;          /**< last receive completion, ns */
	uint64_t t_peer_done;        /**< when the peer was first seen done, ns */
	uint32_t rr;                 /**< round-robin start QP */
	struct pt_window win;
	uint64_t verify_checked;
	uint64_t verify_errors;
	uint64_t lost;
	uint64_t *rx_expect;         /**< next expected iteration per QP (--verify) */
	/**
	 * The send WR and SGE every post of this side fills in (perftest's
	 * ctx->wr[]): pt_side_reset_run() sets what stays (one SGE of the
	 * message size, the MR), a post the address, wr_id and flags, and the
	 * mode's prepare (pt_prepare_fn) the fields it owns.
	 */
	struct ibv_send_wr post_wr;
	struct ibv_sge post_sge;
};

/** A result row: one message size. */
struct pt_result {
	bool valid;             /**< this side measured something */
	bool lat;
	bool duration;
	uint64_t size;
	uint64_t iters;         /**< iterations measured (all QPs) */
	double seconds;         /**< measured time */
	double bw_peak, bw_avg; /**< MiB/s or Gb/s (report_gbits) */
	double msg_rate;        /**< Mpps */
	double t_min, t_max, t_typical, t_avg, t_stdev, t_p99, t_p999; /**< usec */
	double tps;             /**< -D latency: transactions per second */
	double cpu_ns_msg;      /**< -D: CPU ns of this process per message in the window; 0: unknown */
	uint64_t verify_checked, verify_errors, lost;
};

/* ---- params.c ---------------------------------------------------------- */
enum { PT_PARSE_OK = 0, PT_PARSE_EXIT = 1, PT_PARSE_ERROR = -1 };
/** Parse argv into @p p (defaults first). Messages go to @p err (help to @p out). */
int pt_params_parse(struct pt_params *p, int argc, char **argv, FILE *out, FILE *err);
const struct pt_mode *pt_mode_find(const char *name);
const struct pt_mode *pt_mode_at(size_t i);  /**< NULL past the end */
const char *pt_conn_name(enum pt_conn c);
/** Sizes of the run: one, or 2..2^23 with -a, capped at @p max_size. Returns the count. */
size_t pt_params_sizes(const struct pt_params *p, uint64_t max_size, uint64_t *sizes, size_t cap);
/** True when the mode polls receive completions (SEND). */
bool pt_uses_recv(const struct pt_params *p);

/* ---- pattern.c --------------------------------------------------------- */
/** Fill @p len bytes with the pattern of (@p iter, @p qp). */
void pt_pattern_fill(void *buf, size_t len, uint64_t iter, uint32_t qp);
/** Offset of the first byte that differs from the pattern, or SIZE_MAX. */
size_t pt_pattern_check(const void *buf, size_t len, uint64_t iter, uint32_t qp);
/** Recover the iteration from a message of >= 8 bytes; false if not a pattern. */
bool pt_pattern_iter(const void *buf, size_t len, uint32_t qp, uint64_t *iter);
/** The counter byte that ends a ping-pong message: 1..255, never 0. */
static inline uint8_t pt_pingpong_mark(uint64_t iter) { return (uint8_t)(iter % 255 + 1); }
/** Start value of the atomic target of @p qp (FETCH_ADD adds 1 per iteration). */
static inline uint64_t pt_atomic_base(uint32_t qp) { return UINT64_C(0x1000) + ((uint64_t)qp << 32); }

/* ---- resources.c ------------------------------------------------------- */
/** Slot layout for @p p; @p mtu_bytes bounds UD messages. */
int pt_layout_compute(const struct pt_params *p, uint64_t mtu_bytes, struct pt_layout *l);
int pt_side_open(struct pt_side *s, const struct pt_params *p, enum pt_role role,
		 const char *devname, int ib_port, int gid_index);
/** Move the QPs to RTR/RTS towards s->remote (UD: create the AHs). */
int pt_side_connect(struct pt_side *s);
void pt_side_close(struct pt_side *s);
/** Reset run counters for message size @p size; allocate timestamps. */
int pt_side_reset_run(struct pt_side *s, uint64_t size);
int pt_mtu_bytes(enum ibv_mtu mtu);
enum ibv_mtu pt_mtu_enum(int bytes);
const char *pt_link_layer_name(uint8_t link_layer);
static inline uint8_t *pt_tx_slot(const struct pt_side *s, uint32_t qp, uint64_t iter)
{
	return s->buf + (size_t)qp * 2 * s->layout.area + (size_t)(iter % s->layout.slots) * s->layout.stride;
}
static inline uint8_t *pt_rx_slot(const struct pt_side *s, uint32_t qp, uint64_t iter)
{
	return pt_tx_slot(s, qp, iter) + s->layout.area;
}
static inline uint64_t pt_remote_slot(const struct pt_side *s, uint32_t qp, uint64_t iter)
{
	return s->remote[qp].vaddr + (iter % s->layout.slots) * s->layout.stride;
}
/** wr_id of QP @p qp, iteration or slot @p n. */
static inline uint64_t pt_wr_id(uint32_t qp, uint64_t n) { return (uint64_t)qp << 48 | n; }
static inline uint32_t pt_wr_qp(uint64_t wr_id) { return (uint32_t)(wr_id >> 48); }
static inline uint64_t pt_wr_n(uint64_t wr_id) { return wr_id & ((UINT64_C(1) << 48) - 1); }
/** Post the next receive of @p qp's ring (counts it in recv_posted). */
int pt_post_recv(struct pt_side *s, uint32_t qp);

/* ---- bw.c: engines shared by the modes --------------------------------- */
/** Fill in @p wr and @p sge for iteration @p iter of @p qp: they are the side's
 *  own, kept from the last post, so it sets every field it uses on every call. */
typedef void pt_prepare_fn(struct pt_side *s, uint32_t qp, uint64_t iter,
			   struct ibv_send_wr *wr, struct ibv_sge *sge);
typedef void pt_complete_fn(struct pt_side *s, uint32_t qp, uint64_t first, uint64_t end);
/** Requester: keep the window full, poll the send CQ. @p done may be NULL. */
enum pt_step pt_bw_requester_step(struct pt_side *s, pt_prepare_fn *prep, pt_complete_fn *done);
/** Receiver of SENDs: poll the receive CQ, verify, re-post. */
enum pt_step pt_bw_receiver_step(struct pt_side *s);
/** Poll one batch of receive completions: verify, count, re-post. Count or -1. */
int pt_poll_recv(struct pt_side *s);
/**
 * Ping-pong on QP 0, after the mode looked for the peer's message
 * (@p progress: it found one): update the -D window, send the next message
 * when it is this side's turn and @p credit allows (@p prep sets opcode and
 * payload), poll the send CQ and tell whether the side is done.
 */
enum pt_step pt_pingpong_step(struct pt_side *s, bool progress, bool credit, pt_prepare_fn *prep);
/** Post the receives of a new size (tops up what is still posted). */
int pt_bw_post_receives(struct pt_side *s);
/** Target of WRITE/READ/ATOMIC: done at once, or after @p check once the peer is done. */
enum pt_step pt_target_step(struct pt_side *s, void (*check)(struct pt_side *s));
/** Poll up to @p max send completions; returns count, -1 on error. */
int pt_poll_send(struct pt_side *s, struct ibv_wc *wc, int max);
/** Record a verify mismatch (prints the first few). */
void pt_verify_fail(struct pt_side *s, const char *what, uint32_t qp, uint64_t iter, size_t off);
/** Update the -D window with @p count; true once no new work may start. */
bool pt_window_update(struct pt_side *s, uint64_t count);
/**
 * pt_window_update() at time @p now (ns): each edge of the window is the
 * first change of @p count at or after its deadline (see bw.c).
 */
bool pt_window_step(struct pt_window *w, uint64_t now, uint64_t count);
uint64_t pt_now_ns(void);
/** CPU time this process used (all its threads), ns. */
uint64_t pt_cpu_ns(void);

/* ---- send_bw.c / read_bw.c / atomic_bw.c: shared with the latency modes */
void pt_send_prepare(struct pt_side *s, uint32_t qp, uint64_t iter, struct ibv_send_wr *wr, struct ibv_sge *sge);
void pt_read_prepare(struct pt_side *s, uint32_t qp, uint64_t iter, struct ibv_send_wr *wr, struct ibv_sge *sge);
void pt_read_complete(struct pt_side *s, uint32_t qp, uint64_t first, uint64_t end);
int pt_read_setup(struct pt_side *s);
void pt_atomic_prepare(struct pt_side *s, uint32_t qp, uint64_t iter, struct ibv_send_wr *wr, struct ibv_sge *sge);
void pt_atomic_complete(struct pt_side *s, uint32_t qp, uint64_t first, uint64_t end);
int pt_atomic_setup(struct pt_side *s);
void pt_atomic_check(struct pt_side *s);

/* ---- report.c ---------------------------------------------------------- */
/** Bandwidth from timestamps (perftest's print_report_bw arithmetic). */
void pt_bw_compute(const uint64_t *tposted, const uint64_t *tcompleted, uint64_t n,
		   uint64_t size, uint32_t cq_mod, bool no_peak, bool gbits, struct pt_result *r);
/** Latency statistics from @p n round-trip samples (ns, sorted in place). */
int pt_lat_compute(uint64_t *samples, uint64_t n, unsigned int rtt_factor, struct pt_result *r);
/** Default report hook: requester or SEND receiver bandwidth. */
void pt_report_bw_side(const struct pt_side *s, struct pt_result *r);
/** Latency from successive posts (ping-pong, RTT/2). */
void pt_report_pingpong(const struct pt_side *s, struct pt_result *r);
/** Latency from post to completion (READ, atomics). */
void pt_report_rtt(const struct pt_side *s, struct pt_result *r);

/** Static facts the header shows. */
struct pt_info {
	enum pt_role role;
	bool single;
	const char *device;
	const char *peer_device;
	int mtu;
	uint8_t link_layer;
	int gid_index;
	int inline_size;
	int out_reads;
	int tx_depth;
	int rx_depth;
	int cq_mod;
};
void pt_print_header(FILE *f, const struct pt_params *p, const struct pt_info *info);
void pt_print_dest(FILE *f, const struct pt_params *p, const char *side, const struct pt_dest *d,
		   bool show_gid);
void pt_print_table_head(FILE *f, const struct pt_params *p);
void pt_print_result(FILE *f, const struct pt_params *p, const struct pt_result *r);
void pt_print_rule(FILE *f);
void pt_csv_head(FILE *f);
void pt_csv_row(FILE *f, const struct pt_params *p, const struct pt_info *info, const struct pt_result *r);
void pt_json_write(FILE *f, const struct pt_params *p, const struct pt_info *info,
		   const struct pt_result *rows, size_t n);
const char *pt_verify_word(const struct pt_params *p, const struct pt_result *r);

/* ---- exchange.c -------------------------------------------------------- */
enum pt_msg_type {
	PT_MSG_HELLO = 1,
	PT_MSG_DEST,
	PT_MSG_SYNC,
	PT_MSG_DONE,
	PT_MSG_RESULT,
};
struct pt_link {
	int fd;
};
int pt_link_accept(struct pt_link *l, int port, bool verbose);
int pt_link_connect(struct pt_link *l, const char *host, int port);
void pt_link_close(struct pt_link *l);
/** Wait up to @p timeout_ms for data; 1 readable, 0 not, -1 error/closed. */
int pt_link_wait(struct pt_link *l, int timeout_ms);
int pt_xchg_hello(struct pt_link *l, const struct pt_params *p);
int pt_xchg_dests(struct pt_link *l, const struct pt_dest *local, struct pt_dest *remote, uint32_t n);
int pt_xchg_sync(struct pt_link *l, uint32_t tag);
int pt_send_done(struct pt_link *l, uint32_t tag, const struct pt_progress *pr);
int pt_recv_done(struct pt_link *l, uint32_t tag, struct pt_progress *pr);
int pt_xchg_result(struct pt_link *l, uint32_t tag, const struct pt_result *mine, struct pt_result *theirs);
/** Encoded HELLO of @p p (for tests); returns length. */
size_t pt_hello_encode(const struct pt_params *p, uint8_t *buf, size_t cap);
/** Compare a peer HELLO with ours; 0 if they match, else prints what differs. */
int pt_hello_check(const struct pt_params *p, const uint8_t *buf, size_t len, FILE *err);

/* ---- run.c ------------------------------------------------------------- */
/** Open, connect, run every size and report. Returns the exit status. */
int pt_test_main(const struct pt_params *p);

#endif /* PT_PERFTEST_H */
