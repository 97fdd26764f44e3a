/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * GID/P_Key tables and device/port attributes. The values follow what Linux
 * rxe reports for the same netdev, so applications see a familiar device.
 */
#include "gid.h"

#include <infiniband/verbs.h>
#include <stdio.h>
#include <string.h>

#include "mcast_table.h"
#include "qp_attr.h"
#include "roce.h"
#include "xport.h"

void
gid_link_local_from_mac(const uint8_t mac[6], uint8_t gid[16])
{
	memset(gid, 0, 16);
	gid[0] = 0xfe;
	gid[1] = 0x80;
	/* Modified EUI-64: flip the universal/local bit, insert ff:fe. */
	gid[8] = mac[0] ^ 0x02;
	gid[9] = mac[1];
	gid[10] = mac[2];
	gid[11] = 0xff;
	gid[12] = 0xfe;
	gid[13] = mac[3];
	gid[14] = mac[4];
	gid[15] = mac[5];
}

void
gid_from_ipv4(const uint8_t ipv4[4], uint8_t gid[16])
{
	memset(gid, 0, 10);
	gid[10] = 0xff;
	gid[11] = 0xff;
	memcpy(&gid[12], ipv4, 4);
}

void
gid_table_build(struct gid_table *t, const uint8_t mac[6], const struct config_port *cp)
{
	memset(t, 0, sizeof(*t));
	gid_link_local_from_mac(mac, t->entry[0].gid);
	t->entry[0].valid = true;
	t->entry[0].prefix_len = 64;
	t->n = 1;
	for (unsigned int i = 0; cp != NULL && i < cp->n_addrs && t->n < GID_TABLE_LEN; i++) {
		struct gid_entry *e = &t->entry[t->n++];

		memcpy(e->gid, cp->addrs[i].addr, 16);
		e->valid = true;
		e->ipv4 = !cp->addrs[i].ipv6;
		e->prefix_len = cp->addrs[i].prefix_len;
	}
	t->pkey[0] = ROCE_DEFAULT_PKEY;
}

int
gid_table_find(const struct gid_table *t, const uint8_t gid[16])
{
	for (unsigned int i = 0; i < t->n; i++)
		if (t->entry[i].valid && memcmp(t->entry[i].gid, gid, 16) == 0)
			return (int)i;
	return -1;
}

uint32_t
gid_ib_mtu_from_ip_mtu(uint32_t ip_mtu)
{
	uint32_t room = ip_mtu > GID_ROCE_MAX_HDR_LEN ? ip_mtu - GID_ROCE_MAX_HDR_LEN : 0;

	for (uint32_t e = IBV_MTU_4096; e >= IBV_MTU_256; e--)
		if (roce_mtu_bytes((uint8_t)e) <= room)
			return e;
	return 0;
}

void
gid_device_attr(const struct config *cfg, const uint8_t mac[6], uint8_t phys_port_cnt,
		struct ipc_device_attr *attr)
{
	const struct config_daemon *d = &cfg->daemon;
	uint8_t ll[16];
	uint64_t res_rd = (uint64_t)d->max_qps * d->max_rd_atomic;

	memset(attr, 0, sizeof(*attr));
	snprintf(attr->fw_ver, sizeof(attr->fw_ver), "roce-dpdk 0.1");
	/* node GUID = the EUI-64 of the MAC, in wire order (as rxe). */
	gid_link_local_from_mac(mac, ll);
	memcpy(&attr->node_guid, &ll[8], 8);
	attr->sys_image_guid = attr->node_guid;
	/* 1 TiB: far above any buffer, far below "all of the address space" (2^64 - 1 was) */
	attr->max_mr_size = UINT64_C(1) << 40;
	attr->page_size_cap = 0xfffff000u;
	attr->vendor_id = 0xffffff;
	attr->max_qp = d->max_qps;
	attr->max_qp_wr = d->max_qp_wr;
	attr->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_SYS_IMAGE_GUID |
				 IBV_DEVICE_PORT_ACTIVE_EVENT | IBV_DEVICE_MEM_WINDOW |
				 IBV_DEVICE_MEM_WINDOW_TYPE_2B | IBV_DEVICE_XRC;
	/* IBTA 1.5 (lib/xport): ATOMIC WRITE, FLUSH of global visibility (no pmem) */
	attr->device_cap_flags_ex = QP_DEVICE_ATOMIC_WRITE | QP_DEVICE_FLUSH_GLOBAL;
	attr->max_mw = d->max_mrs; /* app_iface: limits.max_mw */
	attr->max_sge = d->max_sge;
	attr->max_sge_rd = d->max_sge;
	attr->max_cq = d->max_cqs;
	attr->max_cqe = d->max_cqe;
	attr->max_mr = d->max_mrs;
	attr->max_pd = d->max_pds;
	attr->max_qp_rd_atom = d->max_rd_atomic;
	attr->max_qp_init_rd_atom = d->max_rd_atomic;
	attr->max_res_rd_atom = res_rd > UINT32_MAX ? UINT32_MAX : (uint32_t)res_rd;
	attr->atomic_cap = IBV_ATOMIC_HCA;
	attr->max_ah = d->max_qps;
	attr->max_mcast_grp = MCAST_MAX_GROUPS;
	attr->max_mcast_qp_attach = MCAST_MAX_MEMBERS;
	attr->max_total_mcast_qp_attach = MCAST_MAX_ATTACH;
	attr->max_srq = d->max_srqs;
	attr->max_srq_wr = d->max_srq_wr;
	attr->max_srq_sge = d->max_sge;
	attr->max_inline_data = d->max_inline;
	attr->max_pkeys = PKEY_TABLE_LEN;
	attr->local_ca_ack_delay = 15;
	attr->phys_port_cnt = phys_port_cnt;
	/* RC requesters are paced by the engine (xport rate_limit_kbps) */
	attr->qp_rate_limit_min = XPORT_PACE_MIN_KBPS;
	attr->qp_rate_limit_max = XPORT_PACE_MAX_KBPS;
	attr->pacing_supported_qpts = 1u << IBV_QPT_RC;
}

/* Link speed to IB width/speed, the table Linux ib_get_eth_speed() uses. */
static void
eth_speed_to_ib(uint32_t mbps, uint8_t *width, uint8_t *speed)
{
	enum { W1X = 1, W4X = 2, SDR = 1, DDR = 2, FDR10 = 8, EDR = 32 };

	if (mbps <= 1000) {
		*width = W1X;
		*speed = SDR;
	} else if (mbps <= 10000) {
		*width = W1X;
		*speed = FDR10;
	} else if (mbps <= 20000) {
		*width = W4X;
		*speed = DDR;
	} else if (mbps <= 25000) {
		*width = W1X;
		*speed = EDR;
	} else if (mbps <= 40000) {
		*width = W4X;
		*speed = FDR10;
	} else {
		*width = W4X;
		*speed = EDR;
	}
}

void
gid_port_attr(uint32_t ip_mtu, bool link_up, uint32_t speed_mbps, struct ipc_port_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->state = link_up ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
	attr->phys_state = link_up ? 5 : 3; /* LinkUp : Disabled (IBA 14.2.5.6) */
	attr->max_mtu = IBV_MTU_4096;
	attr->active_mtu = gid_ib_mtu_from_ip_mtu(ip_mtu);
	attr->gid_tbl_len = GID_TABLE_LEN;
	attr->port_cap_flags = IBV_PORT_CM_SUP | IBV_PORT_IP_BASED_GIDS;
	attr->max_msg_sz = 0x800000;
	attr->pkey_tbl_len = PKEY_TABLE_LEN;
	attr->max_vl_num = 1;
	attr->link_layer = IBV_LINK_LAYER_ETHERNET;
	eth_speed_to_ib(speed_mbps, &attr->active_width, &attr->active_speed);
}
