#!/usr/bin/env bash
# The speed half of two image-server tests, which assert only behaviour (tests/api.rs): how
# fast a decompression bomb is refused from its header, and when a small JPEG is answered
# while two HEIC requests wait for the one HEIF decode at a time (TRANSFORM_CONCURRENCY=2).
# Prints markdown tables (and writes them to bench/image/TIMING.md with --write). Needs: cargo,
# curl. Usage: bench/image/timing.sh [--write] [ROUNDS, default 5]; IMAGE_SERVER_BIN=path runs a
# binary built already instead of building the release one (one-server.sh).
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
FIXTURES="$HERE/../../crates/image-pipeline/tests/fixtures"
WRITE=""
if [ "${1:-}" = "--write" ]; then WRITE=1; shift; fi
ROUNDS="${1:-5}"
PORT=3221
# shellcheck source=one-server.sh
source "$HERE/one-server.sh"
cp "$FIXTURES/heic_200mp.heic" "$WORK/images/bomb.heic"
cp "$FIXTURES/window.heic" "$WORK/images/window.heic"
cp "$FIXTURES/large_image.jpg" "$WORK/images/small.jpg"
URL="http://127.0.0.1:$PORT/images/resize"

# ms since the epoch
now() { echo $(( $(date +%s%N) / 1000000 )); }

# `curl` of $1, started $2 ms after $T0; prints "status started finished" (ms after $T0).
timed() {
  sleep "$(awk -v ms="$2" 'BEGIN { printf "%.3f", ms / 1000 }')"
  local began code
  began=$(( $(now) - T0 ))
  code=$(curl -s -o /dev/null -w '%{http_code}' "$1")
  echo "$code $began $(( $(now) - T0 ))"
}

report() {
echo "# Timing of refusals and of the HEIF gate"
echo
echo "Produced by \`bench/image/timing.sh --write\` on $(date -u +%Y-%m-%d), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), load average before $(cut -d' ' -f1-3 /proc/loadavg), ${IMAGE_SERVER_BIN:+binary $IMAGE_SERVER_BIN, not }release build, result caches off, $ROUNDS rounds."
echo
start
echo "| request | status | time, each round (ms) |"
echo "|---|---:|---|"
for case in "bomb.heic?width=100|a 200 MP HEIC in 2.4 MB, refused from its header" \
  "window.heic?width=800&format=jpeg|a 12 MP HEIC decoded and resized, for scale"; do
  q="${case%%|*}"; what="${case#*|}"
  times=""; code=""
  for _ in $(seq "$ROUNDS"); do
    read -r code t <<<"$(curl -s -o /dev/null -w '%{http_code} %{time_total}' "$URL/$q")"
    times+="$(awk -v t="$t" 'BEGIN { printf "%d", t * 1000 }') "
  done
  echo "| \`$q\`: $what | $code | ${times% } |"
done
stop

echo
echo "TRANSFORM_CONCURRENCY=2: a HEIC at 0 ms, another at 50 ms, a small JPEG at 150 ms; when each"
echo "is answered (ms after the first was sent). The JPEG must not wait for the HEIC decodes."
echo
echo "| round | HEIC 1 started / answered | HEIC 2 started / answered | JPEG started / answered | JPEG answered first |"
echo "|---:|---|---|---|---|"
start TRANSFORM_CONCURRENCY=2
for round in $(seq "$ROUNDS"); do
  T0=$(now)
  timed "$URL/window.heic?width=$((800 + round))&format=jpeg" 0 >"$WORK/h1" &
  p1=$!
  timed "$URL/window.heic?width=$((700 + round))&format=jpeg" 50 >"$WORK/h2" &
  p2=$!
  timed "$URL/small.jpg?width=$((32 + round))&format=jpeg" 150 >"$WORK/j" &
  p3=$!
  wait "$p1" "$p2" "$p3"
  read -r _ h1s h1e <"$WORK/h1"; read -r _ h2s h2e <"$WORK/h2"; read -r _ js je <"$WORK/j"
  first=no; [ "$je" -lt "$h1e" ] && [ "$je" -lt "$h2e" ] && first=yes
  echo "| $round | $h1s / $h1e | $h2s / $h2e | $js / $je | $first |"
done
stop
}

if [ -n "$WRITE" ]; then
  report | tee "$HERE/TIMING.md"
  echo "wrote $HERE/TIMING.md" >&2
else
  report
fi
