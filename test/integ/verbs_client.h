/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the lab's small verbs clients share (fallback_client.c, mw_client.c,
 * raw_client.c): failing with a message, a byte pattern, opening the
 * device, RC QPs to RTS on the IPv4 GID, waiting for completions with a
 * deadline, and the TCP exchange between the two sides. Every function ends
 * the program (exit 1) on an error.
 */
#ifndef TEST_INTEG_VERBS_CLIENT_H
#define TEST_INTEG_VERBS_CLIENT_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define VC_GID_INDEX 1  /* the IPv4 GID, as ibv_rc_pingpong -g 1 */
#define VC_WAIT_S 10    /* the longest wait for one completion */

/* The program's name in messages, and what to undo before exiting (or NULL). */
static const char *vc_name = "client";
static void (*vc_cleanup)(void);

static inline void
fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "%s: ", vc_name);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	if (vc_cleanup)
		vc_cleanup();
	exit(1);
}

static inline double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static inline uint8_t
pattern(unsigned int id, size_t i)
{
	return (uint8_t)(id * 131u + i * 7u + (i >> 8));
}

static inline void
fill(uint8_t *p, size_t len, unsigned int id)
{
	for (size_t i = 0; i < len; i++)
		p[i] = pattern(id, i);
}

static inline void
expect_fill(const uint8_t *p, size_t len, unsigned int id, const char *what)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != pattern(id, i))
			fail("%s: byte %zu is %u, expected %u", what, i, p[i], pattern(id, i));
}

struct dev {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	union ibv_gid gid;
};

/* The first device, a PD, one CQ for everything, the IPv4 GID. */
static inline void
dev_open(struct dev *d)
{
	struct ibv_device **list = ibv_get_device_list(NULL);

	if (list == NULL || list[0] == NULL)
		fail("no RDMA device");
	d->ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	if (d->ctx == NULL)
		fail("ibv_open_device: %s", strerror(errno));
	d->pd = ibv_alloc_pd(d->ctx);
	d->cq = ibv_create_cq(d->ctx, 256, NULL, NULL, 0);
	if (d->pd == NULL || d->cq == NULL)
		fail("pd/cq: %s", strerror(errno));
	if (ibv_query_gid(d->ctx, 1, VC_GID_INDEX, &d->gid))
		fail("ibv_query_gid: %s", strerror(errno));
}

/* An RC QP in INIT allowing remote write, read and atomics. */
static inline struct ibv_qp *
qp_new(struct dev *d)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = d->cq, .recv_cq = d->cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 128, .max_recv_wr = 16, .max_send_sge = 3,
			 .max_recv_sge = 3 },
	};
	struct ibv_qp *qp = ibv_create_qp(d->pd, &ia);
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
						    IBV_ACCESS_REMOTE_ATOMIC };

	if (qp == NULL)
		fail("ibv_create_qp: %s", strerror(errno));
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				      IBV_QP_ACCESS_FLAGS))
		fail("INIT: %s", strerror(errno));
	return qp;
}

/* RTR then RTS towards QP @p qpn at @p gid (both PSNs 1). */
static inline void
qp_connect(struct ibv_qp *qp, uint32_t qpn, const union ibv_gid *gid)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024, .dest_qp_num = qpn,
		.rq_psn = 1, .max_dest_rd_atomic = 4, .min_rnr_timer = 1,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .dgid = *gid, .sgid_index = VC_GID_INDEX, .hop_limit = 64 } },
	};

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				      IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				      IBV_QP_MIN_RNR_TIMER))
		fail("RTR: %s", strerror(errno));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 1;
	a.timeout = 12; /* 16 ms */
	a.retry_cnt = 3;
	a.rnr_retry = 3;
	a.max_rd_atomic = 4;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
				      IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC))
		fail("RTS: %s", strerror(errno));
}

/* Wait up to VC_WAIT_S for one completion. */
static inline struct ibv_wc
wait_wc(struct ibv_cq *cq)
{
	struct ibv_wc wc;
	double end = now_s() + VC_WAIT_S;

	for (;;) {
		int n = ibv_poll_cq(cq, 1, &wc);

		if (n < 0)
			fail("ibv_poll_cq");
		if (n == 1)
			return wc;
		if (now_s() > end)
			fail("no completion within %d s", VC_WAIT_S);
	}
}

/* Post @p wr, signaled. */
static inline void
post(struct ibv_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;

	wr->send_flags |= IBV_SEND_SIGNALED;
	if (ibv_post_send(qp, wr, &bad))
		fail("ibv_post_send: %s", strerror(errno));
}

/* ---- the TCP exchange between the two sides ---- */

static inline void
vc_xfer(int fd, void *buf, size_t len, int send_it)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = send_it ? send(fd, (char *)buf + done, len - done, MSG_NOSIGNAL)
				    : recv(fd, (char *)buf + done, len - done, 0);

		if (n <= 0)
			fail("TCP exchange: %s", n == 0 ? "peer closed" : strerror(errno));
		done += (size_t)n;
	}
}

/* The server's TCP connection on @p port (it listens, accepts one client within 30 s). */
static inline int
vc_tcp_accept(uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct timeval tv = { .tv_sec = 30 };
	int one = 1, l = socket(AF_INET, SOCK_STREAM, 0), fd;

	if (l < 0 || setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1) ||
	    setsockopt(l, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)))
		fail("listen: %s", strerror(errno));
	fd = accept(l, NULL, NULL);
	if (fd < 0)
		fail("accept: %s", strerror(errno));
	close(l);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/* The client's TCP connection to @p ip, @p port. */
static inline int
vc_tcp_connect(const char *ip, uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct timeval tv = { .tv_sec = 30 };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || inet_pton(AF_INET, ip, &a.sin_addr) != 1)
		fail("bad address %s", ip);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)))
		fail("connect %s: %s", ip, strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

#endif /* TEST_INTEG_VERBS_CLIENT_H */
