/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * roce-perftest without a device: argument parsing, buffer layout, data
 * patterns, the bandwidth/latency arithmetic, the report formats and the
 * TCP exchange messages (over a socketpair).
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "perftest.h"

/* ---- helpers ------------------------------------------------------------ */

static char *g_err;
static size_t g_err_len;

/* Parse a space-separated command line; stderr text is kept in g_err.
 * p keeps pointers into argv (device, server name): the copies live in a
 * small ring so that a few parsed parameter sets stay valid at once. */
static int parse(struct pt_params *p, const char *cmdline)
{
	static char ring[4][512];
	static unsigned int next;
	char *copy = ring[next++ % 4], *argv[64], *save = NULL;
	int argc = 0, rc;
	FILE *err, *out = fopen("/dev/null", "w");

	snprintf(copy, sizeof(ring[0]), "%s", cmdline);
	for (char *tok = strtok_r(copy, " ", &save); tok && argc < 63; tok = strtok_r(NULL, " ", &save))
		argv[argc++] = tok;
	argv[argc] = NULL;
	free(g_err);
	g_err = NULL;
	err = open_memstream(&g_err, &g_err_len);
	rc = pt_params_parse(p, argc, argv, out, err);
	fclose(err);
	fclose(out);
	return rc;
}

/* What @p fn prints, as a string for the caller to free. (The memstream
 * variables are static: GCC's -Wdangling-pointer cannot follow fclose().) */
static char *capture(void (*fn)(FILE *f, void *arg), void *arg)
{
	static char *buf;
	static size_t len;
	FILE *f = open_memstream(&buf, &len);

	fn(f, arg);
	fclose(f);
	return buf;
}

/* ---- parameters ---------------------------------------------------------- */

/* The mode table: every entry complete, found by its name, RC for all. */
Test(params, mode_table)
{
	size_t n = 0;

	for (const struct pt_mode *m; (m = pt_mode_at(n)); n++) {
		cr_assert(m->name && m->title && m->run, "mode %zu incomplete", n);
		cr_assert_eq(pt_mode_find(m->name), m);
		cr_assert(m->conns & PT_CONN_BIT(PT_RC), "%s", m->name);
		/* UD has no remote memory: only SEND makes sense */
		cr_assert_eq(!!(m->conns & PT_CONN_BIT(PT_UD)), m->verb == PT_SEND, "%s", m->name);
		/* UC has no READ or atomics */
		if (m->verb == PT_READ || m->verb == PT_ATOMIC)
			cr_assert_not(m->conns & PT_CONN_BIT(PT_UC), "%s", m->name);
	}
	cr_assert_eq(n, 8);
	cr_assert_null(pt_mode_find("write"));
}

Test(params, defaults_follow_perftest)
{
	struct pt_params p;

	cr_assert_eq(parse(&p, "roce-perftest write_bw"), PT_PARSE_OK);
	cr_assert_eq(p.mode, &pt_mode_write_bw);
	cr_assert_eq(p.size, 65536);
	cr_assert_eq(p.iters, 5000);
	cr_assert_eq(p.tx_depth, 128);
	cr_assert_eq(p.cq_mod, 100);
	cr_assert_eq(p.num_qps, 1);
	cr_assert_eq(p.tcp_port, 18515);
	cr_assert_eq(p.ib_port, 1);
	cr_assert_eq(p.gid_index, -1);
	cr_assert_eq(p.conn, PT_RC);
	cr_assert_null(p.servername);
	cr_assert_not(p.single_process);

	cr_assert_eq(parse(&p, "roce-perftest send_bw"), PT_PARSE_OK);
	cr_assert_eq(p.iters, 1000);
	cr_assert_eq(p.rx_depth, 512);

	cr_assert_eq(parse(&p, "roce-perftest write_lat"), PT_PARSE_OK);
	cr_assert_eq(p.size, 2);
	cr_assert_eq(p.iters, 1000);
	cr_assert_eq(p.tx_depth, 1);

	cr_assert_eq(parse(&p, "roce-perftest atomic_bw"), PT_PARSE_OK);
	cr_assert_eq(p.size, 8);
	cr_assert_eq(p.atomic_op, PT_FETCH_AND_ADD);
}

Test(params, perftest_flags)
{
	struct pt_params p;

	cr_assert_eq(parse(&p, "x write_bw -d rxe0 -i 2 -x 1 -s 4K -n 64 -q 4 -t 32 -Q 8 -m 1024 -p 19000 "
			      "-S 3 -u 20 -I 64 -N -F --report_gbits 198.18.0.1"), PT_PARSE_OK, "%s", g_err);
	cr_assert_str_eq(p.ib_devname, "rxe0");
	cr_assert_eq(p.ib_port, 2);
	cr_assert_eq(p.gid_index, 1);
	cr_assert_eq(p.size, 4096);
	cr_assert_eq(p.iters, 64);
	cr_assert_eq(p.num_qps, 4);
	cr_assert_eq(p.tx_depth, 32);
	cr_assert_eq(p.cq_mod, 8);
	cr_assert_eq(p.mtu, 1024);
	cr_assert_eq(p.tcp_port, 19000);
	cr_assert_eq(p.sl, 3);
	cr_assert_eq(p.qp_timeout, 20);
	cr_assert_eq(p.inline_size, 64);
	cr_assert(p.no_peak);
	cr_assert(p.report_gbits);
	cr_assert_str_eq(p.servername, "198.18.0.1");

	cr_assert_eq(parse(&p, "x --test=atomic_lat -A CMP_AND_SWAP -o 4 --single-process --verify"),
		     PT_PARSE_OK, "%s", g_err);
	cr_assert_eq(p.mode, &pt_mode_atomic_lat);
	cr_assert_eq(p.atomic_op, PT_CMP_AND_SWAP);
	cr_assert_eq(p.out_reads, 4);
	cr_assert(p.single_process);
	cr_assert(p.verify);

	cr_assert_eq(parse(&p, "x send_bw -c UD -s 1024 --loopback --peer-dev rxe1 --peer-gid-index 3"), PT_PARSE_OK);
	cr_assert_eq(p.conn, PT_UD);
	cr_assert(p.single_process);
	cr_assert_str_eq(p.peer_devname, "rxe1");
	cr_assert_eq(p.peer_gid_index, 3);
	cr_assert_eq(p.peer_ib_port, 1, "peer port defaults to -i");

	/* long names, and the test name anywhere among the options */
	cr_assert_eq(parse(&p, "x --size=128 --iters=10 --connection=UC send_lat --duration 4"), PT_PARSE_OK, "%s", g_err);
	cr_assert_eq(p.mode, &pt_mode_send_lat);
	cr_assert_eq(p.conn, PT_UC);
	cr_assert_eq(p.duration, 4);
	cr_assert_eq(p.margin, 1, "margin defaults to duration/4");
	cr_assert(p.no_peak, "no peak in duration mode");
}

Test(params, test_name_from_argv0)
{
	struct pt_params p;

	cr_assert_eq(parse(&p, "/usr/bin/roce_read_bw -s 64"), PT_PARSE_OK, "%s", g_err);
	cr_assert_eq(p.mode, &pt_mode_read_bw);
	cr_assert_eq(parse(&p, "roce-perftest"), PT_PARSE_ERROR);
	cr_assert(strstr(g_err, "No test given"));
}

Test(params, outputs)
{
	struct pt_params p;

	cr_assert_eq(parse(&p, "x write_bw --output csv"), PT_PARSE_OK);
	cr_assert_eq(p.output, PT_OUT_CSV);
	cr_assert_null(p.out_file);
	cr_assert_eq(parse(&p, "x write_bw --out-file r.json"), PT_PARSE_OK);
	cr_assert_eq(p.output, PT_OUT_JSON, "--out-file alone writes JSON");
	cr_assert_str_eq(p.out_file, "r.json");
	cr_assert_eq(parse(&p, "x write_bw --output=xml"), PT_PARSE_ERROR);
}

Test(params, pacing)
{
	struct pt_params p;

	cr_assert_eq(parse(&p, "x write_bw"), PT_PARSE_OK);
	cr_assert_eq(p.pacing_kbps, 0, "no rate limit unless asked");
	cr_assert_eq(parse(&p, "x write_bw --pacing-kbps=10000"), PT_PARSE_OK);
	cr_assert_eq(p.pacing_kbps, 10000);
	cr_assert_eq(parse(&p, "x write_bw --pacing-kbps=-1"), PT_PARSE_ERROR);
	cr_assert_eq(parse(&p, "x write_bw --pacing-kbps=fast"), PT_PARSE_ERROR);
}

Test(params, help_and_version_exit)
{
	struct pt_params p;

	cr_assert_eq(parse(&p, "x -h"), PT_PARSE_EXIT);
	cr_assert_eq(parse(&p, "x write_bw --version"), PT_PARSE_EXIT);
}

/* Each of these is refused with a message naming the problem. */
Test(params, rejects_what_perftest_rejects)
{
	static const struct {
		const char *cmd, *msg;
	} bad[] = {
		{ "x read_bw -c UC", "does not support connection type UC" },
		{ "x read_bw -c UD", "does not support connection type UD" },
		{ "x atomic_bw -c UC", "does not support" },
		{ "x write_bw -c UD", "does not support" },
		{ "x write_bw -c XRC", "Invalid connection type" },
		{ "x write_bw -n 4", "Invalid number of iterations" },
		{ "x write_bw -s 0", "Invalid message size" },
		{ "x write_bw -s 9M", "Invalid message size" },
		{ "x write_bw -s 12x", "Invalid message size" },
		{ "x write_bw -m 1000", "Invalid MTU" },
		{ "x write_bw -q 0", "Invalid number of QPs" },
		{ "x write_bw -t 15001", "Invalid tx depth" },
		{ "x write_bw -e", "events" },
		{ "x write_lat -e", "events" },
		{ "x atomic_bw -s 16", "8-byte" },
		{ "x atomic_bw -a", "-a/--all" },
		{ "x write_bw -A CMP_AND_SWAP", "only for atomic" },
		{ "x atomic_bw -A XOR", "Invalid atomic type" },
		{ "x write_bw -D 5 -a", "cannot be combined" },
		{ "x write_bw -D 4 -f 2", "DURATION > 2*MARGIN" },
		{ "x write_bw -f 1", "needs -D" },
		{ "x send_bw -D 2 -e", "events" },
		{ "x write_lat -q 2", "only for bandwidth" },
		{ "x read_lat -t 4", "only for bandwidth" },
		{ "x write_bw -r 8", "only for SEND" },
		{ "x read_bw -I 16", "inline" },
		{ "x send_bw -o 4", "only for READ" },
		{ "x send_bw -c UD -s 8192", "fit the MTU" },
		{ "x write_bw --single-process host", "takes no server name" },
		{ "x write_bw --peer-dev rxe1", "need --single-process" },
		{ "x write_bw h1 h2", "Unexpected argument" },
		{ "x write_bw --bogus", "Invalid or incomplete option" },
		{ "x write_bw -s", "Invalid or incomplete option" },
		{ "x --test=nope", "Unknown test" },
		{ "x write_bw -x -1", "Invalid GID index" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct pt_params p;

		cr_expect_eq(parse(&p, bad[i].cmd), PT_PARSE_ERROR, "accepted: %s", bad[i].cmd);
		cr_expect(g_err && strstr(g_err, bad[i].msg), "'%s': message '%s' lacks '%s'",
			  bad[i].cmd, g_err ? g_err : "", bad[i].msg);
	}
}

Test(params, all_sizes)
{
	struct pt_params p;
	uint64_t s[32];

	cr_assert_eq(parse(&p, "x send_bw -a"), PT_PARSE_OK);
	cr_assert_eq(pt_params_sizes(&p, PT_MAX_SIZE, s, 32), 23);
	cr_assert_eq(s[0], 2);
	cr_assert_eq(s[22], 8u << 20);
	cr_assert_eq(pt_params_sizes(&p, 1024, s, 32), 10, "UD: up to the MTU");
	cr_assert_eq(s[9], 1024);
	cr_assert_eq(parse(&p, "x send_bw -s 300"), PT_PARSE_OK);
	cr_assert_eq(pt_params_sizes(&p, PT_MAX_SIZE, s, 32), 1);
	cr_assert_eq(s[0], 300);
}

/* ---- layout -------------------------------------------------------------- */

Test(layout, slots_windows_and_depths)
{
	struct pt_params p;
	struct pt_layout l;

	/* no verify: perftest's cycle buffer */
	cr_assert_eq(parse(&p, "x write_bw -s 1024"), PT_PARSE_OK);
	pt_layout_compute(&p, 1024, &l);
	cr_assert_eq(l.stride, 1024);
	cr_assert_eq(l.slots, 4);
	cr_assert_eq(l.window, 128);
	cr_assert_eq(l.area, 4096);

	/* verify: one slot per iteration, and no more outstanding than slots */
	cr_assert_eq(parse(&p, "x write_bw -s 1000 -n 64 --verify"), PT_PARSE_OK);
	pt_layout_compute(&p, 1024, &l);
	cr_assert_eq(l.stride, 1024, "cache-line multiple");
	cr_assert_eq(l.slots, 64);
	cr_assert_eq(l.window, 64);

	/* verify with big messages: the area is capped */
	cr_assert_eq(parse(&p, "x write_bw -s 4M -n 100 --verify"), PT_PARSE_OK);
	pt_layout_compute(&p, 1024, &l);
	cr_assert_eq(l.slots, PT_VERIFY_AREA_MAX / (4u << 20));
	cr_assert_eq(l.window, l.slots);
	cr_assert_leq(l.area, PT_VERIFY_AREA_MAX);

	/* UD receives carry the GRH */
	cr_assert_eq(parse(&p, "x send_bw -c UD -s 1024 -n 10 --verify"), PT_PARSE_OK);
	pt_layout_compute(&p, 1024, &l);
	cr_assert_geq(l.stride, 1024 + PT_UD_GRH);
	cr_assert_eq(l.rx_depth, 10, "receives owning distinct slots");

	/* ping-pong: one slot, one message in flight */
	cr_assert_eq(parse(&p, "x send_lat -n 100 --verify"), PT_PARSE_OK);
	pt_layout_compute(&p, 1024, &l);
	cr_assert_eq(l.slots, 1);
	cr_assert_eq(l.window, 1);

	/* -a sizes the slots for 8 MiB */
	cr_assert_eq(parse(&p, "x read_bw -a"), PT_PARSE_OK);
	pt_layout_compute(&p, 4096, &l);
	cr_assert_eq(l.stride, PT_MAX_SIZE);
	cr_assert_eq(l.slots, 1);
}

/* ---- patterns ------------------------------------------------------------ */

Test(pattern, round_trip_and_corruption)
{
	uint8_t buf[300];

	for (size_t len = 1; len <= sizeof(buf); len += 37) {
		pt_pattern_fill(buf, len, 77, 3);
		cr_assert_eq(pt_pattern_check(buf, len, 77, 3), SIZE_MAX, "len %zu", len);
		for (size_t off = 0; off < len; off += 5) {
			buf[off] ^= 0x10;
			cr_assert_eq(pt_pattern_check(buf, len, 77, 3), off, "flip at %zu of %zu", off, len);
			buf[off] ^= 0x10;
		}
	}
	pt_pattern_fill(buf, 64, 5, 0);
	cr_assert_neq(pt_pattern_check(buf, 64, 6, 0), SIZE_MAX, "another iteration differs");
	cr_assert_neq(pt_pattern_check(buf, 64, 5, 1), SIZE_MAX, "another QP differs");
	/* a shorter message is a prefix of a longer one of the same iteration */
	cr_assert_eq(pt_pattern_check(buf, 20, 5, 0), SIZE_MAX);
}

Test(pattern, iteration_recovery)
{
	uint8_t buf[16] = { 0 };
	uint64_t it = 0;

	pt_pattern_fill(buf, sizeof(buf), 123456789, 7);
	cr_assert(pt_pattern_iter(buf, sizeof(buf), 7, &it));
	cr_assert_eq(it, 123456789);
	cr_assert_not(pt_pattern_iter(buf, 7, 7, &it), "needs 8 bytes");
	memset(buf, 0, sizeof(buf));
	cr_assert_not(pt_pattern_iter(buf, sizeof(buf), 7, &it), "zeros are no pattern");
	for (uint64_t k = 0; k < 1000; k++) {
		cr_assert_neq(pt_pingpong_mark(k), 0);
		cr_assert_neq(pt_pingpong_mark(k), pt_pingpong_mark(k + 1));
	}
}

/* ---- arithmetic ------------------------------------------------------------ */

Test(report, bandwidth_from_timestamps)
{
	/* 10 messages of 1 MiB, posted every 1 ms from t=0, each completing
	 * 2 ms after its post: 10 MiB in 11 ms. */
	uint64_t tp[10], tc[10];
	struct pt_result r = { 0 };

	for (int i = 0; i < 10; i++) {
		tp[i] = (uint64_t)i * 1000000;
		tc[i] = tp[i] + 2000000;
	}
	pt_bw_compute(tp, tc, 10, 1 << 20, 1, false, false, &r);
	cr_assert_eq(r.iters, 10);
	cr_assert_float_eq(r.seconds, 0.011, 1e-12);
	cr_assert_float_eq(r.bw_avg, 10.0 / 0.011, 1e-6, "MiB/s");
	cr_assert_float_eq(r.msg_rate, 10 / 0.011 / 1e6, 1e-9);
	/* best window: all 10 in 11 ms -> 1.1 ms per message */
	cr_assert_float_eq(r.bw_peak, 1.0 / 0.0011, 1e-6);

	pt_bw_compute(tp, tc, 10, 1 << 20, 1, true, true, &r);
	cr_assert_float_eq(r.bw_peak, 0, 1e-12, "no peak with -N");
	cr_assert_float_eq(r.bw_avg, (10.0 * (1 << 20)) / 0.011 / 125e6, 1e-9, "Gb/s");

	pt_bw_compute(tp, tc, 0, 64, 1, false, false, &r);
	cr_assert_float_eq(r.bw_avg, 0, 1e-12, "nothing measured, nothing reported");
}

Test(report, bandwidth_with_cq_moderation)
{
	/* completions only every 4th (and the last): peak windows end there */
	uint64_t tp[10], tc[10];
	struct pt_result r = { 0 };

	for (int i = 0; i < 10; i++)
		tp[i] = (uint64_t)i * 100;
	for (int i = 0; i < 10; i++)
		tc[i] = i < 4 ? 1000 : i < 8 ? 1400 : 2000;
	pt_bw_compute(tp, tc, 10, 1000, 4, false, false, &r);
	cr_assert_float_eq(r.seconds, 2e-6, 1e-15);
	/* best: posts 4..7 (t=400) complete at 1400: 1000 ns / 4 = 250 ns per message;
	 * i=1..7: (1400-100)/7 = 185.7 ns is better; i=0..7: 1400/8 = 175 ns best */
	cr_assert_float_eq(r.bw_peak, 1000.0 * 1e9 / 175.0 / 1048576.0, 1e-6);
}

/* Feed @p w a count that rises by @p step every @p every ns, polled every @p poll ns. */
static void window_drive(struct pt_window *w, uint64_t step, uint64_t every, uint64_t poll)
{
	for (uint64_t now = 0; !pt_window_step(w, now, now / every * step); now += poll)
		;
}

Test(window, edges_fall_on_count_steps)
{
	/* 1 MiB at ~5 Gb/s with -Q 100: a count step of 100 every 166 ms, so a
	 * 2 s window holds ~12 steps. Polled every 1 us, at several phases of the
	 * steps against the deadlines, the rate is exactly 100 per 166 ms. */
	const uint64_t every = 166000000ull;

	for (uint64_t phase = 0; phase < every; phase += every / 7) {
		struct pt_window w = { .t_sample = 1000000000ull + phase,
				       .t_stop = 3000000000ull + phase,
				       .t_end = 4000000000ull + phase };

		window_drive(&w, 100, every, 1000);
		cr_assert(w.stopped);
		cr_assert_eq(w.t_sample_seen % every, 0, "start on a step: %lu",
			     (unsigned long)w.t_sample_seen);
		cr_assert_eq(w.t_stop_seen % every, 0, "stop on a step: %lu",
			     (unsigned long)w.t_stop_seen);
		cr_assert_geq(w.t_sample_seen, w.t_sample);
		cr_assert_lt(w.t_sample_seen, w.t_sample + every);
		cr_assert_geq(w.t_stop_seen, w.t_stop);
		cr_assert_lt(w.t_stop_seen, w.t_stop + every);
		double rate = (double)(w.n_stop - w.n_sample) / (double)(w.t_stop_seen - w.t_sample_seen);
		cr_assert_float_eq(rate, 100.0 / (double)every, 1e-18, "phase %lu: %g",
				   (unsigned long)phase, rate);
	}
}

Test(window, a_count_that_stops_still_ends_the_window)
{
	/* Nothing completes after 1.5 s: the stop comes at t_end with the last count. */
	struct pt_window w = { .t_sample = 1000000000ull, .t_stop = 3000000000ull,
			       .t_end = 4000000000ull };
	uint64_t now;

	for (now = 0; !pt_window_step(&w, now, (now < 1500000000ull ? now : 1500000000ull) / 1000000);
	     now += 1000)
		;
	cr_assert_eq(now, w.t_end);
	cr_assert(w.stopped);
	cr_assert_eq(w.t_stop_seen, w.t_end);
	cr_assert_eq(w.n_stop, 1500);
	cr_assert_eq(w.n_sample, 1000);

	/* Nothing at all: the window is [t_stop, t_end] and holds nothing. */
	struct pt_window idle = { .t_sample = 10, .t_stop = 20, .t_end = 30 };
	for (now = 0; !pt_window_step(&idle, now, 0); now++)
		;
	cr_assert(idle.stopped);
	cr_assert_eq(idle.t_sample_seen, 20);
	cr_assert_eq(idle.t_stop_seen, 30);
	cr_assert_eq(idle.n_stop - idle.n_sample, 0);
}

Test(report, latency_statistics)
{
	/* 12 samples (ns); the two largest are dropped as perftest does */
	uint64_t s[12] = { 9000, 1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 10000, 500000, 900000 };
	struct pt_result r = { 0 };

	cr_assert_eq(pt_lat_compute(s, 12, 1, &r), 0);
	cr_assert_float_eq(r.t_min, 1.0, 1e-9);
	cr_assert_float_eq(r.t_max, 10.0, 1e-9);
	cr_assert_float_eq(r.t_typical, 5.5, 1e-9, "median of 10");
	cr_assert_float_eq(r.t_avg, 5.5, 1e-9);
	cr_assert_float_eq(r.t_stdev, sqrt(8.25), 1e-9);
	cr_assert_float_eq(r.t_p99, 10.0, 1e-9);
	cr_assert_float_eq(r.t_p999, 10.0, 1e-9);

	/* ping-pong: half the round trip */
	uint64_t rt[5] = { 4000, 4000, 4000, 4000, 4000 };

	cr_assert_eq(pt_lat_compute(rt, 5, 2, &r), 0);
	cr_assert_float_eq(r.t_typical, 2.0, 1e-9);
	cr_assert_eq(pt_lat_compute(rt, 0, 2, &r), -1);
}

/* ---- output formats ---------------------------------------------------------- */

struct fmt_case {
	struct pt_params p;
	struct pt_info info;
	struct pt_result r;
};

static void fmt_row(FILE *f, void *arg)
{
	struct fmt_case *c = arg;

	pt_print_result(f, &c->p, &c->r);
}

static void fmt_head(FILE *f, void *arg)
{
	struct fmt_case *c = arg;

	pt_print_table_head(f, &c->p);
}

static void fmt_header(FILE *f, void *arg)
{
	struct fmt_case *c = arg;

	pt_print_header(f, &c->p, &c->info);
}

static void fmt_csv(FILE *f, void *arg)
{
	struct fmt_case *c = arg;

	pt_csv_head(f);
	pt_csv_row(f, &c->p, &c->info, &c->r);
}

static void fmt_json(FILE *f, void *arg)
{
	struct fmt_case *c = arg;

	pt_json_write(f, &c->p, &c->info, &c->r, 1);
}

static void fmt_dest(FILE *f, void *arg)
{
	struct fmt_case *c = arg;
	struct pt_dest d = { .lid = 0, .qpn = 0x11, .psn = 0xc7786e, .rkey = 0x256,
			     .vaddr = 0x56528be2f000, .out_reads = 128 };

	d.gid.raw[10] = 0xff;
	d.gid.raw[11] = 0xff;
	d.gid.raw[12] = 198;
	d.gid.raw[13] = 18;
	d.gid.raw[15] = 1;
	pt_print_dest(f, &c->p, "local", &d, true);
}

Test(format, table_like_perftest)
{
	struct fmt_case c = { .r = { .size = 4096, .iters = 8, .bw_peak = 29.31, .bw_avg = 5.2, .msg_rate = 0.001331 },
			      .info = { .role = PT_ROLE_CLIENT, .device = "rxe0", .mtu = 1024,
					.link_layer = IBV_LINK_LAYER_ETHERNET, .gid_index = 1,
					.tx_depth = 128, .cq_mod = 100 } };
	char *s;

	cr_assert_eq(parse(&c.p, "x write_bw"), PT_PARSE_OK);
	s = capture(fmt_head, &c);
	cr_assert(strstr(s, " #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]\n"));
	free(s);
	s = capture(fmt_row, &c);
	cr_assert_str_eq(s, " 4096       8                29.31              5.20   \t\t     0.001331\n");
	free(s);
	s = capture(fmt_header, &c);
	cr_assert(strstr(s, "                    RDMA_Write BW Test\n"), "%s", s);
	cr_assert(strstr(s, " Dual-port       : OFF\t\tDevice         : rxe0\n"));
	cr_assert(strstr(s, " Connection type : RC\t\tUsing SRQ      : OFF\n"));
	cr_assert(strstr(s, " TX depth        : 128\n"));
	cr_assert(strstr(s, " Mtu             : 1024[B]\n"));
	cr_assert(strstr(s, " Link type       : Ethernet\n"));
	cr_assert(strstr(s, " GID index       : 1\n"));
	cr_assert(strstr(s, " Data ex. method : Ethernet\n"));
	free(s);

	cr_assert_eq(parse(&c.p, "x read_bw"), PT_PARSE_OK);
	s = capture(fmt_dest, &c);
	cr_assert_str_eq(s, " local address: LID 0000 QPN 0x0011 PSN 0xc7786e OUT 0x80 RKey 0x000256 VAddr 0x0056528be2f000\n"
			 " GID: 00:00:00:00:00:00:00:00:00:00:255:255:198:18:00:01\n");
	free(s);

	/* Gb/s below 0.1 gets six decimals, as in perftest */
	cr_assert_eq(parse(&c.p, "x send_bw --report_gbits"), PT_PARSE_OK);
	c.r.bw_peak = 0.185399;
	c.r.bw_avg = 0.090659;
	c.r.msg_rate = 0.011067;
	c.r.size = 1024;
	s = capture(fmt_row, &c);
	cr_assert_str_eq(s, " 1024       8           0.185399            0.090659            0.011067\n");
	free(s);
	s = capture(fmt_head, &c);
	cr_assert(strstr(s, "BW peak[Gb/sec]    BW average[Gb/sec]"));
	free(s);

	cr_assert_eq(parse(&c.p, "x atomic_lat -A CMP_AND_SWAP"), PT_PARSE_OK);
	s = capture(fmt_header, &c);
	cr_assert(strstr(s, "                    Atomic CMP_AND_SWAP Latency Test\n"), "%s", s);
	cr_assert(strstr(s, " Outstand reads  :"));
	free(s);
	s = capture(fmt_head, &c);
	cr_assert(strstr(s, " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]"
			    "    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] \n"), "%s", s);
	free(s);
	c.r = (struct pt_result){ .size = 8, .iters = 1000, .t_min = 1.5, .t_max = 9, .t_typical = 2.25,
				  .t_avg = 2.5, .t_stdev = 0.5, .t_p99 = 8, .t_p999 = 9 };
	s = capture(fmt_row, &c);
	cr_assert_str_eq(s, " 8       1000          1.50           9.00         2.25     \t       2.50        \t0.50   "
			 "\t\t8.00    \t\t9.00   \n");
	free(s);
}

Test(format, csv_and_json)
{
	struct fmt_case c = { .r = { .size = 4096, .iters = 64, .seconds = 0.5, .bw_peak = 30, .bw_avg = 20.5,
				     .msg_rate = 0.005, .verify_checked = 64 },
			      .info = { .single = true, .device = "rxe0", .peer_device = "rxe\"1", .mtu = 1024,
					.link_layer = IBV_LINK_LAYER_ETHERNET, .gid_index = 1 } };
	char *s, *line2;
	int commas1 = 0, commas2 = 0;

	cr_assert_eq(parse(&c.p, "x write_bw --verify"), PT_PARSE_OK);
	s = capture(fmt_csv, &c);
	line2 = strchr(s, '\n') + 1;
	for (char *q = s; q < line2; q++)
		commas1 += *q == ',';
	for (char *q = line2; *q; q++)
		commas2 += *q == ',';
	cr_assert_eq(commas1, commas2, "header and row have the same columns: %s", s);
	cr_assert_str_eq(line2, "write_bw,RC,single,rxe0,4096,64,1,0.500000,30.000000,20.500000,MiB/sec,0.005000,"
			 ",,,,,,,,ok,64,0,0,\n");
	free(s);
	c.r.cpu_ns_msg = 412.25;
	s = capture(fmt_csv, &c);
	cr_assert(strstr(s, ",ok,64,0,0,412.2\n") || strstr(s, ",ok,64,0,0,412.3\n"),
		  "CPU per message in the last column: %s", s);
	free(s);

	c.r.verify_errors = 2;
	s = capture(fmt_json, &c);
	cr_assert(strstr(s, "\"test\": \"write_bw\""), "%s", s);
	cr_assert(strstr(s, "\"peer_device\": \"rxe\\\"1\""), "escaped: %s", s);
	cr_assert(strstr(s, "\"bw_avg\": 20.500000"));
	cr_assert(strstr(s, "\"verify\": \"failed\""));
	if (access("/usr/bin/python3", X_OK) == 0) {
		char path[] = "/tmp/pt_json_XXXXXX", cmd[128];
		int fd = mkstemp(path);

		cr_assert_geq(fd, 0);
		cr_assert_eq(write(fd, s, strlen(s)), (ssize_t)strlen(s));
		close(fd);
		snprintf(cmd, sizeof(cmd), "/usr/bin/python3 -c 'import json,sys; json.load(open(sys.argv[1]))' %s", path);
		cr_expect_eq(system(cmd), 0, "python's json accepts the output");
		unlink(path);
	}
	free(s);
	c.r.verify_errors = 0;
	c.r.verify_checked = 0;
	cr_assert_str_eq(pt_verify_word(&c.p, &c.r), "failed", "nothing checked is no pass");
	c.p.verify = false;
	cr_assert_str_eq(pt_verify_word(&c.p, &c.r), "off");
}

/* ---- exchange ---------------------------------------------------------------- */

Test(exchange, hello_detects_mismatch)
{
	struct pt_params a, b;
	uint8_t buf[128];
	size_t n;
	char *msg = NULL;
	size_t len;
	FILE *err;

	cr_assert_eq(parse(&a, "x write_bw -s 4096 -n 64"), PT_PARSE_OK);
	n = pt_hello_encode(&a, buf, sizeof(buf));
	cr_assert_gt(n, 0);
	err = open_memstream(&msg, &len);
	cr_assert_eq(pt_hello_check(&a, buf, n, err), 0);
	cr_assert_eq(parse(&b, "x write_bw -s 8192 -n 64 -q 2"), PT_PARSE_OK);
	cr_assert_eq(pt_hello_check(&b, buf, n, err), -1);
	cr_assert_eq(parse(&b, "x read_bw -s 4096 -n 64"), PT_PARSE_OK);
	cr_assert_eq(pt_hello_check(&b, buf, n, err), -1);
	cr_assert_eq(pt_hello_check(&a, buf, n - 1, err), -1, "truncated");
	buf[0] ^= 1;
	cr_assert_eq(pt_hello_check(&a, buf, n, err), -1, "bad magic");
	fclose(err);
	cr_assert(strstr(msg, "size (-s) is 8192 here, 4096 at the peer"), "%s", msg);
	cr_assert(strstr(msg, "number of QPs (-q) is 2 here, 1 at the peer"), "%s", msg);
	cr_assert(strstr(msg, "test is read_bw here, write_bw at the peer"), "%s", msg);
	cr_assert(strstr(msg, "not roce-perftest"), "%s", msg);
	free(msg);
}

struct peer_arg {
	struct pt_link link;
	struct pt_params p;
	struct pt_dest local[2], remote[2];
	struct pt_result mine, theirs;
	int rc;
};

static void *peer_thread(void *arg)
{
	struct peer_arg *a = arg;

	a->rc = pt_xchg_hello(&a->link, &a->p) ||
		pt_xchg_dests(&a->link, a->local, a->remote, 2) ||
		pt_xchg_sync(&a->link, 7) ||
		pt_xchg_result(&a->link, 7, &a->mine, &a->theirs);
	return NULL;
}

Test(exchange, round_trip_over_socketpair)
{
	int sv[2];
	struct peer_arg x = { 0 }, y = { 0 };
	pthread_t th;
	struct pt_qp_counts counts[2] = { { 5, 5, 9, 0 }, { 6, 6, 9, 1 } }, got[2];
	struct pt_progress pr = { .num_qps = 2, .qp = counts }, in = { .num_qps = 2, .qp = got };

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	x.link.fd = sv[0];
	y.link.fd = sv[1];
	cr_assert_eq(parse(&x.p, "x send_bw -q 2 -s 512 -n 10"), PT_PARSE_OK);
	cr_assert_eq(parse(&y.p, "x send_bw -q 2 -s 512 -n 10"), PT_PARSE_OK);
	for (int i = 0; i < 2; i++) {
		x.local[i] = (struct pt_dest){ .lid = 1, .qpn = 0x11 + i, .psn = 0xabcdef, .rkey = 0x1234,
					       .vaddr = 0x7f0000001000ull, .out_reads = 16, .mtu = IBV_MTU_1024 };
		x.local[i].gid.raw[15] = (uint8_t)i;
		y.local[i] = (struct pt_dest){ .qpn = 0x20 + i, .psn = 0x123, .mtu = IBV_MTU_4096 };
	}
	x.mine = (struct pt_result){ .valid = true, .size = 512, .iters = 10, .bw_avg = 1.25, .t_p99 = 3.5,
				     .verify_checked = 10, .lost = 2 };
	y.mine = (struct pt_result){ .size = 512 };
	cr_assert_eq(pthread_create(&th, NULL, peer_thread, &y), 0);
	peer_thread(&x);
	pthread_join(th, NULL);
	cr_assert_eq(x.rc, 0);
	cr_assert_eq(y.rc, 0);
	cr_assert_eq(y.remote[1].qpn, 0x12);
	cr_assert_eq(y.remote[1].psn, 0xabcdef);
	cr_assert_eq(y.remote[1].vaddr, 0x7f0000001000ull);
	cr_assert_eq(y.remote[1].gid.raw[15], 1);
	cr_assert_eq(y.remote[0].mtu, IBV_MTU_1024);
	cr_assert_eq(x.remote[0].qpn, 0x20);
	cr_assert(y.theirs.valid);
	cr_assert_float_eq(y.theirs.bw_avg, 1.25, 0);
	cr_assert_float_eq(y.theirs.t_p99, 3.5, 0);
	cr_assert_eq(y.theirs.lost, 2);
	cr_assert_not(x.theirs.valid);

	/* DONE carries the counters; receive credits stay unlimited */
	cr_assert_eq(pt_send_done(&x.link, 3, &pr), 0);
	cr_assert_eq(pt_recv_done(&y.link, 3, &in), 0);
	cr_assert(in.done);
	cr_assert_eq(got[1].posted, 6);
	cr_assert_eq(got[1].received, 1);
	/* a message out of step is refused */
	cr_assert_eq(pt_send_done(&x.link, 4, &pr), 0);
	cr_assert_eq(pt_recv_done(&y.link, 3, &in), -1);
	/* so is a peer that hangs up */
	close(sv[0]);
	cr_assert_eq(pt_xchg_sync(&y.link, 1), -1);
	close(sv[1]);
}
