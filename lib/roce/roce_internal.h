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

#endif /* ROCE_INTERNAL_H */
