/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The rdmacm shim's API in-process (linked against this tree's
 * librdmacm.so.1 and libibverbs.so.1, never the system's):
 *  - without a daemon: every entry point fails cleanly with librdmacm's
 *    errno (ENODEV: no RDMA device), nothing crashes;
 *  - bad arguments: EINVAL (ENOTSUP for unknown multicast join bits and
 *    rsocket types librdmacm does not serve; EBADF for a descriptor
 *    that is not an rsocket);
 *  - rdma_event_str for every event;
 *  - rdma_getaddrinfo against shim-server (lib/ctl, no DPDK): passive,
 *    active, hints, AF_IB conversion, getaddrinfo failures.
 *
 * Each test runs in its own process (Criterion), so the library's
 * process-wide state (devices, the command connection) starts fresh.
 *
 * Environment (set by meson): SHIM_SERVER (the test server).
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/ib.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <rdma/rsocket.h>

#include "rdmacm_test.h"

/* ---- without a daemon ---- */

TestSuite(nodaemon, .init = rt_setup_nodaemon, .fini = rt_teardown, .timeout = 30);

Test(nodaemon, event_channel_enodev)
{
	errno = 0;
	cr_assert_null(rdma_create_event_channel());
	cr_assert_eq(errno, ENODEV, "errno %d", errno);
}

Test(nodaemon, create_id_enodev)
{
	struct rdma_cm_id *id = NULL;

	errno = 0;
	cr_assert_eq(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP), -1);
	cr_assert_eq(errno, ENODEV, "errno %d", errno);
	cr_assert_null(id);
}

Test(nodaemon, getaddrinfo_enodev)
{
	struct rdma_addrinfo hints = { .ai_flags = RAI_PASSIVE, .ai_port_space = RDMA_PS_TCP };
	struct rdma_addrinfo *res = NULL;

	errno = 0;
	cr_assert_eq(rdma_getaddrinfo(NULL, "7471", &hints, &res), -1);
	cr_assert_eq(errno, ENODEV);
	cr_assert_null(res);
}

Test(nodaemon, get_devices_empty)
{
	int n = 42;

	cr_assert_null(rdma_get_devices(&n));
	cr_assert_eq(n, 0);
	rdma_free_devices(NULL);
}

Test(nodaemon, create_ep_enodev)
{
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = htons(7471) };
	struct rdma_addrinfo rai = {
		.ai_port_space = RDMA_PS_TCP,
		.ai_qp_type = IBV_QPT_RC,
		.ai_dst_addr = (struct sockaddr *)&dst,
		.ai_dst_len = sizeof(dst),
	};
	struct rdma_cm_id *id = NULL;

	inet_pton(AF_INET, "198.18.0.2", &dst.sin_addr);
	errno = 0;
	cr_assert_eq(rdma_create_ep(&id, &rai, NULL, NULL), -1);
	cr_assert_eq(errno, ENODEV);
	cr_assert_null(id);
}

/* ---- bad arguments (no daemon needed: refused before any request) ---- */

TestSuite(args, .init = rt_setup_nodaemon, .fini = rt_teardown, .timeout = 30);

Test(args, create_id_bad_port_space)
{
	struct rdma_cm_id *id = NULL;

	errno = 0;
	cr_assert_eq(rdma_create_id(NULL, &id, NULL, (enum rdma_port_space)0x1234), -1);
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(rdma_create_id(NULL, NULL, NULL, RDMA_PS_TCP), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_null(id);
}

#define EXPECT_EINVAL(call)                                                          \
	do {                                                                         \
		errno = 0;                                                           \
		cr_expect_eq((call), -1, "%s", #call);                               \
		cr_expect_eq(errno, EINVAL, "%s: errno %d", #call, errno);          \
	} while (0)

Test(args, null_id_calls)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct rdma_cm_event *ev = NULL;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	int mask, v = 1;

	EXPECT_EINVAL(rdma_destroy_id(NULL));
	EXPECT_EINVAL(rdma_bind_addr(NULL, (struct sockaddr *)&sin));
	EXPECT_EINVAL(rdma_resolve_addr(NULL, NULL, (struct sockaddr *)&sin, 100));
	EXPECT_EINVAL(rdma_resolve_route(NULL, 100));
	EXPECT_EINVAL(rdma_listen(NULL, 1));
	EXPECT_EINVAL(rdma_connect(NULL, NULL));
	EXPECT_EINVAL(rdma_accept(NULL, NULL));
	EXPECT_EINVAL(rdma_reject(NULL, NULL, 0));
	EXPECT_EINVAL(rdma_reject_ece(NULL, NULL, 0));
	EXPECT_EINVAL(rdma_disconnect(NULL));
	EXPECT_EINVAL(rdma_establish(NULL));
	EXPECT_EINVAL(rdma_notify(NULL, IBV_EVENT_COMM_EST));
	EXPECT_EINVAL(rdma_migrate_id(NULL, NULL));
	EXPECT_EINVAL(rdma_set_option(NULL, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &v, sizeof(v)));
	EXPECT_EINVAL(rdma_init_qp_attr(NULL, &qa, &mask));
	memset(&qia, 0, sizeof(qia));
	EXPECT_EINVAL(rdma_create_qp(NULL, NULL, &qia));
	EXPECT_EINVAL(rdma_create_qp_ex(NULL, NULL));
	EXPECT_EINVAL(rdma_create_srq(NULL, NULL, NULL));
	EXPECT_EINVAL(rdma_get_request(NULL, NULL));
	EXPECT_EINVAL(rdma_create_ep(NULL, NULL, NULL, NULL));
	EXPECT_EINVAL(rdma_ack_cm_event(NULL));
	EXPECT_EINVAL(rdma_get_cm_event(NULL, &ev));
	EXPECT_EINVAL(rdma_set_local_ece(NULL, NULL));
	EXPECT_EINVAL(rdma_get_remote_ece(NULL, NULL));
	/* void calls tolerate NULL */
	rdma_destroy_qp(NULL);
	rdma_destroy_srq(NULL);
	rdma_destroy_ep(NULL);
	rdma_destroy_event_channel(NULL);
	rdma_freeaddrinfo(NULL);
}

Test(args, getaddrinfo_nothing_to_resolve)
{
	struct rdma_addrinfo *res = NULL;

	EXPECT_EINVAL(rdma_getaddrinfo(NULL, NULL, NULL, &res));
	cr_assert_null(res);
}

/* Multicast calls without an id or an address: EINVAL (librdmacm's checks). */
Test(args, multicast_bad_args)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct rdma_cm_join_mc_attr_ex attr = { .comp_mask = RDMA_CM_JOIN_MC_ATTR_RESERVED };

	errno = 0;
	cr_expect_eq(rdma_join_multicast(NULL, (struct sockaddr *)&sin, NULL), -1);
	cr_expect_eq(errno, EINVAL);
	errno = 0;
	cr_expect_eq(rdma_join_multicast_ex(NULL, NULL, NULL), -1);
	cr_expect_eq(errno, EINVAL);
	errno = 0;
	cr_expect_eq(rdma_leave_multicast(NULL, (struct sockaddr *)&sin), -1);
	cr_expect_eq(errno, EINVAL);
	errno = 0;
	cr_expect_eq(rdma_join_multicast_ex(NULL, &attr, NULL), -1);
	cr_expect_eq(errno, ENOTSUP, "unknown comp_mask bits");
}

/*
 * rsockets without a daemon: no device (ENODEV, as rdma_create_id; a
 * datagram socket too, at once rather than at its first send); what
 * librdmacm does not serve (AF_IB, other types and protocols): ENOTSUP; a descriptor that is
 * not an rsocket: EBADF, as librdmacm's index lookup.
 */
Test(args, rsockets_without_a_daemon)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	char buf[4];
	int fd = open("/dev/null", O_RDONLY);

#define EXPECT_ERRNO(call, e)                                                         \
	do {                                                                          \
		errno = 0;                                                            \
		cr_expect_eq((long)(call), -1L, "%s", #call);                         \
		cr_expect_eq(errno, e, "%s: errno %d", #call, errno);                \
	} while (0)
	cr_assert_geq(fd, 0);
	EXPECT_ERRNO(rsocket(AF_INET, SOCK_STREAM, 0), ENODEV);
	EXPECT_ERRNO(rsocket(AF_INET, SOCK_DGRAM, 0), ENODEV);
	EXPECT_ERRNO(rsocket(AF_INET6, SOCK_DGRAM, IPPROTO_UDP), ENODEV);
	EXPECT_ERRNO(rsocket(AF_INET, SOCK_DGRAM, IPPROTO_TCP), ENOTSUP);
	EXPECT_ERRNO(rsocket(AF_INET, SOCK_RAW, 0), ENOTSUP);
	EXPECT_ERRNO(rsocket(AF_IB, SOCK_STREAM, 0), ENOTSUP);
	EXPECT_ERRNO(rsocket(AF_INET, SOCK_STREAM, IPPROTO_UDP), ENOTSUP);
	EXPECT_ERRNO(rbind(fd, (struct sockaddr *)&sin, sizeof(sin)), EBADF);
	EXPECT_ERRNO(rlisten(fd, 1), EBADF);
	EXPECT_ERRNO(raccept(fd, NULL, NULL), EBADF);
	EXPECT_ERRNO(rconnect(fd, (struct sockaddr *)&sin, sizeof(sin)), EBADF);
	EXPECT_ERRNO(rshutdown(fd, SHUT_RDWR), EBADF);
	EXPECT_ERRNO(rrecv(fd, buf, sizeof(buf), 0), EBADF);
	EXPECT_ERRNO(rsend(fd, buf, sizeof(buf), 0), EBADF);
	EXPECT_ERRNO(rread(fd, buf, sizeof(buf)), EBADF);
	EXPECT_ERRNO(rwrite(fd, buf, sizeof(buf)), EBADF);
	EXPECT_ERRNO(rsetsockopt(fd, SOL_RDMA, RDMA_SQSIZE, buf, 4), EBADF);
	EXPECT_ERRNO(rfcntl(fd, F_GETFL), EBADF);
	EXPECT_ERRNO(riomap(fd, buf, sizeof(buf), 0, 0, 0), EBADF);
	EXPECT_ERRNO(riounmap(fd, buf, sizeof(buf)), EBADF);
	EXPECT_ERRNO((long)riowrite(fd, buf, sizeof(buf), 0, 0), EBADF);
	EXPECT_ERRNO(rclose(fd), EBADF);
	EXPECT_ERRNO(rclose(-1), EBADF);
	EXPECT_ERRNO(rclose(1 << 30), EBADF);
#undef EXPECT_ERRNO
	close(fd);
}

/* rpoll/rselect on ordinary descriptors behave as poll/select (librdmacm's
 * behaviour for a descriptor that is not an rsocket). */
Test(args, rpoll_ordinary_fd)
{
	int p[2];
	struct pollfd pf;

	cr_assert_eq(pipe(p), 0);
	pf = (struct pollfd){ .fd = p[0], .events = POLLIN };
	cr_assert_eq(rpoll(&pf, 1, 0), 0);
	cr_assert_eq(write(p[1], "x", 1), 1);
	cr_assert_eq(rpoll(&pf, 1, 1000), 1);
	cr_assert(pf.revents & POLLIN);
	close(p[0]);
	close(p[1]);
}

Test(args, event_str_every_event)
{
	static const char *const names[] = {
		"RDMA_CM_EVENT_ADDR_RESOLVED",   "RDMA_CM_EVENT_ADDR_ERROR",
		"RDMA_CM_EVENT_ROUTE_RESOLVED",  "RDMA_CM_EVENT_ROUTE_ERROR",
		"RDMA_CM_EVENT_CONNECT_REQUEST", "RDMA_CM_EVENT_CONNECT_RESPONSE",
		"RDMA_CM_EVENT_CONNECT_ERROR",   "RDMA_CM_EVENT_UNREACHABLE",
		"RDMA_CM_EVENT_REJECTED",        "RDMA_CM_EVENT_ESTABLISHED",
		"RDMA_CM_EVENT_DISCONNECTED",    "RDMA_CM_EVENT_DEVICE_REMOVAL",
		"RDMA_CM_EVENT_MULTICAST_JOIN",  "RDMA_CM_EVENT_MULTICAST_ERROR",
		"RDMA_CM_EVENT_ADDR_CHANGE",     "RDMA_CM_EVENT_TIMEWAIT_EXIT",
	};

	cr_assert_eq(RDMA_CM_EVENT_TIMEWAIT_EXIT, 15);
	for (int i = 0; i < 16; i++)
		cr_expect_str_eq(rdma_event_str((enum rdma_cm_event_type)i), names[i], "event %d", i);
	cr_expect_str_eq(rdma_event_str((enum rdma_cm_event_type)16), "UNKNOWN EVENT");
	cr_expect_str_eq(rdma_event_str((enum rdma_cm_event_type)-1), "UNKNOWN EVENT");
	cr_expect_str_eq(rdma_event_str((enum rdma_cm_event_type)1000), "UNKNOWN EVENT");
}

/* ---- rdma_getaddrinfo (needs a device: shim-server) ---- */

TestSuite(gai, .init = rt_setup_server, .fini = rt_teardown, .timeout = 30);

Test(gai, passive_service_only)
{
	struct rdma_addrinfo hints = {
		.ai_flags = RAI_PASSIVE, .ai_family = AF_INET, .ai_port_space = RDMA_PS_TCP,
	};
	struct rdma_addrinfo *res = NULL;
	struct sockaddr_in *sin;

	cr_assert_eq(rdma_getaddrinfo(NULL, "7471", &hints, &res), 0, "errno %d", errno);
	cr_assert_not_null(res);
	cr_expect_eq(res->ai_flags, RAI_PASSIVE);
	cr_expect_eq(res->ai_family, AF_INET);
	cr_expect_eq(res->ai_qp_type, IBV_QPT_RC);
	cr_expect_eq(res->ai_port_space, RDMA_PS_TCP);
	cr_assert_eq(res->ai_src_len, sizeof(struct sockaddr_in));
	sin = (struct sockaddr_in *)res->ai_src_addr;
	cr_expect_eq(sin->sin_port, htons(7471));
	cr_expect_eq(sin->sin_addr.s_addr, htonl(INADDR_ANY));
	cr_expect_eq(res->ai_dst_len, 0);
	cr_expect_null(res->ai_dst_addr);
	cr_expect_null(res->ai_next);
	rdma_freeaddrinfo(res);
}

Test(gai, active_numeric)
{
	struct rdma_addrinfo hints = { .ai_flags = RAI_NUMERICHOST, .ai_port_space = RDMA_PS_TCP };
	struct rdma_addrinfo *res = NULL;
	struct sockaddr_in *sin;

	cr_assert_eq(rdma_getaddrinfo("198.18.0.2", "7471", &hints, &res), 0);
	cr_expect_eq(res->ai_flags, 0);
	cr_expect_eq(res->ai_family, AF_INET);
	cr_expect_eq(res->ai_qp_type, IBV_QPT_RC);
	cr_assert_eq(res->ai_dst_len, sizeof(struct sockaddr_in));
	sin = (struct sockaddr_in *)res->ai_dst_addr;
	cr_expect_eq(sin->sin_port, htons(7471));
	cr_expect_eq(sin->sin_addr.s_addr, inet_addr("198.18.0.2"));
	cr_expect_eq(res->ai_src_len, 0);
	rdma_freeaddrinfo(res);
}

Test(gai, active_ipv6_udp)
{
	struct rdma_addrinfo hints = { .ai_qp_type = IBV_QPT_UD, .ai_port_space = RDMA_PS_UDP };
	struct rdma_addrinfo *res = NULL;
	struct sockaddr_in6 *s6;
	struct in6_addr want;

	cr_assert_eq(rdma_getaddrinfo("2001:db8::2", "7174", &hints, &res), 0);
	cr_expect_eq(res->ai_family, AF_INET6);
	cr_expect_eq(res->ai_qp_type, IBV_QPT_UD);
	cr_expect_eq(res->ai_port_space, RDMA_PS_UDP);
	cr_assert_eq(res->ai_dst_len, sizeof(struct sockaddr_in6));
	s6 = (struct sockaddr_in6 *)res->ai_dst_addr;
	inet_pton(AF_INET6, "2001:db8::2", &want);
	cr_expect_eq(memcmp(&s6->sin6_addr, &want, sizeof(want)), 0);
	cr_expect_eq(s6->sin6_port, htons(7174));
	rdma_freeaddrinfo(res);
}

/* QP type and port space come from the socket type and protocol without hints for them. */
Test(gai, qp_type_from_socket_type)
{
	struct rdma_addrinfo *res = NULL;

	cr_assert_eq(rdma_getaddrinfo("198.18.0.2", "7471", NULL, &res), 0);
	/* getaddrinfo(3) without hints answers SOCK_STREAM/TCP first. */
	cr_expect_eq(res->ai_qp_type, IBV_QPT_RC);
	cr_expect_eq(res->ai_port_space, RDMA_PS_TCP);
	rdma_freeaddrinfo(res);
}

Test(gai, source_from_hints)
{
	struct sockaddr_in src = { .sin_family = AF_INET };
	struct rdma_addrinfo hints = {
		.ai_port_space = RDMA_PS_TCP,
		.ai_src_addr = (struct sockaddr *)&src,
		.ai_src_len = sizeof(src),
	};
	struct rdma_addrinfo *res = NULL;

	inet_pton(AF_INET, "198.18.0.1", &src.sin_addr);
	cr_assert_eq(rdma_getaddrinfo("198.18.0.2", "7471", &hints, &res), 0);
	cr_assert_eq(res->ai_src_len, sizeof(src));
	cr_expect_eq(memcmp(res->ai_src_addr, &src, sizeof(src)), 0);
	cr_expect_neq((void *)res->ai_src_addr, (void *)&src, "a copy");
	rdma_freeaddrinfo(res);
}

Test(gai, hints_only_destination)
{
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = htons(9) };
	struct rdma_addrinfo hints = {
		.ai_flags = RAI_NUMERICHOST,
		.ai_family = AF_INET,
		.ai_qp_type = IBV_QPT_RC,
		.ai_port_space = RDMA_PS_IB,
		.ai_dst_addr = (struct sockaddr *)&dst,
		.ai_dst_len = sizeof(dst),
	};
	struct rdma_addrinfo *res = NULL;

	cr_assert_eq(rdma_getaddrinfo(NULL, NULL, &hints, &res), 0);
	cr_expect_eq(res->ai_flags, RAI_NUMERICHOST);
	cr_expect_eq(res->ai_port_space, RDMA_PS_IB);
	cr_assert_eq(res->ai_dst_len, sizeof(dst));
	cr_expect_eq(memcmp(res->ai_dst_addr, &dst, sizeof(dst)), 0);
	rdma_freeaddrinfo(res);
}

Test(gai, af_ib_from_ipv6)
{
	struct rdma_addrinfo hints = {
		.ai_flags = RAI_FAMILY | RAI_NUMERICHOST,
		.ai_family = AF_IB,
		.ai_port_space = RDMA_PS_TCP,
	};
	struct rdma_addrinfo *res = NULL;
	struct sockaddr_ib *sib;
	struct in6_addr want;

	cr_assert_eq(rdma_getaddrinfo("2001:db8::7", "18515", &hints, &res), 0);
	cr_expect_eq(res->ai_family, AF_IB);
	cr_assert_eq(res->ai_dst_len, sizeof(struct sockaddr_ib));
	sib = (struct sockaddr_ib *)res->ai_dst_addr;
	cr_expect_eq(sib->sib_family, AF_IB);
	cr_expect_eq(sib->sib_pkey, htobe16(0xffff));
	inet_pton(AF_INET6, "2001:db8::7", &want);
	cr_expect_eq(memcmp(&sib->sib_addr, &want, 16), 0);
	cr_expect_eq(be64toh(sib->sib_sid), ((uint64_t)RDMA_PS_TCP << 16) + 18515);
	cr_expect_eq(be64toh(sib->sib_sid_mask), RDMA_IB_IP_PS_MASK | RDMA_IB_IP_PORT_MASK);
	rdma_freeaddrinfo(res);
}

Test(gai, numeric_host_refuses_a_name)
{
	struct rdma_addrinfo hints = { .ai_flags = RAI_NUMERICHOST, .ai_port_space = RDMA_PS_TCP };
	struct rdma_addrinfo *res = NULL;

	/* The getaddrinfo(3) code is returned, as librdmacm does. */
	cr_expect_eq(rdma_getaddrinfo("localhost", "7471", &hints, &res), EAI_NONAME);
	cr_expect_null(res);
}

Test(gai, bad_service)
{
	struct rdma_addrinfo hints = { .ai_flags = RAI_PASSIVE, .ai_port_space = RDMA_PS_TCP };
	struct rdma_addrinfo *res = NULL;

	cr_expect_neq(rdma_getaddrinfo(NULL, "no-such-service-xyz", &hints, &res), 0);
	cr_expect_null(res);
}

Test(gai, get_devices_lists_ours)
{
	struct ibv_context **list;
	int n = 0;

	list = rdma_get_devices(&n);
	cr_assert_not_null(list);
	cr_assert_eq(n, 1);
	cr_assert_not_null(list[0]);
	cr_expect_null(list[1]);
	cr_expect_str_eq(ibv_get_device_name(list[0]->device), "dpdk_roce0");
	rdma_free_devices(list);
	/* The contexts stay valid: a second call gives the same one. */
	list = rdma_get_devices(NULL);
	cr_assert_not_null(list);
	cr_expect_not_null(list[0]);
	rdma_free_devices(list);
}
