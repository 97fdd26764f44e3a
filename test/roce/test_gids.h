/* SPDX-License-Identifier: BSD-3-Clause */
/* The test frames' addresses: 198.18.0.2 -> .1, or 2001:db8::2 -> ::1. */
#ifndef TEST_ROCE_TEST_GIDS_H
#define TEST_ROCE_TEST_GIDS_H

#include <stdbool.h>
#include <string.h>

#include "roce.h"

static inline void
test_gids(struct roce_pkt *p, bool ipv6)
{
	static const uint8_t s6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 2 };
	static const uint8_t t6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 };
	static const uint8_t s4[16] = { [10] = 0xff, [11] = 0xff, 198, 18, 0, 2 };
	static const uint8_t t4[16] = { [10] = 0xff, [11] = 0xff, 198, 18, 0, 1 };

	memcpy(p->l3.sgid, ipv6 ? s6 : s4, 16);
	memcpy(p->l3.dgid, ipv6 ? t6 : t4, 16);
}

#endif
