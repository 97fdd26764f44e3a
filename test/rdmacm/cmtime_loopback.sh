#!/bin/bash
# Debian's unmodified cmtime (rdmacm-utils) over the rdmacm shim, server and
# client against one shim-server (lib/ctl's CM loops MADs between its own
# addresses back): 20 connections set up and torn down, every step timed.
# No data moves (shim-server has no dataplane); Debian's data-moving
# programs (rping, ucmatose, udaddy, rdma_server/client) run between the lab
# hosts in test/integ.
#
# Environment (meson): SHIM_SERVER, RCM_DIR, SHIM_DIR, CMTIME;
# SHIM_CHILD_PRELOAD / SHIM_CHILD_ASAN_OPTIONS in sanitizer builds.
set -u
echo "1..2"
dir=$(mktemp -d /tmp/rdmacm-cmtime-XXXXXX)
sock=$dir/roce.sock
srv_pid=
cm_pid=
cleanup() {
	[ -n "$cm_pid" ] && kill "$cm_pid" 2>/dev/null
	[ -n "$srv_pid" ] && kill "$srv_pid" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT

"$SHIM_SERVER" "$sock" 60 > "$dir/server.out" 2>&1 &
srv_pid=$!
for _ in $(seq 50); do grep -q ready "$dir/server.out" 2>/dev/null && break; sleep 0.1; done

run() {
	env LD_LIBRARY_PATH="$RCM_DIR:$SHIM_DIR" ROCE_DAEMON_SOCKET="$sock" \
		${SHIM_CHILD_PRELOAD:+LD_PRELOAD=$SHIM_CHILD_PRELOAD} \
		${SHIM_CHILD_ASAN_OPTIONS:+ASAN_OPTIONS=$SHIM_CHILD_ASAN_OPTIONS} "$@"
}

run timeout 30 "$CMTIME" -b 198.18.0.1 -p 7471 -c 20 > "$dir/cm_server.out" 2>&1 &
cm_pid=$!
sleep 0.5
if run timeout 20 "$CMTIME" -s 198.18.0.1 -p 7471 -c 20 > "$dir/client.out" 2>&1 &&
   grep -q '^connect ' "$dir/client.out" && grep -q '^disconnect ' "$dir/client.out"; then
	echo "ok 1 - cmtime client: 20 connections set up and torn down"
else
	echo "not ok 1 - cmtime client failed"
	sed 's/^/# /' "$dir/client.out"
fi
# The server waits for more; it must not have reported an error.
sleep 0.2
if kill -0 "$cm_pid" 2>/dev/null && ! grep -qi 'fail\|error' "$dir/cm_server.out"; then
	echo "ok 2 - cmtime server still serving, no error"
else
	echo "not ok 2 - cmtime server"
	sed 's/^/# /' "$dir/cm_server.out"
fi
