/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Tag matching (IBV_SRQT_TM, issue 19): the matching list of a TM SRQ and
 * the decision for a received message, in software, as a TM-capable NIC
 * (mlx5) makes it. Pure C, no engine state: the lcore that owns the SRQ
 * owns its list (no second core touches it), the responder calls
 * xport_tm_match() on the first packet of a SEND and acts on the verdict.
 *
 * Wired: a TM SRQ's list is applied from its ops ring by its lcore
 * (xport_srq_tm_poll(), xport_tm_add_at() at the index the shim chose) and
 * consulted by the responder on the first packet of a SEND
 * (xport_tm_peek(), then xport_tm_commit() once the data has a place).
 * A matched RNDV completes MATCH, then the QP's own READ of the RVH's range
 * and a FIN follow (xport_resp.c tm_rndv_start(), xport.c
 * tm_rndv_complete(); doc/verbs-shim.md "Tag matching").
 *
 * - **Headers** (<infiniband/tm_types.h>): a tagged SEND starts with a TMH
 *   (16 bytes: opcode, 3 reserved bytes, app_ctx (be32), tag (be64)); a
 *   rendezvous one follows it with an RVH (va (be64), rkey (be32), len (be32)).
 * - **List**: at most @c cap entries (tm_cap.max_num_tags), matched in
 *   posting order; an entry matches a tag when (tag & mask) == (entry.tag &
 *   mask), and a match consumes it. Handles name an entry and its
 *   generation, so a DEL of a consumed entry fails (IBV_WC_TM_ERR).
 * - **Phase synchronisation** (ibv_post_srq_ops(3)): every unexpected
 *   message counts in @c unexp_hw; until an operation with IBV_OPS_TM_SYNC
 *   reports that many handled (@c unexp_sw), matching is off (every tagged
 *   message is unexpected) and an ADD completes with IBV_WC_TM_SYNC_REQ.
 */
#ifndef XPORT_TM_H
#define XPORT_TM_H

#include <stdbool.h>
#include <stdint.h>

#include "wqe.h"

#ifdef __cplusplus
extern "C" {
#endif

#define XPORT_TMH_LEN 16u
#define XPORT_RVH_LEN 16u
#define XPORT_TM_MAX_TAGS 0xffffu  /**< handles are 16-bit indices */

/** TMH opcodes (enum ibv_tmh_op). */
enum xport_tmh_op {
	XPORT_TMH_NO_TAG = 0,
	XPORT_TMH_RNDV = 1,
	XPORT_TMH_FIN = 2,
	XPORT_TMH_EAGER = 3,
};

/** A parsed TMH (+ RVH for RNDV), host byte order. */
struct xport_tmh {
	uint8_t op;
	uint32_t app_ctx;
	uint64_t tag;
	uint64_t va;    /**< RNDV: the sender's buffer */
	uint32_t rkey;
	uint32_t len;
};

struct xport_tm_entry {
	uint64_t tag, mask, wr_id;
	struct wr_sge sg[WQE_MAX_SGE];
	uint32_t num_sge;
	uint32_t prev, next;     /**< posting order (UINT32_MAX: none) or the free list */
	uint16_t gen;
	bool live;
};

/** The matching list of one TM SRQ. */
struct xport_tm {
	uint32_t cap;
	uint32_t n;
	uint32_t head, tail;     /**< oldest, newest live entry */
	uint32_t free;           /**< free list through next */
	uint32_t unexp_hw;       /**< unexpected messages reported (wraps) */
	uint32_t unexp_sw;       /**< the count the last sync carried */
	struct xport_tm_entry *e;
	/**
	 * Handles chosen by the client (xport_tm_add_at(), a TM SRQ): the
	 * free list is unused, and each time the entry at index i leaves the
	 * list released[i] is incremented (shared memory, the shim reads it;
	 * NULL: not counted).
	 */
	bool by_index;
	uint32_t *released;
};

/** What a received SEND is. */
enum xport_tm_verdict {
	XPORT_TM_NO_TAG,     /**< TMH NO_TAG, or no TMH: the SRQ's next receive, IBV_WC_TM_NO_TAG */
	XPORT_TM_UNEXPECTED, /**< tagged, no entry (or out of sync): the SRQ's next receive whole,
				  IBV_WC_TM_RECV without MATCH; unexp_hw counted */
	XPORT_TM_EAGER,      /**< matched: the payload after the TMH into the entry's SGEs,
				  IBV_WC_TM_RECV with MATCH | DATA_VALID */
	XPORT_TM_RNDV,       /**< matched: IBV_WC_TM_RECV with MATCH, then an RDMA READ of
				  rvh.len from rvh.va/rkey into the entry, a FIN to the sender,
				  then IBV_WC_TM_RECV with DATA_VALID */
};

/** A list of @p cap (1..XPORT_TM_MAX_TAGS) entries. @return 0, EINVAL or ENOMEM */
int xport_tm_init(struct xport_tm *t, uint32_t cap);
void xport_tm_fini(struct xport_tm *t);

/** Whether matching is on (every unexpected message was reported handled). */
static inline bool
xport_tm_synced(const struct xport_tm *t)
{
	return t->unexp_sw == t->unexp_hw;
}

/**
 * IBV_WR_TAG_ADD: append an entry (its SGEs already checked by the caller).
 * @param sync_req set when the list is out of sync (the ADD's completion
 *        carries IBV_WC_TM_SYNC_REQ; the entry is added all the same)
 * @return 0 with *@p handle, EINVAL (num_sge), ENOSPC (list full)
 */
int xport_tm_add(struct xport_tm *t, uint64_t tag, uint64_t mask, uint64_t wr_id,
		 const struct wr_sge *sg, uint32_t num_sge, uint32_t *handle, bool *sync_req);

/**
 * IBV_WR_TAG_ADD at the index @p index the client chose (ibv_post_srq_ops
 * returns handles synchronously, so the shim picks them): the handle is
 * the index. Switches the list to by_index mode (xport_tm_add() refuses
 * from then on). A failure other than EEXIST counts the index released.
 * @return 0, EINVAL (index or num_sge out of range), EEXIST (index live)
 */
int xport_tm_add_at(struct xport_tm *t, uint32_t index, uint64_t tag, uint64_t mask,
		    uint64_t wr_id, const struct wr_sge *sg, uint32_t num_sge, bool *sync_req);

/**
 * IBV_WR_TAG_DEL (by_index: @p handle is the index, no generation).
 * @return 0, or ENOENT (consumed, deleted or never added: IBV_WC_TM_ERR)
 */
int xport_tm_del(struct xport_tm *t, uint32_t handle);

/** IBV_OPS_TM_SYNC: software handled @p unexpected_cnt unexpected messages. */
void xport_tm_sync(struct xport_tm *t, uint32_t unexpected_cnt);

/**
 * Parse the TMH (and for RNDV the RVH) at the start of @p p (@p len bytes).
 * @return 0, or -EINVAL (shorter than its headers, unknown opcode; reserved bytes are ignored, as mlx5 does)
 */
int xport_tmh_parse(const uint8_t *p, uint32_t len, struct xport_tmh *h);

/**
 * The verdict for a SEND whose first @p len bytes are @p p; a match
 * consumes its entry, copied to @p hit (NULL: not wanted); an unexpected
 * tagged message counts in unexp_hw. A message without a valid TMH is
 * NO_TAG (delivered whole, as a plain receive).
 */
enum xport_tm_verdict xport_tm_match(struct xport_tm *t, const uint8_t *p, uint32_t len,
				     struct xport_tmh *h, struct xport_tm_entry *hit);

/**
 * The verdict xport_tm_match() would give a message with the parsed header
 * @p h, without acting on it (the responder peeks, then commits only once
 * the data has a place: an unexpected or NO_TAG message needs a receive of
 * the SRQ, else RNR). @p no_rndv: a matching RNDV is UNEXPECTED (software
 * reads the RVH; the responder asks so of a QP that is not RC). *@p idx: the
 * matching entry for EAGER/RNDV.
 */
enum xport_tm_verdict xport_tm_peek(const struct xport_tm *t, const struct xport_tmh *h,
				    bool no_rndv, uint32_t *idx);

/**
 * Act on verdict @p v of xport_tm_peek() (list unchanged since): a match
 * consumes entry @p idx (copied to @p hit, NULL: not wanted), an
 * unexpected message counts in unexp_hw.
 */
void xport_tm_commit(struct xport_tm *t, enum xport_tm_verdict v, uint32_t idx,
		     struct xport_tm_entry *hit);

/** Which completion of a received message xport_tm_recv_cqe() writes. */
enum xport_tm_cqe_step {
	XPORT_TM_CQE_ARRIVED, /**< the verdict's completion (RNDV: the match, data not yet read) */
	XPORT_TM_CQE_RNDV_DONE, /**< RNDV: the READ landed and the FIN went out */
};

/**
 * Fill the tag matching fields of the receive completion @p c of a message
 * of @p msg_len bytes (the TMH included) with verdict @p v, as pyverbs
 * test_tag_matching reads them (mlx5's behaviour):
 * - EAGER: TM_RECV, MATCH | DATA_VALID, the entry's wr_id, the tag and
 *   app_ctx, byte_len the payload after the TMH;
 * - RNDV, ARRIVED: TM_RECV, MATCH, the entry's wr_id, the tag and app_ctx,
 *   byte_len 0; RNDV_DONE: TM_RECV, DATA_VALID, the entry's wr_id, no tag,
 *   byte_len rvh.len;
 * - UNEXPECTED: TM_RECV, no flags, no tag (software reads the TMH in the
 *   buffer), byte_len the whole message;
 * - NO_TAG: TM_NO_TAG, likewise.
 * For UNEXPECTED and NO_TAG the wr_id is the SRQ receive's: left as it is.
 * status, qp_num and the rest are the caller's.
 */
void xport_tm_recv_cqe(struct cqe *c, enum xport_tm_verdict v, enum xport_tm_cqe_step step,
		       const struct xport_tmh *h, const struct xport_tm_entry *hit, uint32_t msg_len);

/**
 * Fill the completion @p c of an ibv_post_srq_ops operation (WC_TM_ADD,
 * WC_TM_DEL or WC_TM_SYNC, @p wc_opcode) with the result @p rc of
 * xport_tm_add/del (0, or an errno: status WC_TM_ERR) and @p sync_req
 * (an ADD while out of sync: WC_FLAG_TM_SYNC_REQ).
 */
void xport_tm_op_cqe(struct cqe *c, uint32_t wc_opcode, uint64_t wr_id, int rc, bool sync_req);

#ifdef __cplusplus
}
#endif
#endif /* XPORT_TM_H */
