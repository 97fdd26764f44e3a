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

/*
 * Field lists, X(ipc field, ibv field): one list per record serves both
 * directions, so a field added to one side cannot be forgotten in the other
 * conversion. Arrays and nested records are converted by hand next to them.
 */
#define IPC_AH_FIELDS(X) \
	X(flow_label, grh.flow_label) X(sgid_index, grh.sgid_index) \
	X(hop_limit, grh.hop_limit) X(traffic_class, grh.traffic_class) \
	X(is_global, is_global) X(dlid, dlid) X(sl, sl) X(src_path_bits, src_path_bits) \
	X(static_rate, static_rate) X(port_num, port_num)

#define IPC_QP_CAP_FIELDS(X) \
	X(max_send_wr, max_send_wr) X(max_recv_wr, max_recv_wr) X(max_send_sge, max_send_sge) \
	X(max_recv_sge, max_recv_sge) X(max_inline_data, max_inline_data)

#define IPC_QP_ATTR_FIELDS(X) \
	X(qp_state, qp_state) X(cur_qp_state, cur_qp_state) X(path_mtu, path_mtu) \
	X(path_mig_state, path_mig_state) X(qkey, qkey) X(rq_psn, rq_psn) X(sq_psn, sq_psn) \
	X(dest_qp_num, dest_qp_num) X(qp_access_flags, qp_access_flags) \
	X(pkey_index, pkey_index) X(alt_pkey_index, alt_pkey_index) \
	X(en_sqd_async_notify, en_sqd_async_notify) X(sq_draining, sq_draining) \
	X(max_rd_atomic, max_rd_atomic) X(max_dest_rd_atomic, max_dest_rd_atomic) \
	X(min_rnr_timer, min_rnr_timer) X(port_num, port_num) X(timeout, timeout) \
	X(retry_cnt, retry_cnt) X(rnr_retry, rnr_retry) X(alt_port_num, alt_port_num) \
	X(alt_timeout, alt_timeout) X(rate_limit, rate_limit)

#define IPC_DEVICE_ATTR_FIELDS(X) \
	X(node_guid, node_guid) X(sys_image_guid, sys_image_guid) X(max_mr_size, max_mr_size) \
	X(page_size_cap, page_size_cap) X(vendor_id, vendor_id) \
	X(vendor_part_id, vendor_part_id) X(hw_ver, hw_ver) X(max_qp, max_qp) \
	X(max_qp_wr, max_qp_wr) X(device_cap_flags, device_cap_flags) X(max_sge, max_sge) \
	X(max_sge_rd, max_sge_rd) X(max_cq, max_cq) X(max_cqe, max_cqe) X(max_mr, max_mr) \
	X(max_pd, max_pd) X(max_qp_rd_atom, max_qp_rd_atom) \
	X(max_qp_init_rd_atom, max_qp_init_rd_atom) X(max_res_rd_atom, max_res_rd_atom) \
	X(atomic_cap, atomic_cap) X(max_mw, max_mw) X(max_mcast_grp, max_mcast_grp) \
	X(max_mcast_qp_attach, max_mcast_qp_attach) \
	X(max_total_mcast_qp_attach, max_total_mcast_qp_attach) X(max_ah, max_ah) \
	X(max_srq, max_srq) X(max_srq_wr, max_srq_wr) X(max_srq_sge, max_srq_sge) \
	X(max_pkeys, max_pkeys) X(local_ca_ack_delay, local_ca_ack_delay) \
	X(phys_port_cnt, phys_port_cnt) X(max_raw_ethy_qp, max_raw_ethy_qp)

/* o is the destination, a the source; the cast is to the destination's type */
#define IPC_FIELD_FROM_IBV(f_ipc, f_ibv) o->f_ipc = (__typeof__(o->f_ipc))a->f_ibv;
#define IPC_FIELD_TO_IBV(f_ipc, f_ibv) o->f_ibv = (__typeof__(o->f_ibv))a->f_ipc;

static inline void ipc_ah_from_ibv(const struct ibv_ah_attr *a, struct ipc_ah_attr *o)
{
	memset(o, 0, sizeof(*o));
	memcpy(o->dgid, a->grh.dgid.raw, 16);
	IPC_AH_FIELDS(IPC_FIELD_FROM_IBV)
}

static inline void ipc_ah_to_ibv(const struct ipc_ah_attr *a, struct ibv_ah_attr *o)
{
	memset(o, 0, sizeof(*o));
	memcpy(o->grh.dgid.raw, a->dgid, 16);
	IPC_AH_FIELDS(IPC_FIELD_TO_IBV)
}

static inline void ipc_cap_from_ibv(const struct ibv_qp_cap *a, struct ipc_qp_cap *o)
{
	IPC_QP_CAP_FIELDS(IPC_FIELD_FROM_IBV)
}

static inline void ipc_cap_to_ibv(const struct ipc_qp_cap *a, struct ibv_qp_cap *o)
{
	IPC_QP_CAP_FIELDS(IPC_FIELD_TO_IBV)
}

static inline void ipc_qp_attr_from_ibv(const struct ibv_qp_attr *a, struct ipc_qp_attr *o)
{
	memset(o, 0, sizeof(*o));
	IPC_QP_ATTR_FIELDS(IPC_FIELD_FROM_IBV)
	ipc_cap_from_ibv(&a->cap, &o->cap);
	ipc_ah_from_ibv(&a->ah_attr, &o->ah_attr);
	ipc_ah_from_ibv(&a->alt_ah_attr, &o->alt_ah_attr);
}

static inline void ipc_qp_attr_to_ibv(const struct ipc_qp_attr *a, struct ibv_qp_attr *o)
{
	memset(o, 0, sizeof(*o));
	IPC_QP_ATTR_FIELDS(IPC_FIELD_TO_IBV)
	ipc_cap_to_ibv(&a->cap, &o->cap);
	ipc_ah_to_ibv(&a->ah_attr, &o->ah_attr);
	ipc_ah_to_ibv(&a->alt_ah_attr, &o->alt_ah_attr);
}

static inline void ipc_device_attr_to_ibv(const struct ipc_device_attr *a, struct ibv_device_attr *o)
{
	memset(o, 0, sizeof(*o));
	memcpy(o->fw_ver, a->fw_ver, sizeof(o->fw_ver));
	o->fw_ver[sizeof(o->fw_ver) - 1] = '\0';
	IPC_DEVICE_ATTR_FIELDS(IPC_FIELD_TO_IBV)
}

/** Specs one ibv_create_flow may carry (a rule takes each layer once: four at most). */
#define IPC_FLOW_MAX_SPECS 8

/**
 * Turn ibv_create_flow's @p attr (and the attr->num_of_specs specs after
 * it, each as long as its own size says: as libibverbs, which recomputes
 * attr->size, this does not read attr->size) into a CREATE_FLOW request:
 * one lib/flow rule from the Ethernet, IPv4 (plain or _ext), IPv6, TCP and
 * UDP specs, each at most once.
 * @return 0, or EINVAL (more than IPC_FLOW_MAX_SPECS, a spec size below its
 *         header's or above any spec's, a repeated layer, comp_mask),
 *         EOPNOTSUPP (another spec type); qp and user_handle are left 0
 */
int ipc_flow_from_ibv(const struct ibv_flow_attr *attr, struct ipc_create_flow_req *q);

#endif /* IPC_VERBS_H */
