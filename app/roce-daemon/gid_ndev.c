/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The net device of a GID: the kernel interface holding its address
 * (gid_ndev.h).
 */
#include "gid_ndev.h"

#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <string.h>

static bool
gid_is_v4mapped(const uint8_t gid[16])
{
	static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return memcmp(gid, prefix, sizeof(prefix)) == 0;
}

/* Does @p sa hold the address of @p gid? */
static bool
gid_ndev_match(const struct sockaddr *sa, const uint8_t gid[16])
{
	if (sa == NULL)
		return false;
	if (sa->sa_family == AF_INET && gid_is_v4mapped(gid))
		return memcmp(&((const struct sockaddr_in *)(const void *)sa)->sin_addr, gid + 12, 4) == 0;
	if (sa->sa_family == AF_INET6 && !gid_is_v4mapped(gid))
		return memcmp(&((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, gid, 16) == 0;
	return false;
}

unsigned int
gid_ndev_ifindex(const uint8_t gid[16])
{
	struct ifaddrs *list, *ifa;
	unsigned int idx = 0;

	if (getifaddrs(&list) != 0)
		return 0;
	for (ifa = list; ifa != NULL && idx == 0; ifa = ifa->ifa_next)
		if (ifa->ifa_name != NULL && gid_ndev_match(ifa->ifa_addr, gid))
			idx = if_nametoindex(ifa->ifa_name);
	freeifaddrs(list);
	return idx;
}
