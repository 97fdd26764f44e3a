/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RAW_PACKET QPs and flow steering between two lab hosts, for test_integ
 * (issue 19).
 *
 *   raw_client server       on one host: a RAW_PACKET QP with RAW_FRAMES
 *                           receive WQEs and two flows: one for the test's
 *                           destination MAC and UDP port (priority 0), one
 *                           for the MAC alone (priority 1, so it gets
 *                           nothing while the first matches); accepts the
 *                           client on TCP, waits for every frame and checks
 *                           each byte (the whole frame, Ethernet header on);
 *                           prints "raw server: OK N frames"
 *   raw_client client IP    on the other host: a RAW_PACKET QP that sends
 *                           RAW_FRAMES Ethernet | IPv4 | UDP frames of its
 *                           own making to that MAC and port, then tells the
 *                           server how many; prints "raw client: OK"
 *
 * Addresses: 198.18.0.0/15 only; the destination MAC is a multicast one the
 * hosts' kernels ignore (rdma-core's test_flow uses the same). Every wait
 * has a deadline; exit 0 on success, 1 with a message otherwise.
 */
#include "verbs_client.h"

#define PORT 18515
#define RAW_FRAMES 16u
#define FRAME_LEN 300u    /* every frame: Ethernet 14 + IPv4 20 + UDP 8 + payload */
#define SLOT 2048u        /* receive buffer of one frame */
#define UDP_DST 5678u

static const uint8_t dst_mac[6] = { 0x01, 0x50, 0x56, 0x19, 0x20, 0xa7 };
static const uint8_t src_mac[6] = { 0x02, 0x52, 0x41, 0x57, 0x00, 0x01 };

/* Frame @p i: headers of the test flow, payload pattern(i). */
static void
frame(uint8_t *f, unsigned int i)
{
	static const uint8_t ip_udp[20 + 8] = {
		0x45, 0, (FRAME_LEN - 14) >> 8, (FRAME_LEN - 14) & 0xff, 0, 0, 0x40, 0, 64, 17, 0, 0,
		198, 18, 0, 77, 198, 19, 0, 78,   /* 198.18.0.0/15 */
		0x04, 0xd2, UDP_DST >> 8, UDP_DST & 0xff,
		(FRAME_LEN - 34) >> 8, (FRAME_LEN - 34) & 0xff, 0, 0,
	};

	memcpy(f, dst_mac, 6);
	memcpy(f + 6, src_mac, 6);
	f[12] = 0x08;
	f[13] = 0x00;
	memcpy(f + 14, ip_udp, sizeof(ip_udp));
	fill(f + 42, FRAME_LEN - 42, i);
}

/* A RAW_PACKET QP in RTS on port 1, sending and receiving through @p d's CQ. */
static struct ibv_qp *
raw_qp(struct dev *d)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = d->cq, .recv_cq = d->cq, .qp_type = IBV_QPT_RAW_PACKET,
		.cap = { .max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(d->pd, &ia);
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };

	if (qp == NULL)
		fail("ibv_create_qp(RAW_PACKET): %s", strerror(errno));
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PORT))
		fail("INIT: %s", strerror(errno));
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		fail("RTR: %s", strerror(errno));
	a.qp_state = IBV_QPS_RTS;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		fail("RTS: %s", strerror(errno));
	return qp;
}

/* A flow of @p priority to @p qp: the test's MAC, and with @p udp its UDP port too. */
static struct ibv_flow *
flow(struct ibv_qp *qp, uint16_t priority, int udp)
{
	struct {
		struct ibv_flow_attr attr;
		struct ibv_flow_spec_eth eth;
		struct ibv_flow_spec_ipv4 ip;
		struct ibv_flow_spec_tcp_udp udp;
	} f = {
		.attr = { .type = IBV_FLOW_ATTR_NORMAL, .size = sizeof(f),
			  .priority = priority, .num_of_specs = udp ? 3 : 1, .port = 1 },
		.eth = { .type = IBV_FLOW_SPEC_ETH, .size = sizeof(f.eth) },
		.ip = { .type = IBV_FLOW_SPEC_IPV4, .size = sizeof(f.ip) },
		.udp = { .type = IBV_FLOW_SPEC_UDP, .size = sizeof(f.udp),
			 .val.dst_port = htons(UDP_DST), .mask.dst_port = 0xffff },
	};
	struct ibv_flow *fl;

	memcpy(f.eth.val.dst_mac, dst_mac, 6);
	memset(f.eth.mask.dst_mac, 0xff, 6);
	fl = ibv_create_flow(qp, &f.attr);
	if (fl == NULL)
		fail("ibv_create_flow: %s", strerror(errno));
	return fl;
}

static int
server(void)
{
	struct dev d;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	struct ibv_flow *fl[2];
	uint8_t *buf = aligned_alloc(4096, RAW_FRAMES * SLOT), want[FRAME_LEN];
	uint32_t n;
	int fd;

	vc_name = "raw server";
	dev_open(&d);
	if (buf == NULL)
		fail("no memory");
	memset(buf, 0, RAW_FRAMES * SLOT);
	mr = ibv_reg_mr(d.pd, buf, RAW_FRAMES * SLOT, IBV_ACCESS_LOCAL_WRITE);
	if (mr == NULL)
		fail("ibv_reg_mr: %s", strerror(errno));
	qp = raw_qp(&d);
	for (unsigned int i = 0; i < RAW_FRAMES; i++) {
		struct ibv_sge sge = { (uintptr_t)buf + i * SLOT, SLOT, mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 }, *bad;

		if (ibv_post_recv(qp, &wr, &bad))
			fail("ibv_post_recv: %s", strerror(errno));
	}
	fl[0] = flow(qp, 0, 1);
	fl[1] = flow(qp, 1, 0);
	fd = vc_tcp_accept(PORT); /* ready: the client may send */
	vc_xfer(fd, &n, sizeof(n), 0);
	if (n != RAW_FRAMES)
		fail("the client sent %u frames", n);
	for (unsigned int i = 0; i < RAW_FRAMES; i++) {
		struct ibv_wc wc = wait_wc(d.cq);

		if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV)
			fail("frame %u: status %s, opcode %d", i, ibv_wc_status_str(wc.status),
			     wc.opcode);
		if (wc.wr_id != i || wc.byte_len != FRAME_LEN)
			fail("frame %u: wr_id %llu, byte_len %u (expected %u: one copy each, in order)",
			     i, (unsigned long long)wc.wr_id, wc.byte_len, FRAME_LEN);
		frame(want, i);
		if (memcmp(buf + i * SLOT, want, FRAME_LEN) != 0)
			fail("frame %u differs from what the client sent", i);
	}
	usleep(200000); /* a copy too many (the priority 1 rule) would show now */
	if (ibv_poll_cq(d.cq, 1, &(struct ibv_wc){ 0 }) != 0)
		fail("a completion beyond the %u frames", RAW_FRAMES);
	vc_xfer(fd, &n, sizeof(n), 1);
	if (ibv_destroy_flow(fl[0]) || ibv_destroy_flow(fl[1]) || ibv_destroy_qp(qp))
		fail("destroy: %s", strerror(errno));
	printf("raw server: OK %u frames\n", RAW_FRAMES);
	return 0;
}

static int
client(const char *ip)
{
	struct dev d;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	uint8_t *buf = aligned_alloc(4096, RAW_FRAMES * SLOT);
	uint32_t n = RAW_FRAMES;
	int fd;

	vc_name = "raw client";
	dev_open(&d);
	if (buf == NULL)
		fail("no memory");
	mr = ibv_reg_mr(d.pd, buf, RAW_FRAMES * SLOT, 0);
	if (mr == NULL)
		fail("ibv_reg_mr: %s", strerror(errno));
	qp = raw_qp(&d);
	fd = vc_tcp_connect(ip, PORT);
	for (unsigned int i = 0; i < RAW_FRAMES; i++) {
		struct ibv_sge sge = { (uintptr_t)buf + i * SLOT, FRAME_LEN, mr->lkey };
		struct ibv_send_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_SEND };
		struct ibv_wc wc;

		frame(buf + i * SLOT, i);
		post(qp, &wr);
		wc = wait_wc(d.cq);
		if (wc.status != IBV_WC_SUCCESS || wc.wr_id != i || wc.opcode != IBV_WC_SEND)
			fail("send %u: %s", i, ibv_wc_status_str(wc.status));
		usleep(1000);
	}
	vc_xfer(fd, &n, sizeof(n), 1);
	vc_xfer(fd, &n, sizeof(n), 0); /* the server has them all */
	if (ibv_destroy_qp(qp))
		fail("destroy: %s", strerror(errno));
	printf("raw client: OK\n");
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "server") == 0)
		return server();
	if (argc == 3 && strcmp(argv[1], "client") == 0)
		return client(argv[2]);
	fprintf(stderr, "usage: raw_client server | raw_client client IP\n");
	return 2;
}
