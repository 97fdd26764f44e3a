#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# meson's default test setup runs every test through this (test/meson.build).
# Anything else is run as it is. A Criterion test (its arguments hold
# --tap=/dev/stdout, crit_tap) writes its TAP report to a file instead, and
# its own output (Criterion's log, the cases' stdout and stderr) goes to
# stderr; the report then goes to stdout whole. Criterion is quiet with plain
# --tap (it sends everything to /dev/null while the cases run) and exits 1
# with every case ok after a warning or a signal in a teardown: this way meson
# parses clean TAP and the reason is in the test's stderr
# (doc/testing.md, "Criterion tests").
case " $* " in
*" --tap=/dev/stdout "*) ;;
*) exec "$@" ;;
esac
tap=$(mktemp /tmp/roce-crit-tap-XXXXXX) || exit 1
trap 'rm -f "$tap"' EXIT
args=()
for a in "$@"; do
	if [ "$a" = --tap=/dev/stdout ]; then args+=("--tap=$tap"); else args+=("$a"); fi
done
"${args[@]}" >&2
rc=$?
cat "$tap"
exit $rc
