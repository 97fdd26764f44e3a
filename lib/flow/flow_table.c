/* SPDX-License-Identifier: BSD-3-Clause */
/* The rules of one port (flow.h): a fixed array, scanned per frame. */
#include <errno.h>
#include <string.h>

#include "flow.h"

void
flow_table_init(struct flow_table *t, struct flow_rule *rules, uint32_t cap)
{
	memset(rules, 0, sizeof(*rules) * cap);
	t->cap = cap;
	t->n = 0;
	t->rule = rules;
}

int
flow_table_add(struct flow_table *t, const struct flow_match *m, uint16_t priority,
	       uint32_t dest)
{
	struct flow_match checked = *m;
	int rc = flow_match_check(&checked);

	if (rc < 0)
		return rc;
	for (uint32_t i = 0; i < t->cap; i++) {
		struct flow_rule *r = &t->rule[i];

		if (r->in_use)
			continue;
		r->match = checked;
		r->dest = dest;
		r->priority = priority;
		r->in_use = true;
		t->n++;
		return (int)i;
	}
	return -ENOSPC;
}

int
flow_table_del(struct flow_table *t, uint32_t idx)
{
	if (idx >= t->cap || !t->rule[idx].in_use)
		return -ENOENT;
	t->rule[idx].in_use = false;
	t->n--;
	return 0;
}

uint32_t
flow_table_lookup(const struct flow_table *t, const struct flow_key *k, uint32_t *dest,
		  uint32_t max)
{
	uint32_t n = 0, best = UINT32_MAX;

	if (t->n == 0)
		return 0;
	for (uint32_t i = 0; i < t->cap; i++) {
		const struct flow_rule *r = &t->rule[i];

		if (!r->in_use || r->priority > best || !flow_match(&r->match, k))
			continue;
		if (r->priority < best) {
			best = r->priority;
			n = 0;
		}
		if (n < max)
			dest[n++] = r->dest;
	}
	return n;
}
