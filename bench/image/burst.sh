#!/usr/bin/env bash
# A burst of cold misses, and what it costs: N different resize URLs of the 9 MP lake photo
# (1.8 MB) sent at once, with the result caches off, against image-server with
# TRANSFORM_QUEUE_SIZE at its default (64) and at 0 (no limit). Then format=auto for a browser
# (Accept: image/avif,image/webp) at growing sizes: which format goes out under the default
# AVIF_MAX_PIXELS, how long one request takes and the server's peak RSS.
# Prints markdown tables (and writes them to bench/image/BURST.md with --write). Needs: cargo,
# curl, the photos in ../shared/images. Usage: bench/image/burst.sh [--write] [N, default 300]
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
SHARED="${SHARED_IMAGES:-$ROOT/../shared/images}"
WRITE=""
if [ "${1:-}" = "--write" ]; then WRITE=1; shift; fi
N="${1:-300}"
PORT=3211
# shellcheck source=one-server.sh
source "$HERE/one-server.sh"
cp "$SHARED/crate_webp-0.3.1__lake.jpg" "$WORK/images/lake.jpg"

report() {
echo "# Bursts of misses, and AVIF by size"
echo
echo "Produced by \`bench/image/burst.sh --write\` on $(date -u +%Y-%m-%d), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), result caches off, one server at a time."
echo
echo "| TRANSFORM_QUEUE_SIZE | requests at once | 200 | 429 | other | wall time | peak RSS (MB) |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for queue in 64 0; do
  start TRANSFORM_QUEUE_SIZE="$queue"
  began=$(date +%s%N)
  seq 1 "$N" | awk -v base="http://127.0.0.1:$PORT" \
    '{ print base "/images/resize/lake.jpg?width=" 200 + $1 "&format=jpeg" }' |
    xargs -P "$N" -n 1 curl -s -o /dev/null -w '%{http_code}\n' >"$WORK/codes"
  wall=$(( ($(date +%s%N) - began) / 1000000 ))
  ok=$(grep -c '^200$' "$WORK/codes" || true)
  busy=$(grep -c '^429$' "$WORK/codes" || true)
  other=$((N - ok - busy))
  label=$queue; [ "$queue" = 0 ] && label="0 (no limit)"
  printf '| %s | %d | %d | %d | %d | %d ms | %s |\n' "$label" "$N" "$ok" "$busy" "$other" "$wall" "$(hwm)"
  stop
done

echo
echo "| format=auto, Accept: image/avif,image/webp | sent as | bytes | time (one request) | peak RSS (MB) |"
echo "|---|---|---:|---:|---:|"
for width in 800 1200 1600 2400 4000; do
  start
  out=$(curl -s -o "$WORK/out" -w '%{content_type} %{time_total}' -H 'Accept: image/avif,image/webp' \
    "http://127.0.0.1:$PORT/images/resize/lake.jpg?width=$width&format=auto")
  printf '| %d px wide (%d x %d) | %s | %d | %.2f s | %s |\n' "$width" "$width" "$((width * 9 / 16))" \
    "${out% *}" "$(stat -c %s "$WORK/out")" "${out#* }" "$(hwm)"
  stop
  start AVIF_MAX_PIXELS=100000000
  out=$(curl -s -o "$WORK/out" -w '%{content_type} %{time_total}' -H 'Accept: image/avif,image/webp' \
    "http://127.0.0.1:$PORT/images/resize/lake.jpg?width=$width&format=auto")
  printf '| same, AVIF_MAX_PIXELS unlimited | %s | %d | %.2f s | %s |\n' \
    "${out% *}" "$(stat -c %s "$WORK/out")" "${out#* }" "$(hwm)"
  stop
done
}

if [ -n "$WRITE" ]; then
  report | tee "$HERE/BURST.md"
else
  report
fi
