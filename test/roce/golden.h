/* SPDX-License-Identifier: BSD-3-Clause */
/* Golden RoCEv2 frames of Linux rxe, loaded from $ROCE_PCAP_DIR/\*.pcap. */
#ifndef TEST_ROCE_GOLDEN_H
#define TEST_ROCE_GOLDEN_H

#include <stddef.h>
#include <stdint.h>

struct golden_frame {
	const char *file;     /* pcap base name */
	unsigned index;       /* 1-based frame number in that file */
	uint8_t *data;
	size_t len;
};

/**
 * Load every UDP-4791 frame of every pcap in $ROCE_PCAP_DIR (frames of other
 * protocols are skipped). Aborts the test (cr_assert) if the directory or a
 * file cannot be read or no frame is found.
 */
size_t golden_load(struct golden_frame **out);
void golden_free(struct golden_frame *frames, size_t n);

/** Raw look at the bytes, independent of lib/roce: is this UDP to 4791? */
int golden_is_udp_4791(const uint8_t *f, size_t len);

#endif
