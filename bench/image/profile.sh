#!/usr/bin/env bash
# Where a lake-photo-to-800-px request spends its CPU: image-server (release, caches off) under
# wrk at concurrency 2 for 10 s per format, sampled by `perf record -g` at 499 Hz, and the
# hottest symbols printed (perf report --no-children --sort symbol). bench/image/PROFILE.md
# holds a run and what it says. Needs perf, wrk, the photo in ../shared/images.
# Usage: bench/image/profile.sh [jpeg webp ...]
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
SHARED="${SHARED_IMAGES:-$ROOT/../shared/images}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/rust-services-target}"
WORK="$(mktemp -d)"; PORT=3291
cleanup() { kill "${SERVER:-0}" 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
cargo build --release -q -p image-server
mkdir -p "$WORK/images" "$WORK/data"
cp "$SHARED/crate_webp-0.3.1__lake.jpg" "$WORK/images/lake.jpg"
STORAGE_URL="file://$WORK/images" CACHE_MAX_BYTES=0 STORAGE_CACHE=false API_KEY=bench \
  DATA_DIR="$WORK/data" LISTEN="127.0.0.1:$PORT" RUST_LOG=warn \
  "$CARGO_TARGET_DIR/release/image-server" &
SERVER=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/admin/health" -o /dev/null && break; sleep 0.1; done
for fmt in "${@:-jpeg webp}"; do
  for f in $fmt; do
    url="http://127.0.0.1:$PORT/images/resize/lake.jpg?width=800&format=$f&quality=80"
    perf record -F 499 -g -p "$SERVER" -o "$WORK/perf-$f.data" -- sleep 12 >/dev/null 2>&1 &
    rec=$!; sleep 0.5
    echo "## lake.jpg -> 800 px $f: $(wrk -t2 -c2 -d10s "$url" | awk '/Requests\/sec/ {print $2}') req/s under perf"
    wait "$rec"
    perf report -i "$WORK/perf-$f.data" --no-children --sort symbol --stdio 2>/dev/null \
      | grep -E '^ +[0-9.]+%' | head -15
    echo
  done
done
