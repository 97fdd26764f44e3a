/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fork_tcp: a forking TCP server and its client written as plain socket
 * programs (socket(AF_INET, SOCK_STREAM, 0), accept(2), fork(2), read(2),
 * write(2)), for rsocket_lab.sh's librspreload fork case. Under
 * librspreload with RDMAV_FORK_SAFE=1 both make the TCP connection first
 * and move it onto an rsocket at its first read or write after the fork
 * (rdma-core's preload.c fork_passive/fork_active); python3's sockets
 * cannot take that path (SOCK_CLOEXEC in the type, accept4).
 *
 *   fork_tcp server ADDR PORT N OUT  accept N connections, one child each:
 *       it reads to end of file into OUT.I (I from 0), answers the byte
 *       count (8 bytes, big endian) and exits 0; the server exits 0 when
 *       every child did
 *   fork_tcp client ADDR PORT FILE   send FILE, shut down writing, read the
 *       count; exit 0 when it is FILE's size
 *
 * Exit 1 on any error (said on stderr), 2 on bad arguments. IPv4 only.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_CONNS 16

static int addr_of(const char *ip, const char *port, struct sockaddr_in *sin)
{
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_port = htons((uint16_t)atoi(port));
	return inet_pton(AF_INET, ip, &sin->sin_addr) == 1 ? 0 : -1;
}

/* All of @p len bytes written (@p out) or read. @return 0, or -1 (error or end of file). */
static int io_all(int fd, void *buf, size_t len, bool out)
{
	char *p = buf;

	while (len > 0) {
		ssize_t n = out ? write(fd, p, len) : read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* A server child: connection @p fd into @p path, then the count back. */
static int serve(int fd, const char *path)
{
	static char buf[1 << 16];
	uint64_t total = 0, be;
	int out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ssize_t n;

	if (out < 0) {
		perror(path);
		return 1;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		if (io_all(out, buf, (size_t)n, true) != 0) {
			perror("write file");
			return 1;
		}
		total += (uint64_t)n;
	}
	if (n < 0) {
		perror("read");
		return 1;
	}
	be = htobe64(total);
	if (io_all(fd, &be, sizeof(be), true) != 0) {
		perror("write count");
		return 1;
	}
	close(out);
	close(fd);
	return 0;
}

static int server(const struct sockaddr_in *sin, int conns, const char *out)
{
	pid_t kids[MAX_CONNS];
	int lfd = socket(AF_INET, SOCK_STREAM, 0), one = 1, rc = 0;

	if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(lfd, (const struct sockaddr *)sin, sizeof(*sin)) || listen(lfd, conns)) {
		perror("listen");
		return 1;
	}
	for (int i = 0; i < conns; i++) {
		char path[4096];
		int fd = accept(lfd, NULL, NULL);

		if (fd < 0) {
			perror("accept");
			return 1;
		}
		snprintf(path, sizeof(path), "%s.%d", out, i);
		kids[i] = fork();
		if (kids[i] < 0) {
			perror("fork");
			return 1;
		}
		if (kids[i] == 0) {
			close(lfd);
			_exit(serve(fd, path));
		}
		close(fd);
	}
	close(lfd);
	for (int i = 0; i < conns; i++) {
		int st;

		if (waitpid(kids[i], &st, 0) != kids[i] || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "child %d failed (status %#x)\n", i, st);
			rc = 1;
		}
	}
	return rc;
}

static int client(const struct sockaddr_in *sin, const char *file)
{
	static char buf[1 << 16];
	uint64_t total = 0, be;
	int in = open(file, O_RDONLY), fd;
	ssize_t n;

	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (in < 0 || fd < 0 || connect(fd, (const struct sockaddr *)sin, sizeof(*sin)) != 0) {
		perror("connect");
		return 1;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0) {
		if (io_all(fd, buf, (size_t)n, true) != 0) {
			perror("send");
			return 1;
		}
		total += (uint64_t)n;
	}
	if (n < 0 || shutdown(fd, SHUT_WR) != 0 || io_all(fd, &be, sizeof(be), false) != 0) {
		perror("shutdown/answer");
		return 1;
	}
	if (be64toh(be) != total) {
		fprintf(stderr, "sent %llu, the server counted %llu\n", (unsigned long long)total,
			(unsigned long long)be64toh(be));
		return 1;
	}
	close(fd);
	close(in);
	printf("sent %llu bytes, counted alike\n", (unsigned long long)total);
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sin;

	if (argc == 6 && strcmp(argv[1], "server") == 0 && addr_of(argv[2], argv[3], &sin) == 0 &&
	    atoi(argv[4]) > 0 && atoi(argv[4]) <= MAX_CONNS)
		return server(&sin, atoi(argv[4]), argv[5]);
	if (argc == 5 && strcmp(argv[1], "client") == 0 && addr_of(argv[2], argv[3], &sin) == 0)
		return client(&sin, argv[4]);
	fprintf(stderr, "usage: %s server ADDR PORT N OUT | client ADDR PORT FILE\n", argv[0]);
	return 2;
}
