# Shared by bench/security/review-{7,8,11,12}-*.sh: start a review-server binary on a loopback
# port with a temp DATA_DIR, measure it, print one markdown table row. Source it; not run alone.
# BIN=path picks the binary (default $CARGO_TARGET_DIR/release/review-server).
BIN=${BIN:-${CARGO_TARGET_DIR:-target}/release/review-server}
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

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
