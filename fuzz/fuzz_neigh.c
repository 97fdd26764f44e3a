/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target for the daemon's ARP, neighbour discovery and echo input
 * (app/roce-daemon/neigh.c neigh_input()): arbitrary frames on either of two
 * dedicated ports (IPv4 198.18.0.1/24 with a gateway, IPv6 2001:db8::1/64),
 * or on a port index that does not exist, with the neighbour timers and
 * resolution running between frames. EAL runs in-process (--no-huge); the
 * mbufs are real. worker_ctl_tx() is the harness's: it checks what the
 * daemon would send and frees it.
 *
 * Input: byte 0 picks the port (0, 1, 2 = none) and whether timers run and
 * a resolution is asked (of the frame's bytes 16..31 as a GID); the rest is
 * the frame.
 * Invariants besides "no crash, no out-of-bounds access" (ASan/UBSan):
 *  - every frame handed to the wire is inside its mbuf, at least an
 *    Ethernet header, from the port's own MAC, and an ARP reply or
 *    ICMP(v6) frame it sends names one of the port's addresses as source;
 *  - every mbuf comes back (no leak, no double free): the pool is full
 *    after each input;
 *  - every table entry is in a known state, and a usable one (REACHABLE)
 *    has a unicast MAC.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_eal.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "daemon_state.h"
#include "gid.h"
#include "neigh.h"

#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "invariant failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); abort(); } } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define POOL_N 255u
#define ROOM (9216u + RTE_PKTMBUF_HEADROOM)

static struct daemon D;
static struct rte_mempool *pool;
static unsigned int sent;

static const char cfg_text[] =
	"[daemon]\n"
	"socket = /run/fuzz.sock\n"
	"[port p0]\n"
	"devargs = net_null0\n"
	"ipv4 = 198.18.0.1/24\n"
	"gateway4 = 198.18.0.254\n"
	"ipv6 = 2001:db8::1/64\n"
	"[port p1]\n"
	"devargs = net_null1\n"
	"ipv4 = 198.19.0.1/16\n";

/* The harness's wire: check the frame, then free it as the TX path does. */
void
worker_ctl_tx(struct daemon *d, uint16_t port_idx, struct rte_mbuf *m)
{
	const struct port *p;
	const uint8_t *f;

	CHECK(port_idx < d->n_ports);
	p = &d->port[port_idx];
	CHECK(m->nb_segs == 1 && m->pkt_len == m->data_len);
	CHECK(m->data_len >= 14 && (uint32_t)m->data_off + m->data_len <= m->buf_len);
	f = rte_pktmbuf_mtod(m, const uint8_t *);
	CHECK(memcmp(f + 6, p->mac, 6) == 0);
	uint32_t l2 = (f[12] == 0x81 && f[13] == 0x00) ? 18 : 14;
	uint16_t type = (uint16_t)(f[l2 - 2] << 8 | f[l2 - 1]);
	uint8_t src[16];

	if (type == 0x0806 && m->data_len >= l2 + 28 && f[l2 + 7] == 2) { /* ARP reply */
		gid_from_ipv4(f + l2 + 14, src);
		CHECK(gid_table_find(&p->gids, src) >= 0);
	} else if (type == 0x0800 && m->data_len >= l2 + 20) {
		gid_from_ipv4(f + l2 + 12, src);
		CHECK(gid_table_find(&p->gids, src) >= 0);
	} else if (type == 0x86dd && m->data_len >= l2 + 40) {
		CHECK(gid_table_find(&p->gids, f + l2 + 8) >= 0);
	}
	sent++;
	rte_pktmbuf_free(m);
}

static void
probe(void *arg, uint16_t port, const uint8_t ip[16])
{
	neigh_probe(arg, port, ip);
}

static void
check_table(const struct neigh_table *t)
{
	for (uint32_t i = 0; i < t->n_buckets * NEIGH_WAYS; i++) {
		const struct neigh_entry *e = &t->entry[i];

		CHECK(e->state <= NEIGH_FAILED);
		if (e->state == NEIGH_REACHABLE)
			CHECK((e->mac[0] & 1) == 0);
		if (e->state != NEIGH_FREE)
			CHECK(e->port < D.n_ports);
	}
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char *eal[] = { "fuzz_neigh", "--no-huge", "--no-shconf", "-m", "128", "--no-pci",
			"--log-level=1", "--file-prefix=fuzzneigh", NULL };
	char err[CONFIG_ERR_LEN];

	(void)argc;
	(void)argv;
	CHECK(rte_eal_init(8, eal) >= 0);
	pool = rte_pktmbuf_pool_create("fuzz_neigh", POOL_N, 0, 0, ROOM, SOCKET_ID_ANY);
	CHECK(pool != NULL);
	CHECK(config_load_string(cfg_text, "fuzz", &D.cfg, err, sizeof(err)) == 0);
	D.n_ports = D.cfg.n_ports;
	D.tsc_hz = rte_get_tsc_hz();
	for (unsigned int i = 0; i < D.n_ports; i++) {
		struct port *p = &D.port[i];
		const uint8_t mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, (uint8_t)(1 + i) };

		p->cfg = &D.cfg.ports[i];
		p->index = (uint16_t)i;
		memcpy(p->mac, mac, 6);
		p->mtu = 9000;
		p->frame_max = 9000 + 18;
		p->pool = pool;
		p->rx_on = p->tx_on = 1;
		gid_table_build(&p->gids, p->mac, p->cfg);
	}
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint64_t now = 1000000;
	struct rte_mbuf *m;
	uint8_t sel;

	if (size < 1 || size - 1 > ROOM - RTE_PKTMBUF_HEADROOM)
		return 0;
	sel = data[0];
	data++;
	size--;
	CHECK(neigh_table_init(&D.neigh, 16, 1000000, 1000, 2) == 0);
	m = rte_pktmbuf_alloc(pool);
	CHECK(m != NULL);
	CHECK(rte_pktmbuf_append(m, (uint16_t)size) != NULL || size == 0);
	memcpy(rte_pktmbuf_mtod(m, uint8_t *), data, size);
	neigh_input(&D, (uint16_t)(sel % 3), m, now);
	check_table(&D.neigh);
	if ((sel & 4) && size >= 32) {
		uint8_t mac[6];
		int rc = neigh_resolve(&D, -1, (uint16_t)((sel >> 3) & 1), data + 16, mac);

		CHECK(rc == 0 || rc == -EAGAIN || rc == -EHOSTUNREACH);
	}
	if (sel & 0x10) {
		/* time passes: probes go out, entries fail */
		for (int i = 0; i < 4; i++) {
			now += 1 + ((uint64_t)(sel >> 5) << 9);
			neigh_expire(&D.neigh, now, probe, &D);
		}
		check_table(&D.neigh);
	}
	now += 10;
	neigh_table_free(&D.neigh);
	CHECK(rte_mempool_avail_count(pool) == POOL_N);
	return 0;
}
