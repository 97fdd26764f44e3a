/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rsockets keepalive (SO_KEEPALIVE, TCP_KEEPIDLE), as librdmacm's tcp
 * service thread does it: every keepalive_time seconds a socket with
 * SO_KEEPALIVE on sends a KEEPALIVE control message, which on the wire is
 * a zero-length RDMA WRITE without immediate (the peer's transport
 * acknowledges it; its application never sees it). A peer that vanished
 * never acknowledges: the write exhausts its retries, its completion
 * fails, and the socket reports the error (EIO; POLLERR; a blocked rrecv
 * wakes). It takes one of the socket's control slots, as librdmacm's.
 *
 * One thread for the process, started with the first socket that turns
 * keepalive on; the sockets are in a list under rsk_ka_lock. Lock order:
 * rs->lock, then rsk_ka_lock; so the thread only try-locks a socket (a
 * busy one is tried again shortly), and rsk_ka_remove() takes a socket
 * out before it is freed.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "rcm.h"
#include "rsocket.h"

#define RSK_KA_RETRY_MS 100 /* a socket busy at its time: tried again after this */

struct rsk_ka {
	struct rsk_ka *next;
	struct rsk *rs;
	int64_t due_ms;
};

static pthread_mutex_t rsk_ka_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t rsk_ka_cond;
static struct rsk_ka *rsk_ka_list;
static bool rsk_ka_started;

static int64_t rsk_ka_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Post the KEEPALIVE (rs->lock held), when connected and a control slot is free. */
static void rsk_ka_send(struct rsk *rs)
{
	if (!(rs->state & RSK_CONNECTED) || rs->cm == NULL || rs->cm->qp == NULL ||
	    rs->ctrl_seqno == rs->ctrl_max_seqno)
		return;
	rs->ctrl_seqno++;
	if (rsk_post_write(rs, NULL, 0, rsk_msg(RSK_OP_CTRL, RSK_CTRL_KEEPALIVE), false,
			   IBV_SEND_INLINE, 0, 0))
		rs->ctrl_seqno--;
}

/* One pass over the list (rsk_ka_lock held): @return the next due time. */
static int64_t rsk_ka_pass(void)
{
	int64_t now = rsk_ka_now(), next = now + 3600 * 1000;

	for (struct rsk_ka *k = rsk_ka_list; k != NULL; k = k->next) {
		if (k->due_ms <= now) {
			if (pthread_mutex_trylock(&k->rs->lock) == 0) {
				rsk_ka_send(k->rs);
				k->due_ms = now + (int64_t)k->rs->keepalive_time * 1000;
				pthread_mutex_unlock(&k->rs->lock);
			} else {
				k->due_ms = now + RSK_KA_RETRY_MS;
			}
		}
		if (k->due_ms < next)
			next = k->due_ms;
	}
	return next;
}

static void *rsk_ka_thread(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&rsk_ka_lock);
	for (;;) {
		int64_t next = rsk_ka_pass();
		struct timespec ts = { .tv_sec = next / 1000, .tv_nsec = (next % 1000) * 1000000 };

		pthread_cond_timedwait(&rsk_ka_cond, &rsk_ka_lock, &ts);
	}
	return NULL;
}

static int rsk_ka_start(void)
{
	pthread_condattr_t ca;
	pthread_attr_t a;
	pthread_t t;
	int rc;

	if (rsk_ka_started)
		return 0;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&rsk_ka_cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&t, &a, rsk_ka_thread, NULL);
	pthread_attr_destroy(&a);
	if (rc)
		return rcm_err(rc);
	rsk_ka_started = true;
	return 0;
}

int rsk_ka_set(struct rsk *rs, bool on)
{
	struct rsk_ka **pos, *k;
	int rc = 0;

	pthread_mutex_lock(&rsk_ka_lock);
	for (pos = &rsk_ka_list; *pos != NULL && (*pos)->rs != rs; pos = &(*pos)->next)
		;
	if (on && *pos == NULL) {
		k = calloc(1, sizeof(*k));
		rc = k == NULL ? rcm_err(ENOMEM) : rsk_ka_start();
		if (rc == 0) {
			k->rs = rs;
			k->due_ms = rsk_ka_now() + (int64_t)rs->keepalive_time * 1000;
			k->next = rsk_ka_list;
			rsk_ka_list = k;
		} else {
			free(k);
		}
	} else if (on) {
		/* TCP_KEEPIDLE changed: count from now */
		(*pos)->due_ms = rsk_ka_now() + (int64_t)rs->keepalive_time * 1000;
	} else if (*pos != NULL) {
		k = *pos;
		*pos = k->next;
		free(k);
	}
	if (rsk_ka_started)
		pthread_cond_signal(&rsk_ka_cond);
	pthread_mutex_unlock(&rsk_ka_lock);
	return rc;
}

void rsk_ka_remove(struct rsk *rs)
{
	struct rsk_ka **pos, *k;

	pthread_mutex_lock(&rsk_ka_lock);
	for (pos = &rsk_ka_list; *pos != NULL; pos = &(*pos)->next)
		if ((*pos)->rs == rs) {
			k = *pos;
			*pos = k->next;
			free(k);
			break;
		}
	pthread_mutex_unlock(&rsk_ka_lock);
}
