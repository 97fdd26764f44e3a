/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Functional tests of the timer wheel: init and bad input, arm/cancel/re-arm,
 * expiry exactly at, just before and just after every level boundary, the
 * per-poll cap, withdrawal of due-but-undelivered timers, tie order, the
 * re-file budget, next_deadline and the cycle-to-tick clock.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>

#include "timer_wheel.h"

#define LEVEL_SPAN(k) (UINT64_C(1) << (TIMER_WHEEL_SLOT_BITS * (k))) /* ticks per slot of level k */
#define REACH (UINT64_C(1) << (TIMER_WHEEL_SLOT_BITS * TIMER_WHEEL_LEVELS))
#define US 1000u                               /* 1 us ticks in these tests */
#define MAX_ACK_TIMEOUT_US (UINT64_C(4096) * (UINT64_C(1) << 31) / 1000 + 1) /* 8,796,093,022.2 us, up */
#define MAX_RNR_US UINT64_C(655360)

static struct timer_wheel *
make_wheel(uint32_t capacity, uint64_t now)
{
	struct timer_wheel_config cfg = { .capacity = capacity, .now = now, .refile_budget = UINT32_MAX };
	struct timer_wheel *w = timer_wheel_create(&cfg);

	cr_assert_not_null(w);
	return w;
}

/*
 * Poll at every next_deadline() until handle h fires; check that no deadline
 * lies beyond its expiry, that it fires exactly at its expiry, and that a
 * poll one tick earlier returned nothing. Returns the number of polls.
 */
static unsigned
walk_until_fired(struct timer_wheel *w, uint32_t h, uint64_t expiry)
{
	uint32_t out[4];
	unsigned polls = 0;

	for (;;) {
		uint64_t d = timer_wheel_next_deadline(w);

		cr_assert_leq(d, expiry, "deadline %lu past expiry %lu", (unsigned long)d, (unsigned long)expiry);
		if (d > timer_wheel_now(w) + 1)
			cr_assert_eq(timer_wheel_poll(w, d - 1, out, 4), 0, "fired before the deadline");
		uint32_t n = timer_wheel_poll(w, d, out, 4);
		polls++;
		cr_assert_leq(polls, 64u * TIMER_WHEEL_LEVELS, "no progress");
		if (n != 0) {
			cr_assert_eq(n, 1);
			cr_assert_eq(out[0], h);
			cr_assert_eq(d, expiry, "fired at %lu, expiry %lu", (unsigned long)d, (unsigned long)expiry);
			return polls;
		}
	}
}

Test(timer_wheel, init_rejects_bad_parameters)
{
	struct timer_wheel_config cfg = { .capacity = 0 };
	static uint64_t mem[4096];

	cr_assert_eq(timer_wheel_memsize(0), 0);
	cr_assert_eq(timer_wheel_memsize(TIMER_WHEEL_CAPACITY_MAX + 1), 0);
	cr_assert_null(timer_wheel_create(&cfg));
	cr_assert_null(timer_wheel_create(NULL));
	cfg.capacity = 16;
	size_t size = timer_wheel_memsize(16);
	cr_assert(size > 0 && size <= sizeof(mem));
	cr_assert_null(timer_wheel_init(mem, size - 1, &cfg), "short memory");
	cr_assert_null(timer_wheel_init((char *)mem + 4, size, &cfg), "misaligned memory");
	cfg.now = TIMER_WHEEL_EXPIRY_MAX + 1;
	cr_assert_null(timer_wheel_init(mem, size, &cfg), "now out of range");
	cfg.now = 5;
	struct timer_wheel *w = timer_wheel_init(mem, size, &cfg);
	cr_assert_eq((void *)w, (void *)mem);
	cr_assert_eq(timer_wheel_capacity(w), 16);
	cr_assert_eq(timer_wheel_now(w), 5);
	cr_assert_eq(timer_wheel_next_deadline(w), TIMER_WHEEL_NEVER);
}

Test(timer_wheel, bad_handles_and_expiries_are_rejected)
{
	struct timer_wheel *w = make_wheel(8, 100);

	cr_assert_eq(timer_wheel_arm(w, 8, 200), -EINVAL);
	cr_assert_eq(timer_wheel_cancel(w, 8), -EINVAL);
	cr_assert_eq(timer_wheel_arm(w, UINT32_MAX, 200), -EINVAL);
	cr_assert_not(timer_wheel_is_armed(w, 8));
	cr_assert_eq(timer_wheel_expiry(w, 9), TIMER_WHEEL_NEVER);
	cr_assert_eq(timer_wheel_arm(w, 1, TIMER_WHEEL_EXPIRY_MAX + 1), -ERANGE);
	cr_assert_not(timer_wheel_is_armed(w, 1));
	cr_assert_eq(timer_wheel_arm(w, 1, 300), 0);
	cr_assert_eq(timer_wheel_arm(w, 1, UINT64_MAX), -ERANGE);
	cr_assert_eq(timer_wheel_expiry(w, 1), 300, "a rejected re-arm leaves the timer as it was");
	cr_assert_eq(timer_wheel_stats(w).armed, 1);
	timer_wheel_destroy(w);
}

Test(timer_wheel, handle_helpers_split_owner_and_timer_id)
{
	uint32_t h = timer_wheel_handle(12345, 3);

	cr_assert_eq(h, 12345u * TIMER_WHEEL_TIMERS_PER_OWNER + 3);
	cr_assert_eq(timer_wheel_handle_owner(h), 12345);
	cr_assert_eq(timer_wheel_handle_timer_id(h), 3);
	cr_assert_eq(timer_wheel_handle_timer_id(timer_wheel_handle(7, 0)), 0);
}

Test(timer_wheel, arm_cancel_and_query)
{
	struct timer_wheel *w = make_wheel(8, 0);
	uint32_t out[8];

	cr_assert_eq(timer_wheel_cancel(w, 3), 0, "cancel of a disarmed timer");
	cr_assert_eq(timer_wheel_arm(w, 3, 10), 0);
	cr_assert(timer_wheel_is_armed(w, 3));
	cr_assert_eq(timer_wheel_expiry(w, 3), 10);
	cr_assert_eq(timer_wheel_next_deadline(w), 10);
	cr_assert_eq(timer_wheel_cancel(w, 3), 1);
	cr_assert_eq(timer_wheel_cancel(w, 3), 0);
	cr_assert_not(timer_wheel_is_armed(w, 3));
	cr_assert_eq(timer_wheel_next_deadline(w), TIMER_WHEEL_NEVER);
	cr_assert_eq(timer_wheel_poll(w, 1000, out, 8), 0);
	cr_assert_eq(timer_wheel_now(w), 1000);
	cr_assert_eq(timer_wheel_stats(w).armed, 0);
	timer_wheel_destroy(w);
}

Test(timer_wheel, zero_delay_fires_on_next_poll)
{
	struct timer_wheel *w = make_wheel(4, 777);
	uint32_t out[4];

	cr_assert_eq(timer_wheel_arm(w, 2, 777), 0);
	cr_assert_eq(timer_wheel_next_deadline(w), 777, "due now");
	cr_assert_eq(timer_wheel_poll(w, 777, out, 4), 1);
	cr_assert_eq(out[0], 2);
	cr_assert_not(timer_wheel_is_armed(w, 2));
	/* An expiry in the past is due at once too. */
	cr_assert_eq(timer_wheel_arm(w, 1, 5), 0);
	cr_assert_eq(timer_wheel_poll(w, 777, out, 4), 1);
	cr_assert_eq(out[0], 1);
	/* One tick of delay: not at now, at now + 1. */
	cr_assert_eq(timer_wheel_arm(w, 0, 778), 0);
	cr_assert_eq(timer_wheel_poll(w, 777, out, 4), 0);
	cr_assert_eq(timer_wheel_poll(w, 778, out, 4), 1);
	cr_assert_eq(timer_wheel_stats(w).expired, 3);
	timer_wheel_destroy(w);
}

/*
 * For every level boundary 64^k (k = 1..LEVELS, the last being the wheel's
 * reach) and every base alignment, delays of boundary-1, boundary,
 * boundary+1, and the slot granule 64^(k-1) +-1: fire exactly at expiry,
 * both when polled at each deadline and when polled once after a long gap.
 */
Test(timer_wheel, expiry_exact_at_level_boundaries)
{
	static const uint64_t bases[] = { 0, 1, 63, 64, 4095, 4096 + 17, (UINT64_C(1) << 36) - 1, UINT64_C(123456789012) };
	uint32_t out[4];

	for (unsigned b = 0; b < sizeof(bases) / sizeof(bases[0]); b++) {
		for (unsigned k = 1; k <= TIMER_WHEEL_LEVELS; k++) {
			uint64_t delays[] = {
				LEVEL_SPAN(k) - 1, LEVEL_SPAN(k), LEVEL_SPAN(k) + 1,
				LEVEL_SPAN(k - 1) - 1, LEVEL_SPAN(k - 1), LEVEL_SPAN(k - 1) + 1,
				/* expiry exactly on an aligned boundary of level k */
				((bases[b] >> (6 * k)) + 1) * LEVEL_SPAN(k) - bases[b],
			};
			for (unsigned d = 0; d < sizeof(delays) / sizeof(delays[0]); d++) {
				if (delays[d] == 0)
					continue;
				uint64_t expiry = bases[b] + delays[d];
				struct timer_wheel *w = make_wheel(4, bases[b]);

				cr_assert_eq(timer_wheel_arm(w, 1, expiry), 0);
				walk_until_fired(w, 1, expiry);
				cr_assert_eq(timer_wheel_next_deadline(w), TIMER_WHEEL_NEVER);

				/* Same timer, one poll just before and one at expiry. */
				cr_assert_eq(timer_wheel_arm(w, 2, expiry + delays[d]), 0);
				cr_assert_eq(timer_wheel_poll(w, expiry + delays[d] - 1, out, 4), 0,
					     "early: base %lu delay %lu", (unsigned long)bases[b], (unsigned long)delays[d]);
				cr_assert_eq(timer_wheel_poll(w, expiry + delays[d], out, 4), 1);
				cr_assert_eq(out[0], 2);
				timer_wheel_destroy(w);
			}
		}
	}
}

Test(timer_wheel, max_range_ack_timeout_plus_rnr_is_exact)
{
	/* 4.096 us * 2^31 + 655.36 ms, in 1 us ticks, rounded up. */
	uint64_t delay = MAX_ACK_TIMEOUT_US + MAX_RNR_US;
	uint64_t base = UINT64_C(987654321);
	struct timer_wheel *w = make_wheel(4, base);
	uint32_t out[4];

	cr_assert_eq(timer_wheel_arm(w, 0, base + delay), 0);
	unsigned polls = walk_until_fired(w, 0, base + delay);
	cr_assert_leq(polls, TIMER_WHEEL_LEVELS + 1, "one visit per level at most, took %u", polls);

	/* Beyond the wheel's reach: parked and re-filed, still exact. */
	uint64_t far = base + 3 * REACH + 12345;
	cr_assert_eq(timer_wheel_arm(w, 1, far), 0);
	walk_until_fired(w, 1, far);

	timer_wheel_destroy(w);

	/* The largest accepted expiry, parked a few times, then a clamped now. */
	w = make_wheel(4, TIMER_WHEEL_EXPIRY_MAX - 5 * REACH - 5);
	cr_assert_eq(timer_wheel_arm(w, 2, TIMER_WHEEL_EXPIRY_MAX), 0);
	cr_assert_eq(timer_wheel_poll(w, TIMER_WHEEL_EXPIRY_MAX - REACH, out, 4), 0);
	cr_assert_eq(timer_wheel_poll(w, TIMER_WHEEL_EXPIRY_MAX - 1, out, 4), 0);
	cr_assert_eq(timer_wheel_poll(w, UINT64_MAX, out, 4), 1, "now is clamped to the max expiry");
	cr_assert_eq(out[0], 2);
	cr_assert_eq(timer_wheel_now(w), TIMER_WHEEL_EXPIRY_MAX);
	timer_wheel_destroy(w);
}

Test(timer_wheel, per_poll_cap_delivers_the_rest_next_time_in_order)
{
	enum { N = 100 };
	struct timer_wheel *w = make_wheel(N, 0);
	uint32_t out[N];

	/* Handles armed in descending order, two expiries, across levels. */
	for (uint32_t h = N; h-- > 0;)
		cr_assert_eq(timer_wheel_arm(w, h, h % 2 ? 5000 : 5001), 0);
	uint32_t got = 0, prev_key = 0;
	unsigned polls = 0;
	while (got < N) {
		uint32_t n = timer_wheel_poll(w, 6000, out, 7);

		cr_assert_leq(n, 7);
		cr_assert(n == 7 || got + n == N, "a capped poll returns the cap");
		for (uint32_t i = 0; i < n; i++) {
			/* odd handles (5000) first, then even ones (5001), each ascending */
			uint32_t key = (out[i] % 2 ? 0 : 1000) + out[i];
			cr_assert(got + i == 0 || key > prev_key, "order");
			prev_key = key;
		}
		got += n;
		cr_assert_leq(++polls, 15u);
	}
	cr_assert_eq(timer_wheel_poll(w, 6000, out, 7), 0);
	cr_assert_eq(timer_wheel_stats(w).expired, N);
	cr_assert_eq(timer_wheel_poll(w, 6000, out, 0), 0, "max 0 is allowed");
	timer_wheel_destroy(w);
}

Test(timer_wheel, cancel_of_due_undelivered_timer_withdraws_it)
{
	struct timer_wheel *w = make_wheel(16, 0);
	uint32_t out[16];

	for (uint32_t h = 0; h < 10; h++)
		timer_wheel_arm(w, h, 300);
	cr_assert_eq(timer_wheel_poll(w, 400, out, 3), 3);
	cr_assert_eq(out[0], 0);
	cr_assert_eq(out[2], 2);
	cr_assert(timer_wheel_is_armed(w, 5), "due but undelivered is still armed");
	cr_assert_eq(timer_wheel_now(w), 300, "stopped at the cap");
	cr_assert_eq(timer_wheel_next_deadline(w), 300, "due timers make the deadline the wheel's time");
	cr_assert_eq(timer_wheel_cancel(w, 5), 1);
	cr_assert_eq(timer_wheel_cancel(w, 9), 1);
	cr_assert_eq(timer_wheel_cancel(w, 5), 0);
	cr_assert_eq(timer_wheel_cancel(w, 0), 0, "already delivered");
	cr_assert_eq(timer_wheel_poll(w, 400, out, 16), 5);
	static const uint32_t want[] = { 3, 4, 6, 7, 8 };
	for (unsigned i = 0; i < 5; i++)
		cr_assert_eq(out[i], want[i]);
	cr_assert_eq(timer_wheel_stats(w).armed, 0);
	cr_assert_eq(timer_wheel_next_deadline(w), TIMER_WHEEL_NEVER);
	timer_wheel_destroy(w);
}

Test(timer_wheel, rearm_later_is_lazy_and_exact)
{
	struct timer_wheel *w = make_wheel(4, 0);
	uint32_t out[4];

	cr_assert_eq(timer_wheel_arm(w, 1, 5000), 0);
	/* ACK-timer pattern: pushed back on every "ACK". */
	for (uint64_t now = 0; now < 20000; now += 100) {
		cr_assert_eq(timer_wheel_poll(w, now, out, 4), 0, "fired at %lu", (unsigned long)now);
		cr_assert_eq(timer_wheel_arm(w, 1, now + 5000), 0);
	}
	cr_assert_gt(timer_wheel_stats(w).lazy_rearms, 150, "later re-arms only store the expiry");
	uint64_t expiry = timer_wheel_expiry(w, 1);
	cr_assert_eq(expiry, 19900 + 5000);
	walk_until_fired(w, 1, expiry);
	timer_wheel_destroy(w);
}

Test(timer_wheel, rearm_earlier_and_rearm_of_due_timer)
{
	struct timer_wheel *w = make_wheel(4, 0);
	uint32_t out[4];

	cr_assert_eq(timer_wheel_arm(w, 0, 100000), 0);
	cr_assert_eq(timer_wheel_arm(w, 0, 70), 0);
	cr_assert_eq(timer_wheel_next_deadline(w), 64, "level-1 slot [64, 128) holds it now");
	cr_assert_eq(timer_wheel_poll(w, 69, out, 4), 0);
	cr_assert_eq(timer_wheel_poll(w, 70, out, 4), 1);
	cr_assert_eq(timer_wheel_poll(w, 200000, out, 4), 0, "fires once, not again at the old expiry");

	/* Due but undelivered (cap 1), then re-armed later: taken back. */
	uint64_t now = 200000;
	timer_wheel_arm(w, 1, now + 10);
	timer_wheel_arm(w, 2, now + 10);
	cr_assert_eq(timer_wheel_poll(w, now + 10, out, 1), 1);
	cr_assert_eq(out[0], 1);
	cr_assert_eq(timer_wheel_arm(w, 2, now + 50), 0);
	cr_assert_eq(timer_wheel_poll(w, now + 49, out, 4), 0);
	cr_assert_eq(timer_wheel_poll(w, now + 50, out, 4), 1);
	cr_assert_eq(out[0], 2);

	/* Re-armed earlier than the wheel's time: due, ordered among due ones. */
	timer_wheel_arm(w, 3, now + 60);
	timer_wheel_arm(w, 1, now + 60);
	timer_wheel_arm(w, 2, now + 60);
	cr_assert_eq(timer_wheel_poll(w, now + 70, out, 1), 1);
	cr_assert_eq(out[0], 1);
	cr_assert_eq(timer_wheel_arm(w, 3, now + 5), 0);
	cr_assert_eq(timer_wheel_arm(w, 0, now + 65), 0);
	cr_assert_eq(timer_wheel_poll(w, now + 70, out, 4), 3);
	cr_assert_eq(out[0], 3, "expiry now+5 first");
	cr_assert_eq(out[1], 2, "then now+60");
	cr_assert_eq(out[2], 0, "then now+65");
	timer_wheel_destroy(w);
}

Test(timer_wheel, ties_are_delivered_by_ascending_handle_whatever_the_path)
{
	enum { N = 64 };
	struct timer_wheel *w = make_wheel(N, 0);
	uint32_t out[N];
	const uint64_t expiry = 300000;

	/* Armed at different times in scrambled order, so they reach the
	 * level-0 slot from different levels. */
	for (uint32_t i = 0; i < N; i++) {
		uint32_t h = (i * 37) % N;

		cr_assert_eq(timer_wheel_poll(w, i * 4500, out, N), 0);
		cr_assert_eq(timer_wheel_arm(w, h, expiry), 0);
	}
	cr_assert_eq(timer_wheel_poll(w, expiry, out, N), N);
	for (uint32_t i = 0; i < N; i++)
		cr_assert_eq(out[i], i);
	timer_wheel_destroy(w);
}

Test(timer_wheel, refile_budget_bounds_work_without_losing_order)
{
	enum { N = 500 };
	struct timer_wheel_config cfg = { .capacity = N, .now = 0, .refile_budget = 16 };
	struct timer_wheel *w = timer_wheel_create(&cfg);
	uint32_t out[N];

	cr_assert_not_null(w);
	/* All in one level-2 slot, expiring over 64 ticks. */
	for (uint32_t h = 0; h < N; h++)
		timer_wheel_arm(w, h, 8192 + (h * 7) % 64);
	uint32_t got = 0;
	uint64_t prev = 0;
	unsigned polls = 0;
	for (uint64_t now = 8000; got < N; now++) {
		uint64_t before = timer_wheel_stats(w).refiled;
		uint32_t n = timer_wheel_poll(w, now, out, N);

		cr_assert_leq(timer_wheel_stats(w).refiled - before, 16, "budget respected");
		for (uint32_t i = 0; i < n; i++) {
			uint64_t e = 8192 + (out[i] * 7) % 64;

			cr_assert_leq(e, now, "never early");
			cr_assert_geq(e, prev, "expiry order");
			prev = e;
		}
		got += n;
		cr_assert_lt(++polls, 1000u);
	}
	cr_assert_gt(timer_wheel_stats(w).budget_stops, 0);
	cr_assert_eq(timer_wheel_stats(w).armed, 0);
	timer_wheel_destroy(w);
}

Test(timer_wheel, next_deadline_is_a_lower_bound_and_exact_at_level0)
{
	struct timer_wheel *w = make_wheel(4, 1000);

	timer_wheel_arm(w, 0, 1030);
	cr_assert_eq(timer_wheel_next_deadline(w), 1030);
	timer_wheel_arm(w, 1, 1000 + 100000);
	cr_assert_eq(timer_wheel_next_deadline(w), 1030);
	timer_wheel_cancel(w, 0);
	uint64_t d = timer_wheel_next_deadline(w);
	cr_assert_leq(d, 101000);
	cr_assert_gt(d, 1000);
	walk_until_fired(w, 1, 101000);
	timer_wheel_destroy(w);
}

Test(timer_wheel, clock_converts_without_firing_early)
{
	static const struct {
		uint64_t hz;
		uint32_t tick_ns;
	} cases[] = { { 1000000000, US }, { 2400000000u, US }, { 2999999999u, 2048 }, { 1000000000, 4096 }, { 3333333, 1000 } };
	struct timer_wheel_clock c;
	uint64_t seed = 42;

	cr_assert_eq(timer_wheel_clock_init(&c, 0, 1000), -EINVAL);
	cr_assert_eq(timer_wheel_clock_init(&c, 1000000000, 1), -EINVAL, "tick must exceed a cycle");
	cr_assert_eq(timer_wheel_clock_init(&c, 1000000000, 0), -EINVAL);
	cr_assert_eq(timer_wheel_clock_init(NULL, 1000000000, 1000), -EINVAL);

	for (unsigned k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		cr_assert_eq(timer_wheel_clock_init(&c, cases[k].hz, cases[k].tick_ns), 0);
		timer_wheel_u128_t per_tick = (timer_wheel_u128_t)cases[k].hz * cases[k].tick_ns; /* cycles/tick * 1e9 */
		for (unsigned i = 0; i < 20000; i++) {
			seed = seed * 6364136223846793005u + 1442695040888963407u;
			uint64_t now = (seed >> 8) & ((UINT64_C(1) << 52) - 1);
			uint64_t delay_ns = i % 3 == 0 ? (seed >> 20) % 100000 : (seed >> 13) % ((MAX_ACK_TIMEOUT_US + MAX_RNR_US) * 1000);
			/* exact floor of the tick count */
			uint64_t exact = (uint64_t)((timer_wheel_u128_t)now * 1000000000u / per_tick);
			uint64_t ticks = timer_wheel_clock_ticks(&c, now);
			cr_assert(ticks == exact || ticks == exact + 1, "ticks within one of exact");

			uint64_t expiry = timer_wheel_clock_expiry(&c, now, delay_ns);
			/* exact deadline in cycles, rounded up */
			uint64_t dl = now + (uint64_t)(((timer_wheel_u128_t)delay_ns * cases[k].hz + 999999999u) / 1000000000u);
			cr_assert_lt(timer_wheel_clock_ticks(&c, dl - 1), expiry, "a cycle before the deadline is not due");
			uint64_t late = (uint64_t)(per_tick / 1000000000u) + 2 + (delay_ns >> 31); /* 1 tick + rounding */
			cr_assert_geq(timer_wheel_clock_ticks(&c, dl + late), expiry, "due about a tick after the deadline");

			uint64_t at = timer_wheel_clock_cycles_at(&c, expiry);
			cr_assert_geq(timer_wheel_clock_ticks(&c, at), expiry);
			cr_assert_lt(timer_wheel_clock_ticks(&c, at - 1), expiry, "cycles_at is the first such cycle");
		}
	}
	cr_assert_eq(timer_wheel_clock_init(&c, 1000000000, 1000), 0);
	cr_assert_eq(timer_wheel_clock_expiry(&c, UINT64_MAX - 5, 1000), TIMER_WHEEL_NEVER);
	cr_assert_eq(timer_wheel_clock_ticks(&c, 5999), 5);
	cr_assert_eq(timer_wheel_clock_expiry(&c, 5999, 1), 6, "deadline 6000 ns is tick 6");
	cr_assert_eq(timer_wheel_clock_expiry(&c, 6000, 1), 7, "deadline 6001 ns is tick 7");
	cr_assert_eq(timer_wheel_clock_expiry(&c, 0, 0), 0);
}

/*
 * End to end with a 2.4 GHz "TSC": timers armed with a delay in ns through the
 * clock, the wheel polled at random counter values less than a tick apart.
 * Every timer fires at or after its exact deadline in cycles and less than
 * two ticks after it (one tick of quantisation, one poll interval).
 */
Test(timer_wheel, tsc_driven_timers_are_microsecond_exact)
{
	enum { N = 256 };
	const uint64_t hz = 2400000000u;
	struct timer_wheel_clock c;
	static uint64_t deadline[N];
	uint64_t cycles = UINT64_C(1) << 40, seed = 3, fired = 0;
	uint32_t out[N];

	cr_assert_eq(timer_wheel_clock_init(&c, hz, US), 0);
	struct timer_wheel *w = make_wheel(N, timer_wheel_clock_ticks(&c, cycles));
	uint64_t tick_cycles = hz / 1000000;   /* 2400 cycles per 1 us tick */
	for (unsigned step = 0; step < 200000; step++) {
		seed = seed * 6364136223846793005u + 1442695040888963407u;
		uint32_t h = (uint32_t)(seed >> 33) % N;
		if (!timer_wheel_is_armed(w, h)) {
			uint64_t delay_ns = (seed >> 20) % 3 == 0 ? (seed >> 24) % 5000 : (seed >> 24) % 3000000;

			deadline[h] = cycles + (delay_ns * hz + 999999999u) / 1000000000u;
			cr_assert_eq(timer_wheel_arm(w, h, timer_wheel_clock_expiry(&c, cycles, delay_ns)), 0);
		}
		cycles += (seed >> 40) % tick_cycles;
		uint32_t n = timer_wheel_poll(w, timer_wheel_clock_ticks(&c, cycles), out, N);
		for (uint32_t i = 0; i < n; i++) {
			cr_assert_geq(cycles, deadline[out[i]], "fired %lu cycles early",
				      (unsigned long)(deadline[out[i]] - cycles));
			cr_assert_lt(cycles - deadline[out[i]], 2 * tick_cycles, "fired %lu cycles late",
				     (unsigned long)(cycles - deadline[out[i]]));
		}
		fired += n;
	}
	cr_assert_gt(fired, 1000);
	timer_wheel_destroy(w);
}
