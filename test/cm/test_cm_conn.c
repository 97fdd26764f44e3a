/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/cm internals (cm_conn.c): the timer heap against a sorted model under
 * random arm/re-arm/cancel, the lookup tables under random insert/remove,
 * slot reuse and handle generations.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "cm_internal.h"
#include "splitmix64.h"

static int
nop_send(void *ctx, const struct cm_path *to, const uint8_t mad[CM_MAD_SIZE])
{
	(void)ctx;
	(void)to;
	(void)mad;
	return 0;
}

static void
nop_event(void *ctx, uint64_t cookie, const struct cm_event *ev)
{
	(void)ctx;
	(void)cookie;
	(void)ev;
}

static struct cm_agent *
agent(uint32_t slots)
{
	struct cm_agent_config cfg = {.max_conns = slots, .seed = 3};
	struct cm_ops ops = {.send = nop_send, .event = nop_event};
	struct cm_agent *a = cm_agent_create(&cfg, &ops);

	cr_assert_not_null(a);
	return a;
}

#define N 300u

Test(cm_conn, timer_heap_matches_a_model)
{
	struct cm_agent *a = agent(N);
	struct cm_conn *c[N];
	uint64_t model[N]; /* UINT64_MAX: not armed */
	uint64_t seed = 99, now = 0;

	for (uint32_t i = 0; i < N; i++) {
		c[i] = cm_conn_alloc(a, i);
		cr_assert_not_null(c[i]);
		model[i] = UINT64_MAX;
	}
	cr_assert_null(cm_conn_alloc(a, 0), "no slot past max_conns");
	for (int step = 0; step < 200000; step++) {
		uint32_t i = (uint32_t)(splitmix64_next(&seed) % N);
		unsigned int op = (unsigned int)(splitmix64_next(&seed) % 10);

		if (op < 5) {
			model[i] = now + splitmix64_next(&seed) % 1000;
			cm_timer_arm(a, c[i], model[i]);
		} else if (op < 7) {
			model[i] = UINT64_MAX;
			cm_timer_cancel(a, c[i]);
		} else {
			/* pop everything due, in deadline order */
			struct cm_conn *d;
			uint64_t last = 0, min = UINT64_MAX;

			now += splitmix64_next(&seed) % 300;
			while ((d = cm_timer_due(a, now)) != NULL) {
				uint32_t k = cm_conn_index(a, d);

				cr_assert_eq(model[k], d->deadline);
				cr_assert_leq(d->deadline, now);
				cr_assert_geq(d->deadline, last);
				last = d->deadline;
				cm_timer_cancel(a, d);
				model[k] = UINT64_MAX;
			}
			for (uint32_t k = 0; k < N; k++) {
				cr_assert(model[k] == UINT64_MAX || model[k] > now, "slot %u due but not popped", k);
				if (model[k] < min)
					min = model[k];
			}
			cr_assert_eq(cm_agent_next_deadline(a), min);
		}
	}
	cm_agent_destroy(a);
}

Test(cm_conn, tables_find_what_was_inserted_and_nothing_else)
{
	struct cm_agent *a = agent(N);
	struct cm_conn *c[N];
	uint64_t seed = 5;

	for (uint32_t i = 0; i < N; i++) {
		c[i] = cm_conn_alloc(a, i);
		c[i]->remote_id = (uint32_t)splitmix64_next(&seed);
		c[i]->remote_ca_guid = splitmix64_next(&seed) % 4; /* few GUIDs: keys differ by ID */
		c[i]->remote_qpn = i;
		cm_insert_remote(a, c[i]);
	}
	for (uint32_t i = 0; i < N; i++) {
		cr_assert_eq(cm_find_local(a, c[i]->local_id), c[i]);
		cr_assert_eq(cm_find_remote(a, c[i]->remote_id, c[i]->remote_ca_guid, false), c[i]);
		cr_assert_null(cm_find_remote(a, c[i]->remote_id, c[i]->remote_ca_guid, true));
		cr_assert_eq(cm_find_qpn(a, i, c[i]->remote_ca_guid, NULL), c[i]);
		cr_assert_null(cm_find_qpn(a, i, c[i]->remote_ca_guid, c[i]));
	}
	/* remove every other one, free every third */
	for (uint32_t i = 0; i < N; i += 2)
		cm_remove_remote(a, c[i]);
	for (uint32_t i = 0; i < N; i++) {
		struct cm_conn *r = cm_find_remote(a, c[i]->remote_id, c[i]->remote_ca_guid, false);

		cr_assert_eq(r, i % 2 ? c[i] : NULL, "conn %u", i);
		cr_assert_eq(cm_find_qpn(a, i, c[i]->remote_ca_guid, NULL), i % 2 ? c[i] : NULL);
	}
	for (uint32_t i = 0; i < N; i += 3) {
		uint32_t id = c[i]->local_id;
		cm_conn_t h = cm_conn_handle(a, c[i]);

		cr_assert_eq(cm_conn_get(a, h), c[i]);
		cm_conn_free(a, c[i]);
		cr_assert_null(cm_find_local(a, id));
		cr_assert_null(cm_conn_get(a, h), "a freed slot's handle is dead");
	}
	cr_assert_eq(cm_agent_conns_in_use(a), N - (N + 2) / 3);
	for (uint32_t i = 1; i < N; i++)
		if (i % 3)
			cr_assert_eq(cm_find_local(a, c[i]->local_id), c[i]);
	cm_agent_destroy(a);
}

Test(cm_conn, a_reused_slot_gets_a_new_handle_and_comm_id)
{
	struct cm_agent *a = agent(1);
	struct cm_conn *c = cm_conn_alloc(a, 1);
	cm_conn_t h1 = cm_conn_handle(a, c);
	uint32_t id1 = c->local_id;

	cm_conn_free(a, c);
	c = cm_conn_alloc(a, 2);
	cr_assert_not_null(c);
	cr_assert_neq(cm_conn_handle(a, c), h1);
	cr_assert_neq(c->local_id, id1);
	cr_assert_null(cm_conn_get(a, h1));
	cr_assert_eq(cm_conn_get(a, cm_conn_handle(a, c)), c);
	cr_assert_null(cm_conn_get(a, CM_CONN_INVALID));
	cm_agent_destroy(a);
}
