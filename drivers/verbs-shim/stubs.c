/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs shim: the IBVERBS_PRIVATE_34 node (rdma-core's provider interface)
 * and nothing else. The shim loads no provider, but Debian's libmlx5 and
 * libefa (pulled in by perftest and pyverbs) import these names, and the
 * loader resolves them at start-up (BIND_NOW), so every one must exist.
 *
 * Prototypes follow rdma-core v44 libibverbs/driver.h and cmd_ioctl.h (the
 * internal headers, not the installed ones). Only ibv_query_gid_type and
 * ibv_read_ibdev_sysfs_file (device.c) do real work; the provider
 * registration hook and the log are accepted and ignored; every command
 * fails with EOPNOTSUPP (they are only ever called on a provider's own
 * device, which never exists here).
 */
#include <errno.h>
#include <stdbool.h>

#include <rdma/ib_user_verbs.h>

#include "shim.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"

/* Types of the provider interface that only travel by pointer here. */
struct verbs_device_ops;
struct verbs_context_ops;
struct ibv_command_buffer;
struct verbs_flow_action;
struct verbs_xrcd;
struct verbs_mr;
struct verbs_cq;
struct verbs_srq;
struct verbs_qp;
struct verbs_counters;
struct verbs_dm;
struct ibv_get_context;
struct ibv_query_port;
struct ibv_alloc_pd;
struct ibv_open_xrcd;
struct ibv_reg_mr;
struct ibv_rereg_mr;
struct ibv_alloc_mw;
struct ibv_create_cq;
struct ibv_create_cq_ex;
struct ibv_resize_cq;
struct ibv_modify_cq;
struct ibv_create_srq;
struct ibv_create_xsrq;
struct ibv_modify_srq;
struct ibv_query_srq;
struct ibv_create_qp;
struct ibv_create_qp_ex;
struct ibv_open_qp;
struct ibv_query_qp;
struct ibv_modify_qp;
struct ibv_modify_qp_ex;
struct ibv_create_wq;
struct ibv_modify_wq;

/* The data object libmlx5 imports (driver.h: extern bool). */
SHIM_EXPORT bool verbs_allow_disassociate_destroy;

SHIM_EXPORT void verbs_register_driver_34(const struct verbs_device_ops *ops) {}
SHIM_EXPORT void __verbs_log(struct verbs_context *ctx, uint32_t level, const char *fmt, ...) {}

SHIM_EXPORT void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd,
						size_t alloc_size,
						struct verbs_context *context_offset,
						uint32_t driver_id)
{
	return shim_null(EOPNOTSUPP);
}

SHIM_EXPORT struct ibv_context *verbs_open_device(struct ibv_device *device, void *private_data)
{
	return shim_null(EOPNOTSUPP);
}

SHIM_EXPORT void verbs_uninit_context(struct verbs_context *context) {}
SHIM_EXPORT void verbs_set_ops(struct verbs_context *vctx, const struct verbs_context_ops *ops) {}

SHIM_EXPORT void verbs_init_cq(struct ibv_cq *cq, struct ibv_context *context,
			       struct ibv_comp_channel *channel, void *cq_context)
{
	cq->context = context;
	cq->channel = channel;
	cq->cq_context = cq_context;
	cq->comp_events_completed = 0;
	cq->async_events_completed = 0;
	pthread_mutex_init(&cq->mutex, NULL);
	pthread_cond_init(&cq->cond, NULL);
}

/* cmd_ioctl.h */
SHIM_EXPORT unsigned int __ioctl_final_num_attrs(unsigned int num_attrs,
						 struct ibv_command_buffer *link)
{
	return num_attrs;
}

#define STUB(name, ...) SHIM_EXPORT int name(__VA_ARGS__) { return shim_ret(EOPNOTSUPP); }

STUB(execute_ioctl, struct ibv_context *context, struct ibv_command_buffer *cmd)
STUB(ibv_cmd_get_context, struct verbs_context *context, struct ibv_get_context *cmd,
     size_t cmd_size, struct ib_uverbs_get_context_resp *resp, size_t resp_size)
STUB(ibv_cmd_query_context, struct ibv_context *ctx, struct ibv_command_buffer *driver)
STUB(ibv_cmd_create_flow_action_esp, struct ibv_context *ctx,
     struct ibv_flow_action_esp_attr *attr, struct verbs_flow_action *flow_action,
     struct ibv_command_buffer *driver)
STUB(ibv_cmd_modify_flow_action_esp, struct verbs_flow_action *flow_action,
     struct ibv_flow_action_esp_attr *attr, struct ibv_command_buffer *driver)
STUB(ibv_cmd_query_device_any, struct ibv_context *context,
     const struct ibv_query_device_ex_input *input, struct ibv_device_attr_ex *attr,
     size_t attr_size, struct ib_uverbs_ex_query_device_resp *resp, size_t *resp_size)
STUB(ibv_cmd_query_port, struct ibv_context *context, uint8_t port_num,
     struct ibv_port_attr *port_attr, struct ibv_query_port *cmd, size_t cmd_size)
STUB(ibv_cmd_alloc_pd, struct ibv_context *context, struct ibv_pd *pd, struct ibv_alloc_pd *cmd,
     size_t cmd_size, struct ib_uverbs_alloc_pd_resp *resp, size_t resp_size)
STUB(ibv_cmd_dealloc_pd, struct ibv_pd *pd)
STUB(ibv_cmd_open_xrcd, struct ibv_context *context, struct verbs_xrcd *xrcd, int vxrcd_size,
     struct ibv_xrcd_init_attr *attr, struct ibv_open_xrcd *cmd, size_t cmd_size,
     struct ib_uverbs_open_xrcd_resp *resp, size_t resp_size)
STUB(ibv_cmd_close_xrcd, struct verbs_xrcd *xrcd)
STUB(ibv_cmd_reg_mr, struct ibv_pd *pd, void *addr, size_t length, uint64_t hca_va, int access,
     struct verbs_mr *vmr, struct ibv_reg_mr *cmd, size_t cmd_size,
     struct ib_uverbs_reg_mr_resp *resp, size_t resp_size)
STUB(ibv_cmd_rereg_mr, struct verbs_mr *vmr, uint32_t flags, void *addr, size_t length,
     uint64_t hca_va, int access, struct ibv_pd *pd, struct ibv_rereg_mr *cmd, size_t cmd_sz,
     struct ib_uverbs_rereg_mr_resp *resp, size_t resp_sz)
STUB(ibv_cmd_dereg_mr, struct verbs_mr *vmr)
STUB(ibv_cmd_query_mr, struct ibv_pd *pd, struct verbs_mr *vmr, uint32_t mr_handle)
STUB(ibv_cmd_advise_mr, struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags,
     struct ibv_sge *sg_list, uint32_t num_sge)
STUB(ibv_cmd_reg_dmabuf_mr, struct ibv_pd *pd, uint64_t offset, size_t length, uint64_t iova,
     int fd, int access, struct verbs_mr *vmr)
STUB(ibv_cmd_alloc_mw, struct ibv_pd *pd, enum ibv_mw_type type, struct ibv_mw *mw,
     struct ibv_alloc_mw *cmd, size_t cmd_size, struct ib_uverbs_alloc_mw_resp *resp,
     size_t resp_size)
STUB(ibv_cmd_dealloc_mw, struct ibv_mw *mw)
STUB(ibv_cmd_create_cq, struct ibv_context *context, int cqe, struct ibv_comp_channel *channel,
     int comp_vector, struct ibv_cq *cq, struct ibv_create_cq *cmd, size_t cmd_size,
     struct ib_uverbs_create_cq_resp *resp, size_t resp_size)
STUB(ibv_cmd_create_cq_ex, struct ibv_context *context, const struct ibv_cq_init_attr_ex *cq_attr,
     struct verbs_cq *cq, struct ibv_create_cq_ex *cmd, size_t cmd_size,
     struct ib_uverbs_ex_create_cq_resp *resp, size_t resp_size, uint32_t cmd_flags)
STUB(ibv_cmd_req_notify_cq, struct ibv_cq *cq, int solicited_only)
STUB(ibv_cmd_resize_cq, struct ibv_cq *cq, int cqe, struct ibv_resize_cq *cmd, size_t cmd_size,
     struct ib_uverbs_resize_cq_resp *resp, size_t resp_size)
STUB(ibv_cmd_destroy_cq, struct ibv_cq *cq)
STUB(ibv_cmd_modify_cq, struct ibv_cq *cq, struct ibv_modify_cq_attr *attr,
     struct ibv_modify_cq *cmd, size_t cmd_size)
STUB(ibv_cmd_create_srq, struct ibv_pd *pd, struct ibv_srq *srq, struct ibv_srq_init_attr *attr,
     struct ibv_create_srq *cmd, size_t cmd_size, struct ib_uverbs_create_srq_resp *resp,
     size_t resp_size)
STUB(ibv_cmd_create_srq_ex, struct ibv_context *context, struct verbs_srq *srq,
     struct ibv_srq_init_attr_ex *attr_ex, struct ibv_create_xsrq *cmd, size_t cmd_size,
     struct ib_uverbs_create_srq_resp *resp, size_t resp_size)
STUB(ibv_cmd_modify_srq, struct ibv_srq *srq, struct ibv_srq_attr *srq_attr, int srq_attr_mask,
     struct ibv_modify_srq *cmd, size_t cmd_size)
STUB(ibv_cmd_query_srq, struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
     struct ibv_query_srq *cmd, size_t cmd_size)
STUB(ibv_cmd_destroy_srq, struct ibv_srq *srq)
STUB(ibv_cmd_create_qp, struct ibv_pd *pd, struct ibv_qp *qp, struct ibv_qp_init_attr *attr,
     struct ibv_create_qp *cmd, size_t cmd_size, struct ib_uverbs_create_qp_resp *resp,
     size_t resp_size)
STUB(ibv_cmd_create_qp_ex, struct ibv_context *context, struct verbs_qp *qp,
     struct ibv_qp_init_attr_ex *attr_ex, struct ibv_create_qp *cmd, size_t cmd_size,
     struct ib_uverbs_create_qp_resp *resp, size_t resp_size)
STUB(ibv_cmd_create_qp_ex2, struct ibv_context *context, struct verbs_qp *qp,
     struct ibv_qp_init_attr_ex *qp_attr, struct ibv_create_qp_ex *cmd, size_t cmd_size,
     struct ib_uverbs_ex_create_qp_resp *resp, size_t resp_size)
STUB(ibv_cmd_open_qp, struct ibv_context *context, struct verbs_qp *qp, int vqp_sz,
     struct ibv_qp_open_attr *attr, struct ibv_open_qp *cmd, size_t cmd_size,
     struct ib_uverbs_create_qp_resp *resp, size_t resp_size)
STUB(ibv_cmd_query_qp, struct ibv_qp *qp, struct ibv_qp_attr *qp_attr, int attr_mask,
     struct ibv_qp_init_attr *qp_init_attr, struct ibv_query_qp *cmd, size_t cmd_size)
STUB(ibv_cmd_modify_qp, struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
     struct ibv_modify_qp *cmd, size_t cmd_size)
STUB(ibv_cmd_modify_qp_ex, struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
     struct ibv_modify_qp_ex *cmd, size_t cmd_size, struct ib_uverbs_ex_modify_qp_resp *resp,
     size_t resp_size)
STUB(ibv_cmd_destroy_qp, struct ibv_qp *qp)
STUB(ibv_cmd_post_send, struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
STUB(ibv_cmd_post_recv, struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
STUB(ibv_cmd_post_srq_recv, struct ibv_srq *srq, struct ibv_recv_wr *wr,
     struct ibv_recv_wr **bad_wr)
STUB(ibv_cmd_create_ah, struct ibv_pd *pd, struct ibv_ah *ah, struct ibv_ah_attr *attr,
     struct ib_uverbs_create_ah_resp *resp, size_t resp_size)
STUB(ibv_cmd_destroy_ah, struct ibv_ah *ah)
STUB(ibv_cmd_attach_mcast, struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
STUB(ibv_cmd_detach_mcast, struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
STUB(ibv_cmd_create_flow, struct ibv_qp *qp, struct ibv_flow *flow_id,
     struct ibv_flow_attr *flow_attr, void *ucmd, size_t ucmd_size)
STUB(ibv_cmd_destroy_flow, struct ibv_flow *flow_id)
STUB(ibv_cmd_create_wq, struct ibv_context *context, struct ibv_wq_init_attr *wq_init_attr,
     struct ibv_wq *wq, struct ibv_create_wq *cmd, size_t cmd_size,
     struct ib_uverbs_ex_create_wq_resp *resp, size_t resp_size)
STUB(ibv_cmd_destroy_flow_action, struct verbs_flow_action *action)
STUB(ibv_cmd_modify_wq, struct ibv_wq *wq, struct ibv_wq_attr *attr, struct ibv_modify_wq *cmd,
     size_t cmd_size)
STUB(ibv_cmd_destroy_wq, struct ibv_wq *wq)
STUB(ibv_cmd_create_rwq_ind_table, struct ibv_context *context,
     struct ibv_rwq_ind_table_init_attr *init_attr, struct ibv_rwq_ind_table *rwq_ind_table,
     struct ib_uverbs_ex_create_rwq_ind_table_resp *resp, size_t resp_size)
STUB(ibv_cmd_destroy_rwq_ind_table, struct ibv_rwq_ind_table *rwq_ind_table)
STUB(ibv_cmd_create_counters, struct ibv_context *context,
     struct ibv_counters_init_attr *init_attr, struct verbs_counters *vcounters,
     struct ibv_command_buffer *link)
STUB(ibv_cmd_destroy_counters, struct verbs_counters *vcounters)
STUB(ibv_cmd_read_counters, struct verbs_counters *vcounters, uint64_t *counters_value,
     uint32_t ncounters, uint32_t flags, struct ibv_command_buffer *link)
STUB(ibv_cmd_alloc_dm, struct ibv_context *ctx, const struct ibv_alloc_dm_attr *dm_attr,
     struct verbs_dm *dm, struct ibv_command_buffer *link)
STUB(ibv_cmd_free_dm, struct verbs_dm *dm)
STUB(ibv_cmd_reg_dm_mr, struct ibv_pd *pd, struct verbs_dm *dm, uint64_t offset, size_t length,
     unsigned int access, struct verbs_mr *vmr, struct ibv_command_buffer *link)

/* Polling through a command returns a count, so "not supported" is a negative errno. */
SHIM_EXPORT int ibv_cmd_poll_cq(struct ibv_cq *cq, int ne, struct ibv_wc *wc)
{
	return -shim_ret(EOPNOTSUPP);
}
