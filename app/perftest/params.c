/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Command line of roce-perftest: perftest's options and defaults
 * (perftest_parameters.c), plus the test name, single-process mode,
 * --verify and CSV/JSON output.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "perftest.h"

#define PT_MODE_REF(n) &pt_mode_##n,
static const struct pt_mode *const pt_modes[] = { PT_MODE_LIST(PT_MODE_REF) };
#undef PT_MODE_REF

#define PT_NMODES (sizeof(pt_modes) / sizeof(pt_modes[0]))

const struct pt_mode *pt_mode_at(size_t i)
{
	return i < PT_NMODES ? pt_modes[i] : NULL;
}

const struct pt_mode *pt_mode_find(const char *name)
{
	for (size_t i = 0; i < PT_NMODES; i++)
		if (strcmp(pt_modes[i]->name, name) == 0)
			return pt_modes[i];
	return NULL;
}

static const char *const pt_conn_names[] = {
	[PT_RC] = "RC",
	[PT_UC] = "UC",
	[PT_UD] = "UD",
};

const char *pt_conn_name(enum pt_conn c)
{
	return (unsigned int)c < sizeof(pt_conn_names) / sizeof(pt_conn_names[0]) ? pt_conn_names[c] : "?";
}

bool pt_uses_recv(const struct pt_params *p)
{
	return p->mode->verb == PT_SEND;
}

size_t pt_params_sizes(const struct pt_params *p, uint64_t max_size, uint64_t *sizes, size_t cap)
{
	size_t n = 0;

	if (!p->all_sizes) {
		if (cap > 0 && p->size <= max_size)
			sizes[n++] = p->size;
		return n;
	}
	for (unsigned int i = 1; i <= 23 && n < cap; i++) {
		uint64_t s = UINT64_C(1) << i;

		if (s > max_size)
			break;
		sizes[n++] = s;
	}
	return n;
}

/* Long-only options get values above the ASCII range. */
enum {
	OPT_REPORT_GBITS = 256,
	OPT_VERIFY,
	OPT_SINGLE,
	OPT_PEER_DEV,
	OPT_PEER_PORT,
	OPT_PEER_GID,
	OPT_OUTPUT,
	OPT_OUT_FILE,
	OPT_TEST,
	OPT_STALL,
	OPT_RATE_LIMIT,
};

static const struct option pt_long_opts[] = {
	{ "all",            no_argument,       NULL, 'a' },
	{ "atomic_type",    required_argument, NULL, 'A' },
	{ "connection",     required_argument, NULL, 'c' },
	{ "ib-dev",         required_argument, NULL, 'd' },
	{ "duration",       required_argument, NULL, 'D' },
	{ "events",         no_argument,       NULL, 'e' },
	{ "margin",         required_argument, NULL, 'f' },
	{ "CPU-freq",       no_argument,       NULL, 'F' },
	{ "help",           no_argument,       NULL, 'h' },
	{ "ib-port",        required_argument, NULL, 'i' },
	{ "inline_size",    required_argument, NULL, 'I' },
	{ "mtu",            required_argument, NULL, 'm' },
	{ "iters",          required_argument, NULL, 'n' },
	{ "noPeak",         no_argument,       NULL, 'N' },
	{ "outs",           required_argument, NULL, 'o' },
	{ "port",           required_argument, NULL, 'p' },
	{ "qp",             required_argument, NULL, 'q' },
	{ "cq-mod",         required_argument, NULL, 'Q' },
	{ "rx-depth",       required_argument, NULL, 'r' },
	{ "size",           required_argument, NULL, 's' },
	{ "sl",             required_argument, NULL, 'S' },
	{ "tx-depth",       required_argument, NULL, 't' },
	{ "qp-timeout",     required_argument, NULL, 'u' },
	{ "version",        no_argument,       NULL, 'V' },
	{ "gid-index",      required_argument, NULL, 'x' },
	{ "report_gbits",   no_argument,       NULL, OPT_REPORT_GBITS },
	{ "verify",         no_argument,       NULL, OPT_VERIFY },
	{ "data_validation", no_argument,      NULL, OPT_VERIFY },
	{ "single-process", no_argument,       NULL, OPT_SINGLE },
	{ "loopback",       no_argument,       NULL, OPT_SINGLE },
	{ "peer-dev",       required_argument, NULL, OPT_PEER_DEV },
	{ "peer-ib-port",   required_argument, NULL, OPT_PEER_PORT },
	{ "peer-gid-index", required_argument, NULL, OPT_PEER_GID },
	{ "output",         required_argument, NULL, OPT_OUTPUT },
	{ "out-file",       required_argument, NULL, OPT_OUT_FILE },
	{ "test",           required_argument, NULL, OPT_TEST },
	{ "stall-timeout",  required_argument, NULL, OPT_STALL },
	{ "pacing-kbps",    required_argument, NULL, OPT_RATE_LIMIT },
	{ NULL, 0, NULL, 0 },
};

static const char pt_short_opts[] = "+aA:c:d:D:ef:Fhi:I:m:n:No:p:q:Q:r:s:S:t:u:Vx:";

static void pt_usage(FILE *f, const char *argv0)
{
	fprintf(f,
		"Usage:\n"
		"  %s TEST [options]            start a server and wait for connection\n"
		"  %s TEST [options] <host>     connect to server at <host>\n"
		"  %s TEST [options] --single-process   drive both ends from one thread\n"
		"\nTESTS:", argv0, argv0, argv0);
	for (size_t i = 0; i < PT_NMODES; i++)
		fprintf(f, " %s", pt_modes[i]->name);
	fprintf(f,
		"\n\nOptions (as in perftest; SYMMETRIC ones must match on both sides):\n"
		"  -a, --all                 Run sizes from 2 till 2^23 (SYMMETRIC)\n"
		"  -A, --atomic_type=<type>  CMP_AND_SWAP or FETCH_AND_ADD (default FETCH_AND_ADD) (SYMMETRIC)\n"
		"  -c, --connection=<RC/UC/UD> Connection type (default RC) (SYMMETRIC)\n"
		"  -d, --ib-dev=<dev>        Use IB device <dev> (default first device found)\n"
		"  -D, --duration=<sec>      Run test for a customized period of seconds (SYMMETRIC)\n"
		"  -e, --events              Sleep on CQ events (default poll); not with WRITE\n"
		"  -f, --margin=<sec>        Measure results within margins (default duration/4)\n"
		"  -F, --CPU-freq            Accepted for compatibility (clock is CLOCK_MONOTONIC)\n"
		"  -h, --help                Show this help screen\n"
		"  -i, --ib-port=<port>      Use port <port> of IB device (default 1)\n"
		"  -I, --inline_size=<size>  Max size of message to be sent in inline (default 0)\n"
		"  -m, --mtu=<mtu>           MTU size: 256 - 4096 (default port mtu) (SYMMETRIC)\n"
		"  -n, --iters=<iters>       Number of exchanges (at least %d, default %d, write_bw %d) (SYMMETRIC)\n"
		"  -N, --noPeak              Cancel peak-bw calculation (default with peak up to iters=%d)\n"
		"  -o, --outs=<num>          Num of outstanding read/atomic (default max of device)\n"
		"  -p, --port=<port>         Listen on/connect to port <port> (default %d) (SYMMETRIC)\n"
		"  -q, --qp=<num of qp's>    Num of qp's (default 1) (SYMMETRIC, bandwidth tests)\n"
		"  -Q, --cq-mod=<n>          Generate Cqe only after <n> completions (default %d)\n"
		"  -r, --rx-depth=<dep>      Rx queue size (default %d)\n"
		"  -s, --size=<size>         Size of message to exchange (default %d, latency %d) (SYMMETRIC)\n"
		"  -S, --sl=<sl>             SL (default 0)\n"
		"  -t, --tx-depth=<dep>      Size of tx queue (default %d, bandwidth tests)\n"
		"  -u, --qp-timeout=<t>      QP timeout, 4 usec * 2^(t) (default %d)\n"
		"  -V, --version             Display version number\n"
		"  -x, --gid-index=<index>   Test uses GID with GID index (default: IPv4-mapped RoCE GID)\n"
		"      --report_gbits        Report bandwidth in Gb/sec instead of MiB/sec\n"
		"\nroce-perftest options:\n"
		"      --test=<TEST>         The test (instead of the first argument)\n"
		"      --verify              Fill every message with a per-iteration pattern and check it\n"
		"                            at the receiver/reader (alias --data_validation) (SYMMETRIC)\n"
		"      --single-process      Client and server QPs in this process, one thread (alias --loopback)\n"
		"      --peer-dev=<dev>      Server-side device in single-process mode (default: -d)\n"
		"      --peer-ib-port=<port> Server-side port in single-process mode (default: -i)\n"
		"      --peer-gid-index=<i>  Server-side GID index in single-process mode (default: -x)\n"
		"      --output=<fmt>        table (default), csv or json\n"
		"      --out-file=<path>     Write the csv/json output there (default json) instead of stdout\n"
		"      --stall-timeout=<sec> Fail when no completion arrives for <sec> seconds (default 30, 0 = never)\n"
		"      --pacing-kbps=<kbps>  Pace each RC QP's sends: ibv_modify_qp_rate_limit in RTS (0 = none)\n",
		PT_MIN_ITERS, PT_DEF_ITERS, PT_DEF_ITERS_WB, PT_PEAK_MAX_ITERS, PT_DEF_PORT, PT_DEF_CQ_MOD,
		PT_DEF_RX_SEND, PT_DEF_SIZE_BW, PT_DEF_SIZE_LAT, PT_DEF_TX_BW, PT_DEF_QP_TIMEOUT);
}

static void pt_params_defaults(struct pt_params *p)
{
	memset(p, 0, sizeof(*p));
	p->ib_port = 1;
	p->gid_index = -1;
	p->peer_ib_port = 0;
	p->peer_gid_index = INT_MIN;
	p->tcp_port = PT_DEF_PORT;
	p->conn = PT_RC;
	p->atomic_op = PT_FETCH_AND_ADD;
	p->num_qps = 1;
	p->cq_mod = PT_DEF_CQ_MOD;
	p->qp_timeout = PT_DEF_QP_TIMEOUT;
	p->margin = -1;
	p->output = PT_OUT_TABLE;
	p->stall_timeout = 30;
}

/* A whole decimal number in [lo, hi], with an optional K/M/G suffix when
 * @p suffix is set. */
static int pt_parse_u64(const char *s, uint64_t lo, uint64_t hi, bool suffix, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (*s == '\0' || *s == '-' || *s == '+')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	if (suffix && *end) {
		unsigned int shift = 0;

		switch (*end) {
		case 'k': case 'K': shift = 10; break;
		case 'm': case 'M': shift = 20; break;
		case 'g': case 'G': shift = 30; break;
		default: return -1;
		}
		if (v > (ULLONG_MAX >> shift))
			return -1;
		v <<= shift;
		end++;
	}
	if (*end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static int pt_parse_int(const char *s, int lo, int hi, int *out)
{
	uint64_t v;

	if (lo < 0 && s[0] == '-') {
		if (pt_parse_u64(s + 1, 0, (uint64_t)-(int64_t)lo, false, &v))
			return -1;
		*out = -(int)v;
		return 0;
	}
	if (pt_parse_u64(s, lo < 0 ? 0 : (uint64_t)lo, (uint64_t)hi, false, &v))
		return -1;
	*out = (int)v;
	return 0;
}

static int pt_parse_conn(const char *s, enum pt_conn *c)
{
	for (unsigned int i = 0; i < sizeof(pt_conn_names) / sizeof(pt_conn_names[0]); i++) {
		if (strcasecmp(s, pt_conn_names[i]) == 0) {
			*c = (enum pt_conn)i;
			return 0;
		}
	}
	return -1;
}

static int pt_parse_atomic(const char *s, enum pt_atomic_op *op)
{
	if (strcasecmp(s, "CMP_AND_SWAP") == 0 || strcasecmp(s, "CMP_SWAP") == 0)
		*op = PT_CMP_AND_SWAP;
	else if (strcasecmp(s, "FETCH_AND_ADD") == 0 || strcasecmp(s, "FETCH_ADD") == 0)
		*op = PT_FETCH_AND_ADD;
	else
		return -1;
	return 0;
}

/* Test name from argv[0] when the binary is called e.g. roce_write_bw. */
static const struct pt_mode *pt_mode_from_argv0(const char *argv0)
{
	const char *base = strrchr(argv0, '/');
	size_t blen;

	base = base ? base + 1 : argv0;
	blen = strlen(base);
	for (size_t i = 0; i < PT_NMODES; i++) {
		size_t n = strlen(pt_modes[i]->name);

		if (blen > n && strcmp(base + blen - n, pt_modes[i]->name) == 0 &&
		    (base[blen - n - 1] == '_' || base[blen - n - 1] == '-'))
			return pt_modes[i];
	}
	return NULL;
}

#define PT_BAD(...) do { fprintf(err, " " __VA_ARGS__); fputc('\n', err); return PT_PARSE_ERROR; } while (0)

/* perftest's force_dependecies(), for what we support. */
static int pt_params_check(struct pt_params *p, FILE *err)
{
	const struct pt_mode *m = p->mode;

	if (!(m->conns & PT_CONN_BIT(p->conn)))
		PT_BAD("%s does not support connection type %s", m->name, pt_conn_name(p->conn));
	if (!p->size_set)
		p->size = m->verb == PT_ATOMIC ? PT_SIZE_ATOMIC : m->kind == PT_BW ? PT_DEF_SIZE_BW : PT_DEF_SIZE_LAT;
	if (m->verb == PT_ATOMIC) {
		if (p->size != PT_SIZE_ATOMIC)
			PT_BAD("atomic tests use 8-byte operands (-s 8)");
		if (p->all_sizes)
			PT_BAD("-a/--all is not available with atomics");
	} else if (p->atomic_op != PT_FETCH_AND_ADD) {
		PT_BAD("-A/--atomic_type is only for atomic tests");
	}
	if (p->iters == 0)
		p->iters = (m->kind == PT_BW && m->verb == PT_WRITE) ? PT_DEF_ITERS_WB : PT_DEF_ITERS;
	if (m->kind == PT_LAT) {
		if (p->num_qps != 1)
			PT_BAD("-q/--qp is only for bandwidth tests");
		if (p->tx_depth_set)
			PT_BAD("-t/--tx-depth is only for bandwidth tests");
		if (p->cq_mod_set)
			PT_BAD("-Q/--cq-mod is only for bandwidth tests");
		p->tx_depth = 1;
		p->cq_mod = 1;
	} else if (!p->tx_depth_set) {
		p->tx_depth = PT_DEF_TX_BW;
	}
	if (!p->rx_depth_set)
		p->rx_depth = m->verb == PT_SEND ? PT_DEF_RX_SEND : 1;
	else if (m->verb != PT_SEND)
		PT_BAD("-r/--rx-depth is only for SEND tests");
	if (p->use_event && m->verb == PT_WRITE)
		PT_BAD("-e/--events is not available with RDMA WRITE (as in perftest)");
	if (p->inline_size && (m->verb == PT_READ || m->verb == PT_ATOMIC))
		PT_BAD("-I/--inline_size is not available with READ or atomics");
	if (p->out_reads && m->verb != PT_READ && m->verb != PT_ATOMIC)
		PT_BAD("-o/--outs is only for READ and atomic tests");
	if (p->conn == PT_UD && !p->all_sizes && p->size > 4096)
		PT_BAD("UD messages must fit the MTU (-s <= 4096)");
	if (p->duration) {
		if (p->all_sizes)
			PT_BAD("-D/--duration and -a/--all cannot be combined");
		if (p->use_event)
			PT_BAD("Duration mode doesn't work with events.");
		if (p->margin < 0)
			p->margin = p->duration / 4;
		if (!(p->duration > 2 * p->margin))
			PT_BAD("please check that DURATION > 2*MARGIN");
		p->no_peak = true;
	} else if (p->margin >= 0) {
		PT_BAD("-f/--margin needs -D/--duration");
	}
	if (m->kind == PT_BW && p->iters > PT_PEAK_MAX_ITERS)
		p->no_peak = true;
	if (p->single_process && p->servername)
		PT_BAD("--single-process takes no server name");
	if (!p->single_process && (p->peer_devname || p->peer_ib_port || p->peer_gid_index != INT_MIN))
		PT_BAD("--peer-dev/--peer-ib-port/--peer-gid-index need --single-process");
	if (!p->peer_ib_port)
		p->peer_ib_port = p->ib_port;
	if (p->peer_gid_index == INT_MIN)
		p->peer_gid_index = p->gid_index;
	if (p->out_file && p->output == PT_OUT_TABLE)
		p->output = PT_OUT_JSON;
	return PT_PARSE_OK;
}

int pt_params_parse(struct pt_params *p, int argc, char **argv, FILE *out, FILE *err)
{
	const char *argv0 = argc > 0 ? argv[0] : "roce-perftest";
	uint64_t v;
	int c;

	pt_params_defaults(p);
	p->mode = pt_mode_from_argv0(argv0);
	optind = 0;     /* GNU: full re-initialisation, so the parser can run twice */
	opterr = 0;
	for (;;) {
		/* '+' stops at the first non-option; positionals are collected below */
		c = getopt_long(argc, argv, pt_short_opts, pt_long_opts, NULL);
		if (c == -1) {
			if (optind >= argc)
				break;
			const char *arg = argv[optind++];
			const struct pt_mode *m = pt_mode_find(arg);

			if (m && !p->mode) {
				p->mode = m;
			} else if (!p->servername && !m) {
				p->servername = arg;
			} else {
				fprintf(err, " Unexpected argument '%s'\n", arg);
				return PT_PARSE_ERROR;
			}
			continue;
		}
		switch (c) {
		case 'a': p->all_sizes = true; break;
		case 'A':
			if (pt_parse_atomic(optarg, &p->atomic_op))
				PT_BAD("Invalid atomic type '%s' (CMP_AND_SWAP or FETCH_AND_ADD)", optarg);
			break;
		case 'c':
			if (pt_parse_conn(optarg, &p->conn))
				PT_BAD("Invalid connection type '%s' (RC, UC or UD)", optarg);
			break;
		case 'd': p->ib_devname = optarg; break;
		case 'D':
			if (pt_parse_int(optarg, 1, 86400, &p->duration))
				PT_BAD("Invalid duration '%s' (seconds, 1-86400)", optarg);
			break;
		case 'e': p->use_event = true; break;
		case 'f':
			if (pt_parse_int(optarg, 0, 86400, &p->margin))
				PT_BAD("Invalid margin '%s'", optarg);
			break;
		case 'F': break;
		case 'h': pt_usage(out, argv0); return PT_PARSE_EXIT;
		case 'i':
			if (pt_parse_int(optarg, 1, 255, &p->ib_port))
				PT_BAD("Invalid IB port '%s'", optarg);
			break;
		case 'I':
			if (pt_parse_int(optarg, 0, PT_MAX_INLINE, &p->inline_size))
				PT_BAD("Invalid inline size '%s' (0-%d)", optarg, PT_MAX_INLINE);
			break;
		case 'm':
			if (pt_parse_int(optarg, 256, 4096, &p->mtu) || (p->mtu & (p->mtu - 1)))
				PT_BAD("Invalid MTU '%s' (256, 512, 1024, 2048 or 4096)", optarg);
			break;
		case 'n':
			if (pt_parse_u64(optarg, PT_MIN_ITERS, UINT64_C(1) << 32, false, &p->iters))
				PT_BAD("Invalid number of iterations '%s' (at least %d)", optarg, PT_MIN_ITERS);
			break;
		case 'N': p->no_peak = true; break;
		case 'o':
			if (pt_parse_int(optarg, 1, 255, &p->out_reads))
				PT_BAD("Invalid outstanding reads '%s' (1-255)", optarg);
			break;
		case 'p':
			if (pt_parse_int(optarg, 1, 65535, &p->tcp_port))
				PT_BAD("Invalid port '%s'", optarg);
			break;
		case 'q':
			if (pt_parse_int(optarg, 1, PT_MAX_QPS, &p->num_qps))
				PT_BAD("Invalid number of QPs '%s' (1-%d)", optarg, PT_MAX_QPS);
			break;
		case 'Q':
			if (pt_parse_int(optarg, 1, PT_MAX_CQ_MOD, &p->cq_mod))
				PT_BAD("Invalid CQ moderation '%s' (1-%d)", optarg, PT_MAX_CQ_MOD);
			p->cq_mod_set = true;
			break;
		case 'r':
			if (pt_parse_int(optarg, 1, PT_MAX_RX, &p->rx_depth))
				PT_BAD("Invalid rx depth '%s' (1-%d)", optarg, PT_MAX_RX);
			p->rx_depth_set = true;
			break;
		case 's':
			if (pt_parse_u64(optarg, 1, PT_MAX_SIZE, true, &v))
				PT_BAD("Invalid message size '%s' (1-%u)", optarg, PT_MAX_SIZE);
			p->size = v;
			p->size_set = true;
			break;
		case 'S':
			if (pt_parse_int(optarg, 0, 15, &p->sl))
				PT_BAD("Invalid SL '%s' (0-15)", optarg);
			break;
		case 't':
			if (pt_parse_int(optarg, 1, PT_MAX_TX, &p->tx_depth))
				PT_BAD("Invalid tx depth '%s' (1-%d)", optarg, PT_MAX_TX);
			p->tx_depth_set = true;
			break;
		case 'u':
			if (pt_parse_int(optarg, 0, 31, &p->qp_timeout))
				PT_BAD("Invalid QP timeout '%s' (0-31)", optarg);
			break;
		case 'V': fprintf(out, "Version: %s\n", PT_VERSION); return PT_PARSE_EXIT;
		case 'x':
			if (pt_parse_int(optarg, 0, 1023, &p->gid_index))
				PT_BAD("Invalid GID index '%s'", optarg);
			break;
		case OPT_REPORT_GBITS: p->report_gbits = true; break;
		case OPT_RATE_LIMIT:
			if (pt_parse_int(optarg, 0, INT32_MAX, &p->pacing_kbps))
				PT_BAD("Invalid pacing rate '%s' (kb/s)", optarg);
			break;
		case OPT_VERIFY: p->verify = true; break;
		case OPT_SINGLE: p->single_process = true; break;
		case OPT_PEER_DEV: p->peer_devname = optarg; break;
		case OPT_PEER_PORT:
			if (pt_parse_int(optarg, 1, 255, &p->peer_ib_port))
				PT_BAD("Invalid IB port '%s'", optarg);
			break;
		case OPT_PEER_GID:
			if (pt_parse_int(optarg, 0, 1023, &p->peer_gid_index))
				PT_BAD("Invalid GID index '%s'", optarg);
			break;
		case OPT_OUTPUT:
			if (strcmp(optarg, "table") == 0)
				p->output = PT_OUT_TABLE;
			else if (strcmp(optarg, "csv") == 0)
				p->output = PT_OUT_CSV;
			else if (strcmp(optarg, "json") == 0)
				p->output = PT_OUT_JSON;
			else
				PT_BAD("Invalid output format '%s' (table, csv or json)", optarg);
			break;
		case OPT_OUT_FILE: p->out_file = optarg; break;
		case OPT_TEST:
			p->mode = pt_mode_find(optarg);
			if (!p->mode)
				PT_BAD("Unknown test '%s'", optarg);
			break;
		case OPT_STALL:
			if (pt_parse_int(optarg, 0, 86400, &p->stall_timeout))
				PT_BAD("Invalid stall timeout '%s'", optarg);
			break;
		case '?':
		default:
			if (optopt && optopt < 256)
				fprintf(err, " Invalid or incomplete option -%c\n", optopt);
			else
				fprintf(err, " Invalid or incomplete option %s\n", argv[optind - 1]);
			fprintf(err, " Try '%s --help'.\n", argv0);
			return PT_PARSE_ERROR;
		}
	}
	if (!p->mode) {
		fprintf(err, " No test given. Choose one of:");
		for (size_t i = 0; i < PT_NMODES; i++)
			fprintf(err, " %s", pt_modes[i]->name);
		fprintf(err, "\n Try '%s --help'.\n", argv0);
		return PT_PARSE_ERROR;
	}
	return pt_params_check(p, err);
}
