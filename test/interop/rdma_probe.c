/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdma_probe: RC conformance probe for wire interoperability tests.
 *
 *   rdma_probe [options]          server: wait for one client, run what it asks
 *   rdma_probe [options] HOST     client: run the tests against the server
 *
 * Built against plain libibverbs, so the same binary runs on Linux rxe (in the
 * rxe-peer guest) and on roce-daemon through the verbs shim. Every test uses a
 * fresh RC QP pair (an access error moves both QPs to the error state); QPN,
 * PSN, GID, rkey and address travel over one TCP connection as text lines:
 *
 *   client: TEST <name> <size>
 *   server: QP <qpn> <psn> <gid hex> <rkey> <addr> <len>
 *   client: QP <qpn> <psn> <gid hex>
 *   server: READY                       (its QP is in RTS, receive posted)
 *   client: DONE                        (its work requests have completed)
 *   server: RESULT PASS|FAIL <detail>   (target memory checked, QP state)
 *   client: QUIT                        (after the last test)
 *
 * Tests (PROBE_TESTS): data with content checks (write, read, send, atomics)
 * and the remote errors of IBA 9.7.5.2.x / C9-.. : an invalid R_Key, an
 * access outside the memory region, a region without the needed remote
 * permission, and a misaligned atomic. The client prints one line per test:
 *
 *   probe TEST client=PASS|FAIL server=PASS|FAIL wc=STATUS expect=STATUS ...
 *
 * and exits 0 when every test passed on both sides, 1 otherwise, 2 on a setup
 * error. Every wait is bounded (-T).
 *
 * Before a QP is destroyed, the async events queued for the context are read,
 * acknowledged and reported (events=...). With -E they are never read, as
 * perftest does: rdma-core's ibv_destroy_qp waits only for the events the
 * application has read, so that must not hang either.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define PROBE_BUF_LEN 16384u          /* each side's registered buffer */
#define PROBE_TARGET_OFF 256u         /* where data tests land in the server buffer */
#define PROBE_ATOMIC_OFF 64u          /* 8-byte aligned atomic target */
#define PROBE_GUARD 0xa5u             /* server buffer fill before a test */
#define PROBE_ATOMIC_INIT 0x0102030405060708ull
#define PROBE_ATOMIC_ADD 0x10ull
#define PROBE_ATOMIC_SWAP 0xfeedface12345678ull
#define PROBE_LINE 256

/* What a test does on the wire. */
enum probe_op { OP_WRITE, OP_READ, OP_SEND, OP_ATOMICS, OP_FETCH_ADD };
/* How the client aims at the server's region (TGT_WINDOW_END: from 64 bytes
 * before the end of the advertised region on, past it but inside the MR). */
enum probe_target { TGT_OK, TGT_BAD_RKEY, TGT_OUT_OF_BOUNDS, TGT_MISALIGNED, TGT_WINDOW_END };
/*
 * Remote permissions of the server's region. ACC_MW*: the client gets the
 * rkey of a type 2 memory window the server's QP bound (IBV_WR_BIND_MW) over
 * its MR (which allows everything and MW binding): over the whole buffer
 * with every remote right; over the first PROBE_MW_SMALL bytes; without
 * remote read; or bound and then invalidated (IBV_WR_LOCAL_INV) before the
 * client's request.
 */
enum probe_access { ACC_ALL, ACC_NO_WRITE, ACC_NO_READ, ACC_MW, ACC_MW_SMALL, ACC_MW_NO_READ,
		    ACC_MW_INVALIDATED };
#define PROBE_MW_SMALL 4096u

/*
 * X(name, op, server region access, target, expected client completion).
 * The server checks its memory: the data tests must have written the
 * pattern (write, send, atomics); every other test must leave it untouched.
 */
#define PROBE_TESTS(X) \
	X(write_verify, OP_WRITE, ACC_ALL, TGT_OK, IBV_WC_SUCCESS) \
	X(read_verify, OP_READ, ACC_ALL, TGT_OK, IBV_WC_SUCCESS) \
	X(send_verify, OP_SEND, ACC_ALL, TGT_OK, IBV_WC_SUCCESS) \
	X(atomic_verify, OP_ATOMICS, ACC_ALL, TGT_OK, IBV_WC_SUCCESS) \
	X(write_bad_rkey, OP_WRITE, ACC_ALL, TGT_BAD_RKEY, IBV_WC_REM_ACCESS_ERR) \
	X(read_bad_rkey, OP_READ, ACC_ALL, TGT_BAD_RKEY, IBV_WC_REM_ACCESS_ERR) \
	X(atomic_bad_rkey, OP_FETCH_ADD, ACC_ALL, TGT_BAD_RKEY, IBV_WC_REM_ACCESS_ERR) \
	X(write_out_of_bounds, OP_WRITE, ACC_ALL, TGT_OUT_OF_BOUNDS, IBV_WC_REM_ACCESS_ERR) \
	X(read_out_of_bounds, OP_READ, ACC_ALL, TGT_OUT_OF_BOUNDS, IBV_WC_REM_ACCESS_ERR) \
	X(write_no_permission, OP_WRITE, ACC_NO_WRITE, TGT_OK, IBV_WC_REM_ACCESS_ERR) \
	X(read_no_permission, OP_READ, ACC_NO_READ, TGT_OK, IBV_WC_REM_ACCESS_ERR) \
	X(atomic_misaligned, OP_FETCH_ADD, ACC_ALL, TGT_MISALIGNED, IBV_WC_REM_INV_REQ_ERR) \
	X(mw_write_verify, OP_WRITE, ACC_MW, TGT_OK, IBV_WC_SUCCESS) \
	X(mw_read_verify, OP_READ, ACC_MW, TGT_OK, IBV_WC_SUCCESS) \
	X(mw_write_past_window, OP_WRITE, ACC_MW_SMALL, TGT_WINDOW_END, IBV_WC_REM_ACCESS_ERR) \
	X(mw_read_no_permission, OP_READ, ACC_MW_NO_READ, TGT_OK, IBV_WC_REM_ACCESS_ERR) \
	X(mw_write_invalidated, OP_WRITE, ACC_MW_INVALIDATED, TGT_OK, IBV_WC_REM_ACCESS_ERR)

struct probe_test {
	const char *name;
	enum probe_op op;
	enum probe_access access;
	enum probe_target target;
	enum ibv_wc_status expect;
};

static const struct probe_test probe_tests[] = {
#define PROBE_TEST_ENTRY(n, o, a, t, e) { #n, o, a, t, e },
	PROBE_TESTS(PROBE_TEST_ENTRY)
#undef PROBE_TEST_ENTRY
};
#define PROBE_N_TESTS (sizeof(probe_tests) / sizeof(probe_tests[0]))

static const char *const qp_state_names[] = {
	[IBV_QPS_RESET] = "RESET", [IBV_QPS_INIT] = "INIT", [IBV_QPS_RTR] = "RTR",
	[IBV_QPS_RTS] = "RTS",     [IBV_QPS_SQD] = "SQD",   [IBV_QPS_SQE] = "SQE",
	[IBV_QPS_ERR] = "ERR",
};

struct probe_opts {
	const char *dev_name;
	const char *host;           /* NULL: server */
	const char *tests;          /* comma list or "all" */
	const char *skip;           /* comma list left out of tests, or NULL */
	uint8_t ib_port;
	int gid_idx;
	int port;
	enum ibv_mtu mtu;           /* 0: the port's active MTU */
	uint32_t size;
	int timeout_s;              /* every wait */
	int connect_retry_s;        /* client: keep trying to connect */
	bool read_events;           /* read and ack async events before destroying a QP */
};

/* One side of one test: the verbs objects and the buffer. */
struct probe_side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	struct ibv_mw *mw;          /* server, ACC_MW*: the type 2 window */
	uint8_t *buf;
	union ibv_gid gid;
	enum ibv_mtu mtu;
	uint32_t psn;
};

struct probe_remote {
	uint32_t qpn, psn, rkey, len;
	uint64_t addr;
	union ibv_gid gid;
};

static struct probe_opts opt = {
	.ib_port = 1,
	.gid_idx = 1,
	.port = 18750,
	.tests = "all",
	.size = 3000,
	.timeout_s = 15,
	.connect_retry_s = 0,
	.read_events = true,
};

static const char *role = "probe";

static void
say(const char *fmt, ...)
{
	va_list ap;

	printf("%s: ", role);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static const char *
wc_name(enum ibv_wc_status s)
{
	static const char *const names[] = {
#define WC_NAME(s) [IBV_WC_##s] = #s
		WC_NAME(SUCCESS), WC_NAME(LOC_LEN_ERR), WC_NAME(LOC_QP_OP_ERR),
		WC_NAME(LOC_EEC_OP_ERR), WC_NAME(LOC_PROT_ERR), WC_NAME(WR_FLUSH_ERR),
		WC_NAME(MW_BIND_ERR), WC_NAME(BAD_RESP_ERR), WC_NAME(LOC_ACCESS_ERR),
		WC_NAME(REM_INV_REQ_ERR), WC_NAME(REM_ACCESS_ERR), WC_NAME(REM_OP_ERR),
		WC_NAME(RETRY_EXC_ERR), WC_NAME(RNR_RETRY_EXC_ERR), WC_NAME(LOC_RDD_VIOL_ERR),
		WC_NAME(REM_INV_RD_REQ_ERR), WC_NAME(REM_ABORT_ERR), WC_NAME(INV_EECN_ERR),
		WC_NAME(INV_EEC_STATE_ERR), WC_NAME(FATAL_ERR), WC_NAME(RESP_TIMEOUT_ERR),
		WC_NAME(GENERAL_ERR),
#undef WC_NAME
	};

	if ((size_t)s < sizeof(names) / sizeof(names[0]) && names[s] != NULL)
		return names[s];
	return "UNKNOWN";
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Byte i of the data pattern with @p seed: not periodic in a 256-byte packet. */
static uint8_t
pattern_byte(uint32_t seed, uint32_t i)
{
	return (uint8_t)(seed + i * 7u + (i >> 8) * 13u);
}

static void
pattern_fill(uint8_t *p, uint32_t len, uint32_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		p[i] = pattern_byte(seed, i);
}

/* @return the offset of the first byte that differs from the pattern, or -1. */
static long
pattern_mismatch(const uint8_t *p, uint32_t len, uint32_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		if (p[i] != pattern_byte(seed, i))
			return (long)i;
	return -1;
}

/* @return the offset of the first byte in [from, to) that is not @p v, or -1. */
static long
fill_mismatch(const uint8_t *p, uint32_t from, uint32_t to, uint8_t v)
{
	for (uint32_t i = from; i < to; i++)
		if (p[i] != v)
			return (long)i;
	return -1;
}

/* ---- TCP lines ---- */

static int
send_line(int fd, const char *fmt, ...)
{
	char line[PROBE_LINE];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0 || n >= (int)sizeof(line) - 1)
		return -1;
	line[n++] = '\n';
	for (int off = 0; off < n;) {
		ssize_t w = send(fd, line + off, (size_t)(n - off), MSG_NOSIGNAL);

		if (w <= 0)
			return -1;
		off += (int)w;
	}
	return 0;
}

/* Read one line (without '\n') within the timeout; byte by byte, lines are few. */
static int
recv_line(int fd, char *line, size_t len)
{
	double deadline = now_s() + opt.timeout_s;
	size_t n = 0;

	while (n + 1 < len) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int left = (int)((deadline - now_s()) * 1000.0);
		char c;

		if (left <= 0 || poll(&p, 1, left) <= 0)
			return -1;
		if (recv(fd, &c, 1, 0) != 1)
			return -1;
		if (c == '\n') {
			line[n] = '\0';
			return 0;
		}
		line[n++] = c;
	}
	return -1;
}

static int
tcp_listen_accept(int port)
{
	struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port),
				  .sin6_addr = IN6ADDR_ANY_INIT };
	struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_ANY) };
	int one = 1, ls, fd;
	struct pollfd p;

	ls = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (ls >= 0) {
		int zero = 0;

		setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		setsockopt(ls, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		if (bind(ls, (struct sockaddr *)&a, sizeof(a)) != 0) {
			close(ls);
			ls = -1;
		}
	}
	if (ls < 0) { /* no IPv6 (the guest turns it off) */
		ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (ls < 0)
			return -1;
		setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(ls, (struct sockaddr *)&a4, sizeof(a4)) != 0) {
			say("bind port %d: %s", port, strerror(errno));
			close(ls);
			return -1;
		}
	}
	if (listen(ls, 1) != 0) {
		close(ls);
		return -1;
	}
	say("listening on port %d", port);
	p = (struct pollfd){ .fd = ls, .events = POLLIN };
	if (poll(&p, 1, opt.timeout_s * 4 * 1000) <= 0) {
		say("no client within %d s", opt.timeout_s * 4);
		close(ls);
		return -1;
	}
	fd = accept(ls, NULL, NULL);
	close(ls);
	return fd;
}

static int
tcp_connect(const char *host, int port)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res;
	char service[16];
	double deadline = now_s() + opt.connect_retry_s;

	snprintf(service, sizeof(service), "%d", port);
	if (getaddrinfo(host, service, &hints, &res) != 0) {
		say("cannot resolve %s", host);
		return -1;
	}
	for (;;) {
		for (struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
			int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);

			if (fd < 0)
				continue;
			if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
				freeaddrinfo(res);
				return fd;
			}
			close(fd);
		}
		if (now_s() >= deadline)
			break;
		usleep(100000);
	}
	freeaddrinfo(res);
	say("Couldn't connect to %s:%d", host, port);
	return -1;
}

/* ---- verbs ---- */

static void
gid_to_hex(const union ibv_gid *g, char *out)
{
	for (int i = 0; i < 16; i++)
		sprintf(out + 2 * i, "%02x", g->raw[i]);
}

static int
gid_from_hex(const char *s, union ibv_gid *g)
{
	if (strlen(s) != 32)
		return -1;
	for (int i = 0; i < 16; i++) {
		unsigned int b;

		if (sscanf(s + 2 * i, "%2x", &b) != 1)
			return -1;
		g->raw[i] = (uint8_t)b;
	}
	return 0;
}

static struct ibv_context *
open_device(void)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int n;

	list = ibv_get_device_list(&n);
	if (list == NULL || n == 0) {
		say("no RDMA device");
		if (list != NULL)
			ibv_free_device_list(list);
		return NULL;
	}
	for (int i = 0; i < n; i++) {
		if (opt.dev_name == NULL || strcmp(ibv_get_device_name(list[i]), opt.dev_name) == 0) {
			ctx = ibv_open_device(list[i]);
			if (ctx == NULL)
				say("cannot open %s", ibv_get_device_name(list[i]));
			break;
		}
	}
	if (ctx == NULL && opt.dev_name != NULL)
		say("device %s not found", opt.dev_name);
	ibv_free_device_list(list);
	return ctx;
}

static int
access_flags(enum probe_access a)
{
	int f = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		IBV_ACCESS_REMOTE_ATOMIC;

	if (a == ACC_NO_WRITE)
		f &= ~(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
	else if (a == ACC_NO_READ)
		f &= ~IBV_ACCESS_REMOTE_READ;
	else if (a >= ACC_MW)
		f |= IBV_ACCESS_MW_BIND;
	return f;
}

/* Report a failed verbs call (errno set by libibverbs); @return -1. */
static int
verbs_failed(const char *what)
{
	say("%s: %s", what, strerror(errno));
	return -1;
}

/*
 * Read and acknowledge the async events queued for this context (the QP
 * errors of the error tests raise some), waiting up to @p wait_ms for the
 * first; their names are appended to @p out. rdma-core's ibv_destroy_qp
 * waits for the acknowledgement of every event the application has read.
 */
static void
drain_async_events(struct ibv_context *ctx, int wait_ms, char *out, size_t len)
{
	struct ibv_async_event ev;
	struct pollfd p = { .fd = ctx->async_fd, .events = POLLIN };
	size_t used = strlen(out);

	if (!opt.read_events)
		return;
	while (poll(&p, 1, wait_ms) == 1 && ibv_get_async_event(ctx, &ev) == 0) {
		int n = snprintf(out + used, len - used, "%s%s", used ? "," : "",
				 ibv_event_type_str(ev.event_type));

		if (n > 0 && (size_t)n < len - used)
			used += (size_t)n;
		for (char *c = out; *c; c++)
			if (*c == ' ')
				*c = '_';
		ibv_ack_async_event(&ev);
		wait_ms = 0;
	}
}

static void
side_close(struct probe_side *s)
{
	if (s->mw != NULL)
		ibv_dealloc_mw(s->mw); /* before its MR: rxe refuses to deregister a bound one */
	if (s->qp != NULL)
		ibv_destroy_qp(s->qp);
	if (s->mr != NULL)
		ibv_dereg_mr(s->mr);
	if (s->cq != NULL)
		ibv_destroy_cq(s->cq);
	s->qp = NULL;
	s->mw = NULL;
	s->mr = NULL;
	s->cq = NULL;
}

/* A CQ, the buffer's MR with @p access and an RC QP in INIT. */
static int
side_open(struct probe_side *s, enum probe_access access)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
		.sq_sig_all = 1,
	};
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = opt.ib_port,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC,
	};

	s->cq = ibv_create_cq(s->ctx, 16, NULL, NULL, 0);
	if (s->cq == NULL)
		return verbs_failed("ibv_create_cq");
	s->mr = ibv_reg_mr(s->pd, s->buf, PROBE_BUF_LEN, access_flags(access));
	if (s->mr == NULL)
		return verbs_failed("ibv_reg_mr");
	ia.send_cq = s->cq;
	ia.recv_cq = s->cq;
	s->qp = ibv_create_qp(s->pd, &ia);
	if (s->qp == NULL)
		return verbs_failed("ibv_create_qp");
	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS) != 0)
		return verbs_failed("modify to INIT");
	s->psn = (uint32_t)lrand48() & 0xffffff;
	return 0;
}

static int
side_connect(struct probe_side *s, const struct probe_remote *r)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = s->mtu,
		.dest_qp_num = r->qpn,
		.rq_psn = r->psn,
		.max_dest_rd_atomic = 4,
		.min_rnr_timer = 12,
		.ah_attr = {
			.is_global = 1,
			.grh = { .dgid = r->gid, .sgid_index = (uint8_t)opt.gid_idx, .hop_limit = 64 },
			.port_num = opt.ib_port,
		},
	};

	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) != 0)
		return verbs_failed("modify to RTR");
	a = (struct ibv_qp_attr){
		.qp_state = IBV_QPS_RTS,
		.timeout = 14,
		.retry_cnt = 7,
		.rnr_retry = 7,
		.sq_psn = s->psn,
		.max_rd_atomic = 4,
	};
	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC) != 0)
		return verbs_failed("modify to RTS");
	return 0;
}

static const char *
qp_state_name(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia) != 0)
		return "?";
	if ((size_t)a.qp_state < sizeof(qp_state_names) / sizeof(qp_state_names[0]) &&
	    qp_state_names[a.qp_state] != NULL)
		return qp_state_names[a.qp_state];
	return "?";
}

/* Poll @p n completions (bounded); @return how many arrived, statuses in @p wc. */
static int
poll_n(struct ibv_cq *cq, struct ibv_wc *wc, int n, double timeout_s)
{
	double deadline = now_s() + timeout_s;
	int got = 0;

	while (got < n && now_s() < deadline) {
		int k = ibv_poll_cq(cq, n - got, wc + got);

		if (k < 0)
			return got;
		if (k == 0)
			usleep(200);
		got += k;
	}
	return got;
}

/* ---- client ---- */

static int
post_one(struct probe_side *s, enum ibv_wr_opcode op, uint64_t laddr, uint32_t len,
	 uint64_t raddr, uint32_t rkey, uint64_t cmp_add, uint64_t swap, uint64_t id)
{
	struct ibv_sge sge = { .addr = laddr, .length = len, .lkey = s->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr *bad;
	int rc;

	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_CMP_AND_SWP) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = cmp_add;
		wr.wr.atomic.swap = swap;
	} else if (op != IBV_WR_SEND) {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	rc = ibv_post_send(s->qp, &wr, &bad);
	if (rc != 0)
		say("ibv_post_send: %s", strerror(rc));
	return rc; /* an errno value */
}

enum probe_verdict { V_PASS, V_FAIL, V_SKIP };
static const char *const verdict_names[] = { "PASS", "FAIL", "SKIP" };

/*
 * Run test @p t's work requests. @return the client verdict (SKIP: the local
 * library refused to post it, e.g. rxe's provider rejects a misaligned atomic
 * before it reaches the wire); @p wcs gets the completion status (the first
 * that is not SUCCESS for a sequence) and @p detail a short explanation.
 */
static enum probe_verdict
client_run(const struct probe_test *t, struct probe_side *s, const struct probe_remote *r,
	   uint32_t size, enum ibv_wc_status *wcs, char *detail, size_t dlen)
{
	uint64_t raddr = r->addr + PROBE_TARGET_OFF, laddr = (uintptr_t)s->buf;
	uint32_t rkey = r->rkey;
	struct ibv_wc wc[4];
	int n_wr = 1, got, rc;

	snprintf(detail, dlen, "-");
	switch (t->target) {
	case TGT_OK:
		break;
	case TGT_BAD_RKEY:
		rkey ^= 0x00a5a500u; /* another index, same key byte */
		break;
	case TGT_OUT_OF_BOUNDS:
		raddr = r->addr + r->len - size / 2; /* starts inside, ends beyond */
		break;
	case TGT_MISALIGNED:
		raddr = r->addr + PROBE_ATOMIC_OFF + 4;
		break;
	case TGT_WINDOW_END:
		raddr = r->addr + r->len - 64;
		break;
	}
	memset(s->buf, 0, PROBE_BUF_LEN);
	switch (t->op) {
	case OP_WRITE:
	case OP_SEND:
		pattern_fill(s->buf, size, 0x11);
		if (post_one(s, t->op == OP_WRITE ? IBV_WR_RDMA_WRITE : IBV_WR_SEND, laddr, size,
			     raddr, rkey, 0, 0, 1) != 0)
			return V_FAIL;
		break;
	case OP_READ:
		if (post_one(s, IBV_WR_RDMA_READ, laddr, size, raddr, rkey, 0, 0, 1) != 0)
			return V_FAIL;
		break;
	case OP_FETCH_ADD:
		if (t->target != TGT_MISALIGNED)
			raddr = raddr - PROBE_TARGET_OFF + PROBE_ATOMIC_OFF;
		rc = post_one(s, IBV_WR_ATOMIC_FETCH_AND_ADD, laddr, 8, raddr, rkey, 1, 0, 1);
		if (rc != 0) {
			snprintf(detail, dlen, "post_refused_locally_errno_%d", rc);
			return t->target == TGT_MISALIGNED ? V_SKIP : V_FAIL;
		}
		break;
	case OP_ATOMICS:
		raddr = r->addr + PROBE_ATOMIC_OFF;
		n_wr = 3;
		if (post_one(s, IBV_WR_ATOMIC_FETCH_AND_ADD, laddr, 8, raddr, rkey, PROBE_ATOMIC_ADD,
			     0, 1) != 0 ||
		    post_one(s, IBV_WR_ATOMIC_CMP_AND_SWP, laddr + 8, 8, raddr, rkey,
			     PROBE_ATOMIC_INIT + PROBE_ATOMIC_ADD, PROBE_ATOMIC_SWAP, 2) != 0 ||
		    post_one(s, IBV_WR_ATOMIC_CMP_AND_SWP, laddr + 16, 8, raddr, rkey,
			     PROBE_ATOMIC_INIT, 0, 3) != 0)
			return V_FAIL;
		break;
	}
	got = poll_n(s->cq, wc, n_wr, opt.timeout_s);
	if (got < n_wr) {
		*wcs = (enum ibv_wc_status)-1;
		snprintf(detail, dlen, "%d_of_%d_completions_within_%ds", got, n_wr, opt.timeout_s);
		return V_FAIL;
	}
	*wcs = IBV_WC_SUCCESS;
	for (int i = 0; i < n_wr; i++) {
		if (wc[i].status != IBV_WC_SUCCESS) {
			*wcs = wc[i].status;
			break;
		}
	}
	if (*wcs != t->expect)
		return V_FAIL;
	if (t->expect != IBV_WC_SUCCESS)
		return V_PASS;
	if (t->op == OP_READ) {
		long bad = pattern_mismatch(s->buf, size, 0x22);

		if (bad >= 0) {
			snprintf(detail, dlen, "read_data_differs_at_%ld", bad);
			return V_FAIL;
		}
		snprintf(detail, dlen, "read_%u_bytes_ok", size);
	} else if (t->op == OP_ATOMICS) {
		uint64_t v[3];

		memcpy(v, s->buf, sizeof(v));
		if (v[0] != PROBE_ATOMIC_INIT || v[1] != PROBE_ATOMIC_INIT + PROBE_ATOMIC_ADD ||
		    v[2] != PROBE_ATOMIC_SWAP) {
			snprintf(detail, dlen, "atomic_returns_%016" PRIx64 "_%016" PRIx64 "_%016" PRIx64,
				 v[0], v[1], v[2]);
			return V_FAIL;
		}
		snprintf(detail, dlen, "fetch_add+cmp_swap+failed_cmp_swap_ok");
	}
	return V_PASS;
}

/* @return whether comma-separated @p names holds test @p t's name. */
static bool
probe_listed(const struct probe_test *t, const char *names)
{
	char list[PROBE_LINE];
	bool in = false;
	char *save = NULL;

	snprintf(list, sizeof(list), "%s", names);
	for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		in |= strcmp(tok, t->name) == 0;
	return in;
}

/* @return whether -t selects test @p t ("all" or a list) and -x does not leave it out. */
static bool
probe_selected(const struct probe_test *t)
{
	if (opt.skip != NULL && probe_listed(t, opt.skip))
		return false;
	return strcmp(opt.tests, "all") == 0 || probe_listed(t, opt.tests);
}

static int
run_client(struct probe_side *s)
{
	int fd, failed = 0, ran = 0, planned = 0;

	for (size_t i = 0; i < PROBE_N_TESTS; i++)
		planned += probe_selected(&probe_tests[i]);
	/* the harness checks that exactly this many verdict lines follow */
	printf("probe plan %d\n", planned);
	fflush(stdout);
	fd = tcp_connect(opt.host, opt.port);
	if (fd < 0)
		return 2;
	for (size_t i = 0; i < PROBE_N_TESTS; i++) {
		const struct probe_test *t = &probe_tests[i];
		struct probe_remote r;
		char line[PROBE_LINE], gidhex[33], rgid[64], detail[96], sres[8] = "?", sdet[160] = "-";
		char cev[64] = "";
		enum ibv_wc_status wcs = (enum ibv_wc_status)-1;
		enum probe_verdict cv = V_FAIL;
		bool setup_ok = false;

		if (!probe_selected(t))
			continue;
		ran++;
		snprintf(detail, sizeof(detail), "setup");
		if (side_open(s, ACC_ALL) != 0 || send_line(fd, "TEST %s %u", t->name, opt.size) != 0 ||
		    recv_line(fd, line, sizeof(line)) != 0 ||
		    sscanf(line, "QP %" SCNu32 " %" SCNu32 " %63s %" SCNu32 " %" SCNu64 " %" SCNu32,
			   &r.qpn, &r.psn, rgid, &r.rkey, &r.addr, &r.len) != 6 ||
		    gid_from_hex(rgid, &r.gid) != 0) {
			say("test %s: exchange with the server failed", t->name);
		} else {
			gid_to_hex(&s->gid, gidhex);
			if (send_line(fd, "QP %u %u %s", s->qp->qp_num, s->psn, gidhex) == 0 &&
			    recv_line(fd, line, sizeof(line)) == 0 && strcmp(line, "READY") == 0 &&
			    side_connect(s, &r) == 0)
				setup_ok = true;
			else
				say("test %s: server not ready (%s)", t->name, line);
		}
		if (setup_ok) {
			double t0 = now_s();

			cv = client_run(t, s, &r, opt.size, &wcs, detail, sizeof(detail));
			drain_async_events(s->ctx, strcmp(qp_state_name(s->qp), "ERR") == 0 ? 100 : 0,
					   cev, sizeof(cev));
			if (send_line(fd, "DONE") == 0 && recv_line(fd, line, sizeof(line)) == 0)
				sscanf(line, "RESULT %7s %159[^\n]", sres, sdet);
			say("%s %.3fs", t->name, now_s() - t0);
		}
		printf("probe %s client=%s server=%s wc=%s expect=%s client_qp=%s client_events=%s "
		       "detail=%s server_detail=%s\n",
		       t->name, verdict_names[cv], sres,
		       (int)wcs < 0 ? "NONE" : wc_name(wcs), wc_name(t->expect),
		       s->qp != NULL ? qp_state_name(s->qp) : "?", cev[0] ? cev : "-", detail, sdet);
		fflush(stdout);
		if (cv == V_FAIL || strcmp(sres, "PASS") != 0)
			failed++;
		side_close(s);
		if (!setup_ok) {
			failed += 1;
			break; /* the connection is out of step */
		}
	}
	send_line(fd, "QUIT");
	close(fd);
	say("%d test(s), %d failed", ran, failed);
	return failed == 0 && ran > 0 ? 0 : 1;
}

/* ---- server ---- */

/* Check the server region after test @p t; @return the verdict. */
static bool
server_check(const struct probe_test *t, struct probe_side *s, uint32_t size, char *detail,
	     size_t dlen)
{
	const uint8_t *b = s->buf;
	bool wrote = t->expect == IBV_WC_SUCCESS && (t->op == OP_WRITE || t->op == OP_SEND);
	uint32_t lo = PROBE_TARGET_OFF, hi = PROBE_TARGET_OFF + size;
	long bad;

	if (t->op == OP_SEND) {
		struct ibv_wc wc;
		int got = poll_n(s->cq, &wc, 1, t->expect == IBV_WC_SUCCESS ? opt.timeout_s : 0.2);

		if (t->expect == IBV_WC_SUCCESS &&
		    (got != 1 || wc.status != IBV_WC_SUCCESS || wc.byte_len != size)) {
			snprintf(detail, dlen, "recv_completion_%s_len_%u", got == 1 ? wc_name(wc.status) : "NONE",
				 got == 1 ? wc.byte_len : 0);
			return false;
		}
	}
	if (t->op == OP_ATOMICS || (t->op == OP_FETCH_ADD)) {
		uint64_t v;

		memcpy(&v, b + PROBE_ATOMIC_OFF, sizeof(v));
		uint64_t want = t->op == OP_ATOMICS ? PROBE_ATOMIC_SWAP : PROBE_ATOMIC_INIT;

		if (v != want) {
			snprintf(detail, dlen, "atomic_target_%016" PRIx64 "_want_%016" PRIx64, v, want);
			return false;
		}
		lo = hi = PROBE_ATOMIC_OFF + 8; /* the rest must be untouched */
		bad = fill_mismatch(b, 0, PROBE_ATOMIC_OFF, PROBE_GUARD);
		if (bad < 0)
			bad = fill_mismatch(b, PROBE_ATOMIC_OFF + 8, PROBE_BUF_LEN, PROBE_GUARD);
		if (bad >= 0) {
			snprintf(detail, dlen, "memory_changed_at_%ld", bad);
			return false;
		}
		snprintf(detail, dlen, "atomic_target_ok_qp=%s", qp_state_name(s->qp));
		return true;
	}
	if (t->op == OP_READ) { /* the region holds the read pattern, unchanged */
		bad = pattern_mismatch(b + PROBE_TARGET_OFF, PROBE_BUF_LEN - PROBE_TARGET_OFF, 0x22);
		if (bad >= 0) {
			snprintf(detail, dlen, "read_source_changed_at_%ld", bad + PROBE_TARGET_OFF);
			return false;
		}
		snprintf(detail, dlen, "untouched_qp=%s", qp_state_name(s->qp));
		return true;
	}
	if (wrote) {
		bad = pattern_mismatch(b + lo, size, 0x11);
		if (bad >= 0) {
			snprintf(detail, dlen, "data_differs_at_%ld", bad);
			return false;
		}
	} else {
		lo = hi = 0;
	}
	bad = fill_mismatch(b, 0, lo, PROBE_GUARD);
	if (bad < 0)
		bad = fill_mismatch(b, hi, PROBE_BUF_LEN, PROBE_GUARD);
	if (bad >= 0) {
		snprintf(detail, dlen, "memory_changed_at_%ld", bad);
		return false;
	}
	snprintf(detail, dlen, "%s_qp=%s", wrote ? "data_ok" : "untouched", qp_state_name(s->qp));
	return true;
}

/* Post @p wr on the server's QP and wait for its completion; @return 0 or -1. */
static int
server_post_wait(struct probe_side *s, struct ibv_send_wr *wr, const char *what)
{
	struct ibv_send_wr *bad;
	struct ibv_wc wc;
	int rc = ibv_post_send(s->qp, wr, &bad);

	if (rc != 0) {
		say("%s: ibv_post_send: %s", what, strerror(rc));
		return -1;
	}
	if (poll_n(s->cq, &wc, 1, opt.timeout_s) != 1 || wc.status != IBV_WC_SUCCESS) {
		say("%s: completion %s", what, wc_name(wc.status));
		return -1;
	}
	return 0;
}

/*
 * ACC_MW*: bind the window (its key @p rkey, ibv_inc_rkey() of the MW's) over
 * [buf, buf + @p len) with the test's rights through the server's QP, in RTS;
 * ACC_MW_INVALIDATED: then invalidate it. @return 0 or -1.
 */
static int
server_bind_mw(struct probe_side *s, enum probe_access acc, uint32_t rkey, uint32_t len)
{
	struct ibv_send_wr wr = {
		.wr_id = 9, .opcode = IBV_WR_BIND_MW, .send_flags = IBV_SEND_SIGNALED,
		.bind_mw = { .mw = s->mw, .rkey = rkey, .bind_info = {
			.mr = s->mr, .addr = (uintptr_t)s->buf, .length = len,
			.mw_access_flags = IBV_ACCESS_REMOTE_WRITE |
					   (acc == ACC_MW_NO_READ ? 0 : IBV_ACCESS_REMOTE_READ) } },
	};

	if (server_post_wait(s, &wr, "bind_mw") != 0)
		return -1;
	if (acc != ACC_MW_INVALIDATED)
		return 0;
	wr = (struct ibv_send_wr){ .wr_id = 10, .opcode = IBV_WR_LOCAL_INV,
				   .send_flags = IBV_SEND_SIGNALED, .invalidate_rkey = rkey };
	return server_post_wait(s, &wr, "local_inv");
}

static int
run_server(struct probe_side *s)
{
	int fd, failed = 0;
	char line[PROBE_LINE];

	fd = tcp_listen_accept(opt.port);
	if (fd < 0)
		return 2;
	while (recv_line(fd, line, sizeof(line)) == 0) {
		char name[64], rgid[64], gidhex[33], detail[160];
		const struct probe_test *t = NULL;
		struct probe_remote r;
		uint32_t size;
		bool ok;

		if (strcmp(line, "QUIT") == 0) {
			close(fd);
			say("done, %d failed", failed);
			return failed == 0 ? 0 : 1;
		}
		if (sscanf(line, "TEST %63s %" SCNu32, name, &size) != 2 || size == 0 ||
		    size > PROBE_BUF_LEN - PROBE_TARGET_OFF)
			break;
		for (size_t i = 0; i < PROBE_N_TESTS; i++)
			if (strcmp(probe_tests[i].name, name) == 0)
				t = &probe_tests[i];
		if (t == NULL)
			break;
		memset(s->buf, PROBE_GUARD, PROBE_BUF_LEN);
		if (t->op == OP_READ)
			pattern_fill(s->buf + PROBE_TARGET_OFF, PROBE_BUF_LEN - PROBE_TARGET_OFF, 0x22);
		if (t->op == OP_ATOMICS || t->op == OP_FETCH_ADD) {
			uint64_t v = PROBE_ATOMIC_INIT;

			memcpy(s->buf + PROBE_ATOMIC_OFF, &v, sizeof(v));
		}
		if (side_open(s, t->access) != 0)
			break;
		uint32_t rkey = s->mr->rkey, len = PROBE_BUF_LEN;

		if (t->access >= ACC_MW) {
			s->mw = ibv_alloc_mw(s->pd, IBV_MW_TYPE_2);
			if (s->mw == NULL) {
				verbs_failed("ibv_alloc_mw");
				break;
			}
			rkey = ibv_inc_rkey(s->mw->rkey);
			if (t->access == ACC_MW_SMALL)
				len = PROBE_MW_SMALL;
		}
		gid_to_hex(&s->gid, gidhex);
		if (send_line(fd, "QP %u %u %s %u %" PRIu64 " %u", s->qp->qp_num, s->psn, gidhex,
			      rkey, (uint64_t)(uintptr_t)s->buf, len) != 0 ||
		    recv_line(fd, line, sizeof(line)) != 0 ||
		    sscanf(line, "QP %" SCNu32 " %" SCNu32 " %63s", &r.qpn, &r.psn, rgid) != 3 ||
		    gid_from_hex(rgid, &r.gid) != 0)
			break;
		if (t->op == OP_SEND) {
			struct ibv_sge sge = { .addr = (uintptr_t)s->buf + PROBE_TARGET_OFF,
					       .length = PROBE_BUF_LEN - PROBE_TARGET_OFF,
					       .lkey = s->mr->lkey };
			struct ibv_recv_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1 }, *bad;

			if (ibv_post_recv(s->qp, &wr, &bad) != 0) {
				say("ibv_post_recv: %s", strerror(errno));
				break;
			}
		}
		if (side_connect(s, &r) != 0 ||
		    (s->mw != NULL && server_bind_mw(s, t->access, rkey, len) != 0) ||
		    send_line(fd, "READY") != 0)
			break;
		if (recv_line(fd, line, sizeof(line)) != 0 || strcmp(line, "DONE") != 0)
			break;
		ok = server_check(t, s, size, detail, sizeof(detail));
		{
			char ev[64] = "";
			size_t used = strlen(detail);

			drain_async_events(s->ctx, strcmp(qp_state_name(s->qp), "ERR") == 0 ? 100 : 0,
					   ev, sizeof(ev));
			snprintf(detail + used, sizeof(detail) - used, "_events=%s", ev[0] ? ev : "-");
		}
		failed += !ok;
		say("%s %s %s", t->name, ok ? "PASS" : "FAIL", detail);
		if (send_line(fd, "RESULT %s %s", ok ? "PASS" : "FAIL", detail) != 0)
			break;
		side_close(s);
	}
	say("connection ended before QUIT (%s)", line);
	side_close(s);
	close(fd);
	return 2;
}

static void
usage(const char *prog)
{
	fprintf(stderr,
		"Usage: %s [options]          server\n"
		"       %s [options] HOST     client\n"
		"  -d DEV     RDMA device (default: the first)\n"
		"  -i PORT    device port (1)\n"
		"  -g IDX     GID index (1: the RoCEv2 IPv4 GID on rxe and roce-daemon)\n"
		"  -p PORT    TCP port (18750)\n"
		"  -m MTU     path MTU 256..4096 (default: the port's active MTU)\n"
		"  -s SIZE    bytes per data test (3000)\n"
		"  -t LIST    comma-separated tests, or all (default)\n"
		"  -x LIST    client: leave these tests out (of -t's)\n"
		"  -T SECS    bound on every wait (15)\n"
		"  -r SECS    client: keep trying to connect this long (0)\n"
		"  -E         never read async events (like perftest): a QP error event\n"
		"             must not make ibv_destroy_qp wait\n"
		"  -l         list the tests and their expected completions\n",
		prog, prog);
}

static enum ibv_mtu
mtu_from_bytes(long v)
{
	switch (v) {
	case 256: return IBV_MTU_256;
	case 512: return IBV_MTU_512;
	case 1024: return IBV_MTU_1024;
	case 2048: return IBV_MTU_2048;
	case 4096: return IBV_MTU_4096;
	default: return (enum ibv_mtu)0;
	}
}

int
main(int argc, char **argv)
{
	struct probe_side s = { 0 };
	struct ibv_port_attr pa;
	int c, rc;

	while ((c = getopt(argc, argv, "d:i:g:p:m:s:t:x:T:r:Elh")) != -1) {
		switch (c) {
		case 'd': opt.dev_name = optarg; break;
		case 'i': opt.ib_port = (uint8_t)atoi(optarg); break;
		case 'g': opt.gid_idx = atoi(optarg); break;
		case 'p': opt.port = atoi(optarg); break;
		case 'm':
			opt.mtu = mtu_from_bytes(atol(optarg));
			if (opt.mtu == 0) {
				fprintf(stderr, "bad MTU %s\n", optarg);
				return 2;
			}
			break;
		case 's': opt.size = (uint32_t)atol(optarg); break;
		case 't': opt.tests = optarg; break;
		case 'x': opt.skip = optarg; break;
		case 'T': opt.timeout_s = atoi(optarg); break;
		case 'r': opt.connect_retry_s = atoi(optarg); break;
		case 'E': opt.read_events = false; break;
		case 'l':
			for (size_t i = 0; i < PROBE_N_TESTS; i++)
				printf("%s %s\n", probe_tests[i].name, wc_name(probe_tests[i].expect));
			return 0;
		default:
			usage(argv[0]);
			return c == 'h' ? 0 : 2;
		}
	}
	if (optind < argc)
		opt.host = argv[optind];
	role = opt.host != NULL ? "probe-client" : "probe-server";
	if (opt.size == 0 || opt.size > PROBE_BUF_LEN - PROBE_TARGET_OFF || opt.timeout_s <= 0 ||
	    opt.port <= 0 || opt.port > 65535) {
		usage(argv[0]);
		return 2;
	}
	srand48((long)getpid() ^ (long)time(NULL));

	s.ctx = open_device();
	if (s.ctx == NULL)
		return 2;
	if (ibv_query_port(s.ctx, opt.ib_port, &pa) != 0 ||
	    ibv_query_gid(s.ctx, opt.ib_port, opt.gid_idx, &s.gid) != 0) {
		say("cannot query port %u / GID %d", opt.ib_port, opt.gid_idx);
		return 2;
	}
	s.mtu = opt.mtu != 0 ? opt.mtu : pa.active_mtu;
	s.pd = ibv_alloc_pd(s.ctx);
	s.buf = aligned_alloc(4096, PROBE_BUF_LEN);
	if (s.pd == NULL || s.buf == NULL) {
		say("ibv_alloc_pd / buffer failed");
		return 2;
	}
	say("device %s port %u gid[%d] mtu %d", ibv_get_device_name(s.ctx->device), opt.ib_port,
	    opt.gid_idx, 128 << s.mtu);
	rc = opt.host != NULL ? run_client(&s) : run_server(&s);
	side_close(&s);
	ibv_dealloc_pd(s.pd);
	ibv_close_device(s.ctx);
	free(s.buf);
	return rc;
}
