/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * End to end: unmodified Debian ibverbs programs (ibverbs-utils, perftest)
 * and our roce-perftest, through the verbs shim, on two roce-daemons in two
 * network namespaces (scripts/lab.sh), between the hosts and on one host
 * (the daemon's loopback path); then what happens when a client is killed
 * mid-transfer, when the daemon stops, and when a peer does not resolve.
 *
 * Needs root, DPDK and the Debian tools; skips otherwise. Addresses are
 * 198.18.0.0/15 only (lab.sh). Every program runs under a time limit; the
 * daemons sleep when idle and the pingpongs use event mode (-e) where they
 * can, so at most two threads poll at once; perftest runs are short.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helpers.h"
#include "integ_lab.h"

#define OUT_MAX 65536

static char lab_name[16];
static bool lab_is_up;
static bool lab_mgmt_link; /* lab.sh -p af_xdp: the kernels talk over a second veth pair */
static char tmp_dir[64];
static char out[OUT_MAX];

static const char *
lab_cmd(void)
{
	return lab_cmd_of(lab_name);
}

/*
 * Sanitizer builds: the uninstrumented Debian programs load an instrumented
 * shim, so they need the ASan runtime preloaded (only them, not lab.sh).
 */
static const char *
app_prefix(void)
{
	static char pfx[512];
	const char *pre = getenv("INTEG_CHILD_PRELOAD");

	if (pre == NULL || pre[0] == '\0')
		return "";
	snprintf(pfx, sizeof(pfx), "env LD_PRELOAD=%s ASAN_OPTIONS=%s ", pre,
		 getenv("INTEG_CHILD_ASAN_OPTIONS") ? getenv("INTEG_CHILD_ASAN_OPTIONS") : "");
	return pfx;
}

static int
lab(const char *sub)
{
	return t_run(out, sizeof(out), 60, "%s %s", lab_cmd(), sub);
}

static bool
have(const char *prog)
{
	return t_run(NULL, 0, 5, "command -v %s > /dev/null", prog) == 0;
}

/*
 * Bring lab @p name up with lab.sh options @p opts ("-w 2", "-p af_xdp"),
 * wait until its daemons resolved each other. @p required: a missing tool is
 * a failure (CI's Debian 12 machine has them all), not a skip.
 */
static void
lab_up_opts(const char *name, const char *opts, bool required)
{
	char cmd[128];

	if (geteuid() != 0)
		cr_skip_test("needs root (network namespaces)");
	if (required)
		cr_assert(have("ibv_rc_pingpong") && have("ib_write_bw") && have("ibv_asyncwatch") &&
			  have("dpdk-telemetry.py"),
			  "needs ibverbs-utils, perftest and dpdk (dpdk-telemetry.py)");
	else if (!have("ibv_rc_pingpong") || !have("ib_write_bw"))
		cr_skip_test("needs ibverbs-utils and perftest");
	/* meson points LD_LIBRARY_PATH at the shim; the daemons must not load it
	 * (DPDK's mlx5 PMD links libibverbs): lab.sh sets it for the programs */
	unsetenv("LD_LIBRARY_PATH");
	snprintf(lab_name, sizeof(lab_name), "%s", name);
	lab_mgmt_link = strstr(opts, "af_xdp") != NULL && strstr(opts, "af_xdp_shared") == NULL;
	snprintf(tmp_dir, sizeof(tmp_dir), "/tmp/roce-integ-%s-XXXXXX", name);
	cr_assert_not_null(mkdtemp(tmp_dir));
	lab("down"); /* leftovers of an interrupted run */
	snprintf(cmd, sizeof(cmd), "%s up", opts);
	cr_assert_eq(lab(cmd), 0, "lab up %s failed:\n%s", opts, out);
	lab_is_up = true;
	/* the daemons resolve each other at start-up: wait for it (5 s) */
	for (int i = 0; i < 100; i++) {
		char pa[32], pb[32], na[4096], nb[4096];

		snprintf(pa, sizeof(pa), "%s-a", name);
		snprintf(pb, sizeof(pb), "%s-b", name);
		if (t_telemetry(pa, "/roce/neigh", na, sizeof(na)) == 0 &&
		    t_telemetry(pb, "/roce/neigh", nb, sizeof(nb)) == 0 &&
		    strstr(na, "198.18.0.12 ") != NULL && strstr(na, "reachable") != NULL &&
		    strstr(nb, "198.18.0.11 ") != NULL && strstr(nb, "reachable") != NULL)
			break;
		usleep(50000);
	}
}

static void
lab_up(const char *name)
{
	lab_up_opts(name, "", false);
}

/* Tear down; @return true if both daemons exited 0 after SIGTERM. */
static bool
lab_down(void)
{
	int rc;

	if (!lab_is_up)
		return true;
	lab_is_up = false;
	rc = lab("down");
	return rc == 0 && strstr(out, "daemon a: exited 0") != NULL &&
	       strstr(out, "daemon b: exited 0") != NULL;
}

static void
fini(void)
{
	if (lab_is_up) {
		bool ok = lab_down();

		t_fini_check(ok, "daemons did not exit 0 on SIGTERM:\n%s", out);
	}
	if (tmp_dir[0] != '\0')
		t_run(NULL, 0, 10, "rm -rf %s", tmp_dir);
}

/* ---- programs on the lab hosts ---- */

/* A program started in the background on a lab host. */
struct proc {
	char name[32];
	char path_out[128];
	char path_rc[128];
	char path_pid[128];
};

/*
 * Start @p cmd on @p host with the shim preloaded (lab.sh run), killed after
 * @p timeout_s. Its output, exit status and PID (the program's own: lab.sh
 * and ip netns exec exec it) land in files of the test's directory.
 */
static void
bg_start(struct proc *p, const char *name, char host, unsigned int timeout_s, const char *cmd)
{
	snprintf(p->name, sizeof(p->name), "%s", name);
	snprintf(p->path_out, sizeof(p->path_out), "%s/%s.out", tmp_dir, name);
	snprintf(p->path_rc, sizeof(p->path_rc), "%s/%s.rc", tmp_dir, name);
	snprintf(p->path_pid, sizeof(p->path_pid), "%s/%s.pid", tmp_dir, name);
	unlink(p->path_rc);
	unlink(p->path_pid);
	cr_assert_eq(t_run(NULL, 0, 10,
			   "(timeout -k 3 %u sh -c \"echo \\$\\$ > %s; exec %s run %c %s%s\" "
			   "> %s 2>&1 < /dev/null; echo $? > %s) > /dev/null 2>&1 &",
			   timeout_s, p->path_pid, lab_cmd(), host, app_prefix(), cmd, p->path_out,
			   p->path_rc),
		     0);
}

static void
slurp(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n = 0;

	if (f != NULL) {
		n = fread(buf, 1, len - 1, f);
		fclose(f);
	}
	buf[n] = '\0';
}

/* Wait up to @p timeout_s for @p p to end. @return its exit status, -1 if still running. */
static int
bg_wait(struct proc *p, unsigned int timeout_s, char *buf, size_t len)
{
	char rc[16];

	for (unsigned int i = 0; i < timeout_s * 20; i++) {
		if (access(p->path_rc, F_OK) == 0)
			break;
		usleep(50000);
	}
	slurp(p->path_out, buf, len);
	if (access(p->path_rc, F_OK) != 0)
		return -1;
	slurp(p->path_rc, rc, sizeof(rc));
	return atoi(rc);
}

static pid_t
bg_pid(struct proc *p)
{
	char buf[16];

	for (int i = 0; i < 100 && access(p->path_pid, F_OK) != 0; i++)
		usleep(20000);
	slurp(p->path_pid, buf, sizeof(buf));
	return (pid_t)atoi(buf);
}

/*
 * End @p p: wait up to @p grace_s for it, then SIGKILL it by its PID (one
 * this test started; none when its PID file never came: kill(0) would
 * end the test's own process group) and wait 10 s more.
 * @return its exit status, -1 if it still runs
 */
static int
bg_end(struct proc *p, unsigned int grace_s, char *buf, size_t len)
{
	int rc = bg_wait(p, grace_s, buf, len);
	pid_t pid;

	if (rc >= 0)
		return rc;
	pid = bg_pid(p);
	if (pid > 1)
		kill(pid, SIGKILL);
	return bg_wait(p, 10, buf, len);
}

/* The kernel address of a host: where the programs' TCP exchange goes. */
static const char *
host_ip(char host)
{
	if (lab_mgmt_link)
		return host == 'a' ? "198.18.1.1" : "198.18.1.2";
	return host == 'a' ? "198.18.0.1" : "198.18.0.2";
}

/* IBV_WC_RETRY_EXC_ERR as ibv_*_pingpong and perftest print it. */
static bool
retries_exhausted(const char *o)
{
	return strstr(o, "retry counter exceeded") != NULL || strstr(o, "Failed status 12") != NULL;
}

/*
 * Long lcore stalls (telemetry stalls_long: a worker did not poll for over
 * 200 ms) of both daemons so far. While an lcore does not poll, its QPs
 * neither acknowledge nor retransmit; the tools' QPs give up after 7
 * timeouts of 67 ms, so on an overloaded machine such a stall is enough for
 * IBV_WC_RETRY_EXC_ERR without any fault of ours (doc/architecture.md 15).
 */
static long long
lab_stalls_long(void)
{
	char buf[8192], prefix[32], cmd[32];
	long long sum = 0;

	for (char h = 'a'; h <= 'b'; h++) {
		long long workers = 1;

		snprintf(prefix, sizeof(prefix), "%s-%c", lab_name, h);
		if (t_telemetry(prefix, "/roce/info", buf, sizeof(buf)) == 0 &&
		    t_json_int(buf, "workers") > 1)
			workers = t_json_int(buf, "workers");
		/* every worker lcore: a stall of lcore 1 ends lcore 1's QPs just the same */
		for (long long w = 0; w < workers && w < 64; w++) {
			snprintf(cmd, sizeof(cmd), "/roce/lcore/stats,%lld", w);
			if (t_telemetry(prefix, cmd, buf, sizeof(buf)) == 0 &&
			    t_json_int(buf, "stalls_long") > 0)
				sum += t_json_int(buf, "stalls_long");
		}
	}
	return sum;
}

/* Both daemons' telemetry (port, lcore, QPs, objects), for a failure message. */
static const char *
lab_telemetry(void)
{
	static const char *const cmds[] = { "/roce/port/stats,0", "/roce/lcore/stats,0",
					    "/roce/lcore/stats,1", "/roce/qp/list", "/roce/app/stats" };
	static char dump[8 * 8192];
	char buf[8192], prefix[32];
	size_t n = 0;

	dump[0] = '\0';
	for (char h = 'a'; h <= 'b'; h++) {
		snprintf(prefix, sizeof(prefix), "%s-%c", lab_name, h);
		for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]) && n < sizeof(dump); i++) {
			if (t_telemetry(prefix, cmds[i], buf, sizeof(buf)) != 0)
				snprintf(buf, sizeof(buf), "(no answer)");
			n += (size_t)snprintf(dump + n, sizeof(dump) - n, "daemon %c %s: %s\n", h,
					      cmds[i], buf);
		}
	}
	return dump;
}

/*
 * A program that exhausted its transport retries is a failure, unless a
 * daemon's lcore stalled past the retry budget meanwhile (@p stalls_before:
 * lab_stalls_long() when it started): then @return true to run it once more.
 * Likewise once when perftest could not calibrate its own clock (it says
 * nothing about the stack; perftest_clock_failed()).
 */
static bool
retries_excused(const char *what, const char *o1, const char *o2, long long stalls_before,
		bool may_rerun)
{
	long long grew;

	if (perftest_clock_failed(o1) || perftest_clock_failed(o2)) {
		cr_assert(may_rerun, "%s: perftest could not calibrate its clock twice\n%s\n%s",
			  what, o1, o2);
		retry_record("integ", what, "perftest could not calibrate its clock (r^2 < 0.9)");
		return true;
	}
	if (!retries_exhausted(o1) && !retries_exhausted(o2))
		return false;
	grew = lab_stalls_long() - stalls_before;
	cr_assert(grew > 0 && may_rerun,
		  "%s: transport retries exhausted%s\n%s\n%s\n%s", what,
		  grew > 0 ? " (an lcore stalled, already ran it again)" : " without an lcore stall",
		  o1, o2, lab_telemetry());
	/* info, not warn: Criterion exits 1 after any warning (test/ci/check_criterion.py) */
	cr_log_info("%s: transport retries exhausted while a daemon's lcore stalled over 200 ms "
		    "(%lld times): the machine is overloaded, running it again", what, grew);
	char why[96];

	snprintf(why, sizeof(why), "stalls_long +%lld (transport retries exhausted)", grew);
	retry_record("integ", what, why);
	return true;
}

/* Wait up to 15 s until something on @p host listens on TCP @p port (the servers' exchange). */
static void
wait_listen(char host, unsigned int port)
{
	for (int i = 0; i < 150; i++) {
		if (t_run(NULL, 0, 5, "ip netns exec %s-%c ss -Hltn sport = :%u | grep -q LISTEN",
			  lab_name, host, port) == 0)
			return;
		usleep(100000);
	}
	cr_assert_fail("nothing listens on %c:%u", host, port);
}

/*
 * Run @p srv on @p sh, then @p cli on @p ch pointed at the server, both with
 * a time limit; assert both exit 0. Outputs in @p so / @p co.
 */
static void
pair(char sh, char ch, const char *srv, const char *cli, char *so, char *co, size_t len)
{
	struct proc ps, pc;
	char cmd[512];
	int rs, rcl;

	for (int attempt = 0;; attempt++) {
		long long stalls = lab_stalls_long();

		bg_start(&ps, "server", sh, 40, srv);
		wait_listen(sh, 18515);
		snprintf(cmd, sizeof(cmd), "%s %s", cli, host_ip(sh));
		bg_start(&pc, "client", ch, 30, cmd);
		rcl = bg_wait(&pc, 35, co, len);
		rs = bg_wait(&ps, 15, so, len);
		snprintf(cmd, sizeof(cmd), "'%s' %c->%c", cli, ch, sh);
		if ((rcl != 0 || rs != 0) && retries_excused(cmd, co, so, stalls, attempt == 0)) {
			if (rs < 0)
				bg_end(&ps, 0, so, len);
			continue;
		}
		break;
	}
	if (rcl != 0)
		cr_assert_fail("client '%s' on %c: exit %d\n%s\nserver:\n%s\n%s", cli, ch, rcl, co, so,
			       lab_telemetry());
	if (rs != 0)
		cr_assert_fail("server '%s' on %c: exit %d\n%s\nclient:\n%s\n%s", srv, sh, rs, so, co,
			       lab_telemetry());
}

/*
 * @p n pairs at once: server i runs "@p cmd -p 18515+i" on @p sh, client i
 * the same pointed at it from @p ch; assert all exit 0. Outputs in so_n[i] /
 * co_n[i]. Each process has its own CQs, so the daemons place their QPs on
 * the lcore with the fewest QPs (lib/ctl): with two workers, two pairs
 * spread over both.
 */
#define PAIRS_MAX 2
static char so_n[PAIRS_MAX][OUT_MAX], co_n[PAIRS_MAX][OUT_MAX];

static void
pairs(unsigned int n, char sh, char ch, const char *cmd)
{
	struct proc ps[PAIRS_MAX], pc[PAIRS_MAX];
	char c[512], name[24];
	int rs[PAIRS_MAX], rcl[PAIRS_MAX];

	cr_assert_leq(n, PAIRS_MAX);
	for (int attempt = 0;; attempt++) {
		long long stalls = lab_stalls_long();
		bool again = false;

		for (unsigned int i = 0; i < n; i++) {
			snprintf(name, sizeof(name), "server%u", i);
			cr_assert_lt(snprintf(c, sizeof(c), "%s -p %u", cmd, 18515 + i), (int)sizeof(c));
			bg_start(&ps[i], name, sh, 50, c);
		}
		for (unsigned int i = 0; i < n; i++)
			wait_listen(sh, 18515 + i);
		for (unsigned int i = 0; i < n; i++) {
			snprintf(name, sizeof(name), "client%u", i);
			cr_assert_lt(snprintf(c, sizeof(c), "%s -p %u %s", cmd, 18515 + i, host_ip(sh)),
				     (int)sizeof(c));
			bg_start(&pc[i], name, ch, 40, c);
		}
		for (unsigned int i = 0; i < n; i++)
			rcl[i] = bg_wait(&pc[i], 45, co_n[i], OUT_MAX);
		for (unsigned int i = 0; i < n; i++)
			rs[i] = bg_wait(&ps[i], 15, so_n[i], OUT_MAX);
		for (unsigned int i = 0; i < n && !again; i++) {
			snprintf(c, sizeof(c), "'%s' pair %u %c->%c", cmd, i, ch, sh);
			again = (rcl[i] != 0 || rs[i] != 0) &&
				retries_excused(c, co_n[i], so_n[i], stalls, attempt == 0);
		}
		if (!again)
			break;
		for (unsigned int i = 0; i < n; i++) {
			if (rs[i] < 0)
				bg_end(&ps[i], 0, so_n[i], OUT_MAX);
			if (rcl[i] < 0)
				bg_end(&pc[i], 0, co_n[i], OUT_MAX);
		}
	}
	for (unsigned int i = 0; i < n; i++) {
		cr_assert_eq(rcl[i], 0, "client %u '%s' on %c: exit %d\n%s\nserver:\n%s\n%s", i, cmd,
			     ch, rcl[i], co_n[i], so_n[i], lab_telemetry());
		cr_assert_eq(rs[i], 0, "server %u '%s' on %c: exit %d\n%s\nclient:\n%s\n%s", i, cmd,
			     sh, rs[i], so_n[i], co_n[i], lab_telemetry());
	}
}

/* ---- result parsing ---- */

/* ibv_*_pingpong: "N bytes in S seconds = R Mbit/sec" and "N iters in S seconds = U usec/iter". */
static void
check_pingpong(const char *o, unsigned int iters, const char *what)
{
	const char *p = strstr(o, "bytes in");
	double rate = 0, usec = 0;
	unsigned int n = 0;

	cr_assert_not_null(p, "%s: no result line:\n%s", what, o);
	cr_assert_eq(sscanf(strchr(p, '=') + 1, "%lf", &rate), 1, "%s", o);
	p = strstr(o, "iters in");
	cr_assert_not_null(p, "%s:\n%s", what, o);
	while (p > o && p[-1] != '\n')
		p--;
	cr_assert_eq(sscanf(p, "%u iters in %*f seconds = %lf", &n, &usec), 2, "%s", o);
	cr_assert_eq(n, iters, "%s: %u iterations of %u", what, n, iters);
	cr_assert_gt(rate, 0.0, "%s: %s", what, o);
	cr_assert_gt(usec, 0.0, "%s: %s", what, o);
}

/*
 * perftest's result row: the line starting with the message size, e.g.
 * " 4096  200  88.08  76.31  0.019536" (bw: peak, average, rate) or
 * " 64  200  85.5  343.7  144.8  153.0 ..." (lat: min, max, typical, avg).
 * @return the number at column @p col (0 = size), asserting every column > 0.
 */
static double
perftest_result(const char *o, unsigned int size, unsigned int iters, int col, const char *what)
{
	const char *p = o;
	char want[32];

	snprintf(want, sizeof(want), " %u ", size);
	while ((p = strstr(p, want)) != NULL) {
		const char *line = p;
		double v[6] = { 0 };
		unsigned int sz, it;

		while (line > o && line[-1] != '\n')
			line--;
		if (sscanf(line, "%u %u %lf %lf %lf %lf", &sz, &it, &v[0], &v[1], &v[2], &v[3]) >= 5 &&
		    sz == size && it == iters) {
			cr_assert_gt(v[col - 2], 0.0, "%s: column %d is 0:\n%s", what, col, line);
			return v[col - 2];
		}
		p++;
	}
	cr_assert_fail("%s: no result row for %u bytes x %u:\n%s", what, size, iters, o);
	return 0;
}

static char so[OUT_MAX], co[OUT_MAX];

static void
run_pingpong_gid(char sh, char ch, const char *tool, unsigned int gid, const char *args,
		 unsigned int iters)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "%s -g %u -n %u %s", tool, gid, iters, args);
	pair(sh, ch, cmd, cmd, so, co, sizeof(so));
	check_pingpong(so, iters, cmd);
	check_pingpong(co, iters, cmd);
}

static void
run_pingpong(char sh, char ch, const char *tool, const char *args, unsigned int iters)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "%s -g 1 -n %u %s", tool, iters, args);
	pair(sh, ch, cmd, cmd, so, co, sizeof(so));
	check_pingpong(so, iters, cmd);
	check_pingpong(co, iters, cmd);
}

/* A bandwidth test: column 3 is the average bandwidth (the client reports it; a
 * write/read server only reports when it takes part). */
static void
run_bw(char sh, char ch, const char *tool, unsigned int size, unsigned int iters, const char *extra)
{
	char cmd[256];

	if (size)
		snprintf(cmd, sizeof(cmd), "%s -n %u -s %u %s", tool, iters, size, extra);
	else
		snprintf(cmd, sizeof(cmd), "%s -n %u %s", tool, iters, extra);
	pair(sh, ch, cmd, cmd, so, co, sizeof(so));
	perftest_result(co, size ? size : 8, iters, 3, cmd);
}

static void
run_lat(char sh, char ch, const char *tool, unsigned int size, unsigned int iters)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "%s -n %u -s %u", tool, iters, size);
	pair(sh, ch, cmd, cmd, so, co, sizeof(so));
	perftest_result(co, size, iters, 5, cmd); /* t_avg */
}

/* ---- between the two hosts ---- */

TestSuite(hosts, .fini = fini, .timeout = 240);

Test(hosts, ibverbs_pingpongs)
{
	lab_up("itgpp");
	run_pingpong('a', 'b', "ibv_rc_pingpong", "", 500);
	run_pingpong('a', 'b', "ibv_rc_pingpong", "-e", 300);
	run_pingpong('a', 'b', "ibv_rc_pingpong", "-e -N", 200);
	run_pingpong('a', 'b', "ibv_rc_pingpong", "-e -c -s 20000", 100);
	run_pingpong('a', 'b', "ibv_uc_pingpong", "-e", 200);
	run_pingpong('a', 'b', "ibv_ud_pingpong", "-e", 200);
	run_pingpong('a', 'b', "ibv_srq_pingpong", "-e", 200);
	cr_assert(lab_down(), "daemons did not exit 0:\n%s", out);
}

/*
 * Debian's unmodified ibv_xsrq_pingpong: XRC domains, XRC SRQs, XRC INI and
 * TGT QPs, XRCETH on the wire. It prints no rate, only "success" at the end.
 */
static void
run_xsrq(char sh, char ch, const char *args, unsigned int iters)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "ibv_xsrq_pingpong -g 1 -n %u %s", iters, args);
	pair(sh, ch, cmd, cmd, so, co, sizeof(so));
	cr_assert_not_null(strstr(so, "success"), "%s server:\n%s", cmd, so);
	cr_assert_not_null(strstr(co, "success"), "%s client:\n%s", cmd, co);
}

Test(hosts, xsrq_pingpong)
{
	cr_assert(have("ibv_xsrq_pingpong"), "needs ibverbs-utils' ibv_xsrq_pingpong");
	lab_up("itgxr");
	run_xsrq('a', 'b', "", 500);
	run_xsrq('a', 'b', "-e -s 3000", 200);
	cr_assert(lab_down(), "daemons did not exit 0:\n%s", out);
}

Test(hosts, perftest)
{
	lab_up("itgpt");
	run_bw('a', 'b', "ib_write_bw", 4096, 500, "");
	run_bw('a', 'b', "ib_write_bw", 65536, 100, "");
	run_bw('a', 'b', "ib_read_bw", 16384, 200, "");
	run_bw('a', 'b', "ib_send_bw", 1024, 500, "");
	run_bw('a', 'b', "ib_atomic_bw", 0, 200, "");
	run_lat('a', 'b', "ib_write_lat", 64, 300);
	run_lat('a', 'b', "ib_write_lat", 4096, 100);
	cr_assert(lab_down(), "daemons did not exit 0:\n%s", out);
}

/*
 * IP datagrams host @p host's kernel received for an address it does not
 * own (/proc/net/snmp Ip: InAddrErrors): where RoCE frames to the daemon's
 * address end up if the lab's tc drop misses them.
 */
static long long
ip_in_addr_errors(char host)
{
	char buf[64];

	cr_assert_eq(t_run(buf, sizeof(buf), 10,
			   "ip netns exec %s-%c awk \"/^Ip:/ { if (h) print \\$6; h = 1 }\" /proc/net/snmp",
			   lab_name, host),
		     0, "%s", buf);
	return strtoll(buf, NULL, 10);
}

Test(hosts, roce_perftest_verify)
{
	static const char *const tests[] = { "write_bw", "read_bw", "send_bw", "atomic_bw",
					     "write_lat", "read_lat" };
	char cmd[512];

	lab_up("itgrp");
	long long addr_err_a = ip_in_addr_errors('a'), addr_err_b = ip_in_addr_errors('b');
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		snprintf(cmd, sizeof(cmd), "%s/app/perftest/roce-perftest %s --verify -n 200%s",
			 env("ROCE_BUILD_DIR"), tests[i],
			 strstr(tests[i], "atomic") ? "" : " -s 5000");
		pair('a', 'b', cmd, cmd, so, co, sizeof(so));
		cr_assert_not_null(strstr(co, "Data verification: OK"), "%s:\n%s", cmd, co);
		cr_assert_null(strstr(so, "Data verification: FAIL"), "%s:\n%s", cmd, so);
	}
	/* Thousands of RoCE frames from the daemons' TX rings (page fragments
	 * behind a linear Ethernet header), none of them routed by the kernel. */
	cr_expect_lt(ip_in_addr_errors('a') - addr_err_a, 20, "tc drop missed RoCE frames to host a");
	cr_expect_lt(ip_in_addr_errors('b') - addr_err_b, 20, "tc drop missed RoCE frames to host b");
	cr_assert(lab_down(), "daemons did not exit 0:\n%s", out);
}

/* A counter of host @p host's daemon: @p cmd is "/roce/port/stats,0", "/roce/lcore/stats,1"... */
static long long
daemon_ctr(char host, const char *cmd, const char *key)
{
	char buf[16384], prefix[32];
	long long v;

	snprintf(prefix, sizeof(prefix), "%s-%c", lab_name, host);
	cr_assert_eq(t_telemetry(prefix, cmd, buf, sizeof(buf)), 0, "telemetry %s on %c", cmd, host);
	v = t_json_int(buf, key);
	cr_assert_geq(v, 0, "%s on %c has no %s: %s", cmd, host, key, buf);
	return v;
}

static long long
worker_ctr(char host, unsigned int w, const char *key)
{
	char cmd[32];

	snprintf(cmd, sizeof(cmd), "/roce/lcore/stats,%u", w);
	return daemon_ctr(host, cmd, key);
}

/* roce-perftest @p test with @p args, data checked, from @p n clients on b at once. */
static void
run_verify(unsigned int n, const char *test, const char *args)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "%s/app/perftest/roce-perftest %s --verify %s",
		 env("ROCE_BUILD_DIR"), test, args);
	pairs(n, 'a', 'b', cmd);
	for (unsigned int i = 0; i < n; i++) {
		cr_assert_not_null(strstr(co_n[i], "Data verification: OK"), "%s:\n%s", cmd, co_n[i]);
		cr_assert_null(strstr(so_n[i], "Data verification: FAIL"), "%s:\n%s", cmd, so_n[i]);
	}
}

/*
 * IPv6 GIDs: the tools pick GID 2 (2001:db8::11/12, lab.sh), so every RoCE
 * frame is IPv6 (rx_roce_ipv6 counts them; all of rx_roce).
 */
Test(hosts, ipv6_gids)
{
	char buf[4096];
	long long roce[2], roce6[2];

	lab_up_opts("itgv6", "", true);
	cr_assert_eq(t_telemetry("itgv6-a", "/roce/port/gids,0", buf, sizeof(buf)), 0);
	cr_assert_not_null(strstr(buf, "\"2\":\"2001:db8::11\""), "GID 2 of a: %s", buf);
	cr_assert_eq(t_telemetry("itgv6-b", "/roce/port/gids,0", buf, sizeof(buf)), 0);
	cr_assert_not_null(strstr(buf, "\"2\":\"2001:db8::12\""), "GID 2 of b: %s", buf);
	for (int h = 0; h < 2; h++) {
		roce[h] = daemon_ctr((char)('a' + h), "/roce/port/stats,0", "rx_roce");
		roce6[h] = daemon_ctr((char)('a' + h), "/roce/port/stats,0", "rx_roce_ipv6");
	}
	/* -c: the receiver checks every buffer */
	run_pingpong_gid('a', 'b', "ibv_rc_pingpong", 2, "-e -c -s 3000", 300);
	cr_assert_not_null(strstr(co, "GID 2001:db8::12"), "client's own GID:\n%s", co);
	cr_assert_not_null(strstr(co, "GID 2001:db8::11"), "server's GID:\n%s", co);
	run_pingpong_gid('a', 'b', "ibv_ud_pingpong", 2, "-e -c", 200);
	run_bw('a', 'b', "ib_write_bw", 4096, 300, "-x 2");
	/* perftest prints GIDs byte by byte in decimal: 32:01:13:184 is 2001:0db8 */
	cr_assert_not_null(strstr(co, "GID: 32:01:13:184:"), "ib_write_bw -x 2:\n%s", co);
	run_bw('a', 'b', "ib_read_bw", 8192, 200, "-x 2");
	run_verify(1, "write_bw", "-x 2 -n 200 -s 5000");
	run_verify(1, "send_bw", "-x 2 -n 200 -s 3000");
	run_verify(1, "read_bw", "-x 2 -n 100 -s 5000");
	for (int h = 0; h < 2; h++) {
		char host = (char)('a' + h);
		long long d = daemon_ctr(host, "/roce/port/stats,0", "rx_roce") - roce[h];
		long long d6 = daemon_ctr(host, "/roce/port/stats,0", "rx_roce_ipv6") - roce6[h];

		cr_assert_gt(d6, 1000, "IPv6 RoCE frames to %c: %lld", host, d6);
		cr_assert_eq(d6, d, "RoCE frames to %c: %lld, of them IPv6 %lld", host, d, d6);
	}
	cr_assert(lab_down(), "daemons did not exit 0:\n%s", out);
}

/* ---- two workers per daemon: handoff rings and qpn % 2 ownership ---- */

TestSuite(workers, .fini = fini, .timeout = 300);

/*
 * Two workers, two RX/TX queues per daemon (lab.sh -w 2). Two processes at
 * once on each host: each one's QPs share its CQs, so lib/ctl puts them on
 * one lcore, the other process's on the other. RX queue w is whatever
 * af_packet's fanout hash chose, so frames for the other worker's QPs cross
 * the handoff rings. Both workers of both daemons transmit, both hand off.
 */
Test(workers, both_workers_carry_traffic_and_hand_off)
{
	long long tx[2][2], hrx[2][2], htx[2][2];

	lab_up_opts("itgw2", "-w 2", true);
	for (int h = 0; h < 2; h++) {
		char host = (char)('a' + h);

		cr_assert_eq(daemon_ctr(host, "/roce/info", "workers"), 2);
		for (unsigned int w = 0; w < 2; w++) {
			tx[h][w] = worker_ctr(host, w, "tx_packets");
			hrx[h][w] = worker_ctr(host, w, "handoff_rx");
			htx[h][w] = worker_ctr(host, w, "handoff_tx");
		}
	}
	/*
	 * -u 16: a local ACK timeout of 268 ms, not perftest's 67 ms. Two
	 * daemons of two workers each (six busy threads, ASan in one tree) on
	 * two cores stall for 50 to 120 ms many times a second (telemetry
	 * "stalls", under the 200 ms of stalls_long): CI once saw seven 67 ms
	 * timeouts in a row end a QP with nothing lost on the link. This test
	 * is about the workers' ownership and handoff; timeouts and loss are
	 * tested in engine_rc and rxe-interop's lossy cases.
	 */
	pairs(2, 'a', 'b', "ib_write_bw -q 4 -n 300 -s 4096 -u 16");
	for (unsigned int i = 0; i < 2; i++)
		perftest_result(co_n[i], 4096, 4 * 300, 3, "ib_write_bw -q 4");
	pairs(2, 'a', 'b', "ib_send_bw -q 4 -n 300 -s 2048 -u 16");
	for (unsigned int i = 0; i < 2; i++)
		perftest_result(co_n[i], 2048, 4 * 300, 3, "ib_send_bw -q 4");
	pairs(2, 'a', 'b', "ib_read_bw -q 4 -n 200 -s 8192 -u 16");
	for (unsigned int i = 0; i < 2; i++)
		perftest_result(co_n[i], 8192, 4 * 200, 3, "ib_read_bw -q 4");
	run_verify(2, "write_bw", "-q 4 -n 200 -s 5000");
	run_verify(2, "read_bw", "-q 4 -n 100 -s 5000");
	run_verify(2, "send_bw", "-q 4 -n 200 -s 3000");
	for (int h = 0; h < 2; h++) {
		char host = (char)('a' + h);
		long long handoffs = 0;

		for (unsigned int w = 0; w < 2; w++) {
			long long t = worker_ctr(host, w, "tx_packets") - tx[h][w];
			long long r = worker_ctr(host, w, "handoff_rx") - hrx[h][w];
			long long s = worker_ctr(host, w, "handoff_tx") - htx[h][w];

			cr_assert_gt(t, 500, "worker %u of %c sent %lld frames: it owned no busy QP\n%s",
				     w, host, t, lab_telemetry());
			/* A full ring drops (the transport resends): while the other
			 * worker is descheduled for long, which an overloaded 2-core
			 * machine does; so drops are reported, not failed. */
			cr_log_info("daemon %c worker %u: %lld frames sent, %lld handed to, %lld from "
				    "the other worker, %lld handoff drops, %lld stalls (max %lld us)",
				    host, w, t, s, r, worker_ctr(host, w, "handoff_drops"),
				    worker_ctr(host, w, "stalls"), worker_ctr(host, w, "stall_max_us"));
			handoffs += r;
		}
		cr_assert_gt(handoffs, 0, "no handoff on %c\n%s", host, lab_telemetry());
		/* as an operator reads them: lab.sh telemetry (dpdk-telemetry.py) */
		char sub[64];

		snprintf(sub, sizeof(sub), "telemetry %c /roce/lcore/stats,1", host);
		cr_assert_eq(lab(sub), 0, "%s", out);
		cr_assert_gt(t_json_int(out, "tx_packets"), 500, "%s", out);
		cr_assert_gt(t_json_int(out, "handoff_rx") + t_json_int(out, "handoff_tx"), 0, "%s",
			     out);
		/* what one worker enqueued (handoff_tx, drops apart), the other received */
		cr_assert_eq(worker_ctr(host, 0, "handoff_tx") - htx[h][0],
			     worker_ctr(host, 1, "handoff_rx") - hrx[h][1]);
		cr_assert_eq(worker_ctr(host, 1, "handoff_tx") - htx[h][1],
			     worker_ctr(host, 0, "handoff_rx") - hrx[h][0]);
	}
	cr_assert(lab_down(), "daemons did not exit 0:\n%s", out);
}

/* ---- af_xdp ---- */

TestSuite(af_xdp, .fini = fini, .timeout = 240);

/* The same verbs traffic over net_af_xdp on the veths (lab.sh -p af_xdp). */
Test(af_xdp, verbs_traffic)
{
	char buf[4096];
	long long roce[2];

	lab_up_opts("itgxd", "-p af_xdp", true);
	for (int h = 0; h < 2; h++) {
		cr_assert_eq(t_telemetry(h ? "itgxd-b" : "itgxd-a", "/roce/port/info,0", buf,
					 sizeof(buf)), 0);
		cr_assert_not_null(strstr(buf, "net_af_xdp"), "%s", buf);
		roce[h] = daemon_ctr((char)('a' + h), "/roce/port/stats,0", "rx_roce");
	}
	run_pingpong('a', 'b', "ibv_rc_pingpong", "-e -c -s 2048", 300);
	run_pingpong('a', 'b', "ibv_ud_pingpong", "-e -c", 200);
	run_bw('a', 'b', "ib_write_bw", 4096, 300, "");
	run_bw('a', 'b', "ib_send_bw", 1024, 300, "");
	run_verify(1, "write_bw", "-n 200 -s 5000");
	run_verify(1, "read_bw", "-n 100 -s 5000");
	run_verify(1, "send_bw", "-n 200 -s 3000");
	for (int h = 0; h < 2; h++) {
		long long d = daemon_ctr((char)('a' + h), "/roce/port/stats,0", "rx_roce") - roce[h];

		cr_assert_gt(d, 1000, "RoCE frames to %c over af_xdp: %lld", 'a' + h, d);
	}
	cr_assert(lab_down(), "daemons did not exit 0:\n%s", out);
}

/* ---- one host: the daemon's loopback path ---- */

TestSuite(loopback, .fini = fini, .timeout = 240);

Test(loopback, one_host)
{
	char buf[4096];

	lab_up("itglo");
	run_pingpong('a', 'a', "ibv_rc_pingpong", "-e", 300);
	run_pingpong('a', 'a', "ibv_uc_pingpong", "-e", 200);
	run_pingpong('a', 'a', "ibv_ud_pingpong", "-e", 200);
	run_pingpong('a', 'a', "ibv_srq_pingpong", "-e", 200);
	run_bw('a', 'a', "ib_write_bw", 4096, 300, "");
	run_bw('a', 'a', "ib_read_bw", 8192, 200, "");
	run_bw('a', 'a', "ib_send_bw", 2048, 300, "");
	run_bw('a', 'a', "ib_atomic_bw", 0, 200, "");
	run_lat('a', 'a', "ib_write_lat", 64, 200);
	/* nothing of it left the host */
	cr_assert_eq(t_telemetry("itglo-a", "/roce/port/stats,0", buf, sizeof(buf)), 0);
	cr_assert_gt(t_json_int(buf, "loopback"), 1000, "%s", buf);
	cr_assert(lab_down(), "daemons did not exit 0:\n%s", out);
}

/* ---- teardown ---- */

/* /roce/app/stats of @p host. */
static void
app_stats(char host, char *buf, size_t len)
{
	char prefix[32];

	snprintf(prefix, sizeof(prefix), "%s-%c", lab_name, host);
	cr_assert_eq(t_telemetry(prefix, "/roce/app/stats", buf, len), 0);
}

/* Wait up to 5 s until host's daemon holds no application object. */
static bool
wait_app_empty(char host, char *buf, size_t len)
{
	char prefix[32], qps[4096];

	snprintf(prefix, sizeof(prefix), "%s-%c", lab_name, host);
	for (int i = 0; i < 100; i++) {
		app_stats(host, buf, len);
		cr_assert_eq(t_telemetry(prefix, "/roce/qp/list", qps, sizeof(qps)), 0);
		if (t_json_int(buf, "conns") == 0 && t_json_int(buf, "qp") == 0 &&
		    t_json_int(buf, "mr") == 0 && t_json_int(buf, "dp_mrs") == 0 &&
		    t_json_int(buf, "cq") == 0 && t_json_int(buf, "pd") == 0 &&
		    strstr(qps, "[]") != NULL)
			return true;
		usleep(50000);
	}
	return false;
}

/* Wait up to 5 s until @p n clients, each with one QP, are on host's daemon. */
static bool
clients_on(char host, int n, char *buf, size_t len)
{
	for (int i = 0; i < 100; i++) {
		app_stats(host, buf, len);
		if (t_json_int(buf, "conns") == n && t_json_int(buf, "qp") == n)
			return true;
		usleep(50000);
	}
	return false;
}

TestSuite(teardown, .fini = fini, .timeout = 120);

Test(teardown, client_killed_mid_transfer_leaves_nothing)
{
	struct proc ws, wc, ps, pc;
	char buf[4096], cmd[256];
	long long stalls;
	pid_t pid;
	int rc;

	lab_up("itgkl");
	/*
	 * A long write stream, and next to it a second client pair. The
	 * pingpong must outlive the kill, so it starts only once the stream's
	 * QP is on b: started together, it ended before the stream had
	 * connected (CI stops 28 and 33: one client on b, no completion
	 * channel). 8000 iterations: 4-8 s at 0.5-1 ms per round trip, 16 s
	 * at 2 ms, inside the 45 s bound.
	 */
	stalls = lab_stalls_long();
	bg_start(&ps, "pserver", 'a', 45, "ibv_rc_pingpong -g 1 -e -p 18600 -n 8000 -s 256");
	wait_listen('a', 18600);
	/* a stream client that ended already runs once more only if perftest's
	 * own clock check failed (retries_excused()) */
	for (int attempt = 0;; attempt++) {
		bg_start(&ws, "wserver", 'a', 30, "ib_write_bw -D 8 -s 16384");
		wait_listen('a', 18515);
		bg_start(&wc, "wclient", 'b', 30, "ib_write_bw -D 8 -s 16384 198.18.0.1");
		if (clients_on('b', 1, buf, sizeof(buf)))
			break;
		rc = bg_wait(&wc, 0, co, sizeof(co));
		cr_assert(rc >= 0 && attempt == 0 &&
				  retries_excused("the stream's start", co, "", stalls, true),
			  "the stream client on b: %s\nclient (exit %d):\n%s\n%s", buf, rc, co,
			  lab_telemetry());
		bg_end(&ws, 0, so, sizeof(so));
	}
	bg_start(&pc, "pclient", 'b', 45, "ibv_rc_pingpong -g 1 -e -p 18600 -n 8000 -s 256 198.18.0.1");
	if (!clients_on('b', 2, buf, sizeof(buf))) {
		rc = bg_wait(&pc, 0, co, sizeof(co));
		cr_assert_fail("both clients on b: %s\npingpong client (exit %d):\n%s\n%s", buf, rc,
			       co, lab_telemetry());
	}
	usleep(500000);
	pid = bg_pid(&wc);
	cr_assert_gt(pid, 1);
	rc = kill(pid, SIGKILL);
	if (rc != 0) {
		slurp(wc.path_out, co, sizeof(co));
		slurp(ws.path_out, so, sizeof(so));
		cr_assert(retries_excused("the stream before the kill", co, so, stalls, true),
			  "kill %d: %s\nclient:\n%s\nserver:\n%s\n%s", (int)pid, strerror(errno), co,
			  so, lab_telemetry());
	} else {
		rc = bg_wait(&wc, 10, co, sizeof(co));
		cr_assert_eq(rc, 137, "killed by SIGKILL: %d\n%s", rc, co);
	}
	/* the other client is unaffected (unless an lcore stalled, see pair()) */
	rc = bg_wait(&pc, 50, co, sizeof(co));
	if (rc != 0 && retries_excused("pingpong next to the killed client", co, "", stalls, true)) {
		bg_wait(&ps, 10, so, sizeof(so));
	} else {
		cr_assert_eq(rc, 0, "pingpong client: %d\n%s\n%s", rc, co, lab_telemetry());
		cr_assert_eq(bg_wait(&ps, 10, so, sizeof(so)), 0, "pingpong server:\n%s", so);
		check_pingpong(co, 8000, "pingpong next to the killed client");
	}
	/* nothing of the killed client is left on b */
	cr_assert(wait_app_empty('b', buf, sizeof(buf)), "objects left on b: %s", buf);
	/* the orphaned stream server on a is killed too; a is clean afterwards */
	bg_end(&ws, 0, so, sizeof(so));
	cr_assert(wait_app_empty('a', buf, sizeof(buf)), "objects left on a: %s", buf);
	/* and the daemons serve new clients */
	snprintf(cmd, sizeof(cmd), "ibv_rc_pingpong -g 1 -e -n 100");
	pair('a', 'b', cmd, cmd, so, co, sizeof(so));
	check_pingpong(co, 100, cmd);
	cr_assert(lab_down(), "daemons did not exit 0:\n%s", out);
}

/* The last lines of host @p host's daemon log (lab.sh's state), for a failure message. */
static const char *
daemon_log(char host)
{
	static char log[8192];

	if (t_run(log, sizeof(log), 5, "tail -40 /tmp/roce-lab/%s/%c.log", lab_name, host) != 0)
		snprintf(log, sizeof(log), "(no log)");
	return log;
}

/* Wait 10 s for @p p, a client whose daemon stopped: it must end with an error, not hang. */
static void
expect_error_exit(struct proc *p, const char *what)
{
	int rc = bg_wait(p, 10, co, sizeof(co));

	cr_assert_neq(rc, -1, "%s still running 10 s after its daemon stopped:\n%s", what, co);
	cr_assert(rc > 0 && rc < 124, "%s: exit %d, wanted an error exit (not 0, not killed):\n%s",
		  what, rc, co);
	cr_log_info("%s: exit %d after the daemon stopped", what, rc);
}

/*
 * Stop host a's daemon with SIG@p sig while its clients run: a WRITE stream
 * posting and polling, an event-mode pingpong (asleep in ibv_get_cq_event
 * between messages) and ibv_asyncwatch (asleep in ibv_get_async_event). The
 * daemon exits 0 within 5 s (built with ASan: without a leak, LeakSanitizer
 * would make it exit 23); each client ends with an error within 10 s, the
 * watcher after exactly one IBV_EVENT_DEVICE_FATAL; the other daemon
 * forgets the orphaned peers' objects and serves new clients. @p opts: lab.sh
 * options ("-w 2": the two clients' QPs run on different workers).
 */
static void
daemon_stop_is_device_fatal(const char *name, const char *opts, const char *sig)
{
	struct proc aw, ws, wc, ps, pc;
	char buf[4096], cmd[64];
	unsigned int ms = 0;
	long long roce;
	const char *p;
	int rc;

	lab_up_opts(name, opts, true);
	bg_start(&aw, "asyncwatch", 'a', 40, "ibv_asyncwatch");
	/* it has the device open (its output is buffered until it exits); the
	 * device-list connection alone does not count: wait for the context */
	for (int i = 0; i < 100; i++) {
		app_stats('a', so, sizeof(so));
		if (t_json_int(so, "contexts") == 1)
			break;
		usleep(100000);
	}
	cr_assert_eq(t_json_int(so, "contexts"), 1, "ibv_asyncwatch did not open the device: %s", so);
	bg_start(&ws, "wserver", 'b', 40, "ib_write_bw -D 20 -s 16384");
	bg_start(&ps, "pserver", 'b', 40, "ibv_rc_pingpong -g 1 -e -p 18600 -n 1000000 -s 256");
	wait_listen('b', 18515);
	wait_listen('b', 18600);
	bg_start(&wc, "wclient", 'a', 40, "ib_write_bw -D 20 -s 16384 198.18.0.2");
	bg_start(&pc, "pclient", 'a', 40,
		 "ibv_rc_pingpong -g 1 -e -p 18600 -n 1000000 -s 256 198.18.0.2");
	/* both clients' QPs exist on a, and frames flow */
	for (int i = 0; i < 100; i++) {
		app_stats('a', buf, sizeof(buf));
		if (t_json_int(buf, "qp") == 2)
			break;
		usleep(50000);
	}
	cr_assert_eq(t_json_int(buf, "qp"), 2, "both clients on a: %s\n%s", buf, lab_telemetry());
	if (strstr(opts, "-w 2") != NULL) {
		/* two processes, two lcores: one QPN even, one odd */
		unsigned int parity = 0;
		char prefix[32], *q, *end;

		snprintf(prefix, sizeof(prefix), "%s-a", lab_name);
		cr_assert_eq(t_telemetry(prefix, "/roce/qp/list", buf, sizeof(buf)), 0);
		q = strchr(buf, '[');
		cr_assert_not_null(q, "%s", buf);
		for (q++;; q = end + strspn(end, " ,")) {
			unsigned long qpn = strtoul(q, &end, 10);

			if (end == q)
				break;
			parity |= 1u << (qpn % 2);
		}
		cr_assert_eq(parity, 3, "QPs of both workers: %s", buf);
	}
	roce = daemon_ctr('a', "/roce/port/stats,0", "rx_roce");
	usleep(500000);
	cr_assert_gt(daemon_ctr('a', "/roce/port/stats,0", "rx_roce") - roce, 100,
		     "no traffic before the stop\n%s", lab_telemetry());

	snprintf(cmd, sizeof(cmd), "stop a %s", sig);
	rc = lab(cmd);
	p = strstr(out, "daemon a: exited 0 after ");
	cr_assert(rc == 0 && p != NULL, "SIG%s: %s\n%s", sig, out, daemon_log('a'));
	cr_assert_eq(sscanf(p + strlen("daemon a: exited 0 after "), "%u", &ms), 1, "%s", out);
	cr_assert_lt(ms, 5000, "SIG%s: the daemon took %u ms to exit\n%s", sig, ms, daemon_log('a'));
	cr_log_info("SIG%s under traffic: the daemon exited 0 after %u ms", sig, ms);

	expect_error_exit(&wc, "ib_write_bw client");
	expect_error_exit(&pc, "ibv_rc_pingpong -e client");
	rc = bg_wait(&aw, 10, so, sizeof(so));
	cr_assert_neq(rc, -1, "ibv_asyncwatch still running after the daemon stopped");
	const char *ev = strstr(so, "IBV_EVENT_DEVICE_FATAL");

	cr_assert_not_null(ev, "no DEVICE_FATAL:\n%s", so);
	cr_assert_null(strstr(ev + 1, "IBV_EVENT_DEVICE_FATAL"), "reported once:\n%s", so);

	/* the servers on b lost their peers: they end (exhausted retries, the
	 * TCP exchange closed), or are killed here; b forgets their objects */
	bg_end(&ws, 10, so, sizeof(so));
	bg_end(&ps, 1, so, sizeof(so));
	cr_assert(wait_app_empty('b', buf, sizeof(buf)), "objects left on b: %s", buf);
	run_pingpong('b', 'b', "ibv_rc_pingpong", "-e", 100);
	cr_assert(lab_down(), "daemons did not exit 0:\n%s\n%s", out, daemon_log('a'));
}

/* with two workers: both lcores stop, each with QPs and traffic of its own */
Test(teardown, sigint_under_traffic_is_device_fatal)
{
	daemon_stop_is_device_fatal("itgdi", "-w 2", "INT");
}

Test(teardown, sigterm_under_traffic_is_device_fatal)
{
	daemon_stop_is_device_fatal("itgdt", "", "TERM");
}

/* ---- address resolution ---- */

Test(teardown, unresolvable_peer_is_etimedout)
{
	char cmd[1024];
	int rc;

	unsetenv("LD_LIBRARY_PATH"); /* the system library for this check */
	if (t_run(NULL, 0, 10, "/usr/bin/python3 -c \"import pyverbs.qp\"") != 0)
		cr_skip_test("needs python3-pyverbs");
	lab_up("itgrs");
	snprintf(cmd, sizeof(cmd), "%s run a %s/usr/bin/python3 %s/test/integ/resolve_timeout.py 2>&1",
		 lab_cmd(), app_prefix(), env("ROCE_SOURCE_DIR"));
	rc = t_run(so, sizeof(so), 60, "%s", cmd);
	cr_assert_eq(rc, 0, "%s", so);
	cr_assert_not_null(strstr(so, "rtr ETIMEDOUT"), "%s", so);
	cr_assert_not_null(strstr(so, "ah ETIMEDOUT"), "%s", so);
	cr_assert_not_null(strstr(so, "reachable rtr ok"), "%s", so);
	cr_assert(lab_down(), "daemons did not exit 0:\n%s", out);
}

/* ---- a hostile application ---- */

Test(teardown, hostile_client_hurts_only_itself)
{
	char buf[4096], cmd[1024];
	int rc;

	lab_up("itghc");
	snprintf(cmd, sizeof(cmd), "%s run a %s%s/test/integ/hostile_client 1", lab_cmd(),
		 app_prefix(), env("ROCE_BUILD_DIR"));
	rc = t_run(so, sizeof(so), 60, "%s", cmd);
	cr_assert_eq(rc, 0, "hostile client:\n%s", so);
	cr_assert_not_null(strstr(so, "rings corrupted"), "%s", so);
	cr_assert_not_null(strstr(so, "daemon alive"), "%s", so);
	/* its objects are gone, the daemon serves the next clients, here and remote */
	cr_assert(wait_app_empty('a', buf, sizeof(buf)), "objects left on a: %s", buf);
	run_pingpong('a', 'a', "ibv_rc_pingpong", "-e", 100);
	run_pingpong('a', 'b', "ibv_rc_pingpong", "-e", 100);
	cr_assert(lab_down(), "daemons did not exit 0:\n%s", out);
}

/* ---- memory windows between the hosts (issue 19) ---- */

TestSuite(mw, .fini = fini, .timeout = 120);

/*
 * mw_client: b binds a type 1 window (ibv_bind_mw) and a type 2 window
 * (IBV_WR_BIND_MW), a writes and reads through them; the invalidated type 2
 * key and a WRITE past the type 1 window get the remote access error NAK.
 */
Test(mw, windows_between_the_hosts_and_the_nak_of_a_violation)
{
	char srv[512], cli[512];

	lab_up("itgmw");
	snprintf(srv, sizeof(srv), "%s/test/integ/mw_client server", env("ROCE_BUILD_DIR"));
	snprintf(cli, sizeof(cli), "%s/test/integ/mw_client client", env("ROCE_BUILD_DIR"));
	pair('b', 'a', srv, cli, so, co, sizeof(so));
	cr_assert_not_null(strstr(so, "mw server: OK"), "%s", so);
	cr_assert_not_null(strstr(co, "mw client: OK"), "%s", co);
	cr_assert(lab_down(), "daemons did not exit 0:\n%s", out);
}

/* ---- RAW_PACKET QPs and flow steering (issue 19) ---- */

TestSuite(raw, .fini = fini, .timeout = 120);

/*
 * raw_client: a raw QP on b sends whole Ethernet frames of its own making;
 * a's daemon steers them by its flow rules (the best priority only) into a
 * raw QP's receive WQEs, byte for byte.
 */
Test(raw, frames_from_a_raw_qp_on_b_reach_a_raw_qp_on_a_by_its_flow)
{
	char srv[512], cli[512], buf[4096];

	lab_up("itgraw");
	snprintf(srv, sizeof(srv), "%s/test/integ/raw_client server", env("ROCE_BUILD_DIR"));
	snprintf(cli, sizeof(cli), "%s/test/integ/raw_client client", env("ROCE_BUILD_DIR"));
	pair('a', 'b', srv, cli, so, co, sizeof(so));
	cr_assert_not_null(strstr(so, "raw server: OK 16 frames"), "%s", so);
	cr_assert_not_null(strstr(co, "raw client: OK"), "%s", co);
	cr_assert_eq(t_telemetry("itgraw-a", "/roce/port/stats,0", buf, sizeof(buf)), 0);
	cr_assert_eq(t_json_int(buf, "rx_raw"), 16, "one copy per frame: %s", buf);
	cr_assert_eq(t_telemetry("itgraw-b", "/roce/port/stats,0", buf, sizeof(buf)), 0);
	cr_assert_eq(t_json_int(buf, "tx_raw"), 16, "%s", buf);
	cr_assert(lab_down(), "daemons did not exit 0:\n%s", out);
}

/* ---- memory the shim cannot share: the daemon's copy fallback ---- */

TestSuite(fallback, .fini = fini, .timeout = 120);

Test(fallback, file_and_stack_memory_work_and_a_dying_owner_is_harmless)
{
	char buf[4096], cmd[1024];
	int rc;

	lab_up("itgfb");
	/* WRITE/READ/SEND/ATOMIC between a file mapping, the stack and the heap */
	snprintf(cmd, sizeof(cmd), "%s run a %s%s/test/integ/fallback_client verify %s", lab_cmd(),
		 app_prefix(), env("ROCE_BUILD_DIR"), tmp_dir);
	rc = t_run(so, sizeof(so), 60, "%s 2>&1", cmd);
	cr_assert_eq(rc, 0, "%s", so);
	cr_assert_not_null(strstr(so, "fallback verify: OK"), "%s", so);
	cr_assert_eq(t_telemetry("itgfb-a", "/roce/port/stats,0", buf, sizeof(buf)), 0);
	cr_assert_gt(t_json_int(buf, "mr_fallback_copies"), 10, "%s", buf);
	cr_assert_eq(t_json_int(buf, "mr_fallback_errors"), 0, "%s", buf);
	/* the target of a WRITE stream is killed: the stream fails, the daemon lives */
	snprintf(cmd, sizeof(cmd), "%s run a %s%s/test/integ/fallback_client die %s", lab_cmd(),
		 app_prefix(), env("ROCE_BUILD_DIR"), tmp_dir);
	rc = t_run(co, sizeof(co), 60, "%s 2>&1", cmd);
	cr_assert_eq(rc, 0, "%s", co);
	cr_log_info("fallback owner killed: %s", co);
	cr_assert(wait_app_empty('a', buf, sizeof(buf)), "objects left on a: %s", buf);
	rc = t_run(so, sizeof(so), 60, "%s run a %s%s/test/integ/fallback_client verify %s 2>&1",
		   lab_cmd(), app_prefix(), env("ROCE_BUILD_DIR"), tmp_dir);
	cr_assert_eq(rc, 0, "after the kill: %s", so);
	cr_assert(lab_down(), "daemons did not exit 0:\n%s", out);
}
