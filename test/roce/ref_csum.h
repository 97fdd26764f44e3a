/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RFC 1071 Internet checksum as a byte loop in network order, written for
 * the tests independently of lib/roce's roce_csum_add().
 */
#ifndef TEST_ROCE_REF_CSUM_H
#define TEST_ROCE_REF_CSUM_H

#include <stddef.h>
#include <stdint.h>

/** @return @p sum plus the @p n bytes at @p p, folded to 16 bits (not complemented). */
static inline uint16_t
ref_csum16(const uint8_t *p, size_t n, uint32_t sum)
{
	uint64_t acc = sum;

	for (size_t i = 0; i + 1 < n; i += 2)
		acc += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (n & 1)
		acc += (uint32_t)p[n - 1] << 8;
	while (acc >> 16)
		acc = (acc & 0xffff) + (acc >> 16);
	return (uint16_t)acc;
}

#endif /* TEST_ROCE_REF_CSUM_H */
