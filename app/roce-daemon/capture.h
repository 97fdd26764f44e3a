/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Packet capture to a pcapng file (`roce-daemon ... -- --pcap FILE`).
 *
 * Workers copy every frame they receive (except their own frames echoed by
 * af_packet) and every frame they transmit or loop back with rte_pcapng_copy()
 * into a per-worker single-producer ring (worker.c); the control thread writes the
 * copies to the file. Capture never blocks a worker: when the ring or the
 * copy pool is full the frame is not captured and CTR_CAPTURE_DROPS counts it.
 * The file opens in Wireshark/tshark (RoCEv2 dissector on UDP 4791) and in
 * tools/roce-dump after `editcap -F pcap`.
 *
 * Alternative without the daemon's help: `tcpdump -i VETH -w FILE udp port
 * 4791` on the kernel side of a net_af_packet port (packet taps see both
 * directions). With net_af_xdp, frames redirected to the socket bypass the
 * kernel's taps, so use --pcap there.
 */
#ifndef ROCE_DAEMON_CAPTURE_H
#define ROCE_DAEMON_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct daemon;
struct worker;
struct rte_mbuf;

/**
 * Open @p path and set up every worker's capture ring. Call after the
 * ports are open (pcapng describes the interfaces that exist) and the
 * workers created. @p max_packets 0 means no limit.
 * @return 0 or -1 with @p err
 */
int capture_open(struct daemon *d, const char *path, uint64_t max_packets, char *err,
		 size_t errlen);

/** Control thread: write what the workers captured. @return frames written */
unsigned int capture_drain(struct daemon *d);

/** Write what is left, the statistics, and close the file (workers stopped). */
void capture_close(struct daemon *d);

#endif /* ROCE_DAEMON_CAPTURE_H */
