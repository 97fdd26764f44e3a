/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test/rdmacm fixtures: a private daemon socket path per test, and
 * shim-server (lib/ctl + lib/ipc, no DPDK: device "dpdk_roce0",
 * IPv4 198.18.0.1) started on it when the test needs a daemon.
 * Include once per test program.
 */
#ifndef RDMACM_TEST_H
#define RDMACM_TEST_H

#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char rt_dir[64];
static char rt_sock[128];
static pid_t rt_server = -1;

/* A socket path nobody listens on: the library sees no daemon. */
static void rt_setup_nodaemon(void)
{
	signal(SIGCHLD, SIG_DFL);
	strcpy(rt_dir, "/tmp/rdmacm-test-XXXXXX");
	cr_assert_not_null(mkdtemp(rt_dir));
	snprintf(rt_sock, sizeof(rt_sock), "%s/roce.sock", rt_dir);
	setenv("ROCE_DAEMON_SOCKET", rt_sock, 1);
}

/* shim-server on the private socket, "ready" within 5 s. */
static void rt_setup_server(void)
{
	const char *bin = getenv("SHIM_SERVER");
	char line[16] = { 0 };
	struct pollfd pf;
	int p[2];

	rt_setup_nodaemon();
	if (bin == NULL || bin[0] == '\0')
		cr_skip_test("SHIM_SERVER not set");
	cr_assert_eq(pipe(p), 0);
	rt_server = fork();
	cr_assert_geq(rt_server, 0);
	if (rt_server == 0) {
		dup2(p[1], 1);
		close(p[0]);
		execl(bin, bin, rt_sock, "30", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	pf = (struct pollfd){ .fd = p[0], .events = POLLIN };
	cr_assert_eq(poll(&pf, 1, 5000), 1, "server did not start");
	cr_assert_gt(read(p[0], line, sizeof(line) - 1), 0);
	cr_assert_str_eq(line, "ready\n");
	close(p[0]);
}

static void rt_teardown(void)
{
	if (rt_server > 0) {
		int st;

		kill(rt_server, SIGTERM);
		waitpid(rt_server, &st, 0);
		rt_server = -1;
	}
	for (int i = 0; i < 100; i++) {
		unlink(rt_sock);
		if (rmdir(rt_dir) == 0 || errno == ENOENT)
			break;
		usleep(10000);
	}
}

#endif /* RDMACM_TEST_H */
