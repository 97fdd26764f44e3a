/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared-NIC mode neighbours: the kernel owns ARP/ND on the interface (our
 * XDP program passes them to it), so the daemon reads the kernel's
 * neighbour table over rtnetlink (RTM_GETNEIGH for one address, as
 * `ip neigh get`) and, when the kernel does not know the address yet, makes
 * it resolve by sending one UDP datagram to the discard port through the
 * interface. The next probe round reads the table again.
 */
#include "neigh_kernel.h"

#include <errno.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "config.h"

#define DISCARD_PORT 9

struct neigh_get_req {
	struct nlmsghdr nh;
	struct ndmsg ndm;
	struct rtattr dst_attr;
	uint8_t dst[16];
};

int
neigh_kernel_lookup(unsigned int ifindex, const uint8_t ip[16], uint8_t mac[6])
{
	bool v4 = config_addr_is_v4mapped(ip);
	struct neigh_get_req req;
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	struct timeval tv = { .tv_sec = 0, .tv_usec = 200000 };
	union {
		struct nlmsghdr nh;
		char buf[1024];
	} rsp;
	int fd, rc = -ENOENT;
	ssize_t n;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	memset(&req, 0, sizeof(req));
	req.nh.nlmsg_type = RTM_GETNEIGH;
	req.nh.nlmsg_flags = NLM_F_REQUEST;
	req.nh.nlmsg_seq = 1;
	req.ndm.ndm_family = v4 ? AF_INET : AF_INET6;
	req.ndm.ndm_ifindex = (int)ifindex;
	req.dst_attr.rta_type = NDA_DST;
	req.dst_attr.rta_len = (unsigned short)RTA_LENGTH(v4 ? 4 : 16);
	memcpy(req.dst, v4 ? ip + 12 : ip, v4 ? 4 : 16);
	req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(struct ndmsg)) + RTA_ALIGN(req.dst_attr.rta_len);
	if (sendto(fd, &req, req.nh.nlmsg_len, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		rc = -errno;
		goto out;
	}
	n = recv(fd, &rsp, sizeof(rsp), 0);
	if (n < (ssize_t)NLMSG_LENGTH(sizeof(struct ndmsg)) || !NLMSG_OK(&rsp.nh, (size_t)n) ||
	    rsp.nh.nlmsg_type != RTM_NEWNEIGH)
		goto out; /* NLMSG_ERROR: no such entry */
	const struct ndmsg *ndm = NLMSG_DATA(&rsp.nh);
	int alen = (int)(rsp.nh.nlmsg_len - NLMSG_LENGTH(sizeof(*ndm)));

	if (!(ndm->ndm_state & (NUD_REACHABLE | NUD_STALE | NUD_DELAY | NUD_PROBE | NUD_PERMANENT |
				NUD_NOARP)))
		goto out;
	for (const struct rtattr *a = (const struct rtattr *)((const char *)ndm + NLMSG_ALIGN(sizeof(*ndm)));
	     RTA_OK(a, alen); a = RTA_NEXT(a, alen)) {
		if (a->rta_type == NDA_LLADDR && RTA_PAYLOAD(a) == 6) {
			memcpy(mac, RTA_DATA(a), 6);
			rc = 0;
			break;
		}
	}
out:
	close(fd);
	return rc;
}

void
neigh_kernel_kick(unsigned int ifindex, const uint8_t ip[16])
{
	bool v4 = config_addr_is_v4mapped(ip);
	char ifname[IF_NAMESIZE];
	int fd;

	if (if_indextoname(ifindex, ifname) == NULL)
		return;
	fd = socket(v4 ? AF_INET : AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return;
	(void)setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, ifname, (socklen_t)strlen(ifname));
	if (v4) {
		struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(DISCARD_PORT) };

		memcpy(&sin.sin_addr, ip + 12, 4);
		(void)sendto(fd, "", 0, 0, (struct sockaddr *)&sin, sizeof(sin));
	} else {
		struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6, .sin6_port = htons(DISCARD_PORT),
					     .sin6_scope_id = ifindex };

		memcpy(&sin6.sin6_addr, ip, 16);
		(void)sendto(fd, "", 0, 0, (struct sockaddr *)&sin6, sizeof(sin6));
	}
	close(fd);
}
