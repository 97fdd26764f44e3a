/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs shim: device-independent helpers of the public API: enum strings,
 * rate conversions, kernel-ABI record copies (librdmacm uses them), and
 * multicast (not supported: EOPNOTSUPP).
 */
#include <errno.h>
#include <string.h>

#include <infiniband/sa.h>
#include <rdma/ib_user_sa.h>
#include <rdma/ib_user_verbs.h>

#include "shim.h"

/* ---- strings (the exact texts are part of the API applications print) ---- */

#define SHIM_STR(tab, v) (((size_t)(v) < sizeof(tab) / sizeof(tab[0]) && tab[v]) ? tab[v] : "unknown")

SHIM_EXPORT const char *ibv_node_type_str(enum ibv_node_type t)
{
	static const char *const s[] = {
		[IBV_NODE_CA] = "InfiniBand channel adapter",
		[IBV_NODE_SWITCH] = "InfiniBand switch",
		[IBV_NODE_ROUTER] = "InfiniBand router",
		[IBV_NODE_RNIC] = "iWARP NIC",
		[IBV_NODE_USNIC] = "usNIC",
		[IBV_NODE_USNIC_UDP] = "usNIC UDP",
		[IBV_NODE_UNSPECIFIED] = "unspecified",
	};
	return (int)t < IBV_NODE_CA ? "unknown" : SHIM_STR(s, t);
}

SHIM_EXPORT const char *ibv_port_state_str(enum ibv_port_state p)
{
	static const char *const s[] = {
		[IBV_PORT_NOP] = "no state change (NOP)",
		[IBV_PORT_DOWN] = "down",
		[IBV_PORT_INIT] = "init",
		[IBV_PORT_ARMED] = "armed",
		[IBV_PORT_ACTIVE] = "active",
		[IBV_PORT_ACTIVE_DEFER] = "active defer",
	};
	return SHIM_STR(s, p);
}

SHIM_EXPORT const char *ibv_event_type_str(enum ibv_event_type e)
{
	static const char *const s[] = {
		[IBV_EVENT_CQ_ERR] = "CQ error",
		[IBV_EVENT_QP_FATAL] = "local work queue catastrophic error",
		[IBV_EVENT_QP_REQ_ERR] = "invalid request local work queue error",
		[IBV_EVENT_QP_ACCESS_ERR] = "local access violation work queue error",
		[IBV_EVENT_COMM_EST] = "communication established",
		[IBV_EVENT_SQ_DRAINED] = "send queue drained",
		[IBV_EVENT_PATH_MIG] = "path migrated",
		[IBV_EVENT_PATH_MIG_ERR] = "path migration request error",
		[IBV_EVENT_DEVICE_FATAL] = "local catastrophic error",
		[IBV_EVENT_PORT_ACTIVE] = "port active",
		[IBV_EVENT_PORT_ERR] = "port error",
		[IBV_EVENT_LID_CHANGE] = "LID change",
		[IBV_EVENT_PKEY_CHANGE] = "P_Key change",
		[IBV_EVENT_SM_CHANGE] = "SM change",
		[IBV_EVENT_SRQ_ERR] = "SRQ catastrophic error",
		[IBV_EVENT_SRQ_LIMIT_REACHED] = "SRQ limit reached",
		[IBV_EVENT_QP_LAST_WQE_REACHED] = "last WQE reached",
		[IBV_EVENT_CLIENT_REREGISTER] = "client reregistration",
		[IBV_EVENT_GID_CHANGE] = "GID table change",
		[IBV_EVENT_WQ_FATAL] = "WQ fatal",
	};
	return SHIM_STR(s, e);
}

SHIM_EXPORT const char *ibv_wc_status_str(enum ibv_wc_status st)
{
	static const char *const s[] = {
		[IBV_WC_SUCCESS] = "success",
		[IBV_WC_LOC_LEN_ERR] = "local length error",
		[IBV_WC_LOC_QP_OP_ERR] = "local QP operation error",
		[IBV_WC_LOC_EEC_OP_ERR] = "local EE context operation error",
		[IBV_WC_LOC_PROT_ERR] = "local protection error",
		[IBV_WC_WR_FLUSH_ERR] = "Work Request Flushed Error",
		[IBV_WC_MW_BIND_ERR] = "memory management operation error",
		[IBV_WC_BAD_RESP_ERR] = "bad response error",
		[IBV_WC_LOC_ACCESS_ERR] = "local access error",
		[IBV_WC_REM_INV_REQ_ERR] = "remote invalid request error",
		[IBV_WC_REM_ACCESS_ERR] = "remote access error",
		[IBV_WC_REM_OP_ERR] = "remote operation error",
		[IBV_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
		[IBV_WC_RNR_RETRY_EXC_ERR] = "RNR retry counter exceeded",
		[IBV_WC_LOC_RDD_VIOL_ERR] = "local RDD violation error",
		[IBV_WC_REM_INV_RD_REQ_ERR] = "remote invalid RD request",
		[IBV_WC_REM_ABORT_ERR] = "aborted error",
		[IBV_WC_INV_EECN_ERR] = "invalid EE context number",
		[IBV_WC_INV_EEC_STATE_ERR] = "invalid EE context state",
		[IBV_WC_FATAL_ERR] = "fatal error",
		[IBV_WC_RESP_TIMEOUT_ERR] = "response timeout error",
		[IBV_WC_GENERAL_ERR] = "general error",
		[IBV_WC_TM_ERR] = "TM error",
		[IBV_WC_TM_RNDV_INCOMPLETE] = "TM software rendezvous",
	};
	return SHIM_STR(s, st);
}

/* ---- static rates: one table, IBA 9.7.4.3 / Table 226 style ---- */

/* IBV_RATE(enum, multiple of 2.5 Gb/s or -1, Mb/s) */
#define SHIM_RATES(R)                                                                           \
	R(IBV_RATE_2_5_GBPS, 1, 2500) R(IBV_RATE_5_GBPS, 2, 5000) R(IBV_RATE_10_GBPS, 4, 10000)   \
	R(IBV_RATE_20_GBPS, 8, 20000) R(IBV_RATE_30_GBPS, 12, 30000)                              \
	R(IBV_RATE_40_GBPS, 16, 40000) R(IBV_RATE_60_GBPS, 24, 60000)                             \
	R(IBV_RATE_80_GBPS, 32, 80000) R(IBV_RATE_120_GBPS, 48, 120000)                           \
	R(IBV_RATE_14_GBPS, -1, 14062) R(IBV_RATE_56_GBPS, -1, 56250)                             \
	R(IBV_RATE_112_GBPS, -1, 112500) R(IBV_RATE_168_GBPS, -1, 168750)                         \
	R(IBV_RATE_25_GBPS, -1, 25781) R(IBV_RATE_100_GBPS, -1, 103125)                           \
	R(IBV_RATE_200_GBPS, -1, 206250) R(IBV_RATE_300_GBPS, -1, 309375)                         \
	R(IBV_RATE_28_GBPS, -1, 28125) R(IBV_RATE_50_GBPS, -1, 53125)                             \
	R(IBV_RATE_400_GBPS, -1, 425000) R(IBV_RATE_600_GBPS, -1, 637500)

struct shim_rate {
	enum ibv_rate rate;
	int mult;
	int mbps;
};

static const struct shim_rate shim_rates[] = {
#define SHIM_RATE_ENTRY(e, m, mb) { e, m, mb },
	SHIM_RATES(SHIM_RATE_ENTRY)
#undef SHIM_RATE_ENTRY
};
#define SHIM_NRATES (sizeof(shim_rates) / sizeof(shim_rates[0]))

SHIM_EXPORT int ibv_rate_to_mult(enum ibv_rate rate)
{
	for (size_t i = 0; i < SHIM_NRATES; i++)
		if (shim_rates[i].rate == rate)
			return shim_rates[i].mult;
	return -1;
}

SHIM_EXPORT enum ibv_rate mult_to_ibv_rate(int mult)
{
	for (size_t i = 0; i < SHIM_NRATES; i++)
		if (shim_rates[i].mult == mult && mult > 0)
			return shim_rates[i].rate;
	return IBV_RATE_MAX;
}

SHIM_EXPORT int ibv_rate_to_mbps(enum ibv_rate rate)
{
	for (size_t i = 0; i < SHIM_NRATES; i++)
		if (shim_rates[i].rate == rate)
			return shim_rates[i].mbps;
	return -1;
}

SHIM_EXPORT enum ibv_rate mbps_to_ibv_rate(int mbps)
{
	for (size_t i = 0; i < SHIM_NRATES; i++)
		if (shim_rates[i].mbps == mbps)
			return shim_rates[i].rate;
	return IBV_RATE_MAX;
}

/* ---- kernel ABI record copies (public since IBVERBS_1.0; librdmacm imports them) ---- */

SHIM_EXPORT void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst, struct ib_uverbs_ah_attr *src)
{
	memcpy(dst->grh.dgid.raw, src->grh.dgid, sizeof(dst->grh.dgid));
	dst->grh.flow_label = src->grh.flow_label;
	dst->grh.sgid_index = src->grh.sgid_index;
	dst->grh.hop_limit = src->grh.hop_limit;
	dst->grh.traffic_class = src->grh.traffic_class;
	dst->dlid = src->dlid;
	dst->sl = src->sl;
	dst->src_path_bits = src->src_path_bits;
	dst->static_rate = src->static_rate;
	dst->is_global = src->is_global;
	dst->port_num = src->port_num;
}

SHIM_EXPORT void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst, struct ib_uverbs_qp_attr *src)
{
	dst->cur_qp_state = (enum ibv_qp_state)src->cur_qp_state;
	dst->path_mtu = (enum ibv_mtu)src->path_mtu;
	dst->path_mig_state = (enum ibv_mig_state)src->path_mig_state;
	dst->qkey = src->qkey;
	dst->rq_psn = src->rq_psn;
	dst->sq_psn = src->sq_psn;
	dst->dest_qp_num = src->dest_qp_num;
	dst->qp_access_flags = (int)src->qp_access_flags;
	dst->cap.max_send_wr = src->max_send_wr;
	dst->cap.max_recv_wr = src->max_recv_wr;
	dst->cap.max_send_sge = src->max_send_sge;
	dst->cap.max_recv_sge = src->max_recv_sge;
	dst->cap.max_inline_data = src->max_inline_data;
	ibv_copy_ah_attr_from_kern(&dst->ah_attr, &src->ah_attr);
	ibv_copy_ah_attr_from_kern(&dst->alt_ah_attr, &src->alt_ah_attr);
	dst->pkey_index = src->pkey_index;
	dst->alt_pkey_index = src->alt_pkey_index;
	dst->en_sqd_async_notify = src->en_sqd_async_notify;
	dst->sq_draining = src->sq_draining;
	dst->max_rd_atomic = src->max_rd_atomic;
	dst->max_dest_rd_atomic = src->max_dest_rd_atomic;
	dst->min_rnr_timer = src->min_rnr_timer;
	dst->port_num = src->port_num;
	dst->timeout = src->timeout;
	dst->retry_cnt = src->retry_cnt;
	dst->rnr_retry = src->rnr_retry;
	dst->alt_port_num = src->alt_port_num;
	dst->alt_timeout = src->alt_timeout;
}

SHIM_EXPORT void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst, struct ib_user_path_rec *src)
{
	memcpy(dst->dgid.raw, src->dgid, sizeof(dst->dgid));
	memcpy(dst->sgid.raw, src->sgid, sizeof(dst->sgid));
	dst->dlid = src->dlid;
	dst->slid = src->slid;
	dst->raw_traffic = (int)src->raw_traffic;
	dst->flow_label = src->flow_label;
	dst->reversible = (int)src->reversible;
	dst->mtu = (uint8_t)src->mtu;
	dst->pkey = src->pkey;
	dst->hop_limit = src->hop_limit;
	dst->traffic_class = src->traffic_class;
	dst->numb_path = src->numb_path;
	dst->sl = src->sl;
	dst->mtu_selector = src->mtu_selector;
	dst->rate_selector = src->rate_selector;
	dst->rate = src->rate;
	dst->packet_life_time = src->packet_life_time;
	dst->preference = src->preference;
	dst->packet_life_time_selector = src->packet_life_time_selector;
}

SHIM_EXPORT void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst, struct ibv_sa_path_rec *src)
{
	memcpy(dst->dgid, src->dgid.raw, sizeof(dst->dgid));
	memcpy(dst->sgid, src->sgid.raw, sizeof(dst->sgid));
	dst->dlid = src->dlid;
	dst->slid = src->slid;
	dst->raw_traffic = (uint32_t)src->raw_traffic;
	dst->flow_label = src->flow_label;
	dst->reversible = (uint32_t)src->reversible;
	dst->mtu = src->mtu;
	dst->pkey = src->pkey;
	dst->hop_limit = src->hop_limit;
	dst->traffic_class = src->traffic_class;
	dst->numb_path = src->numb_path;
	dst->sl = src->sl;
	dst->mtu_selector = src->mtu_selector;
	dst->rate_selector = src->rate_selector;
	dst->rate = src->rate;
	dst->packet_life_time = src->packet_life_time;
	dst->preference = src->preference;
	dst->packet_life_time_selector = src->packet_life_time_selector;
}

/* ---- multicast (ibv_attach_mcast(3)): the daemon keeps the membership ---- */

static int shim_mcast(enum ipc_op op, struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	struct ipc_msg req, rsp;

	if (qp == NULL || gid == NULL)
		return shim_ret(EINVAL);
	shim_req(&req, op);
	req.u.req_ATTACH_MCAST.qp = shim_qp(qp)->handle;
	req.u.req_ATTACH_MCAST.lid = lid;
	memcpy(req.u.req_ATTACH_MCAST.gid, gid->raw, sizeof(gid->raw));
	return shim_ret(shim_rpc(shim_ctx(qp->context), &req, NULL, 0, &rsp, NULL));
}

SHIM_EXPORT int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return shim_mcast(IPC_OP_ATTACH_MCAST, qp, gid, lid);
}

SHIM_EXPORT int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return shim_mcast(IPC_OP_DETACH_MCAST, qp, gid, lid);
}

/* device memory import (IBVERBS_1.13): dm.c */
