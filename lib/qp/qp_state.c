/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The QP state transition table: one table, state x state, each valid cell
 * giving the attribute bits a modify must carry (req) and may carry (opt)
 * per QP type. IBV_QP_STATE is implied in every cell.
 *
 * Source: the Modify QP verb of IBTA Vol. 1 as encoded by the Linux core's
 * qp_state_table (drivers/infiniband/core/verbs.c) for RC, UC, UD, XRC and
 * RAW_PACKET. One deliberate addition, marked "ours": IBV_QP_RATE_LIMIT for
 * RC on INIT->RTR, RTR->RTS and RTS->RTS (Linux has it for RAW_PACKET only;
 * the RC cells follow the 2026 "IB/core: Extend rate limit support for RC
 * QPs" patch), because our transport engine paces RC QPs.
 * doc/qp-state-machine.md prints this table; test/qp checks the two agree.
 */
#include <stddef.h>

#include "qp_attr.h"

/* Short names for the cells; local to this file. */
#define CUR     IBV_QP_CUR_STATE
#define SQD_EVT IBV_QP_EN_SQD_ASYNC_NOTIFY
#define ACCESS  IBV_QP_ACCESS_FLAGS
#define PKEY    IBV_QP_PKEY_INDEX
#define PORT    IBV_QP_PORT
#define QKEY    IBV_QP_QKEY
#define AV      IBV_QP_AV
#define MTU     IBV_QP_PATH_MTU
#define TIMEOUT IBV_QP_TIMEOUT
#define RETRY   IBV_QP_RETRY_CNT
#define RNR_RTY IBV_QP_RNR_RETRY
#define RQ_PSN  IBV_QP_RQ_PSN
#define RD_ATOM IBV_QP_MAX_QP_RD_ATOMIC
#define ALT     IBV_QP_ALT_PATH
#define RNR_TMR IBV_QP_MIN_RNR_TIMER
#define SQ_PSN  IBV_QP_SQ_PSN
#define DEST_RD IBV_QP_MAX_DEST_RD_ATOMIC
#define MIG     IBV_QP_PATH_MIG_STATE
#define DQPN    IBV_QP_DEST_QPN
#define RATE    IBV_QP_RATE_LIMIT

#define RC  QP_SEM_RC
#define UC  QP_SEM_UC
#define UD  QP_SEM_UD
#define RAW QP_SEM_RAW_PACKET
#define INI QP_SEM_XRC_INI
#define TGT QP_SEM_XRC_TGT

#define S(x) IBV_QPS_##x

static const struct qp_sem_transition qp_state_table[S(ERR) + 1][S(ERR) + 1] = {
	[S(RESET)] = {
		[S(RESET)] = { .valid = true },
		[S(INIT)] = { .valid = true,
			.req = {
				[RC] = PKEY | PORT | ACCESS,
				[UC] = PKEY | PORT | ACCESS,
				[UD] = PKEY | PORT | QKEY,
				[RAW] = PORT,
				[INI] = PKEY | PORT | ACCESS,
				[TGT] = PKEY | PORT | ACCESS,
			},
		},
	},
	[S(INIT)] = {
		[S(RESET)] = { .valid = true },
		[S(ERR)] = { .valid = true },
		[S(INIT)] = { .valid = true,
			.opt = {
				[RC] = PKEY | PORT | ACCESS,
				[UC] = PKEY | PORT | ACCESS,
				[UD] = PKEY | PORT | QKEY,
				[INI] = PKEY | PORT | ACCESS,
				[TGT] = PKEY | PORT | ACCESS,
			},
		},
		[S(RTR)] = { .valid = true,
			.req = {
				[RC] = AV | MTU | DQPN | RQ_PSN | DEST_RD | RNR_TMR,
				[UC] = AV | MTU | DQPN | RQ_PSN,
				[INI] = AV | MTU | DQPN | RQ_PSN,
				[TGT] = AV | MTU | DQPN | RQ_PSN | DEST_RD | RNR_TMR,
			},
			.opt = {
				[RC] = ALT | ACCESS | PKEY | RATE /* ours */,
				[UC] = ALT | ACCESS | PKEY,
				[UD] = PKEY | QKEY,
				[INI] = ALT | ACCESS | PKEY,
				[TGT] = ALT | ACCESS | PKEY,
			},
		},
	},
	[S(RTR)] = {
		[S(RESET)] = { .valid = true },
		[S(ERR)] = { .valid = true },
		[S(RTS)] = { .valid = true,
			.req = {
				[RC] = TIMEOUT | RETRY | RNR_RTY | SQ_PSN | RD_ATOM,
				[UC] = SQ_PSN,
				[UD] = SQ_PSN,
				[INI] = TIMEOUT | RETRY | RNR_RTY | SQ_PSN | RD_ATOM,
				[TGT] = TIMEOUT | SQ_PSN,
			},
			.opt = {
				[RC] = CUR | ALT | ACCESS | RNR_TMR | MIG | RATE /* ours */,
				[UC] = CUR | ALT | ACCESS | MIG,
				[UD] = CUR | QKEY,
				[RAW] = RATE,
				[INI] = CUR | ALT | ACCESS | MIG,
				[TGT] = CUR | ALT | ACCESS | RNR_TMR | MIG,
			},
		},
	},
	[S(RTS)] = {
		[S(RESET)] = { .valid = true },
		[S(ERR)] = { .valid = true },
		[S(RTS)] = { .valid = true,
			.opt = {
				[RC] = CUR | ACCESS | ALT | MIG | RNR_TMR | RATE /* ours */,
				[UC] = CUR | ACCESS | ALT | MIG,
				[UD] = CUR | QKEY,
				[RAW] = RATE,
				[INI] = CUR | ACCESS | ALT | MIG,
				[TGT] = CUR | ACCESS | ALT | MIG | RNR_TMR,
			},
		},
		[S(SQD)] = { .valid = true,
			.opt = {
				[RC] = SQD_EVT,
				[UC] = SQD_EVT,
				[UD] = SQD_EVT,
				[INI] = SQD_EVT,
				[TGT] = SQD_EVT,
			},
		},
	},
	[S(SQD)] = {
		[S(RESET)] = { .valid = true },
		[S(ERR)] = { .valid = true },
		[S(RTS)] = { .valid = true,
			.opt = {
				[RC] = CUR | ALT | ACCESS | RNR_TMR | MIG,
				[UC] = CUR | ALT | ACCESS | MIG,
				[UD] = CUR | QKEY,
				[INI] = CUR | ALT | ACCESS | MIG,
				[TGT] = CUR | ALT | ACCESS | RNR_TMR | MIG,
			},
		},
		[S(SQD)] = { .valid = true,
			.opt = {
				[RC] = PORT | AV | TIMEOUT | RETRY | RNR_RTY | RD_ATOM |
				       DEST_RD | ALT | ACCESS | PKEY | RNR_TMR | MIG,
				[UC] = AV | ALT | ACCESS | PKEY | MIG,
				[UD] = PKEY | QKEY,
				[INI] = PORT | AV | TIMEOUT | RETRY | RNR_RTY | RD_ATOM |
					ALT | ACCESS | PKEY | MIG,
				[TGT] = PORT | AV | TIMEOUT | DEST_RD | ALT | ACCESS | PKEY |
					RNR_TMR | MIG,
			},
		},
	},
	[S(SQE)] = {
		[S(RESET)] = { .valid = true },
		[S(ERR)] = { .valid = true },
		[S(RTS)] = { .valid = true,
			.opt = {
				[UC] = CUR | ACCESS,
				[UD] = CUR | QKEY,
			},
		},
	},
	[S(ERR)] = {
		[S(RESET)] = { .valid = true },
		[S(ERR)] = { .valid = true },
	},
};

const struct qp_sem_transition *
qp_sem_transition(enum ibv_qp_state cur, enum ibv_qp_state next)
{
	if ((unsigned int)cur > S(ERR) || (unsigned int)next > S(ERR))
		return NULL;
	return &qp_state_table[cur][next];
}

int
qp_sem_type_index(enum ibv_qp_type type)
{
	switch (type) {
	case IBV_QPT_RC:
		return RC;
	case IBV_QPT_UC:
		return UC;
	case IBV_QPT_UD:
		return UD;
	case IBV_QPT_RAW_PACKET:
		return RAW;
	case IBV_QPT_XRC_SEND:
		return INI;
	case IBV_QPT_XRC_RECV:
		return TGT;
	default:
		return -1;
	}
}

bool
qp_sem_mask_ok(enum ibv_qp_state cur, enum ibv_qp_state next,
	       enum ibv_qp_type type, int mask)
{
	const struct qp_sem_transition *t = qp_sem_transition(cur, next);
	int ti = qp_sem_type_index(type);

	if (t == NULL || ti < 0 || !t->valid)
		return false;
	/* The current-state modifier exists only for the states
	 * an asynchronous event can leave behind the consumer's back. */
	if ((mask & CUR) && cur != S(RTR) && cur != S(RTS) && cur != S(SQD) &&
	    cur != S(SQE))
		return false;
	if ((mask & t->req[ti]) != t->req[ti])
		return false;
	return (mask & ~(t->req[ti] | t->opt[ti] | IBV_QP_STATE)) == 0;
}

/* One list of the named mask bits: bit number and IBV_QP_ suffix. */
#define QP_SEM_ATTR_BITS(X)                                                   \
	X(0, STATE) X(1, CUR_STATE) X(2, EN_SQD_ASYNC_NOTIFY)                 \
	X(3, ACCESS_FLAGS) X(4, PKEY_INDEX) X(5, PORT) X(6, QKEY) X(7, AV)    \
	X(8, PATH_MTU) X(9, TIMEOUT) X(10, RETRY_CNT) X(11, RNR_RETRY)        \
	X(12, RQ_PSN) X(13, MAX_QP_RD_ATOMIC) X(14, ALT_PATH)                 \
	X(15, MIN_RNR_TIMER) X(16, SQ_PSN) X(17, MAX_DEST_RD_ATOMIC)          \
	X(18, PATH_MIG_STATE) X(19, CAP) X(20, DEST_QPN) X(25, RATE_LIMIT)

#define QP_SEM_ATTR_NAME(bit, name) [bit] = #name,
static const char *const qp_attr_names[32] = { QP_SEM_ATTR_BITS(QP_SEM_ATTR_NAME) };

#define QP_SEM_ATTR_CHECK(bit, name) \
	_Static_assert(IBV_QP_##name == 1 << (bit), "IBV_QP_" #name " bit");
QP_SEM_ATTR_BITS(QP_SEM_ATTR_CHECK)

const char *
qp_sem_attr_name(unsigned int bit)
{
	return bit < 32 ? qp_attr_names[bit] : NULL;
}

const char *
qp_sem_state_name(enum ibv_qp_state state)
{
	static const char *const names[] = {
		[S(RESET)] = "RESET", [S(INIT)] = "INIT", [S(RTR)] = "RTR",
		[S(RTS)] = "RTS", [S(SQD)] = "SQD", [S(SQE)] = "SQE",
		[S(ERR)] = "ERR",
	};

	return (unsigned int)state <= S(ERR) ? names[state] : NULL;
}
