/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rsockets' wire protocol, the pure half (drivers/rdmacm-shim/rsocket_wire.c),
 * with no daemon and no verbs:
 *  - the conn data of REQ/REP byte for byte as librdmacm lays it out
 *    (version 1, flags, big-endian credits and SGEs, 40 bytes);
 *  - a peer's conn data refused for each reason, and counted;
 *  - the immediate's op and argument;
 *  - the receive side's accounting: the two halves announced in turn,
 *    credits given at half the window, data read across the wrap, peek;
 *  - a hostile peer's messages (a reserved op, an unknown control message,
 *    more bytes than announced, more messages than credits, a credit limit
 *    beyond its window, an iomap index we never offered, a message without
 *    an immediate is the caller's) are refused, counted by reason, and
 *    change nothing;
 *  - datagram rsockets: the ds header byte for byte, malformed ones
 *    refused and counted.
 */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <endian.h>
#include <string.h>

#include "rsocket.h"

static uint64_t bad(enum rsk_bad why)
{
	return __atomic_load_n(&rsk_bad_count[why], __ATOMIC_RELAXED);
}

Test(wire, conn_data_layout)
{
	struct rsk_sge tsgl = { .addr = 0x1122334455667788ull, .key = 0xaabbccdd, .length = 2 };
	struct rsk_sge buf = { .addr = 0x0102030405060708ull, .key = 0x01020304, .length = 65536 };
	struct rsk_conn_data cd;
	const uint8_t want[40] = {
		1, RSK_CONN_FLAG_IOMAP, 0x01, 0x80, 0, 0, 0, 0,             /* credits 384 */
		0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0xaa, 0xbb, 0xcc, 0xdd, 0, 0, 0, 2,
		1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 0, 1, 0, 0,
	};
	struct rsk_peer peer;

	rsk_conn_data_build(&cd, 384, 0, &tsgl, &buf);
	cr_assert_eq(sizeof(cd), 40);
	cr_assert_arr_eq(&cd, want, sizeof(want));
	cr_assert_eq(rsk_conn_data_parse(&cd, sizeof(cd), &peer), RSK_OK);
	cr_assert_eq(peer.credits, 384);
	cr_assert_eq(peer.target_sgl.addr, tsgl.addr);
	cr_assert_eq(peer.target_sgl.key, tsgl.key);
	cr_assert_eq(peer.target_sgl.length, 2);
	cr_assert_eq(peer.data_buf.addr, buf.addr);
	cr_assert_eq(peer.data_buf.length, 65536);
	cr_assert_not(peer.swap);
	/* a big-endian peer: the SGEs it writes into our target SGL are byte-swapped */
	cd.flags |= RSK_CONN_FLAG_NET;
	cr_assert_eq(rsk_conn_data_parse(&cd, sizeof(cd), &peer), RSK_OK);
	cr_assert(peer.swap);
}

Test(wire, conn_data_refused_and_counted)
{
	struct rsk_sge tsgl = { .addr = 4096, .key = 1, .length = 2 };
	struct rsk_sge buf = { .addr = 8192, .key = 2, .length = 4096 };
	struct rsk_conn_data good, cd;
	struct rsk_peer peer;
	uint64_t before;

	rsk_conn_data_build(&good, 16, 0, &tsgl, &buf);
	before = bad(RSK_BAD_conn_short);
	cr_assert_eq(rsk_conn_data_parse(&good, sizeof(good) - 1, &peer), RSK_BAD_conn_short);
	cr_assert_eq(rsk_conn_data_parse(NULL, 0, &peer), RSK_BAD_conn_short);
	cr_assert_eq(bad(RSK_BAD_conn_short), before + 2);

	cd = good;
	cd.version = 2;
	cr_assert_eq(rsk_conn_data_parse(&cd, sizeof(cd), &peer), RSK_BAD_conn_version);
	cd = good;
	cd.credits = 0;
	cr_assert_eq(rsk_conn_data_parse(&cd, sizeof(cd), &peer), RSK_BAD_conn_credits);
	cd = good;
	cd.target_sgl.length = 0;
	cr_assert_eq(rsk_conn_data_parse(&cd, sizeof(cd), &peer), RSK_BAD_conn_sgl);
	cd.target_sgl.length = htobe32(1u << 20);
	cr_assert_eq(rsk_conn_data_parse(&cd, sizeof(cd), &peer), RSK_BAD_conn_sgl);
	cd = good;
	cd.data_buf.length = 0;
	before = bad(RSK_BAD_conn_buf);
	cr_assert_eq(rsk_conn_data_parse(&cd, sizeof(cd), &peer), RSK_BAD_conn_buf);
	cr_assert_eq(bad(RSK_BAD_conn_buf), before + 1);
	cr_assert_str_eq(rsk_bad_name(RSK_BAD_conn_buf), "conn_buf");
}

Test(wire, immediate_and_scale)
{
	uint32_t m = rsk_msg(RSK_OP_SGL, 0x12345);

	cr_assert_eq(m, 0x80012345u);
	cr_assert_eq(rsk_msg_op(m), RSK_OP_SGL);
	cr_assert_eq(rsk_msg_arg(m), 0x12345u);
	cr_assert_eq(rsk_msg(RSK_OP_CTRL, RSK_CTRL_SHUTDOWN), 0xe0000002u);
	cr_assert_eq(rsk_msg(RSK_OP_DATA, 0xffffffffu), 0x1fffffffu);
	/* librdmacm's rs_value_to_scale(v, 8) / rs_scale_to_value */
	cr_assert_eq(rsk_scale(0), 0);
	cr_assert_eq(rsk_scale(128), 128);
	cr_assert_eq(rsk_scale(4096), 128 | 16);
	cr_assert_eq(rsk_unscale(128 | 16), 4096);
	cr_assert_eq(rsk_unscale(100), 100);
}

#define RQ 16
#define RBUF 8192

struct rx_fixture {
	struct rsk_rx rx;
	uint32_t queue[RQ + 1];
	uint8_t rbuf[RBUF];
};

static void rx_setup(struct rx_fixture *f)
{
	memset(f, 0, sizeof(*f));
	rsk_rx_init(&f->rx, RQ, RBUF, f->queue);
	for (int i = 0; i < RBUF; i++)
		f->rbuf[i] = (uint8_t)(i * 7);
}

/* The peer writes @p len bytes into what we announced: its DATA message. */
static struct rsk_rx_result data(struct rx_fixture *f, uint32_t len)
{
	return rsk_rx_msg(&f->rx, rsk_msg(RSK_OP_DATA, len), 0, RQ);
}

Test(wire, halves_announced_in_turn_and_credits_at_half_window)
{
	struct rx_fixture f;
	uint8_t out[RBUF];
	uint32_t off;

	rx_setup(&f);
	/* the first half went in the conn data; the second is announced at once */
	cr_assert(rsk_rx_want_credits(&f.rx));
	cr_assert(rsk_rx_take_half(&f.rx, &off));
	cr_assert_eq(off, RBUF / 2);
	cr_assert_eq(rsk_rx_credit_limit(&f.rx), RQ);
	cr_assert_not(rsk_rx_want_credits(&f.rx));
	cr_assert_not(rsk_rx_take_half(&f.rx, &off)); /* nothing free: credits only */

	/* the peer fills the first half in 4 messages; we read 3000 bytes */
	for (int i = 0; i < 4; i++)
		cr_assert_eq(data(&f, RBUF / 8).bad, RSK_OK);
	cr_assert(rsk_rx_has_data(&f.rx));
	cr_assert_eq(rsk_rx_read(&f.rx, f.rbuf, out, 3000, false), 3000);
	cr_assert_arr_eq(out, f.rbuf, 3000);
	cr_assert_not(rsk_rx_want_credits(&f.rx)); /* 3000 < half, 2 of 16 messages */
	cr_assert_eq(rsk_rx_read(&f.rx, f.rbuf, out, RBUF, false), RBUF / 2 - 3000);
	cr_assert_arr_eq(out, f.rbuf + 3000, RBUF / 2 - 3000);
	/* the first half is read: announced again */
	cr_assert(rsk_rx_want_credits(&f.rx));
	cr_assert(rsk_rx_take_half(&f.rx, &off));
	cr_assert_eq(off, 0);
	cr_assert_eq(rsk_rx_credit_limit(&f.rx), 4 + RQ);

	/* 8 small messages: half the window consumed gives credits without a half */
	for (int i = 0; i < 8; i++)
		cr_assert_eq(data(&f, 1).bad, RSK_OK);
	cr_assert_eq(rsk_rx_read(&f.rx, f.rbuf, out, RBUF, false), 8);
	cr_assert(rsk_rx_want_credits(&f.rx));
	cr_assert_not(rsk_rx_take_half(&f.rx, &off));
	cr_assert_eq(rsk_rx_credit_limit(&f.rx), 12 + RQ);
}

Test(wire, read_wraps_and_peek_keeps)
{
	struct rx_fixture f;
	uint8_t out[RBUF], want[600];
	uint32_t off;

	rx_setup(&f);
	/* second half announced, first half filled and read, announced again */
	cr_assert(rsk_rx_take_half(&f.rx, &off));
	cr_assert_eq(data(&f, RBUF / 2).bad, RSK_OK);
	cr_assert_eq(rsk_rx_read(&f.rx, f.rbuf, out, RBUF, false), RBUF / 2);
	cr_assert(rsk_rx_take_half(&f.rx, &off));
	cr_assert_eq(off, 0);
	/* 4000 more and read: the next message starts 96 bytes before the end */
	cr_assert_eq(data(&f, 4000).bad, RSK_OK);
	cr_assert_eq(rsk_rx_read(&f.rx, f.rbuf, out, RBUF, false), 4000);
	cr_assert_eq(f.rx.read_offset, 8096);
	cr_assert_eq(data(&f, 600).bad, RSK_OK);
	memcpy(want, f.rbuf + 8096, 96);
	memcpy(want + 96, f.rbuf, 504);
	memset(out, 0, sizeof(out));
	cr_assert_eq(rsk_rx_read(&f.rx, f.rbuf, out, 600, true), 600);
	cr_assert_arr_eq(out, want, 600);
	cr_assert(rsk_rx_has_data(&f.rx)); /* peek left it */
	memset(out, 0, sizeof(out));
	cr_assert_eq(rsk_rx_read(&f.rx, f.rbuf, out, 600, false), 600);
	cr_assert_arr_eq(out, want, 600);
	cr_assert_not(rsk_rx_has_data(&f.rx));
	cr_assert_eq(f.rx.read_offset, 504);
}

/* A hostile peer: each message refused, counted, and nothing changed. */
static void expect_refused(struct rx_fixture *f, uint32_t msg, uint16_t sseq_no,
			   enum rsk_bad why)
{
	struct rsk_rx before = f->rx;
	uint64_t n = bad(why);
	struct rsk_rx_result r = rsk_rx_msg(&f->rx, msg, sseq_no, RQ);

	cr_assert_eq(r.bad, why, "msg %#x: %s, not %s", msg, rsk_bad_name(r.bad), rsk_bad_name(why));
	cr_assert_eq(bad(why), n + 1);
	cr_assert_not(r.has_credits);
	cr_assert_not(r.ctrl);
	cr_assert_arr_eq(&f->rx, &before, sizeof(before));
}

Test(wire, hostile_messages_refused_and_counted)
{
	struct rx_fixture f;
	struct rsk_rx_result r;

	rx_setup(&f);
	expect_refused(&f, rsk_msg(RSK_OP_RSVD_DATA_MORE, 1), 0, RSK_BAD_msg_op);
	expect_refused(&f, rsk_msg(RSK_OP_WRITE, 1), 0, RSK_BAD_msg_op);
	expect_refused(&f, rsk_msg(RSK_OP_RSVD_DRA_MORE, 1), 0, RSK_BAD_msg_op);
	expect_refused(&f, rsk_msg(RSK_OP_RSVD, 1), 0, RSK_BAD_msg_op);
	expect_refused(&f, rsk_msg(RSK_OP_CTRL, 3), 0, RSK_BAD_msg_ctrl);
	expect_refused(&f, rsk_msg(RSK_OP_CTRL, 0x1fffffff), 0, RSK_BAD_msg_ctrl);
	expect_refused(&f, rsk_msg(RSK_OP_IOMAP_SGL, 0), 0, RSK_BAD_msg_iomap);
	/* more bytes than announced (only the first half so far) */
	expect_refused(&f, rsk_msg(RSK_OP_DATA, RBUF / 2 + 1), 0, RSK_BAD_msg_overrun);
	/* a credit limit beyond the window the peer itself announced */
	expect_refused(&f, rsk_msg(RSK_OP_SGL, 100 + RQ + 1), 100, RSK_BAD_msg_credits);
	expect_refused(&f, rsk_msg(RSK_OP_SGL, 99), 100, RSK_BAD_msg_credits);
	r = rsk_rx_msg(&f.rx, rsk_msg(RSK_OP_SGL, 100 + RQ), 100, RQ);
	cr_assert_eq(r.bad, RSK_OK);
	cr_assert(r.has_credits);
	cr_assert_eq(r.credits, 100 + RQ);
	/* wrapping sequence numbers */
	r = rsk_rx_msg(&f.rx, rsk_msg(RSK_OP_SGL, 5), 0xfffa, RQ);
	cr_assert_eq(r.bad, RSK_OK);
	/* more messages than receive credits: the queue holds RQ, the next is refused */
	for (int i = 0; i < RQ; i++)
		cr_assert_eq(data(&f, 1).bad, RSK_OK);
	expect_refused(&f, rsk_msg(RSK_OP_DATA, 1), 0, RSK_BAD_msg_queue);
	/* what was queued before is still read in full */
	cr_assert_eq(rsk_rx_read(&f.rx, f.rbuf, NULL, RBUF, false), RQ);
	/* the known control messages pass */
	r = rsk_rx_msg(&f.rx, rsk_msg(RSK_OP_CTRL, RSK_CTRL_KEEPALIVE), 0, RQ);
	cr_assert(r.ctrl);
	cr_assert_eq(r.ctrl_msg, RSK_CTRL_KEEPALIVE);
}

/* ---- datagram rsockets (rsocket_dgram_wire.c) ---- */

Test(dgram, ds_header_layout_both_families)
{
	struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_port = htons(7174),
				  .sin_addr.s_addr = htonl(0xc612000b) };
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons(9),
				   .sin6_flowinfo = htonl(0x12345) };
	const uint8_t want4[8] = { 4, 8, 0x1c, 0x06, 198, 18, 0, 11 };
	struct sockaddr_storage back;
	uint8_t out[RSK_DS_HDR6];
	uint32_t len = 0;

	cr_assert_eq(rsk_ds_hdr_build(out, (struct sockaddr *)&a4), RSK_DS_HDR4);
	cr_assert_arr_eq(out, want4, 8);
	cr_assert_eq(rsk_ds_hdr_parse(out, 8, &back, &len), RSK_OK);
	cr_assert_eq(len, 8u);
	cr_assert_eq(((struct sockaddr_in *)&back)->sin_port, a4.sin_port);
	cr_assert_eq(((struct sockaddr_in *)&back)->sin_addr.s_addr, a4.sin_addr.s_addr);

	inet_pton(AF_INET6, "2001:db8::11", &a6.sin6_addr);
	cr_assert_eq(rsk_ds_hdr_build(out, (struct sockaddr *)&a6), RSK_DS_HDR6);
	cr_assert_eq(out[0], 6);
	cr_assert_eq(out[1], 24);
	cr_assert_eq(out[2], 0);
	cr_assert_eq(out[3], 9);
	cr_assert_eq(out[7], 0x45); /* flowinfo, network order */
	cr_assert_eq(out[8], 0x20);
	cr_assert_eq(out[23], 0x11);
	cr_assert_eq(rsk_ds_hdr_parse(out, 30, &back, &len), RSK_OK);
	cr_assert_eq(len, 24u);
	cr_assert_eq(back.ss_family, AF_INET6);
	cr_assert_eq(memcmp(&((struct sockaddr_in6 *)&back)->sin6_addr, &a6.sin6_addr, 16), 0);
	cr_assert_eq(((struct sockaddr_in6 *)&back)->sin6_flowinfo, a6.sin6_flowinfo);
}

Test(dgram, bad_ds_headers_refused_and_counted)
{
	uint8_t m[32] = { 4, 8 };
	uint64_t before = bad(RSK_BAD_ds_hdr);
	uint32_t len = 99;

	cr_assert_eq(rsk_ds_hdr_parse(m, 7, NULL, &len), RSK_BAD_ds_hdr);   /* short */
	m[0] = 5;
	cr_assert_eq(rsk_ds_hdr_parse(m, 32, NULL, &len), RSK_BAD_ds_hdr);  /* version */
	m[0] = 4;
	m[1] = 24;
	cr_assert_eq(rsk_ds_hdr_parse(m, 32, NULL, &len), RSK_BAD_ds_hdr);  /* v4 with v6 length */
	m[0] = 6;
	cr_assert_eq(rsk_ds_hdr_parse(m, 20, NULL, &len), RSK_BAD_ds_hdr);  /* v6 cut short */
	cr_assert_eq(len, 99u);
	cr_assert_eq(bad(RSK_BAD_ds_hdr), before + 4);
}
