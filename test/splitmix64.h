/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * splitmix64 (Steele, Lea, Flood 2014): the small seeded generator the timer
 * tests and bench/timer_bench.c share, so that one seed gives one sequence
 * in both. Not for anything that needs unpredictability.
 */
#ifndef TEST_SPLITMIX64_H
#define TEST_SPLITMIX64_H

#include <stdint.h>

/** Advance @p state and return its next 64-bit value. */
static inline uint64_t
splitmix64_next(uint64_t *state)
{
	uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

#endif
