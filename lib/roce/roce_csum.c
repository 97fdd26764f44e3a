/* SPDX-License-Identifier: BSD-3-Clause */
/* Internet checksum (RFC 1071) for the IPv4 header and the UDP checksum. */
#include <string.h>

#include "roce.h"
#include "roce_internal.h"

uint32_t
roce_csum_add(uint32_t sum, const void *data, size_t len)
{
	const uint8_t *p = data;
	uint64_t acc = sum;

	for (; len >= 2; p += 2, len -= 2)
		acc += (uint32_t)p[0] << 8 | p[1];
	if (len)
		acc += (uint32_t)p[0] << 8;
	while (acc >> 16)
		acc = (acc & 0xffff) + (acc >> 16);
	return (uint32_t)acc;   /* folded: callers may add small terms freely */
}

uint16_t
roce_csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

uint16_t
roce_udp_csum_sum(const uint8_t *l3, bool ipv6, const uint8_t *udp, size_t udp_len)
{
	uint32_t sum = 0;

	if (ipv6) {
		/* src, dst, upper-layer length (32 bits), next header (RFC 8200 8.1) */
		sum = roce_csum_add(sum, l3 + offsetof(struct roce_ipv6_hdr, src), 32);
		sum += (uint32_t)(udp_len >> 16) + (uint32_t)(udp_len & 0xffff);
	} else {
		sum = roce_csum_add(sum, l3 + offsetof(struct roce_ipv4_hdr, src), 8);
		sum += (uint32_t)udp_len;
	}
	sum += 17; /* IPPROTO_UDP */
	sum = roce_csum_add(sum, udp, udp_len);
	return roce_csum_fold(sum);
}
