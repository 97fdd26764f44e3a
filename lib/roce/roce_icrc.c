/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ICRC, IBTA Vol. 1 7.8 with the RoCEv2 variant fields of Annex A17.3.3.
 *
 * CRC-32 (IEEE 802.3, reflected, zlib convention) over:
 *   8 x 0xff (stands in for the LRH)                   -> ROCE_ICRC_SEED
 *   IPv4 header, TOS/TTL/checksum = ones  | IPv6 header, class/flow/hop = ones
 *   UDP header, checksum = ones
 *   BTH, byte 4 (FECN|BECN|resv6a) = ones
 *   extension headers, payload, pad
 * stored after the pad least significant byte first.
 *
 * roce_crc32() is ISA-L's crc32_gzip_refl() when available (PCLMUL folding,
 * measured several times faster than zlib in bench/icrc_bench), else zlib.
 */
#include <string.h>

#include "roce.h"

#ifdef ROCE_HAVE_ISAL
#include <isa-l/crc.h>
#else
#include <zlib.h>
#endif

enum {
	IPV4_LEN = sizeof(struct roce_ipv4_hdr),
	IPV6_LEN = sizeof(struct roce_ipv6_hdr),
	UDP_LEN = sizeof(struct roce_udp_hdr),
	MASKED_MAX = IPV6_LEN + UDP_LEN + ROCE_BTH_LEN,
};

#if defined(ROCE_HAVE_ISAL) && defined(__x86_64__)
/*
 * ISA-L's AVX-512 CRC (crc32_gzip_refl_by16_10) returns with the upper
 * halves of the vector registers dirty (no vzeroupper). Legacy-SSE code
 * compiled for baseline x86-64 (ours, and most of the process) then pays
 * the SSE/AVX transition cost: measured ~200 ns per call of
 * roce_icrc_headers() on this project's CI machine. Clear them on return.
 */
__attribute__((target("avx"))) static void
vector_upper_clear(void)
{
	__builtin_ia32_vzeroupper();
}

static bool cpu_has_avx;

__attribute__((constructor)) static void
detect_avx(void)
{
	__builtin_cpu_init();
	cpu_has_avx = __builtin_cpu_supports("avx");
}
#endif

uint32_t
roce_crc32(uint32_t crc, const void *data, size_t len)
{
#ifdef ROCE_HAVE_ISAL
	crc = crc32_gzip_refl(crc, data, len);
#ifdef __x86_64__
	if (cpu_has_avx)
		vector_upper_clear();
#endif
	return crc;
#else
	/* zlib takes uInt lengths: feed large buffers in pieces. */
	const uint8_t *p = data;
	while (len > 0) {
		uInt n = len > (1u << 30) ? (1u << 30) : (uInt)len;
		crc = (uint32_t)crc32(crc, p, n);
		p += n;
		len -= n;
	}
	return crc;
#endif
}

const char *
roce_crc32_impl(void)
{
#ifdef ROCE_HAVE_ISAL
	return "isa-l";
#else
	return "zlib";
#endif
}

/*
 * The masked copy is built in 16-byte registers and stored whole, so the
 * CRC's vector loads are forwarded from those stores; patching single bytes
 * of a stack copy instead stalls store-to-load forwarding (measured 3-4x
 * slower for a 4 KiB frame in bench/icrc_bench).
 */
typedef uint8_t roce_v16 __attribute__((vector_size(16), aligned(16)));

/* Ones over the variant fields: IPv4 TOS, TTL, checksum; UDP checksum; BTH byte 4. */
static const uint8_t ipv4_mask[48] __attribute__((aligned(16))) = {
	[1] = 0xff, [8] = 0xff, [10] = 0xff, [11] = 0xff, [26] = 0xff, [27] = 0xff, [32] = 0xff,
};
/* IPv6 traffic class + flow label, hop limit; UDP checksum; BTH byte 4. */
static const uint8_t ipv6_mask[64] __attribute__((aligned(16))) = {
	0x0f, 0xff, 0xff, 0xff, [7] = 0xff, [46] = 0xff, [47] = 0xff, [52] = 0xff,
};

static void
mask_bytes(uint8_t *buf, bool ipv6, size_t ip_len)
{
	if (ipv6) {
		buf[0] |= 0x0f;                 /* traffic class, high nibble */
		memset(&buf[1], 0xff, 3);       /* traffic class, flow label */
		buf[offsetof(struct roce_ipv6_hdr, hop_limit)] = 0xff;
	} else {
		buf[offsetof(struct roce_ipv4_hdr, tos)] = 0xff;
		buf[offsetof(struct roce_ipv4_hdr, ttl)] = 0xff;
		memset(&buf[offsetof(struct roce_ipv4_hdr, checksum)], 0xff, 2);
	}
	memset(&buf[ip_len + offsetof(struct roce_udp_hdr, checksum)], 0xff, 2);
	buf[ip_len + UDP_LEN + offsetof(struct roce_bth, qpn)] = 0xff;
}

uint32_t
roce_icrc_headers(const uint8_t *l3, size_t hdr_len)
{
	roce_v16 buf[4] = { { 0 } };
	bool ipv6 = hdr_len > 0 && (l3[0] >> 4) == 6;
	size_t ip_len = ipv6 ? IPV6_LEN : IPV4_LEN;
	size_t masked = ip_len + UDP_LEN + ROCE_BTH_LEN;     /* 40 or 60 */
	size_t chunks = (masked + 15) / 16;                  /* 3 or 4 */
	size_t n;

	_Static_assert(sizeof(buf) >= MASKED_MAX, "room for the IPv6 headers");
	if (hdr_len >= chunks * 16) {
		const uint8_t *mask = ipv6 ? ipv6_mask : ipv4_mask;
		for (size_t i = 0; i < chunks; i++) {
			roce_v16 v, m;
			memcpy(&v, l3 + 16 * i, 16);
			memcpy(&m, mask + 16 * i, 16);
			buf[i] = v | m;
		}
		n = chunks * 16;   /* whole vectors: no partial (unforwardable) tail load */
	} else {
		/* Short or partial headers: byte copy (bytes past n are never covered). */
		n = hdr_len < masked ? hdr_len : masked;
		memcpy(buf, l3, n);
		mask_bytes((uint8_t *)buf, ipv6, ip_len);
	}

	uint32_t crc = roce_crc32(ROCE_ICRC_SEED, buf, n);
	if (hdr_len > n)
		crc = roce_crc32(crc, l3 + n, hdr_len - n);
	return crc;
}

uint32_t
roce_icrc_update(uint32_t crc, const void *data, size_t len)
{
	return roce_crc32(crc, data, len);
}

uint32_t
roce_icrc_final(uint32_t crc)
{
	return crc;
}

uint32_t
roce_icrc_compute(const uint8_t *l3, size_t len)
{
	return roce_icrc_final(roce_icrc_headers(l3, len));
}
