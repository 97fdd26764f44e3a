/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * lib/timer: the per-lcore hierarchical timer wheel of the transport engine.
 *
 * One wheel per lcore, touched only by the lcore that owns it: no locks, no
 * atomics. Timers are named by a 32-bit handle in [0, capacity) chosen by the
 * caller, normally `qp_index << TIMER_WHEEL_TIMER_ID_BITS | timer_id`
 * (timer_wheel_handle()); nothing is ever referred to by pointer across time.
 * Every handle owns one preallocated slot, so arming never allocates and the
 * wheel never grows after timer_wheel_init().
 *
 * Time is an unsigned tick count chosen by the caller (a few microseconds per
 * tick; TIMER_WHEEL_TICK_NS_DEFAULT is 1 us). The wheel never reads a clock:
 * timer_wheel_poll() is given `now`, so tests are deterministic. struct
 * timer_wheel_clock converts a free-running cycle counter (the daemon passes
 * rte_rdtsc(); 1 GHz "cycles" are nanoseconds) to ticks so that a timer never
 * fires before its deadline.
 *
 * Contract, for a wheel polled at least once per tick and below the per-poll
 * caps:
 *  - a timer armed with expiry E (ticks) is delivered by the first poll whose
 *    `now` >= E: never earlier, never a tick later;
 *  - expiries are delivered in (expiry, handle) order;
 *  - arm, cancel and re-arm are O(1); re-arming an armed timer to a later
 *    expiry only stores the new expiry (the ACK timer is re-armed on every ACK).
 *
 * Layout (doc/timer-wheel.md has the full story): TIMER_WHEEL_LEVELS levels of
 * 64 slots, level k has a granularity of 64^k ticks, and a 64-bit occupancy
 * bitmap per level finds the next non-empty slot with one rotate and one
 * count-trailing-zeros. A timer is filed in the finest level whose slot is
 * visited no later than its expiry; when a coarse slot's time comes, its
 * timers are re-filed one by one into finer levels (never rounded), a bounded
 * number of them per poll, so nothing cascades in a storm and nothing loses
 * precision. Timers beyond the top level's reach are parked in the farthest
 * top-level slot and re-filed when it comes up, so any expiry up to
 * TIMER_WHEEL_EXPIRY_MAX is exact (the 8,796 s maximum local ACK timeout
 * plus the 655 ms maximum RNR delay is 2^33 ticks of 1 us, well inside).
 */
#ifndef TIMER_WHEEL_H
#define TIMER_WHEEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @name Wheel geometry @{ */
#define TIMER_WHEEL_SLOT_BITS 6u                               /**< log2(slots per level) */
#define TIMER_WHEEL_SLOTS (1u << TIMER_WHEEL_SLOT_BITS)        /**< slots per level (one 64-bit bitmap) */
#define TIMER_WHEEL_LEVELS 6u                                  /**< levels; reach 2^36 ticks before parking */
#define TIMER_WHEEL_TICK_NS_DEFAULT 1000u                      /**< suggested tick: 1 us */
#define TIMER_WHEEL_EXPIRY_MAX (UINT64_C(1) << 62)             /**< largest expiry/now in ticks */
#define TIMER_WHEEL_NEVER UINT64_MAX                           /**< "no expiry" from the query functions */
#define TIMER_WHEEL_CAPACITY_MAX (UINT32_C(1) << 30)           /**< largest number of handles */
#define TIMER_WHEEL_REFILE_BUDGET_DEFAULT 4096u                /**< coarse-slot re-files per poll */
/** @} */

/** @name Handles: owner (QP) index and per-owner timer id @{ */
#define TIMER_WHEEL_TIMER_ID_BITS 2u                                   /**< timer ids per owner: 4 */
#define TIMER_WHEEL_TIMERS_PER_OWNER (1u << TIMER_WHEEL_TIMER_ID_BITS) /**< capacity per owner */

/** Handle of timer @p timer_id (< TIMER_WHEEL_TIMERS_PER_OWNER) of owner @p owner_index. */
static inline uint32_t
timer_wheel_handle(uint32_t owner_index, uint32_t timer_id)
{
	return owner_index << TIMER_WHEEL_TIMER_ID_BITS | timer_id;
}

/** Owner (QP) index of @p handle. */
static inline uint32_t
timer_wheel_handle_owner(uint32_t handle)
{
	return handle >> TIMER_WHEEL_TIMER_ID_BITS;
}

/** Timer id of @p handle within its owner. */
static inline uint32_t
timer_wheel_handle_timer_id(uint32_t handle)
{
	return handle & (TIMER_WHEEL_TIMERS_PER_OWNER - 1);
}
/** @} */

/** Opaque wheel; its memory is sized by timer_wheel_memsize(). */
struct timer_wheel;

/** Parameters of timer_wheel_init() / timer_wheel_create(). */
struct timer_wheel_config {
	uint32_t capacity;      /**< handles [0, capacity), 1..TIMER_WHEEL_CAPACITY_MAX */
	uint32_t refile_budget; /**< coarse-slot re-files per poll; 0 = TIMER_WHEEL_REFILE_BUDGET_DEFAULT */
	uint64_t now;           /**< current time in ticks; expiries <= now are due at once */
};

/** Counters of one wheel (owner-only, read them on the owning lcore). */
struct timer_wheel_stats {
	uint64_t armed;         /**< timers armed now (including due, undelivered ones) */
	uint64_t expired;       /**< expiries delivered by timer_wheel_poll() */
	uint64_t refiled;       /**< timers moved from a coarse slot to a finer one */
	uint64_t lazy_rearms;   /**< re-arms to a later expiry done by storing the expiry */
	uint64_t budget_stops;  /**< polls that stopped at the re-file budget */
};

/**
 * Bytes of memory a wheel of @p capacity handles needs (for timer_wheel_init()).
 *
 * @return the size, or 0 if @p capacity is 0 or above TIMER_WHEEL_CAPACITY_MAX.
 */
size_t timer_wheel_memsize(uint32_t capacity);

/**
 * Initialise a wheel in caller-provided memory (e.g. rte_zmalloc_socket() on
 * the owning lcore's socket). All timers start disarmed.
 *
 * @param mem   at least timer_wheel_memsize(cfg->capacity) bytes, 8-byte aligned.
 * @param size  size of @p mem in bytes.
 * @param cfg   capacity, re-file budget and initial time.
 * @return the wheel (== @p mem), or NULL if a parameter is invalid.
 */
struct timer_wheel *timer_wheel_init(void *mem, size_t size, const struct timer_wheel_config *cfg);

/**
 * Allocate (with malloc) and initialise a wheel.
 *
 * @return the wheel, or NULL if @p cfg is invalid or memory is short.
 */
struct timer_wheel *timer_wheel_create(const struct timer_wheel_config *cfg);

/** Free a wheel made by timer_wheel_create(); NULL is a no-op. */
void timer_wheel_destroy(struct timer_wheel *w);

/**
 * Arm timer @p handle to expire at tick @p expiry, or move it if armed.
 *
 * O(1). An expiry <= the wheel's time (timer_wheel_now()) is due at once and
 * delivered by the next poll (in order: it walks back past due, undelivered
 * timers that expire later, normally none). Re-arming an armed timer to a later (or equal)
 * expiry only records the new expiry; the timer is re-filed when the slot it
 * sits in comes up. Re-arming to an earlier expiry unlinks and re-files it.
 * Re-arming a due but undelivered timer takes it back from the due list.
 *
 * @return 0, -EINVAL if @p handle >= capacity, -ERANGE if @p expiry >
 *         TIMER_WHEEL_EXPIRY_MAX (the timer is left as it was).
 */
int timer_wheel_arm(struct timer_wheel *w, uint32_t handle, uint64_t expiry);

/**
 * Disarm timer @p handle. O(1). A due timer not yet delivered by poll is
 * withdrawn and will not be delivered.
 *
 * @return 1 if it was armed, 0 if it was not, -EINVAL if @p handle >= capacity.
 */
int timer_wheel_cancel(struct timer_wheel *w, uint32_t handle);

/**
 * Advance the wheel to @p now and deliver expired timers.
 *
 * Writes the handles of up to @p max timers whose expiry is <= @p now into
 * @p out, in (expiry, handle) order, and disarms them. Expiries beyond @p max
 * stay due and come first in the next poll. At most the configured re-file
 * budget of coarse-slot timers is re-filed per call; past it the poll returns
 * early (counted in budget_stops) and the next poll goes on. A @p now earlier
 * than the wheel's time is treated as the wheel's time; a @p now above
 * TIMER_WHEEL_EXPIRY_MAX is clamped to it.
 *
 * @return the number of handles written to @p out (0..max).
 */
uint32_t timer_wheel_poll(struct timer_wheel *w, uint64_t now, uint32_t *out, uint32_t max);

/**
 * Earliest tick at which timer_wheel_poll() can have work: no armed timer
 * expires before it. It is the exact earliest expiry when that timer sits in
 * the finest level, otherwise the start of the coarse slot holding it (where a
 * poll re-files it and the next call is exact or finer). An idle lcore may
 * sleep until then. Returns timer_wheel_now() if due timers await delivery and
 * TIMER_WHEEL_NEVER if nothing is armed.
 */
uint64_t timer_wheel_next_deadline(const struct timer_wheel *w);

/** The wheel's time: every tick <= it has been processed. */
uint64_t timer_wheel_now(const struct timer_wheel *w);

/** Whether @p handle is armed (false for an invalid handle). */
bool timer_wheel_is_armed(const struct timer_wheel *w, uint32_t handle);

/** Expiry tick of @p handle, or TIMER_WHEEL_NEVER if disarmed or invalid. */
uint64_t timer_wheel_expiry(const struct timer_wheel *w, uint32_t handle);

/** Capacity given at init. */
uint32_t timer_wheel_capacity(const struct timer_wheel *w);

/** A copy of the wheel's counters. */
struct timer_wheel_stats timer_wheel_stats(const struct timer_wheel *w);

/**
 * @name Cycle counter to tick conversion
 *
 * ticks(c) = floor(c * m / 2^64) with m = ceil(2^64 / cycles_per_tick) is
 * monotonic and within one tick of the exact quotient. A deadline D in cycles
 * becomes the tick ticks(D - 1) + 1, the first tick whose every cycle is >= D,
 * so `ticks(now) >= expiry` implies `now >= D`: no timer fires early, whatever
 * the rounding. Delays are converted to cycles rounding up.
 * @{
 */
struct timer_wheel_clock {
	uint64_t tick_mult;      /**< m above: 2^64 * 1e9 / (cycles_hz * tick_ns), rounded up */
	uint64_t cycles_per_ns;  /**< cycles per ns in 32.32 fixed point, rounded up */
	uint64_t cycles_hz;      /**< cycle counter frequency (1e9 for nanoseconds) */
	uint32_t tick_ns;        /**< tick length in ns */
};

/**
 * Set up @p clock for a counter of @p cycles_hz (rte_get_tsc_hz(), or
 * 1000000000 to feed nanoseconds) and ticks of @p tick_ns nanoseconds.
 *
 * @return 0, or -EINVAL unless a tick is longer than one cycle and
 *         cycles_hz <= 2^40.
 */
int timer_wheel_clock_init(struct timer_wheel_clock *clock, uint64_t cycles_hz, uint32_t tick_ns);

__extension__ typedef unsigned __int128 timer_wheel_u128_t; /**< 64x64->128 products */

/** Ticks at counter value @p cycles (pass this as `now` to timer_wheel_poll()). */
static inline uint64_t
timer_wheel_clock_ticks(const struct timer_wheel_clock *clock, uint64_t cycles)
{
	return (uint64_t)(((timer_wheel_u128_t)cycles * clock->tick_mult) >> 64);
}

/** @p ns nanoseconds in cycles, rounded up (saturates at UINT64_MAX). */
static inline uint64_t
timer_wheel_clock_ns_to_cycles(const struct timer_wheel_clock *clock, uint64_t ns)
{
	timer_wheel_u128_t c = ((timer_wheel_u128_t)ns * clock->cycles_per_ns + UINT32_MAX) >> 32;

	return c > UINT64_MAX ? UINT64_MAX : (uint64_t)c;
}

/** Expiry tick for a deadline at counter value @p deadline_cycles (never early). */
static inline uint64_t
timer_wheel_clock_deadline_ticks(const struct timer_wheel_clock *clock, uint64_t deadline_cycles)
{
	return deadline_cycles == 0 ? 0 : timer_wheel_clock_ticks(clock, deadline_cycles - 1) + 1;
}

/**
 * Expiry tick for a timeout of @p delay_ns from counter value @p now_cycles.
 * Returns TIMER_WHEEL_NEVER if the deadline overflows the counter, which
 * timer_wheel_arm() rejects with -ERANGE.
 */
static inline uint64_t
timer_wheel_clock_expiry(const struct timer_wheel_clock *clock, uint64_t now_cycles, uint64_t delay_ns)
{
	uint64_t delay = timer_wheel_clock_ns_to_cycles(clock, delay_ns);

	if (now_cycles > UINT64_MAX - delay)
		return TIMER_WHEEL_NEVER;
	return timer_wheel_clock_deadline_ticks(clock, now_cycles + delay);
}

/**
 * First counter value at which timer_wheel_clock_ticks() reaches @p ticks
 * (to sleep until timer_wheel_next_deadline()). Not for the hot path.
 */
uint64_t timer_wheel_clock_cycles_at(const struct timer_wheel_clock *clock, uint64_t ticks);
/** @} */

#ifdef __cplusplus
}
#endif

#endif /* TIMER_WHEEL_H */
