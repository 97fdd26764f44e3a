/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Single-producer single-consumer ring of fixed-size records, usable in
 * shared memory between two processes (SQ, RQ, SRQ and CQ between the verbs
 * shim and the daemon).
 *
 * Layout: a header of three cache lines (producer index, consumer index,
 * geometry with the consumer's rarely written bell request) followed by
 * `size` slots of `elem_size` bytes. The bell request is not on the consumer
 * index's line: the producer reads it after every publish, and that line is
 * written on every release. Indices
 * are free-running 32-bit counters; slot = index & mask; the ring holds
 * prod - cons records. No pointers are stored, so each process may map the
 * ring at a different address.
 *
 * Memory ordering (the C11 model of DPDK rte_ring_c11 and rdma-core rxe_queue.h):
 * - each side reads its OWN index relaxed (only it writes it);
 * - each side reads the OTHER index with acquire, pairing with the other
 *   side's release store, so the slot contents written (producer) or read
 *   (consumer) before that store are complete;
 * - each side publishes its own index with release after touching the slots.
 *
 * The consumer must not trust a producer in another process: counts are
 * clamped to the ring size, so a corrupt index can cause garbage records
 * (which the consumer validates) but never an access outside the ring.
 */
#ifndef QP_QUEUE_H
#define QP_QUEUE_H

#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SPSC_RING_ALIGN 64

/** spsc_ring.cons_flags: the consumer no longer polls prod; ring bell `bell` after publishing. */
#define SPSC_RING_WANT_BELL 1u
/**
 * How long a consumer that set SPSC_RING_WANT_BELL keeps reading the
 * producer index (and once after): longer than a store buffer takes to
 * drain, so a publish whose flag load passed its index store is seen
 * (spsc_ring_publish_bell(), spsc_ring_want_bell()).
 */
#define SPSC_RING_BELL_GRACE_NS 50000u

/** Ring header; the slots follow it. */
struct spsc_ring {
	alignas(SPSC_RING_ALIGN) uint32_t prod; /**< written by the producer only */
	alignas(SPSC_RING_ALIGN) uint32_t cons; /**< written by the consumer only */
	alignas(SPSC_RING_ALIGN) uint32_t size; /**< slots, a power of two (read-only after init) */
	uint32_t mask;                          /**< size - 1 */
	uint32_t elem_size;                     /**< bytes per slot, a multiple of 8 */
	uint32_t bell;                          /**< the bell the producer rings (bell.h), set by the consumer */
	uint32_t cons_flags;                    /**< SPSC_RING_WANT_BELL; the consumer writes it, on idling */
	alignas(SPSC_RING_ALIGN) unsigned char slots[];
};

/**
 * @return bytes needed for a ring of @p size slots of @p elem_size bytes,
 * or 0 if @p size is not a power of two, or @p elem_size is not a positive
 * multiple of 8.
 */
static inline size_t
spsc_ring_bytes(uint32_t size, uint32_t elem_size)
{
	if (size == 0 || (size & (size - 1)) != 0 || size > (1u << 30) ||
	    elem_size == 0 || (elem_size & 7) != 0)
		return 0;
	return sizeof(struct spsc_ring) + (size_t)size * elem_size;
}

/**
 * Initialise an empty ring in @p mem (spsc_ring_bytes() bytes, 64-byte aligned).
 * Precondition: neither side uses the ring yet.
 * @return 0, or -1 if the geometry is invalid
 */
static inline int
spsc_ring_init(struct spsc_ring *r, uint32_t size, uint32_t elem_size)
{
	if (spsc_ring_bytes(size, elem_size) == 0)
		return -1;
	r->size = size;
	r->mask = size - 1;
	r->elem_size = elem_size;
	r->bell = 0;
	__atomic_store_n(&r->cons_flags, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&r->cons, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&r->prod, 0, __ATOMIC_RELEASE);
	return 0;
}

/**
 * @return the slot holding record @p index (any side).
 * Precondition: the caller owns that slot: a producer for index in
 * [prod, cons + size), a consumer for index in [cons, prod).
 */
static inline void *
spsc_ring_slot(const struct spsc_ring *r, uint32_t index)
{
	return (void *)(r->slots + (size_t)(index & r->mask) * r->elem_size);
}

/** @name Producer side (one thread) @{ */

/**
 * @return free slots. Precondition: called by the producer. Reads the
 * consumer index with acquire: pairs with spsc_ring_release(), so the
 * consumer has finished reading the slots it gave back.
 */
static inline uint32_t
spsc_ring_free_count(const struct spsc_ring *r)
{
	uint32_t prod = __atomic_load_n(&r->prod, __ATOMIC_RELAXED);
	uint32_t cons = __atomic_load_n(&r->cons, __ATOMIC_ACQUIRE);
	uint32_t used = prod - cons;
	return used >= r->size ? 0 : r->size - used;
}

/**
 * @return the slot of the @p i-th record not yet published.
 * Precondition: called by the producer with i < spsc_ring_free_count().
 */
static inline void *
spsc_ring_prod_slot(const struct spsc_ring *r, uint32_t i)
{
	return spsc_ring_slot(r, __atomic_load_n(&r->prod, __ATOMIC_RELAXED) + i);
}

/**
 * Publish the records before @p prod, the producer's own copy of its index
 * (spsc_ring_publish() without reading the index back). Precondition: called
 * by the producer, which alone moves the index, so its copy is the index.
 * Release store: the record contents become visible before the index. The
 * consumer's core reads that line on every poll: a producer that loads it
 * back misses on it, twice per post (the slot, then the publish).
 */
static inline void
spsc_ring_publish_to(struct spsc_ring *r, uint32_t prod)
{
	__atomic_store_n(&r->prod, prod, __ATOMIC_RELEASE);
}

/**
 * Publish @p n records written into spsc_ring_prod_slot(0..n-1).
 * Precondition: called by the producer, n <= free count.
 */
static inline void
spsc_ring_publish(struct spsc_ring *r, uint32_t n)
{
	spsc_ring_publish_to(r, __atomic_load_n(&r->prod, __ATOMIC_RELAXED) + n);
}

/**
 * spsc_ring_publish_to(), then whether the consumer asked for a bell
 * (SPSC_RING_WANT_BELL): a consumer that stopped reading the producer index
 * (an idle QP of the daemon) must then be told, with shm_bell_ring(r->bell)
 * on the bells it named (bell.h). No fence orders the index store before
 * the flag load (a full one waited for the index's line to come from the
 * consumer's core on every post: 85 % of ibv_post_send's samples, session
 * 23), so the load may pass the store: a consumer that sets the flag just
 * then can re-read the old index while the producer reads no flag. The
 * consumer covers that window: it reads the index of a ring it stopped
 * polling again for a grace period longer than a store buffer takes to
 * drain (spsc_ring_want_bell(); the daemon's go_idle()). A bell rung is
 * stored after the index, so whoever sees the bell sees the index (TSO
 * store order; release on weaker models).
 */
static inline int
spsc_ring_publish_bell_to(struct spsc_ring *r, uint32_t prod)
{
	spsc_ring_publish_to(r, prod);
	return (__atomic_load_n(&r->cons_flags, __ATOMIC_ACQUIRE) & SPSC_RING_WANT_BELL) != 0;
}

/** spsc_ring_publish_bell_to() of the index read back plus @p n (spsc_ring_publish()). */
static inline int
spsc_ring_publish_bell(struct spsc_ring *r, uint32_t n)
{
	return spsc_ring_publish_bell_to(r, __atomic_load_n(&r->prod, __ATOMIC_RELAXED) + n);
}

/**
 * Copy one record of elem_size bytes in and publish it.
 * Precondition: called by the producer.
 * @return 1 if enqueued, 0 if the ring is full
 */
static inline int
spsc_ring_push(struct spsc_ring *r, const void *rec)
{
	if (spsc_ring_free_count(r) == 0)
		return 0;
	memcpy(spsc_ring_prod_slot(r, 0), rec, r->elem_size);
	spsc_ring_publish(r, 1);
	return 1;
}
/** @} */

/** @name Consumer side (one thread) @{ */

/**
 * @return the producer index as seen by the consumer. Precondition: called
 * by the consumer. Acquire: pairs with spsc_ring_publish(), so records
 * before the returned index are fully written. Use with spsc_ring_slot()
 * to read records in place beyond cons (the SQ keeps WQEs until they complete).
 */
static inline uint32_t
spsc_ring_prod_acquire(const struct spsc_ring *r)
{
	return __atomic_load_n(&r->prod, __ATOMIC_ACQUIRE);
}

/** @return the consumer's own index. Precondition: called by the consumer (relaxed). */
static inline uint32_t
spsc_ring_cons_index(const struct spsc_ring *r)
{
	return __atomic_load_n(&r->cons, __ATOMIC_RELAXED);
}

/**
 * @return records available to the consumer, clamped to the ring size.
 * Precondition: called by the consumer (acquire on prod, as above).
 */
static inline uint32_t
spsc_ring_count(const struct spsc_ring *r)
{
	uint32_t used = spsc_ring_prod_acquire(r) - spsc_ring_cons_index(r);
	return used > r->size ? r->size : used;
}

/**
 * @return the slot of the @p i-th available record.
 * Precondition: called by the consumer with i < spsc_ring_count().
 */
static inline void *
spsc_ring_cons_slot(const struct spsc_ring *r, uint32_t i)
{
	return spsc_ring_slot(r, spsc_ring_cons_index(r) + i);
}

/**
 * Give @p n records back to the producer.
 * Precondition: called by the consumer after it is done reading them.
 * Release store: the reads complete before the producer may reuse the slots.
 */
static inline void
spsc_ring_release(struct spsc_ring *r, uint32_t n)
{
	uint32_t cons = __atomic_load_n(&r->cons, __ATOMIC_RELAXED);
	__atomic_store_n(&r->cons, cons + n, __ATOMIC_RELEASE);
}

/**
 * Set the consumer index to @p index (for consumers that release records
 * out of band, like the SQ completer). Precondition: called by the consumer,
 * cons <= index <= prod. Release store, as spsc_ring_release().
 */
static inline void
spsc_ring_release_to(struct spsc_ring *r, uint32_t index)
{
	__atomic_store_n(&r->cons, index, __ATOMIC_RELEASE);
}

/**
 * Copy one record out and release it.
 * Precondition: called by the consumer.
 * @return 1 if dequeued, 0 if the ring is empty
 */
static inline int
spsc_ring_pop(struct spsc_ring *r, void *rec)
{
	if (spsc_ring_count(r) == 0)
		return 0;
	memcpy(rec, spsc_ring_cons_slot(r, 0), r->elem_size);
	spsc_ring_release(r, 1);
	return 1;
}
/**
 * Stop polling the producer index: ask the producer to ring bell @p bell
 * after each publish (spsc_ring_publish_bell()). Precondition: called by the
 * consumer, which must then read the producer index once more (acquire)
 * and treat a move as a bell. The full fence here makes the flag visible
 * before that read, so a publish the read misses was stored after the
 * flag was visible. Its producer's flag load may still have passed its
 * own index store (that side has no fence): the consumer must go on
 * reading the index for SPSC_RING_BELL_GRACE_NS, far longer than a store
 * buffer's drain (microseconds). A publish after that sees the flag and
 * rings.
 */
static inline void
spsc_ring_want_bell(struct spsc_ring *r, uint32_t bell)
{
	r->bell = bell;
	__atomic_store_n(&r->cons_flags, SPSC_RING_WANT_BELL, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/** The consumer polls the producer index again: no more bells needed (a late one is harmless). */
static inline void
spsc_ring_bell_off(struct spsc_ring *r)
{
	__atomic_store_n(&r->cons_flags, 0, __ATOMIC_RELAXED);
}
/** @} */

/**
 * @name Trusted geometry
 * The header's size, mask and elem_size live in the shared mapping, so a
 * peer in another process can overwrite them. A side that does not trust
 * its peer (the daemon towards an application) keeps the geometry it
 * allocated the ring with and indexes only through these forms: any index
 * then lands inside the ring, whatever the header or the indexes say.
 * @{ */

/** @return the slot of record @p index, with the caller's @p mask and @p elem_size. */
static inline void *
spsc_ring_slot_in(const struct spsc_ring *r, uint32_t mask, uint32_t elem_size, uint32_t index)
{
	return (void *)(r->slots + (size_t)(index & mask) * elem_size);
}

/**
 * Start taking the line of @p p (a slot this side will write) into this
 * core's cache for writing: the other side's core read it a lap ago, and a
 * store to it would wait for the line to come back. Volatile asm, not a
 * bare __builtin_prefetch(): GCC 12 deletes the calls of a function whose
 * only effects are __builtin_prefetch() calls (doc/benchmarks.md, session
 * 26; test engine_prefetch). PREFETCHW is a NOP on x86 CPUs without it.
 */
static inline void
spsc_ring_prefetchw(const void *p)
{
#if defined(__x86_64__)
	__asm__ volatile("prefetchw %0" : : "m"(*(const char *)p));
#else
	__asm__ volatile("" : : "r"(p) : "memory");
	__builtin_prefetch(p, 1);
#endif
}

/**
 * @return records available to the consumer, clamped to the caller's
 * @p size. Precondition: called by the consumer (acquire on prod).
 */
static inline uint32_t
spsc_ring_count_in(const struct spsc_ring *r, uint32_t size)
{
	uint32_t used = spsc_ring_prod_acquire(r) - spsc_ring_cons_index(r);
	return used > size ? size : used;
}
/** @} */

#ifdef __cplusplus
}
#endif
#endif /* QP_QUEUE_H */
