#!/bin/bash
# scripts/lab.sh LAB_OWNER: a lab tied to a process goes down when it ends
# (meson's timeout SIGKILLs a test's process group; the daemons and the
# namespaces must not outlive it), and an interactive `up` (no owner) stays
# until `down`. TAP output. Needs root (network namespaces); run under
# flock -o /tmp/roce-lab.lock like every lab suite.
set -uo pipefail

SRC=${ROCE_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${ROCE_BUILD_DIR:-$SRC/build}
L=low$$
L=${L:0:8}
STATE=${LAB_STATE:-/tmp/roce-lab}/$L
LAB="$SRC/scripts/lab.sh -b $BUILD -n $L"
W=$(mktemp -d /tmp/roce-lab-owner-XXXXXX)
n=0
failed=0
PARENT=

ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() {
	n=$((n + 1)); failed=1; echo "not ok $n - $1"; shift
	for f in "$@"; do [ -f "$f" ] && sed 's/^/# /' "$f" | tail -30; done
}
cleanup() {
	[ -n "$PARENT" ] && kill -KILL "$PARENT" 2> /dev/null
	env -u LAB_OWNER $LAB down > /dev/null 2>&1
	rm -rf "$W"
}
trap cleanup EXIT

if [ "$(id -u)" != 0 ]; then echo "1..0 # SKIP needs root (network namespaces)"; exit 0; fi
echo "1..8"

# the lab's processes (daemons, watchdog) by their recorded PIDs, while alive
lab_pids() {
	local f pid
	for f in "$STATE/a.pid" "$STATE/b.pid" "$STATE/watchdog.pid"; do
		pid=$(cat "$f" 2> /dev/null) && [ -n "$pid" ] && kill -0 "$pid" 2> /dev/null && echo "$pid"
	done
}
# "alive" if any of PIDs $@ runs a roce-daemon or lab.sh, else "gone"
still() {
	local p
	for p in "$@"; do
		tr '\0' ' ' 2> /dev/null < "/proc/$p/cmdline" | grep -q "roce-daemon\|lab.sh" && { echo alive; return; }
	done
	echo gone
}
netns_left() { ip netns list 2> /dev/null | grep -c "^$L-"; }

# An owned lab: a parent started as meson starts a test (setsid: a session
# leader; from a subshell, so init reaps it as meson reaps its test) brings
# the lab up with LAB_OWNER=session and waits, its trap on TERM running
# `down` as the lab tests' traps do. Then it is killed: "kill" SIGKILLs it;
# "meson" does what meson does to a test that timed out: SIGTERM to its
# process group, SIGKILL 0.5 s later (its `down` dies half-way).
owned_lab() { # kill|meson
	local how=$1 owner pids t0 ms k st
	rm -f "$W/up.rc"
	(setsid bash -c 'trap "\"\$@\" down; exit 1" TERM
		LAB_OWNER=session "$@" up > "'"$W"'/up.out" 2>&1; echo $? > "'"$W"'/up.rc"
		sleep 300 & wait $!' \
		lab $LAB < /dev/null > /dev/null 2>&1 & echo $! > "$W/parent.pid")
	PARENT=$(cat "$W/parent.pid")
	owner=$PARENT
	for ((k = 0; k < 1200; k++)); do [ -s "$W/up.rc" ] && break; sleep 0.05; done
	pids=$(lab_pids)
	st=$(env -u LAB_OWNER $LAB status 2>&1)
	if [ "$(cat "$W/up.rc" 2> /dev/null)" = 0 ] && [ "$(echo "$pids" | wc -w)" = 3 ] &&
	   grep -q "^owner: owner $owner " <<< "$st"; then
		ok "$how: lab up with LAB_OWNER=session: two daemons and a watchdog following the parent $owner"
	else
		echo "up: $(cat "$W/up.rc" 2> /dev/null), pids: $pids; status: $st" >> "$W/up.out"
		not_ok "$how: lab up with an owner" "$W/up.out"
	fi
	if [ "$how" = kill ]; then
		kill -KILL "$owner"
	else # the parent's process group: the parent, its sleep, its `down`
		kill -TERM -- "-$owner"
		sleep 0.5
		kill -KILL -- "-$owner" 2> /dev/null
	fi
	PARENT=
	t0=$(date +%s%N)
	for ((k = 0; k < 600; k++)); do
		[ "$(still $pids)" = gone ] && [ "$(netns_left)" = 0 ] && break
		sleep 0.05
	done
	ms=$((($(date +%s%N) - t0) / 1000000))
	if [ "$(still $pids)" = gone ] && [ "$(netns_left)" = 0 ]; then
		ok "$how: daemons, watchdog and namespaces gone $ms ms after the parent's end"
	else
		{ echo "after $ms ms: $(still $pids), $(netns_left) namespaces"
		  ps -o pid,cmd -p "${pids//$'\n'/,}"; } > "$W/gone.out" 2>&1
		cat "$STATE/watchdog.log" >> "$W/gone.out" 2> /dev/null
		not_ok "$how: the owner's end takes the lab down" "$W/gone.out"
	fi
	# (meson: the trap's `down` may finish in time and stop the watchdog)
	[ "$how" = kill ] || return 0
	if grep -q "owner $owner ended" "$STATE/watchdog.log" 2> /dev/null &&
	   grep -q "daemon b: exited 0" "$STATE/watchdog.log"; then
		ok "$how: the watchdog logged the owner's end and the daemons' exit status 0"
	else
		not_ok "$how: watchdog log" "$STATE/watchdog.log"
	fi
}
owned_lab kill
owned_lab meson

# 2. no owner (an interactive `up`): the lab outlives the process that made it
bash -c 'env -u LAB_OWNER "$@" up' lab $LAB > "$W/up2.out" 2>&1
sleep 1
pids=$(lab_pids)
st=$(env -u LAB_OWNER $LAB status 2>&1)
if [ "$(echo "$pids" | wc -w)" = 2 ] && [ ! -f "$STATE/watchdog.pid" ] && [ "$(netns_left)" = 2 ] &&
   ! grep -q "^owner:" <<< "$st"; then
	ok "no LAB_OWNER: no watchdog, the lab stays after its maker exited"
else
	echo "pids: $pids; status: $st" >> "$W/up2.out"
	not_ok "interactive up" "$W/up2.out"
fi
env -u LAB_OWNER $LAB down > "$W/down2.out" 2>&1

# 3. an owner that is this script: `down` ends the watchdog with the lab
LAB_OWNER=$$ $LAB up > "$W/up3.out" 2>&1
wd=$(cat "$STATE/watchdog.pid" 2> /dev/null)
env -u LAB_OWNER $LAB down > "$W/down3.out" 2>&1
for ((k = 0; k < 40; k++)); do [ "$(still $wd)" = gone ] && break; sleep 0.05; done
if [ -n "$wd" ] && [ "$(still $wd)" = gone ] && [ "$(netns_left)" = 0 ]; then
	ok "LAB_OWNER=PID, then down: the watchdog ($wd) ends with the lab"
else
	cat "$W/down3.out" >> "$W/up3.out"
	not_ok "down stops the watchdog" "$W/up3.out"
fi

# 4. an owner that is not a live process: refused before anything is made
if ! LAB_OWNER=nobody $LAB up > "$W/up4.out" 2>&1 && grep -q "LAB_OWNER 'nobody'" "$W/up4.out" &&
   [ "$(netns_left)" = 0 ]; then
	ok "LAB_OWNER=nobody: up refused with a clear error, nothing left"
else
	not_ok "bad LAB_OWNER" "$W/up4.out"
fi
exit $failed
