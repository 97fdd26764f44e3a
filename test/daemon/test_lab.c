/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Two roce-daemons in two network namespaces joined by a veth pair, brought
 * up by scripts/lab.sh, with real PMDs (net_af_packet, net_af_xdp, and
 * net_af_xdp in shared-NIC mode with bpf/roce_xdp.o). Needs root; skips
 * otherwise. Every test tears its lab down and checks that SIGTERM stopped
 * both daemons with exit status 0.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"

static char lab_name[16];
static char lab_opts[64];
static bool lab_is_up;
static char out[65536];

static const char *
env(const char *name)
{
	const char *v = getenv(name);

	cr_assert_not_null(v, "%s not set", name);
	return v;
}

static int
lab(const char *fmt_cmd)
{
	return t_run(out, sizeof(out), 90, "LAB_BUILD=%s %s/scripts/lab.sh -n %s %s %s",
		     env("ROCE_BUILD_DIR"), env("ROCE_SOURCE_DIR"), lab_name, lab_opts, fmt_cmd);
}

static void
lab_up(const char *name, const char *opts)
{
	if (geteuid() != 0)
		cr_skip_test("needs root (network namespaces)");
	snprintf(lab_name, sizeof(lab_name), "%s", name);
	snprintf(lab_opts, sizeof(lab_opts), "%s", opts);
	lab("down"); /* leftovers of an interrupted run */
	int rc = lab("up");
	cr_assert_eq(rc, 0, "lab up failed:\n%s", out);
	lab_is_up = true;
}

/* Tear down; @return true if both daemons exited 0 after SIGTERM. */
static bool
lab_down(void)
{
	int rc;

	if (!lab_is_up)
		return true;
	lab_is_up = false;
	rc = lab("down");
	return rc == 0 && strstr(out, "daemon a: exited 0") != NULL &&
	       strstr(out, "daemon b: exited 0") != NULL;
}

static void
fini(void)
{
	if (lab_is_up) {
		bool ok = lab_down();

		t_fini_check(ok, "daemons did not exit 0 on SIGTERM:\n%s", out);
	}
}

static char prefix_a[32], prefix_b[32];

static const char *
prefix(char host)
{
	char *p = host == 'a' ? prefix_a : prefix_b;

	snprintf(p, 32, "%s-%c", lab_name, host);
	return p;
}

static void
telemetry(char host, const char *cmd, char *buf, size_t len)
{
	int rc = t_telemetry(prefix(host), cmd, buf, len);

	cr_assert_eq(rc, 0, "telemetry %s on %c: %s", cmd, host, strerror(-rc));
}

/* Poll /roce/port/stats,0 of @p host until @p key reaches @p want (3 s). */
static long long
wait_counter(char host, const char *key, long long want)
{
	char buf[16384];
	long long v = -1;

	for (int i = 0; i < 60; i++) {
		telemetry(host, "/roce/port/stats,0", buf, sizeof(buf));
		v = t_json_int(buf, key);
		if (v >= want)
			break;
		usleep(50000);
	}
	return v;
}

static void
port_mac(char host, uint8_t mac[6])
{
	char buf[4096];
	const char *p;
	unsigned int m[6];

	telemetry(host, "/roce/port/info,0", buf, sizeof(buf));
	p = strstr(buf, "\"mac\":\"");
	cr_assert_not_null(p, "%s", buf);
	cr_assert_eq(sscanf(p + 7, "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]), 6);
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)m[i];
}

/* A raw packet socket on host @p host's veth, opened inside its namespace. */
static int
raw_socket(char host, uint8_t mac[6])
{
	char path[128], ifname[32];
	int self, ns, s;
	struct ifreq ifr;

	snprintf(path, sizeof(path), "/var/run/netns/%s-%c", lab_name, host);
	snprintf(ifname, sizeof(ifname), "%s-%c", lab_name, host);
	self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	ns = open(path, O_RDONLY | O_CLOEXEC);
	cr_assert(self >= 0 && ns >= 0);
	cr_assert_eq(setns(ns, CLONE_NEWNET), 0, "setns: %s", strerror(errno));
	s = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
	int ifindex = (int)if_nametoindex(ifname);
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL),
				   .sll_ifindex = ifindex };
	int brc = bind(s, (struct sockaddr *)&sll, sizeof(sll));
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, ifname, strlen(ifname) + 1);
	int irc = ioctl(s, SIOCGIFHWADDR, &ifr);
	cr_assert_eq(setns(self, CLONE_NEWNET), 0);
	close(self);
	close(ns);
	cr_assert(s >= 0 && ifindex > 0 && brc == 0 && irc == 0, "raw socket on %s", ifname);
	memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	return s;
}

/* Receive an incoming frame with ethertype @p type within @p ms. @return length or 0 */
static size_t
recv_frame(int s, uint16_t type, uint8_t *buf, size_t cap, int ms)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd pfd = { .fd = s, .events = POLLIN };
		struct sockaddr_ll from;
		socklen_t fl = sizeof(from);
		int left;

		clock_gettime(CLOCK_MONOTONIC, &t);
		left = ms - (int)((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
		if (left <= 0 || poll(&pfd, 1, left) <= 0)
			return 0;
		ssize_t n = recvfrom(s, buf, cap, 0, (struct sockaddr *)&from, &fl);
		if (n >= 14 && from.sll_pkttype != PACKET_OUTGOING &&
		    (uint16_t)(buf[12] << 8 | buf[13]) == type)
			return (size_t)n;
	}
}

/* ---- af_packet ---- */

TestSuite(lab_af_packet, .fini = fini, .timeout = 120);

Test(lab_af_packet, kernel_resolves_and_pings_the_daemon)
{
	uint8_t mac_a[6];
	char want[64];

	lab_up("tlp1", "");
	port_mac('a', mac_a);
	cr_expect_eq(lab("run b ping -c 1 -W 3 " T_IP_A), 0, "ping 198.18.0.11:\n%s", out);
	cr_expect_eq(lab("run b ping -6 -c 1 -W 3 2001:db8::11"), 0, "ping 2001:db8::11:\n%s", out);
	lab("run b ip neigh show dev tlp1-b");
	snprintf(want, sizeof(want), "%s lladdr %02x:%02x:%02x:%02x:%02x:%02x", T_IP_A, mac_a[0],
		 mac_a[1], mac_a[2], mac_a[3], mac_a[4], mac_a[5]);
	cr_expect(strstr(out, want) != NULL, "kernel learned the daemon's MAC (%s):\n%s", want, out);
	cr_expect(lab_down(), "SIGTERM: both daemons exit 0:\n%s", out);
}

static void
expect_resolved(char host, const char *ip, const uint8_t mac[6])
{
	char buf[8192], want[96];

	snprintf(want, sizeof(want), "p0 %s %02x:%02x:%02x:%02x:%02x:%02x reachable", ip, mac[0],
		 mac[1], mac[2], mac[3], mac[4], mac[5]);
	for (int i = 0; i < 60; i++) {
		telemetry(host, "/roce/neigh", buf, sizeof(buf));
		if (strstr(buf, want) != NULL)
			break;
		usleep(100000);
	}
	cr_expect(strstr(buf, want) != NULL, "%c: want \"%s\" in %s", host, want, buf);
}

static void
daemons_resolve_each_other(void)
{
	uint8_t mac_a[6], mac_b[6];

	port_mac('a', mac_a);
	port_mac('b', mac_b);
	expect_resolved('a', T_IP_B, mac_b);
	expect_resolved('a', "2001:db8::12", mac_b);
	expect_resolved('b', T_IP_A, mac_a);
	expect_resolved('b', "2001:db8::11", mac_a);
}

Test(lab_af_packet, daemons_resolve_each_other)
{
	lab_up("tlp2", "");
	daemons_resolve_each_other();
}

Test(lab_af_packet, arp_on_the_wire)
{
	uint8_t mac_a[6], mac_b[6], f[1600];
	int s;

	lab_up("tlp3", "");
	port_mac('a', mac_a);
	s = raw_socket('b', mac_b);
	cr_assert_eq(send(s, f, t_arp_request(f, mac_b, "198.18.0.2", T_IP_A), 0), 60);
	size_t n = 0;
	uint8_t ip_a[16];
	t_gid4(T_IP_A, ip_a);
	for (int tries = 0; tries < 10; tries++) {
		n = recv_frame(s, 0x0806, f, sizeof(f), 2000);
		if (n == 0 || (f[14 + 7] == 2 && memcmp(f + 14 + 14, ip_a + 12, 4) == 0))
			break;
	}
	cr_assert_geq(n, 42, "an ARP reply from the daemon");
	cr_expect_eq(f[14 + 7], 2);
	cr_expect_arr_eq(f + 14 + 8, mac_a, 6, "it names the daemon's MAC");
	cr_expect_arr_eq(f + 14 + 18, mac_b, 6, "to us");
	/* Nobody answers for an address that is not configured. */
	cr_assert_eq(send(s, f, t_arp_request(f, mac_b, "198.18.0.2", "198.18.0.99"), 0), 60);
	uint8_t ip99[16];
	t_gid4("198.18.0.99", ip99);
	bool answered = false;
	for (int tries = 0; tries < 10; tries++) {
		n = recv_frame(s, 0x0806, f, sizeof(f), 500);
		if (n == 0)
			break;
		if (f[14 + 7] == 2 && memcmp(f + 14 + 14, ip99 + 12, 4) == 0)
			answered = true;
	}
	cr_expect(!answered);
	close(s);
}

enum lab_mode { LAB_AF_PACKET, LAB_AF_XDP, LAB_SHARED };

/* Does malformed frame @p i reach the daemon through the PMD of @p mode? */
static bool
frame_reaches(enum lab_mode mode, unsigned int i)
{
	const char *c = t_bad_frames[i].counter;

	if (mode == LAB_SHARED)
		return strcmp(c, "drop_icrc") == 0; /* the XDP program passes odd IP to the kernel */
	if (mode == LAB_AF_PACKET)
		/* net_af_packet joins a PACKET_FANOUT group with FLAG_DEFRAG: the kernel
		 * holds IP fragments for reassembly, a lone fragment never arrives. */
		return strcmp(c, "drop_ip_fragment") != 0;
	return true;
}

static void
malformed_frames_are_counted(enum lab_mode mode)
{
	uint8_t mac_a[6], mac_b[6], f[2048], gid_a[16], gid_b[16];
	char buf[16384];
	int s = raw_socket('b', mac_b);
	long long sent = 0;

	port_mac('a', mac_a);
	/* In shared mode the daemons use the kernel's addresses. */
	t_gid4(mode != LAB_SHARED ? T_IP_A : "198.18.0.1", gid_a);
	t_gid4(mode != LAB_SHARED ? T_IP_B : "198.18.0.2", gid_b);
	for (unsigned int i = 0; i < t_n_bad_frames; i++) {
		if (!frame_reaches(mode, i))
			continue;
		size_t n = t_bad_frames[i].make(f, sizeof(f), mac_a, mac_b, gid_b, gid_a);
		cr_assert_eq(send(s, f, n, 0), (ssize_t)n, "%s", t_bad_frames[i].what);
		sent++;
	}
	size_t n = t_roce_frame(f, sizeof(f), mac_a, mac_b, gid_b, gid_a, 0x12, 256);
	cr_assert_eq(send(s, f, n, 0), (ssize_t)n);
	close(s);
	cr_expect_eq(wait_counter('a', "rx_no_qp", 1), 1, "the valid frame: no such QP");
	cr_expect_eq(wait_counter('a', "rx_drops", sent), sent);
	telemetry('a', "/roce/port/stats,0", buf, sizeof(buf));
	cr_expect_eq(t_json_int(buf, "rx_roce"), 1, "%s", buf);
	for (unsigned int i = 0; i < t_n_bad_frames; i++) {
		if (frame_reaches(mode, i))
			cr_expect_eq(t_json_int(buf, t_bad_frames[i].counter), 1, "%s: %s",
				     t_bad_frames[i].what, t_bad_frames[i].counter);
	}
}

Test(lab_af_packet, malformed_frames_are_dropped_and_counted)
{
	lab_up("tlp4", "");
	malformed_frames_are_counted(LAB_AF_PACKET);
	/* and the daemon is still fine */
	cr_expect_eq(lab("run b ping -c 1 -W 3 " T_IP_A), 0, "%s", out);
}

/* The PID of host @p host's daemon, from `lab.sh status`. */
static pid_t
daemon_pid(char host)
{
	char key[16];
	const char *p;

	cr_assert_eq(lab("status"), 0, "%s", out);
	snprintf(key, sizeof(key), "host %c:", host);
	p = strstr(out, key);
	cr_assert_not_null(p, "%s", out);
	p = strstr(p, "daemon pid ");
	cr_assert_not_null(p, "%s", out);
	return (pid_t)atoi(p + 11);
}

/*
 * A frame the kernel finds no room for in net_af_packet's receive ring is
 * lost: counted as eth_imissed, never silently (DPDK 22.11's PMD reports
 * no imissed; the daemon reads the sockets' PACKET_STATISTICS). Daemon a is
 * stopped while 6 000 frames arrive for its 2 048-slot ring; afterwards
 * every frame is either processed (rx_no_qp: no such QP) or counted missed.
 */
Test(lab_af_packet, receive_ring_overruns_are_counted_as_imissed)
{
	enum { SENT = 6000 };
	uint8_t mac_a[6], mac_b[6], f[2048], gid_a[16], gid_b[16];
	char buf[16384];
	long long missed = -1, seen = -1;

	lab_up("tlp7", "");
	pid_t pid = daemon_pid('a');
	int s = raw_socket('b', mac_b);

	port_mac('a', mac_a);
	t_gid4(T_IP_A, gid_a);
	t_gid4(T_IP_B, gid_b);
	size_t n = t_roce_frame(f, sizeof(f), mac_a, mac_b, gid_b, gid_a, 0x12, 256);
	cr_assert_eq(kill(pid, SIGSTOP), 0, "%s", strerror(errno));
	for (int i = 0; i < SENT; i++)
		if (send(s, f, n, 0) != (ssize_t)n) {
			kill(pid, SIGCONT);
			cr_assert_fail("send %d: %s", i, strerror(errno));
		}
	usleep(200000);
	cr_assert_eq(kill(pid, SIGCONT), 0, "%s", strerror(errno));
	close(s);
	for (int i = 0; i < 60; i++) {
		telemetry('a', "/roce/port/stats,0", buf, sizeof(buf));
		missed = t_json_int(buf, "eth_imissed");
		seen = t_json_int(buf, "rx_no_qp");
		if (missed + seen >= SENT)
			break; /* (the kernel's own ND or ARP may be among the missed) */
		usleep(50000);
	}
	cr_expect_gt(missed, 0, "a full ring lost frames unseen: %s", buf);
	cr_expect(missed + seen >= SENT && missed + seen <= SENT + 8,
		  "missed %lld + processed %lld of %d: %s", missed, seen, SENT, buf);
	/* and the daemon is still fine */
	cr_expect_eq(lab("run b ping -c 1 -W 3 " T_IP_A), 0, "%s", out);
}

Test(lab_af_packet, jumbo_roce_frames_arrive_whole)
{
	uint8_t mac_a[6], mac_b[6], f[8192], gid_a[16], gid_b[16];
	char buf[16384];

	/* mtu 4200 needs framesz=4608 (lab.sh sets it); 4096-byte payloads */
	lab_up("tlp6", "-m 4200");
	int s = raw_socket('b', mac_b);
	port_mac('a', mac_a);
	t_gid4(T_IP_A, gid_a);
	t_gid4(T_IP_B, gid_b);
	size_t n = t_roce_frame(f, sizeof(f), mac_a, mac_b, gid_b, gid_a, 0x12, 4096);
	cr_assert_gt(n, 4096);
	cr_assert_eq(send(s, f, n, 0), (ssize_t)n);
	close(s);
	cr_expect_eq(wait_counter('a', "rx_no_qp", 1), 1, "the 4096-byte frame arrived valid");
	telemetry('a', "/roce/port/stats,0", buf, sizeof(buf));
	cr_expect_eq(t_json_int(buf, "rx_drops"), 0, "nothing truncated: %s", buf);
	telemetry('a', "/roce/port/info,0", buf, sizeof(buf));
	cr_expect(t_json_has(buf, "\"ib_mtu\":4096"), "RoCE MTU 4096: %s", buf);
}

Test(lab_af_packet, capture_to_pcapng)
{
	char path[256];

	lab_up("tlp5", "-P");
	cr_expect_eq(lab("run b ping -c 2 -W 3 " T_IP_A), 0, "%s", out);
	malformed_frames_are_counted(LAB_AF_PACKET);
	cr_assert(lab_down(), "%s", out);
	snprintf(path, sizeof(path), "/tmp/roce-lab/%s/a.pcapng", lab_name);
	int rc = t_run(out, sizeof(out), 60, "tshark -r %s -Y infiniband 2>/dev/null | wc -l", path);
	cr_assert_eq(rc, 0, "%s", out);
	cr_expect_geq(atoi(out), 1, "RoCE frames in %s", path);
	rc = t_run(out, sizeof(out), 60, "tshark -r %s -Y icmp 2>/dev/null | wc -l", path);
	cr_expect_geq(atoi(out), 4, "pings in and out in %s", path);
}

/* ---- af_xdp ---- */

/*
 * The relay (lab.sh -R, test/interop/lossy_link) switches its impairments
 * by signal with no gap in the link. Restarting it (lab.sh relay) cut the
 * link for 1.7-2.2 s under load (session 16), longer than an RC QP's eight
 * ACK timeouts at 67 ms: the soak's rc runs across a restart ended in
 * retry exceeded with their peer's QP never seeing a retransmission. A
 * ping every 5 ms across the link while the impairments (30 % loss of every
 * frame) go on and off: no silence longer than 0.5 s, losses only while on,
 * and the relay's record of the impaired phase.
 */
Test(lab_af_packet, relay_impairments_switch_with_no_gap_in_the_link)
{
	char ping_log[] = "/tmp/tlr1-ping.XXXXXX", path[128], line[512];
	double t, last_t = 0, silence = 0;
	int fd, seq, replies = 0, late_replies = 0;
	long long dropped[2] = { -1, -1 };

	lab_up("tlr1", "-R");
	cr_assert_eq(lab("relay --loss 30 --all --seed 7 --paused"), 0, "%s", out);
	fd = mkstemp(ping_log);
	cr_assert_geq(fd, 0, "%s", strerror(errno));
	close(fd);
	/* 600 pings, 3 s: on at 0.7 s, off 1 s later; the last 100 after it */
	int rc = t_run(out, sizeof(out), 60,
		       "export LAB_BUILD=%s; L=%s/scripts/lab.sh; "
		       "ip netns exec tlr1-a ping -D -n -i 0.005 -W 1 -c 600 198.18.0.2 > %s 2>&1 & "
		       "p=$!; sleep 0.7; $L -n tlr1 impair on && sleep 1 && $L -n tlr1 impair off; "
		       "r=$?; wait $p; exit $r",
		       env("ROCE_BUILD_DIR"), env("ROCE_SOURCE_DIR"), ping_log);
	cr_assert_eq(rc, 0, "impair on/off failed:\n%s", out);
	FILE *f = fopen(ping_log, "r");
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f) != NULL) {
		const char *q = strstr(line, "icmp_seq=");
		if (line[0] != '[' || q == NULL || sscanf(line + 1, "%lf", &t) != 1 ||
		    sscanf(q, "icmp_seq=%d", &seq) != 1)
			continue;
		if (last_t > 0 && t - last_t > silence)
			silence = t - last_t;
		last_t = t;
		replies++;
		late_replies += seq > 500;
	}
	fclose(f);
	unlink(ping_log);
	cr_expect_lt(silence, 0.5, "the link was silent for %.3f s", silence);
	cr_expect(replies > 100 && replies < 600, "%d of 600 replies: no loss while on?", replies);
	cr_expect_eq(late_replies, 100, "%d of the last 100 pings answered: still lossy after off?",
		     late_replies);
	snprintf(path, sizeof(path), "%s/tlr1/relay.log",
		 getenv("LAB_STATE") ? getenv("LAB_STATE") : "/tmp/roce-lab");
	f = fopen(path, "r");
	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f) != NULL) {
		const char *q = strstr(line, "lossy_link: impaired phase: ");
		const char *d = q ? strstr(q, "dropped=") : NULL;
		if (d != NULL)
			dropped[strstr(q, "A->B") != NULL ? 0 : 1] = atoll(d + 8);
	}
	fclose(f);
	cr_expect(dropped[0] > 0 && dropped[1] > 0, "impaired phase dropped %lld / %lld", dropped[0],
		  dropped[1]);
}

TestSuite(lab_af_xdp, .fini = fini, .timeout = 120);

Test(lab_af_xdp, daemons_resolve_each_other_and_count_drops)
{
	lab_up("tlx1", "-p af_xdp");
	daemons_resolve_each_other();
	malformed_frames_are_counted(LAB_AF_XDP);
}

Test(lab_af_xdp, shared_nic_mode_splits_roce_from_the_rest)
{
	lab_up("tlx2", "-p af_xdp_shared");
	/* ARP, ICMP: the kernel (the daemon never sees them) */
	cr_expect_eq(lab("run b ping -c 1 -W 3 198.18.0.1"), 0, "%s", out);
	/* the daemons found each other through the kernel's neighbour tables */
	uint8_t mac_a[6], mac_b[6];
	port_mac('a', mac_a);
	port_mac('b', mac_b);
	expect_resolved('a', "198.18.0.2", mac_b);
	expect_resolved('b', "198.18.0.1", mac_a);
	/* RoCE: the daemon */
	malformed_frames_are_counted(LAB_SHARED);
	char buf[16384];
	telemetry('a', "/roce/port/stats,0", buf, sizeof(buf));
	cr_expect_eq(t_json_int(buf, "rx_arp"), 0, "ARP stayed with the kernel: %s", buf);
	cr_expect_eq(t_json_int(buf, "rx_icmp_echo"), 0);
}
