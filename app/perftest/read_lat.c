/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * read_lat: RDMA READ latency (ib_read_lat): one READ at a time, the time
 * from post to completion is one round trip. READ verification as read_bw.
 */
#include "perftest.h"

static enum pt_step read_lat_run(struct pt_side *s)
{
	if (s->role == PT_ROLE_SERVER)
		return pt_target_step(s, NULL);
	return pt_bw_requester_step(s, pt_read_prepare, pt_read_complete);
}

const struct pt_mode pt_mode_read_lat = {
	.name = "read_lat",
	.title = "RDMA_Read",
	.verb = PT_READ,
	.kind = PT_LAT,
	.conns = PT_CONN_BIT(PT_RC),
	.setup = pt_read_setup,
	.run = read_lat_run,
	.report = pt_report_rtt,
};
