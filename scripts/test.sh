#!/bin/bash
# The whole test suite on a fresh Debian 12 machine: installs what is missing,
# builds twice (release-like and ASan+UBSan), runs every test, and ends with
# scripts/ci_report.py's table (one line per suite: tests, passed, failed,
# skipped, TODO, retried) and one "tests: N passed, N failed, N skipped" line.
# Exit status is non-zero on any failure. With CI=true the report is strict:
# a registered test missing from a tree, a skip that test/ci/allowed-skips.txt
# does not allow, or a TODO fails the run (scripts/ci_report.py).
set -uo pipefail
cd "$(dirname "$0")/.."

./scripts/setup.sh || exit 1

# UBSan reports are failures (the build also passes -fno-sanitize-recover);
# daemons and tools the tests start inherit these.
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:abort_on_error=0}
# glibc writes its fatal messages (heap corruption found by malloc, a failed
# stack check) to /dev/tty unless told otherwise: a test would die by SIGABRT
# without a word in its log
export LIBC_FATAL_STDERR_=1

fail=0
logs=()

run_suite() { # name builddir meson-setup-args...
  local name=$1 dir=$2; shift 2
  echo "=== [$name] configure"
  if [ -f "$dir/build.ninja" ]; then
    meson setup --reconfigure "$dir" "$@" || { fail=1; echo "[$name] configure failed"; return; }
  else
    meson setup "$dir" "$@" || { fail=1; echo "[$name] configure failed"; return; }
  fi
  echo "=== [$name] build"
  ninja -C "$dir" || { fail=1; echo "[$name] build failed"; return; }
  echo "=== [$name] test"
  rm -f "$dir/meson-logs/testlog.json" "$dir/meson-logs/retried.txt"
  meson test -C "$dir" --print-errorlogs --num-processes 2 ${ROCE_TEST_ARGS:-} || fail=1
  if [ -f "$dir/meson-logs/testlog.json" ]; then
    logs+=("$name=$dir/meson-logs/testlog.json")
  else
    echo "[$name] no test log"; fail=1
  fi
}

start=$SECONDS
run_suite release build -Dtests=enabled -Dfuzz=true
run_suite asan build-asan -Dtests=enabled -Db_sanitize=address,undefined -Db_lundef=false \
  -Dbuildtype=debug
echo "=== suites took $((SECONDS - start)) s"

strict=
[ "${CI:-}" = true ] && strict=--strict
# A partial run (ROCE_TEST_ARGS selects tests) cannot be checked against the
# registered list.
[ -n "${ROCE_TEST_ARGS:-}" ] && strict="$strict --expected="
if [ ${#logs[@]} -gt 0 ]; then
  # shellcheck disable=SC2086
  python3 scripts/ci_report.py $strict "${logs[@]}" || fail=1
else
  echo "tests: 0 passed, 1 failed, 0 skipped"
fi
exit $fail
