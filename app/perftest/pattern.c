/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Data patterns of --verify. Message (iter, qp) is a run of little-endian
 * 64-bit words: word 0 carries the iteration and QP (so a receiver can tell
 * which message it got and count what was lost), the others are a hash of
 * (iter, qp, word index). Shorter messages take the first bytes.
 */
#include <string.h>

#include "perftest.h"

#define PT_PATTERN_TAG UINT64_C(0x5250544d00000000)   /* "RPTM" in the top half */
#define PT_ITER_BITS   40

/* splitmix64's finaliser: a cheap, well-mixed bijection. */
static inline uint64_t pt_mix(uint64_t x)
{
	x ^= x >> 30;
	x *= UINT64_C(0xbf58476d1ce4e5b9);
	x ^= x >> 27;
	x *= UINT64_C(0x94d049bb133111eb);
	x ^= x >> 31;
	return x;
}

static inline uint64_t pt_word(uint64_t iter, uint32_t qp, uint64_t w)
{
	if (w == 0)
		return PT_PATTERN_TAG ^ ((uint64_t)(qp & 0xff) << PT_ITER_BITS) ^
		       (iter & ((UINT64_C(1) << PT_ITER_BITS) - 1));
	return pt_mix(iter * UINT64_C(0x9e3779b97f4a7c15) + ((uint64_t)qp << 20) + w);
}

static inline void pt_store_le64(uint8_t *p, uint64_t v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

void pt_pattern_fill(void *buf, size_t len, uint64_t iter, uint32_t qp)
{
	uint8_t *p = buf;

	for (uint64_t w = 0; len; w++) {
		size_t n = len < 8 ? len : 8;

		pt_store_le64(p, pt_word(iter, qp, w), n);
		p += n;
		len -= n;
	}
}

size_t pt_pattern_check(const void *buf, size_t len, uint64_t iter, uint32_t qp)
{
	const uint8_t *p = buf;
	uint8_t want[8];

	for (uint64_t w = 0, off = 0; off < len; w++) {
		size_t n = len - off < 8 ? len - off : 8;

		pt_store_le64(want, pt_word(iter, qp, w), n);
		if (memcmp(p + off, want, n) != 0) {
			for (size_t i = 0; i < n; i++)
				if (p[off + i] != want[i])
					return off + i;
		}
		off += n;
	}
	return SIZE_MAX;
}

bool pt_pattern_iter(const void *buf, size_t len, uint32_t qp, uint64_t *iter)
{
	const uint8_t *p = buf;
	uint64_t w0 = 0;

	if (len < 8)
		return false;
	for (int i = 7; i >= 0; i--)
		w0 = w0 << 8 | p[i];
	w0 ^= PT_PATTERN_TAG ^ ((uint64_t)(qp & 0xff) << PT_ITER_BITS);
	if (w0 >> PT_ITER_BITS)
		return false;
	*iter = w0;
	return true;
}
