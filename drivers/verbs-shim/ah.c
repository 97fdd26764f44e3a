/* SPDX-License-Identifier: BSD-3-Clause */
/* verbs shim: address handles. UD WQEs name an AH by the number the daemon gave it. */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <netinet/ip.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"

SHIM_EXPORT struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct shim_ah *ah = calloc(1, sizeof(*ah));
	struct ipc_msg req, rsp;
	int rc;

	if (ah == NULL)
		return shim_null(ENOMEM);
	shim_req(&req, IPC_OP_CREATE_AH);
	req.u.req_CREATE_AH.user_handle = (uintptr_t)ah;
	req.u.req_CREATE_AH.pd = shim_pd(pd)->handle;
	ipc_ah_from_ibv(attr, &req.u.req_CREATE_AH.attr);
	rc = shim_rpc(shim_ctx(pd->context), &req, NULL, 0, &rsp, NULL);
	if (rc) {
		free(ah);
		return shim_null(rc);
	}
	ah->handle = rsp.u.rsp_CREATE_AH.handle;
	ah->ahn = rsp.u.rsp_CREATE_AH.num;
	ah->av = rsp.u.rsp_CREATE_AH.av;
	ah->ah.context = pd->context;
	ah->ah.pd = pd;
	ah->ah.handle = ah->handle;
	return &ah->ah;
}

SHIM_EXPORT int ibv_destroy_ah(struct ibv_ah *ibah)
{
	struct shim_ah *ah = shim_ah(ibah);
	struct ipc_msg req, rsp;
	int rc;

	shim_ud_drain_pd(ibah->pd); /* sends posted through it are fetched first (drain.c) */
	shim_req(&req, IPC_OP_DESTROY_AH);
	req.u.req_DESTROY_AH.handle = ah->handle;
	rc = shim_destroy_rc(ibah->context, shim_rpc(shim_ctx(ibah->context), &req, NULL, 0, &rsp, NULL));
	if (rc)
		return shim_ret(rc);
	free(ah);
	return 0;
}

/* Index of @p gid with sysfs type @p type in @p port's table, or -1 (errno set). */
static int shim_find_gid_index(struct ibv_context *ctx, uint8_t port, const union ibv_gid *gid,
			       enum shim_gid_type_sysfs type)
{
	struct ibv_port_attr pa;

	if (ibv_query_port(ctx, port, &pa) != 0)
		return shim_minus1(EINVAL);
	for (int i = 0; i < pa.gid_tbl_len; i++) {
		union ibv_gid g;
		enum shim_gid_type_sysfs t;

		if (ibv_query_gid(ctx, port, i, &g) != 0 ||
		    ibv_query_gid_type(ctx, port, (unsigned int)i, &t) != 0)
			continue;
		if (t == type && memcmp(g.raw, gid->raw, 16) == 0)
			return i;
	}
	return shim_minus1(ENOENT);
}

static void shim_v4_mapped(uint32_t addr_be, union ibv_gid *g)
{
	memset(g, 0, sizeof(*g));
	g->raw[10] = 0xff;
	g->raw[11] = 0xff;
	memcpy(&g->raw[12], &addr_be, 4);
}

static uint16_t shim_ip_csum(const void *hdr, size_t len)
{
	const uint8_t *p = hdr;
	uint32_t sum = 0;

	for (size_t i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)(p[i] << 8 | p[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/*
 * RoCE v2 receive buffers start with 40 bytes: an IPv6 header, or 20 unused
 * bytes followed by the IPv4 header (IBA A17.4.5.1). @return 4, 6 or -1.
 */
static int shim_grh_ip_version(const struct ibv_grh *grh)
{
	const struct iphdr *ip4 = (const struct iphdr *)((const uint8_t *)grh + 20);
	int v6 = (int)((be32toh(grh->version_tclass_flow) >> 28) & 0xf);

	if (v6 != 6)
		return ip4->version == 4 ? 4 : -1;
	if (ip4->version == 4 && ip4->ihl == 5 && shim_ip_csum(ip4, 20) == 0)
		return 4;
	return 6;
}

SHIM_EXPORT int ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num,
				    struct ibv_wc *wc, struct ibv_grh *grh, struct ibv_ah_attr *ah)
{
	int idx;

	memset(ah, 0, sizeof(*ah));
	ah->dlid = wc->slid;
	ah->sl = wc->sl;
	ah->src_path_bits = wc->dlid_path_bits;
	ah->port_num = port_num;
	if (!(wc->wc_flags & IBV_WC_GRH))
		return 0;
	ah->is_global = 1;
	ah->grh.flow_label = be32toh(grh->version_tclass_flow) & 0xfffff;
	switch (shim_grh_ip_version(grh)) {
	case 4: {
		const struct iphdr *ip4 = (const struct iphdr *)((const uint8_t *)grh + 20);
		union ibv_gid ours;

		if ((be32toh(ip4->daddr) >> 28) == 0xe)
			return shim_minus1(EINVAL); /* multicast: not in the GID table */
		shim_v4_mapped(ip4->daddr, &ours);
		idx = shim_find_gid_index(context, port_num, &ours, SHIM_GID_TYPE_SYSFS_ROCE_V2);
		if (idx < 0)
			return -1;
		shim_v4_mapped(ip4->saddr, &ah->grh.dgid);
		ah->grh.sgid_index = (uint8_t)idx;
		ah->grh.hop_limit = ip4->ttl;
		ah->grh.traffic_class = ip4->tos;
		return 0;
	}
	case 6:
		if (grh->dgid.raw[0] == 0xff || grh->next_hdr != IPPROTO_UDP)
			return shim_minus1(grh->dgid.raw[0] == 0xff ? EINVAL : EPROTONOSUPPORT);
		idx = shim_find_gid_index(context, port_num, &grh->dgid, SHIM_GID_TYPE_SYSFS_ROCE_V2);
		if (idx < 0)
			return -1;
		ah->grh.dgid = grh->sgid;
		ah->grh.sgid_index = (uint8_t)idx;
		ah->grh.hop_limit = grh->hop_limit;
		ah->grh.traffic_class = (uint8_t)(be32toh(grh->version_tclass_flow) >> 20);
		return 0;
	default:
		return shim_minus1(EPROTONOSUPPORT);
	}
}

SHIM_EXPORT struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc,
						 struct ibv_grh *grh, uint8_t port_num)
{
	struct ibv_ah_attr attr;

	if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr) != 0)
		return NULL;
	return ibv_create_ah(pd, &attr);
}

SHIM_EXPORT int ibv_resolve_eth_l2_from_gid(struct ibv_context *context, struct ibv_ah_attr *attr,
					    uint8_t eth_mac[6], uint16_t *vid)
{
	(void)context; (void)attr; (void)eth_mac; (void)vid;
	return shim_ret(EOPNOTSUPP); /* the daemon resolves neighbours itself */
}
