/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Control messages: what the control thread asks of the lcore that owns an
 * object, and the lcore's answer. One list (CTL_MSG_LIST); a message is
 * sent by value on the owner's `ctl_in` ring and comes back, the same
 * struct with `rc` set, on its `ctl_out` ring (worker.h). Nothing on either
 * side waits for the other: the control thread passes answers on when it
 * drains `ctl_out` (app_iface.c: lib/ctl's ctl_dp_done()).
 *
 * Back-pressure: the control thread keeps at most WORKER_CTL_RING messages
 * outstanding per lcore, so an answer always finds room on `ctl_out`; what
 * does not fit waits in the control thread's backlog (counted), never lost.
 *
 * Pointers in a message (rings, CQ/SRQ views, MR tables) name storage that
 * stays put while the message is in flight: the sender's tables, never its
 * stack.
 */
#ifndef ROCE_DAEMON_CTL_MSG_H
#define ROCE_DAEMON_CTL_MSG_H

#include <stdint.h>

#include "xport.h"

/**
 * The messages: X(symbol, name). The lcore runs PING and STALL itself
 * (worker.c); the rest go to the handler the application interface
 * installed (daemon.ctl_msg_fn).
 */
#define CTL_MSG_LIST(X)                                                                     \
	X(PING, "ping")             /* answers rc = the lcore id (tests) */              \
	X(STALL, "stall")           /* test hook: the lcore stops for u.stall_ms */      \
	X(QP_CREATE, "qp_create")   /* u.qp: engine QP in RESET */                       \
	X(QP_MODIFY, "qp_modify")   /* u.qp: new configuration, state, event epoch */    \
	X(QP_DESTROY, "qp_destroy") /* u.qp.cfg.qpn */                                   \
	X(MR_REG, "mr_reg")         /* u.mr: into this lcore's MR table */               \
	X(MR_DEREG, "mr_dereg")     /* u.mr.key */                                       \
	X(CQ_RESIZE, "cq_resize")   /* u.cq: move the unconsumed CQEs */                 \
	X(SRQ_LIMIT, "srq_limit")   /* u.srq: arm the limit event */                     \
	X(SRQ_DETACH, "srq_detach") /* u.srq.x: an XRC or TM SRQ goes: TGT QPs stop reaching it, \
				       its ops ring is no longer polled */                    \
	X(TM_ATTACH, "tm_attach")   /* u.srq.x: a TM SRQ: poll its ops ring */

enum ctl_msg_type {
#define CTL_MSG_ENUM(sym, name) CTL_MSG_##sym,
	CTL_MSG_LIST(CTL_MSG_ENUM)
#undef CTL_MSG_ENUM
	CTL_MSG_COUNT
};

/** @return the name of message type @p t ("?" when out of range). */
const char *ctl_msg_name(unsigned int t);

/** One message; the answer is the same struct with rc and worker set. */
struct ctl_msg {
	uint16_t type;           /**< enum ctl_msg_type */
	uint16_t worker;         /**< answer: index of the worker that ran it */
	int32_t rc;              /**< answer: 0 or -errno */
	uint32_t op;             /**< the sender's operation (echoed) */
	uint32_t pad;
	union {
		struct {
			struct xport_cfg cfg;
			uint16_t port;   /**< daemon port (QP_CREATE) */
			int16_t state;   /**< QP_MODIFY: enum xport_state, or -1: unchanged */
			/**
			 * Epoch of the QP's events from now on (worker_event.cookie):
			 * a reset starts a new one, so events raised before it are
			 * told apart.
			 */
			uint32_t epoch;
		} qp;
		struct {
			uint32_t key;
			uint32_t pd;
			uint32_t access;       /**< enum mr_access */
			int32_t pid;           /**< indirect (local == 0): the owner process */
			int32_t mem_fd;        /**< indirect: the owner's /proc/PID/mem (lib/ctl's) */
			uint64_t local;        /**< address in the daemon; 0: indirect */
			uint64_t app_addr;
			uint64_t iova;
			uint64_t length;
		} mr;
		struct {
			void *view;            /**< the engine's CQ view to repoint (struct ai_cq) */
			const void *to, *from; /**< struct ctl_cq_info of the new and old ring */
		} cq;
		struct {
			struct xport_srq *x;
			uint32_t limit;
		} srq;
		uint32_t stall_ms;
	} u;
};

#endif /* ROCE_DAEMON_CTL_MSG_H */
