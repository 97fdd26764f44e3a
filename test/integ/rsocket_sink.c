/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rsocket_sink ADDR PORT: accept one rsockets connection on ADDR:PORT and
 * copy everything it sends to stdout until the peer closes; exit 0 then,
 * 1 on any error (said on stderr). The far end of rsocket_lab.sh's
 * librspreload transfer: an unmodified TCP client sends a file, the
 * checksum of what arrives here is compared with the file's.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/rsocket.h>

static int sink(int fd)
{
	static char buf[1 << 16];
	ssize_t n;

	while ((n = rrecv(fd, buf, sizeof(buf), 0)) > 0)
		if (fwrite(buf, 1, (size_t)n, stdout) != (size_t)n)
			return 1;
	if (n < 0) {
		perror("rrecv");
		return 1;
	}
	return fflush(stdout) != 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	socklen_t len;
	int lfd, fd, one = 1, rc;

	if (argc != 3) {
		fprintf(stderr, "usage: %s ADDR PORT\n", argv[0]);
		return 2;
	}
	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, argv[1], &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)atoi(argv[2]));
		len = sizeof(*sin);
	} else if (inet_pton(AF_INET6, argv[1], &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)atoi(argv[2]));
		len = sizeof(*sin6);
	} else {
		fprintf(stderr, "bad address %s\n", argv[1]);
		return 2;
	}
	lfd = rsocket(ss.ss_family, SOCK_STREAM, 0);
	if (lfd < 0 || rsetsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    rbind(lfd, (struct sockaddr *)&ss, len) || rlisten(lfd, 1)) {
		perror("listen");
		return 1;
	}
	fprintf(stderr, "listening\n");
	fd = raccept(lfd, NULL, NULL);
	if (fd < 0) {
		perror("raccept");
		return 1;
	}
	rc = sink(fd);
	rclose(fd);
	rclose(lfd);
	return rc;
}
