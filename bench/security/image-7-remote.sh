#!/usr/bin/env bash
# Remote sources (issue 31): an origin that attacks the server through its pictures. With
# ALLOWED_SOURCES naming a hostile origin on loopback (loopback allowed for the test only), the
# server must stay within its bounds: a body over MAX_UPLOAD_BYTES (25 MiB) refused while
# streaming, a trickling body cut at SOURCE_DOWNLOAD_TIMEOUT_MS, redirect loops and metadata
# addresses refused at once, and at most SOURCE_DOWNLOAD_CONCURRENCY (8) bodies held at once.
# Rows: 20 concurrent endless bodies; 20 concurrent trickling bodies; 20 redirect loops; 20
# requests for the metadata address. Each row: the answers, wall time, server CPU, peak RSS.
# Usage: BIN=path bench/security/image-7-remote.sh (only 127.0.0.1 is contacted).
BIN=${BIN:-${CARGO_TARGET_DIR:-target}/release/image-server}
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

oport=$(free_port)
python3 - "$oport" >"$WORK/origin.log" 2>&1 <<'PY' &
import sys, time, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_GET(self):
        try:
            if self.path == "/endless.png":
                self.send_response(200); self.send_header("Content-Type", "image/png")
                self.send_header("Transfer-Encoding", "chunked"); self.end_headers()
                chunk = b"\0" * 65536
                while True:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            elif self.path == "/trickle.png":
                self.send_response(200); self.send_header("Content-Type", "image/png")
                self.send_header("Content-Length", "1000000"); self.end_headers()
                while True:
                    self.wfile.write(b"\x89"); self.wfile.flush(); time.sleep(0.5)
            elif self.path == "/loop.png":
                self.send_response(302); self.send_header("Location", "/loop.png")
                self.send_header("Content-Length", "0"); self.end_headers()
            else:
                self.send_response(404); self.send_header("Content-Length", "0"); self.end_headers()
        except (BrokenPipeError, ConnectionResetError):
            pass
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
PIDS+=($!)

port=$(free_port); URL="http://127.0.0.1:$port"
mkdir -p "$WORK/images" "$WORK/data"
env -i PATH="$PATH" LISTEN="127.0.0.1:$port" DATA_DIR="$WORK/data" API_KEY=bench-key-0123456789 \
  STORAGE_URL="file://$WORK/images" RUST_LOG=warn ALLOWED_SOURCES="127.0.0.1:$oport,169.254.169.254" \
  ALLOW_LOOPBACK_SOURCE_ADDRESSES=true "$BIN" >/dev/null 2>"$WORK/server.log" &
SERVER_PID=$!; PIDS+=("$SERVER_PID")
for _ in $(seq 1 200); do curl -fsS -o /dev/null "$URL/admin/health" 2>/dev/null && break; sleep 0.05; done

alive() { if kill -0 "$SERVER_PID" 2>/dev/null && curl -fsS -m 5 -o /dev/null "$URL/admin/health"; then echo alive; else echo DEAD; fi; }

# burst LABEL SOURCE: 20 concurrent resizes of SOURCE; the row gives each distinct status.
burst() {
  local label=$1 src=$2 t0 cpu0 i cpids=()
  echo 5 > "/proc/$SERVER_PID/clear_refs" 2>/dev/null || true
  t0=$(now); cpu0=$(cpu_secs "$SERVER_PID")
  for i in $(seq 1 20); do
    curl -s -m 60 -o /dev/null -w '%{http_code}\n' "$URL/images/resize?url=$src&width=$((100 + i))" >>"$WORK/codes-$label" &
    cpids+=($!)
  done
  wait "${cpids[@]}" || true
  local codes; codes=$(sort "$WORK/codes-$label" | uniq -c | awk '{printf "%s x%s ", $2, $1}')
  row "remote: $label" "$codes" "$(elapsed "$t0")" \
    "$(awk -v a="$cpu0" -v b="$(cpu_secs "$SERVER_PID")" 'BEGIN {printf "%.2f", b-a}')" \
    "$(peak_rss "$SERVER_PID")" "$(alive)"
}

burst "20 endless bodies" "http://127.0.0.1:$oport/endless.png"
burst "20 trickling bodies" "http://127.0.0.1:$oport/trickle.png"
burst "20 redirect loops" "http://127.0.0.1:$oport/loop.png"
burst "20 metadata address" "http://169.254.169.254/latest/meta-data/"
