/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * lib/ipc: shared memory between an application (the verbs shim) and the
 * daemon: sealed memfd regions, and where the rings and control words sit.
 *
 * The rings are lib/shm's single-producer/single-consumer rings (queue.h,
 * struct spsc_ring) carrying lib/shm's records (wqe.h):
 *
 *  ring   producer            consumer            record
 *  SQ     application         daemon lcore        struct sq_wqe
 *  RQ     application         daemon lcore        struct rq_wqe (rq_wqe_stride() slots)
 *  SRQ    application         daemon lcore        struct rq_wqe (rq_wqe_stride() slots)
 *  CQ     daemon lcore        application         struct cqe
 *
 * The producer's release store of its index is the doorbell: a polling
 * daemon needs no system call (queue.h documents the ordering). An idle
 * QP's SQ is not polled: the engine sets SPSC_RING_WANT_BELL on it and the
 * shim then also rings its bell in the send CQ's control block (below). The SQ/RQ
 * consumer releases a slot only when the WQE is no longer needed (at its
 * completion), so "queue full" in the shim is prod - cons >= the QP's cap.
 *
 * Memfd layouts (offsets are in the create responses, struct ipc_ring_desc):
 *  - QP:  [SQ spsc_ring][RQ spsc_ring (absent with an SRQ)]
 *  - SRQ: [spsc_ring]
 *  - CQ:  [struct ipc_cq_ctrl (control line, send doorbells)][spsc_ring]
 *
 * CQ notification (ibv_req_notify_cq): the application stores
 * ipc_cq_ctrl.arm (XPORT_CQ_ARM_NEXT / _SOLICITED of xport.h) with seq_cst.
 * The engine, after publishing a CQE that matches, clears arm and reports
 * XPORT_EV_CQ_NOTIFY; the daemon then calls ipc_cq_signal(), which bumps
 * notify_count and writes one byte to the completion channel's socket pair
 * (the daemon holds the writing end, the application the reading end). The shim's
 * ibv_get_cq_event() reads one byte and finds the CQ whose notify_count moved.
 * A CQ made without a completion channel has no event to wait for: the
 * daemon's engine does not read its arm word (xport_cq.arm NULL), so an
 * ibv_req_notify_cq on it changes nothing, as no event could be read.
 */
#ifndef IPC_SHM_H
#define IPC_SHM_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "bell.h"
#include "queue.h"

#ifdef __cplusplus
extern "C" {
#endif

#define IPC_CACHE_LINE 64u

/** Values of ipc_cq_ctrl.arm (equal to lib/xport's enum xport_cq_arm). */
enum ipc_cq_arm {
	IPC_CQ_ARM_NONE = 0,
	IPC_CQ_ARM_NEXT = 1,      /**< any next completion */
	IPC_CQ_ARM_SOLICITED = 2, /**< next solicited or error completion */
};

/**
 * The CQ's control words in front of its ring: a line of notification
 * words, then the send doorbells of the QPs whose send CQ it is (bell.h):
 * the engine sets SPSC_RING_WANT_BELL on an idle QP's SQ and bell = its
 * slot on the lcore; the shim, after publishing the SQ producer index,
 * rings that bell here if the flag is set (spsc_ring_publish_bell()).
 * Every QP of a CQ is on one lcore, which reads the summary line of each
 * of its CQs per loop instead of every idle QP's producer index.
 */
struct ipc_cq_ctrl {
	/** enum xport_cq_arm: written by the application, cleared by the engine. */
	alignas(IPC_CACHE_LINE) uint32_t arm;
	/** Notifications raised (free running); written by the daemon only. */
	uint32_t notify_count;
	uint32_t reserved[14];
	/** Send doorbells: set by the application, taken by the engine. */
	struct shm_bells bells;
};
_Static_assert(sizeof(struct ipc_cq_ctrl) == 10 * IPC_CACHE_LINE, "control line and bells");

/**
 * Daemon side of a completion notification: bump @p ctrl's notify_count
 * (release: the CQE is visible before the count) and write one byte to the
 * channel's writing end @p wfd (ignored when < 0), made by
 * ipc_channel_pair(). Never blocks (MSG_DONTWAIT): a channel the
 * application let fill up loses the byte (-EAGAIN; the caller counts it).
 * Precondition: one caller per CQ at a time.
 * @return 0, -EAGAIN, or -errno of the send (-EPIPE: the reader is gone)
 */
int ipc_cq_signal(struct ipc_cq_ctrl *ctrl, int wfd);

/**
 * A completion channel: an AF_UNIX stream socket pair. @p app_fd (shut for
 * writing, blocking, close-on-exec) goes to the application; @p daemon_fd
 * (shut for reading) stays with the daemon, which sends to it with
 * MSG_DONTWAIT, so nothing the application does can make that block.
 * @return 0 or -errno
 */
int ipc_channel_pair(int *app_fd, int *daemon_fd);

/**
 * Bytes of an spsc_ring of @p entries records of @p stride bytes, rounded up
 * to a cache line so the next ring in the same memfd stays aligned.
 * @return 0 for an invalid geometry (see spsc_ring_bytes()).
 */
static inline size_t ipc_ring_bytes(uint32_t entries, uint32_t stride)
{
	size_t n = spsc_ring_bytes(entries, stride);

	return (n + IPC_CACHE_LINE - 1) & ~(size_t)(IPC_CACHE_LINE - 1);
}

/**
 * Create a memfd of @p size bytes sealed against shrinking and growing, so
 * a mapping peer can never take a SIGBUS. @return fd or -errno.
 */
int ipc_shm_create(const char *name, size_t size);

/**
 * Check a memfd received from a peer before mapping it: it must be sealed
 * against shrinking (F_SEAL_SHRINK), not be hugetlbfs (a hole punched in it
 * can SIGBUS the mapper) and hold at least @p need bytes.
 * @return 0, -EPERM (not sealed, or hugetlbfs), -EINVAL (too small) or -errno.
 */
int ipc_shm_check(int fd, uint64_t need);

/** mmap(MAP_SHARED, read/write) @p len bytes of @p fd at @p off. @return address or NULL (errno set). */
void *ipc_shm_map(int fd, size_t len, uint64_t off);

/** Round @p v up to a power of two (v <= 2^31); 0 gives 1. */
uint32_t ipc_pow2_roundup(uint32_t v);

#ifdef __cplusplus
}
#endif
#endif /* IPC_SHM_H */
