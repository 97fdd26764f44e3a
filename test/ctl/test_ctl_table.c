/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/ctl object tables (ctl_table.c): allocation order, reuse of freed
 * slots (FIFO: a freed QPN or key comes back as late as possible), placement
 * classes (QPN % lcores), generations that kill stale handles, exhaustion
 * and bad arguments. Behaviour only: the O(1) cost is measured by
 * bench/qp_hold (doc/benchmarks.md), not asserted here.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../splitmix64.h"
#include "ctl_internal.h"

struct obj {
	struct ctl_obj o;
	uint64_t payload;
};

static struct ctl *ctl;
static struct ctl_conn conn;

static struct ctl_table *table(void)
{
	return &ctl->tab[CTL_KIND_QP];
}

/* A table of @p cap objects in the QP slot of a bare struct ctl, owned by conn. */
static void make(uint32_t cap)
{
	ctl = calloc(1, sizeof(*ctl));
	cr_assert_not_null(ctl);
	memset(&conn, 0, sizeof(conn));
	conn.ctl = ctl;
	conn.used = true;
	conn.group = &conn;
	cr_assert_eq(ctl_table_init(table(), cap, sizeof(struct obj)), 0);
}

static void unmake(void)
{
	ctl_table_fini(table());
	free(ctl);
	ctl = NULL;
}

static struct obj *alloc(void)
{
	return ctl_table_alloc(table(), &conn, CTL_KIND_QP, 0);
}

static struct obj *alloc_class(uint32_t base, uint32_t modulus, uint32_t rem)
{
	return ctl_table_alloc_class(table(), &conn, CTL_KIND_QP, 0, base, modulus, rem);
}

static struct obj *at(uint32_t i)
{
	return ctl_table_at(table(), i);
}

Test(ctl_table, fresh_table_hands_out_slots_in_index_order_until_full)
{
	make(16);
	for (uint32_t i = 0; i < 16; i++) {
		struct obj *o = alloc();

		cr_assert_not_null(o);
		cr_assert_eq(o->o.index, i);
		cr_assert_eq(o->o.owner, &conn);
		cr_assert_eq(table()->nused, i + 1);
	}
	cr_assert_eq(conn.nobjs, 16);
	cr_assert_null(alloc(), "a full table refuses");
	cr_assert_eq(table()->nused, 16);
	unmake();
}

Test(ctl_table, freed_slots_come_back_last_in_the_order_they_were_freed)
{
	make(8);
	for (int i = 0; i < 4; i++)
		cr_assert_not_null(alloc());   /* 0..3 */
	ctl_table_free(table(), at(1));
	cr_assert_eq(at(1)->o.owner, NULL);
	cr_assert_eq(conn.nobjs, 3);
	/* the never-used slots first, then the freed one */
	for (uint32_t want = 4; want < 8; want++)
		cr_assert_eq(alloc()->o.index, want);
	cr_assert_eq(alloc()->o.index, 1);
	cr_assert_null(alloc());
	/* a full table: frees in the order 5, 2, 7 come back as 5, 2, 7 */
	ctl_table_free(table(), at(5));
	ctl_table_free(table(), at(2));
	ctl_table_free(table(), at(7));
	cr_assert_eq(table()->nused, 5);
	cr_assert_eq(alloc()->o.index, 5);
	ctl_table_free(table(), at(0));
	cr_assert_eq(alloc()->o.index, 2);
	cr_assert_eq(alloc()->o.index, 7);
	cr_assert_eq(alloc()->o.index, 0);
	cr_assert_null(alloc());
	unmake();
}

Test(ctl_table, allocation_zeroes_the_object_and_keeps_index_and_generation)
{
	make(2);
	struct obj *o = alloc();

	o->payload = 0xdeadbeef;
	o->o.refs = 3;
	o->o.user_handle = 77;
	ctl_table_free(table(), o);
	alloc(); /* slot 1 */
	o = ctl_table_alloc(table(), &conn, CTL_KIND_QP, 42);
	cr_assert_eq(o->o.index, 0);
	cr_assert_eq(o->payload, 0);
	cr_assert_eq(o->o.refs, 0);
	cr_assert_eq(o->o.user_handle, 42);
	cr_assert_eq(o->o.kind, CTL_KIND_QP);
	cr_assert_eq(o->o.gen, 2, "freed once: generation 2");
	unmake();
}

Test(ctl_table, stale_handles_never_name_the_next_occupant)
{
	make(1);
	struct obj *o = alloc();
	uint32_t h = ctl_obj_handle(&o->o), h2;

	cr_assert_eq(h & CTL_HANDLE_INDEX_MASK, 1, "index + 1: 0 is no handle");
	cr_assert_eq(ctl_lookup(&conn, CTL_KIND_QP, h), o);
	cr_assert_null(ctl_lookup(&conn, CTL_KIND_QP, 0));
	cr_assert_null(ctl_lookup(&conn, CTL_KIND_QP, 2), "index past the table");
	ctl_table_free(table(), o);
	cr_assert_null(ctl_lookup(&conn, CTL_KIND_QP, h), "freed");
	o = alloc();
	h2 = ctl_obj_handle(&o->o);
	cr_assert_neq(h2, h);
	cr_assert_null(ctl_lookup(&conn, CTL_KIND_QP, h), "same slot, old generation");
	cr_assert_eq(ctl_lookup(&conn, CTL_KIND_QP, h2), o);
	/* the generation wraps within its 12 bits and skips 0 */
	for (uint32_t i = 0; i < CTL_HANDLE_GEN_MASK + 5; i++) {
		ctl_table_free(table(), o);
		o = alloc();
		cr_assert_eq(o->o.index, 0);
		cr_assert_neq(o->o.gen, 0);
		cr_assert_leq(o->o.gen, CTL_HANDLE_GEN_MASK);
	}
	unmake();
}

Test(ctl_table, classes_give_slots_of_the_asked_residue_only)
{
	const uint32_t base = 5, mod = 3; /* QPN base 5, three lcores */
	uint32_t per[3] = { 0 };

	make(12);
	/* class 0: (i + 5) % 3 == 0 -> i = 1, 4, 7, 10, in that order */
	for (uint32_t k = 0; k < 4; k++)
		cr_assert_eq(alloc_class(base, mod, 0)->o.index, 1 + 3 * k);
	cr_assert_null(alloc_class(base, mod, 0), "class 0 exhausted");
	cr_assert_eq(table()->nused, 4, "a refused class takes nothing");
	/* the other classes are untouched */
	for (uint32_t r = 1; r < 3; r++) {
		struct obj *o;

		while ((o = alloc_class(base, mod, r)) != NULL) {
			cr_assert_eq((o->o.index + base) % mod, r);
			per[r]++;
		}
	}
	cr_assert_eq(per[1], 4);
	cr_assert_eq(per[2], 4);
	cr_assert_eq(table()->nused, 12);
	unmake();
}

Test(ctl_table, freed_slot_returns_to_its_class_fifo)
{
	make(12);
	while (alloc_class(5, 3, 0) != NULL || alloc_class(5, 3, 1) != NULL ||
	       alloc_class(5, 3, 2) != NULL)
		;
	cr_assert_eq(table()->nused, 12);
	ctl_table_free(table(), at(7));   /* class 0 */
	ctl_table_free(table(), at(2));   /* class 1 */
	ctl_table_free(table(), at(1));   /* class 0 */
	cr_assert_null(alloc_class(5, 3, 2));
	cr_assert_eq(alloc_class(5, 3, 0)->o.index, 7);
	cr_assert_eq(alloc_class(5, 3, 0)->o.index, 1);
	cr_assert_null(alloc_class(5, 3, 0));
	cr_assert_eq(alloc_class(5, 3, 1)->o.index, 2);
	unmake();
}

Test(ctl_table, a_new_partition_keeps_every_free_slot)
{
	make(10);
	for (int i = 0; i < 6; i++)
		alloc();                      /* 0..5 */
	ctl_table_free(table(), at(3));
	/* free: 3, 6, 7, 8, 9; split by i % 2 */
	cr_assert_eq(alloc_class(0, 2, 1)->o.index, 3);
	cr_assert_eq(alloc_class(0, 2, 1)->o.index, 7);
	cr_assert_eq(alloc_class(0, 2, 1)->o.index, 9);
	cr_assert_null(alloc_class(0, 2, 1));
	/* back to one class: the even ones are all still there */
	cr_assert_eq(alloc()->o.index, 6);
	cr_assert_eq(alloc()->o.index, 8);
	cr_assert_null(alloc());
	cr_assert_eq(table()->nused, 10);
	unmake();
}

Test(ctl_table, bad_arguments_are_refused)
{
	struct ctl_table t;

	cr_assert_eq(ctl_table_init(&t, 0, sizeof(struct obj)), -EINVAL);
	ctl_table_fini(&t);
	cr_assert_eq(ctl_table_init(&t, CTL_TABLE_MAX + 1, sizeof(struct obj)), -EINVAL);
	ctl_table_fini(&t);
	cr_assert_eq(ctl_table_init(&t, 4, sizeof(uint32_t)), -EINVAL, "smaller than its head");
	ctl_table_fini(&t);
	make(4);
	cr_assert_null(alloc_class(0, 0, 0), "modulus 0");
	cr_assert_null(alloc_class(0, 2, 2), "residue not below the modulus");
	cr_assert_eq(table()->nused, 0);
	cr_assert_eq(alloc()->o.index, 0);
	unmake();
}

/*
 * A large table through random free/alloc churn: every handed-out slot is
 * free before and distinct, nused and the owner's count track the truth, and
 * slots come back in exactly the order they were freed (a model queue).
 */
Test(ctl_table, churn_matches_a_fifo_model)
{
	const uint32_t cap = 1u << 16;
	uint32_t *live = malloc(cap * sizeof(*live)), nlive = 0;
	uint32_t *fifo = malloc(cap * sizeof(*fifo)), fh = 0, fn = 0;
	uint64_t rng = 7;

	cr_assert(live && fifo);
	make(cap);
	for (uint32_t i = 0; i < cap; i++)
		fifo[i] = i;
	fn = cap;
	for (uint32_t step = 0; step < 400000; step++) {
		bool do_alloc = nlive == 0 || (nlive < cap && (splitmix64_next(&rng) & 1));

		if (do_alloc) {
			struct obj *o = alloc();

			cr_assert_not_null(o);
			cr_assert_eq(o->o.index, fifo[fh], "step %u", step);
			fh = (fh + 1) % cap;
			fn--;
			live[nlive++] = o->o.index;
		} else {
			uint32_t k = (uint32_t)(splitmix64_next(&rng) % nlive);
			uint32_t idx = live[k];

			live[k] = live[--nlive];
			ctl_table_free(table(), at(idx));
			fifo[(fh + fn) % cap] = idx;
			fn++;
		}
		cr_assert_eq(table()->nused, nlive);
	}
	cr_assert_eq(conn.nobjs, nlive);
	free(live);
	free(fifo);
	unmake();
}
