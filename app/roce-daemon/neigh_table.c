/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The neighbour table (neigh_table.h): plain C over rte_seqcount, one
 * writer (the control thread), lock-free readers.
 */
#include "neigh_table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_malloc.h>

int
neigh_table_init(struct neigh_table *t, uint32_t entries, uint64_t reachable_tsc,
		 uint64_t retry_tsc, uint32_t retries)
{
	uint32_t buckets = (uint32_t)rte_align32pow2((entries + NEIGH_WAYS - 1) / NEIGH_WAYS);

	memset(t, 0, sizeof(*t));
	t->entry = calloc((size_t)buckets * NEIGH_WAYS, sizeof(t->entry[0]));
	if (t->entry == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < buckets * NEIGH_WAYS; i++)
		rte_seqcount_init(&t->entry[i].sc);
	t->n_buckets = buckets;
	t->reachable_tsc = reachable_tsc;
	t->retry_tsc = retry_tsc;
	t->retries = retries;
	return 0;
}

void
neigh_table_free(struct neigh_table *t)
{
	free(t->entry);
	t->entry = NULL;
	t->n_buckets = 0;
}

static struct neigh_entry *
bucket(const struct neigh_table *t, uint16_t port, const uint8_t ip[16])
{
	uint32_t h = 2166136261u; /* FNV-1a */

	for (int i = 0; i < 16; i++)
		h = (h ^ ip[i]) * 16777619u;
	h = (h ^ port) * 16777619u;
	return &t->entry[(h & (t->n_buckets - 1)) * NEIGH_WAYS];
}

/* Writer side: plain reads are fine, we are the only writer. */
static struct neigh_entry *
find(const struct neigh_table *t, uint16_t port, const uint8_t ip[16])
{
	struct neigh_entry *b = bucket(t, port, ip);

	for (unsigned int w = 0; w < NEIGH_WAYS; w++)
		if (b[w].state != NEIGH_FREE && b[w].port == port && memcmp(b[w].ip, ip, 16) == 0)
			return &b[w];
	return NULL;
}

/* A slot for a new key: free, else failed, else least recently confirmed. */
static struct neigh_entry *
slot_for(const struct neigh_table *t, uint16_t port, const uint8_t ip[16])
{
	struct neigh_entry *b = bucket(t, port, ip), *best = &b[0];

	for (unsigned int w = 0; w < NEIGH_WAYS; w++) {
		if (b[w].state == NEIGH_FREE)
			return &b[w];
		if (b[w].state == NEIGH_FAILED && best->state != NEIGH_FAILED)
			best = &b[w];
		else if ((b[w].state == NEIGH_FAILED) == (best->state == NEIGH_FAILED) &&
			 b[w].confirmed < best->confirmed)
			best = &b[w];
	}
	return best;
}

/* Publish a new version of @p e: every field readers see changes inside. */
static void
entry_set(struct neigh_entry *e, uint16_t port, const uint8_t ip[16], const uint8_t *mac,
	  enum neigh_state state)
{
	rte_seqcount_write_begin(&e->sc);
	e->port = port;
	memcpy(e->ip, ip, 16);
	if (mac != NULL)
		memcpy(e->mac, mac, 6);
	else if (state != NEIGH_REACHABLE)
		memset(e->mac, 0, 6);
	e->state = (uint8_t)state;
	rte_seqcount_write_end(&e->sc);
}

struct neigh_result
neigh_lookup(const struct neigh_table *t, uint16_t port, const uint8_t ip[16])
{
	struct neigh_result r = { .state = NEIGH_FREE };
	const struct neigh_entry *b;

	if (t->entry == NULL)
		return r;
	b = bucket(t, port, ip);
	for (unsigned int w = 0; w < NEIGH_WAYS; w++) {
		uint8_t eip[16], mac[6], state;
		uint16_t eport;
		uint32_t sn;

		do {
			sn = rte_seqcount_read_begin(&b[w].sc);
			memcpy(eip, b[w].ip, 16);
			memcpy(mac, b[w].mac, 6);
			state = b[w].state;
			eport = b[w].port;
		} while (rte_seqcount_read_retry(&b[w].sc, sn));
		if (state != NEIGH_FREE && eport == port && memcmp(eip, ip, 16) == 0) {
			r.state = (enum neigh_state)state;
			memcpy(r.mac, mac, 6);
			return r;
		}
	}
	return r;
}

bool
neigh_learn(struct neigh_table *t, uint16_t port, const uint8_t ip[16], const uint8_t mac[6],
	    bool create, uint64_t now)
{
	struct neigh_entry *e = find(t, port, ip);

	if (e == NULL) {
		if (!create)
			return false;
		e = slot_for(t, port, ip);
	}
	entry_set(e, port, ip, mac, NEIGH_REACHABLE);
	e->probes = 0;
	e->refreshing = false;
	e->confirmed = now;
	e->deadline = now + t->reachable_tsc;
	return true;
}

bool
neigh_want(struct neigh_table *t, uint16_t port, const uint8_t ip[16], uint64_t now)
{
	struct neigh_entry *e = find(t, port, ip);

	if (e != NULL && e->state != NEIGH_FAILED)
		return false;
	if (e != NULL && now < e->deadline)
		return false; /* failed recently: hold down until the retry interval passed */
	if (e == NULL)
		e = slot_for(t, port, ip);
	entry_set(e, port, ip, NULL, NEIGH_INCOMPLETE);
	e->probes = 1;
	e->refreshing = false;
	e->confirmed = now;
	e->deadline = now + t->retry_tsc;
	return true;
}

unsigned int
neigh_expire(struct neigh_table *t, uint64_t now, neigh_probe_fn probe, void *arg)
{
	unsigned int changed = 0;

	for (uint32_t i = 0; i < t->n_buckets * NEIGH_WAYS; i++) {
		struct neigh_entry *e = &t->entry[i];

		if ((e->state != NEIGH_INCOMPLETE && e->state != NEIGH_REACHABLE) || now < e->deadline)
			continue;
		if (e->state == NEIGH_REACHABLE && !e->refreshing) {
			/* Reachable time over: keep using it, confirm in the background. */
			e->refreshing = true;
			e->probes = 0;
		}
		if (e->probes < t->retries) {
			e->probes++;
			e->deadline = now + t->retry_tsc;
			probe(arg, e->port, e->ip);
			continue;
		}
		entry_set(e, e->port, e->ip, NULL, NEIGH_FAILED);
		e->refreshing = false;
		e->deadline = now + t->retry_tsc;
		changed++;
	}
	return changed;
}
