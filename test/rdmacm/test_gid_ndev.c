/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Issue 15: the net device of a GID. The daemon finds the kernel interface
 * that holds a GID's address (app/roce-daemon/gid_ndev.c, against this
 * process's real interfaces) and lib/ctl reports it as QUERY_GID's
 * ndev_ifindex, which the verbs shim returns from ibv_query_gid_ex() and
 * ibv_query_gid_table(): rdma-core's pyverbs rdma_cm tests look for it.
 */
#include <criterion/criterion.h>
#include <net/if.h>

#include "../ctl/ctl_test.h"
#include "gid_ndev.h"

static void gid_v4(uint8_t gid[16], const char *ip)
{
	memset(gid, 0, 16);
	gid[10] = 0xff;
	gid[11] = 0xff;
	cr_assert_eq(inet_pton(AF_INET, ip, gid + 12), 1);
}

Test(gid_ndev, an_address_the_kernel_holds_names_its_interface)
{
	uint8_t gid[16];
	unsigned int lo = if_nametoindex("lo");

	cr_assert_neq(lo, 0, "no loopback interface in this namespace");
	gid_v4(gid, "127.0.0.1");
	cr_assert_eq(gid_ndev_ifindex(gid), lo, "IPv4-mapped GID ::ffff:127.0.0.1 is lo's address");
	cr_assert_eq(inet_pton(AF_INET6, "::1", gid), 1);
	/* a namespace may have IPv6 disabled: then nobody holds ::1 */
	if (gid_ndev_ifindex(gid) != 0)
		cr_assert_eq(gid_ndev_ifindex(gid), lo, "IPv6 GID ::1 is lo's");
}

Test(gid_ndev, an_address_nobody_holds_has_none)
{
	uint8_t gid[16];

	gid_v4(gid, "198.19.255.254");
	cr_assert_eq(gid_ndev_ifindex(gid), 0);
	cr_assert_eq(inet_pton(AF_INET6, "2001:db8:ffff::fffe", gid), 1);
	cr_assert_eq(gid_ndev_ifindex(gid), 0);
	/* ::127.0.0.1 (IPv4-compatible, not mapped) is not lo's IPv4 address */
	memset(gid, 0, 16);
	gid[12] = 127;
	gid[15] = 1;
	cr_assert_eq(gid_ndev_ifindex(gid), 0);
}

Test(gid_ndev, query_gid_reports_ndev_ifindex)
{
	struct ctl_config cfg = base_cfg();
	struct client a;
	struct ipc_msg m, r;

	cfg.dev[0].port[0].gid_ndev[1] = 7;
	ctl = ctl_create(&cfg);
	cr_assert_not_null(ctl);
	client_open(&a, true);
	req(&m, IPC_OP_QUERY_GID);
	m.u.req_QUERY_GID.port = 1;
	m.u.req_QUERY_GID.index = 1;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), 0);
	cr_assert_eq(r.u.rsp_QUERY_GID.ndev_ifindex, 7, "the GID's net device");
	m.u.req_QUERY_GID.index = 0;
	cr_assert_eq(call(&a, &m, NULL, 0, &r, NULL), 0);
	cr_assert_eq(r.u.rsp_QUERY_GID.ndev_ifindex, 0, "a GID no interface holds has none");
	client_close(&a);
	ctl_destroy(ctl);
	ctl = NULL;
}
