# Shared by bench/security/review-{7,8,11,12}-*.sh: start a review-server binary on a loopback
# port with a temp DATA_DIR, measure it, print one markdown table row. Source it; not run alone.
# BIN=path picks the binary (default $CARGO_TARGET_DIR/release/review-server).
set -euo pipefail
BIN=${BIN:-${CARGO_TARGET_DIR:-target}/release/review-server}
[ -x "$BIN" ] || { echo "no binary at $BIN (set BIN=path)" >&2; exit 2; }
WORK=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start_server LISTEN_IP [VAR=value...]: sets PORT, URL, SERVER_PID, SERVER_LOG; returns 1 when
# the process exits before answering /health.
start_server() {
  local ip=$1; shift
  PORT=$(free_port); URL="http://127.0.0.1:$PORT"
  mkdir -p "$WORK/data-$PORT"; SERVER_LOG="$WORK/server-$PORT.log"
  env -i PATH="$PATH" LISTEN="$ip:$PORT" DATA_DIR="$WORK/data-$PORT" RUST_LOG=info "$@" \
    "$BIN" >/dev/null 2>"$SERVER_LOG" &
  SERVER_PID=$!; PIDS+=("$SERVER_PID")
  for _ in $(seq 1 200); do
    curl -fsS -o /dev/null "$URL/health" 2>/dev/null && return 0
    kill -0 "$SERVER_PID" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}

# wait_port PORT: until something listens on 127.0.0.1:PORT (a stand-in started in the
# background), at most 10 s.
wait_port() {
  for _ in $(seq 1 200); do
    python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])))' "$1" \
      2>/dev/null && return 0
    sleep 0.05
  done
  return 1
}

# cpu_secs PID: user + system CPU seconds of a live process.
cpu_secs() {
  awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14+$15)/hz}' "/proc/$1/stat" 2>/dev/null || echo "-"
}
# peak_rss PID: VmHWM in MB.
peak_rss() {
  awk '/VmHWM/ {printf "%.0f MB", $2/1024}' "/proc/$1/status" 2>/dev/null || echo "-"
}

# row FINDING STATUS WALL_SECS CPU RSS OUTCOME
row() { printf '| %s | %s | %s s | %s | %s | %s |\n' "$@"; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN {printf "%.1f", b-a}'; }
