/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Per-lcore hierarchical timer wheel (see timer_wheel.h and doc/timer-wheel.md).
 *
 * Ownership: every function here runs on the lcore that owns the wheel; there
 * is no shared state, hence no atomics and no memory-order edges.
 *
 * Storage is one array of 16-byte nodes: [0, capacity) are the timers, named by
 * their handle, and the nodes after them are the heads of circular doubly
 * linked lists (the 64 slots of every level and the due list). Lists link by
 * node index, so unlinking needs no knowledge of which list a timer is on:
 * O(1) cancel. After the nodes, 2 x capacity handles of scratch space sort the
 * timers expiring at one tick (8 bytes per timer, 24 in all).
 *
 * Invariants, with `done` the last tick whose slots have all been visited:
 *  - a linked timer with expiry <= done is on the due list, sorted by
 *    (expiry, handle); a linked timer with expiry > done is in a wheel slot;
 *  - the slot holding a timer is visited (at the start of its granule) at a
 *    tick > done and <= the timer's expiry, so visiting it early is harmless
 *    and late is impossible;
 *  - occupied[level] has bit i set iff slot i of that level is not empty;
 *  - next_visit <= the tick of the next slot visit (a lower bound; cancels
 *    may leave it early, which only costs a recomputation).
 */
#include "timer_wheel.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define NIL UINT32_MAX
#define SLOT_MASK (TIMER_WHEEL_SLOTS - 1)
#define N_SLOT_HEADS (TIMER_WHEEL_LEVELS * TIMER_WHEEL_SLOTS)
#define HEAD_DUE N_SLOT_HEADS          /* head offset past capacity */
#define N_HEADS (N_SLOT_HEADS + 1)

_Static_assert(TIMER_WHEEL_SLOTS == 64, "one uint64_t occupancy bitmap per level");
_Static_assert(TIMER_WHEEL_LEVELS * TIMER_WHEEL_SLOT_BITS + TIMER_WHEEL_SLOT_BITS < 62,
	       "parked granule index << shift must not overflow below TIMER_WHEEL_EXPIRY_MAX");
_Static_assert(TIMER_WHEEL_CAPACITY_MAX + N_HEADS < NIL, "node indices fit in uint32_t");

struct tw_node {
	uint64_t expiry;  /* ticks; meaningless on list heads */
	uint32_t next;    /* NIL when the timer is disarmed */
	uint32_t prev;
};

struct timer_wheel {
	uint64_t done;                               /* every tick <= done visited */
	uint64_t next_visit;                         /* lower bound of the next visit tick */
	uint64_t occupied[TIMER_WHEEL_LEVELS];       /* non-empty slots per level */
	uint32_t capacity;
	uint32_t refile_budget;
	struct timer_wheel_stats stats;
	struct tw_node node[];                       /* capacity timers + N_HEADS heads */
};

static inline unsigned
level_shift(unsigned level)
{
	return level * TIMER_WHEEL_SLOT_BITS;
}

static inline uint32_t
slot_head(const struct timer_wheel *w, unsigned level, unsigned index)
{
	return w->capacity + level * TIMER_WHEEL_SLOTS + index;
}

static inline bool
node_linked(const struct tw_node *n)
{
	return n->next != NIL;
}

static inline bool
list_empty(const struct timer_wheel *w, uint32_t head)
{
	return w->node[head].next == head;
}

/* Order of delivery: by expiry, ties by handle. */
static inline bool
node_before(const struct timer_wheel *w, uint32_t a, uint32_t b)
{
	uint64_t ea = w->node[a].expiry, eb = w->node[b].expiry;

	return ea < eb || (ea == eb && a < b);
}

static inline void
link_after(struct timer_wheel *w, uint32_t pos, uint32_t i)
{
	uint32_t next = w->node[pos].next;

	w->node[i].prev = pos;
	w->node[i].next = next;
	w->node[next].prev = i;
	w->node[pos].next = i;
}

static inline void
link_tail(struct timer_wheel *w, uint32_t head, uint32_t i)
{
	link_after(w, w->node[head].prev, i);
}

/* Unlink timer i; if that empties a slot, clear the slot's occupancy bit. */
static inline void
unlink_node(struct timer_wheel *w, uint32_t i)
{
	uint32_t prev = w->node[i].prev, next = w->node[i].next;

	w->node[prev].next = next;
	w->node[next].prev = prev;
	w->node[i].next = NIL;
	/* Only a head is both neighbours of the last timer of its list. */
	if (prev == next) {
		uint32_t slot = prev - w->capacity;

		if (slot < N_SLOT_HEADS)
			w->occupied[slot / TIMER_WHEEL_SLOTS] &= ~(UINT64_C(1) << (slot & SLOT_MASK));
	}
}

static inline void
link_slot(struct timer_wheel *w, unsigned level, unsigned index, uint32_t i)
{
	link_tail(w, slot_head(w, level, index), i);
	w->occupied[level] |= UINT64_C(1) << index;
}

/*
 * File timer i (expiry > base) in the finest level whose slot is visited after
 * base and no later than the expiry: level k qualifies when the expiry's
 * granule (expiry >> 6k) is 1..63 granules past base's, so the slot index
 * cannot alias another granule before it is visited. With d = expiry - base,
 * only k = floor(log64 d) or the level above can be the finest one. Beyond the
 * top level, park in its farthest slot (visited before the expiry) to be
 * re-filed from there.
 */
static void
place(struct timer_wheel *w, uint32_t i, uint64_t base)
{
	uint64_t expiry = w->node[i].expiry;

	assert(expiry > base);
	unsigned level = (63u - (unsigned)__builtin_clzll(expiry - base)) / TIMER_WHEEL_SLOT_BITS;
	uint64_t granule;

	if (level < TIMER_WHEEL_LEVELS &&
	    (expiry >> level_shift(level)) - (base >> level_shift(level)) >= TIMER_WHEEL_SLOTS)
		level++;
	if (level < TIMER_WHEEL_LEVELS) {
		granule = expiry >> level_shift(level);
	} else {
		level = TIMER_WHEEL_LEVELS - 1;
		granule = (base >> level_shift(level)) + TIMER_WHEEL_SLOTS;
	}
	link_slot(w, level, granule & SLOT_MASK, i);
	uint64_t visit = granule << level_shift(level);
	if (visit < w->next_visit)
		w->next_visit = visit;
}

/* Put an already-due timer on the due list at its (expiry, handle) place. */
static void
due_insert(struct timer_wheel *w, uint32_t i)
{
	uint32_t head = w->capacity + HEAD_DUE;
	uint32_t pos = w->node[head].prev;

	/* Normally the newest due timer is the latest: O(1) from the tail. */
	while (pos != head && node_before(w, i, pos))
		pos = w->node[pos].prev;
	link_after(w, pos, i);
}

/* Scratch space for sorting a tick's expiries: 2 x capacity handles after the nodes. */
static inline uint32_t *
sort_area(struct timer_wheel *w)
{
	return (uint32_t *)&w->node[w->capacity + N_HEADS];
}

/*
 * Sort @p m handles ascending; @p tmp has room for @p m. Already sorted input
 * (timers armed in handle order) costs one pass; small batches an insertion
 * sort; big ones an LSD radix sort over the bytes that differ. Returns the
 * array holding the result (@p keys or @p tmp).
 */
static uint32_t *
sort_handles(uint32_t *keys, uint32_t *tmp, uint32_t m)
{
	uint32_t i, unsorted = 0, all_or = 0, all_and = UINT32_MAX;

	for (i = 1; i < m; i++)
		unsorted |= keys[i - 1] > keys[i];
	if (!unsorted)
		return keys;
	if (m <= 32) {
		for (i = 1; i < m; i++) {
			uint32_t key = keys[i], j = i;

			for (; j > 0 && keys[j - 1] > key; j--)
				keys[j] = keys[j - 1];
			keys[j] = key;
		}
		return keys;
	}
	for (i = 0; i < m; i++) {
		all_or |= keys[i];
		all_and &= keys[i];
	}
	for (unsigned shift = 0; shift < 32; shift += 8) {
		uint32_t count[256] = { 0 };

		if ((((all_or ^ all_and) >> shift) & 0xff) == 0)
			continue; /* this byte is the same in every key */
		for (i = 0; i < m; i++)
			count[(keys[i] >> shift) & 0xff]++;
		for (uint32_t b = 0, sum = 0; b < 256; b++) {
			uint32_t c = count[b];

			count[b] = sum;
			sum += c;
		}
		for (i = 0; i < m; i++)
			tmp[count[(keys[i] >> shift) & 0xff]++] = keys[i];
		uint32_t *swap = keys;
		keys = tmp;
		tmp = swap;
	}
	return keys;
}

/* Earliest visit tick > done of any non-empty slot, TIMER_WHEEL_NEVER if none. */
static uint64_t
compute_next_visit(const struct timer_wheel *w)
{
	uint64_t best = TIMER_WHEEL_NEVER;

	for (unsigned level = 0; level < TIMER_WHEEL_LEVELS; level++) {
		uint64_t bits = w->occupied[level];

		if (bits == 0)
			continue;
		/* First occupied slot at or after the granule following done's. */
		uint64_t granule = (w->done >> level_shift(level)) + 1;
		unsigned rot = granule & SLOT_MASK;
		uint64_t ahead = (bits >> rot) | (bits << ((TIMER_WHEEL_SLOTS - rot) & SLOT_MASK));
		uint64_t visit = (granule + (unsigned)__builtin_ctzll(ahead)) << level_shift(level);

		if (visit < best)
			best = visit;
	}
	return best;
}

/*
 * Visit every slot due at tick t (> done), coarse levels first: coarse timers
 * are re-filed relative to t (those expiring at t join level 0's slot for t),
 * then level 0's slot moves its due timers to the due list, sorted. Returns
 * false if the re-file budget ran out; the rest of tick t is then visited by
 * the next poll (done becomes t - 1, under which every placement made relative
 * to t stays valid).
 */
static bool
visit_tick(struct timer_wheel *w, uint64_t t, uint32_t *budget)
{
	for (unsigned level = TIMER_WHEEL_LEVELS - 1; level > 0; level--) {
		unsigned shift = level_shift(level);
		unsigned index = (t >> shift) & SLOT_MASK;

		if ((t & ((UINT64_C(1) << shift) - 1)) != 0 || !(w->occupied[level] >> index & 1))
			continue;
		uint32_t head = slot_head(w, level, index);
		/* Parked timers may come back to this very slot: stop at the old tail. */
		uint32_t last = w->node[head].prev;
		uint32_t i;
		do {
			if (*budget == 0) {
				w->stats.budget_stops++;
				return false;
			}
			(*budget)--;
			i = w->node[head].next;
			unlink_node(w, i);
			w->stats.refiled++;
			if (w->node[i].expiry <= t)
				link_slot(w, 0, t & SLOT_MASK, i);
			else
				place(w, i, t);
		} while (i != last);
	}

	unsigned index = t & SLOT_MASK;
	if (w->occupied[0] >> index & 1) {
		uint32_t head = slot_head(w, 0, index);
		uint32_t *due = sort_area(w), *tmp = due + w->capacity, m = 0;

		/* Re-filed level-0 timers land 1..63 ticks ahead: never this slot. */
		while (!list_empty(w, head)) {
			uint32_t i = w->node[head].next;

			unlink_node(w, i);
			if (w->node[i].expiry <= t) {
				/* Filed in a slot visited at t and no later than its expiry. */
				assert(w->node[i].expiry == t);
				due[m++] = i;
			} else {
				place(w, i, t); /* re-armed later while filed here */
			}
		}
		/* All expire at t: (expiry, handle) order is handle order. */
		due = sort_handles(due, tmp, m);
		for (uint32_t k = 0; k < m; k++)
			link_tail(w, w->capacity + HEAD_DUE, due[k]);
	}
	return true;
}

static uint32_t
drain_due(struct timer_wheel *w, uint32_t *out, uint32_t max)
{
	uint32_t head = w->capacity + HEAD_DUE;
	uint32_t n = 0;

	while (n < max && !list_empty(w, head)) {
		uint32_t i = w->node[head].next;

		unlink_node(w, i);
		out[n++] = i;
	}
	w->stats.armed -= n;
	w->stats.expired += n;
	return n;
}

size_t
timer_wheel_memsize(uint32_t capacity)
{
	if (capacity == 0 || capacity > TIMER_WHEEL_CAPACITY_MAX)
		return 0;
	return sizeof(struct timer_wheel) + ((size_t)capacity + N_HEADS) * sizeof(struct tw_node) +
	       2 * (size_t)capacity * sizeof(uint32_t);
}

struct timer_wheel *
timer_wheel_init(void *mem, size_t size, const struct timer_wheel_config *cfg)
{
	struct timer_wheel *w = mem;

	if (mem == NULL || cfg == NULL || ((uintptr_t)mem & 7) != 0 ||
	    cfg->now > TIMER_WHEEL_EXPIRY_MAX)
		return NULL;
	size_t need = timer_wheel_memsize(cfg->capacity);
	if (need == 0 || size < need)
		return NULL;

	memset(w, 0, sizeof(*w));
	w->done = cfg->now;
	w->next_visit = TIMER_WHEEL_NEVER;
	w->capacity = cfg->capacity;
	w->refile_budget = cfg->refile_budget != 0 ? cfg->refile_budget : TIMER_WHEEL_REFILE_BUDGET_DEFAULT;
	for (uint32_t i = 0; i < cfg->capacity; i++)
		w->node[i] = (struct tw_node){ .expiry = 0, .next = NIL, .prev = NIL };
	for (uint32_t h = cfg->capacity; h < cfg->capacity + N_HEADS; h++)
		w->node[h] = (struct tw_node){ .expiry = 0, .next = h, .prev = h };
	return w;
}

struct timer_wheel *
timer_wheel_create(const struct timer_wheel_config *cfg)
{
	size_t size = cfg != NULL ? timer_wheel_memsize(cfg->capacity) : 0;
	void *mem;

	if (size == 0 || posix_memalign(&mem, 64, size) != 0)
		return NULL;
	struct timer_wheel *w = timer_wheel_init(mem, size, cfg);
	if (w == NULL)
		free(mem);
	return w;
}

void
timer_wheel_destroy(struct timer_wheel *w)
{
	free(w);
}

int
timer_wheel_arm(struct timer_wheel *w, uint32_t handle, uint64_t expiry)
{
	if (handle >= w->capacity)
		return -EINVAL;
	if (expiry > TIMER_WHEEL_EXPIRY_MAX)
		return -ERANGE;

	struct tw_node *n = &w->node[handle];
	if (node_linked(n)) {
		/* In a slot visited no later than its old expiry: keep it there. */
		if (n->expiry > w->done && expiry >= n->expiry) {
			n->expiry = expiry;
			w->stats.lazy_rearms++;
			return 0;
		}
		unlink_node(w, handle);
	} else {
		w->stats.armed++;
	}
	n->expiry = expiry;
	if (expiry <= w->done)
		due_insert(w, handle);
	else
		place(w, handle, w->done);
	return 0;
}

int
timer_wheel_cancel(struct timer_wheel *w, uint32_t handle)
{
	if (handle >= w->capacity)
		return -EINVAL;
	if (!node_linked(&w->node[handle]))
		return 0;
	unlink_node(w, handle);
	w->stats.armed--;
	return 1;
}

uint32_t
timer_wheel_poll(struct timer_wheel *w, uint64_t now, uint32_t *out, uint32_t max)
{
	uint32_t budget = w->refile_budget;
	uint32_t n = 0;

	if (now > TIMER_WHEEL_EXPIRY_MAX)
		now = TIMER_WHEEL_EXPIRY_MAX;
	for (;;) {
		n += drain_due(w, out + n, max - n);
		if (n == max || now <= w->done)
			break;
		/* Due list empty, ticks (done, now] left to visit. */
		if (now < w->next_visit) {
			w->done = now;
			break;
		}
		uint64_t t = compute_next_visit(w);
		w->next_visit = t;
		if (t > now) {
			w->done = now;
			break;
		}
		if (!visit_tick(w, t, &budget)) {
			w->done = t - 1;
			break;
		}
		w->done = t;
	}
	return n;
}

uint64_t
timer_wheel_next_deadline(const struct timer_wheel *w)
{
	if (!list_empty(w, w->capacity + HEAD_DUE))
		return w->done;
	return compute_next_visit(w);
}

uint64_t
timer_wheel_now(const struct timer_wheel *w)
{
	return w->done;
}

bool
timer_wheel_is_armed(const struct timer_wheel *w, uint32_t handle)
{
	return handle < w->capacity && node_linked(&w->node[handle]);
}

uint64_t
timer_wheel_expiry(const struct timer_wheel *w, uint32_t handle)
{
	if (!timer_wheel_is_armed(w, handle))
		return TIMER_WHEEL_NEVER;
	return w->node[handle].expiry;
}

uint32_t
timer_wheel_capacity(const struct timer_wheel *w)
{
	return w->capacity;
}

struct timer_wheel_stats
timer_wheel_stats(const struct timer_wheel *w)
{
	return w->stats;
}

#define NS_PER_S UINT64_C(1000000000)

int
timer_wheel_clock_init(struct timer_wheel_clock *clock, uint64_t cycles_hz, uint32_t tick_ns)
{
	timer_wheel_u128_t cycles_per_tick_x1e9 = (timer_wheel_u128_t)cycles_hz * tick_ns;

	if (clock == NULL || cycles_hz == 0 || cycles_hz > (UINT64_C(1) << 40) ||
	    cycles_per_tick_x1e9 <= NS_PER_S)
		return -EINVAL;
	clock->tick_mult = (uint64_t)((((timer_wheel_u128_t)NS_PER_S << 64) + cycles_per_tick_x1e9 - 1) /
				      cycles_per_tick_x1e9);
	clock->cycles_per_ns = (uint64_t)((((timer_wheel_u128_t)cycles_hz << 32) + NS_PER_S - 1) / NS_PER_S);
	clock->cycles_hz = cycles_hz;
	clock->tick_ns = tick_ns;
	return 0;
}

uint64_t
timer_wheel_clock_cycles_at(const struct timer_wheel_clock *clock, uint64_t ticks)
{
	/* ticks(c) >= t  <=>  c * m >= t * 2^64  <=>  c >= ceil(t * 2^64 / m). */
	timer_wheel_u128_t c = (((timer_wheel_u128_t)ticks << 64) + clock->tick_mult - 1) / clock->tick_mult;

	return c > UINT64_MAX ? UINT64_MAX : (uint64_t)c;
}
