/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Device identity like a RoCE NIC: the GID table of each port (index 0 the
 * link-local IPv6 GID from the MAC's EUI-64, then one RoCEv2 GID per
 * configured address, IPv4 as ::ffff:a.b.c.d), the P_Key table (0xffff only)
 * and the device/port attributes we report (lib/ipc records, as
 * ibv_query_device/ibv_query_port return them).
 *
 * Built once at start-up and never changed afterwards, so any thread may read
 * it without synchronisation.
 */
#ifndef ROCE_DAEMON_GID_H
#define ROCE_DAEMON_GID_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "ipc.h"

#define GID_TABLE_LEN 16u   /**< matches lib/ctl CTL_GID_TBL_LEN */
#define PKEY_TABLE_LEN 1u

/** RoCE headers the IB MTU must leave room for (Linux rxe RXE_MAX_HDR_LENGTH). */
#define GID_ROCE_MAX_HDR_LEN 80u

/** One GID slot. */
struct gid_entry {
	uint8_t gid[16];
	bool valid;
	bool ipv4;          /**< IPv4-mapped: frames go out as IPv4 */
	uint8_t prefix_len; /**< of the address, in IPv6 terms (IPv4 /24 = 120) */
};

/** A port's GID and P_Key tables. */
struct gid_table {
	struct gid_entry entry[GID_TABLE_LEN];
	unsigned int n;                 /**< slots in use, from 0 */
	uint16_t pkey[PKEY_TABLE_LEN];
};

/** Write the modified EUI-64 link-local address fe80::/64 of @p mac (RFC 4291 2.5.1). */
void gid_link_local_from_mac(const uint8_t mac[6], uint8_t gid[16]);

/** Write @p ipv4 (network order bytes) as the IPv4-mapped GID ::ffff:a.b.c.d. */
void gid_from_ipv4(const uint8_t ipv4[4], uint8_t gid[16]);

/**
 * Build the table of a port: [0] link-local from @p mac, then the port's
 * addresses in configuration order.
 */
void gid_table_build(struct gid_table *t, const uint8_t mac[6], const struct config_port *cp);

/** @return the index of @p gid in @p t, or -1. */
int gid_table_find(const struct gid_table *t, const uint8_t gid[16]);

/** IB MTU enum (1..5) for an IP MTU, as Linux rxe computes it (0 if below 256). */
uint32_t gid_ib_mtu_from_ip_mtu(uint32_t ip_mtu);

/** Device attributes from the limits in @p cfg; GUIDs from @p mac (first port). */
void gid_device_attr(const struct config *cfg, const uint8_t mac[6], uint8_t phys_port_cnt,
		     struct ipc_device_attr *attr);

/** Port attributes for an IP MTU, a link state and a link speed in Mb/s. */
void gid_port_attr(uint32_t ip_mtu, bool link_up, uint32_t speed_mbps, struct ipc_port_attr *attr);

#endif /* ROCE_DAEMON_GID_H */
