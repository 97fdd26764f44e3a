/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Randomized comparison of the timer wheel against a reference model: a
 * sorted array of (expiry, handle). With fixed seeds, random arms, re-arms
 * (earlier and later), cancels and polls (random caps, random time steps from
 * 0 to 2^37 ticks, delays clustered at level boundaries and beyond the wheel's
 * reach) must produce exactly the reference's deliveries: the same timers, in
 * (expiry, handle) order, none before its expiry, and, when polled every tick
 * without hitting the cap, none more than one tick late.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "../splitmix64.h"
#include "timer_wheel.h"

#define CAPACITY 2048u
#define OUT_MAX 1024u

struct ref_entry {
	uint64_t expiry;
	uint32_t handle;
};

/* The reference: a sorted array, plus each handle's expiry (NEVER if disarmed). */
struct ref {
	uint32_t n;
	struct ref_entry e[CAPACITY];
	uint64_t expiry_of[CAPACITY];
};

static uint64_t rng_state;

static uint64_t
rng(void)
{
	return splitmix64_next(&rng_state);
}

static uint64_t
rng_below(uint64_t n)
{
	return rng() % n;
}

static bool
entry_before(struct ref_entry a, struct ref_entry b)
{
	return a.expiry < b.expiry || (a.expiry == b.expiry && a.handle < b.handle);
}

/* Index of the first entry not before @p key. */
static uint32_t
ref_lower_bound(const struct ref *r, struct ref_entry key)
{
	uint32_t lo = 0, hi = r->n;

	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;

		if (entry_before(r->e[mid], key))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void
ref_init(struct ref *r)
{
	r->n = 0;
	for (uint32_t h = 0; h < CAPACITY; h++)
		r->expiry_of[h] = TIMER_WHEEL_NEVER;
}

static bool
ref_cancel(struct ref *r, uint32_t h)
{
	if (r->expiry_of[h] == TIMER_WHEEL_NEVER)
		return false;
	uint32_t i = ref_lower_bound(r, (struct ref_entry){ r->expiry_of[h], h });
	cr_assert(i < r->n && r->e[i].handle == h);
	memmove(&r->e[i], &r->e[i + 1], (r->n - i - 1) * sizeof(r->e[0]));
	r->n--;
	r->expiry_of[h] = TIMER_WHEEL_NEVER;
	return true;
}

static void
ref_arm(struct ref *r, uint32_t h, uint64_t expiry)
{
	ref_cancel(r, h);
	struct ref_entry key = { expiry, h };
	uint32_t i = ref_lower_bound(r, key);
	memmove(&r->e[i + 1], &r->e[i], (r->n - i) * sizeof(r->e[0]));
	r->e[i] = key;
	r->n++;
	r->expiry_of[h] = expiry;
}

static uint32_t
ref_poll(struct ref *r, uint64_t now, struct ref_entry *out, uint32_t max)
{
	uint32_t n = 0;

	while (n < max && n < r->n && r->e[n].expiry <= now) {
		out[n] = r->e[n];
		r->expiry_of[r->e[n].handle] = TIMER_WHEEL_NEVER;
		n++;
	}
	memmove(&r->e[0], &r->e[n], (r->n - n) * sizeof(r->e[0]));
	r->n -= n;
	return n;
}

/* A delay clustered around what the wheel finds hard. */
static uint64_t
random_delay(uint64_t now)
{
	unsigned level = 1 + (unsigned)rng_below(TIMER_WHEEL_LEVELS);
	uint64_t span = UINT64_C(1) << (TIMER_WHEEL_SLOT_BITS * level);

	switch (rng_below(8)) {
	case 0:
		return rng_below(3);                            /* 0, 1, 2 */
	case 1:
		return rng_below(64);                           /* level 0 */
	case 2:
		return span - 1 + rng_below(3);                 /* a level boundary -1, 0, +1 */
	case 3:                                                 /* an aligned slot start of some level, +-1 */
		return ((now >> (6 * (level - 1))) + 1 + rng_below(64)) * (span >> 6) - now - 1 + rng_below(3);
	case 4:
		return rng_below(span);                         /* anywhere in a level */
	case 5:
		return rng_below(UINT64_C(1) << 38);            /* up to 4x beyond the reach: parked */
	default:
		return rng_below(4096);                         /* ACK/RNR-like, often fires */
	}
}

struct run {
	struct timer_wheel *w;
	struct ref *r;
	uint64_t now;
	uint64_t delivered;
};

static void
check_poll(struct run *s, uint32_t max, bool tick_by_tick)
{
	uint32_t out[OUT_MAX];
	struct ref_entry want[OUT_MAX];
	uint32_t n = timer_wheel_poll(s->w, s->now, out, max);
	uint32_t m = ref_poll(s->r, s->now, want, max);

	cr_assert_eq(n, m, "now %lu: wheel delivered %u, reference %u", (unsigned long)s->now, n, m);
	for (uint32_t i = 0; i < n; i++) {
		cr_assert_eq(out[i], want[i].handle, "now %lu: #%u is %u, reference %u (expiry %lu)",
			     (unsigned long)s->now, i, out[i], want[i].handle, (unsigned long)want[i].expiry);
		cr_assert_leq(want[i].expiry, s->now, "early");
		if (tick_by_tick && n < max)
			cr_assert_leq(s->now - want[i].expiry, 1, "more than one tick late");
	}
	s->delivered += n;
}

static void
check_state(const struct run *s)
{
	cr_assert_eq(timer_wheel_stats(s->w).armed, s->r->n);
	for (uint32_t h = 0; h < CAPACITY; h++)
		cr_assert_eq(timer_wheel_expiry(s->w, h), s->r->expiry_of[h], "handle %u", h);
	uint64_t deadline = timer_wheel_next_deadline(s->w);
	if (s->r->n == 0)
		cr_assert_eq(deadline, TIMER_WHEEL_NEVER);
	else
		cr_assert_leq(deadline, s->r->e[0].expiry < s->now ? s->now : s->r->e[0].expiry,
			      "next deadline past the earliest expiry");
}

static void
random_ops(struct run *s, unsigned n_ops, bool tick_by_tick)
{
	static const uint32_t caps[] = { 1, 2, 7, 64, OUT_MAX };

	for (unsigned op = 0; op < n_ops; op++) {
		uint32_t h = (uint32_t)rng_below(CAPACITY);
		unsigned what = (unsigned)rng_below(100);
		uint64_t e = s->r->expiry_of[h];

		if (what < 35) {                                /* arm or re-arm anywhere */
			uint64_t expiry = s->now + (tick_by_tick ? rng_below(5000) : random_delay(s->now));
			if (!tick_by_tick && rng_below(50) == 0)
				expiry = s->now - rng_below(s->now < 100 ? s->now + 1 : 100); /* in the past */
			cr_assert_eq(timer_wheel_arm(s->w, h, expiry), 0);
			ref_arm(s->r, h, expiry);
		} else if (what < 50 && e != TIMER_WHEEL_NEVER) { /* re-arm later (the ACK timer) */
			uint64_t expiry = e + rng_below((e > s->now ? e - s->now : 0) + 100);
			cr_assert_eq(timer_wheel_arm(s->w, h, expiry), 0);
			ref_arm(s->r, h, expiry);
		} else if (what < 58 && e != TIMER_WHEEL_NEVER) { /* re-arm earlier, not before now */
			uint64_t expiry = e <= s->now ? e : s->now + rng_below(e - s->now);
			cr_assert_eq(timer_wheel_arm(s->w, h, expiry), 0);
			ref_arm(s->r, h, expiry);
		} else if (what < 70) {                          /* cancel, armed or not */
			cr_assert_eq(timer_wheel_cancel(s->w, h), ref_cancel(s->r, h) ? 1 : 0);
		} else if (tick_by_tick) {
			s->now++;
			check_poll(s, OUT_MAX, true);
		} else {
			switch (rng_below(7)) {
			case 0: break;                                            /* same now */
			case 1: s->now += 1; break;
			case 2: s->now += rng_below(100); break;
			case 3: s->now += rng_below(5000); break;
			case 4: {                                                 /* to the wheel's deadline */
				uint64_t d = timer_wheel_next_deadline(s->w);
				if (d != TIMER_WHEEL_NEVER && d > s->now)
					s->now = d;
				break;
			}
			case 5: s->now += rng_below(UINT64_C(1) << 24); break;
			default: if (rng_below(20) == 0) s->now += rng_below(UINT64_C(1) << 37); break;
			}
			check_poll(s, caps[rng_below(5)], false);
		}
		if (op % 4096 == 0)
			check_state(s);
	}
	check_state(s);
}

static void
run_seed(uint64_t seed, uint64_t start, unsigned n_ops, bool tick_by_tick)
{
	static struct ref r;
	struct timer_wheel_config cfg = { .capacity = CAPACITY, .now = start, .refile_budget = UINT32_MAX };
	struct run s = { .w = timer_wheel_create(&cfg), .r = &r, .now = start };

	cr_assert_not_null(s.w);
	rng_state = seed;
	ref_init(&r);
	random_ops(&s, n_ops, tick_by_tick);
	/* Drain: everything left fires, in order, exactly when due. */
	for (unsigned i = 0; r.n != 0; i++) {
		uint64_t d = timer_wheel_next_deadline(s.w);
		cr_assert_neq(d, TIMER_WHEEL_NEVER);
		if (d > s.now)
			s.now = d;
		check_poll(&s, OUT_MAX, false);
		cr_assert_lt(i, 100000u, "drain does not converge");
	}
	cr_assert_eq(timer_wheel_next_deadline(s.w), TIMER_WHEEL_NEVER);
	cr_assert_eq(timer_wheel_stats(s.w).expired, s.delivered);
	cr_assert_gt(s.delivered, n_ops / 20, "the mix must actually fire timers (%lu)", (unsigned long)s.delivered);
	timer_wheel_destroy(s.w);
}

Test(timer_random, matches_sorted_reference)
{
	run_seed(1, 0, 400000, false);
	run_seed(0xdecafbad, (UINT64_C(1) << 36) - 12345, 400000, false);
	run_seed(20240607, UINT64_C(1) << 45, 400000, false);
}

Test(timer_random, tick_by_tick_never_more_than_one_tick_late)
{
	run_seed(7, 1000000, 400000, true);
}

/*
 * A tiny re-file budget delays work across polls: no longer tick-exact, but
 * every armed timer still fires exactly once, never early, in expiry order,
 * and nothing is lost.
 */
Test(timer_random, small_refile_budget_keeps_the_contract)
{
	static uint64_t expiry_of[CAPACITY];
	struct timer_wheel_config cfg = { .capacity = CAPACITY, .now = 0, .refile_budget = 3 };
	struct timer_wheel *w = timer_wheel_create(&cfg);
	uint32_t out[64];
	uint64_t now = 0, last_expiry = 0, armed = 0, fired = 0;

	cr_assert_not_null(w);
	rng_state = 99;
	for (uint32_t h = 0; h < CAPACITY; h++)
		expiry_of[h] = TIMER_WHEEL_NEVER;
	for (unsigned op = 0; op < 200000; op++) {
		uint32_t h = (uint32_t)rng_below(CAPACITY);
		unsigned what = (unsigned)rng_below(100);

		if (what < 40) {
			uint64_t expiry = now + random_delay(now) % (UINT64_C(1) << 20);

			armed += expiry_of[h] == TIMER_WHEEL_NEVER;
			expiry_of[h] = expiry;
			cr_assert_eq(timer_wheel_arm(w, h, expiry), 0);
		} else if (what < 55) {
			cr_assert_eq(timer_wheel_cancel(w, h), expiry_of[h] != TIMER_WHEEL_NEVER);
			armed -= expiry_of[h] != TIMER_WHEEL_NEVER;
			expiry_of[h] = TIMER_WHEEL_NEVER;
		} else {
			now += rng_below(2000);
			uint32_t n = timer_wheel_poll(w, now, out, 1 + (uint32_t)rng_below(64));
			for (uint32_t i = 0; i < n; i++) {
				uint64_t e = expiry_of[out[i]];

				cr_assert_neq(e, TIMER_WHEEL_NEVER, "delivered a disarmed timer");
				cr_assert_leq(e, now, "early");
				cr_assert_geq(e, last_expiry, "out of expiry order");
				last_expiry = e;
				expiry_of[out[i]] = TIMER_WHEEL_NEVER;
				armed--;
				fired++;
			}
		}
		cr_assert_eq(timer_wheel_stats(w).armed, armed);
	}
	/* Finish at a fixed time: bounded polls deliver everything due. */
	now += UINT64_C(1) << 21;
	for (unsigned i = 0; armed != 0; i++) {
		uint32_t n = timer_wheel_poll(w, now, out, 64);

		for (uint32_t k = 0; k < n; k++) {
			cr_assert_leq(expiry_of[out[k]], now);
			expiry_of[out[k]] = TIMER_WHEEL_NEVER;
		}
		armed -= n;
		fired += n;
		cr_assert_lt(i, 100000u);
	}
	cr_assert_gt(timer_wheel_stats(w).budget_stops, 100, "the budget was exercised");
	cr_assert_gt(fired, 10000);
	timer_wheel_destroy(w);
}
