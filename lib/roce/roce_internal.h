/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/roce internal helpers, grouped by defining file. Not installed.
 */
#ifndef ROCE_INTERNAL_H
#define ROCE_INTERNAL_H

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
