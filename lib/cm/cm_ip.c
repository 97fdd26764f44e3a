/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/cm: the rdma_cm IP layer, as Linux's cma.c puts IP addressing on top
 * of the IB CM: an IP port space and port make the service ID, and a REQ
 * or SIDR_REQ of an IP port space starts its private data with a 36-byte
 * header carrying the addresses (struct cma_hdr).
 *
 *   byte 0      version (0)
 *   byte 1      IP version in the high nibble (4 or 6), low nibble 0
 *   bytes 2-3   source port, big endian
 *   bytes 4-19  source address: IPv6, or IPv4 in bytes 16-19, zeros before
 *   bytes 20-35 destination address, same layout
 */
#include <errno.h>
#include <string.h>

#include "cm.h"

uint64_t
cm_ip_service_id(enum cm_port_space ps, uint16_t port)
{
	return (uint64_t)ps << 16 | port;
}

bool
cm_ip_service_id_parse(uint64_t sid, enum cm_port_space *ps, uint16_t *port)
{
	uint64_t space = sid >> 16;

	if (space != CM_PS_TCP && space != CM_PS_UDP && space != CM_PS_IPOIB && space != CM_PS_IB)
		return false;
	if (ps)
		*ps = (enum cm_port_space)space;
	if (port)
		*port = (uint16_t)sid;
	return true;
}

static void
addr_put(uint8_t field[16], const struct cm_ip_addr *a)
{
	memset(field, 0, 16);
	if (a->family == 4)
		memcpy(field + 12, a->addr, 4);
	else
		memcpy(field, a->addr, 16);
}

int
cm_ip_hdr_build(const struct cm_ip_addr *src, const struct cm_ip_addr *dst, uint8_t out[CM_IP_HDR_SIZE])
{
	if (!src || !dst || !out || src->family != dst->family ||
	    (src->family != 4 && src->family != 6))
		return -EINVAL;
	out[0] = CM_IP_HDR_VERSION;
	out[1] = (uint8_t)(src->family << 4);
	out[2] = (uint8_t)(src->port >> 8);
	out[3] = (uint8_t)src->port;
	addr_put(out + 4, src);
	addr_put(out + 20, dst);
	return CM_IP_HDR_SIZE;
}

static void
addr_get(uint8_t out[16], const uint8_t field[16], uint8_t ipver)
{
	memset(out, 0, 16);
	if (ipver == 4)
		memcpy(out, field + 12, 4);
	else
		memcpy(out, field, 16);
}

int
cm_ip_hdr_parse(const uint8_t *pd, size_t len, struct cm_ip_hdr *out)
{
	uint8_t ipver;

	if (!pd || !out || len < CM_IP_HDR_SIZE)
		return -EINVAL;
	ipver = pd[1] >> 4;
	/* cma.c: cma_check_req_... refuses another version or IP version. */
	if (pd[0] != CM_IP_HDR_VERSION || (ipver != 4 && ipver != 6))
		return -EPROTONOSUPPORT;
	out->cma_version = pd[0];
	out->ip_version = ipver;
	out->src_port = (uint16_t)(pd[2] << 8 | pd[3]);
	addr_get(out->src, pd + 4, ipver);
	addr_get(out->dst, pd + 20, ipver);
	return 0;
}

int
cm_ip_private_data_max(uint16_t attr, enum cm_port_space ps)
{
	int ip = ps == CM_PS_IB ? 0 : (int)CM_IP_HDR_SIZE;

	switch (attr) {
	case CM_ATTR_REQ: return (int)CM_REQ_PRIVATE_DATA_SIZE - ip;
	case CM_ATTR_SIDR_REQ: return (int)CM_SIDR_REQ_PRIVATE_DATA_SIZE - ip;
	case CM_ATTR_REP: return CM_REP_PRIVATE_DATA_SIZE;
	case CM_ATTR_REJ: return CM_REJ_PRIVATE_DATA_SIZE;
	case CM_ATTR_MRA: return CM_MRA_PRIVATE_DATA_SIZE;
	case CM_ATTR_RTU: return CM_RTU_PRIVATE_DATA_SIZE;
	case CM_ATTR_DREQ: return CM_DREQ_PRIVATE_DATA_SIZE;
	case CM_ATTR_DREP: return CM_DREP_PRIVATE_DATA_SIZE;
	case CM_ATTR_SIDR_REP: return CM_SIDR_REP_PRIVATE_DATA_SIZE;
	default: return -EINVAL;
	}
}

static bool
all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* ::ffff:a.b.c.d */
static bool
is_v4_mapped(const uint8_t a[16])
{
	return all_zero(a, 10) && a[10] == 0xff && a[11] == 0xff;
}

bool
cm_ip_listen_match(const struct cm_ip_addr *bound, bool afonly, const struct cm_ip_hdr *hdr)
{
	size_t alen;

	if (!bound || !hdr)
		return false;
	alen = bound->family == 4 ? 4 : 16;
	if (all_zero(bound->addr, alen)) {
		/* Wildcard: its own family; IPv6 :: also IPv4 unless AFONLY. */
		if (bound->family == hdr->ip_version)
			return true;
		return bound->family == 6 && hdr->ip_version == 4 && !afonly;
	}
	if (bound->family == hdr->ip_version)
		return memcmp(bound->addr, hdr->dst, alen) == 0;
	/* An IPv6 socket bound to ::ffff:a.b.c.d takes IPv4 a.b.c.d. */
	return bound->family == 6 && hdr->ip_version == 4 && !afonly &&
	       is_v4_mapped(bound->addr) && memcmp(bound->addr + 12, hdr->dst, 4) == 0;
}

void
cm_ip_gid_from_v4(const uint8_t v4[4], uint8_t gid[16])
{
	memset(gid, 0, 10);
	gid[10] = 0xff;
	gid[11] = 0xff;
	memcpy(gid + 12, v4, 4);
}
