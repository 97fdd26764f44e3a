/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target for the daemon's config parser (app/roce-daemon/config.c,
 * included here for its key tables and its reader): arbitrary files, read
 * both ways the daemon reads them: config_load_string(), and config_load()'s
 * stdio reader (from memory, fmemopen; on a sample of inputs from a real
 * file by config_load() itself, which must read the same).
 * Invariants besides "no crash, no out-of-bounds access" (ASan/UBSan):
 *  - the result is 0 or -1, the error text NUL-terminated inside its
 *    buffer, empty on success and not on failure;
 *  - text without NUL bytes gets the same verdict and errors both ways;
 *  - a file reads exactly as the same bytes from memory (verdict, error
 *    text, config);
 *  - an accepted file gives a config inside every limit the key table
 *    states: 1..CONFIG_MAX_PORTS ports, address and neighbour counts,
 *    prefix lengths, every number in its [min, max], every enum a name,
 *    every string terminated in its field, an absolute socket path; and the
 *    helpers the daemon calls on it (config_port_cc, config_addr_format)
 *    take every port.
 */
#include "config.c"

#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "invariant failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); abort(); } } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct config cfg_a, cfg_b, cfg_c;
static char err_a[CONFIG_ERR_LEN], err_b[CONFIG_ERR_LEN], err_c[CONFIG_ERR_LEN];

static void
check_fields(const struct config_key *keys, size_t n, const void *base)
{
	for (size_t i = 0; i < n; i++) {
		const struct config_key *k = &keys[i];
		const uint8_t *f = (const uint8_t *)base + k->offset;
		uint32_t v;

		switch (k->type) {
		case KEY_U32:
			memcpy(&v, f, sizeof(v));
			CHECK(v >= k->min && v <= k->max);
			break;
		case KEY_ENUM: {
			uint32_t names = 0;

			memcpy(&v, f, sizeof(v));
			while (k->enum_names[names] != NULL)
				names++;
			CHECK(v < names);
			break;
		}
		case KEY_STRING:
			CHECK(memchr(f, '\0', k->size) != NULL);
			break;
		default:
			break;
		}
	}
}

static void
check_addr(const struct config_addr *a)
{
	char s[64];

	CHECK(a->prefix_len <= 128);
	config_addr_format(a, s, sizeof(s));
	CHECK(memchr(s, '\0', sizeof(s)) != NULL);
}

static void
check_config(const struct config *c)
{
	struct xport_cc cc;

	CHECK(c->n_ports >= 1 && c->n_ports <= CONFIG_MAX_PORTS);
	CHECK(c->daemon.socket_path[0] == '/');
	check_fields(daemon_keys, N_DAEMON_KEYS, &c->daemon);
	for (unsigned int i = 0; i < c->n_ports; i++) {
		const struct config_port *p = &c->ports[i];

		check_fields(port_keys, N_PORT_KEYS, p);
		CHECK(memchr(p->name, '\0', sizeof(p->name)) != NULL);
		CHECK(p->devargs[0] != '\0');
		CHECK(p->n_addrs <= CONFIG_MAX_ADDRS && p->n_resolve <= CONFIG_MAX_ADDRS);
		for (unsigned int a = 0; a < p->n_addrs; a++)
			check_addr(&p->addrs[a]);
		for (unsigned int a = 0; a < p->n_resolve; a++)
			check_addr(&p->resolve[a]);
		if (p->has_gateway4)
			check_addr(&p->gateway4);
		if (p->has_gateway6)
			check_addr(&p->gateway6);
		config_port_cc(p, 0, &cc);
		config_port_cc(p, UINT32_MAX, &cc);
		CHECK(cc.dcqcn.min_kbps <= cc.dcqcn.line_kbps);
	}
}

static void
check_verdict(int rc, const char *err)
{
	CHECK(rc == 0 || rc == -1);
	CHECK(memchr(err, '\0', CONFIG_ERR_LEN) != NULL);
	CHECK((rc == 0) == (err[0] == '\0'));
}

/*
 * Whether this input is also read from a real file (config_load() of a
 * memfd by its /proc path): about one in 16, chosen by the input's bytes
 * (so a crash replays); every input is read from memory through the same
 * stdio reader (fmemopen), which costs no system call.
 */
static bool
from_file(const uint8_t *data, size_t size)
{
	uint32_t h = 2166136261u ^ (uint32_t)size;

	for (size_t i = 0; i < size && i < 16; i++)
		h = (h ^ data[i]) * 16777619u;
	for (size_t i = size > 16 ? size - 16 : size; i < size; i++)
		h = (h ^ data[i]) * 16777619u;
	return size == 0 || (h & 15) == 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	char path[64];
	char *text = malloc(size + 1);
	int ra, rb = -1;

	CHECK(text != NULL);
	memcpy(text, data, size);
	text[size] = '\0';
	ra = config_load_string(text, "fuzz.ini", &cfg_a, err_a, sizeof(err_a));
	check_verdict(ra, err_a);
	if (ra == 0)
		check_config(&cfg_a);

	if (fd < 0)
		fd = memfd_create("fuzz.ini", 0);
	CHECK(fd >= 0);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (size > 0) {
		/* config_load()'s reader on the bytes, named as the file below */
		FILE *m = fmemopen((void *)data, size, "r");

		CHECK(m != NULL);
		rb = load_file(m, 0, path, &cfg_b, err_b, sizeof(err_b));
		fclose(m);
		check_verdict(rb, err_b);
		if (rb == 0)
			check_config(&cfg_b);
	}
	if (from_file(data, size)) {
		CHECK(ftruncate(fd, 0) == 0);
		CHECK(pwrite(fd, data, size, 0) == (ssize_t)size);
		int rc = config_load(path, &cfg_c, err_c, sizeof(err_c));

		check_verdict(rc, err_c);
		if (rc == 0)
			check_config(&cfg_c);
		if (size > 0) {
			/* the file reads as its bytes from memory did: same verdict, text, config */
			CHECK(rc == rb);
			CHECK(strcmp(err_c, err_b) == 0);
			CHECK(rc != 0 || memcmp(&cfg_c, &cfg_b, sizeof(cfg_c)) == 0);
		} else {
			rb = rc;
			memcpy(err_b, err_c, sizeof(err_b));
		}
	}
	if (memchr(data, '\0', size) == NULL) {
		CHECK(ra == rb);
		/* the messages name the file: compare them after it */
		char *ea = strchr(err_a, ':'), *eb = strchr(err_b, ':');

		CHECK((ea == NULL) == (eb == NULL));
		/* (unless the buffer cut them: the two names differ in length) */
		if (ea != NULL && strlen(err_a) < CONFIG_ERR_LEN - 512 &&
		    strlen(err_b) < CONFIG_ERR_LEN - 512) {
			/* one line per problem, "NAME:LINE: message": the same lines */
			size_t lines_a = 0, lines_b = 0;

			for (const char *s = err_a; *s; s++)
				lines_a += *s == '\n';
			for (const char *s = err_b; *s; s++)
				lines_b += *s == '\n';
			CHECK(lines_a == lines_b);
		}
	}
	free(text);
	return 0;
}
