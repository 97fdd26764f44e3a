/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs shim: the locks of the rings' application sides (a QP's send and
 * receive queue, a CQ, an SRQ), biased to the first thread that takes them.
 *
 * Most verbs programs post and poll a queue from one thread. A
 * pthread_spin_lock is a locked instruction: a full fence that waits for
 * every store before it, and the stores a post leaves behind (a producer
 * index, WQE lines, a CQ's consumer index) wait for lines the daemon's
 * core read. On a machine whose cores sit far apart that wait was half the
 * application's time (doc/benchmarks.md, session 24). So the first thread
 * that takes a lock becomes its owner and takes it with plain stores
 * after that: it sets @ref shim_lock.held, then reads @ref shim_lock.owner
 * again, with no fence between. Another thread that wants the lock takes
 * the spin lock, stores owner = SHIM_LOCK_SHARED, calls membarrier(2)
 * (MEMBARRIER_CMD_PRIVATE_EXPEDITED: every CPU running a thread of this
 * process executes a full barrier before it returns) and waits until held
 * is 0. This is Dekker's pattern with the owner's fence moved into the
 * revoker's membarrier: either the revoker sees held set and waits, or
 * the owner's second read sees the lock shared and it backs off. From
 * then on everyone takes the spin lock. Without membarrier (before Linux
 * 4.14, or a seccomp filter refusing it) no lock is ever biased.
 *
 * shim_lock() returns how it was taken; shim_unlock() needs that back
 * (held cannot tell: an owner backing off sets it for a moment while a
 * revoker holds the lock).
 */
#ifndef SHIM_LOCK_H
#define SHIM_LOCK_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/** shim_lock.owner: not yet taken (biased to the first thread to take it). */
#define SHIM_LOCK_UNOWNED ((uintptr_t)0)
/** shim_lock.owner: revoked, or never biased; every thread takes @ref shim_lock.spin. */
#define SHIM_LOCK_SHARED ((uintptr_t)1)

/** A lock biased to its first thread (see the file comment). */
struct shim_lock {
	/** 1 while the owner holds the lock without the spin lock; the owner's only. */
	uint32_t held;
	/** Taken by every thread but the owner, and by the owner once shared. */
	pthread_spinlock_t spin;
	/** The owner's shim_lock_self(), SHIM_LOCK_UNOWNED or SHIM_LOCK_SHARED; set under @ref spin. */
	uintptr_t owner;
};
_Static_assert(sizeof(struct shim_lock) == 2 * sizeof(uint32_t) + sizeof(uintptr_t),
	       "no padding: held and spin share a word (16 bytes a lock, not 24)");

/**
 * @return the calling thread's identity for shim_lock.owner: its
 * pthread_t, the address of its thread block (never 0 or 1), the same in
 * every file of the shim. A thread that exits leaves its locks biased to
 * it; one that reuses its block takes them over, which is safe: only one
 * live thread has it. A child after fork(2) is the thread that forked.
 */
static inline uintptr_t
shim_lock_self(void)
{
	return (uintptr_t)pthread_self();
}

/** Initialise @p l (unowned). @return 0 or an errno from pthread_spin_init(). */
int shim_lock_init(struct shim_lock *l);

/** Release what shim_lock_init() took. */
void shim_lock_destroy(struct shim_lock *l);

/** Slow path of shim_lock(): take the spin lock, biasing or revoking. @return false */
bool shim_lock_slow(struct shim_lock *l, uintptr_t me);

/**
 * Take @p l. @return true: taken as its owner, without a locked
 * instruction; false: through the spin lock. Pass it to shim_unlock().
 */
static inline bool
shim_lock(struct shim_lock *l)
{
	uintptr_t me = shim_lock_self();

	if (__atomic_load_n(&l->owner, __ATOMIC_RELAXED) == me) {
		__atomic_store_n(&l->held, 1, __ATOMIC_RELAXED);
		/* no fence: a revoker's membarrier() is this side's (file comment) */
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		if (__atomic_load_n(&l->owner, __ATOMIC_RELAXED) == me)
			return true;
		__atomic_store_n(&l->held, 0, __ATOMIC_RELEASE); /* revoked meanwhile */
	}
	return shim_lock_slow(l, me);
}

/** Release @p l, taken as shim_lock() returned @p owned. */
static inline void
shim_unlock(struct shim_lock *l, bool owned)
{
	if (owned)
		__atomic_store_n(&l->held, 0, __ATOMIC_RELEASE); /* a revoker's acquire pairs */
	else
		pthread_spin_unlock(&l->spin);
}

#endif /* SHIM_LOCK_H */
