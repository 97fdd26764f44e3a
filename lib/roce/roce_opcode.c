/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Opcode descriptor table, expanded from ROCE_OPCODE_LIST at compile time.
 *
 * Extension headers follow the BTH in one fixed order (IBTA Vol. 1 9.2,
 * figure "transport header order"): RDETH, DETH, RETH, AtomicETH, AETH,
 * AtomicAckETH, ImmDt, IETH; the CNP's reserved block stands alone. The bit
 * index of each header in enum roce_hdr_bit is its rank in that order, so
 * the offset of a header is the BTH length plus the sizes of every present
 * header of lower rank. Nothing is hand-summed. The two exceptions were added
 * after the others and the chain below visits them at their wire rank: the
 * XRCETH (bit 9) ranks between DETH and RETH (IBTA Vol. 1 9.2: BTH, RDETH,
 * DETH, XRCETH, RETH...), and the FETH of an IBTA 1.5 FLUSH (bit 10) right
 * before the RETH (BTH, FETH, RETH, as Linux rxe lays out RXE_FETH).
 */
#include "roce.h"

/* Sizes of the extension headers, by rank (bit index). */
#define ROCE_RDETH_LEN 4
#define ROCE_IMMDT_LEN 4
#define ROCE_IETH_LEN 4
#define ROCE_FETH_LEN 4
#define ROCE_CNP_RESV_LEN 16
#define ROCE_XRCETH_LEN 4

#define HDR_SIZE_0 ROCE_RDETH_LEN
#define HDR_SIZE_1 sizeof(struct roce_deth)
#define HDR_SIZE_2 sizeof(struct roce_reth)
#define HDR_SIZE_3 sizeof(struct roce_atmeth)
#define HDR_SIZE_4 sizeof(struct roce_aeth)
#define HDR_SIZE_5 sizeof(struct roce_atmack)
#define HDR_SIZE_6 ROCE_IMMDT_LEN
#define HDR_SIZE_7 ROCE_IETH_LEN
#define HDR_SIZE_8 ROCE_CNP_RESV_LEN
#define HDR_SIZE_9 ROCE_XRCETH_LEN
#define HDR_SIZE_10 ROCE_FETH_LEN

_Static_assert(ROCE_HDR_RDETH == 1u << 0 && ROCE_HDR_DETH == 1u << 1 &&
	       ROCE_HDR_RETH == 1u << 2 && ROCE_HDR_ATMETH == 1u << 3 &&
	       ROCE_HDR_AETH == 1u << 4 && ROCE_HDR_ATMACK == 1u << 5 &&
	       ROCE_HDR_IMMDT == 1u << 6 && ROCE_HDR_IETH == 1u << 7 &&
	       ROCE_HDR_CNP == 1u << 8 && ROCE_HDR_XRCETH == 1u << 9 &&
	       ROCE_HDR_FETH == 1u << 10,
	       "header bits must be ranked in wire order (XRCETH, FETH: see above)");
_Static_assert(sizeof(((struct roce_opcode_desc *)0)->offset) == ROCE_HDR_BITS,
	       "one offset per header bit");
_Static_assert(ROCE_KIND_FLUSH <= UINT16_MAX, "kind bits fit roce_opcode_desc.kind");
_Static_assert(ROCE_HDR_FETH <= UINT16_MAX, "header bits fit roce_opcode_desc.hdrs");

/* Bytes taken by header rank i if present in set h. */
#define HDR_BYTES(h, i) (((h) & (1u << (i))) ? HDR_SIZE_##i : 0)

/* Offset from the BTH start of header rank i (whether present or not). */
#define OFF_0(h) ROCE_BTH_LEN
#define OFF_1(h) (OFF_0(h) + HDR_BYTES(h, 0))
#define OFF_9(h) (OFF_1(h) + HDR_BYTES(h, 1)) /* XRCETH: after DETH */
#define OFF_10(h) (OFF_9(h) + HDR_BYTES(h, 9)) /* FETH: before RETH */
#define OFF_2(h) (OFF_10(h) + HDR_BYTES(h, 10))
#define OFF_3(h) (OFF_2(h) + HDR_BYTES(h, 2))
#define OFF_4(h) (OFF_3(h) + HDR_BYTES(h, 3))
#define OFF_5(h) (OFF_4(h) + HDR_BYTES(h, 4))
#define OFF_6(h) (OFF_5(h) + HDR_BYTES(h, 5))
#define OFF_7(h) (OFF_6(h) + HDR_BYTES(h, 6))
#define OFF_8(h) (OFF_7(h) + HDR_BYTES(h, 7))
#define HDR_END(h) (OFF_8(h) + HDR_BYTES(h, 8))

/* Offset of rank i if present, 0 if absent. */
#define OFF_IF(h, i) (((h) & (1u << (i))) ? OFF_##i(h) : 0)

#define ROCE_OPCODE_DESC(sym, val, h, k) \
	[val] = { \
		.name = #sym, \
		.hdrs = (h), \
		.kind = (k), \
		.hdr_len = HDR_END(h), \
		.offset = { OFF_IF(h, 0), OFF_IF(h, 1), OFF_IF(h, 2), \
			    OFF_IF(h, 3), OFF_IF(h, 4), OFF_IF(h, 5), \
			    OFF_IF(h, 6), OFF_IF(h, 7), OFF_IF(h, 8), \
			    OFF_IF(h, 9), OFF_IF(h, 10) }, \
	},

const struct roce_opcode_desc roce_opcode_table[256] = {
	ROCE_OPCODE_LIST(ROCE_OPCODE_DESC)
};

/* Every opcode fits its byte and its header block fits the uint8_t length. */
#define ROCE_OPCODE_CHECK(sym, val, h, k) \
	_Static_assert((val) <= 0xff, #sym " fits a byte"); \
	_Static_assert(HDR_END(h) <= 0xff, #sym " header length fits");
ROCE_OPCODE_LIST(ROCE_OPCODE_CHECK)
