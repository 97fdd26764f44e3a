/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * atomic_lat: atomic latency (ib_atomic_lat): one FETCH_AND_ADD or
 * CMP_AND_SWAP at a time, post to completion. Verification as atomic_bw.
 */
#include "perftest.h"

static enum pt_step atomic_lat_run(struct pt_side *s)
{
	if (s->role == PT_ROLE_SERVER)
		return pt_target_step(s, pt_atomic_check);
	return pt_bw_requester_step(s, pt_atomic_prepare, pt_atomic_complete);
}

const struct pt_mode pt_mode_atomic_lat = {
	.name = "atomic_lat",
	.title = "Atomic",
	.verb = PT_ATOMIC,
	.kind = PT_LAT,
	.conns = PT_CONN_BIT(PT_RC),
	.setup = pt_atomic_setup,
	.run = atomic_lat_run,
	.report = pt_report_rtt,
};
