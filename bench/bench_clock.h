/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The benchmarks' wall clock: CLOCK_MONOTONIC in nanoseconds.
 */
#ifndef BENCH_CLOCK_H
#define BENCH_CLOCK_H

#include <stdint.h>
#include <time.h>

/** @return CLOCK_MONOTONIC now, in ns. */
static inline uint64_t
bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif /* BENCH_CLOCK_H */
