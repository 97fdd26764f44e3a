/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs shim: device discovery and the device/port/GID/P_Key queries.
 *
 * Discovery asks the daemon over a short-lived connection. Device objects
 * live until the process exits (perftest never frees its list and keeps
 * using the devices), so a device seen once stays valid.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shim.h"

#undef ibv_get_device_list
#undef ibv_query_port

static pthread_mutex_t shim_dev_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shim_device *shim_devs[IPC_MAX_DEVICES];
static unsigned int shim_ndevs;
static bool shim_warned;

struct shim_device *shim_device_of(struct ibv_device *dev)
{
	return (struct shim_device *)dev;
}

/* Find or create the device object for @p info (shim_dev_lock held). */
static struct shim_device *shim_device_get(const struct ipc_device_info *info)
{
	struct shim_device *d;

	for (unsigned int i = 0; i < shim_ndevs; i++) {
		if (strcmp(shim_devs[i]->info.name, info->name) == 0) {
			shim_devs[i]->info = *info;
			return shim_devs[i];
		}
	}
	if (shim_ndevs == IPC_MAX_DEVICES)
		return NULL;
	d = calloc(1, sizeof(*d));
	if (d == NULL)
		return NULL;
	d->info = *info;
	d->device.node_type = IBV_NODE_CA;
	d->device.transport_type = IBV_TRANSPORT_IB;
	snprintf(d->device.name, sizeof(d->device.name), "%s", info->name);
	snprintf(d->device.dev_name, sizeof(d->device.dev_name), "uverbs-%.56s", info->name);
	snprintf(d->device.dev_path, sizeof(d->device.dev_path),
		 "/sys/class/infiniband_verbs/uverbs-%s", info->name);
	snprintf(d->device.ibdev_path, sizeof(d->device.ibdev_path), "/sys/class/infiniband/%s",
		 info->name);
	shim_devs[shim_ndevs++] = d;
	return d;
}

struct shim_device *shim_device_lookup(const struct ipc_device_info *info)
{
	struct ipc_device_info i = *info;
	struct shim_device *d;

	i.name[sizeof(i.name) - 1] = '\0';
	pthread_mutex_lock(&shim_dev_lock);
	d = shim_device_get(&i);
	if (d)
		d->present = true;
	pthread_mutex_unlock(&shim_dev_lock);
	return d;
}

/* Ask the daemon for its devices. @return count, or -errno when it cannot be reached. */
static int shim_discover(void)
{
	struct ipc_msg req, rsp;
	int fd, rc;

	fd = ipc_connect(NULL);
	if (fd < 0)
		return fd;
	shim_req(&req, IPC_OP_DEVICE_LIST);
	rc = ipc_call(fd, &req, NULL, 0, &rsp, NULL);
	close(fd);
	if (rc != 0)
		return rc > 0 ? -rc : rc;
	for (unsigned int i = 0; i < shim_ndevs; i++)
		shim_devs[i]->present = false;
	for (uint32_t i = 0; i < rsp.u.rsp_DEVICE_LIST.count && i < IPC_MAX_DEVICES; i++) {
		struct ipc_device_info *info = &rsp.u.rsp_DEVICE_LIST.dev[i];
		struct shim_device *d;

		info->name[sizeof(info->name) - 1] = '\0';
		d = shim_device_get(info);
		if (d)
			d->present = true;
	}
	return 0;
}

SHIM_EXPORT struct ibv_device **ibv_get_device_list(int *num_devices)
{
	struct ibv_device **list;
	unsigned int n = 0;
	int rc;

	pthread_mutex_lock(&shim_dev_lock);
	rc = shim_discover();
	if (rc < 0) {
		for (unsigned int i = 0; i < shim_ndevs; i++)
			shim_devs[i]->present = false;
		if (!shim_warned) {
			shim_warned = true;
			fprintf(stderr,
				"libibverbs (roce-dpdk shim): cannot reach roce-daemon at %s (%s); "
				"no RDMA devices. Start roce-daemon or set %s.\n",
				ipc_socket_path(), strerror(-rc), IPC_SOCKET_ENV);
		}
	}
	list = calloc(shim_ndevs + 1, sizeof(*list));
	if (list != NULL) {
		for (unsigned int i = 0; i < shim_ndevs; i++)
			if (shim_devs[i]->present)
				list[n++] = &shim_devs[i]->device;
	}
	pthread_mutex_unlock(&shim_dev_lock);
	if (list == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	if (num_devices)
		*num_devices = (int)n;
	return list;
}

SHIM_EXPORT void ibv_free_device_list(struct ibv_device **list)
{
	free(list); /* the devices themselves stay valid */
}

SHIM_EXPORT const char *ibv_get_device_name(struct ibv_device *device)
{
	return device->name;
}

SHIM_EXPORT __be64 ibv_get_device_guid(struct ibv_device *device)
{
	return shim_device_of(device)->info.node_guid;
}

SHIM_EXPORT int ibv_get_device_index(struct ibv_device *device)
{
	int idx = -1;

	pthread_mutex_lock(&shim_dev_lock);
	for (unsigned int i = 0; i < shim_ndevs; i++)
		if (&shim_devs[i]->device == device)
			idx = (int)i;
	pthread_mutex_unlock(&shim_dev_lock);
	return idx;
}

/* ---- device and port attributes ---- */

static int shim_query_device_ipc(struct ibv_context *context, struct ipc_device_attr *a)
{
	struct ipc_msg req, rsp;
	int rc;

	shim_req(&req, IPC_OP_QUERY_DEVICE);
	rc = shim_rpc(shim_ctx(context), &req, NULL, 0, &rsp, NULL);
	if (rc == 0)
		*a = rsp.u.rsp_QUERY_DEVICE.attr;
	return rc;
}

SHIM_EXPORT int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *device_attr)
{
	struct ipc_device_attr a;
	int rc = shim_query_device_ipc(context, &a);

	if (rc == 0)
		ipc_device_attr_to_ibv(&a, device_attr);
	return shim_ret(rc);
}

/* verbs_context.query_device_ex: copy at most @p attr_size bytes. */
int shim_query_device_ex(struct ibv_context *context, const struct ibv_query_device_ex_input *input,
			 struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ibv_device_attr_ex ex;
	struct ipc_device_attr a;
	int rc;

	if (input && input->comp_mask)
		return shim_ret(EINVAL);
	if (attr_size < sizeof(ex.orig_attr))
		return shim_ret(EINVAL);
	rc = shim_query_device_ipc(context, &a);
	if (rc)
		return shim_ret(rc);
	memset(&ex, 0, sizeof(ex));
	ipc_device_attr_to_ibv(&a, &ex.orig_attr);
	ex.completion_timestamp_mask = a.completion_timestamp_mask;
	ex.hca_core_clock = a.hca_core_clock;
	ex.device_cap_flags_ex = a.device_cap_flags_ex | a.device_cap_flags;
	ex.phys_port_cnt_ex = a.phys_port_cnt;
	ex.packet_pacing_caps.qp_rate_limit_min = a.qp_rate_limit_min;
	ex.packet_pacing_caps.qp_rate_limit_max = a.qp_rate_limit_max;
	ex.packet_pacing_caps.supported_qpts = a.pacing_supported_qpts;
	ex.odp_caps.general_caps = a.odp_general_caps;
	ex.odp_caps.per_transport_caps.rc_odp_caps = a.odp_rc_caps;
	ex.odp_caps.per_transport_caps.uc_odp_caps = a.odp_uc_caps;
	ex.odp_caps.per_transport_caps.ud_odp_caps = a.odp_ud_caps;
	ex.xrc_odp_caps = a.odp_xrc_caps;
	ex.max_dm_size = a.max_dm_size;
	ex.rss_caps.max_rwq_indirection_tables = a.rss_max_tables;
	ex.rss_caps.max_rwq_indirection_table_size = a.rss_max_table_size;
	ex.rss_caps.supported_qpts = a.rss_supported_qpts;
	ex.rss_caps.rx_hash_fields_mask = a.rss_hash_fields_mask;
	ex.rss_caps.rx_hash_function = (uint8_t)a.rss_hash_function;
	ex.max_wq_type_rq = a.max_wq_type_rq;
	ex.raw_packet_caps = a.raw_packet_caps;
	/* tag matching (doc/verbs-shim.md "Tag matching"): RC, rendezvous
	 * headers of up to 64 bytes as mlx5, an entry's SGEs as an SRQ's */
	if (a.tm_max_num_tags != 0 && a.tm_max_ops != 0) {
		ex.tm_caps.max_rndv_hdr_size = SHIM_TM_MAX_RNDV_HDR;
		ex.tm_caps.max_num_tags = a.tm_max_num_tags;
		ex.tm_caps.flags = IBV_TM_CAP_RC;
		ex.tm_caps.max_ops = a.tm_max_ops;
		ex.tm_caps.max_sge = a.max_srq_sge;
	}
	memcpy(attr, &ex, attr_size < sizeof(ex) ? attr_size : sizeof(ex));
	return 0;
}

static int shim_port_attr(struct ibv_context *context, uint8_t port, struct ibv_port_attr *o)
{
	struct ipc_msg req, rsp;
	const struct ipc_port_attr *a = &rsp.u.rsp_QUERY_PORT.attr;
	int rc;

	shim_req(&req, IPC_OP_QUERY_PORT);
	req.u.req_QUERY_PORT.port = port;
	rc = shim_rpc(shim_ctx(context), &req, NULL, 0, &rsp, NULL);
	if (rc)
		return rc;
	memset(o, 0, sizeof(*o));
	o->state = (enum ibv_port_state)a->state;
	o->max_mtu = (enum ibv_mtu)a->max_mtu;
	o->active_mtu = (enum ibv_mtu)a->active_mtu;
	o->gid_tbl_len = (int)a->gid_tbl_len;
	o->port_cap_flags = a->port_cap_flags;
	o->max_msg_sz = a->max_msg_sz;
	o->bad_pkey_cntr = a->bad_pkey_cntr;
	o->qkey_viol_cntr = a->qkey_viol_cntr;
	o->pkey_tbl_len = a->pkey_tbl_len;
	o->lid = a->lid;
	o->sm_lid = a->sm_lid;
	o->lmc = a->lmc;
	o->max_vl_num = a->max_vl_num;
	o->sm_sl = a->sm_sl;
	o->subnet_timeout = a->subnet_timeout;
	o->init_type_reply = a->init_type_reply;
	o->active_width = a->active_width;
	o->active_speed = a->active_speed;
	o->phys_state = a->phys_state;
	o->link_layer = a->link_layer;
	o->flags = a->flags;
	o->port_cap_flags2 = a->port_cap_flags2;
	return 0;
}

/* verbs_context.query_port: 0 or a positive errno (EINVAL for a bad port). */
int shim_query_port(struct ibv_context *context, uint8_t port_num, struct ibv_port_attr *port_attr,
		    size_t port_attr_len)
{
	struct ibv_port_attr full;
	int rc = shim_port_attr(context, port_num, &full);

	if (rc == 0)
		memcpy(port_attr, &full, port_attr_len < sizeof(full) ? port_attr_len : sizeof(full));
	return shim_ret(rc);
}

/*
 * The exported symbol takes rdma-core's old 48-byte layout (it ends at
 * `flags`), so it must not write port_cap_flags2 and later fields.
 */
SHIM_EXPORT int ibv_query_port(struct ibv_context *context, uint8_t port_num,
			       struct _compat_ibv_port_attr *port_attr)
{
	return shim_query_port(context, port_num, (struct ibv_port_attr *)port_attr,
			       offsetof(struct ibv_port_attr, port_cap_flags2));
}

/* ---- GID and P_Key ---- */

/* 0, ENODATA (empty slot) or EINVAL, like the kernel's query. */
static int shim_gid_entry(struct ibv_context *context, uint32_t port, uint32_t index,
			  struct ibv_gid_entry *e)
{
	struct ipc_msg req, rsp;
	int rc;

	if (port > 255)
		return EINVAL;
	shim_req(&req, IPC_OP_QUERY_GID);
	req.u.req_QUERY_GID.port = port;
	req.u.req_QUERY_GID.index = index;
	rc = shim_rpc(shim_ctx(context), &req, NULL, 0, &rsp, NULL);
	if (rc)
		return rc;
	memset(e, 0, sizeof(*e));
	memcpy(e->gid.raw, rsp.u.rsp_QUERY_GID.gid, 16);
	e->gid_index = index;
	e->port_num = port;
	e->gid_type = rsp.u.rsp_QUERY_GID.gid_type;
	e->ndev_ifindex = rsp.u.rsp_QUERY_GID.ndev_ifindex;
	return 0;
}

SHIM_EXPORT int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index,
			      union ibv_gid *gid)
{
	struct ibv_gid_entry e;
	int rc = index < 0 ? EINVAL : shim_gid_entry(context, port_num, (uint32_t)index, &e);

	if (rc == ENODATA) {
		memset(gid, 0, sizeof(*gid)); /* legacy API: an empty slot is a zero GID */
		return 0;
	}
	if (rc)
		return shim_minus1(rc);
	*gid = e.gid;
	return 0;
}

SHIM_EXPORT int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num,
				  uint32_t gid_index, struct ibv_gid_entry *entry, uint32_t flags,
				  size_t entry_size)
{
	struct ibv_gid_entry e;
	int rc;

	if (flags != 0 || entry_size < sizeof(e))
		return shim_ret(EINVAL);
	rc = shim_gid_entry(context, port_num, gid_index, &e);
	if (rc == 0)
		memcpy(entry, &e, sizeof(e));
	return shim_ret(rc);
}

SHIM_EXPORT ssize_t _ibv_query_gid_table(struct ibv_context *context, struct ibv_gid_entry *entries,
					 size_t max_entries, uint32_t flags, size_t entry_size)
{
	struct shim_context *ctx = shim_ctx(context);
	size_t n = 0;

	if (flags != 0 || entry_size < sizeof(struct ibv_gid_entry))
		return -shim_ret(EINVAL);
	for (uint32_t port = 1; port <= ctx->attr.phys_port_cnt; port++) {
		struct ibv_port_attr pa;
		int rc = shim_port_attr(context, (uint8_t)port, &pa);

		if (rc)
			return -shim_ret(rc);
		for (int i = 0; i < pa.gid_tbl_len; i++) {
			struct ibv_gid_entry e;

			rc = shim_gid_entry(context, port, (uint32_t)i, &e);
			if (rc == ENODATA)
				continue;
			if (rc)
				return -shim_ret(rc);
			if (n == max_entries)
				return -shim_ret(EINVAL);
			memcpy((uint8_t *)entries + n * entry_size, &e, sizeof(e));
			n++;
		}
	}
	return (ssize_t)n;
}

/* Private (driver.h): the sysfs type of a GID; an empty slot answers IB/RoCE v1. */
SHIM_EXPORT int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num,
				   unsigned int index, enum shim_gid_type_sysfs *type)
{
	struct ibv_gid_entry e;
	int rc = shim_gid_entry(context, port_num, index, &e);

	if (rc == ENODATA) {
		*type = SHIM_GID_TYPE_SYSFS_IB_ROCE_V1;
		return 0;
	}
	if (rc)
		return shim_minus1(rc);
	*type = e.gid_type == IBV_GID_TYPE_ROCE_V2 ? SHIM_GID_TYPE_SYSFS_ROCE_V2
						   : SHIM_GID_TYPE_SYSFS_IB_ROCE_V1;
	return 0;
}

SHIM_EXPORT int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index,
			       __be16 *pkey)
{
	struct ipc_msg req, rsp;
	int rc;

	if (index < 0)
		return shim_minus1(EINVAL);
	shim_req(&req, IPC_OP_QUERY_PKEY);
	req.u.req_QUERY_PKEY.port = port_num;
	req.u.req_QUERY_PKEY.index = (uint32_t)index;
	rc = shim_rpc(shim_ctx(context), &req, NULL, 0, &rsp, NULL);
	if (rc)
		return shim_minus1(rc);
	*pkey = htobe16(rsp.u.rsp_QUERY_PKEY.pkey);
	return 0;
}

SHIM_EXPORT int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num, __be16 pkey)
{
	for (int i = 0;; i++) {
		__be16 p;

		if (ibv_query_pkey(context, port_num, i, &p) != 0)
			return -1;
		if (p == pkey)
			return i;
	}
}

/* ---- sysfs helpers (public IBVERBS_1.0; prototypes from rdma-core's driver.h) ---- */

SHIM_EXPORT const char *ibv_get_sysfs_path(void)
{
	const char *env = getenv("SYSFS_PATH");

	return (env != NULL && env[0] == '/') ? env : "/sys";
}

SHIM_EXPORT int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size)
{
	char path[512];
	ssize_t n;
	int fd;

	if (size == 0 || snprintf(path, sizeof(path), "%s/%s", dir, file) >= (int)sizeof(path))
		return shim_minus1(ENAMETOOLONG);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, size);
	close(fd);
	if (n < 0)
		return -1;
	if ((size_t)n == size)
		n--;
	buf[n] = '\0';
	if (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	return (int)n;
}

struct verbs_sysfs_dev;
SHIM_EXPORT int ibv_read_ibdev_sysfs_file(char *buf, size_t size, struct verbs_sysfs_dev *sysfs_dev,
					  const char *fnfmt, ...)
{
	(void)buf;
	(void)size;
	(void)sysfs_dev;
	(void)fnfmt;
	return shim_minus1(EOPNOTSUPP);
}
