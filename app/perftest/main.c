/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * roce-perftest: perftest-style bandwidth and latency tests over ibverbs.
 * Runs on real RDMA NICs, on Linux rxe, and on roce-dpdk through the verbs
 * shim. See doc/perftest.md.
 */
#include "perftest.h"

int main(int argc, char **argv)
{
	struct pt_params p;

	switch (pt_params_parse(&p, argc, argv, stdout, stderr)) {
	case PT_PARSE_OK:
		return pt_test_main(&p);
	case PT_PARSE_EXIT:
		return 0;
	default:
		return 1;
	}
}
