/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/cm internals: the agent, its connection slots, lookup tables and
 * timer heap. Prototypes grouped by defining file.
 */
#ifndef CM_INTERNAL_H
#define CM_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "cm.h"

#define CM_NIL UINT32_MAX /* no slot / end of a chain */

/* Which lookup tables a connection is in. */
enum {
	CM_IN_LOCAL = 1u << 0,  /* local comm ID table */
	CM_IN_REMOTE = 1u << 1, /* (remote comm ID, remote CA GUID) table */
	CM_IN_QPN = 1u << 2,    /* (remote QPN, remote CA GUID) table: stale detection */
};

/* One connection slot. `msg` is the last message this side sent that may
 * have to go again: retransmitted while waiting (REQ, REP, DREQ,
 * SIDR_REQ), or resent in answer to a duplicate (MRA, REP, RTU, DREP). */
struct cm_conn {
	uint32_t gen;            /* handle generation, bumped on free */
	uint32_t heap_pos;       /* index in the timer heap or CM_NIL */
	uint32_t next_local;     /* hash chains */
	uint32_t next_remote;
	uint32_t next_qpn;
	uint32_t next_free;
	uint8_t in_use;
	uint8_t orphan;          /* destroyed by the consumer, held for TimeWait */
	uint8_t active;
	uint8_t sidr;            /* a SIDR exchange, not a connection */
	uint8_t tables;          /* CM_IN_* */
	uint8_t state;           /* enum cm_state */
	uint8_t retries_left;    /* retransmissions left for msg */
	uint8_t max_cm_retries;
	uint8_t service_timeout; /* of our MRA */
	uint8_t packet_life_time;
	uint8_t msg_valid;       /* msg holds a message */
	uint64_t cookie;
	uint64_t listen_sid;
	uint32_t local_id;
	uint32_t remote_id;
	uint64_t remote_ca_guid; /* for SIDR: a fold of the peer's GID */
	uint32_t local_qpn;
	uint32_t remote_qpn;
	uint64_t service_id;
	uint64_t tid;            /* TID of REQ/REP/RTU/MRA/REJ, then of the DREQ received */
	uint64_t interval_us;    /* retransmission interval (REQ/REP/DREQ/SIDR_REQ) */
	uint64_t retry_us;       /* interval of the wait now running (MRA extends it) */
	uint64_t local_ca_guid;  /* the CA GUID our REQ/REP carried */
	uint64_t peer_wait_us;   /* passive: how long the active side keeps retrying */
	uint64_t deadline;       /* timer expiry (valid when heap_pos != CM_NIL) */
	struct cm_path path;     /* where this connection's messages go */
	uint8_t msg[CM_MAD_SIZE];
};

struct cm_listener {
	uint64_t sid;
	uint64_t mask;
	uint64_t cookie;
	uint8_t used;
};

struct cm_agent {
	struct cm_agent_config cfg;
	struct cm_ops ops;
	struct cm_conn *conns;     /* cfg.max_conns slots */
	uint32_t free_head;
	uint32_t in_use;
	uint32_t hash_mask;        /* buckets - 1 */
	uint32_t *local_tbl;       /* bucket heads */
	uint32_t *remote_tbl;
	uint32_t *qpn_tbl;
	uint32_t *heap;            /* slot indexes ordered by deadline */
	uint32_t heap_len;
	struct cm_listener *listeners;
	uint64_t rng;              /* splitmix64 state */
	uint64_t hash_key;
	uint32_t tid_hi;           /* high half of our TIDs */
	uint64_t ctr[CM_CTR_COUNT];
};

/* cm_conn.c: slots, handles, tables, timers, random numbers. */
uint64_t cm_rand64(struct cm_agent *a);
struct cm_conn *cm_conn_alloc(struct cm_agent *a, uint64_t cookie);
void cm_conn_free(struct cm_agent *a, struct cm_conn *c);
cm_conn_t cm_conn_handle(const struct cm_agent *a, const struct cm_conn *c);
struct cm_conn *cm_conn_get(const struct cm_agent *a, cm_conn_t h);
uint32_t cm_conn_index(const struct cm_agent *a, const struct cm_conn *c);
struct cm_conn *cm_find_local(const struct cm_agent *a, uint32_t local_id);
struct cm_conn *cm_find_remote(const struct cm_agent *a, uint32_t remote_id, uint64_t guid, bool sidr);
struct cm_conn *cm_find_qpn(const struct cm_agent *a, uint32_t remote_qpn, uint64_t guid,
			    const struct cm_conn *except);
void cm_insert_remote(struct cm_agent *a, struct cm_conn *c);
void cm_remove_remote(struct cm_agent *a, struct cm_conn *c);
/* Take c out of the QPN table only (TimeWait: its QPN may connect again). */
void cm_remove_qpn(struct cm_agent *a, struct cm_conn *c);
void cm_timer_arm(struct cm_agent *a, struct cm_conn *c, uint64_t deadline);
void cm_timer_cancel(struct cm_agent *a, struct cm_conn *c);
/* The conn whose timer is earliest and due at now, or NULL (it stays armed). */
struct cm_conn *cm_timer_due(struct cm_agent *a, uint64_t now);
int cm_tables_init(struct cm_agent *a);
void cm_tables_fini(struct cm_agent *a);
uint64_t cm_gid_fold(const uint8_t gid[16]);

#endif /* CM_INTERNAL_H */
