#!/bin/bash
# The main job on an embedded default, for a fresh Debian 12 machine (root):
# installs what is missing, builds, starts the lab (two namespaced hosts a and
# b joined by a veth pair, a roce-daemon on each over net_af_packet), runs the
# bundled roce-perftest and Debian's unmodified ib_write_bw over the verbs
# shim between the hosts, prints the results and tears the lab down.
#
# Environment: RUN_BUILD (build dir, default build), RUN_SIZE (bytes, 65536),
# RUN_ITERS (iterations, 2000), LAB_PMD (af_packet | af_xdp), RUN_TIMEOUT (60 s
# per tool run).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${RUN_BUILD:-build}
SIZE=${RUN_SIZE:-65536}
ITERS=${RUN_ITERS:-2000}
TMO=${RUN_TIMEOUT:-60}
LAB=(./scripts/lab.sh -n demo -b "$BUILD")

./scripts/setup.sh || exit 1
[ -f "$BUILD/build.ninja" ] || meson setup "$BUILD" || exit 1
ninja -C "$BUILD" || exit 1

cleanup() { "${LAB[@]}" down >/dev/null 2>&1 || true; }
trap cleanup EXIT INT TERM
"${LAB[@]}" up || { echo "run.sh: lab did not come up" >&2; exit 1; }
"${LAB[@]}" status

rc=0
pair() { # title server-cmd... -- client-cmd...
	local title=$1; shift
	local srv=() cli=()
	while [ "$1" != -- ]; do srv+=("$1"); shift; done; shift
	cli=("$@")
	echo
	echo "=== $title"
	"${LAB[@]}" run b timeout "$TMO" "${srv[@]}" > "/tmp/roce-run-server.$$" 2>&1 &
	local spid=$!
	sleep 1
	if ! "${LAB[@]}" run a timeout "$TMO" "${cli[@]}" 198.18.0.2; then
		echo "run.sh: $title client failed; server output:" >&2
		cat "/tmp/roce-run-server.$$" >&2
		rc=1
	fi
	wait "$spid" || { echo "run.sh: $title server exited non-zero" >&2; cat "/tmp/roce-run-server.$$" >&2; rc=1; }
	rm -f "/tmp/roce-run-server.$$"
}

PT=$ROOT/$BUILD/app/perftest/roce-perftest
pair "roce-perftest RDMA WRITE bandwidth, ${SIZE} B x ${ITERS}, verified" \
	"$PT" write_bw -s "$SIZE" -n "$ITERS" --verify -- \
	"$PT" write_bw -s "$SIZE" -n "$ITERS" --verify
pair "Debian ib_write_bw (unmodified, over the verbs shim), ${SIZE} B x ${ITERS}" \
	ib_write_bw -F -s "$SIZE" -n "$ITERS" -- \
	ib_write_bw -F -s "$SIZE" -n "$ITERS"
pair "Debian ib_write_lat, 8 B x 1000" \
	ib_write_lat -F -s 8 -n 1000 -- \
	ib_write_lat -F -s 8 -n 1000
echo
"${LAB[@]}" telemetry a /roce/port/stats,0 || true
exit $rc
