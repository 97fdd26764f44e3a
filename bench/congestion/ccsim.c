/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ccsim: a deterministic discrete-event model of the congestion testbed
 * (bench/congestion/testbed.sh) driving the REAL reaction and notification
 * points (lib/xport dcqcn.c, delay_cc.c), to tune their parameters in
 * seconds without the noisy shared machine; the testbed then confirms.
 *
 *   ccsim [options] MODE      MODE: dcqcn | delay | none
 *     -n N       senders (1..16) [2]
 *     -r MBPS    bottleneck rate [100]
 *     -L MBPS    the hosts' line rate (they pace at it, dcqcn_pace_line) [= -r]
 *     -T SEC     simulated time [10]
 *     -k/-K/-B   switch K_min / K_max / buffer in bytes [5000 / 50000 / 250000]
 *     -p PCT     marking probability at K_max [100]
 *     -N US      the receiver's CNP interval [50]
 *     -d US      base RTT without a queue (host software + wire) [300]
 *     -w PKTS    the sender's window of unacknowledged packets [256]
 *     -R MS      the ACK timeout (go back N when nothing was acknowledged
 *                for that long) [67: perftest's timeout 14]
 *     -P K=V     a [port] key of the testbed's config: dcqcn_ai_mbps,
 *                dcqcn_hai_mbps, dcqcn_timer_us, dcqcn_alpha_us, dcqcn_g_inv,
 *                dcqcn_bytes, dcqcn_f, dcqcn_min_mbps, delay_target_us,
 *                delay_ai_mbps, delay_beta_pct, delay_max_md_pct
 *                (defaults: the testbed's values)
 *     -s US      senders start this far apart [0]
 *     -o DIR     write DIR/MODE.switch.csv and DIR/MODE.macs as the testbed
 *                does, for analyze.py (summary and plots)
 *     -x         check issue 20's targets and exit 1 if one is missed: with
 *                dcqcn or delay, Jain >= 0.95 and the bottleneck >= 0.9 busy
 *                over the last half, the queue below K_max in >= 90 % of the
 *                samples, no drop; with none, drops and retransmissions
 *
 * The model: every sender always has data (write_bw), sends 1082-byte
 * frames (1024 bytes of RoCE payload, MTU 1500) paced as the engine's
 * pacer (xport_pace_charge: payload + 96 bytes per frame at the lower of
 * the line rate and the RP's rate), at most a window of packets
 * unacknowledged (the engine's: -w at first, halved on a NAK or timeout
 * down to 8, one more per window acknowledged), go-back-N on a loss (the
 * receiver NAKs the first gap, once; the ACK timer covers a lost resend). The switch
 * is ecn_switch's queue (mark on enqueue with RED probability from a fixed
 * seed, tail drop) drained at -r. The receiver answers a CE-marked,
 * in-sequence packet with a CNP (dcqcn_np_ce) and acknowledges every
 * packet; frames reach the receiver half a base RTT after they leave the
 * bottleneck, CNPs, ACKs and NAKs the sender half a base RTT after that.
 * cc = delay times one packet at a time (the engine's RTT probe).
 * Prints one JSON line: per-flow rate over the last half, Jain, bottleneck
 * use, queue mean/max/share below K_max, marks, drops, retransmissions.
 */
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dcqcn.h"
#include "red.h"
#include "delay_cc.h"

#define MAXN 16
#define FRAME 1082u          /* wire bytes of a 1024-byte payload frame */
#define PAYLOAD 1024u
#define PACE_OVERHEAD 96u    /* XPORT_PACE_OVERHEAD */
#define QSLOTS 65536u
#define FIFO 65536u          /* in-flight messages per direction and sender */
#define TICK_NS 10000000ull  /* report interval: 10 ms */

enum mode { M_DCQCN, M_DELAY, M_NONE };

struct msg { uint64_t at; uint32_t seq; uint8_t kind; bool ce; };
enum { K_ACK, K_NAK, K_CNP };

struct fifo { struct msg m[FIFO]; uint32_t head, len; };

static void
push(struct fifo *f, struct msg m)
{
	if (f->len == FIFO) {
		fprintf(stderr, "ccsim: fifo full\n");
		exit(1);
	}
	f->m[(f->head + f->len++) % FIFO] = m;
}

static struct msg *
peek(struct fifo *f)
{
	return f->len ? &f->m[f->head] : NULL;
}

static void
pop(struct fifo *f)
{
	f->head = (f->head + 1) % FIFO;
	f->len--;
}

struct sender {
	struct dcqcn_rp rp;
	struct delay_rp dl;
	uint64_t next_send;      /* pacer */
	uint32_t next_seq, acked;
	uint32_t window, credit; /* the engine's loss-based window (xport_req_window_*) */
	bool probe_out;
	uint32_t probe_seq;
	uint64_t probe_ns;
	struct fifo back;        /* ACK / NAK / CNP towards the sender */
	/* receiver side of this flow */
	struct dcqcn_np np;
	uint32_t expect;
	bool nak_sent;
	uint64_t progress_ns;    /* when acked last moved (the ACK timer) */
	uint64_t bytes_tick, retx, timeouts;
	uint32_t max_seq;
	double *series;
};

struct qframe { uint64_t arrive; uint32_t seq; uint8_t src; bool ce; };

static struct sender S[MAXN];
static struct qframe q[QSLOTS];
static uint32_t qh, ql;
static uint64_t qbytes;
static struct fifo to_rx;    /* frames after the bottleneck, by delivery time */

static uint64_t rng = 0x9e3779b97f4a7c15ull; /* red.h draws */

static uint32_t
jkbps(const struct sender *s, enum mode m, uint32_t line)
{
	uint32_t r = m == M_DCQCN ? dcqcn_rp_rate(&s->rp) : m == M_DELAY ? delay_rp_rate(&s->dl) : 0;
	return r ? r : line;
}

/* xport_req_window_loss(): halve, not below XPORT_MIN_WINDOW */
static void
window_loss(struct sender *s)
{
	s->window = s->window / 2 > 8 ? s->window / 2 : 8;
}

/* xport_req_window_acked(): one more per window's worth acknowledged */
static void
acked_more(struct sender *s, uint32_t n, uint32_t cap)
{
	s->credit += n;
	while (s->credit >= s->window && s->window < cap) {
		s->credit -= s->window;
		s->window++;
	}
	if (s->window == cap)
		s->credit = 0;
}

static double
jain(const double *x, int n)
{
	double s = 0, q2 = 0;
	for (int i = 0; i < n; i++) {
		s += x[i];
		q2 += x[i] * x[i];
	}
	return q2 > 0 ? s * s / (n * q2) : 0;
}

int
main(int argc, char **argv)
{
	int n = 2;
	double mbps = 100, line_mbps = 0, secs = 10;
	uint32_t kmin = 5000, kmax = 50000, buf = 250000, pmax = 100, cnp_us = 50, rtt_us = 300,
		 win = 256, stagger_us = 0;
	bool check = false;
	uint64_t rto_ns = 67108864ull;
	const char *outdir = NULL;
	struct dcqcn_params dp;
	struct delay_params lp;
	/* the testbed's scaled values (testbed.sh write_config) */
	uint32_t ai = 1, hai = 5, timer = 4000, alpha = 1000, ginv = 256, f = 1, minm = 1, dtarget = 1500,
		 dai = 1, beta = 80, maxmd = 50;
	uint64_t bytes = 10u << 20;
	int c;

	while ((c = getopt(argc, argv, "n:r:L:T:k:K:B:p:N:d:w:R:P:s:o:x")) != -1) {
		switch (c) {
		case 'n': n = atoi(optarg); break;
		case 'r': mbps = atof(optarg); break;
		case 'L': line_mbps = atof(optarg); break;
		case 'T': secs = atof(optarg); break;
		case 'k': kmin = (uint32_t)atoi(optarg); break;
		case 'K': kmax = (uint32_t)atoi(optarg); break;
		case 'B': buf = (uint32_t)atoi(optarg); break;
		case 'p': pmax = (uint32_t)atoi(optarg); break;
		case 'N': cnp_us = (uint32_t)atoi(optarg); break;
		case 'd': rtt_us = (uint32_t)atoi(optarg); break;
		case 'w': win = (uint32_t)atoi(optarg); break;
		case 'R': rto_ns = (uint64_t)(atof(optarg) * 1e6); break;
		case 's': stagger_us = (uint32_t)atoi(optarg); break;
		case 'o': outdir = optarg; break;
		case 'x': check = true; break;
		case 'P': {
			char key[64];
			unsigned long long v;
			if (sscanf(optarg, "%63[^=]=%llu", key, &v) != 2)
				goto usage;
#define KEY(name, var) if (!strcmp(key, name)) { var = v; break; }
			do {
				KEY("dcqcn_ai_mbps", ai) KEY("dcqcn_hai_mbps", hai) KEY("dcqcn_timer_us", timer)
				KEY("dcqcn_alpha_us", alpha) KEY("dcqcn_g_inv", ginv) KEY("dcqcn_bytes", bytes)
				KEY("dcqcn_f", f) KEY("dcqcn_min_mbps", minm) KEY("delay_target_us", dtarget)
				KEY("delay_ai_mbps", dai) KEY("delay_beta_pct", beta)
				KEY("delay_max_md_pct", maxmd)
				goto usage;
			} while (0);
			break;
		}
		default: goto usage;
		}
	}
	if (optind != argc - 1 || n < 1 || n > MAXN)
		goto usage;
	enum mode mode;
	if (!strcmp(argv[optind], "dcqcn"))
		mode = M_DCQCN;
	else if (!strcmp(argv[optind], "delay"))
		mode = M_DELAY;
	else if (!strcmp(argv[optind], "none"))
		mode = M_NONE;
	else
		goto usage;
	if (line_mbps == 0)
		line_mbps = mbps;
	uint32_t line = (uint32_t)(line_mbps * 1000);
	dcqcn_params_default(&dp, line);
	dp.ai_kbps = ai * 1000;
	dp.hai_kbps = hai * 1000;
	dp.timer_ns = timer * 1000ull;
	dp.alpha_ns = alpha * 1000ull;
	dp.g_inv = ginv;
	dp.bytes = bytes;
	dp.f = f;
	dp.min_kbps = minm * 1000;
	delay_params_default(&lp, line);
	lp.target_ns = dtarget * 1000ull;
	lp.ai_kbps = dai * 1000;
	lp.beta_pct = beta;
	lp.max_md_pct = maxmd;
	lp.min_kbps = minm * 1000;

	uint64_t end = (uint64_t)(secs * 1e9);
	uint64_t half_rtt = rtt_us * 500ull;
	double ns_per_byte = 8000.0 / mbps;
	uint64_t ticks = end / TICK_NS;
	double *qs = calloc(ticks + 1, sizeof(double));
	for (int i = 0; i < n; i++) {
		dcqcn_rp_init(&S[i].rp);
		delay_rp_init(&S[i].dl);
		S[i].next_send = (uint64_t)i * stagger_us * 1000;
		S[i].window = win;
		S[i].series = calloc(ticks + 1, sizeof(double));
		if (!S[i].series)
			qs = NULL;
	}
	if (!qs) {
		fprintf(stderr, "ccsim: out of memory\n");
		return 1;
	}
	uint64_t now = 0, link_free = 0, next_tick = TICK_NS, marks = 0, drops = 0, tick = 0;
	uint64_t hist_below = 0, hist_n = 0;
	double qsum = 0;
	uint64_t qmax = 0;

	while (now < end) {
		/* the next event */
		uint64_t t = next_tick;
		for (int i = 0; i < n; i++) {
			struct sender *s = &S[i];
			if (s->next_seq - s->acked < s->window && s->next_send < t)
				t = s->next_send;
			struct msg *m = peek(&s->back);
			if (m && m->at < t)
				t = m->at;
			if (s->next_seq != s->acked && s->progress_ns + rto_ns < t)
				t = s->progress_ns + rto_ns;
			uint64_t d = mode == M_DCQCN ? dcqcn_rp_next_ns(&s->rp) : 0;
			if (d && d < t)
				t = d;
		}
		if (ql && link_free < t)
			t = link_free > q[qh].arrive ? link_free : q[qh].arrive;
		struct msg *r = peek(&to_rx);
		if (r && r->at < t)
			t = r->at;
		if (t < now)
			t = now;
		now = t;

		/* the bottleneck: the head leaves when the link is free */
		while (ql && link_free <= now) {
			struct qframe *h = &q[qh];
			uint64_t start = link_free > h->arrive ? link_free : h->arrive;
			if (start > now)
				break;
			link_free = start + (uint64_t)(FRAME * ns_per_byte);
			push(&to_rx, (struct msg){ .at = link_free + half_rtt, .seq = h->seq,
						   .kind = h->src, .ce = h->ce });
			S[h->src].bytes_tick += FRAME;
			qh = (qh + 1) % QSLOTS;
			ql--;
			qbytes -= FRAME;
		}
		/* the receiver */
		while ((r = peek(&to_rx)) && r->at <= now) {
			struct sender *s = &S[r->kind];
			if (r->seq == s->expect) {
				s->expect++;
				s->nak_sent = false;
				if (r->ce && mode != M_NONE && dcqcn_np_ce(&s->np, cnp_us * 1000ull, now))
					push(&s->back, (struct msg){ .at = now + half_rtt, .kind = K_CNP });
				push(&s->back, (struct msg){ .at = now + half_rtt, .seq = s->expect, .kind = K_ACK });
			} else if (r->seq > s->expect && !s->nak_sent) {
				s->nak_sent = true;
				push(&s->back, (struct msg){ .at = now + half_rtt, .seq = s->expect, .kind = K_NAK });
			}
			pop(&to_rx);
		}
		for (int i = 0; i < n; i++) {
			struct sender *s = &S[i];
			struct msg *m;
			while ((m = peek(&s->back)) && m->at <= now) {
				if (m->kind == K_CNP) {
					if (mode == M_DCQCN)
						dcqcn_rp_cnp(&s->rp, &dp, now);
				} else if (m->seq > s->acked) {
					acked_more(s, m->seq - s->acked, win);
					s->acked = m->seq;
					s->progress_ns = now;
					if (s->probe_out && s->probe_seq < m->seq) {
						s->probe_out = false;
						if (mode == M_DELAY)
							delay_rp_sample(&s->dl, &lp, now - s->probe_ns, now);
					}
					if (m->kind == K_NAK && s->next_seq > m->seq) {
						window_loss(s);
						s->retx += s->next_seq - m->seq;
						s->next_seq = m->seq; /* go back N */
						s->probe_out = false;   /* Karn */
					}
				} else if (m->kind == K_NAK && s->next_seq > m->seq) {
					window_loss(s);
					s->retx += s->next_seq - m->seq;
					s->next_seq = m->seq;
					s->probe_out = false;
				}
				pop(&s->back);
			}
			if (s->next_seq != s->acked && now >= s->progress_ns + rto_ns) {
				/* the ACK timer: go back to the first unacknowledged packet */
				s->retx += s->next_seq - s->acked;
				s->next_seq = s->acked;
				s->probe_out = false;
				s->progress_ns = now;
				s->timeouts++;
				window_loss(s);
			}
			if (mode == M_DCQCN)
				dcqcn_rp_timer(&s->rp, &dp, now);
			/* send */
			while (s->next_seq - s->acked < s->window && s->next_send <= now) {
				uint32_t kbps = mode == M_NONE ? line : jkbps(s, mode, line);
				if (line < kbps)
					kbps = line;
				uint64_t bits = (PAYLOAD + PACE_OVERHEAD) * 8ull;
				/* the pacer keeps its schedule (late by at most an instant here) */
				s->next_send = (s->next_send > now ? s->next_send : now) +
					       bits * 1000000u / kbps;
				if (mode == M_DCQCN)
					dcqcn_rp_sent(&s->rp, &dp, bits / 8);
				if (!s->probe_out && s->next_seq >= s->max_seq) {
					s->probe_out = true;
					s->probe_seq = s->next_seq;
					s->probe_ns = now;
				}
				if (s->next_seq == s->acked)
					s->progress_ns = now; /* the ACK timer starts */
				uint32_t seq = s->next_seq++;
				if (s->next_seq > s->max_seq)
					s->max_seq = s->next_seq;
				/* the switch (the forward delay is counted after the bottleneck) */
				uint64_t arrive = now;
				if (qbytes + FRAME > buf || ql == QSLOTS) {
					drops++;
					continue;
				}
				bool ce = red_mark(&rng, qbytes, kmin, kmax, pmax);

				marks += ce;
				q[(qh + ql) % QSLOTS] = (struct qframe){ .arrive = arrive, .seq = seq,
									  .src = (uint8_t)i, .ce = ce };
				ql++;
				qbytes += FRAME;
			}
		}
		if (now >= next_tick) {
			if (tick <= ticks) {
				qs[tick] = (double)qbytes;
				for (int i = 0; i < n; i++) {
					S[i].series[tick] = S[i].bytes_tick * 8.0 / (TICK_NS / 1e9) / 1e6;
					S[i].bytes_tick = 0;
				}
			}
			tick++;
			next_tick += TICK_NS;
		}
	}

	/* summary over the last half */
	uint64_t from = ticks / 2;
	double per[MAXN] = { 0 }, total = 0;
	for (uint64_t k = from; k < ticks; k++) {
		for (int i = 0; i < n; i++)
			per[i] += S[i].series[k];
		qsum += qs[k];
		if (qs[k] > qmax)
			qmax = (uint64_t)qs[k];
		hist_below += qs[k] < kmax;
		hist_n++;
	}
	uint64_t retx = 0, timeouts = 0;
	for (int i = 0; i < n; i++) {
		timeouts += S[i].timeouts;
		per[i] /= (double)(ticks - from);
		total += per[i];
		retx += S[i].retx;
	}
	/* the whole run's queue too (the first incast is where drops come from) */
	uint64_t allbelow = 0, allmax = 0;
	for (uint64_t k = 0; k < ticks; k++) {
		allbelow += qs[k] < kmax;
		if (qs[k] > allmax)
			allmax = (uint64_t)qs[k];
	}
	printf("{\"mode\": \"%s\", \"senders\": %d, \"flow_mbps_last_half\": [", argv[optind], n);
	for (int i = 0; i < n; i++)
		printf("%s%.1f", i ? ", " : "", per[i]);
	printf("], \"jain_last_half\": %.3f, \"bottleneck_share_last_half\": %.3f, "
	       "\"queue_mean_bytes_last_half\": %.0f, \"queue_max_bytes\": %" PRIu64
	       ", \"queue_below_kmax_share\": %.3f, \"marks\": %" PRIu64 ", \"drops\": %" PRIu64
	       ", \"retransmitted\": %" PRIu64 ", \"timeouts\": %" PRIu64 "}\n",
	       jain(per, n), total / mbps, qsum / (double)hist_n, allmax,
	       (double)allbelow / (double)ticks, marks, drops, retx, timeouts);
	(void)hist_below;
	(void)qmax;
	int rc = 0;
	if (check) {
		double j = jain(per, n), share = total / mbps, below = (double)allbelow / (double)ticks;
		if (mode == M_NONE) {
			if (drops == 0 || retx == 0) {
				fprintf(stderr, "ccsim: cc = none: no drop or no retransmission\n");
				rc = 1;
			}
		} else if (j < 0.95 || share < 0.9 || below < 0.9 || drops) {
			fprintf(stderr, "ccsim: %s missed: Jain %.3f (>= 0.95), bottleneck %.3f (>= 0.9), "
					"below K_max %.3f (>= 0.9), drops %" PRIu64 " (0)\n",
				argv[optind], j, share, below, drops);
			rc = 1;
		}
	}

	if (outdir) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s.macs", outdir, argv[optind]);
		FILE *fm = fopen(path, "w");
		snprintf(path, sizeof(path), "%s/%s.switch.csv", outdir, argv[optind]);
		FILE *fs = fopen(path, "w");
		if (!fm || !fs) {
			perror(path);
			if (fm)
				fclose(fm);
			if (fs)
				fclose(fs);
			free(qs);
			return 1;
		}
		fprintf(fs, "time_ms,queue_bytes,marks,drops,forwarded");
		for (int i = 0; i < n; i++) {
			fprintf(fm, "s%d 02:00:00:00:00:%02x\n", i + 1, i + 1);
			fprintf(fs, ",02:00:00:00:00:%02x", i + 1);
		}
		fprintf(fs, "\n");
		for (uint64_t k = 0; k < ticks; k++) {
			fprintf(fs, "%" PRIu64 ",%.0f,0,0,0", (k + 1) * 10, qs[k]);
			for (int i = 0; i < n; i++)
				fprintf(fs, ",%.0f", S[i].series[k] * 1e6 * (TICK_NS / 1e9) / 8);
			fprintf(fs, "\n");
		}
		fclose(fm);
		fclose(fs);
	}
	free(qs);
	for (int i = 0; i < n; i++)
		free(S[i].series);
	return rc;
usage:
	fprintf(stderr, "usage: ccsim [-n N] [-r MBPS] [-L MBPS] [-T SEC] [-k B] [-K B] [-B B] [-p PCT] "
			"[-N US] [-d US] [-w PKTS] [-R MS] [-P KEY=V]... [-s US] [-o DIR] [-x] dcqcn|delay|none\n");
	return 2;
}
