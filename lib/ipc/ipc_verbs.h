/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * lib/ipc: conversions between the protocol's fixed-width attribute records
 * and the <infiniband/verbs.h> structs, shared by the shim (which gets
 * ibv_* structs from applications) and the control plane (whose QP
 * semantics, lib/qp qp_attr.h, work on ibv_* structs).
 */
#ifndef IPC_VERBS_H
#define IPC_VERBS_H

#include <string.h>

#include <infiniband/verbs.h>

#include "ipc.h"

static inline void ipc_ah_from_ibv(const struct ibv_ah_attr *a, struct ipc_ah_attr *o)
{
	memset(o, 0, sizeof(*o));
	memcpy(o->dgid, a->grh.dgid.raw, 16);
	o->flow_label = a->grh.flow_label;
	o->sgid_index = a->grh.sgid_index;
	o->hop_limit = a->grh.hop_limit;
	o->traffic_class = a->grh.traffic_class;
	o->is_global = a->is_global;
	o->dlid = a->dlid;
	o->sl = a->sl;
	o->src_path_bits = a->src_path_bits;
	o->static_rate = a->static_rate;
	o->port_num = a->port_num;
}

static inline void ipc_ah_to_ibv(const struct ipc_ah_attr *a, struct ibv_ah_attr *o)
{
	memset(o, 0, sizeof(*o));
	memcpy(o->grh.dgid.raw, a->dgid, 16);
	o->grh.flow_label = a->flow_label;
	o->grh.sgid_index = a->sgid_index;
	o->grh.hop_limit = a->hop_limit;
	o->grh.traffic_class = a->traffic_class;
	o->is_global = a->is_global;
	o->dlid = a->dlid;
	o->sl = a->sl;
	o->src_path_bits = a->src_path_bits;
	o->static_rate = a->static_rate;
	o->port_num = a->port_num;
}

static inline void ipc_cap_from_ibv(const struct ibv_qp_cap *c, struct ipc_qp_cap *o)
{
	o->max_send_wr = c->max_send_wr;
	o->max_recv_wr = c->max_recv_wr;
	o->max_send_sge = c->max_send_sge;
	o->max_recv_sge = c->max_recv_sge;
	o->max_inline_data = c->max_inline_data;
}

static inline void ipc_cap_to_ibv(const struct ipc_qp_cap *c, struct ibv_qp_cap *o)
{
	o->max_send_wr = c->max_send_wr;
	o->max_recv_wr = c->max_recv_wr;
	o->max_send_sge = c->max_send_sge;
	o->max_recv_sge = c->max_recv_sge;
	o->max_inline_data = c->max_inline_data;
}

static inline void ipc_qp_attr_from_ibv(const struct ibv_qp_attr *a, struct ipc_qp_attr *o)
{
	memset(o, 0, sizeof(*o));
	o->qp_state = a->qp_state;
	o->cur_qp_state = a->cur_qp_state;
	o->path_mtu = a->path_mtu;
	o->path_mig_state = a->path_mig_state;
	o->qkey = a->qkey;
	o->rq_psn = a->rq_psn;
	o->sq_psn = a->sq_psn;
	o->dest_qp_num = a->dest_qp_num;
	o->qp_access_flags = (uint32_t)a->qp_access_flags;
	ipc_cap_from_ibv(&a->cap, &o->cap);
	ipc_ah_from_ibv(&a->ah_attr, &o->ah_attr);
	ipc_ah_from_ibv(&a->alt_ah_attr, &o->alt_ah_attr);
	o->pkey_index = a->pkey_index;
	o->alt_pkey_index = a->alt_pkey_index;
	o->en_sqd_async_notify = a->en_sqd_async_notify;
	o->sq_draining = a->sq_draining;
	o->max_rd_atomic = a->max_rd_atomic;
	o->max_dest_rd_atomic = a->max_dest_rd_atomic;
	o->min_rnr_timer = a->min_rnr_timer;
	o->port_num = a->port_num;
	o->timeout = a->timeout;
	o->retry_cnt = a->retry_cnt;
	o->rnr_retry = a->rnr_retry;
	o->alt_port_num = a->alt_port_num;
	o->alt_timeout = a->alt_timeout;
	o->rate_limit = a->rate_limit;
}

static inline void ipc_qp_attr_to_ibv(const struct ipc_qp_attr *a, struct ibv_qp_attr *o)
{
	memset(o, 0, sizeof(*o));
	o->qp_state = (enum ibv_qp_state)a->qp_state;
	o->cur_qp_state = (enum ibv_qp_state)a->cur_qp_state;
	o->path_mtu = (enum ibv_mtu)a->path_mtu;
	o->path_mig_state = (enum ibv_mig_state)a->path_mig_state;
	o->qkey = a->qkey;
	o->rq_psn = a->rq_psn;
	o->sq_psn = a->sq_psn;
	o->dest_qp_num = a->dest_qp_num;
	o->qp_access_flags = (int)a->qp_access_flags;
	ipc_cap_to_ibv(&a->cap, &o->cap);
	ipc_ah_to_ibv(&a->ah_attr, &o->ah_attr);
	ipc_ah_to_ibv(&a->alt_ah_attr, &o->alt_ah_attr);
	o->pkey_index = a->pkey_index;
	o->alt_pkey_index = a->alt_pkey_index;
	o->en_sqd_async_notify = a->en_sqd_async_notify;
	o->sq_draining = a->sq_draining;
	o->max_rd_atomic = a->max_rd_atomic;
	o->max_dest_rd_atomic = a->max_dest_rd_atomic;
	o->min_rnr_timer = a->min_rnr_timer;
	o->port_num = a->port_num;
	o->timeout = a->timeout;
	o->retry_cnt = a->retry_cnt;
	o->rnr_retry = a->rnr_retry;
	o->alt_port_num = a->alt_port_num;
	o->alt_timeout = a->alt_timeout;
	o->rate_limit = a->rate_limit;
}

static inline void ipc_device_attr_to_ibv(const struct ipc_device_attr *a, struct ibv_device_attr *o)
{
	memset(o, 0, sizeof(*o));
	memcpy(o->fw_ver, a->fw_ver, sizeof(o->fw_ver));
	o->fw_ver[sizeof(o->fw_ver) - 1] = '\0';
	o->node_guid = a->node_guid;
	o->sys_image_guid = a->sys_image_guid;
	o->max_mr_size = a->max_mr_size;
	o->page_size_cap = a->page_size_cap;
	o->vendor_id = a->vendor_id;
	o->vendor_part_id = a->vendor_part_id;
	o->hw_ver = a->hw_ver;
	o->max_qp = (int)a->max_qp;
	o->max_qp_wr = (int)a->max_qp_wr;
	o->device_cap_flags = a->device_cap_flags;
	o->max_sge = (int)a->max_sge;
	o->max_sge_rd = (int)a->max_sge_rd;
	o->max_cq = (int)a->max_cq;
	o->max_cqe = (int)a->max_cqe;
	o->max_mr = (int)a->max_mr;
	o->max_pd = (int)a->max_pd;
	o->max_qp_rd_atom = (int)a->max_qp_rd_atom;
	o->max_qp_init_rd_atom = (int)a->max_qp_init_rd_atom;
	o->max_res_rd_atom = (int)a->max_res_rd_atom;
	o->atomic_cap = (enum ibv_atomic_cap)a->atomic_cap;
	o->max_mw = (int)a->max_mw;
	o->max_mcast_grp = (int)a->max_mcast_grp;
	o->max_mcast_qp_attach = (int)a->max_mcast_qp_attach;
	o->max_total_mcast_qp_attach = (int)a->max_total_mcast_qp_attach;
	o->max_ah = (int)a->max_ah;
	o->max_srq = (int)a->max_srq;
	o->max_srq_wr = (int)a->max_srq_wr;
	o->max_srq_sge = (int)a->max_srq_sge;
	o->max_pkeys = a->max_pkeys;
	o->local_ca_ack_delay = a->local_ca_ack_delay;
	o->phys_port_cnt = a->phys_port_cnt;
}

#endif /* IPC_VERBS_H */
