#!/bin/bash
# The whole test suite on a fresh Debian 12 machine: installs what is missing,
# builds twice (release-like and ASan+UBSan), runs every test, and prints one
# "N passed, N failed, N skipped" line. Exit status is non-zero on any failure.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

./scripts/setup.sh || exit 1

fail=0
summary_pass=0; summary_fail=0; summary_skip=0

run_suite() { # name builddir meson-setup-args...
  local name=$1 dir=$2; shift 2
  echo "=== [$name] configure"
  if [ ! -f "$dir/build.ninja" ]; then
    meson setup "$dir" "$@" || { fail=1; summary_fail=$((summary_fail+1)); return; }
  else
    meson configure "$dir" "$@" >/dev/null || true
  fi
  echo "=== [$name] build"
  ninja -C "$dir" || { fail=1; summary_fail=$((summary_fail+1)); return; }
  echo "=== [$name] test"
  meson test -C "$dir" --print-errorlogs --num-processes 2 ${ROCE_TEST_ARGS:-} || fail=1
  local log=$dir/meson-logs/testlog.json
  if [ -f "$log" ]; then
    local p f s
    p=$(grep -c '"result": "OK"' "$log" || true)
    f=$(grep -Ec '"result": "(FAIL|TIMEOUT|ERROR|UNEXPECTEDPASS)"' "$log" || true)
    s=$(grep -Ec '"result": "(SKIP|EXPECTEDFAIL)"' "$log" || true)
    echo "[$name] $p passed, $f failed, $s skipped"
    summary_pass=$((summary_pass+p)); summary_fail=$((summary_fail+f)); summary_skip=$((summary_skip+s))
  fi
}

run_suite release build -Dtests=enabled -Dfuzz=true
run_suite asan build-asan -Dtests=enabled -Db_sanitize=address,undefined -Db_lundef=false \
  -Dbuildtype=debug

echo "tests: $summary_pass passed, $summary_fail failed, $summary_skip skipped"
exit $fail
