#!/bin/bash
# The main job on an embedded default. Until the daemon and perftest land this
# builds everything and exercises what exists: it decodes the golden rxe
# captures with roce-dump.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
[ -f build/build.ninja ] || meson setup build
ninja -C build
SHARED=${ROCE_SHARED_DIR:-../shared}
for p in "$SHARED"/rxe-peer/pcaps/*.pcap; do
  echo "== $p"
  build/tools/roce-dump --check "$p" | head -20
done
