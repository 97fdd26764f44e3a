/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Link-state tracking (link.h): readings in, transitions out. No DPDK here:
 * the unit tests drive it with a fake source.
 */
#include "link.h"

#include <errno.h>
#include <string.h>

int
link_tracker_init(struct link_tracker *t, unsigned int n, const struct link_source *src,
		  uint64_t poll_ns, uint64_t retry_ns)
{
	memset(t, 0, sizeof(*t));
	if (n > LINK_MAX_PORTS || src == NULL || src->read == NULL)
		return -EINVAL;
	t->n = n;
	t->src = *src;
	t->poll_ns = poll_ns;
	t->retry_ns = retry_ns;
	return 0;
}

void
link_tracker_on_change(struct link_tracker *t, link_change_fn *fn, void *arg)
{
	t->on_change = fn;
	t->on_change_arg = arg;
}

enum link_change
link_apply(struct link_port *lp, const struct link_sample *s, uint64_t now_ns)
{
	bool first = !lp->known;
	bool was_up = lp->cur.up;
	bool attr = lp->cur.speed_mbps != s->speed_mbps || lp->cur.mtu != s->mtu;

	lp->cur = *s;
	lp->known = true;
	if (first) {
		lp->changed_ns = now_ns;
		return LINK_FIRST;
	}
	if (was_up != s->up) {
		lp->changed_ns = now_ns;
		if (s->up) {
			lp->ups++;
		} else {
			lp->downs++;
			lp->recover_idle = false;  /* a new outage: try to recover again */
		}
		return s->up ? LINK_UP : LINK_DOWN;
	}
	return attr ? LINK_ATTR : LINK_SAME;
}

/* Read port @p i and report what changed. @return 1 if something did */
static unsigned int
sample(struct link_tracker *t, unsigned int i, uint64_t now_ns)
{
	struct link_port *lp = &t->port[i];
	struct link_sample s, old = lp->cur;
	enum link_change c;

	memset(&s, 0, sizeof(s));
	if (t->src.read(t->src.arg, i, &s) != 0) {
		lp->read_errors++;
		return 0;
	}
	c = link_apply(lp, &s, now_ns);
	if (c == LINK_SAME)
		return 0;
	/*
	 * Found down (at start, or it just went down): the PMD may be
	 * connecting right now (a memif client's handshake): the first
	 * recover attempt waits a retry period.
	 */
	if ((c == LINK_FIRST || c == LINK_DOWN) && !s.up)
		lp->next_recover_ns = now_ns + t->retry_ns;
	if (t->on_change != NULL)
		t->on_change(t->on_change_arg, i, c, &old, &lp->cur);
	return 1;
}

/* A down port whose source can recover it: one attempt per retry period. */
static void
recover(struct link_tracker *t, unsigned int i, uint64_t now_ns)
{
	struct link_port *lp = &t->port[i];
	int rc;

	if (t->src.recover == NULL || !lp->known || lp->cur.up || lp->recover_idle ||
	    now_ns < lp->next_recover_ns)
		return;
	lp->next_recover_ns = now_ns + t->retry_ns;
	rc = t->src.recover(t->src.arg, i, now_ns);
	if (rc == -ENOTSUP) {
		lp->recover_idle = true;
		return;
	}
	lp->recover_tries++;
	if (rc != 0)
		lp->recover_errors++;
}

unsigned int
link_tick(struct link_tracker *t, uint64_t now_ns)
{
	bool all = now_ns >= t->next_poll_ns;
	unsigned int n = 0;

	if (all)
		t->next_poll_ns = now_ns + t->poll_ns;
	for (unsigned int i = 0; i < t->n; i++) {
		struct link_port *lp = &t->port[i];
		bool lsc = __atomic_exchange_n(&lp->lsc_pending, 0, __ATOMIC_ACQ_REL) != 0;

		if (all || lsc || !lp->known)
			n += sample(t, i, now_ns);
		recover(t, i, now_ns);
	}
	return n;
}

void
link_lsc_raise(struct link_tracker *t, unsigned int i)
{
	if (i < t->n)
		__atomic_store_n(&t->port[i].lsc_pending, 1, __ATOMIC_RELEASE);
}

const char *
link_change_name(enum link_change c)
{
	static const char *const name[] = {
		[LINK_SAME] = "same", [LINK_FIRST] = "first", [LINK_UP] = "up",
		[LINK_DOWN] = "down", [LINK_ATTR] = "attr",
	};

	return (unsigned int)c < sizeof(name) / sizeof(name[0]) ? name[c] : "?";
}
