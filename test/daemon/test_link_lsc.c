/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Link-status interrupts: the daemon's port is net_vhost, a PMD that raises
 * RTE_ETH_EVENT_INTR_LSC when a virtio driver connects and when it goes;
 * the test is that driver (net_virtio_user in the same process, on the
 * vhost-user socket). Polling is set to 10 s, so only the interrupt can tell
 * the daemon within the test's 3 s that the link came up and went down.
 * (net_tap advertises LSC interrupts too, but DPDK 22.11's net_tap updates
 * its link on netlink without raising the event: polling covers it.)
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "daemon.h"
#include "port_link.h"

static struct daemon d;
static bool eal_up;
static char sock[64];
static char eal_prefix[64];

static void
fini(void)
{
	if (eal_up) {
		daemon_shutdown(&d);
		rte_eal_cleanup();
	}
	unlink(sock);
}

/* The control thread's link work for up to @p ms until port 0's link is @p up. */
static bool
wait_link(bool up, unsigned int ms)
{
	for (unsigned int i = 0; i < ms; i++) {
		port_link_poll(&d, rte_get_tsc_cycles());
		if (d.link.port[0].known && d.link.port[0].cur.up == up)
			return true;
		usleep(1000);
	}
	return false;
}

TestSuite(link_lsc, .fini = fini, .timeout = 60);

Test(link_lsc, a_vhost_port_learns_its_link_from_interrupts)
{
	/*
	 * --in-memory: hugepages through memfd (vhost-user passes their
	 * descriptors on), no file in /dev/hugepages outlives the test
	 */
	char *argv[] = { "test", "--no-pci", "-m", "256", "--in-memory", "--single-file-segments",
			 "--lcores", "0,1",
			 "--no-telemetry", "--log-level=*:warning", eal_prefix, NULL };
	static struct config cfg;
	char err[1024], text[512], vdev[128];
	struct rte_eth_conf conf;
	struct rte_mempool *mp;
	uint16_t virtio;

	if (access("/dev/hugepages", W_OK) != 0)
		cr_skip_test("needs hugepages (vhost-user shares the driver's memory)");
	snprintf(sock, sizeof(sock), "/tmp/roce-lsc-%d.sock", (int)getpid());
	snprintf(eal_prefix, sizeof(eal_prefix), "--file-prefix=roce-lsc-%d", (int)getpid());
	unlink(sock);
	cr_assert_geq(rte_eal_init(11, argv), 0, "EAL");
	eal_up = true;
	snprintf(text, sizeof(text),
		 "[daemon]\nlink_poll_ms = 10000\n"
		 "[port p0]\ndevargs = net_vhost0,iface=%s,queues=1\nmbufs = 2047\n"
		 "rx_desc = 128\ntx_desc = 128\nipv4 = 198.18.0.11/24\n", sock);
	cr_assert_eq(config_load_string(text, "t", &cfg, err, sizeof(err)), 0, "%s", err);
	daemon_init(&d, &cfg, NULL);
	d.n_workers = 1;
	cr_assert_eq(daemon_open_ports(&d, err, sizeof(err)), 0, "%s", err);
	cr_assert(d.port[0].lsc, "net_vhost raises LSC interrupts");
	cr_assert(d.link.port[0].lsc, "and the daemon listens");
	cr_assert(wait_link(false, 10), "no driver yet: down");
	cr_assert_not(port_tx_on(&d.port[0]));

	/* the driver comes: the link goes up */
	snprintf(vdev, sizeof(vdev), "net_virtio_user0,path=%s,queues=1", sock);
	cr_assert_eq(rte_dev_probe(vdev), 0, "virtio_user");
	cr_assert_eq(rte_eth_dev_get_port_by_name("net_virtio_user0", &virtio), 0);
	mp = rte_pktmbuf_pool_create("lsc_mp", 1023, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, 0);
	cr_assert_not_null(mp);
	memset(&conf, 0, sizeof(conf));
	cr_assert_eq(rte_eth_dev_configure(virtio, 1, 1, &conf), 0);
	cr_assert_eq(rte_eth_rx_queue_setup(virtio, 0, 256, 0, NULL, mp), 0);
	cr_assert_eq(rte_eth_tx_queue_setup(virtio, 0, 256, 0, NULL), 0);
	cr_assert_eq(rte_eth_dev_start(virtio), 0);
	cr_assert(wait_link(true, 3000), "up within 3 s although polling is every 10 s");
	cr_assert(port_tx_on(&d.port[0]));
	cr_assert_geq(d.link.port[0].lsc_events, 1);
	cr_assert_eq(d.link.port[0].ups, 1);

	/* the driver goes: the link goes down */
	cr_assert_eq(rte_eth_dev_stop(virtio), 0);
	cr_assert_eq(rte_eth_dev_close(virtio), 0);
	cr_assert(wait_link(false, 3000), "down within 3 s through the interrupt");
	cr_assert_not(port_tx_on(&d.port[0]));
	cr_assert_eq(d.link.port[0].downs, 1);
	cr_assert_geq(d.link.port[0].lsc_events, 2);
	rte_mempool_free(mp);
}
