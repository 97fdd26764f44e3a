/* SPDX-License-Identifier: BSD-3-Clause */
/* The daemon's state: lookups over its ports and the hook list (daemon_state.h). */
#include "daemon_state.h"

#include <errno.h>
#include <string.h>

int
daemon_add_hook(struct daemon *d, int (*fn)(void *arg, int timeout_ms), void *arg)
{
	if (d->n_hooks >= DAEMON_MAX_HOOKS)
		return -ENOSPC;
	d->hook[d->n_hooks].fn = fn;
	d->hook[d->n_hooks].arg = arg;
	d->n_hooks++;
	return 0;
}

int
daemon_find_gid(const struct daemon *d, const uint8_t gid[16])
{
	for (unsigned int i = 0; i < d->n_ports; i++)
		if (gid_table_find(&d->port[i].gids, gid) >= 0)
			return (int)i;
	return -1;
}

int
daemon_find_mac(const struct daemon *d, const uint8_t mac[6])
{
	for (unsigned int i = 0; i < d->n_ports; i++)
		if (memcmp(d->port[i].mac, mac, 6) == 0)
			return (int)i;
	return -1;
}
