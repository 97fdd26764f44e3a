/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rsockets: the wire protocol's pure half (no verbs, no locks): the conn
 * data of REQ/REP, the immediate's op, and the receive side's checks of
 * what a peer writes. A hostile peer's conn data or message is refused
 * here, counted by reason (rsk_bad_count), and the caller fails the
 * connection; nothing it sends can make us read or queue beyond what we
 * announced.
 */
#include <endian.h>
#include <string.h>

#include "rsocket.h"

uint64_t rsk_bad_count[RSK_BAD_COUNT];

static const char *const rsk_bad_names[RSK_BAD_COUNT] = {
	[RSK_OK] = "ok",
#define RSK_BAD_NAME(n) [RSK_BAD_##n] = #n,
	RSK_BAD_LIST(RSK_BAD_NAME)
#undef RSK_BAD_NAME
};

const char *rsk_bad_name(enum rsk_bad why)
{
	return (unsigned int)why < RSK_BAD_COUNT ? rsk_bad_names[why] : "?";
}

static enum rsk_bad rsk_refuse(enum rsk_bad why)
{
	__atomic_fetch_add(&rsk_bad_count[why], 1, __ATOMIC_RELAXED);
	return why;
}

static bool rsk_host_is_net(void)
{
	return __BYTE_ORDER == __BIG_ENDIAN;
}

/*
 * Sizes up to 128 are themselves; above, bit 7 set and the value / 256
 * (what librdmacm's rs_value_to_scale(value, 8) computes).
 */
uint32_t rsk_scale(uint32_t value)
{
	return value <= 128u ? value : (128u | ((value >> 8) & 0x7fu));
}

uint32_t rsk_unscale(uint32_t scaled)
{
	return scaled <= 128u ? scaled : (scaled & 0x7fu) << 8;
}

static void rsk_sge_to_be(struct rsk_sge *d, const struct rsk_sge *s)
{
	d->addr = htobe64(s->addr);
	d->key = htobe32(s->key);
	d->length = htobe32(s->length);
}

static void rsk_sge_from_be(struct rsk_sge *d, const struct rsk_sge *s)
{
	d->addr = be64toh(s->addr);
	d->key = be32toh(s->key);
	d->length = be32toh(s->length);
}

void rsk_conn_data_build(struct rsk_conn_data *cd, uint16_t credits, uint32_t iomap_size,
			 const struct rsk_sge *target_sgl, const struct rsk_sge *data_buf)
{
	memset(cd, 0, sizeof(*cd));
	cd->version = RSK_VERSION;
	cd->flags = RSK_CONN_FLAG_IOMAP | (rsk_host_is_net() ? RSK_CONN_FLAG_NET : 0);
	cd->credits = htobe16(credits);
	cd->target_iomap_size = (uint8_t)rsk_scale(iomap_size);
	rsk_sge_to_be(&cd->target_sgl, target_sgl);
	rsk_sge_to_be(&cd->data_buf, data_buf);
}

enum rsk_bad rsk_conn_data_parse(const void *pd, size_t len, struct rsk_peer *peer)
{
	struct rsk_conn_data cd;

	if (pd == NULL || len < sizeof(cd))
		return rsk_refuse(RSK_BAD_conn_short);
	memcpy(&cd, pd, sizeof(cd));
	if (cd.version != RSK_VERSION)
		return rsk_refuse(RSK_BAD_conn_version);
	memset(peer, 0, sizeof(*peer));
	peer->credits = be16toh(cd.credits);
	rsk_sge_from_be(&peer->target_sgl, &cd.target_sgl);
	rsk_sge_from_be(&peer->data_buf, &cd.data_buf);
	peer->swap = !!(cd.flags & RSK_CONN_FLAG_NET) != rsk_host_is_net();
	if (cd.flags & RSK_CONN_FLAG_IOMAP) {
		peer->iomap_size = rsk_unscale(cd.target_iomap_size);
		peer->iomap_addr = peer->target_sgl.addr +
				   (uint64_t)peer->target_sgl.length * sizeof(struct rsk_sge);
	}
	/* We send while our count is short of the peer's limit: it needs a window. */
	if (peer->credits == 0 || peer->credits > RSK_QP_MAX)
		return rsk_refuse(RSK_BAD_conn_credits);
	/* Our SGL writes cycle through the peer's entries: at least one, bounded. */
	if (peer->target_sgl.length == 0 || peer->target_sgl.length > 64)
		return rsk_refuse(RSK_BAD_conn_sgl);
	if (peer->data_buf.length == 0)
		return rsk_refuse(RSK_BAD_conn_buf);
	return RSK_OK;
}

void rsk_rx_init(struct rsk_rx *rx, uint32_t rq_size, uint32_t rbuf_size, uint32_t *queue)
{
	memset(rx, 0, sizeof(*rx));
	rx->rq_size = rq_size;
	rx->rbuf_size = rbuf_size;
	rx->queue = queue;
	/* the first half goes out in the conn data, the second at the first chance */
	rx->granted = rbuf_size / 2;
	rx->bytes_avail = rbuf_size / 2;
	rx->free_offset = rbuf_size / 2;
	rx->seq_comp = (uint16_t)(rq_size / 2);
}

static bool rsk_rx_queue_full(const struct rsk_rx *rx)
{
	return (rx->tail + 1) % (rx->rq_size + 1) == rx->head;
}

static bool rsk_ctrl_known(uint32_t arg)
{
	switch (arg) {
#define RSK_CTRL_CASE(n, v) case v:
		RSK_CTRL_LIST(RSK_CTRL_CASE)
#undef RSK_CTRL_CASE
		return true;
	default:
		return false;
	}
}

struct rsk_rx_result rsk_rx_msg(struct rsk_rx *rx, uint32_t msg, uint16_t sseq_no,
				uint16_t peer_credits)
{
	struct rsk_rx_result r = { .bad = RSK_OK };
	uint32_t arg = rsk_msg_arg(msg);

	switch (rsk_msg_op(msg)) {
	case RSK_OP_DATA:
		/* the peer wrote arg bytes into what we announced, in order */
		if (arg > rx->granted)
			r.bad = rsk_refuse(RSK_BAD_msg_overrun);
		else if (rsk_rx_queue_full(rx))
			r.bad = rsk_refuse(RSK_BAD_msg_queue);
		else {
			rx->queue[rx->tail] = arg;
			rx->tail = (rx->tail + 1) % (rx->rq_size + 1);
			rx->granted -= arg;
		}
		break;
	case RSK_OP_SGL:
		/* the peer's limit is its consumed count + its queue: never further */
		if ((uint16_t)((uint16_t)arg - sseq_no) > peer_credits)
			r.bad = rsk_refuse(RSK_BAD_msg_credits);
		else {
			r.has_credits = true;
			r.credits = (uint16_t)arg;
		}
		break;
	case RSK_OP_IOMAP_SGL:
		if (arg >= rx->iomap_size)
			r.bad = rsk_refuse(RSK_BAD_msg_iomap);
		break;
	case RSK_OP_CTRL:
		if (!rsk_ctrl_known(arg))
			r.bad = rsk_refuse(RSK_BAD_msg_ctrl);
		else {
			r.ctrl = true;
			r.ctrl_msg = (enum rsk_ctrl)arg;
		}
		break;
	default:
		/* reserved ops; WRITE is never sent with an immediate */
		r.bad = rsk_refuse(RSK_BAD_msg_op);
		break;
	}
	return r;
}

bool rsk_rx_want_credits(const struct rsk_rx *rx)
{
	return rx->bytes_avail >= rx->rbuf_size / 2 ||
	       (int16_t)(uint16_t)(rx->seq_no - rx->seq_comp) >= 0;
}

bool rsk_rx_take_half(struct rsk_rx *rx, uint32_t *offset)
{
	uint32_t half = rx->rbuf_size / 2;

	rx->seq_comp = (uint16_t)(rx->seq_no + rx->rq_size / 2);
	if (rx->bytes_avail < half)
		return false;
	*offset = rx->free_offset;
	rx->bytes_avail -= half;
	rx->granted += half;
	rx->free_offset += half;
	if (rx->free_offset >= rx->rbuf_size)
		rx->free_offset = 0;
	return true;
}

uint16_t rsk_rx_credit_limit(const struct rsk_rx *rx)
{
	return (uint16_t)(rx->seq_no + rx->rq_size);
}

bool rsk_rx_has_data(const struct rsk_rx *rx)
{
	return rx->head != rx->tail;
}

/* Copy @p n bytes at @p off of the ring @p rbuf (wrapping) to @p buf. */
static void rsk_ring_copy(const struct rsk_rx *rx, const uint8_t *rbuf, uint32_t off, uint8_t *buf,
			  uint32_t n)
{
	uint32_t first = rx->rbuf_size - off;

	if (buf == NULL)
		return;
	if (first > n)
		first = n;
	memcpy(buf, rbuf + off, first);
	memcpy(buf + first, rbuf, n - first);
}

size_t rsk_rx_read(struct rsk_rx *rx, const uint8_t *rbuf, uint8_t *buf, size_t len, bool peek)
{
	uint32_t head = rx->head, off = rx->read_offset;
	size_t done = 0;

	while (done < len && head != rx->tail) {
		uint32_t avail = rx->queue[head];
		uint32_t n = len - done < avail ? (uint32_t)(len - done) : avail;

		rsk_ring_copy(rx, rbuf, off, buf ? buf + done : NULL, n);
		off = (off + n) % rx->rbuf_size;
		done += n;
		if (peek) {
			if (n < avail)
				break;
			head = (head + 1) % (rx->rq_size + 1);
			continue;
		}
		rx->bytes_avail += n;
		if (n < avail) {
			rx->queue[head] -= n;
		} else {
			rx->seq_no++;
			head = (head + 1) % (rx->rq_size + 1);
		}
	}
	if (!peek) {
		rx->head = head;
		rx->read_offset = off;
	}
	return done;
}
