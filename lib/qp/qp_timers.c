/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Encodings of the QP's timer and retry attributes. The spec tables live in
 * lib/roce (roce_ack_timeout_nsec, roce_rnr_timer_usec); this file gives the
 * QP-level meaning: infinite retries, budgets, MTU sizes.
 */
#include <limits.h>

#include "qp_attr.h"
#include "roce.h"

uint64_t
qp_sem_ack_timeout_ns(uint8_t code)
{
	/* 4.096 us x 2^code; code 0 disables the timer. */
	return roce_ack_timeout_nsec(code);
}

uint32_t
qp_sem_rnr_timer_us(uint8_t code)
{
	return roce_rnr_timer_usec(code);
}

uint8_t
qp_sem_rnr_timer_code(uint32_t usec)
{
	/* Codes 1..31 grow with the code; code 0 (655.36 ms) is the longest. */
	for (uint8_t code = 1; code <= 31; code++)
		if (qp_sem_rnr_timer_us(code) >= usec)
			return code;
	return 0;
}

uint32_t
qp_sem_mtu_bytes(enum ibv_mtu mtu)
{
	if ((unsigned int)mtu < IBV_MTU_256 || (unsigned int)mtu > IBV_MTU_4096)
		return 0;
	return 256u << (mtu - IBV_MTU_256);
}

void
qp_sem_timing(const struct qp_sem *qp, struct qp_sem_timing *t)
{
	const struct ibv_qp_attr *a = &qp->attr;

	t->ack_timeout_ns = qp_sem_ack_timeout_ns(a->timeout);
	t->retry_cnt = qp_sem_retry_budget(a->retry_cnt);
	t->rnr_retry = qp_sem_rnr_retry_infinite(a->rnr_retry) ? UINT_MAX :
							       a->rnr_retry;
	t->path_mtu_bytes = qp_sem_mtu_bytes(a->path_mtu);
	t->rnr_nak_code = a->min_rnr_timer;
}
