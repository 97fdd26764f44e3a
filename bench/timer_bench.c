/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Timer wheel benchmark: arm+cancel cost with 1 M live timers against 1 k
 * (the wheel's operations are O(1), so the ratio should stay near 1; what
 * remains is the memory hierarchy), the lazy ACK-timer re-arm, and the cost
 * of expiry processing per delivered timer. Times are wall-clock ns/op from
 * CLOCK_MONOTONIC, measured side by side in one run; 1 tick = 1 us.
 *
 *   timer_bench [-q]    (-q: fewer iterations, for a smoke run)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../test/splitmix64.h"
#include "bench_clock.h"
#include "timer_wheel.h"

#define PROBES 1024u         /* extra handles armed and cancelled on top of the live ones */
#define DELAYS 4096u         /* precomputed random delays, a power of two */
#define MAX_ACK_TICKS (UINT64_C(4096) * (UINT64_C(1) << 31) / 1000) /* 8,796 s in 1 us ticks */

static uint64_t rng_state = 12345;

static uint64_t
rng(void)
{
	return splitmix64_next(&rng_state);
}

/* A transport-like delay: mostly ACK/RNR timeouts (8 us .. 537 ms), some long. */
static uint64_t
random_delay(void)
{
	uint64_t r = rng();

	if (r % 16 == 0)
		return 1 + (r >> 8) % MAX_ACK_TICKS;
	return UINT64_C(8) << ((r >> 4) % 17); /* 4.096 us * 2^(1..17), roughly, in us */
}

static struct timer_wheel *
make_wheel(uint32_t capacity)
{
	struct timer_wheel_config cfg = { .capacity = capacity, .now = 0, .refile_budget = UINT32_MAX };
	struct timer_wheel *w = timer_wheel_create(&cfg);

	if (w == NULL) {
		fprintf(stderr, "timer_bench: cannot allocate a wheel of %u timers\n", capacity);
		exit(1);
	}
	return w;
}

struct arm_cancel_result {
	double memory_ns;   /* baseline: two independent random 16-byte read-modify-writes */
	double probe_ns;    /* arm + cancel of a probe handle */
	double live_ns;     /* cancel + arm of a random live handle */
	double lazy_ns;     /* re-arm of a random live handle to a later expiry */
};

static struct arm_cancel_result
bench_arm_cancel(uint32_t live, uint32_t ops)
{
	static uint64_t delay[DELAYS];
	static uint32_t pick[DELAYS];
	struct timer_wheel *w = make_wheel(live + PROBES);
	struct arm_cancel_result res;
	uint64_t t0;

	for (uint32_t i = 0; i < DELAYS; i++) {
		delay[i] = random_delay();
		pick[i] = (uint32_t)(rng() % live);
	}
	for (uint32_t h = 0; h < live; h++)
		timer_wheel_arm(w, h, 1 + random_delay());

	t0 = bench_now_ns();
	for (uint32_t i = 0; i < ops; i++) {
		uint32_t h = live + (i & (PROBES - 1));

		timer_wheel_arm(w, h, delay[i & (DELAYS - 1)]);
		timer_wheel_cancel(w, h);
	}
	res.probe_ns = (double)(bench_now_ns() - t0) / ops;

	/* Random live handles: each op touches a cold node among `live`. */
	t0 = bench_now_ns();
	for (uint32_t i = 0; i < ops; i++) {
		uint32_t h = (pick[i & (DELAYS - 1)] + i * 2654435761u) % live;

		timer_wheel_cancel(w, h);
		timer_wheel_arm(w, h, delay[i & (DELAYS - 1)]);
	}
	res.live_ns = (double)(bench_now_ns() - t0) / ops;

	/* ACK-timer pattern: push an armed timer later; stores the expiry only. */
	uint64_t later = MAX_ACK_TICKS;
	t0 = bench_now_ns();
	for (uint32_t i = 0; i < ops; i++) {
		uint32_t h = (pick[i & (DELAYS - 1)] + i * 2654435761u) % live;

		timer_wheel_arm(w, h, later + i);
	}
	res.lazy_ns = (double)(bench_now_ns() - t0) / ops;
	timer_wheel_destroy(w);

	/* What the memory alone costs for the same access pattern and size. */
	struct { uint64_t a, b; } *mem = calloc(live + PROBES, sizeof(*mem));
	if (mem == NULL)
		exit(1);
	t0 = bench_now_ns();
	for (uint32_t i = 0; i < ops; i++) {
		uint32_t h = (pick[i & (DELAYS - 1)] + i * 2654435761u) % live;
		uint32_t g = (pick[(i + 7) & (DELAYS - 1)] + i * 40503u) % live;

		mem[h].a += i;
		mem[g].b += h;
	}
	res.memory_ns = (double)(bench_now_ns() - t0) / ops;
	uint64_t sum = 0;
	for (uint32_t i = 0; i < live; i++)
		sum += mem[i].a ^ mem[i].b;
	if (sum == 1)
		printf("(checksum 1)\n");
	free(mem);
	return res;
}

struct expiry_result {
	double spread_ns;   /* per delivered timer, expiries spread over time, polled each tick */
	double burst_ns;    /* per delivered timer, all at one tick */
	double empty_ns;    /* per poll with nothing due */
	uint64_t refiled;
};

static struct expiry_result
bench_expiry(uint32_t n)
{
	enum { BATCH = 64 };
	struct timer_wheel *w = make_wheel(n);
	struct expiry_result res;
	uint32_t out[BATCH];
	uint64_t got = 0, t0, span = 4u * n;    /* ~4 us between expiries on average */

	for (uint32_t h = 0; h < n; h++)
		timer_wheel_arm(w, h, 1 + rng() % span);
	t0 = bench_now_ns();
	for (uint64_t now = 1; got < n; now++) {
		uint32_t k;

		while ((k = timer_wheel_poll(w, now, out, BATCH)) != 0)
			got += k;
	}
	res.spread_ns = (double)(bench_now_ns() - t0) / n;
	res.refiled = timer_wheel_stats(w).refiled;

	uint64_t base = timer_wheel_now(w), at = base + 100000;
	for (uint32_t h = 0; h < n; h++)
		timer_wheel_arm(w, (h * 2654435761u) % n, at);  /* scrambled handles: the sort works */
	t0 = bench_now_ns();
	got = 0;
	for (uint32_t k; (k = timer_wheel_poll(w, at, out, BATCH)) != 0;)
		got += k;
	res.burst_ns = (double)(bench_now_ns() - t0) / (got ? got : 1);

	timer_wheel_arm(w, 0, at + 1000000000);
	t0 = bench_now_ns();
	for (uint32_t i = 0; i < 1000000; i++)
		timer_wheel_poll(w, at + 1 + (i >> 4), out, BATCH);
	res.empty_ns = (double)(bench_now_ns() - t0) / 1000000;
	timer_wheel_destroy(w);
	return res;
}

int
main(int argc, char **argv)
{
	bool quick = argc > 1 && strcmp(argv[1], "-q") == 0;
	uint32_t ops = quick ? 200000 : 4000000;
	uint32_t small = 1000, large = quick ? 100000 : 1000000;

	printf("timer wheel: %u levels x %u slots, 1 tick = 1 us, %u ops per measure\n",
	       TIMER_WHEEL_LEVELS, TIMER_WHEEL_SLOTS, ops);
	struct arm_cancel_result a = bench_arm_cancel(small, ops);
	struct arm_cancel_result b = bench_arm_cancel(large, ops);
	printf("%-44s %10s %10s %7s\n", "operation (ns/op)", "1k live", large == 1000000 ? "1M live" : "100k live", "ratio");
	printf("%-44s %10.1f %10.1f %7.2f\n", "memory only: 2 random 16 B RMW (baseline)", a.memory_ns, b.memory_ns, b.memory_ns / a.memory_ns);
	printf("%-44s %10.1f %10.1f %7.2f\n", "arm + cancel (probe handles)", a.probe_ns, b.probe_ns, b.probe_ns / a.probe_ns);
	printf("%-44s %10.1f %10.1f %7.2f\n", "cancel + arm (random live handle)", a.live_ns, b.live_ns, b.live_ns / a.live_ns);
	printf("%-44s %10.1f %10.1f %7.2f\n", "re-arm later (ACK timer, lazy)", a.lazy_ns, b.lazy_ns, b.lazy_ns / a.lazy_ns);

	struct expiry_result x = bench_expiry(small);
	struct expiry_result y = bench_expiry(large);
	printf("%-44s %10.1f %10.1f %7.2f\n", "expiry, spread, polled each tick (per timer)", x.spread_ns, y.spread_ns, y.spread_ns / x.spread_ns);
	printf("%-44s %10.1f %10.1f %7.2f\n", "expiry, all at one tick (per timer)", x.burst_ns, y.burst_ns, y.burst_ns / x.burst_ns);
	printf("%-44s %10.1f %10.1f %7.2f\n", "poll with nothing due", x.empty_ns, y.empty_ns, y.empty_ns / x.empty_ns);
	printf("%-44s %10.2f %10.2f\n", "re-files per expired timer (spread)",
	       (double)x.refiled / small, (double)y.refiled / large);
	return 0;
}
