#!/usr/bin/env bash
# Finding 12: webhook bodies before the signature check. (a) A body that stalls after one byte:
# before, the connection stays open (capped here at STALL_CAP=30 s); after, 408 at
# BODY_TIMEOUT_SECS (10 s). (b) 20 concurrent 25 MiB unsigned bodies: peak RSS before and after.
# Usage: BIN=path bench/security/review-12-webhook-body.sh
source "$(dirname "$0")/review-http-lib.sh"
STALL_CAP=${STALL_CAP:-30}
start_server 127.0.0.1 FORGE_WEBHOOK_SECRET=bench
t0=$(now)
answer=$(python3 - "$PORT" "$STALL_CAP" <<'PY'
import socket, sys
port, cap = int(sys.argv[1]), float(sys.argv[2])
s = socket.create_connection(("127.0.0.1", port))
s.sendall(b"POST /webhook/github HTTP/1.1\r\nHost: 127.0.0.1\r\nX-GitHub-Event: ping\r\n"
          b"Content-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{")
s.settimeout(cap)
try:
    data = s.recv(200).decode(errors="replace").split("\r\n")[0]
    print(data or "closed without an answer")
except socket.timeout:
    print(f"no answer after {cap:.0f} s")
PY
)
row 12a "$(grep -q ' 408' <<<"$answer" && echo fixed || echo vulnerable)" "$(elapsed "$t0")" \
  "$(cpu_secs "$SERVER_PID")" "$(peak_rss "$SERVER_PID")" "stalled webhook body: $answer"
base=$(peak_rss "$SERVER_PID")
t0=$(now)
summary=$(python3 - "$PORT" <<'PY'
import socket, sys, threading, collections
port = int(sys.argv[1]); size = 25 * 1024 * 1024 - 1024
chunk = b"x" * (1 << 20); seen = collections.Counter()
def send():
    try:
        s = socket.create_connection(("127.0.0.1", port)); s.settimeout(60)
        s.sendall(b"POST /webhook/github HTTP/1.1\r\nHost: 127.0.0.1\r\nX-GitHub-Event: ping\r\n"
                  b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % size)
        left = size
        while left > 0:
            n = min(left, len(chunk)); s.sendall(chunk[:n]); left -= n
    except OSError:
        pass  # the server answered (503) and closed while we were still sending
    try:
        seen[s.recv(100).decode(errors="replace").split("\r\n")[0][9:12] or "closed"] += 1
    except OSError as e:
        seen[type(e).__name__] += 1
ts = [threading.Thread(target=send) for _ in range(20)]
[t.start() for t in ts]; [t.join() for t in ts]
print(", ".join(f"{k}: {v}" for k, v in sorted(seen.items())))
PY
)
row 12b measured "$(elapsed "$t0")" "$(cpu_secs "$SERVER_PID")" "$(peak_rss "$SERVER_PID")" \
  "20 concurrent 25 MiB unsigned bodies (RSS before: $base): $summary"
