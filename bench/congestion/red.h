/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The testbed switch's marking rule (ecn_switch.c), shared with its model
 * (ccsim.c) so that the two cannot drift apart.
 */
#ifndef BENCH_CONGESTION_RED_H
#define BENCH_CONGESTION_RED_H

#include <stdbool.h>
#include <stdint.h>

/* xorshift64: the switch's marking draws (seeded by the caller). */
static inline uint64_t
red_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/*
 * CE for a frame entering a queue of @p q bytes (RED-like): never at or
 * below @p kmin, always from @p kmax on, with a probability rising linearly
 * to @p pmax_pct % between. Draws a number only between the two.
 */
static inline bool
red_mark(uint64_t *rng, uint64_t q, uint32_t kmin, uint32_t kmax, uint32_t pmax_pct)
{
	return q > kmin &&
	       (q >= kmax || red_rand(rng) % ((uint64_t)(kmax - kmin) * 100) < (q - kmin) * pmax_pct);
}

#endif
