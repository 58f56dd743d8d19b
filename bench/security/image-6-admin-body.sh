#!/usr/bin/env bash
# Finding 6 (issue 26): `POST /admin/cache/storage/clear` buffered its body (up to 33 MiB)
# before it checked the key. After: the key is checked from the headers, a wrong one answered
# 401 at once without reading the body (the connection is closed), and with the key at most
# 64 KiB of body is read.
# Rows: a wrong key with the headers of a 32 MiB body and the body stalled (time to the
# answer, 10 s at most); then 8 clients sending a wrong key and a whole 32 MiB body at once.
# Usage: BIN=path bench/security/image-6-admin-body.sh (only 127.0.0.1 is contacted).
BIN=${BIN:-${CARGO_TARGET_DIR:-target}/release/image-server}
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

alive() { if kill -0 "$SERVER_PID" 2>/dev/null && curl -fsS -m 5 -o /dev/null "$URL/admin/health"; then echo alive; else echo DEAD; fi; }

port=$(free_port); URL="http://127.0.0.1:$port"
mkdir -p "$WORK/images" "$WORK/data"
env -i PATH="$PATH" LISTEN="127.0.0.1:$port" DATA_DIR="$WORK/data" API_KEY=bench-key-0123456789 \
  STORAGE_URL="file://$WORK/images" RUST_LOG=warn "$BIN" >/dev/null 2>"$WORK/server.log" &
SERVER_PID=$!; PIDS+=("$SERVER_PID")
for _ in $(seq 1 200); do curl -fsS -o /dev/null "$URL/admin/health" 2>/dev/null && break; sleep 0.05; done

# Row 1: headers of a 32 MiB body, a wrong key, the body stalled.
t0=$(now); cpu0=$(cpu_secs "$SERVER_PID")
answer=$(python3 - "$port" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"POST /admin/cache/storage/clear HTTP/1.1\r\nHost: x\r\nX-API-Key: wrong\r\n"
          b"Content-Type: application/json\r\nContent-Length: 33554432\r\n\r\n{\"pattern\":\"")
s.settimeout(10)
try:
    line = s.recv(4096).split(b"\r\n")[0].decode()
    print(line or "closed without an answer")
except socket.timeout:
    print("no answer in 10 s (waiting for the body)")
PY
)
row "6 (wrong key, 32 MiB body stalled)" "$answer" "$(elapsed "$t0")" \
  "$(awk -v a="$cpu0" -v b="$(cpu_secs "$SERVER_PID")" 'BEGIN {printf "%.2f", b-a}')" \
  "$(peak_rss "$SERVER_PID")" "$(alive)"

# Row 2: 8 clients with a wrong key each sending a whole 32 MiB body at once.
head -c $((32 << 20)) /dev/zero | tr '\0' 'a' > "$WORK/body"
t0=$(now); cpu0=$(cpu_secs "$SERVER_PID")
CLIENTS=()
for _ in $(seq 1 8); do
  curl -s -m 60 -o /dev/null -w '%{http_code}\n' -H 'X-API-Key: wrong' -H 'Content-Type: application/json' \
    --data-binary @"$WORK/body" "$URL/admin/cache/storage/clear" >> "$WORK/codes" 2>/dev/null &
  CLIENTS+=($!)
done
wait "${CLIENTS[@]}" 2>/dev/null || true
codes=$(sort "$WORK/codes" | uniq -c | awk '{printf "%s x%s ", $2, $1}')
row "6 (8 x wrong key + 32 MiB body)" "$codes" "$(elapsed "$t0")" \
  "$(awk -v a="$cpu0" -v b="$(cpu_secs "$SERVER_PID")" 'BEGIN {printf "%.2f", b-a}')" \
  "$(peak_rss "$SERVER_PID")" "$(alive)"
