/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * linkrate: the raw limit of one DPDK link, the yardstick for roce-perftest.
 *
 *   linkrate [EAL args] -- --role tx|rx|ping|pong [options]
 *
 * One process per end, one port (the first the EAL probes, e.g. one vdev),
 * one queue, one polling lcore:
 *   tx    sends frames of --size bytes as fast as the PMD takes them for
 *         --duration seconds (unsent frames are retried, never dropped here)
 *   rx    counts them; the rate is taken between the first frame + --warmup
 *         and the last frame (window=steady; window=all and exit status 1
 *         when every frame came within the warmup), and lost frames are
 *         found from PSN gaps
 *   ping  sends one frame, waits for its echo, --count times: round trips
 *   pong  echoes every frame back (MAC and IP addresses swapped)
 *
 * Frames are RoCEv2 RC SEND_ONLY packets as the daemon sends them (Ethernet,
 * IPv4, UDP 4791, BTH, payload, ICRC) built with lib/roce, to a QPN nobody
 * owns, with the PSN as sequence number. The ICRC is left zero: no one checks
 * it and computing it is the stack's work, not the link's. --size counts the
 * bytes handed to the PMD (Ethernet header through ICRC, no FCS).
 *
 * Each role prints "linkrate: ready" once its port is up and, when done, one
 * line "result key=value ..." on stdout for scripts (bench/sweep.sh).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "roce.h"

#define LR_QPN 0xbe7c01u          /* destination QPN of our frames: matches nothing */
#define LR_HDR_LEN 54u            /* Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 */
#define LR_MIN_SIZE 60u           /* Ethernet minimum without FCS */
#define LR_MAX_SIZE 9600u
#define LR_AF_XDP_MAX_SIZE 3456u  /* UMEM chunk = one mempool object <= 4 KiB */
#define LR_AF_XDP_DATA_ROOM 3712u
#define LR_MAX_BURST 256u
#define LR_POOL_SIZE 8191u
#define LR_RING_SIZE 1024u
#define LR_MAX_PINGS 10000000u
/* Read the TSC once per this many polls: rdtsc costs ~16 ns in these VMs,
 * as much as a whole burst of small frames. */
#define LR_CLOCK_EVERY 16u

enum lr_role { LR_TX, LR_RX, LR_PING, LR_PONG };
static const char *const lr_role_names[] = { "tx", "rx", "ping", "pong" };

struct lr_opts {
	enum lr_role role;
	uint32_t size;          /* frame bytes, Ethernet through ICRC */
	double duration;        /* tx/ping: seconds of sending */
	double timeout;         /* rx/pong: give up after this many seconds */
	double idle_exit;       /* rx/pong: stop this long after the last frame */
	double warmup;          /* rx: seconds after the first frame not counted */
	double ping_wait;       /* ping: seconds to wait for one echo */
	double linger;          /* tx, ping: seconds to keep the port open after sending */
	uint32_t count;         /* ping: round trips */
	uint32_t burst;
	uint32_t mbuf_data_room; /* 0: derived from --size and the driver */
	uint8_t dmac[6];
	bool dmac_set;
};

/* Set by the signal handler, read by the polling loop. Relaxed is enough:
 * the loop only needs to see it eventually, nothing is published with it. */
static atomic_bool lr_stop;

static void
lr_on_signal(int sig)
{
	(void)sig;
	atomic_store_explicit(&lr_stop, true, memory_order_relaxed);
}

static bool
lr_stopping(void)
{
	return atomic_load_explicit(&lr_stop, memory_order_relaxed);
}

static void
lr_usage(FILE *f, const char *argv0)
{
	fprintf(f,
		"Usage: %s [EAL args] -- --role tx|rx|ping|pong [options]\n"
		"  --size N        frame bytes, Ethernet through ICRC, %u..%u (default 1082)\n"
		"  --duration S    tx, ping: seconds of sending (default 2)\n"
		"  --count N       ping: round trips (default 10000)\n"
		"  --timeout S     rx, pong: give up after S seconds (default 30)\n"
		"  --idle-exit S   rx, pong: stop S seconds after the last frame (default 0.5)\n"
		"  --warmup S      rx: seconds after the first frame not counted (default 0.2)\n"
		"  --ping-wait S   ping: seconds to wait for one echo (default 0.05)\n"
		"  --linger S      tx, ping: keep the port open (not polling) S seconds after\n"
		"                  sending, so the peer stops polling before the link goes\n"
		"                  down (memif unmaps its rings under a polling peer) (default 1)\n"
		"  --burst N       frames per rx/tx burst, 1..%u (default 32)\n"
		"  --mbuf-size N   mbuf data room incl. headroom (default from --size and driver)\n"
		"  --dst-mac MAC   destination MAC of tx/ping frames (default broadcast)\n",
		argv0, LR_MIN_SIZE, LR_MAX_SIZE, LR_MAX_BURST);
}

static bool
lr_parse_double(const char *s, double lo, double hi, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= lo && v <= hi))
		return false;
	*out = v;
	return true;
}

static bool
lr_parse_u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || s[0] == '-' || v < lo || v > hi)
		return false;
	*out = (uint32_t)v;
	return true;
}

static bool
lr_parse_mac(const char *s, uint8_t mac[6])
{
	unsigned int b[6];
	char tail;

	if (sscanf(s, "%x:%x:%x:%x:%x:%x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &tail) != 6)
		return false;
	for (int i = 0; i < 6; i++) {
		if (b[i] > 0xff)
			return false;
		mac[i] = (uint8_t)b[i];
	}
	return true;
}

/* @return 0, or -1 after printing why (the caller exits with status 2). */
static int
lr_parse_args(int argc, char **argv, struct lr_opts *o)
{
	enum { O_ROLE = 256, O_SIZE, O_DURATION, O_COUNT, O_TIMEOUT, O_IDLE, O_WARMUP,
	       O_PING_WAIT, O_LINGER, O_BURST, O_MBUF, O_DMAC, O_HELP };
	static const struct option longopts[] = {
		{ "role", required_argument, NULL, O_ROLE },
		{ "size", required_argument, NULL, O_SIZE },
		{ "duration", required_argument, NULL, O_DURATION },
		{ "count", required_argument, NULL, O_COUNT },
		{ "timeout", required_argument, NULL, O_TIMEOUT },
		{ "idle-exit", required_argument, NULL, O_IDLE },
		{ "warmup", required_argument, NULL, O_WARMUP },
		{ "ping-wait", required_argument, NULL, O_PING_WAIT },
		{ "linger", required_argument, NULL, O_LINGER },
		{ "burst", required_argument, NULL, O_BURST },
		{ "mbuf-size", required_argument, NULL, O_MBUF },
		{ "dst-mac", required_argument, NULL, O_DMAC },
		{ "help", no_argument, NULL, O_HELP },
		{ NULL, 0, NULL, 0 },
	};
	bool role_set = false, ok = true;
	int c, idx = 0;

	*o = (struct lr_opts){ .size = 1082, .duration = 2, .timeout = 30, .idle_exit = 0.5,
			       .warmup = 0.2, .ping_wait = 0.05, .linger = 1, .count = 10000, .burst = 32 };
	memset(o->dmac, 0xff, sizeof(o->dmac));
	optind = 1;
	while (ok && (c = getopt_long(argc, argv, "", longopts, &idx)) != -1) {
		switch (c) {
		case O_ROLE:
			role_set = false;
			for (size_t i = 0; i < RTE_DIM(lr_role_names); i++)
				if (strcmp(optarg, lr_role_names[i]) == 0) {
					o->role = (enum lr_role)i;
					role_set = true;
				}
			ok = role_set;
			break;
		case O_SIZE: ok = lr_parse_u32(optarg, LR_MIN_SIZE, LR_MAX_SIZE, &o->size); break;
		case O_DURATION: ok = lr_parse_double(optarg, 0.01, 3600, &o->duration); break;
		case O_COUNT: ok = lr_parse_u32(optarg, 1, LR_MAX_PINGS, &o->count); break;
		case O_TIMEOUT: ok = lr_parse_double(optarg, 0.1, 3600, &o->timeout); break;
		case O_IDLE: ok = lr_parse_double(optarg, 0.001, 60, &o->idle_exit); break;
		case O_WARMUP: ok = lr_parse_double(optarg, 0, 60, &o->warmup); break;
		case O_PING_WAIT: ok = lr_parse_double(optarg, 0.0001, 10, &o->ping_wait); break;
		case O_LINGER: ok = lr_parse_double(optarg, 0, 60, &o->linger); break;
		case O_BURST: ok = lr_parse_u32(optarg, 1, LR_MAX_BURST, &o->burst); break;
		case O_MBUF: ok = lr_parse_u32(optarg, 1024, UINT16_MAX, &o->mbuf_data_room); break;
		case O_DMAC: ok = o->dmac_set = lr_parse_mac(optarg, o->dmac); break;
		case O_HELP: lr_usage(stdout, argv[0]); exit(0);
		default: lr_usage(stderr, argv[0]); return -1;
		}
		if (!ok)
			fprintf(stderr, "linkrate: bad value '%s' for --%s\n", optarg,
				longopts[idx].name);
	}
	if (!ok)
		return -1;
	if (optind < argc) {
		fprintf(stderr, "linkrate: unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	if (!role_set) {
		fprintf(stderr, "linkrate: --role is required\n");
		lr_usage(stderr, argv[0]);
		return -1;
	}
	return 0;
}

/* ---- frames ------------------------------------------------------------- */

/* The headers every frame of this run starts with; only the PSN changes. */
struct lr_template {
	uint8_t hdr[LR_HDR_LEN];
	uint32_t size;
};

static int
lr_template_init(struct lr_template *t, const struct rte_ether_addr *smac, const uint8_t dmac[6],
		 uint32_t size)
{
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	struct roce_pkt pkt = {
		.opcode = ROCE_OP_RC_SEND_ONLY,
		.pkey = ROCE_DEFAULT_PKEY,
		.dest_qpn = LR_QPN,
		.payload_len = size - LR_HDR_LEN - ROCE_ICRC_LEN,
		.l3 = { .hop_limit = 64, .udp_sport = 0xc000 },
	};

	memcpy(pkt.l3.dmac, dmac, 6);
	memcpy(pkt.l3.smac, smac->addr_bytes, 6);
	/* 198.18.0.11 -> 198.18.0.12, the lab's daemon addresses */
	memcpy(pkt.l3.sgid, mapped, 12);
	memcpy(pkt.l3.dgid, mapped, 12);
	memcpy(pkt.l3.sgid + 12, (const uint8_t[]){ 198, 18, 0, 11 }, 4);
	memcpy(pkt.l3.dgid + 12, (const uint8_t[]){ 198, 18, 0, 12 }, 4);
	if (roce_build_headers(&pkt, t->hdr, sizeof(t->hdr)) != LR_HDR_LEN)
		return -1;
	t->size = size;
	return 0;
}

static struct roce_bth *
lr_bth(uint8_t *frame)
{
	return (struct roce_bth *)(frame + LR_HDR_LEN - ROCE_BTH_LEN);
}

static void
lr_frame_fill(struct rte_mbuf *m, const struct lr_template *t, uint32_t psn)
{
	uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);

	rte_memcpy(p, t->hdr, LR_HDR_LEN);
	lr_bth(p)->apsn = htobe32(psn & ROCE_PSN_MASK);
	m->data_len = (uint16_t)t->size;
	m->pkt_len = t->size;
}

/* @return true if @p m is one of our frames; its PSN in @p psn. */
static bool
lr_frame_match(const struct rte_mbuf *m, uint32_t *psn)
{
	const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
	const struct roce_eth_hdr *eth = (const struct roce_eth_hdr *)p;
	const struct roce_ipv4_hdr *ip = (const struct roce_ipv4_hdr *)(eth + 1);
	const struct roce_udp_hdr *udp = (const struct roce_udp_hdr *)(ip + 1);
	const struct roce_bth *bth = (const struct roce_bth *)(udp + 1);

	if (rte_pktmbuf_data_len(m) < LR_HDR_LEN || eth->ethertype != htobe16(ROCE_ETHERTYPE_IPV4) ||
	    ip->protocol != 17 || udp->dst_port != htobe16(ROCE_UDP_PORT) || roce_bth_qpn(bth) != LR_QPN)
		return false;
	*psn = roce_bth_psn(bth);
	return true;
}

/* ---- port --------------------------------------------------------------- */

struct lr_port {
	uint16_t id;
	struct rte_mempool *pool;
	struct rte_ether_addr mac;
	char driver[32];
};

static uint32_t
lr_data_room(const struct lr_opts *o, const char *driver)
{
	uint32_t room;

	if (o->mbuf_data_room)
		return o->mbuf_data_room;
	if (strcmp(driver, "net_af_xdp") == 0)
		return o->size + RTE_PKTMBUF_HEADROOM <= RTE_MBUF_DEFAULT_BUF_SIZE ?
			RTE_MBUF_DEFAULT_BUF_SIZE : LR_AF_XDP_DATA_ROOM;
	/* af_packet wants data room >= framesz - 32 (framesz=4608 for 4 KiB MTU) */
	room = RTE_ALIGN_CEIL(o->size + 512, 1024) + RTE_PKTMBUF_HEADROOM;
	return RTE_MAX(room, (uint32_t)RTE_MBUF_DEFAULT_BUF_SIZE);
}

static int
lr_wait_link(uint16_t port, double timeout)
{
	uint64_t end = rte_get_tsc_cycles() + (uint64_t)(timeout * (double)rte_get_tsc_hz());
	struct rte_eth_link link;

	while (!lr_stopping() && rte_get_tsc_cycles() < end) {
		if (rte_eth_link_get_nowait(port, &link) == 0 && link.link_status == RTE_ETH_LINK_UP)
			return 0;
		rte_delay_ms(10);
	}
	return -1;
}

static int
lr_port_open(const struct lr_opts *o, struct lr_port *pt)
{
	struct rte_eth_conf conf = { 0 };
	struct rte_eth_dev_info info;
	uint16_t nb_rxd = LR_RING_SIZE, nb_txd = LR_RING_SIZE;
	uint32_t room;
	int rc;

	if (rte_eth_dev_count_avail() < 1) {
		fprintf(stderr, "linkrate: no port (give one with --vdev)\n");
		return -1;
	}
	pt->id = 0;
	RTE_ETH_FOREACH_DEV(pt->id)
		break;
	if ((rc = rte_eth_dev_info_get(pt->id, &info)) != 0) {
		fprintf(stderr, "linkrate: port info: %s\n", rte_strerror(-rc));
		return -1;
	}
	snprintf(pt->driver, sizeof(pt->driver), "%s", info.driver_name);
	if (strcmp(pt->driver, "net_af_xdp") == 0 && o->size > LR_AF_XDP_MAX_SIZE) {
		fprintf(stderr, "linkrate: net_af_xdp carries frames up to %u bytes, not %u\n",
			LR_AF_XDP_MAX_SIZE, o->size);
		return -1;
	}
	room = lr_data_room(o, pt->driver);
	if (room < o->size + RTE_PKTMBUF_HEADROOM) {
		fprintf(stderr, "linkrate: mbuf data room %u too small for %u-byte frames\n",
			room, o->size);
		return -1;
	}
	pt->pool = rte_pktmbuf_pool_create("linkrate", LR_POOL_SIZE, 256, 0, (uint16_t)room,
					   (int)rte_socket_id());
	if (!pt->pool) {
		fprintf(stderr, "linkrate: mbuf pool: %s\n", rte_strerror(rte_errno));
		return -1;
	}
	if ((rc = rte_eth_dev_configure(pt->id, 1, 1, &conf)) != 0 ||
	    (rc = rte_eth_dev_adjust_nb_rx_tx_desc(pt->id, &nb_rxd, &nb_txd)) != 0 ||
	    (rc = rte_eth_rx_queue_setup(pt->id, 0, nb_rxd, rte_eth_dev_socket_id(pt->id), NULL,
					 pt->pool)) != 0 ||
	    (rc = rte_eth_tx_queue_setup(pt->id, 0, nb_txd, rte_eth_dev_socket_id(pt->id), NULL)) != 0) {
		fprintf(stderr, "linkrate: port %u setup: %s\n", pt->id, rte_strerror(-rc));
		if (strcmp(pt->driver, "net_af_packet") == 0)
			fprintf(stderr, "linkrate: net_af_packet wants --mbuf-size >= framesz - 32 + %u\n",
				RTE_PKTMBUF_HEADROOM);
		return -1;
	}
	/* Virtual ports may refuse an MTU change (af_packet: set it on the
	 * kernel side); frames of the asked size then tell the truth. */
	if (o->size - RTE_ETHER_HDR_LEN > RTE_ETHER_MTU &&
	    (rc = rte_eth_dev_set_mtu(pt->id, (uint16_t)(o->size - RTE_ETHER_HDR_LEN))) != 0)
		fprintf(stderr, "linkrate: note: port MTU unchanged (%s)\n", rte_strerror(-rc));
	if ((rc = rte_eth_dev_start(pt->id)) != 0) {
		fprintf(stderr, "linkrate: port start: %s\n", rte_strerror(-rc));
		return -1;
	}
	rte_eth_promiscuous_enable(pt->id); /* not every vdev supports it */
	rte_eth_macaddr_get(pt->id, &pt->mac);
	if (lr_wait_link(pt->id, o->timeout) != 0) {
		fprintf(stderr, "linkrate: link of port %u not up\n", pt->id);
		return -1;
	}
	return 0;
}

static void
lr_port_close(struct lr_port *pt)
{
	rte_eth_dev_stop(pt->id);
	rte_eth_dev_close(pt->id);
}

/* ---- roles -------------------------------------------------------------- */

static double
lr_seconds(uint64_t cycles)
{
	return (double)cycles / (double)rte_get_tsc_hz();
}

static uint64_t
lr_cycles(double seconds)
{
	return (uint64_t)(seconds * (double)rte_get_tsc_hz());
}

static void
lr_print_rate(const struct lr_opts *o, const struct lr_port *pt, uint64_t frames, double secs)
{
	double pps = secs > 0 ? (double)frames / secs : 0;

	printf("result role=%s driver=%s size=%u frames=%" PRIu64 " seconds=%.6f mpps=%.6f gbps=%.6f",
	       lr_role_names[o->role], pt->driver, o->size, frames, secs, pps / 1e6,
	       pps * o->size * 8 / 1e9);
}

static void
lr_print_stats(const struct lr_port *pt)
{
	struct rte_eth_stats st;

	if (rte_eth_stats_get(pt->id, &st) == 0)
		printf(" ipackets=%" PRIu64 " opackets=%" PRIu64 " imissed=%" PRIu64
		       " ierrors=%" PRIu64 " oerrors=%" PRIu64 " rx_nombuf=%" PRIu64,
		       st.ipackets, st.opackets, st.imissed, st.ierrors, st.oerrors, st.rx_nombuf);
	printf("\n");
}

/* Send until the deadline; frames the PMD does not take are offered again. */
static int
lr_run_tx(const struct lr_opts *o, struct lr_port *pt, const struct lr_template *t)
{
	struct rte_mbuf *bufs[LR_MAX_BURST];
	uint64_t sent = 0, t0 = rte_get_tsc_cycles(), end = t0 + lr_cycles(o->duration), now = t0;
	uint32_t psn = 0, pending = 0;

	for (uint32_t iter = 1; !lr_stopping() && now < end; iter++) {
		uint32_t want = o->burst - pending;
		uint16_t n;

		if (want && rte_pktmbuf_alloc_bulk(pt->pool, bufs + pending, want) == 0)
			for (; pending < o->burst; pending++)
				lr_frame_fill(bufs[pending], t, psn++);
		n = rte_eth_tx_burst(pt->id, 0, bufs, (uint16_t)pending);
		sent += n;
		pending -= n;
		if (n && pending)
			memmove(bufs, bufs + n, pending * sizeof(bufs[0]));
		if (iter % LR_CLOCK_EVERY == 0)
			now = rte_get_tsc_cycles();
	}
	now = rte_get_tsc_cycles();
	rte_pktmbuf_free_bulk(bufs, pending);
	lr_print_rate(o, pt, sent, lr_seconds(now - t0));
	printf(" unsent=%u", pending);
	lr_print_stats(pt);
	return 0;
}

/*
 * The receive window: frames counted from the first clock reading at least
 * --warmup after the first frame to the last clock reading that saw new
 * frames. The clock is read once per LR_CLOCK_EVERY polls and on idle polls.
 */
struct lr_rx_window {
	uint64_t t_first, t_begin, t_last;   /* TSC */
	uint64_t frames_begin, frames_last;  /* frames_all at t_begin, t_last */
	uint64_t frames_all;                 /* our frames, warmup included */
	uint64_t expected;                   /* frames the PSN sequence says were sent */
	uint32_t last_psn;
	bool begun;
};

static void
lr_rx_frame(struct lr_rx_window *w, uint32_t psn)
{
	w->expected += w->frames_all ? roce_psn_diff(psn, w->last_psn) : 1;
	w->last_psn = psn;
	w->frames_all++;
}

static void
lr_rx_clock(struct lr_rx_window *w, uint64_t now, uint64_t warmup)
{
	if (!w->frames_all)
		return;
	if (!w->t_first) {
		w->t_first = now;
		return;
	}
	if (!w->begun) {
		if (now - w->t_first < warmup)
			return;
		w->begun = true;
		w->t_begin = w->t_last = now;
		w->frames_begin = w->frames_last = w->frames_all;
		return;
	}
	if (w->frames_all != w->frames_last) {
		w->t_last = now;
		w->frames_last = w->frames_all;
	}
}

static int
lr_run_rx(const struct lr_opts *o, struct lr_port *pt)
{
	struct rte_mbuf *bufs[LR_MAX_BURST];
	struct lr_rx_window w = { 0 };
	uint64_t now = rte_get_tsc_cycles(), deadline = now + lr_cycles(o->timeout);
	uint64_t idle = lr_cycles(o->idle_exit), warmup = lr_cycles(o->warmup);
	uint64_t t_seen = now, seen_frames = 0, other = 0;

	for (uint32_t iter = 1; !lr_stopping(); iter++) {
		uint16_t n = rte_eth_rx_burst(pt->id, 0, bufs, (uint16_t)o->burst);
		uint32_t psn;

		for (uint16_t i = 0; i < n; i++) {
			if (lr_frame_match(bufs[i], &psn))
				lr_rx_frame(&w, psn);
			else
				other++;
		}
		rte_pktmbuf_free_bulk(bufs, n);
		if (n && iter % LR_CLOCK_EVERY)
			continue;
		now = rte_get_tsc_cycles();
		lr_rx_clock(&w, now, warmup);
		if (w.frames_all != seen_frames) {
			seen_frames = w.frames_all;
			t_seen = now;
		}
		if (now > deadline || (w.frames_all && now - t_seen > idle))
			break;
	}
	/* Not begun: every frame came within the warmup (a stalled or short
	 * sender); then the whole span from the first to the last frame. */
	if (w.begun)
		lr_print_rate(o, pt, w.frames_last - w.frames_begin, lr_seconds(w.t_last - w.t_begin));
	else
		lr_print_rate(o, pt, w.frames_all, t_seen > w.t_first && w.t_first ?
			      lr_seconds(t_seen - w.t_first) : 0);
	printf(" window=%s frames_all=%" PRIu64 " lost=%" PRIu64 " other=%" PRIu64,
	       w.begun ? "steady" : "all", w.frames_all, w.expected - w.frames_all, other);
	lr_print_stats(pt);
	return w.begun ? 0 : 1;
}

static int
lr_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* @return the microseconds of the @p q quantile (0..1) of sorted @p v. */
static double
lr_quantile_us(const uint64_t *v, uint32_t n, double q)
{
	uint32_t i = (uint32_t)(q * (n - 1) + 0.5);

	return lr_seconds(v[i]) * 1e6;
}

/* Send one frame and poll until its echo (same PSN) comes back.
 * @return round-trip cycles, or 0 on timeout. */
static uint64_t
lr_ping_once(const struct lr_opts *o, struct lr_port *pt, const struct lr_template *t, uint32_t psn,
	     uint64_t wait)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pt->pool), *bufs[LR_MAX_BURST];
	uint64_t t0, now, end;
	uint32_t got;
	bool done = false;

	if (!m)
		return 0;
	lr_frame_fill(m, t, psn);
	t0 = rte_get_tsc_cycles();
	end = t0 + wait;
	while (rte_eth_tx_burst(pt->id, 0, &m, 1) == 0)
		if (rte_get_tsc_cycles() > end || lr_stopping()) {
			rte_pktmbuf_free(m);
			return 0;
		}
	do {
		uint16_t n = rte_eth_rx_burst(pt->id, 0, bufs, (uint16_t)o->burst);

		now = rte_get_tsc_cycles();
		for (uint16_t i = 0; i < n; i++)
			if (lr_frame_match(bufs[i], &got) && got == (psn & ROCE_PSN_MASK))
				done = true;
		rte_pktmbuf_free_bulk(bufs, n);
	} while (!done && now < end && !lr_stopping());
	return done ? RTE_MAX(now - t0, (uint64_t)1) : 0;
}

static int
lr_run_ping(const struct lr_opts *o, struct lr_port *pt, const struct lr_template *t)
{
	uint64_t *rtt = calloc(o->count, sizeof(*rtt)), wait = lr_cycles(o->ping_wait);
	uint64_t t0 = rte_get_tsc_cycles(), end = t0 + lr_cycles(o->duration), sum = 0;
	uint32_t n = 0, lost = 0, warm = RTE_MIN(o->count / 10, 1000u), psn = 0;

	if (!rtt) {
		fprintf(stderr, "linkrate: out of memory\n");
		return 1;
	}
	for (uint32_t i = 0; i < warm && !lr_stopping(); i++)
		lr_ping_once(o, pt, t, psn++, wait);
	while (n + lost < o->count && !lr_stopping() && rte_get_tsc_cycles() < end) {
		uint64_t c = lr_ping_once(o, pt, t, psn++, wait);

		if (c)
			sum += rtt[n++] = c;
		else
			lost++;
	}
	printf("result role=ping driver=%s size=%u count=%u lost=%u", pt->driver, o->size, n, lost);
	if (n) {
		qsort(rtt, n, sizeof(*rtt), lr_cmp_u64);
		printf(" rtt_min_us=%.3f rtt_p50_us=%.3f rtt_p99_us=%.3f rtt_max_us=%.3f rtt_avg_us=%.3f",
		       lr_seconds(rtt[0]) * 1e6, lr_quantile_us(rtt, n, 0.5),
		       lr_quantile_us(rtt, n, 0.99), lr_seconds(rtt[n - 1]) * 1e6,
		       lr_seconds(sum) * 1e6 / n);
	}
	lr_print_stats(pt);
	free(rtt);
	return n ? 0 : 1;
}

static void
lr_swap(uint8_t *a, uint8_t *b, size_t n)
{
	uint8_t tmp[6];

	memcpy(tmp, a, n);
	memcpy(a, b, n);
	memcpy(b, tmp, n);
}

static int
lr_run_pong(const struct lr_opts *o, struct lr_port *pt)
{
	struct rte_mbuf *bufs[LR_MAX_BURST];
	uint64_t start = rte_get_tsc_cycles(), deadline = start + lr_cycles(o->timeout);
	uint64_t idle = lr_cycles(o->idle_exit), t_seen = 0, echoed = 0, dropped = 0;
	bool seen = false;

	while (!lr_stopping()) {
		uint16_t n = rte_eth_rx_burst(pt->id, 0, bufs, (uint16_t)o->burst), k = 0, sent;
		uint64_t now = rte_get_tsc_cycles();
		uint32_t psn;

		for (uint16_t i = 0; i < n; i++) {
			uint8_t *p = rte_pktmbuf_mtod(bufs[i], uint8_t *);
			struct roce_ipv4_hdr *ip = (struct roce_ipv4_hdr *)(p + sizeof(struct roce_eth_hdr));

			if (!lr_frame_match(bufs[i], &psn)) {
				rte_pktmbuf_free(bufs[i]);
				continue;
			}
			lr_swap(p, p + 6, 6);
			lr_swap(ip->src, ip->dst, 4);
			bufs[k++] = bufs[i];
		}
		if (k) {
			seen = true;
			t_seen = now;
			sent = rte_eth_tx_burst(pt->id, 0, bufs, k);
			echoed += sent;
			dropped += k - sent;
			rte_pktmbuf_free_bulk(bufs + sent, k - sent);
		}
		if (n == 0 && (now > deadline || (seen && now - t_seen > idle)))
			break;
	}
	printf("result role=pong driver=%s size=%u echoed=%" PRIu64 " dropped=%" PRIu64, pt->driver,
	       o->size, echoed, dropped);
	lr_print_stats(pt);
	return seen ? 0 : 1;
}

int
main(int argc, char **argv)
{
	struct lr_opts o;
	struct lr_port pt = { 0 };
	struct lr_template t;
	int rc, consumed;

	consumed = rte_eal_init(argc, argv);
	if (consumed < 0) {
		fprintf(stderr, "linkrate: EAL init failed: %s\n", rte_strerror(rte_errno));
		return 2;
	}
	argv[consumed] = argv[0];
	if (lr_parse_args(argc - consumed, argv + consumed, &o) != 0) {
		rte_eal_cleanup();
		return 2;
	}
	signal(SIGINT, lr_on_signal);
	signal(SIGTERM, lr_on_signal);
	if (lr_port_open(&o, &pt) != 0) {
		rte_eal_cleanup();
		return 2;
	}
	if (lr_template_init(&t, &pt.mac, o.dmac, o.size) != 0) {
		fprintf(stderr, "linkrate: cannot build a %u-byte frame\n", o.size);
		lr_port_close(&pt);
		rte_eal_cleanup();
		return 2;
	}
	printf("linkrate: ready role=%s driver=%s size=%u lcore=%u\n", lr_role_names[o.role],
	       pt.driver, o.size, rte_lcore_id());
	fflush(stdout);
	switch (o.role) {
	case LR_TX: rc = lr_run_tx(&o, &pt, &t); break;
	case LR_RX: rc = lr_run_rx(&o, &pt); break;
	case LR_PING: rc = lr_run_ping(&o, &pt, &t); break;
	default: rc = lr_run_pong(&o, &pt); break;
	}
	fflush(stdout);
	if (o.role == LR_TX || o.role == LR_PING)
		for (uint64_t end = rte_get_tsc_cycles() + lr_cycles(o.linger);
		     !lr_stopping() && rte_get_tsc_cycles() < end;)
			rte_delay_us_sleep(10000);
	lr_port_close(&pt);
	rte_eal_cleanup();
	return rc;
}
