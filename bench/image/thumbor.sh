#!/usr/bin/env bash
# image-server against thumbor 7 (from PyPI, its default PIL engine) on the same thumbor URLs,
# side by side: image-server answers them under its /thumbor prefix (docs/image-service.md,
# "Moving from imgproxy / thumbor"), thumbor at its root, both reading the same files from a
# local directory, result caches off, wrk at concurrency 2. Each side is measured ROUNDS times,
# alternating, and the request rates averaged; peak RSS is each server's VmHWM over the case
# (thumbor: the sum over its processes). thumbor runs 2 processes (one per core), image-server
# its defaults. Prints a markdown table; --write appends it to bench/image/THUMBOR.md.
#
# Needs: cargo, python3-venv (thumbor is installed into $THUMBOR_VENV from PyPI), wrk, the
# photos in ../shared/images. Usage: bench/image/thumbor.sh [--write]
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
SHARED="${SHARED_IMAGES:-$ROOT/../shared/images}"
DURATION="${DURATION:-8}"
ROUNDS="${ROUNDS:-2}"
CONC=2
OURS_PORT=3211
THUMBOR_PORT=3212
THUMBOR_VENV="${THUMBOR_VENV:-${TMPDIR:-/tmp}/thumbor-venv}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/rust-services-target}"
WORK="$(mktemp -d)"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do pkill -P "$p" 2>/dev/null || true; kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT

echo "building image-server (release)..." >&2
cargo build --release -p image-server >"$WORK/build.log" 2>&1 || { tail -30 "$WORK/build.log"; exit 1; }
BIN="$CARGO_TARGET_DIR/release/image-server"
if [ ! -x "$THUMBOR_VENV/bin/thumbor" ]; then
  echo "installing thumbor from PyPI into $THUMBOR_VENV..." >&2
  python3 -m venv "$THUMBOR_VENV"
  "$THUMBOR_VENV/bin/pip" install --quiet "thumbor>=7,<8"
fi
THUMBOR_VERSION=$("$THUMBOR_VENV/bin/thumbor" --version | awk '{print $2}')
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

mkdir -p "$WORK/images"
cp "$SHARED/crate_webp-0.3.1__lake.jpg" "$WORK/images/lake.jpg"
cp "$SHARED/derived__window_from_heic_q90.jpg" "$WORK/images/window12mp.jpg"

cat >"$WORK/thumbor.conf" <<EOF
LOADER = 'thumbor.loaders.file_loader'
FILE_LOADER_ROOT_PATH = '$WORK/images'
STORAGE = 'thumbor.storages.no_storage'
RESULT_STORAGE = None
ALLOW_UNSAFE_URL = True
QUALITY = 80
WEBP_QUALITY = 80
AUTO_WEBP = False
MAX_AGE = 0
EOF

unset MALLOC_MMAP_THRESHOLD_
STORAGE_URL="file://$WORK/images" CACHE_MAX_BYTES=0 STORAGE_CACHE=false API_KEY=bench \
  DATA_DIR="$WORK/data" LISTEN="127.0.0.1:$OURS_PORT" RUST_LOG=warn "$BIN" &
PIDS+=($!); OURS=$!
"$THUMBOR_VENV/bin/thumbor" --ip 127.0.0.1 --port "$THUMBOR_PORT" --conf "$WORK/thumbor.conf" \
  --processes 2 -l error >"$WORK/thumbor.log" 2>&1 &
PIDS+=($!); THUMBOR=$!
for url in "http://127.0.0.1:$OURS_PORT/thumbor/unsafe/10x0/lake.jpg" "http://127.0.0.1:$THUMBOR_PORT/unsafe/10x0/lake.jpg"; do
  for _ in $(seq 200); do curl -sf "$url" -o /dev/null && break; sleep 0.1; done
done

# VmHWM of a process and its children, MB; clear_refs resets it.
hwm() { local t=0; for p in $1 $(pgrep -P "$1" || true); do t=$((t + $(awk '/VmHWM/ {print $2}' "/proc/$p/status" 2>/dev/null || echo 0))); done; echo $((t / 1024)); }
reset_hwm() { for p in $1 $(pgrep -P "$1" || true); do echo 5 >"/proc/$p/clear_refs" 2>/dev/null || true; done; }
measure() {
  wrk -t1 -c$CONC -d2s "$1" >/dev/null 2>&1 || true
  wrk -t2 -c$CONC -d"${DURATION}s" --latency "$1" >"$WORK/wrk.txt" 2>&1
  if grep -q "Non-2xx" "$WORK/wrk.txt"; then echo "error"; else awk '/Requests\/sec/ {print $2}' "$WORK/wrk.txt"; fi
}

# label | thumbor path (the same on both servers)
CASES=(
  "9 MP lake JPEG -> 800 px wide JPEG q80|unsafe/800x0/lake.jpg"
  "9 MP lake JPEG -> 800 px wide WebP q80|unsafe/800x0/filters:format(webp)/lake.jpg"
  "9 MP lake JPEG -> 512x512 cover crop JPEG q80|unsafe/512x512/lake.jpg"
  "12 MP JPEG -> 800 px wide JPEG q80|unsafe/800x0/window12mp.jpg"
)

table="| case | image-server req/s | thumbor req/s | ratio | peak RSS ours / thumbor (MB) | output bytes ours / thumbor |
|---|---:|---:|---:|---|---|"
for c in "${CASES[@]}"; do
  label=${c%%|*}; path=${c#*|}
  ours_url="http://127.0.0.1:$OURS_PORT/thumbor/$path"
  th_url="http://127.0.0.1:$THUMBOR_PORT/$path"
  reset_hwm "$OURS"; reset_hwm "$THUMBOR"
  o_sum=0; t_sum=0
  for _ in $(seq "$ROUNDS"); do
    o=$(measure "$ours_url"); t=$(measure "$th_url")
    o_sum=$(echo "$o_sum + ${o/error/0}" | bc -l); t_sum=$(echo "$t_sum + ${t/error/0}" | bc -l)
  done
  o=$(echo "scale=2; $o_sum / $ROUNDS" | bc -l); t=$(echo "scale=2; $t_sum / $ROUNDS" | bc -l)
  ratio=$(echo "scale=2; if ($t > 0) $o / $t else 0" | bc -l)
  ob=$(curl -s "$ours_url" | wc -c); tb=$(curl -s "$th_url" | wc -c)
  table+="
| $label | $o | $t | ${ratio}x | $(hwm "$OURS") / $(hwm "$THUMBOR") | $ob / $tb |"
  echo "$label: ours $o req/s, thumbor $t req/s" >&2
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
header="Produced by \`bench/image/thumbor.sh\` on $(date -u +%Y-%m-%d), $(nproc) cores, load average before $LOAD_BEFORE and after $LOAD_AFTER; wrk -t2 -c$CONC, $ROUNDS alternating rounds of ${DURATION}s per side and case, result caches off; thumbor $THUMBOR_VERSION (PIL engine, 2 processes) at its root, image-server (release) answering the same URLs under /thumbor."
echo "$header"; echo; echo "$table"
if [ "${1:-}" = "--write" ]; then
  { echo; echo "## $(date -u +%Y-%m-%d)"; echo; echo "$header"; echo; echo "$table"; } >>"$HERE/THUMBOR.md"
fi
