/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rsocket_dgram_check ADDR PORT COUNT SIZE...: a datagram rsockets client
 * of Debian's unmodified udpong server that checks what udpong itself does
 * not: every echoed datagram byte for byte. It speaks udpong's messages
 * (op, id, seqno, reserved, 32-bit data, then payload): login, start,
 * COUNT echo messages of each SIZE with a pseudo-random payload, each
 * compared with its echo (a lost one is sent again, up to 5 times; a late
 * duplicate of an earlier one is skipped), then end, whose answer carries
 * how many echo messages the server took. The source address of every
 * answer (rrecvfrom) must be the server's. Then a datagram larger than a
 * slot must fail with EMSGSIZE. Exit 0 and "verified N" on stdout, 1 with
 * the reason on stderr.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rsocket.h>

enum { OP_LOGIN, OP_START, OP_DATA, OP_ECHO, OP_END };

struct msg {
	uint8_t op, id, seqno, reserved;
	uint32_t data;
	uint8_t buf[2048];
};

static int fd;
static uint8_t my_id;
static struct sockaddr_storage server;
static socklen_t server_len;

static void fill(struct msg *m, uint32_t n, size_t size)
{
	uint32_t x = n * 2654435761u + (uint32_t)size;

	for (size_t i = 0; i + 8 < size; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		m->buf[i] = (uint8_t)x;
	}
}

static bool same_addr(const struct sockaddr_storage *a, socklen_t alen)
{
	return alen == server_len && memcmp(a, &server, alen) == 0;
}

/* Send @p m (@p size bytes) and wait for the answer with its seqno; @return its length or -1. */
static ssize_t exchange(struct msg *m, size_t size, struct msg *ans)
{
	for (int tries = 0; tries < 5; tries++) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n = rsend(fd, m, size, 0);

		if (n != (ssize_t)size) {
			fprintf(stderr, "rsend %zu: %zd (%s)\n", size, n, strerror(errno));
			return -1;
		}
		while (rpoll(&p, 1, 1000) == 1) {
			struct sockaddr_storage from;
			socklen_t flen = sizeof(from);

			n = rrecvfrom(fd, ans, sizeof(*ans), MSG_DONTWAIT, (struct sockaddr *)&from, &flen);
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				continue;
			if (n < 8) {
				fprintf(stderr, "rrecvfrom: %zd (%s)\n", n, strerror(errno));
				return -1;
			}
			if (!same_addr(&from, flen)) {
				fprintf(stderr, "an answer from another address\n");
				return -1;
			}
			if (ans->seqno == m->seqno && ans->op == m->op)
				return n;
		}
	}
	fprintf(stderr, "no answer to op %u seqno %u after 5 tries\n", m->op, m->seqno);
	return -1;
}

static int ctrl(uint8_t op, uint8_t seq, struct msg *ans)
{
	struct msg m = { .op = op, .id = my_id, .seqno = seq };

	return exchange(&m, 16, ans) == 16 ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct sockaddr_in *s4 = (struct sockaddr_in *)&server;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&server;
	static struct msg m, ans;
	uint32_t count, total = 0;
	uint8_t seq = 0;

	if (argc < 5) {
		fprintf(stderr, "usage: %s ADDR PORT COUNT SIZE...\n", argv[0]);
		return 2;
	}
	memset(&server, 0, sizeof(server));
	if (inet_pton(AF_INET, argv[1], &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)atoi(argv[2]));
		server_len = sizeof(*s4);
	} else if (inet_pton(AF_INET6, argv[1], &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)atoi(argv[2]));
		server_len = sizeof(*s6);
	} else {
		fprintf(stderr, "bad address %s\n", argv[1]);
		return 2;
	}
	count = (uint32_t)atoi(argv[3]);
	fd = rsocket(server.ss_family, SOCK_DGRAM, 0);
	if (fd < 0 || rconnect(fd, (struct sockaddr *)&server, server_len)) {
		perror("rsocket/rconnect");
		return 1;
	}
	if (ctrl(OP_LOGIN, seq++, &ans))
		return 1;
	my_id = ans.id;
	if (ctrl(OP_START, seq++, &ans))
		return 1;
	for (int a = 4; a < argc; a++) {
		size_t size = (size_t)atoi(argv[a]);

		if (size < 16 || size > sizeof(m)) {
			fprintf(stderr, "size %zu out of range\n", size);
			return 2;
		}
		for (uint32_t i = 0; i < count; i++, total++) {
			m.op = OP_ECHO;
			m.id = my_id;
			m.seqno = seq++;
			m.data = htonl(total);
			fill(&m, total, size);
			if (exchange(&m, size, &ans) != (ssize_t)size ||
			    memcmp(&m, &ans, size) != 0) {
				fprintf(stderr, "echo %u of %zu bytes differs\n", total, size);
				return 1;
			}
		}
	}
	if (ctrl(OP_END, seq++, &ans))
		return 1;
	if (ntohl(ans.data) < total) {
		fprintf(stderr, "server counted %u echo messages, %u sent\n", ntohl(ans.data), total);
		return 1;
	}
	/* a datagram that fits no slot (2048 bytes with the header) */
	if (rsend(fd, &m, sizeof(m), 0) != -1 || errno != EMSGSIZE) {
		fprintf(stderr, "a %zu-byte datagram was not refused with EMSGSIZE\n", sizeof(m));
		return 1;
	}
	printf("verified %u\n", total);
	rclose(fd);
	return 0;
}
