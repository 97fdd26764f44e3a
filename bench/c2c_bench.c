/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The machine's floor for the loopback: how long a cache line takes from
 * one CPU to another, and what one core copies per second. The loopback
 * path moves a WQE and a producer index from the application's core to the
 * worker's, and the data and a CQE back; on a VM these transfers cost what
 * the host makes them cost, and they set the floor of write_lat and of the
 * 64 B message rates whatever the stack does. Run it beside the loopback
 * figures (doc/benchmarks.md) to read them as ratios of this floor.
 *
 * 1. Ping-pong of one line between two threads pinned to CPUs A and B:
 *    one-way ns (half a round trip), median of ROUNDS rounds.
 * 2. memcpy bandwidth in 4 KiB pieces (the loopback's per-packet copy at
 *    path MTU 4096) for buffers of 64 KiB and 1 MiB, median of ROUNDS.
 * 3. A ring like a send queue: CPU B writes 384-byte slots (three lines
 *    each) and publishes a producer index, CPU A reads them in order with
 *    a fixed amount of work per slot, taking the slot SQ_AHEAD places ahead
 *    beforehand with no prefetch, PREFETCHT0 or PREFETCHW. ns per slot,
 *    median of ROUNDS: what a consumer's prefetch of lines another core
 *    wrote buys on this machine (the requester's prefetch_ahead()).
 * 4. The same ring with no work (the hand-over alone), moving all three
 *    lines of each slot and then lines 0 and 2 only, as a small RC send
 *    WQE does (its AV line stays with the application: wqe.h): ns per slot
 *    and M slots/s.
 *
 *   c2c_bench [CPU_A CPU_B] [-q]    (default CPUs 0 and 1; -q: a smoke run)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_clock.h"

#define ROUNDS 7
#define PIECE 4096

struct line {
	_Alignas(64) volatile uint64_t v;
	char pad[56];
};

static struct line ping, pong;
static uint64_t trips;
static int cpu_b;
static volatile int ready; /* the ponger: 1 pinned, 2 could not pin */

static int
pin(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	return pthread_setaffinity_np(pthread_self(), sizeof(s), &s);
}

/* The second thread's start: pinned to CPU B, says so in `ready` (1 pinned, 2 not). */
static bool
pin_b(void)
{
	bool ok = pin(cpu_b) == 0;

	ready = ok ? 1 : 2;
	return ok;
}

/* Start @p fn as the second thread and wait until it is pinned. @return false: it could not be */
static bool
start_b(pthread_t *t, void *(*fn)(void *), void *arg)
{
	ready = 0;
	if (pthread_create(t, NULL, fn, arg) != 0)
		return false;
	while (ready == 0)
		;
	if (ready != 1) {
		pthread_join(*t, NULL);
		return false;
	}
	return true;
}

static void *
ponger(void *arg)
{
	(void)arg;
	if (!pin_b())
		return (void *)1;
	for (uint64_t i = 1; i <= trips; i++) {
		while (ping.v != i)
			;
		pong.v = i;
	}
	return NULL;
}

/* One round (the caller pinned to its CPU): @return ns one way (half a
 * round trip), or 0 when the ponger cannot be pinned. */
static double
pingpong(void)
{
	pthread_t t;
	uint64_t t0, t1;

	ping.v = pong.v = 0;
	if (!start_b(&t, ponger, NULL))
		return 0;
	t0 = bench_now_ns();
	for (uint64_t i = 1; i <= trips; i++) {
		ping.v = i;
		while (pong.v != i)
			;
	}
	t1 = bench_now_ns();
	pthread_join(t, NULL);
	return (double)(t1 - t0) / (double)trips / 2;
}

/* One round: @return Gb/s copying @p size bytes in PIECE pieces, repeated. */
static double
copy_rate(uint8_t *dst, const uint8_t *src, size_t size, uint64_t bytes)
{
	uint64_t t0 = bench_now_ns(), done = 0;

	while (done < bytes) {
		for (size_t o = 0; o < size; o += PIECE)
			memcpy(dst + o, src + o, PIECE);
		done += size;
		__asm__ volatile("" ::"r"(dst) : "memory"); /* the copies are used */
	}
	return (double)done * 8 / (double)(bench_now_ns() - t0);
}

#define SQ_SLOTS 128u
#define SQ_SLOT 384u
#define SQ_AHEAD 4u
#define SQ_RELEASE 16u
#define SQ_WORK 150u /* dependent multiply-adds per slot: about the engine's work on a small WQE */

enum sq_mode { SQ_NONE, SQ_T0, SQ_W, SQ_MODES };
static const char *const sq_mode_name[SQ_MODES] = { "none", "prefetcht0", "prefetchw" };

static _Alignas(64) uint8_t sq_ring[SQ_SLOTS * SQ_SLOT];
static struct line sq_prod, sq_cons;
static uint64_t sq_n;

/* The slot lines a round moves: bit k for line k (a 64 B RC WQE: header, AV, SGE). */
#define SQ_LINES_ALL 0x7u

static inline void
sq_take(const uint8_t *p, enum sq_mode m, unsigned int lines)
{
	for (unsigned int k = 0; k < 3; k++) {
		if (!(lines >> k & 1u))
			continue;
		if (m == SQ_T0)
			__builtin_prefetch(p + 64 * k);
#if defined(__x86_64__)
		else if (m == SQ_W)
			__asm__ volatile("prefetchw %0" : : "m"(p[64 * k]));
#endif
	}
}

/* The producer (CPU B): fills each slot's three lines, then publishes it. */
static void *
sq_producer(void *arg)
{
	unsigned int lines = *(const unsigned int *)arg;

	if (!pin_b())
		return (void *)1;
	for (uint64_t i = 0; i < sq_n; i++) {
		uint8_t *slot = &sq_ring[(i % SQ_SLOTS) * SQ_SLOT];

		while (i - __atomic_load_n(&sq_cons.v, __ATOMIC_ACQUIRE) >= SQ_SLOTS)
			;
		/* the free slot SQ_AHEAD on taken for writing, as the shim does */
		if (i + SQ_AHEAD - __atomic_load_n(&sq_cons.v, __ATOMIC_RELAXED) < SQ_SLOTS)
			sq_take(&sq_ring[((i + SQ_AHEAD) % SQ_SLOTS) * SQ_SLOT], SQ_W, lines);
		for (unsigned int k = 0; k < 3; k++)
			if (lines >> k & 1u)
				memset(slot + 64 * k, (int)(i & 0xff), 64);
		__atomic_store_n(&sq_prod.v, i + 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

/* One round in mode @p m with @p work multiply-adds per slot, moving the
 * slot lines in the mask @p lines (the caller pinned to its CPU): @return ns
 * per slot, 0: cannot pin. */
static double
sq_round(enum sq_mode m, unsigned int work, unsigned int lines)
{
	pthread_t t;
	uint64_t t0, seen = 0, sum = 0, x = 1;

	sq_prod.v = sq_cons.v = 0;
	if (!start_b(&t, sq_producer, &lines))
		return 0;
	t0 = bench_now_ns();
	for (uint64_t i = 0; i < sq_n; i++) {
		const uint8_t *slot = &sq_ring[(i % SQ_SLOTS) * SQ_SLOT];

		while (seen <= i)
			seen = __atomic_load_n(&sq_prod.v, __ATOMIC_ACQUIRE);
		if (seen > i + SQ_AHEAD)
			sq_take(&sq_ring[((i + SQ_AHEAD) % SQ_SLOTS) * SQ_SLOT], m, lines);
		/* the work depends on what the slot holds, as an engine's on its WQE */
		for (unsigned int k = 0; k < 3; k++)
			if (lines >> k & 1u)
				x += slot[64 * k];
		for (unsigned int k = 0; k < work; k++)
			x = x * 3 + k;
		sum += x;
		if ((i + 1) % SQ_RELEASE == 0) /* slots come back in batches, as ACKs complete them */
			__atomic_store_n(&sq_cons.v, i + 1, __ATOMIC_RELEASE);
	}
	double ns = (double)(bench_now_ns() - t0) / (double)sq_n;

	pthread_join(t, NULL);
	__asm__ volatile("" ::"r"(sum), "r"(x));
	return ns;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double
median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[n / 2];
}

int
main(int argc, char **argv)
{
	int cpu_a = 0, quick = 0, pos = 0;
	double r[ROUNDS];
	static const size_t sizes[] = { 64 * 1024, 1024 * 1024 };

	cpu_b = 1;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-q") == 0)
			quick = 1;
		else if (pos++ == 0)
			cpu_a = atoi(argv[i]);
		else
			cpu_b = atoi(argv[i]);
	}
	trips = quick ? 20000 : 1000000;
	for (int i = 0; i < ROUNDS; i++) {
		r[i] = pin(cpu_a) == 0 ? pingpong() : 0;
		if (r[i] == 0) {
			fprintf(stderr, "c2c_bench: cannot pin to CPUs %d and %d\n", cpu_a, cpu_b);
			return 1;
		}
	}
	double mid = median(r, ROUNDS); /* sorts r */

	printf("c2c cpus=%d,%d one_way_ns=%.1f (median of %d rounds; min %.1f max %.1f)\n", cpu_a,
	       cpu_b, mid, ROUNDS, r[0], r[ROUNDS - 1]);

	uint8_t *src = aligned_alloc(4096, sizes[1]), *dst = aligned_alloc(4096, sizes[1]);

	if (src == NULL || dst == NULL) {
		fprintf(stderr, "c2c_bench: out of memory\n");
		return 1;
	}
	memset(src, 0x5a, sizes[1]);
	memset(dst, 0xa5, sizes[1]);
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		for (int i = 0; i < ROUNDS; i++)
			r[i] = copy_rate(dst, src, sizes[s], quick ? (64u << 20) : (2ull << 30));
		printf("memcpy buffer=%zu piece=%d gbps=%.1f (median of %d rounds)\n", sizes[s],
		       PIECE, median(r, ROUNDS), ROUNDS);
	}
	free(src);
	free(dst);

	sq_n = quick ? 20000 : 2000000;
	for (int m = 0; m < SQ_MODES; m++) {
		for (int i = 0; i < ROUNDS; i++)
			r[i] = sq_round((enum sq_mode)m, SQ_WORK, SQ_LINES_ALL);
		printf("sq_ring cpus=%d,%d ahead=%u take=%s ns_per_slot=%.1f (median of %d rounds)\n",
		       cpu_a, cpu_b, SQ_AHEAD, sq_mode_name[m], median(r, ROUNDS), ROUNDS);
	}
	/* the hand-over alone: no work per slot, the lines taken ahead; all
	 * three lines, then the header and SGE lines (an RC WQE whose AV line
	 * stays with the application), then the header line only (one whose
	 * SGE is in its header: wqe.h WR_FLAG_HEAD_DATA) */
	static const struct { unsigned int mask; const char *name; } line_sets[] = {
		{ SQ_LINES_ALL, "0,1,2" }, { 0x5u, "0,2" }, { 0x1u, "0" },
	};
	for (size_t s = 0; s < sizeof(line_sets) / sizeof(line_sets[0]); s++) {
		for (int i = 0; i < ROUNDS; i++)
			r[i] = sq_round(SQ_T0, 0, line_sets[s].mask);
		double ns = median(r, ROUNDS); /* before the rate: median() sorts r */

		printf("sq_ring cpus=%d,%d ahead=%u take=%s work=0 lines=%s ns_per_slot=%.1f "
		       "mslots_per_s=%.2f (median of %d rounds)\n",
		       cpu_a, cpu_b, SQ_AHEAD, sq_mode_name[SQ_T0], line_sets[s].name, ns, 1e3 / ns,
		       ROUNDS);
	}
	return 0;
}
