/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * roce-daemon: the RoCEv2 dataplane.
 *
 *   roce-daemon [EAL options] -- --config FILE [--pcap FILE [--pcap-max N]]
 *   roce-daemon --config FILE ...          (EAL options from [daemon] only)
 *   roce-daemon --check-config FILE | --help
 *
 * Start-up is one explicit sequence (nothing runs "at some point"):
 *   1. command line          6. workers, rings, QP tables
 *   2. configuration file    7. neighbour table
 *   3. EAL                   8. capture (--pcap)
 *   4. signals               9. application interface (lib/ctl server
 *   5. ports                   on [daemon] socket), telemetry commands
 *                           10. launch workers, run the control loop
 * Shutdown (SIGINT/SIGTERM) runs it backwards and exits 0.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>

#include "app_iface.h"
#include "capture.h"
#include "config.h"
#include "counters.h"
#include "daemon.h"
#include "engine_xport.h"
#include "gid.h"

#define EXIT_USAGE 1    /* bad command line or configuration */
#define EXIT_INIT 2     /* EAL, port or resource set-up failed */
#define MAX_EAL_ARGS 64

struct options {
	const char *config;
	const char *pcap;
	uint64_t pcap_max;
	bool check_only;
	char **eal_argv;         /* EAL options from the command line (before "--") */
	int eal_argc;
};

static struct daemon the_daemon;

static void
usage(FILE *out, const char *prog)
{
	fprintf(out,
		"Usage: %s [EAL options] -- --config FILE [options]\n"
		"       %s --config FILE [options]      (EAL options from [daemon] eal_args)\n"
		"\n"
		"The RoCEv2 dataplane: owns the ports in FILE through DPDK PMDs, answers ARP/ND,\n"
		"serves applications through the verbs shim. Stops cleanly on SIGINT/SIGTERM.\n"
		"\n"
		"Options:\n"
		"  -c, --config FILE     configuration (INI; see config/roce-daemon.conf.example)\n"
		"      --check-config FILE  parse FILE, print the result, exit (no EAL)\n"
		"      --pcap FILE       capture every frame the workers receive and send (pcapng)\n"
		"      --pcap-max N      stop capturing after N frames\n"
		"  -h, --help            this text\n"
		"\n"
		"Configuration keys:\n", prog, prog);
	config_print_keys(out);
	fprintf(out,
		"\nCounters: dpdk-telemetry.py -f PREFIX, then /roce/port/stats,0 (see /roce/info,\n"
		"/roce/counters/help). Exit status: 0 clean stop, 1 bad usage or configuration,\n"
		"2 start-up failure.\n");
}

/* Split argv at "--": before are EAL options, after are ours. */
static int
parse_args(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "check-config", required_argument, NULL, 'C' },
		{ "pcap", required_argument, NULL, 'p' },
		{ "pcap-max", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int sep = -1, opt;
	char *end;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0) {
			sep = i;
			break;
		}
	}
	o->eal_argv = argv + 1;
	o->eal_argc = sep < 0 ? 0 : sep - 1;
	/* getopt over our part only, with argv[0] in front */
	int first = sep < 0 ? 1 : sep + 1;
	int n = argc - first + 1;
	char **av = calloc((size_t)n + 1, sizeof(*av));

	if (av == NULL)
		return -1;
	av[0] = argv[0];
	for (int i = 1; i < n; i++)
		av[i] = argv[first + i - 1];
	optind = 1;
	opterr = 1;
	while ((opt = getopt_long(n, av, "c:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			o->config = optarg;
			break;
		case 'C':
			o->config = optarg;
			o->check_only = true;
			break;
		case 'p':
			o->pcap = optarg;
			break;
		case 'm':
			errno = 0;
			o->pcap_max = strtoull(optarg, &end, 10);
			if (errno != 0 || *end != '\0' || *optarg == '-') {
				fprintf(stderr, "%s: --pcap-max %s: not a number\n", argv[0], optarg);
				free(av);
				return -1;
			}
			break;
		case 'h':
			usage(stdout, argv[0]);
			free(av);
			exit(0);
		default:
			fprintf(stderr, "Try '%s --help'.\n", argv[0]);
			free(av);
			return -1;
		}
	}
	if (optind < n) {
		fprintf(stderr, "%s: unexpected argument '%s' (EAL options go before \"--\")\n",
			argv[0], av[optind]);
		free(av);
		return -1;
	}
	free(av);
	if (o->config == NULL) {
		fprintf(stderr, "%s: --config FILE is required. Try '%s --help'.\n", argv[0], argv[0]);
		return -1;
	}
	return 0;
}

static bool
eal_sets_lcores(const struct options *o, const char *cfg_args)
{
	for (int i = 0; i < o->eal_argc; i++) {
		const char *a = o->eal_argv[i];

		if (strncmp(a, "-l", 2) == 0 || strncmp(a, "-c", 2) == 0 || strncmp(a, "--lcores", 8) == 0)
			return true;
	}
	return strstr(cfg_args, "--lcores") != NULL || strstr(cfg_args, "-l ") != NULL ||
	       strncmp(cfg_args, "-l", 2) == 0 || strstr(cfg_args, " -l") != NULL ||
	       strstr(cfg_args, "-c ") != NULL;
}

/* argv for rte_eal_init: program, command-line EAL options, [daemon] eal_args, lcores. */
static int
build_eal_argv(const char *prog, const struct options *o, const struct config *cfg,
	       char *storage, size_t storage_len, char **out)
{
	int n = 0;
	char *save = NULL;

	out[n++] = (char *)(uintptr_t)prog;
	for (int i = 0; i < o->eal_argc && n < MAX_EAL_ARGS - 4; i++)
		out[n++] = o->eal_argv[i];
	snprintf(storage, storage_len, "%s", cfg->daemon.eal_args);
	for (char *tok = strtok_r(storage, " \t", &save); tok != NULL; tok = strtok_r(NULL, " \t", &save)) {
		if (n >= MAX_EAL_ARGS - 4)
			return -1;
		out[n++] = tok;
	}
	if (cfg->daemon.lcores[0] != '\0' && !eal_sets_lcores(o, cfg->daemon.eal_args)) {
		out[n++] = (char *)(uintptr_t)"--lcores";
		out[n++] = (char *)(uintptr_t)cfg->daemon.lcores;
	}
	if (!cfg->daemon.telemetry)
		out[n++] = (char *)(uintptr_t)"--no-telemetry";
	out[n] = NULL;
	return n;
}

static void
on_signal(int sig)
{
	(void)sig;
	daemon_request_stop(&the_daemon);
}

static int
install_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGINT, &sa, NULL) != 0 || sigaction(SIGTERM, &sa, NULL) != 0)
		return -1;
	sa.sa_handler = SIG_IGN;
	return sigaction(SIGPIPE, &sa, NULL);
}

static void
print_config(const struct config *cfg)
{
	char a[80];

	printf("config %s: %u port(s), idle %s, lcores '%s'\n", cfg->path, cfg->n_ports,
	       config_idle_name(cfg->daemon.idle), cfg->daemon.lcores);
	for (unsigned int i = 0; i < cfg->n_ports; i++) {
		const struct config_port *p = &cfg->ports[i];

		printf("  port %s: %s mtu %u %s", p->name, p->devargs, p->mtu,
		       p->mode == CONFIG_PORT_SHARED ? "shared" : "dedicated");
		for (unsigned int k = 0; k < p->n_addrs; k++) {
			config_addr_format(&p->addrs[k], a, sizeof(a));
			printf(" %s", a);
		}
		printf("\n");
	}
}

static void
print_ports(const struct daemon *d)
{
	char g[INET6_ADDRSTRLEN];

	for (unsigned int i = 0; i < d->n_ports; i++) {
		const struct port *p = &d->port[i];

		printf("port %s: ethdev %u (%s%s%s) mac %02x:%02x:%02x:%02x:%02x:%02x mtu %u "
		       "RoCE mtu %u, %u rx / %u tx queues\n", p->cfg->name, p->port_id, p->driver,
		       p->ifname[0] ? " on " : "", p->ifname, p->mac[0], p->mac[1], p->mac[2],
		       p->mac[3], p->mac[4], p->mac[5], p->mtu,
		       roce_mtu_bytes((uint8_t)gid_ib_mtu_from_ip_mtu(p->mtu)), p->n_rxq, p->n_txq);
		for (unsigned int k = 0; k < p->gids.n; k++) {
			inet_ntop(AF_INET6, p->gids.entry[k].gid, g, sizeof(g));
			printf("  gid[%u] %s\n", k, g);
		}
	}
}

int
main(int argc, char **argv)
{
	static struct config cfg;
	static char err[CONFIG_ERR_LEN];
	static char eal_storage[sizeof(cfg.daemon.eal_args)];
	char *eal_argv[MAX_EAL_ARGS + 1];
	struct options opt;
	struct daemon *d = &the_daemon;
	struct app_iface *ai = NULL;
	int eal_argc, rc;

	/* 1. command line */
	memset(&opt, 0, sizeof(opt));
	if (parse_args(argc, argv, &opt) < 0)
		return EXIT_USAGE;

	/* 2. configuration */
	if (config_load(opt.config, &cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s", err);
		fprintf(stderr, "roce-daemon: configuration rejected\n");
		return EXIT_USAGE;
	}
	if (opt.check_only) {
		print_config(&cfg);
		return 0;
	}

	/* 3. EAL */
	eal_argc = build_eal_argv(argv[0], &opt, &cfg, eal_storage, sizeof(eal_storage), eal_argv);
	if (eal_argc < 0) {
		fprintf(stderr, "roce-daemon: too many EAL arguments\n");
		return EXIT_USAGE;
	}
	if (rte_eal_init(eal_argc, eal_argv) < 0) {
		fprintf(stderr, "roce-daemon: EAL initialisation failed: %s\n", rte_strerror(rte_errno));
		return EXIT_INIT;
	}
	daemon_init(d, &cfg, &engine_xport);

	/* 4. signals (after EAL: its threads inherit nothing we rely on) */
	if (install_signals() != 0) {
		perror("roce-daemon: sigaction");
		rc = EXIT_INIT;
		goto out;
	}

	/* 5.-9. ports, workers, neighbours, capture, telemetry */
	rc = EXIT_INIT;
	if (daemon_plan_workers(d, err, sizeof(err)) < 0 || daemon_open_ports(d, err, sizeof(err)) < 0 ||
	    daemon_create_workers(d, err, sizeof(err)) < 0 ||
	    daemon_create_neigh(d, err, sizeof(err)) < 0 ||
	    (opt.pcap != NULL && capture_open(d, opt.pcap, opt.pcap_max, err, sizeof(err)) < 0)) {
		fprintf(stderr, "roce-daemon: %s\n", err);
		goto out;
	}
	ai = app_iface_create(d, err, sizeof(err));
	if (ai == NULL) {
		fprintf(stderr, "roce-daemon: %s\n", err);
		goto out;
	}
	if (cfg.daemon.telemetry && (rc = ctr_telemetry_register(d)) != 0) {
		fprintf(stderr, "roce-daemon: telemetry: %s\n", strerror(-rc));
		rc = EXIT_INIT;
		goto out;
	}
	print_ports(d);

	/* 10. run */
	if (daemon_launch_workers(d) != 0) {
		fprintf(stderr, "roce-daemon: cannot launch the workers\n");
		rc = EXIT_INIT;
		goto out;
	}
	printf("roce-daemon: ready: %u worker(s), engine %s, pid %d\n", d->n_workers,
	       d->engine->name, (int)getpid());
	fflush(stdout);
	if (!daemon_stopping(d))
		control_run(d);
	rc = 0;
	printf("roce-daemon: stopping\n");
	fflush(stdout);
out:
	/* clients see IBV_EVENT_DEVICE_FATAL, their objects go; then the dataplane */
	app_iface_destroy(ai);
	daemon_shutdown(d);
	rte_eal_cleanup();
	if (rc == 0 && d->worker_failures > 0) {
		fprintf(stderr, "roce-daemon: %u worker(s) failed\n", d->worker_failures);
		rc = EXIT_INIT;
	}
	if (rc == 0)
		printf("roce-daemon: stopped\n");
	return rc;
}
