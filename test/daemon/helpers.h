/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Helpers shared by the roce-daemon tests: frame builders (RoCE through
 * lib/roce, ARP, ICMPv6), a DPDK telemetry client, and running commands.
 */
#ifndef TEST_DAEMON_HELPERS_H
#define TEST_DAEMON_HELPERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "roce.h"

/** Addresses used by every test (198.18.0.0/15 only). */
#define T_IP_A "198.18.0.11"
#define T_IP_B "198.18.0.12"

/** Write ::ffff:a.b.c.d of dotted @p ip into @p gid. */
void t_gid4(const char *ip, uint8_t gid[16]);
/** Parse an IPv6 address into @p gid. */
void t_gid6(const char *ip, uint8_t gid[16]);

/**
 * A valid RC SEND ONLY frame (IPv4 unless the GIDs are IPv6) from @p sgid
 * to @p dgid, destination QP @p qpn, payload of @p paylen bytes (pattern).
 * @return frame length
 */
size_t t_roce_frame(uint8_t *buf, size_t cap, const uint8_t dmac[6], const uint8_t smac[6],
		    const uint8_t sgid[16], const uint8_t dgid[16], uint32_t qpn, uint32_t paylen);

/** ARP request: who has @p tip, tell @p sip (@p sha). @return 60 (padded) */
size_t t_arp_request(uint8_t *buf, const uint8_t sha[6], const char *sip, const char *tip);

/** Malformed variants of a valid RoCE frame, and the counter each must raise. */
struct t_bad_frame {
	const char *what;
	const char *counter;   /**< telemetry key in /roce/port/stats */
	size_t (*make)(uint8_t *buf, size_t cap, const uint8_t dmac[6], const uint8_t smac[6],
		       const uint8_t sgid[16], const uint8_t dgid[16]);
};
extern const struct t_bad_frame t_bad_frames[];
extern const unsigned int t_n_bad_frames;

/**
 * Send @p cmd to the telemetry socket of the DPDK process with file prefix
 * @p prefix; the JSON answer goes to @p out. @return 0 or -errno
 */
int t_telemetry(const char *prefix, const char *cmd, char *out, size_t len);

/** As t_telemetry() for the process whose EAL runtime directory is @p dir. */
int t_telemetry_dir(const char *dir, const char *cmd, char *out, size_t len);

/** @return the integer value of "@p key": in @p json, or -1 if absent. */
long long t_json_int(const char *json, const char *key);

/** @return true if the string "@p needle" (quoted or not) occurs in @p json. */
bool t_json_has(const char *json, const char *needle);

/**
 * Run a shell command with a time limit; its stdout goes to @p out (may be
 * NULL). @return the exit status, 124 on timeout, -1 if it could not run
 */
int t_run(char *out, size_t len, unsigned int timeout_s, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/**
 * A check in a suite's .fini, where Criterion 2.4 ignores cr_assert and
 * cr_expect (test/ci/check_criterion.py): if @p ok is false, print the
 * message to stderr and abort. Criterion then reports the teardown crash
 * and exits 1, and CI's report shows the message in the stderr tail.
 */
void t_fini_check(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif /* TEST_DAEMON_HELPERS_H */
