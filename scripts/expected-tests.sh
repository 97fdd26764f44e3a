#!/bin/bash
# Prints test/ci/expected-tests.txt: every test each tree of scripts/test.sh
# registers ("TREE NAME"), from `meson test --list` of build/ and build-asan/
# (configure both first, as scripts/test.sh does). scripts/ci_report.py fails
# CI when a registered test is missing from a run or a run has an unlisted one.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "# Every test each tree of scripts/test.sh registers: TREE NAME."
echo "# CI fails when one is missing from its run or a run has one not listed here."
echo "# Regenerate: scripts/expected-tests.sh > test/ci/expected-tests.txt"
for t in release:build asan:build-asan; do
  meson test -C "${t#*:}" --list --no-rebuild 2>/dev/null | grep ' / ' | sort | sed "s/^/${t%%:*} /"
done
