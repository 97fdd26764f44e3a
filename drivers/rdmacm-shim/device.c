/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdmacm shim: devices. As librdmacm does, every device the verbs library
 * lists gets one ibv_context, opened when an id first lands on the device
 * (or by rdma_get_devices) and kept for the life of the process, and a
 * default PD shared by the ids on it (freed with the last id).
 */
#include <stdlib.h>
#include <string.h>

#include "rcm.h"

#define RCM_MAX_DEVICES 16u

static pthread_mutex_t rcm_dev_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ibv_device **rcm_dev_list;     /* kept: devices stay valid */
static struct rcm_device rcm_devs[RCM_MAX_DEVICES];
static unsigned int rcm_ndevs;

/* Refresh the device table from the verbs library (rcm_dev_lock held). */
static int rcm_sync_devices(void)
{
	struct ibv_device **list;
	int n;

	list = ibv_get_device_list(&n);
	if (list == NULL)
		return rcm_err(ENODEV);
	if (n <= 0) {
		ibv_free_device_list(list);
		return rcm_err(ENODEV);
	}
	for (int i = 0; i < n; i++) {
		unsigned int j;

		for (j = 0; j < rcm_ndevs; j++)
			if (rcm_devs[j].dev == list[i])
				break;
		if (j < rcm_ndevs || rcm_ndevs == RCM_MAX_DEVICES)
			continue;
		rcm_devs[rcm_ndevs].dev = list[i];
		rcm_devs[rcm_ndevs].guid = ibv_get_device_guid(list[i]);
		rcm_ndevs++;
	}
	/* Our verbs library keeps device objects for the process: keep one list. */
	if (rcm_dev_list == NULL)
		rcm_dev_list = list;
	else
		ibv_free_device_list(list);
	return 0;
}

int rcm_init(void)
{
	int rc = 0;

	pthread_mutex_lock(&rcm_dev_lock);
	if (rcm_ndevs == 0)
		rc = rcm_sync_devices();
	pthread_mutex_unlock(&rcm_dev_lock);
	return rc;
}

/* Open @p d and read its limits (rcm_dev_lock held). @return 0 or -1, errno set. */
static int rcm_device_open(struct rcm_device *d)
{
	struct ibv_device_attr attr;
	int rc;

	if (d->verbs)
		return 0;
	d->verbs = ibv_open_device(d->dev);
	if (d->verbs == NULL)
		return rcm_err(ENODEV);
	rc = ibv_query_device(d->verbs, &attr);
	if (rc) {
		ibv_close_device(d->verbs);
		d->verbs = NULL;
		return rcm_err(rc);
	}
	d->port_cnt = attr.phys_port_cnt;
	for (unsigned int i = 1; i <= attr.phys_port_cnt && i <= sizeof(d->link_layer); i++) {
		struct ibv_port_attr pa;

		d->link_layer[i - 1] = ibv_query_port(d->verbs, (uint8_t)i, &pa) ?
				       IBV_LINK_LAYER_UNSPECIFIED : pa.link_layer;
	}
	d->max_qpsize = (uint32_t)attr.max_qp_wr;
	d->max_initiator_depth = (uint8_t)attr.max_qp_init_rd_atom;
	d->max_responder_resources = (uint8_t)attr.max_qp_rd_atom;
	return 0;
}

static struct rcm_device *rcm_find_guid(uint64_t guid)
{
	for (unsigned int i = 0; i < rcm_ndevs; i++)
		if (rcm_devs[i].guid == guid)
			return &rcm_devs[i];
	return NULL;
}

struct rcm_device *rcm_device_get(uint64_t guid)
{
	struct rcm_device *d;

	pthread_mutex_lock(&rcm_dev_lock);
	d = rcm_find_guid(guid);
	if (d == NULL && rcm_sync_devices() == 0)
		d = rcm_find_guid(guid);
	if (d == NULL) {
		pthread_mutex_unlock(&rcm_dev_lock);
		errno = ENODEV;
		return NULL;
	}
	if (rcm_device_open(d) != 0) {
		pthread_mutex_unlock(&rcm_dev_lock);
		return NULL;
	}
	if (d->pd == NULL) {
		d->pd = ibv_alloc_pd(d->verbs);
		if (d->pd == NULL) {
			pthread_mutex_unlock(&rcm_dev_lock);
			return NULL;
		}
	}
	d->refcnt++;
	pthread_mutex_unlock(&rcm_dev_lock);
	return d;
}

void rcm_device_put(struct rcm_device *d)
{
	pthread_mutex_lock(&rcm_dev_lock);
	if (d->refcnt && --d->refcnt == 0 && d->pd) {
		ibv_dealloc_pd(d->pd);
		d->pd = NULL;
	}
	pthread_mutex_unlock(&rcm_dev_lock);
}

struct ibv_context *rcm_any_context(void)
{
	struct ibv_context *ctx = NULL;

	pthread_mutex_lock(&rcm_dev_lock);
	if (rcm_ndevs == 0 && rcm_sync_devices() != 0)
		goto out;
	if (rcm_device_open(&rcm_devs[0]) == 0)
		ctx = rcm_devs[0].verbs;
out:
	pthread_mutex_unlock(&rcm_dev_lock);
	return ctx;
}

struct rcm_device *rcm_device_of(struct ibv_context *verbs)
{
	struct rcm_device *d = NULL;

	pthread_mutex_lock(&rcm_dev_lock);
	for (unsigned int i = 0; i < rcm_ndevs && verbs; i++)
		if (rcm_devs[i].verbs == verbs)
			d = &rcm_devs[i];
	pthread_mutex_unlock(&rcm_dev_lock);
	return d;
}

RCM_EXPORT struct ibv_context **rdma_get_devices(int *num_devices)
{
	struct ibv_context **devs = NULL;
	unsigned int n = 0;

	if (rcm_init())
		goto out;
	pthread_mutex_lock(&rcm_dev_lock);
	if (rcm_sync_devices() == 0) {
		devs = calloc(rcm_ndevs + 1, sizeof(*devs));
		for (unsigned int i = 0; devs && i < rcm_ndevs; i++)
			if (rcm_device_open(&rcm_devs[i]) == 0)
				devs[n++] = rcm_devs[i].verbs;
		if (devs == NULL)
			errno = ENOMEM;
	}
	pthread_mutex_unlock(&rcm_dev_lock);
out:
	if (num_devices)
		*num_devices = devs ? (int)n : 0;
	return devs;
}

RCM_EXPORT void rdma_free_devices(struct ibv_context **list)
{
	/* The contexts stay open for the process, as librdmacm keeps them. */
	free(list);
}
