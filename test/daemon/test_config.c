/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * roce-daemon configuration: every bad input gives a clear error naming the
 * line, never a crash; good input lands in the right fields; the example
 * file parses; the binary rejects bad files with a non-zero exit.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "xport.h"
#include "helpers.h"

static struct config cfg;
static char err[CONFIG_ERR_LEN];

#define PORT_OK "[port p0]\ndevargs = net_null0\n"

struct bad_case {
	const char *text;
	const char *expect;   /* substring of the error, including the line */
};

static const struct bad_case bad_cases[] = {
	{ "", "no [port NAME] section" },
	{ "[daemon]\nsocket = /tmp/x\n", "no [port NAME] section" },
	{ PORT_OK "[daemon]\nfoo = 1\n", "t:4: [daemon] unknown key 'foo'" },
	{ PORT_OK "mtu = 99999\n", "t:3: [port p0] mtu = 99999: out of range 384..9600" },
	{ PORT_OK "mtu = 15OO\n", "t:3: [port p0] mtu = 15OO: not a non-negative decimal number" },
	{ PORT_OK "mtu = -1\n", "t:3: [port p0] mtu = -1: not a non-negative" },
	{ PORT_OK "mtu = 99999999999999999999\n", "t:3: [port p0] mtu" },
	{ PORT_OK "mtu =\n", "t:3: [port p0] mtu: empty value" },
	{ PORT_OK "mtu = 1500\nmtu = 1400\n", "t:4: [port p0] mtu given twice (first at line 3)" },
	{ PORT_OK "ipv4 = 198.18.0.1/33\n", "t:3: [port p0] ipv4 = 198.18.0.1/33: bad prefix length" },
	{ PORT_OK "ipv4 = 2001:db8::1\n", "not an IPv4 address (use ipv6 for IPv6)" },
	{ PORT_OK "ipv4 = 224.0.0.1/4\n", "not a unicast address" },
	{ PORT_OK "ipv4 = 198.18.0.1, 198.18.0.1\n", "address listed twice" },
	{ PORT_OK "ipv4 = 198.18.0.1,,198.18.0.2\n", "empty address in list" },
	{ PORT_OK "ipv6 = fe80::1/64\n", "link-local address" },
	{ PORT_OK "ipv6 = ::ffff:198.18.0.1\n", "IPv4-mapped address: use the ipv4 key" },
	{ PORT_OK "ipv6 = 198.18.0.1\n", "not an IPv6 address (use ipv4 for IPv4)" },
	{ PORT_OK "gateway4 = 198.18.0.1/24\n", "a next hop takes no prefix length" },
	{ PORT_OK "mode = turbo\n", "t:3: [port p0] mode = turbo: not one of dedicated|shared" },
	{ PORT_OK "mode = shared\nipv4 = 198.18.0.1\n", "t:1: [port p0]: mode = shared needs a net_af_xdp port" },
	{ PORT_OK "promisc = maybe\n", "not a boolean (yes/no)" },
	{ PORT_OK "ecn = ce\n", "t:3: [port p0] ecn = ce: not one of none|ect1|ect0" },
	{ PORT_OK "cc = timely\n", "t:3: [port p0] cc = timely: not one of none|dcqcn" },
	{ PORT_OK "dscp = 64\n", "t:3: [port p0] dscp = 64: out of range 0..63" },
	{ PORT_OK "cnp_pcp = 8\n", "t:3: [port p0] cnp_pcp = 8: out of range 0..7" },
	{ PORT_OK "vlan = 4095\n", "t:3: [port p0] vlan = 4095: out of range 0..4094" },
	{ PORT_OK "vlan = 0x64\n", "t:3: [port p0] vlan = 0x64: not a non-negative decimal number" },
	{ "[port p0]\ndevargs = net_af_xdp0,iface=x\nmode = shared\nipv4 = 198.18.0.1/24\nvlan = 100\n",
	  "t:1: [port p0]: vlan needs mode = dedicated" },
	{ PORT_OK "dcqcn_g_inv = 0\n", "t:3: [port p0] dcqcn_g_inv = 0: out of range 1..65536" },
	{ PORT_OK "dcqcn_timer_us = 0\n", "t:3: [port p0] dcqcn_timer_us = 0: out of range" },
	{ "[daemon]\nidle = lazy\n" PORT_OK, "t:2: [daemon] idle = lazy: not one of none|pause|yield|sleep" },
	{ "[daemon]\nhandoff_ring = 1000\n" PORT_OK, "t:2: [daemon] handoff_ring = 1000: not a power of two" },
	{ "[daemon]\nlcores = 0&1\n" PORT_OK, "t:1: [daemon] lcores = 0&1: only digits" },
	{ "[daemon]\nsocket = relative.sock\n" PORT_OK, "t:1: [daemon] socket = relative.sock: must be an absolute path" },
	{ "[daemon]\n[daemon]\n" PORT_OK, "t:2: duplicate [daemon] section (first at line 1)" },
	{ PORT_OK "[port p0]\ndevargs = net_null1\n", "t:3: duplicate [port p0] (first at line 1)" },
	{ "[port]\ndevargs = x\n", "t:1: [port]: a port needs a name" },
	{ "[port a/b]\ndevargs = x\n", "t:1: [port a/b]: a port needs a name" },
	{ "[port p0]\nmtu = 1500\n", "t:1: [port p0]: devargs is required" },
	{ "[port p0]\n", "t:1: [port p0]: devargs is required" },
	{ "[ports]\n" PORT_OK, "t:1: unknown section [ports]" },
	{ "[port p0\n" PORT_OK, "t:1: section header without ']'" },
	{ "mtu = 1500\n" PORT_OK, "t:1: key 'mtu' outside any section" },
	{ PORT_OK "this line has no equals sign\n", "t:3: syntax error" },
	{ PORT_OK "[port p1]\ndevargs = net_null0\n", "t:3: [port p1]: same devargs as [port p0]" },
	{ PORT_OK "ipv4 = 198.18.0.1\n[port p1]\ndevargs = net_null1\nipv4 = 198.18.0.1\n",
	  "[port p1]: address 198.18.0.1/32 is also on [port p0]" },
};

Test(config, bad_inputs_name_the_line)
{
	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		int rc = config_load_string(bad_cases[i].text, "t", &cfg, err, sizeof(err));

		cr_expect_eq(rc, -1, "case %zu accepted: %s", i, bad_cases[i].text);
		cr_expect(strstr(err, bad_cases[i].expect) != NULL,
			  "case %zu: expected \"%s\" in:\n%s", i, bad_cases[i].expect, err);
	}
}

Test(config, every_error_is_reported)
{
	const char *text = "[daemon]\nfoo = 1\nburst = 0\n[port p0]\nmtu = 1\ndevargs = net_null0\n"
			   "bar = 2\n";

	cr_assert_eq(config_load_string(text, "f.conf", &cfg, err, sizeof(err)), -1);
	cr_expect(strstr(err, "f.conf:2:") != NULL, "%s", err);
	cr_expect(strstr(err, "f.conf:3: [daemon] burst = 0: out of range 1..256") != NULL, "%s", err);
	cr_expect(strstr(err, "f.conf:5:") != NULL, "%s", err);
	cr_expect(strstr(err, "f.conf:7: [port p0] unknown key 'bar'") != NULL, "%s", err);
}

Test(config, long_and_binary_lines_are_rejected)
{
	char text[2048];

	snprintf(text, sizeof(text), PORT_OK "ipv4 = %0400d\n", 1);
	cr_assert_eq(config_load_string(text, "t", &cfg, err, sizeof(err)), -1);
	cr_expect(strstr(err, "t:3: line too long") != NULL, "%s", err);
	/* a line after the long one still has the right number */
	snprintf(text, sizeof(text), PORT_OK "ipv4 = %0400d\nmtu = 1\n", 1);
	cr_assert_eq(config_load_string(text, "t", &cfg, err, sizeof(err)), -1);
	cr_expect(strstr(err, "t:4: [port p0] mtu = 1: out of range") != NULL, "%s", err);
}

Test(config, binary_garbage_never_crashes)
{
	char text[512];
	unsigned int seed = 7;

	for (int round = 0; round < 200; round++) {
		for (size_t i = 0; i + 1 < sizeof(text); i++) {
			seed = seed * 1103515245u + 12345u;
			text[i] = (char)(1 + (seed >> 16) % 255);
		}
		text[sizeof(text) - 1] = '\0';
		/* Random bytes are never a whole valid config; all must be rejected. */
		cr_expect_eq(config_load_string(text, "g", &cfg, err, sizeof(err)), -1);
		cr_expect(strncmp(err, "g:", 2) == 0, "%s", err);
	}
}

Test(config, good_file_sets_fields)
{
	const char *text =
		"; comment\n"
		"[daemon]\n"
		"  socket = /tmp/roce.sock ; inline comment\n"
		"lcores = 0@0,1@1\n"
		"idle = yield\n"
		"max_qps = 64\n"
		"telemetry = off\n"
		"[port net0]\n"
		"devargs = net_af_packet0,iface=veth0,qpairs=2\n"
		"ipv4 = 198.18.0.1/24, 198.18.1.1\n"
		"ipv4 = 198.19.0.1/16\n"
		"ipv6 = 2001:db8::1/64\n"
		"gateway4 = 198.18.0.254\n"
		"resolve = 198.18.0.2, 2001:db8::2\n"
		"mtu = 4200\n"
		"rx_queues = 2\n"
		"[port net1]\n"
		"devargs = net_memif0,bsize=4608\n";

	cr_assert_eq(config_load_string(text, "good", &cfg, err, sizeof(err)), 0, "%s", err);
	cr_expect_str_eq(cfg.daemon.socket_path, "/tmp/roce.sock");
	cr_expect_str_eq(cfg.daemon.lcores, "0@0,1@1");
	cr_expect_eq(cfg.daemon.idle, CONFIG_IDLE_YIELD);
	cr_expect_eq(cfg.daemon.max_qps, 64);
	cr_expect_eq(cfg.daemon.max_mrs, 4096, "default kept");
	cr_expect_eq(cfg.daemon.telemetry, false);
	cr_assert_eq(cfg.n_ports, 2);
	const struct config_port *p = &cfg.ports[0];
	cr_expect_str_eq(p->name, "net0");
	cr_expect_eq(p->line, 8);
	cr_expect_eq(p->mtu, 4200);
	cr_expect_eq(p->rx_queues, 2);
	cr_expect_eq(p->tx_queues, 0);
	cr_assert_eq(p->n_addrs, 4);
	uint8_t g[16];
	t_gid4("198.18.1.1", g);
	cr_expect_arr_eq(p->addrs[1].addr, g, 16);
	cr_expect_eq(p->addrs[1].prefix_len, 128, "no prefix: host route");
	cr_expect_eq(p->addrs[0].prefix_len, 120, "/24 stored as IPv4-mapped /120");
	cr_expect_eq(p->addrs[2].prefix_len, 112);
	cr_expect(p->addrs[3].ipv6);
	cr_expect(p->has_gateway4);
	cr_expect(!p->has_gateway6);
	cr_expect_eq(p->n_resolve, 2);
	cr_expect(p->resolve[1].ipv6);
	cr_expect_eq(cfg.ports[1].mtu, 1500, "default");
	cr_expect_eq(cfg.ports[1].mode, CONFIG_PORT_DEDICATED);

	char s[64];
	config_addr_format(&p->addrs[0], s, sizeof(s));
	cr_expect_str_eq(s, "198.18.0.1/24");
	config_addr_format(&p->addrs[3], s, sizeof(s));
	cr_expect_str_eq(s, "2001:db8::1/64");
}

/* [port] vlan: untagged unless given; a VID 1..4094 as given. */
Test(config, vlan_key)
{
	cr_assert_eq(config_load_string(PORT_OK, "v", &cfg, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(cfg.ports[0].vlan, 0, "untagged by default");
	cr_assert_eq(config_load_string(PORT_OK "vlan = 100\n", "v", &cfg, err, sizeof(err)), 0,
		     "%s", err);
	cr_expect_eq(cfg.ports[0].vlan, 100);
	cr_assert_eq(config_load_string(PORT_OK "vlan = 4094\n", "v", &cfg, err, sizeof(err)), 0,
		     "%s", err);
	cr_expect_eq(cfg.ports[0].vlan, 4094);
}

/* The [port] congestion keys: defaults as NICs and the DCQCN paper, then as given. */
Test(config, congestion_control_keys)
{
	struct xport_cc cc;

	cr_assert_eq(config_load_string(PORT_OK, "cc", &cfg, err, sizeof(err)), 0, "%s", err);
	config_port_cc(&cfg.ports[0], 25000, &cc);
	cr_expect_eq(cc.ecn, XPORT_ECN_ECT0);
	cr_expect_eq(cc.algo, XPORT_CC_DCQCN);
	cr_expect(cc.np);
	cr_expect_eq(cc.cnp_interval_ns, 50000);
	cr_expect_eq(cc.dscp, 0);
	cr_expect_eq(cc.cnp_dscp, 48);
	cr_expect_eq(cc.cnp_pcp, 6);
	cr_expect(!cc.pace_line);
	cr_expect_eq(cc.dcqcn.g_inv, 256);
	cr_expect_eq(cc.dcqcn.alpha_ns, 55000);
	cr_expect_eq(cc.dcqcn.timer_ns, 55000);
	cr_expect_eq(cc.dcqcn.bytes, 10u << 20);
	cr_expect_eq(cc.dcqcn.f, 5);
	cr_expect_eq(cc.dcqcn.ai_kbps, 40000);
	cr_expect_eq(cc.dcqcn.hai_kbps, 400000);
	cr_expect_eq(cc.dcqcn.min_kbps, 1000);
	cr_expect_eq(cc.dcqcn.line_kbps, 25000000, "the link speed");
	cr_expect_eq(cc.pace_burst, 16384);
	cr_expect_eq(cc.delay.target_ns, 500000);
	cr_expect_eq(cc.delay.ai_kbps, 5000);
	cr_expect_eq(cc.delay.beta_pct, 80);
	cr_expect_eq(cc.delay.max_md_pct, 50);
	cr_expect_eq(cc.delay.min_kbps, 1000);
	cr_expect_eq(cc.delay.line_kbps, 25000000);
	config_port_cc(&cfg.ports[0], 0, &cc);
	cr_expect_eq(cc.dcqcn.line_kbps, CONFIG_CC_LINE_MBPS_DEFAULT * 1000u, "no link speed");

	cr_assert_eq(config_load_string(PORT_OK "ecn = ect1\ncc = none\ncnp = no\n"
					"cnp_interval_us = 4\ndscp = 26\npcp = 3\ncnp_dscp = 46\n"
					"cnp_pcp = 7\ndcqcn_g_inv = 16\ndcqcn_alpha_us = 100\n"
					"dcqcn_timer_us = 300\ndcqcn_bytes = 0\ndcqcn_f = 1\n"
					"dcqcn_ai_mbps = 5\ndcqcn_hai_mbps = 50\n"
					"dcqcn_min_mbps = 10\ndcqcn_line_mbps = 100\n"
					"dcqcn_pace_line = yes\n",
				     "cc", &cfg, err, sizeof(err)), 0, "%s", err);
	config_port_cc(&cfg.ports[0], 25000, &cc);
	cr_expect_eq(cc.ecn, XPORT_ECN_ECT1);
	cr_expect_eq(cc.algo, XPORT_CC_NONE);
	cr_expect(!cc.np);
	cr_expect_eq(cc.cnp_interval_ns, 4000);
	cr_expect_eq(cc.dscp, 26);
	cr_expect_eq(cc.pcp, 3);
	cr_expect_eq(cc.cnp_dscp, 46);
	cr_expect_eq(cc.cnp_pcp, 7);
	cr_expect(cc.pace_line);
	cr_expect_eq(cc.dcqcn.g_inv, 16);
	cr_expect_eq(cc.dcqcn.alpha_ns, 100000);
	cr_expect_eq(cc.dcqcn.timer_ns, 300000);
	cr_expect_eq(cc.dcqcn.bytes, 0);
	cr_expect_eq(cc.dcqcn.f, 1);
	cr_expect_eq(cc.dcqcn.ai_kbps, 5000);
	cr_expect_eq(cc.dcqcn.hai_kbps, 50000);
	cr_expect_eq(cc.dcqcn.min_kbps, 10000);
	cr_expect_eq(cc.dcqcn.line_kbps, 100000, "configured line rate wins");

	cr_assert_eq(config_load_string(PORT_OK "cc = delay\ndelay_target_us = 1500\n"
					"delay_ai_mbps = 2\ndelay_beta_pct = 50\n"
					"delay_max_md_pct = 30\npace_burst_bytes = 4480\n"
					"dcqcn_min_mbps = 3\ndcqcn_line_mbps = 100\n",
				     "cc", &cfg, err, sizeof(err)), 0, "%s", err);
	config_port_cc(&cfg.ports[0], 25000, &cc);
	cr_expect_eq(cc.algo, XPORT_CC_DELAY);
	cr_expect_eq(cc.pace_burst, 4480);
	cr_expect_eq(cc.delay.target_ns, 1500000);
	cr_expect_eq(cc.delay.ai_kbps, 2000);
	cr_expect_eq(cc.delay.beta_pct, 50);
	cr_expect_eq(cc.delay.max_md_pct, 30);
	cr_expect_eq(cc.delay.min_kbps, 3000, "the floor is shared");
	cr_expect_eq(cc.delay.line_kbps, 100000, "so is the line rate");
	/* out of range: a clear error */
	cr_expect_neq(config_load_string(PORT_OK "delay_beta_pct = 0\n", "cc", &cfg, err,
					 sizeof(err)), 0);
	cr_expect_neq(config_load_string(PORT_OK "delay_max_md_pct = 101\n", "cc", &cfg, err,
					 sizeof(err)), 0);
	cr_expect_neq(config_load_string(PORT_OK "cc = swift\n", "cc", &cfg, err, sizeof(err)), 0);
}

Test(config, users_and_groups_by_number_or_name)
{
	uint32_t id = 7, ids[4];

	cr_assert_eq(config_user_id("0", &id), 0);
	cr_assert_eq(id, 0);
	cr_assert_eq(config_user_id("65534", &id), 0);
	cr_assert_eq(id, 65534);
	id = 7;
	cr_assert_eq(config_user_id("root", &id), 0);
	cr_assert_eq(id, 0);
	cr_assert_eq(config_group_id("root", &id), 0);
	cr_assert_eq(id, 0);
	cr_assert_eq(config_user_id("", &id), -1);
	cr_assert_eq(config_user_id("no-such-user-roce", &id), -1);
	cr_assert_eq(config_group_id("no-such-group-roce", &id), -1);
	cr_assert_eq(config_user_id("4294967295", &id), -1, "(uid_t)-1 is not a user");
	cr_assert_eq(config_user_id("12x", &id), -1);
	cr_assert_eq(config_id_list("root,65534", false, ids, 4), 2);
	cr_assert_eq(ids[0], 0);
	cr_assert_eq(ids[1], 65534);
}

Test(config, missing_file)
{
	cr_assert_eq(config_load("/nonexistent/roce.conf", &cfg, err, sizeof(err)), -1);
	cr_expect(strstr(err, "/nonexistent/roce.conf: cannot open: No such file") != NULL, "%s", err);
}

Test(config, example_file_parses)
{
	const char *src = getenv("ROCE_SOURCE_DIR");
	char path[1024];

	cr_assert_not_null(src, "ROCE_SOURCE_DIR not set");
	snprintf(path, sizeof(path), "%s/config/roce-daemon.conf.example", src);
	cr_assert_eq(config_load(path, &cfg, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(cfg.n_ports, 1);
	cr_expect_eq(cfg.ports[0].n_addrs, 2);
}

/* ---- the binary ---- */

static const char *
daemon_bin(void)
{
	const char *b = getenv("ROCE_DAEMON");

	cr_assert_not_null(b, "ROCE_DAEMON not set");
	return b;
}

static void
write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
}

Test(daemon_cli, bad_config_exits_1_with_the_line)
{
	char out[8192], path[] = "/tmp/roce-test-badXXXXXX";
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	close(fd);
	write_file(path, "[daemon]\nidle = lazy\n[port p0]\ndevargs = net_null0\nmtu = 70000\n");
	/* Full start (not --check-config): the config is rejected before EAL. */
	int rc = t_run(out, sizeof(out), 30, "%s --no-huge -- --config %s", daemon_bin(), path);
	cr_expect_eq(rc, 1, "exit status %d, output:\n%s", rc, out);
	cr_expect(strstr(out, ":2: [daemon] idle = lazy") != NULL, "%s", out);
	cr_expect(strstr(out, ":5: [port p0] mtu = 70000") != NULL, "%s", out);
	cr_expect(strstr(out, "configuration rejected") != NULL, "%s", out);
	rc = t_run(out, sizeof(out), 30, "%s --check-config %s", daemon_bin(), path);
	cr_expect_eq(rc, 1, "%s", out);
	unlink(path);
}

Test(daemon_cli, usage_errors)
{
	char out[16384];

	cr_expect_eq(t_run(out, sizeof(out), 30, "%s", daemon_bin()), 1);
	cr_expect(strstr(out, "--config FILE is required") != NULL, "%s", out);
	cr_expect_eq(t_run(out, sizeof(out), 30, "%s --config /nonexistent.conf", daemon_bin()), 1);
	cr_expect(strstr(out, "/nonexistent.conf: cannot open") != NULL, "%s", out);
	cr_expect_eq(t_run(out, sizeof(out), 30, "%s --bogus", daemon_bin()), 1);
	cr_expect_eq(t_run(out, sizeof(out), 30, "%s --help", daemon_bin()), 0);
	cr_expect(strstr(out, "neigh_retry_ms") != NULL, "--help lists the keys:\n%s", out);
}

Test(daemon_cli, start_failure_is_clear)
{
	char out[8192], path[] = "/tmp/roce-test-pmdXXXXXX";
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	close(fd);
	/* An interface that does not exist: EAL starts, the port does not. */
	write_file(path, "[daemon]\nlcores = 0,1\neal_args = --no-huge --no-shconf -m 128 "
		   "--no-pci --file-prefix=rdcli --no-telemetry\n[port p0]\n"
		   "devargs = net_af_packet0,iface=rdt-nonexistent0\n");
	int rc = t_run(out, sizeof(out), 60, "%s --config %s", daemon_bin(), path);
	cr_expect_eq(rc, 2, "exit status %d:\n%s", rc, out);
	cr_expect(strstr(out, "[port p0] cannot probe 'net_af_packet0,iface=rdt-nonexistent0'") != NULL,
		  "%s", out);
	unlink(path);
}
