/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target for lib/cm: the MAD codec and the agent's state machine.
 * Invariants besides "no crash, no out-of-bounds access" (ASan/UBSan):
 *  - a MAD cm_mad_parse() accepts rebuilds with cm_mad_build() into a MAD
 *    that parses to the same bytes again;
 *  - the input, cut into 256-byte MADs, is fed to an agent whose consumer
 *    answers everything (REP, RTU, DREP, SIDR_REP, destroy), with time
 *    moving on between MADs: every MAD the agent sends parses, and its
 *    slots never exceed the configured number.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm.h"

#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "invariant failed: %s\n", #cond); abort(); } } while (0)

#define SLOTS 8u

static struct cm_agent *agent;
static uint64_t now;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
on_send(void *ctx, const struct cm_path *to, const uint8_t mad[CM_MAD_SIZE])
{
	struct cm_msg m;

	(void)ctx;
	(void)to;
	CHECK(cm_mad_parse(mad, CM_MAD_SIZE, &m) == CM_MAD_OK);
	return 0;
}

static void
on_event(void *ctx, uint64_t cookie, const struct cm_event *ev)
{
	(void)ctx;
	(void)cookie;
	CHECK(cm_event_name(ev->type) != NULL);
	switch (ev->type) {
	case CM_EV_REQ_RECEIVED: {
		struct cm_rep rep = {.local_qpn = 0x42, .rnr_retry_count = 7};

		if (ev->msg->req.local_qpn & 1)
			cm_send_rep(agent, ev->conn, &rep, now);
		else
			cm_send_mra(agent, ev->conn, 3, ev->msg->req.local_qpn & 2 ? CM_MRA_DELAY : 0, NULL, 0, now);
		break;
	}
	case CM_EV_REP_RECEIVED:
		cm_send_rtu(agent, ev->conn, NULL, 0, now);
		break;
	case CM_EV_DREQ_RECEIVED:
		cm_send_drep(agent, ev->conn, NULL, 0, now);
		break;
	case CM_EV_SIDR_REQ_RECEIVED: {
		struct cm_sidr_rep rep = {.qpn = 0x43, .qkey = 0x11111111};

		cm_send_sidr_rep(agent, ev->conn, &rep, now);
		cm_conn_destroy(agent, ev->conn, now);
		break;
	}
	case CM_EV_RTU_RECEIVED:
		cm_send_dreq(agent, ev->conn, NULL, 0, now);
		break;
	default:
		cm_conn_destroy(agent, ev->conn, now);
		break;
	}
}

static void
codec(const uint8_t *data, size_t size)
{
	uint8_t out[CM_MAD_SIZE], again[CM_MAD_SIZE];
	struct cm_msg m, m2;
	int rc = cm_mad_parse(data, size, &m);

	CHECK(rc >= CM_MAD_OK && rc < CM_MALFORMED_COUNT);
	CHECK(cm_malformed_name(rc) != NULL);
	if (rc != CM_MAD_OK)
		return;
	CHECK(cm_mad_build(&m, out) == 0);
	CHECK(cm_mad_parse(out, sizeof(out), &m2) == CM_MAD_OK);
	CHECK(cm_mad_build(&m2, again) == 0);
	CHECK(memcmp(out, again, CM_MAD_SIZE) == 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cm_agent_config cfg = {.max_conns = SLOTS, .max_listeners = 4, .ca_guid = 0x1122334455667788,
				      .seed = 1};
	struct cm_ops ops = {.send = on_send, .event = on_event};
	struct cm_path from = {.pkey = 0xffff, .remote_qpn = 1};
	struct cm_req_param p = {0};
	cm_conn_t c;

	codec(data, size);

	agent = cm_agent_create(&cfg, &ops);
	CHECK(agent != NULL);
	now = 1000;
	/* every IP-based TCP service, and one active connection to talk to */
	CHECK(cm_listen(agent, cm_ip_service_id(CM_PS_TCP, 0), CM_IP_SERVICE_ID_MASK, 1) == 0);
	p.req.service_id = cm_ip_service_id(CM_PS_TCP, 1);
	p.req.local_qpn = 0x99;
	p.req.path_mtu = 3;
	p.req.max_cm_retries = 2;
	CHECK(cm_send_req(agent, 2, &p, now, &c) == 0);
	for (size_t off = 0; off < size; off += CM_MAD_SIZE) {
		size_t len = size - off < CM_MAD_SIZE ? size - off : CM_MAD_SIZE;

		cm_agent_rx(agent, &from, data + off, len, now);
		CHECK(cm_agent_conns_in_use(agent) <= SLOTS);
		now += (uint64_t)data[off] << 16;
		while (cm_agent_expire(agent, now) == CM_EXPIRE_BATCH)
			;
	}
	now += 1000000000;
	while (cm_agent_expire(agent, now) == CM_EXPIRE_BATCH)
		;
	cm_agent_destroy(agent);
	agent = NULL;
	return 0;
}
