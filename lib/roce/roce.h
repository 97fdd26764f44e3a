/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * lib/roce: the RoCEv2 wire format.
 *
 * Typed big-endian header structs, a parser that validates a whole frame and
 * yields one parsed record (struct roce_pkt) or a drop reason, a builder that
 * writes Ethernet/IP/UDP/BTH/extension headers from a record, the ICRC
 * (IBTA Annex A17.3.3) computed in chunks, and 24-bit PSN arithmetic.
 *
 * Pure C, no DPDK: the daemon, the tools, the tests and the fuzzer share it.
 * All multi-byte wire fields are big-endian (`roce_be*_t`); the parsed record
 * holds host-order values.
 */
#ifndef ROCE_H
#define ROCE_H

#include <endian.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "roce_opcode.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef uint16_t roce_be16_t; /**< big-endian 16-bit wire field */
typedef uint32_t roce_be32_t; /**< big-endian 32-bit wire field */
typedef uint64_t roce_be64_t; /**< big-endian 64-bit wire field (may be unaligned: use accessors) */

#define ROCE_UDP_PORT 4791       /**< IANA RoCEv2 destination port */
#define ROCE_ICRC_LEN 4
#define ROCE_BTH_LEN 12
#define ROCE_PSN_MASK 0xffffffu
#define ROCE_QPN_MASK 0xffffffu
#define ROCE_DEFAULT_PKEY 0xffff
#define ROCE_GSI_QKEY 0x80010000u
#define ROCE_ETHERTYPE_IPV4 0x0800
#define ROCE_ETHERTYPE_IPV6 0x86dd
#define ROCE_ETHERTYPE_VLAN 0x8100
#define ROCE_ETHERTYPE_ARP 0x0806

/** @name Wire header layouts (packed, network byte order) @{ */
struct roce_eth_hdr {
	uint8_t dst[6];
	uint8_t src[6];
	roce_be16_t ethertype;
} __attribute__((packed));

struct roce_vlan_hdr {
	roce_be16_t tci;
	roce_be16_t ethertype;
} __attribute__((packed));

struct roce_ipv4_hdr {
	uint8_t version_ihl;
	uint8_t tos;
	roce_be16_t total_length;
	roce_be16_t id;
	roce_be16_t frag_off;  /**< flags (DF = 0x4000) + fragment offset */
	uint8_t ttl;
	uint8_t protocol;
	roce_be16_t checksum;
	uint8_t src[4];
	uint8_t dst[4];
} __attribute__((packed));

struct roce_ipv6_hdr {
	roce_be32_t vtc_flow;  /**< version(4) traffic class(8) flow label(20) */
	roce_be16_t payload_len;
	uint8_t next_header;
	uint8_t hop_limit;
	uint8_t src[16];
	uint8_t dst[16];
} __attribute__((packed));

struct roce_udp_hdr {
	roce_be16_t src_port;
	roce_be16_t dst_port;
	roce_be16_t length;
	roce_be16_t checksum;
} __attribute__((packed));

/** Base Transport Header (IBTA 9.2). Odd fields through accessors below. */
struct roce_bth {
	uint8_t opcode;
	uint8_t flags;          /**< SE(7) M(6) PadCnt(5:4) TVer(3:0) */
	roce_be16_t pkey;
	roce_be32_t qpn;        /**< FECN(31) BECN(30) resv6a(29:24) DestQP(23:0) */
	roce_be32_t apsn;       /**< AckReq(31) resv7(30:24) PSN(23:0) */
} __attribute__((packed));

struct roce_reth {
	roce_be64_t va;
	roce_be32_t rkey;
	roce_be32_t length;
} __attribute__((packed));

struct roce_aeth {
	roce_be32_t smsn;       /**< syndrome(31:24) MSN(23:0) */
} __attribute__((packed));

struct roce_atmeth {
	roce_be64_t va;
	roce_be32_t rkey;
	roce_be64_t swap_add;
	roce_be64_t compare;
} __attribute__((packed));

struct roce_atmack {
	roce_be64_t orig;
} __attribute__((packed));

struct roce_deth {
	roce_be32_t qkey;
	roce_be32_t sqp;        /**< reserved(31:24) SrcQP(23:0) */
} __attribute__((packed));
/** @} */

_Static_assert(sizeof(struct roce_bth) == 12, "BTH is 12 bytes");
_Static_assert(sizeof(struct roce_reth) == 16, "RETH is 16 bytes");
_Static_assert(sizeof(struct roce_aeth) == 4, "AETH is 4 bytes");
_Static_assert(sizeof(struct roce_atmeth) == 28, "AtomicETH is 28 bytes");
_Static_assert(sizeof(struct roce_atmack) == 8, "AtomicAckETH is 8 bytes");
_Static_assert(sizeof(struct roce_deth) == 8, "DETH is 8 bytes");
_Static_assert(sizeof(struct roce_ipv4_hdr) == 20, "IPv4 header is 20 bytes");
_Static_assert(sizeof(struct roce_ipv6_hdr) == 40, "IPv6 header is 40 bytes");

/**
 * FLUSH extended transport header (IBTA 1.5, 4 bytes before the RETH; Linux
 * rxe_hdr.h feth): bits 3:0 placement type, bits 5:4 selectivity, the rest
 * reserved.
 */
enum roce_feth {
	ROCE_FETH_PLT_MASK = 0x0000000f,
	ROCE_FETH_SEL_MASK = 0x00000030,
	ROCE_FETH_SEL_SHIFT = 4,
	ROCE_FLUSH_GLOBAL = 1u << 0,     /**< placement type: global visibility */
	ROCE_FLUSH_PERSISTENT = 1u << 1, /**< placement type: persistence */
	ROCE_FLUSH_RANGE = 0,            /**< selectivity: the RETH's range */
	ROCE_FLUSH_MR = 1,               /**< selectivity: the whole region of the R_Key */
};

/** AETH syndromes (IBTA 9.7.5.1.3; Linux rxe_hdr.h). */
enum roce_aeth_syndrome {
	ROCE_AETH_TYPE_MASK = 0xe0,
	ROCE_AETH_ACK = 0x00,        /**< low 5 bits: credit count */
	ROCE_AETH_RNR_NAK = 0x20,    /**< low 5 bits: RNR timer code */
	ROCE_AETH_NAK = 0x60,
	ROCE_AETH_NAK_PSN_SEQ_ERROR = 0x60,
	ROCE_AETH_NAK_INVALID_REQ = 0x61,
	ROCE_AETH_NAK_REM_ACC_ERR = 0x62,
	ROCE_AETH_NAK_REM_OP_ERR = 0x63,
	ROCE_AETH_NAK_INV_RD_REQ = 0x64,
	ROCE_AETH_ACK_UNLIMITED = 0x1f, /**< credit count "invalid" (rxe sends it) */
};

/*
 * Drop reasons: one list, expanded into the enum and names. Every frame the
 * parser rejects gets exactly one of these; callers count them.
 */
#define ROCE_DROP_LIST(X) \
	X(NONE, "accepted") \
	X(ETH_TRUNCATED, "frame shorter than Ethernet header") \
	X(NOT_IP, "ethertype is not IPv4/IPv6") \
	X(IP_TRUNCATED, "frame shorter than IP header") \
	X(IP_VERSION, "IP version does not match ethertype") \
	X(IP_IHL, "IPv4 header length is not 20 (options unsupported)") \
	X(IP_CHECKSUM, "IPv4 header checksum mismatch") \
	X(IP_LENGTH, "IP length inconsistent with frame") \
	X(IP_FRAGMENT, "IPv4 fragment (MF/offset) or reserved flag set") \
	X(NOT_UDP, "IP protocol/next header is not UDP") \
	X(UDP_TRUNCATED, "frame shorter than UDP header") \
	X(NOT_ROCE_PORT, "UDP destination port is not 4791") \
	X(UDP_LENGTH, "UDP length inconsistent with IP length") \
	X(UDP_CHECKSUM, "non-zero UDP checksum mismatch") \
	X(BTH_TRUNCATED, "UDP payload shorter than BTH + ICRC") \
	X(BTH_TVER, "BTH transport version is not 0") \
	X(OPCODE_INVALID, "opcode not valid") \
	X(HDR_TRUNCATED, "packet shorter than its extension headers + ICRC") \
	X(PAD, "pad count inconsistent with payload") \
	X(PAYLOAD_LENGTH, "payload length invalid for opcode") \
	X(ICRC, "ICRC mismatch")

enum roce_drop_reason {
#define ROCE_DROP_ENUM(sym, text) ROCE_DROP_##sym,
	ROCE_DROP_LIST(ROCE_DROP_ENUM)
#undef ROCE_DROP_ENUM
	ROCE_DROP_COUNT
};

/** @return a short description of @p reason ("accepted" for NONE). */
const char *roce_drop_reason_str(enum roce_drop_reason reason);
/** @return the symbol of @p reason ("ICRC", ...). */
const char *roce_drop_reason_name(enum roce_drop_reason reason);

/** Addresses and L2/L3 fields of a frame (what the builder needs to emit one). */
struct roce_l3 {
	uint8_t dmac[6];
	uint8_t smac[6];
	bool vlan_present;
	uint16_t vlan_tci;
	bool ipv6;              /**< IPv6 when true, IPv4 otherwise */
	uint8_t sgid[16];       /**< source; IPv4 as ::ffff:a.b.c.d */
	uint8_t dgid[16];       /**< destination; IPv4 as ::ffff:a.b.c.d */
	uint8_t traffic_class;  /**< IPv4 TOS / IPv6 traffic class */
	uint8_t hop_limit;      /**< IPv4 TTL / IPv6 hop limit */
	uint32_t flow_label;    /**< IPv6 only, 20 bits */
	uint16_t ip_id;         /**< IPv4 identification */
	bool ipv4_df_clear;     /**< IPv4 DF flag clear (default false: DF set, as rxe sends) */
	uint16_t udp_sport;     /**< entropy, constant per QP (roce_udp_sport()) */
	bool udp_csum;          /**< UDP checksum present (default false: sent as 0, as rxe does) */
};

/**
 * One parsed RoCEv2 packet: every header field in host order. Produced by
 * roce_parse(), consumed by lib/xport, and accepted back by roce_build() so a
 * packet rebuilt from its record is byte-identical to the original.
 */
struct roce_pkt {
	struct roce_l3 l3;
	/* BTH */
	uint8_t opcode;
	bool se;                /**< solicited event */
	bool migreq;
	uint8_t pad;            /**< pad count 0..3 */
	uint8_t tver;
	uint16_t pkey;
	bool fecn;
	bool becn;
	uint8_t resv6a;         /**< reserved bits of BTH byte 4 (kept for rebuild) */
	uint32_t dest_qpn;      /**< 24 bits */
	bool ack_req;
	uint8_t resv7;          /**< reserved bits of BTH byte 8 (kept for rebuild) */
	uint32_t psn;           /**< 24 bits */
	/* extension headers: valid when roce_pkt_has(pkt, ROCE_HDR_x) */
	uint16_t hdrs;          /**< enum roce_hdr_bit set, from the opcode */
	struct { uint64_t va; uint32_t rkey; uint32_t length; } reth;
	/** FETH: placement type (ROCE_FLUSH_GLOBAL | _PERSISTENT), selectivity
	 *  (ROCE_FLUSH_RANGE/_MR), the other bits (kept for rebuild) */
	struct { uint8_t placement; uint8_t selectivity; uint32_t resv; } feth;
	struct { uint8_t syndrome; uint32_t msn; } aeth;
	struct { uint64_t va; uint32_t rkey; uint64_t swap_add; uint64_t compare; } atmeth;
	uint64_t atmack_orig;
	struct { uint32_t qkey; uint32_t src_qpn; uint8_t resv; } deth;
	uint32_t imm;           /**< ImmDt, as on the wire (big-endian value in host int) */
	uint32_t ieth_rkey;
	uint32_t xrc_srqn;      /**< XRCETH: the XRC SRQ the request is for (24 bits) */
	/* payload: points into the parsed frame (or the caller's buffer when building) */
	const uint8_t *payload;
	uint32_t payload_len;   /**< without pad */
	uint32_t icrc;          /**< as received (host order of the LE wire word) */
	uint16_t l3_offset;     /**< offset of the IP header in the frame */
	uint16_t bth_offset;    /**< offset of the BTH in the frame */
	uint32_t frame_len;     /**< total bytes parsed, ICRC included */
};

/** @return true if @p pkt carries extension header @p bit. */
static inline bool
roce_pkt_has(const struct roce_pkt *pkt, enum roce_hdr_bit bit)
{
	return (pkt->hdrs & bit) != 0;
}

/**
 * Validate and parse a whole RoCEv2 frame (Ethernet onward, no FCS).
 * Checks, in this order (the first failure is returned): Ethernet/VLAN
 * length, ethertype, IP header length, IP version, IPv4 IHL, IPv4 header
 * checksum, IP total length vs frame, IPv4 fragment, protocol UDP, UDP
 * length/port, UDP checksum when non-zero, BTH length, TVer, opcode validity
 * (RC/UC/UD/XRC/CNP only), extension header lengths, payload/pad rules, ICRC.
 * The IP length, not @p len, bounds the packet: trailing Ethernet padding
 * (frames padded to 60 bytes) is ignored. Never reads past frame[len - 1].
 *
 * Payload/pad rules: opcodes without payload (READ request, ACK, atomics,
 * CNP) must have none and pad 0; otherwise payload + pad is a multiple of 4,
 * pad <= payload + pad, and FIRST/MIDDLE packets have pad 0 and a non-empty
 * payload; ATOMIC WRITE carries exactly 8 bytes, unpadded. The path-MTU size
 * of FIRST/MIDDLE is a QP check, not done here.
 *
 * @param frame  frame bytes
 * @param len    frame length
 * @param[out] pkt  filled on success; payload points into @p frame
 * @return ROCE_DROP_NONE, or the reason the frame must be dropped
 */
enum roce_drop_reason roce_parse(const uint8_t *frame, size_t len, struct roce_pkt *pkt);

/** As roce_parse() without the ICRC check (for loopback and offloaded ICRC). */
enum roce_drop_reason roce_parse_no_icrc(const uint8_t *frame, size_t len, struct roce_pkt *pkt);

/** The VLAN identifier: the low 12 bits of an 802.1Q tag's TCI (IEEE 802.1Q section 9.6). */
#define ROCE_VLAN_VID_MASK 0x0fffu

/**
 * The VLAN a received frame belongs to: the VID of its 802.1Q tag, 0 when it
 * has none or only a priority tag (VID 0, IEEE 802.1Q: "priority-tagged",
 * which belongs to the untagged network). Reads the ethertype and the TCI
 * only, where roce_classify() found them; a frame too short for its tag
 * (roce_classify(): MALFORMED) gives 0.
 */
static inline uint16_t
roce_eth_vid(const uint8_t *frame, size_t len)
{
	if (len < sizeof(struct roce_eth_hdr) + sizeof(struct roce_vlan_hdr) ||
	    (frame[12] << 8 | frame[13]) != ROCE_ETHERTYPE_VLAN)
		return 0;
	return (uint16_t)((frame[14] << 8 | frame[15]) & ROCE_VLAN_VID_MASK);
}

/**
 * Where the Ethernet header of @p frame ends: past one 802.1Q tag if it has
 * one (the header roce_classify() reads). @p l3_off gets the offset of the
 * next header, @p ethertype its type (the tag's inner one).
 * @return false when @p frame is shorter than its Ethernet header and tag
 */
static inline bool
roce_eth_l3(const uint8_t *frame, size_t len, size_t *l3_off, uint16_t *ethertype)
{
	size_t off = sizeof(struct roce_eth_hdr);

	if (len < off)
		return false;
	*ethertype = (uint16_t)(frame[12] << 8 | frame[13]);
	if (*ethertype == ROCE_ETHERTYPE_VLAN) {
		off += sizeof(struct roce_vlan_hdr);
		if (len < off)
			return false;
		*ethertype = (uint16_t)(frame[16] << 8 | frame[17]);
	}
	*l3_off = off;
	return true;
}

/** What a received frame is (roce_classify()). */
enum roce_class {
	/** Cut short before its class is known: Ethernet/802.1Q, IPv4/IPv6 or
	 *  UDP header truncated; the drop reason says which. */
	ROCE_CLASS_MALFORMED,
	/** IPv4/IPv6 UDP to port 4791: parsed into the record as roce_parse()
	 *  does; the drop reason is ROCE_DROP_NONE or why it must be dropped. */
	ROCE_CLASS_ROCE,
	ROCE_CLASS_ARP,     /**< ethertype ARP (the body is the slow path's to check) */
	ROCE_CLASS_ND,      /**< ICMPv6 types 133..137 (router/neighbour discovery, redirect) */
	ROCE_CLASS_ECHO,    /**< ICMP echo request (IPv4) or ICMPv6 echo request */
	ROCE_CLASS_OTHER,   /**< anything else (not IP, other protocols, other UDP ports) */
};

/** roce_classify() flag: do not check the ICRC (loopback, offloaded ICRC). */
#define ROCE_CLASSIFY_NO_ICRC 1u

/**
 * Classify a received frame (Ethernet onward, no FCS) in one pass, and parse
 * it when it is RoCEv2: the frame is read once, so a caller never parses it
 * again (nor after handing the record to another thread: the record is the
 * result).
 *
 * Steps, first match wins:
 *  - shorter than Ethernet (or its 802.1Q tag) -> MALFORMED, ETH_TRUNCATED;
 *  - ethertype ARP -> ARP; not IPv4/IPv6 -> OTHER;
 *  - shorter than the fixed IPv4 (20) / IPv6 (40) header -> MALFORMED,
 *    IP_TRUNCATED;
 *  - IPv4 ICMP echo request (IHL >= 5 and the 8-byte ICMP header within
 *    the frame) -> ECHO; IPv6 next header ICMPv6 with its 8-byte header
 *    within the frame: types 133..137 -> ND, 128 -> ECHO; an ICMP/ICMPv6
 *    message shorter than 8 bytes or of another type -> OTHER;
 *  - protocol not UDP -> OTHER;
 *  - UDP header (at the IPv4 IHL / after the IPv6 header) past the end of
 *    the frame -> MALFORMED, UDP_TRUNCATED;
 *  - UDP destination port not 4791 -> OTHER;
 *  - otherwise ROCE: the checks of roce_parse() from the IP header on (the
 *    ICRC unless @p flags has ROCE_CLASSIFY_NO_ICRC); @p pkt is filled as
 *    roce_parse() fills it and @p drop is its result.
 * Non-RoCE classes leave @p pkt untouched (not even zeroed). Never reads
 * past frame[len - 1].
 *
 * @param frame  frame bytes
 * @param len    frame length
 * @param flags  0 or ROCE_CLASSIFY_NO_ICRC
 * @param[out] pkt   the parsed record (ROCE only); payload points into @p frame
 * @param[out] drop  ROCE_DROP_NONE, or why the frame must be dropped
 *                   (MALFORMED, or a ROCE frame that failed validation)
 * @return the class
 */
enum roce_class roce_classify(const uint8_t *frame, size_t len, unsigned int flags,
			      struct roce_pkt *pkt, enum roce_drop_reason *drop);

/** @return the name of @p cls ("roce", "arp", ...). */
const char *roce_class_name(enum roce_class cls);

/**
 * @return bytes of Ethernet + (VLAN) + IP + UDP + BTH + extension headers
 * that roce_build_headers() writes for @p pkt.
 */
size_t roce_headers_len(const struct roce_pkt *pkt);

/**
 * Write every header of @p pkt (Ethernet through the last extension header)
 * into @p buf. IP/UDP lengths account for pkt->payload_len, pkt->pad and the
 * ICRC; the IPv4 checksum is computed; the UDP checksum is written as 0 (it
 * covers the payload and ICRC, so only roce_build() can fill it in when
 * pkt->l3.udp_csum is set). The CNP's 16 reserved bytes are written as zero.
 *
 * @return bytes written, or 0 if @p cap is too small or the opcode invalid
 */
size_t roce_build_headers(const struct roce_pkt *pkt, uint8_t *buf, size_t cap);

/**
 * Build a complete frame: headers, pkt->payload, pad bytes (zero) and ICRC,
 * then the UDP checksum if pkt->l3.udp_csum. A record from roce_parse() is
 * rebuilt byte for byte (up to frame_len; trailing Ethernet padding is not
 * reproduced). The same as roce_build_gather() with one segment.
 * @return frame length, or 0 if @p cap is too small, the opcode invalid, the
 *         lengths overflow IP, or payload_len > 0 with a NULL payload
 */
size_t roce_build(const struct roce_pkt *pkt, uint8_t *buf, size_t cap);

/** One piece of a frame's payload (roce_build_gather()). */
struct roce_seg {
	const uint8_t *addr;    /**< first byte; may be NULL only when len is 0 */
	uint32_t len;           /**< bytes */
};

/**
 * Build a complete frame whose payload is gathered from @p nseg segments
 * (the transport engine's frames point into registered memory): headers,
 * @p seg[0..nseg) in order, pad bytes (zero), ICRC (chained over each
 * segment right after it is copied), then the UDP checksum if
 * pkt->l3.udp_csum. pkt->payload is not read; pkt->payload_len must equal
 * the segments' total length.
 * @return frame length, or 0 if @p cap is too small, the opcode invalid, the
 *         lengths overflow IP, or the segments do not add up to payload_len
 *         (or one with len > 0 has a NULL addr)
 */
size_t roce_build_gather(const struct roce_pkt *pkt, const struct roce_seg *seg, uint32_t nseg,
			 uint8_t *buf, size_t cap);

/**
 * roce_build_gather() for a frame that never leaves this host: the ICRC
 * field is written as zero, not computed. For the daemon's loopback, whose
 * receive path classifies with ROCE_CLASSIFY_NO_ICRC (the frame is the
 * daemon's own, in its own memory); a frame that is captured or goes to a
 * port needs roce_build_gather().
 */
size_t roce_build_gather_local(const struct roce_pkt *pkt, const struct roce_seg *seg,
			       uint32_t nseg, uint8_t *buf, size_t cap);

/**
 * @return the length of the frame roce_build_gather() and
 *         roce_build_gather_local() make from @p pkt (headers, payload_len,
 *         pad, ICRC), or 0 if they refuse the record (no such opcode, the
 *         lengths overflow IP). Nothing is built: the daemon's loopback
 *         passes a frame by reference as its record alone.
 */
size_t roce_frame_len(const struct roce_pkt *pkt);

/** @return the VLAN ID a frame built from @p pkt carries; 0 untagged (as roce_eth_vid()). */
static inline uint16_t
roce_pkt_vid(const struct roce_pkt *pkt)
{
	return pkt->l3.vlan_present ? (uint16_t)(pkt->l3.vlan_tci & ROCE_VLAN_VID_MASK) : 0;
}

/**
 * The record roce_classify() with ROCE_CLASSIFY_NO_ICRC gives for the frame
 * @p frame of @p len bytes that roce_build_gather_local() just built from
 * @p pkt, made without parsing it (the daemon's loopback: its own frames
 * are not parsed back): @p pkt with every field cut to its width on the
 * wire, the extension headers the opcode lacks and the fields the IP
 * version lacks cleared, IPv4 addresses as IPv4-mapped GIDs, payload,
 * offsets and frame length from the frame, and icrc 0, the ICRC that
 * builder writes (the frame's bytes are not read: a loopback frame by
 * reference is not built at all, roce_frame_len()). For a frame of
 * roce_build_gather() the same record, but for the ICRC. @p out may be
 * @p pkt. @p frame NULL: the frame is not built (its record alone goes
 * round by reference); the record's payload is then NULL, for the caller
 * to set.
 * @return false (and @p out unspecified) if @p pkt is not a record the
 *         builders make such a frame from, or @p len not that frame's length;
 *         roce_classify() then says why
 */
bool roce_pkt_built(struct roce_pkt *out, const struct roce_pkt *pkt, const uint8_t *frame,
		    size_t len);

/**
 * Fill @p cnp as a RoCEv2 Congestion Notification Packet (IBTA Annex A17,
 * section A17.9.3; laid out as ConnectX sends it): BTH opcode 0x81 (CNP),
 * FECN 0, BECN 1, SE/M/pad/TVer 0, P_Key @p pkey, DestQP @p dest_qpn (the
 * reaction point's QP: the sender of the CE-marked packet), AckReq 0,
 * PSN 0; then 16 reserved bytes (zero) and the ICRC. The L2/L3 fields are
 * @p l3's. roce_build() writes the frame: 14 (+4 VLAN) + 20/40 + 8 + 12 +
 * 16 + 4 bytes.
 */
void roce_cnp_init(struct roce_pkt *cnp, const struct roce_l3 *l3, uint16_t pkey,
		   uint32_t dest_qpn);

/** @name ICRC (IBTA Annex A17.3.3), computed in chunks
 * crc = roce_icrc_headers(frame + l3_offset, hdr_len_from_l3);
 * crc = roce_icrc_update(crc, payload_segment, n); ... (payload + pad)
 * wire = roce_icrc_final(crc);  -> store little-endian after the pad
 * @{ */
/** zlib-convention CRC-32 of the 8 bytes of 0xff that stand in for the LRH. */
#define ROCE_ICRC_SEED 0x2144df1cu
/**
 * Start: 8 bytes of 0xff, then @p hdr_len bytes from the IP header with the
 * variant fields of the IP header, UDP header and BTH (those that lie within
 * @p hdr_len) masked to ones. Bytes past the BTH are covered as they are.
 * The IP version is read from l3[0] (6: IPv6, anything else: IPv4).
 */
uint32_t roce_icrc_headers(const uint8_t *l3, size_t hdr_len);
/** Continue over more covered bytes (extension headers, payload, pad). */
uint32_t roce_icrc_update(uint32_t crc, const void *data, size_t len);
/**
 * Finish: the value to store in the last 4 bytes, least significant byte
 * first. Running values are zlib-convention (already complemented), so this
 * is the identity today; call it anyway.
 */
uint32_t roce_icrc_final(uint32_t crc);
/** Whole-frame ICRC over @p len bytes from the IP header (excluding the ICRC itself). */
uint32_t roce_icrc_compute(const uint8_t *l3, size_t len);
/** Seedable reflected CRC-32 (IEEE), zlib-compatible: crc32(crc32(0,a),b) chaining. */
uint32_t roce_crc32(uint32_t crc, const void *data, size_t len);
/** @return the CRC-32 implementation behind roce_crc32(): "isa-l" or "zlib". */
const char *roce_crc32_impl(void);
/** @} */

/** @name 24-bit PSN arithmetic (IBTA 9.7.1) @{ */
/** @return <0, 0, >0 as @p a is before, equal to, after @p b modulo 2^24. */
static inline int32_t
roce_psn_cmp(uint32_t a, uint32_t b)
{
	return (int32_t)((a - b) << 8);
}
/** @return (@p psn + @p n) mod 2^24. */
static inline uint32_t
roce_psn_add(uint32_t psn, uint32_t n)
{
	return (psn + n) & ROCE_PSN_MASK;
}
/** @return (@p a - @p b) mod 2^24. */
static inline uint32_t
roce_psn_diff(uint32_t a, uint32_t b)
{
	return (a - b) & ROCE_PSN_MASK;
}
/** @} */

/** @name UDP source port (entropy) as the Linux kernel computes it @{ */
/** rdma_calc_flow_label(): symmetric 20-bit label from the two QPNs. */
uint32_t roce_flow_label_from_qpns(uint32_t lqpn, uint32_t rqpn);
/** rdma_flow_label_to_udp_sport(): fold 20 bits to 14, OR 0xC000. */
uint16_t roce_flow_label_to_udp_sport(uint32_t flow_label);
/** rdma_get_udp_sport(): AH flow label if non-zero, else from the QPNs. */
uint16_t roce_udp_sport(uint32_t flow_label, uint32_t lqpn, uint32_t rqpn);
/** @} */

/** @name Timer encodings (IBTA 9.7.5.2.8 and 9.7.6.1.3) @{ */
/** RNR NAK timer code (0..31) -> minimum delay in microseconds (IBTA table). */
uint32_t roce_rnr_timer_usec(uint8_t code);
/** Local ACK timeout code (0..31) -> nanoseconds; 0 means infinite (returns 0). */
uint64_t roce_ack_timeout_nsec(uint8_t code);
/** @} */

/** @return bytes of payload per packet for an IB MTU enum (1..5 -> 256..4096), 0 if invalid. */
static inline uint32_t
roce_mtu_bytes(uint8_t mtu_enum)
{
	return (mtu_enum >= 1 && mtu_enum <= 5) ? 128u << mtu_enum : 0;
}

/**
 * Write a one-line human description of @p pkt (used by roce-dump): opcode,
 * addresses, UDP source port, QPN, PSN, flags, extension header fields and
 * payload length. No trailing newline.
 * @return as snprintf(): the length of the full line (truncated if >= @p cap)
 */
int roce_pkt_format(const struct roce_pkt *pkt, char *buf, size_t cap);

/** @name BTH accessors for the fields that are not whole bytes (IBTA 9.2) @{ */
/** @return destination QPN of @p bth. */
static inline uint32_t
roce_bth_qpn(const struct roce_bth *bth)
{
	return be32toh(bth->qpn) & ROCE_QPN_MASK;
}
/** @return PSN of @p bth. */
static inline uint32_t
roce_bth_psn(const struct roce_bth *bth)
{
	return be32toh(bth->apsn) & ROCE_PSN_MASK;
}
/** @return true if AckReq is set in @p bth. */
static inline bool
roce_bth_ack_req(const struct roce_bth *bth)
{
	return (be32toh(bth->apsn) >> 31) != 0;
}
/** @return pad count of @p bth. */
static inline uint8_t
roce_bth_pad(const struct roce_bth *bth)
{
	return (bth->flags >> 4) & 3;
}
/** @return transport header version of @p bth. */
static inline uint8_t
roce_bth_tver(const struct roce_bth *bth)
{
	return bth->flags & 0xf;
}
/** @} */

#ifdef __cplusplus
}
#endif
#endif /* ROCE_H */
