/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdmacm shim: rdma_getaddrinfo / rdma_freeaddrinfo.
 *
 * As librdmacm without the ib_acm service (which the kernel-less stack has
 * no use for): names and services go through getaddrinfo(3) with the hints
 * translated (RAI_PASSIVE -> AI_PASSIVE, RAI_NUMERICHOST -> AI_NUMERICHOST,
 * QP type -> socket type, port space -> protocol), the first answer is
 * turned back into one rdma_addrinfo (QP type and port space from the hints,
 * else from the socket type and protocol), the hints' source address is
 * copied when the answer has none, and RAI_FAMILY + AF_IB + RAI_NUMERICHOST
 * gives an AF_IB address built from the IPv6 one.
 *
 * Errors: -1 with errno EINVAL (nothing to resolve), ENODEV (no device, as
 * librdmacm's library init), ENOMEM; a getaddrinfo(3) failure is returned
 * as its EAI_* code, as librdmacm does (callers print gai_strerror()).
 */
#include <endian.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/ib.h>

#include "rcm.h"

static void rcm_to_ai(struct addrinfo *ai, const struct rdma_addrinfo *rai)
{
	memset(ai, 0, sizeof(*ai));
	if (rai->ai_flags & RAI_PASSIVE)
		ai->ai_flags = AI_PASSIVE;
	if (rai->ai_flags & RAI_NUMERICHOST)
		ai->ai_flags |= AI_NUMERICHOST;
	if (rai->ai_family != AF_IB)
		ai->ai_family = rai->ai_family;

	switch (rai->ai_qp_type) {
	case IBV_QPT_RC:
	case IBV_QPT_UC:
	case IBV_QPT_XRC_SEND:
	case IBV_QPT_XRC_RECV:
		ai->ai_socktype = SOCK_STREAM;
		break;
	case IBV_QPT_UD:
		ai->ai_socktype = SOCK_DGRAM;
		break;
	default:
		break;
	}

	switch (rai->ai_port_space) {
	case RDMA_PS_TCP:
		ai->ai_protocol = IPPROTO_TCP;
		break;
	case RDMA_PS_IPOIB:
	case RDMA_PS_UDP:
		ai->ai_protocol = IPPROTO_UDP;
		break;
	case RDMA_PS_IB:
		if (ai->ai_socktype == SOCK_STREAM)
			ai->ai_protocol = IPPROTO_TCP;
		else if (ai->ai_socktype == SOCK_DGRAM)
			ai->ai_protocol = IPPROTO_UDP;
		break;
	default:
		break;
	}
}

static int rcm_copy_addr(struct sockaddr **dst, socklen_t *dst_len, const struct sockaddr *src,
			 socklen_t len)
{
	*dst = malloc(len);
	if (*dst == NULL)
		return rcm_err(ENOMEM);
	memcpy(*dst, src, len);
	*dst_len = len;
	return 0;
}

/* An AF_IB address from an IPv6 one: GID = the address, service ID from ps+port. */
static int rcm_to_ib(int ps, struct sockaddr **dst, socklen_t *dst_len,
		     const struct sockaddr *src, socklen_t len)
{
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)src;
	struct sockaddr_ib *sib;
	uint16_t port;

	if (src->sa_family != AF_INET6 || len < sizeof(*s6))
		return rcm_err(EINVAL);
	sib = calloc(1, sizeof(*sib));
	if (sib == NULL)
		return rcm_err(ENOMEM);
	sib->sib_family = AF_IB;
	sib->sib_pkey = htobe16(0xffff);
	sib->sib_flowinfo = s6->sin6_flowinfo;
	memcpy(&sib->sib_addr, &s6->sin6_addr, sizeof(sib->sib_addr));
	port = be16toh(s6->sin6_port);
	sib->sib_sid = htobe64(((uint64_t)(uint32_t)ps << 16) + port);
	if (ps)
		sib->sib_sid_mask = htobe64(RDMA_IB_IP_PS_MASK);
	if (port)
		sib->sib_sid_mask |= htobe64(RDMA_IB_IP_PORT_MASK);
	sib->sib_scope_id = s6->sin6_scope_id;
	*dst = (struct sockaddr *)sib;
	*dst_len = sizeof(*sib);
	return 0;
}

static int rcm_from_ai(struct rdma_addrinfo *rai, const struct rdma_addrinfo *hints,
		       const struct addrinfo *ai)
{
	bool passive = ai->ai_flags & AI_PASSIVE;
	bool to_ib = (hints->ai_flags & RAI_FAMILY) && hints->ai_family == AF_IB &&
		     (hints->ai_flags & RAI_NUMERICHOST);
	struct sockaddr **addr = passive ? &rai->ai_src_addr : &rai->ai_dst_addr;
	socklen_t *len = passive ? &rai->ai_src_len : &rai->ai_dst_len;
	char **canon = passive ? &rai->ai_src_canonname : &rai->ai_dst_canonname;

	if (hints->ai_qp_type)
		rai->ai_qp_type = hints->ai_qp_type;
	else if (ai->ai_socktype == SOCK_STREAM)
		rai->ai_qp_type = IBV_QPT_RC;
	else if (ai->ai_socktype == SOCK_DGRAM)
		rai->ai_qp_type = IBV_QPT_UD;

	if (hints->ai_port_space)
		rai->ai_port_space = hints->ai_port_space;
	else if (ai->ai_protocol == IPPROTO_TCP)
		rai->ai_port_space = RDMA_PS_TCP;
	else if (ai->ai_protocol == IPPROTO_UDP)
		rai->ai_port_space = RDMA_PS_UDP;

	if (passive)
		rai->ai_flags = RAI_PASSIVE;
	if (ai->ai_canonname) {
		*canon = strdup(ai->ai_canonname);
		if (*canon == NULL)
			return rcm_err(ENOMEM);
	}
	if (to_ib) {
		rai->ai_family = AF_IB;
		return rcm_to_ib(rai->ai_port_space, addr, len, ai->ai_addr, ai->ai_addrlen);
	}
	rai->ai_family = ai->ai_family;
	return rcm_copy_addr(addr, len, ai->ai_addr, ai->ai_addrlen);
}

static int rcm_resolve(const char *node, const char *service, const struct rdma_addrinfo *hints,
		       struct rdma_addrinfo *rai)
{
	struct addrinfo ai_hints, *ai;
	int rc;

	if (hints) {
		rcm_to_ai(&ai_hints, hints);
		rc = getaddrinfo(node, service, &ai_hints, &ai);
	} else {
		rc = getaddrinfo(node, service, NULL, &ai);
	}
	if (rc)
		return rc;
	rc = rcm_from_ai(rai, hints ? hints : &(struct rdma_addrinfo){ 0 }, ai);
	freeaddrinfo(ai);
	return rc;
}

RCM_EXPORT int rdma_getaddrinfo(const char *node, const char *service,
				const struct rdma_addrinfo *hints, struct rdma_addrinfo **res)
{
	static const struct rdma_addrinfo nohints;
	struct rdma_addrinfo *rai;
	int rc = 0;

	if ((!service && !node && !hints) || res == NULL)
		return rcm_err(EINVAL);
	if (rcm_init())
		return -1;
	rai = calloc(1, sizeof(*rai));
	if (rai == NULL)
		return rcm_err(ENOMEM);

	if (node || service) {
		rc = rcm_resolve(node, service, hints, rai);
	} else {
		rai->ai_flags = hints->ai_flags;
		rai->ai_family = hints->ai_family;
		rai->ai_qp_type = hints->ai_qp_type;
		rai->ai_port_space = hints->ai_port_space;
		if (hints->ai_dst_len)
			rc = rcm_copy_addr(&rai->ai_dst_addr, &rai->ai_dst_len, hints->ai_dst_addr,
					   hints->ai_dst_len);
	}
	if (hints == NULL)
		hints = &nohints;
	if (rc == 0 && !rai->ai_src_len && hints->ai_src_len)
		rc = rcm_copy_addr(&rai->ai_src_addr, &rai->ai_src_len, hints->ai_src_addr,
				   hints->ai_src_len);
	if (rc) {
		rdma_freeaddrinfo(rai);
		return rc;
	}
	*res = rai;
	return 0;
}

RCM_EXPORT void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	while (res) {
		struct rdma_addrinfo *next = res->ai_next;

		free(res->ai_connect);
		free(res->ai_route);
		free(res->ai_src_canonname);
		free(res->ai_dst_canonname);
		free(res->ai_src_addr);
		free(res->ai_dst_addr);
		free(res);
		res = next;
	}
}
