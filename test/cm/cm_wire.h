/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test/cm: two lib/cm agents back to back through an in-memory wire with a
 * fake clock, programmable loss, duplication and delay (reordering), and
 * consumers whose policies (answer a REQ with a REP, a REP with an RTU, a
 * DREQ with a DREP...) the tests switch on and off.
 */
#ifndef TEST_CM_WIRE_H
#define TEST_CM_WIRE_H

#include <stdbool.h>
#include <stdint.h>

#include "cm.h"

#define WIRE_QUEUE 16384
#define WIRE_LOG 16384
#define SIDE_EVENTS 4096
#define SIDE_CONNS 64
#define WIRE_RULES 16
#define WIRE_LATENCY_US 10

enum wire_action { WIRE_PASS, WIRE_DROP, WIRE_DUP, WIRE_DELAY };

/* Applies @action to the packets from side @from (-1: either) of attribute
 * @attr (0: any), after letting @skip of them pass, @count times
 * (-1: forever); WIRE_DELAY holds a packet @delay_us longer. */
struct wire_rule {
	int from;
	uint16_t attr;
	int skip;
	int count;
	enum wire_action action;
	uint64_t delay_us;
	unsigned int percent; /* if non-zero: the action hits this share of matches (seeded) */
};

struct ev_rec {
	enum cm_event_type type;
	cm_conn_t conn;
	uint64_t cookie;
	uint64_t at;
	bool has_msg;
	struct cm_msg msg;
};

struct wire;

struct side {
	struct wire *w;
	int idx;
	struct cm_agent *a;
	uint8_t gid[16];
	uint64_t guid;
	struct ev_rec ev[SIDE_EVENTS];
	unsigned int nev;
	/* consumer policies */
	bool auto_rep;         /* REQ_RECEIVED -> cm_send_rep */
	bool auto_rtu;         /* REP_RECEIVED -> cm_send_rtu */
	bool auto_drep;        /* DREQ_RECEIVED -> cm_send_drep */
	bool auto_sidr_rep;    /* SIDR_REQ_RECEIVED -> cm_send_sidr_rep */
	bool auto_destroy;     /* destroy on REJ / timeouts / TIMEWAIT_EXIT / PEER_TIMEOUT */
	int mra_on_req;        /* >= 0: answer a REQ with an MRA of this service timeout */
	unsigned int mra_flags;
	uint32_t next_qpn;     /* QPN for the REPs we send */
	const char *rep_pd;    /* private data of our REPs */
	cm_conn_t last_req_conn; /* the newest passive connection */
};

struct wire {
	struct side s[2];
	uint64_t now;
	struct {
		int to;
		uint64_t at;
		uint64_t seq;
		uint8_t mad[CM_MAD_SIZE];
	} q[WIRE_QUEUE];
	unsigned int nq;
	uint64_t seq;
	struct wire_rule rules[WIRE_RULES];
	unsigned int nrules;
	uint64_t rng;
	struct {
		int from;
		uint64_t at;
		bool dropped;
		uint8_t mad[CM_MAD_SIZE];
	} log[WIRE_LOG];
	unsigned int nlog;
};

/* Make the wire and its two agents (max_conns per agent; 0: 64). */
struct wire *wire_new(uint32_t max_conns);
void wire_free(struct wire *w);
void wire_rule(struct wire *w, struct wire_rule r);
/* Run until no packet is in flight and no timer is due before @until (absolute us). */
void wire_run(struct wire *w, uint64_t until);
/* Run for @us microseconds. */
void wire_run_for(struct wire *w, uint64_t us);

/* The default REQ parameters of side @from towards the other side. */
struct cm_req_param wire_req_param(struct wire *w, int from, uint64_t sid, uint32_t qpn);
/* Side @from sends a REQ; returns its connection. */
cm_conn_t wire_connect(struct wire *w, int from, uint64_t sid, uint32_t qpn);
/* The path from side @from to the other (as the daemon would fill it). */
struct cm_path wire_path(struct wire *w, int from);

/* Events of @type seen by side @s; the @n-th one (0-based) or NULL. */
unsigned int side_count(const struct side *s, enum cm_event_type type);
const struct ev_rec *side_event(const struct side *s, enum cm_event_type type, unsigned int n);
enum cm_state side_state(const struct side *s, cm_conn_t conn);
uint64_t side_ctr(const struct side *s, enum cm_ctr c);
/* MADs of attribute @attr sent by side @from (dropped ones included or not). */
unsigned int wire_sent(const struct wire *w, int from, uint16_t attr, bool with_dropped);
/* The @n-th MAD of @attr sent by @from, parsed. */
void wire_sent_msg(const struct wire *w, int from, uint16_t attr, unsigned int n, struct cm_msg *out);

#define SID_A UINT64_C(0x00000000010648af) /* rdma_cm TCP port 0x48af */

#endif
