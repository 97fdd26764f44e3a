/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Out-of-band exchange over TCP (port 18515 by default), like perftest's
 * perftest_communication.c but with our own framing: every message is
 * {u32 type, u32 length, payload}, all integers big-endian. Sequence:
 *
 *   HELLO (symmetric parameters) -> DEST (one record per QP) -> SYNC
 *   per message size: SYNC, run, DONE (per-QP counters), RESULT
 *
 * Both ends send before they receive, so the exchange cannot deadlock.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "perftest.h"

#define PT_MAGIC      0x52505431u  /* "RPT1" */
#define PT_PROTO      1u
#define PT_NAME_LEN   16
#define PT_HELLO_LEN  (4 + 2 + PT_NAME_LEN + 4 + 8 + 8 + 4 + 4 + 4)
#define PT_DEST_LEN   (2 + 4 + 4 + 4 + 8 + 16 + 1 + 1)
#define PT_COUNTS_LEN (4 * 8)
#define PT_RESULT_LEN (4 + 1 + 8 + 8 + 12 * 8 + 3 * 8)
#define PT_MSG_MAX    (8 + 4 + (size_t)PT_MAX_QPS * PT_DEST_LEN)

/* ---- encoding ------------------------------------------------------------ */

struct pt_wbuf {
	uint8_t *p;
	size_t len, cap;
	bool bad;
};

static void pt_put(struct pt_wbuf *b, uint64_t v, size_t n)
{
	if (b->len + n > b->cap) {
		b->bad = true;
		return;
	}
	for (size_t i = 0; i < n; i++)
		b->p[b->len + i] = (uint8_t)(v >> (8 * (n - 1 - i)));
	b->len += n;
}

static void pt_put_bytes(struct pt_wbuf *b, const void *src, size_t n)
{
	if (b->len + n > b->cap) {
		b->bad = true;
		return;
	}
	memcpy(b->p + b->len, src, n);
	b->len += n;
}

static void pt_put_double(struct pt_wbuf *b, double d)
{
	uint64_t v;

	memcpy(&v, &d, sizeof(v));
	pt_put(b, v, 8);
}

struct pt_rbuf {
	const uint8_t *p;
	size_t len, off;
	bool bad;
};

static uint64_t pt_get(struct pt_rbuf *b, size_t n)
{
	uint64_t v = 0;

	if (b->off + n > b->len) {
		b->bad = true;
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		v = v << 8 | b->p[b->off + i];
	b->off += n;
	return v;
}

static void pt_get_bytes(struct pt_rbuf *b, void *dst, size_t n)
{
	if (b->off + n > b->len) {
		b->bad = true;
		memset(dst, 0, n);
		return;
	}
	memcpy(dst, b->p + b->off, n);
	b->off += n;
}

static double pt_get_double(struct pt_rbuf *b)
{
	uint64_t v = pt_get(b, 8);
	double d;

	memcpy(&d, &v, sizeof(d));
	return d;
}

/* ---- socket ---------------------------------------------------------------- */

static void pt_sock_opts(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int pt_link_accept(struct pt_link *l, int port, bool verbose)
{
	struct sockaddr_in sa = {
		.sin_family = AF_INET,
		.sin_port = htons((uint16_t)port),
		.sin_addr.s_addr = htonl(INADDR_ANY),
	};
	int one = 1, lfd;

	l->fd = -1;
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0) {
		fprintf(stderr, " Couldn't create socket: %s\n", strerror(errno));
		return -1;
	}
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 1)) {
		fprintf(stderr, " Couldn't listen to port %d: %s\n", port, strerror(errno));
		close(lfd);
		return -1;
	}
	if (verbose) {
		printf("\n************************************\n");
		printf("* Waiting for client to connect... *\n");
		printf("************************************\n");
		fflush(stdout);
	}
	do
		l->fd = accept(lfd, NULL, NULL);
	while (l->fd < 0 && errno == EINTR);
	close(lfd);
	if (l->fd < 0) {
		fprintf(stderr, " accept() failed: %s\n", strerror(errno));
		return -1;
	}
	pt_sock_opts(l->fd);
	return 0;
}

int pt_link_connect(struct pt_link *l, const char *host, int port)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *res, *ai;
	char service[8];
	int rc;

	l->fd = -1;
	snprintf(service, sizeof(service), "%d", port);
	rc = getaddrinfo(host, service, &hints, &res);
	if (rc) {
		fprintf(stderr, " %s for %s:%d\n", gai_strerror(rc), host, port);
		return -1;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		l->fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (l->fd < 0)
			continue;
		if (connect(l->fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		close(l->fd);
		l->fd = -1;
	}
	freeaddrinfo(res);
	if (l->fd < 0) {
		fprintf(stderr, " Couldn't connect to %s:%d\n", host, port);
		return -1;
	}
	pt_sock_opts(l->fd);
	return 0;
}

void pt_link_close(struct pt_link *l)
{
	if (l->fd >= 0)
		close(l->fd);
	l->fd = -1;
}

int pt_link_wait(struct pt_link *l, int timeout_ms)
{
	struct pollfd pfd = { .fd = l->fd, .events = POLLIN };
	int n;

	do
		n = poll(&pfd, 1, timeout_ms);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -1;
	return n > 0;
}

static int pt_write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			fprintf(stderr, " Failed to send to the peer: %s\n", strerror(errno));
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int pt_read_all(int fd, uint8_t *p, size_t n)
{
	while (n) {
		ssize_t r = read(fd, p, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			fprintf(stderr, r == 0 ? " The peer closed the connection\n" : " Failed to read from the peer\n");
			return -1;
		}
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

static int pt_msg_send(struct pt_link *l, enum pt_msg_type type, const struct pt_wbuf *b)
{
	uint8_t hdr[8];
	struct pt_wbuf h = { .p = hdr, .cap = sizeof(hdr) };

	if (b->bad)
		return -1;
	pt_put(&h, type, 4);
	pt_put(&h, b->len, 4);
	return pt_write_all(l->fd, hdr, sizeof(hdr)) || pt_write_all(l->fd, b->p, b->len) ? -1 : 0;
}

/* Receive a message of @p type into a new buffer (freed by the caller). */
static uint8_t *pt_msg_recv(struct pt_link *l, enum pt_msg_type type, size_t *len)
{
	uint8_t hdr[8], *buf;
	struct pt_rbuf h = { .p = hdr, .len = sizeof(hdr) };
	uint32_t got, n;

	if (pt_read_all(l->fd, hdr, sizeof(hdr)))
		return NULL;
	got = (uint32_t)pt_get(&h, 4);
	n = (uint32_t)pt_get(&h, 4);
	if (got != type || n > PT_MSG_MAX) {
		fprintf(stderr, " Unexpected message %u (%u bytes) from the peer, expected %u\n", got, n, type);
		return NULL;
	}
	buf = malloc(n ? n : 1);
	if (!buf || pt_read_all(l->fd, buf, n)) {
		free(buf);
		return NULL;
	}
	*len = n;
	return buf;
}

/*
 * Send @p out as @p type, then receive the peer's message of the same type
 * into @p in. Returns the received buffer (freed by the caller) or NULL.
 */
static uint8_t *pt_msg_swap(struct pt_link *l, enum pt_msg_type type, const struct pt_wbuf *out,
			    struct pt_rbuf *in)
{
	uint8_t *buf;

	if (pt_msg_send(l, type, out))
		return NULL;
	buf = pt_msg_recv(l, type, &in->len);
	*in = (struct pt_rbuf){ .p = buf, .len = buf ? in->len : 0 };
	return buf;
}

/* ---- messages ---------------------------------------------------------------- */

size_t pt_hello_encode(const struct pt_params *p, uint8_t *buf, size_t cap)
{
	struct pt_wbuf b = { .p = buf, .cap = cap };
	char name[PT_NAME_LEN] = { 0 };

	strncpy(name, p->mode->name, sizeof(name) - 1);
	pt_put(&b, PT_MAGIC, 4);
	pt_put(&b, PT_PROTO, 2);
	pt_put_bytes(&b, name, sizeof(name));
	pt_put(&b, p->conn, 1);
	pt_put(&b, p->atomic_op, 1);
	pt_put(&b, p->verify, 1);
	pt_put(&b, p->all_sizes, 1);
	pt_put(&b, p->size, 8);
	pt_put(&b, p->iters, 8);
	pt_put(&b, (uint32_t)p->duration, 4);
	pt_put(&b, (uint32_t)(p->margin < 0 ? 0 : p->margin), 4);
	pt_put(&b, (uint32_t)p->num_qps, 4);
	return b.bad ? 0 : b.len;
}

int pt_hello_check(const struct pt_params *p, const uint8_t *buf, size_t len, FILE *err)
{
	uint8_t mine[PT_HELLO_LEN];
	struct pt_rbuf a = { .p = mine, .len = pt_hello_encode(p, mine, sizeof(mine)) };
	struct pt_rbuf b = { .p = buf, .len = len };
	static const struct {
		const char *what;
		size_t n;
	} fields[] = {
		{ "magic", 4 }, { "protocol version", 2 }, { "test", PT_NAME_LEN },
		{ "connection type (-c)", 1 }, { "atomic type (-A)", 1 }, { "--verify", 1 },
		{ "-a/--all", 1 }, { "size (-s)", 8 }, { "iterations (-n)", 8 },
		{ "duration (-D)", 4 }, { "margin (-f)", 4 }, { "number of QPs (-q)", 4 },
	};
	int bad = 0;

	if (len != PT_HELLO_LEN) {
		fprintf(err, " The peer is not roce-perftest %s (hello of %zu bytes)\n", PT_VERSION, len);
		return -1;
	}
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		size_t n = fields[i].n;

		if (memcmp(a.p + a.off, b.p + b.off, n) != 0) {
			if (i < 2) {
				fprintf(err, " The peer is not roce-perftest %s\n", PT_VERSION);
				return -1;
			}
			if (n <= 8) {
				struct pt_rbuf x = a, y = b;

				fprintf(err, " Parameter mismatch: %s is %lu here, %lu at the peer\n", fields[i].what,
					(unsigned long)pt_get(&x, n), (unsigned long)pt_get(&y, n));
			} else {
				fprintf(err, " Parameter mismatch: test is %.*s here, %.*s at the peer\n",
					(int)n, (const char *)a.p + a.off, (int)n, (const char *)b.p + b.off);
			}
			bad = -1;
		}
		a.off += n;
		b.off += n;
	}
	return bad;
}

int pt_xchg_hello(struct pt_link *l, const struct pt_params *p)
{
	uint8_t mine[PT_HELLO_LEN], *theirs;
	struct pt_wbuf b = { .p = mine, .cap = sizeof(mine) };
	struct pt_rbuf r;
	int rc;

	b.len = pt_hello_encode(p, mine, sizeof(mine));
	theirs = pt_msg_swap(l, PT_MSG_HELLO, &b, &r);
	if (!theirs)
		return -1;
	rc = pt_hello_check(p, theirs, r.len, stderr);
	free(theirs);
	return rc;
}

int pt_xchg_dests(struct pt_link *l, const struct pt_dest *local, struct pt_dest *remote, uint32_t n)
{
	size_t cap = 4 + (size_t)n * PT_DEST_LEN;
	struct pt_wbuf b = { .p = malloc(cap), .cap = cap };
	struct pt_rbuf r;
	uint8_t *in;
	int rc = -1;

	if (!b.p)
		return -1;
	pt_put(&b, n, 4);
	for (uint32_t i = 0; i < n; i++) {
		pt_put(&b, local[i].lid, 2);
		pt_put(&b, local[i].qpn, 4);
		pt_put(&b, local[i].psn, 4);
		pt_put(&b, local[i].rkey, 4);
		pt_put(&b, local[i].vaddr, 8);
		pt_put_bytes(&b, local[i].gid.raw, 16);
		pt_put(&b, local[i].out_reads, 1);
		pt_put(&b, local[i].mtu, 1);
	}
	in = pt_msg_swap(l, PT_MSG_DEST, &b, &r);
	free(b.p);
	if (!in)
		return -1;
	if (pt_get(&r, 4) != n || r.len != cap) {
		fprintf(stderr, " The peer sent %zu bytes of QP data, expected %zu\n", r.len, cap);
		goto out;
	}
	for (uint32_t i = 0; i < n; i++) {
		remote[i].lid = (uint16_t)pt_get(&r, 2);
		remote[i].qpn = (uint32_t)pt_get(&r, 4) & 0xffffff;
		remote[i].psn = (uint32_t)pt_get(&r, 4) & 0xffffff;
		remote[i].rkey = (uint32_t)pt_get(&r, 4);
		remote[i].vaddr = pt_get(&r, 8);
		pt_get_bytes(&r, remote[i].gid.raw, 16);
		remote[i].out_reads = (uint8_t)pt_get(&r, 1);
		remote[i].mtu = (uint8_t)pt_get(&r, 1);
	}
	rc = r.bad ? -1 : 0;
out:
	free(in);
	return rc;
}

static int pt_expect_tag(struct pt_rbuf *r, uint32_t tag, const char *what)
{
	uint32_t got = (uint32_t)pt_get(r, 4);

	if (r->bad || got != tag) {
		fprintf(stderr, " Out of step with the peer: %s %u, expected %u\n", what, got, tag);
		return -1;
	}
	return 0;
}

int pt_xchg_sync(struct pt_link *l, uint32_t tag)
{
	uint8_t out[4], *in;
	struct pt_wbuf b = { .p = out, .cap = sizeof(out) };
	struct pt_rbuf r;
	int rc;

	pt_put(&b, tag, 4);
	in = pt_msg_swap(l, PT_MSG_SYNC, &b, &r);
	if (!in)
		return -1;
	rc = pt_expect_tag(&r, tag, "sync");
	free(in);
	return rc;
}

int pt_send_done(struct pt_link *l, uint32_t tag, const struct pt_progress *pr)
{
	size_t cap = 8 + (size_t)pr->num_qps * PT_COUNTS_LEN;
	struct pt_wbuf b = { .p = malloc(cap), .cap = cap };
	int rc;

	if (!b.p)
		return -1;
	pt_put(&b, tag, 4);
	pt_put(&b, pr->num_qps, 4);
	for (uint32_t i = 0; i < pr->num_qps; i++) {
		pt_put(&b, pr->qp[i].posted, 8);
		pt_put(&b, pr->qp[i].completed, 8);
		pt_put(&b, pr->qp[i].recv_posted, 8);
		pt_put(&b, pr->qp[i].received, 8);
	}
	rc = pt_msg_send(l, PT_MSG_DONE, &b);
	free(b.p);
	return rc;
}

int pt_recv_done(struct pt_link *l, uint32_t tag, struct pt_progress *pr)
{
	size_t len;
	uint8_t *in = pt_msg_recv(l, PT_MSG_DONE, &len);
	struct pt_rbuf r;
	int rc = -1;

	if (!in)
		return -1;
	r = (struct pt_rbuf){ .p = in, .len = len };
	if (pt_expect_tag(&r, tag, "done"))
		goto out;
	if (pt_get(&r, 4) != pr->num_qps) {
		fprintf(stderr, " The peer reported another number of QPs\n");
		goto out;
	}
	for (uint32_t i = 0; i < pr->num_qps; i++) {
		pr->qp[i].posted = pt_get(&r, 8);
		pr->qp[i].completed = pt_get(&r, 8);
		(void)pt_get(&r, 8);    /* recv_posted: credits are for single process only */
		pr->qp[i].received = pt_get(&r, 8);
	}
	if (!r.bad) {
		pr->done = true;
		rc = 0;
	}
out:
	free(in);
	return rc;
}

/* RESULT after tag and flags, in wire order: X(field, u64 or double). */
#define PT_RESULT_FIELDS(X) \
	X(size, u64) X(iters, u64) \
	X(seconds, double) X(bw_peak, double) X(bw_avg, double) X(msg_rate, double) \
	X(t_min, double) X(t_max, double) X(t_typical, double) X(t_avg, double) \
	X(t_stdev, double) X(t_p99, double) X(t_p999, double) X(tps, double) \
	X(verify_checked, u64) X(verify_errors, u64) X(lost, u64)

static void pt_put_u64(struct pt_wbuf *b, uint64_t v) { pt_put(b, v, 8); }
static uint64_t pt_get_u64(struct pt_rbuf *b) { return pt_get(b, 8); }

static void pt_result_put(struct pt_wbuf *b, uint32_t tag, const struct pt_result *x)
{
	pt_put(b, tag, 4);
	pt_put(b, (uint64_t)x->valid | (uint64_t)x->lat << 1 | (uint64_t)x->duration << 2, 1);
#define PT_PUT_FIELD(f, t) pt_put_##t(b, x->f);
	PT_RESULT_FIELDS(PT_PUT_FIELD)
#undef PT_PUT_FIELD
}

static void pt_result_get(struct pt_rbuf *r, struct pt_result *x)
{
	uint8_t flags = (uint8_t)pt_get(r, 1);

	x->valid = flags & 1;
	x->lat = flags & 2;
	x->duration = flags & 4;
#define PT_GET_FIELD(f, t) x->f = pt_get_##t(r);
	PT_RESULT_FIELDS(PT_GET_FIELD)
#undef PT_GET_FIELD
}

int pt_xchg_result(struct pt_link *l, uint32_t tag, const struct pt_result *mine, struct pt_result *theirs)
{
	uint8_t out[PT_RESULT_LEN], *in;
	struct pt_wbuf b = { .p = out, .cap = sizeof(out) };
	struct pt_rbuf r;
	int rc = -1;

	pt_result_put(&b, tag, mine);
	in = pt_msg_swap(l, PT_MSG_RESULT, &b, &r);
	if (!in)
		return -1;
	if (pt_expect_tag(&r, tag, "result") == 0) {
		memset(theirs, 0, sizeof(*theirs));
		pt_result_get(&r, theirs);
		rc = r.bad || r.off != r.len ? -1 : 0;
		if (rc)
			fprintf(stderr, " Malformed result from the peer\n");
	}
	free(in);
	return rc;
}
