/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/roce internal helpers, grouped by defining file. Not installed.
 */
#ifndef ROCE_INTERNAL_H
#define ROCE_INTERNAL_H

#include <endian.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* roce_csum.c: RFC 1071 Internet checksum */

/** @return one's-complement sum of @p len bytes at @p data added to @p sum, folded to 16 bits. */
uint32_t roce_csum_add(uint32_t sum, const void *data, size_t len);
/** @return @p sum folded to 16 bits (not complemented). */
uint16_t roce_csum_fold(uint32_t sum);
/**
 * @return the folded one's-complement sum of the UDP pseudo-header and the
 * @p udp_len bytes of the UDP datagram at @p udp, its checksum field included.
 * 0xffff means a received checksum is valid.
 */
uint16_t roce_udp_csum_sum(const uint8_t *l3, bool ipv6, const uint8_t *udp, size_t udp_len);

/**
 * @return the folded one's-complement sum of the 20-byte IPv4 header at
 * @p hdr (its checksum field included: 0xffff means it verifies), as
 * roce_csum_fold(roce_csum_add(0, hdr, 20)) computes it, without the loop
 * and the call: five 32-bit words added as the host loads them, folded,
 * then into network order (RFC 1071 1.2: the sum is byte-order
 * independent), as roce_csum_add() does.
 */
static inline uint16_t
roce_ipv4_hdr_sum(const void *hdr)
{
	const uint8_t *p = hdr;
	uint64_t acc = 0;
	uint32_t w;

	for (int i = 0; i < 5; i++) {
		__builtin_memcpy(&w, p + 4 * i, 4);
		acc += w;
	}
	acc = (acc & 0xffffffffu) + (acc >> 32); /* < 2^32 + 5 */
	acc = (acc & 0xffff) + (acc >> 16);      /* <= 0x1ffff */
	acc = (acc & 0xffff) + (acc >> 16);      /* <= 0x10000 */
	acc = (acc & 0xffff) + (acc >> 16);      /* <= 0xffff */
	return be16toh((uint16_t)acc);
}

/* roce_parse.c */

struct roce_opcode_desc;
enum roce_drop_reason;
/**
 * IBTA 9.2.1 pad and 9.7.4 / C9-20 payload rules of opcode @p desc for
 * @p with_pad bytes after its headers (payload and pad), @p pad of them pad.
 * @return ROCE_DROP_NONE, ROCE_DROP_PAD or ROCE_DROP_PAYLOAD_LENGTH
 */
enum roce_drop_reason roce_check_payload(const struct roce_opcode_desc *desc, size_t with_pad,
					 uint8_t pad);

#endif /* ROCE_INTERNAL_H */
