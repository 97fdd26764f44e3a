/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A roce-daemon stand-in for the shim tests: lib/ctl + lib/ipc serving one
 * device ("dpdk_roce0", MAC 02:00:c6:12:00:01, IPv4 198.18.0.1) on a UNIX
 * socket, without DPDK and without a dataplane (rings are set up, nothing
 * consumes them), and its rdma_cm (lib/ctl's CM: connections between two
 * of its own addresses run the whole CM exchange, looped back).
 *
 *   shim-server SOCKET_PATH [SECONDS]
 *
 * Prints "ready" on stdout once listening; exits on SIGTERM/SIGINT, or after
 * SECONDS (default 60) so a forgotten server never outlives its test.
 */
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl.h"
#include "ctl_cm.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	static const uint8_t mac[6] = { 0x02, 0x00, 0xc6, 0x12, 0x00, 0x01 };
	struct ctl_config cfg;
	struct ctl_server *srv;
	struct ctl *ctl;
	struct sigaction sa = { .sa_handler = on_signal };
	uint32_t ip;
	time_t deadline;

	if (argc < 2) {
		fprintf(stderr, "usage: %s SOCKET_PATH [SECONDS]\n", argv[0]);
		return 2;
	}
	deadline = time(NULL) + (argc > 2 ? atoi(argv[2]) : 60);
	inet_pton(AF_INET, "198.18.0.1", &ip);
	ctl_config_default(&cfg, "dpdk_roce0", mac, ip);
	ctl = ctl_create(&cfg);
	if (ctl == NULL) {
		perror("ctl_create");
		return 1;
	}
	srv = ctl_server_create(ctl, argv[1]);
	if (srv == NULL) {
		perror("ctl_server_create");
		ctl_destroy(ctl);
		return 1;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	printf("ready\n");
	fflush(stdout);
	/* rdma_cm: lib/cm timers and MADs between our own GIDs run from the loop,
	 * as in the daemon's control loop (the poll wakes at least every 10 ms). */
	while (!stop && time(NULL) < deadline) {
		ctl_server_poll(srv, 10);
		ctl_cm_tick(ctl);
	}
	ctl_server_destroy(srv);
	ctl_destroy(ctl);
	return 0;
}
