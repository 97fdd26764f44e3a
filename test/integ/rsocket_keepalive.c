/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rsocket_keepalive server ADDR PORT N: accept N rsockets connections on
 * ADDR:PORT (IPv4), print "accepted N", then wait in rrecv on the first
 * one until the peer closes or the time limit ends the program.
 *
 * rsocket_keepalive client ADDR PORT IDLE: connect; IDLE > 0 turns
 * SO_KEEPALIVE on with TCP_KEEPIDLE IDLE (seconds); print "connected",
 * then wait in a blocking rrecv. Exit 0 and print "detected: ERRNO after
 * S s" when rrecv fails (the peer vanished and the keepalive found it);
 * exit 1 when it returns data or end of stream; the caller's time limit
 * ends a client that never learns (without keepalive, a vanished peer).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/rsocket.h>

static int server(struct sockaddr_in *sin, int n)
{
	int lfd = rsocket(AF_INET, SOCK_STREAM, 0), one = 1, first = -1;
	char c;

	if (lfd < 0 || rsetsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    rbind(lfd, (struct sockaddr *)sin, sizeof(*sin)) || rlisten(lfd, n)) {
		perror("listen");
		return 1;
	}
	for (int i = 0; i < n; i++) {
		int fd = raccept(lfd, NULL, NULL);

		if (fd < 0) {
			perror("raccept");
			return 1;
		}
		if (first < 0)
			first = fd;
	}
	printf("accepted %d\n", n);
	fflush(stdout);
	return rrecv(first, &c, 1, 0) < 0;
}

static int client(struct sockaddr_in *sin, int idle)
{
	int fd = rsocket(AF_INET, SOCK_STREAM, 0), one = 1;
	struct timespec t0, t1;
	ssize_t n;
	char c;

	if (fd < 0 || rconnect(fd, (struct sockaddr *)sin, sizeof(*sin))) {
		perror("rconnect");
		return 2;
	}
	if (idle > 0 && (rsetsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one)) ||
			 rsetsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle)))) {
		perror("rsetsockopt");
		return 2;
	}
	printf("connected\n");
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	n = rrecv(fd, &c, 1, 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (n >= 0) {
		printf("rrecv returned %zd\n", n);
		return 1;
	}
	printf("detected: %s after %ld s\n", strerror(errno), (long)(t1.tv_sec - t0.tv_sec));
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };

	if (argc != 5 || inet_pton(AF_INET, argv[2], &sin.sin_addr) != 1) {
		fprintf(stderr, "usage: %s server|client ADDR PORT N|IDLE\n", argv[0]);
		return 2;
	}
	sin.sin_port = htons((uint16_t)atoi(argv[3]));
	if (strcmp(argv[1], "server") == 0)
		return server(&sin, atoi(argv[4]));
	return client(&sin, atoi(argv[4]));
}
