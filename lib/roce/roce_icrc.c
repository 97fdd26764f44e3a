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
 * Masking without a copy. The CRC is linear and its register is XORed with
 * the data word by word, so setting the variant bits to ones (data ^ delta,
 * delta = ~data & field mask) changes the register state after the header by
 * a value that a seed perturbation e reproduces: delta byte d at offset p is
 * equivalent to e = A^-p (d), A being one zero byte of CRC shift (for p < 4
 * simply d << 8p). So the frame is read once, in place, by one CRC call
 * from ROCE_ICRC_SEED ^ e; e is summed from per-field nibble tables
 * (roce_icrc_field_tab, 1.9 KB), built once from ROCE_ICRC_MASKED_LIST.
 */

/* X(layout, offset from the IP header, mask of the variant bits). */
#define ROCE_ICRC_MASKED_LIST(X) \
	X(4, offsetof(struct roce_ipv4_hdr, tos), 0xff) \
	X(4, offsetof(struct roce_ipv4_hdr, ttl), 0xff) \
	X(4, offsetof(struct roce_ipv4_hdr, checksum), 0xff) \
	X(4, offsetof(struct roce_ipv4_hdr, checksum) + 1, 0xff) \
	X(4, IPV4_LEN + offsetof(struct roce_udp_hdr, checksum), 0xff) \
	X(4, IPV4_LEN + offsetof(struct roce_udp_hdr, checksum) + 1, 0xff) \
	X(4, IPV4_LEN + UDP_LEN + offsetof(struct roce_bth, qpn), 0xff) \
	X(6, 0, 0x0f)     /* traffic class, high nibble */ \
	X(6, 1, 0xff)     /* traffic class low nibble, flow label */ \
	X(6, 2, 0xff) \
	X(6, 3, 0xff) \
	X(6, offsetof(struct roce_ipv6_hdr, hop_limit), 0xff) \
	X(6, IPV6_LEN + offsetof(struct roce_udp_hdr, checksum), 0xff) \
	X(6, IPV6_LEN + offsetof(struct roce_udp_hdr, checksum) + 1, 0xff) \
	X(6, IPV6_LEN + UDP_LEN + offsetof(struct roce_bth, qpn), 0xff)

struct masked_field {
	uint8_t offset;
	uint8_t mask;
};

#define MASKED_FIELD(l, off, m) { .offset = (off), .mask = (m) },
static const struct masked_field masked_fields[] = { ROCE_ICRC_MASKED_LIST(MASKED_FIELD) };
#undef MASKED_FIELD
#define COUNT_V4(l, off, m) +((l) == 4)
enum { MASKED_V4 = 0 ROCE_ICRC_MASKED_LIST(COUNT_V4) };
#undef COUNT_V4
enum { MASKED_V6 = sizeof(masked_fields) / sizeof(masked_fields[0]) - MASKED_V4 };

/* [field][nibble 0 = low, 1 = high][value]: seed perturbation of that delta. */
static uint32_t field_tab[MASKED_V4 + MASKED_V6][2][16];

/* @return the CRC register one zero byte earlier (inverse of A; reflected poly 0xedb88320). */
static uint32_t
crc_unshift_byte(uint32_t s)
{
	for (int i = 0; i < 8; i++)
		s = (s & 0x80000000u) ? ((s ^ 0xedb88320u) << 1) | 1 : s << 1;
	return s;
}

__attribute__((constructor)) static void
field_tab_init(void)
{
	for (size_t f = 0; f < MASKED_V4 + MASKED_V6; f++)
		for (uint32_t half = 0; half < 2; half++)
			for (uint32_t v = 0; v < 16; v++) {
				uint32_t e = v << (4 * half);
				for (unsigned p = 0; p < masked_fields[f].offset; p++)
					e = crc_unshift_byte(e);
				field_tab[f][half][v] = e;
			}
}

/* @return the seed perturbation that sets the variant fields of @p l3 to ones. */
static inline uint32_t
masked_seed_delta(const uint8_t *l3, size_t first, size_t count)
{
	uint32_t e = 0;
	for (size_t f = first; f < first + count; f++) {
		uint8_t d = (uint8_t)~l3[masked_fields[f].offset] & masked_fields[f].mask;
		e ^= field_tab[f][0][d & 15] ^ field_tab[f][1][d >> 4];
	}
	return e;
}

/* Short or partial headers (never valid RoCEv2, but defined): masked byte copy. */
static uint32_t
icrc_headers_partial(const uint8_t *l3, size_t hdr_len, bool ipv6)
{
	uint8_t buf[MASKED_MAX] = { 0 };
	size_t n = hdr_len < sizeof(buf) ? hdr_len : sizeof(buf);

	memcpy(buf, l3, n);
	for (size_t f = ipv6 ? MASKED_V4 : 0, end = ipv6 ? MASKED_V4 + MASKED_V6 : MASKED_V4;
	     f < end; f++)
		buf[masked_fields[f].offset] |= masked_fields[f].mask;
	return roce_crc32(ROCE_ICRC_SEED, buf, n);
}

uint32_t
roce_icrc_headers(const uint8_t *l3, size_t hdr_len)
{
	bool ipv6 = hdr_len > 0 && (l3[0] >> 4) == 6;
	size_t masked = (ipv6 ? IPV6_LEN : IPV4_LEN) + UDP_LEN + ROCE_BTH_LEN;  /* 40 or 60 */

	if (hdr_len < masked)
		return icrc_headers_partial(l3, hdr_len, ipv6);
	uint32_t e = ipv6 ? masked_seed_delta(l3, MASKED_V4, MASKED_V6)
			  : masked_seed_delta(l3, 0, MASKED_V4);
	return roce_crc32(ROCE_ICRC_SEED ^ e, l3, hdr_len);
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
