/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Port bring-up. The PMD limits checked here were measured on this project's
 * machines (doc/architecture.md, "Ports"):
 *  - net_af_packet: frames longer than framesz - 66 are truncated silently
 *    and TX over the frame size is dropped silently; the PMD reports at most
 *    1518-byte frames, so a larger MTU is set on the kernel interface.
 *  - net_af_xdp: one mbuf is one UMEM chunk (<= 4 KiB): frames <= 3456 bytes;
 *    larger ones are counted as imissed, silently.
 *  - net_memif: bsize must hold the largest frame, or frames arrive split.
 */
#include "port.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/if_packet.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_dev.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#ifdef ROCE_DAEMON_HAVE_LIBBPF
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#endif

#define AF_PACKET_FRAME_OVERHEAD 66u   /* TPACKET2 header + sockaddr_ll + alignment */
#define AF_PACKET_DEFAULT_FRAMESZ 2048u
#define AF_XDP_MAX_FRAME 3456u         /* measured: 4 KiB UMEM chunk per mbuf */
#define AF_XDP_MAX_DATA_ROOM 3712u
#define MEMIF_DEFAULT_BSIZE 2048u
#define POOL_CACHE 256u

/* Value of "key=" in a devargs string, or @p def. */
static uint32_t
devargs_u32(const char *devargs, const char *key, uint32_t def)
{
	size_t klen = strlen(key);

	for (const char *s = strchr(devargs, ','); s != NULL; s = strchr(s + 1, ',')) {
		if (strncmp(s + 1, key, klen) == 0 && s[1 + klen] == '=')
			return (uint32_t)strtoul(s + 2 + klen, NULL, 0);
	}
	return def;
}

static bool
driver_is(const char *driver, const char *name)
{
	return strcmp(driver, name) == 0;
}

const char *
port_check_pmd_mtu(const char *driver, const char *devargs, uint32_t mtu, char *buf, size_t len)
{
	uint32_t frame_max = mtu + PORT_L2_OVERHEAD;

	if (driver_is(driver, "net_af_packet")) {
		uint32_t framesz = devargs_u32(devargs, "framesz", AF_PACKET_DEFAULT_FRAMESZ);

		if (framesz < AF_PACKET_FRAME_OVERHEAD || frame_max > framesz - AF_PACKET_FRAME_OVERHEAD) {
			uint32_t want = RTE_ALIGN_CEIL(frame_max + AF_PACKET_FRAME_OVERHEAD, 512u);
			uint32_t block = want;

			while (block % 4096u != 0)
				block += want;
			snprintf(buf, len, "mtu %u needs frames of %u bytes but net_af_packet "
				 "truncates frames longer than framesz - %u = %d bytes: add "
				 "framesz=%u,blocksz=%u to devargs", mtu, frame_max,
				 AF_PACKET_FRAME_OVERHEAD, (int)framesz - (int)AF_PACKET_FRAME_OVERHEAD,
				 want, block);
			return buf;
		}
	} else if (driver_is(driver, "net_af_xdp")) {
		if (frame_max > AF_XDP_MAX_FRAME) {
			snprintf(buf, len, "mtu %u needs frames of %u bytes but net_af_xdp carries "
				 "at most %u (one 4 KiB UMEM chunk per mbuf): use mtu <= %u",
				 mtu, frame_max, AF_XDP_MAX_FRAME, AF_XDP_MAX_FRAME - PORT_L2_OVERHEAD);
			return buf;
		}
	} else if (driver_is(driver, "net_memif")) {
		uint32_t bsize = devargs_u32(devargs, "bsize", MEMIF_DEFAULT_BSIZE);

		if (bsize < frame_max) {
			snprintf(buf, len, "mtu %u needs frames of %u bytes but memif bsize is %u "
				 "(frames would arrive split): add bsize=%u to devargs on both sides",
				 mtu, frame_max, bsize, RTE_ALIGN_CEIL(frame_max, 128u));
			return buf;
		}
	}
	return NULL;
}

uint32_t
port_data_room(const char *driver, const char *devargs, uint32_t frame_max)
{
	uint32_t room = RTE_PKTMBUF_HEADROOM + RTE_MAX(2048u, RTE_ALIGN_CEIL(frame_max, 64u));

	if (driver_is(driver, "net_af_packet")) {
		uint32_t framesz = devargs_u32(devargs, "framesz", AF_PACKET_DEFAULT_FRAMESZ);

		/* The PMD refuses RX queues whose mbufs cannot hold framesz - 32. */
		room = RTE_MAX(room, RTE_PKTMBUF_HEADROOM + framesz - 32u);
	} else if (driver_is(driver, "net_af_xdp")) {
		room = RTE_MIN(room, AF_XDP_MAX_DATA_ROOM);
	}
	return room;
}

/* MTU of a kernel interface, or 0. */
static uint32_t
kernel_mtu(const char *ifname)
{
	struct ifreq ifr;
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	uint32_t mtu = 0;

	if (s < 0)
		return 0;
	memset(&ifr, 0, sizeof(ifr));
	if (strlen(ifname) >= sizeof(ifr.ifr_name))
		return 0;
	memcpy(ifr.ifr_name, ifname, strlen(ifname) + 1);
	if (ioctl(s, SIOCGIFMTU, &ifr) == 0)
		mtu = (uint32_t)ifr.ifr_mtu;
	close(s);
	return mtu;
}

static int __attribute__((format(printf, 4, 5)))
fail(struct port *p, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(err, errlen, "[port %s] ", p->cfg->name);

	if (n > 0 && (size_t)n < errlen) {
		va_start(ap, fmt);
		vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* Find the ethdev for @p devargs, probing it if no port has that name yet. */
static int
find_or_probe(struct port *p, char *err, size_t errlen)
{
	const char *devargs = p->cfg->devargs;
	char name[RTE_ETH_NAME_MAX_LEN];
	size_t nlen = strcspn(devargs, ",");
	struct rte_dev_iterator it;
	uint16_t id;
	int rc;

	if (nlen >= sizeof(name))
		return fail(p, err, errlen, "devargs: device name too long");
	memcpy(name, devargs, nlen);
	name[nlen] = '\0';
	if (rte_eth_dev_get_port_by_name(name, &id) == 0) {
		p->port_id = id;   /* already probed (EAL --vdev / -a, or a test) */
		return 0;
	}
	rc = rte_dev_probe(devargs);
	if (rc < 0) {
		const char *hint = "";

		if (strncmp(devargs, "net_af_packet", 13) == 0 || strncmp(devargs, "net_af_xdp", 10) == 0)
			hint = " (does iface= name an interface in this network namespace? for "
			       "net_af_xdp, a stale XDP program blocks it: ip link set dev IF xdp off)";
		return fail(p, err, errlen, "cannot probe '%s': %s%s", devargs, rte_strerror(-rc), hint);
	}
	RTE_ETH_FOREACH_MATCHING_DEV(id, devargs, &it) {
		p->port_id = id;
		rte_eth_iterator_cleanup(&it);
		return 0;
	}
	if (rte_eth_dev_get_port_by_name(name, &id) == 0) {
		p->port_id = id;
		return 0;
	}
	return fail(p, err, errlen, "probed '%s' but found no ethdev port for it", devargs);
}

static int
check_queues(struct port *p, const struct rte_eth_dev_info *info, const struct port_params *pp,
	     char *err, size_t errlen)
{
	const struct config_port *cp = p->cfg;
	const char *hint = driver_is(p->driver, "net_af_packet") ? " (add qpairs=N to devargs)" :
			   driver_is(p->driver, "net_af_xdp") ? " (add queue_count=N to devargs)" : "";

	p->n_rxq = (uint16_t)(cp->rx_queues ? cp->rx_queues : pp->n_workers);
	p->n_txq = (uint16_t)(cp->tx_queues ? cp->tx_queues : pp->n_workers);
	if (p->n_txq < pp->n_workers)
		return fail(p, err, errlen, "tx_queues = %u but there are %u workers: each worker "
			    "needs its own TX queue", p->n_txq, pp->n_workers);
	if (p->n_rxq > pp->n_workers)
		return fail(p, err, errlen, "rx_queues = %u but there are %u workers: RX queue w is "
			    "polled by worker w, so no worker would poll the rest", p->n_rxq,
			    pp->n_workers);
	if (p->n_rxq > info->max_rx_queues || p->n_txq > info->max_tx_queues)
		return fail(p, err, errlen, "%s offers %u RX / %u TX queues, %u / %u needed%s",
			    p->driver, info->max_rx_queues, info->max_tx_queues, p->n_rxq, p->n_txq,
			    hint);
	return 0;
}

/*
 * The largest MTU ethdev accepts: max_mtu, and what fits in max_rx_pktlen
 * with the PMD's overhead (ethdev assumes 18 bytes when the PMD does not say;
 * net_af_packet reports 1518-byte frames and no max_mtu).
 */
static uint32_t
pmd_max_mtu(const struct rte_eth_dev_info *info)
{
	uint32_t overhead = RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN;

	if (info->max_mtu != UINT16_MAX && info->max_rx_pktlen > info->max_mtu)
		overhead = info->max_rx_pktlen - info->max_mtu;
	return RTE_MIN((uint32_t)info->max_mtu, info->max_rx_pktlen - overhead);
}

static int
check_mtu(struct port *p, const struct rte_eth_dev_info *info, char *err, size_t errlen)
{
	uint32_t max_mtu = pmd_max_mtu(info);

	char why[256];
	const char *msg = port_check_pmd_mtu(p->driver, p->cfg->devargs, p->mtu, why, sizeof(why));

	if (msg != NULL)
		return fail(p, err, errlen, "%s", msg);
	if (p->mtu < info->min_mtu)
		return fail(p, err, errlen, "mtu %u below the PMD's minimum %u", p->mtu, info->min_mtu);
	if (p->mtu > max_mtu) {
		/* Kernel-backed PMDs (af_packet) report 1500 but carry what the
		 * kernel interface carries: accept if the kernel side is set. */
		uint32_t kmtu = p->ifname[0] ? kernel_mtu(p->ifname) : 0;

		/* net_memif reports 1514-byte frames but carries up to bsize
		 * (checked above; 4200-byte frames measured), and chains mbufs */
		if (driver_is(p->driver, "net_memif"))
			return 0;
		if (p->ifname[0] == '\0')
			return fail(p, err, errlen, "mtu %u above the PMD's maximum %u", p->mtu,
				    max_mtu);
		if (kmtu < p->mtu)
			return fail(p, err, errlen, "mtu %u above what %s reports (%u) and the "
				    "kernel interface %s has mtu %u: set it first (ip link set dev %s "
				    "mtu %u)", p->mtu, p->driver, max_mtu, p->ifname, kmtu,
				    p->ifname, p->mtu);
	}
	return 0;
}

/*
 * rx_mbuf_size below the largest frame: the PMD must scatter a frame over
 * several mbufs (RTE_ETH_RX_OFFLOAD_SCATTER; net_memif chains mbufs without
 * saying so), and frames to send need whole-frame mbufs: big_pool.
 * @return the RX data room (headroom included), or 0 after fail()
 */
static uint32_t
rx_room(struct port *p, const struct rte_eth_dev_info *info, char *err, size_t errlen)
{
	const struct config_port *cp = p->cfg;

	if (cp->rx_mbuf_size == 0)
		return port_data_room(p->driver, cp->devargs, p->frame_max);
	if (cp->rx_mbuf_size < p->frame_max) {
		if ((info->rx_offload_capa & RTE_ETH_RX_OFFLOAD_SCATTER) == 0 &&
		    !driver_is(p->driver, "net_memif")) {
			fail(p, err, errlen, "rx_mbuf_size = %u is below the largest frame (%u bytes "
			     "at mtu %u) and %s cannot spread a frame over several mbufs (no scatter "
			     "RX): raise rx_mbuf_size to %u or remove it", cp->rx_mbuf_size,
			     p->frame_max, p->mtu, p->driver, p->frame_max);
			return 0;
		}
		p->rx_scatter = true;
	}
	return RTE_PKTMBUF_HEADROOM + cp->rx_mbuf_size;
}

static int
create_pool(struct port *p, const struct rte_eth_dev_info *info, const struct port_params *pp,
	    char *err, size_t errlen)
{
	const struct config_port *cp = p->cfg;
	char name[RTE_MEMPOOL_NAMESIZE];
	uint32_t room = rx_room(p, info, err, errlen);
	uint64_t n = cp->mbufs;

	if (room == 0)
		return -1;
	if (room > UINT16_MAX)
		return fail(p, err, errlen, "mbufs of %u bytes: at most %u", room, UINT16_MAX);

	if (n == 0) {
		n = (uint64_t)p->n_rxq * cp->rx_desc + (uint64_t)p->n_txq * cp->tx_desc +
		    pp->extra_mbufs + (uint64_t)(pp->n_workers + 1) * POOL_CACHE * 3 / 2 + 1024;
		n = rte_align64pow2(n) - 1;
	}
	if (n > UINT32_MAX)
		return fail(p, err, errlen, "too many mbufs (%" PRIu64 ")", n);
	snprintf(name, sizeof(name), "roce_port%u", p->index);
	p->pool = rte_pktmbuf_pool_create(name, (unsigned int)n, POOL_CACHE, 0, (uint16_t)room,
					  (int)rte_socket_id());
	if (p->pool == NULL)
		return fail(p, err, errlen, "cannot create a pool of %" PRIu64 " mbufs of %u bytes: %s "
			    "(more memory: EAL -m, or hugepages)", n, room, rte_strerror(rte_errno));
	if (!p->rx_scatter)
		return 0;
	/* whole frames: everything but the RX descriptors' share */
	room = port_data_room(p->driver, cp->devargs, p->frame_max);
	n = (uint64_t)p->n_txq * cp->tx_desc + pp->extra_mbufs +
	    (uint64_t)(pp->n_workers + 1) * POOL_CACHE * 3 / 2 + 1024;
	n = rte_align64pow2(n) - 1;
	snprintf(name, sizeof(name), "roce_big%u", p->index);
	p->big_pool = rte_pktmbuf_pool_create(name, (unsigned int)n, POOL_CACHE, 0, (uint16_t)room,
					      (int)rte_socket_id());
	if (p->big_pool == NULL)
		return fail(p, err, errlen, "cannot create a pool of %" PRIu64 " whole-frame mbufs of "
			    "%u bytes: %s (more memory: EAL -m, or hugepages)", n, room,
			    rte_strerror(rte_errno));
	return 0;
}

static int
setup_queues(struct port *p, const struct rte_eth_dev_info *info, char *err, size_t errlen)
{
	const struct config_port *cp = p->cfg;
	struct rte_eth_conf conf;
	uint16_t nrx = (uint16_t)cp->rx_desc, ntx = (uint16_t)cp->tx_desc;
	int rc;

	memset(&conf, 0, sizeof(conf));
	conf.rxmode.mtu = RTE_MIN(p->mtu, pmd_max_mtu(info));
	/* Link changes as interrupts where the PMD has them (port_link.c polls too). */
	p->lsc = info->dev_flags != NULL && (*info->dev_flags & RTE_ETH_DEV_INTR_LSC) != 0;
	conf.intr_conf.lsc = p->lsc ? 1 : 0;
	if (p->rx_scatter && (info->rx_offload_capa & RTE_ETH_RX_OFFLOAD_SCATTER))
		conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_SCATTER;
	rc = rte_eth_dev_configure(p->port_id, p->n_rxq, p->n_txq, &conf);
	if (rc < 0)
		return fail(p, err, errlen, "configure (%u RX, %u TX queues): %s", p->n_rxq, p->n_txq,
			    rte_strerror(-rc));
	rc = rte_eth_dev_adjust_nb_rx_tx_desc(p->port_id, &nrx, &ntx);
	if (rc < 0)
		return fail(p, err, errlen, "descriptor counts: %s", rte_strerror(-rc));
	for (uint16_t q = 0; q < p->n_rxq; q++) {
		rc = rte_eth_rx_queue_setup(p->port_id, q, nrx, rte_eth_dev_socket_id(p->port_id),
					    NULL, p->pool);
		if (rc < 0)
			return fail(p, err, errlen, "RX queue %u: %s", q, rte_strerror(-rc));
	}
	for (uint16_t q = 0; q < p->n_txq; q++) {
		rc = rte_eth_tx_queue_setup(p->port_id, q, ntx, rte_eth_dev_socket_id(p->port_id),
					    NULL);
		if (rc < 0)
			return fail(p, err, errlen, "TX queue %u: %s", q, rte_strerror(-rc));
	}
	if (p->mtu <= pmd_max_mtu(info)) {
		rc = rte_eth_dev_set_mtu(p->port_id, (uint16_t)p->mtu);
		if (rc < 0 && rc != -ENOTSUP)
			return fail(p, err, errlen, "set mtu %u: %s", p->mtu, rte_strerror(-rc));
	}
	return 0;
}

int
port_open(struct port *p, uint16_t index, const struct config_port *cp,
	  const struct port_params *params, char *err, size_t errlen)
{
	struct rte_eth_dev_info info;
	struct rte_ether_addr mac;
	int rc;

	memset(p, 0, sizeof(*p));
	p->cfg = cp;
	p->index = index;
	p->port_id = RTE_MAX_ETHPORTS;
	p->mtu = cp->mtu;
	p->frame_max = cp->mtu + PORT_L2_OVERHEAD;
	if (find_or_probe(p, err, errlen) < 0)
		return -1;
	rc = rte_eth_dev_info_get(p->port_id, &info);
	if (rc < 0)
		return fail(p, err, errlen, "device info: %s", rte_strerror(-rc));
	snprintf(p->driver, sizeof(p->driver), "%s", info.driver_name);
	p->ifindex = info.if_index;
	if (p->ifindex != 0 && if_indextoname(p->ifindex, p->ifname) == NULL)
		p->ifname[0] = '\0';
	if (cp->mode == CONFIG_PORT_SHARED && !driver_is(p->driver, "net_af_xdp"))
		return fail(p, err, errlen, "mode = shared needs net_af_xdp, not %s", p->driver);
	if (check_queues(p, &info, params, err, errlen) < 0 || check_mtu(p, &info, err, errlen) < 0 ||
	    create_pool(p, &info, params, err, errlen) < 0 || setup_queues(p, &info, err, errlen) < 0)
		return -1;
	if (cp->promisc)
		(void)rte_eth_promiscuous_enable(p->port_id);
	/* Neighbour solicitations go to solicited-node multicast groups. */
	if (cp->mode == CONFIG_PORT_DEDICATED)
		(void)rte_eth_allmulticast_enable(p->port_id);
	p->memif_client = driver_is(p->driver, "net_memif") && strstr(cp->devargs, "role=client");
	rc = rte_eth_dev_start(p->port_id);
	if (rc < 0 && p->memif_client) {
		/* The server is not there yet: port_link.c connects when it is. */
		printf("[port %s] net_memif client: no server yet (%s); retrying while the link is "
		       "down\n", cp->name, rte_strerror(-rc));
	} else if (rc < 0) {
		return fail(p, err, errlen, "start: %s", rte_strerror(-rc));
	} else {
		p->started = true;
		__atomic_store_n(&p->rx_on, 1, __ATOMIC_RELEASE);
	}
	rc = rte_eth_macaddr_get(p->port_id, &mac);
	if (rc < 0)
		return fail(p, err, errlen, "MAC address: %s", rte_strerror(-rc));
	memcpy(p->mac, mac.addr_bytes, 6);
	gid_table_build(&p->gids, p->mac, cp);
	uint32_t speed = 0;
	(void)port_link(p, &speed);
	config_port_cc(cp, speed, &p->cc);
	if (cp->mode == CONFIG_PORT_SHARED && port_xdp_set_addrs(p, err, errlen) < 0)
		return -1;
	return 0;
}

void
port_close(struct port *p)
{
	__atomic_store_n(&p->rx_on, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&p->tx_on, 0, __ATOMIC_RELEASE);
	if (p->port_id < RTE_MAX_ETHPORTS && rte_eth_dev_is_valid_port(p->port_id)) {
		if (p->started)
			(void)rte_eth_dev_stop(p->port_id);
		(void)rte_eth_dev_close(p->port_id);
	}
	p->started = false;
	p->port_id = RTE_MAX_ETHPORTS;
	rte_mempool_free(p->pool);
	p->pool = NULL;
	rte_mempool_free(p->big_pool);
	p->big_pool = NULL;
}

int
port_vlan_tag(const struct port *p, struct rte_mbuf **m)
{
	const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(*m, const struct rte_ether_hdr *);

	if (port_vlan(p) == 0 || (*m)->data_len < sizeof(*eth) ||
	    eth->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_VLAN))
		return 0;
	(*m)->vlan_tci = port_vlan_tci(p, 0);
	return rte_vlan_insert(m);
}

bool
port_link(const struct port *p, uint32_t *speed_mbps)
{
	struct rte_eth_link link;

	if (__atomic_load_n(&p->link_known, __ATOMIC_ACQUIRE)) {
		*speed_mbps = __atomic_load_n(&p->link_speed, __ATOMIC_RELAXED);
		return __atomic_load_n(&p->link_up, __ATOMIC_RELAXED) != 0;
	}
	memset(&link, 0, sizeof(link));
	if (!p->started || rte_eth_link_get_nowait(p->port_id, &link) < 0)
		return false;
	*speed_mbps = link.link_speed == RTE_ETH_SPEED_NUM_UNKNOWN ? 0 : link.link_speed;
	return link.link_status == RTE_ETH_LINK_UP;
}

/* IFF_UP and IFF_RUNNING, and the MTU, of kernel interface @p ifname. @return 0 or -errno */
static int
kernel_link(int sock, const char *ifname, bool *up, uint32_t *mtu)
{
	struct ifreq ifr;
	size_t len = strlen(ifname);

	if (len >= sizeof(ifr.ifr_name))
		return -EINVAL;
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, ifname, len + 1);
	if (ioctl(sock, SIOCGIFFLAGS, &ifr) != 0)
		return -errno;
	*up = (ifr.ifr_flags & IFF_UP) && (ifr.ifr_flags & IFF_RUNNING);
	if (ioctl(sock, SIOCGIFMTU, &ifr) == 0 && ifr.ifr_mtu > 0)
		*mtu = (uint32_t)ifr.ifr_mtu;
	return 0;
}

int
port_link_sample(const struct port *p, int sock, bool *up, uint32_t *speed_mbps, uint32_t *mtu)
{
	struct rte_eth_link link;
	bool kup = true;
	uint32_t kmtu = 0;
	int rc;

	*up = false;
	*speed_mbps = 0;
	*mtu = p->mtu;
	if (!p->started)
		return 0;   /* a memif client without its server: down */
	memset(&link, 0, sizeof(link));
	rc = rte_eth_link_get_nowait(p->port_id, &link);
	if (rc < 0)
		return rc;
	if (sock >= 0 && p->ifname[0] != '\0') {
		rc = kernel_link(sock, p->ifname, &kup, &kmtu);
		if (rc == -ENODEV)
			kup = false;   /* the interface went away: no cable at all */
		else if (rc < 0)
			return rc;
		if (kmtu != 0 && kmtu < *mtu)
			*mtu = kmtu;
	}
	*up = link.link_status == RTE_ETH_LINK_UP && kup;
	if (*up)
		*speed_mbps = link.link_speed == RTE_ETH_SPEED_NUM_UNKNOWN ||
			      link.link_speed == RTE_ETH_SPEED_NUM_NONE ? 0 : link.link_speed;
	return 0;
}

#ifdef ROCE_DAEMON_HAVE_LIBBPF
/* The map of the program attached to @p ifindex named @p name, or -1. */
static int
xdp_map_fd(unsigned int ifindex, const char *name)
{
	struct bpf_prog_info pinfo;
	uint32_t prog_id = 0, map_ids[16], len = sizeof(pinfo);
	int prog_fd, fd = -1;

	if (bpf_xdp_query_id((int)ifindex, 0, &prog_id) != 0 || prog_id == 0)
		return -1;
	prog_fd = bpf_prog_get_fd_by_id(prog_id);
	if (prog_fd < 0)
		return -1;
	memset(&pinfo, 0, sizeof(pinfo));
	pinfo.nr_map_ids = 16;
	pinfo.map_ids = (uint64_t)(uintptr_t)map_ids;
	if (bpf_obj_get_info_by_fd(prog_fd, &pinfo, &len) == 0) {
		for (uint32_t i = 0; i < pinfo.nr_map_ids && i < 16 && fd < 0; i++) {
			struct bpf_map_info minfo;
			uint32_t mlen = sizeof(minfo);
			int mfd = bpf_map_get_fd_by_id(map_ids[i]);

			if (mfd < 0)
				continue;
			memset(&minfo, 0, sizeof(minfo));
			if (bpf_obj_get_info_by_fd(mfd, &minfo, &mlen) == 0 &&
			    strcmp(minfo.name, name) == 0)
				fd = mfd;
			else
				close(mfd);
		}
	}
	close(prog_fd);
	return fd;
}

int
port_xdp_set_addrs(struct port *p, char *err, size_t errlen)
{
	int fd = xdp_map_fd(p->ifindex, "roce_addrs");
	uint8_t one = 1;

	if (fd < 0)
		return fail(p, err, errlen, "shared mode: no XDP program with a roce_addrs map on %s "
			    "(add xdp_prog=PATH/roce_xdp.o to devargs)", p->ifname);
	for (unsigned int i = 0; i < p->cfg->n_addrs; i++) {
		if (bpf_map_update_elem(fd, p->cfg->addrs[i].addr, &one, BPF_ANY) != 0) {
			close(fd);
			return fail(p, err, errlen, "shared mode: cannot add an address to roce_addrs: %s",
				    strerror(errno));
		}
	}
	close(fd);
	p->xdp_prog_custom = true;
	return 0;
}
#else
int
port_xdp_set_addrs(struct port *p, char *err, size_t errlen)
{
	return fail(p, err, errlen, "shared mode needs libbpf (not found at build time)");
}
#endif

/*
 * net_af_packet's rings are the kernel's PACKET_RX_RING: a frame that finds
 * no free slot (a worker that did not poll for a few ms under load) is
 * dropped by the kernel and counted in the socket's tp_drops, which the
 * 22.11 PMD never reads, so eth_imissed stayed 0 while the transport
 * retransmitted (session 15: a 64-QP flood against a stopped worker).
 */
static uint32_t
packet_socket_drops(int fd, unsigned int ifindex)
{
	struct sockaddr_ll sll;
	struct tpacket_stats st;
	socklen_t len = sizeof(int);
	int domain;

	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0 || domain != AF_PACKET)
		return 0;
	len = sizeof(sll);
	if (getsockname(fd, (struct sockaddr *)&sll, &len) != 0 || sll.sll_ifindex != (int)ifindex)
		return 0;
	len = sizeof(st);
	if (getsockopt(fd, SOL_PACKET, PACKET_STATISTICS, &st, &len) != 0)
		return 0;
	return st.tp_drops;
}

uint64_t
port_rx_ring_drops(struct port *p)
{
	struct dirent *e;
	uint64_t n = 0;
	DIR *dir;

	if (!driver_is(p->driver, "net_af_packet") || p->ifindex == 0)
		return 0;
	dir = opendir("/proc/self/fd");
	if (dir != NULL) {
		while ((e = readdir(dir)) != NULL) {
			char *end;
			long fd = strtol(e->d_name, &end, 10);

			if (end == e->d_name || *end != '\0' || fd == dirfd(dir))
				continue;
			n += packet_socket_drops((int)fd, p->ifindex);
		}
		closedir(dir);
	}
	return __atomic_add_fetch(&p->rx_ring_drops, n, __ATOMIC_RELAXED);
}
