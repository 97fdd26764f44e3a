/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rsockets: iomapped buffers (riomap, riounmap, riowrite). A receiver maps
 * a buffer at an offset of its choice; the mapping goes to the peer as an
 * IOMAP_SGL message (the 24-byte {offset, addr, key, length} written into
 * the peer's target iomap, at the index the immediate names) before the
 * next data it sends. The peer's riowrite then writes straight into that
 * buffer: a plain RDMA WRITE, no immediate, nothing for the receiver to
 * process; applications say what arrived through the stream. The number
 * of entries each side takes is RDMA_IOMAPSIZE, exchanged in the conn data.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <rdma/rsocket.h>

#include "rcm.h"
#include "rsocket.h"

/* One riomap(): index into the peer's target iomap, or -1 for a local one. */
struct rsk_iomr {
	void *buf;
	size_t len;
	uint64_t offset;
	struct ibv_mr *mr;
	int index;
	bool pending;
};

void rsk_free_iomaps(struct rsk *rs)
{
	for (uint32_t i = 0; i < rs->nmaps; i++)
		if (rs->maps[i].mr)
			ibv_dereg_mr(rs->maps[i].mr);
	free(rs->maps);
	rs->maps = NULL;
	rs->nmaps = 0;
}

/* A free slot of rs->maps (grown by one), NULL with errno. */
static struct rsk_iomr *rsk_iomr_slot(struct rsk *rs)
{
	struct rsk_iomr *m;

	for (uint32_t i = 0; i < rs->nmaps; i++)
		if (rs->maps[i].mr == NULL)
			return &rs->maps[i];
	if (rs->nmaps >= RSK_IOMAP_MAX + 64u) {
		errno = ENOMEM;
		return NULL;
	}
	m = realloc(rs->maps, (rs->nmaps + 1) * sizeof(*m));
	if (m == NULL)
		return NULL;
	rs->maps = m;
	memset(&m[rs->nmaps], 0, sizeof(*m));
	return &m[rs->nmaps++];
}

/* The lowest index of the peer's target iomap no mapping of ours holds, or -1. */
static int rsk_free_index(const struct rsk *rs)
{
	for (uint32_t idx = 0; idx < rs->peer.iomap_size; idx++) {
		bool used = false;

		for (uint32_t i = 0; i < rs->nmaps && !used; i++)
			used = rs->maps[i].mr && rs->maps[i].index == (int)idx;
		if (!used)
			return (int)idx;
	}
	return -1;
}

RCM_EXPORT off_t riomap(int socket, void *buf, size_t len, int prot, int flags, off_t offset)
{
	struct rsk *rs = rsk_get(socket);
	struct rsk_iomr *m;
	int access = IBV_ACCESS_LOCAL_WRITE, idx = -1;

	(void)flags;
	if (rs == NULL)
		return rcm_err(EBADF);
	if (buf == NULL || len == 0 || (prot & ~(PROT_WRITE | PROT_NONE)))
		return rcm_err(EINVAL);
	pthread_mutex_lock(&rs->lock);
	if (rs->dg != NULL || rs->cm->qp == NULL) {
		/* librdmacm needs the endpoint's PD: a connected (or connecting) socket */
		offset = rcm_err(EINVAL);
		goto out;
	}
	if (prot & PROT_WRITE) {
		idx = rsk_free_index(rs);
		if (idx < 0) {
			offset = rcm_err(ENOMEM);
			goto out;
		}
		access |= IBV_ACCESS_REMOTE_WRITE;
	}
	m = rsk_iomr_slot(rs);
	if (m == NULL) {
		offset = -1;
		goto out;
	}
	m->mr = ibv_reg_mr(rs->cm->qp->pd, buf, len, access);
	if (m->mr == NULL) {
		offset = -1;
		goto out;
	}
	if (offset == -1)
		offset = (off_t)(uintptr_t)buf;
	m->buf = buf;
	m->len = len;
	m->offset = (uint64_t)offset;
	m->index = idx;
	m->pending = idx >= 0;
	if (m->pending)
		rs->iomap_pending = true;
out:
	pthread_mutex_unlock(&rs->lock);
	return offset;
}

RCM_EXPORT int riounmap(int socket, void *buf, size_t len)
{
	struct rsk *rs = rsk_get(socket);
	int rc = rcm_err(EINVAL);

	if (rs == NULL)
		return rcm_err(EBADF);
	pthread_mutex_lock(&rs->lock);
	for (uint32_t i = 0; i < rs->nmaps; i++) {
		struct rsk_iomr *m = &rs->maps[i];

		if (m->mr && m->buf == buf && m->len == len) {
			ibv_dereg_mr(m->mr);
			memset(m, 0, sizeof(*m));
			rc = 0;
			break;
		}
	}
	pthread_mutex_unlock(&rs->lock);
	return rc;
}

/* One mapping to the peer: an IOMAP_SGL message with the entry as its payload. */
static int rsk_send_iomap(struct rsk *rs, struct rsk_iomr *m)
{
	struct rsk_iomap e = { .offset = m->offset,
			       .sge = { .addr = (uintptr_t)m->buf,
					.key = m->mr->rkey,
					.length = (uint32_t)m->len } };
	struct ibv_sge sg[2];
	int nsg = 1, flags = 0;

	if (rs->peer.swap) {
		e.offset = __builtin_bswap64(e.offset);
		e.sge.addr = __builtin_bswap64(e.sge.addr);
		e.sge.key = __builtin_bswap32(e.sge.key);
		e.sge.length = __builtin_bswap32(e.sge.length);
	}
	if (rs->sq_inline >= sizeof(e)) {
		sg[0] = (struct ibv_sge){ .addr = (uintptr_t)&e, .length = sizeof(e) };
		flags = IBV_SEND_INLINE;
	} else {
		nsg = rsk_stage_buf(rs, &e, sizeof(e), sg);
	}
	rs->sseq_no++;
	rs->sqe_avail--;
	rs->sbuf_avail -= sizeof(e);
	m->pending = false;
	return rsk_post_write(rs, sg, nsg, rsk_msg(RSK_OP_IOMAP_SGL, (uint32_t)m->index), true, flags,
			      rs->peer.iomap_addr + (uint64_t)m->index * sizeof(e),
			      rs->peer.target_sgl.key);
}

int rsk_send_iomaps(struct rsk *rs, int flags)
{
	for (uint32_t i = 0; i < rs->nmaps; i++) {
		struct rsk_iomr *m = &rs->maps[i];

		if (!m->mr || !m->pending)
			continue;
		if (rsk_wait_send(rs, flags) || rsk_send_iomap(rs, m))
			return -1;
	}
	rs->iomap_pending = false;
	return 0;
}

/* The entry of the peer's mappings (our target iomap) that holds @p offset. */
static const struct rsk_iomap *rsk_find_iomap(const struct rsk *rs, uint64_t offset)
{
	for (uint32_t i = 0; i < rs->iomap_size; i++) {
		const volatile struct rsk_iomap *e = &rs->target_iomap[i];

		if (e->sge.length && offset >= e->offset && offset - e->offset < e->sge.length)
			return (const struct rsk_iomap *)e;
	}
	return NULL;
}

/* One direct write of up to @p left bytes at @p offset; @return bytes written or -1. */
static ssize_t rsk_iowrite_one(struct rsk *rs, const uint8_t *buf, size_t left, uint64_t offset,
			       uint32_t *olen, int flags)
{
	const struct rsk_iomap *e = rsk_find_iomap(rs, offset);
	struct ibv_sge sg[2];
	uint32_t x, room;
	int nsg = 1, wflags = 0;

	if (e == NULL)
		return 0; /* nothing mapped there: librdmacm stops short too */
	if (rsk_wait_send(rs, flags))
		return -1;
	x = left > *olen ? *olen : (uint32_t)left;
	if (*olen < left && *olen < RSK_MAX_TRANSFER)
		*olen <<= 1;
	room = (uint32_t)(e->offset + e->sge.length - offset);
	if (x > room)
		x = room;
	if (x > rs->sbuf_avail)
		x = rs->sbuf_avail;
	if (x <= rs->sq_inline) {
		sg[0] = (struct ibv_sge){ .addr = (uintptr_t)buf, .length = x };
		wflags = IBV_SEND_INLINE;
	} else {
		nsg = rsk_stage_buf(rs, buf, x, sg);
	}
	rs->sqe_avail--;
	rs->sbuf_avail -= x;
	if (rsk_post_write(rs, sg, nsg, rsk_msg(RSK_OP_WRITE, x), false, wflags,
			   e->sge.addr + (offset - e->offset), e->sge.key))
		return -1;
	return x;
}

RCM_EXPORT size_t riowrite(int socket, const void *buf, size_t count, off_t offset, int flags)
{
	struct rsk *rs = rsk_get(socket);
	uint32_t olen = RSK_OLAP_START;
	size_t done = 0;
	ssize_t n = 0;

	if (rs == NULL)
		return (size_t)rcm_err(EBADF);
	if (offset < 0 || (count && buf == NULL) || rs->dg != NULL)
		return (size_t)rcm_err(EINVAL);
	pthread_mutex_lock(&rs->slock);
	pthread_mutex_lock(&rs->lock);
	n = rsk_ready(rs);
	if (n == 0 && !(rs->state & RSK_CONNECTED))
		n = rcm_err(ENOTCONN);
	if (n == 0 && rs->iomap_pending)
		n = rsk_send_iomaps(rs, flags);
	while (n == 0 && done < count) {
		n = rsk_iowrite_one(rs, (const uint8_t *)buf + done, count - done,
				    (uint64_t)offset + done, &olen, flags);
		if (n <= 0)
			break;
		done += (size_t)n;
		n = 0;
	}
	pthread_mutex_unlock(&rs->lock);
	pthread_mutex_unlock(&rs->slock);
	/* librdmacm returns (size_t)-1 when nothing was written and a call failed */
	return (n < 0 && done == 0) ? (size_t)-1 : done;
}
