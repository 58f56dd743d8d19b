#!/usr/bin/env bash
# image-server against a sharp reference server, side by side, cache off, same photos and
# parameters, same load tool (wrk) at concurrency 2. Prints a markdown table (and writes it to
# bench/image/RESULTS.md with --write). Each side is measured ROUNDS times, alternating (ours,
# sharp, ours, sharp...), and the request rates averaged, so that a noisy neighbour on a shared
# machine hits both. WebP cases get a second row for image-server at WEBP_EFFORT=2.
#
# Needs: cargo, node + npm (sharp is installed here from npm), wrk, the photos in
# ../shared/images (relative to the repository root). Usage: bench/image/run.sh [--write]
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
SHARED="${SHARED_IMAGES:-$ROOT/../shared/images}"
DURATION="${DURATION:-10}"
ROUNDS="${ROUNDS:-2}"
CONC=2
OURS_PORT=3201
SHARP_PORT=3202
FAST_PORT=3203
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/rust-services-target}"
WORK="$(mktemp -d)"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT

echo "building image-server (release) and the SSIM tool..." >&2
{ cargo build --release -p image-server && cargo build --release -p image-pipeline --example ssim; } \
  >"$WORK/build.log" 2>&1 || { tail -30 "$WORK/build.log"; exit 1; }
BIN="$CARGO_TARGET_DIR/release/image-server"
SSIM="$CARGO_TARGET_DIR/release/examples/ssim"

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
echo "installing sharp from npm..." >&2
(cd "$HERE" && npm install --no-audit --no-fund --silent >/dev/null)

# Photos: a 12 MP JPEG, the 9 MP lake JPEG, a PNG and a lossy WebP (q90) made from the lake
# photo, a 12 MP HEIC, and a 42-frame animated GIF.
mkdir -p "$WORK/images"
cp "$SHARED/derived__window_from_heic_q90.jpg" "$WORK/images/window12mp.jpg"
cp "$SHARED/crate_webp-0.3.1__lake.jpg" "$WORK/images/lake.jpg"
cp "$SHARED/crate_libheif-sys-1.14.4__window.heic" "$WORK/images/window.heic"
# A real 42-frame animation (Pillow's test suite, crates/image-pipeline/tests/fixtures/ATTRIBUTION.md).
cp "$ROOT/crates/image-pipeline/tests/fixtures/iss634.gif" "$WORK/images/anim.gif"
(cd "$HERE" && node -e "require('sharp')('$WORK/images/lake.jpg').png().toFile('$WORK/images/lake.png')")
(cd "$HERE" && node -e "require('sharp')('$WORK/images/lake.jpg').webp({ quality: 90 }).toFile('$WORK/images/lake.webp')")

# image-server runs with its own allocator setting (MALLOC_MMAP_THRESHOLD_ unset: it sets 2 MiB
# itself, apps/image-server/README.md), as a user who starts the binary gets it.
unset MALLOC_MMAP_THRESHOLD_
STORAGE_URL="file://$WORK/images" CACHE_MAX_BYTES=0 STORAGE_CACHE=false API_KEY=bench \
  DATA_DIR="$WORK/data" LISTEN="127.0.0.1:$OURS_PORT" RUST_LOG=warn "$BIN" &
OURS=$!; PIDS+=("$OURS")
STORAGE_URL="file://$WORK/images" CACHE_MAX_BYTES=0 STORAGE_CACHE=false API_KEY=bench \
  DATA_DIR="$WORK/data" LISTEN="127.0.0.1:$FAST_PORT" RUST_LOG=warn WEBP_EFFORT=2 "$BIN" &
FAST=$!; PIDS+=("$FAST")
(cd "$HERE" && exec node sharp-server.mjs "$SHARP_PORT" "$WORK/images") >"$WORK/sharp.log" 2>&1 &
SHARP=$!; PIDS+=("$SHARP")
for port in $OURS_PORT $SHARP_PORT $FAST_PORT; do
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/images/resize/lake.jpg?width=10" -o /dev/null && break; sleep 0.1; done
done
# The node process is the child of the subshell's exec: it is $SHARP itself.

hwm() { awk '/VmHWM/ {printf "%d", $2/1024}' "/proc/$1/status"; }
reset_hwm() { echo 5 > "/proc/$1/clear_refs" 2>/dev/null || true; }

# wrk output -> "rps p50 p99"
measure() {
  local url=$1
  wrk -t1 -c$CONC -d2s "$url" >/dev/null 2>&1 || true   # warm-up
  wrk -t2 -c$CONC -d"${DURATION}s" --latency "$url" > "$WORK/wrk.txt" 2>&1
  local rps p50 p99 non2xx
  rps=$(awk '/Requests\/sec/ {print $2}' "$WORK/wrk.txt")
  p50=$(awk '$1=="50%" {print $2}' "$WORK/wrk.txt")
  p99=$(awk '$1=="99%" {print $2}' "$WORK/wrk.txt")
  non2xx=$(awk '/Non-2xx/ {print $NF}' "$WORK/wrk.txt")
  if [ -n "$non2xx" ]; then echo "error error error"; else echo "$rps $p50 $p99"; fi
}

CASES=(
  "12 MP JPEG -> 800w JPEG q80|window12mp.jpg?width=800&format=jpeg&quality=80"
  "12 MP JPEG -> 800w WebP q80|window12mp.jpg?width=800&format=webp&quality=80"
  "9 MP lake JPEG -> 800w JPEG q80|lake.jpg?width=800&format=jpeg&quality=80"
  "9 MP lake JPEG -> 800w WebP q80|lake.jpg?width=800&format=webp&quality=80"
  "9 MP PNG -> 800w WebP q80|lake.png?width=800&format=webp&quality=80"
  "9 MP WebP -> 800w JPEG q80|lake.webp?width=800&format=jpeg&quality=80"
  "12 MP HEIC -> 800w JPEG q80|window.heic?width=800&format=jpeg&quality=80"
  "42-frame GIF 245x245 -> 120w animated WebP q80|anim.gif?width=120&format=webp&quality=80"
  "9 MP lake JPEG -> 1600w WebP, max_bytes 60000|lake.jpg?width=1600&format=webp&max_bytes=60000"
)

# The mean request rate of ROUNDS runs, alternating with the other side: "rps p50 p99" (the
# latencies of the last round).
mean_of() { awk '{ n++; s += $1; p50 = $2; p99 = $3 } END { if (n) printf "%.2f %s %s", s / n, p50, p99 }'; }

# SSIM of two image files, or n/a. Fidelity is each output's SSIM against the unencoded resize
# ($WORK/unencoded.png: image-server's lossless PNG of the same transform, whose pixels are
# libvips'; crates/image-pipeline/tests/libvips_parity.rs).
ssim_of() { "$SSIM" "$1" "$2" 2>/dev/null || echo "n/a"; }

TABLE="| case | image-server req/s | sharp req/s | ratio | p50 ours / sharp | p99 ours / sharp | peak RSS ours / sharp (MB) | SSIM ours vs sharp | SSIM vs unencoded, ours / sharp |
|---|---:|---:|---:|---|---|---|---:|---|"
for c in "${CASES[@]}"; do
  name="${c%%|*}"; q="${c#*|}"
  echo "case: $name" >&2
  reset_hwm $OURS; reset_hwm $SHARP; reset_hwm $FAST
  sharp_ok=1
  curl -sf "http://127.0.0.1:$SHARP_PORT/images/resize/$q" -o "$WORK/sharp.out" || sharp_ok=0
  webp=0; case "$name" in *"800w WebP"*) webp=1 ;; esac
  : > "$WORK/ours.runs"; : > "$WORK/sharp.runs"; : > "$WORK/fast.runs"
  for _ in $(seq "$ROUNDS"); do
    measure "http://127.0.0.1:$OURS_PORT/images/resize/$q" >> "$WORK/ours.runs"
    if [ "$sharp_ok" = 1 ]; then
      measure "http://127.0.0.1:$SHARP_PORT/images/resize/$q" >> "$WORK/sharp.runs"
    fi
    if [ "$webp" = 1 ]; then
      measure "http://127.0.0.1:$FAST_PORT/images/resize/$q" >> "$WORK/fast.runs"
    fi
  done
  read -r o_rps o_p50 o_p99 <<<"$(mean_of < "$WORK/ours.runs")"
  o_rss=$(hwm $OURS); s_rss=$(hwm $SHARP)
  curl -sf "http://127.0.0.1:$OURS_PORT/images/resize/$q" -o "$WORK/ours.out" || true
  unencoded_q=$(echo "$q" | sed -E 's/format=[a-z]+/format=png/; s/&quality=[0-9]+//; s/&max_bytes=[0-9]+//')
  curl -sf "http://127.0.0.1:$OURS_PORT/images/resize/$unencoded_q" -o "$WORK/unencoded.png" || true
  o_fid=$(ssim_of "$WORK/ours.out" "$WORK/unencoded.png"); s_fid="-"
  ssim="n/a"; ratio="n/a"
  if [ "$sharp_ok" = 1 ]; then
    read -r s_rps s_p50 s_p99 <<<"$(mean_of < "$WORK/sharp.runs")"
    ssim=$(ssim_of "$WORK/ours.out" "$WORK/sharp.out")
    s_fid=$(ssim_of "$WORK/sharp.out" "$WORK/unencoded.png")
    ratio=$(awk -v a="$o_rps" -v b="$s_rps" 'BEGIN { if (b+0 > 0) printf "%.2fx", a/b; else print "n/a" }')
  else
    s_rps="unsupported"; s_p50="-"; s_p99="-"
  fi
  TABLE+="
| $name | $o_rps | $s_rps | $ratio | $o_p50 / $s_p50 | $o_p99 / $s_p99 | $o_rss / $s_rss | $ssim | $o_fid / $s_fid |"
  if [ "$webp" = 1 ]; then
    read -r f_rps f_p50 f_p99 <<<"$(mean_of < "$WORK/fast.runs")"
    curl -sf "http://127.0.0.1:$FAST_PORT/images/resize/$q" -o "$WORK/fast.out" || true
    f_ssim=$(ssim_of "$WORK/fast.out" "$WORK/sharp.out")
    f_ratio=$(awk -v a="$f_rps" -v b="$s_rps" 'BEGIN { if (b+0 > 0) printf "%.2fx", a/b; else print "n/a" }')
    TABLE+="
| $name, ours at WEBP_EFFORT=2 | $f_rps | $s_rps | $f_ratio | $f_p50 / $s_p50 | $f_p99 / $s_p99 | $(hwm $FAST) / $s_rss | $f_ssim | $(ssim_of "$WORK/fast.out" "$WORK/unencoded.png") / $s_fid |"
  fi
done

# Cache hits from memory: a second image-server with the memory tier on.
STORAGE_URL="file://$WORK/images" STORAGE_CACHE=false API_KEY=bench DATA_DIR="$WORK/data" \
  LISTEN="127.0.0.1:$((OURS_PORT + 10))" RUST_LOG=warn "$BIN" &
CACHED=$!; PIDS+=("$CACHED")
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$((OURS_PORT + 10))/admin/health" -o /dev/null && break; sleep 0.1; done
hit_url="http://127.0.0.1:$((OURS_PORT + 10))/images/resize/lake.jpg?width=800&format=webp&quality=80"
curl -sf "$hit_url" -o /dev/null
# Each row's peak RSS is read right after that row's own run, its high-water mark reset first:
# the concurrency-2 row must not report the peak of the concurrency-16 run.
reset_hwm $CACHED
read -r h_rps h_p50 h_p99 <<<"$(measure "$hit_url")"
h_rss=$(hwm $CACHED)
reset_hwm $CACHED
read -r h16_rps h16_p50 h16_p99 <<<"$(CONC=16 measure "$hit_url")"
h16_rss=$(hwm $CACHED)
TABLE+="

Cache hits from memory (lake 800w WebP, wrk on the same 2 cores):

| concurrency | req/s | p50 | p99 | peak RSS (MB) |
|---:|---:|---|---|---:|
| 2 | $h_rps | $h_p50 | $h_p99 | $h_rss |
| 16 | $h16_rps | $h16_p50 | $h16_p99 | $h16_rss |"

SHARP_VERSION=$(head -1 "$WORK/sharp.log")
HEADER="Measured $(date -u +%Y-%m-%d) on $(nproc) cores, load average before the run $LOAD_BEFORE and after $(cut -d' ' -f1-3 /proc/loadavg) ($(awk -F: '/model name/ {print $2; exit}' /proc/cpuinfo | sed 's/^ *//')), wrk -t2 -c2, $ROUNDS alternating rounds of ${DURATION}s per side and case (each after a 2 s warm-up, request rates averaged), result caches off. Reference: $SHARP_VERSION."
echo "$HEADER"
echo
echo "$TABLE"
if [ "${1:-}" = "--write" ]; then
  {
    echo "# image-server vs sharp"
    echo
    echo "Produced by \`bench/image/run.sh --write\`. $HEADER"
    echo
    echo "$TABLE"
  } > "$HERE/RESULTS.md"
  echo "wrote $HERE/RESULTS.md" >&2
fi
