/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/cm against Linux's own messages: an agent plays one side of the first
 * connection of rc_send_rdmacm.pcap (the other side's MADs come from the
 * capture, with our random comm ID patched in where they name it), and
 * every MAD it sends equals the capture's byte for byte, but for the
 * fields that are ours to choose (our comm ID, the TIDs we originate).
 */
#include <criterion/criterion.h>
#include <string.h>

#include "cm.h"
#include "cm_golden.h"

static uint8_t sent[16][CM_MAD_SIZE];
static unsigned int nsent;
static struct cm_event last_ev;
static struct cm_msg last_msg;
static unsigned int nev;

static int
rec_send(void *ctx, const struct cm_path *to, const uint8_t mad[CM_MAD_SIZE])
{
	(void)ctx;
	(void)to;
	cr_assert_lt(nsent, 16);
	memcpy(sent[nsent++], mad, CM_MAD_SIZE);
	return 0;
}

static void
rec_event(void *ctx, uint64_t cookie, const struct cm_event *ev)
{
	(void)ctx;
	(void)cookie;
	last_ev = *ev;
	if (ev->msg)
		last_msg = *ev->msg;
	nev++;
}

static struct cm_agent *
host(uint64_t guid)
{
	struct cm_agent_config cfg = {.max_conns = 8, .ca_guid = guid, .seed = 11};
	struct cm_ops ops = {.send = rec_send, .event = rec_event};

	nsent = nev = 0;
	return cm_agent_create(&cfg, &ops);
}

static void
put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* Equal except the byte ranges [a, b) listed (pairs, 0-terminated). */
static void
same_but(const uint8_t *ours, const uint8_t *theirs, const char *what, const size_t *skip)
{
	for (size_t i = 0; i < CM_MAD_SIZE; i++) {
		bool skipped = false;

		for (const size_t *s = skip; s[0] || s[1]; s += 2)
			skipped |= i >= s[0] && i < s[1];
		if (!skipped)
			cr_assert_eq(ours[i], theirs[i], "%s byte %zu: ours %02x, Linux's %02x", what, i, ours[i],
				     theirs[i]);
	}
}

#define TID 8, 16
#define LOCAL_ID 24, 28
#define REMOTE_ID 28, 32

Test(cm_replay, active_side_against_linuxs_passive_side)
{
	static struct golden_mad g[MAX_MADS];
	size_t n = load_golden(g, MAX_MADS);
	struct cm_agent *a = host(UINT64_C(0x505400fffec61202));
	struct cm_req_param p = {.packet_life_time = 16};
	struct cm_path from = {.pkey = 0xffff, .remote_qpn = 1};
	struct cm_msg req;
	struct cm_conn_info info;
	uint8_t mad[CM_MAD_SIZE];
	cm_conn_t c;

	cr_assert_eq(cm_mad_parse(frame(g, n, 1)->mad, CM_MAD_SIZE, &req), 0);
	p.req = req.req;
	cr_assert_eq(cm_send_req(a, 1, &p, 0, &c), 0);
	cr_assert_eq(cm_conn_query(a, c, &info), 0);
	same_but(sent[0], frame(g, n, 1)->mad, "REQ", (size_t[]){TID, LOCAL_ID, 0, 0});

	/* Linux's REP, naming our comm ID and TID */
	memcpy(mad, frame(g, n, 2)->mad, CM_MAD_SIZE);
	memcpy(mad + 8, sent[0] + 8, 8);
	put32(mad + 28, info.local_comm_id);
	cr_assert_eq(cm_agent_rx(a, &from, mad, CM_MAD_SIZE, 1000), 0);
	cr_assert_eq(last_ev.type, CM_EV_REP_RECEIVED);
	cr_assert_eq(cm_send_rtu(a, c, NULL, 0, 1000), 0);
	same_but(sent[1], frame(g, n, 3)->mad, "RTU", (size_t[]){TID, LOCAL_ID, 0, 0});

	/* Linux's DREQ (frame 70), answered with our DREP (frame 71) */
	memcpy(mad, frame(g, n, 70)->mad, CM_MAD_SIZE);
	put32(mad + 28, info.local_comm_id);
	cr_assert_eq(cm_agent_rx(a, &from, mad, CM_MAD_SIZE, 2000), 0);
	cr_assert_eq(last_ev.type, CM_EV_DREQ_RECEIVED);
	cr_assert_eq(cm_send_drep(a, c, NULL, 0, 2000), 0);
	same_but(sent[2], frame(g, n, 71)->mad, "DREP", (size_t[]){LOCAL_ID, 0, 0});
	cm_agent_destroy(a);
}

Test(cm_replay, passive_side_against_linuxs_active_side)
{
	static struct golden_mad g[MAX_MADS];
	size_t n = load_golden(g, MAX_MADS);
	struct cm_agent *a = host(UINT64_C(0x505400fffec61201));
	struct cm_path from = {.pkey = 0xffff, .remote_qpn = 1};
	struct cm_msg rep;
	struct cm_conn_info info;
	uint8_t mad[CM_MAD_SIZE];
	cm_conn_t c;

	cr_assert_eq(cm_listen(a, cm_ip_service_id(CM_PS_TCP, 0x48af), 0, 7), 0);
	cr_assert_eq(cm_agent_rx(a, &from, frame(g, n, 1)->mad, CM_MAD_SIZE, 0), 0);
	cr_assert_eq(last_ev.type, CM_EV_REQ_RECEIVED);
	cr_assert_eq(last_ev.cookie, 7);
	c = last_ev.conn;
	cr_assert_eq(cm_conn_query(a, c, &info), 0);
	cr_assert_eq(info.remote_comm_id, 0xcafc95f0);
	cr_assert_eq(info.remote_qpn, 0x18);

	/* accept with what Linux answered: our REP is its REP but for our comm ID */
	cr_assert_eq(cm_mad_parse(frame(g, n, 2)->mad, CM_MAD_SIZE, &rep), 0);
	cr_assert_eq(cm_send_rep(a, c, &rep.rep, 0), 0);
	same_but(sent[0], frame(g, n, 2)->mad, "REP", (size_t[]){LOCAL_ID, 0, 0});

	/* Linux's RTU naming our comm ID: established */
	memcpy(mad, frame(g, n, 3)->mad, CM_MAD_SIZE);
	put32(mad + 28, info.local_comm_id);
	cr_assert_eq(cm_agent_rx(a, &from, mad, CM_MAD_SIZE, 1000), 0);
	cr_assert_eq(last_ev.type, CM_EV_RTU_RECEIVED);

	/* our DREQ is frame 70 but for our comm ID and TID */
	cr_assert_eq(cm_send_dreq(a, c, NULL, 0, 2000), 0);
	same_but(sent[1], frame(g, n, 70)->mad, "DREQ", (size_t[]){TID, LOCAL_ID, 0, 0});
	/* Linux's DREP (frame 71) naming us, echoing our TID */
	memcpy(mad, frame(g, n, 71)->mad, CM_MAD_SIZE);
	memcpy(mad + 8, sent[1] + 8, 8);
	put32(mad + 28, info.local_comm_id);
	cr_assert_eq(cm_agent_rx(a, &from, mad, CM_MAD_SIZE, 3000), 0);
	cr_assert_eq(last_ev.type, CM_EV_DREP_RECEIVED);
	cr_assert_eq(cm_conn_query(a, c, &info), 0);
	cr_assert_eq(info.state, CM_STATE_TIMEWAIT);
	cm_agent_destroy(a);
}
