/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The real, unmodified rdma-core tools (ibv_devices, ibv_devinfo from
 * Debian's ibverbs-utils) loading the shim through LD_LIBRARY_PATH:
 *  - with no daemon: an empty list, one clear message, the tools' own exit
 *    codes for "no devices" (ibv_devices 0, ibv_devinfo 255);
 *  - against shim-server (lib/ctl + lib/ipc, no DPDK): our device, port
 *    ACTIVE, Ethernet, both GIDs as RoCE v2;
 *  - pyverbs creating PD/MR/CQ/QP and moving the QP RESET->INIT->RTR->RTS.
 *
 * Environment (set by meson): SHIM_DIR (directory holding libibverbs.so.1),
 * SHIM_SERVER (the test server), IBV_DEVICES, IBV_DEVINFO (tool paths),
 * PYTHON3 and PYVERBS_SMOKE (Debian's /usr/bin/python3 and pyverbs_smoke.py);
 * in sanitizer builds SHIM_CHILD_PRELOAD / SHIM_CHILD_ASAN_OPTIONS for the
 * tools (they are not instrumented, the shim is).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct run {
	int status;      /* exit code, or -1 on signal/timeout */
	char out[65536];
	char err[8192];
};

static char dir[64];
static char sock[128];
static pid_t server = -1;

static const char *env_or_skip(const char *name)
{
	const char *v = getenv(name);

	if (v == NULL || v[0] == '\0')
		cr_skip_test("%s not set", name);
	return v;
}

/* Read what is available on @p fd into @p buf (bounded). */
static void drain(int fd, char *buf, size_t cap, size_t *len)
{
	ssize_t n;

	while (*len + 1 < cap && (n = read(fd, buf + *len, cap - 1 - *len)) > 0)
		*len += (size_t)n;
	buf[*len] = '\0';
}

/*
 * Run @p argv with the shim on the library path and the daemon socket @p sk;
 * 10 s at most. An intermediate process waits for the tool and reports its
 * status through a pipe, because the test runner's worker may reap children
 * behind our back.
 */
static void run_tool(char *const argv[], const char *sk, struct run *r)
{
	int out[2], err[2], stp[2];
	size_t lo = 0, le = 0;
	pid_t pid;
	int st;

	cr_assert_eq(pipe2(out, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(err, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(stp, O_CLOEXEC), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		pid_t tool;

		signal(SIGCHLD, SIG_DFL);
		tool = fork();
		if (tool == 0) {
			dup2(out[1], 1);
			dup2(err[1], 2);
			setenv("LD_LIBRARY_PATH", getenv("SHIM_DIR"), 1);
			setenv("ROCE_DAEMON_SOCKET", sk, 1);
			/* Sanitizer builds: the uninstrumented tool needs the runtime preloaded. */
			if (getenv("SHIM_CHILD_PRELOAD"))
				setenv("LD_PRELOAD", getenv("SHIM_CHILD_PRELOAD"), 1);
			if (getenv("SHIM_CHILD_ASAN_OPTIONS"))
				setenv("ASAN_OPTIONS", getenv("SHIM_CHILD_ASAN_OPTIONS"), 1);
			execv(argv[0], argv);
			_exit(127);
		}
		alarm(10);
		st = -1;
		if (tool > 0 && waitpid(tool, &st, 0) == tool)
			st = WIFEXITED(st) ? WEXITSTATUS(st) : -1000 - WTERMSIG(st);
		if (write(stp[1], &st, sizeof(st)) != sizeof(st))
			_exit(1);
		_exit(0);
	}
	close(out[1]);
	close(err[1]);
	close(stp[1]);
	fcntl(out[0], F_SETFL, O_NONBLOCK);
	fcntl(err[0], F_SETFL, O_NONBLOCK);
	r->status = -1;
	for (int i = 0; i < 1100; i++) { /* the intermediate gives up after 10 s */
		struct pollfd p[3] = { { .fd = out[0], .events = POLLIN },
				       { .fd = err[0], .events = POLLIN },
				       { .fd = stp[0], .events = POLLIN } };

		poll(p, 3, 10);
		drain(out[0], r->out, sizeof(r->out), &lo);
		drain(err[0], r->err, sizeof(r->err), &le);
		if (p[2].revents) {
			if (read(stp[0], &st, sizeof(st)) == sizeof(st))
				r->status = st;
			drain(out[0], r->out, sizeof(r->out), &lo);
			drain(err[0], r->err, sizeof(r->err), &le);
			break;
		}
	}
	waitpid(pid, &st, WNOHANG);
	close(out[0]);
	close(err[0]);
	close(stp[0]);
}

static int count_lines_with(const char *text, const char *needle)
{
	int n = 0;

	for (const char *p = text; (p = strstr(p, needle)) != NULL; p += strlen(needle))
		n++;
	return n;
}

static void setup(void)
{
	/* Reap our own children: the runner's worker may leave SIGCHLD ignored. */
	signal(SIGCHLD, SIG_DFL);
	strcpy(dir, "/tmp/shim-test-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(sock, sizeof(sock), "%s/roce.sock", dir);
}

static void teardown(void)
{
	if (server > 0) {
		int st;

		kill(server, SIGTERM);
		waitpid(server, &st, 0);
		server = -1;
	}
	/* The server may still be on its way out (the runner can reap it first): retry briefly. */
	for (int i = 0; i < 100; i++) {
		unlink(sock);
		if (rmdir(dir) == 0 || errno == ENOENT)
			break;
		usleep(10000);
	}
}

/* Start shim-server on `sock` and wait for its "ready" line (5 s at most). */
static void start_server(void)
{
	const char *bin = env_or_skip("SHIM_SERVER");
	char line[16] = { 0 };
	int p[2];

	cr_assert_eq(pipe(p), 0);
	server = fork();
	cr_assert_geq(server, 0);
	if (server == 0) {
		dup2(p[1], 1);
		close(p[0]);
		execl(bin, bin, sock, "30", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	struct pollfd pf = { .fd = p[0], .events = POLLIN };

	cr_assert_eq(poll(&pf, 1, 5000), 1, "server did not start");
	cr_assert_gt(read(p[0], line, sizeof(line) - 1), 0);
	cr_assert_str_eq(line, "ready\n");
	close(p[0]);
}

TestSuite(shim_tools, .init = setup, .fini = teardown, .timeout = 60);

Test(shim_tools, ibv_devices_without_daemon)
{
	static struct run r;
	char *argv[] = { (char *)env_or_skip("IBV_DEVICES"), NULL };

	env_or_skip("SHIM_DIR");
	run_tool(argv, sock, &r);
	cr_assert_eq(r.status, 0, "ibv_devices exits 0 on an empty list (got %d); stderr: %s", r.status, r.err);
	cr_assert(strstr(r.out, "device") && strstr(r.out, "node GUID"), "header printed: %s", r.out);
	cr_assert_eq(count_lines_with(r.out, "\n"), 2, "header only, no device: %s", r.out);
	cr_assert_eq(count_lines_with(r.err, "cannot reach roce-daemon"), 1, "one message: %s", r.err);
	cr_assert(strstr(r.err, sock) != NULL, "the message names the socket: %s", r.err);
}

Test(shim_tools, ibv_devinfo_without_daemon)
{
	static struct run r;
	char *argv[] = { (char *)env_or_skip("IBV_DEVINFO"), (char *)"-v", NULL };

	env_or_skip("SHIM_DIR");
	run_tool(argv, sock, &r);
	cr_assert_eq(r.status, 255, "ibv_devinfo's 'no devices' exit code; stderr: %s", r.err);
	cr_assert(strstr(r.err, "No IB devices found") != NULL, "%s", r.err);
	cr_assert_eq(count_lines_with(r.err, "cannot reach roce-daemon"), 1, "%s", r.err);
	cr_assert_eq(r.out[0], '\0', "nothing on stdout: %s", r.out);
}

Test(shim_tools, ibv_devices_lists_our_device)
{
	static struct run r;
	char *argv[] = { (char *)env_or_skip("IBV_DEVICES"), NULL };

	env_or_skip("SHIM_DIR");
	start_server();
	run_tool(argv, sock, &r);
	cr_assert_eq(r.status, 0, "%s", r.err);
	/* Node GUID = EUI-64 of 02:00:c6:12:00:01. */
	cr_assert(strstr(r.out, "dpdk_roce0      \t0000c6fffe120001") != NULL, "%s", r.out);
	cr_assert_eq(r.err[0], '\0', "no complaint with a daemon: %s", r.err);
}

Test(shim_tools, ibv_devinfo_verbose_shows_device_port_and_gids)
{
	static struct run r;
	char *argv[] = { (char *)env_or_skip("IBV_DEVINFO"), (char *)"-v", NULL };
	static const char *const expect[] = {
		"hca_id:\tdpdk_roce0",
		"transport:\t\t\tInfiniBand (0)",
		"vendor_id:\t\t\t0xffffff",
		"vendor_part_id:\t\t\t0\n",
		"phys_port_cnt:\t\t\t1",
		"node_guid:\t\t\t0000:c6ff:fe12:0001",
		"state:\t\t\tPORT_ACTIVE (4)",
		"link_layer:\t\tEthernet",
		"active_mtu:\t\t1024 (3)",
		"pkey_tbl_len:\t\t1",
		"GID[  0]:\t\tfe80::c6ff:fe12:1, RoCE v2",
		"GID[  1]:\t\t::ffff:198.18.0.1, RoCE v2",
		"num_comp_vectors:\t\t1",
	};

	env_or_skip("SHIM_DIR");
	start_server();
	run_tool(argv, sock, &r);
	cr_assert_eq(r.status, 0, "stderr: %s", r.err);
	for (size_t i = 0; i < sizeof(expect) / sizeof(expect[0]); i++)
		cr_assert(strstr(r.out, expect[i]) != NULL, "missing \"%s\" in:\n%s", expect[i], r.out);
	cr_assert_null(strstr(r.out, "GID[  2]"), "empty GID slots are not listed");
}

Test(shim_tools, ibv_devinfo_unknown_device_name)
{
	static struct run r;
	char *argv[] = { (char *)env_or_skip("IBV_DEVINFO"), (char *)"-d", (char *)"mlx5_0", NULL };

	env_or_skip("SHIM_DIR");
	start_server();
	run_tool(argv, sock, &r);
	cr_assert_eq(r.status, 255);
	cr_assert(strstr(r.err, "IB device 'mlx5_0' wasn't found") != NULL, "%s", r.err);
}

/* pyverbs (Debian's python3-pyverbs) creates PD/MR/CQ/QP and walks a QP to RTS. */
Test(shim_tools, pyverbs_objects_and_qp_to_rts)
{
	static struct run r;
	char *argv[] = { (char *)env_or_skip("PYTHON3"), (char *)env_or_skip("PYVERBS_SMOKE"), NULL };
	static const char *const steps[] = {
		"ok device list", "ok query device/port/gid", "ok PD and MR", "ok CQ and QP",
		"ok RESET->INIT->RTR->RTS", "ok query_qp", "ok invalid transition refused", "ALL OK",
	};

	env_or_skip("SHIM_DIR");
	start_server();
	run_tool(argv, sock, &r);
	cr_assert_eq(r.status, 0, "stdout:\n%s\nstderr:\n%s", r.out, r.err);
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		cr_assert(strstr(r.out, steps[i]) != NULL, "missing \"%s\" in:\n%s", steps[i], r.out);
}
