/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Datagram rsockets: the wire's pure half (no verbs, no sockets): the ds
 * header librdmacm's datagram rsockets put before the data of every UD
 * message (we learnt the layout from its rsocket.c and wrote ours):
 *
 *   version(1: 4 or 6) length(1: 8 or 24) port(2, network order)
 *   then IPv4(4), or flowinfo(4) and IPv6(16)
 *
 * A header that does not parse is counted (rsk_bad_count) and its message
 * dropped, as a UDP stack drops a bad datagram.
 */
#include <netinet/in.h>
#include <string.h>

#include "rsocket.h"

static enum rsk_bad rsk_ds_refuse(enum rsk_bad why)
{
	__atomic_fetch_add(&rsk_bad_count[why], 1, __ATOMIC_RELAXED);
	return why;
}

uint32_t rsk_ds_hdr_build(uint8_t *out, const struct sockaddr *from)
{
	if (from->sa_family == AF_INET) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)from;

		out[0] = 4;
		out[1] = RSK_DS_HDR4;
		memcpy(&out[2], &s->sin_port, 2);
		memcpy(&out[4], &s->sin_addr, 4);
		return RSK_DS_HDR4;
	}
	if (from->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)from;

		out[0] = 6;
		out[1] = RSK_DS_HDR6;
		memcpy(&out[2], &s->sin6_port, 2);
		memcpy(&out[4], &s->sin6_flowinfo, 4);
		memcpy(&out[8], &s->sin6_addr, 16);
		return RSK_DS_HDR6;
	}
	return 0;
}

enum rsk_bad rsk_ds_hdr_parse(const uint8_t *msg, size_t len, struct sockaddr_storage *from,
			      uint32_t *hdr_len)
{
	if (len < RSK_DS_HDR4 || !((msg[0] == 4 && msg[1] == RSK_DS_HDR4) ||
				   (msg[0] == 6 && msg[1] == RSK_DS_HDR6 && len >= RSK_DS_HDR6)))
		return rsk_ds_refuse(RSK_BAD_ds_hdr);
	*hdr_len = msg[1];
	if (from == NULL)
		return RSK_OK;
	memset(from, 0, sizeof(*from));
	if (msg[0] == 4) {
		struct sockaddr_in *s = (struct sockaddr_in *)from;

		s->sin_family = AF_INET;
		memcpy(&s->sin_port, &msg[2], 2);
		memcpy(&s->sin_addr, &msg[4], 4);
	} else {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)from;

		s->sin6_family = AF_INET6;
		memcpy(&s->sin6_port, &msg[2], 2);
		memcpy(&s->sin6_flowinfo, &msg[4], 4);
		memcpy(&s->sin6_addr, &msg[8], 16);
	}
	return RSK_OK;
}
