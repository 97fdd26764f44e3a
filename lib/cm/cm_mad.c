/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/cm: the CM MAD codec. One field table per attribute (IBTA vol1
 * chapter 12, Tables 106-120; byte offsets from the start of the attribute
 * data, i.e. after the 24-byte MAD header; bits counted from the most
 * significant bit of the byte, as the spec draws them), walked by one
 * parser and one builder. Reserved bits are never read and always written
 * as zero.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "cm.h"
#include "cm_internal.h"

/* One wire field: `width` bits starting `bit` bits into data byte `byte`
 * (width 0: `nbytes` raw bytes), stored in the struct member at `soff` of
 * size `ssize`. */
struct cm_field {
	uint16_t soff;
	uint8_t ssize;
	uint8_t byte;
	uint8_t bit;
	uint8_t width;
	uint8_t nbytes;
};

#define FLD(T, m, byte, bit, width) {offsetof(T, m), sizeof(((T *)0)->m), byte, bit, width, 0}
#define RAW(T, m, byte, n) {offsetof(T, m), 0, byte, 0, 0, n}

/* Table 106: REQ. */
#define REQ_PATH(base, p) \
	FLD(struct cm_req, p.local_lid, (base) + 0, 0, 16), \
	FLD(struct cm_req, p.remote_lid, (base) + 2, 0, 16), \
	RAW(struct cm_req, p.local_gid, (base) + 4, 16), \
	RAW(struct cm_req, p.remote_gid, (base) + 20, 16), \
	FLD(struct cm_req, p.flow_label, (base) + 36, 0, 20), \
	FLD(struct cm_req, p.packet_rate, (base) + 39, 2, 6), \
	FLD(struct cm_req, p.traffic_class, (base) + 40, 0, 8), \
	FLD(struct cm_req, p.hop_limit, (base) + 41, 0, 8), \
	FLD(struct cm_req, p.sl, (base) + 42, 0, 4), \
	FLD(struct cm_req, p.subnet_local, (base) + 42, 4, 1), \
	FLD(struct cm_req, p.local_ack_timeout, (base) + 43, 0, 5)

static const struct cm_field req_fields[] = {
	FLD(struct cm_req, local_comm_id, 0, 0, 32),
	FLD(struct cm_req, service_id, 8, 0, 64),
	FLD(struct cm_req, local_ca_guid, 16, 0, 64),
	FLD(struct cm_req, local_qkey, 28, 0, 32),
	FLD(struct cm_req, local_qpn, 32, 0, 24),
	FLD(struct cm_req, responder_resources, 35, 0, 8),
	FLD(struct cm_req, local_eecn, 36, 0, 24),
	FLD(struct cm_req, initiator_depth, 39, 0, 8),
	FLD(struct cm_req, remote_eecn, 40, 0, 24),
	FLD(struct cm_req, remote_cm_response_timeout, 43, 0, 5),
	FLD(struct cm_req, transport_type, 43, 5, 2),
	FLD(struct cm_req, e2e_flow_control, 43, 7, 1),
	FLD(struct cm_req, starting_psn, 44, 0, 24),
	FLD(struct cm_req, local_cm_response_timeout, 47, 0, 5),
	FLD(struct cm_req, retry_count, 47, 5, 3),
	FLD(struct cm_req, pkey, 48, 0, 16),
	FLD(struct cm_req, path_mtu, 50, 0, 4),
	FLD(struct cm_req, rdc_exists, 50, 4, 1),
	FLD(struct cm_req, rnr_retry_count, 50, 5, 3),
	FLD(struct cm_req, max_cm_retries, 51, 0, 4),
	FLD(struct cm_req, srq, 51, 4, 1),
	FLD(struct cm_req, extended_transport, 51, 5, 3),
	REQ_PATH(52, primary),
	REQ_PATH(96, alternate),
	FLD(struct cm_req, alt_sap_supported, 139, 5, 1),
};

/* Table 107: MRA. */
static const struct cm_field mra_fields[] = {
	FLD(struct cm_mra, local_comm_id, 0, 0, 32),
	FLD(struct cm_mra, remote_comm_id, 4, 0, 32),
	FLD(struct cm_mra, message_mraed, 8, 0, 2),
	FLD(struct cm_mra, service_timeout, 9, 0, 5),
};

/* Table 108: REJ (the ARI is copied by ari_len, below). */
static const struct cm_field rej_fields[] = {
	FLD(struct cm_rej, local_comm_id, 0, 0, 32),
	FLD(struct cm_rej, remote_comm_id, 4, 0, 32),
	FLD(struct cm_rej, message_rejected, 8, 0, 2),
	FLD(struct cm_rej, ari_len, 9, 0, 7),
	FLD(struct cm_rej, reason, 10, 0, 16),
};

/* Table 110: REP. */
static const struct cm_field rep_fields[] = {
	FLD(struct cm_rep, local_comm_id, 0, 0, 32),
	FLD(struct cm_rep, remote_comm_id, 4, 0, 32),
	FLD(struct cm_rep, local_qkey, 8, 0, 32),
	FLD(struct cm_rep, local_qpn, 12, 0, 24),
	FLD(struct cm_rep, local_eecn, 16, 0, 24),
	FLD(struct cm_rep, starting_psn, 20, 0, 24),
	FLD(struct cm_rep, responder_resources, 24, 0, 8),
	FLD(struct cm_rep, initiator_depth, 25, 0, 8),
	FLD(struct cm_rep, target_ack_delay, 26, 0, 5),
	FLD(struct cm_rep, failover_accepted, 26, 5, 2),
	FLD(struct cm_rep, e2e_flow_control, 26, 7, 1),
	FLD(struct cm_rep, rnr_retry_count, 27, 0, 3),
	FLD(struct cm_rep, srq, 27, 3, 1),
	FLD(struct cm_rep, local_ca_guid, 28, 0, 64),
};

/* Tables 111 and 113: RTU, DREP. */
static const struct cm_field rtu_fields[] = {
	FLD(struct cm_rtu, local_comm_id, 0, 0, 32),
	FLD(struct cm_rtu, remote_comm_id, 4, 0, 32),
};

static const struct cm_field drep_fields[] = {
	FLD(struct cm_drep, local_comm_id, 0, 0, 32),
	FLD(struct cm_drep, remote_comm_id, 4, 0, 32),
};

/* Table 112: DREQ. */
static const struct cm_field dreq_fields[] = {
	FLD(struct cm_dreq, local_comm_id, 0, 0, 32),
	FLD(struct cm_dreq, remote_comm_id, 4, 0, 32),
	FLD(struct cm_dreq, remote_qpn, 8, 0, 24),
};

/* Table 119: SIDR_REQ. */
static const struct cm_field sidr_req_fields[] = {
	FLD(struct cm_sidr_req, request_id, 0, 0, 32),
	FLD(struct cm_sidr_req, pkey, 4, 0, 16),
	FLD(struct cm_sidr_req, service_id, 8, 0, 64),
};

/* Table 120: SIDR_REP (the additional information is copied by info_len). */
static const struct cm_field sidr_rep_fields[] = {
	FLD(struct cm_sidr_rep, request_id, 0, 0, 32),
	FLD(struct cm_sidr_rep, status, 4, 0, 8),
	FLD(struct cm_sidr_rep, info_len, 5, 0, 8),
	FLD(struct cm_sidr_rep, qpn, 8, 0, 24),
	FLD(struct cm_sidr_rep, service_id, 12, 0, 64),
	FLD(struct cm_sidr_rep, qkey, 20, 0, 32),
};

/* IBTA vol1 13.4.8.1: ClassPortInfo. */
static const struct cm_field cpi_fields[] = {
	FLD(struct cm_class_port_info, base_version, 0, 0, 8),
	FLD(struct cm_class_port_info, class_version, 1, 0, 8),
	FLD(struct cm_class_port_info, capability_mask, 2, 0, 16),
	FLD(struct cm_class_port_info, capability_mask2, 4, 0, 27),
	FLD(struct cm_class_port_info, resp_time_value, 7, 3, 5),
	RAW(struct cm_class_port_info, redirect_gid, 8, 16),
	FLD(struct cm_class_port_info, redirect_tc, 24, 0, 8),
	FLD(struct cm_class_port_info, redirect_sl, 25, 0, 4),
	FLD(struct cm_class_port_info, redirect_fl, 25, 4, 20),
	FLD(struct cm_class_port_info, redirect_lid, 28, 0, 16),
	FLD(struct cm_class_port_info, redirect_pkey, 30, 0, 16),
	FLD(struct cm_class_port_info, redirect_qp, 33, 0, 24),
	FLD(struct cm_class_port_info, redirect_qkey, 36, 0, 32),
	RAW(struct cm_class_port_info, trap_gid, 40, 16),
	FLD(struct cm_class_port_info, trap_tc, 56, 0, 8),
	FLD(struct cm_class_port_info, trap_sl, 57, 0, 4),
	FLD(struct cm_class_port_info, trap_fl, 57, 4, 20),
	FLD(struct cm_class_port_info, trap_lid, 60, 0, 16),
	FLD(struct cm_class_port_info, trap_pkey, 62, 0, 16),
	FLD(struct cm_class_port_info, trap_hl, 64, 0, 8),
	FLD(struct cm_class_port_info, trap_qp, 65, 0, 24),
	FLD(struct cm_class_port_info, trap_qkey, 68, 0, 32),
};

#define N(a) (uint8_t)(sizeof(a) / sizeof((a)[0]))

/* A variable-length block: `size` bytes at data byte `byte`, array at
 * struct offset `soff`, length (uint8_t) at `loff`, taken whole on parse
 * (pd) or as the wire length field says (ARI, info). */
struct cm_block {
	uint16_t soff;
	uint16_t loff;
	uint8_t byte;
	uint8_t size;
};

#define BLK(T, arr, len, byte, size) {offsetof(T, arr), offsetof(T, len), byte, size}
#define NOBLK {0, 0, 0, 0}

/* What the codec knows of one attribute. */
struct cm_attr_desc {
	uint16_t attr;
	uint8_t nfields;
	const struct cm_field *fields;
	struct cm_block pd;   /* private data, whole on parse */
	struct cm_block info; /* ARI / additional info, by its length field */
};

static const struct cm_attr_desc attr_descs[] = {
	{CM_ATTR_REQ, N(req_fields), req_fields,
	 BLK(struct cm_req, private_data, private_data_len, 140, CM_REQ_PRIVATE_DATA_SIZE), NOBLK},
	{CM_ATTR_MRA, N(mra_fields), mra_fields,
	 BLK(struct cm_mra, private_data, private_data_len, 10, CM_MRA_PRIVATE_DATA_SIZE), NOBLK},
	{CM_ATTR_REJ, N(rej_fields), rej_fields,
	 BLK(struct cm_rej, private_data, private_data_len, 84, CM_REJ_PRIVATE_DATA_SIZE),
	 BLK(struct cm_rej, ari, ari_len, 12, CM_REJ_ARI_SIZE)},
	{CM_ATTR_REP, N(rep_fields), rep_fields,
	 BLK(struct cm_rep, private_data, private_data_len, 36, CM_REP_PRIVATE_DATA_SIZE), NOBLK},
	{CM_ATTR_RTU, N(rtu_fields), rtu_fields,
	 BLK(struct cm_rtu, private_data, private_data_len, 8, CM_RTU_PRIVATE_DATA_SIZE), NOBLK},
	{CM_ATTR_DREQ, N(dreq_fields), dreq_fields,
	 BLK(struct cm_dreq, private_data, private_data_len, 12, CM_DREQ_PRIVATE_DATA_SIZE), NOBLK},
	{CM_ATTR_DREP, N(drep_fields), drep_fields,
	 BLK(struct cm_drep, private_data, private_data_len, 8, CM_DREP_PRIVATE_DATA_SIZE), NOBLK},
	{CM_ATTR_SIDR_REQ, N(sidr_req_fields), sidr_req_fields,
	 BLK(struct cm_sidr_req, private_data, private_data_len, 16, CM_SIDR_REQ_PRIVATE_DATA_SIZE), NOBLK},
	{CM_ATTR_SIDR_REP, N(sidr_rep_fields), sidr_rep_fields,
	 BLK(struct cm_sidr_rep, private_data, private_data_len, 96, CM_SIDR_REP_PRIVATE_DATA_SIZE),
	 BLK(struct cm_sidr_rep, info, info_len, 24, CM_SIDR_REP_INFO_SIZE)},
	{CM_ATTR_CLASS_PORT_INFO, N(cpi_fields), cpi_fields, NOBLK, NOBLK},
};

static const struct cm_attr_desc *
attr_desc(uint16_t attr)
{
	for (size_t i = 0; i < sizeof(attr_descs) / sizeof(attr_descs[0]); i++)
		if (attr_descs[i].attr == attr)
			return &attr_descs[i];
	return NULL;
}

const char *
cm_attr_name(uint16_t attr)
{
	switch (attr) {
#define CM_ATTR_CASE(sym, val, name) case val: return name;
		CM_ATTR_LIST(CM_ATTR_CASE)
#undef CM_ATTR_CASE
	default:
		return "unknown";
	}
}

static const char *const malformed_names[CM_MALFORMED_COUNT] = {
	[CM_MAD_OK] = "ok",
#define CM_MALFORMED_NAME(sym, name, desc) [CM_MALFORMED_##sym] = name,
	CM_MALFORMED_LIST(CM_MALFORMED_NAME)
#undef CM_MALFORMED_NAME
};

const char *
cm_malformed_name(int reason)
{
	if (reason < 0 || reason >= CM_MALFORMED_COUNT)
		return "unknown";
	return malformed_names[reason];
}

const char *
cm_rej_reason_name(uint16_t reason)
{
	switch (reason) {
#define CM_REJ_CASE(sym, val, name) case val: return name;
		CM_REJ_REASON_LIST(CM_REJ_CASE)
#undef CM_REJ_CASE
	default:
		return "unrecognized reason";
	}
}

uint64_t
cm_iba_time_us(uint8_t exp)
{
	/* 4.096 us * 2^exp = 4096 ns << exp; exp <= 31, so no overflow. */
	uint64_t ns = UINT64_C(4096) << (exp & 0x1f);

	return (ns + 999) / 1000;
}

/* ---- big-endian bit fields ---------------------------------------------- */

static uint64_t
bits_get(const uint8_t *d, unsigned int byte, unsigned int bit, unsigned int width)
{
	unsigned int nbytes = (bit + width + 7) / 8;
	uint64_t v = 0;

	for (unsigned int i = 0; i < nbytes; i++)
		v = v << 8 | d[byte + i];
	v >>= nbytes * 8 - bit - width;
	return width == 64 ? v : v & ((UINT64_C(1) << width) - 1);
}

static void
bits_put(uint8_t *d, unsigned int byte, unsigned int bit, unsigned int width, uint64_t val)
{
	unsigned int nbytes = (bit + width + 7) / 8;
	unsigned int shift = nbytes * 8 - bit - width;
	uint64_t mask = width == 64 ? UINT64_MAX : ((UINT64_C(1) << width) - 1);
	uint64_t v = 0;

	for (unsigned int i = 0; i < nbytes; i++)
		v = v << 8 | d[byte + i];
	v = (v & ~(mask << shift)) | ((val & mask) << shift);
	for (unsigned int i = nbytes; i-- > 0;) {
		d[byte + i] = (uint8_t)v;
		v >>= 8;
	}
}

static uint64_t
member_get(const uint8_t *s, const struct cm_field *f)
{
	const void *p = s + f->soff;

	switch (f->ssize) {
	case 1: return *(const uint8_t *)p;
	case 2: return *(const uint16_t *)p;
	case 4: return *(const uint32_t *)p;
	default: return *(const uint64_t *)p;
	}
}

static void
member_put(uint8_t *s, const struct cm_field *f, uint64_t v)
{
	void *p = s + f->soff;

	switch (f->ssize) {
	case 1: *(uint8_t *)p = (uint8_t)v; break;
	case 2: *(uint16_t *)p = (uint16_t)v; break;
	case 4: *(uint32_t *)p = (uint32_t)v; break;
	default: *(uint64_t *)p = v; break;
	}
}

/* ---- header ------------------------------------------------------------- */

static void
hdr_get(const uint8_t *m, struct cm_mad_hdr *h)
{
	h->base_version = m[0];
	h->mgmt_class = m[1];
	h->class_version = m[2];
	h->method = m[3];
	h->status = (uint16_t)bits_get(m, 4, 0, 16);
	h->class_specific = (uint16_t)bits_get(m, 6, 0, 16);
	h->tid = bits_get(m, 8, 0, 64);
	h->attr_id = (uint16_t)bits_get(m, 16, 0, 16);
	h->attr_mod = (uint32_t)bits_get(m, 20, 0, 32);
}

static void
hdr_put(uint8_t *m, const struct cm_mad_hdr *h)
{
	m[0] = h->base_version;
	m[1] = h->mgmt_class;
	m[2] = h->class_version;
	m[3] = h->method;
	bits_put(m, 4, 0, 16, h->status);
	bits_put(m, 6, 0, 16, h->class_specific);
	bits_put(m, 8, 0, 64, h->tid);
	bits_put(m, 16, 0, 16, h->attr_id);
	bits_put(m, 20, 0, 32, h->attr_mod);
}

void
cm_msg_init(struct cm_msg *msg, uint16_t attr, uint64_t tid)
{
	memset(msg, 0, sizeof(*msg));
	msg->hdr.base_version = CM_MAD_BASE_VERSION;
	msg->hdr.mgmt_class = CM_MAD_MGMT_CLASS;
	msg->hdr.class_version = CM_MAD_CLASS_VERSION;
	msg->hdr.method = CM_MAD_METHOD_SEND;
	msg->hdr.tid = tid;
	msg->hdr.attr_id = attr;
}

/* ---- parse -------------------------------------------------------------- */

static int
check_header(const struct cm_mad_hdr *h)
{
	if (h->base_version != CM_MAD_BASE_VERSION)
		return CM_MALFORMED_BASE_VERSION;
	if (h->mgmt_class != CM_MAD_MGMT_CLASS)
		return CM_MALFORMED_CLASS;
	if (h->class_version != CM_MAD_CLASS_VERSION)
		return CM_MALFORMED_CLASS_VERSION;
	if (h->attr_id == CM_ATTR_LAP || h->attr_id == CM_ATTR_APR)
		return CM_MALFORMED_ATTR_UNSUPPORTED;
	if (!attr_desc(h->attr_id))
		return CM_MALFORMED_ATTR_UNKNOWN;
	if (h->attr_id == CM_ATTR_CLASS_PORT_INFO)
		return h->method == CM_MAD_METHOD_GET || h->method == CM_MAD_METHOD_GET_RESP ?
			CM_MAD_OK : CM_MALFORMED_METHOD;
	if (h->method != CM_MAD_METHOD_SEND)
		return CM_MALFORMED_METHOD;
	if (h->status != 0)
		return CM_MALFORMED_STATUS;
	return CM_MAD_OK;
}

/* Values the spec reserves (IBTA vol1 Tables 106-108, 120). */
static int
check_fields(const struct cm_msg *m)
{
	switch (m->hdr.attr_id) {
	case CM_ATTR_REQ:
		if (m->req.path_mtu < 1 || m->req.path_mtu > 5)
			return CM_MALFORMED_FIELD;
		break;
	case CM_ATTR_MRA:
		if (m->mra.message_mraed > CM_MSG_RESPONSE_OTHER)
			return CM_MALFORMED_FIELD;
		break;
	case CM_ATTR_REJ:
		if (m->rej.message_rejected > CM_MSG_RESPONSE_OTHER || m->rej.ari_len > CM_REJ_ARI_SIZE)
			return CM_MALFORMED_FIELD;
		break;
	case CM_ATTR_SIDR_REP:
		if (m->sidr_rep.info_len > CM_SIDR_REP_INFO_SIZE)
			return CM_MALFORMED_FIELD;
		break;
	default:
		break;
	}
	return CM_MAD_OK;
}

int
cm_mad_parse(const uint8_t *mad, size_t len, struct cm_msg *out)
{
	const struct cm_attr_desc *ad;
	const uint8_t *data;
	uint8_t *s;
	int rc;

	if (!mad || !out || len < CM_MAD_SIZE)
		return CM_MALFORMED_TRUNCATED;
	memset(out, 0, sizeof(*out));
	hdr_get(mad, &out->hdr);
	rc = check_header(&out->hdr);
	if (rc != CM_MAD_OK)
		return rc;
	ad = attr_desc(out->hdr.attr_id);
	data = mad + CM_MAD_HDR_SIZE;
	s = (uint8_t *)&out->req;
	for (unsigned int i = 0; i < ad->nfields; i++) {
		const struct cm_field *f = &ad->fields[i];

		if (f->width)
			member_put(s, f, bits_get(data, f->byte, f->bit, f->width));
		else
			memcpy(s + f->soff, data + f->byte, f->nbytes);
	}
	if (ad->pd.size) {
		memcpy(s + ad->pd.soff, data + ad->pd.byte, ad->pd.size);
		s[ad->pd.loff] = ad->pd.size;
	}
	rc = check_fields(out);
	if (rc != CM_MAD_OK)
		return rc;
	if (ad->info.size)
		memcpy(s + ad->info.soff, data + ad->info.byte, s[ad->info.loff]);
	return CM_MAD_OK;
}

/* ---- build -------------------------------------------------------------- */

int
cm_mad_build(const struct cm_msg *msg, uint8_t mad[CM_MAD_SIZE])
{
	const struct cm_attr_desc *ad;
	const uint8_t *s;
	uint8_t *data;

	if (!msg || !mad)
		return -EINVAL;
	ad = attr_desc(msg->hdr.attr_id);
	if (!ad)
		return -EINVAL;
	s = (const uint8_t *)&msg->req;
	if ((ad->pd.size && s[ad->pd.loff] > ad->pd.size) ||
	    (ad->info.size && s[ad->info.loff] > ad->info.size))
		return -EINVAL;
	memset(mad, 0, CM_MAD_SIZE);
	hdr_put(mad, &msg->hdr);
	data = mad + CM_MAD_HDR_SIZE;
	for (unsigned int i = 0; i < ad->nfields; i++) {
		const struct cm_field *f = &ad->fields[i];

		if (f->width)
			bits_put(data, f->byte, f->bit, f->width, member_get(s, f));
		else
			memcpy(data + f->byte, s + f->soff, f->nbytes);
	}
	if (ad->pd.size)
		memcpy(data + ad->pd.byte, s + ad->pd.soff, s[ad->pd.loff]);
	if (ad->info.size)
		memcpy(data + ad->info.byte, s + ad->info.soff, s[ad->info.loff]);
	return 0;
}
