#!/usr/bin/env bash
# GitLab's webhook token (issue 32): GitLab sends its secret token in X-Gitlab-Token, so a
# delivery with a wrong one is refused before its body is read. (a) 20 concurrent 25 MiB bodies
# with a wrong token: answers, time, the server's CPU and peak RSS (compare row 12b: GitHub's
# HMAC needs the whole body). (b) 1000 sequential small deliveries with wrong tokens of the
# right length: all 401, none reviewed.
# Usage: BIN=path bench/security/review-16-gitlab-token.sh
source "$(dirname "$0")/review-http-lib.sh"
start_server 127.0.0.1 GITLAB_URL=http://127.0.0.1:1 GITLAB_TOKEN=glpat-bench \
  GITLAB_WEBHOOK_SECRET=bench-gitlab-secret-token
base=$(peak_rss "$SERVER_PID")
t0=$(now)
summary=$(python3 - "$PORT" <<'PY'
import socket, sys, threading, collections
port = int(sys.argv[1]); size = 25 * 1024 * 1024 - 1024
chunk = b"x" * (1 << 20); seen = collections.Counter()
def send():
    try:
        s = socket.create_connection(("127.0.0.1", port)); s.settimeout(60)
        s.sendall(b"POST /webhook/gitlab HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                  b"X-Gitlab-Event: Merge Request Hook\r\nX-Gitlab-Token: wrong\r\n"
                  b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % size)
        left = size
        while left > 0:
            n = min(left, len(chunk)); s.sendall(chunk[:n]); left -= n
    except OSError:
        pass  # the server answered and closed while we were still sending
    try:
        seen[s.recv(100).decode(errors="replace").split("\r\n")[0][9:12] or "closed"] += 1
    except OSError as e:
        seen[type(e).__name__] += 1
ts = [threading.Thread(target=send) for _ in range(20)]
[t.start() for t in ts]; [t.join() for t in ts]
print(", ".join(f"{k}: {v}" for k, v in sorted(seen.items())))
PY
)
row 16a measured "$(elapsed "$t0")" "$(cpu_secs "$SERVER_PID")" "$(peak_rss "$SERVER_PID")" \
  "20 concurrent 25 MiB GitLab deliveries with a wrong token (RSS before: $base): $summary"
t0=$(now)
codes=$(python3 - "$PORT" <<'PY'
import collections, http.client, sys
port = int(sys.argv[1]); seen = collections.Counter()
body = b'{"object_kind":"merge_request","project":{"id":1,"path_with_namespace":"g/p"}}'
conn = http.client.HTTPConnection("127.0.0.1", port)
for i in range(1000):
    token = "bench-gitlab-secret-tokeX"[:25 - len(str(i))] + str(i)
    try:
        conn.request("POST", "/webhook/gitlab", body, {"X-Gitlab-Event": "Merge Request Hook",
                     "X-Gitlab-Token": token, "Content-Type": "application/json"})
        r = conn.getresponse(); r.read(); seen[r.status] += 1
    except (http.client.HTTPException, OSError):
        conn = http.client.HTTPConnection("127.0.0.1", port); seen["reconnect"] += 1
print(", ".join(f"{k}: {v}" for k, v in sorted(seen.items(), key=str)))
PY
)
repos=$(curl -fsS "$URL/api/repos")
row 16b measured "$(elapsed "$t0")" "$(cpu_secs "$SERVER_PID")" "$(peak_rss "$SERVER_PID")" \
  "1000 small deliveries, wrong tokens of the right length: $codes; registered repos after: $repos"
