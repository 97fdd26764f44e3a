/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receive side scaling (flow.h "RSS"): the Toeplitz hash of the fields an
 * RSS QP names, and the receive queue its indirection table picks.
 */
#include <errno.h>
#include <string.h>

#include "flow.h"

uint32_t
flow_toeplitz(const uint8_t *key, size_t key_len, const uint8_t *in, size_t len)
{
	uint64_t win = 0; /* the key from the current input byte's first bit on, 64 bits */
	size_t next = 8;  /* the next key byte to shift into win */
	uint32_t h = 0;

	for (size_t i = 0; i < 8; i++)
		win = win << 8 | (i < key_len ? key[i] : 0);
	for (size_t i = 0; i < len; i++) {
		uint8_t b = in[i];

		/* input bit j (MSB first) adds the 32 key bits starting at that bit */
		for (unsigned int j = 0; b != 0; j++, b = (uint8_t)(b << 1))
			if (b & 0x80u)
				h ^= (uint32_t)(win >> (32 - j));
		win = win << 8 | (next < key_len ? key[next] : 0);
		next++;
	}
	return h;
}

size_t
flow_rss_input(uint64_t fields, const struct flow_key *k, uint8_t out[FLOW_RSS_INPUT_MAX])
{
	size_t n = 0;

	/* the order of the Microsoft RSS specification: source, destination, per layer */
	if (k->layers & FLOW_L_IPV4) {
		if (fields & FLOW_RSS_SRC_IPV4) {
			memcpy(out + n, &k->f.ip4_src, 4);
			n += 4;
		}
		if (fields & FLOW_RSS_DST_IPV4) {
			memcpy(out + n, &k->f.ip4_dst, 4);
			n += 4;
		}
	} else if (k->layers & FLOW_L_IPV6) {
		if (fields & FLOW_RSS_SRC_IPV6) {
			memcpy(out + n, k->f.ip6_src, 16);
			n += 16;
		}
		if (fields & FLOW_RSS_DST_IPV6) {
			memcpy(out + n, k->f.ip6_dst, 16);
			n += 16;
		}
	}
	if (((k->layers & FLOW_L_TCP) && (fields & FLOW_RSS_SRC_PORT_TCP)) ||
	    ((k->layers & FLOW_L_UDP) && (fields & FLOW_RSS_SRC_PORT_UDP))) {
		memcpy(out + n, &k->f.l4_src, 2);
		n += 2;
	}
	if (((k->layers & FLOW_L_TCP) && (fields & FLOW_RSS_DST_PORT_TCP)) ||
	    ((k->layers & FLOW_L_UDP) && (fields & FLOW_RSS_DST_PORT_UDP))) {
		memcpy(out + n, &k->f.l4_dst, 2);
		n += 2;
	}
	return n;
}

int
flow_rss_check(const struct flow_rss *r)
{
	const uint64_t ip4 = FLOW_RSS_SRC_IPV4 | FLOW_RSS_DST_IPV4;
	const uint64_t ip6 = FLOW_RSS_SRC_IPV6 | FLOW_RSS_DST_IPV6;
	const uint64_t tcp = FLOW_RSS_SRC_PORT_TCP | FLOW_RSS_DST_PORT_TCP;
	const uint64_t udp = FLOW_RSS_SRC_PORT_UDP | FLOW_RSS_DST_PORT_UDP;

	if (r->fields & ~(uint64_t)FLOW_RSS_FIELDS_ALL)
		return -EOPNOTSUPP;
	/* as mlx5: one L3 and one L4 protocol per QP (a TIR hashes one of each) */
	if (((r->fields & ip4) && (r->fields & ip6)) || ((r->fields & tcp) && (r->fields & udp)))
		return -EINVAL;
	if (r->key_len != FLOW_RSS_KEY_LEN || r->log_size > FLOW_RSS_MAX_LOG)
		return -EINVAL;
	return 0;
}

uint32_t
flow_rss_pick(const struct flow_rss *r, const struct flow_key *k)
{
	uint8_t in[FLOW_RSS_INPUT_MAX];
	size_t n = flow_rss_input(r->fields, k, in);
	/* bounded even for a configuration read torn (a seqcount reader retries after) */
	uint32_t log = r->log_size <= FLOW_RSS_MAX_LOG ? r->log_size : FLOW_RSS_MAX_LOG;
	size_t key_len = r->key_len <= FLOW_RSS_KEY_LEN ? r->key_len : FLOW_RSS_KEY_LEN;
	uint32_t h = flow_toeplitz(r->key, key_len, in, n);

	return r->dest[h & ((UINT32_C(1) << log) - 1)];
}
