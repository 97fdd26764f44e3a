/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/cm IP layer: service IDs, the rdma_cm IP private-data header (IPv4
 * and IPv6, version checks), the per-message private-data room, listen
 * matching by address.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "cm.h"

static struct cm_ip_addr
v4(uint8_t a, uint8_t b, uint8_t c, uint8_t d, uint16_t port)
{
	struct cm_ip_addr x = {.family = 4, .port = port};

	x.addr[0] = a;
	x.addr[1] = b;
	x.addr[2] = c;
	x.addr[3] = d;
	return x;
}

static struct cm_ip_addr
v6(uint16_t last, uint16_t port)
{
	/* 2001:db8::last */
	struct cm_ip_addr x = {.family = 6, .port = port, .addr = {0x20, 0x01, 0x0d, 0xb8}};

	x.addr[14] = (uint8_t)(last >> 8);
	x.addr[15] = (uint8_t)last;
	return x;
}

Test(cm_ip, service_ids)
{
	enum cm_port_space ps;
	uint16_t port;

	cr_assert_eq(cm_ip_service_id(CM_PS_TCP, 0x48af), UINT64_C(0x00000000010648af));
	cr_assert_eq(cm_ip_service_id(CM_PS_UDP, 7174), UINT64_C(0x0000000001111c06));
	cr_assert_eq(cm_ip_service_id(CM_PS_IB, 1), UINT64_C(0x00000000013f0001));
	cr_assert(cm_ip_service_id_parse(UINT64_C(0x0000000001111c06), &ps, &port));
	cr_assert_eq(ps, CM_PS_UDP);
	cr_assert_eq(port, 7174);
	cr_assert(cm_ip_service_id_parse(UINT64_C(0x00000000010600ff), NULL, NULL));
	cr_assert_not(cm_ip_service_id_parse(UINT64_C(0x0000000001070001), &ps, &port));
	cr_assert_not(cm_ip_service_id_parse(UINT64_C(0x1000000001060001), &ps, &port));
	cr_assert_eq(cm_ip_service_id(CM_PS_TCP, 1) & CM_IP_SERVICE_ID_MASK,
		     cm_ip_service_id(CM_PS_TCP, 65535) & CM_IP_SERVICE_ID_MASK);
}

Test(cm_ip, ipv4_header_layout)
{
	struct cm_ip_addr s = v4(198, 18, 0, 2, 0x9ed7), d = v4(198, 18, 0, 1, 0x48af);
	uint8_t h[CM_IP_HDR_SIZE];
	static const uint8_t want[CM_IP_HDR_SIZE] = {
		0x00, 0x40, 0x9e, 0xd7,
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 198, 18, 0, 2,
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 198, 18, 0, 1,
	};
	struct cm_ip_hdr p;

	cr_assert_eq(cm_ip_hdr_build(&s, &d, h), CM_IP_HDR_SIZE);
	cr_assert_arr_eq(h, want, sizeof(want));
	cr_assert_eq(cm_ip_hdr_parse(h, sizeof(h), &p), 0);
	cr_assert_eq(p.cma_version, 0);
	cr_assert_eq(p.ip_version, 4);
	cr_assert_eq(p.src_port, 0x9ed7);
	cr_assert_arr_eq(p.src, s.addr, 4);
	cr_assert_arr_eq(p.dst, d.addr, 4);
}

Test(cm_ip, ipv6_header_round_trip)
{
	struct cm_ip_addr s = v6(2, 4000), d = v6(1, 5000);
	uint8_t h[CM_IP_HDR_SIZE];
	struct cm_ip_hdr p;

	cr_assert_eq(cm_ip_hdr_build(&s, &d, h), CM_IP_HDR_SIZE);
	cr_assert_eq(h[1], 0x60);
	cr_assert_eq(cm_ip_hdr_parse(h, sizeof(h), &p), 0);
	cr_assert_eq(p.ip_version, 6);
	cr_assert_eq(p.src_port, 4000);
	cr_assert_arr_eq(p.src, s.addr, 16);
	cr_assert_arr_eq(p.dst, d.addr, 16);
}

Test(cm_ip, header_errors)
{
	struct cm_ip_addr s = v4(198, 18, 0, 2, 1), d6 = v6(1, 2), bad = s;
	uint8_t h[CM_IP_HDR_SIZE];
	struct cm_ip_hdr p;

	cr_assert_eq(cm_ip_hdr_build(&s, &d6, h), -EINVAL);
	bad.family = 5;
	cr_assert_eq(cm_ip_hdr_build(&bad, &bad, h), -EINVAL);
	cr_assert_eq(cm_ip_hdr_build(&s, &s, h), CM_IP_HDR_SIZE);
	for (size_t len = 0; len < CM_IP_HDR_SIZE; len++)
		cr_assert_eq(cm_ip_hdr_parse(h, len, &p), -EINVAL);
	h[0] = 1;
	cr_assert_eq(cm_ip_hdr_parse(h, sizeof(h), &p), -EPROTONOSUPPORT);
	h[0] = 0;
	for (unsigned int v = 0; v < 16; v++) {
		h[1] = (uint8_t)(v << 4);
		cr_assert_eq(cm_ip_hdr_parse(h, sizeof(h), &p), v == 4 || v == 6 ? 0 : -EPROTONOSUPPORT);
	}
}

Test(cm_ip, private_data_room)
{
	cr_assert_eq(cm_ip_private_data_max(CM_ATTR_REQ, CM_PS_TCP), 56);
	cr_assert_eq(cm_ip_private_data_max(CM_ATTR_REQ, CM_PS_IB), 92);
	cr_assert_eq(cm_ip_private_data_max(CM_ATTR_SIDR_REQ, CM_PS_UDP), 180);
	cr_assert_eq(cm_ip_private_data_max(CM_ATTR_SIDR_REQ, CM_PS_IB), 216);
	cr_assert_eq(cm_ip_private_data_max(CM_ATTR_REP, CM_PS_TCP), 196);
	cr_assert_eq(cm_ip_private_data_max(CM_ATTR_REJ, CM_PS_TCP), 148);
	cr_assert_eq(cm_ip_private_data_max(CM_ATTR_MRA, CM_PS_TCP), 222);
	cr_assert_eq(cm_ip_private_data_max(CM_ATTR_RTU, CM_PS_TCP), 224);
	cr_assert_eq(cm_ip_private_data_max(CM_ATTR_DREQ, CM_PS_TCP), 220);
	cr_assert_eq(cm_ip_private_data_max(CM_ATTR_DREP, CM_PS_TCP), 224);
	cr_assert_eq(cm_ip_private_data_max(CM_ATTR_SIDR_REP, CM_PS_UDP), 136);
	cr_assert_eq(cm_ip_private_data_max(CM_ATTR_LAP, CM_PS_TCP), -EINVAL);
}

static struct cm_ip_hdr
hdr_to(const struct cm_ip_addr *dst)
{
	struct cm_ip_addr src = dst->family == 4 ? v4(198, 18, 0, 9, 1) : v6(9, 1);
	uint8_t h[CM_IP_HDR_SIZE];
	struct cm_ip_hdr p;

	cr_assert_eq(cm_ip_hdr_build(&src, dst, h), CM_IP_HDR_SIZE);
	cr_assert_eq(cm_ip_hdr_parse(h, sizeof(h), &p), 0);
	return p;
}

Test(cm_ip, listen_match)
{
	struct cm_ip_addr a1 = v4(198, 18, 0, 1, 0), a2 = v4(198, 18, 0, 2, 0);
	struct cm_ip_addr any4 = {.family = 4}, any6 = {.family = 6};
	struct cm_ip_addr b6 = v6(1, 0), mapped = {.family = 6};
	struct cm_ip_hdr to1 = hdr_to(&a1), to6 = hdr_to(&b6);

	cr_assert(cm_ip_listen_match(&a1, false, &to1));
	cr_assert_not(cm_ip_listen_match(&a2, false, &to1));
	cr_assert(cm_ip_listen_match(&any4, false, &to1));
	cr_assert_not(cm_ip_listen_match(&any4, false, &to6));
	cr_assert(cm_ip_listen_match(&any6, false, &to1), ":: takes IPv4 too");
	cr_assert_not(cm_ip_listen_match(&any6, true, &to1), "unless AFONLY");
	cr_assert(cm_ip_listen_match(&any6, true, &to6));
	cr_assert(cm_ip_listen_match(&b6, false, &to6));
	cr_assert_not(cm_ip_listen_match(&a1, false, &to6));
	cm_ip_gid_from_v4(a1.addr, mapped.addr);
	cr_assert(cm_ip_listen_match(&mapped, false, &to1), "::ffff:198.18.0.1");
	cr_assert_not(cm_ip_listen_match(&mapped, true, &to1));
	cr_assert_not(cm_ip_listen_match(NULL, false, &to1));
}

Test(cm_ip, v4_mapped_gid)
{
	uint8_t gid[16];
	static const uint8_t want[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 18, 0, 1};

	cm_ip_gid_from_v4((const uint8_t[]){198, 18, 0, 1}, gid);
	cr_assert_arr_eq(gid, want, 16);
}
