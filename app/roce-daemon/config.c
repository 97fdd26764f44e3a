/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * roce-daemon configuration: INI through inih, driven by one key table.
 *
 * inih does not tell the handler its line number (Debian builds it without
 * INI_HANDLER_LINENO), so we feed it through our own line reader that counts
 * lines, recognises section headers itself (to report empty and duplicate
 * sections) and rejects lines longer than inih's buffer instead of letting
 * them split silently.
 */
#include "config.h"
#include "xport.h"

#include <arpa/inet.h>
#include <errno.h>
#include <grp.h>
#include <ini.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

enum key_type {
	KEY_U32,
	KEY_BOOL,
	KEY_STRING,
	KEY_ENUM,
	KEY_ADDRS4,   /**< list of IPv4 addresses with prefix */
	KEY_ADDRS6,   /**< list of IPv6 addresses with prefix */
	KEY_GATEWAY4,
	KEY_GATEWAY6,
	KEY_RESOLVE,  /**< list of neighbour addresses, either family */
};

struct config_key {
	const char *name;
	enum key_type type;
	size_t offset;            /**< in struct config_daemon or struct config_port */
	size_t size;              /**< bytes of a KEY_STRING field */
	uint32_t min, max;        /**< KEY_U32 range */
	const char *const *enum_names;
	const char *def;          /**< default, parsed like a value; NULL: none */
	const char *help;
};

static const char *const idle_names[] = { "none", "pause", "yield", "sleep", NULL };
static const char *const mode_names[] = { "dedicated", "shared", NULL };
/* index = the ECN codepoint (RFC 3168 section 5) */
static const char *const ecn_names[] = { "none", "ect1", "ect0", NULL };
static const char *const cc_names[] = { "none", "dcqcn", "delay", NULL };

#define D_FIELD(f) offsetof(struct config_daemon, f), sizeof(((struct config_daemon *)0)->f)
#define P_FIELD(f) offsetof(struct config_port, f), sizeof(((struct config_port *)0)->f)

#define U32(n, fld, lo, hi, d, h) { n, KEY_U32, fld, lo, hi, NULL, d, h }
#define BOOL(n, fld, d, h) { n, KEY_BOOL, fld, 0, 0, NULL, d, h }
#define STR(n, fld, d, h) { n, KEY_STRING, fld, 0, 0, NULL, d, h }
#define ENUM(n, fld, names, d, h) { n, KEY_ENUM, fld, 0, 0, names, d, h }

static const struct config_key daemon_keys[] = {
	STR("socket", D_FIELD(socket_path), "/run/roce-dpdk/roce.sock",
	    "UNIX socket the verbs shim connects to"),
	STR("socket_owner", D_FIELD(socket_owner), "",
	    "user owning the socket (name or number); empty: the daemon's"),
	STR("socket_group", D_FIELD(socket_group), "",
	    "group owning the socket (name or number); empty: the daemon's"),
	STR("socket_mode", D_FIELD(socket_mode), "0660",
	    "socket permissions (octal); connecting needs write permission"),
	STR("allowed_users", D_FIELD(allowed_users), "",
	    "users allowed to connect, comma separated (SO_PEERCRED); empty: any who may open the socket"),
	STR("allowed_groups", D_FIELD(allowed_groups), "",
	    "groups allowed to connect (primary or supplementary), comma separated; empty: any"),
	U32("client_max_pds", D_FIELD(client_max_pds), 0, 1u << 20, "256",
	    "PDs one client may hold (0: up to max_pds)"),
	U32("client_max_mrs", D_FIELD(client_max_mrs), 0, 1u << 22, "2048",
	    "MRs one client may hold (0: up to max_mrs)"),
	U32("client_max_cqs", D_FIELD(client_max_cqs), 0, 1u << 20, "512",
	    "CQs (and completion channels) one client may hold (0: up to max_cqs)"),
	U32("client_max_qps", D_FIELD(client_max_qps), 0, 1u << 20, "512",
	    "QPs one client may hold (0: up to max_qps)"),
	U32("client_max_srqs", D_FIELD(client_max_srqs), 0, 1u << 20, "128",
	    "SRQs one client may hold (0: up to max_srqs)"),
	U32("client_max_ahs", D_FIELD(client_max_ahs), 0, 1u << 20, "2048",
	    "address handles one client may hold (0: up to the device's)"),
	U32("client_max_cm_ids", D_FIELD(client_max_cm_ids), 0, 1u << 20, "256",
	    "rdma_cm ids one client may hold, listeners' new connections included (0: up to the daemon's)"),
	U32("client_max_cm_channels", D_FIELD(client_max_cm_channels), 0, 1u << 20, "64",
	    "rdma_cm event channels one client may hold (0: up to the daemon's)"),
	U32("client_max_mr_mb", D_FIELD(client_max_mr_mb), 0, 1u << 22, "65536",
	    "MiB one client may register in all (0: no quota)"),
	U32("max_dm_kb", D_FIELD(max_dm_kb), 0, 1u << 22, "65536",
	    "KiB of device memory (ibv_alloc_dm: daemon-owned shared memory) of all clients (0: none)"),
	U32("dm_size_kb", D_FIELD(dm_size_kb), 0, 1u << 22, "1024",
	    "KiB of the largest one device memory allocation (max_dm_size; 0: no device memory)"),
	U32("client_max_dm_kb", D_FIELD(client_max_dm_kb), 0, 1u << 22, "4096",
	    "KiB of device memory one client may hold (0: up to max_dm_kb)"),
	U32("max_flows", D_FIELD(max_flows), 0, 1u << 16, "256",
	    "flow rules (ibv_create_flow) of all clients, also the rules one port holds; "
	    "0: no RAW_PACKET QPs and no flows (EOPNOTSUPP)"),
	U32("client_max_flows", D_FIELD(client_max_flows), 0, 1u << 16, "64",
	    "flow rules one client may hold (0: up to max_flows)"),
	U32("user_max_conns", D_FIELD(user_max_conns), 0, 1024, "64",
	    "connections (= pending requests) one user may have open; root exempt (0: no quota)"),
	STR("lcores", D_FIELD(lcores), "",
	    "EAL --lcores (first = control thread, rest = workers); empty: EAL default"),
	STR("eal_args", D_FIELD(eal_args), "",
	    "extra EAL arguments, e.g. --no-huge --file-prefix=a"),
	ENUM("idle", D_FIELD(idle), idle_names, "sleep",
	     "worker idle backoff: none|pause|yield|sleep"),
	U32("idle_polls", D_FIELD(idle_polls), 0, 1000000, "64",
	    "empty polls before a worker backs off"),
	U32("idle_sleep_us", D_FIELD(idle_sleep_us), 1, 100000, "20",
	    "first sleep of an idle poll when idle = sleep"),
	U32("idle_sleep_max_us", D_FIELD(idle_sleep_max_us), 1, 100000, "1000",
	    "longest idle sleep: each doubles up to it, never past the next timer"),
	U32("idle_yield_us", D_FIELD(idle_yield_us), 0, 1000000, "200",
	    "idle = sleep: yield instead of sleeping until this long after the last work"),
	U32("idle_yield_slow_us", D_FIELD(idle_yield_slow_us), 0, 1000000, "1000",
	    "a yield that returns this late turns yielding off for 100 ms; 0: never"),
	U32("idle_scan_us", D_FIELD(idle_scan_us), 0, 3600000000u, "100000",
	    "how often the workers sweep their idle QPs' send queues for posts that rang no "
	    "doorbell (a client writing its rings by hand); 0: every loop"),
	U32("idle_timer_slack_ns", D_FIELD(idle_timer_slack_ns), 1, 50000000, "1000",
	    "workers' timer slack (PR_SET_TIMERSLACK): how late an idle sleep may end"),
	U32("tx_flush_us", D_FIELD(tx_flush_us), 1, 10000, "20",
	    "buffered TX is sent at the latest after this"),
	U32("burst", D_FIELD(burst), 1, 256, "32", "RX/TX burst size"),
	U32("handoff_ring", D_FIELD(handoff_ring), 64, 65536, "1024",
	    "slots of each worker-to-worker ring (power of two)"),
	U32("max_qps", D_FIELD(max_qps), 2, 1u << 20, "1024", "QPs per device"),
	U32("max_mrs", D_FIELD(max_mrs), 1, 1u << 22, "4096", "MRs per device"),
	U32("max_pds", D_FIELD(max_pds), 1, 1u << 20, "1024", "PDs per device"),
	U32("max_cqs", D_FIELD(max_cqs), 1, 1u << 20, "1024", "CQs per device"),
	U32("max_cqe", D_FIELD(max_cqe), 1, 1u << 22, "65536", "entries per CQ"),
	U32("max_qp_wr", D_FIELD(max_qp_wr), 1, 1u << 16, "4096", "WRs per send/receive queue"),
	U32("max_sge", D_FIELD(max_sge), 1, 32, "16", "scatter/gather entries per WR"),
	U32("max_srqs", D_FIELD(max_srqs), 0, 1u << 20, "256", "SRQs per device"),
	U32("max_srq_wr", D_FIELD(max_srq_wr), 1, 1u << 16, "4096", "WRs per SRQ"),
	U32("max_inline", D_FIELD(max_inline), 0, 4096, "256", "inline data bytes per WR"),
	/* the range is the engine's (lib/xport XPORT_MAX_RD_ATOMIC); 128 as rxe */
	U32("max_rd_atomic", D_FIELD(max_rd_atomic), 1, XPORT_MAX_RD_ATOMIC, "128",
	    "outstanding RDMA READ/atomic per QP"),
	U32("max_inflight_packets", D_FIELD(max_inflight_packets), 1, 1u << 22, "256",
	    "RC packets per QP sent and not acknowledged (READ: its response packets)"),
	U32("min_inflight_packets", D_FIELD(min_inflight_packets), 1, 1u << 22, "8",
	    "floor of the RC send window after losses (= max_inflight_packets: no back-off)"),
	U32("neigh_entries", D_FIELD(neigh_entries), 16, 65536, "256", "neighbour table size"),
	U32("neigh_reachable_s", D_FIELD(neigh_reachable_s), 1, 86400, "300",
	    "a resolved neighbour is re-probed after this"),
	U32("neigh_retry_ms", D_FIELD(neigh_retry_ms), 10, 60000, "500",
	    "interval between ARP requests / neighbour solicitations"),
	U32("neigh_retries", D_FIELD(neigh_retries), 1, 100, "5",
	    "unanswered probes before a neighbour is marked failed"),
	BOOL("telemetry", D_FIELD(telemetry), "yes",
	     "register /roce/... commands on the DPDK telemetry socket"),
	U32("link_poll_ms", D_FIELD(link_poll_ms), 10, 10000, "100",
	    "ports' link state is read this often (and at once on an LSC interrupt)"),
	U32("link_retry_ms", D_FIELD(link_retry_ms), 50, 60000, "500",
	    "a net_memif client whose link is down tries to reconnect this often"),
};

static const struct config_key port_keys[] = {
	STR("devargs", P_FIELD(devargs), NULL,
	    "required: PMD devargs (net_af_packet0,iface=veth0) or a PCI address"),
	{ "ipv4", KEY_ADDRS4, P_FIELD(addrs), 0, 0, NULL, NULL,
	  "IPv4 address(es) with prefix, comma separated or repeated: 198.18.0.1/24" },
	{ "ipv6", KEY_ADDRS6, P_FIELD(addrs), 0, 0, NULL, NULL,
	  "IPv6 address(es) with prefix: 2001:db8::1/64 (link-local is derived from the MAC)" },
	{ "gateway4", KEY_GATEWAY4, P_FIELD(gateway4), 0, 0, NULL, NULL,
	  "IPv4 next hop for destinations outside the port's prefixes" },
	{ "gateway6", KEY_GATEWAY6, P_FIELD(gateway6), 0, 0, NULL, NULL,
	  "IPv6 next hop for destinations outside the port's prefixes" },
	{ "resolve", KEY_RESOLVE, P_FIELD(resolve), 0, 0, NULL, NULL,
	  "neighbours to resolve at start-up and keep resolved (peers, gateway)" },
	U32("mtu", P_FIELD(mtu), 384, 9600, "1500",
	    "IP MTU; RoCE path MTU is the largest of 256..4096 that fits"),
	U32("rx_queues", P_FIELD(rx_queues), 0, 64, "0", "RX queues (0: one per worker)"),
	U32("tx_queues", P_FIELD(tx_queues), 0, 64, "0", "TX queues (0: one per worker)"),
	U32("rx_desc", P_FIELD(rx_desc), 64, 16384, "1024", "RX descriptors per queue"),
	U32("tx_desc", P_FIELD(tx_desc), 64, 16384, "1024", "TX descriptors per queue"),
	U32("mbufs", P_FIELD(mbufs), 0, 1u << 22, "0", "mbufs in the port's pool (0: computed)"),
	U32("rx_mbuf_size", P_FIELD(rx_mbuf_size), 0, 65000, "0",
	    "RX mbuf data room (e.g. 2048: frames above it arrive in several mbufs, scatter RX); "
	    "0: one frame per mbuf"),
	ENUM("mode", P_FIELD(mode), mode_names, "dedicated",
	     "dedicated (own every frame) | shared (net_af_xdp with bpf/roce_xdp.o)"),
	BOOL("promisc", P_FIELD(promisc), "no", "enable promiscuous mode"),
	U32("vlan", P_FIELD(vlan), 0, 4094, "0",
	    "802.1Q VLAN ID of the port's frames (RoCE, ARP/ND, CM MADs), as an rxe on a VLAN "
	    "netdev; 0: untagged"),
	/* congestion control and QoS: defaults as RoCE NICs and the DCQCN
	 * paper (lib/xport/dcqcn.h, doc/congestion.md) */
	ENUM("ecn", P_FIELD(ecn), ecn_names, "ect0",
	     "ECN codepoint of RoCE frames (not CNPs): none|ect1|ect0; replaces the AV's ECN bits"),
	ENUM("cc", P_FIELD(cc), cc_names, "dcqcn",
	     "reaction point: dcqcn (CNPs cut the QP's rate) | delay (the RTT of ACKs against "
	     "delay_target_us paces the QP) | none (CNPs ignored)"),
	BOOL("cnp", P_FIELD(cnp), "yes",
	     "notification point: answer CE-marked packets with CNPs to the sender's QP"),
	U32("cnp_interval_us", P_FIELD(cnp_interval_us), 0, 1000000, "50",
	    "at most one CNP per QP per this interval (DCQCN N)"),
	U32("dscp", P_FIELD(dscp), 0, 63, "0",
	    "DSCP of RoCE frames whose AV traffic class carries none (0)"),
	U32("pcp", P_FIELD(pcp), 0, 7, "0", "802.1p priority of VLAN-tagged RoCE frames"),
	U32("cnp_dscp", P_FIELD(cnp_dscp), 0, 63, "48", "DSCP of CNPs"),
	U32("cnp_pcp", P_FIELD(cnp_pcp), 0, 7, "6", "802.1p priority of VLAN-tagged CNPs"),
	U32("dcqcn_g_inv", P_FIELD(dcqcn_g_inv), 1, 65536, "256",
	    "DCQCN alpha gain g = 1/N"),
	U32("dcqcn_alpha_us", P_FIELD(dcqcn_alpha_us), 1, 10000000, "55",
	    "DCQCN K: alpha decays after this long without a CNP"),
	U32("dcqcn_timer_us", P_FIELD(dcqcn_timer_us), 1, 10000000, "55",
	    "DCQCN T: rate increase timer"),
	U32("dcqcn_bytes", P_FIELD(dcqcn_bytes), 0, 1u << 31, "10485760",
	    "DCQCN B: rate increase byte counter (0: timer only)"),
	U32("dcqcn_f", P_FIELD(dcqcn_f), 1, 1000, "5", "DCQCN F: fast recovery stages"),
	U32("dcqcn_ai_mbps", P_FIELD(dcqcn_ai_mbps), 1, 1000000, "40",
	    "DCQCN R_AI: additive increase (Mb/s)"),
	U32("dcqcn_hai_mbps", P_FIELD(dcqcn_hai_mbps), 1, 1000000, "400",
	    "DCQCN R_HAI: hyper increase (Mb/s)"),
	U32("dcqcn_min_mbps", P_FIELD(dcqcn_min_mbps), 1, 1000000, "1",
	    "DCQCN floor of the rate (Mb/s)"),
	U32("dcqcn_line_mbps", P_FIELD(dcqcn_line_mbps), 0, 4000000, "0",
	    "DCQCN line rate (Mb/s): the rate before the first CNP; 0: the link speed"),
	BOOL("dcqcn_pace_line", P_FIELD(dcqcn_pace_line), "no",
	     "pace QPs at the line rate before the first CNP (no window-sized bursts)"),
	U32("pace_burst_bytes", P_FIELD(pace_burst_bytes), 0, 1u << 30, "16384",
	    "pacer burst size: a late activation sends at most this many bytes ahead of the "
	    "QP's rate (0: up to 10 ms of it)"),
	U32("delay_target_us", P_FIELD(delay_target_us), 1, 10000000, "500",
	    "cc = delay: target RTT; above it the rate falls in proportion to the excess"),
	U32("delay_ai_mbps", P_FIELD(delay_ai_mbps), 1, 1000000, "5",
	    "cc = delay: additive increase per RTT sample at or below the target (Mb/s)"),
	U32("delay_beta_pct", P_FIELD(delay_beta_pct), 1, 100, "80",
	    "cc = delay: decrease = rate x beta x (RTT - target) / RTT"),
	U32("delay_max_md_pct", P_FIELD(delay_max_md_pct), 1, 100, "50",
	    "cc = delay: largest decrease per RTT, in percent of the rate"),
};

#define N_DAEMON_KEYS (sizeof(daemon_keys) / sizeof(daemon_keys[0]))
#define N_PORT_KEYS (sizeof(port_keys) / sizeof(port_keys[0]))
_Static_assert(N_DAEMON_KEYS <= 64 && N_PORT_KEYS <= 64, "seen-key masks are 64 bits");

enum section_kind { SECTION_NONE, SECTION_DAEMON, SECTION_PORT, SECTION_UNKNOWN };

struct parse_ctx {
	struct config *cfg;
	const char *name;          /**< file name for messages */
	/* line source: a FILE or a string */
	FILE *file;
	const char *text;
	size_t text_pos;
	unsigned int line;         /**< line the handler is being called for */
	/* current section, as recognised by the reader */
	enum section_kind section;
	int port;                  /**< index when SECTION_PORT */
	unsigned int daemon_line;  /**< 0: no [daemon] yet */
	uint64_t seen_daemon;      /**< keys given, to reject duplicates */
	uint64_t seen_port[CONFIG_MAX_PORTS];
	unsigned int seen_line_daemon[N_DAEMON_KEYS];
	unsigned int seen_line_port[CONFIG_MAX_PORTS][N_PORT_KEYS];
	/* errors */
	char *err;
	size_t errlen;
	size_t errpos;
	unsigned int n_err;
};

static void __attribute__((format(printf, 3, 4)))
report(struct parse_ctx *ctx, unsigned int line, const char *fmt, ...)
{
	va_list ap;
	int n;

	ctx->n_err++;
	if (ctx->err == NULL || ctx->errpos + 1 >= ctx->errlen)
		return;
	if (line > 0)
		n = snprintf(ctx->err + ctx->errpos, ctx->errlen - ctx->errpos, "%s:%u: ",
			     ctx->name, line);
	else
		n = snprintf(ctx->err + ctx->errpos, ctx->errlen - ctx->errpos, "%s: ", ctx->name);
	if (n < 0 || (size_t)n >= ctx->errlen - ctx->errpos) {
		ctx->errpos = ctx->errlen - 1;
		return;
	}
	ctx->errpos += (size_t)n;
	va_start(ap, fmt);
	n = vsnprintf(ctx->err + ctx->errpos, ctx->errlen - ctx->errpos, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= ctx->errlen - ctx->errpos - 1) {
		ctx->errpos = ctx->errlen - 1;
		ctx->err[ctx->errpos - 1] = '\n';
		return;
	}
	ctx->errpos += (size_t)n;
	ctx->err[ctx->errpos++] = '\n';
	ctx->err[ctx->errpos] = '\0';
}

/* ---- value parsers ---- */

static bool
parse_u32(const char *s, uint32_t *out)
{
	char *end;
	unsigned long long v;

	if (*s == '\0' || *s == '-' || *s == '+')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0' || v > UINT32_MAX)
		return false;
	*out = (uint32_t)v;
	return true;
}

static bool
parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "yes", "true", "on", "1" };
	static const char *const no[] = { "no", "false", "off", "0" };

	for (size_t i = 0; i < 4; i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*out = true;
			return true;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*out = false;
			return true;
		}
	}
	return false;
}

bool
config_addr_is_v4mapped(const uint8_t a[16])
{
	static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return memcmp(a, prefix, sizeof(prefix)) == 0;
}

/*
 * Parse "A[/LEN]" of one family. Returns NULL or an error message. A missing
 * prefix means a host route (/32, /128).
 */
static const char *
parse_addr(const char *s, bool ipv6, bool allow_prefix, struct config_addr *out)
{
	char buf[64];
	const char *slash = strchr(s, '/');
	size_t alen = slash != NULL ? (size_t)(slash - s) : strlen(s);
	uint32_t plen = ipv6 ? 128 : 32;

	if (alen == 0 || alen >= sizeof(buf))
		return "not an address";
	memcpy(buf, s, alen);
	buf[alen] = '\0';
	memset(out, 0, sizeof(*out));
	out->ipv6 = ipv6;
	if (ipv6) {
		if (inet_pton(AF_INET6, buf, out->addr) != 1)
			return strchr(buf, ':') == NULL ? "not an IPv6 address (use ipv4 for IPv4)"
							 : "not an IPv6 address";
		if (config_addr_is_v4mapped(out->addr))
			return "IPv4-mapped address: use the ipv4 key";
		if (out->addr[0] == 0xff)
			return "multicast address";
		if (out->addr[0] == 0xfe && (out->addr[1] & 0xc0) == 0x80)
			return "link-local address (derived from the MAC; do not configure it)";
		static const uint8_t zero[16], loop[16] = { [15] = 1 };
		if (memcmp(out->addr, zero, 16) == 0 || memcmp(out->addr, loop, 16) == 0)
			return "unspecified or loopback address";
	} else {
		struct in_addr in;

		if (inet_pton(AF_INET, buf, &in) != 1)
			return strchr(buf, ':') != NULL ? "not an IPv4 address (use ipv6 for IPv6)"
							: "not an IPv4 address";
		out->addr[10] = 0xff;
		out->addr[11] = 0xff;
		memcpy(&out->addr[12], &in, 4);
		uint8_t b0 = out->addr[12];
		if (b0 == 0 || b0 == 127 || b0 >= 224)
			return "not a unicast address";
	}
	if (slash != NULL) {
		if (!allow_prefix)
			return "a next hop takes no prefix length";
		if (!parse_u32(slash + 1, &plen) || plen > (ipv6 ? 128u : 32u))
			return "bad prefix length";
	}
	out->prefix_len = (uint8_t)(ipv6 ? plen : plen + 96);
	return NULL;
}

void
config_addr_format(const struct config_addr *a, char *buf, size_t len)
{
	char tmp[INET6_ADDRSTRLEN];

	if (!a->ipv6 && config_addr_is_v4mapped(a->addr)) {
		inet_ntop(AF_INET, &a->addr[12], tmp, sizeof(tmp));
		snprintf(buf, len, "%s/%u", tmp, a->prefix_len - 96u);
	} else {
		inet_ntop(AF_INET6, a->addr, tmp, sizeof(tmp));
		snprintf(buf, len, "%s/%u", tmp, a->prefix_len);
	}
}

void
config_port_cc(const struct config_port *cp, uint32_t link_mbps, struct xport_cc *cc)
{
	uint64_t line = cp->dcqcn_line_mbps ? cp->dcqcn_line_mbps
			: link_mbps ? link_mbps : CONFIG_CC_LINE_MBPS_DEFAULT;
	struct dcqcn_params *d = &cc->dcqcn;

	memset(cc, 0, sizeof(*cc));
	cc->ecn = (uint8_t)cp->ecn;
	cc->algo = cp->cc == 1 ? XPORT_CC_DCQCN : cp->cc == 2 ? XPORT_CC_DELAY : XPORT_CC_NONE;
	cc->pace_burst = cp->pace_burst_bytes;
	cc->np = cp->cnp;
	cc->cnp_interval_ns = (uint64_t)cp->cnp_interval_us * 1000u;
	cc->dscp = (uint8_t)cp->dscp;
	cc->pcp = (uint8_t)cp->pcp;
	cc->cnp_dscp = (uint8_t)cp->cnp_dscp;
	cc->cnp_pcp = (uint8_t)cp->cnp_pcp;
	cc->pace_line = cp->dcqcn_pace_line;
	if (line * 1000u > UINT32_MAX)
		line = UINT32_MAX / 1000u;
	dcqcn_params_default(d, (uint32_t)line * 1000u);
	d->g_inv = cp->dcqcn_g_inv;
	d->alpha_ns = (uint64_t)cp->dcqcn_alpha_us * 1000u;
	d->timer_ns = (uint64_t)cp->dcqcn_timer_us * 1000u;
	d->bytes = cp->dcqcn_bytes;
	d->f = cp->dcqcn_f;
	d->ai_kbps = cp->dcqcn_ai_mbps * 1000u;
	d->hai_kbps = cp->dcqcn_hai_mbps * 1000u;
	d->min_kbps = cp->dcqcn_min_mbps * 1000u;
	if (d->min_kbps > d->line_kbps)
		d->min_kbps = d->line_kbps;
	/* cc = delay shares the line rate and the floor */
	struct delay_params *dl = &cc->delay;
	delay_params_default(dl, d->line_kbps);
	dl->target_ns = (uint64_t)cp->delay_target_us * 1000u;
	dl->ai_kbps = cp->delay_ai_mbps * 1000u;
	dl->beta_pct = cp->delay_beta_pct;
	dl->max_md_pct = cp->delay_max_md_pct;
	dl->min_kbps = d->min_kbps;
}

const char *
config_idle_name(enum config_idle idle)
{
	return (unsigned)idle < 4 ? idle_names[idle] : "?";
}

static char *
trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' || e[-1] == '\n'))
		*--e = '\0';
	return s;
}

/* Call @p add for each comma-separated, trimmed item of @p value; the first error wins. */
static const char *
parse_list(const char *value, struct config_port *port,
	   const char *(*add)(const char *item, struct config_port *port))
{
	char buf[256];
	char *rest = buf, *tok;

	if (strlen(value) >= sizeof(buf))
		return "value too long";
	strcpy(buf, value);
	while ((tok = strsep(&rest, ",")) != NULL) {
		const char *why;

		tok = trim(tok);
		if (*tok == '\0')
			return "empty address in list";
		why = add(tok, port);
		if (why != NULL)
			return why;
	}
	return NULL;
}

/* A port address (with prefix); ipv4 and ipv6 keys differ only in the family. */
static const char *
add_addr(const char *item, struct config_port *port, bool ipv6)
{
	struct config_addr a;
	const char *why = parse_addr(item, ipv6, true, &a);

	if (why != NULL)
		return why;
	for (unsigned int i = 0; i < port->n_addrs; i++)
		if (memcmp(port->addrs[i].addr, a.addr, 16) == 0)
			return "address listed twice";
	if (port->n_addrs >= CONFIG_MAX_ADDRS)
		return "too many addresses (at most 8 per port)";
	port->addrs[port->n_addrs++] = a;
	return NULL;
}

static const char *
add_addr_v4(const char *item, struct config_port *port)
{
	return add_addr(item, port, false);
}

static const char *
add_addr_v6(const char *item, struct config_port *port)
{
	return add_addr(item, port, true);
}

/* A neighbour to resolve at start (IPv4 or IPv6, no prefix). */
static const char *
add_resolve(const char *item, struct config_port *port)
{
	struct config_addr a;
	const char *why = parse_addr(item, strchr(item, ':') != NULL, false, &a);

	if (why != NULL)
		return why;
	if (port->n_resolve >= CONFIG_MAX_ADDRS)
		return "too many addresses (at most 8 per port)";
	port->resolve[port->n_resolve++] = a;
	return NULL;
}

/*
 * Store @p value into the field of @p key in @p base. Returns NULL or why
 * the value is wrong; @p range is filled for range errors.
 */
static const char *
set_value(const struct config_key *key, void *base, const char *value, char *range, size_t rlen)
{
	void *field = (char *)base + key->offset;

	switch (key->type) {
	case KEY_U32: {
		uint32_t v;

		if (!parse_u32(value, &v))
			return "not a non-negative decimal number";
		if (v < key->min || v > key->max) {
			snprintf(range, rlen, "out of range %u..%u", key->min, key->max);
			return range;
		}
		if (strcmp(key->name, "handoff_ring") == 0 && (v & (v - 1)) != 0)
			return "not a power of two";
		*(uint32_t *)field = v;
		return NULL;
	}
	case KEY_BOOL:
		return parse_bool(value, (bool *)field) ? NULL : "not a boolean (yes/no)";
	case KEY_STRING:
		if (strlen(value) >= key->size) {
			snprintf(range, rlen, "longer than %zu characters", key->size - 1);
			return range;
		}
		strcpy((char *)field, value);
		return NULL;
	case KEY_ENUM:
		for (uint32_t i = 0; key->enum_names[i] != NULL; i++) {
			if (strcmp(value, key->enum_names[i]) == 0) {
				*(uint32_t *)field = i;
				return NULL;
			}
		}
		snprintf(range, rlen, "not one of");
		for (uint32_t i = 0; key->enum_names[i] != NULL; i++) {
			size_t n = strlen(range);
			snprintf(range + n, rlen - n, "%s%s", i ? "|" : " ", key->enum_names[i]);
		}
		return range;
	case KEY_ADDRS4:
	case KEY_ADDRS6:
		return parse_list(value, base, key->type == KEY_ADDRS6 ? add_addr_v6 : add_addr_v4);
	case KEY_RESOLVE:
		return parse_list(value, base, add_resolve);
	case KEY_GATEWAY4:
	case KEY_GATEWAY6: {
		struct config_port *port = base;
		bool v6 = key->type == KEY_GATEWAY6;
		const char *why = parse_addr(value, v6, false, field);

		if (why == NULL) {
			if (v6)
				port->has_gateway6 = true;
			else
				port->has_gateway4 = true;
		}
		return why;
	}
	}
	return "internal: unknown key type";
}

static bool
key_is_list(const struct config_key *key)
{
	return key->type == KEY_ADDRS4 || key->type == KEY_ADDRS6 || key->type == KEY_RESOLVE;
}

static void
apply_defaults(const struct config_key *keys, size_t n, void *base)
{
	char range[64];

	for (size_t i = 0; i < n; i++)
		if (keys[i].def != NULL)
			(void)set_value(&keys[i], base, keys[i].def, range, sizeof(range));
}

void
config_defaults(struct config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	apply_defaults(daemon_keys, N_DAEMON_KEYS, &cfg->daemon);
}

static const struct config_key *
find_key(const struct config_key *keys, size_t n, const char *name, size_t *index)
{
	for (size_t i = 0; i < n; i++) {
		if (strcmp(keys[i].name, name) == 0) {
			*index = i;
			return &keys[i];
		}
	}
	return NULL;
}

/* ---- section headers, seen by the line reader ---- */

static bool
valid_port_name(const char *s)
{
	if (*s == '\0' || strlen(s) >= CONFIG_NAME_LEN)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_' || *s == '-'))
			return false;
	return true;
}

static void
open_section(struct parse_ctx *ctx, char *inside)
{
	char *name = trim(inside);
	struct config *cfg = ctx->cfg;

	ctx->section = SECTION_UNKNOWN;
	if (strcmp(name, "daemon") == 0) {
		if (ctx->daemon_line != 0) {
			report(ctx, ctx->line, "duplicate [daemon] section (first at line %u)",
			       ctx->daemon_line);
			return;
		}
		ctx->daemon_line = ctx->line;
		ctx->section = SECTION_DAEMON;
		return;
	}
	if (strncmp(name, "port", 4) != 0 || (name[4] != '\0' && name[4] != ' ' && name[4] != '\t')) {
		report(ctx, ctx->line, "unknown section [%s] (expected [daemon] or [port NAME])", name);
		return;
	}
	name = trim(name + 4);
	if (!valid_port_name(name)) {
		report(ctx, ctx->line, "[port%s%s]: a port needs a name of 1..%d characters "
		       "from A-Z a-z 0-9 _ -", *name ? " " : "", name, CONFIG_NAME_LEN - 1);
		return;
	}
	for (unsigned int i = 0; i < cfg->n_ports; i++) {
		if (strcmp(cfg->ports[i].name, name) == 0) {
			report(ctx, ctx->line, "duplicate [port %s] (first at line %u)", name,
			       cfg->ports[i].line);
			return;
		}
	}
	if (cfg->n_ports >= CONFIG_MAX_PORTS) {
		report(ctx, ctx->line, "too many ports (at most %d)", CONFIG_MAX_PORTS);
		return;
	}
	struct config_port *p = &cfg->ports[cfg->n_ports];
	memset(p, 0, sizeof(*p));
	apply_defaults(port_keys, N_PORT_KEYS, p);
	strcpy(p->name, name);
	p->line = ctx->line;
	ctx->port = (int)cfg->n_ports++;
	ctx->section = SECTION_PORT;
}

/*
 * inih's line source. Returns one line per call, so ctx->line is the line of
 * the key the handler sees next. Section headers are handled here; inih still
 * sees them (to keep its own section state) but we do not rely on it.
 */
static char *
read_line(char *str, int num, void *stream)
{
	struct parse_ctx *ctx = stream;
	char line[1024];
	size_t len = 0;
	bool too_long = false;
	int c;

	for (;;) {
		if (ctx->file != NULL) {
			c = getc_unlocked(ctx->file); /* the parser's own FILE: no lock per byte */
		} else {
			c = ctx->text[ctx->text_pos] != '\0' ? (unsigned char)ctx->text[ctx->text_pos++]
							     : EOF;
		}
		if (c == EOF) {
			if (len == 0 && !too_long)
				return NULL;
			break;
		}
		if (c == '\0') {
			/* A NUL would end inih's string early: reject the line. */
			too_long = true;
			continue;
		}
		if (len + 1 < sizeof(line))
			line[len++] = (char)c;
		else
			too_long = true;
		if (c == '\n')
			break;
	}
	line[len] = '\0';
	ctx->line++;
	if (too_long || len + 1 > (size_t)num) {
		report(ctx, ctx->line, "line too long or contains NUL (at most %d characters)",
		       num - 2);
		strcpy(str, "\n");
		return str;
	}
	char *s = trim(line);
	if (*s == '[') {
		char *close = strchr(s, ']');

		if (close == NULL) {
			report(ctx, ctx->line, "section header without ']'");
			ctx->section = SECTION_UNKNOWN;
			strcpy(str, "\n");
			return str;
		}
		*close = '\0';
		open_section(ctx, s + 1);
		*close = ']';
	}
	memcpy(str, line, len + 1);
	return str;
}

static int
handle_key(void *user, const char *section, const char *name, const char *value)
{
	struct parse_ctx *ctx = user;
	const struct config_key *keys;
	size_t n_keys, idx;
	void *base;
	uint64_t *seen;
	unsigned int *seen_line;
	char label[64];
	char range[96];

	(void)section; /* we track sections ourselves (read_line) */
	switch (ctx->section) {
	case SECTION_NONE:
		report(ctx, ctx->line, "key '%s' outside any section", name);
		return 1;
	case SECTION_UNKNOWN:
		return 1; /* already reported at the header */
	case SECTION_DAEMON:
		keys = daemon_keys;
		n_keys = N_DAEMON_KEYS;
		base = &ctx->cfg->daemon;
		seen = &ctx->seen_daemon;
		seen_line = ctx->seen_line_daemon;
		snprintf(label, sizeof(label), "[daemon]");
		break;
	case SECTION_PORT:
	default:
		keys = port_keys;
		n_keys = N_PORT_KEYS;
		base = &ctx->cfg->ports[ctx->port];
		seen = &ctx->seen_port[ctx->port];
		seen_line = ctx->seen_line_port[ctx->port];
		snprintf(label, sizeof(label), "[port %s]", ctx->cfg->ports[ctx->port].name);
		break;
	}
	const struct config_key *key = find_key(keys, n_keys, name, &idx);
	if (key == NULL) {
		report(ctx, ctx->line, "%s unknown key '%s' (roce-daemon --help lists the keys)",
		       label, name);
		return 1;
	}
	if (!key_is_list(key) && (*seen & (UINT64_C(1) << idx)) != 0 &&
	    seen_line[idx] != ctx->line) {
		report(ctx, ctx->line, "%s %s given twice (first at line %u)", label, name,
		       seen_line[idx]);
		return 1;
	}
	*seen |= UINT64_C(1) << idx;
	seen_line[idx] = ctx->line;
	if (*value == '\0' && key->type != KEY_STRING) {
		report(ctx, ctx->line, "%s %s: empty value", label, name);
		return 1;
	}
	const char *why = set_value(key, base, value, range, sizeof(range));
	if (why != NULL)
		report(ctx, ctx->line, "%s %s = %s: %s", label, name, value, why);
	return 1;
}

static bool
lcores_chars_ok(const char *s)
{
	for (; *s; s++)
		if (strchr("0123456789,-@()", *s) == NULL)
			return false;
	return true;
}

static bool
port_is_af_xdp(const struct config_port *p)
{
	return strncmp(p->devargs, "net_af_xdp", 10) == 0;
}

/* A user or group given as a number; false: it is a name. */
static bool
config_numeric_id(const char *s, uint32_t *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (*s == '\0' || *end != '\0' || errno != 0 || v >= UINT32_MAX)
		return false;
	*out = (uint32_t)v;
	return true;
}

int
config_user_id(const char *s, uint32_t *out)
{
	struct passwd *pw;

	if (config_numeric_id(s, out))
		return 0;
	pw = getpwnam(s);
	if (pw == NULL)
		return -1;
	*out = pw->pw_uid;
	return 0;
}

int
config_group_id(const char *s, uint32_t *out)
{
	struct group *gr;

	if (config_numeric_id(s, out))
		return 0;
	gr = getgrnam(s);
	if (gr == NULL)
		return -1;
	*out = gr->gr_gid;
	return 0;
}

int
config_id_list(const char *list, bool groups, uint32_t *out, uint32_t max)
{
	char buf[512], *save = NULL, *tok;
	uint32_t n = 0;

	if (strlen(list) >= sizeof(buf))
		return -1;
	strcpy(buf, list);
	for (tok = strtok_r(buf, ", \t", &save); tok != NULL; tok = strtok_r(NULL, ", \t", &save)) {
		if (n == max ||
		    (groups ? config_group_id(tok, &out[n]) : config_user_id(tok, &out[n])) != 0)
			return -1;
		n++;
	}
	return (int)n;
}

/* socket_owner/group/mode and the allowed lists name what exists. */
static void
check_access(struct parse_ctx *ctx, const struct config_daemon *d)
{
	uint32_t id, ids[CONFIG_MAX_ALLOWED];
	char *end;
	unsigned long mode = strtoul(d->socket_mode, &end, 8);

	if (d->socket_mode[0] == '\0' || *end != '\0' || mode > 07777)
		report(ctx, ctx->daemon_line, "[daemon] socket_mode = %s: octal permissions, e.g. 0660",
		       d->socket_mode);
	if (d->socket_owner[0] != '\0' && config_user_id(d->socket_owner, &id) != 0)
		report(ctx, ctx->daemon_line, "[daemon] socket_owner = %s: no such user",
		       d->socket_owner);
	if (d->socket_group[0] != '\0' && config_group_id(d->socket_group, &id) != 0)
		report(ctx, ctx->daemon_line, "[daemon] socket_group = %s: no such group",
		       d->socket_group);
	if (config_id_list(d->allowed_users, false, ids, CONFIG_MAX_ALLOWED) < 0)
		report(ctx, ctx->daemon_line, "[daemon] allowed_users = %s: an unknown user, or "
		       "more than %u", d->allowed_users, CONFIG_MAX_ALLOWED);
	if (config_id_list(d->allowed_groups, true, ids, CONFIG_MAX_ALLOWED) < 0)
		report(ctx, ctx->daemon_line, "[daemon] allowed_groups = %s: an unknown group, or "
		       "more than %u", d->allowed_groups, CONFIG_MAX_ALLOWED);
}

/* Checks that need the whole file. */
static void
cross_check(struct parse_ctx *ctx)
{
	struct config *cfg = ctx->cfg;
	struct config_daemon *d = &cfg->daemon;

	if (d->lcores[0] != '\0' && !lcores_chars_ok(d->lcores))
		report(ctx, ctx->daemon_line, "[daemon] lcores = %s: only digits and , - @ ( ) "
		       "are allowed (EAL --lcores syntax)", d->lcores);
	if (d->socket_path[0] != '/')
		report(ctx, ctx->daemon_line, "[daemon] socket = %s: must be an absolute path",
		       d->socket_path);
	check_access(ctx, d);
	if (cfg->n_ports == 0 && ctx->n_err == 0)
		report(ctx, 0, "no [port NAME] section: at least one port is needed");
	for (unsigned int i = 0; i < cfg->n_ports; i++) {
		struct config_port *p = &cfg->ports[i];

		if (p->devargs[0] == '\0')
			report(ctx, p->line, "[port %s]: devargs is required "
			       "(e.g. devargs = net_af_packet0,iface=veth0)", p->name);
		if (p->mode == CONFIG_PORT_SHARED && p->devargs[0] != '\0' && !port_is_af_xdp(p))
			report(ctx, p->line, "[port %s]: mode = shared needs a net_af_xdp port "
			       "(the XDP program separates RoCE from the kernel's traffic)", p->name);
		if (p->mode == CONFIG_PORT_SHARED && p->n_addrs == 0)
			report(ctx, p->line, "[port %s]: mode = shared needs at least one address",
			       p->name);
		if (p->mode == CONFIG_PORT_SHARED && p->vlan != 0)
			report(ctx, p->line, "[port %s]: vlan needs mode = dedicated (in shared mode "
			       "the kernel resolves neighbours on its interface, not on a VLAN of it)",
			       p->name);
		for (unsigned int j = 0; j < i; j++) {
			if (strcmp(p->devargs, cfg->ports[j].devargs) == 0 && p->devargs[0])
				report(ctx, p->line, "[port %s]: same devargs as [port %s]", p->name,
				       cfg->ports[j].name);
			for (unsigned int a = 0; a < p->n_addrs; a++)
				for (unsigned int b = 0; b < cfg->ports[j].n_addrs; b++)
					if (memcmp(p->addrs[a].addr, cfg->ports[j].addrs[b].addr, 16) == 0) {
						char s[64];

						config_addr_format(&p->addrs[a], s, sizeof(s));
						report(ctx, p->line, "[port %s]: address %s is also on "
						       "[port %s]", p->name, s, cfg->ports[j].name);
					}
		}
	}
}

static int
load(struct parse_ctx *ctx)
{
	int rc = ini_parse_stream(read_line, ctx, handle_key, ctx);

	if (rc > 0 && ctx->n_err == 0)
		report(ctx, (unsigned int)rc, "syntax error (expected [section], key = value "
		       "or a ; comment)");
	else if (rc < 0)
		report(ctx, 0, "cannot parse (out of memory)");
	cross_check(ctx);
	return ctx->n_err == 0 ? 0 : -1;
}

static void
ctx_init(struct parse_ctx *ctx, struct config *cfg, const char *name, char *err, size_t errlen)
{
	memset(ctx, 0, sizeof(*ctx));
	config_defaults(cfg);
	snprintf(cfg->path, sizeof(cfg->path), "%s", name);
	ctx->cfg = cfg;
	ctx->name = name;
	ctx->err = err;
	ctx->errlen = errlen;
	/* Debian's inih makes these run-time switches: an indented key is a key,
	 * not the continuation of the previous value (lists use commas). */
	ini_allow_multiline = false;
	if (err != NULL && errlen > 0)
		err[0] = '\0';
}

/*
 * config_load() of an open @p file (NULL: the open failed with @p open_errno),
 * named @p name in messages; the caller closes it. fuzz/fuzz_config.c reads
 * through here from memory (fmemopen) as well as from a file.
 */
static int
load_file(FILE *file, int open_errno, const char *name, struct config *cfg, char *err,
	  size_t errlen)
{
	struct parse_ctx *ctx = calloc(1, sizeof(*ctx));
	int rc;

	if (ctx == NULL)
		return -1;
	ctx_init(ctx, cfg, name, err, errlen);
	ctx->file = file;
	if (ctx->file == NULL) {
		report(ctx, 0, "cannot open: %s", strerror(open_errno));
		free(ctx);
		return -1;
	}
	rc = load(ctx);
	if (rc == 0 && ferror(ctx->file)) {
		report(ctx, 0, "read error");
		rc = -1;
	}
	free(ctx);
	return rc;
}

int
config_load(const char *path, struct config *cfg, char *err, size_t errlen)
{
	FILE *file = fopen(path, "r");
	int rc = load_file(file, errno, path, cfg, err, errlen);

	if (file != NULL)
		fclose(file);
	return rc;
}

int
config_load_string(const char *text, const char *name, struct config *cfg, char *err,
		   size_t errlen)
{
	struct parse_ctx *ctx = calloc(1, sizeof(*ctx));
	int rc;

	if (ctx == NULL)
		return -1;
	ctx_init(ctx, cfg, name, err, errlen);
	ctx->text = text;
	rc = load(ctx);
	free(ctx);
	return rc;
}

static void
print_keys(FILE *out, const struct config_key *keys, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct config_key *k = &keys[i];
		char def[64];

		snprintf(def, sizeof(def), "%s", k->def != NULL ? k->def : "");
		fprintf(out, "    %-18s %-28s %s", k->name, def[0] ? def : "-", k->help);
		if (k->type == KEY_U32)
			fprintf(out, " [%u..%u]", k->min, k->max);
		fputc('\n', out);
	}
}

void
config_print_keys(FILE *out)
{
	fprintf(out, "  [daemon]\n    %-18s %-28s %s\n", "key", "default", "meaning");
	print_keys(out, daemon_keys, N_DAEMON_KEYS);
	fprintf(out, "  [port NAME]   (one per port, at most %d)\n", CONFIG_MAX_PORTS);
	print_keys(out, port_keys, N_PORT_KEYS);
}
