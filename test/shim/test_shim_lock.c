/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shim's biased ring locks (drivers/verbs-shim/lock.h): the first
 * thread owns a lock and takes it without the spin lock; a second thread
 * revokes that and both exclude each other, including against an owner in
 * its critical section at the moment of revocation.
 */
#include <criterion/criterion.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "lock.h"

/* Whether this kernel lets a lock be biased: asked here, not of lock.c, so a
 * registration that wrongly fails shows. */
static bool
can_bias(void)
{
	long have = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);

	return have > 0 && (have & MEMBARRIER_CMD_PRIVATE_EXPEDITED);
}

Test(shim_lock, the_first_thread_owns_the_lock)
{
	struct shim_lock l;

	cr_assert_eq(shim_lock_init(&l), 0);
	cr_assert_not(shim_lock(&l), "the first take goes through the spin lock");
	shim_unlock(&l, false);
	if (can_bias())
		cr_assert_eq(l.owner, (uintptr_t)pthread_self(),
			     "owned by the thread, whichever file of the shim takes it");
	for (int i = 0; i < 3; i++) {
		bool owned = shim_lock(&l);

		cr_assert_eq(owned, can_bias(), "then its owner takes it %s",
			     can_bias() ? "without it" : "through it still (no membarrier)");
		shim_unlock(&l, owned);
	}
	cr_assert_eq(l.held, 0);
	shim_lock_destroy(&l);
}

#define ROUNDS 200000

static struct shim_lock L;
static volatile uint64_t counter; /* changed only under L, without atomics */
static volatile int start;

static void *
adder(void *arg)
{
	uint64_t taken_owned = 0;

	(void)arg;
	while (!start)
		;
	for (int i = 0; i < ROUNDS; i++) {
		bool owned = shim_lock(&L);

		counter = counter + 1;
		taken_owned += owned;
		shim_unlock(&L, owned);
	}
	return (void *)(uintptr_t)taken_owned;
}

Test(shim_lock, two_threads_exclude_each_other)
{
	pthread_t t[2];
	void *owned[2];

	cr_assert_eq(shim_lock_init(&L), 0);
	counter = 0;
	start = 0;
	for (int i = 0; i < 2; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, adder, NULL), 0);
	start = 1;
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], &owned[i]);
	cr_assert_eq(counter, 2ull * ROUNDS, "no increment lost: %llu", (unsigned long long)counter);
	cr_assert_eq(L.owner, SHIM_LOCK_SHARED, "the second thread revoked the bias");
	shim_lock_destroy(&L);
}

static volatile int in_cs;

static void *
late_taker(void *arg)
{
	int *seen = arg;

	bool owned = shim_lock(&L);
	*seen = in_cs;
	shim_unlock(&L, owned);
	return NULL;
}

/* A thread revoking while the owner is inside waits until the owner leaves. */
Test(shim_lock, revoking_waits_for_the_owner_to_leave)
{
	pthread_t t;
	int seen = -1;
	struct timespec ms20 = { 0, 20000000 };

	if (!can_bias())
		cr_skip_test("no membarrier(2) private expedited: locks are never biased");
	cr_assert_eq(shim_lock_init(&L), 0);
	shim_unlock(&L, shim_lock(&L)); /* biased to this thread */
	bool owned = shim_lock(&L);

	cr_assert(owned);
	in_cs = 1;
	cr_assert_eq(pthread_create(&t, NULL, late_taker, &seen), 0);
	nanosleep(&ms20, NULL);
	cr_assert_eq(seen, -1, "the other thread is still waiting");
	in_cs = 0;
	shim_unlock(&L, owned);
	pthread_join(t, NULL);
	cr_assert_eq(seen, 0, "it got the lock only after the owner left");
	cr_assert_not(shim_lock(&L), "the old owner now goes through the spin lock");
	shim_unlock(&L, false);
	shim_lock_destroy(&L);
}
