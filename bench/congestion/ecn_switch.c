/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ecn_switch: a user-space Ethernet switch with one shaped, ECN-marking
 * egress queue, for the congestion testbed (bench/congestion/testbed.sh).
 *
 *   ecn_switch [options] IF0 IF1 ... (the first is the bottleneck port)
 *     -r MBPS    egress rate of the bottleneck port (default 100)
 *     -k KMIN    marking starts above KMIN bytes queued (default 5000)
 *     -K KMAX    marking probability reaches PMAX at KMAX bytes, 1 above (default 50000)
 *     -p PMAX    marking probability at KMAX, percent (default 100)
 *     -b BYTES   buffer: a frame that does not fit is dropped (tail drop; default 250000)
 *     -t SEC     run this long, then exit (default 30, at most 600)
 *     -i MS      report interval (default 10)
 *     -o FILE    CSV report: time_ms,queue_bytes,marks,drops,forwarded then
 *                bytes per source MAC (columns named in the header)
 *
 * Frames are read from AF_PACKET sockets on the interfaces (frames the
 * kernel sent out of them are ignored), switched by destination MAC (learnt
 * from source MACs; unknown and broadcast destinations are flooded), and
 * sent at once, except frames for the bottleneck port: those join its
 * queue, a FIFO that drains at the configured rate. An ECN-capable IPv4 or
 * IPv6 frame that finds more than KMIN bytes queued is marked CE (RED-like:
 * probability rising linearly to PMAX at KMAX; RFC 3168 section 5); the
 * IPv4 header checksum is updated. The queue is run on the kernel's receive
 * timestamps, so a switch process that was descheduled still gives each
 * arrival the queue depth (marking, tail drop) a real link would have. The RoCE ICRC does not cover these bits
 * (IBTA Annex A17.3.3 masks the TOS), so marked RoCE frames stay valid.
 * Only interfaces given on the command line are touched; everything is
 * bounded in time (-t).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "red.h"

#define MAX_PORTS 8
#define MAX_MACS 64
#define FRAME_MAX 9216
#define QUEUE_SLOTS 4096

struct port {
	const char *name;
	int fd;
	int ifindex;
};

struct mac_entry {
	uint8_t mac[6];
	int port;
	uint64_t bottleneck_bytes;   /* bytes this source sent through the bottleneck */
};

struct frame {
	uint32_t len;
	int src;                     /* mac table index of the source, -1 */
	uint8_t data[FRAME_MAX];
};

static struct port ports[MAX_PORTS];
static int n_ports;
static struct mac_entry macs[MAX_MACS];
static int n_macs;
static struct frame *queue;          /* ring of QUEUE_SLOTS */
static uint32_t q_head, q_len;
static uint64_t q_bytes;
static uint64_t marks, drops, forwarded;
static volatile sig_atomic_t stop;

/* CLOCK_REALTIME: the clock of the kernel's receive timestamps (SO_TIMESTAMPNS). */
static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void
on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int
open_port(struct port *p)
{
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL) };
	struct packet_mreq mr = { .mr_type = PACKET_MR_PROMISC };

	p->ifindex = (int)if_nametoindex(p->name);
	if (p->ifindex == 0) {
		fprintf(stderr, "ecn_switch: no interface %s\n", p->name);
		return -1;
	}
	p->fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK, htons(ETH_P_ALL));
	if (p->fd < 0) {
		perror("ecn_switch: socket");
		return -1;
	}
	sll.sll_ifindex = p->ifindex;
	mr.mr_ifindex = p->ifindex;
	int big = 4 << 20;
	setsockopt(p->fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	setsockopt(p->fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	int on = 1;
	setsockopt(p->fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof(on));
	if (bind(p->fd, (struct sockaddr *)&sll, sizeof(sll)) < 0 ||
	    setsockopt(p->fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof(mr)) < 0) {
		perror("ecn_switch: bind");
		return -1;
	}
	return 0;
}

/* The MAC table entry of @p mac, learnt on @p port if new (port -1: look up only). */
static int
mac_find(const uint8_t *mac, int port)
{
	for (int i = 0; i < n_macs; i++) {
		if (memcmp(macs[i].mac, mac, 6) == 0) {
			if (port >= 0)
				macs[i].port = port;
			return i;
		}
	}
	if (port < 0 || n_macs == MAX_MACS || (mac[0] & 1))
		return -1;
	memcpy(macs[n_macs].mac, mac, 6);
	macs[n_macs].port = port;
	return n_macs++;
}

static void
send_to(int port, const uint8_t *data, uint32_t len)
{
	if (send(ports[port].fd, data, len, MSG_DONTWAIT) == (ssize_t)len)
		forwarded++;
}

/* RFC 1624 incremental checksum update of a 16-bit word from @p old to @p new. */
static uint16_t
csum_update(uint16_t csum, uint16_t old, uint16_t new)
{
	uint32_t s = (uint16_t)~csum + (uint16_t)~old + new;

	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

/* Mark @p f CE if it is ECN-capable IP. @return true if marked. */
static bool
mark_ce(struct frame *f)
{
	uint8_t *p = f->data;
	uint32_t off = 12;
	uint16_t type = (uint16_t)(p[off] << 8 | p[off + 1]);

	if (type == ETH_P_8021Q && f->len >= 18) {
		off += 4;
		type = (uint16_t)(p[off] << 8 | p[off + 1]);
	}
	off += 2;
	if (type == ETH_P_IP && f->len >= off + 20) {
		uint8_t tos = p[off + 1];
		if ((tos & 3) == 0)
			return false;
		uint16_t old = (uint16_t)(p[off] << 8 | tos), csum;
		p[off + 1] = tos | 3;
		memcpy(&csum, p + off + 10, 2);
		csum = htons(csum_update(ntohs(csum), old, (uint16_t)(p[off] << 8 | p[off + 1])));
		memcpy(p + off + 10, &csum, 2);
		return true;
	}
	if (type == ETH_P_IPV6 && f->len >= off + 40) {
		/* traffic class: low 4 bits of byte 0, high 4 of byte 1; ECN = bits 5:4 of byte 1 */
		if ((p[off + 1] & 0x30) == 0)
			return false;
		p[off + 1] |= 0x30;
		return true;
	}
	return false;
}

static uint32_t kmin = 5000, kmax = 50000, buffer = 250000, pmax_pct = 100;

static uint64_t rng = 0x9e3779b97f4a7c15ull; /* red.h draws */

static void
enqueue(const uint8_t *data, uint32_t len, int src)
{
	if (q_bytes + len > buffer || q_len == QUEUE_SLOTS) {
		drops++;
		return;
	}
	struct frame *f = &queue[(q_head + q_len) % QUEUE_SLOTS];
	memcpy(f->data, data, len);
	f->len = len;
	f->src = src;
	if (red_mark(&rng, q_bytes, kmin, kmax, pmax_pct) && mark_ce(f))
		marks++;
	q_len++;
	q_bytes += len;
}

static double ns_per_byte;
static uint64_t next_tx;             /* when the bottleneck link is free */

/*
 * Run the bottleneck up to time @p t: frames whose turn came by then leave
 * (late if this process was descheduled: the rate and the queue the next
 * arrival sees stay those of a real link).
 */
static void
drain(uint64_t t)
{
	while (q_len && next_tx <= t) {
		struct frame *f = &queue[q_head];
		send_to(0, f->data, f->len);
		if (f->src >= 0)
			macs[f->src].bottleneck_bytes += f->len;
		next_tx += (uint64_t)(f->len * ns_per_byte);
		q_head = (q_head + 1) % QUEUE_SLOTS;
		q_len--;
		q_bytes -= f->len;
	}
	if (q_len == 0 && next_tx < t)
		next_tx = t; /* idle link: no credit saved */
}

static void
receive(int in, uint8_t *buf)
{
	for (int n = 0; n < 256; n++) {
		struct sockaddr_ll from;
		char ctl[64];
		struct iovec iov = { .iov_base = buf, .iov_len = FRAME_MAX };
		struct msghdr mh = { .msg_name = &from, .msg_namelen = sizeof(from), .msg_iov = &iov,
				     .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof(ctl) };
		ssize_t len = recvmsg(ports[in].fd, &mh, 0);
		uint64_t at = 0;

		if (len < 0)
			return;
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
				struct timespec ts;
				memcpy(&ts, CMSG_DATA(c), sizeof(ts));
				at = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
			}
		}
		/* the queue as it was when the frame arrived (kernel timestamp) */
		drain(at ? at : now_ns());
		if (from.sll_pkttype == PACKET_OUTGOING || len < 14)
			continue;
		int src = mac_find(buf + 6, in);
		int dst = (buf[0] & 1) ? -1 : mac_find(buf, -1);
		int out = dst >= 0 ? macs[dst].port : -1;

		if (out == in)
			continue;
		if (out == 0) {
			enqueue(buf, (uint32_t)len, src);
		} else if (out > 0) {
			send_to(out, buf, (uint32_t)len);
		} else {
			for (int p = 0; p < n_ports; p++)
				if (p != in)
					send_to(p, buf, (uint32_t)len); /* flood: unshaped */
		}
	}
}

int
main(int argc, char **argv)
{
	double mbps = 100;
	unsigned int secs = 30, interval_ms = 10;
	const char *out_path = NULL;
	int opt;

	while ((opt = getopt(argc, argv, "r:k:K:p:b:t:i:o:")) != -1) {
		switch (opt) {
		case 'r': mbps = atof(optarg); break;
		case 'k': kmin = (uint32_t)atoi(optarg); break;
		case 'K': kmax = (uint32_t)atoi(optarg); break;
		case 'p': pmax_pct = (uint32_t)atoi(optarg); break;
		case 'b': buffer = (uint32_t)atoi(optarg); break;
		case 't': secs = (unsigned int)atoi(optarg); break;
		case 'i': interval_ms = (unsigned int)atoi(optarg); break;
		case 'o': out_path = optarg; break;
		default:
			fprintf(stderr, "usage: ecn_switch [-r MBPS] [-k KMIN] [-K KMAX] [-p PMAX%%] "
					"[-b BYTES] [-t SEC] [-i MS] [-o CSV] IF0(bottleneck) IF1 ...\n");
			return 2;
		}
	}
	if (mbps <= 0 || secs == 0 || secs > 600 || interval_ms == 0 || kmax <= kmin ||
	    pmax_pct > 100 || argc - optind < 2 || argc - optind > MAX_PORTS) {
		fprintf(stderr, "ecn_switch: bad arguments (2..%d interfaces, 0 < -t <= 600, "
				"-K > -k, -p <= 100)\n", MAX_PORTS);
		return 2;
	}
	queue = calloc(QUEUE_SLOTS, sizeof(*queue));
	FILE *out = out_path ? fopen(out_path, "w") : stdout;
	if (!queue || !out) {
		perror("ecn_switch");
		return 1;
	}
	for (int i = optind; i < argc; i++) {
		ports[n_ports].name = argv[i];
		if (open_port(&ports[n_ports]) < 0)
			return 1;
		n_ports++;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);

	struct pollfd pfd[MAX_PORTS];
	static uint8_t buf[FRAME_MAX];
	uint64_t t0 = now_ns(), end = t0 + (uint64_t)secs * 1000000000u;
	uint64_t next_report = t0;

	ns_per_byte = 8000.0 / mbps;
	next_tx = t0;
	uint64_t last_src_bytes[MAX_MACS] = { 0 };
	int header_macs = -1;

	for (int p = 0; p < n_ports; p++)
		pfd[p] = (struct pollfd){ .fd = ports[p].fd, .events = POLLIN };
	while (!stop) {
		uint64_t now = now_ns();

		if (now >= end)
			break;
		drain(now); /* the bottleneck at its rate */
		if (now >= next_report) {
			if (header_macs != n_macs) { /* a new source: a new header line */
				fprintf(out, "time_ms,queue_bytes,marks,drops,forwarded");
				for (int i = 0; i < n_macs; i++)
					fprintf(out, ",%02x:%02x:%02x:%02x:%02x:%02x", macs[i].mac[0],
						macs[i].mac[1], macs[i].mac[2], macs[i].mac[3],
						macs[i].mac[4], macs[i].mac[5]);
				fprintf(out, "\n");
				header_macs = n_macs;
			}
			fprintf(out, "%.1f,%lu,%lu,%lu,%lu", (double)(now - t0) / 1e6,
				(unsigned long)q_bytes, (unsigned long)marks, (unsigned long)drops,
				(unsigned long)forwarded);
			for (int i = 0; i < n_macs; i++) {
				fprintf(out, ",%lu",
					(unsigned long)(macs[i].bottleneck_bytes - last_src_bytes[i]));
				last_src_bytes[i] = macs[i].bottleneck_bytes;
			}
			fprintf(out, "\n");
			next_report += (uint64_t)interval_ms * 1000000u;
		}
		uint64_t wait = next_report - now;
		if (q_len && next_tx > now && next_tx - now < wait)
			wait = next_tx - now;
		struct timespec ts = { .tv_sec = 0, .tv_nsec = (long)(wait < 1000000 ? wait : 1000000) };
		if (q_len && next_tx <= now)
			ts.tv_nsec = 0;
		if (ppoll(pfd, (nfds_t)n_ports, &ts, NULL) > 0)
			for (int p = 0; p < n_ports; p++)
				if (pfd[p].revents & POLLIN)
					receive(p, buf);
	}
	fprintf(stderr, "ecn_switch: %lu forwarded, %lu marked, %lu dropped\n",
		(unsigned long)forwarded, (unsigned long)marks, (unsigned long)drops);
	if (out != stdout)
		fclose(out);
	return 0;
}
