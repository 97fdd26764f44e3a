/* SPDX-License-Identifier: BSD-3-Clause */
/* test/cm: the CM MADs of the golden rxe capture (rc_send_rdmacm.pcap). */
#ifndef TEST_CM_GOLDEN_H
#define TEST_CM_GOLDEN_H

#include <stddef.h>
#include <stdint.h>

#include "cm.h"

#define MAX_MADS 64

struct golden_mad {
	unsigned int frame; /* 1-based frame number in the capture */
	uint8_t mad[CM_MAD_SIZE];
};

/* Load the capture's CM MADs (UD SEND ONLY to QP1) into @out. */
size_t load_golden(struct golden_mad *out, size_t max);
/* The MAD of frame @f (fails the test if it is not one). */
const struct golden_mad *frame(const struct golden_mad *g, size_t n, unsigned int f);

#endif
