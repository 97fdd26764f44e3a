/* SPDX-License-Identifier: BSD-3-Clause */
#include "helpers.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

void
t_gid4(const char *ip, uint8_t gid[16])
{
	memset(gid, 0, 16);
	gid[10] = 0xff;
	gid[11] = 0xff;
	inet_pton(AF_INET, ip, gid + 12);
}

void
t_gid6(const char *ip, uint8_t gid[16])
{
	inet_pton(AF_INET6, ip, gid);
}

static bool
is_v4(const uint8_t gid[16])
{
	static const uint8_t p[12] = { [10] = 0xff, [11] = 0xff };

	return memcmp(gid, p, 12) == 0;
}

static size_t
build(uint8_t *buf, size_t cap, const uint8_t dmac[6], const uint8_t smac[6],
      const uint8_t sgid[16], const uint8_t dgid[16], uint8_t opcode, uint32_t qpn,
      uint32_t paylen, uint8_t pad)
{
	static uint8_t payload[4096];
	struct roce_pkt pkt;

	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7 + 1);
	memset(&pkt, 0, sizeof(pkt));
	memcpy(pkt.l3.dmac, dmac, 6);
	memcpy(pkt.l3.smac, smac, 6);
	pkt.l3.ipv6 = !is_v4(dgid);
	memcpy(pkt.l3.sgid, sgid, 16);
	memcpy(pkt.l3.dgid, dgid, 16);
	pkt.l3.hop_limit = 64;
	pkt.l3.udp_sport = 0xc000 | (uint16_t)(qpn & 0x3fff);
	pkt.opcode = opcode;
	pkt.pkey = 0xffff;
	pkt.dest_qpn = qpn;
	pkt.psn = 100;
	pkt.pad = pad;
	pkt.payload = payload;
	pkt.payload_len = paylen;
	return roce_build(&pkt, buf, cap);
}

size_t
t_roce_frame(uint8_t *buf, size_t cap, const uint8_t dmac[6], const uint8_t smac[6],
	     const uint8_t sgid[16], const uint8_t dgid[16], uint32_t qpn, uint32_t paylen)
{
	return build(buf, cap, dmac, smac, sgid, dgid, ROCE_OP_RC_SEND_ONLY, qpn, paylen,
		     (uint8_t)((4 - paylen % 4) % 4));
}

size_t
t_arp_request(uint8_t *buf, const uint8_t sha[6], const char *sip, const char *tip)
{
	memset(buf, 0, 60);
	memset(buf, 0xff, 6);
	memcpy(buf + 6, sha, 6);
	buf[12] = 0x08;
	buf[13] = 0x06;
	uint8_t *a = buf + 14;
	a[1] = 1;          /* Ethernet */
	a[2] = 0x08;       /* IPv4 */
	a[4] = 6;
	a[5] = 4;
	a[7] = 1;          /* request */
	memcpy(a + 8, sha, 6);
	inet_pton(AF_INET, sip, a + 14);
	inet_pton(AF_INET, tip, a + 24);
	return 60;
}

/* ---- malformed frames ---- */

#define VALID(buf, cap) build(buf, cap, dmac, smac, sgid, dgid, ROCE_OP_RC_SEND_ONLY, 0x12, 64, 0)
#define IP 14u         /* IPv4 header offset */
#define UDP (IP + 20u)
#define BTH (UDP + 8u)

static void
ip4_csum(uint8_t *ip)
{
	uint32_t sum = 0;
	unsigned int ihl = (ip[0] & 0xfu) * 4u;

	ip[10] = ip[11] = 0;
	for (unsigned int i = 0; i < ihl; i += 2)
		sum += (uint32_t)(ip[i] << 8 | ip[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	sum = ~sum & 0xffff;
	ip[10] = (uint8_t)(sum >> 8);
	ip[11] = (uint8_t)sum;
}

#define BAD_ARGS uint8_t *buf, size_t cap, const uint8_t dmac[6], const uint8_t smac[6], \
	const uint8_t sgid[16], const uint8_t dgid[16]

static size_t
bad_icrc(BAD_ARGS)
{
	size_t n = VALID(buf, cap);

	buf[n - 1] ^= 0x5a;
	return n;
}

static size_t
bad_ip_csum(BAD_ARGS)
{
	size_t n = VALID(buf, cap);

	buf[IP + 10] ^= 0x01;
	return n;
}

static size_t
bad_ip_length(BAD_ARGS)
{
	return VALID(buf, cap) - 20; /* headers say 20 bytes more than sent */
}

static size_t
bad_tver(BAD_ARGS)
{
	size_t n = VALID(buf, cap);

	buf[BTH + 1] = (uint8_t)((buf[BTH + 1] & 0xf0) | 1);
	return n;
}

static size_t
bad_opcode(BAD_ARGS)
{
	size_t n = VALID(buf, cap);

	buf[BTH] = 0x1f; /* reserved RC opcode */
	return n;
}

static size_t
bad_udp_length(BAD_ARGS)
{
	size_t n = VALID(buf, cap);
	uint16_t l = (uint16_t)(buf[UDP + 4] << 8 | buf[UDP + 5]) + 4;

	buf[UDP + 4] = (uint8_t)(l >> 8);
	buf[UDP + 5] = (uint8_t)l;
	return n;
}

static size_t
bad_fragment(BAD_ARGS)
{
	size_t n = VALID(buf, cap);

	buf[IP + 6] = 0x20; /* more fragments, DF clear */
	ip4_csum(buf + IP);
	return n;
}

static size_t
bad_ihl(BAD_ARGS)
{
	size_t n = VALID(buf, cap);
	uint16_t tot = (uint16_t)(buf[IP + 2] << 8 | buf[IP + 3]) + 4;

	/* insert 4 bytes of IP options (NOPs): a well-formed IPv4 packet that
	 * RoCEv2 does not allow */
	memmove(buf + UDP + 4, buf + UDP, n - UDP);
	memset(buf + UDP, 1, 4);
	buf[IP] = 0x46;
	buf[IP + 2] = (uint8_t)(tot >> 8);
	buf[IP + 3] = (uint8_t)tot;
	ip4_csum(buf + IP);
	return n + 4;
}

static size_t
bad_short_bth(BAD_ARGS)
{
	size_t n = VALID(buf, cap);
	uint16_t ip_len = 20 + 8 + 8, udp_len = 8 + 8;

	(void)n;
	buf[IP + 2] = (uint8_t)(ip_len >> 8);
	buf[IP + 3] = (uint8_t)ip_len;
	ip4_csum(buf + IP);
	buf[UDP + 4] = (uint8_t)(udp_len >> 8);
	buf[UDP + 5] = (uint8_t)udp_len;
	return IP + ip_len;
}

static size_t
bad_pad(BAD_ARGS)
{
	/* only the last (or only) packet of a message may be padded */
	return build(buf, cap, dmac, smac, sgid, dgid, ROCE_OP_RC_SEND_FIRST, 0x12, 60, 2);
}

const struct t_bad_frame t_bad_frames[] = {
	{ "ICRC mismatch", "drop_icrc", bad_icrc },
	{ "IPv4 header checksum", "drop_ip_checksum", bad_ip_csum },
	{ "IP length beyond the frame", "drop_ip_length", bad_ip_length },
	{ "BTH TVer 1", "drop_bth_tver", bad_tver },
	{ "reserved opcode 0x1f", "drop_opcode_invalid", bad_opcode },
	{ "UDP length too large", "drop_udp_length", bad_udp_length },
	{ "IPv4 fragment", "drop_ip_fragment", bad_fragment },
	{ "IPv4 options", "drop_ip_ihl", bad_ihl },
	{ "UDP payload shorter than a BTH", "drop_bth_truncated", bad_short_bth },
	{ "pad count on a FIRST packet", "drop_pad", bad_pad },
};
const unsigned int t_n_bad_frames = sizeof(t_bad_frames) / sizeof(t_bad_frames[0]);

/* ---- telemetry ---- */

int
t_telemetry(const char *prefix, const char *cmd, char *out, size_t len)
{
	char dir[128];

	snprintf(dir, sizeof(dir), "/var/run/dpdk/%s", prefix);
	return t_telemetry_dir(dir, cmd, out, len);
}

int
t_telemetry_dir(const char *dir, const char *cmd, char *out, size_t len)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = 3 };
	char hello[1024];
	int fd, rc = 0;
	ssize_t n;

	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/dpdk_telemetry.v2", dir);
	fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 ||
	    recv(fd, hello, sizeof(hello), 0) <= 0 || send(fd, cmd, strlen(cmd), 0) < 0) {
		rc = -errno;
		goto out;
	}
	n = recv(fd, out, len - 1, 0);
	if (n <= 0) {
		rc = n < 0 ? -errno : -EIO;
		goto out;
	}
	out[n] = '\0';
out:
	close(fd);
	return rc;
}

long long
t_json_int(const char *json, const char *key)
{
	char pat[128];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(json, pat);
	if (p == NULL)
		return -1;
	return strtoll(p + strlen(pat), NULL, 10); /* strtoll skips the blank */
}

bool
t_json_has(const char *json, const char *needle)
{
	return strstr(json, needle) != NULL;
}

int
t_run(char *out, size_t len, unsigned int timeout_s, const char *fmt, ...)
{
	char cmd[2048], full[2300];
	va_list ap;
	FILE *f;
	size_t got = 0;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	snprintf(full, sizeof(full), "timeout -k 5 %u sh -c '%s' 2>&1", timeout_s, cmd);
	f = popen(full, "r");
	if (f == NULL)
		return -1;
	if (out != NULL && len > 0) {
		size_t n;

		while (got + 1 < len && (n = fread(out + got, 1, len - 1 - got, f)) > 0)
			got += n;
		out[got] = '\0';
	}
	{
		char sink[512];

		while (fread(sink, 1, sizeof(sink), f) > 0)
			;
	}
	st = pclose(f);
	if (st < 0 || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

void
t_fini_check(bool ok, const char *fmt, ...)
{
	va_list ap;

	if (ok)
		return;
	fprintf(stderr, "teardown check failed: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	fflush(stderr);
	abort();
}
