/* SPDX-License-Identifier: BSD-3-Clause */
#include <criterion/criterion.h>
#include <glob.h>
#include <pcap/pcap.h>
#include <stdlib.h>
#include <string.h>

#include "golden.h"

int
golden_is_udp_4791(const uint8_t *f, size_t len)
{
	size_t off = 14;

	if (len < off)
		return 0;
	unsigned type = (unsigned)f[12] << 8 | f[13];
	if (type == 0x8100) {
		if (len < off + 4)
			return 0;
		type = (unsigned)f[16] << 8 | f[17];
		off += 4;
	}
	size_t l4;
	if (type == 0x0800 && len >= off + 20 && f[off + 9] == 17)
		l4 = off + (size_t)(f[off] & 0xf) * 4;
	else if (type == 0x86dd && len >= off + 40 && f[off + 6] == 17)
		l4 = off + 40;
	else
		return 0;
	return len >= l4 + 4 && ((unsigned)f[l4 + 2] << 8 | f[l4 + 3]) == 4791;
}

size_t
golden_load(struct golden_frame **out)
{
	const char *dir = getenv("ROCE_PCAP_DIR");
	char pattern[4096];
	glob_t g;
	size_t n = 0, cap = 0;
	struct golden_frame *frames = NULL;

	cr_assert_not_null(dir, "ROCE_PCAP_DIR is not set");
	snprintf(pattern, sizeof(pattern), "%s/*.pcap", dir);
	cr_assert_eq(glob(pattern, 0, NULL, &g), 0, "no pcap in %s", dir);
	for (size_t i = 0; i < g.gl_pathc; i++) {
		char err[PCAP_ERRBUF_SIZE];
		pcap_t *pc = pcap_open_offline(g.gl_pathv[i], err);
		cr_assert_not_null(pc, "%s: %s", g.gl_pathv[i], err);
		const char *base = strrchr(g.gl_pathv[i], '/');
		base = base ? base + 1 : g.gl_pathv[i];
		struct pcap_pkthdr *h;
		const u_char *d;
		unsigned idx = 0;
		while (pcap_next_ex(pc, &h, &d) == 1) {
			idx++;
			cr_assert_eq(h->caplen, h->len, "%s #%u captured short", base, idx);
			if (!golden_is_udp_4791(d, h->caplen))
				continue;
			if (n == cap) {
				cap = cap ? cap * 2 : 256;
				frames = realloc(frames, cap * sizeof(*frames));
				cr_assert_not_null(frames);
			}
			frames[n].file = strdup(base);
			frames[n].index = idx;
			frames[n].len = h->caplen;
			frames[n].data = malloc(h->caplen);
			cr_assert_not_null(frames[n].data);
			memcpy(frames[n].data, d, h->caplen);
			n++;
		}
		pcap_close(pc);
	}
	globfree(&g);
	cr_assert_gt(n, 0, "no RoCEv2 frame found in %s", dir);
	*out = frames;
	return n;
}

void
golden_free(struct golden_frame *frames, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free((void *)frames[i].file);
		free(frames[i].data);
	}
	free(frames);
}

struct golden_frame *golden_frames;
size_t golden_nframes;

void
golden_suite_init(void)
{
	golden_nframes = golden_load(&golden_frames);
}

void
golden_suite_fini(void)
{
	golden_free(golden_frames, golden_nframes);
	golden_frames = NULL;
	golden_nframes = 0;
}
