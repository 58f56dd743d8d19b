#!/usr/bin/env bash
# Finding 2 (issue 26): clients that hang up free the transform slot while the transformation
# runs on. Before: the slot and queue ticket lived in the request's future, the work on a
# blocking thread, so each wave of hung-up clients started more detached work (60 of them had
# the server OOM-killed at 3 GiB), and SIGTERM waited for all of it. After: the job owns its
# slot and ticket, is cancelled at its next stage when its client leaves, and SIGTERM cancels
# what still runs after SHUTDOWN_DRAIN_SECS.
# Rows: 100 hung-up misses with distinct URLs (10 clients x 10, each hanging up after 0.3 s),
# then SIGTERM with 30 heavy misses in flight (clients connected, SHUTDOWN_DRAIN_SECS=5).
# The server is killed if its RSS passes 2 GiB (so the machine is not taken down): "KILLED".
# Usage: BIN=path bench/security/image-2-hangup.sh (only 127.0.0.1 is contacted).
BIN=${BIN:-${CARGO_TARGET_DIR:-target}/release/image-server}
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LIMIT_KB=$((2 * 1024 * 1024))
HEAVY='width=4000&trim=5&blur=20&sharpen&format=webp'


start_server() {
  local port mport; port=$(free_port); mport=$(free_port)
  URL="http://127.0.0.1:$port"; METRICS="http://127.0.0.1:$mport/metrics"
  rm -rf "$WORK/images" "$WORK/data"; mkdir -p "$WORK/images" "$WORK/data"
  cp "$ROOT/crates/image-pipeline/tests/fixtures/lake.jpg" "$WORK/images/lake.jpg"
  env -i PATH="$PATH" LISTEN="127.0.0.1:$port" METRICS_LISTEN="127.0.0.1:$mport" \
    DATA_DIR="$WORK/data" API_KEY=bench-key-0123456789 STORAGE_URL="file://$WORK/images" \
    RUST_LOG=warn "$@" "$BIN" >/dev/null 2>"$WORK/server.log" &
  SERVER_PID=$!; PIDS+=("$SERVER_PID")
  for _ in $(seq 1 200); do
    curl -fsS -o /dev/null "$URL/admin/health" 2>/dev/null && return 0
    sleep 0.05
  done
  return 1
}

# Samples every 0.1 s until $WORK/stop exists: VmHWM, VmRSS (killing the server over
# LIMIT_KB), the running gauge, the health answer's time. Writes maxima to $WORK/watch.
watch() {
  local hwm=0 rss=0 run=0 health=0 killed=""
  while [ ! -e "$WORK/stop" ]; do
    if [ -r "/proc/$SERVER_PID/status" ]; then
      rss=$(awk '/VmRSS/ {print $2}' "/proc/$SERVER_PID/status" 2>/dev/null || echo 0)
      hwm=$(awk '/VmHWM/ {print $2}' "/proc/$SERVER_PID/status" 2>/dev/null || echo "$hwm")
      if [ "${rss:-0}" -gt "$LIMIT_KB" ]; then kill -9 "$SERVER_PID" 2>/dev/null; killed="KILLED at 2 GiB"; fi
    fi
    r=$(curl -s -m 0.5 "$METRICS" 2>/dev/null | awk '/^image_server_transforms_running / {print $2}')
    [ -n "$r" ] && run=$(awk -v a="$run" -v b="$r" 'BEGIN {print (b>a)?b:a}')
    h=$(curl -s -m 5 -o /dev/null -w '%{time_total}' "$URL/admin/health" 2>/dev/null || echo 5)
    health=$(awk -v a="$health" -v b="$h" 'BEGIN {print (b>a)?b:a}')
    echo "$hwm $run $health $killed" > "$WORK/watch"
    sleep 0.1
  done
}

# Row 1: 100 hung-up misses.
start_server || { row 2 "server did not start" - - - -; exit 1; }
rm -f "$WORK/stop"; watch & WATCH=$!
t0=$(now); cpu0=$(cpu_secs "$SERVER_PID")
CLIENTS=()
for c in $(seq 0 9); do
  ( for i in $(seq 0 9); do
      curl -s -m 0.3 -o /dev/null "$URL/images/resize/lake.jpg?$HEAVY&max_bytes=$((20000 + c * 10 + i))" || true
    done ) &
  CLIENTS+=($!)
done
wait "${CLIENTS[@]}" 2>/dev/null || true
# Let detached work run out (or the server settle): until the CPU stops moving, 60 s at most.
last=""; for _ in $(seq 1 120); do
  cur=$(cpu_secs "$SERVER_PID"); [ "$cur" = "$last" ] && break; last=$cur; sleep 0.5
done
touch "$WORK/stop"; wait "$WATCH" 2>/dev/null || true
read -r hwm run health killed < <(cat "$WORK/watch"; echo)
cpu1=$(cpu_secs "$SERVER_PID")
cpu="-"; [ "$cpu1" != "-" ] && cpu=$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN {printf "%.2f", b-a}')
if kill -0 "$SERVER_PID" 2>/dev/null && curl -fsS -m 5 -o /dev/null "$URL/admin/health"; then alive=alive; else alive="DEAD"; fi
row "2 (100 hung-up misses)" "${killed:-served} ; running gauge max ${run:-?}; slowest health ${health}s" \
  "$(elapsed "$t0")" "$cpu" "$((hwm / 1024)) MB" "$alive"
kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true

# Row 2: SIGTERM with heavy work in flight.
INFLIGHT=()
start_server SHUTDOWN_DRAIN_SECS=5 || { row 2 "server did not start" - - - -; exit 1; }
for n in $(seq 0 29); do
  curl -s -m 300 -o /dev/null "$URL/images/resize/lake.jpg?$HEAVY&max_bytes=$((30000 + n))" &
  PIDS+=($!); INFLIGHT+=($!)
  [ "$n" = 1 ] && sleep 0.3
done
sleep 0.5
cpu0=$(cpu_secs "$SERVER_PID")
hwm=$(awk '/VmHWM/ {print $2}' "/proc/$SERVER_PID/status")
t0=$(now)
kill -TERM "$SERVER_PID"
exited="no exit within 120 s"
for _ in $(seq 1 1200); do
  # An exited server stays a zombie until reaped: /proc still answers, without its numbers.
  state=$(ps -o stat= -p "$SERVER_PID" 2>/dev/null || true)
  if [ -z "$state" ] || [ "${state:0:1}" = Z ]; then exited="exited"; break; fi
  new=$(awk '/VmHWM/ {print $2}' "/proc/$SERVER_PID/status" 2>/dev/null || true)
  [ -n "$new" ] && hwm=$new
  new=$(cpu_secs "$SERVER_PID"); [ "$new" != "-" ] && [ -n "$new" ] && cpu1=$new
  sleep 0.1
done
row "2 (SIGTERM, 30 heavy misses in flight, drain 5 s)" "$exited" "$(elapsed "$t0")" \
  "$(awk -v a="$cpu0" -v b="${cpu1:-$cpu0}" 'BEGIN {printf "%.2f", b-a}') (after SIGTERM)" \
  "$((hwm / 1024)) MB" "-"
wait "${INFLIGHT[@]}" 2>/dev/null || true
