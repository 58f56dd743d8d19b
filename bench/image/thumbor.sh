#!/usr/bin/env bash
# image-server, sharp and thumbor 7 on the same requests, side by side in one run: image-server
# answers thumbor's URLs under its /thumbor prefix (docs/image-service.md, "Moving from imgproxy
# / thumbor"), thumbor (from PyPI, its default PIL engine) the same URLs at its root, and the
# sharp reference server (bench/image/sharp-server.mjs, sharp from npm) the same transform in
# image-server's query form. All read the same files from a local directory, result caches off,
# wrk at concurrency 2. Each server is measured ROUNDS times, alternating, and the request rates
# averaged; peak RSS is each server's VmHWM over the case (thumbor: the sum over its processes).
# thumbor runs 2 processes (one per core), image-server its defaults. Prints a markdown table;
# --write appends it to bench/image/THUMBOR.md.
#
# Needs: cargo, node + npm, python3-venv (thumbor is installed into $THUMBOR_VENV from PyPI),
# wrk, the photos in ../shared/images. Usage: bench/image/thumbor.sh [--write]
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
SHARED="${SHARED_IMAGES:-$ROOT/../shared/images}"
DURATION="${DURATION:-8}"
ROUNDS="${ROUNDS:-2}"
CONC=2
OURS_PORT=3211
THUMBOR_PORT=3212
SHARP_PORT=3213
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
echo "installing sharp from npm..." >&2
(cd "$HERE" && npm install --no-audit --no-fund --silent >/dev/null)
SHARP_VERSION=$(cd "$HERE" && node -p "require('sharp').versions.sharp + ', libvips ' + require('sharp').versions.vips")
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
(cd "$HERE" && exec node sharp-server.mjs "$SHARP_PORT" "$WORK/images") >"$WORK/sharp.log" 2>&1 &
PIDS+=($!); SHARP=$!
for url in "http://127.0.0.1:$OURS_PORT/thumbor/unsafe/10x0/lake.jpg" "http://127.0.0.1:$THUMBOR_PORT/unsafe/10x0/lake.jpg" \
  "http://127.0.0.1:$SHARP_PORT/images/resize/lake.jpg?width=10"; do
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

# label | thumbor path (image-server and thumbor) | the same transform for sharp's server
CASES=(
  "9 MP lake JPEG -> 800 px wide JPEG q80|unsafe/800x0/lake.jpg|lake.jpg?width=800&format=jpeg&quality=80"
  "9 MP lake JPEG -> 800 px wide WebP q80|unsafe/800x0/filters:format(webp)/lake.jpg|lake.jpg?width=800&format=webp&quality=80"
  "9 MP lake JPEG -> 512x512 cover crop JPEG q80|unsafe/512x512/lake.jpg|lake.jpg?width=512&height=512&fit=cover&format=jpeg&quality=80"
  "12 MP JPEG -> 800 px wide JPEG q80|unsafe/800x0/window12mp.jpg|window12mp.jpg?width=800&format=jpeg&quality=80"
)

mean() { echo "scale=2; $1 / $ROUNDS" | bc -l; }
ratio() { echo "scale=2; if ($2 > 0) $1 / $2 else 0" | bc -l; }
table="| case | image-server req/s | sharp req/s | thumbor req/s | vs sharp | vs thumbor | peak RSS ours / sharp / thumbor (MB) | output bytes ours / sharp / thumbor |
|---|---:|---:|---:|---:|---:|---|---|"
for c in "${CASES[@]}"; do
  label=${c%%|*}; rest=${c#*|}; path=${rest%%|*}; query=${rest#*|}
  ours_url="http://127.0.0.1:$OURS_PORT/thumbor/$path"
  th_url="http://127.0.0.1:$THUMBOR_PORT/$path"
  sh_url="http://127.0.0.1:$SHARP_PORT/images/resize/$query"
  reset_hwm "$OURS"; reset_hwm "$THUMBOR"; reset_hwm "$SHARP"
  o_sum=0; t_sum=0; s_sum=0
  for _ in $(seq "$ROUNDS"); do
    o=$(measure "$ours_url"); s=$(measure "$sh_url"); t=$(measure "$th_url")
    o_sum=$(echo "$o_sum + ${o/error/0}" | bc -l); s_sum=$(echo "$s_sum + ${s/error/0}" | bc -l)
    t_sum=$(echo "$t_sum + ${t/error/0}" | bc -l)
  done
  o=$(mean "$o_sum"); s=$(mean "$s_sum"); t=$(mean "$t_sum")
  ob=$(curl -s "$ours_url" | wc -c); sb=$(curl -s "$sh_url" | wc -c); tb=$(curl -s "$th_url" | wc -c)
  table+="
| $label | $o | $s | $t | $(ratio "$o" "$s")x | $(ratio "$o" "$t")x | $(hwm "$OURS") / $(hwm "$SHARP") / $(hwm "$THUMBOR") | $ob / $sb / $tb |"
  echo "$label: ours $o req/s, sharp $s req/s, thumbor $t req/s" >&2
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
header="Produced by \`bench/image/thumbor.sh\` on $(date -u +%Y-%m-%d), $(nproc) cores, load average before $LOAD_BEFORE and after $LOAD_AFTER; wrk -t2 -c$CONC, $ROUNDS alternating rounds of ${DURATION}s per server and case, result caches off; thumbor $THUMBOR_VERSION (PIL engine, 2 processes) at its root, image-server (release) answering the same URLs under /thumbor, sharp $SHARP_VERSION (bench/image/sharp-server.mjs) the same transforms in image-server's query form."
echo "$header"; echo; echo "$table"
if [ "${1:-}" = "--write" ]; then
  { echo; echo "## $(date -u +%Y-%m-%d)"; echo; echo "$header"; echo; echo "$table"; } >>"$HERE/THUMBOR.md"
fi
