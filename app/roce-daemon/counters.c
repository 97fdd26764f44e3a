/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Counter tables from CTR_LIST and the engine's list (counters.h): names,
 * scopes, descriptions. The telemetry commands that read them are telemetry.c.
 */
#include "counters.h"

#include <assert.h>
#include <ctype.h>
#include <stdio.h>

/* What CTR_LIST says about its counters; the engine's come from lib/xport. */
static const struct {
	const char *name;
	unsigned int scopes;
	const char *desc;
} ctr_list[] = {
#define CTR_DESC(sym, name, scopes, desc) [CTR_##sym] = { name, scopes, desc },
	CTR_LIST(CTR_DESC)
#undef CTR_DESC
};

static_assert(sizeof(ctr_list) / sizeof(ctr_list[0]) == CTR_XPORT_FIRST,
	      "CTR_LIST is followed by the engine's counters");

/* CTR_XPORT_NAMES: the older name of engine counter @p c, or NULL. */
static const char *
xport_renamed(enum xport_counter c)
{
	switch (c) {
#define CTR_XPORT_RENAME(sym, name) case XPORT_CNT_##sym: return name;
	CTR_XPORT_NAMES(CTR_XPORT_RENAME)
#undef CTR_XPORT_RENAME
	default:
		return NULL;
	}
}

const char *
ctr_name(enum ctr_id id, char buf[CTR_NAME_MAX])
{
	enum xport_counter c = (enum xport_counter)((unsigned int)id - CTR_XPORT_FIRST);
	const char *renamed;
	size_t n;

	if ((unsigned int)id < CTR_XPORT_FIRST)
		return ctr_list[id].name;
	if ((unsigned int)id >= CTR_COUNT)
		return "?";
	renamed = xport_renamed(c);
	if (renamed != NULL)
		return renamed;
	/* "ACK_TX" -> "qp_ack_tx" */
	n = (size_t)snprintf(buf, CTR_NAME_MAX, "qp_%s", xport_counter_name(c));
	for (size_t i = 3; i < n && i < CTR_NAME_MAX; i++)
		buf[i] = (char)tolower((unsigned char)buf[i]);
	return buf;
}

unsigned int
ctr_scopes(enum ctr_id id)
{
	if ((unsigned int)id < CTR_XPORT_FIRST)
		return ctr_list[id].scopes;
	return (unsigned int)id < CTR_COUNT ? CTR_S_ALL : 0;
}

const char *
ctr_desc(enum ctr_id id)
{
	if ((unsigned int)id < CTR_XPORT_FIRST)
		return ctr_list[id].desc;
	return xport_counter_desc((enum xport_counter)((unsigned int)id - CTR_XPORT_FIRST));
}

void
ctr_set_accumulate(struct ctr_set *acc, const struct ctr_set *src)
{
	for (unsigned int i = 0; i < CTR_COUNT; i++)
		acc->v[i] += ctr_read(&src->v[i]);
	for (unsigned int i = 0; i < ROCE_DROP_COUNT; i++)
		acc->drop[i] += ctr_read(&src->drop[i]);
}
