/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ICRC throughput against memcpy on the same buffer sizes, and the two
 * seedable CRC-32 implementations side by side (zlib vs ISA-L).
 *
 *   icrc_bench [MB_PER_POINT]     (default 512 MB of data per measurement)
 *
 * Each point is the median of REPS runs, the kinds interleaved run by run so
 * load from other processes on the machine hits all of them alike; buffers
 * are warm (L1-resident: 4 x 8 KiB). "icrc" is roce_icrc_compute() over a
 * whole RoCEv2 frame whose payload is SIZE bytes (masked headers + payload),
 * reported per payload byte; "isa-l frame" is the bare CRC over the same
 * frame bytes, i.e. the floor for icrc. The goal (issue 2) is >= 0.8 x memcpy
 * at 4 KiB.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#ifdef BENCH_HAVE_ISAL
#include <isa-l/crc.h>
#endif

#include "roce.h"

static const size_t sizes[] = { 64, 1024, 4096 };
static volatile uint32_t sink;
static void *(*volatile copy_fn)(void *, const void *, size_t) = memcpy;

static double
now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

enum kind { K_MEMCPY, K_ZLIB, K_ISAL, K_ROCE_CRC32, K_ISAL_FRAME, K_ICRC, K_COUNT };
enum { REPS = 11 };

static uint8_t src[8192], dst[8192], frame[8192];
static size_t frame_l3, frame_covered;

static void
one(enum kind k, size_t size)
{
	switch (k) {
	case K_MEMCPY:
		copy_fn(dst, src, size);
		sink += dst[size - 1];
		break;
	case K_ZLIB:
		sink += (uint32_t)crc32(0, src, (uInt)size);
		break;
	case K_ISAL:
#ifdef BENCH_HAVE_ISAL
		sink += crc32_gzip_refl(0, src, size);
#endif
		break;
	case K_ROCE_CRC32:
		sink += roce_crc32(0, src, size);
		break;
	case K_ISAL_FRAME:
#ifdef BENCH_HAVE_ISAL
		sink += crc32_gzip_refl(0, frame + frame_l3, frame_covered);
#endif
		break;
	case K_ICRC:
		sink += roce_icrc_compute(frame + frame_l3, frame_covered);
		break;
	case K_COUNT:
		break;
	}
}

/* @return bytes per second of one run of @p k over @p total_bytes in @p size units. */
static double
run_once(enum kind k, size_t size, double total_bytes)
{
	size_t iters = (size_t)(total_bytes / (double)size);
	double t0 = now();

	for (size_t i = 0; i < iters; i++)
		one(k, size);
	return (double)iters * (double)size / (now() - t0);
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void
build_frame(size_t payload_len)
{
	struct roce_pkt p = {
		.opcode = ROCE_OP_RC_SEND_MIDDLE, .pkey = 0xffff, .dest_qpn = 0x11, .psn = 1,
		.l3 = { .hop_limit = 64, .udp_sport = 0xc132,
			.sgid = { [10] = 0xff, [11] = 0xff, 198, 18, 0, 2 },
			.dgid = { [10] = 0xff, [11] = 0xff, 198, 18, 0, 1 } },
		.payload = src, .payload_len = (uint32_t)payload_len,
	};
	size_t n = roce_build(&p, frame, sizeof(frame));
	frame_l3 = 14;
	frame_covered = n - frame_l3 - ROCE_ICRC_LEN;
}

int
main(int argc, char **argv)
{
	double mb = argc > 1 ? atof(argv[1]) : 512;
	double total = (mb > 0 ? mb : 512) * 1e6;

	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 131 + 17);
#ifndef BENCH_HAVE_ISAL
	printf("(built without ISA-L: isa-l column not measured)\n");
#endif
	printf("roce_crc32 uses %s\n", roce_crc32(0, "123456789", 9) == 0xcbf43926 ?
	       roce_crc32_impl() : "a BROKEN implementation");
	printf("%-6s %9s %9s %9s %9s %9s %9s | %8s %8s %8s %8s\n", "size", "memcpy", "zlib",
	       "isa-l", "crc32", "isa-l fr", "icrc", "icrc/cpy", "isal/cpy", "fr/cpy", "isal/zlib");
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		size_t size = sizes[s];
		double runs[K_COUNT][REPS], r[K_COUNT];
		build_frame(size);
		for (int rep = 0; rep < REPS; rep++)
			for (int k = 0; k < K_COUNT; k++)
				runs[k][rep] = run_once(k, size, total / REPS) / 1e9;
		for (int k = 0; k < K_COUNT; k++) {
			qsort(runs[k], REPS, sizeof(double), cmp_double);
			r[k] = runs[k][REPS / 2];
		}
#ifndef BENCH_HAVE_ISAL
		r[K_ISAL] = r[K_ISAL_FRAME] = 0;
#endif
		printf("%-6zu %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f | %7.2fx %7.2fx %7.2fx %7.2fx\n",
		       size, r[K_MEMCPY], r[K_ZLIB], r[K_ISAL], r[K_ROCE_CRC32], r[K_ISAL_FRAME],
		       r[K_ICRC], r[K_ICRC] / r[K_MEMCPY], r[K_ISAL] / r[K_MEMCPY],
		       r[K_ISAL_FRAME] / r[K_MEMCPY], r[K_ZLIB] > 0 ? r[K_ISAL] / r[K_ZLIB] : 0);
	}
	printf("(GB/s per payload byte, median of %d interleaved runs)\n", REPS);
	printf("goal: icrc >= 0.80x memcpy at 4096 B\n");
	return 0;
}
