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

/** The frames of a suite that uses golden_suite_init / golden_suite_fini. */
extern struct golden_frame *golden_frames;
extern size_t golden_nframes;

/** Criterion suite .init: golden_load() into golden_frames. */
void golden_suite_init(void);
/** Criterion suite .fini: free golden_frames. */
void golden_suite_fini(void);

/** Raw look at the bytes, independent of lib/roce: is this UDP to 4791? */
int golden_is_udp_4791(const uint8_t *f, size_t len);

#endif
