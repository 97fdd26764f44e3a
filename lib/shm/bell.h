/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Doorbells in shared memory: a bitmap of SHM_BELLS bells plus a summary
 * word, so that a consumer watching many rings (the daemon's idle QPs)
 * reads one cache line for all of them instead of one producer index
 * each.
 *
 * A producer that finds SPSC_RING_WANT_BELL after publishing
 * (spsc_ring_publish_bell(), queue.h) rings bell ring->bell: it sets the
 * bell's bit in word[bell / 64], then bit bell / 64 of the summary, both
 * with release. The consumer takes the summary with an atomic exchange
 * (acquire), then each word it names the same way: a bit set after the
 * exchange of its word is found the next time, because its summary bit
 * is set after it; a bit whose word was taken before its summary bit was
 * set costs one empty look. Records published before the ring are
 * visible to a consumer that took the bit (release/acquire).
 *
 * The consumer must not trust the producer: any bit may be set, so a set
 * bit only says "look at the rings with this bell" (the bell number modulo
 * SHM_BELLS), never which ring.
 */
#ifndef SHM_BELL_H
#define SHM_BELL_H

#include <stdalign.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SHM_BELL_WORDS 64u                    /**< one summary bit per word */
#define SHM_BELLS (SHM_BELL_WORDS * 64u)      /**< bells per bitmap (4096) */

/** The bitmap: a summary line, then the words (8 lines). */
struct shm_bells {
	alignas(64) uint64_t summary;         /**< bit i: word[i] may have bits set */
	uint64_t reserved[7];
	alignas(64) uint64_t word[SHM_BELL_WORDS];
};
_Static_assert(sizeof(struct shm_bells) == 9 * 64, "a summary line and 8 lines of bells");

/** Producer: ring bell @p bell (taken modulo SHM_BELLS). */
static inline void
shm_bell_ring(struct shm_bells *b, uint32_t bell)
{
	bell &= SHM_BELLS - 1;
	__atomic_fetch_or(&b->word[bell / 64], (uint64_t)1 << (bell % 64), __ATOMIC_RELEASE);
	__atomic_fetch_or(&b->summary, (uint64_t)1 << (bell / 64), __ATOMIC_RELEASE);
}

/** Consumer: whether any bell may be rung (one relaxed load: the cheap check of every poll). */
static inline int
shm_bells_any(const struct shm_bells *b)
{
	return __atomic_load_n(&b->summary, __ATOMIC_RELAXED) != 0;
}

/** Consumer: take the summary (exchange with 0, acquire). */
static inline uint64_t
shm_bells_take_summary(struct shm_bells *b)
{
	return __atomic_exchange_n(&b->summary, 0, __ATOMIC_ACQUIRE);
}

/** Consumer: take word @p i (< SHM_BELL_WORDS) (exchange with 0, acquire). */
static inline uint64_t
shm_bells_take_word(struct shm_bells *b, uint32_t i)
{
	return __atomic_exchange_n(&b->word[i % SHM_BELL_WORDS], 0, __ATOMIC_ACQUIRE);
}

#ifdef __cplusplus
}
#endif
#endif /* SHM_BELL_H */
