/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lossy_link: an impairing Ethernet relay between two interfaces, for the
 * interop loss tests on a host whose kernel has no sch_netem (the CI kernel:
 * no loadable modules, CONFIG_NET_SCH_NETEM unset).
 *
 *   lossy_link [--loss PCT] [--dup PCT] [--reorder PCT] [--seed N] [--all] [--ecn-ms D]
 *              [--paused] [--drop-cm MSG] IF_A IF_B
 *   lossy_link --names PCAP
 *
 * Every frame received on one interface is sent out of the other (AF_PACKET,
 * outgoing frames ignored). RoCEv2 frames (IPv4/IPv6 UDP to port 4791; every
 * frame with --all) are impaired, independently per direction, like netem's
 * loss / duplicate / reorder: dropped with probability --loss, sent twice with
 * probability --dup, or held back with probability --reorder and sent right
 * after the next frame of that direction (or after 5 ms without one).
 * Decisions come from a seeded xorshift generator, so a run is repeatable for
 * the same frame sequence.
 *
 * Impairments change while the relay runs, without a gap in the link:
 * SIGUSR1 turns them on, SIGUSR2 off (--paused: off from the start). A
 * restarted relay cuts the link for as long as the restart takes (1.7 to
 * 2.2 s measured under load, session 16: longer than an RC QP's 7 retries at
 * a 67 ms ACK timeout). Each change prints "lossy_link: impairments on" or
 * "off"; turning them off (or exiting while on) first prints the impaired
 * phase's counts, one line per direction:
 *   lossy_link: impaired phase: A->B frames=N impaired=I dropped=D
 *               duplicated=U reordered=O
 * A frame held back for reordering is sent when impairments go off.
 *
 * --drop-cm MSG (REQ, MRA, REJ, REP, RTU, DREQ, DREP, ...) also drops the
 * first IB CM message of that name in each direction while impairing, so a
 * test can take one handshake step away. A dropped CM message (a MAD to
 * QP1), chosen or by chance, is named as it goes:
 *   lossy_link: dropped CM DREQ A->B
 * --names PCAP prints, for each frame of a capture of Ethernet frames (pcap
 * or pcapng, read by libpcap) that the relay would name so, its number
 * (from 1) and the CM message: the test of that parse against a capture of
 * rxe's handshake (meson test lossy_link_names).
 * Runs until SIGTERM/SIGINT, then prints one line per direction:
 *   lossy_link: A->B frames=N impaired=I dropped=D duplicated=U reordered=O
 *               overrun=R send_failed=F marked=M max_wait_us=W
 * --ecn-ms D makes the relay a marking switch: a RoCEv2 frame sent ECN-capable
 * (ECT(0) or ECT(1)) that waited D ms or more in the relay's input queue (the
 * kernel's receive timestamp against the time the relay reads it) leaves with
 * Congestion Experienced set (the IPv4 header checksum updated; the ICRC
 * masks the ECN bits, RoCEv2 annex A17.3.1), as a switch marks above its
 * queue threshold: the senders' DCQCN then slows down instead of the queue
 * growing to seconds. Counted as marked=; the longest wait as max_wait_us=.
 * dropped is the impairment's; overrun (the kernel dropped frames for the
 * input socket, its buffer full: PACKET_STATISTICS tp_drops) and send_failed
 * (sendto refused a frame) are the relay's own losses, which a clean link
 * must not have: both sockets get 8 MiB buffers (SO_RCVBUFFORCE, as root)
 * so that a relay descheduled for a few milliseconds on a loaded machine
 * keeps what arrived meanwhile.
 * Exit status 0, or 2 when an interface cannot be opened.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <pcap/pcap.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cm.h"
#include "roce.h"

#define LINK_FRAME_MAX 16384
#define LINK_HOLD_MS 5
#define LINK_SOCK_BUF (64 << 20)
#define LINK_BATCH 64      /* frames per recvmmsg(); up to twice as many sent per sendmmsg() */
#define LINK_OUT_MAX (2 * LINK_BATCH + 2)
#define ROCE_UDP_PORT 4791

struct link_dir {
	const char *name;           /* "A->B" */
	int in_fd, out_fd, out_ifindex;
	uint8_t held[LINK_FRAME_MAX];
	size_t held_len;            /* 0: nothing held */
	uint64_t frames, impaired, dropped, duplicated, reordered;
	bool dropped_cm;            /* --drop-cm done this way */
	uint64_t send_failed;       /* sendmmsg() refused the frame */
	uint64_t marked;            /* CE set: waited --ecn-ms or more */
	uint64_t max_wait_ns;       /* longest wait in the input queue */
	/* frames, impaired, dropped, duplicated, reordered when impairments went on */
	uint64_t phase_at[5];
	/* frames to send, in order; they point into the receive batch or held[] */
	struct iovec out_iov[LINK_OUT_MAX];
	struct mmsghdr out_msg[LINK_OUT_MAX];
	unsigned int out_n;
};

struct link_opts {
	double loss, dup, reorder;  /* probabilities 0..1 */
	uint64_t seed;
	bool all;
	uint64_t ecn_ns;            /* mark CE at this wait; 0: never */
	const char *drop_cm;        /* --drop-cm: drop the first such CM message each way */
};

static volatile sig_atomic_t stop;
/* what the signals ask for (SIGUSR1 on, SIGUSR2 off); main() acts on a change */
static volatile sig_atomic_t want_impair = 1;
static uint64_t rng_state;

static void
on_signal(int sig)
{
	if (sig == SIGUSR1)
		want_impair = 1;
	else if (sig == SIGUSR2)
		want_impair = 0;
	else
		stop = 1;
}

/* xorshift64*: @return a uniform double in [0, 1). */
static double
rng_uniform(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (double)((rng_state * 0x2545f4914f6cdd1dull) >> 11) / 9007199254740992.0;
}

/* @return true for an IPv4 or IPv6 UDP datagram to the RoCEv2 port. */
static bool
is_roce(const uint8_t *f, size_t len)
{
	size_t l2 = 14;
	uint16_t type;

	if (len < 18)
		return false;
	type = (uint16_t)(f[12] << 8 | f[13]);
	if (type == 0x8100) {
		type = (uint16_t)(f[16] << 8 | f[17]);
		l2 += 4;
	}
	if (len < l2 + 40 + 8) /* IPv6 + UDP, or more than IPv4 + UDP */
		return false;
	if (type == 0x0800) {
		size_t ihl = (size_t)(f[l2] & 0x0f) * 4;

		return f[l2 + 9] == 17 && len >= l2 + ihl + 4 &&
		       (f[l2 + ihl + 2] << 8 | f[l2 + ihl + 3]) == ROCE_UDP_PORT;
	}
	if (type == 0x86dd)
		return f[l2 + 6] == 17 && (f[l2 + 42] << 8 | f[l2 + 43]) == ROCE_UDP_PORT;
	return false;
}

/*
 * The IB CM message RoCEv2 frame @p f carries, e.g. "DREQ" (cm_attr_name()),
 * or NULL: not a MAD of the CM class to QP1 (lib/roce's parser, the ICRC
 * not checked; the MAD header's class and attribute ID, IBTA Vol. 1 13.4.2).
 */
static const char *
cm_mad_name(const uint8_t *f, size_t len)
{
	struct roce_pkt pkt;
	enum roce_drop_reason why;
	const char *name;
	uint16_t attr;

	if (roce_classify(f, len, ROCE_CLASSIFY_NO_ICRC, &pkt, &why) != ROCE_CLASS_ROCE ||
	    why != ROCE_DROP_NONE || pkt.dest_qpn != CM_GSI_QPN || pkt.payload_len < 18 ||
	    pkt.payload[1] != CM_MAD_MGMT_CLASS)
		return NULL;
	attr = (uint16_t)(pkt.payload[16] << 8 | pkt.payload[17]);
	name = cm_attr_name(attr);
	return strcmp(name, "unknown") != 0 ? name : NULL; /* its answer for another ID */
}

/*
 * --names: the CM messages of the frames in capture @p path (read by
 * libpcap: classic pcap or pcapng), one line each ("N NAME"). @return 0,
 * or 2 when it is not a capture of Ethernet frames or is cut short.
 */
static int
print_names(const char *path)
{
	char err[PCAP_ERRBUF_SIZE];
	FILE *f = fopen(path, "rb");
	pcap_t *pc = f != NULL ? pcap_fopen_offline(f, err) : NULL; /* then pcap_close() closes f */
	struct pcap_pkthdr *h;
	const u_char *frame;
	unsigned long n = 0;
	int rc;

	if (pc == NULL) {
		fprintf(stderr, "lossy_link: %s: %s\n", path, f != NULL ? err : strerror(errno));
		if (f != NULL)
			fclose(f); /* pcap_fopen_offline() failed: still ours */
		return 2;
	}
	if (pcap_datalink(pc) != DLT_EN10MB) {
		fprintf(stderr, "lossy_link: %s: not a capture of Ethernet frames\n", path);
		pcap_close(pc);
		return 2;
	}
	while ((rc = pcap_next_ex(pc, &h, &frame)) == 1) {
		const char *cm;

		n++;
		if (h->caplen != h->len) {
			fprintf(stderr, "lossy_link: %s: frame %lu was captured cut short\n", path, n);
			pcap_close(pc);
			return 2;
		}
		if ((cm = cm_mad_name(frame, h->caplen)) != NULL) /* it parses the frame */
			printf("%lu %s\n", n, cm);
	}
	if (rc == PCAP_ERROR)
		fprintf(stderr, "lossy_link: %s: after frame %lu: %s\n", path, n, pcap_geterr(pc));
	pcap_close(pc);
	return rc == PCAP_ERROR ? 2 : 0;
}

/*
 * Set Congestion Experienced on an ECN-capable IPv4/IPv6 frame (@p f is a
 * RoCEv2 frame, is_roce()). @return true when marked.
 */
static bool
mark_ce(uint8_t *f)
{
	size_t l2 = (f[12] == 0x81 && f[13] == 0x00) ? 18 : 14;
	uint16_t type = (uint16_t)(f[l2 - 2] << 8 | f[l2 - 1]);

	if (type == 0x0800) {
		uint8_t tos = f[l2 + 1];
		uint32_t sum;

		if ((tos & 3) == 0 || (tos & 3) == 3)
			return false;
		/* RFC 1624: HC' = ~(~HC + ~m + m') over the 16-bit word holding TOS */
		sum = (uint16_t)~(f[l2 + 10] << 8 | f[l2 + 11]);
		sum += (uint16_t)~(f[l2] << 8 | tos);
		sum += (uint16_t)(f[l2] << 8 | (tos | 3));
		sum = (sum & 0xffff) + (sum >> 16);
		sum = (sum & 0xffff) + (sum >> 16);
		f[l2 + 1] = tos | 3;
		f[l2 + 10] = (uint8_t)(~sum >> 8);
		f[l2 + 11] = (uint8_t)~sum;
		return true;
	}
	/* IPv6: the traffic class's ECN bits are bits 5:4 of the second byte */
	if (((f[l2 + 1] >> 4) & 3) == 0 || ((f[l2 + 1] >> 4) & 3) == 3)
		return false;
	f[l2 + 1] |= 0x30;
	return true;
}

/* Nanoseconds between the kernel's receive timestamp in @p m and @p now. */
static uint64_t
waited_ns(const struct msghdr *m, const struct timespec *now)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c != NULL; c = CMSG_NXTHDR((struct msghdr *)m, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
			struct timespec t;
			int64_t d;

			memcpy(&t, CMSG_DATA(c), sizeof(t));
			d = (int64_t)(now->tv_sec - t.tv_sec) * 1000000000 + (now->tv_nsec - t.tv_nsec);
			return d > 0 ? (uint64_t)d : 0;
		}
	}
	return 0;
}

static int
open_if(const char *ifname, int *ifindex)
{
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL) };
	struct packet_mreq mr = { .mr_type = PACKET_MR_PROMISC };
	int one = 1, fd;

	*ifindex = (int)if_nametoindex(ifname);
	if (*ifindex == 0) {
		fprintf(stderr, "lossy_link: no interface %s\n", ifname);
		return -1;
	}
	fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
	if (fd < 0) {
		perror("lossy_link: socket(AF_PACKET)");
		return -1;
	}
	/* the FORCE variants pass net.core.[rw]mem_max (root); else the capped ones */
	int buf = LINK_SOCK_BUF;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof(buf)) != 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof(buf)) != 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
	(void)setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one));
	sll.sll_ifindex = *ifindex;
	mr.mr_ifindex = *ifindex;
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)) != 0 ||
	    setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one)) != 0 ||
	    setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof(mr)) != 0) {
		fprintf(stderr, "lossy_link: %s: %s\n", ifname, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* Frames the kernel dropped for @p fd since the last call (its buffer full). */
static uint64_t
overrun(int fd)
{
	struct tpacket_stats st = { 0 };
	socklen_t l = sizeof(st);

	return getsockopt(fd, SOL_PACKET, PACKET_STATISTICS, &st, &l) == 0 ? st.tp_drops : 0;
}

/* Send every queued frame of @p d, in order (a refused one is counted and skipped). */
static void
flush_out(struct link_dir *d)
{
	unsigned int off = 0;

	while (off < d->out_n) {
		int r = sendmmsg(d->out_fd, &d->out_msg[off], d->out_n - off, MSG_DONTWAIT);

		if (r > 0) {
			off += (unsigned int)r;
		} else {
			/* A full socket buffer loses the frame, as a full link would. */
			d->send_failed++;
			off++;
		}
	}
	d->out_n = 0;
}

/* Queue one frame to send; @p f must stay valid until flush_out(). */
static void
send_frame(struct link_dir *d, const uint8_t *f, size_t len)
{
	if (d->out_n == LINK_OUT_MAX)
		flush_out(d);
	d->out_iov[d->out_n] = (struct iovec){ .iov_base = (void *)(uintptr_t)f, .iov_len = len };
	d->out_msg[d->out_n] = (struct mmsghdr){
		.msg_hdr = { .msg_iov = &d->out_iov[d->out_n], .msg_iovlen = 1 },
	};
	d->out_n++;
}

static void
release_held(struct link_dir *d)
{
	if (d->held_len > 0) {
		send_frame(d, d->held, d->held_len);
		d->held_len = 0;
	}
}

/* Forward one received frame, impaired per @p o while @p on. */
static void
forward(struct link_dir *d, const struct link_opts *o, bool on, uint8_t *f, size_t len,
	uint64_t wait)
{
	bool impair, roce = is_roce(f, len);

	d->frames++;
	if (wait > d->max_wait_ns)
		d->max_wait_ns = wait;
	if (roce && o->ecn_ns != 0 && wait >= o->ecn_ns && mark_ce(f))
		d->marked++;
	impair = on && (o->all || roce);
	if (!impair) {
		send_frame(d, f, len);
		release_held(d);
		return;
	}
	d->impaired++;
	/* the frame's CM name only when it decides or is logged, not per frame */
	bool named = roce && o->drop_cm != NULL && !d->dropped_cm;
	const char *cm = named ? cm_mad_name(f, len) : NULL;
	bool chosen = cm != NULL && strcmp(cm, o->drop_cm) == 0;

	if (chosen || rng_uniform() < o->loss) {
		if (!named && roce)
			cm = cm_mad_name(f, len);
		d->dropped_cm |= chosen;
		d->dropped++;
		if (cm != NULL) { /* for the tests: which handshake step went missing */
			printf("lossy_link: dropped CM %s %s\n", cm, d->name);
			fflush(stdout);
		}
		return;
	}
	if (d->held_len == 0 && rng_uniform() < o->reorder) {
		flush_out(d); /* held[] may still be queued from its last release */
		memcpy(d->held, f, len);
		d->held_len = len;
		d->reordered++;
		return;
	}
	send_frame(d, f, len);
	if (rng_uniform() < o->dup) {
		send_frame(d, f, len);
		d->duplicated++;
	}
	release_held(d);
}

/* The impaired phase's counts of @p d (since impairments went on). */
static void
print_phase(const struct link_dir *d)
{
	printf("lossy_link: impaired phase: %s frames=%llu impaired=%llu dropped=%llu duplicated=%llu "
	       "reordered=%llu\n",
	       d->name, (unsigned long long)(d->frames - d->phase_at[0]),
	       (unsigned long long)(d->impaired - d->phase_at[1]),
	       (unsigned long long)(d->dropped - d->phase_at[2]),
	       (unsigned long long)(d->duplicated - d->phase_at[3]),
	       (unsigned long long)(d->reordered - d->phase_at[4]));
}

/* Impairments on or off (@p on) for both directions, with their record. */
static void
set_impair(struct link_dir dir[2], bool on)
{
	for (int i = 0; i < 2; i++) {
		struct link_dir *d = &dir[i];

		if (on) {
			d->phase_at[0] = d->frames;
			d->phase_at[1] = d->impaired;
			d->phase_at[2] = d->dropped;
			d->phase_at[3] = d->duplicated;
			d->phase_at[4] = d->reordered;
		} else {
			release_held(d);
			flush_out(d);
			print_phase(d);
		}
	}
	printf("lossy_link: impairments %s\n", on ? "on" : "off");
	fflush(stdout);
}

static double
pct_arg(const char *s, const char *what)
{
	char *end;
	double v = strtod(s, &end);

	if (*end != '\0' || v < 0.0 || v > 100.0) {
		fprintf(stderr, "lossy_link: --%s %s: want 0..100\n", what, s);
		exit(2);
	}
	return v / 100.0;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "loss", required_argument, NULL, 'l' }, { "dup", required_argument, NULL, 'd' },
		{ "reorder", required_argument, NULL, 'r' }, { "seed", required_argument, NULL, 's' },
		{ "all", no_argument, NULL, 'a' }, { "ecn-ms", required_argument, NULL, 'e' },
		{ "paused", no_argument, NULL, 'p' }, { "drop-cm", required_argument, NULL, 'c' },
		{ "names", required_argument, NULL, 'n' }, { NULL, 0, NULL, 0 },
	};
	struct link_opts o = { .seed = 1 };
	static struct link_dir dir[2];
	static uint8_t frames[LINK_BATCH][LINK_FRAME_MAX];
	static struct mmsghdr in_msg[LINK_BATCH];
	static struct iovec in_iov[LINK_BATCH];
	static struct sockaddr_ll from[LINK_BATCH];
	static uint8_t ctl[LINK_BATCH][CMSG_SPACE(sizeof(struct timespec)) + 64];
	struct timespec now;
	struct sigaction sa = { .sa_handler = on_signal };
	int c, ifindex[2], fd[2];
	bool on;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'l': o.loss = pct_arg(optarg, "loss"); break;
		case 'd': o.dup = pct_arg(optarg, "dup"); break;
		case 'r': o.reorder = pct_arg(optarg, "reorder"); break;
		case 's': o.seed = strtoull(optarg, NULL, 0); break;
		case 'a': o.all = true; break;
		case 'e': o.ecn_ns = (uint64_t)(pct_arg(optarg, "ecn-ms") * 100 * 1e6); break;
		case 'p': want_impair = 0; break;
		case 'c': o.drop_cm = optarg; break;
		case 'n': return print_names(optarg);
		default:
			fprintf(stderr, "usage: lossy_link [--loss PCT] [--dup PCT] [--reorder PCT] "
				"[--seed N] [--all] [--ecn-ms 0..100] [--paused] [--drop-cm MSG] "
				"IF_A IF_B | --names PCAP\n");
			return 2;
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr, "lossy_link: two interfaces needed\n");
		return 2;
	}
	rng_state = o.seed != 0 ? o.seed : 1;
	for (int i = 0; i < 2; i++) {
		fd[i] = open_if(argv[optind + i], &ifindex[i]);
		if (fd[i] < 0)
			return 2;
	}
	dir[0] = (struct link_dir){ .name = "A->B", .in_fd = fd[0], .out_fd = fd[1],
				    .out_ifindex = ifindex[1] };
	dir[1] = (struct link_dir){ .name = "B->A", .in_fd = fd[1], .out_fd = fd[0],
				    .out_ifindex = ifindex[0] };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	printf("lossy_link: %s <-> %s loss %.1f%% dup %.1f%% reorder %.1f%% seed %llu ecn-ms %.1f%s\n",
	       argv[optind], argv[optind + 1], o.loss * 100, o.dup * 100, o.reorder * 100,
	       (unsigned long long)o.seed, (double)o.ecn_ns / 1e6, o.all ? " (all frames)" : " (RoCEv2 frames)");
	on = want_impair;
	printf("lossy_link: impairments %s\n", on ? "on" : "off");
	fflush(stdout);

	while (!stop) {
		if (want_impair != on) {
			on = want_impair;
			set_impair(dir, on);
		}
		struct pollfd p[2] = { { .fd = fd[0], .events = POLLIN }, { .fd = fd[1], .events = POLLIN } };
		int n = poll(p, 2, LINK_HOLD_MS);

		if (n < 0 && errno != EINTR)
			break;
		if (n <= 0) { /* quiet for LINK_HOLD_MS: let held frames go */
			for (int i = 0; i < 2; i++) {
				release_held(&dir[i]);
				flush_out(&dir[i]);
			}
			continue;
		}
		for (int i = 0; i < 2; i++) {
			/* one bounded batch per wake-up, so one direction cannot starve the other */
			int got;

			if (!(p[i].revents & POLLIN))
				continue;
			for (int k = 0; k < LINK_BATCH; k++) {
				in_iov[k] = (struct iovec){ .iov_base = frames[k], .iov_len = LINK_FRAME_MAX };
				in_msg[k] = (struct mmsghdr){
					.msg_hdr = { .msg_name = &from[k], .msg_namelen = sizeof(from[k]),
						     .msg_iov = &in_iov[k], .msg_iovlen = 1,
						     .msg_control = ctl[k], .msg_controllen = sizeof(ctl[k]) },
				};
			}
			got = recvmmsg(fd[i], in_msg, LINK_BATCH, MSG_DONTWAIT | MSG_TRUNC, NULL);
			clock_gettime(CLOCK_REALTIME, &now);
			for (int k = 0; k < got; k++) {
				if (from[k].sll_pkttype == PACKET_OUTGOING ||
				    (in_msg[k].msg_hdr.msg_flags & MSG_TRUNC) != 0)
					continue;
				forward(&dir[i], &o, on, frames[k], in_msg[k].msg_len,
					waited_ns(&in_msg[k].msg_hdr, &now));
			}
			flush_out(&dir[i]); /* before the receive buffers are reused */
		}
	}
	for (int i = 0; i < 2; i++) {
		release_held(&dir[i]);
		flush_out(&dir[i]);
	}
	/* a relay without impairments has no impaired phase to report */
	for (int i = 0; i < 2 && on && (o.loss > 0 || o.dup > 0 || o.reorder > 0); i++)
		print_phase(&dir[i]);
	for (int i = 0; i < 2; i++) {
		printf("lossy_link: %s frames=%llu impaired=%llu dropped=%llu duplicated=%llu reordered=%llu "
		       "overrun=%llu send_failed=%llu marked=%llu max_wait_us=%llu\n",
		       dir[i].name, (unsigned long long)dir[i].frames, (unsigned long long)dir[i].impaired,
		       (unsigned long long)dir[i].dropped, (unsigned long long)dir[i].duplicated,
		       (unsigned long long)dir[i].reordered, (unsigned long long)overrun(dir[i].in_fd),
		       (unsigned long long)dir[i].send_failed, (unsigned long long)dir[i].marked,
		       (unsigned long long)(dir[i].max_wait_ns / 1000));
	}
	for (int i = 0; i < 2; i++)
		close(fd[i]);
	return 0;
}
