/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * QP1 (the GSI) on the wire: its constants and the receive check a worker
 * runs on a parsed frame for QP 1 (gsi_check()). Pure, any thread; the
 * control thread's side (MADs in and out, gsi.h) sits above the workers.
 */
#ifndef ROCE_DAEMON_GSI_WIRE_H
#define ROCE_DAEMON_GSI_WIRE_H

#include <stdint.h>

#include "roce.h"
#include "roce_opcode.h"

#define GSI_QPN 1u
#define GSI_QKEY 0x80010000u  /**< IBTA vol1 13.5.3: the well-known GSI Q_Key */
#define GSI_MAD_SIZE 256u     /**< a GMP is always 256 bytes */

/** What a worker makes of a RoCE frame for QP 1. */
enum gsi_verdict {
	GSI_OK,
	GSI_BAD_OPCODE,   /**< not UD SEND ONLY */
	GSI_BAD_QKEY,     /**< DETH Q_Key is not the GSI one */
	GSI_BAD_LENGTH,   /**< payload is not one 256-byte MAD */
};

/** Judge a parsed frame whose destination QP is 1 (any thread). */
static inline enum gsi_verdict
gsi_check(const struct roce_pkt *pkt)
{
	if (pkt->opcode != ROCE_OP_UD_SEND_ONLY)
		return GSI_BAD_OPCODE;
	if (pkt->deth.qkey != GSI_QKEY)
		return GSI_BAD_QKEY;
	if (pkt->payload_len != GSI_MAD_SIZE)
		return GSI_BAD_LENGTH;
	return GSI_OK;
}

#endif /* ROCE_DAEMON_GSI_WIRE_H */
