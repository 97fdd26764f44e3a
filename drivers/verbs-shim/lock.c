/* SPDX-License-Identifier: BSD-3-Clause */
/* verbs shim: the slow path of the biased ring locks (lock.h). */
#include "lock.h"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static inline void
lock_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

static pthread_once_t lock_once = PTHREAD_ONCE_INIT;
static bool lock_can_bias;

static long
lock_membarrier(int cmd)
{
	return syscall(__NR_membarrier, cmd, 0, 0);
}

/* Biasing needs membarrier's private expedited command, registered once. */
static void
lock_register(void)
{
	long have = lock_membarrier(MEMBARRIER_CMD_QUERY);

	lock_can_bias = have > 0 && (have & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
			lock_membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
}

int
shim_lock_init(struct shim_lock *l)
{
	l->held = 0;
	l->owner = SHIM_LOCK_UNOWNED;
	return pthread_spin_init(&l->spin, PTHREAD_PROCESS_PRIVATE);
}

void
shim_lock_destroy(struct shim_lock *l)
{
	pthread_spin_destroy(&l->spin);
}

/*
 * Make the owner's stores visible before we read held: membarrier() runs a
 * full barrier on every CPU running one of our threads. Should it fail
 * (the registration follows a child across fork(2), so it should not),
 * wait a millisecond instead: any store buffer has drained by then.
 */
static void
lock_fence_owner(void)
{
	if (lock_membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0) {
		struct timespec ms = { 0, 1000000 };

		nanosleep(&ms, NULL);
	}
}

bool
shim_lock_slow(struct shim_lock *l, uintptr_t me)
{
	uintptr_t o;

	pthread_spin_lock(&l->spin);
	o = __atomic_load_n(&l->owner, __ATOMIC_RELAXED); /* written under spin only */
	if (o == SHIM_LOCK_UNOWNED) {
		pthread_once(&lock_once, lock_register);
		__atomic_store_n(&l->owner, lock_can_bias ? me : SHIM_LOCK_SHARED, __ATOMIC_RELAXED);
	} else if (o != SHIM_LOCK_SHARED) {
		/* another thread owns it: revoke, then wait until it is out */
		__atomic_store_n(&l->owner, SHIM_LOCK_SHARED, __ATOMIC_RELAXED);
		lock_fence_owner();
		while (__atomic_load_n(&l->held, __ATOMIC_ACQUIRE) != 0)
			lock_relax();
	}
	return false;
}
