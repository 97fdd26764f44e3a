/* SPDX-License-Identifier: BSD-3-Clause */
/* Internet checksum (RFC 1071) for the IPv4 header and the UDP checksum. */
#include <endian.h>
#include <string.h>

#include "roce.h"
#include "roce_internal.h"

/*
 * RFC 1071 1.2: the one's complement sum is byte-order independent, so the
 * words are added as the host loads them, four bytes at a time, and the
 * folded sum is swapped once at the end into network order.
 */
uint32_t
roce_csum_add(uint32_t sum, const void *data, size_t len)
{
	const uint8_t *p = data;
	uint64_t acc = 0;
	uint32_t w32;
	uint16_t w16;

	for (; len >= 4; p += 4, len -= 4) {
		memcpy(&w32, p, 4);
		acc += w32;
	}
	if (len >= 2) {
		memcpy(&w16, p, 2);
		acc += w16;
		p += 2;
		len -= 2;
	}
	if (len) {
		w16 = 0;
		memcpy(&w16, p, 1); /* the odd byte is the high byte of a zero-padded word */
		acc += w16;
	}
	while (acc >> 16)
		acc = (acc & 0xffff) + (acc >> 16);
	acc = be16toh((uint16_t)acc) + (uint64_t)sum;
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
