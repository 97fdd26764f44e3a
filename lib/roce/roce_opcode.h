/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * RoCEv2 BTH opcodes as one list (IBTA Vol. 1 9.2, Annex A17 for CNP).
 *
 * The list is expanded into the opcode enum, the name table and the
 * descriptor table (lib/roce/roce_opcode.c); nothing else spells opcodes.
 * Header offsets are computed from the header-presence bits in wire order,
 * never hand-summed.
 */
#ifndef ROCE_OPCODE_H
#define ROCE_OPCODE_H

#include <stdbool.h>
#include <stdint.h>

/** Extension headers that may follow the BTH, in wire order. */
enum roce_hdr_bit {
	ROCE_HDR_RDETH = 1u << 0,  /**< reliable datagram (not supported) */
	ROCE_HDR_DETH = 1u << 1,   /**< datagram: Q_Key, source QP */
	ROCE_HDR_FETH = 1u << 2,   /**< FLUSH: placement type, selectivity (IBTA 1.5; before the RETH) */
	ROCE_HDR_RETH = 1u << 3,   /**< RDMA: VA, R_Key, DMA length */
	ROCE_HDR_ATMETH = 1u << 4, /**< atomic request */
	ROCE_HDR_AETH = 1u << 5,   /**< ACK: syndrome, MSN */
	ROCE_HDR_ATMACK = 1u << 6, /**< atomic ACK: original data */
	ROCE_HDR_IMMDT = 1u << 7,  /**< immediate data */
	ROCE_HDR_IETH = 1u << 8,   /**< R_Key to invalidate */
	ROCE_HDR_CNP = 1u << 9,    /**< 16 reserved bytes of a CNP */
};

/** Number of extension header bits (the length of roce_opcode_desc.offset). */
#define ROCE_HDR_BITS 10

/** What an opcode is and does; independent of the header bits. */
enum roce_kind_bit {
	ROCE_KIND_PAYLOAD = 1u << 0, /**< carries payload */
	ROCE_KIND_FIRST = 1u << 1,   /**< first packet of a message */
	ROCE_KIND_MIDDLE = 1u << 2,  /**< middle packet */
	ROCE_KIND_LAST = 1u << 3,    /**< last packet (ONLY = FIRST|LAST) */
	ROCE_KIND_REQUEST = 1u << 4, /**< requester -> responder */
	ROCE_KIND_RESPONSE = 1u << 5,/**< responder -> requester */
	ROCE_KIND_SEND = 1u << 6,
	ROCE_KIND_WRITE = 1u << 7,
	ROCE_KIND_READ = 1u << 8,
	ROCE_KIND_ATOMIC = 1u << 9,
	ROCE_KIND_ACK = 1u << 10,
	ROCE_KIND_IMM = 1u << 11,     /**< completes with immediate data */
	ROCE_KIND_INV = 1u << 12,     /**< completes with invalidate */
	ROCE_KIND_CNP = 1u << 13,
	ROCE_KIND_ATOMIC_WRITE = 1u << 14, /**< RDMA ATOMIC WRITE: 8 bytes stored at once */
	ROCE_KIND_FLUSH = 1u << 15,        /**< RDMA FLUSH: make earlier writes visible/persistent */
};

/** Transport prefixes (top three bits of the opcode). */
enum roce_transport {
	ROCE_TRANSPORT_RC = 0x00,
	ROCE_TRANSPORT_UC = 0x20,
	ROCE_TRANSPORT_RD = 0x40,
	ROCE_TRANSPORT_UD = 0x60,
	ROCE_TRANSPORT_CNP = 0x80,
	ROCE_TRANSPORT_XRC = 0xa0,
};

#define ROCE_K_REQ_SEND (ROCE_KIND_REQUEST | ROCE_KIND_SEND | ROCE_KIND_PAYLOAD)
#define ROCE_K_REQ_WRITE (ROCE_KIND_REQUEST | ROCE_KIND_WRITE | ROCE_KIND_PAYLOAD)
#define ROCE_K_RSP_READ (ROCE_KIND_RESPONSE | ROCE_KIND_READ | ROCE_KIND_PAYLOAD)

/*
 * ROCE_OPCODE(symbol, value, extension headers, kind)
 * Value, header set and kind per IBTA Vol. 1 table 39 / Linux ib_pack.h.
 */
#define ROCE_OPCODE_LIST(OP) \
	/* RC */ \
	OP(RC_SEND_FIRST, 0x00, 0, ROCE_K_REQ_SEND | ROCE_KIND_FIRST) \
	OP(RC_SEND_MIDDLE, 0x01, 0, ROCE_K_REQ_SEND | ROCE_KIND_MIDDLE) \
	OP(RC_SEND_LAST, 0x02, 0, ROCE_K_REQ_SEND | ROCE_KIND_LAST) \
	OP(RC_SEND_LAST_WITH_IMMEDIATE, 0x03, ROCE_HDR_IMMDT, ROCE_K_REQ_SEND | ROCE_KIND_LAST | ROCE_KIND_IMM) \
	OP(RC_SEND_ONLY, 0x04, 0, ROCE_K_REQ_SEND | ROCE_KIND_FIRST | ROCE_KIND_LAST) \
	OP(RC_SEND_ONLY_WITH_IMMEDIATE, 0x05, ROCE_HDR_IMMDT, ROCE_K_REQ_SEND | ROCE_KIND_FIRST | ROCE_KIND_LAST | ROCE_KIND_IMM) \
	OP(RC_RDMA_WRITE_FIRST, 0x06, ROCE_HDR_RETH, ROCE_K_REQ_WRITE | ROCE_KIND_FIRST) \
	OP(RC_RDMA_WRITE_MIDDLE, 0x07, 0, ROCE_K_REQ_WRITE | ROCE_KIND_MIDDLE) \
	OP(RC_RDMA_WRITE_LAST, 0x08, 0, ROCE_K_REQ_WRITE | ROCE_KIND_LAST) \
	OP(RC_RDMA_WRITE_LAST_WITH_IMMEDIATE, 0x09, ROCE_HDR_IMMDT, ROCE_K_REQ_WRITE | ROCE_KIND_LAST | ROCE_KIND_IMM) \
	OP(RC_RDMA_WRITE_ONLY, 0x0a, ROCE_HDR_RETH, ROCE_K_REQ_WRITE | ROCE_KIND_FIRST | ROCE_KIND_LAST) \
	OP(RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, 0x0b, ROCE_HDR_RETH | ROCE_HDR_IMMDT, ROCE_K_REQ_WRITE | ROCE_KIND_FIRST | ROCE_KIND_LAST | ROCE_KIND_IMM) \
	OP(RC_RDMA_READ_REQUEST, 0x0c, ROCE_HDR_RETH, ROCE_KIND_REQUEST | ROCE_KIND_READ | ROCE_KIND_FIRST | ROCE_KIND_LAST) \
	OP(RC_RDMA_READ_RESPONSE_FIRST, 0x0d, ROCE_HDR_AETH, ROCE_K_RSP_READ | ROCE_KIND_FIRST) \
	OP(RC_RDMA_READ_RESPONSE_MIDDLE, 0x0e, 0, ROCE_K_RSP_READ | ROCE_KIND_MIDDLE) \
	OP(RC_RDMA_READ_RESPONSE_LAST, 0x0f, ROCE_HDR_AETH, ROCE_K_RSP_READ | ROCE_KIND_LAST) \
	OP(RC_RDMA_READ_RESPONSE_ONLY, 0x10, ROCE_HDR_AETH, ROCE_K_RSP_READ | ROCE_KIND_FIRST | ROCE_KIND_LAST) \
	OP(RC_ACKNOWLEDGE, 0x11, ROCE_HDR_AETH, ROCE_KIND_RESPONSE | ROCE_KIND_ACK | ROCE_KIND_FIRST | ROCE_KIND_LAST) \
	OP(RC_ATOMIC_ACKNOWLEDGE, 0x12, ROCE_HDR_AETH | ROCE_HDR_ATMACK, ROCE_KIND_RESPONSE | ROCE_KIND_ATOMIC | ROCE_KIND_ACK | ROCE_KIND_FIRST | ROCE_KIND_LAST) \
	OP(RC_COMPARE_SWAP, 0x13, ROCE_HDR_ATMETH, ROCE_KIND_REQUEST | ROCE_KIND_ATOMIC | ROCE_KIND_FIRST | ROCE_KIND_LAST) \
	OP(RC_FETCH_ADD, 0x14, ROCE_HDR_ATMETH, ROCE_KIND_REQUEST | ROCE_KIND_ATOMIC | ROCE_KIND_FIRST | ROCE_KIND_LAST) \
	OP(RC_SEND_LAST_WITH_INVALIDATE, 0x16, ROCE_HDR_IETH, ROCE_K_REQ_SEND | ROCE_KIND_LAST | ROCE_KIND_INV) \
	OP(RC_SEND_ONLY_WITH_INVALIDATE, 0x17, ROCE_HDR_IETH, ROCE_K_REQ_SEND | ROCE_KIND_FIRST | ROCE_KIND_LAST | ROCE_KIND_INV) \
	/* RC, IBTA 1.5 (Linux rxe since 6.2); both are answered by an empty \
	 * RDMA READ RESPONSE ONLY carrying the AETH */ \
	OP(RC_FLUSH, 0x1c, ROCE_HDR_FETH | ROCE_HDR_RETH, ROCE_KIND_REQUEST | ROCE_KIND_FLUSH | ROCE_KIND_FIRST | ROCE_KIND_LAST) \
	OP(RC_ATOMIC_WRITE, 0x1d, ROCE_HDR_RETH, ROCE_KIND_REQUEST | ROCE_KIND_ATOMIC_WRITE | ROCE_KIND_PAYLOAD | ROCE_KIND_FIRST | ROCE_KIND_LAST) \
	/* UC */ \
	OP(UC_SEND_FIRST, 0x20, 0, ROCE_K_REQ_SEND | ROCE_KIND_FIRST) \
	OP(UC_SEND_MIDDLE, 0x21, 0, ROCE_K_REQ_SEND | ROCE_KIND_MIDDLE) \
	OP(UC_SEND_LAST, 0x22, 0, ROCE_K_REQ_SEND | ROCE_KIND_LAST) \
	OP(UC_SEND_LAST_WITH_IMMEDIATE, 0x23, ROCE_HDR_IMMDT, ROCE_K_REQ_SEND | ROCE_KIND_LAST | ROCE_KIND_IMM) \
	OP(UC_SEND_ONLY, 0x24, 0, ROCE_K_REQ_SEND | ROCE_KIND_FIRST | ROCE_KIND_LAST) \
	OP(UC_SEND_ONLY_WITH_IMMEDIATE, 0x25, ROCE_HDR_IMMDT, ROCE_K_REQ_SEND | ROCE_KIND_FIRST | ROCE_KIND_LAST | ROCE_KIND_IMM) \
	OP(UC_RDMA_WRITE_FIRST, 0x26, ROCE_HDR_RETH, ROCE_K_REQ_WRITE | ROCE_KIND_FIRST) \
	OP(UC_RDMA_WRITE_MIDDLE, 0x27, 0, ROCE_K_REQ_WRITE | ROCE_KIND_MIDDLE) \
	OP(UC_RDMA_WRITE_LAST, 0x28, 0, ROCE_K_REQ_WRITE | ROCE_KIND_LAST) \
	OP(UC_RDMA_WRITE_LAST_WITH_IMMEDIATE, 0x29, ROCE_HDR_IMMDT, ROCE_K_REQ_WRITE | ROCE_KIND_LAST | ROCE_KIND_IMM) \
	OP(UC_RDMA_WRITE_ONLY, 0x2a, ROCE_HDR_RETH, ROCE_K_REQ_WRITE | ROCE_KIND_FIRST | ROCE_KIND_LAST) \
	OP(UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, 0x2b, ROCE_HDR_RETH | ROCE_HDR_IMMDT, ROCE_K_REQ_WRITE | ROCE_KIND_FIRST | ROCE_KIND_LAST | ROCE_KIND_IMM) \
	/* UD */ \
	OP(UD_SEND_ONLY, 0x64, ROCE_HDR_DETH, ROCE_K_REQ_SEND | ROCE_KIND_FIRST | ROCE_KIND_LAST) \
	OP(UD_SEND_ONLY_WITH_IMMEDIATE, 0x65, ROCE_HDR_DETH | ROCE_HDR_IMMDT, ROCE_K_REQ_SEND | ROCE_KIND_FIRST | ROCE_KIND_LAST | ROCE_KIND_IMM) \
	/* RoCEv2 congestion notification (Annex A17.9.3) */ \
	OP(CNP, 0x81, ROCE_HDR_CNP, ROCE_KIND_CNP)

/** BTH opcode values. */
enum roce_opcode {
#define ROCE_OPCODE_ENUM(sym, val, hdrs, kind) ROCE_OP_##sym = (val),
	ROCE_OPCODE_LIST(ROCE_OPCODE_ENUM)
#undef ROCE_OPCODE_ENUM
};

/** Descriptor of one opcode, computed from the list. */
struct roce_opcode_desc {
	const char *name;      /**< "RC_SEND_FIRST"; NULL if invalid */
	uint16_t hdrs;         /**< enum roce_hdr_bit set */
	uint16_t kind;         /**< enum roce_kind_bit set */
	uint8_t hdr_len;       /**< BTH + extension headers, bytes */
	uint8_t offset[ROCE_HDR_BITS]; /**< offset of each ext header from BTH start, by bit index */
};

/** Descriptor table indexed by opcode; entries with name == NULL are invalid. */
extern const struct roce_opcode_desc roce_opcode_table[256];

/** @return descriptor of @p opcode, or NULL if the opcode is not valid. */
static inline const struct roce_opcode_desc *
roce_opcode_desc(uint8_t opcode)
{
	const struct roce_opcode_desc *d = &roce_opcode_table[opcode];
	return d->name ? d : 0;
}

/** @return the transport prefix of @p opcode (enum roce_transport). */
static inline uint8_t
roce_opcode_transport(uint8_t opcode)
{
	return opcode & 0xe0;
}

#endif /* ROCE_OPCODE_H */
